/* check_prefix: whole runs on the block pool (engine.prefix_cache_model: pool): requests
 * sharing a prefix share its blocks, a cached prefix is evicted under pressure, a
 * conversation's next turn hits the last one, the fork's cliff scenarios show the hits its
 * notes describe for each retention setting, and with caching off the pool schedules
 * exactly what the count model schedules.  Expected hits are whole blocks computed from
 * the block size the run reports. */
#include <check.h>
#include "check_run.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runner.h"
#include "setup.h"

static double win(const run_result_t *r, const char *name)
{
    for (int i = 0; i < r->nwin; i++)
        if (!strcmp(r->win_name[i], name)) return r->win_val[i];
    ck_abort_msg("no window %s", name);
    return NAN;
}

static run_result_t *run(const char *file, const char **sets, int nsets, FILE *steps)
{
    run_result_t *r = malloc(sizeof *r);
    ck_assert_ptr_nonnull(r);
    runner_run(file, sets, nsets, steps, r);
    ck_assert_msg(r->rc == 0, "%s: %s", file, r->err);
    return r;
}

/* tokens a prompt of `prompt` tokens takes from the cache: `shared` tokens are cached */
static long whole(long shared, long prompt, long block)
{
    long n = shared < prompt - 1 ? shared : prompt - 1;
    return n / block * block;
}

static char *slurp(FILE *f, long *n)
{
    fflush(f);
    *n = ftell(f);
    rewind(f);
    char *b = malloc((size_t)*n + 1);
    ck_assert_ptr_nonnull(b);
    ck_assert_int_eq((long)fread(b, 1, (size_t)*n, f), *n);
    return b;
}

START_TEST(shared_prefix_shares_blocks)
{
    run_result_t *r = run("tests/data/prefix/shared.yaml", NULL, 0, NULL);
    long b = r->block;
    ck_assert_int_eq(lround(win(r, "a_hit") * 9000), 0);
    ck_assert_int_eq(lround(win(r, "b_hit") * 8500), whole(8000, 8500, b));
    ck_assert_int_eq(lround(win(r, "c_hit") * 8100), whole(8000, 8100, b));
    ck_assert_int_eq(lround(win(r, "d_hit") * 8500), 0);
    /* A and B ran together: the prefix's blocks are held once */
    long a_blocks = (9000 + 200 + b - 1) / b, b_blocks = (8500 + 20 + b - 1) / b;
    ck_assert_int_le(r->sum.peak_attn_blocks, a_blocks + b_blocks - 8000 / b);
    ck_assert_int_ge(r->sum.peak_attn_blocks, a_blocks);
    ck_assert_int_eq(r->sum.pc_hit_tokens, 2 * whole(8000, 8100, b));
    ck_assert_int_eq(r->sum.pc_evictions, 0);
    free(r);
}
END_TEST

START_TEST(system_prompt_held_once)
{
    /* shared: 10 blocks of prompt once, then each request's own block (its 100 tokens and
     * 64 outputs fit in the block after the prefix's) */
    run_result_t *r = run("tests/data/prefix/sys300.yaml", NULL, 0, NULL);
    long b = r->block, own = (8100 + 64 + b - 1) / b - 8000 / b;
    ck_assert_int_le(r->sum.peak_attn_blocks, 8000 / b + 300 * own);
    ck_assert_int_eq(r->sum.peak_running, 300);
    ck_assert_int_eq(r->sum.pc_evictions, 0);
    /* nothing shared: every prompt is computed (the token budget then paces admissions),
     * finished requests' cached blocks are evicted for the next ones, the run is longer */
    const char *none[] = { "workload.poisson.prefix.share=0" };
    run_result_t *q = run("tests/data/prefix/sys300.yaml", none, 1, NULL);
    ck_assert_double_eq(win(q, "hit"), 0);
    ck_assert_int_gt(q->sum.pc_evictions, 0);
    ck_assert_double_gt(q->sum.makespan, 2 * r->sum.makespan);
    free(r);
    free(q);
}
END_TEST

