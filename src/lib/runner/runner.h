/*
 * The runner that xfer, lat and verify share (issue 33): what every suite and per-test run does alike, written
 * once. The checks before anything runs (the GPU list, the test list against its registry, a case generator's
 * arguments), one case run under the guard, one test turned into its cases over the chosen GPUs and each case
 * run between progress calls, a case the run refuses becoming a failed result, a suite's results counted,
 * made room for and filled test by test, a suite freed. A module describes its tests as a kind
 * (PSC_RUNNER_KIND); the runner reaches the module only through the kind's pointers. Internal.
 */
#ifndef PSC_RUNNER_RUNNER_H
#define PSC_RUNNER_RUNNER_H

#include <stddef.h>

#include "internal.h"
#include "util/registry.h"

/* ---- the suites' common checks (runner/suite.c) */

/* The GPUs: devices (ndev), or every GPU when ndev is 0; PSC_ERR_INVALID, recorded, for one out of range. */
psc_status_t psc__suite_devices(psc_context_t *ctx, const char *who, const int *devices, int ndev, int *out,
                                int *nout);

/*
 * The tests of registry r: tests (ntests), or every test when ntests is 0; *out allocated (free it).
 * PSC_ERR_INVALID for an index out of range, PSC_ERR_UNSUPPORTED for a named test needing more than nd GPUs.
 */
psc_status_t psc__suite_tests(psc_context_t *ctx, const char *who, const int *tests, int ntests,
                              const psc_registry_t *r, int nd, int named_devices, psc_suite_test_t **out, int *nout);

/* A suite's own allocations: its tests, its results and itself (each may be NULL). */
void psc__suite_free(void *suite, psc_suite_test_t *tests, void *results);

/* ---- the cases of a test and the per-test run (runner/run_test.c) */

/*
 * A case generator's (who's) arguments: a count n, a test of registry r (a `what` test, "bandwidth"), the GPUs
 * (devices, ndev: 0 for all) resolved into d, at most cap. Returns how many GPUs, or -1 with PSC_ERR_INVALID
 * recorded.
 */
int psc__cases_gpus(const psc_context_t *ctx, const char *who, const char *what, const psc_registry_t *r, int test,
                    const int *devices, int ndev, const size_t *n, int *d, int cap);

/*
 * A module's tests for the runner: the size of a case and of a result, where a result keeps its case, status and
 * reason, and three typed calls through pointers of the runner's own types: the case generator, one case's run
 * (the caller's CUDA state already saved), the per-test options' progress.
 */
typedef struct psc_runner_kind {
    const char *run, *run_test;  /* the public calls of one case and of one test, for their messages */
    const char *result_type;     /* "psc_bw_result_t" */
    size_t case_size, result_size, result_case, result_status, result_reason, reason_size;
    psc_status_t (*cases)(const psc_context_t *ctx, int test, const int *devices, int ndev, void *cases, size_t cap,
                          size_t *n);
    psc_status_t (*run_case)(psc_context_t *ctx, const void *c, const void *opts, void *result);
    void (*progress)(const void *c, const void *result, const void *test_opts);
} psc_runner_kind_t;

/*
 * Defines the kind `name` of a module whose public run of one case is run_name ("psc_bw_run"; its per-test run
 * run_name "_test"), whose cases are case_type from cases_fn (as psc_bw_cases), whose results are result_type
 * (members c, status, reason[]) from run_fn (as psc__bw_run) with opts_type options, and whose per-test options
 * are test_opts_type (members progress and user).
 */
