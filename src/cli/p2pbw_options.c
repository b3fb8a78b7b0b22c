/*
 * `p2pscope p2pbw`'s command line: cuda-samples' p2pBandwidthLatencyTest's
 * options, as its helper_string.h reads them (one or two dashes, a value
 * after '='), plus --json[=FILE]; everything else refused. Its help.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "report/p2pbw_map.h"

/* The largest --numElems: 2 GiB a copy (the sample's int count goes further, no GPU pair's memory does). */
#define PSC__P2PBW_MAX_ELEMS 536870912ul

static const char psc__p2pbw_accepted[] =
    "accepted --p2p_read, --sm_copy, --numElems=N, --json[=FILE], --help (see p2pscope p2pbw --help)";

/* The word without its one or two leading dashes, as the sample's flags are matched; NULL when it has none. */
static const char *psc__p2pbw_flag(const char *a)
{
    if (a[0] != '-' || !a[1])
        return NULL;
    return a[1] == '-' ? a + 2 : a + 1;
}

static int psc__p2pbw_elems(const char *v, psc_cli_opts_t *o, char *err, size_t errlen)
{
    unsigned long x = 0;

    if (psc_cli_uint(v, PSC__P2PBW_MAX_ELEMS, &x) != 0 || x == 0) {
        snprintf(err, errlen, "bad --numElems '%.40s': accepted ints per copy, a whole number from 1 to %lu "
                 "(default %u)", v, PSC__P2PBW_MAX_ELEMS, PSC_P2PBW_DEFAULT_ELEMS);
        return PSC_EXIT_USAGE;
    }
    o->p2pbw.num_elems = (unsigned)x;
    return 0;
}

/* One word of the command line. */
static int psc__p2pbw_one(const char *a, psc_cli_opts_t *o, char *err, size_t errlen)
{
    const char *f = psc__p2pbw_flag(a);

    if (!f) {
        snprintf(err, errlen, "unexpected word '%.60s' for p2pbw: %s", a, psc__p2pbw_accepted);
        return PSC_EXIT_USAGE;
    }
    if (strcmp(f, "help") == 0 || strcmp(a, "-h") == 0)
        o->help = 1;
    else if (strcmp(f, "p2p_read") == 0)
        o->p2pbw.p2p_read = 1;
    else if (strcmp(f, "sm_copy") == 0)
        o->p2pbw.sm_copy = 1;
    else if (strncmp(f, "numElems=", 9) == 0)
        return psc__p2pbw_elems(f + 9, o, err, errlen);
    else if (strcmp(f, "numElems") == 0) {
        snprintf(err, errlen, "option --numElems needs its value after '=': accepted --numElems=N, e.g. "
                 "--numElems=%u", PSC_P2PBW_DEFAULT_ELEMS);
        return PSC_EXIT_USAGE;
    } else if (strcmp(a, "--json") == 0 || strncmp(a, "--json=", 7) == 0)
        return psc_cli_parse_json(o, a[6] ? a + 7 : NULL, err, errlen);
    else {
        snprintf(err, errlen, "unknown option '%.60s' for p2pbw: %s", a, psc__p2pbw_accepted);
        return PSC_EXIT_USAGE;
    }
    return 0;
}

int psc_cli_parse_p2pbw(int argc, char **argv, psc_cli_opts_t *o, char *err, size_t errlen)
{
    int rc;

    memset(o, 0, sizeof(*o));
    psc_measure_opts_default(&o->measure);
    psc_verify_opts_default(&o->verify);
    psc_test_hooks_default(&o->hooks);
    o->cmd = PSC_CMD_P2PBW;
    o->cmd_given = 1;
    o->p2pbw.num_elems = PSC_P2PBW_DEFAULT_ELEMS;
    o->args = (const char *const *)argv + 2;
    o->nargs = argc - 2;
    for (int i = 2; i < argc; i++)
        if ((rc = psc__p2pbw_one(argv[i], o, err, errlen)) != 0)
            return rc;
    o->measure.size = (uint64_t)o->p2pbw.num_elems * 4;
    o->measure.iterations = PSC_P2PBW_REPEAT; /* the sample's copies per timing */
    return 0;
}

void psc_cli_usage_p2pbw(void)
{
    printf("usage: p2pscope p2pbw [OPTIONS]\n"
           "\n"
           "cuda-samples' p2pBandwidthLatencyTest's matrices (P2P disabled and enabled, one and both directions,\n"
           "latency), measured by p2pscope's bw and lat tests (every copy checked) and printed line for line as\n"
           "the sample prints them; \"N/A\" where p2pscope has no measurement (p2pscope(1) says which).\n"
           "\n"
           "The sample's options (the same meanings and defaults):\n"
           "  --p2p_read                 also the P2P-enabled read matrices (the destination GPU issues)\n"
           "  --sm_copy                  P2P-enabled bandwidth by SM copy kernels instead of copy engines\n"
           "  --numElems=N               ints per copy, 1 to %lu (default %u: 160 MB)\n"
           "  --help                     this text (also -h)\n"
           "p2pscope's:\n"
           "  --json[=FILE]              the same figures as JSON, on stdout instead of the text, or into FILE\n"
           "\n"
           "Example:\n"
           "  p2pscope p2pbw --p2p_read --numElems=10000000\n"
           "\n"
           "Bandwidth in GB/s, 1 GB = 1e9 bytes; latency in us. Exit codes: 0 all passed, 1 a check failed,\n"
           "2 usage error, 3 no driver/GPU, 4 out of memory.\n",
           PSC__P2PBW_MAX_ELEMS, PSC_P2PBW_DEFAULT_ELEMS);
}
