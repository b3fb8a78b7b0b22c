/*
 * One registry mechanism for the test tables (bandwidth, latency): a table
 * of structs, each with a name, title, description and minimum GPU count,
 * looked up by name or shell glob. The tables keep their own struct types;
 * the registry knows where those four members sit.
 */
#ifndef PSC_UTIL_REGISTRY_H
#define PSC_UTIL_REGISTRY_H

#include <stddef.h>

#include "p2pscope/bench.h"

struct psc_registry {
    const void *entries;
    int count;
    size_t stride;                                  /* sizeof one entry */
    size_t name_off, title_off, description_off;    /* const char * members */
    size_t min_gpus_off;                            /* int member */
};

/* The registry of a static array of `type` with members name, title, description and min_gpus. */
#define PSC_REGISTRY_OF(array, type)                                                                     \
    {(array), (int)(sizeof(array) / sizeof((array)[0])), sizeof(type), offsetof(type, name),             \
     offsetof(type, title), offsetof(type, description), offsetof(type, min_gpus)}

/* Entry i, NULL out of range. */
const void *psc__registry_at(const psc_registry_t *r, int i);

/* The index of the entry called `name`, -1 when none is. */
int psc__registry_find(const psc_registry_t *r, const char *name);

/* The index of the entry called `name` into *out; PSC_ERR_INVALID (nothing recorded) when none is or out is NULL. */
psc_status_t psc__registry_lookup(const psc_registry_t *r, const char *name, int *out);

/* Entry i's name, "unknown" out of range. */
const char *psc__registry_name(const psc_registry_t *r, int i);

/* Entry i's minimum GPU count, 0 out of range. */
int psc__registry_min_gpus(const psc_registry_t *r, int i);

/* Indices of the entries whose name matches a shell glob into out (at most cap); returns how many match. */
int psc__registry_match(const psc_registry_t *r, const char *glob, int *out, int cap);

#endif
