/* The page's figures from a run's results: what each bandwidth and latency test looks like as a picture. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "figure_plot.h"
#include "html_page.h"
#include "lib/p2pscope_private.h"
#include "render.h"

#define PSC_PAGE_MAX_FIGS 512

static int psc__add(psc_page_figs_t *figs, const char *name, const char *title, char *svg)
{
    psc_page_fig_t *f;

    if (!svg)
        return -1;
    if (figs->n >= PSC_PAGE_MAX_FIGS || psc_page_fig_find(figs, name)) { /* a name is a file: never two alike */
        free(svg);
        return 0;
    }
    f = &figs->figs[figs->n++];
    snprintf(f->name, sizeof(f->name), "%s", name);
    snprintf(f->title, sizeof(f->title), "%s", title);
    f->svg = svg;
    return 0;
}

const psc_page_fig_t *psc_page_fig_find(const psc_page_figs_t *figs, const char *name)
{
    for (size_t k = 0; figs && k < figs->n; k++)
        if (strcmp(figs->figs[k].name, name) == 0)
            return &figs->figs[k];
    return NULL;
}

void psc_page_figs_free(psc_page_figs_t *figs)
{
    for (size_t k = 0; figs && figs->figs && k < figs->n; k++)
        free(figs->figs[k].svg);
    if (figs) {
        free(figs->figs);
        figs->figs = NULL;
        figs->n = 0;
    }
}

/* ------------------------------------------------------------ bandwidth */

/* A matrix cell's text in place of a figure: "-" no result, "" passed (its figure), "n/a" waived, "FAIL". */
static const char *psc__cell_mark(int found, psc_result_status_t status)
{
    return !found ? "-" : status == PSC_RESULT_PASSED ? "" : status == PSC_RESULT_WAIVED ? "n/a" : "FAIL";
}

/* A GPU x GPU (or host / same GPU) matrix's parts: labels gpuN then `other`, row and column labels, marks, values. */
typedef struct {
    char (*labels)[16];
    const char **rl, **cl, **mark;
    double *val;
} psc__grid_t;

static void psc__grid_free(psc__grid_t *g)
{
    free(g->labels);
    free(g->rl);
    free(g->cl);
    free(g->mark);
    free(g->val);
}

/* Which axis is the single other place (the host, the same GPU); the other axis, or both, are the GPUs. */
typedef enum { PSC__PLACE_NONE, PSC__PLACE_ROWS, PSC__PLACE_COLS } psc__place_t;

/* nrow x ncol cells; the `place` axis is labelled `other`, each other row or column its GPU. 0, or -1 out of memory. */
static int psc__grid_new(psc__grid_t *g, const int *devs, int ndev, int nrow, int ncol, psc__place_t place,
                         const char *other)
{
    g->labels = calloc((size_t)ndev + 1, sizeof(*g->labels));
    g->rl = calloc((size_t)ndev + 1, sizeof(*g->rl));
    g->cl = calloc((size_t)ndev + 1, sizeof(*g->cl));
    g->mark = calloc((size_t)(nrow * ncol), sizeof(*g->mark));
    g->val = calloc((size_t)(nrow * ncol), sizeof(*g->val));
    if (!g->labels || !g->rl || !g->cl || !g->mark || !g->val)
        return -1;
    for (int i = 0; i < ndev; i++)
        snprintf(g->labels[i], sizeof(g->labels[i]), "gpu%d", devs[i]);
    snprintf(g->labels[ndev], sizeof(g->labels[ndev]), "%s", other);
    for (int r = 0; r < nrow; r++)
        g->rl[r] = place == PSC__PLACE_ROWS ? g->labels[ndev] : g->labels[r];
    for (int c = 0; c < ncol; c++)
        g->cl[c] = place == PSC__PLACE_COLS ? g->labels[ndev] : g->labels[c];
    return 0;
}

static const psc_bw_result_t *psc__bw_find(const psc_bw_result_t *res, size_t n, int src, int dst)
{
    for (size_t i = 0; i < n; i++)
        if (res[i].c.src == src && res[i].c.dst == dst)
            return &res[i];
    return NULL;
}

