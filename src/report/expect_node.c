/* Node rules of expectation files (expect.h): what a node should have, for p2pscope check's inventory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/p2pscope_private.h"
#include "report/expect.h"

/* NVML's clock event reasons that slow a GPU down: SW power cap, HW slowdown, SW and HW thermal, power brake
 * (the doctor's clocks_throttled rule reads the same bits). */
#define PSC__THROTTLE_BITS (0x4ll | 0x8ll | 0x20ll | 0x40ll | 0x80ll)

static const char *const psc__facts[] = {"gpus", "nvlinks_up", "pcie_gen", "pcie_width", "ecc", "persistence",
                                         "clocks_throttled", "nccl"};

static psc_status_t psc__bad(char *err, size_t errlen, const char *name, unsigned line, const char *what,
                             const char *tok)
{
    snprintf(err, errlen, "%s:%u: %s '%.40s'; accepted node FACT OP VALUE, FACT one of %s, OP >=, <= or =, VALUE "
             "a whole number or on, off, yes, no (e.g. node gpus >= 8, node ecc = on)", name, line, what, tok,
             PSC_EXPECT_NODE_FACTS);
    return PSC_ERR_INVALID;
}

static int psc__value(const char *s, double *out)
{
    static const struct { const char *word; int v; } words[] = {{"on", 1}, {"yes", 1}, {"off", 0}, {"no", 0}};
    char *end;
    long v;

    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
        if (strcmp(s, words[i].word) == 0) {
            *out = words[i].v;
            return 0;
        }
    if (s[0] < '0' || s[0] > '9')
        return -1;
    v = strtol(s, &end, 10);
    if (*end || v > 1024)
        return -1;
    *out = (double)v;
    return 0;
}

psc_status_t psc_expect_node_rule(char **tok, int ntok, const char *name, unsigned line, psc_expect_rule_t *r,
                                  char *err, size_t errlen)
{
    int fact = -1;

    memset(r, 0, sizeof(*r));
    if (ntok != 4)
        return psc__bad(err, errlen, name, line, "a node rule has 4 fields, not", ntok > 1 ? tok[1] : tok[0]);
    for (size_t i = 0; i < sizeof(psc__facts) / sizeof(psc__facts[0]); i++)
        if (strcmp(tok[1], psc__facts[i]) == 0)
            fact = (int)i;
    if (fact < 0)
        return psc__bad(err, errlen, name, line, "unknown fact", tok[1]);
    if (strcmp(tok[2], ">=") == 0)
        r->op = PSC_EXPECT_GE;
    else if (strcmp(tok[2], "<=") == 0)
        r->op = PSC_EXPECT_LE;
    else if (strcmp(tok[2], "=") == 0)
        r->op = PSC_EXPECT_EQ;
    else
        return psc__bad(err, errlen, name, line, "bad operator", tok[2]);
    if (psc__value(tok[3], &r->value) != 0)
        return psc__bad(err, errlen, name, line, "bad value", tok[3]);
    r->kind = PSC_EXPECT_NODE;
    snprintf(r->test, sizeof(r->test), "%s", psc__facts[fact]);
    snprintf(r->kase, sizeof(r->kase), "*");
    r->bound = r->value;
    r->scale = 1.0;
    snprintf(r->figure, sizeof(r->figure), "value");
    snprintf(r->where, sizeof(r->where), "%.140s:%u", name, line);
    return PSC_OK;
}

static psc_status_t psc__push(psc_expect_t *e, const char *fact, int gpu, int op, double v, const char *why)
{
    psc_expect_rule_t r;

    memset(&r, 0, sizeof(r));
    r.kind = PSC_EXPECT_NODE;
    snprintf(r.test, sizeof(r.test), "%s", fact);
    snprintf(r.kase, sizeof(r.kase), "gpu%d", gpu);
    r.op = op;
    r.value = r.bound = v;
    r.scale = 1.0;
    snprintf(r.figure, sizeof(r.figure), "value");
    snprintf(r.where, sizeof(r.where), "auto: %s", why);
    r.quiet = 1;
    return psc_expect_add(e, &r);
}

psc_status_t psc_expect_auto_node(const psc_facts_t *f, psc_expect_t *e)
{
    psc_status_t st = PSC_OK;
    char why[160];

    for (int i = 0; st == PSC_OK && i < f->ngpu && i < PSC_MAX_GPUS; i++) {
        const psc_gpu_facts_t *g = &f->gpu[i];

        snprintf(why, sizeof(why), "every NVLink of the GPU up (%d links)", g->nvlink_count);
        if (g->nvlink_count > 0)
            st = psc__push(e, "nvlinks_up", i, PSC_EXPECT_GE, g->nvlink_count, why);
        snprintf(why, sizeof(why), "the GPU's maximum width x%d", g->pcie_width_max);
        if (st == PSC_OK && g->pcie_width_max > 0)
            st = psc__push(e, "pcie_width", i, PSC_EXPECT_GE, g->pcie_width_max, why);
        if (st == PSC_OK && g->ecc >= 0)
            st = psc__push(e, "ecc", i, PSC_EXPECT_EQ, 1, "ECC on where the GPU reports a mode");
        if (st == PSC_OK && g->clock_event_reasons >= 0)
            st = psc__push(e, "clocks_throttled", i, PSC_EXPECT_EQ, 0, "no power, thermal or hardware slowdown");
    }
    return st;
}

/* One node fact of GPU g (g < 0: the node's own, gpus and nccl), as a rule compares it; -1 not known. */
double psc_expect_node_value(const psc_facts_t *f, const char *fact, int g)
{
    const psc_gpu_facts_t *x = g >= 0 && g < f->ngpu && g < PSC_MAX_GPUS ? &f->gpu[g] : NULL;
    int up = 0;

    if (strcmp(fact, "gpus") == 0)
        return f->ngpu;
    if (strcmp(fact, "nccl") == 0)
        return f->nccl.known ? f->nccl.loaded != 0 : -1;
    if (!x)
        return -1;
    if (strcmp(fact, "nvlinks_up") == 0) {
        for (int l = 0; l < x->nvlink_count && l < PSC_MAX_NVLINKS; l++)
            up += x->nvlinks[l].active == 1;
        return x->nvlink_count >= 0 ? up : -1;
    }
    if (strcmp(fact, "pcie_gen") == 0)
        return x->pcie_gen_max > 0 ? x->pcie_gen_max : x->pcie_gen > 0 ? x->pcie_gen : -1;
    if (strcmp(fact, "pcie_width") == 0)
        return x->pcie_width > 0 ? x->pcie_width : -1;
    if (strcmp(fact, "ecc") == 0)
        return x->ecc;
    if (strcmp(fact, "persistence") == 0)
        return x->persistence;
    if (strcmp(fact, "clocks_throttled") == 0)
        return x->clock_event_reasons < 0 ? -1 : (x->clock_event_reasons & PSC__THROTTLE_BITS) != 0;
    return -1;
}
