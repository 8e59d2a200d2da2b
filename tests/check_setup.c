/* check_setup: the one assembly path.  What setup_open() (and setup_check_trace(), for
 * validate) refuses, a run refuses with the same line and exit status 2; a second engine of
 * the same setup (rescore, the GPU replay) steps exactly as the first.  And the edge of the
 * commands: every message is one line (a user's text escaped), and a write error on any
 * output fails the command ($PACESIM or bin/pacesim, run from the repository root). */
#include <check.h>
#include "check_run.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
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
    ck_assert_int_gt(u.e.rep[0].sc.block, 0);
    ck_assert_int_gt(u.e.rep[0].sc.capacity, 0);
    setup_close(&u);
    /* no profile: the analytic stand-in (the trace's bad row is past its first) */
    ck_assert_msg(setup_open(&u, "tests/data/bad/file-trace-bad-row.yaml", NULL, 0) == 0, "%s", u.err);
    ck_assert(!u.has_prof);
    ck_assert_ptr_eq(strstr(u.hw, "analytic"), u.hw);
    setup_close(&u);
}
END_TEST

/* The fork's pacing knob under the upstream scheduler, which never reads it: said (it ran unpaced,
 * unsaid); under the fork's, nothing. */
START_TEST(pacing_under_upstream_is_said)
{
    setup_t u;
    const char *up[] = { "env.VLLM_1CAT_PREFILL_PACE_STEPS=4", "engine.scheduler=upstream", "engine.attention_backend=fork" };
    ck_assert_msg(setup_open(&u, "scenarios/default.yaml", up, 3) == 0, "%s", u.err);
    ck_assert_msg(strstr(u.warn, "VLLM_1CAT_PREFILL_PACE_STEPS 4 is the fork scheduler's knob"), "%s", u.warn);
    setup_close(&u);
    ck_assert_msg(setup_open(&u, "scenarios/default.yaml", up, 1) == 0, "%s", u.err);
    ck_assert_msg(!strstr(u.warn, "PACE_STEPS"), "%s", u.warn);
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

START_TEST(messages_are_one_line)
{
    char m[32];
    snprintf(m, sizeof m, "%s", "plain: text");
    ck_assert_str_eq(setup_msg_line(m, sizeof m), "plain: text");
    snprintf(m, sizeof m, "%s", "a\nb\tc\x7f\r");
    ck_assert_str_eq(setup_msg_line(m, sizeof m), "a?b?c??");
}
END_TEST

/* A scenario in a directory whose name holds a newline: what setup_open refuses, and what
 * the run meets later (a bad trace row), are one line each, the newline escaped. */
START_TEST(user_paths_are_escaped)
{
    char dir[64] = "/tmp/pacesim-nl-XXXXXX", sub[128], path[192], tr[192], cwd[512];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(sub, sizeof sub, "%s/new\nline", dir);
    ck_assert_int_eq(mkdir(sub, 0700), 0);
    snprintf(path, sizeof path, "%s/s.yaml", sub);
    snprintf(tr, sizeof tr, "%s/t.csv", sub);
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "name: nl\nmodel: %s/models/qwen3.8-27b.yaml\nhardware: {analytic: {tflops: 100, tbps: 2}}\n"
               "engine: {max_num_batched_tokens: 2048, max_num_seqs: 4, tensor_parallel_size: 2}\n"
               "workload: {trace: t.csv}\n", cwd);
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_ptr_nonnull(f = fopen(tr, "w"));
    fputs("arrival_s,prompt_tokens,output_tokens\n0,100,2\n1,100,oops\n", f);
    ck_assert_int_eq(fclose(f), 0);
    run_result_t *r = malloc(sizeof *r);
    ck_assert_ptr_nonnull(r);
    runner_run(path, NULL, 0, NULL, r);              /* the bad row is met by the run */
    ck_assert_int_eq(r->rc, 2);
    ck_assert_msg(!strchr(r->err, '\n') && strstr(r->err, "new?line/t.csv:3:1: trace"), "%s", r->err);
    setup_t u;
    ck_assert_int_eq(setup_open(&u, path, NULL, 0), 0);
    ck_assert_int_lt(setup_check_trace(&u), 0);      /* validate finds it too */
    ck_assert_str_eq(u.err, r->err);
    setup_close(&u);
    unlink(tr);                                      /* a missing trace: refused by setup_open */
    ck_assert_int_lt(setup_open(&u, path, NULL, 0), 0);
    ck_assert_msg(!strchr(u.err, '\n') && strstr(u.err, "new?line/t.csv: cannot open trace"), "%s", u.err);
    setup_close(&u);
    unlink(path);
    ck_assert_int_lt(setup_open(&u, path, NULL, 0), 0);   /* a missing scenario */
    ck_assert_msg(!strchr(u.err, '\n') && strstr(u.err, "new?line/s.yaml"), "%s", u.err);
    setup_close(&u);
    free(r);
    rmdir(sub);
    rmdir(dir);
}
END_TEST

