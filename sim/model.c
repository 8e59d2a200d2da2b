/* model.c: per-rank shapes and the hybrid align block size.  See model.h. */
#include "model.h"

#include <limits.h>

model_err_t model_check(const model_t *m)
{
    /* widths in double: every factor is a positive int, so no product can overflow here */
    double hd = m->head_dim;
    if (m->n_full_attn < 1)
        return MODEL_E_NO_ATTN;
    if ((double)m->n_q_heads * hd * (m->attn_output_gate ? 2 : 1) + 2.0 * m->n_kv_heads * hd > INT_MAX ||
        2.0 * m->n_kv_heads * hd * 2 * 16 > INT_MAX)
        return MODEL_E_ATTN_WIDTH;
    if (2.0 * m->intermediate > INT_MAX || 2.0 * m->moe_inter > INT_MAX ||
        2.0 * m->moe_shared * m->moe_shared_inter > INT_MAX)
        return MODEL_E_MLP_WIDTH;
    if (m->n_gdn < 1)
        return MODEL_OK;
    double conv_dim = 2.0 * m->gdn_k_heads * m->gdn_head_dim_k + (double)m->gdn_v_heads * m->gdn_head_dim_v;
    if (conv_dim + (double)m->gdn_v_heads * m->gdn_head_dim_v + 2.0 * m->gdn_v_heads > INT_MAX)
        return MODEL_E_GDN_WIDTH;
    double page = (double)m->gdn_v_heads * m->gdn_head_dim_k * m->gdn_head_dim_v * m->gdn_state_bytes +
                  ((double)m->gdn_conv_kernel - 1 + MODEL_SPEC_MAX) * conv_dim * m->gdn_conv_bytes;
    if (page > 281474976710656.0)
        return MODEL_E_GDN_PAGE;
    /* the block is largest with the least attention bytes per token: one kv head, fp8,
     * any tp (the GDN page shrinks with tp at least as fast as the attention bytes) */
    double per = 16.0 * 2 * 1 * m->head_dim * 1;
    if (16.0 * (page / per + 1) > MODEL_BLOCK_MAX)
        return MODEL_E_BLOCK;
    return MODEL_OK;
}

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
    r->gdn_conv_dim = (int)((2L * m->gdn_k_heads * m->gdn_head_dim_k + (long)m->gdn_v_heads * m->gdn_head_dim_v) / tp);
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
    /* experts are split over the ranks like a dense MLP (vLLM's default, no expert parallelism) */
    r->moe_up_n = 2L * m->moe_inter / tp;
    r->moe_down_k = (long)m->moe_inter / tp;
    r->moe_shared_up_n = 2L * m->moe_shared * m->moe_shared_inter / tp;
    r->moe_shared_down_k = (long)m->moe_shared * m->moe_shared_inter / tp;
    double moe = (double)m->moe_experts * (h * (double)r->moe_up_n + (double)r->moe_down_k * h) +
                 h * (double)r->moe_shared_up_n + (double)r->moe_shared_down_k * h + h * m->moe_experts;
    int n_moe = model_moe_layers(m);
    r->params = m->n_full_attn * attn + m->n_gdn * gdn + (m->n_layers - n_moe) * mlp + n_moe * moe +
                h * (double)r->vocab_n;
    return 0;
}

int model_moe_layers(const model_t *m)
{
    int n = 0;
    if (m->moe_experts < 1 || m->moe_step < 1) return 0;
    for (int i = m->moe_first_dense; i < m->n_layers; i++)
        if ((i + 1) % m->moe_step == 0) n++;
    return n;
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
    if (m->n_gdn < 1)
        return 0;
    long ssm = vh * m->gdn_head_dim_k * m->gdn_head_dim_v * m->gdn_state_bytes;
    long conv = (long)(m->gdn_conv_kernel - 1 + num_spec) * conv_dim * m->gdn_conv_bytes;
    return ssm + conv;
}

int model_block_size(const model_t *m, int tp, int kv_bytes, int num_spec)
{
    if (m->n_gdn < 1)
        return 16;
    long page = model_gdn_page_bytes(m, tp, num_spec);
    long per = 16L * model_attn_bytes_per_token(m, tp, kv_bytes);
    return (int)(16 * ((page + per - 1) / per));
}
