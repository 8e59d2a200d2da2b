/* sustain.h -- calib's sustained-load probes: what the card's power limit does to each
 * law (the model is in sim/heat.h).  Host logic only: it drives a calib timer (the CUDA
 * one, or a fake in tests/check_sustain.c) and reads the SM clock through its clock op.
 *
 *   1. the light load (a long fp16 XQA decode, bandwidth-bound) for 0.3 s: clock_cold;
 *   2. the heater (the grid's largest GEMM) for 1 s, the clock traced: clock_hot, and
 *      tau_up, the time the clock takes to cover 1 - 1/e of its fall; over the last 30% of
 *      1. and 2. the timer's span_clock (the SMs' cycle counters) too: stamp_cold, stamp_hot
 *      (stored as sustained.stamp_cold_mhz, stamp_hot_mhz: the step stamps' meter);
 *   3. the light load again for 0.6 s, its time per run traced: tau_down, the time its
 *      slowdown takes to cover 1 - 1/e of its recovery (from the kernel's own times:
 *      NVML's clock reading updates too slowly to resolve the recovery); then the heater for
 *      1 s and the recovery again, SUSTAIN_TAU_TRACES traces in all: tau_down is their median
 *      (one trace of two calibs of one card read 36 and 12 ms), their range printed and
 *      stored (the profile's sustained.tau_down_range_s, where two or more resolved one);
 *   4. per law, two of its measured points (at a third and two thirds of its sorted
 *      times, among those of 20 us .. 20 ms): timed 3 times right after the light load
 *      and 3 times right after the heater, each run for 4 of its time constants first
 *      (0.1 .. 0.5 s) -> hot = the ratio of the medians; and run back to back for 6 time
 *      constants (0.25 .. 0.6 s) after the light load -> the clock it settles at, as a fraction of the heater's
 *      drop -> heat.  Medians over the probes.
 *   5. the clock against load: after the light load, 20 ms cycles (or one heater run and its
 *      share of light load, if longer) of the heater for a share
 *      `duty` of the time and the light load for the rest (shares at their calibrated times),
 *      duty 0.1, 0.2, .. 1, each for 6 time constants (0.4 .. 1 s) -> the clock (and the board
 *      power, where the timer reads it) over the last 30%: the profile's sustained.curve, the
 *      clock against load (recorded for study; sim/heat.h says why pricing does not use it);
 *      then GEMMs of several FLOP rates back to back, their clock and power printed beside
 *      the curve's at that duty.
 *   6. a compute-bound GEMM's hot (sustained.gemm_compute_hot): the grid's GEMM of m >= 512
 *      (not a kernel's own point: calib_job_t.kpoint) nearest 0.4 ms (0.1 .. 1 ms; none: not
 *      measured) timed 3 times right after the light load and 3 times right after the heater,
 *      as the laws' probes in 4. -> the ratio of the medians (the gemm law's own hot comes
 *      from its probes, of m = 64 on the grids so far: bandwidth-bound GEMMs that hardly slow
 *      with the clock).  Then, after the light load, that GEMM back to back for 6 of 2.'s time
 *      constants (0.4 .. 1 s), its time per run
 *      traced in ~1 ms batches queued on the card (the timer's seq_queue; timed calls where it
 *      has none), SUSTAIN_TAU_TRACES times where queued (each after the light load; the median
 *      stored, the range printed and stored as sustained.tau_up_runs_range_s): the time its slowdown takes to cover 1 - 1/e of its rise (tau_up_runs), the
 *      clock's fall read from a kernel's own times as 3. reads the recovery (from the fastest
 *      batch of the first 3 ms); printed beside 2.'s tau_up and stored as
 *      sustained.tau_up_runs_s (NVML's reading holds ~0.1 s, so 2. bounds the fall rather
 *      than measures it); with the timer's span_clock, the GEMM again in timed calls of ~1 ms,
 *      each stamped: that trace's time and clock by the SMs' counters printed (tau_up_stamps,
 *      not stored).
 *   7. the layer-interleaved load (sustained.interleave): that GEMM and an fp16 q = 1 XQA
 *      decode row (the one nearest 0.3 ms) in "layers", the GEMM a share 0.25, 0.5, 0.75 of
 *      each layer's time at their cold times (the fewest GEMM runs, 1 .. 8, that with whole
 *      decode runs put the share within 0.04: layers of a ms or two, a layer's GEMMs and its
 *      attention), and the same shares in 20 ms cycles (as the curve's); after the light load,
 *      each for 6 time constants (0.4 .. 1 s) -> over the last 30%: the clock, the board
 *      power, each part's time a run over its time right after the light load (median of 3),
 *      and the duty: the card's busy seconds over the host's wall seconds.  Recorded, not
 *      priced by.
 *      The layers run back to back on the card (the timer's seq_queue, calib.h): batches of
 *      ~20 ms of layers, up to three queued ahead, each part's time from events around it, the
 *      clock and the power read between batches while the next ones run -- so the duty is ~1
 *      however long a reading takes.  The 20 ms cycles run a call of the timer's run() a part
 *      (the host waits for the card after each, and reads the clock and the power after each
 *      part): their duty says what those gaps cost.  The layers were run that way too at
 *      first, and at layer scale the card then waited on the host much of the time (the
 *      call's return, the next call's launches, an NVML reading every ~2 ms of the card's
 *      time): the rows read the idle card's clock and no slowdown.  One layer row (share 0.5)
 *      is still run that way, its duty beside the back-to-back row's (printed, not stored).
 *      A row whose duty is under SUSTAIN_DUTY_MIN is named in the log.
 *   8. the elementwise proxy's hot at a serving budget (sustained.elementwise_hot): its L2-cold
 *      point (law elementwise.cold) of SUSTAIN_ELEM_MIN_TOKENS tokens or more nearest
 *      SUSTAIN_ELEM_TOKENS (by ratio; none: not measured) timed 3 times right after the light
 *      load and 3 times right after the heater, interleaved, as the compute-bound GEMM in 6.
 *      -> the ratio of the medians; the warm point of the same tokens likewise, printed beside
 *      it (not stored), with the law's own hot and the exponent s = ln hot / ln(cold / hot
 *      clock).  The elementwise laws' own probes (4.) are points of 20 us .. 20 ms at a third
 *      and two thirds of their sorted times: a few hundred tokens at most on the grids so far,
 *      where the replays' mixed steps run the proxy at 1-16K tokens.
 *   9. the GEMMs' hot across shapes (sustained.gemm_hot_probes): the gemm law's one hot (4.)
 *      is the median of two probes picked by time rank, and near-ties change the picks (an LM
 *      head of a few tokens barely slows, a compute-bound GEMM of the same time slows by much
 *      more): across the H100 calibs so far it read 1.01 .. 1.20.  Here fixed aims instead: for
 *      each of SUSTAIN_GPROBE_NT times (30 us, 0.1, 0.3, 1, 3 ms), among the grid GEMMs of the
 *      heater's law (not a kernel's own point) within a factor 1.5 of it, the one of the
 *      highest and the one of the lowest FLOP rate
 *      (one where their rates are within a factor 1.5); each timed as the compute-bound GEMM
 *      in 6., in two passes over all of them -> per probe its m, n, k, calibrated time and the
 *      two passes' hot: the clock sensitivity of a GEMM against its time and FLOP rate, and
 *      how well it repeats.
 * Time is counted as the timer's own (GPU) seconds, so a fake timer is deterministic. */
