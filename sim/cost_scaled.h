/* cost_scaled: a cost model whose every step costs k times what another model says (every
 * part of the breakdown scaled alike).  What `rescore` re-simulates its "+1% step" column
 * with and `run --error-bars P` its runs at (1 - P/100) and (1 + P/100): a uniform step-time
 * error, the arrivals and the seed unchanged. */
#ifndef PACESIM_COST_SCALED_H
#define PACESIM_COST_SCALED_H

#include <stdint.h>
#include "cost.h"

/* A model pricing every step at k (> 0) times inner's price; it owns inner (cost_free frees
 * both).  NULL out of memory (inner then still the caller's). */
cost_model_t *cost_scaled_new(cost_model_t *inner, double k);
/* The same with each step type's steps at their own factor: k indexed by step_type_t
 * (k[STEP_DECODE_ONLY], k[STEP_MIXED], k[STEP_PREFILL_ONLY], each > 0; k[STEP_ANY] unused).
 * What `rescore` prices the prediction at the runs' own time per step type with. */
cost_model_t *cost_scaled_types_new(cost_model_t *inner, const double k[4]);
/* A model pricing every step at k x exp(sigma z) times inner's price, z a standard normal
 * drawn afresh for each step (gsl_ran_gaussian) from its own mt19937 stream seeded with seed
 * (gsl_rng_set: its low 32 bits; the same seed, the same factors in the same order): the GPU's
 * own step-to-step noise around a run-level factor k.  What `rescore` runs its noise ensemble
 * with.  It owns inner; NULL out of memory (inner then still the caller's). */
cost_model_t *cost_noisy_new(cost_model_t *inner, double k, double sigma, uint64_t seed);
/* A step's type (step_type_t) as the steps CSVs name it: decode (every row decoding),
 * prefill (none), else mixed. */
int cost_step_type(const cost_step_t *in);
/* The model a scaled model wraps (for the profile model's own settings), or cm itself when
 * cm is not a scaled model. */
cost_model_t *cost_scaled_inner(cost_model_t *cm);

#endif
