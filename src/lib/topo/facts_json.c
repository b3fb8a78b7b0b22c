/*
 * The facts to and from JSON (facts_json.h): one field table writes and reads each struct, recordings are
 * checked field by field on the way in.
 */
#define _GNU_SOURCE
#include "topo/facts_json.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "machine/host_topo.h"
#include "p2pscope_private.h" /* psc_write_file_atomic */
#include "topo/cmdline.h"
#include "topo/gpumap_facts.h"
#include "topo/id_scrub.h"
#include "topo/pci_tree.h"
#include "util/json.h"

#define PSC_FACTS_FORMAT "p2pscope-facts"
#define PSC_FACTS_VERSION 1

static const char *const psc__remote_names[] = {"unknown", "gpu", "switch", "cpu"};
static const char *const psc__acs_names[] = {"not_recorded", "needs_root", "absent", "read"};

/* ---------------------------------------------------------------- fields, both ways */

typedef enum { PSC__F_INT, PSC__F_I64, PSC__F_U64, PSC__F_REAL, PSC__F_STR, PSC__F_ENUM } psc__ftype_t;

#define PSC__HI_NGPU (-2) /* hi: the last GPU index of the recording */

/*
 * One JSON key of a struct: its C type and the values accepted. The writer
 * writes a value outside [lo, hi] (an "unknown" such as -1) as null, and the
 * reader turns null or a missing key back into unk; strings: "" <-> null.
 * Reader and writer share these tables, so what one writes the other reads.
 */
typedef struct {
    const char *key;
    psc__ftype_t type;
    size_t off, size;
    long long lo, hi, unk;
    const char *const *names; /* PSC__F_ENUM */
    int nnames;
} psc__field_t;

