/* Fuzz psc_copy's calibration reader (copy --calibration FILE, psc_copy_calibration_load) and every user of what it reads. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "report/render_copy.h"

/* What was read is written again, read back and rendered: anything wrong in there is a crash or a sanitizer report. */
static void psc__use(const psc_calibration_t *cal)
{
    psc_calibration_t *again = NULL;
    const char *path;
    char err[512];
    char *text = psc_calibration_json(cal);
    FILE *devnull = fopen("/dev/null", "w");

    if (devnull) {
        psc_render_calibration(devnull, cal, "fuzz.json");
        fclose(devnull);
    }
    if (!text)
        return;
    path = psc_fuzz_write_file("again.json", (const uint8_t *)text, strlen(text));
    /* A sound calibration's own JSON is sound too. */
    if (path && psc_calibration_read(path, &again, err, sizeof(err)) != PSC_OK) {
        fprintf(stderr, "fuzz_calibration: a calibration's own JSON was refused: %s\n", err);
        abort();
    }
    psc_calibration_free(again);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = psc_fuzz_write_file("calibration.json", data, size);
    psc_calibration_t *cal = NULL;
    char err[512];

    if (path && psc_calibration_read(path, &cal, err, sizeof(err)) == PSC_OK) {
        psc__use(cal);
        psc_calibration_free(cal);
    } else if (strchr(err, '\n')) {
        abort(); /* a reason is one line */
    }
    return 0;
}
