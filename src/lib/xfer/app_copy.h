/* psc_copy's parts that its calibration and benchmark share: the plan of one copy and its enqueue. */
#ifndef PSC_XFER_APP_COPY_H
#define PSC_XFER_APP_COPY_H

#include "xfer/route.h"

/* A copy made ready to queue: its route, and the addresses the route uses. */
typedef struct {
    psc_route_t route;
    psc_copy_path_t path;    /* what the route was chosen from */
    CUdeviceptr d, s;        /* kernel addresses for the SM kernel; the caller's for the copy engine */
    CUdeviceptr caller_d, caller_s;
    uint64_t n;
    CUstream stream;
} psc_copy_plan_t;

#define PSC_PLAN_EXPLAIN 1u /* the route's why text too (psc_copy itself skips it) */
#define PSC_PLAN_FAR 2u     /* look at the far GPU's view whatever the calibration (the calibration measures hops) */
#define PSC_PLAN_MEMO 4u    /* psc_copy's hot path: the thread's remembered buffers and plans, checked */
#define PSC_PLAN_NO_FAR 8u  /* never a hop (a prepared copy) */

/*
 * Check the copy and choose its route (psc_copy's rules), with the stream
 * GPU's context made current; *restore is the context to put back (the
 * caller's), valid also on failure when *changed is set.
 */
psc_status_t psc__copy_plan(psc_context_t *ctx, void *dst, const void *src, uint64_t n, CUstream stream, unsigned flags,
                            psc_copy_plan_t *plan, CUcontext *restore, int *changed);

/*
 * The same, where *use is the plan to queue: *plan, or with PSC_PLAN_MEMO a
 * plan the thread kept (valid until the thread's next psc_copy). *changed:
 * the current context may have moved (put *restore back).
 */
psc_status_t psc__copy_plan_at(psc_context_t *ctx, void *dst, const void *src, uint64_t n, CUstream stream,
                               unsigned flags, psc_copy_plan_t *plan, const psc_copy_plan_t **use, CUcontext *restore,
                               int *changed);

/* Forget every thread's kept plans (their routes may differ now): a calibration loaded or put back. */
void psc__copy_memo_forget(void);

/*
 * Make the plan take `engine` by `issuer` (the stream's GPU, or the far one
 * by a hop) whatever the choice (the calibration measures each); 0 when that
 * route cannot move these bytes.
 */
int psc__copy_plan_force(psc_copy_plan_t *plan, psc_engine_t engine, int issuer);

/* Queue the planned copy on its stream, by a hop where the route says so (the stream GPU's context current, and again after). */
psc_status_t psc__copy_plan_enqueue(psc_context_t *ctx, const psc_copy_plan_t *plan);

/* The SM copy kernel's grid for n bytes on GPU g: one 16-byte word per thread up to every SM full. */
unsigned psc__app_copy_blocks(const psc_context_t *ctx, int g, uint64_t n);

#define PSC_APP_COPY_THREADS 256

#endif
