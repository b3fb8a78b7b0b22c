/*
 * p2pscope coll's fill and check (coll/coll_data.c) on the fake driver, whose
 * kernels run on the CPU (fake_kernels.c), with the fake NCCL's collectives
 * (fake_libnccl.c) moving the data between them: for every collective, type,
 * reduction, in place and out of place, 1 to 4 ranks and several slots, a
 * clean run has no wrong element; one element changed in a later slot is the
 * one wrong element, named; a slot whose collective never ran is all wrong;
 * reduce's untouched outputs are checked too. Also the buffers' element
 * counts against nccl-tests' rules and the half/bfloat16 conversions.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "coll/coll_data.h"
#include "p2pscope_private.h"
#include "driver/nccl.h"
#include "fake_context.h"

#define MAXR 4
#define COUNT 37 /* odd: no kernel may assume whole vectors */
#define NSLOTS 3

static psc_nccl_t nc;
static psc_ncclComm_t g_comms[MAXR];

static int setup(void **state)
{
    char why[256];

    if (psc_test_open_fake_gpus(state, "4") != 0)
        return -1;
    setenv("P2PSCOPE_LIBNCCL", FAKE_LIBNCCL, 1);
    unsetenv("FAKE_NCCL_CORRUPT");
    unsetenv("FAKE_NCCL_HANG");
    return psc__nccl_load(&nc, why, sizeof(why)) == PSC_OK ? 0 : -1;
}

static int teardown(void **state)
{
    psc__nccl_unload(&nc);
    return psc_test_close_ctx(state);
}

#define CUF(fn) (g_ctx->cu.p_##fn)

typedef struct {
    psc_coll_data_t d[MAXR];
    CUdeviceptr send[MAXR], recv[MAXR], words[MAXR];
    uint64_t slot_bytes;
    unsigned es;
} run_t;

static void run_open(run_t *k, int coll, int dt, int op, int n, int root, int in_place)
{
    memset(k, 0, sizeof(*k));
    k->es = (unsigned)psc_dtype_size(dt);
    for (int r = 0; r < n; r++) {
        psc_coll_data_t d = {coll, dt, op, n, r, root, in_place, COUNT, 1000u + (uint32_t)coll * 17u + (uint32_t)dt};
        uint64_t s = psc__coll_send_elems(&d), v = psc__coll_recv_elems(&d);

        k->d[r] = d;
        k->slot_bytes = (s > v ? s : v) * k->es;
        assert_int_equal(psc__gpu_use(g_ctx, r), PSC_OK);
        assert_int_equal(CUF(cuMemAlloc)(&k->send[r], k->slot_bytes * NSLOTS), CUDA_SUCCESS);
        assert_int_equal(CUF(cuMemAlloc)(&k->recv[r], k->slot_bytes * NSLOTS), CUDA_SUCCESS);
        assert_int_equal(CUF(cuMemAlloc)(&k->words[r], 16), CUDA_SUCCESS);
    }
}

static void run_close(run_t *k, int n)
{
    for (int r = 0; r < n; r++) {
        CUF(cuMemFree)(k->send[r]);
        CUF(cuMemFree)(k->recv[r]);
        CUF(cuMemFree)(k->words[r]);
    }
}

static void fill(run_t *k, int n)
{
    for (int r = 0; r < n; r++) {
        assert_int_equal(psc__gpu_use(g_ctx, r), PSC_OK);
        assert_int_equal(psc__coll_fill(g_ctx, r, g_ctx->gpu[r].stream, k->d[r].in_place ? 0 : k->send[r], k->recv[r],
                                        k->slot_bytes, NSLOTS, &k->d[r]),
                         PSC_OK);
    }
}

