/*
 * psc_copy's calibration file: the measured time per copy of each route of
 * each path (psc_copy_calibrate fills it), written as JSON and read back
 * field by field, since the file is someone else's until proven sound.
 * psc_copy_calibration_load installs one in a context for the route choice.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "internal.h"
#include "util/json.h"
#include "util/safe_read.h"
#include "xfer/app_copy.h" /* psc__copy_memo_forget */
#include "xfer/route.h"    /* psc__endpoint_name */

#define PSC_CAL_FORMAT "p2pscope_copy_calibration"
#define PSC_CAL_VERSION 1
#define PSC_CAL_MAX_FILE (16u << 20)  /* far above the largest calibration (64 GPUs, every route) */
#define PSC_CAL_MAX_BYTES (1ull << 40) /* 1 TiB, as psc_size_parse */

/*
 * Routes a file may hold for ngpu GPUs: for each path between GPUs and the
 * host, two stream GPUs, three issuers, two engines; the cap bounds what a
 * hostile file can make this allocate.
 */
#define PSC_CAL_MAX_ROUTES 65536
static size_t psc__cal_max_routes(int ngpu)
{
    size_t ends = (size_t)ngpu + 1, n = ends * ends * 12;

    return n < PSC_CAL_MAX_ROUTES ? n : PSC_CAL_MAX_ROUTES;
}

void psc_calibration_free(psc_calibration_t *cal)
{
    if (!cal)
        return;
    free(cal->route);
    free(cal);
}

/* ---------------------------------------------------------------- writer */

/* "gpu3", "host": where bytes are, or who moves them. */
static json_t *psc__cal_end_json(int end)
{
    char text[16];

    return json_string(psc__endpoint_name(end, text, sizeof(text)));
}

static json_t *psc__cal_route_json(const psc_cal_route_t *r, int *bad)
{
    json_t *o = json_object(), *sizes = json_array(), *us = json_array();
    int n = r->nsizes < 0 ? 0 : r->nsizes > PSC_CAL_MAX_SIZES ? PSC_CAL_MAX_SIZES : r->nsizes;

    psc__json_set(o, "src", psc__cal_end_json(r->src), bad);
    psc__json_set(o, "dst", psc__cal_end_json(r->dst), bad);
    psc__json_set(o, "stream_gpu", psc__cal_end_json(r->stream_gpu), bad);
    psc__json_set(o, "issuer", psc__cal_end_json(r->issuer), bad);
    psc__json_set(o, "engine", json_string(r->engine == PSC_ENGINE_SM ? "sm" : "ce"), bad);
    for (int k = 0; k < n; k++) {
        /* Integers, so every size reads back exactly; one past int64 (never measured) is null, refused on read. */
        psc__json_push(sizes, psc__json_u64(r->size[k]), bad);
        psc__json_push(us, isfinite(r->us[k]) ? json_real(r->us[k]) : json_null(), bad);
    }
    psc__json_set(o, "sizes", sizes, bad);
    psc__json_set(o, "us", us, bad);
    return o;
}

char *psc_calibration_json(const psc_calibration_t *cal)
{
    json_t *o, *gpus, *routes;
    int bad = 0, ngpu;
    char *text;

    if (!cal)
        return NULL;
    ngpu = cal->ngpu < 0 ? 0 : cal->ngpu > PSC_MAX_GPUS ? PSC_MAX_GPUS : cal->ngpu;
    o = json_object();
    gpus = json_array();
    routes = json_array();
    psc__json_set(o, PSC_CAL_FORMAT, json_integer(PSC_CAL_VERSION), &bad);
    psc__json_set(o, "library_version", json_string(psc_version(NULL, NULL, NULL)), &bad);
    psc__json_set(o, "created", psc__json_text(cal->created, sizeof(cal->created) - 1), &bad);
    psc__json_set(o, "driver_release", psc__json_text(cal->driver_release, sizeof(cal->driver_release) - 1), &bad);
    psc__json_set(o, "gpu_name", psc__json_text(cal->gpu_name, sizeof(cal->gpu_name) - 1), &bad);
    for (int i = 0; i < ngpu; i++) {
        json_t *g = json_object();

        psc__json_set(g, "index", json_integer(i), &bad);
        psc__json_set(g, "uuid", psc__json_text(cal->uuid[i], sizeof(cal->uuid[i]) - 1), &bad);
        psc__json_push(gpus, g, &bad);
    }
    psc__json_set(o, "gpus", gpus, &bad);
    for (int k = 0; k < cal->nroute && cal->route; k++)
        if (cal->route[k].nsizes > 0) /* a route measured at no size says nothing: left out, as the reader wants */
            psc__json_push(routes, psc__cal_route_json(&cal->route[k], &bad), &bad);
    psc__json_set(o, "routes", routes, &bad);
    /* jansson's default precision for reals is 17 digits: every time reads back to the same double. */
    text = bad ? NULL : json_dumps(o, JSON_INDENT(2));
    json_decref(o);
    return text;
}

