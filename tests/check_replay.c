/* check_replay: how the GPU replay lays a call's layers over its KV pool (sim/replay.c):
 * enough page sets that no layer finds the previous layers' KV in L2, each set a view of
 * the pool that the call's one block table reads at another offset; how --layer-order
 * interleaves a step's items and shares the layers' span among them. */
#include <check.h>
#include "check_run.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "replay.h"
#include "rescore.h"
#include "scenario.h"

#define MB (1024.0 * 1024)

START_TEST(sets_cover_three_l2)
{
    /* a short call (3.2 MB, one request of two 784-token pages) over 16 layers: 60 MB of L2
     * needs ceil(180 / 3.2) = 57 sets, so every layer gets its own */
    ck_assert_int_eq(replay_layer_sets(3.2 * MB, 60 * MB, 16), 16);
    /* 48 layers of it: the 57 sets */
    ck_assert_int_eq(replay_layer_sets(3.2 * MB, 60 * MB, 48), 48);
    ck_assert_int_eq(replay_layer_sets(3.2 * MB, 60 * MB, 80), 57);
    /* 20 MB: 9 sets; 180 MB: 1; a long call: 1 (its own KV is past the L2 already) */
    ck_assert_int_eq(replay_layer_sets(20 * MB, 60 * MB, 16), 9);
    ck_assert_int_eq(replay_layer_sets(180 * MB, 60 * MB, 16), 1);
    ck_assert_int_eq(replay_layer_sets(8000 * MB, 60 * MB, 16), 1);
    /* tiny calls stop at REPLAY_MAX_SETS; nonsense sizes and counts give one set */
    ck_assert_int_eq(replay_layer_sets(1024, 60 * MB, 1000), REPLAY_MAX_SETS);
    ck_assert_int_eq(replay_layer_sets(0, 60 * MB, 16), 1);
    ck_assert_int_eq(replay_layer_sets(-5, 60 * MB, 16), 1);
    ck_assert_int_eq(replay_layer_sets(3.2 * MB, 0, 16), 1);
    ck_assert_int_eq(replay_layer_sets(3.2 * MB, 60 * MB, 0), 1);
    ck_assert_int_eq(replay_layer_sets(3.2 * MB, 60 * MB, 1), 1);
}
END_TEST

START_TEST(views_fit_the_pool)
{
    const long pools[] = { 128, 129, 640, 1000, 4097, 250000 };
    for (int i = 0; i < (int)(sizeof pools / sizeof *pools); i++)
        for (int n = 1; n <= REPLAY_MAX_SETS; n++) {
            long nb = pools[i], stride = -1, limit = -1;
            int got = replay_layer_views(nb, n, &stride, &limit);
            ck_assert_int_eq(got, n);
            /* the last set's view still holds every id of the table */
            ck_assert_int_le((got - 1) * stride + limit, nb);
            ck_assert_int_ge(2 * limit, nb);
            if (got > 1) {
                ck_assert_int_ge(stride, 1);
                /* consecutive layers' views are a stride apart: a call of up to stride
                 * blocks reads memory of its own in every set */
                ck_assert_int_eq(stride, nb / (2L * got));
            } else {
                ck_assert_int_eq(stride, 0);
                ck_assert_int_eq(limit, nb);
            }
        }
}
END_TEST

START_TEST(views_of_a_small_pool)
{
    long stride = -1, limit = -1;
    /* fewer than two blocks a set: one set over the whole pool */
    ck_assert_int_eq(replay_layer_views(20, 16, &stride, &limit), 1);
    ck_assert_int_eq(stride, 0);
    ck_assert_int_eq(limit, 20);
    ck_assert_int_eq(replay_layer_views(32, 16, &stride, &limit), 16);
    ck_assert_int_eq(stride, 1);
    ck_assert_int_eq(limit, 17);
    ck_assert_int_eq(replay_layer_views(50, 0, &stride, &limit), 1);
    ck_assert_int_eq(limit, 50);
}
END_TEST

/* a window over runs: the mean, the range, the error against the mean, inside or how far out */
START_TEST(window_beside_its_runs)
{
    rescore_window_t w;
    const double m[3] = { 0.9, 1.1, 1.0 };
    rescore_window_figs(1.05, m, 3, 1.0605, &w);
    ck_assert(w.defined && w.runs == 3);
    ck_assert_double_eq_tol(w.mean, 1.0, 1e-12);
    ck_assert_double_eq(w.lo, 0.9);
    ck_assert_double_eq(w.hi, 1.1);
    ck_assert_double_eq_tol(w.err, 0.05, 1e-12);
    ck_assert_double_eq_tol(w.spread, 0.2, 1e-12);
    ck_assert_double_eq(w.excess, 0);                 /* inside the runs' range */
    ck_assert_double_eq_tol(w.sens, 0.01, 1e-12);
    rescore_window_figs(1.2, m, 3, NAN, &w);          /* above every run: by (1.2 - 1.1) / 1.0 */
    ck_assert_double_eq_tol(w.excess, 0.1, 1e-12);
    ck_assert(isnan(w.sens));
    rescore_window_figs(0.85, m, 3, NAN, &w);         /* below: signed as the error */
    ck_assert_double_eq_tol(w.excess, -0.05, 1e-12);
    const double u[2] = { 1.0, NAN };                 /* undefined in one run: no error */
    rescore_window_figs(1.0, u, 2, NAN, &w);
    ck_assert(!w.defined);
    ck_assert_int_eq(w.runs, 1);
    ck_assert(isnan(rescore_band_gap(0.9, 1.1, &w)));  /* and no band against it */
    rescore_window_figs(1.05, m, 3, NAN, &w);         /* the runs' range [0.9, 1.1], mean 1.0 */
    ck_assert_double_eq(rescore_band_gap(1.3, 1.05, &w), 0);      /* overlaps at one end */
    ck_assert_double_eq(rescore_band_gap(0.5, 1.5, &w), 0);       /* holds the whole range */
    ck_assert_double_eq_tol(rescore_band_gap(1.3, 1.2, &w), 0.1, 1e-12);    /* above: 1.2 - 1.1 */
    ck_assert_double_eq_tol(rescore_band_gap(0.7, 0.8, &w), -0.1, 1e-12);   /* below: 0.8 - 0.9 */
    ck_assert(isnan(rescore_band_gap(NAN, 1.0, &w)));
}
END_TEST

