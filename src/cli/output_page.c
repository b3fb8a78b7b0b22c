/* --html, --svg, --csv at a run's end: hand the results to the page writers (src/report/html_page.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "report/html_buf.h"
#include "report/html_page.h"
#include "report/text.h"

char *psc_cli_command_line(const char *command, const psc_cli_opts_t *o)
{
    psc_buf_t b = {0};

    psc_buf_printf(&b, "p2pscope %s", command);
    for (int k = 0; o->args && k < o->nargs; k++) {
        const char *w = o->args[k];
        int plain = *w != '\0';

        for (const char *c = w; *c && plain; c++)
            plain = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=.,:/+@%", *c) != NULL;
        psc_buf_puts(&b, plain ? " " : " '");
        for (const char *c = w; *c; c++) /* a word with a quote is never plain: it is in quotes */
            psc_buf_puts(&b, *c == '\'' ? "'\\''" : (char[2]){*c, 0});
        psc_buf_puts(&b, plain ? "" : "'");
    }
    return psc_buf_take(&b);
}

void psc_cli_started_utc(double wall_s, char *buf, size_t len)
{
    time_t started = time(NULL) - (time_t)wall_s;
    struct tm tm;

    buf[0] = '\0';
    if (gmtime_r(&started, &tm))
        strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int psc_cli_write_page(const psc_cli_opts_t *o, const char *command, const psc_system_info_t *sys,
                       const psc_device_info_t *devs, int ndev, const psc_bw_suite_t *bw, const psc_lat_suite_t *lat,
                       const psc_facts_t *facts, const psc_finding_t *findings, size_t nfindings, double wall_s,
                       int rc)
{
    psc_page_t p = {0};
    char when[32], err[1024];
    psc_status_t st;

    if (!o->html_path && !o->svg_dir && !o->csv_dir)
        return rc;
    psc_cli_started_utc(wall_s, when, sizeof(when));
    p.command = command;
    p.command_line = psc_cli_command_line(command, o);
    p.sys = sys;
    p.devs = devs;
    p.ndev = ndev;
    p.measure = bw ? &o->measure : NULL;
    p.bw = bw;
    p.lat = lat;
    p.facts = facts;
    p.started_utc = when;
    p.wall_s = wall_s;
    p.exit_code = rc;
    p.findings = findings;
    p.nfindings = nfindings;
    p.doctor_ran = findings != NULL;
    st = psc_page_write(&p, o->html_path, o->svg_dir, o->csv_dir, err, sizeof(err));
    free((char *)p.command_line);
    if (st != PSC_OK) {
        psc_report_printf(stderr, "p2pscope: %s\n", err);
        return psc_cli_exit_of(st, PSC_EXIT_FAILED);
    }
    return rc;
}
