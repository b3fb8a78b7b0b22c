/*
 * Expectation files (--expect): bounds on a run's figures, and the check of
 * a finished run against them. Pure code over the run's results and the
 * machine's facts (no driver), so the CLI only loads, checks and prints.
 *
 * A file holds one rule a line, '#' starts a comment:
 *
 *     KIND TEST CASE OP VALUE UNIT [FIGURE]
 *     margin PCT%
 *
 * KIND is bw (bw and report), lat, coll, or node (check's inventory: "node
 * FACT OP VALUE", expect_node.c); TEST and CASE are shell globs
 * (fnmatch) over the test names (`bw -l`, `lat -l`, the collectives) and the
 * case names (psc_expect_case_*); a bw CASE with "@SIZE" matches the cases
 * measured at that size, one without "@" only a run at each test's own
 * (default) size (no -s, -b, -e), since a bandwidth holds only at the size it
 * was measured at; OP is >= or <=; UNIT GB/s or MB/s
 * (bandwidths), ns, us or ms (times); FIGURE the statistic (bw: median, min,
 * max, mean; lat: p50, min, p90, p99, max, mean; coll: busbw, algbw, time),
 * by default median, p50, and busbw or time by the unit. A margin line
 * loosens every rule after it: >= VALUE becomes VALUE x (1 - PCT/100), <=
 * VALUE becomes VALUE x (1 + PCT/100).
 *
 * A case a rule covers that failed or was waived (no figure) is a miss, the
 * reason in place of the figure: a health check must not pass a lost path.
 * coll busbw and algbw rules are skipped on a run of one rank (nccl-tests'
 * bus bandwidth is 0 by definition there).
 */
#ifndef PSC_REPORT_EXPECT_H
#define PSC_REPORT_EXPECT_H

#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#include "p2pscope.h"
#include "p2pscope/bench.h"

/* node: check's inventory (expect_node.c), "node FACT OP VALUE"; the runs' checks below skip it. */
typedef enum { PSC_EXPECT_BW, PSC_EXPECT_LAT, PSC_EXPECT_COLL, PSC_EXPECT_NODE, PSC_EXPECT_KINDS } psc_expect_kind_t;
typedef enum { PSC_EXPECT_GE, PSC_EXPECT_LE, PSC_EXPECT_EQ } psc_expect_op_t; /* EQ: node rules only */

#define PSC_EXPECT_GLOB_LEN 96

typedef struct {
    int kind;                        /* psc_expect_kind_t */
    char test[PSC_EXPECT_GLOB_LEN];  /* glob over test names */
    char kase[PSC_EXPECT_GLOB_LEN];  /* glob over case names (sizes written canonically: 512M -> 512MiB) */
    int op;                          /* psc_expect_op_t */
    double value;                    /* as written, in unit */
    double margin_pct;               /* the margin in force on its line */
    double bound;                    /* value loosened by the margin, in unit */
    char unit[8];                    /* "GB/s", "MB/s", "ns", "us", "ms" */
    double scale;                    /* one unit in the base unit (GB/s or ns) */
    char figure[8];                  /* "median", "p50", "busbw", ... */
    char where[160];                 /* "FILE:LINE", or what an auto rule was made from */
    int quiet;                       /* 1: matching nothing is no warning (auto rules) */
} psc_expect_rule_t;

typedef struct {
    size_t n, cap;
    psc_expect_rule_t *rules;
} psc_expect_t;

/*
 * Parse text (len bytes) named name (for messages) into *out (free with
 * psc_expect_free). PSC_ERR_INVALID with "NAME:LINE: what is wrong; accepted
 * ..." in err for the first bad line; PSC_ERR_NO_MEMORY. *out only on success.
 */
psc_status_t psc_expect_parse(const char *text, size_t len, const char *name, psc_expect_t **out, char *err,
                              size_t errlen);
/* The file at path (a regular file up to 1 MiB), parsed; a file that cannot be read: PSC_ERR_IO, err says why. */
psc_status_t psc_expect_load(const char *path, psc_expect_t **out, char *err, size_t errlen);
void psc_expect_free(psc_expect_t *e); /* NULL: nothing */
/* Append a copy of rule r (the parser's and auto's); PSC_ERR_NO_MEMORY. */
psc_status_t psc_expect_add(psc_expect_t *e, const psc_expect_rule_t *r);

