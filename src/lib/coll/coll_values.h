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

#include "p2pscope/bench.h"

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

#endif
