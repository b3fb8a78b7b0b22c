/*
 * p2pscope: show, measure and verify the data paths between GPUs and host.
 *
 * The application-facing API: the context, the inventory, the topology facts
 * and the doctor, memory of each kind, CPU mappings, copies, sharing between
 * processes, all-reduce and the version query. The benchmark API (test
 * registries, bandwidth, latency and integrity runs, suites) is apart, in
 * <p2pscope/bench.h>.
 *
 * Conventions. Every function returns psc_status_t (0 ok, negative errors)
 * unless it says otherwise. A failing call that takes a context records why
 * (what was wrong, what is accepted) for psc_context_last_error(); one without
 * a context says so in its errbuf where it has one. Output parameters are
 * written only on success. The library never prints unless asked
 * (P2PSCOPE_LOG) and never exits.
 *
 * Embedding. Each call leaves the calling thread's current CUDA context and
 * the peer access between the GPUs' primary contexts as it found them, never
 * changes the environment or the umask, and installs no signal handler. It
 * shares the GPUs' primary contexts with the CUDA runtime, so memory the
 * application allocated stays usable.
 *
 * Threads (libp2pscope(3) lists them by family). A psc_context_t and
 * everything made from it (buffers, maps, shares, groups, loads) is used by
 * one thread at a time; different contexts may be used from different threads
 * at once, and psc_context_create may run in several at once. The functions
 * that take no context (psc_version, status and path labels, psc_doctor,
 * psc_p2p_reason, the facts' JSON, the registries) are pure and thread-safe
 * (for distinct objects where they take one); psc_facts_load and
 * psc_facts_save read or write only the files named and are thread-safe for
 * distinct facts objects (psc_facts_load forks a child: not from a signal
 * handler).
 *
 * ABI. Option structs begin with struct_size, set by their *_default()
 * function, so fields can be added at their end: always initialise them that
 * way. psc_facts_t is allocated only by psc_facts_new (it may grow at its end);
 * never declare one by value. The soname changes when any other struct
 * changes. This header's functions are exported under the version node
 * P2PSCOPE_0, <p2pscope/bench.h>'s under P2PSCOPE_BENCH_1; nothing else is
 * exported.
 *
 * Environment variables read by the library:
 *   P2PSCOPE_LOG      log level on stderr: "error", "warn", "info", "debug"
 *                     (default: nothing is printed)
 *   P2PSCOPE_LIBCUDA  path of the CUDA driver library to load instead of
 *                     "libcuda.so.1" (tests use it to simulate a missing driver)
 *   P2PSCOPE_LIBNVML  path of the NVML library instead of "libnvidia-ml.so.1"
 *   P2PSCOPE_LIBNCCL  path of NCCL instead of "libnccl.so.2" (the doctor's NCCL
 *                     facts, psc_allreduce_tune)
 *   P2PSCOPE_LIBGDRAPI path of gdrcopy's library instead of "libgdrapi.so.2"
 *   P2PSCOPE_SM_COPY  shape of the SM copy kernel, "unroll:blocks_per_sm:threads"
 *                     (unroll 1, 2, 4 or 8; default 4:2:1024), for tuning
 * The CUDA driver itself honours CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER;
 * device indexes here are the driver's ordinals after both.
 */
#ifndef P2PSCOPE_H
#define P2PSCOPE_H

#include <stddef.h>
#include <stdint.h>

#include "p2pscope/version.h"

#ifdef __cplusplus
extern "C" {
#endif
#if defined(__GNUC__)
#pragma GCC visibility push(default) /* the library builds with hidden visibility */
#endif

/* ---------------------------------------------------------------- version */

/*
 * The library's version as built: "major.minor.patch" (static text), and each
 * part where a pointer is given. PSC_VERSION_* in <p2pscope/version.h> are the
 * header's; compare them to tell which library was loaded at run time.
 */
const char *psc_version(int *major, int *minor, int *patch);

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

/*
 * Release every context, buffer and library the context holds, and any
 * background load not yet stopped (its handle is then invalid). The calling
 * thread's current context stays as it was. NULL is fine.
 */
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
    char cmdline[512];           /* the kernel command line's P2P parameters (IOMMU, ACS, PCI, nvidia, vfio,
                                    swiotlb) wherever they stand, the rest dropped; "" none or unknown */
    int driver_open;             /* 1 open GPU kernel module, 0 proprietary */
    char driver_release[32];
    int cuda_driver_version;
    int acs_readable;            /* 1 config space of bridges could be read */
} psc_host_facts_t;

/*
 * What shapes NCCL here (for p2pscope coll and the doctor): the library that
 * loads and the NCCL_* settings of the environment that change the paths it
 * takes (PSC_NCCL_ENV_NAMES lists those read, in the order kept).
 */
#define PSC_MAX_NCCL_ENV 24
#define PSC_NCCL_ENV_NAMES                                                                                      \
    "NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL", "NCCL_P2P_DIRECT_DISABLE", "NCCL_SHM_DISABLE", "NCCL_NVLS_ENABLE",   \
        "NCCL_CUMEM_ENABLE", "NCCL_ALGO", "NCCL_PROTO", "NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS",             \
        "NCCL_BUFFSIZE", "NCCL_IB_DISABLE", "NCCL_NET", "NCCL_NET_GDR_LEVEL", "NCCL_SOCKET_IFNAME",             \
        "NCCL_CROSS_NIC", "NCCL_TOPO_FILE", "NCCL_GRAPH_FILE", "NCCL_COLLNET_ENABLE", "NCCL_DEBUG"

typedef struct {
    char name[32];               /* "NCCL_P2P_DISABLE" */
    char value[128];             /* as set, cut at 127 bytes */
} psc_nccl_setting_t;

typedef struct {
    int known;                   /* 1 read (live, or a recording that has them); 0 not known: the rest is empty */
    int loaded;                  /* 1 NCCL loaded and usable, 0 not */
    int version;                 /* ncclGetVersion's code (22807 for 2.28.7) when loaded; 0 otherwise */
    char path[256];              /* the library loaded or tried: P2PSCOPE_LIBNCCL, else "libnccl.so.2" */
    char note[256];              /* why it is not loaded, one line; "" when loaded */
    int nsettings;               /* NCCL_* settings present in the environment */
    psc_nccl_setting_t settings[PSC_MAX_NCCL_ENV];
} psc_nccl_facts_t;

/*
 * CPU mappings of one GPU's memory, as psc_gpumap_probe found them (its
 * psc_gpumap_report_t, under "CPU mappings of GPU memory" below): usable and
 * why are indexed by psc_gpumap_backend_t (gdrcopy, dma-buf, coherent).
 */
typedef struct {
    int known;                   /* 1 probed (live, or a recording that has it); 0 not known: the rest is empty */
    int usable[3];               /* 1: psc_gpumap_map can use the backend on this GPU */
    char why[3][400];            /* for each one not usable: why, and the fix; "" usable */
    int gdr_lib_version;         /* libgdrapi's (major << 16 | minor); 0 none loaded */
    int gdr_drv_version;         /* gdrdrv's, the same way; 0 unknown or none */
    int gdr_dmabuf;              /* 1: libgdrapi maps through its own dma-buf fallback, not gdrdrv */
    uint64_t bar1_total, bar1_free; /* bytes, from NVML; 0 unknown */
} psc_gpumap_facts_t;

