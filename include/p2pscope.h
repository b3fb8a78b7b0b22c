/*
 * p2pscope: show, measure and verify the data paths between GPUs and host.
 *
 * One public header. Every function returns psc_status_t (0 ok, negative
 * errors) unless it says otherwise; output parameters are written only on
 * success. The library never prints unless asked and never exits.
 *
 * Environment variables read by the library:
 *   P2PSCOPE_LOG      log level on stderr: "error", "warn", "info", "debug"
 *                     (default: nothing is printed)
 *   P2PSCOPE_LIBCUDA  path of the CUDA driver library to load instead of
 *                     "libcuda.so.1" (tests use it to simulate a missing driver)
 *   P2PSCOPE_LIBNVML  path of the NVML library instead of "libnvidia-ml.so.1"
 *   P2PSCOPE_SM_COPY  shape of the SM copy kernel, "unroll:blocks_per_sm:threads"
 *                     (unroll 1, 2, 4 or 8; default 4:2:1024), for tuning
 * The CUDA driver itself honours CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER;
 * device indexes here are the driver's ordinals after both.
 */
#ifndef P2PSCOPE_H
#define P2PSCOPE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif
#if defined(__GNUC__)
#pragma GCC visibility push(default) /* the library builds with hidden visibility */
#endif

#define PSC_VERSION_STRING "0.1.0"

typedef enum {
    PSC_OK = 0,
    PSC_ERR_INVALID = -1,     /* an argument is out of its accepted range */
    PSC_ERR_NO_DRIVER = -2,   /* libcuda.so.1 missing or unusable */
    PSC_ERR_NO_DEVICE = -3,   /* driver loaded, but it sees no GPU */
    PSC_ERR_DRIVER = -4,      /* a driver call failed: psc_context_last_error() */
    PSC_ERR_NO_MEMORY = -5,   /* host or device allocation failed */
    PSC_ERR_UNSUPPORTED = -6, /* not possible on this machine (reason in the result) */
    PSC_ERR_TIMEOUT = -7,     /* a GPU did not answer in time */
    PSC_ERR_IO = -8,          /* a file could not be read or written */
} psc_status_t;

/* Static English text for a status; never NULL. */
const char *psc_status_string(psc_status_t status);

/* ---------------------------------------------------------------- context */

typedef struct psc_context psc_context_t;

/*
 * Load the driver (and NVML where present), initialise CUDA and enumerate
 * the GPUs. On failure *out is untouched and errbuf (if given) holds one
 * line that says what is missing. Returns PSC_ERR_NO_DRIVER or
 * PSC_ERR_NO_DEVICE for machines where nothing can be measured.
 */
psc_status_t psc_context_create(psc_context_t **out, char *errbuf, size_t errlen);

/* Release every context, buffer and library the context holds. NULL is fine. */
void psc_context_destroy(psc_context_t *ctx);

/* The last error the context decided on, with the driver's code and text. */
const char *psc_context_last_error(const psc_context_t *ctx);

/* ---------------------------------------------------------------- inventory */

#define PSC_NAME_LEN 256
#define PSC_BUSID_LEN 32

typedef struct {
    int index;                   /* CUDA ordinal */
    int nvml_index;              /* nvidia-smi's index; -1 when NVML is absent */
    char name[PSC_NAME_LEN];
    char pci_bus_id[PSC_BUSID_LEN]; /* "0000:18:00.0" */
    char uuid[48];               /* "GPU-xxxxxxxx-xxxx-..." */
    uint32_t pci_device_id;      /* (device << 16) | vendor, from NVML; 0 unknown */
    uint64_t memory_bytes;
    int sm_count;
    int l2_bytes;                /* L2 cache size; 0 unknown */
    int cc_major, cc_minor;
    int async_engines;           /* copy engines the driver reports */
    int numa_node;               /* host NUMA node nearest the GPU; -1 unknown */
    int mem_bus_width_bits;      /* 0 unknown */
    int mem_clock_max_mhz;       /* 0 unknown */
    double mem_peak_gbs;         /* theoretical DRAM bandwidth, 0 unknown */
    int sm_clock_mhz, sm_clock_max_mhz, mem_clock_mhz; /* now / max; -1 unknown */
    int temperature_c;           /* -1 unknown */
} psc_device_info_t;

