/* The p2pscope command line: options, exit codes, commands. */
#ifndef PSC_CLI_H
#define PSC_CLI_H

#include <stddef.h>

#include <jansson.h>

#include "p2pscope/bench.h"
#include "report/expect.h"
#include "lib/p2pscope_private.h"

enum {
    PSC_EXIT_OK = 0,      /* everything asked for passed */
    PSC_EXIT_FAILED = 1,  /* a check failed: wrong data, a failed test */
    PSC_EXIT_USAGE = 2,   /* bad arguments */
    PSC_EXIT_ENV = 3,     /* no driver, no GPU, too few GPUs for what was asked */
    PSC_EXIT_NO_MEMORY = 4, /* out of host or GPU memory */
    PSC_EXIT_NA = 77,     /* nothing applicable */
};

/* The exit code for a failed library call: PSC_EXIT_NO_MEMORY for PSC_ERR_NO_MEMORY, 0 for PSC_OK, else otherwise. */
int psc_cli_exit_of(psc_status_t st, int otherwise);

typedef enum { PSC_CMD_REPORT, PSC_CMD_DEVICES, PSC_CMD_BW, PSC_CMD_LIST, PSC_CMD_TOPO, PSC_CMD_DOCTOR, PSC_CMD_NVLINK, PSC_CMD_LAT, PSC_CMD_VERIFY, PSC_CMD_COPY, PSC_CMD_IPC, PSC_CMD_COLL,
              PSC_CMD_COMPARE, PSC_CMD_RENDER, PSC_CMD_CHECK, PSC_CMD_NVBW, PSC_CMD_P2PBW } psc_cli_cmd_t;

#define PSC_CLI_MAX_DEVS 64
#define PSC_CLI_MAX_TESTS 128
#define PSC_CLI_MAX_SIZES 48 /* a sweep of 1 B to 1 TiB by 2 has 41 */
#define PSC_CLI_MAX_NVBW_TESTS 128

/* `p2pscope nvbandwidth`: nvbandwidth 0.8's options (nvbw_options.c); the measurement goes to measure. */
typedef struct {
    int ntests;                           /* -t/-p: indexes of nvbw_map.c's table, in the order given; 0: all */
    int tests[PSC_CLI_MAX_NVBW_TESTS];
    unsigned buffer_mib;                  /* -b, MiB per copy */
    int list, json, verbose, perf;        /* -l, -j, -v, --perfFormatter */
} psc_cli_nvbw_t;

/* `p2pscope p2pbw`: p2pBandwidthLatencyTest's options (p2pbw_options.c); the copy size goes to measure. */
typedef struct {
    int p2p_read, sm_copy;                /* --p2p_read, --sm_copy */
    unsigned num_elems;                   /* --numElems=N: ints a copy */
} psc_cli_p2pbw_t;

