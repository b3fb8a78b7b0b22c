#define _GNU_SOURCE
#include "topo/facts_json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo/host_topo.h"
#include "topo/pci_tree.h"

#define PSC_FACTS_FORMAT "p2pscope-facts"
#define PSC_FACTS_VERSION 1

static const char *const psc__remote_names[] = {"unknown", "gpu", "switch", "cpu"};
static const char *const psc__acs_names[] = {"not_recorded", "needs_root", "absent", "read"};

/* Unknown (-1) is null. */
static json_t *psc__jint(long long v)
{
    return v < 0 ? json_null() : json_integer(v);
}

static json_t *psc__jstr(const char *s)
{
    return s && *s ? json_string(s) : json_null();
}

static json_t *psc__host_json(const psc_host_facts_t *h)
{
    json_t *o = json_object();

    json_object_set_new(o, "machine", psc__jstr(h->machine));
    json_object_set_new(o, "numa_nodes", psc__jint(h->numa_nodes));
    json_object_set_new(o, "hypervisor", psc__jint(h->hypervisor));
    json_object_set_new(o, "iommu", psc__jint(h->iommu));
    json_object_set_new(o, "iommu_groups", psc__jint(h->iommu_groups));
    json_object_set_new(o, "cmdline", psc__jstr(h->cmdline));
    json_object_set_new(o, "driver_open", psc__jint(h->driver_open));
    json_object_set_new(o, "driver_release", psc__jstr(h->driver_release));
    json_object_set_new(o, "cuda_driver_version", psc__jint(h->cuda_driver_version));
    json_object_set_new(o, "acs_readable", psc__jint(h->acs_readable));
    return o;
}

static json_t *psc__gpu_json(const psc_gpu_facts_t *g)
{
    json_t *o = json_object(), *links = json_array(), *bridges = json_array();

    json_object_set_new(o, "name", psc__jstr(g->name));
    json_object_set_new(o, "pci_bus_id", psc__jstr(g->pci_bus_id));
    json_object_set_new(o, "uuid", psc__jstr(g->uuid));
    json_object_set_new(o, "memory_bytes", g->memory_bytes ? json_integer((json_int_t)g->memory_bytes) : json_null());
    json_object_set_new(o, "bar1_bytes", g->bar1_bytes ? json_integer((json_int_t)g->bar1_bytes) : json_null());
    json_object_set_new(o, "pcie_gen", psc__jint(g->pcie_gen));
    json_object_set_new(o, "pcie_gen_max", psc__jint(g->pcie_gen_max));
    json_object_set_new(o, "pcie_width", psc__jint(g->pcie_width));
    json_object_set_new(o, "pcie_width_max", psc__jint(g->pcie_width_max));
    json_object_set_new(o, "numa_node", psc__jint(g->numa_node));
    json_object_set_new(o, "cpuset", psc__jstr(g->cpuset));
    json_object_set_new(o, "virt_mode", psc__jint(g->virt_mode));
    json_object_set_new(o, "mig", psc__jint(g->mig));
    json_object_set_new(o, "ecc", psc__jint(g->ecc));
    json_object_set_new(o, "persistence", psc__jint(g->persistence));
    json_object_set_new(o, "sm_clock_mhz", psc__jint(g->sm_clock_mhz));
    json_object_set_new(o, "sm_clock_max_mhz", psc__jint(g->sm_clock_max_mhz));
    json_object_set_new(o, "temperature_c", psc__jint(g->temperature_c));
    json_object_set_new(o, "clock_event_reasons", psc__jint(g->clock_event_reasons));
    json_object_set_new(o, "nvlink_count", psc__jint(g->nvlink_count));
    for (int l = 0; l < g->nvlink_count && l < PSC_MAX_NVLINKS; l++) {
        const psc_nvlink_facts_t *nl = &g->nvlinks[l];

        json_array_append_new(links, json_pack("{s:o,s:o,s:f,s:s,s:o,s:o,s:o,s:o,s:o,s:o}",
            "active", psc__jint(nl->active), "version", psc__jint(nl->version), "speed_gbs", nl->speed_gbs,
            "remote", psc__remote_names[nl->remote], "remote_bus_id", psc__jstr(nl->remote_bus_id),
            "remote_gpu", psc__jint(nl->remote_gpu), "cap_p2p", psc__jint(nl->cap_p2p),
            "cap_sysmem", psc__jint(nl->cap_sysmem), "cap_p2p_atomics", psc__jint(nl->cap_p2p_atomics),
            "cap_sysmem_atomics", psc__jint(nl->cap_sysmem_atomics)));
    }
    json_object_set_new(o, "nvlinks", links);
    for (int b = 0; b < g->nbridges; b++) {
        const psc_bridge_facts_t *br = &g->bridges[b];

        json_array_append_new(bridges, json_pack("{s:o,s:o,s:s,s:o}", "bus_id", psc__jstr(br->bus_id), "ids",
                                                 psc__jstr(br->ids), "acs", psc__acs_names[br->acs], "acs_ctrl",
                                                 psc__jint(br->acs_ctrl)));
    }
    json_object_set_new(o, "bridges", bridges);
    json_object_set_new(o, "iommu_group", psc__jint(g->iommu_group));
    json_object_set_new(o, "iommu_domain", psc__jstr(g->iommu_domain));
    return o;
}

