/* sched.c: one replica step's scheduling decision, vLLM-v1 style (docs/reference-system.md,
 * "The scheduler (one engine step)").
 *
 *  - current_step += 1; pacing is active this step iff PACE_STEPS > 0 and some
 *    running request has computed its whole prompt (computed >= prompt).
 *  - RUNNING requests first, in list order, while budget remains.  A running request
 *    is skipped while current_step < next_eligible (whether pacing is active or not:
 *    a gate set earlier holds until it expires).  A prefilling request's chunk is
 *    end = min(next block boundary, target, start + budget_left) (align mode: a chunk
 *    never crosses a block boundary; a model without GDN layers is not aligned).  A decoding request asks for 1 + K tokens.
 *    After a row that leaves the prompt unfinished (seq < prompt), with pacing active,
 *    next_eligible = current_step + N.
 *  - KV blocks are allocated as rows are scheduled, each allocation K lookahead slots
 *    beyond the row (num_lookahead_tokens); when the pool is short the newest running
 *    request is preempted (recompute; its gate is kept) and no WAITING request is
 *    admitted this step.
 *  - Then WAITING requests in order while budget and max_num_seqs allow; the
 *    admitting chunk is never paced; prefix-cache hits are whole blocks and at least
 *    one token is always computed.
 * The chunk boundary applies only where e->align (a model with GDN layers and
 * mamba_cache_mode align); any other model's chunk is limited by the budget alone.
 * engine.scheduler upstream follows vLLM v1's Scheduler.schedule() instead
 * (docs/reference-system.md, "Upstream vLLM v1"): no pacing; a chunk is
 * min(remaining, long_prefill_token_threshold, budget left), cut down to a block boundary
 * in align mode (_mamba_block_aligned_split); no limit on the prompts chunked in one step
 * (v1 has none: max_num_partial_prefills must stay 1); enable_chunked_prefill false
 * admits a waiting request only when its whole (threshold-capped) prompt fits the budget left; scheduling_policy priority admits the waiting
 * request of lowest (priority, arrival) first and preempts the running one of highest. */
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include "kvpool.h"
#include "scheduler.h"

static long cdivl(long a, long b) { return (a + b - 1) / b; }

static long blocks_for(const sched_t *e, long tokens)
{
    return cdivl(tokens, e->block) + e->gdn_blocks;
}

static int is_prefilling(const req_t *r) { return r->computed < r->target; }

/* A chunk's end: the target, cut by the budget; where e->align (a hybrid model, GDN layers,
 * in mamba_cache_mode align) also by the next block boundary (a GDN state is kept per
 * block).  A model without GDN layers has no state to align, and vLLM splits its prompts by
 * budget only.  Upstream: the threshold caps the chunk, and align cuts it back to a boundary. */
static long chunk_end(const sched_t *e, long start, long target, long budget)
{
    if (e->eng->scheduler == SCHED_UPSTREAM) {
        long thr = e->eng->long_prefill_token_threshold;
        long end = target;
        if (thr > 0 && start + thr < end) end = start + thr;
        if (start + budget < end) end = start + budget;
        /* _mamba_block_aligned_split: a chunk that does not finish the prompt ends on a
         * block boundary (0 tokens when none is in reach) */
        if (e->align && end < target) end = end / e->block * e->block > start ? end / e->block * e->block : start;
        return end;
    }
    if (!e->align) return start + budget < target ? start + budget : target;
    long boundary = (start / e->block + 1) * e->block;
    long end = boundary < target ? boundary : target;
    if (start + budget < end) end = start + budget;
    return end;
}

/* The block pool's blocks in use into used_blocks and the peaks (prefix_cache_model: pool). */
static void pool_sync(sched_t *e, req_t *r)
{
    kvpool_stats_t st;
    kvpool_get_stats(e->kv, &st);
    r->blocks = kvpool_seq_blocks(r->kv);
    e->used_blocks = st.in_use[KVPOOL_ATTN] + st.in_use[KVPOOL_MAMBA];
    if (e->used_blocks > e->sum->peak_blocks) e->sum->peak_blocks = e->used_blocks;
    if (st.in_use[KVPOOL_ATTN] > e->sum->peak_attn_blocks) e->sum->peak_attn_blocks = st.in_use[KVPOOL_ATTN];
    if (st.in_use[KVPOOL_MAMBA] > e->sum->peak_mamba_blocks) e->sum->peak_mamba_blocks = st.in_use[KVPOOL_MAMBA];
}

/* With the block pool a request's blocks go back cached, in vLLM's LRU order. */
static void free_blocks(sched_t *e, req_t *r)
{
    if (e->kv) {
        kvpool_release(e->kv, r->kv);
        r->kv_same = 0;
        pool_sync(e, r);
        return;
    }
    e->used_blocks -= r->blocks;
    r->blocks = 0;
}

