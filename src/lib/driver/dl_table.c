/* The run-time loaders' symbol-table helper (dl_table.h): dlopen by soname, a table of entry points, the lines. */
#define _GNU_SOURCE
#include "driver/dl_table.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *psc__dl_sym(void *handle, const psc_dl_sym_t *sym)
{
    return dlsym(handle, sym->name);
}

const psc_dl_sym_t *psc__dl_resolve(void *table, const psc_dl_sym_t *syms, size_t n, psc_dl_lookup_t lookup,
                                    void *arg)
{
    for (size_t i = 0; i < n; i++) {
        /* POSIX's way to a function pointer from dlsym: write the object pointer's bytes. */
        void **slot = (void **)((char *)table + syms[i].offset);

        *slot = lookup(arg, &syms[i]);
        if (!*slot && syms[i].required)
            return &syms[i];
    }
    return NULL;
}

void *psc__dl_load(const psc_dl_lib_t *lib, void *table, const char **path, char *why, size_t len)
{
    const char *file = getenv(lib->env);
    const psc_dl_sym_t *missing;
    void *handle;

    memset(table, 0, lib->size);
    if (!file || !*file)
        file = lib->soname;
    handle = dlopen(file, RTLD_NOW | RTLD_LOCAL | lib->flags);
    if (!handle) {
        snprintf(why, len, lib->no_lib, file, dlerror());
        return NULL;
    }
    missing = psc__dl_resolve(table, lib->syms, lib->nsyms, psc__dl_sym, handle);
    if (missing) {
        snprintf(why, len, lib->no_sym, file, missing->name);
        psc__dl_unload(handle, table, lib->size);
        return NULL;
    }
    if (path)
        *path = file;
    return handle;
}

void psc__dl_unload(void *handle, void *table, size_t size)
{
    if (handle)
        dlclose(handle);
    memset(table, 0, size);
}

void psc__dl_too_old(char *why, size_t len, const char *what, const char *have, const char *path, const char *need,
                     const char *hint)
{
    snprintf(why, len, "%s %s in %s is too old: %s or newer is needed; %s", what, have, path, need, hint);
}
