/* p2pscope check as JSON (one compact object per node: verdict, items, figures, bounds) and --baseline's reading. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/check.h"
#include "report/compare.h"
#include "report/json.h"

#define PSC__CHECK_MAX_FILE (8u << 20)

static const char *psc__state(psc_check_state_t s)
{
    return s == PSC_CHECK_PASS ? "pass" : s == PSC_CHECK_FAIL ? "fail" : "skip";
}

static json_t *psc__bounds(const psc_check_figure_t *g, int *bad)
{
    json_t *a = json_array();

    for (size_t b = 0; b < g->nbounds && b < PSC_CHECK_MAX_BOUNDS; b++) {
        const psc_expect_rule_t *rule = g->bounds[b];
        json_t *x = json_object();

        psc_json_set(x, "op", psc_json_str(psc_expect_op_name(rule->op)), bad);
        psc_json_set(x, "bound", json_real(rule->bound), bad);
        psc_json_set(x, "unit", psc_json_str(rule->unit), bad);
        psc_json_set(x, "figure", psc_json_str(rule->figure), bad);
        psc_json_set(x, "rule", psc_json_str(rule->where), bad);
        psc_json_set(x, "met", json_boolean(g->bound_ok[b]), bad);
        psc_json_push(a, x, bad);
    }
    return a;
}

static json_t *psc__figure(const psc_check_figure_t *g, int *bad)
{
    json_t *x = json_object(), *base = json_null();

    psc_json_set(x, "key", psc_json_str(g->key), bad);
    psc_json_set(x, "value", psc_json_real_or_null(g->value), bad);
    psc_json_set(x, "lo", g->n ? psc_json_real_or_null(g->lo) : json_null(), bad);
    psc_json_set(x, "hi", g->n ? psc_json_real_or_null(g->hi) : json_null(), bad);
    psc_json_set(x, "n", json_integer(g->n), bad);
    psc_json_set(x, "ok", json_boolean(g->ok && !g->base_fails), bad);
    psc_json_set(x, "why", g->why[0] ? psc_json_str(g->why) : json_null(), bad);
    psc_json_set(x, "bounds", psc__bounds(g, bad), bad);
    if (g->has_base) {
        base = json_object();
        psc_json_set(base, "value", psc_json_real_or_null(g->base_value), bad);
        psc_json_set(base, "change_pct", psc_json_real_or_null(g->change_pct), bad);
        psc_json_set(base, "fails", json_boolean(g->base_fails), bad);
    }
    psc_json_set(x, "baseline", base, bad);
    return x;
}

json_t *psc_json_check(const psc_check_report_t *r, int exit_code)
{
    json_t *o = json_object(), *items = json_array();
    int bad = 0;

    for (size_t i = 0; i < r->n; i++) {
        const psc_check_item_t *it = &r->items[i];
        json_t *x = json_object(), *figs = json_array();

        psc_json_set(x, "name", psc_json_str(it->name), &bad);
        psc_json_set(x, "state", psc_json_str(psc__state(it->state)), &bad);
        psc_json_set(x, "line", psc_json_str(it->line), &bad);
        psc_json_set(x, "unit", psc_json_str(it->unit), &bad);
        psc_json_set(x, "higher_better", json_boolean(it->higher_better), &bad);
        psc_json_set(x, "tolerance_pct", json_real(it->tolerance_pct), &bad);
        for (size_t k = 0; k < it->nfig; k++)
            psc_json_push(figs, psc__figure(&it->fig[k], &bad), &bad);
        psc_json_set(x, "figures", figs, &bad);
        psc_json_push(items, x, &bad);
    }
    psc_json_set(o, "verdict", psc_json_str(r->failed ? "unhealthy" : "healthy"), &bad);
    psc_json_set(o, "exit_code", json_integer(exit_code), &bad);
    psc_json_set(o, "bounds", psc_json_str(r->bounds ? r->bounds : "auto"), &bad);
    psc_json_set(o, "baseline", r->baseline ? psc_json_str(r->baseline) : json_null(), &bad);
    psc_json_set(o, "passed", json_integer((json_int_t)r->passed), &bad);
    psc_json_set(o, "failed", json_integer((json_int_t)r->failed), &bad);
    psc_json_set(o, "skipped", json_integer((json_int_t)r->skipped), &bad);
    psc_json_set(o, "check_s", json_real(r->wall_s), &bad);
    psc_json_set(o, "stages_s", json_pack("{s:f,s:f,s:f,s:f,s:f}", "facts", r->stage_s[0], "bw", r->stage_s[1],
                                          "lat", r->stage_s[2], "integrity", r->stage_s[3], "allreduce",
                                          r->stage_s[4]), &bad);
    psc_json_set(o, "items", items, &bad);
    return psc_json_done(o, bad);
}

/* ---- --baseline ---- */

/* The same node: as many GPUs, each with the same name and PCI bus id, in order. */
static int psc__same_node(const json_t *run, const json_t *doc, char *err, size_t errlen, const char *path)
{
    const json_t *a = json_object_get(run, "devices"), *b = json_object_get(doc, "devices");

    if (!json_is_array(a) || !json_is_array(b) || json_array_size(a) != json_array_size(b)) {
        snprintf(err, errlen, "--baseline %s: another node (%zu GPUs there, %zu here): accepted an earlier check of "
                 "this node", path, json_is_array(b) ? json_array_size(b) : 0, json_is_array(a) ? json_array_size(a)
                 : 0);
        return 0;
    }
    for (size_t i = 0; i < json_array_size(a); i++) {
        const char *k[2] = {"name", "pci_bus_id"};

        for (int j = 0; j < 2; j++) {
            const char *x = json_string_value(json_object_get(json_array_get(a, i), k[j]));
            const char *y = json_string_value(json_object_get(json_array_get(b, i), k[j]));

            if (!x || !y || strcmp(x, y) != 0) {
                snprintf(err, errlen, "--baseline %s: another node (GPU %zu's %s is %.60s there, %.60s here): accepted "
                         "an earlier check of this node", path, i, k[j], y ? y : "missing", x ? x : "missing");
                return 0;
            }
        }
    }
    return 1;
}

