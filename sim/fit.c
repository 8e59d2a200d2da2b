/* fit.c: weighted least squares through GSL, a non-negative active set on top, and the
 * per-law fit of profile points.  See fit.h for the contract. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_multifit.h>
#include "cost.h"
#include "fit.h"
#include "law.h"

/* Solve on the columns listed in act[0..na); coef of the others is left untouched. */
static int solve_active(const double *X, const double *y, const double *w, int n, int p,
                        const int *act, int na, double *coef, double *chisq)
{
    int rc = -1;
    gsl_matrix *A = NULL;
    gsl_vector *yv = NULL, *wv = NULL, *c = NULL;
    gsl_matrix *cov = NULL;
    gsl_multifit_linear_workspace *ws = NULL;
    double scale[16];

    if (na < 1 || na > 16 || n < na)
        return -1;
    A = gsl_matrix_alloc((size_t)n, (size_t)na);
    yv = gsl_vector_alloc((size_t)n);
    wv = gsl_vector_alloc((size_t)n);
    c = gsl_vector_alloc((size_t)na);
    cov = gsl_matrix_alloc((size_t)na, (size_t)na);
    ws = gsl_multifit_linear_alloc((size_t)n, (size_t)na);
    if (!A || !yv || !wv || !c || !cov || !ws)
        goto fail;
    for (int j = 0; j < na; j++) {
        double mx = 0;
        for (int i = 0; i < n; i++)
            mx = fmax(mx, fabs(X[(size_t)i * p + act[j]]));
        scale[j] = mx > 0 ? mx : 1;
    }
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < na; j++)
            gsl_matrix_set(A, (size_t)i, (size_t)j, X[(size_t)i * p + act[j]] / scale[j]);
        gsl_vector_set(yv, (size_t)i, y[i]);
        gsl_vector_set(wv, (size_t)i, w ? w[i] : 1.0);
    }
    double chi = 0;
    if (gsl_multifit_wlinear(A, wv, yv, c, cov, &chi, ws) != GSL_SUCCESS)
        goto fail;
    for (int j = 0; j < na; j++) {
        double v = gsl_vector_get(c, (size_t)j) / scale[j];
        if (!isfinite(v))
            goto fail;
        coef[act[j]] = v;
    }
    if (chisq)
        *chisq = chi;
    rc = 0;
fail:
    gsl_multifit_linear_free(ws);
    gsl_matrix_free(cov);
    gsl_vector_free(c);
    gsl_vector_free(wv);
    gsl_vector_free(yv);
    gsl_matrix_free(A);
    return rc;
}

/* Columns that are nonzero somewhere. */
static int live_columns(const double *X, int n, int p, int *act)
{
    int na = 0;
    for (int j = 0; j < p; j++) {
        int live = 0;
        for (int i = 0; i < n && !live; i++)
            live = X[(size_t)i * p + j] != 0;
        if (live)
            act[na++] = j;
    }
    return na;
}

static double wchisq(const double *X, const double *y, const double *w, int n, int p,
                     const double *coef)
{
    double s = 0;
    for (int i = 0; i < n; i++) {
        double pr = 0;
        for (int j = 0; j < p; j++)
            pr += X[(size_t)i * p + j] * coef[j];
        s += (w ? w[i] : 1.0) * (y[i] - pr) * (y[i] - pr);
    }
    return s;
}

int fit_linear(const double *X, const double *y, const double *w, int n, int p,
               double *coef, double *chisq)
{
    int act[16];
    if (n < 1 || p < 1 || p > 16)
        return -1;
    for (int j = 0; j < p; j++)
        coef[j] = 0;
    int na = live_columns(X, n, p, act);
    if (na == 0) {
        if (chisq)
            *chisq = wchisq(X, y, w, n, p, coef);
        return 0;
    }
    if (na > n)
        na = n; /* under-determined: keep the first n live features */
    return solve_active(X, y, w, n, p, act, na, coef, chisq);
}

