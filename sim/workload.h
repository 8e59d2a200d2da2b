/* workload: the one source of arriving requests of a run, whatever serves them -- the
 * scenario's explicit requests and their triggers, the Poisson generator and its
 * conversations, and the CSV request trace (workload.trace), read row by row.
 *
 * It creates requests in the shared pool, puts its own events (the next generated
 * request, a delayed or timed arrival) on the run's event queue, and hands each request
 * that arrives to the run's `arrive` hook (the cluster routes it).  It asks the run
 * whether a request can ever fit (`fits`), so a request that could never be served is
 * refused as bad input where it is read.  Requests carry their prompt's content (token
 * runs keyed by their identity) for the block pools' prefix caches. */
#ifndef PACESIM_WORKLOAD_H
#define PACESIM_WORKLOAD_H

#include <stdio.h>
#include "evq.h"
#include "request.h"

/* What workload_check_trace and the event handlers return on bad input in the trace. */
enum { WL_EFAIL = -1, WL_EINPUT = -2 };

/* event_t.a of an EVT_SOURCE event: which generator's next request is due */
enum { SRC_POISSON = 1, SRC_TRACE = 2 };

/* t_ev[EV_ARRIVAL] of a request whose delayed trigger has fired: its arrival event is
 * queued, so the trigger must not fire again. */
#define WL_T_ARMED (-2.0)

typedef struct workload_hooks {
    /* request slot arrived at time t: route it.  0, or -1 (the run's err set) */
    int (*arrive)(void *ctx, int slot, double t);
    /* 1 if a request of prompt + output tokens fits every replica that may serve it; else
     * 0 with the blocks it needs there, that replica's block size and capacity */
    int (*fits)(void *ctx, long prompt, long output, long *need, int *block, long *cap);
    void *ctx;
    /* the latest arrival the clock holds the engine's shortest step at (engine.h's
     * clock_max; 0: SIM_CLOCK_MAX_S alone), and that step (s) */
    double clock_max, step_min;
} workload_hooks_t;

typedef struct workload {
    const scenario_t *s;
    reqpool_t *rp;
    evq_t *q;
    workload_hooks_t h;
    int content;                  /* 1: requests carry their prompt's content (a block pool) */
    void *rng;                    /* gsl_rng*: the workload's draws */
    long poisson_made;
    FILE *trace;                  /* the request trace being read */
    long trace_line;
    double trace_last;
    long trace_row[5];            /* the next trace request: prompt, output, cached, prefix group, prefix tokens */
    uint64_t *trace_hash;         /* its hash_ids column: block ids (content blocks of trace_hblock tokens) */
    int trace_nhash, trace_hcap;
    long trace_hblock;
    int *explicit_slot;           /* scenario request i -> pool slot */
    int *trigger_ref;             /* scenario request i -> slot of its trigger's reference */
    int *trig_first, *trig_dep;   /* request r's dependents (ascending): trig_dep[trig_first[r] .. trig_first[r + 1]) */
    int *trig_live, n_trig_live;  /* triggered requests whose reference has arrived, not fired yet */
    int *trig_new, n_trig_new;    /* triggered requests whose reference arrived since the last check */
    int *trig_heap;               /* check_triggers' scratch: a min-heap of request indices */
    long n_arrived;               /* requests that arrived (each once) */
    long clamped;                 /* Poisson requests whose prompt + output draw passed max_model_len, cut to it */
    char *err;                    /* ENG_ERR_MAX bytes, shared with the run */
} workload_t;

/* The checks that need no state (every explicit and generated request can fit, arrivals
 * the clock resolves).  0, or -1 with err set. */
int workload_check(const scenario_t *s, const workload_hooks_t *h, char *err);
/* When the run's first Poisson request arrives (the workload stream's first draw under the
 * scenario's seed), INFINITY without a Poisson workload: the loader refuses a scenario
 * whose first request would arrive only after stop.max_time_s. */
double workload_first_poisson(const scenario_t *s);
/* Set up: the explicit requests in the pool, their triggers, the first generated
 * request's event, the trace opened and its first row read.  0, -1 or WL_EINPUT with err
 * set; workload_free releases what it took, also after a failure. */
int workload_init(workload_t *w, const scenario_t *s, reqpool_t *rp, evq_t *q, const workload_hooks_t *h,
                  char *err);
void workload_free(workload_t *w);

/* One of its events (EVT_SOURCE, EVT_ARRIVAL) is due.  0, -1 or WL_EINPUT. */
int workload_event(workload_t *w, const event_t *ev);
/* Release the explicit requests whose trigger now holds (at time now).  0, or -1. */
int workload_triggers(workload_t *w, double now);
/* A generated request finished: its conversation's next turn (at now + think time) is
 * queued.  0, or -1. */
int workload_on_done(workload_t *w, int slot, double now);
/* 1 once the scenario's stop event has happened. */
int workload_stop_reached(const workload_t *w);
/* 1 while an explicit request has not arrived. */
int workload_pending(const workload_t *w);
/* Read the scenario's whole trace (from its start, on a handle of its own) with the checks
 * the run applies to each row as it arrives.  0, or WL_EINPUT with err set. */
int workload_check_trace(const scenario_t *s, const workload_hooks_t *h, char *err);

#endif
