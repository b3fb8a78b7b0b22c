/* Latency runs (lat/lat.c): the work behind psc_lat_run and psc_timer_resolution, for the API guard and lat's loops. */
#ifndef PSC_LAT_LAT_H
#define PSC_LAT_LAT_H

#include "internal.h"

psc_status_t psc__lat_run(psc_context_t *ctx, const psc_lat_case_t *c, const psc_lat_opts_t *o, psc_lat_result_t *out);
psc_status_t psc__timer_resolution(psc_context_t *ctx, int gpu, double *gpu_ns, double *host_ns);

/*
 * psc_lat_run after its options are adopted (o: the library's own size) and psc_timer_resolution, for them and
 * the library's own loops: the work under the guard, the outputs written only when the caller's CUDA state was
 * put back too.
 */
psc_status_t psc__lat_run_held(psc_context_t *ctx, const psc_lat_case_t *c, const psc_lat_opts_t *o,
                               psc_lat_result_t *out);
psc_status_t psc__timer_resolution_held(psc_context_t *ctx, int gpu, double *gpu_ns, double *host_ns);

/* The latency tests as the runner takes them (runner/runner.h): psc_lat_cases, psc__lat_run, the results. */
struct psc_runner_kind;
extern const struct psc_runner_kind psc__lat_kind;

#endif
