/* check_output: what a run writes besides its table's numbers -- the per-request CSV (one
 * row per request, its fields consistent with each other), the latency windows' percentiles
 * against an exact computation over those rows, and the published columns shown only for
 * the configuration they belong to. */
#include <check.h>
#include "check_run.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runner.h"
#include "scenario.h"
#include "workload.h"

#define POISSON "scenarios/bench-poisson-100k.yaml"
#define NREQ 400

static const char *const lat_sets[] = {
    "workload.poisson.count=400",
    "measure.ttft_p50={kind: ttft, stat: p50}",
    "measure.ttft_p99={kind: ttft, stat: p99}",
    "measure.tpot_p90={kind: tpot, stat: p90}",
    "measure.e2e_mean={kind: e2e}",
    "measure.e2e_p90={kind: e2e, stat: p90}",
    "measure.queue_p99={kind: queueing, stat: p99}",
};
#define NLAT ((int)(sizeof lat_sets / sizeof lat_sets[0]))

enum { C_ID, C_ARR, C_ADM, C_FIRST, C_FIN, C_PROMPT, C_CACHED, C_OUT, C_EMIT, C_PREEMPT, C_TTFT, C_TPOT, C_REP, C_PREP, C_XFER, NCOL };

typedef struct {
    int n;
    double v[NREQ + 8][NCOL];     /* NAN: empty field */
} rows_t;

static int win_index(const run_result_t *r, const char *name)
{
    for (int i = 0; i < r->nwin; i++)
        if (!strcmp(r->win_name[i], name)) return i;
    ck_abort_msg("no window %s", name);
    return -1;
}

