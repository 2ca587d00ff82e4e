/* status_fake DIR MODE: a status file (status/format.h) in DIR, named by
 * this process's pid, as softverbs status must take it:
 *   live       a well-formed file with one RC QP in RTS (qpn 0x1234,
 *              5 SENDs sent) and 3 more that got no slot, its lock held
 *              until killed (or 30 s)
 *   badver     the same with the next format version
 *   malformed  the same with a slot size this reader does not know
 *   dead       a well-formed file whose owner has exited (no lock held)
 * Prints "ready" once the file is in place. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "status/format.h"

static unsigned char file[SVST_HDR_SIZE + SVST_SLOT_SIZE];

static void fill(const char *mode)
{
	struct svst_file *h = (struct svst_file *)file;
	struct svst_qp *q = (struct svst_qp *)(file + svst_slot_off(0));

	h->magic = SVST_MAGIC;
	h->version = SVST_VERSION + !strcmp(mode, "badver");
	h->hdr_size = SVST_HDR_SIZE;
	h->slot_size = SVST_SLOT_SIZE * (strcmp(mode, "malformed") ? 1 : 2);
	h->max_slots = SVST_MAX_SLOTS;
	h->pid = (uint32_t)getpid();
	h->uid = (uint32_t)geteuid();
	snprintf(h->comm, sizeof(h->comm), "status_fake");
	snprintf(h->device, sizeof(h->device), "softverbs0");
	h->addr = 0x0100007f;
	h->hwm = 1;
	h->unshown[SVST_QP] = 3;
	q->h.kind = SVST_QP;
	q->h.gen = 1;
	q->qpn = 0x1234;
	q->type = 2;                 /* IBV_QPT_RC */
	q->state = 3;                /* IBV_QPS_RTS */
	q->tx[SVST_OP_SEND].msgs = 5;
	q->tx[SVST_OP_SEND].bytes = 5 * 4096;
}

int main(int argc, char **argv)
{
	char path[512];
	int fd;

	if (argc != 3) {
		fprintf(stderr, "usage: status_fake DIR live|badver|malformed|dead\n");
		return 2;
	}
	fill(argv[2]);
	snprintf(path, sizeof(path), "%s/%d", argv[1], (int)getpid());
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || (strcmp(argv[2], "dead") && flock(fd, LOCK_SH)) ||
	    write(fd, file, sizeof(file)) != (ssize_t)sizeof(file)) {
		perror(path);
		return 1;
	}
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	if (strcmp(argv[2], "dead"))
		sleep(30);
	return 0;
}
