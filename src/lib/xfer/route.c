/*
 * psc_copy's route choice (route.h): the ends of a copy, the routes that can move its bytes, the fastest by
 * the calibration or the built-in defaults; pure, so tested without a GPU.
 */
#include "xfer/route.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const char *psc__endpoint_name(int where, char *buf, size_t len)
{
    if (where == PSC_HOST)
        snprintf(buf, len, "host");
    else
        snprintf(buf, len, "gpu%d", where);
    return buf;
}

static const psc_cal_route_t *psc__cal_find(const psc_calibration_t *cal, int src, int dst, int stream_gpu, int issuer,
                                            psc_engine_t engine)
{
    for (int i = 0; cal && i < cal->nroute; i++) {
        const psc_cal_route_t *r = &cal->route[i];

        if (r->src == src && r->dst == dst && r->stream_gpu == stream_gpu && r->issuer == issuer &&
            r->engine == engine && r->nsizes > 0)
            return r;
    }
    return NULL;
}

double psc__route_predict(const psc_calibration_t *cal, int src, int dst, int stream_gpu, int issuer,
                          psc_engine_t engine, uint64_t n)
{
    const psc_cal_route_t *r = psc__cal_find(cal, src, dst, stream_gpu, issuer, engine);
    int k = 0;

    if (!r)
        return -1;
    if (n <= r->size[0])
        return r->us[0]; /* below the smallest size a copy costs no less */
    if (n >= r->size[r->nsizes - 1]) /* beyond the largest: the time grows with the bytes */
        return r->us[r->nsizes - 1] * ((double)n / (double)r->size[r->nsizes - 1]);
    while (k + 1 < r->nsizes && r->size[k + 1] < n)
        k++;
    if (r->size[k + 1] == n)
        return r->us[k + 1];
    {
        double x0 = log((double)r->size[k]), x1 = log((double)r->size[k + 1]);
        double y0 = log(r->us[k]), y1 = log(r->us[k + 1]);
        double t = (log((double)n) - x0) / (x1 - x0);

        return exp(y0 + t * (y1 - y0));
    }
}

/* The path's ends as GPU `issuer` sees them (the stream's GPU, or the far one). */
static void psc__route_view(const psc_copy_path_t *p, int issuer, const psc_endpoint_t **src, const psc_endpoint_t **dst,
                            int *aligned)
{
    int far = issuer != p->stream_gpu;

    *src = far ? &p->far_src : &p->src;
    *dst = far ? &p->far_dst : &p->dst;
    *aligned = far ? p->far_aligned : p->aligned;
}

/* Why GPU `issuer` cannot copy these bytes with its SMs; NULL when it can. *peer is set when peer access is what is missing. */
static const char *psc__sm_blocked(const psc_copy_path_t *p, int issuer, int *peer, char *buf, size_t len)
{
    const psc_endpoint_t *e[2];
    char name[16];
    int aligned;

    *peer = 0;
    if (issuer != p->stream_gpu && issuer != p->far)
        return "the issuing GPU is neither the stream's nor the far end";
    psc__route_view(p, issuer, &e[0], &e[1], &aligned);
    if (p->src.managed || p->dst.managed)
        return "managed memory goes by the copy engine";
    if (!aligned && p->n > PSC_ROUTE_SM_UNALIGNED_MAX)
        return "addresses not 16-byte aligned: the SM kernel would go byte by byte";
    for (int k = 0; k < 2; k++) {
        unsigned need = k ? CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE : CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READ;

        if ((e[k]->access & need) == need && e[k]->dptr)
            continue;
        *peer = e[k]->where != PSC_HOST && e[k]->where != issuer;
        if (!buf) /* the hot path: the verdict without its text */
            return "";
        if (e[k]->where == PSC_HOST)
            snprintf(buf, len, "the %s host memory is not mapped for gpu%d", k ? "destination" : "source", issuer);
        else if (*peer)
            snprintf(buf, len, "peer access from gpu%d to %s is off (psc_peer_enable turns it on)", issuer,
                     psc__endpoint_name(e[k]->where, name, sizeof(name)));
        else
            snprintf(buf, len, "gpu%d cannot %s that memory", issuer, k ? "write" : "read");
        return buf;
    }
    return NULL;
}

