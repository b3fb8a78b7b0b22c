/* compare: two JSON runs of one command, case by case (src/report/compare.c), without the driver. */
#include <stdio.h>

#include "cli.h"
#include "report/compare.h"
#include "report/text.h"

int psc_cmd_compare(const psc_cli_opts_t *o)
{
    psc_cmp_run_t *a = NULL, *b = NULL;
    psc_compare_t *c = NULL;
    char err[1024];
    json_t *doc = NULL;
    psc_status_t st;
    int rc;

    /* --json=FILE naming a run: refused before anything is read, as it would replace that run */
    if (o->json && psc_cli_tables(o) &&
        (psc_cli_same_file(o->json_path, o->compare_a) || psc_cli_same_file(o->json_path, o->compare_b))) {
        psc_report_printf(stderr, "p2pscope: --json=%s would replace the run %s: accepted another file for the "
                          "comparison's JSON\n", o->json_path,
                          psc_cli_same_file(o->json_path, o->compare_a) ? o->compare_a : o->compare_b);
        return PSC_EXIT_USAGE;
    }
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
out:
    json_decref(doc);
    psc_compare_free(c);
    psc_cmp_run_free(b);
    psc_cmp_run_free(a);
    return rc;
}
