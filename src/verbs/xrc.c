/*
 * XRC (ibv_open_xrcd(3), ibv_create_srq_ex(3), IBV_QPT_XRC_SEND/RECV):
 * domains and the SRQs of this process that target QPs deliver to.
 *
 * An initiator (XRC_SEND) is an RC requester without a receive queue; each
 * request names an SRQ number at the target (the frame's qkey field).  A
 * target (XRC_RECV) is an RC responder without a PD, CQ or receive queue
 * of its own: each request is delivered to the XRC SRQ it names, which must
 * be of the target's domain (else the request fails as an invalid request),
 * its memory accesses checked in that SRQ's PD and its receive completed
 * on that SRQ's CQ (engine/resp.c).
 *
 * A domain opened on a file is shared by every open of that file in this
 * process (same device and inode); sharing one with another process, and
 * opening another process's target QP (ibv_open_qp), are not done: both
 * ends of an XRC connection are ordinary processes with their own QPs.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "verbs/sv.h"

static pthread_mutex_t xrc_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sv_list xrc_srqs = SV_LIST_INIT(xrc_srqs);
/* domains opened on files: how many objects use each */
static struct file_dom { uint64_t dom; int opens; } *doms;
static int ndoms;

static struct sv_xrcd *to_sxrcd(struct ibv_xrcd *x) { return (struct sv_xrcd *)x; }

static struct file_dom *find_dom(uint64_t dom)
{
	for (int i = 0; i < ndoms; i++)
		if (doms[i].dom == dom)
			return &doms[i];
	return NULL;
}

/* With xrc_lock held: the file's domain, made if `oflags` allow (the
 * kernel's rules: O_CREAT to make one, O_EXCL to insist on a new one). */
static int file_domain(int fd, int oflags, uint64_t *dom)
{
	struct file_dom *d, *v;
	struct stat st;

	if (fstat(fd, &st))
		return EBADF;
	*dom = ((uint64_t)st.st_dev << 32) ^ (uint64_t)st.st_ino;
	d = find_dom(*dom);
	if (d) {
		if ((oflags & O_CREAT) && (oflags & O_EXCL))
			return EEXIST;
		d->opens++;
		return 0;
	}
	if (!(oflags & O_CREAT))
		return EINVAL;
	v = realloc(doms, (ndoms + 1) * sizeof(*doms));
	if (!v)
		return ENOMEM;
	doms = v;
	doms[ndoms++] = (struct file_dom){ *dom, 1 };
	return 0;
}

static void domain_put(uint64_t dom)
{
	struct file_dom *d = find_dom(dom);

	if (d && --d->opens == 0)
		*d = doms[--ndoms];
}

struct ibv_xrcd *sv_open_xrcd(struct ibv_context *ctx, struct ibv_xrcd_init_attr *attr)
{
	static uint64_t anon = 1ull << 63;      /* fd -1: a domain of its own */
	const uint32_t known = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
	struct sv_xrcd *x;
	int err = 0;

	if ((attr->comp_mask & ~known) || !(attr->comp_mask & IBV_XRCD_INIT_ATTR_FD) ||
	    !(attr->comp_mask & IBV_XRCD_INIT_ATTR_OFLAGS) || (attr->oflags & ~(O_CREAT | O_EXCL))) {
		errno = EINVAL;
		return NULL;
	}
	x = calloc(1, sizeof(*x));
	if (!x) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_lock(&xrc_lock);
	if (attr->fd >= 0)
		err = file_domain(attr->fd, attr->oflags, &x->dom);
	else if (!(attr->oflags & O_CREAT))
		err = EINVAL;
	else
		x->dom = anon++;
	pthread_mutex_unlock(&xrc_lock);
	if (err) {
		free(x);
		errno = err;
		return NULL;
	}
	x->ibxrcd.context = ctx;
	return &x->ibxrcd;
}

int sv_close_xrcd(struct ibv_xrcd *ixrcd)
{
	struct sv_xrcd *x = to_sxrcd(ixrcd);

	if (__atomic_load_n(&x->refcnt, __ATOMIC_ACQUIRE))
		return EBUSY;
	pthread_mutex_lock(&xrc_lock);
	domain_put(x->dom);
	pthread_mutex_unlock(&xrc_lock);
	free(x);
	return 0;
}

void sv_xrcd_get(struct sv_xrcd *x) { __atomic_add_fetch(&x->refcnt, 1, __ATOMIC_RELEASE); }
void sv_xrcd_put(struct sv_xrcd *x) { __atomic_sub_fetch(&x->refcnt, 1, __ATOMIC_RELEASE); }

void sv_xrc_srq_add(struct sv_srq *srq)
{
	pthread_mutex_lock(&xrc_lock);
	sv_list_add_tail(&xrc_srqs, &srq->xrc_link);
	pthread_mutex_unlock(&xrc_lock);
}

/* ibv_destroy_srq: out of the list unless a target holds it (EBUSY). */
int sv_xrc_srq_del(struct sv_srq *srq)
{
	int err = 0;

	pthread_mutex_lock(&xrc_lock);
	if (__atomic_load_n(&srq->refcnt, __ATOMIC_ACQUIRE))
		err = EBUSY;
	else
		sv_list_del(&srq->xrc_link);
	pthread_mutex_unlock(&xrc_lock);
	return err;
}

void sv_xrc_srq_put(struct sv_srq *srq)
{
	__atomic_sub_fetch(&srq->refcnt, 1, __ATOMIC_RELEASE);
}

/* Engine, target QP lock held: the SRQ a request names, if it is in the
 * target's domain, held (sv_xrc_srq_put) so that neither it nor its CQ
 * goes while the request uses them. */
struct sv_srq *sv_xrc_target_srq(struct sv_qp *tgt, uint32_t srqn)
{
	struct sv_srq *found = NULL;
	struct sv_list *pos;

	pthread_mutex_lock(&xrc_lock);
	sv_list_for_each(pos, &xrc_srqs) {
		struct sv_srq *srq = sv_container_of(pos, struct sv_srq, xrc_link);

		if (srq->srq_num == srqn && srq->xrcd->dom == tgt->xrcd->dom) {
			found = srq;
			__atomic_add_fetch(&srq->refcnt, 1, __ATOMIC_ACQUIRE);
			break;
		}
	}
	pthread_mutex_unlock(&xrc_lock);
	return found;
}
