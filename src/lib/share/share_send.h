/* psc_share_send / psc_share_recv over an application's Unix socket (share_send.c): what the tests reach too. */
#ifndef PSC_SHARE_SEND_H
#define PSC_SHARE_SEND_H

#include <sys/types.h>

#include "p2pscope.h"

#define PSC_SHARE_SOCK_MAX_TIMEOUT_MS 3600000 /* one hour */

/* psc_share_recv with the peer's expected user given: psc_share_recv passes geteuid(), a test another uid. */
/* psc_share_send likewise: the receiver's expected user given. */
psc_status_t psc__share_send_as(psc_context_t *ctx, int sock, const psc_share_msg_t *msg, int timeout_ms,
                                uid_t expect_uid);
psc_status_t psc__share_recv_as(psc_context_t *ctx, int sock, psc_share_msg_t *msg, int timeout_ms, uid_t expect_uid);

#endif
