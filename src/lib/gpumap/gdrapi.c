/* libgdrapi.so.2 loaded at run time, as NCCL is (driver/nccl.c). */
#define _GNU_SOURCE
#include "gpumap/gdrapi.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PSC__GDR_HINT "install gdrcopy 2.4 or newer (libgdrapi2 and its gdrdrv module) or set P2PSCOPE_LIBGDRAPI"
#define PSC__GDRDRV "/dev/gdrdrv"

psc_status_t psc__gdrapi_load(psc_gdrapi_t *api, char *why, size_t len)
{
    const char *path = getenv("P2PSCOPE_LIBGDRAPI");
    int major = 0, minor = 0;

    memset(api, 0, sizeof(*api));
    if (!path || !*path)
        path = "libgdrapi.so.2";
    api->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!api->handle) {
        snprintf(why, len, "no libgdrapi: %s could not be loaded (%s); " PSC__GDR_HINT, path, dlerror());
        return PSC_ERR_UNSUPPORTED;
    }
#define PSC__GDR_RESOLVE(field, sym, ret, params, req)                                                 \
    *(void **)&api->field = dlsym(api->handle, sym);                                                   \
    if (!api->field && req) {                                                                          \
        snprintf(why, len, "no usable libgdrapi: %s lacks %s (gdrcopy older than 2.4); " PSC__GDR_HINT, path, sym); \
        goto err_close;                                                                                \
    }
    PSC_GDR_SYMBOLS(PSC__GDR_RESOLVE)
#undef PSC__GDR_RESOLVE

    api->runtime_version(&major, &minor);
    api->version = PSC_GDR_VERSION(major, minor);
    if (major < 0 || minor < 0 || api->version < PSC_GDR_MIN_VERSION) {
        snprintf(why, len, "libgdrapi %d.%d in %s is too old: 2.4 or newer is needed; " PSC__GDR_HINT, major, minor,
                 path);
        goto err_close;
    }
    snprintf(api->path, sizeof(api->path), "%s", path);
    if (len)
        why[0] = '\0';
    return PSC_OK;

err_close:
    dlclose(api->handle);
    memset(api, 0, sizeof(*api));
    return PSC_ERR_UNSUPPORTED;
}

void psc__gdrapi_unload(psc_gdrapi_t *api)
{
    if (api->handle)
        dlclose(api->handle);
    memset(api, 0, sizeof(*api));
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
