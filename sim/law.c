/* law.c: the catalogue of cost-law forms (see law.h).
 *
 * One row per law; the feature names spell out each family's enum in law.h, in order, so
 * a row's ncoef is how many of them it has.  Nothing else in the tree lists law names,
 * columns, coefficient counts, roofline pairs or knees. */
#include <math.h>
#include <string.h>
#include "law.h"

static const char *const prefill_feats[] = { "1", "tiles_total", "tiles_max", "ctas", "queue_tiles",
                                             "tiles_total_narrow", "tiles_max_narrow" };
static const char *const decode_feats[] = { "1", "kv_tokens", "part_tokens_max", "ctas", "kv_tokens_unique",
                                            "wave_tokens", "reduce_depth", "sm_tokens", "lone_tokens", "wave_narrow" };
static const char *const bridge_feats[] = { "1", "expanded_tokens", "page_walk", "expanded_tokens",
                                            "expanded_tokens", "sm_ctas" };
static const char *const gemm_feats[] = { "1", "flops", "bytes", "roofline", "split", "tile_roofline",
                                          "partial_bytes", "weight_stream", "tile_roofline_128" };
static const char *const gdn_feats[] = { "1", "tokens", "seqs", "chunks", "short_waves", "long_row", "tokens" };
static const char *const elem_feats[] = { "1", "tokens", "norm_waves", "silu_waves", "silu_second_wave" };
static const char *const allreduce_feats[] = { "1", "bytes" };
static const char *const step_feats[] = { "1", "rows", "eager", "eager_passes", "resent_tokens", "host_expansions",
                                          "spec_resident" };
static const char *const varlen_feats[] = { "1", "tiles_total", "tiles_max", "ctas", "sm_tiles", "slot_tiles" };
static const char *const moe_feats[] = { "1", "flops", "weight_bytes", "active_experts", "roofline",
                                         "max_expert_flops", "tile_flops" };

/* attention: a point's shape is (rows, q, seq_len, page) and the per-rank heads and head size
 * it ran (the facts columns, part of its shape: shape_facts) */
#define ATTN_COLS 8, { "rows", "q", "seq_len", "page", "q_heads", "kv_heads", "head_dim", "t_s" }, 4, ATTN_COL_SEQ_LEN
#define NO_ROOF -1, -1
#define NO_KNEE -1, -1
#define PREFILL(id, name, bm, bn, split) \
    { id, name, LF_PREFILL, ATTN_COLS, PREFILL__N, prefill_feats, NO_ROOF, NO_KNEE, bm, bn, 1, split, 1, 0 }
/* decode: the CTAs an SM holds on sm_90 (XQA 2, fp16 and fp8; scalar: 78 registers x 256
 * threads = 3); decode_scalar has no lone-CTA term (its SMs hold an odd number by design) */
/* decode points may spread their requests' contexts (ctx_min: law.h), an optional column */
#define DECODE_COLS 9, { "rows", "q", "seq_len", "page", "q_heads", "kv_heads", "head_dim", "ctx_min", "t_s" }, 4, \
    ATTN_COL_SEQ_LEN
#define XQA(id, name) \
    { id, name, LF_DECODE_XQA, DECODE_COLS, DECODE__N, decode_feats, NO_ROOF, NO_KNEE, 0, 0, 2, 0, 1, 1 }
#define SCALAR(id, name) \
    { id, name, LF_DECODE_SCALAR, DECODE_COLS, DECODE__N, decode_feats, NO_ROOF, NO_KNEE, 0, 0, 3, 0, 1, 1 }