#ifndef PACESIM_SUSTAIN_H
#define PACESIM_SUSTAIN_H

#include <stdio.h>
#include "calib.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SUSTAIN_MAX_LAWS 32
#define SUSTAIN_CURVE_N 10         /* the clock-against-load points: duty 0.1, 0.2, .. 1 */
#define SUSTAIN_INTER_N 6          /* the layer-interleaved load's rows (7. above), */
#define SUSTAIN_INTER_COLS 7       /*   their columns */
#define SUSTAIN_DUTY_MIN 0.9       /* a row whose duty is below this is named in the log */
#define SUSTAIN_ELEM_TOKENS 2048   /* the elementwise probe's aim (8. above): a serving budget */
#define SUSTAIN_ELEM_MIN_TOKENS 512  /*   and its least tokens */
#define SUSTAIN_TAU_TRACES 3       /* traces of each priced time constant (3. and 6.): the median stored */
#define SUSTAIN_GPROBE_NT 5        /* the GEMM probes' time aims (9. above): 30 us .. 3 ms */
#define SUSTAIN_GPROBE_MAX (2 * SUSTAIN_GPROBE_NT)   /*   two shapes at each */
#define SUSTAIN_GPROBE_COLS 6      /*   m, n, k, calibrated seconds, the two passes' hot */