/* a percentile window's band in the prediction's values, how far one value crossing it moves it,
 * and the steep mark at RESCORE_STEEP */
START_TEST(percentile_window_band)
{
    double lo, hi;
    rescore_slope_band(0.5, &lo, &hi);
    ck_assert_double_eq_tol(lo, 0.45, 1e-12);
    ck_assert_double_eq_tol(hi, 0.55, 1e-12);
    rescore_slope_band(0.9, &lo, &hi);
    ck_assert_double_eq_tol(lo, 0.85, 1e-12);
    ck_assert_double_eq_tol(hi, 0.95, 1e-12);
    rescore_slope_band(0.99, &lo, &hi);             /* half the way to the maximum each side */
    ck_assert_double_eq_tol(lo, 0.985, 1e-12);
    ck_assert_double_eq_tol(hi, 0.995, 1e-12);
    rescore_slope_t s;
    /* 256 values: p45 / p50 / p55 = 0.072 / 0.086 / 0.100 s: 25.5 ranks over 0.028 s */
    rescore_slope_figs(0.5, 0.086, 0.072, 0.100, 256, &s);
    ck_assert_double_eq_tol(s.down, 0.072 / 0.086 - 1, 1e-12);
    ck_assert_double_eq_tol(s.up, 0.100 / 0.086 - 1, 1e-12);
    ck_assert_double_eq_tol(s.per_value, 0.028 / 25.5 / 0.086, 1e-12);
    ck_assert(s.steep);                              /* 1.3% a crossing */
    rescore_slope_figs(0.5, 1.0, 0.99, 1.01, 256, &s);   /* 0.08% a crossing */
    ck_assert(!s.steep);
    /* 0.5% a crossing exactly: steep from RESCORE_STEEP on */
    rescore_slope_figs(0.5, 1.0, 1.0 - 0.1 * 200 * RESCORE_STEEP / 2, 1.0 + 0.1 * 200 * RESCORE_STEEP / 2, 201, &s);
    ck_assert_double_eq_tol(s.per_value, RESCORE_STEEP, 1e-12);
    ck_assert(s.steep);
    rescore_slope_figs(0.5, 1.0, 0.9, 1.1, 1, &s);   /* one value: no rank to cross */
    ck_assert(isnan(s.per_value) && !s.steep);
    rescore_slope_figs(0.5, 0.0, 0.0, 0.1, 256, &s); /* a window of 0: no relative move */
    ck_assert(isnan(s.per_value) && !s.steep);
}
END_TEST

/* a step type over runs: each run's summed measured over summed predicted, their spread, and
 * whether the prediction (a ratio of 1) lies within the runs' range */
START_TEST(step_type_beside_its_runs)
{
    replay_stats_t st[2] = { { 10, 1.0, 0.98, 0.02, 0.05, 0, 0 }, { 12, 1.2, 1.20, 0.04, 0.08, 0, 0 } };
    rescore_type_t t;
    rescore_type_figs(st, 2, &t);
    ck_assert_int_eq(t.runs, 2);
    ck_assert_int_eq(t.steps, 11);
    ck_assert_double_eq_tol(t.median, 0.03, 1e-12);
    ck_assert_double_eq(t.max, 0.08);
    ck_assert_double_eq_tol(t.sum_err, 0.5 * (1 / 0.98 - 1), 1e-12);
    ck_assert_double_eq_tol(t.ratio, 0.99, 1e-12);    /* the runs' mean of measured / predicted */
    ck_assert_double_eq_tol(t.spread, 0.02 / 0.99, 1e-12);
    ck_assert_double_eq(t.excess, 0);                 /* ratios 0.98 and 1.00: 1 is within */
    st[1].measured = 1.14;                            /* ratios 0.98 and 0.95: priced above both */
    rescore_type_figs(st, 2, &t);
    ck_assert_double_eq_tol(t.excess, 0.02 / 0.965, 1e-12);
    st[0].n = st[1].n = 0;                            /* no step of the type in any run */
    rescore_type_figs(st, 2, &t);
    ck_assert_int_eq(t.runs, 0);
}
END_TEST