static const law_form_t forms[LAW__N] = {
    PREFILL(LAW_PREFILL_BM32_FP16, "attn.prefill_bm32.fp16", 32, 128, 1),
    PREFILL(LAW_PREFILL_GENERIC_FP16, "attn.prefill_generic.fp16", 32, 64, 0),
    PREFILL(LAW_PREFILL_LOWSMEM_FP16, "attn.prefill_lowsmem.fp16", 16, 128, 0),
    PREFILL(LAW_PREFILL_GENERIC_FP8, "attn.prefill_generic.fp8", 32, 64, 0),
    PREFILL(LAW_PREFILL_LOWSMEM_FP8, "attn.prefill_lowsmem.fp8", 16, 128, 0),
    PREFILL(LAW_PREFILL_LOWSMEM_PIPE_FP16, "attn.prefill_lowsmem_pipe.fp16", 16, 128, 0),
    PREFILL(LAW_PREFILL_SPLITD_FP16, "attn.prefill_splitd.fp16", 64, 32, 0),
    XQA(LAW_DECODE_XQA_FP16, "attn.decode_xqa.fp16"),
    XQA(LAW_DECODE_XQA_FP8, "attn.decode_xqa.fp8"),
    SCALAR(LAW_DECODE_SCALAR_FP16, "attn.decode_scalar.fp16"),
    SCALAR(LAW_DECODE_SCALAR_FP8, "attn.decode_scalar.fp8"),
    /* the expansion kernel: 8 CTAs an SM where the profile records no fp8_expand */
    { LAW_FP8_BRIDGE, "attn.fp8_bridge", LF_BRIDGE, ATTN_COLS, BRIDGE__N, bridge_feats,
      BRIDGE_PAGE_WALK, BRIDGE_EXPANDED_BW, BRIDGE_EXPANDED_KNEE, BRIDGE_SM_CTAS, 0, 0, 8, 0, 1, 0 },
    { LAW_GEMM, "gemm", LF_GEMM, LAW_GEMM_NCOLS, { "m", "n", "k", "wb", "tile_n", "tile_m", "splits", "t_s" }, 4, GEMM_COL_M,
      GEMM__N, gemm_feats, NO_ROOF, NO_KNEE, 0, 0, 0, 0, 0, 0 },
    { LAW_GDN, "gdn", LF_GDN, 3, { "tokens", "seqs", "t_s" }, 2, GDN_COL_TOKENS, GDN__N, gdn_feats,
      GDN_LONG_ROW, GDN_TOKENS_BW, NO_KNEE, 0, 0, 0, 0, 0, 0 },
    { LAW_ELEMENTWISE, "elementwise", LF_ELEMENTWISE, 2, { "tokens", "t_s" }, 1, 0, ELEM__N, elem_feats,
      NO_ROOF, NO_KNEE, 0, 0, 0, 0, 0, 0 },
    { LAW_ALLREDUCE, "allreduce", LF_ALLREDUCE, 2, { "bytes", "t_s" }, 1, -1, ALLREDUCE__N, allreduce_feats,
      NO_ROOF, NO_KNEE, 0, 0, 0, 0, 0, 0 },
    { LAW_STEP, "step", LF_STEP, 2, { "rows", "t_s" }, 1, -1, STEP__N, step_feats, NO_ROOF, NO_KNEE, 0, 0, 0, 0, 0, 0 },
    /* varlen: BM from head_dim (law.h), BN 64; 2 CTAs an SM on sm_90 (127 registers x 256 threads) */
    /* ctx_min: the decode rows' contexts spread down to it; a part of the point's shape, optional
     * in a file (a profile written before it has rows of six columns and t_s) */
    { LAW_VARLEN_FP16, "attn.varlen.fp16", LF_VARLEN, 8,
      { "decode_rows", "ctx", "chunks", "chunk_q", "chunk_prefix", "page", "ctx_min", "t_s" }, 6, -1, VARLEN__N,
      varlen_feats, NO_ROOF, NO_KNEE, 0, LAW_VARLEN_BN, 2, 0, 1, 0 },
    { LAW_GEMM_MOE, "gemm.moe.fp16", LF_MOE, 7, { "tokens", "experts", "topk", "n", "k", "skew", "t_s" }, 6, -1,
      MOE__N, moe_feats, NO_ROOF, NO_KNEE, 0, 0, 0, 0, 0, 0 },
    /* copies (calib/copy.h): t = c0 + c1 bytes, the all-reduce's form */
    { LAW_COPY_D2D, "copy.d2d", LF_ALLREDUCE, 2, { "bytes", "t_s" }, 1, -1, ALLREDUCE__N, allreduce_feats,
      NO_ROOF, NO_KNEE, 0, 0, 0, 0, 0, 0 },
    { LAW_COPY_H2D, "copy.h2d", LF_ALLREDUCE, 2, { "bytes", "t_s" }, 1, -1, ALLREDUCE__N, allreduce_feats,
      NO_ROOF, NO_KNEE, 0, 0, 0, 0, 0, 0 },
    { LAW_COPY_D2H, "copy.d2h", LF_ALLREDUCE, 2, { "bytes", "t_s" }, 1, -1, ALLREDUCE__N, allreduce_feats,
      NO_ROOF, NO_KNEE, 0, 0, 0, 0, 0, 0 },
    /* the elementwise proxy L2-cold (calib's CK_ELEM jobs with cold set): elementwise's form */
    { LAW_ELEMENTWISE_COLD, "elementwise.cold", LF_ELEMENTWISE, 2, { "tokens", "t_s" }, 1, 0, ELEM__N, elem_feats,
      NO_ROOF, NO_KNEE, 0, 0, 0, 0, 0, 0 },
};

