/*
 * A JSON run read back for compare: read safely (a regular file, bounded),
 * parsed, every field compare uses checked for type and order, and flattened
 * into cases. Whatever is wrong is one line naming the file and the field.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/p2pscope_private.h"
#include "report/compare.h"
#include "report/run_read.h"

static const char psc__accepted[] = "accepted: a JSON run written by p2pscope bw, report, lat or coll with --json";

typedef struct {
    const char *path;
    char *err;
    size_t errlen;
    psc_cmp_run_t *run;
    size_t cap;
} psc__ld_t;

static psc_status_t psc__bad(psc__ld_t *l, const char *field, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static psc_status_t psc__bad(psc__ld_t *l, const char *field, const char *fmt, ...)
{
    char what[256];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    snprintf(l->err, l->errlen, "%s: %s%s%s (%s)", l->path, field, field[0] ? " " : "", what, psc__accepted);
    return PSC_ERR_INVALID;
}

static psc_status_t psc__oom(psc__ld_t *l)
{
    snprintf(l->err, l->errlen, "%s: out of host memory", l->path);
    return PSC_ERR_NO_MEMORY;
}

/* A finite number (integer or real) at o[key]. */
static int psc__num(const json_t *o, const char *key, double *v)
{
    const json_t *x = json_object_get(o, key);

    if (!json_is_number(x) || !isfinite(json_number_value(x)))
        return -1;
    *v = json_number_value(x);
    return 0;
}

/* A string at o[key]; absent or null: dflt; another type: NULL. */
static const char *psc__str(const json_t *o, const char *key, const char *dflt)
{
    const json_t *x = json_object_get(o, key);

    if (!x || json_is_null(x))
        return dflt;
    return json_is_string(x) ? json_string_value(x) : NULL;
}

static psc_status_t psc__add(psc__ld_t *l, const char *key, const char *label, psc_cmp_status_t st, double value,
                             double lo, double hi, unsigned n, double alt, int whole_test)
{
    psc_cmp_run_t *r = l->run;
    psc_cmp_case_t *c;

    if (r->ncases == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        psc_cmp_case_t *grown = realloc(r->cases, cap * sizeof(*grown));

        if (!grown)
            return psc__oom(l);
        r->cases = grown;
        l->cap = cap;
    }
    c = &r->cases[r->ncases];
    memset(c, 0, sizeof(*c));
    c->key = strdup(key);
    c->label = strdup(label);
    if (!c->key || !c->label) {
        free(c->key);
        free(c->label);
        return psc__oom(l);
    }
    c->status = st;
    c->value = value;
    c->lo = lo;
    c->hi = hi;
    c->n = n;
    c->alt = alt;
    c->whole_test = whole_test;
    r->ncases++;
    return PSC_OK;
}

/* By key, then by place in the run. */
static int psc__by_key(const void *x, const void *y)
{
    const psc_cmp_case_t *a = *(const psc_cmp_case_t *const *)x, *b = *(const psc_cmp_case_t *const *)y;
    int c = strcmp(a->key, b->key);

    return c ? c : (a > b) - (a < b);
}

/* The same case twice in one run (no writer does that today) is kept apart: the second is "#2", and so on. */
static psc_status_t psc__number_twins(psc__ld_t *l)
{
    psc_cmp_run_t *r = l->run;
    psc_cmp_case_t **v = calloc(r->ncases + 1, sizeof(*v));

    if (!v)
        return psc__oom(l);
    for (size_t i = 0; i < r->ncases; i++)
        v[i] = &r->cases[i];
    qsort(v, r->ncases, sizeof(*v), psc__by_key);
    /* from the last case backwards: each compared with the one before it while both keep their keys (the third
       of three twins is compared with the second before the second becomes "#2") */
    for (size_t i = r->ncases; i-- > 1;) {
        size_t seen = 1;
        char *key, *label;

        while (seen <= i && strcmp(v[i]->key, v[i - seen]->key) == 0)
            seen++;
        if (seen == 1)
            continue;
        if (asprintf(&key, "%s#%zu", v[i]->key, seen) < 0) {
            free(v);
            return psc__oom(l);
        }
        if (asprintf(&label, "%s #%zu", v[i]->label, seen) < 0) {
            free(key);
            free(v);
            return psc__oom(l);
        }
        free(v[i]->key);
        free(v[i]->label);
        v[i]->key = key;
        v[i]->label = label;
    }
    free(v);
    return PSC_OK;
}

