#define _GNU_SOURCE
#include "proc/message.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

/* What each type may carry: payload bounds, descriptors, flags bits the receiver accepts. */
typedef struct {
    const char *name;
    uint32_t min_len, max_len;
    int nfds;
    uint32_t flags_ok;
} psc__type_row_t;

static const psc__type_row_t psc__types[] = {
    [PSC_IPC_HELLO] = {"HELLO", PSC_IPC_TOKEN_SIZE + 8, PSC_IPC_TOKEN_SIZE + 8, 0, 0},
    [PSC_IPC_WELCOME] = {"WELCOME", 8, 8, 0, 0},
    [PSC_IPC_READY] = {"READY", 0, 0, 0, 0},
    [PSC_IPC_REQUEST] = {"REQUEST", 0, PSC_IPC_MAX_PAYLOAD, 0, UINT32_MAX},
    [PSC_IPC_REPLY] = {"REPLY", 0, PSC_IPC_MAX_PAYLOAD, 0, UINT32_MAX},
    [PSC_IPC_FD] = {"FD", 0, PSC_IPC_MAX_PAYLOAD, 1, UINT32_MAX},
    [PSC_IPC_ERROR] = {"ERROR", 1, PSC_IPC_MAX_ERROR_TEXT, 0, 0},
    [PSC_IPC_BYE] = {"BYE", 0, 0, 0, 0},
    [PSC_IPC_SHARE] = {"SHARE", PSC_SHARE_MSG_LEN, PSC_SHARE_MSG_LEN, 0, 0},
    [PSC_IPC_SHARE_FD] = {"SHARE_FD", PSC_SHARE_MSG_LEN, PSC_SHARE_MSG_LEN, 1, 0},
};
#define PSC__NTYPES (sizeof(psc__types) / sizeof(psc__types[0]))

psc_status_t psc__ipc_fail(psc_ipc_err_t *err, psc_status_t st, const char *fmt, ...)
{
    va_list ap;

    if (!err)
        return st;
    err->st = st;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    return st;
}

static const psc__type_row_t *psc__row(unsigned type)
{
    return type < PSC__NTYPES && psc__types[type].name ? &psc__types[type] : NULL;
}

const char *psc__ipc_type_name(unsigned type)
{
    const psc__type_row_t *r = psc__row(type);

    return r ? r->name : "unknown";
}

int psc__ipc_type_fds(unsigned type)
{
    const psc__type_row_t *r = psc__row(type);

    return r ? r->nfds : -1;
}

void psc__ipc_put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

uint32_t psc__ipc_get_u32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void psc__put_u16(unsigned char *p, uint16_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}

static void psc__put_u64(unsigned char *p, uint64_t v)
{
    psc__ipc_put_u32(p, (uint32_t)v);
    psc__ipc_put_u32(p + 4, (uint32_t)(v >> 32));
}

void psc__ipc_header_encode(const psc_ipc_header_t *h, unsigned char out[PSC_IPC_HEADER_SIZE])
{
    psc__ipc_put_u32(out, h->magic);
    psc__put_u16(out + 4, h->version);
    psc__put_u16(out + 6, h->type);
    psc__ipc_put_u32(out + 8, h->flags);
    psc__ipc_put_u32(out + 12, h->len);
    psc__put_u64(out + 16, h->seq);
}

psc_status_t psc__ipc_header_decode(const unsigned char raw[PSC_IPC_HEADER_SIZE], uint64_t expect_seq,
                                    psc_ipc_header_t *h, psc_ipc_err_t *err)
{
    psc_ipc_header_t d;
    const psc__type_row_t *r;

    d.magic = psc__ipc_get_u32(raw);
    d.version = (uint16_t)(raw[4] | raw[5] << 8);
    d.type = (uint16_t)(raw[6] | raw[7] << 8);
    d.flags = psc__ipc_get_u32(raw + 8);
    d.len = psc__ipc_get_u32(raw + 12);
    d.seq = (uint64_t)psc__ipc_get_u32(raw + 16) | (uint64_t)psc__ipc_get_u32(raw + 20) << 32;
    if (d.magic != PSC_IPC_MAGIC)
        return psc__ipc_fail(err, PSC_ERR_INVALID, "bad magic 0x%08x: accepted 0x%08x (\"PSCI\")",
                             (unsigned)d.magic, PSC_IPC_MAGIC);
    if (d.version != PSC_IPC_VERSION)
        return psc__ipc_fail(err, PSC_ERR_INVALID, "protocol version %u: accepted %u", (unsigned)d.version,
                             PSC_IPC_VERSION);
    r = psc__row(d.type);
    if (!r)
        return psc__ipc_fail(err, PSC_ERR_INVALID, "unknown message type %u: accepted 1 to %u",
                             (unsigned)d.type, (unsigned)PSC__NTYPES - 1);
    if (d.flags & ~r->flags_ok)
        return psc__ipc_fail(err, PSC_ERR_INVALID, "%s with flags 0x%x: accepted 0x%x", r->name,
                             (unsigned)d.flags, (unsigned)r->flags_ok);
    if (d.len < r->min_len || d.len > r->max_len) {
        if (r->min_len == r->max_len)
            return psc__ipc_fail(err, PSC_ERR_INVALID, "%s with a payload of %u bytes: accepted exactly %u",
                                 r->name, (unsigned)d.len, (unsigned)r->min_len);
        return psc__ipc_fail(err, PSC_ERR_INVALID, "%s with a payload of %u bytes: accepted %u to %u", r->name,
                             (unsigned)d.len, (unsigned)r->min_len, (unsigned)r->max_len);
    }
    if (d.seq != expect_seq)
        return psc__ipc_fail(err, PSC_ERR_INVALID, "%s with sequence number %llu: accepted %llu (the next in order)",
                             r->name, (unsigned long long)d.seq, (unsigned long long)expect_seq);
    *h = d;
    return PSC_OK;
}

