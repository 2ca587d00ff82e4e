/* SPDX-License-Identifier: MIT */
/*
 * softverbs librdmacm: the messages two connection managers exchange.
 *
 * Every CM connection (RC connection or UD service lookup) runs over one
 * TCP connection between the active id's bound address/port and the
 * listener's address/port.  On that stream each message is a cmw_hdr
 * followed by exactly hdr.body_len bytes of the body named by hdr.type.
 * All multi-byte integers are big-endian.  Bodies are fixed-size structs
 * without implicit padding; every one carries a static_assert on its size
 * so that a layout change is a compile error, not a wire break.
 *
 * Message flow (names follow the IB CM messages they stand in for):
 *   RC:  active  --REQ-->  passive          passive CM answers MRA at once
 *        active  <--MRA--  passive          ("a CM is here, user deciding")
 *        active  <--REP--  passive          rdma_accept
 *        active  --RTU-->  passive          active QP is RTS
 *     or active  <--REJ--  passive          rdma_reject / bad request
 *        either  --DREQ->  other            rdma_disconnect
 *        either  <-DREP--  other            answered by the CM at once
 *   UD:  REQ / MRA / REP (status 0 = accepted, else IB SIDR status).
 */
#ifndef SOFTVERBS_CM_WIRE_H
#define SOFTVERBS_CM_WIRE_H

#include <assert.h>
#include <stdint.h>

#define CMW_MAGIC   0x53564d31u /* "SVM1" */
#define CMW_VERSION 1

enum cmw_type {
	CMW_REQ = 1,
	CMW_MRA = 2,
	CMW_REP = 3,
	CMW_RTU = 4,
	CMW_REJ = 5,
	CMW_DREQ = 6,
	CMW_DREP = 7,
};

/* Private-data capacities of the IB CM messages, minus the 36-byte rdma_cm
 * header where rdma_cm adds one (REQ, SIDR REQ).  These are the limits the
 * real stack enforces (man rdma_connect / rdma_accept). */
enum {
	CMW_REQ_PDATA_RC = 56,   /* 92 - 36 */
	CMW_REQ_PDATA_UD = 180,  /* 216 - 36 */
	CMW_REP_PDATA_RC = 196,
	CMW_REP_PDATA_UD = 136,
	CMW_REJ_PDATA = 148,
	CMW_PDATA_MAX = 196,
};

struct cmw_hdr {
	uint32_t magic;
	uint8_t version;
	uint8_t type;      /* enum cmw_type */
	uint16_t body_len;
};
static_assert(sizeof(struct cmw_hdr) == 8, "cmw_hdr wire size");

/* What one side tells the other about its QP and port. */
struct cmw_endpoint {
	uint32_t qpn;
	uint32_t psn;      /* first PSN this side will send */
	uint32_t qkey;     /* UD only */
	uint16_t lid;
	uint8_t mtu;       /* enum ibv_mtu of the sender's port */
	uint8_t port;
	uint8_t gid[16];
};
static_assert(sizeof(struct cmw_endpoint) == 32, "cmw_endpoint wire size");

struct cmw_conn {
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t flow_control;
	uint8_t retry_count;
	uint8_t rnr_retry_count;
	uint8_t srq;
	uint8_t pdata_len;
	uint8_t reserved;
};
static_assert(sizeof(struct cmw_conn) == 8, "cmw_conn wire size");

struct cmw_ece {
	uint32_t vendor_id;
	uint32_t options;
};
static_assert(sizeof(struct cmw_ece) == 8, "cmw_ece wire size");

struct cmw_req {
	struct cmw_endpoint ep;
	struct cmw_conn conn;
	struct cmw_ece ece;
	uint16_t port_space;  /* enum rdma_port_space */
	uint8_t qp_type;      /* enum ibv_qp_type */
	uint8_t reserved[5];
	uint8_t pdata[CMW_REQ_PDATA_UD];
};
static_assert(sizeof(struct cmw_req) == 236, "cmw_req wire size");

struct cmw_mra {
	uint32_t service_timeout_ms;
};
static_assert(sizeof(struct cmw_mra) == 4, "cmw_mra wire size");

struct cmw_rep {
	struct cmw_endpoint ep;
	struct cmw_conn conn;
	struct cmw_ece ece;
	uint32_t status;      /* UD: IB SIDR status, 0 = success; RC: 0 */
	uint32_t reserved;
	uint8_t pdata[CMW_REP_PDATA_RC];
};
static_assert(sizeof(struct cmw_rep) == 252, "cmw_rep wire size");

struct cmw_rej {
	uint32_t reason;      /* IB CM reject reason */
	uint8_t pdata_len;
	uint8_t reserved[3];
	uint8_t pdata[CMW_REJ_PDATA];
};
static_assert(sizeof(struct cmw_rej) == 156, "cmw_rej wire size");

/* RTU, DREQ and DREP carry nothing but their type. */
struct cmw_empty {
	uint32_t reserved;
};
static_assert(sizeof(struct cmw_empty) == 4, "cmw_empty wire size");

#define CMW_BODY_MAX 252
static_assert(sizeof(struct cmw_rep) <= CMW_BODY_MAX, "largest body");
static_assert(sizeof(struct cmw_req) <= CMW_BODY_MAX, "largest body");
#define CMW_MSG_MAX (sizeof(struct cmw_hdr) + CMW_BODY_MAX)

/* IB CM reject reasons and SIDR statuses rdma_cm reports as event status. */
enum {
	CMW_REJ_TIMEOUT = 4,
	CMW_REJ_INVALID_SERVICE_ID = 8,
	CMW_REJ_CONSUMER_DEFINED = 28,
	CMW_REJ_VENDOR_OPTION_NOT_SUPPORTED = 35,
};
enum {
	CMW_SIDR_SUCCESS = 0,
	CMW_SIDR_UNSUPPORTED = 1,
	CMW_SIDR_REJECT = 2,
	CMW_SIDR_NO_QP = 3,
};

#endif
