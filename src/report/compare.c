/*
 * Two runs, case by case: the noise rule, the machine's differences, the
 * text and the JSON of a comparison.
 *
 * The noise rule. Each run records, per case, how its samples spread; a
 * change is marked (better or worse) only when the two runs' intervals do
 * not overlap, in the direction the figures moved:
 *   bw, report: min..max of the case's samples (3 to 16 of them, each a
 *     whole timed sample; sampling stops once the median is stable, so every
 *     sample counts and none is an outlier to trim);
 *   lat: min..p90 of the distribution (64 to 1024 timed events); p99 and
 *     max are left out, as they catch one-off interruptions (a preempted
 *     thread, a first round trip into cold caches) that would hide any change;
 *   coll: min..p90 of each operation timed alone (CUDA events), around their
 *     p50, the figure compared (one quantity: the table's time_us is a loop's
 *     mean, per graph replay with -G, and may lie outside that interval).
 *     Where a run has no operation timed alone (--no-per-op), time_us is
 *     compared instead, with no verdict ("?").
 * Distribution-free: for n and m samples of the same distribution, all of one
 * run's lie beyond all of the other's with probability 2 n! m! / (n + m)!
 * (3 and 3: 1 in 10; 5 and 5: 1 in 126; 16 and 16: 1 in 3e8), and a p90 below
 * the other run's minimum is rarer still. Fewer than PSC_CMP_MIN_SAMPLES
 * samples in a run, or none recorded: no verdict ("?"). The rule says the
 * change is real for these runs; whether it matters is --fail-above's PCT.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/compare.h"
#include "report/json.h"
#include "report/table.h"
#include "report/text.h"

/* Lines of machine differences the text shows (the JSON has them all). */
#define PSC_CMP_TEXT_DIFFS 40

/* Where either run has no interval, the figures both have instead (coll: time_us), if any. */
static int psc__use_alt(const psc_cmp_case_t *a, const psc_cmp_case_t *b)
{
    return (a->n == 0 || b->n == 0) && isfinite(a->alt) && isfinite(b->alt);
}

void psc_cmp_figures(const psc_cmp_case_t *a, const psc_cmp_case_t *b, double *va, double *vb)
{
    int alt = psc__use_alt(a, b);

    *va = a->status != PSC_CMP_PASSED ? NAN : alt ? a->alt : a->value;
    *vb = b->status != PSC_CMP_PASSED ? NAN : alt ? b->alt : b->value;
}

psc_cmp_verdict_t psc_cmp_judge(const psc_cmp_case_t *a, const psc_cmp_case_t *b, int higher_better,
                                double *change_pct)
{
    double va, vb;
    int up, down;

    *change_pct = NAN;
    if (a->status != PSC_CMP_PASSED || b->status != PSC_CMP_PASSED) {
        if (a->status == PSC_CMP_PASSED && b->status == PSC_CMP_FAILED)
            return PSC_CMP_NOW_FAILS;
        if (a->status == PSC_CMP_PASSED && b->status == PSC_CMP_WAIVED)
            return PSC_CMP_NOW_WAIVED;
        if (a->status == PSC_CMP_FAILED && b->status == PSC_CMP_PASSED)
            return PSC_CMP_NOW_PASSES;
        return PSC_CMP_NOT_COMPARED;
    }
    psc_cmp_figures(a, b, &va, &vb);
    if (va != 0)
        *change_pct = 100.0 * (vb - va) / fabs(va);
    if (a->n < PSC_CMP_MIN_SAMPLES || b->n < PSC_CMP_MIN_SAMPLES)
        return PSC_CMP_NO_SPREAD;
    up = b->lo > a->hi;   /* all of B's interval above A's */
    down = b->hi < a->lo; /* all of it below */
    /* Apart, but the figures moved the other way (a coll time outside its per-operation spread): not shown. */
    if ((!up && !down) || (up && b->value <= a->value) || (down && b->value >= a->value))
        return PSC_CMP_WITHIN_NOISE;
    return up == (higher_better != 0) ? PSC_CMP_BETTER : PSC_CMP_WORSE;
}

double psc_cmp_worse_pct(double change_pct, int higher_better)
{
    return higher_better ? -change_pct : change_pct;
}

