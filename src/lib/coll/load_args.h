/*
 * What the host (coll_load.c) and the compute-load kernel (src/kernels/psc_compute_load.cuh) share: its block
 * size and its blocks per SM (one wave). Plain C, included by both sides, as allreduce/ar_args.h is.
 */
#ifndef PSC_COLL_LOAD_ARGS_H
#define PSC_COLL_LOAD_ARGS_H

#define PSC_LOAD_THREADS 256
#define PSC_LOAD_BLOCKS_PER_SM 4

#endif
