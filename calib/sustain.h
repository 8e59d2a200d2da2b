/* sustain.h -- calib's sustained-load probes: what the card's power limit does to each
 * law (the model is in sim/heat.h).  Host logic only: it drives a calib timer (the CUDA
 * one, or a fake in tests/check_sustain.c) and reads the SM clock through its clock op.
 *
 *   1. the light load (a long fp16 XQA decode, bandwidth-bound) for 0.3 s: clock_cold;
 *   2. the heater (the grid's largest GEMM) for 1 s, the clock traced: clock_hot, and
 *      tau_up, the time the clock takes to cover 1 - 1/e of its fall;
 *   3. the light load again for 0.6 s, its time per run traced: tau_down, the time its
 *      slowdown takes to cover 1 - 1/e of its recovery (from the kernel's own times:
 *      NVML's clock reading updates too slowly to resolve the recovery);
 *   4. per law, two of its measured points (at a third and two thirds of its sorted
 *      times, among those of 20 us .. 20 ms): timed 3 times right after the light load
 *      and 3 times right after the heater, each run for 4 of its time constants first
 *      (0.1 .. 0.5 s) -> hot = the ratio of the medians; and run back to back for 6 time
 *      constants (0.25 .. 0.6 s) after the light load -> the clock it settles at, as a fraction of the heater's
 *      drop -> heat.  Medians over the probes.  The GEMMs are probed at four points spread
 *      over their FLOP rates (a small-m GEMM streams weights, a large one is bound by the
 *      tensor cores: they differ in power and in what the clock does to them).
 * Where the timer can also rest the card (the duty law, sim/heat.h):
 *   5. per probe, 3 timings from a cool start (0.1 s of the heater a quarter of the time, in
 *      20 ms cycles with idle gaps: a light duty that keeps the clock up; then one run) ->
 *      hot_cool = the median time right after the heater over the median cool one;
 *   6. the heater from a cool start, then in 20 ms cycles with idle gaps a quarter, half and
 *      three quarters of the time and continuously, 0.8 s each after a 0.3 s rest: its time
 *      per run over each one's last 30% -> phi = how far each is from the cool time towards
 *      the continuous one, against the heater's share of the time as it ran.
 * Time is counted as the timer's own (GPU) seconds, so a fake timer is deterministic. */
#ifndef PACESIM_SUSTAIN_H
#define PACESIM_SUSTAIN_H

#include <stdio.h>
#include "calib.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SUSTAIN_MAX_LAWS 32
#define SUSTAIN_MAX_PROBES 4
#define SUSTAIN_MIXES 3               /* duty cycles below the continuous load (+1: <= PROF_MAX_PROBES) */

typedef struct calib_probe {
    int job;                      /* index into the jobs */
    double t_cool, t_hot;         /* seconds a run from a cool start / right after the heater */
    double hot;                   /* t_hot / t_cool (NAN: not measured) */
} calib_probe_t;

typedef struct calib_sustain {
    int ok;                       /* 1: measured; 0: skipped (why says why) */
    char why[160];
    double clock_cold, clock_hot; /* MHz: settled under the light load, under the heater */
    double tau_up, tau_down;      /* seconds */
    double hot[SUSTAIN_MAX_LAWS], heat[SUSTAIN_MAX_LAWS];   /* per law index; NAN: not probed */
    int nprobe[SUSTAIN_MAX_LAWS];
    calib_probe_t probe[SUSTAIN_MAX_LAWS][SUSTAIN_MAX_PROBES];
    int has_duty;                 /* 1: the duty law below was measured */
    int heater;                   /* the heater's index into the jobs */
    double heater_cool;           /* its seconds a run from a cool start */
    int ncycle;                   /* the heater's duty cycles, the continuous load last: */
    double cycle_share[SUSTAIN_MIXES + 1], cycle_t[SUSTAIN_MIXES + 1], cycle_phi[SUSTAIN_MIXES + 1];
                                  /* its share of the time as it ran, seconds a run, phi */
    double seconds;               /* timer time the probes took */
} calib_sustain_t;

/* Probe with timer t over the measured jobs (t_s[i] = job i's calibrated seconds, NAN or
 * <= 0 if it was not measured), nlaws law indices.  Progress lines on `progress` (may be
 * NULL).  0 (out->ok says whether anything was measured), or -1 with t->err filled. */
int calib_sustain(calib_timer_t *t, const calib_job_t *jobs, const double *t_s, int njobs, int nlaws,
                  calib_sustain_t *out, FILE *progress);

#ifdef __cplusplus
}
#endif
#endif
