#include "render_doctor.h"

#include <stdlib.h>

#include "json.h"
#include "lib/p2pscope_private.h"
#include "text.h"

/* The NCCL facts in one line: "nccl: 2.28.7 (libnccl.so.2); settings: NCCL_P2P_DISABLE=1". Nothing when not known. */
static void psc__render_nccl(FILE *out, const psc_nccl_facts_t *n)
{
    char v[32], text[1024]; /* a recording's text, escaped whole (newlines too): the line stays one line */

    if (!n->known)
        return;
    psc_text_escape(n->loaded ? n->path : n->note[0] ? n->note : n->path, NULL, text, sizeof(text));
    if (n->loaded)
        psc_report_printf(out, "nccl: %s (%s); settings:", psc_nccl_version_string(n->version, v, sizeof(v)), text);
    else
        psc_report_printf(out, "nccl: not loaded (%s); settings:", text);
    for (int k = 0; k < n->nsettings && k < PSC_MAX_NCCL_ENV; k++) {
        psc_text_escape(n->settings[k].value, NULL, text, sizeof(text));
        psc_report_printf(out, " %s=%s", n->settings[k].name, text);
    }
    psc_report_printf(out, "%s\n", n->nsettings ? "" : " none of NCCL_* that shape its paths");
}

void psc_render_findings(FILE *out, const psc_facts_t *f, const psc_finding_t *v, size_t n)
{
    size_t count[3] = {0, 0, 0};

    for (size_t k = 0; k < n; k++)
        count[v[k].severity]++;
    psc_report_printf(out, "doctor: %d GPU%s (%s): %zu error%s, %zu warning%s, %zu note%s\n", f->ngpu, f->ngpu == 1 ? "" : "s",
                      f->source, count[PSC_SEV_ERROR], count[PSC_SEV_ERROR] == 1 ? "" : "s", count[PSC_SEV_WARNING],
                      count[PSC_SEV_WARNING] == 1 ? "" : "s", count[PSC_SEV_INFO], count[PSC_SEV_INFO] == 1 ? "" : "s");
    psc__render_nccl(out, &f->nccl);
    for (size_t k = 0; k < n; k++) {
        psc_report_printf(out, "\n[%s] %s: %s\n", psc_severity_string(v[k].severity), v[k].rule, v[k].what);
        psc_report_printf(out, "    evidence: %s\n", v[k].evidence);
        psc_report_printf(out, "    fix: %s\n", v[k].fix);
    }
}

json_t *psc_json_findings(const psc_finding_t *v, size_t n)
{
    json_t *arr = json_array();

    /* The texts carry names and command lines from outside: through psc_json_str, and all or nothing. */
    for (size_t k = 0; arr && k < n; k++) {
        json_t *o = json_pack("{s:s,s:o,s:o,s:o,s:o}", "severity", psc_severity_string(v[k].severity), "rule",
                              psc_json_str(v[k].rule), "what", psc_json_str(v[k].what), "evidence",
                              psc_json_str(v[k].evidence), "fix", psc_json_str(v[k].fix));

        if (json_array_append_new(arr, o) != 0) {
            json_decref(arr);
            arr = NULL;
        }
    }
    return arr;
}

json_t *psc_json_facts(const psc_facts_t *f)
{
    char *text = psc_facts_json(f, 0);
    json_t *o = text ? json_loads(text, 0, NULL) : NULL;

    free(text);
    return o;
}
