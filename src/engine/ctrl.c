/*
 * A channel's control frame (HELLO, HELLO_ACK, HELLO_NAK, VERIFY,
 * VERIFY_ACK), lent only while one is in flight: a channel sends a few at
 * its start and hardly ever after, so connected QPs do not each keep one.
 * One at a time per channel; xmit.c writes it between other frames.
 */
#include <stdlib.h>

#include "engine/engine.h"

struct sv_txframe *sv_ctrl_frame(struct sv_conn *c)
{
	if (sv_ctrl_busy(c))
		return NULL;
	if (!c->qc->ctrl)
		c->qc->ctrl = malloc(sizeof(*c->qc->ctrl));
	return c->qc->ctrl;
}

/* A frame written is given back here rather than where it is written,
 * whose caller still looks at it. */
struct sv_txframe *sv_ctrl_pending(struct sv_conn *c)
{
	if (c->qc->ctrl && !c->qc->ctrl->in_use)
		sv_ctrl_free(c);
	return c->qc->ctrl;
}

void sv_ctrl_free(struct sv_conn *c)
{
	free(c->qc->ctrl);
	c->qc->ctrl = NULL;
}
