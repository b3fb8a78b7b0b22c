/*
 * `p2pscope ipc`'s results (render_ipc.h): between processes beside the same paths in one process, as text
 * and JSON.
 */
#include "render_ipc.h"

#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "render_lat.h"
#include "table.h"
#include "text.h"

static const char *const psc__copy_titles[PSC_IPC_NBW] = {
    "the importer's copy engine: its own memory -> the imported memory",
    "the importer's copy engine: the imported memory -> its own memory",
    "the importer's SM copy kernel, storing into the imported memory",
    "the importer's SM copy kernel, loading from the imported memory",
};

static int psc__copy_writes(int k)
{
    return k == PSC_IPC_CE_WRITE || k == PSC_IPC_SM_WRITE;
}

int psc_ipc_bw_ratio(const psc_bw_result_t *between, const psc_bw_result_t *local, double *ratio)
{
    if (between->status != PSC_RESULT_PASSED || local->status != PSC_RESULT_PASSED || !between->nsamples ||
        !local->nsamples || !(local->stats.median > 0))
        return 0;
    *ratio = between->stats.median / local->stats.median;
    return 1;
}

/* The round trips' ratio of medians, p50 between processes over p50 in one process. */
static int psc__rtt_ratio(const psc_ipc_pair_t *p, double *ratio)
{
    if (!p->rtt_ns.n || !p->rtt_local_ns.n || !(p->rtt_local_ns.p50 > 0))
        return 0;
    *ratio = p->rtt_ns.p50 / p->rtt_local_ns.p50;
    return 1;
}

static int psc__pair_failed(const psc_ipc_pair_t *p)
{
    if (p->status == PSC_RESULT_FAILED)
        return 1;
    for (int k = 0; k < PSC_IPC_NBW; k++)
        if (p->bw[k].status == PSC_RESULT_FAILED || p->bw_local[k].status == PSC_RESULT_FAILED)
            return 1;
    return 0;
}

int psc_ipc_report_nfailed(const psc_ipc_report_t *r)
{
    int n = 0;

    for (int i = 0; r && i < r->npairs; i++)
        n += psc__pair_failed(&r->pairs[i]);
    return n;
}

static const char *psc__access_text(unsigned a)
{
    return a == PSC_ACCESS_READWRITE ? "rw" : a == PSC_ACCESS_READ ? "r" : a == PSC_ACCESS_NONE ? "-"
           : a == PSC_IPC_ACCESS_NOT_ASKED ? "n/a" : "?";
}

/*
 * prefix then text (escaped: it comes from drivers and workers), wrapped at
 * spaces so no line passes PSC_IPC_TEXT_WIDTH; continuations indented by 4.
 */
static void psc__wrapped(FILE *f, const char *prefix, const char *text)
{
    char buf[2048];
    size_t col = strlen(prefix);
    const char *p = buf;

    psc_text_escape(text, NULL, buf, sizeof(buf));
    fputs(prefix, f);
    while (*p == ' ')
        p++;
    while (*p) {
        size_t word = strcspn(p, " ");

        if (col > 4 && col + 1 + word > PSC_IPC_TEXT_WIDTH) {
            fputs("\n    ", f);
            col = 4;
        } else if (col > 0) {
            fputc(' ', f);
            col++;
        }
        fwrite(p, 1, word, f);
        col += word;
        p += word;
        while (*p == ' ')
            p++;
    }
    fputc('\n', f);
}

static const char *psc__method_title(int method)
{
    switch (method) {
    case PSC_SHARE_LEGACY: return "CUDA IPC handles (cuIpcGetMemHandle, cuIpcOpenMemHandle)";
    case PSC_SHARE_VMM_FD: return "VMM allocation shared as a POSIX fd (cuMemExportToShareableHandle)";
    case PSC_SHARE_VMM_FABRIC: return "VMM allocation shared as a fabric handle";
    default: return "unknown method";
    }
}

