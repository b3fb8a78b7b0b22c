#define _GNU_SOURCE
#include "topo/host_topo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct psc_host_topo {
    hwloc_topology_t topo;
};

typedef struct {
    hwloc_nodeset_t nodeset;
    hwloc_membind_policy_t policy;
} psc__membind_saved_t;

/*
 * hwloc 2.x refuses XML that newer hwloc writes as format 3.0, yet reads it
 * whole once told it is 2.0: the objects, PCI attributes and distances that
 * p2pscope uses are written the same way (seen with the recordings in
 * shared/topologies; hwloc 2.9 then skips one trailing <info> tag).
 */
static char *psc__read_xml_as_v2(const char *path)
{
    static const char v3[] = "<topology version=\"3.0\">";
    FILE *f = fopen(path, "rb");
    char *buf = NULL, *hit;
    long len;

    if (!f)
        return NULL;
    if (fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0 ||
        !(buf = malloc((size_t)len + 1)) || fread(buf, 1, (size_t)len, f) != (size_t)len) {
        free(buf);
        fclose(f);
        return NULL;
    }
    fclose(f);
    buf[len] = '\0';
    hit = strstr(buf, v3);
    if (hit)
        hit[sizeof(v3) - 6] = '2'; /* the '3' of "3.0" */
    return buf;
}

psc_host_topo_t *psc_host_topo_load(void)
{
    return psc_host_topo_load_recorded(NULL, NULL, NULL, 0);
}