typedef struct {
    psc_cli_cmd_t cmd;
    int cmd_given;                        /* a command word was given (its --help is its own) */
    int help, version;
    psc_measure_opts_t measure;
    int ntests;                           /* 0: every test (bw tests, or lat tests for `lat`) */
    int tests[PSC_CLI_MAX_TESTS];
    int list_tests;                       /* bw -l */
    int samples_given;                    /* -n was on the command line */
    unsigned seconds;                     /* verify --seconds: stress for this long */
    psc_verify_opts_t verify;             /* verify: the plan */
    psc_test_hooks_t hooks;               /* --test-corrupt-offset, --test-fault: installed on the context */
    int no_load;                          /* verify --no-load: no background traffic on the other paths */
    uint64_t sweep_min, sweep_max;        /* -b/-e: a size sweep; 0: each test's one size */
    unsigned sweep_factor;                /* -f */
    int ndev;                             /* 0: every GPU */
    int devs[PSC_CLI_MAX_DEVS];
    int json;                             /* --json given */
    const char *json_path;                /* NULL or "-": stdout, instead of tables */
    const char *topology;                 /* --topology: replay this recording, no driver */
    const char *save;                     /* --save: record this machine's facts here */
    int watch;                            /* nvlink --watch: run the tests, show each link's traffic */
    int identify;                         /* --identify: JSON and recordings keep host name, UUIDs, serials */
    const char *calibrate;                /* copy --calibrate: measure psc_copy's routes, write them here */
    const char *calibration;              /* copy --calibration: route the benchmark's copies by this file */
    int no_host;                          /* copy --no-host: GPU <-> GPU paths only */
    unsigned ipc_methods;                 /* ipc --method: bit (1u << psc_share_kind_t) each; 0: all */
    unsigned round_trips;                 /* ipc --round-trips (0: the library's default) */
    int no_local;                         /* ipc --no-local: no baseline inside one process */
    double timeout_s;                     /* ipc --timeout (0: the library's default) */
    psc_coll_opts_t coll;                 /* coll: nccl-tests' options (coll_options.c) */
    int coll_gpus;                        /* coll -g: GPUs per process; 0: every GPU, or one per rank under mpirun */
    int coll_first_gpu;                   /* NCCL_TESTS_DEVICE: the first GPU of -g's (-1 unset) */
    int coll_explain;                     /* coll --explain: the doctor on the run, beside bw between its GPUs */
    int coll_cputime, coll_timestamps;    /* coll -C, -S: nccl-tests' time column as host time to issue; a time stamp */
    int coll_memory;                      /* coll -M: nccl-tests' GPU memory line */
    int coll_forever;                     /* coll -N 0: cycles until the process is stopped */
    const char *coll_json_nccl;           /* coll -J FILE: nccl-tests' own JSON, to FILE (.json) */
    int coll_argc;                        /* coll -J: the command line, for its "args" */
    char **coll_argv;
    const char *compare_a, *compare_b;    /* compare: the two runs' files */
    double fail_above;                    /* compare --fail-above PCT; < 0: not given */
    const char *render_run;               /* render: the JSON run to draw again */
    const char *baseline;                 /* check --baseline FILE: an earlier check's JSON of this node */
    const char *expect;                   /* --expect FILE or auto: bounds the run's figures must meet (cmd_expect.c) */
    const char *html_path;                /* --html FILE: the run as one self-contained page */
    const char *svg_dir;                  /* --svg DIR: the page's figures as files */
    const char *csv_dir;                  /* --csv DIR: the run's tables as CSV files */
    const char *const *args;              /* the words after the command (nargs), as typed: the page's context */
    int nargs;
    psc_cli_nvbw_t nvbw;                  /* nvbandwidth: its own options */
    int fleet;                            /* check --fleet: one rank per node, one table at rank 0 */
    double fleet_bound;                   /* check --fleet-bound PCT; 0: each item's tolerance */
    int fleet_out;                        /* a fleet's node: its check's summary to this descriptor, no output (0: none) */
    psc_cli_p2pbw_t p2pbw;                /* p2pbw: its own options */
} psc_cli_opts_t;

/* Every GPU of -d exists here; else one line on stderr and PSC_EXIT_USAGE. */
int psc_cli_check_devices(const psc_context_t *ctx, const psc_cli_opts_t *o);

/* The help: every command and option; or one command's purpose, its options and an example (-1: none). */
void psc_cli_usage(void);
int psc_cli_usage_cmd(psc_cli_cmd_t cmd);
/* A command's word: "bw", "topo", ...; and back: the command a word names, -1 for none (usage.c's one table). */
const char *psc_cli_cmd_name(psc_cli_cmd_t cmd);
int psc_cli_command_of(const char *word);
/* Whether the option --name goes with cmd, as the help lists them (usage.c); 0 with the commands it goes with in with. */
int psc_cli_option_goes_with(psc_cli_cmd_t cmd, const char *name, char *with, size_t len);

/* Parse argv; PSC_EXIT_USAGE with one line in err naming what is accepted. */
int psc_cli_parse(int argc, char **argv, psc_cli_opts_t *o, char *err, size_t errlen);

/* 1 when tables go to stdout (JSON, if any, goes to a file). */
static inline int psc_cli_tables(const psc_cli_opts_t *o)
{
    return !o->json || (o->json_path && o->json_path[0] && o->json_path[0] != '-');
}

