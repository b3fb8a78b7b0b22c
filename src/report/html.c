/*
 * The page (--html FILE): one self-contained HTML document. Inline CSS, the
 * figures as inline SVG, every table as an HTML table, no script, nothing
 * fetched: it opens from a mail attachment. Every string from outside (GPU
 * names, reasons, findings, command lines) goes through psc_buf_esc.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "figure_plot.h"
#include "html_buf.h"
#include "html_page.h"
#include "lib/p2pscope_private.h"
#include "render.h"

static void psc__th(psc_buf_t *b, const char *const *cols, int n)
{
    psc_buf_puts(b, "<tr>");
    for (int k = 0; k < n; k++) {
        psc_buf_puts(b, "<th>");
        psc_buf_esc(b, cols[k]);
        psc_buf_puts(b, "</th>");
    }
    psc_buf_puts(b, "</tr>\n");
}

static void psc__td(psc_buf_t *b, const char *text)
{
    psc_buf_puts(b, "<td>");
    psc_buf_esc(b, text);
    psc_buf_puts(b, "</td>");
}

static void psc__tdn(psc_buf_t *b, const char *fmt, double v)
{
    char t[64];

    snprintf(t, sizeof(t), fmt, v);
    psc_buf_puts(b, "<td class=\"n\">");
    psc_buf_esc(b, t);
    psc_buf_puts(b, "</td>");
}

/* A result that did not pass, in place of its number: FAIL, or n/a when waived. */
static void psc__td_not_passed(psc_buf_t *b, psc_result_status_t status)
{
    psc_buf_printf(b, "<td class=\"%s\">%s</td>", status == PSC_RESULT_FAILED ? "fail" : "",
                   status == PSC_RESULT_FAILED ? "FAIL" : "n/a");
}

static void psc__kv(psc_buf_t *b, const char *key, const char *value)
{
    psc_buf_puts(b, "<tr><th>");
    psc_buf_esc(b, key);
    psc_buf_puts(b, "</th>");
    psc__td(b, value && *value ? value : "unknown");
    psc_buf_puts(b, "</tr>\n");
}

/*
 * A figure inline: without its XML declaration, its ids made unique in the
 * page (several SVGs in one document share one id space).
 */
static void psc__figure(psc_buf_t *b, const psc_page_fig_t *f, int k)
{
    const char *s = f->svg, *decl_end;
    char prefix[16];

    if (strncmp(s, "<?xml", 5) == 0 && (decl_end = strstr(s, "?>")))
        s = decl_end + 2 + (decl_end[2] == '\n');
    snprintf(prefix, sizeof(prefix), "f%d-", k);
    psc_buf_puts(b, "<figure id=\"fig-");
    psc_buf_esc(b, f->name);
    psc_buf_puts(b, "\">\n");
    while (*s) {
        static const char *const refs[] = {"id=\"", "url(#", "href=\"#"};
        int hit = 0;

        for (int r = 0; r < 3 && !hit; r++) {
            size_t l = strlen(refs[r]);

            if (strncmp(s, refs[r], l) == 0) {
                psc_buf_add(b, s, l);
                psc_buf_puts(b, prefix);
                s += l;
                hit = 1;
            }
        }
        if (!hit)
            psc_buf_add(b, s++, 1);
    }
    psc_buf_puts(b, "<figcaption>");
    psc_buf_esc(b, f->name);
    psc_buf_puts(b, ".svg</figcaption></figure>\n");
}