int psc_cmp_fails(psc_cmp_verdict_t v, double change_pct, int higher_better, double pct)
{
    if (pct < 0)
        return 0;
    if (v == PSC_CMP_NOW_FAILS || v == PSC_CMP_NOW_WAIVED)
        return 1;
    return v == PSC_CMP_WORSE && psc_cmp_worse_pct(change_pct, higher_better) > pct;
}

/* ---- what the runs record about the machine and the options ---- */

/* Results, not facts: left out of the differences (the cases compare them). */
static int psc__skipped(const char *parent, const char *key)
{
    static const char *const top[] = {"tests",     "findings",   "explain", "started_utc",
                                      "wall_s",    "exit_code",  "incomplete", "expect", "command_line"};
    static const char *const coll[] = {"rows",       "failed_rows",       "wrong_elements", "first_wrong",
                                       "avg_busbw_gbs", "own_avg_busbw_gbs", "own_not_run",    "run_ms"};

    if (strcmp(key, "pid") == 0) /* a coll rank's process */
        return 1;
    for (size_t i = 0; parent[0] == '\0' && i < sizeof(top) / sizeof(top[0]); i++)
        if (strcmp(key, top[i]) == 0)
            return 1;
    for (size_t i = 0; strcmp(parent, "coll") == 0 && i < sizeof(coll) / sizeof(coll[0]); i++)
        if (strcmp(key, coll[i]) == 0)
            return 1;
    return 0;
}

static psc_status_t psc__diff_add(psc_compare_t *c, size_t *cap, const char *field, json_t *a, json_t *b)
{
    if (c->ndiffs == *cap) {
        size_t n = *cap ? 2 * *cap : 32;
        psc_cmp_diff_t *grown = realloc(c->diffs, n * sizeof(*grown));

        if (!grown)
            return PSC_ERR_NO_MEMORY;
        c->diffs = grown;
        *cap = n;
    }
    if (!(c->diffs[c->ndiffs].field = strdup(field)))
        return PSC_ERR_NO_MEMORY;
    c->diffs[c->ndiffs].a = json_incref(a);
    c->diffs[c->ndiffs].b = json_incref(b);
    c->ndiffs++;
    return PSC_OK;
}

/* Every scalar that differs, by its path; a part present in one run only as a whole. */
static psc_status_t psc__diff(psc_compare_t *c, size_t *cap, const char *field, json_t *a, json_t *b)
{
    char sub[512];
    const char *key;
    json_t *v;
    psc_status_t st = PSC_OK;

    if (json_is_object(a) && json_is_object(b)) {
        json_object_foreach(a, key, v) {
            if (psc__skipped(field, key))
                continue;
            snprintf(sub, sizeof(sub), "%s%s%s", field, field[0] ? "." : "", key);
            if ((st = psc__diff(c, cap, sub, v, json_object_get(b, key))) != PSC_OK)
                return st;
        }
        json_object_foreach(b, key, v) {
            if (psc__skipped(field, key) || json_object_get(a, key))
                continue;
            snprintf(sub, sizeof(sub), "%s%s%s", field, field[0] ? "." : "", key);
            if ((st = psc__diff_add(c, cap, sub, NULL, v)) != PSC_OK)
                return st;
        }
        return PSC_OK;
    }
    if (json_is_array(a) && json_is_array(b)) {
        size_t na = json_array_size(a), nb = json_array_size(b);

        for (size_t i = 0; i < na || i < nb; i++) {
            snprintf(sub, sizeof(sub), "%s[%zu]", field, i);
            if ((st = psc__diff(c, cap, sub, json_array_get(a, i), json_array_get(b, i))) != PSC_OK)
                return st;
        }
        return PSC_OK;
    }
    if (a && b && json_equal(a, b))
        return PSC_OK;
    return psc__diff_add(c, cap, field, a, b);
}

/* ---- the comparison ---- */

void psc_compare_free(psc_compare_t *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->ndiffs; i++) {
        free(c->diffs[i].field);
        json_decref(c->diffs[i].a);
        json_decref(c->diffs[i].b);
    }
    free(c->diffs);
    free(c->rows);
    free(c->only_a);
    free(c->only_b);
    free(c);
}

