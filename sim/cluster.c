/* cluster.c: a run -- the shared event queue and clock, the router, the drive loop and
 * the measurement windows over replicas fed by one workload.  See engine.h for the
 * design and its invariants. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_rng.h>
#include "engine.h"
#include "kvpool.h"
#include "router.h"
#include "simclock.h"

/* ---- what the parts ask the run ------------------------------------------------------ */

/* The workload's question: does a request fit every replica that may serve it (the
 * first replica of each pool stands for its pool)? */
static int cluster_fits(void *ctx, long prompt, long output, long *need, int *block, long *cap)
{
    const engine_t *e = ctx;
    for (int h = 0; h < e->nheads; h++) {
        int k = e->heads[h];
        const replica_t *r = &e->rep[k];
        /* a prefill replica holds the prompt (and the token it samples) */
        long n = replica_request_blocks(r, prompt, k < e->npre ? 1 : output);
        if (n > r->sc.capacity) {
            ((engine_t *)ctx)->unfit_pool = r->pool;
            *need = n;
            *block = r->sc.block;
            *cap = r->sc.capacity;
            return 0;
        }
    }
    return 1;
}

/* Replica k may start a step when no event is due now (it has requests and no step). */
static void mark_ready(engine_t *e, int k)
{
    if (e->in_ready[k]) return;
    e->in_ready[k] = 1;
    e->ready[e->nready++] = k;
}

static int admit(engine_t *e, int k, int slot)
{
    mark_ready(e, k);
    return replica_admit(&e->rep[k], slot);
}

static int push(engine_t *e, double t, evt_kind_t kind, int a, long b)
{
    event_t ev = { .time = t, .kind = kind, .a = a, .b = b };
    if (evq_push(&e->q, ev) < 0) {
        snprintf(e->err, ENG_ERR_MAX, "out of memory (event queue)");
        return -1;
    }
    return 0;
}

/* A request arrived: the router picks its replica (disaggregated: a prefill replica); it
 * gets there after the router's decision latency (at once without one). */
static int cluster_arrive(void *ctx, int slot, double t)
{
    engine_t *e = ctx;
    if (e->nrep == 1) return admit(e, 0, slot);
    const scn_cluster_t *cc = &e->s->cluster;
    router_ctx_t rc = { .rep = e->rep, .n = e->npre ? e->npre : e->nrep, .q = &e->rp.r[slot], .cfg = cc,
                        .rng = e->rng_route, .rr = &e->rr_next, .session_rep = e->rp.x[slot].session_replica };
    if (e->npre) e->rp.r[slot].handoff = HANDOFF_PREFILL;
    int k = router_get(cc->router)(&rc);
    if (cc->router_latency_s > 0) {
        event_t ev = { .time = t + cc->router_latency_s, .kind = EVT_ROUTED, .a = slot, .b = k };
        if (evq_push(&e->q, ev) < 0) {
            snprintf(e->err, ENG_ERR_MAX, "out of memory (event queue)");
            return -1;
        }
        return 0;
    }
    return admit(e, k, slot);
}

/* Disaggregated: request q's prompt is computed on prefill replica p (the clock at that
 * step's end).  The router picks a decode replica among the decode pools' (as vLLM's proxy
 * does once the prefill instance answers); the prefill replica pushes the KV to it at
 * once (layer-wise: it has been sending since the prefill began, kvxfer.h), and keeps its
 * blocks until the KV has been sent; the request reaches the decode replica once its KV
 * has arrived and the router's decision latency has passed, and waits there for blocks. */
