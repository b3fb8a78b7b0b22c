/*
 * p2pscope verify: copy with every pattern, size and offset of the plan over
 * a case's transfers, and check every byte of each destination buffer (the
 * range and the canaries around it), the sources, and sentinels on the GPUs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mem/buffer.h"
#include "pattern/check.h"
#include "verify/integrity.h"
#include "verify/load.h"
#include "verify/mapped.h"
#include "xfer/bw.h"
#include "xfer/copy.h"

#define PSC__GUARD 64                      /* canary bytes before a destination range */
#define PSC__SLACK 256                     /* room for offsets and canaries after it */
#define PSC__PAGEABLE_MAX ((1ull << 20) + 13)
#define PSC__SENTINEL (1ull << 20)

static const uint64_t psc__sizes[] = {1, 7, 4096 + 5, (1ull << 20) + 13, (16ull << 20) + 3, (64ull << 20) + 1,
                                      (256ull << 20) + 7};
static const uint64_t psc__offsets[][2] = {{0, 0}, {5, 11}}; /* source, destination */

const char *psc_pattern_kind_name(int kind)
{
    static const char *const names[] = {"random", "address", "walking-ones", "walking-zeros", "zeros", "ones"};

    return kind >= 0 && kind < PSC_PATTERN_KINDS ? names[kind] : "unknown";
}

typedef struct {
    psc_xfer_t x;
    psc_buffer_t *src, *dst;
    CUstream stream;
    int share; /* transfers of the case its issuer runs at once (SM kernels split the GPU) */
    psc__vmap_t *map; /* the CPU engine: the GPU end mapped for the CPU, which copies; NULL otherwise */
} psc__vx_t;

static CUdeviceptr psc__ptr(const psc_buffer_t *b, uint64_t off)
{
    return (b->kind == PSC_MEM_PAGEABLE ? (CUdeviceptr)(uintptr_t)b->host : b->dptr) + off;
}

/* Test hook: damage the destination range of transfer 0 the way the context's hooks say. */
static psc_status_t psc__inject(psc_context_t *ctx, const psc__vx_t *x, const psc_expect_t *e, uint64_t size)
{
    const psc_test_hooks_t *o = &ctx->hooks;
    uint64_t at = e->begin + o->fault_offset, len = o->fault_len ? o->fault_len : 1;
    psc_expect_t before = *e;
    uint8_t *old;
    psc_status_t st;

    if (o->fault == PSC_FAULT_NONE || (o->fault_size && o->fault_size != size) || o->fault_offset >= size ||
        (o->fault != PSC_FAULT_FLIP && o->fault_offset + len * (o->fault == PSC_FAULT_MISPLACE ? 2 : 1) > size))
        return PSC_OK;
    if (o->fault == PSC_FAULT_FLIP)
        return psc__pattern_flip(ctx, x->dst, at);
    if (o->fault == PSC_FAULT_MISPLACE) {
        /* The chunk lands len bytes too far... */
        if ((st = psc__gpu_use(ctx, x->dst->gpu)) != PSC_OK ||
            (st = PSC_CU(ctx, cuMemcpyAsync, (psc__ptr(x->dst, at + len), psc__ptr(x->dst, at), len,
                                              ctx->gpu[x->dst->gpu].stream))) != PSC_OK ||
            (st = PSC_CU(ctx, cuStreamSynchronize, (ctx->gpu[x->dst->gpu].stream))) != PSC_OK)
            return st;
    }
    /* ...and its own place keeps what it held before the copy: as if the chunk were dropped.
     * Written from the host, byte-exact at any alignment (it is a test hook, and small). */
    old = malloc(len);
    if (!old)
        return psc__fail(ctx, PSC_ERR_NO_MEMORY, "out of host memory");
    before.invert = 1;
    for (uint64_t i = 0; i < len; i++)
        old[i] = psc_expect_byte(&before, at + i);
    if (x->dst->host)
        memcpy((uint8_t *)x->dst->host + at, old, len);
    else if ((st = psc__gpu_use(ctx, x->dst->gpu)) != PSC_OK ||
             (st = PSC_CU(ctx, cuMemcpyHtoD, (x->dst->dptr + at, old, len))) != PSC_OK) {
        free(old);
        return st;
    }
    free(old);
    return PSC_OK;
}

