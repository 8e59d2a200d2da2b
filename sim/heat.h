/* heat.h -- the card's clock under sustained load, as the cost model prices it.
 *
 * A GPU held at its power limit lowers its SM clock.  On the H200 the replay saw
 * 1980 MHz through decode-only steps and 1580-1850 MHz through prompt chunks (NVML's
 * reason: software power cap); the bandwidth- and latency-bound kernels of those steps
 * (XQA, the fp8 expansion, lm_head, the GDN core) ran 10-40% over their calibrated
 * times while the tensor-core GEMMs, which calib already times at their own capped
 * clock, did not.  calib measures, per law:
 *   hot  = its time right after a heater (the largest GEMM, run until the clock settles)
 *          over its time after a light load (a long XQA decode): the slowdown at the
 *          capped clock;
 *   heat = how far its own back-to-back load pulls the clock down, as a fraction of how
 *          far the heater does (0: not at all, 1: as far);
 * and per card the clocks under the light load and under the heater (f_cold, f_hot)
 * and the time constants of the clock's fall (tau_up) and recovery (tau_down).  A step's
 * heat target is the time-weighted heat of its items (tensor-core work: its FLOP rate
 * over the calibrated peak, which is the heater's rate; the rest: its law's heat); the
 * state h follows the targets step by step with those time constants (h = 0 standing for
 * f_cold, 1 for f_hot), and each item costs its calibrated time times heat_factor() at
 * h's mean over the step. */
/* The power law (a profile whose probes read the board's power, heat.h's second model).
 * The card holds its board power under a limit by lowering the SM clock.  calib reads,
 * besides the clocks above: the idle power P0, the heater's settled power (the limit, C),
 * the card's top clock f_top, and per law probe the settled power P and clock f of the law's
 * own back-to-back load.  A load's demand is its clock-scaled power at f_top,
 *   D = (P - P0) (f_top / f)^gamma,
 * and the clock under a demand D is the one at which the limit holds:
 *   f(D) = f_top                                  where D <= C - P0,
 *          f_top ((C - P0) / D)^(1/gamma)         above it;
 * a mixture's demand is its loads' demands weighted by their time.  gamma is fitted by
 * calib to duty-cycle mixes of the heater and the light load (power_fit_gamma).  A step's
 * demand follows its items' time-weighted demand with the time constants above, and each
 * item costs its time at f_top (calib scales every timing by the clock it ran at) times
 * (f_top / f)^s, s its law's clock sensitivity (the hot probes: ln(t_hot / t_cold) over
 * ln(f_cold / f_hot) at the clocks the probes ran at). */
#ifndef PACESIM_HEAT_H
#define PACESIM_HEAT_H

/* Move the state *h towards target c over dt seconds (time constant tau_up when
 * rising, tau_down when falling; a non-positive constant jumps at once).  Returns the
 * mean of h over the step; *h is left at the step's end value. */
double heat_step(double *h, double c, double dt, double tau_up, double tau_down);

/* The time constant of a settling trace: tr[i] sampled at times t[i] (seconds from the
 * start, increasing), going from `from` towards `to`.  The first time at which it has
 * covered 1 - 1/e of the way (linear between samples); NAN if it never does or if
 * from == to. */
double heat_tau(const double *t, const double *tr, int n, double from, double to);

/* An item's time factor at state h: the clock is f = f_cold - h (f_cold - f_hot) (the
 * two clocks calib's probes ran at), and time goes as f^-s, s such that the law's probes
 * took `hot` times as long at f_hot as at f_cold: s = ln(hot) / ln(f_cold / f_hot).  1
 * when the clocks are not usable. */
double heat_factor(double hot, double h, double f_cold, double f_hot);

/* The demand of a load that settled at power `watts` and clock `mhz` (0 when it draws no
 * more than the idle power). */
double power_demand(double watts, double mhz, double idle_w, double top_mhz, double gamma);

/* The clock under demand d (the formula above); top_mhz when the limit does not bind. */
double power_clock(double d, double idle_w, double cap_w, double top_mhz, double gamma);

/* gamma over n duty-cycle mixes: heater share duty[i] of the time, the rest the light load,
 * settled at clock mhz[i]; the heater settled at (hot_w, hot_mhz), the light load at
 * (light_w, light_mhz); the limit is the heater's power.  The gamma in [0.5, 6] that
 * minimises the mixes' squared log clock errors; *worst = the largest relative clock error
 * at it.  NAN when nothing can be fitted (no mix, or loads that do not reach the limit). */
double power_fit_gamma(const double *duty, const double *mhz, int n, double hot_w, double hot_mhz,
                       double light_w, double light_mhz, double idle_w, double top_mhz, double *worst);

/* A law's clock sensitivity from a probe timed t_cold at clock f_cold and t_hot at f_hot:
 * ln(t_hot / t_cold) / ln(f_cold / f_hot), clamped to [0, 1.5]; NAN when the clocks do
 * not differ. */
double power_sens(double t_cold, double f_cold, double t_hot, double f_hot);

/* A law's probes (rows [u, sens, watts, mhz], profile.h) at tensor-core rate u: the clock
 * sensitivity and the demand, linear in u between the probes in order of u (the nearest
 * one's beyond them); the probes' means when they do not differ in u.  n >= 1. */
void power_probe_at(const double (*pr)[4], int n, double u, double idle_w, double top_mhz, double gamma, double *sens,
                    double *demand);

#endif
