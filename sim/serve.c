/* serve.c: the serving benchmark's summary and goodput.  See serve.h. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "request.h"
#include "quant.h"
#include "serve.h"

static const char *const keys[SERVE__N] = { "ttft", "tpot", "itl", "e2el" };
static const char *const names[SERVE__N] = { "TTFT", "TPOT", "ITL", "E2EL" };

const char *serve_metric_key(int m) { return m >= 0 && m < SERVE__N ? keys[m] : "?"; }
const char *serve_metric_name(int m) { return m >= 0 && m < SERVE__N ? names[m] : "?"; }

int goodput_slo_parse(goodput_slo_t *slo, const char *pair, char *err, size_t errn)
{
    const char *colon = strchr(pair, ':');
    if (!colon) {
        snprintf(err, errn, "--goodput %s: expected KEY:MS (ttft, tpot or e2el, in milliseconds)", pair);
        return -1;
    }
    size_t klen = (size_t)(colon - pair);
    double *dst = NULL;
    if (klen == 4 && !strncmp(pair, "ttft", 4)) dst = &slo->ttft_ms;
    else if (klen == 4 && !strncmp(pair, "tpot", 4)) dst = &slo->tpot_ms;
    else if (klen == 4 && !strncmp(pair, "e2el", 4)) dst = &slo->e2el_ms;
    if (!dst) {
        snprintf(err, errn, "--goodput %s: the objective's name must be ttft, tpot or e2el", pair);
        return -1;
    }
    const char *v = colon + 1;
    char *end;
    errno = 0;
    double ms = strtod(v, &end);
    if (!*v || isspace((unsigned char)*v) || *end || errno == ERANGE || !isfinite(ms) || ms < 0) {
        snprintf(err, errn, "--goodput %s: the objective must be a number of milliseconds >= 0", pair);
        return -1;
    }
    *dst = ms;
    return 0;
}

int goodput_slo_any(const goodput_slo_t *slo)
{
    return slo && (slo->ttft_ms >= 0 || slo->tpot_ms >= 0 || slo->e2el_ms >= 0);
}

const char *goodput_slo_text(const goodput_slo_t *slo, char *buf, size_t n)
{
    const double v[3] = { slo->ttft_ms, slo->tpot_ms, slo->e2el_ms };
    const char *k[3] = { "ttft", "tpot", "e2el" };
    size_t o = 0;
    buf[0] = 0;
    for (int i = 0; i < 3; i++)
        if (v[i] >= 0 && o < n) o += (size_t)snprintf(buf + o, n - o, "%s%s <= %g ms", o ? ", " : "", k[i], v[i]);
    return buf;
}

int metrics_goodput_good(const goodput_slo_t *slo, double ttft_s, double tpot_s, double e2el_s)
{
    /* vLLM: all(s >= r for the objectives given), the objective converted from ms to s */
    if (slo->ttft_ms >= 0 && !(slo->ttft_ms / 1000.0 >= ttft_s)) return 0;
    if (slo->tpot_ms >= 0 && !(slo->tpot_ms / 1000.0 >= tpot_s)) return 0;
    if (slo->e2el_ms >= 0 && !(slo->e2el_ms / 1000.0 >= e2el_s)) return 0;
    return 1;
}

goodput_t metrics_goodput_counts(long good, long completed, double duration_s)
{
    goodput_t g = { .completed = completed, .good = good };
    g.share = completed > 0 ? (double)good / (double)completed : NAN;
    g.req_s = duration_s > 0 ? (double)good / duration_s : NAN;
    return g;
}

goodput_t metrics_goodput(const goodput_slo_t *slo, const goodput_req_t *reqs, long n, double duration_s)
{
    long good = 0;
    for (long i = 0; i < n; i++) good += metrics_goodput_good(slo, reqs[i].ttft_s, reqs[i].tpot_s, reqs[i].e2el_s);
    return metrics_goodput_counts(good, n, duration_s);
}

/* ---- the accumulator --------------------------------------------------------------- */

struct serve_acc {
    quant_t q[SERVE__N];
    long completed, input_tokens, output_tokens, good;
    int has_slo;
    goodput_slo_t slo;
};

serve_acc_t *serve_acc_new(const goodput_slo_t *slo)
{
    serve_acc_t *a = calloc(1, sizeof *a);
    if (!a) return NULL;
    for (int m = 0; m < SERVE__N; m++) quant_init(&a->q[m], 0);
    a->has_slo = goodput_slo_any(slo);
    a->slo = a->has_slo ? *slo : GOODPUT_SLO_NONE;
    return a;
}

int serve_acc_finish(serve_acc_t *a, const struct req *r)
{
    const double *t = r->t_ev;
    double ttft = t[EV_FIRST_TOKEN] - t[EV_ARRIVAL];
    double e2el = t[EV_FINISHED] - t[EV_ARRIVAL];
    double tpot = r->output > 1 ? (t[EV_FINISHED] - t[EV_FIRST_TOKEN]) / (double)(r->output - 1) : 0.0;
    a->completed++;
    a->input_tokens += r->prompt;
    a->output_tokens += r->output;
    if (a->has_slo) a->good += metrics_goodput_good(&a->slo, ttft, tpot, e2el);
    if (quant_add(&a->q[SERVE_TTFT], ttft) < 0 || quant_add(&a->q[SERVE_E2EL], e2el) < 0) return -1;
    if (r->output > 1 && quant_add(&a->q[SERVE_TPOT], tpot) < 0) return -1;
    return 0;
}

int serve_acc_itl(serve_acc_t *a, double gap_s) { return quant_add(&a->q[SERVE_ITL], gap_s); }

void serve_acc_summary(serve_acc_t *a, double duration_s, serve_summary_t *o)
{
    memset(o, 0, sizeof *o);
    o->completed = a->completed;
    o->input_tokens = a->input_tokens;
    o->output_tokens = a->output_tokens;
    o->duration_s = duration_s;
    double d = duration_s > 0 ? duration_s : NAN;
    o->req_s = (double)a->completed / d;
    o->input_tok_s = (double)a->input_tokens / d;
    o->output_tok_s = (double)a->output_tokens / d;
    o->total_tok_s = (double)(a->input_tokens + a->output_tokens) / d;
    for (int m = 0; m < SERVE__N; m++) {
        quant_t *q = &a->q[m];
        o->lat[m] = (serve_stat_t){ .n = q->n, .mean = quant_mean(q), .median = quant_quantile(q, 0.50),
                                    .p90 = quant_quantile(q, 0.90), .p99 = quant_quantile(q, 0.99),
                                    .exact = quant_is_exact(q) };
    }
    o->has_goodput = a->has_slo;
    o->slo = a->slo;
    if (a->has_slo) o->goodput = metrics_goodput_counts(a->good, a->completed, duration_s);
}

void serve_acc_free(serve_acc_t *a)
{
    if (!a) return;
    for (int m = 0; m < SERVE__N; m++) quant_free(&a->q[m]);
    free(a);
}
