/*
 * The benchmark API (<p2pscope/bench.h>, version node P2PSCOPE_BENCH_1): one
 * bandwidth suite, set up through its options struct, each case's median:
 *   cc bandwidth_suite.c $(pkg-config --cflags --libs p2pscope) -o bandwidth_suite
 *   ./bandwidth_suite [TEST...]    default: gpu_to_gpu_write_ce and host_to_gpu_ce
 * It checks first that the library loaded is the one it was built against.
 * Exit: 0 every case passed, 1 a failure or a wrong byte, 2 a bad test name or
 * another library version, 77 no driver or no GPU.
 */
#include <stdio.h>

#include <p2pscope.h>
#include <p2pscope/bench.h>
#include <p2pscope/version.h>

#define SKIP 77
#define MAX_TESTS 16

static const char *endpoint(int where, char *buf, size_t len)
{
    if (where == PSC_HOST)
        snprintf(buf, len, "host");
    else if (where == PSC_ALL)
        snprintf(buf, len, "all");
    else
        snprintf(buf, len, "gpu%d", where);
    return buf;
}

static void show(const psc_bw_result_t *r)
{
    char src[16], dst[16];

    endpoint(r->c.src, src, sizeof(src));
    endpoint(r->c.dst, dst, sizeof(dst));
    if (r->status == PSC_RESULT_PASSED)
        printf("%-28s %5s -> %-5s %8.1f GB/s\n", psc_bw_test_name(r->c.test), src, dst, r->stats.median);
    else
        printf("%-28s %5s -> %-5s %s: %s\n", psc_bw_test_name(r->c.test), src, dst,
               psc_result_status_string(r->status), r->reason);
}

int main(int argc, char **argv)
{
    const char *dflt[] = {"gpu_to_gpu_write_ce", "host_to_gpu_ce"};
    const char *const *names = argc > 1 ? (const char *const *)argv + 1 : dflt;
    int nnames = argc > 1 ? argc - 1 : 2, major = 0, minor = 0;
    psc_bw_test_t tests[MAX_TESTS];
    psc_bw_suite_opts_t opts;
    psc_measure_opts_t measure;
    psc_context_t *ctx = NULL;
    psc_bw_suite_t *suite = NULL;
    char err[512];
    psc_status_t st;
    int rc;

    /* Before 1.0 each minor version may change the ABI: the header's and the library's must agree. */
    psc_version(&major, &minor, NULL);
    if (major != PSC_VERSION_MAJOR || minor != PSC_VERSION_MINOR) {
        fprintf(stderr, "bandwidth_suite: built for libp2pscope %s, loaded %s\n", PSC_VERSION_STRING,
                psc_version(NULL, NULL, NULL));
        return 2;
    }
    if (nnames > MAX_TESTS)
        nnames = MAX_TESTS;
    for (int k = 0; k < nnames; k++)
        if (psc_bw_test_from_name(names[k], &tests[k]) != PSC_OK) {
            fprintf(stderr, "bandwidth_suite: no test %s (p2pscope bw -l lists them)\n", names[k]);
            return 2;
        }
    st = psc_context_create(&ctx, err, sizeof(err));
    if (st == PSC_ERR_NO_DRIVER || st == PSC_ERR_NO_DEVICE) {
        fprintf(stderr, "bandwidth_suite: skipped: %s\n", err);
        return SKIP;
    }
    if (st != PSC_OK) {
        fprintf(stderr, "bandwidth_suite: %s\n", err);
        return 1;
    }
    /* Options structs grow: their default macro first, then the fields wanted. */
    psc_measure_opts_default(&measure);
    measure.size = 64ull << 20;
    psc_bw_suite_opts_default(&opts);
    opts.tests = tests;
    opts.ntests = nnames;
    opts.measure = &measure;
    st = psc_bw_run_suite(ctx, &opts, &suite);
    if (st != PSC_OK) {
        fprintf(stderr, "bandwidth_suite: %s\n", psc_context_last_error(ctx));
        psc_context_destroy(ctx);
        return st == PSC_ERR_UNSUPPORTED ? SKIP : 1;
    }
    printf("libp2pscope %s: %zu cases on %d GPU%s (1 GB = 1e9 bytes)\n", psc_version(NULL, NULL, NULL),
           suite->nresults, suite->ndev, suite->ndev == 1 ? "" : "s");
    for (size_t k = 0; k < suite->nresults; k++)
        show(&suite->results[k]);
    rc = suite->nfailed ? 1 : 0;
    psc_bw_suite_free(suite);
    psc_context_destroy(ctx);
    return rc;
}
