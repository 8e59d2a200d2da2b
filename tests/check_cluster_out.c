/* check_cluster_out: what a cluster's run reports of its replicas -- the replicas CSV (one row
 * per replica), the CSV's pool columns, the table's pool and replica lines, and the requests
 * CSV's replica column -- checked against each other and against what the requests did:
 * requests served per replica against the requests CSV, the time-weighted mean queue against
 * Little's law over the requests' waits, busy shares against the steps CSV's durations. */
#include <check.h>
#include "check_run.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "runner.h"

#define MAXR 8

/* A scenario file: the dense model, a roofline H200, a Poisson load on replicas behind a router. */
static const char *co_file(void)
{
    static char path[128];
    char cwd[512];
    check_tmp_path(path, sizeof path, "pacesim-cluster-out");
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
    fprintf(f, "name: c\nseed: 5\nmodel: %s/models/llama-3.1-8b.yaml\n"
               "hardware: {analytic: {tflops: 700, tbps: 4.8, mem_gib: 80}}\n"
               "engine: {max_num_batched_tokens: 2048, max_num_seqs: 16, max_model_len: 16384, num_gpu_blocks: 20000}\n"
               "workload:\n  poisson: {rate_per_s: 60, count: 1500, prompt: {dist: lognormal, mu: 7.0, sigma: 0.6,"
               " min: 16, max: 4096}, output: {dist: lognormal, mu: 4.5, sigma: 0.6, min: 1, max: 512}}\n"
               "cluster:\n  router: least_outstanding\n  pools: {a: {count: 2}, b: {count: 1, engine: {max_num_seqs: 8}}}\n",
            cwd);
    ck_assert_int_eq(fclose(f), 0);
    return path;
}

/* A CSV of numeric fields (empty: NAN; the pool name column kept apart) after its header. */
typedef struct {
    int n, ncol;
    char head[512];
    double v[4096][16];
    char text[4096][16];          /* column `textcol`'s text */
} csv_t;

static void csv_read(FILE *f, csv_t *c, int textcol)
{
    char line[1024];
    rewind(f);
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    snprintf(c->head, sizeof c->head, "%s", line);
    c->n = 0;
    c->ncol = 0;
    while (fgets(line, sizeof line, f)) {
        ck_assert_int_lt(c->n, 4096);
        int k = 0;
        char *p = line;
        for (;;) {
            char *end = p + strcspn(p, ",\n");
            char save = *end;
            *end = 0;
            ck_assert_int_lt(k, 16);
            c->v[c->n][k] = *p ? strtod(p, NULL) : NAN;
            if (k == textcol) snprintf(c->text[c->n], sizeof c->text[c->n], "%s", p);
            k++;
            if (save != ',') break;
            p = end + 1;
        }
        if (c->ncol == 0) c->ncol = k;
        ck_assert_int_eq(k, c->ncol);
        c->n++;
    }
}

enum { R_REP, R_POOL, R_TP, R_SERVED, R_PREFILLED, R_STEPS, R_BATCH, R_KV, R_KVPEAK, R_HIT, R_QMEAN, R_QPEAK, R_BUSY };
enum { Q_ARR = 1, Q_ADM = 2, Q_FIN = 4, Q_PREEMPT = 9, Q_REP = 12, Q_PREP = 13, Q_XFER = 14 };
enum { S_REP = 0, S_STEP = 1, S_DUR = 3 };   /* a cluster's steps CSV: replica, step, t_start_s, dur_s */

static char *table_text(const run_result_t *r)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    report_table(m, r);
    fclose(m);
    return buf;
}

#define CLOSE(a, b, tol) ck_assert_msg(fabs((a) - (b)) <= (tol) * fabs(b) + 1e-6, "%.9g vs %.9g", (double)(a), (double)(b))

