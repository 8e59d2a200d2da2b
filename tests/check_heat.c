/* check_heat.c: the sustained-load clock state (sim/heat.c). */
#include <check.h>
#include "check_run.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cost.h"
#include "heat.h"
#include "scenario.h"

START_TEST(step_settles_and_means)
{
    double h = 0;
    /* a long step at target 1 ends at 1; its mean is 1 - tau/dt (1 - e^-dt/tau) */
    double m = heat_step(&h, 1.0, 1.0, 0.1, 0.3);
    ck_assert_double_eq_tol(h, 1 - exp(-10.0), 1e-12);
    ck_assert_double_eq_tol(m, 1 - 0.1 * (1 - exp(-10.0)), 1e-12);
    /* falling uses tau_down: after one tau_down, 1/e of the way is left */
    h = 1;
    heat_step(&h, 0.0, 0.3, 0.1, 0.3);
    ck_assert_double_eq_tol(h, exp(-1.0), 1e-12);
    /* a step that rises uses tau_up */
    h = 0.5;
    heat_step(&h, 0.7, 0.1, 0.1, 0.3);
    ck_assert_double_eq_tol(h, 0.7 - 0.2 * exp(-1.0), 1e-12);
    /* zero-length steps leave it; tau 0 jumps */
    h = 0.25;
    ck_assert_double_eq(heat_step(&h, 1.0, 0.0, 0.1, 0.1), 0.25);
    ck_assert_double_eq(h, 0.25);
    ck_assert_double_eq(heat_step(&h, 0.6, 0.01, 0.0, 0.0), 0.6);
    ck_assert_double_eq(h, 0.6);
    /* splitting a step in two gives the same end state */
    double a = 0.1, b = 0.1;
    heat_step(&a, 0.9, 0.2, 0.05, 0.2);
    heat_step(&b, 0.9, 0.1, 0.05, 0.2);
    heat_step(&b, 0.9, 0.1, 0.05, 0.2);
    ck_assert_double_eq_tol(a, b, 1e-12);
}
END_TEST

START_TEST(factor_follows_the_clock)
{
    /* h = 0: the light load's clock, no change; h = 1: the heater's, the probes' ratio */
    ck_assert_double_eq_tol(heat_factor(1.5, 0, 1885, 1387), 1.0, 1e-12);
    ck_assert_double_eq_tol(heat_factor(1.5, 1, 1885, 1387), 1.5, 1e-12);
    /* in between: time as clock^-s */
    double s = log(1.5) / log(1885.0 / 1387), f = 1885 - 0.4 * (1885 - 1387);
    ck_assert_double_eq_tol(heat_factor(1.5, 0.4, 1885, 1387), pow(1885 / f, s), 1e-12);
    /* a law the clock does not touch, and unusable clocks */
    ck_assert_double_eq_tol(heat_factor(1.0, 0.7, 1885, 1387), 1.0, 1e-12);
    ck_assert_double_eq(heat_factor(1.5, 0.5, 1387, 1885), 1.0);
    ck_assert_double_eq(heat_factor(1.5, 0.5, 1885, 0), 1.0);
}
END_TEST

/* The clock at a state: the linear map; the factor at a clock, as heat_factor's at that state */
START_TEST(clock_of_the_state)
{
    ck_assert_double_eq_tol(heat_clock(0.25, 1980, 1600), 1885, 1e-9);
    ck_assert_double_eq_tol(heat_clock(0, 1980, 1600), 1980, 1e-9);
    ck_assert_double_eq_tol(heat_clock(1, 1980, 1600), 1600, 1e-9);
    ck_assert_double_eq_tol(heat_factor_at(1.5, 1885, 1980, 1600), heat_factor(1.5, 0.25, 1980, 1600), 1e-12);
    ck_assert_double_eq(heat_factor_at(1.5, 1885, 1600, 1980), 1.0);
}
END_TEST

START_TEST(tau_of_traces)
{
    /* an exponential fall 1980 -> 1600 MHz with tau 0.08 s, sampled every 2 ms */
    double t[500], f[500];
    for (int i = 0; i < 500; i++) {
        t[i] = 0.002 * (i + 1);
        f[i] = 1600 + 380 * exp(-t[i] / 0.08);
    }
    ck_assert_double_eq_tol(heat_tau(t, f, 500, 1980, 1600), 0.08, 5e-4);
    /* a recovery 1600 -> 1980 with tau 0.15, with unsampled holes */
    for (int i = 0; i < 500; i++) f[i] = i % 7 == 3 ? NAN : 1980 - 380 * exp(-t[i] / 0.15);
    ck_assert_double_eq_tol(heat_tau(t, f, 500, 1600, 1980), 0.15, 5e-4);
    /* never gets there, or nothing to cover */
    for (int i = 0; i < 500; i++) f[i] = 1900;
    ck_assert(isnan(heat_tau(t, f, 500, 1980, 1600)));
    ck_assert(isnan(heat_tau(t, f, 500, 1980, 1980)));
    ck_assert(isnan(heat_tau(t, f, 0, 1980, 1600)));
}
END_TEST

/* ---- the profile model at the heat state --------------------------------------- */

static model_t M;

static void put(profile_t *p, const char *name, double c0, double c1, double c2, double hot, double heat)
{
    prof_law_t l;
    memset(&l, 0, sizeof l);
    snprintf(l.name, sizeof l.name, "%s", name);
    l.ncoef = cost_law_ncoef(name);
    double c[PROF_MAX_COEF] = { c0, c1, c2 };
    for (int i = 0; i < l.ncoef; i++) l.coef[i] = c[i];
    l.fit_median_rel = l.fit_max_rel = -1;
    l.has_sustained = hot > 0;
    l.hot = hot;
    l.heat = heat;
    ck_assert_int_eq(prof_put(p, &l), 0);
}

/* laws with XQA 30% slower at the capped clock, the GDN core 20% (and half as hot as the
 * heater); GEMMs already timed at their own clock (hot 1), as hot as their FLOP rate */