static void psc__context(psc_buf_t *b, const psc_page_t *p)
{
    const psc_system_info_t *s = p->sys;
    char t[256];

    psc_buf_puts(b, "<section id=\"context\"><h2>Run context</h2>\n<table class=\"kv\">\n");
    snprintf(t, sizeof(t), "p2pscope %s", psc_version(NULL, NULL, NULL));
    psc__kv(b, "tool", t);
    psc__kv(b, "command line", p->command_line ? p->command_line : p->command);
    psc__kv(b, "started (UTC)", p->started_utc);
    snprintf(t, sizeof(t), "%.1f s", p->wall_s);
    psc__kv(b, "wall time", t);
    snprintf(t, sizeof(t), "%d (%s)", p->exit_code, p->exit_code == 0 ? "all passed" : p->exit_code == 1 ? "a check failed" : "see the message");
    psc__kv(b, "exit code", t);
    if (s) {
        psc__kv(b, "driver", s->driver_release);
        snprintf(t, sizeof(t), "%d.%d", s->cuda_driver_version / 1000, s->cuda_driver_version % 1000 / 10);
        psc__kv(b, "CUDA driver API", t);
        psc__kv(b, "NVML", psc_nvml_state(s));
        snprintf(t, sizeof(t), "CUDA_DEVICE_ORDER=%s%s%s", s->device_order, s->visible_devices[0] ? ", CUDA_VISIBLE_DEVICES=" : "",
                 s->visible_devices);
        psc__kv(b, "GPU numbering", t);
        snprintf(t, sizeof(t), "%d", s->numa_nodes);
        psc__kv(b, "host NUMA nodes", t);
    }
    if (p->measure) {
        const psc_measure_opts_t *m = p->measure;

        snprintf(t, sizeof(t), "%u to %u (stable within %.2f %%), %u warm-up", m->samples, m->max_samples,
                 m->stable_pct, m->warmup);
        psc__kv(b, "samples per case", t);
        psc__kv(b, "data checked", m->verify ? "every destination after every sample" : "no (--no-verify)");
    }
    psc_buf_puts(b, "</table></section>\n");
}

static void psc__inventory(psc_buf_t *b, const psc_page_t *p)
{
    static const char *const head[] = {"gpu", "nvml", "name", "pci bus id", "memory (GiB)", "SMs", "cc",
                                       "copy engines", "numa", "SM clock now/max (MHz)", "memory clock (MHz)", "temp (C)"};

    psc_buf_puts(b, "<section id=\"gpus\"><h2>GPUs</h2>\n<table>\n");
    psc__th(b, head, 12);
    for (int i = 0; i < p->ndev; i++) {
        const psc_device_info_t *d = &p->devs[i];
        char t[64];

        psc_buf_puts(b, "<tr>");
        snprintf(t, sizeof(t), "gpu%d", d->index);
        psc__td(b, t);
        snprintf(t, sizeof(t), d->nvml_index >= 0 ? "%d" : "-", d->nvml_index);
        psc__td(b, t);
        psc__td(b, d->name);
        psc__td(b, d->pci_bus_id);
        psc__tdn(b, "%.1f", (double)d->memory_bytes / (1024.0 * 1024 * 1024));
        psc__tdn(b, "%.0f", d->sm_count);
        snprintf(t, sizeof(t), "%d.%d", d->cc_major, d->cc_minor);
        psc__td(b, t);
        psc__tdn(b, "%.0f", d->async_engines);
        snprintf(t, sizeof(t), d->numa_node >= 0 ? "%d" : "-", d->numa_node);
        psc__td(b, t);
        if (d->sm_clock_mhz >= 0)
            snprintf(t, sizeof(t), "%d/%d", d->sm_clock_mhz, d->sm_clock_max_mhz);
        else
            snprintf(t, sizeof(t), "-");
        psc__td(b, t);
        snprintf(t, sizeof(t), d->mem_clock_mhz >= 0 ? "%d" : "-", d->mem_clock_mhz);
        psc__td(b, t);
        snprintf(t, sizeof(t), d->temperature_c >= 0 ? "%d" : "-", d->temperature_c);
        psc__td(b, t);
        psc_buf_puts(b, "</tr>\n");
    }
    psc_buf_puts(b, "</table></section>\n");
}

static const char *psc__yn(int v)
{
    return v < 0 ? "?" : v ? "yes" : "no";
}