START_TEST(replica_outputs_agree_with_the_requests)
{
    FILE *rf = tmpfile(), *qf = tmpfile();
    ck_assert(rf && qf);
    run_result_t *r = malloc(sizeof *r);
    csv_t *reps = malloc(sizeof *reps), *reqs = malloc(sizeof *reqs);
    runner_hooks_t h = { .replicas_out = rf, .requests_out = qf, .summary = -1 };
    runner_run_ex(co_file(), NULL, 0, &h, r);
    ck_assert_msg(r->rc == 0, "%s", r->err);
    fflush(rf);
    fflush(qf);
    csv_read(rf, reps, R_POOL);
    csv_read(qf, reqs, -1);
    ck_assert_str_eq(reps->head, "replica,pool,tp,served,prefilled,steps,mean_batch,kv_use,kv_peak,prefix_hit,"
                                 "queue_mean,queue_peak,busy\n");
    ck_assert_int_eq(reps->n, 3);
    ck_assert_int_eq(reqs->n, 1500);
    ck_assert_str_eq(reps->text[0], "a");
    ck_assert_str_eq(reps->text[2], "b");
    double makespan = r->sum.makespan;
    long served[MAXR] = { 0 };
    double wait[MAXR] = { 0 };
    for (int i = 0; i < reqs->n; i++) {
        const double *v = reqs->v[i];
        int k = (int)v[Q_REP];
        ck_assert(k >= 0 && k < 3);
        ck_assert(isnan(v[Q_PREP]) && isnan(v[Q_XFER]));      /* not disaggregated */
        ck_assert(v[Q_PREEMPT] == 0);                          /* (Little's law below needs one wait each) */
        if (!isnan(v[Q_FIN])) served[k]++;
        wait[k] += v[Q_ADM] - v[Q_ARR];                        /* no router latency: it waits from arrival */
    }
    long total = 0;
    for (int k = 0; k < 3; k++) {
        const double *v = reps->v[k];
        ck_assert_int_eq((long)v[R_REP], k);
        ck_assert_int_eq((long)v[R_SERVED], served[k]);
        ck_assert_int_eq((long)v[R_PREFILLED], 0);
        total += served[k];
        /* the waiting queue integrated over time = the requests' waits added (Little's law) */
        CLOSE(v[R_QMEAN], wait[k] / makespan, 1e-4);
        ck_assert(v[R_QMEAN] <= v[R_QPEAK]);
        ck_assert(v[R_BUSY] > 0 && v[R_BUSY] <= 1);
        ck_assert(v[R_KV] > 0 && v[R_KV] <= v[R_KVPEAK] && v[R_KVPEAK] <= 1);
        ck_assert(v[R_BATCH] >= 1 && v[R_BATCH] <= (k < 2 ? 16 : 8));
        ck_assert(v[R_HIT] == 0);                              /* no prefix caching */
        /* the table's kept copy is the CSV's */
        ck_assert_int_eq(r->reps[k].served, served[k]);
        ck_assert_int_eq(r->reps[k].steps, (long)v[R_STEPS]);
    }
    ck_assert_int_eq(total, r->sum.requests_finished);
    ck_assert_int_eq(reps->v[0][R_STEPS] + reps->v[1][R_STEPS] + reps->v[2][R_STEPS], r->sum.steps);
    /* the pools: their replicas added; the queue and busy share per replica */
    ck_assert_int_eq(r->npools, 2);
    ck_assert_int_eq(r->nreps, 3);
    run_load_fig_t a, b;
    run_load_figures(&r->pools[0], &a);
    run_load_figures(&r->pools[1], &b);
    ck_assert_int_eq(r->pools[0].replicas, 2);
    ck_assert_int_eq(r->pools[0].served, served[0] + served[1]);
    CLOSE(a.queue_mean, (reps->v[0][R_QMEAN] + reps->v[1][R_QMEAN]) / 2, 1e-5);
    CLOSE(a.busy, (reps->v[0][R_BUSY] + reps->v[1][R_BUSY]) / 2, 1e-5);
    CLOSE(a.kv_peak, fmax(reps->v[0][R_KVPEAK], reps->v[1][R_KVPEAK]), 1e-5);
    CLOSE(b.busy, reps->v[2][R_BUSY], 1e-5);
    ck_assert_int_eq(r->pools[1].served, served[2]);
    /* the table: a line per pool, and per replica */
    char *t = table_text(r);
    ck_assert_msg(strstr(t, "   pool a: 2 replicas x TP1, served ") && strstr(t, "   pool b: 1 replica x TP1, served ")
                  && strstr(t, "     replica 0: served ") && strstr(t, "     replica 2: served "), "%s", t);
    free(t);
    fclose(rf);
    fclose(qf);
    free(reps);
    free(reqs);
    free(r);
}
END_TEST

/* the replicas' busy shares add up to every step's duration (the steps CSV) over the makespan;
 * the steps CSV's rows of replica k are its steps in the replicas CSV, numbered 1, 2, ... in
 * order; the run CSV's pool columns are the pools' figures */
