/*
 * A stand-in for libnccl.so.2 for tests without a GPU. Its collectives really
 * happen, on the fake CUDA driver's device memory, which is host memory
 * (tests/fakes/fake_libcuda.c: a CUdeviceptr is a host address), so a test can
 * check every element. The declarations are its own, numbered as nccl.h
 * numbers them, so the loader's own are checked against an independent copy.
 *
 * ncclCommInitAll makes n ranks in this process, for one thread.
 * ncclGetUniqueId makes a rendezvous file (FAKE_NCCL_DIR, else /dev/shm when
 * it has 1 GiB free, else TMPDIR or /tmp; named with the maker's pid and
 * randomness; the id holds its path) and ncclCommInitRank joins one rank, of
 * any thread of any process that can open it, to the others with that id (at
 * most 16 ranks; a rank twice answers ncclInvalidUsage, a different rank
 * count ncclInvalidUsage and the others then fail instead of waiting). The
 * file is unlinked once every rank joined, when a rank leaves before that,
 * or at its maker's exit (the destructor; no rank ever joined).
 *
 * ncclCommInitAll's ranks: each rank's call is recorded, with a copy of its
 * input taken when the call is made; a collective is
 * performed when every rank of the communicator has made its call (at
 * ncclGroupEnd for calls made inside a group, else at once), and a send when
 * the matching receive is posted (sends of a group are posted before its
 * receives, so in-place exchanges are right). ncclCommInitRank's ranks: each
 * leaves a copy of its input in the shared file when the call is made (or at
 * ncclGroupEnd) and computes its own output, in its own process, once every
 * rank's copy is in, when it waits or polls (see "ranks in several
 * processes" below); the results are the same. Outputs: sums, products,
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
 * not done (and, for ncclCommInitRank's ranks, completes what it can: no
 * thread runs behind the caller), ncclRemoteError once a peer was aborted or
 * destroyed with operations pending, or (ncclCommInitRank's ranks) a peer
 * left or its process died while this rank waits on it (seen within a few
 * ms), else ncclSuccess (ncclCommInitRank's ranks: also when the comm broke
 * after this rank's operations were done; its next call answers
 * ncclRemoteError). A waiting call naps 100 us between polls.
 *
 * The environment:
 *   FAKE_NCCL_VERSION   ncclGetVersion's code (default 22807, 2.28.7); below 21400
 *                       ncclCommInitRankConfig and ncclCommFinalize are absent, below
 *                       21300 ncclGetLastError, below 22800 ncclAlltoAll
 *   FAKE_NCCL_MODE      nosym: ncclCommAbort is absent (a required symbol);
 *                       async: non-blocking ranks of ncclCommInitRank behave as NCCL
 *                       2.28's: a call outside a group and ncclGroupEnd hand the work
 *                       to a new thread and answer ncclInProgress at once;
 *                       ncclCommGetAsyncError answers ncclInProgress until that thread
 *                       has run (so a caller that polls without yielding, pinned to
 *                       one CPU, waits for the scheduler to preempt it: a tick)
 *   FAKE_NCCL_HANG=1    collectives and sends never complete: a blocking rank of
 *                       ncclCommInitRank waits in its call until ncclCommAbort
 *                       (from another thread) or a peer's death; ncclCommGetAsyncError
 *                       answers ncclInProgress until then (per process: where set,
 *                       that process's ranks never hand in their part)
 *   FAKE_NCCL_EXIT_AT=k with FAKE_NCCL_EXIT_RANK=r: the process of rank r calls
 *                       _exit(9) at its k-th operation call (1-based, counted per
 *                       communicator: collectives, sends and receives, in a group or
 *                       not; not init), to kill one rank mid-run at a known point
 *   FAKE_NCCL_DIR       where ncclGetUniqueId makes its rendezvous files
 *   FAKE_NCCL_LOG=FILE  a line appended per ncclAllReduce (rank, buffers, count, stream), per
 *                       buffer registration (ncclCommRegister, 2.19; ncclCommWindowRegister,
 *                       2.27; their deregistrations: absent below those versions) and per
 *                       ncclCommInitRankConfig whose config reaches CTAPolicy (2.27)
 *   FAKE_NCCL_WARN=TEXT ncclGetLastError's text where no call failed (a warning NCCL
 *                       recorded and went on, as "NET/Plugin: ..." on a machine without one)
 *   FAKE_NCCL_CORRUPT=i element i of every output is wrong (its lowest bit
 *                       flipped): each rank's result, the root's for reduce, each
 *                       receive's for ncclRecv
 *
 * fake_nccl_live_comms() (exported, for tests): this process's communicators
 * made and not yet destroyed or aborted.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

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

/* ncclConfig_t of NCCL 2.27 up to CTAPolicy (nccl.h's order), read where the caller's size and version reach it. */
typedef struct {
    size_t size;
    unsigned int magic, version;
    int blocking;
    int cgaClusterSize, minCTAs, maxCTAs;
    const char *netName;
    int splitShare, trafficClass;
    const char *commName;
    int collnetEnable, CTAPolicy;
} fake_config_227;

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