json_t *psc__facts_to_json(const psc_facts_t *f, int with_xml)
{
    json_t *o = json_object(), *gpus = json_array(), *pairs = json_array();
    char label[16];

    json_object_set_new(o, "format", json_string(PSC_FACTS_FORMAT));
    json_object_set_new(o, "version", json_integer(PSC_FACTS_VERSION));
    json_object_set_new(o, "source", json_string(f->source));
    json_object_set_new(o, "has_driver", json_boolean(f->has_driver));
    json_object_set_new(o, "host", psc__host_json(&f->host));
    for (int i = 0; i < f->ngpu; i++)
        json_array_append_new(gpus, psc__gpu_json(&f->gpu[i]));
    json_object_set_new(o, "gpus", gpus);
    for (int i = 0; i < f->ngpu; i++)
        for (int j = 0; j < f->ngpu; j++) {
            const psc_pair_facts_t *p = &f->pair[i][j];

            if (i == j)
                continue;
            json_array_append_new(pairs, json_pack("{s:i,s:i,s:s,s:i,s:o,s:o,s:o,s:o,s:o,s:o}", "src", i, "dst", j,
                "path", psc_path_label(p->path, p->nvlinks, label, sizeof(label)), "nvlinks", p->nvlinks,
                "can_access", psc__jint(p->can_access), "perf_rank", psc__jint(p->perf_rank),
                "native_atomics", psc__jint(p->native_atomics), "array_access", psc__jint(p->array_access),
                "nvml_p2p_read", psc__jint(p->nvml_p2p_read), "integrity", psc__jint(p->integrity)));
        }
    json_object_set_new(o, "pairs", pairs);
    if (with_xml)
        json_object_set_new(o, "hwloc_xml", psc__jstr(f->hwloc_xml));
    return o;
}

char *psc_facts_json(const psc_facts_t *f, int with_hwloc_xml)
{
    json_t *o;
    char *text;

    if (!f)
        return NULL;
    o = psc__facts_to_json(f, with_hwloc_xml);
    text = json_dumps(o, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
    json_decref(o);
    return text;
}

static int psc__gi(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);

    if (json_is_boolean(v))
        return json_is_true(v);
    return json_is_integer(v) ? (int)json_integer_value(v) : -1;
}

static void psc__gs(json_t *o, const char *key, char *buf, size_t len)
{
    const char *s = json_string_value(json_object_get(o, key));

    snprintf(buf, len, "%s", s ? s : "");
}

static int psc__name_index(const char *const *names, int n, const char *s)
{
    for (int i = 0; s && i < n; i++)
        if (strcmp(names[i], s) == 0)
            return i;
    return 0;
}

