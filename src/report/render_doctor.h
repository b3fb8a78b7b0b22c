/* Doctor findings as text and JSON. */
#ifndef PSC_REPORT_RENDER_DOCTOR_H
#define PSC_REPORT_RENDER_DOCTOR_H

#include <jansson.h>
#include <stdio.h>

#include "p2pscope.h"

/* One summary line, then each finding with its evidence and fix. */
void psc_render_findings(FILE *f, const psc_facts_t *facts, const psc_finding_t *v, size_t n);

json_t *psc_json_findings(const psc_finding_t *v, size_t n);

/* The facts as a JSON object (no hwloc XML); NULL on failure. */
json_t *psc_json_facts(const psc_facts_t *facts);

#endif
