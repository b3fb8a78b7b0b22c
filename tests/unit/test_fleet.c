/*
 * check --fleet's pure parts on hand-made nodes: the median (odd, even, ties, none), the outlier rule (a bandwidth
 * below the median and a latency above it by more than the bound, ties and all-equal fleets, figures a node lacks,
 * unreachable and unhealthy nodes left out of the medians, the bound given or each item's), the states and the exit
 * code, a node's summary read back from the check's report, and each kind of rank report (a summary, a check killed
 * by a signal, one that ended without a summary, text that is no report), and the table and JSON that show them.
 */
#define _GNU_SOURCE
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "report/check_build.h"
#include "report/fleet.h"

/* A reached, healthy node of rank r with figures "bw" (GB/s, higher better, tolerance 5) and "lat" (ns, 50). */
static void node(psc_fleet_node_t *nd, int r, double bw, double lat)
{
    memset(nd, 0, sizeof(*nd));
    nd->rank = r;
    nd->reached = 1;
    snprintf(nd->host, sizeof(nd->host), "node%d", r);
    nd->nfig = 2;
    nd->fig[0] = (psc_fleet_fig_t){.name = "bw", .unit = "GB/s", .higher_better = 1, .tolerance_pct = 5, .value = bw};
    nd->fig[1] = (psc_fleet_fig_t){.name = "lat", .unit = "ns", .higher_better = 0, .tolerance_pct = 50, .value = lat};
}

static psc_fleet_t fleet(psc_fleet_node_t *nodes, size_t n, double bound)
{
    psc_fleet_t f = {.n = n, .nodes = nodes, .bound_pct = bound, .timeout_s = 10};

    assert_int_equal(psc_fleet_judge(&f), PSC_OK);
    return f;
}

static void test_median(void **state)
{
    double odd[] = {5, 1, 3}, even[] = {4, 1, 3, 2}, ties[] = {2, 2, 9, 2}, one[] = {7};

    (void)state;
    assert_true(psc_fleet_median(odd, 3) == 3);
    assert_true(psc_fleet_median(even, 4) == 2.5); /* the mean of the middle two */
    assert_true(psc_fleet_median(ties, 4) == 2);
    assert_true(psc_fleet_median(one, 1) == 7);
    assert_true(isnan(psc_fleet_median(odd, 0)));
}

/* One slow node among four: flagged on bandwidth, beside the median of all four (even n). */
static void test_slow_node_flagged(void **state)
{
    psc_fleet_node_t n[4];
    psc_fleet_t f;

    (void)state;
    node(&n[0], 0, 100, 800);
    node(&n[1], 1, 98, 810);
    node(&n[2], 2, 80, 805); /* 10 % below the median 99: beyond 5 % */
    node(&n[3], 3, 100, 800);
    f = fleet(n, 4, 0);
    assert_int_equal(f.nkeys, 2);
    assert_string_equal(f.keys[0].name, "bw");
    assert_true(f.keys[0].median == 99);
    assert_true(f.keys[0].bound_pct == 5); /* the item's tolerance */
    assert_true(f.keys[1].bound_pct == 50);
    assert_int_equal(f.keys[0].n, 4);
    assert_int_equal(n[2].state, PSC_FLEET_OUTLIER);
    assert_int_equal(n[2].flagged[0], 1);
    assert_true(fabs(n[2].change_pct[0] - (80.0 - 99) / 99 * 100) < 1e-9);
    for (int i = 0; i < 4; i++)
        if (i != 2)
            assert_int_equal(n[i].state, PSC_FLEET_HEALTHY);
    assert_int_equal(f.outliers, 1);
    assert_int_equal(f.healthy, 3);
    assert_int_equal(psc_fleet_exit(&f), 1);
}

