/* Facts to and from JSON (jansson): recordings and the topo report. */
#ifndef PSC_TOPO_FACTS_JSON_H
#define PSC_TOPO_FACTS_JSON_H

#include <jansson.h>
#include <stddef.h>

#include "p2pscope.h"

/* The facts as a JSON object; NULL when a key could not be inserted (out of memory). */
json_t *psc__facts_to_json(const psc_facts_t *f, int with_xml);

/*
 * A recording's text (len bytes, read from path, which messages name), every
 * field checked for type and range; PSC_ERR_INVALID with one line naming the
 * field by its JSON path and what is accepted. f is written only when the
 * recording is sound (PSC_OK, or PSC_ERR_NO_DEVICE).
 */
psc_status_t psc__facts_load_json(const char *path, const char *text, size_t len, psc_facts_t *f, char *errbuf,
                                  size_t errlen);

#endif
