/*
 * The data of p2pscope coll: what element i of rank r's input holds, and
 * what every reduction of those inputs must give. Each input is a small
 * integer (or, for products, a power of two) chosen from the type and the
 * number of ranks so that every partial result the reduction can form, in
 * any order, is exact in the type: so every reduction has one exact answer,
 * checked bit for bit (averages of floating-point types, which divide,
 * excepted: exact only where the rank count is a power of two). Pure
 * functions, for the host and (PSC_HD) for the kernels that fill and check.
 */
#ifndef PSC_COLL_VALUES_H
#define PSC_COLL_VALUES_H

#include <stdint.h>
#include <string.h>

#include "p2pscope/bench.h"

#ifdef PSC_HD /* pattern/pattern.h's, in the kernels' translation unit: this header's own from here */
#undef PSC_HD
#endif
#ifdef __CUDACC__
#define PSC_HD static inline __host__ __device__
#else
#define PSC_HD static inline
#endif

/* The largest whole number m such that every integer from -m (signed types) or 0 up to m is exact in dtype. */
PSC_HD double psc__coll_exact_max(int dtype)
{
    switch (dtype) {
    case PSC_DT_INT8: return 127;
    case PSC_DT_UINT8: return 255;
    case PSC_DT_INT32: return 2147483647.0;
    case PSC_DT_UINT32: return 4294967295.0;
    case PSC_DT_INT64:
    case PSC_DT_UINT64:
    case PSC_DT_FLOAT64: return 9007199254740992.0; /* 2^53: the host computes expectations in double */
    case PSC_DT_FLOAT16: return 2048;               /* 11 significant bits */
    case PSC_DT_FLOAT32: return 16777216;           /* 24 */
    case PSC_DT_BFLOAT16: return 256;               /* 8 */
    default: return 0;
    }
}

/* The largest power of two a product may reach: 2^k exact and in range. */
PSC_HD int psc__coll_max_pow2(int dtype)
{
    switch (dtype) {
    case PSC_DT_INT8: return 6;
    case PSC_DT_UINT8: return 7;
    case PSC_DT_INT32: return 30;
    case PSC_DT_UINT32: return 31;
    case PSC_DT_INT64: return 62;
    case PSC_DT_UINT64: return 63;
    case PSC_DT_FLOAT16: return 15; /* 65504 is the largest finite half */
    default: return 60;             /* float, double, bfloat16: far inside their range */
    }
}

PSC_HD int psc__coll_signed(int dtype)
{
    return dtype == PSC_DT_INT8 || dtype == PSC_DT_INT32 || dtype == PSC_DT_INT64 || dtype == PSC_DT_FLOAT16 ||
           dtype == PSC_DT_FLOAT32 || dtype == PSC_DT_FLOAT64 || dtype == PSC_DT_BFLOAT16;
}

/* A well-mixed 32-bit hash of (seed, element, rank). */
PSC_HD uint32_t psc__coll_hash(uint32_t seed, uint64_t i, int rank)
{
    uint64_t x = (i + 0x9e3779b97f4a7c15ull * (seed + 1u)) ^ ((uint64_t)(uint32_t)rank << 40);

    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return (uint32_t)x;
}

/* The largest value a rank's input holds for a sum (or average) over n ranks, 0 when too many ranks for that. */
PSC_HD int64_t psc__coll_sum_limit(int dtype, int n)
{
    double per = psc__coll_exact_max(dtype) / (n > 0 ? n : 1);

    return per >= 15 ? 15 : per >= 1 ? (int64_t)per : 0;
}

/*
 * Element i of rank r's input (rank r of n) for op (psc_redop_t, or -1 for
 * collectives that only move data), as a whole number the type holds exactly.
 */