/* Just within the bound passes; just beyond it flags; a faster node never is. */
static void test_bound_edges(void **state)
{
    psc_fleet_node_t n[3];
    psc_fleet_t f;

    (void)state;
    node(&n[0], 0, 100, 800);
    node(&n[1], 1, 95.5, 800); /* 4.5 % below */
    node(&n[2], 2, 200, 800);  /* far above: better */
    f = fleet(n, 3, 0);
    assert_int_equal(f.healthy, 3);
    assert_int_equal(psc_fleet_exit(&f), 0);
    node(&n[1], 1, 94.9, 800); /* 5.1 % below the median 100 */
    f = fleet(n, 3, 0);
    assert_int_equal(n[1].state, PSC_FLEET_OUTLIER);
    assert_int_equal(n[2].state, PSC_FLEET_HEALTHY);
    /* --fleet-bound 10: the same node passes */
    f = fleet(n, 3, 10);
    assert_true(f.keys[0].bound_pct == 10 && f.keys[1].bound_pct == 10);
    assert_int_equal(n[1].state, PSC_FLEET_HEALTHY);
}

/* A latency is worse above the median: 2x the median flags with the item's 50 %, 1.4x does not. */
static void test_latency_above_median(void **state)
{
    psc_fleet_node_t n[3];
    psc_fleet_t f;

    (void)state;
    node(&n[0], 0, 100, 1000);
    node(&n[1], 1, 100, 2000);
    node(&n[2], 2, 100, 400); /* shorter: better */
    f = fleet(n, 3, 0);
    assert_true(f.keys[1].median == 1000);
    assert_int_equal(n[1].state, PSC_FLEET_OUTLIER);
    assert_int_equal(n[1].flagged[1], 1);
    assert_true(n[1].change_pct[1] < -99 && n[1].change_pct[1] > -101);
    assert_int_equal(n[2].state, PSC_FLEET_HEALTHY);
    assert_true(n[2].change_pct[1] > 0);
    node(&n[1], 1, 100, 1400);
    f = fleet(n, 3, 0);
    assert_int_equal(f.healthy, 3);
}

/* Every node equal, or two and two tied: nobody flagged. */
static void test_all_equal_and_ties(void **state)
{
    psc_fleet_node_t n[4];
    psc_fleet_t f;

    (void)state;
    for (int i = 0; i < 4; i++)
        node(&n[i], i, 50, 900);
    f = fleet(n, 4, 0);
    assert_int_equal(f.healthy, 4);
    assert_true(n[0].change_pct[0] == 0);
    node(&n[2], 2, 40, 900);
    node(&n[3], 3, 40, 900); /* median 45: the two at 40 are 11 % below */
    f = fleet(n, 4, 0);
    assert_true(f.keys[0].median == 45);
    assert_int_equal(f.outliers, 2);
    assert_int_equal(n[2].state, PSC_FLEET_OUTLIER);
    assert_int_equal(n[3].state, PSC_FLEET_OUTLIER);
}

/* The medians count reached nodes with the figure: not the unreachable, not a missing or NaN figure. */
static void test_missing_and_unreached(void **state)
{
    psc_fleet_node_t n[5];
    psc_fleet_t f;

    (void)state;
    node(&n[0], 0, 100, 800);
    node(&n[1], 1, 100, 800);
    node(&n[2], 2, 1, 800);
    n[2].reached = 0; /* its figures (had it sent any) count for nothing */
    snprintf(n[2].why, sizeof(n[2].why), "no report");
    node(&n[3], 3, NAN, 800); /* the path failed: no figure */
    node(&n[4], 4, 100, 800);
    n[4].nfig = 1; /* no latency at all */
    f = fleet(n, 5, 0);
    assert_int_equal(f.keys[0].n, 3);
    assert_true(f.keys[0].median == 100);
    assert_int_equal(f.keys[1].n, 3);
    assert_int_equal(n[2].state, PSC_FLEET_UNREACHABLE);
    assert_int_equal(n[3].state, PSC_FLEET_HEALTHY);
    assert_true(isnan(n[3].change_pct[0]));
    assert_int_equal(f.unreachable, 1);
    assert_int_equal(f.healthy, 4);
    assert_int_equal(psc_fleet_exit(&f), 1);
}

