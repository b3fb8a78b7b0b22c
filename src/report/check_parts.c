/* p2pscope check's items beside the runs' (check.h): the inventory, the integrity pass, the all-reduce, the doctor. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/check_build.h"

/* Each inventory item: its node fact (expect_node.c's name) and whether it is the node's or each GPU's. */
static const struct {
    const char *item, *fact;
    int per_gpu;
} psc__inventory[] = {
    {"inventory.gpus", "gpus", 0},          {"inventory.nvlinks", "nvlinks_up", 1},
    {"inventory.pcie_gen", "pcie_gen", 1},  {"inventory.pcie_width", "pcie_width", 1},
    {"inventory.ecc", "ecc", 1},            {"inventory.persistence", "persistence", 1},
    {"inventory.clocks", "clocks_throttled", 1}, {"inventory.nccl", "nccl", 0},
};

static double psc__node_value(const psc_expect_rule_t *rule, const void *x)
{
    (void)rule;
    return *(const double *)x;
}

/* One fact of one GPU (g < 0: the node): unknown with no rule is no figure; unknown under a rule misses it. */
static psc_status_t psc__fact(psc_check_item_t *it, const psc_node_check_t *c, const psc_expect_t *e,
                              const char *fact, int g)
{
    double v = psc_expect_node_value(c->facts, fact, g >= 0 ? c->devices[g] : -1);
    char key[16];
    psc_check_figure_t *f;

    snprintf(key, sizeof(key), g >= 0 ? "gpu%d" : "node", g >= 0 ? c->devices[g] : 0);
    if (!(f = psc_check_fig_new(it, key)))
        return PSC_ERR_NO_MEMORY;
    if (v >= 0)
        f->value = v;
    else
        snprintf(f->why, sizeof(f->why), "not known here");
    psc_check_fig_bind(f, e, PSC_EXPECT_NODE, fact, psc__node_value, &f->value);
    if (v < 0 && f->nbounds == 0)
        it->nfig--; /* nothing known, nothing asked */
    return PSC_OK;
}

psc_status_t psc_check_inventory(psc_check_report_t *r, const psc_node_check_t *c, const psc_expect_t *e)
{
    for (size_t k = 0; k < sizeof(psc__inventory) / sizeof(psc__inventory[0]); k++) {
        psc_check_item_t *it = psc_check_item_new(r, psc__inventory[k].item, "", 1, 0);

        if (!it)
            return PSC_ERR_NO_MEMORY;
        for (int g = psc__inventory[k].per_gpu ? 0 : -1; g < (psc__inventory[k].per_gpu ? c->ndev : 0); g++)
            if (psc__fact(it, c, e, psc__inventory[k].fact, g) != PSC_OK)
                return PSC_ERR_NO_MEMORY;
        if (it->nfig == 0) {
            it->state = PSC_CHECK_SKIP;
            snprintf(it->line, sizeof(it->line), "skipped: not known here (the driver or NVML does not report it)");
        }
    }
    return PSC_OK;
}

/* A figure of the integrity pass that must be 0 (bad bytes, failed paths), with why when it is not. */
static psc_status_t psc__zero(psc_check_item_t *it, const char *key, double v, const char *why)
{
    psc_check_figure_t *g = psc_check_fig_new(it, key);

    if (!g)
        return PSC_ERR_NO_MEMORY;
    g->value = v;
    g->ok = v == 0 && !why;
    if (why)
        snprintf(g->why, sizeof(g->why), "%.250s", why);
    return PSC_OK;
}

/* The first failed path, in one line. */
static const char *psc__first_failed(const psc_verify_suite_t *s, char *buf, size_t len)
{
    for (size_t k = 0; k < s->npaths; k++) {
        const psc_verify_result_t *x = &s->paths[k].last;

        if (x->status != PSC_RESULT_FAILED)
            continue;
        snprintf(buf, len, "%s %d->%d: %.180s", psc_bw_test_name(x->c.test), x->c.src, x->c.dst, x->reason);
        return buf;
    }
    return NULL;
}

psc_status_t psc_check_integrity(psc_check_report_t *r, const psc_node_check_t *c)
{
    const psc_verify_suite_t *s = c->verify;
    uint64_t checked = 0, bad;
    psc_check_figure_t *g;
    psc_check_item_t *it;
    char why[256];

    if (!s && !c->verify_error[0])
        return psc_check_skip(r, "integrity", "", 1, 0, "not asked for");
    if (!s)
        return psc_check_lost(r, "integrity", "", 1, 0, c->verify_error);
    if (!(it = psc_check_item_new(r, "integrity", "", 1, 0)) || !(g = psc_check_fig_new(it, "paths")))
        return PSC_ERR_NO_MEMORY;
    g->value = (double)s->npaths;
    bad = s->load_bad_bytes;
    for (size_t k = 0; k < s->npaths; k++) {
        checked += s->paths[k].bytes_checked;
        bad += s->paths[k].bad_bytes;
    }
    if (!(g = psc_check_fig_new(it, "checked_GB")))
        return PSC_ERR_NO_MEMORY;
    g->value = (double)checked / 1e9;
    if (psc__zero(it, "bad_bytes", (double)bad, NULL) != PSC_OK ||
        psc__zero(it, "failed_paths", (double)s->nfailed, psc__first_failed(s, why, sizeof(why))) != PSC_OK)
        return PSC_ERR_NO_MEMORY;
    if (s->load_error[0] || s->load_stop_error[0])
        return psc__zero(it, "load", 1, s->load_error[0] ? s->load_error : s->load_stop_error);
    return PSC_OK;
}

