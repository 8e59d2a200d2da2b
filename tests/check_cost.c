/* check_cost: the profile cost model adds up what cost.h says, with synthetic laws:
 * attention per routed call x full-attention layers, GEMMs of the per-rank shapes,
 * GDN/elementwise per layer, two all-reduces per layer when TP > 1 (none at TP1),
 * the eager-step overhead, and a missing law is an error, never a zero. */
#include <check.h>
#include "check_run.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cost.h"
#include "cost_grid.h"
#include "scenario.h"

static model_t M;

static void law(profile_t *p, const char *name, double c0, double c1, double c2, double c3)
{
    prof_law_t l;
    memset(&l, 0, sizeof l);
    snprintf(l.name, sizeof l.name, "%s", name);
    l.ncoef = cost_law_ncoef(name);
    double c[PROF_MAX_COEF] = { c0, c1, c2, c3 }; /* the rest of the family's terms: 0 */
    for (int i = 0; i < l.ncoef; i++) l.coef[i] = c[i];
    l.fit_median_rel = l.fit_max_rel = -1;
    ck_assert_int_eq(prof_put(p, &l), 0);
}

static void synthetic(profile_t *p, int with_ar)
{
    memset(p, 0, sizeof *p);
    snprintf(p->path, sizeof p->path, "synthetic");
    law(p, "attn.prefill_bm32.fp16", 1e-5, 1e-7, 0, 0);
    law(p, "attn.prefill_generic.fp16", 1e-5, 2e-7, 1e-5, 0);
    law(p, "attn.prefill_lowsmem.fp16", 1e-5, 2e-7, 1e-5, 0);
    law(p, "attn.decode_xqa.fp16", 2e-5, 1e-9, 0, 0);
    law(p, "attn.decode_scalar.fp16", 2e-5, 1e-9, 0, 0);
    law(p, "gemm", 5e-6, 1e-14, 1e-12, 0);
    law(p, "gdn", 1e-5, 1e-8, 1e-6, 0);
    law(p, "elementwise", 2e-6, 1e-9, 0, 0);
    law(p, "step", 1e-3, 0, 0.1, 0.02);
    if (with_ar) law(p, "allreduce", 3e-5, 1e-10, 0, 0);
}

static void setup(void)
{
    char err[SCN_ERR_MAX];
    ck_assert_msg(scn_load_model("models/qwen3.8-27b.yaml", &M, err) == 0, "%s", err);
}

static double gemm(double m, double n, double k)
{
    return 5e-6 + 1e-14 * 2 * m * n * k + 1e-12 * (2 * (m * k + m * n) + M.weight_bytes_per_param * n * k);
}

START_TEST(decode_step_adds_up)
{
    profile_t p;
    synthetic(&p, 1);
    char err[COST_ERR_MAX];
    for (int tp = 1; tp <= 2; tp++) {
        cost_model_t *cm = cost_profile_new(&p, &M, tp, err);
        ck_assert_msg(cm != NULL, "%s", err);
        model_rank_t r;
        model_rank(&M, tp, &r);
        route_cfg_t rc = { .smallq_max_q = 16, .page = 784, .group = r.group, 
                           .fp8_bridge_page = 784 };
        route_plan_t plan;
        route_plan_init(&plan);
        kseg_t rows[1] = { { 0, 1, 100000 } };
        ck_assert_int_eq(route_step(&rc, rows, 1, &plan), 0);
        cost_step_t in = { &plan, NULL, 1, 1, 1, 1, 0, 0, 0, 0 };
        cost_breakdown_t o;
        ck_assert_int_eq(cm->step(cm, &in, &o), 0);
        double xqa = 2e-5 + 1e-9 * 100000.0 * r.kv_heads;
        ck_assert_double_eq_tol(o.attn, M.n_full_attn * xqa, 1e-12);
        ck_assert_double_eq_tol(o.attn_route[ROUTE_DECODE_XQA], o.attn, 1e-15);
        double h = M.hidden;
        double lin = M.n_full_attn * (gemm(1, (double)r.attn_qkv_n, h) + gemm(1, h, (double)r.attn_o_k))
                   + M.n_gdn * (gemm(1, (double)r.gdn_in_n, h) + gemm(1, h, (double)r.gdn_out_k))
                   + M.n_layers * (gemm(1, (double)r.mlp_up_n, h) + gemm(1, h, (double)r.mlp_down_k))
                   + gemm(1, (double)r.vocab_n, h);
        ck_assert_double_eq_tol(o.linear, lin, 1e-12);
        ck_assert_double_eq_tol(o.gdn, M.n_gdn * (1e-5 + 1e-8 + 1e-6), 1e-12);
        ck_assert_double_eq_tol(o.elementwise, M.n_layers * (2e-6 + 1e-9), 1e-12);
        /* two all-reduces per layer of tokens x hidden fp16, only when TP > 1 */
        double ar = tp > 1 ? 2.0 * M.n_layers * (3e-5 + 1e-10 * h * 2) : 0;
        ck_assert_double_eq_tol(o.allreduce, ar, 1e-12);
        ck_assert_double_eq_tol(o.overhead, 1e-3, 1e-12);          /* decode-only: no eager cost */
        ck_assert_double_eq_tol(o.total, o.attn + o.linear + o.gdn + o.elementwise + o.allreduce + o.overhead, 1e-12);
        route_plan_free(&plan);
        cost_free(cm);
    }
    prof_free(&p);
}
END_TEST

static int count_draft_gemms(void *ctx, const cost_item_t *it)
{
    double *m = ctx;       /* [0]: spec_k - 1, [1]: the m of the draft passes' GEMMs, [2]: how many */
    if (it->kind == CI_GEMM && it->part == CP_MTP && it->count == m[0]) {
        m[1] = it->m;
        m[2]++;
    }
    return 0;
}

START_TEST(host_terms_and_draft_rows)
{
    /* the step law's host terms: a re-sent token list (c4 per token id) and the decode-rows
     * expansion per full-attention layer (c5); MTP passes 2..K over every scheduled row */
    profile_t p;
    synthetic(&p, 1);
    prof_law_t l;
    memset(&l, 0, sizeof l);
    snprintf(l.name, sizeof l.name, "step");
    l.ncoef = cost_law_ncoef("step");
    ck_assert_int_eq(l.ncoef, STEP__N);
    l.coef[STEP_ONE] = 1e-3;
    l.coef[STEP_EAGER] = 0.1;
    l.coef[STEP_EAGER_PASSES] = 0.02;
    l.coef[STEP_RESENT_TOKENS] = 1e-6;
    l.coef[STEP_HOST_EXPANSIONS] = 1e-4;
    l.coef[STEP_SPEC_RESIDENT] = 0.07;
    l.fit_median_rel = l.fit_max_rel = -1;
    ck_assert_int_eq(prof_put(&p, &l), 0);
    char err[COST_ERR_MAX];
    cost_model_t *cm = cost_profile_new(&p, &M, 2, err);
    ck_assert_msg(cm != NULL, "%s", err);
    route_cfg_t rc = { .smallq_max_q = 16, .page = 816, .group = 6, .fp8_bridge_page = 784, .prefix_decode_rows = 1 };
    route_plan_t plan, draft;
    route_plan_init(&plan);
    route_plan_init(&draft);
    kseg_t rows[2] = { { 0, 5, 240005 }, { 1, 816, 816 * 3 } };
    kseg_t drows[2] = { { 0, 1, 240005 }, { 1, 1, 816 * 3 } };
    ck_assert_int_eq(route_step(&rc, rows, 2, &plan), 0);
    ck_assert_int_eq(route_step(&rc, drows, 2, &draft), 0);
    cost_step_t in = { &plan, &draft, 821, 2, 1, 5, 4, 131072, 0, 0 };
    cost_breakdown_t o;
    ck_assert_int_eq(cm->step(cm, &in, &o), 0);
    ck_assert_double_eq_tol(o.overhead, 1e-3 + 0.1 + 4 * 0.02 + 131072 * 1e-6 + M.n_full_attn * 1e-4, 1e-12);
    /* without the decode-rows path (PREFIX_DECODE_ROWS=0): no host expansion */
    rc.prefix_decode_rows = 0;
    ck_assert_int_eq(route_step(&rc, rows, 2, &plan), 0);
    in.resent_tokens = 0;
    ck_assert_int_eq(cm->step(cm, &in, &o), 0);
    ck_assert_double_eq_tol(o.overhead, 1e-3 + 0.1 + 4 * 0.02, 1e-12);
    /* a mixed (eager) step pays no multi-request term, however many are resident */
    in.resident = 3;
    ck_assert_int_eq(cm->step(cm, &in, &o), 0);
    ck_assert_double_eq_tol(o.overhead, 1e-3 + 0.1 + 4 * 0.02, 1e-12);
    /* a speculative decode-only step pays it per resident request beyond the first: a paced
     * prefill waiting in the running list counts like a second decoder */
    cost_step_t dec = { &draft, &draft, 5, 1, 1, 5, 4, 0, 2, 0 };
    kseg_t one[1] = { { 0, 5, 240005 } };
    ck_assert_int_eq(route_step(&rc, one, 1, &draft), 0);
    ck_assert_int_eq(cm->step(cm, &dec, &o), 0);
    ck_assert_double_eq_tol(o.overhead, 1e-3 + 0.07, 1e-12);
    dec.resident = 1;
    ck_assert_int_eq(cm->step(cm, &dec, &o), 0);
    ck_assert_double_eq_tol(o.overhead, 1e-3, 1e-12);
    dec.spec_k = 0;                 /* not speculative: none */
    dec.resident = 2;
    ck_assert_int_eq(cm->step(cm, &dec, &o), 0);
    ck_assert_double_eq_tol(o.overhead, 1e-3, 1e-12);
    ck_assert_int_eq(route_step(&rc, drows, 2, &draft), 0);
    /* the draft passes' GEMMs run over both rows (the prefilling one too), K - 1 times */
    double seen[3] = { 3, 0, 0 };
    model_rank_t r;
    ck_assert_int_eq(model_rank(&M, 2, &r), 0);
    ck_assert_int_eq(cost_enumerate(&M, &r, &in, count_draft_gemms, seen), 0);
    ck_assert_double_eq(seen[1], 2);
    ck_assert(seen[2] > 0);
    route_plan_free(&plan);
    route_plan_free(&draft);
    cost_free(cm);
    prof_free(&p);
}
END_TEST

