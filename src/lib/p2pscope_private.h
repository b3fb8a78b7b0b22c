/*
 * libp2pscope's private interface: what p2pscope's own tool (src/cli) and
 * report writers (src/report) use beyond the public headers, declared in this
 * one place. Never installed and never exported from the shared library: the
 * tool links the static library, and unit/check_exports fails if one of these
 * names leaves libp2pscope.so. An application has no use for them.
 *
 * Two kinds: the utilities (sizes, statistics, files, nccl-tests' names) that
 * the library uses itself, and the few pieces of the library's own texts the
 * writers print alike (a size, a GPU's CPU mapping, NCCL's version), with the
 * test hooks behind the tool's hidden fault-injection options. And the few
 * compound calls that do, in the library, work the tool once did itself
 * (coll --explain's measurement and reading, report's facts and findings). The tool includes no other
 * header of src/lib (unit/check_private).
 *
 * Threads: everything here that takes no context is pure or reads and writes
 * only what it is given (thread-safe); psc_test_hooks_set, psc_coll_explain
 * and psc_facts_gather_mapped as any call on a context.
 */
#ifndef P2PSCOPE_PRIVATE_H
#define P2PSCOPE_PRIVATE_H

#include <stddef.h>
#include <stdint.h>

#include "p2pscope/bench.h"

struct json_t; /* jansson's */

/* ---------------------------------------------------------------- sizes, statistics, files */

/*
 * Parse a byte count: a whole number with an optional suffix. K/M/G/T and
 * KiB/MiB/GiB/TiB are powers of 1024; KB/MB/GB/TB powers of 1000; B or no
 * suffix is bytes. Accepts 1 byte to 1 TiB. No context: status only
 * (PSC_ERR_INVALID for anything else).
 */
psc_status_t psc_size_parse(const char *text, uint64_t *out);

/* Sizes from min to max (inclusive) multiplying by factor >= 2; returns the count, writes at most cap. */
int psc_size_sweep(uint64_t min, uint64_t max, unsigned factor, uint64_t *out, int cap);

/* "4<sep>KiB", "512<sep>MiB", "1536<sep>B" (units B to TiB) into buf; returns buf. */
const char *psc_size_name(uint64_t bytes, const char *sep, char *buf, size_t len);

/* Statistics of n >= 1 values (the input is not modified). Status only: PSC_ERR_INVALID, PSC_ERR_NO_MEMORY. */
psc_status_t psc_stats_compute(const double *values, unsigned n, psc_stats_t *out);

/*
 * The coefficient of variation of statistics s, in percent: 100 x stddev / mean (the sample stddev, n-1), how much
 * a case's samples spread run to run (nvbandwidth 0.10's figure). 1 with *pct set; 0 (nothing written) without
 * samples or when the mean is not positive, where it means nothing.
 */
int psc_stats_cv_pct(const psc_stats_t *s, double *pct);

/* Percentiles of n >= 1 values (nearest rank); the input is not modified. Status only, as psc_stats_compute. */
psc_status_t psc_percentiles(const double *v, unsigned n, psc_pctl_t *out);

/*
 * Write len bytes to path. A regular file (or a new one) is written through a
 * temporary file beside it, fsynced and renamed, so a reader never sees a
 * partial file; it keeps the old file's mode and owner, a new one gets 0666
 * less the umask (which is never changed). A symlink is followed and its
 * target written that way. /dev/stdout, /dev/stderr and /dev/fd/N are written
 * through the open descriptor itself (a socket too). A device or a FIFO is
 * written in place, never created, replaced or deleted; a FIFO without a
 * reader is an error. errbuf says what failed, in one line.
 */
psc_status_t psc_write_file_atomic(const char *path, const void *data, size_t len, char *errbuf, size_t errlen);

/* Write all len bytes to fd, retrying short writes and EINTR; -1 with errno (EIO for a write of nothing) else. */
int psc_write_all(int fd, const char *p, size_t len);

/*
 * A file someone else made, whole: a regular file only (a FIFO or a device is
 * refused before it is opened), NUL-terminated, malloc'd, in *out and its
 * length in *len; PSC_ERR_IO when missing or unreadable, PSC_ERR_INVALID when
 * not a regular file or larger than max bytes; one line in errbuf.
 */
psc_status_t psc_read_file_bounded(const char *path, size_t max, char **out, size_t *len, char *errbuf,
                                   size_t errlen);

/* ---------------------------------------------------------------- text */

#define PSC_UTF8_CUT ((size_t)-1)

/*
 * Bytes of the valid UTF-8 sequence at s (n bytes left, n >= 1): 1 to 4; 0
 * when s does not start one (a stray byte, an overlong form, a surrogate,
 * beyond U+10FFFF); PSC_UTF8_CUT when it is a sound start that the end of
 * the text cuts short.
 */
