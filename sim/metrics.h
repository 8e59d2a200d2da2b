/* metrics: the scenario's measurement windows (`measure:`) over a whole run -- one
 * replica's or a cluster's -- updated at every step end and as requests finish
 * (metrics.c describes the rules).  It reads the requests (by slot) and the run summary;
 * it knows nothing of the replicas, the scheduler or the workload. */
#ifndef PACESIM_METRICS_H
#define PACESIM_METRICS_H

#include "quant.h"
#include "request.h"

typedef struct win_state {
    double value;                 /* result (NAN if undefined) */
    double acc, t_from, t_to;
    long count;
    int closed;
    int from_slot, to_slot, req_slot;  /* -1: unbounded / all requests */
    quant_t *lat;                 /* a latency window over all requests: its values, else NULL */
    win_dist_t dist;              /* lat's summary, after the run */
} win_state_t;

typedef struct metrics {
    const scenario_t *s;
    const reqpool_t *rp;
    win_state_t *win;             /* one per s->windows */
    int itl_wins;                 /* itl windows over all requests: with no serving summary either,
                                   * metrics_on_itl has nothing to do */
    struct serve_acc *serve;      /* the serving summary's running state (serve.h), NULL: none */
    char *err;                    /* ENG_ERR_MAX bytes: the message of a failure */
} metrics_t;

/* 1 when metrics_on_itl has something to do with a token gap. */
static inline int metrics_want_itl(const metrics_t *m) { return m->itl_wins || m->serve; }
/* The windows' state set up: explicit_slot maps scenario request i to its slot.  0, or
 * -1 out of memory (m->err).  metrics_free releases it, also after a failed init. */
int metrics_init(metrics_t *m, const scenario_t *s, const reqpool_t *rp, const int *explicit_slot, char *err);
void metrics_on_step(metrics_t *m, const step_rec_t *st);
/* A request finished (its ttft, tpot, e2e and queueing values), a token gap (itl) went
 * by: added to the latency windows over all requests.  0, or -1 out of memory (m->err). */
int metrics_on_finish(metrics_t *m, const req_t *r);
int metrics_on_itl(metrics_t *m, double gap);
/* The windows' values from the run's summary S, at the end of the run. */
void metrics_finish(metrics_t *m, const run_summary_t *S);
void metrics_free(metrics_t *m);

#endif