static void card(profile_t *p, int sustained, double xqa_hot)
{
    memset(p, 0, sizeof *p);
    snprintf(p->path, sizeof p->path, "synthetic");
    p->peak_fp16_tflops = 700;
    p->has_sustained = sustained;
    p->clock_cold_mhz = 1980;
    p->clock_hot_mhz = 1600;
    p->tau_up_s = 0.1;
    p->tau_down_s = 0.2;
    put(p, "attn.prefill_bm32.fp16", 1e-5, 1e-7, 0, 1.1, 0);
    put(p, "attn.prefill_generic.fp16", 1e-5, 2e-7, 1e-5, 1.1, 0);
    put(p, "attn.prefill_lowsmem.fp16", 1e-5, 2e-7, 1e-5, 1.1, 0);
    put(p, "attn.decode_xqa.fp16", 2e-5, 1e-9, 0, xqa_hot, 0);
    put(p, "attn.decode_scalar.fp16", 2e-5, 1e-9, 0, xqa_hot, 0);
    put(p, "gemm", 5e-6, 1.5e-15, 1e-13, 1.0, 1.0);
    put(p, "gdn", 1e-5, 1e-8, 1e-6, 1.2, 0.5);
    put(p, "elementwise", 2e-6, 1e-9, 0, 0, 0);
    put(p, "step", 1e-3, 0, 0, 0, 0);
}

typedef struct {
    route_plan_t plan;
    cost_step_t in;
} stepdef_t;

/* A decode-only step (A at 240K) or a mixed one (A's row + a 2047-token chunk). */
static void mkstep(stepdef_t *s, int mixed)
{
    route_cfg_t rc = { .smallq_max_q = 16, .page = 784, .group = 6,
                       .fp8_bridge_page = 784, .prefix_decode_rows = 1 };
    kseg_t rows[2] = { { 0, 1, 240001 }, { 1, 2047, 8192 } };
    route_plan_init(&s->plan);
    ck_assert_int_eq(route_step(&rc, rows, mixed ? 2 : 1, &s->plan), 0);
    cost_step_t in = { &s->plan, NULL, mixed ? 2048 : 1, mixed ? 2 : 1, 1, mixed ? 2 : 1, 0, 0, 0, 0 };
    s->in = in;
}

START_TEST(hot_steps_slow_down_and_cool_off)
{
    char err[SCN_ERR_MAX];
    ck_assert_msg(scn_load_model("models/qwen3.8-27b.yaml", &M, err) == 0, "%s", err);
    profile_t cold, hot, flat;
    card(&cold, 0, 1.3);
    card(&hot, 1, 1.3);
    card(&flat, 1, 1.0);
    cost_model_t *mc = cost_profile_new(&cold, &M, 1, err), *mh = cost_profile_new(&hot, &M, 1, err);
    cost_model_t *mf = cost_profile_new(&flat, &M, 1, err);
    ck_assert(mc && mh && mf);
    stepdef_t dec, mix;
    mkstep(&dec, 0);
    mkstep(&mix, 1);
    cost_breakdown_t oc, oh, of;
    /* the first decode step from cold: no heat yet (GEMMs at m = 1 run far below peak) */
    ck_assert_int_eq(mc->step(mc, &dec.in, &oc), 0);
    ck_assert_int_eq(mh->step(mh, &dec.in, &oh), 0);
    ck_assert(oh.total >= oc.total && oh.total < oc.total * 1.01);
    /* mixed steps heat the card step after step: XQA's share grows, towards 1 + c (hot - 1) */
    double prev = 0;
    ck_assert_int_eq(mc->step(mc, &mix.in, &oc), 0);
    for (int i = 0; i < 40; i++) {
        ck_assert_int_eq(mh->step(mh, &mix.in, &oh), 0);
        ck_assert_int_eq(mf->step(mf, &mix.in, &of), 0);
        ck_assert(oh.total >= prev);
        prev = oh.total;
        /* laws whose hot is 1 cost what they cost cold, whatever the heat */
        ck_assert_double_eq_tol(of.linear, oc.linear, 1e-12);
        ck_assert_double_eq_tol(oh.linear, oc.linear, 1e-12);
    }
    double fx = oh.attn_route[ROUTE_DECODE_XQA] / oc.attn_route[ROUTE_DECODE_XQA];
    double fg = oh.gdn / oc.gdn;
    ck_assert_msg(fx > 1.05 && fx < 1.3, "XQA factor %g", fx);
    /* one heat state for the step: the clock XQA's factor implies gives the GDN's */
    double f = 1980 / pow(fx, log(1980.0 / 1600) / log(1.3)), h = (1980 - f) / (1980 - 1600);
    ck_assert_double_eq_tol(fg, heat_factor(1.2, h, 1980, 1600), 1e-9);
    /* decode steps after it start hot and cool off to the cold price */
    ck_assert_int_eq(mc->step(mc, &dec.in, &oc), 0);
    ck_assert_int_eq(mh->step(mh, &dec.in, &oh), 0);
    ck_assert(oh.total > oc.total * 1.01);
    double first = oh.total;
    for (int i = 0; i < 400; i++) ck_assert_int_eq(mh->step(mh, &dec.in, &oh), 0);
    /* ...to the decode step's own small heat (the GDN core's): settled, below 1% */
    cost_breakdown_t o2;
    ck_assert_int_eq(mh->step(mh, &dec.in, &o2), 0);
    ck_assert_double_eq_tol(o2.total, oh.total, 1e-12);
    ck_assert(oh.total < first && oh.total >= oc.total && oh.total < oc.total * 1.01);
    route_plan_free(&dec.plan);
    route_plan_free(&mix.plan);
    cost_free(mc);
    cost_free(mh);
    cost_free(mf);
    prof_free(&cold);
    prof_free(&hot);
    prof_free(&flat);
}
END_TEST

/* An attention item loads the card by its law's measured heat, not by its FLOP rate (a
 * prefill chunk's is high; calib measures its kernel leaving the clock alone): the same
 * mixed steps, the prefill laws at heat 0 against heat 1, settle cooler and cheaper. */
START_TEST(attention_heats_by_its_law)
{
    char err[SCN_ERR_MAX];
    ck_assert_msg(scn_load_model("models/qwen3.8-27b.yaml", &M, err) == 0, "%s", err);
    profile_t cool, warm;
    card(&cool, 1, 1.3);
    card(&warm, 1, 1.3);
    for (int i = 0; i < warm.nlaws; i++)
        if (!strncmp(warm.laws[i].name, "attn.prefill_", 13)) warm.laws[i].heat = 1.0;
    cost_model_t *a = cost_profile_new(&cool, &M, 1, err), *b = cost_profile_new(&warm, &M, 1, err);
    ck_assert(a && b);
    stepdef_t mix;
    mkstep(&mix, 1);
    cost_breakdown_t oa, ob;
    for (int i = 0; i < 40; i++) {
        ck_assert_int_eq(a->step(a, &mix.in, &oa), 0);
        ck_assert_int_eq(b->step(b, &mix.in, &ob), 0);
    }
    /* the GEMMs' heat alone against the GEMMs' and the chunk's: XQA slower on the warm card */
    ck_assert_msg(ob.attn_route[ROUTE_DECODE_XQA] > oa.attn_route[ROUTE_DECODE_XQA] * 1.005, "XQA %g vs %g",
                  ob.attn_route[ROUTE_DECODE_XQA], oa.attn_route[ROUTE_DECODE_XQA]);
    ck_assert(ob.total > oa.total);
    route_plan_free(&mix.plan);
    cost_free(a);
    cost_free(b);
    prof_free(&cool);
    prof_free(&warm);
}
END_TEST

