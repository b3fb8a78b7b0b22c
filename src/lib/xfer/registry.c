/* The bandwidth tests: one table, so the CLI, JSON and docs all name the same things. */
#include "util/registry.h"
#include "xfer/copy.h"

#define CE PSC_ENGINE_CE
#define SM PSC_ENGINE_SM
#define PIN PSC_HOSTMEM_PINNED
#define PAGE PSC_HOSTMEM_PAGEABLE
#define WC PSC_HOSTMEM_WC
#define REG PSC_HOSTMEM_REGISTERED
#define CPU PSC_ENGINE_CPU

/* name, title, description, shape, engine, by_reader, host memory, minimum GPUs; LOCAL_SM: one way, access a */
#define T(n, t, d, p, e, r, h, g) {n, t, d, PSC_SHAPE_##p, e, r, h, g, PSC_BW_ACCESS_COPY}
#define LOCAL_SM(n, t, d, a) {n, t, d, PSC_SHAPE_LOCAL, SM, 0, PIN, 1, PSC_BW_ACCESS_##a}
#define TMA(n, t, d, r) {n, t, d, PSC_SHAPE_PAIR, SM, r, PIN, 2, PSC_BW_ACCESS_BULK}

static const psc_bw_test_info_t psc__tests[] = {
    T("gpu_to_gpu_read_ce", "GPU -> GPU, copy engine, read (the destination GPU issues the copy)",
      "every ordered GPU pair; the destination's copy engine pulls from the peer", PAIR, CE, 1, PIN, 2),
    T("gpu_to_gpu_write_ce", "GPU -> GPU, copy engine, write (the source GPU issues the copy)",
      "every ordered GPU pair; the source's copy engine pushes to the peer", PAIR, CE, 0, PIN, 2),
    T("gpu_to_gpu_read_sm", "GPU -> GPU, SM copy kernel, read (runs on the destination GPU)",
      "every ordered GPU pair; a kernel on the destination loads from the peer", PAIR, SM, 1, PIN, 2),
    T("gpu_to_gpu_write_sm", "GPU -> GPU, SM copy kernel, write (runs on the source GPU)",
      "every ordered GPU pair; a kernel on the source stores to the peer", PAIR, SM, 0, PIN, 2),
    T("gpu_to_gpu_bidir_read_ce", "GPU <-> GPU both directions at once, copy engine, read (each destination issues)",
      "every GPU pair, both directions together; each direction and the total", PAIR_BIDIR, CE, 1, PIN, 2),
    T("gpu_to_gpu_bidir_write_ce", "GPU <-> GPU both directions at once, copy engine, write (each source issues)",
      "every GPU pair, both directions together; each direction and the total", PAIR_BIDIR, CE, 0, PIN, 2),
    T("gpu_to_gpu_bidir_read_sm", "GPU <-> GPU both directions at once, SM copy kernel, read (on each destination)",
      "every GPU pair, both directions together, SM kernels", PAIR_BIDIR, SM, 1, PIN, 2),
    T("gpu_to_gpu_bidir_write_sm", "GPU <-> GPU both directions at once, SM copy kernel, write (on each source)",
      "every GPU pair, both directions together, SM kernels", PAIR_BIDIR, SM, 0, PIN, 2),
    T("gpu_to_gpu_p2p_off_ce", "GPU -> GPU with peer access off (staged through host memory), copy engine, issued by the source",
      "what a copy costs without P2P: the driver stages it through the host", P2P_OFF, CE, 0, PIN, 2),
    T("gpu_to_gpu_bidir_p2p_off_ce", "GPU <-> GPU both directions at once with peer access off (staged through host memory), "
      "copy engine, each source issues", "every GPU pair, both directions together without P2P; each direction and the total",
      P2P_OFF_BIDIR, CE, 0, PIN, 2),
    T("all_to_one_write_ce", "every other GPU -> one GPU at once, copy engine, write (each source issues)",
      "all peers write into one GPU together; per source and the total", ALL_TO_ONE, CE, 0, PIN, 2),
    T("all_to_one_read_ce", "every other GPU -> one GPU at once, copy engine, read (the one GPU issues)",
      "one GPU pulls from all peers together; per source and the total", ALL_TO_ONE, CE, 1, PIN, 2),
    T("one_to_all_write_ce", "one GPU -> every other GPU at once, copy engine, write (the one GPU issues)",
      "one GPU pushes to all peers together; per destination and the total", ONE_TO_ALL, CE, 0, PIN, 2),
    T("one_to_all_read_ce", "one GPU -> every other GPU at once, copy engine, read (each destination issues)",
      "all peers pull from one GPU together; per destination and the total", ONE_TO_ALL, CE, 1, PIN, 2),
    T("all_to_one_write_sm", "every other GPU -> one GPU at once, SM copy kernel, write (on each source)",
      "all peers write into one GPU together, SM kernels", ALL_TO_ONE, SM, 0, PIN, 2),
    T("all_to_one_read_sm", "every other GPU -> one GPU at once, SM copy kernel, read (on the one GPU)",
      "one GPU loads from all peers together, SM kernels", ALL_TO_ONE, SM, 1, PIN, 2),
    T("one_to_all_write_sm", "one GPU -> every other GPU at once, SM copy kernel, write (on the one GPU)",
      "one GPU stores to all peers together, SM kernels", ONE_TO_ALL, SM, 0, PIN, 2),
    T("one_to_all_read_sm", "one GPU -> every other GPU at once, SM copy kernel, read (on each destination)",
      "all peers load from one GPU together, SM kernels", ONE_TO_ALL, SM, 1, PIN, 2),
    T("ring_write_ce", "GPU i -> GPU i+1 for every GPU at once (a ring), copy engine, write",
      "every GPU sends to the next one together; per GPU and the total", RING, CE, 0, PIN, 2),
    T("ring_write_sm", "GPU i -> GPU i+1 for every GPU at once (a ring), SM copy kernel, write",
      "every GPU sends to the next one together, SM kernels", RING, SM, 0, PIN, 2),

    T("host_to_gpu_ce", "host (pinned) -> GPU, copy engine", "pinned host memory into each GPU", H2D, CE, 1, PIN, 1),
    T("gpu_to_host_ce", "GPU -> host (pinned), copy engine", "each GPU into pinned host memory", D2H, CE, 0, PIN, 1),
    T("host_gpu_bidir_ce", "host (pinned) <-> GPU both directions at once, copy engine",
      "pinned host memory to and from each GPU together; each direction and the total", HOST_BIDIR, CE, 0, PIN, 1),
    T("host_to_gpu_pageable_ce", "host (pageable) -> GPU, copy engine (the driver stages it)",
      "malloc'd host memory into each GPU: compare with host_to_gpu_ce", H2D, CE, 1, PAGE, 1),
    T("gpu_to_host_pageable_ce", "GPU -> host (pageable), copy engine (the driver stages it)",
      "each GPU into malloc'd host memory: compare with gpu_to_host_ce", D2H, CE, 0, PAGE, 1),
    T("host_gpu_bidir_pageable_ce", "host (pageable) <-> GPU both directions at once, copy engine",
      "malloc'd host memory to and from each GPU together", HOST_BIDIR, CE, 0, PAGE, 1),
    T("host_to_gpu_wc_ce", "host (pinned write-combined) -> GPU, copy engine",
      "write-combined pinned host memory into each GPU", H2D, CE, 1, WC, 1),
    T("gpu_to_host_wc_ce", "GPU -> host (pinned write-combined), copy engine",
      "each GPU into write-combined pinned host memory", D2H, CE, 0, WC, 1),
    T("host_gpu_bidir_wc_ce", "host (pinned write-combined) <-> GPU both directions at once, copy engine",
      "write-combined host memory to and from each GPU together", HOST_BIDIR, CE, 0, WC, 1),
    T("host_to_gpu_registered_ce", "host (registered) -> GPU, copy engine",
      "malloc'd memory page-locked with cuMemHostRegister into each GPU", H2D, CE, 1, REG, 1),
    T("gpu_to_host_registered_ce", "GPU -> host (registered), copy engine",
      "each GPU into malloc'd memory page-locked with cuMemHostRegister", D2H, CE, 0, REG, 1),
    T("host_gpu_bidir_registered_ce", "host (registered) <-> GPU both directions at once, copy engine",
      "registered host memory to and from each GPU together", HOST_BIDIR, CE, 0, REG, 1),
    T("host_to_gpu_sm", "host (pinned, mapped) -> GPU, SM copy kernel reading host memory (zero-copy)",
      "a kernel on each GPU loads pinned host memory directly", H2D, SM, 1, PIN, 1),
    T("gpu_to_host_sm", "GPU -> host (pinned, mapped), SM copy kernel writing host memory (zero-copy)",
      "a kernel on each GPU stores into pinned host memory directly", D2H, SM, 0, PIN, 1),
    T("host_gpu_bidir_sm", "host (pinned, mapped) <-> GPU both directions at once, SM copy kernels (zero-copy)",
      "kernels load from and store to pinned host memory together", HOST_BIDIR, SM, 0, PIN, 1),
    T("host_to_gpu_wc_sm", "host (write-combined, mapped) -> GPU, SM copy kernel (zero-copy)",
      "a kernel on each GPU loads write-combined host memory", H2D, SM, 1, WC, 1),
    T("gpu_to_host_wc_sm", "GPU -> host (write-combined, mapped), SM copy kernel (zero-copy)",
      "a kernel on each GPU stores into write-combined host memory", D2H, SM, 0, WC, 1),
    T("host_gpu_bidir_wc_sm", "host (write-combined, mapped) <-> GPU both directions at once, SM kernels",
      "kernels load from and store to write-combined host memory together", HOST_BIDIR, SM, 0, WC, 1),
    T("host_to_gpu_registered_sm", "host (registered, mapped) -> GPU, SM copy kernel (zero-copy)",
      "a kernel on each GPU loads registered host memory", H2D, SM, 1, REG, 1),
    T("gpu_to_host_registered_sm", "GPU -> host (registered, mapped), SM copy kernel (zero-copy)",
      "a kernel on each GPU stores into registered host memory", D2H, SM, 0, REG, 1),
    T("host_gpu_bidir_registered_sm", "host (registered, mapped) <-> GPU both directions at once, SM kernels",
      "kernels load from and store to registered host memory together", HOST_BIDIR, SM, 0, REG, 1),
    T("host_to_all_ce", "host (pinned) -> every GPU at once, copy engine",
      "pinned host memory into all GPUs together; per GPU and the total", HOST_TO_ALL, CE, 1, PIN, 1),
    T("all_to_host_ce", "every GPU -> host (pinned) at once, copy engine",
      "all GPUs into pinned host memory together; per GPU and the total", ALL_TO_HOST, CE, 0, PIN, 1),
    T("all_host_bidir_ce", "host (pinned) <-> every GPU, both directions at once, copy engine",
      "every GPU to and from the host together; per transfer and the total", ALL_HOST_BIDIR, CE, 0, PIN, 1),
    T("host_to_all_sm", "host (pinned, mapped) -> every GPU at once, SM copy kernels",
      "kernels on all GPUs load pinned host memory together", HOST_TO_ALL, SM, 1, PIN, 1),
    T("all_to_host_sm", "every GPU -> host (pinned, mapped) at once, SM copy kernels",
      "kernels on all GPUs store into pinned host memory together", ALL_TO_HOST, SM, 0, PIN, 1),
    T("all_host_bidir_sm", "host (pinned, mapped) <-> every GPU, both directions at once, SM copy kernels",
      "kernels on all GPUs load and store host memory together", ALL_HOST_BIDIR, SM, 0, PIN, 1),

    T("gpu_local_ce", "GPU -> same GPU, copy engine (bytes copied counted once: read + write traffic is twice that)",
      "a copy inside each GPU's memory", LOCAL, CE, 0, PIN, 1),
    T("gpu_local_sm", "GPU -> same GPU, SM copy kernel (bytes copied counted once: read + write traffic is twice that)",
      "a copy kernel inside each GPU's memory", LOCAL, SM, 0, PIN, 1),

    /* gpumap/bw_map.c: the CPU itself copies through a mapping of GPU memory (gdrcopy's copybw) */
    T("host_to_gpu_gpumap_cpu", "host (pageable) -> GPU, CPU stores through a CPU mapping of GPU memory (gdrcopy's copybw write)",
      "the CPU writes each GPU's memory through psc_gpumap_map's mapping", H2D, CPU, 0, PAGE, 1),
    T("gpu_to_host_gpumap_cpu", "GPU -> host (pageable), CPU loads through a CPU mapping of GPU memory (gdrcopy's copybw read; "
      "uncached: slow)", "the CPU reads each GPU's memory through psc_gpumap_map's mapping", D2H, CPU, 0, PAGE, 1),

    /* nvbandwidth 0.10's additions (issue 35), at the end so no earlier test's index moves */
    LOCAL_SM("gpu_local_read_sm", "GPU -> SM kernel on the same GPU, read only (loads, no stores but their sum, which "
             "is checked; bytes read counted)", "a kernel on each GPU only loads its own memory", READ),
    LOCAL_SM("gpu_local_write_sm", "SM kernel -> same GPU, write only (stores, no loads; bytes written counted)",
             "a kernel on each GPU only stores into its own memory", WRITE),
    TMA("gpu_to_gpu_read_tma", "GPU -> GPU, SM bulk copies (TMA), read (runs on the destination GPU; compute "
        "capability 9.0 and newer)", "every ordered GPU pair; the destination's TMA pulls from the peer", 1),
    TMA("gpu_to_gpu_write_tma", "GPU -> GPU, SM bulk copies (TMA), write (runs on the source GPU; compute "
        "capability 9.0 and newer)", "every ordered GPU pair; the source's TMA pushes to the peer", 0),
};