#define SH_MAXR 16 /* ranks of a communicator across processes */

struct fake_comm {
    struct fake_clique *cl;  /* ncclCommInitAll's ranks, in this process */
    struct sh_hdr *sh;       /* ncclCommInitRank's, in a shared file (below) */
    int rank, dev, nranks;
    int threaded;          /* made by ncclCommInitRank: its thread may wait for peers */
    int blocking;
    uint64_t seq;          /* collectives issued */
    long outstanding;      /* operations issued and not done */
    int hung, aborted, inside;
    int helpers;           /* FAKE_NCCL_MODE=async: helper threads started for it and not yet done */
    ncclResult_t error;    /* an operation failed (sticky) */
    long calls;            /* operations called (FAKE_NCCL_EXIT_AT) */
    /* shared comms: operations not done, message numbers per peer, the last check of the peers */
    struct sh_op *ops;
    int nops, capops;
    uint64_t send_k[SH_MAXR], recv_k[SH_MAXR];
    long long checked;
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

/* Rank r's output of a collective, from every rank's input (snap[k]), into out. */
static void fake_rank_output(const struct fake_args *a0, int n, void *const *snap, int r, void *out)
{
    size_t c = a0->count, ts = fake_tsize(a0->dtype), elems = c;
    int dt = a0->dtype;

    switch (a0->kind) {
    case K_ALLREDUCE: fake_reduce(dt, a0->op, n, snap, 0, out, c); break;
    case K_REDUCESCATTER: fake_reduce(dt, a0->op, n, snap, (size_t)r * c, out, c); break;
    case K_REDUCE:
        if (r != a0->root)
            return;
        fake_reduce(dt, a0->op, n, snap, 0, out, c);
        break;
    case K_BROADCAST: memcpy(out, snap[a0->root], c * ts); break;
    case K_ALLGATHER:
        for (int k = 0; k < n; k++)
            memcpy((char *)out + (size_t)k * c * ts, snap[k], c * ts);
        elems = c * (size_t)n;
        break;
    case K_ALLTOALL:
        for (int k = 0; k < n; k++)
            memcpy((char *)out + (size_t)k * c * ts, (const char *)snap[k] + (size_t)r * c * ts, c * ts);
        elems = c * (size_t)n;
        break;
    default: return;
    }
    fake_corrupt(out, elems, dt);
}

static int fake_same_call(const struct fake_args *a, const struct fake_args *b)
{
    return a->kind == b->kind && a->count == b->count && a->dtype == b->dtype && a->op == b->op &&
           a->root == b->root;
}

static void fake_perform(struct fake_clique *cl, struct fake_round *rd)
{
    int n = cl->nranks;

    for (int r = 1; r < n; r++) {
        if (!fake_same_call(&rd->a[r], &rd->a[0])) {
            fake_fail("the ranks called different collectives (kind, count, type, op or root differ)");
            for (int k = 0; k < n; k++)
                if (rd->comm[k])
                    rd->comm[k]->error = ncclInvalidUsage;
            return;
        }
    }
    for (int r = 0; r < n; r++)
        fake_rank_output(&rd->a[0], n, rd->snap, r, rd->a[r].recv);
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

/* ---------------------------------------------------------------- ranks in several processes */

/*
 * A communicator of ncclCommInitRank lives in a file that ncclGetUniqueId
 * makes (its path is the id). The file's header is the communicator's state
 * under a robust process-shared mutex; after it, each rank has a region of
 * SH_CAP bytes (the file is sparse) where it leaves copies of its inputs.
 * A collective is round seq % SH_RING: each rank leaves its input and
 * arguments there, and once all have, each rank computes its own output from
 * the others' inputs (in its own process, as it polls or waits), the last to
 * read frees the round. A send leaves its data in a message slot of its
 * (sender, receiver) pair, in order, and is done; the receive copies it out. Waiting is a
 * poll with nanosleep: no thread, no pure spin.
 */
#define SH_RING 256 /* collectives a rank may be ahead of the slowest */
#define SH_PRING 64 /* messages a sender may be ahead of its receiver */
#define SH_CAP ((size_t)512 << 20)
#define SH_HDR ((size_t)1 << 20)
#define SH_LEN (SH_HDR + SH_MAXR * SH_CAP)
#define SH_MAGIC 0x66616b656e63636cull
#define SH_PREFIX "fake-nccl-proc "
#define SH_POLL_NS 100000L      /* a waiter's nap */
#define SH_CHECK_NS 2000000LL   /* how often peers' processes are checked */

struct sh_dep {
    int present, kind, dtype, op, root;
    uint64_t count, off;
};
struct sh_round {
    int used, arrived, read;
    uint64_t seq;
    struct sh_dep dep[SH_MAXR];
};
struct sh_msg {
    int state, dtype; /* state 1: posted, not yet received */
    uint64_t k, count, off;
};
struct sh_rank {
    pid_t pid;
    int joined, gone;
    long live;     /* deposits of this rank not yet freed */
    uint64_t used; /* bytes of its region in use (reset when live is 0) */
};
struct sh_hdr {
    uint64_t magic;
    pthread_mutex_t mu;
    int nranks, joined, broken, unlinked;
    char path[sizeof(ncclUniqueId)];
    struct sh_rank rk[SH_MAXR];
    struct sh_round rounds[SH_RING];
    struct sh_msg msg[SH_MAXR][SH_MAXR][SH_PRING];
};
_Static_assert(sizeof(struct sh_hdr) <= SH_HDR, "the shared header fits before the regions");

struct sh_op { /* an operation of this rank not yet done */
    struct fake_args a;
    uint64_t k; /* a collective's round, or a message's number in its pair */
};

/* Ids made by this process, unlinked at its exit (or unload) in case no rank ever joined. */
static struct {
    pid_t pid;
    char path[sizeof(ncclUniqueId)];
} g_made[64];

static void sh_lock(struct sh_hdr *h)
{
    if (pthread_mutex_lock(&h->mu) == EOWNERDEAD) {
        h->broken = 1; /* a process died holding it: the state may be half written */
        pthread_mutex_consistent(&h->mu);
    }
}

static void sh_unlock(struct sh_hdr *h)
{
    pthread_mutex_unlock(&h->mu);
}

static char *sh_region(struct sh_hdr *h, int r)
{
    return (char *)h + SH_HDR + (size_t)r * SH_CAP;
}

static long long sh_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* A process gone, or a zombie its parent has not reaped yet. */
static int sh_pid_dead(pid_t pid)
{
    char path[64], buf[512], *p;
    ssize_t n;
    int fd;

    if (pid <= 0 || pid == getpid())
        return 0;
    if (kill(pid, 0) < 0 && errno == ESRCH)
        return 1;
    snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT;
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    p = strrchr(buf, ')');
    return p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

static const char *sh_dir(void)
{
    const char *d = getenv("FAKE_NCCL_DIR");
    struct statvfs vfs;

    if (d && *d)
        return d;
    /* /dev/shm unless small (containers give it 64 MiB): the regions hold whole buffers */
    if (statvfs("/dev/shm", &vfs) == 0 && (unsigned long long)vfs.f_bavail * vfs.f_frsize >= (1ull << 30))
        return "/dev/shm";
    d = getenv("TMPDIR");
    return d && *d ? d : "/tmp";
}

static void sh_remember(const char *path) /* under g_mu */
{
    for (size_t i = 0; i < sizeof(g_made) / sizeof(g_made[0]); i++)
        if (!g_made[i].path[0] || g_made[i].pid != getpid()) {
            g_made[i].pid = getpid();
            snprintf(g_made[i].path, sizeof(g_made[i].path), "%s", path);
            return;
        }
}

__attribute__((destructor)) static void sh_forget_all(void)
{
    for (size_t i = 0; i < sizeof(g_made) / sizeof(g_made[0]); i++)
        if (g_made[i].path[0] && g_made[i].pid == getpid()) {
            unlink(g_made[i].path); /* gone already once every rank joined */
            g_made[i].path[0] = '\0';
        }
}

/* ncclGetUniqueId: a new communicator file, its path the id. */
static ncclResult_t sh_create(ncclUniqueId *id)
{
    char path[sizeof(id->internal) - sizeof(SH_PREFIX)];
    uint64_t rnd = 0;
    pthread_mutexattr_t ma;
    struct sh_hdr *h;
    int fd, n;

    if (getrandom(&rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
        rnd = (uint64_t)sh_now_ns() ^ ((uint64_t)getpid() << 32);
    n = snprintf(path, sizeof(path), "%s/fake-nccl-%ld-%016llx", sh_dir(), (long)getpid(), (unsigned long long)rnd);
    if (n < 0 || (size_t)n >= sizeof(path)) {
        fake_fail("the rendezvous directory's path is too long for an id (FAKE_NCCL_DIR)");
        return ncclSystemError;
    }
    fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        fake_fail("cannot create the rendezvous file (FAKE_NCCL_DIR, TMPDIR)");
        return ncclSystemError;
    }
    if (ftruncate(fd, (off_t)SH_LEN) < 0 ||
        (h = mmap(NULL, SH_HDR, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
        close(fd);
        unlink(path);
        fake_fail("cannot size or map the rendezvous file");
        return ncclSystemError;
    }
    close(fd);
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(&h->mu, &ma);
    pthread_mutexattr_destroy(&ma);
    snprintf(h->path, sizeof(h->path), "%s", path);
    __atomic_store_n(&h->magic, SH_MAGIC, __ATOMIC_RELEASE);
    munmap(h, SH_HDR);
    memset(id, 0, sizeof(*id));
    snprintf(id->internal, sizeof(id->internal), SH_PREFIX "%s", path);
    sh_remember(path);
    return ncclSuccess;
}

static void sh_unlink(struct sh_hdr *h) /* under h->mu */
{
    if (!h->unlinked)
        unlink(h->path);
    h->unlinked = 1;
}

/* Join rank `rank` of the communicator the id names: c gets its mapping. */
static ncclResult_t sh_join(struct fake_comm *c, const ncclUniqueId *id, int nranks, int rank)
{
    char path[sizeof(id->internal)];
    struct sh_hdr *h;
    struct stat st;
    ncclResult_t rc = ncclSuccess;
    int fd;

    if (strncmp(id->internal, SH_PREFIX, strlen(SH_PREFIX)) != 0 ||
        !memchr(id->internal, '\0', sizeof(id->internal))) {
        fake_fail("not an id of ncclGetUniqueId");
        return ncclInvalidArgument;
    }
    if (nranks > SH_MAXR) {
        fake_fail("too many ranks for the fake (at most 16 with ncclCommInitRank)");
        return ncclInvalidArgument;
    }
    snprintf(path, sizeof(path), "%s", id->internal + strlen(SH_PREFIX));
    fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        fake_fail("the id's rendezvous is gone (every rank joined already, or its maker went away)");
        return ncclSystemError;
    }
    if (fstat(fd, &st) < 0 || (size_t)st.st_size != SH_LEN ||
        (h = mmap(NULL, SH_LEN, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0)) == MAP_FAILED) {
        close(fd);
        fake_fail("the id's rendezvous file is not one of the fake's");
        return ncclSystemError;
    }
    close(fd);
    if (__atomic_load_n(&h->magic, __ATOMIC_ACQUIRE) != SH_MAGIC) {
        munmap(h, SH_LEN);
        fake_fail("the id's rendezvous file is not one of the fake's");
        return ncclSystemError;
    }
    sh_lock(h);
    if (h->nranks && h->nranks != nranks) {
        fake_fail("ranks disagree on the rank count");
        h->broken = 1; /* the others would wait for ranks that never come */
        rc = ncclInvalidUsage;
    } else if (h->rk[rank].joined) {
        fake_fail("a rank joined twice");
        rc = ncclInvalidUsage;
    } else {
        h->nranks = nranks;
        h->rk[rank].pid = getpid();
        h->rk[rank].joined = 1;
        if (++h->joined == nranks)
            sh_unlink(h);
    }
    sh_unlock(h);
    if (rc != ncclSuccess) {
        munmap(h, SH_LEN);
        return rc;
    }
    c->sh = h;
    c->nranks = nranks;
    return ncclSuccess;
}

static ncclResult_t sh_add_op(struct fake_comm *c, const struct fake_args *a, uint64_t k)
{
    if (c->nops == c->capops) {
        int cap = c->capops ? 2 * c->capops : 8;
        struct sh_op *ops = realloc(c->ops, (size_t)cap * sizeof(*ops));
        if (!ops) {
            fake_fail("out of memory");
            return ncclSystemError;
        }
        c->ops = ops;
        c->capops = cap;
    }
    c->ops[c->nops].a = *a;
    c->ops[c->nops].k = k;
    c->nops++;
    return ncclSuccess;
}

/* Room in rank r's region for bytes; the copy of src put there (under h->mu). */
static int sh_deposit(struct sh_hdr *h, int r, const void *src, size_t bytes, uint64_t *off)
{
    struct sh_rank *rk = &h->rk[r];

    if (rk->live == 0)
        rk->used = 0;
    if (bytes > SH_CAP - rk->used)
        return -1;
    *off = rk->used;
    if (bytes)
        memcpy(sh_region(h, r) + rk->used, src, bytes);
    rk->used += (bytes + 63) & ~(uint64_t)63;
    rk->live++;
    return 0;
}

/* Post one operation of shared comm c (under h->mu). */
static ncclResult_t sh_post(struct fake_comm *c, const struct fake_args *a)
{
    struct sh_hdr *h = c->sh;
    int me = c->rank, n = c->nranks;
    size_t bytes = fake_in_elems(a, n) * fake_tsize(a->dtype);

    if (h->broken) {
        fake_fail("a rank of this communicator was aborted or died");
        return ncclRemoteError;
    }
    if (getenv("FAKE_NCCL_HANG") && strcmp(getenv("FAKE_NCCL_HANG"), "1") == 0) {
        c->hung = 1;
        return ncclSuccess;
    }
    if (a->kind == K_RECV)
        return sh_add_op(c, a, c->recv_k[a->peer]++);
    if (a->kind == K_SEND) {
        uint64_t k = c->send_k[a->peer];
        struct sh_msg *m = &h->msg[me][a->peer][k % SH_PRING];
        if (m->state) {
            fake_fail("too many sends to one peer pending");
            return ncclInternalError;
        }
        if (sh_deposit(h, me, a->send, bytes, &m->off) < 0) {
            fake_fail("too much data pending in this rank's region");
            return ncclSystemError;
        }
        m->k = k;
        m->count = a->count;
        m->dtype = a->dtype;
        m->state = 1;
        c->send_k[a->peer]++;
        /* done once its data is in the file: as NCCL's ranks progress on their own, a caller may poll
           one comm to the end before the next, and the receiver's is polled later */
        return ncclSuccess;
    }
    uint64_t seq = c->seq;
    struct sh_round *rd = &h->rounds[seq % SH_RING];
    struct sh_dep *d = &rd->dep[me];

    if (rd->used && rd->seq != seq) {
        fake_fail("too many collectives pending");
        return ncclInternalError;
    }
    if (a->kind == K_BROADCAST && me != a->root)
        bytes = 0;
    if (sh_deposit(h, me, a->send, bytes, &d->off) < 0) {
        fake_fail("too much data pending in this rank's region");
        return ncclSystemError;
    }
    if (!rd->used) {
        rd->used = 1;
        rd->seq = seq;
        rd->arrived = rd->read = 0;
    }
    d->kind = a->kind;
    d->count = a->count;
    d->dtype = a->dtype;
    d->op = a->op;
    d->root = a->root;
    d->present = 1;
    rd->arrived++;
    c->seq++;
    return sh_add_op(c, a, seq);
}

static void sh_round_read(struct sh_hdr *h, struct sh_round *rd, int n)
{
    if (++rd->read < n)
        return;
    for (int r = 0; r < n; r++) {
        h->rk[r].live--;
        rd->dep[r].present = 0;
    }
    rd->used = 0;
}

/* Complete what can be, in call order: outputs written into this process's buffers (under h->mu). */
static void sh_progress(struct fake_comm *c)
{
    struct sh_hdr *h = c->sh;
    int me = c->rank, n = c->nranks, kept = 0;

    for (int i = 0; i < c->nops; i++) {
        struct sh_op *o = &c->ops[i];
        int done = 0;

        if (o->a.kind == K_RECV) {
            struct sh_msg *m = &h->msg[o->a.peer][me][o->k % SH_PRING];
            if (m->state && m->k == o->k) {
                if (m->count != o->a.count || m->dtype != o->a.dtype) {
                    fake_fail("a send and its receive differ in count or type");
                    c->error = ncclInvalidUsage;
                } else {
                    memcpy(o->a.recv, sh_region(h, o->a.peer) + m->off, o->a.count * fake_tsize(o->a.dtype));
                    fake_corrupt(o->a.recv, o->a.count, o->a.dtype);
                }
                m->state = 0;
                h->rk[o->a.peer].live--;
                done = 1;
            }
        } else {
            struct sh_round *rd = &h->rounds[o->k % SH_RING];
            if (rd->used && rd->seq == o->k && rd->arrived == n) {
                void *snap[SH_MAXR];
                int same = 1;
                for (int r = 0; r < n; r++) {
                    struct fake_args ar = {rd->dep[r].kind, NULL, NULL, rd->dep[r].count, rd->dep[r].dtype,
                                           rd->dep[r].op, rd->dep[r].root, -1};
                    same &= fake_same_call(&ar, &o->a);
                    snap[r] = sh_region(h, r) + rd->dep[r].off;
                }
                if (!same) {
                    fake_fail("the ranks called different collectives (kind, count, type, op or root differ)");
                    c->error = ncclInvalidUsage;
                } else {
                    fake_rank_output(&o->a, n, snap, me, o->a.recv);
                }
                sh_round_read(h, rd, n);
                done = 1;
            }
        }
        if (!done)
            c->ops[kept++] = *o;
    }
    c->nops = kept;
}

/* Whether an operation of c not yet done needs rank r's part (under h->mu, after sh_progress). */
static int sh_waits_on(struct fake_comm *c, int r)
{
    struct sh_hdr *h = c->sh;

    if (c->hung || h->joined < c->nranks)
        return 1;
    for (int i = 0; i < c->nops; i++) {
        const struct sh_op *o = &c->ops[i];
        const struct sh_round *rd = &h->rounds[o->k % SH_RING];
        if (o->a.kind == K_SEND || o->a.kind == K_RECV) {
            if (o->a.peer == r)
                return 1;
        } else if (!rd->used || rd->seq != o->k || !rd->dep[r].present) {
            return 1;
        }
    }
    return 0;
}

/*
 * A peer this rank waits on destroyed its comm or its process died (under h->mu). A peer that
 * left after handing in its part is no loss: its inputs stay in the file this process maps.
 */
static int sh_peer_lost(struct fake_comm *c)
{
    struct sh_hdr *h = c->sh;
    long long now;

    for (int r = 0; r < c->nranks; r++)
        if (r != c->rank && h->rk[r].gone && sh_waits_on(c, r))
            return 1;
    now = sh_now_ns(); /* a process's death costs system calls to see: not at every poll */
    if (now - c->checked < SH_CHECK_NS)
        return 0;
    c->checked = now;
    for (int r = 0; r < c->nranks; r++)
        if (r != c->rank && h->rk[r].joined && sh_waits_on(c, r) && sh_pid_dead(h->rk[r].pid))
            return 1;
    return 0;
}

/* Where shared comm c stands (under h->mu): ncclInProgress while it waits. */
static ncclResult_t sh_state(struct fake_comm *c)
{
    struct sh_hdr *h = c->sh;

    sh_progress(c);
    if (c->error)
        return c->error;
    /* done before a peer broke the comm: a success (the next call fails) */
    if (c->nops == 0 && !c->hung && h->joined == c->nranks)
        return ncclSuccess;
    if (h->broken)
        return ncclRemoteError;
    if (sh_peer_lost(c)) {
        fake_fail("a peer rank's process died or its communicator went away");
        h->broken = 1;
        return ncclRemoteError;
    }
    return ncclInProgress;
}

/* How a call of shared comm c ends: a blocking one waits, napping, until done, failed or aborted. */
static ncclResult_t sh_finish(struct fake_comm *c)
{
    const struct timespec nap = {0, SH_POLL_NS};
    ncclResult_t rc;

    for (;;) {
        if (__atomic_load_n(&c->aborted, __ATOMIC_ACQUIRE)) {
            fake_fail("the communicator was aborted during the call");
            return ncclSystemError;
        }
        sh_lock(c->sh);
        rc = sh_state(c);
        sh_unlock(c->sh);
        if (rc != ncclInProgress || !c->blocking)
            return rc;
        nanosleep(&nap, NULL);
    }
}

static ncclResult_t sh_post_locked(struct fake_comm *c, const struct fake_args *a)
{
    ncclResult_t rc;

    sh_lock(c->sh);
    rc = sh_post(c, a);
    sh_unlock(c->sh);
    return rc;
}

/* Leave the communicator (no call of c in progress): peers waiting on c's part fail. */
static void sh_release(struct fake_comm *c)
{
    struct sh_hdr *h = c->sh;

    sh_lock(h);
    if (c->nops > 0 || c->hung)
        h->broken = 1;
    h->rk[c->rank].gone = 1;
    if (h->joined < h->nranks)
        sh_unlink(h); /* no one else may join a communicator that lost a rank */
    sh_unlock(h);
    munmap(h, SH_LEN);
    free(c->ops);
}

static ncclResult_t fake_check_args(struct fake_comm *c, const struct fake_args *a)
{
    int n;

    if (!c) {
        fake_fail("NULL communicator");
        return ncclInvalidArgument;
    }
    n = c->nranks;
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

/* FAKE_NCCL_EXIT_AT=k, FAKE_NCCL_EXIT_RANK=r: rank r's process ends at its k-th operation call. */
static void fake_exit_at(struct fake_comm *c)
{
    long long k, r;

    c->calls++;
    if (fake_env_int("FAKE_NCCL_EXIT_AT", &k) && fake_env_int("FAKE_NCCL_EXIT_RANK", &r) && r == c->rank &&
        k == c->calls)
        _exit(9);
}

/* FAKE_NCCL_MODE=async: NCCL 2.28's non-blocking communicators, each call's work done by a thread of its own. */
static int fake_async_mode(void)
{
    const char *m = getenv("FAKE_NCCL_MODE");
    return m && strcmp(m, "async") == 0;
}

struct fake_job {
    struct fake_gcall *list; /* the calls to post, in order (sends and collectives before receives) */
};

static void fake_free_calls(struct fake_gcall *list)
{
    while (list) {
        struct fake_gcall *g = list->next;
        free(list);
        list = g;
    }
}

static ncclResult_t fake_group_post(struct fake_comm *c, const struct fake_args *a);

static void *fake_helper(void *arg)
{
    struct fake_job *j = arg;
    ncclResult_t rc = ncclSuccess;

    for (int pass = 0; pass < 2; pass++)
        for (struct fake_gcall *g = j->list; g; g = g->next)
            if (g->a.kind != K_INIT && (g->a.kind == K_RECV) == pass && rc == ncclSuccess &&
                (rc = fake_group_post(g->comm, &g->a)) != ncclSuccess) {
                pthread_mutex_lock(&g_mu);
                g->comm->error = rc;
                pthread_mutex_unlock(&g_mu);
            }
    pthread_mutex_lock(&g_mu);
    for (struct fake_gcall *g = j->list; g; g = g->next) {
        __atomic_sub_fetch(&g->comm->helpers, 1, __ATOMIC_RELEASE);
        g->comm->inside--;
    }
    pthread_cond_broadcast(&g_cv);
    pthread_mutex_unlock(&g_mu);
    fake_free_calls(j->list);
    free(j);
    return NULL;
}

/*
 * Hand list's calls to a new (detached) thread: ncclInProgress. NCCL's order
 * holds: a communicator's earlier helper finishes before the next one starts.
 */
static ncclResult_t fake_async_start(struct fake_gcall *list)
{
    struct fake_job *j = calloc(1, sizeof(*j));
    const struct timespec nap = {0, 20000};
    pthread_attr_t at;
    pthread_t t;
    int busy;

    if (!j) {
        fake_free_calls(list);
        return ncclSystemError;
    }
    do { /* a caller that did not wait for ncclSuccess first: NCCL would refuse; the fake waits */
        busy = 0;
        for (struct fake_gcall *g = list; g; g = g->next)
            busy |= __atomic_load_n(&g->comm->helpers, __ATOMIC_ACQUIRE) > 0;
        if (busy)
            nanosleep(&nap, NULL);
    } while (busy);
    j->list = list;
    pthread_mutex_lock(&g_mu);
    for (struct fake_gcall *g = list; g; g = g->next) {
        __atomic_add_fetch(&g->comm->helpers, 1, __ATOMIC_RELEASE);
        g->comm->inside++; /* an abort waits for the helper */
    }
    pthread_mutex_unlock(&g_mu);
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &at, fake_helper, j) != 0) {
        pthread_attr_destroy(&at);
        fake_helper(j); /* no thread: done here */
        return ncclInProgress;
    }
    pthread_attr_destroy(&at);
    return ncclInProgress;
}

/* Whether the calls of list go to a helper thread: every one on a non-blocking rank of ncclCommInitRank. */
static int fake_async_calls(const struct fake_gcall *list)
{
    if (!list || !fake_async_mode())
        return 0;
    for (; list; list = list->next)
        if (!list->comm->sh || list->comm->blocking)
            return 0;
    return 1;
}

/* One call: inside a group it is recorded for ncclGroupEnd; else posted and finished. */
static ncclResult_t fake_call(struct fake_comm *c, const struct fake_args *a)
{
    ncclResult_t rc;

    pthread_mutex_lock(&g_mu);
    rc = fake_check_args(c, a);
    if (rc != ncclSuccess)
        goto out;
    if (a->kind != K_INIT)
        fake_exit_at(c);
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
    if (c->sh && !c->blocking && fake_async_mode()) {
        struct fake_gcall *g = calloc(1, sizeof(*g));

        pthread_mutex_unlock(&g_mu);
        if (!g)
            return ncclSystemError;
        g->comm = c;
        g->a = *a;
        return fake_async_start(g);
    }
    c->inside++;
    if (c->sh) {
        /* waits without g_mu: an abort from another thread takes it */
        pthread_mutex_unlock(&g_mu);
        if (a->kind != K_INIT)
            rc = sh_post_locked(c, a);
        if (rc == ncclSuccess)
            rc = sh_finish(c);
        pthread_mutex_lock(&g_mu);
    } else {
        if (a->kind != K_INIT)
            rc = fake_post(c, a);
        if (rc == ncclSuccess)
            rc = fake_finish(c);
    }
    c->inside--;
    pthread_cond_broadcast(&g_cv);
out:
    pthread_mutex_unlock(&g_mu);
    return rc;
}

/* ---------------------------------------------------------------- the API */

/* FAKE_NCCL_LOG=FILE: one line per call a test looks for (collectives' buffers and stream, registrations, config). */
static void fake_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fake_log(const char *fmt, ...)
{
    const char *path = getenv("FAKE_NCCL_LOG");
    char line[512];
    va_list ap;
    int fd, n;

    if (!path || !*path)
        return;
    va_start(ap, fmt);
    n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
    va_end(ap);
    if (n < 0 || (fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0600)) < 0)
        return;
    n = n > (int)sizeof(line) - 2 ? (int)sizeof(line) - 2 : n;
    line[n++] = '\n';
    if (write(fd, line, (size_t)n) != n) { /* a test's log: nothing to do about it */
    }
    close(fd);
}

/* ncclCommRegister (2.19): any buffer; the handle is the buffer itself, checked at deregistration. */
static ncclResult_t fake_comm_register(ncclComm_t c, void *buf, size_t size, void **handle)
{
    if (!c || !buf || !handle)
        return ncclInvalidArgument;
    *handle = buf;
    fake_log("ncclCommRegister rank=%d buff=%p size=%zu", c->rank, buf, size);
    return ncclSuccess;
}

static ncclResult_t fake_comm_deregister(ncclComm_t c, void *handle)
{
    if (!c || !handle)
        return ncclInvalidArgument;
    fake_log("ncclCommDeregister rank=%d buff=%p", c->rank, handle);
    return ncclSuccess;
}

/* ncclCommWindowRegister (2.27): the window is the buffer itself. */
static ncclResult_t fake_comm_window_register(ncclComm_t c, void *buf, size_t size, void **win, int flags)
{
    if (!c || !buf || !win)
        return ncclInvalidArgument;
    *win = buf;
    fake_log("ncclCommWindowRegister rank=%d buff=%p size=%zu flags=%d", c->rank, buf, size, flags);
    return ncclSuccess;
}

static ncclResult_t fake_comm_window_deregister(ncclComm_t c, void *win)
{
    if (!c || !win)
        return ncclInvalidArgument;
    fake_log("ncclCommWindowDeregister rank=%d buff=%p", c->rank, win);
    return ncclSuccess;
}

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
    ncclResult_t rc;

    if (!id)
        return ncclInvalidArgument;
    pthread_mutex_lock(&g_mu);
    rc = sh_create(id);
    pthread_mutex_unlock(&g_mu);
    return rc;
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

/* Communicators made and not yet destroyed or aborted in this process (fake_nccl_live_comms, for tests). */
static int g_live_comms;
FAKE_EXPORT int fake_nccl_live_comms(void) { return __atomic_load_n(&g_live_comms, __ATOMIC_RELAXED); }

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
    c->nranks = cl->nranks;
    cl->ranks[rank] = c;
    cl->joined++;
    cl->refs++;
    __atomic_add_fetch(&g_live_comms, 1, __ATOMIC_RELAXED);
    return c;
}

static ncclResult_t fake_init_rank(ncclComm_t *out, int nranks, ncclUniqueId id, int rank, int blocking)
{
    struct fake_comm *c;
    struct fake_args a = {.kind = K_INIT};
    ncclResult_t rc;

    if (!out || nranks < 1 || rank < 0 || rank >= nranks) {
        pthread_mutex_lock(&g_mu);
        fake_fail("invalid rank or rank count");
        pthread_mutex_unlock(&g_mu);
        return ncclInvalidArgument;
    }
    c = calloc(1, sizeof(*c));
    if (!c) {
        pthread_mutex_lock(&g_mu);
        fake_fail("out of memory");
        pthread_mutex_unlock(&g_mu);
        return ncclSystemError;
    }
    c->rank = c->dev = rank;
    c->threaded = 1;
    c->blocking = blocking;
    rc = sh_join(c, &id, nranks, rank);
    if (rc != ncclSuccess) {
        free(c);
        return rc;
    }
    *out = c;
    __atomic_add_fetch(&g_live_comms, 1, __ATOMIC_RELAXED);
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
    if (cfg && cfg->version >= 22700 && cfg->size >= sizeof(fake_config_227))
        fake_log("ncclCommInitRankConfig rank=%d CTAPolicy=%d", rank, ((const fake_config_227 *)cfg)->CTAPolicy);
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
    __atomic_sub_fetch(&g_live_comms, 1, __ATOMIC_RELAXED);
    pthread_mutex_lock(&g_mu);
    if (c->sh) {
        __atomic_store_n(&c->aborted, 1, __ATOMIC_RELEASE);
        while (c->inside > 0)
            pthread_cond_wait(&g_cv, &g_mu);
        sh_release(c);
        free(c);
    } else {
        fake_comm_release(c);
    }
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
    if (c->sh) {
        if (__atomic_load_n(&c->helpers, __ATOMIC_ACQUIRE) > 0) { /* its helper thread has not run yet */
            *err = ncclInProgress;
            return ncclSuccess;
        }
        /* polling progresses the comm: outputs are written here once every rank's part is in */
        sh_lock(c->sh);
        *err = sh_state(c);
        sh_unlock(c->sh);
        return ncclSuccess;
    }
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
    *n = c->nranks;
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

static ncclResult_t fake_group_post(struct fake_comm *c, const struct fake_args *a)
{
    ncclResult_t rc;

    if (c->sh)
        return sh_post_locked(c, a);
    pthread_mutex_lock(&g_mu);
    rc = fake_post(c, a);
    pthread_mutex_unlock(&g_mu);
    return rc;
}

static ncclResult_t fake_group_finish(struct fake_comm *c)
{
    ncclResult_t rc;

    if (c->sh)
        return sh_finish(c);
    pthread_mutex_lock(&g_mu);
    rc = fake_finish(c);
    pthread_mutex_unlock(&g_mu);
    return rc;
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
    if (fake_async_calls(list))
        return fake_async_start(list);
    pthread_mutex_lock(&g_mu);
    for (g = list; g; g = g->next)
        g->comm->inside++;
    pthread_mutex_unlock(&g_mu);
    /* sends and collectives first, receives after: an in-place exchange reads before it writes */
    for (int pass = 0; pass < 2; pass++)
        for (g = list; g; g = g->next)
            if (g->a.kind != K_INIT && (g->a.kind == K_RECV) == pass && rc == ncclSuccess)
                rc = fake_group_post(g->comm, &g->a);
    /* all posted before any waits: ranks of one communicator in this thread complete each other */
    for (g = list; g && rc == ncclSuccess; g = g->next) {
        r = fake_group_finish(g->comm);
        if (r != ncclSuccess)
            rc = r;
    }
    pthread_mutex_lock(&g_mu);
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

    fake_log("ncclAllReduce rank=%d send=%p recv=%p count=%zu stream=%p", c ? c->rank : -1, s, r, n, st);
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
    const char *warn = getenv("FAKE_NCCL_WARN");

    (void)c;
    return !g_last[0] && warn ? warn : g_last; /* racy by design, as NCCL's: a diagnostic string */
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
FAKE_API(ncclCommRegister, fake_comm_register, ncclResult_t, (ncclComm_t, void *, size_t, void **),
         fake_version() >= 21900)
FAKE_API(ncclCommDeregister, fake_comm_deregister, ncclResult_t, (ncclComm_t, void *), fake_version() >= 21900)
FAKE_API(ncclCommWindowRegister, fake_comm_window_register, ncclResult_t, (ncclComm_t, void *, size_t, void **, int),
         fake_version() >= 22700)
FAKE_API(ncclCommWindowDeregister, fake_comm_window_deregister, ncclResult_t, (ncclComm_t, void *),
         fake_version() >= 22700)