/* The cells' measurement; samples and copies as a range where the cells differ (adaptive sampling). */
static void psc__bw_subtitle(const psc_bw_result_t *res, size_t n, char *buf, size_t len)
{
    unsigned smin = 0, smax = 0, imin = 0, imax = 0;
    const psc_bw_result_t *first = NULL;
    char sz[24], samples[32], copies[32];

    for (size_t i = 0; i < n; i++)
        if (res[i].status == PSC_RESULT_PASSED) {
            if (!first) {
                first = &res[i];
                smin = smax = res[i].nsamples;
                imin = imax = res[i].iterations;
            }
            smin = res[i].nsamples < smin ? res[i].nsamples : smin;
            smax = res[i].nsamples > smax ? res[i].nsamples : smax;
            imin = res[i].iterations < imin ? res[i].iterations : imin;
            imax = res[i].iterations > imax ? res[i].iterations : imax;
        }
    if (!first) {
        snprintf(buf, len, "GB/s (1 GB = 1e9 bytes); no case passed");
        return;
    }
    if (smin == smax)
        snprintf(samples, sizeof(samples), "%u sample%s", smax, smax == 1 ? "" : "s");
    else
        snprintf(samples, sizeof(samples), "%u to %u samples", smin, smax);
    if (imin == imax)
        snprintf(copies, sizeof(copies), "%u", imax);
    else
        snprintf(copies, sizeof(copies), "%u to %u", imin, imax);
    snprintf(buf, len, "GB/s (1 GB = 1e9 bytes), median of %s; %s per copy x %s copies a sample%s", samples,
             psc_size_name(first->size, "", sz, sizeof(sz)), copies, first->gated ? "" : "; timed without gates");
}

/* One test at one size as a src(row) -> dst(column) matrix; concurrent shapes have no matrix (the page's table). */
static int psc__bw_heatmap(psc_page_figs_t *figs, int test, const psc_bw_result_t *res, size_t n, const int *devs,
                           int ndev)
{
    const psc_bw_test_info_t *ti = psc_bw_test_info(test);
    int nrow, ncol, rc = -1;
    psc__place_t place;
    char sub[192], title[200];
    psc__grid_t g = {0};

    if (!ti || n == 0)
        return 0;
    switch (ti->shape) {
    case PSC_SHAPE_PAIR: case PSC_SHAPE_P2P_OFF: nrow = ncol = ndev; place = PSC__PLACE_NONE; break;
    case PSC_SHAPE_H2D: case PSC_SHAPE_LOCAL: nrow = 1; ncol = ndev; place = PSC__PLACE_ROWS; break;
    case PSC_SHAPE_D2H: nrow = ndev; ncol = 1; place = PSC__PLACE_COLS; break;
    default: return 0;
    }
    if (psc__grid_new(&g, devs, ndev, nrow, ncol, place, ti->shape == PSC_SHAPE_LOCAL ? "same GPU" : "host") != 0)
        goto out;
    for (int r = 0; r < nrow; r++)
        for (int c = 0; c < ncol; c++) {
            int src = ti->shape == PSC_SHAPE_H2D ? PSC_HOST : devs[place == PSC__PLACE_ROWS ? c : r];
            int dst = ti->shape == PSC_SHAPE_D2H ? PSC_HOST : devs[place == PSC__PLACE_COLS ? r : c];
            const psc_bw_result_t *x = place == PSC__PLACE_NONE && r == c ? NULL : psc__bw_find(res, n, src, dst);

            g.mark[r * ncol + c] = psc__cell_mark(x != NULL, x ? x->status : PSC_RESULT_PASSED);
            g.val[r * ncol + c] = x && x->status == PSC_RESULT_PASSED ? x->stats.median : NAN;
        }
    psc__bw_subtitle(res, n, sub, sizeof(sub));
    snprintf(title, sizeof(title), "%s: %s", ti->name, ti->title);
    {
        psc_heatmap_t h = {title, sub, "source", "destination", nrow, ncol, g.rl, g.cl, g.val, g.mark, "%.1f"};

        rc = psc__add(figs, ti->name, title, psc_figure_heatmap(&h));
    }
out:
    psc__grid_free(&g);
    return rc;
}

const psc_suite_test_t *psc_page_twin(const psc_bw_suite_t *s, const char *name, const char *from)
{
    size_t len = strlen(name);
    char twin[96];

    if (len <= 3 || strcmp(name + len - 3, from) != 0)
        return NULL;
    snprintf(twin, sizeof(twin), "%.*s%s", (int)(len - 3), name, strcmp(from, "_ce") == 0 ? "_sm" : "_ce");
    for (int t = 0; t < s->ntests; t++)
        if (strcmp(psc_bw_test_name(s->tests[t].test), twin) == 0)
            return s->tests[t].n ? &s->tests[t] : NULL;
    return NULL;
}

