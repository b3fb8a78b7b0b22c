/* compare's command line, parsed apart from the measuring commands: two file names and its own few options. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

enum { OPT_CMP_JSON = 256, OPT_CMP_FAIL_ABOVE };

static const char psc__cmp_usage[] = "accepted: p2pscope compare A.json B.json [--fail-above PCT] [--json[=FILE]]";

int psc_cli_parse_compare(int argc, char **argv, psc_cli_opts_t *o, char *err, size_t errlen)
{
    static const struct option longs[] = {
        {"fail-above", required_argument, NULL, OPT_CMP_FAIL_ABOVE},
        {"json", optional_argument, NULL, OPT_CMP_JSON},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    const char *files[2] = {NULL, NULL};
    int nfiles = 0, c;

    o->cmd = PSC_CMD_COMPARE;
    o->cmd_given = 1;
    o->fail_above = -1;
    optind = 0; /* GNU: full reinitialisation, so the parser can run more than once */
    opterr = 0;
    /* argv[1] is "compare": getopt starts after it ('-' keeps the file names in their order, as operands). */
    while ((c = getopt_long(argc - 1, argv + 1, "-:hV", longs, NULL)) != -1) {
        char *end;

        switch (c) {
        case 1:
            if (nfiles == 2) {
                snprintf(err, errlen, "compare takes two runs, not a third ('%.200s'): %s", optarg, psc__cmp_usage);
                return PSC_EXIT_USAGE;
            }
            files[nfiles++] = optarg;
            break;
        case OPT_CMP_FAIL_ABOVE:
            errno = 0;
            o->fail_above = strtod(optarg, &end);
            if (errno || *end || end == optarg || !(o->fail_above >= 0 && o->fail_above <= 1e6)) {
                snprintf(err, errlen, "bad --fail-above '%.40s': accepted a percentage from 0 to 1000000, e.g. 5",
                         optarg);
                return PSC_EXIT_USAGE;
            }
            break;
        case OPT_CMP_JSON:
            o->json = 1;
            o->json_path = optarg;
            if (optarg && !*optarg) {
                snprintf(err, errlen, "empty --json file name: accepted --json (stdout) or --json=FILE");
                return PSC_EXIT_USAGE;
            }
            break;
        case 'h':
            o->help = 1;
            break;
        case 'V':
            o->version = 1;
            break;
        case ':':
            snprintf(err, errlen, "option --fail-above needs a value: %s", psc__cmp_usage);
            return PSC_EXIT_USAGE;
        default: {
            const char *word = optind >= 1 ? argv[optind] : ""; /* the word getopt stepped over (argv + 1's optind - 1) */

            if (optopt)
                snprintf(err, errlen, "unknown option '-%c' for compare: %s", optopt, psc__cmp_usage);
            else
                snprintf(err, errlen, "unknown option '%.*s' for compare: %s", (int)strcspn(word, "="), word,
                         psc__cmp_usage);
            return PSC_EXIT_USAGE;
        }
        }
    }
    /* after "--" getopt stops: the words left are operands too ("compare -- -a.json b.json") */
    for (int i = optind + 1; i < argc; i++) {
        if (nfiles == 2) {
            snprintf(err, errlen, "compare takes two runs, not a third ('%.200s'): %s", argv[i], psc__cmp_usage);
            return PSC_EXIT_USAGE;
        }
        files[nfiles++] = argv[i];
    }
    if (nfiles < 2 && !o->help && !o->version) {
        snprintf(err, errlen, "compare needs two runs: %s", psc__cmp_usage);
        return PSC_EXIT_USAGE;
    }
    o->compare_a = files[0];
    o->compare_b = files[1];
    return 0;
}
