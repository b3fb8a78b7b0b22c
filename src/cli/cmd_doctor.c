/* doctor: placeholder until the rules land; replays and live facts share psc_cli_facts. */
#include "cli.h"

int psc_cmd_doctor(psc_context_t *ctx, const psc_cli_opts_t *o)
{
    int rc;
    psc_facts_t *f = psc_cli_facts(ctx, o, &rc);

    psc_facts_free(f);
    return rc;
}

int psc_cmd_nvlink(psc_context_t *ctx, const psc_cli_opts_t *o)
{
    (void)ctx;
    (void)o;
    return PSC_EXIT_NA;
}
