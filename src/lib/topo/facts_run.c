/*
 * The facts a JSON run carries (report's "topology", written by psc_facts_json without the hwloc XML) read
 * back for `p2pscope render`: checked as a recording is, then given back what the run recorded and a
 * recording derives again: the PCIe path of each pair (from its label; no XML, no hwloc tree to derive it
 * from) and the source the facts were gathered from.
 */
#include <stdio.h>
#include <string.h>

#include "p2pscope_private.h"
#include "topo/facts_json.h"

/* A label of psc_path_label (not NV#, which the links give) back to its path; -1 for one it never writes. */
static int psc__path_of(const char *label)
{
    static const struct {
        const char *label;
        psc_path_t path;
    } names[] = {{"PIX", PSC_PATH_PIX}, {"PXB", PSC_PATH_PXB}, {"PHB", PSC_PATH_PHB}, {"NODE", PSC_PATH_NODE},
                 {"SYS", PSC_PATH_SYS}, {"?", PSC_PATH_UNKNOWN}};

    for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++)
        if (strcmp(label, names[k].label) == 0)
            return (int)names[k].path;
    return -1;
}

/* What the recording's own checks left to the derivation: each pair's path, the source. */
static psc_status_t psc__recorded(json_t *doc, const char *name, psc_facts_t *f, char *errbuf, size_t errlen)
{
    json_t *pairs = json_object_get(doc, "pairs"), *source = json_object_get(doc, "source");

    snprintf(f->source, sizeof(f->source), "%s", json_is_string(source) ? json_string_value(source) : "");
    for (size_t k = 0; k < json_array_size(pairs); k++) {
        json_t *x = json_array_get(pairs, k);
        const char *label = json_string_value(json_object_get(x, "path"));
        json_int_t i = json_integer_value(json_object_get(x, "src")), j = json_integer_value(json_object_get(x, "dst"));
        int path;

        if (i < 0 || j < 0 || i >= f->ngpu || j >= f->ngpu || i == j || f->pair[i][j].path == PSC_PATH_NVLINK)
            continue; /* checked by the load; NVLink paths come from the links */
        if (!label || (path = psc__path_of(label)) < 0) {
            snprintf(errbuf, errlen, "%s: pairs[%zu].path: '%.16s': accepted PIX, PXB, PHB, NODE, SYS, ? or NV#", name,
                     k, label ? label : "(not a string)");
            return PSC_ERR_INVALID;
        }
        f->pair[i][j].path = (psc_path_t)path;
    }
    return PSC_OK;
}

psc_status_t psc_facts_load_run(const char *name, const char *text, size_t len, psc_facts_t **out, char *errbuf,
                                size_t errlen)
{
    psc_facts_t *f = psc_facts_new();
    json_t *doc = NULL;
    psc_status_t st;

    if (!f) {
        snprintf(errbuf, errlen, "%s: out of host memory", name);
        return PSC_ERR_NO_MEMORY;
    }
    st = psc__facts_load_json(name, text, len, f, errbuf, errlen);
    if (st == PSC_OK && !(doc = json_loadb(text, len, 0, NULL))) { /* parsed once already: only memory fails */
        snprintf(errbuf, errlen, "%s: out of host memory", name);
        st = PSC_ERR_NO_MEMORY;
    }
    if (st == PSC_OK)
        st = psc__recorded(doc, name, f, errbuf, errlen);
    json_decref(doc);
    if (st != PSC_OK) {
        psc_facts_free(f);
        return st;
    }
    *out = f;
    return PSC_OK;
}