/* type ty's attention figures over two runs' records, through replay_stats as rescore reads them */
static void attn_of(const replay_rec_t *a, long na, const replay_rec_t *b, long nb, int ty, rescore_attn_t *t)
{
    replay_stats_t st[2];
    ck_assert_int_eq(replay_stats(a, na, ty, &st[0]), 0);
    ck_assert_int_eq(replay_stats(b, nb, ty, &st[1]), 0);
    rescore_attn_figs(st, 2, t);
}

/* a step type's attention apart from the rest of its steps, summed per run and averaged; a run
 * whose steps record no attention does not count */
START_TEST(attention_apart_from_the_rest)
{
    replay_rec_t a[3] = { { 1, STEP_MIXED, 0.020, 0.025, 0.006, 0.005, NAN, NAN, 0, 0, 0, 0, 0, 0, 0, 0, NAN, 0, 0, 0 },
                          { 2, STEP_DECODE_ONLY, 0.010, 0.010, 0.002, 0.004, NAN, NAN, 0, 0, 0, 0, 0, 0, 0, 0, NAN, 0, 0, 0 },
                          { 3, STEP_MIXED, 0.020, 0.015, 0.004, 0.005, NAN, NAN, 0, 0, 0, 0, 0, 0, 0, 0, NAN, 0, 0, 0 } };
    replay_rec_t b[1] = { { 1, STEP_MIXED, 0.040, 0.040, 0.010, 0.008, NAN, NAN, 0, 0, 0, 0, 0, 0, 0, 0, NAN, 0, 0, 0 } };
    rescore_attn_t t;
    attn_of(a, 3, b, 1, STEP_MIXED, &t);
    ck_assert_int_eq(t.runs, 2);
    /* run a: attention 0.010 priced against 0.010 measured, the rest 0.030 against 0.030; run b:
     * 0.010 against 0.008 (+25%), the rest 0.030 against 0.032 */
    ck_assert_double_eq_tol(t.attn_err, 0.5 * (0 + 0.25), 1e-12);
    ck_assert_double_eq_tol(t.rest_err, 0.5 * (0 + (0.030 / 0.032 - 1)), 1e-12);
    ck_assert_double_eq_tol(t.share, 0.5 * (0.010 / 0.040 + 0.008 / 0.040), 1e-12);
    attn_of(a, 3, b, 1, STEP_DECODE_ONLY, &t);
    ck_assert_int_eq(t.runs, 1);                      /* run b has no decode step */
    ck_assert_double_eq_tol(t.attn_err, 0.002 / 0.004 - 1, 1e-12);
    ck_assert_double_eq_tol(t.rest_err, 0.008 / 0.006 - 1, 1e-12);
    b[0].meas_attn = 0;                               /* a recording without the attention column */
    attn_of(a, 3, b, 1, STEP_MIXED, &t);
    ck_assert_int_eq(t.runs, 1);
    ck_assert_double_eq_tol(t.attn_err, 0, 1e-12);
}
END_TEST

/* The runs' noise (rescore_noise): run 2 is run 1 with its steps alternately e^s slower and
 * e^-s faster, the same shapes for the first 30 steps only; run 3 the same as run 1 but 2%
 * slower every step, shapes matching throughout.  Pairs: run 2's 30 steps, log ratios +-s about
 * their mean (0 for an even count); run 3's 40, all log 1.02, none about their mean. */
START_TEST(noise_from_the_runs)
{
    enum { N = 40 };
    const double s = 0.01;
    replay_rec_t r1[N], r2[N], r3[N];
    memset(r1, 0, sizeof r1);
    for (int i = 0; i < N; i++) {
        r1[i].no = i + 1, r1[i].type = STEP_DECODE_ONLY, r1[i].predicted = 0.010, r1[i].measured = 0.010;
        r1[i].shape = 100 + (unsigned long long)i;
        r2[i] = r1[i], r3[i] = r1[i];
        r2[i].measured = 0.010 * exp(i % 2 ? -s : s);
        if (i >= 30) r2[i].shape = 7;             /* the runs' schedules part here */
        r3[i].measured = 0.010 * 1.02;
    }
    const replay_rec_t *rec[3] = { r1, r2, r3 };
    long n[3] = { N, N, N };
    rescore_noise_t z;
    rescore_noise(rec, n, 3, &z);
    ck_assert_int_eq(z.paired, 30 + 40);
    /* sum of squares about each pair's mean: 30 s^2 (run 2) + 0 (run 3); 29 + 39 degrees */
    ck_assert_double_eq_tol(z.step, sqrt(30 * s * s / (29 + 39) / 2), 1e-12);
    /* each run's log(summed measured / summed predicted): 0, log cosh s, log 1.02 */
    double l[3] = { 0, log(cosh(s)), log(1.02) }, m = (l[0] + l[1] + l[2]) / 3, v = 0;
    for (int r = 0; r < 3; r++) v += (l[r] - m) * (l[r] - m) / 2;
    ck_assert_double_eq_tol(z.run, sqrt(v), 1e-12);
    /* fewer than RESCORE_MIN_PAIRED steps paired: no step noise read */
    for (int i = 5; i < N; i++) r2[i].shape = 7, r3[i].shape = 8;
    rescore_noise(rec, n, 3, &z);
    ck_assert_int_eq(z.paired, 10);
    ck_assert_double_eq(z.step, 0);
    ck_assert(z.run > 0);
    /* shapes not known (0): nothing paired */
    for (int i = 0; i < N; i++) r1[i].shape = 0;
    rescore_noise(rec, n, 3, &z);
    ck_assert_int_eq(z.paired, 0);
}
END_TEST

