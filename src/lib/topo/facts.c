/* Topology facts: live gathering through the driver, NVML, hwloc and /sys (with the CPU mappings probed, for
 * report: psc_facts_gather_mapped); replay of recordings. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "internal.h"
#include "p2pscope_private.h"
#include "machine/devices.h"
#include "machine/host_topo.h"
#include "machine/xml_sandbox.h"
#include "topo/facts_json.h"
#include "topo/facts_model.h"
#include "topo/nccl_facts.h"
#include "topo/pci_tree.h"
#include "topo/sysfs_facts.h"
#include "util/safe_read.h"

/* NVML's bus ids have an 8-digit domain; ours have CUDA's 4. */
static void psc__norm_busid(const char *in, char *out, size_t len)
{
    unsigned dom, bus, dev, fn;

    if (sscanf(in, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) == 4)
        snprintf(out, len, "%04x:%02x:%02x.%x", dom, bus, dev, fn);
    else
        snprintf(out, len, "%s", in);
}

/* NVML reports nvmlNvlinkVersion_t (1.0, 2.0, 2.2, 3.0, 3.1, 4.0, 5.0): keep the generation. */
static int psc__nvlink_generation(unsigned v)
{
    static const int gen[] = {0, 1, 2, 2, 3, 3, 4, 5};

    return v < sizeof(gen) / sizeof(gen[0]) ? gen[v] : (int)v - 2;
}

/* Per-link speed in GB/s per direction (MB/s from NVML); the common speed where per-link is not answered. */
static void psc__nvml_link_speeds(const psc_nvml_t *nv, psc_nvmlDevice_t h, double *speed)
{
    psc_nvmlFieldValue_t fv[PSC_MAX_NVLINKS + 1];
    double common = 0;

    memset(fv, 0, sizeof(fv));
    if (!nv->field_values)
        return;
    for (unsigned l = 0; l < PSC_MAX_NVLINKS; l++) {
        fv[l].fieldId = PSC_NVML_FI_DEV_NVLINK_GET_SPEED;
        fv[l].scopeId = l;
    }
    fv[PSC_MAX_NVLINKS].fieldId = PSC_NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON;
    if (nv->field_values(h, PSC_MAX_NVLINKS + 1, fv) != 0)
        return;
    if (fv[PSC_MAX_NVLINKS].nvmlReturn == 0)
        common = fv[PSC_MAX_NVLINKS].value.uiVal / 1000.0;
    for (unsigned l = 0; l < PSC_MAX_NVLINKS; l++)
        speed[l] = fv[l].nvmlReturn == 0 && fv[l].value.uiVal ? fv[l].value.uiVal / 1000.0 : common;
}

