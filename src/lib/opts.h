/* Option structs as the caller's header had them (opts.c): adopted over the library's defaults, kept there too. */
#ifndef PSC_OPTS_H
#define PSC_OPTS_H

#include "internal.h"

psc_status_t psc__measure_opts_adopt(psc_context_t *ctx, const psc_measure_opts_t *in, psc_measure_opts_t *out,
                                     char *errbuf, size_t errlen);
psc_status_t psc__lat_opts_adopt(psc_context_t *ctx, const psc_lat_opts_t *in, psc_lat_opts_t *out);
psc_status_t psc__verify_opts_adopt(psc_context_t *ctx, const psc_verify_opts_t *in, psc_verify_opts_t *out);

#endif