psc_status_t psc__ipc_frame_check(const psc_ipc_header_t *h, const unsigned char *payload, int nfds,
                                  psc_ipc_err_t *err)
{
    const psc__type_row_t *r = psc__row(h->type);

    if (!r)
        return psc__ipc_fail(err, PSC_ERR_INVALID, "unknown message type %u", (unsigned)h->type);
    if (nfds != r->nfds)
        return psc__ipc_fail(err, PSC_ERR_INVALID, "%s with %d file descriptor%s: accepted exactly %d", r->name,
                             nfds, nfds == 1 ? "" : "s", r->nfds);
    switch (h->type) {
    case PSC_IPC_HELLO:
        if (psc__ipc_get_u32(payload + PSC_IPC_TOKEN_SIZE + 4) != 0)
            return psc__ipc_fail(err, PSC_ERR_INVALID, "HELLO with reserved word 0x%x: accepted 0",
                                 (unsigned)psc__ipc_get_u32(payload + PSC_IPC_TOKEN_SIZE + 4));
        break;
    case PSC_IPC_WELCOME:
        if (psc__ipc_get_u32(payload) >= psc__ipc_get_u32(payload + 4))
            return psc__ipc_fail(err, PSC_ERR_INVALID, "WELCOME for rank %u of %u: accepted a rank below the count",
                                 (unsigned)psc__ipc_get_u32(payload), (unsigned)psc__ipc_get_u32(payload + 4));
        break;
    case PSC_IPC_ERROR:
        if (memchr(payload, 0, h->len))
            return psc__ipc_fail(err, PSC_ERR_INVALID, "ERROR text with a NUL byte: accepted text without one");
        break;
    default:
        break;
    }
    return PSC_OK;
}

psc_status_t psc__ipc_token_make(psc_ipc_token_t *tok, psc_ipc_err_t *err)
{
    unsigned char b[PSC_IPC_TOKEN_SIZE];
    size_t got = 0;

    while (got < sizeof(b)) {
        ssize_t n = getrandom(b + got, sizeof(b) - got, 0);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return psc__ipc_fail(err, PSC_ERR_IO, "getrandom: %s: the run token needs the kernel's random bytes",
                                 n < 0 ? strerror(errno) : "no bytes");
        got += (size_t)n;
    }
    memcpy(tok->b, b, sizeof(b));
    return PSC_OK;
}

void psc__ipc_token_format(const psc_ipc_token_t *tok, char out[PSC_IPC_TOKEN_HEX])
{
    static const char hex[] = "0123456789abcdef";

    for (int i = 0; i < PSC_IPC_TOKEN_SIZE; i++) {
        out[2 * i] = hex[tok->b[i] >> 4];
        out[2 * i + 1] = hex[tok->b[i] & 15];
    }
    out[2 * PSC_IPC_TOKEN_SIZE] = '\0';
}

static int psc__hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

psc_status_t psc__ipc_token_parse(const char *hex, psc_ipc_token_t *tok, psc_ipc_err_t *err)
{
    psc_ipc_token_t t;
    size_t n = hex ? strnlen(hex, PSC_IPC_TOKEN_HEX) : 0;

    if (n != 2 * PSC_IPC_TOKEN_SIZE)
        return psc__ipc_fail(err, PSC_ERR_INVALID, "a run token of %s%zu characters: accepted exactly %d hex digits",
                             n >= PSC_IPC_TOKEN_HEX ? "more than " : "", n >= PSC_IPC_TOKEN_HEX ? n - 1 : n,
                             2 * PSC_IPC_TOKEN_SIZE);
    for (int i = 0; i < PSC_IPC_TOKEN_SIZE; i++) {
        int hi = psc__hex_digit(hex[2 * i]), lo = psc__hex_digit(hex[2 * i + 1]);

        if (hi < 0 || lo < 0)
            return psc__ipc_fail(err, PSC_ERR_INVALID, "a run token with a character other than a hex digit at %d: "
                                 "accepted 0-9, a-f, A-F", hi < 0 ? 2 * i : 2 * i + 1);
        t.b[i] = (unsigned char)(hi << 4 | lo);
    }
    *tok = t;
    return PSC_OK;
}

int psc__ipc_token_equal(const unsigned char *a, const unsigned char *b)
{
    volatile unsigned char diff = 0;

    for (int i = 0; i < PSC_IPC_TOKEN_SIZE; i++)
        diff |= (unsigned char)(a[i] ^ b[i]);
    return diff == 0;
}

int64_t psc__ipc_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t psc__ipc_deadline(int64_t ms)
{
    return psc__ipc_now() + (ms > 0 ? ms * 1000000 : 0);
}