START_TEST(fork_laws_fall_back)
{
    /* a profile without the pipelined low-smem law prices that call by the low-smem law; one
     * without the split-D law prices a split-D call by the BM32 law and is not a profile of
     * the fork's kernels; holding attn.prefill_splitd.fp16 makes it one */
    profile_t p;
    synthetic(&p, 1);
    char err[COST_ERR_MAX];
    cost_model_t *cm = cost_profile_new(&p, &M, 2, err);
    ck_assert_ptr_nonnull(cm);
    ck_assert_int_eq(cost_profile_fork_kernels(&p), 0);
    ck_assert_int_eq(cost_profile_fork_kernels(NULL), 0);
    kseg_t seg = { 0, 5, 100005 };
    kcall_t a = { .route = ROUTE_PREFILL_GENERIC, .variant = VAR_BM16_BN128, .kv_dtype = KV_FP16, .page = 784,
                  .nseg = 1, .segs = &seg }, b = a;
    b.pipelined = 1;
    char name[64];
    cost_item_t ia = { .kind = CI_ATTN, .call = &a, .count = 1, .part = CP_ATTN }, ib = ia;
    ib.call = &b;
    ck_assert_str_eq(cost_item_law(&ib, name, sizeof name), "attn.prefill_lowsmem_pipe.fp16");
    double ta, tb;
    int g;
    ck_assert_int_eq(cost_profile_item(cm, &ia, &ta, &g), 0);
    ck_assert_int_eq(cost_profile_item(cm, &ib, &tb, &g), 0);
    ck_assert(ta > 0);
    ck_assert_double_eq(ta, tb);
    /* split-D (BM64/BN32) priced by the BM32 law, with the BM32 kernel's tiles */
    kseg_t chunk = { 0, 1568, 1568 * 4 };
    kcall_t d = { .route = ROUTE_FP8_BRIDGE, .variant = VAR_BM64_BN32, .kv_dtype = KV_FP16, .page = 784,
                  .nseg = 1, .segs = &chunk }, e = d;
    e.variant = VAR_BM32_BN128;
    cost_item_t id = { .kind = CI_ATTN, .call = &d, .count = 1, .part = CP_ATTN }, ie = id;
    ie.call = &e;
    ck_assert_str_eq(cost_item_law(&id, name, sizeof name), "attn.prefill_splitd.fp16");
    ck_assert_int_eq(cost_profile_item(cm, &id, &ta, &g), 0);
    ck_assert_int_eq(cost_profile_item(cm, &ie, &tb, &g), 0);
    ck_assert_double_eq(ta, tb);
    cost_free(cm);
    law(&p, "attn.prefill_splitd.fp16", 1e-5, 1e-7, 0, 0);
    ck_assert_int_eq(cost_profile_fork_kernels(&p), 1);
    cm = cost_profile_new(&p, &M, 2, err);
    ck_assert_ptr_nonnull(cm);
    ck_assert_int_eq(cost_profile_item(cm, &id, &ta, &g), 0);
    ck_assert(ta != tb);            /* its own law and tiles now */
    cost_free(cm);
    prof_free(&p);
}
END_TEST

/* q: a copy of p's laws but the one named name */
static void without_law(profile_t *q, const profile_t *p, const char *name)
{
    memset(q, 0, sizeof *q);
    snprintf(q->path, sizeof q->path, "synthetic");
    for (int i = 0; i < p->nlaws; i++)
        if (strcmp(p->laws[i].name, name)) ck_assert_int_eq(prof_put(q, &p->laws[i]), 0);
}

START_TEST(decode_laws_the_gates_need)
{
    /* route_decode_xqa: group 6 may take XQA or (short contexts) scalar, so a profile needs
     * both; group 2 never takes XQA, so it needs the scalar law alone */
    profile_t p;
    synthetic(&p, 1);
    char err[COST_ERR_MAX];
    ck_assert_int_eq(cost_profile_check(&p, &M, 2, KV_FP16, 6, err), 0);
    profile_t q;
    without_law(&q, &p, "attn.decode_scalar.fp16");
    ck_assert_int_eq(cost_profile_check(&q, &M, 2, KV_FP16, 6, err), -1);
    ck_assert_ptr_nonnull(strstr(err, "attn.decode_scalar.fp16"));
    prof_free(&q);
    without_law(&q, &p, "attn.decode_xqa.fp16");
    ck_assert_int_eq(cost_profile_check(&q, &M, 2, KV_FP16, 2, err), 0);
    ck_assert_int_eq(cost_profile_check(&q, &M, 2, KV_FP16, 6, err), -1);
    ck_assert_ptr_nonnull(strstr(err, "attn.decode_xqa.fp16"));
    prof_free(&q);
    prof_free(&p);
}
END_TEST

START_TEST(mixed_step_pays_the_q1_walk)
{
    profile_t p;
    synthetic(&p, 1);
    char err[COST_ERR_MAX];
    cost_model_t *cm = cost_profile_new(&p, &M, 2, err);
    ck_assert_ptr_nonnull(cm);
    route_cfg_t rc = { .smallq_max_q = 16, .page = 784, .group = 6,
                       .fp8_bridge_page = 784 };
    route_plan_t plan;
    route_plan_init(&plan);
    kseg_t rows[2] = { { 0, 1, 240001 }, { 1, 784, 784 * 3 } };
    double t[2];
    cost_breakdown_t o[2];
    for (int pdr = 0; pdr < 2; pdr++) {
        rc.prefix_decode_rows = pdr;
        ck_assert_int_eq(route_step(&rc, rows, 2, &plan), 0);
        cost_step_t in = { &plan, NULL, 785, 2, 1, 2, 0, 0, 0, 0 };
        ck_assert_int_eq(cm->step(cm, &in, &o[pdr]), 0);
        t[pdr] = o[pdr].total;
    }
    /* baseline: the q=1 row is one CTA per head walking ceil(240001/64) tiles */
    double walk = 1e-5 + 2e-7 * 12 * 3751 + 1e-5 * 3751;
    ck_assert_double_eq_tol(o[0].attn_route[ROUTE_PREFILL_GENERIC], M.n_full_attn * walk, 1e-9);
    ck_assert_double_eq_tol(o[1].attn_route[ROUTE_PREFILL_GENERIC], 0, 1e-15);
    ck_assert(o[1].attn_route[ROUTE_DECODE_XQA] > 0);
    ck_assert(t[0] > t[1]);
    ck_assert_double_eq_tol(o[0].overhead, 1e-3 + 0.1, 1e-12);       /* eager mixed step */
    route_plan_free(&plan);
    cost_free(cm);
    prof_free(&p);
}
END_TEST

START_TEST(missing_laws_are_errors)
{
    profile_t p;
    synthetic(&p, 0);
    char err[COST_ERR_MAX];
    cost_model_t *cm = cost_profile_new(&p, &M, 1, err);       /* TP1 needs no all-reduce */
    ck_assert_ptr_nonnull(cm);
    cost_free(cm);
    cm = cost_profile_new(&p, &M, 2, err);
    ck_assert_ptr_null(cm);
    ck_assert_ptr_nonnull(strstr(err, "allreduce"));
    /* fp8 laws absent: the step fails with the law's name */
    cm = cost_profile_new(&p, &M, 1, err);
    route_cfg_t rc = { .smallq_max_q = 16, .page = 1568, .group = 6,
                       .kv_dtype = KV_FP8_E5M2, .fp8_bridge_page = 784 };
    route_plan_t plan;
    route_plan_init(&plan);
    kseg_t rows[1] = { { 0, 1, 20000 } };          /* fp8 XQA from 16,384 tokens (route.h) */
    route_step(&rc, rows, 1, &plan);
    cost_step_t in = { &plan, NULL, 1, 1, 1, 1, 0, 0, 0, 0 };
    cost_breakdown_t o;
    ck_assert_int_eq(cm->step(cm, &in, &o), -1);
    ck_assert_ptr_nonnull(strstr(cm->err, "attn.decode_xqa.fp8"));
    route_plan_free(&plan);
    cost_free(cm);
    prof_free(&p);
}
END_TEST

START_TEST(grid_leave_one_out)
{
    /* gemm points on a line in m for one shape: interpolation is exact; a kink shows */
    prof_law_t l;
    memset(&l, 0, sizeof l);
    snprintf(l.name, sizeof l.name, "gemm");
    l.ncols = 5;
    double pts[8 * 5];
    for (int i = 0; i < 8; i++) {
        double m = 1 << i;
        double row[5] = { m, 5120, 6144, 2, 1e-5 + 1e-7 * m };
        memcpy(pts + 5 * i, row, sizeof row);
    }
    l.pts = pts;
    l.npts = 8;
    double med, mx;
    int n;
    ck_assert_int_eq(cost_grid_loo(&l, &med, &mx, &n), 0);
    ck_assert_int_eq(n, 6);                       /* interior points only */
    ck_assert(mx < 1e-12);
    pts[5 * 4 + 4] *= 1.5;                        /* m = 16 measured 50% slow */
    ck_assert_int_eq(cost_grid_loo(&l, &med, &mx, &n), 0);
    ck_assert_double_eq_tol(mx, 1 - (1e-5 + 1e-7 * 16) / (1.5 * (1e-5 + 1e-7 * 16)), 1e-9);
    ck_assert(med > 0);
    l.npts = 2;                                   /* no interior point: undefined, not zero */
    ck_assert_int_eq(cost_grid_loo(&l, &med, &mx, &n), 0);
    ck_assert_int_eq(n, 0);
    ck_assert(isnan(med));
}
END_TEST

/* Law l (not fitted) put into profile p: the profile model of p. */
static cost_model_t *put_law_model(profile_t *p, prof_law_t *l)
{
    l->fit_median_rel = l->fit_max_rel = -1;
    ck_assert_int_eq(prof_put(p, l), 0);
    char err[COST_ERR_MAX];
    cost_model_t *cm = cost_profile_new(p, &M, 1, err);
    ck_assert_msg(cm != NULL, "%s", err);
    return cm;
}

/* bm32 points at q = 64 and q = 256, seq_len 1024 and 262144, times linear in seq_len and twice
 * as long at q = 256: the measured grid the chunk sizes between are priced from. split: the
 * profile records the fast kernel's split rule (prefill_split) */
static cost_model_t *chunk_grid_model(profile_t *p, int split)
{
    synthetic(p, 0);
    p->sms = 132;
    if (split) {
        p->split_max = 4;
        p->split_min_tiles = 8;
        p->split_cost_tiles = 4;
        p->split_ctas_per_sm = 1;
    }
    prof_law_t l;
    memset(&l, 0, sizeof l);
    snprintf(l.name, sizeof l.name, "attn.prefill_bm32.fp16");
    l.ncoef = 4;
    l.coef[PREFILL_TILES_TOTAL] = 1e-7;     /* the law only prices what the grid lacks */
    l.ncols = 5;
    double pts[4][5] = { { 1, 64, 1024, 784, 1e-4 }, { 1, 64, 262144, 784, 1e-2 },
                         { 1, 256, 1024, 784, 2e-4 }, { 1, 256, 262144, 784, 2e-2 } };
    l.pts = &pts[0][0];
    l.npts = 4;
    return put_law_model(p, &l);
}

/* one prefill row of q tokens at seq_len L through the router and the model: its attention
 * seconds a layer */
static double chunk_attn(cost_model_t *cm, int q, double L)
{
    route_cfg_t rc = { .smallq_max_q = 16, .page = 784, .group = 6,
                       .fp8_bridge_page = 784 };
    route_plan_t plan;
    route_plan_init(&plan);
    kseg_t rows[1] = { { 0, q, (long)L } };
    ck_assert_int_eq(route_step(&rc, rows, 1, &plan), 0);
    ck_assert_int_eq(plan.calls[0].route, ROUTE_PREFILL_BM32);
    cost_step_t in = { &plan, NULL, q, 1, 0, 1, 0, 0, 0, 0 };
    cost_breakdown_t o;
    ck_assert_int_eq(cm->step(cm, &in, &o), 0);
    route_plan_free(&plan);
    return o.attn / M.n_full_attn;
}

START_TEST(measured_grid_prices_chunks_by_waves)
{
    /* q = 64 is 48 CTAs at TP1 (one wave on 132 SMs), q = 256 192 CTAs (two waves) */
    profile_t p;
    cost_model_t *cm = chunk_grid_model(&p, 0);
    double L = 131584;                      /* half way along the seq_len axis */
    double t64 = 1e-4 + (1e-2 - 1e-4) * (L - 1024) / (262144 - 1024);
    double t256 = 2 * t64;
    struct { int q; double want; } cases[] = {
        { 64, t64 },                        /* measured: interpolated along seq_len */
        { 96, t64 },                        /* 72 CTAs: still one wave, costs what q = 64 costs */
        { 256, t256 },
        { 160, t64 },                       /* 120 CTAs: one wave */
        { 192, t256 },                      /* 144 CTAs: the second wave */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        double t = chunk_attn(cm, cases[i].q, L);
        ck_assert_msg(fabs(t / cases[i].want - 1) < 1e-9, "q=%d: %g vs %g", cases[i].q, t, cases[i].want);
    }
    cost_free(cm);
    prof_free(&p);
}
END_TEST

