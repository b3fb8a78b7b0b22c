/* `p2pscope ipc`: the run between processes, beside the same paths in one process, as text and JSON. */
#ifndef PSC_REPORT_RENDER_IPC_H
#define PSC_REPORT_RENDER_IPC_H

#include <jansson.h>
#include <stdio.h>

#include "p2pscope/bench.h"

/* Output lines stay within this many columns (a reason too long for one line is wrapped at spaces). */
#define PSC_IPC_TEXT_WIDTH 100

/*
 * Between processes over in one process for one copy: 1 with *ratio set when
 * both passed with a median above 0; 0 when there is no baseline to compare.
 */
int psc_ipc_bw_ratio(const psc_bw_result_t *between, const psc_bw_result_t *local, double *ratio);

/* Pairs that failed: status FAILED, or a copy (either side) whose bytes were wrong. Exit 1 on any. */
int psc_ipc_report_nfailed(const psc_ipc_report_t *r);

/*
 * The workers, the methods asked (with the reason for those not run), then
 * per method run: bandwidth, round trips, costs and selective mapping, a row
 * per ordered pair "A -> B" (importer GPU A, exporter GPU B), then a line per
 * pair that did not pass, with its reason.
 */
void psc_render_ipc(FILE *f, const psc_ipc_report_t *r);

/* The whole report: workers, methods, and per pair every figure (bandwidth results as psc_json_bw_result). */
json_t *psc_json_ipc_report(const psc_ipc_report_t *r);

/* run's "parameters" (the options the run was given, each worker's GPU in devices) and "ipc" (the report). */
psc_status_t psc_json_run_add_ipc(json_t *run, const psc_ipc_report_t *r, const psc_ipc_opts_t *opts,
                                  const int *devices, int ndev);

#endif
