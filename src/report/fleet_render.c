/* p2pscope check --fleet as text (a line per node beside the medians), JSON and one self-contained page (fleet.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/fleet.h"
#include "report/html_buf.h"
#include "report/json.h"
#include "report/text.h"

/* One cell: "VALUE CHANGE%" and "!" when flagged, or "-" for no figure. */
static void psc__cell(char *buf, size_t len, const psc_fleet_node_t *nd, const psc_fleet_key_t *key)
{
    size_t at = 0;
    const psc_fleet_fig_t *g = psc_fleet_node_fig(nd, key->name, &at);

    if (!g || isnan(g->value))
        snprintf(buf, len, "-");
    else if (isnan(nd->change_pct[at]))
        snprintf(buf, len, "%.4g", g->value);
    else
        snprintf(buf, len, "%.4g %+.0f%%%s", g->value, fabs(nd->change_pct[at]) < 0.5 ? 0.0 : nd->change_pct[at],
                 nd->flagged[at] ? " !" : "");
}

void psc_render_fleet_verdict(FILE *f, const psc_fleet_t *fl)
{
    psc_report_printf(f, "fleet: %s (%zu node%s: %zu healthy, %zu outlier%s, %zu unhealthy, %zu unreachable) "
                      "in %.1f s\n",
                      psc_fleet_exit(fl) ? "UNHEALTHY" : "HEALTHY", fl->n, fl->n == 1 ? "" : "s", fl->healthy,
                      fl->outliers, fl->outliers == 1 ? "" : "s", fl->unhealthy, fl->unreachable, fl->wall_s);
}

/* The key figures, each with its column's name, median and bound. */
static void psc__legend(FILE *f, const psc_fleet_t *fl)
{
    psc_report_printf(f, "\nFleet check, %zu node%s; each node's key figures (the worst path of each item) beside the "
                      "fleet's median, %% better (+) or worse (-); ! worse than the median by more than its bound\n",
                      fl->n, fl->n == 1 ? "" : "s");
    for (size_t k = 0; k < fl->nkeys; k++) {
        const psc_fleet_key_t *key = &fl->keys[k];

        psc_report_printf(f, "  F%-2zu %-30s median %.4g %s over %zu node%s, bound %.1f %%\n", k + 1, key->name,
                          key->median, key->unit, key->n, key->n == 1 ? "" : "s", key->bound_pct);
    }
}

void psc_render_fleet(FILE *f, const psc_fleet_t *fl)
{
    char cell[48];

    psc__legend(f, fl);
    psc_report_printf(f, "%-11s %5s  %-20s", "STATE", "RANK", "HOST");
    for (size_t k = 0; k < fl->nkeys; k++) {
        snprintf(cell, sizeof(cell), "F%zu", k + 1);
        psc_report_printf(f, " %-16s", cell);
    }
    psc_report_printf(f, "  WHY\n");
    for (size_t i = 0; i < fl->n; i++) {
        const psc_fleet_node_t *nd = &fl->nodes[i];

        psc_report_printf(f, "%-11s %5d  %-20.64s", psc_fleet_state_name(nd->state), nd->rank,
                          nd->host[0] ? nd->host : "?");
        for (size_t k = 0; k < fl->nkeys; k++) {
            psc__cell(cell, sizeof(cell), nd, &fl->keys[k]);
            psc_report_printf(f, " %-16s", cell);
        }
        psc_report_printf(f, "  %s\n", nd->why);
    }
    psc_render_fleet_verdict(f, fl);
}

static json_t *psc__json_node(const psc_fleet_node_t *nd, const psc_fleet_t *fl, int *bad)
{
    json_t *x = json_object(), *figs = json_array();

    psc_json_set(x, "rank", json_integer(nd->rank), bad);
    psc_json_set(x, "host", psc_json_identifying() && nd->host[0] ? psc_json_str(nd->host) : json_null(), bad);
    psc_json_set(x, "state", psc_json_str(psc_fleet_state_name(nd->state)), bad);
    psc_json_set(x, "reached", json_boolean(nd->reached), bad);
    psc_json_set(x, "check_exit_code", nd->reached ? json_integer(nd->check_exit) : json_null(), bad);
    psc_json_set(x, "why", nd->why[0] ? psc_json_str(nd->why) : json_null(), bad);
    for (size_t k = 0; nd->reached && k < fl->nkeys; k++) {
        size_t at = 0;
        const psc_fleet_fig_t *g = psc_fleet_node_fig(nd, fl->keys[k].name, &at);
        json_t *y;

        if (!g)
            continue;
        y = json_object();
        psc_json_set(y, "name", psc_json_str(g->name), bad);
        psc_json_set(y, "value", psc_json_real_or_null(g->value), bad);
        psc_json_set(y, "change_pct", psc_json_real_or_null(nd->change_pct[at]), bad);
        psc_json_set(y, "flagged", json_boolean(nd->flagged[at]), bad);
        psc_json_push(figs, y, bad);
    }
    psc_json_set(x, "figures", figs, bad);
    return x;
}

