/* --html, --svg, --csv at a run's end: hand the results to the page writers (src/report/html_page.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "report/html_buf.h"
#include "report/html_page.h"
#include "report/text.h"

/*
 * Where a word names a file (it holds a '/'), what it keeps without --identify: its option ("--json=") and the
 * path's last name, the directories (a user's home, a job's scratch) left out; into out (len bytes). Else w.
 */
static const char *psc__word_scrubbed(const char *w, int identify, char *out, size_t len)
{
    const char *eq = *w == '-' ? strchr(w, '=') : NULL, *path = eq ? eq + 1 : w, *slash = strrchr(path, '/');
    size_t end = strlen(path), start;

    if (identify || !slash)
        return w;
    while (end > 1 && path[end - 1] == '/') /* "out/": its name is "out" */
        end--;
    start = end;
    while (start > 0 && path[start - 1] != '/')
        start--;
    snprintf(out, len, "%.*s%.*s", (int)(path - w), w, (int)(end - start), path + start);
    return out;
}

char *psc_cli_command_line(const char *command, const psc_cli_opts_t *o)
{
    psc_buf_t b = {0};

    psc_buf_printf(&b, "p2pscope %s", command);
    for (int k = 0; o->args && k < o->nargs; k++) {
        char scrubbed[4096];
        const char *w = psc__word_scrubbed(o->args[k], o->identify, scrubbed, sizeof(scrubbed));
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
