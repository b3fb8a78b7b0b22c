/* verify: the per-path table, the paths as JSON, and the wrong-data findings. */
#ifndef PSC_REPORT_RENDER_VERIFY_H
#define PSC_REPORT_RENDER_VERIFY_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

#include "p2pscope/bench.h"

/* A row per path (copies, MB checked, bad bytes, status, passes), each failure's reason, and the totals line. */
void psc_render_verify(FILE *f, const psc_verify_path_sum_t *paths, size_t n, double wall_s);

/* The doctor's findings of one rule (e.g. "p2p_corrupts"), each with its evidence and fix. */
void psc_render_findings_of_rule(FILE *f, const psc_finding_t *v, size_t n, const char *rule);

/* One path: name, direction, status, reason, sums and the first wrong byte; NULL out of memory. */
json_t *psc_json_verify_path(const psc_verify_path_sum_t *p);

#endif
