/* Option structs as the caller's header had them (opts.c): adopted over the library's defaults, kept there too. */
#ifndef PSC_OPTS_H
#define PSC_OPTS_H

#include "internal.h"

psc_status_t psc__measure_opts_adopt(psc_context_t *ctx, const psc_measure_opts_t *in, psc_measure_opts_t *out,
                                     char *errbuf, size_t errlen);
psc_status_t psc__lat_opts_adopt(psc_context_t *ctx, const psc_lat_opts_t *in, psc_lat_opts_t *out);
psc_status_t psc__verify_opts_adopt(psc_context_t *ctx, const psc_verify_opts_t *in, psc_verify_opts_t *out);
/*
 * psc_copy_calibrate's and psc_copy_bench's options over the defaults, checked (sizes 1 B..1 TiB with
 * min <= max, factor 2..16, samples 1..1000, host 0/1, reserved0 0, devices as psc__resolve_devices takes
 * them); the reason recorded on ctx. *out only on success.
 */
psc_status_t psc__copy_cal_opts_adopt(psc_context_t *ctx, const psc_copy_cal_opts_t *in, psc_copy_cal_opts_t *out);
psc_status_t psc__copy_bench_opts_adopt(psc_context_t *ctx, const psc_copy_bench_opts_t *in,
                                        psc_copy_bench_opts_t *out);
/* psc_ipc_run's options over the defaults (struct_size only: psc_ipc_run checks the values). */
psc_status_t psc__ipc_opts_adopt(psc_context_t *ctx, const psc_ipc_opts_t *in, psc_ipc_opts_t *out);
/* psc_coll_run's options over the defaults (struct_size only: psc_coll_run checks the values). */
psc_status_t psc__coll_opts_adopt(psc_context_t *ctx, const psc_coll_opts_t *in, psc_coll_opts_t *out);
/* The bandwidth suites' options over the defaults (struct_size, reserved0 0; the suite checks the rest). */
psc_status_t psc__bw_suite_opts_adopt(psc_context_t *ctx, const psc_bw_suite_opts_t *in, psc_bw_suite_opts_t *out);
/* psc_verify_stress's and the verify suite's options over the defaults (the suite's reserved0 0). */
psc_status_t psc__verify_stress_opts_adopt(psc_context_t *ctx, const psc_verify_stress_opts_t *in,
                                           psc_verify_stress_opts_t *out);
psc_status_t psc__verify_suite_opts_adopt(psc_context_t *ctx, const psc_verify_suite_opts_t *in,
                                          psc_verify_suite_opts_t *out);
/* The latency suite's and the whole tests' options over the defaults (reserved0 0 where there is one). */
psc_status_t psc__lat_suite_opts_adopt(psc_context_t *ctx, const psc_lat_suite_opts_t *in, psc_lat_suite_opts_t *out);
psc_status_t psc__bw_run_test_opts_adopt(psc_context_t *ctx, const psc_bw_run_test_opts_t *in,
                                         psc_bw_run_test_opts_t *out);
psc_status_t psc__lat_run_test_opts_adopt(psc_context_t *ctx, const psc_lat_run_test_opts_t *in,
                                          psc_lat_run_test_opts_t *out);

#endif
