/* Which way each of p2pscope's own rows ran (all-reduce, reduce-scatter, all-gather), in coll's tables and JSON
   (render_coll_way.h). */
#include "render_coll_way.h"

#include <string.h>

#include "json.h"
#include "lib/p2pscope_private.h"
#include "p2pscope.h"
#include "text.h"

const char *psc_coll_own_what(const psc_coll_report_t *r, int call)
{
    static const char *const names[3][2] = {{"all-reduce", "psc_allreduce_sum"},
                                            {"reduce-scatter", "psc_allreduce_reduce_scatter"},
                                            {"all-gather", "psc_allreduce_all_gather"}};
    const int k = r->coll == PSC_COLL_REDUCE_SCATTER ? 1 : r->coll == PSC_COLL_ALL_GATHER ? 2 : 0;

    return names[k][call != 0];
}

const char *psc_coll_way_word(const psc_coll_report_t *r, int i, int k)
{
    const char *w;

    if (!r->ways || i < 0 || i >= r->nrows || k < 0 || k > 1 || !r->rows[i].r[k].ran)
        return "-";
    w = psc_allreduce_way_name(r->ways[i].r[k]);
    return w ? w : "-";
}

void psc_render_coll_ways(FILE *f, const psc_coll_report_t *r, int own_is_main_table)
{
    if (r->own_tuned)
        fprintf(f, "# p2pscope's %s: tuned beside NCCL (psc_allreduce_tune): each size class goes the way "
                   "that timed faster; oop_way, ip_way: the way each half ran\n", psc_coll_own_what(r, 0));
    else if (r->own_tune_note[0])
        psc_report_printf(f, "# p2pscope's %s: %.*s\n", psc_coll_own_what(r, 0),
                          (int)strnlen(r->own_tune_note, sizeof(r->own_tune_note)), r->own_tune_note);
    if (!own_is_main_table)
        return;
    fprintf(f, "# %10s  %8s  %12s  %12s\n", "bytes", "type", "oop_way", "ip_way");
    for (int i = 0; i < r->nrows; i++) {
        const char *type = psc_dtype_name(r->rows[i].dtype);

        if (r->rows[i].impl != PSC_COLL_IMPL_P2PSCOPE)
            continue;
        fprintf(f, "# %10lld  %8s  %12s  %12s\n", (long long)r->rows[i].bytes, type ? type : "?",
                psc_coll_way_word(r, i, 0), psc_coll_way_word(r, i, 1));
    }
}

void psc_json_coll_ways(json_t *row, const psc_coll_report_t *r, int i, int *bad)
{
    static const char *const half[2] = {"out_of_place", "in_place"};

    if (!row || r->rows[i].impl != PSC_COLL_IMPL_P2PSCOPE)
        return;
    for (int k = 0; k < 2; k++) {
        json_t *h = json_object_get(row, half[k]);
        const char *w = psc_coll_way_word(r, i, k);

        if (h)
            psc_json_set(h, "way", strcmp(w, "-") ? psc_json_str(w) : json_null(), bad);
    }
}
