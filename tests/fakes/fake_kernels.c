/*
 * The fake driver's kernels (fake_libcuda.c launches them): p2pscope's
 * device code (src/kernels/psc_kernels.cu) done on the CPU with the same
 * parameters, bytes and verdicts, so the real measurement code runs end to
 * end without a GPU. Fill and check take their bytes from pattern/pattern.h,
 * the definition the GPU kernels use; coll's fill and check theirs from
 * coll/coll_values.h. Most kernels run at launch; the flag
 * kernels spin on memory another side writes (a thread of this process, or
 * another process through a shared memfd mapping), so each runs in a thread
 * of its own, a "job", waited for by the stream's or context's synchronize,
 * by later work on its stream, and at exit. The fake clock counts 1 cycle
 * per ns of CLOCK_MONOTONIC.
 */
#include <cuda.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "coll/coll_values.h"
#include "pattern/pattern.h"
#include "allreduce/ar_args.h"

uint64_t fake_kernels_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* At least 1: a fake GPU's time never comes out 0 (a rate would be infinite, a calibration undefined). */
static uint64_t fake_since(uint64_t t0)
{
    uint64_t d = fake_kernels_ns() - t0;

    return d ? d : 1;
}

/* ---- the kernels that finish at launch */

/* The result words of psc_pattern_check, as the kernel declares them. */
typedef struct {
    uint64_t bad_bytes, first_bad;
} fake_verify_words_t;

static void fake_pattern_fill(unsigned char *p, uint64_t n, const psc_expect_t *e)
{
    uint64_t o = 0;

    for (; o + 8 <= n; o += 8) {
        uint64_t w = psc_expect_word(e, o);

        memcpy(p + o, &w, 8);
    }
    for (; o < n; o++)
        p[o] = psc_expect_byte(e, o);
}

/* As the kernel: whole 8-byte words up to the last whole 16 bytes, folded per word; the tail byte by byte. */
static void fake_pattern_check(const unsigned char *p, uint64_t n, const psc_expect_t *e, fake_verify_words_t *out)
{
    const uint64_t words = n / 16 * 2;

    for (uint64_t k = 0; k < words; k++) {
        uint64_t got, want = psc_expect_word(e, 8 * k), diff;

        memcpy(&got, p + 8 * k, 8);
        if ((diff = got ^ want) == 0)
            continue;
        for (unsigned b = 0; b < 8; b++)
            if ((diff >> (8 * b)) & 0xff) {
                out->bad_bytes++;
                if (8 * k + b < out->first_bad)
                    out->first_bad = 8 * k + b;
            }
    }
    for (uint64_t o = words * 8; o < n; o++)
        if (p[o] != psc_expect_byte(e, o)) {
            out->bad_bytes++;
            if (o < out->first_bad)
                out->first_bad = o;
        }
}

/* psc_coll_fill / psc_coll_check: the same elements from coll_values.h, slot by slot. */
static uint64_t fake_coll_ld(const unsigned char *p, unsigned es)
{
    uint64_t v = 0;

    memcpy(&v, p, es); /* little endian, as the GPU */
    return v;
}

static void fake_coll_fill(unsigned char *send, unsigned char *recv, uint64_t slot_bytes, unsigned nslots,
                           const psc_coll_data_t *d)
{
    const unsigned es = psc__coll_esize(d->dtype);

    for (unsigned s = 0; s < nslots; s++) {
        if (!d->in_place)
            for (uint64_t k = 0; k < psc__coll_send_n(d); k++) {
                uint64_t v = psc__coll_input_bits(d, d->seed + s, k);

                memcpy(send + s * slot_bytes + k * es, &v, es);
            }
        for (uint64_t a = 0; a < psc__coll_area_n(d); a++) {
            uint64_t v = psc__coll_recv_init_bits(d, d->seed + s, a);

            memcpy(recv + s * slot_bytes + a * es, &v, es);
        }
    }
}

static void fake_coll_check(const unsigned char *recv, uint64_t slot_bytes, unsigned nslots, const psc_coll_data_t *d,
                            uint64_t *out)
{
    const unsigned es = psc__coll_esize(d->dtype);
    const uint64_t n = psc__coll_out_n(d);
    const unsigned char *base = recv + psc__coll_out_off(d) * es;

    for (unsigned s = 0; s < nslots; s++)
        for (uint64_t j = 0; j < n; j++)
            if (psc__coll_wrong(d, d->seed + s, j, fake_coll_ld(base + s * slot_bytes + j * es, es))) {
                out[0]++;
                if (s * n + j < out[1])
                    out[1] = s * n + j;
            }
}

static void fake_chase(uint64_t start, uint64_t hops, unsigned samples, uint64_t *cycles, uint64_t *cal,
                       uint64_t *end)
{
    uint64_t p = start, g0 = fake_kernels_ns();

    for (unsigned s = 0; s < samples; s++) {
        uint64_t t0 = fake_kernels_ns();

        for (uint64_t h = 0; h < hops; h++)
            p = *(const volatile uint64_t *)(uintptr_t)p;
        cycles[s] = fake_since(t0);
    }
    cal[0] = cal[1] = fake_since(g0);
    *end = p;
}

/*
 * psc_chase_seq: block `target` of the launch walks `hops` loads from start. FAKE_CUDA_CHASE_MISREAD set: one
 * load (the middle one) returns the pointer one 128-byte node further on, as a wrong value read would.
 */
