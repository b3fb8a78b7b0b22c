/* p2pscope check --fleet (fleet.h): a node's summary, read back at rank 0, and the outlier rule over the nodes. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "report/fleet.h"
#include "report/json.h"

/* The worst figure of an item: the lowest of a bandwidth, the highest of a latency; NAN for none. */
static double psc__worst(const psc_check_item_t *it)
{
    double w = NAN;

    for (size_t k = 0; k < it->nfig; k++) {
        double v = it->fig[k].value;

        if (!isnan(v) && (isnan(w) || (it->higher_better ? v < w : v > w)))
            w = v;
    }
    return w;
}

/* An item's key figure: its name, unit, direction, tolerance and worst value. */
static json_t *psc__key_figure(const psc_check_item_t *it, int *bad)
{
    json_t *x = json_object();

    psc_json_set(x, "name", psc_json_str(it->name), bad);
    psc_json_set(x, "unit", psc_json_str(it->unit), bad);
    psc_json_set(x, "higher_better", json_boolean(it->higher_better), bad);
    psc_json_set(x, "tolerance_pct", json_real(it->tolerance_pct), bad);
    psc_json_set(x, "value", psc_json_real_or_null(psc__worst(it)), bad);
    return x;
}

json_t *psc_fleet_summary(const psc_check_report_t *r, int exit_code)
{
    json_t *o = json_object(), *figs = json_array(), *failed = json_array();
    size_t nfigs = 0, nfailed = 0;
    char line[sizeof(r->items[0].name) + sizeof(r->items[0].line) + 4];
    int bad = 0;

    for (size_t i = 0; i < r->n; i++) {
        const psc_check_item_t *it = &r->items[i];

        if (it->state == PSC_CHECK_FAIL && nfailed++ < PSC_FLEET_MAX_FAILED) {
            snprintf(line, sizeof(line), "%s: %s", it->name, it->line);
            psc_json_push(failed, psc_json_str(line), &bad);
        }
        if (it->tolerance_pct <= 0 || it->state == PSC_CHECK_SKIP || nfigs >= PSC_FLEET_MAX_FIGS)
            continue;
        psc_json_push(figs, psc__key_figure(it, &bad), &bad);
        nfigs++;
    }
    psc_json_set(o, "verdict", psc_json_str(r->failed ? "unhealthy" : "healthy"), &bad);
    psc_json_set(o, "exit_code", json_integer(exit_code), &bad);
    psc_json_set(o, "failed", json_integer((json_int_t)r->failed), &bad);
    psc_json_set(o, "failed_items", failed, &bad);
    psc_json_set(o, "figures", figs, &bad);
    return psc_json_done(o, bad);
}

/* One figure of a summary; 0, or -1 when it is no figure. */
static int psc__read_fig(psc_fleet_fig_t *g, const json_t *x)
{
    const char *name = json_string_value(json_object_get(x, "name"));
    const char *unit = json_string_value(json_object_get(x, "unit"));
    const json_t *hb = json_object_get(x, "higher_better"), *tol = json_object_get(x, "tolerance_pct");
    const json_t *v = json_object_get(x, "value");

    if (!name || !*name || !unit || !json_is_boolean(hb) || !json_is_number(tol) || json_number_value(tol) <= 0 ||
        !(json_is_number(v) || json_is_null(v)))
        return -1;
    snprintf(g->name, sizeof(g->name), "%s", name);
    snprintf(g->unit, sizeof(g->unit), "%s", unit);
    g->higher_better = json_is_true(hb);
    g->tolerance_pct = json_number_value(tol);
    g->value = json_is_number(v) ? json_number_value(v) : NAN;
    return 0;
}

/* The failed items' lines into why, then how many more. */
static void psc__read_failed(psc_fleet_node_t *nd, const json_t *lines, json_int_t nfailed)
{
    size_t used = 0, shown = 0;

    nd->why[0] = '\0';
    for (size_t i = 0; i < json_array_size(lines) && used < sizeof(nd->why) - 1; i++) {
        const char *s = json_string_value(json_array_get(lines, i));

        if (s) {
            used += (size_t)snprintf(nd->why + used, sizeof(nd->why) - used, "%s%s", shown ? "; " : "", s);
            shown++;
        }
    }
    if (used < sizeof(nd->why) - 1 && nfailed > (json_int_t)shown)
        snprintf(nd->why + used, sizeof(nd->why) - used, "; and %lld more", (long long)nfailed - (long long)shown);
}

