/* check_cluster: replicas behind a router (sim/cluster.c, sim/router.c): N replicas under N
 * times the load against one; what each router keeps together or apart; the prefix router's
 * hit rate against what the replicas' contents allow; the router's latency; determinism. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "check_core.h"
#include "setup.h"
#include "check_run.h"

/* A scenario file: the dense model (block 16), a roofline H200, body appended. */
static const char *cl_file(const char *body)
{
    static char path[128];
    check_tmp_path(path, sizeof path, "pacesim-cluster");
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "name: c\nseed: 11\nmodel: %s/models/llama-3.1-8b.yaml\n"
               "hardware: {analytic: {tflops: 700, tbps: 4.8, mem_gib: 80}}\n%s", getcwd((char[512]){0}, 512), body);
    ck_assert_int_eq(fclose(f), 0);
    return path;
}

typedef struct {
    double ttft_mean, ttft_p99, tpot_mean, hit;
    long finished;
    run_summary_t sum;
} cl_out_t;

typedef struct {
    long n, split;                /* requests seen; sessions seen on two replicas */
    uint64_t sess[4096];
    int rep[4096];
    int used[64];
    double min_ttft;
} fin_t;

static void on_fin(void *ctx, const engine_t *e, const req_t *r)
{
    fin_t *f = ctx;
    double ttft = r->t_ev[EV_FIRST_TOKEN] - r->t_ev[EV_ARRIVAL];
    if (f->n == 0 || ttft < f->min_ttft) f->min_ttft = ttft;
    f->n++;
    if (r->replica >= 0 && r->replica < 64) f->used[r->replica] = 1;
    uint64_t s = e->rp.x[r->idx].session;
    if (!s) return;
    unsigned h = (unsigned)(s * 2654435761u) & 4095;
    while (f->sess[h] && f->sess[h] != s) h = (h + 1) & 4095;
    if (!f->sess[h]) {
        f->sess[h] = s;
        f->rep[h] = r->replica;
    } else if (f->rep[h] != r->replica) {
        f->split++;
    }
}

static void cl_run(const char *body, const char *const *sets, int nsets, cl_out_t *o, fin_t *f)
{
    setup_t u;
    int rc = setup_open(&u, cl_file(body), sets, nsets);
    ck_assert_msg(rc == 0, "%s", u.err);
    if (f) {
        memset(f, 0, sizeof *f);
        u.e.on_finish = on_fin;
        u.e.on_finish_ctx = f;
    }
    ck_assert_msg(engine_run(&u.e) == 0, "%s", u.e.err);
    win_dist_t d;
    memset(o, 0, sizeof *o);
    ck_assert(engine_window_dist(&u.e, 0, &d));
    o->ttft_mean = d.mean;
    o->ttft_p99 = d.p99;
    /* any quantile of the window's values: the summary's where they meet, ordered between */
    ck_assert_double_eq(engine_window_quantile(&u.e, 0, 0.99), d.p99);
    ck_assert_double_eq(engine_window_quantile(&u.e, 0, 0.50), d.p50);
    ck_assert(engine_window_quantile(&u.e, 0, 0.45) <= d.p50 && d.p50 <= engine_window_quantile(&u.e, 0, 0.55));
    ck_assert(engine_window_dist(&u.e, 1, &d));
    o->tpot_mean = d.mean;
    o->sum = u.e.sum;
    o->finished = u.e.sum.requests_finished;
    o->hit = u.e.sum.adm_tokens ? (double)u.e.sum.adm_hit_tokens / (double)u.e.sum.adm_tokens : 0;
    /* the replicas' counts add up to the run's */
    long served = 0;
    for (int k = 0; k < u.e.nrep; k++) served += u.e.rep[k].served;
    ck_assert_int_eq(served, o->finished);
    setup_close(&u);
}