psc_status_t psc_calibration_save(const psc_calibration_t *cal, const char *path, char *errbuf, size_t errlen)
{
    psc_status_t st;
    char *text;

    if (!errbuf)
        errlen = 0; /* the reason has nowhere to go; snprintf writes nothing */
    if (!path || !*path) {
        snprintf(errbuf, errlen, "no file given to write the calibration to (accepted: a file path)");
        return PSC_ERR_INVALID;
    }
    if (!cal) {
        snprintf(errbuf, errlen, "%s: no calibration to write (accepted: one from psc_copy_calibrate)", path);
        return PSC_ERR_INVALID;
    }
    text = psc_calibration_json(cal);
    if (!text) {
        snprintf(errbuf, errlen, "%s: cannot turn the calibration into JSON: out of host memory", path);
        return PSC_ERR_NO_MEMORY;
    }
    st = psc_write_file_atomic(path, text, strlen(text), errbuf, errlen);
    free(text);
    return st;
}

/* ---------------------------------------------------------------- reader */

typedef struct {
    const char *file;
    char *err;
    size_t errlen;
} psc__cal_rd_t;

/* One line: "FILE: where: what was wrong: accepted what". */
static psc_status_t psc__cal_bad(const psc__cal_rd_t *r, const char *where, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static psc_status_t psc__cal_bad(const psc__cal_rd_t *r, const char *where, const char *fmt, ...)
{
    char msg[384];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    snprintf(r->err, r->errlen, "%s: %s: %s", r->file, where, msg);
    return PSC_ERR_INVALID;
}

/* A string key into a fixed buffer (len bytes with the NUL). */
static psc_status_t psc__cal_str(const psc__cal_rd_t *r, json_t *o, const char *where, const char *key, char *out,
                                 size_t len, int nonempty)
{
    json_t *v = json_object_get(o, key);
    char path[96], what[64];

    snprintf(path, sizeof(path), "%s%s%s", where, *where ? "." : "", key);
    if (!json_is_string(v))
        return psc__cal_bad(r, path, "%s: accepted a string", psc__json_dump(v, what, sizeof(what)));
    if (json_string_length(v) >= len)
        return psc__cal_bad(r, path, "longer than %zu bytes: accepted at most %zu", len - 1, len - 1);
    if (strlen(json_string_value(v)) != json_string_length(v))
        return psc__cal_bad(r, path, "holds a NUL character: accepted text without one");
    if (nonempty && json_string_length(v) == 0)
        return psc__cal_bad(r, path, "empty: accepted a non-empty string");
    memcpy(out, json_string_value(v), json_string_length(v) + 1);
    return PSC_OK;
}

/* "gpuN" (N within ngpu) or, where host_ok, "host". */
static psc_status_t psc__cal_end(const psc__cal_rd_t *r, json_t *o, const char *where, const char *key, int ngpu,
                                 int host_ok, int *out)
{
    json_t *v = json_object_get(o, key);
    const char *s = json_string_value(v);
    char path[96], what[64];
    int n = -1;
    unsigned g = 0;

    snprintf(path, sizeof(path), "%s.%s", where, key);
    if (s && host_ok && strcmp(s, "host") == 0) {
        *out = PSC_HOST;
        return PSC_OK;
    }
    /* Digits only, no sign or leading zero: one spelling per GPU. */
    if (s && strncmp(s, "gpu", 3) == 0 && s[3] >= '0' && s[3] <= '9' && (s[3] != '0' || s[4] == '\0') &&
        strlen(s) <= 6 && sscanf(s + 3, "%3u%n", &g, &n) == 1 && n == (int)strlen(s + 3) &&
        strlen(s) == json_string_length(v) && g < (unsigned)ngpu) {
        *out = (int)g;
        return PSC_OK;
    }
    return psc__cal_bad(r, path, "%s: accepted \"gpu0\" to \"gpu%d\"%s", psc__json_dump(v, what, sizeof(what)),
                        ngpu - 1, host_ok ? " or \"host\"" : "");
}

static psc_status_t psc__cal_route_read(const psc__cal_rd_t *r, json_t *o, size_t k, int ngpu, psc_cal_route_t *rt)
{
    json_t *sizes = json_object_get(o, "sizes"), *us = json_object_get(o, "us"), *eng = json_object_get(o, "engine");
    char where[48], path[96], what[64];
    psc_status_t st;
    size_t n;

    snprintf(where, sizeof(where), "routes[%zu]", k);
    if (!json_is_object(o))
        return psc__cal_bad(r, where, "%s: accepted an object", psc__json_dump(o, what, sizeof(what)));
    if ((st = psc__cal_end(r, o, where, "src", ngpu, 1, &rt->src)) != PSC_OK ||
        (st = psc__cal_end(r, o, where, "dst", ngpu, 1, &rt->dst)) != PSC_OK ||
        (st = psc__cal_end(r, o, where, "stream_gpu", ngpu, 0, &rt->stream_gpu)) != PSC_OK ||
        (st = psc__cal_end(r, o, where, "issuer", ngpu, 0, &rt->issuer)) != PSC_OK) /* a GPU moves the bytes */
        return st;
    if (rt->src == PSC_HOST && rt->dst == PSC_HOST)
        return psc__cal_bad(r, where, "src and dst are both the host: accepted a path with a GPU at one end");
    snprintf(path, sizeof(path), "%s.issuer", where);
    if (rt->issuer != rt->src && rt->issuer != rt->dst && rt->issuer != rt->stream_gpu)
        return psc__cal_bad(r, path, "%s is neither an end of the path nor the stream's GPU: accepted src, dst or "
                            "stream_gpu", psc__json_dump(json_object_get(o, "issuer"), what, sizeof(what)));
    snprintf(path, sizeof(path), "%s.engine", where);
    if (json_is_string(eng) && strcmp(json_string_value(eng), "ce") == 0 && json_string_length(eng) == 2)
        rt->engine = PSC_ENGINE_CE;
    else if (json_is_string(eng) && strcmp(json_string_value(eng), "sm") == 0 && json_string_length(eng) == 2)
        rt->engine = PSC_ENGINE_SM;
    else
        return psc__cal_bad(r, path, "%s: accepted \"ce\" or \"sm\"", psc__json_dump(eng, what, sizeof(what)));
    snprintf(path, sizeof(path), "%s.sizes", where);
    if (!json_is_array(sizes))
        return psc__cal_bad(r, path, "%s: accepted an array of byte counts", psc__json_dump(sizes, what, sizeof(what)));
    n = json_array_size(sizes);
    if (n < 1 || n > PSC_CAL_MAX_SIZES)
        return psc__cal_bad(r, path, "%zu sizes: accepted 1 to %d", n, PSC_CAL_MAX_SIZES);
    snprintf(path, sizeof(path), "%s.us", where);
    if (!json_is_array(us))
        return psc__cal_bad(r, path, "%s: accepted an array of times in microseconds",
                            psc__json_dump(us, what, sizeof(what)));
    if (json_array_size(us) != n)
        return psc__cal_bad(r, path, "%zu times for %zu sizes: accepted one time per size", json_array_size(us), n);
    rt->nsizes = (int)n;
    for (size_t s = 0; s < n; s++) {
        json_t *sv = json_array_get(sizes, s), *tv = json_array_get(us, s);
        json_int_t b = json_integer_value(sv);
        double t = json_number_value(tv);

        snprintf(path, sizeof(path), "%s.sizes[%zu]", where, s);
        if (!json_is_integer(sv) || b < 1 || (uint64_t)b > PSC_CAL_MAX_BYTES)
            return psc__cal_bad(r, path, "%s: accepted an integer 1 to %llu (bytes)",
                                psc__json_dump(sv, what, sizeof(what)), (unsigned long long)PSC_CAL_MAX_BYTES);
        if (s > 0 && (uint64_t)b <= rt->size[s - 1])
            return psc__cal_bad(r, path, "%" JSON_INTEGER_FORMAT " after %" PRIu64 ": accepted sizes in ascending "
                                "order, each once", b, rt->size[s - 1]);
        rt->size[s] = (uint64_t)b;
        snprintf(path, sizeof(path), "%s.us[%zu]", where, s);
        if (!json_is_number(tv) || !isfinite(t) || !(t > 0))
            return psc__cal_bad(r, path, "%s: accepted a time in microseconds above 0",
                                psc__json_dump(tv, what, sizeof(what)));
        rt->us[s] = t;
    }
    return PSC_OK;
}

/* A route's identity, for finding one given twice. */
static uint64_t psc__cal_route_key(const psc_cal_route_t *rt)
{
    return (uint64_t)(rt->src + 1) << 40 | (uint64_t)(rt->dst + 1) << 28 | (uint64_t)rt->stream_gpu << 16 |
           (uint64_t)(rt->issuer + 1) << 4 | (uint64_t)rt->engine;
}

static int psc__cal_cmp_key(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

/* The document's format and version, and what it says of where it was made. */
static psc_status_t psc__cal_head_read(const psc__cal_rd_t *r, json_t *doc, psc_calibration_t *cal)
{
    json_t *v;
    char what[64];
    psc_status_t st;

    v = json_object_get(doc, PSC_CAL_FORMAT);
    if (!json_is_integer(v) || json_integer_value(v) != PSC_CAL_VERSION)
        return psc__cal_bad(r, PSC_CAL_FORMAT, "%s: not a calibration this library reads: accepted %d (written by "
                            "`p2pscope copy --calibrate FILE`)", psc__json_dump(v, what, sizeof(what)),
                            PSC_CAL_VERSION);
    v = json_object_get(doc, "library_version");
    if (v && !json_is_string(v))
        return psc__cal_bad(r, "library_version", "%s: accepted a string", psc__json_dump(v, what, sizeof(what)));
    if ((st = psc__cal_str(r, doc, "", "created", cal->created, sizeof(cal->created), 0)) != PSC_OK ||
        (st = psc__cal_str(r, doc, "", "driver_release", cal->driver_release, sizeof(cal->driver_release), 0)) !=
            PSC_OK ||
        (st = psc__cal_str(r, doc, "", "gpu_name", cal->gpu_name, sizeof(cal->gpu_name), 0)) != PSC_OK)
        return st;
    return PSC_OK;
}

/* "gpus": each GPU's index, in the driver's order, and its uuid, no two the same. */
static psc_status_t psc__cal_gpus_read(const psc__cal_rd_t *r, json_t *doc, psc_calibration_t *cal)
{
    json_t *gpus = json_object_get(doc, "gpus");
    char what[64], where[48];
    psc_status_t st;
    size_t n;

    if (!json_is_array(gpus))
        return psc__cal_bad(r, "gpus", "%s: accepted an array of {index, uuid}", psc__json_dump(gpus, what, sizeof(what)));
    n = json_array_size(gpus);
    if (n < 1 || n > PSC_MAX_GPUS)
        return psc__cal_bad(r, "gpus", "%zu GPUs: accepted 1 to %d", n, PSC_MAX_GPUS);
    cal->ngpu = (int)n;
    for (size_t i = 0; i < n; i++) {
        json_t *g = json_array_get(gpus, i), *idx = json_object_get(g, "index");

        snprintf(where, sizeof(where), "gpus[%zu]", i);
        if (!json_is_object(g))
            return psc__cal_bad(r, where, "%s: accepted an object {index, uuid}", psc__json_dump(g, what, sizeof(what)));
        snprintf(where, sizeof(where), "gpus[%zu].index", i);
        if (!json_is_integer(idx) || json_integer_value(idx) != (json_int_t)i)
            return psc__cal_bad(r, where, "%s: accepted %zu (the GPUs in the driver's order)",
                                psc__json_dump(idx, what, sizeof(what)), i);
        snprintf(where, sizeof(where), "gpus[%zu]", i);
        if ((st = psc__cal_str(r, g, where, "uuid", cal->uuid[i], sizeof(cal->uuid[i]), 1)) != PSC_OK)
            return st;
        for (size_t j = 0; j < i; j++)
            if (strcmp(cal->uuid[j], cal->uuid[i]) == 0)
                return psc__cal_bad(r, "gpus", "gpus[%zu] and gpus[%zu] have the same uuid: accepted one GPU each",
                                    j, i);
    }
    return PSC_OK;
}

/* No route given twice: keys (the routes' keys, room for cal->nroute) sorted, a repeat named by its first place. */
static psc_status_t psc__cal_routes_once(const psc__cal_rd_t *r, const psc_calibration_t *cal, uint64_t *keys)
{
    const size_t n = (size_t)cal->nroute;
    char where[48];

    qsort(keys, n, sizeof(*keys), psc__cal_cmp_key);
    for (size_t k = 1; k < n; k++)
        if (keys[k] == keys[k - 1]) {
            for (size_t j = 0; j < n; j++)
                if (psc__cal_route_key(&cal->route[j]) == keys[k]) {
                    snprintf(where, sizeof(where), "routes[%zu]", j);
                    break;
                }
            return psc__cal_bad(r, where, "the same route (src, dst, stream_gpu, issuer, engine) is given again "
                                "later: accepted each route once");
        }
    return PSC_OK;
}

/* "routes": between 1 and what the GPUs allow, each read (psc__cal_route_read) into cal->route, each once. */
static psc_status_t psc__cal_routes_read(const psc__cal_rd_t *r, json_t *doc, psc_calibration_t *cal)
{
    json_t *routes = json_object_get(doc, "routes");
    char what[64];
    uint64_t *keys;
    psc_status_t st = PSC_OK;
    size_t n;

    if (!json_is_array(routes))
        return psc__cal_bad(r, "routes", "%s: accepted an array of routes", psc__json_dump(routes, what, sizeof(what)));
    n = json_array_size(routes);
    if (n < 1 || n > psc__cal_max_routes(cal->ngpu))
        return psc__cal_bad(r, "routes", "%zu routes: accepted 1 to %zu for %d GPUs", n,
                            psc__cal_max_routes(cal->ngpu), cal->ngpu);
    cal->route = calloc(n, sizeof(*cal->route));
    keys = calloc(n, sizeof(*keys));
    if (!cal->route || !keys) {
        free(keys);
        snprintf(r->err, r->errlen, "%s: out of host memory", r->file);
        return PSC_ERR_NO_MEMORY;
    }
    cal->nroute = (int)n;
    for (size_t k = 0; k < n; k++) {
        if ((st = psc__cal_route_read(r, json_array_get(routes, k), k, cal->ngpu, &cal->route[k])) != PSC_OK)
            break;
        keys[k] = psc__cal_route_key(&cal->route[k]);
    }
    if (st == PSC_OK)
        st = psc__cal_routes_once(r, cal, keys);
    free(keys);
    return st;
}

/* A calibration document: its head, its GPUs and its routes, each checked; the first fault is r's message. */
static psc_status_t psc__cal_doc_read(const psc__cal_rd_t *r, json_t *doc, psc_calibration_t *cal)
{
    psc_status_t st;

    if (!json_is_object(doc))
        return psc__cal_bad(r, "the document", "not a JSON object: accepted a p2pscope copy calibration");
    if ((st = psc__cal_head_read(r, doc, cal)) != PSC_OK || (st = psc__cal_gpus_read(r, doc, cal)) != PSC_OK)
        return st;
    return psc__cal_routes_read(r, doc, cal);
}

psc_status_t psc_calibration_read(const char *path, psc_calibration_t **out, char *errbuf, size_t errlen)
{
    char scratch[8];
    psc__cal_rd_t r;
    psc_calibration_t *cal = NULL;
    json_error_t jerr;
    json_t *doc = NULL;
    char *text = NULL;
    size_t len = 0;
    psc_status_t st;

    if (!errbuf || !errlen) {
        errbuf = scratch;
        errlen = sizeof(scratch);
    }
    if (!path || !*path) {
        snprintf(errbuf, errlen, "no calibration file given (accepted: a file written by `p2pscope copy --calibrate "
                                 "FILE`)");
        return PSC_ERR_INVALID;
    }
    if (!out) {
        snprintf(errbuf, errlen, "%s: nowhere to put the calibration (accepted: a psc_calibration_t ** to fill)", path);
        return PSC_ERR_INVALID;
    }
    st = psc__safe_read_file(NULL, path, PSC_CAL_MAX_FILE, &text, &len, errbuf, errlen);
    if (st != PSC_OK)
        return st;
    r.file = path;
    r.err = errbuf;
    r.errlen = errlen;
    doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!doc) {
        psc__json_parse_error(errbuf, errlen, path, &jerr);
        st = PSC_ERR_INVALID;
        goto out;
    }
    cal = calloc(1, sizeof(*cal));
    if (!cal) {
        snprintf(errbuf, errlen, "%s: out of host memory", path);
        st = PSC_ERR_NO_MEMORY;
        goto out;
    }
    st = psc__cal_doc_read(&r, doc, cal);
    if (st == PSC_OK) {
        *out = cal;
        cal = NULL;
    }
out:
    psc_calibration_free(cal);
    json_decref(doc);
    free(text);
    return st;
}

/* ---------------------------------------------------------------- installing one in a context */

/* "GPU-a, GPU-b" cut to fit len, with "..." where cut. */
static void psc__cal_uuid_list(char uuid[][48], const psc_device_info_t *info, int n, char *buf, size_t len)
{
    size_t o = 0;

    buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        const char *u = uuid ? uuid[i] : info[i].uuid;
        int w = snprintf(buf + o, len - o, "%s%s", i ? ", " : "", *u ? u : "(unknown)");

        if (w < 0 || (size_t)w >= len - o) {
            if (len > 4)
                memcpy(buf + len - 4, "...", 4);
            return;
        }
        o += (size_t)w;
    }
}

