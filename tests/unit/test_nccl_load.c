/*
 * NCCL loaded at run time (src/lib/driver/nccl.c) against the fake libnccl
 * (tests/fakes/fake_libnccl.c): what is refused and how it is said, the
 * version's text, and every collective through the loaded table on 2 and 3
 * ranks, in place and out of place, against results this file computes on
 * its own; the fake's corrupt and hang hooks and the abort that ends a hang.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "driver/nccl.h"
#include "p2pscope_private.h"

static void fake_env(const char *version, const char *mode)
{
    setenv("P2PSCOPE_LIBNCCL", FAKE_LIBNCCL, 1);
    if (version)
        setenv("FAKE_NCCL_VERSION", version, 1);
    else
        unsetenv("FAKE_NCCL_VERSION");
    if (mode)
        setenv("FAKE_NCCL_MODE", mode, 1);
    else
        unsetenv("FAKE_NCCL_MODE");
    unsetenv("FAKE_NCCL_HANG");
    unsetenv("FAKE_NCCL_CORRUPT");
}

static void load(psc_nccl_t *nc)
{
    char why[512] = "unset";

    fake_env(NULL, NULL);
    assert_int_equal(psc__nccl_load(nc, why, sizeof(why)), PSC_OK);
    assert_string_equal(why, "");
}

static void test_load_fake(void **state)
{
    psc_nccl_t nc;
    char v[32];

    (void)state;
    load(&nc);
    assert_int_equal(nc.version, 22807);
    assert_string_equal(psc__nccl_version_string(nc.version, v, sizeof(v)), "2.28.7");
    assert_string_equal(nc.path, FAKE_LIBNCCL);
    assert_non_null(nc.comm_init_rank_config);
    assert_non_null(nc.get_last_error);
    assert_non_null(nc.all_to_all);
    psc__nccl_unload(&nc);
    assert_null(nc.handle);
    assert_null(nc.all_reduce);
}

static void test_version_string(void **state)
{
    char v[32];

    (void)state;
    assert_string_equal(psc__nccl_version_string(22807, v, sizeof(v)), "2.28.7");
    assert_string_equal(psc__nccl_version_string(2708, v, sizeof(v)), "2.7.8"); /* before 2.9 */
    assert_string_equal(psc__nccl_version_string(21200, v, sizeof(v)), "2.12.0");
    assert_string_equal(psc__nccl_version_string(23007, v, sizeof(v)), "2.30.7");
    assert_string_equal(psc__nccl_version_string(2999, v, sizeof(v)), "2.9.99");
}

/* One line, naming what and what to do; the table left empty. */
static void assert_refused(psc_nccl_t *nc, const char *why, const char *names)
{
    assert_non_null(strstr(why, names));
    assert_non_null(strstr(why, "install NCCL (libnccl2) or set P2PSCOPE_LIBNCCL"));
    assert_null(strchr(why, '\n'));
    assert_null(nc->handle);
    assert_null(nc->all_reduce);
    assert_int_equal(nc->version, 0);
}

static void test_missing_library(void **state)
{
    psc_nccl_t nc;
    char why[512];

    (void)state;
    setenv("P2PSCOPE_LIBNCCL", "/nonexistent/libnccl.so.2", 1);
    assert_int_equal(psc__nccl_load(&nc, why, sizeof(why)), PSC_ERR_UNSUPPORTED);
    assert_refused(&nc, why, "/nonexistent/libnccl.so.2");
    assert_non_null(strstr(why, "could not be loaded"));
}

static void test_missing_symbol(void **state)
{
    psc_nccl_t nc;
    char why[512];

    (void)state;
    fake_env(NULL, "nosym");
    assert_int_equal(psc__nccl_load(&nc, why, sizeof(why)), PSC_ERR_UNSUPPORTED);
    assert_refused(&nc, why, "ncclCommAbort");
    assert_non_null(strstr(why, FAKE_LIBNCCL));
}

