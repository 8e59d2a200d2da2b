/* check_sustain.c: calib's sustained-load probes (calib/sustain.c) against a fake timer
 * whose card has a clock: each job pulls it towards its own settling point (the heater
 * all the way down, the light load not at all) with known time constants, and each
 * job's time grows with the clock's drop by its own known factor.  The probes must
 * recover the clocks, the time constants, and every law's hot and heat. */
#include <check.h>
#include "check_run.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "../calib/sustain.h"

#define F_COLD 1980.0
#define F_HOT 1600.0
#define TAU_UP 0.06
#define TAU_DOWN 0.10

typedef struct {
    double p;                     /* the card's load state: 0 cold .. 1 the heater's */
    double knee;                  /* the clock falls only for p above it (0: linear in p) */
    double watts;                 /* the power read (0: the timer reads none) */
    int noclock;
} fake_t;

/* per job: calibrated time, hot (time factor at F_HOT), heat (its own settling point) */
static calib_job_t jobs[8];
static double t_s[8], hot_of[8], heat_of[8];
static int njobs;

static double job_hot(const calib_job_t *j) { return hot_of[j - jobs]; }
static double job_heat(const calib_job_t *j) { return heat_of[j - jobs]; }

static fake_t fk;

/* the clock at load state p: flat up to the knee, then linear down to F_HOT at p = 1 */
static double f_of(double p)
{
    double x = fk.knee > 0 ? (p - fk.knee) / (1 - fk.knee) : p;
    return F_COLD - (x > 0 ? x : 0) * (F_COLD - F_HOT);
}

static int f_prepare(calib_timer_t *t, const calib_job_t *j) { (void)t; (void)j; return 0; }

static int f_run(calib_timer_t *t, const calib_job_t *j, int iters, double *sec)
{
    fake_t *k = t->impl;
    double t0 = t_s[j - jobs], total = 0;
    for (int i = 0; i < iters; i++) {
        double drop = (F_COLD - f_of(k->p)) / (F_COLD - F_HOT);
        double dt = t0 * (1 + (job_hot(j) - 1) * drop);
        double target = job_heat(j);
        double tau = target > k->p ? TAU_UP : TAU_DOWN;
        k->p = target + (k->p - target) * exp(-dt / tau);
        total += dt;
    }
    *sec = total / iters;
    return 0;
}

static int f_clock(calib_timer_t *t, double *mhz)
{
    fake_t *k = t->impl;
    if (k->noclock) return -1;
    *mhz = f_of(k->p);
    return 0;
}

static int f_power(calib_timer_t *t, double *watts)
{
    fake_t *k = t->impl;
    *watts = k->watts;
    return k->watts > 0 ? 0 : -1;
}

/* the law names progress lines print (calib.c's table is not linked here) */
const calib_law_spec_t *calib_laws(int *n)
{
    static calib_law_spec_t t[4];
    static const char *const names[4] = { "gemm", "attn.decode_xqa.fp16", "attn.prefill_generic.fp16", "gdn" };
    for (int i = 0; i < 4; i++) t[i].name = names[i];
    if (n) *n = 4;
    return t;
}

static calib_timer_t ft;

static void add(calib_kernel_t kind, int law, double t, double hot, double heat)
{
    calib_job_t *j = &jobs[njobs];
    memset(j, 0, sizeof *j);
    j->kernel = kind;
    j->law = law;
    j->rows = j->q = 1;
    j->m = j->n = j->k = 1;
    t_s[njobs] = t;
    hot_of[njobs] = hot;
    heat_of[njobs] = heat;
    njobs++;
}

