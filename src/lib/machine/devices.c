/* GPU inventory: static facts from the driver, NVML ids, hwloc locality; fresh clocks on demand. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "machine/devices.h"
#include "machine/host_topo.h"

static int psc__attr(psc_context_t *ctx, CUdevice dev, CUdevice_attribute a)
{
    int v = 0;

    if (ctx->cu.p_cuDeviceGetAttribute(&v, a, dev) != CUDA_SUCCESS)
        return 0;
    return v;
}

static void psc__uuid_text(const CUuuid *u, char *buf, size_t len)
{
    const unsigned char *b = (const unsigned char *)u->bytes;

    snprintf(buf, len,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
             b[13], b[14], b[15]);
}

psc_nvmlDevice_t psc__nvml_handle(const psc_context_t *ctx, int i)
{
    psc_nvmlDevice_t h = NULL;

    if (!ctx->sys.nvml_loaded)
        return NULL;
    if (ctx->nvml.handle_by_bus_id(ctx->info[i].pci_bus_id, &h) != 0)
        return NULL;
    return h;
}

static void psc__nvml_static(psc_context_t *ctx, int i)
{
    psc_device_info_t *d = &ctx->info[i];
    psc_nvmlDevice_t h = psc__nvml_handle(ctx, i);
    psc_nvmlPciInfo_t pci;
    unsigned v;

    if (!h)
        return;
    if (ctx->nvml.index(h, &v) == 0)
        d->nvml_index = (int)v;
    memset(&pci, 0, sizeof(pci));
    if (ctx->nvml.pci_info(h, &pci) == 0)
        d->pci_device_id = pci.pciDeviceId;
    if (!d->mem_bus_width_bits && ctx->nvml.bus_width && ctx->nvml.bus_width(h, &v) == 0)
        d->mem_bus_width_bits = (int)v;
    if (ctx->nvml.max_clock(h, PSC_NVML_CLOCK_MEM, &v) == 0 && v)
        d->mem_clock_max_mhz = (int)v;
    if (ctx->nvml.max_clock(h, PSC_NVML_CLOCK_SM, &v) == 0)
        d->sm_clock_max_mhz = (int)v;
}

static void psc__system_probe(psc_context_t *ctx)
{
    const char *order = getenv("CUDA_DEVICE_ORDER");
    const char *vis = getenv("CUDA_VISIBLE_DEVICES");

    ctx->sys.device_count = ctx->ndev;
    ctx->sys.numa_nodes = psc_host_topo_numa_count(ctx->host);
    ctx->cu.p_cuDriverGetVersion(&ctx->sys.cuda_driver_version);
    if (ctx->sys.nvml_loaded &&
        ctx->nvml.driver_version(ctx->sys.driver_release, sizeof(ctx->sys.driver_release)) != 0)
        ctx->sys.driver_release[0] = '\0';
    snprintf(ctx->sys.device_order, sizeof(ctx->sys.device_order), "%s",
             order && strcmp(order, "PCI_BUS_ID") == 0 ? "PCI_BUS_ID" : "FASTEST_FIRST");
    snprintf(ctx->sys.visible_devices, sizeof(ctx->sys.visible_devices), "%s", vis ? vis : "");
}

psc_status_t psc__devices_probe(psc_context_t *ctx)
{
    char text[160];
    psc_status_t st;
    CUresult rc;
    int n = 0;

    rc = ctx->cu.p_cuDeviceGetCount(&n);
    if (rc != CUDA_SUCCESS)
        return psc__fail(ctx, psc_cuda_init_status(rc), "cuDeviceGetCount: %s",
                         psc_cuda_error_text(&ctx->cu, rc, text, sizeof(text)));
    if (n < 1)
        return psc__fail(ctx, PSC_ERR_NO_DEVICE, "no GPU: the CUDA driver reports %d devices", n);
    ctx->sys.driver_device_count = n;
    /* Every per-GPU table is sized for PSC_MAX_GPUS: use the first ones, and say so. */
    if (n > PSC_MAX_GPUS) {
        psc__log(ctx, PSC_LOG_WARN, "the driver reports %d GPUs; p2pscope uses the first %d", n, PSC_MAX_GPUS);
        n = PSC_MAX_GPUS;
    }
    ctx->gpu = calloc((size_t)n, sizeof(*ctx->gpu));
    ctx->info = calloc((size_t)n, sizeof(*ctx->info));
    if (!ctx->gpu || !ctx->info)
        return psc__fail(ctx, PSC_ERR_NO_MEMORY, "out of host memory");
    ctx->ndev = n;

    for (int i = 0; i < n; i++) {
        psc_device_info_t *d = &ctx->info[i];
        CUdevice dev;
        size_t mem = 0;
        CUuuid uuid;
        int khz;

        if ((st = PSC_CU(ctx, cuDeviceGet, (&dev, i))) != PSC_OK ||
            (st = PSC_CU(ctx, cuDeviceGetName, (d->name, (int)sizeof(d->name), dev))) != PSC_OK ||
            (st = PSC_CU(ctx, cuDeviceGetPCIBusId, (d->pci_bus_id, (int)sizeof(d->pci_bus_id), dev))) != PSC_OK ||
            (st = PSC_CU(ctx, cuDeviceTotalMem, (&mem, dev))) != PSC_OK)
            return st;
        ctx->gpu[i].dev = dev;
        d->index = i;
        d->nvml_index = -1;
        d->memory_bytes = mem;
        d->sm_count = psc__attr(ctx, dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
        d->l2_bytes = psc__attr(ctx, dev, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
        d->cc_major = psc__attr(ctx, dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
        d->cc_minor = psc__attr(ctx, dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
        d->async_engines = psc__attr(ctx, dev, CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT);
        d->mem_bus_width_bits = psc__attr(ctx, dev, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
        khz = psc__attr(ctx, dev, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
        d->mem_clock_max_mhz = khz / 1000;
        if (ctx->cu.p_cuDeviceGetUuid && ctx->cu.p_cuDeviceGetUuid(&uuid, dev) == CUDA_SUCCESS)
            psc__uuid_text(&uuid, d->uuid, sizeof(d->uuid));
        d->numa_node = psc_host_topo_numa_of(ctx->host, d->pci_bus_id);
        d->sm_clock_mhz = d->sm_clock_max_mhz = d->mem_clock_mhz = d->temperature_c = -1;
        psc__nvml_static(ctx, i);
        /* Double data rate: two transfers per memory clock. */
        if (d->mem_bus_width_bits > 0 && d->mem_clock_max_mhz > 0)
            d->mem_peak_gbs = 2.0 * d->mem_clock_max_mhz * 1e6 * d->mem_bus_width_bits / 8.0 / 1e9;
    }
    psc__system_probe(ctx);
    return PSC_OK;
}

int psc_device_count(const psc_context_t *ctx)
{
    return ctx ? ctx->ndev : 0;
}

psc_status_t psc_system_info(const psc_context_t *ctx, psc_system_info_t *out)
{
    if (!ctx)
        return PSC_ERR_INVALID; /* no context to hold the reason */
    if (!out)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_system_info: out is NULL (accepted: a psc_system_info_t to fill)");
    *out = ctx->sys;
    return PSC_OK;
}

psc_status_t psc_device_info(const psc_context_t *ctx, int device, psc_device_info_t *out)
{
    psc_device_info_t d;
    psc_nvmlDevice_t h;
    unsigned v;

    if (!ctx)
        return PSC_ERR_INVALID; /* no context to hold the reason */
    if (!psc__valid_gpu(ctx, device))
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_device_info: GPU %d does not exist (accepted: 0..%d)", device,
                         ctx->ndev - 1);
    if (!out)
        return psc__fail(ctx, PSC_ERR_INVALID, "psc_device_info: out is NULL (accepted: a psc_device_info_t to fill)");
    d = ctx->info[device];
    h = psc__nvml_handle(ctx, device);
    if (h) {
        if (ctx->nvml.clock(h, PSC_NVML_CLOCK_SM, &v) == 0)
            d.sm_clock_mhz = (int)v;
        if (ctx->nvml.clock(h, PSC_NVML_CLOCK_MEM, &v) == 0)
            d.mem_clock_mhz = (int)v;
        if (ctx->nvml.temperature && ctx->nvml.temperature(h, PSC_NVML_TEMPERATURE_GPU, &v) == 0)
            d.temperature_c = (int)v;
    }
    *out = d;
    return PSC_OK;
}