size_t psc_utf8_seq(const unsigned char *s, size_t n);

/*
 * Any C string as a JSON string jansson accepts (the library's own rule for
 * every string it writes): a character cut short at the end is dropped, a
 * byte that is not UTF-8 becomes U+FFFD, and the result stops at a character
 * boundary within max bytes (0: no limit). NULL only when out of memory.
 */
struct json_t *psc_json_text(const char *s, size_t max);

/* Insert o[key] = v, or append v to a, stealing v; a failure (out of memory) sets *bad instead of dropping the key. */
void psc_json_set(struct json_t *o, const char *key, struct json_t *v, int *bad);
void psc_json_push(struct json_t *a, struct json_t *v, int *bad);

/* A byte count as JSON: an integer while it fits jansson's, else a real. */
struct json_t *psc_json_u64(uint64_t x);

/*
 * One GPU's CPU mapping in one line: the usable backends ("gdrcopy",
 * "dma-buf, coherent"), or "none (gdrcopy: ...; dma-buf: ...; coherent: ...)"
 * with each reason's first clause; "not recorded" when not known.
 */
const char *psc_gpumap_label(const psc_gpumap_facts_t *g, char *buf, size_t len);

/* "2.28.7" for NCCL's version code 22807, "2.7.8" for 2708 (the form before 2.9), into buf; returns buf. */
const char *psc_nccl_version_string(int code, char *buf, size_t len);

/* 1 for the latency test measured nvbandwidth's way (gpu_to_gpu_chase_sequential), 0 for every other. */
int psc_lat_chase_is_sequential(const psc_lat_test_info_t *ti);

/* ---------------------------------------------------------------- nccl-tests' names */

/* "all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall", "sendrecv"; NULL out of range. */
const char *psc_coll_name(int coll);
/* nccl-tests' program for it: "all_reduce_perf", ...; NULL out of range. */
const char *psc_coll_perf_name(int coll);
/* nccl-tests' type names: "int8" "uint8" "int32" "uint32" "int64" "uint64" "half" "float" "double" "bfloat16"; NULL out of range. */
const char *psc_dtype_name(int dtype);
/* Bytes per element; 0 out of range. */
size_t psc_dtype_size(int dtype);
/* "sum" "prod" "max" "min" "avg"; NULL out of range. */
const char *psc_redop_name(int op);
/* busbw = algbw x this, for nranks ranks: 2(n-1)/n all_reduce; (n-1)/n all_gather, reduce_scatter, alltoall; 1 broadcast, reduce, sendrecv. */
double psc_coll_busbw_factor(int coll, int nranks);
/* nccl-tests' NCCL_TESTS_MIN_BW rule: 1 when an average bus bandwidth is below 0.9 x the bound (then FAILED). */
int psc_coll_busbw_short(double avg_busbw_gbs, double min_busbw_gbs);

/* ---------------------------------------------------------------- the tool's work, done in the library */

#define PSC_COLL_EXPLAIN_FINDINGS 16

/* What coll --explain shows: the link measured beside the run, and the doctor's reading of both. */
typedef struct {
    double link_bw_gbs;          /* the slowest ordered pair's median GB/s (gpu_to_gpu_write_ce, 64 MiB); 0: none */
    char how[256];               /* how link_bw_gbs was measured, or why it was not */
    int facts_incomplete;        /* 1: gathering the doctor's facts failed (facts_error says why); the rules read
                                    what was gathered */
    char facts_error[512];
    size_t nfindings;            /* psc_doctor_coll's findings, at most PSC_COLL_EXPLAIN_FINDINGS */
    psc_finding_t findings[PSC_COLL_EXPLAIN_FINDINGS];
} psc_coll_explain_t;

/*
 * coll --explain on run r over its GPUs devs[0..ndev) in this process: the
 * facts gathered, gpu_to_gpu_write_ce at 64 MiB over every ordered pair of
 * devs (the slowest pair stands for the ring's slowest link; fewer than two
 * GPUs: not measured, how says so), then psc_doctor_coll on the facts, r and
 * that figure. PSC_OK with *out written (a failed measurement or gathering is
 * said in out, not returned); PSC_ERR_NO_MEMORY when the facts cannot be made.
 */
psc_status_t psc_coll_explain(psc_context_t *ctx, const psc_coll_report_t *r, const int *devs, int ndev,
                              psc_coll_explain_t *out);

/*
 * The facts as report shows them before its tests: psc_facts_new, then
 * psc_facts_gather on ctx and psc_facts_probe_gpumap (a page of device
 * memory tried per backend). PSC_OK with a new *out (psc_facts_free it);
 * else the failed step's status with its reason recorded
 * (psc_context_last_error: "out of host memory" when the facts cannot be
 * made), *out untouched.
 */