typedef struct {
    int device_count;
    int cuda_driver_version;     /* cuDriverGetVersion, e.g. 13000 */
    char driver_release[32];     /* NVML's driver version, e.g. "580.159.04"; "" unknown */
    int nvml_loaded;
    char nvml_note[160];         /* why NVML facts are missing, "" when loaded */
    char device_order[32];       /* CUDA_DEVICE_ORDER in effect: FASTEST_FIRST or PCI_BUS_ID */
    char visible_devices[128];   /* CUDA_VISIBLE_DEVICES, "" when unset */
    int numa_nodes;              /* host NUMA nodes (1 when unknown) */
    int driver_device_count;     /* GPUs the driver reports; above PSC_MAX_GPUS only the first
                                    PSC_MAX_GPUS are used (device_count); CUDA_VISIBLE_DEVICES picks them */
} psc_system_info_t;

int psc_device_count(const psc_context_t *ctx);
psc_status_t psc_system_info(const psc_context_t *ctx, psc_system_info_t *out);
/* Fresh clocks and temperature are read at each call. */
psc_status_t psc_device_info(const psc_context_t *ctx, int device, psc_device_info_t *out);

/* ---------------------------------------------------------------- utilities */

/*
 * Parse a byte count: a whole number with an optional suffix. K/M/G/T and
 * KiB/MiB/GiB/TiB are powers of 1024; KB/MB/GB/TB powers of 1000; B or no
 * suffix is bytes. Accepts 1 byte to 1 TiB.
 */
psc_status_t psc_size_parse(const char *text, uint64_t *out);

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

typedef struct {
    unsigned n;
    double median, min, max, mean, stddev; /* stddev: sample (n-1) */
} psc_stats_t;

/* Statistics of n >= 1 values (the input is not modified). */
psc_status_t psc_stats_compute(const double *values, unsigned n, psc_stats_t *out);

/* ---------------------------------------------------------------- topology facts */

/*
 * Everything p2pscope knows about how a machine's GPUs connect, gathered
 * live (driver, NVML, hwloc, /sys, /proc) or replayed from a recording. The
 * doctor's rules read only this. -1 means "not known" in every int field.
 */
#define PSC_MAX_GPUS 64
#define PSC_MAX_NVLINKS 18
#define PSC_MAX_BRIDGES 16

typedef enum {
    PSC_PATH_UNKNOWN, /* not established */
    PSC_PATH_SELF,    /* X: the same GPU */
    PSC_PATH_NVLINK,  /* NV#: joined by NVLink (directly or through NVSwitches) */
    PSC_PATH_PIX,     /* at most one PCIe switch between them */
    PSC_PATH_PXB,     /* several PCIe bridges, no host bridge */
    PSC_PATH_PHB,     /* through a PCIe host bridge */
    PSC_PATH_NODE,    /* between host bridges of one NUMA node */
    PSC_PATH_SYS,     /* across the interconnect between NUMA nodes */
} psc_path_t;

/* nvidia-smi's label into buf: "X", "NV18", "PIX", ... ("?" unknown). */
const char *psc_path_label(psc_path_t path, int nvlinks, char *buf, size_t len);

/* A PCIe link into buf: "Gen5 x16", with "?" for a part not known (below 1). */
const char *psc_pcie_label(int gen, int width, char *buf, size_t len);

typedef enum { PSC_REMOTE_UNKNOWN, PSC_REMOTE_GPU, PSC_REMOTE_SWITCH, PSC_REMOTE_CPU } psc_remote_t;

typedef struct {
    int active;                  /* 1 active, 0 inactive, -1 unknown */
    int version;                 /* NVLink version; 0 unknown */
    double speed_gbs;            /* per direction, GB/s; 0 unknown */
    psc_remote_t remote;
    char remote_bus_id[PSC_BUSID_LEN];
    int remote_gpu;              /* index of the GPU at the other end; -1 none */
    int cap_p2p, cap_sysmem, cap_p2p_atomics, cap_sysmem_atomics;
} psc_nvlink_facts_t;

typedef enum {
    PSC_ACS_NOT_RECORDED,        /* the source had no config space (replays) */
    PSC_ACS_NEEDS_ROOT,          /* extended config space unreadable without root */
    PSC_ACS_ABSENT,              /* the bridge has no ACS capability */
    PSC_ACS_READ,                /* acs_ctrl holds the control register */
} psc_acs_state_t;

/* ACS control bits (PCIe spec, ACS Control Register). */
#define PSC_ACS_SV 0x01 /* source validation */
#define PSC_ACS_TB 0x02 /* translation blocking */
#define PSC_ACS_RR 0x04 /* P2P request redirect */
#define PSC_ACS_CR 0x08 /* P2P completion redirect */
#define PSC_ACS_UF 0x10 /* upstream forwarding */
#define PSC_ACS_EC 0x20 /* P2P egress control */
#define PSC_ACS_DT 0x40 /* direct translated P2P */

