/*
 * p2pscope compare: two JSON runs of one command (bw, report, lat, coll),
 * case by case. compare_cases.c loads a run and flattens it into cases (a
 * figure, the interval its samples spread over, which way is better);
 * compare.c judges each case against the runs' noise, lists what differs
 * about the machine and the options, and writes the comparison as text or
 * JSON. No GPU and no driver: only the files.
 */
#ifndef PSC_REPORT_COMPARE_H
#define PSC_REPORT_COMPARE_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

#include "p2pscope/bench.h"
#include "report/run_read.h"

/* Runs larger than this are refused before they are parsed (run_read.h). */
#define PSC_CMP_MAX_FILE PSC_RUN_MAX_FILE

/* Fewer samples than this in either run: no verdict on the noise (two runs of 2 samples each do not
 * overlap by chance once in 3; of 3 each, once in 10). */
#define PSC_CMP_MIN_SAMPLES 3


typedef enum { PSC_CMP_PASSED, PSC_CMP_FAILED, PSC_CMP_WAIVED } psc_cmp_status_t;

/* One case of one run: its figure and the interval its samples spread over (the noise rule's input). */
typedef struct {
    char *key;          /* what identifies it in either run: test, direction or pair, size, figure */
    char *label;        /* the same for people: "gpu_to_gpu_read_ce gpu0 -> gpu1 4 KiB" */
    psc_cmp_status_t status;
    double value;       /* PSC_CMP_PASSED: the figure (bw median, lat p50, coll p50 of the operations timed alone) */
    double lo, hi;      /* the samples' interval (see compare.c's rule); valid when n >= PSC_CMP_MIN_SAMPLES */
    unsigned n;         /* samples behind lo and hi; 0 when the run recorded none */
    double alt;         /* the figure compared where either run has no interval (coll: time_us); NAN: none */
    int whole_test;     /* a test that failed or was waived before its first size: key "test|direction" stands
                           for every case "test|direction|..." of the other run */
} psc_cmp_case_t;

/* A loaded run. */
typedef struct {
    char *path;
    char *command;      /* "bw", "report", "lat", "coll" */
    const char *unit;   /* of every case's figure: "GB/s", "ns", "us" */
    int higher_better;  /* bandwidth: 1; latency and time: 0 */
    json_t *doc;        /* the whole document (the machine and the options are diffed from it) */
    psc_cmp_case_t *cases;
    size_t ncases;
} psc_cmp_run_t;

/*
 * Load path as a p2pscope JSON run whose command compare knows. PSC_ERR_INVALID (or PSC_ERR_IO for a file
 * that cannot be read) with one line in err naming the file, what was wrong and what is accepted;
 * PSC_ERR_NO_MEMORY out of memory. *out is set only on success.
 */
psc_status_t psc_cmp_run_load(const char *path, psc_cmp_run_t **out, char *err, size_t errlen);
void psc_cmp_run_free(psc_cmp_run_t *r);

typedef enum {
    PSC_CMP_WITHIN_NOISE, /* the intervals overlap: nothing to say */
    PSC_CMP_BETTER,       /* beyond the noise, the better way */
    PSC_CMP_WORSE,        /* beyond the noise, the worse way */
    PSC_CMP_NO_SPREAD,    /* too few samples in a run to judge the noise */
    PSC_CMP_NOW_FAILS,    /* passed in A, failed in B */
    PSC_CMP_NOW_PASSES,   /* failed in A, passed in B */
    PSC_CMP_NOW_WAIVED,   /* passed in A, waived or not run in B (a lost path) */
    PSC_CMP_NOT_COMPARED, /* no figure on one side (waived, not run, or failed in both) */
} psc_cmp_verdict_t;

/* The verdict on one case measured in runs a and b, and B's change from A in percent of A (NAN without
 * two figures or with A's figure 0). The figures are the cases' values, or their alt where either run has
 * no interval and both have an alt (psc_cmp_figures). */
psc_cmp_verdict_t psc_cmp_judge(const psc_cmp_case_t *a, const psc_cmp_case_t *b, int higher_better,
                                double *change_pct);