/*
 * Rules from the machine's link facts (pure): for each ordered GPU pair joined
 * by NVLink, the one-direction GPU -> GPU tests at least PSC_EXPECT_AUTO_NVLINK
 * of the links' raw rate (links x speed per direction), both directions at
 * once at least PSC_EXPECT_AUTO_NVLINK_BIDIR of twice that; for each GPU whose
 * PCIe generation and width are known, pinned host <-> GPU copy-engine copies
 * at least PSC_EXPECT_AUTO_PCIE of the link's raw rate per direction. The
 * link's generation is the GPU's maximum (the current one drops at idle): the
 * facts record no speed for the port above it, which the rule's where says (a
 * Gen5 GPU behind a Gen4 port misses the bound). The NVLink bound counts the links the pair should have (the
 * GPU's links, up or down, where the facts report fewer active), so lost links
 * miss. Every rule names the size of bw's default for its tests
 * (PSC_EXPECT_AUTO_GPU_SIZE, PSC_EXPECT_AUTO_HOST_SIZE). No rule for what the
 * facts leave unknown; none at all is no error.
 */
#define PSC_EXPECT_AUTO_NVLINK 0.70
#define PSC_EXPECT_AUTO_NVLINK_BIDIR 0.60
#define PSC_EXPECT_AUTO_PCIE 0.60
#define PSC_EXPECT_AUTO_GPU_SIZE (512ull << 20) /* bw's default size for GPU <-> GPU copies */
#define PSC_EXPECT_AUTO_HOST_SIZE (32ull << 20) /* bw's default size for pinned host <-> GPU copy-engine copies */
psc_status_t psc_expect_auto(const psc_facts_t *facts, psc_expect_t **out, char *err, size_t errlen);
/* PCIe raw rate per direction, GB/s, of gen x width after line coding (Gen3 x16: 15.75); 0 unknown. */
double psc_expect_pcie_gbs(int gen, int width);

/*
 * Whether rule applies to a figure of kind's test named test, case kase, as a run at each test's own size
 * sees it (check's runs): the test glob, the case's path, and its size where the rule names one.
 */
int psc_expect_rule_applies(const psc_expect_rule_t *rule, int kind, const char *test, const char *kase);
/* A rule's figure (its "figure" name) of a bandwidth's statistics or a latency's percentiles, base unit. */
double psc_expect_bw_figure(const psc_stats_t *s, const char *figure);
double psc_expect_lat_figure(const psc_pctl_t *p, const char *figure);
/* 1 when value meets the rule's bound (NaN never does). */
int psc_expect_meets(const psc_expect_rule_t *rule, double value);
/* ">=", "<=", "=". */
const char *psc_expect_op_name(int op);

/*
 * Node rules (check's inventory), a line each: "node FACT OP VALUE", FACT one of PSC_EXPECT_NODE_FACTS,
 * OP >=, <= or =, VALUE a whole number or on/off/yes/no (1/0). Parsed from tok[0..ntok) ("node" first) into
 * *r; PSC_ERR_INVALID with "NAME:LINE: ..." in err.
 */
#define PSC_EXPECT_NODE_FACTS "gpus, nvlinks_up, pcie_gen, pcie_width, ecc, persistence, clocks_throttled, nccl"
psc_status_t psc_expect_node_rule(char **tok, int ntok, const char *name, unsigned line, psc_expect_rule_t *r,
                                  char *err, size_t errlen);
/*
 * auto's node rules from the facts: per GPU every NVLink it has up, its PCIe width at its maximum, ECC on
 * where a mode is reported, clocks not throttled where reasons are read; none for what the facts leave
 * unknown, nor for the GPU count, persistence or NCCL (auto cannot know what the node should have).
 */
psc_status_t psc_expect_auto_node(const psc_facts_t *f, psc_expect_t *e);
/* A node fact of GPU g as a node rule compares it (g < 0: the node's own: gpus, nccl); -1 where not known. */
double psc_expect_node_value(const psc_facts_t *f, const char *fact, int g);

