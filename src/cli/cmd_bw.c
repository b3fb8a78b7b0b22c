/* report and bw: run the chosen bandwidth tests (at one size each, or a sweep), render, write JSON. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "report/json.h"
#include "report/render.h"
#include "report/text.h"

typedef struct {
    size_t *done, total;
    int tty;
} psc__progress_t;

/* Progress on stderr: a live line on a terminal, one line per finished case otherwise. */
static void psc__progress(const psc_bw_case_t *c, const psc_bw_result_t *r, void *user)
{
    psc__progress_t *p = user;
    const size_t k = r ? ++*p->done : *p->done + 1;
    char label[48];

    psc_case_label(c, label, sizeof(label));
    if (p->tty && !r) {
        fprintf(stderr, "\r\033[K[%zu/%zu] %s %s", k, p->total, psc_bw_test_name(c->test), label);
    } else if (!p->tty && r) {
        if (r->status == PSC_RESULT_PASSED)
            fprintf(stderr, "[%zu/%zu] %s %s: %.2f GB/s passed (%u samples, %llu B)\n", k, p->total,
                    psc_bw_test_name(c->test), label, r->stats.median, r->nsamples, (unsigned long long)r->size);
        else
            psc_report_printf(stderr, "[%zu/%zu] %s %s: %s: %s\n", k, p->total, psc_bw_test_name(c->test), label,
                              psc_result_status_string(r->status), r->reason);
    }
    fflush(stderr);
}

size_t psc_cli_run_cases(psc_context_t *ctx, const psc_measure_opts_t *m, psc_bw_test_t test, const int *devs,
                         int ndev, psc_bw_result_t *res, size_t cap, size_t *done, size_t total)
{
    psc__progress_t p = {done, total, isatty(STDERR_FILENO)};
    size_t n = 0;

    if (psc_bw_run_test(ctx, test, devs, ndev, m, psc__progress, &p, res, cap, &n) != PSC_OK) {
        psc_report_printf(stderr, "p2pscope: %s\n", psc_context_last_error(ctx));
        n = 0;
    }
    if (p.tty)
        fprintf(stderr, "\r\033[K");
    return n;
}

typedef struct {
    psc_bw_test_t tests[PSC_CLI_MAX_TESTS];
    int ntests;
    int devs[PSC_CLI_MAX_DEVS];
    int ndev;
    uint64_t sizes[PSC_CLI_MAX_SIZES]; /* 0: each test's own size */
    int nsizes;
} psc__plan_t;

/* Tests, GPUs and sizes to run; PSC_EXIT_ENV when a named test cannot run with these GPUs. */
static int psc__plan(const psc_context_t *ctx, const psc_cli_opts_t *o, psc__plan_t *p)
{
    p->ndev = o->ndev ? o->ndev : psc_device_count(ctx);
    for (int i = 0; i < p->ndev; i++)
        p->devs[i] = o->ndev ? o->devs[i] : i;
    p->ntests = o->ntests ? o->ntests : psc_bw_test_count();
    for (int t = 0; t < p->ntests; t++) {
        p->tests[t] = o->ntests ? o->tests[t] : t;
        if (o->ntests && p->ndev < psc_bw_test_info(p->tests[t])->min_gpus) {
            fprintf(stderr, "p2pscope: %s needs at least %d GPUs; %d %s\n", psc_bw_test_name(p->tests[t]),
                    psc_bw_test_info(p->tests[t])->min_gpus, p->ndev,
                    o->ndev ? "selected with --devices" : "on this machine");
            return PSC_EXIT_ENV;
        }
    }
    p->nsizes = 1;
    p->sizes[0] = o->measure.size;
    if (o->sweep_min)
        p->nsizes = psc_size_sweep(o->sweep_min, o->sweep_max, o->sweep_factor, p->sizes, PSC_CLI_MAX_SIZES);
    return PSC_EXIT_OK;
}

static json_t *psc__json_waived(psc_bw_test_t t, const char *why)
{
    return json_pack("{s:s,s:s,s:s,s:o}", "name", psc_bw_test_name(t), "title", psc_bw_test_title(t), "status",
                     "waived", "reason", psc_json_str(why));
}

typedef struct {
    psc_bw_result_t *v;
    size_t n, cap;
} psc__results_t;

/* Room for `more` results at the end; NULL when out of memory. */
static psc_bw_result_t *psc__room(psc__results_t *r, size_t more)
{
    if (r->n + more > r->cap) {
        size_t cap = (r->n + more) * 2;
        psc_bw_result_t *v = realloc(r->v, cap * sizeof(*v));

        if (!v)
            return NULL;
        r->v = v;
        r->cap = cap;
    }
    return r->v + r->n;
}

