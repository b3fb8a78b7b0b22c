/*
 * A stand-in for libnccl.so.2 for tests without a GPU. Its collectives really
 * happen, on the fake CUDA driver's device memory, which is host memory
 * (tests/unit/fake_libcuda.c: a CUdeviceptr is a host address), so a test can
 * check every element. The declarations are its own, numbered as nccl.h
 * numbers them, so the loader's own are checked against an independent copy.
 *
 * Ranks live in this process: ncclCommInitAll makes n of them for one
 * thread; ncclCommInitRank with an id from ncclGetUniqueId joins one rank
 * (of any thread) to the others with that id. Each rank's call is recorded,
 * with a copy of its input taken when the call is made; a collective is
 * performed when every rank of the communicator has made its call (at
 * ncclGroupEnd for calls made inside a group, else at once), and a send when
 * the matching receive is posted (sends of a group are posted before its
 * receives, so in-place exchanges are right). Outputs: sums, products,
 * maxima, minima in rank order, in the type's own arithmetic (integers wrap;
 * half and bfloat16 are computed in float and rounded to nearest even after
 * each step, as NCCL's device code does); avg is NCCL's: for floating types
 * each input times (T)(1/n) summed, for integers the sum divided by n.
 *
 * When a call returns: a rank made by ncclCommInitRank with a blocking
 * config (the default) waits, in its call or in ncclGroupEnd, until its
 * operations are done, as a barrier per collective; one made by
 * ncclCommInitAll does not (its peers are driven by the same thread) and a
 * non-blocking one (ncclCommInitRankConfig, blocking 0) answers ncclInProgress.
 * ncclCommGetAsyncError answers ncclInProgress while a rank's operations are
 * not done, ncclRemoteError once a peer was aborted or destroyed with
 * operations pending, else ncclSuccess.
 *
 * The environment:
 *   FAKE_NCCL_VERSION   ncclGetVersion's code (default 22807, 2.28.7); below 21400
 *                       ncclCommInitRankConfig and ncclCommFinalize are absent, below
 *                       21300 ncclGetLastError, below 22800 ncclAlltoAll
 *   FAKE_NCCL_MODE      nosym: ncclCommAbort is absent (a required symbol)
 *   FAKE_NCCL_HANG=1    collectives and sends never complete: a blocking rank of
 *                       ncclCommInitRank waits in its call until ncclCommAbort
 *                       (from another thread); ncclCommGetAsyncError answers
 *                       ncclInProgress until then
 *   FAKE_NCCL_CORRUPT=i element i of every output is wrong (its lowest bit
 *                       flipped): each rank's result, the root's for reduce, each
 *                       receive's for ncclRecv
 * Ranks in several processes are not supported (ncclCommInitRank answers
 * ncclSystemError for an id from another process).
 */
#define _GNU_SOURCE
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FAKE_EXPORT __attribute__((visibility("default")))

typedef int ncclResult_t;
enum {
    ncclSuccess = 0,
    ncclUnhandledCudaError = 1,
    ncclSystemError = 2,
    ncclInternalError = 3,
    ncclInvalidArgument = 4,
    ncclInvalidUsage = 5,
    ncclRemoteError = 6,
    ncclInProgress = 7,
};
typedef int ncclDataType_t;
enum {
    ncclInt8 = 0, ncclUint8 = 1, ncclInt32 = 2, ncclUint32 = 3, ncclInt64 = 4,
    ncclUint64 = 5, ncclFloat16 = 6, ncclFloat32 = 7, ncclFloat64 = 8, ncclBfloat16 = 9,
    fakeNumTypes = 10
};
typedef int ncclRedOp_t;
enum { ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3, ncclAvg = 4, fakeNumOps = 5 };

typedef struct {
    char internal[128];
} ncclUniqueId;

typedef struct {
    size_t size;
    unsigned int magic;
    unsigned int version;
    int blocking;
} fake_config_prefix;

typedef struct fake_comm *ncclComm_t;
typedef void *cudaStream_t;

enum { K_ALLREDUCE, K_ALLGATHER, K_REDUCESCATTER, K_BROADCAST, K_REDUCE, K_ALLTOALL, K_SEND, K_RECV, K_INIT };

struct fake_args {
    int kind;
    const void *send;
    void *recv;
    size_t count;
    int dtype, op, root, peer;
};

struct fake_round { /* one collective, its ranks' calls as they come */
    uint64_t seq;
    int arrived;
    struct fake_args *a;   /* [nranks] */
    void **snap;           /* [nranks] copies of the inputs */
    struct fake_comm **comm;
    struct fake_round *next;
};

struct fake_p2p { /* a send or receive waiting for its match */
    struct fake_comm *comm;
    struct fake_args a;
    void *snap;            /* sends: the data */
    struct fake_p2p *next;
};

struct fake_clique {
    ncclUniqueId id;
    int nranks, joined, refs;
    int broken;            /* a rank went away with operations pending: the rest fail */
    struct fake_comm **ranks;
    struct fake_round *rounds;
    struct fake_p2p *p2p;
    struct fake_clique *next;
};