void sched_release(sched_t *e, req_t *r) { free_blocks(e, r); }

/* grow_blocks with the block pool (kept out of line: the counted pool's path is the hot one) */
static int __attribute__((noinline)) grow_pool_blocks(sched_t *e, req_t *r, long computed, long upto)
{
    {
        /* kvpool_allocate depends on its arguments only through the blocks of computed - 1,
         * upto - 1, upto + lookahead - 1 and min(upto, known): when all four stay in the
         * blocks of the last successful call (a decode row inside its block) it would change
         * nothing, and is skipped */
        long known = r->prompt + r->emitted, b = e->block;
        long x[4] = { computed - 1, upto - 1, upto + e->spec_k - 1, upto < known ? upto : known };
        if (r->kv_same) {
            int k = 0;
            while (k < 4 && x[k] >= r->kv_lo[k] && x[k] < r->kv_lo[k] + b) k++;
            if (k == 4) return 0;
        }
        int rc = kvpool_allocate(e->kv, r->kv, computed, upto, e->spec_k, known);
        if (rc == KVPOOL_SHORT || rc == KVPOOL_DEFER) return rc == KVPOOL_SHORT ? -1 : -2;
        if (rc < 0) {
            snprintf(e->err, ENG_ERR_MAX, "%s (prefix cache, request %ld)",
                     rc == KVPOOL_ENOMEM ? "out of memory" : "invariant violated", r->serial);
            return -3;
        }
        pool_sync(e, r);
        for (int k = 0; k < 4; k++) r->kv_lo[k] = (x[k] >= 0 ? x[k] / b : -1 - (-1 - x[k]) / b) * b;
        r->kv_same = 1;
        return 0;
    }
}

/* Take enough blocks for r to hold its first `upto` tokens and spec_k lookahead slots,
 * `computed` of them having KV; 0, -1 if the pool is short, -2 a hybrid hit that must
 * wait a step (block pool), -3 an error (e->err). */
static inline int grow_blocks(sched_t *e, req_t *r, long computed, long upto)
{
    if (e->kv) return grow_pool_blocks(e, r, computed, upto);
    /* within the blocks held (a decode row inside its block): no division on the hot path */
    if (upto + e->spec_k <= (r->blocks - e->gdn_blocks) * e->block) return 0;
    long need = blocks_for(e, upto + e->spec_k);
    if (need <= r->blocks) return 0;
    if (e->used_blocks + (need - r->blocks) > e->capacity) return -1;
    e->used_blocks += need - r->blocks;
    r->blocks = need;
    if (e->used_blocks > e->sum->peak_blocks) e->sum->peak_blocks = e->used_blocks;
    return 0;
}

static int waitq_push_front(sched_t *e, int slot)
{
    if (sched_waitq_reserve(e) < 0) return -1;
    e->wq_head = (e->wq_head - 1 + e->wq_cap) % e->wq_cap;
    e->waitq[e->wq_head] = slot;
    e->wq_len++;
    return 0;
}

static int priority_policy(const sched_t *e)
{
    return e->eng->scheduler == SCHED_UPSTREAM && e->eng->scheduling_policy == POLICY_PRIORITY;
}

/* (priority, arrival) of a: below (-1), equal (0) or above (1) that of b. */
static int prio_cmp(const sched_t *e, const req_t *a, const req_t *b)
{
    long pa = e->rp->x[a->idx].priority, pb = e->rp->x[b->idx].priority;
    if (pa != pb) return pa < pb ? -1 : 1;
    double ta = a->t_ev[EV_ARRIVAL], tb = b->t_ev[EV_ARRIVAL];
    return ta < tb ? -1 : ta > tb ? 1 : 0;
}

/* The running request preemption takes: the newest (FCFS), or under the priority policy
 * the one of highest (priority, arrival) (vLLM: max(self.running, key=lambda r:
 * (r.priority, r.arrival_time)), the later in the list among equals).  It is moved to the
 * end of the running list. */
static int victim_pos(const sched_t *e)
{
    int best = e->nrun - 1;
    if (!priority_policy(e)) return best;
    for (int i = e->nrun - 2; i >= 0; i--)
        if (prio_cmp(e, &e->rp->r[e->running[i]], &e->rp->r[e->running[best]]) > 0) best = i;
    return best;
}

static void pick_victim(sched_t *e)
{
    if (!priority_policy(e) || e->nrun < 2) return;
    int best = victim_pos(e);
    int slot = e->running[best];
    memmove(&e->running[best], &e->running[best + 1], (size_t)(e->nrun - 1 - best) * sizeof *e->running);
    e->running[e->nrun - 1] = slot;
}

