/* The names p2pscope ipc's tables and JSON give its copies and sharing methods, and the report's release. */
#include <stdlib.h>

#include "internal.h"

const char *psc_ipc_bw_name(int bw)
{
    static const char *const names[PSC_IPC_NBW] = {"ce_write", "ce_read", "sm_write", "sm_read"};

    return bw >= 0 && bw < PSC_IPC_NBW ? names[bw] : NULL;
}

const char *psc_ipc_method_name(int method)
{
    switch (method) {
    case PSC_SHARE_LEGACY: return "legacy";
    case PSC_SHARE_VMM_FD: return "vmm_fd";
    case PSC_SHARE_VMM_FABRIC: return "vmm_fabric";
    default: return NULL;
    }
}

void psc_ipc_report_free(psc_ipc_report_t *r)
{
    if (!r)
        return;
    free(r->pairs);
    free(r);
}
