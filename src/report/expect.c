/* Expectation files (expect.h): a finished run's figures against the rules, the misses as lines and JSON. */
#define _GNU_SOURCE
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/p2pscope_private.h"
#include "report/expect.h"
#include "report/json.h"
#include "report/render.h"
#include "report/text.h"

const char *psc_expect_size_name(uint64_t bytes, char *buf, size_t len)
{
    return psc_size_name(bytes, "", buf, len);
}

/* A label without its spaces: "gpu0 -> gpu1" -> "gpu0->gpu1". */
static void psc__squeeze(char *s)
{
    char *w = s;

    for (; *s; s++)
        if (*s != ' ')
            *w++ = *s;
    *w = '\0';
}

static void psc__with_size(char *buf, size_t len, uint64_t bytes)
{
    size_t n = strlen(buf);
    char size[32];

    if (n < len)
        snprintf(buf + n, len - n, "@%s", psc_expect_size_name(bytes, size, sizeof(size)));
}

const char *psc_expect_case_bw(const psc_bw_result_t *r, char *buf, size_t len)
{
    psc_case_label(&r->c, buf, len);
    psc__squeeze(buf);
    if (r->size)
        psc__with_size(buf, len, r->size);
    return buf;
}

const char *psc_expect_case_lat(const psc_lat_result_t *r, unsigned size_index, char *buf, size_t len)
{
    char a[16], b[16];

    snprintf(buf, len, "%s->%s", psc_endpoint_name(r->c.src, a, sizeof(a)), psc_endpoint_name(r->c.dst, b, sizeof(b)));
    if (r->nsizes > 1 && size_index < r->nsizes)
        psc__with_size(buf, len, r->sizes[size_index]);
    return buf;
}

const char *psc_expect_case_coll(const psc_coll_row_t *row, char *buf, size_t len)
{
    psc_expect_size_name(row->bytes, buf, len);
    if (row->impl == PSC_COLL_IMPL_P2PSCOPE) {
        size_t n = strlen(buf);

        if (n < len)
            snprintf(buf + n, len - n, "/p2pscope");
    }
    return buf;
}

psc_expect_result_t *psc_expect_result_new(const psc_expect_t *e)
{
    psc_expect_result_t *r = calloc(1, sizeof(*r));

    if (!r)
        return NULL;
    r->checks = calloc(e->n ? e->n : 1, sizeof(*r->checks));
    r->ran = calloc(e->n ? e->n : 1, sizeof(*r->ran));
    if (!r->checks || !r->ran) {
        psc_expect_result_free(r);
        return NULL;
    }
    return r;
}

void psc_expect_result_free(psc_expect_result_t *r)
{
    if (!r)
        return;
    free(r->checks);
    free(r->ran);
    free(r->misses);
    free(r);
}

static void psc__kind_checked(psc_expect_result_t *r, int kind)
{
    r->kinds |= 1 << kind;
}

/* How a case name is matched: as it is (lat, coll), or as a bandwidth case measured at a size (expect.h). */
enum {
    PSC__AS_IS,
    PSC__BW_OWN_SIZE, /* bw, the run at each test's own size: a rule without "@" applies */
    PSC__BW_CHOSEN,   /* bw, sizes given (-s, -b/-e): only rules with "@SIZE" apply */
    PSC__UNSIZED,     /* a case that failed before its size was known: any rule whose path matches */
};

/* Part of a case name or glob: its path (before the last '@', all of it without one) or its size (after it, "" none). */
static void psc__part(const char *s, int size, char *buf, size_t len)
{
    const char *at = strrchr(s, '@');

    if (size)
        snprintf(buf, len, "%s", at ? at + 1 : "");
    else
        snprintf(buf, len, "%.*s", (int)(at ? (size_t)(at - s) : strlen(s)), s);
}

static int psc__part_matches(const char *glob, const char *kase, int size)
{
    char g[PSC_EXPECT_GLOB_LEN], k[96];

    psc__part(glob, size, g, sizeof(g));
    psc__part(kase, size, k, sizeof(k));
    return fnmatch(g, k, 0) == 0;
}

