/* check_capacity: the SLO names, the rate search against a queue whose answer is known in
 * closed form (M/D/1), the bracket the search reports, goodput against a hand count of the
 * requests CSV, and an early-stopped probe deciding as the whole run.  Run from the
 * repository root. */
#include <check.h>
#include "check_run.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capacity.h"
#include "runner.h"

#define MD1 "tests/data/capacity/md1.yaml"
#define SMALL "tests/data/capacity/small.yaml"
#define CLUSTER "tests/data/capacity/cluster.yaml"

static const struct {
    const char *in;
    int ok, metric, per_request, mean;
    double q, limit;
} slos[] = {
    { "ttft_p99=2", 1, CAP_TTFT, 0, 0, 0.99, 2 },
    { "tpot_p90=0.05", 1, CAP_TPOT, 0, 0, 0.90, 0.05 },
    { "e2el_mean=10", 1, CAP_E2EL, 0, 1, 0, 10 },
    { "ttft_p99.9=3", 1, CAP_TTFT, 0, 0, 0.999, 3 },
    { "ttft=2", 1, CAP_TTFT, 1, 0, 0, 2 },
    { "tpot=5e-2", 1, CAP_TPOT, 1, 0, 0, 0.05 },
    { "ttfb_p99=2", 0, 0, 0, 0, 0, 0 },
    { "ttft_p100=2", 0, 0, 0, 0, 0, 0 },
    { "ttft_p0=2", 0, 0, 0, 0, 0, 0 },
    { "ttft_q99=2", 0, 0, 0, 0, 0, 0 },
    { "ttft_p99=0", 0, 0, 0, 0, 0, 0 },
    { "ttft_p99=-1", 0, 0, 0, 0, 0, 0 },
    { "ttft_p99=abc", 0, 0, 0, 0, 0, 0 },
    { "ttft_p99=inf", 0, 0, 0, 0, 0, 0 },
    { "ttft_p99=0x10", 0, 0, 0, 0, 0, 0 },
    { "ttft_p99=", 0, 0, 0, 0, 0, 0 },
    { "ttft_p99", 0, 0, 0, 0, 0, 0 },
    { "=2", 0, 0, 0, 0, 0, 0 },
    { "ttft_p1e1=2", 0, 0, 0, 0, 0, 0 },
};

START_TEST(slo_names)
{
    cap_slo_t s;
    char err[256];
    int rc = cap_parse_slo(slos[_i].in, &s, err, sizeof err);
    ck_assert_msg((rc == 0) == slos[_i].ok, "%s: rc %d (%s)", slos[_i].in, rc, rc ? err : "");
    if (!slos[_i].ok) {
        ck_assert_msg(strstr(err, slos[_i].in) != NULL, "%s: the message names it: %s", slos[_i].in, err);
        return;
    }
    ck_assert_int_eq(s.metric, slos[_i].metric);
    ck_assert_int_eq(s.per_request, slos[_i].per_request);
    ck_assert_int_eq(s.mean, slos[_i].mean);
    ck_assert_double_eq_tol(s.q, slos[_i].q, 1e-12);
    ck_assert_double_eq_tol(s.limit, slos[_i].limit, 1e-15);
}
END_TEST

/* The options every test starts from: FILE, no search, 2% tolerance, 10% warm-up and cool-down. */
static void base_opts(cap_opts_t *o, const char *file)
{
    static sweep_t none;
    memset(o, 0, sizeof *o);
    o->file = file;
    o->search = &none;
    o->tol = 0.02;
    o->warmup = o->cooldown = 0.1;
}

static cap_conf_t *open_conf(cap_opts_t *o, const char *file, const char *slo1, const char *slo2, double goodput)
{
    char err[CAP_ERR_MAX];
    int rc;
    base_opts(o, file);
    o->goodput = goodput;
    ck_assert_int_eq(cap_parse_slo(slo1, &o->slo[o->nslo++], err, sizeof err), 0);
    if (slo2) ck_assert_int_eq(cap_parse_slo(slo2, &o->slo[o->nslo++], err, sizeof err), 0);
    cap_conf_t *c = cap_conf_open(o, NULL, 0, &rc, err, sizeof err);
    ck_assert_msg(c != NULL, "%s", err);
    return c;
}

