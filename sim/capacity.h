/* capacity: the highest request rate each configuration of a search sustains within the
 * SLOs, its GPUs and price (pacesim capacity; docs/capacity.md).
 *
 * A configuration is the scenario with the --set overrides and one point of the --search
 * axes (spelled as --sweep spells them, sweep.h).  Its sustainable rate is found by
 * bisection on the Poisson rate (workload.poisson.rate_per_s), each probe one simulation
 * of the scenario's workload.poisson.count requests at that rate:
 *   - the first `warmup` and the last `cooldown` shares of the requests (in arrival order)
 *     are not measured (the queue filling, the batch draining after the last arrival);
 *   - a probe passes when every SLO holds over the measured requests (a statistic bound
 *     such as ttft_p99 <= 2 s; with --goodput G, at least a share G of them meets every
 *     per-request threshold, vLLM's benchmark definition) and the queue does not grow: the
 *     requests in the system, averaged over the last fifth of the measured arrivals, exceed
 *     those over the first fifth by at most `tol` of the arrivals in between;
 *   - a probe stops as soon as its failure is certain (enough measured requests have
 *     broken a percentile bound or the goodput share that no later request can mend it),
 *     which decides exactly as the whole run would;
 *   - a probe also stops once every measured request has finished (the later ones
 *     change nothing measured);
 *   - the search: a saturation probe (every request arriving at once) measures the
 *     completion rate at full load, mu.  The first probe runs at 0.9 mu; below a failure
 *     (before any pass) the next at x0.9, x0.81, x0.66 ... of it.  Once a rate has passed,
 *     its margin (how close it came to the SLOs) predicts where the SLOs break, on a
 *     queue's curve through the highest passes; the next probe aims just across that
 *     prediction (0.45 tol above it after a pass, below it after a failure), kept within
 *     the middle three fifths of the bracket (log scale), and at the bracket's geometric
 *     mean once that closes it, until hi/lo <= 1 + tol.  Above a pass with no failure yet:
 *     the prediction twice, then mu, then doubling.  The answer is lo: it passed, and a rate
 *     at most tol above it failed.
 * Probes are seeded by the scenario's seed, so a probe at rate r is the same arrival
 * sequence scaled by 1/r: the search is deterministic, whatever -j. */
#ifndef PACESIM_CAPACITY_H
#define PACESIM_CAPACITY_H

#include <stdio.h>
#include "sweep.h"

#define CAP_MAX_SLO 8
#define CAP_MAX_COSTS 32
#define CAP_ERR_MAX 1200

typedef enum { CAP_TTFT = 0, CAP_TPOT, CAP_E2EL, CAP__NMETRIC } cap_metric_t;

typedef struct cap_slo {
    char name[48];                /* as given: ttft_p99, tpot, e2el_mean */
    cap_metric_t metric;
    int per_request;              /* 1: a per-request threshold (with --goodput); 0: a statistic bound */
    int mean;                     /* statistic: the mean (else the quantile q) */
    double q;                     /* statistic: quantile in (0, 1) */
    double limit;                 /* seconds */
} cap_slo_t;

/* Parse "NAME=SECONDS": NAME is ttft, tpot or e2el (a per-request threshold, for
 * --goodput), or one of them with _mean, _p50 ... _p99, _p99.9 (a statistic bound);
 * SECONDS a finite number > 0.  0, or -1 with err set. */
int cap_parse_slo(const char *spec, cap_slo_t *out, char *err, size_t errn);

typedef struct cap_opts {
    const char *file;
    const char *const *sets;
    int nsets;
    const sweep_t *search;
    cap_slo_t slo[CAP_MAX_SLO];
    int nslo;
    double goodput;               /* 0: none; else the share of requests that must meet every threshold */
    double tol;                   /* relative rate tolerance (bisection and queue growth) */
    double warmup, cooldown;      /* shares of the requests not measured */
    int has_split, split_axis;    /* the search's `split` axis (docs/capacity.md), its index */
    double error_bars;            /* --error-bars P (0 < P <= 50; 0: none): every configuration also
                                     searched with every step at (1 + P/100) and (1 - P/100) its price */
} cap_opts_t;

/* The `split` search key: a configuration co-located as the scenario is written, N co-located
 * replicas, or P prefill and D decode replicas (a prefill pool and a decode pool). */