/* the ensemble's median: odd and even counts, a NAN member */
START_TEST(median_of_the_members)
{
    double a[5] = { 3, 1, 5, 2, 4 }, b[4] = { 4, 1, 3, 2 }, c[3] = { 1, NAN, 2 };
    ck_assert_double_eq(rescore_median(a, 5), 3);
    ck_assert_double_eq(rescore_median(b, 4), 2.5);
    ck_assert(isnan(rescore_median(c, 3)));
    ck_assert(isnan(rescore_median(a, 0)));
}
END_TEST

/* the --steps file: an item-by-item replay's columns as they always were; a back-to-back
 * replay's three more (span, items' sum, wall), which the recording's reader skips */
static void first_lines(const char *path, char *a, char *b, size_t n)
{
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_nonnull(fgets(a, (int)n, f));
    ck_assert_ptr_nonnull(fgets(b, (int)n, f));
    fclose(f);
}

START_TEST(steps_csv_back_to_back)
{
    char path[] = "/tmp/check_replay_XXXXXX", a[512], b[512], err[COST_ERR_MAX];
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    replay_rec_t r[2] = { { 1, STEP_MIXED, 0.02, 0.025, 0.005, 0.006, 1830, 600, 0, 0, 0, 0, 0, 0, 0, 0, NAN, 0, 0, 0 },
                          { 2, STEP_DECODE_ONLY, 0.01, 0.011, 0.002, 0.0025, NAN, NAN, 0, 0, 0, 0, 0, 0, 0, 0, NAN, 0, 0, 0 } };
    ck_assert_int_eq(replay_steps_csv(fopen(path, "w"), r, 2), 0);
    first_lines(path, a, b, sizeof a);
    ck_assert_str_eq(a, "step,type,predicted_s,measured_s,pred_attn_s,meas_attn_s,sm_clock_mhz,power_w,clock_reasons\n");
    ck_assert_str_eq(b, "1,mixed,0.02,0.025,0.005,0.006,1830,600,0\n");
    r[0].b2b = r[1].b2b = 1;
    r[0].span = 0.0245, r[0].items_sum = 0.0240, r[0].wall = 0.0262;
    r[1].span = 0.0108, r[1].items_sum = 0.0107, r[1].wall = 0.0115;
    r[0].reprep = 0.0003, r[0].gap = 0;   /* the first step: no gap before it */
    r[1].reprep = 0, r[1].gap = 0.0021;
    ck_assert_int_eq(replay_steps_csv(fopen(path, "w"), r, 2), 0);
    first_lines(path, a, b, sizeof a);
    ck_assert_str_eq(a, "step,type,predicted_s,measured_s,pred_attn_s,meas_attn_s,sm_clock_mhz,power_w,clock_reasons,"
                        "gpu_span_s,items_sum_s,wall_s,reprep_s,gap_s\n");
    ck_assert_str_eq(b, "1,mixed,0.02,0.025,0.005,0.006,1830,600,0,0.0245,0.024,0.0262,0.0003,0\n");
    /* read back: both steps, the clock column where it was */
    cost_model_t *cm = replay_recorded_new(path, NULL, err);
    ck_assert_msg(cm != NULL, "%s", err);
    const double *rec, *mod;
    ck_assert_int_eq(replay_recorded_clocks(cm, &rec, &mod), 2);
    ck_assert_double_eq(rec[0], 1830);
    ck_assert(isnan(rec[1]));
    cost_free(cm);
    /* a back-to-back recording from before reprep_s and gap_s (three extra columns) reads too */
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("step,type,predicted_s,measured_s,pred_attn_s,meas_attn_s,sm_clock_mhz,power_w,clock_reasons,"
          "gpu_span_s,items_sum_s,wall_s\n"
          "1,mixed,0.02,0.025,0.005,0.006,1830,600,0,0.0245,0.024,0.0262\n"
          "2,decode,0.01,0.011,0.002,0.0025,1710,500,0,0.0108,0.0107,0.0115\n", f);
    fclose(f);
    cm = replay_recorded_new(path, NULL, err);
    ck_assert_msg(cm != NULL, "%s", err);
    ck_assert_int_eq(replay_recorded_clocks(cm, &rec, &mod), 2);
    ck_assert_double_eq(rec[1], 1710);
    cost_free(cm);
    unlink(path);
}
END_TEST

/* --step-clock: a step's SM clock from the stamps, each SM's cycles over its own nanoseconds;
 * an SM stamped at one end only, or for another step, is left out */
