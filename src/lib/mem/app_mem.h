/* Memory of each kind for applications (psc_mem_alloc): tracked per context so destroy frees what is left. */
#ifndef PSC_MEM_APP_MEM_H
#define PSC_MEM_APP_MEM_H

#include "internal.h"

/* Free every psc_mem_t of the context not yet freed (the context is closing). */
void psc__mem_free_all(psc_context_t *ctx);

#endif
