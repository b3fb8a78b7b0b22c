/*
 * CPU mappings of GPU memory as facts: psc_gpumap_probe on each GPU of live
 * facts (psc_facts_probe_gpumap), and the short texts the doctor and topo
 * show of them.
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "topo/gpumap_facts.h"

/* The facts hold the probe's report field for field: the same backends, reasons of the same size. */
_Static_assert(PSC_GPUMAP_BACKENDS == sizeof(((psc_gpumap_facts_t *)0)->usable) / sizeof(int),
               "psc_gpumap_facts_t.usable has one entry per backend");
_Static_assert(PSC_GPUMAP_WHY_LEN == sizeof(((psc_gpumap_facts_t *)0)->why[0]),
               "psc_gpumap_facts_t.why holds a report's reason");

static void psc__gpumap_facts_from(psc_gpumap_facts_t *g, const psc_gpumap_report_t *r)
{
    memset(g, 0, sizeof(*g));
    g->known = 1;
    for (int b = 0; b < PSC_GPUMAP_BACKENDS; b++) {
        g->usable[b] = r->usable[b] ? 1 : 0;
        if (!r->usable[b]) { /* the same length as the report's: a bounded copy (no format to truncate) */
            size_t n = strnlen(r->why[b], sizeof(g->why[b]) - 1);

            memcpy(g->why[b], r->why[b], n);
            g->why[b][n] = '\0';
        }
    }
    g->gdr_lib_version = r->gdr_lib_version;
    g->gdr_drv_version = r->gdr_drv_version;
    g->gdr_dmabuf = r->gdr_dmabuf ? 1 : 0;
    g->bar1_total = r->bar1_total;
    g->bar1_free = r->bar1_free;
}

psc_status_t psc_facts_probe_gpumap(psc_context_t *ctx, psc_facts_t *facts)
{
    int n;

    if (!ctx)
        return PSC_ERR_INVALID;
    if (!facts)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_facts_probe_gpumap: no facts given (accepted: one from "
                         "psc_facts_gather on this context)");
    n = psc_device_count(ctx) < PSC_MAX_GPUS ? psc_device_count(ctx) : PSC_MAX_GPUS;
    /* GPU i of live facts is the driver's ordinal i: facts of another machine would be probed on this one. */
    if (strcmp(facts->source, "live") != 0 || facts->ngpu != n)
        return psc__fail(ctx, PSC_ERR_INVALID,
                         "psc_facts_probe_gpumap: the facts (%s, %d GPUs) are not this context's machine "
                         "(accepted: facts from psc_facts_gather on this context, %d GPUs)",
                         facts->source, facts->ngpu, n);
    for (int i = 0; i < facts->ngpu; i++) {
        psc_gpumap_report_t r;

        memset(&facts->gpumap[i], 0, sizeof(facts->gpumap[i]));
        if (psc_gpumap_probe(ctx, i, &r) == PSC_OK)
            psc__gpumap_facts_from(&facts->gpumap[i], &r);
    }
    return PSC_OK;
}

void psc__gpumap_clause(const char *why, int detail, char *out, size_t len)
{
    const char *end, *colon;
    size_t n;

    if (!len)
        return;
    end = strstr(why, "; ");
    if (!end)
        end = why + strlen(why);
    if (!detail && (colon = strstr(why, ": ")) && colon < end) {
        /* "gdr_open failed: no /dev/gdrdrv (...)": the failure alone says nothing, what follows does */
        if (colon - why >= 6 && strncmp(colon - 6, "failed", 6) == 0) {
            const char *next = strstr(colon + 2, ": "), *paren = strstr(colon + 2, " (");

            if (next && next < end)
                end = next;
            if (paren && paren < end)
                end = paren;
        } else {
            end = colon;
        }
    }
    n = (size_t)(end - why);
    if (n < len) {
        memcpy(out, why, n);
        out[n] = '\0';
    } else if (len > 3) {
        memcpy(out, why, len - 4);
        memcpy(out + len - 4, "...", 4);
    } else {
        out[0] = '\0';
    }
}

const char *psc__gpumap_label(const psc_gpumap_facts_t *g, char *buf, size_t len)
{
    size_t used = 0;
    int any = 0;

    if (!len)
        return buf;
    buf[0] = '\0';
    if (!g->known) {
        snprintf(buf, len, "not recorded");
        return buf;
    }
    for (int b = 0; b < PSC_GPUMAP_BACKENDS; b++)
        if (g->usable[b]) {
            used += (size_t)snprintf(buf + used, used < len ? len - used : 0, "%s%s", any ? ", " : "",
                                     psc_gpumap_backend_name((psc_gpumap_backend_t)b));
            any = 1;
        }
    if (any)
        return buf;
    used = (size_t)snprintf(buf, len, "none (");
    for (int b = 0; b < PSC_GPUMAP_BACKENDS && used < len; b++) {
        char c[160];

        psc__gpumap_clause(g->why[b][0] ? g->why[b] : "reason not recorded", 0, c, sizeof(c));
        used += (size_t)snprintf(buf + used, len - used, "%s%s: %s", b ? "; " : "",
                                 psc_gpumap_backend_name((psc_gpumap_backend_t)b), c);
    }
    if (used < len)
        snprintf(buf + used, len - used, ")");
    return buf;
}
