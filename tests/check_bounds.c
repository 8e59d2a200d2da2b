/* check_bounds: extrapolation bounded by physics (cost_profile.c): every measured point of the
 * shipped profiles lies above its roofline floor (so the floor cannot move in-envelope prices);
 * an in-envelope step prices the same with and without the bounds; the issue's example (Qwen3-
 * 30B-A3B on the H200 profile, 256 decode rows of ~2K tokens) is priced between its floor and
 * what its law's measured points allow; the cap binds on a law made wild; the engine's debug
 * invariant holds on every item. */
#include <check.h>
#include "check_run.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cost.h"
#include "hwcat.h"
#include "law.h"
#include "profile.h"
#include "route.h"
#include "scenario.h"

static profile_t load_prof(const char *path)
{
    profile_t p;
    char err[PROF_ERR_MAX];
    ck_assert_msg(prof_load(path, &p, err) == 0, "%s", err);
    return p;
}

static model_t load_model(const char *path)
{
    model_t m;
    char err[SCN_ERR_MAX];
    ck_assert_msg(scn_load_model(path, &m, err) == 0, "%s", err);
    return m;
}

/* Every attention and GEMM point of the shipped profiles took at least its roofline floor at
 * the card's datasheet peaks (written out here: KV read once, 4 q_heads q (L - q/2) D FLOPs; a
 * GEMM's weights once, 2mnk FLOPs). */
START_TEST(measured_points_above_floor)
{
    static const char *const profs[] = { "calib/profiles/h200.yaml", "calib/profiles/v100-pcie-32gb-tp2.yaml" };
    profile_t p = load_prof(profs[_i]);
    const hw_gpu_t *g = hw_gpu_match(p.gpu);
    ck_assert_ptr_nonnull(g);
    int checked = 0;
    for (int li = 0; li < p.nlaws; li++) {
        const prof_law_t *l = &p.laws[li];
        const law_form_t *f = law_find(l->name);
        if (!f) continue;
        for (int i = 0; i < l->npts; i++) {
            const double *row = l->pts + (size_t)i * l->ncols;
            double t = row[l->ncols - 1], fl, by;
            if (f->family == LF_GEMM) {
                double m = row[GEMM_COL_M], n = row[GEMM_COL_N], k = row[GEMM_COL_K], wb = row[GEMM_COL_WB];
                fl = 2 * m * n * k;
                by = n * k * wb;
            } else if ((f->family == LF_PREFILL || f->family == LF_DECODE_XQA || f->family == LF_DECODE_SCALAR) &&
                       l->ncols > ATTN_COL_HEAD_DIM + 1) {
                double r = row[ATTN_COL_ROWS], q = row[ATTN_COL_Q], L = row[ATTN_COL_SEQ_LEN];
                double qh = row[ATTN_COL_Q_HEADS], kvh = row[ATTN_COL_KV_HEADS], D = row[ATTN_COL_HEAD_DIM];
                fl = r * 4 * qh * q * (L - q / 2) * D;
                by = r * 2 * L * kvh * D * (strstr(l->name, ".fp8") ? 1 : 2);
            } else {
                continue;
            }
            double pf = f->family == LF_GEMM && row[GEMM_COL_WB] <= 1 && g->fp8_flops > 0 ? g->fp8_flops : g->fp16_flops;
            double floor_s = fmax(fl / pf, by / g->mem_bw);
            ck_assert_msg(t >= floor_s, "%s: %s point %d took %.4g s under its floor %.4g s", profs[_i], l->name, i, t,
                          floor_s);
            checked++;
        }
    }
    if (!strstr(profs[_i], "v100")) ck_assert_int_gt(checked, 1000);
    prof_free(&p);
}
END_TEST

typedef struct {
    cost_model_t *cm;
    double raw, bounded, floor_s;   /* attention items */
    double raw_all, bounded_all;
    double moe_raw, moe_bounded, moe_floor;   /* the routed experts' grouped GEMMs */
    int items;
} tally_t;

static int tally(void *vctx, const cost_item_t *it)
{
    tally_t *t = vctx;
    double a, b;
    int g;
    cost_profile_set_bounds(t->cm, 0);
    ck_assert_int_eq(cost_profile_item(t->cm, it, &a, &g), 0);
    cost_profile_set_bounds(t->cm, 1);
    ck_assert_int_eq(cost_profile_item(t->cm, it, &b, &g), 0);
    double f = cost_profile_item_floor(t->cm, it);
    ck_assert_msg(b >= f * (1 - 1e-12), "item priced %.4g under its floor %.4g", b, f);
    if (it->kind == CI_ATTN) {
        t->raw += a;
        t->bounded += b;
        t->floor_s += f;
    }
    if (it->kind == CI_GEMM && it->moe == 2) {
        t->moe_raw += a;
        t->moe_bounded += b;
        t->moe_floor += f;
    }
    t->raw_all += a;
    t->bounded_all += b;
    t->items++;
    return 0;
}