/* The service time D of the M/D/1 scenario: at a rate so low that hardly a request waits
 * (one in 200), the median end-to-end latency is D, and the mean within a percent of it. */
static double md1_service(void)
{
    cap_opts_t o;
    cap_probe_t p;
    char err[CAP_ERR_MAX];
    cap_conf_t *c = open_conf(&o, MD1, "e2el_p50=1000", "e2el_mean=1000", 0);
    ck_assert_int_eq(cap_conf_probe(c, 0.05, &p, err, sizeof err), 0);
    ck_assert(p.pass);
    double d = p.stat[0];
    ck_assert_double_eq_tol(p.stat[1], d, 0.01 * d);
    ck_assert(d > 0.01 && d < 10);
    cap_conf_close(c);
    return d;
}

/* Pollaczek-Khinchine: W = D + lambda D^2 / (2 (1 - lambda D)).  A bound W <= k D holds up to
 * lambda D = 2 (k - 1) / (2 k - 1): k = 2 gives 2/3, k = 3 gives 4/5.  The search must land
 * within its tolerance plus the sampling error of a mean over 8,000 requests (a few percent
 * of W near these loads, under 2% of the rate). */
START_TEST(md1_closed_form)
{
    static const double ks[] = { 2, 3 };
    double d = md1_service(), k = ks[_i];
    double want = 2 * (k - 1) / (2 * k - 1) / d;
    char slo[64], err[CAP_ERR_MAX];
    snprintf(slo, sizeof slo, "e2el_mean=%.9g", k * d);
    cap_opts_t o;
    cap_conf_t *c = open_conf(&o, MD1, slo, NULL, 0);
    cap_answer_t a;
    ck_assert_int_eq(cap_conf_search(c, &a, err, sizeof err), 0);
    ck_assert(a.found);
    /* the saturation probe measures the service rate 1/D */
    ck_assert_msg(fabs(a.saturation * d - 1) < 1e-6, "saturation %g req/s, 1/D %g", a.saturation, 1 / d);
    ck_assert_msg(fabs(a.rate / want - 1) < o.tol + 0.03, "k %g: found %g req/s, closed form %g req/s (D %g s)", k,
                  a.rate, want, d);
    /* the bracket: the answer passes, a rate tol above it fails */
    cap_probe_t p;
    ck_assert_int_eq(cap_conf_probe(c, a.rate, &p, err, sizeof err), 0);
    ck_assert(p.pass);
    ck_assert(p.stat[0] <= k * d);
    ck_assert_int_eq(cap_conf_probe(c, a.rate * (1 + o.tol), &p, err, sizeof err), 0);
    ck_assert(!p.pass);
    cap_conf_close(c);
}
END_TEST

/* --error-bars's searches (cap_conf_open_scaled): every step at x s its price makes the M/D/1
 * service time s D, the bound (2 D, in seconds) stays, so W <= 2 D is W <= (2 / s) (s D) and
 * Pollaczek-Khinchine gives the rate (lambda s D = 2 (m - 1) / (2 m - 1), m = 2 / s): at x1.1
 * 0.564 / D, at x1 0.667 / D, at x0.9 0.789 / D.  Each search lands within its tolerance plus
 * the sampling error of the closed form, and the three are ordered: the rate at +10% below the
 * point's below the rate at -10%.  The saturation probe measures 1 / (s D) exactly. */
