/*
 * What the command lines' parsers share (options.c, coll_options.c,
 * compare_options.c): options handed to groups in turn, -h and -V, and the
 * whole and decimal numbers of option values.
 */
#include <errno.h>
#include <stdlib.h>

#include "cli.h"

int psc_cli_option_groups(const psc_cli_option_group_t *groups, size_t n, int c, const char *arg, const char *name,
                          psc_cli_opts_t *o, char *err, size_t errlen)
{
    for (size_t g = 0; g < n; g++) {
        int rc = groups[g](c, arg, name, o, err, errlen);

        if (rc != PSC_CLI_NOT_MINE)
            return rc;
    }
    return PSC_CLI_NOT_MINE;
}

int psc_cli_help_option(int c, const char *arg, const char *name, psc_cli_opts_t *o, char *err, size_t errlen)
{
    (void)arg, (void)name, (void)err, (void)errlen;
    switch (c) {
    case 'h':
        o->help = 1;
        return 0;
    case 'V':
        o->version = 1;
        return 0;
    default:
        return PSC_CLI_NOT_MINE;
    }
}

int psc_cli_uint(const char *s, unsigned long max, unsigned long *out)
{
    unsigned long v;
    char *end;

    if (!s || *s < '0' || *s > '9')
        return -1;
    errno = 0;
    v = strtoul(s, &end, 10);
    if (errno || *end || v > max)
        return -1;
    *out = v;
    return 0;
}

int psc_cli_double(const char *s, double lo, double hi, double *out)
{
    double v;
    char *end;

    errno = 0;
    v = strtod(s, &end);
    if (errno || *end || end == s || !(v >= lo && v <= hi))
        return -1;
    *out = v;
    return 0;
}
