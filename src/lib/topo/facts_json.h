/* Facts to and from JSON (jansson): recordings and the topo report. */
#ifndef PSC_TOPO_FACTS_JSON_H
#define PSC_TOPO_FACTS_JSON_H

#include <jansson.h>

#include "p2pscope.h"

json_t *psc__facts_to_json(const psc_facts_t *f, int with_xml);
psc_status_t psc__facts_load_json(const char *path, psc_facts_t *f, char *errbuf, size_t errlen);

#endif