psc_status_t psc_facts_gather_mapped(psc_context_t *ctx, psc_facts_t **out);

/*
 * psc_doctor's findings on f, most severe first, in a new array (free it) of
 * *n; NULL when out of host memory (then *n is how many were wanted).
 */
psc_finding_t *psc_doctor_findings(const psc_facts_t *f, size_t *n);

/*
 * The facts a JSON run carries (report's "topology": psc_facts_json's text, len bytes, without the hwloc XML)
 * for `p2pscope render`: checked as psc_facts_load checks a JSON recording (name is the place its messages
 * name), with each pair's PCIe path and the source as the run recorded them, not derived again. PSC_OK with a
 * new *out (psc_facts_free it); PSC_ERR_INVALID with one line in errbuf, PSC_ERR_NO_DEVICE for facts of no
 * GPU, PSC_ERR_NO_MEMORY; *out untouched then.
 */
psc_status_t psc_facts_load_run(const char *name, const char *text, size_t len, psc_facts_t **out, char *errbuf,
                                size_t errlen);

/* ---------------------------------------------------------------- p2pscope check's measurements (lib/check) */

#define PSC_NODE_CHECK_VERIFY_SIZE ((1ull << 20) + 13) /* the integrity pass's largest copy (verify's 1 MiB + 13) */
#define PSC_NODE_CHECK_COLL_SMALL (32ull << 10)       /* the all-reduce's two sizes per rank */
#define PSC_NODE_CHECK_COLL_LARGE (256ull << 20)
/* The key paths (bw tests at their default sizes) and latencies; those needing more GPUs than checked are left out. */
#define PSC_NODE_CHECK_BW_TESTS "gpu_to_gpu_write_ce", "gpu_to_gpu_bidir_write_ce", "host_to_gpu_ce", \
                                "gpu_to_host_ce", "gpu_local_ce"
#define PSC_NODE_CHECK_LAT_TESTS "gpu_to_gpu_chase", "host_to_gpu_chase"

typedef struct {
    int ndev;                    /* GPUs in devices; 0: every GPU */
    const int *devices;
    int verify;                  /* 1 (default): the integrity pass */
    int verify_load;             /* 1 (default): with the background load on the other paths */
    int coll;                    /* 1 (default): the all-reduce through NCCL where it loads */
    uint64_t verify_max_size;    /* the integrity pass's largest copy (default PSC_NODE_CHECK_VERIFY_SIZE) */
    uint64_t coll_small, coll_large; /* the all-reduce's sizes (defaults above) */
    uint64_t bw_size;            /* bytes per bandwidth copy; 0 (default): each test's own, the size auto's bounds
                                    name */
} psc_node_check_opts_t;

void psc_node_check_opts_init(psc_node_check_opts_t *o);

/*
 * What one check measured; each stage that could not run has its reason in *_error (coll_skip: not run by
 * design, e.g. no NCCL, coll_absent 1 then) and its results NULL. The facts were gathered first and carry
 * the runs' integrity evidence (the doctor's p2p_corrupts); findings are the doctor's on them, at the end.
 */
typedef struct {
    int ndev, devices[PSC_MAX_GPUS];
    psc_facts_t *facts;
    psc_bw_suite_t *bw;          /* gpu_to_gpu_write_ce, gpu_to_gpu_bidir_write_ce, host_to_gpu_ce,
                                    gpu_to_host_ce, gpu_local_ce at their default sizes, verified */
    psc_lat_suite_t *lat;        /* gpu_to_gpu_chase, host_to_gpu_chase */
    psc_verify_suite_t *verify;  /* every path, copies up to verify_max_size, two patterns, under load */
    psc_coll_report_t *coll;     /* all_reduce, float sum, at coll_small and coll_large */
    char bw_error[512], lat_error[512], verify_error[512], coll_error[512], coll_skip[512];
    int coll_absent;
    psc_finding_t *findings;
    size_t nfindings;
    double facts_s, bw_s, lat_s, verify_s, coll_s, wall_s; /* seconds each stage took, and the whole */
} psc_node_check_t;

/*
 * The check's measurements on ctx's GPUs (opts' devices, 0: all): the facts (psc_facts_gather_mapped), the
 * bandwidth runs folded into them (psc_bw_run_report), the latencies, the integrity pass (its paths folded
 * in too), the all-reduce (not with one GPU, nor without NCCL: coll_skip says so), then the doctor's
 * findings. Reads the machine only. PSC_ERR_INVALID for options out of range, PSC_ERR_NO_DEVICE without a
 * GPU, the facts' status when they cannot be gathered, PSC_ERR_NO_MEMORY; a stage that fails otherwise is
 * recorded in the result, PSC_OK. *out (psc_node_check_free) only on success.
 */
