/* Memory and events shared between processes (psc_share_*): tracked per context so destroy frees what is left. */
#ifndef PSC_SHARE_SHARE_H
#define PSC_SHARE_SHARE_H

#include "internal.h"

/* Free every psc_share_t of the context not yet freed (the context is closing). */
void psc__share_free_all(psc_context_t *ctx);

/* An import's cost: the driver's import or open (legacy: opened and mapped), and the VMM mapping (0 legacy). */
void psc__share_times(const psc_share_t *s, double *import_us, double *map_us);

#endif
