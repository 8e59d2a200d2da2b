/* check_law: the catalogue of law forms (sim/law.c) -- every row well formed (ids in
 * order, columns ending in t_s, roofline pairs and knees inside the law's features), the
 * lookups and cost.h's views of it agreeing, and each law's feature function filling its
 * features and nothing past them.  Run from the repository root. */
#include <check.h>
#include "check_run.h"
#include <string.h>
#include "cost.h"
#include "law.h"
#include "scenario.h"

START_TEST(forms_are_well_formed)
{
    const law_form_t *f = law_form((law_id_t)_i);
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(f->id, _i);
    ck_assert_ptr_eq(law_find(f->name), f);
    ck_assert_int_eq(law_ncoef(f->name), f->ncoef);
    ck_assert_int_eq(cost_law_ncoef(f->name), f->ncoef);
    ck_assert(f->ncols >= 2 && f->ncols <= LAW_MAX_COLS);
    ck_assert_str_eq(f->cols[f->ncols - 1], "t_s");
    ck_assert(f->nshape >= 1 && f->nshape <= f->ncols - 1);
    ck_assert(f->axis >= -1 && f->axis < f->nshape);
    ck_assert(f->ncoef >= 1 && f->ncoef <= LAW_MAX_FEAT && LAW_MAX_FEAT <= PROF_MAX_COEF);
    ck_assert_str_eq(f->feat[FEAT_ONE], "1");
    for (int i = 0; i < f->ncoef; i++) ck_assert_ptr_nonnull(f->feat[i]);
    int a = -9, b = -9;
    if (f->roof_a < 0) {
        ck_assert_int_eq(f->roof_b, -1);
        ck_assert_int_eq(cost_law_roof(f->name, &a, &b), 0);
    } else {
        ck_assert(f->roof_a > 0 && f->roof_a < f->roof_b && f->roof_b < f->ncoef);
        ck_assert_int_eq(cost_law_roof(f->name, &a, &b), 1);
        ck_assert(a == f->roof_a && b == f->roof_b);
    }
    if (f->knee_a < 0) {
        ck_assert_int_eq(f->knee_b, -1);
        ck_assert_int_eq(cost_law_knee(f->name, &a, &b), 0);
    } else {
        ck_assert(f->knee_a > 0 && f->knee_b > 0 && f->knee_a != f->knee_b && f->knee_b < f->ncoef);
        ck_assert_int_eq(cost_law_knee(f->name, &a, &b), 1);
        ck_assert(a == f->knee_a && b == f->knee_b);
    }
    int attn = f->family == LF_PREFILL || f->family == LF_DECODE_XQA || f->family == LF_DECODE_SCALAR ||
               f->family == LF_BRIDGE;
    ck_assert_int_eq(attn || f->family == LF_VARLEN, !strncmp(f->name, "attn.", 5));
    if (f->family == LF_VARLEN) ck_assert(f->ctas_per_sm >= 1 && f->tile_n == LAW_VARLEN_BN && f->ncols == 8 &&
                                          f->nshape == 6 && f->shape_facts);
    /* decode: the optional ctx_min after the shape facts (law.h) */
    int dec = f->family == LF_DECODE_XQA || f->family == LF_DECODE_SCALAR;
    if (attn) ck_assert(f->ctas_per_sm >= 1 && f->axis == ATTN_COL_SEQ_LEN && f->ncols == (dec ? 9 : 8) &&
                        f->nshape == 4 && f->shape_facts && f->opt_cols == dec);
    if (dec) ck_assert_str_eq(f->cols[ATTN_COL_CTX_MIN], "ctx_min");
    if (!attn) ck_assert_int_eq(f->opt_cols, 0);
    if (f->family == LF_PREFILL) ck_assert(f->tile_m > 0 && f->tile_n > 0);
}
END_TEST

