/* p2pscope check's verdicts (check.h): each item's state and line from its figures, the counts, auto's rules. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report/check_build.h"

/* A figure fails on a fault (ok 0: a bound missed, wrong bytes, no figure) or on the baseline. */
static int psc__fails(const psc_check_figure_t *g)
{
    return !g->ok || g->base_fails;
}

/* "KEY VALUE UNIT" and what is wrong with it: the missed bound, the reason, the baseline's change. */
static size_t psc__describe(const psc_check_item_t *it, const psc_check_figure_t *g, char *buf, size_t len)
{
    size_t n = 0;

    if (!isnan(g->value))
        n = (size_t)snprintf(buf, len, "%s %.4g%s%s", g->key, g->value, it->unit[0] ? " " : "", it->unit);
    else
        n = (size_t)snprintf(buf, len, "%s", g->key);
    for (size_t b = 0; b < g->nbounds && b < PSC_CHECK_MAX_BOUNDS && n < len; b++)
        if (!g->bound_ok[b] && !isnan(g->value))
            n += (size_t)snprintf(buf + n, len - n, " misses %s %.4g%s%s (%s)", psc_expect_op_name(g->bounds[b]->op),
                                  g->bounds[b]->bound, g->bounds[b]->unit[0] ? " " : "", g->bounds[b]->unit,
                                  g->bounds[b]->where);
    if (g->why[0] && n < len)
        n += (size_t)snprintf(buf + n, len - n, " %s", g->why);
    if (g->base_fails && n < len)
        n += (size_t)snprintf(buf + n, len - n, isnan(g->change_pct) ? " lost since the baseline (%.4g)"
                              : " %+.1f %% against the baseline's %.4g", isnan(g->change_pct) ? g->base_value
                              : g->change_pct, g->base_value);
    return n < len ? n : len - 1;
}

void psc_check_item_settle(psc_check_item_t *it)
{
    size_t nfail = 0, nbound = 0, used = 0, shown = 0;

    if (it->state == PSC_CHECK_SKIP && it->nfig == 0)
        return; /* its line says why */
    for (size_t k = 0; k < it->nfig; k++) {
        nfail += psc__fails(&it->fig[k]) != 0;
        nbound += it->fig[k].nbounds;
    }
    it->state = nfail ? PSC_CHECK_FAIL : PSC_CHECK_PASS;
    it->line[0] = '\0';
    for (size_t k = 0; k < it->nfig && used < sizeof(it->line) - 1 && shown < 4; k++) {
        if (nfail && !psc__fails(&it->fig[k]))
            continue; /* a failed item names what failed */
        used += (size_t)snprintf(it->line + used, sizeof(it->line) - used, "%s", shown ? "; " : "");
        if (used < sizeof(it->line) - 1)
            used += psc__describe(it, &it->fig[k], it->line + used, sizeof(it->line) - used);
        shown++;
    }
    if (used < sizeof(it->line) - 1 && (nfail ? nfail : it->nfig) > shown)
        used += (size_t)snprintf(it->line + used, sizeof(it->line) - used, "; and %zu more",
                                 (nfail ? nfail : it->nfig) - shown);
    if (used < sizeof(it->line) - 1 && !nfail)
        snprintf(it->line + used, sizeof(it->line) - used, nbound ? " (%zu bound%s met)" : " (no bound)", nbound,
                 nbound == 1 ? "" : "s");
}

void psc_check_report_count(psc_check_report_t *r)
{
    r->passed = r->failed = r->skipped = 0;
    for (size_t i = 0; i < r->n; i++) {
        r->passed += r->items[i].state == PSC_CHECK_PASS;
        r->failed += r->items[i].state == PSC_CHECK_FAIL;
        r->skipped += r->items[i].state == PSC_CHECK_SKIP;
    }
}

