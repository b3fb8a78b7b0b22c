/* verify's background traffic (the load) as text and JSON. */
#ifndef PSC_REPORT_RENDER_LOAD_H
#define PSC_REPORT_RENDER_LOAD_H

#include <jansson.h>
#include <stdio.h>

#include "p2pscope/bench.h"

/* A row per path: copies, GB moved, MB checked, bad bytes and the first one. */
void psc_render_load(FILE *f, const psc_load_path_report_t *r, int n);

json_t *psc_json_load(const psc_load_path_report_t *r, int n);

#endif
