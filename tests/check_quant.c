/* check_quant: quant.h's quantiles against a sort of the same values -- exact up to the
 * exact limit, within QUANT_REL_ERR past it -- and its edge cases (no values, zeros, NAN). */
#include <check.h>
#include "check_run.h"
#include <math.h>
#include <stdlib.h>
#include "quant.h"

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The reference: rank h = p*(n-1) of the sorted values, linearly interpolated. */
static double ref_quantile(const double *sorted, long n, double p)
{
    double h = p * (double)(n - 1);
    long lo = (long)floor(h), hi = lo + 1 < n ? lo + 1 : lo;
    return sorted[lo] + (h - (double)lo) * (sorted[hi] - sorted[lo]);
}

/* A lognormal-ish latency in seconds, from rand(). */
static double draw(void)
{
    double u1 = (rand() + 1.0) / (RAND_MAX + 2.0), u2 = (rand() + 1.0) / (RAND_MAX + 2.0);
    double z = sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
    return exp(-3.0 + 1.5 * z);
}

static const double ps[] = { 0, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 1 };
#define NPS ((int)(sizeof ps / sizeof ps[0]))

START_TEST(exact_below_the_limit)
{
    enum { N = 1001 };
    double *v = malloc(N * sizeof *v);
    quant_t q;
    quant_init(&q, 0);
    srand(7);
    double sum = 0;
    for (int i = 0; i < N; i++) {
        v[i] = draw();
        sum += v[i];
        ck_assert_int_eq(quant_add(&q, v[i]), 0);
    }
    qsort(v, N, sizeof *v, cmp);
    ck_assert(quant_is_exact(&q));
    ck_assert_int_eq(q.n, N);
    ck_assert_double_eq_tol(quant_mean(&q), sum / N, 1e-12);
    for (int k = 0; k < NPS; k++) ck_assert_double_eq(quant_quantile(&q, ps[k]), ref_quantile(v, N, ps[k]));
    /* adding after a quantile (the values were reordered) still gives exact answers */
    ck_assert_int_eq(quant_add(&q, 100.0), 0);
    ck_assert_double_eq(quant_quantile(&q, 1.0), 100.0);
    quant_free(&q);
    free(v);
}
END_TEST

/* Exact mode's in-place selection on the shapes that break quickselects: sorted, reversed, all
 * equal, few distinct values (ties), an organ pipe, zeros and -0: every order statistic as
 * a sort of the same values gives. */
START_TEST(exact_on_adversarial_orders)
{
    enum { N = 5003 };
    double *v = malloc(N * sizeof *v);
    for (int shape = 0; shape < 6; shape++) {
        quant_t q;
        quant_init(&q, 0);
        srand(shape + 1);
        for (int i = 0; i < N; i++) {
            double x = shape == 0 ? i : shape == 1 ? N - i : shape == 2 ? 0.25
                       : shape == 3 ? (double)(rand() % 3) : shape == 4 ? (i < N / 2 ? i : N - i)
                       : (i % 3 == 0 ? -0.0 : i % 3 == 1 ? 0.0 : draw());
            ck_assert_int_eq(quant_add(&q, x), 0);
            v[i] = x < 0 || x == 0 ? 0 : x;
        }
        qsort(v, N, sizeof *v, cmp);
        for (long k = 0; k < N; k++) {
            double p = (double)k / (N - 1);
            ck_assert_msg(quant_quantile(&q, p) == ref_quantile(v, N, p), "shape %d rank %ld", shape, k);
        }
        ck_assert(!signbit(quant_quantile(&q, 0)));   /* -0 kept as 0 */
        quant_free(&q);
    }
    free(v);
}
END_TEST

START_TEST(sketch_within_its_bound)
{
    enum { N = 200000 };
    double *v = malloc(N * sizeof *v);
    quant_t q;
    quant_init(&q, 1000);
    srand(11);
    double sum = 0;
    for (int i = 0; i < N; i++) {
        v[i] = draw();
        sum += v[i];
        ck_assert_int_eq(quant_add(&q, v[i]), 0);
    }
    qsort(v, N, sizeof *v, cmp);
    ck_assert(!quant_is_exact(&q));
    ck_assert_ptr_null(q.vals);              /* the kept values are gone: bounded memory */
    ck_assert_int_eq(q.n, N);
    ck_assert_double_eq_tol(quant_mean(&q), sum / N, 1e-9 * sum / N);
    ck_assert_double_eq(quant_quantile(&q, 0), v[0]);
    ck_assert_double_eq(quant_quantile(&q, 1), v[N - 1]);
    for (int k = 0; k < NPS; k++) {
        double want = ref_quantile(v, N, ps[k]), got = quant_quantile(&q, ps[k]);
        ck_assert_msg(fabs(got - want) <= QUANT_REL_ERR * want * (1 + 1e-9), "p%g: %.9g, exact %.9g", 100 * ps[k],
                      got, want);
    }
    quant_free(&q);
    free(v);
}
END_TEST

START_TEST(zeros_empty_and_nan)
{
    quant_t q;
    quant_init(&q, 4);
    ck_assert(isnan(quant_mean(&q)));
    ck_assert(isnan(quant_quantile(&q, 0.5)));
    ck_assert_int_eq(quant_add(&q, NAN), 0);
    ck_assert_int_eq(q.n, 0);
    for (int i = 0; i < 6; i++) ck_assert_int_eq(quant_add(&q, 0.0), 0);
    ck_assert_int_eq(quant_add(&q, -1.0), 0);   /* counts as 0 */
    for (int i = 0; i < 3; i++) ck_assert_int_eq(quant_add(&q, 2.0), 0);
    ck_assert(!quant_is_exact(&q));
    ck_assert_int_eq(q.n, 10);
    ck_assert_double_eq(quant_quantile(&q, 0.5), 0.0);
    ck_assert_double_eq(quant_quantile(&q, 1.0), 2.0);
    ck_assert_double_eq_tol(quant_quantile(&q, 0.9), 2.0, 2.0 * QUANT_REL_ERR);
    ck_assert_double_eq_tol(quant_mean(&q), 0.6, 1e-15);
    quant_free(&q);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("quant");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, exact_below_the_limit);
    tcase_add_test(tc, exact_on_adversarial_orders);
    tcase_add_test(tc, sketch_within_its_bound);
    tcase_add_test(tc, zeros_empty_and_nan);
    suite_add_tcase(s, tc);
    return check_run(s);
}
