/*
 * The private interface's calls (p2pscope_private.h) that are not the
 * utilities' own definitions: each hands over to the internal that does the
 * work, so the tool and the report writers name a declared interface while
 * the internals keep their place and name (and may move, as issue 33 moves
 * them) without the tool following.
 */
#include "p2pscope_private.h"

#include "topo/gpumap_facts.h"
#include "driver/nccl.h"
#include "lat/chase_seq.h"
#include "test_hooks.h"
#include "util/json.h"
#include "util/safe_read.h"
#include "util/size_name.h"
#include "util/utf8.h"

const char *psc_size_name(uint64_t bytes, const char *sep, char *buf, size_t len)
{
    return psc__size_name(bytes, sep, buf, len);
}

int psc_write_all(int fd, const char *p, size_t len)
{
    return psc__write_all(fd, p, len);
}

psc_status_t psc_read_file_bounded(const char *path, size_t max, char **out, size_t *len, char *errbuf, size_t errlen)
{
    return psc__safe_read_file(NULL, path, max, out, len, errbuf, errlen);
}

size_t psc_utf8_seq(const unsigned char *s, size_t n)
{
    return psc__utf8_seq(s, n);
}

struct json_t *psc_json_text(const char *s, size_t max)
{
    return psc__json_text(s, max);
}

void psc_json_set(struct json_t *o, const char *key, struct json_t *v, int *bad)
{
    psc__json_set(o, key, v, bad);
}

void psc_json_push(struct json_t *a, struct json_t *v, int *bad)
{
    psc__json_push(a, v, bad);
}

struct json_t *psc_json_u64(uint64_t x)
{
    return psc__json_u64(x);
}

const char *psc_gpumap_label(const psc_gpumap_facts_t *g, char *buf, size_t len)
{
    return psc__gpumap_label(g, buf, len);
}

const char *psc_nccl_version_string(int code, char *buf, size_t len)
{
    return psc__nccl_version_string(code, buf, len);
}

int psc_lat_chase_is_sequential(const psc_lat_test_info_t *ti)
{
    return psc__lat_chase_is_sequential(ti);
}

void psc_test_hooks_default(psc_test_hooks_t *h)
{
    psc__test_hooks_default(h);
}

psc_status_t psc_test_hooks_set(psc_context_t *ctx, const psc_test_hooks_t *h)
{
    return psc__test_hooks_set(ctx, h);
}
