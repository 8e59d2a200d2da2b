/* runner.c: one scenario run end to end, and its reports.  See runner.h. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "fnv.h"
#include "runner.h"
#include "quant.h"
#include "setup.h"

typedef struct {
    FILE *f, *req;
    const runner_hooks_t *h;
    int replica;                  /* the steps rows carry the replica column */
} steps_ctx_t;

static const char *prefix_of(const runner_hooks_t *h) { return h && h->row_prefix ? h->row_prefix : ""; }

const char *report_row_route(const route_plan_t *p, int req, char *buf, size_t n)
{
    for (int i = 0; i < p->ncalls; i++)
        for (int k = 0; k < p->calls[i].nseg; k++)
            if (p->calls[i].segs[k].req == req) {
                const kcall_t *c = &p->calls[i];
                if (c->variant != VAR_NONE)
                    snprintf(buf, n, "%s/%s", route_name(c->route), route_variant_name(c->variant));
                else
                    snprintf(buf, n, "%s", route_name(c->route));
                return buf;
            }
    return "?";
}

/* The replica whose step record st is (each replica keeps its own, e->rep[k].rec). */
static long step_replica(const engine_t *e, const step_rec_t *st)
{
    const char *p = (const char *)st - offsetof(replica_t, rec);
    return (long)((p - (const char *)e->rep) / (ptrdiff_t)sizeof(replica_t));
}

static void steps_row(FILE *f, const char *prefix, int replica, const engine_t *e, const step_rec_t *st)
{
    fputs(prefix, f);
    if (replica) fprintf(f, "%ld,", step_replica(e, st));
    fprintf(f, "%ld,%.9g,%.9g,%s,%d,%ld,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,", st->no, st->t0, st->dt,
            engine_step_type_name(st->type), st->nrows, st->tokens, st->cost.attn, st->cost.linear, st->cost.gdn,
            st->cost.elementwise, st->cost.allreduce, st->cost.overhead, st->cost.mtp);
    for (int i = 0; i < st->nrows; i++) {
        char nb[32], rb[64];
        const step_row_t *row = &st->rows[i];
        fprintf(f, "%s%s:%s:q=%d:L=%ld:%s:out=%ld", i ? ";" : "", engine_req_name(e, row->req, nb, sizeof nb),
                row->prefill ? "prefill" : "decode", row->q, row->seq_len, report_row_route(st->plan, row->req, rb, sizeof rb),
                row->emitted);
    }
    fputc('\n', f);
}

static void run_observer(void *ctx, const engine_t *e, const step_rec_t *st)
{
    const steps_ctx_t *c = ctx;
    if (c->f) steps_row(c->f, prefix_of(c->h), c->replica, e, st);
    if (c->h && c->h->on_step) c->h->on_step(c->h->ctx, e, st);
}

void report_steps_header(FILE *f, const char *prefix, int replica)
{
    fprintf(f, "%s%sstep,t_start_s,dur_s,type,rows,tokens,attn_s,linear_s,gdn_s,elementwise_s,"
               "allreduce_s,overhead_s,mtp_s,detail\n", prefix ? prefix : "", replica ? "replica," : "");
}

void report_requests_header(FILE *f, const char *prefix)
{
    fprintf(f, "%sid,arrival_s,admitted_s,first_token_s,finished_s,prompt_tokens,cached_tokens,output_tokens,"
               "emitted_tokens,preemptions,ttft_s,tpot_s,replica,prefill_replica,kv_transfer_s\n", prefix ? prefix : "");
}

void report_replicas_header(FILE *f, const char *prefix)
{
    fprintf(f, "%sreplica,pool,tp,served,prefilled,steps,mean_batch,kv_use,kv_peak,prefix_hit,queue_mean,queue_peak,"
               "busy\n", prefix ? prefix : "");
}

static void time_field(FILE *f, double t)
{
    fputc(',', f);
    if (t >= 0) fprintf(f, "%.9g", t);
}

/* One request's row: its event times (empty: not reached), tokens, its TTFT and TPOT
 * (vLLM's benchmark definitions; empty where undefined), the replica it ran on (its decode
 * replica when disaggregated; empty: never routed), the replica that prefilled it and its KV
 * transfer's duration (both empty unless it was disaggregated). */
static void requests_row(FILE *f, const char *prefix, const engine_t *e, const req_t *r)
{
    char nb[32];
    const double *t = r->t_ev;
    fputs(prefix, f);
    fputs(engine_req_name(e, r->idx, nb, sizeof nb), f);
    for (int ev = 0; ev < EV__N; ev++) time_field(f, t[ev]);
    fprintf(f, ",%ld,%ld,%ld,%ld,%ld", r->prompt, r->cached, r->output, r->emitted, r->preemptions);
    time_field(f, t[EV_FIRST_TOKEN] >= 0 && t[EV_ARRIVAL] >= 0 ? t[EV_FIRST_TOKEN] - t[EV_ARRIVAL] : -1);
    time_field(f, t[EV_FINISHED] >= 0 && t[EV_FIRST_TOKEN] >= 0 && r->output > 1
                      ? (t[EV_FINISHED] - t[EV_FIRST_TOKEN]) / (double)(r->output - 1) : -1);
    const req_aux_t *x = &e->rp.x[r->idx];
    if (r->replica >= 0) fprintf(f, ",%d", r->replica);
    else fputc(',', f);
    if (x->prefill_replica >= 0) fprintf(f, ",%d,%.9g", x->prefill_replica, x->kv_xfer_s);
    else fputs(",,", f);
    fputc('\n', f);
}

static void run_on_finish(void *ctx, const engine_t *e, const req_t *r)
{
    const steps_ctx_t *c = ctx;
    requests_row(c->req, prefix_of(c->h), e, r);
}

/* After the run: the requests that did not finish (in flight at the stop, or never
 * arrived), in slot order; the finished ones were written as they finished. */
static void requests_rest(const steps_ctx_t *c, const engine_t *e)
{
    for (int i = 0; i < e->rp.n; i++) {
        const req_t *r = &e->rp.r[i];
        if (r->state != RQ_DONE && r->state != RQ_FREE) requests_row(c->req, prefix_of(c->h), e, r);
    }
}

/* A digest of what a scenario's simulation depends on: everything but its name,
 * description, measure windows and reference values (FNV-1a over the loaded fields).
 * A window's definition is compared on its own (same_window). */
#define FNV(h, x) ((h) = fnv1a((h), &(x), sizeof(x)))

