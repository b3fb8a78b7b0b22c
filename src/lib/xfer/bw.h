/* Bandwidth runs (xfer/bw.c): the work behind psc_bw_run and its options, for the API guard and the library's loops. */
#ifndef PSC_XFER_BW_H
#define PSC_XFER_BW_H

#include "internal.h"

/* Check whole options (the library's own size); errbuf says what is wrong and what is accepted. */
psc_status_t psc__measure_opts_check(const psc_measure_opts_t *o, char *errbuf, size_t errlen);

/*
 * What every run of a bandwidth case (who: psc_bw_run, psc_verify_run) refuses first: no context, case, options
 * or result; a test that does not exist (ti: the case's test, NULL then). PSC_ERR_INVALID, recorded with ctx.
 */
psc_status_t psc__bw_case_args(psc_context_t *ctx, const char *who, const psc_bw_case_t *c,
                               const psc_bw_test_info_t *ti, const void *o, const void *out);

/* psc_bw_run on adopted options, the caller's CUDA state already saved. */
psc_status_t psc__bw_run(psc_context_t *ctx, const psc_bw_case_t *c, const psc_measure_opts_t *o,
                         psc_bw_result_t *out);

/*
 * psc_bw_run after its options are adopted (o: the library's own size), for it and the library's own loops: the
 * run under the guard, *out written only when the caller's CUDA state was put back too.
 */
psc_status_t psc__bw_run_held(psc_context_t *ctx, const psc_bw_case_t *c, const psc_measure_opts_t *o,
                              psc_bw_result_t *out);

/* The bandwidth tests as the runner takes them (runner/runner.h): psc_bw_cases, psc__bw_run, the results. */
struct psc_runner_kind;
extern const struct psc_runner_kind psc__bw_kind;

/*
 * One transfer (c->xfer[0]) between buffers the caller owns, each exactly o->size bytes: memory imported
 * from another process, say, as a psc_buffer_t whose gpu is the GPU that runs the fill and check kernels. No peer access is set up (the buffers are reachable from the issuer); the
 * destination is poisoned before every checked sample, as for host sources. The result as psc__bw_run's.
 */
struct psc_buffer;
psc_status_t psc__bw_run_on(psc_context_t *ctx, const psc_bw_case_t *c, const psc_measure_opts_t *o,
                            struct psc_buffer *src, struct psc_buffer *dst, psc_bw_result_t *out);

#endif
