/*
 * Memory of each kind for an application's buffers (psc_mem_alloc): device
 * memory in a GPU's primary context, and page-locked host memory bound to a
 * NUMA node. Host memory is allocated in GPU 0's primary context and is
 * portable, so every context (the runtime's included) may use it. Each
 * allocation is kept in the context's list so psc_context_destroy frees what
 * the application forgot.
 */
#include "mem/app_mem.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "machine/host_topo.h"

#define PSC_MEM_MAX_SIZE ((size_t)1 << 40) /* 1 TiB: past it, a size is a mistake (a negative one cast) */

struct psc_mem {
    psc_context_t *ctx;
    struct psc_mem *prev, *next; /* ctx->mems */
    psc_memkind_t kind;
    int where;                   /* device memory: the GPU; host memory: the node asked for (-1 any) */
    size_t size;
    void *host;                  /* host kinds */
    CUdeviceptr dptr;            /* the GPUs' address; 0 when host memory is not mapped */
};

/* The GPU whose primary context host memory is allocated in (it is portable: any would do). */
#define PSC_MEM_HOST_GPU 0

const char *psc_memkind_name(psc_memkind_t kind)
{
    static const char *const names[PSC_MEMKIND_COUNT] = {"device", "pinned", "mapped", "write-combined",
                                                         "registered"};

    return (int)kind >= 0 && kind < PSC_MEMKIND_COUNT ? names[kind] : "?";
}

/*
 * Whether host memory can be bound to `node` here: PSC_OK, or the failure
 * (recorded). A node that does not exist is the caller's mistake; a machine
 * that cannot bind is unsupported.
 */
static psc_status_t psc__mem_node_check(psc_context_t *ctx, psc_memkind_t kind, int node)
{
    int nodes = psc_host_topo_numa_count(ctx->host);
    hwloc_topology_t topo;
    const struct hwloc_topology_support *sup;

    if (node == PSC_NUMA_ANY)
        return PSC_OK;
    if (node < 0 || node >= nodes ||
        (ctx->host && !hwloc_get_numanode_obj_by_os_index(psc_host_topo_hwloc(ctx->host), (unsigned)node)))
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_mem_alloc: NUMA node %d does not exist (accepted: 0..%d, or "
                         "PSC_NUMA_ANY)", node, nodes - 1);
    if (!ctx->host)
        return psc__fail(ctx, PSC_ERR_UNSUPPORTED, "psc_mem_alloc: hwloc could not load this machine's topology, so "
                         "memory cannot be bound to NUMA node %d (PSC_NUMA_ANY works)", node);
    if (nodes < 2)
        return PSC_OK; /* one node: every page is on it */
    topo = psc_host_topo_hwloc(ctx->host);
    sup = hwloc_topology_get_support(topo);
    if (kind == PSC_MEMKIND_REGISTERED ? !sup->membind->alloc_membind : !sup->membind->set_thisthread_membind)
        return psc__fail(ctx, PSC_ERR_UNSUPPORTED, "psc_mem_alloc: hwloc cannot bind %s on this system, so %s memory "
                         "cannot be bound to NUMA node %d (PSC_NUMA_ANY works)",
                         kind == PSC_MEMKIND_REGISTERED ? "an allocation" : "a thread's allocations",
                         psc_memkind_name(kind), node);
    return PSC_OK;
}

/* cuMemHostAlloc's flags for a pinned kind. */
static unsigned psc__mem_host_flags(psc_memkind_t kind)
{
    unsigned f = CU_MEMHOSTALLOC_PORTABLE;

    if (kind == PSC_MEMKIND_MAPPED || kind == PSC_MEMKIND_WC)
        f |= CU_MEMHOSTALLOC_DEVICEMAP;
    if (kind == PSC_MEMKIND_WC)
        f |= CU_MEMHOSTALLOC_WRITECOMBINED;
    return f;
}

