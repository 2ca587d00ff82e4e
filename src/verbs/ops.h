/* The device operations reached through ibv_context_ops and verbs_context. */
#ifndef SV_VERBS_OPS_H
#define SV_VERBS_OPS_H

#include <infiniband/verbs.h>

int sv_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
int sv_req_notify_cq(struct ibv_cq *cq, int solicited_only);
int sv_modify_cq(struct ibv_cq *cq, struct ibv_modify_cq_attr *attr);
struct ibv_cq_ex *sv_create_cq_ex(struct ibv_context *context, struct ibv_cq_init_attr_ex *attr);
int sv_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr);
int sv_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);
int sv_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);
struct ibv_qp *sv_create_qp_ex(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr);
struct ibv_srq *sv_create_srq_ex(struct ibv_context *context, struct ibv_srq_init_attr_ex *attr);
int sv_get_srq_num(struct ibv_srq *srq, uint32_t *srq_num);

#endif
