/* check_fit: the least-squares fitter (sim/fit.c) -- known coefficients recovered from
 * synthetic points with and without noise, the non-negative active set, and a fitted
 * profile's round trip through prof_save / prof_load.  Run from the repository root. */
#include <check.h>
#include "check_run.h"
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <gsl/gsl_errno.h>

#include "cost.h"
#include "fit.h"
#include "profile.h"
#include "scenario.h"

/* ---- helpers ------------------------------------------------------------------ */

static uint64_t rng_state;
static double urand(void) /* [0, 1) */
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) * (1.0 / 9007199254740992.0);
}
static double nrand(void) /* ~N(0,1): sum of 12 uniforms */
{
    double s = 0;
    for (int i = 0; i < 12; i++)
        s += urand();
    return s - 6;
}

static model_t ref_model;
static model_rank_t ref_rank;
/* an H200-like GPU: waves and the GEMM roofline need its SMs and ceilings */
static const cost_hw_t ref_hw = { .sms = 132, .flops = 7.5e14, .bw = 4.2e12 };

static void load_model(void)
{
    char err[SCN_ERR_MAX];
    gsl_set_error_handler_off();
    ck_assert_msg(scn_load_model("models/qwen3.8-27b.yaml", &ref_model, err) == 0, "%s", err);
    ck_assert_int_eq(model_rank(&ref_model, 1, &ref_rank), 0);
}

/* ---- fit_linear ---------------------------------------------------------------- */

START_TEST(linear_exact)
{
    /* y = 3 + 2 x1 - 0.5 x2, x2 spanning 1e9 (scaling must not matter) */
    enum { N = 20, P = 3 };
    double X[N * P], y[N], c[P], chi;
    rng_state = 1;
    for (int i = 0; i < N; i++) {
        X[i * P] = 1;
        X[i * P + 1] = urand() * 10;
        X[i * P + 2] = urand() * 1e9;
        y[i] = 3 + 2 * X[i * P + 1] - 0.5e-9 * X[i * P + 2];
    }
    ck_assert_int_eq(fit_linear(X, y, NULL, N, P, c, &chi), 0);
    ck_assert_double_eq_tol(c[0], 3, 1e-9);
    ck_assert_double_eq_tol(c[1], 2, 1e-9);
    ck_assert_double_eq_tol(c[2] * 1e9, -0.5, 1e-9);
    ck_assert(chi < 1e-15);
}
END_TEST

START_TEST(linear_weighted_noise)
{
    /* relative noise of 1%, weights 1/y^2: coefficients within a few percent */
    enum { N = 400, P = 3 };
    static double X[N * P], y[N], w[N];
    double c[P], truth[P] = { 1e-5, 3e-12, 4e-10 };
    rng_state = 7;
    for (int i = 0; i < N; i++) {
        X[i * P] = 1;
        X[i * P + 1] = pow(10, 6 + 6 * urand());
        X[i * P + 2] = pow(10, 3 + 6 * urand());
        double t = truth[0] + truth[1] * X[i * P + 1] + truth[2] * X[i * P + 2];
        y[i] = t * (1 + 0.01 * nrand());
        w[i] = 1 / (y[i] * y[i]);
    }
    ck_assert_int_eq(fit_linear(X, y, w, N, P, c, NULL), 0);
    for (int j = 0; j < P; j++)
        ck_assert_msg(fabs(c[j] / truth[j] - 1) < 0.05, "coef %d: %g vs %g", j, c[j], truth[j]);
}
END_TEST

START_TEST(linear_zero_column)
{
    enum { N = 6, P = 3 };
    double X[N * P], y[N], c[P];
    for (int i = 0; i < N; i++) {
        X[i * P] = 1;
        X[i * P + 1] = 0; /* never nonzero: coefficient 0, left out of the solve */
        X[i * P + 2] = i + 1;
        y[i] = 1 + 2 * (i + 1);
    }
    ck_assert_int_eq(fit_linear(X, y, NULL, N, P, c, NULL), 0);
    ck_assert_double_eq(c[1], 0);
    ck_assert_double_eq_tol(c[0], 1, 1e-9);
    ck_assert_double_eq_tol(c[2], 2, 1e-9);
}
END_TEST

START_TEST(linear_bad_args)
{
    double X[4] = { 1, 2, 3, 4 }, y[2] = { 1, 2 }, c[2];
    ck_assert_int_eq(fit_linear(X, y, NULL, 0, 2, c, NULL), -1);
    ck_assert_int_eq(fit_linear(X, y, NULL, 2, 0, c, NULL), -1);
    ck_assert_int_eq(fit_linear_nonneg(X, y, NULL, 2, 17, c, NULL), -1);
}
END_TEST

START_TEST(nonneg_drops_negative)
{
    /* y = 5 + 1 x1 exactly, plus a feature x2 that the unconstrained fit would give a
     * negative weight (x2 anti-correlated with the residual of an intercept-free model) */
    enum { N = 30, P = 3 };
    double X[N * P], y[N], c[P], cu[P];
    rng_state = 3;
    for (int i = 0; i < N; i++) {
        double x1 = 1 + 9 * urand();
        X[i * P] = 1;
        X[i * P + 1] = x1;
        X[i * P + 2] = x1 * x1;
        y[i] = 5 + x1 - 0.02 * x1 * x1;
    }
    ck_assert_int_eq(fit_linear(X, y, NULL, N, P, cu, NULL), 0);
    ck_assert(cu[2] < 0);
    ck_assert_int_eq(fit_linear_nonneg(X, y, NULL, N, P, c, NULL), 0);
    for (int j = 0; j < P; j++)
        ck_assert_msg(c[j] >= 0, "coef %d = %g", j, c[j]);
    ck_assert_double_eq(c[2], 0);
    ck_assert(c[0] > 0 && c[1] > 0);
}
END_TEST