static void psc__workers(FILE *f, const psc_ipc_report_t *r)
{
    psc_table_t *t = psc_table_new((unsigned)r->nranks + 1, 3);

    if (r->joined) /* one rank per GPU under mpirun: rank 0 coordinates and is worker 0 */
        fprintf(f, "\np2pscope ipc: %d ranks (worker 0 in the coordinating process), %llu bytes per copy", r->nranks,
                (unsigned long long)r->size);
    else
        fprintf(f, "\np2pscope ipc: %d worker processes, %llu bytes per copy", r->nranks, (unsigned long long)r->size);
    if (r->size >= (1u << 20) && r->size % (1u << 20) == 0)
        fprintf(f, " (%llu MiB)", (unsigned long long)(r->size >> 20));
    fprintf(f, ", run %.0f ms\n", r->run_ms);
    if (!t)
        return;
    PSC_TABLE_HEADER(t, "rank", "gpu", "pid");
    for (int i = 0; i < r->nranks; i++) {
        psc_table_set(t, (unsigned)i + 1, 0, "%d", i);
        psc_table_set(t, (unsigned)i + 1, 1, "%d", r->gpu[i]);
        psc_table_set(t, (unsigned)i + 1, 2, "%d", r->pid[i]);
    }
    psc_table_render(t, f);
    psc_table_free(t);
    fprintf(f, "methods asked:\n");
    for (int m = 0; m < PSC_IPC_METHODS; m++) {
        const psc_ipc_method_t *x = &r->methods[m];
        const char *name = psc_ipc_method_name(x->method);
        char prefix[64];

        if (!x->asked)
            continue;
        snprintf(prefix, sizeof(prefix), "  %s: %s", name ? name : "unknown",
                 x->available ? "measured" : "not available here:");
        psc__wrapped(f, prefix, x->available ? "" : x->reason);
    }
    fprintf(f, "pairs \"A -> B\": the worker on GPU A imports the memory the worker on GPU B exported and issues\n"
               "every copy: write = A's memory -> B's, read = B's -> A's; ranks \"a -> b\" the same by worker\n");
}

/* The pair's first two cells: "A -> B" by GPU and by rank. */
static void psc__pair_cells(psc_table_t *t, unsigned row, const psc_ipc_pair_t *p)
{
    psc_table_set(t, row, 0, "%d -> %d", p->gpu_importer, p->gpu_exporter);
    psc_table_set(t, row, 1, "%d -> %d", p->importer, p->exporter);
}

static void psc__head(psc_table_t *t, const char *const *names, unsigned n)
{
    psc_table_set(t, 0, 0, "pair");
    psc_table_set(t, 0, 1, "ranks");
    for (unsigned c = 0; c < n; c++)
        psc_table_set(t, 0, c + 2, "%s", names[c]);
}

static void psc__bw_cell(psc_table_t *t, unsigned r, unsigned c, const psc_bw_result_t *x)
{
    if (x->status == PSC_RESULT_PASSED && x->nsamples)
        psc_table_set(t, r, c, "%.2f", x->stats.median);
    else if (x->status == PSC_RESULT_FAILED)
        psc_table_set(t, r, c, "FAIL");
    else
        psc_table_set(t, r, c, "-");
}

static void psc__bandwidth(FILE *f, const psc_ipc_pair_t *const *pairs, unsigned n)
{
    static const char *const head[] = {"copy", "between processes", "in one process", "ratio"};
    psc_table_t *t = psc_table_new(n * PSC_IPC_NBW + 1, 6);
    unsigned lo = 0, hi = 0, row = 1;

    if (!t)
        return;
    psc__head(t, head, 4);
    psc_table_left_columns(t, 3);
    for (unsigned i = 0; i < n; i++)
        for (int k = 0; k < PSC_IPC_NBW; k++) {
            const psc_bw_result_t *b = &pairs[i]->bw[k], *l = &pairs[i]->bw_local[k];
            double ratio;

            psc__pair_cells(t, row, pairs[i]);
            psc_table_set(t, row, 2, "%s", psc_ipc_bw_name(k));
            psc__bw_cell(t, row, 3, b);
            psc__bw_cell(t, row, 4, l);
            if (psc_ipc_bw_ratio(b, l, &ratio))
                psc_table_set(t, row, 5, "%.3f", ratio);
            else
                psc_table_set(t, row, 5, "-");
            if (b->status == PSC_RESULT_PASSED && b->nsamples) {
                lo = !lo || b->nsamples < lo ? b->nsamples : lo;
                hi = b->nsamples > hi ? b->nsamples : hi;
            }
            row++;
        }
    if (lo == hi)
        fprintf(f, "bandwidth [GB/s, 1 GB = 1e9 bytes; median of %u samples; ratio = between processes / in one "
                   "process]\n", lo);
    else
        fprintf(f, "bandwidth [GB/s, 1 GB = 1e9 bytes; median of %u-%u samples; ratio = between processes / in "
                   "one process]\n", lo, hi);
    psc_table_render(t, f);
    psc_table_free(t);
}