START_TEST(generated_conversations_hit)
{
    /* 200 conversations of 4 turns, none long enough to end early: a later turn hits its
     * last turn's prompt and output where they are still cached; without later turns
     * nothing is shared */
    run_result_t *r = run("tests/data/prefix/chat.yaml", NULL, 0, NULL);
    ck_assert_int_eq(r->sum.requests_finished, 200 * 4);
    ck_assert_double_gt(win(r, "hit"), 0.4);
    const char *one[] = { "workload.poisson.conversation.turns=1" };
    run_result_t *q = run("tests/data/prefix/chat.yaml", one, 1, NULL);
    ck_assert_int_eq(q->sum.requests_finished, 200);
    ck_assert_double_eq(win(q, "hit"), 0);
    free(r);
    free(q);
}
END_TEST

START_TEST(eviction_under_pressure)
{
    /* 60 blocks: B's 30,000-token prefill reuses A's cached blocks, so C recomputes */
    run_result_t *r = run("tests/data/prefix/evict.yaml", NULL, 0, NULL);
    ck_assert_double_eq(win(r, "c_hit"), 0);
    ck_assert_double_gt(win(r, "evictions"), 0);
    ck_assert_double_eq_tol(win(r, "c_ttft"), win(r, "a_ttft"), 1e-9);
    /* room for both: C hits A's document but for its last block */
    const char *big[] = { "engine.num_gpu_blocks=200" };
    run_result_t *q = run("tests/data/prefix/evict.yaml", big, 1, NULL);
    ck_assert_int_eq(lround(win(q, "c_hit") * 10000), whole(10000, 10000, q->block));
    ck_assert_double_lt(win(q, "c_ttft"), win(q, "a_ttft") / 5);
    free(r);
    free(q);
}
END_TEST

START_TEST(multi_turn_hit)
{
    /* a turn's KV covers its prompt and its outputs but the last one */
    run_result_t *r = run("tests/data/prefix/turns.yaml", NULL, 0, NULL);
    long b = r->block;
    ck_assert_double_eq(win(r, "t1_hit"), 0);
    ck_assert_int_eq(lround(win(r, "t2_hit") * 4900), whole(4000 + 300 - 1, 4900, b));
    ck_assert_int_eq(lround(win(r, "t3_hit") * 5800), whole(4900 + 300 - 1, 5800, b));
    free(r);
}
END_TEST

/* The fork's cliff (scenarios/v100-cliff-*.yaml): A2 resends A's 221,184-token context after
 * B's; S shares A's first 110,592 tokens then has 2,048 of its own. */
START_TEST(cliff_by_retention)
{
    run_result_t *d = run("scenarios/v100-cliff-dense.yaml", NULL, 0, NULL);
    run_result_t *z = run("scenarios/v100-cliff-r0.yaml", NULL, 0, NULL);
    run_result_t *n = run("scenarios/v100-cliff-r25088.yaml", NULL, 0, NULL);
    long b = d->block, ctx = 221184, sp = 112640, half = 110592, seg = 25088;
    /* dense: B's prefill evicts A's snapshots, the resend recomputes all of it; the
     * recomputed resend leaves snapshots at every block, so S hits its shared blocks */
    ck_assert_double_eq(win(d, "resend_hit"), 0);
    ck_assert_double_eq_tol(win(d, "resend_ttft_s"), win(d, "a_ttft_s"), 1e-9);
    ck_assert_int_eq(lround(win(d, "shared_hit") * sp), whole(half, sp, b));
    /* 0: the prompt-end snapshot survives, the resend hits; S finds no snapshot it can use */
    ck_assert_int_eq(lround(win(z, "resend_hit") * ctx), whole(ctx, ctx, b));
    ck_assert_double_eq(win(z, "shared_hit"), 0);
    ck_assert_double_lt(win(z, "resend_ttft_s"), win(z, "a_ttft_s") / 100);
    /* 25088: S resumes at the last 16-block snapshot within the shared part */
    ck_assert_int_eq(lround(win(n, "resend_hit") * ctx), whole(ctx, ctx, b));
    ck_assert_int_eq(lround(win(n, "shared_hit") * sp), half / seg * seg);
    ck_assert_double_eq(win(z, "evictions"), 0);
    free(d);
    free(z);
    free(n);
}
END_TEST

