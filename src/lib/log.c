/*
 * The library's log lines and its one error discipline: psc__fail records why a call failed in the context,
 * psc_context_last_error reads it back, psc__cu_result adds the driver's own error text.
 */
#include <stdarg.h>
#include <stdint.h>
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

/*
 * The context comes from psc_context_create's calloc, never a const object, so
 * writing its record through a const pointer is defined; calls that take the
 * context as const report their errors like every other call.
 */
psc_status_t psc__fail(const psc_context_t *ctx, psc_status_t st, const char *fmt, ...)
{
    psc_context_t *c = (psc_context_t *)(uintptr_t)ctx;
    va_list ap;

    if (!c)
        return st;
    va_start(ap, fmt);
    vsnprintf(c->last_error, sizeof(c->last_error), fmt, ap);
    va_end(ap);
    psc__log(c, PSC_LOG_ERROR, "%s", c->last_error);
    return st;
}

/* Read beside where it is written (psc__fail), so the runs below the context's life can quote it. */
const char *psc_context_last_error(const psc_context_t *ctx)
{
    return ctx ? ctx->last_error : "no context";
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