int psc_cmd_devices(psc_context_t *ctx, const psc_cli_opts_t *o);
int psc_cmd_bw(psc_context_t *ctx, const psc_cli_opts_t *o);
int psc_cmd_list(const psc_cli_opts_t *o);
/* topo and doctor take ctx NULL with --topology. */
int psc_cmd_topo(psc_context_t *ctx, const psc_cli_opts_t *o);
int psc_cmd_doctor(psc_context_t *ctx, const psc_cli_opts_t *o);
int psc_cmd_nvlink(psc_context_t *ctx, const psc_cli_opts_t *o);
int psc_cmd_lat(psc_context_t *ctx, const psc_cli_opts_t *o);
int psc_cmd_lat_list(const psc_cli_opts_t *o);
/* `list --json`, `bw -l --json`, `lat -l --json`: the tests of a registry (psc_bw_registry(), psc_lat_registry()). */
int psc_cli_list_json(const char *command, const psc_registry_t *reg, const psc_cli_opts_t *o);
int psc_cmd_verify(psc_context_t *ctx, const psc_cli_opts_t *o);
/* copy: psc_copy_bench (or, with --calibrate, psc_copy_calibrate and the file), its tables and JSON. */
int psc_cmd_copy(psc_context_t *ctx, const psc_cli_opts_t *o);
/* ipc: one psc_ipc_run over the command line's workers (a GPU listed twice gets two), its tables and JSON. */
int psc_cmd_ipc(psc_context_t *ctx, const psc_cli_opts_t *o);
/* ipc over these workers' GPUs; with publish, the workers join (psc_ipc_opts_t's publish: one rank per GPU). */
int psc_cmd_ipc_run(psc_context_t *ctx, const psc_cli_opts_t *o, const int *devs, int ndev,
                    int (*publish)(const char *, void *), void *publish_arg);
/* ipc as one rank per GPU of one node under mpirun (cmd_ipc_job.c): every rank calls it; rank 0 prints. */
struct psc_cli_job;
int psc_cmd_ipc_job(const psc_cli_opts_t *o, struct psc_cli_job *job, int *argc, char ***argv);

/* --devices LIST into o->devs (options.c's rules); 0 or PSC_EXIT_USAGE with one line in err. */
int psc_cli_parse_devices(psc_cli_opts_t *o, const char *arg, char *err, size_t errlen);
/* --json[=FILE] (arg NULL: stdout) into o->json and o->json_path; 0 or PSC_EXIT_USAGE for an empty FILE. */
int psc_cli_parse_json(psc_cli_opts_t *o, const char *arg, char *err, size_t errlen);
/*
 * One group of options (option_parse.c): 0, a PSC_EXIT_* code with err set, or PSC_CLI_NOT_MINE for an option
 * not of the group. name is the option as typed, for messages.
 */
enum { PSC_CLI_NOT_MINE = -1 };
typedef int (*psc_cli_option_group_t)(int c, const char *arg, const char *name, psc_cli_opts_t *o, char *err,
                                      size_t errlen);
/* The first of the n groups that takes option c: its answer, or PSC_CLI_NOT_MINE. */
int psc_cli_option_groups(const psc_cli_option_group_t *groups, size_t n, int c, const char *arg, const char *name,
                          psc_cli_opts_t *o, char *err, size_t errlen);
/* The group of -h (o->help) and -V (o->version). */
int psc_cli_help_option(int c, const char *arg, const char *name, psc_cli_opts_t *o, char *err, size_t errlen);
/* A whole number 0 to max, digits only (no sign or space); 0, or -1 and *out untouched. */
int psc_cli_uint(const char *s, unsigned long max, unsigned long *out);
/* A decimal number lo to hi, the whole word (nan and inf fail); 0, or -1 and *out untouched. */
int psc_cli_double(const char *s, double lo, double hi, double *out);
/* `p2pscope coll [COLLECTIVE] [nccl-tests' options]`: parsed apart (coll_options.c: -d is the type there). */
int psc_cli_parse_coll(int argc, char **argv, psc_cli_opts_t *o, char *err, size_t errlen);
void psc_cli_usage_coll(void);
/* One process driving its GPUs (procs NULL), or this process's share of an mpirun job; *ran 1 once the run ended. */
int psc_cmd_coll(psc_context_t *ctx, const psc_cli_opts_t *o);
int psc_cmd_coll_run(psc_context_t *ctx, const psc_cli_opts_t *o, const int *devs, int ndev,
                     const psc_coll_procs_t *procs, int *ran);