static void psc__nvml_links(const psc_context_t *ctx, psc_nvmlDevice_t h, psc_gpu_facts_t *g)
{
    const psc_nvml_t *nv = &ctx->nvml;
    double speed[PSC_MAX_NVLINKS] = {0};
    int n = 0;

    if (!nv->nvlink_state)
        return;
    psc__nvml_link_speeds(nv, h, speed);
    for (unsigned l = 0; l < PSC_MAX_NVLINKS; l++) {
        psc_nvlink_facts_t *nl = &g->nvlinks[l];
        psc_nvmlPciInfo_t pci;
        unsigned v;
        int state = 0, type = -1;

        /* Links past the GPU's count answer "not supported". */
        if (nv->nvlink_state(h, l, &state) != 0)
            break;
        memset(nl, 0, sizeof(*nl));
        n = (int)l + 1;
        nl->active = state == 1;
        nl->remote_gpu = -1;
        nl->cap_p2p = nl->cap_sysmem = nl->cap_p2p_atomics = nl->cap_sysmem_atomics = -1;
        if (nv->nvlink_version && nv->nvlink_version(h, l, &v) == 0)
            nl->version = psc__nvlink_generation(v);
        nl->speed_gbs = nl->active ? speed[l] : 0;
        memset(&pci, 0, sizeof(pci));
        /* An NVSwitch the VM does not show answers with domain ffffffff: no address. */
        if (nl->active && nv->nvlink_remote_pci && nv->nvlink_remote_pci(h, l, &pci) == 0 && pci.domain != 0xffffffffu)
            psc__norm_busid(pci.busId, nl->remote_bus_id, sizeof(nl->remote_bus_id));
        if (nl->active && nv->nvlink_remote_type && nv->nvlink_remote_type(h, l, &type) == 0)
            nl->remote = type == PSC_NVML_NVLINK_DEVICE_TYPE_GPU      ? PSC_REMOTE_GPU
                         : type == PSC_NVML_NVLINK_DEVICE_TYPE_SWITCH ? PSC_REMOTE_SWITCH
                         : type == PSC_NVML_NVLINK_DEVICE_TYPE_IBMNPU ? PSC_REMOTE_CPU
                                                                      : PSC_REMOTE_UNKNOWN;
        if (nv->nvlink_cap) {
            if (nv->nvlink_cap(h, l, PSC_NVML_NVLINK_CAP_P2P_SUPPORTED, &v) == 0)
                nl->cap_p2p = v != 0;
            if (nv->nvlink_cap(h, l, PSC_NVML_NVLINK_CAP_SYSMEM_ACCESS, &v) == 0)
                nl->cap_sysmem = v != 0;
            if (nv->nvlink_cap(h, l, PSC_NVML_NVLINK_CAP_P2P_ATOMICS, &v) == 0)
                nl->cap_p2p_atomics = v != 0;
            if (nv->nvlink_cap(h, l, PSC_NVML_NVLINK_CAP_SYSMEM_ATOMICS, &v) == 0)
                nl->cap_sysmem_atomics = v != 0;
        }
    }
    g->nvlink_count = n;
}

static void psc__nvml_gpu(const psc_context_t *ctx, int i, psc_gpu_facts_t *g)
{
    const psc_nvml_t *nv = &ctx->nvml;
    psc_nvmlDevice_t h = psc__nvml_handle(ctx, i);
    psc_nvmlBAR1Memory_t bar1;
    unsigned long long reasons;
    unsigned u, u2;
    int a, b;

    if (!h)
        return;
    if (nv->bar1 && nv->bar1(h, &bar1) == 0)
        g->bar1_bytes = bar1.bar1Total;
    if (nv->pcie_gen && nv->pcie_gen(h, &u) == 0)
        g->pcie_gen = (int)u;
    if (nv->pcie_gen_max && nv->pcie_gen_max(h, &u) == 0)
        g->pcie_gen_max = (int)u;
    if (nv->pcie_width && nv->pcie_width(h, &u) == 0)
        g->pcie_width = (int)u;
    if (nv->pcie_width_max && nv->pcie_width_max(h, &u) == 0)
        g->pcie_width_max = (int)u;
    if (nv->virt_mode && nv->virt_mode(h, &a) == 0)
        g->virt_mode = a;
    if (nv->mig_mode && nv->mig_mode(h, &u, &u2) == 0)
        g->mig = u != 0;
    if (nv->ecc_mode && nv->ecc_mode(h, &a, &b) == 0)
        g->ecc = a != 0;
    if (nv->persistence && nv->persistence(h, &a) == 0)
        g->persistence = a != 0;
    if (nv->clock_events && nv->clock_events(h, &reasons) == 0)
        g->clock_event_reasons = (int64_t)reasons;
    psc__nvml_links(ctx, h, g);
}