START_TEST(stamps_give_the_step_clock)
{
    replay_stamp_t a[4] = { { 7, 1000, 5000 }, { 7, 90000000, 5100 }, { 6, 1, 1 }, { 7, 50, 5050 } };
    replay_stamp_t b[4] = { { 7, 1000 + 19800000, 10005000 }, { 7, 90000000 + 18000000, 10005100 },
                            { 7, 999999999, 10005200 }, { 5, 7, 7 } };
    /* SM 0: 19.8e6 cycles in 10 ms (1980 MHz), SM 1: 18e6 in 10 ms (1800 MHz): summed, 1890 */
    ck_assert_double_eq_tol(replay_stamp_mhz(a, b, 4, 7), 1890, 1e-9);
    ck_assert_double_eq_tol(replay_stamp_mhz(a, b, 1, 7), 1980, 1e-9);
    ck_assert(isnan(replay_stamp_mhz(a, b, 4, 8)));           /* no SM stamped for step 8 */
    b[0].clk = a[0].clk;                                        /* no cycle counted: none */
    b[1].ns = a[1].ns;
    ck_assert(isnan(replay_stamp_mhz(a, b, 2, 7)));
    b[0].clk = a[0].clk + 10;                                   /* 0.001 MHz: no card's clock */
    ck_assert(isnan(replay_stamp_mhz(a, b, 1, 7)));
}
END_TEST

/* --step-clock's column: written last, read back beside sm_clock_mhz; replay_recorded_clocks
 * returns it once asked to; a recording without it stays on sm_clock_mhz */
START_TEST(steps_csv_step_clock)
{
    char path[] = "/tmp/check_replay_XXXXXX", a[512], b[512], err[COST_ERR_MAX];
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    replay_rec_t r[2] = { { 1, STEP_MIXED, 0.02, 0.025, 0.005, 0.006, 1830, 600, 0, 1, 0.0245, 0.024, 0.0262, 0, 0, 1, 1791.26, 0, 0, 0 },
                          { 2, STEP_DECODE_ONLY, 0.01, 0.011, 0.002, 0.0025, 1830, 500, 0, 1, 0.0108, 0.0107, 0.0115, 0,
                            0.0021, 1, NAN, 0, 0, 0 } };
    ck_assert_int_eq(replay_steps_csv(fopen(path, "w"), r, 2), 0);
    first_lines(path, a, b, sizeof a);
    ck_assert_str_eq(a, "step,type,predicted_s,measured_s,pred_attn_s,meas_attn_s,sm_clock_mhz,power_w,clock_reasons,"
                        "gpu_span_s,items_sum_s,wall_s,reprep_s,gap_s,sm_mhz_step\n");
    ck_assert_str_eq(b, "1,mixed,0.02,0.025,0.005,0.006,1830,600,0,0.0245,0.024,0.0262,0,0,1791.3\n");
    cost_model_t *cm = replay_recorded_new(path, NULL, err);
    ck_assert_msg(cm != NULL, "%s", err);
    const double *rec, *mod;
    ck_assert_int_eq(replay_recorded_has_step_clock(cm), 1);
    ck_assert_int_eq(replay_recorded_clocks(cm, &rec, &mod), 2);
    ck_assert_double_eq(rec[0], 1830);                          /* NVML's until asked */
    ck_assert_int_eq(replay_recorded_use_step_clock(cm), 0);
    ck_assert_int_eq(replay_recorded_use_step_clock(cm), 0);    /* twice: still the step's */
    ck_assert_int_eq(replay_recorded_clocks(cm, &rec, &mod), 2);
    ck_assert_double_eq_tol(rec[0], 1791.3, 1e-9);
    ck_assert(isnan(rec[1]));                                   /* "nan": no SM stamped at both ends */
    cost_free(cm);
    /* item by item (no back-to-back columns): the column still last */
    r[0].b2b = r[1].b2b = 0;
    ck_assert_int_eq(replay_steps_csv(fopen(path, "w"), r, 2), 0);
    first_lines(path, a, b, sizeof a);
    ck_assert_str_eq(a, "step,type,predicted_s,measured_s,pred_attn_s,meas_attn_s,sm_clock_mhz,power_w,clock_reasons,"
                        "sm_mhz_step\n");
    ck_assert_str_eq(b, "1,mixed,0.02,0.025,0.005,0.006,1830,600,0,1791.3\n");
    /* without --step-clock: no column, and the reader keeps NVML's clock */
    r[0].step_clk = r[1].step_clk = 0;
    ck_assert_int_eq(replay_steps_csv(fopen(path, "w"), r, 2), 0);
    first_lines(path, a, b, sizeof a);
    ck_assert_str_eq(a, "step,type,predicted_s,measured_s,pred_attn_s,meas_attn_s,sm_clock_mhz,power_w,clock_reasons\n");
    cm = replay_recorded_new(path, NULL, err);
    ck_assert_msg(cm != NULL, "%s", err);
    ck_assert_int_eq(replay_recorded_has_step_clock(cm), 0);
    ck_assert_int_eq(replay_recorded_use_step_clock(cm), -1);
    ck_assert_int_eq(replay_recorded_clocks(cm, &rec, &mod), 2);
    ck_assert_double_eq(rec[0], 1830);
    cost_free(cm);
    unlink(path);
}
END_TEST

