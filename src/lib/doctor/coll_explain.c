/*
 * Why a coll run's bus bandwidth is far below what bw measured on the same
 * links, when the facts can tell: NCCL's settings, the pairs' peer access,
 * the run's shape. Pure, as the doctor's rules are.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "doctor/rules.h"
#include "p2pscope_private.h"
#include "util/size_name.h"

#define PSC__COLL_FAR 0.5                    /* busbw below this share of bw is "far below" */
#define PSC__COLL_LATENCY_BYTES (64ull << 20) /* below 64 MiB busbw is still shaped by latency */

typedef struct {
    const psc_facts_t *f;                    /* NULL: no facts */
    const psc_coll_report_t *c;
    double link_bw, best;
    uint64_t largest, best_bytes;
    int in_run[PSC_MAX_GPUS];                /* facts GPUs the run used (all when the ranks do not say) */
} psc__coll_t;

static int psc__busid_parse(const char *s, unsigned v[4])
{
    return sscanf(s, "%x:%x:%x.%x", &v[0], &v[1], &v[2], &v[3]) == 4;
}

/* The facts' GPU with this bus id (CUDA's 4-digit or NVML's 8-digit domain); -1 none. */
static int psc__facts_gpu(const psc_facts_t *f, const char *busid)
{
    unsigned a[4], b[4];

    if (!psc__busid_parse(busid, a))
        return -1;
    for (int i = 0; i < f->ngpu; i++)
        if (psc__busid_parse(f->gpu[i].pci_bus_id, b) && !memcmp(a, b, sizeof(a)))
            return i;
    return -1;
}

static void psc__coll_gpus(psc__coll_t *x)
{
    const psc_facts_t *f = x->f;
    int mapped = 0;

    memset(x->in_run, 0, sizeof(x->in_run));
    if (!f)
        return;
    for (int r = 0; x->c->ranks && r < x->c->nranks; r++) {
        int g = psc__facts_gpu(f, x->c->ranks[r].pci_bus_id);

        if (g >= 0)
            mapped += !x->in_run[g], x->in_run[g] = 1;
    }
    if (!mapped) /* another machine's ranks, or none recorded: judge every pair here */
        for (int i = 0; i < f->ngpu && i < PSC_MAX_GPUS; i++)
            x->in_run[i] = 1;
}

/* A row that counts: NCCL's where NCCL's ran (p2pscope's own all-reduce rows do not speak for NCCL), else any. */
static int psc__coll_counts(const psc_coll_row_t *row, int nccl_ran)
{
    return (row->r[0].ran || row->r[1].ran) && (!nccl_ran || row->impl != PSC_COLL_IMPL_P2PSCOPE);
}

/*
 * The best busbw over the largest sizes run (within a factor 4 of the largest), of NCCL's rows where any
 * ran (a run of ours beside them must not hide a slow NCCL). 0 when no row ran.
 */
static int psc__coll_best(psc__coll_t *x)
{
    const psc_coll_report_t *c = x->c;
    int nccl_ran = 0;

    x->largest = x->best_bytes = 0;
    x->best = 0;
    for (int k = 0; c->rows && k < c->nrows; k++)
        nccl_ran |= (c->rows[k].r[0].ran || c->rows[k].r[1].ran) && c->rows[k].impl != PSC_COLL_IMPL_P2PSCOPE;
    for (int k = 0; c->rows && k < c->nrows; k++)
        if (psc__coll_counts(&c->rows[k], nccl_ran) && c->rows[k].bytes > x->largest)
            x->largest = c->rows[k].bytes;
    if (!x->largest)
        return 0;
    for (int k = 0; k < c->nrows; k++)
        for (int p = 0; p < 2; p++) {
            const psc_coll_row_t *row = &c->rows[k];

            if (psc__coll_counts(row, nccl_ran) && row->r[p].ran && row->bytes * 4 >= x->largest &&
                isfinite(row->r[p].busbw_gbs) && (row->r[p].busbw_gbs > x->best || !x->best_bytes)) {
                x->best = row->r[p].busbw_gbs;
                x->best_bytes = row->bytes;
            }
        }
    return 1;
}

/* Ordered pairs of the run's GPUs matching what; the first in *fi, *fj. */
static int psc__run_pairs(const psc__coll_t *x, int (*what)(const psc_pair_facts_t *, int), int arg, int *fi,
                          int *fj)
{
    int c = 0;

    for (int i = 0; x->f && i < x->f->ngpu; i++)
        for (int j = 0; j < x->f->ngpu; j++)
            if (i != j && x->in_run[i] && x->in_run[j] && what(&x->f->pair[i][j], arg) && c++ == 0)
                *fi = i, *fj = j;
    return c;
}

static int psc__no_access(const psc_pair_facts_t *p, int arg)
{
    (void)arg;
    return p->can_access == 0;
}

static int psc__beyond_level(const psc_pair_facts_t *p, int level)
{
    return p->can_access != 0 && psc__nccl_path_rank(p->path) > level;
}

static int psc__multi_node(const psc_coll_report_t *c)
{
    for (int r = 1; c->ranks && r < c->nranks; r++)
        if (c->ranks[r].host[0] && c->ranks[0].host[0] && strcmp(c->ranks[r].host, c->ranks[0].host) != 0)
            return 1;
    return 0;
}