static int cluster_on_handoff(void *ctx, replica_t *p, req_t *q)
{
    engine_t *e = ctx;
    const scn_cluster_t *cc = &e->s->cluster;
    req_aux_t *x = &e->rp.x[q->idx];
    double now = e->now;
    double sent = e->xfer.layerwise ? x->xfer_free + e->xfer.lat : now + kvx_time(&e->xfer, replica_kv_bytes(p, q->target));
    if (sent < now) sent = now;
    x->kv_xfer_s = sent - now;
    x->prefill_replica = p->idx;
    if (quant_add(&e->xfer_q, x->kv_xfer_s) < 0) {
        snprintf(e->err, ENG_ERR_MAX, "out of memory");
        return -1;
    }
    router_ctx_t rc = { .rep = e->rep + e->npre, .n = e->nrep - e->npre, .q = q, .cfg = cc, .rng = e->rng_route,
                        .rr = &e->rr_dec, .session_rep = -1 };
    int d = e->npre + router_get(cc->router)(&rc);
    double at = now + cc->router_latency_s;
    if (at > sent) {
        if (push(e, sent, EVT_KV_SENT, q->idx, -1) < 0) return -1;
        return push(e, at, EVT_ROUTED, q->idx, d);
    }
    return push(e, sent, EVT_KV_SENT, q->idx, d);
}

/* Request slot's KV has been sent: its prefill replica frees its blocks; the request joins
 * decode replica d (d < 0: later, an EVT_ROUTED) with its KV. */
static int kv_sent(engine_t *e, int slot, int d)
{
    req_t *q = &e->rp.r[slot];
    int p = e->rp.x[slot].prefill_replica;
    replica_kv_sent(&e->rep[p], q);
    mark_ready(e, p);                  /* its freed blocks may admit a waiting request */
    q->handoff = HANDOFF_KV_IN;
    if (d < 0) return 0;               /* in transit (RQ_XFER) until the router's decision reaches it */
    q->state = RQ_WAITING;
    return admit(e, d, slot);
}

/* The router's decision reaches request slot: it joins replica k (disaggregated: its KV
 * arrived before, it leaves its transit). */
static int routed(engine_t *e, int k, int slot)
{
    if (e->rp.r[slot].state == RQ_XFER) e->rp.r[slot].state = RQ_WAITING;
    return admit(e, k, slot);
}

static int cluster_on_finish(void *ctx, replica_t *r, req_t *q)
{
    engine_t *e = ctx;
    (void)r;
    if (e->on_finish) e->on_finish(e->on_finish_ctx, e, q);
    return 0;
}

static workload_hooks_t wl_hooks(engine_t *e)
{
    return (workload_hooks_t){ .arrive = cluster_arrive, .fits = cluster_fits, .ctx = e, .clock_max = e->clock_max,
                               .step_min = e->step_min };
}

/* ---- outputs --------------------------------------------------------------------- */

double engine_window(const engine_t *e, int i) { return e->m.win[i].value; }

double engine_window_quantile(engine_t *e, int i, double q)
{
    return e->m.win[i].lat ? quant_quantile(e->m.win[i].lat, q) : NAN;
}

int engine_window_dist(const engine_t *e, int i, win_dist_t *d)
{
    if (!e->m.win[i].lat) return 0;
    *d = e->m.win[i].dist;
    return 1;
}

const char *engine_step_type_name(step_type_t t)
{
    static const char *const names[] = { "any", "decode", "mixed", "prefill" };
    return t >= STEP_ANY && t <= STEP_PREFILL_ONLY ? names[t] : "?";
}

const char *engine_req_name(const engine_t *e, int slot, char *buf, size_t n)
{
    const req_t *r = &e->rp.r[slot];
    if (r->explicit_idx >= 0) return e->s->requests[r->explicit_idx].id;
    snprintf(buf, n, "r%ld", r->serial);
    return buf;
}

void run_summary_add(run_summary_t *S, const run_summary_t *r)
{
    S->steps += r->steps;
    for (int i = 0; i < 4; i++) S->steps_by_type[i] += r->steps_by_type[i];
    S->empty_steps += r->empty_steps;
    S->preemptions += r->preemptions;
    S->requests_finished += r->requests_finished;
    S->tokens_emitted += r->tokens_emitted;
    if (r->makespan > S->makespan) S->makespan = r->makespan;
    S->ttft_sum += r->ttft_sum;
    S->tpot_sum += r->tpot_sum;
    S->itl_sum += r->itl_sum;
    S->ttft_n += r->ttft_n;
    S->tpot_n += r->tpot_n;
    S->itl_n += r->itl_n;
    S->peak_running += r->peak_running;
    if (!S->block_size) S->block_size = r->block_size;
    S->capacity_blocks += r->capacity_blocks;
    S->peak_blocks += r->peak_blocks;
    S->pool |= r->pool;
    S->pc_queries += r->pc_queries;
    S->pc_query_tokens += r->pc_query_tokens;
    S->pc_hit_tokens += r->pc_hit_tokens;
    S->pc_hit_blocks += r->pc_hit_blocks;
    S->pc_evictions += r->pc_evictions;
    S->pc_allocated += r->pc_allocated;
    S->peak_attn_blocks += r->peak_attn_blocks;
    S->peak_mamba_blocks += r->peak_mamba_blocks;
    S->adm_tokens += r->adm_tokens;
    S->adm_hit_tokens += r->adm_hit_tokens;
    S->clamped += r->clamped;
}

