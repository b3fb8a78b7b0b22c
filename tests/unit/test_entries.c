/*
 * One library entry per CLI command: psc_facts_examine (doctor), the verify
 * suite's findings (verify), psc_bw_run_report (report) and psc_nvlink_watch
 * (nvlink --watch), on the fake driver's "contexts" mode (contexts and peer
 * access work, kernels do not launch, so every copy fails without wrong
 * bytes): refusals recorded with the output untouched, outputs on success,
 * and the evidence folded as the separate calls fold it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fake_context.h"
#include "p2pscope/bench.h"
#include "suite_opts.h"

static psc_bw_test_t bw_named(const char *name)
{
    psc_bw_test_t t = -1;

    assert_int_equal(psc_bw_test_from_name(name, &t), PSC_OK);
    return t;
}

static void assert_reason(const char *why)
{
    if (!strstr(psc_context_last_error(g_ctx), why))
        fail_msg("reason \"%s\" lacks \"%s\"", psc_context_last_error(g_ctx), why);
}

/* The doctor's facts in one call: gathered live, every peer pair tried, none proven (no copy runs). */
static void test_examine(void **state)
{
    psc_facts_t *f = psc_facts_new(), *g = psc_facts_new();
    int n = psc_device_count(g_ctx), tried = 0;

    (void)state;
    assert_non_null(f);
    assert_non_null(g);
    assert_int_equal(psc_facts_examine(NULL, f), PSC_ERR_INVALID);
    assert_int_equal(psc_facts_examine(g_ctx, NULL), PSC_ERR_INVALID);
    assert_reason("psc_facts_examine");

    snprintf(f->source, sizeof(f->source), "stale");
    f->ngpu = 1;
    f->pair[0][1].integrity = 1; /* replaced whole: nothing of before survives */
    assert_int_equal(psc_facts_examine(g_ctx, f), PSC_OK);
    assert_string_equal(f->source, "live");
    assert_int_equal(f->ngpu, n);
    assert_int_equal(psc_facts_gather(g_ctx, g), PSC_OK);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            assert_int_equal(f->pair[i][j].can_access, g->pair[i][j].can_access);
            if (i != j)
                assert_int_equal(f->pair[i][j].integrity, -1); /* the copy could not run: "not run" */
            tried += i != j && f->pair[i][j].can_access == 1;
        }
    assert_true(tried > 0); /* the mode gives peer access: the check had pairs to try */
    psc_facts_free(g);
    psc_facts_free(f);
}

/* The findings a verify suite carries are the doctor's on live facts with its paths folded in. */
static void test_verify_findings(void **state)
{
    psc_bw_test_t t = bw_named("gpu_to_gpu_write_ce");
    psc_verify_suite_t *s = NULL;
    psc_finding_t *v;
    psc_verify_opts_t o;
    psc_facts_t *f = psc_facts_new();
    size_t want;

    (void)state;
    assert_non_null(f);
    psc_verify_opts_default(&o);
    assert_int_equal(psc_verify_run_suite(g_ctx, verify_suite_opts(&t, 1, NULL, 0, &o, 0, 0, NULL, NULL), &s), PSC_OK);
    assert_true(s->npaths > 0);
    assert_int_equal(s->nfailed, s->npaths); /* no kernel runs */
    assert_non_null(s->findings);            /* a path failed: the doctor ran */

    assert_int_equal(psc_facts_gather(g_ctx, f), PSC_OK);
    assert_int_equal(psc_facts_probe_gpumap(g_ctx, f), PSC_OK); /* as the suite does */
    psc_facts_note_verify_sums(f, s->paths, s->npaths);
    want = psc_doctor(f, NULL, 0);
    assert_int_equal(s->nfindings, want);
    v = calloc(want + 1, sizeof(*v));
    assert_non_null(v);
    assert_int_equal(psc_doctor(f, v, want), want);
    for (size_t k = 0; k < want; k++) {
        assert_string_equal(s->findings[k].rule, v[k].rule);
        assert_int_equal(s->findings[k].severity, v[k].severity);
        /* Failures without wrong bytes prove nothing about the pair. */
        assert_string_not_equal(s->findings[k].rule, "p2p_corrupts");
    }
    free(v);
    psc_verify_suite_free(s);
    psc_facts_free(f);
}

