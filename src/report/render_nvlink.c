/* `p2pscope nvlink` as text and JSON (render_nvlink.h): each GPU's links, with the watched traffic. */
#include "report/render_nvlink.h"

#include "report/json.h"
#include "report/render_doctor.h"
#include "report/table.h"
#include "report/text.h"

static const char *psc__yn(int v)
{
    return v < 0 ? "?" : v ? "yes" : "no";
}

static void psc__remote(const psc_facts_t *f, const psc_nvlink_facts_t *nl, char *buf, size_t len)
{
    if (nl->active != 1)
        snprintf(buf, len, "-");
    else if (nl->remote == PSC_REMOTE_GPU && nl->remote_gpu >= 0 && nl->remote_gpu < f->ngpu)
        snprintf(buf, len, "gpu%d %s", nl->remote_gpu, f->gpu[nl->remote_gpu].pci_bus_id);
    else
        snprintf(buf, len, "%s %s", nl->remote == PSC_REMOTE_SWITCH ? "NVSwitch" : nl->remote == PSC_REMOTE_CPU ? "CPU"
                                                                 : nl->remote == PSC_REMOTE_GPU ? "GPU" : "?",
                 nl->remote_bus_id[0] ? nl->remote_bus_id : "(not visible here)");
}

void psc_render_nvlink(FILE *f, const psc_facts_t *facts, int gpu, const psc_nvlink_gpu_traffic_t *traffic)
{
    static const char *const head[] = {"link", "state", "version", "GB/s/dir", "remote", "P2P", "sysmem",
                                       "P2P atomics", "sysmem atomics", "tx (MB)", "rx (MB)"};
    const psc_gpu_facts_t *g;
    const unsigned cols = traffic ? 11 : 9;
    psc_table_t *t;

    if (!facts || gpu < 0 || gpu >= facts->ngpu)
        return;
    g = &facts->gpu[gpu];
    if (g->nvlink_count <= 0) {
        psc_report_printf(f, "\ngpu%d %s (%s): no NVLink\n", gpu, g->name, g->pci_bus_id);
        return;
    }
    t = psc_table_new((unsigned)g->nvlink_count + 1, cols);
    if (!t)
        return;
    psc_report_printf(f, "\ngpu%d %s (%s): %d links%s\n", gpu, g->name, g->pci_bus_id, g->nvlink_count,
                      traffic ? "; traffic during the watched tests, 1 MB = 1e6 bytes" : "");
    psc_table_header(t, head, cols);
    for (int l = 0; l < g->nvlink_count && l < PSC_MAX_NVLINKS; l++) {
        const psc_nvlink_facts_t *nl = &g->nvlinks[l];
        unsigned r = (unsigned)l + 1;
        char remote[64];

        psc__remote(facts, nl, remote, sizeof(remote));
        psc_table_set(t, r, 0, "%d", l);
        psc_table_set(t, r, 1, "%s", nl->active == 1 ? "active" : nl->active == 0 ? "inactive" : "?");
        psc_table_set(t, r, 2, nl->version > 0 ? "%d" : "?", nl->version);
        psc_table_set(t, r, 3, nl->speed_gbs > 0 ? "%.3f" : "-", nl->speed_gbs);
        psc_table_set(t, r, 4, "%s", remote);
        psc_table_set(t, r, 5, "%s", psc__yn(nl->cap_p2p));
        psc_table_set(t, r, 6, "%s", psc__yn(nl->cap_sysmem));
        psc_table_set(t, r, 7, "%s", psc__yn(nl->cap_p2p_atomics));
        psc_table_set(t, r, 8, "%s", psc__yn(nl->cap_sysmem_atomics));
        if (traffic && l < traffic->nlinks && traffic->known[l]) {
            psc_table_set(t, r, 9, "%.1f", (double)traffic->tx[l] / 1e6);
            psc_table_set(t, r, 10, "%.1f", (double)traffic->rx[l] / 1e6);
        } else if (traffic && l < traffic->nlinks) {
            psc_table_set(t, r, 9, "?");
            psc_table_set(t, r, 10, "?");
        }
    }
    psc_table_render(t, f);
    psc_table_free(t);
}

void psc_render_nvlink_watch(FILE *f, const psc_facts_t *facts, const psc_nvlink_traffic_t *traffic, size_t cases,
                             uint64_t moved_bytes)
{
    fprintf(f, "watched: %zu case%s moved %.1f MB of payload (1 MB = 1e6 bytes)\n", cases, cases == 1 ? "" : "s",
            (double)moved_bytes / 1e6);
    for (int i = 0; facts && i < facts->ngpu; i++) {
        if (!traffic || i >= traffic->ngpu || traffic->gpu[i].nlinks <= 0)
            fprintf(f, "\ngpu%d: NVLink counters not available\n", i);
        else
            psc_render_nvlink(f, facts, i, &traffic->gpu[i]);
    }
}

json_t *psc_json_nvlink(const psc_facts_t *f, int exit_code)
{
    json_t *facts = psc_json_facts(f), *gpus = json_array();
    json_t *doc = json_pack("{s:{s:s,s:s},s:s,s:o}", "tool", "name", "p2pscope", "version", PSC_VERSION_STRING,
                            "command", "nvlink", "source", psc_json_str(f->source));
    size_t i;
    json_t *g;
    int bad = !facts || !gpus || !doc;

    json_array_foreach(json_object_get(facts, "gpus"), i, g)
        bad |= json_array_append_new(gpus, json_pack("{s:i,s:O,s:O,s:O}", "index", (int)i, "name",
                                                     json_object_get(g, "name"), "pci_bus_id",
                                                     json_object_get(g, "pci_bus_id"), "nvlinks",
                                                     json_object_get(g, "nvlinks"))) != 0;
    if (!bad) {
        bad |= json_object_set_new(doc, "gpus", gpus) != 0;
        gpus = NULL; /* stolen, even on failure */
        bad |= json_object_set_new(doc, "exit_code", json_integer(exit_code)) != 0;
    }
    json_decref(gpus);
    json_decref(facts);
    if (bad) {
        json_decref(doc);
        return NULL;
    }
    return doc;
}
