/*
 * gdrcopy's libgdrapi.so.2, loaded at run time. p2pscope builds without
 * gdrapi.h, so the few types used are declared here as gdrapi.h (2.4 to 2.6)
 * lays them out (include/gdrapi.h of github.com/NVIDIA/gdrcopy). Internal:
 * psc__ names.
 */
#ifndef PSC_GPUMAP_GDRAPI_H
#define PSC_GPUMAP_GDRAPI_H

#include <stddef.h>
#include <stdint.h>

#include "p2pscope.h"

typedef struct psc_gdr *psc_gdr_t; /* gdr_t */
typedef struct {                   /* gdr_mh_t */
    unsigned long h;
} psc_gdr_mh_t;

typedef struct { /* gdr_info_v2_t */
    uint64_t va;          /* the pinned address, aligned down to the GPU page */
    uint64_t mapped_size;
    uint32_t page_size;
    uint64_t tm_cycles;
    uint32_t cycles_per_ms;
    unsigned mapped : 1;
    unsigned wc_mapping : 1;
    int mapping_type;     /* gdr_mapping_type_t: 0 none, 1 write-combined, 2 caching, 3 device */
} psc_gdr_info_t;

enum { PSC_GDR_MAPPING_WC = 1 };
enum { PSC_GDR_ATTR_USING_DMA_BUF_MMAP = 3 }; /* gdr_attr_t, 2.6 */

#define PSC_GDR_VERSION(major, minor) (((major) << 16) | (minor))
#define PSC_GDR_MIN_VERSION PSC_GDR_VERSION(2, 4) /* gdr_get_info_v2 */

/* X(field, exported symbol, return, (params), required) */
#define PSC_GDR_SYMBOLS(X)                                                                              \
    X(open, "gdr_open", psc_gdr_t, (void), 1)                                                           \
    X(close, "gdr_close", int, (psc_gdr_t), 1)                                                          \
    X(pin, "gdr_pin_buffer", int, (psc_gdr_t, unsigned long, size_t, uint64_t, uint32_t, psc_gdr_mh_t *), 1) \
    X(unpin, "gdr_unpin_buffer", int, (psc_gdr_t, psc_gdr_mh_t), 1)                                     \
    X(get_info, "gdr_get_info_v2", int, (psc_gdr_t, psc_gdr_mh_t, psc_gdr_info_t *), 1)                 \
    X(map, "gdr_map", int, (psc_gdr_t, psc_gdr_mh_t, void **, size_t), 1)                               \
    X(unmap, "gdr_unmap", int, (psc_gdr_t, psc_gdr_mh_t, void *, size_t), 1)                            \
    X(runtime_version, "gdr_runtime_get_version", void, (int *, int *), 1)                              \
    X(driver_version, "gdr_driver_get_version", int, (psc_gdr_t, int *, int *), 1)                      \
    X(callback_flag, "gdr_get_callback_flag", int, (psc_gdr_t, psc_gdr_mh_t, int *), 0)                 \
    X(get_attribute, "gdr_get_attribute", int, (psc_gdr_t, int, int *), 0)

#define PSC__GDR_FIELD(field, sym, ret, params, req) ret (*field) params;

typedef struct {
    void *handle;
    int version;    /* libgdrapi's, PSC_GDR_VERSION(major, minor) */
    char path[256]; /* P2PSCOPE_LIBGDRAPI, else "libgdrapi.so.2" */
    PSC_GDR_SYMBOLS(PSC__GDR_FIELD)
} psc_gdrapi_t;

/*
 * dlopen libgdrapi and resolve its entry points; PSC_OK, or
 * PSC_ERR_UNSUPPORTED with why (what is missing, the fix) and the table
 * closed.
 */
psc_status_t psc__gdrapi_load(psc_gdrapi_t *api, char *why, size_t len);
void psc__gdrapi_unload(psc_gdrapi_t *api);

/*
 * gdr_open, or NULL with why: no /dev/gdrdrv, it cannot be opened (errno),
 * or gdrdrv refused (versions), and that gdrcopy's dma-buf fallback did not
 * take over either.
 */
psc_gdr_t psc__gdrapi_open(const psc_gdrapi_t *api, char *why, size_t len);

/* "ENOMEM (Cannot allocate memory)" for an errno value gdrapi returned, into buf. */
const char *psc__gdr_errno_text(int err, char *buf, size_t len);

#endif
