/* check_allreduce: the all-reduce calibration's host logic with a fake timer: the
 * fitted alpha-beta law recovers the timer's, lands in the profile, and round-trips. */
#include <check.h>
#include "check_run.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "allreduce.h"
#include "scenario.h"

typedef struct { double alpha, beta; unsigned seed; int fail_at; int calls; } fake_t;

static int fake_timer(void *vctx, double bytes, int reps, double *sec)
{
    fake_t *f = vctx;
    if (++f->calls == f->fail_at) return -1;
    for (int i = 0; i < reps; i++) {
        f->seed = f->seed * 1103515245u + 12345u;
        double noise = 1.0 + 0.02 * (((f->seed >> 8) & 0xffff) / 65536.0 - 0.5);
        sec[i] = (f->alpha + f->beta * bytes) * noise;
    }
    if (reps > 2) sec[0] *= 5;   /* an outlier the median must ignore */
    return 0;
}

START_TEST(recovers_alpha_beta)
{
    model_t m;
    char err[SCN_ERR_MAX], e2[256];
    ck_assert_msg(scn_load_model("models/qwen3.8-27b.yaml", &m, err) == 0, "%s", err);
    profile_t p;
    memset(&p, 0, sizeof p);
    fake_t f = { 25e-6, 1.0 / 150e9, 7, 0, 0 };
    ck_assert_msg(ar_measure(&p, &m, 2, "FakeGPU", fake_timer, &f, e2) == 0, "%s", e2);
    const prof_law_t *l = prof_find(&p, "allreduce");
    ck_assert_ptr_nonnull(l);
    ck_assert_int_eq(l->ncoef, 2);
    ck_assert_msg(fabs(l->coef[0] / 25e-6 - 1) < 0.05, "alpha %g", l->coef[0]);
    ck_assert_msg(fabs(l->coef[1] * 150e9 - 1) < 0.05, "beta %g", l->coef[1]);
    ck_assert(l->fit_median_rel < 0.03);
    ck_assert_ptr_nonnull(strstr(l->provenance, "NCCL"));
    ck_assert_int_eq(l->npts, 17);
    /* round trip through a file */
    char path[] = "/tmp/check_allreduce.XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    snprintf(p.gpu, sizeof p.gpu, "FakeGPU");
    p.tp = 2;
    ck_assert_int_eq(prof_save(path, &p), 0);
    profile_t q;
    ck_assert_msg(prof_load(path, &q, err) == 0, "%s", err);
    const prof_law_t *l2 = prof_find(&q, "allreduce");
    ck_assert_ptr_nonnull(l2);
    ck_assert(l2->coef[0] == l->coef[0] && l2->coef[1] == l->coef[1]);
    prof_free(&q);
    prof_free(&p);
    remove(path);
}
END_TEST

START_TEST(timer_failure_is_an_error)
{
    model_t m;
    char err[SCN_ERR_MAX], e2[256];
    ck_assert(scn_load_model("models/qwen3.8-27b.yaml", &m, err) == 0);
    profile_t p;
    memset(&p, 0, sizeof p);
    fake_t f = { 25e-6, 1e-11, 7, 5, 0 };
    ck_assert_int_eq(ar_measure(&p, &m, 2, "FakeGPU", fake_timer, &f, e2), -1);
    ck_assert_ptr_nonnull(strstr(e2, "failed"));
    ck_assert_ptr_null(prof_find(&p, "allreduce"));
    prof_free(&p);
}
END_TEST

int main(void)
{
    const check_test_t tests[] = {CHECK_TEST(recovers_alpha_beta), CHECK_TEST(timer_failure_is_an_error)};
    return check_main("allreduce", "host", tests, CHECK_N(tests), 0, NULL);
}
