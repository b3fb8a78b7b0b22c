/* The registry of test tables (registry.h): entries by index, by name and by shell glob. */
#include "util/registry.h"

#include <fnmatch.h>
#include <string.h>

static const char *psc__registry_text(const psc_registry_t *r, int i, size_t off)
{
    const char *e = psc__registry_at(r, i);

    return e ? *(const char *const *)(const void *)(e + off) : NULL;
}

const void *psc__registry_at(const psc_registry_t *r, int i)
{
    return r && i >= 0 && i < r->count ? (const char *)r->entries + (size_t)i * r->stride : NULL;
}

int psc__registry_find(const psc_registry_t *r, const char *name)
{
    for (int i = 0; name && r && i < r->count; i++)
        if (strcmp(name, psc__registry_text(r, i, r->name_off)) == 0)
            return i;
    return -1;
}

psc_status_t psc__registry_lookup(const psc_registry_t *r, const char *name, int *out)
{
    int i = psc__registry_find(r, name);

    if (i < 0 || !out)
        return PSC_ERR_INVALID;
    *out = i;
    return PSC_OK;
}

const char *psc__registry_name(const psc_registry_t *r, int i)
{
    const char *name = psc__registry_text(r, i, r ? r->name_off : 0);

    return name ? name : "unknown";
}

int psc__registry_min_gpus(const psc_registry_t *r, int i)
{
    const char *e = psc__registry_at(r, i);
    int g = 0;

    if (e)
        memcpy(&g, e + r->min_gpus_off, sizeof(g));
    return g;
}

int psc__registry_match(const psc_registry_t *r, const char *glob, int *out, int cap)
{
    int n = 0;

    for (int i = 0; glob && r && i < r->count; i++) {
        if (fnmatch(glob, psc__registry_text(r, i, r->name_off), 0) != 0)
            continue;
        if (out && n < cap)
            out[n] = i;
        n++;
    }
    return n;
}

int psc_registry_count(const psc_registry_t *r)
{
    return r ? r->count : 0;
}

psc_status_t psc_registry_entry(const psc_registry_t *r, int i, psc_registry_entry_t *out)
{
    const char *e = psc__registry_at(r, i);

    if (!e || !out)
        return PSC_ERR_INVALID;
    out->name = psc__registry_text(r, i, r->name_off);
    out->title = psc__registry_text(r, i, r->title_off);
    out->description = psc__registry_text(r, i, r->description_off);
    out->min_gpus = psc__registry_min_gpus(r, i);
    return PSC_OK;
}
