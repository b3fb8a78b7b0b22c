/*
 * The kernel command line as recordings keep it: only the parameters that
 * matter to P2P, wherever they stand (a long server line used to be cut at
 * 511 bytes, losing an iommu=pt at its end, and the doctor then blamed the
 * IOMMU), and nothing else (root UUIDs, paths, secrets given to init) in a
 * file people attach to public bug reports.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "p2pscope/bench.h"
#include "topo/cmdline.h"
#include "topo/sysfs_facts.h"

static void kept(const char *line, const char *want)
{
    char out[512];

    psc__cmdline_p2p(line, out, sizeof(out));
    if (strcmp(out, want) != 0)
        fail_msg("\"%s\" kept \"%s\", not \"%s\"", line, out, want);
}

static void test_only_p2p_parameters(void **state)
{
    (void)state;
    kept("BOOT_IMAGE=/vmlinuz root=UUID=0b5e6c1a-77f2 ro quiet intel_iommu=on iommu=pt init=/bin/x "
         "pci=noats pcie_acs_override=downstream,multifunction nvidia.NVreg_EnableStreamMemOPs=1 "
         "password=hunter2 iommu.passthrough=1 amd_iommu_dump vfio_iommu_type1.allow_unsafe_interrupts=1 "
         "swiotlb=noforce pcie_aspm=off console=ttyS0,115200",
         "intel_iommu=on iommu=pt pci=noats pcie_acs_override=downstream,multifunction "
         "nvidia.NVreg_EnableStreamMemOPs=1 iommu.passthrough=1 amd_iommu_dump "
         "vfio_iommu_type1.allow_unsafe_interrupts=1 swiotlb=noforce pcie_aspm=off");
    /* names, not prefixes, unless the name ends in '.' or '_' */
    kept("iommuv2=1 pcifoo=1 xpci=1 nvidia=1 nvidia. amd_iommu_ amd_iommu=off pci", "amd_iommu=off pci");
    /* quoted values stay whole (the kernel's own rule), tabs and newlines separate */
    kept("quiet\tpci=\"noats realloc\" acpi=\"a b\"\niommu=pt\n", "pci=\"noats realloc\" iommu=pt");
    kept("", "");
    kept(NULL, "");
    kept("quiet splash", "");
}

/* A parameter that does not fit is left out whole; what follows still may fit. */
static void test_room(void **state)
{
    char out[20]; /* "iommu=pt pci=noats" and its NUL: 19 */

    (void)state;
    psc__cmdline_p2p("iommu=pt pcie_acs_override=downstream pci=noats", out, sizeof(out));
    assert_string_equal(out, "iommu=pt pci=noats");
    psc__cmdline_p2p("iommu=pt", out, 8); /* 8 bytes and its NUL: no */
    assert_string_equal(out, "");
    psc__cmdline_p2p("iommu=pt", out, 9);
    assert_string_equal(out, "iommu=pt");
    psc__cmdline_p2p("iommu=pt", out, 0); /* nothing written */
    { /* a second parameter one byte too long for the rest: left out, nothing written past len */
        char buf[24];

        memset(buf, 'Z', sizeof(buf));
        psc__cmdline_p2p("iommu=pt pci=noats", buf, 18);
        assert_string_equal(buf, "iommu=pt");
        assert_int_equal(buf[18], 'Z');
        psc__cmdline_p2p("iommu=pt pci=noats", buf, 19);
        assert_string_equal(buf, "iommu=pt pci=noats");
    }
}

/* A captured host: the whole /proc/cmdline read, iommu=pt found at the end of a 3000-byte line. */
static void test_capture_long_line(void **state)
{
    char root[] = "/tmp/psc-cmdline-XXXXXX", path[256];
    psc_host_facts_t h;
    FILE *f;

    (void)state;
    assert_non_null(mkdtemp(root));
    snprintf(path, sizeof(path), "%s/proc", root);
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(path, sizeof(path), "%s/proc/cmdline", root);
    assert_non_null(f = fopen(path, "w"));
    for (int i = 0; i < 150; i++)
        fprintf(f, "opt%03d=abcdefghijkl ", i);
    fprintf(f, "iommu=pt\n");
    assert_int_equal(fclose(f), 0);
    memset(&h, 0, sizeof(h));
    psc__sysfs_host(root, &h);
    assert_string_equal(h.cmdline, "iommu=pt");
    unlink(path);
    snprintf(path, sizeof(path), "%s/proc", root);
    rmdir(path);
    rmdir(root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_only_p2p_parameters),
        cmocka_unit_test(test_room),
        cmocka_unit_test(test_capture_long_line),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