/*
 * The rule applies to the test and to the case; noted (its test ran) where the rule could apply at the case's size,
 * so that a rule of another size is not applied rather than unmatched, and a wrong path still warns.
 */
static int psc__matches(const psc_expect_rule_t *rule, psc_expect_result_t *r, size_t i, int kind, const char *test,
                        const char *kase, int how)
{
    int sized = strchr(rule->kase, '@') != NULL, case_sized = strchr(kase, '@') != NULL;

    if (rule->kind != kind || fnmatch(rule->test, test, 0) != 0)
        return 0;
    if (how == PSC__AS_IS) {
        r->ran[i] = 1;
        return fnmatch(rule->kase, kase, 0) == 0;
    }
    if (how != PSC__UNSIZED && case_sized) {
        if (!sized && how == PSC__BW_CHOSEN)
            return 0; /* a bound without a size holds at the default sizes only */
        if (sized && !psc__part_matches(rule->kase, kase, 1))
            return 0; /* measured at another size */
    }
    r->ran[i] = 1;
    return psc__part_matches(rule->kase, kase, 0); /* the size matched, or is not known (failed before it) */
}

int psc_expect_rule_applies(const psc_expect_rule_t *rule, int kind, const char *test, const char *kase)
{
    if (rule->kind != kind || fnmatch(rule->test, test, 0) != 0)
        return 0;
    if (strchr(rule->kase, '@') && strchr(kase, '@') && !psc__part_matches(rule->kase, kase, 1))
        return 0; /* measured at another size */
    return kind == PSC_EXPECT_BW ? psc__part_matches(rule->kase, kase, 0) : fnmatch(rule->kase, kase, 0) == 0;
}

/* How many tests of the rule's kind its glob names. */
static int psc__tests_named(const psc_expect_rule_t *rule)
{
    int n = 0;

    if (rule->kind == PSC_EXPECT_BW)
        return psc_bw_test_match(rule->test, NULL, 0);
    if (rule->kind == PSC_EXPECT_LAT)
        return psc_lat_test_match(rule->test, NULL, 0);
    for (int c = 0; c < PSC_COLL_N; c++)
        n += psc_coll_name(c) && fnmatch(rule->test, psc_coll_name(c), 0) == 0;
    return n;
}

int psc_expect_unmatched(const psc_expect_t *e, const psc_expect_result_t *r, size_t i)
{
    const psc_expect_rule_t *rule = &e->rules[i];

    if (!(r->kinds & (1 << rule->kind)) || r->checks[i] || rule->quiet)
        return 0;
    return r->ran[i] || psc__tests_named(rule) == 0;
}

/* One figure (base unit: GB/s or ns) against one matching rule; a miss is kept. why: NULL, or for a case
 * without a figure (failed, waived) the reason, the miss whatever base is. */
static psc_status_t psc__check(const psc_expect_t *e, size_t i, psc_expect_result_t *r, const char *test,
                               const char *kase, const char *figure, double base, const char *why)
{
    const psc_expect_rule_t *rule = &e->rules[i];
    const double v = why ? NAN : base / rule->scale;
    psc_expect_miss_t *m;

    r->checks[i]++;
    r->nchecks++;
    r->nstatus += why != NULL;
    if (psc_expect_meets(rule, v))
        return PSC_OK;
    if (r->nmisses == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 16;
        psc_expect_miss_t *grown = realloc(r->misses, cap * sizeof(*grown));

        if (!grown)
            return PSC_ERR_NO_MEMORY;
        r->misses = grown;
        r->cap = cap;
    }
    m = &r->misses[r->nmisses++];
    memset(m, 0, sizeof(*m));
    m->rule = i;
    snprintf(m->test, sizeof(m->test), "%s", test);
    snprintf(m->kase, sizeof(m->kase), "%s", kase);
    snprintf(m->figure, sizeof(m->figure), "%s", figure);
    m->value = v;
    if (why)
        snprintf(m->why, sizeof(m->why), "%s", why);
    return PSC_OK;
}

/* "failed: REASON" or "waived: REASON" for a result without a figure; NULL for one that passed. */
static const char *psc__why(psc_result_status_t st, const char *reason, char *buf, size_t len)
{
    if (st == PSC_RESULT_PASSED)
        return NULL;
    snprintf(buf, len, "%s: %.180s", st == PSC_RESULT_WAIVED ? "waived" : "failed", reason && reason[0] ? reason :
             "no reason recorded");
    return buf;
}

