/* rescore: a GPU replay recorded several times (pacesim rescore FILE --measured RUN1.csv
 * --measured RUN2.csv ...), priced by the current model beside every run.  Per step type the
 * model's error and the spread between the runs; per window the prediction beside the runs'
 * mean, minimum and maximum, the error, the runs' spread, whether the prediction lies inside
 * the runs' range (and by how much it misses it), and how far the window moves when every
 * step costs RESCORE_SENS more (the prediction re-simulated with its costs scaled); per
 * percentile window the prediction's values around it (rescore_slope_t). */
#ifndef PACESIM_RESCORE_H
#define PACESIM_RESCORE_H

#include <stdio.h>
#include "replay.h"
#include "setup.h"

#define RESCORE_MAX_RUNS 16
#define RESCORE_SENS 0.01         /* the uniform step-time error of the sensitivity column */
#define RESCORE_MEMBERS 24        /* the noise ensemble's runs of the model */
#define RESCORE_MIN_PAIRED 20     /* steps paired across runs below which no step noise is read */

/* The GPU's own noise, read from the runs: `run`, the standard deviation over the runs of the
 * log of each run's summed measured over summed predicted (how much a whole run is slower or
 * faster); `step`, a step's own: every later run's steps paired with the first run's from the
 * first step while their shapes match (replay_rec_t.shape: the same work), the standard
 * deviation of log(measured_r / measured_1) about each pair of runs' mean, over sqrt 2 (0 where
 * fewer than RESCORE_MIN_PAIRED steps pair).  A window near saturation moves a whole step
 * when one request's chunk lands a step earlier: its measured runs scatter with this noise,
 * and one run of the model (no noise) is one draw of where it lands.  The prediction of a
 * window is the median over RESCORE_MEMBERS runs of the model, member k's every step at
 * exp(run z_k) x exp(step z_k,i) times its price (cost_noisy_new, seeded from the scenario's
 * seed: the same input, the same figures). */
typedef struct rescore_noise {
    double run, step;
    long paired;                  /* steps paired (over the later runs) */
} rescore_noise_t;
void rescore_noise(const replay_rec_t *const *rec, const long *n, int nruns, rescore_noise_t *o);

typedef struct rescore_type {     /* one step type over the runs */
    int runs;                     /* runs that have steps of the type */
    long steps;                   /* steps a run (mean) */
    double median;                /* the runs' median |predicted / measured - 1|, averaged */
    double max;                   /* the largest single-step error of any run */
    double sum_err;               /* the type's summed predicted / summed measured - 1, averaged */
    double ratio;                 /* the runs' mean of the type's summed measured / summed predicted */
    double spread;                /* (max - min) / ratio over the runs of summed measured / summed predicted */
    double excess;                /* 0 when the prediction lies within the runs' range of that ratio, else
                                     how far outside, signed as the error (+: priced above every run) */
} rescore_type_t;

typedef struct rescore_attn {     /* one step type's attention apart from the rest of its steps */
    int runs;                     /* runs whose steps of the type record their attention */
    double attn_err;              /* summed pred_attn / summed meas_attn - 1, averaged over those runs */
    double rest_err;              /* the same of (predicted - pred_attn) against (measured - meas_attn) */
    double share;                 /* summed meas_attn / summed measured, averaged */
} rescore_attn_t;

typedef struct rescore_window {   /* one window over the runs */
    int runs, defined;            /* runs where it is defined; defined: all are, and so is the prediction */
    double pred, mean, lo, hi;    /* the prediction (the ensemble's median); the runs' mean, minimum, maximum */
    double err;                   /* pred / mean - 1 */
    double spread;                /* (hi - lo) / mean */
    double excess;                /* 0 inside [lo, hi], else (pred - hi) / mean or (pred - lo) / mean */
    double sens;                  /* the prediction at RESCORE_SENS more a step over the prediction, - 1 */
} rescore_window_t;

/* A percentile window's neighbourhood in the prediction's values: the values at the band's ends
 * q -/+ min(RESCORE_BAND, (1 - q) / 2), and how far the window moves when one value (a request's;
 * a token gap's for itl) crosses it, from the side it lay on to the other: the band's width over
 * the ranks it spans.  Where that is RESCORE_STEEP or more, a few requests whose chunk lands a
 * step earlier or later -- a step-time difference far under the step error moves them -- move the
 * window past its bound: steep. */
#define RESCORE_BAND 0.05
#define RESCORE_STEEP 0.005
typedef struct rescore_slope {
    double qlo, qhi;              /* the band's ends (quantiles) */
    double v, lo, hi;             /* the prediction's values at q, qlo and qhi */
    double down, up;              /* lo / v - 1, hi / v - 1 */
    double per_value;             /* (hi - lo) / ((qhi - qlo) (n - 1)) / v: the move of one crossing (NAN: none) */
    int steep;                    /* per_value >= RESCORE_STEEP */
} rescore_slope_t;

