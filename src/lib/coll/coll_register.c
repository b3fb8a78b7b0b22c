/*
 * psc_coll_run's buffer registration (nccl-tests' -R: ncclCommRegister, or
 * NCCL 2.27's symmetric windows) and its notes of free GPU memory (-M).
 */
#include <string.h>

#include "coll/coll_exec.h"

/* An NCCL registration call's result: a failure names the call and the GPU, the communicators aborted. */
static psc_status_t psc__reg_rc(psc_coll_exec_t *x, psc_ncclResult_t rc, const char *call, int i)
{
    char why[512];
    psc_status_t st;

    if (rc == PSC_NCCL_SUCCESS)
        return PSC_OK;
    st = psc__nccl_check(&x->nccl, x->comm[i], rc, call, why, sizeof(why));
    /* psc__fail, not psc__coll_fail: coll_exec.c calls this file, never the other way */
    return psc__fail(x->ctx, st, "p2pscope coll: registering the buffers of GPU %d: %s (accepted: -R 0)", x->dev[i], why);
}

/*
 * Register send and receive (their first max_bytes, as nccl-tests does) with
 * every local communicator, in one group; x->reg_mode says how (0: nothing).
 */
psc_status_t psc__coll_register(psc_coll_exec_t *x)
{
    const psc_nccl_t *nc = &x->nccl;
    size_t len = (size_t)x->o->max_bytes;
    psc_ncclResult_t rc = PSC_NCCL_SUCCESS;
    int i = 0;

    if (!x->reg_mode)
        return PSC_OK;
    if ((rc = nc->group_start()) != PSC_NCCL_SUCCESS)
        return psc__reg_rc(x, rc, "ncclGroupStart", 0);
    for (i = 0; i < x->nlocal && rc == PSC_NCCL_SUCCESS; i++)
        for (int b = 0; b < 2 && rc == PSC_NCCL_SUCCESS; b++) {
            void *buf = (void *)(uintptr_t)(b ? x->recv[i] : x->send[i]);

            if (x->reg_mode == 2) /* NCCL 2.27's symmetric windows */
                rc = nc->comm_window_register(x->comm[i], buf, len, (psc_ncclWindow_t *)&x->reg[b][i],
                                              PSC_NCCL_WIN_COLL_SYMMETRIC);
            else
                rc = nc->comm_register(x->comm[i], buf, len, &x->reg[b][i]);
        }
    if (rc != PSC_NCCL_SUCCESS) {
        nc->group_end();
        return psc__reg_rc(x, rc, x->reg_mode == 2 ? "ncclCommWindowRegister" : "ncclCommRegister", i - 1);
    }
    return psc__reg_rc(x, nc->group_end(), "ncclGroupEnd", 0);
}

/* Undo psc__coll_register on the communicators still there (an aborted one took its registrations with it). */
void psc__coll_deregister(psc_coll_exec_t *x)
{
    for (int i = 0; i < x->nlocal; i++)
        for (int b = 0; b < 2; b++) {
            if (x->reg[b][i] && x->comm[i]) {
                if (x->reg_mode == 2)
                    x->nccl.comm_window_deregister(x->comm[i], (psc_ncclWindow_t)x->reg[b][i]);
                else
                    x->nccl.comm_deregister(x->comm[i], x->reg[b][i]);
            }
            x->reg[b][i] = NULL;
        }
}

void psc__coll_mem_note(psc_coll_exec_t *x, int k)
{
    for (int i = 0; i < x->nlocal; i++) {
        size_t fr = 0, total = 0;

        x->mem_free[k][i] = -1;
        if (x->ctx->cu.p_cuMemGetInfo && psc__gpu_use(x->ctx, x->dev[i]) == PSC_OK &&
            x->ctx->cu.p_cuMemGetInfo(&fr, &total) == CUDA_SUCCESS)
            x->mem_free[k][i] = (long long)fr;
    }
}
