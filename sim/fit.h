/* fit: least-squares fits of the profile's cost laws (GSL).
 *
 * Every law is linear in its coefficients, t = sum_i coef[i] * feat[i], with the
 * features of a point computed by cost_point_features() -- the same function the
 * simulator prices a step with, so a fitted coefficient means one thing everywhere --
 * except a law's roofline pair (a, b) (law.h), max(c_a f_a, c_b f_b).  For a fixed ratio
 * rho = c_b / c_a that law is linear again (one column max(f_a, rho f_b)), so fit_law()
 * scans rho over 8 decades and refines the best by golden section; a law's knee (law.h)
 * is fitted by trying every threshold among the points' values.
 * fit_law() minimises the relative error (weights 1/t^2) and keeps every coefficient
 * non-negative: a feature whose coefficient comes out negative is dropped (coef 0) and
 * the rest refitted, one feature at a time (a simple active set).  Features that are
 * zero on every point are never fitted (coef 0).  Columns are scaled to unit maximum
 * before GSL sees them, so features of 1 and 1e13 sit in one well-conditioned system.
 * Callers own all buffers; nothing here allocates what it returns.  GSL's error
 * handler is expected to be off (gsl_set_error_handler_off() in main): every GSL status
 * is checked and turned into a -1. */
#ifndef PACESIM_FIT_H
#define PACESIM_FIT_H

#include "cost.h"
#include "model.h"
#include "profile.h"

/* Weighted least squares: minimise sum_i w[i] (y[i] - X[i,:] coef)^2 over coef[0..p).
 * X is n x p row-major; w may be NULL (all 1).  Columns of X that are zero on every row
 * get coefficient 0 and are left out of the solve.  chisq (may be NULL) receives the
 * weighted residual sum of squares.  0, or -1 (n < 1, p < 1, allocation or GSL failure). */
int fit_linear(const double *X, const double *y, const double *w, int n, int p,
               double *coef, double *chisq);

/* Same, with coef[j] >= 0 for every j (active set: drop the most negative, refit). */
int fit_linear_nonneg(const double *X, const double *y, const double *w, int n, int p,
                      double *coef, double *chisq);

/* Fit law->coef from law->pts (the last column is t_s) with features from
 * cost_point_features(law->name, row, m, r, hw, .); hw (may be NULL: unknown) is the
 * profile's cost_hw_of().  Sets ncoef = law_ncoef(name), coef, fit_median_rel and
 * fit_max_rel.  0, or -1 (unknown law, no points, a non-positive time, GSL failure). */
int fit_law_hw(prof_law_t *law, const model_t *m, const model_rank_t *r, const cost_hw_t *hw);

/* fit_law_hw() without hardware facts (laws whose features need none: allreduce, step). */
int fit_law(prof_law_t *law, const model_t *m, const model_rank_t *r);

/* Relative errors |pred - t| / t of law's current coefficients on its points: median
 * and max (either pointer may be NULL).  0, or -1 (no points, unknown law). */
int fit_law_errors(const prof_law_t *law, const model_t *m, const model_rank_t *r, const cost_hw_t *hw,
                   double *median_rel, double *max_rel);

/* One point's residual: its index in law->pts, measured and fitted seconds, and the
 * signed relative error (fitted - measured) / measured. */
typedef struct fit_resid {
    int index;
    double t, pred, rel;
} fit_resid_t;

/* Every point of law with its residual under law's current coefficients, into
 * out[0..law->npts), largest |rel| first (ties: point order).  0, or -1 (no points,
 * unknown law, a point without features). */
int fit_law_residuals(const prof_law_t *law, const model_t *m, const model_rank_t *r, const cost_hw_t *hw,
                      fit_resid_t *out);

#endif