static psc_status_t psc__status(psc__ld_t *l, const json_t *t, const char *field, psc_cmp_status_t *st)
{
    const char *s = psc__str(t, "status", NULL);

    if (!s)
        return psc__bad(l, field, "has no status string");
    if (strcmp(s, "passed") == 0)
        *st = PSC_CMP_PASSED;
    else if (strcmp(s, "failed") == 0)
        *st = PSC_CMP_FAILED;
    else if (strcmp(s, "waived") == 0)
        *st = PSC_CMP_WAIVED;
    else
        return psc__bad(l, field, "has status '%.40s', not passed, failed or waived", s);
    return PSC_OK;
}

/* The test's name and direction (or pair), both strings; direction may be absent (a waived test). */
static psc_status_t psc__name_dir(psc__ld_t *l, const json_t *t, const char *field, const char **name,
                                  const char **dir)
{
    if (!json_is_object(t))
        return psc__bad(l, field, "is not an object");
    *name = psc__str(t, "name", NULL);
    *dir = psc__str(t, "direction", "");
    if (!*name || !(*name)[0])
        return psc__bad(l, field, "has no name string");
    if (!*dir)
        return psc__bad(l, field, "has a direction that is not a string");
    return PSC_OK;
}

/* A whole number of bytes at o[key] (absent: -1 when optional). */
static psc_status_t psc__bytes(psc__ld_t *l, const json_t *o, const char *key, int optional, const char *field,
                               long long *out)
{
    const json_t *x = json_object_get(o, key);

    if (!x && optional) {
        *out = -1;
        return PSC_OK;
    }
    if (!json_is_integer(x) || json_integer_value(x) < 0)
        return psc__bad(l, field, "has no %s (a byte count)", key);
    *out = (long long)json_integer_value(x);
    return PSC_OK;
}

/* A bandwidth test: its median in GB/s, the interval min..max of its samples. */
static psc_status_t psc__bw_test(psc__ld_t *l, const json_t *t, size_t i)
{
    char field[48], key[512], label[512], size[32] = "";
    const char *name, *dir;
    psc_cmp_status_t st;
    double med = 0, lo = 0, hi = 0, n = 0;
    long long bytes;
    psc_status_t rc;

    snprintf(field, sizeof(field), "tests[%zu]", i);
    if ((rc = psc__name_dir(l, t, field, &name, &dir)) != PSC_OK || (rc = psc__status(l, t, field, &st)) != PSC_OK ||
        (rc = psc__bytes(l, t, "bytes_per_copy", st != PSC_CMP_PASSED, field, &bytes)) != PSC_OK)
        return rc;
    if (bytes >= 0)
        psc_size_name((uint64_t)bytes, " ", size, sizeof(size));
    if (st == PSC_CMP_PASSED) {
        const json_t *s = json_object_get(t, "stats");

        snprintf(field, sizeof(field), "tests[%zu].stats", i);
        if (!json_is_object(s) || psc__num(s, "median", &med) || psc__num(s, "min", &lo) || psc__num(s, "max", &hi) ||
            psc__num(s, "n", &n))
            return psc__bad(l, field, "lacks a number among median, min, max and n");
        if (!(lo <= med && med <= hi) || n < 1 || n > 1e6)
            return psc__bad(l, field, "has min %g, median %g, max %g, n %g: not in order", lo, med, hi, n);
    }
    /* without a size (failed or waived before it was known): the whole test, every size of it */
    if (bytes >= 0)
        snprintf(key, sizeof(key), "%s|%s|%lld", name, dir, bytes);
    else
        snprintf(key, sizeof(key), "%s|%s", name, dir);
    snprintf(label, sizeof(label), "%s%s%s%s%s", name, dir[0] ? " " : "", dir, size[0] ? " " : "", size);
    return psc__add(l, key, label, st, med, lo, hi, (unsigned)n, NAN, bytes < 0);
}