static int psc__by_key(const void *x, const void *y)
{
    return strcmp((*(const psc_cmp_case_t *const *)x)->key, (*(const psc_cmp_case_t *const *)y)->key);
}

/* x stands for y: x is a whole test ("test|direction") and y one of its cases ("test|direction|..."). */
static int psc__covers(const psc_cmp_case_t *x, const psc_cmp_case_t *y)
{
    size_t n = strlen(x->key);

    return x->whole_test && !y->whole_test && strncmp(y->key, x->key, n) == 0 && y->key[n] == '|';
}

static void psc__add_row(psc_compare_t *c, const psc_cmp_case_t *x, const psc_cmp_case_t *y)
{
    psc_cmp_row_t *r = &c->rows[c->nrows++];

    r->a = x;
    r->b = y;
    r->label = x->whole_test ? y->label : x->label;
    psc_cmp_figures(x, y, &r->va, &r->vb);
    r->verdict = psc_cmp_judge(x, y, c->a->higher_better, &r->change_pct);
    r->fails = psc_cmp_fails(r->verdict, r->change_pct, c->a->higher_better, c->fail_above);
    c->nfailed += r->fails != 0;
}

/*
 * The whole tests of run x (a test that failed or was waived before its first size) that run y has cases of:
 * each such case of y not matched yet gets a row beside x's test (A's case first: x_is_a says which run x
 * is), and both count as matched.
 */
static void psc__whole_tests(psc_compare_t *c, const psc_cmp_run_t *x, const psc_cmp_run_t *y, char *matched_x,
                             char *matched_y, int x_is_a)
{
    for (size_t i = 0; i < x->ncases; i++) {
        int any = 0;

        for (size_t j = 0; !matched_x[i] && x->cases[i].whole_test && j < y->ncases; j++)
            if (!matched_y[j] && psc__covers(&x->cases[i], &y->cases[j])) {
                matched_y[j] = any = 1;
                psc__add_row(c, x_is_a ? &x->cases[i] : &y->cases[j], x_is_a ? &y->cases[j] : &x->cases[i]);
            }
        matched_x[i] |= any;
    }
}

psc_status_t psc_compare(const psc_cmp_run_t *a, const psc_cmp_run_t *b, double fail_above, psc_compare_t **out,
                         char *err, size_t errlen)
{
    psc_compare_t *c = NULL;
    char *matched = NULL, *matched_a = NULL;
    const psc_cmp_case_t **byk = NULL; /* B's cases by key (unique in a run) */
    size_t cap = 0;

    if (strcmp(a->command, b->command) != 0) {
        snprintf(err, errlen, "%s is a p2pscope %s run and %s a %s run: accepted two runs of the same command", a->path,
                 a->command, b->path, b->command);
        return PSC_ERR_INVALID;
    }
    if (!(c = calloc(1, sizeof(*c))) || !(matched = calloc(b->ncases + 1, 1)) ||
        !(matched_a = calloc(a->ncases + 1, 1)) || !(byk = calloc(b->ncases + 1, sizeof(*byk))) ||
        !(c->rows = calloc(a->ncases + b->ncases + 1, sizeof(*c->rows))) ||
        !(c->only_a = calloc(a->ncases + 1, sizeof(*c->only_a))) ||
        !(c->only_b = calloc(b->ncases + 1, sizeof(*c->only_b))))
        goto oom;
    c->a = a;
    c->b = b;
    c->fail_above = fail_above;
    for (size_t j = 0; j < b->ncases; j++)
        byk[j] = &b->cases[j];
    qsort(byk, b->ncases, sizeof(*byk), psc__by_key);
    for (size_t i = 0; i < a->ncases; i++) {
        const psc_cmp_case_t *x = &a->cases[i], *const *found;

        found = bsearch(&x, byk, b->ncases, sizeof(*byk), psc__by_key);
        if (found && !matched[*found - b->cases]) {
            matched[*found - b->cases] = 1;
            matched_a[i] = 1;
            psc__add_row(c, x, *found);
        }
    }
    /* A test that failed or was waived before its first size, in one run: that status for each of the other
     * run's cases of the test (a whole test is few; the scan is short). A whole test is never the covered
     * side, so marking it matched once its scan ends changes nothing the other pass sees. */
    psc__whole_tests(c, a, b, matched_a, matched, 1);
    psc__whole_tests(c, b, a, matched, matched_a, 0);
    for (size_t i = 0; i < a->ncases; i++)
        if (!matched_a[i])
            c->only_a[c->nonly_a++] = &a->cases[i];
    for (size_t j = 0; j < b->ncases; j++)
        if (!matched[j])
            c->only_b[c->nonly_b++] = &b->cases[j];
    if (psc__diff(c, &cap, "", a->doc, b->doc) != PSC_OK)
        goto oom;
    free(matched);
    free(matched_a);
    free(byk);
    *out = c;
    return PSC_OK;
oom:
    snprintf(err, errlen, "out of host memory");
    free(matched);
    free(matched_a);
    free(byk);
    psc_compare_free(c);
    return PSC_ERR_NO_MEMORY;
}