static void psc__cuda_pairs(psc_context_t *ctx, psc_facts_t *f)
{
    for (int i = 0; i < f->ngpu; i++) {
        for (int j = 0; j < f->ngpu; j++) {
            psc_pair_facts_t *p = &f->pair[i][j];
            CUdevice a = ctx->gpu[i].dev, b = ctx->gpu[j].dev;
            psc_nvmlDevice_t ha = psc__nvml_handle(ctx, i), hb = psc__nvml_handle(ctx, j);
            int v;

            if (i == j)
                continue;
            if (ctx->cu.p_cuDeviceCanAccessPeer(&v, a, b) == CUDA_SUCCESS)
                p->can_access = v;
            if (ctx->cu.p_cuDeviceGetP2PAttribute) {
                if (ctx->cu.p_cuDeviceGetP2PAttribute(&v, CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK, a, b) == CUDA_SUCCESS)
                    p->perf_rank = v;
                if (ctx->cu.p_cuDeviceGetP2PAttribute(&v, CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED, a, b) == CUDA_SUCCESS)
                    p->native_atomics = v;
                if (ctx->cu.p_cuDeviceGetP2PAttribute(&v, CU_DEVICE_P2P_ATTRIBUTE_CUDA_ARRAY_ACCESS_SUPPORTED, a, b) == CUDA_SUCCESS)
                    p->array_access = v;
            }
            if (ha && hb && ctx->nvml.p2p_status &&
                ctx->nvml.p2p_status(ha, hb, PSC_NVML_P2P_CAPS_INDEX_READ, &v) == 0)
                p->nvml_p2p_read = v;
        }
    }
}

/* Bridges' ACS readable by someone: the host-wide summary the doctor reports. */
static void psc__acs_summary(psc_facts_t *f)
{
    f->host.acs_readable = -1;
    for (int i = 0; i < f->ngpu; i++)
        for (int b = 0; b < f->gpu[i].nbridges; b++) {
            psc_acs_state_t s = f->gpu[i].bridges[b].acs;

            if (s == PSC_ACS_READ || s == PSC_ACS_ABSENT)
                f->host.acs_readable = 1;
            else if (s == PSC_ACS_NEEDS_ROOT && f->host.acs_readable < 0)
                f->host.acs_readable = 0;
        }
}

static void psc__remote_gpus(psc_facts_t *f)
{
    for (int i = 0; i < f->ngpu; i++)
        for (int l = 0; l < f->gpu[i].nvlink_count; l++) {
            psc_nvlink_facts_t *nl = &f->gpu[i].nvlinks[l];

            if (nl->remote == PSC_REMOTE_GPU)
                nl->remote_gpu = psc__gpu_index(f, nl->remote_bus_id);
        }
}

psc_status_t psc_facts_gather(psc_context_t *ctx, psc_facts_t *f)
{
    hwloc_topology_t t = ctx ? psc_host_topo_hwloc(ctx->host) : NULL;

    if (!ctx)
        return PSC_ERR_INVALID; /* no context to hold the reason */
    if (!f)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_facts_gather: facts is NULL (accepted: one from psc_facts_new)");
    snprintf(f->source, sizeof(f->source), "live");
    f->has_driver = 1;
    f->ngpu = ctx->ndev < PSC_MAX_GPUS ? ctx->ndev : PSC_MAX_GPUS;
    psc__sysfs_host("", &f->host);
    f->host.cuda_driver_version = ctx->sys.cuda_driver_version;
    snprintf(f->host.driver_release, sizeof(f->host.driver_release), "%s", ctx->sys.driver_release);
    if (t) {
        const char *dmi = hwloc_obj_get_info_by_name(hwloc_get_root_obj(t), "DMIProductName");

        f->host.numa_nodes = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE);
        if (dmi && !f->host.machine[0])
            snprintf(f->host.machine, sizeof(f->host.machine), "%s", dmi);
    }
    for (int i = 0; i < f->ngpu; i++) {
        psc_gpu_facts_t *g = &f->gpu[i];
        psc_device_info_t d;

        psc__gpu_facts_init(g);
        psc_device_info(ctx, i, &d);
        snprintf(g->name, sizeof(g->name), "%s", d.name);
        snprintf(g->pci_bus_id, sizeof(g->pci_bus_id), "%s", d.pci_bus_id);
        snprintf(g->uuid, sizeof(g->uuid), "%s", d.uuid);
        g->memory_bytes = d.memory_bytes;
        g->sm_clock_mhz = d.sm_clock_mhz;
        g->sm_clock_max_mhz = d.sm_clock_max_mhz;
        g->temperature_c = d.temperature_c;
        psc__nvml_gpu(ctx, i, g);
        if (t)
            psc__pci_gpu_locality(t, g);
        psc__sysfs_gpu("", g);
    }
    psc__remote_gpus(f);
    psc__cuda_pairs(ctx, f);
    psc__classify_pairs(t, f);
    psc__acs_summary(f);
    psc__nccl_facts_gather(&f->nccl);
    memset(f->gpumap, 0, sizeof(f->gpumap)); /* not probed here (psc_facts_probe_gpumap): nothing stale kept */
    free(f->hwloc_xml);
    f->hwloc_xml = psc_host_topo_export_xml(ctx->host);
    return PSC_OK;
}

