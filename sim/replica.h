/* replica: one serving engine -- its scheduler (sched.c), its KV block pool and its step
 * loop -- behind a narrow interface for the cluster that drives it (cluster.c):
 *
 *   replica_admit       a request routed here joins its waiting queue
 *   replica_start_step  schedule and price the next step (if it has one) at time now
 *   replica_end_step    apply the step in flight at its end (tokens, first tokens, finishes)
 *   replica_load / replica_kv_used / replica_cached_prefix   what a router asks
 *
 * A step's end is an event of the cluster's queue; between start and end the replica is
 * busy.  A replica reads its own scenario (its pool's model, engine settings and profile)
 * and writes only its own state, the requests it holds and its summary; the cluster gets
 * finished requests and steps through the hooks.
 * Invariants (replica_check, at the end of every run and per step with -DPACESIM_DEBUG):
 * KV blocks in use <= capacity and = what its running requests hold; every request it
 * took is finished, handed on, running or waiting here, exactly once. */
#ifndef PACESIM_REPLICA_H
#define PACESIM_REPLICA_H

#include "cost.h"
#include "kvxfer.h"
#include "metrics.h"
#include "profile.h"
#include "request.h"
#include "route.h"
#include "scheduler.h"

#define ENG_STEP_RTOL 1e-6        /* how much of a step's duration the clock may lose to rounding */

typedef struct replica replica_t;

typedef struct replica_hooks {
    /* a request finished here (after the replica's summary counted it) */
    int (*on_finish)(void *ctx, replica_t *r, req_t *q);
    /* a request finished its prefill here and leaves, its KV still held here until
     * replica_kv_sent (disaggregated prefill) */
    int (*on_handoff)(void *ctx, replica_t *r, req_t *q);
    void *ctx;
} replica_hooks_t;

struct replica {
    int idx;                      /* its index in the cluster */
    int pool;                     /* its pool's index (0 without cluster:) */
    const scenario_t *s;          /* its pool's scenario (model, engine, env, acceptance) */
    cost_model_t *cost;           /* prices its steps (its own: a model keeps state) */
    sched_t sc;                   /* the scheduler and its KV blocks */
    route_cfg_t rcfg;
    kseg_t *segs;
    route_plan_t plan, draft_plan;
    void *rng_acc;                /* gsl_rng*: MTP acceptance draws */
    metrics_t *m;                 /* the run's windows (token gaps) */
    replica_hooks_t hooks;
    run_summary_t sum;            /* its own counts */
    long n_in, n_out;             /* requests taken, requests finished or handed on */
    /* the step in flight */
    int busy;
    int nrows;
    step_rec_t rec;
    double t_end;
    /* per-replica output counters */
    double busy_s;                /* time spent in steps */
    double rows_sum;              /* rows over its steps (mean batch = rows_sum / steps) */
    double kv_blocks_sum;         /* KV blocks in use at its steps' ends, summed (mean KV use = / steps / capacity) */
    long served;                  /* requests finished here */
    long prefills;                /* requests prefilled here and handed on */
    long peak_waiting;
    double q_area, q_t;           /* waiting requests integrated over time up to q_t (mean queue = / makespan) */
    const double *clock;          /* the run's clock (set by the cluster; NULL: the queue is not integrated) */
    int shared;                   /* 1: other replicas step between this one's step start and end (set by
                                     the cluster): its requests are fetched ahead at the end */
    /* disaggregated prefill/decode */
    double kv_block_bytes;        /* one block's KV on one rank, every full-attention layer */
    double kv_state_bytes;        /* one request's recurrent (GDN) state on one rank */
    const kvx_link_t *xfer;       /* a prefill replica's KV link (set by the cluster), else NULL */
    long xfer_blocks;             /* blocks held by requests whose KV is being sent */
    char *err;                    /* ENG_ERR_MAX bytes, shared with the run */
};

/* Size the replica for scenario s (borrowed, with cost and prof): block size, KV
 * capacity.  0, or -1 with err set. */
int replica_init(replica_t *r, int idx, const scenario_t *s, cost_model_t *cost, const profile_t *prof,
                 reqpool_t *rp, char *err);
/* The rest of its set-up: routing, the profile's checks and warnings (quiet: none
 * printed), its scheduler's memory and block pool.  0, or -1 with err set. */
int replica_setup(replica_t *r, const profile_t *prof, int quiet);
void replica_free(replica_t *r);

/* KV blocks a request of this prompt and output holds here at its largest (generation
 * stops at max_model_len). */
long replica_request_blocks(const replica_t *r, long prompt, long output);

/* A request (arrived) joins the waiting queue.  0, or -1 out of memory. */
int replica_admit(replica_t *r, int slot);
/* Schedule and price the next step at now: 1 a step started (r->t_end its end), 0 nothing
 * to run now (idle, or blocked until an event), -1 an error (r->err). */
int replica_start_step(replica_t *r, double now);
/* Apply the step in flight at its end.  0, or -1 (r->err). */
int replica_end_step(replica_t *r);
/* 1: it holds requests (running or waiting). */
static inline int replica_has_work(const replica_t *r) { return r->sc.nrun > 0 || r->sc.wq_len > 0; }

/* What routers ask: requests here (running + waiting), KV blocks in use, and the tokens
 * of the request's prompt already cached in its block pool (0 without one). */
static inline long replica_load(const replica_t *r) { return r->sc.nrun + r->sc.wq_len; }
static inline long replica_kv_used(const replica_t *r) { return r->sc.used_blocks; }
long replica_cached_prefix(const replica_t *r, const req_t *q);

/* The KV a request of `tokens` prompt tokens moves from here (per rank): its whole blocks
 * (a connector moves blocks) and its recurrent state. */
static inline double replica_kv_bytes(const replica_t *r, long tokens)
{
    return (double)((tokens + r->sc.block - 1) / r->sc.block) * r->kv_block_bytes + r->kv_state_bytes;
}
/* Request q's KV has been sent from here (its prefill replica): its blocks are freed. */
void replica_kv_sent(replica_t *r, req_t *q);

/* The mean number of waiting requests over [0, t_end] (time-weighted). */
static inline double replica_queue_mean(const replica_t *r, double t_end)
{
    double a = r->q_area + (t_end > r->q_t ? (double)r->sc.wq_len * (t_end - r->q_t) : 0.0);
    return t_end > 0 ? a / t_end : 0.0;
}

/* The full invariant check (above).  0, or -1 with r->err.  O(requests). */
int replica_check(replica_t *r);
/* The block pool's counters into its summary (end of the run). */
void replica_finish(replica_t *r);

#endif
