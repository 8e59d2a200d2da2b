/* law: the catalogue of cost-law forms -- every law a profile may hold, in one table.
 *
 * A law form is its name, its family (which feature function gives it meaning), the
 * columns of its measured points, the column its grid interpolates along, its named
 * features (one coefficient each), and the terms that do not simply add: a "roofline pair"
 * (a, b) whose two terms combine as max(c_a f_a, c_b f_b), and a "knee" (a, b) whose term a
 * counts only where f_b > c_b (c_b a threshold the fit picks, not a multiplier).  The cost
 * model's features, the profile loader, the fitter and calib all read this table, so a law
 * means one thing everywhere.  Invariant: feature index i of a law is the i-th name of its
 * family's enum below, and a law's ncoef is that enum's count (or fewer, for decode_scalar).
 * The feature functions themselves (and why each feature is there) are in cost_feat.c. */
#ifndef PACESIM_LAW_H
#define PACESIM_LAW_H

#define LAW_MAX_COLS 9                 /* point columns, t_s included */
#define LAW_GEMM_NCOLS 8               /* gemm's: its shape, the kernel cuBLAS picked, t_s */

typedef enum {
    LAW_PREFILL_BM32_FP16 = 0,         /* attn.prefill_bm32.fp16    the fast path, BM32/BN128 */
    LAW_PREFILL_GENERIC_FP16,          /* attn.prefill_generic.fp16 BM32/BN64 */
    LAW_PREFILL_LOWSMEM_FP16,          /* attn.prefill_lowsmem.fp16 BM16/BN128 */
    LAW_PREFILL_GENERIC_FP8,           /* ...fp8: fp8_e5m2 KV dequantised in the kernel */
    LAW_PREFILL_LOWSMEM_FP8,
    LAW_PREFILL_LOWSMEM_PIPE_FP16,     /* attn.prefill_lowsmem_pipe.fp16 BM16/BN128, software-pipelined
                                          (the fork's kernel at page 784); absent: attn.prefill_lowsmem.fp16 */
    LAW_PREFILL_SPLITD_FP16,           /* attn.prefill_splitd.fp16 the fork's FA2 split-D dense kernel
                                          BM64/BN32 (fp8 bridge chunks, q >= 1024); absent: the BM32 law */
    LAW_DECODE_XQA_FP16,               /* attn.decode_xqa.*: split-K, a CTA per kv head */
    LAW_DECODE_XQA_FP8,
    LAW_DECODE_SCALAR_FP16,            /* attn.decode_scalar.*: split-K, a CTA per q head */
    LAW_DECODE_SCALAR_FP8,
    LAW_FP8_BRIDGE,                    /* attn.fp8_bridge: the fp8 cache expanded to fp16 */
    LAW_GEMM,                          /* one cuBLAS GEMM */
    LAW_GDN,                           /* one GDN layer's core */
    LAW_ELEMENTWISE,                   /* one layer's norms and SiLU-mul */
    LAW_ALLREDUCE,                     /* one all-reduce (TP > 1) */
    LAW_STEP,                          /* the engine's per-step host overhead */
    LAW_VARLEN_FP16,                   /* attn.varlen.fp16: one launch over a mixed batch (attn_varlen.cu) */
    LAW_GEMM_MOE,                      /* gemm.moe.fp16: an MoE layer's expert GEMMs as one grouped GEMM */
    LAW_COPY_D2D,                      /* copy.d2d: one copy within a GPU's memory (calib/copy.h) */
    LAW_COPY_H2D,                      /* copy.h2d: one copy from pinned host memory to the GPU */
    LAW_COPY_D2H,                      /* copy.d2h: one copy from the GPU to pinned host memory */
    LAW_ELEMENTWISE_COLD,              /* elementwise.cold: the elementwise proxy, every run on tensors
                                          not in L2 (as a layer's norms after its GEMMs); optional:
                                          where a profile has its points, they scale elementwise's
                                          prices at small token counts (cost_profile.c elem_cold) */
    LAW__N
} law_id_t;

typedef enum {
    LF_PREFILL = 0, LF_DECODE_XQA, LF_DECODE_SCALAR, LF_BRIDGE, LF_GEMM, LF_GDN, LF_ELEMENTWISE,
    LF_ALLREDUCE, LF_STEP, LF_VARLEN, LF_MOE
} law_family_t;