START_TEST(lookups)
{
    ck_assert_ptr_null(law_find("attn.prefill_bm32.fp8"));
    ck_assert_ptr_null(law_find(""));
    ck_assert_ptr_null(law_form(LAW__N));
    ck_assert_int_eq(law_ncoef("no.such.law"), 0);
    ck_assert_int_eq(cost_law_ncoef("no.such.law"), 0);
    /* a gemm row of every column carries cuBLAS's pick after its shape; a shorter one none */
    const law_form_t *g = law_form(LAW_GEMM), *x = law_form(LAW_DECODE_XQA_FP16);
    ck_assert_int_eq(GEMM_COLS_CFG, g->ncols);
    ck_assert_int_eq(law_has_facts(g, g->ncols), 1);
    ck_assert_int_eq(law_shape_cols(g, g->ncols), g->nshape);
    ck_assert_int_eq(law_has_facts(g, g->nshape + 1), 0);
    ck_assert_int_eq(law_shape_cols(g, g->nshape + 1), g->nshape);
    /* an attention row of every column records the shape it ran, part of its key; a row of
     * the first four and t_s is of the profile's model */
    ck_assert_int_eq(law_has_facts(x, x->ncols), 1);
    ck_assert_int_eq(law_shape_cols(x, x->ncols), x->ncols - 1);
    ck_assert_int_eq(law_has_facts(x, x->nshape + 1), 0);
    ck_assert_int_eq(law_shape_cols(x, x->nshape + 1), x->nshape);
    ck_assert_int_eq(law_shape_cols(NULL, 3), 2);
}
END_TEST

/* Each law's feature function sets its constant and leaves every feature past its
 * coefficients 0 (decode_scalar's form stops before the lone-CTA term XQA has). */
START_TEST(features_stop_at_ncoef)
{
    model_t m;
    model_rank_t r;
    char err[1024];
    ck_assert_msg(scn_load_model("models/qwen3.8-27b.yaml", &m, err) == 0, "%s", err);
    ck_assert_int_eq(model_rank(&m, 1, &r), 0);
    cost_hw_t hw = { .sms = 132, .flops = 700e12, .bw = 4e12 };
    const law_form_t *f = law_form((law_id_t)_i);
    double row[LAW_MAX_COLS] = { 0 }, feat[PROF_MAX_COEF];
    switch (f->family) {
    case LF_GEMM:
        row[GEMM_COL_M] = 192, row[GEMM_COL_N] = 5120, row[GEMM_COL_K] = 5120, row[GEMM_COL_WB] = 2;
        row[GEMM_COL_TILE_N] = 64, row[GEMM_COL_TILE_M] = 64, row[GEMM_COL_SPLITS] = 2;
        break;
    case LF_GDN: row[GDN_COL_TOKENS] = 800, row[GDN_COL_SEQS] = 17; break;
    case LF_ALLREDUCE: row[0] = 1e6; break;
    case LF_ELEMENTWISE: case LF_STEP: row[0] = 64; break;
    case LF_VARLEN:   /* 32 decode rows at 8K with a 512-token chunk after 1K */
        row[VARLEN_COL_DECODE_ROWS] = 32, row[VARLEN_COL_CTX] = 8192, row[VARLEN_COL_CHUNKS] = 1;
        row[VARLEN_COL_CHUNK_Q] = 512, row[VARLEN_COL_CHUNK_PREFIX] = 1024, row[VARLEN_COL_PAGE] = 16;
        break;
    case LF_MOE:      /* 256 tokens, 128 experts, top-8, skewed */
        row[MOE_COL_TOKENS] = 256, row[MOE_COL_EXPERTS] = 128, row[MOE_COL_TOPK] = 8;
        row[MOE_COL_N] = 1536, row[MOE_COL_K] = 4096, row[MOE_COL_SKEW] = 1;
        break;
    default:   /* attention: 6 rows of a q-token query at 140K context */
        row[ATTN_COL_ROWS] = 6, row[ATTN_COL_Q] = f->family == LF_PREFILL ? 784 : 1;
        row[ATTN_COL_SEQ_LEN] = 140000, row[ATTN_COL_PAGE] = 784;
        row[ATTN_COL_Q_HEADS] = r.q_heads, row[ATTN_COL_KV_HEADS] = r.kv_heads, row[ATTN_COL_HEAD_DIM] = m.head_dim;
        break;
    }
    ck_assert_int_eq(cost_point_features_n(f->name, row, f->ncols, &m, &r, &hw, feat), 0);
    ck_assert_double_eq(feat[FEAT_ONE], 1);
    int live = 0;
    for (int i = 1; i < f->ncoef; i++) live += feat[i] != 0;
    ck_assert_msg(live > 0, "%s: no feature but the constant", f->name);
    for (int i = f->ncoef; i < PROF_MAX_COEF; i++) ck_assert_double_eq(feat[i], 0);
}
END_TEST