typedef struct {
    char source[256];            /* "live", or the recording's path */
    int has_driver;              /* driver facts (CUDA, NVML) present */
    psc_host_facts_t host;
    int ngpu;
    psc_gpu_facts_t gpu[PSC_MAX_GPUS];
    psc_pair_facts_t pair[PSC_MAX_GPUS][PSC_MAX_GPUS];
    char *hwloc_xml;             /* the recorded PCI/CPU topology; NULL when none */
    psc_nccl_facts_t nccl;       /* NCCL here; known 0 for recordings made without it */
    psc_gpumap_facts_t gpumap[PSC_MAX_GPUS]; /* per GPU (psc_facts_probe_gpumap); known 0 where not probed:
                                                psc_facts_gather leaves it so, and recordings made without it */
    int keep_identifiers;        /* 1: psc_facts_json and psc_facts_save write what identifies the machine
                                    (GPU UUIDs; the host name, DMI serial numbers, UUIDs and asset tags, MAC
                                    addresses and InfiniBand GUIDs in the hwloc XML); 0, the default: null for
                                    the UUIDs, the rest left out, so a recording is safe to share */
} psc_facts_t;

/* A zeroed facts object with every "unknown" field at -1; free with psc_facts_free. NULL out of memory. */
psc_facts_t *psc_facts_new(void);
void psc_facts_free(psc_facts_t *facts);

/*
 * This machine, through the driver, NVML, hwloc, /sys and /proc; and NCCL
 * (P2PSCOPE_LIBNCCL, else libnccl.so.2: loaded to read its version, and left
 * mapped, as p2pscope coll leaves it) with the NCCL_* settings of the
 * environment, which is only read.
 */
psc_status_t psc_facts_gather(psc_context_t *ctx, psc_facts_t *facts);

/*
 * Replay a recording with no driver: an hwloc XML file, a directory holding
 * a captured /sys and /proc tree, or a JSON file written by psc_facts_save.
 * The recording is untrusted: hwloc parses it in a child process under
 * limits (10 s, 1 GiB, 64 MiB of XML, 65536 objects), special files and links
 * out of a capture are refused, and a JSON recording's fields are checked.
 * PSC_ERR_INVALID (or PSC_ERR_IO when unreadable) with errbuf naming what is
 * wrong; PSC_ERR_NO_DEVICE when it holds no NVIDIA GPU; PSC_ERR_NO_MEMORY. No
 * context: errbuf says what failed, in one line. facts is written only on
 * success (and with PSC_ERR_NO_DEVICE, a sound recording without GPUs), and
 * then replaced whole: nothing of what it held before survives.
 * Forks a child: not for use from a signal handler.
 */
psc_status_t psc_facts_load(const char *path, psc_facts_t *facts, char *errbuf, size_t errlen);

/* The facts as JSON text (malloc'd; free()), with the hwloc XML when asked. NULL for no facts or out of memory. */
char *psc_facts_json(const psc_facts_t *facts, int with_hwloc_xml);

/* Record the facts (hwloc XML inside) as JSON, atomically (through a temporary file, fsynced and renamed). errbuf says what failed. */
psc_status_t psc_facts_save(const psc_facts_t *facts, const char *path, char *errbuf, size_t errlen);

/*
 * Why GPU i cannot reach GPU j peer-to-peer, in one line, from what the facts
 * establish ("unknown" when nothing does). Empty when access is possible.
 */
const char *psc_p2p_reason(const psc_facts_t *facts, int i, int j, char *buf, size_t len);

/*
 * NVLink traffic counters of one GPU, per link, in bytes since the driver
 * started counting (NVML's data throughput fields). *nlinks is the number of
 * links read; a counter NVML would not give is PSC_NVLINK_UNREAD.
 * PSC_ERR_UNSUPPORTED without NVML or on a GPU without NVLink.
 */
#define PSC_NVLINK_UNREAD UINT64_MAX
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
 * Every rule over the facts: pure, no I/O, no allocation, so it cannot fail.
 * Findings come most severe first; the count is returned (the same whatever
 * cap), at most cap are written. Rules that could not run for want of facts
 * say so as "not checked" info findings.
 */
size_t psc_doctor(const psc_facts_t *facts, psc_finding_t *out, size_t cap);

/* ---------------------------------------------------------------- integrity evidence, NVLink traffic */

/*
 * The evidence for psc_doctor's p2p_corrupts rule: a small verified copy
 * (8 MiB, copy engine, the source GPU issuing) from GPU i to GPU j on every
 * ordered pair whose can_access is 1. Wrong bytes set pair[i][j].integrity
 * to 0; a pass sets it to 1 unless it is already 0 (the rule of
 * psc_facts_note_bw in <p2pscope/bench.h>, which folds other runs' results
 * in). A pair whose copy could not run keeps its value. ctx is the context
 * the facts were gathered with (psc_facts_gather on it): PSC_ERR_INVALID
 * for facts of another machine or GPU count, or a missing argument;
 * otherwise PSC_OK. A run that passed with its checks off is no evidence.
 */
psc_status_t psc_facts_check_integrity(psc_context_t *ctx, psc_facts_t *facts);

/*
 * CPU mappings of GPU memory into the facts: psc_gpumap_probe on each GPU,
 * into gpumap[i] (known 1). It allocates, maps and frees a little device
 * memory per GPU (see psc_gpumap_probe): not done by psc_facts_gather. A GPU
 * whose probe fails keeps known 0. ctx is the context the facts were
 * gathered with: PSC_ERR_INVALID for facts of another machine or GPU count,
 * or a missing argument; otherwise PSC_OK.
 */
psc_status_t psc_facts_probe_gpumap(psc_context_t *ctx, psc_facts_t *facts);

/*
 * What `doctor` reads on a live machine: psc_facts_gather on ctx, then
 * psc_facts_check_integrity and psc_facts_probe_gpumap on what it gathered,
 * in one call. A pair whose
 * copy cannot run keeps integrity -1 ("not run"), and so does every pair
 * when the machine has more GPUs than the facts hold. PSC_ERR_INVALID for a
 * missing argument; a failed gather's status and reason (recorded);
 * PSC_ERR_NO_MEMORY. facts is written only on success, and then replaced
 * whole, as psc_facts_load does. Uses ctx: one thread at a time.
 */
psc_status_t psc_facts_examine(psc_context_t *ctx, psc_facts_t *facts);

/*
 * NVLink traffic between two moments (application API, beside
 * psc_nvlink_counters): take a snapshot before and after, then the
 * difference per link.
 */
