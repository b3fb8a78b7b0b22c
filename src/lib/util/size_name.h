/* A byte count as people read it: the largest binary unit it is a whole number of. */
#ifndef PSC_UTIL_SIZE_NAME_H
#define PSC_UTIL_SIZE_NAME_H

#include <stddef.h>
#include <stdint.h>

/* "4<sep>KiB", "512<sep>MiB", "1536<sep>B" (units B to TiB) into buf; returns buf. */
const char *psc__size_name(uint64_t bytes, const char *sep, char *buf, size_t len);

#endif