static uint64_t scn_digest(const scenario_t *s)
{
    uint64_t h = FNV1A_BASIS;
    FNV(h, s->seed);
    FNV(h, s->model);
    h = fnv1a(h, s->profile_path, strlen(s->profile_path) + 1);
    FNV(h, s->analytic);
    FNV(h, s->analytic_tflops);
    FNV(h, s->analytic_tbps);
    FNV(h, s->analytic_mem_gib);
    FNV(h, s->gpu);
    FNV(h, s->link);
    FNV(h, s->engine);
    FNV(h, s->env);
    FNV(h, s->accept);
    FNV(h, s->n_requests);
    for (int i = 0; i < s->n_requests; i++) {
        const scn_request_t *r = &s->requests[i];
        FNV(h, r->id);
        FNV(h, r->prompt_tokens);
        FNV(h, r->cached_tokens);
        FNV(h, r->output_tokens);
        FNV(h, r->arrival);
        FNV(h, r->priority);
        FNV(h, r->prefix);
        FNV(h, r->prefix_tokens);
        FNV(h, r->follows);
    }
    FNV(h, s->poisson);
    h = fnv1a(h, s->trace_path, strlen(s->trace_path) + 1);
    FNV(h, s->stop);
    const scn_cluster_t *c = &s->cluster;   /* a cluster's replicas, router and link */
    FNV(h, c->enabled);
    if (!c->enabled) return h;
    FNV(h, c->router);
    FNV(h, c->router_latency_s);
    FNV(h, c->balance_abs);
    FNV(h, c->balance_rel);
    FNV(h, c->n_pools);
    for (int i = 0; i < c->n_pools; i++) {
        const scn_pool_t *p = &c->pools[i];
        h = fnv1a(h, p->name, strlen(p->name) + 1);
        FNV(h, p->count);
        FNV(h, p->role);
        if (p->s) {
            FNV(h, p->s->model);
            FNV(h, p->s->engine);
        }
    }
    FNV(h, c->kv_link);
    FNV(h, c->kv_bandwidth);
    FNV(h, c->kv_latency_s);
    FNV(h, c->kv_layerwise);
    return h;
}

static uint64_t win_digest(const scn_window_t *w)
{
    uint64_t h = FNV1A_BASIS;
    FNV(h, w->kind);
    FNV(h, w->request);
    FNV(h, w->step_type);
    FNV(h, w->stat);
    FNV(h, w->from);
    FNV(h, w->to);
    return h;
}

/* Window i of eff is the file's window of that name as written. */
static int same_window(const scenario_t *base, const scenario_t *eff, int i)
{
    for (int j = 0; j < base->n_windows; j++)
        if (!strcmp(base->windows[j].name, eff->windows[i].name))
            return win_digest(&base->windows[j]) == win_digest(&eff->windows[i]);
    return 0;
}

/* Whether the overrides leave the configuration the reference values belong to (the
 * file as written); if not, res->ref_off says which keys changed it.  A window whose own
 * definition was changed loses its reference alone.  A file that does not load without
 * its overrides (or memory running out) counts as changed. */
static void check_reference(run_result_t *res, const char *path, const char *const *sets, int nsets,
                            const scenario_t *eff)
{
    if (nsets == 0) return;
    scenario_t base;
    char err[SCN_ERR_MAX];
    int loaded = scn_load(path, NULL, 0, &base, err) == 0;
    uint64_t d0 = loaded ? scn_digest(&base) : 0;
    int same = loaded && scn_digest(eff) == d0;
    for (int i = 0; same && i < res->nwin; i++)
        if (res->win_has_ref[i] && !same_window(&base, eff, i)) res->win_has_ref[i] = 0;
    if (loaded) scn_free(&base);
    if (same) return;
    size_t o = (size_t)snprintf(res->ref_off, sizeof res->ref_off, "published values not shown: the run is not the "
                                                                    "configuration they belong to (changed by");
    int named = 0;
    for (int i = 0; i < nsets && loaded; i++) {
        scenario_t one;
        int unchanged = scn_load(path, sets + i, 1, &one, err) == 0;
        if (unchanged) {
            unchanged = scn_digest(&one) == d0;
            scn_free(&one);
        }
        if (!unchanged && o < sizeof res->ref_off) {
            const char *eq = strchr(sets[i], '=');
            int klen = eq ? (int)(eq - sets[i]) : (int)strlen(sets[i]);
            o += (size_t)snprintf(res->ref_off + o, sizeof res->ref_off - o, "%s %.*s", named ? "," : "", klen, sets[i]);
            named = 1;
        }
    }
    if (o < sizeof res->ref_off) snprintf(res->ref_off + o, sizeof res->ref_off - o, "%s)", named ? "" : " the overrides");
}

static void copy_settings(run_result_t *res, const scenario_t *s)
{
    snprintf(res->name, sizeof res->name, "%s", s->name);
    snprintf(res->description, sizeof res->description, "%s", s->description);
    snprintf(res->profile, sizeof res->profile, "%s", s->profile_path[0] ? s->profile_path : "analytic");
    snprintf(res->model, sizeof res->model, "%s", s->model.name);
    snprintf(res->ref_source, sizeof res->ref_source, "%s", s->reference_source);
    res->tp = s->engine.tensor_parallel_size;
    res->spec_k = s->engine.spec_mtp ? s->engine.num_speculative_tokens : 0;
    res->dflash2 = s->engine.spec_dflash2;
    res->budget = s->engine.max_num_batched_tokens;
    res->max_seqs = s->engine.max_num_seqs;
    res->kv = s->engine.kv_cache_dtype;
    res->pace = s->env.pace_steps;
    res->pdr = s->env.prefix_decode_rows;
    res->smallq = s->env.smallq_decode_max_q;
    res->anypage = s->env.d256_bm32_any_page;
    res->upstream = s->engine.scheduler == SCHED_UPSTREAM;
    res->varlen = s->engine.attention_backend == ATTN_BACKEND_VARLEN;
    res->seed = s->seed;
    res->max_time_s = s->stop.max_time_s;
    res->nwin = s->n_windows < RUN_MAX_WIN ? s->n_windows : RUN_MAX_WIN;
    for (int i = 0; i < res->nwin; i++) {
        snprintf(res->win_name[i], SCN_ID_MAX, "%s", s->windows[i].name);
        res->win_kind[i] = s->windows[i].kind;
        res->win_val[i] = NAN;
        res->win_has_ref[i] = s->windows[i].has_reference;
        res->win_ref[i] = s->windows[i].reference;
    }
}

void runner_run(const char *path, const char *const *sets, int nsets, FILE *steps_out, run_result_t *res)
{
    runner_hooks_t h = { .steps_out = steps_out };
    runner_run_ex(path, sets, nsets, &h, res);
}

/* The run's own warnings, appended to res->warn: Poisson draws cut to max_model_len, and
 * latency statistics over a run stopped early (the requests still in flight are left out:
 * the slow ones, so the figures lean low). */