/* Fold a buffer's check into the run's (acc); the run's first bad byte also says where it was. */
static void psc__note(psc_verify_result_t *r, psc_check_t *acc, const psc_check_t *c, int where, int pattern, int xfer,
                      uint64_t size, const uint64_t *offs, uint64_t begin)
{
    int first = psc__check_fold(acc, c);

    r->bad_bytes = acc->bad_bytes;
    if (!first)
        return;
    r->first.where = where;
    r->first.pattern = pattern;
    r->first.xfer = xfer;
    r->first.size = size;
    r->first.src_off = offs[0];
    r->first.dst_off = offs[1];
    r->first.offset = where == 0 || where == 1 ? c->first_bad - (int64_t)begin : c->first_bad;
    r->first.expected = acc->expected;
    r->first.found = acc->found;
}

/* One size, offset pair and pattern over every transfer of the case. */
static psc_status_t psc__one(psc_context_t *ctx, const psc_bw_test_info_t *ti, psc__vx_t *x, int n,
                             const psc_verify_opts_t *o, uint64_t size, const uint64_t *offs, int kind, uint64_t seed,
                             psc_verify_result_t *r, psc_check_t *acc)
{
    psc_expect_t e[PSC_MAX_XFERS] = {{0}};
    psc_status_t st;
    int bad = 0;

    if ((st = psc__load_pump(o->load)) != PSC_OK) /* the other paths stay busy through fill, copy and check */
        return st;
    for (int i = 0; i < n; i++) {
        psc_expect_t src = psc_expect_pattern(kind, seed + (uint64_t)i, x[i].src->size), prep;

        /* The destination range holds the source's bytes at offs[0]..., complemented until the copy. */
        e[i] = (psc_expect_t){seed + (uint64_t)i, PSC__GUARD + offs[1], PSC__GUARD + offs[1] + size,
                              (int64_t)offs[0] - (int64_t)(PSC__GUARD + offs[1]), kind, 0};
        prep = e[i];
        prep.invert = 1;
        if ((st = psc__expect_fill(ctx, x[i].src, &src)) != PSC_OK || (st = psc__expect_fill(ctx, x[i].dst, &prep)) != PSC_OK)
            return st;
    }
    for (int i = 0; i < n && st == PSC_OK; i++) { /* all transfers in flight together */
        psc_copy_route_t route = psc__copy_route(ti, &x[i].x, x[i].share);

        if (x[i].map) /* the CPU copies through the mapping, done when it returns */
            st = psc__vmap_copy(x[i].map, x[i].dst, e[i].begin, x[i].src, offs[0], size);
        else if ((st = psc__gpu_use(ctx, x[i].x.issuer)) == PSC_OK)
            st = psc__copy_enqueue(ctx, &route, psc__ptr(x[i].dst, e[i].begin), psc__ptr(x[i].src, offs[0]), size, 1,
                                   x[i].stream);
    }
    for (int i = 0; i < n; i++)
        if (psc__gpu_use(ctx, x[i].x.issuer) == PSC_OK && ctx->cu.p_cuStreamSynchronize(x[i].stream) != CUDA_SUCCESS &&
            st == PSC_OK)
            st = psc__fail(ctx, PSC_ERR_DRIVER, "a copy failed on GPU %d", x[i].x.issuer);
    if (st != PSC_OK || (st = psc__inject(ctx, &x[0], &e[0], size)) != PSC_OK)
        return st;
    for (int i = 0; i < n; i++) {
        psc_expect_t src = psc_expect_pattern(kind, seed + (uint64_t)i, x[i].src->size);
        psc_check_t cd, cs;

        if ((st = psc__expect_check(ctx, x[i].dst, &e[i], &cd)) != PSC_OK ||
            (st = psc__expect_check(ctx, x[i].src, &src, &cs)) != PSC_OK)
            return st;
        psc__note(r, acc, &cd, cd.first_bad >= (int64_t)e[i].begin && cd.first_bad < (int64_t)e[i].end ? 0 : 1, kind,
                  i, size, offs, e[i].begin);
        psc__note(r, acc, &cs, 2, kind, i, size, offs, 0);
        bad |= cd.bad_bytes || cs.bad_bytes;
        r->bytes_checked += x[i].dst->size + x[i].src->size;
        r->bytes_copied += size;
    }
    r->copies += (uint64_t)n;
    r->bad_copies += (unsigned)bad;
    return PSC_OK;
}