static void test_old_versions(void **state)
{
    psc_nccl_t nc;
    char why[512];

    (void)state;
    fake_env("21105", NULL);
    assert_int_equal(psc__nccl_load(&nc, why, sizeof(why)), PSC_ERR_UNSUPPORTED);
    assert_refused(&nc, why, "NCCL 2.11.5");
    assert_non_null(strstr(why, "2.12.0 or newer"));
    fake_env("2708", NULL); /* the old form of the code */
    assert_int_equal(psc__nccl_load(&nc, why, sizeof(why)), PSC_ERR_UNSUPPORTED);
    assert_refused(&nc, why, "NCCL 2.7.8");

    /* 2.12: accepted, without the optional entry points it lacks */
    fake_env("21200", NULL);
    assert_int_equal(psc__nccl_load(&nc, why, sizeof(why)), PSC_OK);
    assert_int_equal(nc.version, 21200);
    assert_null(nc.comm_init_rank_config);
    assert_null(nc.comm_finalize);
    assert_null(nc.get_last_error);
    assert_null(nc.all_to_all);
    assert_non_null(nc.send);
    psc__nccl_unload(&nc);
    fake_env("21403", NULL);
    assert_int_equal(psc__nccl_load(&nc, why, sizeof(why)), PSC_OK);
    assert_non_null(nc.comm_init_rank_config);
    assert_non_null(nc.get_last_error);
    assert_null(nc.all_to_all);
    psc__nccl_unload(&nc);
}

static void test_check_message(void **state)
{
    psc_nccl_t nc;
    psc_ncclComm_t comms[2];
    char why[512];
    float buf[4] = {0};

    (void)state;
    load(&nc);
    assert_int_equal(psc__nccl_check(&nc, NULL, PSC_NCCL_SUCCESS, "ncclAllReduce", why, sizeof(why)), PSC_OK);
    assert_int_equal(nc.comm_init_all(comms, 2, NULL), PSC_NCCL_SUCCESS);
    psc_ncclResult_t rc = nc.all_reduce(buf, buf, 4, 42, PSC_OP_SUM, comms[0], NULL);
    assert_int_equal(rc, PSC_NCCL_INVALID_ARGUMENT);
    assert_int_equal(psc__nccl_check(&nc, comms[0], rc, "ncclAllReduce", why, sizeof(why)), PSC_ERR_INVALID);
    assert_non_null(strstr(why, "ncclAllReduce failed: invalid argument"));
    assert_non_null(strstr(why, "(fake libnccl: invalid data type)"));
    assert_int_equal(psc__nccl_check(&nc, comms[0], PSC_NCCL_IN_PROGRESS, "ncclGroupEnd", why, sizeof(why)),
                     PSC_ERR_TIMEOUT);
    assert_int_equal(psc__nccl_check(&nc, comms[0], PSC_NCCL_REMOTE_ERROR, "ncclGroupEnd", why, sizeof(why)),
                     PSC_ERR_DRIVER);
    assert_non_null(strstr(why, "remote process exited"));
    assert_int_equal(nc.comm_destroy(comms[0]), PSC_NCCL_SUCCESS);
    assert_int_equal(nc.comm_destroy(comms[1]), PSC_NCCL_SUCCESS);
    psc__nccl_unload(&nc);
}

/* ---------------------------------------------------------------- element values, computed here */

#define COUNT 5  /* per-rank count, as NCCL's count argument */
#define MAXR 3

static int is_unsigned(int dt)
{
    return dt == PSC_DT_UINT8 || dt == PSC_DT_UINT32 || dt == PSC_DT_UINT64;
}

/* Rank r's input element j: small integers, exact in every type; unsigned ones near 255 so sums wrap. */
static long long in_val(int dt, int r, size_t j)
{
    long long v = (long long)((j * 3 + (size_t)r * 5) % 11);
    return is_unsigned(dt) ? v + 245 : v - 5;
}

/* Integers to half and bfloat16 by their definition (exact: |v| < 2048, resp. < 256). */
static uint16_t int_to_half(long long v)
{
    uint16_t sign = v < 0 ? 0x8000 : 0;
    unsigned long long a = (unsigned long long)(v < 0 ? -v : v);
    int e = 0;

    if (a == 0)
        return sign;
    while ((a >> (e + 1)) != 0)
        e++;
    return (uint16_t)(sign | (unsigned)(e + 15) << 10 | (unsigned)((a << (10 - e)) & 0x3ff));
}