/* Under the priority policy, bring the waiting request of lowest (priority, arrival) to
 * the head of the ring (vLLM's PriorityRequestQueue, a heap on that key, pops it first). */
static void waitq_pick(sched_t *e)
{
    if (!priority_policy(e) || e->wq_len < 2) return;
    int best = 0;
    for (int i = 1; i < e->wq_len; i++)
        if (prio_cmp(e, &e->rp->r[e->waitq[(e->wq_head + i) % e->wq_cap]],
                     &e->rp->r[e->waitq[(e->wq_head + best) % e->wq_cap]]) < 0) best = i;
    for (int i = best; i > 0; i--) {             /* keep the others in order */
        int a = (e->wq_head + i) % e->wq_cap, b = (e->wq_head + i - 1) % e->wq_cap;
        int t = e->waitq[a]; e->waitq[a] = e->waitq[b]; e->waitq[b] = t;
    }
}

/* Preempt the newest running request (recompute): back to the front of WAITING.
 * 0, or -1 out of memory (nothing changed). */
static int preempt_last(sched_t *e)
{
    if (sched_waitq_reserve(e) < 0) {
        snprintf(e->err, ENG_ERR_MAX, "out of memory (waiting queue)");
        return -1;
    }
    pick_victim(e);
    int slot = e->running[--e->nrun];
    req_t *r = &e->rp->r[slot];
    free_blocks(e, r);
    r->target = r->prompt + r->emitted;
    r->computed = 0;
    r->preemptions++;
    r->state = RQ_WAITING;
    e->sum->preemptions++;
    return waitq_push_front(e, slot);   /* room reserved above: cannot fail */
}

/* The hit of a waiting request: whole blocks, at most target - 1 tokens; with the block
 * pool what is cached now (negative: an error in e->err). */
static long prefix_hit(sched_t *e, req_t *r)
{
    if (e->kv) {
        long hit = kvpool_lookup(e->kv, r->kv, r->target);
        if (hit < 0) snprintf(e->err, ENG_ERR_MAX, "out of memory (prefix cache lookup)");
        return hit;
    }
    if (!e->eng->enable_prefix_caching || r->cached <= 0) return 0;
    long c = r->cached < r->target - 1 ? r->cached : r->target - 1;
    return c / e->block * e->block;
}

/* A row already scheduled this step whose request was just preempted: removed, its
 * tokens back in the budget. */
static void drop_row(sched_t *e, int *n, int slot, long *budget)
{
    for (int k = 0; k < *n; k++)
        if (e->rows[k].req == slot) {
            *budget += e->rows[k].q;
            memmove(&e->rows[k], &e->rows[k + 1], (size_t)(*n - 1 - k) * sizeof *e->rows);
            (*n)--;
            return;
        }
}

