/* check_serve: the serving summary's goodput rule (vLLM's benchmark: every objective given
 * holds, value <= objective, inclusive; TPOT 0 for one output token), its counts, the --goodput
 * pair syntax, and the accumulator's statistics against values computed here. */
#include <check.h>
#include "check_run.h"
#include <math.h>
#include <stdlib.h>
#include "engine.h"
#include "serve.h"

START_TEST(goodput_rule)
{
    goodput_slo_t slo = GOODPUT_SLO_NONE;
    ck_assert(!goodput_slo_any(&slo));
    ck_assert_int_eq(metrics_goodput_good(&slo, 9, 9, 9), 1);        /* no objective: every request */
    slo.ttft_ms = 500;
    ck_assert_int_eq(metrics_goodput_good(&slo, 0.5, 1, 1), 1);      /* equal: good (s >= r) */
    ck_assert_int_eq(metrics_goodput_good(&slo, 0.5000001, 0, 0), 0);
    slo.tpot_ms = 20;
    ck_assert_int_eq(metrics_goodput_good(&slo, 0.1, 0.02, 100), 1);
    ck_assert_int_eq(metrics_goodput_good(&slo, 0.1, 0.021, 100), 0);
    ck_assert_int_eq(metrics_goodput_good(&slo, 0.6, 0.01, 100), 0);
    slo.e2el_ms = 1000;
    ck_assert_int_eq(metrics_goodput_good(&slo, 0.1, 0.01, 1.0), 1);
    ck_assert_int_eq(metrics_goodput_good(&slo, 0.1, 0.01, 1.01), 0);
    ck_assert_int_eq(metrics_goodput_good(&slo, NAN, 0.01, 0.5), 0);  /* no value is never good */
}
END_TEST

START_TEST(goodput_over_requests)
{
    goodput_slo_t slo = { 300, 50, -1 };
    goodput_req_t r[5] = {
        { 0.2, 0.04, 3 }, { 0.31, 0.01, 1 }, { 0.1, 0.0, 0.1 },   /* good, slow first token, one token: good */
        { 0.3, 0.05, 9 }, { 0.1, 0.06, 2 },                        /* on both objectives: good; slow tokens */
    };
    goodput_t g = metrics_goodput(&slo, r, 5, 2.0);
    ck_assert_int_eq(g.completed, 5);
    ck_assert_int_eq(g.good, 3);
    ck_assert_double_eq_tol(g.share, 0.6, 1e-15);
    ck_assert_double_eq_tol(g.req_s, 1.5, 1e-15);
    g = metrics_goodput(&slo, r, 0, 2.0);
    ck_assert(isnan(g.share));
    ck_assert_double_eq(g.req_s, 0.0);
    g = metrics_goodput_counts(1, 2, 0.0);
    ck_assert(isnan(g.req_s));
}
END_TEST

START_TEST(slo_pairs)
{
    goodput_slo_t slo = GOODPUT_SLO_NONE;
    char err[256], buf[128];
    ck_assert_int_eq(goodput_slo_parse(&slo, "ttft:500", err, sizeof err), 0);
    ck_assert_int_eq(goodput_slo_parse(&slo, "tpot:12.5", err, sizeof err), 0);
    ck_assert_int_eq(goodput_slo_parse(&slo, "ttft:250", err, sizeof err), 0);   /* again: replaced */
    ck_assert_double_eq(slo.ttft_ms, 250);
    ck_assert_double_eq(slo.tpot_ms, 12.5);
    ck_assert(slo.e2el_ms < 0);
    ck_assert_str_eq(goodput_slo_text(&slo, buf, sizeof buf), "ttft <= 250 ms, tpot <= 12.5 ms");
    const char *badp[] = { "ttft", "ttft:", "ttft: 5", "ttft:5ms", "ttft:-1", "ttft:inf", "ttft:nan", "itl:5",
                           ":5", "TTFT:5", "ttft:1e999" };
    for (size_t i = 0; i < sizeof badp / sizeof badp[0]; i++)
        ck_assert_msg(goodput_slo_parse(&slo, badp[i], err, sizeof err) < 0, "%s accepted", badp[i]);
    ck_assert_double_eq(slo.ttft_ms, 250);   /* a refused pair changes nothing */
}
END_TEST