typedef struct {
    int nlinks;                  /* links read; 0: counters not available on this GPU */
    uint64_t tx[PSC_MAX_NVLINKS], rx[PSC_MAX_NVLINKS]; /* bytes, as psc_nvlink_counters */
} psc_nvlink_gpu_counters_t;

typedef struct {
    int ngpu;
    psc_nvlink_gpu_counters_t gpu[PSC_MAX_GPUS];
} psc_nvlink_snapshot_t;

/* Every GPU's counters now; a GPU whose counters cannot be read gets nlinks 0. PSC_ERR_INVALID for NULL. */
psc_status_t psc_nvlink_snapshot(const psc_context_t *ctx, psc_nvlink_snapshot_t *snap);

typedef struct {
    int nlinks;                  /* the later snapshot's links; 0: its counters were not available */
    uint64_t tx[PSC_MAX_NVLINKS], rx[PSC_MAX_NVLINKS]; /* bytes moved between the snapshots */
    int known[PSC_MAX_NVLINKS];  /* 1: tx and rx hold the traffic; 0: the link was not counted in the
                                    earlier snapshot, or a counter was reset (went backwards) */
} psc_nvlink_gpu_traffic_t;

typedef struct {
    int ngpu;                    /* the later snapshot's */
    psc_nvlink_gpu_traffic_t gpu[PSC_MAX_GPUS];
} psc_nvlink_traffic_t;

/*
 * after - before, per link. A counter that went backwards by more than half
 * its range wrapped (the difference is taken modulo 2^64); by less, it was
 * reset, and the link's traffic is not known. Links or GPUs missing from the
 * earlier snapshot are not known; those missing from the later one are left
 * out. Pure (no context, no I/O). PSC_ERR_INVALID for NULL or counts out of range.
 */
psc_status_t psc_nvlink_traffic(const psc_nvlink_snapshot_t *before, const psc_nvlink_snapshot_t *after,
                                psc_nvlink_traffic_t *out);

/* ---------------------------------------------------------------- memory of each kind */

/*
 * Memory for an application's buffers, of each kind a copy can use, freed by
 * one call. Plain CUDA code may use it as its own (cudaMemcpy, kernels,
 * cuMemcpy): device memory is a cuMemAlloc allocation in the GPU's primary
 * context (the one the CUDA runtime uses); host memory is page-locked and
 * mapped for every GPU (portable), so a kernel on any GPU may read and write
 * it at psc_mem_device(). Each kind's pages are placed before the call
 * returns (touched where they are bound).
 */
typedef enum {
    PSC_MEMKIND_DEVICE,      /* cuMemAlloc on one GPU */
    PSC_MEMKIND_PINNED,      /* cuMemHostAlloc: page-locked host memory */
    PSC_MEMKIND_MAPPED,      /* pinned and mapped into the GPUs' address space (CU_MEMHOSTALLOC_DEVICEMAP) */
    PSC_MEMKIND_WC,          /* pinned write-combined: fast for the CPU to write and a GPU to read; slow for
                                the CPU to read */
    PSC_MEMKIND_REGISTERED,  /* ordinary pages page-locked in place with cuMemHostRegister */
    PSC_MEMKIND_COUNT
} psc_memkind_t;

/* "device", "pinned", "mapped", "write-combined", "registered"; "?" out of range. */
const char *psc_memkind_name(psc_memkind_t kind);

#define PSC_NUMA_ANY (-1) /* host memory: no binding (the kernel's first-touch policy) */

typedef struct psc_mem psc_mem_t;

/*
 * size bytes (1 B to 1 TiB) of the kind: for device memory `where` is the
 * GPU; for host kinds the NUMA node its pages are bound to (0..nodes-1, or
 * PSC_NUMA_ANY). PSC_ERR_UNSUPPORTED where the machine cannot bind to that
 * node or the driver lacks the call, with why; PSC_ERR_NO_MEMORY.
 */
psc_status_t psc_mem_alloc(psc_context_t *ctx, psc_memkind_t kind, int where, size_t size, psc_mem_t **out);

/* The CPU's address of host memory; NULL for device memory. */
void *psc_mem_host(const psc_mem_t *mem);
/* The address GPUs use (a CUdeviceptr; under unified addressing the host address for host memory). */
uint64_t psc_mem_device(const psc_mem_t *mem);
size_t psc_mem_size(const psc_mem_t *mem);
psc_memkind_t psc_mem_kind(const psc_mem_t *mem);
/* Device memory: its GPU. Host memory: the NUMA node its first page is on (as the kernel reports), -1 unknown. */
int psc_mem_where(const psc_mem_t *mem);

/*
 * Free memory of any kind; NULL is fine. Memory not freed is freed by
 * psc_context_destroy. The caller makes sure no GPU work still uses it.
 */
psc_status_t psc_mem_free(psc_mem_t *mem);

/* ---------------------------------------------------------------- copies of the application's buffers */

/* copy engine, or an SM copy kernel; PSC_ENGINE_CPU: the CPU's own stores and loads through a CPU mapping of
 * GPU memory (psc_gpumap_*), in the bandwidth registry only (psc_copy never picks it) */
typedef enum { PSC_ENGINE_CE, PSC_ENGINE_SM, PSC_ENGINE_CPU } psc_engine_t;
#define PSC_HOST (-1) /* where a copy's bytes are: host memory */

struct CUstream_st; /* CUstream and cudaStream_t are pointers to it: pass either */
struct CUevent_st;  /* CUevent and cudaEvent_t are pointers to it */

/*
 * Copy n bytes from src to dst by the fastest route this machine has for
 * their path and size, enqueued on `stream` (NULL: the legacy default stream
 * of the calling thread's current context): it runs after the work queued
 * before it on the stream and before the work queued after. Returns as soon
 * as it is queued (no hidden synchronisation, no memory allocated), and may be
 * captured into a CUDA graph.
 *
 * dst and src are device memory of any GPU (cuMemAlloc, cudaMalloc, VMM),
 * page-locked host memory (pinned, mapped, write-combined, registered) or
 * managed memory, given by the addresses CUDA uses (UVA). Pageable memory is
 * refused (an asynchronous copy of it would synchronise): allocate it with
 * psc_mem_alloc or register it. The stream belongs to a GPU's primary
 * context (the runtime's).
 *
 * The route (the engine, and the GPU whose engine or SMs do the copy) comes
 * from the calibration loaded with psc_copy_calibration_load, and from
 * built-in defaults without one; psc_copy_route says which and why. Routes
 * are timed as applications queue copies, back to back, where a kernel
 * launch costs the CPU more than the driver's copy: the defaults take the
 * driver's copy (cuMemcpyAsync, between GPUs too: it can be captured)
 * except between GPUs from a stream not on the source GPU, up to 16 MiB,
 * where the stream GPU's SM kernel reads over the link; a calibrated route
 * other than the driver's copy is taken only where it was measured at least
 * 5 % faster. Each thread remembers the buffers it copied lately and the
 * route of each recent copy. Where that route is a kernel or a hop, a later
 * call asks the driver whether each address is still in the same allocation
 * with the same access (a buffer freed and another made at its address is
 * looked up again). Where it is the driver's own copy, a later call with the
 * same buffers, size and stream issues that copy at once, and the driver
 * checks it as it would the call psc_copy replaces: psc_copy's own checks
 * (the range past an allocation's end, pageable memory) are made when the
 * route is chosen, and again only where the driver refuses the copy. A copy
 * between GPUs by SM kernel needs peer access from the issuing GPU to the
 * other: the call never turns it on (psc_peer_enable does) and takes the copy
 * engine where it is off. Where the calibration measured the far GPU's
 * routes faster, the copy hops: the far GPU copies on a stream of its own,
 * ordered after the caller's stream by one event and the caller's stream
 * after it by another (a graph capture takes the hop in). The defaults never
 * hop. Hops go only to GPUs already set up (psc_copy_calibration_load does
 * it); the first hop between two GPUs makes their hop stream and events, once
 * per context. Hops of different streams to one GPU run one after another
 * there; while a graph capture holds that GPU's hop stream, copies of other
 * streams take the best route without a hop. The caller's current context and
 * peer access stay as they were.
 *
 * PSC_ERR_INVALID, with why, for: a NULL address, memory CUDA does not know
 * (pageable, freed, or another process's), a range past the end of its
 * allocation, ranges that overlap, a stream of a context that is not a GPU's
 * primary context. Nothing is queued then. n = 0 queues nothing.
 */
