/* request: what every part of a run shares -- the requests (one pool for the whole
 * cluster: a request keeps its slot while it moves between replicas), a step's rows and
 * record, the run summary and a latency window's distribution.
 *
 * The workload (workload.c) creates requests in the pool and frees them; a replica
 * (replica.c, its scheduler sched.c) runs them; the measurement windows (metrics.c) read
 * them.  This header depends on nothing of those, so none of them depends on another
 * through it. */
#ifndef PACESIM_REQUEST_H
#define PACESIM_REQUEST_H

#include <stdint.h>
#include "route.h"
#include "cost.h"
#include "scenario.h"

#define ENG_ERR_MAX 1024

#define ENG_T_NONE (-1.0)         /* a request's event time before the event */

/* RQ_XFER: disaggregated, its KV on the way from its prefill replica to its decode replica */
typedef enum { RQ_PENDING = 0, RQ_WAITING, RQ_RUNNING, RQ_DONE, RQ_FREE, RQ_XFER } rq_state_t;

/* req_t.handoff: disaggregated prefill/decode (sim/cluster.c) */
enum {
    HANDOFF_NONE = 0,
    HANDOFF_PREFILL = 1,          /* on its prefill replica: it leaves when its prompt is computed */
    HANDOFF_KV_IN = 2             /* on its decode replica, its prompt's KV arrived: admitted with it */
};

struct kvpool_seq;
struct kvpool_run;

typedef struct req {
    /* four cache lines (the pool is line-aligned, REQ_LINE): a decode row's step touches the
     * first two only */
    /* line 0: what the scheduler and a step's start read */
    long prompt, output;
    long target;                  /* tokens to compute before decoding (prompt, + emitted after a preemption) */
    long computed;                /* tokens whose KV exists */
    long emitted;                 /* output tokens emitted */
    long next_eligible;           /* pacing: next step a prefill chunk may be scheduled */
    long last_step;               /* the step that last scheduled it (0: none) */
    long blocks;                  /* KV blocks held */
    /* line 1: what a step's end writes of a row that emitted a token */
    double t_ev[EV__N];           /* event times, ENG_T_NONE (< 0) = not yet */
    double t_last_tok, itl_sum;
    long itl_n;
    rq_state_t state;
    int handoff;                  /* HANDOFF_* (disaggregated; HANDOFF_NONE otherwise) */
    /* line 2: prompt chunks, drafts, the block pool */
    long computed_fresh;          /* prompt tokens computed (not from the cache), all admissions */
    long cache_hit;               /* prompt tokens taken from the prefix cache, last admission */
    double acc_carry;             /* fractional accepted drafts (mean acceptance model) */
    struct kvpool_seq *kv;        /* its sequence in its replica's block pool (prefix_cache_model: pool), else NULL */
    long kv_lo[4];                /* (sched.c: an allocation inside the same windows changes nothing) */
    /* line 3: the rest */
    long serial;                  /* creation order (generated/trace ids) */
    long cached;
    long preemptions;
    int kv_same;                  /* 1: kv_lo holds the block windows of its last allocation */
    int idx;                      /* slot in the request pool */
    int explicit_idx;             /* index into scenario requests, or -1 */
    int replica;                  /* the replica it was routed to (-1: none yet) */
    int turns_left;               /* a generated conversation's turns after this one */
    int nruns;
    struct kvpool_run *runs;      /* its prompt's content runs (the block pool), else NULL */
    uint64_t out_key;             /* its outputs' content key (the block pool) */
} req_t;
#define REQ_LINE 64
#ifdef __cplusplus  /* the GPU replay includes this header as CUDA C++ */
static_assert(sizeof(req_t) == 4 * REQ_LINE, "req_t: keep it four cache lines, what a step touches in the first two");
#else
_Static_assert(sizeof(req_t) == 4 * REQ_LINE, "req_t: keep it four cache lines, what a step touches in the first two");
#endif

/* What a step never reads of a request (kept beside the pool, so that a request is
 * 256 bytes and a step's walk over its rows touches no more than it needs). */
typedef struct req_aux {
    long priority;                /* scheduling_policy priority (explicit requests; 0 otherwise) */
    uint64_t session;             /* the conversation it belongs to (its first turn's serial + 1; 0: none) */
    double kv_xfer_s;             /* disaggregated: its KV transfer's time after its prefill ended (0: none) */
    double xfer_free;             /* disaggregated, layer-wise: when the link has sent its KV computed so far */
    int prefill_replica;          /* disaggregated: the replica that prefilled it (-1: none) */
    int session_replica;          /* a conversation's later turn: the replica of the turn before (-1: none) */
} req_aux_t;

/* The requests of a run: slots reused as requests finish, so memory follows the requests
 * in flight.  A slot's address changes when the pool grows (reqpool_alloc): hold indices. */
typedef struct reqpool {
    req_t *r;
    req_aux_t *x;                 /* r[i]'s cold part */
    int n, cap;
    int *free_slots, nfree;
    long serial;                  /* the next request's serial */
    long peak;                    /* most slots ever in use */
} reqpool_t;

/* A fresh slot (cleared, PENDING, its serial taken), or -1 out of memory. */
int reqpool_alloc(reqpool_t *p);
/* The slot back to the pool (its content runs freed; its sequence must be freed already). */
void reqpool_release(reqpool_t *p, int slot);
void reqpool_free(reqpool_t *p);

typedef struct step_row {         /* one scheduled row */
    int req;
    int q;
    long seq_len;
    int prefill;                  /* 1: prompt chunk, 0: decode row */
    int admitted;                 /* 1: the chunk that admitted the request from WAITING */
    long emitted;                 /* tokens this row emitted (after the step) */
} step_row_t;

typedef struct step_rec {
    long no;                      /* 1-based step number of its replica (current_step) */
    double t0, dt;
    step_type_t type;
    int nrows;
    long tokens;
    const step_row_t *rows;
    const route_plan_t *plan;
    cost_breakdown_t cost;
    int preempted;                /* requests preempted while scheduling this step */
    int replica;                  /* the replica that ran it */
} step_rec_t;

/* A latency window's distribution over its requests (engine_window_dist). */
typedef struct win_dist {
    long n;                       /* values (requests; token gaps for itl) */
    double mean, p50, p90, p99;
    int exact;                    /* 1: exact percentiles; 0: quant.h's sketch (QUANT_REL_ERR) */
} win_dist_t;

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

/* A replica's summary added into a cluster's: counts and sums add, peaks and capacities
 * add (the cluster's figure is the sum over its replicas), the makespan is the latest. */
void run_summary_add(run_summary_t *into, const run_summary_t *r);

#endif