static void fake_chase_seq(uint64_t start, unsigned hops, unsigned target, uint64_t *end, uint64_t *cal)
{
    uint64_t p = start, g0 = fake_kernels_ns();
    const int misread = getenv("FAKE_CUDA_CHASE_MISREAD") != NULL;

    for (unsigned h = 0; h < hops; h++) {
        p = *(const volatile uint64_t *)(uintptr_t)p;
        if (misread && h == hops / 2)
            p += 128;
    }
    cal[2 * target] = cal[2 * target + 1] = fake_since(g0);
    end[target] = p;
}

/* ---- the flag kernels, each in a job */

typedef enum { FAKE_JOB_FREE, FAKE_JOB_RUNNING, FAKE_JOB_JOINING } fake_job_state_t;

typedef struct {
    fake_job_state_t state;
    int done; /* the thread's work has ended (atomic) */
    pthread_t tid;
    CUstream stream;
    CUcontext ctx;
    int ping;
    unsigned *flag, *ans; /* ping: the peer's flag and its own answer word; pong: its flag and the peer's answer */
    unsigned iters;
    uint64_t *cycles, *cal, timeout_ns;
    unsigned *err;
    int allreduce;        /* 1: psc_ar_oneshot's job, 2: psc_ar_twoshot's, 5: psc_rs_oneshot's, 6: psc_ag_oneshot's
                             (fake_allgather.c), with its argument block; 3: psc_ar_ce_add's, 4: psc_ar_ce_wait's, with
                             theirs */
    psc_ar_args_t ar;
    psc_ar_ce_args_t ce;
} fake_job_t;

#define FAKE_JOBS_MAX 64
static fake_job_t fake_jobs[FAKE_JOBS_MAX];
static pthread_mutex_t fake_jobs_lock = PTHREAD_MUTEX_INITIALIZER;
static int fake_jobs_stop; /* set at exit: spinning jobs give up without writing */

/* Wait for *w == want; 0 when it came, 1 after timeout_ns, -1 when the process is ending. */
static int fake_wait_word(unsigned *w, unsigned want, uint64_t timeout_ns)
{
    uint64_t w0 = fake_kernels_ns();

    while (__atomic_load_n(w, __ATOMIC_ACQUIRE) != want) {
        if (__atomic_load_n(&fake_jobs_stop, __ATOMIC_RELAXED))
            return -1;
        if (fake_kernels_ns() - w0 > timeout_ns)
            return 1;
        sched_yield(); /* the other side may need this core */
    }
    return 0;
}

static void fake_ar_oneshot(const psc_ar_args_t *a, int rs);
void fake_ag_oneshot(const psc_ar_args_t *a, const int *stop);
static void fake_ar_twoshot(const psc_ar_args_t *a);
static void fake_ar_ce_add(const psc_ar_ce_args_t *a);
static void fake_ar_ce_wait(const psc_ar_ce_args_t *a);

