/* check_sustain.c: calib's sustained-load probes (calib/sustain.c) against a fake timer
 * whose card has a clock: each job pulls it towards its own settling point (the heater
 * all the way down, the light load not at all) with known time constants, and each
 * job's time grows with the clock's drop by its own known factor.  The probes must
 * recover the clocks, the time constants, and every law's hot and heat. */
#include <check.h>
#include "check_run.h"
#include <math.h>
#include <string.h>
#include "../calib/sustain.h"
#include "../sim/heat.h"

#define F_COLD 1980.0
#define F_HOT 1600.0
#define TAU_UP 0.06
#define TAU_DOWN 0.10

typedef struct {
    double f;                     /* the clock now */
    int noclock;
    int power;                    /* 1: the power card below (a power limit, heat.h's power law) */
    double demand, last_d;        /* its demand state, and the demand of the job that ran last */
} fake_t;

/* The power card: the clock is the one at which the board power holds the limit under the
 * demand state, which follows each job's demand with a known time constant (heat.h). */
#define P_TOP 1980.0
#define P_IDLE 90.0
#define P_CAP 600.0
#define P_GAMMA 2.5
/* the card's clock under demand d (W of power at the top clock over idle) */
static double true_clock(double d)
{
    double room = P_CAP - P_IDLE;
    return d <= room ? P_TOP : P_TOP * pow(room / d, 1 / P_GAMMA);
}
#define P_TAU_UP 0.06
#define P_TAU_DOWN 0.06   /* as TAU_UP: the mixes' mean demand is their time-weighted one */
static double demand_of[8], sens_of[8];

/* per job: calibrated time, hot (time factor at F_HOT), heat (its own settling point) */
static calib_job_t jobs[8];
static double t_s[8], hot_of[8], heat_of[8];
static int njobs;

static double job_hot(const calib_job_t *j) { return hot_of[j - jobs]; }
static double job_heat(const calib_job_t *j) { return heat_of[j - jobs]; }

static int f_prepare(calib_timer_t *t, const calib_job_t *j) { (void)t; (void)j; return 0; }

static int f_run(calib_timer_t *t, const calib_job_t *j, int iters, double *sec)
{
    fake_t *k = t->impl;
    double t0 = t_s[j - jobs], total = 0;
    if (k->power) {
        int i0 = (int)(j - jobs);
        for (int i = 0; i < iters; i++) {
            double dt = t0 * pow(P_TOP / k->f, sens_of[i0]), d = demand_of[i0];
            double tau = d > k->demand ? P_TAU_UP : P_TAU_DOWN;
            k->demand = d + (k->demand - d) * exp(-dt / tau);
            k->f = true_clock(k->demand);
            total += dt;
        }
        k->last_d = demand_of[i0];
        *sec = total / iters;
        return 0;
    }
    for (int i = 0; i < iters; i++) {
        double drop = (F_COLD - k->f) / (F_COLD - F_HOT);
        double dt = t0 * (1 + (job_hot(j) - 1) * drop);
        double target = F_COLD - job_heat(j) * (F_COLD - F_HOT);
        double tau = target < k->f ? TAU_UP : TAU_DOWN;
        k->f = target + (k->f - target) * exp(-dt / tau);
        total += dt;
    }
    *sec = total / iters;
    return 0;
}

static int f_clock(calib_timer_t *t, double *mhz)
{
    fake_t *k = t->impl;
    if (k->noclock) return -1;
    *mhz = k->f;
    return 0;
}

/* the board power now: the idle power and the last job's demand at the clock */
static int f_power(calib_timer_t *t, double *watts)
{
    fake_t *k = t->impl;
    *watts = P_IDLE + k->last_d * pow(k->f / P_TOP, P_GAMMA);
    return 0;
}

static int f_top(calib_timer_t *t, double *mhz)
{
    (void)t;
    *mhz = P_TOP;
    return 0;
}

/* at rest the demand falls away (the time is the card's, not the timer's) */
static void f_idle(calib_timer_t *t, double seconds)
{
    fake_t *k = t->impl;
    k->demand *= exp(-seconds / P_TAU_DOWN);
    k->last_d = 0;
    k->f = true_clock(k->demand);
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

static fake_t fk;
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
    fk.f = F_COLD;
    memset(&ft, 0, sizeof ft);
    ft.name = "fake";
    ft.impl = &fk;
    ft.prepare = f_prepare;
    ft.run = f_run;
    ft.clock = f_clock;
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
    ck_assert(s.seconds > 2 && s.seconds < 20);
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
    t_s[0] = t_s[1] = NAN;
    ck_assert_int_eq(calib_sustain(&ft, jobs, t_s, njobs, 3, &s, NULL), 0);
    ck_assert(!s.ok && strstr(s.why, "GEMM"));
}
END_TEST

