/* The latency tests, their cases, and the pure helpers (percentiles, chains). */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "lat/chase_seq.h"
#include "runner/runner.h"
#include "util/registry.h"

#define MiB (1ull << 20)
#define T(n, t, d, m, w, off, to, h, ws, g) {n, t, d, PSC_LAT_##m, PSC_LAT_##w, off, to, PSC_HOSTMEM_##h, ws, g, 0, 0, 0}

static const psc_lat_test_info_t psc__lat_tests[] = {
    T("local_chase", "GPU -> its own memory, pointer chase, 2 MiB working set (L2-resident)",
      "dependent 8-byte loads by one thread, random order, 128-byte stride", CHASE, LOCAL, 0, 0, PINNED, 2 * MiB, 1),
    T("local_chase_large", "GPU -> its own memory, pointer chase, 256 MiB working set (past the L2)",
      "the same over a working set no cache holds", CHASE, LOCAL, 0, 0, PINNED, 256 * MiB, 1),
    T("gpu_to_gpu_chase", "peer GPU memory -> GPU, pointer chase by the reading GPU, 2 MiB working set",
      "every ordered pair: the chain lives in the peer's memory", CHASE, PEER, 0, 0, PINNED, 2 * MiB, 2),
    T("gpu_to_gpu_chase_large", "peer GPU memory -> GPU, pointer chase by the reading GPU, 256 MiB working set",
      "every ordered pair, a working set no cache holds", CHASE, PEER, 0, 0, PINNED, 256 * MiB, 2),
    T("gpu_to_gpu_chase_sequential", "peer GPU memory -> GPU, pointer chase by the reading GPU, measured "
      "nvbandwidth's way (its device_to_device_latency_sm)",
      "a sequential chain (each 8-byte word points 128 B ahead) in a 512 MiB buffer, plain loads, one launch per SM "
      "of 1,000,000 / SMs loads from the start, events around each: the mean is nvbandwidth's figure",
      CHASE, PEER, 0, 0, PINNED, PSC_CHASE_SEQ_BYTES, 2),
    T("host_to_gpu_chase", "host (pinned) -> GPU, pointer chase by the GPU, 2 MiB working set",
      "the chain lives in pinned host memory, read over PCIe", CHASE, HOST, 0, 0, PINNED, 2 * MiB, 1),
    T("host_to_gpu_chase_large", "host (pinned) -> GPU, pointer chase by the GPU, 256 MiB working set",
      "the same over a working set no cache holds", CHASE, HOST, 0, 0, PINNED, 256 * MiB, 1),
    T("gpu_gpu_flag", "GPU -> GPU -> GPU flag round trip through each other's memory (one way = half)",
      "a kernel writes into the peer, the peer's kernel answers back", FLAG, PEER, 0, 0, PINNED, 0, 2),
    T("cpu_gpu_flag", "CPU -> GPU -> CPU flag round trip through mapped pinned memory (one way = half)",
      "the CPU writes a flag, a GPU kernel polls it and answers", FLAG, HOST, 0, 0, PINNED, 0, 1),
    T("gpu_to_gpu_copy_ce", "GPU -> GPU small copies, copy engine, P2P on, issued by the source",
      "back-to-back copies of 4 B to 1 MiB: GPU time per copy and CPU time per call", COPY, PEER, 0, 0, PINNED, 0, 2),
    T("gpu_to_gpu_copy_p2p_off_ce", "GPU -> GPU small copies, copy engine, P2P off (staged through the host)",
      "the same with peer access off", COPY, PEER, 1, 0, PINNED, 0, 2),
    T("gpu_local_copy_ce", "GPU -> same GPU small copies, copy engine",
      "back-to-back copies of 4 B to 1 MiB inside each GPU's memory: GPU time per copy and CPU time per call",
      COPY, LOCAL, 0, 0, PINNED, 0, 1),
    T("host_to_gpu_sync_copy", "host (pinned) -> GPU, synchronous cuMemcpy per call, timed by the CPU",
      "what a program pays per small transfer, 1 B to 1 MiB", SYNC, HOST, 0, 1, PINNED, 0, 1),
    T("gpu_to_host_sync_copy", "GPU -> host (pinned), synchronous cuMemcpy per call, timed by the CPU",
      "what a program pays per small transfer, 1 B to 1 MiB", SYNC, HOST, 0, 0, PINNED, 0, 1),
    T("host_to_gpu_sync_copy_pageable", "host (pageable) -> GPU, synchronous cuMemcpy per call, timed by the CPU",
      "the same from malloc'd memory", SYNC, HOST, 0, 1, PAGEABLE, 0, 1),
    T("gpu_to_host_sync_copy_pageable", "GPU -> host (pageable), synchronous cuMemcpy per call, timed by the CPU",
      "the same into malloc'd memory", SYNC, HOST, 0, 0, PAGEABLE, 0, 1),
    /* gpumap/lat_map.c: through a CPU mapping of GPU memory (gdrcopy's copylat, pplat and apiperf) */
    T("host_to_gpu_copy_gpumap", "host (pinned) -> GPU, CPU stores through a CPU mapping of GPU memory, per call, "
      "beside a synchronous cuMemcpyHtoD", "gdrcopy's copylat write: 1 B to 64 KiB", SYNC, GPUMAP, 0, 1, PINNED, 0, 1),
    T("gpu_to_host_copy_gpumap", "GPU -> host (pinned), CPU loads through a CPU mapping of GPU memory, per call, "
      "beside a synchronous cuMemcpyDtoH", "gdrcopy's copylat read: 1 B to 64 KiB", SYNC, GPUMAP, 0, 0, PINNED, 0, 1),
    T("cpu_gpu_flag_gpumap", "CPU -> GPU -> CPU flag round trip in GPU memory the CPU maps (one way = half)",
      "gdrcopy's pplat: the CPU writes a flag through the mapping, a GPU kernel polls it and answers beside it",
      FLAG, GPUMAP, 0, 0, PINNED, 0, 1),
    T("map_cost_gpumap", "GPU memory -> the CPU's address space: psc_gpumap_map (pin and map) and psc_gpumap_unmap per call by "
      "size, timed by the CPU",
      "gdrcopy's apiperf: 64 KiB to 64 MiB", MAPCOST, GPUMAP, 0, 0, PINNED, 0, 1),
    /* nvbandwidth 0.10's TMA latency (issue 35); last, so no earlier test's index moves */
    {"gpu_to_gpu_chase_tma", "peer GPU memory -> GPU, pointer chase by bulk copies (TMA) of 16 bytes by the reading "
     "GPU, 2 MiB working set (compute capability 9.0 and newer)",
     "every ordered pair: each hop a cp.async.bulk into shared memory, waited on, the next pointer read there",
     PSC_LAT_CHASE, PSC_LAT_PEER, 0, 0, PSC_HOSTMEM_PINNED, 2 * MiB, 2, 1, 0, 0},
    /* p2pBandwidthLatencyTest's --p2p_read and --sm_copy latency (issue 35) */
    {"gpu_to_gpu_copy_read_ce", "GPU -> GPU small copies, copy engine, P2P on, issued by the destination (a read)",
     "back-to-back copies of 4 B to 1 MiB pulled by the receiving GPU: GPU time per copy and CPU time per call",
     PSC_LAT_COPY, PSC_LAT_PEER, 0, 0, PSC_HOSTMEM_PINNED, 0, 2, 0, 1, 0},
    {"gpu_to_gpu_copy_sm", "GPU -> GPU small copies by an SM kernel, one launch a copy, P2P on, issued by the source",
     "back-to-back kernel copies of 4 B to 1 MiB, the source's SMs writing into the peer: GPU time per copy and CPU "
     "time per launch", PSC_LAT_COPY, PSC_LAT_PEER, 0, 0, PSC_HOSTMEM_PINNED, 0, 2, 0, 0, 1},
    {"gpu_to_gpu_copy_read_sm", "GPU -> GPU small copies by an SM kernel, one launch a copy, P2P on, issued by the "
     "destination (a read)", "back-to-back kernel copies of 4 B to 1 MiB, the receiving GPU's SMs reading the peer: "
     "GPU time per copy and CPU time per launch", PSC_LAT_COPY, PSC_LAT_PEER, 0, 0, PSC_HOSTMEM_PINNED, 0, 2, 0, 1, 1},
};

