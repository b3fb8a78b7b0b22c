/*
 * `p2pscope nvbandwidth`'s command line: nvbandwidth 0.8's options, as its
 * boost::program_options parser takes them (-b 512, -b512, --bufferSize=512,
 * grouped flags -vj, -t and -p followed by several words), into the bw
 * measurement they mean (nvbw_map.h's defaults). Its help.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "report/nvbw_map.h"

/* nvbandwidth's options: letter (0: long only), name, and what follows: 0 nothing, 1 a value, 2 one or more words. */
static const struct {
    char letter;
    const char *name;
    int takes;
} psc__nvbw_opts[] = {
    {'h', "help", 0},        {'b', "bufferSize", 1},  {'l', "list", 0},           {'t', "testcase", 2},
    {'p', "testcasePrefixes", 2}, {'v', "verbose", 0}, {'s', "skipVerification", 0}, {'d', "disableAffinity", 0},
    {'i', "testSamples", 1}, {'m', "useMean", 0},     {'j', "json", 0},           {0, "loopCount", 1},
    {0, "perfFormatter", 0},
};
#define PSC__NVBW_NOPTS (int)(sizeof(psc__nvbw_opts) / sizeof(psc__nvbw_opts[0]))

static const char psc__nvbw_accepted[] = "see p2pscope nvbandwidth --help";

/* The words of -t and -p, checked once the whole line is read (nvbandwidth refuses both together first). */
typedef struct {
    const char *names[PSC_CLI_MAX_NVBW_TESTS], *prefixes[PSC_CLI_MAX_NVBW_TESTS];
    int nnames, nprefixes;
    unsigned samples, loops;
} psc__nvbw_words_t;

/* One value of -b, -i or --loopCount. */
static int psc__nvbw_value(int k, const char *v, psc_cli_opts_t *o, psc__nvbw_words_t *w, char *err, size_t errlen)
{
    unsigned long x = 0;

    switch (psc__nvbw_opts[k].letter) {
    case 'b':
        if (psc_cli_uint(v, 1048576, &x) != 0 || x == 0) {
            snprintf(err, errlen, "bad -b/--bufferSize '%.40s': accepted MiB per copy, a whole number from 1 to 1048576 "
                     "(default %u)", v, PSC_NVBW_DEFAULT_MIB);
            return PSC_EXIT_USAGE;
        }
        o->nvbw.buffer_mib = (unsigned)x;
        return 0;
    case 'i':
        if (psc_cli_uint(v, PSC_MAX_SAMPLES, &x) != 0 || x == 0) {
            snprintf(err, errlen, "bad -i/--testSamples '%.40s': accepted 1 to %d samples (default %u)", v,
                     PSC_MAX_SAMPLES, PSC_NVBW_DEFAULT_SAMPLES);
            return PSC_EXIT_USAGE;
        }
        w->samples = (unsigned)x;
        return 0;
    default: /* --loopCount */
        if (psc_cli_uint(v, 100000, &x) != 0 || x == 0) {
            snprintf(err, errlen, "bad --loopCount '%.40s': accepted 1 to 100000 copies per sample (default %u)", v,
                     PSC_NVBW_DEFAULT_LOOPS);
            return PSC_EXIT_USAGE;
        }
        w->loops = (unsigned)x;
        return 0;
    }
}

/* A word of -t or -p. */
static int psc__nvbw_word(int k, const char *v, psc__nvbw_words_t *w, char *err, size_t errlen)
{
    const int prefix = psc__nvbw_opts[k].letter == 'p';
    int *n = prefix ? &w->nprefixes : &w->nnames;

    if (*n == PSC_CLI_MAX_NVBW_TESTS) {
        snprintf(err, errlen, "too many test names: accepted at most %d", PSC_CLI_MAX_NVBW_TESTS);
        return PSC_EXIT_USAGE;
    }
    (prefix ? w->prefixes : w->names)[(*n)++] = v;
    return 0;
}

/* A flag: the help, the list, -j, -v, -s, -d (p2pscope moves no thread: nothing to disable), --perfFormatter. */
static int psc__nvbw_flag(int k, psc_cli_opts_t *o, char *err, size_t errlen)
{
    switch (psc__nvbw_opts[k].letter) {
    case 'h': o->help = 1; return 0;
    case 'l': o->nvbw.list = 1; return 0;
    case 'j': o->nvbw.json = 1; return 0;
    case 'v': o->nvbw.verbose = 1; return 0;
    case 's': o->measure.verify = 0; return 0;
    case 'd': return 0;
    case 'm':
        snprintf(err, errlen, "-m/--useMean is not supported: p2pscope nvbandwidth reports medians, nvbandwidth's "
                 "default (p2pscope bw --json keeps each case's mean)");
        return PSC_EXIT_USAGE;
    default: o->nvbw.perf = 1; return 0; /* --perfFormatter */
    }
}