/* The figures of a and b the verdict compares (NAN where a side has none). */
void psc_cmp_figures(const psc_cmp_case_t *a, const psc_cmp_case_t *b, double *va, double *vb);

/* How much worse B is than A in percent (negative: better), from the change and which way is better. */
double psc_cmp_worse_pct(double change_pct, int higher_better);

/* Whether a case fails --fail-above pct (pct < 0: not given): worse beyond the noise by more than pct
 * percent, or failing or waived now where it passed. */
int psc_cmp_fails(psc_cmp_verdict_t v, double change_pct, int higher_better, double pct);

/* A case in both runs. */
typedef struct {
    const psc_cmp_case_t *a, *b;
    const char *label;  /* the case's label (the side with a size, where the other is a whole test) */
    double va, vb;      /* the figures compared (psc_cmp_figures) */
    psc_cmp_verdict_t verdict;
    double change_pct;
    int fails;
} psc_cmp_row_t;

/* Something the runs record about the machine or the options that differs: a or b NULL where absent. */
typedef struct {
    char *field;        /* "devices[0].sm_clock_mhz", "parameters.size_bytes" */
    json_t *a, *b;
} psc_cmp_diff_t;

typedef struct {
    const psc_cmp_run_t *a, *b;
    double fail_above;  /* < 0: not given */
    psc_cmp_diff_t *diffs;
    size_t ndiffs;
    psc_cmp_row_t *rows;
    size_t nrows;
    const psc_cmp_case_t **only_a, **only_b;
    size_t nonly_a, nonly_b;
    size_t nfailed;     /* rows that fail --fail-above */
} psc_compare_t;

/*
 * Compare runs a and b (which the result points into: keep them until it is freed). PSC_ERR_INVALID with
 * one line in err when they are runs of different commands; PSC_ERR_NO_MEMORY.
 */
psc_status_t psc_compare(const psc_cmp_run_t *a, const psc_cmp_run_t *b, double fail_above, psc_compare_t **out,
                         char *err, size_t errlen);
void psc_compare_free(psc_compare_t *c);

/* The words of the text, the JSON and the page alike: a verdict's JSON name ("within_noise", ...); the
 * interval the rule takes and the figure compared, for a run's command; a figure to three significant digits
 * at least; the status of a case without a figure ("FAILED", "waived", "not run"), and its JSON name
 * ("passed", "failed", "waived"); a row's mark after its change ("WORSE", "better", "?", ...; "" none). */
const char *psc_cmp_verdict_name(psc_cmp_verdict_t v);
const char *psc_cmp_interval_text(const psc_cmp_run_t *r);
const char *psc_cmp_figure_text(const psc_cmp_run_t *r);
void psc_cmp_fig(char *buf, size_t len, double v);
const char *psc_cmp_status_text(const psc_cmp_run_t *run, const psc_cmp_case_t *x);
const char *psc_cmp_status_name(const psc_cmp_case_t *x);
void psc_cmp_mark(char *buf, size_t len, const psc_compare_t *c, const psc_cmp_row_t *r);

/* The machine's differences first, then the cases, the legend with the rule, the cases in one run only,
 * and (with --fail-above) one line naming the cases that failed it. */
void psc_render_compare(FILE *f, const psc_compare_t *c);

/* One line for stderr where only the JSON was printed: how many cases fail --fail-above (nothing if none). */
void psc_render_compare_brief(FILE *f, const psc_compare_t *c);

/* The comparison as a JSON document; NULL when out of memory. */
json_t *psc_json_compare(const psc_compare_t *c, int exit_code);

/*
 * compare --html FILE, --csv DIR (compare_page.c): the comparison as one self-contained page (the runs, the
 * machine's differences, a table of the cases with their intervals, change and mark, the cases in one run
 * only, --fail-above's verdict) and as CSV tables (cases.csv, differences.csv, only.csv), written as the runs'
 * pages are (html_page.h: atomically, a directory's names the tool's own). NULL: not asked. PSC_ERR_IO or
 * PSC_ERR_NO_MEMORY with one line in err.
 */
psc_status_t psc_compare_page_write(const psc_compare_t *c, int exit_code, const char *html_path,
                                    const char *csv_dir, char *err, size_t errlen);

#endif