static void psc__latency(FILE *f, const psc_ipc_pair_t *const *pairs, unsigned n)
{
    static const char *const head[] = {"p50", "p99", "in one process p50", "ratio"};
    psc_table_t *t = psc_table_new(n + 1, 6);

    if (!t)
        return;
    psc__head(t, head, 4);
    psc_table_left_columns(t, 2);
    for (unsigned i = 0; i < n; i++) {
        const psc_ipc_pair_t *p = pairs[i];
        double ratio;

        psc__pair_cells(t, i + 1, p);
        psc_table_set(t, i + 1, 2, p->rtt_ns.n ? "%.0f" : "-", p->rtt_ns.p50);
        psc_table_set(t, i + 1, 3, p->rtt_ns.n ? "%.0f" : "-", p->rtt_ns.p99);
        psc_table_set(t, i + 1, 4, p->rtt_local_ns.n ? "%.0f" : "-", p->rtt_local_ns.p50);
        if (psc__rtt_ratio(p, &ratio))
            psc_table_set(t, i + 1, 5, "%.3f", ratio);
        else
            psc_table_set(t, i + 1, 5, "-");
    }
    fprintf(f, "round trip A -> B -> A, a flag in the imported memory [ns; ratio = p50 between / in one process]\n");
    psc_table_render(t, f);
    psc_table_free(t);
}

static void psc__costs(FILE *f, int method, const psc_ipc_pair_t *const *pairs, unsigned n)
{
    static const char *const head[] = {"export", "import", "map", "first touch", "touch", "release"};
    psc_table_t *t = psc_table_new(n + 1, 8);

    if (!t)
        return;
    psc__head(t, head, 6);
    psc_table_left_columns(t, 2);
    for (unsigned i = 0; i < n; i++) {
        const psc_ipc_pair_t *p = pairs[i];

        psc__pair_cells(t, i + 1, p);
        psc_table_set(t, i + 1, 2, "%.1f", p->export_us);
        psc_table_set(t, i + 1, 3, "%.1f", p->import_us);
        if (method == PSC_SHARE_LEGACY)
            psc_table_set(t, i + 1, 4, "-");
        else
            psc_table_set(t, i + 1, 4, "%.1f", p->map_us);
        psc_table_set(t, i + 1, 5, "%.1f", p->first_touch_us);
        psc_table_set(t, i + 1, 6, "%.1f", p->touch_us);
        psc_table_set(t, i + 1, 7, "%.1f", p->release_us);
    }
    fprintf(f, "costs [us; export by B's worker, the rest by A's; touch: a 4 KiB copy out of the import]\n");
    if (method == PSC_SHARE_LEGACY)
        fprintf(f, "[map: - as cuIpcOpenMemHandle maps while it imports: import holds both]\n");
    psc_table_render(t, f);
    psc_table_free(t);
}

