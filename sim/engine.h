/* engine: the discrete-event step loop of one scenario run.
 *
 * The virtual clock advances only by popping events (arrivals, step ends) from the
 * evq.  One iteration: pop the events due -> schedule a step (sched.c) -> route its
 * rows (route.c) -> ask the cost model for its duration -> advance the clock to the
 * step's end -> apply the step's effects (tokens computed and emitted, requests
 * finished, triggers fired) -> update the measurement windows (metrics.c).
 * Requests from generators and traces are created when they arrive and freed when
 * they finish, so memory follows the requests in flight, not the trace length.
 * Invariants (checked at the end of every run, per step with -DPACESIM_DEBUG): the
 * clock never goes back; KV blocks in use <= capacity; every finished request emitted
 * exactly its output tokens; no request is lost or duplicated.
 * The engine's fields are here so that callers can hold an engine by value and observers
 * (trace.c, the Check suites) can read its state; only engine.c, sched.c and metrics.c
 * write them, and what those three share besides is in engine_int.h. */
#ifndef PACESIM_ENGINE_H
#define PACESIM_ENGINE_H

#include <stdio.h>
#include "cost.h"
#include "evq.h"
#include "route.h"
#include "scenario.h"

#define ENG_ERR_MAX 1024

/* What engine_run and engine_check_trace return on failure: ENG_EFAIL a runtime failure
 * (an invariant, the cost model, memory), ENG_EINPUT bad input (a malformed trace row). */
enum { ENG_EFAIL = -1, ENG_EINPUT = -2 };

#define ENG_T_NONE (-1.0)         /* a request's event time before the event */

typedef enum { RQ_PENDING = 0, RQ_WAITING, RQ_RUNNING, RQ_DONE, RQ_FREE } rq_state_t;

typedef struct req {
    int idx;                      /* slot in the engine's pool */
    int explicit_idx;             /* index into scenario requests, or -1 */
    long serial;                  /* creation order (generated/trace ids) */
    long prompt, cached, output;
    long target;                  /* tokens to compute before decoding (prompt, + emitted after a preemption) */
    long computed;                /* tokens whose KV exists */
    long emitted;                 /* output tokens emitted */
    long next_eligible;           /* pacing: next step a prefill chunk may be scheduled */
    long last_step;               /* the step that last scheduled it (0: none) */
    long blocks;                  /* KV blocks held */
    long computed_fresh;          /* prompt tokens computed (not from the cache), all admissions */
    long cache_hit;               /* prompt tokens taken from the prefix cache, last admission */
    double acc_carry;             /* fractional accepted drafts (mean acceptance model) */
    double t_ev[EV__N];           /* event times, ENG_T_NONE (< 0) = not yet */
    double t_last_tok, itl_sum;
    long itl_n;
    long preemptions;
    rq_state_t state;
    struct kvpool_seq *kv;        /* its sequence in e->kv (prefix_cache_model: pool), else NULL */
    int kv_same;                  /* 1: kv_lo holds the block windows of its last allocation */
    long kv_lo[4];                /* (sched.c: an allocation inside the same windows changes nothing) */
    int turns_left;               /* a generated conversation's turns after this one */
    struct kvpool_run *conv_runs; /* its prompt's content runs (for the next turn), else NULL */
    int conv_nruns;
} req_t;

typedef struct step_row {         /* one scheduled row */
    int req;
    int q;
    long seq_len;
    int prefill;                  /* 1: prompt chunk, 0: decode row */
    int admitted;                 /* 1: the chunk that admitted the request from WAITING */
    long emitted;                 /* tokens this row emitted (after the step) */
} step_row_t;

typedef struct step_rec {
    long no;                      /* 1-based engine step number (current_step) */
    double t0, dt;
    step_type_t type;
    int nrows;
    long tokens;
    const step_row_t *rows;
    const route_plan_t *plan;
    cost_breakdown_t cost;
    int preempted;                /* requests preempted while scheduling this step */
} step_rec_t;

/* A latency window's distribution over its requests (engine_window_dist). */
typedef struct win_dist {
    long n;                       /* values (requests; token gaps for itl) */
    double mean, p50, p90, p99;
    int exact;                    /* 1: exact percentiles; 0: quant.h's sketch (QUANT_REL_ERR) */
} win_dist_t;

