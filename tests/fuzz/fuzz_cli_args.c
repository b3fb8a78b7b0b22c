/* Fuzz the argument parser: the input is the arguments after the program name, separated by NUL bytes. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fuzz_util.h"

#define PSC_FUZZ_MAX_ARGS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *copy = malloc(size + 1), *argv[PSC_FUZZ_MAX_ARGS + 2];
    char err[512] = "", prog[] = "p2pscope";
    psc_cli_opts_t o;
    int argc = 1, rc;

    if (!copy)
        return 0;
    memcpy(copy, data, size);
    copy[size] = '\0';
    argv[0] = prog;
    for (size_t i = 0; i <= size && argc <= PSC_FUZZ_MAX_ARGS;) {
        argv[argc++] = copy + i;
        i += strlen(copy + i) + 1;
    }
    argv[argc] = NULL;
    rc = psc_cli_parse(argc, argv, &o, err, sizeof(err));
    /* A refusal says why in one line; an acceptance is within the documented bounds. */
    if (rc != 0 && (rc != PSC_EXIT_USAGE || !err[0] || strchr(err, '\n')))
        abort();
    if (rc == 0 && (o.ndev < 0 || o.ndev > PSC_CLI_MAX_DEVS || o.ntests < 0 || o.ntests > PSC_CLI_MAX_TESTS))
        abort();
    free(copy);
    return 0;
}