json_t *psc_json_fleet(const psc_fleet_t *fl, int exit_code)
{
    json_t *o = json_object(), *nodes = json_array(), *keys = json_array();
    int bad = 0;

    for (size_t k = 0; k < fl->nkeys; k++) {
        const psc_fleet_key_t *key = &fl->keys[k];
        json_t *y = json_object();

        psc_json_set(y, "name", psc_json_str(key->name), &bad);
        psc_json_set(y, "unit", psc_json_str(key->unit), &bad);
        psc_json_set(y, "higher_better", json_boolean(key->higher_better), &bad);
        psc_json_set(y, "bound_pct", json_real(key->bound_pct), &bad);
        psc_json_set(y, "median", psc_json_real_or_null(key->median), &bad);
        psc_json_set(y, "nodes", json_integer((json_int_t)key->n), &bad);
        psc_json_push(keys, y, &bad);
    }
    for (size_t i = 0; i < fl->n; i++)
        psc_json_push(nodes, psc__json_node(&fl->nodes[i], fl, &bad), &bad);
    psc_json_set(o, "verdict", psc_json_str(exit_code ? "unhealthy" : "healthy"), &bad);
    psc_json_set(o, "exit_code", json_integer(exit_code), &bad);
    psc_json_set(o, "nodes_total", json_integer((json_int_t)fl->n), &bad);
    psc_json_set(o, "healthy", json_integer((json_int_t)fl->healthy), &bad);
    psc_json_set(o, "outliers", json_integer((json_int_t)fl->outliers), &bad);
    psc_json_set(o, "unhealthy", json_integer((json_int_t)fl->unhealthy), &bad);
    psc_json_set(o, "unreachable", json_integer((json_int_t)fl->unreachable), &bad);
    psc_json_set(o, "timeout_s", json_real(fl->timeout_s), &bad);
    psc_json_set(o, "bound_pct", fl->bound_pct > 0 ? json_real(fl->bound_pct) : json_null(), &bad);
    psc_json_set(o, "fleet_s", json_real(fl->wall_s), &bad);
    psc_json_set(o, "medians", keys, &bad);
    psc_json_set(o, "nodes", nodes, &bad);
    return psc_json_done(o, bad);
}

/* The page's table: a row per node, a cell per key figure, the medians' row. */
static void psc__html_table(psc_buf_t *b, const psc_fleet_t *fl)
{
    char cell[48];

    psc_buf_puts(b, "<table><tr><th>state</th><th>rank</th><th>host</th>");
    for (size_t k = 0; k < fl->nkeys; k++) {
        psc_buf_puts(b, "<th>");
        psc_buf_esc(b, fl->keys[k].name);
        psc_buf_printf(b, " (%s)</th>", fl->keys[k].unit);
    }
    psc_buf_puts(b, "<th>why</th></tr>\n");
    for (size_t i = 0; i < fl->n; i++) {
        const psc_fleet_node_t *nd = &fl->nodes[i];

        psc_buf_printf(b, "<tr class=\"%s\"><td>%s</td><td>%d</td><td>",
                       nd->state == PSC_FLEET_HEALTHY ? "pass" : "fail", psc_fleet_state_name(nd->state), nd->rank);
        psc_buf_esc(b, nd->host[0] ? nd->host : "?");
        psc_buf_puts(b, "</td>");
        for (size_t k = 0; k < fl->nkeys; k++) {
            psc__cell(cell, sizeof(cell), nd, &fl->keys[k]);
            psc_buf_puts(b, "<td>");
            psc_buf_esc(b, cell);
            psc_buf_puts(b, "</td>");
        }
        psc_buf_puts(b, "<td>");
        psc_buf_esc(b, nd->why);
        psc_buf_puts(b, "</td></tr>\n");
    }
    psc_buf_puts(b, "<tr><td>median</td><td></td><td></td>");
    for (size_t k = 0; k < fl->nkeys; k++)
        psc_buf_printf(b, "<td>%.4g (bound %.1f %%)</td>", fl->keys[k].median, fl->keys[k].bound_pct);
    psc_buf_puts(b, "<td></td></tr>\n</table>\n");
}

char *psc_html_fleet(const psc_fleet_t *fl, const char *title)
{
    psc_buf_t b = {0};

    psc_buf_puts(&b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>");
    psc_buf_esc(&b, title);
    psc_buf_puts(&b, "</title><style>");
    psc_buf_puts(&b, psc_page_css);
    psc_buf_puts(&b, ".pass{color:#060}</style></head><body>\n<h1>");
    psc_buf_esc(&b, title);
    psc_buf_printf(&b, "</h1>\n<p class=\"%s\">%s: %zu nodes, %zu healthy, %zu outliers, %zu unhealthy, "
                   "%zu unreachable in %.1f s</p>\n", psc_fleet_exit(fl) ? "fail" : "pass",
                   psc_fleet_exit(fl) ? "UNHEALTHY" : "HEALTHY", fl->n, fl->healthy, fl->outliers, fl->unhealthy,
                   fl->unreachable, fl->wall_s);
    psc__html_table(&b, fl);
    psc_buf_puts(&b, "<p>Each node's key figure is the worst path of a check item on it (bandwidth in GB/s, 1 GB = "
                     "1e9 bytes; latency in ns or us), beside the fleet's median: % better (+) or worse (-); ! worse "
                     "than the median by more than the bound. Every figure is in the JSON (--json).</p>\n"
                     "</body></html>\n");
    return psc_buf_take(&b);
}