typedef struct engine engine_t;
typedef void (*step_observer_fn)(void *ctx, const engine_t *e, const step_rec_t *st);

typedef struct run_summary {
    long steps, steps_by_type[4];
    long empty_steps;             /* schedule() calls that scheduled nothing (not in steps) */
    long preemptions;
    long requests_finished, tokens_emitted;
    double makespan;              /* time of the last step end */
    int stopped_by_time, stopped_by_steps, stall;
    double ttft_sum, tpot_sum, itl_sum;
    long ttft_n, tpot_n, itl_n;
    long peak_running, peak_pool;
    int block_size;
    long capacity_blocks, peak_blocks;
    /* prefix_cache_model: pool (sim/kvpool.c's counters at the end of the run) */
    int pool;
    long pc_queries, pc_query_tokens, pc_hit_tokens, pc_hit_blocks, pc_evictions, pc_allocated;
    long peak_attn_blocks, peak_mamba_blocks;
    long adm_tokens, adm_hit_tokens;  /* over admissions: tokens to compute, tokens from the cache */
    long clamped;                 /* Poisson requests whose prompt + output draw passed max_model_len, cut to it */
} run_summary_t;

struct engine {                   /* read-only outside engine.c, sched.c, metrics.c */
    const scenario_t *s;
    cost_model_t *cost;
    route_cfg_t rcfg;
    int block, spec_k;
    int align;                    /* 1: prompt chunks end on block boundaries (hybrid, mamba_cache_mode align) */
    long capacity, used_blocks, gdn_blocks;
    struct kvpool *kv;            /* the block pool (prefix_cache_model: pool), else NULL */
    req_t *pool;
    int npool, cap_pool;
    int *free_slots, nfree;
    int *explicit_slot;           /* scenario request i -> pool slot */
    int *running, nrun;
    int *waitq, wq_head, wq_len, wq_cap;   /* ring buffer */
    evq_t q;
    double now;
    long step_no;
    void *rng_acc, *rng_wl;       /* gsl_rng* */
    long n_arrived;               /* requests that reached WAITING (each once): invariant bookkeeping */
    /* sources */
    long poisson_made;
    FILE *trace;
    long trace_line;
    double trace_last;
    long trace_row[5];            /* the next trace request: prompt, output, cached, prefix group, prefix tokens */
    uint64_t *trace_hash;         /* its hash_ids column: block ids (content blocks of trace_hblock tokens) */
    int trace_nhash, trace_hcap;
    long trace_hblock;
    int *trigger_ref;             /* scenario request i -> slot of its trigger's reference */
    int *trig_first, *trig_dep;   /* request r's dependents (ascending): trig_dep[trig_first[r] .. trig_first[r + 1]) */
    int *trig_live, n_trig_live;  /* triggered requests whose reference has arrived, not fired yet */
    int *trig_new, n_trig_new;    /* triggered requests whose reference arrived since the last check */
    int *trig_heap;               /* check_triggers' scratch: a min-heap of request indices */
    long serial;
    /* per-step scratch */
    step_row_t *rows;
    kseg_t *segs;
    int cap_rows;
    route_plan_t plan, draft_plan;
    /* results */
    struct win_state *win;        /* metrics.c's windows (engine_int.h); engine_window() reads one */
    int itl_wins;                 /* itl windows over all requests, set by metrics_init: with no serve
                                   * summary either, metrics_on_itl has nothing to do */
    run_summary_t sum;
    step_observer_fn observer;
    void *observer_ctx;
    /* called as each request finishes (generated ones before their slot is freed) */
    void (*on_finish)(void *ctx, const engine_t *e, const req_t *r);
    void *on_finish_ctx;
    /* the serving summary's running state (serve.h), set by the caller before engine_run; NULL: none */
    struct serve_acc *serve;
    char err[ENG_ERR_MAX];
};

/* Set up a run.  Borrows s and cost (they outlive the engine).  0, or -1 with
 * e->err set.  engine_free() releases what engine_init acquired, also after failure. */
int engine_init(engine_t *e, const scenario_t *s, cost_model_t *cost, const profile_t *prof);
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
/* A step type's name in the steps CSVs: "any", "decode", "mixed", "prefill". */
const char *engine_step_type_name(step_type_t t);

#endif
