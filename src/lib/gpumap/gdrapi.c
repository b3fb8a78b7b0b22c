/* libgdrapi.so.2 loaded at run time, as NCCL is (driver/nccl.c). */
#define _GNU_SOURCE
#include "gpumap/gdrapi.h"
#include "driver/dl_table.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define PSC__GDR_HINT "install gdrcopy 2.4 or newer (libgdrapi2 and its gdrdrv module) or set P2PSCOPE_LIBGDRAPI"
#define PSC__GDRDRV "/dev/gdrdrv"

#define PSC__GDR_SYM(field, sym, ret, params, req) PSC_DL_SYM(psc_gdrapi_t, field, sym, req),
static const psc_dl_sym_t psc__gdr_syms[] = {PSC_GDR_SYMBOLS(PSC__GDR_SYM)};
#undef PSC__GDR_SYM

static const psc_dl_lib_t psc__gdr_lib = {
    .env = "P2PSCOPE_LIBGDRAPI",
    .soname = "libgdrapi.so.2",
    .no_lib = "no libgdrapi: %s could not be loaded (%s); " PSC__GDR_HINT,
    .no_sym = "no usable libgdrapi: %s lacks %s (gdrcopy older than 2.4); " PSC__GDR_HINT,
    .syms = psc__gdr_syms,
    .nsyms = PSC_DL_COUNT(psc__gdr_syms),
    .size = sizeof(psc_gdrapi_t),
};

psc_status_t psc__gdrapi_load(psc_gdrapi_t *api, char *why, size_t len)
{
    const char *path = NULL;
    int major = 0, minor = 0;
    char have[32];

    if (!(api->handle = psc__dl_load(&psc__gdr_lib, api, &path, why, len)))
        return PSC_ERR_UNSUPPORTED;
    api->runtime_version(&major, &minor);
    api->version = PSC_GDR_VERSION(major, minor);
    if (major < 0 || minor < 0 || api->version < PSC_GDR_MIN_VERSION) {
        snprintf(have, sizeof(have), "%d.%d", major, minor);
        psc__dl_too_old(why, len, "libgdrapi", have, path, "2.4", PSC__GDR_HINT);
        psc__gdrapi_unload(api);
        return PSC_ERR_UNSUPPORTED;
    }
    snprintf(api->path, sizeof(api->path), "%s", path);
    if (len)
        why[0] = '\0';
    return PSC_OK;
}

void psc__gdrapi_unload(psc_gdrapi_t *api)
{
    psc__dl_unload(api->handle, api, sizeof(*api));
}

psc_gdr_t psc__gdrapi_open(const psc_gdrapi_t *api, char *why, size_t len)
{
    psc_gdr_t g = api->open();
    int fd, err;

    if (g)
        return g;
    /* gdr_open says nothing (its log is off by default): find the reason the way it failed. */
    if (access(PSC__GDRDRV, F_OK) != 0) {
        snprintf(why, len, "gdr_open failed: no " PSC__GDRDRV " (the gdrdrv kernel module is not loaded)%s; "
                 "install gdrcopy's gdrdrv module and load it (in a container: pass " PSC__GDRDRV " in)",
                 api->version >= PSC_GDR_VERSION(2, 6) ? ", and libgdrapi's dma-buf fallback found no GPU whose "
                 "driver maps dma-bufs (CUDA 13.3 or newer)" : "");
        return NULL;
    }
    fd = open(PSC__GDRDRV, O_RDWR | O_CLOEXEC);
    err = errno;
    if (fd < 0) {
        snprintf(why, len, "gdr_open failed: " PSC__GDRDRV " cannot be opened for reading and writing: %s; give "
                 "this user read and write access to it (gdrcopy's insmod.sh makes it 0666)", strerror(err));
        return NULL;
    }
    close(fd);
    snprintf(why, len, "gdr_open failed though " PSC__GDRDRV " opens: gdrdrv and libgdrapi %d.%d do not agree "
             "(gdrdrv older than 2.0, or newer than this library accepts); install matching gdrcopy packages",
             api->version >> 16, api->version & 0xffff);
    return NULL;
}

const char *psc__gdr_errno_text(int err, char *buf, size_t len)
{
    static const struct { int e; const char *name; } names[] = {
        {EINVAL, "EINVAL"}, {ENOMEM, "ENOMEM"}, {EACCES, "EACCES"}, {EPERM, "EPERM"}, {EFAULT, "EFAULT"},
        {EAGAIN, "EAGAIN"}, {ENOTSUP, "ENOTSUP"}, {ENODEV, "ENODEV"}, {EBUSY, "EBUSY"},
    };
    const char *name = NULL;

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (names[i].e == err)
            name = names[i].name;
    if (err == 524) /* the kernel's ENOTSUPP, which userspace has no name for */
        snprintf(buf, len, "ENOTSUPP (errno 524: operation not supported)");
    else if (name)
        snprintf(buf, len, "%s (%s)", name, strerror(err));
    else
        snprintf(buf, len, "error %d (%s)", err, strerror(err));
    return buf;
}