/* A test's sweep as one series per case (results size after size, cases in order within each size). */
typedef struct {
    char label[48];                   /* the legend's ("gpu0 -> gpu1 CE") */
    char path[48];                    /* the path's ("gpu0 -> gpu1"), for the crossings */
    int src, dst, n;
    double *x, *y;
} psc__curve_t;

static int psc__curves_of(const psc_bw_suite_t *s, const psc_suite_test_t *st, psc__curve_t *cv, int cap)
{
    int nc = 0;

    for (size_t i = st->first; i < st->first + st->n; i++) {
        const psc_bw_result_t *r = &s->results[i];
        int k;

        for (k = 0; k < nc && !(cv[k].src == r->c.src && cv[k].dst == r->c.dst); k++)
            ;
        if (k == nc) {
            if (nc == cap)
                continue;
            psc_case_label(&r->c, cv[k].label, sizeof(cv[k].label));
            snprintf(cv[k].path, sizeof(cv[k].path), "%s", cv[k].label);
            cv[k].src = r->c.src;
            cv[k].dst = r->c.dst;
            nc++;
        }
        if (cv[k].n < s->nsizes) {
            cv[k].x[cv[k].n] = (double)r->size;
            cv[k].y[cv[k].n++] = r->status == PSC_RESULT_PASSED ? r->stats.median : NAN;
        }
    }
    return nc;
}

/*
 * Where SM and CE swap places along a path's sweep: a marker at each crossing
 * (log2 x interpolated). A difference within PSC__SAME (of the larger value)
 * is noise, on neither side: it keeps the side before it, so curves that touch
 * or start equal cross nowhere; a crossing is between points clearly apart.
 */
#define PSC__SAME 0.01
static int psc__crossings(const psc__curve_t *ce, const psc__curve_t *sm, psc_marker_t *mk, char (*text)[64], int cap)
{
    int n = 0, prev = 0;
    double px = 0, pd = 0, pc = 0;

    for (int a = 0; a < ce->n; a++) {
        double d, big;
        int b, side;

        for (b = 0; b < sm->n && sm->x[b] != ce->x[a]; b++)
            ;
        if (b == sm->n || !isfinite(ce->y[a]) || !isfinite(sm->y[b]))
            continue;
        d = sm->y[b] - ce->y[a];
        big = fmax(fabs(sm->y[b]), fabs(ce->y[a]));
        if (fabs(d) <= PSC__SAME * big)
            continue; /* no side: the previous one holds */
        side = d > 0 ? 1 : -1;
        if (prev && side != prev && n < cap) {
            double t = pd / (pd - d), lx = log2(px) + t * (log2(ce->x[a]) - log2(px));
            char sz[24];

            mk[n].x = exp2(lx);
            mk[n].y = pc + t * (ce->y[a] - pc); /* on the curves: their common value there */
            snprintf(text[n], sizeof(text[n]), "%s: %s > %s from %s", ce->path, side > 0 ? "SM" : "CE",
                     side > 0 ? "CE" : "SM", psc_render_size_text((uint64_t)ce->x[a], sz, sizeof(sz)));
            mk[n].label = text[n];
            n++;
        }
        prev = side;
        px = ce->x[a];
        pd = d;
        pc = ce->y[a];
    }
    return n;
}

/*
 * More paths than one plot shows apart (8 GPUs: 56 paths, 112 curves with the
 * SM twin): small figures instead, one per source GPU, PSC__SWEEP_PATHS paths
 * each at most, each with its own crossings.
 */
#define PSC__SWEEP_PATHS 7
#define PSC__SWEEP_SPLIT 8

/*
 * A sweep's room: the curves (cv[0, nce) the copy engine's, cv[nce, nce + nsm) their SM twins'), x and y of each
 * (xy), the series and crossings of one figure (2 * cap of those), which CE curves a figure draws (sel) and which
 * a figure drew already (done).
 */
typedef struct {
    psc__curve_t *cv;
    int nce, nsm, cap;
    psc_series_t *se;
    psc_marker_t *mk;
    char (*mtext)[64];
    double *xy;
    int *sel, *done;
} psc__sweep_t;

