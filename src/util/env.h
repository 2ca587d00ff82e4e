/* Environment knobs: the one place that reads SOFTVERBS_* variables.
 *   SOFTVERBS_IP=a.b.c.d       the device's IPv4 address (default: first up non-loopback)
 *   SOFTVERBS_TRANSPORT=tcp     never use the same-host shared-memory path
 *   SOFTVERBS_NO_CMA=1          never use cross-memory attach (process_vm_*) nor shared MRs
 *   SOFTVERBS_MR_SHARE=0        never move registered memory onto a memfd peers map
 *   SOFTVERBS_DEBUG=N           log level on stderr
 *   SOFTVERBS_PCAP=DIR          write a packet capture of each process to DIR (engine/capture.c)
 *   SOFTVERBS_PENDING_MAX=N     inbound connections awaiting their handshake, per port group (256: one per QP)
 *   SOFTVERBS_FAULT=SPEC        faults injected below the reliability layer (docs/observability.md)
 *   SOFTVERBS_BATCH=0           write every post's request at once (engine/batch.c)
 *   SOFTVERBS_BATCH_GAP_US=N    posts at most N us apart make a burst that is batched (2)
 *   SOFTVERBS_BOARD_AFTER=N     a CQ's ring channels beyond the first N go on the input board
 *                               (32; transport/shm/board.h)
 *   SOFTVERBS_BUSY_POLL_US=N    the progress thread polls N us after a lone READ it answered
 *                               (50; 0: never; engine/recv.c)
 *   SOFTVERBS_STAMPS=PREFIX     a build with -DSV_STAMPS=ON writes its TSC stamps to PREFIX.<pid>
 *                               (util/stamp.h)
 */
#ifndef SV_UTIL_ENV_H
#define SV_UTIL_ENV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

const char *sv_env_str(const char *name);
int sv_env_int(const char *name, int dflt);
/* The knobs several layers obey, decided here only. */
bool sv_force_tcp(void);                    /* SOFTVERBS_TRANSPORT=tcp */
bool sv_cma_disabled(void);                 /* SOFTVERBS_NO_CMA=1 */
int sv_pending_max(void);                   /* SOFTVERBS_PENDING_MAX, at least 1 */
const char *sv_pcap_dir(void);              /* SOFTVERBS_PCAP, or NULL */
bool sv_batch_enabled(void);                /* not SOFTVERBS_BATCH=0 */
bool sv_lane_enabled(void);                 /* not SOFTVERBS_LANE=0 */
uint32_t sv_board_after(void);              /* SOFTVERBS_BOARD_AFTER, read once */
uint32_t sv_ring_look_ms(void);             /* SOFTVERBS_RING_LOOK_MS, read once */
uint64_t sv_busy_poll_ns(void);             /* SOFTVERBS_BUSY_POLL_US in ns, read once */
uint64_t sv_batch_gap_ns(void);             /* SOFTVERBS_BATCH_GAP_US in ns, read once */

/* SOFTVERBS_FAULT: "[KINDS:]KEY=VALUE,...;..." where KINDS is tcp, unix,
 * udp joined by '+' (none: all three), KEY drop, dup, corrupt, delay (a
 * probability per frame, 0 to 1) or seed (an integer).  A kind may be
 * named by one group only. */
enum sv_fault_kind { SV_FAULT_TCP, SV_FAULT_UNIX, SV_FAULT_UDP, SV_FAULT_NKINDS };
struct sv_fault_conf {
	bool on;
	/* probabilities as thresholds of a 32-bit draw: p * 2^32 (1: always) */
	uint64_t drop, dup, corrupt, delay;
	uint64_t seed;
};
/* 0, or -1 with the reason in err. */
int sv_fault_parse(const char *spec, struct sv_fault_conf conf[SV_FAULT_NKINDS],
		   char *err, size_t errlen);
/* The environment's, parsed once; NULL (reason on stderr) if malformed. */
const struct sv_fault_conf *sv_fault_env(void);

#endif