static const char *load_body =
    "engine: {max_num_batched_tokens: 4096, max_num_seqs: 64, max_model_len: 16384, num_gpu_blocks: 20000}\n"
    "workload:\n  poisson: {rate_per_s: 12, count: 6000, prompt: {dist: lognormal, mu: 7.5, sigma: 0.8, min: 16, max: 8192},"
    " output: {dist: lognormal, mu: 5.0, sigma: 0.8, min: 1, max: 1024}}\n"
    "measure:\n  ttft: {kind: ttft}\n  tpot: {kind: tpot}\n"
    "cluster:\n  router: random\n  pools: {main: {count: 1}}\n";

/* Random routing thins a Poisson stream into independent Poisson streams: four replicas under
 * four times the rate see what one sees under the rate, so the latency distributions agree
 * within sampling noise (24,000 against 6,000 requests). */
START_TEST(random_n_replicas_as_one)
{
    cl_out_t one, four;
    cl_run(load_body, NULL, 0, &one, NULL);
    const char *sets[] = { "cluster.pools.main.count=4", "workload.poisson.rate_per_s=48",
                           "workload.poisson.count=24000" };
    cl_run(load_body, sets, 3, &four, NULL);
    ck_assert_int_eq(one.finished, 6000);
    ck_assert_int_eq(four.finished, 24000);
    ck_assert_msg(fabs(four.ttft_mean / one.ttft_mean - 1) < 0.08, "ttft mean %g vs %g", four.ttft_mean, one.ttft_mean);
    ck_assert_msg(fabs(four.ttft_p99 / one.ttft_p99 - 1) < 0.15, "ttft p99 %g vs %g", four.ttft_p99, one.ttft_p99);
    ck_assert_msg(fabs(four.tpot_mean / one.tpot_mean - 1) < 0.05, "tpot mean %g vs %g", four.tpot_mean, one.tpot_mean);
}
END_TEST

/* Round robin gives each replica every N-th arrival of the N-times faster stream: Erlang-N
 * gaps of the same mean, steadier than Poisson, so the queues are no longer than one
 * replica's under its own Poisson stream, and the decode rate the same. */
START_TEST(round_robin_n_replicas_no_worse)
{
    cl_out_t one, four;
    cl_run(load_body, NULL, 0, &one, NULL);
    const char *sets[] = { "cluster.pools.main.count=4", "workload.poisson.rate_per_s=48",
                           "workload.poisson.count=24000", "cluster.router=round_robin" };
    cl_run(load_body, sets, 4, &four, NULL);
    ck_assert_msg(four.ttft_mean <= one.ttft_mean * 1.02, "ttft mean %g vs %g", four.ttft_mean, one.ttft_mean);
    ck_assert_msg(fabs(four.tpot_mean / one.tpot_mean - 1) < 0.05, "tpot mean %g vs %g", four.tpot_mean, one.tpot_mean);
}
END_TEST

static const char *conv_body =
    "engine: {max_num_batched_tokens: 4096, max_num_seqs: 32, max_model_len: 16384, num_gpu_blocks: 20000,"
    " prefix_cache_model: pool}\n"
    "workload:\n  poisson: {rate_per_s: 4, count: 300, prompt: {dist: uniform, low: 200, high: 800},"
    " output: {dist: uniform, low: 20, high: 100}, conversation: {turns: 4, think_s: 2}}\n"
    "measure:\n  ttft: {kind: ttft}\n  tpot: {kind: tpot}\n"
    "cluster:\n  router: session\n  pools: {main: {count: 4}}\n";

/* session: every turn of a conversation on one replica; round robin splits them */
START_TEST(session_keeps_turns_together)
{
    cl_out_t o;
    fin_t *f = calloc(1, sizeof *f);
    cl_run(conv_body, NULL, 0, &o, f);
    ck_assert_int_gt(f->n, 600);          /* later turns ran */
    ck_assert_int_eq(f->split, 0);
    int used = 0;
    for (int k = 0; k < 4; k++) used += f->used[k];
    ck_assert_int_eq(used, 4);
    const char *rr[] = { "cluster.router=round_robin" };
    cl_run(conv_body, rr, 1, &o, f);
    ck_assert_int_gt(f->split, 100);
    free(f);
}
END_TEST