/* JSON by its name, or by its first character. */
static int psc__is_json(const char *path, const char *text)
{
    size_t n = strlen(path);

    if (n > 5 && strcmp(path + n - 5, ".json") == 0)
        return 1;
    text += strspn(text, " \t\r\n");
    return *text == '{';
}

/* The kind of an archive by its first bytes (bzip2, gzip, xz, zstd, tar), NULL when none of those. */
static const char *psc__archive_kind(const char *text, size_t len)
{
    static const struct { const char *magic; size_t len, at; const char *kind; } kinds[] = {
        {"BZh", 3, 0, "bzip2"}, {"\x1f\x8b", 2, 0, "gzip"}, {"\xfd" "7zXZ", 5, 0, "xz"},
        {"\x28\xb5\x2f\xfd", 4, 0, "zstd"}, {"ustar", 5, 257, "tar"},
    };

    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
        if (len >= kinds[k].at + kinds[k].len && memcmp(text + kinds[k].at, kinds[k].magic, kinds[k].len) == 0)
            return kinds[k].kind;
    return NULL;
}

/* A recording's facts from its hwloc tree, and from the captured /sys and /proc tree at path where is_dir. */
static void psc__facts_from_tree(hwloc_topology_t t, const char *path, int is_dir, psc_facts_t *f)
{
    const char *dmi = hwloc_obj_get_info_by_name(hwloc_get_root_obj(t), "DMIProductName");
    char listed[PSC_MAX_GPUS][PSC_BUSID_LEN];
    int nlisted = is_dir ? psc__sysfs_driver_gpus(path, listed, PSC_MAX_GPUS) : 0;

    f->host.numa_nodes = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE);
    if (dmi)
        snprintf(f->host.machine, sizeof(f->host.machine), "%s", dmi);
    psc__pci_list_gpus(t, f, (const char(*)[PSC_BUSID_LEN])listed, nlisted);
    psc__pci_nvlinks_from_distances(t, f);
    if (is_dir) {
        psc__sysfs_host(path, &f->host);
        for (int i = 0; i < f->ngpu; i++)
            psc__sysfs_gpu(path, &f->gpu[i]);
    }
    psc__classify_pairs(t, f);
}

