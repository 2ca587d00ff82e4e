/* Environment knobs: the one place that reads SOFTVERBS_* variables.
 *   SOFTVERBS_IP=a.b.c.d       the device's IPv4 address (default: first up non-loopback)
 *   SOFTVERBS_TRANSPORT=tcp     never use the same-host shared-memory path
 *   SOFTVERBS_NO_CMA=1          never use cross-memory attach (process_vm_*) nor shared MRs
 *   SOFTVERBS_MR_SHARE=0        never move registered memory onto a memfd peers map
 *   SOFTVERBS_DEBUG=N           log level on stderr
 *   SOFTVERBS_PCAP=DIR          write a packet capture of each process to DIR (engine/capture.c)
 *   SOFTVERBS_PENDING_MAX=N     inbound connections awaiting their handshake, per port group (256: one per QP)
 */
#ifndef SV_UTIL_ENV_H
#define SV_UTIL_ENV_H

#include <stdbool.h>

const char *sv_env_str(const char *name);
int sv_env_int(const char *name, int dflt);
/* The knobs several layers obey, decided here only. */
bool sv_force_tcp(void);                    /* SOFTVERBS_TRANSPORT=tcp */
bool sv_cma_disabled(void);                 /* SOFTVERBS_NO_CMA=1 */
int sv_pending_max(void);                   /* SOFTVERBS_PENDING_MAX, at least 1 */
const char *sv_pcap_dir(void);              /* SOFTVERBS_PCAP, or NULL */

#endif