START_TEST(md1_scaled)
{
    static const double scales[] = { 1.1, 1, 0.9 };
    double d = md1_service(), rate[3];
    char slo[64], err[CAP_ERR_MAX];
    snprintf(slo, sizeof slo, "e2el_mean=%.9g", 2 * d);
    for (int i = 0; i < 3; i++) {
        double sc = scales[i], m = 2 / sc, want = 2 * (m - 1) / (2 * m - 1) / (sc * d);
        cap_opts_t o;
        int rc;
        base_opts(&o, MD1);
        ck_assert_int_eq(cap_parse_slo(slo, &o.slo[o.nslo++], err, sizeof err), 0);
        cap_conf_t *c = cap_conf_open_scaled(&o, NULL, 0, sc, &rc, err, sizeof err);
        ck_assert_msg(c != NULL, "%s", err);
        cap_answer_t a;
        ck_assert_int_eq(cap_conf_search(c, &a, err, sizeof err), 0);
        ck_assert(a.found);
        ck_assert_msg(fabs(a.saturation * sc * d - 1) < 1e-6, "x%g: saturation %g req/s, 1/(sD) %g", sc, a.saturation,
                      1 / (sc * d));
        ck_assert_msg(fabs(a.rate / want - 1) < o.tol + 0.03, "x%g: found %g req/s, closed form %g req/s (D %g s)", sc,
                      a.rate, want, d);
        rate[i] = a.rate;
        cap_conf_close(c);
    }
    ck_assert_msg(rate[0] < rate[1] && rate[1] < rate[2], "rates at x1.1, x1, x0.9: %g %g %g", rate[0], rate[1], rate[2]);
}
END_TEST

/* A bound on the p99 alone stops a probe once enough requests have broken it; the decision
 * is the whole run's: the same bound on the same run, checked by its statistics, fails too. */
START_TEST(early_stop_decides_as_whole_run)
{
    double d = md1_service();
    char slo[64], err[CAP_ERR_MAX];
    snprintf(slo, sizeof slo, "e2el_p99=%.9g", 4 * d);
    cap_opts_t o;
    cap_conf_t *c = open_conf(&o, MD1, slo, "e2el_mean=1000", 0);
    cap_probe_t p;
    ck_assert_int_eq(cap_conf_probe(c, 0.9 / d, &p, err, sizeof err), 0);
    ck_assert(!p.pass && p.aborted);
    cap_conf_close(c);
    /* the same rate with a bound on the mean only (no early stop): its p99 is over 4 D */
    c = open_conf(&o, MD1, "e2el_mean=1000", NULL, 0);
    ck_assert_int_eq(cap_conf_probe(c, 0.9 / d, &p, err, sizeof err), 0);
    ck_assert(!p.aborted);
    ck_assert_msg(p.e2el_p99 > 4 * d, "p99 %g, 4 D %g", p.e2el_p99, 4 * d);
    cap_conf_close(c);
}
END_TEST

/* Goodput: the share the probe reports equals a count, by hand, of the requests CSV of
 * the same scenario at the same rate: measured requests (the middle 80% by arrival) whose
 * TTFT <= 0.5 s and TPOT <= 0.02 s (a one-token request counting TPOT 0, as vLLM does). */
START_TEST(goodput_hand_count)
{
    const double rate = 9.5, ttft = 0.5, tpot = 0.02;
    cap_opts_t o;
    char err[CAP_ERR_MAX];
    cap_conf_t *c = open_conf(&o, SMALL, "ttft=0.5", "tpot=0.02", 0.05);
    cap_probe_t p;
    ck_assert_int_eq(cap_conf_probe(c, rate, &p, err, sizeof err), 0);
    ck_assert(!p.aborted);
    cap_conf_close(c);

    FILE *rq = tmpfile();
    ck_assert_ptr_nonnull(rq);
    char set[64];
    snprintf(set, sizeof set, "workload.poisson.rate_per_s=%.17g", rate);
    const char *sets[] = { set };
    runner_hooks_t h = { .requests_out = rq };
    run_result_t *res = malloc(sizeof *res);
    runner_run_ex(SMALL, sets, 1, &h, res);
    ck_assert_msg(res->rc == 0, "%s", res->err);
    free(res);
    rewind(rq);
    char line[1024];
    long n = 1500, m0 = 150, m1 = 1350, good = 0, seen = 0;
    ck_assert_ptr_nonnull(fgets(line, sizeof line, rq));     /* the header */
    while (fgets(line, sizeof line, rq)) {
        long id, prompt, cached, out, emitted, pre;
        double arr, adm, first, fin, t1, t2;
        int k = sscanf(line, "r%ld,%lf,%lf,%lf,%lf,%ld,%ld,%ld,%ld,%ld,%lf,%lf", &id, &arr, &adm, &first, &fin, &prompt,
                       &cached, &out, &emitted, &pre, &t1, &t2);
        ck_assert_msg(k == 12 || (k == 11 && out == 1), "row: %s", line);
        ck_assert(id >= 0 && id < n);
        if (id < m0 || id >= m1) continue;
        seen++;
        double tp = out > 1 ? (fin - first) / (double)(out - 1) : 0;
        if (first - arr <= ttft && tp <= tpot) good++;
    }
    fclose(rq);
    ck_assert_int_eq(seen, m1 - m0);
    ck_assert_msg(good > 0 && good < seen, "a test of both sides: %ld good of %ld", good, seen);
    ck_assert_double_eq_tol(p.good_share, (double)good / (double)seen, 1e-12);
}
END_TEST