struct fake_comm {
    struct fake_clique *cl;
    int rank, dev;
    int threaded;          /* made by ncclCommInitRank: its thread may wait for peers */
    int blocking;
    uint64_t seq;          /* collectives issued */
    long outstanding;      /* operations issued and not done */
    int hung, aborted, inside;
    ncclResult_t error;    /* an operation failed (sticky) */
};

struct fake_gcall {
    struct fake_comm *comm;
    struct fake_args a;
    struct fake_gcall *next;
};

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
static struct fake_clique *g_cliques;
static char g_last[256];
static unsigned long g_idcount;
static _Thread_local int t_depth;
static _Thread_local struct fake_gcall *t_head, *t_tail;

static int fake_version(void)
{
    const char *v = getenv("FAKE_NCCL_VERSION");
    return v && *v ? atoi(v) : 22807;
}

static int fake_env_int(const char *name, long long *out)
{
    const char *v = getenv(name);
    char *end;

    if (!v || !*v)
        return 0;
    *out = strtoll(v, &end, 10);
    return *end == '\0';
}

static void fake_fail(const char *msg) /* under g_mu */
{
    snprintf(g_last, sizeof(g_last), "fake libnccl: %s", msg);
}

static size_t fake_tsize(int dt)
{
    static const unsigned char s[fakeNumTypes] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2};
    return dt >= 0 && dt < fakeNumTypes ? s[dt] : 0;
}

/* ---------------------------------------------------------------- arithmetic */

static float fake_h2f(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff, x;
    float f;

    if (e == 0) {
        f = (float)m * (1.0f / 16777216.0f); /* subnormal: m * 2^-24, exact */
        return sign ? -f : f;
    }
    if (e == 31)
        x = sign | 0x7f800000u | (m << 13);
    else
        x = sign | ((e - 15 + 127) << 23) | (m << 13);
    memcpy(&f, &x, 4);
    return f;
}

static uint16_t fake_f2h(float f) /* round to nearest even */
{
    uint32_t x, sign, exp, man, h, rem, halfway;
    int e, shift;

    memcpy(&x, &f, 4);
    sign = (x >> 16) & 0x8000u;
    exp = (x >> 23) & 0xff;
    man = x & 0x7fffffu;
    if (exp == 0xff)
        return (uint16_t)(sign | 0x7c00u | (man ? 0x200u : 0));
    e = (int)exp - 127 + 15;
    if (e >= 31)
        return (uint16_t)(sign | 0x7c00u);
    if (e <= 0) {
        if (e < -10)
            return (uint16_t)sign;
        man |= 0x800000u;
        shift = 14 - e;
        h = man >> shift;
        rem = man & ((1u << shift) - 1);
        halfway = 1u << (shift - 1);
        if (rem > halfway || (rem == halfway && (h & 1)))
            h++;
        return (uint16_t)(sign | h);
    }
    h = ((uint32_t)e << 10) | (man >> 13);
    rem = man & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1)))
        h++; /* a carry moves into the exponent, and up to infinity, as it should */
    return (uint16_t)(sign | h);
}

static float fake_b2f(uint16_t b)
{
    uint32_t x = (uint32_t)b << 16;
    float f;

    memcpy(&f, &x, 4);
    return f;
}

