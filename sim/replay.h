/* replay: price a scenario's steps by running them on the GPU (pacesim replay --gpu).
 *
 * The GPU cost model runs, for every step, exactly the items cost_enumerate() lists --
 * each attention call of the routed plan with this repo's kernels over a real paged KV
 * cache (every request's pages are its own blocks of one pool, so a request's expanded
 * decode rows share their pages as in the engine), the GEMMs of the model's per-rank
 * shapes through cuBLAS, the GDN and elementwise proxies -- each item `count` times back
 * to back between CUDA events.  The measured time advances the clock.  Beside it the
 * profile model prices the same step, so prediction and measurement differ only in the
 * pricing.  What no kernel can measure (the engine's host overhead, "step"; the
 * all-reduce at TP > 1) is taken from the profile and reported as such.
 * Built only with nvcc (bin/pacesim-gpu); the CPU build never sees it. */
#ifndef PACESIM_REPLAY_H
#define PACESIM_REPLAY_H

#include "cost.h"

typedef struct replay_rec {       /* one step */
    long no;
    int type;                     /* step_type_t */
    double predicted, measured;   /* seconds (measured includes the profile's step overhead) */
    double pred_attn, meas_attn;
} replay_rec_t;

/* The GPU model; pred (borrowed, may be NULL) prices each step beside it.  page and
 * kv are the engine's block size and KV dtype.  NULL with err filled (no GPU, ...). */
cost_model_t *replay_gpu_new(const model_t *m, int tp, int page, int kv_fp8, cost_model_t *pred,
                             char err[COST_ERR_MAX]);
/* The per-step records so far (owned by the model). */
const replay_rec_t *replay_records(const cost_model_t *cm, long *n);

#endif