static void *fake_job_main(void *arg)
{
    fake_job_t *j = arg;

    if (j->allreduce) {
        if (j->allreduce == 4)
            fake_ar_ce_wait(&j->ce);
        else if (j->allreduce == 3)
            fake_ar_ce_add(&j->ce);
        else if (j->allreduce == 2)
            fake_ar_twoshot(&j->ar);
        else if (j->allreduce == 6)
            fake_ag_oneshot(&j->ar, &fake_jobs_stop);
        else
            fake_ar_oneshot(&j->ar, j->allreduce == 5);
        __atomic_store_n(&j->done, 1, __ATOMIC_RELEASE);
        return NULL;
    }
    uint64_t g0 = fake_kernels_ns();
    int rc = 0;

    for (unsigned i = 1; i <= j->iters && rc == 0; i++) {
        uint64_t t0 = fake_kernels_ns();

        if (j->ping) {
            __atomic_store_n(j->flag, i, __ATOMIC_RELEASE);
            if ((rc = fake_wait_word(j->ans, i, j->timeout_ns)) == 0)
                j->cycles[i - 1] = fake_since(t0);
        } else if ((rc = fake_wait_word(j->flag, i, j->timeout_ns)) == 0) {
            __atomic_store_n(j->ans, i, __ATOMIC_RELEASE);
        }
    }
    if (rc == 1)
        __atomic_store_n(j->err, 1u, __ATOMIC_RELEASE);
    if (rc == 0 && j->ping)
        j->cal[0] = j->cal[1] = fake_since(g0); /* 1 cycle per ns */
    __atomic_store_n(&j->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

static CUresult fake_job_start(const fake_job_t *proto)
{
    CUresult rc = CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;

    pthread_mutex_lock(&fake_jobs_lock);
    for (int i = 0; i < FAKE_JOBS_MAX; i++) {
        fake_job_t *j = &fake_jobs[i];

        if (j->state != FAKE_JOB_FREE)
            continue;
        *j = *proto;
        j->done = 0;
        if (pthread_create(&j->tid, NULL, fake_job_main, j) != 0)
            break;
        j->state = FAKE_JOB_RUNNING;
        rc = CUDA_SUCCESS;
        break;
    }
    pthread_mutex_unlock(&fake_jobs_lock);
    return rc;
}

/* Join the jobs `pick` selects; the lock is not held while joining, so a job's peer can still be launched. */
static void fake_jobs_join(int (*pick)(const fake_job_t *, const void *), const void *key)
{
    for (;;) {
        fake_job_t *j = NULL;

        pthread_mutex_lock(&fake_jobs_lock);
        for (int i = 0; i < FAKE_JOBS_MAX && !j; i++)
            if (fake_jobs[i].state == FAKE_JOB_RUNNING && pick(&fake_jobs[i], key))
                j = &fake_jobs[i];
        if (j)
            j->state = FAKE_JOB_JOINING;
        pthread_mutex_unlock(&fake_jobs_lock);
        if (!j)
            return;
        pthread_join(j->tid, NULL);
        pthread_mutex_lock(&fake_jobs_lock);
        j->state = FAKE_JOB_FREE;
        pthread_mutex_unlock(&fake_jobs_lock);
    }
}

static int fake_pick_stream(const fake_job_t *j, const void *s) { return (const void *)j->stream == s; }
static int fake_pick_ctx(const fake_job_t *j, const void *c) { return !c || (const void *)j->ctx == c; }

/* Wait for the jobs of stream s, of context c (NULL: all), or for every job. */
void fake_kernels_wait_stream(CUstream s) { fake_jobs_join(fake_pick_stream, s); }
void fake_kernels_wait_ctx(CUcontext c) { fake_jobs_join(fake_pick_ctx, c); }

/* 1 while a job of stream s is still working (cuStreamQuery's CUDA_ERROR_NOT_READY). */
int fake_kernels_busy(CUstream s)
{
    int busy = 0;

    pthread_mutex_lock(&fake_jobs_lock);
    for (int i = 0; i < FAKE_JOBS_MAX; i++)
        if (fake_jobs[i].state != FAKE_JOB_FREE && fake_jobs[i].stream == s &&
            !__atomic_load_n(&fake_jobs[i].done, __ATOMIC_ACQUIRE))
            busy = 1;
    pthread_mutex_unlock(&fake_jobs_lock);
    return busy;
}

/* For tests: jobs not yet joined (a leak shows). */
int fake_cuda_jobs_live(void)
{
    int n = 0;

    pthread_mutex_lock(&fake_jobs_lock);
    for (int i = 0; i < FAKE_JOBS_MAX; i++)
        n += fake_jobs[i].state != FAKE_JOB_FREE;
    pthread_mutex_unlock(&fake_jobs_lock);
    return n;
}

/* A forked child has none of its parent's threads: it starts with no jobs. */
static void fake_jobs_forget(void)
{
    memset(fake_jobs, 0, sizeof(fake_jobs));
    pthread_mutex_init(&fake_jobs_lock, NULL);
}

__attribute__((constructor)) static void fake_kernels_load(void) { pthread_atfork(NULL, NULL, fake_jobs_forget); }

/* At exit (or unload) no job may outlive the library: those still spinning give up and are joined. */
__attribute__((destructor)) static void fake_kernels_unload(void)
{
    __atomic_store_n(&fake_jobs_stop, 1, __ATOMIC_RELAXED);
    fake_kernels_wait_ctx(NULL);
}

/* ---- the all-reduce kernels (src/kernels/psc_allreduce.cuh): the same protocol, one thread per rank */

static uint32_t fake_ar_ld(const unsigned char *p)
{
    return __atomic_load_n((const uint32_t *)(const void *)p, __ATOMIC_ACQUIRE);
}

static void fake_ar_st(unsigned char *p, uint32_t w)
{
    __atomic_store_n((uint32_t *)(void *)p, w, __ATOMIC_RELEASE);
}

/* One element (k of 4 fp32 or 8 half-width ones) of a 16-byte vector as a float. */
static float fake_ar_elem(const uint32_t w[4], unsigned dtype, int k)
{
    if (dtype == PSC_DT_FLOAT32) {
        float f;

        memcpy(&f, &w[k], 4);
        return f;
    }
    return (float)psc__coll_from_bits((int)dtype, (w[k / 2] >> (16 * (k % 2))) & 0xffffu);
}

/* 16 bytes of the input at in + 16 v (the last few bytes with zeros after them), no word the sentinel. */
static void fake_ar_input(const unsigned char *in, uint64_t v, uint64_t bytes, uint32_t w[4])
{
    memset(w, 0, 16);
    memcpy(w, in + 16 * v, (size_t)(bytes - 16 * v < 16 ? bytes - 16 * v : 16));
    for (int k = 0; k < 4; k++)
        w[k] = w[k] == PSC_AR_SENTINEL ? PSC_AR_NAN_WORD : w[k];
}

/* Wait for rank r's vector at p; 0 (the error recorded) once the piece's wait passed the timeout. */
static int fake_ar_wait(const unsigned char *p, uint32_t w[4], psc_ar_ctrl_t *ctrl, unsigned r, unsigned seq,
                        uint64_t t0, uint64_t timeout_ns)
{
    for (;;) {
        int arrived = 1;

        for (int k = 0; k < 4; k++)
            arrived &= (w[k] = fake_ar_ld(p + 4 * k)) != PSC_AR_SENTINEL;
        if (arrived)
            return 1;
        if (__atomic_load_n(&fake_jobs_stop, __ATOMIC_RELAXED) || fake_kernels_ns() - t0 > timeout_ns) {
            ctrl->err_rank = r;
            ctrl->err_seq = seq;
            __atomic_store_n(&ctrl->err, PSC_AR_ERR_TIMEOUT, __ATOMIC_RELEASE);
            return 0;
        }
        sched_yield();
    }
}

/* 16 bytes of sums in acc rounded once to dtype. */
static void fake_ar_round(const float acc[8], unsigned dtype, uint32_t z[4])
{
    for (int k = 0; k < 4; k++)
        if (dtype == PSC_DT_FLOAT32)
            memcpy(&z[k], &acc[k], 4);
        else
            z[k] = (uint32_t)psc__coll_to_bits((int)dtype, (double)acc[2 * k]) |
                   (uint32_t)psc__coll_to_bits((int)dtype, (double)acc[2 * k + 1]) << 16;
}

/* FAKE_AR_CORRUPT=i: element i of every output wrong (its lowest bit flipped), as FAKE_NCCL_CORRUPT. */
static void fake_ar_corrupt(const psc_ar_args_t *a, unsigned es)
{
    const char *c = getenv("FAKE_AR_CORRUPT");
    uint64_t i = c && *c ? strtoull(c, NULL, 10) : UINT64_MAX;

    if (i < a->count)
        ((unsigned char *)(uintptr_t)a->recv)[i * es] ^= 1;
}

/* Piece k pushed into buffer b of every other rank, this rank's slot (psc_ar_push); rs: each rank its part of the
   input (a reduce-scatter's, count elements a part), else the same input to all. */
static void fake_ar_push(const psc_ar_args_t *a, unsigned b, uint64_t k, uint64_t pieces, uint64_t last_bytes, int rs)
{
    const uint64_t pbytes = k + 1 < pieces ? a->slot_bytes : last_bytes, nvec = (pbytes + 15) / 16;
    const uint64_t part = rs ? a->count * (a->dtype == PSC_DT_FLOAT32 ? 4 : 2) : 0;
    const unsigned char *in = (const unsigned char *)(uintptr_t)a->send + k * a->slot_bytes;

    for (uint64_t v = 0; v < nvec; v++)
        for (unsigned r = 0; r < a->nranks; r++) {
            uint32_t w[4];

            fake_ar_input(in + r * part, v, pbytes, w);
            for (int q = 0; r != a->rank && q < 4; q++)
                fake_ar_st((unsigned char *)(uintptr_t)a->lbuf[r] + ((uint64_t)b * a->nranks + a->rank) * a->slot_bytes +
                               16 * v + 4 * q,
                           w[q]);
        }
}

static void fake_ar_oneshot(const psc_ar_args_t *a, int rs)
{
    psc_ar_ctrl_t *ctrl = (psc_ar_ctrl_t *)(uintptr_t)a->ctrl;
    const unsigned seq = __atomic_load_n(&ctrl->seq, __ATOMIC_ACQUIRE), cur = ctrl->buf;
    const unsigned es = a->dtype == PSC_DT_FLOAT32 ? 4 : 2, per = 16 / es;
    const uint64_t bytes = a->count * es;
    const uint64_t pieces = bytes > a->slot_bytes ? (bytes + a->slot_bytes - 1) / a->slot_bytes : 1;
    const uint64_t last_bytes = bytes - (pieces - 1) * a->slot_bytes;
    unsigned char *own = (unsigned char *)(uintptr_t)a->lbuf[a->rank];
    const unsigned char *mine = (const unsigned char *)(uintptr_t)a->send + (rs ? a->rank * bytes : 0);
    uint64_t clear_vec = ctrl->clear / 16;
    unsigned b = cur;

    if (__atomic_load_n(&ctrl->err, __ATOMIC_ACQUIRE))
        return;
    /* the words moved on for the next call at the start, as the kernel does */
    ctrl->clear = (uint32_t)((last_bytes + 15) / 16 * 16);
    ctrl->buf = (unsigned)((cur + pieces) % PSC_AR_BUFS);
    __atomic_store_n(&ctrl->seq, seq + 1, __ATOMIC_RELEASE);
    fake_ar_push(a, b, 0, pieces, last_bytes, rs);
    for (uint64_t piece = 0; piece < pieces; piece++, b = b + 1 == PSC_AR_BUFS ? 0 : b + 1) {
        const unsigned old = b == 0 ? PSC_AR_BUFS - 1 : b - 1;
        const uint64_t pbytes = piece + 1 < pieces ? a->slot_bytes : last_bytes, nvec = (pbytes + 15) / 16;
        const unsigned char *in = mine + piece * a->slot_bytes;
        unsigned char *out = (unsigned char *)(uintptr_t)a->recv + piece * a->slot_bytes;
        uint64_t t0 = fake_kernels_ns();

        for (uint64_t v = 0; v < clear_vec; v++)
            for (unsigned r = 0; r < a->nranks; r++)
                for (int k = 0; r != a->rank && k < 4; k++)
                    fake_ar_st(own + ((uint64_t)old * a->nranks + r) * a->slot_bytes + 16 * v + 4 * k,
                               PSC_AR_SENTINEL);
        if (piece > 0 && piece + 1 < pieces) /* the next piece pushed before this one is added, as the kernel does */
            fake_ar_push(a, b + 1 == PSC_AR_BUFS ? 0 : b + 1, piece + 1, pieces, last_bytes, rs);
        for (uint64_t v = 0; v < nvec; v++) {
            float acc[8] = {0};
            uint32_t z[4];

            for (unsigned r = 0; r < a->nranks; r++) {
                uint32_t w[4];

                if (r == a->rank)
                    fake_ar_input(in, v, pbytes, w);
                else if (!fake_ar_wait(own + ((uint64_t)b * a->nranks + r) * a->slot_bytes + 16 * v, w, ctrl, r, seq,
                                       t0, a->timeout_ns))
                    return;
                for (unsigned k = 0; k < per; k++)
                    acc[k] = r == 0 ? fake_ar_elem(w, a->dtype, (int)k) : acc[k] + fake_ar_elem(w, a->dtype, (int)k);
            }
            fake_ar_round(acc, a->dtype, z);
            memcpy(out + 16 * v, z, (size_t)(pbytes - 16 * v < 16 ? pbytes - 16 * v : 16));
        }
        if (piece == 0 && pieces > 1) /* piece 1 once piece 0 is in */
            fake_ar_push(a, b + 1 == PSC_AR_BUFS ? 0 : b + 1, 1, pieces, last_bytes, rs);
        clear_vec = nvec;
    }
    fake_ar_corrupt(a, es);
}

/* ---- the copy-engine path's kernels (src/kernels/psc_allreduce_ce.cuh): one thread each */

static unsigned *fake_ar_ce_flag(const psc_ar_ce_args_t *a, unsigned r, unsigned at)
{
    return (unsigned *)(uintptr_t)(a->lbuf[r] + a->ce_off + at);
}

/* This rank gives up (rank who to blame): every peer's abort word, then the error word, as the kernels do. */
static void fake_ar_ce_give_up(const psc_ar_ce_args_t *a, unsigned who, unsigned seq)
{
    psc_ar_ctrl_t *ctrl = (psc_ar_ctrl_t *)(uintptr_t)a->ctrl;

    for (unsigned r = 0; r < a->nranks; r++)
        if (r != a->rank)
            __atomic_store_n(fake_ar_ce_flag(a, r, PSC_AR_CE_ABORT), PSC_AR_CE_ABORT_MARK | a->rank, __ATOMIC_RELEASE);
    if (__atomic_load_n(&ctrl->err, __ATOMIC_ACQUIRE) == 0) {
        ctrl->err_rank = who;
        ctrl->err_seq = seq;
        __atomic_store_n(&ctrl->err, PSC_AR_ERR_TIMEOUT, __ATOMIC_RELEASE);
    }
}

/* 1 where a peer's abort is in this rank's flags, and this rank gave up too, as the kernels do. */
static int fake_ar_ce_abort_seen(const psc_ar_ce_args_t *a, unsigned seq)
{
    unsigned w = __atomic_load_n(fake_ar_ce_flag(a, a->rank, PSC_AR_CE_ABORT), __ATOMIC_ACQUIRE);

    if (!PSC_AR_CE_ABORTED(w))
        return 0;
    fake_ar_ce_give_up(a, w & 0xffffu, seq);
    return 1;
}

/* A kernel's opening: the call count in *seq; 1 to go on, 0 where this rank gave up already or does now. */
static int fake_ar_ce_open(const psc_ar_ce_args_t *a, unsigned *seq)
{
    psc_ar_ctrl_t *ctrl = (psc_ar_ctrl_t *)(uintptr_t)a->ctrl;

    *seq = __atomic_load_n(&ctrl->seq, __ATOMIC_ACQUIRE);
    return __atomic_load_n(&ctrl->err, __ATOMIC_ACQUIRE) == 0 && !fake_ar_ce_abort_seen(a, *seq);
}

/* Wait until *w is (want) or is not (!want) value; 0 once given up (past the timeout: rank r to blame; a peer's
   abort: that peer; this rank's error already set: nothing more). */
static int fake_ar_ce_poll(const psc_ar_ce_args_t *a, unsigned *w, unsigned value, int want, unsigned r, unsigned seq)
{
    psc_ar_ctrl_t *ctrl = (psc_ar_ctrl_t *)(uintptr_t)a->ctrl;
    uint64_t t0 = fake_kernels_ns();

    while ((__atomic_load_n(w, __ATOMIC_ACQUIRE) == value) != want) {
        if (__atomic_load_n(&ctrl->err, __ATOMIC_ACQUIRE) || fake_ar_ce_abort_seen(a, seq))
            return 0;
        if (__atomic_load_n(&fake_jobs_stop, __ATOMIC_RELAXED) || fake_kernels_ns() - t0 > a->timeout_ns) {
            fake_ar_ce_give_up(a, r, seq);
            return 0;
        }
        sched_yield();
    }
    return 1;
}

static void fake_ar_ce_add(const psc_ar_ce_args_t *a)
{
    psc_ar_ctrl_t *ctrl = (psc_ar_ctrl_t *)(uintptr_t)a->ctrl;
    const unsigned per = a->dtype == PSC_DT_FLOAT32 ? 4 : 8;
    unsigned seq;

    if (!fake_ar_ce_open(a, &seq))
        return;
    for (unsigned r = 0; r < a->nranks; r++)
        if (r != a->rank &&
            !fake_ar_ce_poll(a, fake_ar_ce_flag(a, r, PSC_AR_CE_SENT(a->rank, a->slot)), PSC_AR_CE_SENT_MARK, 1, r, seq))
            return;
    if (a->gather && a->bytes % 16) { /* the kernel stores whole 16-byte vectors: the caller must not come here */
        fprintf(stderr, "fake libcuda: psc_ar_ce_add gathering %llu B, not whole 16-byte vectors\n",
                (unsigned long long)a->bytes);
        abort();
    }
    for (unsigned r = 0; a->gather && r < a->nranks; r++) { /* an all-gather's: each chunk to its part */
        const uint64_t at = r == a->rank ? a->send
                                         : a->lbuf[a->rank] + PSC_AR_CE_SLOT_AT(a->ce_off, a->chunk_bytes, a->rank, r,
                                                                                a->slot);
        const uint64_t to = a->recv + (uint64_t)r * a->part_bytes;

        if (at != to)
            memcpy((void *)(uintptr_t)to, (const void *)(uintptr_t)at, (size_t)a->bytes);
    }
    for (uint64_t v = 0; !a->gather && v < (a->bytes + 15) / 16; v++) {
        const size_t len = (size_t)(a->bytes - 16 * v < 16 ? a->bytes - 16 * v : 16);
        float acc[8] = {0};
        uint32_t z[4];

        for (unsigned r = 0; r < a->nranks; r++) {
            const uint64_t at = r == a->rank ? a->send
                                             : a->lbuf[a->rank] + PSC_AR_CE_SLOT_AT(a->ce_off, a->chunk_bytes, a->rank,
                                                                                    r, a->slot);
            const unsigned char *src = (const unsigned char *)(uintptr_t)at;
            uint32_t w[4] = {0, 0, 0, 0};

            memcpy(w, src + 16 * v, len);
            for (unsigned q = 0; q < per; q++)
                acc[q] = r == 0 ? fake_ar_elem(w, a->dtype, (int)q) : acc[q] + fake_ar_elem(w, a->dtype, (int)q);
        }
        fake_ar_round(acc, a->dtype, z);
        memcpy((unsigned char *)(uintptr_t)a->recv + 16 * v, z, len);
    }
    if (fake_ar_ce_abort_seen(a, seq)) /* after the reads: the slots may have been overrun */
        return;
    /* the slots handed back, as the kernel's last block does */
    for (unsigned r = 0; r < a->nranks; r++)
        if (r != a->rank)
            __atomic_store_n(fake_ar_ce_flag(a, r, PSC_AR_CE_SENT(a->rank, a->slot)), PSC_AR_SENTINEL,
                             __ATOMIC_RELEASE);
    for (unsigned r = 0; a->free_half && r < a->nranks; r++)
        if (r != a->rank)
            __atomic_store_n(fake_ar_ce_flag(a, r, PSC_AR_CE_FREE(a->rank, a->slot / PSC_AR_CE_HALF)), 1u,
                             __ATOMIC_RELEASE);
    if (a->last)
        __atomic_store_n(&ctrl->seq, seq + 1, __ATOMIC_RELEASE);
}

static void fake_ar_ce_wait(const psc_ar_ce_args_t *a)
{
    unsigned seq;

    if (!fake_ar_ce_open(a, &seq))
        return;
    for (unsigned r = 0; r < a->nranks; r++) {
        unsigned *w = fake_ar_ce_flag(a, a->rank, PSC_AR_CE_FREE(r, a->slot / PSC_AR_CE_HALF));

        if (r == a->rank)
            continue;
        if (!fake_ar_ce_poll(a, w, 0u, 0, r, seq))
            return;
        __atomic_store_n(w, 0u, __ATOMIC_RELEASE);
    }
}

/* Bytes of part p of a piece of pbytes cut in parts of part bytes. */
static uint64_t fake_ar_part_len(uint64_t pbytes, uint64_t part, unsigned p)
{
    uint64_t at = (uint64_t)p * part;

    return at >= pbytes ? 0 : pbytes - at < part ? pbytes - at : part;
}

/* psc_ar_twoshot (src/kernels/psc_allreduce_twoshot.cuh): the same protocol, one thread per rank. */
static void fake_ar_twoshot(const psc_ar_args_t *a)
{
    psc_ar_ctrl_t *ctrl = (psc_ar_ctrl_t *)(uintptr_t)a->ctrl;
    const unsigned seq = __atomic_load_n(&ctrl->seq, __ATOMIC_ACQUIRE), cur = ctrl->buf2;
    const unsigned es = a->dtype == PSC_DT_FLOAT32 ? 4 : 2, per = 16 / es;
    const uint64_t bytes = a->count * es, piece = a->part_bytes * a->nranks;
    const uint64_t pieces = bytes > piece ? (bytes + piece - 1) / piece : 1, last_bytes = bytes - (pieces - 1) * piece;
    const uint64_t region = (uint64_t)PSC_AR_BUFS * a->nranks * a->slot_bytes;
    const uint64_t kind = (uint64_t)PSC_AR_BUFS * a->nranks * a->part_bytes;
    unsigned char *own = (unsigned char *)(uintptr_t)a->lbuf[a->rank] + region;
    uint64_t clear_vec = ctrl->clear2 / 16;
    unsigned b = cur;

    if (__atomic_load_n(&ctrl->err, __ATOMIC_ACQUIRE))
        return;
    /* the words moved on for the next call at the start, as the kernel does: the last piece's part next */
    ctrl->clear2 = (uint32_t)(((last_bytes + a->nranks - 1) / a->nranks + 15) / 16 * 16);
    ctrl->buf2 = (unsigned)((cur + pieces) % PSC_AR_BUFS);
    __atomic_store_n(&ctrl->seq, seq + 1, __ATOMIC_RELEASE);
    for (uint64_t k = 0; k < pieces; k++, b = b + 1 == PSC_AR_BUFS ? 0 : b + 1) {
        const unsigned old = b == 0 ? PSC_AR_BUFS - 1 : b - 1;
        const uint64_t pbytes = k + 1 < pieces ? piece : last_bytes;
        const uint64_t part = ((pbytes + a->nranks - 1) / a->nranks + 15) / 16 * 16;
        const unsigned char *in = (const unsigned char *)(uintptr_t)a->send + k * piece;
        unsigned char *out = (unsigned char *)(uintptr_t)a->recv + k * piece;
        const uint64_t mine = fake_ar_part_len(pbytes, part, a->rank), t0 = fake_kernels_ns();

        for (unsigned p = 0; p < a->nranks; p++) {
            const uint64_t len = fake_ar_part_len(pbytes, part, p);

            for (uint64_t v = 0; p != a->rank && v < (len + 15) / 16; v++) {
                uint32_t w[4];

                fake_ar_input(in + p * part, v, len, w);
                for (int q = 0; q < 4; q++)
                    fake_ar_st((unsigned char *)(uintptr_t)a->lbuf[p] + region +
                                   ((uint64_t)b * a->nranks + a->rank) * a->part_bytes + 16 * v + 4 * q,
                               w[q]);
            }
        }
        for (uint64_t v = 0; v < clear_vec; v++)
            for (unsigned r = 0; r < a->nranks; r++)
                for (int q = 0; r != a->rank && q < 4; q++) {
                    fake_ar_st(own + ((uint64_t)old * a->nranks + r) * a->part_bytes + 16 * v + 4 * q, PSC_AR_SENTINEL);
                    fake_ar_st(own + kind + ((uint64_t)old * a->nranks + r) * a->part_bytes + 16 * v + 4 * q,
                               PSC_AR_SENTINEL);
                }
        for (uint64_t v = 0; v < (mine + 15) / 16; v++) {
            float acc[8] = {0};
            uint32_t z[4];

            for (unsigned r = 0; r < a->nranks; r++) {
                uint32_t w[4];

                if (r == a->rank)
                    fake_ar_input(in + a->rank * part, v, mine, w);
                else if (!fake_ar_wait(own + ((uint64_t)b * a->nranks + r) * a->part_bytes + 16 * v, w, ctrl, r, seq,
                                       t0, a->timeout_ns))
                    return;
                for (unsigned q = 0; q < per; q++)
                    acc[q] = r == 0 ? fake_ar_elem(w, a->dtype, (int)q) : acc[q] + fake_ar_elem(w, a->dtype, (int)q);
            }
            fake_ar_round(acc, a->dtype, z);
            for (int q = 0; q < 4; q++)
                z[q] = z[q] == PSC_AR_SENTINEL ? PSC_AR_NAN_WORD : z[q];
            for (unsigned p = 0; p < a->nranks; p++)
                for (int q = 0; p != a->rank && q < 4; q++)
                    fake_ar_st((unsigned char *)(uintptr_t)a->lbuf[p] + region + kind +
                                   ((uint64_t)b * a->nranks + a->rank) * a->part_bytes + 16 * v + 4 * q,
                               z[q]);
            memcpy(out + a->rank * part + 16 * v, z, (size_t)(mine - 16 * v < 16 ? mine - 16 * v : 16));
        }
        for (unsigned p = 0; p < a->nranks; p++) {
            const uint64_t len = fake_ar_part_len(pbytes, part, p);

            for (uint64_t v = 0; p != a->rank && v < (len + 15) / 16; v++) {
                uint32_t w[4];

                if (!fake_ar_wait(own + kind + ((uint64_t)b * a->nranks + p) * a->part_bytes + 16 * v, w, ctrl, p,
                                  seq, t0, a->timeout_ns))
                    return;
                memcpy(out + p * part + 16 * v, w, (size_t)(len - 16 * v < 16 ? len - 16 * v : 16));
            }
        }
        clear_vec = part / 16;
    }
    fake_ar_corrupt(a, es);
}

#define FAKE_ARG(T, k) (*(T *)params[k])
#define FAKE_PTR(T, k) ((T *)(uintptr_t)FAKE_ARG(CUdeviceptr, k))

/* ---- the one-way local kernels: a sum of little-endian words (the tail a partial word), or stores of e's words */

static uint64_t fake_word_at(const unsigned char *p, uint64_t o, uint64_t n)
{
    uint64_t w = 0;

    if (o + 8 <= n) {
        memcpy(&w, p + o, 8); /* little endian, as the GPU's */
        return w;
    }
    for (uint64_t b = 0; o + b < n; b++)
        w |= (uint64_t)p[o + b] << (8 * b);
    return w;
}

static CUresult fake_oneway(const char *name, void **params)
{
    uint64_t n = FAKE_ARG(uint64_t, name[4] == 'p' ? 0 : 1), acc = 0;

    if (strcmp(name, "psc_write_u4") == 0) {
        for (unsigned r = 0; r < FAKE_ARG(unsigned, 2); r++)
            fake_pattern_fill(FAKE_PTR(unsigned char, 0), n, &FAKE_ARG(psc_expect_t, 3));
        return CUDA_SUCCESS;
    }
    if (strcmp(name, "psc_pattern_sum") == 0) {
        for (uint64_t o = 0; o < n; o += 8)
            acc += o + 8 <= n ? psc_expect_word(&FAKE_ARG(psc_expect_t, 1), o) : 0;
        for (uint64_t o = n / 8 * 8; o < n; o++)
            acc += (uint64_t)psc_expect_byte(&FAKE_ARG(psc_expect_t, 1), o) << (8 * (o & 7));
        *FAKE_PTR(uint64_t, 2) += acc;
        return CUDA_SUCCESS;
    }
    for (unsigned r = 0; r < FAKE_ARG(unsigned, 2); r++)
        for (uint64_t o = 0; o < n; o += 8)
            acc += fake_word_at(FAKE_PTR(const unsigned char, 0), o, n);
    *FAKE_PTR(uint64_t, 3) += acc;
    return CUDA_SUCCESS;
}

/* ---- the launch */


/*
 * Run kernel `name` (a launch of stream s in context c) with its parameters as cuLaunchKernel passes them.
 * CUDA_ERROR_NOT_SUPPORTED for a kernel the fake does not know.
 */
CUresult fake_kernel_run(const char *name, CUstream s, CUcontext c, void **params)
{
    if (strcmp(name, "psc_copy_bytes") == 0 || strncmp(name, "psc_copy_", 9) == 0) {
        unsigned reps = strcmp(name, "psc_copy_bytes") == 0 ? 1 : FAKE_ARG(unsigned, 3);

        for (unsigned r = 0; r < reps; r++)
            memmove(FAKE_PTR(unsigned char, 0), FAKE_PTR(const unsigned char, 1), (size_t)FAKE_ARG(uint64_t, 2));
        return CUDA_SUCCESS;
    }
    if (strcmp(name, "psc_read_u4") == 0 || strcmp(name, "psc_pattern_sum") == 0 || strcmp(name, "psc_write_u4") == 0)
        return fake_oneway(name, params);
    if (strcmp(name, "psc_gate") == 0)
        return CUDA_SUCCESS; /* nothing holds a fake stream: released at once, timed_out stays 0 */
    if (strcmp(name, "psc_pattern_fill") == 0) {
        fake_pattern_fill(FAKE_PTR(unsigned char, 0), FAKE_ARG(uint64_t, 1), &FAKE_ARG(psc_expect_t, 2));
        return CUDA_SUCCESS;
    }
    if (strcmp(name, "psc_pattern_check") == 0) {
        fake_pattern_check(FAKE_PTR(const unsigned char, 0), FAKE_ARG(uint64_t, 1), &FAKE_ARG(psc_expect_t, 2),
                           FAKE_PTR(fake_verify_words_t, 3));
        return CUDA_SUCCESS;
    }
    if (strcmp(name, "psc_pattern_flip") == 0) {
        FAKE_PTR(unsigned char, 0)[FAKE_ARG(uint64_t, 1)] ^= 0x5A;
        return CUDA_SUCCESS;
    }
    if (strcmp(name, "psc_coll_fill") == 0) {
        fake_coll_fill(FAKE_PTR(unsigned char, 0), FAKE_PTR(unsigned char, 1), FAKE_ARG(uint64_t, 2),
                       FAKE_ARG(unsigned, 3), &FAKE_ARG(psc_coll_data_t, 4));
        return CUDA_SUCCESS;
    }
    if (strcmp(name, "psc_coll_check") == 0) {
        fake_coll_check(FAKE_PTR(const unsigned char, 0), FAKE_ARG(uint64_t, 1), FAKE_ARG(unsigned, 2),
                        &FAKE_ARG(psc_coll_data_t, 3), FAKE_PTR(uint64_t, 4));
        return CUDA_SUCCESS;
    }
    if (strcmp(name, "psc_chase") == 0 || strcmp(name, "psc_chase_tma") == 0) {
        fake_chase(FAKE_ARG(uint64_t, 0), FAKE_ARG(uint64_t, 1), FAKE_ARG(unsigned, 2), FAKE_PTR(uint64_t, 3),
                   FAKE_PTR(uint64_t, 4), FAKE_PTR(uint64_t, 5));
        return CUDA_SUCCESS;
    }
    if (strcmp(name, "psc_chase_seq") == 0) {
        fake_chase_seq(FAKE_ARG(uint64_t, 0), FAKE_ARG(unsigned, 1), FAKE_ARG(unsigned, 2), FAKE_PTR(uint64_t, 3),
                       FAKE_PTR(uint64_t, 4));
        return CUDA_SUCCESS;
    }
    if (strcmp(name, "psc_timer_probe") == 0) {
        *FAKE_PTR(uint64_t, 0) = 1; /* the fake clock's step: 1 ns */
        return CUDA_SUCCESS;
    }
    if (strcmp(name, "psc_flag_ping") == 0) {
        fake_job_t j = {.stream = s, .ctx = c, .ping = 1, .flag = FAKE_PTR(unsigned, 0), .ans = FAKE_PTR(unsigned, 1),
                        .iters = FAKE_ARG(unsigned, 2), .cycles = FAKE_PTR(uint64_t, 3), .cal = FAKE_PTR(uint64_t, 4),
                        .timeout_ns = FAKE_ARG(uint64_t, 5), .err = FAKE_PTR(unsigned, 6)};

        return fake_job_start(&j);
    }
    if (strcmp(name, "psc_flag_pong") == 0) {
        fake_job_t j = {.stream = s, .ctx = c, .ping = 0, .flag = FAKE_PTR(unsigned, 0), .ans = FAKE_PTR(unsigned, 1),
                        .iters = FAKE_ARG(unsigned, 2), .timeout_ns = FAKE_ARG(uint64_t, 3),
                        .err = FAKE_PTR(unsigned, 4)};

        return fake_job_start(&j);
    }
    if (strcmp(name, "psc_ar_fill") == 0) {
        uint32_t *p = FAKE_PTR(uint32_t, 0), value = FAKE_ARG(unsigned, 2);

        for (uint64_t i = 0; i < FAKE_ARG(uint64_t, 1); i++)
            p[i] = value;
        return CUDA_SUCCESS;
    }
    if (strcmp(name, "psc_ar_oneshot") == 0 || strcmp(name, "psc_ar_twoshot") == 0 ||
        strcmp(name, "psc_rs_oneshot") == 0 || strcmp(name, "psc_ag_oneshot") == 0) {
        fake_job_t j = {.stream = s, .ctx = c,
                        .allreduce = name[4] == 'r' ? 5 : name[5] == 'g' ? 6 : name[7] == 't' ? 2 : 1,
                        .ar = FAKE_ARG(psc_ar_args_t, 0)};

        return fake_job_start(&j);
    }
    if (strcmp(name, "psc_compute_load") == 0)
        return CUDA_SUCCESS; /* coll's compute load: arithmetic whose result nothing reads */
    if (strcmp(name, "psc_ar_ce_add") == 0 || strcmp(name, "psc_ar_ce_wait") == 0) {
        fake_job_t j = {.stream = s, .ctx = c, .allreduce = name[10] == 'a' ? 3 : 4,
                        .ce = FAKE_ARG(psc_ar_ce_args_t, 0)};

        return fake_job_start(&j);
    }
    return CUDA_ERROR_NOT_SUPPORTED;
}
