/* nvlink: placeholder, filled in by the nvlink change. */
#include "cli.h"

int psc_cmd_nvlink(psc_context_t *ctx, const psc_cli_opts_t *o)
{
    (void)ctx;
    (void)o;
    return PSC_EXIT_NA;
}