/* A figure of either run as compare judges it. */
static void psc__case(psc_cmp_case_t *c, double value, double lo, double hi, unsigned n)
{
    memset(c, 0, sizeof(*c));
    c->status = isnan(value) ? PSC_CMP_FAILED : PSC_CMP_PASSED;
    c->value = value;
    c->lo = lo;
    c->hi = hi;
    c->n = n;
    c->alt = NAN;
}

static double psc__num(const json_t *o, const char *key)
{
    const json_t *x = json_object_get(o, key);

    return json_is_number(x) ? json_number_value(x) : NAN;
}

/* Figure g of item it against the baseline's figure b. */
static void psc__judge(const psc_check_item_t *it, psc_check_figure_t *g, const json_t *b)
{
    psc_cmp_case_t was, now;
    const json_t *n = json_object_get(b, "n");
    psc_cmp_verdict_t v;

    psc__case(&was, psc__num(b, "value"), psc__num(b, "lo"), psc__num(b, "hi"),
              json_is_integer(n) && json_integer_value(n) > 0 ? (unsigned)json_integer_value(n) : 0);
    psc__case(&now, g->value, g->lo, g->hi, g->n);
    v = psc_cmp_judge(&was, &now, it->higher_better, &g->change_pct);
    g->has_base = 1;
    g->base_value = was.value;
    g->base_fails = it->tolerance_pct > 0 && psc_cmp_fails(v, g->change_pct, it->higher_better, it->tolerance_pct);
}

/* Each figure of the baseline's item x against r's item of that name; one r lacks is lost. */
static psc_status_t psc__item(psc_check_report_t *r, const json_t *x)
{
    const char *name = json_string_value(json_object_get(x, "name"));
    const json_t *figs = json_object_get(x, "figures");
    psc_check_item_t *it = NULL;

    for (size_t i = 0; name && i < r->n && !it; i++)
        it = strcmp(r->items[i].name, name) == 0 ? &r->items[i] : NULL;
    if (!it || !json_is_array(figs) || it->tolerance_pct <= 0)
        return PSC_OK; /* not measured now (a stage skipped), or not a figure that compares (counts, states) */
    for (size_t k = 0; k < json_array_size(figs); k++) {
        const json_t *b = json_array_get(figs, k);
        const char *key = json_string_value(json_object_get(b, "key"));
        psc_check_figure_t *g = NULL;

        for (size_t j = 0; key && j < it->nfig && !g; j++)
            g = strcmp(it->fig[j].key, key) == 0 ? &it->fig[j] : NULL;
        if (g) {
            psc__judge(it, g, b);
        } else if (key && !isnan(psc__num(b, "value"))) {
            psc_check_figure_t *lost = realloc(it->fig, (it->nfig + 1) * sizeof(*lost));

            if (!lost)
                return PSC_ERR_NO_MEMORY;
            it->fig = lost;
            lost = &it->fig[it->nfig++];
            memset(lost, 0, sizeof(*lost));
            snprintf(lost->key, sizeof(lost->key), "%s", key);
            snprintf(lost->why, sizeof(lost->why), "in the baseline, not measured now");
            lost->value = lost->change_pct = NAN;
            lost->ok = lost->has_base = lost->base_fails = 1;
            lost->base_value = psc__num(b, "value");
        }
    }
    return PSC_OK;
}

psc_status_t psc_check_baseline(psc_check_report_t *r, const json_t *run, const char *path, char *err, size_t errlen)
{
    const json_t *items;
    const char *command;
    json_error_t jerr;
    json_t *doc;
    char *text = NULL;
    size_t len = 0;
    psc_status_t st = psc_read_file_bounded(path, PSC__CHECK_MAX_FILE, &text, &len, err, errlen);

    if (st != PSC_OK)
        return st;
    doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    free(text);
    items = json_object_get(json_object_get(doc, "check"), "items");
    command = json_string_value(json_object_get(doc, "command"));
    if (!doc || !json_is_array(items) || !command || strcmp(command, "check") != 0) {
        snprintf(err, errlen, "--baseline %s: %s: accepted the JSON of an earlier p2pscope check (--json=FILE)", path,
                 doc ? "not a check's JSON" : jerr.text);
        json_decref(doc);
        return PSC_ERR_INVALID;
    }
    if (!psc__same_node(run, doc, err, errlen, path)) {
        json_decref(doc);
        return PSC_ERR_INVALID;
    }
    for (size_t i = 0; st == PSC_OK && i < json_array_size(items); i++)
        st = psc__item(r, json_array_get(items, i));
    json_decref(doc);
    if (st != PSC_OK) {
        snprintf(err, errlen, "out of host memory");
        return st;
    }
    r->baseline = path;
    for (size_t i = 0; i < r->n; i++)
        psc_check_item_settle(&r->items[i]);
    psc_check_report_count(r);
    return PSC_OK;
}