/* Parse the requests CSV: the header, then rows of exactly NCOL fields. */
static void read_rows(FILE *f, rows_t *R)
{
    char line[1024];
    rewind(f);
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    ck_assert_str_eq(line, "id,arrival_s,admitted_s,first_token_s,finished_s,prompt_tokens,cached_tokens,"
                           "output_tokens,emitted_tokens,preemptions,ttft_s,tpot_s,replica,prefill_replica,kv_transfer_s\n");
    R->n = 0;
    while (fgets(line, sizeof line, f)) {
        ck_assert_int_lt(R->n, NREQ + 8);
        int k = 0;
        char *p = line;
        for (;;) {
            char *end = p + strcspn(p, ",\n");
            char save = *end;
            *end = 0;
            ck_assert_int_lt(k, NCOL);
            R->v[R->n][k] = k == C_ID ? (double)R->n : (*p ? strtod(p, NULL) : NAN);
            k++;
            if (save != ',') break;
            p = end + 1;
        }
        ck_assert_int_eq(k, NCOL);
        R->n++;
    }
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The exact p-quantile (rank p*(n-1), linear between neighbours) of column-derived values
 * of the finished rows; *n gets their count. */
static double exact_q(const rows_t *R, double (*val)(const double *), double p, long *n)
{
    double *x = malloc((size_t)R->n * sizeof *x);
    long m = 0;
    for (int i = 0; i < R->n; i++) {
        double v = isnan(R->v[i][C_FIN]) ? NAN : val(R->v[i]);
        if (!isnan(v)) x[m++] = v;
    }
    ck_assert_int_gt(m, 0);
    qsort(x, (size_t)m, sizeof *x, cmp);
    double h = p * (double)(m - 1);
    long lo = (long)floor(h), hi = lo + 1 < m ? lo + 1 : lo;
    double q = x[lo] + (h - (double)lo) * (x[hi] - x[lo]);
    free(x);
    *n = m;
    return q;
}

static double v_ttft(const double *r) { return r[C_FIRST] - r[C_ARR]; }
static double v_tpot(const double *r) { return r[C_OUT] > 1 ? (r[C_FIN] - r[C_FIRST]) / (r[C_OUT] - 1) : NAN; }
static double v_e2e(const double *r) { return r[C_FIN] - r[C_ARR]; }
static double v_queue(const double *r) { return r[C_ADM] - r[C_ARR]; }

static void run_with_requests(const char *path, const char *const *sets, int ns, run_result_t *r, rows_t *R)
{
    FILE *rf = tmpfile();
    ck_assert_ptr_nonnull(rf);
    runner_hooks_t h = { .requests_out = rf };
    runner_run_ex(path, sets, ns, &h, r);
    ck_assert_msg(r->rc == 0, "%s", r->err);
    fflush(rf);
    read_rows(rf, R);
    fclose(rf);
}

/* Printed with %.9g, the CSV's times (< 1000 s here) carry an absolute error below 1e-6 s,
 * and a difference of two of them twice that. */
#define CLOSE(a, b) ck_assert_msg(fabs((a) - (b)) <= 1e-6 * fabs(b) + 2e-6, "%.9g vs %.9g", (a), (b))

START_TEST(requests_rows_and_fields)
{
    run_result_t *r = malloc(sizeof *r);
    rows_t *R = malloc(sizeof *R);
    run_with_requests(POISSON, lat_sets, NLAT, r, R);
    ck_assert_int_eq(R->n, NREQ);                  /* every generated request, once */
    ck_assert_int_eq(r->sum.requests_finished, NREQ);
    for (int i = 0; i < R->n; i++) {
        const double *v = R->v[i];
        ck_assert(v[C_ARR] <= v[C_ADM] && v[C_ADM] <= v[C_FIRST] && v[C_FIRST] <= v[C_FIN]);
        ck_assert(v[C_CACHED] >= 0 && v[C_CACHED] <= v[C_PROMPT]);
        ck_assert(v[C_EMIT] == v[C_OUT]);
        ck_assert(v[C_PREEMPT] >= 0);
        CLOSE(v[C_TTFT], v[C_FIRST] - v[C_ARR]);
        if (v[C_OUT] > 1) CLOSE(v[C_TPOT], (v[C_FIN] - v[C_FIRST]) / (v[C_OUT] - 1));
        else ck_assert(isnan(v[C_TPOT]));
        ck_assert(v[C_REP] == 0);                  /* one replica, no disaggregation */
        ck_assert(isnan(v[C_PREP]) && isnan(v[C_XFER]));
    }
    free(R);
    free(r);
}
END_TEST

START_TEST(percentiles_are_exact_on_a_small_run)
{
    run_result_t *r = malloc(sizeof *r);
    rows_t *R = malloc(sizeof *R);
    run_with_requests(POISSON, lat_sets, NLAT, r, R);
    struct { const char *win; double (*val)(const double *); double p; } cases[] = {
        { "ttft_p50", v_ttft, 0.50 }, { "ttft_p99", v_ttft, 0.99 }, { "tpot_p90", v_tpot, 0.90 },
        { "e2e_p90", v_e2e, 0.90 }, { "queue_p99", v_queue, 0.99 },
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        long n;
        double want = exact_q(R, cases[k].val, cases[k].p, &n);
        int i = win_index(r, cases[k].win);
        CLOSE(r->win_val[i], want);
        ck_assert(r->win_has_dist[i]);
        ck_assert(r->win_dist[i].exact);
        ck_assert_int_eq(r->win_dist[i].n, n);
    }
    /* the distribution line of a window carries the same percentiles as stat: windows */
    int t50 = win_index(r, "ttft_p50"), t99 = win_index(r, "ttft_p99"), tm = win_index(r, "ttft_mean");
    ck_assert_double_eq(r->win_dist[tm].p50, r->win_val[t50]);
    ck_assert_double_eq(r->win_dist[tm].p99, r->win_val[t99]);
    /* e2e's mean over the rows */
    double sum = 0;
    for (int j = 0; j < R->n; j++) sum += v_e2e(R->v[j]);
    CLOSE(r->win_val[win_index(r, "e2e_mean")], sum / R->n);
    free(R);
    free(r);
}
END_TEST

START_TEST(unfinished_requests_are_listed)
{
    /* the reference experiment stops when B finishes: A is still decoding */
    run_result_t *r = malloc(sizeof *r);
    rows_t *R = malloc(sizeof *R);
    run_with_requests("scenarios/default.yaml", NULL, 0, r, R);
    ck_assert_int_eq(R->n, 2);
    int unfinished = 0;
    for (int i = 0; i < R->n; i++)
        if (isnan(R->v[i][C_FIN])) {
            unfinished++;
            ck_assert(R->v[i][C_EMIT] < R->v[i][C_OUT]);
            ck_assert(isnan(R->v[i][C_TPOT]));
        }
    ck_assert_int_eq(unfinished, 1);
    free(R);
    free(r);
}
END_TEST

static int table_has(const run_result_t *r, const char *what)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    report_table(m, r);
    fclose(m);
    int has = strstr(buf, what) != NULL;
    free(buf);
    return has;
}

