/* Progress of the suites, for stderr: a live line on a terminal (tty), one line per finished case otherwise. */
#ifndef PSC_REPORT_RENDER_PROGRESS_H
#define PSC_REPORT_RENDER_PROGRESS_H

#include <stdio.h>

#include "p2pscope/bench.h"

/* "[k/n] test label": the live line before a case; after it, its median or why it failed. */
void psc_render_bw_progress(FILE *f, const psc_bw_suite_progress_t *p, int tty);
void psc_render_lat_progress(FILE *f, const psc_lat_case_t *c, const psc_lat_result_t *r, int tty);
/* p NULL with load_error: the background load could not start (the run goes on without it). */
void psc_render_verify_progress(FILE *f, const psc_verify_progress_t *p, const char *load_error, int tty);

#endif
