/* --expect: the rules loaded before a run (a file, or auto from the machine's links), the run checked after it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "report/expect.h"
#include "report/json.h"
#include "report/text.h"

int psc_cli_expect_load(psc_context_t *ctx, const psc_cli_opts_t *o, psc_expect_t **out)
{
    psc_facts_t *f = NULL;
    int env = 0; /* the machine, not the command line, failed */
    psc_status_t st;
    char err[512];

    *out = NULL;
    if (!o->expect)
        return PSC_EXIT_OK;
    if (o->json && psc_cli_tables(o) && strcmp(o->expect, "auto") != 0 && psc_cli_same_file(o->json_path, o->expect)) {
        psc_report_printf(stderr, "p2pscope: --json=%s would replace the --expect file %s: accepted another file for "
                          "the JSON\n", o->json_path, o->expect);
        return PSC_EXIT_USAGE;
    }
    if (strcmp(o->expect, "auto") != 0) {
        st = psc_expect_load(o->expect, out, err, sizeof(err));
    } else if (!(f = psc_facts_new())) {
        st = PSC_ERR_NO_MEMORY;
        snprintf(err, sizeof(err), "out of host memory");
    } else if ((st = psc_facts_gather(ctx, f)) != PSC_OK) {
        env = 1;
        snprintf(err, sizeof(err), "--expect auto: the links were not read: %s", psc_context_last_error(ctx));
    } else if ((st = psc_expect_auto(f, out, err, sizeof(err))) == PSC_OK && (*out)->n == 0) {
        psc_report_printf(stderr, "p2pscope: --expect auto: no NVLink or PCIe link facts here, so no bound to check\n");
    }
    psc_facts_free(f);
    if (st != PSC_OK) {
        psc_report_printf(stderr, "p2pscope: %s\n", err);
        return psc_cli_exit_of(st, env ? PSC_EXIT_ENV : PSC_EXIT_USAGE);
    }
    return PSC_EXIT_OK;
}

/* The lines (beside the tables, or on stderr when stdout holds the JSON), the JSON object, the exit code. */
static int psc__end(psc_expect_t *e, psc_expect_result_t *r, psc_status_t st, const psc_cli_opts_t *o, json_t *run,
                    int rc)
{
    if (st != PSC_OK || !r) {
        psc_report_printf(stderr, "p2pscope: out of host memory: the expectations were not checked\n");
        psc_expect_result_free(r);
        return PSC_EXIT_NO_MEMORY;
    }
    if (psc_cli_tables(o))
        printf("\n");
    psc_expect_render(psc_cli_tables(o) ? stdout : stderr, e, r);
    if (run)
        psc_json_run_set(run, "expect", psc_json_expect(e, r));
    if (r->nmisses && rc == PSC_EXIT_OK)
        rc = PSC_EXIT_FAILED;
    psc_expect_result_free(r);
    return rc;
}

/* Which results psc__expect checks. */
typedef enum { PSC__EXPECT_BW, PSC__EXPECT_LAT, PSC__EXPECT_COLL } psc__expect_kind_t;

/* The run's results (what kind says they are) against e; rc as it stands when there is no e. */
static int psc__expect(psc_expect_t *e, psc__expect_kind_t kind, const void *results, const psc_cli_opts_t *o,
                       json_t *run, int rc)
{
    psc_expect_result_t *r;
    psc_status_t st;

    if (!e)
        return rc;
    r = psc_expect_result_new(e);
    if (!r)
        st = PSC_ERR_NO_MEMORY;
    else if (kind == PSC__EXPECT_BW)
        st = psc_expect_check_bw(e, results, r);
    else if (kind == PSC__EXPECT_LAT)
        st = psc_expect_check_lat(e, results, r);
    else
        st = psc_expect_check_coll(e, results, r);
    return psc__end(e, r, st, o, run, rc);
}

int psc_cli_expect_bw(psc_expect_t *e, const psc_bw_suite_t *s, const psc_cli_opts_t *o, json_t *run, int rc)
{
    return psc__expect(e, PSC__EXPECT_BW, s, o, run, rc);
}

int psc_cli_expect_lat(psc_expect_t *e, const psc_lat_suite_t *s, const psc_cli_opts_t *o, json_t *run, int rc)
{
    return psc__expect(e, PSC__EXPECT_LAT, s, o, run, rc);
}

int psc_cli_expect_coll(psc_expect_t *e, const psc_coll_report_t *c, const psc_cli_opts_t *o, json_t *run, int rc)
{
    return psc__expect(e, PSC__EXPECT_COLL, c, o, run, rc);
}