/* Room for cap curves of nsizes points each; -1 out of memory (what was taken is freed by psc__sweep_free). */
static int psc__sweep_alloc(psc__sweep_t *w, int nsizes, int cap)
{
    memset(w, 0, sizeof(*w));
    w->cap = cap;
    w->cv = calloc((size_t)cap, sizeof(*w->cv));
    w->se = calloc((size_t)cap, sizeof(*w->se));
    w->mk = calloc((size_t)cap * 2, sizeof(*w->mk));
    w->mtext = calloc((size_t)cap * 2, sizeof(*w->mtext));
    w->xy = calloc((size_t)cap * 2 * (size_t)(nsizes + 1), sizeof(*w->xy));
    w->sel = calloc((size_t)cap, sizeof(*w->sel));
    w->done = calloc((size_t)cap, sizeof(*w->done));
    if (!w->cv || !w->se || !w->mk || !w->mtext || !w->xy || !w->sel || !w->done)
        return -1;
    for (int k = 0; k < cap; k++) {
        w->cv[k].x = w->xy + (size_t)k * 2 * (size_t)(nsizes + 1);
        w->cv[k].y = w->cv[k].x + nsizes + 1;
    }
    return 0;
}

/* The sweep's room given back. */
static void psc__sweep_free(psc__sweep_t *w)
{
    free(w->cv);
    free(w->se);
    free(w->mk);
    free(w->mtext);
    free(w->xy);
    free(w->sel);
    free(w->done);
}

/* The curves of test st and of its SM twin sm (or none); the legend names the engine when both are drawn. */
static void psc__sweep_curves(psc__sweep_t *w, const psc_bw_suite_t *s, const psc_suite_test_t *st,
                              const psc_suite_test_t *sm)
{
    w->nce = psc__curves_of(s, st, w->cv, w->cap);
    w->nsm = sm ? psc__curves_of(s, sm, w->cv + w->nce, w->cap - w->nce) : 0;
    if (sm)
        for (int k = 0; k < w->nce + w->nsm; k++) {
            size_t l = strlen(w->cv[k].label);

            snprintf(w->cv[k].label + l, sizeof(w->cv[k].label) - l, " %s", k < w->nce ? "CE" : "SM");
        }
}

/*
 * One sweep figure of the CE curves w->sel[0..nsel) (indexes into w->cv) and their SM twins; with every CE curve,
 * an SM path without a CE one too.
 */
static int psc__sweep_fig(psc_page_figs_t *figs, const char *fname, const char *title, psc__sweep_t *w, int nsel)
{
    const psc__curve_t *cv = w->cv;
    const int nce = w->nce, nsm = w->nsm, mcap = 2 * w->cap;
    int ns = 0, nmk = 0;
    char sub[200];

    for (int q = 0; q < nsel; q++) {
        const psc__curve_t *ce = &cv[w->sel[q]];

        w->se[ns++] = (psc_series_t){ce->label, ce->n, ce->x, ce->y, q, 0};
        for (int k = nce; k < nce + nsm; k++)
            if (cv[k].src == ce->src && cv[k].dst == ce->dst) { /* the SM line takes its path's colour */
                w->se[ns++] = (psc_series_t){cv[k].label, cv[k].n, cv[k].x, cv[k].y, q, 1};
                nmk += psc__crossings(ce, &cv[k], w->mk + nmk, w->mtext + nmk, mcap - nmk);
            }
    }
    for (int k = nce; nsel == nce && k < nce + nsm; k++) {
        int twin = 0;

        for (int j = 0; j < nce && !twin; j++)
            twin = cv[j].src == cv[k].src && cv[j].dst == cv[k].dst;
        if (!twin)
            w->se[ns++] = (psc_series_t){cv[k].label, cv[k].n, cv[k].x, cv[k].y, k, 1};
    }
    snprintf(sub, sizeof(sub), "GB/s (1 GB = 1e9 bytes), median per size%s",
             nmk ? "; rings: where SM and CE cross" : "");
    {
        psc_curves_t c = {title, sub, "GB/s", ns, w->se, nmk, w->mk};

        return psc__add(figs, fname, title, psc_figure_curves(&c));
    }
}