static void setup(void)
{
    njobs = 0;
    memset(&fk, 0, sizeof fk);
    fk.p = 0;
    memset(&ft, 0, sizeof ft);
    ft.name = "fake";
    ft.impl = &fk;
    ft.prepare = f_prepare;
    ft.run = f_run;
    ft.clock = f_clock;
    ft.power = f_power;
    /* law 0: the GEMMs (the heater is the larger: it settles at F_HOT and, timed at its own
     * clock already, does not slow down further); law 1: XQA decode (the light load and a
     * probe); law 2: a kernel that heats half as much and slows 25% at F_HOT */
    add(CK_GEMM, 0, 1e-3, 1.0, 1.0);
    jobs[0].m = 4096, jobs[0].n = 16480, jobs[0].k = 5120;
    add(CK_GEMM, 0, 3e-4, 1.0, 1.0);
    add(CK_DECODE_XQA, 1, 1.7e-4, 1.15, 0.0);
    jobs[2].seq_len = 240000;
    add(CK_DECODE_XQA, 1, 4e-5, 1.15, 0.0);
    jobs[3].seq_len = 16384;
    add(CK_PREFILL_GENERIC, 2, 2e-3, 1.25, 0.5);
    add(CK_PREFILL_GENERIC, 2, 6e-3, 1.25, 0.5);
    add(CK_PREFILL_GENERIC, 2, 1e-2, 1.25, 0.5);
    /* a compute-bound GEMM (m >= 512, 0.4 ms): it slows as 1 / clock and heats as the heater;
     * law 4, which the law probes (nlaws 4 below) leave alone */
    add(CK_GEMM, 4, 4e-4, F_COLD / F_HOT, 1.0);
    jobs[7].m = 2048, jobs[7].n = 5120, jobs[7].k = 5120;
}

START_TEST(recovers_the_card)
{
    setup();
    calib_sustain_t s;
    FILE *devnull = fopen("/dev/null", "w");
    ck_assert_int_eq(calib_sustain(&ft, jobs, t_s, njobs, 4, &s, devnull), 0);
    fclose(devnull);
    ck_assert_msg(s.ok, "not measured: %s", s.why);
    ck_assert_double_eq_tol(s.clock_cold, F_COLD, 1.0);
    ck_assert_double_eq_tol(s.clock_hot, F_HOT, 2.0);
    /* traced in ~2 ms batches: within a batch and a bit */
    ck_assert_double_eq_tol(s.tau_up, TAU_UP, 0.004);
    ck_assert_double_eq_tol(s.tau_down, TAU_DOWN, 0.004);
    /* hot: timed right after 0.12 s of heater (2 tau_up: the clock is 13% short of F_HOT) */
    ck_assert_double_eq_tol(s.hot[1], 1.15, 0.03);
    ck_assert_double_eq_tol(s.hot[2], 1.25, 0.04);
    ck_assert_double_eq_tol(s.hot[0], 1.0, 1e-9);
    ck_assert_double_eq_tol(s.heat[0], 1.0, 0.02);
    ck_assert_double_eq_tol(s.heat[1], 0.0, 0.02);
    ck_assert_double_eq_tol(s.heat[2], 0.5, 0.03);
    ck_assert(isnan(s.hot[3]) && isnan(s.heat[3]));   /* a law with no points */
    ck_assert_msg(s.seconds > 2 && s.seconds < 40, "%g s", s.seconds);
}
END_TEST

/* The clock against load: a card whose clock falls only above 40% of the heater's load.
 * Duty-cycled with the light load (a heater run of a ms, then b ms of the light load), the
 * load state settles into a cycle between p0 (after the light load) and p1 (after the
 * heater): p1 = 1 - (1 - p0) e^(-a/TAU_UP), p0 = p1 e^(-b/TAU_DOWN).  The probe reads the
 * clock after each part, so each curve point must be the mean of f_of(p0) and f_of(p1):
 * F_COLD below the knee, then down to F_HOT at duty 1; the duties rise, and the power is
 * read where the timer has it. */