static double psc__coll_value(const psc_expect_rule_t *rule, const void *x)
{
    const psc_coll_row_t *row = x;

    if (row->r[0].wrong > 0)
        return NAN;
    return (strcmp(rule->figure, "time") == 0    ? row->r[0].time_us * 1e3
            : strcmp(rule->figure, "algbw") == 0 ? row->r[0].algbw_gbs
                                                 : row->r[0].busbw_gbs) / rule->scale;
}

/* One size of the all-reduce: small by its time (us), large by its bus bandwidth; wrong elements fail it. */
static psc_status_t psc__coll_size(psc_check_report_t *r, const psc_coll_report_t *c, uint64_t bytes, int large,
                                   const psc_expect_t *e)
{
    psc_check_item_t *it = psc_check_item_new(r, large ? "allreduce.large" : "allreduce.small", large ? "GB/s" : "us",
                                              large, PSC_CHECK_TOL_COLL);
    const psc_coll_row_t *row = NULL;
    psc_check_figure_t *g;
    char key[32];

    for (int k = 0; k < c->nrows && !row; k++)
        row = c->rows[k].bytes == bytes && c->rows[k].impl != PSC_COLL_IMPL_P2PSCOPE ? &c->rows[k] : NULL;
    if (!it || !(g = psc_check_fig_new(it, psc_expect_size_name(bytes, key, sizeof(key)))))
        return PSC_ERR_NO_MEMORY;
    if (!row || !row->r[0].ran) {
        snprintf(g->why, sizeof(g->why), "no row at this size");
        g->ok = 0;
        return PSC_OK;
    }
    g->value = large ? row->r[0].busbw_gbs : row->r[0].time_us;
    if (row->r[0].iter_us.n && row->r[0].iter_us.min > 0) { /* the operations' own spread, as the figure reads */
        g->n = row->r[0].iter_us.n;
        g->lo = large ? g->value * row->r[0].time_us / row->r[0].iter_us.p90 : row->r[0].iter_us.min;
        g->hi = large ? g->value * row->r[0].time_us / row->r[0].iter_us.min : row->r[0].iter_us.p90;
    }
    if (row->r[0].wrong != 0) {
        snprintf(g->why, sizeof(g->why), row->r[0].wrong > 0 ? "%lld wrong elements" : "output not checked",
                 row->r[0].wrong);
        g->ok = 0;
    }
    psc_check_fig_bind(g, e, PSC_EXPECT_COLL, "all_reduce", psc__coll_value, row);
    return PSC_OK;
}

psc_status_t psc_check_allreduce(psc_check_report_t *r, const psc_node_check_t *c, const psc_expect_t *e)
{
    psc_status_t st;

    if (c->coll_skip[0]) {
        if ((st = psc_check_skip(r, "allreduce.small", "us", 0, PSC_CHECK_TOL_COLL, c->coll_skip)) != PSC_OK)
            return st;
        return psc_check_skip(r, "allreduce.large", "GB/s", 1, PSC_CHECK_TOL_COLL, c->coll_skip);
    }
    if (!c->coll && !c->coll_error[0])
        return psc_check_skip(r, "allreduce", "", 1, 0, "not asked for");
    if (!c->coll)
        return psc_check_lost(r, "allreduce", "", 1, 0, c->coll_error);
    if ((st = psc__coll_size(r, c->coll, c->coll->min_bytes, 0, e)) != PSC_OK)
        return st;
    return psc__coll_size(r, c->coll, c->coll->max_bytes, 1, e);
}

psc_status_t psc_check_doctor(psc_check_report_t *r, const psc_node_check_t *c)
{
    psc_check_item_t *it = psc_check_item_new(r, "doctor", "", 0, 0);
    size_t errors = 0, warnings = 0, used = 0;
    psc_check_figure_t *g;
    char rules[256] = "";

    if (!it)
        return PSC_ERR_NO_MEMORY;
    for (size_t k = 0; k < c->nfindings; k++) {
        const psc_finding_t *f = &c->findings[k];

        if (f->severity == PSC_SEV_ERROR && used < sizeof(rules))
            used += (size_t)snprintf(rules + used, sizeof(rules) - used, "%s%s: %s", errors ? "; " : "", f->rule,
                                     f->what);
        errors += f->severity == PSC_SEV_ERROR;
        warnings += f->severity == PSC_SEV_WARNING;
    }
    if (!(g = psc_check_fig_new(it, "errors")))
        return PSC_ERR_NO_MEMORY;
    g->value = (double)errors;
    g->ok = errors == 0;
    if (errors)
        snprintf(g->why, sizeof(g->why), "%s", rules);
    if (!(g = psc_check_fig_new(it, "warnings")))
        return PSC_ERR_NO_MEMORY;
    g->value = (double)warnings;
    return PSC_OK;
}
