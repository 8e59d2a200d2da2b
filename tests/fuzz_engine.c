/* fuzz_engine: random valid scenarios through the engine, checked after every step.
 *
 *   fuzz_engine [-s SEED] [-i FIRST] [-n ITERATIONS] [-t SECONDS] [-d DIR] [-v]
 *
 * Iteration i of seed S draws one scenario from its own random stream (so `-s S -i I -n 1`
 * repeats it): a model within the schema (layer counts and the full-attention / GDN split,
 * heads, head_dim, GDN shapes, weight precision) at a tensor-parallel degree that divides
 * it; engine knobs (token budget, max_num_seqs, max_model_len, prefix caching, fp8 KV, an
 * explicit block size, a KV pool from just big enough for the largest request to a few
 * times that, so preemption is common); MTP with mean or per-position acceptance; pacing
 * and the attention knobs; a workload of explicit requests (at times, or triggered by
 * another's tokens or events), a Poisson generator and a CSV trace; windows of every
 * kind; upstream's scheduler (threshold, no chunking, priority policy, mamba_cache_mode), a
 * mixture-of-experts model, and the block pool (prefix_cache_model: pool) with what only it
 * takes: named prefixes and follow-ups of explicit requests, the Poisson generator's prefix
 * groups and conversations, and the trace's prefix columns; a stop rule, always bounded by max_steps;
 * and one scenario in three a cluster: 1 to 3 pools of 1 to 4 replicas behind any router the
 * workload allows, with a router latency and prefix_affinity's balance thresholds, each pool
 * with engine keys of its own (max_num_seqs, the token budget, the KV dtype, num_gpu_blocks,
 * at times its own model at a TP degree that divides it); one cluster in three disaggregated
 * (every pool `role: prefill` or `decode`, at least one of each, the same KV shape in every
 * pool, `cluster.kv_transfer` by a link preset or bandwidth and latency, at times layer-wise).  One case in five is priced by a calibrated
 * profile (calib/profiles/, with the reference model it was measured for) instead of the
 * analytic roofline.  Run from the repository root.  It is written to DIR/case.yaml (and
 * DIR/case.csv) and assembled as every command assembles it (setup.h).
 *
 * What must hold: the scenario loads (it is valid); set-up may refuse it only with one
 * line carrying a position; the run returns 0; after every step (beside the engine's own
 * checks, which a -DPACESIM_DEBUG build runs after every step) the step numbers and the
 * clock go forward (per replica), the duration is positive and finite, the step holds at most
 * its replica's token budget and max_num_seqs rows, every row computes at least one token, KV blocks in use
 * stay within capacity, no request emits more than its output nor prefills past its
 * target, and a prefill's target is the prompt plus the tokens emitted (a preempted
 * request recomputes its output too); at the end every window is NAN (undefined) or finite and >= 0, and a run that
 * was not cut by a bound finished every request.  Every fourth scenario runs twice and
 * must give the same steps, tokens, makespan and windows.
 *
 * A failure prints the seed, the iteration and the reason, keeps the scenario as
 * DIR/fail-SEED-ITER.yaml and exits 1; a sanitizer report aborts with DIR/case.yaml
 * holding the scenario.  Defaults: seed 1, 200 iterations, no time limit, DIR
 * build/fuzz-engine.  Built with ASan + UBSan and -DPACESIM_DEBUG in CI (tests/tests.mk). */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <gsl/gsl_errno.h>
#include "model.h"
#include "setup.h"
#include "workload.h"

/* ---- a deterministic random stream (splitmix64) ---------------------------------------- */

typedef struct { uint64_t s; } rng_t;

