/* verify: every path moves the right bytes; --seconds makes it a stress test. Wrong data feeds the doctor. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "report/json.h"
#include "report/render.h"
#include "report/render_doctor.h"
#include "report/render_load.h"
#include "report/table.h"
#include "report/text.h"

/* Per path over every pass: what was checked and what was wrong. */
typedef struct {
    psc_verify_result_t last;    /* the last pass's result, or the first failing one */
    uint64_t copies, bytes_checked, bad_bytes;
    unsigned passes;
} psc__path_t;

static json_t *psc__json_path(const psc__path_t *p)
{
    char label[48];
    json_t *o = json_pack("{s:s,s:s,s:s,s:o,s:I,s:I,s:I,s:i}", "name", psc_bw_test_name(p->last.c.test), "direction",
                          psc_case_label(&p->last.c, label, sizeof(label)), "status",
                          psc_result_status_string(p->last.status), "reason",
                          p->last.reason[0] ? psc_json_str(p->last.reason) : json_null(), "copies",
                          (json_int_t)p->copies, "bytes_checked", (json_int_t)p->bytes_checked, "bad_bytes",
                          (json_int_t)p->bad_bytes, "passes", (int)p->passes);

    if (p->last.first.offset >= 0 || p->bad_bytes)
        json_object_set_new(o, "first_error",
                            json_pack("{s:s,s:I,s:I,s:I,s:I,s:i,s:i,s:i}", "pattern",
                                      psc_pattern_kind_name(p->last.first.pattern), "size", (json_int_t)p->last.first.size,
                                      "src_offset", (json_int_t)p->last.first.src_off, "dst_offset",
                                      (json_int_t)p->last.first.dst_off, "offset", (json_int_t)p->last.first.offset,
                                      "expected", p->last.first.expected, "found", p->last.first.found, "where",
                                      p->last.first.where));
    return o;
}

static void psc__render(const psc__path_t *paths, size_t n, double wall)
{
    psc_table_t *t = psc_table_new((unsigned)n + 1, 7);
    uint64_t bytes = 0, bad = 0;

    if (!t)
        return;
    psc_table_left_columns(t, 2);
    psc_table_set(t, 0, 0, "test");
    psc_table_set(t, 0, 1, "path");
    psc_table_set(t, 0, 2, "copies");
    psc_table_set(t, 0, 3, "MB checked");
    psc_table_set(t, 0, 4, "bad bytes");
    psc_table_set(t, 0, 5, "status");
    psc_table_set(t, 0, 6, "passes");
    for (size_t i = 0; i < n; i++) {
        char label[48];

        psc_table_set(t, (unsigned)i + 1, 0, "%s", psc_bw_test_name(paths[i].last.c.test));
        psc_table_set(t, (unsigned)i + 1, 1, "%s", psc_case_label(&paths[i].last.c, label, sizeof(label)));
        psc_table_set(t, (unsigned)i + 1, 2, "%llu", (unsigned long long)paths[i].copies);
        psc_table_set(t, (unsigned)i + 1, 3, "%.1f", paths[i].bytes_checked / 1e6);
        psc_table_set(t, (unsigned)i + 1, 4, "%llu", (unsigned long long)paths[i].bad_bytes);
        psc_table_set(t, (unsigned)i + 1, 5, "%s", psc_result_status_string(paths[i].last.status));
        psc_table_set(t, (unsigned)i + 1, 6, "%u", paths[i].passes);
        bytes += paths[i].bytes_checked;
        bad += paths[i].bad_bytes;
    }
    printf("\nverify [1 MB = 1e6 bytes; patterns: random (seeded), address, walking ones, walking zeros, zeros, "
           "ones; sizes 1 B to the largest, aligned and unaligned; canaries, sources and sentinels checked]\n");
    psc_table_render(t, stdout);
    psc_table_free(t);
    for (size_t i = 0; i < n; i++)
        if (paths[i].last.status != PSC_RESULT_PASSED) {
            char label[48];

            psc_report_printf(stdout, "  %s %s: %s: %s\n", psc_bw_test_name(paths[i].last.c.test),
                              psc_case_label(&paths[i].last.c, label, sizeof(label)),
                              psc_result_status_string(paths[i].last.status), paths[i].last.reason);
        }
    printf("\n%.1f GB checked, %llu bad bytes, wall time %.1f s\n", bytes / 1e9, (unsigned long long)bad, wall);
}