double psc_expect_bw_figure(const psc_stats_t *s, const char *figure)
{
    return strcmp(figure, "min") == 0    ? s->min
           : strcmp(figure, "max") == 0  ? s->max
           : strcmp(figure, "mean") == 0 ? s->mean
                                         : s->median;
}

psc_status_t psc_expect_check_bw(const psc_expect_t *e, const psc_bw_suite_t *s, psc_expect_result_t *r)
{
    /* sizes[0] 0: each test at its own size (no -s, -b/-e) */
    const int how = s->nsizes <= 1 && (s->nsizes == 0 || s->sizes[0] == 0) ? PSC__BW_OWN_SIZE : PSC__BW_CHOSEN;

    psc__kind_checked(r, PSC_EXPECT_BW);
    for (size_t k = 0; k < s->nresults; k++) {
        const psc_bw_result_t *x = &s->results[k];
        const char *test = psc_bw_test_name(x->c.test), *why;
        char kase[96], reason[200];

        if (!test || (x->status == PSC_RESULT_PASSED && !x->nsamples))
            continue;
        why = psc__why(x->status, x->reason, reason, sizeof(reason));
        psc_expect_case_bw(x, kase, sizeof(kase));
        for (size_t i = 0; i < e->n; i++)
            if (psc__matches(&e->rules[i], r, i, PSC_EXPECT_BW, test, kase, how) &&
                psc__check(e, i, r, test, kase, e->rules[i].figure, psc_expect_bw_figure(&x->stats, e->rules[i].figure),
                           why) != PSC_OK)
                return PSC_ERR_NO_MEMORY;
    }
    return PSC_OK;
}

double psc_expect_lat_figure(const psc_pctl_t *p, const char *figure)
{
    return strcmp(figure, "min") == 0    ? p->min
           : strcmp(figure, "p90") == 0  ? p->p90
           : strcmp(figure, "p99") == 0  ? p->p99
           : strcmp(figure, "max") == 0  ? p->max
           : strcmp(figure, "mean") == 0 ? p->mean
                                         : p->p50;
}

psc_status_t psc_expect_check_lat(const psc_expect_t *e, const psc_lat_suite_t *s, psc_expect_result_t *r)
{
    psc__kind_checked(r, PSC_EXPECT_LAT);
    for (size_t k = 0; k < s->nresults; k++) {
        const psc_lat_result_t *x = &s->results[k];
        const psc_lat_test_info_t *ti = psc_lat_test_info(x->c.test);
        char reason[200];
        const char *why = psc__why(x->status, x->reason, reason, sizeof(reason));

        if (!ti)
            continue;
        /* failed or waived before its first size: one case without a size, matched by its path */
        for (unsigned z = 0; z < (why && x->nsizes == 0 ? 1 : x->nsizes) && z < PSC_LAT_MAX_SIZES; z++) {
            char kase[96];

            if (!why && !x->lat[z].n)
                continue;
            psc_expect_case_lat(x, z, kase, sizeof(kase));
            for (size_t i = 0; i < e->n; i++)
                if (psc__matches(&e->rules[i], r, i, PSC_EXPECT_LAT, ti->name, kase,
                                 why && x->nsizes == 0 ? PSC__UNSIZED : PSC__AS_IS) &&
                    psc__check(e, i, r, ti->name, kase, e->rules[i].figure,
                               psc_expect_lat_figure(&x->lat[z], e->rules[i].figure), why) != PSC_OK)
                    return PSC_ERR_NO_MEMORY;
        }
    }
    return PSC_OK;
}