/* The size part of a case name: 512MiB, 4KiB, 1536B (the largest binary unit that divides it). */
const char *psc_expect_size_name(uint64_t bytes, char *buf, size_t len);

/*
 * Case names, as the JSON's "direction" without spaces: gpu0->gpu1,
 * gpu0<->gpu1, host->gpu0, all->gpu1, ring; bw always, and lat in a test of
 * several sizes, "@SIZE" follows (gpu0->gpu1@512MiB). coll: the size, and
 * "/p2pscope" for p2pscope's own rows (512MiB, 512MiB/p2pscope).
 */
const char *psc_expect_case_bw(const psc_bw_result_t *r, char *buf, size_t len);
const char *psc_expect_case_lat(const psc_lat_result_t *r, unsigned size_index, char *buf, size_t len);
const char *psc_expect_case_coll(const psc_coll_row_t *row, char *buf, size_t len);

typedef struct {
    size_t rule;                     /* index into the rules */
    char test[64], kase[96], figure[48]; /* figure: the statistic, and for coll the row's half, type, op */
    double value;                    /* in the rule's unit; NAN where the case failed or was waived */
    char why[200];                   /* "" or, for a case without a figure, "failed: REASON" / "waived: REASON" */
} psc_expect_miss_t;

/*
 * What a check found: per rule how many figures it checked and whether its
 * test ran at all; the misses, in the run's order. A rule whose test did not
 * run is not applied (a file for every command fits a run of some tests);
 * one whose test ran but whose case matched nothing, or whose test glob names
 * no test at all, is unmatched: a warning, so that a typo shows.
 */
typedef struct {
    size_t nchecks, nmisses, cap;
    size_t nstatus;                  /* of the checks and misses, cases that failed or were waived */
    size_t one_rank;                 /* coll busbw/algbw rules skipped: the run has one rank */
    size_t *checks;                  /* [n rules of the set]: figures each rule checked */
    unsigned char *ran;              /* [n rules of the set]: 1 when a test its glob matches has a result here */
    int kinds;                       /* bit (1 << psc_expect_kind_t) for each kind checked */
    psc_expect_miss_t *misses;
} psc_expect_result_t;

/* 1 when rule i warns: its kind was checked, its test glob names no test, or its test ran and no case matched. */
int psc_expect_unmatched(const psc_expect_t *e, const psc_expect_result_t *r, size_t i);

/* An empty result for e (free with psc_expect_result_free); NULL out of memory. */
psc_expect_result_t *psc_expect_result_new(const psc_expect_t *e);
void psc_expect_result_free(psc_expect_result_t *r);

/* Every figure of a finished run against every rule of its kind (passed results only); PSC_ERR_NO_MEMORY. */
psc_status_t psc_expect_check_bw(const psc_expect_t *e, const psc_bw_suite_t *s, psc_expect_result_t *r);
psc_status_t psc_expect_check_lat(const psc_expect_t *e, const psc_lat_suite_t *s, psc_expect_result_t *r);
psc_status_t psc_expect_check_coll(const psc_expect_t *e, const psc_coll_report_t *c, psc_expect_result_t *r);

/*
 * One line per miss ("expect: MISS TEST CASE FIGURE VALUE UNIT (bound OP
 * BOUND UNIT, WHERE)"; "expect: MISS TEST CASE failed: REASON (bound ...)"
 * for a case without a figure), one warning per unmatched rule, one line for
 * the rules skipped on one rank, a warning where no figure was checked, then
 * "expect: N rules, M checks, K misses" (and how many rules were not applied).
 */
void psc_expect_render(FILE *f, const psc_expect_t *e, const psc_expect_result_t *r);
/* The same as JSON: {"rules", "checks", "not_applied", "failed_or_waived", "one_rank_skipped", "misses": [...]
 * (each with "reason": null, or the failure's), "unmatched": [...], "passed"}; NULL out of memory. */
json_t *psc_json_expect(const psc_expect_t *e, const psc_expect_result_t *r);

#endif