PSC_HD int64_t psc__coll_input(int op, int dtype, int n, int r, uint64_t i, uint32_t seed)
{
    uint32_t h = psc__coll_hash(seed, i, r);

    switch (op) {
    case PSC_OP_SUM:
    case PSC_OP_AVG: {
        int64_t lim = psc__coll_sum_limit(dtype, n);

        /* too many ranks for the type: one rank per element holds 1, the sum is 1 */
        return lim ? (int64_t)(h % (uint32_t)(lim + 1)) : (int64_t)(i % (uint64_t)n == (uint64_t)r);
    }
    case PSC_OP_PROD: {
        /* t of the n ranks hold 2, the others 1: the product is 2^t whatever the order */
        int k = psc__coll_max_pow2(dtype) < n ? psc__coll_max_pow2(dtype) : n;
        uint32_t t = psc__coll_hash(seed, i, -1) % (uint32_t)(k + 1);

        return ((i + (uint64_t)r) % (uint64_t)n) < t ? 2 : 1;
    }
    case PSC_OP_MIN:
    case PSC_OP_MAX: return psc__coll_signed(dtype) ? (int64_t)(h % 201u) - 100 : (int64_t)(h % 201u);
    default: {
        /* data only moved: as wide a range as the type holds exactly (up to 2^20) */
        double m = psc__coll_exact_max(dtype);
        uint32_t range = m >= 1048576 ? 1048576u : (uint32_t)m;

        return (int64_t)(h % (range + 1u)) - (psc__coll_signed(dtype) ? (int64_t)(range / 2) : 0);
    }
    }
}

/*
 * What reducing element i of every rank's input with op gives (n ranks), in
 * double: exact for every op but AVG, whose result is the exact quotient
 * (the type's rounding of it is the checker's business).
 */
PSC_HD double psc__coll_reduced(int op, int dtype, int n, uint64_t i, uint32_t seed)
{
    double acc = (double)psc__coll_input(op, dtype, n, 0, i, seed);

    for (int r = 1; r < n; r++) {
        double v = (double)psc__coll_input(op, dtype, n, r, i, seed);

        switch (op) {
        case PSC_OP_PROD: acc *= v; break;
        case PSC_OP_MIN: acc = v < acc ? v : acc; break;
        case PSC_OP_MAX: acc = v > acc ? v : acc; break;
        default: acc += v; break;
        }
    }
    return op == PSC_OP_AVG ? acc / n : acc;
}

/* ---- the data of one collective on one rank: fill and check (coll_data.c, the kernels, the fake's) */

/* The bytes of one element of dtype (psc_dtype_size, for both sides). */
PSC_HD unsigned psc__coll_esize(int dtype)
{
    switch (dtype) {
    case PSC_DT_INT8:
    case PSC_DT_UINT8: return 1;
    case PSC_DT_FLOAT16:
    case PSC_DT_BFLOAT16: return 2;
    case PSC_DT_INT32:
    case PSC_DT_UINT32:
    case PSC_DT_FLOAT32: return 4;
    case PSC_DT_INT64:
    case PSC_DT_UINT64:
    case PSC_DT_FLOAT64: return 8;
    default: return 0;
    }
}

PSC_HD int psc__coll_is_float(int dtype)
{
    return dtype == PSC_DT_FLOAT16 || dtype == PSC_DT_FLOAT32 || dtype == PSC_DT_FLOAT64 || dtype == PSC_DT_BFLOAT16;
}

/* 2^k as a double, for k in the normal range (bits built directly: no libm on either side). */
PSC_HD double psc__coll_pow2(int k)
{
    uint64_t b = (uint64_t)(k + 1023) << 52;
    double v;

    memcpy(&v, &b, 8);
    return v;
}

/*
 * v in a binary format of `man` fraction and `expb` exponent bits (half: 10, 5; bfloat16: 7, 8), rounded to
 * nearest even, as bits: the one rounding from double, never through float (which could round twice).
 */
