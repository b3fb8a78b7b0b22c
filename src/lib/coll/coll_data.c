/*
 * The fill and check of p2pscope coll's buffers (coll_data.h): checks of the
 * arguments on the host, one launch of psc_coll_fill or psc_coll_check
 * (src/kernels/psc_kernels.cu) over every slot.
 */
#include "coll/coll_data.h"

#define PSC__COLL_THREADS 256u

uint64_t psc__coll_send_elems(const psc_coll_data_t *d) { return psc__coll_send_n(d); }
uint64_t psc__coll_recv_elems(const psc_coll_data_t *d) { return psc__coll_recv_n(d); }
uint64_t psc__coll_out_elems(const psc_coll_data_t *d) { return psc__coll_out_n(d); }
uint64_t psc__coll_out_offset(const psc_coll_data_t *d) { return psc__coll_out_off(d); }

uint64_t psc__coll_expected_bits(const psc_coll_data_t *d, unsigned slot, uint64_t j)
{
    double exact;
    int red;

    return psc__coll_want_bits(d, d->seed + slot, j, &exact, &red);
}

/* The description fits the buffers: what is wrong and what is accepted, else PSC_OK. */
static psc_status_t psc__coll_data_valid(psc_context_t *ctx, int i, CUdeviceptr send, CUdeviceptr recv,
                                         uint64_t slot_bytes, const psc_coll_data_t *d)
{
    uint64_t es, area;

    if (!psc__valid_gpu(ctx, i) || !ctx->gpu[i].ready)
        return psc__fail(ctx, PSC_ERR_INVALID, "coll data: GPU %d is not set up (0..%d, after first use)", i,
                         ctx->ndev - 1);
    if (d->coll < 0 || d->coll >= PSC_COLL_N || (es = psc__coll_esize(d->dtype)) == 0)
        return psc__fail(ctx, PSC_ERR_INVALID, "coll data: collective %d or type %d unknown (0..%d, 0..%d)",
                         d->coll, d->dtype, PSC_COLL_N - 1, PSC_DT_N - 1);
    if (psc__coll_reduces(d->coll) && (d->op < 0 || d->op >= PSC_OP_N))
        return psc__fail(ctx, PSC_ERR_INVALID, "coll data: reduction %d unknown (0..%d)", d->op, PSC_OP_N - 1);
    if (d->nranks < 1 || d->rank < 0 || d->rank >= d->nranks ||
        ((d->coll == PSC_COLL_BROADCAST || d->coll == PSC_COLL_REDUCE) && (d->root < 0 || d->root >= d->nranks)))
        return psc__fail(ctx, PSC_ERR_INVALID, "coll data: rank %d, root %d of %d ranks (each 0..ranks-1)",
                         d->rank, d->root, d->nranks);
    if ((send | recv | slot_bytes) % es) /* the kernels load and store whole elements */
        return psc__fail(ctx, PSC_ERR_INVALID,
                         "coll data: buffers at 0x%llx, 0x%llx and slots of %llu bytes are not all aligned to the "
                         "type's %llu-byte elements (each must be a multiple)",
                         (unsigned long long)send, (unsigned long long)recv, (unsigned long long)slot_bytes,
                         (unsigned long long)es);
    area = psc__coll_area_n(d);
    if (d->count > UINT64_MAX / es / (uint64_t)d->nranks || area * es > slot_bytes)
        return psc__fail(ctx, PSC_ERR_INVALID,
                         "coll data: a slot of %llu bytes holds less than the %llu elements of %llu bytes one "
                         "operation uses (slot bytes >= max(send, recv) bytes)",
                         (unsigned long long)slot_bytes, (unsigned long long)area, (unsigned long long)es);
    return PSC_OK;
}

psc_status_t psc__coll_fill(psc_context_t *ctx, int i, CUstream s, CUdeviceptr send, CUdeviceptr recv,
                            uint64_t slot_bytes, unsigned nslots, const psc_coll_data_t *d)
{
    psc_coll_data_t dv;
    psc_status_t st;
    void *params[] = {&send, &recv, &slot_bytes, &nslots, &dv};

    if (!d)
        return psc__fail(ctx, PSC_ERR_INVALID, "coll data: no description (a psc_coll_data_t is required)");
    dv = *d;
    if ((st = psc__coll_data_valid(ctx, i, send, recv, slot_bytes, d)) != PSC_OK)
        return st;
    if (nslots == 0 || psc__coll_area_n(d) == 0)
        return PSC_OK; /* nothing to fill (a row of 0 elements) */
    return psc__launch_on(ctx, s, ctx->gpu[i].fn_coll_fill, psc__grid_blocks(ctx, i), PSC__COLL_THREADS, params);
}

psc_status_t psc__coll_check(psc_context_t *ctx, int i, CUstream s, CUdeviceptr recv, uint64_t slot_bytes,
                             unsigned nslots, const psc_coll_data_t *d, CUdeviceptr wrong_dev)
{
    psc_coll_data_t dv;
    psc_status_t st;
    void *params[] = {&recv, &slot_bytes, &nslots, &dv, &wrong_dev};

    if (!d || !wrong_dev || wrong_dev % 8)
        return psc__fail(ctx, PSC_ERR_INVALID,
                         "coll data: no description, or result words missing or at 0x%llx (two u64, 8-byte aligned)",
                         (unsigned long long)wrong_dev);
    dv = *d;
    if ((st = psc__coll_data_valid(ctx, i, 0, recv, slot_bytes, d)) != PSC_OK)
        return st;
    if (nslots == 0 || psc__coll_out_n(d) == 0)
        return PSC_OK;
    return psc__launch_on(ctx, s, ctx->gpu[i].fn_coll_check, psc__grid_blocks(ctx, i), PSC__COLL_THREADS, params);
}