psc_status_t psc_copy(psc_context_t *ctx, void *dst, const void *src, size_t n, struct CUstream_st *stream);

#define PSC_ROUTE_WHY_LEN 512

typedef struct {
    psc_engine_t engine;
    int issuer;              /* the GPU whose copy engine or SMs move the bytes */
    int stream_gpu;          /* the stream's GPU */
    int src, dst;            /* where the bytes are: a GPU, or PSC_HOST */
    int hop;                 /* 1: the issuer is not the stream's GPU; the copy is ordered after the stream's
                                work and the stream after it by events */
    int peer_off;            /* 1: a faster route needs peer access that is off (psc_peer_enable turns it on) */
    int calibrated;          /* 1: chosen from the loaded calibration; 0: the built-in defaults */
    double predicted_us;     /* the calibration's time for this copy on this route; 0 without one */
    char why[PSC_ROUTE_WHY_LEN]; /* one line: the path, the route and why it was chosen */
} psc_route_t;


/*
 * A copy made ready once and queued many times: psc_copy's checks and route
 * choice done by psc_copy_prepare, so psc_copy_run makes only the driver
 * call of the route: the driver's copy on a stream the caller made as it is,
 * whatever context is current; otherwise, where the stream's GPU is not the
 * current context, it makes it current and puts the caller's back. The
 * buffers and the stream must outlive the prepared copy, as a CUDA graph
 * node's do, and keep their peer access: nothing is checked again when it
 * runs. It never hops. The same refusals as psc_copy (PSC_ERR_INVALID; n = 0
 * too). Free it with psc_copy_prep_free before the context is destroyed.
 * Same thread rule as the context.
 */
typedef struct psc_copy_prep psc_copy_prep_t;

psc_status_t psc_copy_prepare(psc_context_t *ctx, void *dst, const void *src, size_t n, struct CUstream_st *stream,
                              psc_copy_prep_t **out);
psc_status_t psc_copy_run(psc_context_t *ctx, const psc_copy_prep_t *prep);
void psc_copy_prep_free(psc_copy_prep_t *prep);

/* The route psc_copy would take for these arguments, with the same checks; queues nothing. */
psc_status_t psc_copy_route(psc_context_t *ctx, const void *dst, const void *src, size_t n,
                            struct CUstream_st *stream, psc_route_t *out);

/*
 * Choose routes from the crossovers measured on this machine by
 * `p2pscope copy --calibrate FILE` (psc_copy_calibrate in <p2pscope/bench.h>).
 * The file must come from this machine's GPUs (by UUID, in the driver's
 * order): PSC_ERR_INVALID names what differs, and the routes stay as they
 * were. NULL path: back to the built-in defaults.
 */
psc_status_t psc_copy_calibration_load(psc_context_t *ctx, const char *path);

/*
 * Turn on peer access from GPU `from` to GPU `to` in their primary contexts
 * (what cudaDeviceEnablePeerAccess does), so copies and kernels on `from`
 * may address `to`'s memory. *was_on (if given) says whether it was already
 * on. It stays on until the application turns it off (psc_peer_disable or
 * the CUDA runtime); the measurement calls of <p2pscope/bench.h> put it back
 * as they found it. PSC_ERR_UNSUPPORTED where the GPUs cannot reach each other.
 */
psc_status_t psc_peer_enable(psc_context_t *ctx, int from, int to, int *was_on);
psc_status_t psc_peer_disable(psc_context_t *ctx, int from, int to, int *was_on);

/* ---------------------------------------------------------------- CPU mappings of GPU memory */

/*
 * GPU memory the CPU reads and writes with plain loads and stores (what
 * gdrcopy does): a few bytes reach the GPU in well under a microsecond, where
 * a cuMemcpy costs several. Three backends, tried in this order:
 *   PSC_GPUMAP_GDRCOPY   gdrcopy's libgdrapi.so.2 (2.4 or newer, loaded at run
 *                        time; P2PSCOPE_LIBGDRAPI names another path) with its
 *                        kernel module gdrdrv (/dev/gdrdrv), or from gdrcopy 2.6
 *                        its own dma-buf fallback: a BAR1 mapping,
 *                        write-combined
 *   PSC_GPUMAP_DMABUF    an mmap of the dma-buf that cuMemGetHandleForAddressRange
 *                        exports (no kernel module; a driver for CUDA 13.3 or
 *                        newer, with dma-buf support): a BAR1 mapping,
 *                        write-combined (cached on coherent platforms)
 *   PSC_GPUMAP_COHERENT  a coherent platform (Grace Hopper, NVLink-C2C): the CPU
 *                        addresses device memory at its own address; nothing is
 *                        pinned, no BAR1 used, cached
 * BAR1 mappings take BAR1 space for what they pin (64 KiB GPU pages): a GPU
 * with a small BAR1 (256 MiB on many workstation boards) maps only that much
 * at once.
 */
typedef enum {
    PSC_GPUMAP_GDRCOPY = 0,
    PSC_GPUMAP_DMABUF = 1,
    PSC_GPUMAP_COHERENT = 2,
    PSC_GPUMAP_BACKENDS = 3
} psc_gpumap_backend_t;

/* "gdrcopy", "dma-buf", "coherent"; "?" out of range. */
const char *psc_gpumap_backend_name(psc_gpumap_backend_t backend);

#define PSC_GPUMAP_PAGE 65536u /* the GPU page: what a BAR1 mapping pins and maps */
#define PSC_GPUMAP_WHY_LEN 400

