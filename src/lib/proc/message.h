/*
 * The wire format between the processes of one run, and the checks a received
 * frame must pass: pure code, no socket (tests/fuzz/fuzz_ipc_message.c feeds
 * it bytes). Also the run token and the one-line error record of the ipc layer.
 *
 * A frame: a 24-byte header, then `len` payload bytes, with the type's exact
 * number of descriptors attached (SCM_RIGHTS) to its first byte. Header fields,
 * little-endian: magic u32 "PSCI", version u16, type u16, flags u32, len u32,
 * seq u64 (0, 1, 2, ... in each direction of a connection).
 */
#ifndef PSC_PROC_MESSAGE_H
#define PSC_PROC_MESSAGE_H

#include <stddef.h>
#include <stdint.h>

#include "p2pscope/bench.h"

#define PSC_IPC_MAGIC 0x49435350u /* "PSCI" as little-endian bytes */
#define PSC_IPC_VERSION 1u
#define PSC_IPC_HEADER_SIZE 24u
#define PSC_IPC_MAX_PAYLOAD 65536u
#define PSC_IPC_MAX_FDS 4 /* the most descriptors any type carries */
#define PSC_IPC_MAX_ERROR_TEXT 1024u
#define PSC_IPC_TOKEN_SIZE 16
#define PSC_IPC_TOKEN_HEX (2 * PSC_IPC_TOKEN_SIZE + 1)

/*
 * Message types. To add one: a value here (never reuse a number), a row in
 * message.c's table (name, payload bounds, descriptors, flags it accepts).
 */
typedef enum {
    PSC_IPC_HELLO = 1,   /* worker -> parent, first: token[16], rank u32, reserved u32 (0) */
    PSC_IPC_WELCOME = 2, /* parent -> worker, answer to an accepted HELLO: rank u32, nranks u32 */
    PSC_IPC_READY = 3,   /* either way, no payload */
    PSC_IPC_REQUEST = 4, /* either way, opaque payload (the caller's), flags the caller's */
    PSC_IPC_REPLY = 5,   /* either way, opaque payload, flags the caller's */
    PSC_IPC_FD = 6,      /* either way, opaque payload and exactly one descriptor, flags the caller's */
    PSC_IPC_ERROR = 7,   /* either way, 1..PSC_IPC_MAX_ERROR_TEXT bytes of text: why the sender gives up */
    PSC_IPC_BYE = 8,     /* either way, no payload: the run ends normally */
    PSC_IPC_SHARE = 9,   /* either way, a psc_share_msg_t's bytes (PSC_SHARE_MSG_LEN), no descriptor */
    PSC_IPC_SHARE_FD = 10, /* either way, a psc_share_msg_t's bytes and its descriptor (PSC_SHARE_VMM_FD) */
} psc_ipc_type_t;

/* What went wrong in the ipc layer, for callers with no context (a worker); copy msg into psc__fail where one is. */
typedef struct {
    psc_status_t st; /* PSC_OK until a call fails */
    char msg[320];   /* one line: what was wrong, what is accepted */
} psc_ipc_err_t;

/* Record a failure in err (NULL: nothing recorded); returns st. */
psc_status_t psc__ipc_fail(psc_ipc_err_t *err, psc_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

typedef struct {
    uint32_t magic;
    uint16_t version;
    uint16_t type;
    uint32_t flags;
    uint32_t len;
    uint64_t seq;
} psc_ipc_header_t;

/* "HELLO", ... or "unknown" for a type no row describes. */
const char *psc__ipc_type_name(unsigned type);

/* The number of descriptors a known type carries; -1 for an unknown one. */
int psc__ipc_type_fds(unsigned type);

void psc__ipc_header_encode(const psc_ipc_header_t *h, unsigned char out[PSC_IPC_HEADER_SIZE]);

/*
 * Decode and check a received header: magic, version, a known type, flags
 * that type accepts, a length within its bounds, and seq == expect_seq.
 * PSC_ERR_INVALID with the reason in err when one is wrong; *h written only on success.
 */
psc_status_t psc__ipc_header_decode(const unsigned char raw[PSC_IPC_HEADER_SIZE], uint64_t expect_seq,
                                    psc_ipc_header_t *h, psc_ipc_err_t *err);

/*
 * Check a whole frame as received: the payload's own fields where the type
 * fixes them (HELLO's reserved word, WELCOME's rank below nranks, ERROR's
 * text without NUL) and that nfds descriptors came with it. PSC_ERR_INVALID else.
 */
psc_status_t psc__ipc_frame_check(const psc_ipc_header_t *h, const unsigned char *payload, int nfds,
                                  psc_ipc_err_t *err);

/* Little-endian fields of payloads. */
void psc__ipc_put_u32(unsigned char *p, uint32_t v);
uint32_t psc__ipc_get_u32(const unsigned char *p);

/* The run token: 16 random bytes made by the parent, given to each worker. */
typedef struct {
    unsigned char b[PSC_IPC_TOKEN_SIZE];
} psc_ipc_token_t;

/* Fresh random bytes (getrandom). */
psc_status_t psc__ipc_token_make(psc_ipc_token_t *tok, psc_ipc_err_t *err);

/* 32 lowercase hex digits and a NUL. */
void psc__ipc_token_format(const psc_ipc_token_t *tok, char out[PSC_IPC_TOKEN_HEX]);

/* Exactly 32 hex digits (either case); PSC_ERR_INVALID else, *tok written only on success. */
psc_status_t psc__ipc_token_parse(const char *hex, psc_ipc_token_t *tok, psc_ipc_err_t *err);

/* 1 when equal; the time taken does not depend on where they differ. */
int psc__ipc_token_equal(const unsigned char *a, const unsigned char *b);

/* Deadlines: CLOCK_MONOTONIC in nanoseconds, and now + ms (ms < 0: now). */
int64_t psc__ipc_now(void);
int64_t psc__ipc_deadline(int64_t ms);

#endif
