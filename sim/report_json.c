/* report_json.c: a run as a JSON object.  See report_json.h. */
#include <math.h>
#include <string.h>
#include "report_json.h"

void report_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c == '\n') fputs("\\n", f);
        else if (c == '\t') fputs("\\t", f);
        else if (c < 0x20 || c == 0x7f) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

static void num(FILE *f, double v)
{
    if (!isfinite(v)) fputs("null", f);
    else fprintf(f, "%.10g", v);
}

/* "key": value pairs, a comma before every one but an object's first */
static void key(FILE *f, int *first, const char *k)
{
    fputs(*first ? "" : ", ", f);
    *first = 0;
    report_json_string(f, k);
    fputs(": ", f);
}
static void kv_num(FILE *f, int *first, const char *k, double v) { key(f, first, k); num(f, v); }
static void kv_long(FILE *f, int *first, const char *k, long v) { key(f, first, k); fprintf(f, "%ld", v); }
static void kv_str(FILE *f, int *first, const char *k, const char *v) { key(f, first, k); report_json_string(f, v); }

static const char *kv_dtype(kv_dtype_t k) { return k == KV_FP8_E5M2 ? "fp8_e5m2" : k == KV_FP8_E4M3 ? "fp8_e4m3" : "fp16"; }

static void serving(FILE *f, const serve_summary_t *v)
{
    int first = 1;
    fputc('{', f);
    kv_num(f, &first, "duration", v->duration_s);
    kv_long(f, &first, "completed", v->completed);
    kv_long(f, &first, "total_input_tokens", v->input_tokens);
    kv_long(f, &first, "total_output_tokens", v->output_tokens);
    kv_num(f, &first, "request_throughput", v->req_s);
    if (v->has_goodput) {
        kv_num(f, &first, "request_goodput", v->goodput.req_s);
        kv_num(f, &first, "goodput_share", v->goodput.share);
        kv_long(f, &first, "good_requests", v->goodput.good);
        key(f, &first, "goodput_slo_ms");
        int f2 = 1;
        fputc('{', f);
        if (v->slo.ttft_ms >= 0) kv_num(f, &f2, "ttft", v->slo.ttft_ms);
        if (v->slo.tpot_ms >= 0) kv_num(f, &f2, "tpot", v->slo.tpot_ms);
        if (v->slo.e2el_ms >= 0) kv_num(f, &f2, "e2el", v->slo.e2el_ms);
        fputc('}', f);
    }
    kv_num(f, &first, "input_throughput", v->input_tok_s);
    kv_num(f, &first, "output_throughput", v->output_tok_s);
    kv_num(f, &first, "total_token_throughput", v->total_tok_s);
    char k[32];
    for (int m = 0; m < SERVE__N; m++) {
        const serve_stat_t *st = &v->lat[m];
        const char *mk = serve_metric_key(m);
        snprintf(k, sizeof k, "mean_%s_ms", mk);
        kv_num(f, &first, k, 1000 * st->mean);
        snprintf(k, sizeof k, "median_%s_ms", mk);
        kv_num(f, &first, k, 1000 * st->median);
        snprintf(k, sizeof k, "p90_%s_ms", mk);
        kv_num(f, &first, k, 1000 * st->p90);
        snprintf(k, sizeof k, "p99_%s_ms", mk);
        kv_num(f, &first, k, 1000 * st->p99);
        snprintf(k, sizeof k, "%s_values", mk);
        kv_long(f, &first, k, st->n);
    }
    fputc('}', f);
}

typedef struct {
    FILE *f;
    int first;
} json_bars_t;

/* One figure's range: "COL": [least, most] */
static void json_bar(void *ctx, const char *col, double v, double lo, double hi)
{
    json_bars_t *b = ctx;
    (void)v;
    key(b->f, &b->first, col);
    fputc('[', b->f);
    num(b->f, lo);
    fputs(", ", b->f);
    num(b->f, hi);
    fputc(']', b->f);
}