/* What psc__verify_run refuses: no case, options or result; a test, a transfer count, a size, a pattern mask or a GPU
 * that does not exist; a test that does not copy; a CPU engine's transfer that is not between the host and its issuing
 * GPU. */
static psc_status_t psc__verify_args(psc_context_t *ctx, const psc_bw_case_t *c, const psc_bw_test_info_t *ti,
                                     const psc_verify_opts_t *o, const psc_verify_result_t *out)
{
    psc_status_t st;

    if ((st = psc__bw_case_args(ctx, "psc_verify_run", c, ti, o, out)) != PSC_OK)
        return st;
    if (c->nxfer < 1 || c->nxfer > PSC_MAX_XFERS)
        return psc__fail(ctx, PSC_ERR_INVALID, "a case of %d transfers: accepted 1 to %d", c->nxfer, PSC_MAX_XFERS);
    if (ti->access != PSC_BW_ACCESS_COPY)
        return psc__fail(ctx, PSC_ERR_INVALID, "%s %s: verify checks copies by copy engines and SM copy kernels (bw "
                         "checks this test's own); accepted a test that copies that way", ti->name,
                         ti->access == PSC_BW_ACCESS_READ    ? "only reads"
                         : ti->access == PSC_BW_ACCESS_WRITE ? "only writes"
                                                             : "copies by bulk copies (TMA)");
    if (!o->max_size)
        return psc__fail(ctx, PSC_ERR_INVALID, "largest copy size 0: accepted 1 byte or more");
    if (!(o->pattern_mask & ((1u << PSC_PATTERN_KINDS) - 1)))
        return psc__fail(ctx, PSC_ERR_INVALID, "pattern mask 0x%x names no pattern: accepted bits 0 to %d",
                         o->pattern_mask, PSC_PATTERN_KINDS - 1);
    for (int i = 0; i < c->nxfer; i++)
        if (!psc__valid_gpu(ctx, c->xfer[i].issuer) || (c->xfer[i].src != PSC_HOST && !psc__valid_gpu(ctx, c->xfer[i].src)) ||
            (c->xfer[i].dst != PSC_HOST && !psc__valid_gpu(ctx, c->xfer[i].dst)))
            return psc__fail(ctx, PSC_ERR_INVALID,
                             "transfer %d: %d -> %d issued by %d names a GPU that does not exist (accepted 0 to %d, or "
                             "PSC_HOST at one end)",
                             i, c->xfer[i].src, c->xfer[i].dst, c->xfer[i].issuer, ctx->ndev - 1);
    for (int i = 0; i < c->nxfer && ti->engine == PSC_ENGINE_CPU; i++)
        if ((c->xfer[i].src == PSC_HOST) == (c->xfer[i].dst == PSC_HOST) ||
            (c->xfer[i].src == PSC_HOST ? c->xfer[i].dst : c->xfer[i].src) != c->xfer[i].issuer)
            return psc__fail(ctx, PSC_ERR_INVALID,
                             "%s: transfer %d: %d -> %d issued by %d: accepted the host at one end and the issuing "
                             "GPU, whose memory the CPU maps, at the other",
                             ti->name, i, c->xfer[i].src, c->xfer[i].dst, c->xfer[i].issuer);
    return PSC_OK;
}