START_TEST(nonneg_all_positive_unchanged)
{
    enum { N = 10, P = 2 };
    double X[N * P], y[N], a[P], b[P];
    for (int i = 0; i < N; i++) {
        X[i * P] = 1;
        X[i * P + 1] = i;
        y[i] = 2 + 0.5 * i;
    }
    ck_assert_int_eq(fit_linear(X, y, NULL, N, P, a, NULL), 0);
    ck_assert_int_eq(fit_linear_nonneg(X, y, NULL, N, P, b, NULL), 0);
    ck_assert_double_eq_tol(a[0], b[0], 1e-12);
    ck_assert_double_eq_tol(a[1], b[1], 1e-12);
}
END_TEST

/* ---- fit_law: one case per law family ---------------------------------------------- */

typedef struct {
    const char *law;
    int ncols;
    double coef[PROF_MAX_COEF];
} law_case_t;

/* every feature of every family carries weight somewhere; the roofline pairs (bridge 2/3,
 * gdn 5/6) are each the larger term on part of the grid */
static const law_case_t law_cases[] = {
    { "attn.prefill_bm32.fp16", 5, { 8e-6, 1.5e-9, 4e-8, 2e-9, 3e-8 } },
    { "attn.prefill_generic.fp16", 5, { 6e-6, 3e-9, 9e-8, 1e-9, 5e-8 } },
    { "attn.decode_xqa.fp16", 5, { 1e-5, 2e-11, 1e-8, 5e-9, 1e-11, 3e-8, 5e-8, 1e-8, 2e-8 } },
    { "attn.decode_scalar.fp8", 5, { 7e-6, 1e-11, 2e-8, 3e-9, 2e-11, 3e-8, 2e-7, 4e-9 } },
    { "attn.fp8_bridge", 5, { 4e-6, 5e-11, 5e-8, 2e-10 } },
    { "gemm", 8, { 6e-6, 1.4e-15, 2.6e-13, 0.3, 2e-6, 0.4, 7e-13, 1.5e-14, 0.2 } },
    { "gdn", 3, { 1.2e-5, 1e-8, 4e-6, 2e-6, 3e-6, 5e-7, 4e-7 } },
    { "elementwise", 2, { 3e-6, 2e-8, 2e-6, 1e-6, 3e-6 } },
};

/* The known law's value on a feature vector (prof_eval: its roofline pair a max). */
static double known(const law_case_t *lc, const double *feat)
{
    prof_law_t l;
    memset(&l, 0, sizeof l);
    snprintf(l.name, sizeof l.name, "%s", lc->law);
    l.ncoef = cost_law_ncoef(lc->law);
    memcpy(l.coef, lc->coef, sizeof l.coef);
    return prof_eval(&l, feat);
}

/* Points over a grid that spans each law's features; t from the known coefficients. */
static int make_points(const law_case_t *lc, double *pts, int cap)
{
    int n = 0;
    const double ctx[] = { 1024, 3000, 9000, 30000, 90000, 262144 };
    if (!strcmp(lc->law, "attn.fp8_bridge")) {
        /* prefixes shorter than one 784-token page too: the page walk's slope */
        const double bctx[] = { 100, 300, 700, 1024, 3000, 9000, 30000, 90000, 180000, 262144 };
        for (int c = 0; c < 10 && n < cap; c++, n++) {
            double *p = pts + (size_t)n * lc->ncols;
            p[0] = 1;
            p[1] = 1;
            p[2] = bctx[c];
            p[3] = 1568;
        }
    } else if (!strncmp(lc->law, "attn.", 5)) {
        const int qs_pf[] = { 1, 64, 784, 1568, 2048 }, qs_dec[] = { 1, 5, 16 }, rows[] = { 1, 4, 16 };
        int dec = strstr(lc->law, "decode") != NULL;
        for (int a = 0; a < (dec ? 3 : 5); a++)
            for (int r = 0; r < (dec ? 3 : 1); r++)
                for (int c = 0; c < 6 && n < cap; c++) {
                    int q = dec ? qs_dec[a] : qs_pf[a];
                    double *p = pts + (size_t)n * lc->ncols;
                    p[0] = rows[r];
                    p[1] = q;
                    p[2] = ctx[c] > q ? ctx[c] : q;
                    p[3] = 784;
                    n++;
                }
    } else if (!strcmp(lc->law, "gemm")) {
        const double shapes[][2] = { { 14336, 5120 }, { 5120, 6144 }, { 34816, 5120 }, { 248320, 5120 } };
        for (int s = 0; s < 4; s++)
            for (double mm = 1; mm <= 4096 && n < cap; mm *= 2) {
                double *p = pts + (size_t)n * lc->ncols;
                p[0] = mm;
                p[1] = shapes[s][0];
                p[2] = shapes[s][1];
                p[3] = 2;
                /* a stand-in for cuBLAS's pick (tile_n, tile_m, splits), not monotone in m:
                 * narrow k-split tiles for small m on the narrow shape, wider ones after */
                p[4] = shapes[s][0] > 30000 ? 256 : 128;
                p[5] = mm <= 16 ? 16 : mm <= 64 ? 64 : mm <= 256 ? 96 : 128;
                p[6] = shapes[s][0] == 5120 && mm <= 64 ? (mm <= 8 ? 3 : 2) : 1;
                n++;
            }
    } else if (!strcmp(lc->law, "gdn")) {
        for (int s = 1; s <= 64; s *= 2)
            for (double tk = 1; tk <= 2048 && n < cap; tk *= 2) {
                double *p = pts + (size_t)n * lc->ncols;
                p[0] = tk + s - 1;
                p[1] = s;
                n++;
            }
    } else {
        for (double tk = 1; tk <= 4096 && n < cap; tk *= 2) {
            pts[(size_t)n * lc->ncols] = tk;
            n++;
        }
    }
    for (int i = 0; i < n; i++) {
        double feat[PROF_MAX_COEF], *p = pts + (size_t)i * lc->ncols;
        ck_assert_int_eq(cost_point_features_n(lc->law, p, lc->ncols, &ref_model, &ref_rank, &ref_hw, feat), 0);
        p[lc->ncols - 1] = known(lc, feat);
    }
    return n;
}

