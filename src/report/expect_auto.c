/* --expect auto (expect.h): bounds from the machine's own links, a stated fraction of their raw rate. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/expect.h"

double psc_expect_pcie_gbs(int gen, int width)
{
    /* GT/s per lane and line coding: Gen1-2 8b/10b, Gen3-5 128b/130b, Gen6 FLIT mode (242/256 of 64 GT/s). */
    static const double lane_gbs[] = {0, 2.5 * 8 / 10 / 8, 5.0 * 8 / 10 / 8, 8.0 * 128 / 130 / 8, 16.0 * 128 / 130 / 8,
                                      32.0 * 128 / 130 / 8, 64.0 * 242 / 256 / 8};

    if (gen < 1 || gen >= (int)(sizeof(lane_gbs) / sizeof(lane_gbs[0])) || width < 1 || width > 32)
        return 0;
    return lane_gbs[gen] * width;
}

/* Links of GPU g the facts report inactive (lost links lower a pair's count: its bound must not follow). */
static int psc__links_down(const psc_gpu_facts_t *g)
{
    int n = 0;

    for (int l = 0; l < g->nvlink_count && l < PSC_MAX_NVLINKS; l++)
        n += g->nvlinks[l].active == 0;
    return n;
}

/* Per direction, one link of GPU g: the mean speed of its active links that report one; 0 unknown. */
static double psc__link_gbs(const psc_gpu_facts_t *g)
{
    double sum = 0;
    int n = 0;

    for (int l = 0; l < g->nvlink_count && l < PSC_MAX_NVLINKS; l++)
        if (g->nvlinks[l].active != 0 && g->nvlinks[l].speed_gbs > 0) {
            sum += g->nvlinks[l].speed_gbs;
            n++;
        }
    return n ? sum / n : 0;
}

static psc_status_t psc__push(psc_expect_t *e, const char *test, const char *kase, double bound, const char *why)
{
    psc_expect_rule_t r;

    memset(&r, 0, sizeof(r));
    r.kind = PSC_EXPECT_BW;
    snprintf(r.test, sizeof(r.test), "%s", test);
    snprintf(r.kase, sizeof(r.kase), "%s", kase);
    r.op = PSC_EXPECT_GE;
    r.value = r.bound = bound;
    snprintf(r.unit, sizeof(r.unit), "GB/s");
    r.scale = 1.0;
    snprintf(r.figure, sizeof(r.figure), "median");
    snprintf(r.where, sizeof(r.where), "auto: %s", why);
    r.quiet = 1; /* generated for every link: a run of some tests leaves the others unmatched */
    return psc_expect_add(e, &r);
}

/*
 * The links a pair should have: the pair's count, plus the links either GPU has down where every link of it goes
 * to a switch (all of them serve every peer; a direct link's lost peer is not known).
 */
static int psc__pair_links(const psc_facts_t *f, int i, int j, int *down)
{
    int n = f->pair[i][j].nvlinks, extra = 0;

    for (int k = 0; k < 2; k++) {
        const psc_gpu_facts_t *g = &f->gpu[k ? j : i];
        int via_switch = g->nvlink_count > 0, d = psc__links_down(g);

        for (int l = 0; l < g->nvlink_count && l < PSC_MAX_NVLINKS; l++)
            via_switch &= g->nvlinks[l].active == 0 || g->nvlinks[l].remote == PSC_REMOTE_SWITCH;
        if (via_switch && d > extra)
            extra = d;
    }
    *down = extra;
    return n + extra;
}