START_TEST(busy_share_and_pool_columns)
{
    FILE *rf = tmpfile(), *sf = tmpfile(), *cf = tmpfile();
    ck_assert(rf && sf && cf);
    run_result_t *r = malloc(sizeof *r);
    csv_t *reps = malloc(sizeof *reps), *steps = malloc(sizeof *steps);
    const char *sets[] = { "cluster.pools.a.count=1", "cluster.pools.b.count=1", "workload.poisson.count=300" };
    runner_hooks_t h = { .replicas_out = rf, .steps_out = sf, .summary = -1 };
    runner_run_ex(co_file(), sets, 3, &h, r);
    ck_assert_msg(r->rc == 0, "%s", r->err);
    fflush(rf);
    fflush(sf);
    csv_read(rf, reps, R_POOL);
    csv_read(sf, steps, -1);
    double busy = 0;
    for (int i = 0; i < steps->n; i++) busy += steps->v[i][S_DUR];
    ck_assert_int_eq(reps->n, 2);
    CLOSE(reps->v[0][R_BUSY] + reps->v[1][R_BUSY], busy / r->sum.makespan, 1e-5);
    ck_assert_msg(!strncmp(steps->head, "replica,step,t_start_s,dur_s,", 29), "%s", steps->head);
    long nstep[2] = { 0, 0 };
    for (int i = 0; i < steps->n; i++) {
        int k = (int)steps->v[i][S_REP];
        ck_assert(k == 0 || k == 1);
        ck_assert_int_eq((long)steps->v[i][S_STEP], ++nstep[k]);
    }
    ck_assert_int_gt(nstep[0], 0);
    ck_assert_int_gt(nstep[1], 0);
    ck_assert_int_eq(nstep[0], (long)reps->v[0][R_STEPS]);
    ck_assert_int_eq(nstep[1], (long)reps->v[1][R_STEPS]);
    /* the run CSV: the existing columns, then per pool its nine */
    report_csv_header(cf, r);
    report_csv_row(cf, r);
    fflush(cf);
    rewind(cf);
    char head[8192], row[8192];
    ck_assert_ptr_nonnull(fgets(head, sizeof head, cf));
    ck_assert_ptr_nonnull(fgets(row, sizeof row, cf));
    ck_assert(strstr(head, ",pool_a_replicas,pool_a_served,pool_a_mean_batch,pool_a_kv_use,pool_a_kv_peak,"
                           "pool_a_prefix_hit,pool_a_queue_mean,pool_a_queue_peak,pool_a_busy,pool_b_replicas,"));
    /* the pool b columns of the row: its replica's */
    int nf = 0;
    char *fields[128], *p = row;
    for (char *tok; nf < 128 && (tok = strsep(&p, ",\n"));) fields[nf++] = tok;
    ck_assert_int_ge(nf, 18);
    int last = nf - 1 - (fields[nf - 1][0] == 0);   /* the empty field after the newline */
    ck_assert_int_eq(atoi(fields[last - 8]), 1);                       /* replicas */
    ck_assert_int_eq(atol(fields[last - 7]), (long)reps->v[1][R_SERVED]);
    CLOSE(strtod(fields[last], NULL), reps->v[1][R_BUSY], 1e-5);
    CLOSE(strtod(fields[last - 2], NULL), reps->v[1][R_QMEAN], 1e-5);
    fclose(rf);
    fclose(sf);
    fclose(cf);
    free(reps);
    free(steps);
    free(r);
}
END_TEST

/* a run of more replicas than the table lists: the pools' lines and a note; the replicas CSV has
 * every one.  A run without cluster: has no pool line and its one replica in the replicas CSV. */
START_TEST(many_replicas_and_one)
{
    FILE *rf = tmpfile();
    ck_assert(rf);
    run_result_t *r = malloc(sizeof *r);
    csv_t *reps = malloc(sizeof *reps);
    const char *sets[] = { "cluster.pools.a.count=19", "workload.poisson.count=400" };
    runner_hooks_t h = { .replicas_out = rf, .summary = -1 };
    runner_run_ex(co_file(), sets, 2, &h, r);
    ck_assert_msg(r->rc == 0, "%s", r->err);
    fflush(rf);
    csv_read(rf, reps, R_POOL);
    ck_assert_int_eq(reps->n, 20);
    ck_assert_int_eq(r->nreps, 20);
    long served = 0;
    for (int k = 0; k < 20; k++) served += (long)reps->v[k][R_SERVED];
    ck_assert_int_eq(served, 400);
    char *t = table_text(r);
    ck_assert(strstr(t, "   pool a: 19 replicas x TP1") && !strstr(t, "replica 0:"));
    ck_assert(strstr(t, "(20 replicas: a line each only up to 16; --replicas OUT writes every one)"));
    free(t);
    fclose(rf);
    rf = tmpfile();
    h.replicas_out = rf;
    runner_run_ex("scenarios/default.yaml", NULL, 0, &h, r);
    ck_assert_msg(r->rc == 0, "%s", r->err);
    fflush(rf);
    csv_read(rf, reps, R_POOL);
    ck_assert_int_eq(reps->n, 1);
    ck_assert_str_eq(reps->text[0], "");
    ck_assert_int_eq((long)reps->v[0][R_STEPS], r->sum.steps);
    t = table_text(r);
    ck_assert(!strstr(t, "pool ") && !strstr(t, "replica 0"));
    free(t);
    fclose(rf);
    free(reps);
    free(r);
}
END_TEST

