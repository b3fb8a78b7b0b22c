/*
 * What identifies a machine, left out of what p2pscope writes unless asked
 * (psc_facts_t.keep_identifiers, p2pscope --identify): the host name and the
 * serial numbers, UUIDs, asset tags and network addresses that hwloc puts
 * into its XML as <info name="..." value="..."/> elements.
 */
#ifndef PSC_TOPO_ID_SCRUB_H
#define PSC_TOPO_ID_SCRUB_H

/* Whether an hwloc info name identifies the machine (HostName, DMI serials and UUIDs, MACs, GUIDs). Pure. */
int psc__hwloc_info_identifies(const char *name, unsigned long len);

/*
 * A copy of hwloc XML text without the info elements that identify the
 * machine (the rest byte for byte); malloc'd, NULL out of memory.
 */
char *psc__hwloc_xml_scrub(const char *xml);

#endif