static void init_law(prof_law_t *l, const law_case_t *lc, double *pts, int n)
{
    static const char *acols[] = { "rows", "q", "seq_len", "page", "t_s" };
    static const char *gcols[] = { "m", "n", "k", "wb", "tile_n", "tile_m", "splits", "t_s" };
    static const char *dcols[] = { "tokens", "seqs", "t_s" };
    static const char *ecols[] = { "tokens", "t_s" };
    const char **cols = !strncmp(lc->law, "attn.", 5) ? acols : !strcmp(lc->law, "gemm") ? gcols
                      : !strcmp(lc->law, "gdn") ? dcols : ecols;
    memset(l, 0, sizeof *l);
    snprintf(l->name, sizeof l->name, "%s", lc->law);
    l->ncols = lc->ncols;
    for (int c = 0; c < lc->ncols; c++)
        snprintf(l->cols[c], sizeof l->cols[c], "%s", cols[c]);
    l->npts = n;
    l->pts = pts;
    l->fit_median_rel = l->fit_max_rel = -1;
}

/* max relative difference of law l's predictions from the known law on its points */
static double pred_err(const prof_law_t *l, const law_case_t *lc)
{
    double mx = 0;
    for (int i = 0; i < l->npts; i++) {
        double feat[PROF_MAX_COEF];
        cost_point_features_n(lc->law, l->pts + (size_t)i * l->ncols, l->ncols, &ref_model, &ref_rank, &ref_hw, feat);
        double a = prof_eval(l, feat), b = known(lc, feat);
        mx = fmax(mx, fabs(a - b) / b);
    }
    return mx;
}

START_TEST(law_exact)
{
    const law_case_t *lc = &law_cases[_i];
    static double pts[512 * PROF_MAX_COLS];
    prof_law_t l;
    int n = make_points(lc, pts, 512);
    init_law(&l, lc, pts, n);
    ck_assert_int_eq(fit_law_hw(&l, &ref_model, &ref_rank, &ref_hw), 0);
    ck_assert_int_eq(l.ncoef, cost_law_ncoef(lc->law));
    ck_assert_msg(l.fit_max_rel < 1e-6, "%s: max rel %g", lc->law, l.fit_max_rel);
    ck_assert(l.fit_median_rel <= l.fit_max_rel);
    ck_assert_msg(pred_err(&l, lc) < 1e-6, "%s: prediction error %g", lc->law, pred_err(&l, lc));
    for (int j = 0; j < l.ncoef; j++)
        ck_assert_msg(l.coef[j] >= 0, "%s coef %d = %g", lc->law, j, l.coef[j]);
}
END_TEST

START_TEST(law_noisy)
{
    /* 1% multiplicative noise: predictions within 3% of the known law everywhere,
     * and the median residual about the noise level */
    const law_case_t *lc = &law_cases[_i];
    static double pts[512 * PROF_MAX_COLS];
    prof_law_t l;
    int n = make_points(lc, pts, 512);
    rng_state = 11 + (uint64_t)_i;
    for (int i = 0; i < n; i++)
        pts[(size_t)i * lc->ncols + lc->ncols - 1] *= 1 + 0.01 * nrand();
    init_law(&l, lc, pts, n);
    ck_assert_int_eq(fit_law_hw(&l, &ref_model, &ref_rank, &ref_hw), 0);
    ck_assert_msg(l.fit_median_rel < 0.02, "%s: median rel %g", lc->law, l.fit_median_rel);
    ck_assert_msg(l.fit_max_rel < 0.06, "%s: max rel %g", lc->law, l.fit_max_rel);
    ck_assert_msg(pred_err(&l, lc) < 0.03, "%s: prediction error %g", lc->law, pred_err(&l, lc));
}
END_TEST

START_TEST(law_well_posed_coefs)
{
    /* laws whose features are not collinear on the grid give back each coefficient (the
     * roofline pairs' ratio included) */
    static const int idx[] = { 0, 1, 3, 4, 5, 6, 7 }; /* prefill (queue_tiles too), scalar decode, bridge, gemm, gdn, elementwise */
    for (size_t k = 0; k < sizeof idx / sizeof *idx; k++) {
        const law_case_t *lc = &law_cases[idx[k]];
        static double pts[512 * PROF_MAX_COLS];
        prof_law_t l;
        int n = make_points(lc, pts, 512);
        init_law(&l, lc, pts, n);
        ck_assert_int_eq(fit_law_hw(&l, &ref_model, &ref_rank, &ref_hw), 0);
        for (int j = 0; j < l.ncoef; j++)
            ck_assert_msg(lc->coef[j] == 0 ? l.coef[j] == 0 : fabs(l.coef[j] / lc->coef[j] - 1) < 1e-6,
                          "%s coef %d: %g vs %g", lc->law, j, l.coef[j], lc->coef[j]);
    }
    /* fp16 XQA runs one CTA per SM: its wave_tokens and sm_tokens are one feature, and only
     * their sum is determined; every other coefficient comes back */
    const law_case_t *lc = &law_cases[2];
    static double pts[512 * PROF_MAX_COLS];
    prof_law_t l;
    int n = make_points(lc, pts, 512);
    init_law(&l, lc, pts, n);
    ck_assert_int_eq(fit_law_hw(&l, &ref_model, &ref_rank, &ref_hw), 0);
    for (int j = 0; j < l.ncoef; j++)
        if (j != DECODE_WAVE_TOKENS && j != DECODE_SM_TOKENS)
            ck_assert_msg(lc->coef[j] == 0 ? l.coef[j] == 0 : fabs(l.coef[j] / lc->coef[j] - 1) < 1e-6,
                          "%s coef %d: %g vs %g", lc->law, j, l.coef[j], lc->coef[j]);
    ck_assert_double_eq_tol((l.coef[DECODE_WAVE_TOKENS] + l.coef[DECODE_SM_TOKENS]) /
                                (lc->coef[DECODE_WAVE_TOKENS] + lc->coef[DECODE_SM_TOKENS]), 1, 1e-6);
}
END_TEST

/* Points of two head sizes (the facts columns q_heads, kv_heads, head_dim) teach a law what a
 * narrower head keeps of a tile's cost: the narrow coefficients come back; on one head size
 * (law_well_posed_coefs) their features are 0 and so are they. */