static uint16_t fake_f2b(float f)
{
    uint32_t x;

    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

/* Integers as 64-bit patterns: wrapping sums and products are the same modulo the type's width. */
static uint64_t fake_ld_u(int dt, const void *p, size_t i)
{
    switch (dt) {
    case ncclInt8: return (uint64_t)(int64_t)((const int8_t *)p)[i];
    case ncclUint8: return ((const uint8_t *)p)[i];
    case ncclInt32: return (uint64_t)(int64_t)((const int32_t *)p)[i];
    case ncclUint32: return ((const uint32_t *)p)[i];
    case ncclInt64: return (uint64_t)((const int64_t *)p)[i];
    default: return ((const uint64_t *)p)[i];
    }
}

static void fake_st_u(int dt, void *p, size_t i, uint64_t v)
{
    switch (dt) {
    case ncclInt8:
    case ncclUint8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case ncclInt32:
    case ncclUint32: ((uint32_t *)p)[i] = (uint32_t)v; break;
    default: ((uint64_t *)p)[i] = v; break;
    }
}

static int fake_signed(int dt)
{
    return dt == ncclInt8 || dt == ncclInt32 || dt == ncclInt64;
}

/* Sign-extend the low bits of a wrapped value to the type's width. */
static int64_t fake_sext(int dt, uint64_t v)
{
    switch (dt) {
    case ncclInt8: return (int8_t)(uint8_t)v;
    case ncclInt32: return (int32_t)(uint32_t)v;
    default: return (int64_t)v;
    }
}

static uint64_t fake_trunc(int dt, uint64_t v)
{
    size_t s = fake_tsize(dt);
    return s == 8 ? v : v & ((1ull << (8 * s)) - 1);
}

static uint64_t fake_int_op(int dt, int op, uint64_t a, uint64_t b)
{
    switch (op) {
    case ncclSum:
    case ncclAvg: return a + b;
    case ncclProd: return a * b;
    case ncclMax:
        if (fake_signed(dt))
            return fake_sext(dt, a) > fake_sext(dt, b) ? a : b;
        return fake_trunc(dt, a) > fake_trunc(dt, b) ? a : b;
    default:
        if (fake_signed(dt))
            return fake_sext(dt, a) < fake_sext(dt, b) ? a : b;
        return fake_trunc(dt, a) < fake_trunc(dt, b) ? a : b;
    }
}

static float fake_round_f(int dt, float v) /* to the type's precision */
{
    if (dt == ncclFloat16)
        return fake_h2f(fake_f2h(v));
    if (dt == ncclBfloat16)
        return fake_b2f(fake_f2b(v));
    return v;
}

static float fake_ld_f(int dt, const void *p, size_t i)
{
    if (dt == ncclFloat16)
        return fake_h2f(((const uint16_t *)p)[i]);
    if (dt == ncclBfloat16)
        return fake_b2f(((const uint16_t *)p)[i]);
    return ((const float *)p)[i];
}

static void fake_st_f(int dt, void *p, size_t i, float v)
{
    if (dt == ncclFloat16)
        ((uint16_t *)p)[i] = fake_f2h(v);
    else if (dt == ncclBfloat16)
        ((uint16_t *)p)[i] = fake_f2b(v);
    else
        ((float *)p)[i] = v;
}

static float fake_flt_op(int dt, int op, float a, float b)
{
    float r;

    switch (op) {
    case ncclSum:
    case ncclAvg: r = a + b; break;
    case ncclProd: r = a * b; break;
    case ncclMax: r = a > b ? a : b; break;
    default: r = a < b ? a : b; break;
    }
    return fake_round_f(dt, r);
}

static double fake_dbl_op(int op, double a, double b)
{
    switch (op) {
    case ncclSum:
    case ncclAvg: return a + b;
    case ncclProd: return a * b;
    case ncclMax: return a > b ? a : b;
    default: return a < b ? a : b;
    }
}

/* dst[i] = op over the n inputs' element (off + i), for count elements. */
static void fake_reduce(int dt, int op, int n, void *const *in, size_t off, void *dst, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        size_t j = off + i;
        if (dt == ncclFloat64) {
            double scale = 1.0 / n, acc = ((const double *)in[0])[j];
            if (op == ncclAvg)
                acc *= scale;
            for (int r = 1; r < n; r++) {
                double v = ((const double *)in[r])[j];
                acc = fake_dbl_op(op, acc, op == ncclAvg ? v * scale : v);
            }
            ((double *)dst)[i] = acc;
        } else if (dt == ncclFloat32 || dt == ncclFloat16 || dt == ncclBfloat16) {
            float scale = fake_round_f(dt, 1.0f / (float)n), acc = fake_ld_f(dt, in[0], j);
            if (op == ncclAvg)
                acc = fake_round_f(dt, acc * scale);
            for (int r = 1; r < n; r++) {
                float v = fake_ld_f(dt, in[r], j);
                acc = fake_flt_op(dt, op, acc, op == ncclAvg ? fake_round_f(dt, v * scale) : v);
            }
            fake_st_f(dt, dst, i, acc);
        } else {
            uint64_t acc = fake_ld_u(dt, in[0], j);
            for (int r = 1; r < n; r++)
                acc = fake_int_op(dt, op, acc, fake_ld_u(dt, in[r], j));
            if (op == ncclAvg) {
                if (fake_signed(dt))
                    acc = (uint64_t)(fake_sext(dt, acc) / n);
                else
                    acc = fake_trunc(dt, acc) / (uint64_t)n;
            }
            fake_st_u(dt, dst, i, acc);
        }
    }
}

static void fake_corrupt(void *buf, size_t elems, int dt)
{
    long long idx;

    if (!buf || !fake_env_int("FAKE_NCCL_CORRUPT", &idx) || idx < 0 || (size_t)idx >= elems)
        return;
    ((unsigned char *)buf)[(size_t)idx * fake_tsize(dt)] ^= 1u; /* little-endian: the lowest bit */
}

/* ---------------------------------------------------------------- operations */

/* Elements of a rank's input that the operation reads. */
static size_t fake_in_elems(const struct fake_args *a, int nranks)
{
    switch (a->kind) {
    case K_REDUCESCATTER:
    case K_ALLTOALL: return a->count * (size_t)nranks;
    case K_RECV: return 0;
    default: return a->count;
    }
}

static void *fake_snapshot(const struct fake_args *a, int rank, int nranks)
{
    size_t bytes = fake_in_elems(a, nranks) * fake_tsize(a->dtype);
    void *s;

    if (a->kind == K_BROADCAST && rank != a->root)
        return NULL;
    s = malloc(bytes ? bytes : 1);
    if (s && bytes)
        memcpy(s, a->send, bytes);
    return s;
}

static void fake_done(struct fake_comm *c) /* under g_mu */
{
    if (c && c->outstanding > 0)
        c->outstanding--;
}