int psc_cmd_coll_job(const psc_cli_opts_t *o, struct psc_cli_job *job, int *argc, char ***argv);
/* --explain: findings after the table (tables) and as run's "explain" (run may be NULL). */
int psc_cli_coll_explain(psc_context_t *ctx, const psc_coll_report_t *r, const int *devs, int ndev, int tables,
                         json_t *run);
/* --test-corrupt-offset into the environment, where each worker (a process or rank of its own) reads it. */
int psc_cli_ipc_corrupt_env(const psc_cli_opts_t *o);
/* bw, report, nvlink --watch: the command line's tests with its GPUs, sizes and options in one library call
 * (traffic: psc_nvlink_watch into it; else psc_bw_run_report, its results folded into evidence, or
 * psc_bw_run_suite when evidence is NULL), progress on stderr; NULL after saying why, *rc the exit code (else
 * *rc says whether a result failed). */
psc_bw_suite_t *psc_cli_bw_suite(psc_context_t *ctx, const psc_cli_opts_t *o, psc_facts_t *evidence,
                                 psc_nvlink_traffic_t *traffic, int *rc);

/* `p2pscope nvbandwidth [nvbandwidth's options]`: parsed apart (nvbw_options.c); its help; -l's list; the run. */
int psc_cli_parse_nvbw(int argc, char **argv, psc_cli_opts_t *o, char *err, size_t errlen);
void psc_cli_usage_nvbw(void);
int psc_cmd_nvbw_list(void);
int psc_cmd_nvbw(psc_context_t *ctx, const psc_cli_opts_t *o);

/* `p2pscope p2pbw [p2pBandwidthLatencyTest's options] [--json[=FILE]]`: parsed apart (p2pbw_options.c); its
 * help; the run (cmd_p2pbw.c). */
int psc_cli_parse_p2pbw(int argc, char **argv, psc_cli_opts_t *o, char *err, size_t errlen);
void psc_cli_usage_p2pbw(void);
int psc_cmd_p2pbw(psc_context_t *ctx, const psc_cli_opts_t *o);

/* `p2pscope compare A.json B.json [--fail-above PCT] [--json[=FILE]]`: parsed apart (cmd_compare.c). */
int psc_cli_parse_compare(int argc, char **argv, psc_cli_opts_t *o, char *err, size_t errlen);
/* compare: two JSON runs case by case; no driver. 0, 1 (--fail-above missed), 2 (bad input), 4. */
int psc_cmd_compare(const psc_cli_opts_t *o);

/* `p2pscope render RUN.json (--html FILE | --svg DIR | --csv DIR)...`: parsed apart (render_options.c). */
int psc_cli_parse_render(int argc, char **argv, psc_cli_opts_t *o, char *err, size_t errlen);
/* --html or --svg where this build has no cairo: the one-line refusal (PSC_EXIT_USAGE); else 0. */
int psc_cli_figures_check(const psc_cli_opts_t *o, char *err, size_t errlen);
/* render: the run's page, figures and tables again; no driver. 0, 1 (not written), 2 (bad run), 4. */
int psc_cmd_render(const psc_cli_opts_t *o);
/* check: the node's health (cmd_check.c): 0 healthy, 1 unhealthy, 3 cannot check. */
int psc_cmd_check(psc_context_t *ctx, const psc_cli_opts_t *o);
/* check --fleet (cmd_check_fleet.c): every rank checks its node in a child process; rank 0 gathers the summaries
 * until -T and prints the fleet. Rank 0: 0 every node healthy, 1 any not; the other ranks 0. */
int psc_cmd_check_fleet(const psc_cli_opts_t *o, struct psc_cli_job *job, int *argc, char ***argv);
/* A command that needs the driver (main.c): a context, -d checked, the test hooks set, the command; its exit code. */
int psc_cli_run_on_driver(const psc_cli_opts_t *o);

/* Seconds on CLOCK_MONOTONIC. */
double psc_cli_now(void);
/* Write doc to --json's target; PSC_EXIT_FAILED (PSC_EXIT_NO_MEMORY out of memory) after one line on stderr
 * (a failed stdout: main's line). */
