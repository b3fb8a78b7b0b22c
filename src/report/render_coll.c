#include "render_coll.h"
#include "render_coll_load.h"
#include "render_coll_way.h"
#include "render_doctor.h"

#include <inttypes.h>
#include <math.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "lib/p2pscope_private.h"
#include "p2pscope/version.h"
#include "render_lat.h"
#include "text.h"

/* Width of nccl-tests' figures: time (us) 7, bandwidths (GB/s) 6 (util.cu:497-499). */
#define PSC__TIME_W 7
#define PSC__BW_W 6

void psc_coll_float_str(double value, int width, char *out)
{
    size_t n = (size_t)width + 1;

    /* util.cu:487-492 at 2.19.6: the first precision whose text fits wins (snprintf says what it would write) */
    if (snprintf(out, n, "%*.2f", width, value) <= width)
        return;
    if (snprintf(out, n, "%*.1f", width, value) <= width)
        return;
    if (snprintf(out, n, "%*.0f", width, value) <= width)
        return;
    snprintf(out, n, width >= 7 ? "%*.1e" : "%*.0e", width, value);
}

static const char *psc__or(const char *s, const char *fallback)
{
    return s ? s : fallback;
}

static const char *psc__op_name(int op)
{
    return op == -1 ? "none" : psc__or(psc_redop_name(op), "?");
}

/* nGpus of the "# nThread" line: ranks per process (one thread per process). */
static int psc__gpus_per_proc(const psc_coll_report_t *r)
{
    return r->nprocs > 0 ? r->nranks / r->nprocs : r->nranks;
}

static void psc__preamble(FILE *f, const psc_coll_report_t *r)
{
    /* nccl-tests' line as it is: p2pscope names itself after nccl-tests' last line, where parsers look no more */
    fprintf(f, "# nccl-tests version %s nccl-headers=%d nccl-library=%d\n", PSC_COLL_NCCL_TESTS_VERSION,
            r->nccl_version, r->nccl_version);
    fprintf(f, "# Collective test starting: %s\n", psc__or(psc_coll_perf_name(r->coll), "?"));
    fprintf(f,
            "# nThread %d nGpus %d minBytes %lld maxBytes %lld step: %lld(%s) warmup iters: %d iters: %d agg iters: %d "
            "validation: %d graph: %d unalign: %d\n",
            1, psc__gpus_per_proc(r), (long long)r->min_bytes, (long long)r->max_bytes,
            r->step_factor > 1 ? (long long)r->step_factor : (long long)r->step_bytes,
            r->step_factor > 1 ? "factor" : "bytes", r->warmup_iters, r->iters, r->agg_iters, r->check,
            r->graph_launches, r->unalign);
    /* util.cu:629-633; the trailing spaces are nccl-tests' own */
    if (r->blocking == 1)
        fprintf(f, "# Blocking Enabled: wait and barrier after each inner iteration (-m) \n");
    else if (r->blocking == 2)
        fprintf(f, "# Blocking Enabled: wait after each inner iteration (-m), no barrier \n");
    else if (r->blocking == 3)
        fprintf(f, "# Blocking Enabled: wait and barrier after each outer iteration (-n); time excludes barrier \n");
    if (r->per_iter) {
        fprintf(f, "# Per-Iteration Report: CUDA event timing; i_* uses max over process rows");
        if (r->per_iter_skip)
            fprintf(f, "; summary skips first %d iterations", r->per_iter_skip);
        fprintf(f, " \n");
    }
    if (r->parallel_init)
        fprintf(f, "# Parallel Init Enabled: threads call into NcclInitRank concurrently \n");
    fprintf(f, "#\n# Using devices\n");
}

/*
 * One "#  Rank" line; the host cut at its first '.', the PCI address as
 * [domain:bus:device]; host and name escaped (a control character would
 * break the line), which leaves any ordinary name as it is.
 */
static void psc__rank_line(FILE *f, const psc_coll_rank_t *k)
{
    char host[sizeof(k->host) + 1], bus[sizeof(k->pci_bus_id) + 1], name[sizeof(k->name) + 1];
    char host_esc[4 * sizeof(host)], name_esc[4 * sizeof(name)];
    unsigned dom = 0, b = 0, dev = 0, fn = 0;

    snprintf(host, sizeof(host), "%.*s", (int)strnlen(k->host, sizeof(k->host)), k->host);
    host[strcspn(host, ".")] = '\0';
    psc_text_escape(host, NULL, host_esc, sizeof(host_esc));
    snprintf(bus, sizeof(bus), "%.*s", (int)strnlen(k->pci_bus_id, sizeof(k->pci_bus_id)), k->pci_bus_id);
    if (sscanf(bus, "%x:%x:%x.%x", &dom, &b, &dev, &fn) < 3)
        dom = b = dev = 0;
    snprintf(name, sizeof(name), "%.*s", (int)strnlen(k->name, sizeof(k->name)), k->name);
    psc_text_escape(name, NULL, name_esc, sizeof(name_esc));
    fprintf(f, "#  Rank %2d Group %2d Pid %6d on %10s device %2d [%04x:%02x:%02x] %s\n", k->rank, 0, k->pid, host_esc,
            k->device, dom, b, dev, name_esc);
}

