#include <string.h>

#include "internal.h"

void psc__test_hooks_default(psc_test_hooks_t *h)
{
    memset(h, 0, sizeof(*h));
    h->corrupt_offset = -1;
    h->fault = PSC_FAULT_NONE;
}

psc_status_t psc__test_hooks_set(psc_context_t *ctx, const psc_test_hooks_t *h)
{
    if (!ctx)
        return PSC_ERR_INVALID;
    if (h && (h->fault < PSC_FAULT_NONE || h->fault > PSC_FAULT_MISPLACE))
        return psc__fail(ctx, PSC_ERR_INVALID, "fault kind %d out of range: accepted none, flip, drop, misplace",
                         (int)h->fault);
    if (h)
        ctx->hooks = *h;
    else
        psc__test_hooks_default(&ctx->hooks);
    return PSC_OK;
}
