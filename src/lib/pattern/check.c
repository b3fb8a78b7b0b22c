/*
 * Fill and check whole buffers with a data pattern (check.h): on the GPU by kernel, on the CPU for pageable
 * memory, and the one fold of bad bytes every check reports.
 */
#include "pattern/check.h"

#include <pthread.h>
#include <string.h>
#include <unistd.h>

#define PSC__THREADS 512u

_Static_assert(PSC_PAT_KINDS == PSC_PATTERN_KINDS, "the public header counts the data patterns of pattern.h");

/* Pageable memory: the GPU cannot address it, so the CPU fills and checks it in place, a word at a time. */
static void psc__cpu_fill_range(uint8_t *p, uint64_t begin, uint64_t end, const psc_expect_t *e)
{
    uint64_t o = begin;

    for (; o + 8 <= end; o += 8) {
        uint64_t v = psc_expect_word(e, o);

        memcpy(p + o, &v, 8);
    }
    for (; o < end; o++)
        p[o] = psc_expect_byte(e, o);
}

/* Whole words compared at memory speed; the byte loop runs only where a word differs or at the tail. */
static void psc__cpu_check_range(const uint8_t *p, uint64_t begin, uint64_t end, const psc_expect_t *e,
                                 psc_check_t *c)
{
    for (uint64_t o = begin; o < end; o += 8) {
        uint64_t want = psc_expect_word(e, o), got = 0;
        size_t len = end - o < 8 ? (size_t)(end - o) : 8;

        if (len == 8) {
            memcpy(&got, p + o, 8); /* a fixed size: one load, no call */
        } else {
            memcpy(&got, p + o, len);
            want &= (1ull << (8 * len)) - 1;
        }
        if (got == want)
            continue;
        for (size_t b = 0; b < len; b++)
            psc__check_byte(c, o + b, (uint8_t)(want >> (8 * b)), (uint8_t)(got >> (8 * b)));
    }
}

/* Split the CPU's share over a few threads: a 128 MiB buffer takes a tenth of a second on one. */
#define PSC__CPU_THREADS 16
#define PSC__CPU_MIN_SPLIT (8ull << 20)

typedef struct {
    uint8_t *p;
    uint64_t begin, end;
    const psc_expect_t *e;
    int check;
    psc_check_t c;
} psc__cpu_job_t;

static void *psc__cpu_job(void *arg)
{
    psc__cpu_job_t *j = arg;

    if (j->check)
        psc__cpu_check_range(j->p, j->begin, j->end, j->e, &j->c);
    else
        psc__cpu_fill_range(j->p, j->begin, j->end, j->e);
    return NULL;
}

/* Fill or check on the CPU; the check's verdict is the threads' verdicts folded in address order. */
static void psc__cpu_apply(uint8_t *p, uint64_t n, const psc_expect_t *e, int check, psc_check_t *out)
{
    psc__cpu_job_t job[PSC__CPU_THREADS];
    pthread_t tid[PSC__CPU_THREADS];
    int started[PSC__CPU_THREADS] = {0};
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    long half = cpus / 2; /* leave the rest to the driver's own threads */
    int nt = n < PSC__CPU_MIN_SPLIT ? 1 : (int)(half < 2 ? 1 : half > PSC__CPU_THREADS ? PSC__CPU_THREADS : half);
    uint64_t chunk = (n / (uint64_t)nt + 7) & ~7ull; /* whole words per thread */

    for (int k = 0; k < nt; k++) {
        job[k] = (psc__cpu_job_t){p, chunk * (uint64_t)k, k == nt - 1 ? n : chunk * (uint64_t)(k + 1), e, check,
                                  PSC_CHECK_CLEAN};
        if (job[k].begin > n)
            job[k].begin = n;
        if (job[k].end > n)
            job[k].end = n;
        started[k] = k > 0 && pthread_create(&tid[k], NULL, psc__cpu_job, &job[k]) == 0;
        if (k > 0 && !started[k])
            psc__cpu_job(&job[k]); /* no thread: do it here */
    }
    psc__cpu_job(&job[0]);
    for (int k = 1; k < nt; k++)
        if (started[k])
            pthread_join(tid[k], NULL);
    for (int k = 0; check && k < nt; k++)
        psc__check_fold(out, &job[k].c);
}