/* The fake NCCL's collective on slot s of every rank, with nccl-tests' in-place pointers. */
static void collective(run_t *k, int n, unsigned s)
{
    const psc_coll_data_t *d0 = &k->d[0];
    size_t c = COUNT, cb = c * k->es;

    assert_int_equal(nc.group_start(), PSC_NCCL_SUCCESS);
    for (int r = 0; r < n; r++) {
        char *recv = (char *)(uintptr_t)(k->recv[r] + s * k->slot_bytes), *rp = recv;
        const char *sp = (const char *)(uintptr_t)(k->send[r] + s * k->slot_bytes);
        psc_ncclResult_t rc = -1;

        if (d0->in_place) {
            sp = recv;
            if (d0->coll == PSC_COLL_ALL_GATHER)
                sp = recv + (size_t)r * cb;
            if (d0->coll == PSC_COLL_REDUCE_SCATTER)
                rp = recv + (size_t)r * cb;
        }
        switch (d0->coll) {
        case PSC_COLL_ALL_REDUCE: rc = nc.all_reduce(sp, rp, c, d0->dtype, d0->op, g_comms[r], NULL); break;
        case PSC_COLL_ALL_GATHER: rc = nc.all_gather(sp, rp, c, d0->dtype, g_comms[r], NULL); break;
        case PSC_COLL_REDUCE_SCATTER: rc = nc.reduce_scatter(sp, rp, c, d0->dtype, d0->op, g_comms[r], NULL); break;
        case PSC_COLL_BROADCAST: rc = nc.broadcast(sp, rp, c, d0->dtype, d0->root, g_comms[r], NULL); break;
        case PSC_COLL_REDUCE: rc = nc.reduce(sp, rp, c, d0->dtype, d0->op, d0->root, g_comms[r], NULL); break;
        case PSC_COLL_ALL_TO_ALL: rc = nc.all_to_all(sp, rp, c, d0->dtype, g_comms[r], NULL); break;
        default:
            rc = nc.send(sp, c, d0->dtype, (r + 1) % n, g_comms[r], NULL);
            if (rc == PSC_NCCL_SUCCESS)
                rc = nc.recv(rp, c, d0->dtype, (r + n - 1) % n, g_comms[r], NULL);
            break;
        }
        assert_int_equal(rc, PSC_NCCL_SUCCESS);
    }
    assert_int_equal(nc.group_end(), PSC_NCCL_SUCCESS);
}

/* Check rank r's slots: the wrong count and the first wrong index (UINT64_MAX: none). */
static void check(run_t *k, int r, uint64_t *wrong, uint64_t *first)
{
    uint64_t w[2] = {0, UINT64_MAX};

    assert_int_equal(psc__gpu_use(g_ctx, r), PSC_OK);
    assert_int_equal(CUF(cuMemcpyHtoD)(k->words[r], w, sizeof(w)), CUDA_SUCCESS);
    assert_int_equal(psc__coll_check(g_ctx, r, g_ctx->gpu[r].stream, k->recv[r], k->slot_bytes, NSLOTS, &k->d[r],
                                     k->words[r]),
                     PSC_OK);
    assert_int_equal(CUF(cuStreamSynchronize)(g_ctx->gpu[r].stream), CUDA_SUCCESS);
    assert_int_equal(CUF(cuMemcpyDtoH)(w, k->words[r], sizeof(w)), CUDA_SUCCESS);
    *wrong = w[0];
    *first = w[1];
}

#define CASE_FMT "%s %s %s %s n=%d root=%d rank %d"
#define CASE_ARGS(d, r)                                                                                              \
    psc_coll_name((d)->coll), psc_dtype_name((d)->dtype), psc__coll_reduces((d)->coll) ? psc_redop_name((d)->op) : "-", \
        (d)->in_place ? "in place" : "out of place", (d)->nranks, (d)->root, r

