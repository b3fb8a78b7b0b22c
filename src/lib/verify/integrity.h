/* Integrity runs (verify/integrity.c): the work behind psc_verify_run, for the API guard. */
#ifndef PSC_VERIFY_INTEGRITY_H
#define PSC_VERIFY_INTEGRITY_H

#include "internal.h"

psc_status_t psc__verify_run(psc_context_t *ctx, const psc_bw_case_t *c, const psc_verify_opts_t *o,
                             psc_verify_result_t *out);

#endif
