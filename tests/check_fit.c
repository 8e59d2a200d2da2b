/* check_fit: the least-squares fitter (sim/fit.c) -- known coefficients recovered from
 * synthetic points with and without noise, the non-negative active set, and a fitted
 * profile's round trip through prof_save / prof_load.  Run from the repository root. */
#include <check.h>
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

static const law_case_t law_cases[] = {
    { "attn.prefill_bm32.fp16", 5, { 8e-6, 1.5e-9, 4e-8, 2e-9 } },
    { "attn.prefill_generic.fp16", 5, { 6e-6, 3e-9, 9e-8, 1e-9 } },
    { "attn.decode_xqa.fp16", 5, { 1e-5, 2e-11, 1e-8, 5e-9 } },
    { "attn.decode_scalar.fp8", 5, { 7e-6, 1e-11, 2e-8, 3e-9 } },
    { "attn.fp8_bridge", 5, { 4e-6, 5e-11 } },
    { "gemm", 5, { 6e-6, 1.4e-15, 2.6e-13 } },
    { "gdn", 3, { 1.2e-5, 1.1e-7, 4e-6 } },
    { "elementwise", 2, { 3e-6, 2e-8 } },
};

/* Points over a grid that spans each law's features; t from the known coefficients. */
static int make_points(const law_case_t *lc, double *pts, int cap)
{
    int n = 0;
    const double ctx[] = { 1024, 3000, 9000, 30000, 90000, 262144 };
    if (!strncmp(lc->law, "attn.", 5)) {
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
                n++;
            }
    } else if (!strcmp(lc->law, "gdn")) {
        for (int s = 1; s <= 16; s *= 2)
            for (double tk = 1; tk <= 2048 && n < cap; tk *= 4) {
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
        double feat[PROF_MAX_COEF], *p = pts + (size_t)i * lc->ncols, t = 0;
        ck_assert_int_eq(cost_point_features(lc->law, p, &ref_model, &ref_rank, feat), 0);
        for (int j = 0; j < cost_law_ncoef(lc->law); j++)
            t += lc->coef[j] * feat[j];
        p[lc->ncols - 1] = t;
    }
    return n;
}

static void init_law(prof_law_t *l, const law_case_t *lc, double *pts, int n)
{
    static const char *acols[] = { "rows", "q", "seq_len", "page", "t_s" };
    static const char *gcols[] = { "m", "n", "k", "wb", "t_s" };
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
        double feat[PROF_MAX_COEF], a = 0, b = 0;
        cost_point_features(lc->law, l->pts + (size_t)i * l->ncols, &ref_model, &ref_rank, feat);
        for (int j = 0; j < l->ncoef; j++) {
            a += l->coef[j] * feat[j];
            b += lc->coef[j] * feat[j];
        }
        mx = fmax(mx, fabs(a - b) / b);
    }
    return mx;
}

START_TEST(law_exact)
{
    const law_case_t *lc = &law_cases[_i];
    static double pts[512 * 5];
    prof_law_t l;
    int n = make_points(lc, pts, 512);
    init_law(&l, lc, pts, n);
    ck_assert_int_eq(fit_law(&l, &ref_model, &ref_rank), 0);
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
    static double pts[512 * 5];
    prof_law_t l;
    int n = make_points(lc, pts, 512);
    rng_state = 11 + (uint64_t)_i;
    for (int i = 0; i < n; i++)
        pts[(size_t)i * lc->ncols + lc->ncols - 1] *= 1 + 0.01 * nrand();
    init_law(&l, lc, pts, n);
    ck_assert_int_eq(fit_law(&l, &ref_model, &ref_rank), 0);
    ck_assert_msg(l.fit_median_rel < 0.02, "%s: median rel %g", lc->law, l.fit_median_rel);
    ck_assert_msg(l.fit_max_rel < 0.06, "%s: max rel %g", lc->law, l.fit_max_rel);
    ck_assert_msg(pred_err(&l, lc) < 0.03, "%s: prediction error %g", lc->law, pred_err(&l, lc));
}
END_TEST

START_TEST(law_well_posed_coefs)
{
    /* laws whose features are not collinear on the grid give back each coefficient */
    static const int idx[] = { 5, 6, 7 }; /* gemm, gdn, elementwise */
    for (size_t k = 0; k < sizeof idx / sizeof *idx; k++) {
        const law_case_t *lc = &law_cases[idx[k]];
        static double pts[512 * 5];
        prof_law_t l;
        int n = make_points(lc, pts, 512);
        init_law(&l, lc, pts, n);
        ck_assert_int_eq(fit_law(&l, &ref_model, &ref_rank), 0);
        for (int j = 0; j < l.ncoef; j++)
            ck_assert_msg(fabs(l.coef[j] / lc->coef[j] - 1) < 1e-6, "%s coef %d: %g vs %g", lc->law, j,
                          l.coef[j], lc->coef[j]);
    }
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
    ck_assert_int_eq(fit_law(&l, &ref_model, &ref_rank), -1);
    pts[3] = 2e-5;
    ck_assert_int_eq(fit_law(&l, &ref_model, &ref_rank), 0);
    snprintf(l.name, sizeof l.name, "no.such.law");
    ck_assert_int_eq(fit_law(&l, &ref_model, &ref_rank), -1);
    snprintf(l.name, sizeof l.name, "elementwise");
    l.npts = 0;
    ck_assert_int_eq(fit_law(&l, &ref_model, &ref_rank), -1);
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
        static double pts[512 * 5];
        prof_law_t l;
        int n = make_points(&law_cases[k], pts, 512);
        for (int i = 0; i < n; i++)
            pts[(size_t)i * law_cases[k].ncols + law_cases[k].ncols - 1] *= 1 + 0.01 * nrand();
        init_law(&l, &law_cases[k], pts, n);
        snprintf(l.provenance, sizeof l.provenance, "synthetic, check_fit");
        ck_assert_int_eq(fit_law(&l, &ref_model, &ref_rank), 0);
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
        ck_assert_int_eq(fit_law(&c, &ref_model, &ref_rank), 0);
        for (int j = 0; j < a->ncoef; j++)
            ck_assert_double_eq_tol(c.coef[j], a->coef[j], 1e-12 * fabs(a->coef[j]) + 1e-300);
        double feat[PROF_MAX_COEF];
        ck_assert_int_eq(cost_point_features(a->name, a->pts, &ref_model, &ref_rank, feat), 0);
        ck_assert_double_eq(prof_eval(b, feat), prof_eval(a, feat));
    }
    prof_free(&p);
    prof_free(&q);
    unlink(path);
}
END_TEST

static Suite *fit_suite(void)
{
    Suite *s = suite_create("fit");
    TCase *tc = tcase_create("linear");
    tcase_add_test(tc, linear_exact);
    tcase_add_test(tc, linear_weighted_noise);
    tcase_add_test(tc, linear_zero_column);
    tcase_add_test(tc, linear_bad_args);
    tcase_add_test(tc, nonneg_drops_negative);
    tcase_add_test(tc, nonneg_all_positive_unchanged);
    suite_add_tcase(s, tc);
    tc = tcase_create("law");
    tcase_add_checked_fixture(tc, load_model, NULL);
    int nl = (int)(sizeof law_cases / sizeof *law_cases);
    tcase_add_loop_test(tc, law_exact, 0, nl);
    tcase_add_loop_test(tc, law_noisy, 0, nl);
    tcase_add_test(tc, law_well_posed_coefs);
    tcase_add_test(tc, law_errors);
    tcase_add_test(tc, profile_round_trip);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    gsl_set_error_handler_off();
    SRunner *sr = srunner_create(fit_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
