/* render: a JSON run of bw, report or lat drawn again as its page, figures and tables (src/report/run_load.c); no driver. */
#include <stdio.h>

#include "cli.h"
#include "report/run_load.h"
#include "report/text.h"

int psc_cmd_render(const psc_cli_opts_t *o)
{
    char err[1024];
    int loaded = 0;
    psc_status_t st;

    if (psc_cli_same_file(o->html_path, o->render_run)) { /* refused before anything is read */
        psc_report_printf(stderr, "p2pscope: --html %s would replace the run it draws: accepted another file for the "
                          "page\n", o->html_path);
        return PSC_EXIT_USAGE;
    }
    st = psc_render_run(o->render_run, o->html_path, o->svg_dir, o->csv_dir, &loaded, err, sizeof(err));

    if (st == PSC_OK)
        return PSC_EXIT_OK;
    psc_report_printf(stderr, "p2pscope: %s\n", err);
    /* a run that does not load is bad input (2), as compare's; a page not written a failed run (1), as the live run's */
    return psc_cli_exit_of(st, loaded ? PSC_EXIT_FAILED : PSC_EXIT_USAGE);
}
