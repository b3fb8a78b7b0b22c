/*
 * The fake driver's all-gather kernel (src/kernels/psc_allgather.cuh) done on
 * the CPU, one thread per rank (a job of fake_kernels.c): the same control
 * words, buffers, lines of 8 data bytes and two flags, piece numbers and
 * timeouts, so the library's calls, and whatever runs on them, work end to
 * end without a GPU.
 */
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "allreduce/ar_args.h"
#include "p2pscope/bench.h"

uint64_t fake_kernels_ns(void);
void fake_ag_oneshot(const psc_ar_args_t *a, const int *stop);

static uint32_t fake_ag_ld(const unsigned char *p)
{
    return __atomic_load_n((const uint32_t *)(const void *)p, __ATOMIC_ACQUIRE);
}

static void fake_ag_st(unsigned char *p, uint32_t w)
{
    __atomic_store_n((uint32_t *)(void *)p, w, __ATOMIC_RELEASE);
}

/* Line j of piece bytes at in: 8 bytes, zeros past the end, into every other rank's slot at `at` of its buffers
   (data words first, then the flags), and to out (not NULL: not in place). */
static void fake_ag_push(const psc_ar_args_t *a, uint64_t at, uint32_t flag, const unsigned char *in,
                         unsigned char *out, uint64_t pbytes)
{
    for (uint64_t j = 0; 8 * j < pbytes; j++) {
        const size_t n = (size_t)(pbytes - 8 * j < 8 ? pbytes - 8 * j : 8);
        uint32_t d[2] = {0, 0};

        memcpy(d, in + 8 * j, n);
        for (unsigned r = 0; r < a->nranks; r++) {
            unsigned char *line = (unsigned char *)(uintptr_t)a->lbuf[r] + at + 16 * j;

            if (r == a->rank)
                continue;
            fake_ag_st(line, d[0]);
            fake_ag_st(line + 8, d[1]);
            fake_ag_st(line + 4, flag);
            fake_ag_st(line + 12, flag);
        }
        if (out)
            memcpy(out + 8 * j, d, n);
    }
}

/* Rank r's piece from slot into out (pbytes), each line cleared once read; 0 (the error recorded) once a line's wait passed the timeout. */
static int fake_ag_take(const psc_ar_args_t *a, const unsigned char *slot, uint32_t flag, unsigned char *out,
                        uint64_t pbytes, unsigned r, unsigned seq, const int *stop)
{
    psc_ar_ctrl_t *ctrl = (psc_ar_ctrl_t *)(uintptr_t)a->ctrl;
    uint64_t t0 = fake_kernels_ns();

    for (uint64_t j = 0; 8 * j < pbytes; j++) {
        const unsigned char *line = slot + 16 * j;
        uint32_t d[2];

        while (fake_ag_ld(line + 12) != flag || fake_ag_ld(line + 4) != flag) {
            if (__atomic_load_n(stop, __ATOMIC_RELAXED) || fake_kernels_ns() - t0 > a->timeout_ns) {
                ctrl->err_rank = r;
                ctrl->err_seq = seq;
                __atomic_store_n(&ctrl->err, PSC_AR_ERR_TIMEOUT, __ATOMIC_RELEASE);
                return 0;
            }
            sched_yield();
        }
        d[0] = fake_ag_ld(line);
        d[1] = fake_ag_ld(line + 8);
        for (int q = 0; q < 4; q++) /* cleared once read, as the kernel does */
            fake_ag_st((unsigned char *)line + 4 * q, 0);
        memcpy(out + 8 * j, d, (size_t)(pbytes - 8 * j < 8 ? pbytes - 8 * j : 8));
    }
    return 1;
}

void fake_ag_oneshot(const psc_ar_args_t *a, const int *stop)
{
    psc_ar_ctrl_t *ctrl = (psc_ar_ctrl_t *)(uintptr_t)a->ctrl;
    const unsigned seq = __atomic_load_n(&ctrl->seq, __ATOMIC_ACQUIRE), num0 = ctrl->ag;
    const uint64_t bytes = a->count * (a->dtype == PSC_DT_FLOAT32 ? 4 : 2), piece = a->ag_slot / 2;
    const uint64_t pieces = bytes > piece ? (bytes + piece - 1) / piece : 1;
    const unsigned char *send = (const unsigned char *)(uintptr_t)a->send;
    unsigned char *recv = (unsigned char *)(uintptr_t)a->recv, *mine = recv + a->rank * bytes;
    const char *corrupt = getenv("FAKE_AR_CORRUPT"); /* element i of every output wrong, as the all-reduce's */
    const uint64_t bad = corrupt && *corrupt ? strtoull(corrupt, NULL, 10) : UINT64_MAX;

    if (__atomic_load_n(&ctrl->err, __ATOMIC_ACQUIRE))
        return;
    ctrl->ag = (uint32_t)(((uint64_t)num0 + pieces) % PSC_AG_MOD); /* moved on at the start, as the kernel does */
    __atomic_store_n(&ctrl->seq, seq + 1, __ATOMIC_RELEASE);
    for (uint64_t k = 0; k < pieces; k++) {
        const uint32_t num = (uint32_t)(((uint64_t)num0 + k) % PSC_AG_MOD), b = num % PSC_AR_BUFS;
        const uint64_t pbytes = k + 1 < pieces ? piece : bytes - k * piece;
        const unsigned char *own = (const unsigned char *)(uintptr_t)a->lbuf[a->rank] + a->ag_off;

        fake_ag_push(a, a->ag_off + ((uint64_t)b * a->nranks + a->rank) * a->ag_slot, num + 1, send + k * piece,
                     send == mine ? NULL : mine + k * piece, pbytes);
        for (unsigned r = 0; r < a->nranks; r++)
            if (r != a->rank && !fake_ag_take(a, own + ((uint64_t)b * a->nranks + r) * a->ag_slot, num + 1,
                                              recv + r * bytes + k * piece, pbytes, r, seq, stop))
                return;
    }
    if (bad < a->count * a->nranks)
        recv[bad * (a->dtype == PSC_DT_FLOAT32 ? 4 : 2)] ^= 1;
}
