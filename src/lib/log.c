#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

static const char *const psc__level_names[] = {"none", "error", "warn", "info", "debug"};

void psc__log(const psc_context_t *ctx, psc_log_level_t level, const char *fmt, ...)
{
    va_list ap;

    if (!ctx || level > ctx->log_level)
        return;
    fprintf(stderr, "p2pscope[%s]: ", psc__level_names[level]);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

psc_status_t psc__fail(psc_context_t *ctx, psc_status_t st, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(ctx->last_error, sizeof(ctx->last_error), fmt, ap);
    va_end(ap);
    psc__log(ctx, PSC_LOG_ERROR, "%s", ctx->last_error);
    return st;
}

psc_status_t psc__cu_result(psc_context_t *ctx, CUresult rc, const char *call)
{
    char text[200];

    if (rc == CUDA_SUCCESS)
        return PSC_OK;
    psc_cuda_error_text(&ctx->cu, rc, text, sizeof(text));
    return psc__fail(ctx, rc == CUDA_ERROR_OUT_OF_MEMORY ? PSC_ERR_NO_MEMORY : PSC_ERR_DRIVER,
                     "%s: %s", call, text);
}