START_TEST(measured_grid_prices_split_chunks_by_busiest_sm)
{
    /* a profile whose fast kernel splits its walk (prefill_split) blends an unmeasured q
     * between the measured ones by the busiest SM's tiles (tiles_max + queue_tiles), not by
     * waves. At 240000 (1875 tiles a CTA, 24 heads at TP1, 132 SMs), from a replica in Python
     * of attn_split.h and the list schedule: q = 64: 2 parts, busiest 938; q = 96: 3 parts of
     * 625, 216 on 132 SMs, busiest 1250; q = 160: 120 CTAs, whole, 1875; q = 192: 4 parts,
     * 2343; q = 256: 2 parts, 2813 */
    profile_t p;
    cost_model_t *cm = chunk_grid_model(&p, 1);
    double L = 240000, f = (L - 1024) / (262144 - 1024);
    double t64 = 1e-4 + (1e-2 - 1e-4) * f, t256 = 2e-4 + (2e-2 - 2e-4) * f;
    struct { int q; double busy; } cases[] = { { 64, 938 }, { 96, 1250 }, { 160, 1875 }, { 192, 2343 }, { 256, 2813 } };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        double t = chunk_attn(cm, cases[i].q, L), want = t64 + (cases[i].busy - 938) / (2813 - 938) * (t256 - t64);
        ck_assert_msg(fabs(t / want - 1) < 1e-9, "q=%d: %g vs %g", cases[i].q, t, want);
    }
    cost_free(cm);
    prof_free(&p);
}
END_TEST

START_TEST(features_of_items_match_points)
{
    /* the simulator's items and calib's points of one shape have one feature vector (the
     * grid's edges and the fitted laws rely on it): a small-q verify row expanded token-
     * wise (one request: its rows read the same pages), two decode rows of two requests */
    model_rank_t r;
    model_rank(&M, 1, &r);
    cost_hw_t hw = { .sms = 132, .flops = 7.5e14, .bw = 4.2e12 };
    route_cfg_t rc = { .smallq_max_q = 16, .page = 784, .group = r.group,
                       .fp8_bridge_page = 784 };
    route_plan_t plan;
    route_plan_init(&plan);
    struct { kseg_t rows[2]; int n; double point[4]; } cases[] = {
        { { { 0, 5, 100000 } }, 1, { 1, 5, 100000, 784 } },
        { { { 0, 1, 50000 }, { 1, 1, 50000 } }, 2, { 2, 1, 50000, 784 } },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        ck_assert_int_eq(route_step(&rc, cases[i].rows, cases[i].n, &plan), 0);
        ck_assert_int_eq(plan.ncalls, 1);
        ck_assert_int_eq(plan.calls[0].route, ROUTE_DECODE_XQA);
        cost_item_t it = { .kind = CI_ATTN, .call = &plan.calls[0], .count = 1 };
        double fi[PROF_MAX_COEF], fp[PROF_MAX_COEF];
        ck_assert_int_eq(cost_item_features(&it, &M, &r, &hw, fi), 0);
        ck_assert_int_eq(cost_point_features("attn.decode_xqa.fp16", cases[i].point, &M, &r, &hw, fp), 0);
        for (int j = 0; j < cost_law_ncoef("attn.decode_xqa.fp16"); j++)
            ck_assert_msg(fi[j] == fp[j], "case %zu feature %d: %g vs %g", i, j, fi[j], fp[j]);
        /* unique KV tokens: one request's longest row / every request's */
        ck_assert_double_eq(fp[DECODE_KV_UNIQUE], 100000.0 * r.kv_heads);
        ck_assert(fp[DECODE_KV_TOKENS] >= fp[DECODE_KV_UNIQUE]);
    }
    /* gemm: the roofline at the profile's ceilings; unknown ceilings give 0 */
    cost_item_t g = { .kind = CI_GEMM, .m = 2048, .n = 5120, .k = 6144, .wb = 2, .count = 1 };
    double f[PROF_MAX_COEF], row[4] = { 2048, 5120, 6144, 2 }, fp[PROF_MAX_COEF];
    ck_assert_int_eq(cost_item_features(&g, &M, &r, &hw, f), 0);
    ck_assert_int_eq(cost_point_features("gemm", row, &M, &r, &hw, fp), 0);
    double fl = 2.0 * 2048 * 5120 * 6144, by = 2.0 * (2048.0 * 6144 + 2048.0 * 5120) + 2.0 * 5120 * 6144;
    ck_assert_double_eq_tol(f[GEMM_ROOFLINE], fmax(fl / 7.5e14, by / 4.2e12), 1e-18);
    for (int j = 0; j < GEMM_SPLIT; j++) ck_assert_double_eq(f[j], fp[j]);
    ck_assert_int_eq(cost_item_features(&g, &M, &r, NULL, f), 0);
    ck_assert_double_eq(f[GEMM_ROOFLINE], 0);
    route_plan_free(&plan);
}
END_TEST

START_TEST(prefill_split_parts)
{
    /* a profile of the fast kernel that splits its walk (kernels/attn_split.h) prices the
     * parts it runs: q = 784 at 104000 on the H200 (24 heads at TP1): 600 CTAs of <= 813 tiles;
     * whole rounds x the longest part: 5 x 813 = 4065, 10 x 407 + 4 = 4074, 14 x 271 + 4 = 3798,
     * 19 x 204 + 4 = 3880 -> 3 parts: the same tiles, 1800 CTAs, 271 the longest; the busiest
     * SM 3783 tiles (a replica in Python of the list schedule with the parts in launch order) */
    model_rank_t r;
    model_rank(&M, 1, &r);
    double f[PROF_MAX_COEF], g[PROF_MAX_COEF];
    cost_hw_t split = { .sms = 132, .flops = 7.5e14, .bw = 4.2e12, .split_max = 4, .split_min_tiles = 8,
                       .split_cost_tiles = 4, .split_occ = 1 },
              plain = { .sms = 132, .flops = 7.5e14, .bw = 4.2e12 };
    double p[4] = { 1, 784, 104000, 784 };
    ck_assert_int_eq(cost_point_features("attn.prefill_bm32.fp16", p, &M, &r, &split, f), 0);
    ck_assert_int_eq(cost_point_features("attn.prefill_bm32.fp16", p, &M, &r, &plain, g), 0);
    ck_assert_double_eq(f[PREFILL_TILES_TOTAL], g[PREFILL_TILES_TOTAL]);
    ck_assert_double_eq(f[PREFILL_TILES_TOTAL], 486072);
    ck_assert_double_eq(g[PREFILL_CTAS], 600);
    ck_assert_double_eq(f[PREFILL_CTAS], 1800);
    ck_assert_double_eq(g[PREFILL_TILES_MAX], 813);
    ck_assert_double_eq(f[PREFILL_TILES_MAX], 271);
    ck_assert_double_eq(f[PREFILL_QUEUE_TILES], 3783 - 271);
    /* the other prefill kernels never split */
    ck_assert_int_eq(cost_point_features("attn.prefill_generic.fp16", p, &M, &r, &split, f), 0);
    ck_assert_int_eq(cost_point_features("attn.prefill_generic.fp16", p, &M, &r, &plain, g), 0);
    for (int j = 0; j < PREFILL__N; j++) ck_assert_double_eq(f[j], g[j]);
    /* q = 2816 at 131072: 88 x 24 = 2112 CTAs fill exactly 16 rounds: 16 x 1024 against 32 x 512 + 4,
     * 48 x 342 + 4, 64 x 256 + 4: no split */
    double p2[4] = { 1, 2816, 131072, 784 };
    ck_assert_int_eq(cost_point_features("attn.prefill_bm32.fp16", p2, &M, &r, &split, f), 0);
    ck_assert_int_eq(cost_point_features("attn.prefill_bm32.fp16", p2, &M, &r, &plain, g), 0);
    for (int j = 0; j < PREFILL__N; j++) ck_assert_double_eq(f[j], g[j]);
}
END_TEST

START_TEST(prefill_queue_tiles)
{
    /* the prefill laws' queue_tiles: the busiest SM's tiles with the CTAs dispatched in launch
     * order to the SM that frees first, less the longest CTA's tiles; 0 while the CTAs fit the
     * SMs or the SMs are unknown; a law of 4 coefficients (no queue term) prices without it */
    model_rank_t r;
    model_rank(&M, 1, &r);
    double f[PROF_MAX_COEF];
    /* bm32 q = 64 fresh: 2 M-tiles of 1 tile, x 24 heads = 48 equal CTAs; on 4 SMs 12 each */
    cost_hw_t hw4 = { .sms = 4 };
    double p1[4] = { 1, 64, 64, 784 };
    ck_assert_int_eq(cost_point_features("attn.prefill_bm32.fp16", p1, &M, &r, &hw4, f), 0);
    ck_assert_double_eq(f[PREFILL_CTAS], 48);
    ck_assert_double_eq(f[PREFILL_TILES_MAX], 1);
    ck_assert_double_eq(f[PREFILL_QUEUE_TILES], 12 - 1);
    /* generic (BN64) q = 64 at 128: CTAs of 2 tiles, 48 on 5 SMs: the busiest holds 10 */
    cost_hw_t hw5 = { .sms = 5 };
    double p2[4] = { 1, 64, 128, 784 };
    ck_assert_int_eq(cost_point_features("attn.prefill_generic.fp16", p2, &M, &r, &hw5, f), 0);
    ck_assert_double_eq(f[PREFILL_QUEUE_TILES], 20 - 2);
    /* two identical rows: twice the CTAs */
    double p3[4] = { 2, 64, 64, 784 };
    ck_assert_int_eq(cost_point_features("attn.prefill_bm32.fp16", p3, &M, &r, &hw4, f), 0);
    ck_assert_double_eq(f[PREFILL_QUEUE_TILES], 24 - 1);
    /* the H200's 132 SMs, q = 1568 at 6502: 1176 CTAs of 39..51 tiles (a replica in Python
     * of the list schedule gives 426 on the busiest SM) */
    cost_hw_t h200 = { .sms = 132, .flops = 7.5e14, .bw = 4.2e12 };
    double p4[4] = { 1, 1568, 6502, 784 };
    ck_assert_int_eq(cost_point_features("attn.prefill_bm32.fp16", p4, &M, &r, &h200, f), 0);
    ck_assert_double_eq(f[PREFILL_TILES_MAX], 51);
    ck_assert_double_eq(f[PREFILL_QUEUE_TILES], 426 - 51);
    /* CTAs that fit the SMs, or unknown SMs: 0 */
    double p5[4] = { 1, 784, 100000, 784 };   /* 600 CTAs */
    cost_hw_t big = { .sms = 600 };
    ck_assert_int_eq(cost_point_features("attn.prefill_bm32.fp16", p5, &M, &r, &big, f), 0);
    ck_assert_double_eq(f[PREFILL_QUEUE_TILES], 0);
    ck_assert_int_eq(cost_point_features("attn.prefill_bm32.fp16", p5, &M, &r, NULL, f), 0);
    ck_assert_double_eq(f[PREFILL_QUEUE_TILES], 0);
    /* the feature of an item is the feature of its point */
    route_cfg_t rc = { .smallq_max_q = 16, .page = 784, .group = r.group,
                       .fp8_bridge_page = 784 };
    route_plan_t plan;
    route_plan_init(&plan);
    kseg_t row = { 0, 1568, 6502 };
    ck_assert_int_eq(route_step(&rc, &row, 1, &plan), 0);
    ck_assert_int_eq(plan.ncalls, 1);
    cost_item_t it = { .kind = CI_ATTN, .call = &plan.calls[0], .count = 1 };
    char name[64];
    double fi[PROF_MAX_COEF], fp[PROF_MAX_COEF];
    const char *ln = cost_item_law(&it, name, sizeof name);
    ck_assert_int_eq(cost_item_features(&it, &M, &r, &h200, fi), 0);
    ck_assert_int_eq(cost_point_features(ln, p4, &M, &r, &h200, fp), 0);
    for (int j = 0; j < cost_law_ncoef(ln); j++)
        ck_assert_double_eq(fi[j], fp[j]);
    route_plan_free(&plan);
    /* a law with 4 coefficients prices with its four terms: no fifth */
    prof_law_t l;
    memset(&l, 0, sizeof l);
    snprintf(l.name, sizeof l.name, "attn.prefill_bm32.fp16");
    l.ncoef = 4;
    l.coef[PREFILL_ONE] = 3e-6, l.coef[PREFILL_TILES_TOTAL] = 2e-8, l.coef[PREFILL_TILES_MAX] = 2e-6;
    l.coef[PREFILL_CTAS] = 2e-8, l.coef[PREFILL_QUEUE_TILES] = 1; /* stray: unused */
    ck_assert_int_eq(cost_point_features(l.name, p4, &M, &r, &h200, f), 0);
    ck_assert_double_eq(prof_eval(&l, f),
                        3e-6 + 2e-8 * f[PREFILL_TILES_TOTAL] + 2e-6 * f[PREFILL_TILES_MAX] + 2e-8 * f[PREFILL_CTAS]);
    ck_assert_int_eq(cost_law_ncoef(l.name), 7);
}
END_TEST

