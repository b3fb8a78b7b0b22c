/*
 * The bytes of a psc_share_msg_t: a fixed little-endian layout that another
 * process (trusted by nobody) wrote. The decoder checks every field, so the
 * rest of the library only ever sees a message that makes sense.
 */
#ifndef PSC_SHARE_MSG_H
#define PSC_SHARE_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "p2pscope.h"

#define PSC_SHARE_HANDLE_LEN 64  /* CUipcMemHandle, CUipcEventHandle, CUmemFabricHandle */
#define PSC_SHARE_UUID_LEN 48
#define PSC_SHARE_MAX_BYTES (1ull << 40)

typedef struct {
    psc_share_kind_t kind;
    uint64_t size;       /* bytes usable; 0 for an event */
    uint64_t alloc_size; /* bytes allocated and mapped (VMM: a multiple of the granularity); 0 for an event */
    uint32_t pid;        /* the exporting process */
    char uuid[PSC_SHARE_UUID_LEN];              /* the exporting GPU's, "GPU-..." */
    unsigned char handle[PSC_SHARE_HANDLE_LEN]; /* all zero for PSC_SHARE_VMM_FD */
} psc_share_hdr_t;

/* The message's bytes for h (fd set apart by the caller). */
void psc__share_msg_encode(const psc_share_hdr_t *h, unsigned char bytes[PSC_SHARE_MSG_LEN]);

/*
 * Check and read a message; fd is the descriptor that came with it (-1 none).
 * PSC_OK, or PSC_ERR_INVALID with one line in why: what was wrong, what is accepted.
 */
psc_status_t psc__share_msg_decode(const unsigned char bytes[PSC_SHARE_MSG_LEN], int fd, psc_share_hdr_t *h, char *why,
                                   size_t len);

#endif