int psc_cmd_bw(psc_context_t *ctx, const psc_cli_opts_t *o)
{
    const double t0 = psc_cli_now();
    const int tables = psc_cli_tables(o);
    const size_t cap = (size_t)PSC_CLI_MAX_DEVS * PSC_CLI_MAX_DEVS;
    psc_device_info_t devs[PSC_CLI_MAX_DEVS];
    psc__results_t all = {NULL, 0, 0};
    size_t first[PSC_CLI_MAX_TESTS + 1];
    psc_system_info_t sys;
    json_t *run = NULL;
    size_t total = 0, done = 0;
    psc_facts_t *facts = NULL;
    int rc, failed = 0;
    psc__plan_t p;

    if ((rc = psc__plan(ctx, o, &p)) != PSC_EXIT_OK)
        return rc;
    psc_system_info(ctx, &sys);
    if (o->measure.host_node >= sys.numa_nodes) {
        fprintf(stderr, "p2pscope: --host-node %d does not exist: accepted 0 to %d\n", o->measure.host_node,
                sys.numa_nodes - 1);
        return PSC_EXIT_USAGE;
    }
    for (int i = 0; i < p.ndev; i++)
        psc_device_info(ctx, p.devs[i], &devs[i]);
    if (tables)
        psc_render_devices(stdout, &sys, devs, p.ndev);
    if (o->json) {
        run = psc_json_run_new(o->cmd == PSC_CMD_REPORT ? "report" : "bw", &sys, devs, p.ndev);
        psc_json_run_set_parameters(run, &o->measure, p.devs, p.ndev, p.tests, p.ntests);
    }
    if (o->cmd == PSC_CMD_REPORT)
        facts = psc_report_begin(ctx, o, run);
    for (int t = 0; t < p.ntests; t++) {
        size_t n = 0;

        psc_bw_cases(ctx, p.tests[t], p.devs, p.ndev, NULL, 0, &n); /* count only */
        total += n * (size_t)p.nsizes;
    }

    for (int t = 0; t < p.ntests; t++) {
        first[t] = all.n;
        for (int s = 0; s < p.nsizes; s++) {
            psc_measure_opts_t m = o->measure;
            psc_bw_result_t *slot = psc__room(&all, cap);
            size_t n;

            if (!slot) {
                fprintf(stderr, "p2pscope: out of host memory\n");
                rc = PSC_EXIT_NO_MEMORY;
                goto out;
            }
            m.size = p.sizes[s];
            n = psc_cli_run_cases(ctx, &m, p.tests[t], p.devs, p.ndev, slot, cap, &done, total);
            for (size_t k = 0; k < n; k++) {
                failed |= slot[k].status == PSC_RESULT_FAILED;
                if (run)
                    psc_json_run_add_test(run, psc_json_bw_result(&slot[k]));
            }
            psc_facts_note_bw(facts, slot, n); /* the doctor's integrity evidence (no facts: nothing) */
            all.n += n;
        }
        if (run && all.n == first[t])
            psc_json_run_add_test(run, psc__json_waived(p.tests[t], "needs more GPUs than selected"));
    }
    first[p.ntests] = all.n;

    for (int t = 0; tables && t < p.ntests; t++) {
        if (p.nsizes > 1)
            psc_render_sweep(stdout, p.tests[t], all.v + first[t], first[t + 1] - first[t]);
        else
            psc_render_bw(stdout, p.tests[t], all.v + first[t], first[t + 1] - first[t], p.devs, p.ndev);
    }
    if (tables) {
        psc_render_p2p_compare(stdout, all.v, all.n);
        if (p.nsizes == 1)
            psc_render_hostmem_compare(stdout, all.v, all.n);
        if (p.nsizes > 1)
            psc_render_crossover(stdout, all.v, all.n);
    }
    if (facts && psc_report_end(facts, o, run) > 0)
        failed = 1;
    rc = failed ? PSC_EXIT_FAILED : PSC_EXIT_OK;
    if (tables) {
        double run_ms = 0, verify_ms = 0;

        for (size_t k = 0; k < all.n; k++) {
            run_ms += all.v[k].run_ms;
            verify_ms += all.v[k].verify_ms;
        }
        printf("\nwall time: %.1f s", psc_cli_now() - t0);
        if (o->measure.verify && run_ms > 0)
            printf("; checking the data took %.2f s of the cases' %.1f s (%.1f %%)", verify_ms / 1e3, run_ms / 1e3,
                   100.0 * verify_ms / run_ms);
        else if (!o->measure.verify)
            printf("; data not checked (--no-verify)");
        printf("\n");
    }
    rc = psc_cli_write_run(run, o, psc_cli_now() - t0, rc);
out:
    psc_facts_free(facts);
    json_decref(run);
    free(all.v);
    return rc;
}
