/* The machine-readable run document (jansson), written atomically. */
#ifndef PSC_REPORT_JSON_H
#define PSC_REPORT_JSON_H

#include <jansson.h>
#include <stddef.h>

#include "lib/p2pscope_private.h"
#include "p2pscope/bench.h"

/*
 * Every builder here writes text through psc_json_str and checks each
 * insert: a document comes back whole or not at all (NULL, or
 * PSC_ERR_NO_MEMORY, only when out of memory); no key is dropped silently.
 */

/*
 * Any C string (names, command lines, reasons, paths) as a JSON string:
 * jansson refuses text that is not UTF-8, so a character cut short at the
 * end is dropped and a byte that is not UTF-8 becomes U+FFFD. NULL only
 * when out of memory.
 */
json_t *psc_json_str(const char *s);

/* A double, or null where JSON has no number for it (jansson refuses NaN and infinities): not measured. */
json_t *psc_json_real_or_null(double v);

/* Builders' inserts (psc_json_set, psc_json_push: the private interface's) remember a failure in *bad; then
 * psc_json_done gives the object, or NULL (freed) when one of its inserts failed. */
json_t *psc_json_done(json_t *o, int bad);

/*
 * Whether the documents below carry what identifies the machine: its host name (the run's, each coll
 * rank's) and the GPUs' UUIDs (p2pscope --identify). Off by default: null in their places, so a JSON
 * file is safe to attach to a public report. Process-wide, set once by the CLI.
 */
void psc_json_identify(int on);
int psc_json_identifying(void);

/*
 * The layout of a run document (its "run_format"): raised when a key a reader relies on changes meaning or
 * goes, so `p2pscope render` refuses a run from a newer p2pscope rather than draw it wrong.
 */
#define PSC_RUN_FORMAT 1

/* Tool, layout, host, start time, driver and GPU facts; "tests" starts empty. */
json_t *psc_json_run_new(const char *command, const psc_system_info_t *sys,
                         const psc_device_info_t *devs, int ndev);

/* Every parameter of the measurement, the GPUs and tests chosen. */
psc_status_t psc_json_run_set_parameters(json_t *run, const psc_measure_opts_t *o, const int *devs, int ndev,
                                         const psc_bw_test_t *tests, int ntests);

/* One bandwidth result: names, direction, issuer, status, samples, statistics, verification. */
json_t *psc_json_bw_result(const psc_bw_result_t *r);

/* Set run[key] (reference stolen; NULL, a failed build, fails here and leaves the document incomplete). */
psc_status_t psc_json_run_set(json_t *run, const char *key, json_t *value);

/* Append a test object (reference stolen; NULL, a failed build, fails here). */
psc_status_t psc_json_run_add_test(json_t *run, json_t *test);

/* Wall time and exit code; PSC_ERR_NO_MEMORY also when an earlier part could not be added (do not write it). */
psc_status_t psc_json_run_finish(json_t *run, double wall_s, int exit_code);

/*
 * Write the document to path ("-" for stdout) through a temporary file in
 * the same directory and a rename, so a reader never sees half a file.
 */
psc_status_t psc_json_write(const json_t *doc, const char *path, char *errbuf, size_t errlen);

#endif