START_TEST(law_learns_head_size)
{
    static const struct { const char *law; double coef[PROF_MAX_COEF]; int narrow[2]; } cases[] = {
        { "attn.prefill_generic.fp16", { 6e-6, 3e-9, 9e-8, 1e-9, 5e-8, 1e-9, 3e-8 },
          { PREFILL_TILES_TOTAL_NARROW, PREFILL_TILES_MAX_NARROW } },
        { "attn.decode_scalar.fp16", { 7e-6, 1e-11, 2e-8, 3e-9, 2e-11, 3e-8, 2e-7, 4e-9, 0, 2e-8 },
          { DECODE_WAVE_NARROW, -1 } },
    };
    static const char *cols[] = { "rows", "q", "seq_len", "page", "q_heads", "kv_heads", "head_dim", "t_s" };
    const double shapes[][3] = { { 24, 4, 256 }, { 32, 8, 128 } };
    for (int c = 0; c < 2; c++) {
        int dec = strstr(cases[c].law, "decode") != NULL, n = 0;
        static double pts[512 * 8];
        const int qs_pf[] = { 1, 64, 784, 1568, 2048 }, qs_dec[] = { 1, 5, 16 }, rows[] = { 1, 4, 16, 64 };
        const double ctx[] = { 1024, 3000, 9000, 30000, 90000, 262144 };
        for (int s = 0; s < 2; s++)
            for (int a = 0; a < (dec ? 3 : 5); a++)
                for (int r = 0; r < (dec ? 4 : 1); r++)
                    for (int x = 0; x < 6; x++, n++) {
                        double *p = pts + (size_t)n * 8, feat[PROF_MAX_COEF], t = 0;
                        int q = dec ? qs_dec[a] : qs_pf[a];
                        p[0] = rows[r], p[1] = q, p[2] = ctx[x] > q ? ctx[x] : q, p[3] = 784;
                        p[4] = shapes[s][0], p[5] = shapes[s][1], p[6] = shapes[s][2];
                        ck_assert_int_eq(cost_point_features_n(cases[c].law, p, 8, &ref_model, &ref_rank, &ref_hw, feat), 0);
                        for (int j = 0; j < law_ncoef(cases[c].law); j++) t += cases[c].coef[j] * feat[j];
                        p[7] = t;
                    }
        prof_law_t l;
        memset(&l, 0, sizeof l);
        snprintf(l.name, sizeof l.name, "%s", cases[c].law);
        l.ncols = 8;
        for (int k = 0; k < 8; k++) snprintf(l.cols[k], sizeof l.cols[k], "%s", cols[k]);
        l.npts = n;
        l.pts = pts;
        ck_assert_int_eq(fit_law_hw(&l, &ref_model, &ref_rank, &ref_hw), 0);
        ck_assert_msg(l.fit_max_rel < 1e-6, "%s: max rel %g", l.name, l.fit_max_rel);
        for (int k = 0; k < 2; k++) {
            int j = cases[c].narrow[k];
            if (j >= 0)
                ck_assert_msg(fabs(l.coef[j] / cases[c].coef[j] - 1) < 1e-3, "%s narrow coef %d: %g vs %g", l.name, j,
                              l.coef[j], cases[c].coef[j]);
        }
    }
}
END_TEST

START_TEST(law_residuals)
{
    /* every point with its signed residual, largest |error| first, ties in point order */
    const law_case_t *lc = &law_cases[7]; /* elementwise: one column of tokens */
    static double pts[64 * 2];
    prof_law_t l;
    int n = make_points(lc, pts, 64);
    ck_assert_int_ge(n, 4);
    pts[2 * 1 + 1] *= 1.25;  /* measured 25% above the law: fitted -20% */
    pts[2 * 3 + 1] *= 0.90;  /* measured 10% below: fitted +11.1% */
    init_law(&l, lc, pts, n);
    l.ncoef = cost_law_ncoef(lc->law);
    memcpy(l.coef, lc->coef, sizeof l.coef); /* the known law, not a fit */
    fit_resid_t *res = malloc((size_t)n * sizeof *res);
    ck_assert_ptr_nonnull(res);
    ck_assert_int_eq(fit_law_residuals(&l, &ref_model, &ref_rank, &ref_hw, res), 0);
    ck_assert_int_eq(res[0].index, 1);
    ck_assert_double_eq_tol(res[0].rel, 1 / 1.25 - 1, 1e-12);
    ck_assert_double_eq(res[0].t, pts[2 * 1 + 1]);
    ck_assert_double_eq_tol(res[0].pred, pts[2 * 1 + 1] / 1.25, 1e-18);
    ck_assert_int_eq(res[1].index, 3);
    ck_assert_double_eq_tol(res[1].rel, 1 / 0.9 - 1, 1e-12);
    for (int i = 2; i < n; i++) { /* the rest are exact: point order */
        ck_assert_double_le(fabs(res[i].rel), 1e-12);
        if (i > 2)
            ck_assert_int_gt(res[i].index, res[i - 1].index);
    }
    double med, mx;
    ck_assert_int_eq(fit_law_errors(&l, &ref_model, &ref_rank, &ref_hw, &med, &mx), 0);
    ck_assert_double_eq_tol(mx, fabs(res[0].rel), 1e-15); /* the same errors as the fit table's */
    /* no points, an unknown law, a point without features */
    prof_law_t bad = l;
    bad.npts = 0;
    ck_assert_int_eq(fit_law_residuals(&bad, &ref_model, &ref_rank, &ref_hw, res), -1);
    bad = l;
    snprintf(bad.name, sizeof bad.name, "no_such_law");
    ck_assert_int_eq(fit_law_residuals(&bad, &ref_model, &ref_rank, &ref_hw, res), -1);
    double apt[] = { 0, 5, 100, 784, 1e-3 }; /* rows 0 */
    prof_law_t al;
    law_case_t ac = law_cases[0];
    init_law(&al, &ac, apt, 1);
    al.ncoef = cost_law_ncoef(ac.law);
    ck_assert_int_eq(fit_law_residuals(&al, &ref_model, &ref_rank, &ref_hw, res), -1);
    free(res);
}
END_TEST