static void psc__mapping(FILE *f, const psc_ipc_pair_t *const *pairs, unsigned n)
{
    int cols = 0;
    psc_table_t *t;

    for (unsigned i = 0; i < n; i++)
        if (pairs[i]->naccess > cols)
            cols = pairs[i]->naccess > PSC_MAX_GPUS ? PSC_MAX_GPUS : pairs[i]->naccess;
    if (!cols || !(t = psc_table_new(n + 1, (unsigned)cols + 2)))
        return;
    psc_table_set(t, 0, 0, "pair");
    psc_table_set(t, 0, 1, "ranks");
    psc_table_left_columns(t, 2);
    for (int g = 0; g < cols; g++)
        psc_table_set(t, 0, (unsigned)g + 2, "gpu%d", g);
    for (unsigned i = 0; i < n; i++) {
        psc__pair_cells(t, i + 1, pairs[i]);
        for (int g = 0; g < pairs[i]->naccess && g < cols; g++)
            psc_table_set(t, i + 1, (unsigned)g + 2, "%s", psc__access_text(pairs[i]->access[g]));
    }
    fprintf(f, "selective mapping: A's access to the import on each GPU it sees [rw, r, - none, n/a not asked]\n");
    psc_table_render(t, f);
    psc_table_free(t);
}

/* A line per pair that did not pass, and per failed copy whose reason the pair's line does not already give. */
static void psc__pair_notes(FILE *f, const psc_ipc_pair_t *const *pairs, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        const psc_ipc_pair_t *p = pairs[i];
        char prefix[160];

        if (p->status != PSC_RESULT_PASSED) {
            snprintf(prefix, sizeof(prefix), "pair %d -> %d (ranks %d -> %d): %s:", p->gpu_importer, p->gpu_exporter,
                     p->importer, p->exporter, psc_result_status_string(p->status));
            psc__wrapped(f, prefix, p->reason[0] ? p->reason : "no reason given");
        }
        for (int k = 0; k < 2 * PSC_IPC_NBW; k++) {
            const psc_bw_result_t *b = k < PSC_IPC_NBW ? &p->bw[k] : &p->bw_local[k - PSC_IPC_NBW];

            if (b->status != PSC_RESULT_FAILED || (p->status != PSC_RESULT_PASSED && !strcmp(b->reason, p->reason)))
                continue;
            snprintf(prefix, sizeof(prefix), "pair %d -> %d (ranks %d -> %d) %s %s: FAILED:", p->gpu_importer,
                     p->gpu_exporter, p->importer, p->exporter, psc_ipc_bw_name(k % PSC_IPC_NBW),
                     k < PSC_IPC_NBW ? "between processes" : "in one process");
            psc__wrapped(f, prefix, b->reason[0] ? b->reason : "no reason given");
        }
    }
}

void psc_render_ipc(FILE *f, const psc_ipc_report_t *r)
{
    const psc_ipc_pair_t **pairs;

    if (!r)
        return;
    psc__workers(f, r);
    pairs = calloc(r->npairs > 0 ? (size_t)r->npairs : 1, sizeof(*pairs));
    if (!pairs)
        return;
    for (int m = 0; m < PSC_IPC_METHODS; m++) {
        const psc_ipc_method_t *x = &r->methods[m];
        unsigned n = 0;

        if (!x->asked || !x->available)
            continue;
        for (int i = 0; i < r->npairs; i++)
            if (r->pairs[i].method == x->method)
                pairs[n++] = &r->pairs[i];
        fprintf(f, "\n%s: %s\n", psc_ipc_method_name(x->method) ? psc_ipc_method_name(x->method) : "unknown",
                psc__method_title(x->method));
        if (!n) {
            fprintf(f, "no pair was measured\n");
            continue;
        }
        psc__bandwidth(f, pairs, n);
        psc__latency(f, pairs, n);
        psc__costs(f, x->method, pairs, n);
        psc__mapping(f, pairs, n);
        psc__pair_notes(f, pairs, n);
    }
    free(pairs);
}

/* ---------------------------------------------------------------- JSON */

/*
 * One copy as the bandwidth JSON writes it, named by what it is here: the
 * copy, the data's direction between the two GPUs, and the importer as issuer.
 */