START_TEST(prefill_tiles_by_periods)
{
    /* a prefill row's tiles are summed by periods of BN / BM M-tiles: the same as walking
     * every M-tile, for each kernel and row shapes around the tiles' edges */
    static const char *const laws[] = { "attn.prefill_bm32.fp16", "attn.prefill_generic.fp16",
                                        "attn.prefill_lowsmem.fp16" };
    static const int bm[] = { 32, 32, 16 }, bn[] = { 128, 64, 128 };
    model_rank_t r;
    model_rank(&M, 1, &r);
    for (int k = 0; k < 3; k++)
        for (long q = 1; q <= 700; q += 13)
            for (long pre = 0; pre <= 300; pre += 37) {
                double row[4] = { 1, (double)q, (double)(pre + q), 784 }, f[PROF_MAX_COEF];
                ck_assert_int_eq(cost_point_features(laws[k], row, &M, &r, NULL, f), 0);
                double tot = 0, mx = 0;
                for (long i = 0; i * bm[k] < q; i++) {
                    long last = (i + 1) * bm[k] < q ? (i + 1) * bm[k] : q;
                    double t = (double)((pre + last + bn[k] - 1) / bn[k]);
                    tot += t;
                    mx = fmax(mx, t);
                }
                ck_assert_msg(f[PREFILL_TILES_TOTAL] == tot * r.q_heads && f[PREFILL_TILES_MAX] == mx,
                              "%s q %ld prefix %ld: %g %g vs %g %g", laws[k], q, pre, f[PREFILL_TILES_TOTAL],
                              f[PREFILL_TILES_MAX], tot * r.q_heads, mx);
            }
    /* the largest point a profile may hold (2^10 rows, q = 2^20 at 2^24): priced at once,
     * its queue by list scheduling's bound (over 2^20 CTAs) */
    cost_hw_t h200 = { .sms = 132, .flops = 7.5e14, .bw = 4.2e12, .split_max = 4, .split_min_tiles = 8,
                       .split_cost_tiles = 4, .split_occ = 1 };
    double big[4] = { PROF_MAX_ROWS, PROF_MAX_Q, (double)PROF_MAX_SEQ_LEN, 784 }, f[PROF_MAX_COEF];
    ck_assert_int_eq(cost_point_features("attn.prefill_bm32.fp16", big, &M, &r, &h200, f), 0);
    ck_assert(f[PREFILL_CTAS] > 1 << 20);
    double bound = fmin(f[PREFILL_TILES_TOTAL] / 132 + (1 - 1.0 / 132) * f[PREFILL_TILES_MAX],
                        ceil(f[PREFILL_CTAS] / 132) * f[PREFILL_TILES_MAX]);
    ck_assert_double_eq(f[PREFILL_QUEUE_TILES], bound - f[PREFILL_TILES_MAX]);
}
END_TEST

START_TEST(grid_of_many_points)
{
    /* 50,000 gemm points, 500 shapes of 100 m each, in a shuffled order: grouped by sorting
     * (a pairwise grouping took seconds), every group its shape's m in order, found by its key */
    static double pts[50000 * 5];
    int n = 0;
    for (int i = 0; i < 50000; i++) {
        int j = (int)(((long)i * 7919) % 50000);    /* 7919 is prime to 50000: a permutation */
        int shape = j / 100, m = j % 100 + 1;
        double *p = pts + 5 * n++;
        p[0] = m, p[1] = 1024 + shape, p[2] = 4096, p[3] = 2, p[4] = 1e-6 * m;
    }
    prof_law_t l;
    prof_law_init(&l, law_form(LAW_GEMM));
    l.ncols = 5;
    snprintf(l.cols[4], sizeof l.cols[4], "t_s");
    l.pts = pts;
    l.npts = n;
    cost_grid_t g;
    ck_assert_int_eq(cost_grid_build(&g, &l, 1), 0);
    ck_assert_int_eq(g.n, 500);
    for (int k = 0; k < g.n; k++) {
        ck_assert_int_eq(g.g[k].npts, 100);
        ck_assert_double_eq(g.g[k].key[1], 1024 + k);  /* ordered by key */
        for (int i = 1; i < 100; i++) ck_assert(g.g[k].ax[i] > g.g[k].ax[i - 1]);
        const cost_grid_group_t *f = cost_grid_find(&g, 0, (double[]){ 7, 1024 + k, 4096, 2 }, 4, 0);
        ck_assert_ptr_eq(f, &g.g[k]);
    }
    ck_assert_ptr_null(cost_grid_find(&g, 0, (double[]){ 7, 1023, 4096, 2 }, 4, 0));
    ck_assert_ptr_null(cost_grid_find(&g, 1, (double[]){ 7, 1024, 4096, 2 }, 4, 0));
    cost_grid_free(&g);
}
END_TEST

START_TEST(grid_loo_is_finite_within_bounds)
{
    /* the leave-one-out of a grid whose times swing between the loader's bounds (1 ns and
     * 1000 s, sim/profile.h) is large but finite: `pacesim profile` never prints inf */
    double pts[6 * 2];
    for (int i = 0; i < 6; i++) {
        pts[2 * i] = i + 1;
        pts[2 * i + 1] = i % 2 ? 1e3 : 1e-9;
    }
    prof_law_t l;
    prof_law_init(&l, law_form(LAW_ELEMENTWISE));
    l.pts = pts;
    l.npts = 6;
    double med, mx;
    int n;
    ck_assert_int_eq(cost_grid_loo(&l, &med, &mx, &n), 0);
    ck_assert_int_eq(n, 4);
    ck_assert(isfinite(med) && isfinite(mx) && mx >= med);
    ck_assert_double_eq_tol(mx, 1e3 / 1e-9 - 1, 1);
}
END_TEST

START_TEST(roofline_pair_prices_the_larger)
{
    /* gdn's pair (long row, tokens): a 2048-token chunk is priced by its walk, 64 one-token
     * rows by their throughput; the law's other terms add */
    profile_t p;
    synthetic(&p, 0);
    p.sms = 132;
    prof_law_t l;
    memset(&l, 0, sizeof l);
    snprintf(l.name, sizeof l.name, "gdn");
    l.ncoef = cost_law_ncoef("gdn");
    ck_assert_int_eq(l.ncoef, 7);
    l.coef[0] = 1e-5;
    l.coef[GDN_LONG_ROW] = 1e-6; /* per token of the long row */
    l.coef[GDN_TOKENS_BW] = 2e-7; /* per token, throughput */
    l.fit_median_rel = l.fit_max_rel = -1;
    ck_assert_int_eq(prof_put(&p, &l), 0);
    char err[COST_ERR_MAX];
    cost_model_t *cm = cost_profile_new(&p, &M, 1, err);
    ck_assert_msg(cm != NULL, "%s", err);
    cost_item_t chunk = { .kind = CI_GDN, .tokens = 2048, .seqs = 1, .count = 1, .part = CP_GDN };
    cost_item_t rows = { .kind = CI_GDN, .tokens = 64, .seqs = 64, .count = 1, .part = CP_GDN };
    double sec;
    int grid;
    ck_assert_int_eq(cost_profile_item(cm, &chunk, &sec, &grid), 0);
    ck_assert_int_eq(grid, 0);
    ck_assert_double_eq_tol(sec, 1e-5 + 1e-6 * 2048, 1e-15);
    ck_assert_int_eq(cost_profile_item(cm, &rows, &sec, &grid), 0);
    ck_assert_double_eq_tol(sec, 1e-5 + 2e-7 * 64, 1e-15);
    cost_free(cm);
    prof_free(&p);
}
END_TEST

/* A gemm law whose points record cuBLAS's kernel (tile_n, tile_m, splits) prices an item
 * inside a measured shape from the points, and elsewhere with the kernel of the law's
 * nearest point (log distance in m, n, k): its weight re-streamed per column of tiles. */
/* The synthetic profile with a gemm law of 5 us + 1e-14 s per weight byte streamed, its
 * three points of shape 5120 x 6144 (pts, the columns of a point with cuBLAS's kernel) and
 * its kernel ranges (kern, nkern of them; may be 0): the profile model of *p. */
static cost_model_t *gemm_law_model(profile_t *p, double (*pts)[8], double *kern, int nkern)
{
    synthetic(p, 0);
    prof_law_t l;
    memset(&l, 0, sizeof l);
    snprintf(l.name, sizeof l.name, "gemm");
    l.ncoef = cost_law_ncoef("gemm");
    ck_assert_int_eq(l.ncoef, 9);
    l.coef[0] = 5e-6;
    l.coef[GEMM_WEIGHT_STREAM] = 1e-14; /* s per weight byte streamed */
    const char *cols[] = { "m", "n", "k", "wb", "tile_n", "tile_m", "splits", "t_s" };
    l.ncols = 8;
    for (int c = 0; c < 8; c++) snprintf(l.cols[c], sizeof l.cols[c], "%s", cols[c]);
    l.npts = 3;
    l.pts = &pts[0][0];
    l.nkern = nkern;
    l.kern = kern;
    return put_law_model(p, &l);
}

START_TEST(gemm_prices_by_nearest_choice)
{
    profile_t p;
    double wb = M.weight_bytes_per_param, W = wb * 5120 * 6144;
    double pts[3][8] = { { 1, 5120, 6144, wb, 128, 16, 3, 0 }, { 64, 5120, 6144, wb, 96, 64, 2, 0 },
                         { 128, 5120, 6144, wb, 96, 64, 1, 0 } };
    pts[0][7] = 5e-6 + 1e-14 * W;
    pts[1][7] = 5e-6 + 1e-14 * W * 1.2; /* measured off the law: the points price inside */
    pts[2][7] = 5e-6 + 1e-14 * W * 2 * 1.1;
    cost_model_t *cm = gemm_law_model(&p, pts, NULL, 0);
    double sec;
    int grid;
    /* inside the shape: between its m = 64 and m = 128 points */
    cost_item_t in = { .kind = CI_GEMM, .m = 96, .n = 5120, .k = 6144, .wb = wb, .count = 1, .part = CP_LINEAR };
    ck_assert_int_eq(cost_profile_item(cm, &in, &sec, &grid), 0);
    ck_assert_int_eq(grid, 1);
    ck_assert_double_eq_tol(sec, (pts[1][7] + pts[2][7]) / 2, 1e-15);
    /* a shape not measured (half the width): the m = 128 point is nearest (its 96x64
     * tile, 2 columns of tiles at m = 100) */
    cost_item_t other = { .kind = CI_GEMM, .m = 100, .n = 2560, .k = 6144, .wb = wb, .count = 1, .part = CP_LINEAR };
    ck_assert_int_eq(cost_profile_item(cm, &other, &sec, &grid), 0);
    ck_assert_int_eq(grid, 0);
    ck_assert_double_eq_tol(sec, 5e-6 + 1e-14 * wb * 2560 * 6144 * 2, 1e-15);
    /* past the shape's largest m: the law (with the end point's tile) scaled to meet it */
    cost_item_t big = { .kind = CI_GEMM, .m = 512, .n = 5120, .k = 6144, .wb = wb, .count = 1, .part = CP_LINEAR };
    ck_assert_int_eq(cost_profile_item(cm, &big, &sec, &grid), 0);
    ck_assert_int_eq(grid, 1);
    double law_x = 5e-6 + 1e-14 * W * 8, law_end = 5e-6 + 1e-14 * W * 2;
    ck_assert_double_eq_tol(sec, law_x * pts[2][7] / law_end, 1e-15);
    cost_free(cm);
    prof_free(&p);
}
END_TEST