/* ---- features, per family: index into a feature vector (and its coefficient) ---- */
enum {                                 /* every family's feature 0 is the constant 1 */
    FEAT_ONE = 0
};
enum prefill_feat {                    /* rows, q, seq_len, page -> */
    PREFILL_ONE = 0,
    PREFILL_TILES_TOTAL,               /* KV tiles walked by every CTA */
    PREFILL_TILES_MAX,                 /* the longest CTA's (part's) tiles: the critical path */
    PREFILL_CTAS,                      /* CTAs (parts of CTAs, where the kernel splits its walk) */
    PREFILL_QUEUE_TILES,               /* tiles the critical path waits behind on the busiest SM */
    PREFILL_TILES_TOTAL_NARROW,        /* tiles_total x (1 - head_dim / 256): the part of a tile's
                                          cost a narrower head does not save (0 at head_dim 256) */
    PREFILL_TILES_MAX_NARROW,          /* the same of tiles_max */
    PREFILL__N
};
enum decode_feat {                     /* rows, q, seq_len, page -> */
    DECODE_ONE = 0,
    DECODE_KV_TOKENS,                  /* KV tokens read, x kv heads (XQA) or q heads (scalar) */
    DECODE_PART_TOKENS_MAX,            /* the longest partition's tokens */
    DECODE_CTAS,                       /* partitions x heads */
    DECODE_KV_UNIQUE,                  /* KV tokens of requests' longest rows (repeats from L2) */
    DECODE_WAVE_TOKENS,                /* waves of CTAs x the partition a wave streams */
    DECODE_REDUCE_DEPTH,               /* the reduce's partitions per row */
    DECODE_SM_TOKENS,                  /* the busiest SM's partitions' tokens */
    DECODE_LONE_TOKENS,                /* XQA: a lone CTA on the busiest SM (0 for decode_scalar) */
    DECODE_WAVE_NARROW,                /* wave_tokens x (1 - head_dim / 256): the part of a wave's
                                          partition walk a narrower head does not save */
    DECODE__N
};
enum bridge_feat {                     /* rows, q, seq_len, page -> */
    BRIDGE_ONE = 0,
    BRIDGE_EXPANDED,                   /* tokens expanded x kv heads */
    BRIDGE_PAGE_WALK,                  /* roofline pair with BRIDGE_EXPANDED_BW: a CTA's walk */
    BRIDGE_EXPANDED_BW,                /*   against the bytes every CTA moves together */
    BRIDGE_EXPANDED_KNEE,              /* knee on BRIDGE_SM_CTAS: every token again, past it */
    BRIDGE_SM_CTAS,                    /* the expansion's CTAs the busiest SM holds at once */
    BRIDGE__N
};
enum gemm_feat {                       /* m, n, k, wb, tile_n, tile_m, splits -> */
    GEMM_ONE = 0,
    GEMM_FLOPS,
    GEMM_BYTES,
    GEMM_ROOFLINE,                     /* max(flops / GEMM ceiling, bytes / copy ceiling) */
    GEMM_SPLIT,                        /* 1 when cuBLAS's kernel splits k */
    GEMM_TILE_ROOFLINE,                /* the busiest SM's padded tile FLOPs against the bytes */
    GEMM_PARTIAL_BYTES,                /* the fp32 partial sums a split writes and reads */
    GEMM_WEIGHT_STREAM,                /* the weights once per column of tiles along m */
    GEMM_TILE_ROOFLINE_128,            /* GEMM_TILE_ROOFLINE, the tile at least 128 wide along m */
    GEMM__N
};
enum gdn_feat {                        /* tokens, seqs -> */
    GDN_ONE = 0,
    GDN_TOKENS,
    GDN_SEQS,
    GDN_CHUNKS,                        /* chunk stagings on the long row's critical path */
    GDN_SHORT_WAVES,                   /* waves of the one-token rows' CTAs beside the long row */
    GDN_LONG_ROW,                      /* roofline pair with GDN_TOKENS_BW: the long row's walk */
    GDN_TOKENS_BW,                     /*   against the throughput of every token */
    GDN__N
};
enum elementwise_feat {                /* tokens -> */
    ELEM_ONE = 0,
    ELEM_TOKENS,
    ELEM_NORM_WAVES,
    ELEM_SILU_WAVES,
    ELEM_SILU_SECOND_WAVE,             /* 1 once the SiLU grid needs a second wave */
    ELEM__N
};
enum allreduce_feat { ALLREDUCE_ONE = 0, ALLREDUCE_BYTES, ALLREDUCE__N };   /* bytes -> */
enum step_feat {                       /* rows -> (an item also knows the rest) */
    STEP_ONE = 0,
    STEP_ROWS,
    STEP_EAGER,                        /* 1 for a step holding a prompt chunk (no CUDA graph) */
    STEP_EAGER_PASSES,                 /* its MTP draft passes */
    STEP_RESENT_TOKENS,                /* token ids re-sent to the workers: the whole token list of
                                          every scheduled request absent from the previous step */
    STEP_HOST_EXPANSIONS,              /* full-attention layers whose decode-rows expansion the host
                                          rebuilds (PREFIX_DECODE_ROWS in a mixed batch) */
    STEP_SPEC_RESIDENT,                /* a speculative decode-only step's resident requests beyond the
                                          first: every other request in the running list, scheduled
                                          or not (a paced prefill waiting for its step) */
    STEP__N
};
/* ---- the varlen attention kernel and the MoE expert GEMMs ----
 * attn.varlen.fp16 (kernels/attn_varlen.cu): a CTA per (M-tile of a row, kv head), its BM query
 * rows the row's (token, q head of the GQA group) pairs (BM = 32 for head_dim 256, else 64),
 * walking keys 0 .. its last token's position in tiles of LAW_VARLEN_BN; the CTAs start longest
 * walk first.  A point is a mixed batch: decode_rows rows of q = 1 at ctx tokens (or spread from
 * ctx_min to ctx: law_varlen_row_ctx), and chunks rows of chunk_q new tokens after chunk_prefix
 * tokens of context, KV pages of page tokens. */