/* The row's implementation: 0 (a report without the field) is NCCL's. */
static int psc__impl(const psc_coll_row_t *row)
{
    return row->impl == PSC_COLL_IMPL_P2PSCOPE ? PSC_COLL_IMPL_P2PSCOPE : PSC_COLL_IMPL_NCCL;
}

/* Whether some row is impl's. */
static int psc__has_impl(const psc_coll_report_t *r, int impl)
{
    for (int i = 0; i < r->nrows; i++)
        if (psc__impl(&r->rows[i]) == impl)
            return 1;
    return 0;
}

/* Whether any row is p2pscope's own. */
static int psc__has_own(const psc_coll_report_t *r)
{
    return psc__has_impl(r, PSC_COLL_IMPL_P2PSCOPE);
}

/*
 * Whose rows nccl-tests' table holds: NCCL's, or p2pscope's where only they
 * ran. The other's go to p2pscope's own table after nccl-tests' last line,
 * so a parser of nccl-tests reads one row per size, 13 fields each.
 */
static int psc__table_impl(const psc_coll_report_t *r)
{
    return psc__has_impl(r, PSC_COLL_IMPL_NCCL) || !psc__has_own(r) ? PSC_COLL_IMPL_NCCL : PSC_COLL_IMPL_P2PSCOPE;
}

/* Halves with a wrong element among impl's rows. */
static int psc__failed(const psc_coll_report_t *r, int impl)
{
    int n = 0;

    for (int i = 0; i < r->nrows; i++)
        for (int k = 0; k < 2; k++)
            n += psc__impl(&r->rows[i]) == impl && r->rows[i].r[k].ran && r->rows[i].r[k].wrong > 0;
    return n;
}