static uint16_t int_to_bf16(long long v)
{
    float f = (float)v;
    uint32_t x;

    memcpy(&x, &f, 4);
    assert_int_equal(x & 0xffff, 0);
    return (uint16_t)(x >> 16);
}

static void store(int dt, void *buf, size_t i, double v)
{
    switch (dt) {
    case PSC_DT_INT8:
    case PSC_DT_UINT8: ((uint8_t *)buf)[i] = (uint8_t)(long long)v; break;
    case PSC_DT_INT32:
    case PSC_DT_UINT32: ((uint32_t *)buf)[i] = (uint32_t)(long long)v; break;
    case PSC_DT_INT64:
    case PSC_DT_UINT64: ((uint64_t *)buf)[i] = (uint64_t)(long long)v; break;
    case PSC_DT_FLOAT16: ((uint16_t *)buf)[i] = int_to_half((long long)v); break;
    case PSC_DT_BFLOAT16: ((uint16_t *)buf)[i] = int_to_bf16((long long)v); break;
    case PSC_DT_FLOAT32: ((float *)buf)[i] = (float)v; break;
    default: ((double *)buf)[i] = v; break;
    }
}

static double reduce_vals(int dt, int op, int n, int j, size_t off)
{
    double acc = (double)in_val(dt, 0, off + (size_t)j);

    for (int r = 1; r < n; r++) {
        double v = (double)in_val(dt, r, off + (size_t)j);
        switch (op) {
        case PSC_OP_SUM:
        case PSC_OP_AVG: acc += v; break;
        case PSC_OP_PROD: acc *= v; break;
        case PSC_OP_MAX: acc = v > acc ? v : acc; break;
        default: acc = v < acc ? v : acc; break;
        }
    }
    if (op == PSC_OP_AVG) {
        if (dt == PSC_DT_FLOAT32 || dt == PSC_DT_FLOAT64)
            return acc / n; /* the cases tested are exact */
        return (double)((long long)acc / n); /* integers: truncated, as C divides */
    }
    return acc;
}

typedef struct {
    int coll, n, dt, op, inplace, native; /* native: ncclAlltoAll, else send/recv pairs */
} coll_case_t;