#define LAW_VARLEN_BN 64
enum varlen_feat {                     /* decode_rows, ctx, chunks, chunk_q, chunk_prefix, page -> */
    VARLEN_ONE = 0,
    VARLEN_TILES_TOTAL,                /* KV tiles walked by every CTA */
    VARLEN_TILES_MAX,                  /* the longest CTA's tiles: the critical path */
    VARLEN_CTAS,                       /* CTAs: M-tiles x kv heads */
    VARLEN_SM_TILES,                   /* the busiest SM's tiles, the CTAs longest first to the least loaded slot */
    VARLEN_SLOT_TILES,                 /* the busiest slot's tiles: its CTAs run one after another */
    VARLEN__N
};
enum varlen_col { VARLEN_COL_DECODE_ROWS = 0, VARLEN_COL_CTX, VARLEN_COL_CHUNKS, VARLEN_COL_CHUNK_Q,
                  VARLEN_COL_CHUNK_PREFIX, VARLEN_COL_PAGE,
                  /* optional in a file (a row of the first six columns and t_s has none): the
                   * decode rows' contexts spread evenly from ctx_min to ctx (law_varlen_row_ctx),
                   * as a serving batch's rows differ; 0 = every row at ctx */
                  VARLEN_COL_CTX_MIN };

/* The context of decode row i (0 .. nd - 1) of a varlen point (and of request i of a decode
 * point with ctx_min, ATTN_COL_CTX_MIN): ctx_min + (ctx - ctx_min) x i /
 * (nd - 1), rounded down (row 0 at ctx_min, the last at ctx); ctx for every row where ctx_min
 * is 0 (or not below ctx) or nd is 1.  calib's batch and the law's features both take it. */
static inline long law_varlen_row_ctx(long nd, long ctx_min, long ctx, long i)
{
    if (ctx_min <= 0 || ctx_min >= ctx || nd <= 1) return ctx;
    return ctx_min + (ctx - ctx_min) * i / (nd - 1);
}

/* gemm.moe.fp16: C_e[m_e, n] = A_e[m_e, k] W_e[n, k]^T for every expert e with m_e > 0, one
 * grouped launch; tokens x topk (token, expert) assignments spread over experts by
 * law_moe_counts (skew 0: uniform). */
enum moe_feat {                        /* tokens, experts, topk, n, k, skew -> */
    MOE_ONE = 0,
    MOE_FLOPS,                         /* 2 x tokens x topk x n x k */
    MOE_WEIGHT_BYTES,                  /* the touched experts' weights: active x n x k x 2 */
    MOE_ACTIVE,                        /* experts with at least one token */
    MOE_ROOFLINE,                      /* max(flops / GEMM ceiling, (weights + activations) / copy ceiling) */
    MOE_MAX_EXPERT_FLOPS,              /* the busiest expert's 2 x m_max x n x k */
    MOE_TILE_FLOPS,                    /* the FLOPs of the row tiles launched: 2 x n x k x
                                          LAW_MOE_TILE_M x sum over experts of ceil(m_e / LAW_MOE_TILE_M) */
    MOE__N
};
enum moe_col { MOE_COL_TOKENS = 0, MOE_COL_EXPERTS, MOE_COL_TOPK, MOE_COL_N, MOE_COL_K, MOE_COL_SKEW };
#define LAW_MOE_MAX_EXPERTS 1024
/* The grouped GEMM's row tile: cuBLAS's grouped kernel on sm_90 covers an expert's rows in tiles
 * of 64 (calib's uniform points: a layer of 128 experts x 2048 x 768 takes 0.13 ms at 64 rows an
 * expert and 0.19 ms at 65, then the same to 128 and a step again at 129; docs/validation.md). */
