/*
 * For the tests of the option parser (cmocka): PARSE(&opts, "bw", "-s", "4K")
 * runs psc_cli_parse on "p2pscope bw -s 4K", its one-line error into err.
 */
#ifndef PSC_TESTS_CLI_PARSE_H
#define PSC_TESTS_CLI_PARSE_H

#include "cli.h"

#define ARGV(...) ((char *[]){"p2pscope", __VA_ARGS__, NULL})
#define ARGC(...) ((int)(sizeof((char *[]){"p2pscope", __VA_ARGS__}) / sizeof(char *)))
#define PARSE(o, ...) psc_cli_parse(ARGC(__VA_ARGS__), ARGV(__VA_ARGS__), (o), err, sizeof(err))

static char err[512];

#endif