/* law_moe_counts: uniform spreads tokens x topk evenly (the remainder to the lower experts),
 * a skew fills the first experts up to the cap of one per token, bad arguments are refused */
START_TEST(moe_counts)
{
    long c[LAW_MOE_MAX_EXPERTS];
    ck_assert_int_eq(law_moe_counts(10, 8, 2, 0, c), 8);       /* 20 over 8: 3,3,3,3,2,2,2,2 */
    for (int e = 0; e < 8; e++) ck_assert_int_eq(c[e], e < 4 ? 3 : 2);
    ck_assert_int_eq(law_moe_counts(1, 64, 4, 0, c), 4);       /* one token touches topk experts */
    ck_assert_int_eq(c[0] + c[1] + c[2] + c[3], 4);
    ck_assert_int_eq(law_moe_counts(0, 8, 2, 0, c), 0);
    /* Zipf over 4 experts of 12 assignments (tokens 6, top-2): shares 5.76, 2.88, 1.92, 1.44;
     * the first capped at 6 tokens is not reached; largest remainder: 6, 3, 2, 1 */
    ck_assert_int_eq(law_moe_counts(6, 4, 2, 1.0, c), 4);
    ck_assert_int_eq(c[0], 6);
    ck_assert_int_eq(c[1], 3);
    ck_assert_int_eq(c[2], 2);
    ck_assert_int_eq(c[3], 1);
    /* a strong skew (weights 1, 2^-8, ...): the first expert is capped at every token (4 of 8),
     * the second takes nearly all the rest (3.83 of 4, and the remainder) */
    ck_assert_int_eq(law_moe_counts(4, 4, 2, 8.0, c), 2);
    ck_assert_int_eq(c[0], 4);
    ck_assert_int_eq(c[1], 4);
    ck_assert_int_eq(law_moe_counts(4, 0, 1, 0, c), -1);
    ck_assert_int_eq(law_moe_counts(4, 4, 5, 0, c), -1);
    ck_assert_int_eq(law_moe_counts(4, 4, 1, -1, c), -1);
    ck_assert_int_eq(law_moe_counts(-1, 4, 1, 0, c), -1);
}
END_TEST

/* The varlen tests' model: the reference model at head_dim 256 (BM 32), on one GPU with 24 q /
 * 4 kv heads (group 6). */
static void varlen_model(model_t *m, model_rank_t *r)
{
    char err[1024];
    ck_assert_msg(scn_load_model("models/qwen3.8-27b.yaml", m, err) == 0, "%s", err);
    m->head_dim = 256;
    ck_assert_int_eq(model_rank(m, 1, r), 0);
    r->q_heads = 24, r->kv_heads = 4, r->group = 6;
}

