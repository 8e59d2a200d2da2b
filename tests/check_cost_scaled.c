/* check_cost_scaled: the scaled cost model (every step at k times its price) and what `run
 * --error-bars P` builds on it: a closed scenario's timeline scales by k exactly; the error
 * bars bracket a monotone figure at the values the scaling gives, widen with P, name the
 * figure that moves most; a serving load's ranges hold its point; the table and the CSV are
 * byte for byte the same for every -j; without the flag nothing of them appears.  Run from
 * the repository root. */
#include <check.h>
#include "check_run.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost_scaled.h"
#include "runner.h"
#include "setup.h"
#include "sweep.h"

/* A closed scenario: A resident and decoding from t = 0, B arriving after A decoded 8 tokens:
 * every event follows from the steps, so a uniform step-time error scales its whole timeline. */
#define CLOSED "scenarios/default.yaml"
#define SERVING "scenarios/h200-serve-poisson-p600-s64-b2048.yaml"

static void run_at(const char *file, double k, run_result_t *r)
{
    static const char *const sets[] = { "stop.max_time_s=3600" };
    runner_hooks_t h = { .cost_scale = k };
    runner_run_ex(file, sets, 1, &h, r);
    ck_assert_msg(r->rc == 0, "%s at x%g: %s", file, k, r->err);
}

static int win(const run_result_t *r, const char *name)
{
    for (int i = 0; i < r->nwin; i++)
        if (!strcmp(r->win_name[i], name)) return i;
    ck_abort_msg("no window %s", name);
    return -1;
}

static void near(double got, double want, double rel, const char *what)
{
    ck_assert_msg(fabs(got - want) <= rel * fabs(want), "%s: %.9g, expected %.9g (within %g)", what, got, want, rel);
}

/* The scaled model prices a step at k times the inner model's, every part alike; and wraps
 * what it is given (cost_scaled_inner). */
START_TEST(scaled_model_prices_k_times)
{
    setup_t u;
    ck_assert_msg(setup_open(&u, CLOSED, NULL, 0) == 0, "%s", u.err);
    cost_model_t *a = setup_cost_new(&u), *b = setup_cost_new(&u);
    ck_assert(a && b);
    cost_model_t *s = cost_scaled_new(b, 1.25);
    ck_assert(s);
    ck_assert_ptr_eq(cost_scaled_inner(s), b);
    ck_assert_ptr_eq(cost_scaled_inner(a), a);
    /* one decode step of a 1-token request, priced both ways (two fresh models: a model keeps state) */
    route_plan_t plan = { 0 };
    cost_step_t in = { &plan, NULL, 1, 1, 1, 1, 0, 0, 1, 0 };
    cost_breakdown_t pa, ps;
    memset(&pa, 0, sizeof pa);
    memset(&ps, 0, sizeof ps);
    ck_assert(a->step(a, &in, &pa) == 0);
    ck_assert(s->step(s, &in, &ps) == 0);
    ck_assert(pa.total > 0);
    near(ps.total, 1.25 * pa.total, 1e-12, "total");
    near(ps.linear, 1.25 * pa.linear, 1e-12, "linear");
    near(ps.overhead, 1.25 * pa.overhead, 1e-12, "overhead");
    cost_free(a);
    cost_free(s);                 /* frees b */
    setup_close(&u);
}
END_TEST

/* The per-type scaled model: a decode, a mixed and a prefill-only step, each at its own type's
 * factor (cost_step_type names the type as the steps CSVs do); two fresh models priced alike */
