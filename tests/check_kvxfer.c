/* check_kvxfer: disaggregated prefill/decode (sim/kvxfer.c, sim/cluster.c's hand-off): the KV
 * transfer law; a request's path on a small deterministic cluster -- prefill on a prefill
 * replica, its KV over the link, its first token and the rest of its tokens on a decode
 * replica -- timed step by step against the steps the replicas ran; no decode replica runs
 * a request before its KV has arrived; blocks held until the KV has been sent, then freed;
 * layer-wise overlap; tensor-parallel shards; determinism. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "check_core.h"
#include "setup.h"
#include "kvxfer.h"
#include "check_run.h"

/* Llama-3.1-8B's KV a token on one rank at TP 1: 32 layers x K and V x 8 heads x 128 x 2 bytes */
#define TOK_BYTES (32.0 * 2 * 8 * 128 * 2)
#define IB400 50e9                /* hwcat's ib-400: 400 Gb/s */
#define IB400_LAT 2.7e-6

static const char *dg_file(const char *body)
{
    static char path[128];
    check_tmp_path(path, sizeof path, "pacesim-kvxfer");
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "name: d\nseed: 5\nmodel: %s/models/llama-3.1-8b.yaml\n"
               "hardware: {analytic: {tflops: 700, tbps: 4.8, mem_gib: 80}}\n%s", getcwd((char[512]){0}, 512), body);
    ck_assert_int_eq(fclose(f), 0);
    return path;
}

/* one request: 1000 prompt tokens (63 blocks of 16), 6 output tokens */
static const char *one_body =
    "engine: {max_num_seqs: 16, num_gpu_blocks: 4000}\n"
    "workload:\n  poisson: {rate_per_s: 1, count: 1, prompt: 1000, output: 6}\n"
    "cluster:\n  pools:\n    pre: {count: 1, role: prefill}\n    dec: {count: 1, role: decode}\n"
    "  kv_transfer: {link: ib-400}\n";

/* a load: 300 requests on 2 prefill and 2 decode replicas, the decode replicas short of blocks */
static const char *load_body =
    "engine: {max_num_seqs: 32, num_gpu_blocks: 3000}\n"
    "workload:\n  poisson: {rate_per_s: 40, count: 300, prompt: {dist: uniform, low: 200, high: 3000}, output: {dist: uniform, low: 2, high: 300}}\n"
    "cluster:\n  router: least_outstanding\n  pools:\n    dec: {count: 2, role: decode, engine: {num_gpu_blocks: 1200}}\n"
    "    pre: {count: 2, role: prefill}\n"
    "  kv_transfer: {link: pcie4}\n";

#define MAXS 4096
typedef struct {
    long nsteps;
    double t0[MAXS], dt[MAXS];
    int rep[MAXS], nrows[MAXS], q0[MAXS], pre0[MAXS], adm0[MAXS];
    long seq0[MAXS];
    /* per request (by serial): prefill end, KV arrival, first step on its decode replica */
    double pend[512], first_dec[512], arr[512], fin[512], ttft[512], xfer[512];
    int prep[512], drep[512];
    long violations;              /* a decode replica ran a request before its KV arrived */
    long held_bad;                /* a prefill replica's blocks in transfer not what its requests hold */
    long check_bad;               /* replica_check failed after a step */
    char check_err[ENG_ERR_MAX];
    long nfin;
    long steps_dec_rows[512];     /* steps that ran a row of the request on its decode replica */
} obs_t;

static void on_step(void *ctx, const engine_t *e, const step_rec_t *st)
{
    obs_t *o = ctx;
    if (o->nsteps < MAXS) {
        long i = o->nsteps;
        o->t0[i] = st->t0;
        o->dt[i] = st->dt;
        o->rep[i] = st->replica;
        o->nrows[i] = st->nrows;
        o->q0[i] = st->rows[0].q;
        o->seq0[i] = st->rows[0].seq_len;
        o->pre0[i] = st->rows[0].prefill;
        o->adm0[i] = st->rows[0].admitted;
    }
    o->nsteps++;
    for (int k = 0; k < st->nrows; k++) {
        const req_t *r = &e->rp.r[st->rows[k].req];
        const req_aux_t *x = &e->rp.x[st->rows[k].req];
        if (st->replica < e->npre) continue;
        /* on a decode replica: its KV left the prefill replica kv_xfer_s after its prefill ended */
        if (x->prefill_replica < 0) { o->violations++; continue; }
        long s = r->serial;
        if (s >= 0 && s < 512) {
            if (o->steps_dec_rows[s]++ == 0) o->first_dec[s] = st->t0;
            if (st->t0 + 1e-12 < o->pend[s] + x->kv_xfer_s) o->violations++;
        }
    }
    /* each prefill replica: the blocks of its requests in transfer are what it keeps aside */
    for (int k = 0; k < e->npre; k++) {
        long held = 0;
        for (int i = 0; i < e->rp.n; i++)
            if (e->rp.r[i].state == RQ_XFER && e->rp.x[i].prefill_replica == k) held += e->rp.r[i].blocks;
        if (held != e->rep[k].xfer_blocks) o->held_bad++;
    }
    /* every replica's invariants (requests running, waiting or handed on exactly once; blocks) */
    for (int k = 0; k < e->nrep; k++)
        if (replica_check((replica_t *)&e->rep[k]) < 0 && o->check_bad++ == 0) snprintf(o->check_err, sizeof o->check_err, "%s", e->err);
    /* requests that left a prefill replica at this step's end */
    if (st->replica < e->npre)
        for (int k = 0; k < st->nrows; k++) {
            const req_t *r = &e->rp.r[st->rows[k].req];
            if (r->state == RQ_XFER && r->serial < 512) o->pend[r->serial] = st->t0 + st->dt;
        }
}

