/* p2pscope check's items (check.h): the measurements' figures, each against the rules that apply to it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/check.h"
#include "report/check_build.h"

psc_check_item_t *psc_check_item_new(psc_check_report_t *r, const char *name, const char *unit, int higher_better,
                                     double tol)
{
    psc_check_item_t *it;

    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 32;
        psc_check_item_t *grown = realloc(r->items, cap * sizeof(*grown));

        if (!grown)
            return NULL;
        r->items = grown;
        r->cap = cap;
    }
    it = &r->items[r->n++];
    memset(it, 0, sizeof(*it));
    snprintf(it->name, sizeof(it->name), "%s", name);
    snprintf(it->unit, sizeof(it->unit), "%s", unit);
    it->higher_better = higher_better;
    it->tolerance_pct = tol;
    return it;
}

psc_check_figure_t *psc_check_fig_new(psc_check_item_t *it, const char *key)
{
    psc_check_figure_t *g = realloc(it->fig, (it->nfig + 1) * sizeof(*g));

    if (!g)
        return NULL;
    it->fig = g;
    g = &it->fig[it->nfig++];
    memset(g, 0, sizeof(*g));
    snprintf(g->key, sizeof(g->key), "%s", key);
    g->value = NAN;
    g->ok = 1;
    return g;
}

void psc_check_fig_bind(psc_check_figure_t *g, const psc_expect_t *e, int kind, const char *test,
                        double (*value_of)(const psc_expect_rule_t *rule, const void *x), const void *x)
{
    for (size_t i = 0; e && i < e->n; i++) {
        const psc_expect_rule_t *rule = &e->rules[i];
        int met;

        if (!psc_expect_rule_applies(rule, kind, test, g->key))
            continue;
        /* a figure that failed or was waived (why, no value) misses every bound: a lost path is no pass */
        met = psc_expect_meets(rule, value_of(rule, x));
        g->ok &= met;
        if (g->nbounds < PSC_CHECK_MAX_BOUNDS) {
            g->bounds[g->nbounds] = rule;
            g->bound_ok[g->nbounds] = (unsigned char)met;
        }
        g->nbounds++;
    }
}

psc_status_t psc_check_skip(psc_check_report_t *r, const char *name, const char *unit, int higher_better, double tol,
                            const char *why)
{
    psc_check_item_t *it = psc_check_item_new(r, name, unit, higher_better, tol);

    if (!it)
        return PSC_ERR_NO_MEMORY;
    snprintf(it->line, sizeof(it->line), "skipped: %s", why);
    it->state = PSC_CHECK_SKIP;
    return PSC_OK;
}

/* A stage that did not run: one figure with the reason, failing. */
psc_status_t psc_check_lost(psc_check_report_t *r, const char *name, const char *unit, int higher_better, double tol,
                            const char *why)
{
    psc_check_item_t *it = psc_check_item_new(r, name, unit, higher_better, tol);
    psc_check_figure_t *g = it ? psc_check_fig_new(it, "run") : NULL;

    if (!g)
        return PSC_ERR_NO_MEMORY;
    snprintf(g->why, sizeof(g->why), "not run: %.240s", why);
    g->ok = 0;
    return PSC_OK;
}

static double psc__bw_value(const psc_expect_rule_t *rule, const void *x)
{
    const psc_bw_result_t *b = x;

    return b->status == PSC_RESULT_PASSED ? psc_expect_bw_figure(&b->stats, rule->figure) / rule->scale : NAN;
}

/* One bandwidth case: its median, the spread of its samples, its check of the bytes, its bounds. */
static psc_status_t psc__bw_figure(psc_check_item_t *it, const psc_bw_result_t *b, const psc_expect_t *e,
                                   const char *test)
{
    char kase[96];
    psc_check_figure_t *g = psc_check_fig_new(it, psc_expect_case_bw(b, kase, sizeof(kase)));

    if (!g)
        return PSC_ERR_NO_MEMORY;
    if (b->status != PSC_RESULT_PASSED) {
        snprintf(g->why, sizeof(g->why), "%s: %.220s", psc_result_status_string(b->status), b->reason);
        g->ok = 0;
    } else {
        g->value = b->stats.median;
        g->lo = b->stats.min;
        g->hi = b->stats.max;
        g->n = b->nsamples;
        if (b->verify.checked == 0) {
            snprintf(g->why, sizeof(g->why), "bytes not checked");
            g->ok = 0;
        }
    }
    psc_check_fig_bind(g, e, PSC_EXPECT_BW, test, psc__bw_value, b);
    return PSC_OK;
}

/* The key tests the check left out (they need more GPUs than it checked): skipped, so every node's items are alike. */
static psc_status_t psc__absent(psc_check_report_t *r, const char *kind, const char *const *names, size_t n,
                                const psc_suite_test_t *tests, int ntests, int lat)
{
    char name[64], why[64];

    for (size_t i = 0; i < n; i++) {
        int ran = 0, min = 0, t;

        for (int k = 0; k < ntests; k++)
            ran |= strcmp(lat ? psc_lat_test_info(tests[k].test)->name : psc_bw_test_name(tests[k].test),
                          names[i]) == 0;
        if (ran)
            continue;
        if (lat ? psc_lat_test_from_name(names[i], &t) == PSC_OK : psc_bw_test_from_name(names[i], &t) == PSC_OK)
            min = lat ? psc_lat_test_info(t)->min_gpus : psc_bw_test_info(t)->min_gpus;
        snprintf(name, sizeof(name), "%s.%s", kind, names[i]);
        snprintf(why, sizeof(why), "needs %d GPUs", min);
        if (psc_check_skip(r, name, lat ? "ns" : "GB/s", !lat, lat ? PSC_CHECK_TOL_LAT : PSC_CHECK_TOL_GPU, why) !=
            PSC_OK)
            return PSC_ERR_NO_MEMORY;
    }
    return PSC_OK;
}

