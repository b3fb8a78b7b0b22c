/*
 * `p2pscope coll`: nccl-tests 2.19.6's stdout, line for line, from a
 * psc_coll_report_t (so an existing parser of nccl-tests reads ours: 13
 * fields per row, one row per size, its summary lines), then p2pscope's own
 * tables as lines starting with "#" under header words of their own; and the
 * JSON, which holds every row of both.
 */
#ifndef PSC_REPORT_RENDER_COLL_H
#define PSC_REPORT_RENDER_COLL_H

#include <jansson.h>
#include <stdio.h>

#include "p2pscope/bench.h"

/* The nccl-tests version whose output is copied, printed in the first line. */
#define PSC_COLL_NCCL_TESTS_VERSION "2.19.6"

/* What the table needs beyond the report; NULL or all zero: nccl-tests' defaults. */
typedef struct {
    int no_extras;          /* 1: nccl-tests' text alone (p2pscope's tables after it left out) */
    int min_bw_set;         /* nccl-tests' NCCL_TESTS_MIN_BW (the report's min_busbw_*): the average line ends OK,
                               or FAILED where the library's rule (psc_coll_busbw_short) says so */
    double min_bw_gbs;
    const char *last_error; /* ncclGetLastError(NULL): "# error: <it>" as the last line instead of a blank one */
    int cputime;            /* nccl-tests' -C: "cputime" columns, the rows' host time to issue (ext[].cpu_time_us) */
    int timestamps;         /* -S: a "timestamp" column, each row's end time (ext[].end_time) */
    int memory;             /* -M: the "GPU memory usage" line (mem_*) */
    const char *json_out;   /* -J: "# Writing JSON output to <it>" after the notes, as nccl-tests says so */
    unsigned parts;         /* PSC_COLL_PART_* set; 0: all of it */
} psc_coll_render_opts_t;

/* Parts of the text (-N 0 prints the head once, then each run's rows, never a foot: nccl-tests never ends). */
enum { PSC_COLL_PART_HEAD = 1, PSC_COLL_PART_ROWS = 2, PSC_COLL_PART_FOOT = 4 };

/*
 * nccl-tests' getFloatStr (2.19.6): value in exactly width characters (plus
 * the NUL; out holds width + 1), with 2, 1 or 0 decimals, whichever fits
 * first, else in exponent form.
 */
void psc_coll_float_str(double value, int width, char *out);

/*
 * The whole text: nccl-tests' header, "# Using devices" and a line per rank
 * (r->ranks, in array order), the table header, a row per NCCL row of
 * r->rows (p2pscope's where only they ran), nccl-tests' footer ("Out of
 * bounds values" counting that table's rows) and its closing blank line.
 * Then, unless o->no_extras, p2pscope's part, every line starting with "#":
 * its version; why its all-reduce did not run (own_not_run); its all-reduce
 * beside NCCL's (when both ran: time, bus bandwidth, wrong elements, NCCL's
 * time over its own; its average and failed halves); and, where some row has
 * per-operation times (iter_us.n > 0), each row's p50, p99 and max.
 */
void psc_render_coll(FILE *f, const psc_coll_report_t *r, const psc_coll_render_opts_t *o);

/* Whose rows nccl-tests' table holds (PSC_COLL_IMPL_NCCL, or p2pscope's where only they ran), their failed halves. */
int psc_render_coll_table(const psc_coll_report_t *r, int *failed);

/* What coll -J's JSON needs beyond the report. */
typedef struct {
    int argc;                /* "args": the command line as typed (program, options) */
    char *const *argv;
    char *const *envp;       /* "env": the environment */
    int cputime;             /* -C: each half's "cpu_time" instead of "time" */
    int identify;            /* --identify: the host name and the whole environment (else NCCL_, CUDA_, P2PSCOPE_) */
    int min_bw_set;          /* NCCL_TESTS_MIN_BW: "average_bus_bandwidth"'s "okay" */
    double min_bw_gbs;
    const char *last_error;  /* "errors": ncclGetLastError's text; NULL "" */
} psc_coll_nccl_json_opts_t;

/*
 * nccl-tests' own JSON file (util.cu, format version 3) of r: "version", "start_time", "args", "env",
 * "nccl_version", "config" (its "devices" one per process, as nccl-tests parses them), "results" (a row of
 * nccl-tests' table each: "out_of_place" and "in_place", -I's "*_per_iter"), "out_of_bounds",
 * "average_bus_bandwidth", "errors", "end_time". A malloc'ed text (*len bytes), or NULL out of memory.
 */
char *psc_render_coll_nccl_json(const psc_coll_report_t *r, const psc_coll_nccl_json_opts_t *o, size_t *len);

/*
 * coll --explain, after the table (every line starting with "#", so
 * nccl-tests' parsers skip it): the bandwidth bw measured between the ranks'
 * GPUs (link_bw_gbs, 0 not measured) and the doctor's findings on the run
 * (psc_doctor_coll), each with its evidence and fix.
 */
void psc_render_coll_explain(FILE *f, double link_bw_gbs, const char *link_how, const psc_finding_t *v, size_t n);
json_t *psc_json_coll_explain(double link_bw_gbs, const char *link_how, const psc_finding_t *v, size_t n);

/* Every field of the report: the run's parameters, ranks, rows (out of place and in place), footer figures. */
json_t *psc_json_coll_report(const psc_coll_report_t *r);

/* run's "parameters" (the run's options and each rank's GPU, from the report) and "coll" (the report). */
psc_status_t psc_json_run_add_coll(json_t *run, const psc_coll_report_t *r);

#endif
