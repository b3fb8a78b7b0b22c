/*
 * What is wrong with the GPU paths of this machine (or of a recording)?
 * A small program on the installed library's application API only:
 *   cc doctor.c $(pkg-config --cflags --libs p2pscope) -o doctor
 *   ./doctor                  this machine (needs the NVIDIA driver)
 *   ./doctor machine.json     a recording (p2pscope topo --save), no driver needed
 * Exit: 0 no error finding, 1 an error finding, 3 nothing to examine.
 */
#include <stdio.h>
#include <stdlib.h>

#include <p2pscope.h>

int main(int argc, char **argv)
{
    psc_context_t *ctx = NULL;
    psc_facts_t *facts = psc_facts_new();
    psc_finding_t *findings;
    char err[512];
    size_t n, errors = 0;
    psc_status_t st;

    if (!facts)
        return 3;
    if (argc > 1) {
        st = psc_facts_load(argv[1], facts, err, sizeof(err));
    } else if ((st = psc_context_create(&ctx, err, sizeof(err))) == PSC_OK &&
               (st = psc_facts_examine(ctx, facts)) != PSC_OK) { /* with a verified copy per peer pair */
        snprintf(err, sizeof(err), "%s", psc_context_last_error(ctx));
    }
    if (st != PSC_OK) {
        fprintf(stderr, "doctor: %s\n", err);
        psc_context_destroy(ctx);
        psc_facts_free(facts);
        return 3;
    }
    n = psc_doctor(facts, NULL, 0);
    findings = calloc(n ? n : 1, sizeof(*findings));
    if (!findings)
        return 3;
    n = psc_doctor(facts, findings, n);
    printf("libp2pscope %s: %d GPU%s, %zu finding%s\n", psc_version(NULL, NULL, NULL), facts->ngpu,
           facts->ngpu == 1 ? "" : "s", n, n == 1 ? "" : "s");
    for (size_t k = 0; k < n; k++) {
        printf("[%s] %s: %s\n    fix: %s\n", psc_severity_string(findings[k].severity), findings[k].rule,
               findings[k].what, findings[k].fix);
        errors += findings[k].severity == PSC_SEV_ERROR;
    }
    free(findings);
    psc_facts_free(facts);
    psc_context_destroy(ctx);
    return errors ? 1 : 0;
}