START_TEST(law_roof_eval)
{
    /* a roofline pair adds the larger of its two terms; a law without one sums */
    prof_law_t l;
    memset(&l, 0, sizeof l);
    snprintf(l.name, sizeof l.name, "attn.fp8_bridge");
    l.ncoef = 4;
    double c[4] = { 1, 2, 3, 5 }, f[PROF_MAX_COEF] = { 1, 10, 100, 50 };
    memcpy(l.coef, c, sizeof c);
    ck_assert_double_eq(prof_eval(&l, f), 1 + 20 + fmax(300, 250));
    f[BRIDGE_EXPANDED_BW] = 70;
    ck_assert_double_eq(prof_eval(&l, f), 1 + 20 + 350);
    int a, b;
    ck_assert_int_eq(cost_law_roof("attn.fp8_bridge", &a, &b), 1);
    ck_assert(a == BRIDGE_PAGE_WALK && b == BRIDGE_EXPANDED_BW);
    ck_assert_int_eq(cost_law_roof("gdn", &a, &b), 1);
    ck_assert(a == GDN_LONG_ROW && b == GDN_TOKENS_BW);
    ck_assert_int_eq(cost_law_roof("gemm", &a, &b), 0);
    snprintf(l.name, sizeof l.name, "gemm");
    ck_assert_double_eq(prof_eval(&l, f), 1 + 20 + 300 + 350);
    /* a law with fewer coefficients than its pair needs: a plain sum */
    snprintf(l.name, sizeof l.name, "attn.fp8_bridge");
    l.ncoef = 2;
    ck_assert_double_eq(prof_eval(&l, f), 21);
}
END_TEST

START_TEST(bridge_expand_kernel)
{
    /* the bridge's walk follows the expansion kernel the profile names (fp8_expand): none
     * recorded (a CTA per 784-token page, 8 per SM) or 98 tokens a CTA, 8 per SM */
    double heads = ref_rank.kv_heads, f[PROF_MAX_COEF];
    cost_hw_t page = { .sms = 132, .flops = 700e12, .bw = 4e12 },
              cta98 = { .sms = 132, .flops = 700e12, .bw = 4e12, .expand_tokens = 98, .expand_occ = 8 };
    double shortr[4] = { 1, 784, 20000, 784 }, longr[4] = { 1, 784, 262144, 784 };
    ck_assert_int_eq(cost_point_features("attn.fp8_bridge", shortr, &ref_model, &ref_rank, &page, f), 0);
    ck_assert_double_eq(f[BRIDGE_PAGE_WALK], 784 * heads);             /* 26 CTAs: one wave of a page each */
    ck_assert_double_eq(f[BRIDGE_EXPANDED], 20000 * heads);
    ck_assert_double_eq(f[BRIDGE_EXPANDED_BW], f[BRIDGE_EXPANDED]);
    ck_assert_int_eq(cost_point_features("attn.fp8_bridge", shortr, &ref_model, &ref_rank, &cta98, f), 0);
    ck_assert_double_eq(f[BRIDGE_PAGE_WALK], 98 * heads);              /* 205 CTAs of 98 tokens: one wave of 1056 */
    ck_assert_int_eq(cost_point_features("attn.fp8_bridge", longr, &ref_model, &ref_rank, &page, f), 0);
    ck_assert_double_eq(f[BRIDGE_PAGE_WALK], 784 * heads);             /* 335 CTAs <= 1056 slots */
    ck_assert_int_eq(cost_point_features("attn.fp8_bridge", longr, &ref_model, &ref_rank, &cta98, f), 0);
    ck_assert_double_eq(f[BRIDGE_PAGE_WALK], 3 * 98 * heads);          /* 2675 CTAs: 3 waves of 1056 */
    cta98.expand_occ = 4;
    ck_assert_int_eq(cost_point_features("attn.fp8_bridge", longr, &ref_model, &ref_rank, &cta98, f), 0);
    ck_assert_double_eq(f[BRIDGE_PAGE_WALK], 6 * 98 * heads);          /* 4 an SM: 6 waves of 528 */
}
END_TEST

/* the 98-token expansion on calib's bridge grid (19 prefixes, 1K..262K) and shorter ones, times
 * from a known bridge law with a knee at 3 expansion CTAs an SM (the H200's: 30K tokens are
 * 312 CTAs, 3 on the busiest SM; 41K 424, 4) */
static int knee_points(double *pts, const double *coef, const cost_hw_t *hw)
{
    static const double ctx[] = { 100, 400, 784, 1024, 1393, 1896, 2580, 3511, 4778, 6502, 8848, 12040, 16384,
                                  22295, 30339, 41285, 56180, 76450, 104032, 141566, 192641, 262144 };
    prof_law_t l;
    memset(&l, 0, sizeof l);
    snprintf(l.name, sizeof l.name, "attn.fp8_bridge");
    l.ncoef = cost_law_ncoef(l.name);
    memcpy(l.coef, coef, (size_t)l.ncoef * sizeof *coef);
    int n = (int)(sizeof ctx / sizeof *ctx);
    for (int i = 0; i < n; i++) {
        double *p = pts + 5 * i, f[PROF_MAX_COEF];
        p[0] = 1, p[1] = ctx[i] < 784 ? ctx[i] : 784, p[2] = ctx[i], p[3] = 1568;
        ck_assert_int_eq(cost_point_features(l.name, p, &ref_model, &ref_rank, hw, f), 0);
        p[4] = prof_eval(&l, f);
    }
    return n;
}