/* util.cu:744-760: -C names the time "cputime", -S adds "timestamp" (its format under it), -I four columns a half. */
static void psc__table_header(FILE *f, const psc_coll_report_t *r, const psc_coll_render_opts_t *o)
{
    const char *tm = o->cputime ? "cputime" : "time", *ts = o->timestamps ? "timestamp" : "";
    const char *tsfmt = o->timestamps ? "%Y-%m-%d %H:%M:%S" : "";
    int pad = o->timestamps ? 19 : 0;

    fprintf(f, "#\n");
    if (r->per_iter) {
        fprintf(f, "# %10s  %12s  %8s  %6s  %6s              out-of-place (+ per-iteration)                                "
                   "in-place (+ per-iteration)\n", "", "", "", "", "");
        fprintf(f, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %7s  %7s  %7s  %7s  %6s  %6s  %6s  %7s  %7s  "
                   "%7s  %7s %*s\n", "size", "count", "type", "redop", "root", tm, "algbw", "busbw", "#wrong", "i_min",
                "i_max", "i_p99", "i_cv%", tm, "algbw", "busbw", "#wrong", "i_min", "i_max", "i_p99", "i_cv%", pad, ts);
        fprintf(f, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %7s  %7s  %7s  %7s  %6s  %6s  %6s  %7s  %7s  "
                   "%7s  %7s %*s\n", "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)",
                "(us)", "(%)", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(us)", "(us)", "(%)", pad, tsfmt);
        return;
    }
    fprintf(f, "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n", "", "",
            "", "", "");
    fprintf(f, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s\n", "size", "count", "type",
            "redop", "root", tm, "algbw", "busbw", "#wrong", tm, "algbw", "busbw", "#wrong", pad, ts);
    fprintf(f, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %*s\n", "(B)", "(elements)", "", "",
            "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "", pad, tsfmt);
}

/*
 * One half of a row (util.cu:497-508). A half that did not run has no
 * nccl-tests counterpart (it always runs both): its columns stay blank at
 * their width, and a blank in-place half prints nothing (no trailing spaces).
 */
static void psc__half(FILE *f, const psc_coll_row_t *row, const psc_coll_row_ext_t *ext, int k)
{
    char t[PSC__TIME_W + 1], a[PSC__BW_W + 1], b[PSC__BW_W + 1];

    if (!row->r[k].ran) {
        if (k == 0 && row->r[1].ran)
            fprintf(f, "  %7s  %6s  %6s  %6s", "", "", "", "");
        return;
    }
    psc_coll_float_str(ext ? ext->r[k].cpu_time_us : row->r[k].time_us, PSC__TIME_W, t);
    psc_coll_float_str(row->r[k].algbw_gbs, PSC__BW_W, a);
    psc_coll_float_str(row->r[k].busbw_gbs, PSC__BW_W, b);
    if (row->r[k].wrong >= 0)
        fprintf(f, "  %7s  %6s  %6s  %6g", t, a, b, (double)row->r[k].wrong);
    else
        fprintf(f, "  %7s  %6s  %6s    N/A", t, a, b);
}

/* -I's columns of a half (util.cu's writePerIterReport): min, max, p99, cv%. */
static void psc__iter_half(FILE *f, const psc_coll_iter_t *it)
{
    char v[4][PSC__TIME_W + 1];

    psc_coll_float_str(it->min_us, PSC__TIME_W, v[0]);
    psc_coll_float_str(it->max_us, PSC__TIME_W, v[1]);
    psc_coll_float_str(it->p99_us, PSC__TIME_W, v[2]);
    psc_coll_float_str(it->cv_pct, PSC__TIME_W, v[3]);
    fprintf(f, "  %7s  %7s  %7s  %7s", v[0], v[1], v[2], v[3]);
}

/* -S: the row's time (util.cu's writeTimestamp), local time as nccl-tests prints it. */
static void psc__stamp(FILE *f, long long when)
{
    char buf[64] = "";
    time_t t = (time_t)when;
    struct tm tmv;

    if (localtime_r(&t, &tmv))
        strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tmv);
    fprintf(f, "%21s", buf);
}

/* A row, nccl-tests' order: each half's figures, -I's after each, -S's stamp after the in-place half (after its -I). */
static void psc__row(FILE *f, const psc_coll_report_t *r, int i, const psc_coll_render_opts_t *o)
{
    const psc_coll_row_t *row = &r->rows[i];
    const psc_coll_row_ext_t *ext = r->ext ? &r->ext[i] : NULL;
    char root[16];

    snprintf(root, sizeof(root), "%6i", row->root);
    fprintf(f, "%12lld  %12lld  %8s  %6s  %6s", (long long)row->bytes, (long long)row->count,
            psc__or(psc_dtype_name(row->dtype), "?"), psc__op_name(row->op), root);
    for (int k = 0; k < 2; k++) {
        psc__half(f, row, o->cputime ? ext : NULL, k);
        if (k == 1 && o->timestamps && ext && !r->per_iter)
            psc__stamp(f, ext->end_time);
        if (r->per_iter && ext && row->r[k].ran && ext->r[k].iter.n)
            psc__iter_half(f, &ext->r[k].iter);
    }
    if (r->per_iter && o->timestamps && ext)
        psc__stamp(f, ext->end_time);
    fputc('\n', f);
}

/* util.cu's getMemString: B, KB, MB, GB (powers of 1024), 2 decimals below 10, 1 below 100, else none. */
static void psc_coll_mem_str(long long bytes, char *out, size_t len)
{
    double v = (double)bytes;
    const char *unit = " B";

    if (fabs(v) >= 1073741824.0)
        v /= 1073741824.0, unit = " GB";
    else if (fabs(v) >= 1048576.0)
        v /= 1048576.0, unit = " MB";
    else if (fabs(v) >= 1024.0)
        v /= 1024.0, unit = " KB";
    snprintf(out, len, "%.*f%s", fabs(v) < 10.0 ? 2 : fabs(v) < 100.0 ? 1 : 0, v, unit);
}

/* -M: util.cu's writeMemInfo, the communicators', the buffers' and the rows' memory and their total. */
static void psc__memory_line(FILE *f, const psc_coll_report_t *r)
{
    char m[4][32];

    if (!r->mem_known) {
        fprintf(f, "# %-20s : not measured (the driver lacks cuMemGetInfo)\n", "GPU memory usage");
        return;
    }
    psc_coll_mem_str(r->mem_init_bytes, m[0], sizeof(m[0]));
    psc_coll_mem_str(r->mem_user_bytes, m[1], sizeof(m[1]));
    psc_coll_mem_str(r->mem_coll_bytes, m[2], sizeof(m[2]));
    psc_coll_mem_str(r->mem_init_bytes + r->mem_user_bytes + r->mem_coll_bytes, m[3], sizeof(m[3]));
    fprintf(f, "# %-20s : Initialization %s | User-Allocated %s | Collective %s | Total  %s\n", "GPU memory usage", m[0],
            m[1], m[2], m[3]);
}

/* util.cu:777-780, common.cu's finalizeFooter and writeErrors: nccl-tests' last lines. */
static void psc__footer(FILE *f, const psc_coll_report_t *r, const psc_coll_render_opts_t *o, int failed)
{
    const int bw_short = o->min_bw_set && psc_coll_busbw_short(r->avg_busbw_gbs, o->min_bw_gbs);
    const char *bw_verdict = !o->min_bw_set ? "" : bw_short ? "FAILED" : "OK";

    fprintf(f, "# %-20s : %d %s\n", "Out of bounds values", failed, failed ? "FAILED" : "OK");
    fprintf(f, "# %-20s : %g %s\n", "Avg bus bandwidth", r->avg_busbw_gbs, bw_verdict);
    fprintf(f, "#\n# Collective test concluded: %s\n", psc__or(psc_coll_perf_name(r->coll), "?"));
    if (o->memory)
        psc__memory_line(f, r);
    fprintf(f, "#\n");
    if (o->last_error && o->last_error[0])
        psc_report_printf(f, "# error: %s\n", o->last_error); /* NCCL's text: escaped, newlines kept as NCCL wrote them */
    else
        fputc('\n', f);
}

/* ---------------------------------------------------------------- p2pscope's tables, after nccl-tests' text */

/* NCCL's row of the same size, type, op and root as own's, or NULL. */
static const psc_coll_row_t *psc__nccl_twin(const psc_coll_report_t *r, const psc_coll_row_t *own)
{
    for (int i = 0; i < r->nrows; i++) {
        const psc_coll_row_t *n = &r->rows[i];

        if (psc__impl(n) == PSC_COLL_IMPL_NCCL && n->bytes == own->bytes && n->dtype == own->dtype &&
            n->op == own->op && n->root == own->root)
            return n;
    }
    return NULL;
}

/*
 * One half of p2pscope's row: its time, bus bandwidth, wrong elements, NCCL's time over its own, the way it ran;
 * "-" for nothing.
 */
static void psc__own_half(FILE *f, const psc_coll_report_t *r, int i, const psc_coll_row_t *nccl, int k)
{
    const psc_coll_row_t *own = &r->rows[i];
    char t[PSC__TIME_W + 1] = "-", b[PSC__BW_W + 1] = "-", w[24] = "-", x[16] = "-";

    if (own->r[k].ran) {
        psc_coll_float_str(own->r[k].time_us, PSC__TIME_W, t);
        psc_coll_float_str(own->r[k].busbw_gbs, PSC__BW_W, b);
        if (own->r[k].wrong >= 0)
            snprintf(w, sizeof(w), "%lld", own->r[k].wrong);
        else
            snprintf(w, sizeof(w), "N/A");
        if (nccl && nccl->r[k].ran && own->r[k].time_us > 0)
            snprintf(x, sizeof(x), "%.2f", nccl->r[k].time_us / own->r[k].time_us);
    }
    fprintf(f, "  %11s  %11s  %11s  %11s  %12s", t, b, w, x, psc_coll_way_word(r, i, k));
}

/*
 * p2pscope's own collective beside NCCL's: every line a comment, and header
 * words of its own, so nothing here reads as a row or a header of nccl-tests'.
 */
static void psc__own_table(FILE *f, const psc_coll_report_t *r)
{
    const int failed = psc__failed(r, PSC_COLL_IMPL_P2PSCOPE);
    const char *what = psc_coll_own_what(r, 0);

    fprintf(f, "# p2pscope's %s (%s), timed and checked as NCCL's rows above\n", what, psc_coll_own_what(r, 1));
    fprintf(f, "#   oop_: out of place, ip_: in place; us: time per operation; busbw: GB/s; wrong: wrong elements; "
               "vs_nccl: NCCL's time / p2pscope's (above 1: p2pscope faster); way: its kernels (one-shot, two-shot), "
               "its copy-engines, or nccl\n");
    fprintf(f, "# %10s  %8s  %6s  %6s  %11s  %11s  %11s  %11s  %12s  %11s  %11s  %11s  %11s  %12s\n", "bytes", "type",
            "redop", "root", "oop_us", "oop_busbw", "oop_wrong", "oop_vs_nccl", "oop_way", "ip_us", "ip_busbw",
            "ip_wrong", "ip_vs_nccl", "ip_way");
    for (int i = 0; i < r->nrows; i++) {
        const psc_coll_row_t *own = &r->rows[i], *nccl;

        if (psc__impl(own) != PSC_COLL_IMPL_P2PSCOPE)
            continue;
        nccl = psc__nccl_twin(r, own);
        fprintf(f, "# %10lld  %8s  %6s  %6i", (long long)own->bytes, psc__or(psc_dtype_name(own->dtype), "?"),
                psc__op_name(own->op), own->root);
        psc__own_half(f, r, i, nccl, 0);
        psc__own_half(f, r, i, nccl, 1);
        fputc('\n', f);
    }
    fprintf(f, "# p2pscope's %s: avg busbw %g GB/s; halves with wrong elements %d %s\n", what, r->own_avg_busbw_gbs,
            failed, failed ? "FAILED" : "OK");
}

static int psc__has_iter_times(const psc_coll_report_t *r)
{
    for (int i = 0; i < r->nrows; i++)
        for (int k = 0; k < 2; k++)
            if (r->rows[i].r[k].ran && r->rows[i].r[k].iter_us.n > 0)
                return 1;
    return 0;
}

/* p50 p99 max of the operations timed alone; "-" where there is nothing. */
static void psc__each_half(FILE *f, const psc_coll_row_t *row, int k)
{
    char v[3][PSC__TIME_W + 1];
    const psc_pctl_t *p = &row->r[k].iter_us;

    for (int j = 0; j < 3; j++)
        snprintf(v[j], sizeof(v[j]), "-");
    if (row->r[k].ran && p->n > 0) {
        psc_coll_float_str(p->p50, PSC__TIME_W, v[0]);
        psc_coll_float_str(p->p99, PSC__TIME_W, v[1]);
        psc_coll_float_str(p->max, PSC__TIME_W, v[2]);
    }
    fprintf(f, "  %7s  %7s  %7s", v[0], v[1], v[2]);
}

/* --per-op: each operation timed alone, every row's (both implementations), as comments with their own words. */
static void psc__each_table(FILE *f, const psc_coll_report_t *r)
{
    fprintf(f, "# p2pscope coll: each timed operation alone (CUDA events, an eager loop apart from the table's), us; "
               "- where not measured\n");
    fprintf(f, "#   oop_: out of place, ip_: in place; p50 p99 max over the operations\n");
    fprintf(f, "# %10s  %8s  %6s  %6s  %8s  %7s  %7s  %7s  %7s  %7s  %7s\n", "bytes", "type", "redop", "root", "impl",
            "oop_p50", "oop_p99", "oop_max", "ip_p50", "ip_p99", "ip_max");
    for (int i = 0; i < r->nrows; i++) {
        const psc_coll_row_t *row = &r->rows[i];

        fprintf(f, "# %10lld  %8s  %6s  %6i  %8s", (long long)row->bytes, psc__or(psc_dtype_name(row->dtype), "?"),
                psc__op_name(row->op), row->root, psc_coll_impl_name(psc__impl(row)));
        psc__each_half(f, row, 0);
        psc__each_half(f, row, 1);
        fputc('\n', f);
    }
}

/* After nccl-tests' last line: p2pscope's own collective beside NCCL's, why it did not run, each operation's time. */
static void psc__p2pscope_part(FILE *f, const psc_coll_report_t *r)
{
    int own = psc__has_own(r) && psc__table_impl(r) == PSC_COLL_IMPL_NCCL, each = psc__has_iter_times(r);
    int ways = psc__has_own(r) && (r->ways || r->own_tuned || r->own_tune_note[0]);

    if (!own && !ways && !each && !r->own_not_run[0] && !r->loads)
        return;
    fprintf(f, "# p2pscope %s coll\n", PSC_VERSION_STRING);
    if (r->own_not_run[0])
        psc_report_printf(f, "# p2pscope's %s not run: %.*s\n",
                          psc_coll_own_what(r, 0),
                          (int)strnlen(r->own_not_run, sizeof(r->own_not_run)), r->own_not_run);
    if (ways) /* where p2pscope's rows fill nccl-tests' table, the ways they ran in a table of their own */
        psc_render_coll_ways(f, r, !own && r->ways);
    if (own)
        psc__own_table(f, r);
    if (each)
        psc__each_table(f, r);
    psc_render_coll_load(f, r);
}

int psc_render_coll_table(const psc_coll_report_t *r, int *failed)
{
    psc_coll_report_t x = *r;
    int impl;

    if (!x.rows || x.nrows < 0)
        x.nrows = 0;
    impl = psc__table_impl(&x);
    *failed = psc__has_own(&x) && impl == PSC_COLL_IMPL_NCCL ? psc__failed(&x, impl) : x.failed_rows;
    return impl;
}

void psc_render_coll(FILE *f, const psc_coll_report_t *r, const psc_coll_render_opts_t *o)
{
    static const psc_coll_render_opts_t defaults;
    psc_coll_report_t x;
    int impl, failed;
    unsigned parts;

    if (!f || !r)
        return;
    o = o ? o : &defaults;
    x = *r; /* a count without its array is taken as none */
    if (!x.ranks)
        x.nranks = 0;
    if (!x.rows || x.nrows < 0)
        x.nrows = 0;
    parts = o->parts ? o->parts : PSC_COLL_PART_HEAD | PSC_COLL_PART_ROWS | PSC_COLL_PART_FOOT;
    impl = psc__table_impl(&x);
    if (parts & PSC_COLL_PART_HEAD) {
        fprintf(f, "%.*s", (int)strnlen(r->notes, sizeof(r->notes)), r->notes); /* nccl-tests prints them first */
        if (o->json_out)
            psc_report_printf(f, "# Writing JSON output to %s\n", o->json_out);
        psc__preamble(f, r);
        for (int i = 0; i < x.nranks; i++)
            psc__rank_line(f, &x.ranks[i]);
        psc__table_header(f, &x, o);
    }
    for (int i = 0; (parts & PSC_COLL_PART_ROWS) && i < x.nrows; i++)
        if (psc__impl(&x.rows[i]) == impl)
            psc__row(f, &x, i, o);
    if (!(parts & PSC_COLL_PART_FOOT))
        return;
    /* one implementation: the report's count as it is; both: the table's own */
    psc_render_coll_table(&x, &failed);
    psc__footer(f, &x, o, failed);
    if (!o->no_extras)
        psc__p2pscope_part(f, &x);
}

/* ---------------------------------------------------------------- JSON */


/* "2.28.7" from 22807 (both of NCCL's forms); null where no version was read. */
static json_t *psc__nccl_version_str(int code)
{
    char s[32];

    return code > 0 ? psc_json_str(psc_nccl_version_string(code, s, sizeof(s))) : json_null();
}

/* -I's figures of a half (us), its iterations' times among them. */
static json_t *psc__iter_json(const psc_coll_iter_t *it)
{
    json_t *o = json_object(), *t = json_array();
    int bad = 0;

    for (int i = 0; it->times_us && i < it->n; i++)
        psc_json_push(t, psc_json_real_or_null(it->times_us[i]), &bad);
    psc_json_set(o, "skipped", json_integer(it->skipped), &bad);
    psc_json_set(o, "min", psc_json_real_or_null(it->min_us), &bad);
    psc_json_set(o, "max", psc_json_real_or_null(it->max_us), &bad);
    psc_json_set(o, "mean", psc_json_real_or_null(it->avg_us), &bad);
    psc_json_set(o, "p50", psc_json_real_or_null(it->p50_us), &bad);
    psc_json_set(o, "p95", psc_json_real_or_null(it->p95_us), &bad);
    psc_json_set(o, "p99", psc_json_real_or_null(it->p99_us), &bad);
    psc_json_set(o, "stdev", psc_json_real_or_null(it->stdev_us), &bad);
    psc_json_set(o, "cv_pct", psc_json_real_or_null(it->cv_pct), &bad);
    psc_json_set(o, "times", t, &bad);
    return psc_json_done(o, bad);
}

static json_t *psc__half_json(const psc_coll_row_t *row, const psc_coll_row_ext_t *ext, int k)
{
    json_t *o = json_object();
    int ran = row->r[k].ran != 0, bad = 0;

    psc_json_set(o, "ran", json_boolean(ran), &bad);
    psc_json_set(o, "time_us", ran ? psc_json_real_or_null(row->r[k].time_us) : json_null(), &bad);
    psc_json_set(o, "algbw_gbs", ran ? psc_json_real_or_null(row->r[k].algbw_gbs) : json_null(), &bad);
    psc_json_set(o, "busbw_gbs", ran ? psc_json_real_or_null(row->r[k].busbw_gbs) : json_null(), &bad);
    psc_json_set(o, "checked", json_boolean(ran && row->r[k].wrong >= 0), &bad);
    psc_json_set(o, "wrong", ran && row->r[k].wrong >= 0 ? json_integer(row->r[k].wrong) : json_null(), &bad);
    psc_json_set(o, "timed_ops_checked", json_integer(ran ? row->r[k].timed_checked : 0), &bad);
    psc_json_set(o, "per_operation_us", ran && row->r[k].iter_us.n ? psc_json_pctl(&row->r[k].iter_us) : json_null(),
                 &bad);
    psc_json_set(o, "cpu_time_us", ran && ext ? psc_json_real_or_null(ext->r[k].cpu_time_us) : json_null(), &bad);
    psc_json_set(o, "per_iteration_us", ran && ext && ext->r[k].iter.n ? psc__iter_json(&ext->r[k].iter) : json_null(),
                 &bad);
    return psc_json_done(o, bad);
}

static json_t *psc__row_json(const psc_coll_row_t *row, const psc_coll_row_ext_t *ext)
{
    json_t *o = json_object();
    const char *type = psc_dtype_name(row->dtype), *op = row->op == -1 ? "none" : psc_redop_name(row->op);
    int bad = 0;

    psc_json_set(o, "size_bytes", json_integer((json_int_t)row->bytes), &bad);
    psc_json_set(o, "count", json_integer((json_int_t)row->count), &bad);
    psc_json_set(o, "type", type ? psc_json_str(type) : json_null(), &bad);
    psc_json_set(o, "type_bytes", json_integer((json_int_t)psc_dtype_size(row->dtype)), &bad);
    psc_json_set(o, "redop", op ? psc_json_str(op) : json_null(), &bad);
    psc_json_set(o, "root", json_integer(row->root), &bad);
    psc_json_set(o, "impl", psc_json_str(psc_coll_impl_name(psc__impl(row))), &bad);
    psc_json_set(o, "out_of_place", psc__half_json(row, ext, 0), &bad);
    psc_json_set(o, "in_place", psc__half_json(row, ext, 1), &bad);
    psc_json_set(o, "end_time", ext ? json_integer(ext->end_time) : json_null(), &bad);
    return psc_json_done(o, bad);
}

static json_t *psc__rank_json(const psc_coll_rank_t *k)
{
    char host[sizeof(k->host) + 1], bus[sizeof(k->pci_bus_id) + 1], name[sizeof(k->name) + 1];

    snprintf(host, sizeof(host), "%.*s", (int)strnlen(k->host, sizeof(k->host)), k->host);
    snprintf(bus, sizeof(bus), "%.*s", (int)strnlen(k->pci_bus_id, sizeof(k->pci_bus_id)), k->pci_bus_id);
    snprintf(name, sizeof(name), "%.*s", (int)strnlen(k->name, sizeof(k->name)), k->name);
    return json_pack("{s:i,s:i,s:o,s:i,s:o,s:o}", "rank", k->rank, "pid", k->pid, "host",
                     psc_json_identifying() ? psc_json_str(host) : json_null(), "device",
                     k->device, "pci_bus_id", psc_json_str(bus), "name", psc_json_str(name));
}

/* The run's options as the report holds them, shared by the report and run's "parameters". */
static void psc__options_json(json_t *o, const psc_coll_report_t *r, int *bad)
{
    const char *coll = psc_coll_name(r->coll), *prog = psc_coll_perf_name(r->coll);

    psc_json_set(o, "collective", coll ? psc_json_str(coll) : json_null(), bad);
    psc_json_set(o, "program", prog ? psc_json_str(prog) : json_null(), bad);
    psc_json_set(o, "nranks", json_integer(r->nranks), bad);
    psc_json_set(o, "nprocs", json_integer(r->nprocs), bad);
    psc_json_set(o, "gpus_per_process", json_integer(psc__gpus_per_proc(r)), bad);
    psc_json_set(o, "min_bytes", json_integer((json_int_t)r->min_bytes), bad);
    psc_json_set(o, "max_bytes", json_integer((json_int_t)r->max_bytes), bad);
    psc_json_set(o, "step_factor", json_integer((json_int_t)r->step_factor), bad);
    psc_json_set(o, "step_bytes", json_integer((json_int_t)r->step_bytes), bad);
    psc_json_set(o, "warmup_iters", json_integer(r->warmup_iters), bad);
    psc_json_set(o, "iters", json_integer(r->iters), bad);
    psc_json_set(o, "agg_iters", json_integer(r->agg_iters), bad);
    psc_json_set(o, "check", json_integer(r->check), bad);
    psc_json_set(o, "graph_launches", json_integer(r->graph_launches), bad);
    psc_json_set(o, "blocking", json_integer(r->blocking), bad);
    psc_json_set(o, "time_of", psc_json_str(r->time_of == PSC_COLL_TIME_RANK0 ? "rank0"
                                            : r->time_of == PSC_COLL_TIME_MIN ? "min"
                                            : r->time_of == PSC_COLL_TIME_MAX ? "max" : "mean"), bad);
    psc_json_set(o, "timeout_s", psc_json_real_or_null(r->timeout_s), bad);
    psc_json_set(o, "run_cycles", json_integer(r->run_cycles), bad);
    psc_json_set(o, "parallel_init", json_integer(r->parallel_init), bad);
    psc_json_set(o, "stream_null", json_integer(r->stream_null), bad);
    psc_json_set(o, "unalign", json_integer(r->unalign), bad);
    psc_json_set(o, "register_mode", json_integer(r->register_mode), bad);
    psc_json_set(o, "cta_policy", json_integer(r->cta_policy), bad);
    psc_json_set(o, "per_iter", json_integer(r->per_iter), bad);
    psc_json_set(o, "per_iter_skip", json_integer(r->per_iter_skip), bad);
}

json_t *psc_json_coll_report(const psc_coll_report_t *r)
{
    json_t *o = json_object(), *ranks = json_array(), *rows = json_array();
    long long wrong = 0;
    int bad = 0;

    psc__options_json(o, r, &bad);
    psc_json_set(o, "nccl_version", json_integer(r->nccl_version), &bad);
    psc_json_set(o, "nccl_version_string", psc__nccl_version_str(r->nccl_version), &bad);
    psc_json_set(o, "nccl_tests_format", psc_json_str(PSC_COLL_NCCL_TESTS_VERSION), &bad);
    psc_json_set(o, "busbw_factor", psc_json_real_or_null(psc_coll_busbw_factor(r->coll, r->nranks)), &bad);
    for (int i = 0; r->ranks && i < r->nranks; i++)
        psc_json_push(ranks, psc__rank_json(&r->ranks[i]), &bad);
    psc_json_set(o, "ranks", ranks, &bad);
    for (int i = 0; r->rows && i < r->nrows; i++) {
        json_t *row = psc__row_json(&r->rows[i], r->ext ? &r->ext[i] : NULL);

        if (row && r->loads)
            psc_json_set(row, "compute_load", psc_json_coll_load_row(r, i), &bad);
        psc_json_coll_ways(row, r, i, &bad);
        psc_json_push(rows, row, &bad);
        for (int k = 0; k < 2; k++)
            if (r->rows[i].r[k].ran && r->rows[i].r[k].wrong > 0)
                wrong += r->rows[i].r[k].wrong;
    }
    psc_json_set(o, "rows", rows, &bad);
    psc_json_set(o, "failed_rows", json_integer(r->failed_rows), &bad);
    psc_json_set(o, "wrong_elements", json_integer(wrong), &bad);
    psc_json_set(o, "first_wrong", r->first_wrong[0] ? psc_json_str(r->first_wrong) : json_null(), &bad);
    psc_json_set(o, "avg_busbw_gbs", psc_json_real_or_null(r->avg_busbw_gbs), &bad);
    psc_json_set(o, "own_avg_busbw_gbs", psc__has_own(r) ? psc_json_real_or_null(r->own_avg_busbw_gbs) : json_null(), &bad);
    psc_json_set(o, "own_not_run", r->own_not_run[0] ? psc_json_str(r->own_not_run) : json_null(), &bad);
    psc_json_set(o, "own_tuned", json_boolean(r->own_tuned != 0), &bad);
    psc_json_set(o, "own_tune_note", r->own_tune_note[0] ? psc_json_str(r->own_tune_note) : json_null(), &bad);
    psc_json_set(o, "run_ms", psc_json_real_or_null(r->run_ms), &bad);
    psc_json_set(o, "compute_load", json_boolean(r->loads != NULL), &bad);
    psc_json_set(o, "memory_bytes", !r->mem_known ? json_null() :
                 json_pack("{s:I,s:I,s:I}", "communicators", (json_int_t)r->mem_init_bytes, "buffers",
                           (json_int_t)r->mem_user_bytes, "rows", (json_int_t)r->mem_coll_bytes), &bad);
    return psc_json_done(o, bad);
}

psc_status_t psc_json_run_add_coll(json_t *run, const psc_coll_report_t *r)
{
    json_t *p = json_object(), *devs = json_array();
    int bad = 0;

    psc__options_json(p, r, &bad);
    for (int i = 0; r->ranks && i < r->nranks; i++)
        psc_json_push(devs, json_integer(r->ranks[i].device), &bad);
    psc_json_set(p, "devices", devs, &bad);
    if (psc_json_run_set(run, "parameters", psc_json_done(p, bad)) != PSC_OK)
        bad = 1;
    if (psc_json_run_set(run, "coll", psc_json_coll_report(r)) != PSC_OK)
        bad = 1;
    return bad ? PSC_ERR_NO_MEMORY : PSC_OK;
}

void psc_render_coll_explain(FILE *f, double link_bw_gbs, const char *link_how, const psc_finding_t *v, size_t n)
{
    psc_report_printf(f, "# p2pscope coll: the doctor on this run\n");
    if (link_bw_gbs > 0)
        psc_report_printf(f, "#   links: %.1f GB/s (%s)\n", link_bw_gbs, link_how ? link_how : "measured");
    else
        psc_report_printf(f, "#   links: not measured%s%s\n", link_how ? ": " : "", link_how ? link_how : "");
    if (!n)
        psc_report_printf(f, "#   nothing to say: the bus bandwidth is where the links put it\n");
    for (size_t k = 0; k < n; k++) {
        psc_report_printf(f, "#   [%s] %s: %s\n", psc_severity_string(v[k].severity), v[k].rule, v[k].what);
        psc_report_printf(f, "#       evidence: %s\n", v[k].evidence);
        psc_report_printf(f, "#       fix: %s\n", v[k].fix);
    }
}

json_t *psc_json_coll_explain(double link_bw_gbs, const char *link_how, const psc_finding_t *v, size_t n)
{
    json_t *o = json_object();
    int bad = 0;

    psc_json_set(o, "link_bw_gbs", link_bw_gbs > 0 ? psc_json_real_or_null(link_bw_gbs) : json_null(), &bad);
    psc_json_set(o, "link_bw_how", link_how ? psc_json_str(link_how) : json_null(), &bad);
    psc_json_set(o, "findings", psc_json_findings(v, n), &bad);
    return psc_json_done(o, bad);
}
