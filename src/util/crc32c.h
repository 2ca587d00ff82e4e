/* CRC32C (Castagnoli), the checksum a fault-injecting channel's frames
 * carry (transport/fault/): RoCE's ICRC is a CRC32 too. */
#ifndef SV_UTIL_CRC32C_H
#define SV_UTIL_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Continue `crc` (0 to start) over len bytes. */
uint32_t sv_crc32c(uint32_t crc, const void *buf, size_t len);

#endif
