/* model: a model architecture as the simulator sees it (models/NAME.yaml).
 *
 * Only what prices a step or sizes a cache is kept: layer counts, hidden and MLP
 * widths, attention heads, GDN (gated delta net) shapes, MoE experts, weight precision.
 * Per-rank shapes are derived for a tensor-parallel degree by model_rank(); the hybrid
 * "align" block size by model_block_size().  Invariant: n_full_attn + n_gdn == n_layers, n_moe ==
 * model_moe_layers(); for a
 * model model_check() accepts, every shape, page and block size below fits its type for
 * any tensor-parallel degree and up to MODEL_SPEC_MAX speculative tokens. */
#ifndef PACESIM_MODEL_H
#define PACESIM_MODEL_H

typedef struct model {
    char name[64];
    int n_layers, n_full_attn, n_gdn;      /* 64 = 16 + 48 for the reference model */
    int hidden, intermediate, vocab;
    /* full attention (whole model, before TP split) */
    int n_q_heads, n_kv_heads, head_dim;
    int attn_output_gate;                  /* 1: q_proj also produces a gate (2x q width) */
    /* GDN layers (whole model) */
    int gdn_k_heads, gdn_v_heads, gdn_head_dim_k, gdn_head_dim_v, gdn_conv_kernel;
    int gdn_state_bytes;                   /* bytes per SSM state element (4 = fp32) */
    int gdn_conv_bytes;                    /* bytes per conv state element (2 = fp16) */
    double weight_bytes_per_param;         /* 2 = fp16, 0.5625 = NVFP4 incl. scales */
    int mtp_layers;                        /* native MTP module depth (1) */
    /* mixture of experts (model.moe); moe_experts 0 = every MLP is dense.  Layer i (0-based)
     * is sparse iff i >= moe_first_dense and (i + 1) % moe_step == 0 (Qwen's
     * decoder_sparse_step; DeepSeek's first_k_dense_replace). */
    int moe_experts, moe_topk, moe_shared;  /* routed experts, experts per token, shared experts */
    int moe_inter, moe_shared_inter;        /* expert width (moe_intermediate_size), shared expert width */
    int moe_first_dense, moe_step;
    double moe_skew;                       /* Zipf exponent of the tokens over experts (0 = uniform; law_moe_counts) */
    int n_moe;                             /* sparse layers (derived by model_moe_layers) */
} model_t;

/* What one tensor-parallel rank holds. */
typedef struct model_rank {
    int tp;
    int q_heads, kv_heads, group;          /* group = q_heads / kv_heads */
    int gdn_v_heads, gdn_k_heads;
    int gdn_conv_dim;                      /* conv channels per rank */
    long gdn_page_bytes;                   /* SSM state + conv state, one layer, one request (no MTP) */
    /* GEMM shapes per rank, n x k (out x in) */
    long attn_qkv_n, attn_o_k;             /* qkv(+gate) out width; o_proj in width */
    long gdn_in_n, gdn_out_k;              /* in_proj (qkv + z + b + a) out width; out_proj in width */
    long mlp_up_n, mlp_down_k;             /* gate+up out width; down in width */
    long vocab_n;                          /* lm_head out width */
    long moe_up_n, moe_down_k;             /* one expert's gate+up out width and down in width */
    long moe_shared_up_n, moe_shared_down_k; /* all shared experts together */
    double params;                         /* parameters per rank (incl. lm_head and every expert, the MTP layer excluded) */
} model_rank_t;

#define MODEL_SPEC_MAX 15        /* most MTP conv slots a GDN page is sized for */
#define MODEL_BLOCK_MAX (1 << 24) /* largest derived block size (tokens) */
#define MODEL_MOE_MAX 1024        /* most routed experts (LAW_MOE_MAX_EXPERTS: law_moe_counts spreads tokens over them) */

/* What model_check() found out of range. */
typedef enum {
    MODEL_OK = 0,
    MODEL_E_NO_ATTN,        /* no full-attention layer: nothing sizes the KV cache */
    MODEL_E_ATTN_WIDTH,     /* q/kv heads x head_dim (x2 with the output gate) past INT_MAX */
    MODEL_E_MLP_WIDTH,      /* 2 x intermediate (or an expert's, the shared experts') past INT_MAX */
    MODEL_E_GDN_WIDTH,      /* GDN conv channels / in_proj width past INT_MAX */
    MODEL_E_GDN_PAGE,       /* GDN state + conv state per layer per request past 2^48 bytes */
    MODEL_E_BLOCK           /* derived block size past MODEL_BLOCK_MAX */
} model_err_t;

/* Sparse (MoE) layers of the model by its moe_first_dense / moe_step rule (0 without MoE). */
int model_moe_layers(const model_t *m);

/* Check that the model's derived shapes fit (see model_err_t). */
model_err_t model_check(const model_t *m);

/* 0 on success, -1 if tp does not divide the heads. */
int model_rank(const model_t *m, int tp, model_rank_t *out);

/* KV bytes one token occupies in one full-attention layer on one rank. */
long model_attn_bytes_per_token(const model_t *m, int tp, int kv_bytes);

/* GDN page bytes per layer per request on one rank, with num_spec MTP conv slots. */
long model_gdn_page_bytes(const model_t *m, int tp, int num_spec);

/* Hybrid align block size: 16 * ceil(gdn_page / (16 * attn_bytes_per_token)); 16 (vLLM's
 * default) for a model without GDN layers. */
int model_block_size(const model_t *m, int tp, int kv_bytes, int num_spec);

#endif
