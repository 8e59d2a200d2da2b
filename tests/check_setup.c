/* check_setup: the one assembly path.  What setup_open() (and setup_check_trace(), for
 * validate) refuses, a run refuses with the same line and exit status 2; a second engine of
 * the same setup (rescore, the GPU replay) steps exactly as the first. */
#include <check.h>
#include "check_run.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "runner.h"
#include "setup.h"

/* Cases of the bad-input catalogue found at each stage of the assembly. */
static const struct {
    const char *file, *fragment;
    int at_trace;                 /* 1: setup_open accepts it, only the whole trace shows it */
} refused[] = {
    { "tests/data/bad/file-model-missing.yaml", "cannot open", 0 },                 /* the scenario */
    { "tests/data/bad/file-profile-missing.yaml", "cannot open profile", 0 },       /* the profile */
    { "tests/data/bad/kv-weights-leave-no-room.yaml", ":7:3: engine:", 0 },          /* the engine's KV sizing */
    { "tests/data/bad/kv-request-never-fits.yaml", ":14:7: workload.requests[0]", 0 },
    { "tests/data/bad/kv-poisson-never-fits.yaml", ":13:12: workload.poisson", 0 },
    { "tests/data/bad/file-trace-missing.yaml", "cannot open trace", 0 },           /* the trace's first row */
    { "tests/data/bad/file-trace-bad-row.yaml", "bad-row.csv:3:1: trace", 1 },      /* a later row */
    { "tests/data/bad/kv-trace-never-fits.yaml", "never-fits.csv:3:1: trace", 1 },
};

START_TEST(refused_as_run_refuses)
{
    setup_t u;
    int rc = setup_open(&u, refused[_i].file, NULL, 0);
    ck_assert_int_eq(rc == 0, refused[_i].at_trace);
    if (rc == 0) ck_assert_int_lt(setup_check_trace(&u), 0);
    ck_assert_msg(strstr(u.err, refused[_i].fragment), "%s: %s", refused[_i].file, u.err);
    run_result_t *r = malloc(sizeof *r);
    ck_assert_ptr_nonnull(r);
    runner_run(refused[_i].file, NULL, 0, NULL, r);
    ck_assert_int_eq(r->rc, 2);
    ck_assert_str_eq(r->err, u.err);
    free(r);
    setup_close(&u);
}
END_TEST

START_TEST(accepted_with_its_parts)
{
    setup_t u;
    ck_assert_msg(setup_open(&u, "scenarios/default.yaml", NULL, 0) == 0, "%s", u.err);
    ck_assert_int_eq(setup_check_trace(&u), 0);
    ck_assert(u.has_scn && u.has_prof && u.has_eng);
    ck_assert_ptr_nonnull(u.cost);
    ck_assert_str_eq(u.hw, u.prof.gpu);
    ck_assert_int_gt(u.e.block, 0);
    ck_assert_int_gt(u.e.capacity, 0);
    setup_close(&u);
    /* no profile: the analytic stand-in (the trace's bad row is past its first) */
    ck_assert_msg(setup_open(&u, "tests/data/bad/file-trace-bad-row.yaml", NULL, 0) == 0, "%s", u.err);
    ck_assert(!u.has_prof);
    ck_assert_ptr_eq(strstr(u.hw, "analytic"), u.hw);
    setup_close(&u);
}
END_TEST

START_TEST(second_engine_steps_as_the_first)
{
    setup_t u;
    engine_t e2;
    const char *sets[] = { "mtp_acceptance={per_position: [0.9, 0.7, 0.5, 0.3]}" };
    ck_assert_msg(setup_open(&u, "scenarios/v100-fp16-mtp4-b16k-pdr.yaml", sets, 1) == 0, "%s", u.err);
    cost_model_t *cm = setup_cost_new(&u);
    ck_assert_ptr_nonnull(cm);
    ck_assert_int_eq(setup_engine(&u, cm, &e2), 0);
    ck_assert_int_eq(engine_run(&u.e), 0);
    ck_assert_int_eq(engine_run(&e2), 0);
    ck_assert_int_gt(u.e.sum.steps, 0);
    ck_assert_int_eq(e2.sum.steps, u.e.sum.steps);
    ck_assert_int_eq(e2.sum.tokens_emitted, u.e.sum.tokens_emitted);
    ck_assert_double_eq(e2.sum.makespan, u.e.sum.makespan);
    ck_assert_int_gt(u.s.n_windows, 0);
    for (int i = 0; i < u.s.n_windows; i++) {
        double a = engine_window(&u.e, i), b = engine_window(&e2, i);
        ck_assert_msg(a == b || (isnan(a) && isnan(b)), "window %d: %g vs %g", i, a, b);
    }
    engine_free(&e2);
    cost_free(cm);
    setup_close(&u);
}
END_TEST

int main(void)
{
    TCase *tc = tcase_create("assembly");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, refused_as_run_refuses, 0, (int)(sizeof refused / sizeof *refused));
    tcase_add_test(tc, accepted_with_its_parts);
    tcase_add_test(tc, second_engine_steps_as_the_first);
    Suite *s = suite_create("setup");
    suite_add_tcase(s, tc);
    return check_run(s);
}
