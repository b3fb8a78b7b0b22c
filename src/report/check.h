/*
 * p2pscope check's verdicts: what the library measured (psc_node_check_t) turned into items that pass, fail or
 * are skipped against bounds (expect.h's rules: a file, or auto from the machine's links), compared with an
 * earlier check of the node (--baseline, compare.h's noise rule), rendered as text, JSON and a page.
 *
 * An item is one thing an operator reads in one line: an inventory fact (inventory.gpus, inventory.nvlinks,
 * ...), a bandwidth test (bw.gpu_to_gpu_write_ce, ...), a latency test (lat.gpu_to_gpu_chase, ...), the
 * integrity pass, the all-reduce at each size, the doctor. Each has figures (per GPU, per path, per size),
 * each figure its bounds. Pure code over the measurements: no driver.
 */
#ifndef PSC_REPORT_CHECK_H
#define PSC_REPORT_CHECK_H

#include <stdio.h>

#include <jansson.h>

#include "lib/p2pscope_private.h"
#include "report/expect.h"

typedef enum { PSC_CHECK_PASS, PSC_CHECK_FAIL, PSC_CHECK_SKIP } psc_check_state_t;

/* How much worse than the baseline, beyond the runs' noise, a figure may get (percent) before it fails. */
#define PSC_CHECK_TOL_GPU 5.0   /* GPU-side bandwidth: repeats within 0.5 % on one machine */
#define PSC_CHECK_TOL_HOST 35.0 /* host <-> GPU: moves 4-35 % between runs on shared VMs (DESIGN.md 5) */
#define PSC_CHECK_TOL_LAT 50.0  /* latency: moves about 1 us with what else the process holds */
#define PSC_CHECK_TOL_COLL 15.0 /* all-reduce */

#define PSC_CHECK_MAX_BOUNDS 4

typedef struct {
    char key[96];                /* the figure within its item: "gpu0->gpu1@512MiB", "gpu1", "node", "256MiB" */
    double value;                /* in the item's unit; NAN: none (why says so) */
    double lo, hi;               /* the spread of its samples (bw min..max, lat min..p90); n 0: none */
    unsigned n;
    char why[256];               /* "" or why there is no figure, or what is wrong beside it */
    int ok;                      /* 1 passes its bounds and has no fault */
    size_t nbounds;              /* rules that apply (at most PSC_CHECK_MAX_BOUNDS kept) */
    const psc_expect_rule_t *bounds[PSC_CHECK_MAX_BOUNDS];
    unsigned char bound_ok[PSC_CHECK_MAX_BOUNDS];
    int has_base;                /* --baseline: the earlier check's figure */
    double base_value, base_lo, base_hi, change_pct;
    unsigned base_n;
    int base_fails;              /* worse beyond the noise by more than the item's tolerance, or lost */
} psc_check_figure_t;

typedef struct {
    char name[64];               /* "bw.gpu_to_gpu_write_ce" */
    char unit[8];                /* "GB/s", "ns", "us", "" (counts, states) */
    int higher_better;
    double tolerance_pct;        /* --baseline: PSC_CHECK_TOL_* */
    psc_check_state_t state;
    char line[512];              /* the one-line verdict */
    size_t nfig;
    psc_check_figure_t *fig;
} psc_check_item_t;

typedef struct {
    size_t n, cap;
    psc_check_item_t *items;
    size_t passed, failed, skipped;
    const char *bounds;          /* "auto" or the --expect file */
    const char *baseline;        /* NULL or the --baseline file */
    double wall_s;
    double stage_s[6];           /* facts, bw, lat, integrity, all-reduce (seconds each), and the whole check */
} psc_check_report_t;

/*
 * The items of check c against the rules of e (a file's, or auto's: psc_check_auto_rules), each figure's
 * bounds and state, each item's line. PSC_ERR_NO_MEMORY; *out (psc_check_report_free) only on success.
 */
psc_status_t psc_check_report(const psc_node_check_t *c, const psc_expect_t *e, psc_check_report_t **out);
void psc_check_report_free(psc_check_report_t *r);

/*
 * --expect auto for check: expect.h's link bounds (psc_expect_auto), the node rules (psc_expect_auto_node),
 * and from what the check measured: each NVLink pair's GPU -> GPU pointer chase at most
 * PSC_CHECK_AUTO_CHASE_NS, and the large all-reduce's bus bandwidth at least PSC_CHECK_AUTO_COLL of the
 * slowest GPU -> GPU copy measured (NVLink pairs only). Into a new *out; PSC_ERR_NO_MEMORY with err.
 */
#define PSC_CHECK_AUTO_CHASE_NS 2500.0 /* 3 x the 830 ns measured over NV18 on H200 */
#define PSC_CHECK_AUTO_COLL 0.50
psc_status_t psc_check_auto_rules(const psc_node_check_t *c, psc_expect_t **out, char *err, size_t errlen);

/* Item states into counts and the item's line: called after the figures are set (report and baseline). */
void psc_check_item_settle(psc_check_item_t *it);
void psc_check_report_count(psc_check_report_t *r);

/*
 * --baseline: the earlier check's JSON at path (that of psc_json_check) read and each figure of r compared
 * by key: judged as compare judges (psc_cmp_judge: the samples' intervals), failing when worse by more than
 * the item's tolerance or lost. The baseline must come from the same node: the same GPUs by name and PCI bus
 * id, in the same order (devices of both runs' JSON: run is this check's document). PSC_ERR_INVALID (or
 * PSC_ERR_IO) with one line in err; r is changed only on success.
 */
psc_status_t psc_check_baseline(psc_check_report_t *r, const json_t *run, const char *path, char *err,
                                size_t errlen);

/* One line per item ("PASS  name  line"), then the verdict line. */
void psc_render_check(FILE *f, const psc_check_report_t *r);
/* The verdict line alone: "check: HEALTHY (12 passed, 0 failed, 2 skipped) in 9.8 s". */
void psc_render_check_verdict(FILE *f, const psc_check_report_t *r);
/* {"verdict", "exit_code", "bounds", "baseline", "passed", "failed", "skipped", "items": [...]}; NULL on OOM. */
json_t *psc_json_check(const psc_check_report_t *r, int exit_code);
/* The page: the verdict and the items' table, self-contained; malloc'd text, NULL out of memory. */
char *psc_html_check(const psc_check_report_t *r, const char *title);

#endif
