/* Latency results as text and JSON. */
#ifndef PSC_REPORT_RENDER_LAT_H
#define PSC_REPORT_RENDER_LAT_H

#include <jansson.h>
#include <stdio.h>

#include "p2pscope/bench.h"

/* One test's results: a src -> dst matrix or a row of GPUs of "p50 (p99)" for chases and flags, a table by size for copies. */
void psc_render_lat(FILE *f, psc_lat_test_t test, const psc_lat_result_t *res, size_t n, const int *devs, int ndev);

json_t *psc_json_lat_result(const psc_lat_result_t *r);

/* Percentiles as every latency figure's JSON has them: {n, min, p50, p90, p99, max, mean}. */
json_t *psc_json_pctl(const psc_pctl_t *p);

#endif