/* ---- text ---- */

const char *psc_cmp_verdict_name(psc_cmp_verdict_t v)
{
    switch (v) {
    case PSC_CMP_WITHIN_NOISE: return "within_noise";
    case PSC_CMP_BETTER: return "better";
    case PSC_CMP_WORSE: return "worse";
    case PSC_CMP_NO_SPREAD: return "no_spread";
    case PSC_CMP_NOW_FAILS: return "now_fails";
    case PSC_CMP_NOW_PASSES: return "now_passes";
    case PSC_CMP_NOW_WAIVED: return "now_waived";
    case PSC_CMP_NOT_COMPARED: break;
    }
    return "not_compared";
}

/* Which interval of the samples the rule takes, per command (compare.c's top comment). */
const char *psc_cmp_interval_text(const psc_cmp_run_t *r)
{
    if (strcmp(r->command, "lat") == 0)
        return "min..p90 of each distribution";
    if (strcmp(r->command, "coll") == 0)
        return "min..p90 of the operations timed alone";
    return "min..max of each case's samples";
}

const char *psc_cmp_figure_text(const psc_cmp_run_t *r)
{
    if (strcmp(r->command, "lat") == 0)
        return "ns, p50, lower is better";
    if (strcmp(r->command, "coll") == 0)
        return "us per operation, p50 of the operations timed alone (time_us, not judged, where a run has none), "
               "lower is better";
    return "GB/s (1 GB = 1e9 bytes), median, higher is better";
}

/* Three significant digits at least, two decimals at most above 1. */
void psc_cmp_fig(char *buf, size_t len, double v)
{
    if (fabs(v) >= 100)
        snprintf(buf, len, "%.1f", v);
    else if (fabs(v) >= 1)
        snprintf(buf, len, "%.2f", v);
    else
        snprintf(buf, len, "%.3g", v);
}

/* The status of a case that has no figure: FAILED, waived (coll: not run). */
const char *psc_cmp_status_text(const psc_cmp_run_t *run, const psc_cmp_case_t *x)
{
    return x->status == PSC_CMP_FAILED ? "FAILED" : strcmp(run->command, "coll") == 0 ? "not run" : "waived";
}

static void psc__cell(psc_table_t *t, unsigned row, unsigned col, const psc_cmp_run_t *run, const psc_cmp_case_t *x,
                      double value)
{
    char v[32];

    if (x->status == PSC_CMP_PASSED) {
        psc_cmp_fig(v, sizeof(v), value);
        psc_table_set(t, row, col, "%s", v);
    } else {
        psc_table_set(t, row, col, "%s", psc_cmp_status_text(run, x));
    }
}

/* The mark after a row's change: empty where there is nothing to say. */
void psc_cmp_mark(char *buf, size_t len, const psc_compare_t *c, const psc_cmp_row_t *r)
{
    switch (r->verdict) {
    case PSC_CMP_BETTER: snprintf(buf, len, "better"); break;
    case PSC_CMP_WORSE:
        if (r->fails)
            snprintf(buf, len, "WORSE > %g %%", c->fail_above);
        else
            snprintf(buf, len, "WORSE");
        break;
    case PSC_CMP_NO_SPREAD: snprintf(buf, len, "?"); break;
    case PSC_CMP_NOW_FAILS: snprintf(buf, len, "FAILS now"); break;
    case PSC_CMP_NOW_PASSES: snprintf(buf, len, "passes now"); break;
    case PSC_CMP_NOW_WAIVED: snprintf(buf, len, "WAIVED now"); break;
    default: buf[0] = '\0'; break;
    }
}

