/* render's command line, parsed apart from the measuring commands: one run's file name and where its page goes. */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "report/html_page.h"

enum { OPT_RND_HTML = 256, OPT_RND_SVG, OPT_RND_CSV };

static const char psc__rnd_usage[] =
    "accepted: p2pscope render RUN.json (--html FILE | --svg DIR | --csv DIR)... (RUN.json: bw, report or lat --json)";

/* The option getopt stepped over that render does not know: its letter, or the word as typed up to any '='. */
static int psc__rnd_unknown(char **argv, char *err, size_t errlen)
{
    const char *word = optind >= 1 ? argv[optind] : "";

    if (optopt)
        snprintf(err, errlen, "unknown option '-%c' for render: %s", optopt, psc__rnd_usage);
    else
        snprintf(err, errlen, "unknown option '%.*s' for render: %s", (int)strcspn(word, "="), word, psc__rnd_usage);
    return PSC_EXIT_USAGE;
}

/* One getopt result (an operand is c == 1): 0, or PSC_EXIT_USAGE with err set. */
static int psc__rnd_option(int c, char **argv, psc_cli_opts_t *o, char *err, size_t errlen)
{
    if (psc_cli_help_option(c, optarg, NULL, o, err, errlen) != PSC_CLI_NOT_MINE)
        return 0;
    switch (c) {
    case 1:
        if (o->render_run) {
            snprintf(err, errlen, "render takes one run, not a second ('%.200s'): %s", optarg, psc__rnd_usage);
            return PSC_EXIT_USAGE;
        }
        o->render_run = optarg;
        return 0;
    case OPT_RND_HTML:
    case OPT_RND_SVG:
    case OPT_RND_CSV:
        if (!*optarg) {
            snprintf(err, errlen, "empty %s %s: %s", c == OPT_RND_HTML ? "--html" : c == OPT_RND_SVG ? "--svg" : "--csv",
                     c == OPT_RND_HTML ? "file name" : "directory", psc__rnd_usage);
            return PSC_EXIT_USAGE;
        }
        *(c == OPT_RND_HTML ? &o->html_path : c == OPT_RND_SVG ? &o->svg_dir : &o->csv_dir) = optarg;
        return 0;
    case ':':
        snprintf(err, errlen, "option %s needs a value: %s", argv[optind] ? argv[optind] : "", psc__rnd_usage);
        return PSC_EXIT_USAGE;
    default:
        return psc__rnd_unknown(argv, err, errlen);
    }
}

/* What render needs once every word is read: a run, somewhere to write, cairo for the figures. */
static int psc__rnd_check(const psc_cli_opts_t *o, char *err, size_t errlen)
{
    if (o->help || o->version)
        return 0;
    if (!o->render_run) {
        snprintf(err, errlen, "render needs a run: %s", psc__rnd_usage);
        return PSC_EXIT_USAGE;
    }
    if (!o->html_path && !o->svg_dir && !o->csv_dir) {
        snprintf(err, errlen, "render writes nothing without --html, --svg or --csv: %s", psc__rnd_usage);
        return PSC_EXIT_USAGE;
    }
    if ((o->html_path || o->svg_dir) && !psc_page_have_figures()) {
        snprintf(err, errlen, "this p2pscope was built without cairo: install libcairo2-dev and rebuild "
                              "(--html and --svg draw with it; --csv needs no cairo)");
        return PSC_EXIT_USAGE;
    }
    return 0;
}

int psc_cli_parse_render(int argc, char **argv, psc_cli_opts_t *o, char *err, size_t errlen)
{
    static const struct option longs[] = {
        {"html", required_argument, NULL, OPT_RND_HTML},
        {"svg", required_argument, NULL, OPT_RND_SVG},
        {"csv", required_argument, NULL, OPT_RND_CSV},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    int c, rc;

    o->cmd = PSC_CMD_RENDER;
    o->cmd_given = 1;
    optind = 0; /* GNU: full reinitialisation, so the parser can run more than once */
    opterr = 0;
    /* argv[1] is "render": getopt starts after it ('-' keeps the run's name in its place, as an operand). */
    while ((c = getopt_long(argc - 1, argv + 1, "-:hV", longs, NULL)) != -1)
        if ((rc = psc__rnd_option(c, argv, o, err, errlen)) != 0)
            return rc;
    for (int i = optind + 1; i < argc; i++) { /* after "--": operands */
        optarg = argv[i];
        if ((rc = psc__rnd_option(1, argv, o, err, errlen)) != 0)
            return rc;
    }
    return psc__rnd_check(o, err, errlen);
}
