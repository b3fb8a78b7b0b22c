/*
 * A JSON run read back into what the page writers take (`p2pscope render`): the run
 * of bw, report or lat that --json wrote, every field the page, the figures and the
 * CSV tables use checked for type and range, turned back into the suites, facts and
 * findings the live run handed psc_page_write. No GPU and no driver: only the file.
 */
#ifndef PSC_REPORT_RUN_LOAD_H
#define PSC_REPORT_RUN_LOAD_H

#include <jansson.h>
#include <stdarg.h>
#include <stddef.h>

#include "p2pscope.h"
#include "p2pscope/bench.h"
#include "report/html_page.h"

typedef struct {
    char command[16];                 /* "bw", "report", "lat" */
    char *command_line;               /* as typed; NULL where the run did not record it */
    char started_utc[32];
    double wall_s;
    int exit_code;
    psc_system_info_t sys;
    int ndev;
    psc_device_info_t devs[PSC_MAX_GPUS];
    psc_measure_opts_t measure;       /* bw, report: their parameters */
    int has_measure;
    psc_bw_suite_t *bw;               /* bw, report; NULL otherwise */
    psc_lat_suite_t *lat;             /* lat; NULL otherwise */
    psc_facts_t *facts;               /* report: its topology; NULL none */
    psc_finding_t *findings;          /* report: the doctor's, nfindings of them (doctor_ran 0: none recorded) */
    size_t nfindings;
    int doctor_ran;
} psc_run_doc_t;

/*
 * Load path. PSC_ERR_INVALID with one line in err naming the file, the field and what is accepted (not JSON,
 * not a p2pscope run, a run of another command, a run from a newer p2pscope, a field of the wrong type or
 * range), PSC_ERR_IO for a file that cannot be read, PSC_ERR_NO_MEMORY. *out set only on success.
 */
psc_status_t psc_run_doc_load(const char *path, psc_run_doc_t **out, char *err, size_t errlen);
void psc_run_doc_free(psc_run_doc_t *r);

/* The page the run's writers take, pointing into r. */
void psc_run_doc_page(const psc_run_doc_t *r, psc_page_t *p);

/*
 * `p2pscope render`: load path, then write what was asked (NULL: not asked) as psc_page_write does; nothing
 * is written when the run does not load. The status and err as psc_run_doc_load's (*loaded 0), then
 * psc_page_write's (*loaded 1).
 */
psc_status_t psc_render_run(const char *path, const char *html_path, const char *svg_dir, const char *csv_dir,
                            int *loaded, char *err, size_t errlen);

/* ---- the loader's parts (run_load*.c) ---- */

typedef struct {
    const char *path;
    char *err;
    size_t errlen;
} psc_rl_t;

/* One line "PATH: FIELD what (accepted: ...)"; PSC_ERR_INVALID. */
psc_status_t psc_rl_bad(const psc_rl_t *l, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
psc_status_t psc_rl_oom(const psc_rl_t *l);
/* o[key] a whole number lo..hi (null allowed: *v = dflt when nullable); 0, or -1. */
int psc_rl_int(const json_t *o, const char *key, long long lo, long long hi, int nullable, long long dflt,
               long long *v);
/* o[key] a finite number (null allowed: *v = dflt when nullable); 0, or -1. */
int psc_rl_num(const json_t *o, const char *key, int nullable, double dflt, double *v);
/* o[key] a string that fits len (null or absent: "" when nullable); 0, or -1. */
int psc_rl_str(const json_t *o, const char *key, int nullable, char *buf, size_t len);
/* "gpuN", "host" or "all" (psc_endpoint_name's) into *out; 0, or -1. */
int psc_rl_endpoint(const char *name, int *out);

/*
 * The test of the entry at results[nresults] into tests (*ntests of them, in the order run): a result joins
 * the last test when it is of that test (results run test after test), else opens one; no_case: a test that
 * had no case on the GPUs chosen, a test of its own with no result.
 */
void psc_rl_join(psc_suite_test_t *tests, int *ntests, size_t nresults, int test, int no_case);

/*
 * Entry i of a run's tests (t), whatever the suite's kind: an object; one with no direction is a test that had no
 * case (the JSON writer's waived test), found by its name (lookup: the kind's; unknown: what to say when it names
 * none) and joined to tests, *caseless = 1; else *caseless = 0 and the caller reads the result.
 */
psc_status_t psc_rl_caseless(const psc_rl_t *l, const json_t *t, size_t i, psc_status_t (*lookup)(const char *, int *),
                             const char *unknown, psc_suite_test_t *tests, int *ntests, size_t nresults, int *caseless);

/* The result just read at results[*nresults], of test `test`, counted: joined to its test, failed or not. */
void psc_rl_counted(psc_suite_test_t *tests, int *ntests, size_t *nresults, size_t *nfailed, int test, int failed);

/* The bandwidth suite of a bw or report run: its tests, the GPUs and sizes of its parameters. */
psc_status_t psc_rl_bw_suite(const psc_rl_t *l, const json_t *doc, psc_bw_suite_t **out);
/* The latency suite of a lat run: its tests, the GPUs of its devices, its timers. */
psc_status_t psc_rl_lat_suite(const psc_rl_t *l, const json_t *doc, const psc_run_doc_t *r, psc_lat_suite_t **out);

#endif