#define LAW_MOE_TILE_M 64

/* Tokens per expert: tokens x topk assignments over experts in proportion to (e + 1)^-skew
 * (skew 0: uniform; 1: Zipf), no expert above tokens (a token picks topk distinct experts),
 * rounded by largest remainder (ties to the lower expert) so the counts sum to tokens x topk.
 * counts[experts]; returns the experts with a token, or -1 on bad arguments (experts outside
 * 1..LAW_MOE_MAX_EXPERTS, topk outside 1..experts, tokens < 0, skew < 0 or not finite). */
int law_moe_counts(long tokens, int experts, int topk, double skew, long *counts);
#define LAW_MAX_FEAT 10                /* the most features a law has (decode) */

/* ---- point columns, per family ---- */
enum attn_col { ATTN_COL_ROWS = 0, ATTN_COL_Q, ATTN_COL_SEQ_LEN, ATTN_COL_PAGE,
                /* the per-rank shape the point was measured at (optional in a file: a row of the
                 * first four columns and t_s is of the profile's own model at its TP degree) */
                ATTN_COL_Q_HEADS, ATTN_COL_KV_HEADS, ATTN_COL_HEAD_DIM,
                /* the decode laws only, optional in a file (a row of the seven columns above and
                 * t_s has none): the point's requests' contexts spread evenly from ctx_min to
                 * seq_len (law_varlen_row_ctx: request i's longest row), as a serving batch's
                 * requests differ; 0 = every request at seq_len */
                ATTN_COL_CTX_MIN };
enum gemm_col { GEMM_COL_M = 0, GEMM_COL_N, GEMM_COL_K, GEMM_COL_WB, GEMM_COL_TILE_N, GEMM_COL_TILE_M, GEMM_COL_SPLITS };
enum gdn_col { GDN_COL_TOKENS = 0, GDN_COL_SEQS };

typedef struct law_form {
    law_id_t id;
    const char *name;
    law_family_t family;
    int ncols;                         /* point columns, t_s (always the last) included */
    const char *cols[LAW_MAX_COLS];
    int nshape;                        /* the first nshape columns name a point's shape; any after
                                          them (before t_s) are facts measured with it */
    int axis;                          /* the column a grid of points interpolates along (-1: none) */
    int ncoef;                         /* features, and so coefficients */
    const char *const *feat;           /* their names (ncoef of them) */
    int roof_a, roof_b;                /* the roofline pair, a < b (-1: none) */
    int knee_a, knee_b;                /* the knee (-1: none) */
    int tile_m, tile_n;                /* prefill: the kernel's tile (BM, BN) */
    int ctas_per_sm;                   /* attention: its kernel's CTAs an SM holds on sm_90 */
    int splits;                        /* prefill: the kernel may split its CTAs' walk in parts */
    int shape_facts;                   /* 1: the columns after nshape (attention: the heads and head
                                          size; varlen: ctx_min) are part of a point's shape, its
                                          grid key */
    int opt_cols;                      /* the last columns before t_s a file may leave out with
                                          the facts kept (decode: ctx_min); 0 for most */
} law_form_t;

/* The form of law id (id < LAW__N). */
const law_form_t *law_form(law_id_t id);
/* The form called name, or NULL for a name not in the catalogue. */
const law_form_t *law_find(const char *name);
/* The number of coefficients of law name (0 if it is not in the catalogue). */
int law_ncoef(const char *name);
/* 1 when a row of ncols columns (t_s included) of law f carries, after its shape, the facts
 * measured with it (f has such columns and the row has all of f's, but the opt_cols last
 * ones it may leave out), else 0. */
int law_has_facts(const law_form_t *f, int ncols);
/* The columns that name the shape of a row of ncols columns (t_s included): f's shape
 * columns when the row carries facts (and those facts too where f's are shape_facts), else
 * every column but t_s. */
int law_shape_cols(const law_form_t *f, int ncols);

#endif