static void fake_round_free(struct fake_round *rd, int n)
{
    for (int r = 0; r < n; r++)
        free(rd->snap[r]);
    free(rd->snap);
    free(rd->a);
    free(rd->comm);
    free(rd);
}

static void fake_perform(struct fake_clique *cl, struct fake_round *rd)
{
    int n = cl->nranks;
    const struct fake_args *a0 = &rd->a[0];
    size_t c = a0->count, ts = fake_tsize(a0->dtype);
    int dt = a0->dtype;

    for (int r = 1; r < n; r++) {
        const struct fake_args *a = &rd->a[r];
        if (a->kind != a0->kind || a->count != c || a->dtype != dt || a->op != a0->op || a->root != a0->root) {
            fake_fail("the ranks called different collectives (kind, count, type, op or root differ)");
            for (int k = 0; k < n; k++)
                if (rd->comm[k])
                    rd->comm[k]->error = ncclInvalidUsage;
            return;
        }
    }
    for (int r = 0; r < n; r++) {
        void *out = rd->a[r].recv;
        size_t elems = c;

        switch (a0->kind) {
        case K_ALLREDUCE: fake_reduce(dt, a0->op, n, rd->snap, 0, out, c); break;
        case K_REDUCESCATTER: fake_reduce(dt, a0->op, n, rd->snap, (size_t)r * c, out, c); break;
        case K_REDUCE:
            if (r != a0->root)
                continue;
            fake_reduce(dt, a0->op, n, rd->snap, 0, out, c);
            break;
        case K_BROADCAST: memcpy(out, rd->snap[a0->root], c * ts); break;
        case K_ALLGATHER:
            for (int k = 0; k < n; k++)
                memcpy((char *)out + (size_t)k * c * ts, rd->snap[k], c * ts);
            elems = c * (size_t)n;
            break;
        case K_ALLTOALL:
            for (int k = 0; k < n; k++)
                memcpy((char *)out + (size_t)k * c * ts, (const char *)rd->snap[k] + (size_t)r * c * ts, c * ts);
            elems = c * (size_t)n;
            break;
        default: break;
        }
        fake_corrupt(out, elems, dt);
    }
}

/* Post one operation of comm c (under g_mu). */
static ncclResult_t fake_post(struct fake_comm *c, const struct fake_args *a)
{
    struct fake_clique *cl = c->cl;
    int n = cl->nranks;

    if (c->aborted || cl->broken) {
        fake_fail("a rank of this communicator was aborted");
        return ncclRemoteError;
    }
    if (getenv("FAKE_NCCL_HANG") && strcmp(getenv("FAKE_NCCL_HANG"), "1") == 0) {
        c->hung = 1;
        return ncclSuccess;
    }
    if (a->kind == K_SEND || a->kind == K_RECV) {
        struct fake_p2p **pp, *m;
        int want = a->kind == K_SEND ? K_RECV : K_SEND;

        for (pp = &cl->p2p; *pp; pp = &(*pp)->next)
            if ((*pp)->a.kind == want && (*pp)->comm->rank == a->peer && (*pp)->a.peer == c->rank)
                break;
        m = *pp;
        c->outstanding++;
        if (m) {
            const struct fake_args *s = a->kind == K_SEND ? a : &m->a, *r = a->kind == K_SEND ? &m->a : a;
            const void *data = a->kind == K_SEND ? a->send : m->snap;
            if (s->count != r->count || s->dtype != r->dtype) {
                fake_fail("a send and its receive differ in count or type");
                c->error = m->comm->error = ncclInvalidUsage;
            } else {
                memcpy(r->recv, data, s->count * fake_tsize(s->dtype));
                fake_corrupt(r->recv, r->count, r->dtype);
            }
            fake_done(c);
            fake_done(m->comm);
            *pp = m->next;
            free(m->snap);
            free(m);
            return ncclSuccess;
        }
        m = calloc(1, sizeof(*m));
        if (!m || (a->kind == K_SEND && !(m->snap = fake_snapshot(a, c->rank, n)))) {
            free(m);
            c->outstanding--;
            fake_fail("out of memory");
            return ncclSystemError;
        }
        m->comm = c;
        m->a = *a;
        *pp = m; /* at the end: matches are made in posting order */
        return ncclSuccess;
    }

    /* a collective: the round of this rank's next sequence number */
    struct fake_round *rd, **rp;
    uint64_t seq = c->seq++;

    for (rp = &cl->rounds; *rp && (*rp)->seq != seq; rp = &(*rp)->next)
        ;
    rd = *rp;
    if (!rd) {
        rd = calloc(1, sizeof(*rd));
        if (!rd || !(rd->a = calloc((size_t)n, sizeof(*rd->a))) || !(rd->snap = calloc((size_t)n, sizeof(void *))) ||
            !(rd->comm = calloc((size_t)n, sizeof(void *)))) {
            if (rd) {
                free(rd->a);
                free(rd->snap);
                free(rd);
            }
            fake_fail("out of memory");
            return ncclSystemError;
        }
        rd->seq = seq;
        *rp = rd;
    }
    rd->a[c->rank] = *a;
    rd->comm[c->rank] = c;
    rd->snap[c->rank] = fake_snapshot(a, c->rank, n);
    if (!rd->snap[c->rank] && !(a->kind == K_BROADCAST && c->rank != a->root)) {
        c->error = ncclSystemError;
        fake_fail("out of memory");
    }
    rd->arrived++;
    c->outstanding++;
    if (rd->arrived == n) {
        fake_perform(cl, rd);
        for (int r = 0; r < n; r++)
            fake_done(rd->comm[r]);
        *rp = rd->next;
        fake_round_free(rd, n);
    }
    return ncclSuccess;
}