/* A trace row of every field count from 1 to 12: only 3, 4 and 6 (the prefix columns) are
 * read; every other count is refused on its line, none read past the splitter's fields. */
START_TEST(trace_field_counts)
{
    char dir[64] = "/tmp/pacesim-fields-XXXXXX", path[128], tr[128], cwd[512];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    snprintf(path, sizeof path, "%s/s.yaml", dir);
    snprintf(tr, sizeof tr, "%s/t.csv", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "name: nf\nmodel: %s/models/qwen3.8-27b.yaml\nhardware: {analytic: {tflops: 100, tbps: 2}}\n"
               "engine: {max_model_len: 65536, tensor_parallel_size: 2, prefix_cache_model: pool}\n"
               "workload: {trace: t.csv}\n", cwd);
    ck_assert_int_eq(fclose(f), 0);
    static const char *const field[12] = { "0.5", "400", "8", "0", "1", "200", "7", "7", "7", "7", "7", "7" };
    for (int nf = 1; nf <= 12; nf++) {
        ck_assert_ptr_nonnull(f = fopen(tr, "w"));
        fputs("0,100,2\n", f);
        for (int k = 0; k < nf; k++) fprintf(f, "%s%s", k ? "," : "", field[k]);
        fputs("\n", f);
        ck_assert_int_eq(fclose(f), 0);
        setup_t u;
        ck_assert_msg(setup_open(&u, path, NULL, 0) == 0, "%d fields: %s", nf, u.err);
        int rc = setup_check_trace(&u);
        if (nf == 3 || nf == 4 || nf == 6) ck_assert_msg(rc == 0, "%d fields refused: %s", nf, u.err);
        else ck_assert_msg(rc < 0 && strstr(u.err, "t.csv:2:1: trace: expected"), "%d fields: %s", nf, u.err);
        setup_close(&u);
    }
    unlink(tr);
    unlink(path);
    rmdir(dir);
}
END_TEST

/* How many lines the file path (a command's stderr) holds, the last of them in line (size
 * bytes); the file is removed. */
static int read_lines(const char *path, char *line, int size)
{
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    int lines = 0;
    line[0] = 0;
    while (fgets(line, size, f)) lines++;
    fclose(f);
    unlink(path);
    return lines;
}

/* The commands' outputs: a write error (a full device) fails the command with one line on
 * stderr, whichever output it hits. */
static const struct { const char *args; const char *fragment; } unwritable[] = {
    { "run scenarios/default.yaml >/dev/full", "writing the table" },
    { "run scenarios/default.yaml --quiet --steps /dev/full >/dev/null", "writing the steps CSV" },
    { "run scenarios/default.yaml scenarios/v100-fp16-mtp4-b16k-pdr.yaml -j 2 --quiet --steps /dev/full", "writing the steps CSV" },
    { "run scenarios/default.yaml --quiet --steps - >/dev/full", "writing the steps CSV" },
    { "run scenarios/default.yaml --quiet --csv /dev/full", "writing the CSV" },
    { "run scenarios/default.yaml --quiet --trace /dev/full", "trace" },
    { "validate scenarios/default.yaml >/dev/full", "stdout: write error" },
    { "profile calib/profiles/h200.yaml >/dev/full", "stdout: write error" },
    { "--help >/dev/full", "stdout: write error" },
    { "rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --set workload.requests.B.output_tokens=8 --measured "
      "tests/data/replay/h200-envelope/h200-fp16-nomtp-b16k-baseline.steps.csv >/dev/full", "stdout: write error" },
    { "rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --set workload.requests.B.output_tokens=8 --measured "
      "tests/data/replay/h200-envelope/h200-fp16-nomtp-b16k-baseline.steps.csv --steps /dev/full >/dev/null", "/dev/full" },
};