static void psc__gpu_from_json(json_t *o, psc_gpu_facts_t *g)
{
    json_t *links = json_object_get(o, "nvlinks"), *bridges = json_object_get(o, "bridges");
    json_t *v;

    psc__gs(o, "name", g->name, sizeof(g->name));
    psc__gs(o, "pci_bus_id", g->pci_bus_id, sizeof(g->pci_bus_id));
    psc__gs(o, "uuid", g->uuid, sizeof(g->uuid));
    v = json_object_get(o, "memory_bytes");
    g->memory_bytes = json_is_integer(v) ? (uint64_t)json_integer_value(v) : 0;
    v = json_object_get(o, "bar1_bytes");
    g->bar1_bytes = json_is_integer(v) ? (uint64_t)json_integer_value(v) : 0;
    g->pcie_gen = psc__gi(o, "pcie_gen");
    g->pcie_gen_max = psc__gi(o, "pcie_gen_max");
    g->pcie_width = psc__gi(o, "pcie_width");
    g->pcie_width_max = psc__gi(o, "pcie_width_max");
    g->numa_node = psc__gi(o, "numa_node");
    psc__gs(o, "cpuset", g->cpuset, sizeof(g->cpuset));
    g->virt_mode = psc__gi(o, "virt_mode");
    g->mig = psc__gi(o, "mig");
    g->ecc = psc__gi(o, "ecc");
    g->persistence = psc__gi(o, "persistence");
    g->sm_clock_mhz = psc__gi(o, "sm_clock_mhz");
    g->sm_clock_max_mhz = psc__gi(o, "sm_clock_max_mhz");
    g->temperature_c = psc__gi(o, "temperature_c");
    v = json_object_get(o, "clock_event_reasons");
    g->clock_event_reasons = json_is_integer(v) ? (int64_t)json_integer_value(v) : -1;
    g->nvlink_count = psc__gi(o, "nvlink_count");
    if (g->nvlink_count > PSC_MAX_NVLINKS)
        g->nvlink_count = PSC_MAX_NVLINKS;
    for (int l = 0; l < g->nvlink_count; l++) {
        json_t *x = json_array_get(links, (size_t)l);
        psc_nvlink_facts_t *nl = &g->nvlinks[l];

        nl->active = psc__gi(x, "active");
        nl->version = psc__gi(x, "version");
        nl->speed_gbs = json_number_value(json_object_get(x, "speed_gbs"));
        nl->remote = (psc_remote_t)psc__name_index(psc__remote_names, 4, json_string_value(json_object_get(x, "remote")));
        psc__gs(x, "remote_bus_id", nl->remote_bus_id, sizeof(nl->remote_bus_id));
        nl->remote_gpu = psc__gi(x, "remote_gpu");
        nl->cap_p2p = psc__gi(x, "cap_p2p");
        nl->cap_sysmem = psc__gi(x, "cap_sysmem");
        nl->cap_p2p_atomics = psc__gi(x, "cap_p2p_atomics");
        nl->cap_sysmem_atomics = psc__gi(x, "cap_sysmem_atomics");
    }
    g->nbridges = (int)json_array_size(bridges);
    if (g->nbridges > PSC_MAX_BRIDGES)
        g->nbridges = PSC_MAX_BRIDGES;
    for (int b = 0; b < g->nbridges; b++) {
        json_t *x = json_array_get(bridges, (size_t)b);
        psc_bridge_facts_t *br = &g->bridges[b];

        psc__gs(x, "bus_id", br->bus_id, sizeof(br->bus_id));
        psc__gs(x, "ids", br->ids, sizeof(br->ids));
        br->acs = (psc_acs_state_t)psc__name_index(psc__acs_names, 4, json_string_value(json_object_get(x, "acs")));
        br->acs_ctrl = psc__gi(x, "acs_ctrl");
    }
    g->iommu_group = psc__gi(o, "iommu_group");
    psc__gs(o, "iommu_domain", g->iommu_domain, sizeof(g->iommu_domain));
}