START_TEST(types_scaled_each_at_its_own)
{
    setup_t u;
    ck_assert_msg(setup_open(&u, CLOSED, NULL, 0) == 0, "%s", u.err);
    cost_model_t *a = setup_cost_new(&u), *b = setup_cost_new(&u);
    ck_assert(a && b);
    const double k[4] = { 5, 1.25, 0.8, 1.5 };        /* STEP_ANY's never applies */
    cost_model_t *s = cost_scaled_types_new(b, k);
    ck_assert(s);
    ck_assert_ptr_eq(cost_scaled_inner(s), b);
    route_plan_t plan = { 0 };
    const cost_step_t in[3] = { { &plan, NULL, 4, 4, 4, 4, 0, 0, 4, 0 },          /* every row decoding */
                                { &plan, NULL, 300, 3, 2, 3, 0, 0, 3, 0 },        /* one prefilling row */
                                { &plan, NULL, 512, 1, 0, 1, 0, 0, 1, 0 } };      /* none decoding */
    const int want[3] = { STEP_DECODE_ONLY, STEP_MIXED, STEP_PREFILL_ONLY };
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(cost_step_type(&in[i]), want[i]);
        cost_breakdown_t pa, ps;
        memset(&pa, 0, sizeof pa);
        memset(&ps, 0, sizeof ps);
        ck_assert(a->step(a, &in[i], &pa) == 0);
        ck_assert(s->step(s, &in[i], &ps) == 0);
        ck_assert(pa.total > 0);
        near(ps.total, k[want[i]] * pa.total, 1e-12, "total");
        near(ps.linear, k[want[i]] * pa.linear, 1e-12, "linear");
    }
    cost_free(a);
    cost_free(s);                 /* frees b */
    setup_close(&u);
}
END_TEST

/* The noisy model: sigma 0 prices at k exactly; with noise, the same seed draws the same
 * factors in the same order, another seed others, each within a few sigma of k. */
START_TEST(noisy_model_seeded)
{
    setup_t u;
    ck_assert_msg(setup_open(&u, CLOSED, NULL, 0) == 0, "%s", u.err);
    route_plan_t plan = { 0 };
    cost_step_t in = { &plan, NULL, 1, 1, 1, 1, 0, 0, 1, 0 };
    cost_model_t *base = setup_cost_new(&u);
    ck_assert(base);
    cost_breakdown_t pb;
    memset(&pb, 0, sizeof pb);
    ck_assert(base->step(base, &in, &pb) == 0);
    double t[3][8];
    const double sig[3] = { 0, 0.01, 0.01 };
    const uint64_t seed[3] = { 5, 5, 6 };
    for (int m = 0; m < 3; m++) {
        cost_model_t *a = setup_cost_new(&u), *s = a ? cost_noisy_new(a, 1.1, sig[m], seed[m]) : NULL;
        ck_assert(s);
        for (int i = 0; i < 8; i++) {
            cost_breakdown_t o;
            memset(&o, 0, sizeof o);
            ck_assert(s->step(s, &in, &o) == 0);
            t[m][i] = o.total / pb.total;
            if (m == 0) near(t[m][i], 1.1, 1e-12, "sigma 0");
            else ck_assert_msg(fabs(log(t[m][i] / 1.1)) < 6 * sig[m], "factor %g", t[m][i]);
        }
        cost_free(s);
    }
    int differ = 0;
    for (int i = 0; i < 8; i++) differ |= t[1][i] != t[2][i];
    ck_assert(differ);
    /* the same seed again: the same factors */
    cost_model_t *a = setup_cost_new(&u), *s = a ? cost_noisy_new(a, 1.1, 0.01, 5) : NULL;
    ck_assert(s);
    for (int i = 0; i < 8; i++) {
        cost_breakdown_t o;
        memset(&o, 0, sizeof o);
        ck_assert(s->step(s, &in, &o) == 0);
        ck_assert_double_eq(o.total / pb.total, t[1][i]);
    }
    cost_free(s);
    /* the step factors' logs are normal about log k with sd sigma: 4000 draws' mean within 4
     * standard errors, their sd within 5% (4.5 of its standard errors) */
    enum { N = 4000 };
    a = setup_cost_new(&u), s = a ? cost_noisy_new(a, 1.1, 0.05, 12345) : NULL;
    ck_assert(s);
    double sum = 0, sq = 0;
    for (int i = 0; i < N; i++) {
        cost_breakdown_t o;
        memset(&o, 0, sizeof o);
        ck_assert(s->step(s, &in, &o) == 0);
        double z = log(o.total / pb.total / 1.1);
        sum += z, sq += z * z;
    }
    cost_free(s);
    double mean = sum / N, sd = sqrt((sq - N * mean * mean) / (N - 1));
    ck_assert_msg(fabs(mean) < 4 * 0.05 / sqrt(N), "mean log factor %g", mean);
    ck_assert_msg(fabs(sd / 0.05 - 1) < 0.05, "sd of the log factors %g, sigma 0.05", sd);
    cost_free(base);
    setup_close(&u);
}
END_TEST