static void run_case(int coll, int dt, int op, int n, int in_place)
{
    int root = n > 1 ? 1 : 0, flip_rank = (root + 1) % n;
    unsigned fs = NSLOTS - 1;
    run_t k;
    uint64_t wrong, first;

    run_open(&k, coll, dt, op, n, root, in_place);
    assert_int_equal(nc.comm_init_all(g_comms, n, NULL), PSC_NCCL_SUCCESS);

    /* clean: every slot's collective ran */
    fill(&k, n);
    for (unsigned s = 0; s < NSLOTS; s++)
        collective(&k, n, s);
    for (int r = 0; r < n; r++) {
        check(&k, r, &wrong, &first);
        if (wrong || first != UINT64_MAX)
            fail_msg(CASE_FMT ": %llu wrong, first %llu, in a clean run", CASE_ARGS(&k.d[r], r),
                     (unsigned long long)wrong, (unsigned long long)first);
    }

    /* one element of a later slot changed (on reduce's non-root out of place: a write that must not happen) */
    {
        const psc_coll_data_t *d = &k.d[flip_rank];
        uint64_t j = psc__coll_out_elems(d) / 2;
        unsigned char *p = (unsigned char *)(uintptr_t)(k.recv[flip_rank] + fs * k.slot_bytes) +
                           (psc__coll_out_offset(d) + j) * k.es;

        p[k.es - 1] ^= 0x40; /* an exponent bit of a floating type: far past an average's 2 ulps */
        for (int r = 0; r < n; r++) {
            check(&k, r, &wrong, &first);
            if (r == flip_rank && (wrong != 1 || first != fs * psc__coll_out_elems(d) + j))
                fail_msg(CASE_FMT ": %llu wrong, first %llu; want 1, first %llu", CASE_ARGS(d, r),
                         (unsigned long long)wrong, (unsigned long long)first,
                         (unsigned long long)(fs * psc__coll_out_elems(d) + j));
            if (r == flip_rank) { /* a second check adds to the same words */
                uint64_t w[2];

                assert_int_equal(psc__coll_check(g_ctx, r, g_ctx->gpu[r].stream, k.recv[r], k.slot_bytes, NSLOTS,
                                                 &k.d[r], k.words[r]),
                                 PSC_OK);
                assert_int_equal(CUF(cuStreamSynchronize)(g_ctx->gpu[r].stream), CUDA_SUCCESS);
                assert_int_equal(CUF(cuMemcpyDtoH)(w, k.words[r], sizeof(w)), CUDA_SUCCESS);
                assert_int_equal(w[0], 2);
                assert_int_equal(w[1], first);
            }
            if (r != flip_rank && wrong != 0)
                fail_msg(CASE_FMT ": %llu wrong, none changed there", CASE_ARGS(&k.d[r], r), (unsigned long long)wrong);
        }
    }

    /* slot 1's collective never ran */
    fill(&k, n);
    for (unsigned s = 0; s < NSLOTS; s++)
        if (s != 1)
            collective(&k, n, s);
    for (int r = 0; r < n; r++) {
        const psc_coll_data_t *d = &k.d[r];
        uint64_t out = psc__coll_out_elems(d), lo = out, hi = out;

        if (psc__coll_untouched(d) || (in_place && n == 1) || (in_place && coll == PSC_COLL_BROADCAST && r == root) ||
            (in_place && coll == PSC_COLL_REDUCE && r != root))
            lo = hi = 0; /* nothing to write, or the input in place already is the output */
        else if (in_place && coll == PSC_COLL_ALL_GATHER)
            lo = hi = out - COUNT; /* its own part is its input */
        else if (in_place && coll != PSC_COLL_BROADCAST)
            lo = 1; /* an input in place may equal its output here and there */
        check(&k, r, &wrong, &first);
        if (wrong < lo || wrong > hi || (wrong && (first < out || first >= 2 * out)) || (lo == out && first != out))
            fail_msg(CASE_FMT ": slot 1 never written: %llu wrong (want %llu..%llu), first %llu", CASE_ARGS(d, r),
                     (unsigned long long)wrong, (unsigned long long)lo, (unsigned long long)hi,
                     (unsigned long long)first);
    }
    for (int r = 0; r < n; r++)
        assert_int_equal(nc.comm_destroy(g_comms[r]), PSC_NCCL_SUCCESS);
    run_close(&k, n);
}

static void test_every_case(void **state)
{
    (void)state;
    for (int coll = 0; coll < PSC_COLL_N; coll++)
        for (int dt = 0; dt < PSC_DT_N; dt++)
            for (int op = 0; op < (psc__coll_reduces(coll) ? PSC_OP_N : 1); op++)
                for (int n = 1; n <= MAXR; n++)
                    for (int ip = 0; ip < 2; ip++)
                        run_case(coll, dt, psc__coll_reduces(coll) ? op : -1, n, ip);
}

/* nccl-tests' getCollByteCount from a requested size (section 2 of the format spec). */
static void nccl_tests_counts(int coll, uint64_t bytes, unsigned es, int n, uint64_t *send, uint64_t *recv,
                              uint64_t *param)
{
    uint64_t count = bytes / es, base = (count / (uint64_t)n) & ~(uint64_t)(16 / es - 1);

    switch (coll) {
    case PSC_COLL_ALL_GATHER: *send = base, *recv = base * (uint64_t)n, *param = base; break;
    case PSC_COLL_REDUCE_SCATTER: *send = base * (uint64_t)n, *recv = base, *param = base; break;
    case PSC_COLL_ALL_TO_ALL: *send = *recv = base * (uint64_t)n, *param = base; break;
    default: *send = *recv = *param = count; break;
    }
}