static void run_warnings(run_result_t *res, const scenario_t *s, const engine_t *e)
{
    const run_summary_t *S = &e->sum;
    size_t o = strlen(res->warn), n = sizeof res->warn;
    if (S->clamped > 0 && o < n)
        o += (size_t)snprintf(res->warn + o, n - o,
                              "warning: %s:%d:%d: workload.poisson: %ld of %ld generated requests drew a prompt + output"
                              " past engine.max_model_len %ld and were cut to it (the output kept, at most half of it;"
                              " the prompt gives way): the lengths run are not the distributions'\n",
                              s->path, s->poisson_line, s->poisson_col, S->clamped, e->wl.poisson_made,
                              s->engine.max_model_len);
    int lat = res->has_serve;
    for (int i = 0; i < s->n_windows; i++) {
        const scn_window_t *w = &s->windows[i];
        lat |= scn_win_is_latency(w->kind) && (!w->request[0] || !strcmp(w->request, "*"));
    }
    long unfinished = e->wl.n_arrived - S->requests_finished;
    char at[96];                  /* where it stopped: the limit, and the last step's end where that differs */
    if (S->stopped_by_time && S->makespan < s->stop.max_time_s)
        snprintf(at, sizeof at, "stop.max_time_s (%.6g s; the last engine step ended at %.6g s)", s->stop.max_time_s,
                 S->makespan);
    else snprintf(at, sizeof at, "%s (%.6g s simulated)", S->stopped_by_time ? "stop.max_time_s" : "stop.max_steps",
                  S->makespan);
    if ((S->stopped_by_time || S->stopped_by_steps) && lat && unfinished > 0 && o < n)
        snprintf(res->warn + o, n - o,
                 "warning: %s: the run stopped at %s with %ld of %ld arrived requests unfinished:"
                 " the latency statistics over all requests cover only the %ld that finished, biased low (the"
                 " slowest are left out)\n",
                 s->path, at, unfinished, e->wl.n_arrived, S->requests_finished);
}

/* Replica k's load over the run. */
static void replica_load_of(run_load_t *l, const scenario_t *s, const engine_t *e, int k)
{
    const replica_t *rp = &e->rep[k];
    memset(l, 0, sizeof *l);
    if (s->cluster.enabled) snprintf(l->pool, sizeof l->pool, "%s", s->cluster.pools[rp->pool].name);
    l->replica = k;
    l->replicas = 1;
    l->tp = rp->s->engine.tensor_parallel_size;
    l->served = rp->served;
    l->prefilled = rp->prefills;
    l->steps = rp->sum.steps;
    l->peak_waiting = rp->peak_waiting;
    l->adm_tokens = rp->sum.adm_tokens;
    l->adm_hit_tokens = rp->sum.adm_hit_tokens;
    l->rows = rp->rows_sum;
    l->kv_blocks = rp->kv_blocks_sum;
    l->kv_cap = (double)rp->sc.capacity * (double)rp->sum.steps;
    l->kv_peak = rp->sc.capacity > 0 ? (double)rp->sum.peak_blocks / (double)rp->sc.capacity : 0.0;
    l->queue = replica_queue_mean(rp, e->sum.makespan);
    l->busy_s = rp->busy_s;
    l->makespan = e->sum.makespan;
}

/* The pools' and the first replicas' loads into res. */
static void run_loads(run_result_t *res, const scenario_t *s, const engine_t *e)
{
    res->nreps = e->nrep;
    res->npools = s->cluster.enabled ? s->cluster.n_pools : 0;
    for (int i = 0; i < res->npools; i++) {
        run_load_t *pl = &res->pools[i];
        snprintf(pl->pool, sizeof pl->pool, "%s", s->cluster.pools[i].name);
        pl->replica = -1;
        pl->tp = s->cluster.pools[i].s ? s->cluster.pools[i].s->engine.tensor_parallel_size : s->engine.tensor_parallel_size;
        pl->makespan = e->sum.makespan;
    }
    for (int k = 0; k < e->nrep; k++) {
        run_load_t l;
        replica_load_of(&l, s, e, k);
        if (k < RUN_TABLE_REPLICAS) res->reps[k] = l;
        if (!s->cluster.enabled) continue;
        run_load_t *pl = &res->pools[e->rep[k].pool];
        pl->tp = l.tp;
        pl->replicas++;
        pl->served += l.served;
        pl->prefilled += l.prefilled;
        pl->steps += l.steps;
        if (l.peak_waiting > pl->peak_waiting) pl->peak_waiting = l.peak_waiting;
        pl->adm_tokens += l.adm_tokens;
        pl->adm_hit_tokens += l.adm_hit_tokens;
        pl->rows += l.rows;
        pl->kv_blocks += l.kv_blocks;
        pl->kv_cap += l.kv_cap;
        if (l.kv_peak > pl->kv_peak) pl->kv_peak = l.kv_peak;
        pl->queue += l.queue;
        pl->busy_s += l.busy_s;
    }
}

/* Disaggregated: the KV link and the transfer times into res. */
static void run_disagg(run_result_t *res, const scenario_t *s, engine_t *e)
{
    const scn_cluster_t *c = &s->cluster;
    if (!c->enabled || !c->disaggregated) return;
    res->disagg = 1;
    res->kv_layerwise = c->kv_layerwise;
    snprintf(res->kv_link, sizeof res->kv_link, "%s", c->kv_link ? c->kv_link->name : "");
    res->kv_bw = c->kv_bandwidth;
    res->kv_lat = c->kv_latency_s;
    res->xfer_n = e->xfer_q.n;
    res->xfer_mean = quant_mean(&e->xfer_q);
    res->xfer_p99 = quant_quantile(&e->xfer_q, 0.99);
    res->xfer_exact = quant_is_exact(&e->xfer_q);
}

void run_load_figures(const run_load_t *l, run_load_fig_t *f)
{
    int n = l->replicas > 0 ? l->replicas : 1;
    f->mean_batch = l->steps > 0 ? l->rows / (double)l->steps : NAN;
    f->kv_use = l->kv_cap > 0 ? l->kv_blocks / l->kv_cap : NAN;
    f->kv_peak = l->kv_peak;
    f->prefix_hit = l->adm_tokens > 0 ? (double)l->adm_hit_tokens / (double)l->adm_tokens : NAN;
    f->queue_mean = l->queue / n;
    f->busy = l->makespan > 0 ? l->busy_s / (l->makespan * n) : NAN;
}

static void csv_num(FILE *f, double v);

/* The load figures as CSV fields, each led by a comma: served, prefilled (with_prefilled),
 * steps (with_steps), mean_batch, kv_use, kv_peak, prefix_hit, queue_mean, queue_peak, busy. */
static void load_fields(FILE *f, const run_load_t *l, int with_more)
{
    run_load_fig_t g;
    run_load_figures(l, &g);
    fprintf(f, ",%ld", l->served);
    if (with_more) fprintf(f, ",%ld,%ld", l->prefilled, l->steps);
    csv_num(f, g.mean_batch);
    csv_num(f, g.kv_use);
    csv_num(f, g.kv_peak);
    csv_num(f, g.prefix_hit);
    csv_num(f, g.queue_mean);
    fprintf(f, ",%ld", l->peak_waiting);
    csv_num(f, g.busy);
}

/* The replicas CSV's rows: every replica of the run. */
static void replicas_rows(FILE *f, const char *prefix, const run_result_t *res, const scenario_t *s, const engine_t *e)
{
    for (int k = 0; k < e->nrep; k++) {
        run_load_t l;
        if (k < RUN_TABLE_REPLICAS) l = res->reps[k];
        else replica_load_of(&l, s, e, k);
        fprintf(f, "%s%d,", prefix, k);
        report_csv_field(f, l.pool);
        fprintf(f, ",%d", l.tp);
        load_fields(f, &l, 1);
        fputc('\n', f);
    }
}