#define PSC_RUNNER_KIND(name, run_name, case_type, cases_fn, result_type, run_fn, opts_type, test_opts_type)          \
    static psc_status_t name##_cases(const psc_context_t *ctx, int test, const int *devices, int ndev, void *cases,   \
                                     size_t cap, size_t *n)                                                           \
    {                                                                                                                 \
        return cases_fn(ctx, test, devices, ndev, (case_type *)cases, cap, n);                                        \
    }                                                                                                                 \
    static psc_status_t name##_run(psc_context_t *ctx, const void *c, const void *opts, void *result)                 \
    {                                                                                                                 \
        return run_fn(ctx, (const case_type *)c, (const opts_type *)opts, (result_type *)result);                     \
    }                                                                                                                 \
    static void name##_progress(const void *c, const void *result, const void *test_opts)                             \
    {                                                                                                                 \
        const test_opts_type *o = test_opts;                                                                          \
        if (o->progress)                                                                                              \
            o->progress((const case_type *)c, (const result_type *)result, o->user);                                  \
    }                                                                                                                 \
    const psc_runner_kind_t name = {                                                                                  \
        run_name, run_name "_test", #result_type, sizeof(case_type), sizeof(result_type), offsetof(result_type, c),   \
        offsetof(result_type, status), offsetof(result_type, reason), sizeof(((result_type *)0)->reason),             \
        name##_cases, name##_run, name##_progress}

/*
 * One case run with opts into out under the guard (the caller's current context and peer access kept), *out
 * written only when the caller's state was put back too. PSC_ERR_INVALID, recorded, for no out.
 */
psc_status_t psc__runner_held(psc_context_t *ctx, const psc_runner_kind_t *k, const void *c, const void *opts,
                              void *out);

/* The per-test call's outputs: a count n, and results for cap > 0; PSC_ERR_INVALID (recorded when ctx is). */
psc_status_t psc__runner_test_args(psc_context_t *ctx, const psc_runner_kind_t *k, const void *res, size_t cap,
                                   const size_t *n);

/*
 * Every case of test over the GPUs (devices, ndev: 0 for all), in order (the first cap): test_opts' progress
 * before each case (no result) and after it, each run held with opts into res[k]; a case the run refuses is a
 * failed result with the context's last error as its reason. *n: how many ran. Errors only for the cases
 * (recorded) or memory.
 */
psc_status_t psc__runner_test(psc_context_t *ctx, const psc_runner_kind_t *k, int test, const int *devices, int ndev,
                              const void *opts, const void *test_opts, void *res, size_t cap, size_t *n);

/* ---- a suite's results (runner/suite.c) */

/* A suite's tests and results while the runner fills them; the module's suite keeps what they come to. */
typedef struct {
    psc_suite_test_t *tests;  /* ntests of them (psc__suite_tests) */
    int ntests, nsizes;       /* nsizes: the runs of each test (1, or the bandwidth suite's sizes) */
    void *results;            /* room for total (psc__suite_room), nresults of them written, nfailed of those failed */
    size_t total, nresults, nfailed;
} psc_suite_run_t;

/* Each test's cases on the GPUs (the kind's generator) times nsizes into tests[t].n, and their sum into *total. */
psc_status_t psc__suite_count(psc_context_t *ctx, const psc_runner_kind_t *k, const int *devices, int ndev,
                              psc_suite_test_t *tests, int ntests, int nsizes, size_t *total);

/* psc__suite_count into r->total, then room for as many results (r->results, zeroed; "out of host memory for
 * <total> <noun>"). */
psc_status_t psc__suite_room(psc_context_t *ctx, const psc_runner_kind_t *k, const int *devices, int ndev,
                             const char *noun, psc_suite_run_t *r);

/* A module's run of one of the suite's tests at size index z (its per-test run): res[0..cap), *n written. */
typedef psc_status_t (*psc_suite_test_fn)(psc_context_t *ctx, int test, int z, void *res, size_t cap, size_t *n,
                                          void *user);

/*
 * Every test of r in order, each run by run_test at every size, its results after the last: tests[t].first and
 * .n set, r->nresults and r->nfailed (results with status failed) grown. Stops at run_test's first error.
 */
psc_status_t psc__suite_run(psc_context_t *ctx, const psc_runner_kind_t *k, psc_suite_run_t *r,
                            psc_suite_test_fn run_test, void *user);

#endif