/* One verify run's state: the case's transfers with their buffers, the sentinels, the result so far. */
typedef struct {
    const psc_bw_case_t *c;
    const psc_bw_test_info_t *ti;
    const psc_verify_opts_t *o;
    psc__vx_t x[PSC_MAX_XFERS];
    psc__vmap_t vm[PSC_MAX_XFERS];
    psc_buffer_t *sent[PSC_MAX_GPUS];
    int per_gpu[PSC_MAX_GPUS]; /* streams taken on each GPU */
    int n;
    uint64_t max; /* the largest copy: the options', or less for pageable host memory */
    psc_verify_result_t r;
    psc_check_t acc;
} psc__vrun_t;

/* The run's state before anything is taken: the transfers, the largest size, an empty result. */
static void psc__vrun_init(psc__vrun_t *v, const psc_bw_case_t *c, const psc_bw_test_info_t *ti,
                           const psc_verify_opts_t *o)
{
    memset(v, 0, sizeof(*v));
    v->c = c;
    v->ti = ti;
    v->o = o;
    v->acc = PSC_CHECK_CLEAN;
    v->r.c = *c;
    v->r.first.offset = INT64_MIN;
    v->n = c->nxfer;
    v->max = o->max_size;
    if (ti->hostmem == PSC_HOSTMEM_PAGEABLE && (c->src == PSC_HOST || c->dst == PSC_HOST) && v->max > PSC__PAGEABLE_MAX)
        v->max = PSC__PAGEABLE_MAX;
    for (int i = 0; i < v->n; i++) {
        v->x[i].x = c->xfer[i];
        v->x[i].share = psc__issuer_share(c->xfer, v->n, i);
    }
}

/* Each transfer's source and destination (the CPU engine's GPU end mapped for the CPU) and its stream; a missing
 * mapping backend waives the run. */
static psc_status_t psc__vrun_buffers(psc_context_t *ctx, psc__vrun_t *v)
{
    psc_mem_kind_t hk = psc__mem_kind_of(v->ti->hostmem);
    psc_status_t st;

    for (int i = 0; i < v->n; i++) {
        psc__vx_t *x = &v->x[i];
        int g = x->x.issuer, node = ctx->info[g].numa_node;

        if (v->ti->engine == PSC_ENGINE_CPU) { /* the GPU end is the issuer's memory, mapped; no backend: waived */
            if ((st = psc__vmap_open(ctx, g, v->max + PSC__SLACK, &v->vm[i], v->r.reason, sizeof(v->r.reason))) !=
                PSC_OK)
                return st;
            if (!v->vm[i].m) {
                v->r.status = PSC_RESULT_WAIVED;
                return PSC_OK;
            }
            x->map = &v->vm[i];
            *(x->x.src == PSC_HOST ? &x->dst : &x->src) = &v->vm[i].dev;
        }
        if ((!x->src && (st = psc__buffer_get(ctx, x->x.src == PSC_HOST ? hk : PSC_MEM_DEVICE,
                                              x->x.src == PSC_HOST ? g : x->x.src, node, v->max + PSC__SLACK,
                                              &x->src)) != PSC_OK) ||
            (!x->dst && (st = psc__buffer_get(ctx, x->x.dst == PSC_HOST ? hk : PSC_MEM_DEVICE,
                                              x->x.dst == PSC_HOST ? g : x->x.dst, node, v->max + PSC__SLACK,
                                              &x->dst)) != PSC_OK) ||
            (st = psc__gpu_stream(ctx, g, v->per_gpu[g]++, &x->stream)) != PSC_OK)
            return st;
    }
    return PSC_OK;
}