/* psc_facts_load into a fresh object f, which the caller keeps only on success (or PSC_ERR_NO_DEVICE). */
static psc_status_t psc__facts_load_fresh(const char *path, psc_facts_t *f, char *errbuf, size_t errlen)
{
    char *text = NULL;
    psc_host_topo_t *topo = NULL;
    psc_status_t st;
    struct stat sb;
    size_t len;
    int is_dir;

    if (stat(path, &sb) != 0) {
        int e = errno;

        snprintf(errbuf, errlen, "%s: %s", path,
                 e == ENOENT || e == ENOTDIR ? "no such file or directory"
                 : e == EACCES               ? "permission denied"
                                             : strerror(e));
        return PSC_ERR_IO;
    }
    is_dir = S_ISDIR(sb.st_mode);
    /* A FIFO would hang the first read, a device may act on being opened: refused before either. */
    if (!is_dir && !S_ISREG(sb.st_mode)) {
        snprintf(errbuf, errlen,
                 "%s: %s: accepted are an hwloc XML file, a p2pscope JSON recording or a directory holding a "
                 "captured /sys tree",
                 path, psc__file_kind(sb.st_mode));
        return PSC_ERR_INVALID;
    }
    if (is_dir) {
        st = psc__capture_check(path, PSC_CAPTURE_MAX_ENTRIES, errbuf, errlen);
        if (st == PSC_OK)
            st = psc_host_topo_open_recorded(path, NULL, path, &topo, errbuf, errlen);
    } else {
        st = psc__safe_read_file(NULL, path, PSC_XML_MAX_BYTES, &text, &len, errbuf, errlen);
        if (st == PSC_OK && psc__archive_kind(text, len)) {
            snprintf(errbuf, errlen,
                     "%s: an archive (%s), not a recording: unpack it (mkdir DIR && tar -xf FILE -C DIR) and give the "
                     "directory of the captured /sys and /proc tree it holds",
                     path, psc__archive_kind(text, len));
            free(text);
            return PSC_ERR_INVALID;
        }
        if (st == PSC_OK && psc__is_json(path, text)) {
            st = psc__facts_load_json(path, text, len, f, errbuf, errlen);
            free(text);
            return st;
        }
        if (st == PSC_OK)
            st = psc_host_topo_open_recorded(path, text, NULL, &topo, errbuf, errlen);
        free(text);
    }
    if (st != PSC_OK)
        return st;
    snprintf(f->source, sizeof(f->source), "%s", path);
    f->has_driver = 0;
    psc__facts_from_tree(psc_host_topo_hwloc(topo), path, is_dir, f);
    psc__acs_summary(f);
    free(f->hwloc_xml);
    f->hwloc_xml = psc_host_topo_export_xml(topo);
    psc_host_topo_free(topo);
    if (f->ngpu == 0) {
        snprintf(errbuf, errlen, "%s: the recording holds no NVIDIA GPU", path);
        return PSC_ERR_NO_DEVICE;
    }
    return PSC_OK;
}

psc_status_t psc_facts_load(const char *path, psc_facts_t *f, char *errbuf, size_t errlen)
{
    char scratch[8];
    psc_facts_t *s;
    psc_status_t st;

    if (!errbuf || !errlen) {
        errbuf = scratch;
        errlen = sizeof(scratch);
    }
    if (!path || !*path) {
        snprintf(errbuf, errlen, "no recording given (accepted: the path of an hwloc XML file, a p2pscope JSON "
                                 "recording or a captured /sys directory)");
        return PSC_ERR_INVALID;
    }
    if (!f) {
        snprintf(errbuf, errlen, "%s: no facts object to load into (accepted: one from psc_facts_new)", path);
        return PSC_ERR_INVALID;
    }
    /* Loaded apart and handed over whole: a failed load leaves the caller's facts as they were. */
    s = psc_facts_new();
    if (!s) {
        snprintf(errbuf, errlen, "%s: out of host memory", path);
        return PSC_ERR_NO_MEMORY;
    }
    st = psc__facts_load_fresh(path, s, errbuf, errlen);
    if (st == PSC_OK || st == PSC_ERR_NO_DEVICE) {
        free(f->hwloc_xml);
        *f = *s;
        s->hwloc_xml = NULL;
    }
    psc_facts_free(s);
    return st;
}

/* report's facts: live, with the CPU mappings probed (p2pscope_private.h). */
psc_status_t psc_facts_gather_mapped(psc_context_t *ctx, psc_facts_t **out)
{
    psc_facts_t *f = psc_facts_new();
    psc_status_t st;

    if (!f)
        return psc__fail(ctx, PSC_ERR_NO_MEMORY, "out of host memory");
    if ((st = psc_facts_gather(ctx, f)) != PSC_OK || (st = psc_facts_probe_gpumap(ctx, f)) != PSC_OK) {
        psc_facts_free(f);
        return st;
    }
    *out = f;
    return PSC_OK;
}