START_TEST(bridge_knee)
{
    /* the knee's feature: the expansion CTAs the busiest SM holds at once */
    cost_hw_t cta98 = { .sms = 132, .flops = 7.5e14, .bw = 4.2e12, .expand_tokens = 98, .expand_occ = 8 };
    double f[PROF_MAX_COEF], heads = ref_rank.kv_heads;
    static const struct { double tokens, sm; } kf[] = { { 12040, 1 }, { 16384, 2 }, { 30339, 3 }, { 41285, 4 },
                                                        { 76450, 6 }, { 262144, 8 } };
    for (size_t i = 0; i < sizeof kf / sizeof *kf; i++) {
        double row[4] = { 1, 784, kf[i].tokens, 1568 };
        ck_assert_int_eq(cost_point_features("attn.fp8_bridge", row, &ref_model, &ref_rank, &cta98, f), 0);
        ck_assert_msg(f[BRIDGE_SM_CTAS] == kf[i].sm, "%g tokens: %g CTAs an SM", kf[i].tokens, f[BRIDGE_SM_CTAS]);
        ck_assert_double_eq(f[BRIDGE_EXPANDED_KNEE], kf[i].tokens * heads);
    }
    ck_assert_int_eq(cost_point_features("attn.fp8_bridge", (double[]){ 1, 784, 262144, 1568 }, &ref_model, &ref_rank,
                                         NULL, f), 0);
    ck_assert_double_eq(f[BRIDGE_SM_CTAS], 0); /* no SM count: never past the knee */
    int a, b;
    ck_assert_int_eq(cost_law_knee("attn.fp8_bridge", &a, &b), 1);
    ck_assert(a == BRIDGE_EXPANDED_KNEE && b == BRIDGE_SM_CTAS);
    ck_assert_int_eq(cost_law_knee("gdn", &a, &b), 0);

    /* the fit recovers every coefficient and the knee, exactly and with 1% noise */
    static const double truth[6] = { 1.4e-5, 5e-11, 2.5e-8, 3.4e-10, 2e-10, 3 };
    static double pts[64 * 5];
    law_case_t lc = { "attn.fp8_bridge", 5, { 0 } };
    int n = knee_points(pts, truth, &cta98);
    prof_law_t l;
    init_law(&l, &lc, pts, n);
    ck_assert_int_eq(fit_law_hw(&l, &ref_model, &ref_rank, &cta98), 0);
    ck_assert_int_eq(l.ncoef, 6);
    for (int j = 0; j < 6; j++)
        ck_assert_msg(fabs(l.coef[j] / truth[j] - 1) < 1e-6, "coef %d: %g vs %g", j, l.coef[j], truth[j]);
    ck_assert(l.fit_max_rel < 1e-9);
    rng_state = 7;
    for (int i = 0; i < n; i++)
        pts[5 * i + 4] *= 1 + 0.01 * nrand();
    init_law(&l, &lc, pts, n);
    ck_assert_int_eq(fit_law_hw(&l, &ref_model, &ref_rank, &cta98), 0);
    ck_assert_double_eq(l.coef[BRIDGE_SM_CTAS], 3);
    ck_assert_msg(fabs(l.coef[BRIDGE_EXPANDED_KNEE] / truth[BRIDGE_EXPANDED_KNEE] - 1) < 0.15, "knee slope %g",
                  l.coef[BRIDGE_EXPANDED_KNEE]);
    ck_assert(l.fit_max_rel < 0.05);

    /* a law without a knee: none is invented (c4 = c5 = 0), the rest comes back */
    static const double flat[6] = { 1.4e-5, 5e-11, 2.5e-8, 3.4e-10, 0, 0 };
    n = knee_points(pts, flat, &cta98);
    init_law(&l, &lc, pts, n);
    ck_assert_int_eq(fit_law_hw(&l, &ref_model, &ref_rank, &cta98), 0);
    ck_assert(l.coef[BRIDGE_EXPANDED_KNEE] == 0 && l.coef[BRIDGE_SM_CTAS] == 0);
    for (int j = 0; j < 4; j++)
        ck_assert_msg(fabs(l.coef[j] / flat[j] - 1) < 1e-6, "coef %d: %g vs %g", j, l.coef[j], flat[j]);

    /* evaluation: the term counts past the knee only; a law of 4 coefficients (no knee
     * term) prices with its first four */
    memset(&l, 0, sizeof l);
    snprintf(l.name, sizeof l.name, "attn.fp8_bridge");
    l.ncoef = 6;
    double c[6] = { 1, 2, 3, 5, 7, 3 }, g[PROF_MAX_COEF] = { 1, 10, 100, 50, 10, 3 };
    memcpy(l.coef, c, sizeof c);
    ck_assert_double_eq(prof_eval(&l, g), 1 + 20 + 300);
    g[BRIDGE_SM_CTAS] = 4;
    ck_assert_double_eq(prof_eval(&l, g), 1 + 20 + 300 + 70);
    l.ncoef = 4;
    ck_assert_double_eq(prof_eval(&l, g), 1 + 20 + 300);
    l.ncoef = 5; /* a slope without its knee: no term */
    ck_assert_double_eq(prof_eval(&l, g), 1 + 20 + 300);
}
END_TEST

START_TEST(law_without_hw)
{
    /* fit_law (no hardware facts): the features that need the SM count or the ceilings
     * are 0 and never fitted; a law of the others comes back */
    law_case_t lc = { "elementwise", 2, { 3e-6, 2e-8 } };
    static double pts[64 * 2];
    int n = 0;
    for (double tk = 1; tk <= 4096; tk *= 2, n++) {
        pts[2 * n] = tk;
        pts[2 * n + 1] = lc.coef[0] + lc.coef[1] * tk;
    }
    prof_law_t l;
    init_law(&l, &lc, pts, n);
    ck_assert_int_eq(fit_law(&l, &ref_model, &ref_rank), 0);
    ck_assert_double_eq_tol(l.coef[0], 3e-6, 1e-15);
    ck_assert_double_eq_tol(l.coef[1], 2e-8, 1e-17);
    ck_assert_double_eq(l.coef[ELEM_NORM_WAVES], 0);
    ck_assert_double_eq(l.coef[ELEM_SILU_WAVES], 0);
    double feat[PROF_MAX_COEF];
    ck_assert_int_eq(cost_point_features("elementwise", pts, &ref_model, &ref_rank, NULL, feat), 0);
    ck_assert(feat[ELEM_NORM_WAVES] == 0 && feat[ELEM_SILU_WAVES] == 0 && feat[ELEM_SILU_SECOND_WAVE] == 0);
    ck_assert_int_eq(cost_point_features("elementwise", pts, &ref_model, &ref_rank, &ref_hw, feat), 0);
    ck_assert(feat[ELEM_NORM_WAVES] == 1 && feat[ELEM_SILU_WAVES] == 1 && feat[ELEM_SILU_SECOND_WAVE] == 0);
    /* the SiLU grid's second wave: 32 tokens x 34 CTAs = 1088 > 132 x 8 */
    ck_assert_int_eq(cost_point_features("elementwise", (double[]){ 16 }, &ref_model, &ref_rank, &ref_hw, feat), 0);
    ck_assert(feat[ELEM_SILU_WAVES] == 1 && feat[ELEM_SILU_SECOND_WAVE] == 0);
    ck_assert_int_eq(cost_point_features("elementwise", (double[]){ 32 }, &ref_model, &ref_rank, &ref_hw, feat), 0);
    ck_assert(feat[ELEM_SILU_WAVES] == 2 && feat[ELEM_SILU_SECOND_WAVE] == 1);
    ck_assert_int_eq(cost_point_features("gemm", (double[]){ 1, 5120, 5120, 2 }, &ref_model, &ref_rank, NULL, feat), 0);
    ck_assert_double_eq(feat[GEMM_ROOFLINE], 0);
}
END_TEST