static void on_fin(void *ctx, const engine_t *e, const req_t *r)
{
    obs_t *o = ctx;
    const req_aux_t *x = &e->rp.x[r->idx];
    o->nfin++;
    if (r->serial < 0 || r->serial >= 512) return;
    o->arr[r->serial] = r->t_ev[EV_ARRIVAL];
    o->fin[r->serial] = r->t_ev[EV_FINISHED];
    o->ttft[r->serial] = r->t_ev[EV_FIRST_TOKEN] - r->t_ev[EV_ARRIVAL];
    o->xfer[r->serial] = x->kv_xfer_s;
    o->prep[r->serial] = x->prefill_replica;
    o->drep[r->serial] = r->replica;
}

/* run body with sets; the observations in *o (NULL: none), the run's summary in *sum */
static void dg_run(const char *body, const char *const *sets, int nsets, obs_t *o, run_summary_t *sum, double *xfer_mean)
{
    setup_t u;
    int rc = setup_open(&u, dg_file(body), sets, nsets);
    ck_assert_msg(rc == 0, "%s", u.err);
    if (o) {
        memset(o, 0, sizeof *o);
        u.e.observer = on_step;
        u.e.observer_ctx = o;
        u.e.on_finish = on_fin;
        u.e.on_finish_ctx = o;
    }
    ck_assert_msg(engine_run(&u.e) == 0, "%s", u.e.err);
    for (int k = 0; k < u.e.nrep; k++) {
        ck_assert_int_eq(u.e.rep[k].sc.used_blocks, 0);      /* every block freed */
        ck_assert_int_eq(u.e.rep[k].xfer_blocks, 0);
    }
    if (sum) *sum = u.e.sum;
    if (xfer_mean) *xfer_mean = quant_mean(&u.e.xfer_q);
    setup_close(&u);
}

/* the law: bytes / bandwidth + latency; layer-wise, the larger of the last layer's share after
 * the prefill and what the link cannot keep up with */
START_TEST(transfer_law)
{
    kvx_link_t l = { .bw = 50e9, .lat = 2.7e-6, .layerwise = 0, .layers = 32 };
    ck_assert(fabs(kvx_time(&l, 1e9) - (0.02 + 2.7e-6)) < 1e-15);
    ck_assert(fabs(kvx_time(&l, 0) - 2.7e-6) < 1e-18);
    l.layerwise = 1;
    /* a link faster than the prefill: the last layer's piece remains (1 GB / 32 / 50 GB/s) */
    double f = kvx_layer_chunk(&l, 0.0, 1.0, 0.1, 1e9);
    ck_assert_msg(fabs(f - (1.1 + 1e9 / 32 / 50e9)) < 1e-12, "%.12g", f);
    /* a link slower than the prefill: the whole transfer from the first layer's end */
    f = kvx_layer_chunk(&l, 0.0, 1.0, 0.01, 1e9);
    ck_assert_msg(fabs(f - (1.0 + 0.01 / 32 + 0.02)) < 1e-12, "%.12g", f);
    /* a link still busy: back to back after it */
    f = kvx_layer_chunk(&l, 5.0, 1.0, 0.1, 1e9);
    ck_assert_msg(fabs(f - 5.02) < 1e-12, "%.12g", f);
}
END_TEST

/* one request: TTFT = its prefill + the KV transfer + its first step on the decode replica (a
 * one-token row: the last prompt token recomputed); end-to-end = prefill + transfer + the
 * decode replica's steps; the transfer = 63 blocks x 16 tokens x 128 KiB / 50 GB/s + 2.7 us */