/* How a call of comm c ends once its operations are posted (under g_mu). */
static ncclResult_t fake_finish(struct fake_comm *c)
{
    for (;;) {
        if (c->aborted) {
            fake_fail("the communicator was aborted during the call");
            return ncclSystemError;
        }
        if (c->error)
            return c->error;
        if (c->cl->broken) {
            fake_fail("a rank of this communicator was aborted");
            return ncclRemoteError;
        }
        if (c->outstanding == 0 && !c->hung && c->cl->joined == c->cl->nranks)
            return ncclSuccess;
        if (!c->blocking)
            return ncclInProgress;
        if (!c->threaded)
            return ncclSuccess; /* the peers are this thread's own: they complete it */
        pthread_cond_wait(&g_cv, &g_mu);
    }
}

static ncclResult_t fake_check_args(struct fake_comm *c, const struct fake_args *a)
{
    int n;

    if (!c) {
        fake_fail("NULL communicator");
        return ncclInvalidArgument;
    }
    n = c->cl->nranks;
    if (a->kind == K_INIT)
        return ncclSuccess;
    if (!fake_tsize(a->dtype)) {
        fake_fail("invalid data type");
        return ncclInvalidArgument;
    }
    if ((a->kind == K_ALLREDUCE || a->kind == K_REDUCESCATTER || a->kind == K_REDUCE) &&
        (a->op < 0 || a->op >= fakeNumOps)) {
        fake_fail("invalid reduction operation");
        return ncclInvalidArgument;
    }
    if ((a->kind == K_BROADCAST || a->kind == K_REDUCE) && (a->root < 0 || a->root >= n)) {
        fake_fail("invalid root");
        return ncclInvalidArgument;
    }
    if ((a->kind == K_SEND || a->kind == K_RECV) && (a->peer < 0 || a->peer >= n)) {
        fake_fail("invalid peer");
        return ncclInvalidArgument;
    }
    if (a->count && ((a->kind != K_RECV && !a->send && !(a->kind == K_BROADCAST && c->rank != a->root)) ||
                     (a->kind != K_SEND && !a->recv && !(a->kind == K_REDUCE && c->rank != a->root)))) {
        fake_fail("NULL buffer");
        return ncclInvalidArgument;
    }
    return ncclSuccess;
}

/* One call: inside a group it is recorded for ncclGroupEnd; else posted and finished. */
static ncclResult_t fake_call(struct fake_comm *c, const struct fake_args *a)
{
    ncclResult_t rc;

    pthread_mutex_lock(&g_mu);
    rc = fake_check_args(c, a);
    if (rc != ncclSuccess)
        goto out;
    if (t_depth > 0) {
        struct fake_gcall *g = calloc(1, sizeof(*g));
        if (!g) {
            fake_fail("out of memory");
            rc = ncclSystemError;
            goto out;
        }
        g->comm = c;
        g->a = *a;
        if (t_tail)
            t_tail->next = g;
        else
            t_head = g;
        t_tail = g;
        goto out;
    }
    c->inside++;
    if (a->kind != K_INIT)
        rc = fake_post(c, a);
    if (rc == ncclSuccess)
        rc = fake_finish(c);
    c->inside--;
    pthread_cond_broadcast(&g_cv);
out:
    pthread_mutex_unlock(&g_mu);
    return rc;
}

/* ---------------------------------------------------------------- the API */

static ncclResult_t fake_get_version(int *v)
{
    if (!v)
        return ncclInvalidArgument;
    *v = fake_version();
    return ncclSuccess;
}

static void fake_make_id(ncclUniqueId *id) /* under g_mu */
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    memset(id, 0, sizeof(*id));
    snprintf(id->internal, sizeof(id->internal), "fake-nccl pid %ld id %lu t %lld.%09ld", (long)getpid(),
             ++g_idcount, (long long)ts.tv_sec, ts.tv_nsec);
}

static ncclResult_t fake_get_unique_id(ncclUniqueId *id)
{
    if (!id)
        return ncclInvalidArgument;
    pthread_mutex_lock(&g_mu);
    fake_make_id(id);
    pthread_mutex_unlock(&g_mu);
    return ncclSuccess;
}

static struct fake_clique *fake_clique_new(int nranks) /* under g_mu */
{
    struct fake_clique *cl = calloc(1, sizeof(*cl));

    if (!cl || !(cl->ranks = calloc((size_t)nranks, sizeof(*cl->ranks)))) {
        free(cl);
        return NULL;
    }
    cl->nranks = nranks;
    cl->next = g_cliques;
    g_cliques = cl;
    return cl;
}