void runner_run_ex(const char *path, const char *const *sets, int nsets, const runner_hooks_t *h,
                   run_result_t *res)
{
    FILE *steps_out = h ? h->steps_out : NULL;
    serve_acc_t *acc = NULL;
    setup_t u;

    memset(res, 0, sizeof *res);
    snprintf(res->path, sizeof res->path, "%s", path);
    if (setup_open_scaled(&u, path, sets, nsets, h && h->cost_scale > 0 ? h->cost_scale : 1) < 0) {
        res->rc = 2;
        snprintf(res->err, sizeof res->err, "%s", u.err);
        goto out;
    }
    /* the whole trace read first, as validate reads it: a run that stops early would never
     * meet a bad row past its stop, and pass a file validate refuses */
    if (u.s.trace_path[0] && setup_check_trace(&u) < 0) {
        res->rc = 2;
        snprintf(res->err, sizeof res->err, "%s", u.err);
        goto out;
    }
    snprintf(res->warn, sizeof res->warn, "%s", u.warn);
    copy_settings(res, &u.s);
    check_reference(res, path, sets, nsets, &u.s);
    snprintf(res->gpu, sizeof res->gpu, "%s", u.hw);
    if (u.has_prof)
        snprintf(res->cost_model, sizeof res->cost_model, "the profile's kernel-time laws (%d laws; date: %s)",
                 u.prof.nlaws, u.prof.date);
    else if (u.s.gpu)
        snprintf(res->cost_model, sizeof res->cost_model,
                 "analytic roofline: datasheet peaks x what the H200 profile achieved of its own (no profile)");
    else
        snprintf(res->cost_model, sizeof res->cost_model, "analytic roofline (no profile)");
    engine_t *e = &u.e;
    FILE *req_out = h ? h->requests_out : NULL;
    steps_ctx_t sc = { steps_out, req_out, h, u.s.cluster.enabled || (h && h->steps_replica) };
    res->block = e->rep[0].sc.block;
    res->kv_blocks = e->rep[0].sc.capacity;
    if (steps_out || (h && h->on_step)) {
        e->observer = run_observer;
        e->observer_ctx = &sc;
    }
    if (req_out) {
        e->on_finish = run_on_finish;
        e->on_finish_ctx = &sc;
    }
    int want = h ? h->summary : 0;
    if (want > 0 || (want == 0 && (runner_is_serving(&u.s) || goodput_slo_any(h ? h->goodput : NULL)))) {
        if (!(acc = serve_acc_new(h ? h->goodput : NULL))) {
            res->rc = 1;
            snprintf(res->err, sizeof res->err, "%s: out of memory", path);
            goto out;
        }
        e->serve = acc;
    }
    if (steps_out && !h->no_header) report_steps_header(steps_out, NULL, sc.replica);
    if (req_out && !h->no_header) report_requests_header(req_out, NULL);
    if (h && h->replicas_out && !h->no_header) report_replicas_header(h->replicas_out, NULL);
    int erc = engine_run(e);
    if (req_out) requests_rest(&sc, e);
    if (h && h->on_end) h->on_end(h->ctx, e);
    if (erc < 0) {
        res->rc = erc == ENG_EINPUT ? 2 : 1;
        snprintf(res->err, sizeof res->err, "%s", e->err);
        setup_msg_line(res->err, sizeof res->err);
        goto out;
    }
    res->sum = e->sum;
    run_loads(res, &u.s, e);
    run_disagg(res, &u.s, e);
    if (h && h->replicas_out) replicas_rows(h->replicas_out, prefix_of(h), res, &u.s, e);
    if (acc) {
        serve_acc_summary(acc, e->sum.makespan, &res->serve);
        res->has_serve = 1;
    }
    res->env_outside = cost_profile_outside_share(u.cost);
    run_warnings(res, &u.s, e);
    size_t wl = strlen(res->warn);
    cost_profile_envelope_warnings(u.cost, res->warn + wl, sizeof res->warn - wl);
    for (int i = 0; i < res->nwin; i++) {
        res->win_val[i] = engine_window(e, i);
        res->win_has_dist[i] = engine_window_dist(e, i, &res->win_dist[i]);
    }
out:
    if (acc) u.e.serve = NULL;
    serve_acc_free(acc);
    setup_close(&u);
}

int runner_is_serving(const scenario_t *s) { return s->poisson.enabled || s->trace_path[0]; }

void report_num(FILE *f, double v)
{
    if (isnan(v)) return;
    fprintf(f, "%.6g", v);
}

/* ---- error bars (run --error-bars P) ---- */

/* A figure over the run and its two error-bar runs: the arguments of span3 */
#define BARS(r, F) (r)->F, (r)->bars[0]->F, (r)->bars[1]->F

/* The least and the most of a, b, c leaving NAN out (NAN when all are). */
static void span3(double a, double b, double c, double *lo, double *hi)
{
    double v[3] = { a, b, c };
    *lo = *hi = NAN;
    for (int i = 0; i < 3; i++) {
        if (isnan(v[i])) continue;
        if (isnan(*lo) || v[i] < *lo) *lo = v[i];
        if (isnan(*hi) || v[i] > *hi) *hi = v[i];
    }
}

static int has_bars(const run_result_t *r) { return r->bars_pct > 0 && r->bars[0] && r->bars[1]; }

/* One figure to fn: its value and range, from the run and its two error-bar runs (r NULL: NAN). */
static void bar3(run_bar_fn fn, void *ctx, const char *col, const run_result_t *r, double a, double b, double c)
{
    double lo = NAN, hi = NAN;
    if (r) span3(a, b, c, &lo, &hi);
    fn(ctx, col, r ? a : NAN, lo, hi);
}

/* bar3 of figure F of r (NULL: none) */
#define BAR3(fn, ctx, col, r, F)                                                                               \
    do {                                                                                                       \
        if (r) bar3(fn, ctx, col, r, BARS(r, F));                                                              \
        else bar3(fn, ctx, col, NULL, NAN, NAN, NAN);                                                          \
    } while (0)