psc_status_t psc_expect_check_coll(const psc_expect_t *e, const psc_coll_report_t *c, psc_expect_result_t *r)
{
    static const char *const half[2] = {"out of place", "in place"};
    const char *test = psc_coll_name(c->coll);

    psc__kind_checked(r, PSC_EXPECT_COLL);
    if (!test)
        return PSC_OK;
    /* one rank: nccl-tests' bus bandwidth is 0 by definition, and algbw alone says nothing of a link */
    for (size_t i = 0; c->nranks == 1 && i < e->n; i++)
        r->one_rank += e->rules[i].kind == PSC_EXPECT_COLL && strcmp(e->rules[i].figure, "time") != 0 &&
                       fnmatch(e->rules[i].test, test, 0) == 0;
    for (int k = 0; k < c->nrows; k++) {
        const psc_coll_row_t *row = &c->rows[k];
        const char *type = psc_dtype_name(row->dtype), *op = row->op >= 0 ? psc_redop_name(row->op) : "none";
        char kase[96];

        psc_expect_case_coll(row, kase, sizeof(kase));
        for (int h = 0; h < 2; h++) {
            if (!row->r[h].ran)
                continue;
            for (size_t i = 0; i < e->n; i++) {
                const char *fig = e->rules[i].figure;
                double base = strcmp(fig, "time") == 0    ? row->r[h].time_us * 1e3
                              : strcmp(fig, "algbw") == 0 ? row->r[h].algbw_gbs
                                                          : row->r[h].busbw_gbs;
                char figure[48], why[64];

                if (c->nranks == 1 && strcmp(fig, "time") != 0)
                    continue; /* counted above */
                if (!psc__matches(&e->rules[i], r, i, PSC_EXPECT_COLL, test, kase, PSC__AS_IS))
                    continue;
                snprintf(figure, sizeof(figure), "%s (%s, %s %s)", fig, half[h], type ? type : "?", op ? op : "?");
                snprintf(why, sizeof(why), "failed: %lld wrong elements", row->r[h].wrong);
                if (psc__check(e, i, r, test, kase, figure, base, row->r[h].wrong > 0 ? why : NULL) != PSC_OK)
                    return PSC_ERR_NO_MEMORY;
            }
        }
    }
    return PSC_OK;
}

int psc_expect_meets(const psc_expect_rule_t *rule, double v)
{
    /* NaN fails each */
    return rule->op == PSC_EXPECT_GE ? v >= rule->bound : rule->op == PSC_EXPECT_LE ? v <= rule->bound
                                                                                     : v == rule->bound;
}

const char *psc_expect_op_name(int op)
{
    return op == PSC_EXPECT_GE ? ">=" : op == PSC_EXPECT_LE ? "<=" : "=";
}

static const char *psc__op(int op)
{
    return psc_expect_op_name(op);
}

static const char *psc__kind_name(int kind)
{
    return kind == PSC_EXPECT_BW ? "bw" : kind == PSC_EXPECT_LAT ? "lat" : kind == PSC_EXPECT_COLL ? "coll" : "node";
}

/* Rules of the checked kinds whose test did not run, and rules of other kinds. */
static size_t psc__not_applied(const psc_expect_t *e, const psc_expect_result_t *r)
{
    size_t n = 0;

    for (size_t i = 0; i < e->n; i++)
        n += !r->checks[i] && !psc_expect_unmatched(e, r, i);
    return n;
}