#undef T
#undef LOCAL_SM
#undef TMA

static const psc_registry_t psc__registry = PSC_REGISTRY_OF(psc__tests, psc_bw_test_info_t);

const psc_registry_t *psc_bw_registry(void)
{
    return &psc__registry;
}

int psc_bw_test_count(void)
{
    return psc__registry.count;
}

const psc_bw_test_info_t *psc_bw_test_info(psc_bw_test_t t)
{
    return psc__registry_at(&psc__registry, t);
}

const char *psc_bw_test_name(psc_bw_test_t t)
{
    return psc__registry_name(&psc__registry, t);
}

const char *psc_bw_test_title(psc_bw_test_t t)
{
    const psc_bw_test_info_t *i = psc_bw_test_info(t);

    return i ? i->title : "unknown";
}

int psc__shape_p2p_off(psc_shape_t shape)
{
    return shape == PSC_SHAPE_P2P_OFF || shape == PSC_SHAPE_P2P_OFF_BIDIR;
}

psc_status_t psc_bw_test_from_name(const char *name, psc_bw_test_t *out)
{
    return psc__registry_lookup(&psc__registry, name, out);
}

int psc_bw_test_match(const char *glob, psc_bw_test_t *out, int cap)
{
    return psc__registry_match(&psc__registry, glob, out, cap);
}

const char *psc_hostmem_name(psc_hostmem_t kind)
{
    static const char *const names[] = {"pinned", "pageable", "write-combined", "registered"};

    return (unsigned)kind < PSC_HOSTMEM_KIND_COUNT ? names[kind] : "unknown";
}
