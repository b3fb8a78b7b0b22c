#include "share/share_msg.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* The layout: offsets of each field; everything past PSC_SHARE_OFF_END is reserved and zero. */
#define PSC_SHARE_MAGIC 0x31435350u /* "PSC1" */
#define PSC_SHARE_VERSION 1u
#define PSC_SHARE_OFF_MAGIC 0
#define PSC_SHARE_OFF_VERSION 4
#define PSC_SHARE_OFF_KIND 6
#define PSC_SHARE_OFF_SIZE 8
#define PSC_SHARE_OFF_ALLOC 16
#define PSC_SHARE_OFF_PID 24
#define PSC_SHARE_OFF_FLAGS 28
#define PSC_SHARE_OFF_UUID 32
#define PSC_SHARE_OFF_HANDLE (PSC_SHARE_OFF_UUID + PSC_SHARE_UUID_LEN)
#define PSC_SHARE_OFF_END (PSC_SHARE_OFF_HANDLE + PSC_SHARE_HANDLE_LEN)

_Static_assert(PSC_SHARE_OFF_END <= PSC_SHARE_MSG_LEN, "the message layout must fit PSC_SHARE_MSG_LEN");

static void psc__put(unsigned char *b, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        b[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t psc__get(const unsigned char *b, int n)
{
    uint64_t v = 0;

    for (int i = 0; i < n; i++)
        v |= (uint64_t)b[i] << (8 * i);
    return v;
}

void psc__share_msg_encode(const psc_share_hdr_t *h, unsigned char bytes[PSC_SHARE_MSG_LEN])
{
    memset(bytes, 0, PSC_SHARE_MSG_LEN);
    psc__put(bytes + PSC_SHARE_OFF_MAGIC, PSC_SHARE_MAGIC, 4);
    psc__put(bytes + PSC_SHARE_OFF_VERSION, PSC_SHARE_VERSION, 2);
    psc__put(bytes + PSC_SHARE_OFF_KIND, (uint64_t)h->kind, 2);
    psc__put(bytes + PSC_SHARE_OFF_SIZE, h->size, 8);
    psc__put(bytes + PSC_SHARE_OFF_ALLOC, h->alloc_size, 8);
    psc__put(bytes + PSC_SHARE_OFF_PID, h->pid, 4);
    memcpy(bytes + PSC_SHARE_OFF_UUID, h->uuid, strnlen(h->uuid, PSC_SHARE_UUID_LEN - 1));
    memcpy(bytes + PSC_SHARE_OFF_HANDLE, h->handle, PSC_SHARE_HANDLE_LEN);
}

static psc_status_t psc__bad(char *why, size_t len, const char *fmt, ...)
{
    va_list ap;

    if (why && len) {
        int n = snprintf(why, len, "shared-memory message: ");

        va_start(ap, fmt);
        if (n > 0 && (size_t)n < len)
            vsnprintf(why + n, len - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return PSC_ERR_INVALID;
}

static int psc__all_zero(const unsigned char *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (b[i])
            return 0;
    return 1;
}

/* A UUID as the driver spells it: "GPU-" or "MIG-", then hex digits and dashes, NUL-terminated, NUL-padded. */
static int psc__uuid_ok(const unsigned char *u)
{
    size_t n = 0;

    while (n < PSC_SHARE_UUID_LEN && u[n])
        n++;
    if (n < 5 || n == PSC_SHARE_UUID_LEN || !psc__all_zero(u + n, PSC_SHARE_UUID_LEN - n))
        return 0;
    if (memcmp(u, "GPU-", 4) != 0 && memcmp(u, "MIG-", 4) != 0)
        return 0;
    for (size_t i = 4; i < n; i++)
        if (!((u[i] >= '0' && u[i] <= '9') || (u[i] >= 'a' && u[i] <= 'f') || (u[i] >= 'A' && u[i] <= 'F') ||
              u[i] == '-'))
            return 0;
    return 1;
}

psc_status_t psc__share_msg_decode(const unsigned char bytes[PSC_SHARE_MSG_LEN], int fd, psc_share_hdr_t *h, char *why,
                                   size_t len)
{
    uint64_t magic = psc__get(bytes + PSC_SHARE_OFF_MAGIC, 4), version = psc__get(bytes + PSC_SHARE_OFF_VERSION, 2);
    uint64_t kind = psc__get(bytes + PSC_SHARE_OFF_KIND, 2), size = psc__get(bytes + PSC_SHARE_OFF_SIZE, 8);
    uint64_t alloc = psc__get(bytes + PSC_SHARE_OFF_ALLOC, 8), pid = psc__get(bytes + PSC_SHARE_OFF_PID, 4);
    const unsigned char *handle = bytes + PSC_SHARE_OFF_HANDLE;
    int memory = kind != PSC_SHARE_EVENT;

    if (magic != PSC_SHARE_MAGIC)
        return psc__bad(why, len, "magic 0x%08llx: not a p2pscope message (accepted 0x%08x)", (unsigned long long)magic,
                        PSC_SHARE_MAGIC);
    if (version != PSC_SHARE_VERSION)
        return psc__bad(why, len, "version %llu: accepted %u (both processes must run the same p2pscope)",
                        (unsigned long long)version, PSC_SHARE_VERSION);
    if (kind < PSC_SHARE_LEGACY || kind > PSC_SHARE_EVENT)
        return psc__bad(why, len, "kind %llu: accepted %d to %d", (unsigned long long)kind, PSC_SHARE_LEGACY,
                        PSC_SHARE_EVENT);
    if (psc__get(bytes + PSC_SHARE_OFF_FLAGS, 4) != 0 ||
        !psc__all_zero(bytes + PSC_SHARE_OFF_END, PSC_SHARE_MSG_LEN - PSC_SHARE_OFF_END))
        return psc__bad(why, len, "reserved bytes set: accepted zeros");
    if (memory && (size < 1 || size > alloc || alloc > PSC_SHARE_MAX_BYTES))
        return psc__bad(why, len, "size %llu of %llu allocated: accepted 1 B to the allocation, at most 1 TiB",
                        (unsigned long long)size, (unsigned long long)alloc);
    if (!memory && (size || alloc))
        return psc__bad(why, len, "an event with a size (%llu): accepted 0", (unsigned long long)size);
    if (pid < 1 || pid > 0x7fffffffu)
        return psc__bad(why, len, "process id %llu: accepted 1 to 2^31-1", (unsigned long long)pid);
    if (!psc__uuid_ok(bytes + PSC_SHARE_OFF_UUID))
        return psc__bad(why, len, "the GPU's UUID is malformed: accepted \"GPU-\" or \"MIG-\" and hex digits");
    if ((kind == PSC_SHARE_VMM_FD) != (fd >= 0))
        return psc__bad(why, len, "%s: accepted a file descriptor with VMM_FD messages only",
                        fd >= 0 ? "a file descriptor came with it" : "no file descriptor came with it");
    if ((kind == PSC_SHARE_VMM_FD) != psc__all_zero(handle, PSC_SHARE_HANDLE_LEN))
        return psc__bad(why, len, "%s: accepted a handle with LEGACY, VMM_FABRIC and EVENT messages only",
                        kind == PSC_SHARE_VMM_FD ? "handle bytes set" : "no handle");
    memset(h, 0, sizeof(*h));
    h->kind = (psc_share_kind_t)kind;
    h->size = size;
    h->alloc_size = alloc;
    h->pid = (uint32_t)pid;
    memcpy(h->uuid, bytes + PSC_SHARE_OFF_UUID, PSC_SHARE_UUID_LEN);
    memcpy(h->handle, handle, PSC_SHARE_HANDLE_LEN);
    return PSC_OK;
}