/* The table of cases, each row's mark after it, left-aligned (the table aligns the figures). */
static void psc__render_rows(FILE *f, const psc_compare_t *c)
{
    psc_table_t *t = psc_table_new((unsigned)c->nrows + 1, 4);
    char *text = NULL, *line, *save = NULL;
    size_t len = 0;
    FILE *mem;

    if (!t)
        return;
    PSC_TABLE_HEADER(t, "case", "A", "B", "change");
    for (size_t i = 0; i < c->nrows; i++) {
        const psc_cmp_row_t *r = &c->rows[i];
        unsigned row = (unsigned)i + 1;

        psc_table_set(t, row, 0, "%s", r->label);
        psc__cell(t, row, 1, c->a, r->a, r->va);
        psc__cell(t, row, 2, c->b, r->b, r->vb);
        if (isnan(r->change_pct))
            psc_table_set(t, row, 3, "-");
        else
            psc_table_set(t, row, 3, "%+.1f %%", r->change_pct);
    }
    psc_table_left_columns(t, 1);
    mem = open_memstream(&text, &len);
    if (mem) {
        psc_table_render(t, mem);
        fclose(mem);
    }
    if (!mem || !text) { /* out of memory: the table without its marks */
        psc_table_render(t, f);
    } else {
        size_t i = 0;

        for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save), i++) {
            char mark[48] = "";

            if (i > 0 && i <= c->nrows)
                psc_cmp_mark(mark, sizeof(mark), c, &c->rows[i - 1]);
            psc_report_printf(f, "%s%s%s\n", line, mark[0] ? "  " : "", mark);
        }
    }
    free(text);
    psc_table_free(t);
}

/* A value for one line: strings as they are, the rest as compact JSON, cut at 60 characters. */
static void psc__value_text(const json_t *v, char *buf, size_t len)
{
    char *s;

    if (!v) {
        snprintf(buf, len, "(absent)");
        return;
    }
    s = json_is_string(v) ? strdup(json_string_value(v)) : json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    if (!s) {
        snprintf(buf, len, "?");
        return;
    }
    if (strlen(s) > 60)
        snprintf(buf, len, "%.57s...", s);
    else
        snprintf(buf, len, "%s", s);
    free(s);
}

static void psc__render_diffs(FILE *f, const psc_compare_t *c)
{
    if (c->ndiffs == 0) {
        fprintf(f, "Machine and options: no differences recorded (driver, CUDA, GPUs, clocks, options)\n");
        return;
    }
    fprintf(f, "Machine and options that differ (A -> B):\n");
    for (size_t i = 0; i < c->ndiffs && i < PSC_CMP_TEXT_DIFFS; i++) {
        char a[80], b[80];

        psc__value_text(c->diffs[i].a, a, sizeof(a));
        psc__value_text(c->diffs[i].b, b, sizeof(b));
        psc_report_printf(f, "  %s: %s -> %s\n", c->diffs[i].field, a, b);
    }
    if (c->ndiffs > PSC_CMP_TEXT_DIFFS)
        fprintf(f, "  ... and %zu more (all of them in --json)\n", c->ndiffs - PSC_CMP_TEXT_DIFFS);
}

static void psc__render_only(FILE *f, const psc_cmp_run_t *run, const char *which, const psc_cmp_case_t *const *v,
                             size_t n)
{
    if (n == 0)
        return;
    fprintf(f, "\nOnly in %s (%zu case%s):\n", which, n, n == 1 ? "" : "s");
    for (size_t i = 0; i < n; i++)
        psc_report_printf(f, "  %s%s%s%s\n", v[i]->label, v[i]->status == PSC_CMP_PASSED ? "" : " (",
                          v[i]->status == PSC_CMP_PASSED ? "" : psc_cmp_status_text(run, v[i]),
                          v[i]->status == PSC_CMP_PASSED ? "" : ")");
}

