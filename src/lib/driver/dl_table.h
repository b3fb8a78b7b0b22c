/*
 * The run-time loaders' one symbol-table helper: open a library by its
 * environment variable or soname, resolve a table of entry points into the
 * loader's struct, and say in one line which library or symbol is missing.
 * Used by the CUDA, NVML, NCCL and gdrapi loaders. Internal: psc__ names.
 */
#ifndef PSC_DRIVER_DL_TABLE_H
#define PSC_DRIVER_DL_TABLE_H

#include <stddef.h>

/* One entry point: its name, whether the load fails without it, and its slot in the loader's struct. */
typedef struct {
    const char *name;  /* the exported symbol; for CUDA the name given to cuGetProcAddress */
    int version;       /* the API version it is requested at (CUDA); 0 where the name pins it */
    int required;      /* missing: the load fails; otherwise the slot stays NULL and its feature is off */
    size_t offset;     /* offsetof(the loader's struct, the field) */
} psc_dl_sym_t;

/* One entry of an X-macro table whose X(field, symbol, return, (params), required) types the fields. */
#define PSC_DL_SYM(type, field, sym, req) {.name = (sym), .required = (req), .offset = offsetof(type, field)}

/*
 * Where a library comes from, the entry points resolved by dlsym into the
 * loader's struct, and the two lines that say it is not usable. Both lines
 * are printf formats given two strings, the file named and the detail:
 * no_lib gets dlerror()'s text, no_sym the missing symbol's name.
 */
typedef struct {
    const char *env;    /* a variable naming another file: "P2PSCOPE_LIBNCCL" */
    const char *soname; /* else this: "libnccl.so.2" */
    int flags;          /* dlopen flags besides RTLD_NOW | RTLD_LOCAL (RTLD_NODELETE) */
    const char *no_lib;
    const char *no_sym;
    const psc_dl_sym_t *syms;
    size_t nsyms;
    size_t size;        /* the loader's struct's: cleared before and after a failed load */
} psc_dl_lib_t;

#define PSC_DL_COUNT(array) (sizeof(array) / sizeof((array)[0]))

/* An entry point's address, or NULL; arg is the lookup's own (dlsym's: the handle). */
typedef void *(*psc_dl_lookup_t)(void *arg, const psc_dl_sym_t *sym);

/* dlsym(handle, sym->name): the lookup of psc__dl_load. */
void *psc__dl_sym(void *handle, const psc_dl_sym_t *sym);

/*
 * Resolve n entry points into table's slots through lookup: an optional one
 * not found is set NULL. Returns the first required one not found (its slot
 * NULL, the slots after it untouched), or NULL when every required one is set.
 */
const psc_dl_sym_t *psc__dl_resolve(void *table, const psc_dl_sym_t *syms, size_t n, psc_dl_lookup_t lookup,
                                    void *arg);

/*
 * dlopen lib (its env variable's file, else its soname) and resolve its entry
 * points into table (cleared first) by dlsym. Returns the handle with *path
 * (if not NULL) the file named; NULL with one line in why (lib->no_lib or
 * lib->no_sym), nothing left open and the table cleared.
 */
void *psc__dl_load(const psc_dl_lib_t *lib, void *table, const char **path, char *why, size_t len);

/* dlclose handle (NULL: none) and clear the loader's struct, size bytes. */
void psc__dl_unload(void *handle, void *table, size_t size);

/* "<what> <have> in <path> is too old: <need> or newer is needed; <hint>", into why. */
void psc__dl_too_old(char *why, size_t len, const char *what, const char *have, const char *path, const char *need,
                     const char *hint);

#endif