typedef struct {
    char bus_id[PSC_BUSID_LEN];  /* "" for a host bridge */
    char ids[16];                /* "vendor:device", e.g. "10b5:9781"; "" unknown */
    psc_acs_state_t acs;
    int acs_ctrl;
} psc_bridge_facts_t;

typedef struct {
    char name[PSC_NAME_LEN];
    char pci_bus_id[PSC_BUSID_LEN];
    char uuid[48];
    uint64_t memory_bytes;       /* 0 unknown */
    uint64_t bar1_bytes;         /* BAR1 aperture; 0 unknown */
    int pcie_gen, pcie_gen_max, pcie_width, pcie_width_max;
    int numa_node;
    char cpuset[64];             /* CPUs nearest the GPU, as a list "0-31"; "" unknown */
    int virt_mode;               /* NVML: 0 none, 1 passthrough, 2 vGPU guest, 3 vGPU host, 4 vSGA host */
    int mig, ecc, persistence;   /* 1 on, 0 off */
    int sm_clock_mhz, sm_clock_max_mhz, temperature_c;
    int64_t clock_event_reasons; /* NVML's clocks event (throttle) reason bits */
    int nvlink_count;            /* links the GPU has; 0 none */
    psc_nvlink_facts_t nvlinks[PSC_MAX_NVLINKS];
    int nbridges;                /* bridges above the GPU, nearest first, up to the host bridge */
    psc_bridge_facts_t bridges[PSC_MAX_BRIDGES];
    int iommu_group;             /* -1 none or unknown */
    char iommu_domain[16];       /* "identity" (passthrough), "DMA", "DMA-FQ"; "" unknown */
} psc_gpu_facts_t;

typedef struct {
    psc_path_t path;             /* from the PCI tree and NVLink */
    int nvlinks;                 /* links joining the two GPUs */
    int can_access;              /* cuDeviceCanAccessPeer */
    int perf_rank, native_atomics, array_access; /* cuDeviceGetP2PAttribute */
    int nvml_p2p_read;           /* nvmlGpuP2PStatus_t for reads: 0 OK, else the driver's reason */
    int integrity;               /* a verified peer copy: 1 right bytes, 0 wrong bytes, -1 not run */
} psc_pair_facts_t;

typedef struct {
    char machine[128];           /* DMI product name, "" unknown */
    int numa_nodes;
    int hypervisor;              /* 1 inside a VM */
    int iommu;                   /* 1 an IOMMU translates DMA, 0 none present */
    int iommu_groups;
    char cmdline[512];           /* kernel command line, "" unknown */
    int driver_open;             /* 1 open GPU kernel module, 0 proprietary */
    char driver_release[32];
    int cuda_driver_version;
    int acs_readable;            /* 1 config space of bridges could be read */
} psc_host_facts_t;

typedef struct {
    char source[256];            /* "live", or the recording's path */
    int has_driver;              /* driver facts (CUDA, NVML) present */
    psc_host_facts_t host;
    int ngpu;
    psc_gpu_facts_t gpu[PSC_MAX_GPUS];
    psc_pair_facts_t pair[PSC_MAX_GPUS][PSC_MAX_GPUS];
    char *hwloc_xml;             /* the recorded PCI/CPU topology; NULL when none */
} psc_facts_t;

/* A zeroed facts object with every "unknown" field at -1; free with psc_facts_free. */
psc_facts_t *psc_facts_new(void);
void psc_facts_free(psc_facts_t *facts);

/* This machine, through the driver, NVML, hwloc, /sys and /proc. */
psc_status_t psc_facts_gather(psc_context_t *ctx, psc_facts_t *facts);

/*
 * Replay a recording with no driver: an hwloc XML file, a directory holding
 * a captured /sys and /proc tree, or a JSON file written by psc_facts_save.
 * The recording is untrusted: hwloc parses it in a child process under
 * limits (10 s, 1 GiB, 64 MiB of XML, 65536 objects), special files and links
 * out of a capture are refused, and a JSON recording's fields are checked.
 * PSC_ERR_INVALID (or PSC_ERR_IO when unreadable) with errbuf naming what is
 * wrong; PSC_ERR_NO_DEVICE when it holds no NVIDIA GPU. facts is written only
 * on success (and with PSC_ERR_NO_DEVICE, a sound recording without GPUs).
 * Forks a child: not for use from a signal handler.
 */
