/* runner.c: one scenario run end to end, and its reports.  See runner.h. */
#include <math.h>
#include <string.h>
#include "runner.h"
#include "setup.h"

typedef struct {
    FILE *f;
    const runner_hooks_t *h;
} steps_ctx_t;

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

static void steps_row(FILE *f, const engine_t *e, const step_rec_t *st)
{
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
    if (c->f) steps_row(c->f, e, st);
    if (c->h && c->h->on_step) c->h->on_step(c->h->ctx, e, st);
}

static void copy_settings(run_result_t *res, const scenario_t *s)
{
    snprintf(res->name, sizeof res->name, "%s", s->name);
    snprintf(res->profile, sizeof res->profile, "%s", s->profile_path[0] ? s->profile_path : "analytic");
    snprintf(res->model, sizeof res->model, "%s", s->model.name);
    snprintf(res->ref_source, sizeof res->ref_source, "%s", s->reference_source);
    res->tp = s->engine.tensor_parallel_size;
    res->spec_k = s->engine.spec_mtp ? s->engine.num_speculative_tokens : 0;
    res->budget = s->engine.max_num_batched_tokens;
    res->max_seqs = s->engine.max_num_seqs;
    res->kv = s->engine.kv_cache_dtype;
    res->pace = s->env.pace_steps;
    res->pdr = s->env.prefix_decode_rows;
    res->smallq = s->env.smallq_decode_max_q;
    res->anypage = s->env.d256_bm32_any_page;
    res->seed = s->seed;
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

void runner_run_ex(const char *path, const char *const *sets, int nsets, const runner_hooks_t *h,
                   run_result_t *res)
{
    FILE *steps_out = h ? h->steps_out : NULL;
    setup_t u;

    memset(res, 0, sizeof *res);
    snprintf(res->path, sizeof res->path, "%s", path);
    if (setup_open(&u, path, sets, nsets) < 0) {
        res->rc = 2;
        snprintf(res->err, sizeof res->err, "%s", u.err);
        goto out;
    }
    copy_settings(res, &u.s);
    snprintf(res->gpu, sizeof res->gpu, "%s", u.hw);
    engine_t *e = &u.e;
    steps_ctx_t sc = { steps_out, h };
    res->block = e->block;
    if (steps_out || (h && h->on_step)) {
        e->observer = run_observer;
        e->observer_ctx = &sc;
    }
    if (steps_out) {
        fprintf(steps_out, "step,t_start_s,dur_s,type,rows,tokens,attn_s,linear_s,gdn_s,elementwise_s,"
                           "allreduce_s,overhead_s,mtp_s,detail\n");
    }
    int erc = engine_run(e);
    if (h && h->on_end) h->on_end(h->ctx, e);
    if (erc < 0) {
        res->rc = erc == ENG_EINPUT ? 2 : 1;
        snprintf(res->err, sizeof res->err, "%s", e->err);
        setup_msg_line(res->err, sizeof res->err);
        goto out;
    }
    res->sum = e->sum;
    for (int i = 0; i < res->nwin; i++) res->win_val[i] = engine_window(e, i);
out:
    setup_close(&u);
}

void report_num(FILE *f, double v)
{
    if (isnan(v)) return;
    fprintf(f, "%.6g", v);
}

static const char *kv_name(kv_dtype_t k) { return k == KV_FP8_E5M2 ? "fp8_e5m2" : "fp16"; }

void report_table(FILE *f, const run_result_t *r)
{
    fprintf(f, "== %s  (%s)\n", r->name, r->path);
    fprintf(f, "   model %s, TP%d, block %d, kv %s, MTP %s%.0d, budget %d, max_num_seqs %d, seed %llu\n",
            r->model, r->tp, r->block, kv_name(r->kv), r->spec_k ? "K=" : "off", r->spec_k, r->budget,
            r->max_seqs, (unsigned long long)r->seed);
    fprintf(f, "   profile %s (%s)\n", r->profile, r->gpu);
    fprintf(f, "   PACE_STEPS=%d PREFIX_DECODE_ROWS=%d SMALLQ_DECODE_MAX_Q=%d D256_BM32_ANY_PAGE=%d\n", r->pace,
            r->pdr, r->smallq, r->anypage);
    int anyref = 0;
    for (int i = 0; i < r->nwin; i++) anyref |= r->win_has_ref[i];
    fprintf(f, "   %-18s %14s", "window", "simulated");
    if (anyref) fprintf(f, " %12s %9s", "published", "error");
    fputc('\n', f);
    for (int i = 0; i < r->nwin; i++) {
        fprintf(f, "   %-18s ", r->win_name[i]);
        if (isnan(r->win_val[i])) fprintf(f, "%14s", "n/a");
        else fprintf(f, "%14.4f", r->win_val[i]);
        if (r->win_has_ref[i]) {
            fprintf(f, " %12.4g", r->win_ref[i]);
            if (!isnan(r->win_val[i]) && r->win_ref[i] != 0)
                fprintf(f, " %+8.1f%%", 100.0 * (r->win_val[i] - r->win_ref[i]) / r->win_ref[i]);
        }
        fputc('\n', f);
    }
    const run_summary_t *S = &r->sum;
    fprintf(f, "   steps %ld (decode-only %ld, mixed %ld, prefill-only %ld), preemptions %ld, "
               "requests finished %ld, simulated %.3f s%s%s\n",
            S->steps, S->steps_by_type[STEP_DECODE_ONLY], S->steps_by_type[STEP_MIXED],
            S->steps_by_type[STEP_PREFILL_ONLY], S->preemptions, S->requests_finished, S->makespan,
            S->stopped_by_time ? " [stopped: max_time_s]" : "", S->stopped_by_steps ? " [stopped: max_steps]" : "");
    if (anyref && r->ref_source[0]) fprintf(f, "   published: %s\n", r->ref_source);
}

void report_csv_header(FILE *f, const run_result_t *r)
{
    fprintf(f, "scenario,file,profile,tp,block,kv_cache_dtype,num_speculative_tokens,max_num_batched_tokens,"
               "max_num_seqs,PACE_STEPS,PREFIX_DECODE_ROWS,SMALLQ_DECODE_MAX_Q,D256_BM32_ANY_PAGE,seed,"
               "steps,mixed_steps,preemptions,makespan_s");
    for (int i = 0; i < r->nwin; i++) fprintf(f, ",%s", r->win_name[i]);
    fputc('\n', f);
}

void report_csv_row(FILE *f, const run_result_t *r)
{
    fprintf(f, "%s,%s,%s,%d,%d,%s,%d,%d,%d,%d,%d,%d,%d,%llu,%ld,%ld,%ld,", r->name, r->path, r->profile, r->tp,
            r->block, kv_name(r->kv), r->spec_k, r->budget, r->max_seqs, r->pace, r->pdr, r->smallq, r->anypage,
            (unsigned long long)r->seed, r->sum.steps, r->sum.steps_by_type[STEP_MIXED], r->sum.preemptions);
    report_num(f, r->sum.makespan);
    for (int i = 0; i < r->nwin; i++) {
        fputc(',', f);
        report_num(f, r->win_val[i]);
    }
    fputc('\n', f);
}
