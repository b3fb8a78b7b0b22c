/*
 * coll -J FILE: nccl-tests' own JSON output (util.cu at 2.19.6, JSON_FILE_VERSION 3), written as nccl-tests writes
 * it: compact, doubles "%lf", its booleans as the strings "true" and "false", its keys in its order, strings
 * escaped as its sanitizeJson does (cut at a byte it does not take), so readers of nccl-tests' files read ours.
 */
#define _GNU_SOURCE
#include "render_coll.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/p2pscope_private.h"

/* A value after the first of its object or list is preceded by a comma: the writer's one state. */
typedef struct {
    FILE *f;
    int first;
} psc__jw_t;

static void psc__sep(psc__jw_t *w)
{
    if (!w->first)
        fputc(',', w->f);
    w->first = 0;
}

/* util.cu's sanitizeJson: ", \, / and tab and newline escaped; the string ends at any other control or non-ASCII byte. */
static void psc__str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;

        if (c == '"' || c == '\\' || c == '/')
            fprintf(f, "\\%c", c);
        else if (c == '\t' || c == '\n')
            fputs(c == '\t' ? "\\t" : "\\n", f);
        else if (c >= 0x7f || c <= 0x1f)
            break;
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static void psc__key(psc__jw_t *w, const char *k)
{
    psc__sep(w);
    psc__str(w->f, k);
    fputc(':', w->f);
}

static void psc__kstr(psc__jw_t *w, const char *k, const char *v)
{
    psc__key(w, k);
    psc__str(w->f, v);
}

static void psc__kint(psc__jw_t *w, const char *k, long long v)
{
    psc__key(w, k);
    fprintf(w->f, "%lld", v);
}

/* jsonDouble: "%lf", a NaN as the string "nan". */
static void psc__dbl(FILE *f, double v)
{
    if (v != v)
        fputs("\"nan\"", f);
    else
        fprintf(f, "%lf", v);
}

static void psc__kdbl(psc__jw_t *w, const char *k, double v)
{
    psc__key(w, k);
    psc__dbl(w->f, v);
}

static void psc__open(psc__jw_t *w, const char *k, char c)
{
    if (k)
        psc__key(w, k);
    else
        psc__sep(w);
    fputc(c, w->f);
    w->first = 1;
}

static void psc__close(psc__jw_t *w, char c)
{
    fputc(c, w->f);
    w->first = 0;
}

/* util.cu's formatNow: local time, "%Y-%m-%d %H:%M:%S". */
static void psc__when(psc__jw_t *w, const char *k, long long when)
{
    char buf[64] = "";
    time_t t = (time_t)when;
    struct tm tmv;

    if (localtime_r(&t, &tmv))
        strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tmv);
    psc__kstr(w, k, buf);
}

/*
 * "env": the whole environment with --identify, as nccl-tests writes it; else
 * only NCCL's, CUDA's and p2pscope's variables (what shapes the run, and no
 * one's tokens or paths).
 */
static void psc__env(psc__jw_t *w, const psc_coll_nccl_json_opts_t *o)
{
    psc__open(w, "env", '[');
    for (char *const *e = o->envp; e && *e; e++)
        if (o->identify || strncmp(*e, "NCCL_", 5) == 0 || strncmp(*e, "CUDA_", 5) == 0 ||
            strncmp(*e, "P2PSCOPE_", 9) == 0) {
            psc__sep(w);
            psc__str(w->f, *e);
        }
    psc__close(w, ']');
}

