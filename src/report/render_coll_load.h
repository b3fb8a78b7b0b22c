/*
 * coll --compute-load's figures (psc_coll_report_t.loads): a table of p2pscope's after nccl-tests' text, every
 * line a comment under header words of its own, and each row's "compute_load" object in the JSON.
 */
#ifndef PSC_REPORT_RENDER_COLL_LOAD_H
#define PSC_REPORT_RENDER_COLL_LOAD_H

#include <jansson.h>
#include <stdio.h>

#include "p2pscope/bench.h"

/*
 * Nothing without r->loads; else a line per row (both implementations): its size, type, op, root and
 * implementation, then for each half its time alone (the table's), under the load, the ratio of the two, a
 * compute kernel's time alone and under the collectives, the compute's slowdown in percent ("-" where no
 * kernel ran wholly within the loop), and "partly" where the collectives outlasted the compute.
 */
void psc_render_coll_load(FILE *f, const psc_coll_report_t *r);

/* Row i's figures under the load (both halves), or NULL without r->loads. */
json_t *psc_json_coll_load_row(const psc_coll_report_t *r, int i);

#endif