static void run_case(psc_nccl_t *nc, const coll_case_t *k, long long corrupt)
{
    int n = k->n, dt = k->dt, op = k->op;
    size_t ts = psc_dtype_size(dt), c = COUNT, total = c * (size_t)n;
    psc_ncclComm_t comms[MAXR];
    unsigned char *sendb[MAXR], *recvb[MAXR], *expect[MAXR];
    const void *sp[MAXR];
    void *rp[MAXR];
    int root = k->coll == PSC_COLL_BROADCAST ? n - 1 : 1;
    size_t in_elems = (k->coll == PSC_COLL_REDUCE_SCATTER || k->coll == PSC_COLL_ALL_TO_ALL) ? total : c;

    assert_int_equal(nc->comm_init_all(comms, n, NULL), PSC_NCCL_SUCCESS);
    for (int r = 0; r < n; r++) {
        sendb[r] = malloc(total * ts);
        recvb[r] = malloc(total * ts);
        expect[r] = malloc(total * ts);
        assert_non_null(sendb[r]);
        assert_non_null(recvb[r]);
        assert_non_null(expect[r]);
        memset(sendb[r], 0xa5, total * ts);
        memset(recvb[r], 0x5a, total * ts);
        sp[r] = sendb[r];
        rp[r] = recvb[r];
        if (k->inplace) { /* where NCCL's in-place form puts the input in the output buffer */
            sp[r] = recvb[r];
            if (k->coll == PSC_COLL_ALL_GATHER)
                sp[r] = recvb[r] + (size_t)r * c * ts;
            if (k->coll == PSC_COLL_REDUCE_SCATTER) {
                sp[r] = recvb[r];
                rp[r] = recvb[r] + (size_t)r * c * ts;
            }
        }
        for (size_t j = 0; j < in_elems; j++)
            store(dt, (void *)sp[r], j, (double)in_val(dt, r, j));
        memcpy(expect[r], recvb[r], total * ts); /* what is not written stays */
    }
    for (int r = 0; r < n; r++) {
        unsigned char *e = expect[r] + (size_t)((unsigned char *)rp[r] - recvb[r]);
        size_t outn = c;
        for (size_t j = 0; j < c; j++) {
            switch (k->coll) {
            case PSC_COLL_ALL_REDUCE: store(dt, e, j, reduce_vals(dt, op, n, (int)j, 0)); break;
            case PSC_COLL_REDUCE_SCATTER: store(dt, e, j, reduce_vals(dt, op, n, (int)j, (size_t)r * c)); break;
            case PSC_COLL_REDUCE:
                if (r == root)
                    store(dt, e, j, reduce_vals(dt, op, n, (int)j, 0));
                break;
            case PSC_COLL_BROADCAST: store(dt, e, j, (double)in_val(dt, root, j)); break;
            case PSC_COLL_SEND_RECV: store(dt, e, j, (double)in_val(dt, (r + n - 1) % n, j)); break;
            case PSC_COLL_ALL_GATHER:
                for (int q = 0; q < n; q++)
                    store(dt, e, (size_t)q * c + j, (double)in_val(dt, q, j));
                outn = total;
                break;
            case PSC_COLL_ALL_TO_ALL:
                for (int q = 0; q < n; q++)
                    store(dt, e, (size_t)q * c + j, (double)in_val(dt, q, (size_t)r * c + j));
                outn = total;
                break;
            }
        }
        if (corrupt >= 0 && (size_t)corrupt < outn && (k->coll != PSC_COLL_REDUCE || r == root))
            e[(size_t)corrupt * ts] ^= 1; /* one element wrong, as the fake is told */
    }

    assert_int_equal(nc->group_start(), PSC_NCCL_SUCCESS);
    for (int r = 0; r < n; r++) {
        psc_ncclResult_t rc = -1;
        switch (k->coll) {
        case PSC_COLL_ALL_REDUCE: rc = nc->all_reduce(sp[r], rp[r], c, dt, op, comms[r], NULL); break;
        case PSC_COLL_ALL_GATHER: rc = nc->all_gather(sp[r], rp[r], c, dt, comms[r], NULL); break;
        case PSC_COLL_REDUCE_SCATTER: rc = nc->reduce_scatter(sp[r], rp[r], c, dt, op, comms[r], NULL); break;
        case PSC_COLL_BROADCAST: rc = nc->broadcast(sp[r], rp[r], c, dt, root, comms[r], NULL); break;
        case PSC_COLL_REDUCE: rc = nc->reduce(sp[r], rp[r], c, dt, op, root, comms[r], NULL); break;
        case PSC_COLL_SEND_RECV:
            rc = nc->send(sp[r], c, dt, (r + 1) % n, comms[r], NULL);
            if (rc == PSC_NCCL_SUCCESS)
                rc = nc->recv(rp[r], c, dt, (r + n - 1) % n, comms[r], NULL);
            break;
        case PSC_COLL_ALL_TO_ALL:
            if (k->native) {
                rc = nc->all_to_all(sp[r], rp[r], c, dt, comms[r], NULL);
                break;
            }
            for (int q = 0; q < n; q++) { /* nccl-tests' loop (alltoall.cu) */
                rc = nc->send((const char *)sp[r] + (size_t)q * c * ts, c, dt, q, comms[r], NULL);
                if (rc == PSC_NCCL_SUCCESS)
                    rc = nc->recv((char *)rp[r] + (size_t)q * c * ts, c, dt, q, comms[r], NULL);
                assert_int_equal(rc, PSC_NCCL_SUCCESS);
            }
            break;
        }
        assert_int_equal(rc, PSC_NCCL_SUCCESS);
    }
    assert_int_equal(nc->group_end(), PSC_NCCL_SUCCESS);
    for (int r = 0; r < n; r++) {
        psc_ncclResult_t st = -1;
        assert_int_equal(nc->comm_get_async_error(comms[r], &st), PSC_NCCL_SUCCESS);
        assert_int_equal(st, PSC_NCCL_SUCCESS);
        if (memcmp(recvb[r], expect[r], total * ts) != 0)
            fail_msg("%s n=%d %s %s %s rank %d: wrong result", psc_coll_name(k->coll), n, psc_dtype_name(dt),
                     psc_redop_name(op) ? psc_redop_name(op) : "-", k->inplace ? "in place" : "out of place", r);
        if (!k->inplace) /* inputs untouched out of place */
            for (size_t j = 0; j < in_elems; j++) {
                unsigned char one[8];
                store(dt, one, 0, (double)in_val(dt, r, j));
                assert_memory_equal(sendb[r] + j * ts, one, ts);
            }
        assert_int_equal(nc->comm_destroy(comms[r]), PSC_NCCL_SUCCESS);
        free(sendb[r]);
        free(recvb[r]);
        free(expect[r]);
    }
}

