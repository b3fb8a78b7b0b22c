/* NVLink traffic counters through NVML's field values, one request per GPU. */
#include <string.h>

#include "machine/devices.h"

psc_status_t psc_nvlink_counters(const psc_context_t *ctx, int gpu, uint64_t *tx, uint64_t *rx, int *nlinks)
{
    psc_nvmlFieldValue_t fv[2 * PSC_MAX_NVLINKS];
    psc_nvmlDevice_t h;
    int n = 0, state;

    if (!ctx)
        return PSC_ERR_INVALID; /* no context to hold the reason */
    if (!psc__valid_gpu(ctx, gpu))
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_nvlink_counters: GPU %d does not exist (accepted: 0..%d)", gpu,
                         ctx->ndev - 1);
    if (!tx || !rx || !nlinks)
        return psc__fail(ctx, PSC_ERR_INVALID,
                         "psc_nvlink_counters: %s is NULL (accepted: arrays of %d counters and a count to fill)",
                         !tx ? "tx_bytes" : !rx ? "rx_bytes" : "nlinks", PSC_MAX_NVLINKS);
    h = psc__nvml_handle(ctx, gpu);
    if (!h || !ctx->nvml.field_values || !ctx->nvml.nvlink_state)
        return psc__fail(ctx, PSC_ERR_UNSUPPORTED, "NVLink counters of GPU %d: %s", gpu,
                         !ctx->sys.nvml_loaded ? (ctx->sys.nvml_note[0] ? ctx->sys.nvml_note : "NVML not loaded")
                         : !h                  ? "NVML does not know this GPU"
                                               : "this NVML lacks the NVLink field queries");
    while (n < PSC_MAX_NVLINKS && ctx->nvml.nvlink_state(h, (unsigned)n, &state) == 0)
        n++;
    if (n == 0)
        return psc__fail(ctx, PSC_ERR_UNSUPPORTED, "NVLink counters of GPU %d: it has no NVLink", gpu);
    memset(fv, 0, sizeof(fv));
    for (int l = 0; l < n; l++) {
        fv[2 * l].fieldId = PSC_NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX;
        fv[2 * l].scopeId = (unsigned)l;
        fv[2 * l + 1].fieldId = PSC_NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX;
        fv[2 * l + 1].scopeId = (unsigned)l;
    }
    if (ctx->nvml.field_values(h, 2 * n, fv) != 0)
        return psc__fail(ctx, PSC_ERR_UNSUPPORTED, "NVLink counters of GPU %d: NVML refused the throughput fields",
                         gpu);
    for (int l = 0; l < n; l++) {
        /* The data throughput fields count KiB. */
        tx[l] = fv[2 * l].nvmlReturn == 0 ? fv[2 * l].value.ullVal * 1024ull : PSC_NVLINK_UNREAD;
        rx[l] = fv[2 * l + 1].nvmlReturn == 0 ? fv[2 * l + 1].value.ullVal * 1024ull : PSC_NVLINK_UNREAD;
    }
    *nlinks = n;
    return PSC_OK;
}
