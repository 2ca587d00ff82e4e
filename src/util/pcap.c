#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <time.h>

#include "util/pcap.h"

#define PCAP_MAGIC_NS 0xa1b23c4du   /* nanosecond timestamps */
#define PCAP_SNAPLEN  65535u
#define PCAP_ETHERNET 1u

struct pcap_file_hdr {
	uint32_t magic;
	uint16_t major, minor;
	int32_t thiszone;
	uint32_t sigfigs, snaplen, linktype;
};

struct pcap_rec_hdr {
	uint32_t sec, nsec, caplen, len;
};

FILE *sv_pcap_create(const char *dir, const char *name)
{
	struct pcap_file_hdr h = { PCAP_MAGIC_NS, 2, 4, 0, 0, PCAP_SNAPLEN, PCAP_ETHERNET };
	char path[PATH_MAX];
	FILE *f;

	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path)) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	f = fopen(path, "we");    /* cancellation off (the capture's hooks) */
	if (f && fwrite(&h, sizeof(h), 1, f) != 1) {    /* cancellation off */
		fclose(f);
		return NULL;
	}
	return f;
}

void sv_pcap_record(FILE *f, const uint8_t *pkt, size_t len)
{
	struct timespec ts;
	struct pcap_rec_hdr r;

	clock_gettime(CLOCK_REALTIME, &ts);
	r.sec = (uint32_t)ts.tv_sec;
	r.nsec = (uint32_t)ts.tv_nsec;
	r.caplen = r.len = (uint32_t)len;
	fwrite(&r, sizeof(r), 1, f);    /* cancellation off (the capture's hooks) */
	fwrite(pkt, 1, len, f);         /* cancellation off */
}