START_TEST(write_errors_fail_the_command)
{
    ck_assert_msg(access("/dev/full", W_OK) == 0, "no /dev/full to write to");
    const char *bin = getenv("PACESIM") ? getenv("PACESIM") : "bin/pacesim";
    ck_assert_msg(access(bin, X_OK) == 0, "%s not built", bin);
    char err[64] = "/tmp/pacesim-werr-XXXXXX", cmd[1024], line[1200];
    int fd = mkstemp(err);
    ck_assert_int_ge(fd, 0);
    close(fd);
    snprintf(cmd, sizeof cmd, "%s %s 2>%s", bin, unwritable[_i].args, err);
    int st = system(cmd);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 1, "%s: status %d", cmd, st);
    int lines = read_lines(err, line, sizeof line);
    ck_assert_msg(lines == 1, "%s: %d lines on stderr", cmd, lines);
    ck_assert_msg(strstr(line, unwritable[_i].fragment), "%s: %s", cmd, line);
}
END_TEST

/* An output or the trace being a FIFO that no one opens at the other end: the command
 * is refused at once (exit 2, one line) instead of waiting in open() forever.  `timeout`
 * bounds the wait, so a blocking open fails the test (status 124) rather than hanging it.
 * FIFO stands for the FIFO's path. */
static const struct { const char *args; const char *fragment; } fifo_cases[] = {
    { "run scenarios/default.yaml --quiet --csv FIFO", "a FIFO that no process reads" },
    { "run scenarios/default.yaml --quiet --steps FIFO", "a FIFO that no process reads" },
    { "run scenarios/default.yaml --quiet --requests FIFO", "a FIFO that no process reads" },
    { "run scenarios/default.yaml --quiet --trace FIFO", "a FIFO that no process reads" },
    { "merge tests/data/golden/sweep-b16k.csv -o FIFO", "a FIFO that no process reads" },
    { "run scenarios/bench-trace.yaml --quiet --set workload.trace=FIFO", "cannot open trace: not a regular file" },
    { "validate scenarios/bench-trace.yaml --set workload.trace=FIFO", "cannot open trace: not a regular file" },
    { "rescore scenarios/h200-fp16-nomtp-b16k-pdr.yaml --measured FIFO", "not a regular file" },
};

START_TEST(fifo_without_a_peer_is_refused)
{
    const char *bin = getenv("PACESIM") ? getenv("PACESIM") : "bin/pacesim";
    ck_assert_msg(access(bin, X_OK) == 0, "%s not built", bin);
    char dir[64] = "/tmp/pacesim-fifo-XXXXXX", fifo[96], err[96], args[512], cmd[1024], line[1200];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(fifo, sizeof fifo, "%s/f", dir);
    snprintf(err, sizeof err, "%s/err", dir);
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    const char *a = fifo_cases[_i].args, *at = strstr(a, "FIFO");
    ck_assert_ptr_nonnull(at);
    snprintf(args, sizeof args, "%.*s%s%s", (int)(at - a), a, fifo, at + 4);
    snprintf(cmd, sizeof cmd, "timeout 10 %s %s >/dev/null 2>%s", bin, args, err);
    int st = system(cmd);
    int lines = read_lines(err, line, sizeof line);
    unlink(fifo);
    rmdir(dir);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 2, "%s: status %d", cmd, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    ck_assert_msg(lines == 1, "%s: %d lines on stderr", cmd, lines);
    ck_assert_msg(strstr(line, fifo_cases[_i].fragment), "%s: %s", cmd, line);
}
END_TEST

int main(void)
{
    TCase *tc = tcase_create("assembly");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, refused_as_run_refuses, 0, (int)(sizeof refused / sizeof *refused));
    tcase_add_test(tc, accepted_with_its_parts);
    tcase_add_test(tc, pacing_under_upstream_is_said);
    tcase_add_test(tc, second_engine_steps_as_the_first);
    tcase_add_test(tc, messages_are_one_line);
    tcase_add_test(tc, user_paths_are_escaped);
    tcase_add_test(tc, trace_field_counts);
    tcase_add_loop_test(tc, write_errors_fail_the_command, 0, (int)(sizeof unwritable / sizeof *unwritable));
    tcase_add_loop_test(tc, fifo_without_a_peer_is_refused, 0, (int)(sizeof fifo_cases / sizeof *fifo_cases));
    Suite *s = suite_create("setup");
    suite_add_tcase(s, tc);
    return check_run(s);
}