/* Too few requests for the percentile: refused before any run (exit status 2). */
START_TEST(too_few_requests)
{
    cap_opts_t o;
    char err[CAP_ERR_MAX];
    int rc;
    base_opts(&o, SMALL);
    ck_assert_int_eq(cap_parse_slo("ttft_p99.9=2", &o.slo[o.nslo++], err, sizeof err), 0);
    ck_assert_ptr_null(cap_conf_open(&o, NULL, 0, &rc, err, sizeof err));
    ck_assert_int_eq(rc, 2);
    ck_assert_msg(strstr(err, "workload.poisson.count") && strstr(err, "at least 12501"), "%s", err);
}
END_TEST

/* The split key: its values, and the cluster its rewrite writes (one pool of cluster.yaml
 * becomes a prefill pool and a decode pool of its settings, beside the router and the link;
 * the sets of the split's pools apply after it), whose GPUs are each pool's count x TP. */
static const struct {
    const char *in;
    int ok, kind, p, d;
} splits[] = {
    { "colocated", 1, CAP_SPLIT_COLOCATED, 0, 0 }, { "4", 1, CAP_SPLIT_N, 4, 0 }, { "1:2", 1, CAP_SPLIT_PD, 1, 2 },
    { "12:30", 1, CAP_SPLIT_PD, 12, 30 }, { "0", 0, 0, 0, 0 }, { "1:0", 0, 0, 0, 0 }, { "0:1", 0, 0, 0, 0 },
    { ":2", 0, 0, 0, 0 }, { "1:", 0, 0, 0, 0 }, { "1:2:3", 0, 0, 0, 0 }, { "-1", 0, 0, 0, 0 }, { "2x", 0, 0, 0, 0 },
    { "4000:97", 0, 0, 0, 0 }, { "Colocated", 0, 0, 0, 0 }, { "", 0, 0, 0, 0 }, { " 1", 0, 0, 0, 0 },
};

START_TEST(split_values)
{
    cap_split_t sp;
    char err[512];
    int rc = cap_parse_split(splits[_i].in, &sp, err, sizeof err);
    ck_assert_msg((rc == 0) == splits[_i].ok, "\"%s\": rc %d (%s)", splits[_i].in, rc, rc ? err : "");
    if (rc) {
        ck_assert_msg(strstr(err, "split=") != NULL, "%s", err);
        return;
    }
    ck_assert_int_eq(sp.kind, splits[_i].kind);
    ck_assert_int_eq(sp.p, splits[_i].p);
    ck_assert_int_eq(sp.d, splits[_i].d);
}
END_TEST

