/* The stress loop with its run function and clock replaceable, for the unit tests; never installed. */
#ifndef PSC_VERIFY_STRESS_H
#define PSC_VERIFY_STRESS_H

#include "p2pscope/bench.h"

typedef struct {
    /* psc_verify_run's contract */
    psc_status_t (*run)(psc_context_t *ctx, const psc_bw_case_t *c, const psc_verify_opts_t *o,
                        psc_verify_result_t *out, void *user);
    double (*now)(void *user); /* seconds, monotonic */
    void *user;
} psc__stress_hooks_t;

/* psc_verify_stress with hooks (NULL: psc_verify_run and CLOCK_MONOTONIC); ctx is passed through as it is. */
psc_status_t psc__verify_stress_hooked(const psc__stress_hooks_t *hooks, psc_context_t *ctx, const psc_bw_case_t *cases,
                                       size_t n, const psc_verify_opts_t *opts, double seconds,
                                       psc_verify_progress_fn progress, void *user, psc_verify_path_sum_t *sums,
                                       psc_verify_stress_info_t *info);

#endif