static const struct {
    int dt, op;
} reductions[] = {
    {PSC_DT_INT32, PSC_OP_SUM}, {PSC_DT_FLOAT32, PSC_OP_SUM},  {PSC_DT_FLOAT16, PSC_OP_SUM},
    {PSC_DT_BFLOAT16, PSC_OP_MAX}, {PSC_DT_UINT8, PSC_OP_SUM}, {PSC_DT_UINT8, PSC_OP_PROD},
    {PSC_DT_INT8, PSC_OP_MIN},  {PSC_DT_FLOAT64, PSC_OP_PROD}, {PSC_DT_INT32, PSC_OP_AVG},
    {PSC_DT_UINT64, PSC_OP_MAX}, {PSC_DT_INT64, PSC_OP_PROD},  {PSC_DT_UINT32, PSC_OP_MIN},
};

static void test_collectives(void **state)
{
    psc_nccl_t nc;

    (void)state;
    load(&nc);
    for (int n = 2; n <= MAXR; n++)
        for (int inplace = 0; inplace < 2; inplace++) {
            for (size_t i = 0; i < sizeof(reductions) / sizeof(reductions[0]); i++)
                for (int coll = PSC_COLL_ALL_REDUCE; coll <= PSC_COLL_REDUCE; coll++) {
                    coll_case_t k = {coll, n, reductions[i].dt, reductions[i].op, inplace, 0};
                    if (coll == PSC_COLL_ALL_GATHER || coll == PSC_COLL_BROADCAST)
                        k.op = -1;
                    run_case(&nc, &k, -1);
                }
            for (int dt = 0; dt < PSC_DT_N; dt++) {
                coll_case_t a2a = {PSC_COLL_ALL_TO_ALL, n, dt, -1, inplace, 0};
                coll_case_t sr = {PSC_COLL_SEND_RECV, n, dt, -1, inplace, 0};
                run_case(&nc, &a2a, -1);
                a2a.native = 1;
                run_case(&nc, &a2a, -1);
                run_case(&nc, &sr, -1);
            }
        }
    /* float avg where it is exact: two ranks */
    coll_case_t avg = {PSC_COLL_ALL_REDUCE, 2, PSC_DT_FLOAT32, PSC_OP_AVG, 0, 0};
    run_case(&nc, &avg, -1);
    psc__nccl_unload(&nc);
}

/* Half and bfloat16 are rounded to nearest even after each rank's addition. */
static void test_half_rounding(void **state)
{
    static const struct {
        int dt;
        uint16_t in[3];
        int n;
        uint16_t out;
    } cases[] = {
        {PSC_DT_FLOAT16, {0x6800, 0x3c00}, 2, 0x6800},          /* 2048 + 1: a tie, to even 2048 */
        {PSC_DT_FLOAT16, {0x6800, 0x4200}, 2, 0x6802},          /* 2048 + 3: a tie, to even 2052 */
        {PSC_DT_FLOAT16, {0x6800, 0x3c00, 0x3c00}, 3, 0x6800},  /* rounded each step: not 2050 */
        {PSC_DT_BFLOAT16, {0x4380, 0x3f80}, 2, 0x4380},         /* 256 + 1 -> 256 */
        {PSC_DT_BFLOAT16, {0x4380, 0x4040}, 2, 0x4382},         /* 256 + 3 -> 260 */
    };
    psc_nccl_t nc;

    (void)state;
    load(&nc);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        psc_ncclComm_t comms[3];
        uint16_t buf[3];
        memcpy(buf, cases[i].in, sizeof(buf));
        assert_int_equal(nc.comm_init_all(comms, cases[i].n, NULL), PSC_NCCL_SUCCESS);
        assert_int_equal(nc.group_start(), PSC_NCCL_SUCCESS);
        for (int r = 0; r < cases[i].n; r++)
            assert_int_equal(nc.all_reduce(&buf[r], &buf[r], 1, cases[i].dt, PSC_OP_SUM, comms[r], NULL), 0);
        assert_int_equal(nc.group_end(), PSC_NCCL_SUCCESS);
        for (int r = 0; r < cases[i].n; r++) {
            assert_int_equal(buf[r], cases[i].out);
            nc.comm_destroy(comms[r]);
        }
    }
    psc__nccl_unload(&nc);
}