/* --layer-order's column: written after the others where the replay ran with it (back to back),
 * each step's 1 (layer by layer) or 0 (item order); read back as the steps layer by layer; a
 * recording without it has none */
START_TEST(steps_csv_layer_order)
{
    char path[] = "/tmp/check_replay_XXXXXX", a[512], b[512], err[COST_ERR_MAX];
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    replay_rec_t r[3];
    memset(r, 0, sizeof r);
    for (int i = 0; i < 3; i++) {
        r[i].no = i + 1;
        r[i].type = i ? STEP_DECODE_ONLY : STEP_MIXED;
        r[i].predicted = r[i].measured = r[i].span = r[i].items_sum = r[i].wall = 0.01 * (i + 1);
        r[i].clock_mhz = r[i].power_w = NAN;
        r[i].b2b = r[i].lo = 1;
        r[i].layered = i != 1;
    }
    ck_assert_int_eq(replay_steps_csv(fopen(path, "w"), r, 3), 0);
    first_lines(path, a, b, sizeof a);
    ck_assert_str_eq(a, "step,type,predicted_s,measured_s,pred_attn_s,meas_attn_s,sm_clock_mhz,power_w,clock_reasons,"
                        "gpu_span_s,items_sum_s,wall_s,reprep_s,gap_s,layer_order\n");
    ck_assert_str_eq(b, "1,mixed,0.01,0.01,0,0,nan,nan,0,0.01,0.01,0.01,0,0,1\n");
    cost_model_t *cm = replay_recorded_new(path, NULL, err);
    ck_assert_msg(cm != NULL, "%s", err);
    long layered = -1, steps = -1;
    ck_assert_int_eq(replay_recorded_layer_order(cm, &layered, &steps), 1);
    ck_assert_int_eq(layered, 2);
    ck_assert_int_eq(steps, 3);
    cost_free(cm);
    /* item by item: no such column (every item runs alone) */
    for (int i = 0; i < 3; i++) r[i].b2b = 0;
    ck_assert_int_eq(replay_steps_csv(fopen(path, "w"), r, 3), 0);
    first_lines(path, a, b, sizeof a);
    ck_assert_str_eq(a, "step,type,predicted_s,measured_s,pred_attn_s,meas_attn_s,sm_clock_mhz,power_w,clock_reasons\n");
    cm = replay_recorded_new(path, NULL, err);
    ck_assert_msg(cm != NULL, "%s", err);
    ck_assert_int_eq(replay_recorded_layer_order(cm, &layered, &steps), 0);
    ck_assert_int_eq(layered, 0);
    cost_free(cm);
    unlink(path);
}
END_TEST

/* A back-to-back recording's gap_s column (the GPU's idle before each step) is read back for
 * rescore; a recording without it has none. */
START_TEST(recording_gaps_read)
{
    char path[] = "/tmp/check_replay_XXXXXX", err[COST_ERR_MAX];
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    FILE *f = fdopen(fd, "w");
    ck_assert_ptr_nonnull(f);
    fputs("step,type,measured_s,gap_s,sm_clock_mhz\n1,prefill,0.02,0,1980\n2,decode,0.01,0.0042,1970\n"
          "3,mixed,0.03,1.5e-3,1850\n", f);
    fclose(f);
    cost_model_t *cm = replay_recorded_new(path, NULL, err);
    ck_assert_msg(cm != NULL, "%s", err);
    const double *g;
    ck_assert_int_eq(replay_recorded_gaps(cm, &g), 3);
    ck_assert_double_eq(g[0], 0);
    ck_assert_double_eq(g[1], 0.0042);
    ck_assert_double_eq(g[2], 1.5e-3);
    cost_free(cm);
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("step,type,measured_s\n1,prefill,0.02\n", f);
    fclose(f);
    ck_assert_ptr_nonnull(cm = replay_recorded_new(path, NULL, err));
    ck_assert_int_eq(replay_recorded_gaps(cm, &g), 0);
    ck_assert_ptr_null(g);
    cost_free(cm);
    /* a back-to-back MoE step's re-preparations (reprep_s) idled the card inside it: counted with
     * the idle before it */
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("step,type,measured_s,reprep_s,gap_s\n1,prefill,0.02,0,0\n2,decode,0.01,0.002,0.004\n", f);
    fclose(f);
    ck_assert_ptr_nonnull(cm = replay_recorded_new(path, NULL, err));
    ck_assert_int_eq(replay_recorded_gaps(cm, &g), 2);
    ck_assert_double_eq(g[0], 0);
    ck_assert_double_eq_tol(g[1], 0.006, 1e-15);
    cost_free(cm);
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("step,type,measured_s,reprep_s,gap_s\n1,prefill,0.02,x,0\n", f);
    fclose(f);
    ck_assert_ptr_null(replay_recorded_new(path, NULL, err));
    ck_assert_msg(strstr(err, ":2:16: reprep_s: expected") != NULL, "%s", err);
    /* a negative idle is no recording's */
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("step,type,measured_s,gap_s\n1,prefill,0.02,-0.001\n", f);
    fclose(f);
    ck_assert_ptr_null(replay_recorded_new(path, NULL, err));
    ck_assert_msg(strstr(err, ":2:16: gap_s: expected") != NULL, "%s", err);
    unlink(path);
}
END_TEST