void run_bars_each(const run_result_t *r, const report_cols_t *c, run_bar_fn fn, void *ctx)
{
    static const char *const serve_keys[] = { "request_throughput", "input_throughput", "output_throughput",
                                              "total_token_throughput" };
    char col[SCN_ID_MAX + 32];
    if (r && !has_bars(r)) r = NULL;
    BAR3(fn, ctx, "makespan_s", r, sum.makespan);
    if (c->serve) {
        const run_result_t *s = r && r->has_serve && r->bars[0]->has_serve && r->bars[1]->has_serve ? r : NULL;
        for (int i = 0; i < 4; i++) {
            double v[3] = { NAN, NAN, NAN };
            for (int k = 0; s && k < 3; k++) {
                const serve_summary_t *x = k ? &s->bars[k - 1]->serve : &s->serve;
                v[k] = i == 0 ? x->req_s : i == 1 ? x->input_tok_s : i == 2 ? x->output_tok_s : x->total_tok_s;
            }
            bar3(fn, ctx, serve_keys[i], s, v[0], v[1], v[2]);
        }
        if (c->goodput) {
            const run_result_t *g = s && s->serve.has_goodput ? s : NULL;
            BAR3(fn, ctx, "request_goodput", g, serve.goodput.req_s);
            BAR3(fn, ctx, "goodput_share", g, serve.goodput.share);
        }
        for (int m = 0; m < SERVE__N; m++) {
            static const char *const st[] = { "mean", "median", "p99" };
            for (int k = 0; k < 3; k++) {
                double v[3] = { NAN, NAN, NAN };
                for (int q = 0; s && q < 3; q++) {
                    const serve_stat_t *x = &(q ? &s->bars[q - 1]->serve : &s->serve)->lat[m];
                    v[q] = 1000 * (k == 0 ? x->mean : k == 1 ? x->median : x->p99);
                }
                snprintf(col, sizeof col, "%s_%s_ms", st[k], serve_metric_key(m));
                bar3(fn, ctx, col, s, v[0], v[1], v[2]);
            }
        }
    }
    for (int k = 0; k < c->nwins; k++) {
        int i = 0;
        while (r && i < r->nwin && strcmp(r->win_name[i], c->wins[k])) i++;
        const run_result_t *w = r && i < r->nwin ? r : NULL;
        BAR3(fn, ctx, c->wins[k], w, win_val[i]);
        if (!c->dist || !c->dist[k]) continue;
        const run_result_t *d = w && w->win_has_dist[i] && w->win_dist[i].n > 0 && w->bars[0]->win_dist[i].n > 0
                                        && w->bars[1]->win_dist[i].n > 0 ? w : NULL;
        static const char *const sfx[] = { "mean", "p50", "p90", "p99" };
        for (int q = 0; q < 4; q++) {
            double v[3] = { NAN, NAN, NAN };
            for (int x = 0; d && x < 3; x++) {
                const win_dist_t *wd = &(x ? d->bars[x - 1] : d)->win_dist[i];
                v[x] = q == 0 ? wd->mean : q == 1 ? wd->p50 : q == 2 ? wd->p90 : wd->p99;
            }
            snprintf(col, sizeof col, "%s_%s", c->wins[k], sfx[q]);
            bar3(fn, ctx, col, d, v[0], v[1], v[2]);
        }
    }
}

typedef struct {
    double pct, best;
    char *name;
    size_t n;
} amp_ctx_t;

static void amp_one(void *ctx, const char *col, double v, double lo, double hi)
{
    amp_ctx_t *a = ctx;
    if (isnan(v) || isnan(lo) || isnan(hi) || v == 0) return;
    double x = (hi - lo) / fabs(v) / (2 * a->pct);   /* its % per 1% of step error */
    x *= 100;
    if (!isnan(a->best) && !(x > a->best)) return;
    a->best = x;
    snprintf(a->name, a->n, "%s", col);
}

static void own_report_cols(const run_result_t *r, report_cols_t *c, const char **cols);

void run_bars_own(const run_result_t *r, run_bar_fn fn, void *ctx)
{
    const char *cols[RUN_MAX_WIN];
    report_cols_t c;
    own_report_cols(r, &c, cols);
    run_bars_each(r, &c, fn, ctx);
}

double run_bars_amplification(const run_result_t *r, char *name, size_t n)
{
    amp_ctx_t a = { r->bars_pct, NAN, name, n };
    if (n) name[0] = 0;
    if (!has_bars(r)) return NAN;
    run_bars_own(r, amp_one, &a);
    return a.best;
}

static const char *kv_name(kv_dtype_t k) { return k == KV_FP8_E5M2 ? "fp8_e5m2" : k == KV_FP8_E4M3 ? "fp8_e4m3" : "fp16"; }

/* s in buf with every control character (a newline, a tab...) as '?': a table line stays one line. */
static const char *table_text(char *buf, size_t n, const char *s)
{
    snprintf(buf, n, "%s", s);
    return setup_msg_line(buf, n);
}

/* A pool's or replica's figures on its table line (undefined ones as 0). */
static void load_line(FILE *f, const run_load_t *l)
{
    run_load_fig_t g;
    run_load_figures(l, &g);
    fprintf(f, "served %ld, ", l->served);
    if (l->prefilled) fprintf(f, "prefilled %ld, ", l->prefilled);
    fprintf(f, "mean batch %.2f, KV use %.1f%% (peak %.1f%%), prefix hits %.1f%%, queue %.2f (peak %ld), busy %.1f%%\n",
            isnan(g.mean_batch) ? 0.0 : g.mean_batch, isnan(g.kv_use) ? 0.0 : 100 * g.kv_use, 100 * g.kv_peak,
            isnan(g.prefix_hit) ? 0.0 : 100 * g.prefix_hit, g.queue_mean, l->peak_waiting,
            isnan(g.busy) ? 0.0 : 100 * g.busy);
}