/* What a GPU offers for CPU mappings. */
typedef struct {
    int usable[PSC_GPUMAP_BACKENDS];     /* 1: psc_gpumap_map can use the backend on this GPU */
    char why[PSC_GPUMAP_BACKENDS][PSC_GPUMAP_WHY_LEN]; /* for each one not usable: why, and the fix; "" usable */
    int gdr_lib_version;                 /* libgdrapi's (major << 16 | minor); 0 none loaded */
    int gdr_drv_version;                 /* gdrdrv's, the same way; 0 unknown or none */
    int gdr_dmabuf;                      /* 1: libgdrapi maps through its own dma-buf fallback, not gdrdrv */
    int cuda_driver_version;             /* cuDriverGetVersion, e.g. 13000 */
    uint64_t bar1_total, bar1_free;      /* bytes, from NVML; 0 unknown (no NVML) */
} psc_gpumap_report_t;

/*
 * Which backends can map memory of GPU `gpu`, each one's reason where not
 * (no libgdrapi, no /dev/gdrdrv, gdr_open failed, a driver too old for the
 * dma-buf mmap or one that refuses it, not a coherent platform). The gdrcopy
 * and dma-buf backends are tried for real where they may work: 128 KiB of
 * device memory is allocated, one page of it pinned, mapped, unmapped, and
 * freed. PSC_OK whatever is usable; PSC_ERR_INVALID for a GPU that does not
 * exist.
 */
psc_status_t psc_gpumap_probe(psc_context_t *ctx, int gpu, psc_gpumap_report_t *out);

typedef struct psc_gpumap psc_gpumap_t;

/* psc_gpumap_map's `backends`: the ones it may try (in the order above); 0 is all three. */
#define PSC_GPUMAP_TRY(backend) (1u << (backend))

/*
 * Map `size` bytes of device memory at `dptr` (memory of GPU `gpu` from
 * cuMemAlloc / cudaMalloc, or a fully mapped VMM range; not managed or host
 * memory) for the CPU, by the first of the allowed backends that works.
 * BAR1 mappings cover whole GPU pages: dptr's 64 KiB page must begin inside
 * its allocation (an address 64 KiB-aligned, or one at least its distance
 * from a 64 KiB boundary past the allocation's start), and the range must end
 * inside it. On any backend the same addresses are accepted.
 *
 * PSC_ERR_INVALID, with what is accepted, for: size 0, memory CUDA does not
 * know or that is not device memory of `gpu`, a range past its allocation's
 * end, a page that begins before the allocation, backends naming none of the
 * three. PSC_ERR_NO_MEMORY where the pinned pages exceed the GPU's free BAR1
 * (the numbers said) and no other backend could map it; PSC_ERR_UNSUPPORTED
 * when no allowed backend is usable; psc_context_last_error then names each
 * backend tried with its reason. *out only on success. A map not unmapped is
 * unmapped by psc_context_destroy. The caller's current context is kept.
 *
 * Freeing the memory while it is mapped: unmap first. The driver cannot be
 * stopped from freeing it; after a free, psc_gpumap_check says so, the
 * mapping's bytes are undefined and touching them may kill the process with
 * SIGBUS (gdrdrv invalidates non-persistent mappings), and psc_gpumap_unmap
 * still releases it cleanly.
 */
psc_status_t psc_gpumap_map(psc_context_t *ctx, int gpu, uint64_t dptr, size_t size, unsigned backends,
                            psc_gpumap_t **out);

/*
 * PSC_OK while the mapped memory is still the allocation that was mapped;
 * PSC_ERR_INVALID, recorded, once it was freed (or freed and allocated anew
 * at the same address), or gdrdrv invalidated the mapping. One driver call.
 */
psc_status_t psc_gpumap_check(psc_gpumap_t *map);

/*
 * Unmap and unpin; NULL is fine. The caller's CPU copies through it are
 * done. The map is released even when gdrcopy reports a failure (returned,
 * recorded); it never touches the mapped bytes, so it is safe after a free.
 */
psc_status_t psc_gpumap_unmap(psc_gpumap_t *map);

/* The CPU's address of dptr; psc_gpumap_write and _read copy with stores and loads that suit the mapping. */
void *psc_gpumap_ptr(const psc_gpumap_t *map);
size_t psc_gpumap_size(const psc_gpumap_t *map);
uint64_t psc_gpumap_dptr(const psc_gpumap_t *map);
psc_gpumap_backend_t psc_gpumap_backend(const psc_gpumap_t *map);
/* dptr's distance from the start of the pinned range (its 64 KiB page); 0 for the coherent backend. */
size_t psc_gpumap_offset(const psc_gpumap_t *map);
/*
 * 1 when the mapping is write-combined (CPU reads are then slow: not cached, not prefetched); 0 when it
 * is cached (a coherent platform) or, rarely, uncached without combining (gdrcopy's GDR_MAPPING_TYPE_DEVICE,
 * where writes are slow too).
 */
int psc_gpumap_write_combined(const psc_gpumap_t *map);

/*
 * Copy n bytes from src to the mapping at `offset` (psc_gpumap_write), or
 * from the mapping to dst (psc_gpumap_read); offset + n at most the size.
 * Writes go in 64-byte runs of non-temporal stores (SSE2, or AVX where the
 * CPU has it: whole write-combining lines), heads and tails in aligned 8-,
 * 4-, 2- and 1-byte stores, and end with a store fence: the bytes are on
 * their way to the GPU, in order with the caller's later stores, when the
 * call returns. A kernel already running sees them in its own time (no
 * ordering with GPU work: a flag written after them is the usual way).
 * Reads use the widest loads (streaming 16-byte loads where the CPU has
 * SSE4.1 and AVX) and are slow through a BAR1 mapping, about a tenth of the write
 * bandwidth or less: every load crosses PCIe and waits, as uncached memory
 * cannot be prefetched. No driver call, no allocation; PSC_ERR_INVALID,
 * recorded, for a range past the end or a NULL buffer with n > 0. A copy
 * that succeeds touches nothing of the context, so maps of one context may
 * be copied through from several threads at once (arguments that fail are
 * recorded in the context: one thread at a time then).
 */
psc_status_t psc_gpumap_write(psc_gpumap_t *map, size_t offset, const void *src, size_t n);
psc_status_t psc_gpumap_read(psc_gpumap_t *map, size_t offset, void *dst, size_t n);

/* ---------------------------------------------------------------- GPU memory shared between processes */

typedef enum {
    PSC_SHARE_LEGACY = 1,     /* cuMemAlloc memory by a CUDA IPC handle (cuIpcGetMemHandle) */
    PSC_SHARE_VMM_FD = 2,     /* a VMM allocation (cuMemCreate) exported as a POSIX file descriptor */
    PSC_SHARE_VMM_FABRIC = 3, /* a VMM allocation exported as a fabric handle (NVLink fabric, IMEX channel) */
    PSC_SHARE_EVENT = 4,      /* an interprocess event (cuIpcGetEventHandle), for ordering across processes */
} psc_share_kind_t;

/* GPU memory (or an event) made shareable by this process, or imported from another. */
typedef struct psc_share psc_share_t;

#define PSC_SHARE_MSG_LEN 160

