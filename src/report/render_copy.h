/* `p2pscope copy`: psc_copy against the driver's call, and psc_copy's calibration, as text and JSON. */
#ifndef PSC_REPORT_RENDER_COPY_H
#define PSC_REPORT_RENDER_COPY_H

#include <jansson.h>
#include <stdio.h>

#include "p2pscope/bench.h"

/*
 * The smallest speedup (driver / psc_copy) of the rows whose size is within
 * [lo, hi], and the row it was measured on (NULL when no row is in range,
 * and then 0).
 */
double psc_copy_bench_min_speedup(const psc_copy_bench_t *b, uint64_t lo, uint64_t hi,
                                  const psc_copy_bench_row_t **at);

/*
 * The largest CPU time of psc_copy above the driver call it makes (psc CPU
 * us - launch CPU us) over the rows of at most hi bytes, and its row (NULL
 * when none, and then 0).
 */
double psc_copy_bench_max_cpu_over(const psc_copy_bench_t *b, uint64_t hi, const psc_copy_bench_row_t **at);

/* "SM by gpu1", "CE by gpu0 +events" (the issuer is not the stream's GPU). */
const char *psc_copy_route_text(psc_engine_t engine, int issuer, int stream_gpu, char *buf, size_t len);

/* One table per path (src, dst, stream GPU), in the order the rows come, then the speedups' footer line. */
void psc_render_copy_bench(FILE *f, const psc_copy_bench_t *b);

/* Per path, each range of sizes with the route that was fastest over it and its time per copy. */
void psc_render_calibration(FILE *f, const psc_calibration_t *cal, const char *path);

/* run's "copy_bench": {calibrated, rows [...], min_speedup_4k_1m, min_speedup, min_prep_speedup, max_cpu_over_us_to_1m}. */
psc_status_t psc_json_run_add_copy_bench(json_t *run, const psc_copy_bench_t *b);

/* run's "calibration" (the file's own document) and "calibration_file" (NULL: not written). */
psc_status_t psc_json_run_add_calibration(json_t *run, const psc_calibration_t *cal, const char *path);

#endif
