/* cost_scaled.c: every step of another model scaled by k.  See cost_scaled.h. */
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include "cost_scaled.h"

typedef struct {
    cost_model_t *inner;          /* owned */
    double k[4];                  /* by step_type_t (STEP_ANY unused); all alike for a uniform scale */
    double sigma;                 /* each step's own factor exp(sigma z), z ~ N(0, 1) (0: none) */
    gsl_rng *rng;                 /* the steps' draws (sigma > 0), a stream of its own */
} scaled_t;

static int scaled_step(cost_model_t *cm, const cost_step_t *in, cost_breakdown_t *o)
{
    scaled_t *s = cm->impl;
    if (s->inner->step(s->inner, in, o) < 0) {
        snprintf(cm->err, sizeof cm->err, "%s", s->inner->err);
        return -1;
    }
    double k = s->k[cost_step_type(in)];
    if (s->sigma > 0) k *= exp(gsl_ran_gaussian(s->rng, s->sigma));
    o->total *= k, o->attn *= k, o->linear *= k, o->gdn *= k, o->elementwise *= k;
    o->allreduce *= k, o->overhead *= k, o->mtp *= k;
    for (int q = 0; q < ROUTE__N; q++) o->attn_route[q] *= k;
    return 0;
}

static void scaled_destroy(cost_model_t *cm)
{
    scaled_t *s = cm->impl;
    cost_free(s->inner);
    if (s->rng) gsl_rng_free(s->rng);
    free(s);
    free(cm);
}

int cost_step_type(const cost_step_t *in)
{
    return in->rows == in->decode_rows ? STEP_DECODE_ONLY : in->decode_rows == 0 ? STEP_PREFILL_ONLY : STEP_MIXED;
}

cost_model_t *cost_scaled_new(cost_model_t *inner, double k)
{
    double kt[4] = { k, k, k, k };
    return cost_scaled_types_new(inner, kt);
}

cost_model_t *cost_scaled_types_new(cost_model_t *inner, const double k[4])
{
    cost_model_t *cm = calloc(1, sizeof *cm);
    scaled_t *s = malloc(sizeof *s);
    if (!cm || !s) {
        free(cm);
        free(s);
        return NULL;
    }
    s->inner = inner;
    for (int t = 0; t < 4; t++) s->k[t] = k[t];
    s->sigma = 0, s->rng = NULL;
    cm->name = inner->name;       /* the step's price is still the inner model's, scaled */
    cm->impl = s;
    cm->step = scaled_step;
    cm->destroy = scaled_destroy;
    return cm;
}

cost_model_t *cost_scaled_inner(cost_model_t *cm)
{
    return cm && cm->step == scaled_step ? ((scaled_t *)cm->impl)->inner : cm;
}

cost_model_t *cost_noisy_new(cost_model_t *inner, double k, double sigma, uint64_t seed)
{
    cost_model_t *cm = cost_scaled_new(inner, k);
    if (!cm || !(sigma > 0)) return cm;
    scaled_t *s = cm->impl;
    if (!(s->rng = gsl_rng_alloc(gsl_rng_mt19937))) {
        free(s);                  /* inner is still the caller's */
        free(cm);
        return NULL;
    }
    gsl_rng_set(s->rng, (unsigned long)seed);
    s->sigma = sigma;
    return cm;
}
