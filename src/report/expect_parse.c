/* Expectation files (expect.h): the text into rules, every wrong line named with its number. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/p2pscope_private.h"
#include "report/expect.h"

#define PSC__EXPECT_MAX_FILE (1u << 20)
#define PSC__EXPECT_MAX_LINE 1024
#define PSC__EXPECT_MAX_TOKENS 8

static const char *const psc__kinds[PSC_EXPECT_KINDS] = {"bw", "lat", "coll", "node"};

static const struct {
    const char *name, *canon;
    double scale; /* in GB/s or ns */
    int time;
} psc__units[] = {
    {"GB/s", "GB/s", 1.0, 0}, {"MB/s", "MB/s", 1e-3, 0},
    {"ns", "ns", 1.0, 1},     {"us", "us", 1e3, 1}, {"\xc2\xb5s", "us", 1e3, 1}, {"ms", "ms", 1e6, 1},
};

/* The figures of each kind; a time figure takes time units, the others bandwidths. The first of a dimension is the default. */
static const struct {
    int kind;
    const char *name;
    int time;
} psc__figures[] = {
    {PSC_EXPECT_BW, "median", 0}, {PSC_EXPECT_BW, "min", 0},   {PSC_EXPECT_BW, "max", 0},
    {PSC_EXPECT_BW, "mean", 0},   {PSC_EXPECT_LAT, "p50", 1},  {PSC_EXPECT_LAT, "min", 1},
    {PSC_EXPECT_LAT, "p90", 1},   {PSC_EXPECT_LAT, "p99", 1},  {PSC_EXPECT_LAT, "max", 1},
    {PSC_EXPECT_LAT, "mean", 1},  {PSC_EXPECT_COLL, "busbw", 0}, {PSC_EXPECT_COLL, "algbw", 0},
    {PSC_EXPECT_COLL, "time", 1},
};

static const char *const psc__figure_lists[PSC_EXPECT_KINDS] = {
    "median (default), min, max, mean in GB/s or MB/s",
    "p50 (default), min, p90, p99, max, mean in ns, us or ms",
    "busbw (default for GB/s, MB/s), algbw, time (default for ns, us, ms)",
    "none (node FACT OP VALUE)",
};

void psc_expect_free(psc_expect_t *e)
{
    if (!e)
        return;
    free(e->rules);
    free(e);
}

