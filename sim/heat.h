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
 * heat target is the time-weighted heat of its items (a cuBLAS GEMM: its FLOP rate over
 * the calibrated peak, which is the heater's rate; the rest, attention included: its law's
 * heat); the
 * state h follows the targets step by step with those time constants (h = 0 standing for
 * f_cold, 1 for f_hot), and each item costs its calibrated time times heat_factor() at
 * h's mean over the step. */
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

/* The same at clock f (MHz): (f_cold / f)^s; 1 when the clocks are not usable. */
double heat_factor_at(double hot, double f, double f_cold, double f_hot);

/* The clock (MHz) at state h: f_cold - h (f_cold - f_hot), the linear map.  (calib also
 * records the clock against a duty-cycled load, the profile's sustained.curve; pricing does
 * not use it: with calib's light load between the heater's runs the card sat at its power
 * cap from a tenth of the time on, which is not how a serving step's attention and
 * elementwise work load it -- docs/validation.md section 2.) */
double heat_clock(double h, double f_cold, double f_hot);

#endif