/* Calls outside a group complete when the last rank has made its call. */
static void test_no_group(void **state)
{
    psc_nccl_t nc;
    psc_ncclComm_t comms[2];
    int32_t in[2] = {7, 35}, out[2] = {0, 0};
    psc_ncclResult_t st = -1;

    (void)state;
    load(&nc);
    assert_int_equal(nc.comm_init_all(comms, 2, NULL), PSC_NCCL_SUCCESS);
    assert_int_equal(nc.all_reduce(&in[0], &out[0], 1, PSC_DT_INT32, PSC_OP_SUM, comms[0], NULL), 0);
    assert_int_equal(nc.comm_get_async_error(comms[0], &st), PSC_NCCL_SUCCESS);
    assert_int_equal(st, PSC_NCCL_IN_PROGRESS); /* its peer has not called yet */
    assert_int_equal(out[0], 0);
    assert_int_equal(nc.all_reduce(&in[1], &out[1], 1, PSC_DT_INT32, PSC_OP_SUM, comms[1], NULL), 0);
    assert_int_equal(nc.comm_get_async_error(comms[0], &st), PSC_NCCL_SUCCESS);
    assert_int_equal(st, PSC_NCCL_SUCCESS);
    assert_int_equal(out[0], 42);
    assert_int_equal(out[1], 42);
    nc.comm_destroy(comms[0]);
    nc.comm_destroy(comms[1]);
    psc__nccl_unload(&nc);
}

static void test_corrupt_hook(void **state)
{
    psc_nccl_t nc;

    (void)state;
    load(&nc);
    setenv("FAKE_NCCL_CORRUPT", "2", 1);
    for (int coll = PSC_COLL_ALL_REDUCE; coll < PSC_COLL_N; coll++) {
        coll_case_t k = {coll, 3, PSC_DT_FLOAT32, PSC_OP_SUM, 0, 1};
        run_case(&nc, &k, 2);
    }
    unsetenv("FAKE_NCCL_CORRUPT");
    psc__nccl_unload(&nc);
}

/* ---------------------------------------------------------------- ranks in threads, hangs, aborts */

typedef struct {
    psc_nccl_t *nc;
    psc_ncclUniqueId id;
    int n, rank;
    psc_ncclComm_t comm;
    int32_t in, out;
    psc_ncclResult_t init_rc, rc;
    int keep;               /* keep the comm (for the caller to abort) */
    psc_ncclComm_t published; /* comm, once made (under g_pub) */
} rank_t;

static pthread_mutex_t g_pub = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_pub_cv = PTHREAD_COND_INITIALIZER;

static void *rank_main(void *arg)
{
    rank_t *t = arg;

    t->init_rc = t->nc->comm_init_rank(&t->comm, t->n, t->id, t->rank);
    if (t->init_rc != PSC_NCCL_SUCCESS)
        return NULL;
    pthread_mutex_lock(&g_pub);
    t->published = t->comm;
    pthread_cond_broadcast(&g_pub_cv);
    pthread_mutex_unlock(&g_pub);
    t->rc = t->nc->all_reduce(&t->in, &t->out, 1, PSC_DT_INT32, PSC_OP_SUM, t->comm, NULL);
    if (!t->keep)
        t->nc->comm_destroy(t->comm);
    return NULL;
}

