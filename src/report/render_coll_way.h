/*
 * Which way p2pscope's own rows ran (psc_coll_report_t.ways: its one-shot or two-shot kernel, its copy
 * engines, or NCCL where the group's tuning found NCCL faster): the words the tables and the JSON use.
 */
#ifndef PSC_REPORT_RENDER_COLL_WAY_H
#define PSC_REPORT_RENDER_COLL_WAY_H

#include <jansson.h>
#include <stdio.h>

#include "p2pscope/bench.h"

/* p2pscope's own collective of the report in words ("all-reduce", "reduce-scatter", "all-gather"; call 0), or the
   library call that made its rows (call 1: psc_allreduce_sum, ..._reduce_scatter, ..._all_gather). */
const char *psc_coll_own_what(const psc_coll_report_t *r, int call);

/* Half k of row i's way: "one-shot", "two-shot", "copy-engines", "nccl"; "-" where none is known. */
const char *psc_coll_way_word(const psc_coll_report_t *r, int i, int k);

/*
 * The line saying whether p2pscope's group was tuned beside NCCL (or why not), where its rows ran; then, where
 * its rows fill nccl-tests' table itself (no NCCL rows to stand beside), a table of each row's ways.
 */
void psc_render_coll_ways(FILE *f, const psc_coll_report_t *r, int own_is_main_table);

/* Into row i's JSON object (p2pscope's rows only): each half's "way", and null where none is known. */
void psc_json_coll_ways(json_t *row, const psc_coll_report_t *r, int i, int *bad);

#endif