static uint64_t rnext(rng_t *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static long rint_in(rng_t *r, long lo, long hi) { return lo + (long)(rnext(r) % (uint64_t)(hi - lo + 1)); }
static double runif(rng_t *r) { return (double)(rnext(r) >> 11) * 0x1p-53; }
static int rchance(rng_t *r, double p) { return runif(r) < p; }
static long rpick(rng_t *r, const long *v, int n) { return v[rint_in(r, 0, n - 1)]; }

/* ---- the scenario drawn ---------------------------------------------------------------- */

#define G_REQ_MAX 6
#define G_WIN_MAX 8
#define G_TRACE_MAX 40
#define G_POOL_MAX 3
#define G_REP_MAX 12              /* G_POOL_MAX x 4 */

typedef struct {                  /* a cluster's pool */
    int count;
    int role;                     /* 0 both (unset), 1 prefill, 2 decode */
    int own_model, tp;            /* own_model: its model (m) drawn apart, at TP tp */
    model_t m;
    int seqs, budget, fp8;        /* 0: the scenario's (fp8: 1 fp8_e5m2, 2 auto) */
    double blocks_extra;          /* >= 0: num_gpu_blocks = the scenario's x (1 + this); < 0: the scenario's */
} g_pool_t;

typedef struct {
    long prompt, cached, output;
    int prefix;                   /* the pool: 0 none, else shares prefix P<prefix> ... */
    long prefix_tokens;           /* ... of this many tokens (<= prompt) */
    int priority;
    int trig;                     /* 0 at a time, 1 after ref decoded n, 2 after ref's event */
    double t, delay;
    int ref;
    long decoded;
    int event;
} g_req_t;

typedef struct {
    model_t m;
    int profile;                  /* 0 analytic (m drawn), 1 the H200 profile, 2 the V100 one (their models) */
    int tp, budget, seqs, prefix, fp8, block, mtp_k, per_position;
    long maxlen, gpu_blocks;      /* gpu_blocks 0: derived from memory */
    int pool_sized;               /* 1: gpu_blocks = the largest request's blocks x (1 + pool_extra) */
    double pool_extra;
    double gmu, mean_acc, probs[16];
    int pace, pdr, smallq, anypage;
    int nreq;
    g_req_t req[G_REQ_MAX];
    int poisson;
    double rate, start;
    long count;
    char pdist[128], odist[128], cdist[96];
    long pmax, omax;              /* the Poisson draws' largest prompt and output */
    int ntrace;
    double trace_t[G_TRACE_MAX];
    long trace_row[G_TRACE_MAX][3];
    int nwin;
    char win[G_WIN_MAX][160];
    char stop[96];
    long max_steps;
    double max_time;
    uint64_t seed;
    /* upstream's scheduler, the block pool and what it takes */
    int upstream, prio, nochunk, mamba;  /* mamba: 0 unset, 1 align, 2 none */
    long threshold;
    int pool;                     /* prefix_cache_model: pool */
    long pgroups, ptokens;        /* the Poisson generator's prefix groups (0 none) */
    double pshare;
    int conv_turns;               /* the Poisson generator's conversations (0 none) */
    double conv_think;
    int trace_prefix;             /* the trace's prefix columns */
    long trace_pre[G_TRACE_MAX][2];
    /* cluster: (0 none) */
    int cluster, npools, router;  /* router: scenario.c's order */
    int disagg, xfer_link, xfer_layerwise;   /* xfer_link: an index into links, -1: bandwidth and latency */
    double xfer_gbps, xfer_lat_us;
    double router_latency, bal_rel;
    long bal_abs;
    g_pool_t pools[G_POOL_MAX];
} gen_t;

static const char *const links[] = { "nvlink2", "nvlink4", "nvlink5", "pcie3", "pcie5", "ib-100", "ib-400", "roce-200" };
static const char *const routers[] = { "round_robin", "random", "least_outstanding", "least_kv", "prefix_affinity",
                                       "session" };

static char root[1024], dir[1024], yaml_path[1200], csv_path[1200];
static int sizing;                /* size_pool's set-up: the pools take the scenario's (large) KV pool */

static const char *const events[] = { "arrival", "admitted", "first_token", "finished" };

/* A model that loads, at a TP degree that divides it (the loader's rule). */
static void gen_model(rng_t *r, model_t *m, int *tp_out)
{
    static const long kvs[] = { 1, 2, 4, 8 }, groups[] = { 1, 2, 3, 4, 6, 8 }, hds[] = { 64, 128, 256 };
    static const long gks[] = { 2, 4, 8, 16 }, tps[] = { 1, 2, 4, 8 };
    for (;;) {
        memset(m, 0, sizeof *m);
        snprintf(m->name, sizeof m->name, "fz");
        m->n_layers = (int)rint_in(r, 1, 48);
        m->n_full_attn = (int)rint_in(r, 1, m->n_layers);   /* the loader refuses a model with none */
        m->n_gdn = m->n_layers - m->n_full_attn;
        m->hidden = (int)rint_in(r, 1, 32) * 128;
        m->intermediate = (int)rint_in(r, 1, 64) * 128;
        m->vocab = (int)rint_in(r, 1000, 160000);
        m->n_kv_heads = (int)rpick(r, kvs, 4);
        m->n_q_heads = m->n_kv_heads * (int)rpick(r, groups, 6);
        m->head_dim = (int)rpick(r, hds, 3);
        m->attn_output_gate = rchance(r, 0.5);
        m->gdn_k_heads = (int)rpick(r, gks, 4);
        m->gdn_v_heads = m->gdn_k_heads * (int)rint_in(r, 1, 3);
        m->gdn_head_dim_k = rchance(r, 0.5) ? 64 : 128;
        m->gdn_head_dim_v = rchance(r, 0.5) ? 64 : 128;
        m->gdn_conv_kernel = (int)rint_in(r, 2, 4);
        m->gdn_state_bytes = rchance(r, 0.7) ? 4 : 2;
        m->gdn_conv_bytes = 2;
        m->weight_bytes_per_param = rchance(r, 0.5) ? 0.5625 : rchance(r, 0.5) ? 1.0 : 2.0;
        m->mtp_layers = rchance(r, 0.7);
        if (rchance(r, 0.25)) {                            /* a mixture of experts */
            m->moe_experts = (int)rint_in(r, 1, 256);
            m->moe_topk = (int)rint_in(r, 1, m->moe_experts < 16 ? m->moe_experts : 16);
            m->moe_inter = (int)rint_in(r, 1, 16) * 128;
            m->moe_shared = rchance(r, 0.3) ? (int)rint_in(r, 1, 2) : 0;
            m->moe_first_dense = rchance(r, 0.3) ? (int)rint_in(r, 0, 3) : 0;
            m->moe_step = rchance(r, 0.8) ? 1 : 2;
            m->moe_skew = rchance(r, 0.5) ? 0 : runif(r) * 2;
            if (m->n_layers < m->moe_first_dense + m->moe_step) m->moe_first_dense = 0, m->moe_step = 1;   /* a sparse layer */
        }
        int ok[4], n = 0;
        for (int i = 0; i < 4; i++) {
            int tp = (int)tps[i];
            model_rank_t rk;
            if (model_rank(m, tp, &rk) == 0 && (m->n_kv_heads >= tp ? m->n_kv_heads % tp == 0 : tp % m->n_kv_heads == 0))
                ok[n++] = tp;
        }
        if (n) {
            *tp_out = ok[rint_in(r, 0, n - 1)];
            return;
        }
    }
}

/* A Poisson length distribution, as YAML, bounded by max (so the largest draw is known). */
static long gen_dist(rng_t *r, char *out, size_t n, long lo, long hi)
{
    long mx = rint_in(r, lo, hi);
    switch (rint_in(r, 0, 3)) {
    case 0: snprintf(out, n, "%ld", mx); break;
    case 1: snprintf(out, n, "{dist: uniform, low: %ld, high: %ld}", rint_in(r, 1, mx), mx); break;
    case 2: snprintf(out, n, "{dist: lognormal, mu: %.3f, sigma: %.3f, max: %ld}", log((double)mx) - 0.5, runif(r) * 1.5, mx); break;
    default: snprintf(out, n, "{dist: exponential, mean: %.1f, min: 1, max: %ld}", 1.0 + runif(r) * (double)mx, mx); break;
    }
    return mx;
}

static void gen_mark(rng_t *r, const gen_t *g, char *out, size_t n, int from)
{
    if (g->nreq == 0 || rchance(r, 0.3)) snprintf(out, n, "%s", from ? "start" : "end");
    else snprintf(out, n, "R%ld.%s", rint_in(r, 0, g->nreq - 1), events[rint_in(r, 0, 3)]);
}

/* When the case's first Poisson request arrives (workload.h), from its keys as written. */
static double first_poisson(const gen_t *g)
{
    static scenario_t ps;                     /* large: not on the stack */
    char b[64];
    memset(&ps, 0, sizeof ps);
    ps.seed = g->seed;
    ps.poisson.enabled = 1;
    ps.poisson.count = g->count;
    snprintf(b, sizeof b, "%.4f", g->rate);
    ps.poisson.rate_per_s = strtod(b, NULL);
    snprintf(b, sizeof b, "%.4f", g->start);
    ps.poisson.start_s = strtod(b, NULL);
    return workload_first_poisson(&ps);
}

static void gen(uint64_t seed, uint64_t iter, gen_t *g)
{
    rng_t r = { seed * 0x100000001b3ull ^ (iter + 1) * 0x9e3779b97f4a7c15ull };
    memset(g, 0, sizeof *g);
    g->seed = rnext(&r) % 1000000;
    g->profile = rchance(&r, 0.2) ? (int)rint_in(&r, 1, 2) : 0;
    if (g->profile) {   /* a calibrated profile prices the reference model at its TP degree */
        char err[SCN_ERR_MAX], path[1200];
        snprintf(path, sizeof path, "%s/models/qwen3.8-27b%s.yaml", root, g->profile == 1 ? "-fp16" : "");
        if (scn_load_model(path, &g->m, err) < 0) {
            fprintf(stderr, "fuzz_engine: %s\n", err);
            exit(2);
        }
        g->tp = g->profile == 1 ? 1 : 2;
    } else {
        gen_model(&r, &g->m, &g->tp);
    }
    static const long budgets[] = { 1, 3, 16, 64, 256, 512, 1024, 2048, 4096, 8192 };
    g->budget = (int)rpick(&r, budgets, 10);
    g->seqs = (int)rint_in(&r, 1, 12);
    g->maxlen = rchance(&r, 0.2) ? rint_in(&r, 2, 64) : rint_in(&r, 512, 40000);
    g->prefix = rchance(&r, 0.6);
    g->fp8 = rchance(&r, 0.3);
    g->block = rchance(&r, 0.3) ? (int)rint_in(&r, 1, 64) * 16 : 0;
    g->gmu = 0.5 + 0.45 * runif(&r);
    g->pool_sized = rchance(&r, 0.8);
    g->pool_extra = rchance(&r, 0.4) ? 0 : runif(&r) * 3;
    g->mtp_k = g->m.mtp_layers && rchance(&r, 0.4) ? (int)rint_in(&r, 1, 6) : 0;
    g->per_position = rchance(&r, 0.5);
    g->mean_acc = runif(&r) * g->mtp_k;
    for (int k = 0; k < g->mtp_k; k++) g->probs[k] = runif(&r);
    g->pace = rchance(&r, 0.5) ? (int)rint_in(&r, 1, 12) : 0;
    g->pdr = rchance(&r, 0.3);
    g->smallq = (int)rint_in(&r, 1, 32);
    g->anypage = rchance(&r, 0.3);
    g->upstream = rchance(&r, 0.35);
    if (g->upstream) {
        g->prio = rchance(&r, 0.3);
        g->threshold = rchance(&r, 0.4) ? rint_in(&r, 1, 4096) : 0;
        g->mamba = (int)rint_in(&r, 0, 2);
    }
    g->pool = rchance(&r, 0.35);
    if (g->pool && g->mamba == 0 && rchance(&r, 0.5)) g->mamba = 1;

    int kinds = (int)rint_in(&r, 1, 7);   /* bit 0 explicit, 1 Poisson, 2 trace */
    long plim = g->maxlen > 20000 ? 20000 : g->maxlen;
    if (kinds & 1) {
        g->nreq = (int)rint_in(&r, 1, G_REQ_MAX);
        for (int i = 0; i < g->nreq; i++) {
            g_req_t *q = &g->req[i];
            q->prompt = rint_in(&r, 1, plim);
            q->cached = !g->pool && rchance(&r, 0.4) ? rint_in(&r, 0, q->prompt) : 0;
            q->priority = (int)rint_in(&r, -2, 2);
            if (g->pool && rchance(&r, 0.5)) {
                q->prefix = (int)rint_in(&r, 1, 3);
                q->prefix_tokens = rint_in(&r, 1, q->prompt);
            }
            q->output = rint_in(&r, 1, rchance(&r, 0.2) ? 2000 : 200);   /* may pass max_model_len: cut */
            q->t = rchance(&r, 0.5) ? 0 : runif(&r) * 2;
            q->trig = i > 0 && rchance(&r, 0.5) ? (int)rint_in(&r, 1, 2) : 0;
            q->ref = i > 0 ? (int)rint_in(&r, 0, i - 1) : 0;
            q->delay = rchance(&r, 0.3) ? runif(&r) * 0.5 : 0;
            q->event = (int)rint_in(&r, 0, 3);
            if (q->trig == 1) {           /* within what the reference emits */
                const g_req_t *f = &g->req[q->ref];
                long room = g->maxlen - f->prompt, out = f->output < room ? f->output : room > 0 ? room : 1;
                q->decoded = rint_in(&r, 0, out);
            }
        }
    }
    if ((kinds & 2) && g->maxlen >= 2) {
        g->poisson = 1;
        g->rate = 0.5 + runif(&r) * 60;
        g->count = rint_in(&r, 1, 60);
        g->start = rchance(&r, 0.5) ? 0 : runif(&r);
        g->pmax = gen_dist(&r, g->pdist, sizeof g->pdist, 1, plim);
        g->omax = gen_dist(&r, g->odist, sizeof g->odist, 1, 150);
        if (!g->pool && rchance(&r, 0.5))
            snprintf(g->cdist, sizeof g->cdist, "{dist: uniform, low: 0, high: %.3f}", runif(&r));
        if (g->pool && rchance(&r, 0.6)) {
            g->pgroups = rint_in(&r, 1, 8);
            g->ptokens = rint_in(&r, 1, plim);
            g->pshare = runif(&r);
        }
        if (g->pool && rchance(&r, 0.4)) {
            g->conv_turns = (int)rint_in(&r, 1, 4);
            g->conv_think = rchance(&r, 0.5) ? 0 : runif(&r) * 0.5;
        }
    }
    if ((kinds & 4) && g->maxlen >= 2) {
        g->ntrace = (int)rint_in(&r, 1, G_TRACE_MAX);
        double t = 0;
        for (int i = 0; i < g->ntrace; i++) {
            t += rchance(&r, 0.3) ? 0 : runif(&r) * 0.2;
            long p = rint_in(&r, 1, plim < g->maxlen - 1 ? plim : g->maxlen - 1);
            long o = rint_in(&r, 1, g->maxlen - p < 120 ? g->maxlen - p : 120);
            g->trace_t[i] = t;
            g->trace_row[i][0] = p;
            g->trace_row[i][1] = o;
            g->trace_row[i][2] = !g->pool && rchance(&r, 0.5) ? rint_in(&r, 0, p) : 0;
            g->trace_pre[i][0] = rchance(&r, 0.3) ? -1 : rint_in(&r, 0, 3);
            g->trace_pre[i][1] = rint_in(&r, 0, p);
        }
        g->trace_prefix = g->pool && rchance(&r, 0.6);
    }
    if (g->upstream && g->budget >= g->maxlen && rchance(&r, 0.4)) g->nochunk = 1;
    if (!g->nreq && !g->poisson && !g->ntrace) {   /* max_model_len too short for generated ones */
        g->nreq = 1;
        g->req[0] = (g_req_t){ .prompt = 1, .output = 1 };
    }

    if (rchance(&r, 1.0 / 3)) {
        static const long budgets_p[] = { 16, 64, 256, 512, 1024, 2048, 4096, 8192 };
        g->cluster = 1;
        g->npools = (int)rint_in(&r, 1, G_POOL_MAX);
        for (int i = 0; i < g->npools; i++) {
            g_pool_t *p = &g->pools[i];
            p->count = (int)rint_in(&r, 1, 4);
            p->tp = g->tp;
            p->blocks_extra = -1;
            if (!g->profile && rchance(&r, 0.25)) {
                p->own_model = 1;
                gen_model(&r, &p->m, &p->tp);
                if (g->mtp_k) p->m.mtp_layers = 1;   /* the scenario's speculative decoding needs it */
            }
            if (rchance(&r, 0.4)) p->seqs = (int)rint_in(&r, 1, 12);
            if (!g->nochunk && rchance(&r, 0.4)) p->budget = (int)rpick(&r, budgets_p, 8);
            if (rchance(&r, 0.3)) p->fp8 = (int)rint_in(&r, 1, 2);
            if (rchance(&r, 0.4)) p->blocks_extra = runif(&r) * 2;
        }
        int conv = g->poisson && g->conv_turns > 1;
        if (rchance(&r, 1.0 / 3)) {       /* disaggregated: prefill and decode pools of one KV shape */
            g->disagg = 1;
            if (g->npools < 2) g->npools = 2, g->pools[1] = g->pools[0];
            for (int i = 0; i < g->npools; i++) {
                g_pool_t *p = &g->pools[i];
                p->role = i == 0 ? 1 : i == 1 ? 2 : (int)rint_in(&r, 1, 2);
                p->own_model = 0;         /* the decode pools take the prefill pools' KV as it is */
                p->tp = g->tp;
                p->fp8 = 0;
            }
            g->xfer_link = rchance(&r, 0.7) ? (int)rint_in(&r, 0, (long)(sizeof links / sizeof links[0]) - 1) : -1;
            g->xfer_gbps = 0.5 + runif(&r) * 900;
            g->xfer_lat_us = rchance(&r, 0.3) ? 0 : runif(&r) * 50;
            g->xfer_layerwise = rchance(&r, 0.4);
            conv = 0;                     /* session is not modelled with prefill and decode pools */
        }
        do g->router = (int)rint_in(&r, 0, 5);
        while ((g->router == 4 && !g->pool) || (g->router == 5 && !conv));
        g->router_latency = rchance(&r, 0.6) ? 0 : runif(&r) * 0.05;
        g->bal_abs = rchance(&r, 0.5) ? 32 : rint_in(&r, 0, 64);
        g->bal_rel = rchance(&r, 0.5) ? 1.0001 : 1 + runif(&r) * 2;
    }

    g->nwin = (int)rint_in(&r, 0, G_WIN_MAX);
    static const char *const types[] = { "any", "decode_only", "mixed", "prefill_only" };
    for (int i = 0; i < g->nwin; i++) {
        char from[48], to[48], req[16];
        gen_mark(&r, g, from, sizeof from, 1);
        gen_mark(&r, g, to, sizeof to, 0);
        if (g->nreq) snprintf(req, sizeof req, "R%ld", rint_in(&r, 0, g->nreq - 1));
        else snprintf(req, sizeof req, "\"*\"");
        int k = (int)rint_in(&r, 0, 7);
        if (!g->nreq && (k == 0 || k == 6)) k = 1;   /* rate and tokens need an explicit request */
        char *w = g->win[i];
        size_t n = sizeof g->win[i];
        switch (k) {
        case 0: snprintf(w, n, "{kind: rate, request: %s, from: %s, to: %s}", req, from, to); break;
        case 1: snprintf(w, n, "{kind: duration, from: %s, to: %s}", from, to); break;
        case 2: snprintf(w, n, "{kind: ttft%s%s}", rchance(&r, 0.5) ? ", request: " : "", req); break;
        case 3: snprintf(w, n, "{kind: tpot, request: %s}", rchance(&r, 0.5) ? "\"*\"" : req); break;
        case 4: snprintf(w, n, "{kind: itl, request: %s}", rchance(&r, 0.5) ? "\"*\"" : req); break;
        case 5: snprintf(w, n, "{kind: steps, type: %s, from: %s, to: %s}", types[rint_in(&r, 0, 3)], from, to); break;
        case 6: snprintf(w, n, "{kind: tokens, request: %s, from: %s, to: %s}", req, from, to); break;
        default: snprintf(w, n, "{kind: throughput}"); break;
        }
        if (k == 2 && strstr(w, "request: ") == NULL) snprintf(w, n, "{kind: ttft}");
    }
    g->max_steps = rchance(&r, 0.5) ? rint_in(&r, 50, 3000) : rint_in(&r, 3000, 30000);
    /* past the first arrival's reaching a replica (a stop before it is refused); the first
     * Poisson request at the run's own draw, from the values as written */
    double first = g->poisson ? first_poisson(g) : INFINITY;
    for (int i = 0; i < g->nreq; i++)
        if (g->req[i].trig == 0 && g->req[i].t < first) first = g->req[i].t;
    if (!isfinite(first)) first = 0;
    g->max_time = rchance(&r, 0.3) ? first + g->router_latency + 0.5 + runif(&r) * 20 : 0;
    if (g->nreq && rchance(&r, 0.3))
        snprintf(g->stop, sizeof g->stop, "R%ld.%s", rint_in(&r, 0, g->nreq - 1), events[rint_in(&r, 1, 3)]);
    else
        snprintf(g->stop, sizeof g->stop, "all_finished");
}

/* ---- writing it ------------------------------------------------------------------------ */


static void die(const char *what)
{
    fprintf(stderr, "fuzz_engine: %s: %s\n", what, strerror(errno));
    exit(2);
}

/* A model mapping under key, each line led by ind. */
static void write_model(FILE *f, const model_t *m, const char *key, const char *ind)
{
    fprintf(f, "%s%s:\n%s  name: fz\n%s  layers: %d\n%s  full_attention_layers: %d\n%s  hidden: %d\n"
               "%s  intermediate: %d\n%s  vocab: %d\n%s  weight_bytes_per_param: %g\n%s  mtp_layers: %d\n",
            ind, key, ind, ind, m->n_layers, ind, m->n_full_attn, ind, m->hidden, ind, m->intermediate, ind, m->vocab,
            ind, m->weight_bytes_per_param, ind, m->mtp_layers);
    fprintf(f, "%s  attention: {q_heads: %d, kv_heads: %d, head_dim: %d, output_gate: %s}\n", ind, m->n_q_heads,
            m->n_kv_heads, m->head_dim, m->attn_output_gate ? "true" : "false");
    if (m->n_gdn)
        fprintf(f, "%s  gdn: {key_heads: %d, value_heads: %d, key_head_dim: %d, value_head_dim: %d, conv_kernel: %d,"
                   " state_bytes: %d, conv_bytes: %d}\n",
                ind, m->gdn_k_heads, m->gdn_v_heads, m->gdn_head_dim_k, m->gdn_head_dim_v, m->gdn_conv_kernel,
                m->gdn_state_bytes, m->gdn_conv_bytes);
    if (m->moe_experts)
        fprintf(f, "%s  moe: {experts: %d, experts_per_token: %d, expert_intermediate: %d, shared_experts: %d,"
                   " first_k_dense: %d, decoder_sparse_step: %d, skew: %.3f}\n",
                ind, m->moe_experts, m->moe_topk, m->moe_inter, m->moe_shared, m->moe_first_dense, m->moe_step,
                m->moe_skew);
}

/* The cluster: pools behind the router (and the KV's link between prefill and decode pools). */
static void write_cluster(FILE *f, const gen_t *g)
{
    if (g->disagg) {
        fprintf(f, "cluster:\n  kv_transfer: {");
        if (g->xfer_link >= 0) fprintf(f, "link: %s", links[g->xfer_link]);
        else fprintf(f, "bandwidth_GBps: %.3f, latency_us: %.3f", g->xfer_gbps, g->xfer_lat_us);
        fprintf(f, ", layerwise: %s}\n", g->xfer_layerwise ? "true" : "false");
    } else {
        fprintf(f, "cluster:\n");
    }
    fprintf(f, "  router: %s\n  router_latency_s: %.4f\n", routers[g->router], g->router_latency);
    if (!strcmp(routers[g->router], "prefix_affinity"))   /* its thresholds: refused under another router */
        fprintf(f, "  balance_abs_threshold: %ld\n  balance_rel_threshold: %.4f\n", g->bal_abs, g->bal_rel);
    fprintf(f, "  pools:\n");
    for (int i = 0; i < g->npools; i++) {
        const g_pool_t *p = &g->pools[i];
        fprintf(f, "    p%d:\n      count: %d\n", i, p->count);
        if (p->role) fprintf(f, "      role: %s\n", p->role == 1 ? "prefill" : "decode");
        if (p->own_model) write_model(f, &p->m, "model", "      ");
        int blocks = p->blocks_extra >= 0 && g->gpu_blocks && !sizing;
        int keys = p->own_model || p->seqs || p->budget || p->fp8 || blocks;
        if (!keys) continue;
        fprintf(f, "      engine:\n");
        if (p->own_model) fprintf(f, "        tensor_parallel_size: %d\n", p->tp);
        if (p->seqs) fprintf(f, "        max_num_seqs: %d\n", p->seqs);
        if (p->budget) fprintf(f, "        max_num_batched_tokens: %d\n", p->budget);
        if (p->fp8) fprintf(f, "        kv_cache_dtype: %s\n", p->fp8 == 1 ? "fp8_e5m2" : "auto");
        if (blocks)
            fprintf(f, "        num_gpu_blocks: %ld\n", g->gpu_blocks + (long)(p->blocks_extra * (double)g->gpu_blocks));
    }
}

static void write_case(const gen_t *g, uint64_t seed, uint64_t iter)
{
    const model_t *m = &g->m;
    FILE *f = fopen(yaml_path, "w");
    if (!f) die(yaml_path);
    fprintf(f, "# fuzz_engine -s %llu -i %llu -n 1\nname: fz\nseed: %llu\n", (unsigned long long)seed,
            (unsigned long long)iter, (unsigned long long)g->seed);
    if (g->profile) {
        fprintf(f, "model: %s/models/qwen3.8-27b%s.yaml\nprofile: %s/calib/profiles/%s.yaml\n", root,
                g->profile == 1 ? "-fp16" : "", root, g->profile == 1 ? "h200" : "v100-pcie-32gb-tp2");
    } else {
        write_model(f, m, "model", "");
        fprintf(f, "hardware: {analytic: {tflops: %d, tbps: %.2f}}\n", 50 + (int)(g->seed % 400),
                0.5 + (double)(g->seed % 7));
    }
    fprintf(f, "engine:\n  max_num_batched_tokens: %d\n  max_num_seqs: %d\n  max_model_len: %ld\n"
               "  enable_prefix_caching: %s\n  kv_cache_dtype: %s\n  tensor_parallel_size: %d\n"
               "  gpu_memory_utilization: %.3f\n",
            g->budget, g->seqs, g->maxlen, g->prefix ? "true" : "false", g->fp8 ? "fp8_e5m2" : "auto", g->tp, g->gmu);
    if (g->block) fprintf(f, "  block_size: %d\n", g->block);
    if (g->upstream) {
        fprintf(f, "  scheduler: upstream\n  scheduling_policy: %s\n", g->prio ? "priority" : "fcfs");
        if (g->threshold) fprintf(f, "  long_prefill_token_threshold: %ld\n", g->threshold);
        if (g->nochunk) fprintf(f, "  enable_chunked_prefill: false\n");
    }
    if (g->mamba) fprintf(f, "  mamba_cache_mode: %s\n", g->mamba == 1 ? "align" : "none");
    if (g->pool) fprintf(f, "  prefix_cache_model: pool\n");
    if (g->gpu_blocks) fprintf(f, "  num_gpu_blocks: %ld\n", g->gpu_blocks);
    if (g->mtp_k) {
        fprintf(f, "  speculative_config: {method: mtp, num_speculative_tokens: %d}\n", g->mtp_k);
        if (g->per_position) {
            fprintf(f, "mtp_acceptance: {per_position: [");
            for (int k = 0; k < g->mtp_k; k++) fprintf(f, "%s%.3f", k ? ", " : "", g->probs[k]);
            fprintf(f, "]}\n");
        } else {
            fprintf(f, "mtp_acceptance: {mean_accepted: %.3f}\n", g->mean_acc);
        }
    }
    fprintf(f, "env: {VLLM_1CAT_PREFILL_PACE_STEPS: %d, VLLM_FLASH_V100_PREFILL_PREFIX_DECODE_ROWS: %d,"
               " VLLM_FLASH_V100_SMALLQ_DECODE_MAX_Q: %d, VLLM_FLASH_V100_PREFILL_D256_BM32_ANY_PAGE: %d}\n",
            g->pace, g->pdr, g->smallq, g->anypage);
    fprintf(f, "workload:\n");
    if (g->nreq) fprintf(f, "  requests:\n");
    for (int i = 0; i < g->nreq; i++) {
        const g_req_t *q = &g->req[i];
        fprintf(f, "    - {id: R%d, prompt_tokens: %ld, cached_tokens: %ld, output_tokens: %ld, ", i, q->prompt,
                q->cached, q->output);
        if (q->prefix) fprintf(f, "prefix: {name: P%d, tokens: %ld}, ", q->prefix, q->prefix_tokens);
        if (g->prio) fprintf(f, "priority: %d, ", q->priority);
        fprintf(f, "arrival: ");
        if (q->trig == 0) fprintf(f, "%.6f}\n", q->t);
        else if (q->trig == 1) fprintf(f, "{after: R%d, decoded: %ld, delay_s: %.4f}}\n", q->ref, q->decoded, q->delay);
        else fprintf(f, "{after: R%d, event: %s, delay_s: %.4f}}\n", q->ref, events[q->event], q->delay);
    }
    if (g->poisson) {
        fprintf(f, "  poisson: {rate_per_s: %.4f, count: %ld, start_s: %.4f, prompt: %s, output: %s", g->rate, g->count,
                g->start, g->pdist, g->odist);
        if (g->cdist[0]) fprintf(f, ", cached_frac: %s", g->cdist);
        if (g->pgroups) fprintf(f, ", prefix: {groups: %ld, tokens: %ld, share: %.3f}", g->pgroups, g->ptokens, g->pshare);
        if (g->conv_turns) fprintf(f, ", conversation: {turns: %d, think_s: %.3f}", g->conv_turns, g->conv_think);
        fprintf(f, "}\n");
    }
    if (g->ntrace) fprintf(f, "  trace: case.csv\n");
    if (g->nwin) fprintf(f, "measure:\n");
    for (int i = 0; i < g->nwin; i++) fprintf(f, "  w%d: %s\n", i, g->win[i]);
    fprintf(f, "stop: {when: %s, max_steps: %ld", g->stop, g->max_steps);
    if (g->max_time > 0) fprintf(f, ", max_time_s: %.3f", g->max_time);
    fprintf(f, "}\n");
    if (g->cluster) write_cluster(f, g);
    if (fclose(f) != 0) die(yaml_path);
    if (!g->ntrace) return;
    if (!(f = fopen(csv_path, "w"))) die(csv_path);
    fprintf(f, "arrival_s,prompt_tokens,output_tokens,cached_tokens%s\n", g->trace_prefix ? ",prefix_group,prefix_tokens" : "");
    for (int i = 0; i < g->ntrace; i++) {
        fprintf(f, "%.6f,%ld,%ld,%ld", g->trace_t[i], g->trace_row[i][0], g->trace_row[i][1], g->trace_row[i][2]);
        if (g->trace_prefix) fprintf(f, ",%ld,%ld", g->trace_pre[i][0], g->trace_pre[i][1]);
        fprintf(f, "\n");
    }
    if (fclose(f) != 0) die(csv_path);
}

/* KV blocks the largest request holds on replica k (the engine's sizing rule, replica.c
 * replica_request_blocks). */
static long largest_request(const gen_t *g, const engine_t *e, int k)
{
    long best = 0;
    long pr[G_REQ_MAX + G_TRACE_MAX + 1][2];
    int n = 0;
    for (int i = 0; i < g->nreq; i++) pr[n][0] = g->req[i].prompt, pr[n++][1] = g->req[i].output;
    for (int i = 0; i < g->ntrace; i++) pr[n][0] = g->trace_row[i][0], pr[n++][1] = g->trace_row[i][1];
    if (g->poisson) pr[n][0] = g->pmax, pr[n++][1] = g->omax;
    for (int i = 0; i < n; i++) {
        long len = pr[i][0] + pr[i][1] > g->maxlen ? g->maxlen : pr[i][0] + pr[i][1];
        /* the block pool in align mode holds a superseded GDN snapshot beside the live one */
        const replica_t *rp = &e->rep[k];
        const scn_engine_t *en = &rp->s->engine;
        int two = en->prefix_pool && en->enable_prefix_caching && rp->s->model.n_gdn > 0 && en->mamba_cache_mode == MAMBA_ALIGN;
        long b = len / rp->sc.block + (len % rp->sc.block + rp->sc.spec_k + rp->sc.block - 1) / rp->sc.block + rp->sc.gdn_blocks * (two ? 2 : 1);
        if (b > best) best = b;
    }
    return best;
}

/* ---- the checks ------------------------------------------------------------------------ */

typedef struct {
    long last_no[G_REP_MAX], steps;   /* per replica */
    double last_end[G_REP_MAX];
    char why[512];
} watch_t;

static void check_step(void *ctx, const engine_t *e, const step_rec_t *st)
{
    watch_t *w = ctx;
    int k = st->replica;
    if (w->why[0]) return;
    if (k < 0 || k >= e->nrep || k >= G_REP_MAX) {
        snprintf(w->why, sizeof w->why, "a step of replica %d of %d", k, e->nrep);
        return;
    }
    const replica_t *rp = &e->rep[k];
    const scenario_t *s = rp->s;      /* its pool's engine settings */
    long q = 0;
    if (st->no <= w->last_no[k]) snprintf(w->why, sizeof w->why, "replica %d: step %ld after step %ld", k, st->no, w->last_no[k]);
    else if (!(st->t0 >= w->last_end[k])) snprintf(w->why, sizeof w->why, "replica %d: step %ld starts at %.9g s, before its last end %.9g s", k, st->no, st->t0, w->last_end[k]);
    else if (e->now != st->t0 + st->dt) snprintf(w->why, sizeof w->why, "replica %d: step %ld ends at %.17g s, the clock is at %.17g s", k, st->no, st->t0 + st->dt, e->now);
    else if (!(st->dt > 0) || !isfinite(st->dt)) snprintf(w->why, sizeof w->why, "step %ld lasts %g s", st->no, st->dt);
    else if (st->nrows < 1 || st->nrows > s->engine.max_num_seqs) snprintf(w->why, sizeof w->why, "step %ld has %d rows", st->no, st->nrows);
    else if (st->tokens > s->engine.max_num_batched_tokens) snprintf(w->why, sizeof w->why, "step %ld: %ld tokens over the budget", st->no, st->tokens);
    else if (rp->sc.used_blocks > rp->sc.capacity || rp->sc.used_blocks < 0) snprintf(w->why, sizeof w->why, "replica %d: step %ld: %ld KV blocks of %ld", k, st->no, rp->sc.used_blocks, rp->sc.capacity);
    for (int i = 0; i < st->nrows && !w->why[0]; i++) {
        const step_row_t *row = &st->rows[i];
        const req_t *r = &e->rp.r[row->req];
        q += row->q;
        if (row->q < 1) snprintf(w->why, sizeof w->why, "step %ld: a row of %d tokens", st->no, row->q);
        else if (r->emitted > r->output || row->emitted < 0) snprintf(w->why, sizeof w->why, "step %ld: request %ld emitted %ld of %ld", st->no, r->serial, r->emitted, r->output);
        else if (row->prefill && row->seq_len > r->target) snprintf(w->why, sizeof w->why, "step %ld: a chunk to %ld past the target %ld", st->no, row->seq_len, r->target);
        else if (row->prefill && r->target != r->prompt + r->emitted - row->emitted)   /* a recompute covers the output */
            snprintf(w->why, sizeof w->why, "step %ld: request %ld prefills to %ld, its prompt %ld + %ld emitted", st->no,
                     r->serial, r->target, r->prompt, r->emitted - row->emitted);
        else if (r->t_ev[EV_FIRST_TOKEN] >= 0 && r->t_ev[EV_FIRST_TOKEN] < r->t_ev[EV_ARRIVAL]) snprintf(w->why, sizeof w->why, "request %ld's first token before its arrival", r->serial);
        else if (r->replica != k) snprintf(w->why, sizeof w->why, "step %ld of replica %d runs request %ld of replica %d", st->no, k, r->serial, r->replica);
    }
    if (!w->why[0] && q != st->tokens) snprintf(w->why, sizeof w->why, "step %ld: rows of %ld tokens, the step %ld", st->no, q, st->tokens);
    w->last_no[k] = st->no;
    w->last_end[k] = st->t0 + st->dt;
    w->steps++;
}

typedef struct {
    long steps, tokens, finished, preemptions, empty_steps;
    int cut;                      /* stopped by max_steps or max_time_s */
    double makespan, win[G_WIN_MAX];
} outcome_t;

/* The KV pool of a pool_sized case: the case set up once with a pool too big to matter
 * gives the block size and the GDN blocks; then gpu_blocks = the largest request's need
 * x (1 + pool_extra).  0, or -1 refused (why filled when not acceptably). */
static int size_pool(gen_t *g, uint64_t seed, uint64_t iter, char *why, size_t nwhy)
{
    setup_t u;
    g->gpu_blocks = 1000000;
    sizing = 1;
    write_case(g, seed, iter);
    sizing = 0;
    if (setup_open(&u, yaml_path, NULL, 0) < 0) {
        snprintf(why, nwhy, "refused: %s", u.err);
        setup_close(&u);
        return -1;
    }
    long need = 0;
    for (int k = 0; k < u.e.nrep; k++) {      /* every pool's replicas: their models may differ */
        long n = largest_request(g, &u.e, k);
        if (n > need) need = n;
    }
    g->gpu_blocks = need + (long)(g->pool_extra * (double)need);
    setup_close(&u);
    return 0;
}

/* A refusal at set-up that a valid scenario can get: one line, at a position in the case,
 * about the KV cache (a request that never fits, weights that leave no room). */
static int refusal_ok(const char *err)
{
    return !strchr(err, '\n') && strncmp(err, yaml_path, strlen(yaml_path)) == 0 && err[strlen(yaml_path)] == ':' &&
           (strstr(err, "KV blocks") || strstr(err, "no room for a KV cache") ||
            strstr(err, "is below the block size") ||                   /* upstream, align: a chunk cap < a block */
            strstr(err, "cannot be prefix-cached") || strstr(err, "mamba_cache_mode") ||
            strstr(err, "GDN state groups") || strstr(err, "more than the block pool's"));
}

/* Set up and run the written case.  0 ok (out filled), 1 refused at set-up (acceptably),
 * -1 a failure (why filled). */
static int run_case(const gen_t *g, outcome_t *out, char *why, size_t nwhy)
{
    setup_t u;
    if (setup_open(&u, yaml_path, NULL, 0) < 0) {
        int ok = refusal_ok(u.err);
        if (!ok) snprintf(why, nwhy, "refused: %s", u.err);
        setup_close(&u);
        return ok ? 1 : -1;
    }
    watch_t w = { .steps = 0 };
    u.e.observer = check_step;
    u.e.observer_ctx = &w;
    int rc = engine_run(&u.e);
    const run_summary_t *S = &u.e.sum;
    if (rc < 0) snprintf(why, nwhy, "run failed (%d): %s", rc, u.e.err);
    else if (w.why[0]) snprintf(why, nwhy, "%s", w.why);
    else if (w.steps != S->steps) snprintf(why, nwhy, "%ld steps observed, %ld counted", w.steps, S->steps);
    else {
        /* a conversation has 1 .. turns requests (it ends early where a turn would not fit) */
        long total = g->nreq + (g->poisson ? g->count : 0) + g->ntrace;
        long most = total + (g->poisson && g->conv_turns ? g->count * (g->conv_turns - 1) : 0);
        int cut = S->stopped_by_time || S->stopped_by_steps || u.s.stop.kind == STOP_AT_EVENT;
        if (!cut && (S->requests_finished < total || S->requests_finished > most))
            snprintf(why, nwhy, "%ld of %ld .. %ld requests finished", S->requests_finished, total, most);
        for (int i = 0; i < u.s.n_windows && !why[0]; i++) {
            double v = engine_window(&u.e, i);
            if (!isnan(v) && !(isfinite(v) && v >= 0)) snprintf(why, nwhy, "window %s = %g", u.s.windows[i].name, v);
            if (i < G_WIN_MAX) out->win[i] = v;
        }
        out->steps = S->steps;
        out->tokens = S->tokens_emitted;
        out->finished = S->requests_finished;
        out->makespan = S->makespan;
        out->preemptions = S->preemptions;
        out->empty_steps = S->empty_steps;
        out->cut = S->stopped_by_time || S->stopped_by_steps;
    }
    setup_close(&u);
    return why[0] ? -1 : 0;
}

static int same(const outcome_t *a, const outcome_t *b, int nwin)
{
    if (a->steps != b->steps || a->tokens != b->tokens || a->finished != b->finished || a->makespan != b->makespan)
        return 0;
    for (int i = 0; i < nwin && i < G_WIN_MAX; i++)
        if (!(a->win[i] == b->win[i] || (isnan(a->win[i]) && isnan(b->win[i])))) return 0;
    return 1;
}

int main(int argc, char **argv)
{
    unsigned long long seed = 1, first = 0, iters = 200;
    double seconds = 0;
    int verbose = 0;
    snprintf(dir, sizeof dir, "build/fuzz-engine");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-v")) { verbose = 1; continue; }
        if (!v || a[0] != '-' || a[2]) {
            fprintf(stderr, "usage: fuzz_engine [-s SEED] [-i FIRST] [-n ITERATIONS] [-t SECONDS] [-d DIR] [-v]\n");
            return 2;
        }
        i++;
        if (a[1] == 's') seed = strtoull(v, NULL, 10);
        else if (a[1] == 'i') first = strtoull(v, NULL, 10);
        else if (a[1] == 'n') iters = strtoull(v, NULL, 10);
        else if (a[1] == 't') seconds = strtod(v, NULL);
        else if (a[1] == 'd') snprintf(dir, sizeof dir, "%s", v);
        else { fprintf(stderr, "fuzz_engine: unknown option %s\n", a); return 2; }
    }
    gsl_set_error_handler_off();
    if (!getcwd(root, sizeof root)) die("getcwd");
    mkdir("build", 0755);
    if (mkdir(dir, 0755) < 0 && errno != EEXIST) die(dir);
    snprintf(yaml_path, sizeof yaml_path, "%s/case.yaml", dir);
    snprintf(csv_path, sizeof csv_path, "%s/case.csv", dir);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long ran = 0, refused = 0, twice = 0, preempted = 0, empty = 0, cut = 0, steps = 0, clusters = 0;
    for (unsigned long long it = first; it < first + iters; it++) {
        gen_t g;
        outcome_t a, b;
        char why[1200] = "";
        gen(seed, it, &g);
        int rc = 0;
        if (g.pool_sized && size_pool(&g, seed, it, why, sizeof why) < 0) rc = refusal_ok(why + 9) ? 1 : -1;
        if (rc == 0) {
            write_case(&g, seed, it);
            rc = run_case(&g, &a, why, sizeof why);
        }
        if (rc == 0 && it % 4 == 0) {
            twice++;
            if (run_case(&g, &b, why, sizeof why) == 0 && !same(&a, &b, g.nwin))
                snprintf(why, sizeof why, "a second run differs: %ld/%ld steps, %ld/%ld tokens, %.17g/%.17g s", a.steps,
                         b.steps, a.tokens, b.tokens, a.makespan, b.makespan);
            if (why[0]) rc = -1;
        }
        if (rc < 0) {
            char keep[1300];
            snprintf(keep, sizeof keep, "%s/fail-%llu-%llu.yaml", dir, seed, it);
            rename(yaml_path, keep);
            fprintf(stderr, "fuzz_engine: seed %llu iteration %llu: %s (scenario kept as %s)\n", seed, it, why, keep);
            return 1;
        }
        if (rc == 1) why[0] = 0;
        ran += rc == 0;
        if (rc == 0) {
            preempted += a.preemptions > 0;
            empty += a.empty_steps > 0;
            cut += a.cut;
            steps += a.steps;
            clusters += g.cluster;
        }
        refused += rc == 1;
        if (verbose) fprintf(stderr, "  %llu: %s, %ld steps\n", it, rc ? "refused" : "ok", rc ? 0 : a.steps);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if (seconds > 0 && (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec) >= seconds) {
            iters = it - first + 1;
            break;
        }
    }
    printf("fuzz_engine: seed %llu: %llu scenarios from iteration %llu: %ld ran clean (%ld steps; %ld with"
           " preemptions, %ld with empty steps, %ld cut by a bound, %ld clusters; %ld ran twice, alike), %ld refused"
           " at set-up with a position\n", seed, iters, first, ran, steps, preempted, empty, cut, clusters, twice, refused);
    return 0;
}