/* n rows of (q, L), one request each, routed and priced item by item with and without bounds. */
static tally_t price_rows_scaled(const char *prof, const char *model, int n, int q, long L, int varlen,
                                const char *law, double scale)
{
    static profile_t p;
    static model_t m;
    p = load_prof(prof);
    if (law) {
        prof_law_t *l = (prof_law_t *)prof_find(&p, law);
        ck_assert_ptr_nonnull(l);
        for (int i = 0; i < l->ncoef; i++) l->coef[i] *= scale;
    }
    m = load_model(model);
    model_rank_t r;
    ck_assert_int_eq(model_rank(&m, 1, &r), 0);
    char err[COST_ERR_MAX];
    cost_model_t *cm = cost_profile_new(&p, &m, 1, err);
    ck_assert_msg(cm, "%s", err);
    kseg_t *rows = calloc((size_t)n, sizeof *rows);
    for (int k = 0; k < n; k++) rows[k] = (kseg_t){ .req = k, .q = q, .seq_len = L };
    route_cfg_t cfg = { .smallq_max_q = 16, .page = 16, .kv_dtype = KV_FP16, .group = r.group,
                        .fp8_bridge_page = ROUTE_NATIVE_PAGE, .varlen = varlen };
    route_plan_t plan;
    route_plan_init(&plan);
    ck_assert_int_eq(route_step(&cfg, rows, n, &plan), 0);
    cost_step_t in = { .plan = &plan, .tokens = (long)n * q, .rows = n, .decode_rows = q == 1 ? n : 0, .sampled = n };
    tally_t t = { .cm = cm };
    ck_assert_int_eq(cost_enumerate(&m, &r, &in, tally, &t), 0);
    char ferr[256];
    ck_assert_msg(cost_floor_check(cm, &in, ferr, sizeof ferr) == 0, "%s", ferr);
    cost_free(cm);
    route_plan_free(&plan);
    free(rows);
    prof_free(&p);
    return t;
}

static tally_t price_rows(const char *prof, const char *model, int n, int q, long L, int varlen)
{
    return price_rows_scaled(prof, model, n, q, L, varlen, NULL, 1);
}

/* The issue's example: Qwen3-30B-A3B (its attention shape outside the H200 profile's
 * envelope), 256 decode rows of 2,000 tokens (512K KV tokens), on the fork's kernels and on
 * varlen: the attention priced at or above its HBM floor (512K tokens x 48 layers x 2 KiB /
 * 4.8 TB/s = 10.5 ms) and not above the unbounded extrapolation. */
START_TEST(issue_example_bounded)
{
    double floor_want = 256.0 * 2000 * 48 * (2 * 4 * 128 * 2) / 4.8e12;
    for (int varlen = 0; varlen < 2; varlen++) {
        tally_t t = price_rows("calib/profiles/h200.yaml", "models/qwen3-30b-a3b.yaml", 256, 1, 2000, varlen);
        ck_assert_msg(fabs(t.floor_s / floor_want - 1) < 1e-9, "floor %.4g, want %.4g", t.floor_s, floor_want);
        ck_assert(t.bounded >= t.floor_s && t.bounded <= t.raw * (1 + 1e-12));
        ck_assert(t.bounded_all <= t.raw_all * (1 + 1e-12));
    }
}
END_TEST

/* The cap: Qwen3-30B-A3B's expert GEMMs are a shape the H200 profile did not measure (the law
 * prices them); with that law made 1000x dearer, the bounded price is what the law's measured
 * points allow: at most twice the largest of their times, scaled up to the item's floor where
 * the item is the larger (a looser bound than the nearest points', computed here from all). */
START_TEST(cap_binds)
{
    profile_t p = load_prof("calib/profiles/h200.yaml");
    const prof_law_t *l = prof_find(&p, "gemm.moe.fp16");
    ck_assert_ptr_nonnull(l);
    tally_t t = price_rows_scaled("calib/profiles/h200.yaml", "models/qwen3-30b-a3b.yaml", 256, 1, 2000, 1, "gemm.moe.fp16",
                                  1000);
    ck_assert(t.moe_raw > 0 && t.moe_bounded < 0.05 * t.moe_raw);
    ck_assert(t.moe_bounded >= t.moe_floor);
    /* per layer: the two grouped GEMMs (up, down) of 256 tokens x 8 experts; 48 layers */
    model_t m = load_model("models/qwen3-30b-a3b.yaml");
    double bound = 0;
    for (int up = 0; up < 2; up++) {
        double n = up ? 2.0 * m.moe_inter : m.hidden, k = up ? m.hidden : m.moe_inter;
        double f = fmax(2.0 * 256 * 8 * n * k / 989.5e12, 8 * n * k * 2 / 4.8e12), most = 0;
        for (int i = 0; i < l->npts; i++) {
            const double *row = l->pts + (size_t)i * l->ncols;
            double pf = fmax(2.0 * row[MOE_COL_TOKENS] * row[MOE_COL_TOPK] * row[MOE_COL_N] * row[MOE_COL_K] / 989.5e12,
                             row[MOE_COL_TOPK] * row[MOE_COL_N] * row[MOE_COL_K] * 2 / 4.8e12);
            most = fmax(most, row[l->ncols - 1] * fmax(1, f / pf));
        }
        bound += 2 * most * m.n_moe;
    }
    ck_assert_msg(t.moe_bounded <= bound * (1 + 1e-9), "capped %.4g past the points' bound %.4g", t.moe_bounded, bound);
    prof_free(&p);
}
END_TEST

/* The reference model on its own profile, inside the measured envelope: the bounds move nothing. */
START_TEST(in_envelope_unmoved)
{
    static const struct { int n, q; long L; } S[] = { { 8, 1, 16384 }, { 1, 2048, 16384 }, { 32, 1, 4096 }, { 4, 5, 8192 } };
    tally_t t = price_rows("calib/profiles/h200.yaml", "models/qwen3.8-27b-fp16.yaml", S[_i].n, S[_i].q, S[_i].L, 0);
    ck_assert_msg(t.bounded_all == t.raw_all, "%.17g vs %.17g", t.bounded_all, t.raw_all);
    ck_assert_int_gt(t.items, 5);
}
END_TEST

int main(void)
{
    const check_test_t tests[] = { CHECK_LOOP(measured_points_above_floor, 2), CHECK_TEST(issue_example_bounded), CHECK_TEST(cap_binds),
                                   CHECK_LOOP(in_envelope_unmoved, 4) };
    return check_main("bounds", "physics", tests, CHECK_N(tests), 0, NULL);
}
