/* verify's results (render_verify.h): the table by path, the paths as JSON, the wrong-data findings. */
#include "report/render_verify.h"

#include <string.h>

#include "report/json.h"
#include "report/render.h"
#include "report/table.h"
#include "report/text.h"

void psc_render_verify(FILE *f, const psc_verify_path_sum_t *paths, size_t n, double wall_s)
{
    psc_table_t *t = psc_table_new((unsigned)n + 1, 7);
    uint64_t bytes = 0, bad = 0;

    if (!t)
        return;
    psc_table_left_columns(t, 2);
    PSC_TABLE_HEADER(t, "test", "path", "copies", "MB checked", "bad bytes", "status", "passes");
    for (size_t i = 0; i < n; i++) {
        char label[48];

        psc_table_set(t, (unsigned)i + 1, 0, "%s", psc_bw_test_name(paths[i].last.c.test));
        psc_table_set(t, (unsigned)i + 1, 1, "%s", psc_case_label(&paths[i].last.c, label, sizeof(label)));
        psc_table_set(t, (unsigned)i + 1, 2, "%llu", (unsigned long long)paths[i].copies);
        psc_table_set(t, (unsigned)i + 1, 3, "%.1f", paths[i].bytes_checked / 1e6);
        psc_table_set(t, (unsigned)i + 1, 4, "%llu", (unsigned long long)paths[i].bad_bytes);
        psc_table_set(t, (unsigned)i + 1, 5, "%s", psc_result_status_string(paths[i].last.status));
        psc_table_set(t, (unsigned)i + 1, 6, "%u", paths[i].passes);
        bytes += paths[i].bytes_checked;
        bad += paths[i].bad_bytes;
    }
    fprintf(f, "\nverify [1 MB = 1e6 bytes; patterns: random (seeded), address, walking ones, walking zeros, zeros, "
               "ones; sizes 1 B to the largest, aligned and unaligned; canaries, sources and sentinels checked]\n");
    psc_table_render(t, f);
    psc_table_free(t);
    for (size_t i = 0; i < n; i++)
        if (paths[i].last.status != PSC_RESULT_PASSED) {
            char label[48];

            psc_report_printf(f, "  %s %s: %s: %s\n", psc_bw_test_name(paths[i].last.c.test),
                              psc_case_label(&paths[i].last.c, label, sizeof(label)),
                              psc_result_status_string(paths[i].last.status), paths[i].last.reason);
        }
    fprintf(f, "\n%.1f GB checked, %llu bad bytes, wall time %.1f s\n", bytes / 1e9, (unsigned long long)bad, wall_s);
}

void psc_render_findings_of_rule(FILE *f, const psc_finding_t *v, size_t n, const char *rule)
{
    for (size_t k = 0; v && rule && k < n; k++)
        if (strcmp(v[k].rule, rule) == 0)
            psc_report_printf(f, "\n[%s] %s: %s\n    evidence: %s\n    fix: %s\n", psc_severity_string(v[k].severity),
                              v[k].rule, v[k].what, v[k].evidence, v[k].fix);
}

json_t *psc_json_verify_path(const psc_verify_path_sum_t *p)
{
    char label[48];
    json_t *o = json_pack("{s:s,s:s,s:s,s:o,s:I,s:I,s:I,s:i}", "name", psc_bw_test_name(p->last.c.test), "direction",
                          psc_case_label(&p->last.c, label, sizeof(label)), "status",
                          psc_result_status_string(p->last.status), "reason",
                          p->last.reason[0] ? psc_json_str(p->last.reason) : json_null(), "copies",
                          (json_int_t)p->copies, "bytes_checked", (json_int_t)p->bytes_checked, "bad_bytes",
                          (json_int_t)p->bad_bytes, "passes", (int)p->passes);

    if (o && (p->last.first.offset >= 0 || p->bad_bytes) &&
        json_object_set_new(o, "first_error",
                            json_pack("{s:s,s:I,s:I,s:I,s:I,s:i,s:i,s:i}", "pattern",
                                      psc_pattern_kind_name(p->last.first.pattern), "size",
                                      (json_int_t)p->last.first.size, "src_offset", (json_int_t)p->last.first.src_off,
                                      "dst_offset", (json_int_t)p->last.first.dst_off, "offset",
                                      (json_int_t)p->last.first.offset, "expected", p->last.first.expected, "found",
                                      p->last.first.found, "where", p->last.first.where)) != 0) {
        json_decref(o); /* whole or not at all */
        return NULL;
    }
    return o;
}