void report_table(FILE *f, const run_result_t *r)
{
    char t1[sizeof r->description], t2[sizeof r->path];
    fprintf(f, "== %s  (%s)\n", table_text(t1, sizeof t1, r->name), table_text(t2, sizeof t2, r->path));
    if (r->description[0]) fprintf(f, "   %s\n", table_text(t1, sizeof t1, r->description));
    fprintf(f, "   model %s, TP%d, block %d, kv %s, %s %s%.0d, budget %d, max_num_seqs %d, seed %llu\n",
            table_text(t1, sizeof t1, r->model), r->tp, r->block, kv_name(r->kv), r->dflash2 ? "DFlash2" : "MTP",
            r->spec_k ? "K=" : "off", r->spec_k, r->budget,
            r->max_seqs, (unsigned long long)r->seed);
    fprintf(f, "   profile %s (%s)\n", table_text(t1, sizeof t1, r->profile), table_text(t2, sizeof t2, r->gpu));
    fprintf(f, "   cost model: %s\n", r->cost_model);
    fprintf(f, "   KV cache: %ld blocks x %d tokens = %ld tokens\n", r->kv_blocks, r->block,
            r->kv_blocks * (long)r->block);
    /* the fork's knobs: its scheduler's pacing, its router's switches; an upstream run has neither
     * (its attention backend instead) */
    if (r->upstream)
        fprintf(f, "   upstream vLLM v1 scheduler, attention backend %s\n", r->varlen ? "varlen" : "fork (the fork's router)");
    else
        fprintf(f, "   PACE_STEPS=%d PREFIX_DECODE_ROWS=%d SMALLQ_DECODE_MAX_Q=%d D256_BM32_ANY_PAGE=%d\n", r->pace,
                r->pdr, r->smallq, r->anypage);
    int hasref = 0, anyref = 0, anydist = 0;
    for (int i = 0; i < r->nwin; i++) {
        hasref |= r->win_has_ref[i];
        anydist |= r->win_has_dist[i];
    }
    anyref = hasref && !r->ref_off[0];
    int bars = has_bars(r);
    double lo, hi;
    if (bars)
        fprintf(f, "   error bars: the run again with every step at x%.4g and at x%.4g its price (same seed, same"
                   " arrivals); low, high: the least and the most of a figure over the three runs\n",
                1 - r->bars_pct / 100, 1 + r->bars_pct / 100);
    if (r->nwin > 0) {
        fprintf(f, "   %-18s %14s", "window", "simulated");
        if (bars) fprintf(f, " %14s %14s", "low", "high");
        if (anyref) fprintf(f, " %12s %9s", "published", "error");
        fputc('\n', f);
    }
    for (int i = 0; i < r->nwin; i++) {
        fprintf(f, "   %-18s ", r->win_name[i]);
        if (isnan(r->win_val[i])) fprintf(f, "%14s", "n/a");
        else fprintf(f, "%14.4f", r->win_val[i]);
        if (bars) {
            span3(BARS(r, win_val[i]), &lo, &hi);
            if (isnan(lo)) fprintf(f, " %14s %14s", "n/a", "n/a");
            else fprintf(f, " %14.4f %14.4f", lo, hi);
        }
        if (anyref && r->win_has_ref[i]) {
            fprintf(f, " %12.4g", r->win_ref[i]);
            if (!isnan(r->win_val[i]) && r->win_ref[i] != 0)
                fprintf(f, " %+8.1f%%", 100.0 * (r->win_val[i] - r->win_ref[i]) / r->win_ref[i]);
        }
        fputc('\n', f);
    }
    if (anydist) {
        fprintf(f, "   %-18s %9s %10s %10s %10s %10s\n", "over all requests", "n", "mean", "p50", "p90", "p99");
        for (int i = 0; i < r->nwin; i++) {
            const win_dist_t *d = &r->win_dist[i];
            if (!r->win_has_dist[i]) continue;
            fprintf(f, "   %-18s %9ld", r->win_name[i], d->n);
            if (d->n == 0) {
                fprintf(f, " %10s %10s %10s %10s\n", "n/a", "n/a", "n/a", "n/a");
                continue;
            }
            fprintf(f, " %10.4f %10.4f %10.4f %10.4f", d->mean, d->p50, d->p90, d->p99);
            if (d->exact) fputs("  exact\n", f);
            else fprintf(f, "  sketch, within %g%%\n", 100.0 * QUANT_REL_ERR);
            if (!bars) continue;
            double l[4], h[4];
            span3(BARS(r, win_dist[i].mean), &l[0], &h[0]);
            span3(BARS(r, win_dist[i].p50), &l[1], &h[1]);
            span3(BARS(r, win_dist[i].p90), &l[2], &h[2]);
            span3(BARS(r, win_dist[i].p99), &l[3], &h[3]);
            int none = r->bars[0]->win_dist[i].n == 0 || r->bars[1]->win_dist[i].n == 0;   /* as the CSV's */
            for (int k = 0; k < 2; k++) {
                fprintf(f, "   %-18s %9s", k ? "  high" : "  low", "");
                for (int q = 0; q < 4; q++)
                    if (none) fprintf(f, " %10s", "n/a");
                    else fprintf(f, " %10.4f", k ? h[q] : l[q]);
                fputc('\n', f);
            }
        }
    }
    const run_summary_t *S = &r->sum;
    char stop[128] = "";
    if (S->stopped_by_time && S->makespan < r->max_time_s)   /* idle, the next arrival past the stop */
        snprintf(stop, sizeof stop, " [stopped: max_time_s %g s; idle after the last step, nothing more to run before it]",
                 r->max_time_s);
    else if (S->stopped_by_time) snprintf(stop, sizeof stop, " [stopped: max_time_s]");
    else if (S->stopped_by_steps) snprintf(stop, sizeof stop, " [stopped: max_steps]");
    char span[64] = "";
    if (bars) {
        span3(BARS(r, sum.makespan), &lo, &hi);
        snprintf(span, sizeof span, " (low %.3f, high %.3f)", lo, hi);
    }
    fprintf(f, "   steps %ld (decode-only %ld, mixed %ld, prefill-only %ld), preemptions %ld, "
               "requests finished %ld, simulated %.3f s%s%s\n",
            S->steps, S->steps_by_type[STEP_DECODE_ONLY], S->steps_by_type[STEP_MIXED],
            S->steps_by_type[STEP_PREFILL_ONLY], S->preemptions, S->requests_finished, S->makespan, span, stop);
    if (S->pool)
        fprintf(f, "   prefix cache (block pool): %ld lookups, hit %ld of %ld tokens (%.4f), %ld blocks hit,"
                   " %ld evictions, %ld blocks allocated; peak in use %ld (attention %ld, GDN state %ld)\n",
                S->pc_queries, S->pc_hit_tokens, S->pc_query_tokens,
                S->pc_query_tokens > 0 ? (double)S->pc_hit_tokens / (double)S->pc_query_tokens : 0.0,
                S->pc_hit_blocks, S->pc_evictions, S->pc_allocated, S->peak_blocks, S->peak_attn_blocks,
                S->peak_mamba_blocks);
    for (int i = 0; i < r->npools; i++) {
        const run_load_t *p = &r->pools[i];
        fprintf(f, "   pool %s: %d replica%s x TP%d, ", p->pool, p->replicas, p->replicas == 1 ? "" : "s", p->tp);
        load_line(f, p);
        if (r->nreps > RUN_TABLE_REPLICAS) continue;
        for (int k = 0; k < r->nreps; k++) {
            if (strcmp(r->reps[k].pool, p->pool)) continue;
            fprintf(f, "     replica %d: ", k);
            load_line(f, &r->reps[k]);
        }
    }
    if (r->disagg) {
        fprintf(f, "   disaggregated prefill/decode: KV over %s%s%.4g GB/s + %.4g us%s; transfer after the prefill",
                r->kv_link[0] ? r->kv_link : "a link", r->kv_link[0] ? " (" : " of ", r->kv_bw / 1e9, r->kv_lat * 1e6,
                r->kv_layerwise ? (r->kv_link[0] ? ", layer-wise)" : ", layer-wise") : (r->kv_link[0] ? ")" : ""));
        if (r->xfer_n > 0)
            fprintf(f, " mean %.3f ms, p99 %.3f ms (%ld requests%s)\n", r->xfer_mean * 1e3, r->xfer_p99 * 1e3,
                    r->xfer_n, r->xfer_exact ? "" : ", sketch");
        else
            fputs(" n/a (none handed on)\n", f);
    }
    if (r->npools && r->nreps > RUN_TABLE_REPLICAS)
        fprintf(f, "   (%d replicas: a line each only up to %d; --replicas OUT writes every one)\n", r->nreps,
                RUN_TABLE_REPLICAS);
    if (r->env_outside > 0)
        fprintf(f, "   envelope: %.1f%% of step time priced outside the profile's measured envelope (the laws' extrapolation)\n",
                100 * r->env_outside);
    if (anyref && r->ref_source[0]) fprintf(f, "   published: %s\n", r->ref_source);
    if (hasref && r->ref_off[0]) fprintf(f, "   %s\n", r->ref_off);
    report_serve(f, r);
    if (bars) {
        char name[SCN_ID_MAX + 32];
        double amp = run_bars_amplification(r, name, sizeof name);
        if (isnan(amp)) fprintf(f, "   amplification: n/a (no figure with a value)\n");
        else
            fprintf(f, "   amplification: %s moves the most, %.2f%% per 1%% of step error ((high - low) / simulated"
                       " / %g%%; CSV column names)\n", name, amp, 2 * r->bars_pct);
    }
}

