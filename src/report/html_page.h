/*
 * A run as a page: --html FILE (one self-contained page: tables, inline SVG
 * figures, inline CSS, no script), --svg DIR (the same figures as files) and
 * --csv DIR (the tables). What bw, report and lat hand over; the writers only read it.
 */
#ifndef PSC_REPORT_HTML_PAGE_H
#define PSC_REPORT_HTML_PAGE_H

#include <stddef.h>

#include "p2pscope/bench.h"
#include "report/html_buf.h"

typedef struct {
    const char *command;              /* "report", "bw", "lat" */
    const char *command_line;         /* as typed, for the run's context; may be NULL */
    const psc_system_info_t *sys;
    const psc_device_info_t *devs;    /* ndev of them: the GPUs the run used */
    int ndev;
    const psc_measure_opts_t *measure; /* bw, report; NULL otherwise */
    const psc_bw_suite_t *bw;         /* NULL: no bandwidth results */
    const psc_lat_suite_t *lat;       /* NULL: no latency results */
    const psc_facts_t *facts;         /* report: the topology; NULL none */
    const psc_finding_t *findings;    /* report: the doctor's; n of them (doctor_ran 0: not run) */
    size_t nfindings;
    int doctor_ran;
    const char *started_utc;          /* "2026-11-24T10:00:00Z" */
    double wall_s;
    int exit_code;
} psc_page_t;

/* One figure of the page: its file name under --svg DIR, its title, its SVG document. */
typedef struct {
    char name[96];                    /* "gpu_to_gpu_write_ce.svg"; unique in the page */
    char title[160];
    char *svg;
} psc_page_fig_t;

typedef struct {
    size_t n;
    psc_page_fig_t *figs;
} psc_page_figs_t;

/* 1 when this build draws figures (cairo): --html and --svg need it. */
int psc_page_have_figures(void);

/* A path whose last component is longer than NAME_MAX: no file or directory of that name can be made. */
int psc_page_name_too_long(const char *path);

/*
 * Refuse an output directory that cannot be made or written before anything
 * is measured: an existing directory must be writable; a missing one needs a
 * writable parent (it is made at the end); a symlink to nothing is refused, and
 * so is a directory holding one of the writers' names (NAME.svg, NAME.csv,
 * README.txt) as anything but a regular file (a symlink, a directory, a FIFO).
 * One line in err; PSC_ERR_INVALID.
 */
psc_status_t psc_page_check_dir(const char *dir, const char *option, char *err, size_t errlen);

/*
 * Write what was asked (NULL: not asked): the page to html_path, each figure
 * to svg_dir/NAME.svg, the tables to csv_dir (bw.csv, lat.csv, ...). The page
 * through psc_write_file_atomic (a link the user named is followed); each file
 * in a directory through a new file there (0666 less the umask, O_NOFOLLOW)
 * renamed over its name, which replaces a symlink there and never follows it; a
 * missing directory made (0777 less the umask). The first failure stops it with one line in err:
 * PSC_ERR_IO, PSC_ERR_NO_MEMORY, or PSC_ERR_UNSUPPORTED for figures in a
 * build without cairo.
 */
psc_status_t psc_page_write(const psc_page_t *p, const char *html_path, const char *svg_dir, const char *csv_dir,
                            char *err, size_t errlen);

/* The figures of the page (cairo builds): heatmaps, sweeps' curves, latency distributions. */
psc_status_t psc_page_figures(const psc_page_t *p, psc_page_figs_t *out);
void psc_page_figs_free(psc_page_figs_t *figs);
/*
 * A sweep's engine twin: for a test named NAME`from` ("_ce" or "_sm"), the
 * test of s named NAME with the other ending, when it has a case; else NULL.
 */
const psc_suite_test_t *psc_page_twin(const psc_bw_suite_t *s, const char *name, const char *from);
/* Find the figure named name (without ".svg"): NULL none. */
const psc_page_fig_t *psc_page_fig_find(const psc_page_figs_t *figs, const char *name);

/* The page as one HTML document (cairo builds), malloc'd; NULL out of memory. */
char *psc_html_render(const psc_page_t *p, const psc_page_figs_t *figs);

/* The CSV tables: each file's name and text, malloc'd, n of them (*n 0 with NULL: out of memory). */
typedef struct {
    const char *name;                 /* "bw.csv", "lat.csv", "gpus.csv", "topology.csv", "findings.csv" */
    char *text;
} psc_csv_file_t;
psc_csv_file_t *psc_csv_render(const psc_page_t *p, size_t *n);
void psc_csv_free(psc_csv_file_t *files, size_t n);
/* A CSV table's parts (csv.c's rules): a header row; a text field (repaired, quoted where needed, a leading
 * = + - @ made text); a number in fmt, or an empty field when not shown; last ends the record. */
void psc_csv_header(psc_buf_t *b, const char *const *cols, int n);
void psc_csv_field(psc_buf_t *b, const char *s, int last);
void psc_csv_num(psc_buf_t *b, const char *fmt, double v, int shown, int last);

/* files into dir as psc_page_write writes --csv DIR's (the directory made when missing, each file renamed
 * over its name); the first failure stops it with one line in err. */
psc_status_t psc_page_write_dir(const char *dir, const psc_csv_file_t *files, size_t n, char *err, size_t errlen);

#endif
