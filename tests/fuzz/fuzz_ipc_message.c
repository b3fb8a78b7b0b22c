/*
 * Fuzz the process plumbing's reader of frames another process sends (src/lib/proc):
 * the header and payload checks on their own, then the same bytes through a
 * real channel (a socketpair), read frame after frame until the first refusal
 * or the end. A refusal is one line; nothing may crash or leak.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fuzz_util.h"
#include "proc/channel.h"

static void psc__one_line(const psc_ipc_err_t *e)
{
    if (strchr(e->msg, '\n'))
        abort();
}

/* The checks alone: frame after frame, each with the descriptors its type carries. */
static void psc__checks(const uint8_t *data, size_t size)
{
    uint64_t seq = 0;

    for (size_t off = 0; off + PSC_IPC_HEADER_SIZE <= size; seq++) {
        psc_ipc_header_t h;
        psc_ipc_err_t e = {0};

        uint64_t claimed = psc__ipc_get_u32(data + off + 16) | (uint64_t)psc__ipc_get_u32(data + off + 20) << 32;

        if (psc__ipc_header_decode(data + off, seq, &h, &e) != PSC_OK) {
            psc__one_line(&e);
            /* The same header at the sequence number it claims, so later frames are reached too. */
            if (psc__ipc_header_decode(data + off, claimed, &h, &e) != PSC_OK)
                return;
        }
        off += PSC_IPC_HEADER_SIZE;
        if (h.len > size - off)
            return;
        if (psc__ipc_frame_check(&h, data + off, psc__ipc_type_fds(h.type), &e) != PSC_OK)
            psc__one_line(&e);
        off += h.len;
        seq = h.seq;
    }
}

/* The reader itself, over a socket: short reads, EOF mid-frame, sequence numbers. */
static void psc__channel(const uint8_t *data, size_t size)
{
    psc_ipc_chan_t *c = NULL;
    int sv[2];

    if (size > 60000)
        size = 60000; /* within one socket buffer: written at once, then the end */
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        abort();
    if (size && write(sv[1], data, size) != (ssize_t)size)
        abort();
    close(sv[1]);
    if (psc__ipc_chan_wrap(sv[0], "the fuzzer", &c, NULL) != PSC_OK)
        abort();
    for (;;) {
        psc_ipc_msg_t m;
        psc_ipc_err_t e = {0};

        if (psc__ipc_recv(c, &m, psc__ipc_deadline(1000), &e) != PSC_OK) {
            psc__one_line(&e);
            if (e.st == PSC_ERR_TIMEOUT)
                abort(); /* the end was written: a wait is a hang */
            break;
        }
        if (m.nfds != 0 || m.len > PSC_IPC_MAX_PAYLOAD)
            abort();
    }
    psc__ipc_chan_close(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    psc__checks(data, size);
    psc__channel(data, size);
    return 0;
}