int psc_cli_write_json(const json_t *doc, const psc_cli_opts_t *o);
extern int psc_cli_stdout_errno; /* why JSON could not be written to stdout (0: it was) */
/* 1 when paths x and y name one file (same st_dev and st_ino; both must exist): an output that would replace an
 * input (--json=FILE over compare's run or --expect's file) is refused before anything runs. */
int psc_cli_same_file(const char *x, const char *y);
/* A run's start: the machine into sys, its GPUs' table on stdout (with tables), and the JSON run that begins with
 * them (NULL without --json, or out of memory). */
json_t *psc_cli_run_begin(psc_context_t *ctx, const psc_cli_opts_t *o, const char *command,
                          const psc_device_info_t *info, int n, psc_system_info_t *sys);
/* The run's start, wall_s before now, as the page and the JSON run show it: "2026-11-24T10:00:00Z". */
void psc_cli_started_utc(double wall_s, char *buf, size_t len);
/* "p2pscope report -d 0,1 ...", each word quoted for a shell where it needs it, a file's directories left out
   unless --identify (malloc'd; NULL out of memory). */
char *psc_cli_command_line(const char *command, const psc_cli_opts_t *o);
/* Stamp the start (wall_s before now), the command line, wall time and exit code into the JSON run (NULL: nothing to do) and write it; the exit code after. */
int psc_cli_write_run(json_t *run, const psc_cli_opts_t *o, double wall_s, int rc);

/*
 * --html, --svg, --csv (output_page.c): the run's page, figures and tables, when asked; bw, lat NULL
 * where the command has none, facts NULL outside report (then no topology), findings NULL where the
 * doctor did not run (psc_report_end's, nfindings of them). Returns rc, or
 * the exit code of a failed write after one line on stderr.
 */
int psc_cli_write_page(const psc_cli_opts_t *o, const char *command, const psc_system_info_t *sys,
                       const psc_device_info_t *devs, int ndev, const psc_bw_suite_t *bw, const psc_lat_suite_t *lat,
                       const psc_facts_t *facts, const psc_finding_t *findings, size_t nfindings, double wall_s,
                       int rc);

/* Full report: the facts gathered before the tests (NULL after saying why), their topology after the
 * inventory, findings after the tests (fed by psc_facts_note_bw); psc_report_end hands them to keep (the
 * caller frees them; untouched when the doctor did not run), or frees them when keep is NULL. */
psc_facts_t *psc_report_facts(psc_context_t *ctx);
void psc_report_topology(const psc_facts_t *f, const psc_cli_opts_t *o, json_t *run); /* f NULL: nothing */
int psc_report_end(psc_facts_t *f, const psc_cli_opts_t *o, json_t *run, psc_finding_t **keep,
                   size_t *nkeep); /* number of error findings */

/* Every finding the doctor has for f, *n of them (none cut); NULL after saying why. Free it. */
psc_finding_t *psc_cli_doctor(const psc_facts_t *f, size_t *n);

/* The facts: replayed (--topology), or gathered (examine: psc_facts_examine, with the integrity evidence);
 * NULL after printing why, *rc the exit code. */
psc_facts_t *psc_cli_facts(psc_context_t *ctx, const psc_cli_opts_t *o, int examine, int *rc);

/* --expect (cmd_expect.c, report/expect.h): the file checked at parse time (0, or PSC_EXIT_USAGE with
 * "FILE:LINE: ..." in err; auto passes); the rules loaded before a run (NULL without --expect; else an exit code
 * after one line on stderr); the run checked against them after it: misses and a summary beside the tables (on
 * stderr when stdout holds the JSON), "expect" in run, PSC_EXIT_FAILED for a miss where rc was 0. */
int psc_cli_expect_check_file(const char *arg, char *err, size_t errlen);
int psc_cli_expect_load(psc_context_t *ctx, const psc_cli_opts_t *o, psc_expect_t **out);
int psc_cli_expect_bw(psc_expect_t *e, const psc_bw_suite_t *s, const psc_cli_opts_t *o, json_t *run, int rc);
int psc_cli_expect_lat(psc_expect_t *e, const psc_lat_suite_t *s, const psc_cli_opts_t *o, json_t *run, int rc);
int psc_cli_expect_coll(psc_expect_t *e, const psc_coll_report_t *c, const psc_cli_opts_t *o, json_t *run, int rc);

#endif