/* Wrong data between two GPUs is the doctor's p2p_corrupts finding. */
static int psc__feed_doctor(psc_context_t *ctx, const psc__path_t *paths, size_t n, int tables, json_t *run)
{
    psc_facts_t *f = psc_facts_new();
    psc_finding_t *v = NULL;
    size_t nf = 0, errors = 0;

    if (!f || psc_facts_gather(ctx, f) != PSC_OK) {
        psc_facts_free(f);
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        const psc_bw_case_t *c = &paths[i].last.c;

        for (int k = 0; k < c->nxfer; k++) {
            int a = c->xfer[k].src, b = c->xfer[k].dst;

            if (a < 0 || b < 0 || a == b || a >= f->ngpu || b >= f->ngpu)
                continue;
            if (paths[i].bad_bytes)
                f->pair[a][b].integrity = 0;
            else if (paths[i].last.status == PSC_RESULT_PASSED && f->pair[a][b].integrity != 0)
                f->pair[a][b].integrity = 1;
        }
    }
    v = psc_cli_doctor(f, &nf);
    for (size_t k = 0; k < nf; k++) {
        if (strcmp(v[k].rule, "p2p_corrupts") != 0)
            continue;
        errors++;
        if (tables)
            psc_report_printf(stdout, "\n[%s] %s: %s\n    evidence: %s\n    fix: %s\n",
                              psc_severity_string(v[k].severity), v[k].rule, v[k].what, v[k].evidence, v[k].fix);
    }
    if (run)
        json_object_set_new(run, "findings", psc_json_findings(v, nf));
    free(v);
    psc_facts_free(f);
    return (int)errors;
}

