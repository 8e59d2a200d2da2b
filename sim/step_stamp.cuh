/* step_stamp.cuh -- the stamp kernel of pacesim-gpu replay --step-clock (sim/replay_gpu.cu), shared
 * with the study that checks it (calib/stamp_study.cu).  Launched as one one-thread block per
 * SM: each block writes its SM's cycle counter (clock64) and the GPU's nanosecond timer
 * (%globaltimer) to the slot of its SM (%smid), tagged with the step's number; of several blocks
 * on one SM the first to claim the slot for the step writes it (atomicMax on the number).  Two
 * stamps of one SM give its clock over the span between them (replay_stamp_mhz, sim/stamp.h).
 * Static: each program that includes it (the replay, calib, the study) has its own copy. */
#ifndef PACESIM_STEP_STAMP_CUH
#define PACESIM_STEP_STAMP_CUH

#include "stamp.h"

#define STAMP_SLOTS 512           /* %smid is below %nsmid: a few hundred at most on any card */

static __global__ void step_stamp(replay_stamp_t *s, unsigned long long seq)
{
    unsigned smid;
    unsigned long long ns;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
    long long c = clock64();
    if (smid < STAMP_SLOTS && atomicMax(&s[smid].seq, seq) < seq) {
        s[smid].ns = ns;
        s[smid].clk = (unsigned long long)c;
    }
}

#endif