static json_t *psc__bw_json(const psc_ipc_pair_t *p, int k, const psc_bw_result_t *b)
{
    json_t *t = psc_json_bw_result(b);
    int from = psc__copy_writes(k) ? p->gpu_importer : p->gpu_exporter;
    int to = psc__copy_writes(k) ? p->gpu_exporter : p->gpu_importer;
    char dir[48], a[16], c[16], iss[16];
    int bad = 0;

    snprintf(a, sizeof(a), "gpu%d", from);
    snprintf(c, sizeof(c), "gpu%d", to);
    snprintf(iss, sizeof(iss), "gpu%d", p->gpu_importer);
    snprintf(dir, sizeof(dir), "%s -> %s", a, c);
    psc_json_set(t, "name", psc_json_str(psc_ipc_bw_name(k)), &bad);
    psc_json_set(t, "title", psc_json_str(psc__copy_titles[k]), &bad);
    psc_json_set(t, "direction", psc_json_str(dir), &bad);
    psc_json_set(t, "src", psc_json_str(a), &bad);
    psc_json_set(t, "dst", psc_json_str(c), &bad);
    psc_json_set(t, "issuer", psc_json_str(iss), &bad);
    psc_json_set(t, "engine", psc_json_str(k == PSC_IPC_SM_WRITE || k == PSC_IPC_SM_READ ? "sm" : "copy_engine"), &bad);
    return psc_json_done(t, bad);
}

static json_t *psc__ratio_json(int have, double ratio)
{
    return have ? json_real(ratio) : json_null();
}

static json_t *psc__pair_json(const psc_ipc_pair_t *p)
{
    json_t *o = json_object(), *bw = json_object(), *rtt = json_object(), *cost = json_object(),
           *access = json_array();
    const char *method = psc_ipc_method_name(p->method);
    double ratio = 0;
    int bad = 0, have;

    psc_json_set(o, "method", method ? psc_json_str(method) : json_null(), &bad);
    psc_json_set(o, "importer", json_integer(p->importer), &bad);
    psc_json_set(o, "exporter", json_integer(p->exporter), &bad);
    psc_json_set(o, "gpu_importer", json_integer(p->gpu_importer), &bad);
    psc_json_set(o, "gpu_exporter", json_integer(p->gpu_exporter), &bad);
    psc_json_set(o, "status", psc_json_str(psc_result_status_string(p->status)), &bad);
    psc_json_set(o, "reason", p->reason[0] ? psc_json_str(p->reason) : json_null(), &bad);
    for (int k = 0; k < PSC_IPC_NBW; k++) {
        json_t *c = json_object();

        have = psc_ipc_bw_ratio(&p->bw[k], &p->bw_local[k], &ratio);
        psc_json_set(c, "between_processes", psc__bw_json(p, k, &p->bw[k]), &bad);
        psc_json_set(c, "in_one_process", psc__bw_json(p, k, &p->bw_local[k]), &bad);
        psc_json_set(c, "ratio", psc__ratio_json(have, ratio), &bad);
        psc_json_set(bw, psc_ipc_bw_name(k), c, &bad);
    }
    psc_json_set(o, "bandwidth", bw, &bad);
    have = psc__rtt_ratio(p, &ratio);
    psc_json_set(rtt, "between_processes", p->rtt_ns.n ? psc_json_pctl(&p->rtt_ns) : json_null(), &bad);
    psc_json_set(rtt, "in_one_process", p->rtt_local_ns.n ? psc_json_pctl(&p->rtt_local_ns) : json_null(), &bad);
    psc_json_set(rtt, "ratio_p50", psc__ratio_json(have, ratio), &bad);
    psc_json_set(o, "round_trip_ns", rtt, &bad);
    psc_json_set(cost, "export", json_real(p->export_us), &bad);
    psc_json_set(cost, "import", json_real(p->import_us), &bad);
    psc_json_set(cost, "map", json_real(p->map_us), &bad);
    psc_json_set(cost, "first_touch", json_real(p->first_touch_us), &bad);
    psc_json_set(cost, "touch", json_real(p->touch_us), &bad);
    psc_json_set(cost, "release", json_real(p->release_us), &bad);
    psc_json_set(o, "costs_us", cost, &bad);
    for (int g = 0; g < p->naccess && g < PSC_MAX_GPUS; g++)
        psc_json_push(access,
                  json_pack("{s:i,s:o}", "gpu", g, "access",
                            psc_json_str(p->access[g] == PSC_ACCESS_NONE            ? "none"
                                         : p->access[g] == PSC_IPC_ACCESS_NOT_ASKED ? "not_asked"
                                                                                    : psc__access_text(p->access[g]))),
                  &bad);
    psc_json_set(o, "access", access, &bad);
    return psc_json_done(o, bad);
}