psc_status_t psc_facts_load(const char *path, psc_facts_t *facts, char *errbuf, size_t errlen);

/* The facts as JSON text (malloc'd; free()), with the hwloc XML when asked. */
char *psc_facts_json(const psc_facts_t *facts, int with_hwloc_xml);

/* Record the facts (hwloc XML inside) as JSON, atomically. */
psc_status_t psc_facts_save(const psc_facts_t *facts, const char *path, char *errbuf, size_t errlen);

/*
 * Why GPU i cannot reach GPU j peer-to-peer, in one line, from what the facts
 * establish ("unknown" when nothing does). Empty when access is possible.
 */
const char *psc_p2p_reason(const psc_facts_t *facts, int i, int j, char *buf, size_t len);

/*
 * NVLink traffic counters of one GPU, per link, in bytes since the driver
 * started counting (NVML's data throughput fields). *nlinks is the number of
 * links read. PSC_ERR_UNSUPPORTED without NVML or on a GPU without NVLink.
 */
psc_status_t psc_nvlink_counters(const psc_context_t *ctx, int gpu, uint64_t *tx_bytes, uint64_t *rx_bytes,
                                 int *nlinks);

/* ---------------------------------------------------------------- doctor */

typedef enum { PSC_SEV_INFO, PSC_SEV_WARNING, PSC_SEV_ERROR } psc_severity_t;
const char *psc_severity_string(psc_severity_t s); /* "info", "warning", "error" */

typedef struct {
    psc_severity_t severity;
    char rule[32];               /* stable id, e.g. "bar1_small" */
    char what[256];              /* what is wrong, one line */
    char evidence[512];          /* the facts the rule used */
    char fix[256];               /* what to do, one or two lines */
} psc_finding_t;

/*
 * Every rule over the facts: pure, no I/O. Findings come most severe first;
 * the count is returned, at most cap are written. Rules that could not run
 * for want of facts say so as "not checked" info findings.
 */
size_t psc_doctor(const psc_facts_t *facts, psc_finding_t *out, size_t cap);

/* ---------------------------------------------------------------- bandwidth */

#define PSC_HOST (-1) /* endpoint of a copy that is host memory */
#define PSC_ALL (-2)  /* in a case's summary: every other GPU */

typedef enum { PSC_ENGINE_CE, PSC_ENGINE_SM } psc_engine_t; /* copy engine, or an SM copy kernel */

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
    PSC_SHAPE_ALL_HOST_BIDIR /* host <-> every GPU, both directions, at once */
} psc_shape_t;

typedef int psc_bw_test_t; /* index into the test registry */

typedef struct {
    const char *name;          /* "gpu_to_gpu_read_ce", ... */
    const char *title;         /* one line for a table title: direction, engine, issuer */
    const char *description;   /* one line for `bw -l` */
    psc_shape_t shape;         /* the traffic: which endpoints copy to which, at once */
    psc_engine_t engine;
    int by_reader;             /* GPU -> GPU: the destination GPU issues (read); else the source (write) */
    psc_hostmem_t hostmem;     /* host tests */
    int min_gpus;
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
    /* Test hook: flip the destination byte at this offset after each timed
     * sample's copies, before verification. Negative: off. */
    int64_t test_corrupt_offset;
} psc_measure_opts_t;

void psc_measure_opts_default(psc_measure_opts_t *opts);
/* PSC_ERR_INVALID with a line in errbuf naming the accepted range. */
psc_status_t psc_measure_opts_check(const psc_measure_opts_t *opts, char *errbuf, size_t errlen);

/*
 * The stop rule of adaptive sampling: with n >= 3 samples, 1 when the
 * medians of the first n-2, n-1 and n samples lie within pct percent of
 * each other. Pure; exposed for tests.
 */
int psc_sampling_stable(const double *samples, unsigned n, double pct);

/* Sizes from min to max (inclusive) multiplying by factor >= 2; returns the count, writes at most cap. */
int psc_size_sweep(uint64_t min, uint64_t max, unsigned factor, uint64_t *out, int cap);

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
} psc_lat_method_t;

typedef enum { PSC_LAT_LOCAL, PSC_LAT_PEER, PSC_LAT_HOST } psc_lat_where_t;

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
} psc_lat_test_info_t;

int psc_lat_test_count(void);
const psc_lat_test_info_t *psc_lat_test_info(psc_lat_test_t t); /* NULL out of range */
psc_status_t psc_lat_test_from_name(const char *name, psc_lat_test_t *out);
int psc_lat_test_match(const char *glob, psc_lat_test_t *out, int cap);