/* Give the memory back to the driver and the system (its GPU's context current for device memory). */
static psc_status_t psc__mem_release(psc_context_t *ctx, struct psc_mem *m)
{
    psc_status_t st;

    switch (m->kind) {
    case PSC_MEMKIND_DEVICE:
        if ((st = psc__gpu_use(ctx, m->where)) != PSC_OK)
            return st;
        return PSC_CU(ctx, cuMemFree, (m->dptr));
    case PSC_MEMKIND_REGISTERED:
        st = psc__gpu_use(ctx, PSC_MEM_HOST_GPU);
        if (st == PSC_OK)
            st = PSC_CU(ctx, cuMemHostUnregister, (m->host));
        /* Pages the driver may still hold stay mapped: their addresses must not come back as new memory. */
        if (st == PSC_OK)
            psc_host_topo_free_mem(ctx->host, m->host, m->size);
        return st;
    default:
        if ((st = psc__gpu_use(ctx, PSC_MEM_HOST_GPU)) != PSC_OK)
            return st;
        return PSC_CU(ctx, cuMemFreeHost, (m->host));
    }
}

/* Page-locked host memory of the kind on `node`, every page touched there; m->host and m->dptr set. */
static psc_status_t psc__mem_host_alloc(psc_context_t *ctx, struct psc_mem *m, int node)
{
    int bind = node != PSC_NUMA_ANY && psc_host_topo_numa_count(ctx->host) > 1;
    psc_status_t st;
    CUresult rc;
    void *token;

    if ((st = psc__gpu_use(ctx, PSC_MEM_HOST_GPU)) != PSC_OK)
        return st;
    if (m->kind == PSC_MEMKIND_REGISTERED) {
        if (!ctx->cu.p_cuMemHostRegister || !ctx->cu.p_cuMemHostUnregister)
            return psc__fail(ctx, PSC_ERR_UNSUPPORTED, "psc_mem_alloc: the driver lacks cuMemHostRegister");
        if (!(m->host = psc_host_topo_alloc(ctx->host, m->size, node)))
            return psc__fail(ctx, PSC_ERR_NO_MEMORY, "psc_mem_alloc: cannot allocate %zu bytes of host memory%s",
                             m->size, bind ? " on that NUMA node" : "");
        memset(m->host, 0, m->size); /* place every page where it is bound before it is locked */
        st = PSC_CU(ctx, cuMemHostRegister,
                    (m->host, m->size, CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP));
        if (st != PSC_OK) {
            psc_host_topo_free_mem(ctx->host, m->host, m->size);
            m->host = NULL;
            return st;
        }
    } else {
        token = bind ? psc_host_topo_membind_push(ctx->host, node) : NULL;
        if (bind && !token)
            return psc__fail(ctx, PSC_ERR_UNSUPPORTED, "psc_mem_alloc: hwloc could not bind this thread's "
                             "allocations to NUMA node %d: %s", node, strerror(errno));
        st = PSC_CU(ctx, cuMemHostAlloc, (&m->host, m->size, psc__mem_host_flags(m->kind)));
        if (st == PSC_OK)
            memset(m->host, 0, m->size); /* still bound: a page the driver left untouched lands on the node */
        psc_host_topo_membind_pop(ctx->host, token);
        if (st != PSC_OK) {
            m->host = NULL;
            return st;
        }
    }
    rc = ctx->cu.p_cuMemHostGetDevicePointer(&m->dptr, m->host, 0);
    if (rc == CUDA_SUCCESS)
        return PSC_OK;
    m->dptr = 0;
    if (m->kind == PSC_MEMKIND_PINNED) /* not asked to be mapped: the driver may say it is not */
        return PSC_OK;
    st = psc__cu_result(ctx, rc, "cuMemHostGetDevicePointer");
    psc__mem_release(ctx, m);
    m->host = NULL;
    return st;
}

static psc_status_t psc__mem_alloc(psc_context_t *ctx, psc_memkind_t kind, int where, size_t size,
                                   struct psc_mem **out)
{
    struct psc_mem *m;
    psc_status_t st;