/* A finished request with the given times and tokens. */
static req_t fin(double arr, double first, double done, long prompt, long out)
{
    req_t r = { 0 };
    r.t_ev[EV_ARRIVAL] = arr;
    r.t_ev[EV_FIRST_TOKEN] = first;
    r.t_ev[EV_FINISHED] = done;
    r.prompt = prompt;
    r.output = r.emitted = out;
    return r;
}

START_TEST(accumulator)
{
    goodput_slo_t slo = { 150, -1, -1 };
    serve_acc_t *a = serve_acc_new(&slo);
    ck_assert_ptr_nonnull(a);
    req_t rs[4] = { fin(0, 0.1, 1.1, 100, 11), fin(0.5, 0.7, 0.7, 50, 1), fin(1, 1.3, 2.3, 200, 21),
                    fin(1.2, 1.3, 3.3, 10, 5) };
    for (int i = 0; i < 4; i++) ck_assert_int_eq(serve_acc_finish(a, &rs[i]), 0);
    const double gaps[] = { 0.1, 0.2, 0.3 };
    for (int i = 0; i < 3; i++) ck_assert_int_eq(serve_acc_itl(a, gaps[i]), 0);
    serve_summary_t s;
    serve_acc_summary(a, 4.0, &s);
    ck_assert_int_eq(s.completed, 4);
    ck_assert_int_eq(s.input_tokens, 360);
    ck_assert_int_eq(s.output_tokens, 38);
    ck_assert_double_eq_tol(s.req_s, 1.0, 1e-15);
    ck_assert_double_eq_tol(s.total_tok_s, 398 / 4.0, 1e-12);
    /* TTFT 0.1 0.2 0.3 0.1; TPOT over output > 1: 0.1, 0.05, 0.5; E2EL 1.1 0.2 1.3 2.1 */
    ck_assert_int_eq(s.lat[SERVE_TTFT].n, 4);
    ck_assert_double_eq_tol(s.lat[SERVE_TTFT].mean, 0.175, 1e-12);
    ck_assert_double_eq_tol(s.lat[SERVE_TTFT].median, 0.15, 1e-12);
    ck_assert_int_eq(s.lat[SERVE_TPOT].n, 3);
    ck_assert_double_eq_tol(s.lat[SERVE_TPOT].median, 0.1, 1e-12);
    ck_assert_double_eq_tol(s.lat[SERVE_TPOT].p99, 0.1 + 0.98 * 0.4, 1e-12);
    ck_assert_double_eq_tol(s.lat[SERVE_ITL].mean, 0.2, 1e-12);
    ck_assert_double_eq_tol(s.lat[SERVE_E2EL].median, 1.2, 1e-12);
    ck_assert(s.has_goodput);
    ck_assert_int_eq(s.goodput.good, 2);     /* TTFT 0.1 and 0.1 within 150 ms */
    ck_assert_double_eq_tol(s.goodput.req_s, 0.5, 1e-15);
    serve_acc_free(a);
    a = serve_acc_new(NULL);
    serve_acc_summary(a, 0.0, &s);
    ck_assert(!s.has_goodput);
    ck_assert(isnan(s.req_s) && isnan(s.lat[SERVE_TTFT].mean));
    serve_acc_free(a);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("serve");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, goodput_rule);
    tcase_add_test(tc, goodput_over_requests);
    tcase_add_test(tc, slo_pairs);
    tcase_add_test(tc, accumulator);
    suite_add_tcase(s, tc);
    return check_run(s);
}
