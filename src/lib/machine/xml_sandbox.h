/*
 * hwloc parsing of recordings someone else made, in a child process under
 * limits: hwloc 2.9 crashes, aborts or runs for minutes and gigabytes on some
 * malformed XML. The child checks the result's shape, loads hwloc's own
 * export of it once more and hands that back whole (length-framed); only
 * then does the caller load it in-process.
 *
 * The child forks without exec and runs hwloc there. In a caller with other
 * threads, a lock another thread held at the fork (hwloc's component lock
 * during its own topology init, the environment lock) stays held in the
 * child: that parse then ends at the deadline as "took longer than 10 s",
 * never as a hang. The child dies with its parent (PR_SET_PDEATHSIG).
 */
#ifndef PSC_MACHINE_XML_SANDBOX_H
#define PSC_MACHINE_XML_SANDBOX_H

#include <stddef.h>

#include "p2pscope.h"

#define PSC_XML_MAX_BYTES (64u << 20)   /* recorded XML, and the child's export of it */
#define PSC_XML_MAX_OBJECTS 65536       /* hwloc objects of all kinds */
#define PSC_XML_MAX_OS_INDEX 65536      /* PUs and NUMA nodes: bitmaps are sized by them */
#define PSC_XML_MAX_DEPTH 64            /* levels of the CPU side */
#define PSC_CAPTURE_MAX_ENTRIES 1000000 /* files, directories and links of a captured tree */

/*
 * Parse with hwloc in a child: xml (NUL-terminated) or, xml NULL, the
 * captured /sys tree at fsroot. name is what messages call it. On success
 * *vetted is hwloc's XML export of the result (malloc'd). PSC_ERR_IO when
 * hwloc refused the input, PSC_ERR_INVALID when the child crashed, ran past a
 * limit or the result is out of shape; one line in errbuf either way.
 */
psc_status_t psc__xml_sandbox_parse(const char *name, const char *xml, const char *fsroot, char **vetted,
                                    char *errbuf, size_t errlen);

/* Tests: the wall-clock and CPU limit in seconds (10 by default); returns the previous one. */
unsigned psc__xml_sandbox_set_time_limit(unsigned seconds);

#endif