#define CAP_SPLIT_KEY "split"
typedef enum { CAP_SPLIT_COLOCATED = 0, CAP_SPLIT_N, CAP_SPLIT_PD } cap_split_kind_t;
typedef struct cap_split {
    cap_split_kind_t kind;
    int p, d;                     /* N: p replicas; P:D: p prefill, d decode replicas */
} cap_split_t;
/* Parse a split value: colocated, N or P:D.  0, or -1 with err set. */
int cap_parse_split(const char *v, cap_split_t *out, char *err, size_t errn);
/* The override (*out, malloc'd "cluster={...}"; NULL: none needed) that makes the scenario
 * `file` under `sets` the split `value`: the scenario's one engine or its cluster's one pool
 * (of role both) becomes N replicas of it, or a pool `prefill` of P and a pool `decode` of D
 * replicas of it (its model and engine keys, the cluster's router and kv_transfer); a
 * co-located configuration drops a cluster.kv_transfer no pool needs.  Sets of the pools
 * prefill and decode (cluster.pools.prefill.*, .decode.*) are left out of `sets` here and
 * applied after the override.  0, -1 bad input (err: one line), -2 out of memory. */
int cap_split_override(const char *file, const char *const *sets, int nsets, const char *value, char **out, char *err,
                       size_t errn);

/* One probe: the workload at one rate. */
typedef struct cap_probe {
    double rate;
    int pass;
    int aborted;                  /* stopped once its failure was certain */
    int stable;                   /* the queue did not grow (a whole run only) */
    double growth;                /* the queue's growth per arrival (a whole run only) */
    long measured;                /* requests measured */
    double stat[CAP_MAX_SLO];     /* each statistic SLO over the measured requests (NAN: per-request) */
    double ttft_p99, tpot_p99, e2el_p99;
    double good_share;            /* share of measured requests meeting every per-request SLO (NAN: none given) */
    double tok_s;                 /* output tokens per second of the measured requests (emitted / arrival span) */
    double env_outside;           /* share of step time priced outside the profile's measured envelope */
    double makespan;
    long steps;
    char why[160];                /* a failure's reason, "" on a pass */
} cap_probe_t;

/* A configuration: its scenario assembled once, its probes and its answer. */
typedef struct cap_conf cap_conf_t;

/* Assemble the configuration of the given overrides (the caller's --set, then the point's
 * assignments).  NULL with err set: rc 2 bad input (also a workload capacity cannot
 * search), 1 out of memory. */
cap_conf_t *cap_conf_open(const cap_opts_t *o, const char *const *sets, int nsets, int *rc, char *err, size_t errn);
/* The same with every step of every probe costing k (> 0) times its price (setup_open_scaled:
 * the seed and the arrivals unchanged): --error-bars's searches. */
cap_conf_t *cap_conf_open_scaled(const cap_opts_t *o, const char *const *sets, int nsets, double k, int *rc, char *err,
                                 size_t errn);
/* One probe at rate (req/s).  0, or -1 with err set (the simulation failed). */
int cap_conf_probe(cap_conf_t *c, double rate, cap_probe_t *p, char *err, size_t errn);
/* The completion rate (req/s) with every request arriving at once.  0 or -1. */
int cap_conf_saturation(cap_conf_t *c, double *mu, char *err, size_t errn);
/* The scenario's GPUs per replica (TP: a cluster's pools', -1 where they differ), its hardware name for --gpu-cost (the profile's
 * file name without .yaml, or "analytic") and its GPU name. */
int cap_conf_tp(const cap_conf_t *c);
int cap_conf_replicas(const cap_conf_t *c);
int cap_conf_gpus(const cap_conf_t *c);
const char *cap_conf_hw(const cap_conf_t *c);
const char *cap_conf_gpu(const cap_conf_t *c);
const char *cap_conf_warn(const cap_conf_t *c);
/* A trace's own rate (its rows over its span, req/s), or 0 for a Poisson workload: a probe at
 * rate r replays the trace with every arrival divided by r / this. */
double cap_conf_trace_rate(const cap_conf_t *c);
/* Write one line per probe of cap_conf_search to f (NULL: none). */
void cap_conf_log(cap_conf_t *c, FILE *f);
void cap_conf_close(cap_conf_t *c);

/* The search of one configuration. */
typedef struct cap_answer {
    int found;                    /* 1: rate passes and rate*(1+tol) (or the next probe above) fails */
    int below;                    /* no rate down to `rate` passes (rate is then the lowest tried) */
    int above;                    /* every rate up to `rate` passes (the widening stopped) */
    double rate;                  /* the sustained rate, req/s */
    double saturation;            /* the saturation probe's completion rate */
    int probes;
    long steps;                   /* engine steps simulated over all its probes */
    cap_probe_t at;               /* the probe at `rate` (the highest that passed) */
} cap_answer_t;
int cap_conf_search(cap_conf_t *c, cap_answer_t *a, char *err, size_t errn);

/* pacesim capacity (argv after the command name).  Exit status. */
int capacity_main(int argc, char **argv, const char *argv0);

#endif
