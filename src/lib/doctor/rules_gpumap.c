/*
 * The doctor's rule on CPU mappings of GPU memory (gdrcopy's job): a GPU
 * where no backend maps memory for the CPU. Nothing is broken (copies still
 * go through cuMemcpy), a capability is missing: info, with each backend's
 * reason as evidence and the fix.
 */
#include <stdio.h>
#include <string.h>

#include "doctor/rules.h"
#include "topo/gpumap_facts.h"

#define PSC__GPUMAP_FIX "install gdrcopy 2.4 or newer with its gdrdrv module (/dev/gdrdrv), or a driver for CUDA 13.3 " \
                        "or newer, which maps a dma-buf of GPU memory without the module"

/* BAR1 of GPU i: the probe's, else NVML's in the GPU facts; 0 unknown. */
static uint64_t psc__bar1(const psc_facts_t *f, int i)
{
    return f->gpumap[i].bar1_total ? f->gpumap[i].bar1_total : f->gpu[i].bar1_bytes;
}

static void rule_gpumap_none(const psc_facts_t *f, psc__findings_t *fs)
{
    for (int i = 0; i < f->ngpu && i < PSC_MAX_GPUS; i++) {
        const psc_gpumap_facts_t *g = &f->gpumap[i];
        uint64_t bar1 = psc__bar1(f, i), mem = f->gpu[i].memory_bytes;
        int small = bar1 && mem && bar1 < mem;
        char ev[512], fix[256];
        size_t used;

        if (!g->known || g->usable[PSC_GPUMAP_GDRCOPY] || g->usable[PSC_GPUMAP_DMABUF] ||
            g->usable[PSC_GPUMAP_COHERENT])
            continue;
        used = (size_t)snprintf(ev, sizeof(ev), "gpu%d", i);
        for (int b = 0; b < PSC_GPUMAP_BACKENDS && used < sizeof(ev); b++) {
            char c[128];

            psc__gpumap_clause(g->why[b][0] ? g->why[b] : "reason not recorded", 1, c, sizeof(c));
            used += (size_t)snprintf(ev + used, sizeof(ev) - used, "%s %s: %s", b ? ";" : ":",
                                     psc_gpumap_backend_name((psc_gpumap_backend_t)b), c);
        }
        if (used < sizeof(ev) && bar1)
            snprintf(ev + used, sizeof(ev) - used, "; BAR1 %.0f MiB, memory %.0f MiB", bar1 / 1048576.0,
                     mem / 1048576.0);
        snprintf(fix, sizeof(fix), "%s%s", PSC__GPUMAP_FIX,
                 small ? "; and enable Resizable BAR in the firmware, so BAR1 covers the GPU's memory" : "");
        psc__add(fs, PSC_SEV_INFO, "gpumap_none", fix, ev,
                 "gpu%d: no CPU mapping of its memory (gdrcopy, dma-buf, coherent): the CPU copies to and from it "
                 "through cuMemcpy only, not with its own loads and stores",
                 i);
    }
}

/* GPUs whose facts lack the probe (recordings made without it, facts from psc_facts_gather alone). */
static void rule_gpumap_not_checked(const psc_facts_t *f, psc__findings_t *fs)
{
    char list[256];
    size_t used = 0;
    int missing = 0;

    list[0] = '\0';
    for (int i = 0; i < f->ngpu && i < PSC_MAX_GPUS; i++) {
        if (f->gpumap[i].known)
            continue;
        if (used < sizeof(list))
            used += (size_t)snprintf(list + used, sizeof(list) - used, "%sgpu%d", missing ? ", " : "", i);
        missing++;
    }
    if (!missing)
        return;
    psc__add(fs, PSC_SEV_INFO, "not_checked_gpumap", "run p2pscope doctor on the machine itself", f->source,
             "not checked: CPU mappings of GPU memory on %s (not in these facts)",
             missing == f->ngpu ? "any GPU" : list);
}

void psc__rules_gpumap(const psc_facts_t *f, psc__findings_t *fs)
{
    rule_gpumap_none(f, fs);
    rule_gpumap_not_checked(f, fs);
}