#define PSC__FIELD(st, m, type, lo, hi, unk) {#m, type, offsetof(st, m), sizeof(((st *)0)->m), lo, hi, unk, NULL, 0}
#define PSC__INT(st, m, lo, hi) PSC__FIELD(st, m, PSC__F_INT, lo, hi, -1)
#define PSC__STR(st, m) PSC__FIELD(st, m, PSC__F_STR, 0, 0, 0)
#define PSC__ENUM(st, m, n)                                                                                           \
    {#m, PSC__F_ENUM, offsetof(st, m), sizeof(((st *)0)->m), 0, 0, 0, n, (int)(sizeof(n) / sizeof(n[0]))}
#define PSC__NFIELDS(t) (sizeof(t) / sizeof(t[0]))

static const psc__field_t psc__host_fields[] = {
    PSC__STR(psc_host_facts_t, machine),
    PSC__INT(psc_host_facts_t, numa_nodes, 1, 65536),
    PSC__INT(psc_host_facts_t, hypervisor, 0, 1),
    PSC__INT(psc_host_facts_t, iommu, 0, 1),
    PSC__INT(psc_host_facts_t, iommu_groups, 0, INT_MAX),
    PSC__STR(psc_host_facts_t, cmdline),
    PSC__INT(psc_host_facts_t, driver_open, 0, 1),
    PSC__STR(psc_host_facts_t, driver_release),
    PSC__INT(psc_host_facts_t, cuda_driver_version, 0, INT_MAX),
    PSC__INT(psc_host_facts_t, acs_readable, 0, 1),
};

/* Before "nvlinks" and "bridges", which are read and written apart. */
static const psc__field_t psc__gpu_fields[] = {
    PSC__STR(psc_gpu_facts_t, name),
    PSC__STR(psc_gpu_facts_t, pci_bus_id),
    PSC__STR(psc_gpu_facts_t, uuid),
    PSC__FIELD(psc_gpu_facts_t, memory_bytes, PSC__F_U64, 1, INT64_MAX, 0),
    PSC__FIELD(psc_gpu_facts_t, bar1_bytes, PSC__F_U64, 1, INT64_MAX, 0),
    PSC__INT(psc_gpu_facts_t, pcie_gen, 1, 7),
    PSC__INT(psc_gpu_facts_t, pcie_gen_max, 1, 7),
    PSC__INT(psc_gpu_facts_t, pcie_width, 1, 32),
    PSC__INT(psc_gpu_facts_t, pcie_width_max, 1, 32),
    PSC__INT(psc_gpu_facts_t, numa_node, 0, 65535),
    PSC__STR(psc_gpu_facts_t, cpuset),
    PSC__INT(psc_gpu_facts_t, virt_mode, 0, 4),
    PSC__INT(psc_gpu_facts_t, mig, 0, 1),
    PSC__INT(psc_gpu_facts_t, ecc, 0, 1),
    PSC__INT(psc_gpu_facts_t, persistence, 0, 1),
    PSC__INT(psc_gpu_facts_t, sm_clock_mhz, 0, 100000),
    PSC__INT(psc_gpu_facts_t, sm_clock_max_mhz, 0, 100000),
    PSC__INT(psc_gpu_facts_t, temperature_c, 0, 1000),
    PSC__FIELD(psc_gpu_facts_t, clock_event_reasons, PSC__F_I64, 0, INT64_MAX, -1),
    PSC__INT(psc_gpu_facts_t, nvlink_count, 0, PSC_MAX_NVLINKS),
};

static const psc__field_t psc__gpu_tail_fields[] = {
    PSC__INT(psc_gpu_facts_t, iommu_group, 0, INT_MAX),
    PSC__STR(psc_gpu_facts_t, iommu_domain),
};

static const psc__field_t psc__nvlink_fields[] = {
    PSC__INT(psc_nvlink_facts_t, active, 0, 1),
    PSC__FIELD(psc_nvlink_facts_t, version, PSC__F_INT, 0, 100, 0),
    PSC__FIELD(psc_nvlink_facts_t, speed_gbs, PSC__F_REAL, 0, 100000, 0),
    PSC__ENUM(psc_nvlink_facts_t, remote, psc__remote_names),
    PSC__STR(psc_nvlink_facts_t, remote_bus_id),
    PSC__INT(psc_nvlink_facts_t, remote_gpu, 0, PSC__HI_NGPU),
    PSC__INT(psc_nvlink_facts_t, cap_p2p, 0, 1),
    PSC__INT(psc_nvlink_facts_t, cap_sysmem, 0, 1),
    PSC__INT(psc_nvlink_facts_t, cap_p2p_atomics, 0, 1),
    PSC__INT(psc_nvlink_facts_t, cap_sysmem_atomics, 0, 1),
};

static const psc__field_t psc__bridge_fields[] = {
    PSC__STR(psc_bridge_facts_t, bus_id),
    PSC__STR(psc_bridge_facts_t, ids),
    PSC__ENUM(psc_bridge_facts_t, acs, psc__acs_names),
    PSC__INT(psc_bridge_facts_t, acs_ctrl, 0, 0xffff),
};

/* "path" and "nvlinks" are derived again on load: checked, not kept. */
static const psc__field_t psc__pair_derived[] = {
    PSC__FIELD(psc_pair_facts_t, nvlinks, PSC__F_INT, 0, PSC_MAX_NVLINKS, 0),
};

/* After "src", "dst", "path" and "nvlinks". */
static const psc__field_t psc__pair_fields[] = {
    PSC__INT(psc_pair_facts_t, can_access, 0, 1),
    PSC__INT(psc_pair_facts_t, perf_rank, 0, INT_MAX),
    PSC__INT(psc_pair_facts_t, native_atomics, 0, 1),
    PSC__INT(psc_pair_facts_t, array_access, 0, 1),
    PSC__INT(psc_pair_facts_t, nvml_p2p_read, 0, INT_MAX),
    PSC__INT(psc_pair_facts_t, integrity, 0, 1),
};

/* "nccl": null or absent in recordings made before p2pscope read NCCL (known 0). */
static const psc__field_t psc__nccl_fields[] = {
    PSC__FIELD(psc_nccl_facts_t, loaded, PSC__F_INT, 0, 1, 0),
    PSC__FIELD(psc_nccl_facts_t, version, PSC__F_INT, 1, INT_MAX, 0),
    PSC__STR(psc_nccl_facts_t, path),
    PSC__STR(psc_nccl_facts_t, note),
};

/* gpus[i].cpu_mapping: null or absent where not probed (known 0); each backend apart, as {"usable", "why"}. */
static const psc__field_t psc__gpumap_fields[] = {
    PSC__FIELD(psc_gpumap_facts_t, gdr_lib_version, PSC__F_INT, 1, INT_MAX, 0),
    PSC__FIELD(psc_gpumap_facts_t, gdr_drv_version, PSC__F_INT, 1, INT_MAX, 0),
    PSC__FIELD(psc_gpumap_facts_t, gdr_dmabuf, PSC__F_INT, 0, 1, 0),
    PSC__FIELD(psc_gpumap_facts_t, bar1_total, PSC__F_U64, 1, INT64_MAX, 0),
    PSC__FIELD(psc_gpumap_facts_t, bar1_free, PSC__F_U64, 1, INT64_MAX, 0),
};

/* Backend b's "usable" and "why", as fields of psc_gpumap_facts_t. */
static void psc__gpumap_backend_fields(int b, psc__field_t fd[2])
{
    const psc__field_t usable = PSC__FIELD(psc_gpumap_facts_t, usable, PSC__F_INT, 0, 1, 0),
                       why = PSC__FIELD(psc_gpumap_facts_t, why, PSC__F_STR, 0, 0, 0);

    fd[0] = usable;
    fd[0].off += (size_t)b * sizeof(int);
    fd[0].size = sizeof(int);
    fd[1] = why;
    fd[1].size = sizeof(((psc_gpumap_facts_t *)0)->why[0]);
    fd[1].off += (size_t)b * fd[1].size;
}

static long long psc__hi(const psc__field_t *fd, int ngpu)
{
    return fd->hi == PSC__HI_NGPU ? ngpu - 1 : fd->hi;
}

static long long psc__get_int(const psc__field_t *fd, const void *base)
{
    const char *p = (const char *)base + fd->off;
    int i;
    int64_t i64;

    if (fd->type == PSC__F_I64) {
        memcpy(&i64, p, sizeof(i64));
        return i64;
    }
    memcpy(&i, p, sizeof(i)); /* ints and enums */
    return i;
}

static void psc__set_int(const psc__field_t *fd, void *base, long long v)
{
    char *p = (char *)base + fd->off;
    int i = (int)v;
    int64_t i64 = v;
    uint64_t u64 = (uint64_t)v;

    if (fd->type == PSC__F_I64)
        memcpy(p, &i64, sizeof(i64));
    else if (fd->type == PSC__F_U64)
        memcpy(p, &u64, sizeof(u64));
    else
        memcpy(p, &i, sizeof(i));
}

/* ---------------------------------------------------------------- writer */

/* Insert or append, remembering a failure instead of dropping the key. */
static void psc__put(json_t *o, const char *key, json_t *v, int *bad)
{
    if (!o || !v || json_object_set_new(o, key, v) != 0)
        *bad = 1;
}

static void psc__push(json_t *a, json_t *v, int *bad)
{
    if (!a || !v || json_array_append_new(a, v) != 0)
        *bad = 1;
}

static json_t *psc__field_json(const psc__field_t *fd, const void *base, int ngpu)
{
    const char *p = (const char *)base + fd->off;
    long long v;
    uint64_t u;
    double d;

    switch (fd->type) {
    case PSC__F_STR:
        return *p ? psc__json_text(p, fd->size - 1) : json_null();
    case PSC__F_ENUM:
        v = psc__get_int(fd, base);
        return json_string(fd->names[v >= 0 && v < fd->nnames ? v : 0]);
    case PSC__F_REAL:
        memcpy(&d, p, sizeof(d));
        return isfinite(d) && d >= (double)fd->lo && d <= (double)fd->hi ? json_real(d) : json_null();
    case PSC__F_U64:
        memcpy(&u, p, sizeof(u));
        return u >= (uint64_t)fd->lo && u <= (uint64_t)fd->hi ? json_integer((json_int_t)u) : json_null();
    default:
        v = psc__get_int(fd, base);
        return v >= fd->lo && v <= psc__hi(fd, ngpu) ? json_integer(v) : json_null();
    }
}

static void psc__fields_json(json_t *o, const psc__field_t *t, size_t n, const void *base, int ngpu, int *bad)
{
    for (size_t k = 0; k < n; k++)
        psc__put(o, t[k].key, psc__field_json(&t[k], base, ngpu), bad);
}

static json_t *psc__gpu_json(const psc_gpu_facts_t *g, int ngpu, int *bad)
{
    json_t *o = json_object(), *links = json_array(), *bridges = json_array();

    psc__fields_json(o, psc__gpu_fields, PSC__NFIELDS(psc__gpu_fields), g, ngpu, bad);
    for (int l = 0; l < g->nvlink_count && l < PSC_MAX_NVLINKS; l++) {
        json_t *x = json_object();

        psc__fields_json(x, psc__nvlink_fields, PSC__NFIELDS(psc__nvlink_fields), &g->nvlinks[l], ngpu, bad);
        psc__push(links, x, bad);
    }
    psc__put(o, "nvlinks", links, bad);
    for (int b = 0; b < g->nbridges && b < PSC_MAX_BRIDGES; b++) {
        json_t *x = json_object();

        psc__fields_json(x, psc__bridge_fields, PSC__NFIELDS(psc__bridge_fields), &g->bridges[b], ngpu, bad);
        psc__push(bridges, x, bad);
    }
    psc__put(o, "bridges", bridges, bad);
    psc__fields_json(o, psc__gpu_tail_fields, PSC__NFIELDS(psc__gpu_tail_fields), g, ngpu, bad);
    return o;
}

/* One GPU's CPU mappings, or null when not probed; "summary" is topo's line, written for readers, not read back. */
static json_t *psc__gpumap_json(const psc_gpumap_facts_t *g, int *bad)
{
    json_t *o;
    char label[1400];

    if (!g->known)
        return json_null();
    o = json_object();
    psc__put(o, "summary", psc__json_text(psc__gpumap_label(g, label, sizeof(label)), 0), bad);
    for (int b = 0; b < PSC_GPUMAP_BACKENDS; b++) {
        json_t *x = json_object();
        psc__field_t fd[2];

        psc__gpumap_backend_fields(b, fd);
        psc__fields_json(x, fd, 2, g, 0, bad);
        psc__put(o, psc_gpumap_backend_name((psc_gpumap_backend_t)b), x, bad);
    }
    psc__fields_json(o, psc__gpumap_fields, PSC__NFIELDS(psc__gpumap_fields), g, 0, bad);
    return o;
}

/* The NCCL facts, or null when they are not known; settings as {"name", "value"} in the order read. */
static json_t *psc__nccl_json(const psc_nccl_facts_t *n, int *bad)
{
    json_t *o, *settings;

    if (!n->known)
        return json_null();
    o = json_object();
    settings = json_array();
    psc__fields_json(o, psc__nccl_fields, PSC__NFIELDS(psc__nccl_fields), n, 0, bad);
    for (int k = 0; k < n->nsettings && k < PSC_MAX_NCCL_ENV; k++) {
        json_t *x = json_object();

        psc__put(x, "name", psc__json_text(n->settings[k].name, sizeof(n->settings[k].name) - 1), bad);
        psc__put(x, "value", psc__json_text(n->settings[k].value, sizeof(n->settings[k].value) - 1), bad);
        psc__push(settings, x, bad);
    }
    psc__put(o, "settings", settings, bad);
    return o;
}

json_t *psc__facts_to_json(const psc_facts_t *f, int with_xml)
{
    json_t *o = json_object(), *host = json_object(), *gpus = json_array(), *pairs = json_array();
    int ngpu = f->ngpu < PSC_MAX_GPUS ? f->ngpu : PSC_MAX_GPUS, bad = 0;
    char label[16];

    psc__put(o, "format", json_string(PSC_FACTS_FORMAT), &bad);
    psc__put(o, "version", json_integer(PSC_FACTS_VERSION), &bad);
    psc__put(o, "source", psc__json_text(f->source, 0), &bad);
    psc__put(o, "has_driver", json_boolean(f->has_driver), &bad);
    {
        psc_host_facts_t h = f->host; /* a caller's own line too: only what matters to P2P is written */

        psc__cmdline_p2p(f->host.cmdline, h.cmdline, sizeof(h.cmdline));
        psc__fields_json(host, psc__host_fields, PSC__NFIELDS(psc__host_fields), &h, ngpu, &bad);
    }
    psc__put(o, "host", host, &bad);
    for (int i = 0; i < ngpu; i++) {
        json_t *g = psc__gpu_json(&f->gpu[i], ngpu, &bad);

        if (!f->keep_identifiers) /* the GPU's serial number in all but name */
            psc__put(g, "uuid", json_null(), &bad);
        psc__put(g, "cpu_mapping", psc__gpumap_json(&f->gpumap[i], &bad), &bad);
        psc__push(gpus, g, &bad);
    }
    psc__put(o, "gpus", gpus, &bad);
    for (int i = 0; i < ngpu; i++)
        for (int j = 0; j < ngpu; j++) {
            const psc_pair_facts_t *p = &f->pair[i][j];
            json_t *x;

            if (i == j)
                continue;
            x = json_object();
            psc__put(x, "src", json_integer(i), &bad);
            psc__put(x, "dst", json_integer(j), &bad);
            psc__put(x, "path", json_string(psc_path_label(p->path, p->nvlinks, label, sizeof(label))), &bad);
            psc__fields_json(x, psc__pair_derived, PSC__NFIELDS(psc__pair_derived), p, ngpu, &bad);
            psc__fields_json(x, psc__pair_fields, PSC__NFIELDS(psc__pair_fields), p, ngpu, &bad);
            psc__push(pairs, x, &bad);
        }
    psc__put(o, "pairs", pairs, &bad);
    psc__put(o, "nccl", psc__nccl_json(&f->nccl, &bad), &bad);
    if (with_xml && f->hwloc_xml && *f->hwloc_xml) {
        char *xml = f->keep_identifiers ? f->hwloc_xml : psc__hwloc_xml_scrub(f->hwloc_xml);

        if (!xml)
            bad = 1;
        else
            psc__put(o, "hwloc_xml", psc__json_text(xml, 0), &bad);
        if (xml != f->hwloc_xml)
            free(xml);
    } else if (with_xml) {
        psc__put(o, "hwloc_xml", json_null(), &bad);
    }
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

char *psc_facts_json(const psc_facts_t *f, int with_hwloc_xml)
{
    json_t *o;
    char *text;

    if (!f)
        return NULL;
    o = psc__facts_to_json(f, with_hwloc_xml);
    if (!o)
        return NULL;
    text = json_dumps(o, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
    json_decref(o);
    return text;
}

/* ---------------------------------------------------------------- reader */

typedef struct {
    const char *file;
    char *err;
    size_t errlen;
    int ngpu;
} psc__rd_t;

/* One line: "FILE: where.key: what was wrong: accepted what". */
static psc_status_t psc__bad(const psc__rd_t *r, const char *where, const char *key, const char *fmt, ...)
{
    char msg[384];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    snprintf(r->err, r->errlen, "%s: %s%s%s: %s", r->file, where, *where && key ? "." : "", key ? key : "", msg);
    return PSC_ERR_INVALID;
}

/* `"5" is a string`, `[1, 2] is an array`. */
static const char *psc__what(json_t *v, char *buf, size_t len)
{
    static const char *const kinds[] = {"an object", "an array", "a string", "an integer", "a real number",
                                        "a boolean", "a boolean", "null"};
    char text[48];
    unsigned kind = (unsigned)json_typeof(v);

    snprintf(buf, len, "%s is %s", psc__json_dump(v, text, sizeof(text)), kind < 8 ? kinds[kind] : "a value");
    return buf;
}

static void psc__accepted(const psc__field_t *fd, int ngpu, char *buf, size_t len)
{
    size_t o;

    switch (fd->type) {
    case PSC__F_STR:
        snprintf(buf, len, "a string of at most %zu bytes or null", fd->size - 1);
        break;
    case PSC__F_REAL:
        snprintf(buf, len, "a number %lld..%lld or null", fd->lo, fd->hi);
        break;
    case PSC__F_ENUM:
        o = (size_t)snprintf(buf, len, "one of");
        for (int k = 0; k < fd->nnames && o < len; k++)
            o += (size_t)snprintf(buf + o, len - o, "%s \"%s\"", k ? "," : "", fd->names[k]);
        break;
    default:
        if (psc__hi(fd, ngpu) < fd->lo)
            snprintf(buf, len, "null (the recording has no GPU to name)");
        else
            snprintf(buf, len, "an integer %lld..%lld or null", fd->lo, psc__hi(fd, ngpu));
    }
}

static psc_status_t psc__field_read(const psc__rd_t *r, json_t *o, const char *where, const psc__field_t *fd,
                                    void *base)
{
    json_t *v = json_object_get(o, fd->key);
    char *p = (char *)base + fd->off, acc[160], what[96];
    long long hi = psc__hi(fd, r->ngpu);

    psc__accepted(fd, r->ngpu, acc, sizeof(acc));
    if (!v || json_is_null(v)) {
        if (fd->type == PSC__F_STR)
            *p = '\0';
        else if (fd->type == PSC__F_REAL)
            memset(p, 0, sizeof(double));
        else
            psc__set_int(fd, base, fd->unk);
        return PSC_OK;
    }
    switch (fd->type) {
    case PSC__F_STR:
        if (!json_is_string(v))
            return psc__bad(r, where, fd->key, "%s: accepted %s", psc__what(v, what, sizeof(what)), acc);
        if (json_string_length(v) >= fd->size)
            return psc__bad(r, where, fd->key, "longer than %zu bytes", fd->size - 1);
        memcpy(p, json_string_value(v), json_string_length(v) + 1);
        return PSC_OK;
    case PSC__F_ENUM:
        for (int k = 0; json_is_string(v) && k < fd->nnames; k++)
            if (strcmp(json_string_value(v), fd->names[k]) == 0) {
                psc__set_int(fd, base, k);
                return PSC_OK;
            }
        return psc__bad(r, where, fd->key, "%s: accepted %s", psc__what(v, what, sizeof(what)), acc);
    case PSC__F_REAL: {
        double d = json_number_value(v);

        if (!json_is_number(v))
            return psc__bad(r, where, fd->key, "%s: accepted %s", psc__what(v, what, sizeof(what)), acc);
        if (!(d >= (double)fd->lo && d <= (double)fd->hi))
            return psc__bad(r, where, fd->key, "%s is out of range: accepted %s", psc__json_dump(v, what, sizeof(what)),
                            acc);
        memcpy(p, &d, sizeof(d));
        return PSC_OK;
    }
    default:
        if (!json_is_integer(v))
            return psc__bad(r, where, fd->key, "%s: accepted %s", psc__what(v, what, sizeof(what)), acc);
        if (json_integer_value(v) < fd->lo || json_integer_value(v) > hi)
            return psc__bad(r, where, fd->key, "%" JSON_INTEGER_FORMAT " is out of range: accepted %s",
                            json_integer_value(v), acc);
        psc__set_int(fd, base, json_integer_value(v));
        return PSC_OK;
    }
}

static psc_status_t psc__fields_read(const psc__rd_t *r, json_t *o, const char *where, const psc__field_t *t,
                                     size_t n, void *base)
{
    for (size_t k = 0; k < n; k++) {
        psc_status_t st = psc__field_read(r, o, where, &t[k], base);

        if (st != PSC_OK)
            return st;
    }
    return PSC_OK;
}

/* An object at where (an array element or a key's value); missing or null is fine when optional. */
static psc_status_t psc__want(const psc__rd_t *r, json_t *v, const char *where, const char *key, int is_array,
                              int optional)
{
    char what[96];

    if (!v && !optional)
        return psc__bad(r, where, key, "missing: accepted %s", is_array ? "an array" : "an object");
    if (!v || (optional && json_is_null(v)) || (is_array ? json_is_array(v) : json_is_object(v)))
        return PSC_OK;
    return psc__bad(r, where, key, "%s: accepted %s%s", psc__what(v, what, sizeof(what)),
                    is_array ? "an array" : "an object", optional ? " or null" : "");
}

/* "0000:18:00.0": hex domain, bus, device, function as the tools write them. */
static int psc__busid_ok(const char *s)
{
    unsigned d, b, dev, fn;
    int n = -1;

    return sscanf(s, "%4x:%2x:%2x.%1x%n", &d, &b, &dev, &fn, &n) == 4 && n == (int)strlen(s) && dev < 32 && fn < 8;
}

/* gpus[i].cpu_mapping: absent or null leaves known 0 (a recording from before p2pscope probed CPU mappings). */
static psc_status_t psc__gpumap_read(const psc__rd_t *r, json_t *o, const char *gpu, psc_gpumap_facts_t *g)
{
    json_t *summary = json_object_get(o, "summary");
    char where[96], sub[128], what[96];
    psc_status_t st;

    snprintf(where, sizeof(where), "%s.cpu_mapping", gpu);
    if ((st = psc__want(r, o, gpu, "cpu_mapping", 0, 1)) != PSC_OK || !o || json_is_null(o))
        return st;
    if (summary && !json_is_null(summary) && !json_is_string(summary))
        return psc__bad(r, where, "summary", "%s: accepted a string or null", psc__what(summary, what, sizeof(what)));
    for (int b = 0; b < PSC_GPUMAP_BACKENDS; b++) {
        const char *name = psc_gpumap_backend_name((psc_gpumap_backend_t)b);
        json_t *x = json_object_get(o, name);
        psc__field_t fd[2];

        psc__gpumap_backend_fields(b, fd);
        snprintf(sub, sizeof(sub), "%s.%s", where, name);
        if ((st = psc__want(r, x, where, name, 0, 0)) != PSC_OK ||
            (st = psc__fields_read(r, x, sub, fd, 2, g)) != PSC_OK)
            return st;
        if (g->usable[b])
            g->why[b][0] = '\0'; /* a usable backend has no reason */
    }
    if ((st = psc__fields_read(r, o, where, psc__gpumap_fields, PSC__NFIELDS(psc__gpumap_fields), g)) != PSC_OK)
        return st;
    g->known = 1;
    return PSC_OK;
}

static psc_status_t psc__gpu_read(const psc__rd_t *r, json_t *o, int i, psc_facts_t *f)
{
    psc_gpu_facts_t *g = &f->gpu[i];
    json_t *links = json_object_get(o, "nvlinks"), *bridges = json_object_get(o, "bridges");
    char where[64], sub[96], id[48];
    psc_status_t st;

    snprintf(where, sizeof(where), "gpus[%d]", i);
    if ((st = psc__want(r, o, "", where, 0, 0)) != PSC_OK ||
        (st = psc__fields_read(r, o, where, psc__gpu_fields, PSC__NFIELDS(psc__gpu_fields), g)) != PSC_OK ||
        (st = psc__fields_read(r, o, where, psc__gpu_tail_fields, PSC__NFIELDS(psc__gpu_tail_fields), g)) != PSC_OK ||
        (st = psc__want(r, links, where, "nvlinks", 1, 1)) != PSC_OK ||
        (st = psc__want(r, bridges, where, "bridges", 1, 1)) != PSC_OK ||
        (st = psc__gpumap_read(r, json_object_get(o, "cpu_mapping"), where, &f->gpumap[i])) != PSC_OK)
        return st;
    if (!g->pci_bus_id[0])
        return psc__bad(r, where, "pci_bus_id", "missing: accepted a PCI bus id such as \"0000:18:00.0\"");
    psc__json_dump(json_object_get(o, "pci_bus_id"), id, sizeof(id)); /* escaped, as a message must show it */
    if (!psc__busid_ok(g->pci_bus_id))
        return psc__bad(r, where, "pci_bus_id", "%s is not a PCI bus id: accepted one such as \"0000:18:00.0\"", id);
    if (psc__gpu_index(f, g->pci_bus_id) != i) /* the first GPU with this id; later ones are still empty */
        return psc__bad(r, where, "pci_bus_id", "%s is also gpus[%d]'s: accepted a bus id of its own", id,
                        psc__gpu_index(f, g->pci_bus_id));
    if (json_array_size(links) > PSC_MAX_NVLINKS)
        return psc__bad(r, where, "nvlinks", "%zu links: accepted at most %d", json_array_size(links),
                        PSC_MAX_NVLINKS);
    if (g->nvlink_count < 0 && json_array_size(links) > 0)
        return psc__bad(r, where, "nvlink_count", "null but %zu links are listed: accepted %zu",
                        json_array_size(links), json_array_size(links));
    if (g->nvlink_count >= 0 && (size_t)g->nvlink_count != json_array_size(links))
        return psc__bad(r, where, "nvlink_count", "%d but %zu links are listed: accepted %zu", g->nvlink_count,
                        json_array_size(links), json_array_size(links));
    for (int l = 0; l < g->nvlink_count; l++) {
        json_t *x = json_array_get(links, (size_t)l);

        snprintf(sub, sizeof(sub), "%s.nvlinks[%d]", where, l);
        if ((st = psc__want(r, x, sub, NULL, 0, 0)) != PSC_OK ||
            (st = psc__fields_read(r, x, sub, psc__nvlink_fields, PSC__NFIELDS(psc__nvlink_fields),
                                   &g->nvlinks[l])) != PSC_OK)
            return st;
    }
    if (json_array_size(bridges) > PSC_MAX_BRIDGES)
        return psc__bad(r, where, "bridges", "%zu bridges: accepted at most %d", json_array_size(bridges),
                        PSC_MAX_BRIDGES);
    g->nbridges = (int)json_array_size(bridges);
    for (int b = 0; b < g->nbridges; b++) {
        json_t *x = json_array_get(bridges, (size_t)b);

        snprintf(sub, sizeof(sub), "%s.bridges[%d]", where, b);
        if ((st = psc__want(r, x, sub, NULL, 0, 0)) != PSC_OK ||
            (st = psc__fields_read(r, x, sub, psc__bridge_fields, PSC__NFIELDS(psc__bridge_fields),
                                   &g->bridges[b])) != PSC_OK)
            return st;
    }
    return PSC_OK;
}

static psc_status_t psc__pair_read(const psc__rd_t *r, json_t *x, size_t k, psc_facts_t *f)
{
    static const char *const ends[2] = {"src", "dst"};
    psc_pair_facts_t scratch;
    char where[48], what[96];
    int end[2];
    json_t *path = json_object_get(x, "path");
    psc_status_t st;

    snprintf(where, sizeof(where), "pairs[%zu]", k);
    if ((st = psc__want(r, x, where, NULL, 0, 0)) != PSC_OK)
        return st;
    for (int e = 0; e < 2; e++) {
        json_t *v = json_object_get(x, ends[e]);

        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) >= r->ngpu)
            return psc__bad(r, where, ends[e], "%s: accepted an integer 0..%d",
                            v ? psc__what(v, what, sizeof(what)) : "missing", r->ngpu - 1);
        end[e] = (int)json_integer_value(v);
    }
    if (end[0] == end[1])
        return psc__bad(r, where, "dst", "%d is also src: accepted another GPU", end[1]);
    if (path && !json_is_null(path) && !json_is_string(path))
        return psc__bad(r, where, "path", "%s: accepted a string or null", psc__what(path, what, sizeof(what)));
    if ((st = psc__fields_read(r, x, where, psc__pair_derived, PSC__NFIELDS(psc__pair_derived), &scratch)) != PSC_OK)
        return st;
    return psc__fields_read(r, x, where, psc__pair_fields, PSC__NFIELDS(psc__pair_fields), &f->pair[end[0]][end[1]]);
}

/* An NCCL_* name as the environment has it: "NCCL_" then capitals, digits and '_'. */
static int psc__nccl_name_ok(const char *s)
{
    if (strncmp(s, "NCCL_", 5) != 0 || !s[5])
        return 0;
    for (s += 5; *s; s++)
        if (!((*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_'))
            return 0;
    return 1;
}

/* "nccl": absent or null leaves known 0 (a recording from before p2pscope read NCCL). */
static psc_status_t psc__nccl_read(const psc__rd_t *r, json_t *o, psc_nccl_facts_t *n)
{
    static const psc__field_t name_f = PSC__STR(psc_nccl_setting_t, name), value_f = PSC__STR(psc_nccl_setting_t, value);
    json_t *settings = json_object_get(o, "settings");
    char where[48], what[48];
    psc_status_t st;

    if ((st = psc__want(r, o, "", "nccl", 0, 1)) != PSC_OK || !o || json_is_null(o))
        return st;
    if ((st = psc__fields_read(r, o, "nccl", psc__nccl_fields, PSC__NFIELDS(psc__nccl_fields), n)) != PSC_OK ||
        (st = psc__want(r, settings, "nccl", "settings", 1, 1)) != PSC_OK)
        return st;
    if (json_array_size(settings) > PSC_MAX_NCCL_ENV)
        return psc__bad(r, "nccl", "settings", "%zu settings: accepted at most %d", json_array_size(settings),
                        PSC_MAX_NCCL_ENV);
    n->nsettings = (int)json_array_size(settings);
    for (int k = 0; k < n->nsettings; k++) {
        json_t *x = json_array_get(settings, (size_t)k);
        psc_nccl_setting_t *s = &n->settings[k];

        snprintf(where, sizeof(where), "nccl.settings[%d]", k);
        if ((st = psc__want(r, x, where, NULL, 0, 0)) != PSC_OK ||
            (st = psc__field_read(r, x, where, &name_f, s)) != PSC_OK ||
            (st = psc__field_read(r, x, where, &value_f, s)) != PSC_OK)
            return st;
        if (!psc__nccl_name_ok(s->name))
            return psc__bad(r, where, "name", "%s is not an NCCL setting: accepted a name such as "
                            "\"NCCL_P2P_DISABLE\"", psc__json_dump(json_object_get(x, "name"), what, sizeof(what)));
        for (int m = 0; m < k; m++)
            if (strcmp(n->settings[m].name, s->name) == 0)
                return psc__bad(r, where, "name", "%s is also nccl.settings[%d]'s: accepted each name once", s->name,
                                m);
    }
    if (n->loaded && n->version <= 0)
        return psc__bad(r, "nccl", "version", "missing for a loaded NCCL: accepted ncclGetVersion's code");
    n->known = 1;
    return PSC_OK;
}

/* Every key checked into s, which the caller hands over only when all of it is sound. */
static psc_status_t psc__doc_read(const psc__rd_t *r0, json_t *doc, psc_facts_t *s)
{
    psc__rd_t r = *r0;
    json_t *v, *gpus, *pairs, *host;
    char what[96];
    psc_status_t st;

    if (!json_is_object(doc))
        return psc__bad(&r, "", NULL, "the document is not a JSON object: accepted a p2pscope recording");
    v = json_object_get(doc, "format");
    if (!json_is_string(v) || strcmp(json_string_value(v), PSC_FACTS_FORMAT) != 0)
        return psc__bad(&r, "", "format", "%s: not a p2pscope recording: accepted \"%s\"",
                        v ? psc__what(v, what, sizeof(what)) : "missing", PSC_FACTS_FORMAT);
    v = json_object_get(doc, "version");
    if (!json_is_integer(v) || json_integer_value(v) != PSC_FACTS_VERSION)
        return psc__bad(&r, "", "version", "%s: accepted %d", v ? psc__what(v, what, sizeof(what)) : "missing",
                        PSC_FACTS_VERSION);
    v = json_object_get(doc, "source");
    if (v && !json_is_null(v) && !json_is_string(v))
        return psc__bad(&r, "", "source", "%s: accepted a string or null", psc__what(v, what, sizeof(what)));
    v = json_object_get(doc, "has_driver");
    if (v && !json_is_boolean(v))
        return psc__bad(&r, "", "has_driver", "%s: accepted true or false", psc__what(v, what, sizeof(what)));
    s->has_driver = json_is_true(v);
    host = json_object_get(doc, "host");
    if ((st = psc__want(&r, host, "", "host", 0, 1)) != PSC_OK ||
        (st = psc__fields_read(&r, host, "host", psc__host_fields, PSC__NFIELDS(psc__host_fields), &s->host)) !=
            PSC_OK)
        return st;
    { /* a recording from before the line was filtered: kept as a capture now would keep it */
        char whole[sizeof(s->host.cmdline)];

        memcpy(whole, s->host.cmdline, sizeof(whole));
        psc__cmdline_p2p(whole, s->host.cmdline, sizeof(s->host.cmdline));
    }
    gpus = json_object_get(doc, "gpus");
    if ((st = psc__want(&r, gpus, "", "gpus", 1, 0)) != PSC_OK)
        return st;
    if (json_array_size(gpus) > PSC_MAX_GPUS)
        return psc__bad(&r, "", "gpus", "%zu GPUs: accepted at most %d", json_array_size(gpus), PSC_MAX_GPUS);
    r.ngpu = s->ngpu = (int)json_array_size(gpus);
    for (int i = 0; i < s->ngpu; i++)
        if ((st = psc__gpu_read(&r, json_array_get(gpus, (size_t)i), i, s)) != PSC_OK)
            return st;
    pairs = json_object_get(doc, "pairs");
    if ((st = psc__want(&r, pairs, "", "pairs", 1, 1)) != PSC_OK)
        return st;
    for (size_t k = 0; k < json_array_size(pairs); k++)
        if ((st = psc__pair_read(&r, json_array_get(pairs, k), k, s)) != PSC_OK)
            return st;
    if ((st = psc__nccl_read(&r, json_object_get(doc, "nccl"), &s->nccl)) != PSC_OK)
        return st;
    v = json_object_get(doc, "hwloc_xml");
    if (v && !json_is_null(v) && !json_is_string(v))
        return psc__bad(&r, "", "hwloc_xml", "%s: accepted a string or null", psc__what(v, what, sizeof(what)));
    if (json_is_string(v) && json_string_length(v) > 0 && !(s->hwloc_xml = strdup(json_string_value(v)))) {
        psc__bad(&r, "", "hwloc_xml", "out of host memory");
        return PSC_ERR_NO_MEMORY;
    }
    return PSC_OK;
}

psc_status_t psc__facts_load_json(const char *path, const char *text, size_t len, psc_facts_t *f, char *errbuf,
                                  size_t errlen)
{
    psc__rd_t r = {path, errbuf, errlen, 0};
    psc_facts_t *s = psc_facts_new();
    psc_host_topo_t *topo = NULL;
    json_error_t jerr;
    json_t *doc = NULL;
    psc_status_t st = PSC_ERR_NO_MEMORY;

    if (!s) {
        snprintf(errbuf, errlen, "%s: out of host memory", path);
        goto out;
    }
    /* The text the caller read once, safely: the file is not opened again (it could be a FIFO by now). */
    doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!doc) {
        psc__json_parse_error(errbuf, errlen, path, &jerr);
        st = PSC_ERR_INVALID;
        goto out;
    }
    st = psc__doc_read(&r, doc, s);
    if (st != PSC_OK)
        goto out;
    snprintf(s->source, sizeof(s->source), "%s", path);
    if (s->hwloc_xml) {
        char why[256] = "";

        topo = psc_host_topo_load_recorded(NULL, s->hwloc_xml, why, sizeof(why));
        if (!topo) {
            st = psc__bad(&r, "", "hwloc_xml", "%s", why[0] ? why : "not an hwloc XML topology");
            goto out;
        }
    }
    /* Paths are derived again, so a recording replays through today's rules. */
    psc__classify_pairs(psc_host_topo_hwloc(topo), s);
    if (s->ngpu == 0) {
        snprintf(errbuf, errlen, "%s: the recording holds no NVIDIA GPU", path);
        st = PSC_ERR_NO_DEVICE; /* a sound recording still: its host facts are handed over */
    }
    free(f->hwloc_xml);
    *f = *s;
    s->hwloc_xml = NULL;
out:
    psc_host_topo_free(topo);
    json_decref(doc);
    psc_facts_free(s);
    return st;
}

psc_status_t psc_facts_save(const psc_facts_t *f, const char *path, char *errbuf, size_t errlen)
{
    char *text;
    psc_status_t st;

    if (!errbuf)
        errlen = 0; /* the reason has nowhere to go; snprintf writes nothing */
    if (!path || !*path) {
        snprintf(errbuf, errlen, "no file given to record the facts in (accepted: a file path)");
        return PSC_ERR_INVALID;
    }
    if (!f) {
        snprintf(errbuf, errlen, "%s: no facts to record (accepted: facts from psc_facts_gather or psc_facts_load)",
                 path);
        return PSC_ERR_INVALID;
    }
    text = psc_facts_json(f, 1);
    if (!text) {
        snprintf(errbuf, errlen, "%s: cannot turn the facts into JSON: out of host memory", path);
        return PSC_ERR_NO_MEMORY;
    }
    st = psc_write_file_atomic(path, text, strlen(text), errbuf, errlen);
    free(text);
    return st;
}