/* attn.varlen.fp16's features by hand (kernels/attn.h's attn_varlen_count places CTAs the same
 * way): a model of head_dim 256 (BM 32), 24 q / 4 kv
 * heads (group 6); 2 decode rows at 1000 (one M-tile each: 63 pages of 16, a decode row's last
 * tile counted by its pages, 15.75 tiles) and a chunk of 8 after 100 (48 rows: 2 M-tiles; rows
 * 0..31 end at token 5, 106 keys = 2 tiles, rows 32..47 at token 7, 108 keys = 2 tiles, whole
 * tiles for a chunk).  CTAs (2 + 2) x 4 = 16; tiles (2 x 15.75 + 2 + 2) x 4 = 142; on 2 SMs x 2
 * slots the eight 15.75s go two to a slot (31.5 a slot), the eight 2s two more a slot: 35.5 a
 * slot, 71 an SM. */
START_TEST(varlen_features_by_hand)
{
    model_t m;
    model_rank_t r;
    varlen_model(&m, &r);
    cost_hw_t hw = { .sms = 2, .flops = 700e12, .bw = 4e12 };
    double row[7] = { 2, 1000, 1, 8, 100, 16, 0 }, feat[PROF_MAX_COEF];
    ck_assert_int_eq(cost_point_features_n("attn.varlen.fp16", row, 7, &m, &r, &hw, feat), 0);
    ck_assert_double_eq(feat[VARLEN_ONE], 1);
    ck_assert_double_eq(feat[VARLEN_CTAS], 16);
    ck_assert_double_eq(feat[VARLEN_TILES_TOTAL], 142);
    ck_assert_double_eq(feat[VARLEN_TILES_MAX], 15.75);
    ck_assert_double_eq(feat[VARLEN_SM_TILES], 71);
    /* 4 slots (2 SMs x 2): the eight 15.75-tile walks two a slot, then the eight 2-tile ones */
    ck_assert_double_eq(feat[VARLEN_SLOT_TILES], 35.5);
    /* a step's call of the same rows prices the same */
    kseg_t segs[3] = { { 0, 1, 1000 }, { 1, 8, 108 }, { 2, 1, 1000 } };
    kcall_t call = { .nseg = 3, .segs = segs, .page = 16 };
    double cf[PROF_MAX_COEF];
    ck_assert_int_eq(cost_attn_features("attn.varlen.fp16", &call, &m, &r, &hw, cf), 0);
    for (int i = 0; i < PROF_MAX_COEF; i++) ck_assert_double_eq(cf[i], feat[i]);
    /* at 1024 keys (the grid's decode contexts, multiples of a tile) pages and tiles agree */
    double whole[7] = { 2, 1024, 0, 0, 0, 16, 0 };
    ck_assert_int_eq(cost_point_features_n("attn.varlen.fp16", whole, 7, &m, &r, &hw, feat), 0);
    ck_assert_double_eq(feat[VARLEN_TILES_TOTAL], 2 * 16 * 4);
    ck_assert_double_eq(feat[VARLEN_TILES_MAX], 16);
    ck_assert_int_eq(cost_point_features_n("attn.varlen.fp16", row, 7, &m, &r, &hw, feat), 0);
    hw.sms = 0; /* no SM count recorded: no placement */
    ck_assert_int_eq(cost_point_features_n("attn.varlen.fp16", row, 7, &m, &r, &hw, feat), 0);
    ck_assert_double_eq(feat[VARLEN_SM_TILES], 0);
    ck_assert_double_eq(feat[VARLEN_SLOT_TILES], 0);
    row[VARLEN_COL_DECODE_ROWS] = 0, row[VARLEN_COL_CHUNKS] = 0; /* an empty batch */
    ck_assert_int_eq(cost_point_features_n("attn.varlen.fp16", row, 7, &m, &r, &hw, feat), -1);
}
END_TEST

