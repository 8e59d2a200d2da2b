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

/* A span's stamps: the start and end stamps on the card, their copy on the host, the blocks a
 * stamp launches (one per SM), the current span's number.  Zero it before the first mark;
 * stamp_span_free when done. */
typedef struct stamp_span {
    replay_stamp_t *dev;                    /* STAMP_SLOTS start stamps, then STAMP_SLOTS end stamps */
    replay_stamp_t host[2 * STAMP_SLOTS];
    int nsm;
    unsigned long long seq;                 /* the span being stamped: 1, 2, ... (0: none yet) */
} stamp_span_t;

/* Queue a new span's start stamps (end 0) or the current span's end stamps (end 1) on the
 * default stream, tagged with its number; the first call makes the buffer (zeroed: number 0 is
 * no span's). */
static inline cudaError_t stamp_span_mark(stamp_span_t *sp, int end)
{
    cudaError_t e;
    if (!sp->dev) {
        int dev = 0;
        if ((e = cudaGetDevice(&dev)) != cudaSuccess
            || (e = cudaDeviceGetAttribute(&sp->nsm, cudaDevAttrMultiProcessorCount, dev)) != cudaSuccess
            || (e = cudaMalloc((void **)&sp->dev, sizeof sp->host)) != cudaSuccess)
            return e;
        if ((e = cudaMemset(sp->dev, 0, sizeof sp->host)) != cudaSuccess) {
            cudaFree(sp->dev);
            sp->dev = NULL;
            return e;
        }
    }
    if (!end) sp->seq++;
    step_stamp<<<sp->nsm > 0 ? sp->nsm : 1, 1>>>(sp->dev + (end ? STAMP_SLOTS : 0), sp->seq);
    return cudaGetLastError();
}

/* Wait for the stamps queued so far and give the current span's clock (replay_stamp_mhz: NAN
 * where no SM was stamped at both ends). */
static inline cudaError_t stamp_span_mhz(stamp_span_t *sp, double *mhz)
{
    *mhz = NAN;
    if (!sp->dev) return cudaSuccess;
    cudaError_t e = cudaMemcpy(sp->host, sp->dev, sizeof sp->host, cudaMemcpyDeviceToHost);
    if (e == cudaSuccess) *mhz = replay_stamp_mhz(sp->host, sp->host + STAMP_SLOTS, STAMP_SLOTS, sp->seq);
    return e;
}

static inline void stamp_span_free(stamp_span_t *sp)
{
    cudaFree(sp->dev);
    sp->dev = NULL;
}

#endif