/* The power card: the heater (demand for 1600 MHz at the limit), a small GEMM and the light
 * load under the limit, a prefill law above it.  The probes must find the idle power, the
 * heater at the limit, each probe's settled power (a load under the limit draws idle + its
 * demand, one above it the limit) and clock sensitivity, and the clock under demand: each
 * duty cycle's clock is the card's at that share of the heater's demand. */
static void power_setup(void)
{
    setup();
    fk.power = 1;
    fk.f = P_TOP;
    ft.power = f_power;
    ft.top_clock = f_top;
    ft.idle = f_idle;
    double room = P_CAP - P_IDLE;
    jobs[1].m = 16, jobs[1].n = 16480, jobs[1].k = 5120;
    double d[7] = { room * pow(P_TOP / 1600.0, P_GAMMA), 300, 350, 350, 700, 700, 700 };
    double s[7] = { 1.0, 0.2, 0.3, 0.3, 0.8, 0.8, 0.8 };
    for (int i = 0; i < 7; i++) demand_of[i] = d[i], sens_of[i] = s[i];
}

START_TEST(recovers_the_power_law)
{
    power_setup();
    calib_sustain_t s;
    FILE *devnull = fopen("/dev/null", "w");
    ck_assert_int_eq(calib_sustain(&ft, jobs, t_s, njobs, 4, &s, devnull), 0);
    fclose(devnull);
    ck_assert_msg(s.ok && s.has_power, "not measured: %s", s.why);
    double room = P_CAP - P_IDLE;
    ck_assert_double_eq_tol(s.idle_w, P_IDLE, 1.0);
    ck_assert_double_eq_tol(s.hot_w, P_CAP, 3.0);
    ck_assert_double_eq_tol(s.clock_cold, P_TOP, 1.0);
    ck_assert_double_eq_tol(s.clock_hot, 1600, 4.0);
    ck_assert_double_eq_tol(s.top_mhz, P_TOP, 1e-9);
    /* the table: the three cycles and the heater, in order of demand; each cycle's clock the
     * card's at its share of the heater's (true) demand */
    ck_assert_int_eq(s.nclock, 4);
    for (int m = 0; m < 3; m++) {
        double want = true_clock(s.mix_duty[m] * demand_of[0]);
        ck_assert_msg(fabs(s.mix_mhz[m] / want - 1) < 0.01, "cycle %d (%.2f): %g MHz, want %g", m, s.mix_duty[m],
                      s.mix_mhz[m], want);
    }
    for (int a = 1; a < s.nclock; a++) ck_assert(s.clocks[a][0] > s.clocks[a - 1][0]);
    ck_assert_double_eq_tol(s.clocks[3][0], room, 3.0);
    ck_assert_double_eq_tol(s.clocks[3][1], 1600, 4.0);
    ck_assert_double_eq_tol(s.clocks[0][1], P_TOP, 2.0);   /* a quarter of the heater: under the limit */
    ck_assert(s.clocks[2][1] < P_TOP - 50);
    /* every probe: its settled power and its sensitivity */
    int seen[8] = { 0 };
    for (int l = 0; l < 3; l++) {
        ck_assert_int_gt(s.nprobe[l], 0);
        for (int q = 0; q < s.nprobe[l]; q++) {
            const calib_probe_t *pr = &s.probe[l][q];
            double want = fmin(demand_of[pr->job], room), d = power_demand(pr->watts, s.idle_w);
            ck_assert_msg(fabs(d / want - 1) < 0.02, "law %d probe %d: demand %g, want %g", l, q, d, want);
            ck_assert_msg(fabs(pr->sens - sens_of[pr->job]) < 0.05, "law %d probe %d: sensitivity %g, want %g", l, q,
                          pr->sens, sens_of[pr->job]);
            ck_assert_double_eq_tol(pr->mhz, true_clock(demand_of[pr->job]), 4.0);
            seen[pr->job] = 1;
        }
    }
    ck_assert(seen[0] && seen[1]);        /* the GEMMs: both rates probed */
    ck_assert(s.seconds > 2 && s.seconds < 30);
}
END_TEST

int main(void)
{
    const check_test_t tests[] = {CHECK_TEST(recovers_the_card), CHECK_TEST(skips_without_a_clock_or_a_drop),
                                  CHECK_TEST(recovers_the_power_law)};
    return check_main("sustain", "core", tests, CHECK_N(tests), 60, NULL);
}