PSC_HD uint64_t psc__coll_fp_bits(double v, int man, int expb)
{
    uint64_t x, full, out, sign;
    int e, te, shift, bias = (1 << (expb - 1)) - 1;
    const uint64_t inf = ((1ull << expb) - 1) << man;

    memcpy(&x, &v, 8);
    sign = (x >> 63) << (man + expb);
    e = (int)((x >> 52) & 0x7ff);
    full = (x & ((1ull << 52) - 1)) | (1ull << 52);
    if (e == 0x7ff)
        return sign | inf | ((x & ((1ull << 52) - 1)) ? 1ull << (man - 1) : 0);
    if (e == 0) /* zero, or a double subnormal: far below these formats' smallest */
        return sign;
    te = e - 1023 + bias;
    shift = 52 - man;
    if (te <= 0) { /* a subnormal of the format: fewer fraction bits */
        shift += 1 - te;
        te = 0;
    }
    if (shift > 53)
        return sign;
    {
        uint64_t q = full >> shift, rem = full & ((1ull << shift) - 1), half = 1ull << (shift - 1);

        if (rem > half || (rem == half && (q & 1)))
            q++;
        /* the implicit bit moves into the exponent field; a carry out of the fraction raises it, as it should */
        out = te > 0 ? ((uint64_t)(te - 1) << man) + q : q;
    }
    return sign | (out >= inf ? inf : out);
}

/* The value of bits b in that format. */
PSC_HD double psc__coll_fp_value(uint64_t b, int man, int expb)
{
    int bias = (1 << (expb - 1)) - 1;
    uint64_t e = (b >> man) & ((1ull << expb) - 1), m = b & ((1ull << man) - 1);
    double v;

    if (e == (1ull << expb) - 1) {
        uint64_t d = 0x7ffull << 52 | (m ? 1ull << 51 : 0);

        memcpy(&v, &d, 8);
    } else if (e == 0) {
        v = (double)m * psc__coll_pow2(1 - bias - man);
    } else {
        v = (double)(m | (1ull << man)) * psc__coll_pow2((int)e - bias - man);
    }
    return (b >> (man + expb)) & 1 ? -v : v;
}

/* v (a whole number the type holds, or for an average the quotient to round) as dtype's bits. */
PSC_HD uint64_t psc__coll_to_bits(int dtype, double v)
{
    switch (dtype) {
    case PSC_DT_INT8: return (uint8_t)(int8_t)v;
    case PSC_DT_UINT8: return (uint8_t)v;
    case PSC_DT_INT32: return (uint32_t)(int32_t)v;
    case PSC_DT_UINT32: return (uint32_t)v;
    case PSC_DT_INT64: return (uint64_t)(int64_t)v;
    case PSC_DT_UINT64: return (uint64_t)v;
    case PSC_DT_FLOAT16: return psc__coll_fp_bits(v, 10, 5);
    case PSC_DT_BFLOAT16: return psc__coll_fp_bits(v, 7, 8);
    case PSC_DT_FLOAT32: {
        float f = (float)v;
        uint32_t b;

        memcpy(&b, &f, 4);
        return b;
    }
    default: {
        uint64_t b;

        memcpy(&b, &v, 8);
        return b;
    }
    }
}

/* The value dtype's bits b hold. */
PSC_HD double psc__coll_from_bits(int dtype, uint64_t b)
{
    switch (dtype) {
    case PSC_DT_INT8: return (double)(int8_t)(uint8_t)b;
    case PSC_DT_UINT8: return (double)(uint8_t)b;
    case PSC_DT_INT32: return (double)(int32_t)(uint32_t)b;
    case PSC_DT_UINT32: return (double)(uint32_t)b;
    case PSC_DT_INT64: return (double)(int64_t)b;
    case PSC_DT_UINT64: return (double)b;
    case PSC_DT_FLOAT16: return psc__coll_fp_value(b, 10, 5);
    case PSC_DT_BFLOAT16: return psc__coll_fp_value(b, 7, 8);
    case PSC_DT_FLOAT32: {
        uint32_t w = (uint32_t)b;
        float f;

        memcpy(&f, &w, 4);
        return f;
    }
    default: {
        double v;

        memcpy(&v, &b, 8);
        return v;
    }
    }
}