typedef struct {
    psc_lat_test_t test;
    int src, dst;   /* memory owner -> reader for a chase; initiator -> responder for a flag; copy endpoints */
    int issuer;     /* the GPU that runs the kernel or issues the copies */
} psc_lat_case_t;

psc_status_t psc_lat_cases(const psc_context_t *ctx, psc_lat_test_t test, const int *devices, int ndev,
                           psc_lat_case_t *cases, size_t cap, size_t *n);

/* Percentiles of n >= 1 values (nearest rank); the input is not modified. */
typedef struct {
    unsigned n;
    double min, p50, p90, p99, max, mean;
} psc_pctl_t;
psc_status_t psc_percentiles(const double *v, unsigned n, psc_pctl_t *out);

/*
 * A random single cycle through n nodes (Sattolo's algorithm): next[i] is the
 * node after i; following next from any node visits every node once before
 * returning. Pure; exposed for tests.
 */
void psc_chain_build(uint32_t *next, uint32_t n, uint64_t seed);

typedef struct {
    unsigned samples;        /* chase: timed chains; flag: round trips; copy: samples per size; sync: calls per size */
    uint64_t hops;           /* chase: loads per timed chain */
    unsigned copies;         /* copy: back-to-back copies per sample */
    double timeout_ms;       /* flag: how long a side waits for the other */
} psc_lat_opts_t;
void psc_lat_opts_default(psc_lat_opts_t *o);

#define PSC_LAT_MAX_SIZES 8
#define PSC_LAT_KEEP 512     /* raw samples kept per size for the distribution in JSON */

typedef struct {
    psc_lat_case_t c;
    psc_result_status_t status;
    char reason[512];
    unsigned nsizes;                         /* 1 for chase and flag tests */
    uint64_t sizes[PSC_LAT_MAX_SIZES];       /* bytes per copy; chase: working set; flag: 4 */
    psc_pctl_t lat[PSC_LAT_MAX_SIZES];       /* ns: per load, one way, GPU time per copy, or per call */
    psc_pctl_t submit[PSC_LAT_MAX_SIZES];    /* copy tests: CPU time to submit one copy, ns */
    unsigned nkept[PSC_LAT_MAX_SIZES];
    float kept[PSC_LAT_MAX_SIZES][PSC_LAT_KEEP]; /* raw samples, ns, in the order taken */
    double ns_per_cycle;                     /* GPU clock calibration of this run (chase, flag) */
} psc_lat_result_t;

/* Run one latency case. Failed or waived results still return PSC_OK. */
psc_status_t psc_lat_run(psc_context_t *ctx, const psc_lat_case_t *c, const psc_lat_opts_t *o, psc_lat_result_t *out);

/* The timers: %globaltimer's smallest step on GPU g and CLOCK_MONOTONIC's resolution, both in ns. */
psc_status_t psc_timer_resolution(psc_context_t *ctx, int gpu, double *gpu_ns, double *host_ns);

/* ---------------------------------------------------------------- integrity */

typedef enum { PSC_FAULT_NONE, PSC_FAULT_FLIP, PSC_FAULT_DROP, PSC_FAULT_MISPLACE } psc_fault_t;

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
/* Wait for the copies in flight, check them, write the final reports (as psc_load_report), free the load. */
psc_status_t psc_load_stop(psc_load_t *load, psc_load_path_report_t *out, int cap, int *n);

#define PSC_PATTERN_KINDS 6 /* random, address, walking ones, walking zeros, zero, ones */
const char *psc_pattern_kind_name(int kind);

typedef struct {
    uint64_t max_size;      /* largest copy (default 256 MiB + 7; pageable host memory stops at 1 MiB + 13) */
    unsigned pattern_mask;  /* bit k: pattern kind k (default: all) */
    int unaligned;          /* also copy between unaligned source and destination offsets (default 1) */
    uint64_t seed;          /* recorded in the results; each copy derives its own */
    /* Test hook: after each copy of fault_size bytes (0: every copy), damage the first destination:
     * flip the byte at fault_offset, drop fault_len bytes there, or write them fault_len further on. */
    psc_fault_t fault;
    uint64_t fault_offset, fault_len, fault_size;
    psc_load_t *load;       /* background traffic kept running while copying and checking; NULL none */
} psc_verify_opts_t;

void psc_verify_opts_default(psc_verify_opts_t *o);

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

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
#ifdef __cplusplus
}
#endif
#endif /* P2PSCOPE_H */
