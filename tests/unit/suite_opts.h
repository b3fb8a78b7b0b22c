/*
 * The suites' and whole tests' options from what their calls once took in a row (the tests keep those
 * cases), the rest the defaults. Each returns a static struct: use it before the next call of the same helper.
 */
#ifndef PSC_TEST_SUITE_OPTS_H
#define PSC_TEST_SUITE_OPTS_H

#include "p2pscope/bench.h"

static inline const psc_bw_suite_opts_t *bw_opts(const psc_bw_test_t *tests, int ntests, const int *devices,
                                                 int ndev, uint64_t sweep_min, uint64_t sweep_max,
                                                 unsigned sweep_factor, const psc_measure_opts_t *measure,
                                                 psc_bw_suite_progress_fn progress, void *user)
{
    static psc_bw_suite_opts_t so;

    psc_bw_suite_opts_default(&so);
    so.tests = tests;
    so.ntests = ntests;
    so.devices = devices;
    so.ndev = ndev;
    so.sweep_min = sweep_min;
    so.sweep_max = sweep_max;
    so.sweep_factor = sweep_factor;
    so.measure = measure;
    so.progress = progress;
    so.user = user;
    return &so;
}

static inline const psc_verify_suite_opts_t *verify_suite_opts(const psc_bw_test_t *tests, int ntests,
                                                               const int *devices, int ndev,
                                                               const psc_verify_opts_t *verify, double seconds,
                                                               int with_load, psc_verify_suite_progress_fn progress,
                                                               void *user)
{
    static psc_verify_suite_opts_t so;

    psc_verify_suite_opts_default(&so);
    so.tests = tests;
    so.ntests = ntests;
    so.devices = devices;
    so.ndev = ndev;
    so.verify = verify;
    so.seconds = seconds;
    so.with_load = with_load;
    so.progress = progress;
    so.user = user;
    return &so;
}

static inline const psc_verify_stress_opts_t *stress_opts(const psc_verify_opts_t *verify, double seconds,
                                                          psc_verify_progress_fn progress, void *user)
{
    static psc_verify_stress_opts_t so;

    psc_verify_stress_opts_default(&so);
    so.verify = verify;
    so.seconds = seconds;
    so.progress = progress;
    so.user = user;
    return &so;
}

static inline const psc_lat_suite_opts_t *lat_suite_opts(const psc_lat_test_t *tests, int ntests, const int *devices,
                                                         int ndev, const psc_lat_opts_t *lat,
                                                         psc_lat_progress_fn progress, void *user)
{
    static psc_lat_suite_opts_t so;

    psc_lat_suite_opts_default(&so);
    so.tests = tests;
    so.ntests = ntests;
    so.devices = devices;
    so.ndev = ndev;
    so.lat = lat;
    so.progress = progress;
    so.user = user;
    return &so;
}

static inline const psc_bw_run_test_opts_t *bw_test_opts(const int *devices, int ndev,
                                                         const psc_measure_opts_t *measure,
                                                         psc_bw_progress_fn progress, void *user)
{
    static psc_bw_run_test_opts_t to;

    psc_bw_run_test_opts_default(&to);
    to.devices = devices;
    to.ndev = ndev;
    to.measure = measure;
    to.progress = progress;
    to.user = user;
    return &to;
}

static inline const psc_lat_run_test_opts_t *lat_test_opts(const int *devices, int ndev, const psc_lat_opts_t *lat,
                                                           psc_lat_progress_fn progress, void *user)
{
    static psc_lat_run_test_opts_t to;

    psc_lat_run_test_opts_default(&to);
    to.devices = devices;
    to.ndev = ndev;
    to.lat = lat;
    to.progress = progress;
    to.user = user;
    return &to;
}

#endif