static void test_threaded_ranks(void **state)
{
    psc_nccl_t nc;
    rank_t t[3];
    pthread_t th[3];
    psc_ncclUniqueId id;

    (void)state;
    load(&nc);
    assert_int_equal(nc.get_unique_id(&id), PSC_NCCL_SUCCESS);
    for (int r = 0; r < 3; r++) {
        t[r] = (rank_t){.nc = &nc, .id = id, .n = 3, .rank = r, .in = 10 * (r + 1), .out = -1, .rc = -1};
        assert_int_equal(pthread_create(&th[r], NULL, rank_main, &t[r]), 0);
    }
    for (int r = 0; r < 3; r++) {
        assert_int_equal(pthread_join(th[r], NULL), 0);
        assert_int_equal(t[r].init_rc, PSC_NCCL_SUCCESS);
        assert_int_equal(t[r].rc, PSC_NCCL_SUCCESS);
        assert_int_equal(t[r].out, 60); /* each returned only once the collective was done */
    }
    psc__nccl_unload(&nc);
}

static void test_hang_single_thread(void **state)
{
    psc_nccl_t nc;
    psc_ncclComm_t comms[2];
    float buf[2][4] = {{1, 2, 3, 4}, {5, 6, 7, 8}};
    psc_ncclResult_t st = -1;

    (void)state;
    load(&nc);
    setenv("FAKE_NCCL_HANG", "1", 1);
    assert_int_equal(nc.comm_init_all(comms, 2, NULL), PSC_NCCL_SUCCESS);
    assert_int_equal(nc.group_start(), PSC_NCCL_SUCCESS);
    for (int r = 0; r < 2; r++)
        assert_int_equal(nc.all_reduce(buf[r], buf[r], 4, PSC_DT_FLOAT32, PSC_OP_SUM, comms[r], NULL), 0);
    assert_int_equal(nc.group_end(), PSC_NCCL_SUCCESS);
    for (int r = 0; r < 2; r++) {
        assert_int_equal(nc.comm_get_async_error(comms[r], &st), PSC_NCCL_SUCCESS);
        assert_int_equal(st, PSC_NCCL_IN_PROGRESS);
    }
    assert_true(buf[0][0] == 1.0f && buf[1][3] == 8.0f); /* never done */
    unsetenv("FAKE_NCCL_HANG");
    assert_int_equal(nc.comm_abort(comms[0]), PSC_NCCL_SUCCESS);
    assert_int_equal(nc.comm_abort(comms[1]), PSC_NCCL_SUCCESS);
    psc__nccl_unload(&nc);
}

/* A blocking rank hung in its call returns once another thread aborts its communicator. */
static void test_abort_ends_hung_call(void **state)
{
    psc_nccl_t nc;
    psc_ncclUniqueId id;
    rank_t t[2];
    pthread_t th[2];
    psc_ncclResult_t st = PSC_NCCL_SUCCESS;

    (void)state;
    load(&nc);
    setenv("FAKE_NCCL_HANG", "1", 1);
    assert_int_equal(nc.get_unique_id(&id), PSC_NCCL_SUCCESS);
    for (int r = 0; r < 2; r++) {
        t[r] = (rank_t){.nc = &nc, .id = id, .n = 2, .rank = r, .in = 1, .out = -1, .rc = -1, .keep = 1};
        assert_int_equal(pthread_create(&th[r], NULL, rank_main, &t[r]), 0);
    }
    /* each rank's call is in: its communicator reports the collective in progress */
    psc_ncclComm_t comm[2];
    for (int r = 0; r < 2; r++) {
        pthread_mutex_lock(&g_pub);
        while (!t[r].published)
            pthread_cond_wait(&g_pub_cv, &g_pub);
        comm[r] = t[r].published;
        pthread_mutex_unlock(&g_pub);
        do {
            assert_int_equal(nc.comm_get_async_error(comm[r], &st), PSC_NCCL_SUCCESS);
            sched_yield();
        } while (st != PSC_NCCL_IN_PROGRESS);
        st = PSC_NCCL_SUCCESS;
    }
    for (int r = 0; r < 2; r++) {
        assert_int_equal(nc.comm_abort(comm[r]), PSC_NCCL_SUCCESS);
        assert_int_equal(pthread_join(th[r], NULL), 0);
        assert_int_not_equal(t[r].rc, PSC_NCCL_SUCCESS);
        assert_int_equal(t[r].out, -1);
    }
    unsetenv("FAKE_NCCL_HANG");
    psc__nccl_unload(&nc);
}

