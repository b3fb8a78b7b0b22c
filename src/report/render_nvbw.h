/*
 * `p2pscope nvbandwidth`: nvbandwidth 0.8's stdout, line for line (its
 * header, "Running <test>.", each matrix under nvbandwidth's title with its
 * SUM line, "Waived: " for a test not run, its closing note), and its -j
 * JSON document (the keys jsoncpp wrote for it), from a bw suite run of the
 * p2pscope tests nvbw_map.c maps nvbandwidth's to.
 */
#ifndef PSC_REPORT_RENDER_NVBW_H
#define PSC_REPORT_RENDER_NVBW_H

#include <jansson.h>
#include <stdio.h>

#include "p2pscope.h"
#include "p2pscope/bench.h"
#include "report/nvbw_map.h"

typedef struct {
    const char *hostname;  /* the line above the GPUs, and each GPU's entry in JSON */
    const char *warning;   /* NULL, or nvbandwidth's note printed before the CUDA versions (JSON: "warning") */
    int verbose;           /* -v: MIN, MAX and AVG lines after SUM; "min", "max", "average" in JSON */
    int perf;              /* --perfFormatter: "&&&& PERF <key> <sum> +GB/s" in place of the SUM line */
} psc_nvbw_render_opts_t;

/* The cell (row, col) of matrix m of test t from the mapped test's results (res, n of them), GPUs devs: 1 and
 * *out, or 0 where nvbandwidth prints N/A (no such transfer, a waived or failed case). */
int psc_nvbw_cell(const psc_nvbw_test_t *t, int m, const psc_bw_result_t *res, size_t n, const int *devs, int row,
                  int col, double *out);

/* "nvbandwidth Version: v0.8", the line naming what built it (p2pscope and its version), a blank line. */
void psc_render_nvbw_version(FILE *f);
/* -l: "Index, Name:" then each test's index, name and what p2pscope measures it with. */
void psc_render_nvbw_list(FILE *f);
/* The warning (if any), the CUDA and driver versions, the host name and a line per GPU. */
void psc_render_nvbw_machine(FILE *f, const psc_system_info_t *sys, const psc_device_info_t *devs, int n,
                             const psc_nvbw_render_opts_t *o);
/* One test: "Waived: <why>" where suite has no passed case of it (suite NULL: not run), else "Running <name>."
 * and its matrices; "Error: <reason>" after them where a case failed. */
void psc_render_nvbw_test(FILE *f, const psc_nvbw_test_t *t, const psc_bw_suite_t *suite,
                          const psc_nvbw_render_opts_t *o);
/* nvbandwidth's closing note. */
void psc_render_nvbw_footer(FILE *f);

/* -j: the document's start ("nvbandwidth": versions, GPUs, warning, no test yet); NULL out of memory. */
json_t *psc_json_nvbw_new(const psc_system_info_t *sys, const psc_device_info_t *devs, int n,
                          const psc_nvbw_render_opts_t *o);
/* One test into "testcases" as nvbandwidth adds it; -1 out of memory. */
int psc_json_nvbw_add_test(json_t *doc, const psc_nvbw_test_t *t, const psc_bw_suite_t *suite,
                           const psc_nvbw_render_opts_t *o);
/* The document as nvbandwidth prints it: keys sorted, then a blank line; -1 when stdout failed. */
int psc_json_nvbw_print(FILE *f, const json_t *doc);

#endif