static psc_status_t psc__bw_items(psc_check_report_t *r, const psc_node_check_t *c, const psc_expect_t *e)
{
    static const char *const names[] = {PSC_NODE_CHECK_BW_TESTS};

    char name[64];

    if (!c->bw)
        return psc_check_lost(r, "bw", "GB/s", 1, PSC_CHECK_TOL_GPU, c->bw_error);
    if (psc__absent(r, "bw", names, sizeof(names) / sizeof(names[0]), c->bw->tests, c->bw->ntests, 0) != PSC_OK)
        return PSC_ERR_NO_MEMORY;
    for (int t = 0; t < c->bw->ntests; t++) {
        const psc_suite_test_t *st = &c->bw->tests[t];
        const char *test = psc_bw_test_name(st->test);
        const double tol = strstr(test, "host") ? PSC_CHECK_TOL_HOST : PSC_CHECK_TOL_GPU;
        psc_check_item_t *it;

        snprintf(name, sizeof(name), "bw.%s", test);
        if (st->n == 0) {
            if (psc_check_skip(r, name, "GB/s", 1, tol, "no path on these GPUs") != PSC_OK)
                return PSC_ERR_NO_MEMORY;
            continue;
        }
        if (!(it = psc_check_item_new(r, name, "GB/s", 1, tol)))
            return PSC_ERR_NO_MEMORY;
        for (size_t k = st->first; k < st->first + st->n; k++)
            if (psc__bw_figure(it, &c->bw->results[k], e, test) != PSC_OK)
                return PSC_ERR_NO_MEMORY;
    }
    return PSC_OK;
}

static double psc__lat_value(const psc_expect_rule_t *rule, const void *x)
{
    const psc_lat_result_t *l = x;

    return l->status == PSC_RESULT_PASSED && l->nsizes ? psc_expect_lat_figure(&l->lat[0], rule->figure) / rule->scale
                                                       : NAN;
}

static psc_status_t psc__lat_items(psc_check_report_t *r, const psc_node_check_t *c, const psc_expect_t *e)
{
    static const char *const names[] = {PSC_NODE_CHECK_LAT_TESTS};
    char name[64], kase[96];

    if (!c->lat)
        return psc_check_lost(r, "lat", "ns", 0, PSC_CHECK_TOL_LAT, c->lat_error);
    if (psc__absent(r, "lat", names, sizeof(names) / sizeof(names[0]), c->lat->tests, c->lat->ntests, 1) != PSC_OK)
        return PSC_ERR_NO_MEMORY;
    for (int t = 0; t < c->lat->ntests; t++) {
        const psc_suite_test_t *st = &c->lat->tests[t];
        const char *test = psc_lat_test_info(st->test)->name;
        psc_check_item_t *it;

        snprintf(name, sizeof(name), "lat.%s", test);
        if (!(it = psc_check_item_new(r, name, "ns", 0, PSC_CHECK_TOL_LAT)))
            return PSC_ERR_NO_MEMORY;
        for (size_t k = st->first; k < st->first + st->n; k++) {
            const psc_lat_result_t *l = &c->lat->results[k];
            psc_check_figure_t *g = psc_check_fig_new(it, psc_expect_case_lat(l, 0, kase, sizeof(kase)));

            if (!g)
                return PSC_ERR_NO_MEMORY;
            if (l->status != PSC_RESULT_PASSED || !l->nsizes) {
                snprintf(g->why, sizeof(g->why), "%s: %.220s", psc_result_status_string(l->status), l->reason);
                g->ok = 0;
            } else {
                g->value = l->lat[0].p50;
                g->lo = l->lat[0].min;
                g->hi = l->lat[0].p90;
                g->n = l->lat[0].n;
            }
            psc_check_fig_bind(g, e, PSC_EXPECT_LAT, test, psc__lat_value, l);
        }
    }
    return PSC_OK;
}

psc_status_t psc_check_report(const psc_node_check_t *c, const psc_expect_t *e, psc_check_report_t **out)
{
    psc_check_report_t *r = calloc(1, sizeof(*r));
    psc_status_t st = PSC_OK;

    if (!r)
        return PSC_ERR_NO_MEMORY;
    r->wall_s = c->wall_s;
    r->stage_s[0] = c->facts_s;
    r->stage_s[1] = c->bw_s;
    r->stage_s[2] = c->lat_s;
    r->stage_s[3] = c->verify_s;
    r->stage_s[4] = c->coll_s;
    r->stage_s[5] = c->wall_s;
    if ((st = psc_check_inventory(r, c, e)) == PSC_OK && (st = psc__bw_items(r, c, e)) == PSC_OK &&
        (st = psc__lat_items(r, c, e)) == PSC_OK && (st = psc_check_integrity(r, c)) == PSC_OK &&
        (st = psc_check_allreduce(r, c, e)) == PSC_OK)
        st = psc_check_doctor(r, c);
    if (st != PSC_OK) {
        psc_check_report_free(r);
        return st;
    }
    for (size_t i = 0; i < r->n; i++)
        psc_check_item_settle(&r->items[i]);
    psc_check_report_count(r);
    *out = r;
    return PSC_OK;
}

void psc_check_report_free(psc_check_report_t *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++)
        free(r->items[i].fig);
    free(r->items);
    free(r);
}
