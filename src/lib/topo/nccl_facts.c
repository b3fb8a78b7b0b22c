/*
 * Live NCCL facts, gathered with the rest (facts.c) for the doctor's rules:
 * whether NCCL loads (and its version), and the NCCL_* settings that change
 * the paths it takes. Only reads the environment: the caller's is left as it
 * was.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver/nccl.h"
#include "topo/nccl_facts.h"

void psc__nccl_facts_gather(psc_nccl_facts_t *out)
{
    static const char *const names[] = {PSC_NCCL_ENV_NAMES};
    const char *lib = getenv("P2PSCOPE_LIBNCCL");
    psc_nccl_t nccl;
    char why[256] = "";

    memset(out, 0, sizeof(*out));
    out->known = 1;
    snprintf(out->path, sizeof(out->path), "%s", lib && *lib ? lib : "libnccl.so.2");
    if (psc__nccl_load(&nccl, why, sizeof(why)) == PSC_OK) {
        out->loaded = 1;
        out->version = nccl.version;
        psc__nccl_unload(&nccl); /* mapped still (RTLD_NODELETE): NCCL's threads may outlive a dlclose */
    } else {
        snprintf(out->note, sizeof(out->note), "%s", why[0] ? why : "NCCL could not be loaded");
    }
    for (size_t k = 0; k < sizeof(names) / sizeof(names[0]) && out->nsettings < PSC_MAX_NCCL_ENV; k++) {
        const char *v = getenv(names[k]);
        psc_nccl_setting_t *s;

        if (!v)
            continue;
        s = &out->settings[out->nsettings++];
        snprintf(s->name, sizeof(s->name), "%s", names[k]);
        snprintf(s->value, sizeof(s->value), "%s", v);
        for (char *c = s->value; *c; c++) /* one line wherever it is shown */
            if ((unsigned char)*c < 0x20 || *c == 0x7f)
                *c = '?';
    }
}
