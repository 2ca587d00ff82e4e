/*
 * What the fuzz harnesses (fuzz_recv.c, fuzz_cm.c) and the seed generator (gen_corpus.c)
 * agree on.
 *
 * A QP number, an rkey or a virtual address differs from one process to the
 * next (QPNs come from the kernel's port allocation, MRs from the heap), so
 * an input names them with tokens that the harness replaces before the bytes
 * reach the library.  The harness walks the input as the receive machine
 * will (a 64-byte header, then `len` payload bytes, then the next header) and
 * in every header:
 *
 *   dst_qpn  FZ_QPN_RC / FZ_QPN_UC / FZ_QPN_UD -> that QP's number
 *   src_qpn  FZ_PEER_QPN (datagrams)           -> the QPN of the harness's UDP port
 *   data1    0 (datagrams)                     -> the device address (the sender's)
 *   rkey     FZ_RKEY(n)                        -> MR n's rkey
 *   va       FZ_VA(n, off): top 16 bits 0xF00n -> MR n's address + off
 *
 * Other values pass unchanged, so the fuzzer still reaches QPs, keys and
 * addresses that do not exist.
 */
#ifndef SV_FUZZ_H
#define SV_FUZZ_H

#include <stdint.h>

#define FZ_QPN_RC    0u          /* the RC QP (stream harness) */
#define FZ_QPN_UC    1u          /* the UC QP (stream harness) */
#define FZ_QPN_UD    0u          /* the UD QP (datagram harness) */
#define FZ_PEER_QPN  0x000101u   /* dest_qp_num of the RC/UC QPs: port 1, never bound */
#define FZ_QKEY      0x11111111u /* the UD QP's Q_Key */

/* Memory regions, all inside one mapping surrounded by guard bytes:
 *   MR 1: FZ_MR1_LEN bytes, PD 1, local write + remote write/read/atomic
 *         (the receive buffers too; large enough for the direct-read path)
 *   MR 2: FZ_MR2_LEN bytes, PD 1, remote read only: must never change
 *   MR 3: FZ_MR3_LEN bytes, PD 2, every right: must never change (wrong PD) */
#define FZ_MR1_LEN   (128u * 1024)
#define FZ_MR2_LEN   4096u
#define FZ_MR3_LEN   4096u

/* In a SEND with SV_WF_PULL (a pulled SEND) the payload's descriptors take
 * the same tokens: addr FZ_VA(n, off), key FZ_RKEY(n) -> MR n's lkey.  In
 * the stranger harness data0 FZ_NONCE_OUT(q) becomes the nonce of QP q's
 * own outbound channel (0 RC, 1 UC): knowing it must not help a stranger. */
#define FZ_RKEY(n)   (0xF0000000u | (n))
#define FZ_NONCE_OUT(q) (0xF00F00F00F00F000ull | (q))
#define FZ_VA(n, off) (((uint64_t)(0xF000u | (n)) << 48) | (uint64_t)(off))
#define FZ_VA_OFF_MASK 0x0000FFFFFFFFFFFFull

/* The stream and stranger harnesses: the input's first byte says which
 * descriptors travel (SCM_RIGHTS) with the first frame, the rest is the
 * byte stream.  Bits 0-2 pick the set, FZ_FDS_*; bit 3 (stranger only):
 * the channel is a unix socket of another uid (its descriptors reach the
 * library), else a socket that is not (TCP's case: the kernel drops them). */
enum {
	FZ_FDS_NONE,         /* nothing */
	FZ_FDS_RING_SEG,     /* a ring memfd (shm/chan.c's own) and our segment: the real offer */
	FZ_FDS_RING,         /* the ring alone */
	FZ_FDS_SEG_RING,     /* both, in the wrong order */
	FZ_FDS_ZERO_SEG,     /* a memfd of the ring's size, all zero (no magic), and the segment */
	FZ_FDS_NULL_PIPE,    /* /dev/null and a pipe */
	FZ_FDS_THREE,        /* ring, segment and /dev/null: one more than a HELLO carries */
	FZ_FDS_BAD_SIZE,     /* a ring whose header lies about its size, and the segment */
};
#define FZ_FDS_MASK     7u
#define FZ_FOREIGN_UNIX 8u

/* fds.c: the descriptors open now (-1 if unknown), and a list of them on
 * stderr for a leak report. */
int fz_count_fds(void);
void fz_list_fds(void);

#endif
