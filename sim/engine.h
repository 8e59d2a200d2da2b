/* engine: one run of a scenario -- a cluster (sim/cluster.c) of replicas (sim/replica.c:
 * scheduler, block pool and step loop of one serving engine) fed by one workload
 * (sim/workload.c) through a router.  A scenario without `cluster:` is one replica.
 *
 * The virtual clock advances only by popping events from the run's one queue: arrivals
 * (the workload's), and each replica's step end.  An arrival is routed to a replica and
 * joins its waiting queue; when no event is due at the current time, every idle replica
 * with requests schedules a step (sched.c), routes its rows (route.c), asks its cost model
 * for the duration and queues the step's end; at the step's end its effects are applied
 * (tokens computed and emitted, requests finished, triggers fired) and the measurement
 * windows updated (metrics.c).  Requests from generators and traces are created when they
 * arrive and freed when they finish, so memory follows the requests in flight plus the
 * replicas, not the trace length.
 * Invariants (checked at the end of every run, per step with -DPACESIM_DEBUG): the clock
 * never goes back; on each replica KV blocks in use <= capacity; every finished request
 * emitted exactly its output tokens; no request is lost or duplicated.
 * The run's fields are here so that callers can hold an engine by value and observers
 * (perfetto.c, the Check suites) can read its state; only cluster.c writes them. */
#ifndef PACESIM_ENGINE_H
#define PACESIM_ENGINE_H

#include <stdio.h>
#include "cost.h"
#include "evq.h"
#include "kvxfer.h"
#include "quant.h"
#include "metrics.h"
#include "replica.h"
#include "request.h"
#include "route.h"
#include "scenario.h"
#include "workload.h"

/* What engine_run and engine_check_trace return on failure: ENG_EFAIL a runtime failure
 * (an invariant, the cost model, memory), ENG_EINPUT bad input (a malformed trace row). */
enum { ENG_EFAIL = -1, ENG_EINPUT = WL_EINPUT };

typedef struct engine engine_t;
typedef void (*step_observer_fn)(void *ctx, const engine_t *e, const step_rec_t *st);

struct engine {                   /* read-only outside cluster.c */
    const scenario_t *s;
    cost_model_t *cost;           /* replica 0's cost model */
    reqpool_t rp;                 /* every request of the run */
    workload_t wl;
    replica_t *rep;               /* the replicas */
    int nrep;
    int busy;                     /* replicas with a step in flight */
    int *ready, nready;           /* replicas that may start a step (requests, no step in flight) */
    char *in_ready;               /* replica k is on ready */
    int *heads, nheads;           /* the first replica of each run of one pool's replicas */
    int unfit_pool;               /* the pool whose cache a request did not fit (-1 none; set-up's message) */
    double clock_max;             /* the latest arrival the clock holds the shortest step at, where that is
                                     before the workload's 1e7 s limit (0: that limit); engine_init_ex */
    double step_min;              /* that step's price (s): one token, the least a step schedules */
    long rr_next;                 /* round_robin's next replica */
    void *rng_route;              /* gsl_rng*: the random router's draws (a stream of its own) */
    cost_model_t **owned;         /* the replicas' cost models the engine made (engine_init_ex) */
    int nowned;
    evq_t q;
    double now;
    metrics_t m;                  /* the measurement windows */
    run_summary_t sum;            /* the whole run (every replica's counts added) */
    step_observer_fn observer;
    void *observer_ctx;
    /* called as each request finishes (generated ones before their slot is freed) */
    void (*on_finish)(void *ctx, const engine_t *e, const req_t *r);
    void *on_finish_ctx;
    /* the serving summary's running state (serve.h), set by the caller before engine_run; NULL: none */
    struct serve_acc *serve;
    /* disaggregated prefill/decode (scenario cluster.disaggregated): replicas 0..npre-1 are the
     * prefill pools', the rest the decode pools' */
    int npre;
    long rr_dec;                  /* round_robin's next decode replica */
    kvx_link_t xfer;              /* the KV link */
    quant_t xfer_q;               /* the requests' KV transfer times after their prefill (kv_xfer_s) */
    char err[ENG_ERR_MAX];
};

/* Set up a run.  Borrows s and cost (they outlive the engine).  0, or -1 with
 * e->err set.  engine_free() releases what engine_init acquired, also after failure. */
int engine_init(engine_t *e, const scenario_t *s, cost_model_t *cost, const profile_t *prof);
/* A pool's replica's cost model (for its pool's scenario ps), or NULL with err set
 * (ENG_ERR_MAX bytes). */
typedef cost_model_t *(*engine_cost_fn)(void *ctx, const scenario_t *ps, char *err);
/* The same for a scenario with cluster:: replica 0 is priced by cost where its pool has the
 * scenario's model and TP degree, every other replica by a model of its own from mk (owned
 * by the engine). */
int engine_init_ex(engine_t *e, const scenario_t *s, cost_model_t *cost, const profile_t *prof, engine_cost_fn mk,
                   void *mk_ctx);
/* Run to the stop rule.  0, or ENG_EFAIL / ENG_EINPUT with e->err set. */
int engine_run(engine_t *e);
/* Read the scenario's whole trace (from its start, on a handle of its own) with the checks
 * the run applies to each row as it arrives.  0, or ENG_EINPUT with e->err set as the run
 * would set it.  After engine_init (the checks need the KV capacity). */
int engine_check_trace(engine_t *e);
void engine_free(engine_t *e);

/* Name of a request for output: the explicit id, or "p<serial>"/"t<serial>". */
const char *engine_req_name(const engine_t *e, int slot, char *buf, size_t n);

/* The value of the scenario's measurement window i after the run (NAN: undefined). */
double engine_window(const engine_t *e, int i);
/* Window i's distribution over all requests (a latency kind with request "*"): 1 and *d
 * filled after the run, else 0. */
int engine_window_dist(const engine_t *e, int i, win_dist_t *d);
/* The q-quantile (0 <= q <= 1) of window i's values over all requests after the run (a latency
 * kind with request "*"; quant.h's interpolation), else NAN. */
double engine_window_quantile(engine_t *e, int i, double q);
/* A step type's name in the steps CSVs: "any", "decode", "mixed", "prefill". */
const char *engine_step_type_name(step_type_t t);

#endif
