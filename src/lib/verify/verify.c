#include "verify/verify.h"

#include <pthread.h>
#include <unistd.h>

#include "verify/pattern.h"

#define PSC__THREADS 512u

/* Pageable memory: the GPU cannot address it, so the CPU fills and checks it in place. */
static void psc__cpu_fill_range(uint8_t *p, uint64_t begin, uint64_t end, uint64_t seed)
{
    uint64_t o = begin;

    for (; o + 8 <= end; o += 8) {
        uint64_t v = psc_pattern_word(seed, o / 8);

        memcpy(p + o, &v, 8);
    }
    for (; o < end; o++)
        p[o] = psc_pattern_byte(seed, o);
}

/* Whole words compared at memory speed; the byte loop runs only where a word differs or at the tail. */
static void psc__cpu_check_range(const uint8_t *p, uint64_t begin, uint64_t end, uint64_t seed, psc_check_t *c)
{
    for (uint64_t o = begin; o < end; o += 8) {
        uint64_t want = psc_pattern_word(seed, o / 8), got = 0;
        size_t len = end - o < 8 ? (size_t)(end - o) : 8;

        if (len == 8) {
            memcpy(&got, p + o, 8); /* a fixed size: one load, no call */
        } else {
            memcpy(&got, p + o, len);
            want &= (1ull << (8 * len)) - 1;
        }
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

/* Split the CPU's share over a few threads: a 128 MiB buffer takes a tenth of a second on one. */
#define PSC__CPU_THREADS 16
#define PSC__CPU_MIN_SPLIT (8ull << 20)

typedef struct {
    uint8_t *p;
    uint64_t begin, end, seed;
    int check;
    psc_check_t c;
} psc__cpu_job_t;

static void *psc__cpu_job(void *arg)
{
    psc__cpu_job_t *j = arg;

    if (j->check)
        psc__cpu_check_range(j->p, j->begin, j->end, j->seed, &j->c);
    else
        psc__cpu_fill_range(j->p, j->begin, j->end, j->seed);
    return NULL;
}

/* Fill or check on the CPU; the check's verdict is the threads' verdicts in address order. */
static void psc__cpu_pattern(uint8_t *p, uint64_t n, uint64_t seed, int check, psc_check_t *out)
{
    psc__cpu_job_t job[PSC__CPU_THREADS];
    pthread_t tid[PSC__CPU_THREADS];
    int started[PSC__CPU_THREADS] = {0};
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    long half = cpus / 2; /* leave the rest to the driver's own threads */
    int nt = n < PSC__CPU_MIN_SPLIT ? 1 : (int)(half < 2 ? 1 : half > PSC__CPU_THREADS ? PSC__CPU_THREADS : half);
    uint64_t chunk = (n / (uint64_t)nt + 7) & ~7ull; /* whole words per thread */

    for (int k = 0; k < nt; k++) {
        job[k] = (psc__cpu_job_t){p, chunk * (uint64_t)k, k == nt - 1 ? n : chunk * (uint64_t)(k + 1), seed, check,
                                  {0, -1, 0, 0}};
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
    if (!check)
        return;
    for (int k = 0; k < nt; k++) {
        out->bad_bytes += job[k].c.bad_bytes;
        if (job[k].c.first_bad >= 0 && out->first_bad < 0) {
            out->first_bad = job[k].c.first_bad;
            out->expected = job[k].c.expected;
            out->found = job[k].c.found;
        }
    }
}

psc_status_t psc__pattern_fill(psc_context_t *ctx, const psc_buffer_t *b, uint64_t seed)
{
    int g = psc__buffer_gpu(b);
    void *params[] = {(void *)&b->dptr, (void *)&b->size, &seed};
    psc_status_t st;

    if (b->kind == PSC_MEM_PAGEABLE) {
        psc__cpu_pattern(b->host, b->size, seed, 0, NULL);
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
static psc_status_t psc__check_launch(psc_context_t *ctx, const psc_buffer_t *b, uint64_t seed)
{
    int g = psc__buffer_gpu(b);
    psc_verify_words_t w = {0, UINT64_MAX};
    CUdeviceptr words;
    psc_status_t st;

    if ((st = psc__gpu_use(ctx, g)) != PSC_OK)
        return st;
    words = ctx->gpu[g].verify_words;
    {
        void *params[] = {(void *)&b->dptr, (void *)&b->size, &seed, &words};

        if ((st = PSC_CU(ctx, cuMemcpyHtoD, (words, &w, sizeof(w)))) != PSC_OK)
            return st;
        return psc__launch(ctx, g, ctx->gpu[g].fn_verify, psc__grid_blocks(ctx, g), PSC__THREADS, params);
    }
}

/* Wait for a launched check and read its verdict. */
static psc_status_t psc__check_collect(psc_context_t *ctx, const psc_buffer_t *b, uint64_t seed, psc_check_t *out)
{
    int g = psc__buffer_gpu(b);
    psc_verify_words_t w;
    psc_check_t c = {0, -1, 0, 0};
    psc_status_t st;

    if ((st = psc__gpu_use(ctx, g)) != PSC_OK || (st = PSC_CU(ctx, cuStreamSynchronize, (ctx->gpu[g].stream))) != PSC_OK ||
        (st = PSC_CU(ctx, cuMemcpyDtoH, (&w, ctx->gpu[g].verify_words, sizeof(w)))) != PSC_OK)
        return st;
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

psc_status_t psc__pattern_check(psc_context_t *ctx, const psc_buffer_t *b, uint64_t seed, psc_check_t *out)
{
    return psc__pattern_check_many(ctx, &b, &seed, 1, out);
}

psc_status_t psc__pattern_check_many(psc_context_t *ctx, const psc_buffer_t *const *b, const uint64_t *seed, int n,
                                     psc_check_t *out)
{
    unsigned char done[PSC_MAX_XFERS] = {0};
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
            if ((st = psc__check_launch(ctx, b[i], seed[i])) != PSC_OK)
                return st;
            busy[psc__buffer_gpu(b[i])] = 1;
            batch[nb++] = i;
        }
        /* ...while the CPU checks pageable memory... */
        for (int i = 0; i < n; i++) {
            if (done[i] || b[i]->kind != PSC_MEM_PAGEABLE)
                continue;
            out[i] = (psc_check_t){0, -1, 0, 0};
            psc__cpu_pattern(b[i]->host, b[i]->size, seed[i], 1, &out[i]);
            done[i] = 1;
            left--;
        }
        /* ...then the GPUs' verdicts. */
        for (int k = 0; k < nb; k++) {
            if ((st = psc__check_collect(ctx, b[batch[k]], seed[batch[k]], &out[batch[k]])) != PSC_OK)
                return st;
            done[batch[k]] = 1;
            left--;
        }
    }
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