/* report's run: refused as psc_bw_run_suite with the evidence untouched; on success the fold of its results. */
static void test_bw_report(void **state)
{
    const int bad_dev[] = {0, 7};
    psc_bw_test_t t = bw_named("gpu_to_gpu_write_ce");
    psc_facts_t *f = psc_facts_new(), *want = psc_facts_new();
    psc_bw_suite_t *s = (void *)&g_ctx;
    psc_measure_opts_t o;

    (void)state;
    assert_non_null(f);
    assert_non_null(want);
    psc_measure_opts_default(&o);
    assert_int_equal(psc_facts_gather(g_ctx, f), PSC_OK);
    f->pair[0][1].integrity = 1;
    f->pair[1][0].integrity = 0;
    *want = *f;
    want->hwloc_xml = NULL; /* compared below without it */

    assert_int_equal(psc_bw_run_report(g_ctx, bw_opts(&t, 1, bad_dev, 2, 0, 0, 0, &o, NULL, NULL), f, &s),
                     PSC_ERR_INVALID);
    assert_reason("psc_bw_run_suite");
    assert_ptr_equal(s, (void *)&g_ctx);
    assert_int_equal(psc_bw_run_report(g_ctx, bw_opts(&t, 1, NULL, 0, 0, 0, 0, &o, NULL, NULL), f, NULL),
                     PSC_ERR_INVALID);
    assert_memory_equal(f->pair, want->pair, sizeof(f->pair));

    assert_int_equal(psc_bw_run_report(g_ctx, bw_opts(&t, 1, NULL, 0, 0, 0, 0, &o, NULL, NULL), f, &s), PSC_OK);
    assert_true(s->nresults > 0);
    psc_facts_note_bw(want, s->results, s->nresults);
    assert_memory_equal(f->pair, want->pair, sizeof(f->pair));
    assert_int_equal(f->pair[0][1].integrity, 1); /* runs that failed without wrong bytes change nothing */
    assert_int_equal(f->pair[1][0].integrity, 0);
    psc_bw_suite_free(s);

    assert_int_equal(psc_bw_run_report(g_ctx, bw_opts(&t, 1, NULL, 0, 0, 0, 0, &o, NULL, NULL), NULL, &s), PSC_OK);
    psc_bw_suite_free(s);
    psc_facts_free(want);
    psc_facts_free(f);
}

/* nvlink --watch: one suite on every GPU between two snapshots; nothing written when refused. */
static void test_nvlink_watch(void **state)
{
    psc_bw_test_t local = bw_named("gpu_local_ce"), bad = -1;
    psc_nvlink_traffic_t *tr = malloc(sizeof(*tr)), *blank = malloc(sizeof(*blank));
    psc_bw_suite_t *s = (void *)&g_ctx;
    psc_measure_opts_t o;

    (void)state;
    assert_non_null(tr);
    assert_non_null(blank);
    memset(tr, 0xAB, sizeof(*tr));
    memset(blank, 0xAB, sizeof(*blank));
    psc_measure_opts_default(&o);
    assert_int_equal(psc_nvlink_watch(NULL, bw_opts(NULL, 0, NULL, 0, 0, 0, 0, &o, NULL, NULL), &s, tr),
                     PSC_ERR_INVALID);
    assert_int_equal(psc_nvlink_watch(g_ctx, bw_opts(NULL, 0, NULL, 0, 0, 0, 0, &o, NULL, NULL), NULL, tr),
                     PSC_ERR_INVALID);
    assert_reason("psc_nvlink_watch");
    assert_int_equal(psc_nvlink_watch(g_ctx, bw_opts(NULL, 0, NULL, 0, 0, 0, 0, &o, NULL, NULL), &s, NULL),
                     PSC_ERR_INVALID);
    assert_reason("psc_nvlink_watch");
    assert_int_equal(psc_nvlink_watch(g_ctx, bw_opts(&bad, 1, NULL, 0, 0, 0, 0, &o, NULL, NULL), &s, tr),
                     PSC_ERR_INVALID);
    assert_reason("psc_bw_run_suite");
    assert_int_equal(psc_nvlink_watch(g_ctx, bw_opts(NULL, 0, NULL, 0, 4096, 8192, 2, &o, NULL, NULL), &s, tr),
                     PSC_ERR_INVALID);
    assert_reason("psc_nvlink_watch: ndev 0, sweep_min 4096: accepted 0");
    assert_ptr_equal(s, (void *)&g_ctx);
    assert_memory_equal(tr, blank, sizeof(*tr));

    /* No test named: gpu_to_gpu_write_ce, on every GPU, at one size. */
    assert_int_equal(psc_nvlink_watch(g_ctx, bw_opts(NULL, 0, NULL, 0, 0, 0, 0, &o, NULL, NULL), &s, tr), PSC_OK);
    assert_int_equal(s->ntests, 1);
    assert_int_equal(s->tests[0].test, bw_named("gpu_to_gpu_write_ce"));
    assert_int_equal(s->ndev, psc_device_count(g_ctx));
    assert_int_equal(s->nsizes, 1);
    assert_int_equal(tr->ngpu, psc_device_count(g_ctx));
    psc_bw_suite_free(s);

    assert_int_equal(psc_nvlink_watch(g_ctx, bw_opts(&local, 1, NULL, 0, 0, 0, 0, &o, NULL, NULL), &s, tr), PSC_OK);
    assert_int_equal(s->ntests, 1);
    assert_int_equal(s->tests[0].test, local);
    assert_int_equal(s->nresults, (size_t)psc_device_count(g_ctx));
    psc_bw_suite_free(s);
    free(blank);
    free(tr);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_examine),
        cmocka_unit_test(test_verify_findings),
        cmocka_unit_test(test_bw_report),
        cmocka_unit_test(test_nvlink_watch),
    };

    psc_test_fake_driver("contexts", "2");
    return cmocka_run_group_tests(tests, psc_test_open_ctx, psc_test_close_ctx);
}
