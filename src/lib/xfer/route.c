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

/* Why the stream's GPU cannot copy these bytes with its SMs; NULL when it can. *peer is set when peer access is what is missing. */
static const char *psc__sm_blocked(const psc_copy_path_t *p, int *peer, char *buf, size_t len)
{
    const psc_endpoint_t *e[2] = {&p->src, &p->dst};
    char name[16];

    *peer = 0;
    if (p->src.managed || p->dst.managed)
        return "managed memory goes by the copy engine";
    if (!p->aligned && p->n > PSC_ROUTE_SM_UNALIGNED_MAX)
        return "addresses not 16-byte aligned: the SM kernel would go byte by byte";
    for (int k = 0; k < 2; k++) {
        unsigned need = k ? CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE : CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READ;

        if ((e[k]->access & need) == need && e[k]->dptr)
            continue;
        *peer = e[k]->where != PSC_HOST && e[k]->where != p->stream_gpu;
        if (!buf) /* the hot path: the verdict without its text */
            return "";
        if (e[k]->where == PSC_HOST)
            snprintf(buf, len, "the %s host memory is not mapped for gpu%d", k ? "destination" : "source", p->stream_gpu);
        else if (*peer)
            snprintf(buf, len, "peer access from gpu%d to %s is off (psc_peer_enable turns it on)", p->stream_gpu,
                     psc__endpoint_name(e[k]->where, name, sizeof(name)));
        else
            snprintf(buf, len, "gpu%d cannot %s that memory", p->stream_gpu, k ? "write" : "read");
        return buf;
    }
    return NULL;
}

int psc__route_sm_ok(const psc_copy_path_t *p)
{
    int peer;

    return psc__sm_blocked(p, &peer, NULL, 0) == NULL;
}

/* The built-in choice: the SM kernel between two GPUs up to PSC_ROUTE_SM_PEER_MAX, else the copy engine. */
static psc_engine_t psc__route_default(const psc_copy_path_t *p, char *why, size_t len)
{
    int peer = p->src.where >= 0 && p->dst.where >= 0 && p->src.where != p->dst.where;

    if (peer && p->n <= PSC_ROUTE_SM_PEER_MAX) {
        if (why)
            snprintf(why, len, "built-in: the SM kernel between GPUs up to 32 MiB");
        return PSC_ENGINE_SM;
    }
    if (why)
        snprintf(why, len, "built-in: the copy engine %s", peer ? "between GPUs above 32 MiB"
                                                       : p->src.where == p->dst.where ? "inside a GPU"
                                                                                      : "between host and GPU");
    return PSC_ENGINE_CE;
}

void psc__route_choose(const psc_calibration_t *cal, const psc_copy_path_t *p, psc_route_t *out, int explain)
{
    char because[160], blocked_buf[120], a[16], b[16], line[512];
    size_t len;
    int peer = 0, s = p->stream_gpu;
    const char *blocked = psc__sm_blocked(p, &peer, explain ? blocked_buf : NULL, sizeof(blocked_buf));
    double ce = psc__route_predict(cal, p->src.where, p->dst.where, s, s, PSC_ENGINE_CE, p->n);
    double sm = psc__route_predict(cal, p->src.where, p->dst.where, s, s, PSC_ENGINE_SM, p->n);
    psc_engine_t want;

    out->why[0] = 0;
    out->hop = 0;
    out->calibrated = 0;
    out->predicted_us = 0;
    out->src = p->src.where;
    out->dst = p->dst.where;
    out->issuer = out->stream_gpu = s;
    if (ce > 0 && sm > 0) {
        want = sm < ce ? PSC_ENGINE_SM : PSC_ENGINE_CE;
        out->calibrated = 1;
        if (explain)
            snprintf(because, sizeof(because), "calibrated: SM kernel %.2f us, copy engine %.2f us", sm, ce);
    } else {
        want = psc__route_default(p, explain ? because : NULL, sizeof(because));
    }
    out->engine = want == PSC_ENGINE_SM && blocked ? PSC_ENGINE_CE : want;
    out->peer_off = want == PSC_ENGINE_SM && blocked && peer;
    if (out->calibrated)
        out->predicted_us = out->engine == PSC_ENGINE_SM ? sm : ce;
    if (!explain) /* psc_copy's hot path: formatting costs more than the driver's queries */
        return;
    snprintf(line, sizeof(line), "%s -> %s, %llu B, stream on gpu%d: %s by gpu%d (%s%s%s)",
             psc__endpoint_name(p->src.where, a, sizeof(a)), psc__endpoint_name(p->dst.where, b, sizeof(b)),
             (unsigned long long)p->n, s, out->engine == PSC_ENGINE_SM ? "SM kernel" : "copy engine", s, because,
             out->engine != want ? "; not the SM kernel: " : "", out->engine != want ? blocked : "");
    len = strlen(line) < sizeof(out->why) ? strlen(line) : sizeof(out->why) - 1; /* whole in practice */
    memcpy(out->why, line, len);
    out->why[len] = 0;
}
