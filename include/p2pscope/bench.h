/*
 * p2pscope's benchmark API: the registries of bandwidth and latency tests,
 * their cases, options and runs, the integrity runs and their background
 * load, whole suites, psc_copy's calibration and benchmark, the ipc and coll
 * (nccl-tests) runs. Exported under its own version node, P2PSCOPE_BENCH_1
 * (<p2pscope.h>'s functions are under P2PSCOPE_0); conventions as in
 * <p2pscope.h>. Utilities (sizes, statistics, files, nccl-tests' names) are
 * not part of it: they are private to p2pscope's own tool.
 *
 * Threads: the registries and the name functions are thread-safe; everything
 * that takes a context (the case generators too, which record a refusal's
 * reason in it) is used by one thread at a time per context; psc_doctor_coll
 * and psc_facts_note_* are pure (thread-safe for distinct facts).
 */
#ifndef P2PSCOPE_BENCH_H
#define P2PSCOPE_BENCH_H

#include "p2pscope.h"

#ifdef __cplusplus
extern "C" {
#endif
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/* ---------------------------------------------------------------- statistics in the results */

typedef struct {
    unsigned n;
    double median, min, max, mean, stddev; /* stddev: sample (n-1) */
} psc_stats_t;

/* ---------------------------------------------------------------- bandwidth */

#define PSC_ALL (-2)  /* in a case's summary: every other GPU */

typedef enum {
    PSC_HOSTMEM_PINNED,      /* cuMemHostAlloc: page-locked, mapped */
    PSC_HOSTMEM_PAGEABLE,    /* plain malloc'd memory */
    PSC_HOSTMEM_WC,          /* pinned write-combined */
    PSC_HOSTMEM_REGISTERED,  /* malloc'd memory page-locked with cuMemHostRegister */
    PSC_HOSTMEM_KIND_COUNT
} psc_hostmem_t;
const char *psc_hostmem_name(psc_hostmem_t kind); /* "pinned", "pageable", ... */

typedef enum {
    PSC_SHAPE_PAIR,          /* one GPU -> another GPU */
    PSC_SHAPE_PAIR_BIDIR,    /* both directions between two GPUs at once */
    PSC_SHAPE_P2P_OFF,       /* GPU -> GPU with peer access off: staged through the host */
    PSC_SHAPE_LOCAL,         /* inside one GPU */
    PSC_SHAPE_H2D,           /* host -> GPU */
    PSC_SHAPE_D2H,           /* GPU -> host */
    PSC_SHAPE_HOST_BIDIR,    /* host -> GPU and GPU -> host at once */
    PSC_SHAPE_ALL_TO_ONE,    /* every other GPU -> one GPU, at once */
    PSC_SHAPE_ONE_TO_ALL,    /* one GPU -> every other GPU, at once */
    PSC_SHAPE_RING,          /* every GPU -> the next one, at once */
    PSC_SHAPE_HOST_TO_ALL,   /* host -> every GPU, at once */
    PSC_SHAPE_ALL_TO_HOST,   /* every GPU -> host, at once */
    PSC_SHAPE_ALL_HOST_BIDIR, /* host <-> every GPU, both directions, at once */
    PSC_SHAPE_P2P_OFF_BIDIR  /* both directions between two GPUs at once, peer access off: staged through the host */
} psc_shape_t;

typedef int psc_bw_test_t; /* index into the test registry */

typedef enum {
    PSC_BW_ACCESS_COPY,  /* the test copies: it reads the source and writes the destination */
    PSC_BW_ACCESS_READ,  /* an SM kernel only reads the buffer (its sum is checked); nothing is written */
    PSC_BW_ACCESS_WRITE, /* an SM kernel only writes the buffer (checked after); nothing is read */
    PSC_BW_ACCESS_BULK   /* an SM kernel copies with bulk copies (TMA, compute capability 9.0 and newer) */
} psc_bw_access_t;

typedef struct {
    const char *name;          /* "gpu_to_gpu_read_ce", ... */
    const char *title;         /* one line for a table title: direction, engine, issuer */
    const char *description;   /* one line for `bw -l` */
    psc_shape_t shape;         /* the traffic: which endpoints copy to which, at once */
    psc_engine_t engine;
    int by_reader;             /* GPU -> GPU: the destination GPU issues (read); else the source (write) */
    psc_hostmem_t hostmem;     /* host tests */
    int min_gpus;
    psc_bw_access_t access;    /* SM tests that only read or only write, or copy by TMA; the others copy */
} psc_bw_test_info_t;

int psc_bw_test_count(void);
const psc_bw_test_info_t *psc_bw_test_info(psc_bw_test_t test); /* NULL when out of range */
const char *psc_bw_test_name(psc_bw_test_t test);
const char *psc_bw_test_title(psc_bw_test_t test);
/* Parses a name of psc_bw_test_name(); PSC_ERR_INVALID when unknown. */
psc_status_t psc_bw_test_from_name(const char *name, psc_bw_test_t *out);
/* Tests whose name matches a shell glob ("*_sm", "host_to_gpu_*"); returns the count, writes at most cap. */
int psc_bw_test_match(const char *glob, psc_bw_test_t *out, int cap);

#define PSC_MAX_XFERS 64

typedef struct {
    int src, dst;   /* GPU index or PSC_HOST */
    int issuer;     /* GPU whose stream runs the copy (its copy engine or SMs) */
} psc_xfer_t;

typedef struct {
    psc_bw_test_t test;
    int src, dst, issuer;      /* the case in one line: endpoints, PSC_ALL for "every other GPU" */
    int nxfer;                 /* transfers that run at the same time */
    psc_xfer_t xfer[PSC_MAX_XFERS];
} psc_bw_case_t;

/*
 * The cases of one test over the given GPUs (all when ndev is 0): an ordered
 * pair per case for GPU->GPU tests, an unordered pair for both directions,
 * one per GPU for host and local tests and for all-to-one / one-to-all
 * (that GPU is the one), one for a ring or all GPUs with the host. *n is set
 * to the count; at most cap are written (cases may be NULL with cap 0).
 */
psc_status_t psc_bw_cases(const psc_context_t *ctx, psc_bw_test_t test,
                          const int *devices, int ndev,
                          psc_bw_case_t *cases, size_t cap, size_t *n);

#define PSC_MAX_SAMPLES 64

typedef struct {
    size_t struct_size;     /* set by psc_measure_opts_default(); fields may be added after the last */
    uint64_t size;          /* bytes per copy */
    unsigned iterations;    /* copies per timed sample */
    unsigned warmup;        /* untimed samples first */
    unsigned samples;       /* minimum timed samples, 1..PSC_MAX_SAMPLES */
    unsigned max_samples;   /* keep sampling up to this until the median is stable; = samples: fixed */
    double stable_pct;      /* stable: the last three medians within this many percent */
    double gate_timeout_ms; /* how long the gate kernel waits for the host */
    uint64_t seed;          /* pattern seed; each case derives its own */
    int host_node;          /* NUMA node for host memory; -1: the node nearest each GPU */
    int verify;             /* 1 (default): check every destination after every sample; 0: do not */
    int reserved0;          /* 0; fills the struct to 8 bytes, so a field added later changes struct_size */
} psc_measure_opts_t;

/* The defaults, struct_size included; call it through the macro, which passes the caller's struct size. */
void psc_measure_opts_init(psc_measure_opts_t *opts, size_t struct_size);
#define psc_measure_opts_default(opts) psc_measure_opts_init((opts), sizeof(*(opts)))
/* PSC_ERR_INVALID with a line in errbuf naming the accepted range. */
psc_status_t psc_measure_opts_check(const psc_measure_opts_t *opts, char *errbuf, size_t errlen);

typedef enum { PSC_RESULT_PASSED, PSC_RESULT_FAILED, PSC_RESULT_WAIVED } psc_result_status_t;
const char *psc_result_status_string(psc_result_status_t s); /* "passed", ... */

typedef struct {
    unsigned checked;           /* samples whose destinations were checked */
    unsigned bad_samples;       /* of those, how many had wrong bytes */
    uint64_t bad_bytes;         /* wrong bytes over all checked samples */
    int64_t first_bad_offset;   /* byte offset of the first wrong byte seen; -1 none */
    uint8_t expected, found;    /* at first_bad_offset */
} psc_verify_report_t;

typedef struct {
    psc_bw_case_t c;
    psc_result_status_t status;
    char reason[512];           /* why failed or waived; "" when passed */
    uint64_t size;              /* bytes per copy */
    uint64_t bytes_per_sample;  /* size x iterations x transfers */
    int host_node;              /* NUMA node the host buffers were bound to; -1 none or unknown */
    unsigned iterations;        /* copies per transfer per sample */
    int gated;                  /* 1 timed behind gate kernels; 0 without (pageable memory blocks the host) */
    unsigned nsamples;          /* timed samples taken */
    double samples_gbs[PSC_MAX_SAMPLES]; /* aggregate; 1 GB = 1e9 bytes */
    psc_stats_t stats;          /* of the aggregate */
    double xfer_gbs[PSC_MAX_XFERS]; /* median of each transfer alone */
    psc_verify_report_t verify;
    double run_ms;              /* wall time of the whole case: setup, samples, checks */
    double verify_ms;           /* of that, preparing destinations and checking them */
} psc_bw_result_t;

/*
 * Run one case: fill every source with a pattern, then per sample hold each
 * issuing stream on a gate kernel while the copies are queued, time each
 * stream with its own events, and check every destination against the
 * pattern. Samples alternate between two sources with different patterns
 * (device sources; host sources poison the destination instead), so each
 * check proves the sample's own copy landed. The aggregate of a sample is all bytes
 * over the longest stream's time. A result that failed or was waived still
 * returns PSC_OK; errors are for bad arguments.
 */
psc_status_t psc_bw_run(psc_context_t *ctx, const psc_bw_case_t *c,
                        const psc_measure_opts_t *opts, psc_bw_result_t *out);

/* Release the buffers cached between cases (they are also released with the context). */
void psc_bw_release_buffers(psc_context_t *ctx);

/* ---------------------------------------------------------------- latency */

typedef enum {
    PSC_LAT_CHASE, /* one GPU thread follows a pointer chain through memory: ns per dependent load */
    PSC_LAT_FLAG,  /* write a flag into the other side's memory, wait for its answer: one way = round trip / 2 */
    PSC_LAT_COPY,  /* back-to-back small copy-engine copies: GPU time per copy, CPU submission time per call */
    PSC_LAT_SYNC,  /* a synchronous cuMemcpy per call, timed by the CPU */
    PSC_LAT_MAPCOST, /* psc_gpumap_map and psc_gpumap_unmap per call by size, timed by the CPU (gdrcopy's apiperf) */
} psc_lat_method_t;

/*
 * PSC_LAT_GPUMAP: the GPU's own memory mapped for the CPU (psc_gpumap_map): a flag there that the CPU
 * writes and reads through the mapping (flag), the CPU's copies through it by size beside a synchronous
 * cuMemcpy of the same size (sync, gdrcopy's copylat), or the cost of mapping (mapcost). Waived, with
 * each backend's reason, on a GPU no backend maps.
 */
typedef enum { PSC_LAT_LOCAL, PSC_LAT_PEER, PSC_LAT_HOST, PSC_LAT_GPUMAP } psc_lat_where_t;

typedef int psc_lat_test_t;

typedef struct {
    const char *name, *title, *description;
    psc_lat_method_t method;
    psc_lat_where_t where;   /* where the memory (or the other side) is, seen from the issuing GPU */
    int p2p_off;             /* copy: peer access off, staged through the host */
    int to_gpu;              /* sync: host -> GPU; else GPU -> host */
    psc_hostmem_t hostmem;   /* host memory kind */
    uint64_t working_set;    /* chase: bytes the chain spans */
    int min_gpus;
    int tma;                 /* chase: each hop a bulk copy (TMA) into shared memory; compute capability 9.0+ */
    int by_dst;              /* copy: issued by the receiving GPU (it reads the peer's memory); else by the source */
    int sm;                  /* copy: each copy a kernel launch on the issuing GPU's SMs; else the copy engine */
} psc_lat_test_info_t;

int psc_lat_test_count(void);
const psc_lat_test_info_t *psc_lat_test_info(psc_lat_test_t t); /* NULL out of range */
psc_status_t psc_lat_test_from_name(const char *name, psc_lat_test_t *out);
int psc_lat_test_match(const char *glob, psc_lat_test_t *out, int cap);

/*
 * The test registries (bandwidth, latency) seen alike, for listings: each
 * entry's name, title, description and minimum GPU count. Entry i is test i.
 */
typedef struct psc_registry psc_registry_t;
typedef struct {
    const char *name, *title, *description;
    int min_gpus;
} psc_registry_entry_t;

const psc_registry_t *psc_bw_registry(void);
const psc_registry_t *psc_lat_registry(void);
int psc_registry_count(const psc_registry_t *reg);
/* PSC_ERR_INVALID when reg or out is NULL or i is out of range (0 to count-1). */
psc_status_t psc_registry_entry(const psc_registry_t *reg, int i, psc_registry_entry_t *out);

typedef struct {
    psc_lat_test_t test;
    int src, dst;   /* memory owner -> reader for a chase; initiator -> responder for a flag; copy endpoints */
    int issuer;     /* the GPU that runs the kernel or issues the copies */
} psc_lat_case_t;

psc_status_t psc_lat_cases(const psc_context_t *ctx, psc_lat_test_t test, const int *devices, int ndev,
                           psc_lat_case_t *cases, size_t cap, size_t *n);

/* Percentiles of n >= 1 values (nearest rank). */
typedef struct {
    unsigned n;
    double min, p50, p90, p99, max, mean;
} psc_pctl_t;

typedef struct {
    size_t struct_size;      /* set by psc_lat_opts_default() */
    unsigned samples;        /* chase: timed chains; flag: round trips; copy: samples per size; sync: calls per size */
    uint64_t hops;           /* chase: loads per timed chain */
    unsigned copies;         /* copy: back-to-back copies per sample */
    double timeout_ms;       /* flag: how long a side waits for the other */
} psc_lat_opts_t;
void psc_lat_opts_init(psc_lat_opts_t *o, size_t struct_size);
#define psc_lat_opts_default(o) psc_lat_opts_init((o), sizeof(*(o)))

#define PSC_LAT_MAX_SIZES 8
#define PSC_LAT_KEEP 512     /* raw samples kept per size for the distribution in JSON */

typedef struct {
    psc_lat_case_t c;
    psc_result_status_t status;
    char reason[512];
    unsigned nsizes;                         /* 1 for chase and flag tests */
    uint64_t sizes[PSC_LAT_MAX_SIZES];       /* bytes per copy; chase: working set; flag: 4 */
    psc_pctl_t lat[PSC_LAT_MAX_SIZES];       /* ns: per load, one way, GPU time per copy, or per call */
    psc_pctl_t submit[PSC_LAT_MAX_SIZES];    /* copy tests: CPU time to submit one copy, ns; gpumap sync tests:
                                                a synchronous cuMemcpy of the same size; mapcost: the unmap */
    unsigned nkept[PSC_LAT_MAX_SIZES];
    float kept[PSC_LAT_MAX_SIZES][PSC_LAT_KEEP]; /* raw samples, ns, in the order taken */
    double ns_per_cycle;                     /* GPU clock calibration of this run (chase, flag) */
} psc_lat_result_t;

/* Run one latency case. Failed or waived results still return PSC_OK. */
psc_status_t psc_lat_run(psc_context_t *ctx, const psc_lat_case_t *c, const psc_lat_opts_t *o, psc_lat_result_t *out);

/* The timers: %globaltimer's smallest step on GPU g and CLOCK_MONOTONIC's resolution, both in ns. */
psc_status_t psc_timer_resolution(psc_context_t *ctx, int gpu, double *gpu_ns, double *host_ns);

/* ---------------------------------------------------------------- integrity */

/*
 * Background traffic ("load") for verify: copy-engine copies kept running on
 * the machine's other paths (host -> each GPU, each GPU -> host, each GPU ->
 * the next GPU) while a path's copies are made and checked. The load's own
 * destinations are checked each time a verify case starts, and at the stop.
 */
typedef struct psc_load psc_load_t;

#define PSC_LOAD_MAX_PATHS (3 * PSC_MAX_GPUS)

typedef struct {
    int src, dst;               /* GPU index, or PSC_HOST */
    uint64_t copies;            /* copies made */
    uint64_t bytes_moved;
    uint64_t bytes_checked;     /* destinations and sources */
    uint64_t bad_bytes;
    int64_t first_bad_offset;   /* -1 none */
    uint8_t expected, found;
} psc_load_path_report_t;

/* Set up the load over `devices` (ndev of them; all when ndev is 0). Nothing runs until verify pumps it. */
psc_status_t psc_load_start(psc_context_t *ctx, const int *devices, int ndev, psc_load_t **out);
/* The paths' reports so far; returns the number of paths, writes at most cap. */
int psc_load_report(const psc_load_t *load, psc_load_path_report_t *out, int cap);
/*
 * Wait for the copies in flight, check them, write the final reports (as
 * psc_load_report), free the load. The reports are written even when the
 * final check fails: they say which path went wrong.
 */
psc_status_t psc_load_stop(psc_load_t *load, psc_load_path_report_t *out, int cap, int *n);

#define PSC_PATTERN_KINDS 6 /* random, address, walking ones, walking zeros, zero, ones */
const char *psc_pattern_kind_name(int kind);

typedef struct {
    size_t struct_size;     /* set by psc_verify_opts_default() */
    uint64_t max_size;      /* largest copy (default 256 MiB + 7; pageable host memory stops at 1 MiB + 13) */
    unsigned pattern_mask;  /* bit k: pattern kind k (default: all) */
    int unaligned;          /* also copy between unaligned source and destination offsets (default 1) */
    uint64_t seed;          /* recorded in the results; each copy derives its own */
    psc_load_t *load;       /* background traffic kept running while copying and checking; NULL none */
} psc_verify_opts_t;

void psc_verify_opts_init(psc_verify_opts_t *o, size_t struct_size);
#define psc_verify_opts_default(o) psc_verify_opts_init((o), sizeof(*(o)))

typedef struct {
    psc_bw_case_t c;
    psc_result_status_t status;
    char reason[512];
    uint64_t copies;             /* copies made and checked */
    uint64_t bytes_copied;
    uint64_t bytes_checked;      /* destination ranges, the canaries around them, sources and sentinels */
    uint64_t bad_bytes;
    unsigned bad_copies;
    struct {                     /* the first wrong byte seen */
        int pattern, xfer;
        uint64_t size, src_off, dst_off;
        int64_t offset;          /* from the start of the destination range; negative: before it */
        uint8_t expected, found;
        int where;               /* 0 destination range, 1 canary, 2 source, 3 sentinel */
    } first;
} psc_verify_result_t;

/*
 * Copy and check every size, offset and pattern of the plan over one case's
 * transfers (any bandwidth test's case: every engine and memory kind), with
 * canaries around each destination range, the sources re-checked, and
 * sentinel buffers on the GPUs involved that must stay untouched. Checks run
 * on the GPU (the CPU for pageable memory). Failed results return PSC_OK.
 */
psc_status_t psc_verify_run(psc_context_t *ctx, const psc_bw_case_t *c, const psc_verify_opts_t *o,
                            psc_verify_result_t *out);

/* ---------------------------------------------------------------- evidence for the doctor, stress, whole tests */

/*
 * Integrity evidence for the doctor from runs' results (psc_facts_check_integrity
 * in <p2pscope.h> makes its own). psc_doctor's p2p_corrupts rule reads
 * pair[i][j].integrity; these fill it. Pure: thread-safe for distinct facts.
 *
 * The fold, one rule for every kind of result: on each GPU -> GPU transfer of
 * a result's case (source and destination two different GPUs of the facts),
 * wrong bytes set pair[src][dst].integrity to 0; a passed result sets it to 1
 * unless it is already 0. A result that failed without wrong bytes, or was
 * waived, changes nothing. Wrong bytes are not traced to one transfer of a
 * concurrent case: every GPU -> GPU transfer of that case is marked.
 */
void psc_facts_note_bw(psc_facts_t *facts, const psc_bw_result_t *results, size_t n);
void psc_facts_note_verify(psc_facts_t *facts, const psc_verify_result_t *results, size_t n);

/*
 * The verify stress run (benchmark API): psc_verify_run over every case,
 * pass after pass, each pass with its own seed (opts->seed, the pass number
 * mixed in; pass 0 uses opts->seed itself). The first pass covers every case;
 * with seconds > 0 later passes run until that many seconds have passed
 * since the start (checked before each case), and the run stops early after a
 * pass in which no case could copy anything (another pass would fail the same
 * way at once). seconds 0: one pass.
 */
typedef struct {
    psc_verify_result_t last;    /* the last pass's result, or the first failed one */
    uint64_t copies, bytes_checked, bad_bytes; /* summed over the passes */
    unsigned passes;             /* passes that checked this case */
} psc_verify_path_sum_t;

typedef struct {
    double elapsed_s;            /* since the stress run began */
    uint64_t bytes_checked;      /* over every case and pass so far */
    unsigned pass;               /* 1 for the first */
    size_t index, count;         /* the case (0-based) among count */
    const psc_bw_case_t *c;
    const psc_verify_result_t *result; /* NULL: the case is about to run; else what it gave */
} psc_verify_progress_t;

/* Called before and after each case, on the calling thread. */
typedef void (*psc_verify_progress_fn)(const psc_verify_progress_t *progress, void *user);

typedef struct {
    unsigned passes;             /* passes begun */
    unsigned idle_pass;          /* the pass in which no case could run, which ended the run; 0 none */
    uint64_t bytes_checked;      /* over every case and pass */
} psc_verify_stress_info_t;

typedef struct {
    size_t struct_size;               /* set by psc_verify_stress_opts_default(); fields may be added after the last */
    const psc_verify_opts_t *verify;  /* each copy's (psc_verify_opts_default); NULL: the defaults */
    double seconds;                   /* run passes until this many seconds have passed; 0: one pass */
    psc_verify_progress_fn progress;  /* may be NULL */
    void *user;                       /* given to progress */
} psc_verify_stress_opts_t;

/* The defaults (the verify defaults, one pass, no progress); call it through the macro. */
void psc_verify_stress_opts_init(psc_verify_stress_opts_t *o, size_t struct_size);
#define psc_verify_stress_opts_default(o) psc_verify_stress_opts_init((o), sizeof(*(o)))

/*
 * Run the stress over cases[0..n) with opts (opts->verify->load is pumped as
 * by psc_verify_run); sums[k] is case k's record (n of them), info (may be
 * NULL) the run's. A case psc_verify_run refuses is a failed result, "invalid
 * case". PSC_ERR_INVALID, before anything runs or is written, for a missing
 * argument, n 0, seconds negative or not a number, or options (either) not
 * set up by their default macro. Uses ctx: one thread at a time.
 */
psc_status_t psc_verify_stress(psc_context_t *ctx, const psc_bw_case_t *cases, size_t n,
                               const psc_verify_stress_opts_t *opts, psc_verify_path_sum_t *sums,
                               psc_verify_stress_info_t *info);

/* The fold above over a stress run's records: a case's summed wrong bytes, and "passed" when every pass passed. */
void psc_facts_note_verify_sums(psc_facts_t *facts, const psc_verify_path_sum_t *sums, size_t n);

/*
 * Every case of one test over the GPUs of opts (as psc_bw_cases or
 * psc_lat_cases), run in order with the run's options of opts: res[k] is
 * case k's result, *n how many ran (the first cap cases at most). progress
 * (may be NULL) is called on the calling thread before each case (result
 * NULL) and after it (its result). A case the run refuses is a failed
 * result, the context's last error its reason (bandwidth and latency alike).
 * PSC_ERR_INVALID for a test or GPU list the case generator refuses or a
 * missing argument, options not set up by their default macro,
 * PSC_ERR_NO_MEMORY; nothing runs then.
 */
typedef void (*psc_bw_progress_fn)(const psc_bw_case_t *c, const psc_bw_result_t *result, void *user);
typedef struct {
    size_t struct_size;               /* set by psc_bw_run_test_opts_default(); fields may be added after the last */
    int ndev;                         /* GPU indexes in devices; 0: every GPU */
    int reserved0;                    /* 0 */
    const int *devices;
    const psc_measure_opts_t *measure; /* each case's (psc_measure_opts_default); NULL: the defaults */
    psc_bw_progress_fn progress;      /* may be NULL */
    void *user;                       /* given to progress */
} psc_bw_run_test_opts_t;
void psc_bw_run_test_opts_init(psc_bw_run_test_opts_t *o, size_t struct_size);
#define psc_bw_run_test_opts_default(o) psc_bw_run_test_opts_init((o), sizeof(*(o)))
psc_status_t psc_bw_run_test(psc_context_t *ctx, psc_bw_test_t test, const psc_bw_run_test_opts_t *opts,
                             psc_bw_result_t *res, size_t cap, size_t *n);

typedef void (*psc_lat_progress_fn)(const psc_lat_case_t *c, const psc_lat_result_t *result, void *user);
typedef struct {
    size_t struct_size;               /* set by psc_lat_run_test_opts_default(); fields may be added after the last */
    int ndev;                         /* GPU indexes in devices; 0: every GPU */
    int reserved0;                    /* 0 */
    const int *devices;
    const psc_lat_opts_t *lat;        /* each case's (psc_lat_opts_default); NULL: the defaults */
    psc_lat_progress_fn progress;     /* may be NULL */
    void *user;                       /* given to progress */
} psc_lat_run_test_opts_t;
void psc_lat_run_test_opts_init(psc_lat_run_test_opts_t *o, size_t struct_size);
#define psc_lat_run_test_opts_default(o) psc_lat_run_test_opts_init((o), sizeof(*(o)))
psc_status_t psc_lat_run_test(psc_context_t *ctx, psc_lat_test_t test, const psc_lat_run_test_opts_t *opts,
                              psc_lat_result_t *res, size_t cap, size_t *n);

/* ---------------------------------------------------------------- whole suites: what bw, report, lat and verify run */

/*
 * A bandwidth suite: every case of each test over the GPUs, at each size, as
 * psc_bw_suite_opts_t says (tests, GPUs, sizes, measure options, progress).
 * Everything is checked before anything runs, and refused with the reason
 * recorded: PSC_ERR_INVALID for a test index or GPU out of range (accepted 0
 * to count-1), a bad sweep (1 B <= min <= max, factor >= 2, at most
 * PSC_SUITE_MAX_SIZES sizes), options psc_measure_opts_check refuses or a
 * host_node beyond the machine's NUMA nodes (accepted -1, or 0 to
 * numa_nodes-1); PSC_ERR_UNSUPPORTED when a named test needs more GPUs
 * than there are ("X needs at least N GPUs; M selected" or "... M on this
 * machine"); options not set up by psc_bw_suite_opts_default;
 * PSC_ERR_NO_MEMORY. A test of the whole registry that has no
 * case on these GPUs is kept, with no results. Failed and waived results are
 * results: the call returns PSC_OK. *out is written only on success; free it
 * with psc_bw_suite_free. progress (may be NULL) is called on the calling
 * thread before each case (result NULL) and after it.
 */
#define PSC_SUITE_MAX_SIZES 48 /* a sweep of 1 B to 1 TiB by 2 has 41 */

typedef struct {
    size_t index, count;              /* this case among every case of the suite (0-based), and their number */
    const psc_bw_case_t *c;
    const psc_bw_result_t *result;    /* NULL: the case is about to run; else what it gave */
} psc_bw_suite_progress_t;
typedef void (*psc_bw_suite_progress_fn)(const psc_bw_suite_progress_t *progress, void *user);

typedef struct {
    int test;                         /* psc_bw_test_t or psc_lat_test_t */
    size_t first, n;                  /* its results: results[first .. first+n), size after size; n 0: no case */
} psc_suite_test_t;

typedef struct {
    int ndev, devices[PSC_MAX_GPUS];  /* the GPUs used */
    int nsizes;
    uint64_t sizes[PSC_SUITE_MAX_SIZES]; /* in the order run; 0: each test's own size */
    int ntests;
    psc_suite_test_t *tests;          /* in the order run */
    size_t nresults, nfailed;         /* nfailed: results with status PSC_RESULT_FAILED */
    psc_bw_result_t *results;
    uint64_t payload_bytes;           /* bytes the passed cases copied, warm-up samples included */
} psc_bw_suite_t;

typedef struct {
    size_t struct_size;               /* set by psc_bw_suite_opts_default(); fields may be added after the last */
    const psc_bw_test_t *tests;       /* ntests of them; ntests 0: every test of the registry, in order */
    int ntests;
    int ndev;                         /* GPU indexes in devices; 0: every GPU */
    const int *devices;
    uint64_t sweep_min, sweep_max;    /* sweep_min 0: one size, measure->size (0: each test's own); else the */
    unsigned sweep_factor;            /* sizes from sweep_min to sweep_max (inclusive), each sweep_factor times */
    int reserved0;                    /* the last; reserved0: 0 */
    const psc_measure_opts_t *measure; /* each case's (psc_measure_opts_default); NULL: the defaults */
    psc_bw_suite_progress_fn progress; /* may be NULL */
    void *user;                       /* given to progress */
} psc_bw_suite_opts_t;

/* The defaults (every test, every GPU, one size, the measure defaults, no progress); call it through the macro. */
void psc_bw_suite_opts_init(psc_bw_suite_opts_t *o, size_t struct_size);
#define psc_bw_suite_opts_default(o) psc_bw_suite_opts_init((o), sizeof(*(o)))

psc_status_t psc_bw_run_suite(psc_context_t *ctx, const psc_bw_suite_opts_t *opts, psc_bw_suite_t **out);
void psc_bw_suite_free(psc_bw_suite_t *suite); /* NULL: nothing */

/*
 * `report`'s run: psc_bw_run_suite with the same options, refusals and
 * results, then its results folded into evidence by psc_facts_note_bw (the
 * doctor's integrity evidence). evidence: facts gathered on ctx before the
 * run, or NULL for none (then this is psc_bw_run_suite). evidence is changed
 * only on success.
 */
psc_status_t psc_bw_run_report(psc_context_t *ctx, const psc_bw_suite_opts_t *opts, psc_facts_t *evidence,
                               psc_bw_suite_t **out);

/*
 * `nvlink --watch`: which links carried a bandwidth suite. Every GPU's
 * counters (psc_nvlink_snapshot), psc_bw_run_suite over every GPU with one
 * size (opts->measure->size) and the tests of opts (ntests 0:
 * gpu_to_gpu_write_ce alone), the counters again, and *traffic their
 * difference (psc_nvlink_traffic). Refusals as psc_bw_run_suite's (recorded),
 * and PSC_ERR_INVALID for a missing traffic or options that name GPUs or a
 * sweep (accepted ndev 0 and sweep_min 0). *out (free with psc_bw_suite_free)
 * and *traffic are written only on success.
 */
psc_status_t psc_nvlink_watch(psc_context_t *ctx, const psc_bw_suite_opts_t *opts, psc_bw_suite_t **out,
                              psc_nvlink_traffic_t *traffic);

/*
 * A latency suite: every case of each test (0: every test) over the GPUs (0:
 * all) with opts (psc_lat_suite_opts_t), and the timers' resolution on the
 * first GPU. Checked up
 * front as psc_bw_run_suite (test index, GPU, options: PSC_ERR_INVALID; a
 * named test needing more GPUs: PSC_ERR_UNSUPPORTED), results and *out as
 * there; free with psc_lat_suite_free. progress as psc_lat_run_test's.
 */
typedef struct {
    int ndev, devices[PSC_MAX_GPUS];
    int ntests;
    psc_suite_test_t *tests;
    size_t nresults, nfailed;
    psc_lat_result_t *results;
    double gpu_timer_ns, host_timer_ns; /* as psc_timer_resolution on devices[0] (0 when unknown) */
} psc_lat_suite_t;

typedef struct {
    size_t struct_size;               /* set by psc_lat_suite_opts_default(); fields may be added after the last */
    const psc_lat_test_t *tests;      /* ntests of them; ntests 0: every test of the registry, in order */
    int ntests;
    int ndev;                         /* GPU indexes in devices; 0: every GPU */
    const int *devices;
    const psc_lat_opts_t *lat;        /* each case's (psc_lat_opts_default); NULL: the defaults */
    psc_lat_progress_fn progress;     /* may be NULL */
    void *user;                       /* given to progress */
} psc_lat_suite_opts_t;

/* The defaults (every test, every GPU, the latency defaults, no progress); call it through the macro. */
void psc_lat_suite_opts_init(psc_lat_suite_opts_t *o, size_t struct_size);
#define psc_lat_suite_opts_default(o) psc_lat_suite_opts_init((o), sizeof(*(o)))

psc_status_t psc_lat_run_suite(psc_context_t *ctx, const psc_lat_suite_opts_t *opts, psc_lat_suite_t **out);
void psc_lat_suite_free(psc_lat_suite_t *suite);

/*
 * A verify suite: every case of each test (0: every test) over the GPUs (0:
 * all), checked by psc_verify_stress for `seconds` (0: one pass), with the
 * background load on those GPUs when with_load (psc_verify_suite_opts_t
 * holds them). A load that cannot start is
 * recorded (load_error) and the run goes on without it; progress is then
 * first called once with p NULL and load_error set. Checked up front:
 * PSC_ERR_INVALID for a test index or GPU out of range, options (either)
 * not set up by their default macro, seconds negative or not a number;
 * PSC_ERR_UNSUPPORTED for a named test without a case on these GPUs ("X
 * needs at least N GPUs; M selected"). No case at all is not an error: npaths
 * 0, nothing runs. opts->verify->load is ignored (the suite's own load is used).
 * *out only on success; free with psc_verify_suite_free.
 */
typedef void (*psc_verify_suite_progress_fn)(const psc_verify_progress_t *p, const char *load_error, void *user);

typedef struct {
    int ndev, devices[PSC_MAX_GPUS];
    size_t npaths;
    psc_verify_path_sum_t *paths;     /* one per case, in the order of the tests */
    size_t nfailed;                   /* paths whose record failed */
    psc_verify_stress_info_t stress;
    int load_ran;                     /* 1: the load ran; its reports follow */
    int nload;
    psc_load_path_report_t *load;     /* nload reports (NULL when none) */
    uint64_t load_bad_bytes;          /* summed over the load's paths */
    char load_error[512];             /* why the load could not start; "" it did or was not asked for */
    char load_stop_error[512];        /* why its final check failed; "" it did not */
    /* When a path failed or the load reported a problem: psc_doctor on facts gathered on ctx after the run,
       with the paths folded in (psc_facts_note_verify_sums), so wrong bytes between two GPUs are its
       p2p_corrupts findings. NULL (nfindings 0) when the doctor did not run: nothing failed, or the facts
       could not be gathered. Freed by psc_verify_suite_free. */
    psc_finding_t *findings;
    size_t nfindings;
} psc_verify_suite_t;

typedef struct {
    size_t struct_size;               /* set by psc_verify_suite_opts_default(); fields may be added after the last */
    const psc_bw_test_t *tests;       /* ntests of them; ntests 0: every test of the registry, in order */
    int ntests;
    int ndev;                         /* GPU indexes in devices; 0: every GPU */
    const int *devices;
    const psc_verify_opts_t *verify;  /* each copy's (psc_verify_opts_default); NULL: the defaults */
    double seconds;                   /* as psc_verify_stress_opts_t's */
    int with_load;                    /* 1: the background load on the suite's GPUs; 0 (default): none */
    int reserved0;                    /* 0 */
    psc_verify_suite_progress_fn progress; /* may be NULL */
    void *user;                       /* given to progress */
} psc_verify_suite_opts_t;

/* The defaults (every test, every GPU, the verify defaults, one pass, no load, no progress); through the macro. */
void psc_verify_suite_opts_init(psc_verify_suite_opts_t *o, size_t struct_size);
#define psc_verify_suite_opts_default(o) psc_verify_suite_opts_init((o), sizeof(*(o)))

psc_status_t psc_verify_run_suite(psc_context_t *ctx, const psc_verify_suite_opts_t *opts, psc_verify_suite_t **out);
void psc_verify_suite_free(psc_verify_suite_t *suite);

/* ---------------------------------------------------------------- psc_copy's calibration and benchmark */

/*
 * What psc_copy's route choice reads: the time per copy of each route of
 * each path, measured on this machine at sizes from 1 B up, the copies
 * queued back to back on a stream as an application queues them (no gate:
 * the CPU's cost of queueing counts where it is the bottleneck).
 */
#define PSC_CAL_MAX_SIZES 48

typedef struct {
    int src, dst;            /* where the bytes are: a GPU or PSC_HOST */
    int stream_gpu;          /* the GPU of the stream the copies were queued on */
    int issuer;              /* the GPU that moved them (stream_gpu, or the other end through events) */
    psc_engine_t engine;
    int nsizes;
    uint64_t size[PSC_CAL_MAX_SIZES];  /* ascending */
    double us[PSC_CAL_MAX_SIZES];      /* median time per copy, microseconds */
} psc_cal_route_t;

typedef struct {
    int ngpu;
    char uuid[PSC_MAX_GPUS][48]; /* the GPUs measured, in the driver's order */
    char gpu_name[PSC_NAME_LEN];  /* GPU 0's, for the reader */
    char driver_release[32];
    char created[32];        /* ISO 8601, UTC */
    int nroute;
    psc_cal_route_t *route;
} psc_calibration_t;

typedef struct {
    size_t struct_size;      /* set by psc_copy_cal_opts_default() */
    const int *devices;      /* GPUs to calibrate between (all when ndev is 0) */
    int ndev;
    uint64_t min_size, max_size; /* default 1 B .. 1 GiB */
    unsigned factor;         /* sizes grow by this factor (2..16; default 2) */
    unsigned samples;        /* timed samples per size, median kept (default 3) */
    int host;                /* 1 (default): host <-> GPU paths too, with pinned memory on each GPU's NUMA node */
    int reserved0;
} psc_copy_cal_opts_t;

void psc_copy_cal_opts_init(psc_copy_cal_opts_t *o, size_t struct_size);
#define psc_copy_cal_opts_default(o) psc_copy_cal_opts_init((o), sizeof(*(o)))

/*
 * Measure every route of every path between the GPUs (and the host) at
 * each size, each copy's bytes checked once. *out (psc_calibration_free)
 * only on success. Uses the context: one thread at a time.
 */
psc_status_t psc_copy_calibrate(psc_context_t *ctx, const psc_copy_cal_opts_t *o, psc_calibration_t **out);
void psc_calibration_free(psc_calibration_t *cal);

/* The calibration as JSON text (malloc'd; free()); NULL out of memory. */
char *psc_calibration_json(const psc_calibration_t *cal);
/* Write it as JSON, atomically (through a temporary file, fsynced and renamed). errbuf says what failed. */
psc_status_t psc_calibration_save(const psc_calibration_t *cal, const char *path, char *errbuf, size_t errlen);
/*
 * Read a calibration file, checked field by field (it is untrusted):
 * PSC_ERR_INVALID or PSC_ERR_IO with errbuf naming what is wrong.
 */
psc_status_t psc_calibration_read(const char *path, psc_calibration_t **out, char *errbuf, size_t errlen);

/*
 * psc_copy against the driver's own call, per path and size: the same copies
 * queued back to back on the same stream, by psc_copy, by a prepared copy
 * (psc_copy_run) and by cuMemcpyAsync, the call psc_copy replaces (the same
 * arguments: both addresses, the bytes, the stream), with the CPU's cost of
 * one call of each, and each result checked byte for byte.
 */
typedef struct {
    int src, dst, stream_gpu;
    uint64_t size;
    double driver_us;        /* time per copy by the driver's call (the median of the samples) */
    double psc_us;           /* time per copy by psc_copy */
    double speedup;          /* driver / psc_copy, the median over samples taken side by side */
    double driver_cpu_us;    /* CPU time of one driver call */
    double psc_cpu_us;       /* CPU time of one psc_copy call */
    double launch_cpu_us;    /* CPU time of the one driver call psc_copy makes for this route, made directly */
    psc_route_t route;       /* what psc_copy took */
    uint64_t bad_bytes;      /* wrong bytes in the destination after psc_copy's copies (and the driver's) */
    uint64_t first_bad;      /* offset of the first, UINT64_MAX when none */
    double prep_us;          /* time per copy by psc_copy_run of one psc_copy_prepare */
    double prep_cpu_us;      /* CPU time of one psc_copy_run call */
    double prep_speedup;     /* driver / prepared, the median over samples taken side by side */
    double cpu_over_us;      /* psc_copy's CPU time above launch_cpu_us, the median over samples side by side */
} psc_copy_bench_row_t;

/*
 * The CPU's cost of one call of each driver primitive psc_copy uses, in us:
 * the median of 5 runs of 200 calls on the first GPU's stream (copies and
 * kernels of 4 bytes); negative where not measured (the call failed, the
 * driver lacks it, or there is no second GPU).
 */
typedef struct {
    double ctx_get_current;     /* cuCtxGetCurrent */
    double stream_get_ctx;      /* cuStreamGetCtx: the stream's GPU, where psc_copy finds no kept call */
    double stream_capture_info; /* cuStreamGetCaptureInfo */
    double ptr_attrs2;          /* cuPointerGetAttributes of 2 attributes: a remembered buffer confirmed */
    double ptr_attrs8;          /* the same of 8: a buffer looked up */
    double memcpy_local;        /* cuMemcpyAsync inside the GPU */
    double memcpy_peer_uva;     /* cuMemcpyAsync to the second GPU (UVA): psc_copy's copy engine */
    double memcpy_peer;         /* cuMemcpyPeerAsync to the second GPU */
    double launch;              /* cuLaunchKernel of psc_copy's kernel, its 4 parameters by pointer */
    double launch_buffer;       /* the same, the parameters in one buffer (CU_LAUNCH_PARAM_BUFFER_POINTER) */
} psc_copy_costs_t;

typedef struct {
    int nrow;
    psc_copy_bench_row_t *row;
    int calibrated;          /* a calibration was in use */
    psc_copy_costs_t costs;  /* the driver calls' own CPU costs */
} psc_copy_bench_t;

typedef struct {
    size_t struct_size;      /* set by psc_copy_bench_opts_default() */
    const int *devices;      /* GPUs (all when ndev is 0); every ordered pair, and each GPU with the host */
    int ndev;
    uint64_t min_size, max_size; /* default 1 B .. 1 GiB */
    unsigned factor;         /* default 2 */
    unsigned samples;        /* samples of each way of copying per size, taken in turn (default 9; at most 64 used) */
    int host;                /* 1 (default): host <-> GPU paths too */
    int reserved0;
    const char *calibration; /* a calibration file to route by (psc_copy_calibration_load); NULL: the defaults */
} psc_copy_bench_opts_t;

void psc_copy_bench_opts_init(psc_copy_bench_opts_t *o, size_t struct_size);
#define psc_copy_bench_opts_default(o) psc_copy_bench_opts_init((o), sizeof(*(o)))

psc_status_t psc_copy_bench(psc_context_t *ctx, const psc_copy_bench_opts_t *o, psc_copy_bench_t **out);
void psc_copy_bench_free(psc_copy_bench_t *bench);

/* ---------------------------------------------------------------- between processes (p2pscope ipc) */

/*
 * One worker process per GPU (or per entry of the device list: a GPU listed
 * twice gets two workers), started by psc_ipc_run itself: each allocates
 * memory it shares with the others by each method (psc_share_alloc), imports
 * every other worker's memory mapped for its own GPU only, and for every
 * ordered pair of workers (importer, exporter) measures the importer's
 * copies into and out of the imported memory and a flag round trip through
 * it, beside the same copies and round trip inside one process (this
 * process, peer memory). Every copy is checked against the pattern.
 */
typedef enum {
    PSC_IPC_CE_WRITE, /* importer's copy engine: its own memory -> the imported memory */
    PSC_IPC_CE_READ,  /* importer's copy engine: the imported memory -> its own memory */
    PSC_IPC_SM_WRITE, /* importer's SM copy kernel, storing into the imported memory */
    PSC_IPC_SM_READ,  /* importer's SM copy kernel, loading from the imported memory */
    PSC_IPC_NBW
} psc_ipc_bw_t;

/* "ce_write", "ce_read", "sm_write", "sm_read"; NULL out of range. */
const char *psc_ipc_bw_name(int bw);
/* "legacy", "vmm_fd", "vmm_fabric" for the memory kinds of psc_share_kind_t; NULL otherwise. */
const char *psc_ipc_method_name(int method);

#define PSC_IPC_METHODS 3 /* PSC_SHARE_LEGACY, PSC_SHARE_VMM_FD, PSC_SHARE_VMM_FABRIC */
#define PSC_IPC_MAX_RANKS PSC_MAX_GPUS
#define PSC_IPC_WORKER_ARG "__ipc-worker" /* argv[1] of a worker p2pscope started */

typedef struct {
    size_t struct_size;       /* set by psc_ipc_opts_default() */
    psc_measure_opts_t measure; /* each bandwidth figure; size 0: PSC_IPC_DEFAULT_SIZE */
    unsigned methods;         /* bit (1u << kind) per psc_share_kind_t to run; 0: legacy, VMM fd and fabric */
    unsigned bw;              /* bit (1u << psc_ipc_bw_t) per copy to measure; 0: all four */
    unsigned round_trips;     /* flag round trips per pair and method (1..1000000; default 10000; at most 200
                                 where both workers share a GPU: they take turns on it, milliseconds a turn) */
    int no_local;             /* 1: skip the same paths inside one process (no ratio) */
    double timeout_ms;        /* the longest wait for a worker: its start, each reply (default 120000) */
    const char *worker_path;  /* the program a worker runs; NULL: /proc/self/exe */
    /*
     * Workers that join from elsewhere (one rank per GPU under mpirun): with
     * publish set, psc_ipc_run starts no process. It calls publish exactly
     * once (whenever its options were accepted), on the calling thread: with
     * the run's rendezvous for the caller to hand to ranks 1 .. ndev-1 (say
     * by MPI_Bcast; it holds the run's secret token: never put it in a
     * command line), each of which then calls psc_ipc_worker_join; or with
     * NULL when the run ended before its workers could join (bad options, no
     * memory, the baseline failed): tell the other ranks to stop. A nonzero
     * return fails the run. After publish, worker 0 is served by a thread of
     * this process on devices[0]; should the run fail while that worker waits
     * on the GPU (a flag that never comes), psc_ipc_run returns once that
     * wait ends (at most timeout_ms).
     */
    int (*publish)(const char *rendezvous, void *arg);
    void *publish_arg;
} psc_ipc_opts_t;

#define PSC_IPC_RENDEZVOUS_LEN 256 /* room for any rendezvous, its NUL included */

#define PSC_IPC_DEFAULT_SIZE (64ull << 20)

void psc_ipc_opts_init(psc_ipc_opts_t *o, size_t struct_size);
#define psc_ipc_opts_default(o) psc_ipc_opts_init((o), sizeof(*(o)))

typedef struct {
    int method;               /* psc_share_kind_t */
    int asked;                /* in opts.methods */
    int available;            /* 1: ran; 0: this driver, GPU or platform cannot (reason says why) */
    char reason[512];
} psc_ipc_method_t;

typedef struct {
    int importer, exporter;   /* worker ranks: the importer issues every copy and starts each round trip */
    int gpu_importer, gpu_exporter;
    int method;               /* psc_share_kind_t */
    psc_result_status_t status;
    char reason[512];         /* why failed: the first wrong byte's place, a worker's error */
    psc_bw_result_t bw[PSC_IPC_NBW];       /* between processes, through the imported memory */
    psc_bw_result_t bw_local[PSC_IPC_NBW]; /* the same copies inside one process (status WAIVED: not run) */
    psc_pctl_t rtt_ns;        /* flag round trips between the two processes, ns */
    psc_pctl_t rtt_local_ns;  /* the same inside one process (n 0: not run) */
    double export_us;         /* the exporter's psc_share_export */
    double import_us;         /* cuIpcOpenMemHandle (legacy: import and map), cuMemImportFromShareableHandle (VMM) */
    double map_us;            /* VMM: reserve, map and set access; 0 for legacy (inside import_us) */
    double first_touch_us;    /* the importer's first 4 KiB copy out of the imported memory, to completion */
    double touch_us;          /* the same copy again */
    double release_us;        /* the importer's psc_share_free */
    int naccess;              /* GPUs the importer sees */
    unsigned access[PSC_MAX_GPUS]; /* the importer's psc_share_access of the import on each (PSC_ACCESS_*), or: */
#define PSC_IPC_ACCESS_NOT_ASKED 0xffu /* legacy memory is asked on the importer's GPU only (another would need a context there) */
} psc_ipc_pair_t;

typedef struct {
    int nranks;
    int gpu[PSC_IPC_MAX_RANKS];  /* each worker's GPU */
    int pid[PSC_IPC_MAX_RANKS];
    psc_ipc_method_t methods[PSC_IPC_METHODS];
    int npairs;
    psc_ipc_pair_t *pairs;    /* per method, per ordered pair (importer, exporter) */
    uint64_t size;            /* bytes per bandwidth copy */
    double run_ms;
    int joined;               /* 1: the workers joined from elsewhere (opts.publish), worker 0 in this process */
} psc_ipc_report_t;

/*
 * Start the workers, measure, end them. A worker that dies or stops
 * answering ends the run within opts.timeout_ms with an error naming it
 * (PSC_ERR_IO or PSC_ERR_TIMEOUT), every worker ended and reaped. Failed
 * pairs (wrong bytes) still return PSC_OK: see each pair's status. *out
 * (psc_ipc_report_free) only on success. Runs from the main thread (workers
 * die with the thread that started them); the caller reaps no children meanwhile.
 */
psc_status_t psc_ipc_run(psc_context_t *ctx, const int *devices, int ndev, const psc_ipc_opts_t *opts,
                         psc_ipc_report_t **out);
void psc_ipc_report_free(psc_ipc_report_t *r);

/*
 * A worker's whole life: in a process started with argv[1] PSC_IPC_WORKER_ARG
 * (its connection in the environment psc_ipc_run set), connect, serve the
 * run, exit status to return from main (0 after a clean end).
 */
int psc_ipc_worker_main(void);

/*
 * Serve a run as worker `rank` (1 .. ndev-1) of a psc_ipc_run whose publish
 * handed out `rendezvous`: connect, do what the run asks until it ends.
 * PSC_OK after a clean end; otherwise one line in why: PSC_ERR_INVALID for a
 * malformed rendezvous or rank, PSC_ERR_IO when the run refused this worker
 * or went away, PSC_ERR_TIMEOUT when it stayed silent past its timeout. Needs
 * no context (the worker makes its own); call it once per process.
 */
psc_status_t psc_ipc_worker_join(const char *rendezvous, int rank, char *why, size_t len);

/* ---------------------------------------------------------------- collectives (p2pscope coll) */

/*
 * Collectives through NCCL (libnccl.so.2, loaded at run time), reported in
 * nccl-tests' table: the names and rules of that table (sizes, counts, bus
 * bandwidth factors), the report a run fills, and the run.
 */
typedef enum {
    PSC_COLL_ALL_REDUCE,
    PSC_COLL_ALL_GATHER,
    PSC_COLL_REDUCE_SCATTER,
    PSC_COLL_BROADCAST,
    PSC_COLL_REDUCE,
    PSC_COLL_ALL_TO_ALL,
    PSC_COLL_SEND_RECV,
    PSC_COLL_N
} psc_coll_t;

/* Element types, numbered as NCCL numbers them (ncclDataType_t). */
typedef enum {
    PSC_DT_INT8 = 0,
    PSC_DT_UINT8 = 1,
    PSC_DT_INT32 = 2,
    PSC_DT_UINT32 = 3,
    PSC_DT_INT64 = 4,
    PSC_DT_UINT64 = 5,
    PSC_DT_FLOAT16 = 6,
    PSC_DT_FLOAT32 = 7,
    PSC_DT_FLOAT64 = 8,
    PSC_DT_BFLOAT16 = 9,
    PSC_DT_N
} psc_dtype_t;

/* Reductions, numbered as NCCL numbers them (ncclRedOp_t). */
typedef enum { PSC_OP_SUM = 0, PSC_OP_PROD = 1, PSC_OP_MAX = 2, PSC_OP_MIN = 3, PSC_OP_AVG = 4, PSC_OP_N } psc_redop_t;

/*
 * Who does a collective (psc_coll_opts_t.impls, a set; psc_coll_row_t.impl,
 * one): NCCL, or p2pscope's own all-reduce (psc_allreduce_sum: all_reduce,
 * sum, float, half and bfloat16 only).
 */
enum { PSC_COLL_IMPL_NCCL = 1, PSC_COLL_IMPL_P2PSCOPE = 2, PSC_COLL_IMPL_ALL = 3 };
/* "nccl", "p2pscope"; NULL for anything else. */
const char *psc_coll_impl_name(int impl);

/* One row of the table: one size (and type, op, root) by one implementation, out of place [0] and in place [1]. */
typedef struct {
    uint64_t bytes;           /* the size column: max(bytes sent, bytes received) per rank, as nccl-tests prints */
    uint64_t count;           /* the count column: elements per rank (all_gather, reduce_scatter, alltoall: per part) */
    int dtype;                /* psc_dtype_t */
    int op;                   /* psc_redop_t, or -1 where the collective reduces nothing ("none") */
    int root;                 /* broadcast, reduce: the root rank; -1 otherwise */
    struct {
        int ran;              /* 0: not run (the column is blank) */
        double time_us;       /* mean time per operation over the timed loop, host clock, mean over ranks */
        double algbw_gbs;     /* bytes of one rank's data / time, 1 GB = 1e9 B */
        double busbw_gbs;     /* algbw x the collective's factor, as nccl-tests (2(n-1)/n for all_reduce) */
        long long wrong;      /* wrong elements found (timed iterations and extra checked runs); -1: not checked */
        long long timed_checked; /* timed operations whose output was checked (each slot's last); 0: none */
        psc_pctl_t iter_us;   /* each operation's own time (CUDA events, an eager loop also with graphs), us; n 0: not measured */
    } r[2];
    int impl;                 /* PSC_COLL_IMPL_NCCL or PSC_COLL_IMPL_P2PSCOPE (0 is read as NCCL) */
} psc_coll_row_t;

/*
 * A row timed again while every GPU of the run computes (psc_coll_opts_t.compute_load): out of place [0] and in
 * place [1]. The compute is a matrix-multiply-like kernel sized to the whole GPU, queued back to back on a stream
 * of its own on each rank's GPU through the collectives' timed loop (repeated until the loop lasts ten compute
 * kernels); each kernel is timed by CUDA events, and those that ran wholly within the loop are the loaded ones.
 */
typedef struct {
    int ran;                  /* 0: not run */
    double time_us;           /* the collective's time per operation under the load (host clock, as time_us) */
    double compute_alone_us;  /* one compute kernel's time alone, just before (median of three) */
    double compute_us;        /* its mean time while the collectives ran; NaN: none ran wholly within them */
    double slowdown;          /* compute_us / compute_alone_us - 1: what the collectives cost the compute; NaN */
    int covered;              /* 1: the compute lasted through the collectives' whole loop on every GPU */
} psc_coll_load_half_t;

typedef struct {
    psc_coll_load_half_t r[2];
} psc_coll_load_row_t;

/* -I: one half's timed iterations (CUDA events around each in the timed loop), us, as nccl-tests sums them up. */
typedef struct {
    int n;                    /* iterations timed (the row's iters); 0 none */
    int skipped;              /* left out of the figures (-K) */
    double min_us, max_us, avg_us, p50_us, p95_us, p99_us, stdev_us, cv_pct; /* nearest rank; stdev over n */
    double *times_us;         /* [n], each the most over the ranks; inside the report */
} psc_coll_iter_t;

/* A row's figures beyond psc_coll_row_t's: out of place [0] and in place [1]. */
typedef struct {
    struct {
        double cpu_time_us;   /* host time to issue the timed operations, per operation (nccl-tests' -C) */
        psc_coll_iter_t iter; /* per_iter */
    } r[2];
    long long end_time;       /* when the row's in-place half was done, seconds since the epoch (nccl-tests' -S) */
} psc_coll_row_ext_t;

/* Which way each half of one of p2pscope's rows went (psc_allreduce_last_way after its timed loop): out of place [0]
   and in place [1], PSC_AR_WAY_*; PSC_AR_WAY_NONE for NCCL's rows and halves not run. */
typedef struct {
    int r[2];
} psc_coll_way_row_t;

/* Each rank of a run: where it ran. */
typedef struct {
    int rank;
    int pid;
    char host[64];
    int device;               /* CUDA index in its own process */
    char pci_bus_id[32];      /* "0000:19:00.0", or NVML's 8-digit domain form "00000000:19:00.0" */
    char name[96];            /* "NVIDIA H200" */
} psc_coll_rank_t;

typedef struct {
    int coll;                 /* psc_coll_t */
    int nranks;               /* NCCL ranks (GPUs) in the communicator */
    int nprocs;               /* processes (1: one process drives every GPU) */
    psc_coll_rank_t *ranks;   /* [nranks] */
    int nccl_version;         /* ncclGetVersion's code: 22807 for 2.28.7 */
    uint64_t min_bytes, max_bytes;
    unsigned step_factor;     /* sizes grow by this factor, or (0) by step_bytes */
    uint64_t step_bytes;
    int warmup_iters, iters, agg_iters;
    int check;                /* extra checked runs per row (nccl-tests' -c) */
    int graph_launches;       /* CUDA graph replays per timing (nccl-tests' -G); 0: operations issued eagerly */
    int blocking;             /* wait for each operation before the next (-z: 1, 2, 3) */
    int time_of;              /* psc_coll_time_t: how the processes' times were combined */
    double timeout_s;         /* the longest wait allowed; 0 none */
    int nrows;
    psc_coll_row_t *rows;
    int failed_rows;          /* rows (out of place or in place) with a wrong element: nccl-tests' "Out of bounds values" */
    char first_wrong[192];    /* the first wrong element this process saw: rank, half, slot, element, got, expected; "" none */
    double avg_busbw_gbs;     /* mean of every busbw of NCCL's rows (of p2pscope's where only they ran): nccl-tests'
                                 "Avg bus bandwidth" */
    double run_ms;
    double own_avg_busbw_gbs; /* mean of every busbw of p2pscope's own rows; 0: none ran */
    char own_not_run[256];    /* why p2pscope's rows are missing where they apply (its group could not be made
                                 here: PSC_ERR_UNSUPPORTED, with NCCL's rows asked too); "" otherwise */
    int min_busbw_set;        /* the options' bound on avg_busbw_gbs (nccl-tests' NCCL_TESTS_MIN_BW), copied */
    double min_busbw_gbs;
    int busbw_failed;         /* 1: min_busbw_set and avg_busbw_gbs below 0.9 x min_busbw_gbs (nccl-tests' "Avg bus
                                 bandwidth ... FAILED"): the run failed */
    int compute_load;         /* 1: every row timed again under a compute load (opts.compute_load): loads */
    psc_coll_load_row_t *loads; /* [nrows], rows[i]'s figures under the load; NULL without compute_load */
    /* the report grew here (the library allocates it) */
    int run_cycles, parallel_init, stream_null, unalign, per_iter, per_iter_skip; /* as the options asked */
    int register_mode;        /* as run: 0, 1 or 2 (the options' 2 is 1 before NCCL 2.27, 1 is 0 before 2.19) */
    int cta_policy;           /* as set: -1 NCCL's default */
    char notes[256];          /* nccl-tests' lines about options the loaded NCCL cannot take ("Option -R 2 ...
                                 Defaulting to local registration"), newline-ended; "" none */
    int mem_known;            /* 1: the three figures below were read (cuMemGetInfo) */
    long long mem_init_bytes, mem_user_bytes, mem_coll_bytes; /* GPU memory taken by the communicators, by the
                                 buffers (and their registration), and during the rows: most over the ranks */
    long long start_time, end_time; /* the run's wall clock, seconds since the epoch */
    psc_coll_row_ext_t *ext;  /* [nrows]: each row's host time to issue, -I's iterations, its end time */
    double *iter_times;       /* the storage of ext[].r[].iter.times_us; NULL without per_iter */
    psc_coll_way_row_t *ways; /* [nrows]: the way each of p2pscope's rows ran */
    int own_tuned;            /* 1: p2pscope's group was tuned (opts.tune_own) before its rows */
    char own_tune_note[256];  /* why it was not where it was asked (no usable NCCL); "" otherwise */
    char nccl_last_error[512]; /* ncclGetLastError(NULL) at the run's end (NCCL's last warning, what nccl-tests
                                 prints as "# error: ..."), cut to fit; "" none, or no NCCL loaded */
} psc_coll_report_t;

/*
 * Why a coll run's bus bandwidth is far below the links': given the run and
 * link_bw_gbs, the unidirectional bandwidth p2pscope bw measured between the
 * same GPUs (0: not known), findings as psc_doctor gives them (most severe
 * first; the count is returned whatever cap, at most cap written). When the
 * best busbw of the run's largest sizes (those within a factor 4 of the
 * largest) is below half of link_bw_gbs, each cause the facts show is a
 * finding: NCCL_P2P_DISABLE or an NCCL_P2P_LEVEL below the pairs' path
 * ("coll_p2p_disabled", "coll_p2p_level"), GPUs of the run without peer
 * access ("coll_no_peer_access"), ranks on several nodes ("coll_multi_node"),
 * sizes that stay below 64 MiB ("coll_small_sizes"); with none,
 * "coll_slow_unknown" says what to try. One rank gives "coll_one_rank" and no
 * link_bw_gbs "coll_not_compared" (info). The run's GPUs are found in facts by
 * the ranks' PCI bus ids; facts may be NULL (nothing known). Pure: no I/O, no
 * allocation; 0 for no run or no row run.
 */
size_t psc_doctor_coll(const psc_facts_t *facts, const psc_coll_report_t *coll, double link_bw_gbs,
                       psc_finding_t *out, size_t cap);

/*
 * The processes of a run with one NCCL rank per process (mpirun). The
 * library links no MPI: the caller passes these calls, made by every process
 * in the same order (collective calls, as MPI's). Each returns 0 on success.
 */
typedef struct {
    int nprocs, proc;       /* processes, and this one's index (0 holds the report the caller prints) */
    void *arg;
    /* process 0's len bytes of buf into every process's buf */
    int (*bcast)(void *buf, size_t len, void *arg);
    /* v[0..n) combined over the processes, in place: how PSC_COLL_SUM, PSC_COLL_MIN or PSC_COLL_MAX */
    int (*allreduce)(double *v, int n, int how, void *arg);
    /* each process's len bytes of mine into all, in process order (nprocs x len bytes), in every process */
    int (*allgather)(const void *mine, void *all, size_t len, void *arg);
} psc_coll_procs_t;

enum { PSC_COLL_SUM, PSC_COLL_MIN, PSC_COLL_MAX };

/* How each process's time is combined into the table: nccl-tests' -a. */
typedef enum { PSC_COLL_TIME_RANK0, PSC_COLL_TIME_MEAN, PSC_COLL_TIME_MIN, PSC_COLL_TIME_MAX } psc_coll_time_t;

typedef struct {
    size_t struct_size;       /* set by psc_coll_opts_default() */
    int coll;                 /* psc_coll_t (default all-reduce) */
    int dtype;                /* psc_dtype_t, -1 every type (nccl-tests' -d all); default float */
    int op;                   /* psc_redop_t, -1 every one (-o all); default sum; ignored where nothing is reduced */
    int root;                 /* broadcast, reduce: the root rank, -1 every rank (-r -1); default 0 */
    uint64_t min_bytes, max_bytes; /* sizes per rank, 1 B .. 1 TiB (default 32 MiB each, as nccl-tests) */
    unsigned step_factor;     /* > 1: each size this times the last; else step_bytes more (default 1 MiB) */
    uint64_t step_bytes;
    int warmup_iters;         /* operations per size before the rows (default 1; 0..100000) */
    int iters;                /* timed operations per row (default 20; 1..1000000) */
    int agg_iters;            /* operations per group call (-m; default 1; 1..1024) */
    int check;                /* extra checked runs per row (-c; default 1); 0: nothing checked, #wrong N/A */
    int graph_launches;       /* -G: capture the timed operations in a CUDA graph, replay it this often; 0 eager */
    int blocking;             /* -z: 1 wait for each operation before the next and meet, 2 wait only, 3 wait and meet
                                 after each timed iteration (-m's group), the time without the meeting (default 0) */
    int time_of;              /* psc_coll_time_t (default mean) */
    double timeout_s;         /* the longest wait for NCCL or the GPUs (-T): then the communicators are aborted
                                 and the run fails naming the collective and size; 0 none (default 300) */
    int per_op;               /* 1: each operation's own time too (CUDA events, an extra eager loop; default 1) */
    uint32_t seed;            /* of the checked data (default 1) */
    const psc_coll_procs_t *procs; /* NULL: this process drives every rank (one per listed GPU) */
    unsigned impls;           /* PSC_COLL_IMPL_* set (default PSC_COLL_IMPL_ALL): whose rows; p2pscope's only where
                                 it applies (all_reduce, sum, float/half/bfloat16, 1 to 8 ranks, one GPU per process
                                 under procs), right after NCCL's row of the same size */
    int min_busbw_set;        /* 1: the run must reach min_busbw_gbs (>= 0) of average bus bandwidth, nccl-tests'
                                 NCCL_TESTS_MIN_BW (the library reads no environment: the caller passes it); below
                                 0.9 x it the report's busbw_failed is set (default 0: no bound) */
    double min_busbw_gbs;
    int compute_load;         /* 1: after each half's timed loop, the loop again while every GPU of the run computes
                                 (a matrix-multiply-like kernel on a stream of its own): the collective's time then
                                 and how much it slowed the compute, in the report's loads (default 0) */
    /* nccl-tests' other options (psc_coll_opts_t grew here: a struct_size that ends above takes their defaults) */
    int run_cycles;           /* -N: the sizes' rows this many times over, after one warm-up (default 1; 1..1000) */
    int parallel_init;        /* -p: 1 each thread makes its communicators (one thread per process here: the same
                                 calls); the report says so, as nccl-tests' header does (default 0) */
    int stream_null;          /* -y: 1 the operations go to each GPU's legacy default stream (NULL), not a stream of
                                 the run's own; not with graph_launches (default 0) */
    int register_mode;        /* -R: 0 none (default); 1 ncclCommRegister on the send and receive buffers (NCCL 2.19);
                                 2 symmetric windows, ncclCommWindowRegister (NCCL 2.27; before it 1, with the report's
                                 note as nccl-tests prints it) */
    int cta_policy;           /* -x: -1 NCCL's default (default); 0..2 ncclConfig_t.CTAPolicy (NCCL 2.27; 2 needs 2.28:
                                 before, left unset with the report's note) */
    int unalign;              /* -u: the buffers begin this many elements past their allocation (default 0; 0..1024) */
    int per_iter;             /* -I: 1 each timed iteration between CUDA events in the timed loop itself (not with
                                 graph_launches): the report's ext[].r[].iter (default 0) */
    int per_iter_skip;        /* -K: the first iterations left out of -I's figures (0..iters-1; default 0) */
    int device_impl;          /* -D: 0 NCCL's collectives (default); > 0 nccl-tests' device-API kernels, which p2pscope
                                 has not: refused (PSC_ERR_UNSUPPORTED), naming NCCL 2.28 where the library is older */
    int device_ctas;          /* -V: CTAs of a device implementation, 1..128 (0: nccl-tests' 16); needs NCCL 2.28 */
    int tune_own;             /* all_reduce: 1 p2pscope's group is tuned (psc_allreduce_tune) before its rows, so its
                                 calls of the sizes where NCCL's all-reduce timed faster go to NCCL, the report's
                                 ways saying per row which way ran; without a usable NCCL the group's own ways, the
                                 report's own_tune_note saying why; 0 its own ways only (default 1) */
} psc_coll_opts_t;

void psc_coll_opts_init(psc_coll_opts_t *o, size_t struct_size);
#define psc_coll_opts_default(o) psc_coll_opts_init((o), sizeof(*(o)))

/*
 * Time o->coll through NCCL, row after row (each type, op, root and size),
 * nccl-tests' way: buffers of max_bytes per rank, the timed operations
 * walking through them slot by slot, host-clock time per operation. With
 * o->check, every slot's inputs are set before the timed loop and every
 * slot's outputs checked after it (the timed operations themselves: each
 * slot's last; in place, where an operation leaves its own input as the next
 * one's, only rows where each slot is used once, or the result does not
 * change when applied again), then o->check extra operations checked one by
 * one; #wrong counts wrong elements of both. The ranks: one per GPU of
 * devices (ndev of them, 0: every GPU) in this process, or with o->procs this
 * process's GPUs among every process's (the same count in each; ranks in
 * process order). NCCL is loaded here (PSC_ERR_UNSUPPORTED, one line, without
 * it). A timeout aborts the communicators: PSC_ERR_TIMEOUT naming the
 * collective, the size and the wait. Wrong elements are results: PSC_OK, see
 * failed_rows. *out (psc_coll_report_free) only on success; in every process,
 * the figures combined over the processes.
 *
 * With PSC_COLL_IMPL_P2PSCOPE in o->impls, p2pscope's own all-reduce gets a
 * row after NCCL's at each size where it applies, measured and checked the
 * same way (same buffers, slots rounded up to 16 B, warm-up, loops, graphs,
 * checks); one group (psc_allreduce_create, or psc_allreduce_join under
 * o->procs) lives for the run, its timeout o->timeout_s (0: the group's own
 * 10 s per wait), a call that gives up PSC_ERR_TIMEOUT as NCCL's. With
 * p2pscope's alone, NCCL is not loaded, and a run where it applies nowhere
 * is PSC_ERR_INVALID.
 */
psc_status_t psc_coll_run(psc_context_t *ctx, const int *devices, int ndev, const psc_coll_opts_t *o,
                          psc_coll_report_t **out);
void psc_coll_report_free(psc_coll_report_t *r);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
#ifdef __cplusplus
}
#endif
#endif /* P2PSCOPE_BENCH_H */