/* "devices": nccl-tests parses one "#  Rank" line per process (its first GPU's), so one entry per process. */
static void psc__devices(psc__jw_t *w, const psc_coll_report_t *r, int identify)
{
    int per = r->nprocs > 0 ? r->nranks / r->nprocs : r->nranks;

    psc__open(w, "devices", '[');
    for (int i = 0; r->ranks && per > 0 && i < r->nranks; i += per) {
        const psc_coll_rank_t *k = &r->ranks[i];
        char host[sizeof(k->host) + 1], bus[sizeof(k->pci_bus_id) + 1], hex[32], name[sizeof(k->name) + 1];
        unsigned dom = 0, b = 0, dev = 0, fn = 0;

        snprintf(host, sizeof(host), "%.*s", (int)strnlen(k->host, sizeof(k->host)), k->host);
        host[strcspn(host, ". \t")] = '\0';
        snprintf(bus, sizeof(bus), "%.*s", (int)strnlen(k->pci_bus_id, sizeof(k->pci_bus_id)), k->pci_bus_id);
        if (sscanf(bus, "%x:%x:%x.%x", &dom, &b, &dev, &fn) < 3)
            dom = b = dev = 0;
        snprintf(hex, sizeof(hex), "%04x:%02x:%02x", dom, b, dev);
        snprintf(name, sizeof(name), "%.*s", (int)strnlen(k->name, sizeof(k->name)), k->name);
        psc__open(w, NULL, '{');
        psc__kint(w, "rank", k->rank);
        psc__kint(w, "group", 0);
        psc__kint(w, "pid", k->pid);
        psc__kstr(w, "hostname", identify ? host : "");
        psc__kint(w, "device", k->device);
        psc__kstr(w, "device_hex", hex);
        psc__kstr(w, "device_info", name);
        psc__close(w, '}');
    }
    psc__close(w, ']');
}

/* writeDeviceReport's "config". */
static void psc__config(psc__jw_t *w, const psc_coll_report_t *r, int identify)
{
    psc__open(w, "config", '{');
    psc__kint(w, "nthreads", 1);
    psc__kint(w, "ngpus", r->nprocs > 0 ? r->nranks / r->nprocs : r->nranks);
    psc__kint(w, "minimum_bytes", (long long)r->min_bytes);
    psc__kint(w, "maximum_bytes", (long long)r->max_bytes);
    if (r->step_factor > 1)
        psc__kint(w, "step_factor", r->step_factor);
    else
        psc__kint(w, "step_bytes", (long long)r->step_bytes);
    psc__kint(w, "warmup_iters", r->warmup_iters);
    psc__kint(w, "iterations", r->iters);
    psc__kint(w, "aggregated_iterations", r->agg_iters);
    psc__kint(w, "validation", r->check);
    psc__kint(w, "graph", r->graph_launches);
    psc__kstr(w, "blocking_collectives", r->blocking ? "true" : "false");
    psc__kstr(w, "per_iter_timing", r->per_iter ? "true" : "false");
    psc__kint(w, "per_iter_skip", r->per_iter_skip);
    psc__kstr(w, "parallel_init", r->parallel_init ? "true" : "false");
    psc__devices(w, r, identify);
    psc__close(w, '}');
}

/* writePerIterReport's object. */
static void psc__per_iter(psc__jw_t *w, const char *k, const psc_coll_iter_t *it)
{
    psc__open(w, k, '{');
    psc__kint(w, "skipped_iterations", it->skipped);
    psc__kdbl(w, "min_us", it->min_us);
    psc__kdbl(w, "max_us", it->max_us);
    psc__kdbl(w, "avg_us", it->avg_us);
    psc__kdbl(w, "p50_us", it->p50_us);
    psc__kdbl(w, "p95_us", it->p95_us);
    psc__kdbl(w, "p99_us", it->p99_us);
    psc__kdbl(w, "stdev_us", it->stdev_us);
    psc__kdbl(w, "cv_pct", it->cv_pct);
    psc__open(w, "times_us", '[');
    for (int i = 0; it->times_us && i < it->n; i++) {
        psc__sep(w);
        psc__dbl(w->f, it->times_us[i]);
    }
    psc__close(w, ']');
    psc__close(w, '}');
}

