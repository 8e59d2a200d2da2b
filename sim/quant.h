/* quant: the mean and quantiles of a stream of non-negative values (latencies, seconds),
 * in bounded memory.
 *
 * Exact while the count is at most the object's exact limit (QUANT_EXACT_MAX unless set
 * otherwise): the values are kept and a quantile is selected from them (quickselect).  Past the
 * limit the kept values are folded into a log-bucketed histogram (the DDSketch layout:
 * bucket i holds (g^(i-1), g^i], g = (1+a)/(1-a), a = QUANT_REL_ERR) and every later value
 * goes there; memory is then a fixed QUANT_NBUCKETS counters whatever the count.
 *
 * A quantile q is the order statistic at rank h = q*(n-1) (0-based), linearly interpolated
 * between ranks floor(h) and ceil(h) (numpy's default, what vLLM's benchmark reports).
 * Exact mode returns exactly that.  Sketch mode returns the same interpolation between
 * the two order statistics' bucket representatives 2g^i/(g+1); each is within a relative
 * error a of the order statistic, so the result is within a relative error a of the exact
 * value, for values in [QUANT_MIN, QUANT_MAX].  Values below QUANT_MIN count as 0 (an
 * absolute error below QUANT_MIN); values above QUANT_MAX count as QUANT_MAX.  The mean,
 * count, min and max are exact in both modes. */
#ifndef PACESIM_QUANT_H
#define PACESIM_QUANT_H

#include <stddef.h>

#define QUANT_EXACT_MAX 100000L     /* values kept exactly (800 KB) before the sketch */
#define QUANT_REL_ERR 0.005         /* the sketch's relative error bound a */
#define QUANT_MIN 1e-9              /* smallest value the sketch resolves (seconds) */
#define QUANT_MAX 1e9

typedef struct quant {
    long n;
    double sum, min, max;
    long exact_max;                 /* the exact limit */
    double *vals;                   /* exact mode: n values (unsorted), cap of them */
    long cap;
    long *buckets;                  /* sketch mode: NULL until the limit is passed */
    long zeros;                     /* sketch mode: values below QUANT_MIN */
    double sk_lg;                   /* sketch mode: log(g), once computed (0 before) */
    long sk_lo, sk_nb;              /* sketch mode: the first bucket's index, the bucket count */
    double sk_lastv;                /* sketch mode: the last value put and its bucket (0: none) */
    long sk_lasti;
} quant_t;

/* An empty stream; exact_max <= 0 means QUANT_EXACT_MAX. */
void quant_init(quant_t *q, long exact_max);
/* Add a value (negative values count as 0, NAN is ignored).  0, or -1 out of memory
 * (the value is then not counted). */
int quant_add(quant_t *q, double v);
/* The mean, or NAN with no values. */
double quant_mean(const quant_t *q);
/* The q-quantile, 0 <= p <= 1 (see above), or NAN with no values.  Sorts the kept values
 * in exact mode (hence not const). */
double quant_quantile(quant_t *q, double p);
/* 1 while every quantile is exact, 0 once the sketch holds the values. */
int quant_is_exact(const quant_t *q);
void quant_free(quant_t *q);

#endif