#undef T

static const psc_registry_t psc__registry = PSC_REGISTRY_OF(psc__lat_tests, psc_lat_test_info_t);

const psc_registry_t *psc_lat_registry(void)
{
    return &psc__registry;
}

int psc_lat_test_count(void)
{
    return psc__registry.count;
}

const psc_lat_test_info_t *psc_lat_test_info(psc_lat_test_t t)
{
    return psc__registry_at(&psc__registry, t);
}

int psc__lat_chase_is_sequential(const psc_lat_test_info_t *ti)
{
    for (size_t i = 0; ti && i < sizeof(psc__lat_tests) / sizeof(psc__lat_tests[0]); i++)
        if (ti == &psc__lat_tests[i])
            return strcmp(ti->name, "gpu_to_gpu_chase_sequential") == 0;
    return 0;
}

psc_status_t psc_lat_test_from_name(const char *name, psc_lat_test_t *out)
{
    return psc__registry_lookup(&psc__registry, name, out);
}

int psc_lat_test_match(const char *glob, psc_lat_test_t *out, int cap)
{
    return psc__registry_match(&psc__registry, glob, out, cap);
}

psc_status_t psc_lat_cases(const psc_context_t *ctx, psc_lat_test_t test, const int *devices, int ndev,
                           psc_lat_case_t *cases, size_t cap, size_t *n)
{
    const psc_lat_test_info_t *ti = psc_lat_test_info(test);
    int d[PSC_MAX_GPUS], m;
    size_t k = 0;

    m = psc__cases_gpus(ctx, "psc_lat_cases", "latency", &psc__registry, test, devices, ndev, n, d, PSC_MAX_GPUS);
    if (m < 0)
        return PSC_ERR_INVALID; /* psc__cases_gpus recorded why */
    for (int i = 0; m >= ti->min_gpus && i < m; i++) {
        if (ti->where != PSC_LAT_PEER) {
            psc_lat_case_t c = {test, d[i], d[i], d[i]};

            /* the host is the source, except where data goes to it; the map cost has no host end */
            if ((ti->where == PSC_LAT_HOST || (ti->where == PSC_LAT_GPUMAP && ti->method != PSC_LAT_MAPCOST)) &&
                !(ti->method == PSC_LAT_SYNC && !ti->to_gpu))
                c.src = PSC_HOST;
            if (ti->method == PSC_LAT_SYNC && !ti->to_gpu)
                c.dst = PSC_HOST;
            if (cases && k < cap)
                cases[k] = c;
            k++;
            continue;
        }
        for (int j = 0; j < m; j++) {
            /* chase: the chain is on i, read by j; flag and copy: i starts, j answers or receives (a copy issued
               by the destination: j pulls) */
            psc_lat_case_t c = {test, d[i], d[j], ti->method == PSC_LAT_CHASE || ti->by_dst ? d[j] : d[i]};

            if (i == j)
                continue;
            if (cases && k < cap)
                cases[k] = c;
            k++;
        }
    }
    *n = k;
    return PSC_OK;
}