/* ---- set-up ------------------------------------------------------------------ */

int engine_init(engine_t *e, const scenario_t *s, cost_model_t *cost, const profile_t *prof)
{
    return engine_init_ex(e, s, cost, prof, NULL, NULL);
}


/* The price of the shortest step replica r can take: one row of one token at a context of
 * one token (a prompt chunk's least; a decode row costs as much or more), its drafts as
 * replica_start_step runs them, priced by cm (a fresh model: the run's keeps state from step
 * to step).  0 with *dt, or -1 (no figure: out of memory, or cm refused the step). */
static int shortest_step(const replica_t *r, cost_model_t *cm, double *dt)
{
    const scenario_t *s = r->s;
    kseg_t seg = { -1, 1, 1 };
    route_plan_t plan, dplan;
    route_plan_init(&plan);
    route_plan_init(&dplan);
    const route_plan_t *draft = NULL;
    int rc = route_step(&r->rcfg, &seg, 1, &plan);
    if (rc == 0 && s->engine.spec_dflash2) {
        route_cfg_t dc = r->rcfg;
        dc.grouped_verify = ROUTE_GROUPED_DRAFT;
        rc = route_step(&dc, &seg, 1, &dplan);
        draft = &dplan;
    } else if (rc == 0 && r->sc.spec_k > 1) {
        rc = route_step(&r->rcfg, &seg, 1, &dplan);
        draft = &dplan;
    }
    cost_step_t cin = { &plan, draft, 1, 1, 0, 0, r->sc.spec_k, 0, 1, s->engine.spec_mtp ? s->engine.draft_layers : 0 };
    cost_breakdown_t o;
    cost_breakdown_clear(&o);
    if (rc == 0) rc = cm->step(cm, &cin, &o) < 0 ? -1 : 0;
    route_plan_free(&plan);
    route_plan_free(&dplan);
    *dt = o.total;
    return rc == 0 && o.total > 0 && isfinite(o.total) ? 0 : -1;
}

/* The latest time the clock holds every replica's shortest step to ENG_STEP_RTOL of it: a
 * step ending before 2^k rounds by at most 2^(k-54) s.  Where it is before SIM_CLOCK_MAX_S
 * (the workload's limit) (a small model priced without a host overhead, a profile of nanosecond kernels), it
 * is the limit of the arrivals (e->clock_max), so that an arrival too late for the clock is
 * refused at its key, not met mid-run.  Needs fresh models (mk); none: SIM_CLOCK_MAX_S alone. */
static void clock_hold(engine_t *e, engine_cost_fn mk, void *mk_ctx)
{
    e->clock_max = e->step_min = 0;
    if (!mk) return;
    double dmin = INFINITY;
    char err[ENG_ERR_MAX];
    for (int h = 0; h < e->nheads; h++) {
        const replica_t *r = &e->rep[e->heads[h]];
        cost_model_t *cm = mk(mk_ctx, r->s, err);
        double dt;
        if (cm && shortest_step(r, cm, &dt) == 0 && dt < dmin) dmin = dt;
        cost_free(cm);
    }
    if (!isfinite(dmin)) return;
    double hold = ldexp(1, (int)floor(54 + log2(ENG_STEP_RTOL * dmin)));
    if (hold < SIM_CLOCK_MAX_S) {
        e->clock_max = hold;
        e->step_min = dmin;
    }
}