/* One latency distribution (psc_json_pctl): p50 the figure, min..p90 the interval. */
static psc_status_t psc__pctl(psc__ld_t *l, const json_t *p, const char *field, double *p50, double *lo,
                              double *hi, unsigned *n)
{
    double nn;

    if (!json_is_object(p) || psc__num(p, "p50", p50) || psc__num(p, "min", lo) || psc__num(p, "p90", hi) ||
        psc__num(p, "n", &nn))
        return psc__bad(l, field, "lacks a number among n, min, p50 and p90");
    if (!(*lo <= *p50 && *p50 <= *hi) || nn < 0 || nn > 1e9)
        return psc__bad(l, field, "has min %g, p50 %g, p90 %g, n %g: not in order", *lo, *p50, *hi, nn);
    *n = (unsigned)nn;
    return PSC_OK;
}

/* A latency test: a case per size (and per figure: the GPU's, the CPU's submission, cuMemcpy, unmap). */
static psc_status_t psc__lat_test(psc__ld_t *l, const json_t *t, size_t i)
{
    static const char *const figures[] = {"latency", "cpu_submit", "cumemcpy", "unmap"};
    char field[64], key[512], label[512], size[32];
    const json_t *sizes = json_object_get(t, "sizes");
    const char *name, *dir;
    psc_cmp_status_t st;
    psc_status_t rc;

    snprintf(field, sizeof(field), "tests[%zu]", i);
    if ((rc = psc__name_dir(l, t, field, &name, &dir)) != PSC_OK || (rc = psc__status(l, t, field, &st)) != PSC_OK)
        return rc;
    if (!json_is_array(sizes))
        return psc__bad(l, field, "has no sizes array");
    if (json_array_size(sizes) == 0) { /* a case that failed before any size: it stands for every size */
        snprintf(key, sizeof(key), "%s|%s", name, dir);
        snprintf(label, sizeof(label), "%s %s", name, dir);
        return psc__add(l, key, label, st == PSC_CMP_PASSED ? PSC_CMP_FAILED : st, 0, 0, 0, 0, NAN, 1);
    }
    for (size_t k = 0; k < json_array_size(sizes); k++) {
        const json_t *e = json_array_get(sizes, k);
        long long bytes;

        snprintf(field, sizeof(field), "tests[%zu].sizes[%zu]", i, k);
        if (!json_is_object(e))
            return psc__bad(l, field, "is not an object");
        if ((rc = psc__bytes(l, e, json_object_get(e, "bytes") ? "bytes" : "working_set_bytes", 0, field, &bytes)) !=
            PSC_OK)
            return rc;
        psc_size_name((uint64_t)bytes, " ", size, sizeof(size));
        for (size_t f = 0; f < sizeof(figures) / sizeof(figures[0]); f++) {
            const json_t *p = json_object_get(e, figures[f]);
            double p50 = 0, lo = 0, hi = 0;
            unsigned n = 0;

            if (f > 0 && !p)
                continue;
            snprintf(field, sizeof(field), "tests[%zu].sizes[%zu].%s", i, k, figures[f]);
            if (st == PSC_CMP_PASSED && (rc = psc__pctl(l, p, field, &p50, &lo, &hi, &n)) != PSC_OK)
                return rc;
            snprintf(key, sizeof(key), "%s|%s|%lld|%s", name, dir, bytes, figures[f]);
            snprintf(label, sizeof(label), "%s %s %s%s%s", name, dir, size, f ? " " : "", f ? figures[f] : "");
            if ((rc = psc__add(l, key, label, st, p50, lo, hi, n, NAN, 0)) != PSC_OK)
                return rc;
        }
    }
    return PSC_OK;
}