/* One line of the summary: vLLM's "{:<40} {:<10.2f}" without the trailing blanks; n/a for NAN. */
static void serve_line(FILE *f, const char *label, double v)
{
    if (isnan(v)) fprintf(f, "   %-40s n/a\n", label);
    else fprintf(f, "   %-40s %.2f\n", label, v);
}

/* The same with its error bars' range [low, high] (the figure in each of the three runs: a,
 * b, c) where the run has them. */
static void serve_line3(FILE *f, const char *label, int bars, double a, double b, double c)
{
    double lo, hi;
    if (!bars) {
        serve_line(f, label, a);
        return;
    }
    span3(a, b, c, &lo, &hi);
    if (isnan(a)) fprintf(f, "   %-40s %-10s", label, "n/a");
    else fprintf(f, "   %-40s %-10.2f", label, a);
    if (isnan(lo)) fprintf(f, " [n/a]\n");
    else fprintf(f, " [%.2f, %.2f]\n", lo, hi);
}

/* A section rule as vLLM's "{s:{c}^{n}}".format(s=title, n=50, c=c): title centred in 50. */
static void serve_rule(FILE *f, const char *title, char c)
{
    int len = (int)strlen(title), pad = 50 - len;
    if (pad < 0) pad = 0;
    fputs("   ", f);
    for (int i = 0; i < pad / 2; i++) fputc(c, f);
    fputs(title, f);
    for (int i = 0; i < pad - pad / 2; i++) fputc(c, f);
    fputc('\n', f);
}

void report_serve(FILE *f, const run_result_t *r)
{
    if (!r->has_serve) return;
    const serve_summary_t *v = &r->serve;
    /* the error bars' runs' summaries (v itself where there are none: never printed) */
    int bars = has_bars(r) && r->bars[0]->has_serve && r->bars[1]->has_serve;
    const serve_summary_t *v0 = bars ? &r->bars[0]->serve : v, *v1 = bars ? &r->bars[1]->serve : v;
#define SV(F) bars, v->F, v0->F, v1->F
    static const char *const headers[SERVE__N] = { "Time to First Token", "Time per Output Token (excl. 1st token)",
                                                   "Inter-token Latency", "End-to-end Latency" };
    char label[64];
    serve_rule(f, " Serving Benchmark Result ", '=');
    fprintf(f, "   %-40s %ld\n", "Successful requests:", v->completed);
    serve_line3(f, "Benchmark duration (s):", SV(duration_s));
    fprintf(f, "   %-40s %ld\n", "Total input tokens:", v->input_tokens);
    fprintf(f, "   %-40s %ld\n", "Total generated tokens:", v->output_tokens);
    serve_line3(f, "Request throughput (req/s):", SV(req_s));
    if (v->has_goodput) {
        char slo[160];
        serve_line3(f, "Request goodput (req/s):", SV(goodput.req_s));
        serve_line3(f, "Good requests (% of successful):", bars, 100 * v->goodput.share, 100 * v0->goodput.share,
                    100 * v1->goodput.share);
        fprintf(f, "   %-40s %s\n", "Goodput objectives:", goodput_slo_text(&v->slo, slo, sizeof slo));
    }
    serve_line3(f, "Input token throughput (tok/s):", SV(input_tok_s));
    serve_line3(f, "Output token throughput (tok/s):", SV(output_tok_s));
    serve_line3(f, "Total token throughput (tok/s):", SV(total_tok_s));
    int sketch = 0;
    for (int m = 0; m < SERVE__N; m++) {
        const serve_stat_t *st = &v->lat[m], *s0 = &v0->lat[m], *s1 = &v1->lat[m];
        const char *nm = serve_metric_name(m);
        serve_rule(f, headers[m], '-');
        snprintf(label, sizeof label, "Mean %s (ms):", nm);
        serve_line3(f, label, bars, 1000 * st->mean, 1000 * s0->mean, 1000 * s1->mean);
        snprintf(label, sizeof label, "Median %s (ms):", nm);
        serve_line3(f, label, bars, 1000 * st->median, 1000 * s0->median, 1000 * s1->median);
        snprintf(label, sizeof label, "P99 %s (ms):", nm);
        serve_line3(f, label, bars, 1000 * st->p99, 1000 * s0->p99, 1000 * s1->p99);
        sketch |= !st->exact;
    }
    serve_rule(f, "", '=');
    if (sketch) fprintf(f, "   (percentiles past %ld values: a sketch within %g%%)\n", QUANT_EXACT_MAX, 100.0 * QUANT_REL_ERR);
#undef SV
}