/* Small figures: the paths of one source GPU each, in the run's order, PSC__SWEEP_PATHS at most a figure. */
static int psc__sweep_by_source(psc_page_figs_t *figs, psc__sweep_t *w, const char *name, const char *title)
{
    char fname[112];
    int rc = 0;

    for (int first = 0; rc == 0 && first < w->nce; first++) {
        int nsel = 0, src = w->cv[first].src;
        char t[240], e[16];

        if (w->done[first])
            continue;
        for (int k = first; k < w->nce && nsel < PSC__SWEEP_PATHS; k++)
            if (!w->done[k] && w->cv[k].src == src) {
                w->sel[nsel++] = k;
                w->done[k] = 1;
            }
        psc_endpoint_name(src, e, sizeof(e));
        snprintf(fname, sizeof(fname), "%s_sweep_%s", name, e);
        for (int part = 2; psc_page_fig_find(figs, fname); part++) /* more paths from one source: numbered */
            snprintf(fname, sizeof(fname), "%s_sweep_%s_%d", name, e, part);
        snprintf(t, sizeof(t), "%s; from %s", title, e);
        rc = psc__sweep_fig(figs, fname, t, w, nsel);
    }
    return rc;
}

/* Test st's sweep figures, with its SM twin's curves where the run has one; -1 out of memory. */
static int psc__bw_sweep(psc_page_figs_t *figs, const psc_bw_suite_t *s, const psc_suite_test_t *st)
{
    const char *name = psc_bw_test_name(st->test);
    char fname[112], title[200];
    const psc_suite_test_t *sm;
    psc__sweep_t w;
    int rc = -1;

    if (st->n == 0)
        return 0; /* no case (too few GPUs): no figure, as the page shows none; its SM twin is drawn alone */
    if (psc_page_twin(s, name, "_sm"))
        return 0; /* drawn with its copy-engine twin */
    sm = psc_page_twin(s, name, "_ce");
    if (psc__sweep_alloc(&w, s->nsizes, (int)st->n + 1 + (sm ? (int)sm->n : 0)) != 0)
        goto out;
    psc__sweep_curves(&w, s, st, sm);
    if (sm)
        snprintf(title, sizeof(title), "%s vs %s: by size, copy engine (solid) and SM kernel (dashed)", name,
                 psc_bw_test_name(sm->test));
    else
        snprintf(title, sizeof(title), "%s: %s, by size", name, psc_bw_test_title(st->test));
    if (w.nce <= PSC__SWEEP_SPLIT) {
        for (int k = 0; k < w.nce; k++)
            w.sel[k] = k;
        snprintf(fname, sizeof(fname), "%s_sweep", name);
        rc = psc__sweep_fig(figs, fname, title, &w, w.nce);
    } else {
        rc = psc__sweep_by_source(figs, &w, name, title);
    }
out:
    psc__sweep_free(&w);
    return rc;
}

/* ------------------------------------------------------------ latency */

static int psc__lat_heatmap(psc_page_figs_t *figs, int test, const psc_lat_result_t *res, size_t n, const int *devs,
                            int ndev)
{
    const psc_lat_test_info_t *ti = psc_lat_test_info(test);
    int peer, nrow, ncol, rc = -1;
    char title[200], sub[200];
    psc__grid_t g = {0};

    if (!ti || n == 0 || (ti->method != PSC_LAT_CHASE && ti->method != PSC_LAT_FLAG))
        return 0;
    peer = ti->where == PSC_LAT_PEER;
    nrow = peer ? ndev : 1;
    ncol = ndev;
    /* Columns: always the reading GPUs; rows: the peers', else the one place. */
    if (psc__grid_new(&g, devs, ndev, nrow, ncol, peer ? PSC__PLACE_NONE : PSC__PLACE_ROWS,
                      ti->where == PSC_LAT_LOCAL ? "same GPU" : "host") != 0)
        goto out;
    for (int r = 0; r < nrow; r++)
        for (int c = 0; c < ncol; c++) {
            int host = ti->where == PSC_LAT_HOST || ti->where == PSC_LAT_GPUMAP;
            int src = peer ? devs[r] : host ? PSC_HOST : devs[c];
            const psc_lat_result_t *x = NULL;

            for (size_t i = 0; i < n && !(peer && r == c); i++)
                if (res[i].c.src == src && res[i].c.dst == devs[c])
                    x = &res[i];
            g.mark[r * ncol + c] = psc__cell_mark(x != NULL, x ? x->status : PSC_RESULT_PASSED);
            g.val[r * ncol + c] = x && x->status == PSC_RESULT_PASSED ? x->lat[0].p50 / 1e3 : NAN;
        }
    snprintf(title, sizeof(title), "%s: %s", ti->name, ti->title);
    snprintf(sub, sizeof(sub), "microseconds, p50; %s", ti->method == PSC_LAT_CHASE
                                                          ? "per dependent load: source = where the chain lives, destination = the reading GPU"
                                                          : "one way = round trip / 2");
    {
        psc_heatmap_t h = {title, sub, "source", "destination", nrow, ncol, g.rl, g.cl, g.val, g.mark, "%.3g"};

        rc = psc__add(figs, ti->name, title, psc_figure_heatmap(&h));
    }
out:
    psc__grid_free(&g);
    return rc;
}