psc_status_t psc__expect_fill(psc_context_t *ctx, const psc_buffer_t *b, const psc_expect_t *e)
{
    int g = psc__buffer_gpu(b);
    psc_expect_t ev = *e;
    void *params[] = {(void *)&b->dptr, (void *)&b->size, &ev};
    psc_status_t st;

    if (b->kind == PSC_MEM_PAGEABLE) {
        psc__cpu_apply(b->host, b->size, e, 0, NULL);
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

/* Start the check of a GPU-visible buffer on its GPU's stream (the GPU's result words are reset first). */
static psc_status_t psc__check_launch(psc_context_t *ctx, const psc_buffer_t *b, const psc_expect_t *e)
{
    int g = psc__buffer_gpu(b);
    psc_verify_words_t w = {0, UINT64_MAX};
    psc_expect_t ev = *e;
    CUdeviceptr words;
    psc_status_t st;

    if ((st = psc__gpu_use(ctx, g)) != PSC_OK)
        return st;
    words = ctx->gpu[g].verify_words;
    {
        void *params[] = {(void *)&b->dptr, (void *)&b->size, &ev, &words};

        if ((st = PSC_CU(ctx, cuMemcpyHtoD, (words, &w, sizeof(w)))) != PSC_OK)
            return st;
        return psc__launch(ctx, g, ctx->gpu[g].fn_check, psc__grid_blocks(ctx, g), PSC__THREADS, params);
    }
}

/* Wait for a launched check and read its verdict. */
static psc_status_t psc__check_collect(psc_context_t *ctx, const psc_buffer_t *b, const psc_expect_t *e,
                                       psc_check_t *out)
{
    int g = psc__buffer_gpu(b);
    psc_verify_words_t w;
    psc_check_t c = PSC_CHECK_CLEAN;
    psc_status_t st;

    if ((st = psc__gpu_use(ctx, g)) != PSC_OK || (st = PSC_CU(ctx, cuStreamSynchronize, (ctx->gpu[g].stream))) != PSC_OK ||
        (st = PSC_CU(ctx, cuMemcpyDtoH, (&w, ctx->gpu[g].verify_words, sizeof(w)))) != PSC_OK)
        return st;
    c.bad_bytes = w.bad_bytes;
    if (w.bad_bytes && w.first_bad < b->size) {
        c.first_bad = (int64_t)w.first_bad;
        c.expected = psc_expect_byte(e, w.first_bad);
        if ((st = psc__read_byte(ctx, b, w.first_bad, &c.found)) != PSC_OK)
            return st;
    }
    *out = c;
    return PSC_OK;
}

psc_status_t psc__expect_check(psc_context_t *ctx, const psc_buffer_t *b, const psc_expect_t *e, psc_check_t *out)
{
    return psc__expect_check_many(ctx, &b, e, 1, out);
}

psc_status_t psc__expect_check_many(psc_context_t *ctx, const psc_buffer_t *const *b, const psc_expect_t *e, int n,
                                    psc_check_t *out)
{
    unsigned char done[PSC_MAX_XFERS] = {0};
    psc_check_t v[PSC_MAX_XFERS];
    int left = n;
    psc_status_t st;

    if (n < 0 || n > PSC_MAX_XFERS)
        return psc__fail(ctx, PSC_ERR_INVALID, "%d buffers to check: accepted 0 to %d", n, PSC_MAX_XFERS);
    while (left > 0) {
        unsigned char busy[PSC_MAX_GPUS] = {0};
        int batch[PSC_MAX_XFERS], nb = 0;

        /* One buffer per GPU at a time (each GPU has one set of result words)... */
        for (int i = 0; i < n; i++) {
            if (done[i] || b[i]->kind == PSC_MEM_PAGEABLE || busy[psc__buffer_gpu(b[i])])
                continue;
            if ((st = psc__check_launch(ctx, b[i], &e[i])) != PSC_OK)
                return st;
            busy[psc__buffer_gpu(b[i])] = 1;
            batch[nb++] = i;
        }
        /* ...while the CPU checks pageable memory... */
        for (int i = 0; i < n; i++) {
            if (done[i] || b[i]->kind != PSC_MEM_PAGEABLE)
                continue;
            v[i] = PSC_CHECK_CLEAN;
            psc__cpu_apply(b[i]->host, b[i]->size, &e[i], 1, &v[i]);
            done[i] = 1;
            left--;
        }
        /* ...then the GPUs' verdicts. */
        for (int k = 0; k < nb; k++) {
            if ((st = psc__check_collect(ctx, b[batch[k]], &e[batch[k]], &v[batch[k]])) != PSC_OK)
                return st;
            done[batch[k]] = 1;
            left--;
        }
    }
    memcpy(out, v, (size_t)n * sizeof(*v)); /* outputs only on success */
    return PSC_OK;
}

psc_status_t psc__pattern_fill(psc_context_t *ctx, const psc_buffer_t *b, uint64_t seed)
{
    psc_expect_t e = psc_expect_pattern(PSC_PAT_RANDOM, seed, b->size);

    return psc__expect_fill(ctx, b, &e);
}

psc_status_t psc__pattern_check(psc_context_t *ctx, const psc_buffer_t *b, uint64_t seed, psc_check_t *out)
{
    return psc__pattern_check_many(ctx, &b, &seed, 1, out);
}

psc_status_t psc__pattern_check_many(psc_context_t *ctx, const psc_buffer_t *const *b, const uint64_t *seed, int n,
                                     psc_check_t *out)
{
    psc_expect_t e[PSC_MAX_XFERS];

    if (n < 0 || n > PSC_MAX_XFERS)
        return psc__fail(ctx, PSC_ERR_INVALID, "%d buffers to check: accepted 0 to %d", n, PSC_MAX_XFERS);
    for (int i = 0; i < n; i++)
        e[i] = psc_expect_pattern(PSC_PAT_RANDOM, seed[i], b[i]->size);
    return psc__expect_check_many(ctx, b, e, n, out);
}

psc_status_t psc__pattern_flip(psc_context_t *ctx, const psc_buffer_t *b, uint64_t offset)
{
    int g = psc__buffer_gpu(b);
    void *params[] = {(void *)&b->dptr, &offset};
    psc_status_t st;

    if (offset >= b->size)
        return psc__fail(ctx, PSC_ERR_INVALID, "byte %llu to flip is outside the %llu-byte buffer: accepted 0 to %llu",
                         (unsigned long long)offset, (unsigned long long)b->size, (unsigned long long)b->size - 1);
    if (b->kind == PSC_MEM_PAGEABLE) {
        ((uint8_t *)b->host)[offset] ^= 0x5A;
        return PSC_OK;
    }
    if ((st = psc__gpu_use(ctx, g)) != PSC_OK ||
        (st = psc__launch(ctx, g, ctx->gpu[g].fn_flip, 1, 1, params)) != PSC_OK)
        return st;
    return PSC_CU(ctx, cuStreamSynchronize, (ctx->gpu[g].stream));
}

void psc__check_report_add(psc_verify_report_t *r, const psc_check_t *c)
{
    r->checked++;
    if (!c->bad_bytes)
        return;
    r->bad_samples++;
    psc__check_fold_fields(&r->bad_bytes, &r->first_bad_offset, &r->expected, &r->found, c);
}