static const char *prefix_body =
    "engine: {max_num_batched_tokens: 4096, max_num_seqs: 32, max_model_len: 16384, num_gpu_blocks: 1200,"
    " prefix_cache_model: pool}\n"
    "workload:\n  poisson: {rate_per_s: 8, count: 3000, prompt: {dist: uniform, low: 2300, high: 2600},"
    " output: {dist: uniform, low: 10, high: 40}, prefix: {groups: 16, tokens: 2048}}\n"
    "measure:\n  ttft: {kind: ttft}\n  tpot: {kind: tpot}\n"
    "cluster:\n  router: prefix_affinity\n  pools: {main: {count: 4}}\n";

/* 16 shared prefixes of 2048 tokens (128 blocks each, 2048 in all) on four replicas of 1200
 * blocks: a replica cannot hold them all, four together can.  What the contents allow: one
 * replica large enough for every prefix (each prefix computed once, then always hit).
 * prefix_affinity keeps each prefix on a replica and comes within 5% of it; round robin
 * spreads every prefix over every replica, which evict them. */
START_TEST(prefix_affinity_hits_what_contents_allow)
{
    cl_out_t pa, rr, big;
    cl_run(prefix_body, NULL, 0, &pa, NULL);
    const char *rrs[] = { "cluster.router=round_robin" };
    cl_run(prefix_body, rrs, 1, &rr, NULL);
    const char *bigs[] = { "cluster.pools.main.count=1", "engine.num_gpu_blocks=100000" };
    cl_run(prefix_body, bigs, 2, &big, NULL);
    ck_assert_msg(big.hit > 0.7, "bound %g", big.hit);
    ck_assert_msg(pa.hit >= 0.95 * big.hit, "prefix_affinity %g, bound %g", pa.hit, big.hit);
    ck_assert_msg(pa.hit > rr.hit + 0.1, "prefix_affinity %g, round_robin %g", pa.hit, rr.hit);
    ck_assert_msg(pa.ttft_mean < rr.ttft_mean, "ttft %g vs %g", pa.ttft_mean, rr.ttft_mean);
}
END_TEST

/* the router's decision latency: every request reaches its replica that much later */
START_TEST(router_latency_delays_every_request)
{
    cl_out_t a, b;
    fin_t *f = calloc(1, sizeof *f);
    const char *sets[] = { "cluster.pools.main.count=2", "workload.poisson.count=500" };
    cl_run(load_body, sets, 2, &a, f);
    double min0 = f->min_ttft;
    const char *lat[] = { "cluster.pools.main.count=2", "workload.poisson.count=500", "cluster.router_latency_s=0.25" };
    cl_run(load_body, lat, 3, &b, f);
    ck_assert_msg(f->min_ttft >= 0.25 + min0 * 0.5, "min ttft %g (without latency %g)", f->min_ttft, min0);
    ck_assert(b.ttft_mean > a.ttft_mean + 0.2);
    free(f);
}
END_TEST

/* same scenario, same seed: the same run, for every router */
START_TEST(cluster_runs_are_deterministic)
{
    static const char *routers[] = { "round_robin", "random", "least_outstanding", "least_kv", "prefix_affinity" };
    for (int i = 0; i < 5; i++) {
        char set[64];
        snprintf(set, sizeof set, "cluster.router=%s", routers[i]);
        const char *sets[] = { set, "workload.poisson.count=600" };
        cl_out_t a, b;
        cl_run(prefix_body, sets, 2, &a, NULL);
        cl_run(prefix_body, sets, 2, &b, NULL);
        ck_assert_int_eq(a.sum.steps, b.sum.steps);
        ck_assert(a.ttft_mean == b.ttft_mean && a.ttft_p99 == b.ttft_p99 && a.hit == b.hit);
    }
}
END_TEST

int main(void)
{
    const check_test_t tab[] = {
        CHECK_TEST(random_n_replicas_as_one), CHECK_TEST(round_robin_n_replicas_no_worse),
        CHECK_TEST(session_keeps_turns_together), CHECK_TEST(prefix_affinity_hits_what_contents_allow),
        CHECK_TEST(router_latency_delays_every_request), CHECK_TEST(cluster_runs_are_deterministic),
    };
    return check_main("cluster", "routers", tab, CHECK_N(tab), 120, NULL);
}