START_TEST(split_rewrite)
{
    const char *sets[] = { "cluster.kv_transfer.link=nvlink4", "engine.max_num_seqs=8" };
    char *ov = NULL, err[CAP_ERR_MAX];
    ck_assert_int_eq(cap_split_override(CLUSTER, sets, 2, "1:2", &ov, err, sizeof err), 0);
    ck_assert_str_eq(ov, "cluster={router: round_robin, kv_transfer: {link: nvlink4}, pools: {prefill: {count: 1, "
                         "role: prefill}, decode: {count: 2, role: decode}}}");
    free(ov);
    /* N: the pool's count; colocated: as written but the link no pool needs */
    ck_assert_int_eq(cap_split_override(CLUSTER, sets, 2, "3", &ov, err, sizeof err), 0);
    ck_assert_str_eq(ov, "cluster={router: round_robin, pools: {a: {count: 3}}}");
    free(ov);
    ck_assert_int_eq(cap_split_override(CLUSTER, sets, 2, "colocated", &ov, err, sizeof err), 0);
    ck_assert_str_eq(ov, "cluster={router: round_robin, pools: {a: {count: 1}}}");
    free(ov);
    ck_assert_int_eq(cap_split_override(CLUSTER, sets + 1, 1, "colocated", &ov, err, sizeof err), 0);
    ck_assert_ptr_null(ov);                     /* nothing to rewrite */
    /* one engine (small.yaml) split: pools of the scenario's engine */
    ck_assert_int_eq(cap_split_override(SMALL, sets, 1, "2:1", &ov, err, sizeof err), 0);
    ck_assert_str_eq(ov, "cluster={kv_transfer: {link: nvlink4}, pools: {prefill: {count: 2, role: prefill}, decode: "
                         "{count: 1, role: decode}}}");
    /* its GPUs: 2 prefill replicas at TP 2 (a set of the split's pool, after the rewrite) + 1 decode at TP 1 */
    const char *all[] = { sets[0], ov, "cluster.pools.prefill.engine.tensor_parallel_size=2" };
    cap_opts_t o;
    int rc;
    base_opts(&o, SMALL);
    ck_assert_int_eq(cap_parse_slo("ttft_p99=2", &o.slo[o.nslo++], err, sizeof err), 0);
    cap_conf_t *c = cap_conf_open(&o, all, 3, &rc, err, sizeof err);
    ck_assert_msg(c != NULL, "%s", err);
    ck_assert_int_eq(cap_conf_replicas(c), 3);
    ck_assert_int_eq(cap_conf_gpus(c), 5);
    cap_conf_close(c);
    free(ov);
    /* the pool's own keys go with it to both pools (a quoted scalar stays quoted) */
    const char *own[] = { "cluster.kv_transfer.link=nvlink4", "cluster.pools.a.engine={max_num_seqs: 8, kv_cache_dtype: \"auto\"}" };
    ck_assert_int_eq(cap_split_override(CLUSTER, own, 2, "1:1", &ov, err, sizeof err), 0);
    ck_assert_str_eq(ov, "cluster={router: round_robin, kv_transfer: {link: nvlink4}, pools: {prefill: {engine: "
                         "{max_num_seqs: 8, kv_cache_dtype: \"auto\"}, count: 1, role: prefill}, decode: {engine: "
                         "{max_num_seqs: 8, kv_cache_dtype: \"auto\"}, count: 1, role: decode}}}");
    const char *all2[] = { own[0], own[1], ov };
    o.file = CLUSTER;
    c = cap_conf_open(&o, all2, 3, &rc, err, sizeof err);
    ck_assert_msg(c != NULL, "%s", err);
    ck_assert_int_eq(cap_conf_gpus(c), 2);
    cap_conf_close(c);
    free(ov);
    /* refused: no link for a split; a scenario already disaggregated */
    ck_assert_int_eq(cap_split_override(CLUSTER, sets + 1, 1, "1:1", &ov, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "needs cluster.kv_transfer") != NULL, "%s", err);
    ck_assert_int_eq(cap_split_override("tests/data/capacity/disagg.yaml", NULL, 0, "2", &ov, err, sizeof err), -1);
    ck_assert_msg(strstr(err, "has 2 pools") != NULL, "%s", err);
}
END_TEST

int main(void)
{
    const check_test_t names[] = { CHECK_LOOP(slo_names, CHECK_N(slos)), CHECK_LOOP(split_values, CHECK_N(splits)),
                                   CHECK_TEST(split_rewrite) };
    const check_test_t search[] = {
        CHECK_LOOP(md1_closed_form, 2), CHECK_TEST(md1_scaled), CHECK_TEST(early_stop_decides_as_whole_run),
        CHECK_TEST(goodput_hand_count),
        CHECK_TEST(too_few_requests),
    };
    Suite *s = suite_create("capacity");
    check_case(s, "slo", names, CHECK_N(names), 0, NULL);
    check_case(s, "search", search, CHECK_N(search), 120, NULL);
    return check_run(s);
}
