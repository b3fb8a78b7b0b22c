/* Integrity runs (verify/integrity.c): the work behind psc_verify_run, for the API guard and verify's loops. */
#ifndef PSC_VERIFY_INTEGRITY_H
#define PSC_VERIFY_INTEGRITY_H

#include "internal.h"

psc_status_t psc__verify_run(psc_context_t *ctx, const psc_bw_case_t *c, const psc_verify_opts_t *o,
                             psc_verify_result_t *out);

/*
 * psc_verify_run after its options are adopted (o: the library's own size), for it and verify's own loops: the
 * load's context checked, the run under the guard (the load settled before the outermost leave), *out written
 * only when the caller's CUDA state was put back too.
 */
psc_status_t psc__verify_run_held(psc_context_t *ctx, const psc_bw_case_t *c, const psc_verify_opts_t *o,
                                  psc_verify_result_t *out);

#endif