/* Row i's "P2P access to" cell: for each other GPU, whether gpu i reaches it (rank, atomics) or why not. */
static void psc__p2p_access_cell(psc_buf_t *b, const psc_facts_t *f, int i)
{
    psc_buf_t acc = {0};
    char t[512], why[256];

    for (int j = 0; j < f->ngpu; j++) {
        if (i == j)
            continue;
        if (!f->has_driver)
            snprintf(t, sizeof(t), "not recorded");
        else if (f->pair[i][j].can_access == 1) {
            char rank[16] = "?"; /* -1: the driver did not say */

            if (f->pair[i][j].perf_rank >= 0)
                snprintf(rank, sizeof(rank), "%d", f->pair[i][j].perf_rank);
            snprintf(t, sizeof(t), "gpu%d yes (rank %s, atomics %s)", j, rank, psc__yn(f->pair[i][j].native_atomics));
        } else {
            snprintf(t, sizeof(t), "gpu%d no: %s", j, psc_p2p_reason(f, i, j, why, sizeof(why)));
        }
        psc_buf_printf(&acc, "%s%s", acc.len ? "; " : "", t);
    }
    psc__td(b, acc.p ? acc.p : "-");
    b->bad |= acc.bad;
    psc_buf_free(&acc);
}

/* The paths between the GPUs, src(row) -> dst(column), with each GPU's CPU affinity, NUMA node and peer access. */
static void psc__topology_paths(psc_buf_t *b, const psc_facts_t *f)
{
    char t[512];

    psc_buf_puts(b, "<p class=\"note\">Source: ");
    psc_buf_esc(b, f->source);
    psc_buf_puts(b, ". Paths, src(row) &rarr; dst(column): X the same GPU; NV# NVLinks; PIX at most one PCIe switch; "
                    "PXB several bridges; PHB a host bridge; NODE host bridges of one NUMA node; SYS across NUMA "
                    "nodes.</p>\n<table>\n<tr><th>src \\ dst</th>");
    for (int j = 0; j < f->ngpu; j++)
        psc_buf_printf(b, "<th>gpu%d</th>", j);
    psc_buf_puts(b, "<th>CPU affinity</th><th>NUMA</th><th>P2P access to</th></tr>\n");
    for (int i = 0; i < f->ngpu; i++) {
        psc_buf_printf(b, "<tr><th>gpu%d</th>", i);
        for (int j = 0; j < f->ngpu; j++)
            psc__td(b, psc_path_label(f->pair[i][j].path, f->pair[i][j].nvlinks, t, sizeof(t)));
        psc__td(b, f->gpu[i].cpuset[0] ? f->gpu[i].cpuset : "?");
        snprintf(t, sizeof(t), f->gpu[i].numa_node >= 0 ? "%d" : "N/A", f->gpu[i].numa_node);
        psc__td(b, t);
        psc__p2p_access_cell(b, f, i);
        psc_buf_puts(b, "</tr>\n");
    }
    psc_buf_puts(b, "</table>\n");
}

/* Each GPU's links and settings: PCIe, BAR1, virtualization, MIG, ECC, NVLinks, IOMMU group, CPU mapping. */
static void psc__topology_gpus(psc_buf_t *b, const psc_facts_t *f)
{
    static const char *const head[] = {"gpu", "name", "PCIe now / max", "BAR1 / memory (GiB)", "virtualization",
                                       "MIG", "ECC", "NVLinks up/all", "IOMMU group", "CPU mapping of GPU memory"};
    static const char *const virt[] = {"none", "passthrough", "vGPU", "host vGPU", "host vSGA"};
    char t[512];

    psc_buf_puts(b, "<table>\n");
    psc__th(b, head, 10);
    for (int i = 0; i < f->ngpu; i++) {
        const psc_gpu_facts_t *g = &f->gpu[i];
        char now[32], max[32], label[1400];
        int up = 0;

        for (int l = 0; l < g->nvlink_count && l < PSC_MAX_NVLINKS; l++)
            up += g->nvlinks[l].active == 1;
        psc_buf_printf(b, "<tr><td>gpu%d</td>", i);
        psc__td(b, g->name);
        snprintf(t, sizeof(t), "%s / %s", psc_pcie_label(g->pcie_gen, g->pcie_width, now, sizeof(now)),
                 psc_pcie_label(g->pcie_gen_max, g->pcie_width_max, max, sizeof(max)));
        psc__td(b, g->pcie_gen > 0 || g->pcie_gen_max > 0 ? t : "?");
        snprintf(t, sizeof(t), "%.1f / %.1f", g->bar1_bytes / 1073741824.0, g->memory_bytes / 1073741824.0);
        psc__td(b, g->bar1_bytes && g->memory_bytes ? t : "?");
        psc__td(b, g->virt_mode >= 0 && g->virt_mode <= 4 ? virt[g->virt_mode] : "?");
        psc__td(b, psc__yn(g->mig));
        psc__td(b, psc__yn(g->ecc));
        snprintf(t, sizeof(t), "%d/%d", up, g->nvlink_count);
        psc__td(b, g->nvlink_count >= 0 ? t : "?");
        snprintf(t, sizeof(t), g->iommu_group >= 0 ? "%d" : "none", g->iommu_group);
        psc__td(b, t);
        psc__td(b, psc_gpumap_label(&f->gpumap[i], label, sizeof(label)));
        psc_buf_puts(b, "</tr>\n");
    }
    psc_buf_puts(b, "</table>\n");
}

