/* check_copy: the copy calibration's host logic (calib/copy.c) with a fake timer: per
 * direction the fitted latency + bytes / bandwidth law recovers the timer's, an outlier among
 * the repeats is ignored (median), the laws land in the profile with their provenance and
 * round-trip through a file; a failing timer and bad sizes are refused. */
#include <check.h>
#include "check_run.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "copy.h"
#include "scenario.h"

typedef struct {
    double lat[CP__N], bw[CP__N];
    unsigned seed;
    int fail_at, calls;
    double max_seen;
} fake_t;

static int fake_timer(void *vctx, cp_dir_t d, double bytes, int reps, double *sec)
{
    fake_t *f = vctx;
    if (++f->calls == f->fail_at) return -1;
    if (bytes > f->max_seen) f->max_seen = bytes;
    for (int i = 0; i < reps; i++) {
        f->seed = f->seed * 1103515245u + 12345u;
        double noise = 1.0 + 0.02 * (((f->seed >> 8) & 0xffff) / 65536.0 - 0.5);
        sec[i] = (f->lat[d] + bytes / f->bw[d]) * noise;
    }
    sec[reps - 1] *= 8;   /* a disturbed timing the median must ignore */
    return 0;
}

START_TEST(recovers_latency_and_bandwidth)
{
    profile_t p;
    memset(&p, 0, sizeof p);
    char err[256], lerr[SCN_ERR_MAX];
    /* an H200-like card: HBM copies ~1.9 TB/s of payload, PCIe 5 ~55 GB/s */
    fake_t f = { { 4e-6, 8e-6, 9e-6 }, { 1.9e12, 55e9, 53e9 }, 11, 0, 0, 0 };
    ck_assert_msg(cp_measure(&p, "FakeGPU", 1 << 30, fake_timer, &f, err) == 0, "%s", err);
    ck_assert(f.max_seen == (double)(1 << 30));
    for (int d = 0; d < CP__N; d++) {
        const prof_law_t *l = prof_find(&p, cp_law_name((cp_dir_t)d));
        ck_assert_ptr_nonnull(l);
        ck_assert_int_eq(l->ncoef, 2);
        ck_assert_int_eq(l->npts, 19);                 /* 4 KiB .. 1 GiB */
        ck_assert_msg(fabs(l->coef[0] / f.lat[d] - 1) < 0.05, "%s latency %g", l->name, l->coef[0]);
        ck_assert_msg(fabs(l->coef[1] * f.bw[d] - 1) < 0.02, "%s bandwidth %g", l->name, 1 / l->coef[1]);
        ck_assert(l->fit_median_rel < 0.02);
        ck_assert_ptr_nonnull(strstr(l->provenance, "FakeGPU"));
        ck_assert_ptr_nonnull(strstr(l->provenance, "median of 9"));
    }
    /* round trip through a file */
    char path[] = "/tmp/check_copy.XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    snprintf(p.gpu, sizeof p.gpu, "FakeGPU");
    p.tp = 1;
    ck_assert_int_eq(prof_save(path, &p), 0);
    profile_t q;
    ck_assert_msg(prof_load(path, &q, lerr) == 0, "%s", lerr);
    for (int d = 0; d < CP__N; d++) {
        const prof_law_t *a = prof_find(&p, cp_law_name((cp_dir_t)d)), *b = prof_find(&q, cp_law_name((cp_dir_t)d));
        ck_assert_ptr_nonnull(b);
        ck_assert(a->coef[0] == b->coef[0] && a->coef[1] == b->coef[1] && b->npts == a->npts);
    }
    prof_free(&q);
    /* measuring again replaces the laws */
    f.lat[CP_D2D] = 2e-6;
    ck_assert_msg(cp_measure(&p, "FakeGPU", 1 << 20, fake_timer, &f, err) == 0, "%s", err);
    const prof_law_t *l = prof_find(&p, "copy.d2d");
    ck_assert_int_eq(l->npts, 9);                      /* 4 KiB .. 1 MiB */
    ck_assert_msg(fabs(l->coef[0] / 2e-6 - 1) < 0.05, "latency %g", l->coef[0]);
    int n = 0;
    for (int i = 0; i < p.nlaws; i++) n += !strcmp(p.laws[i].name, "copy.d2d");
    ck_assert_int_eq(n, 1);
    prof_free(&p);
    remove(path);
}
END_TEST

START_TEST(refuses_failures)
{
    profile_t p;
    memset(&p, 0, sizeof p);
    char err[256];
    fake_t f = { { 4e-6, 8e-6, 9e-6 }, { 1.9e12, 55e9, 53e9 }, 3, 25, 0, 0 };
    ck_assert_int_eq(cp_measure(&p, "FakeGPU", 1 << 30, fake_timer, &f, err), -1);
    ck_assert_ptr_nonnull(strstr(err, "copy.h2d timing failed"));
    f.fail_at = 0;
    ck_assert_int_eq(cp_measure(&p, "FakeGPU", 1000, fake_timer, &f, err), -1);
    ck_assert_ptr_nonnull(strstr(err, "4 KiB"));
    ck_assert_int_eq(cp_measure(&p, "FakeGPU", 4096, fake_timer, &f, err), -1);   /* one point */
    ck_assert_ptr_nonnull(strstr(err, "needs 2"));
    f.lat[CP_D2H] = -1;                                /* a timer gives a negative time */
    ck_assert_int_eq(cp_measure(&p, "FakeGPU", 1 << 16, fake_timer, &f, err), -1);
    ck_assert_ptr_nonnull(strstr(err, "copy.d2h timing gave"));
    prof_free(&p);
}
END_TEST

int main(void)
{
    const check_test_t tab[] = { CHECK_TEST(recovers_latency_and_bandwidth), CHECK_TEST(refuses_failures) };
    return check_main("copy", "copy", tab, CHECK_N(tab), 60, NULL);
}