/* The clock's fall read from a compute-bound GEMM's own times (tau_up_runs_s), where calib
 * measured it, is the one pricing uses: a card with it prices every step as the card whose
 * NVML-traced tau_up_s is that value, and heats faster than one left at the traced 0.1 s. */
START_TEST(fall_from_the_runs_prices)
{
    char err[SCN_ERR_MAX];
    ck_assert_msg(scn_load_model("models/qwen3.8-27b.yaml", &M, err) == 0, "%s", err);
    profile_t traced, runs, same;
    card(&traced, 1, 1.3);
    card(&runs, 1, 1.3);
    card(&same, 1, 1.3);
    runs.tau_up_runs_s = 0.02;
    same.tau_up_s = 0.02;
    ck_assert_double_eq(prof_tau_up(&traced), 0.1);
    ck_assert_double_eq(prof_tau_up(&runs), 0.02);
    cost_model_t *a = cost_profile_new(&traced, &M, 1, err), *b = cost_profile_new(&runs, &M, 1, err);
    cost_model_t *c = cost_profile_new(&same, &M, 1, err);
    ck_assert(a && b && c);
    stepdef_t mix;
    mkstep(&mix, 1);
    cost_breakdown_t oa, ob, oc;
    double first_a = 0, first_b = 0;
    for (int i = 0; i < 40; i++) {
        ck_assert_int_eq(a->step(a, &mix.in, &oa), 0);
        ck_assert_int_eq(b->step(b, &mix.in, &ob), 0);
        ck_assert_int_eq(c->step(c, &mix.in, &oc), 0);
        ck_assert_double_eq(ob.total, oc.total);
        if (i == 0) first_a = oa.total, first_b = ob.total;
    }
    /* the first hot step: the faster fall has slowed XQA more; settled, both price within 0.01%
     * (each step's mean over its own fall differs a little) */
    ck_assert_msg(first_b > first_a * 1.001, "first mixed step %g vs %g", first_b, first_a);
    ck_assert_double_eq_tol(ob.total, oa.total, 1e-4 * oa.total);
    route_plan_free(&mix.plan);
    cost_free(a);
    cost_free(b);
    cost_free(c);
    prof_free(&traced);
    prof_free(&runs);
    prof_free(&same);
}
END_TEST

/* calib's clock-against-load curve, its compute-bound GEMM's hot and its layer-interleaved
 * load are recorded, not priced by the model's own clock: a profile with them prices hot
 * mixed steps as the same profile without; the model's clock is the linear map's at its
 * state; a diagnostic's schedule prices the next steps at the clocks given (the GEMMs there
 * by the compute-bound probe too when asked), then the model's own again. */