/* The host's facts: machine, NUMA nodes, VM, driver, IOMMU, the kernel's P2P parameters. */
static void psc__topology_host(psc_buf_t *b, const psc_facts_t *f)
{
    char t[512];

    psc_buf_puts(b, "<table class=\"kv\">\n");
    psc__kv(b, "machine", f->host.machine);
    snprintf(t, sizeof(t), "%d", f->host.numa_nodes);
    psc__kv(b, "NUMA nodes", t);
    psc__kv(b, "inside a VM", psc__yn(f->host.hypervisor));
    snprintf(t, sizeof(t), "%s (%s kernel module)", f->host.driver_release[0] ? f->host.driver_release : "?",
             f->host.driver_open < 0 ? "?" : f->host.driver_open ? "open" : "proprietary");
    psc__kv(b, "driver", t);
    snprintf(t, sizeof(t), "%s", f->host.iommu < 0 ? "?" : f->host.iommu ? "on" : "off");
    psc__kv(b, "IOMMU", t);
    psc__kv(b, "kernel command line (P2P parameters)", f->host.cmdline[0] ? f->host.cmdline : "none");
    psc_buf_puts(b, "</table>");
}

/* The page's topology section: the paths, the GPUs' facts, the host's. */
static void psc__topology(psc_buf_t *b, const psc_facts_t *f)
{
    psc_buf_puts(b, "<section id=\"topology\"><h2>Topology</h2>\n");
    psc__topology_paths(b, f);
    psc__topology_gpus(b, f);
    psc__topology_host(b, f);
    psc_buf_puts(b, "</section>\n");
}

/* Results not passed, with their reasons, under a test's figure. */
static void psc__bw_notes(psc_buf_t *b, const psc_bw_result_t *res, size_t n)
{
    int any = 0;

    for (size_t i = 0; i < n; i++) {
        char label[48], sz[24];

        if (res[i].status == PSC_RESULT_PASSED)
            continue;
        psc_buf_puts(b, any ? "" : "<ul class=\"note\">\n");
        any = 1;
        psc_buf_printf(b, "<li><span class=\"%s\">", res[i].status == PSC_RESULT_FAILED ? "fail" : "");
        psc_buf_esc(b, psc_case_label(&res[i].c, label, sizeof(label)));
        psc_buf_printf(b, " (%s B)</span>: %s: ", psc_render_size_text(res[i].size, sz, sizeof(sz)),
                       psc_result_status_string(res[i].status));
        psc_buf_esc(b, res[i].reason);
        psc_buf_puts(b, "</li>\n");
    }
    psc_buf_puts(b, any ? "</ul>\n" : "");
}