int psc__route_sm_ok(const psc_copy_path_t *p, int issuer)
{
    int peer;

    return psc__sm_blocked(p, issuer, &peer, NULL, 0) == NULL;
}

int psc__route_far_worth(const psc_calibration_t *cal, const psc_copy_path_t *p, int far)
{
    int s = p->stream_gpu;
    double here = psc__route_predict(cal, p->src.where, p->dst.where, s, s, PSC_ENGINE_CE, p->n);
    double sm = psc__route_sm_ok(p, s) ? psc__route_predict(cal, p->src.where, p->dst.where, s, s, PSC_ENGINE_SM, p->n) : -1;

    if (far < 0 || here <= 0)
        return 0; /* no hop without the stream GPU's copy engine to compare with (the choice is the defaults') */
    here *= PSC_ROUTE_CAL_MARGIN; /* as psc__route_choose: the driver's call wins ties within the margin */
    if (sm > 0 && sm < here)
        here = sm;
    for (int e = 0; e < 2; e++) {
        double t = psc__route_predict(cal, p->src.where, p->dst.where, s, far, e ? PSC_ENGINE_SM : PSC_ENGINE_CE, p->n);

        if (t > 0 && t < here)
            return 1;
    }
    return 0;
}

/*
 * The built-in choice. Copies queued back to back cost the larger of the
 * GPU's time and the CPU's time to queue them, and a kernel launch costs the
 * CPU more than the driver's copy (3.7-5.2 us against 2.3-2.9 us on H200):
 * the SM kernel only where the copy engine is slow on the GPU itself, a copy
 * between GPUs queued on a GPU that is not the source (the stream GPU's copy
 * engine pulls, 7-9 us a copy; its SMs read over the link), up to
 * PSC_ROUTE_SM_PEER_MAX; the driver's copy everywhere else.
 */
static psc_engine_t psc__route_default(const psc_copy_path_t *p, char *why, size_t len)
{
    int between = p->src.where >= 0 && p->dst.where >= 0 && p->src.where != p->dst.where;
    int peer = between && p->stream_gpu != p->src.where; /* the stream's GPU would pull from a peer */

    if (peer && p->n <= PSC_ROUTE_SM_PEER_MAX) {
        if (why)
            snprintf(why, len, "built-in: the SM kernel between GPUs from a stream not on the source, up to 16 MiB");
        return PSC_ENGINE_SM;
    }
    if (why)
        snprintf(why, len, "built-in: the driver's copy engine %s",
                 peer             ? "between GPUs above 16 MiB"
                 : between        ? "from the source GPU's stream (queued faster than a kernel launch)"
                 : p->src.where == p->dst.where ? "inside a GPU"
                                                : "between host and GPU");
    return PSC_ENGINE_CE;
}

/* One way to move the bytes: the issuing GPU and its engine. */
typedef struct {
    int issuer;
    psc_engine_t engine;
    double us;           /* the calibration's time; <= 0 where it did not measure this route */
    const char *blocked; /* why it cannot run now; NULL when it can */
    int peer;            /* blocked for want of peer access */
} psc_route_cand_t;

static const char *psc__cand_name(const psc_route_cand_t *c, int stream_gpu, char *buf, size_t len)
{
    snprintf(buf, len, "%s by gpu%d%s", c->engine == PSC_ENGINE_SM ? "SM kernel" : "copy engine", c->issuer,
             c->issuer != stream_gpu ? " (a hop)" : "");
    return buf;
}