/* With the kernel cuBLAS picks at every m (the gemm law's kernel ranges), an item between two
 * points is priced on a line between them only where both ran its kernel; else on a line
 * between the two points' times each carried by the law from its own kernel at its m to the
 * item's kernel at the item's m. */
START_TEST(gemm_between_kernels)
{
    double wb = M.weight_bytes_per_param, W = wb * 5120 * 6144;
    double pts[3][8] = { { 1, 5120, 6144, wb, 128, 16, 3, 0 }, { 64, 5120, 6144, wb, 96, 64, 2, 0 },
                         { 128, 5120, 6144, wb, 96, 64, 1, 0 } };
    pts[0][7] = 5e-6 + 1e-14 * W;
    pts[1][7] = 5e-6 + 1e-14 * W * 1.2;
    pts[2][7] = 5e-6 + 1e-14 * W * 2 * 1.1;
    /* the kernel at m = 65..127: 32 rows a tile (3 columns of tiles at m = 96), then that of
     * the m = 128 point, then both points' (the m = 64 point's kernel changed to match); the
     * law at m = 64 (one column of tiles), 128 (two), and at 96 with each kernel */
    static const double kernels[3][3] = { { 96, 32, 1 }, { 96, 64, 1 }, { 96, 64, 1 } };
    double law64 = 5e-6 + 1e-14 * W, law128 = 5e-6 + 1e-14 * W * 2, law96[2] = { 5e-6 + 1e-14 * W * 3, law128 };
    double want[3] = { (pts[1][7] * law96[0] / law64 + pts[2][7] * law96[0] / law128) / 2,
                       (pts[1][7] * law96[1] / law64 + pts[2][7]) / 2, (pts[1][7] + pts[2][7]) / 2 };
    for (int c = 0; c < 3; c++) {
        profile_t p;
        if (c == 2) pts[1][6] = 1;
        double kern[3][PROF_KERN_COLS] = { { 5120, 6144, wb, 1, 64, 96, 64, 2 },
                                           { 5120, 6144, wb, 65, 127, kernels[c][0], kernels[c][1], kernels[c][2] },
                                           { 5120, 6144, wb, 128, 128, 96, 64, 1 } };
        if (c == 2) kern[0][KERN_SPLITS] = 1;
        cost_model_t *cm = gemm_law_model(&p, pts, &kern[0][0], 3);
        double sec;
        int grid;
        cost_item_t in = { .kind = CI_GEMM, .m = 96, .n = 5120, .k = 6144, .wb = wb, .count = 1, .part = CP_LINEAR };
        ck_assert_int_eq(cost_profile_item(cm, &in, &sec, &grid), 0);
        ck_assert_int_eq(grid, 1);
        ck_assert_msg(fabs(sec / want[c] - 1) < 1e-12, "case %d: %g vs %g", c, sec, want[c]);
        cost_free(cm);
        prof_free(&p);
    }
}
END_TEST

/* A decode call holding two requests costs its requests' calls priced one by one, less
 * one launch's constant: with a law linear in per-row terms, exactly the law on the whole. */
START_TEST(decode_mixture_is_its_parts_one_launch)
{
    profile_t p;
    synthetic(&p, 0);
    char err[COST_ERR_MAX];
    cost_model_t *cm = cost_profile_new(&p, &M, 1, err);
    ck_assert_msg(cm != NULL, "%s", err);
    model_rank_t r;
    model_rank(&M, 1, &r);
    route_cfg_t rc = { .smallq_max_q = 16, .page = 784, .group = r.group,
                       .fp8_bridge_page = 784 };
    kseg_t both[2] = { { 0, 1, 240000 }, { 1, 1, 16384 } };
    double part[2], whole = 0;
    for (int k = 0; k < 3; k++) {
        route_plan_t plan;
        route_plan_init(&plan);
        ck_assert_int_eq(route_step(&rc, k < 2 ? &both[k] : both, k < 2 ? 1 : 2, &plan), 0);
        ck_assert_int_eq(plan.ncalls, 1);
        cost_item_t it = { .kind = CI_ATTN, .call = &plan.calls[0], .count = 1, .part = CP_ATTN };
        double t;
        int grid;
        ck_assert_int_eq(cost_profile_item(cm, &it, &t, &grid), 0);
        if (k < 2) part[k] = t;
        else whole = t;
        route_plan_free(&plan);
    }
    const prof_law_t *l = prof_find(&p, "attn.decode_xqa.fp16");
    ck_assert_double_eq_tol(whole, part[0] + part[1] - l->coef[0], 1e-15);
    cost_free(cm);
    prof_free(&p);
}
END_TEST

/* A page size calib measured at short contexts only: past its last point the call is
 * priced by another page's measured curve (which reaches it), scaled to meet the short
 * page's own last point, not by the law extrapolated from there. */
START_TEST(decode_past_its_page_points_follows_another_page)
{
    profile_t p;
    synthetic(&p, 0);
    prof_law_t l = *prof_find(&p, "attn.decode_xqa.fp16");
    l.ncols = 5;
    static const char *const cols[] = { "rows", "q", "seq_len", "page", "t_s" };
    for (int c = 0; c < 5; c++) snprintf(l.cols[c], sizeof l.cols[c], "%s", cols[c]);
    double pts[][5] = {
        { 1, 1, 1024, 784, 1e-5 }, { 1, 1, 4096, 784, 3e-5 }, { 1, 1, 65536, 784, 4e-4 },
        { 1, 1, 1024, 816, 0.9e-5 }, { 1, 1, 4096, 816, 2.7e-5 },
    };
    l.pts = &pts[0][0];
    l.npts = 5;
    ck_assert_int_eq(prof_put(&p, &l), 0);
    char err[COST_ERR_MAX];
    cost_model_t *cm = cost_profile_new(&p, &M, 1, err);
    ck_assert_msg(cm != NULL, "%s", err);
    model_rank_t r;
    model_rank(&M, 1, &r);
    route_cfg_t rc = { .smallq_max_q = 16, .page = 816, .group = r.group, .fp8_bridge_page = 816 };
    kseg_t one = { 0, 1, 16384 };
    route_plan_t plan;
    route_plan_init(&plan);
    ck_assert_int_eq(route_step(&rc, &one, 1, &plan), 0);
    ck_assert_int_eq(plan.ncalls, 1);
    ck_assert_int_eq(plan.calls[0].page, 816);
    cost_item_t it = { .kind = CI_ATTN, .call = &plan.calls[0], .count = 1, .part = CP_ATTN };
    double t;
    int grid;
    ck_assert_int_eq(cost_profile_item(cm, &it, &t, &grid), 0);
    ck_assert_int_eq(grid, 1);
    double t784 = 3e-5 + (16384.0 - 4096) / (65536 - 4096) * (4e-4 - 3e-5);
    ck_assert_double_eq_tol(t, t784 * 2.7e-5 / 3e-5, 1e-15);
    route_plan_free(&plan);
    cost_free(cm);
    prof_free(&p);
}
END_TEST

/* The profile model of p for the reference model at TP1, its rank and the router's
 * configuration at page 784: the decode tests' common start. */
static cost_model_t *decode_model(const profile_t *p, model_rank_t *r, route_cfg_t *rc)
{
    char err[COST_ERR_MAX];
    cost_model_t *cm = cost_profile_new(p, &M, 1, err);
    ck_assert_msg(cm != NULL, "%s", err);
    ck_assert_int_eq(model_rank(&M, 1, r), 0);
    *rc = (route_cfg_t){ .smallq_max_q = 16, .page = 784, .group = r->group, .fp8_bridge_page = 784 };
    return cm;
}

/* A launch of two bandwidth-bound requests pays its critical path once: the reduce's depth
 * (the partitions of the longest row) of the longer request, not of both. */
START_TEST(decode_mixture_pays_one_reduce)
{
    profile_t p;
    synthetic(&p, 0);
    for (int i = 0; i < p.nlaws; i++)
        if (!strncmp(p.laws[i].name, "attn.decode_", 12)) p.laws[i].coef[DECODE_REDUCE_DEPTH] = 1e-6;
    model_rank_t r;
    route_cfg_t rc;
    cost_model_t *cm = decode_model(&p, &r, &rc);
    kseg_t both[2] = { { 0, 1, 240000 }, { 1, 1, 16384 } };
    double part[2], depth[2], whole = 0;
    for (int k = 0; k < 3; k++) {
        route_plan_t plan;
        route_plan_init(&plan);
        ck_assert_int_eq(route_step(&rc, k < 2 ? &both[k] : both, k < 2 ? 1 : 2, &plan), 0);
        ck_assert_int_eq(plan.ncalls, 1);
        cost_item_t it = { .kind = CI_ATTN, .call = &plan.calls[0], .count = 1, .part = CP_ATTN };
        double t, f[PROF_MAX_COEF];
        int grid;
        ck_assert_int_eq(cost_profile_item(cm, &it, &t, &grid), 0);
        ck_assert_int_eq(cost_item_features(&it, &M, &r, &(cost_hw_t){ 0 }, f), 0);
        if (k < 2) {
            part[k] = t;
            depth[k] = f[DECODE_REDUCE_DEPTH];
        } else whole = t;
        route_plan_free(&plan);
    }
    ck_assert_double_gt(depth[0], depth[1]);
    const prof_law_t *l = prof_find(&p, "attn.decode_xqa.fp16");
    ck_assert_double_eq_tol(whole, part[0] + part[1] - l->coef[0] - 1e-6 * depth[1], 1e-15);
    cost_free(cm);
    prof_free(&p);
}
END_TEST

/* The n rows priced one by one (their sum in *sum) and in one step together (returned): each
 * a single call; the call of all n is checked to cost exactly its law on its features. */
static double price_alone_and_together(cost_model_t *cm, const profile_t *p, const route_cfg_t *rc,
                                       const kseg_t *rows, int n, const model_rank_t *r, const cost_hw_t *hw,
                                       double *sum)
{
    double whole = 0, t;
    int grid;
    *sum = 0;
    for (int i = 0; i <= n; i++) {
        route_plan_t plan;
        route_plan_init(&plan);
        ck_assert_int_eq(route_step(rc, i < n ? &rows[i] : rows, i < n ? 1 : n, &plan), 0);
        ck_assert_int_eq(plan.ncalls, 1);
        cost_item_t it = { .kind = CI_ATTN, .call = &plan.calls[0], .count = 1, .part = CP_ATTN };
        ck_assert_int_eq(cost_profile_item(cm, &it, &t, &grid), 0);
        if (i < n) *sum += t;
        else {
            whole = t;
            double f[PROF_MAX_COEF];
            ck_assert_int_eq(cost_item_features(&it, &M, r, hw, f), 0);
            const prof_law_t *l = prof_find(p, cost_item_law(&it, (char[64]){ 0 }, 64));
            ck_assert_ptr_nonnull(l);
            ck_assert_double_eq_tol(whole, prof_eval(l, f), 1e-15);
        }
        route_plan_free(&plan);
    }
    return whole;
}

/* Many latency-bound requests in one decode call share its launch: the call costs the law
 * on their union (no points: no anchor), far less than the sum of the requests one by one. */