psc_status_t psc_fleet_node_read(psc_fleet_node_t *nd, const char *text, size_t len, char *err, size_t errlen)
{
    json_error_t jerr;
    json_t *doc = json_loadb(text, len < PSC_FLEET_MAX_SUMMARY ? len : PSC_FLEET_MAX_SUMMARY, JSON_REJECT_DUPLICATES,
                             &jerr);
    const json_t *figs = json_object_get(doc, "figures"), *code = json_object_get(doc, "exit_code");
    const json_t *failed = json_object_get(doc, "failed");
    size_t k;

    nd->reached = 0;
    nd->nfig = 0;
    if (!doc || !json_is_array(figs) || !json_is_integer(code) || !json_is_integer(failed) ||
        json_array_size(figs) > PSC_FLEET_MAX_FIGS) {
        snprintf(err, errlen, "its report is no check summary (%s)", doc ? "wrong fields" : jerr.text);
        json_decref(doc);
        return PSC_ERR_INVALID;
    }
    for (k = 0; k < json_array_size(figs); k++)
        if (psc__read_fig(&nd->fig[k], json_array_get(figs, k)) != 0) {
            snprintf(err, errlen, "its report's figure %zu is no key figure", k);
            json_decref(doc);
            return PSC_ERR_INVALID;
        }
    nd->nfig = k;
    nd->check_exit = (int)json_integer_value(code);
    psc__read_failed(nd, json_object_get(doc, "failed_items"), json_integer_value(failed));
    nd->reached = 1;
    json_decref(doc);
    return PSC_OK;
}

char *psc_fleet_message(const char *host, int exit_code, int signal, const char *err_text, const char *summary)
{
    json_t *o = json_object();
    char *text = NULL;
    int bad = 0;

    psc_json_set(o, "host", psc_json_str(host ? host : ""), &bad);
    psc_json_set(o, "exit_code", json_integer(exit_code), &bad);
    psc_json_set(o, "signal", json_integer(signal), &bad);
    psc_json_set(o, "stderr", psc_json_str(err_text ? err_text : ""), &bad);
    psc_json_set(o, "summary", summary && *summary ? psc_json_str(summary) : json_null(), &bad);
    if ((o = psc_json_done(o, bad)))
        text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return text;
}

/* The last line of s that has text, into buf. */
static void psc__last_line(const char *s, char *buf, size_t len)
{
    const char *end = s + strlen(s), *start;

    while (end > s && (end[-1] == '\n' || end[-1] == ' '))
        end--;
    for (start = end; start > s && start[-1] != '\n'; start--)
        ;
    snprintf(buf, len, "%.*s", (int)(end - start), start);
}

void psc_fleet_node_take(psc_fleet_node_t *nd, const char *text, size_t len)
{
    json_t *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
    const char *host = json_string_value(json_object_get(doc, "host"));
    const char *sum = json_string_value(json_object_get(doc, "summary"));
    const char *err = json_string_value(json_object_get(doc, "stderr"));
    const json_t *code = json_object_get(doc, "exit_code"), *sig = json_object_get(doc, "signal");
    char why[sizeof(nd->why) - 64];

    nd->reached = 0;
    nd->nfig = 0;
    if (!json_is_integer(code) || !json_is_integer(sig)) {
        snprintf(nd->why, sizeof(nd->why), "its report is no fleet report");
        json_decref(doc);
        return;
    }
    if (host && *host)
        snprintf(nd->host, sizeof(nd->host), "%s", host);
    if (json_integer_value(sig) > 0) {
        snprintf(nd->why, sizeof(nd->why), "its check died: %s (signal %d)", strsignal((int)json_integer_value(sig)),
                 (int)json_integer_value(sig));
    } else if (sum) {
        if (psc_fleet_node_read(nd, sum, strlen(sum), why, sizeof(why)) != PSC_OK)
            snprintf(nd->why, sizeof(nd->why), "%s", why);
    } else {
        psc__last_line(err ? err : "", why, sizeof(why));
        snprintf(nd->why, sizeof(nd->why), "its check ended with exit code %d%s%s", (int)json_integer_value(code),
                 why[0] ? ": " : "", why);
        nd->check_exit = json_integer_value(code) ? (int)json_integer_value(code) : 1;
        nd->reached = 1;
    }
    json_decref(doc);
}

double psc_fleet_median(const double *v, size_t n)
{
    psc_stats_t st;

    /* the project's one median (the mean of the middle two for even n) */
    if (n == 0 || n > UINT_MAX || psc_stats_compute(v, (unsigned)n, &st) != PSC_OK)
        return NAN;
    return st.median;
}