static void psc__coll_rules(const psc__coll_t *x, psc__findings_t *fs)
{
    static const char *const debug_fix =
        "rerun with NCCL_DEBUG=INFO: its log names the transport NCCL chose for each peer (\"via P2P/IPC\", "
        "\"via SHM\", \"NET/...\"); compare with p2pscope doctor's NCCL findings";
    const psc_nccl_facts_t *n = x->f ? &x->f->nccl : NULL;
    int shm_off = psc__nccl_flag(n, "NCCL_SHM_DISABLE"), level = psc__nccl_p2p_level(n), reasons = 0, i = 0, j = 0;
    char ev[512], at[32], top[32], lead[160], label[16];
    const char *via = shm_off ? "the network transport (NCCL_SHM_DISABLE is set too)" : "host memory (SHM)";

    if (x->c->nranks <= 1) {
        snprintf(ev, sizeof(ev), "%s with %d rank", psc_coll_name(x->c->coll) ? psc_coll_name(x->c->coll) : "?",
                 x->c->nranks);
        psc__add(fs, PSC_SEV_INFO, "coll_one_rank",
                 "run on several GPUs (-g N, or one process per GPU under mpirun with a build that has MPI)", ev,
                 "one rank: nothing crosses between GPUs, so busbw says nothing of the links (0 by definition "
                 "for all-reduce, all-gather, reduce-scatter and alltoall)");
        return;
    }
    if (!(x->link_bw > 0) || !isfinite(x->link_bw)) {
        psc__add(fs, PSC_SEV_INFO, "coll_not_compared", "measure the same GPUs with p2pscope bw and compare",
                 "no bw result for these GPUs was given", "busbw not compared: the links' bandwidth is not known");
        return;
    }
    if (x->best >= PSC__COLL_FAR * x->link_bw)
        return;
    snprintf(lead, sizeof(lead), "busbw %.1f GB/s (at %s) is %.0f%% of the %.1f GB/s bw measured on these links",
             x->best, psc__size_name(x->best_bytes, " ", at, sizeof(at)), 100.0 * x->best / x->link_bw, x->link_bw);
    snprintf(ev, sizeof(ev), "%s, %d ranks in %d process%s, sizes up to %s; best busbw of the largest sizes %.2f GB/s; "
             "bw %.2f GB/s; NCCL settings %s",
             psc_coll_name(x->c->coll) ? psc_coll_name(x->c->coll) : "?", x->c->nranks, x->c->nprocs,
             x->c->nprocs == 1 ? "" : "es", psc__size_name(x->largest, " ", top, sizeof(top)), x->best, x->link_bw,
             n && n->known ? (n->nsettings ? "in the facts" : "none") : "not known");
    if (psc__nccl_flag(n, "NCCL_P2P_DISABLE")) {
        reasons++;
        psc__add(fs, PSC_SEV_WARNING, "coll_p2p_disabled", "unset NCCL_P2P_DISABLE (and NCCL_SHM_DISABLE)", ev,
                 "%s: NCCL_P2P_DISABLE sends the GPUs' traffic through %s", lead, via);
    } else if (level >= 0 && psc__run_pairs(x, psc__beyond_level, level, &i, &j)) {
        reasons++;
        psc__add(fs, PSC_SEV_WARNING, "coll_p2p_level", "unset NCCL_P2P_LEVEL, or raise it to the pairs' path class",
                 ev, "%s: NCCL_P2P_LEVEL=%s keeps NCCL off P2P between gpu%d and gpu%d (%s apart), through %s", lead,
                 psc__nccl_path_name(level), i, j,
                 psc_path_label(x->f->pair[i][j].path, x->f->pair[i][j].nvlinks, label, sizeof(label)), via);
    }
    if (psc__run_pairs(x, psc__no_access, 0, &i, &j)) {
        reasons++;
        psc__add(fs, PSC_SEV_WARNING, "coll_no_peer_access",
                 "see p2p_unavailable in p2pscope doctor for why these GPUs lack peer access", ev,
                 "%s: gpu%d cannot access gpu%d peer-to-peer, so NCCL moves their data through %s", lead, i, j, via);
    }
    if (psc__multi_node(x->c)) {
        reasons++;
        psc__add(fs, PSC_SEV_INFO, "coll_multi_node", "compare with the network's bandwidth between the nodes", ev,
                 "%s: the ranks span several nodes, so the network between them bounds busbw, not these links",
                 lead);
    }
    if (x->largest < PSC__COLL_LATENCY_BYTES) {
        reasons++;
        psc__add(fs, PSC_SEV_INFO, "coll_small_sizes", "run up to 1 GiB or more (-e 1G)", ev,
                 "%s: the largest size, %s, is below 64 MiB, where the time per call still dominates", lead, top);
    }
    if (!reasons)
        psc__add(fs, PSC_SEV_WARNING, "coll_slow_unknown", debug_fix, ev, "%s, and the facts do not tell why",
                 lead);
}

size_t psc_doctor_coll(const psc_facts_t *facts, const psc_coll_report_t *coll, double link_bw_gbs,
                       psc_finding_t *out, size_t cap)
{
    static const psc_severity_t passes[] = {PSC_SEV_ERROR, PSC_SEV_WARNING, PSC_SEV_INFO};
    psc__findings_t fs = {out, out ? cap : 0, 0, PSC_SEV_ERROR};
    psc__coll_t x;

    if (!coll)
        return 0;
    memset(&x, 0, sizeof(x));
    x.f = facts;
    x.c = coll;
    x.link_bw = link_bw_gbs;
    if (!psc__coll_best(&x))
        return 0; /* no row ran: nothing to explain */
    psc__coll_gpus(&x);
    for (size_t p = 0; p < sizeof(passes) / sizeof(passes[0]); p++) {
        fs.pass = passes[p];
        psc__coll_rules(&x, &fs);
    }
    return fs.n;
}
