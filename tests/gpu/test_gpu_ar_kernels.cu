/*
 * Device code of the all-reduce stress test (test_gpu_allreduce_stress.c),
 * built into a fatbin of its own and loaded by the test with
 * cuModuleLoadData, as the library loads its kernels: the calls' inputs, the
 * checker that keeps a million calls' checking on the GPU, a kernel that
 * keeps a GPU busy for a while by its own clock, and one that holds a stream
 * until the host releases it.
 *
 * The inputs are inexact on purpose (random mantissas and exponents over a
 * range), so the order of the additions shows in the sums: the checker
 * computes the sum as the API documents it (the ranks' values added in rank
 * order in fp32, rounded once to the type) and wants it bit for bit, and
 * compares each rank's output with rank 0's byte for byte.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

typedef unsigned long long u64;

/* PSC_AR_FLOAT16, _FLOAT32, _BFLOAT16 of p2pscope.h */
#define T_F16 6u
#define T_F32 7u
#define T_BF16 9u

static __device__ __forceinline__ u64 t_clock(void)
{
    u64 t;

    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

static __device__ __forceinline__ u64 t_mix(u64 x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Rank r's element j of input `seed`: finite, either sign, sums far from overflow. */
static __device__ __forceinline__ unsigned t_in(unsigned dt, unsigned seed, unsigned r, u64 j)
{
    u64 h = t_mix(((u64)seed << 40) ^ ((u64)r << 32) ^ j);
    unsigned sign = (unsigned)(h & 1);

    if (dt == T_F32)
        return sign << 31 | (unsigned)(110 + (h >> 1) % 30) << 23 | ((unsigned)(h >> 16) & 0x7fffffu);
    if (dt == T_BF16)
        return sign << 15 | (unsigned)(110 + (h >> 1) % 30) << 7 | ((unsigned)(h >> 16) & 0x7fu);
    return sign << 15 | (unsigned)(2 + (h >> 1) % 22) << 10 | ((unsigned)(h >> 16) & 0x3ffu);
}

static __device__ __forceinline__ float t_val(unsigned dt, unsigned b)
{
    if (dt == T_F32)
        return __uint_as_float(b);
    if (dt == T_BF16)
        return __uint_as_float(b << 16);
    return __half2float(__ushort_as_half((unsigned short)b));
}

static __device__ __forceinline__ unsigned t_round(unsigned dt, float acc)
{
    if (dt == T_F32)
        return __float_as_uint(acc);
    if (dt == T_BF16)
        return __bfloat16_as_ushort(__float2bfloat16_rn(acc));
    return __half_as_ushort(__float2half_rn(acc));
}

static __device__ __forceinline__ unsigned t_load(const unsigned char *p, unsigned dt, u64 j)
{
    return dt == T_F32 ? ((const unsigned *)p)[j] : ((const unsigned short *)p)[j];
}

/* Rank `rank`'s input of `count` elements of dt from `seed`. */
extern "C" __global__ void ar_t_fill(unsigned char *p, u64 count, unsigned dt, unsigned seed, unsigned rank)
{
    for (u64 j = (u64)blockIdx.x * blockDim.x + threadIdx.x; j < count; j += (u64)gridDim.x * blockDim.x) {
        unsigned b = t_in(dt, seed, rank, j);

        if (dt == T_F32)
            ((unsigned *)p)[j] = b;
        else
            ((unsigned short *)p)[j] = (unsigned short)b;
    }
}

/*
 * Call `call`'s output on one rank: every element j the documented sum of the nranks inputs of `seed` at element
 * base + j (a reduce-scatter's part: base is the part's first element; 0 for an all-reduce), or (part not 0: an
 * all-gather of parts of `part` elements) rank j / part's input at j % part bit for bit, and (ref not NULL:
 * rank 0's output, read through peer access) equal to ref's. res: [0] wrong elements, [1] the first call with
 * one, [2] elements unlike rank 0's, [3] the first call with one, [4] elements checked.
 */
extern "C" __global__ void ar_t_check(const unsigned char *out, const unsigned char *ref, u64 count, unsigned dt,
                                      unsigned seed, unsigned nranks, u64 call, u64 *res, u64 base, u64 part)
{
    u64 wrong = 0, unlike = 0, seen = 0;

    for (u64 j = (u64)blockIdx.x * blockDim.x + threadIdx.x; j < count; j += (u64)gridDim.x * blockDim.x) {
        float acc = t_val(dt, t_in(dt, seed, 0, base + j));
        unsigned got = t_load(out, dt, j);

        if (part) { /* an all-gather's: element j is rank j / part's input at j % part, as it was */
            wrong += got != t_in(dt, seed, (unsigned)(j / part), j % part);
            unlike += ref && got != t_load(ref, dt, j);
            seen++;
            continue;
        }
        for (unsigned r = 1; r < nranks; r++)
            acc = __fadd_rn(acc, t_val(dt, t_in(dt, seed, r, base + j))); /* no contraction: one rounding each */
        wrong += got != t_round(dt, acc);
        unlike += ref && got != t_load(ref, dt, j);
        seen++;
    }
    if (wrong) {
        atomicAdd(&res[0], wrong);
        atomicMin(&res[1], call);
    }
    if (unlike) {
        atomicAdd(&res[2], unlike);
        atomicMin(&res[3], call);
    }
    if (seen)
        atomicAdd(&res[4], seen);
}

/* Keep the GPU's SMs busy for ns of its own clock (each block from its start); done counts the blocks. */
extern "C" __global__ void ar_t_busy(u64 ns, unsigned *done)
{
    __shared__ u64 start;

    if (threadIdx.x == 0)
        start = t_clock();
    __syncthreads();
    while (t_clock() - start < ns)
        __nanosleep(100);
    __syncthreads();
    if (threadIdx.x == 0)
        atomicAdd(done, 1u);
}

/* Hold the stream until the host writes *release != 0 (host-mapped memory), or give up after timeout_ns. */
extern "C" __global__ void ar_t_hold(const volatile unsigned *release, u64 timeout_ns, unsigned *timed_out)
{
    u64 start = t_clock();

    while (*release == 0) {
        if (t_clock() - start > timeout_ns) {
            *timed_out = 1;
            return;
        }
        __nanosleep(1000);
    }
}
