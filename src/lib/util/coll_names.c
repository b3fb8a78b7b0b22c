/* The names and rules of nccl-tests' table: collectives, types, reductions, bus bandwidth factors. */
#include <stddef.h>

#include "p2pscope_private.h"

const char *psc_coll_name(int coll)
{
    static const char *const names[PSC_COLL_N] = {"all_reduce", "all_gather", "reduce_scatter", "broadcast",
                                                  "reduce",     "alltoall",   "sendrecv"};

    return coll >= 0 && coll < PSC_COLL_N ? names[coll] : NULL;
}

const char *psc_coll_perf_name(int coll)
{
    static const char *const names[PSC_COLL_N] = {"all_reduce_perf", "all_gather_perf", "reduce_scatter_perf",
                                                  "broadcast_perf",  "reduce_perf",     "alltoall_perf",
                                                  "sendrecv_perf"};

    return coll >= 0 && coll < PSC_COLL_N ? names[coll] : NULL;
}

const char *psc_dtype_name(int dtype)
{
    static const char *const names[PSC_DT_N] = {"int8",  "uint8", "int32",  "uint32", "int64",
                                                "uint64", "half", "float", "double", "bfloat16"};

    return dtype >= 0 && dtype < PSC_DT_N ? names[dtype] : NULL;
}

size_t psc_dtype_size(int dtype)
{
    static const unsigned char sizes[PSC_DT_N] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2};

    return dtype >= 0 && dtype < PSC_DT_N ? sizes[dtype] : 0;
}

const char *psc_redop_name(int op)
{
    static const char *const names[PSC_OP_N] = {"sum", "prod", "max", "min", "avg"};

    return op >= 0 && op < PSC_OP_N ? names[op] : NULL;
}

double psc_coll_busbw_factor(int coll, int nranks)
{
    if (nranks < 1)
        return 0;
    switch (coll) {
    case PSC_COLL_ALL_REDUCE: return 2.0 * (nranks - 1) / nranks;
    case PSC_COLL_ALL_GATHER:
    case PSC_COLL_REDUCE_SCATTER:
    case PSC_COLL_ALL_TO_ALL: return (double)(nranks - 1) / nranks;
    case PSC_COLL_BROADCAST:
    case PSC_COLL_REDUCE:
    case PSC_COLL_SEND_RECV: return 1;
    default: return 0;
    }
}

const char *psc_coll_impl_name(int impl)
{
    return impl == PSC_COLL_IMPL_NCCL ? "nccl" : impl == PSC_COLL_IMPL_P2PSCOPE ? "p2pscope" : NULL;
}