psc_status_t psc__facts_load_json(const char *path, psc_facts_t *f, char *errbuf, size_t errlen)
{
    json_error_t jerr;
    json_t *doc = json_load_file(path, 0, &jerr), *host, *gpus, *pairs, *xml;
    size_t k;

    if (!doc) {
        snprintf(errbuf, errlen, "%s:%d: not valid JSON: %s", path, jerr.line, jerr.text);
        return PSC_ERR_INVALID;
    }
    if (!json_is_string(json_object_get(doc, "format")) ||
        strcmp(json_string_value(json_object_get(doc, "format")), PSC_FACTS_FORMAT) != 0 ||
        psc__gi(doc, "version") != PSC_FACTS_VERSION) {
        snprintf(errbuf, errlen, "%s: not a p2pscope recording (format \"%s\" version %d expected)", path,
                 PSC_FACTS_FORMAT, PSC_FACTS_VERSION);
        json_decref(doc);
        return PSC_ERR_INVALID;
    }
    snprintf(f->source, sizeof(f->source), "%s", path);
    f->has_driver = psc__gi(doc, "has_driver") == 1;
    host = json_object_get(doc, "host");
    psc__gs(host, "machine", f->host.machine, sizeof(f->host.machine));
    f->host.numa_nodes = psc__gi(host, "numa_nodes");
    f->host.hypervisor = psc__gi(host, "hypervisor");
    f->host.iommu = psc__gi(host, "iommu");
    f->host.iommu_groups = psc__gi(host, "iommu_groups");
    psc__gs(host, "cmdline", f->host.cmdline, sizeof(f->host.cmdline));
    f->host.driver_open = psc__gi(host, "driver_open");
    psc__gs(host, "driver_release", f->host.driver_release, sizeof(f->host.driver_release));
    f->host.cuda_driver_version = psc__gi(host, "cuda_driver_version");
    f->host.acs_readable = psc__gi(host, "acs_readable");
    gpus = json_object_get(doc, "gpus");
    f->ngpu = (int)json_array_size(gpus) < PSC_MAX_GPUS ? (int)json_array_size(gpus) : PSC_MAX_GPUS;
    for (int i = 0; i < f->ngpu; i++)
        psc__gpu_from_json(json_array_get(gpus, (size_t)i), &f->gpu[i]);
    pairs = json_object_get(doc, "pairs");
    for (k = 0; k < json_array_size(pairs); k++) {
        json_t *x = json_array_get(pairs, k);
        int i = psc__gi(x, "src"), j = psc__gi(x, "dst");
        psc_pair_facts_t *p;

        if (i < 0 || j < 0 || i >= f->ngpu || j >= f->ngpu)
            continue;
        p = &f->pair[i][j];
        p->can_access = psc__gi(x, "can_access");
        p->perf_rank = psc__gi(x, "perf_rank");
        p->native_atomics = psc__gi(x, "native_atomics");
        p->array_access = psc__gi(x, "array_access");
        p->nvml_p2p_read = psc__gi(x, "nvml_p2p_read");
        p->integrity = psc__gi(x, "integrity");
    }
    xml = json_object_get(doc, "hwloc_xml");
    free(f->hwloc_xml);
    f->hwloc_xml = json_is_string(xml) ? strdup(json_string_value(xml)) : NULL;
    {
        /* Paths are derived again, so a recording replays through today's rules. */
        psc_host_topo_t *topo = f->hwloc_xml ? psc_host_topo_load_recorded(NULL, f->hwloc_xml, NULL, 0) : NULL;

        psc__classify_pairs(psc_host_topo_hwloc(topo), f);
        psc_host_topo_free(topo);
    }
    json_decref(doc);
    if (f->ngpu == 0) {
        snprintf(errbuf, errlen, "%s: the recording holds no NVIDIA GPU", path);
        return PSC_ERR_NO_DEVICE;
    }
    return PSC_OK;
}

psc_status_t psc_facts_save(const psc_facts_t *f, const char *path, char *errbuf, size_t errlen)
{
    char *text;
    psc_status_t st;

    if (!f || !path)
        return PSC_ERR_INVALID;
    text = psc_facts_json(f, 1);
    if (!text)
        return PSC_ERR_NO_MEMORY;
    st = psc_write_file_atomic(path, text, strlen(text), errbuf, errlen);
    free(text);
    return st;
}