static struct fake_comm *fake_comm_join(struct fake_clique *cl, int rank, int dev, int threaded, int blocking)
{
    struct fake_comm *c = calloc(1, sizeof(*c));

    if (!c)
        return NULL;
    c->cl = cl;
    c->rank = rank;
    c->dev = dev;
    c->threaded = threaded;
    c->blocking = blocking;
    cl->ranks[rank] = c;
    cl->joined++;
    cl->refs++;
    return c;
}

static ncclResult_t fake_init_rank(ncclComm_t *out, int nranks, ncclUniqueId id, int rank, int blocking)
{
    struct fake_clique *cl;
    struct fake_comm *c;
    struct fake_args a = {.kind = K_INIT};
    long pid = -1;

    if (!out || nranks < 1 || rank < 0 || rank >= nranks) {
        pthread_mutex_lock(&g_mu);
        fake_fail("invalid rank or rank count");
        pthread_mutex_unlock(&g_mu);
        return ncclInvalidArgument;
    }
    pthread_mutex_lock(&g_mu);
    if (sscanf(id.internal, "fake-nccl pid %ld", &pid) != 1 || pid != (long)getpid()) {
        fake_fail("the unique id is not one of this process (ranks in several processes are not supported)");
        pthread_mutex_unlock(&g_mu);
        return ncclSystemError;
    }
    for (cl = g_cliques; cl; cl = cl->next)
        if (memcmp(cl->id.internal, id.internal, sizeof(id.internal)) == 0 && cl->joined < cl->nranks)
            break;
    if (cl && (cl->nranks != nranks || cl->ranks[rank])) {
        fake_fail(cl->nranks != nranks ? "ranks disagree on the rank count" : "a rank joined twice");
        pthread_mutex_unlock(&g_mu);
        return ncclInvalidUsage;
    }
    if (!cl && (cl = fake_clique_new(nranks)))
        cl->id = id;
    c = cl ? fake_comm_join(cl, rank, rank, 1, blocking) : NULL;
    if (!c) {
        fake_fail("out of memory");
        pthread_mutex_unlock(&g_mu);
        return ncclSystemError;
    }
    pthread_cond_broadcast(&g_cv);
    *out = c;
    pthread_mutex_unlock(&g_mu);
    /* waits for the other ranks (or, in a group, at ncclGroupEnd) */
    return fake_call(c, &a);
}

static ncclResult_t fake_comm_init_rank(ncclComm_t *out, int nranks, ncclUniqueId id, int rank)
{
    return fake_init_rank(out, nranks, id, rank, 1);
}

static ncclResult_t fake_comm_init_rank_config(ncclComm_t *out, int nranks, ncclUniqueId id, int rank,
                                               fake_config_prefix *cfg)
{
    if (cfg && (cfg->magic != 0xcafebeefu || cfg->size < sizeof(*cfg))) {
        pthread_mutex_lock(&g_mu);
        fake_fail("bad ncclConfig_t (magic or size)");
        pthread_mutex_unlock(&g_mu);
        return ncclInvalidArgument;
    }
    return fake_init_rank(out, nranks, id, rank, cfg ? cfg->blocking != 0 : 1);
}

static ncclResult_t fake_comm_init_all(ncclComm_t *comms, int n, const int *devs)
{
    struct fake_clique *cl;

    if (!comms || n < 1)
        return ncclInvalidArgument;
    pthread_mutex_lock(&g_mu);
    cl = fake_clique_new(n);
    if (!cl)
        goto nomem;
    fake_make_id(&cl->id);
    for (int r = 0; r < n; r++)
        if (!fake_comm_join(cl, r, devs ? devs[r] : r, 0, 1))
            goto nomem;
    for (int r = 0; r < n; r++)
        comms[r] = cl->ranks[r];
    pthread_mutex_unlock(&g_mu);
    return ncclSuccess;
nomem:
    fake_fail("out of memory");
    pthread_mutex_unlock(&g_mu);
    return ncclSystemError;
}

/* Take comm c out of its clique and free it (under g_mu); the clique goes with its last rank. */
static void fake_comm_release(struct fake_comm *c)
{
    struct fake_clique *cl = c->cl, **pp;

    c->aborted = 1;
    /* Its part of unfinished work will never come: its peers fail instead of waiting. */
    if (c->outstanding > 0 || c->hung || cl->rounds || cl->p2p || cl->joined < cl->nranks)
        cl->broken = 1;
    for (struct fake_round *rd = cl->rounds; rd; rd = rd->next)
        rd->comm[c->rank] = NULL;
    for (struct fake_p2p *p = cl->p2p; p; p = p->next)
        if (p->comm == c)
            p->comm = NULL;
    pthread_cond_broadcast(&g_cv);
    while (c->inside > 0)
        pthread_cond_wait(&g_cv, &g_mu);
    cl->ranks[c->rank] = NULL;
    free(c);
    if (--cl->refs > 0)
        return;
    for (pp = &g_cliques; *pp != cl; pp = &(*pp)->next)
        ;
    *pp = cl->next;
    while (cl->rounds) {
        struct fake_round *rd = cl->rounds;
        cl->rounds = rd->next;
        fake_round_free(rd, cl->nranks);
    }
    while (cl->p2p) {
        struct fake_p2p *p = cl->p2p;
        cl->p2p = p->next;
        free(p->snap);
        free(p);
    }
    free(cl->ranks);
    free(cl);
}