/* What every sentinel buffer holds from before the first copy to after the last. */
static psc_expect_t psc__sentinel_expect(const psc_verify_opts_t *o)
{
    return psc_expect_pattern(PSC_PAT_RANDOM, o->seed ^ 0x5e47, PSC__SENTINEL);
}

/* Sentinels: a buffer on every GPU involved that nothing may touch, filled. */
static psc_status_t psc__vrun_sentinels_fill(psc_context_t *ctx, psc__vrun_t *v)
{
    psc_status_t st;

    for (int g = 0; g < ctx->ndev; g++) {
        psc_expect_t se = psc__sentinel_expect(v->o);

        if (!v->per_gpu[g] && !(v->c->src == g || v->c->dst == g))
            continue;
        if ((st = psc__buffer_get(ctx, PSC_MEM_DEVICE, g, -1, PSC__SENTINEL, &v->sent[g])) != PSC_OK ||
            (st = psc__expect_fill(ctx, v->sent[g], &se)) != PSC_OK)
            return st;
    }
    return PSC_OK;
}

/* Every size of the plan up to the largest, each offset pair, each pattern of the mask: copied and checked. */
static psc_status_t psc__vrun_copies(psc_context_t *ctx, psc__vrun_t *v)
{
    const psc_verify_opts_t *o = v->o;
    psc_status_t st;

    for (size_t s = 0; s < sizeof(psc__sizes) / sizeof(psc__sizes[0]); s++) {
        if (psc__sizes[s] > v->max)
            continue;
        for (size_t k = 0; k < (o->unaligned ? 2u : 1u); k++)
            for (int kind = 0; kind < PSC_PATTERN_KINDS; kind++) {
                if (!(o->pattern_mask & (1u << kind)))
                    continue;
                st = psc__one(ctx, v->ti, v->x, v->n, o, psc__sizes[s], psc__offsets[k], kind,
                              o->seed ^ ((uint64_t)s << 40) ^ ((uint64_t)k << 32) ^ ((uint64_t)kind << 24), &v->r,
                              &v->acc);
                if (st != PSC_OK)
                    return st;
            }
    }
    return PSC_OK;
}

/* Each sentinel still holds what it was filled with; a change is a bad byte "in a sentinel buffer". */
static psc_status_t psc__vrun_sentinels_check(psc_context_t *ctx, psc__vrun_t *v)
{
    psc_status_t st;

    for (int g = 0; g < ctx->ndev; g++) {
        psc_expect_t se = psc__sentinel_expect(v->o);
        psc_check_t chk;
        const uint64_t none[2] = {0, 0};

        if (!v->sent[g])
            continue;
        if ((st = psc__expect_check(ctx, v->sent[g], &se, &chk)) != PSC_OK)
            return st;
        psc__note(&v->r, &v->acc, &chk, 3, PSC_PAT_RANDOM, -1, PSC__SENTINEL, none, 0);
        v->r.bytes_checked += PSC__SENTINEL;
    }
    return PSC_OK;
}

/* The run's stages in order: the load settled, peer access set (or the run waived), buffers, sentinels, copies. */
static psc_status_t psc__vrun_stages(psc_context_t *ctx, psc__vrun_t *v)
{
    int waived = 0;
    psc_status_t st;

    /* The load's copies must be done before peer access changes under them. */
    if ((st = psc__load_settle(v->o->load)) != PSC_OK)
        return st;
    if ((st = psc__peers_for(ctx, v->c->xfer, v->n, psc__shape_p2p_off(v->ti->shape), &waived, v->r.reason,
                             sizeof(v->r.reason))) != PSC_OK)
        return st;
    if (waived) {
        v->r.status = PSC_RESULT_WAIVED;
        return PSC_OK;
    }
    if ((st = psc__vrun_buffers(ctx, v)) != PSC_OK || v->r.status == PSC_RESULT_WAIVED)
        return st;
    if ((st = psc__vrun_sentinels_fill(ctx, v)) != PSC_OK || (st = psc__vrun_copies(ctx, v)) != PSC_OK)
        return st;
    return psc__vrun_sentinels_check(ctx, v);
}