/* Concurrent cases: a row per transfer and the total, as the text table. */
static void psc__bw_table(psc_buf_t *b, const psc_bw_result_t *res, size_t n)
{
    static const char *const head[] = {"case", "bytes per copy", "transfer (issued by)", "GB/s"};

    psc_buf_puts(b, "<table>\n");
    psc__th(b, head, 4);
    for (size_t i = 0; i < n; i++) {
        const psc_bw_result_t *x = &res[i];
        char label[48], t[64], a[16], c[16], sz[24];

        psc_case_label(&x->c, label, sizeof(label));
        psc_render_size_text(x->size, sz, sizeof(sz));
        if (x->status != PSC_RESULT_PASSED) {
            psc_buf_puts(b, "<tr>");
            psc__td(b, label);
            psc__td(b, sz);
            psc__td(b, "");
            psc__td_not_passed(b, x->status);
            psc_buf_puts(b, "</tr>\n");
            continue;
        }
        for (int k = 0; k < x->c.nxfer; k++) {
            psc_buf_puts(b, "<tr>");
            psc__td(b, k ? "" : label);
            psc__td(b, k ? "" : sz);
            snprintf(t, sizeof(t), "%s -> %s (gpu%d)", psc_endpoint_name(x->c.xfer[k].src, a, sizeof(a)),
                     psc_endpoint_name(x->c.xfer[k].dst, c, sizeof(c)), x->c.xfer[k].issuer);
            psc__td(b, t);
            psc__tdn(b, "%.2f", x->xfer_gbs[k]);
            psc_buf_puts(b, "</tr>\n");
        }
        if (x->c.nxfer > 1) {
            psc_buf_puts(b, "<tr><td></td><td></td><th>total</th>");
            psc__tdn(b, "%.2f", x->stats.median);
            psc_buf_puts(b, "</tr>\n");
        }
    }
    psc_buf_puts(b, "</table>\n");
}

/* A sweep's numbers under its curves: a row per size, a column per case (the SM twin's cases after the CE's). */
static void psc__sweep_table(psc_buf_t *b, const psc_bw_suite_t *s, const psc_suite_test_t *const *st, int nst)
{
    psc_buf_puts(b, "<details><summary>the figures (GB/s, median per size)</summary>\n<table>\n<tr><th>bytes per copy</th>");
    for (int t = 0; t < nst; t++)
        for (size_t i = st[t]->first; i < st[t]->first + st[t]->n && s->results[i].size == s->results[st[t]->first].size;
             i++) {
            char label[48];

            psc_buf_puts(b, "<th>");
            psc_buf_esc(b, psc_case_label(&s->results[i].c, label, sizeof(label)));
            psc_buf_printf(b, " %s</th>", nst > 1 ? (t ? "SM" : "CE") : "");
        }
    psc_buf_puts(b, "</tr>\n");
    for (int z = 0; z < s->nsizes; z++) {
        char sz[24];

        psc_buf_printf(b, "<tr><td class=\"n\">%s</td>", psc_render_size_text(s->sizes[z], sz, sizeof(sz)));
        for (int t = 0; t < nst; t++)
            for (size_t i = st[t]->first; i < st[t]->first + st[t]->n; i++) {
                const psc_bw_result_t *x = &s->results[i];

                if (x->size != s->sizes[z])
                    continue;
                if (x->status == PSC_RESULT_PASSED)
                    psc__tdn(b, "%.2f", x->stats.median);
                else
                    psc__td_not_passed(b, x->status);
            }
        psc_buf_puts(b, "</tr>\n");
    }
    psc_buf_puts(b, "</table></details>\n");
}

/* A sweep split into small figures (NAME_gpuN, ...): the q-th of them, in the figures' order; NULL past the last. */
static const psc_page_fig_t *psc__part(const psc_page_figs_t *figs, const char *name, int q)
{
    size_t l = strlen(name);

    for (size_t i = 0; i < figs->n; i++)
        if (strncmp(figs->figs[i].name, name, l) == 0 && figs->figs[i].name[l] == '_' && q-- == 0)
            return &figs->figs[i];
    return NULL;
}

static int psc__parts(const psc_page_figs_t *figs, const char *name)
{
    int n = 0;

    while (psc__part(figs, name, n))
        n++;
    return n;
}