static ncclResult_t fake_comm_end(ncclComm_t c)
{
    if (!c)
        return ncclInvalidArgument;
    pthread_mutex_lock(&g_mu);
    fake_comm_release(c);
    pthread_mutex_unlock(&g_mu);
    return ncclSuccess;
}

static ncclResult_t fake_comm_finalize(ncclComm_t c)
{
    return c ? ncclSuccess : ncclInvalidArgument;
}

static ncclResult_t fake_comm_get_async_error(ncclComm_t c, ncclResult_t *err)
{
    if (!c || !err)
        return ncclInvalidArgument;
    pthread_mutex_lock(&g_mu);
    if (c->error)
        *err = c->error;
    else if (c->cl->broken)
        *err = ncclRemoteError;
    else if (c->hung || c->outstanding > 0 || c->cl->joined < c->cl->nranks)
        *err = ncclInProgress;
    else
        *err = ncclSuccess;
    pthread_mutex_unlock(&g_mu);
    return ncclSuccess;
}

static ncclResult_t fake_comm_count(const ncclComm_t c, int *n)
{
    if (!c || !n)
        return ncclInvalidArgument;
    *n = c->cl->nranks;
    return ncclSuccess;
}

static ncclResult_t fake_comm_user_rank(const ncclComm_t c, int *r)
{
    if (!c || !r)
        return ncclInvalidArgument;
    *r = c->rank;
    return ncclSuccess;
}

static ncclResult_t fake_comm_cu_device(const ncclComm_t c, int *d)
{
    if (!c || !d)
        return ncclInvalidArgument;
    *d = c->dev;
    return ncclSuccess;
}

static ncclResult_t fake_group_start(void)
{
    t_depth++;
    return ncclSuccess;
}

static ncclResult_t fake_group_end(void)
{
    struct fake_gcall *g, *list;
    ncclResult_t rc = ncclSuccess, r;

    if (t_depth <= 0)
        return ncclInvalidUsage;
    if (--t_depth > 0)
        return ncclSuccess;
    list = t_head;
    t_head = t_tail = NULL;
    pthread_mutex_lock(&g_mu);
    for (g = list; g; g = g->next)
        g->comm->inside++;
    /* sends and collectives first, receives after: an in-place exchange reads before it writes */
    for (int pass = 0; pass < 2; pass++)
        for (g = list; g; g = g->next)
            if (g->a.kind != K_INIT && (g->a.kind == K_RECV) == pass && rc == ncclSuccess)
                rc = fake_post(g->comm, &g->a);
    for (g = list; g && rc == ncclSuccess; g = g->next) {
        r = fake_finish(g->comm);
        if (r != ncclSuccess)
            rc = r;
    }
    for (g = list; g; g = g->next)
        g->comm->inside--;
    pthread_cond_broadcast(&g_cv);
    pthread_mutex_unlock(&g_mu);
    while (list) {
        g = list->next;
        free(list);
        list = g;
    }
    return rc;
}

static ncclResult_t fake_all_reduce(const void *s, void *r, size_t n, ncclDataType_t dt, ncclRedOp_t op,
                                    ncclComm_t c, cudaStream_t st)
{
    struct fake_args a = {K_ALLREDUCE, s, r, n, dt, op, -1, -1};
    (void)st;
    return fake_call(c, &a);
}

static ncclResult_t fake_all_gather(const void *s, void *r, size_t n, ncclDataType_t dt, ncclComm_t c, cudaStream_t st)
{
    struct fake_args a = {K_ALLGATHER, s, r, n, dt, -1, -1, -1};
    (void)st;
    return fake_call(c, &a);
}

static ncclResult_t fake_reduce_scatter(const void *s, void *r, size_t n, ncclDataType_t dt, ncclRedOp_t op,
                                        ncclComm_t c, cudaStream_t st)
{
    struct fake_args a = {K_REDUCESCATTER, s, r, n, dt, op, -1, -1};
    (void)st;
    return fake_call(c, &a);
}

static ncclResult_t fake_broadcast(const void *s, void *r, size_t n, ncclDataType_t dt, int root, ncclComm_t c,
                                   cudaStream_t st)
{
    struct fake_args a = {K_BROADCAST, s, r, n, dt, -1, root, -1};
    (void)st;
    return fake_call(c, &a);
}

static ncclResult_t fake_reduce_(const void *s, void *r, size_t n, ncclDataType_t dt, ncclRedOp_t op, int root,
                                 ncclComm_t c, cudaStream_t st)
{
    struct fake_args a = {K_REDUCE, s, r, n, dt, op, root, -1};
    (void)st;
    return fake_call(c, &a);
}