static psc_status_t psc__nvlink_rules(psc_expect_t *e, const psc_facts_t *f, int i, int j)
{
    const psc_pair_facts_t *p = &f->pair[i][j];
    double link = psc__link_gbs(&f->gpu[i]), raw;
    char kase[48], why[160], size[16], down_text[48] = "";
    int links, down;
    psc_status_t st;

    if (p->path != PSC_PATH_NVLINK || p->nvlinks < 1 || link <= 0)
        return PSC_OK;
    links = psc__pair_links(f, i, j, &down);
    if (down)
        snprintf(down_text, sizeof(down_text), ", %d of them down now", down);
    raw = links * link;
    psc_expect_size_name(PSC_EXPECT_AUTO_GPU_SIZE, size, sizeof(size));
    snprintf(kase, sizeof(kase), "gpu%d->gpu%d@%s", i, j, size);
    snprintf(why, sizeof(why), "%.2f x NV%d raw %.1f GB/s (%d x %.2f GB/s per direction%s)", PSC_EXPECT_AUTO_NVLINK,
             links, raw, links, link, down_text);
    /* read, write; copy engine and SM: every one-direction GPU -> GPU test but P2P off */
    if ((st = psc__push(e, "gpu_to_gpu_[rw]*", kase, PSC_EXPECT_AUTO_NVLINK * raw, why)) != PSC_OK || i > j)
        return st;
    snprintf(kase, sizeof(kase), "gpu%d<->gpu%d@%s", i, j, size);
    snprintf(why, sizeof(why), "%.2f x 2 x NV%d raw %.1f GB/s (both directions%s)", PSC_EXPECT_AUTO_NVLINK_BIDIR,
             links, raw, down_text);
    return psc__push(e, "gpu_to_gpu_bidir_*", kase, PSC_EXPECT_AUTO_NVLINK_BIDIR * 2 * raw, why);
}

static psc_status_t psc__pcie_rules(psc_expect_t *e, const psc_gpu_facts_t *g, int i)
{
    /*
     * The link runs at the lower of its two ends' maximum generations. The current generation drops at idle to
     * save power, so it is no measure of the link; the facts record no speed for the port above the GPU, so the
     * GPU's maximum is taken, and the rule says so (a Gen5 GPU in a Gen4 slot misses it: its where tells why).
     */
    int gen = g->pcie_gen_max > 0 ? g->pcie_gen_max : g->pcie_gen;
    int width = g->pcie_width > 0 ? g->pcie_width : g->pcie_width_max;
    double raw = psc_expect_pcie_gbs(gen, width);
    char kase[48], why[160], size[16];
    psc_status_t st;

    if (raw <= 0)
        return PSC_OK;
    snprintf(why, sizeof(why), "%.2f x PCIe Gen%d x%d raw %.1f GB/s per direction; Gen%d is the GPU's maximum, the "
             "port above it not known", PSC_EXPECT_AUTO_PCIE, gen, width, raw, gen);
    psc_expect_size_name(PSC_EXPECT_AUTO_HOST_SIZE, size, sizeof(size));
    snprintf(kase, sizeof(kase), "host->gpu%d@%s", i, size);
    if ((st = psc__push(e, "host_to_gpu_ce", kase, PSC_EXPECT_AUTO_PCIE * raw, why)) != PSC_OK)
        return st;
    snprintf(kase, sizeof(kase), "gpu%d->host@%s", i, size);
    return psc__push(e, "gpu_to_host_ce", kase, PSC_EXPECT_AUTO_PCIE * raw, why);
}

psc_status_t psc_expect_auto(const psc_facts_t *f, psc_expect_t **out, char *err, size_t errlen)
{
    psc_expect_t *e;
    psc_status_t st = PSC_OK;

    if (!f || !out) {
        snprintf(err, errlen, "no facts: accepted the facts of a machine (psc_facts_gather, psc_facts_load)");
        return PSC_ERR_INVALID;
    }
    if (!(e = calloc(1, sizeof(*e)))) {
        snprintf(err, errlen, "out of host memory");
        return PSC_ERR_NO_MEMORY;
    }
    for (int i = 0; st == PSC_OK && i < f->ngpu && i < PSC_MAX_GPUS; i++) {
        for (int j = 0; st == PSC_OK && j < f->ngpu && j < PSC_MAX_GPUS; j++)
            if (i != j)
                st = psc__nvlink_rules(e, f, i, j);
        if (st == PSC_OK)
            st = psc__pcie_rules(e, &f->gpu[i], i);
    }
    if (st != PSC_OK) {
        snprintf(err, errlen, "out of host memory");
        psc_expect_free(e);
        return st;
    }
    *out = e;
    return PSC_OK;
}