START_TEST(decode_pack_is_one_launch)
{
    profile_t p;
    synthetic(&p, 0);
    p.sms = 132;
    model_rank_t r;
    route_cfg_t rc;
    cost_model_t *cm = decode_model(&p, &r, &rc);
    enum { N = 60 };
    kseg_t rows[N];
    double sum;
    for (int i = 0; i < N; i++) rows[i] = (kseg_t){ i, 1, 500 + 5 * i };
    double whole = price_alone_and_together(cm, &p, &rc, rows, N, &r, &(cost_hw_t){ .sms = 132 }, &sum);
    ck_assert_msg(whole < 0.5 * sum, "one launch %g s, the parts' sum %g s", whole, sum);
    cost_free(cm);
    prof_free(&p);
}
END_TEST

/* A request that fills one wave alone but not two shares the launch too: its own call
 * would end on a partial wave the other requests' CTAs fill, so the call of four such
 * requests costs the law on their union, less than their calls one by one. */
START_TEST(decode_pack_takes_requests_of_under_two_waves)
{
    profile_t p;
    synthetic(&p, 0);
    p.sms = 132;
    /* a wave term: a request's own call pays its partial last wave whole */
    for (int i = 0; i < p.nlaws; i++)
        if (!strncmp(p.laws[i].name, "attn.decode_", 12)) p.laws[i].coef[DECODE_WAVE_TOKENS] = 1e-8;
    model_rank_t r;
    route_cfg_t rc;
    cost_model_t *cm = decode_model(&p, &r, &rc);
    cost_hw_t hw = { .sms = 132 };
    enum { N = 4 };
    kseg_t rows[N];
    double sum, whole, f[PROF_MAX_COEF];
    const law_form_t *form = NULL;
    /* the shortest context whose call is more than a wave: the rows' contexts from there */
    long len = 256;
    for (;; len += 256) {
        kseg_t one = { 0, 1, len };
        route_plan_t plan;
        route_plan_init(&plan);
        ck_assert_int_eq(route_step(&rc, &one, 1, &plan), 0);
        cost_item_t it = { .kind = CI_ATTN, .call = &plan.calls[0], .count = 1, .part = CP_ATTN };
        form = law_find(cost_item_law(&it, (char[64]){ 0 }, 64));
        ck_assert_ptr_nonnull(form);
        ck_assert_int_eq(cost_item_features(&it, &M, &r, &hw, f), 0);
        route_plan_free(&plan);
        if (f[DECODE_CTAS] > hw.sms * form->ctas_per_sm) break;
    }
    ck_assert_double_lt(f[DECODE_CTAS], 2.0 * hw.sms * form->ctas_per_sm);
    for (int i = 0; i < N; i++) rows[i] = (kseg_t){ i, 1, len + i };
    whole = price_alone_and_together(cm, &p, &rc, rows, N, &r, &hw, &sum);
    ck_assert_msg(whole < sum, "one launch %g s, the parts' sum %g s", whole, sum);
    cost_free(cm);
    prof_free(&p);
}
END_TEST

/* The pack is anchored to the measured many-row points: where calib's identical-row calls
 * of 32 and 64 requests took 2x and 3x the law, a call of 48 requests at the same context
 * costs 2.5x the law on its union. */
START_TEST(decode_pack_meets_measured_rows)
{
    profile_t p;
    synthetic(&p, 0);
    p.sms = 132;
    cost_hw_t hw = { .sms = 132 };
    model_rank_t r;
    model_rank(&M, 1, &r);
    static const char *const names[] = { "attn.decode_xqa.fp16", "attn.decode_scalar.fp16" };
    for (int k = 0; k < 2; k++) {
        prof_law_t l = *prof_find(&p, names[k]);
        double pts[2 * 2 * 5];
        int n = 0;
        l.ncols = 5;
        static const char *const cols[] = { "rows", "q", "seq_len", "page", "t_s" };
        for (int c = 0; c < 5; c++) snprintf(l.cols[c], sizeof l.cols[c], "%s", cols[c]);
        for (int rr = 32; rr <= 64; rr *= 2)
            for (long L = 256; L <= 1024; L *= 4) {
                double *row = pts + 5 * n++, f[PROF_MAX_COEF];
                row[0] = rr;
                row[1] = 1;
                row[2] = (double)L;
                row[3] = 784;
                ck_assert_int_eq(cost_point_features(l.name, row, &M, &r, &hw, f), 0);
                row[4] = prof_eval(&l, f) * (rr == 32 ? 2 : 3);
            }
        l.npts = n;
        l.pts = pts;
        ck_assert_int_eq(prof_put(&p, &l), 0);
    }
    char err[COST_ERR_MAX];
    cost_model_t *cm = cost_profile_new(&p, &M, 1, err);
    ck_assert_msg(cm != NULL, "%s", err);
    route_cfg_t rc = { .smallq_max_q = 16, .page = 784, .group = r.group, .fp8_bridge_page = 784 };
    enum { N = 48 };
    kseg_t rows[N];
    for (int i = 0; i < N; i++) rows[i] = (kseg_t){ i, 1, 512 };
    route_plan_t plan;
    route_plan_init(&plan);
    ck_assert_int_eq(route_step(&rc, rows, N, &plan), 0);
    ck_assert_int_eq(plan.ncalls, 1);
    cost_item_t it = { .kind = CI_ATTN, .call = &plan.calls[0], .count = 1, .part = CP_ATTN };
    double t, f[PROF_MAX_COEF];
    int grid;
    ck_assert_int_eq(cost_profile_item(cm, &it, &t, &grid), 0);
    ck_assert_int_eq(grid, 1);
    ck_assert_int_eq(cost_item_features(&it, &M, &r, &hw, f), 0);
    const prof_law_t *l = prof_find(&p, cost_item_law(&it, (char[64]){ 0 }, 64));
    ck_assert_double_eq_tol(t, 2.5 * prof_eval(l, f), 1e-12 * t);
    route_plan_free(&plan);
    cost_free(cm);
    prof_free(&p);
}
END_TEST

/* One decode call of n requests of q tokens at contexts ctx[] (the router's, page 784):
 * its price by cm, and the law it went to in *law. */
static double price_verify_call(cost_model_t *cm, const route_cfg_t *rc, const long *ctx, int n, int q, char *law)
{
    kseg_t rows[128];
    ck_assert_int_le(n, 128);
    for (int i = 0; i < n; i++) rows[i] = (kseg_t){ i, q, ctx[i] };
    route_plan_t plan;
    route_plan_init(&plan);
    ck_assert_int_eq(route_step(rc, rows, n, &plan), 0);
    ck_assert_int_eq(plan.ncalls, 1);
    ck_assert_int_eq(plan.calls[0].nseg, n * q);
    cost_item_t it = { .kind = CI_ATTN, .call = &plan.calls[0], .count = 1, .part = CP_ATTN };
    double t;
    int grid;
    ck_assert_int_eq(cost_profile_item(cm, &it, &t, &grid), 0);
    cost_item_law(&it, law, 64);
    route_plan_free(&plan);
    return t;
}

/* A call of MTP verify rows meets calib's many-request points of its q: where calib measured
 * 8 and 32 requests of q = 3 spread over 2048-14336 keys (the ctx_min column) at 1.25x what the
 * model prices the same calls, and 8 and 32 requests at one context of 2048 and 8192 keys at
 * 1.1x, a call of 16 requests so spread costs 1.25x its price without the points; 16 requests
 * at 8192 (no spread) 1.1x; 16 spread half as much in between; q = 1 rows and another page (no
 * spread point of theirs) as before; and a profile without the column as before. */
START_TEST(decode_spread_call_meets_spread_points)
{
    profile_t p;
    synthetic(&p, 0);
    p.sms = 8;   /* every request of 2K+ fills two waves alone: no pack (pack_anchor) in these calls */
    model_rank_t r;
    route_cfg_t rc;
    cost_model_t *plain = decode_model(&p, &r, &rc);
    enum { Q = 3, NPTS = 6 };
    /* requests, ctx_min, seq_len, measured over the model's price */
    static const double pt[NPTS][4] = { { 8, 2048, 14336, 1.25 }, { 32, 2048, 14336, 1.25 }, { 8, 0, 4096, 1.1 },
                                        { 8, 0, 8192, 1.1 },      { 32, 0, 4096, 1.1 },       { 32, 0, 8192, 1.1 } };
    long ctx[64];
    double pts[NPTS * 9];
    char law[64] = "", law2[64] = "";
    /* the points' calls priced without them, all by one law */
    for (int a = 0; a < NPTS; a++) {
        int n = (int)pt[a][0];
        for (int i = 0; i < n; i++) ctx[i] = law_varlen_row_ctx(n, (long)pt[a][1], (long)pt[a][2], i);
        double t = price_verify_call(plain, &rc, ctx, n, Q, law);
        if (a) ck_assert_str_eq(law, law2);
        snprintf(law2, sizeof law2, "%s", law);
        double *row = pts + 9 * a;
        row[ATTN_COL_ROWS] = n, row[ATTN_COL_Q] = Q, row[ATTN_COL_SEQ_LEN] = pt[a][2], row[ATTN_COL_PAGE] = 784;
        row[ATTN_COL_Q_HEADS] = r.q_heads, row[ATTN_COL_KV_HEADS] = r.kv_heads, row[ATTN_COL_HEAD_DIM] = M.head_dim;
        row[ATTN_COL_CTX_MIN] = pt[a][1];
        row[8] = pt[a][3] * t;
    }
    /* 16 requests: spread as the points, at one context (their mean), spread half as much */
    long spread[16], one[16], half[16];
    for (int i = 0; i < 16; i++) {
        spread[i] = law_varlen_row_ctx(16, 2048, 14336, i);
        one[i] = 8192;
        half[i] = law_varlen_row_ctx(16, 5120, 11264, i);
    }
    double t_spread = price_verify_call(plain, &rc, spread, 16, Q, law2), t_one = price_verify_call(plain, &rc, one, 16, Q, law2),
           t_half = price_verify_call(plain, &rc, half, 16, Q, law2);
    ck_assert_str_eq(law, law2);
    /* the same profile with the points (the law's own coefficients, nine columns) */
    prof_law_t l;
    prof_law_init(&l, law_find(law));
    ck_assert_int_eq(l.ncols, 9);
    for (int c = 0; c < l.ncoef; c++) l.coef[c] = prof_find(&p, law)->coef[c];
    l.npts = NPTS;
    l.pts = pts;
    ck_assert_int_eq(prof_put(&p, &l), 0);
    char err[COST_ERR_MAX];
    cost_model_t *cm = cost_profile_new(&p, &M, 1, err);
    ck_assert_msg(cm != NULL, "%s", err);
    for (int a = 0; a < NPTS; a++) {   /* each point's call costs what calib measured */
        int n = (int)pt[a][0];
        for (int i = 0; i < n; i++) ctx[i] = law_varlen_row_ctx(n, (long)pt[a][1], (long)pt[a][2], i);
        ck_assert_double_eq_tol(price_verify_call(cm, &rc, ctx, n, Q, law2), pts[9 * a + 8], 1e-9 * pts[9 * a + 8]);
    }
    ck_assert_double_eq_tol(price_verify_call(cm, &rc, spread, 16, Q, law2), 1.25 * t_spread, 1e-9 * t_spread);
    ck_assert_double_eq_tol(price_verify_call(cm, &rc, one, 16, Q, law2), 1.1 * t_one, 1e-9 * t_one);
    double th = price_verify_call(cm, &rc, half, 16, Q, law2);
    ck_assert_msg(th > 1.15 * t_half && th < 1.24 * t_half, "half the spread: %g s, %g without the points", th, t_half);
    /* q = 1 rows (no point of their q) and another page: as before */
    long two[2] = { 3000, 9000 };
    ck_assert_double_eq(price_verify_call(cm, &rc, spread, 16, 1, law2), price_verify_call(plain, &rc, spread, 16, 1, law2));
    route_cfg_t rc2 = rc;
    rc2.page = 1568;
    ck_assert_double_eq(price_verify_call(cm, &rc2, two, 2, Q, law2), price_verify_call(plain, &rc2, two, 2, Q, law2));
    cost_free(cm);
    cost_free(plain);
    prof_free(&p);
}
END_TEST

