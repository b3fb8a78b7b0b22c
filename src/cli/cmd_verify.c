/* verify: every path moves the right bytes; --seconds makes it a stress test. Wrong data feeds the doctor. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "report/json.h"
#include "report/render.h"
#include "report/render_doctor.h"
#include "report/render_load.h"
#include "report/render_verify.h"

/* Progress on stderr: a live line on a terminal, one line per finished path otherwise. */
static void psc__progress(const psc_verify_progress_t *p, void *user)
{
    const int tty = *(const int *)user;
    char label[48];

    psc_case_label(p->c, label, sizeof(label));
    if (tty && !p->result)
        fprintf(stderr, "\r\033[K%.0f s, %.1f GB checked: pass %u [%zu/%zu] %s %s", p->elapsed_s, p->bytes_checked / 1e9,
                p->pass, p->index + 1, p->count, psc_bw_test_name(p->c->test), label);
    else if (!tty && p->result)
        fprintf(stderr, "%.0f s, %.1f GB checked: pass %u [%zu/%zu] %s %s: %s, %llu copies\n", p->elapsed_s,
                p->bytes_checked / 1e9, p->pass, p->index + 1, p->count, psc_bw_test_name(p->c->test), label,
                psc_result_status_string(p->result->status), (unsigned long long)p->result->copies);
}

/* Wrong data between two GPUs is the doctor's p2p_corrupts finding. */
static int psc__feed_doctor(psc_context_t *ctx, const psc_verify_path_sum_t *paths, size_t n, int tables, json_t *run)
{
    psc_facts_t *f = psc_facts_new();
    psc_finding_t *v = NULL;
    size_t nf = 0, errors = 0;

    if (!f || psc_facts_gather(ctx, f) != PSC_OK) {
        psc_facts_free(f);
        return 0;
    }
    psc_facts_note_verify_sums(f, paths, n);
    v = psc_cli_doctor(f, &nf);
    for (size_t k = 0; k < nf; k++)
        errors += strcmp(v[k].rule, "p2p_corrupts") == 0;
    if (tables)
        psc_render_findings_of_rule(stdout, v, nf, "p2p_corrupts");
    if (run)
        json_object_set_new(run, "findings", psc_json_findings(v, nf));
    free(v);
    psc_facts_free(f);
    return (int)errors;
}

int psc_cmd_verify(psc_context_t *ctx, const psc_cli_opts_t *o)
{
    const double t0 = psc_cli_now();
    const int tables = psc_cli_tables(o);
    int tty = isatty(STDERR_FILENO); /* the progress callback's argument */
    int devs[PSC_CLI_MAX_DEVS], ndev = o->ndev ? o->ndev : psc_device_count(ctx);
    int ntests = o->ntests ? o->ntests : psc_bw_test_count(), rc = PSC_EXIT_OK;
    size_t cap = 0, npaths = 0;
    psc_bw_case_t *cases = NULL;
    psc_verify_path_sum_t *paths = NULL;
    psc_verify_stress_info_t stress = {0, 0, 0};
    psc_verify_opts_t vo;
    psc_device_info_t info[PSC_CLI_MAX_DEVS];
    psc_system_info_t sys;
    json_t *run = NULL, *arr;
    psc_load_t *load = NULL;
    psc_load_path_report_t *lrep = NULL;
    int nload = 0;
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
        fprintf(stderr, "p2pscope: out of host memory\n");
        rc = PSC_EXIT_NO_MEMORY;
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
    vo = o->verify;
    vo.load = load;
    if (psc_verify_stress(ctx, cases, npaths, &vo, o->seconds, psc__progress, &tty, paths, &stress) != PSC_OK) {
        fprintf(stderr, "p2pscope: %s\n", psc_context_last_error(ctx));
        rc = PSC_EXIT_FAILED;
    }
    for (size_t k = 0; k < npaths; k++)
        if (paths[k].last.status == PSC_RESULT_FAILED)
            rc = PSC_EXIT_FAILED;
    if (tty)
        fprintf(stderr, "\r\033[K");
    if (stress.idle_pass)
        fprintf(stderr, "p2pscope: no path could run in pass %u; the stress run stops\n", stress.idle_pass);
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
        psc_render_verify(stdout, paths, npaths, psc_cli_now() - t0);
    if (o->json) {
        run = psc_json_run_new("verify", &sys, info, ndev);
        arr = json_array();
        for (size_t k = 0; arr && k < npaths; k++)
            if (json_array_append_new(arr, psc_json_verify_path(&paths[k])) != 0) {
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
