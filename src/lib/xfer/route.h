/*
 * psc_copy's route choice: what the two ends of a copy are (from the
 * driver's pointer attributes), which routes can move their bytes, and which
 * of those is fastest by the calibration or the built-in defaults. The
 * choice itself is pure (no driver), so it is tested without a GPU.
 */
#ifndef PSC_XFER_ROUTE_H
#define PSC_XFER_ROUTE_H

#include "internal.h"

/* One end of a copy, as one GPU's context sees it. */
typedef struct {
    int where;           /* GPU ordinal, or PSC_HOST */
    int managed;         /* managed (unified) memory: the copy engine only */
    unsigned access;     /* CU_POINTER_ATTRIBUTE_ACCESS_FLAG_* for the stream GPU's context */
    CUdeviceptr dptr;    /* the address a kernel on the stream's GPU uses; 0 when it has none */
} psc_endpoint_t;

typedef struct {
    psc_endpoint_t src, dst; /* as the stream's GPU sees them */
    int stream_gpu;
    uint64_t n;
    int aligned;         /* both kernel addresses 16-byte aligned */
    /* The far GPU end, which may issue the copy instead (a hop, ordered by events); -1 when there is none
     * or it was not looked at. far_src and far_dst: the ends as its context sees them. */
    int far;
    psc_endpoint_t far_src, far_dst;
    int far_aligned;
} psc_copy_path_t;

/* Built-in defaults (no calibration): between GPUs from a stream not on the source, the SM kernel up to this
 * size, the copy engine above (where the SM kernel's read, 375 GB/s, falls behind the engine's, 394). */
#define PSC_ROUTE_SM_PEER_MAX (16ull << 20)
/* A calibrated route other than the stream GPU's copy engine (the driver's own call) must be measured at most
 * this fraction of that call's time: a route measured 2 % faster is noise, and psc_copy's CPU time adds to it. */
#define PSC_ROUTE_CAL_MARGIN 0.95
/* An SM copy of addresses that are not 16-byte aligned goes byte by byte: only this small. */
#define PSC_ROUTE_SM_UNALIGNED_MAX (64ull << 10)

/*
 * The route for the path: the calibration's fastest route that can run where
 * it measured the stream GPU's copy engine and at least one other route of
 * this path (the stream's GPU or, by a hop, the far GPU), the defaults
 * otherwise (which never hop); out->why says which and why.
 */
void psc__route_choose(const psc_calibration_t *cal, const psc_copy_path_t *p, psc_route_t *out, int explain);

/* 1 when GPU `issuer` (the stream's or the far one) can copy the path's bytes with its SMs (access, alignment). */
int psc__route_sm_ok(const psc_copy_path_t *p, int issuer);

/*
 * 1 when the calibration measured a route of this path issued by GPU `far`
 * that beats the stream GPU's best route that can run: only then is the far
 * GPU's view worth its driver queries (psc_copy's hot path).
 */
int psc__route_far_worth(const psc_calibration_t *cal, const psc_copy_path_t *p, int far);

/*
 * The calibration's time for n bytes on one measured route, interpolated
 * between the measured sizes on log-log axes (beyond the largest, growing
 * with n). Negative when the calibration did not measure that route.
 */
double psc__route_predict(const psc_calibration_t *cal, int src, int dst, int stream_gpu, int issuer,
                          psc_engine_t engine, uint64_t n);

/* "gpu3" or "host" into buf. */
const char *psc__endpoint_name(int where, char *buf, size_t len);

#endif