static void test_counts(void **state)
{
    static const uint64_t sizes[] = {0, 1, 7, 8, 100, 1024, 4096 + 12, 1ull << 33};

    (void)state;
    for (int coll = 0; coll < PSC_COLL_N; coll++)
        for (int dt = 0; dt < PSC_DT_N; dt++)
            for (int n = 1; n <= 9; n++)
                for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
                    unsigned es = (unsigned)psc_dtype_size(dt);
                    uint64_t s, v, p;
                    psc_coll_data_t d = {coll, dt, 0, n, 0, 0, 0, 0, 0};

                    nccl_tests_counts(coll, sizes[z], es, n, &s, &v, &p);
                    d.count = p;
                    assert_int_equal(psc__coll_send_elems(&d), s);
                    assert_int_equal(psc__coll_recv_elems(&d), v);
                    d.in_place = 1; /* the same buffers in place */
                    assert_int_equal(psc__coll_send_elems(&d), s);
                    assert_int_equal(psc__coll_recv_elems(&d), v);
                }
}

/* Arguments refused, with a reason; nothing launched. */
static void test_refused(void **state)
{
    psc_coll_data_t d = {PSC_COLL_ALL_REDUCE, PSC_DT_FLOAT32, PSC_OP_SUM, 2, 0, 0, 0, 16, 1};
    psc_coll_data_t bad;

    (void)state;
    assert_int_equal(psc__gpu_use(g_ctx, 0), PSC_OK);
    assert_int_equal(psc__coll_fill(g_ctx, 0, g_ctx->gpu[0].stream, 0x1000, 0x2000, 63, 1, &d), PSC_ERR_INVALID);
    assert_non_null(strstr(psc_context_last_error(g_ctx), "slot"));
    bad = d, bad.op = PSC_OP_N;
    assert_int_equal(psc__coll_fill(g_ctx, 0, g_ctx->gpu[0].stream, 0x1000, 0x2000, 64, 1, &bad), PSC_ERR_INVALID);
    bad = d, bad.rank = 2;
    assert_int_equal(psc__coll_check(g_ctx, 0, g_ctx->gpu[0].stream, 0x2000, 64, 1, &bad, 0x3000), PSC_ERR_INVALID);
    bad = d, bad.dtype = PSC_DT_N;
    assert_int_equal(psc__coll_check(g_ctx, 0, g_ctx->gpu[0].stream, 0x2000, 64, 1, &bad, 0x3000), PSC_ERR_INVALID);
    bad = d, bad.coll = PSC_COLL_REDUCE, bad.root = 5;
    assert_int_equal(psc__coll_check(g_ctx, 0, g_ctx->gpu[0].stream, 0x2000, 64, 1, &bad, 0x3000), PSC_ERR_INVALID);
    assert_int_equal(psc__coll_check(g_ctx, 0, g_ctx->gpu[0].stream, 0x2000, 64, 1, &d, 0), PSC_ERR_INVALID);
    assert_int_equal(psc__coll_check(g_ctx, 0, g_ctx->gpu[0].stream, 0x2002, 64, 1, &d, 0x3000), PSC_ERR_INVALID);
    assert_non_null(strstr(psc_context_last_error(g_ctx), "aligned"));
    assert_int_equal(psc__coll_fill(g_ctx, 0, g_ctx->gpu[0].stream, 0x1000, 0x2000, 66, 1, &d), PSC_ERR_INVALID);
    assert_int_equal(psc__coll_fill(g_ctx, 0, g_ctx->gpu[0].stream, 0x1000, 0x2000, 64, 0, &d), PSC_OK); /* no slots */
}

