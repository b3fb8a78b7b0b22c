/* coll --compute-load's table and JSON (render_coll_load.h). */
#include "render_coll_load.h"

#include <math.h>
#include <string.h>

#include "json.h"
#include "lib/p2pscope_private.h"
#include "render_coll.h"

#define PSC__W 9 /* a figure's width: nccl-tests' precision rule (psc_coll_float_str) */

/* A figure in PSC__W characters as nccl-tests writes them, or "-" where it is not a number. */
static void psc__fig(double v, char out[PSC__W + 1])
{
    if (isfinite(v))
        psc_coll_float_str(v, PSC__W, out);
    else
        snprintf(out, PSC__W + 1, "%*s", PSC__W, "-");
}

/* One half's line: the row's words, then its figures alone and under the load. */
static void psc__load_line(FILE *f, const psc_coll_row_t *row, int k, const psc_coll_load_half_t *h)
{
    const char *type = psc_dtype_name(row->dtype), *op = row->op == -1 ? "none" : psc_redop_name(row->op);
    const char *impl = psc_coll_impl_name(row->impl ? row->impl : PSC_COLL_IMPL_NCCL);
    char v[6][PSC__W + 1];

    psc__fig(row->r[k].time_us, v[0]);
    psc__fig(h->time_us, v[1]);
    psc__fig(row->r[k].time_us > 0 ? h->time_us / row->r[k].time_us : NAN, v[2]);
    psc__fig(h->compute_alone_us, v[3]);
    psc__fig(h->compute_us, v[4]);
    psc__fig(h->slowdown * 100, v[5]);
    fprintf(f, "# %10lld  %8s  %6s  %4i  %8s  %5s", (long long)row->bytes, type ? type : "?", op ? op : "?",
            row->root, impl ? impl : "?", k ? "ip" : "oop");
    for (int j = 0; j < 6; j++)
        fprintf(f, "  %*s", PSC__W, v[j]);
    fprintf(f, "%s\n", h->covered ? "" : "  partly");
}

void psc_render_coll_load(FILE *f, const psc_coll_report_t *r)
{
    if (!r->loads || !r->rows)
        return;
    fprintf(f, "# p2pscope coll --compute-load: each timed loop again while every GPU computes (a matrix-multiply-"
               "like kernel on every SM, a stream of its own)\n");
    fprintf(f, "#   us: time per operation alone (the table's), load_us: under the compute, x: load_us / us; "
               "compute_us: a compute kernel alone, comp_load: while the collectives ran, slow_pct: what "
               "they cost the compute; partly: the collectives outlasted the compute\n");
    fprintf(f, "# %10s  %8s  %6s  %4s  %8s  %5s  %*s  %*s  %*s  %*s  %*s  %*s\n", "bytes", "type", "redop", "root",
            "impl", "place", PSC__W, "us", PSC__W, "load_us", PSC__W, "x", PSC__W, "compute_us", PSC__W,
            "comp_load", PSC__W, "slow_pct");
    for (int i = 0; i < r->nrows; i++)
        for (int k = 0; k < 2; k++)
            if (r->rows[i].r[k].ran && r->loads[i].r[k].ran)
                psc__load_line(f, &r->rows[i], k, &r->loads[i].r[k]);
}

static json_t *psc__half_json(const psc_coll_load_half_t *h)
{
    json_t *o = json_object();
    int bad = 0;

    if (!h->ran) {
        json_decref(o);
        return json_null();
    }
    psc_json_set(o, "time_us", psc_json_real_or_null(h->time_us), &bad);
    psc_json_set(o, "compute_alone_us", psc_json_real_or_null(h->compute_alone_us), &bad);
    psc_json_set(o, "compute_us", psc_json_real_or_null(h->compute_us), &bad);
    psc_json_set(o, "compute_slowdown", psc_json_real_or_null(h->slowdown), &bad);
    psc_json_set(o, "covered", json_boolean(h->covered), &bad);
    return psc_json_done(o, bad);
}

json_t *psc_json_coll_load_row(const psc_coll_report_t *r, int i)
{
    json_t *o;
    int bad = 0;

    if (!r->loads)
        return NULL;
    o = json_object();
    psc_json_set(o, "out_of_place", psc__half_json(&r->loads[i].r[0]), &bad);
    psc_json_set(o, "in_place", psc__half_json(&r->loads[i].r[1]), &bad);
    return psc_json_done(o, bad);
}