int psc_cmd_verify(psc_context_t *ctx, const psc_cli_opts_t *o)
{
    const double t0 = psc_cli_now();
    const int tables = psc_cli_tables(o), tty = isatty(STDERR_FILENO);
    int devs[PSC_CLI_MAX_DEVS], ndev = o->ndev ? o->ndev : psc_device_count(ctx);
    int ntests = o->ntests ? o->ntests : psc_bw_test_count(), rc = PSC_EXIT_OK;
    size_t cap = 0, npaths = 0;
    psc_bw_case_t *cases = NULL;
    psc__path_t *paths = NULL;
    psc_device_info_t info[PSC_CLI_MAX_DEVS];
    psc_system_info_t sys;
    json_t *run = NULL, *arr;
    psc_load_t *load = NULL;
    psc_load_path_report_t *lrep = NULL;
    int nload = 0;
    uint64_t checked = 0;
    char load_error[512] = "";

    for (int i = 0; i < ndev; i++)
        devs[i] = o->ndev ? o->devs[i] : i;
    for (int t = 0; t < ntests; t++) {
        size_t n = 0;

        psc_bw_cases(ctx, o->ntests ? o->tests[t] : t, devs, ndev, NULL, 0, &n);
        cap += n;
        if (o->ntests && n == 0) { /* a named test this machine cannot run: not a pass */
            fprintf(stderr, "p2pscope: %s has no path to verify with %d GPU%s %s (it needs at least %d)\n",
                    psc_bw_test_name(o->tests[t]), ndev, ndev == 1 ? "" : "s",
                    o->ndev ? "selected with --devices" : "on this machine", psc_bw_test_info(o->tests[t])->min_gpus);
            return PSC_EXIT_ENV;
        }
    }
    if (cap == 0) {
        fprintf(stderr, "p2pscope: nothing to verify: no test has a path with these GPUs\n");
        return PSC_EXIT_NA;
    }
    cases = calloc(cap + 1, sizeof(*cases));
    paths = calloc(cap + 1, sizeof(*paths));
    if (!cases || !paths) {
        rc = PSC_EXIT_ENV;
        goto out;
    }
    for (int t = 0; t < ntests; t++) {
        size_t n = 0;

        psc_bw_cases(ctx, o->ntests ? o->tests[t] : t, devs, ndev, cases + npaths, cap - npaths, &n);
        npaths += n;
    }
    psc_system_info(ctx, &sys);
    for (int i = 0; i < ndev; i++)
        psc_device_info(ctx, devs[i], &info[i]);
    if (tables)
        psc_render_devices(stdout, &sys, info, ndev);
    if (!o->no_load && psc_load_start(ctx, devs, ndev, &load) != PSC_OK) {
        /* Checked without it, and the run fails: it did not do what was asked. */
        snprintf(load_error, sizeof(load_error), "%s", psc_context_last_error(ctx));
        fprintf(stderr, "p2pscope: cannot set up the background traffic: %s (--no-load runs without it)\n",
                load_error);
        rc = PSC_EXIT_FAILED;
    }
    for (unsigned pass = 0;; pass++) {
        psc_verify_opts_t vo = o->verify;
        size_t ran = 0, tried = 0;

        vo.load = load;
        vo.seed ^= (uint64_t)pass * 0x9E3779B97F4A7C15ull; /* each pass its own data */
        for (size_t k = 0; k < npaths; k++) {
            psc_verify_result_t r;
            char label[48];

            /* The first pass covers every path; later ones stop when the time is up. */
            if (pass > 0 && psc_cli_now() - t0 >= o->seconds)
                break;
            psc_case_label(&cases[k], label, sizeof(label));
            if (tty)
                fprintf(stderr, "\r\033[K%.0f s, %.1f GB checked: pass %u [%zu/%zu] %s %s", psc_cli_now() - t0,
                        checked / 1e9, pass + 1, k + 1, npaths, psc_bw_test_name(cases[k].test), label);
            if (psc_verify_run(ctx, &cases[k], &vo, &r) != PSC_OK) {
                memset(&r, 0, sizeof(r));
                r.c = cases[k];
                r.status = PSC_RESULT_FAILED;
                snprintf(r.reason, sizeof(r.reason), "invalid case");
            }
            if (!paths[k].passes || paths[k].last.status != PSC_RESULT_FAILED)
                paths[k].last = r;
            paths[k].copies += r.copies;
            paths[k].bytes_checked += r.bytes_checked;
            checked += r.bytes_checked;
            paths[k].bad_bytes += r.bad_bytes;
            paths[k].passes++;
            tried++;
            ran += r.copies > 0;
            if (r.status == PSC_RESULT_FAILED)
                rc = PSC_EXIT_FAILED;
            if (!tty)
                fprintf(stderr, "%.0f s, %.1f GB checked: pass %u [%zu/%zu] %s %s: %s, %llu copies\n",
                        psc_cli_now() - t0, checked / 1e9, pass + 1, k + 1, npaths, psc_bw_test_name(cases[k].test),
                        label, psc_result_status_string(r.status), (unsigned long long)r.copies);
        }
        if (!o->seconds || psc_cli_now() - t0 >= o->seconds)
            break;
        /* Another pass would fail the same way at once: a busy loop, not a stress test. */
        if (tried && !ran) {
            fprintf(stderr, "p2pscope: no path could run in pass %u; the stress run stops\n", pass + 1);
            break;
        }
    }
    if (tty)
        fprintf(stderr, "\r\033[K");
    if (load) {
        lrep = calloc(PSC_LOAD_MAX_PATHS, sizeof(*lrep));
        if (psc_load_stop(load, lrep, lrep ? PSC_LOAD_MAX_PATHS : 0, &nload) != PSC_OK) {
            fprintf(stderr, "p2pscope: the background traffic failed: %s\n", psc_context_last_error(ctx));
            rc = PSC_EXIT_FAILED;
        }
        for (int i = 0; lrep && i < nload; i++)
            if (lrep[i].bad_bytes)
                rc = PSC_EXIT_FAILED;
        if (!lrep)
            nload = 0;
        load = NULL; /* freed by the stop */
    }
    if (tables && nload)
        psc_render_load(stdout, lrep, nload);
    if (tables)
        psc__render(paths, npaths, psc_cli_now() - t0);
    if (o->json) {
        run = psc_json_run_new("verify", &sys, info, ndev);
        arr = json_array();
        for (size_t k = 0; arr && k < npaths; k++)
            if (json_array_append_new(arr, psc__json_path(&paths[k])) != 0) {
                json_decref(arr);
                arr = NULL; /* the run is then incomplete, and not written */
            }
        psc_json_run_set(run, "paths", arr);
        psc_json_run_set(run, "background", lrep ? psc_json_load(lrep, nload) : json_null());
        if (load_error[0])
            psc_json_run_set(run, "background_error", psc_json_str(load_error));
        psc_json_run_set(run, "seed", json_integer((json_int_t)(o->verify.seed & 0x7fffffffffffffffull)));
    }
    if (rc == PSC_EXIT_FAILED && psc__feed_doctor(ctx, paths, npaths, tables, run) > 0)
        rc = PSC_EXIT_FAILED;
    rc = psc_cli_write_run(run, o, psc_cli_now() - t0, rc);
out:
    json_decref(run);
    free(lrep);
    free(cases);
    free(paths);
    return rc;
}