static int psc__nvbw_find_long(const char *name, size_t len)
{
    for (int k = 0; k < PSC__NVBW_NOPTS; k++)
        if (strlen(psc__nvbw_opts[k].name) == len && strncmp(psc__nvbw_opts[k].name, name, len) == 0)
            return k;
    return -1;
}

static int psc__nvbw_find_short(char c)
{
    for (int k = 0; k < PSC__NVBW_NOPTS; k++)
        if (psc__nvbw_opts[k].letter == c)
            return k;
    return -1;
}

/* Option k, with the value typed onto it (att; NULL: none): a flag, or its value, or -t's and -p's words (att or
 * the next word, then every word after it up to the next option). */
static int psc__nvbw_take(int k, const char *att, int argc, char **argv, int *i, psc_cli_opts_t *o,
                          psc__nvbw_words_t *w, char *err, size_t errlen)
{
    const int takes = psc__nvbw_opts[k].takes;
    int rc;

    if (!takes && att) {
        snprintf(err, errlen, "option --%s takes no value: %s", psc__nvbw_opts[k].name, psc__nvbw_accepted);
        return PSC_EXIT_USAGE;
    }
    if (!takes)
        return psc__nvbw_flag(k, o, err, errlen);
    if (!att) {
        if (*i + 1 >= argc || (argv[*i + 1][0] == '-' && argv[*i + 1][1])) {
            snprintf(err, errlen, "option --%s needs a value: %s", psc__nvbw_opts[k].name, psc__nvbw_accepted);
            return PSC_EXIT_USAGE;
        }
        att = argv[++*i];
    }
    if (takes == 1)
        return psc__nvbw_value(k, att, o, w, err, errlen);
    if ((rc = psc__nvbw_word(k, att, w, err, errlen)) != 0)
        return rc;
    while (*i + 1 < argc && argv[*i + 1][0] != '-')
        if ((rc = psc__nvbw_word(k, argv[++*i], w, err, errlen)) != 0)
            return rc;
    return 0;
}

/* The word at *i: a long option (--name, --name=value), short ones grouped (-vj, -b512), nothing else. */
static int psc__nvbw_one(int argc, char **argv, int *i, psc_cli_opts_t *o, psc__nvbw_words_t *w, char *err,
                         size_t errlen)
{
    const char *a = argv[*i];
    int k, rc;

    if (a[0] == '-' && a[1] == '-' && a[2]) {
        const char *eq = strchr(a + 2, '=');
        const size_t len = eq ? (size_t)(eq - a - 2) : strlen(a + 2);

        if ((k = psc__nvbw_find_long(a + 2, len)) < 0) {
            snprintf(err, errlen, "unknown option '--%.*s' for nvbandwidth: %s", (int)(len > 60 ? 60 : len), a + 2,
                     psc__nvbw_accepted);
            return PSC_EXIT_USAGE;
        }
        return psc__nvbw_take(k, eq ? eq + 1 : NULL, argc, argv, i, o, w, err, errlen);
    }
    if (a[0] != '-' || !a[1]) {
        snprintf(err, errlen, "unexpected word '%.60s' for nvbandwidth: test names follow -t; %s", a,
                 psc__nvbw_accepted);
        return PSC_EXIT_USAGE;
    }
    for (const char *p = a + 1; *p; p++) {
        if ((k = psc__nvbw_find_short(*p)) < 0) {
            snprintf(err, errlen, "unknown option '-%c' for nvbandwidth: %s", *p, psc__nvbw_accepted);
            return PSC_EXIT_USAGE;
        }
        if (psc__nvbw_opts[k].takes)
            return psc__nvbw_take(k, p[1] ? p + 1 : NULL, argc, argv, i, o, w, err, errlen);
        if ((rc = psc__nvbw_flag(k, o, err, errlen)) != 0)
            return rc;
    }
    return 0;
}

static int psc__nvbw_add(psc_cli_opts_t *o, int k)
{
    if (o->nvbw.ntests < PSC_CLI_MAX_NVBW_TESTS)
        o->nvbw.tests[o->nvbw.ntests++] = k;
    return 0;
}

