/* p2pscope ipc: the coordinator (psc_ipc_run). Work in progress: the measurement lands next. */
#include "internal.h"

psc_status_t psc_ipc_run(psc_context_t *ctx, const int *devices, int ndev, const psc_ipc_opts_t *opts,
                         psc_ipc_report_t **out)
{
    (void)devices, (void)ndev, (void)opts, (void)out;
    if (!ctx)
        return PSC_ERR_INVALID;
    return psc__fail(ctx, PSC_ERR_UNSUPPORTED, "psc_ipc_run: not built yet");
}

int psc_ipc_worker_main(void)
{
    return 3;
}