/* The median of v[0 .. n) (sorted in place; NAN where one is NAN or n is 0). */
double rescore_median(double *v, int n);

/* The band around quantile q (0 < q < 1). */
void rescore_slope_band(double q, double *qlo, double *qhi);
/* The figures from the prediction's n values' quantiles: v at q, lo and hi at the band's ends. */
void rescore_slope_figs(double q, double v, double lo, double hi, long n, rescore_slope_t *o);

/* The figures from each run's statistics of one type (replay_stats) / each run's window value
 * (NAN: undefined in that run) and the prediction (pred_1pct: at 1% more a step; NAN none). */
void rescore_type_figs(const replay_stats_t *st, int nruns, rescore_type_t *o);
void rescore_window_figs(double pred, const double *meas, int nruns, double pred_1pct, rescore_window_t *o);
/* calib's band [min(a, b), max(a, b)] (a window at the two ends of calib's time constants)
 * against the runs' range [w->lo, w->hi]: 0 where they overlap, else the gap between them over
 * the runs' mean, signed as an error (> 0: the whole band above every run); NAN where w is
 * undefined or an end is NAN. */
double rescore_band_gap(double a, double b, const rescore_window_t *w);
/* The attention figures of one type from each run's statistics of it (replay_stats): a run
 * counts where its steps of the type record attention (meas_attn > 0 in sum) and leave time
 * beside it (measured above meas_attn in sum). */
void rescore_attn_figs(const replay_stats_t *st, int nruns, rescore_attn_t *o);

/* Run u's engine (the prediction), the prediction again at RESCORE_SENS more a step, and one
 * engine a recording (measured[0 .. nruns), 2 <= nruns <= RESCORE_MAX_RUNS), then the
 * prediction again with each step type's steps at the runs' time (each type's price x its
 * rescore_type_t ratio: the step count the prediction would take were its only difference from
 * the runs the schedule, not the step times), and print the report to out.  0; -2 a recording
 * refused (err: file:line:col), -1 a run failed (err). */
/* recorded_clock: a diagnostic of the clock model (pacesim rescore --recorded-clock): every
 * recorded step priced at the SM clock its run recorded, the prediction's step k at run 1's
 * k-th clock, and a table of the model's clock against the recorded one per step type; the
 * clock each run stamped over the step (sm_mhz_step) where every run has it and recorded_clock
 * is 1, NVML's reading (sm_clock_mhz) where it is 2 (--nvml-clock) or a run has no stamps.
 * compute_hot: calib's compute-bound GEMM probe in the GEMMs' price (cost_profile_compute_hot),
 * at those clocks, or without recorded_clock at the model's own: -1, the default, where the
 * recorded idle is in use (rescore_probe); 1 (--compute-hot) always, with the same table
 * printed (a diagnostic); 0 (--no-compute-hot) never. */
/* recorded_idle: where every run records the GPU's idle before each step (a back-to-back
 * replay's gap_s column), the heat state relaxes over it (cost_profile_idle_schedule): each
 * run's steps after their own run's idle, the prediction's step k after the runs' mean at k;
 * 0, or a run without the column: the step law's host time, as the model prices an engine. */
/* jobs: the noise ensemble's runs at once (threads; the figures are the same for any). */
int rescore_runs(FILE *out, setup_t *u, const char *file, const char *const *measured, int nruns, int recorded_clock,
                 int compute_hot, int recorded_idle, int jobs, char *err, size_t errsz);
/* Whether rescore prices calib's compute-bound GEMM probe: compute_hot 1 (forced) or 0 (off) as
 * given; -1 (the default) where the profile has the probe, the recorded idle is in use
 * (recorded_idle: every run records gap_s and --no-recorded-idle was not given; idle_off: they
 * record it but it is switched off) and the runs ran in item order (not more than half of their
 * steps layer by layer: layered of steps, the counts over runs that all recorded --layer-order's
 * column, 0 of 0 where one did not; layer by layer is the engine's order, where each
 * GEMM runs between memory-bound items and the probe's back-to-back heat is not the GEMMs'; the
 * probe over-priced such runs' mixed steps by 1-2%, docs/validation.md section 2).  With out, the
 * default's one line saying so or why not (nothing where the profile has no probe or the choice
 * was given). */
int rescore_probe(const setup_t *u, int compute_hot, int recorded_idle, int idle_off, long layered, long steps,
                  FILE *out);

#endif
