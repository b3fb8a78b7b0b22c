/* verify's background load as text and JSON (render_load.h). */
#include "report/render_load.h"

#include "report/render.h"
#include "report/table.h"
#include "report/text.h"

void psc_render_load(FILE *f, const psc_load_path_report_t *r, int n)
{
    psc_table_t *t = n > 0 ? psc_table_new((unsigned)n + 1, 5) : NULL;

    if (!t)
        return;
    psc_table_left_columns(t, 1);
    PSC_TABLE_HEADER(t, "path", "copies", "GB moved", "MB checked", "bad bytes");
    for (int i = 0; i < n; i++) {
        char a[16], b[16];

        psc_table_set(t, (unsigned)i + 1, 0, "%s -> %s", psc_endpoint_name(r[i].src, a, sizeof(a)),
                      psc_endpoint_name(r[i].dst, b, sizeof(b)));
        psc_table_set(t, (unsigned)i + 1, 1, "%llu", (unsigned long long)r[i].copies);
        psc_table_set(t, (unsigned)i + 1, 2, "%.1f", r[i].bytes_moved / 1e9);
        psc_table_set(t, (unsigned)i + 1, 3, "%.1f", r[i].bytes_checked / 1e6);
        psc_table_set(t, (unsigned)i + 1, 4, "%llu", (unsigned long long)r[i].bad_bytes);
    }
    psc_report_printf(f, "\nbackground traffic while checking [copy engine; each destination checked against its source "
                         "when a path's check starts, and at the end]\n");
    psc_table_render(t, f);
    psc_table_free(t);
    for (int i = 0; i < n; i++) {
        char a[16], b[16];

        if (r[i].bad_bytes)
            psc_report_printf(f, "  %s -> %s: wrong data: %llu bad bytes; first at offset %lld: expected 0x%02x, found 0x%02x\n",
                              psc_endpoint_name(r[i].src, a, sizeof(a)), psc_endpoint_name(r[i].dst, b, sizeof(b)),
                              (unsigned long long)r[i].bad_bytes, (long long)r[i].first_bad_offset, r[i].expected, r[i].found);
    }
}

json_t *psc_json_load(const psc_load_path_report_t *r, int n)
{
    json_t *arr = json_array();

    for (int i = 0; arr && i < n; i++) {
        char a[16], b[16];
        json_t *p = json_pack("{s:s,s:s,s:I,s:I,s:I,s:I}", "src", psc_endpoint_name(r[i].src, a, sizeof(a)), "dst",
                              psc_endpoint_name(r[i].dst, b, sizeof(b)), "copies", (json_int_t)r[i].copies,
                              "bytes_moved", (json_int_t)r[i].bytes_moved, "bytes_checked",
                              (json_int_t)r[i].bytes_checked, "bad_bytes", (json_int_t)r[i].bad_bytes);

        if (p && r[i].bad_bytes)
            json_object_set_new(p, "first_error", json_pack("{s:I,s:i,s:i}", "offset", (json_int_t)r[i].first_bad_offset,
                                                            "expected", r[i].expected, "found", r[i].found));
        json_array_append_new(arr, p);
    }
    return arr;
}