/* Non-blocking communicators: ncclInProgress until done; a peer aborted ends the wait with an error. */
static void test_nonblocking(void **state)
{
    psc_nccl_t nc;
    psc_ncclUniqueId id;
    psc_ncclConfig_t cfg;
    psc_ncclComm_t c0, c1;
    psc_ncclResult_t st = -1;
    int32_t a = 3, b = 4, o0 = 0, o1 = 0;

    (void)state;
    load(&nc);
    psc__nccl_config_init(&cfg, 0, nc.version);
    assert_int_equal(cfg.size, sizeof(cfg));
    assert_int_equal(cfg.magic, 0xcafebeefu);
    assert_int_equal(cfg.blocking, 0);
    /* NCCL's own layout: nvlinkCentricSched (2.28) after 13 ints and 2 pointers, set only for a 2.28 library */
    assert_int_equal(offsetof(psc_ncclConfig_t, nvlinkCentricSched), 76);
    assert_int_equal(cfg.version, nc.version >= 22800 ? 22800u : 21400u);
    assert_int_equal(cfg.nvlinkCentricSched, nc.version >= 22800 ? 1 : (int)PSC_NCCL_CONFIG_UNDEF_INT);
    assert_int_equal(cfg.minCTAs, (int)PSC_NCCL_CONFIG_UNDEF_INT);
    assert_int_equal(nc.get_unique_id(&id), PSC_NCCL_SUCCESS);
    assert_int_equal(nc.comm_init_rank_config(&c0, 2, id, 0, &cfg), PSC_NCCL_IN_PROGRESS);
    assert_int_equal(nc.comm_get_async_error(c0, &st), PSC_NCCL_SUCCESS);
    assert_int_equal(st, PSC_NCCL_IN_PROGRESS);
    assert_int_equal(nc.comm_init_rank_config(&c1, 2, id, 1, &cfg), PSC_NCCL_SUCCESS);
    assert_int_equal(nc.comm_get_async_error(c0, &st), PSC_NCCL_SUCCESS);
    assert_int_equal(st, PSC_NCCL_SUCCESS);

    assert_int_equal(nc.all_reduce(&a, &o0, 1, PSC_DT_INT32, PSC_OP_PROD, c0, NULL), PSC_NCCL_IN_PROGRESS);
    assert_int_equal(nc.all_reduce(&b, &o1, 1, PSC_DT_INT32, PSC_OP_PROD, c1, NULL), PSC_NCCL_SUCCESS);
    assert_int_equal(nc.comm_get_async_error(c0, &st), PSC_NCCL_SUCCESS);
    assert_int_equal(st, PSC_NCCL_SUCCESS);
    assert_int_equal(o0, 12);
    assert_int_equal(o1, 12);

    /* the next one: rank 1 goes away instead of calling */
    assert_int_equal(nc.all_reduce(&a, &o0, 1, PSC_DT_INT32, PSC_OP_SUM, c0, NULL), PSC_NCCL_IN_PROGRESS);
    assert_int_equal(nc.comm_abort(c1), PSC_NCCL_SUCCESS);
    assert_int_equal(nc.comm_get_async_error(c0, &st), PSC_NCCL_SUCCESS);
    assert_int_equal(st, PSC_NCCL_REMOTE_ERROR);
    assert_int_equal(o0, 12);
    assert_int_equal(nc.comm_abort(c0), PSC_NCCL_SUCCESS);

    /* a config without NCCL's magic is refused */
    cfg.magic = 0;
    assert_int_equal(nc.get_unique_id(&id), PSC_NCCL_SUCCESS);
    assert_int_equal(nc.comm_init_rank_config(&c0, 1, id, 0, &cfg), PSC_NCCL_INVALID_ARGUMENT);
    psc__nccl_unload(&nc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load_fake),
        cmocka_unit_test(test_version_string),
        cmocka_unit_test(test_missing_library),
        cmocka_unit_test(test_missing_symbol),
        cmocka_unit_test(test_old_versions),
        cmocka_unit_test(test_check_message),
        cmocka_unit_test(test_collectives),
        cmocka_unit_test(test_half_rounding),
        cmocka_unit_test(test_no_group),
        cmocka_unit_test(test_corrupt_hook),
        cmocka_unit_test(test_threaded_ranks),
        cmocka_unit_test(test_hang_single_thread),
        cmocka_unit_test(test_abort_ends_hung_call),
        cmocka_unit_test(test_nonblocking),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