/* A closed scenario at k times every step: the same steps, every time x k, every rate / k. */
START_TEST(closed_run_scales_exactly)
{
    run_result_t *r1 = malloc(sizeof *r1), *rk = malloc(sizeof *rk);
    ck_assert(r1 && rk);
    run_at(CLOSED, 1, r1);
    run_at(CLOSED, 1.07, rk);
    ck_assert_int_eq(rk->sum.steps, r1->sum.steps);
    ck_assert_int_eq(rk->sum.steps_by_type[STEP_MIXED], r1->sum.steps_by_type[STEP_MIXED]);
    near(rk->sum.makespan, 1.07 * r1->sum.makespan, 1e-9, "makespan");
    near(rk->win_val[win(rk, "b_prefill_s")], 1.07 * r1->win_val[win(r1, "b_prefill_s")], 1e-9, "b_prefill_s");
    near(rk->win_val[win(rk, "a_tok_s")], r1->win_val[win(r1, "a_tok_s")] / 1.07, 1e-9, "a_tok_s");
    ck_assert(rk->win_val[win(rk, "mixed_steps")] == r1->win_val[win(r1, "mixed_steps")]);
    free(r1);
    free(rk);
}
END_TEST

/* A cluster of two replicas, one request each: replica 1's model is the engine's own for its
 * pool (setup's pool_cost), scaled alike: both requests' figures scale by k exactly. */
START_TEST(cluster_pools_scaled)
{
    const char *file = "tests/data/errbars/cluster-closed.yaml";
    run_result_t *r1 = malloc(sizeof *r1), *rk = malloc(sizeof *rk);
    ck_assert(r1 && rk);
    run_at(file, 1, r1);
    run_at(file, 1.1, rk);
    ck_assert_int_eq(r1->nreps, 2);
    ck_assert(r1->reps[0].served == 1 && r1->reps[1].served == 1);
    near(rk->win_val[win(rk, "b_ttft")], 1.1 * r1->win_val[win(r1, "b_ttft")], 1e-9, "b_ttft (replica 1)");
    near(rk->win_val[win(rk, "a_tpot")], 1.1 * r1->win_val[win(r1, "a_tpot")], 1e-9, "a_tpot (replica 0)");
    near(rk->reps[1].busy_s, 1.1 * r1->reps[1].busy_s, 1e-9, "replica 1 busy");
    near(rk->sum.makespan, 1.1 * r1->sum.makespan, 1e-9, "makespan");
    free(r1);
    free(rk);
}
END_TEST

/* ---- run --error-bars through the sweep: the table and the CSV as strings ---- */
typedef struct outs {
    char *table, *csv, *err, *json;
    size_t nt, nc, ne, nj;
    int rc;
} outs_t;

static void run_sweep(outs_t *o, const char *const *files, int nf, const sweep_t *sw, int jobs, double bars,
                      const goodput_slo_t *slo)
{
    memset(o, 0, sizeof *o);
    FILE *t = open_memstream(&o->table, &o->nt), *c = open_memstream(&o->csv, &o->nc);
    FILE *e = open_memstream(&o->err, &o->ne), *j = open_memstream(&o->json, &o->nj);
    ck_assert(t && c && e && j);
    static const char *const sets[] = { "stop.max_time_s=3600" };
    sweep_cfg_t cfg = { .files = files, .nfiles = nf, .sets = sets, .nsets = 1, .sw = sw, .jobs = jobs,
                        .table = t, .csv = c, .json = j, .err = e, .best = e, .error_bars = bars, .goodput = slo };
    o->rc = sweep_run(&cfg);
    fclose(t);
    fclose(c);
    fclose(e);
    fclose(j);
}

static void outs_free(outs_t *o)
{
    free(o->table);
    free(o->csv);
    free(o->err);
    free(o->json);
}

/* Field `col` of CSV row `row` (1: the first after the header) as a string (static buffer;
 * NULL when there is no such column).  The fields here hold no quotes or commas. */