static void psc__render_failed(FILE *f, const psc_compare_t *c)
{
    size_t k = 0;

    if (c->fail_above < 0)
        return;
    if (c->nfailed == 0) {
        fprintf(f, "\n--fail-above %g: no case got worse by more than %g %% beyond the noise\n", c->fail_above,
                c->fail_above);
        return;
    }
    fprintf(f, "\n--fail-above %g: %zu case%s got worse by more than %g %% beyond the noise, or fail%s or %s waived "
               "now:", c->fail_above, c->nfailed, c->nfailed == 1 ? "" : "s", c->fail_above, c->nfailed == 1 ? "s" : "",
            c->nfailed == 1 ? "is" : "are");
    for (size_t i = 0; i < c->nrows; i++) {
        const psc_cmp_row_t *r = &c->rows[i];

        if (!r->fails)
            continue;
        if (r->verdict == PSC_CMP_NOW_FAILS)
            psc_report_printf(f, "%s %s (failed)", k++ ? "," : "", r->label);
        else if (r->verdict == PSC_CMP_NOW_WAIVED)
            psc_report_printf(f, "%s %s (%s now)", k++ ? "," : "", r->label, psc_cmp_status_text(c->b, r->b));
        else
            psc_report_printf(f, "%s %s (%+.1f %%)", k++ ? "," : "", r->label, r->change_pct);
    }
    fprintf(f, "\n");
}

void psc_render_compare_brief(FILE *f, const psc_compare_t *c)
{
    if (c->nfailed)
        fprintf(f, "p2pscope compare: %zu case%s worse than --fail-above %g allows, or failing or waived now (see "
                "\"failed\")\n", c->nfailed, c->nfailed == 1 ? "" : "s", c->fail_above);
}

void psc_render_compare(FILE *f, const psc_compare_t *c)
{
    const json_t *sa = json_object_get(c->a->doc, "started_utc"), *sb = json_object_get(c->b->doc, "started_utc");

    psc_report_printf(f, "p2pscope compare: A = %s (%s, %s), B = %s (%s, %s)\n\n", c->a->path, c->a->command,
                      json_is_string(sa) ? json_string_value(sa) : "start not recorded", c->b->path, c->b->command,
                      json_is_string(sb) ? json_string_value(sb) : "start not recorded");
    psc__render_diffs(f, c);
    fprintf(f, "\nCases in both runs [%s; change = (B - A) / A]:\n", psc_cmp_figure_text(c->a));
    if (c->nrows)
        psc__render_rows(f, c);
    else
        fprintf(f, "  none\n");
    fprintf(f, "Marks: WORSE and better where the runs' intervals (%s) do not overlap, so the change is beyond the "
               "noise either run shows; no mark: within it; ?: fewer than %d samples in a run, not judged; FAILS now, "
               "WAIVED now: passed in A.\n",
            psc_cmp_interval_text(c->a), PSC_CMP_MIN_SAMPLES);
    psc__render_only(f, c->a, "A", c->only_a, c->nonly_a);
    psc__render_only(f, c->b, "B", c->only_b, c->nonly_b);
    psc__render_failed(f, c);
}

/* ---- JSON ---- */

const char *psc_cmp_status_name(const psc_cmp_case_t *x)
{
    return x->status == PSC_CMP_PASSED ? "passed" : x->status == PSC_CMP_FAILED ? "failed" : "waived";
}

static json_t *psc__side_json(const psc_cmp_case_t *x, double value)
{
    json_t *o = json_object();
    int bad = 0, passed = x->status == PSC_CMP_PASSED;

    psc_json_set(o, "status", psc_json_str(psc_cmp_status_name(x)), &bad);
    psc_json_set(o, "value", passed ? psc_json_real_or_null(value) : json_null(), &bad);
    psc_json_set(o, "low", passed && x->n ? json_real(x->lo) : json_null(), &bad);
    psc_json_set(o, "high", passed && x->n ? json_real(x->hi) : json_null(), &bad);
    psc_json_set(o, "samples", json_integer(x->n), &bad);
    return psc_json_done(o, bad);
}

