/* model.c: per-rank shapes and the hybrid align block size.  See model.h. */
#include "model.h"

int model_rank(const model_t *m, int tp, model_rank_t *r)
{
    if (tp <= 0 || m->n_q_heads % tp || m->gdn_v_heads % tp || m->gdn_k_heads % tp)
        return -1;
    r->tp = tp;
    r->q_heads = m->n_q_heads / tp;
    /* kv heads are replicated when tp exceeds them (vLLM does the same) */
    r->kv_heads = m->n_kv_heads >= tp ? m->n_kv_heads / tp : 1;
    r->group = r->q_heads / r->kv_heads;
    r->gdn_v_heads = m->gdn_v_heads / tp;
    r->gdn_k_heads = m->gdn_k_heads / tp;
    r->gdn_conv_dim = (2 * m->gdn_k_heads * m->gdn_head_dim_k + m->gdn_v_heads * m->gdn_head_dim_v) / tp;
    r->gdn_page_bytes = model_gdn_page_bytes(m, tp, 0);
    long d = m->head_dim;
    r->attn_qkv_n = (long)r->q_heads * d * (m->attn_output_gate ? 2 : 1) + 2L * r->kv_heads * d;
    r->attn_o_k = (long)r->q_heads * d;
    long gdn_v = (long)r->gdn_v_heads * m->gdn_head_dim_v;
    r->gdn_in_n = r->gdn_conv_dim + gdn_v + 2L * r->gdn_v_heads;   /* qkv, z, b, a */
    r->gdn_out_k = gdn_v;
    r->mlp_up_n = 2L * m->intermediate / tp;
    r->mlp_down_k = (long)m->intermediate / tp;
    r->vocab_n = (long)m->vocab / tp;
    double h = m->hidden;
    double attn = h * (double)r->attn_qkv_n + (double)r->attn_o_k * h;
    double gdn = h * (double)r->gdn_in_n + (double)r->gdn_out_k * h;
    double mlp = h * (double)r->mlp_up_n + (double)r->mlp_down_k * h;
    r->params = m->n_full_attn * attn + m->n_gdn * gdn + m->n_layers * mlp + h * (double)r->vocab_n;
    return 0;
}

long model_attn_bytes_per_token(const model_t *m, int tp, int kv_bytes)
{
    int kvh = m->n_kv_heads >= tp ? m->n_kv_heads / tp : 1;
    return 2L * kvh * m->head_dim * kv_bytes;
}

long model_gdn_page_bytes(const model_t *m, int tp, int num_spec)
{
    long vh = m->gdn_v_heads / tp;
    long conv_dim = (2L * m->gdn_k_heads * m->gdn_head_dim_k + (long)m->gdn_v_heads * m->gdn_head_dim_v) / tp;
    long ssm = vh * m->gdn_head_dim_k * m->gdn_head_dim_v * m->gdn_state_bytes;
    long conv = (long)(m->gdn_conv_kernel - 1 + num_spec) * conv_dim * m->gdn_conv_bytes;
    return ssm + conv;
}

int model_block_size(const model_t *m, int tp, int kv_bytes, int num_spec)
{
    long page = model_gdn_page_bytes(m, tp, num_spec);
    long per = 16L * model_attn_bytes_per_token(m, tp, kv_bytes);
    return (int)(16 * ((page + per - 1) / per));
}
