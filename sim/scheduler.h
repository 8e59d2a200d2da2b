/* scheduler: one replica's scheduler -- its running list, its waiting queue, its KV blocks
 * and the rule that picks the next step's rows (sched.c; the rules in
 * docs/reference-system.md, "The scheduler").
 *
 * sched_t is the scheduler's whole context: the replica that owns it (replica.c) sets
 * its configuration, hands it requests (sched_enqueue) and calls sched_step; the
 * scheduler knows nothing of the replica, the cluster or the workload. */
#ifndef PACESIM_SCHEDULER_H
#define PACESIM_SCHEDULER_H

#include "request.h"

struct kvpool;

typedef struct sched {
    /* configuration (set by the owner before the first step) */
    const scn_engine_t *eng;      /* the replica's engine settings */
    long pace;                    /* VLLM_1CAT_PREFILL_PACE_STEPS */
    int block, spec_k;
    int align;                    /* 1: prompt chunks end on block boundaries (hybrid, mamba_cache_mode align) */
    long capacity, gdn_blocks;
    struct kvpool *kv;            /* the block pool (prefix_cache_model: pool), else NULL */
    reqpool_t *rp;                /* the requests (shared; indexed by slot) */
    run_summary_t *sum;           /* where it counts preemptions, admissions and block peaks */
    char *err;                    /* ENG_ERR_MAX bytes: the message of a failure */
    /* state */
    long used_blocks;
    int *running, nrun;           /* room for eng->max_num_seqs + 1 */
    int *waitq, wq_head, wq_len, wq_cap;   /* ring buffer */
    long step_no;
    step_row_t *rows;             /* the step's rows (room for eng->max_num_seqs + 1) */
} sched_t;

/* Fill s->rows for the next step; returns the row count (0 = nothing schedulable) or -1
 * on error (s->err). */
int sched_step(sched_t *s, int *preempted);
/* A finished request's KV blocks back to the pool (cached, with the block pool). */
void sched_release(sched_t *s, req_t *r);
/* A request joins the back of the waiting queue.  0, or -1 out of memory. */
int sched_enqueue(sched_t *s, int slot);
/* Room for one more request in the waiting ring (either end).  0, or -1 out of memory. */
int sched_waitq_reserve(sched_t *s);
void sched_free(sched_t *s);

#endif
