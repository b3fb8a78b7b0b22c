/*
 * NCCL loaded at run time (nccl.h): libnccl.so.2's entry points, its version's text, the communicator
 * configuration and the one check of an NCCL call's result.
 */
#define _GNU_SOURCE
#include "driver/nccl.h"
#include "driver/dl_table.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#define PSC__NCCL_HINT "install NCCL (libnccl2) or set P2PSCOPE_LIBNCCL"

void psc__nccl_config_init(psc_ncclConfig_t *cfg, int blocking, int lib_version)
{
    const int u = PSC_NCCL_CONFIG_UNDEF_INT;

    memset(cfg, 0, sizeof(*cfg));
    cfg->size = sizeof(*cfg);
    cfg->magic = PSC_NCCL_API_MAGIC;
    cfg->version = lib_version >= 22800 ? 22800u : 21400u;
    cfg->blocking = blocking ? 1 : 0;
    cfg->cgaClusterSize = cfg->minCTAs = cfg->maxCTAs = cfg->splitShare = cfg->trafficClass = u;
    cfg->collnetEnable = cfg->CTAPolicy = cfg->shrinkShare = cfg->nvlsCTAs = cfg->nChannelsPerNetPeer = u;
    cfg->nvlinkCentricSched = lib_version >= 22800 ? 1 : u;
}

void psc__nccl_config_cta_policy(psc_ncclConfig_t *cfg, int policy, int lib_version)
{
    if (policy < 0 || lib_version < 22700)
        return;
    cfg->CTAPolicy = policy;
    if (cfg->version < 22700u) /* NCCL takes its defaults for fields newer than version */
        cfg->version = 22700u;
}

const char *psc__nccl_version_string(int code, char *buf, size_t len)
{
    int major, minor, patch;

    if (code < 0)
        code = 0;
    if (code >= 10000) { /* 2.9 and newer: major*10000 + minor*100 + patch */
        major = code / 10000;
        minor = code % 10000 / 100;
    } else {             /* before: major*1000 + minor*100 + patch */
        major = code / 1000;
        minor = code % 1000 / 100;
    }
    patch = code % 100;
    snprintf(buf, len, "%d.%d.%d", major, minor, patch);
    return buf;
}

#define PSC__NCCL_SYM(field, sym, ret, params, req) PSC_DL_SYM(psc_nccl_t, field, sym, req),
static const psc_dl_sym_t psc__nccl_syms[] = {PSC_NCCL_SYMBOLS(PSC__NCCL_SYM)};
#undef PSC__NCCL_SYM

/* Never unmapped: NCCL's own threads (proxies, an init still in progress) may outlive a dlclose. */
static const psc_dl_lib_t psc__nccl_lib = {
    .env = "P2PSCOPE_LIBNCCL",
    .soname = "libnccl.so.2",
    .flags = RTLD_NODELETE,
    .no_lib = "no NCCL: %s could not be loaded (%s); " PSC__NCCL_HINT,
    .no_sym = "no usable NCCL: %s lacks %s; " PSC__NCCL_HINT,
    .syms = psc__nccl_syms,
    .nsyms = PSC_DL_COUNT(psc__nccl_syms),
    .size = sizeof(psc_nccl_t),
};

psc_status_t psc__nccl_load(psc_nccl_t *nccl, char *why, size_t len)
{
    char have[32], need[32];
    const char *path = NULL;
    psc_ncclResult_t rc;
    int version = 0;

    if (!(nccl->handle = psc__dl_load(&psc__nccl_lib, nccl, &path, why, len)))
        return PSC_ERR_UNSUPPORTED;
    rc = nccl->get_version(&version);
    if (rc != PSC_NCCL_SUCCESS) {
        snprintf(why, len, "no usable NCCL: ncclGetVersion in %s failed: %s; " PSC__NCCL_HINT, path,
                 nccl->get_error_string(rc));
        goto err;
    }
    /* Codes before 2.9 (2708 for 2.7.8) are all below the minimum too. */
    if (version < PSC_NCCL_MIN_VERSION) {
        psc__dl_too_old(why, len, "NCCL", psc__nccl_version_string(version, have, sizeof(have)), path,
                        psc__nccl_version_string(PSC_NCCL_MIN_VERSION, need, sizeof(need)), PSC__NCCL_HINT);
        goto err;
    }
    nccl->version = version;
    snprintf(nccl->path, sizeof(nccl->path), "%s", path);
    if (len)
        why[0] = '\0';
    return PSC_OK;

err:
    psc__nccl_unload(nccl);
    return PSC_ERR_UNSUPPORTED;
}

void psc__nccl_unload(psc_nccl_t *nccl)
{
    psc__dl_unload(nccl->handle, nccl, sizeof(*nccl));
}

psc_status_t psc__nccl_check(const psc_nccl_t *nccl, psc_ncclComm_t comm, psc_ncclResult_t rc,
                             const char *call, char *why, size_t len)
{
    const char *text = NULL, *last = NULL;
    char num[32];

    if (rc == PSC_NCCL_SUCCESS)
        return PSC_OK;
    if (nccl && nccl->get_error_string)
        text = nccl->get_error_string(rc);
    if (!text || !*text) {
        snprintf(num, sizeof(num), "NCCL error %d", rc);
        text = num;
    }
    if (nccl && nccl->get_last_error)
        last = nccl->get_last_error(comm);
    if (last && *last) {
        /* NCCL's last error may end in a newline; keep the message one line. */
        int n = (int)strcspn(last, "\r\n");
        snprintf(why, len, "%s failed: %s (%.*s)", call, text, n, last);
    } else {
        snprintf(why, len, "%s failed: %s", call, text);
    }
    switch (rc) {
    case PSC_NCCL_INVALID_ARGUMENT:
    case PSC_NCCL_INVALID_USAGE: return PSC_ERR_INVALID;
    case PSC_NCCL_IN_PROGRESS: return PSC_ERR_TIMEOUT;
    default: return PSC_ERR_DRIVER;
    }
}
