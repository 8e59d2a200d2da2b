/* quant.c: exact quantiles up to a count, a log-bucketed sketch past it.  See quant.h. */
#include "quant.h"

#include <math.h>
#include <stdlib.h>

static double gamma_(void) { return (1.0 + QUANT_REL_ERR) / (1.0 - QUANT_REL_ERR); }
/* Bucket i holds (g^(i-1), g^i]; the array starts at the bucket of QUANT_MIN. */
static long bucket_of(double v) { return (long)ceil(log(v) / log(gamma_())); }
static long bucket_lo(void) { return bucket_of(QUANT_MIN); }
static long nbuckets(void) { return bucket_of(QUANT_MAX) - bucket_lo() + 1; }

void quant_init(quant_t *q, long exact_max)
{
    *q = (quant_t){ .min = NAN, .max = NAN, .exact_max = exact_max > 0 ? exact_max : QUANT_EXACT_MAX };
}

static void sketch_put(quant_t *q, double v)
{
    if (v < QUANT_MIN) {
        q->zeros++;
        return;
    }
    if (v > QUANT_MAX) v = QUANT_MAX;
    /* bucket_of(v) - bucket_lo() with the constants computed once a sketch (the same doubles:
     * the same bucket) -- a serving run puts every token gap here */
    if (!q->sk_lg) {
        q->sk_lg = log(gamma_());
        q->sk_lo = bucket_lo();
        q->sk_nb = nbuckets();
    }
    long i, nb = q->sk_nb;
    if (v == q->sk_lastv) {
        i = q->sk_lasti;          /* a step's decode rows share one gap: its bucket again */
    } else {
        i = (long)ceil(log(v) / q->sk_lg) - q->sk_lo;
        q->sk_lastv = v;
        q->sk_lasti = i;
    }
    if (i < 0) i = 0;
    if (i >= nb) i = nb - 1;
    q->buckets[i]++;
}

/* Exact mode -> sketch mode: the kept values go into fresh buckets. */
static int spill(quant_t *q)
{
    q->buckets = calloc((size_t)nbuckets(), sizeof *q->buckets);
    if (!q->buckets) return -1;
    for (long k = 0; k < q->n; k++) sketch_put(q, q->vals[k]);
    free(q->vals);
    q->vals = NULL;
    q->cap = 0;
    return 0;
}

int quant_add(quant_t *q, double v)
{
    if (isnan(v)) return 0;
    if (!(v > 0)) v = 0;                         /* -0 too: equal values sort alike */
    if (!q->buckets && q->n >= q->exact_max && spill(q) < 0) return -1;
    if (!q->buckets && q->n == q->cap) {
        long cap = q->cap ? 2 * q->cap : 64;
        if (cap > q->exact_max) cap = q->exact_max;
        double *nv = realloc(q->vals, (size_t)cap * sizeof *nv);
        if (!nv) return -1;
        q->vals = nv;
        q->cap = cap;
    }
    if (q->buckets) sketch_put(q, v);
    else q->vals[q->n] = v;
    q->n++;
    q->sum += v;
    if (isnan(q->min) || v < q->min) q->min = v;
    if (isnan(q->max) || v > q->max) q->max = v;
    return 0;
}

double quant_mean(const quant_t *q) { return q->n ? q->sum / (double)q->n : NAN; }

int quant_is_exact(const quant_t *q) { return !q->buckets; }

/* The value of 0-based rank k among n doubles (no NaN), selected in place: quickselect
 * (Hoare partitions about a median of three), O(n) on average and no scratch.  The array
 * is left partitioned about rank k, any order of it serves the next selection: a run's
 * percentiles cost a few passes over the 100,000 exact values instead of a sort. */
static double select_k(double *v, long n, long k)
{
    long lo = 0, hi = n - 1;
    while (hi > lo) {
        long m = lo + (hi - lo) / 2;
        double t;
#define SWAP_(a, b) (t = v[a], v[a] = v[b], v[b] = t)
        if (v[m] < v[lo]) SWAP_(m, lo);
        if (v[hi] < v[lo]) SWAP_(hi, lo);
        if (v[hi] < v[m]) SWAP_(hi, m);
        double p = v[m];
        long i = lo, j = hi;
        while (i <= j) {                          /* [lo, i) <= p, (j, hi] >= p */
            while (v[i] < p) i++;
            while (p < v[j]) j--;
            if (i <= j) {
                SWAP_(i, j);
                i++;
                j--;
            }
        }
#undef SWAP_
        if (k <= j) hi = j;                       /* [lo, j] <= p <= [i, hi], (j, i) == p */
        else if (k >= i) lo = i;
        else return v[k];
    }
    return v[k];
}

/* The order statistic of 0-based rank k: exact, or its bucket's representative (within
 * [min, max], which are exact; the first and last ranks are min and max). */
static double order_stat(quant_t *q, long k)
{
    if (!q->buckets) return select_k(q->vals, q->n, k);
    if (k == 0) return q->min;
    if (k == q->n - 1) return q->max;
    if (k < q->zeros) return 0.0;
    long seen = q->zeros, nb = nbuckets();
    double g = gamma_();
    for (long i = 0; i < nb; i++) {
        seen += q->buckets[i];
        if (k < seen) {
            double rep = 2.0 * pow(g, (double)(i + bucket_lo())) / (g + 1.0);
            if (rep < q->min) rep = q->min;
            if (rep > q->max) rep = q->max;
            return rep;
        }
    }
    return q->max;
}

double quant_quantile(quant_t *q, double p)
{
    if (q->n == 0 || isnan(p)) return NAN;
    if (p < 0) p = 0;
    if (p > 1) p = 1;
    double h = p * (double)(q->n - 1);
    long lo = (long)floor(h), hi = (long)ceil(h);
    if (hi >= q->n) hi = q->n - 1;
    double xl = order_stat(q, lo), xh = hi == lo ? xl : order_stat(q, hi);
    return xl + (h - (double)lo) * (xh - xl);
}

void quant_free(quant_t *q)
{
    free(q->vals);
    free(q->buckets);
    q->vals = NULL;
    q->buckets = NULL;
}