/*
 * A test's heading, NAME (and ": TITLE" unless its figure carries the title),
 * and for a test with no case the note saying why. 1 when it had no case.
 */
static int psc__test_head(psc_buf_t *b, const char *kind, const char *name, const char *title, int titled,
                          size_t ncases, int min_gpus)
{
    psc_buf_printf(b, "<h3 id=\"%s-%s\">", kind, name);
    psc_buf_esc(b, name);
    if (titled) {
        psc_buf_puts(b, ": ");
        psc_buf_esc(b, title);
    }
    psc_buf_puts(b, "</h3>\n");
    if (ncases == 0)
        psc_buf_printf(b, "<p class=\"note\">waived: needs at least %d GPUs</p>\n", min_gpus);
    return ncases == 0;
}

static void psc__bandwidth(psc_buf_t *b, const psc_bw_suite_t *s, const psc_page_figs_t *figs, int *k)
{
    psc_buf_puts(b, "<section id=\"bandwidth\"><h2>Bandwidth</h2>\n<p class=\"note\">GB/s, 1 GB = 1e9 bytes; "
                    "matrices are src(row) &rarr; dst(column); every copy's destination checked unless the run "
                    "context says otherwise.</p>\n");
    for (int t = 0; t < s->ntests; t++) {
        const psc_suite_test_t *st = &s->tests[t];
        const psc_bw_test_info_t *ti = psc_bw_test_info(st->test);
        const psc_page_fig_t *f;
        char name[112];
        int nparts;

        if (!ti)
            continue;
        snprintf(name, sizeof(name), s->nsizes > 1 ? "%s_sweep" : "%s", ti->name);
        f = psc_page_fig_find(figs, name);
        nparts = f ? 1 : s->nsizes > 1 ? psc__parts(figs, name) : 0;
        if (s->nsizes > 1 && !nparts && st->n) /* an SM test drawn beside its copy-engine twin */
            continue;
        if (!f && nparts) /* small figures, one per source GPU: the first carries the title */
            f = psc__part(figs, name, 0);
        if (psc__test_head(b, "bw", ti->name, ti->title, !f, st->n, ti->min_gpus))
            continue;
        for (int q = 0; q < nparts; q++)
            psc__figure(b, q ? psc__part(figs, name, q) : f, (*k)++);
        if (!f)
            psc__bw_table(b, s->results + st->first, st->n);
        if (f && s->nsizes > 1) {
            const psc_suite_test_t *pair[2] = {st, psc_page_twin(s, ti->name, "_ce")};

            psc__sweep_table(b, s, pair, pair[1] ? 2 : 1);
            if (pair[1])
                psc__bw_notes(b, s->results + pair[1]->first, pair[1]->n);
        }
        psc__bw_notes(b, s->results + st->first, st->n);
    }
    psc_buf_puts(b, "</section>\n");
}

static void psc__latency(psc_buf_t *b, const psc_lat_suite_t *s, const psc_page_figs_t *figs, int *k)
{
    psc_buf_printf(b, "<section id=\"latency\"><h2>Latency</h2>\n<p class=\"note\">Timers: GPU %%globaltimer steps of "
                      "%.0f ns; host CLOCK_MONOTONIC resolution %.0f ns.</p>\n", s->gpu_timer_ns, s->host_timer_ns);
    for (int t = 0; t < s->ntests; t++) {
        const psc_suite_test_t *st = &s->tests[t];
        const psc_lat_test_info_t *ti = psc_lat_test_info(st->test);
        char name[112];
        const psc_page_fig_t *f, *dist;

        if (!ti)
            continue;
        snprintf(name, sizeof(name), "%s_dist", ti->name);
        dist = psc_page_fig_find(figs, name);
        if (psc__test_head(b, "lat", ti->name, ti->title, st->n == 0 || !dist, st->n, ti->min_gpus))
            continue;
        if ((f = psc_page_fig_find(figs, ti->name)))
            psc__figure(b, f, (*k)++);
        if (dist)
            psc__figure(b, dist, (*k)++);
        for (size_t i = st->first; i < st->first + st->n; i++) {
            const psc_lat_result_t *x = &s->results[i];
            char a[16], c[16];

            if (x->status == PSC_RESULT_PASSED)
                continue;
            psc_buf_printf(b, "<p class=\"note\"><span class=\"%s\">%s -> %s</span>: %s: ",
                           x->status == PSC_RESULT_FAILED ? "fail" : "", psc_endpoint_name(x->c.src, a, sizeof(a)),
                           psc_endpoint_name(x->c.dst, c, sizeof(c)), psc_result_status_string(x->status));
            psc_buf_esc(b, x->reason);
            psc_buf_puts(b, "</p>\n");
        }
    }
    psc_buf_puts(b, "</section>\n");
}