psc_status_t psc_percentiles(const double *v, unsigned n, psc_pctl_t *out)
{
    double *s, sum = 0;
    psc_pctl_t p;

    if (!v || !out || !n)
        return PSC_ERR_INVALID;
    s = malloc(n * sizeof(*s));
    if (!s)
        return PSC_ERR_NO_MEMORY;
    memcpy(s, v, n * sizeof(*s));
    qsort(s, n, sizeof(*s), psc__cmp_double);
    for (unsigned i = 0; i < n; i++)
        sum += s[i];
    /* Nearest rank: the smallest value with at least p% of the samples at or below it. */
#define PSC__RANK(pct) s[(unsigned)((pct) * n / 100.0 + 0.999999) > 0 ? (unsigned)((pct) * n / 100.0 + 0.999999) - 1 : 0]
    p.n = n;
    p.min = s[0];
    p.max = s[n - 1];
    p.p50 = PSC__RANK(50);
    p.p90 = PSC__RANK(90);
    p.p99 = PSC__RANK(99);
    p.mean = sum / n;
#undef PSC__RANK
    free(s);
    *out = p;
    return PSC_OK;
}

/* splitmix64 steps: a small, seedable generator for the chain's order. */
static uint64_t psc__rand(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);

    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void psc__chain_build(uint32_t *next, uint32_t n, uint64_t seed)
{
    uint32_t *perm;

    if (!next || n == 0)
        return;
    if (n == 1) {
        next[0] = 0;
        return;
    }
    perm = malloc(n * sizeof(*perm));
    if (!perm) {
        for (uint32_t i = 0; i < n; i++) /* still one cycle, just not random */
            next[i] = (i + 1) % n;
        return;
    }
    for (uint32_t i = 0; i < n; i++)
        perm[i] = i;
    /* Sattolo: swapping only with earlier positions makes one n-cycle. */
    for (uint32_t i = n - 1; i > 0; i--) {
        uint32_t j = (uint32_t)(psc__rand(&seed) % i);
        uint32_t t = perm[i];

        perm[i] = perm[j];
        perm[j] = t;
    }
    for (uint32_t i = 0; i < n; i++)
        next[i] = perm[i];
    free(perm);
}

void psc__chain_fill_stride(uint64_t *words, uint64_t first, uint64_t count, uint64_t n, uint64_t stride,
                            uint64_t base)
{
    uint64_t j;

    if (!words || n == 0)
        return;
    j = (first % n + stride % n) % n; /* the word that word `first` points at */
    for (uint64_t i = 0; i < count; i++) {
        words[i] = base + 8 * j;
        if (++j == n)
            j = 0;
    }
}

uint64_t psc__chain_stride_end(uint64_t n, uint64_t stride, uint64_t hops)
{
    if (n == 0)
        return 0;
    return (uint64_t)((unsigned __int128)(hops % n) * (stride % n) % n); /* no overflow for any n */
}