/* All ones in dtype's width. */
PSC_HD uint64_t psc__coll_mask(int dtype)
{
    unsigned s = psc__coll_esize(dtype);

    return s >= 8 ? ~0ull : (1ull << (8 * s)) - 1;
}

/*
 * An average of a floating type (NCCL: each input times (T)(1/n), summed) is right within 2 ulps of the type
 * at the exact quotient (nccl-tests' tolerance); every other result exactly, bit for bit.
 */
PSC_HD int psc__coll_avg_ok(int dtype, uint64_t got, double exact)
{
    double a = exact < 0 ? -exact : exact, g = psc__coll_from_bits(dtype, got);
    uint64_t b = psc__coll_to_bits(dtype, a);
    double ulp = psc__coll_from_bits(dtype, b + 1) - psc__coll_from_bits(dtype, b), d = g - exact;

    return (d < 0 ? -d : d) <= 2 * ulp; /* false for NaN */
}

/*
 * One rank's part in one collective (nccl-tests' parameters): what its send and recv buffers hold before and
 * after. A plain struct: the kernels take it by value.
 */
typedef struct {
    int coll, dtype, op;    /* psc_coll_t, psc_dtype_t, psc_redop_t (ignored where the collective reduces nothing) */
    int nranks, rank, root; /* root: broadcast and reduce */
    int in_place;
    uint64_t count;         /* nccl-tests' param count (per rank; per part for all_gather, reduce_scatter, alltoall) */
    uint32_t seed;          /* slot s holds seed + s */
} psc_coll_data_t;

PSC_HD int psc__coll_reduces(int coll)
{
    return coll == PSC_COLL_ALL_REDUCE || coll == PSC_COLL_REDUCE_SCATTER || coll == PSC_COLL_REDUCE;
}

/* The op the inputs are made for: -1 where data only moves (send/recv too, whatever nccl-tests prints). */
PSC_HD int psc__coll_in_op(const psc_coll_data_t *d)
{
    return psc__coll_reduces(d->coll) ? d->op : -1;
}

/* Elements of one rank's send and recv buffers (nccl-tests' getCollByteCount, from its param count). */
PSC_HD uint64_t psc__coll_send_n(const psc_coll_data_t *d)
{
    return d->coll == PSC_COLL_REDUCE_SCATTER || d->coll == PSC_COLL_ALL_TO_ALL ? d->count * (uint64_t)d->nranks
                                                                               : d->count;
}

PSC_HD uint64_t psc__coll_recv_n(const psc_coll_data_t *d)
{
    return d->coll == PSC_COLL_ALL_GATHER || d->coll == PSC_COLL_ALL_TO_ALL ? d->count * (uint64_t)d->nranks
                                                                           : d->count;
}

/* Elements from recv's start that the fill writes: in place the input lives there too. */
PSC_HD uint64_t psc__coll_area_n(const psc_coll_data_t *d)
{
    uint64_t s = psc__coll_send_n(d), r = psc__coll_recv_n(d);

    return d->in_place && s > r ? s : r;
}

/* In place: where the input starts inside recv (all_gather: the rank's part). */
PSC_HD uint64_t psc__coll_in_off(const psc_coll_data_t *d)
{
    return d->in_place && d->coll == PSC_COLL_ALL_GATHER ? (uint64_t)d->rank * d->count : 0;
}

/* Where the output starts inside recv (in-place reduce_scatter: the rank's part), and its elements. */
PSC_HD uint64_t psc__coll_out_off(const psc_coll_data_t *d)
{
    return d->in_place && d->coll == PSC_COLL_REDUCE_SCATTER ? (uint64_t)d->rank * d->count : 0;
}

PSC_HD uint64_t psc__coll_out_n(const psc_coll_data_t *d)
{
    return psc__coll_recv_n(d);
}

/* Element k of this rank's input (slot seed s), as dtype's bits. */
PSC_HD uint64_t psc__coll_input_bits(const psc_coll_data_t *d, uint32_t s, uint64_t k)
{
    return psc__coll_to_bits(d->dtype,
                             (double)psc__coll_input(psc__coll_in_op(d), d->dtype, d->nranks, d->rank, k, s));
}