/* What a cluster's replicas allocate at the start, over all of them: the block pools' state
 * (~45 bytes a block) and the per-step arrays sized by max_num_seqs.  Each replica's is bounded
 * (KVPOOL_MAX_BLOCKS, 2^20 sequences), but 4096 replicas at those bounds ask hundreds of GB;
 * so the sums are bounded too, checked as each pool's first replica is sized (r) before the
 * pool's other replicas are allocated.  0, or -1 (e->err names the pool's count). */
#define CLUSTER_MAX_POOL_BLOCKS (1L << 26)   /* ~3 GB of block-pool state */
#define CLUSTER_MAX_SEQS (1L << 24)          /* ~0.2 GB of per-step arrays */
static int cluster_bound(engine_t *e, const scn_cluster_t *c, int i, const replica_t *r, long *blocks, long *seqs)
{
    const scn_pool_t *p = &c->pools[i];
    const scenario_t *ps = p->s;
    if (ps->engine.prefix_pool) *blocks += (long)p->count * r->sc.capacity;
    *seqs += (long)p->count * ps->engine.max_num_seqs;
    if (*blocks > CLUSTER_MAX_POOL_BLOCKS)
        snprintf(e->err, ENG_ERR_MAX, "%s:%d:%d: cluster.pools.%s.count: the replicas' block pools hold %ld blocks in all,"
                 " more than %ld (~45 bytes of state each, allocated at the start): fewer replicas or a smaller"
                 " engine.num_gpu_blocks", ps->path, p->line, p->col, p->name, *blocks, CLUSTER_MAX_POOL_BLOCKS);
    else if (*seqs > CLUSTER_MAX_SEQS)
        snprintf(e->err, ENG_ERR_MAX, "%s:%d:%d: cluster.pools.%s.count: the replicas' engine.max_num_seqs add up to %ld,"
                 " more than %ld (each replica sizes its per-step arrays by it): fewer replicas or a smaller"
                 " max_num_seqs", ps->path, p->line, p->col, p->name, *seqs, CLUSTER_MAX_SEQS);
    else
        return 0;
    return -1;
}
/* The replicas: one, or each pool's count of its scenario (disaggregated: the prefill
 * pools' replicas first, then the decode pools', each in the pools' order). */
static int make_replicas(engine_t *e, const scenario_t *s, cost_model_t *cost, const profile_t *prof,
                         engine_cost_fn mk, void *mk_ctx)
{
    const scn_cluster_t *c = &s->cluster;
    int n = 1;
    if (c->enabled) {
        n = 0;
        for (int i = 0; i < c->n_pools; i++) n += c->pools[i].count;
    }
    if (!(e->rep = calloc((size_t)n, sizeof *e->rep)) || !(e->owned = calloc((size_t)n, sizeof *e->owned)) ||
        !(e->ready = calloc((size_t)n, sizeof *e->ready)) || !(e->in_ready = calloc((size_t)n, 1))) {
        snprintf(e->err, ENG_ERR_MAX, "out of memory");
        return -1;
    }
    if (!c->enabled) {
        e->nrep = 1;
        return replica_init(&e->rep[0], 0, s, cost, prof, &e->rp, e->err);
    }
    if (n > 1 && !mk) {
        snprintf(e->err, ENG_ERR_MAX, "%s: a cluster of %d replicas needs a cost model per replica", s->path, n);
        return -1;
    }
    int k = 0;
    long blocks[1] = { 0 }, seqs[1] = { 0 };
    for (int pass = 0; pass < 2 * c->n_pools; pass++) {
        int i = pass % c->n_pools;
        if (c->disaggregated ? (pass < c->n_pools) != (c->pools[i].role == ROLE_PREFILL) : pass >= c->n_pools)
            continue;
        const scenario_t *ps = c->pools[i].s;
        for (int j = 0; j < c->pools[i].count; j++, k++) {
            cost_model_t *cm = cost;
            int same = !memcmp(&ps->model, &s->model, sizeof s->model) &&
                       ps->engine.tensor_parallel_size == s->engine.tensor_parallel_size;
            if (k > 0 || !same) {
                if (!(cm = mk(mk_ctx, ps, e->err))) return -1;
                e->owned[e->nowned++] = cm;
            }
            e->nrep = k + 1;
            if (replica_init(&e->rep[k], k, ps, cm, prof, &e->rp, e->err) < 0) return -1;
            if (j == 0 && cluster_bound(e, c, i, &e->rep[k], blocks, seqs) < 0) return -1;
            e->rep[k].pool = i;
            if (c->pools[i].role == ROLE_PREFILL) e->npre = k + 1;
        }
    }
    return 0;
}

