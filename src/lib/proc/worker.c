/*
 * The worker's side of a run (worker.h): its configuration from the environment or its arguments, and its
 * connection back to the parent with the handshake.
 */
#define _GNU_SOURCE
#include "proc/worker.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static psc_status_t psc__parse_int(const char *what, const char *s, int lo, int hi, int *out, psc_ipc_err_t *err)
{
    char *end = NULL;
    long v;

    errno = 0;
    v = s && *s ? strtol(s, &end, 10) : 0;
    if (!s || !*s || errno || *end || v < lo || v > hi)
        return psc__ipc_fail(err, PSC_ERR_INVALID, "%s \"%.40s\": accepted a whole number from %d to %d", what,
                             s ? s : "", lo, hi);
    *out = (int)v;
    return PSC_OK;
}

psc_status_t psc__ipc_worker_conf_parse(psc_ipc_worker_conf_t *conf, const char *path, const char *token_hex,
                                        const char *rank, const char *nranks, psc_ipc_err_t *err)
{
    psc_ipc_worker_conf_t c;
    psc_ipc_err_t why = {0};
    psc_status_t st;

    memset(&c, 0, sizeof(c));
    if (!path || path[0] != '/' || strlen(path) >= sizeof(c.path))
        return psc__ipc_fail(err, PSC_ERR_INVALID, "socket path \"%.60s\": accepted an absolute path of fewer than "
                             "%zu bytes", path ? path : "", sizeof(c.path));
    snprintf(c.path, sizeof(c.path), "%s", path);
    if (psc__ipc_token_parse(token_hex, &c.token, &why) != PSC_OK)
        return psc__ipc_fail(err, why.st, "%s", why.msg);
    st = psc__parse_int("worker count", nranks, 1, PSC_IPC_MAX_WORKERS, &c.nranks, err);
    if (st == PSC_OK)
        st = psc__parse_int("worker rank", rank, 0, c.nranks - 1, &c.rank, err);
    if (st != PSC_OK)
        return st;
    *conf = c;
    return PSC_OK;
}

psc_status_t psc__ipc_rendezvous_format(const char *path, const psc_ipc_token_t *token, int nranks, char *out,
                                        size_t cap, psc_ipc_err_t *err)
{
    char hex[PSC_IPC_TOKEN_HEX];
    int n;

    psc__ipc_token_format(token, hex);
    n = snprintf(out, cap, "%s%d %s %s", PSC_IPC_RENDEZVOUS_TAG, nranks, hex, path);
    if (n < 0 || (size_t)n >= cap)
        return psc__ipc_fail(err, PSC_ERR_INVALID, "the rendezvous for %.60s needs %d bytes: accepted %zu", path,
                             n + 1, cap);
    return PSC_OK;
}

psc_status_t psc__ipc_worker_conf_rendezvous(psc_ipc_worker_conf_t *conf, const char *rendezvous, int rank,
                                             psc_ipc_err_t *err)
{
    char nranks[16], hex[PSC_IPC_TOKEN_HEX], rank_s[16];
    const char *p = rendezvous, *sp;
    psc_ipc_err_t why = {0};
    size_t tag = strlen(PSC_IPC_RENDEZVOUS_TAG);

    /* Never echoed past its tag: the rest holds the run's token. */
    if (!p || strncmp(p, PSC_IPC_RENDEZVOUS_TAG, tag) != 0)
        return psc__ipc_fail(err, PSC_ERR_INVALID, "a rendezvous starting \"%.*s\": accepted the text psc_ipc_run "
                             "handed its publish callback (\"%sNRANKS TOKEN PATH\")", p ? (int)tag : 0, p ? p : "",
                             PSC_IPC_RENDEZVOUS_TAG);
    p += tag;
    if (!(sp = strchr(p, ' ')) || (size_t)(sp - p) >= sizeof(nranks))
        return psc__ipc_fail(err, PSC_ERR_INVALID, "a rendezvous without its worker count: accepted \"%sNRANKS "
                             "TOKEN PATH\"", PSC_IPC_RENDEZVOUS_TAG);
    memcpy(nranks, p, (size_t)(sp - p));
    nranks[sp - p] = '\0';
    p = sp + 1;
    if (!(sp = strchr(p, ' ')) || (size_t)(sp - p) >= sizeof(hex))
        return psc__ipc_fail(err, PSC_ERR_INVALID, "a rendezvous without its token: accepted \"%sNRANKS TOKEN "
                             "PATH\"", PSC_IPC_RENDEZVOUS_TAG);
    memcpy(hex, p, (size_t)(sp - p));
    hex[sp - p] = '\0';
    snprintf(rank_s, sizeof(rank_s), "%d", rank);
    if (psc__ipc_worker_conf_parse(conf, sp + 1, hex, rank_s, nranks, &why) != PSC_OK)
        return psc__ipc_fail(err, why.st, "the rendezvous: %s", why.msg);
    return PSC_OK;
}

psc_status_t psc__ipc_worker_conf_env(psc_ipc_worker_conf_t *conf, psc_ipc_err_t *err)
{
    static const char *const vars[4] = {PSC_IPC_ENV_SOCKET, PSC_IPC_ENV_TOKEN, PSC_IPC_ENV_RANK,
                                        PSC_IPC_ENV_NRANKS};
    const char *v[4];
    psc_ipc_err_t why = {0};

    for (int i = 0; i < 4; i++)
        if (!(v[i] = getenv(vars[i])))
            return psc__ipc_fail(err, PSC_ERR_INVALID, "%s is not set: a worker is started by its run, which sets "
                                 "%s, %s, %s and %s", vars[i], vars[0], vars[1], vars[2], vars[3]);
    if (psc__ipc_worker_conf_parse(conf, v[0], v[1], v[2], v[3], &why) != PSC_OK)
        return psc__ipc_fail(err, why.st, "the run's environment: %s", why.msg);
    return PSC_OK;
}

psc_status_t psc__ipc_worker_connect(const psc_ipc_worker_conf_t *conf, int64_t deadline, psc_ipc_chan_t **out,
                                     psc_ipc_err_t *err)
{
    int nranks = 0;
    psc_ipc_chan_t *c = NULL;
    psc_status_t st = psc__ipc_connect(conf->path, &conf->token, conf->rank, deadline, &c, &nranks, err);

    if (st != PSC_OK)
        return st;
    if (nranks != conf->nranks) {
        psc__ipc_chan_close(c);
        return psc__ipc_fail(err, PSC_ERR_INVALID, "the parent runs %d workers: this worker was told %d", nranks,
                             conf->nranks);
    }
    *out = c;
    return PSC_OK;
}