static psc_status_t psc__rule(psc_expect_t *e, int kind, const char *test, const char *kase, int op, double v,
                              const char *unit, double scale, const char *figure, const char *why)
{
    psc_expect_rule_t r;

    memset(&r, 0, sizeof(r));
    r.kind = kind;
    snprintf(r.test, sizeof(r.test), "%s", test);
    snprintf(r.kase, sizeof(r.kase), "%s", kase);
    r.op = op;
    r.value = r.bound = v;
    snprintf(r.unit, sizeof(r.unit), "%s", unit);
    r.scale = scale;
    snprintf(r.figure, sizeof(r.figure), "%s", figure);
    snprintf(r.where, sizeof(r.where), "auto: %s", why);
    r.quiet = 1;
    return psc_expect_add(e, &r);
}

/* The slowest GPU -> GPU copy-engine write this check measured between NVLink pairs; 0 none (or a PCIe pair). */
static double psc__slowest_nvlink_copy(const psc_node_check_t *c)
{
    double slowest = 0;

    for (size_t k = 0; c->bw && k < c->bw->nresults; k++) {
        const psc_bw_result_t *b = &c->bw->results[k];
        const char *name = psc_bw_test_name(b->c.test);

        if (!name || strcmp(name, "gpu_to_gpu_write_ce") != 0 || b->status != PSC_RESULT_PASSED)
            continue;
        if (c->facts->pair[b->c.src][b->c.dst].path != PSC_PATH_NVLINK)
            return 0;
        if (slowest == 0 || b->stats.median < slowest)
            slowest = b->stats.median;
    }
    return slowest;
}

/* The chase over each NVLink pair, and the large all-reduce against the slowest NVLink copy measured. */
static psc_status_t psc__measured_rules(const psc_node_check_t *c, psc_expect_t *e)
{
    double copy = psc__slowest_nvlink_copy(c);
    char kase[48], why[160], size[16];
    psc_status_t st = PSC_OK;

    for (int i = 0; st == PSC_OK && i < c->ndev; i++)
        for (int j = 0; st == PSC_OK && j < c->ndev; j++) {
            int a = c->devices[i], b = c->devices[j];

            if (a == b || a >= PSC_MAX_GPUS || b >= PSC_MAX_GPUS || c->facts->pair[a][b].path != PSC_PATH_NVLINK)
                continue;
            snprintf(kase, sizeof(kase), "gpu%d->gpu%d", a, b);
            snprintf(why, sizeof(why), "an NVLink pair's pointer chase, 3 x the 830 ns of NV18 on H200");
            st = psc__rule(e, PSC_EXPECT_LAT, "gpu_to_gpu_chase", kase, PSC_EXPECT_LE, PSC_CHECK_AUTO_CHASE_NS, "ns",
                           1.0, "p50", why);
        }
    if (st != PSC_OK || copy <= 0 || !c->coll)
        return st;
    snprintf(why, sizeof(why), "%.2f x the slowest GPU -> GPU copy measured here (%.1f GB/s)", PSC_CHECK_AUTO_COLL,
             copy);
    return psc__rule(e, PSC_EXPECT_COLL, "all_reduce", psc_expect_size_name(c->coll->max_bytes, size, sizeof(size)),
                     PSC_EXPECT_GE, PSC_CHECK_AUTO_COLL * copy, "GB/s", 1.0, "busbw", why);
}

psc_status_t psc_check_auto_rules(const psc_node_check_t *c, psc_expect_t **out, char *err, size_t errlen)
{
    psc_expect_t *e = NULL;
    psc_status_t st = psc_expect_auto(c->facts, &e, err, errlen);

    if (st != PSC_OK)
        return st;
    if ((st = psc_expect_auto_node(c->facts, e)) != PSC_OK || (st = psc__measured_rules(c, e)) != PSC_OK) {
        snprintf(err, errlen, "out of host memory");
        psc_expect_free(e);
        return st;
    }
    *out = e;
    return PSC_OK;
}