/* Everything the run took, given back; the first failure to close a mapping is the run's if it had none. */
static psc_status_t psc__vrun_release(psc_context_t *ctx, psc__vrun_t *v, psc_status_t st)
{
    for (int i = 0; i < v->n; i++) {
        psc_status_t ust;

        psc__buffer_put(v->x[i].src); /* a mapped view is no cached buffer: putting it changes nothing */
        psc__buffer_put(v->x[i].dst);
        if ((ust = psc__vmap_close(ctx, &v->vm[i])) != PSC_OK && st == PSC_OK)
            st = ust;
    }
    for (int g = 0; g < PSC_MAX_GPUS; g++)
        psc__buffer_put(v->sent[g]);
    return st;
}

/* The result's status and reason: failed (the error, or the first bad byte's story), waived, or passed. */
static void psc__vrun_conclude(psc_context_t *ctx, psc_status_t st, psc_verify_result_t *r)
{
    if (st != PSC_OK) {
        r->status = PSC_RESULT_FAILED;
        snprintf(r->reason, sizeof(r->reason), "%s", ctx->last_error);
    } else if (r->status != PSC_RESULT_WAIVED && r->bad_bytes) {
        static const char *const where[] = {"in the destination", "in the canary around the destination",
                                            "in the source", "in a sentinel buffer"};

        r->status = PSC_RESULT_FAILED;
        snprintf(r->reason, sizeof(r->reason),
                 "wrong data: %llu bad bytes in %u of %llu copies; first %s at offset %lld of a %llu-byte copy "
                 "(%s pattern, source offset %llu, destination offset %llu): expected 0x%02x, found 0x%02x",
                 (unsigned long long)r->bad_bytes, r->bad_copies, (unsigned long long)r->copies, where[r->first.where],
                 (long long)r->first.offset, (unsigned long long)r->first.size, psc_pattern_kind_name(r->first.pattern),
                 (unsigned long long)r->first.src_off, (unsigned long long)r->first.dst_off, r->first.expected,
                 r->first.found);
    } else if (r->status != PSC_RESULT_WAIVED) {
        r->status = PSC_RESULT_PASSED;
    }
    if (r->first.offset == INT64_MIN)
        r->first.offset = -1;
}

psc_status_t psc__verify_run(psc_context_t *ctx, const psc_bw_case_t *c, const psc_verify_opts_t *o,
                            psc_verify_result_t *out)
{
    const psc_bw_test_info_t *ti = c ? psc_bw_test_info(c->test) : NULL;
    psc__vrun_t v;
    psc_status_t st;

    if ((st = psc__verify_args(ctx, c, ti, o, out)) != PSC_OK)
        return st;
    psc__vrun_init(&v, c, ti, o);
    st = psc__vrun_release(ctx, &v, psc__vrun_stages(ctx, &v));
    psc__vrun_conclude(ctx, st, &v.r);
    *out = v.r;
    return PSC_OK;
}

psc_status_t psc__verify_run_held(psc_context_t *ctx, const psc_bw_case_t *c, const psc_verify_opts_t *o,
                                  psc_verify_result_t *out)
{
    psc_verify_result_t res;
    psc_status_t st;

    if (o->load && psc__load_context(o->load) != ctx)
        return psc__fail(ctx, PSC_ERR_INVALID, "the background load belongs to another context");
    if (!out)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_verify_run: no place for the result (accepted: a psc_verify_result_t)");
    psc__guard_enter(ctx);
    st = psc__verify_run(ctx, c, o, &res);
    /* The load's copies finish before peer access goes back under them (the next run starts them again). */
    if (o->load && ctx->guard_depth == 1) {
        psc_status_t ls = psc__load_settle(o->load);

        st = st == PSC_OK ? ls : st;
    }
    st = psc__guard_leave(ctx, st);
    if (st == PSC_OK)
        *out = res;
    return st;
}