START_TEST(curve_recorded_schedule_prices)
{
    char err[SCN_ERR_MAX];
    ck_assert_msg(scn_load_model("models/qwen3.8-27b.yaml", &M, err) == 0, "%s", err);
    profile_t cold, curve, lin;
    card(&cold, 0, 1.3);
    card(&curve, 1, 1.3);
    card(&lin, 1, 1.3);
    const double kc[2][3] = { { 0.5, 1900, 650 }, { 1, 1600, 700 } };
    for (int i = 0; i < 2; i++)
        for (int c = 0; c < 3; c++) curve.curve[i][c] = kc[i][c];
    curve.ncurve = 2;
    curve.has_chot = 1;
    curve.chot[0] = 2048, curve.chot[1] = 6144, curve.chot[2] = 4096, curve.chot[3] = 1.2;
    const double ki[2][6] = { { 0.25, 1.6, 1950, 600, 1.01, 1.0 }, { 0.75, 0.8, 1800, 690, 1.08, 1.05 } };
    for (int i = 0; i < 2; i++)
        for (int c = 0; c < 6; c++) curve.inter[i][c] = ki[i][c];
    curve.ninter = 2;
    cost_model_t *mc = cost_profile_new(&cold, &M, 1, err), *mk = cost_profile_new(&curve, &M, 1, err);
    cost_model_t *ml = cost_profile_new(&lin, &M, 1, err);
    /* a simulation prices an engine's layer order: the probe off by default, also where the step
     * law prices a host time (the idle before each step, 1 ms here); rescore turns it on (2: at
     * the model's own clock) for runs in the replay's item order */
    cost_model_t *md = cost_profile_new(&curve, &M, 1, err), *mp = cost_profile_new(&curve, &M, 1, err);
    ck_assert(mc && mk && ml && md && mp);
    cost_profile_compute_hot(mk, 0);
    cost_profile_compute_hot(mp, 2);
    stepdef_t mix;
    mkstep(&mix, 1);
    cost_breakdown_t oc, ok, ol, od, op;
    for (int i = 0; i < 40; i++) {
        ck_assert_int_eq(mc->step(mc, &mix.in, &oc), 0);
        ck_assert_int_eq(mk->step(mk, &mix.in, &ok), 0);
        ck_assert_int_eq(ml->step(ml, &mix.in, &ol), 0);
        ck_assert_int_eq(md->step(md, &mix.in, &od), 0);
        ck_assert_int_eq(mp->step(mp, &mix.in, &op), 0);
        ck_assert_double_eq(ok.total, ol.total);             /* the probe off: the law's hot */
        ck_assert_double_eq(od.total, ok.total);             /* the default: off */
        ck_assert_double_eq(op.attn, ok.attn);               /* the same clock: the GEMMs alone move */
        ck_assert(op.linear > ok.linear * 1.001);
    }
    ck_assert_double_eq(cost_profile_model_clock(mp), cost_profile_model_clock(mk));
    cost_free(md);
    cost_free(mp);
    /* a step law of 0 (not measured: the idle unknown): not priced by default either */
    for (int i = 0; i < curve.nlaws; i++)
        if (!strcmp(curve.laws[i].name, "step")) curve.laws[i].coef[0] = 0;
    cost_model_t *m0 = cost_profile_new(&curve, &M, 1, err), *m2 = cost_profile_new(&curve, &M, 1, err);
    ck_assert(m0 && m2);
    cost_profile_compute_hot(m0, 0);
    cost_profile_compute_hot(m2, 2);
    cost_model_t *mz = cost_profile_new(&curve, &M, 1, err);
    ck_assert(mz);
    cost_breakdown_t o0, o2, oz;
    for (int i = 0; i < 40; i++) {
        ck_assert_int_eq(m0->step(m0, &mix.in, &o0), 0);
        ck_assert_int_eq(m2->step(m2, &mix.in, &o2), 0);
        ck_assert_int_eq(mz->step(mz, &mix.in, &oz), 0);
        ck_assert_double_eq(oz.total, o0.total);
        ck_assert(o2.linear > o0.linear * 1.001);
    }
    cost_free(m0);
    cost_free(m2);
    cost_free(mz);
    for (int i = 0; i < curve.nlaws; i++)
        if (!strcmp(curve.laws[i].name, "step")) curve.laws[i].coef[0] = 1e-3;
    ck_assert(ol.total > oc.total * 1.001);
    double f = cost_profile_model_clock(ml);
    ck_assert(f < 1980 && f > 1600);
    double fx = ol.attn_route[ROUTE_DECODE_XQA] / oc.attn_route[ROUTE_DECODE_XQA];
    ck_assert_double_eq_tol(fx, heat_factor_at(1.3, f, 1980, 1600), 1e-9);
    ck_assert(isnan(cost_profile_model_clock(mc)));
    /* the schedule: the heater's clock for one step, the state itself as the model has it */
    const double sched[1] = { 1600 };
    cost_profile_clock_schedule(ml, sched, 1);
    cost_profile_clock_schedule(mk, sched, 1);
    ck_assert_int_eq(ml->step(ml, &mix.in, &ol), 0);
    ck_assert_int_eq(mk->step(mk, &mix.in, &ok), 0);
    ck_assert_double_eq(ok.total, ol.total);                 /* the probe off: the law's hot */
    cost_profile_clock_schedule(ml, sched, 1);
    cost_profile_clock_schedule(mk, sched, 1);
    cost_profile_compute_hot(mk, 1);
    cost_profile_compute_hot(ml, 1);
    ck_assert_int_eq(ml->step(ml, &mix.in, &ol), 0);
    ck_assert_int_eq(mk->step(mk, &mix.in, &ok), 0);
    ck_assert_double_eq_tol(ol.attn_route[ROUTE_DECODE_XQA] / oc.attn_route[ROUTE_DECODE_XQA], 1.3, 1e-9);
    ck_assert_double_eq(cost_profile_model_clock(ml), cost_profile_model_clock(mk));
    /* the schedule in the step stamps' meter (cost_profile_clock_units): without the profile's
     * stamped pair NVML's stays; with one (1800 / 1500 MHz), 1800 MHz is the stamped light
     * load's clock (no slowdown) where NVML's pair (1980 / 1600) reads it part way to the heater */
    const double s1800[1] = { 1800 };
    cost_model_t *mu = cost_profile_new(&lin, &M, 1, err);
    ck_assert_msg(mu != NULL, "%s", err);
    cost_breakdown_t ou;
    ck_assert_int_eq(cost_profile_clock_units(mu, 1), 0);
    cost_profile_clock_schedule(mu, s1800, 1);
    ck_assert_int_eq(mu->step(mu, &mix.in, &ou), 0);
    ck_assert_double_eq_tol(ou.attn_route[ROUTE_DECODE_XQA] / oc.attn_route[ROUTE_DECODE_XQA],
                            heat_factor_at(1.3, 1800, 1980, 1600), 1e-9);
    lin.stamp_cold_mhz = 1800, lin.stamp_hot_mhz = 1500;
    ck_assert_int_eq(cost_profile_clock_units(mu, 1), 1);
    cost_profile_clock_schedule(mu, s1800, 1);
    ck_assert_int_eq(mu->step(mu, &mix.in, &ou), 0);
    ck_assert_double_eq_tol(ou.attn_route[ROUTE_DECODE_XQA] / oc.attn_route[ROUTE_DECODE_XQA], 1.0, 1e-9);
    ck_assert(cost_profile_model_clock(mu) <= 1800 && cost_profile_model_clock(mu) >= 1500);   /* in that meter */
    ck_assert_int_eq(cost_profile_clock_units(mu, 0), 0);                                     /* back to NVML's */
    lin.stamp_cold_mhz = lin.stamp_hot_mhz = 0;
    cost_free(mu);
    /* at a scheduled clock the compute-bound GEMM probe prices the GEMMs: the gemm law's hot
     * (1 here, its points none: probes' rate 0) moved towards the probe's 1.2 by the item's
     * FLOP rate u at its calibrated time, so hot = 1.2^u, at the heater's clock exactly that */
    ck_assert_double_eq(ok.attn, ol.attn);
    ck_assert(ok.linear > ol.linear * 1.01 && ok.linear < ol.linear * 1.2);
    cost_item_t g = { .kind = CI_GEMM, .m = 2048, .n = 6144, .k = 4096, .wb = 2, .count = 64, .part = CP_LINEAR };
    double c0, hotp;
    int grid;
    ck_assert_int_eq(cost_profile_item(mc, &g, &c0, &grid), 0);
    ck_assert_int_eq(cost_profile_item(mk, &g, &hotp, &grid), 0);
    double u = 2 * g.m * g.n * g.k * g.count / c0 / 700e12;
    ck_assert(u > 0.3 && u < 1);
    ck_assert_double_eq_tol(hotp / c0, pow(1.2, u), 1e-9);
    ck_assert_int_eq(cost_profile_item(ml, &g, &hotp, &grid), 0);
    ck_assert_double_eq_tol(hotp, c0, 1e-15);               /* no probe: the law's hot, 1 */
    cost_profile_compute_hot(mk, 0);
    cost_profile_compute_hot(ml, 0);
    ck_assert_int_eq(ml->step(ml, &mix.in, &ol), 0);         /* past the schedule: the model's */
    ck_assert_int_eq(mk->step(mk, &mix.in, &ok), 0);
    ck_assert_double_eq(ok.total, ol.total);
    /* 2 (rescore --compute-hot alone): the probe at the model's own clock, unscheduled */
    cost_profile_compute_hot(mk, 2);
    ck_assert_int_eq(mk->step(mk, &mix.in, &ok), 0);
    ck_assert(ok.linear > ol.linear * 1.001);
    double fm = cost_profile_model_clock(mk);
    ck_assert(fm > 1600 && fm < 1980);
    ck_assert_int_eq(cost_profile_item(mk, &g, &hotp, &grid), 0);
    ck_assert_double_eq_tol(hotp / c0, heat_factor_at(pow(1.2, u), fm, 1980, 1600), 1e-9);
    cost_profile_compute_hot(mk, 0);
    route_plan_free(&mix.plan);
    cost_free(mc);
    cost_free(mk);
    cost_free(ml);
    prof_free(&cold);
    prof_free(&curve);
    prof_free(&lin);
}
END_TEST

