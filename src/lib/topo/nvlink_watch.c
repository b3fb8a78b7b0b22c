/* NVLink traffic between two snapshots of every GPU's counters: wraps, resets and vanished links handled. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "opts.h"

psc_status_t psc_nvlink_snapshot(const psc_context_t *ctx, psc_nvlink_snapshot_t *snap)
{
    int ngpu;

    if (!ctx)
        return PSC_ERR_INVALID;
    if (!snap)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_nvlink_snapshot: no snapshot given (accepted: a psc_nvlink_snapshot_t)");
    ngpu = psc_device_count(ctx);
    if (ngpu > PSC_MAX_GPUS)
        ngpu = PSC_MAX_GPUS;
    memset(snap, 0, sizeof(*snap));
    snap->ngpu = ngpu;
    for (int i = 0; i < ngpu; i++) {
        psc_nvlink_gpu_counters_t *g = &snap->gpu[i];

        if (psc_nvlink_counters(ctx, i, g->tx, g->rx, &g->nlinks) != PSC_OK || g->nlinks < 0 ||
            g->nlinks > PSC_MAX_NVLINKS)
            memset(g, 0, sizeof(*g)); /* not readable now: no links rather than stale numbers */
    }
    return PSC_OK;
}

/* after - before for one counter; 0 when the counter was reset or one of the two could not be read. */
static int psc__delta(uint64_t before, uint64_t after, uint64_t *out)
{
    const uint64_t d = after - before; /* modulo 2^64: right across a wrap */

    if (before == PSC_NVLINK_UNREAD || after == PSC_NVLINK_UNREAD)
        return 0;
    /* Backwards by less than half the range (d in the upper half) is a reset (driver reload, counters
     * cleared), not a wrap. */
    if (after < before && d >= (1ull << 63))
        return 0;
    *out = d;
    return 1;
}

psc_status_t psc_nvlink_traffic(const psc_nvlink_snapshot_t *before, const psc_nvlink_snapshot_t *after,
                                psc_nvlink_traffic_t *out)
{
    if (!before || !after || !out || before->ngpu < 0 || before->ngpu > PSC_MAX_GPUS || after->ngpu < 0 ||
        after->ngpu > PSC_MAX_GPUS)
        return PSC_ERR_INVALID;
    for (int i = 0; i < after->ngpu; i++)
        if (after->gpu[i].nlinks < 0 || after->gpu[i].nlinks > PSC_MAX_NVLINKS ||
            (i < before->ngpu && (before->gpu[i].nlinks < 0 || before->gpu[i].nlinks > PSC_MAX_NVLINKS)))
            return PSC_ERR_INVALID;
    memset(out, 0, sizeof(*out));
    out->ngpu = after->ngpu;
    for (int i = 0; i < after->ngpu; i++) {
        const psc_nvlink_gpu_counters_t *a = &after->gpu[i];
        const int nb = i < before->ngpu ? before->gpu[i].nlinks : 0; /* a GPU new since: nothing to subtract */
        psc_nvlink_gpu_traffic_t *t = &out->gpu[i];

        t->nlinks = a->nlinks;
        for (int l = 0; l < a->nlinks; l++) {
            const psc_nvlink_gpu_counters_t *b = &before->gpu[i];

            t->known[l] = l < nb && psc__delta(b->tx[l], a->tx[l], &t->tx[l]) && psc__delta(b->rx[l], a->rx[l], &t->rx[l]);
            if (!t->known[l])
                t->tx[l] = t->rx[l] = 0;
        }
    }
    return PSC_OK;
}

psc_status_t psc_nvlink_watch(psc_context_t *ctx, const psc_bw_suite_opts_t *opts, psc_bw_suite_t **out,
                              psc_nvlink_traffic_t *traffic)
{
    psc_nvlink_snapshot_t *before = NULL, *after = NULL;
    psc_nvlink_traffic_t *diff = NULL;
    psc_bw_suite_t *s = NULL;
    psc_bw_suite_opts_t o;
    psc_bw_test_t dflt = 0;
    psc_status_t st;

    if (!ctx)
        return PSC_ERR_INVALID;
    if (!out || !traffic)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_nvlink_watch: accepted a place for the suite and the traffic");
    if ((st = psc__bw_suite_opts_adopt(ctx, opts, &o)) != PSC_OK)
        return st;
    if (o.ndev != 0 || o.sweep_min != 0)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_nvlink_watch: ndev %d, sweep_min %llu: accepted 0 (every GPU, "
                         "one size)", o.ndev, (unsigned long long)o.sweep_min);
    if (o.ntests == 0) {
        if (psc_bw_test_from_name("gpu_to_gpu_write_ce", &dflt) != PSC_OK)
            return psc__fail(ctx, PSC_ERR_INVALID, "psc_nvlink_watch: no test gpu_to_gpu_write_ce in the registry");
        o.tests = &dflt;
        o.ntests = 1;
    }
    /* Snapshots are large (every link of every GPU): off the stack. */
    before = calloc(1, sizeof(*before));
    after = calloc(1, sizeof(*after));
    diff = calloc(1, sizeof(*diff));
    if (!before || !after || !diff) {
        st = psc__fail(ctx, PSC_ERR_NO_MEMORY, "out of host memory for the NVLink counters");
        goto out;
    }
    psc_nvlink_snapshot(ctx, before);
    if ((st = psc_bw_run_suite(ctx, &o, &s)) != PSC_OK)
        goto out;
    psc_nvlink_snapshot(ctx, after);
    if (psc_nvlink_traffic(before, after, diff) != PSC_OK)
        memset(diff, 0, sizeof(*diff)); /* not reached: both snapshots are the library's own */
    *traffic = *diff;
    *out = s;
    s = NULL;
out:
    psc_bw_suite_free(s);
    free(diff);
    free(after);
    free(before);
    return st;
}