/*
 * What a process hands another for one shared allocation or event: bytes any
 * channel can carry (a pipe, MPI, a file), and for PSC_SHARE_VMM_FD a file
 * descriptor, which only a Unix socket (SCM_RIGHTS) passes. The bytes name
 * the kind, the size, the exporting process and its GPU (by UUID); the
 * importer checks every field and refuses what is malformed or forged.
 */
typedef struct {
    unsigned char bytes[PSC_SHARE_MSG_LEN];
    int fd; /* PSC_SHARE_VMM_FD: the descriptor; -1 for the other kinds */
} psc_share_msg_t;

/*
 * Allocate size bytes of device memory on GPU `gpu` that other processes
 * can import: kind PSC_SHARE_LEGACY (cuMemAlloc), PSC_SHARE_VMM_FD or
 * PSC_SHARE_VMM_FABRIC (cuMemCreate, the size rounded up to the allocation
 * granularity, mapped and accessible for `gpu` only). PSC_ERR_UNSUPPORTED
 * names why where this driver, GPU or platform cannot (fabric handles need an
 * IMEX channel). Free it with psc_share_free; the context frees what is left.
 */
psc_status_t psc_share_alloc(psc_context_t *ctx, psc_share_kind_t kind, int gpu, size_t size, psc_share_t **out);

/* An interprocess event on GPU `gpu` (no timing): record it here, wait for it in the importer. */
psc_status_t psc_share_event_create(psc_context_t *ctx, int gpu, psc_share_t **out);

/*
 * The message for another process. For PSC_SHARE_VMM_FD, msg->fd is a new
 * descriptor this call opened: the caller closes it once sent.
 */
psc_status_t psc_share_export(psc_context_t *ctx, const psc_share_t *s, psc_share_msg_t *msg);

/*
 * Import what another process exported, mapped for the GPUs listed (ngpu of
 * them; NULL and 0: the exporting GPU only). VMM memory is made accessible
 * (read and write) for exactly those GPUs. Legacy memory is opened in one
 * GPU's context (ngpu must be 1 or 0), with peer access to the exporting GPU
 * turned on by the driver as needed. Events take no GPU list. The exporting
 * GPU must be one this process sees (CUDA_VISIBLE_DEVICES). PSC_ERR_INVALID,
 * with why, for a malformed or forged message; msg->fd is not closed.
 */
psc_status_t psc_share_import(psc_context_t *ctx, const psc_share_msg_t *msg, const int *gpus, int ngpu,
                              psc_share_t **out);

/*
 * Pass a message to another process over the caller's own socket: a
 * connected AF_UNIX SOCK_STREAM socket (socketpair(), or either end of a
 * connect/accept), borrowed: neither closed nor its flags (O_NONBLOCK,
 * FD_CLOEXEC) changed. Anything else is PSC_ERR_INVALID. Each message is one
 * self-contained frame and the receiver reads exactly that frame, so several
 * messages, and traffic the application frames itself, may follow each other
 * on one socket. timeout_ms: 1 to 3600000; no CUDA call is made.
 *
 * Both refuse a peer that does not run as this process's effective user
 * (SO_PEERCRED: the credentials of whoever made the other end, at connect()
 * or socketpair() time). psc_share_send refuses (nothing sent) a message that
 * does not decode or whose fd does not fit its kind (PSC_SHARE_VMM_FD: an
 * open descriptor, sent as a copy by SCM_RIGHTS; the other kinds: -1).
 * msg->fd stays the caller's.
 * PSC_ERR_TIMEOUT when the peer does not take it in time, PSC_ERR_IO when it
 * is gone.
 *
 * psc_share_recv takes the next message (the peer checked first, before
 * anything is read): the frame must be a shared-memory message
 * (the peer's error frame: PSC_ERR_IO "... reported: why"), and its bytes
 * must decode, else PSC_ERR_INVALID naming what was wrong (a descriptor that
 * came with it closed). *msg is written only on success; msg->fd is then the
 * received descriptor (O_CLOEXEC, the caller's to close after
 * psc_share_import) or -1. PSC_ERR_TIMEOUT when no whole message came in
 * time, PSC_ERR_IO when the peer closed the connection or died. After any
 * failure but a timeout with nothing read (or a refused peer or argument),
 * the socket's framing is lost: close it.
 */
psc_status_t psc_share_send(psc_context_t *ctx, int sock, const psc_share_msg_t *msg, int timeout_ms);
psc_status_t psc_share_recv(psc_context_t *ctx, int sock, psc_share_msg_t *msg, int timeout_ms);

psc_share_kind_t psc_share_kind(const psc_share_t *s);
/* The memory's address (UVA: valid in every context of this process); NULL for an event. */
void *psc_share_ptr(const psc_share_t *s);
/* Bytes usable: the size asked for by the exporter. */
size_t psc_share_size(const psc_share_t *s);
/* The GPU the memory or event is on, as this process numbers its GPUs. */
int psc_share_gpu(const psc_share_t *s);
/* The event (CUevent) of PSC_SHARE_EVENT, for cuEventRecord and cuStreamWaitEvent; NULL for memory. */
struct CUevent_st *psc_share_event(const psc_share_t *s);

#define PSC_ACCESS_NONE 0u
#define PSC_ACCESS_READ 1u
#define PSC_ACCESS_READWRITE 3u

/*
 * What GPU `gpu` may do with the shared memory, as the driver says
 * (cuMemGetAccess for VMM memory, the pointer's access flags in the GPU's
 * context for legacy memory): PSC_ACCESS_NONE, _READ or _READWRITE. Nothing
 * is touched to find out.
 */
psc_status_t psc_share_access(psc_context_t *ctx, const psc_share_t *s, int gpu, unsigned *access);

/*
 * Unmap and release (importer) or free (exporter). The caller makes sure no
 * GPU work still uses it; an exporter frees after its importers closed theirs.
 */
psc_status_t psc_share_free(psc_share_t *s);

/* ---------------------------------------------------------------- all-reduce of the application's buffers */

typedef struct psc_allreduce psc_allreduce_t;

/* Element types of psc_allreduce_sum, numbered as NCCL's ncclDataType_t (and psc_dtype_t). */
#define PSC_AR_FLOAT16 6
#define PSC_AR_FLOAT32 7
#define PSC_AR_BFLOAT16 9

/*
 * A group of ndev GPUs of this process (ranks 0..ndev-1 in list order, 1 to
 * 8, each GPU once) that sum buffers together with p2pscope's own kernels:
 * each GPU gets the group's buffers (4 x (ranks + 2) x slot, the slot
 * max_bytes rounded up to 16 B, at most 8 MiB: larger calls go through it
 * in pieces; the all-gather's 8 x ranks x min(slot, 4 MiB); the copy
 * engines' 32 MiB more from max_bytes 4 MiB on, 2 ranks or more) and
 * writes into the others' (peer access between every pair is turned on,
 * and off again when the last group using it is destroyed where the
 * caller had it off: it must stay on meanwhile, so no psc_peer_disable
 * between them, nor p2pscope's P2P-off measurements). max_bytes: the
 * largest call per rank, 16 B to 1 TiB. PSC_ERR_UNSUPPORTED with the pair
 * named where two GPUs cannot reach each other's memory; PSC_ERR_INVALID
 * for the list or size (what is accepted said); PSC_ERR_NO_MEMORY. *out
 * only on success. A group not destroyed is destroyed with the context.
 */