/* gemm's kernel-choice terms and XQA's lone CTA, by hand */
START_TEST(choice_and_lone_features)
{
    double f[PROF_MAX_COEF], per_sm = 7.5e14 / 132;
    /* m = 64 on a 96x64 tile split 2 ways over k: 54 x 1 x 2 = 108 CTAs, one round; the
     * bytes at the copy ceiling outlast the tile's FLOPs */
    double r1[] = { 64, 5120, 6144, 2, 96, 64, 2, 1e-5 };
    double bytes = 2.0 * (64 * 6144 + 64 * 5120) + 2.0 * 5120 * 6144;
    ck_assert_int_eq(cost_point_features_n("gemm", r1, 8, &ref_model, &ref_rank, &ref_hw, f), 0);
    ck_assert_double_eq(f[GEMM_BYTES], bytes);
    ck_assert_double_eq(f[GEMM_SPLIT], 1);
    ck_assert_double_eq_tol(f[GEMM_TILE_ROOFLINE], bytes / 4.2e12, 1e-18);
    ck_assert_double_eq(f[GEMM_PARTIAL_BYTES], 4.0 * 64 * 5120 * 2);
    ck_assert_double_eq(f[GEMM_WEIGHT_STREAM], 2.0 * 5120 * 6144);
    /* the tile padded to 128 along m: 2 x 96 x 128 x 3072 at an SM's share of the peak */
    ck_assert_double_eq_tol(f[GEMM_TILE_ROOFLINE_128], fmax(2.0 * 96 * 128 * 3072 / per_sm, bytes / 4.2e12), 1e-18);
    /* m = 4096 on 320x128 tiles, whole k: 16 x 32 = 512 CTAs, 4 rounds of the tile's FLOPs */
    double r2[] = { 4096, 5120, 6144, 2, 320, 128, 1, 1e-4 };
    ck_assert_int_eq(cost_point_features_n("gemm", r2, 8, &ref_model, &ref_rank, &ref_hw, f), 0);
    ck_assert_double_eq(f[GEMM_SPLIT], 0);
    ck_assert_double_eq_tol(f[GEMM_TILE_ROOFLINE], 4 * 2.0 * 320 * 128 * 6144 / per_sm, 1e-15);
    ck_assert_double_eq(f[GEMM_PARTIAL_BYTES], 0);
    ck_assert_double_eq(f[GEMM_WEIGHT_STREAM], 2.0 * 5120 * 6144 * 32);
    ck_assert_double_eq(f[GEMM_TILE_ROOFLINE_128], f[GEMM_TILE_ROOFLINE]); /* 128 wide already */
    /* the base columns alone, or an unknown choice (tile 0): the first four features only */
    ck_assert_int_eq(cost_point_features("gemm", r1, &ref_model, &ref_rank, &ref_hw, f), 0);
    ck_assert(f[GEMM_ROOFLINE] > 0 && f[GEMM_SPLIT] == 0 && f[GEMM_TILE_ROOFLINE] == 0 && f[GEMM_PARTIAL_BYTES] == 0 &&
              f[GEMM_WEIGHT_STREAM] == 0 && f[GEMM_TILE_ROOFLINE_128] == 0);
    double r0[] = { 64, 5120, 6144, 2, 0, 0, 0, 1e-5 };
    ck_assert_int_eq(cost_point_features_n("gemm", r0, 8, &ref_model, &ref_rank, &ref_hw, f), 0);
    ck_assert(f[GEMM_ROOFLINE] > 0 && f[GEMM_SPLIT] == 0 && f[GEMM_TILE_ROOFLINE] == 0 && f[GEMM_PARTIAL_BYTES] == 0 &&
              f[GEMM_WEIGHT_STREAM] == 0);
    ck_assert_int_eq(cost_point_features_n("gemm", r1, 8, &ref_model, &ref_rank, NULL, f), 0);
    /* no SMs, no ceilings: no rounds */
    ck_assert(f[GEMM_ROOFLINE] == 0 && f[GEMM_SPLIT] == 1 && f[GEMM_TILE_ROOFLINE] == 0 && f[GEMM_WEIGHT_STREAM] > 0 &&
              f[GEMM_TILE_ROOFLINE_128] == 0);
    /* XQA at 41,285 tokens: 41 partitions of 1024 x 4 kv heads = 164 CTAs a row; 2 rows put
     * 3 on the busiest of 132 SMs (the last alone), 1 row 2, 3 rows 4 */
    ck_assert_int_eq(ref_rank.kv_heads, 4);
    int want[] = { 0, 1024, 0 };
    for (int rows = 1; rows <= 3; rows++) {
        ck_assert_int_eq(cost_point_features("attn.decode_xqa.fp16", (double[]){ rows, 1, 41285, 784 }, &ref_model,
                                             &ref_rank, &ref_hw, f), 0);
        ck_assert_double_eq(f[DECODE_SM_TOKENS], ceil(rows * 164 / 132.0) * 1024);
        ck_assert_double_eq(f[DECODE_LONE_TOKENS], want[rows - 1]);
    }
    /* 5 on the busiest SM: lone again; the scalar kernel has no such term */
    ck_assert_int_eq(cost_point_features("attn.decode_xqa.fp8", (double[]){ 4, 1, 41285, 784 }, &ref_model, &ref_rank,
                                         &ref_hw, f), 0);
    ck_assert_double_eq(f[DECODE_LONE_TOKENS], 1024);
    ck_assert_int_eq(cost_point_features("attn.decode_scalar.fp16", (double[]){ 2, 1, 41285, 784 }, &ref_model,
                                         &ref_rank, &ref_hw, f), 0);
    ck_assert_double_eq(f[DECODE_LONE_TOKENS], 0);
}
END_TEST

