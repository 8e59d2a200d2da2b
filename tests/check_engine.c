/* check_engine: whole runs through the runner -- measurement windows, determinism
 * (same scenario + seed -> byte-identical CSV and steps), and the published V100
 * table pinned at 10% (a regression in the scheduler, router or cost model fails). */
#include <check.h>
#include "check_run.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "runner.h"
#include "simclock.h"

static double win(const run_result_t *r, const char *name)
{
    for (int i = 0; i < r->nwin; i++)
        if (!strcmp(r->win_name[i], name)) return r->win_val[i];
    ck_abort_msg("no window %s", name);
    return NAN;
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

START_TEST(deterministic_output)
{
    run_result_t *r = malloc(sizeof *r);
    char *out[2];
    long n[2];
    const char *sets[] = { "mtp_acceptance={per_position: [0.9, 0.7, 0.5, 0.3]}" };
    for (int k = 0; k < 2; k++) {
        FILE *f = tmpfile(), *st = tmpfile();
        runner_run("scenarios/v100-fp16-mtp4-b16k-pdr.yaml", sets, 1, st, r);
        ck_assert_msg(r->rc == 0, "%s", r->err);
        report_csv_header(f, r);
        report_csv_row(f, r);
        report_table(f, r);
        long ns;
        char *steps = slurp(st, &ns);
        fwrite(steps, 1, (size_t)ns, f);
        free(steps);
        out[k] = slurp(f, &n[k]);
        fclose(f);
        fclose(st);
    }
    ck_assert_int_eq(n[0], n[1]);
    ck_assert(memcmp(out[0], out[1], (size_t)n[0]) == 0);
    free(out[0]);
    free(out[1]);
    free(r);
}
END_TEST

START_TEST(windows_are_consistent)
{
    run_result_t *r = malloc(sizeof *r);
    runner_run("scenarios/v100-fp16-nomtp-b16k-pdr.yaml", NULL, 0, NULL, r);
    ck_assert_msg(r->rc == 0, "%s", r->err);
    /* one A token per mixed step; B's 16,384 prompt is 21 blocks of 784 */
    ck_assert_int_eq((long)win(r, "mixed_steps"), 21);
    ck_assert_int_eq((long)win(r, "a_tokens"), 21);
    ck_assert_double_eq_tol(win(r, "a_tok_s"), win(r, "a_tokens") / win(r, "b_prefill_s"), 1e-9);
    /* B arrived when A had decoded 8 tokens and was admitted at once: TTFT = prefill time */
    ck_assert_double_eq_tol(win(r, "b_ttft_s"), win(r, "b_prefill_s"), 1e-9);
    ck_assert_int_eq(r->sum.preemptions, 0);
    ck_assert_int_eq(r->block, 784);
    free(r);
}
END_TEST

/* The published V100 tables (docs/reference-system.md, "The published measurements") and the
 * two engine-level cells released for fitting (PACE_STEPS=4): the scenario files carry the
 * values. */
static const struct { const char *file; long mixed; } published[] = {
    { "scenarios/v100-fp16-nomtp-b16k-baseline.yaml", 21 },
    { "scenarios/v100-fp16-nomtp-b131k-baseline.yaml", 168 },
    { "scenarios/v100-fp16-nomtp-b16k-pdr.yaml", 21 },
    { "scenarios/v100-fp16-nomtp-b131k-pdr.yaml", 168 },
    { "scenarios/v100-fp16-mtp4-b16k-baseline.yaml", 21 },
    { "scenarios/v100-fp16-mtp4-b131k-baseline.yaml", 161 },
    { "scenarios/v100-fp16-mtp4-b16k-pdr.yaml", 21 },
    { "scenarios/v100-fp16-mtp4-b131k-pdr.yaml", 161 },
    { "scenarios/v100-fp16-mtp4-b131k-pdr-pace4.yaml", 161 },
    { "scenarios/v100-fp16-mtp4-b131k-pdr-anypage-pace4.yaml", 161 },
};

START_TEST(v100_published_table)
{
    run_result_t *r = malloc(sizeof *r);
    runner_run(published[_i].file, NULL, 0, NULL, r);
    ck_assert_msg(r->rc == 0, "%s", r->err);
    int refs = 0;
    for (int i = 0; i < r->nwin; i++) {
        if (!r->win_has_ref[i]) continue;
        refs++;
        double rel = fabs(r->win_val[i] / r->win_ref[i] - 1);
        ck_assert_msg(rel <= 0.10, "%s %s: simulated %g, published %g (%.1f%%)", r->name, r->win_name[i],
                      r->win_val[i], r->win_ref[i], 100 * rel);
    }
    ck_assert_int_eq(refs, 2);
    ck_assert_int_eq((long)win(r, "mixed_steps"), published[_i].mixed);
    ck_assert_int_eq(r->sum.preemptions, 0);                 /* zero preemptions in every cell */
    free(r);
}
END_TEST

START_TEST(paced_window_steps)
{
    /* PACE_STEPS=4 (scheduler.py: next_decode_eligible_step = current_step + N, the admitting
     * chunk unpaced): B's 161 chunks land at s, s+1, s+5, ..., s+1+4*159, so B's window holds
     * 2 + 4*159 steps, 3 decode-only ones between two paced chunks */
    run_result_t *r = malloc(sizeof *r);
    const char *sets[] = { "measure.all_steps={kind: steps, type: any, from: B.admitted, to: B.first_token}" };
    runner_run("scenarios/v100-fp16-mtp4-b131k-pdr-pace4.yaml", sets, 1, NULL, r);
    ck_assert_msg(r->rc == 0, "%s", r->err);
    long chunks = (long)win(r, "mixed_steps");
    ck_assert_int_eq(chunks, (131072 + 815) / 816);
    ck_assert_int_eq((long)win(r, "all_steps"), 2 + 4 * (chunks - 2));
    free(r);
}
END_TEST

START_TEST(the_fix_only_removes_cost)
{
    /* PREFIX_DECODE_ROWS=1 does not change A's step count during B's prefill */
    run_result_t *a = malloc(sizeof *a), *b = malloc(sizeof *b);
    runner_run("scenarios/v100-fp16-nomtp-b131k-baseline.yaml", NULL, 0, NULL, a);
    runner_run("scenarios/v100-fp16-nomtp-b131k-pdr.yaml", NULL, 0, NULL, b);
    ck_assert_int_eq(a->rc | b->rc, 0);
    ck_assert_double_eq(win(a, "mixed_steps"), win(b, "mixed_steps"));
    double saved = (win(a, "b_prefill_s") - win(b, "b_prefill_s")) / win(a, "mixed_steps");
    ck_assert_msg(saved > 0.8 && saved < 1.0, "saved per mixed step %g s", saved);   /* ~0.9 s */
    free(a);
    free(b);
}
END_TEST

/* A run far from time 0: a chain of n requests, each arriving `delay` s after the one
 * before finished.  Arrivals up to SIM_CLOCK_MAX_S keep their steps' durations; a chain
 * that carries the clock much further is refused rather than rounding the steps away
 * (TTFT and TPOT 0). */
static const char *far_file(int n, const char *delay)
{
    static char path[64];
    char cwd[512];
    snprintf(path, sizeof path, "/tmp/pacesim-far-%d.yaml", (int)getpid());
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    fprintf(f, "name: far\nmodel: %s/models/qwen3.8-27b.yaml\nhardware: {analytic: {tflops: 100, tbps: 2}}\n"
               "engine: {max_num_batched_tokens: 2048, max_num_seqs: 4, tensor_parallel_size: 2}\n"
               "workload:\n  requests:\n    - {id: R0, prompt_tokens: 100, output_tokens: 20}\n", cwd);
    for (int i = 1; i < n; i++)
        fprintf(f, "    - {id: R%d, prompt_tokens: 100, output_tokens: 20, arrival: {after: R%d, event: finished,"
                   " delay_s: %s}}\n", i, i - 1, delay);
    fprintf(f, "measure:\n  ttft: {kind: ttft, request: R%d}\n  tpot: {kind: tpot, request: R%d}\n"
               "stop: {max_time_s: 1e18}\n", n - 1, n - 1);
    ck_assert_int_eq(fclose(f), 0);
    return path;
}

START_TEST(clock_far_from_zero)
{
    run_result_t *near = malloc(sizeof *near), *far = malloc(sizeof *far);
    ck_assert(near && far);
    runner_run(far_file(2, "1"), NULL, 0, NULL, near);
    ck_assert_msg(near->rc == 0, "%s", near->err);
    runner_run(far_file(2, "9e6"), NULL, 0, NULL, far);    /* the last at 9e6 s: resolved */
    ck_assert_msg(far->rc == 0, "%s", far->err);
    for (int i = 0; i < 2; i++) {
        ck_assert(near->win_val[i] > 0);
        ck_assert_msg(fabs(far->win_val[i] / near->win_val[i] - 1) < 1e-4, "%s: %g near 0, %g far", near->win_name[i],
                      near->win_val[i], far->win_val[i]);
    }
    /* the last at 3.5e8 s at the earliest (39 delays of 9e6 s): refused at load, at the first
     * request of the chain past the clock's limit (R2: 1.8e7 s), exit 2 */
    runner_run(far_file(40, "9e6"), NULL, 0, NULL, far);
    ck_assert_int_eq(far->rc, 2);
    ck_assert_msg(strstr(far->err, ": workload.requests[2].arrival: its chain of triggers and delays puts it at 1.8e+07 s"
                                   " at the earliest, past 1e+07 s"), "%s", far->err);
    unlink(far_file(1, "1"));
    free(near);
    free(far);
}
END_TEST

/* A scenario file in /tmp from a body after the model and hardware lines. */
static const char *tmp_scenario(const char *tag, const char *body)
{
    static char path[96];
    char cwd[512];
    snprintf(path, sizeof path, "/tmp/pacesim-%s-%d.yaml", tag, (int)getpid());
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    fprintf(f, "name: %s\nmodel: %s/models/qwen3.8-27b.yaml\nhardware: {analytic: {tflops: 100, tbps: 2}}\n%s", tag, cwd,
            body);
    ck_assert_int_eq(fclose(f), 0);
    return path;
}

/* The arrival times of the explicit requests, read at the end of the run. */
typedef struct { double arrival[4]; int n; } arrivals_t;

static void end_arrivals(void *ctx, const engine_t *e)
{
    arrivals_t *a = ctx;
    for (a->n = 0; a->n < e->s->n_requests && a->n < 4; a->n++) a->arrival[a->n] = e->rp.r[e->wl.explicit_slot[a->n]].t_ev[EV_ARRIVAL];
}

/* `{after: A, decoded: 0}` holds once A has arrived (it has decoded 0 tokens then), not
 * before: with A arriving at t = 100, B arrives at 100, and C (after B, decoded 0) too. */
START_TEST(trigger_waits_for_its_reference)
{
    const char *path = tmp_scenario("after0", "engine: {tensor_parallel_size: 2}\nworkload:\n  requests:\n"
                                              "    - {id: A, prompt_tokens: 100, output_tokens: 4, arrival: 100}\n"
                                              "    - {id: B, prompt_tokens: 100, output_tokens: 4, arrival: {after: A, decoded: 0}}\n"
                                              "    - {id: C, prompt_tokens: 100, output_tokens: 4, arrival: {after: B, decoded: 0}}\n"
                                              "measure:\n  ttft: {kind: ttft, request: B}\n");
    arrivals_t a = { { 0 }, 0 };
    runner_hooks_t h = { .on_end = end_arrivals, .ctx = &a };
    run_result_t *r = malloc(sizeof *r);
    ck_assert_ptr_nonnull(r);
    runner_run_ex(path, NULL, 0, &h, r);
    unlink(path);
    ck_assert_msg(r->rc == 0, "%s", r->err);
    ck_assert_int_eq(a.n, 3);
    ck_assert_double_eq(a.arrival[0], 100);
    ck_assert_msg(a.arrival[1] >= a.arrival[0] && a.arrival[2] >= a.arrival[1], "A at %g s, B at %g s, C at %g s",
                  a.arrival[0], a.arrival[1], a.arrival[2]);
    free(r);
}
END_TEST

/* The prompt of every generated request a step saw: n, and the least and largest. */
typedef struct { long n, lo, hi; } prompts_t;

static void step_prompts(void *ctx, const engine_t *e, const step_rec_t *st)
{
    prompts_t *p = ctx;
    for (int i = 0; i < st->nrows; i++) {
        const req_t *r = &e->rp.r[st->rows[i].req];
        if (r->explicit_idx >= 0 || !st->rows[i].admitted) continue;
        long v = r->prompt;
        p->lo = p->n && p->lo < v ? p->lo : v;
        p->hi = p->n && p->hi > v ? p->hi : v;
        p->n++;
    }
}

/* A lognormal draw far past the clamp (e^60 tokens) saturates at the clamp: the prompt
 * is `max`, not 1 (nor a wrapped integer). */
START_TEST(huge_draw_saturates_at_the_clamp)
{
    const char *path = tmp_scenario("lognormal", "engine: {tensor_parallel_size: 2, max_model_len: 65536}\nworkload:\n"
                                                 "  poisson:\n    rate_per_s: 10\n    count: 5\n"
                                                 "    prompt: {dist: lognormal, mu: 60, sigma: 1, max: 3000}\n"
                                                 "    output: 4\nmeasure:\n  ttft: {kind: ttft}\n");
    prompts_t p = { 0, 0, 0 };
    runner_hooks_t h = { .on_step = step_prompts, .ctx = &p };
    run_result_t *r = malloc(sizeof *r);
    ck_assert_ptr_nonnull(r);
    runner_run_ex(path, NULL, 0, &h, r);
    unlink(path);
    ck_assert_msg(r->rc == 0, "%s", r->err);
    ck_assert_int_eq(p.n, 5);
    ck_assert_int_eq(p.lo, 3000);
    ck_assert_int_eq(p.hi, 3000);
    free(r);
}
END_TEST

/* A chain of 30000 requests, each arriving when the one before has decoded 2 tokens:
 * the trigger check costs what can fire, not every request every step (the tcase
 * timeout is the bound: a scan of every request per step takes about a minute here). */
START_TEST(trigger_chain_linear)
{
    enum { N = 30000 };
    size_t cap = (size_t)N * 100 + 512, o = 0;
    char *body = malloc(cap);
    ck_assert_ptr_nonnull(body);
    o += (size_t)snprintf(body + o, cap - o, "engine: {max_model_len: 65536, tensor_parallel_size: 2}\nworkload:\n"
                                             "  requests:\n    - {id: R0, prompt_tokens: 100, output_tokens: 4}\n");
    for (int i = 1; i < N; i++)
        o += (size_t)snprintf(body + o, cap - o,
                              "    - {id: R%d, prompt_tokens: 100, output_tokens: 4, arrival: {after: R%d, decoded: 2}}\n",
                              i, i - 1);
    snprintf(body + o, cap - o, "measure:\n  ttft: {kind: ttft}\n");
    const char *path = tmp_scenario("chain", body);
    free(body);
    run_result_t *r = malloc(sizeof *r);
    ck_assert_ptr_nonnull(r);
    runner_run(path, NULL, 0, NULL, r);
    unlink(path);
    ck_assert_msg(r->rc == 0, "%s", r->err);
    ck_assert_int_eq(r->sum.requests_finished, N);
    free(r);
}
END_TEST

int main(void)
{
    const check_test_t tests[] = {
        CHECK_TEST(deterministic_output), CHECK_TEST(windows_are_consistent),
        CHECK_LOOP(v100_published_table, CHECK_N(published)), CHECK_TEST(the_fix_only_removes_cost),
        CHECK_TEST(paced_window_steps), CHECK_TEST(clock_far_from_zero), CHECK_TEST(trigger_waits_for_its_reference),
        CHECK_TEST(huge_draw_saturates_at_the_clamp)};
    const check_test_t scale[] = { CHECK_TEST(trigger_chain_linear) };
    Suite *s = suite_create("engine");
    check_case(s, "runs", tests, CHECK_N(tests), 120, NULL);
    check_case(s, "scale", scale, CHECK_N(scale), 20, NULL);
    return check_run(s);
}