void psc_expect_render(FILE *f, const psc_expect_t *e, const psc_expect_result_t *r)
{
    size_t skipped = psc__not_applied(e, r);

    for (size_t k = 0; k < r->nmisses; k++) {
        const psc_expect_miss_t *m = &r->misses[k];
        const psc_expect_rule_t *rule = &e->rules[m->rule];

        if (m->why[0])
            psc_report_printf(f, "expect: MISS %s %s %s (bound %s %.6g %s, %s)\n", m->test, m->kase, m->why,
                              psc__op(rule->op), rule->bound, rule->unit, rule->where);
        else
            psc_report_printf(f, "expect: MISS %s %s %s %.6g %s (bound %s %.6g %s, %s)\n", m->test, m->kase, m->figure,
                              m->value, rule->unit, psc__op(rule->op), rule->bound, rule->unit, rule->where);
    }
    for (size_t i = 0; i < e->n; i++) {
        const psc_expect_rule_t *rule = &e->rules[i];

        if (!psc_expect_unmatched(e, r, i))
            continue;
        if (!r->ran[i] && psc__tests_named(rule) == 0)
            psc_report_printf(f, "expect: warning: %s: '%s' names no %s test (accepted a name or glob from %s)\n",
                              rule->where, rule->test, psc__kind_name(rule->kind),
                              rule->kind == PSC_EXPECT_BW ? "p2pscope bw -l" : rule->kind == PSC_EXPECT_LAT ?
                              "p2pscope lat -l" : "p2pscope coll --help");
        else
            psc_report_printf(f, "expect: warning: %s: rule '%s %s %s %s %.6g %s' matched no case of this run\n",
                              rule->where, psc__kind_name(rule->kind), rule->test, rule->kase, psc__op(rule->op),
                              rule->value, rule->unit);
    }
    if (r->one_rank)
        fprintf(f, "expect: %zu coll busbw/algbw rule%s skipped: the run has one rank, where the bus bandwidth is 0 by "
                "definition\n", r->one_rank, r->one_rank == 1 ? "" : "s");
    if (e->n && r->nchecks == r->nstatus)
        fprintf(f, "expect: warning: no figure checked: no rule matched a measured case of this run (a bw rule without "
                "@SIZE applies at the default sizes only)\n");
    fprintf(f, "expect: %zu rule%s, %zu check%s, %zu miss%s", e->n, e->n == 1 ? "" : "s", r->nchecks,
            r->nchecks == 1 ? "" : "s", r->nmisses, r->nmisses == 1 ? "" : "es");
    if (r->nstatus)
        fprintf(f, " (%zu case%s failed or waived)", r->nstatus, r->nstatus == 1 ? "" : "s");
    if (skipped)
        fprintf(f, " (%zu rule%s not applied: no figure of their tests, at their sizes, in this run)", skipped,
                skipped == 1 ? "" : "s");
    fprintf(f, "\n");
}

json_t *psc_json_expect(const psc_expect_t *e, const psc_expect_result_t *r)
{
    json_t *o = json_object(), *misses = json_array(), *unmatched = json_array();
    int bad = 0;

    for (size_t k = 0; k < r->nmisses; k++) {
        const psc_expect_miss_t *m = &r->misses[k];
        const psc_expect_rule_t *rule = &e->rules[m->rule];
        json_t *x = json_object();

        psc_json_set(x, "test", psc_json_str(m->test), &bad);
        psc_json_set(x, "case", psc_json_str(m->kase), &bad);
        psc_json_set(x, "figure", psc_json_str(m->figure), &bad);
        psc_json_set(x, "value", psc_json_real_or_null(m->value), &bad);
        psc_json_set(x, "reason", m->why[0] ? psc_json_str(m->why) : json_null(), &bad);
        psc_json_set(x, "unit", psc_json_str(rule->unit), &bad);
        psc_json_set(x, "op", psc_json_str(psc__op(rule->op)), &bad);
        psc_json_set(x, "bound", json_real(rule->bound), &bad);
        psc_json_set(x, "written", json_real(rule->value), &bad);
        psc_json_set(x, "margin_pct", json_real(rule->margin_pct), &bad);
        psc_json_set(x, "rule", psc_json_str(rule->where), &bad);
        psc_json_push(misses, x, &bad);
    }
    for (size_t i = 0; i < e->n; i++)
        if (psc_expect_unmatched(e, r, i))
            psc_json_push(unmatched, psc_json_str(e->rules[i].where), &bad);
    psc_json_set(o, "rules", json_integer((json_int_t)e->n), &bad);
    psc_json_set(o, "checks", json_integer((json_int_t)r->nchecks), &bad);
    psc_json_set(o, "not_applied", json_integer((json_int_t)psc__not_applied(e, r)), &bad);
    psc_json_set(o, "failed_or_waived", json_integer((json_int_t)r->nstatus), &bad);
    psc_json_set(o, "one_rank_skipped", json_integer((json_int_t)r->one_rank), &bad);
    psc_json_set(o, "figures_checked", json_integer((json_int_t)(r->nchecks - r->nstatus)), &bad);
    psc_json_set(o, "misses", misses, &bad);
    psc_json_set(o, "unmatched", unmatched, &bad);
    psc_json_set(o, "passed", json_boolean(r->nmisses == 0), &bad);
    return psc_json_done(o, bad);
}
