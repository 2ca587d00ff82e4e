/* A pcap file (the classic format, nanosecond timestamps, Ethernet link
 * type): one header, then one record per packet.  The caller serializes. */
#ifndef SV_UTIL_PCAP_H
#define SV_UTIL_PCAP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Create dir/name and write the file header; NULL with errno on failure. */
FILE *sv_pcap_create(const char *dir, const char *name);
/* One packet, stamped now. */
void sv_pcap_record(FILE *f, const uint8_t *pkt, size_t len);

#endif