static const char *field(const char *csv, int row, const char *col)
{
    static char out[256];
    const char *hdr = csv, *hend = strchr(csv, '\n');
    ck_assert(hend);
    int idx = -1, k = 0;
    for (const char *p = hdr; p < hend; k++) {
        const char *q = memchr(p, ',', (size_t)(hend - p));
        if (!q) q = hend;
        if ((size_t)(q - p) == strlen(col) && !strncmp(p, col, (size_t)(q - p))) idx = k;
        p = q + (q < hend);
        if (q == hend) break;
    }
    if (idx < 0) return NULL;
    const char *line = hend + 1;
    for (int r = 1; r < row; r++) {
        line = strchr(line, '\n');
        ck_assert(line);
        line++;
    }
    const char *lend = strchr(line, '\n');
    ck_assert(lend);
    for (int i = 0; i < idx; i++) {
        line = memchr(line, ',', (size_t)(lend - line));
        ck_assert(line);
        line++;
    }
    const char *q = memchr(line, ',', (size_t)(lend - line));
    if (!q) q = lend;
    snprintf(out, sizeof out, "%.*s", (int)(q - line), line);
    return out;
}

static double num(const char *csv, int row, const char *col)
{
    const char *f = field(csv, row, col);
    ck_assert_msg(f && *f, "no value in column %s", col);
    return strtod(f, NULL);
}

/* A monotone figure of a closed run, decode tok/s: low = value / (1 + P/100) and high =
 * value / (1 - P/100), as the scaling gives them, bracketing the value; the range widens with
 * P; the figure that moves most is the rate, by 1 / (1 - p^2) % per 1%. */
START_TEST(bars_bracket_a_monotone_figure)
{
    static const char *const files[] = { CLOSED };
    double lo[2], hi[2], v = NAN;
    const double P[2] = { 1, 5 };
    for (int i = 0; i < 2; i++) {
        outs_t o;
        run_sweep(&o, files, 1, NULL, 1, P[i], NULL);
        ck_assert_msg(o.rc == 0, "%s", o.err);
        double x = num(o.csv, 1, "a_tok_s");
        if (i) near(x, v, 0, "the point run at every P");
        v = x;
        lo[i] = num(o.csv, 1, "a_tok_s_lo");
        hi[i] = num(o.csv, 1, "a_tok_s_hi");
        near(lo[i], v / (1 + P[i] / 100), 2e-6, "a_tok_s_lo");
        near(hi[i], v / (1 - P[i] / 100), 2e-6, "a_tok_s_hi");
        ck_assert(lo[i] < v && v < hi[i]);
        near(num(o.csv, 1, "b_prefill_s_lo"), num(o.csv, 1, "b_prefill_s") * (1 - P[i] / 100), 2e-6, "b_prefill_s_lo");
        near(num(o.csv, 1, "error_bars_pct"), P[i], 0, "error_bars_pct");
        const char *amp = field(o.csv, 1, "amplified");
        ck_assert_msg(amp && !strcmp(amp, "a_tok_s"), "amplified: %s", amp ? amp : "(none)");
        double p = P[i] / 100;
        near(num(o.csv, 1, "amplification"), 1 / (1 - p * p), 2e-5, "amplification");
        ck_assert_msg(strstr(o.table, "amplification: a_tok_s moves the most"), "%s", o.table);
        ck_assert(strstr(o.table, "low           high"));
        outs_free(&o);
    }
    ck_assert(lo[1] < lo[0] && hi[1] > hi[0]);
}
END_TEST

/* A serving load near saturation: every range holds its point (the least and the most of three
 * runs, one of them the point's), TTFT's widens with P, and goodput's range is the goodput of
 * the scaled runs (not the point's +-P). */
START_TEST(bars_serving_ranges)
{
    static const char *const files[] = { SERVING };
    goodput_slo_t slo = GOODPUT_SLO_NONE;
    char gerr[256];
    ck_assert(goodput_slo_parse(&slo, "ttft:3000", gerr, sizeof gerr) == 0);
    ck_assert(goodput_slo_parse(&slo, "tpot:200", gerr, sizeof gerr) == 0);
    static const char *const cols[] = { "p99_ttft_ms", "median_tpot_ms", "p99_itl_ms", "request_goodput",
                                        "output_throughput", "ttft_mean_p90", "makespan_s" };
    double w[2];
    for (int i = 0; i < 2; i++) {
        outs_t o;
        run_sweep(&o, files, 1, NULL, 1, i ? 5 : 1, &slo);
        ck_assert_msg(o.rc == 0, "%s", o.err);
        for (size_t c = 0; c < sizeof cols / sizeof *cols; c++) {
            char l[64], h[64];
            snprintf(l, sizeof l, "%s_lo", cols[c]);
            snprintf(h, sizeof h, "%s_hi", cols[c]);
            double v = num(o.csv, 1, cols[c]);
            ck_assert_msg(num(o.csv, 1, l) <= v && v <= num(o.csv, 1, h), "%s outside [%s, %s]", cols[c], l, h);
            ck_assert_msg(num(o.csv, 1, l) < num(o.csv, 1, h), "%s: no range", cols[c]);
        }
        w[i] = (num(o.csv, 1, "p99_ttft_ms_hi") - num(o.csv, 1, "p99_ttft_ms_lo")) / num(o.csv, 1, "p99_ttft_ms");
        ck_assert(strstr(o.table, "P99 TTFT (ms):"));
        ck_assert(strstr(o.table, "] \n") == NULL);
        outs_free(&o);
    }
    ck_assert(w[1] > w[0]);
}
END_TEST