/* One half of a coll row (out of place, in place): the p50 of each operation timed alone, and its min..p90,
 * one quantity (the row's time_us is a loop's mean, per graph replay with -G: not comparable with them);
 * time_us is kept as the figure compared where a run has no per-operation times (--no-per-op). */
static psc_status_t psc__coll_half(psc__ld_t *l, const json_t *row, const char *half, const char *key0,
                                   const char *label0, size_t i)
{
    const json_t *h = json_object_get(row, half), *wrong, *p;
    char field[64], key[512], label[512];
    psc_cmp_status_t st = PSC_CMP_PASSED;
    double t = 0, p50 = NAN, lo = 0, hi = 0;
    unsigned n = 0;
    psc_status_t rc;

    snprintf(field, sizeof(field), "coll.rows[%zu].%s", i, half);
    if (!json_is_object(h) || !json_is_boolean(json_object_get(h, "ran")))
        return psc__bad(l, field, "is not an object with a boolean 'ran'");
    wrong = json_object_get(h, "wrong");
    if (wrong && !json_is_null(wrong) && !json_is_integer(wrong))
        return psc__bad(l, field, "has a 'wrong' that is not a count");
    if (!json_is_true(json_object_get(h, "ran")))
        st = PSC_CMP_WAIVED;
    else if (json_is_integer(wrong) && json_integer_value(wrong) != 0)
        st = PSC_CMP_FAILED;
    if (st == PSC_CMP_PASSED) {
        if (psc__num(h, "time_us", &t) != 0 || t < 0)
            return psc__bad(l, field, "has no time_us number");
        p = json_object_get(h, "per_operation_us");
        snprintf(field, sizeof(field), "coll.rows[%zu].%s.per_operation_us", i, half);
        if (p && !json_is_null(p) && (rc = psc__pctl(l, p, field, &p50, &lo, &hi, &n)) != PSC_OK)
            return rc;
        if (n == 0) /* no operation timed alone: the figure is time_us, with no interval */
            p50 = t;
    }
    snprintf(key, sizeof(key), "%s|%s", key0, half);
    snprintf(label, sizeof(label), "%s %s", label0, strcmp(half, "in_place") ? "out-of-place" : "in-place");
    return psc__add(l, key, label, st, st == PSC_CMP_PASSED ? p50 : 0, lo, hi, n, t, 0);
}

static psc_status_t psc__coll(psc__ld_t *l, const json_t *doc)
{
    const json_t *coll = json_object_get(doc, "coll"), *rows = json_object_get(coll, "rows");
    const char *name = psc__str(coll, "collective", "");
    psc_status_t rc;

    if (!json_is_object(coll) || !json_is_array(rows))
        return psc__bad(l, "coll", "is not an object with a rows array");
    if (!name)
        return psc__bad(l, "coll.collective", "is not a string");
    for (size_t i = 0; i < json_array_size(rows); i++) {
        const json_t *row = json_array_get(rows, i);
        const char *type = psc__str(row, "type", "-"), *op = psc__str(row, "redop", "-"),
                   *impl = psc__str(row, "impl", "nccl");
        char field[32], key[256], label[256], size[32], root[24] = "";
        const json_t *r = json_object_get(row, "root");
        long long bytes;

        snprintf(field, sizeof(field), "coll.rows[%zu]", i);
        if (!json_is_object(row))
            return psc__bad(l, field, "is not an object");
        if (!type || !op || !impl || !json_is_integer(r))
            return psc__bad(l, field, "lacks a type, redop or impl string, or a root number");
        if ((rc = psc__bytes(l, row, "size_bytes", 0, field, &bytes)) != PSC_OK)
            return rc;
        psc_size_name((uint64_t)bytes, " ", size, sizeof(size));
        if (json_integer_value(r) >= 0)
            snprintf(root, sizeof(root), " root %lld", (long long)json_integer_value(r));
        snprintf(key, sizeof(key), "%s|%lld|%s|%s|%lld|%s", name, bytes, type, op, (long long)json_integer_value(r),
                 impl);
        snprintf(label, sizeof(label), "%s %s %s %s%s %s", name, size, type, op, root, impl);
        if ((rc = psc__coll_half(l, row, "out_of_place", key, label, i)) != PSC_OK ||
            (rc = psc__coll_half(l, row, "in_place", key, label, i)) != PSC_OK)
            return rc;
    }
    return PSC_OK;
}