static int sched_try(sched_t *e, int *preempted)
{
    const scn_engine_t *eng = e->eng;
    int upstream = eng->scheduler == SCHED_UPSTREAM;
    long pace = upstream ? 0 : e->pace;
    long budget = eng->max_num_batched_tokens;
    long thr = eng->long_prefill_token_threshold;
    int n = 0;
    int i_victim;
    req_t *pool = e->rp->r;            /* the scheduler creates no request: the pool stays put */
    *preempted = 0;
    e->step_no++;
    if (e->kv) kvpool_step_begin(e->kv);

    int pacing = 0;
    if (pace > 0)
        for (int i = 0; i < e->nrun; i++)
            if (pool[e->running[i]].computed >= pool[e->running[i]].prompt) { pacing = 1; break; }

    /* what the loop reads of e, in locals: its stores through r and row may alias e's fields,
     * and every row would reload them */
    const long step_no = e->step_no, gdn = e->gdn_blocks;
    const int spec_k = e->spec_k, blk = e->block, counted = e->kv == NULL;
    for (int i = 0; i < e->nrun && budget > 0; i++) {
        int slot = e->running[i];
        req_t *r = &pool[slot];
        long q, seq;
        int pre = is_prefilling(r);
        if (step_no < r->next_eligible) continue;
        if (pre) {
            long end = chunk_end(e, r->computed, r->target, budget);
            q = end - r->computed;
            seq = end;
        } else {
            q = 1 + spec_k;
            if (q > budget) q = budget;
            seq = r->computed + q;
        }
        if (q <= 0) continue;
        int grc = 0;
        /* grow_blocks' first test (a decode row inside its blocks) with the locals */
        if (!(counted && seq + spec_k <= (r->blocks - gdn) * blk))
            while ((grc = grow_blocks(e, r, r->computed, seq)) < 0) {
                if (grc != -1) return -1;
                /* where the victim stands before preempt_last moves it to the end: a victim ahead
                 * of us has a row in this step already, which goes with it */
                i_victim = victim_pos(e);
                int victim = e->running[i_victim];
                if (preempt_last(e) < 0) return -1;
                (*preempted)++;
                if (victim == slot) { r = NULL; break; }
                /* a victim ahead of us in the list (priority policy) shifts us back by one */
                if (i_victim < i) { i--; drop_row(e, &n, victim, &budget); }
            }
        if (!r) break;                 /* we preempted ourselves: stop here */
        step_row_t *row = &e->rows[n++];
        *row = (step_row_t){ .req = slot, .q = (int)q, .seq_len = seq, .prefill = pre };
        budget -= q;
        if (pacing && seq < r->prompt) r->next_eligible = step_no + pace;
    }

    if (*preempted) return n;
    while (e->wq_len > 0 && budget > 0 && e->nrun < eng->max_num_seqs) {
        waitq_pick(e);
        int slot = e->waitq[e->wq_head];
        req_t *r = &e->rp->r[slot];
        long hit = prefix_hit(e, r);
        if (hit < 0) return -1;
        /* disaggregated: its prompt's KV arrived from its prefill replica; blocks for all of it,
         * and only its last token computed here to sample the first output token, as vLLM's
         * scheduler does with a remote prefill (num_computed_tokens = prompt - 1,
         * vllm-project/vllm:vllm/v1/core/sched/scheduler.py@00024d314514900f361ad072af6931e403b7f589,
         * _update_waiting_for_remote_kv) */
        long start = r->handoff == HANDOFF_KV_IN ? r->target - 1 : hit;
        if (upstream) {
            long rem = r->target - start;
            long want = thr > 0 && rem > thr ? thr : rem;
            if (!eng->enable_chunked_prefill && want > budget) break;   /* the whole prompt or nothing */
        }
        long end = chunk_end(e, start, r->target, budget);
        if (end <= start) break;                               /* align: no boundary within the budget */
        int grc = grow_blocks(e, r, hit, end);
        if (grc == -3) return -1;
        if (grc < 0) break;            /* not enough KV, or a snapshot of this step: wait */
        /* the requests CSV's cached_tokens: the pool's hit at the first admission, as vLLM's
         * Request.num_cached_tokens (set once: `if request.num_cached_tokens < 0`,
         * vllm-project/vllm:vllm/v1/core/sched/scheduler.py@00024d314514900f361ad072af6931e403b7f589);
         * a readmission after a preemption may hit emitted tokens too, never counted there */
        if (e->kv && r->preemptions == 0) r->cached = hit;
        e->wq_head = (e->wq_head + 1) % e->wq_cap;
        e->wq_len--;
        r->computed = start;
        r->cache_hit = start;
        if (r->handoff == HANDOFF_KV_IN) r->handoff = HANDOFF_NONE;   /* a preemption recomputes it here */
        e->sum->adm_tokens += r->target;
        e->sum->adm_hit_tokens += hit;
        r->state = RQ_RUNNING;
        e->running[e->nrun++] = slot;
        step_row_t *row = &e->rows[n++];
        memset(row, 0, sizeof *row);
        row->req = slot;
        row->q = (int)(end - start);
        row->seq_len = end;
        row->prefill = 1;
        row->admitted = 1;
        budget -= end - start;
    }
    return n;
}

int sched_step(sched_t *e, int *preempted)
{
    int n = sched_try(e, preempted);
    if (n == 0 && e->kv) {
        /* blocks freed unhashed this attempt become reusable when the next step starts:
         * an empty step is tried once more, as vLLM's next schedule() call would */
        kvpool_stats_t st;
        kvpool_get_stats(e->kv, &st);
        if (st.pending > 0) n = sched_try(e, preempted);
    }
    return n;
}

/* ---- the waiting queue -------------------------------------------------------- */

int sched_waitq_reserve(sched_t *e)
{
    if (e->wq_len < e->wq_cap) return 0;
    int cap = e->wq_cap ? 2 * e->wq_cap : 64;
    int *w = malloc((size_t)cap * sizeof *w);
    if (!w) return -1;
    for (int i = 0; i < e->wq_len; i++) w[i] = e->waitq[(e->wq_head + i) % e->wq_cap];
    free(e->waitq);
    e->waitq = w;
    e->wq_head = 0;
    e->wq_cap = cap;
    return 0;
}

int sched_enqueue(sched_t *e, int slot)
{
    if (sched_waitq_reserve(e) < 0) return -1;
    e->waitq[(e->wq_head + e->wq_len) % e->wq_cap] = slot;
    e->wq_len++;
    return 0;
}

void sched_free(sched_t *e)
{
    free(e->running);
    free(e->waitq);
    free(e->rows);
    e->running = e->waitq = NULL;
    e->rows = NULL;
}