void report_csv_field(FILE *f, const char *s)
{
    if (!s[strcspn(s, ",\"\r\n")]) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static const char *const serve_cols[] = { "completed", "total_input_tokens", "total_output_tokens",
                                          "request_throughput", "input_throughput", "output_throughput",
                                          "total_token_throughput" };
#define NSERVE_COLS ((int)(sizeof serve_cols / sizeof serve_cols[0]))

static void bar_header(void *ctx, const char *col, double v, double lo, double hi)
{
    FILE *f = ctx;
    char nm[SCN_ID_MAX + 40];
    (void)v, (void)lo, (void)hi;
    snprintf(nm, sizeof nm, "%s_lo", col);
    fputc(',', f);
    report_csv_field(f, nm);
    snprintf(nm, sizeof nm, "%s_hi", col);
    fputc(',', f);
    report_csv_field(f, nm);
}

static void csv_num(FILE *f, double v);

static void bar_row(void *ctx, const char *col, double v, double lo, double hi)
{
    (void)col, (void)v;
    csv_num(ctx, lo);
    csv_num(ctx, hi);
}

void report_csv_header_ex(FILE *f, const report_cols_t *c)
{
    fprintf(f, "scenario,file,profile,tp,block,kv_cache_dtype,num_speculative_tokens,max_num_batched_tokens,"
               "max_num_seqs,PACE_STEPS,PREFIX_DECODE_ROWS,SMALLQ_DECODE_MAX_Q,D256_BM32_ANY_PAGE,seed,"
               "steps,steps_decode,steps_mixed,steps_prefill,preemptions,makespan_s,envelope_outside_share");
    if (c->serve) {
        for (int i = 0; i < NSERVE_COLS; i++) fprintf(f, ",%s", serve_cols[i]);
        if (c->goodput) fputs(",request_goodput,goodput_share", f);
        for (int m = 0; m < SERVE__N; m++) {
            const char *k = serve_metric_key(m);
            fprintf(f, ",mean_%s_ms,median_%s_ms,p99_%s_ms", k, k, k);
        }
    }
    static const char *const dist_sfx[] = { "_n", "_mean", "_p50", "_p90", "_p99" };
    for (int i = 0; i < c->nwins; i++) {
        fputc(',', f);
        report_csv_field(f, c->wins[i]);
        if (c->dist && c->dist[i])
            for (int k = 0; k < 5; k++) {
                char nm[SCN_ID_MAX + 8];
                snprintf(nm, sizeof nm, "%s%s", c->wins[i], dist_sfx[k]);
                fputc(',', f);
                report_csv_field(f, nm);
            }
    }
    static const char *const pool_sfx[] = { "replicas", "served", "mean_batch", "kv_use", "kv_peak", "prefix_hit",
                                            "queue_mean", "queue_peak", "busy" };
    for (int i = 0; i < c->npools; i++)
        for (int k = 0; k < 9; k++) {
            char nm[SCN_ID_MAX + 24];
            snprintf(nm, sizeof nm, "pool_%s_%s", c->pools[i], pool_sfx[k]);
            fputc(',', f);
            report_csv_field(f, nm);
        }
    if (c->bars > 0) {
        fputs(",error_bars_pct", f);
        run_bars_each(NULL, c, bar_header, f);
        fputs(",amplified,amplification", f);
    }
    fputc('\n', f);
}

void report_csv_header_cols(FILE *f, const char *const *wins, int nwins)
{
    report_csv_header_ex(f, &(report_cols_t){ .wins = wins, .nwins = nwins });
}

static void csv_num(FILE *f, double v)
{
    fputc(',', f);
    report_num(f, v);
}

void report_csv_row_ex(FILE *f, const run_result_t *r, const report_cols_t *c)
{
    report_csv_field(f, r->name);
    fputc(',', f);
    report_csv_field(f, r->path);
    fputc(',', f);
    report_csv_field(f, r->profile);
    fprintf(f, ",%d,%d,%s,%d,%d,%d,%d,%d,%d,%d,%llu,%ld,%ld,%ld,%ld,%ld,", r->tp, r->block, kv_name(r->kv),
            r->spec_k, r->budget, r->max_seqs, r->pace, r->pdr, r->smallq, r->anypage, (unsigned long long)r->seed,
            r->sum.steps, r->sum.steps_by_type[STEP_DECODE_ONLY], r->sum.steps_by_type[STEP_MIXED],
            r->sum.steps_by_type[STEP_PREFILL_ONLY], r->sum.preemptions);
    report_num(f, r->sum.makespan);
    csv_num(f, r->env_outside);
    if (c->serve) {
        const serve_summary_t *v = &r->serve;
        int has = r->has_serve;
        if (has) fprintf(f, ",%ld,%ld,%ld", v->completed, v->input_tokens, v->output_tokens);
        else fputs(",,,", f);
        csv_num(f, has ? v->req_s : NAN);
        csv_num(f, has ? v->input_tok_s : NAN);
        csv_num(f, has ? v->output_tok_s : NAN);
        csv_num(f, has ? v->total_tok_s : NAN);
        if (c->goodput) {
            csv_num(f, has && v->has_goodput ? v->goodput.req_s : NAN);
            csv_num(f, has && v->has_goodput ? v->goodput.share : NAN);
        }
        for (int m = 0; m < SERVE__N; m++) {
            csv_num(f, has ? 1000 * v->lat[m].mean : NAN);
            csv_num(f, has ? 1000 * v->lat[m].median : NAN);
            csv_num(f, has ? 1000 * v->lat[m].p99 : NAN);
        }
    }
    for (int k = 0; k < c->nwins; k++) {
        int i = 0;
        while (i < r->nwin && strcmp(r->win_name[i], c->wins[k])) i++;
        fputc(',', f);
        if (i < r->nwin) report_num(f, r->win_val[i]);
        if (!c->dist || !c->dist[k]) continue;
        if (i < r->nwin && r->win_has_dist[i] && r->win_dist[i].n > 0) {
            const win_dist_t *d = &r->win_dist[i];
            fprintf(f, ",%ld", d->n);
            csv_num(f, d->mean);
            csv_num(f, d->p50);
            csv_num(f, d->p90);
            csv_num(f, d->p99);
        } else if (i < r->nwin && r->win_has_dist[i]) {
            fputs(",0,,,,", f);
        } else {
            fputs(",,,,,", f);
        }
    }
    for (int k = 0; k < c->npools; k++) {
        int i = 0;
        while (i < r->npools && strcmp(r->pools[i].pool, c->pools[k])) i++;
        if (i == r->npools) {
            fputs(",,,,,,,,,", f);
            continue;
        }
        fprintf(f, ",%d", r->pools[i].replicas);
        load_fields(f, &r->pools[i], 0);
    }
    if (c->bars > 0) {             /* a run without error bars (none asked of it): empty fields */
        const run_result_t *b = has_bars(r) ? r : NULL;
        char name[SCN_ID_MAX + 32] = "";
        double amp = b ? run_bars_amplification(b, name, sizeof name) : NAN;
        csv_num(f, b ? b->bars_pct : NAN);
        run_bars_each(b, c, bar_row, f);
        fputc(',', f);
        report_csv_field(f, name);
        csv_num(f, amp);
    }
    fputc('\n', f);
}

void report_csv_row_cols(FILE *f, const run_result_t *r, const char *const *wins, int nwins)
{
    report_csv_row_ex(f, r, &(report_cols_t){ .wins = wins, .nwins = nwins });
}

/* r's own window names, for the one-run CSV. */
static int own_cols(const run_result_t *r, const char *cols[RUN_MAX_WIN])
{
    for (int i = 0; i < r->nwin; i++) cols[i] = r->win_name[i];
    return r->nwin;
}

/* r's own pool names. */
static int own_pools(const run_result_t *r, const char *pools[SCN_MAX_POOLS])
{
    for (int i = 0; i < r->npools; i++) pools[i] = r->pools[i].pool;
    return r->npools;
}

/* r's own columns (no pools): the one-run CSV's, the amplification's */
static void own_report_cols(const run_result_t *r, report_cols_t *c, const char **cols)
{
    int n = own_cols(r, cols);
    *c = (report_cols_t){ r->has_serve, r->has_serve && r->serve.has_goodput, cols, n, r->win_has_dist, NULL, 0,
                          has_bars(r) ? r->bars_pct : 0 };
}

void report_csv_header(FILE *f, const run_result_t *r)
{
    const char *cols[RUN_MAX_WIN], *pools[SCN_MAX_POOLS];
    report_cols_t c;
    own_report_cols(r, &c, cols);
    c.pools = pools;
    c.npools = own_pools(r, pools);
    report_csv_header_ex(f, &c);
}

void report_csv_row(FILE *f, const run_result_t *r)
{
    const char *cols[RUN_MAX_WIN], *pools[SCN_MAX_POOLS];
    report_cols_t c;
    own_report_cols(r, &c, cols);
    c.pools = pools;
    c.npools = own_pools(r, pools);
    report_csv_row_ex(f, r, &c);
}