START_TEST(curve_finds_the_knee)
{
    setup();
    fk.knee = 0.4;
    fk.watts = 500;
    calib_sustain_t s;
    char *log = NULL;
    size_t logn = 0;
    FILE *pf = open_memstream(&log, &logn);
    ck_assert_int_eq(calib_sustain(&ft, jobs, t_s, njobs, 4, &s, pf), 0);
    fclose(pf);
    /* the curve's points and the GEMMs back to back (both GEMMs: heat 1, the heater's clock) */
    ck_assert_msg(strstr(log, "clock at duty 0.10: 1980 MHz, 500 W") != NULL, "%s", log);
    ck_assert_msg(strstr(log, "gemm m=4096 n=16480 k=5120 back to back, 1.00 of the heater's FLOP rate: 1600 MHz, 500 W")
                  != NULL, "%s", log);
    free(log);
    ck_assert_msg(s.ok, "not measured: %s", s.why);
    ck_assert_double_eq_tol(s.clock_hot, F_HOT, 2.0);
    ck_assert_int_eq(s.ncurve, SUSTAIN_CURVE_N);
    int flat = 0;
    for (int q = 0; q < s.ncurve; q++) {
        double d = s.curve[q][0], want = (q + 1.0) / SUSTAIN_CURVE_N;
        ck_assert_msg(fabs(d - want) < 0.03, "duty %g at point %d", d, q);
        if (q) ck_assert(d > s.curve[q - 1][0]);
        /* the cycle as the probe builds it: 20 ms, or one heater run (1 ms here) */
        double cyc = fmax(0.02, t_s[0] / want), a = lround(cyc * want / t_s[0]) * t_s[0];
        double b = want < 1 ? lround(cyc * (1 - want) / t_s[2]) * t_s[2] : 0;
        double eu = exp(-a / TAU_UP), ed = exp(-b / TAU_DOWN), p0 = (1 - eu) * ed / (1 - eu * ed);
        double p1 = 1 - (1 - p0) * eu, f = b > 0 ? 0.5 * (f_of(p0) + f_of(p1)) : f_of(p1);
        /* within 4% of the drop: the light load runs slower when the clock is down (hot 1.15),
         * a longer light part than b; and the clock falls as the duty rises */
        if (q) ck_assert(s.curve[q][1] <= s.curve[q - 1][1] + 1e-9);
        ck_assert_msg(fabs(s.curve[q][1] - f) < 15, "duty %g: %g MHz, expected %g", d, s.curve[q][1], f);
        ck_assert_double_eq(s.curve[q][2], 500);
        flat += s.curve[q][1] > F_COLD - 1;
    }
    ck_assert_int_ge(flat, 2);      /* duty 0.1 and 0.2 stay below the knee */
    ck_assert_double_eq_tol(s.curve[SUSTAIN_CURVE_N - 1][1], F_HOT, 2.0);
    /* without a power reading: 0 W */
    setup();
    ck_assert_int_eq(calib_sustain(&ft, jobs, t_s, njobs, 4, &s, NULL), 0);
    ck_assert(s.ok && s.ncurve == SUSTAIN_CURVE_N && s.curve[0][2] == 0);
}
END_TEST

START_TEST(skips_without_a_clock_or_a_drop)
{
    setup();
    calib_sustain_t s;
    fk.noclock = 1;
    ck_assert_int_eq(calib_sustain(&ft, jobs, t_s, njobs, 3, &s, NULL), 0);
    ck_assert(!s.ok && strstr(s.why, "clock"));
    ck_assert(isnan(s.hot[0]));
    /* a card whose clock does not move under the heater */
    setup();
    heat_of[0] = heat_of[1] = 0;
    ck_assert_int_eq(calib_sustain(&ft, jobs, t_s, njobs, 3, &s, NULL), 0);
    ck_assert(!s.ok && strstr(s.why, "did not settle"));
    /* no GEMM in the grid */
    setup();
    t_s[0] = t_s[1] = t_s[7] = NAN;
    ck_assert_int_eq(calib_sustain(&ft, jobs, t_s, njobs, 3, &s, NULL), 0);
    ck_assert(!s.ok && strstr(s.why, "GEMM"));
}
END_TEST

/* The compute-bound GEMM's hot and the layer-interleaved load (sustain.h 6. and 7.): the
 * GEMM of m >= 512 nearest 0.4 ms timed after the heater (4 time constants: 98% of the way
 * down) over after the light load; then layers of it and the XQA row nearest 0.3 ms.  In a
 * layer (~1 ms, far under the time constants) the load state settles where the GEMM's pull
 * up balances the decode's pull down: p = (a / TAU_UP) / (a / TAU_UP + b / TAU_DOWN), a and b
 * the parts' times as they ran; the clock f_of(p), each part's time 1 + (its hot - 1) p of
 * its cold time.  The fake card has no memory of how its load alternates, so the 20 ms
 * cycles settle near the same clock. */
