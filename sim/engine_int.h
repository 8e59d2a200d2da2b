/* engine_int: what the engine's own files (engine.c, sched.c, metrics.c) share and no
 * other module uses: the scheduler's and the metrics' entry points, the waiting ring's
 * growth, and the measurement windows' running state.  Include it only from those files
 * and from the Check suites that test them; everything else reads engine.h. */
#ifndef PACESIM_ENGINE_INT_H
#define PACESIM_ENGINE_INT_H

#include "engine.h"
#include "quant.h"

/* t_ev[EV_ARRIVAL] of a request whose delayed trigger has fired: its arrival event is
 * queued, so the trigger must not fire again. */
#define ENG_T_ARMED (-2.0)

typedef struct win_state {
    double value;                 /* result (NAN if undefined) */
    double acc, t_from, t_to;
    long count;
    int closed;
    int from_slot, to_slot, req_slot;  /* -1: unbounded / all requests */
    quant_t *lat;                 /* a latency window over all requests: its values, else NULL */
    win_dist_t dist;              /* lat's summary, after the run */
} win_state_t;

/* Room for one more request in the waiting ring (either end).  0, or -1 out of memory. */
int engine_waitq_reserve(engine_t *e);

/* sched.c: fill e->rows for the next step; returns the row count (0 = nothing
 * schedulable) or -1 on error.  The rules: docs/reference-system.md, "The scheduler". */
int sched_step(engine_t *e, int *preempted);
/* sched.c: a finished request's KV blocks back to the pool (cached, with the block pool). */
void sched_release(engine_t *e, req_t *r);

/* metrics.c: the windows' state set up (0, or -1 out of memory with e->err), updated
 * after every step, and their values computed at the end of the run. */
int metrics_init(engine_t *e);
void metrics_on_step(engine_t *e, const step_rec_t *st);
void metrics_finish(engine_t *e);
/* A request finished (its ttft, tpot, e2e and queueing values), a token gap (itl) went
 * by: added to the latency windows over all requests.  0, or -1 out of memory (e->err). */
int metrics_on_finish(engine_t *e, const req_t *r);
int metrics_on_itl(engine_t *e, double gap);
/* Releases what metrics_init acquired (also after a failed init). */
void metrics_free(engine_t *e);

#endif