/* --back-to-back: a step's grouped MoE GEMMs each take a slot of the timer (replay_moe_slot), one
 * shape twice shares one, and a step with more distinct shapes than REPLAY_MOE_SLOTS is refused */
START_TEST(moe_slots_one_per_shape)
{
    replay_moe_slots_t s = { .n = 0 };
    double up[6] = { 100, 128, 8, 0.5, 1536, 2048 }, down[6] = { 100, 128, 8, 0.5, 2048, 768 };
    int fresh = -1;
    ck_assert_int_eq(replay_moe_slot(&s, up, &fresh), 0);
    ck_assert_int_eq(fresh, 1);
    ck_assert_int_eq(replay_moe_slot(&s, down, &fresh), 1);
    ck_assert_int_eq(fresh, 1);
    ck_assert_int_eq(replay_moe_slot(&s, up, &fresh), 0);      /* the MTP layer's at the same tokens */
    ck_assert_int_eq(fresh, 0);
    for (int i = 2; i < REPLAY_MOE_SLOTS; i++) {
        double k[6] = { 100 + i, 128, 8, 0.5, 1536, 2048 };
        ck_assert_int_eq(replay_moe_slot(&s, k, &fresh), i);
        ck_assert_int_eq(fresh, 1);
    }
    double more[6] = { 7, 128, 8, 0.5, 1536, 2048 }, skew[6] = { 100, 128, 8, 0.25, 1536, 2048 };
    ck_assert_int_eq(replay_moe_slot(&s, more, &fresh), -1);   /* a ninth shape: refused */
    ck_assert_int_eq(replay_moe_slot(&s, skew, &fresh), -1);   /* another skew is another shape */
    ck_assert_int_eq(replay_moe_slot(&s, down, &fresh), 1);    /* the ones it holds still found */
    ck_assert_int_eq(s.n, REPLAY_MOE_SLOTS);
    s.n = 0;                                                   /* the next step */
    ck_assert_int_eq(replay_moe_slot(&s, down, &fresh), 0);
    ck_assert_int_eq(fresh, 1);
}
END_TEST

/* a library model and its one-GPU rank */
static void load_at_tp1(const char *path, model_t *m, model_rank_t *r)
{
    char err[SCN_ERR_MAX];
    ck_assert_msg(scn_load_model(path, m, err) == 0, "%s", err);
    ck_assert_int_eq(model_rank(m, 1, r), 0);
}

typedef struct {
    const model_t *m;
    replay_moe_slots_t s;
    int grouped, refused;
} moe_step_t;
/* the replay's grouped GEMMs of a step (sim/replay_gpu.cu gm_item: the busiest group's item, its
 * job keyed by the layer's tokens and the model's routing, as prep_job keys it) */
static int moe_step_item(void *ctx, const cost_item_t *it)
{
    moe_step_t *x = ctx;
    if (it->kind != CI_GEMM || it->moe != 2) return 0;
    double key[6] = { (double)(long)it->tokens, x->m->moe_experts, x->m->moe_topk, x->m->moe_skew, (double)(long)it->n,
                      (double)(long)it->k };
    int fresh;
    if (replay_moe_slot(&x->s, key, &fresh) < 0) x->refused++;
    x->grouped++;
    return 0;
}

/* Every step of the MoE models holds its grouped GEMMs in the timer's slots at once: 2 shapes a
 * step (gate_up, down), 4 with MTP's passes 2..K at their own token count (pass 1's are the main
 * model's), never more than REPLAY_MOE_SLOTS */
START_TEST(moe_steps_fit_the_slots)
{
    const char *paths[] = { "models/qwen3-30b-a3b.yaml", "models/qwen3-next-80b-a3b.yaml" };
    const long tokens[] = { 1, 5, 64, 4096 };
    for (int pi = 0; pi < 2; pi++) {
        model_t m;
        model_rank_t r;
        load_at_tp1(paths[pi], &m, &r);
        for (int ti = 0; ti < CHECK_N(tokens); ti++)
            for (int k = 0; k <= 4; k++) {
                if (k && !m.mtp_layers) continue;
                route_plan_t draft;
                memset(&draft, 0, sizeof draft);
                int rows = tokens[ti] < 4 ? (int)tokens[ti] : 4;
                cost_step_t in = { .tokens = tokens[ti], .rows = rows, .decode_rows = rows, .sampled = rows,
                                   .spec_k = k, .draft_plan = k ? &draft : NULL };
                moe_step_t x = { .m = &m };
                ck_assert_int_eq(cost_enumerate(&m, &r, &in, moe_step_item, &x), 0);
                int passes = 1 + (k > 0) + (k > 1);             /* main, MTP pass 1, passes 2..K */
                ck_assert_int_eq(x.grouped, 2 * passes);
                ck_assert_int_eq(x.refused, 0);
                ck_assert_int_eq(x.s.n, k > 1 && rows != tokens[ti] ? 4 : 2);
                ck_assert_int_le(x.s.n, REPLAY_MOE_SLOTS);
            }
    }
}
END_TEST