START_TEST(layer_probes_recover_the_card)
{
    setup();
    fk.watts = 500;
    calib_sustain_t s;
    char *log = NULL;
    size_t logn = 0;
    FILE *pf = open_memstream(&log, &logn);
    ck_assert_int_eq(calib_sustain(&ft, jobs, t_s, njobs, 4, &s, pf), 0);
    fclose(pf);
    ck_assert_msg(s.ok, "not measured: %s", s.why);
    ck_assert_msg(strstr(log, "compute-bound gemm m=2048 n=5120 k=5120 hot 1.2") != NULL, "%s", log);
    free(log);
    ck_assert(s.has_chot);
    ck_assert(s.chot[0] == 2048 && s.chot[1] == 5120 && s.chot[2] == 5120);
    ck_assert_double_eq_tol(s.chot[3], 1 + (F_COLD / F_HOT - 1) * 0.98, 0.01);
    ck_assert_int_eq(s.ninter, SUSTAIN_INTER_N);
    for (int q = 0; q < s.ninter; q++) {
        const double *r = s.inter[q];
        double want = q % 3 == 0 ? 0.25 : q % 3 == 1 ? 0.5 : 0.75;
        ck_assert_msg(fabs(r[0] - want) < 0.04, "row %d: share %g", q, r[0]);
        if (q < 3) ck_assert_msg(r[1] >= 0.5 && r[1] <= 2.0, "row %d: a layer of %g ms", q, r[1]);
        else ck_assert_msg(fabs(r[1] - 20) < 1, "row %d: a cycle of %g ms", q, r[1]);
        ck_assert_double_eq(r[3], 500);
        double a = r[0] * r[1] * r[4], b = (1 - r[0]) * r[1] * r[5];
        double p = (a / TAU_UP) / (a / TAU_UP + b / TAU_DOWN);
        /* a layer: within 2% of the drop (read at a layer's end, after its decode part: the state
         * swings ~1% over a 1.6 ms layer); a 20 ms cycle swings it more, within 5% */
        ck_assert_msg(fabs(r[2] - f_of(p)) < (q < 3 ? 8 : 19), "row %d: %g MHz, expected %g", q, r[2], f_of(p));
        ck_assert_msg(fabs(r[4] - (1 + (F_COLD / F_HOT - 1) * p)) < (q < 3 ? 0.01 : 0.03), "row %d: gemm x%g, p %g", q,
                      r[4], p);
        ck_assert_msg(fabs(r[5] - (1 + 0.15 * p)) < (q < 3 ? 0.01 : 0.03), "row %d: decode x%g, p %g", q, r[5], p);
        if (q % 3) ck_assert(r[2] < s.inter[q - 1][2]);   /* more GEMM, a lower clock */
    }
    /* no GEMM of m >= 512 at 0.1 .. 1 ms (the heater, 1 ms, is past it): the rest is
     * measured, these two are not */
    setup();
    jobs[7].m = 256;
    ck_assert_int_eq(calib_sustain(&ft, jobs, t_s, njobs, 4, &s, NULL), 0);
    ck_assert(s.ok && !s.has_chot && s.ninter == 0 && s.ncurve == SUSTAIN_CURVE_N);
}
END_TEST

static void f_rest(calib_timer_t *t, double seconds)
{
    (void)t, (void)seconds;
}

/* The pre-load study: a row per probe of every law with points, the grid's time first, six
 * columns for a GEMM (the light-load and prefill-call pre-loads), four for the rest. */
START_TEST(preload_study_prints_every_probe)
{
    setup();
    ft.idle = f_rest;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(calib_preload_study(&ft, jobs, t_s, njobs, 4, f), 0);
    fclose(f);
    int rows = 0, gemm = 0, nan = 0;
    for (char *l = strstr(buf, "calib: preload: "); l; l = strstr(l + 1, "calib: preload: ")) {
        rows++;
        gemm += !strncmp(l + 16, "gemm ", 5);
        char *end = strchr(l, '\n');
        for (char *c = l; c < end; c++) nan += !strncmp(c, "nan", 3);
    }
    ck_assert_int_eq(rows, 2 + 2 + 2);     /* two GEMMs (the rates), XQA's two, prefill's two */
    ck_assert_int_eq(gemm, 2);
    ck_assert_int_eq(nan, 4 * 2);          /* the other laws' rows leave the two GEMM columns empty */
    free(buf);
    /* no rest: nothing to study */
    setup();
    ck_assert_int_eq(calib_preload_study(&ft, jobs, t_s, njobs, 4, stderr), 0);
}
END_TEST

int main(void)
{
    const check_test_t tests[] = {CHECK_TEST(recovers_the_card), CHECK_TEST(curve_finds_the_knee), CHECK_TEST(skips_without_a_clock_or_a_drop),
                                  CHECK_TEST(layer_probes_recover_the_card),
                                  CHECK_TEST(preload_study_prints_every_probe)};
    return check_main("sustain", "core", tests, CHECK_N(tests), 60, NULL);
}