/* A profile whose envelope is another attention shape: the run ends with the law's warning
 * line on stderr, naming the shapes and the share of step time. */
START_TEST(envelope_warns_outside)
{
    profile_t p;
    synthetic(&p, 0);
    model_rank_t r;
    model_rank(&M, 1, &r);
    p.has_envelope = 1;
    p.env_tp = 1;
    p.env_q_heads = r.q_heads;
    p.env_kv_heads = r.kv_heads * 2;
    p.env_head_dim = M.head_dim;
    /* a second model's shape merged in: one point of 40 q / 10 kv heads of 128 */
    prof_law_t l = *prof_find(&p, "attn.prefill_generic.fp16");
    static const char *const cols[] = { "rows", "q", "seq_len", "page", "q_heads", "kv_heads", "head_dim", "t_s" };
    double pt[8] = { 1, 784, 4096, 784, 40, 10, 128, 1e-3 };
    l.ncols = 8;
    for (int c = 0; c < 8; c++) snprintf(l.cols[c], sizeof l.cols[c], "%s", cols[c]);
    l.npts = 1;
    l.pts = pt;
    ck_assert_int_eq(prof_put(&p, &l), 0);
    char err[COST_ERR_MAX];
    for (int outside = 0; outside < 2; outside++) {
        p.env_kv_heads = outside ? r.kv_heads * 2 : r.kv_heads;
        cost_model_t *cm = cost_profile_new(&p, &M, 1, err);
        ck_assert_msg(cm != NULL, "%s", err);
        route_cfg_t rc = { .smallq_max_q = 16, .page = 784, .group = r.group, .fp8_bridge_page = 784 };
        kseg_t row = { 0, 1, 4096 };
        route_plan_t plan;
        route_plan_init(&plan);
        ck_assert_int_eq(route_step(&rc, &row, 1, &plan), 0);
        cost_step_t in = { .plan = &plan, .tokens = 1, .rows = 1, .decode_rows = 1, .sampled = 1 };
        cost_breakdown_t o;
        ck_assert_int_eq(cm->step(cm, &in, &o), 0);
        char path[] = "/tmp/check_cost_envXXXXXX";
        int fd = mkstemp(path);
        ck_assert_int_ge(fd, 0);
        fflush(stderr);
        int saved = dup(2);
        dup2(fd, 2);
        cost_free(cm);
        fflush(stderr);
        dup2(saved, 2);
        close(saved);
        char buf[2048] = { 0 };
        lseek(fd, 0, SEEK_SET);
        ssize_t n = read(fd, buf, sizeof buf - 1);
        close(fd);
        unlink(path);
        route_plan_free(&plan);
        if (!outside) {
            ck_assert_int_eq((int)n, 0);
            continue;
        }
        ck_assert_msg(strstr(buf, "warning: attn.decode_") && strstr(buf, "priced outside its measured envelope") &&
                          strstr(buf, "1 items") && strstr(buf, "of step time by the law's extrapolation"),
                      "stderr: %s", buf);
        /* the run's shape and every shape measured: the envelope's, and a merged model's points */
        char want[96];
        snprintf(want, sizeof want, "%d q/%d kv heads, head_dim %d at TP1; measured %d/%d, %d; 40/10, 128 at TP1",
                 r.q_heads, r.kv_heads, M.head_dim, r.q_heads, r.kv_heads * 2, M.head_dim);
        ck_assert_msg(strstr(buf, want), "want \"%s\" in: %s", want, buf);
    }
    prof_free(&p);
}
END_TEST

/* A law fitted on 256-wide heads prices narrower ones by what they move: a 128-wide model's
 * token and tile features are half the reference's, its CTAs and reduce depth the same; the
 * narrow features (what a narrower head keeps of the unscaled walk) are 0 at 256. */
START_TEST(features_scale_with_head_dim)
{
    model_t m2 = M;
    m2.head_dim = 128;
    model_rank_t r;
    model_rank(&M, 1, &r);
    cost_hw_t hw = { .sms = 132 };
    static const char *const laws[] = { "attn.decode_xqa.fp16", "attn.prefill_generic.fp16", "attn.fp8_bridge" };
    double row[] = { 4, 1, 20000, 784 }, chunk[] = { 1, 784, 20000, 784 };
    for (int k = 0; k < 3; k++) {
        double a[PROF_MAX_COEF], b[PROF_MAX_COEF];
        const double *x = k == 0 ? row : chunk;
        ck_assert_int_eq(cost_point_features(laws[k], x, &M, &r, &hw, a), 0);
        ck_assert_int_eq(cost_point_features(laws[k], x, &m2, &r, &hw, b), 0);
        ck_assert_double_eq(b[0], a[0]);
        int scaled[] = { k == 0 ? DECODE_KV_TOKENS : k == 1 ? PREFILL_TILES_TOTAL : BRIDGE_EXPANDED,
                         k == 0 ? DECODE_SM_TOKENS : k == 1 ? PREFILL_TILES_MAX : BRIDGE_PAGE_WALK };
        int kept = k == 0 ? DECODE_CTAS : k == 1 ? PREFILL_CTAS : BRIDGE_SM_CTAS;
        for (int i = 0; i < 2; i++) {
            ck_assert_double_gt(a[scaled[i]], 0);
            ck_assert_double_eq(b[scaled[i]], a[scaled[i]] / 2);
        }
        ck_assert_double_eq(b[kept], a[kept]);
        /* what a narrower head does not save: 0 at 256, half the unscaled tiles at 128 */
        int narrow = k == 0 ? DECODE_WAVE_NARROW : k == 1 ? PREFILL_TILES_MAX_NARROW : -1;
        int of = k == 0 ? DECODE_WAVE_TOKENS : PREFILL_TILES_MAX;
        if (narrow >= 0) {
            ck_assert_double_eq(a[narrow], 0);
            ck_assert_double_gt(a[of], 0);
            ck_assert_double_eq(b[narrow], a[of] / 2);
        }
        if (k == 1) ck_assert_double_eq(b[PREFILL_TILES_TOTAL_NARROW], a[PREFILL_TILES_TOTAL] / 2);
    }
}
END_TEST

/* The grouped expert GEMM launches an expert's rows in tiles of LAW_MOE_TILE_M: 1024 tokens x
 * top-8 over 128 experts is 64 rows an expert, one tile each; 1040 tokens is 65 rows, two tiles
 * each, double the tile work for 1.6% more rows; one token fills one tile in each of 8 experts. */
START_TEST(moe_row_tiles)
{
    model_rank_t r;
    model_rank(&M, 1, &r);
    cost_hw_t hw = { .sms = 132 };
    const double nk2 = 2.0 * 1536 * 2048;
    struct { double tokens, tiles; } c[] = { { 1024, 128 }, { 1040, 256 }, { 1, 8 }, { 2048, 256 }, { 2064, 384 } };
    for (int i = 0; i < 5; i++) {
        double row[] = { c[i].tokens, 128, 8, 1536, 2048, 0 }, f[PROF_MAX_COEF];
        ck_assert_int_eq(cost_point_features("gemm.moe.fp16", row, &M, &r, &hw, f), 0);
        ck_assert_double_eq(f[MOE_TILE_FLOPS], c[i].tiles * LAW_MOE_TILE_M * nk2);
        ck_assert_double_eq(f[MOE_FLOPS], c[i].tokens * 8 * nk2);
    }
    ck_assert_int_eq(law_ncoef("gemm.moe.fp16"), 7);
}
END_TEST

/* A routed-expert layer is priced from calib's points of its shape: at a measured token count
 * the point's time, between two the law scaled by their measured-over-law ratios
 * (interpolated in tokens), and a shape calib did not measure by the law alone. */
START_TEST(moe_priced_by_points)
{
    profile_t p;
    char perr[PROF_ERR_MAX], err[COST_ERR_MAX];
    ck_assert_msg(prof_load("tests/data/replay/h200-lib-qwen3-30b-a3b/profile.yaml", &p, perr) == 0, "%s", perr);
    model_t q;
    char serr[SCN_ERR_MAX];
    ck_assert_msg(scn_load_model("models/qwen3-30b-a3b.yaml", &q, serr) == 0, "%s", serr);
    model_rank_t r;
    ck_assert_int_eq(model_rank(&q, 1, &r), 0);
    cost_model_t *cm = cost_profile_new(&p, &q, 1, err);
    ck_assert_msg(cm != NULL, "%s", err);
    cost_profile_set_bounds(cm, 0);
    const prof_law_t *l = prof_find(&p, "gemm.moe.fp16");
    ck_assert_ptr_nonnull(l);
    cost_hw_t hw = cost_hw_of(&p);   /* the profile's ceilings, as the model prices with */
    int at_points = 0;
    for (int i = 0; i < l->npts; i++) {
        const double *v = l->pts + (size_t)i * l->ncols;
        if (v[MOE_COL_SKEW] != q.moe_skew || v[MOE_COL_EXPERTS] != q.moe_experts) continue;
        /* the first point of its shape and token count prices it (repeats: the file's first) */
        int first = 1;
        for (int j = 0; j < i && first; j++) {
            const double *u = l->pts + (size_t)j * l->ncols;
            first = !(u[MOE_COL_TOKENS] == v[MOE_COL_TOKENS] && u[MOE_COL_N] == v[MOE_COL_N] &&
                      u[MOE_COL_K] == v[MOE_COL_K] && u[MOE_COL_SKEW] == v[MOE_COL_SKEW]);
        }
        if (!first) continue;
        cost_item_t it = { .kind = CI_GEMM, .moe = 2, .experts = 1, .count = 1, .m = 1, .n = v[MOE_COL_N],
                           .k = v[MOE_COL_K], .wb = 2, .tokens = v[MOE_COL_TOKENS], .part = CP_LINEAR };
        double sec;
        int grid;
        ck_assert_int_eq(cost_profile_item(cm, &it, &sec, &grid), 0);
        ck_assert_int_eq(grid, 1);
        ck_assert_msg(fabs(sec / v[l->ncols - 1] - 1) < 1e-9, "%g tokens: %g s, measured %g", v[0], sec, v[l->ncols - 1]);
        at_points++;
        /* halfway to the next measured count: the law times the two ratios' mean */
        const double *nx = NULL;
        for (int j = 0; j < l->npts; j++) {
            const double *u = l->pts + (size_t)j * l->ncols;
            if (u[MOE_COL_N] == v[MOE_COL_N] && u[MOE_COL_K] == v[MOE_COL_K] && u[MOE_COL_SKEW] == v[MOE_COL_SKEW] &&
                u[0] > v[0] && (!nx || u[0] < nx[0]))
                nx = u;
        }
        if (!nx || (long)(nx[0] - v[0]) % 2) continue;
        double mid[PROF_MAX_COLS], f[PROF_MAX_COEF], fv[PROF_MAX_COEF], fn[PROF_MAX_COEF];
        memcpy(mid, v, sizeof(double) * (size_t)l->ncols);
        mid[0] = (v[0] + nx[0]) / 2;
        int one = 1;
        for (int j = 0; j < l->npts && one; j++) {    /* only where the midpoint was not measured */
            const double *u = l->pts + (size_t)j * l->ncols;
            one = !(u[0] == mid[0] && u[MOE_COL_N] == v[MOE_COL_N] && u[MOE_COL_K] == v[MOE_COL_K] && u[MOE_COL_SKEW] == v[MOE_COL_SKEW]);
        }
        if (!one) continue;
        ck_assert_int_eq(cost_point_features(l->name, mid, &q, &r, &hw, f), 0);
        ck_assert_int_eq(cost_point_features(l->name, v, &q, &r, &hw, fv), 0);
        ck_assert_int_eq(cost_point_features(l->name, nx, &q, &r, &hw, fn), 0);
        double want = prof_eval(l, f) * (v[l->ncols - 1] / prof_eval(l, fv) + nx[l->ncols - 1] / prof_eval(l, fn)) / 2;
        it.tokens = mid[0];
        ck_assert_int_eq(cost_profile_item(cm, &it, &sec, &grid), 0);
        ck_assert_msg(fabs(sec / want - 1) < 1e-9, "%g tokens: %g s, want %g", mid[0], sec, want);
    }
    ck_assert_int_ge(at_points, 16);
    /* an expert shape calib did not measure: the law, not a point */
    cost_item_t other = { .kind = CI_GEMM, .moe = 2, .experts = 1, .count = 1, .m = 1, .n = 4096, .k = 4096, .wb = 2,
                          .tokens = 4, .part = CP_LINEAR };
    double sec;
    int grid;
    ck_assert_int_eq(cost_profile_item(cm, &other, &sec, &grid), 0);
    ck_assert_int_eq(grid, 0);
    ck_assert(sec > 0);
    cost_free(cm);
    prof_free(&p);
}
END_TEST