/* "NAME:LINE: " then the message. */
static psc_status_t psc__bad(char *err, size_t errlen, const char *name, unsigned line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static psc_status_t psc__bad(char *err, size_t errlen, const char *name, unsigned line, const char *fmt, ...)
{
    va_list ap;
    int n = snprintf(err, errlen, "%s:%u: ", name, line);

    if (n >= 0 && (size_t)n < errlen) {
        va_start(ap, fmt);
        vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return PSC_ERR_INVALID;
}

static int psc__has_glob(const char *s)
{
    return strpbrk(s, "*?[") != NULL;
}

/* A finite number, the whole token: above 0, or from 0 with zero_ok. */
static int psc__number(const char *s, int zero_ok, double *out)
{
    char *end;
    double v;

    if (!isdigit((unsigned char)s[0]) && s[0] != '.')
        return -1;
    errno = 0;
    v = strtod(s, &end);
    if (errno || *end || !isfinite(v) || !(v > 0 || (zero_ok && v == 0)))
        return -1;
    *out = v;
    return 0;
}

/*
 * A case's size part written as the run names it (512M -> 512MiB); 0 when it is
 * a glob or was rewritten, -1 when it is neither a glob nor a size.
 */
static int psc__canon_size(char *kase, size_t cap, int kind)
{
    char *part = kase, *rest = NULL, tail[PSC_EXPECT_GLOB_LEN] = "", size[32];
    uint64_t bytes;

    if (kind == PSC_EXPECT_COLL) {
        rest = strchr(kase, '/');
    } else {
        part = strrchr(kase, '@');
        if (!part)
            return 0; /* no size given */
        part++;
    }
    if (rest) {
        snprintf(tail, sizeof(tail), "%s", rest);
        *rest = '\0';
    }
    if (psc__has_glob(part)) {
        if (rest)
            *rest = '/';
        return 0;
    }
    if (psc_size_parse(part, &bytes) != PSC_OK)
        return -1;
    psc_expect_size_name(bytes, size, sizeof(size));
    if ((size_t)(part - kase) + strlen(size) + strlen(tail) >= cap)
        return -1;
    snprintf(part, cap - (size_t)(part - kase), "%s%s", size, tail);
    return 0;
}

psc_status_t psc_expect_add(psc_expect_t *e, const psc_expect_rule_t *r)
{
    if (e->n == e->cap) {
        size_t cap = e->cap ? 2 * e->cap : 16;
        psc_expect_rule_t *grown = realloc(e->rules, cap * sizeof(*grown));

        if (!grown)
            return PSC_ERR_NO_MEMORY;
        e->rules = grown;
        e->cap = cap;
    }
    e->rules[e->n++] = *r;
    return PSC_OK;
}

/* "margin PCT%" or "margin PCT %". */
static psc_status_t psc__margin(char **tok, int ntok, const char *name, unsigned line, double *margin, char *err,
                                size_t errlen)
{
    char num[64];
    size_t len;
    double v;

    if (ntok == 3 && strcmp(tok[2], "%") == 0)
        snprintf(num, sizeof(num), "%s%%", tok[1]);
    else if (ntok == 2)
        snprintf(num, sizeof(num), "%s", tok[1]);
    else
        return psc__bad(err, errlen, name, line, "a margin line is 'margin PCT%%'; accepted e.g. margin 15%%");
    len = strlen(num);
    if (len < 2 || num[len - 1] != '%')
        return psc__bad(err, errlen, name, line, "margin '%s' has no '%%'; accepted a percentage from 0 to 99, e.g. "
                        "margin 15%%", tok[1]);
    num[len - 1] = '\0';
    if (psc__number(num, 1, &v) != 0 || v >= 100)
        return psc__bad(err, errlen, name, line, "bad margin '%s%%'; accepted a percentage from 0 to 99, e.g. "
                        "margin 15%%", num);
    *margin = v;
    return PSC_OK;
}

static psc_status_t psc__rule(char **tok, int ntok, const char *name, unsigned line, double margin,
                              psc_expect_rule_t *r, char *err, size_t errlen)
{
    int kind = -1, unit = -1, time, fig = -1;

    memset(r, 0, sizeof(*r));
    for (int k = 0; k < PSC_EXPECT_KINDS; k++)
        if (strcmp(tok[0], psc__kinds[k]) == 0)
            kind = k;
    if (kind < 0 || kind == PSC_EXPECT_NODE)
        return psc__bad(err, errlen, name, line, "unknown kind '%.40s'; accepted bw (bw and report), lat, coll, node "
                        "(check), or a 'margin PCT%%' line", tok[0]);
    if (ntok < 6 || ntok > 7)
        return psc__bad(err, errlen, name, line, "%d field%s; accepted KIND TEST CASE OP VALUE UNIT [FIGURE], e.g. "
                        "bw gpu_to_gpu_write_ce gpu0->gpu1 >= 350 GB/s", ntok, ntok == 1 ? "" : "s");
    r->kind = kind;
    if (strlen(tok[1]) >= sizeof(r->test) || strlen(tok[2]) >= sizeof(r->kase))
        return psc__bad(err, errlen, name, line, "test or case longer than %zu bytes; accepted a name or glob",
                        sizeof(r->test) - 1);
    snprintf(r->test, sizeof(r->test), "%s", tok[1]);
    snprintf(r->kase, sizeof(r->kase), "%s", tok[2]);
    if (psc__canon_size(r->kase, sizeof(r->kase), kind) != 0 ||
        (kind == PSC_EXPECT_COLL && !psc__has_glob(r->kase) && !isdigit((unsigned char)r->kase[0])))
        return psc__bad(err, errlen, name, line, "bad size in case '%.60s'; accepted %s", tok[2],
                        kind == PSC_EXPECT_COLL ? "a size or a glob, e.g. 512MiB, 512M, 1G, 512MiB/p2pscope, '*MiB'"
                                                : "PATH or PATH@SIZE, e.g. gpu0->gpu1, gpu0->gpu1@64MiB, '*'");
    if (strcmp(tok[3], ">=") == 0)
        r->op = PSC_EXPECT_GE;
    else if (strcmp(tok[3], "<=") == 0)
        r->op = PSC_EXPECT_LE;
    else
        return psc__bad(err, errlen, name, line, "bad bound '%.20s'; accepted >= or <=", tok[3]);
    if (psc__number(tok[4], 0, &r->value) != 0)
        return psc__bad(err, errlen, name, line, "bad value '%.40s'; accepted a number above 0, e.g. 350 or 3.5",
                        tok[4]);
    for (size_t u = 0; u < sizeof(psc__units) / sizeof(psc__units[0]); u++)
        if (strcmp(tok[5], psc__units[u].name) == 0)
            unit = (int)u;
    if (unit < 0)
        return psc__bad(err, errlen, name, line, "unknown unit '%.20s'; accepted GB/s, MB/s, ns, us, ms", tok[5]);
    time = psc__units[unit].time;
    for (size_t f = 0; f < sizeof(psc__figures) / sizeof(psc__figures[0]); f++) {
        if (psc__figures[f].kind != kind)
            continue;
        if (ntok == 7 ? strcmp(tok[6], psc__figures[f].name) == 0 : psc__figures[f].time == time) {
            fig = (int)f;
            break;
        }
    }
    if (fig < 0 && ntok == 7)
        return psc__bad(err, errlen, name, line, "unknown %s figure '%.20s'; accepted %s", psc__kinds[kind], tok[6],
                        psc__figure_lists[kind]);
    if (fig < 0)
        return psc__bad(err, errlen, name, line, "%s has no figure in %s; accepted %s", psc__kinds[kind], tok[5],
                        psc__figure_lists[kind]);
    if (psc__figures[fig].time != time)
        return psc__bad(err, errlen, name, line, "%s %s is a %s, not in %s; accepted %s", psc__kinds[kind],
                        psc__figures[fig].name, psc__figures[fig].time ? "time" : "bandwidth", tok[5],
                        psc__figure_lists[kind]);
    snprintf(r->figure, sizeof(r->figure), "%s", psc__figures[fig].name);
    snprintf(r->unit, sizeof(r->unit), "%s", psc__units[unit].canon);
    r->scale = psc__units[unit].scale;
    r->margin_pct = margin;
    r->bound = r->op == PSC_EXPECT_GE ? r->value * (1.0 - margin / 100.0) : r->value * (1.0 + margin / 100.0);
    snprintf(r->where, sizeof(r->where), "%.140s:%u", name, line);
    return PSC_OK;
}

psc_status_t psc_expect_parse(const char *text, size_t len, const char *name, psc_expect_t **out, char *err,
                              size_t errlen)
{
    psc_expect_t *e = calloc(1, sizeof(*e));
    double margin = 0;
    unsigned line = 0;
    size_t at = 0;
    psc_status_t st = PSC_OK;

    if (!e)
        return PSC_ERR_NO_MEMORY;
    if (!name)
        name = "(expectations)";
    while (st == PSC_OK && at < len) {
        const char *nl = memchr(text + at, '\n', len - at);
        size_t n = nl ? (size_t)(nl - (text + at)) : len - at;
        char buf[PSC__EXPECT_MAX_LINE + 1], *tok[PSC__EXPECT_MAX_TOKENS], *save = NULL, *p;
        int ntok = 0;

        line++;
        if (n > PSC__EXPECT_MAX_LINE) {
            st = psc__bad(err, errlen, name, line, "line longer than %d bytes; accepted one rule a line",
                          PSC__EXPECT_MAX_LINE);
            break;
        }
        if (memchr(text + at, '\0', n)) {
            st = psc__bad(err, errlen, name, line, "a NUL byte; accepted a text file of rules");
            break;
        }
        memcpy(buf, text + at, n);
        buf[n] = '\0';
        at += n + 1;
        if ((p = strchr(buf, '#')))
            *p = '\0';
        for (p = strtok_r(buf, " \t\r\v\f", &save); p; p = strtok_r(NULL, " \t\r\v\f", &save))
            if (ntok++ < PSC__EXPECT_MAX_TOKENS)
                tok[ntok - 1] = p; /* more are counted, for the message */
        if (ntok == 0)
            continue;
        if (strcmp(tok[0], "margin") == 0) {
            st = psc__margin(tok, ntok, name, line, &margin, err, errlen);
        } else {
            psc_expect_rule_t r;

            if (strcmp(tok[0], "node") == 0)
                st = psc_expect_node_rule(tok, ntok, name, line, &r, err, errlen);
            else
                st = psc__rule(tok, ntok, name, line, margin, &r, err, errlen);
            if (st == PSC_OK)
                st = psc_expect_add(e, &r);
        }
    }
    if (st != PSC_OK) {
        if (st == PSC_ERR_NO_MEMORY)
            snprintf(err, errlen, "out of host memory");
        psc_expect_free(e);
        return st;
    }
    *out = e;
    return PSC_OK;
}

psc_status_t psc_expect_load(const char *path, psc_expect_t **out, char *err, size_t errlen)
{
    char *text = NULL;
    size_t len = 0;
    psc_status_t st;

    st = psc_read_file_bounded(path, PSC__EXPECT_MAX_FILE, &text, &len, err, errlen);
    if (st != PSC_OK)
        return st;
    st = psc_expect_parse(text, len, path, out, err, errlen);
    free(text);
    return st;
}