/* Which command wrote the document, and whether compare knows its layout. */
static psc_status_t psc__command(psc__ld_t *l, const json_t *doc)
{
    const json_t *tool = json_object_get(doc, "tool");
    const char *cmd = psc__str(doc, "command", NULL), *tname = psc__str(tool, "name", NULL);
    psc_cmp_run_t *r = l->run;

    if (!json_is_object(doc) || !json_is_object(tool) || !tname || strcmp(tname, "p2pscope") != 0 || !cmd)
        return psc__bad(l, "", "is not a p2pscope run: no tool.name \"p2pscope\" and command");
    if (strcmp(cmd, "bw") == 0 || strcmp(cmd, "report") == 0) {
        r->unit = "GB/s";
        r->higher_better = 1;
    } else if (strcmp(cmd, "lat") == 0) {
        r->unit = "ns";
    } else if (strcmp(cmd, "coll") == 0) {
        r->unit = "us";
    } else {
        snprintf(l->err, l->errlen, "%s: a p2pscope %.40s run: not comparable yet (accepted: runs of bw, report, lat "
                 "or coll written with --json)", l->path, cmd);
        return PSC_ERR_INVALID;
    }
    if (!(r->command = strdup(cmd)))
        return psc__oom(l);
    return PSC_OK;
}

static psc_status_t psc__cases(psc__ld_t *l, const json_t *doc)
{
    const json_t *tests = json_object_get(doc, "tests");
    psc_status_t rc;

    if (strcmp(l->run->command, "coll") == 0)
        return psc__coll(l, doc);
    if (!json_is_array(tests))
        return psc__bad(l, "tests", "is not an array");
    for (size_t i = 0; i < json_array_size(tests); i++) {
        const json_t *t = json_array_get(tests, i);

        rc = strcmp(l->run->command, "lat") == 0 ? psc__lat_test(l, t, i) : psc__bw_test(l, t, i);
        if (rc != PSC_OK)
            return rc;
    }
    return PSC_OK;
}

void psc_cmp_run_free(psc_cmp_run_t *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->ncases; i++) {
        free(r->cases[i].key);
        free(r->cases[i].label);
    }
    free(r->cases);
    json_decref(r->doc);
    free(r->command);
    free(r->path);
    free(r);
}

psc_status_t psc_cmp_run_load(const char *path, psc_cmp_run_t **out, char *err, size_t errlen)
{
    psc_cmp_run_t *r = calloc(1, sizeof(*r));
    psc__ld_t l = {path, err, errlen, r, 0};
    psc_status_t st;

    if (!r || !(r->path = strdup(path))) {
        st = psc__oom(&l);
        goto fail;
    }
    if ((st = psc_run_json_read(path, psc__accepted, &r->doc, NULL, NULL, err, errlen)) != PSC_OK ||
        (st = psc__command(&l, r->doc)) != PSC_OK || (st = psc__cases(&l, r->doc)) != PSC_OK ||
        (st = psc__number_twins(&l)) != PSC_OK)
        goto fail;
    *out = r;
    return PSC_OK;
fail:
    psc_cmp_run_free(r);
    return st;
}