/* A point whose decode rows spread from ctx_min to ctx (the eighth column): row i at ctx_min +
 * (ctx - ctx_min) x i / (n - 1); its features are the step call's of the same rows, a row of
 * seven columns (a profile written before the column) or a ctx_min of 0 keeps every row at ctx,
 * and ctx_min above ctx is refused.  4 rows over 100..400: 100, 200, 300, 400 keys = 7, 13, 19,
 * 25 pages of 16 = 1.75, 3.25, 4.75, 6.25 tiles, x 4 kv heads. */
START_TEST(varlen_spread_rows)
{
    ck_assert_int_eq(law_varlen_row_ctx(4, 100, 400, 0), 100);
    ck_assert_int_eq(law_varlen_row_ctx(4, 100, 400, 3), 400);
    ck_assert_int_eq(law_varlen_row_ctx(3, 128, 2048, 1), 1088);
    ck_assert_int_eq(law_varlen_row_ctx(5, 128, 131, 2), 129);   /* rounded down */
    ck_assert_int_eq(law_varlen_row_ctx(4, 0, 400, 1), 400);
    ck_assert_int_eq(law_varlen_row_ctx(1, 100, 400, 0), 400);
    ck_assert_int_eq(law_varlen_row_ctx(4, 400, 400, 0), 400);
    model_t m;
    model_rank_t r;
    varlen_model(&m, &r);
    cost_hw_t hw = { .sms = 2, .flops = 700e12, .bw = 4e12 };
    double row[8] = { 4, 400, 1, 8, 100, 16, 100, 0 }, feat[PROF_MAX_COEF], cf[PROF_MAX_COEF];
    ck_assert_int_eq(cost_point_features_n("attn.varlen.fp16", row, 8, &m, &r, &hw, feat), 0);
    ck_assert_double_eq(feat[VARLEN_CTAS], (4 + 2) * 4);
    ck_assert_double_eq(feat[VARLEN_TILES_TOTAL], (1.75 + 3.25 + 4.75 + 6.25 + 2 + 2) * 4);
    ck_assert_double_eq(feat[VARLEN_TILES_MAX], 6.25);
    kseg_t segs[5] = { { 0, 1, 100 }, { 1, 1, 200 }, { 2, 1, 300 }, { 3, 1, 400 }, { 4, 8, 108 } };
    kcall_t call = { .nseg = 5, .segs = segs, .page = 16 };
    ck_assert_int_eq(cost_attn_features("attn.varlen.fp16", &call, &m, &r, &hw, cf), 0);
    for (int i = 0; i < PROF_MAX_COEF; i++) ck_assert_double_eq(cf[i], feat[i]);
    /* seven columns, or ctx_min 0: every decode row at 400 (25 pages, 6.25 tiles) */
    double at[8];
    ck_assert_int_eq(cost_point_features_n("attn.varlen.fp16", row, 7, &m, &r, &hw, feat), 0);
    ck_assert_double_eq(feat[VARLEN_TILES_TOTAL], (4 * 6.25 + 2 + 2) * 4);
    memcpy(at, row, sizeof at);
    at[VARLEN_COL_CTX_MIN] = 0;
    ck_assert_int_eq(cost_point_features_n("attn.varlen.fp16", at, 8, &m, &r, &hw, cf), 0);
    for (int i = 0; i < PROF_MAX_COEF; i++) ck_assert_double_eq(cf[i], feat[i]);
    at[VARLEN_COL_CTX_MIN] = 401;
    ck_assert_int_eq(cost_point_features_n("attn.varlen.fp16", at, 8, &m, &r, &hw, cf), -1);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("law");
    TCase *tc = tcase_create("core");
    tcase_add_loop_test(tc, forms_are_well_formed, 0, LAW__N);
    tcase_add_test(tc, lookups);
    tcase_add_loop_test(tc, features_stop_at_ncoef, 0, LAW__N);
    tcase_add_test(tc, moe_counts);
    tcase_add_test(tc, varlen_features_by_hand);
    tcase_add_test(tc, varlen_spread_rows);
    suite_add_tcase(s, tc);
    return check_run(s);
}
