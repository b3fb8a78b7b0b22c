/*
 * The host topology through hwloc (host_topo.h): loaded live or from a recording (parsed first in the
 * sandbox of xml_sandbox.c), NUMA locality of PCI devices, memory binding, export as XML.
 */
#define _GNU_SOURCE
#include "machine/host_topo.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "machine/xml_sandbox.h"
#include "util/safe_read.h"

struct psc_host_topo {
    hwloc_topology_t topo;
};

typedef struct {
    hwloc_nodeset_t nodeset;
    hwloc_membind_policy_t policy;
} psc__membind_saved_t;

/* Past the first `end` at or after p, NULL when none; by hand, as strstr in a loop is quadratic under ASan. */
static char *psc__past(char *p, const char *end)
{
    size_t n = strlen(end);

    for (; *p; p++)
        if (*p == end[0] && strncmp(p, end, n) == 0)
            return p + n;
    return NULL;
}

/* The root element: past space, <?...?>, <!--...--> and <!DOCTYPE ...[...]>; NULL when there is none. */
static char *psc__xml_root_tag(char *p)
{
    for (;;) {
        p += strspn(p, " \t\r\n");
        if (strncmp(p, "\xef\xbb\xbf", 3) == 0) {
            p += 3;
        } else if (strncmp(p, "<?", 2) == 0) {
            if (!(p = psc__past(p + 2, "?>")))
                return NULL;
        } else if (strncmp(p, "<!--", 4) == 0) {
            if (!(p = psc__past(p + 4, "-->")))
                return NULL;
        } else if (strncmp(p, "<!", 2) == 0) {
            int nest = 0;

            for (p += 2; *p && (nest > 0 || *p != '>'); p++)
                nest += *p == '[' ? 1 : *p == ']' ? -1 : 0;
            if (!*p)
                return NULL;
            p++;
        } else {
            return *p == '<' ? p : NULL;
        }
    }
}

/*
 * hwloc 2.x refuses XML that newer hwloc writes as format 3.0, yet reads it
 * whole once told it is 2.0: the objects, PCI attributes and distances that
 * p2pscope uses are written the same way (seen with the recordings in
 * shared/topologies; hwloc 2.9 then skips one trailing <info> tag). Only the
 * root <topology> tag's version is changed, never text elsewhere (a comment).
 */
static void psc__xml_as_v2(char *xml)
{
    char *tag = psc__xml_root_tag(xml), *end;

    if (!tag || strncmp(tag, "<topology", 9) != 0 || !tag[9] || !strchr(" \t\r\n", tag[9]))
        return;
    end = strchr(tag, '>');
    for (char *a = tag + 9; end && a < end; a++) {
        if (!strchr(" \t\r\n", *a))
            continue;
        if ((strncmp(a + 1, "version=\"3.0\"", 13) == 0 || strncmp(a + 1, "version='3.0'", 13) == 0) &&
            a + 14 <= end) {
            a[10] = '2'; /* the '3' of "3.0" */
            return;
        }
    }
}

psc_host_topo_t *psc_host_topo_load(void)
{
    psc_host_topo_t *t = calloc(1, sizeof(*t));

    /* This machine's own topology: trusted, loaded in-process. */
    if (!t)
        return NULL;
    if (hwloc_topology_init(&t->topo) != 0)
        goto err_free;
    hwloc_topology_set_io_types_filter(t->topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    if (hwloc_topology_load(t->topo) != 0)
        goto err_destroy;
    return t;

err_destroy:
    hwloc_topology_destroy(t->topo);
err_free:
    free(t);
    return NULL;
}

psc_status_t psc_host_topo_open_recorded(const char *name, const char *xml_text, const char *fsroot,
                                         psc_host_topo_t **out, char *errbuf, size_t errlen)
{
    psc_host_topo_t *t;
    char *xml = NULL, *vetted = NULL;
    psc_status_t st;

    if (xml_text && !(xml = strdup(xml_text))) {
        snprintf(errbuf, errlen, "%s: out of host memory", name);
        return PSC_ERR_NO_MEMORY;
    }
    if (xml)
        psc__xml_as_v2(xml);
    /* Someone else's recording: hwloc parses it in a child under limits, we load only what it gives back. */
    st = psc__xml_sandbox_parse(name, xml, xml ? NULL : fsroot, &vetted, errbuf, errlen);
    free(xml);
    if (st != PSC_OK)
        return st;
    st = PSC_ERR_NO_MEMORY;
    t = calloc(1, sizeof(*t));
    if (!t) {
        snprintf(errbuf, errlen, "%s: out of host memory", name);
        goto err_vetted;
    }
    st = PSC_ERR_IO;
    if (hwloc_topology_init(&t->topo) != 0) {
        snprintf(errbuf, errlen, "%s: hwloc could not start", name);
        goto err_free;
    }
    hwloc_topology_set_io_types_filter(t->topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    if (hwloc_topology_set_xmlbuffer(t->topo, vetted, (int)strlen(vetted) + 1) != 0 ||
        hwloc_topology_load(t->topo) != 0) {
        snprintf(errbuf, errlen, "%s: hwloc could not load its own XML export of it", name);
        goto err_destroy;
    }
    free(vetted);
    *out = t;
    return PSC_OK;

err_destroy:
    hwloc_topology_destroy(t->topo);
err_free:
    free(t);
err_vetted:
    free(vetted);
    return st;
}

psc_host_topo_t *psc_host_topo_load_recorded(const char *path, const char *xml_text, char *errbuf,
                                             size_t errlen)
{
    psc_host_topo_t *t = NULL;
    char scratch[8], *xml = NULL;
    struct stat sb;
    size_t len;

    if (!errbuf || !errlen) {
        errbuf = scratch;
        errlen = sizeof(scratch);
    }
    if (!path && !xml_text)
        return psc_host_topo_load();
    if (!path) {
        psc_host_topo_open_recorded("the recorded hwloc XML", xml_text, NULL, &t, errbuf, errlen);
        return t;
    }
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        if (psc__capture_check(path, PSC_CAPTURE_MAX_ENTRIES, errbuf, errlen) == PSC_OK)
            psc_host_topo_open_recorded(path, NULL, path, &t, errbuf, errlen);
        return t;
    }
    if (psc__safe_read_file(NULL, path, PSC_XML_MAX_BYTES, &xml, &len, errbuf, errlen) == PSC_OK)
        psc_host_topo_open_recorded(path, xml, NULL, &t, errbuf, errlen);
    free(xml);
    return t;
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