/* --layer-order: a dense model's decode step runs its attention, GEMMs and elementwise work once
 * a layer (the layers interleave) and only lm_head's one GEMM after them; replay_layer_count
 * finds the model's layers from the items' runs as the replay counts them (gm_item: each item's
 * count); a hybrid model's items in some layers only: none (item order) */
typedef struct {
    int reps[64], n, after_gemm, after_other;
} lo_step_t;
static int lo_step_item(void *ctx, const cost_item_t *it)
{
    lo_step_t *x = ctx;
    int gpu = it->kind == CI_ATTN || it->kind == CI_BRIDGE || it->kind == CI_GEMM || it->kind == CI_GDN
              || it->kind == CI_ELEM;
    ck_assert_int_lt(x->n, 64);
    x->reps[x->n++] = gpu ? (int)it->count : 0;
    return 0;
}
START_TEST(layer_order_of_a_dense_step)
{
    const char *paths[] = { "models/qwen3-14b.yaml", "models/llama-3.1-8b.yaml" };
    for (int pi = 0; pi < 2; pi++) {
        model_t m;
        model_rank_t r;
        load_at_tp1(paths[pi], &m, &r);
        cost_step_t in = { .tokens = 64, .rows = 64, .decode_rows = 64, .sampled = 64 };
        lo_step_t x;
        memset(&x, 0, sizeof x);
        ck_assert_int_eq(cost_enumerate(&m, &r, &in, lo_step_item, &x), 0);
        int layers = replay_layer_count(x.reps, x.n), in_layers = 0, after = 0;
        ck_assert_int_eq(layers, m.n_layers);
        for (int i = 0; i < x.n; i++) {
            if (x.reps[i] == layers) in_layers++;
            else if (x.reps[i] > 0) {
                ck_assert_int_eq(x.reps[i], 1);       /* lm_head */
                after++;
            }
        }
        ck_assert_int_ge(in_layers, 5);                /* qkv, o, gate|up, down, the elementwise work */
        ck_assert_int_eq(after, 1);
    }
    ck_assert_int_eq(replay_layer_count(NULL, 0), 0);
    const int none[3] = { 0, 0, 0 }, hybrid[4] = { 12, 48, 48, 1 };
    ck_assert_int_eq(replay_layer_count(none, 3), 0);
    /* a hybrid model's attention in 12 of 48 layers: not placed, the step runs in item order */
    ck_assert_int_eq(replay_layer_count(hybrid, 4), -1);
}
END_TEST

/* The layers' span shared by the middle layer's spans; an item after the layers keeps its own;
 * an item without GPU work keeps its seconds; a middle layer of no time shares equally */
START_TEST(layer_order_shares_the_span)
{
    const int reps[5] = { 40, 0, 40, 1, 40 };
    const double sample[5] = { 0.2e-3, 0, 0.6e-3, 0, 0.2e-3 }, after[5] = { 0, 0, 0, 0.5e-3, 0 };
    double sec[5] = { -1, 7e-6, -1, -1, -1 };
    replay_layer_share(reps, 5, 40, sample, after, 0.041, sec);
    ck_assert_double_eq_tol(sec[0], 0.041 * 0.2, 1e-12);
    ck_assert_double_eq_tol(sec[2], 0.041 * 0.6, 1e-12);
    ck_assert_double_eq_tol(sec[4], 0.041 * 0.2, 1e-12);
    ck_assert_double_eq_tol(sec[0] + sec[2] + sec[4], 0.041, 1e-12);   /* the layers' span, all of it */
    ck_assert_double_eq_tol(sec[3], 0.5e-3, 1e-15);
    ck_assert_double_eq_tol(sec[1], 7e-6, 1e-18);                      /* no GPU work: untouched */
    const double zero[5] = { 0, 0, 0, 0, 0 };
    replay_layer_share(reps, 5, 40, zero, after, 0.03, sec);
    ck_assert_double_eq_tol(sec[0], 0.01, 1e-12);
    ck_assert_double_eq_tol(sec[2], 0.01, 1e-12);
    ck_assert_double_eq_tol(sec[4], 0.01, 1e-12);
}
END_TEST

int main(void)
{
    const check_test_t tests[] = { CHECK_TEST(sets_cover_three_l2), CHECK_TEST(views_fit_the_pool),
                                   CHECK_TEST(views_of_a_small_pool), CHECK_TEST(window_beside_its_runs), CHECK_TEST(percentile_window_band),
                                   CHECK_TEST(step_type_beside_its_runs), CHECK_TEST(attention_apart_from_the_rest),
                                   CHECK_TEST(noise_from_the_runs), CHECK_TEST(median_of_the_members),
                                   CHECK_TEST(steps_csv_back_to_back),
                                   CHECK_TEST(stamps_give_the_step_clock), CHECK_TEST(steps_csv_step_clock),
                                   CHECK_TEST(steps_csv_layer_order),
                                   CHECK_TEST(recording_gaps_read), CHECK_TEST(moe_slots_one_per_shape),
                                   CHECK_TEST(moe_steps_fit_the_slots), CHECK_TEST(layer_order_of_a_dense_step),
                                   CHECK_TEST(layer_order_shares_the_span) };
    return check_main("replay", "layers", tests, CHECK_N(tests), 0, NULL);
}