/* A request that does not fit a cluster pool's cache: the message names the pool (its
 * engine keys may be its own). */
static void unfit_where(engine_t *e)
{
    const scn_cluster_t *c = &e->s->cluster;
    size_t o = strlen(e->err);
    if (!c->enabled || e->unfit_pool < 0 || e->unfit_pool >= c->n_pools || o + 1 >= ENG_ERR_MAX) return;
    snprintf(e->err + o, ENG_ERR_MAX - o, "; the cache of pool %s's replicas (cluster.pools.%s.engine)",
             c->pools[e->unfit_pool].name, c->pools[e->unfit_pool].name);
}

int engine_init_ex(engine_t *e, const scenario_t *s, cost_model_t *cost, const profile_t *prof, engine_cost_fn mk,
                   void *mk_ctx)
{
    memset(e, 0, sizeof *e);
    evq_init(&e->q);
    quant_init(&e->xfer_q, 0);
    e->s = s;
    e->cost = cost;
    if (make_replicas(e, s, cost, prof, mk, mk_ctx) < 0) return -1;
    /* the first replica of each run of one pool's replicas: cluster_fits asks those alone
     * (for every request: not a walk over every replica) */
    if (!(e->heads = malloc((size_t)e->nrep * sizeof *e->heads))) {
        snprintf(e->err, ENG_ERR_MAX, "out of memory");
        return -1;
    }
    for (int k = 0; k < e->nrep; k++)
        if (k == 0 || e->rep[k].pool != e->rep[k - 1].pool) e->heads[e->nheads++] = k;
    clock_hold(e, mk, mk_ctx);
    workload_hooks_t h = wl_hooks(e);
    e->unfit_pool = -1;
    if (workload_check(s, &h, e->err) < 0) {
        unfit_where(e);
        return -1;
    }
    for (int k = 0; k < e->nrep; k++) {
        replica_t *r = &e->rep[k];
        if (replica_setup(r, prof, k > 0) < 0) return -1;
        r->m = &e->m;
        r->clock = &e->now;
        r->shared = e->nrep > 1;
        r->hooks = (replica_hooks_t){ .on_finish = cluster_on_finish, .ctx = e };
        if (k < e->npre) {
            r->hooks.on_handoff = cluster_on_handoff;
            r->xfer = &e->xfer;
        }
    }
    if (e->npre) {
        const scn_cluster_t *c = &s->cluster;
        const model_t *m = &e->rep[0].s->model;
        e->xfer = (kvx_link_t){ .bw = c->kv_bandwidth, .lat = c->kv_latency_s, .layerwise = c->kv_layerwise,
                                .layers = m->n_full_attn + m->n_gdn };
    }
    if (e->nrep > 1) {
        /* the router's own stream, apart from the workload's and the replicas' */
        if (!(e->rng_route = gsl_rng_alloc(gsl_rng_mt19937))) {
            snprintf(e->err, ENG_ERR_MAX, "out of memory");
            return -1;
        }
        gsl_rng_set(e->rng_route, s->seed * 2 + 3);
    }
    int rc = workload_init(&e->wl, s, &e->rp, &e->q, &h, e->err);
    if (rc < 0) return rc;
    return metrics_init(&e->m, s, &e->rp, e->wl.explicit_slot, e->err);
}

int engine_check_trace(engine_t *e)
{
    workload_hooks_t h = wl_hooks(e);
    e->unfit_pool = -1;
    int rc = workload_check_trace(e->s, &h, e->err);
    if (rc < 0) unfit_where(e);
    return rc;
}