START_TEST(law_errors)
{
    double pts[2 * 2] = { 1, 1e-5, 2, 0 }; /* a zero time */
    prof_law_t l;
    memset(&l, 0, sizeof l);
    snprintf(l.name, sizeof l.name, "elementwise");
    l.ncols = 2;
    l.npts = 2;
    l.pts = pts;
    ck_assert_int_eq(fit_law_hw(&l, &ref_model, &ref_rank, &ref_hw), -1);
    pts[3] = 2e-5;
    ck_assert_int_eq(fit_law_hw(&l, &ref_model, &ref_rank, &ref_hw), 0);
    snprintf(l.name, sizeof l.name, "no.such.law");
    ck_assert_int_eq(fit_law_hw(&l, &ref_model, &ref_rank, &ref_hw), -1);
    snprintf(l.name, sizeof l.name, "elementwise");
    l.npts = 0;
    ck_assert_int_eq(fit_law_hw(&l, &ref_model, &ref_rank, &ref_hw), -1);
}
END_TEST

/* ---- a fitted profile through prof_save / prof_load ------------------------------- */

START_TEST(profile_round_trip)
{
    profile_t p, q;
    char err[PROF_ERR_MAX], path[] = "/tmp/check_fit.XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    memset(&p, 0, sizeof p);
    snprintf(p.gpu, sizeof p.gpu, "Synthetic GPU");
    p.sms = 132;
    p.tp = 1;
    p.sm_clock_mhz = 1980;
    p.calib_seconds = 12.5;
    snprintf(p.model, sizeof p.model, "%s", ref_model.name);
    rng_state = 99;
    for (size_t k = 0; k < sizeof law_cases / sizeof *law_cases; k++) {
        static double pts[512 * PROF_MAX_COLS];
        prof_law_t l;
        int n = make_points(&law_cases[k], pts, 512);
        for (int i = 0; i < n; i++)
            pts[(size_t)i * law_cases[k].ncols + law_cases[k].ncols - 1] *= 1 + 0.01 * nrand();
        init_law(&l, &law_cases[k], pts, n);
        snprintf(l.provenance, sizeof l.provenance, "synthetic, check_fit");
        ck_assert_int_eq(fit_law_hw(&l, &ref_model, &ref_rank, &ref_hw), 0);
        ck_assert_int_eq(prof_put(&p, &l), 0);
    }
    ck_assert_int_eq(prof_save(path, &p), 0);
    ck_assert_msg(prof_load(path, &q, err) == 0, "%s", err);
    ck_assert_int_eq(q.nlaws, p.nlaws);
    ck_assert_str_eq(q.gpu, p.gpu);
    ck_assert_int_eq(q.sms, 132);
    ck_assert_double_eq(q.sm_clock_mhz, 1980);
    for (int i = 0; i < p.nlaws; i++) {
        const prof_law_t *a = &p.laws[i], *b = prof_find(&q, a->name);
        ck_assert_ptr_nonnull(b);
        ck_assert_int_eq(b->ncoef, a->ncoef);
        for (int j = 0; j < a->ncoef; j++)
            ck_assert_double_eq(b->coef[j], a->coef[j]); /* bit for bit */
        ck_assert_double_eq(b->fit_median_rel, a->fit_median_rel);
        ck_assert_double_eq(b->fit_max_rel, a->fit_max_rel);
        ck_assert_int_eq(b->npts, a->npts);
        ck_assert_int_eq(b->ncols, a->ncols);
        ck_assert_int_eq(memcmp(b->pts, a->pts, (size_t)a->npts * a->ncols * sizeof(double)), 0);
        /* refitting the loaded points gives the same law */
        prof_law_t c = *b;
        ck_assert_int_eq(fit_law_hw(&c, &ref_model, &ref_rank, &ref_hw), 0);
        for (int j = 0; j < a->ncoef; j++)
            ck_assert_double_eq_tol(c.coef[j], a->coef[j], 1e-12 * fabs(a->coef[j]) + 1e-300);
        double feat[PROF_MAX_COEF];
        ck_assert_int_eq(cost_point_features(a->name, a->pts, &ref_model, &ref_rank, &ref_hw, feat), 0);
        ck_assert_double_eq(prof_eval(b, feat), prof_eval(a, feat));
    }
    prof_free(&p);
    prof_free(&q);
    unlink(path);
}
END_TEST

int main(void)
{
    const check_test_t linear[] = {
        CHECK_TEST(linear_exact), CHECK_TEST(linear_weighted_noise), CHECK_TEST(linear_zero_column),
        CHECK_TEST(linear_bad_args), CHECK_TEST(nonneg_drops_negative),
        CHECK_TEST(nonneg_all_positive_unchanged)};
    const check_test_t law[] = {
        CHECK_LOOP(law_exact, CHECK_N(law_cases)), CHECK_LOOP(law_noisy, CHECK_N(law_cases)),
        CHECK_TEST(law_well_posed_coefs), CHECK_TEST(law_learns_head_size), CHECK_TEST(law_roof_eval), CHECK_TEST(law_without_hw),
        CHECK_TEST(bridge_expand_kernel), CHECK_TEST(bridge_knee), CHECK_TEST(choice_and_lone_features),
        CHECK_TEST(law_errors), CHECK_TEST(law_residuals), CHECK_TEST(profile_round_trip)};
    Suite *s = suite_create("fit");
    check_case(s, "linear", linear, CHECK_N(linear), 0, NULL);
    check_case(s, "law", law, CHECK_N(law), 0, load_model);
    gsl_set_error_handler_off();
    return check_run(s);
}