typedef struct calib_sustain {
    int ok;                       /* 1: measured; 0: skipped (why says why) */
    char why[160];
    double clock_cold, clock_hot; /* MHz: settled under the light load, under the heater */
    double stamp_cold, stamp_hot; /* the same spans by the SMs' cycle counters (the timer's span_clock;
                                     NAN: not read); the profile's stamp_cold_mhz, stamp_hot_mhz */
    double tau_up, tau_down;      /* seconds */
    double tau_up_runs;           /* 6.: the fall from the compute-bound GEMM's own times (s; NAN: not
                                     measured); the profile's tau_up_runs_s, priced in place of tau_up */
    double tau_down_range[2], tau_up_runs_range[2];   /* the fastest and slowest of their traces
                                     (s; NAN: none resolved); the profile's ranges where two or
                                     more resolved one (rescore's calib band) */
    int ntau_down, ntau_up_runs;  /* of SUSTAIN_TAU_TRACES traces, those that resolved one */
    double tau_up_stamps;         /* 6.: the clock's fall by the SMs' cycle counters over the GEMM in
                                     timed calls (s; NAN: not read or not resolved); printed, not stored */
    double hot[SUSTAIN_MAX_LAWS], heat[SUSTAIN_MAX_LAWS];   /* per law index; NAN: not probed */
    int ncurve;                   /* the clock against load (5. above): points measured */
    double curve[SUSTAIN_CURVE_N][3];   /* duty (the heater's share at calibrated times), MHz, W (0: not read) */
    int has_chot;                 /* 6. above measured: */
    double chot[4];               /*   the GEMM's m, n, k and its hot */
    int has_ehot;                 /* 8. above measured: */
    double ehot[2];               /*   the L2-cold proxy's tokens and its hot */
    int ngprobe;                  /* 9. above: GEMM probes measured, by calibrated time */
    double gprobe[SUSTAIN_GPROBE_MAX][SUSTAIN_GPROBE_COLS];
    int ninter;                   /* 7. above: rows measured */
    double inter[SUSTAIN_INTER_N][SUSTAIN_INTER_COLS];   /* gemm share, layer ms, MHz, W (0: not read),
                                           the GEMM's and the decode's time factor, the duty (the
                                           card's busy seconds over the wall seconds; 0: not read) */
    double seconds;               /* timer time the probes took */
} calib_sustain_t;

/* Probe with timer t over the measured jobs (t_s[i] = job i's calibrated seconds, NAN or
 * <= 0 if it was not measured), nlaws law indices.  Progress lines on `progress` (may be
 * NULL).  0 (out->ok says whether anything was measured), or -1 with t->err filled. */
int calib_sustain(calib_timer_t *t, const calib_job_t *jobs, const double *t_s, int njobs, int nlaws,
                  calib_sustain_t *out, FILE *progress);

/* The pre-load study (calib --preload-study): each law's probes (as above) timed right after
 * each of these, 3 times, medians printed on `progress` with the grid's time:
 *   a 5 ms and a 100 ms rest; 100 ms of the heater a quarter of the time (20 ms cycles with
 *   rests); 100 ms of the heater; and for a GEMM also 100 ms of the light load and 100 ms of
 *   the fastest fp16 prefill point (a light, latency-bound call, as a serving step's
 *   per-sequence prefill loop runs).
 * Every timing follows its pre-load with no host work between (the job is prepared first; a
 * GEMM pre-load keeps its state, calib.h).  Needs the timer's rest (idle); 0, or -1 with t->err
 * filled. */
int calib_preload_study(calib_timer_t *t, const calib_job_t *jobs, const double *t_s, int njobs, int nlaws,
                        FILE *progress);

#ifdef __cplusplus
}
#endif
#endif