/*
 * Set up now the GPUs and hop streams the calibration's hops need, so that a
 * psc_copy (in a graph capture, maybe) never has to: setting up a GPU
 * allocates. Best effort: a GPU that cannot be set up is simply never hopped
 * to (psc_copy hops only to GPUs set up). The caller's context is kept.
 */
static void psc__cal_hops_ready(psc_context_t *ctx)
{
    char keep[sizeof(ctx->last_error)];
    const psc_calibration_t *cal = ctx->copy_cal;

    memcpy(keep, ctx->last_error, sizeof(keep));
    psc__guard_enter(ctx);
    for (int i = 0; i < cal->nroute; i++)
        if (cal->route[i].issuer != cal->route[i].stream_gpu && psc__gpu_hop_ready(ctx, cal->route[i].issuer) == PSC_OK)
            psc__gpu_hop_ready(ctx, cal->route[i].stream_gpu);
    psc__guard_leave(ctx, PSC_OK);
    memcpy(ctx->last_error, keep, sizeof(keep));
}

/* The context is closing: the calibration its copies were routed by goes with it. */
static void psc__cal_close(psc_context_t *ctx)
{
    psc_calibration_free(ctx->copy_cal);
    ctx->copy_cal = NULL;
}

psc_status_t psc_copy_calibration_load(psc_context_t *ctx, const char *path)
{
    psc_calibration_t *cal = NULL;
    char err[400], had[120], has[120];
    psc_status_t st;

    if (!ctx)
        return PSC_ERR_INVALID;
    if (!path) {
        psc_calibration_free(ctx->copy_cal);
        ctx->copy_cal = NULL;
        psc__copy_memo_forget();
        return PSC_OK;
    }
    st = psc_calibration_read(path, &cal, err, sizeof(err));
    if (st != PSC_OK)
        return psc__fail(ctx, st, "%s", err);
    for (int i = 0; i < cal->ngpu && i < ctx->ndev && cal->ngpu == ctx->ndev; i++)
        if (!ctx->info[i].uuid[0] || strcmp(cal->uuid[i], ctx->info[i].uuid) != 0) {
            psc__cal_uuid_list(cal->uuid, NULL, cal->ngpu, had, sizeof(had));
            psc__cal_uuid_list(NULL, ctx->info, ctx->ndev, has, sizeof(has));
            st = psc__fail(ctx, PSC_ERR_INVALID,
                           "calibration %s was measured on GPUs %s, this machine has %s (GPU %d differs): accepted "
                           "a calibration made here (p2pscope copy --calibrate FILE)",
                           path, had, has, i);
            goto out;
        }
    if (cal->ngpu != ctx->ndev) {
        st = psc__fail(ctx, PSC_ERR_INVALID,
                       "calibration %s was measured on %d GPU%s, this machine has %d: accepted a calibration made "
                       "here (p2pscope copy --calibrate FILE)",
                       path, cal->ngpu, cal->ngpu == 1 ? "" : "s", ctx->ndev);
        goto out;
    }
    psc_calibration_free(ctx->copy_cal);
    ctx->copy_cal = cal;
    cal = NULL;
    psc__context_on_close(ctx, PSC__CLOSE_COPY_CAL, psc__cal_close);
    psc__copy_memo_forget(); /* the routes kept were chosen by the calibration before */
    psc__cal_hops_ready(ctx);
out:
    psc_calibration_free(cal);
    return st;
}