void engine_free(engine_t *e)
{
    for (int i = 0; i < e->rp.n && e->rp.r; i++) {
        req_t *r = &e->rp.r[i];
        if (r->kv && r->replica >= 0) kvpool_seq_free(e->rep[r->replica].sc.kv, r->kv);
        r->kv = NULL;
    }
    reqpool_free(&e->rp);
    for (int k = 0; k < e->nrep && e->rep; k++) replica_free(&e->rep[k]);
    free(e->rep);
    for (int i = 0; i < e->nowned; i++) cost_free(e->owned[i]);
    free(e->owned);
    free(e->ready);
    free(e->in_ready);
    free(e->heads);
    if (e->rng_route) gsl_rng_free(e->rng_route);
    workload_free(&e->wl);
    metrics_free(&e->m);
    quant_free(&e->xfer_q);
    evq_free(&e->q);
    memset(e, 0, sizeof *e);
}

/* ---- the loop ---------------------------------------------------------------- */

/* The virtual clock only moves forward. */
static int advance_clock(engine_t *e, double t)
{
    if (!(t >= e->now)) {
        snprintf(e->err, ENG_ERR_MAX, "invariant violated: the clock would go back from %.9g s to %.9g s", e->now, t);
        return -1;
    }
    e->now = t;
    return 0;
}

/* Replica k's step ended (the clock at its end): its effects, the windows, the observer,
 * generated requests that finished freed (a conversation's next turn queued), triggers.
 * 0, 1 the run stops, or < 0 an error. */
static int step_ended(engine_t *e, int k)
{
    const scenario_t *s = e->s;
    replica_t *r = &e->rep[k];
    long served = r->served;
    e->busy--;
    if (replica_end_step(r) < 0) return -1;
    mark_ready(e, k);
    e->sum.steps++;
    metrics_on_step(&e->m, &r->rec);
    if (e->observer) e->observer(e->observer_ctx, e, &r->rec);
    /* free generated requests that finished (explicit ones stay for the windows); a request
     * finishes at the end of a step that scheduled it, and most steps finish none */
    for (int i = 0; r->served != served && i < r->nrows; i++) {
        int slot = r->sc.rows[i].req;
        req_t *q = &e->rp.r[slot];
        if (q->state != RQ_DONE || q->explicit_idx >= 0) continue;
        if (workload_on_done(&e->wl, slot, e->now) < 0) return -1;
        q = &e->rp.r[slot];
        kvpool_seq_free(r->sc.kv, q->kv);
        q->kv = NULL;
        reqpool_release(&e->rp, slot);
    }
#ifdef PACESIM_DEBUG
    if (replica_check(r) < 0) return -1;
#endif
    if (workload_triggers(&e->wl, e->now) < 0) return -1;
    if (workload_stop_reached(&e->wl)) return 1;
    if (s->stop.max_time_s > 0 && e->now >= s->stop.max_time_s) { e->sum.stopped_by_time = 1; return 1; }
    if (s->stop.max_steps > 0 && e->sum.steps >= s->stop.max_steps) { e->sum.stopped_by_steps = 1; return 1; }
    return 0;
}

static int handle(engine_t *e, const event_t *ev)
{
    if (ev->kind == EVT_STEP_END) return step_ended(e, ev->a);
    if (ev->kind == EVT_ROUTED) return routed(e, (int)ev->b, ev->a);
    if (ev->kind == EVT_KV_SENT) return kv_sent(e, ev->a, (int)ev->b);
    int rc = workload_event(&e->wl, ev);
    if (rc < 0) return rc;
    /* triggers are checked at step ends and while no step runs */
    if (!e->busy && workload_triggers(&e->wl, e->now) < 0) return -1;
    return 0;
}

/* Every idle replica with requests starts its next step (those marked ready, in the order
 * they were marked; one that cannot schedule now stays marked and tries again after the
 * next event).  0, or -1. */
