/* Fuzz the expectation files' parser (--expect FILE, psc_expect_parse) and the rendering of what it read. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "report/expect.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    psc_expect_t *e = NULL;
    char err[512] = "";

    if (psc_expect_parse((const char *)data, size, "fuzz.expect", &e, err, sizeof(err)) == PSC_OK) {
        psc_expect_result_t *r = psc_expect_result_new(e);
        FILE *devnull = fopen("/dev/null", "w");

        for (size_t i = 0; i < e->n; i++) /* every rule's bound loosened, never past its value the wrong way */
            if (e->rules[i].op == PSC_EXPECT_GE ? e->rules[i].bound > e->rules[i].value
                                                : e->rules[i].bound < e->rules[i].value) {
                fprintf(stderr, "fuzz_expect_file: rule %zu's bound %g tighter than its value %g\n", i,
                        e->rules[i].bound, e->rules[i].value);
                abort();
            }
        if (r && devnull)
            psc_expect_render(devnull, e, r);
        if (devnull)
            fclose(devnull);
        if (r)
            json_decref(psc_json_expect(e, r));
        psc_expect_result_free(r);
        psc_expect_free(e);
    } else if (strchr(err, '\n')) {
        abort(); /* a reason is one line */
    }
    return 0;
}
