/*
 * coll's compute load (src/lib/coll/coll_load.c), included by psc_kernels.cu: a matrix-multiply-like kernel
 * that keeps every SM's arithmetic busy for a set time, as a GEMM's tiles do. Each block holds two 16 x 64 fp32
 * tiles in shared memory; each of its 256 threads accumulates a 4 x 4 block of their product in registers,
 * `rounds` times over (16 FMAs per pair of shared loads, no global traffic in the loop), and writes its sum once
 * so nothing is optimised away. A grid of PSC_LOAD_BLOCKS_PER_SM blocks per SM is one wave: the blocks retire
 * together, and work queued on other streams (the collectives) takes the SMs as they free.
 */
#include "coll/load_args.h"

extern "C" __global__ void __launch_bounds__(PSC_LOAD_THREADS, PSC_LOAD_BLOCKS_PER_SM)
    psc_compute_load(float *out, unsigned rounds)
{
    __shared__ __align__(16) float a[16][64], b[16][64];
    const unsigned t = threadIdx.x, row = (t / 16) * 4, col = (t % 16) * 4;
    float acc[4][4];
    float s = 0;

    for (unsigned i = t; i < 16 * 64; i += blockDim.x) {
        a[i / 64][i % 64] = 1.0f + (float)(i % 7) * 1e-3f;
        b[i / 64][i % 64] = 1.0f - (float)(i % 5) * 1e-3f;
    }
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            acc[i][j] = 0;
    __syncthreads();
    for (unsigned r = 0; r < rounds; r++)
#pragma unroll
        for (int k = 0; k < 16; k++) {
            const float4 av = *reinterpret_cast<const float4 *>(&a[k][row]);
            const float4 bv = *reinterpret_cast<const float4 *>(&b[k][col]);
            const float x[4] = {av.x, av.y, av.z, av.w}, y[4] = {bv.x, bv.y, bv.z, bv.w};

#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 4; j++)
                    acc[i][j] = fmaf(x[i], y[j], acc[i][j]);
        }
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            s += acc[i][j];
    out[(u64)blockIdx.x * PSC_LOAD_THREADS + t] = s;
}
