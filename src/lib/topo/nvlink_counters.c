/* NVLink traffic counters through NVML's field values, one request per GPU. */
#include <string.h>

#include "topo/devices.h"

psc_status_t psc_nvlink_counters(const psc_context_t *ctx, int gpu, uint64_t *tx, uint64_t *rx, int *nlinks)
{
    psc_nvmlFieldValue_t fv[2 * PSC_MAX_NVLINKS];
    psc_nvmlDevice_t h;
    int n = 0, state;

    if (!psc__valid_gpu(ctx, gpu) || !tx || !rx || !nlinks)
        return PSC_ERR_INVALID;
    h = psc__nvml_handle(ctx, gpu);
    if (!h || !ctx->nvml.field_values || !ctx->nvml.nvlink_state)
        return PSC_ERR_UNSUPPORTED;
    while (n < PSC_MAX_NVLINKS && ctx->nvml.nvlink_state(h, (unsigned)n, &state) == 0)
        n++;
    if (n == 0)
        return PSC_ERR_UNSUPPORTED;
    memset(fv, 0, sizeof(fv));
    for (int l = 0; l < n; l++) {
        fv[2 * l].fieldId = PSC_NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX;
        fv[2 * l].scopeId = (unsigned)l;
        fv[2 * l + 1].fieldId = PSC_NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX;
        fv[2 * l + 1].scopeId = (unsigned)l;
    }
    if (ctx->nvml.field_values(h, 2 * n, fv) != 0)
        return PSC_ERR_UNSUPPORTED;
    for (int l = 0; l < n; l++) {
        /* The data throughput fields count KiB. */
        tx[l] = fv[2 * l].nvmlReturn == 0 ? fv[2 * l].value.ullVal * 1024ull : 0;
        rx[l] = fv[2 * l + 1].nvmlReturn == 0 ? fv[2 * l + 1].value.ullVal * 1024ull : 0;
    }
    *nlinks = n;
    return PSC_OK;
}