/* The cases in one run only: {"case", "status"} each. */
static json_t *psc__labels_json(const psc_cmp_case_t *const *v, size_t n)
{
    json_t *a = json_array();
    int bad = 0;

    for (size_t i = 0; i < n; i++)
        psc_json_push(a, json_pack("{s:o,s:s}", "case", psc_json_str(v[i]->label), "status", psc_cmp_status_name(v[i])),
                      &bad);
    return psc_json_done(a, bad);
}

static json_t *psc__run_json(const psc_cmp_run_t *r)
{
    const json_t *s = json_object_get(r->doc, "started_utc");
    json_t *o = json_object();
    int bad = 0;

    psc_json_set(o, "path", psc_json_str(r->path), &bad);
    psc_json_set(o, "command", psc_json_str(r->command), &bad);
    psc_json_set(o, "started_utc", json_is_string(s) ? psc_json_str(json_string_value(s)) : json_null(), &bad);
    psc_json_set(o, "cases", json_integer((json_int_t)r->ncases), &bad);
    return psc_json_done(o, bad);
}

json_t *psc_json_compare(const psc_compare_t *c, int exit_code)
{
    json_t *doc = json_object(), *diffs = json_array(), *cases = json_array(), *failed = json_array();
    char rule[256];
    int bad = 0;

    snprintf(rule, sizeof(rule), "marked better or worse where the runs' intervals (%s) do not overlap; not judged "
             "with fewer than %d samples in a run", psc_cmp_interval_text(c->a), PSC_CMP_MIN_SAMPLES);
    psc_json_set(doc, "tool", json_pack("{s:s,s:s}", "name", "p2pscope", "version", PSC_VERSION_STRING), &bad);
    psc_json_set(doc, "command", psc_json_str("compare"), &bad);
    psc_json_set(doc, "compared", psc_json_str(c->a->command), &bad);
    psc_json_set(doc, "a", psc__run_json(c->a), &bad);
    psc_json_set(doc, "b", psc__run_json(c->b), &bad);
    psc_json_set(doc, "unit", psc_json_str(c->a->unit), &bad);
    psc_json_set(doc, "higher_is_better", json_boolean(c->a->higher_better), &bad);
    psc_json_set(doc, "rule", psc_json_str(rule), &bad);
    psc_json_set(doc, "fail_above_pct", c->fail_above >= 0 ? json_real(c->fail_above) : json_null(), &bad);
    for (size_t i = 0; i < c->ndiffs; i++) {
        const psc_cmp_diff_t *d = &c->diffs[i];

        psc_json_push(diffs,
                      json_pack("{s:o,s:O,s:O,s:s}", "field", psc_json_str(d->field), "a", d->a ? d->a : json_null(),
                                "b", d->b ? d->b : json_null(), "in", !d->a ? "b" : !d->b ? "a" : "both"),
                      &bad);
    }
    psc_json_set(doc, "differences", diffs, &bad);
    for (size_t i = 0; i < c->nrows; i++) {
        const psc_cmp_row_t *r = &c->rows[i];
        json_t *o = json_object();
        int obad = 0;

        psc_json_set(o, "case", psc_json_str(r->label), &obad);
        psc_json_set(o, "a", psc__side_json(r->a, r->va), &obad);
        psc_json_set(o, "b", psc__side_json(r->b, r->vb), &obad);
        psc_json_set(o, "change_pct", psc_json_real_or_null(r->change_pct), &obad);
        psc_json_set(o, "verdict", psc_json_str(psc_cmp_verdict_name(r->verdict)), &obad);
        psc_json_set(o, "fails", json_boolean(r->fails), &obad);
        psc_json_push(cases, psc_json_done(o, obad), &bad);
        if (r->fails)
            psc_json_push(failed, psc_json_str(r->label), &bad);
    }
    psc_json_set(doc, "cases", cases, &bad);
    psc_json_set(doc, "only_in_a", psc__labels_json(c->only_a, c->nonly_a), &bad);
    psc_json_set(doc, "only_in_b", psc__labels_json(c->only_b, c->nonly_b), &bad);
    psc_json_set(doc, "failed", failed, &bad);
    psc_json_set(doc, "exit_code", json_integer(exit_code), &bad);
    return psc_json_done(doc, bad);
}