static ncclResult_t fake_all_to_all(const void *s, void *r, size_t n, ncclDataType_t dt, ncclComm_t c, cudaStream_t st)
{
    struct fake_args a = {K_ALLTOALL, s, r, n, dt, -1, -1, -1};
    (void)st;
    return fake_call(c, &a);
}

static ncclResult_t fake_send(const void *s, size_t n, ncclDataType_t dt, int peer, ncclComm_t c, cudaStream_t st)
{
    struct fake_args a = {K_SEND, s, NULL, n, dt, -1, -1, peer};
    (void)st;
    return fake_call(c, &a);
}

static ncclResult_t fake_recv(void *r, size_t n, ncclDataType_t dt, int peer, ncclComm_t c, cudaStream_t st)
{
    struct fake_args a = {K_RECV, NULL, r, n, dt, -1, -1, peer};
    (void)st;
    return fake_call(c, &a);
}

static const char *fake_get_error_string(ncclResult_t rc)
{
    switch (rc) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
    }
}

static const char *fake_get_last_error(ncclComm_t c)
{
    (void)c;
    return g_last; /* racy by design, as NCCL's: a diagnostic string */
}

/*
 * Exported as GNU indirect functions: the resolver runs when the loader asks
 * for the symbol, so FAKE_NCCL_VERSION and FAKE_NCCL_MODE can make one absent
 * (dlsym answers NULL) as an older or broken NCCL would.
 */
#define FAKE_API(name, impl, ret, params, present)                                  \
    typedef ret(*name##_fn) params;                                                  \
    __attribute__((used)) static name##_fn name##_resolve(void) { return (present) ? impl : NULL; } \
    FAKE_EXPORT ret name params __attribute__((ifunc(#name "_resolve")));

static int fake_nosym(void)
{
    const char *m = getenv("FAKE_NCCL_MODE");
    return m && strcmp(m, "nosym") == 0;
}

FAKE_API(ncclGetVersion, fake_get_version, ncclResult_t, (int *), 1)
FAKE_API(ncclGetUniqueId, fake_get_unique_id, ncclResult_t, (ncclUniqueId *), 1)
FAKE_API(ncclCommInitRank, fake_comm_init_rank, ncclResult_t, (ncclComm_t *, int, ncclUniqueId, int), 1)
FAKE_API(ncclCommInitRankConfig, fake_comm_init_rank_config, ncclResult_t,
         (ncclComm_t *, int, ncclUniqueId, int, fake_config_prefix *), fake_version() >= 21400)
FAKE_API(ncclCommInitAll, fake_comm_init_all, ncclResult_t, (ncclComm_t *, int, const int *), 1)
FAKE_API(ncclCommDestroy, fake_comm_end, ncclResult_t, (ncclComm_t), 1)
FAKE_API(ncclCommAbort, fake_comm_end, ncclResult_t, (ncclComm_t), !fake_nosym())
FAKE_API(ncclCommFinalize, fake_comm_finalize, ncclResult_t, (ncclComm_t), fake_version() >= 21400)
FAKE_API(ncclCommGetAsyncError, fake_comm_get_async_error, ncclResult_t, (ncclComm_t, ncclResult_t *), 1)
FAKE_API(ncclCommCount, fake_comm_count, ncclResult_t, (const ncclComm_t, int *), 1)
FAKE_API(ncclCommUserRank, fake_comm_user_rank, ncclResult_t, (const ncclComm_t, int *), 1)
FAKE_API(ncclCommCuDevice, fake_comm_cu_device, ncclResult_t, (const ncclComm_t, int *), 1)
FAKE_API(ncclGroupStart, fake_group_start, ncclResult_t, (void), 1)
FAKE_API(ncclGroupEnd, fake_group_end, ncclResult_t, (void), 1)
FAKE_API(ncclAllReduce, fake_all_reduce, ncclResult_t,
         (const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t), 1)
FAKE_API(ncclAllGather, fake_all_gather, ncclResult_t,
         (const void *, void *, size_t, ncclDataType_t, ncclComm_t, cudaStream_t), 1)
FAKE_API(ncclReduceScatter, fake_reduce_scatter, ncclResult_t,
         (const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t), 1)
FAKE_API(ncclBroadcast, fake_broadcast, ncclResult_t,
         (const void *, void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t), 1)
FAKE_API(ncclReduce, fake_reduce_, ncclResult_t,
         (const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, int, ncclComm_t, cudaStream_t), 1)
FAKE_API(ncclAlltoAll, fake_all_to_all, ncclResult_t,
         (const void *, void *, size_t, ncclDataType_t, ncclComm_t, cudaStream_t), fake_version() >= 22800)
FAKE_API(ncclSend, fake_send, ncclResult_t, (const void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t), 1)
FAKE_API(ncclRecv, fake_recv, ncclResult_t, (void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t), 1)
FAKE_API(ncclGetErrorString, fake_get_error_string, const char *, (ncclResult_t), 1)
FAKE_API(ncclGetLastError, fake_get_last_error, const char *, (ncclComm_t), fake_version() >= 21300)