static void psc__findings(psc_buf_t *b, const psc_page_t *p)
{
    static const char *const head[] = {"severity", "rule", "what", "evidence", "fix"};

    psc_buf_puts(b, "<section id=\"findings\"><h2>Doctor's findings</h2>\n");
    if (!p->nfindings) {
        psc_buf_puts(b, "<p>No findings: nothing wrong was seen on the paths between these GPUs.</p></section>\n");
        return;
    }
    psc_buf_puts(b, "<table>\n");
    psc__th(b, head, 5);
    for (size_t k = 0; k < p->nfindings; k++) {
        const psc_finding_t *v = &p->findings[k];

        psc_buf_printf(b, "<tr class=\"sev-%s\">", psc_severity_string(v->severity));
        psc__td(b, psc_severity_string(v->severity));
        psc__td(b, v->rule);
        psc__td(b, v->what);
        psc__td(b, v->evidence);
        psc__td(b, v->fix);
        psc_buf_puts(b, "</tr>\n");
    }
    psc_buf_puts(b, "</table></section>\n");
}

char *psc_html_render(const psc_page_t *p, const psc_page_figs_t *figs)
{
    psc_buf_t b = {0};
    int k = 0;

    psc_buf_puts(&b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                     "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>p2pscope ");
    psc_buf_esc(&b, p->command);
    psc_buf_puts(&b, " ");
    psc_buf_esc(&b, p->started_utc);
    psc_buf_printf(&b, "</title>\n<style>%s</style>\n</head>\n<body>\n<h1>p2pscope ", psc_page_css);
    psc_buf_esc(&b, p->command);
    psc_buf_puts(&b, "</h1>\n<p class=\"sub\">");
    psc_buf_printf(&b, "%d GPU%s", p->ndev, p->ndev == 1 ? "" : "s");
    if (p->ndev > 0) {
        psc_buf_puts(&b, " (");
        psc_buf_esc(&b, p->devs[0].name);
        psc_buf_puts(&b, p->ndev > 1 ? ", ...)" : ")");
    }
    psc_buf_puts(&b, "; started ");
    psc_buf_esc(&b, p->started_utc);
    psc_buf_printf(&b, " UTC; exit code %d</p>\n<nav><a href=\"#context\">context</a><a href=\"#gpus\">GPUs</a>",
                   p->exit_code);
    if (p->facts)
        psc_buf_puts(&b, "<a href=\"#topology\">topology</a>");
    if (p->bw)
        psc_buf_puts(&b, "<a href=\"#bandwidth\">bandwidth</a>");
    if (p->lat)
        psc_buf_puts(&b, "<a href=\"#latency\">latency</a>");
    if (p->doctor_ran)
        psc_buf_puts(&b, "<a href=\"#findings\">findings</a>");
    psc_buf_puts(&b, "</nav>\n");
    psc__context(&b, p);
    psc__inventory(&b, p);
    if (p->facts)
        psc__topology(&b, p->facts);
    if (p->bw)
        psc__bandwidth(&b, p->bw, figs, &k);
    if (p->lat)
        psc__latency(&b, p->lat, figs, &k);
    if (p->doctor_ran)
        psc__findings(&b, p);
    psc_buf_puts(&b, "</body>\n</html>\n");
    return psc_buf_take(&b);
}
