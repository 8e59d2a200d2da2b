/* allreduce: measure the tensor-parallel all-reduce of a step and fit its law.
 *
 * A TP>1 step sends two all-reduces per layer of tokens x hidden fp16 values (cost.h,
 * law "allreduce": t = c0 + c1 * bytes).  ar_measure() times the sizes a step of the
 * model sends (tokens 1 .. 8192, powers of two and the reference chunk sizes) through
 * a timer callback -- NCCL on N GPUs in calib/allreduce_gpu.cu, a fake in the tests --
 * takes the median of the repeats, fits the law with fit_law() and puts it into the
 * profile (replacing an older one).  Pure C; the caller owns the profile. */
#ifndef PACESIM_ALLREDUCE_H
#define PACESIM_ALLREDUCE_H

#include "model.h"
#include "profile.h"

/* Time one all-reduce of `bytes` bytes: reps timings into sec[0..reps).  0 or -1. */
typedef int (*ar_timer_fn)(void *ctx, double bytes, int reps, double *sec);

/* Measure, fit and put law "allreduce" into p.  ngpus and what go into the provenance.
 * 0, or -1 with err filled. */
int ar_measure(profile_t *p, const model_t *m, int ngpus, const char *what, ar_timer_fn timer, void *ctx,
               char err[256]);

#endif