json_t *psc_json_ipc_report(const psc_ipc_report_t *r)
{
    json_t *o = json_object(), *workers = json_array(), *methods = json_array(), *pairs = json_array();
    int bad = 0;

    psc_json_set(o, "size_bytes", json_integer((json_int_t)r->size), &bad);
    psc_json_set(o, "run_ms", json_real(r->run_ms), &bad);
    psc_json_set(o, "pair_meaning", psc_json_str("importer issues every copy; write: importer -> exporter memory, read: "
                                              "exporter -> importer memory; ratio: between processes / in one process"),
             &bad);
    for (int i = 0; i < r->nranks && i < PSC_IPC_MAX_RANKS; i++)
        psc_json_push(workers, json_pack("{s:i,s:i,s:i}", "rank", i, "gpu", r->gpu[i], "pid", r->pid[i]), &bad);
    psc_json_set(o, "workers", workers, &bad);
    psc_json_set(o, "workers_started_by", psc_json_str(r->joined ? "launcher" : "p2pscope"), &bad);
    for (int m = 0; m < PSC_IPC_METHODS; m++) {
        const psc_ipc_method_t *x = &r->methods[m];
        const char *name = psc_ipc_method_name(x->method);

        psc_json_push(methods,
                  json_pack("{s:o,s:b,s:b,s:o}", "name", name ? psc_json_str(name) : json_null(), "asked", x->asked,
                            "available", x->available, "reason", x->reason[0] ? psc_json_str(x->reason) : json_null()),
                  &bad);
    }
    psc_json_set(o, "methods", methods, &bad);
    for (int i = 0; i < r->npairs; i++)
        psc_json_push(pairs, psc__pair_json(&r->pairs[i]), &bad);
    psc_json_set(o, "pairs", pairs, &bad);
    psc_json_set(o, "failed_pairs", json_integer(psc_ipc_report_nfailed(r)), &bad);
    return psc_json_done(o, bad);
}

psc_status_t psc_json_run_add_ipc(json_t *run, const psc_ipc_report_t *r, const psc_ipc_opts_t *opts,
                                  const int *devices, int ndev)
{
    json_t *p = json_object(), *devs = json_array(), *methods = json_array();
    int bad = 0;

    for (int i = 0; i < ndev; i++)
        psc_json_push(devs, json_integer(devices[i]), &bad);
    for (int kind = PSC_SHARE_LEGACY; kind <= PSC_SHARE_VMM_FABRIC; kind++)
        if (!opts->methods || (opts->methods & (1u << kind)))
            psc_json_push(methods, psc_json_str(psc_ipc_method_name(kind)), &bad);
    psc_json_set(p, "devices", devs, &bad);
    psc_json_set(p, "methods", methods, &bad);
    psc_json_set(p, "size_bytes", json_integer((json_int_t)(opts->measure.size ? opts->measure.size : PSC_IPC_DEFAULT_SIZE)),
             &bad);
    psc_json_set(p, "iterations", opts->measure.iterations ? json_integer(opts->measure.iterations) : psc_json_str("auto"),
             &bad);
    psc_json_set(p, "warmup", json_integer(opts->measure.warmup), &bad);
    psc_json_set(p, "min_samples", json_integer(opts->measure.samples), &bad);
    psc_json_set(p, "max_samples", json_integer(opts->measure.max_samples), &bad);
    psc_json_set(p, "round_trips", json_integer(opts->round_trips), &bad);
    psc_json_set(p, "in_one_process", json_boolean(!opts->no_local), &bad);
    psc_json_set(p, "timeout_ms", json_real(opts->timeout_ms), &bad);
    if (bad) {
        json_decref(p);
        p = NULL;
    }
    if (psc_json_run_set(run, "parameters", p) != PSC_OK)
        bad = 1;
    if (psc_json_run_set(run, "ipc", psc_json_ipc_report(r)) != PSC_OK)
        bad = 1;
    return bad ? PSC_ERR_NO_MEMORY : PSC_OK;
}