START_TEST(published_only_for_its_configuration)
{
    run_result_t *r = malloc(sizeof *r);
    runner_run("scenarios/default.yaml", NULL, 0, NULL, r);
    ck_assert(r->rc == 0);
    ck_assert(table_has(r, "published"));
    ck_assert(!r->ref_off[0]);
    ck_assert(table_has(r, "KV cache: "));
    ck_assert(table_has(r, "cost model: "));
    /* the value the file already has, and a new name: still the same configuration */
    const char *same[] = { "env.VLLM_1CAT_PREFILL_PACE_STEPS=0", "name=renamed" };
    runner_run("scenarios/default.yaml", same, 2, NULL, r);
    ck_assert(r->rc == 0);
    ck_assert_msg(!r->ref_off[0], "%s", r->ref_off);
    ck_assert(table_has(r, " error\n"));
    /* a window added, or one redefined: the others keep their figures */
    const char *win[] = { "measure.x={kind: e2e, stat: p99}", "measure.b_prefill_s={kind: duration}" };
    runner_run("scenarios/default.yaml", win, 2, NULL, r);
    ck_assert(r->rc == 0);
    ck_assert_msg(!r->ref_off[0], "%s", r->ref_off);
    ck_assert(r->win_has_ref[0] && !r->win_has_ref[1]);   /* a_tok_s kept, b_prefill_s not */
    ck_assert(table_has(r, " error\n"));
    /* another pacing value: the figures are for another configuration */
    const char *other[] = { "name=renamed", "env.VLLM_1CAT_PREFILL_PACE_STEPS=4" };
    runner_run("scenarios/default.yaml", other, 2, NULL, r);
    ck_assert(r->rc == 0);
    ck_assert(strstr(r->ref_off, "env.VLLM_1CAT_PREFILL_PACE_STEPS"));
    ck_assert(!strstr(r->ref_off, "name"));
    ck_assert(!table_has(r, " error\n"));
    ck_assert(!table_has(r, "%"));
    /* a cluster made of it: another configuration (the digest left the cluster out) */
    const char *cl[] = { "cluster={pools: {p: {count: 1, role: prefill}, d: {count: 1, role: decode}}, kv_transfer: {link: pcie3}}" };
    runner_run("scenarios/default.yaml", cl, 1, NULL, r);
    ck_assert(r->rc == 0);
    ck_assert_msg(strstr(r->ref_off, "cluster"), "%s", r->ref_off);
    ck_assert(!table_has(r, " error\n"));
    const char *one[] = { "cluster.pools.main.count=1", "cluster.router=random" };
    runner_run("scenarios/default.yaml", one, 2, NULL, r);
    ck_assert(r->rc == 0);
    ck_assert_msg(strstr(r->ref_off, "cluster.pools.main.count") && strstr(r->ref_off, "cluster.router"), "%s", r->ref_off);
    free(r);
}
END_TEST

/* The loader's first Poisson arrival (workload_first_poisson: a scenario whose first request
 * would arrive after stop.max_time_s is refused by it) is the run's, for several seeds. */
START_TEST(first_poisson_arrival_is_the_runs)
{
    static const char *const seeds[] = { "seed=1", "seed=7", "seed=123456" };
    run_result_t *r = malloc(sizeof *r);
    rows_t *R = malloc(sizeof *R);
    for (int k = 0; k < 3; k++) {
        const char *sets[] = { "workload.poisson.count=20", "workload.poisson.start_s=1.5", seeds[k] };
        scenario_t sc;
        char err[SCN_ERR_MAX];
        ck_assert_msg(scn_load(POISSON, sets, 3, &sc, err) == 0, "%s", err);
        double t = workload_first_poisson(&sc);
        scn_free(&sc);
        run_with_requests(POISSON, sets, 3, r, R);
        ck_assert_int_eq(R->n, 20);
        double first = INFINITY;
        for (int i = 0; i < R->n; i++)
            if (R->v[i][C_ARR] < first) first = R->v[i][C_ARR];
        ck_assert(t > 1.5);
        CLOSE(first, t);
    }
    free(R);
    free(r);
}
END_TEST

/* A run that stopped at stop.max_time_s idle (the next arrival after it) says so: its
 * simulated time is the last step's end, short of the stop. */
START_TEST(idle_stop_is_told)
{
    run_result_t *r = malloc(sizeof *r);
    const char *sets[] = { "workload.poisson.count=50", "workload.poisson.rate_per_s=0.05", "stop.max_time_s=60" };
    runner_run(POISSON, sets, 3, NULL, r);
    ck_assert_msg(r->rc == 0, "%s", r->err);
    ck_assert(r->sum.stopped_by_time && r->sum.makespan < 60 && r->sum.steps > 0);
    ck_assert(table_has(r, "[stopped: max_time_s 60 s; idle after the last step, nothing more to run before it]"));
    free(r);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("output");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, requests_rows_and_fields);
    tcase_add_test(tc, percentiles_are_exact_on_a_small_run);
    tcase_add_test(tc, unfinished_requests_are_listed);
    tcase_add_test(tc, published_only_for_its_configuration);
    tcase_add_test(tc, first_poisson_arrival_is_the_runs);
    tcase_add_test(tc, idle_stop_is_told);
    suite_add_tcase(s, tc);
    return check_run(s);
}