psc_status_t psc_node_check_run(psc_context_t *ctx, const psc_node_check_opts_t *opts, psc_node_check_t **out);
void psc_node_check_free(psc_node_check_t *c); /* NULL: nothing */

/* ---------------------------------------------------------------- p2pbw: cuda-samples' p2pBandwidthLatencyTest */

/*
 * `p2pscope p2pbw`'s measurements, the figures of cuda-samples' p2pBandwidthLatencyTest taken by p2pscope's
 * tests on every GPU: the local copy (the matrices' diagonal), GPU -> GPU with peer access off (staged through
 * the host) one way and both ways, with it on by copy engine (SM kernels with sm_copy) writing, reading with
 * p2p_read, both ways writing; the small copies' latency (16 B among their sizes) inside a GPU, with peer
 * access off and, but with sm_copy (no SM small-copy test), on. Tests that need more GPUs than there are
 * are left out (one GPU: the diagonals alone).
 */
typedef struct {
    int sm_copy;                       /* P2P-enabled bandwidth by SM copy kernels, else copy engines */
    int p2p_read;                      /* also the P2P-enabled read bandwidth (the destination GPU issues) */
    const psc_measure_opts_t *measure; /* the bandwidth cases' (size, samples, ...); NULL: the defaults */
    psc_bw_suite_progress_fn progress; /* bandwidth progress as psc_bw_run_suite's; may be NULL */
    void *user;                        /* given to progress */
} psc_p2pbw_opts_t;

typedef struct {
    int ndev;                                    /* every GPU of the context */
    int can_access[PSC_MAX_GPUS][PSC_MAX_GPUS];  /* cuDeviceCanAccessPeer; 1 on the diagonal */
    psc_bw_suite_t *bw;                          /* the bandwidth tests, in psc_p2pbw_bw_tests' order */
    psc_lat_suite_t *lat;                        /* the latency tests, in psc_p2pbw_lat_tests' order */
} psc_p2pbw_t;

/* The bandwidth (latency) tests' names the options run on ndev GPUs, in order, at most cap; their count. */
int psc_p2pbw_bw_tests(const psc_p2pbw_opts_t *o, int ndev, const char **names, int cap);
int psc_p2pbw_lat_tests(const psc_p2pbw_opts_t *o, int ndev, const char **names, int cap);

/*
 * Run them: the connectivity, the bandwidth suite, the latency suite. Refusals as psc_bw_run_suite's and
 * psc_lat_run_suite's (recorded); PSC_ERR_INVALID without options or out; PSC_ERR_NO_DEVICE without a GPU;
 * PSC_ERR_NO_MEMORY. Failed and waived cases are results. *out (psc_p2pbw_free) only on success.
 */
psc_status_t psc_p2pbw_run(psc_context_t *ctx, const psc_p2pbw_opts_t *o, psc_p2pbw_t **out);
void psc_p2pbw_free(psc_p2pbw_t *r); /* NULL: nothing */

/* ---------------------------------------------------------------- test hooks (fault injection) */

typedef enum { PSC_FAULT_NONE, PSC_FAULT_FLIP, PSC_FAULT_DROP, PSC_FAULT_MISPLACE } psc_fault_t;

typedef struct {
    /* psc_bw_run: flip the destination byte at this offset after each timed sample's copies, before
     * verification (which must then be on). Negative: off. */
    int64_t corrupt_offset;
    /* psc_verify_run: after each copy of fault_size bytes (0: every copy), damage the first destination:
     * flip the byte at fault_offset, drop fault_len bytes there, or write them fault_len further on. */
    psc_fault_t fault;
    uint64_t fault_offset, fault_len, fault_size;
    /* psc_allreduce_tune, where its group has no skew of its own (psc__ar_tune_skew): each median measured (way 0
     * the kernels, 1 NCCL, 2 the copy engines, plus 4 for the reduce-scatter's, 8 for the all-gather's; us per call)
     * passes through it, so a test of a caller that makes and tunes the group itself (coll) can make any way the
     * faster one. NULL: none. */
    double (*ar_tune_skew)(int way, uint64_t bytes, double us, void *arg);
    void *ar_tune_skew_arg;
} psc_test_hooks_t;

/* No hook: corrupt_offset -1, no fault. */
void psc_test_hooks_default(psc_test_hooks_t *h);

/* Install hooks on a context (NULL: none); PSC_ERR_INVALID for a fault kind out of range. */
psc_status_t psc_test_hooks_set(psc_context_t *ctx, const psc_test_hooks_t *h);

#endif