static int start_steps(engine_t *e)
{
    int keep = 0;
    for (int i = 0; i < e->nready; i++) {
        int k = e->ready[i];
        replica_t *r = &e->rep[k];
        if (r->busy || !replica_has_work(r)) {
            e->in_ready[k] = 0;
            continue;
        }
        int rc = replica_start_step(r, e->now);
        if (rc < 0) return -1;
        if (rc == 0) {                 /* blocked: tried again after the next event */
            e->ready[keep++] = k;
            continue;
        }
        e->in_ready[k] = 0;
        event_t ev = { .time = r->t_end, .kind = EVT_STEP_END, .a = k };
        if (evq_push(&e->q, ev) < 0) {
            snprintf(e->err, ENG_ERR_MAX, "out of memory (event queue)");
            return -1;
        }
        e->busy++;
    }
    e->nready = keep;
    return 0;
}

/* No event left and nothing running: a replica that still holds requests can never run
 * them.  The error, or 0. */
static int stalled(engine_t *e)
{
    for (int k = 0; k < e->nrep; k++) {
        replica_t *r = &e->rep[k];
        if (!replica_has_work(r)) continue;
        if (r->sc.nrun == 0 && r->sc.wq_len > 0) {
            snprintf(e->err, ENG_ERR_MAX, "%s: the next waiting request does not fit in the KV cache (%ld blocks)",
                     e->s->path, r->sc.capacity);
        } else {
            snprintf(e->err, ENG_ERR_MAX, "%s: the engine stalled at step %ld (nothing schedulable)", e->s->path,
                     r->sc.step_no);
            e->sum.stall = 1;
        }
        return -1;
    }
    return 0;
}

static int any_work(const engine_t *e)
{
    for (int k = 0; k < e->nrep; k++)
        if (replica_has_work(&e->rep[k])) return 1;
    return 0;
}

int engine_run(engine_t *e)
{
    const scenario_t *s = e->s;
    event_t ev;
    int rc;
    e->m.serve = e->serve;
    for (;;) {
        /* every event due now first (arrivals at a step's end after it) */
        const event_t *nx = evq_peek(&e->q);
        if (nx && nx->time <= e->now) {
            evq_pop(&e->q, &ev);
            if ((rc = handle(e, &ev)) < 0) return rc;
            if (rc > 0) break;
            continue;
        }
        if (!e->busy && workload_triggers(&e->wl, e->now) < 0) return -1;
        if (start_steps(e) < 0) return -1;
        nx = evq_peek(&e->q);
        if (!nx) {
            if (stalled(e) < 0) return -1;
            if (workload_pending(&e->wl)) {
                snprintf(e->err, ENG_ERR_MAX,
                         "%s: a request's arrival trigger can never fire (its reference finished first)", s->path);
                return -1;
            }
            break;
        }
        if (!e->busy && s->stop.max_time_s > 0 && nx->time > s->stop.max_time_s && !any_work(e)) {
            e->sum.stopped_by_time = 1;
            break;
        }
        evq_pop(&e->q, &ev);
        if (advance_clock(e, ev.time) < 0) return -1;
        if ((rc = handle(e, &ev)) < 0) return rc;
        if (rc > 0) break;
    }
    /* end-of-run invariants, and the replicas' counts into the run's */
    long steps = e->sum.steps;
    e->sum.steps = 0;
    for (int k = 0; k < e->nrep; k++) {
        replica_t *r = &e->rep[k];
        if (replica_check(r) < 0) return -1;
        replica_finish(r);
        run_summary_add(&e->sum, &r->sum);
    }
    e->sum.peak_pool = e->rp.peak;
    e->sum.clamped = e->wl.clamped;
    if (e->sum.steps != steps) {
        snprintf(e->err, ENG_ERR_MAX, "invariant violated: %ld steps ended but the replicas count %ld", steps, e->sum.steps);
        return -1;
    }
    if (s->stop.kind == STOP_ALL_FINISHED && !e->sum.stopped_by_time && !e->sum.stopped_by_steps) {
        for (int k = 0; k < e->nrep; k++)
            if (e->rep[k].sc.used_blocks != 0) {
                snprintf(e->err, ENG_ERR_MAX, "invariant violated: %ld KV blocks still held after every request finished",
                         e->rep[k].sc.used_blocks);
                return -1;
            }
    }
    metrics_finish(&e->m, &e->sum);
    return 0;
}
