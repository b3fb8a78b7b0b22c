/* p2pscope ipc's figures inside one process (ipc/ipc_local.h). */
#include "ipc/ipc_local.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ipc/ipc_measure.h"
#include "lat/flag.h"
#include "mem/buffer.h"

typedef struct {
    psc_bw_result_t bw[PSC_IPC_NBW];
    psc_pctl_t rtt;
} psc_ipc_local_pair_t;

struct psc_ipc_local {
    int no_local;
    psc_ipc_local_pair_t *pair[PSC_MAX_GPUS][PSC_MAX_GPUS];
};

static void psc__waive(psc_ipc_local_pair_t *lp, unsigned bw, const char *why)
{
    for (int k = 0; k < PSC_IPC_NBW; k++) {
        lp->bw[k].status = PSC_RESULT_WAIVED;
        snprintf(lp->bw[k].reason, sizeof(lp->bw[k].reason), "%s", (bw & (1u << k)) ? why : "not asked");
    }
}

/* Both ways, as the copies (issuer -> other) and the answers (other -> issuer) need; 0 and why when not possible. */
static psc_status_t psc__peers(psc_context_t *ctx, int a, int b, int *ok, char *why, size_t len)
{
    int ab = 0, ba = 0;
    psc_status_t st;

    *ok = 1;
    if (a == b)
        return PSC_OK;
    if ((st = PSC_CU(ctx, cuDeviceCanAccessPeer, (&ab, ctx->gpu[a].dev, ctx->gpu[b].dev))) != PSC_OK ||
        (st = PSC_CU(ctx, cuDeviceCanAccessPeer, (&ba, ctx->gpu[b].dev, ctx->gpu[a].dev))) != PSC_OK)
        return st;
    if (!ab || !ba) {
        *ok = 0;
        snprintf(why, len, "no peer access between GPU %d and GPU %d in one process (cuDeviceCanAccessPeer = 0)", a, b);
        return PSC_OK;
    }
    if ((st = psc__gpu_peer_enable(ctx, a, b)) != PSC_OK)
        return st;
    return psc__gpu_peer_enable(ctx, b, a);
}

static psc_status_t psc__rtt(psc_context_t *ctx, int a, int b, const psc_ipc_opts_t *o, psc_pctl_t *out)
{
    uint64_t timeout_ns = (uint64_t)(o->timeout_ms * 1e6);
    unsigned n = psc__ipc_round_trips(o, a, b);
    CUdeviceptr flag_b = 0, ans_a = 0;
    double *ns = calloc(n, sizeof(*ns)), npc = 0;
    int late_a = 0, late_b = 0;
    psc_flag_pong_t pong;
    psc_status_t st, sst;

    if (!ns)
        return psc__fail(ctx, PSC_ERR_NO_MEMORY, "out of host memory for %u round trips", n);
    if ((st = psc__dev_scratch(ctx, b, 256, &flag_b)) != PSC_OK || (st = psc__dev_scratch(ctx, a, 256, &ans_a)) != PSC_OK ||
        (st = psc__flag_pong_start(ctx, b, flag_b, ans_a, n, timeout_ns, &pong)) != PSC_OK)
        goto out;
    st = psc__flag_ping(ctx, a, flag_b, ans_a, n, timeout_ns, ns, &npc, &late_a);
    if ((sst = psc__flag_pong_end(ctx, &pong, &late_b)) != PSC_OK && st == PSC_OK)
        st = sst;
    if (st == PSC_OK && !late_a && !late_b)
        st = psc__ipc_rtt_pctl(ctx, ns, n, out);
out:
    psc__dev_scratch_free(ctx, b, flag_b);
    psc__dev_scratch_free(ctx, a, ans_a);
    free(ns);
    return st;
}

static psc_status_t psc__measure_pair(psc_context_t *ctx, int a, int b, const psc_ipc_opts_t *o, uint64_t size,
                                      psc_ipc_local_pair_t *lp)
{
    psc_buffer_t *mine = NULL, *other = NULL;
    psc_measure_opts_t m = o->measure;
    char why[200];
    psc_status_t st;
    int ok;

    m.size = size;
    if ((st = psc__peers(ctx, a, b, &ok, why, sizeof(why))) != PSC_OK)
        return st;
    if (!ok) {
        psc__waive(lp, o->bw, why);
        return PSC_OK;
    }
    if ((st = psc__buffer_get(ctx, PSC_MEM_DEVICE, a, -1, size, &mine)) == PSC_OK &&
        (st = psc__buffer_get(ctx, PSC_MEM_DEVICE, b, -1, size, &other)) == PSC_OK)
        for (int k = 0; k < PSC_IPC_NBW && st == PSC_OK; k++)
            if (o->bw & (1u << k))
                st = psc__ipc_bw(ctx, k, a, b, mine, other, &m, &lp->bw[k]);
    psc__buffer_put(mine);
    psc__buffer_put(other);
    if (st == PSC_OK)
        st = psc__rtt(ctx, a, b, o, &lp->rtt);
    return st;
}

psc_status_t psc__ipc_local_measure(psc_context_t *ctx, const int *gpu, int n, const psc_ipc_opts_t *o, uint64_t size,
                                    psc_ipc_local_t **out)
{
    psc_ipc_local_t *l = calloc(1, sizeof(*l));
    psc_status_t st = PSC_OK;

    if (!l)
        return psc__fail(ctx, PSC_ERR_NO_MEMORY, "out of host memory");
    l->no_local = o->no_local;
    for (int i = 0; i < n && st == PSC_OK && !o->no_local; i++)
        for (int e = 0; e < n && st == PSC_OK; e++) {
            psc_ipc_local_pair_t **slot = &l->pair[gpu[i]][gpu[e]];

            if (e == i || *slot)
                continue;
            if (!(*slot = calloc(1, sizeof(**slot))))
                st = psc__fail(ctx, PSC_ERR_NO_MEMORY, "out of host memory");
            else
                st = psc__measure_pair(ctx, gpu[i], gpu[e], o, size, *slot);
        }
    if (st != PSC_OK) {
        psc__ipc_local_free(l);
        return st;
    }
    *out = l;
    return PSC_OK;
}

void psc__ipc_local_get(const psc_ipc_local_t *l, psc_ipc_pair_t *p)
{
    const psc_ipc_local_pair_t *lp = l ? l->pair[p->gpu_importer][p->gpu_exporter] : NULL;

    if (lp) {
        memcpy(p->bw_local, lp->bw, sizeof(p->bw_local));
        p->rtt_local_ns = lp->rtt;
        return;
    }
    for (int k = 0; k < PSC_IPC_NBW; k++) {
        p->bw_local[k].status = PSC_RESULT_WAIVED;
        snprintf(p->bw_local[k].reason, sizeof(p->bw_local[k].reason), "not measured in one process");
    }
    memset(&p->rtt_local_ns, 0, sizeof(p->rtt_local_ns));
}

void psc__ipc_local_free(psc_ipc_local_t *l)
{
    if (!l)
        return;
    for (int a = 0; a < PSC_MAX_GPUS; a++)
        for (int b = 0; b < PSC_MAX_GPUS; b++)
            free(l->pair[a][b]);
    free(l);
}