psc_status_t psc_allreduce_create(psc_context_t *ctx, const int *devices, int ndev, size_t max_bytes,
                                  psc_allreduce_t **out);

/* How the processes of a group made by psc_allreduce_join talk while it is made: the caller's channel (MPI). */
typedef struct {
    int nprocs, proc; /* processes in the group (1 to 8), and this one's rank in it (0..nprocs-1) */
    void *arg;
    /* each process's len bytes of mine into all, in process order (nprocs x len bytes), in every process; 0: done */
    int (*allgather)(const void *mine, void *all, size_t len, void *arg);
} psc_ar_procs_t;

/*
 * This process's rank (procs->proc) of a group of procs->nprocs processes
 * with one GPU each (`device` here): every process of the group calls it at
 * the same time, with the same max_bytes. The buffers are as
 * psc_allreduce_create's, each process's shared with the others by CUDA IPC
 * (legacy handles: every process must see every GPU of the group; two
 * processes may share a GPU, slowly: without MPS their kernels take turns).
 * Every rank runs the same grid (the smallest SM count of the group). Every
 * process returns the same status: PSC_ERR_INVALID when the processes
 * disagree (max_bytes, nprocs) or procs is malformed, PSC_ERR_IO when the
 * allgather fails, PSC_ERR_UNSUPPORTED where a peer's memory cannot be
 * mapped. psc_allreduce_sum then takes arrays of one (this process's rank);
 * timeouts, check and destroy as for psc_allreduce_create's groups (destroy
 * after every process's GPU work on the group is done).
 */
psc_status_t psc_allreduce_join(psc_context_t *ctx, int device, const psc_ar_procs_t *procs, size_t max_bytes,
                                psc_allreduce_t **out);

/*
 * Sum count elements of dtype (PSC_AR_FLOAT32, PSC_AR_FLOAT16,
 * PSC_AR_BFLOAT16) over the group. The arrays have one entry per rank of
 * the group in this process (every rank for psc_allreduce_create's groups,
 * this process's one for psc_allreduce_join's): rank i reads send[i] and
 * writes recv[i] (the same address: in place; else apart), both on its GPU
 * and 16-byte aligned, the work enqueued on streams[i] (a stream of rank i's
 * GPU's primary context). Returns once enqueued (no synchronisation, no
 * allocation), and may be captured in a CUDA graph (each rank's stream in a
 * capture; one thread may capture every GPU's, ending all before
 * instantiating any, and launch the graphs one after the other: captured
 * calls of psc_allreduce_create's groups go by the kernels, one launch per
 * rank, never by the copy engines, whose many operations per GPU, each
 * waiting on the other GPU, a driver may not queue before that GPU's graph
 * progresses, which needs the next graph launched). On GPUs of compute capability 9.0 or later the kernel
 * is a programmatic dependent launch: it may start while the work ahead of
 * it in the stream finishes (it waits for that work before reading
 * anything), and a kernel launched after it the same way may start before
 * it ends (that kernel must call cudaGridDependencySynchronize before it
 * reads recv or writes send or recv). Every rank's result is bit-identical: the ranks' values are
 * added in rank order in fp32 (fp16 and bf16 rounded once at the end). The
 * group's calls run in the same order on every rank, one at a time on each:
 * a rank's next call goes on the stream of its last, or on a stream ordered
 * after it by an event. A call whose peers' data does not come within
 * timeout_ms (0: 10 s) of a thread's first long wait gives up, as do all
 * the group's later calls: psc_allreduce_check says so. A launch that fails
 * part way leaves the group refusing further calls (the ranks enqueued
 * before wait in vain). PSC_ERR_INVALID, nothing enqueued, for a type,
 * count (count x size above max_bytes), pointer or stream refused, with
 * why.
 */
psc_status_t psc_allreduce_sum(psc_allreduce_t *ar, void *const *recv, const void *const *send, size_t count,
                               int dtype, struct CUstream_st *const *streams, unsigned timeout_ms);

/*
 * Reduce-scatter (sum) over the group, NCCL's ncclReduceScatter: rank i's
 * send[i] holds n parts of count elements (n the group's ranks; part r
 * from element r x count), and each rank's recv[i] gets the sum over the
 * ranks of their part of its rank: count elements, bit-identical on every
 * call as psc_allreduce_sum's (rank order, fp32, rounded once). In place:
 * recv[i] is send[i]'s own part (send[i] + rank x count elements); else
 * apart from send[i]'s n x count. send[i] and (but in place) recv[i]
 * 16-byte aligned; count x size up to the group's max_bytes. By the
 * one-shot kernel (each rank pushes each peer's part into the peer's
 * buffers, 1 / n of what an all-reduce moves), or, after
 * psc_allreduce_tune, by ncclReduceScatter in a class where NCCL was timed
 * faster: the streams, graphs, ordering with the group's other calls,
 * timeouts and refusals as psc_allreduce_sum's.
 */
psc_status_t psc_allreduce_reduce_scatter(psc_allreduce_t *ar, void *const *recv, const void *const *send,
                                          size_t count, int dtype, struct CUstream_st *const *streams,
                                          unsigned timeout_ms);

/*
 * All-gather over the group, NCCL's ncclAllGather: rank i's send[i] holds
 * count elements, and every rank's recv[i] gets n parts of count elements
 * (n the group's ranks), part r rank r's send, every byte as sent (NaNs
 * and every other bit pattern too: no data word is taken for a flag). In
 * place: send[i] is recv[i]'s own part (recv[i] + rank x count elements);
 * else apart from recv[i]'s n x count. recv[i] and (but in place) send[i]
 * 16-byte aligned; count x size up to the group's max_bytes. By its kernel
 * (each rank pushes its part into every peer's buffers, lines of 8 data
 * bytes and their flags; calls larger than the group's slot, or 4 MiB, in
 * pieces); in a group of this process's GPUs, eager parts from 4 MiB by the
 * copy engines, straight into every peer's recv; or, after
 * psc_allreduce_tune, by ncclAllGather in a class where NCCL was timed
 * faster: the streams, graphs, ordering with the group's other calls,
 * timeouts and refusals as psc_allreduce_sum's. dtype only sizes the
 * elements.
 */
psc_status_t psc_allreduce_all_gather(psc_allreduce_t *ar, void *const *recv, const void *const *send, size_t count,
                                      int dtype, struct CUstream_st *const *streams, unsigned timeout_ms);

/* One size class of psc_allreduce_tune's table: calls of bytes/2 + 1 to bytes per rank (the first: 1 to 16 B; the
   reduce-scatter's and the all-gather's: per part). */