/* Host only: the half and bfloat16 bits, both ways. */
static void test_bits(void **state)
{
    static const struct {
        int dt;
        double v;
        uint64_t bits;
    } k[] = {
        {PSC_DT_FLOAT16, 1, 0x3c00},      {PSC_DT_FLOAT16, -1, 0xbc00},     {PSC_DT_FLOAT16, 0.5, 0x3800},
        {PSC_DT_FLOAT16, 2048, 0x6800},   {PSC_DT_FLOAT16, 2049, 0x6800},   {PSC_DT_FLOAT16, 2051, 0x6802},
        {PSC_DT_FLOAT16, 65504, 0x7bff},  {PSC_DT_FLOAT16, 65520, 0x7c00},  {PSC_DT_FLOAT16, 1.0 / 16777216, 0x0001},
        {PSC_DT_FLOAT16, 1.0 / 3, 0x3555}, {PSC_DT_FLOAT16, 0, 0},          {PSC_DT_FLOAT16, 1e-9, 0},
        {PSC_DT_BFLOAT16, 1, 0x3f80},     {PSC_DT_BFLOAT16, -2, 0xc000},    {PSC_DT_BFLOAT16, 256, 0x4380},
        {PSC_DT_BFLOAT16, 257, 0x4380},   {PSC_DT_BFLOAT16, 259, 0x4382},   {PSC_DT_BFLOAT16, 1.0 / 3, 0x3eab},
        {PSC_DT_BFLOAT16, 1e39, 0x7f80},  {PSC_DT_FLOAT32, 1, 0x3f800000},  {PSC_DT_INT8, -1, 0xff},
        {PSC_DT_INT32, -2, 0xfffffffe},   {PSC_DT_UINT64, 1ull << 63, 1ull << 63},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++)
        if (psc__coll_to_bits(k[i].dt, k[i].v) != k[i].bits)
            fail_msg("%s %g: 0x%llx, want 0x%llx", psc_dtype_name(k[i].dt), k[i].v,
                     (unsigned long long)psc__coll_to_bits(k[i].dt, k[i].v), (unsigned long long)k[i].bits);
    /* every whole number in the exact range, and every finite pattern both ways */
    for (int dt = PSC_DT_FLOAT16; dt <= PSC_DT_BFLOAT16; dt += PSC_DT_BFLOAT16 - PSC_DT_FLOAT16) {
        int inf = dt == PSC_DT_FLOAT16 ? 0x7c00 : 0x7f80;

        for (double v = -psc__coll_exact_max(dt); v <= psc__coll_exact_max(dt); v++)
            assert_true(psc__coll_from_bits(dt, psc__coll_to_bits(dt, v)) == v);
        for (uint64_t b = 0; b < 0x10000; b++)
            if ((b & 0x7fff) <= (uint64_t)inf && psc__coll_to_bits(dt, psc__coll_from_bits(dt, b)) != b)
                fail_msg("%s 0x%llx does not come back", psc_dtype_name(dt), (unsigned long long)b);
        assert_true(psc__coll_from_bits(dt, (uint64_t)inf + 1) != psc__coll_from_bits(dt, (uint64_t)inf + 1)); /* NaN */
    }
    for (int e = -14; e <= 15; e++) /* powers of two */
        assert_int_equal(psc__coll_to_bits(PSC_DT_FLOAT16, psc__coll_pow2(e)), (uint64_t)(e + 15) << 10);
    for (int e = -126; e <= 127; e++)
        assert_int_equal(psc__coll_to_bits(PSC_DT_BFLOAT16, psc__coll_pow2(e)), (uint64_t)(e + 127) << 7);
}

/* An average within 2 ulps of the type at the exact quotient passes; 3 ulps or NaN do not. */
static void test_avg_tolerance(void **state)
{
    static const int dts[] = {PSC_DT_FLOAT16, PSC_DT_BFLOAT16, PSC_DT_FLOAT32, PSC_DT_FLOAT64};

    (void)state;
    for (size_t i = 0; i < sizeof(dts) / sizeof(dts[0]); i++) {
        int dt = dts[i];
        uint64_t b = psc__coll_to_bits(dt, 5.0);

        assert_true(psc__coll_avg_ok(dt, b, 5.0));
        assert_true(psc__coll_avg_ok(dt, b + 2, 5.0));
        assert_true(psc__coll_avg_ok(dt, b - 2, 5.0));
        assert_false(psc__coll_avg_ok(dt, b + 3, 5.0));
        assert_false(psc__coll_avg_ok(dt, b - 3, 5.0));
        assert_false(psc__coll_avg_ok(dt, psc__coll_mask(dt) >> 1, 5.0)); /* a NaN pattern */
        assert_true(psc__coll_avg_ok(dt, psc__coll_to_bits(dt, 5.0 / 3), 5.0 / 3));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bits),
        cmocka_unit_test(test_avg_tolerance),
        cmocka_unit_test(test_counts),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_every_case),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