/* Points that record their shape price only items of that shape: one decode law measured at
 * the reference heads (2x the law) and at 32 q / 8 kv heads, head_dim 128 (3x) prices each
 * model's call from its own points, and a model of a third shape by the law. */
START_TEST(grid_keys_points_by_shape)
{
    model_t m2 = M, m3 = M;
    m2.n_q_heads = 32, m2.n_kv_heads = 8, m2.head_dim = 128;
    m3.n_q_heads = 16, m3.n_kv_heads = 8, m3.head_dim = 64;
    const model_t *ms[] = { &M, &m2, &m3 };
    model_rank_t rk[3];
    for (int i = 0; i < 3; i++) ck_assert_int_eq(model_rank(ms[i], 1, &rk[i]), 0);
    profile_t p;
    synthetic(&p, 0);
    p.sms = 132;
    cost_hw_t hw = { .sms = 132 };
    static const char *const names[] = { "attn.decode_xqa.fp16", "attn.decode_scalar.fp16" };
    for (int k = 0; k < 2; k++) {
        prof_law_t l = *prof_find(&p, names[k]);
        prof_law_init(&l, law_find(names[k]));
        for (int c = 0; c < l.ncoef; c++) l.coef[c] = prof_find(&p, names[k])->coef[c];
        double pts[2 * 2 * 9];
        int n = 0;
        for (int s = 0; s < 2; s++)
            for (long L = 1024; L <= 4096; L *= 4) {
                double *row = pts + 9 * n++, f[PROF_MAX_COEF];
                row[0] = 1, row[1] = 1, row[2] = (double)L, row[3] = 784;
                row[4] = rk[s].q_heads, row[5] = rk[s].kv_heads, row[6] = ms[s]->head_dim, row[7] = 0;
                ck_assert_int_eq(cost_point_features_n(l.name, row, 9, &M, &rk[0], &hw, f), 0);
                row[8] = prof_eval(&l, f) * (s ? 3 : 2);
            }
        l.npts = n;
        l.pts = pts;
        ck_assert_int_eq(prof_put(&p, &l), 0);
    }
    for (int s = 0; s < 3; s++) {
        char err[COST_ERR_MAX];
        cost_model_t *cm = cost_profile_new(&p, ms[s], 1, err);
        ck_assert_msg(cm != NULL, "%s", err);
        route_cfg_t rc = { .smallq_max_q = 16, .page = 784, .group = rk[s].group, .fp8_bridge_page = 784 };
        kseg_t row = { 0, 1, 1024 };
        route_plan_t plan;
        route_plan_init(&plan);
        ck_assert_int_eq(route_step(&rc, &row, 1, &plan), 0);
        cost_item_t it = { .kind = CI_ATTN, .call = &plan.calls[0], .count = 1, .part = CP_ATTN };
        double t, f[PROF_MAX_COEF];
        int grid;
        ck_assert_int_eq(cost_profile_item(cm, &it, &t, &grid), 0);
        ck_assert_int_eq(cost_item_features(&it, ms[s], &rk[s], &hw, f), 0);
        const prof_law_t *l = prof_find(&p, cost_item_law(&it, (char[64]){ 0 }, 64));
        ck_assert_int_eq(grid, s < 2);
        ck_assert_double_eq_tol(t, (s == 0 ? 2 : s == 1 ? 3 : 1) * prof_eval(l, f), 1e-12 * t);
        route_plan_free(&plan);
        cost_free(cm);
    }
    prof_free(&p);
}
END_TEST

/* elementwise law of the synthetic profile with measured points (tokens, t_s), warm or cold */
static void elem_points(profile_t *p, const char *name, const double *pts, int n)
{
    prof_law_t l;
    prof_law_init(&l, law_find(name));
    const prof_law_t *w = prof_find(p, "elementwise");
    for (int c = 0; c < l.ncoef; c++) l.coef[c] = w ? w->coef[c] : 0;
    if (!w) l.coef[0] = 2e-6;
    l.fit_median_rel = l.fit_max_rel = -1;
    l.npts = n;
    l.pts = (double *)pts;
    ck_assert_int_eq(prof_put(p, &l), 0);
}

static double decode_1_elem(const profile_t *p, const char *what)
{
    char err[COST_ERR_MAX];
    cost_model_t *cm = cost_profile_new(p, &M, 1, err);
    ck_assert_msg(cm != NULL, "%s: %s", what, err);
    model_rank_t r;
    model_rank(&M, 1, &r);
    route_cfg_t rc = { .smallq_max_q = 16, .page = 784, .group = r.group, .fp8_bridge_page = 784 };
    route_plan_t plan;
    route_plan_init(&plan);
    kseg_t rows[1] = { { 0, 1, 4096 } };
    ck_assert_int_eq(route_step(&rc, rows, 1, &plan), 0);
    cost_step_t in = { &plan, NULL, 1, 1, 1, 1, 0, 0, 0, 0 };
    cost_breakdown_t o;
    ck_assert_int_eq(cm->step(cm, &in, &o), 0);
    route_plan_free(&plan);
    cost_free(cm);
    return o.elementwise;
}

static double elem_item(const profile_t *p, double tokens)
{
    char err[COST_ERR_MAX];
    cost_model_t *cm = cost_profile_new(p, &M, 1, err);
    ck_assert_msg(cm != NULL, "%s", err);
    cost_item_t it = { .kind = CI_ELEM, .tokens = tokens, .count = 1, .part = CP_ELEM };
    double t;
    int grid;
    ck_assert_int_eq(cost_profile_item(cm, &it, &t, &grid), 0);
    cost_free(cm);
    return t;
}

START_TEST(elementwise_cold_points)
{
    /* warm points at 1-128 tokens; a profile without elementwise.cold prices a one-token decode
     * step's elementwise at the warm point (as before), one with it at the cold point, every layer */
    static const double warm[] = { 1, 10e-6, 2, 11e-6, 4, 12e-6, 8, 14e-6, 64, 30e-6, 128, 50e-6, 256, 90e-6 };
    static const double cold[] = { 1, 13e-6, 4, 15e-6, 8, 14e-6, 64, 33e-6 };
    profile_t p;
    synthetic(&p, 0);
    elem_points(&p, "elementwise", warm, 7);
    ck_assert_double_eq_tol(decode_1_elem(&p, "warm"), M.n_layers * 10e-6, 1e-15);
    double w3 = elem_item(&p, 3), w96 = elem_item(&p, 96), w128 = elem_item(&p, 128);
    ck_assert_double_eq_tol(w3, 11.5e-6, 1e-15);         /* the warm grid between its points */
    elem_points(&p, "elementwise.cold", cold, 4);
    ck_assert_double_eq_tol(decode_1_elem(&p, "cold"), M.n_layers * 13e-6, 1e-15);
    /* measured counts price at their cold points; between, the warm price by the ratios' blend */
    ck_assert_double_eq_tol(elem_item(&p, 4), 15e-6, 1e-15);
    ck_assert_double_eq_tol(elem_item(&p, 64), 33e-6, 1e-15);
    double r1 = 13.0 / 10, r4 = 15.0 / 12;
    ck_assert_double_eq_tol(elem_item(&p, 3), w3 * (r1 + (r4 - r1) * (3 - 1) / 3.0), 1e-15);
    /* 8 tokens timed cold as warm: ratio 1 */
    ck_assert_double_eq_tol(elem_item(&p, 8), 14e-6, 1e-15);
    /* past the last cold point the ratio falls to 1 at twice its count */
    double r64 = 33.0 / 30;
    ck_assert_double_eq_tol(elem_item(&p, 96), w96 * (r64 + (1 - r64) * 0.5), 1e-15);
    ck_assert_double_eq_tol(elem_item(&p, 128), w128, 1e-15);
    ck_assert_double_eq_tol(elem_item(&p, 256), 90e-6, 1e-15);
    prof_free(&p);
    /* a cold point timed under its warm one counts as the warm (ratio 1), not a discount */
    static const double under[] = { 1, 9e-6 };
    synthetic(&p, 0);
    elem_points(&p, "elementwise", warm, 7);
    elem_points(&p, "elementwise.cold", under, 1);
    ck_assert_double_eq_tol(decode_1_elem(&p, "under"), M.n_layers * 10e-6, 1e-15);
    prof_free(&p);
    /* cold points without a warm elementwise law: elementwise stays optional (priced at 0) */
    synthetic(&p, 0);
    for (int i = 0; i < p.nlaws; i++)
        if (!strcmp(p.laws[i].name, "elementwise")) snprintf(p.laws[i].name, sizeof p.laws[i].name, "gdn.unused");
    elem_points(&p, "elementwise.cold", cold, 4);
    ck_assert_double_eq_tol(decode_1_elem(&p, "no warm law"), 0, 1e-15);
    prof_free(&p);
}
END_TEST

int main(void)
{
    const check_test_t tests[] = {
        CHECK_TEST(decode_step_adds_up), CHECK_TEST(mixed_step_pays_the_q1_walk),
        CHECK_TEST(host_terms_and_draft_rows), CHECK_TEST(fork_laws_fall_back),
        CHECK_TEST(decode_laws_the_gates_need),
        CHECK_TEST(missing_laws_are_errors), CHECK_TEST(grid_leave_one_out),
        CHECK_TEST(measured_grid_prices_chunks_by_waves),
        CHECK_TEST(decode_pack_takes_requests_of_under_two_waves),
        CHECK_TEST(decode_mixture_pays_one_reduce),
        CHECK_TEST(decode_past_its_page_points_follows_another_page),
        CHECK_TEST(measured_grid_prices_split_chunks_by_busiest_sm),
        CHECK_TEST(features_of_items_match_points), CHECK_TEST(roofline_pair_prices_the_larger),
        CHECK_TEST(gemm_prices_by_nearest_choice), CHECK_TEST(prefill_queue_tiles),
        CHECK_TEST(prefill_split_parts), CHECK_TEST(decode_mixture_is_its_parts_one_launch),
        CHECK_TEST(prefill_tiles_by_periods), CHECK_TEST(grid_of_many_points),
        CHECK_TEST(grid_loo_is_finite_within_bounds), CHECK_TEST(decode_pack_is_one_launch), CHECK_TEST(decode_pack_meets_measured_rows),
        CHECK_TEST(decode_spread_call_meets_spread_points),
        CHECK_TEST(envelope_warns_outside), CHECK_TEST(features_scale_with_head_dim), CHECK_TEST(moe_row_tiles), CHECK_TEST(moe_priced_by_points), CHECK_TEST(gemm_between_kernels),
        CHECK_TEST(grid_keys_points_by_shape), CHECK_TEST(elementwise_cold_points)};
    return check_main("cost", "profile", tests, CHECK_N(tests), 0, setup);
}