START_TEST(one_request_timed)
{
    obs_t *o = calloc(1, sizeof *o);
    run_summary_t S;
    dg_run(one_body, NULL, 0, o, &S, NULL);
    ck_assert_int_eq(o->nfin, 1);
    ck_assert_int_eq(S.requests_finished, 1);
    ck_assert_int_eq(S.tokens_emitted, 6);            /* the prefill replica's sampled token is not output */
    double bytes = 63.0 * 16 * TOK_BYTES, x = bytes / IB400 + IB400_LAT;
    ck_assert_msg(fabs(o->xfer[0] - x) < 1e-12, "transfer %.12g, law %.12g", o->xfer[0], x);
    ck_assert_int_eq(o->prep[0], 0);
    ck_assert_int_eq(o->drep[0], 1);
    /* the steps: one prefill step on replica 0, then 6 steps on replica 1 back to back */
    ck_assert_int_eq(o->nsteps, 7);
    ck_assert_int_eq(o->rep[0], 0);
    ck_assert(o->pre0[0] && o->q0[0] == 1000);
    double pend = o->t0[0] + o->dt[0];
    ck_assert(fabs(o->t0[0] - o->arr[0]) < 1e-12);    /* no queue, no router latency */
    ck_assert_int_eq(o->rep[1], 1);
    ck_assert(o->pre0[1] && o->adm0[1] && o->q0[1] == 1 && o->seq0[1] == 1000);
    ck_assert_msg(fabs(o->t0[1] - (pend + x)) < 1e-12, "decode starts %.12g, KV arrives %.12g", o->t0[1], pend + x);
    double ttft = o->dt[0] + x + o->dt[1];
    ck_assert_msg(fabs(o->ttft[0] - ttft) < 1e-12, "ttft %.12g, expected %.12g", o->ttft[0], ttft);
    double e2e = o->dt[0] + x;
    for (int i = 1; i < 7; i++) {
        ck_assert_int_eq(o->rep[i], 1);
        if (i > 1) ck_assert(!o->pre0[i] && o->q0[i] == 1 && o->seq0[i] == 1000 + i - 1);
        e2e += o->dt[i];
    }
    ck_assert_msg(fabs(o->fin[0] - o->arr[0] - e2e) < 1e-12, "e2e %.12g, expected %.12g", o->fin[0] - o->arr[0], e2e);
    free(o);
}
END_TEST

/* the router's latency: once before the prefill replica, and the decode replica takes the
 * request no sooner than that latency after the hand-off, nor before the KV */
START_TEST(router_latency_both_hops)
{
    obs_t *o = calloc(1, sizeof *o);
    const char *sets[] = { "cluster.router_latency_s=0.5" };
    dg_run(one_body, sets, 1, o, NULL, NULL);
    double pend = o->t0[0] + o->dt[0];
    ck_assert(fabs(o->t0[0] - (o->arr[0] + 0.5)) < 1e-12);
    ck_assert(fabs(o->t0[1] - (pend + 0.5)) < 1e-12);
    ck_assert(fabs(o->ttft[0] - (0.5 + o->dt[0] + 0.5 + o->dt[1])) < 1e-12);
    free(o);
}
END_TEST

/* layer-wise: the prefill of 1000 tokens outlasts the transfer, so the last layer's share
 * and the latency remain after it */
START_TEST(layerwise_overlaps_prefill)
{
    obs_t *o = calloc(1, sizeof *o);
    const char *sets[] = { "cluster.kv_transfer.layerwise=true" };
    dg_run(one_body, sets, 1, o, NULL, NULL);
    double bytes = 63.0 * 16 * TOK_BYTES;
    ck_assert_msg(bytes / IB400 < o->dt[0], "the test needs a prefill longer than the transfer");
    double x = bytes / 32 / IB400 + IB400_LAT;
    ck_assert_msg(fabs(o->xfer[0] - x) < 1e-12, "transfer %.12g, expected %.12g", o->xfer[0], x);
    ck_assert(fabs(o->t0[1] - (o->t0[0] + o->dt[0] + x)) < 1e-12);
    /* a slow link (1 GB/s): the whole transfer from the first layer's end */
    const char *slow[] = { "cluster.kv_transfer.layerwise=true", "cluster.kv_transfer.bandwidth_GBps=1" };
    dg_run(one_body, slow, 2, o, NULL, NULL);
    x = o->dt[0] / 32 + bytes / 1e9 + IB400_LAT - o->dt[0];
    ck_assert_msg(fabs(o->xfer[0] - x) < 1e-9, "transfer %.12g, expected %.12g", o->xfer[0], x);
    free(o);
}
END_TEST