/* The GPU's idle before a step cools the card (heat.h): the state relaxes at target 0 over the
 * idle -- the step law's host time, or what a schedule gives (cost_profile_idle_schedule) --
 * then follows the step's target over its kernels' time, and the step is priced at the mean
 * of that.  Two mixed steps from cold, checked against heat_step itself: the first step's
 * clock gives its target (the state starts at 0, which no idle moves); the second starts from
 * the first's end relaxed over the idle.  A longer idle leaves the second step's clock higher
 * and its price lower; past the schedule (or at a NAN in it) the host time is the idle. */
START_TEST(idle_cools_the_state)
{
    char err[SCN_ERR_MAX];
    ck_assert_msg(scn_load_model("models/qwen3.8-27b.yaml", &M, err) == 0, "%s", err);
    profile_t cold, hot;
    card(&cold, 0, 1.3);
    card(&hot, 1, 1.3);
    cost_model_t *mc = cost_profile_new(&cold, &M, 1, err);
    ck_assert(mc);
    stepdef_t mix;
    mkstep(&mix, 1);
    cost_breakdown_t oc, o;
    ck_assert_int_eq(mc->step(mc, &mix.in, &oc), 0);
    double host = oc.overhead, T = oc.total - oc.overhead;   /* the step law's 1 ms; the kernels' time */
    ck_assert_double_eq_tol(host, 1e-3, 1e-12);
    const double idles[4] = { -1, 0, 0.005, 0.05 };           /* -1: no schedule (the host time) */
    double clk2[4], tot2[4];
    for (int j = 0; j < 4; j++) {
        cost_model_t *mh = cost_profile_new(&hot, &M, 1, err);
        ck_assert(mh);
        const double sched[3] = { 0, idles[j], NAN };
        if (idles[j] >= 0) cost_profile_idle_schedule(mh, sched, 3);
        ck_assert_int_eq(mh->step(mh, &mix.in, &o), 0);
        ck_assert_double_eq_tol(cost_profile_idle(mh), idles[j] >= 0 ? 0 : host, 1e-15);
        /* step 1 from h = 0: mean c (1 - tau/T (1 - e^-T/tau)), end c (1 - e^-T/tau) */
        double f1 = cost_profile_model_clock(mh), m1 = (1980 - f1) / (1980 - 1600);
        double a = exp(-T / hot.tau_up_s), c = m1 / (1 - hot.tau_up_s / T * (1 - a)), h = c * (1 - a);
        ck_assert(c > 0.1 && c < 1);
        ck_assert_int_eq(mh->step(mh, &mix.in, &o), 0);
        double idle = idles[j] >= 0 ? idles[j] : host;
        ck_assert_double_eq_tol(cost_profile_idle(mh), idle, 1e-15);
        heat_step(&h, 0, idle, hot.tau_up_s, hot.tau_down_s);
        double m2 = heat_step(&h, c, T, hot.tau_up_s, hot.tau_down_s);
        clk2[j] = cost_profile_model_clock(mh);
        tot2[j] = o.total;
        ck_assert_double_eq_tol(clk2[j], heat_clock(m2, 1980, 1600), 1e-6);
        ck_assert_double_eq_tol(o.attn_route[ROUTE_DECODE_XQA] / oc.attn_route[ROUTE_DECODE_XQA],
                                heat_factor_at(1.3, clk2[j], 1980, 1600), 1e-9);
        /* step 3: the schedule's NAN, then past its end: the host time again */
        ck_assert_int_eq(mh->step(mh, &mix.in, &o), 0);
        ck_assert_double_eq_tol(cost_profile_idle(mh), host, 1e-15);
        ck_assert_int_eq(mh->step(mh, &mix.in, &o), 0);
        ck_assert_double_eq_tol(cost_profile_idle(mh), host, 1e-15);
        cost_free(mh);
    }
    /* idle 0 < the host time's 1 ms < 5 ms < 50 ms: the clock up, the price down */
    ck_assert(clk2[1] < clk2[0] && clk2[0] < clk2[2] && clk2[2] < clk2[3]);
    ck_assert(tot2[1] > tot2[0] && tot2[0] > tot2[2] && tot2[2] > tot2[3]);
    ck_assert(tot2[3] > oc.total);                            /* still above the cold price */
    /* a model without the probes: no state, no idle */
    ck_assert(isnan(cost_profile_idle(mc)));
    route_plan_free(&mix.plan);
    cost_free(mc);
    prof_free(&cold);
    prof_free(&hot);
}
END_TEST

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    char *buf = malloc(1 << 20);
    ck_assert_ptr_nonnull(buf);
    size_t n = fread(buf, 1, (1 << 20) - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

START_TEST(profile_round_trip)
{
    char path[] = "/tmp/pacesim_heat_XXXXXX", err[PROF_ERR_MAX];
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    profile_t p, q;
    card(&p, 1, 1.3);
    snprintf(p.gpu, sizeof p.gpu, "test");
    p.tp = 1;
    ck_assert_int_eq(prof_save(path, &p), 0);
    ck_assert_msg(prof_load(path, &q, err) == 0, "%s", err);
    ck_assert_int_eq(q.has_sustained, 1);
    ck_assert_double_eq(q.tau_up_s, 0.1);
    ck_assert_double_eq(q.tau_down_s, 0.2);
    ck_assert_double_eq(q.clock_hot_mhz, 1600);
    const prof_law_t *x = prof_find(&q, "attn.decode_xqa.fp16"), *e = prof_find(&q, "elementwise");
    ck_assert(x && x->has_sustained && x->hot == 1.3 && x->heat == 0);
    ck_assert(e && !e->has_sustained);
    ck_assert_int_eq(q.ncurve, 0);
    ck_assert(!q.has_chot && q.ninter == 0 && !q.has_ehot);   /* a profile without them loads as before */
    ck_assert_double_eq(q.tau_up_runs_s, 0);
    ck_assert(q.stamp_cold_mhz == 0 && q.stamp_hot_mhz == 0);   /* nor the counters' pair */
    prof_free(&q);
    /* the fall from the kernels' own times travels beside NVML's */
    p.tau_up_runs_s = 0.0625;
    ck_assert_int_eq(prof_save(path, &p), 0);
    ck_assert_msg(prof_load(path, &q, err) == 0, "%s", err);
    ck_assert_double_eq(q.tau_up_runs_s, 0.0625);
    ck_assert_double_eq(q.tau_up_s, 0.1);
    prof_free(&q);
    /* and the traces' ranges of both priced constants (rescore's calib band) */
    p.tau_up_runs_range_s[0] = 0.05, p.tau_up_runs_range_s[1] = 0.0625;
    p.tau_down_range_s[0] = 0.2, p.tau_down_range_s[1] = 0.25;
    ck_assert_int_eq(prof_save(path, &p), 0);
    ck_assert_msg(prof_load(path, &q, err) == 0, "%s", err);
    ck_assert(q.tau_up_runs_range_s[0] == 0.05 && q.tau_up_runs_range_s[1] == 0.0625);
    ck_assert(q.tau_down_range_s[0] == 0.2 && q.tau_down_range_s[1] == 0.25);
    prof_free(&q);
    p.tau_down_range_s[1] = NAN;   /* what would not load back is not written */
    ck_assert_int_eq(prof_save(path, &p), -1);
    p.tau_up_runs_range_s[0] = p.tau_up_runs_range_s[1] = p.tau_down_range_s[0] = p.tau_down_range_s[1] = 0;
    p.tau_up_runs_s = INFINITY;   /* what would not load back is not written */
    ck_assert_int_eq(prof_save(path, &p), -1);
    ck_assert_int_eq(errno, EDOM);
    p.tau_up_runs_s = 0;
    /* the clocks by the SMs' counters travel as a pair */
    p.stamp_cold_mhz = 1842, p.stamp_hot_mhz = 1452;
    ck_assert_int_eq(prof_save(path, &p), 0);
    ck_assert_msg(prof_load(path, &q, err) == 0, "%s", err);
    ck_assert_double_eq(q.stamp_cold_mhz, 1842);
    ck_assert_double_eq(q.stamp_hot_mhz, 1452);
    ck_assert_double_eq(q.clock_cold_mhz, p.clock_cold_mhz);
    prof_free(&q);
    p.stamp_cold_mhz = p.stamp_hot_mhz = 0;
    /* the curve travels too */
    p.ncurve = 2;
    p.curve[0][0] = 0.4, p.curve[0][1] = 1950, p.curve[0][2] = 512.5;
    p.curve[1][0] = 1, p.curve[1][1] = 1420, p.curve[1][2] = 0;
    ck_assert_int_eq(prof_save(path, &p), 0);
    ck_assert_msg(prof_load(path, &q, err) == 0, "%s", err);
    ck_assert_int_eq(q.ncurve, 2);
    ck_assert_double_eq(q.curve[0][0], 0.4);
    ck_assert_double_eq(q.curve[0][2], 512.5);
    ck_assert_double_eq(q.curve[1][1], 1420);
    ck_assert(!q.has_chot && q.ninter == 0);
    prof_free(&q);
    /* and the compute-bound GEMM's hot and the layer-interleaved load */
    p.has_chot = 1;
    p.chot[0] = 2048, p.chot[1] = 6144, p.chot[2] = 4096, p.chot[3] = 1.1875;
    p.ninter = 2;
    const double ki[2][6] = { { 0.25, 1.6, 1950, 600.5, 1.01, 1 }, { 0.75, 0.8, 1800, 0, 1.0625, 1.05 } };
    for (int i = 0; i < 2; i++)
        for (int c = 0; c < 6; c++) p.inter[i][c] = ki[i][c];
    ck_assert_int_eq(prof_save(path, &p), 0);
    ck_assert_msg(prof_load(path, &q, err) == 0, "%s", err);
    ck_assert_int_eq(q.ncurve, 2);
    ck_assert(q.has_chot && q.chot[0] == 2048 && q.chot[1] == 6144 && q.chot[2] == 4096 && q.chot[3] == 1.1875);
    ck_assert_int_eq(q.ninter, 2);
    for (int i = 0; i < 2; i++) {
        for (int c = 0; c < 6; c++) ck_assert_double_eq(q.inter[i][c], ki[i][c]);
        ck_assert_double_eq(q.inter[i][6], 0);   /* no duty measured: rows of six, read with duty 0 */
    }
    /* ... written back as it was read (a profile from before the duty column stays byte for byte) */
    char *a = slurp(path), path2[] = "/tmp/pacesim_heat_XXXXXX";
    fd = mkstemp(path2);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ck_assert_int_eq(prof_save(path2, &q), 0);
    char *b = slurp(path2);
    ck_assert_str_eq(a, b);
    ck_assert_msg(strstr(a, "interleave: [[0.25, 1.6, 1950, 600.5, 1.01, 1], [0.75, 0.8, 1800, 0, 1.0625, 1.05]]"), "%s",
                  a);
    free(a);
    free(b);
    prof_free(&q);
    /* the duty column where measured (a row may read 0: not measured) */
    p.inter[0][6] = 0.995, p.inter[1][6] = 0;
    ck_assert_int_eq(prof_save(path, &p), 0);
    ck_assert_msg(prof_load(path, &q, err) == 0, "%s", err);
    ck_assert_int_eq(q.ninter, 2);
    ck_assert_double_eq(q.inter[0][6], 0.995);
    ck_assert_double_eq(q.inter[1][6], 0);
    for (int i = 0; i < 2; i++)
        for (int c = 0; c < 6; c++) ck_assert_double_eq(q.inter[i][c], ki[i][c]);
    ck_assert(!q.has_ehot);
    prof_free(&q);
    /* calib's GEMMs across shapes: read back as written */
    p.ngprobe = 2;
    const double kg[2][6] = { { 64, 128256, 4096, 1.25e-4, 1.03125, 1.0625 }, { 2048, 4096, 14336, 5e-4, 1.125, 1.1 } };
    for (int i = 0; i < 2; i++)
        for (int c = 0; c < 6; c++) p.gprobe[i][c] = kg[i][c];
    ck_assert_int_eq(prof_save(path, &p), 0);
    ck_assert_msg(prof_load(path, &q, err) == 0, "%s", err);
    ck_assert_int_eq(q.ngprobe, 2);
    for (int i = 0; i < 2; i++)
        for (int c = 0; c < 6; c++) ck_assert_double_eq(q.gprobe[i][c], kg[i][c]);
    prof_free(&q);
    p.ngprobe = 0;
    /* the elementwise proxy's hot at a serving budget: read back as written, and written back
     * byte for byte */
    p.has_ehot = 1;
    p.ehot[0] = 2048, p.ehot[1] = 1.3125;
    ck_assert_int_eq(prof_save(path, &p), 0);
    ck_assert_msg(prof_load(path, &q, err) == 0, "%s", err);
    ck_assert(q.has_ehot && q.ehot[0] == 2048 && q.ehot[1] == 1.3125);
    ck_assert(q.has_chot && q.ninter == 2 && q.ncurve == 2);
    ck_assert_int_eq(prof_save(path2, &q), 0);
    a = slurp(path), b = slurp(path2);
    ck_assert_str_eq(a, b);
    ck_assert_msg(strstr(a, "elementwise_hot: {tokens: 2048, hot: 1.3125}"), "%s", a);
    free(a);
    free(b);
    prof_free(&q);
    prof_free(&p);
    unlink(path);
    unlink(path2);
}
END_TEST

/* ---- the order study (calib/order_study.cu) priced by its card's profile ------------ */

/* calib/order_study.cu ran one Llama-3.1-8B step shape on one H200 (GPU-6672d77c, the card
 * tests/data/replay/h200-lib-llama8b/profile.yaml was calibrated on; docs/validation.md
 * section 2): 32 layers, each its qkv, o, gate|up and down GEMMs (fp16, m = the step's tokens)
 * and one varlen attention call, steps back to back.  Measured (two passes of 40 and of 80
 * steps an order):
 *   mixed  (207 decode rows at 143-950 keys + 4 chunks of 98, 599 tokens): GEMMs 12.56-12.70
 *          ms a step, SM clock 1794-1815 MHz, the varlen call 1.093-1.105 of its time alone
 *          (alone: 315.5-317.6 us at 1942-1963 MHz);
 *   decode (the 207 rows, 207 tokens): GEMMs 5.48-5.53 ms, 1962-1978 MHz, the call 1.001-1.006
 *          of alone (308.6-309.4 us at 1948-1975 MHz).
 * The heat model's figures for that sequence: each step's items priced at calibrated times
 * (cost_profile_item before any step), the step's target as pm_step forms it (a GEMM's FLOP
 * rate over the calibrated peak, the varlen law's heat), the state followed over back-to-back
 * steps (heat_step) to its settled mean, the clock and the varlen factor at it. */
typedef struct {
    double gemm_s, attn_s, target, mhz, factor;
} study_t;

static void order_study_step(cost_model_t *cm, const profile_t *p, const model_rank_t *r, int mixed, study_t *o)
{
    static const double gn[4] = { 6144, 4096, 28672, 4096 }, gk[4] = { 4096, 4096, 4096, 14336 };
    kseg_t rows[211];
    int n = 0;
    for (int i = 0; i < 207; i++) rows[n++] = (kseg_t){ i, 1, 143 + (950 - 143) * i / 206 };
    for (int c = 0; mixed && c < 4; c++) rows[n++] = (kseg_t){ 207 + c, 98, 98 };
    route_cfg_t rc = { .smallq_max_q = 16, .page = 16, .group = 4, .fp8_bridge_page = 16, .varlen = 1 };
    route_plan_t plan;
    route_plan_init(&plan);
    ck_assert_int_eq(route_step(&rc, rows, n, &plan), 0);
    ck_assert_int_eq(plan.ncalls, 1);
    double heat_w = 0, sec;
    int grid;
    memset(o, 0, sizeof *o);
    for (int g = 0; g < 4; g++) {
        cost_item_t it = { .kind = CI_GEMM, .m = mixed ? 599 : 207, .n = gn[g], .k = gk[g], .wb = 2, .count = 32,
                           .part = CP_LINEAR };
        ck_assert_int_eq(cost_profile_item(cm, &it, &sec, &grid), 0);   /* seconds for the 32 layers */
        double u = cost_item_flops(&it, &M, r) * it.count / sec / (p->peak_fp16_tflops * 1e12);
        o->gemm_s += sec;
        heat_w += sec * (u < 1 ? u : 1);
    }
    cost_item_t va = { .kind = CI_ATTN, .call = &plan.calls[0], .count = 32, .part = CP_ATTN };
    char b[64];
    ck_assert_str_eq(cost_item_law(&va, b, sizeof b), "attn.varlen.fp16");
    ck_assert_int_eq(cost_profile_item(cm, &va, &sec, &grid), 0);
    const prof_law_t *vl = prof_find(p, "attn.varlen.fp16");
    ck_assert(vl && vl->has_sustained);
    o->attn_s = sec;
    heat_w += sec * vl->heat;
    o->target = heat_w / (o->gemm_s + o->attn_s);
    double h = 0, mean = 0;
    for (int i = 0; i < 400; i++) mean = heat_step(&h, o->target, o->gemm_s + o->attn_s, p->tau_up_s, p->tau_down_s);
    o->mhz = heat_clock(mean, p->clock_cold_mhz, p->clock_hot_mhz);
    o->factor = heat_factor_at(vl->hot, o->mhz, p->clock_cold_mhz, p->clock_hot_mhz);
    route_plan_free(&plan);
}

/* What the profile prices as the study measured it, and where the heat model's clock stands
 * against the study's (the gap is docs/validation.md section 2's "The order study priced"). */
START_TEST(order_study_of_the_card)
{
    char err[SCN_ERR_MAX];
    ck_assert_msg(scn_load_model("models/llama-3.1-8b.yaml", &M, err) == 0, "%s", err);
    profile_t p;
    ck_assert_msg(prof_load("tests/data/replay/h200-lib-llama8b/profile.yaml", &p, err) == 0, "%s", err);
    ck_assert(p.has_sustained);
    model_rank_t r;
    ck_assert_int_eq(model_rank(&M, 1, &r), 0);
    cost_model_t *cm = cost_profile_new(&p, &M, 1, err);
    ck_assert_msg(cm != NULL, "%s", err);
    study_t mx, dc;
    order_study_step(cm, &p, &r, 1, &mx);
    order_study_step(cm, &p, &r, 0, &dc);
    fprintf(stderr, "order study priced: mixed GEMMs %.2f ms, varlen %.1f us, target %.3f, %.0f MHz, varlen x %.3f "
            "(measured 12.56-12.70 ms, 315.5-317.6 us alone, 1794-1815 MHz, x 1.093-1.105); decode GEMMs %.2f ms, "
            "varlen %.1f us, target %.3f, %.0f MHz, x %.3f (measured 5.48-5.53 ms, 308.6-309.4 us, 1962-1978 MHz, "
            "x 1.001-1.006)\n", mx.gemm_s * 1e3, mx.attn_s / 32 * 1e6, mx.target, mx.mhz, mx.factor, dc.gemm_s * 1e3,
            dc.attn_s / 32 * 1e6, dc.target, dc.mhz, dc.factor);
    /* the laws at the clock their items ran at: the varlen call alone (near the cold clock)
     * and the decode step's GEMMs (1962-1978 MHz) within 2% of the study */
    ck_assert_msg(fabs(mx.attn_s / 32 / 316.5e-6 - 1) < 0.02, "mixed varlen %g us", mx.attn_s / 32 * 1e6);
    ck_assert_msg(fabs(dc.attn_s / 32 / 309.0e-6 - 1) < 0.02, "decode varlen %g us", dc.attn_s / 32 * 1e6);
    ck_assert_msg(fabs(dc.gemm_s / 5.505e-3 - 1) < 0.02, "decode GEMMs %g ms", dc.gemm_s * 1e3);
    /* the mixed step's GEMMs heat the card more than the decode step's: its clock lower, the
     * call slower, as measured */
    ck_assert(mx.target > dc.target && mx.mhz < dc.mhz && mx.factor > dc.factor);
    ck_assert(mx.mhz > p.clock_hot_mhz && dc.mhz < p.clock_cold_mhz);
    /* The gap the study shows (docs/validation.md section 2): the one clock a step from the
     * time-weighted heat sits 80-140 MHz under the clock the interleaved steps ran at (mixed
     * 1794-1815, decode 1962-1978 MHz), and the mixed step's GEMMs at 1800 MHz took 6-9% over
     * their calibrated time, where the gemm law's hot leaves them under 1%.  Held here as the
     * model stands so that a change to it meets the study: a fix moves these bounds to the
     * study's figures. */
    ck_assert_msg(mx.mhz > 1650 && mx.mhz < 1760, "mixed clock %g MHz", mx.mhz);
    ck_assert_msg(dc.mhz > 1800 && dc.mhz < 1890, "decode clock %g MHz", dc.mhz);
    ck_assert_msg(mx.gemm_s < 12.56e-3 * 0.95, "mixed GEMMs %g ms", mx.gemm_s * 1e3);
    cost_free(cm);
    prof_free(&p);
}
END_TEST

/* One varlen call of a lone prompt of q tokens (qwen3-14b: group 5), priced by a fresh cost
 * model (cold: no heat yet) per layer, and the varlen law's own price of it. */
static void lone_prompt(cost_model_t *cm, const profile_t *p, const model_rank_t *r, int q, double *priced, double *law)
{
    route_cfg_t rc = { .smallq_max_q = 16, .page = 16, .group = 5, .fp8_bridge_page = 16, .varlen = 1 };
    kseg_t rows[1] = { { 0, q, q } };
    route_plan_t plan;
    route_plan_init(&plan);
    ck_assert_int_eq(route_step(&rc, rows, 1, &plan), 0);
    ck_assert_int_eq(plan.ncalls, 1);
    cost_item_t it = { .kind = CI_ATTN, .call = &plan.calls[0], .count = 1, .part = CP_ATTN };
    int grid;
    ck_assert_int_eq(cost_profile_item(cm, &it, priced, &grid), 0);
    const prof_law_t *vl = prof_find(p, "attn.varlen.fp16");
    ck_assert_ptr_nonnull(vl);
    cost_hw_t hw = cost_hw_of(p);
    double feat[PROF_MAX_COEF] = { 0 };
    feat[0] = 1;
    ck_assert_int_eq(cost_attn_features("attn.varlen.fp16", &plan.calls[0], &M, r, &hw, feat), 0);
    *law = prof_eval(vl, feat);
    route_plan_free(&plan);
}

/* The varlen law is one fit over every batch calib timed; at a family of points it misses
 * (an H100's lone prompts of 440 and 512 tokens: the law 6.3% and 5.2% over the points), the
 * price carries the points' own error (near_corr in sim/cost_profile.c): a lone prompt of 440
 * tokens prices within 2% of calib's point (its neighbours weigh in), where the law alone is
 * 5% over it; a prompt of 30,000 tokens, many times the work of every point, at the law. */
START_TEST(varlen_carries_its_points_error)
{
    char err[SCN_ERR_MAX];
    ck_assert_msg(scn_load_model("models/qwen3-14b.yaml", &M, err) == 0, "%s", err);
    profile_t p;
    ck_assert_msg(prof_load("tests/data/replay/h100-lib-qwen3-14b-b/profile.yaml", &p, err) == 0, "%s", err);
    model_rank_t r;
    ck_assert_int_eq(model_rank(&M, 1, &r), 0);
    const prof_law_t *vl = prof_find(&p, "attn.varlen.fp16");
    ck_assert_ptr_nonnull(vl);
    double t440 = 0;                        /* calib's point: one chunk of 440 alone */
    for (int i = 0; i < vl->npts; i++) {
        const double *row = vl->pts + (size_t)i * vl->ncols;
        if (row[0] == 0 && row[2] == 1 && row[3] == 440 && row[4] == 0) t440 = row[vl->ncols - 1];
    }
    ck_assert(t440 > 0);
    cost_model_t *cm = cost_profile_new(&p, &M, 1, err);
    ck_assert_msg(cm != NULL, "%s", err);
    double priced, law;
    lone_prompt(cm, &p, &r, 440, &priced, &law);
    ck_assert_msg(law / t440 > 1.05, "law %g us, point %g us", law * 1e6, t440 * 1e6);
    ck_assert_msg(fabs(priced / t440 - 1) < 0.02, "priced %g us, point %g us", priced * 1e6, t440 * 1e6);
    lone_prompt(cm, &p, &r, 30000, &priced, &law);
    ck_assert_msg(fabs(priced / law - 1) < 1e-9, "priced %g us, law %g us", priced * 1e6, law * 1e6);
    cost_free(cm);
    prof_free(&p);
}
END_TEST

int main(void)
{
    const check_test_t tests[] = {
        CHECK_TEST(step_settles_and_means), CHECK_TEST(tau_of_traces), CHECK_TEST(factor_follows_the_clock),
        CHECK_TEST(hot_steps_slow_down_and_cool_off), CHECK_TEST(attention_heats_by_its_law),
        CHECK_TEST(clock_of_the_state), CHECK_TEST(curve_recorded_schedule_prices), CHECK_TEST(fall_from_the_runs_prices), CHECK_TEST(idle_cools_the_state),
        CHECK_TEST(profile_round_trip), CHECK_TEST(order_study_of_the_card),
        CHECK_TEST(varlen_carries_its_points_error)};
    return check_main("heat", "core", tests, CHECK_N(tests), 0, NULL);
}
