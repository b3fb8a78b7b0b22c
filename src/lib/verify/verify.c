#include "verify/verify.h"

#include "verify/pattern.h"

#define PSC__THREADS 512u

/* Pageable memory: the GPU cannot address it, so the CPU fills and checks it in place. */
static void psc__cpu_fill(uint8_t *p, uint64_t n, uint64_t seed)
{
    uint64_t words = n / 8;

    for (uint64_t w = 0; w < words; w++) {
        uint64_t v = psc_pattern_word(seed, w);

        memcpy(p + 8 * w, &v, 8);
    }
    for (uint64_t o = words * 8; o < n; o++)
        p[o] = psc_pattern_byte(seed, o);
}

static void psc__cpu_check(const uint8_t *p, uint64_t n, uint64_t seed, psc_check_t *c)
{
    for (uint64_t o = 0; o < n; o += 8) {
        uint64_t want = psc_pattern_word(seed, o / 8), got = 0;
        size_t len = n - o < 8 ? (size_t)(n - o) : 8;

        memcpy(&got, p + o, len);
        if (len < 8)
            want &= (1ull << (8 * len)) - 1;
        if (got == want)
            continue;
        for (size_t b = 0; b < len; b++) {
            if (((got ^ want) >> (8 * b)) & 0xff) {
                c->bad_bytes++;
                if (c->first_bad < 0) {
                    c->first_bad = (int64_t)(o + b);
                    c->expected = (uint8_t)(want >> (8 * b));
                    c->found = (uint8_t)(got >> (8 * b));
                }
            }
        }
    }
}

psc_status_t psc__pattern_fill(psc_context_t *ctx, const psc_buffer_t *b, uint64_t seed)
{
    int g = psc__buffer_gpu(b);
    void *params[] = {(void *)&b->dptr, (void *)&b->size, &seed};
    psc_status_t st;

    if (b->kind == PSC_MEM_PAGEABLE) {
        psc__cpu_fill(b->host, b->size, seed);
        return PSC_OK;
    }
    if ((st = psc__gpu_use(ctx, g)) != PSC_OK ||
        (st = psc__launch(ctx, g, ctx->gpu[g].fn_fill, psc__grid_blocks(ctx, g), PSC__THREADS, params)) != PSC_OK)
        return st;
    return PSC_CU(ctx, cuStreamSynchronize, (ctx->gpu[g].stream));
}

static psc_status_t psc__read_byte(psc_context_t *ctx, const psc_buffer_t *b, uint64_t off, uint8_t *out)
{
    if (b->host) {
        *out = ((const volatile uint8_t *)b->host)[off];
        return PSC_OK;
    }
    return PSC_CU(ctx, cuMemcpyDtoH, (out, b->dptr + off, 1));
}

psc_status_t psc__pattern_check(psc_context_t *ctx, const psc_buffer_t *b, uint64_t seed, psc_check_t *out)
{
    int g = psc__buffer_gpu(b);
    psc_verify_words_t w = {0, UINT64_MAX};
    psc_check_t c = {0, -1, 0, 0};
    psc_status_t st;
    CUdeviceptr words;

    if (b->kind == PSC_MEM_PAGEABLE) {
        psc__cpu_check(b->host, b->size, seed, &c);
        *out = c;
        return PSC_OK;
    }
    if ((st = psc__gpu_use(ctx, g)) != PSC_OK)
        return st;
    words = ctx->gpu[g].verify_words;
    {
        void *params[] = {(void *)&b->dptr, (void *)&b->size, &seed, &words};

        if ((st = PSC_CU(ctx, cuMemcpyHtoD, (words, &w, sizeof(w)))) != PSC_OK ||
            (st = psc__launch(ctx, g, ctx->gpu[g].fn_verify, psc__grid_blocks(ctx, g), PSC__THREADS, params)) != PSC_OK ||
            (st = PSC_CU(ctx, cuStreamSynchronize, (ctx->gpu[g].stream))) != PSC_OK ||
            (st = PSC_CU(ctx, cuMemcpyDtoH, (&w, words, sizeof(w)))) != PSC_OK)
            return st;
    }
    c.bad_bytes = w.bad_bytes;
    if (w.bad_bytes && w.first_bad < b->size) {
        c.first_bad = (int64_t)w.first_bad;
        c.expected = psc_pattern_byte(seed, w.first_bad);
        if ((st = psc__read_byte(ctx, b, w.first_bad, &c.found)) != PSC_OK)
            return st;
    }
    *out = c;
    return PSC_OK;
}

psc_status_t psc__flip_byte(psc_context_t *ctx, const psc_buffer_t *b, uint64_t offset)
{
    int g = psc__buffer_gpu(b);
    void *params[] = {(void *)&b->dptr, &offset};
    psc_status_t st;

    if (b->kind == PSC_MEM_PAGEABLE) {
        ((uint8_t *)b->host)[offset] ^= 0x5A;
        return PSC_OK;
    }
    if ((st = psc__gpu_use(ctx, g)) != PSC_OK ||
        (st = psc__launch(ctx, g, ctx->gpu[g].fn_flip, 1, 1, params)) != PSC_OK)
        return st;
    return PSC_CU(ctx, cuStreamSynchronize, (ctx->gpu[g].stream));
}

void psc__verify_report_add(psc_verify_report_t *r, const psc_check_t *c)
{
    r->checked++;
    if (!c->bad_bytes)
        return;
    r->bad_samples++;
    r->bad_bytes += c->bad_bytes;
    if (r->first_bad_offset < 0) {
        r->first_bad_offset = c->first_bad;
        r->expected = c->expected;
        r->found = c->found;
    }
}