/* -t's names or indexes in the order given, or every test that one of -p's words begins, in nvbandwidth's order. */
static int psc__nvbw_tests(const psc__nvbw_words_t *w, psc_cli_opts_t *o, char *err, size_t errlen)
{
    if (w->nnames && w->nprefixes) {
        snprintf(err, errlen, "-t/--testcase and -p/--testcasePrefixes cannot be given together: accepted one of them");
        return PSC_EXIT_USAGE;
    }
    for (int n = 0; n < w->nnames; n++) {
        const int k = psc_nvbw_test_find(w->names[n]);

        if (k < 0) {
            snprintf(err, errlen, "no nvbandwidth test named '%.200s': accepted a name or an index 0 to %d from "
                     "'p2pscope nvbandwidth -l', e.g. device_to_device_memcpy_read_ce", w->names[n],
                     psc_nvbw_test_count() - 1);
            return PSC_EXIT_USAGE;
        }
        psc__nvbw_add(o, k);
    }
    for (int k = 0; k < psc_nvbw_test_count(); k++)
        for (int n = 0; n < w->nprefixes; n++)
            if (strncmp(psc_nvbw_test_at(k)->name, w->prefixes[n], strlen(w->prefixes[n])) == 0) {
                psc__nvbw_add(o, k);
                break;
            }
    if (w->nprefixes && !o->nvbw.ntests) {
        snprintf(err, errlen, "no nvbandwidth test begins with the -p/--testcasePrefixes given: accepted the start "
                 "of a name from 'p2pscope nvbandwidth -l', e.g. device_to_device");
        return PSC_EXIT_USAGE;
    }
    return 0;
}

int psc_cli_parse_nvbw(int argc, char **argv, psc_cli_opts_t *o, char *err, size_t errlen)
{
    psc__nvbw_words_t w = {.nnames = 0, .samples = PSC_NVBW_DEFAULT_SAMPLES, .loops = PSC_NVBW_DEFAULT_LOOPS};
    int rc;

    memset(o, 0, sizeof(*o));
    psc_measure_opts_default(&o->measure);
    psc_verify_opts_default(&o->verify);
    psc_test_hooks_default(&o->hooks);
    o->cmd = PSC_CMD_NVBW;
    o->cmd_given = 1;
    o->nvbw.buffer_mib = PSC_NVBW_DEFAULT_MIB;
    o->args = (const char *const *)argv + 2;
    o->nargs = argc - 2;
    for (int i = 2; i < argc; i++)
        if ((rc = psc__nvbw_one(argc, argv, &i, o, &w, err, errlen)) != 0)
            return rc;
    if (o->help)
        return 0;
    if ((rc = psc__nvbw_tests(&w, o, err, errlen)) != 0)
        return rc;
    o->measure.size = (uint64_t)o->nvbw.buffer_mib << 20;
    o->measure.samples = o->measure.max_samples = w.samples; /* nvbandwidth's samples: that many, no more */
    o->measure.iterations = w.loops;
    return 0;
}

void psc_cli_usage_nvbw(void)
{
    printf("usage: p2pscope nvbandwidth [OPTIONS]\n"
           "\n"
           "nvbandwidth " PSC_NVBW_VERSION "'s test cases, run as p2pscope's bandwidth tests (each figure measured and every\n"
           "copy checked as `p2pscope bw` does) and printed in nvbandwidth's text, or its JSON with -j, so its\n"
           "parsers read them. p2pscope(1) has the table of nvbandwidth's tests and p2pscope's; the latency tests\n"
           "are printed as waived (p2pscope lat has them).\n"
           "\n"
           "nvbandwidth's options (the same meanings and defaults):\n"
           "  -b, --bufferSize MIB       MiB per copy, 1 to 1048576 (default 512)\n"
           "  -i, --testSamples N        timed samples per case, 1 to %d (default 3); the median is reported\n"
           "  -t, --testcase NAME...     tests to run, by name or index (p2pscope nvbandwidth -l); default all\n"
           "  -p, --testcasePrefixes P...  every test whose name begins with one of them\n"
           "  -l, --list                 nvbandwidth's tests, each with the p2pscope test that measures it\n"
           "  -j, --json                 nvbandwidth's JSON document on stdout instead of its text\n"
           "  -v, --verbose              MIN, MAX and AVG after each SUM line (JSON: min, max, average); not\n"
           "                             nvbandwidth's per-sample lines\n"
           "  -s, --skipVerification     do not check the destinations after each sample\n"
           "  -d, --disableAffinity      accepted; p2pscope sets no CPU affinity (host memory is bound to the\n"
           "                             GPU's NUMA node)\n"
           "      --loopCount N          copies per timed sample, 1 to 100000 (default 16)\n"
           "      --perfFormatter        \"&&&& PERF <test> <sum> +GB/s\" in place of each SUM line\n"
           "  -h, --help                 this text\n"
           "-m/--useMean is refused: the figures are medians.\n"
           "\n"
           "Example:\n"
           "  p2pscope nvbandwidth -t device_to_device_memcpy_read_ce device_to_device_memcpy_write_ce -j\n"
           "\n"
           "Bandwidth is in GB/s, 1 GB = 1e9 bytes. Exit codes: 0 all passed, 1 a check failed, 2 usage error,\n"
           "3 no driver/GPU, 4 out of memory.\n",
           PSC_MAX_SAMPLES);
}