/* cached_tokens is the hit at the first admission (vLLM's num_cached_tokens): never more than
 * prompt - 1, also for a request preempted and readmitted with its emitted tokens cached. */
typedef struct { long finished, preempted, over; } cached_seen_t;
static void on_finish_cached(void *ctx, const engine_t *e, const req_t *r)
{
    cached_seen_t *c = ctx;
    (void)e;
    c->finished++;
    c->preempted += r->preemptions > 0;
    c->over += r->cached > r->prompt - 1;
}

START_TEST(cached_tokens_within_the_prompt)
{
    const char *sets[] = { "workload.poisson.count=1500", "workload.poisson.cached_frac=0", "engine.num_gpu_blocks=400",
                           "engine.prefix_cache_model=pool", "workload.poisson.prefix={groups: 4, tokens: 512}" };
    setup_t u;
    ck_assert_msg(setup_open(&u, "scenarios/bench-poisson-100k.yaml", sets, 5) == 0, "%s", u.err);
    cached_seen_t c = { 0 };
    u.e.on_finish = on_finish_cached;
    u.e.on_finish_ctx = &c;
    ck_assert_msg(engine_run(&u.e) == 0, "%s", u.e.err);
    ck_assert_int_eq(c.finished, 1500);
    ck_assert_int_gt(c.preempted, 0);             /* the pressure readmits requests */
    ck_assert_int_eq(c.over, 0);
    setup_close(&u);
}
END_TEST

/* With caching off the pool takes exactly the blocks the count model counts: same steps,
 * same peak, the same preemptions under pressure. */
static const struct { const char *file; const char *sets[4]; } same[] = {
    { "scenarios/v100-fp16-mtp4-b16k-pdr.yaml", { "workload.requests.A.cached_tokens=0" } },
    { "scenarios/h200-fp16-nomtp-b131k-baseline.yaml", { "workload.requests.A.cached_tokens=0" } },
    { "scenarios/bench-poisson-100k.yaml", { "workload.poisson.count=1500", "workload.poisson.cached_frac=0",
                                             "engine.num_gpu_blocks=400" } },
};

START_TEST(pool_without_caching_is_the_count)
{
    const char *sets[8];
    int n = 0;
    while (n < 4 && same[_i].sets[n]) { sets[n] = same[_i].sets[n]; n++; }
    sets[n] = "engine.enable_prefix_caching=false";
    FILE *f[2];
    run_result_t *r[2];
    for (int k = 0; k < 2; k++) {
        sets[n + 1] = k ? "engine.prefix_cache_model=pool" : "engine.prefix_cache_model=count";
        f[k] = tmpfile();
        r[k] = run(same[_i].file, sets, n + 2, f[k]);
    }
    long n0, n1;
    char *a = slurp(f[0], &n0), *b = slurp(f[1], &n1);
    ck_assert_int_eq(n0, n1);
    ck_assert_msg(memcmp(a, b, (size_t)n0) == 0, "%s: the steps differ", same[_i].file);
    ck_assert_int_eq(r[0]->sum.peak_blocks, r[1]->sum.peak_blocks);
    ck_assert_int_eq(r[0]->sum.preemptions, r[1]->sum.preemptions);
    ck_assert_int_eq(r[1]->sum.pc_hit_tokens, 0);
    if (_i == 2) ck_assert_int_gt(r[0]->sum.preemptions, 0);   /* the pressure case preempts */
    for (int k = 0; k < 2; k++) {
        fclose(f[k]);
        free(r[k]);
    }
    free(a);
    free(b);
}
END_TEST

int main(void)
{
    const check_test_t tests[] = {
        CHECK_TEST(shared_prefix_shares_blocks), CHECK_TEST(system_prompt_held_once), CHECK_TEST(eviction_under_pressure), CHECK_TEST(multi_turn_hit), CHECK_TEST(generated_conversations_hit),
        CHECK_TEST(cliff_by_retention), CHECK_TEST(cached_tokens_within_the_prompt),
        CHECK_LOOP(pool_without_caching_is_the_count, CHECK_N(same))};
    return check_main("prefix", "runs", tests, CHECK_N(tests), 120, NULL);
}