/* A node whose own check failed is unhealthy whatever its figures; the fleet's exit is 1. */
static void test_unhealthy_and_exit(void **state)
{
    psc_fleet_node_t n[2];
    psc_fleet_t f;

    (void)state;
    node(&n[0], 0, 100, 800);
    node(&n[1], 1, 100, 800);
    f = fleet(n, 2, 0);
    assert_int_equal(psc_fleet_exit(&f), 0);
    n[1].check_exit = 1;
    f = fleet(n, 2, 0);
    assert_int_equal(n[1].state, PSC_FLEET_UNHEALTHY);
    assert_int_equal(f.unhealthy, 1);
    assert_int_equal(psc_fleet_exit(&f), 1);
    assert_string_equal(psc_fleet_state_name(PSC_FLEET_UNREACHABLE), "UNREACHABLE");
}

/* A check's report into a summary and back: the worst figure of each compared item, the failed items' lines. */
static void test_summary_round_trip(void **state)
{
    psc_check_report_t r = {0};
    psc_check_item_t *it;
    psc_fleet_node_t nd;
    json_t *sum;
    char *text, err[256];

    (void)state;
    it = psc_check_item_new(&r, "bw.x", "GB/s", 1, PSC_CHECK_TOL_GPU);
    psc_check_fig_new(it, "a")->value = 300;
    psc_check_fig_new(it, "b")->value = 250; /* the worst */
    psc_check_fig_new(it, "c");              /* no figure (NAN) */
    it = psc_check_item_new(&r, "lat.y", "ns", 0, PSC_CHECK_TOL_LAT);
    psc_check_fig_new(it, "a")->value = 800;
    psc_check_fig_new(it, "b")->value = 900; /* the worst */
    it = psc_check_item_new(&r, "integrity", "", 1, 0); /* no tolerance: not compared */
    psc_check_fig_new(it, "bad")->value = 3;
    it->state = PSC_CHECK_FAIL;
    snprintf(it->line, sizeof(it->line), "bad_bytes 3");
    psc_check_skip(&r, "bw.skipped", "GB/s", 1, PSC_CHECK_TOL_GPU, "one GPU");
    psc_check_report_count(&r);
    r.failed = 1;
    sum = psc_fleet_summary(&r, 1);
    assert_non_null(sum);
    text = json_dumps(sum, JSON_COMPACT);
    memset(&nd, 0, sizeof(nd));
    assert_int_equal(psc_fleet_node_read(&nd, text, strlen(text), err, sizeof(err)), PSC_OK);
    assert_int_equal(nd.reached, 1);
    assert_int_equal(nd.check_exit, 1);
    assert_int_equal(nd.nfig, 2);
    assert_string_equal(nd.fig[0].name, "bw.x");
    assert_true(nd.fig[0].value == 250);
    assert_true(nd.fig[0].tolerance_pct == PSC_CHECK_TOL_GPU);
    assert_string_equal(nd.fig[1].name, "lat.y");
    assert_true(nd.fig[1].value == 900);
    assert_int_equal(nd.fig[1].higher_better, 0);
    assert_string_equal(nd.why, "integrity: bad_bytes 3");
    free(text);
    json_decref(sum);
    for (size_t i = 0; i < r.n; i++)
        free(r.items[i].fig);
    free(r.items);
}