typedef struct {
    uint64_t bytes;   /* the class's bound, a power of two; timed at min(bytes, max_bytes) (a part's: max_bytes / n) */
    double own_us;    /* p2pscope's kernel: microseconds per call, the slowest rank's, the median of the repetitions */
    double nccl_us;   /* ncclAllReduce (ncclReduceScatter, ncclAllGather), timed the same way */
    int nccl;         /* 1: the group's calls of this class go to NCCL (nccl_us < own_us) */
    int copy_engines; /* 1: p2pscope's calls of this class go by its copy engines, timed faster than its kernels
                         (own_us theirs); 0: by its kernels (classes where both were timed, from 4 MiB) */
} psc_ar_tune_row_t;

#define PSC_AR_TUNE_ROWS 37 /* 16 B to 1 TiB */

/* psc_allreduce_tune's measurements and choices, the same in every process of a group. */
typedef struct {
    int rows;                            /* classes measured: 16 B up to max_bytes rounded up to a power of two */
    int nccl_version;                    /* ncclGetVersion's code (22807 for 2.28.7) */
    int graphs;                          /* 1: timed as CUDA graph replays; 0: eagerly (the driver cannot capture) */
    int reps;                            /* repetitions each way, the two ways alternating */
    psc_ar_tune_row_t row[PSC_AR_TUNE_ROWS]; /* psc_allreduce_sum's classes */
    int part_rows;                       /* the reduce-scatter's and the all-gather's classes: parts of 16 B up to
                                            max_bytes / n rounded up to a power of two (0 where not tuned) */
    psc_ar_tune_row_t rs[PSC_AR_TUNE_ROWS]; /* psc_allreduce_reduce_scatter's, against ncclReduceScatter */
    psc_ar_tune_row_t ag[PSC_AR_TUNE_ROWS]; /* psc_allreduce_all_gather's, against ncclAllGather */
} psc_ar_tuning_t;

/*
 * Measure, for every power of two from 16 B to the group's max_bytes, whether
 * NCCL's all-reduce is faster than p2pscope's kernel on this machine, and
 * from then on send each psc_allreduce_sum whose bytes per rank fall in a
 * class where it was (bytes rounded up to a power of two) to ncclAllReduce
 * instead: ncclGroupStart, one ncclAllReduce per rank of this process on its
 * stream, ncclGroupEnd, enqueued on the same streams and capturable in the
 * same way, with the same checks and PSC_ERR_INVALID refusals first. The
 * same for psc_allreduce_reduce_scatter and psc_allreduce_all_gather against
 * ncclReduceScatter and ncclAllGather, by their parts' bytes, for parts up to
 * max_bytes / n (larger parts go by the kernels: the table's part_rows). Both
 * ways are timed alike (p2pscope's copy engines in psc_allreduce_create's
 * groups eagerly, as only eager calls take them): fp32 sums in place in a buffer of max_bytes per GPU
 * (allocated for the call), a CUDA graph of up to 16 calls captured on
 * `streams` (one per rank of this process, as psc_allreduce_sum's) and
 * replayed, the two ways alternating over several repetitions, each process
 * timing its replays from launch to its streams' end; the slowest process's
 * median decides, so every process takes the same decisions. The call
 * blocks until done (it synchronises `streams`; milliseconds to seconds for
 * large max_bytes) and must come between the group's calls, by every process
 * of a joined group together: `procs` is then the same kind of channel as
 * psc_allreduce_join's (the NCCL id travels through it), NULL for
 * psc_allreduce_create's groups. NCCL is loaded from P2PSCOPE_LIBNCCL, else
 * libnccl.so.2, and one communicator per rank of this process is made over
 * the group's GPUs (ncclCommInitRank; the processes' GPUs as for NCCL). Once
 * per group. Errors: PSC_ERR_UNSUPPORTED naming why without a usable NCCL
 * (in any process of the group); PSC_ERR_INVALID for procs, streams or a
 * group already tuned or refusing calls; PSC_ERR_NO_MEMORY; PSC_ERR_IO when
 * the allgather fails; PSC_ERR_DRIVER or PSC_ERR_TIMEOUT from NCCL or the
 * kernel. On any error the group keeps its own kernel for every call, as
 * before, except where a launch failed in one process while the others
 * timed their calls: their kernels then wait out the timeout (the group is
 * dead: psc_allreduce_check says so), or NCCL's never end (as NCCL's
 * would not for any caller). Calls sent to NCCL have NCCL's own behaviour: timeout_ms does not
 * apply to them (a rank that never calls leaves its peers' NCCL kernels
 * waiting, as NCCL's do), and psc_allreduce_check reports only p2pscope's
 * kernel's timeouts.
 */
psc_status_t psc_allreduce_tune(psc_allreduce_t *ar, const psc_ar_procs_t *procs, struct CUstream_st *const *streams);

/*
 * The table psc_allreduce_tune measured, into *out (for tools to show and
 * record). PSC_ERR_INVALID for a group not tuned (what is accepted said).
 */
psc_status_t psc_allreduce_tuning(const psc_allreduce_t *ar, psc_ar_tuning_t *out);

/*
 * How a group's calls went (psc_allreduce_last_way): p2pscope's one-shot
 * kernel (every rank reads every peer's whole buffer; also the
 * reduce-scatter's and the all-gather's), its two-shot kernel (3 ranks or more, large calls: each
 * rank sums a part, then gathers), its copy engines (2 ranks, large eager
 * calls), or ncclAllReduce (a class psc_allreduce_tune found NCCL faster in).
 */
enum { PSC_AR_WAY_NONE = 0, PSC_AR_WAY_ONESHOT = 1, PSC_AR_WAY_TWOSHOT = 2, PSC_AR_WAY_COPY_ENGINES = 3,
       PSC_AR_WAY_NCCL = 4 };

/*
 * The way this process's last call of the group (psc_allreduce_sum or
 * psc_allreduce_reduce_scatter, psc_allreduce_all_gather) that was enqueued went: PSC_AR_WAY_*. A call
 * captured into a graph went the way its replays go. PSC_AR_WAY_NONE before
 * any call was enqueued, and for NULL.
 */
int psc_allreduce_last_way(const psc_allreduce_t *ar);
/* "one-shot", "two-shot", "copy-engines", "nccl"; NULL for PSC_AR_WAY_NONE and anything else. */
const char *psc_allreduce_way_name(int way);

psc_status_t psc_allreduce_check(psc_allreduce_t *ar);

/*
 * The caller makes sure no GPU work still uses the group. A joined group:
 * every process destroys it together, the channel it joined with (procs,
 * kept by the group) still working: each closes its view of the others'
 * buffers, they meet, then each frees its own (none is freed while another
 * process has it open); a tuned group's NCCL communicators go first
 * (finalized, which also waits for the peers). A group left to
 * psc_context_destroy is freed there without a meeting. NULL is fine.
 */
void psc_allreduce_destroy(psc_allreduce_t *ar);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
#ifdef __cplusplus
}
#endif
#endif /* P2PSCOPE_H */
