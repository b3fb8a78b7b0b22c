/*
 * Sizes as people write them ("64K", "1GiB", "4096") into bytes, and bytes named in the largest binary
 * unit they are a whole number of.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <strings.h>

#include <stdio.h>

#include "p2pscope_private.h"
#include "util/size_name.h"

static const struct {
    const char *suffix;
    uint64_t mult;
} psc__suffixes[] = {
    {"", 1}, {"B", 1},
    {"K", 1ull << 10}, {"KiB", 1ull << 10}, {"KB", 1000ull},
    {"M", 1ull << 20}, {"MiB", 1ull << 20}, {"MB", 1000000ull},
    {"G", 1ull << 30}, {"GiB", 1ull << 30}, {"GB", 1000000000ull},
    {"T", 1ull << 40}, {"TiB", 1ull << 40}, {"TB", 1000000000000ull},
};

psc_status_t psc_size_parse(const char *text, uint64_t *out)
{
    unsigned long long v;
    char *end;

    if (!text || !out || !isdigit((unsigned char)text[0]))
        return PSC_ERR_INVALID;
    errno = 0;
    v = strtoull(text, &end, 10);
    if (errno == ERANGE)
        return PSC_ERR_INVALID;
    for (size_t i = 0; i < sizeof(psc__suffixes) / sizeof(psc__suffixes[0]); i++) {
        uint64_t m = psc__suffixes[i].mult;

        if (strcasecmp(end, psc__suffixes[i].suffix) != 0)
            continue;
        /* v <= 2^40 / m keeps v * m within 1 TiB without overflow. */
        if (v == 0 || v > (1ull << 40) / m)
            return PSC_ERR_INVALID;
        *out = (uint64_t)v * m;
        return PSC_OK;
    }
    return PSC_ERR_INVALID;
}

const char *psc__size_name(uint64_t bytes, const char *sep, char *buf, size_t len)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    unsigned u = 0;

    while (u + 1 < sizeof(units) / sizeof(units[0]) && bytes >= 1024 && bytes % 1024 == 0) {
        bytes /= 1024;
        u++;
    }
    snprintf(buf, len, "%llu%s%s", (unsigned long long)bytes, sep, units[u]);
    return buf;
}