/* Each kind of rank report: a summary, a check killed, a check that ended without one, and text that is none. */
static void test_rank_reports(void **state)
{
    const char *sum = "{\"verdict\":\"healthy\",\"exit_code\":0,\"failed\":0,\"failed_items\":[],\"figures\":"
                      "[{\"name\":\"bw\",\"unit\":\"GB/s\",\"higher_better\":true,\"tolerance_pct\":5,\"value\":7}]}";
    psc_fleet_node_t nd;
    char *msg;

    (void)state;
    memset(&nd, 0, sizeof(nd));
    msg = psc_fleet_message("h1", 0, -1, "", sum);
    psc_fleet_node_take(&nd, msg, strlen(msg));
    free(msg);
    assert_int_equal(nd.reached, 1);
    assert_string_equal(nd.host, "h1");
    assert_int_equal(nd.check_exit, 0);
    assert_true(nd.nfig == 1 && nd.fig[0].value == 7);

    memset(&nd, 0, sizeof(nd));
    msg = psc_fleet_message("h2", -1, 9, "", NULL);
    psc_fleet_node_take(&nd, msg, strlen(msg));
    free(msg);
    assert_int_equal(nd.reached, 0);
    assert_non_null(strstr(nd.why, "its check died"));
    assert_non_null(strstr(nd.why, "(signal 9)"));

    memset(&nd, 0, sizeof(nd));
    msg = psc_fleet_message("h3", 3, -1, "noise\np2pscope: no CUDA driver\n", NULL);
    psc_fleet_node_take(&nd, msg, strlen(msg));
    free(msg);
    assert_int_equal(nd.reached, 1);
    assert_int_equal(nd.check_exit, 3);
    assert_string_equal(nd.why, "its check ended with exit code 3: p2pscope: no CUDA driver");

    memset(&nd, 0, sizeof(nd));
    psc_fleet_node_take(&nd, "{\"host\":", 8);
    assert_int_equal(nd.reached, 0);
    assert_string_equal(nd.why, "its report is no fleet report");
    memset(&nd, 0, sizeof(nd));
    msg = psc_fleet_message("h4", 0, -1, "", "{\"figures\":7}");
    psc_fleet_node_take(&nd, msg, strlen(msg));
    free(msg);
    assert_int_equal(nd.reached, 0);
    assert_non_null(strstr(nd.why, "no check summary"));
}

static void render(FILE *f, void *arg)
{
    psc_render_fleet(f, arg);
}

/* The table: a line per node with its state and cells, the flag beside the slow figure; the JSON's medians. */
static void test_table_and_json(void **state)
{
    psc_fleet_node_t n[3];
    psc_fleet_t f;
    char *buf = NULL, *page;
    size_t len = 0;
    FILE *m;
    json_t *j;

    (void)state;
    node(&n[0], 0, 100, 800);
    node(&n[1], 1, 50, 800);
    node(&n[2], 2, 100, 800);
    n[2].reached = 0;
    snprintf(n[2].why, sizeof(n[2].why), "no report within -T 10 s");
    f = fleet(n, 3, 0);
    m = open_memstream(&buf, &len);
    render(m, &f);
    fclose(m);
    assert_non_null(strstr(buf, "\nHEALTHY         0  node0"));
    assert_non_null(strstr(buf, "\nOUTLIER         1  node1                50 -33% !"));
    assert_non_null(strstr(buf, "\nUNREACHABLE     2  node2"));
    assert_non_null(strstr(buf, "no report within -T 10 s\n"));
    assert_non_null(strstr(buf, "\nfleet: UNHEALTHY (3 nodes: 1 healthy, 1 outlier, 0 unhealthy, 1 unreachable)"));
    free(buf);
    j = psc_json_fleet(&f, psc_fleet_exit(&f));
    assert_non_null(j);
    assert_int_equal(json_integer_value(json_object_get(j, "exit_code")), 1);
    assert_true(json_number_value(json_object_get(json_array_get(json_object_get(j, "medians"), 0), "median")) == 75);
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(j, "nodes"), 1), "state")),
                        "OUTLIER");
    json_decref(j);
    page = psc_html_fleet(&f, "fleet <&>");
    assert_non_null(page);
    assert_non_null(strstr(page, "<title>fleet &lt;&amp;&gt;</title>"));
    assert_non_null(strstr(page, "<td>UNREACHABLE</td>"));
    free(page);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_median),
        cmocka_unit_test(test_slow_node_flagged),
        cmocka_unit_test(test_bound_edges),
        cmocka_unit_test(test_latency_above_median),
        cmocka_unit_test(test_all_equal_and_ties),
        cmocka_unit_test(test_missing_and_unreached),
        cmocka_unit_test(test_unhealthy_and_exit),
        cmocka_unit_test(test_summary_round_trip),
        cmocka_unit_test(test_rank_reports),
        cmocka_unit_test(test_table_and_json),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
