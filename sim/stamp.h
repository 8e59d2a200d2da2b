/* stamp.h -- pacesim-gpu replay --step-clock's stamps and the clock they give, header-only so that
 * the replay (sim/replay.c, sim/replay_gpu.cu) and the study that checks the stamps
 * (calib/stamp_study.cu) read them with the same arithmetic. */
#ifndef PACESIM_STAMP_H
#define PACESIM_STAMP_H

#include <math.h>

/* One SM's stamp, written by a one-thread block on the GPU before a step's first item (and again
 * after its last): the SM's cycle counter (clock64) and the GPU's nanosecond timer
 * (%globaltimer), tagged with the step's number (seq). */
typedef struct replay_stamp {
    unsigned long long seq, clk, ns;
} replay_stamp_t;

/* The step's mean SM clock (MHz) from the start stamps a[] and end stamps b[], indexed by SM
 * (%smid, n of them): over every SM stamped at both ends for step seq, its cycles over the
 * nanoseconds between its two stamps (cycles summed over nanoseconds summed).  A cycle counter
 * is one SM's own, so only an SM's two stamps are compared with each other.  NAN where no SM has
 * both, or the result is outside [1, 1e5] MHz. */
static inline double replay_stamp_mhz(const replay_stamp_t *a, const replay_stamp_t *b, int n,
                                      unsigned long long seq)
{
    double cyc = 0, ns = 0;
    for (int i = 0; i < n; i++) {
        if (a[i].seq != seq || b[i].seq != seq) continue;   /* not stamped at both ends of this step */
        long long dc = (long long)(b[i].clk - a[i].clk), dn = (long long)(b[i].ns - a[i].ns);
        if (dc <= 0 || dn <= 0) continue;
        cyc += (double)dc;
        ns += (double)dn;
    }
    double mhz = ns > 0 ? 1e3 * cyc / ns : NAN;
    return mhz >= 1 && mhz <= 1e5 ? mhz : NAN;
}

#endif
