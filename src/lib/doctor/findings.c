/* Adding a finding, for every rule file of the doctor (doctor/rules.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "doctor/rules.h"

void psc__add(psc__findings_t *fs, psc_severity_t sev, const char *rule, const char *fix, const char *evidence,
              const char *fmt, ...)
{
    psc_finding_t *x;
    va_list ap;

    if (sev != fs->pass)
        return;
    if (!fs->out || fs->n >= fs->cap) {
        fs->n++;
        return;
    }
    x = &fs->out[fs->n++];
    memset(x, 0, sizeof(*x));
    x->severity = sev;
    snprintf(x->rule, sizeof(x->rule), "%s", rule);
    snprintf(x->fix, sizeof(x->fix), "%s", fix);
    snprintf(x->evidence, sizeof(x->evidence), "%s", evidence);
    va_start(ap, fmt);
    vsnprintf(x->what, sizeof(x->what), fmt, ap);
    va_end(ap);
}