_Static_assert(DECODE__N <= LAW_MAX_FEAT && GEMM__N <= LAW_MAX_FEAT, "LAW_MAX_FEAT is the most features a law has");

const law_form_t *law_form(law_id_t id)
{
    return id >= 0 && id < LAW__N ? &forms[id] : NULL;
}

const law_form_t *law_find(const char *name)
{
    for (int i = 0; i < LAW__N; i++)
        if (!strcmp(forms[i].name, name))
            return &forms[i];
    return NULL;
}

int law_ncoef(const char *name)
{
    const law_form_t *f = law_find(name);
    return f ? f->ncoef : 0;
}

int law_has_facts(const law_form_t *f, int ncols)
{
    return f && f->nshape < f->ncols - 1 && ncols >= f->ncols - f->opt_cols;
}

int law_shape_cols(const law_form_t *f, int ncols)
{
    return law_has_facts(f, ncols) && !f->shape_facts ? f->nshape : ncols - 1;
}

int law_moe_counts(long tokens, int experts, int topk, double skew, long *counts)
{
    if (experts < 1 || experts > LAW_MOE_MAX_EXPERTS || topk < 1 || topk > experts || tokens < 0 ||
        !(skew >= 0) || !isfinite(skew) || !counts)
        return -1;
    double share[LAW_MOE_MAX_EXPERTS], total = (double)tokens * topk, cap = (double)tokens;
    unsigned char capped[LAW_MOE_MAX_EXPERTS] = { 0 };
    /* water-filling: shares over the uncapped experts in proportion to their weights, any
     * above the cap held at it and the excess spread again (at most `experts` rounds) */
    double left = total;
    for (int round = 0; round < experts; round++) {
        double wsum = 0;
        for (int e = 0; e < experts; e++)
            if (!capped[e]) wsum += pow(e + 1.0, -skew);
        int again = 0;
        for (int e = 0; e < experts; e++)
            if (!capped[e]) {
                share[e] = wsum > 0 ? left * pow(e + 1.0, -skew) / wsum : 0;
                if (share[e] > cap) again = 1;
            }
        if (!again) break;
        for (int e = 0; e < experts; e++)
            if (!capped[e] && share[e] > cap) {
                share[e] = cap;
                capped[e] = 1;
                left -= cap;
            }
    }
    long sum = 0;
    for (int e = 0; e < experts; e++) {
        counts[e] = (long)floor(share[e] + 1e-9);
        if (counts[e] > tokens) counts[e] = tokens;
        sum += counts[e];
    }
    /* the remainder, one each to the largest fractional parts (ties: the lower expert) */
    long want = tokens * (long)topk;
    while (sum < want) {
        int best = -1;
        double bf = -1;
        for (int e = 0; e < experts; e++) {
            double fr = share[e] - (double)counts[e];
            if (counts[e] < tokens && fr > bf + 1e-12) {
                bf = fr;
                best = e;
            }
        }
        if (best < 0) break;
        counts[best]++;
        sum++;
    }
    int active = 0;
    for (int e = 0; e < experts; e++) active += counts[e] > 0;
    return active;
}