/* "calibrated: CE by gpu0 9.00 us, SM by gpu0 4.00 us, ..." for the measured candidates. */
static void psc__cand_list(const psc_route_cand_t *c, int nc, char *buf, size_t len)
{
    size_t used = (size_t)snprintf(buf, len, "calibrated:");

    for (int k = 0; k < nc && used < len; k++)
        if (c[k].us > 0)
            used += (size_t)snprintf(buf + used, len - used, "%s %s by gpu%d %.2f us", used > 11 ? "," : "",
                                     c[k].engine == PSC_ENGINE_SM ? "SM" : "CE", c[k].issuer, c[k].us);
}

void psc__route_choose(const psc_calibration_t *cal, const psc_copy_path_t *p, psc_route_t *out, int explain)
{
    char because[200], blocked_buf[2][120], a[16], b[16], chosen[48], faster[48], line[640];
    psc_route_cand_t c[4];
    size_t len;
    int s = p->stream_gpu, nc = 0, measured = 0, best = 0, fastest = 0;

    for (int h = 0; h < (p->far >= 0 && p->far != s ? 2 : 1); h++) {
        for (int e = 0; e < 2; e++) {
            psc_route_cand_t *k = &c[nc++];

            k->issuer = h ? p->far : s;
            k->engine = e ? PSC_ENGINE_SM : PSC_ENGINE_CE;
            k->us = psc__route_predict(cal, p->src.where, p->dst.where, s, k->issuer, k->engine, p->n);
            k->peer = 0;
            k->blocked = e ? psc__sm_blocked(p, k->issuer, &k->peer, explain ? blocked_buf[h] : NULL,
                                             sizeof(blocked_buf[h]))
                           : NULL;
            measured += k->us > 0;
        }
    }
    out->calibrated = c[0].us > 0 && measured > 1; /* the stream GPU's copy engine and something to beat it */
    out->peer_off = 0;
    if (out->calibrated) {
        /* Another route only where it beats the driver's call by the margin: psc_copy's own CPU time and the
         * calibration's noise must not make it slower than that call. The call's time is scaled while compared. */
        double driver_us = c[0].us;

        c[0].us *= PSC_ROUTE_CAL_MARGIN;
        for (int k = 1; k < nc; k++) {
            if (c[k].us > 0 && c[k].us < c[fastest].us)
                fastest = k;
            if (c[k].us > 0 && !c[k].blocked && c[k].us < c[best].us)
                best = k;
        }
        for (int k = 0; k < nc; k++)
            out->peer_off |= c[k].us > 0 && c[k].us < c[best].us && c[k].peer;
        c[0].us = driver_us;
        if (explain)
            psc__cand_list(c, nc, because, sizeof(because));
    } else {
        fastest = psc__route_default(p, explain ? because : NULL, sizeof(because)) == PSC_ENGINE_SM;
        best = c[fastest].blocked ? 0 : fastest;
        out->peer_off = best != fastest && c[fastest].peer;
    }
    out->why[0] = 0;
    out->engine = c[best].engine;
    out->issuer = c[best].issuer;
    out->hop = c[best].issuer != s;
    out->predicted_us = out->calibrated ? c[best].us : 0;
    out->src = p->src.where;
    out->dst = p->dst.where;
    out->stream_gpu = s;
    if (!explain) /* psc_copy's hot path: formatting costs more than the driver's queries */
        return;
    snprintf(line, sizeof(line), "%s -> %s, %llu B, stream on gpu%d: %s%s (%s%s%s%s%s)",
             psc__endpoint_name(p->src.where, a, sizeof(a)), psc__endpoint_name(p->dst.where, b, sizeof(b)),
             (unsigned long long)p->n, s, psc__cand_name(&c[best], s, chosen, sizeof(chosen)),
             out->hop ? ", ordered by events" : "", because, best != fastest ? "; not the " : "",
             best != fastest ? psc__cand_name(&c[fastest], s, faster, sizeof(faster)) : "", best != fastest ? ": " : "",
             best != fastest ? c[fastest].blocked : "");
    len = strlen(line) < sizeof(out->why) ? strlen(line) : sizeof(out->why) - 1;
    memcpy(out->why, line, len);
    out->why[len] = 0;
}
