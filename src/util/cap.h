/*
 * Privileges the kernel's verbs check before a user may do something that
 * reaches past its own QPs (uverbs' modify_qp for controlled Q_Keys).
 */
#ifndef SV_UTIL_CAP_H
#define SV_UTIL_CAP_H

#include <stdbool.h>

/* Does this process hold CAP_NET_RAW over its network namespace (the
 * softverbs fabric), as the kernel's check for a device there would ask? */
bool sv_cap_net_raw(void);

#endif
