/* compare's command line, parsed apart from the measuring commands: two file names and its own few options. */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

enum { OPT_CMP_JSON = 256, OPT_CMP_FAIL_ABOVE, OPT_CMP_HTML, OPT_CMP_CSV };

static const char psc__cmp_usage[] =
    "accepted: p2pscope compare A.json B.json [--fail-above PCT] [--json[=FILE]] [--html FILE] [--csv DIR]";

/* The two runs' file names, in the order given. */
typedef struct {
    const char *name[2];
    int n;
} psc__cmp_files_t;

/* One more run's file name; a third is a usage error. */
static int psc__cmp_add_file(psc__cmp_files_t *files, const char *name, char *err, size_t errlen)
{
    if (files->n == 2) {
        snprintf(err, errlen, "compare takes two runs, not a third ('%.200s'): %s", name, psc__cmp_usage);
        return PSC_EXIT_USAGE;
    }
    files->name[files->n++] = name;
    return 0;
}

/* The option getopt stepped over that compare does not know: its letter, or the word as typed up to any '='. */
static int psc__cmp_unknown(char **argv, char *err, size_t errlen)
{
    const char *word = optind >= 1 ? argv[optind] : ""; /* the word getopt stepped over (argv + 1's optind - 1) */

    if (optopt)
        snprintf(err, errlen, "unknown option '-%c' for compare: %s", optopt, psc__cmp_usage);
    else
        snprintf(err, errlen, "unknown option '%.*s' for compare: %s", (int)strcspn(word, "="), word, psc__cmp_usage);
    return PSC_EXIT_USAGE;
}

/* One getopt result (an operand is c == 1): 0, or PSC_EXIT_USAGE with err set. */
static int psc__cmp_option(int c, char **argv, psc_cli_opts_t *o, psc__cmp_files_t *files, char *err, size_t errlen)
{
    if (psc_cli_help_option(c, optarg, NULL, o, err, errlen) != PSC_CLI_NOT_MINE)
        return 0;
    switch (c) {
    case 1:
        return psc__cmp_add_file(files, optarg, err, errlen);
    case OPT_CMP_FAIL_ABOVE:
        if (psc_cli_double(optarg, 0, 1e6, &o->fail_above) != 0) {
            snprintf(err, errlen, "bad --fail-above '%.40s': accepted a percentage from 0 to 1000000, e.g. 5", optarg);
            return PSC_EXIT_USAGE;
        }
        return 0;
    case OPT_CMP_JSON:
        return psc_cli_parse_json(o, optarg, err, errlen);
    case OPT_CMP_HTML:
    case OPT_CMP_CSV:
        if (!*optarg) {
            snprintf(err, errlen, "empty %s: %s", c == OPT_CMP_HTML ? "--html file name" : "--csv directory",
                     psc__cmp_usage);
            return PSC_EXIT_USAGE;
        }
        *(c == OPT_CMP_HTML ? &o->html_path : &o->csv_dir) = optarg;
        return 0;
    case ':':
        snprintf(err, errlen, "option %s needs a value: %s", argv[optind] ? argv[optind] : "", psc__cmp_usage);
        return PSC_EXIT_USAGE;
    default:
        return psc__cmp_unknown(argv, err, errlen);
    }
}

int psc_cli_parse_compare(int argc, char **argv, psc_cli_opts_t *o, char *err, size_t errlen)
{
    static const struct option longs[] = {
        {"fail-above", required_argument, NULL, OPT_CMP_FAIL_ABOVE},
        {"json", optional_argument, NULL, OPT_CMP_JSON},
        {"html", required_argument, NULL, OPT_CMP_HTML},
        {"csv", required_argument, NULL, OPT_CMP_CSV},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    psc__cmp_files_t files = {{NULL, NULL}, 0};
    int c, rc;

    o->cmd = PSC_CMD_COMPARE;
    o->cmd_given = 1;
    o->fail_above = -1;
    optind = 0; /* GNU: full reinitialisation, so the parser can run more than once */
    opterr = 0;
    /* argv[1] is "compare": getopt starts after it ('-' keeps the file names in their order, as operands). */
    while ((c = getopt_long(argc - 1, argv + 1, "-:hV", longs, NULL)) != -1)
        if ((rc = psc__cmp_option(c, argv, o, &files, err, errlen)) != 0)
            return rc;
    /* after "--" getopt stops: the words left are operands too ("compare -- -a.json b.json") */
    for (int i = optind + 1; i < argc; i++)
        if ((rc = psc__cmp_add_file(&files, argv[i], err, errlen)) != 0)
            return rc;
    if (files.n < 2 && !o->help && !o->version) {
        snprintf(err, errlen, "compare needs two runs: %s", psc__cmp_usage);
        return PSC_EXIT_USAGE;
    }
    o->compare_a = files.name[0];
    o->compare_b = files.name[1];
    return 0;
}