    if (kind == PSC_MEMKIND_DEVICE && !psc__valid_gpu(ctx, where))
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_mem_alloc: GPU %d does not exist (accepted: 0..%d)", where,
                         ctx->ndev - 1);
    if (kind != PSC_MEMKIND_DEVICE) {
        if ((st = psc__mem_node_check(ctx, kind, where)) != PSC_OK)
            return st;
        if (ctx->ndev < 1)
            return psc__fail(ctx, PSC_ERR_NO_DEVICE, "psc_mem_alloc: no GPU to page-lock host memory for");
    }
    if (!(m = calloc(1, sizeof(*m))))
        return psc__fail(ctx, PSC_ERR_NO_MEMORY, "psc_mem_alloc: out of host memory");
    *m = (struct psc_mem){.ctx = ctx, .kind = kind, .where = where, .size = size};
    if (kind == PSC_MEMKIND_DEVICE) {
        if ((st = psc__gpu_use(ctx, where)) == PSC_OK)
            st = PSC_CU(ctx, cuMemAlloc, (&m->dptr, size));
    } else {
        st = psc__mem_host_alloc(ctx, m, where);
    }
    if (st != PSC_OK) {
        free(m);
        return st;
    }
    m->next = ctx->mems;
    if (ctx->mems)
        ctx->mems->prev = m;
    ctx->mems = m;
    psc__context_on_close(ctx, PSC__CLOSE_MEMS, psc__mem_free_all);
    *out = m;
    return PSC_OK;
}

psc_status_t psc_mem_alloc(psc_context_t *ctx, psc_memkind_t kind, int where, size_t size, psc_mem_t **out)
{
    struct psc_mem *m = NULL;
    psc_status_t st;

    if (!ctx)
        return PSC_ERR_INVALID;
    if (!out)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_mem_alloc: no place for the memory (accepted: a psc_mem_t *)");
    if ((int)kind < 0 || kind >= PSC_MEMKIND_COUNT)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_mem_alloc: memory kind %d does not exist (accepted: %d..%d, "
                         "PSC_MEMKIND_DEVICE..PSC_MEMKIND_REGISTERED)", (int)kind, 0, PSC_MEMKIND_COUNT - 1);
    if (size == 0 || size > PSC_MEM_MAX_SIZE)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_mem_alloc: size %zu bytes out of range (accepted: 1 B to 1 TiB)",
                         size);
    psc__guard_enter(ctx);
    st = psc__guard_leave(ctx, psc__mem_alloc(ctx, kind, where, size, &m));
    if (st == PSC_OK)
        *out = m;
    else if (m) /* allocated, but the caller's context could not be put back: not handed over */
        psc_mem_free(m);
    return st;
}

void *psc_mem_host(const psc_mem_t *mem)
{
    return mem ? mem->host : NULL;
}

uint64_t psc_mem_device(const psc_mem_t *mem)
{
    return mem ? (uint64_t)mem->dptr : 0;
}

size_t psc_mem_size(const psc_mem_t *mem)
{
    return mem ? mem->size : 0;
}

psc_memkind_t psc_mem_kind(const psc_mem_t *mem)
{
    return mem ? mem->kind : PSC_MEMKIND_COUNT;
}

int psc_mem_where(const psc_mem_t *mem)
{
    hwloc_topology_t topo;
    hwloc_nodeset_t set;
    int node = -1;

    if (!mem)
        return -1;
    if (mem->kind == PSC_MEMKIND_DEVICE)
        return mem->where;
    if (!mem->ctx->host)
        return -1;
    /* Where the kernel has the first page now, not where it was asked to be. */
    topo = psc_host_topo_hwloc(mem->ctx->host);
    if (!(set = hwloc_bitmap_alloc()))
        return -1;
    if (hwloc_get_area_memlocation(topo, mem->host, 1, set, HWLOC_MEMBIND_BYNODESET) == 0 &&
        hwloc_bitmap_weight(set) == 1)
        node = hwloc_bitmap_first(set);
    hwloc_bitmap_free(set);
    return node;
}

/* Take m out of its context's list. */
static void psc__mem_unlink(struct psc_mem *m)
{
    if (m->prev)
        m->prev->next = m->next;
    else
        m->ctx->mems = m->next;
    if (m->next)
        m->next->prev = m->prev;
}

psc_status_t psc_mem_free(psc_mem_t *mem)
{
    psc_context_t *ctx;
    psc_status_t st;

    if (!mem)
        return PSC_OK;
    ctx = mem->ctx;
    psc__mem_unlink(mem);
    psc__guard_enter(ctx);
    /* The handle goes either way: a driver that refuses to free now will not accept it later. */
    st = psc__guard_leave(ctx, psc__mem_release(ctx, mem));
    free(mem);
    return st;
}

void psc__mem_free_all(psc_context_t *ctx)
{
    while (ctx->mems) {
        struct psc_mem *m = ctx->mems;

        ctx->mems = m->next;
        psc__mem_release(ctx, m);
        free(m);
    }
}