int fit_linear_nonneg(const double *X, const double *y, const double *w, int n, int p,
                      double *coef, double *chisq)
{
    int act[16];
    double colmax[16];
    if (n < 1 || p < 1 || p > 16)
        return -1;
    for (int j = 0; j < p; j++) {
        coef[j] = 0;
        colmax[j] = 0;
        for (int i = 0; i < n; i++)
            colmax[j] = fmax(colmax[j], fabs(X[(size_t)i * p + j]));
    }
    int na = live_columns(X, n, p, act);
    if (na > n)
        na = n;
    while (na > 0) {
        if (solve_active(X, y, w, n, p, act, na, coef, NULL) < 0)
            return -1;
        /* the most negative contribution (coefficient times its column's largest value) */
        int worst = -1;
        double worst_v = 0;
        for (int k = 0; k < na; k++) {
            double v = coef[act[k]] * colmax[act[k]];
            if (v < worst_v) {
                worst_v = v;
                worst = k;
            }
        }
        if (worst < 0)
            break;
        coef[act[worst]] = 0;
        memmove(&act[worst], &act[worst + 1], (size_t)(na - worst - 1) * sizeof act[0]);
        na--;
    }
    if (na == 0)
        for (int j = 0; j < p; j++)
            coef[j] = 0;
    if (chisq)
        *chisq = wchisq(X, y, w, n, p, coef);
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int fit_law_errors(const prof_law_t *law, const model_t *m, const model_rank_t *r, const cost_hw_t *hw,
                   double *median_rel, double *max_rel)
{
    int nc = law_ncoef(law->name);
    if (nc < 1 || law->npts < 1 || law->ncols < 1)
        return -1;
    double *rel = malloc((size_t)law->npts * sizeof *rel);
    if (!rel)
        return -1;
    double mx = 0;
    for (int i = 0; i < law->npts; i++) {
        const double *row = law->pts + (size_t)i * law->ncols;
        double feat[PROF_MAX_COEF] = {0};
        if (cost_point_features_n(law->name, row, law->ncols, m, r, hw, feat) < 0) {
            free(rel);
            return -1;
        }
        double t = row[law->ncols - 1], pr = prof_eval(law, feat);
        rel[i] = t > 0 ? fabs(pr - t) / t : INFINITY;
        mx = fmax(mx, rel[i]);
    }
    qsort(rel, (size_t)law->npts, sizeof *rel, cmp_double);
    int n = law->npts;
    double med = n % 2 ? rel[n / 2] : 0.5 * (rel[n / 2 - 1] + rel[n / 2]);
    free(rel);
    if (median_rel)
        *median_rel = med;
    if (max_rel)
        *max_rel = mx;
    return 0;
}

static int cmp_resid(const void *a, const void *b)
{
    const fit_resid_t *x = a, *y = b;
    double ex = fabs(x->rel), ey = fabs(y->rel);
    if (ex != ey)
        return ex < ey ? 1 : -1;
    return (x->index > y->index) - (x->index < y->index);
}

int fit_law_residuals(const prof_law_t *law, const model_t *m, const model_rank_t *r, const cost_hw_t *hw,
                      fit_resid_t *out)
{
    if (law_ncoef(law->name) < 1 || law->npts < 1 || law->ncols < 1 || !law->pts || !out)
        return -1;
    for (int i = 0; i < law->npts; i++) {
        const double *row = law->pts + (size_t)i * law->ncols;
        double feat[PROF_MAX_COEF] = {0};
        if (cost_point_features_n(law->name, row, law->ncols, m, r, hw, feat) < 0)
            return -1;
        double t = row[law->ncols - 1], pr = prof_eval(law, feat);
        out[i] = (fit_resid_t){ i, t, pr, t > 0 ? (pr - t) / t : INFINITY };
    }
    qsort(out, (size_t)law->npts, sizeof *out, cmp_resid);
    return 0;
}

/* The roofline pair's fit at ratio rho = c_b / c_a (rho < 0: c_a = 0, f_b alone): X's
 * columns with column a replaced by max(f_a, rho f_b) and b by 0, into Z.  The weighted
 * residual sum of squares, or -1 on a solver failure. */
static double roof_at(const double *X, const double *y, const double *w, int n, int p, int a, int b, double rho,
                      double *Z, double *coef)
{
    double chi;
    memcpy(Z, X, (size_t)n * p * sizeof *Z);
    for (int i = 0; i < n; i++) {
        double *z = Z + (size_t)i * p;
        if (rho < 0) {
            z[a] = 0;
        } else {
            z[a] = fmax(z[a], rho * z[b]);
            z[b] = 0;
        }
    }
    if (fit_linear_nonneg(Z, y, w, n, p, coef, &chi) < 0)
        return -1;
    if (rho >= 0)
        coef[b] = rho * coef[a];
    return chi;
}

/* Non-negative fit with the roofline pair (a, b): the best rho of a log-spaced scan over
 * 8 decades around the points' median f_a / f_b (and the two ends: f_a alone, f_b
 * alone), refined by golden section between its neighbours. */
static int fit_roof(const double *X, const double *y, const double *w, int n, int p, int a, int b, double *coef)
{
    enum { NSCAN = 161 };
    double *Z = malloc((size_t)n * p * sizeof *Z), *ratio = malloc((size_t)n * sizeof *ratio);
    double c[PROF_MAX_COEF], best = INFINITY, best_u = 0, u0 = 0;
    int nr = 0, rc = -1, kbest = -1;
    if (!Z || !ratio)
        goto done;
    for (int i = 0; i < n; i++) {
        double fa = X[(size_t)i * p + a], fb = X[(size_t)i * p + b];
        if (fa > 0 && fb > 0)
            ratio[nr++] = fa / fb;
    }
    for (int e = 0; e < 2; e++) { /* f_a alone, f_b alone */
        double chi = roof_at(X, y, w, n, p, a, b, e ? -1 : 0, Z, c);
        if (chi < 0)
            goto done;
        if (chi < best) {
            best = chi;
            memcpy(coef, c, (size_t)p * sizeof *coef);
        }
    }
    if (nr > 0) {
        qsort(ratio, (size_t)nr, sizeof *ratio, cmp_double);
        u0 = log10(ratio[nr / 2]);
        for (int k = 0; k < NSCAN; k++) {
            double u = u0 - 4 + 8.0 * k / (NSCAN - 1), chi = roof_at(X, y, w, n, p, a, b, pow(10, u), Z, c);
            if (chi < 0)
                goto done;
            if (chi < best) {
                best = chi;
                best_u = u;
                kbest = k;
                memcpy(coef, c, (size_t)p * sizeof *coef);
            }
        }
    }
    if (kbest >= 0) {
        const double g = 0.5 * (sqrt(5.0) - 1), step = 8.0 / (NSCAN - 1);
        double lo = best_u - step, hi = best_u + step;
        double x1 = hi - g * (hi - lo), x2 = lo + g * (hi - lo);
        double f1 = roof_at(X, y, w, n, p, a, b, pow(10, x1), Z, c), f2 = roof_at(X, y, w, n, p, a, b, pow(10, x2), Z, c);
        for (int it = 0; it < 80 && f1 >= 0 && f2 >= 0; it++) {
            if (f1 < f2) {
                hi = x2, x2 = x1, f2 = f1;
                x1 = hi - g * (hi - lo);
                f1 = roof_at(X, y, w, n, p, a, b, pow(10, x1), Z, c);
            } else {
                lo = x1, x1 = x2, f1 = f2;
                x2 = lo + g * (hi - lo);
                f2 = roof_at(X, y, w, n, p, a, b, pow(10, x2), Z, c);
            }
        }
        double u = 0.5 * (lo + hi), chi = roof_at(X, y, w, n, p, a, b, pow(10, u), Z, c);
        if (chi >= 0 && chi < best)
            memcpy(coef, c, (size_t)p * sizeof *coef);
    }
    rc = 0;
done:
    free(ratio);
    free(Z);
    return rc;
}

/* The law's fit without its knee: the roofline pair's scan, or plain non-negative least
 * squares. */
static int fit_plain(const double *X, const double *y, const double *w, int n, int p, const char *law,
                     double *coef)
{
    const law_form_t *f = law_find(law);
    if (f && f->roof_a >= 0 && f->roof_b < p)
        return fit_roof(X, y, w, n, p, f->roof_a, f->roof_b, coef);
    return fit_linear_nonneg(X, y, w, n, p, coef, NULL);
}

/* Weighted residual sum of squares of coef on Z (the roofline pair as max, if any). */
static double chisq_of(const double *Z, const double *y, const double *w, int n, int p, const char *law,
                       const double *coef)
{
    const law_form_t *f = law_find(law);
    int ra = f ? f->roof_a : -1, rb = f ? f->roof_b : -1;
    if (rb >= p)
        ra = rb = -1;
    double chi = 0;
    for (int i = 0; i < n; i++) {
        const double *z = Z + (size_t)i * p;
        double t = 0;
        for (int j = 0; j < p; j++)
            if (j != ra && j != rb)
                t += coef[j] * z[j];
        if (ra >= 0)
            t += fmax(coef[ra] * z[ra], coef[rb] * z[rb]);
        chi += w[i] * (y[i] - t) * (y[i] - t);
    }
    return chi;
}

/* The knee (a, b): term a counts only where f_b > c_b.  Every threshold between two
 * distinct values of f_b among the points (c_b = the lower one; at least one point above
 * it), and no knee at all, is fitted as a law without a knee (column a masked, column b
 * 0); the least weighted residual wins (no knee unless a knee lowers it by more than
 * rounding, 1e-12 a point: the weights make it a sum of squared relative errors).  A knee whose c_a comes out 0
 * is no knee (c_b = 0). */
static int fit_knee(const double *X, const double *y, const double *w, int n, int p, const char *law, int a, int b,
                    double *coef)
{
    double *Z = malloc((size_t)n * p * sizeof *Z), *v = malloc((size_t)n * sizeof *v);
    double c[PROF_MAX_COEF], best = INFINITY, best_k = 0;
    int nv = 0, rc = -1;
    if (!Z || !v)
        goto done;
    for (int i = 0; i < n; i++)
        v[nv++] = X[(size_t)i * p + b];
    qsort(v, (size_t)nv, sizeof *v, cmp_double);
    for (int k = -1; k < nv - 1; k++) {
        if (k >= 0 && ((k > 0 && v[k] == v[k - 1]) || v[k] == v[nv - 1]))
            continue; /* one candidate per distinct value below the largest */
        memcpy(Z, X, (size_t)n * p * sizeof *Z);
        for (int i = 0; i < n; i++) {
            double *z = Z + (size_t)i * p;
            if (k < 0 || !(z[b] > v[k]))
                z[a] = 0;
            z[b] = 0;
        }
        for (int j = 0; j < PROF_MAX_COEF; j++)
            c[j] = 0;
        if (fit_plain(Z, y, w, n, p, law, c) < 0)
            goto done;
        double chi = chisq_of(Z, y, w, n, p, law, c);
        if (k < 0 ? chi < best : chi < best - 1e-12 * n) { /* a knee must do better than rounding */
            best = chi;
            best_k = k < 0 ? 0 : v[k];
            memcpy(coef, c, (size_t)p * sizeof *coef);
        }
    }
    coef[b] = coef[a] > 0 ? best_k : 0;
    rc = 0;
done:
    free(v);
    free(Z);
    return rc;
}

int fit_law(prof_law_t *law, const model_t *m, const model_rank_t *r)
{
    return fit_law_hw(law, m, r, NULL);
}

int fit_law_hw(prof_law_t *law, const model_t *m, const model_rank_t *r, const cost_hw_t *hw)
{
    int rc = -1;
    int nc = law_ncoef(law->name);
    int n = law->npts;
    double *X = NULL, *y = NULL, *w = NULL;
    if (nc < 1 || nc > PROF_MAX_COEF || n < 1 || law->ncols < 1 || !law->pts)
        return -1;
    X = malloc((size_t)n * nc * sizeof *X);
    y = malloc((size_t)n * sizeof *y);
    w = malloc((size_t)n * sizeof *w);
    if (!X || !y || !w)
        goto fail;
    for (int i = 0; i < n; i++) {
        const double *row = law->pts + (size_t)i * law->ncols;
        double feat[PROF_MAX_COEF] = {0};
        if (cost_point_features_n(law->name, row, law->ncols, m, r, hw, feat) < 0)
            goto fail;
        double t = row[law->ncols - 1];
        if (!(t > 0) || !isfinite(t))
            goto fail;
        memcpy(X + (size_t)i * nc, feat, (size_t)nc * sizeof *X);
        y[i] = t;
        w[i] = 1.0 / (t * t); /* least squares on relative error */
    }
    double coef[PROF_MAX_COEF] = {0};
    const law_form_t *f = law_find(law->name);
    if (f && f->knee_a >= 0 && f->knee_b < nc) {
        if (fit_knee(X, y, w, n, nc, law->name, f->knee_a, f->knee_b, coef) < 0)
            goto fail;
    } else if (fit_plain(X, y, w, n, nc, law->name, coef) < 0) {
        goto fail;
    }
    law->ncoef = nc;
    for (int j = 0; j < PROF_MAX_COEF; j++)
        law->coef[j] = j < nc ? coef[j] : 0;
    if (fit_law_errors(law, m, r, hw, &law->fit_median_rel, &law->fit_max_rel) < 0)
        goto fail;
    rc = 0;
fail:
    free(w);
    free(y);
    free(X);
    return rc;
}
