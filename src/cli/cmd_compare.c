/* compare: two JSON runs of one command, case by case (src/report/compare.c), without the driver. */
#include <stdio.h>

#include "cli.h"
#include "report/compare.h"
#include "report/text.h"

/* An output (option as typed, path) that is one of the runs: one line and PSC_EXIT_USAGE; else 0. */
static int psc__replaces_run(const char *option, const char *path, const psc_cli_opts_t *o, const char *what)
{
    const char *run = psc_cli_same_file(path, o->compare_a) ? o->compare_a
                      : psc_cli_same_file(path, o->compare_b) ? o->compare_b : NULL;

    if (!run)
        return 0;
    psc_report_printf(stderr, "p2pscope: %s%s would replace the run %s: accepted another file for the comparison's %s\n",
                      option, path, run, what);
    return PSC_EXIT_USAGE;
}

/* --html, --csv: the comparison's page and tables; rc, or the exit code of a failed write after one line. */
static int psc__page(const psc_compare_t *c, const psc_cli_opts_t *o, int rc)
{
    char err[1024];
    psc_status_t st;

    if (!o->html_path && !o->csv_dir)
        return rc;
    if ((st = psc_compare_page_write(c, rc, o->html_path, o->csv_dir, err, sizeof(err))) == PSC_OK)
        return rc;
    psc_report_printf(stderr, "p2pscope: %s\n", err);
    return psc_cli_exit_of(st, PSC_EXIT_FAILED);
}

int psc_cmd_compare(const psc_cli_opts_t *o)
{
    psc_cmp_run_t *a = NULL, *b = NULL;
    psc_compare_t *c = NULL;
    char err[1024];
    json_t *doc = NULL;
    psc_status_t st;
    int rc;

    /* --json=FILE or --html FILE naming a run: refused before anything is read, as it would replace that run */
    if ((rc = psc__replaces_run("--json=", o->json && psc_cli_tables(o) ? o->json_path : NULL, o, "JSON")) != 0 ||
        (rc = psc__replaces_run("--html ", o->html_path, o, "page")) != 0)
        return rc;
    if ((st = psc_cmp_run_load(o->compare_a, &a, err, sizeof(err))) != PSC_OK ||
        (st = psc_cmp_run_load(o->compare_b, &b, err, sizeof(err))) != PSC_OK ||
        (st = psc_compare(a, b, o->fail_above, &c, err, sizeof(err))) != PSC_OK) {
        psc_report_printf(stderr, "p2pscope: %s\n", err);
        rc = psc_cli_exit_of(st, PSC_EXIT_USAGE);
        goto out;
    }
    rc = c->nfailed ? PSC_EXIT_FAILED : PSC_EXIT_OK;
    if (psc_cli_tables(o))
        psc_render_compare(stdout, c);
    if (o->json) {
        int wrc;

        doc = psc_json_compare(c, rc);
        wrc = psc_cli_write_json(doc, o);
        if (wrc != PSC_EXIT_OK)
            rc = wrc;
        else if (!psc_cli_tables(o)) /* the text's last line, where only JSON was printed */
            psc_render_compare_brief(stderr, c);
    }
    rc = psc__page(c, o, rc);
out:
    json_decref(doc);
    psc_compare_free(c);
    psc_cmp_run_free(b);
    psc_cmp_run_free(a);
    return rc;
}
