/* nvlink: every link of every GPU (state, speed, remote end, capabilities, traffic); --watch shows which links carried a test. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "report/render_nvlink.h"

static int psc__watch(psc_context_t *ctx, const psc_cli_opts_t *o, const psc_facts_t *f)
{
    psc_nvlink_snapshot_t *before = calloc(1, sizeof(*before)), *after = calloc(1, sizeof(*after));
    psc_nvlink_traffic_t *traffic = calloc(1, sizeof(*traffic));
    const size_t cap = (size_t)PSC_CLI_MAX_DEVS * PSC_CLI_MAX_DEVS;
    psc_bw_result_t *res = calloc(cap, sizeof(*res));
    psc_bw_test_t tests[PSC_CLI_MAX_TESTS] = {0};
    int ntests = o->ntests ? o->ntests : 1, devs[PSC_CLI_MAX_DEVS], ndev = 0, rc = PSC_EXIT_OK;
    size_t done = 0, total = 0;
    uint64_t moved = 0;

    if (!before || !after || !traffic || !res) {
        fprintf(stderr, "p2pscope: out of host memory\n");
        rc = PSC_EXIT_NO_MEMORY;
        goto out;
    }
    for (int i = 0; i < f->ngpu; i++)
        devs[ndev++] = i;
    if (o->ntests)
        memcpy(tests, o->tests, sizeof(tests[0]) * (size_t)o->ntests);
    else
        psc_bw_test_from_name("gpu_to_gpu_write_ce", &tests[0]);
    psc_nvlink_snapshot(ctx, before);
    for (int t = 0; t < ntests; t++) {
        size_t n = 0;

        psc_bw_cases(ctx, tests[t], devs, ndev, NULL, 0, &n);
        total += n;
    }
    for (int t = 0; t < ntests; t++) {
        size_t n = psc_cli_run_cases(ctx, &o->measure, tests[t], devs, ndev, res, cap, &done, total);

        for (size_t k = 0; k < n; k++) {
            moved += res[k].status == PSC_RESULT_PASSED ? res[k].bytes_per_sample * (o->measure.warmup + res[k].nsamples) : 0;
            if (res[k].status == PSC_RESULT_FAILED)
                rc = PSC_EXIT_FAILED;
        }
    }
    psc_nvlink_snapshot(ctx, after);
    if (psc_nvlink_traffic(before, after, traffic) != PSC_OK)
        memset(traffic, 0, sizeof(*traffic)); /* not reached: both snapshots are the library's own */
    psc_render_nvlink_watch(stdout, f, traffic, done, moved);
out:
    free(res);
    free(traffic);
    free(after);
    free(before);
    return rc;
}

int psc_cmd_nvlink(psc_context_t *ctx, const psc_cli_opts_t *o)
{
    int rc, any = 0;
    psc_facts_t *f = psc_cli_facts(ctx, o, &rc);

    if (!f)
        return rc;
    for (int i = 0; i < f->ngpu; i++)
        any |= f->gpu[i].nvlink_count > 0;
    if (o->watch) {
        rc = psc__watch(ctx, o, f);
    } else {
        for (int i = 0; psc_cli_tables(o) && i < f->ngpu; i++)
            psc_render_nvlink(stdout, f, i, NULL);
        rc = any ? PSC_EXIT_OK : PSC_EXIT_NA;
        if (o->json) {
            json_t *doc = psc_json_nvlink(f, rc);

            if (psc_cli_write_json(doc, o) != PSC_EXIT_OK) /* NULL: says the JSON was not written */
                rc = PSC_EXIT_FAILED;
            json_decref(doc);
        }
    }
    psc_facts_free(f);
    return rc;
}
