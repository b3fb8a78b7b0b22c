/* The suites' pages: bw/report's tables and footer, lat's timers, verify's document, test lists, the doctor's document. */
#ifndef PSC_REPORT_RENDER_SUITE_H
#define PSC_REPORT_RENDER_SUITE_H

#include <jansson.h>
#include <stdio.h>

#include "p2pscope/bench.h"

/* Each test's table (a sweep's table when there are several sizes), then the comparisons across tests. */
void psc_render_bw_suite(FILE *f, const psc_bw_suite_t *s);
/* The last line: wall time, and what checking the data cost of the cases' time (or that it was not checked). */
void psc_render_bw_footer(FILE *f, const psc_bw_suite_t *s, int verified, double wall_s);
/* Every result into run's "tests", and a "waived" entry for a test that had no case. */
psc_status_t psc_json_run_add_bw_suite(json_t *run, const psc_bw_suite_t *s);

/* The timers line above lat's tables. */
void psc_render_lat_timers(FILE *f, double gpu_ns, double host_ns);
/* Each test's table. */
void psc_render_lat_suite(FILE *f, const psc_lat_suite_t *s);
/* run's "timers" and every result into its "tests". */
psc_status_t psc_json_run_add_lat_suite(json_t *run, const psc_lat_suite_t *s);

/* verify's run: "paths", "background" (null without a load), "background_error" when it could not start, "seed". */
psc_status_t psc_json_run_add_verify_suite(json_t *run, const psc_verify_suite_t *s, uint64_t seed);

/* `list`, `bw -l`, `lat -l`: one line per test, the name padded to width. */
void psc_render_test_list(FILE *f, const psc_registry_t *reg, int width);
/* The same as a document: {"tool", "command", "tests": [{name, title, description, min_gpus}]}; NULL out of memory. */
json_t *psc_json_test_list(const char *command, const psc_registry_t *reg);

/* doctor's document: tool, command, findings, facts, exit code; NULL out of memory (never a part missing). */
json_t *psc_json_doctor(const psc_facts_t *f, const psc_finding_t *v, size_t n, int exit_code);

#endif