/* Key k's index in f, added when new (a room left); -1 when full. */
static int psc__key(psc_fleet_t *f, const psc_fleet_fig_t *g)
{
    for (size_t k = 0; k < f->nkeys; k++)
        if (strcmp(f->keys[k].name, g->name) == 0)
            return (int)k;
    if (f->nkeys >= PSC_FLEET_MAX_FIGS)
        return -1;
    memset(&f->keys[f->nkeys], 0, sizeof(f->keys[0]));
    snprintf(f->keys[f->nkeys].name, sizeof(f->keys[0].name), "%s", g->name);
    snprintf(f->keys[f->nkeys].unit, sizeof(f->keys[0].unit), "%s", g->unit);
    f->keys[f->nkeys].higher_better = g->higher_better;
    f->keys[f->nkeys].bound_pct = f->bound_pct > 0 ? f->bound_pct : g->tolerance_pct;
    return (int)f->nkeys++;
}

const psc_fleet_fig_t *psc_fleet_node_fig(const psc_fleet_node_t *nd, const char *name, size_t *at)
{
    for (size_t j = 0; nd->reached && j < nd->nfig; j++)
        if (strcmp(nd->fig[j].name, name) == 0) {
            *at = j;
            return &nd->fig[j];
        }
    return NULL;
}

/* Key k's median over the reached nodes (v: room for n values), then each node's change and flag. */
static void psc__judge_key(psc_fleet_t *f, psc_fleet_key_t *key, double *v)
{
    size_t m = 0, at = 0;

    for (size_t i = 0; i < f->n; i++) {
        const psc_fleet_fig_t *g = psc_fleet_node_fig(&f->nodes[i], key->name, &at);

        if (g && !isnan(g->value))
            v[m++] = g->value;
    }
    key->n = m;
    key->median = psc_fleet_median(v, m);
    for (size_t i = 0; i < f->n; i++) {
        psc_fleet_node_t *nd = &f->nodes[i];
        const psc_fleet_fig_t *g = psc_fleet_node_fig(nd, key->name, &at);
        double change;

        if (!g || isnan(g->value) || isnan(key->median) || key->median == 0)
            continue;
        /* percent better than the median: + for a faster bandwidth or a shorter latency */
        change = 100.0 * (g->value - key->median) / key->median * (key->higher_better ? 1 : -1);
        nd->change_pct[at] = change;
        nd->flagged[at] = change < -key->bound_pct;
    }
}

const char *psc_fleet_state_name(psc_fleet_state_t s)
{
    return s == PSC_FLEET_HEALTHY ? "HEALTHY" : s == PSC_FLEET_OUTLIER ? "OUTLIER"
           : s == PSC_FLEET_UNHEALTHY ? "UNHEALTHY" : "UNREACHABLE";
}

/* Each node's state from its reach, its own verdict and its flags; the counts. */
static void psc__states(psc_fleet_t *f)
{
    f->healthy = f->outliers = f->unhealthy = f->unreachable = 0;
    for (size_t i = 0; i < f->n; i++) {
        psc_fleet_node_t *nd = &f->nodes[i];
        int flags = 0;

        for (size_t j = 0; j < nd->nfig; j++)
            flags += nd->flagged[j];
        nd->state = !nd->reached ? PSC_FLEET_UNREACHABLE : nd->check_exit != 0 ? PSC_FLEET_UNHEALTHY
                    : flags ? PSC_FLEET_OUTLIER : PSC_FLEET_HEALTHY;
        f->healthy += nd->state == PSC_FLEET_HEALTHY;
        f->outliers += nd->state == PSC_FLEET_OUTLIER;
        f->unhealthy += nd->state == PSC_FLEET_UNHEALTHY;
        f->unreachable += nd->state == PSC_FLEET_UNREACHABLE;
    }
}

psc_status_t psc_fleet_judge(psc_fleet_t *f)
{
    double *v = malloc((f->n ? f->n : 1) * sizeof(*v));

    if (!v) {
        psc__states(f);
        return PSC_ERR_NO_MEMORY;
    }
    f->nkeys = 0;
    for (size_t i = 0; i < f->n; i++) {
        psc_fleet_node_t *nd = &f->nodes[i];

        for (size_t j = 0; j < nd->nfig; j++) {
            nd->change_pct[j] = NAN;
            nd->flagged[j] = 0;
            if (nd->reached)
                psc__key(f, &nd->fig[j]);
        }
    }
    for (size_t k = 0; k < f->nkeys; k++)
        psc__judge_key(f, &f->keys[k], v);
    free(v);
    psc__states(f);
    return PSC_OK;
}

int psc_fleet_exit(const psc_fleet_t *f)
{
    return f->healthy == f->n ? 0 : 1;
}
