/* Scatter/gather with max_sge entries on both ends: SEND gathers and
 * scatters, RDMA WRITE gathers, RDMA READ scatters. */
#include "common.h"

int main(void)
{
	struct t_opts o;
	struct t_pair p;
	struct ibv_device_attr da;
	struct ibv_wc wc;

	t_alarm(30);
	t_opts_default(&o, IBV_QPT_RC);
	struct ibv_context *probe = t_open();
	CHECK_OK(ibv_query_device(probe, &da));
	CHECK_OK(ibv_close_device(probe));
	int n = da.max_sge > 64 ? 64 : da.max_sge;
	o.max_send_sge = o.max_recv_sge = (uint32_t)n;
	t_pair_open(&p, &o);

	/* gather: chunk i of (i+1)*3 bytes from a, spaced 256 apart;
	 * scatter: into chunks of (n-i)*3 bytes on b, spaced 512 apart. */
	struct ibv_sge gs[64], ss[64];
	uint8_t *flat = malloc(65536);
	size_t total = 0;
	for (int i = 0; i < n; i++) {
		uint32_t len = (uint32_t)(i + 1) * 3;
		gs[i] = (struct ibv_sge){ (uintptr_t)p.a.buf + 256 * i, len, p.a.mr->lkey };
		t_fill(p.a.buf + 256 * i, len, (uint8_t)i);
		memcpy(flat + total, p.a.buf + 256 * i, len);
		total += len;
	}
	size_t stotal = 0;
	for (int i = 0; i < n; i++) {
		uint32_t len = (uint32_t)(n - i) * 3;
		ss[i] = (struct ibv_sge){ (uintptr_t)p.b.buf + 512 * i, len, p.b.mr->lkey };
		stotal += len;
	}
	CHECK_EQ(stotal, total);

	struct ibv_recv_wr rw = { .wr_id = 1, .sg_list = ss, .num_sge = n }, *rbad;
	CHECK_OK(ibv_post_recv(p.b.qp, &rw, &rbad));
	struct ibv_send_wr sw = { .wr_id = 2, .sg_list = gs, .num_sge = n,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *sbad;
	CHECK_OK(ibv_post_send(p.a.qp, &sw, &sbad));
	CHECK_STATUS(t_wc(p.a.cq, 2000), IBV_WC_SUCCESS);
	wc = t_wc(p.b.cq, 2000);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	CHECK_EQ(wc.byte_len, total);
	size_t off = 0;
	for (int i = 0; i < n; i++) {
		CHECK(memcmp(p.b.buf + 512 * i, flat + off, ss[i].length) == 0);
		off += ss[i].length;
	}

	/* WRITE gathers into one contiguous remote range. */
	sw.opcode = IBV_WR_RDMA_WRITE;
	sw.wr.rdma.remote_addr = p.ib.addr + 40000;
	sw.wr.rdma.rkey = p.ib.rkey;
	CHECK_OK(ibv_post_send(p.a.qp, &sw, &sbad));
	CHECK_STATUS(t_wc(p.a.cq, 2000), IBV_WC_SUCCESS);
	CHECK(memcmp(p.b.buf + 40000, flat, total) == 0);

	/* READ scatters a contiguous remote range into the SGEs. */
	for (int i = 0; i < n; i++)
		memset(p.a.buf + 256 * i, 0, gs[i].length);
	sw.opcode = IBV_WR_RDMA_READ;
	CHECK_OK(ibv_post_send(p.a.qp, &sw, &sbad));
	wc = t_wc(p.a.cq, 2000);
	CHECK_STATUS(wc, IBV_WC_SUCCESS);
	off = 0;
	for (int i = 0; i < n; i++) {
		CHECK(memcmp(p.a.buf + 256 * i, flat + off, gs[i].length) == 0);
		off += gs[i].length;
	}
	free(flat);
	t_pair_close(&p);
	return 0;
}