void report_json_run(FILE *f, const run_result_t *r, long point, const sweep_t *sw, const int *sel)
{
    int first = 1;
    fputs("  {", f);
    kv_str(f, &first, "scenario", r->name);
    kv_str(f, &first, "file", r->path);
    kv_str(f, &first, "profile", r->profile);
    if (point >= 0) kv_long(f, &first, "point", point);
    if (sw && sel && sw->naxes) {
        key(f, &first, "swept");
        int f2 = 1;
        fputc('{', f);
        for (int a = 0; a < sw->naxes; a++) kv_str(f, &f2, sw->axes[a].key, sw->axes[a].vals[sel[a]]);
        fputc('}', f);
    }
    key(f, &first, "settings");
    {
        int f2 = 1;
        fputc('{', f);
        kv_long(f, &f2, "tensor_parallel_size", r->tp);
        kv_long(f, &f2, "block_size", r->block);
        kv_str(f, &f2, "kv_cache_dtype", kv_dtype(r->kv));
        kv_long(f, &f2, "num_speculative_tokens", r->spec_k);
        kv_long(f, &f2, "max_num_batched_tokens", r->budget);
        kv_long(f, &f2, "max_num_seqs", r->max_seqs);
        kv_long(f, &f2, "VLLM_1CAT_PREFILL_PACE_STEPS", r->pace);
        kv_long(f, &f2, "VLLM_FLASH_V100_PREFILL_PREFIX_DECODE_ROWS", r->pdr);
        kv_long(f, &f2, "VLLM_FLASH_V100_SMALLQ_DECODE_MAX_Q", r->smallq);
        kv_long(f, &f2, "VLLM_FLASH_V100_PREFILL_D256_BM32_ANY_PAGE", r->anypage);
        key(f, &f2, "seed");
        fprintf(f, "%llu", (unsigned long long)r->seed);
        fputc('}', f);
    }
    const run_summary_t *S = &r->sum;
    kv_long(f, &first, "steps", S->steps);
    kv_long(f, &first, "steps_decode", S->steps_by_type[STEP_DECODE_ONLY]);
    kv_long(f, &first, "steps_mixed", S->steps_by_type[STEP_MIXED]);
    kv_long(f, &first, "steps_prefill", S->steps_by_type[STEP_PREFILL_ONLY]);
    kv_long(f, &first, "preemptions", S->preemptions);
    kv_long(f, &first, "requests_finished", S->requests_finished);
    kv_num(f, &first, "makespan_s", S->makespan);
    key(f, &first, "stopped");
    fputs(S->stopped_by_time ? "\"max_time_s\"" : S->stopped_by_steps ? "\"max_steps\"" : "null", f);
    kv_num(f, &first, "envelope_outside_share", r->env_outside);
    if (r->has_serve) {
        key(f, &first, "serving");
        serving(f, &r->serve);
    }
    key(f, &first, "windows");
    fputc('{', f);
    int fw = 1;
    for (int i = 0; i < r->nwin; i++) {
        key(f, &fw, r->win_name[i]);
        int f3 = 1;
        fputc('{', f);
        kv_num(f, &f3, "value", r->win_val[i]);
        if (r->win_has_ref[i] && !r->ref_off[0]) kv_num(f, &f3, "published", r->win_ref[i]);
        if (r->win_has_dist[i]) {
            const win_dist_t *d = &r->win_dist[i];
            kv_long(f, &f3, "n", d->n);
            kv_num(f, &f3, "mean", d->mean);
            kv_num(f, &f3, "p50", d->p50);
            kv_num(f, &f3, "p90", d->p90);
            kv_num(f, &f3, "p99", d->p99);
            key(f, &f3, "exact");
            fputs(d->exact ? "true" : "false", f);
        }
        fputc('}', f);
    }
    fputc('}', f);
    if (r->npools) {               /* a cluster: its pools' figures (runner.h, run_load_figures) */
        key(f, &first, "pools");
        fputc('{', f);
        int fp = 1;
        for (int i = 0; i < r->npools; i++) {
            const run_load_t *l = &r->pools[i];
            run_load_fig_t g;
            run_load_figures(l, &g);
            key(f, &fp, l->pool);
            int f3 = 1;
            fputc('{', f);
            kv_long(f, &f3, "replicas", l->replicas);
            kv_long(f, &f3, "tensor_parallel_size", l->tp);
            kv_long(f, &f3, "served", l->served);
            kv_long(f, &f3, "prefilled", l->prefilled);
            kv_long(f, &f3, "steps", l->steps);
            kv_num(f, &f3, "mean_batch", g.mean_batch);
            kv_num(f, &f3, "kv_use", g.kv_use);
            kv_num(f, &f3, "kv_peak", g.kv_peak);
            kv_num(f, &f3, "prefix_hit", g.prefix_hit);
            kv_num(f, &f3, "queue_mean", g.queue_mean);
            kv_long(f, &f3, "queue_peak", l->peak_waiting);
            kv_num(f, &f3, "busy", g.busy);
            fputc('}', f);
        }
        fputc('}', f);
    }
    if (r->bars_pct > 0 && r->bars[0] && r->bars[1]) {   /* run --error-bars P: the CSV's COL_lo, COL_hi */
        char name[SCN_ID_MAX + 32];
        double amp = run_bars_amplification(r, name, sizeof name);
        key(f, &first, "error_bars");
        int f3 = 1;
        fputc('{', f);
        kv_num(f, &f3, "pct", r->bars_pct);
        kv_str(f, &f3, "amplified", name);
        kv_num(f, &f3, "amplification", amp);
        key(f, &f3, "ranges");
        json_bars_t b = { f, 1 };
        fputc('{', f);
        run_bars_own(r, json_bar, &b);
        fputs("}}", f);
    }
    if (r->disagg) {               /* disaggregated: the KV link and the transfers after the prefill */
        key(f, &first, "kv_transfer");
        int f3 = 1;
        fputc('{', f);
        if (r->kv_link[0]) kv_str(f, &f3, "link", r->kv_link);
        kv_num(f, &f3, "bandwidth_GBps", r->kv_bw / 1e9);
        kv_num(f, &f3, "latency_us", r->kv_lat * 1e6);
        key(f, &f3, "layerwise");
        fputs(r->kv_layerwise ? "true" : "false", f);
        kv_long(f, &f3, "n", r->xfer_n);
        kv_num(f, &f3, "mean_s", r->xfer_n ? r->xfer_mean : NAN);
        kv_num(f, &f3, "p99_s", r->xfer_n ? r->xfer_p99 : NAN);
        fputc('}', f);
    }
    fputc('}', f);
}