/* One of "results": writeBenchmarkLinePreamble, each half's body (and -I's), writeBenchmarkLineTerminator. */
static void psc__result(psc__jw_t *w, const psc_coll_report_t *r, int i, int cputime)
{
    const psc_coll_row_t *row = &r->rows[i];
    const psc_coll_row_ext_t *ext = r->ext ? &r->ext[i] : NULL;
    char root[16];

    snprintf(root, sizeof(root), "%6i", row->root);
    psc__open(w, NULL, '{');
    psc__kint(w, "size", (long long)row->bytes);
    psc__kint(w, "count", (long long)row->count);
    psc__kstr(w, "type", psc_dtype_name(row->dtype) ? psc_dtype_name(row->dtype) : "?");
    psc__kstr(w, "redop", row->op < 0 ? "none" : psc_redop_name(row->op) ? psc_redop_name(row->op) : "?");
    psc__kstr(w, "root", root);
    for (int k = 0; k < 2; k++) {
        if (!row->r[k].ran)
            continue;
        psc__open(w, k ? "in_place" : "out_of_place", '{');
        psc__kdbl(w, cputime ? "cpu_time" : "time", cputime && ext ? ext->r[k].cpu_time_us : row->r[k].time_us);
        psc__kdbl(w, "alg_bw", row->r[k].algbw_gbs);
        psc__kdbl(w, "bus_bw", row->r[k].busbw_gbs);
        psc__key(w, "nwrong");
        if (row->r[k].wrong >= 0)
            psc__dbl(w->f, (double)row->r[k].wrong);
        else
            fputs("null", w->f);
        psc__close(w, '}');
        if (r->per_iter && ext && ext->r[k].iter.n)
            psc__per_iter(w, k ? "in_place_per_iter" : "out_of_place_per_iter", &ext->r[k].iter);
    }
    psc__kint(w, "actual_iterations", r->iters);
    psc__kstr(w, "experiment_name", "");
    psc__close(w, '}');
}

/* writeResultFooter's and writeErrors' objects. */
static void psc__summary(psc__jw_t *w, const psc_coll_report_t *r, const psc_coll_nccl_json_opts_t *o, int failed)
{
    psc__open(w, "out_of_bounds", '{');
    psc__kint(w, "count", failed);
    psc__kstr(w, "okay", failed ? "false" : "true");
    psc__close(w, '}');
    psc__open(w, "average_bus_bandwidth", '{');
    psc__kdbl(w, "bandwidth", r->avg_busbw_gbs);
    psc__kstr(w, "okay", !o->min_bw_set ? "unchecked" : psc_coll_busbw_short(r->avg_busbw_gbs, o->min_bw_gbs) ?
                                                        "false" : "true");
    psc__close(w, '}');
    psc__open(w, "errors", '[');
    psc__sep(w);
    psc__str(w->f, o->last_error ? o->last_error : "");
    psc__close(w, ']');
}

char *psc_render_coll_nccl_json(const psc_coll_report_t *r, const psc_coll_nccl_json_opts_t *o, size_t *len)
{
    char *buf = NULL;
    size_t n = 0;
    psc__jw_t w;
    int failed = 0, impl = psc_render_coll_table(r, &failed);

    if (!r || !o || !(w.f = open_memstream(&buf, &n)))
        return NULL;
    w.first = 1;
    fputc('{', w.f);
    psc__kint(&w, "version", 3);
    psc__when(&w, "start_time", r->start_time);
    psc__open(&w, "args", '[');
    for (int i = 0; o->argv && i < o->argc; i++) {
        psc__sep(&w);
        psc__str(w.f, o->argv[i]);
    }
    psc__close(&w, ']');
    psc__env(&w, o);
    psc__kint(&w, "nccl_version", r->nccl_version);
    psc__config(&w, r, o->identify);
    psc__open(&w, "results", '[');
    for (int i = 0; r->rows && i < r->nrows; i++)
        if ((r->rows[i].impl == PSC_COLL_IMPL_P2PSCOPE ? PSC_COLL_IMPL_P2PSCOPE : PSC_COLL_IMPL_NCCL) == impl)
            psc__result(&w, r, i, o->cputime);
    psc__close(&w, ']');
    psc__summary(&w, r, o, failed);
    psc__when(&w, "end_time", r->end_time);
    fputc('}', w.f);
    if (fclose(w.f) != 0) {
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}