psc_host_topo_t *psc_host_topo_load_recorded(const char *path, const char *xml_text, char *errbuf,
                                             size_t errlen)
{
    psc_host_topo_t *t = calloc(1, sizeof(*t));
    char *old_root = NULL;
    struct stat sb;
    int is_dir = path && stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
    int rc;

    if (!t)
        return NULL;
    if (hwloc_topology_init(&t->topo) != 0)
        goto err_free;
    hwloc_topology_set_io_types_filter(t->topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    if (xml_text && hwloc_topology_set_xmlbuffer(t->topo, xml_text, (int)strlen(xml_text) + 1) != 0) {
        if (errbuf)
            snprintf(errbuf, errlen, "the recorded hwloc XML could not be parsed");
        goto err_destroy;
    }
    if (path && !is_dir) {
        char *xml = psc__read_xml_as_v2(path);
        int bad = !xml || hwloc_topology_set_xmlbuffer(t->topo, xml, (int)strlen(xml) + 1) != 0;

        free(xml);
        if (bad) {
            if (errbuf)
                snprintf(errbuf, errlen, "%s: not an hwloc XML file hwloc can read", path);
            goto err_destroy;
        }
    }
    if (is_dir) {
        /* hwloc 2 reads a captured /sys tree only through HWLOC_FSROOT. */
        old_root = getenv("HWLOC_FSROOT") ? strdup(getenv("HWLOC_FSROOT")) : NULL;
        setenv("HWLOC_FSROOT", path, 1);
    }
    rc = hwloc_topology_load(t->topo);
    if (is_dir) {
        if (old_root)
            setenv("HWLOC_FSROOT", old_root, 1);
        else
            unsetenv("HWLOC_FSROOT");
        free(old_root);
    }
    if (rc != 0) {
        if (errbuf)
            snprintf(errbuf, errlen, "%s: %s", path ? path : "this machine",
                     is_dir ? "hwloc could not read a /sys tree there" : "not an hwloc XML topology hwloc can load");
        goto err_destroy;
    }
    return t;

err_destroy:
    hwloc_topology_destroy(t->topo);
err_free:
    free(t);
    return NULL;
}

hwloc_topology_t psc_host_topo_hwloc(const psc_host_topo_t *t)
{
    return t ? t->topo : NULL;
}

char *psc_host_topo_export_xml(const psc_host_topo_t *t)
{
    char *buf = NULL, *copy;
    int len = 0;

    if (!t || hwloc_topology_export_xmlbuffer(t->topo, &buf, &len, 0) != 0)
        return NULL;
    copy = strdup(buf);
    hwloc_free_xmlbuffer(t->topo, buf);
    return copy;
}

void psc_host_topo_free(psc_host_topo_t *t)
{
    if (!t)
        return;
    hwloc_topology_destroy(t->topo);
    free(t);
}

/* Nodeset local to the device; NULL when it is the whole machine or unknown. */
static hwloc_const_nodeset_t psc__local_nodeset(const psc_host_topo_t *t, const char *bus_id)
{
    hwloc_obj_t pci, anc;

    if (!t || !bus_id)
        return NULL;
    pci = hwloc_get_pcidev_by_busidstring(t->topo, bus_id);
    if (!pci)
        return NULL;
    anc = hwloc_get_non_io_ancestor_obj(t->topo, pci);
    if (!anc || !anc->nodeset || hwloc_bitmap_weight(anc->nodeset) != 1)
        return NULL;
    return anc->nodeset;
}

int psc_host_topo_numa_of(const psc_host_topo_t *t, const char *pci_bus_id)
{
    hwloc_const_nodeset_t ns = psc__local_nodeset(t, pci_bus_id);

    return ns ? hwloc_bitmap_first(ns) : -1;
}

int psc_host_topo_numa_count(const psc_host_topo_t *t)
{
    int n = t ? hwloc_get_nbobjs_by_type(t->topo, HWLOC_OBJ_NUMANODE) : 1;

    return n > 0 ? n : 1;
}

/* The nodeset of one NUMA node by OS index, NULL when there is no such node. */
static hwloc_const_nodeset_t psc__node_set(const psc_host_topo_t *t, int node)
{
    hwloc_obj_t o = NULL;

    if (!t || node < 0)
        return NULL;
    while ((o = hwloc_get_next_obj_by_type(t->topo, HWLOC_OBJ_NUMANODE, o)))
        if ((int)o->os_index == node)
            return o->nodeset;
    return NULL;
}

void *psc_host_topo_membind_push(psc_host_topo_t *t, int node)
{
    hwloc_const_nodeset_t ns = psc__node_set(t, node);
    psc__membind_saved_t *saved;
    int flags = HWLOC_MEMBIND_THREAD | HWLOC_MEMBIND_BYNODESET;

    /* One NUMA node: nothing to choose. */
    if (!ns || psc_host_topo_numa_count(t) < 2)
        return NULL;
    saved = calloc(1, sizeof(*saved));
    if (!saved)
        return NULL;
    saved->nodeset = hwloc_bitmap_alloc();
    if (!saved->nodeset ||
        hwloc_get_membind(t->topo, saved->nodeset, &saved->policy, flags) != 0 ||
        hwloc_set_membind(t->topo, ns, HWLOC_MEMBIND_BIND, flags) != 0) {
        hwloc_bitmap_free(saved->nodeset);
        free(saved);
        return NULL;
    }
    return saved;
}

void *psc_host_topo_alloc(psc_host_topo_t *t, size_t len, int node)
{
    hwloc_const_nodeset_t ns = psc__node_set(t, node);
    void *p = NULL;

    /* With a topology every allocation comes from hwloc, so hwloc_free always matches. */
    if (t && ns && psc_host_topo_numa_count(t) > 1)
        return hwloc_alloc_membind(t->topo, len, ns, HWLOC_MEMBIND_BIND, HWLOC_MEMBIND_BYNODESET);
    if (t)
        return hwloc_alloc(t->topo, len);
    if (posix_memalign(&p, 4096, len) != 0)
        return NULL;
    return p;
}

void psc_host_topo_free_mem(psc_host_topo_t *t, void *p, size_t len)
{
    if (!p)
        return;
    if (t)
        hwloc_free(t->topo, p, len);
    else
        free(p);
}

void psc_host_topo_membind_pop(psc_host_topo_t *t, void *token)
{
    psc__membind_saved_t *saved = token;

    if (!saved)
        return;
    hwloc_set_membind(t->topo, saved->nodeset, saved->policy,
                      HWLOC_MEMBIND_THREAD | HWLOC_MEMBIND_BYNODESET);
    hwloc_bitmap_free(saved->nodeset);
    free(saved);
}