static int psc__lat_dist(psc_page_figs_t *figs, int test, const psc_lat_result_t *res, size_t n)
{
    const psc_lat_test_info_t *ti = psc_lat_test_info(test);
    psc_dist_row_t *rows;
    char (*labels)[64], title[200], name[112];
    int nr = 0, rc;
    size_t cap = 0;

    if (!ti)
        return 0;
    for (size_t i = 0; i < n; i++)
        cap += res[i].status == PSC_RESULT_PASSED ? res[i].nsizes : 0;
    if (!cap)
        return 0;
    rows = calloc(cap, sizeof(*rows));
    labels = calloc(cap, sizeof(*labels));
    if (!rows || !labels) {
        free(rows);
        free(labels);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        const psc_lat_result_t *x = &res[i];
        char a[16], b[16], sz[24];

        for (unsigned k = 0; x->status == PSC_RESULT_PASSED && k < x->nsizes; k++) {
            psc_dist_row_t *r = &rows[nr];

            if (x->nsizes > 1)
                snprintf(labels[nr], sizeof(labels[nr]), "%s -> %s, %s B", psc_endpoint_name(x->c.src, a, sizeof(a)),
                         psc_endpoint_name(x->c.dst, b, sizeof(b)), psc_render_size_text(x->sizes[k], sz, sizeof(sz)));
            else
                snprintf(labels[nr], sizeof(labels[nr]), "%s -> %s", psc_endpoint_name(x->c.src, a, sizeof(a)),
                         psc_endpoint_name(x->c.dst, b, sizeof(b)));
            r->label = labels[nr];
            r->min = x->lat[k].min / 1e3;
            r->p50 = x->lat[k].p50 / 1e3;
            r->p90 = x->lat[k].p90 / 1e3;
            r->p99 = x->lat[k].p99 / 1e3;
            r->max = x->lat[k].max / 1e3;
            r->nraw = (int)(x->nkept[k] < PSC_LAT_KEEP ? x->nkept[k] : PSC_LAT_KEEP);
            r->raw = x->kept[k];
            r->raw_scale = 1e-3;
            nr++;
        }
    }
    snprintf(title, sizeof(title), "%s: %s, distribution", ti->name, ti->title);
    {
        psc_dist_t d = {title,
                        ti->method == PSC_LAT_COPY ? "GPU time per copy, each sample's mean over back-to-back copies"
                        : ti->method == PSC_LAT_SYNC || ti->method == PSC_LAT_MAPCOST ? "per call, timed by the host"
                        : ti->method == PSC_LAT_CHASE ? "per dependent load, each sample a timed chain"
                                                      : "one way (round trip / 2), each sample a round trip",
                        "microseconds", nr, rows};

        snprintf(name, sizeof(name), "%s_dist", ti->name);
        rc = psc__add(figs, name, title, psc_figure_dist(&d));
    }
    free(rows);
    free(labels);
    return rc;
}

psc_status_t psc_page_figures(const psc_page_t *p, psc_page_figs_t *out)
{
    psc_page_figs_t figs = {0, calloc(PSC_PAGE_MAX_FIGS, sizeof(psc_page_fig_t))};
    int bad = !figs.figs;

    for (int t = 0; !bad && p->bw && t < p->bw->ntests; t++) {
        const psc_suite_test_t *st = &p->bw->tests[t];

        if (p->bw->nsizes > 1)
            bad = psc__bw_sweep(&figs, p->bw, st) != 0;
        else
            bad = psc__bw_heatmap(&figs, st->test, p->bw->results + st->first, st->n, p->bw->devices,
                                  p->bw->ndev) != 0;
    }
    for (int t = 0; !bad && p->lat && t < p->lat->ntests; t++) {
        const psc_suite_test_t *st = &p->lat->tests[t];
        const psc_lat_result_t *res = p->lat->results + st->first;

        bad = psc__lat_heatmap(&figs, st->test, res, st->n, p->lat->devices, p->lat->ndev) != 0 ||
              psc__lat_dist(&figs, st->test, res, st->n) != 0;
    }
    if (bad) {
        psc_page_figs_free(&figs);
        return PSC_ERR_NO_MEMORY;
    }
    *out = figs;
    return PSC_OK;
}
