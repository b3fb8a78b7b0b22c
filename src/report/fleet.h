/*
 * p2pscope check --fleet's model: each node's check reduced to a summary (its verdict, the failed items' lines and
 * one key figure per measured item: the worst path's), the summaries of every node put side by side, each key
 * figure's median over the nodes that reported it, and the outlier rule (a node worse than the median by more than
 * the bound is flagged, even when it passes its own check). Pure code over the summaries, O(n log n) in the nodes:
 * the text table, the JSON and the page are fleet_render.c's.
 */
#ifndef PSC_REPORT_FLEET_H
#define PSC_REPORT_FLEET_H

#include <stdio.h>

#include <jansson.h>

#include "report/check.h"

#define PSC_FLEET_MAX_FIGS 16 /* key figures a node carries: check has 9 measured items */
#define PSC_FLEET_MAX_FAILED 4 /* failed items' lines a node sends (the count says how many more) */
#define PSC_FLEET_MAX_SUMMARY (64u << 10) /* the most bytes of one node's report that are read */

typedef enum { PSC_FLEET_HEALTHY, PSC_FLEET_OUTLIER, PSC_FLEET_UNHEALTHY, PSC_FLEET_UNREACHABLE } psc_fleet_state_t;

typedef struct {
    char name[64];               /* the check's item: "bw.gpu_to_gpu_write_ce" */
    char unit[8];
    int higher_better;
    double tolerance_pct;        /* the item's (check.h's PSC_CHECK_TOL_*): its default outlier bound */
    double value;                /* the worst of the item's figures on this node; NAN: none */
} psc_fleet_fig_t;

typedef struct {
    int rank;
    char host[64];               /* "" until the node said */
    int reached;                 /* its check's summary arrived */
    int check_exit;              /* the node's check's exit code (reached), or -1 */
    char why[512];               /* unreachable: why; unhealthy: the failed items' lines */
    size_t nfig;
    psc_fleet_fig_t fig[PSC_FLEET_MAX_FIGS];
    /* psc_fleet_judge's: each figure's change against the fleet's median (percent, + better) and its flag */
    double change_pct[PSC_FLEET_MAX_FIGS];
    unsigned char flagged[PSC_FLEET_MAX_FIGS];
    psc_fleet_state_t state;
} psc_fleet_node_t;

typedef struct {
    char name[64], unit[8];
    int higher_better;
    double bound_pct;            /* how much worse than the median flags a node */
    double median;               /* NAN: no node reported it */
    size_t n;                    /* nodes that reported it */
} psc_fleet_key_t;

typedef struct {
    size_t n;
    psc_fleet_node_t *nodes;     /* rank order */
    double bound_pct;            /* --fleet-bound; <= 0: each item's tolerance */
    double timeout_s;            /* -T */
    double wall_s;
    size_t nkeys;
    psc_fleet_key_t keys[PSC_FLEET_MAX_FIGS];
    size_t healthy, outliers, unhealthy, unreachable;
} psc_fleet_t;

/*
 * A node's summary of its check r (exit_code its check's): {"verdict", "exit_code", "failed": N, "failed_items":
 * [lines], "figures": [{"name", "unit", "higher_better", "tolerance_pct", "value"}]}, a figure per item that
 * compares (tolerance > 0, not skipped): the worst of its figures (the lowest bandwidth, the highest latency),
 * the path a job spanning the node waits on. NULL out of memory.
 */
json_t *psc_fleet_summary(const psc_check_report_t *r, int exit_code);

/*
 * Node nd from the summary text a rank sent (at most PSC_FLEET_MAX_SUMMARY bytes are read): reached, its check's
 * exit code, the failed items into why, the figures. PSC_ERR_INVALID with one line in err for text that is no
 * summary (nd then unreached, err its why).
 */
psc_status_t psc_fleet_node_read(psc_fleet_node_t *nd, const char *text, size_t len, char *err, size_t errlen);

/*
 * A rank's report to rank 0: {"host", "exit_code" and "signal" of its check's process (-1: none), "stderr" (the
 * check's last line there), "summary" (psc_fleet_summary's text, or null)}. malloc'd text; NULL out of memory.
 */
char *psc_fleet_message(const char *host, int exit_code, int signal, const char *err_text, const char *summary);

/*
 * Node nd (its rank set) from a rank's report text: its host; reached with the summary's verdict and figures; a
 * check that died by a signal unreached, why naming the signal; one that ended without a summary reached and
 * unhealthy, why its last line on stderr (or its exit code); a report that is none unreached, why saying so.
 */
void psc_fleet_node_take(psc_fleet_node_t *nd, const char *text, size_t len);

/* A reached node's figure of that name (*at its index), or NULL. */
const psc_fleet_fig_t *psc_fleet_node_fig(const psc_fleet_node_t *nd, const char *name, size_t *at);

/* The median of v[0..n) (psc_stats_compute's: the mean of the middle two for even n); NAN for n 0 (or out of
 * memory). */
double psc_fleet_median(const double *v, size_t n);

/*
 * The outlier rule over f's nodes: the key figures (the names the reached nodes carry, first seen first), each
 * one's median over the reached nodes with a value, each node's figure flagged when worse than the median by more
 * than the bound (f->bound_pct, or the item's tolerance when that is <= 0): below it for a bandwidth, above it for
 * a latency. Then each node's state (unreachable, unhealthy: its own check failed, outlier: a flag, else healthy)
 * and the counts. PSC_ERR_NO_MEMORY (f unchanged but the counts). A median that cannot be had (out of memory) is
 * NAN, and flags no node.
 */
psc_status_t psc_fleet_judge(psc_fleet_t *f);

/* The fleet's exit code: 0 when every node is healthy, 1 when any is unhealthy, an outlier or unreachable. */
int psc_fleet_exit(const psc_fleet_t *f);

/* The state's word: "HEALTHY", "OUTLIER", "UNHEALTHY", "UNREACHABLE". */
const char *psc_fleet_state_name(psc_fleet_state_t s);

/* One line per node (its state, rank, host, each key figure beside the median, why), the medians, the verdict. */
void psc_render_fleet(FILE *f, const psc_fleet_t *fl);
/* The verdict line alone: "fleet: UNHEALTHY (4 nodes: 1 healthy, 1 outlier, 1 unhealthy, 1 unreachable) in 3.2 s". */
void psc_render_fleet_verdict(FILE *f, const psc_fleet_t *fl);
/* {"verdict", "exit_code", "nodes": [...], "medians": [...], ...}; hosts only with --identify. NULL on OOM. */
json_t *psc_json_fleet(const psc_fleet_t *fl, int exit_code);
/* The page: the verdict and the nodes' table, self-contained; malloc'd text, NULL out of memory. */
char *psc_html_fleet(const psc_fleet_t *fl, const char *title);

#endif