/* -j 1 and -j 4 (each run's three simulations spread over the threads): the same bytes, a
 * sweep of two files, a closed one and a serving one */
START_TEST(bars_same_for_every_j)
{
    static const char *const files[] = { CLOSED, SERVING };
    sweep_t sw = { 0 };
    char err[SWEEP_ERR_MAX];
    ck_assert(sweep_add(&sw, "env.VLLM_1CAT_PREFILL_PACE_STEPS=0,4", err, sizeof err) == 0);
    outs_t a, b;
    run_sweep(&a, files, 2, &sw, 1, 3, NULL);
    run_sweep(&b, files, 2, &sw, 4, 3, NULL);
    ck_assert_msg(a.rc == 0 && b.rc == 0, "%s %s", a.err, b.err);
    ck_assert(a.nt == b.nt && !memcmp(a.table, b.table, a.nt));
    ck_assert(a.nc == b.nc && !memcmp(a.csv, b.csv, a.nc));
    ck_assert(a.nj == b.nj && !memcmp(a.json, b.json, a.nj));
    ck_assert(strstr(a.json, "\"error_bars\": {\"pct\": 3, \"amplified\": \"a_tok_s\""));
    ck_assert(strstr(a.json, "\"p99_ttft_ms\": ["));
    ck_assert(strstr(a.csv, ",error_bars_pct,"));
    /* 4 rows, every one with its amplification */
    int rows = 0;
    for (const char *p = a.csv; (p = strchr(p, '\n')); p++) rows++;
    ck_assert_int_eq(rows, 5);
    for (int r = 1; r <= 4; r++) ck_assert(num(a.csv, r, "amplification") > 0);
    outs_free(&a);
    outs_free(&b);
    sweep_free(&sw);
}
END_TEST

/* Without --error-bars: no column, no line of them; the point run's figures as with them. */
START_TEST(no_bars_no_trace)
{
    static const char *const files[] = { CLOSED };
    outs_t a, b;
    run_sweep(&a, files, 1, NULL, 1, 0, NULL);
    run_sweep(&b, files, 1, NULL, 1, 3, NULL);
    ck_assert(a.rc == 0 && b.rc == 0);
    ck_assert(!strstr(a.csv, "_lo") && !strstr(a.csv, "amplif"));
    ck_assert(!strstr(a.table, "error bars") && !strstr(a.table, "amplification"));
    ck_assert(!strstr(a.json, "error_bars") && strstr(b.json, "error_bars"));
    ck_assert_str_eq(field(a.csv, 1, "a_tok_s"), field(b.csv, 1, "a_tok_s"));
    ck_assert_str_eq(field(a.csv, 1, "b_prefill_s"), field(b.csv, 1, "b_prefill_s"));
    /* the CSV with bars is the CSV without, then its own columns */
    const char *ha = strchr(a.csv, '\n');
    ck_assert(!strncmp(a.csv, b.csv, (size_t)(ha - a.csv)) && b.csv[ha - a.csv] == ',');
    outs_free(&a);
    outs_free(&b);
}
END_TEST

int main(void)
{
    const check_test_t tests[] = {
        CHECK_TEST(scaled_model_prices_k_times), CHECK_TEST(types_scaled_each_at_its_own), CHECK_TEST(noisy_model_seeded), CHECK_TEST(closed_run_scales_exactly), CHECK_TEST(cluster_pools_scaled),
        CHECK_TEST(bars_bracket_a_monotone_figure), CHECK_TEST(bars_serving_ranges),
        CHECK_TEST(bars_same_for_every_j), CHECK_TEST(no_bars_no_trace),
    };
    return check_main("cost_scaled", "error bars", tests, CHECK_N(tests), 120, NULL);
}
