/* The engine's side of the transport's one way up (transport.h). */
#include "engine/engine.h"

const struct sv_upcalls sv_engine_upcalls = {
	.chan_size = sizeof(struct sv_qpchan),
	.chan_ready = sv_engine_on_conn,
	.chan_free = sv_engine_chan_free,
	.pending_expired = sv_engine_pending_expired,
	.dgram = sv_engine_on_dgram,
	.timer = sv_engine_on_timer,
	.poller_active = sv_engine_poller_active,
	.spin_tick = sv_engine_spin_tick,
	.drive_forget = sv_engine_drive_forget,
	.mcast_dgram = sv_engine_on_mcast,
};