/* disaggregated prefill/decode: each request's prefill replica (a prefill pool's) and replica (a
 * decode pool's) in the requests CSV, its transfer time > 0; the replicas CSV's prefilled and
 * served counts are the requests CSV's */
START_TEST(disaggregated_replica_columns)
{
    FILE *rf = tmpfile(), *qf = tmpfile();
    ck_assert(rf && qf);
    run_result_t *r = malloc(sizeof *r);
    csv_t *reps = malloc(sizeof *reps), *reqs = malloc(sizeof *reqs);
    const char *sets[] = { "workload.poisson.count=300" };
    runner_hooks_t h = { .replicas_out = rf, .requests_out = qf, .summary = -1 };
    runner_run_ex("scenarios/cluster/h200-llama8b-disagg.yaml", sets, 1, &h, r);
    ck_assert_msg(r->rc == 0, "%s", r->err);
    fflush(rf);
    fflush(qf);
    csv_read(rf, reps, R_POOL);
    csv_read(qf, reqs, -1);
    ck_assert_int_eq(reps->n, 4);                  /* 2 prefill replicas, then 2 decode ones */
    ck_assert_int_eq(reqs->n, 300);
    long served[4] = { 0 }, prefilled[4] = { 0 };
    for (int i = 0; i < reqs->n; i++) {
        const double *v = reqs->v[i];
        int p = (int)v[Q_PREP], d = (int)v[Q_REP];
        ck_assert(p >= 0 && p < 2 && d >= 2 && d < 4);
        ck_assert(v[Q_XFER] > 0);
        prefilled[p]++;
        served[d] += !isnan(v[Q_FIN]);
    }
    for (int k = 0; k < 4; k++) {
        ck_assert_str_eq(reps->text[k], k < 2 ? "pre" : "dec");
        ck_assert_int_eq((long)reps->v[k][R_PREFILLED], prefilled[k]);
        ck_assert_int_eq((long)reps->v[k][R_SERVED], served[k]);
    }
    ck_assert_int_eq(r->pools[0].prefilled, 300);
    ck_assert_int_eq(r->pools[1].served, 300);
    fclose(rf);
    fclose(qf);
    free(reps);
    free(reqs);
    free(r);
}
END_TEST

/* a disaggregated run stopped while requests are between their KV's arrival and the router's
 * decision (router latency >> the transfer) ends cleanly: they are in transit, on no replica's
 * lists (it failed an invariant) */
START_TEST(disaggregated_stop_in_transit)
{
    run_result_t *r = malloc(sizeof *r);
    const char *sets[] = { "workload.poisson.count=300", "cluster.router_latency_s=0.5", "stop.max_steps=300" };
    runner_hooks_t h = { .summary = -1 };
    runner_run_ex("scenarios/cluster/h200-llama8b-disagg.yaml", sets, 3, &h, r);
    ck_assert_msg(r->rc == 0, "%s", r->err);
    ck_assert(r->sum.stopped_by_steps);
    ck_assert_int_eq(r->pools[0].prefilled > r->pools[1].served, 1);   /* some were handed on, unfinished */
    free(r);
}
END_TEST

int main(void)
{
    const check_test_t tab[] = {
        CHECK_TEST(replica_outputs_agree_with_the_requests),
        CHECK_TEST(busy_share_and_pool_columns),
        CHECK_TEST(many_replicas_and_one),
        CHECK_TEST(disaggregated_replica_columns),
        CHECK_TEST(disaggregated_stop_in_transit),
    };
    return check_main("cluster_out", "outputs", tab, CHECK_N(tab), 120, NULL);
}