/*
 * What output element j holds when the collective did its job, as a value (a reduction: exact, an average
 * of a floating type the exact quotient). *red: 1 where that is a floating average. Reduce's non-root ranks
 * out of place are given the reduction too: their expectation is the "before" value made from it.
 */
PSC_HD double psc__coll_natural(const psc_coll_data_t *d, uint32_t s, uint64_t j, int *red)
{
    int n = d->nranks, r = d->rank, dt = d->dtype;
    uint64_t c = d->count;

    *red = 0;
    switch (d->coll) {
    case PSC_COLL_ALL_GATHER: return (double)psc__coll_input(-1, dt, n, (int)(j / c), j % c, s);
    case PSC_COLL_BROADCAST: return (double)psc__coll_input(-1, dt, n, d->root, j, s);
    case PSC_COLL_ALL_TO_ALL: return (double)psc__coll_input(-1, dt, n, (int)(j / c), (uint64_t)r * c + j % c, s);
    case PSC_COLL_SEND_RECV: return (double)psc__coll_input(-1, dt, n, (r - 1 + n) % n, j, s);
    case PSC_COLL_REDUCE:
        if (d->in_place && r != d->root) /* its recv is its input, left as it was */
            return (double)psc__coll_input(d->op, dt, n, r, j, s);
        break;
    case PSC_COLL_REDUCE_SCATTER: j += (uint64_t)r * c; break;
    default: break;
    }
    {
        double v = psc__coll_reduced(d->op, dt, n, j, s);

        if (d->op == PSC_OP_AVG && !psc__coll_is_float(dt))
            return (double)(int64_t)v; /* integers: the sum divided by n, truncated (the sums are never negative) */
        *red = d->op == PSC_OP_AVG;
        return v;
    }
}

/* The "before" value of output element j: the bitwise complement of the right one, so never right itself. */
PSC_HD uint64_t psc__coll_before_bits(const psc_coll_data_t *d, uint32_t s, uint64_t j)
{
    int red;

    return ~psc__coll_to_bits(d->dtype, psc__coll_natural(d, s, j, &red)) & psc__coll_mask(d->dtype);
}

PSC_HD int psc__coll_untouched(const psc_coll_data_t *d)
{
    return d->coll == PSC_COLL_REDUCE && !d->in_place && d->rank != d->root;
}

/* What recv element a (from recv's start, a < psc__coll_area_n) holds after the fill. */
PSC_HD uint64_t psc__coll_recv_init_bits(const psc_coll_data_t *d, uint32_t s, uint64_t a)
{
    uint64_t in = psc__coll_in_off(d);
    int input = d->in_place && a >= in && a - in < psc__coll_send_n(d);

    if (input && d->coll == PSC_COLL_BROADCAST && d->rank != d->root)
        input = 0; /* a non-root's input is never read: the "before" value shows a missed write */
    return input ? psc__coll_input_bits(d, s, a - in) : psc__coll_before_bits(d, s, a - psc__coll_out_off(d));
}

/* The right bits of output element j (slot seed s), *red 1 where a floating average (then within 2 ulps). */
PSC_HD uint64_t psc__coll_want_bits(const psc_coll_data_t *d, uint32_t s, uint64_t j, double *exact, int *red)
{
    if (psc__coll_untouched(d)) {
        *red = 0;
        *exact = 0;
        return psc__coll_before_bits(d, s, j);
    }
    *exact = psc__coll_natural(d, s, j, red);
    return psc__coll_to_bits(d->dtype, *exact);
}

/* 1 when output element j holding `got` is wrong. */
PSC_HD int psc__coll_wrong(const psc_coll_data_t *d, uint32_t s, uint64_t j, uint64_t got)
{
    double exact;
    int red;
    uint64_t want = psc__coll_want_bits(d, s, j, &exact, &red);

    if (got == want)
        return 0;
    return !(red && psc__coll_avg_ok(d->dtype, got, exact));
}

#endif