/* TP 2 on both pools: each rank sends its half of the KV over a link of its own */
START_TEST(tensor_parallel_shards)
{
    obs_t *o = calloc(1, sizeof *o);
    const char *sets[] = { "engine.tensor_parallel_size=2" };
    dg_run(one_body, sets, 1, o, NULL, NULL);
    double x = 63.0 * 16 * TOK_BYTES / 2 / IB400 + IB400_LAT;
    ck_assert_msg(fabs(o->xfer[0] - x) < 1e-12, "transfer %.12g, expected %.12g", o->xfer[0], x);
    /* explicit figures override the preset's */
    const char *ex[] = { "cluster.kv_transfer.bandwidth_GBps=10", "cluster.kv_transfer.latency_us=100" };
    dg_run(one_body, ex, 2, o, NULL, NULL);
    x = 63.0 * 16 * TOK_BYTES / 10e9 + 100e-6;
    ck_assert_msg(fabs(o->xfer[0] - x) < 1e-12, "transfer %.12g, expected %.12g", o->xfer[0], x);
    free(o);
}
END_TEST

/* under load (decode replicas short of blocks, so requests wait there): no decode step runs
 * a request before its KV arrived; each request's first decode row admits it with one token;
 * the prefill replicas' blocks in transfer are exactly their requests'; all blocks freed */
START_TEST(decode_waits_for_kv)
{
    obs_t *o = calloc(1, sizeof *o);
    run_summary_t S;
    double xm;
    dg_run(load_body, NULL, 0, o, &S, &xm);
    ck_assert_int_eq(o->nfin, 300);
    ck_assert_int_eq(o->violations, 0);
    ck_assert_int_eq(o->held_bad, 0);
    ck_assert(xm > 0);
    int queued = 0;
    for (int s = 0; s < 300; s++) {
        ck_assert(o->prep[s] >= 0 && o->prep[s] < 2 && o->drep[s] >= 2 && o->drep[s] < 4);
        ck_assert(o->first_dec[s] >= o->pend[s] + o->xfer[s] - 1e-12);
        queued += o->first_dec[s] > o->pend[s] + o->xfer[s] + 1e-9;
        ck_assert(o->ttft[s] >= o->pend[s] + o->xfer[s] - o->arr[s] - 1e-12);
    }
    ck_assert_msg(queued > 0, "the load should make some requests wait at a decode replica");
    ck_assert_msg(o->check_bad == 0, "%s", o->check_err);
    /* a router latency longer than the transfers: the KV has been sent (the prefill replica's
     * blocks freed) before the request reaches its decode replica */
    const char *lat[] = { "cluster.router_latency_s=0.05" };
    dg_run(load_body, lat, 1, o, &S, NULL);
    ck_assert_int_eq(o->nfin, 300);
    ck_assert_int_eq(o->violations, 0);
    ck_assert_int_eq(o->held_bad, 0);
    ck_assert_msg(o->check_bad == 0, "%s", o->check_err);
    for (int s = 0; s < 300; s++) ck_assert(o->first_dec[s] >= o->pend[s] + 0.05 - 1e-12);
    /* the block pool (prefix_cache_model: pool) and a prefix-aware router run the same path */
    const char *pool[] = { "engine.prefix_cache_model=pool", "cluster.router=prefix_affinity" };
    dg_run(load_body, pool, 2, o, &S, NULL);
    ck_assert_int_eq(o->nfin, 300);
    ck_assert_int_eq(o->violations, 0);
    ck_assert_int_eq(o->held_bad, 0);
    ck_assert_msg(o->check_bad == 0, "%s", o->check_err);
    free(o);
}
END_TEST

/* same scenario, same seed: the same run */
START_TEST(disagg_deterministic)
{
    run_summary_t a, b;
    double xa, xb;
    const char *sets[] = { "cluster.router=random", "cluster.kv_transfer.layerwise=true" };
    dg_run(load_body, sets, 2, NULL, &a, &xa);
    dg_run(load_body, sets, 2, NULL, &b, &xb);
    ck_assert_int_eq(a.steps, b.steps);
    ck_assert(a.ttft_sum == b.ttft_sum && a.tpot_sum == b.tpot_sum && a.makespan == b.makespan && xa == xb);
}
END_TEST

int main(void)
{
    const check_test_t tab[] = {
        CHECK_TEST(transfer_law), CHECK_TEST(one_request_timed), CHECK_TEST(router_latency_both_hops),
        CHECK_TEST(layerwise_overlaps_prefill), CHECK_TEST(tensor_parallel_shards), CHECK_TEST(decode_waits_for_kv),
        CHECK_TEST(disagg_deterministic),
    };
    return check_main("kvxfer", "disaggregation", tab, CHECK_N(tab), 120, NULL);
}
