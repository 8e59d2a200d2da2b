/* router.c: the routers (router.h).  Each returns an index into c->rep; ties go to the
 * lowest index, so a run is reproducible. */
#include <gsl/gsl_rng.h>
#include "router.h"

/* vLLM production stack's RoundRobinRouter: the next endpoint in turn
 * (vllm-project/production-stack:src/vllm_router/routers/routing_logic.py@5ae0b10828491c579173ae41a17a33901c3dd7b4). */
int router_round_robin(const router_ctx_t *c)
{
    return (int)((*c->rr)++ % c->n);
}

/* Vidur's RandomGlobalScheduler: a replica drawn uniformly
 * (microsoft/vidur:vidur/scheduler/global_scheduler/random_global_scheduler.py@3b2237e7b7983fd7ee660990af20acdfe99ca540). */
int router_random(const router_ctx_t *c)
{
    return (int)gsl_rng_uniform_int(c->rng, (unsigned long)c->n);
}

/* llm-d's active-request scorer: the replica with the fewest requests in flight (running and
 * waiting) (llm-d/llm-d-inference-scheduler:pkg/plugins/scorer/active_request.go@d5cbb3224910773dfdc9ccd3976aa789990fe78f). */
int router_least_outstanding(const router_ctx_t *c)
{
    int best = 0;
    for (int k = 1; k < c->n; k++)
        if (replica_load(&c->rep[k]) < replica_load(&c->rep[best])) best = k;
    return best;
}

/* Dynamo's KV router load term: the worker's KV blocks in use, as a share of its capacity
 * (ai-dynamo/dynamo:lib/llm/src/kv_router/scheduler.rs@db19bd2a659d4cb04998fb4101cd0dbfbbeba9d4);
 * fewer requests in flight break a tie. */
int router_least_kv(const router_ctx_t *c)
{
    int best = 0;
    for (int k = 1; k < c->n; k++) {
        const replica_t *a = &c->rep[k], *b = &c->rep[best];
        double ua = (double)replica_kv_used(a) / (double)a->sc.capacity, ub = (double)replica_kv_used(b) / (double)b->sc.capacity;
        if (ua < ub || (ua == ub && replica_load(a) < replica_load(b))) best = k;
    }
    return best;
}

/* SGLang's cache-aware router (sgl-project/sglang:sgl-router/src/policies/cache_aware.rs@b6f20641ad6bafc1278db74d1e13b0e9da47bd64):
 * when the load is imbalanced (max - min load > balance_abs_threshold and max > min x
 * balance_rel_threshold) the least loaded replica; otherwise the replica whose block pool
 * holds the longest prefix of the request's chained block hashes, the least loaded among
 * equals (no prefix anywhere: the least loaded). */
int router_prefix_affinity(const router_ctx_t *c)
{
    long lo = replica_load(&c->rep[0]), hi = lo;
    for (int k = 1; k < c->n; k++) {
        long l = replica_load(&c->rep[k]);
        if (l < lo) lo = l;
        if (l > hi) hi = l;
    }
    if (hi - lo > c->cfg->balance_abs && (double)hi > (double)lo * c->cfg->balance_rel)
        return router_least_outstanding(c);
    int best = 0;
    long best_hit = replica_cached_prefix(&c->rep[0], c->q);
    for (int k = 1; k < c->n; k++) {
        long h = replica_cached_prefix(&c->rep[k], c->q);
        if (h > best_hit || (h == best_hit && replica_load(&c->rep[k]) < replica_load(&c->rep[best]))) {
            best = k;
            best_hit = h;
        }
    }
    return best;
}

/* vLLM production stack's SessionRouter: a session's requests to one endpoint (it hashes the
 * session id on a ring; here the first turn goes to the least loaded replica and the rest
 * follow it) (vllm-project/production-stack:src/vllm_router/routers/routing_logic.py@5ae0b10828491c579173ae41a17a33901c3dd7b4). */
int router_session(const router_ctx_t *c)
{
    return c->session_rep >= 0 && c->session_rep < c->n ? c->session_rep : router_least_outstanding(c);
}

router_fn router_get(router_kind_t k)
{
    static const router_fn fns[ROUTER__N] = { router_round_robin, router_random, router_least_outstanding,
                                              router_least_kv, router_prefix_affinity, router_session };
    return k >= 0 && k < ROUTER__N ? fns[k] : router_round_robin;
}
