/* metrics.c: user-defined measurement windows (scenario `measure:`), updated at
 * every step end.  A window [from, to] is bounded by two marks (a request reaching
 * an event, or the run's start/end).  Admission happens at the start of the step
 * that schedules the first chunk; first_token and finished at the end of the step
 * that produces them.  A step belongs to a window iff it ends after `from` and no
 * later than `to`; tokens and steps are counted over those steps.  A window whose
 * marks were never reached is undefined (NAN), never zero.
 * A latency window (ttft, tpot, itl, e2e, queueing) over all requests keeps its values in
 * a quant_t (quant.h: exact up to QUANT_EXACT_MAX values, a sketch with relative error
 * QUANT_REL_ERR past that): a request's ttft, tpot (output > 1), e2e and queueing when it
 * finishes, every token gap (itl) as it happens, including gaps of requests still running
 * at the stop.  Its value is the window's stat: the mean (ttft, tpot, itl: over finished
 * requests, the run summary's sums) or a percentile of those values. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "metrics.h"
#include "serve.h"

static int slot_of(const scenario_t *s, const int *explicit_slot, const char *id)
{
    if (!id[0] || !strcmp(id, "*")) return -1;
    for (int i = 0; i < s->n_requests; i++)
        if (!strcmp(s->requests[i].id, id)) return explicit_slot[i];
    return -1;
}

int metrics_init(metrics_t *e, const scenario_t *s, const reqpool_t *rp, const int *explicit_slot, char *err)
{
    e->s = s;
    e->rp = rp;
    e->err = err;
    e->win = calloc((size_t)s->n_windows + 1, sizeof *e->win);
    if (!e->win) {
        snprintf(e->err, ENG_ERR_MAX, "out of memory");
        return -1;
    }
    for (int i = 0; i < s->n_windows; i++) {
        const scn_window_t *w = &s->windows[i];
        win_state_t *ws = &e->win[i];
        ws->value = NAN;
        ws->from_slot = w->from.is_set ? slot_of(s, explicit_slot, w->from.ref) : -1;
        ws->to_slot = w->to.is_set ? slot_of(s, explicit_slot, w->to.ref) : -1;
        ws->req_slot = slot_of(s, explicit_slot, w->request);
        if (scn_win_is_latency(w->kind) && ws->req_slot < 0) {
            if (!(ws->lat = malloc(sizeof *ws->lat))) {
                snprintf(e->err, ENG_ERR_MAX, "out of memory");
                return -1;
            }
            quant_init(ws->lat, 0);
            e->itl_wins += w->kind == WIN_ITL;
        }
    }
    return 0;
}

void metrics_free(metrics_t *e)
{
    if (!e->win) return;
    for (int i = 0; e->s && i < e->s->n_windows; i++)
        if (e->win[i].lat) {
            quant_free(e->win[i].lat);
            free(e->win[i].lat);
        }
    free(e->win);
    e->win = NULL;
}

/* A finished request's value for a latency kind other than itl (NAN: none). */
static double req_latency(win_kind_t k, const req_t *r)
{
    const double *t = r->t_ev;
    switch (k) {
    case WIN_TTFT:
        return t[EV_FIRST_TOKEN] >= 0 ? t[EV_FIRST_TOKEN] - t[EV_ARRIVAL] : NAN;
    case WIN_TPOT:
        return t[EV_FIRST_TOKEN] >= 0 && t[EV_FINISHED] >= 0 && r->output > 1
                   ? (t[EV_FINISHED] - t[EV_FIRST_TOKEN]) / (double)(r->output - 1) : NAN;
    case WIN_E2E:
        return t[EV_FINISHED] >= 0 ? t[EV_FINISHED] - t[EV_ARRIVAL] : NAN;
    case WIN_QUEUEING:
        return t[EV_ADMITTED] >= 0 ? t[EV_ADMITTED] - t[EV_ARRIVAL] : NAN;
    default:
        return NAN;
    }
}

static int lat_add(metrics_t *e, quant_t *q, double v)
{
    if (isnan(v) || quant_add(q, v) == 0) return 0;
    snprintf(e->err, ENG_ERR_MAX, "out of memory");
    return -1;
}

int metrics_on_finish(metrics_t *e, const req_t *r)
{
    if (e->serve && serve_acc_finish(e->serve, r) < 0) {
        snprintf(e->err, ENG_ERR_MAX, "out of memory");
        return -1;
    }
    for (int i = 0; i < e->s->n_windows; i++) {
        win_kind_t k = e->s->windows[i].kind;
        if (e->win[i].lat && k != WIN_ITL && lat_add(e, e->win[i].lat, req_latency(k, r)) < 0) return -1;
    }
    return 0;
}

int metrics_on_itl(metrics_t *e, double gap)
{
    if (e->serve && serve_acc_itl(e->serve, gap) < 0) {
        snprintf(e->err, ENG_ERR_MAX, "out of memory");
        return -1;
    }
    for (int i = 0; i < e->s->n_windows; i++)
        if (e->win[i].lat && e->s->windows[i].kind == WIN_ITL && lat_add(e, e->win[i].lat, gap) < 0) return -1;
    return 0;
}

/* Time a mark was reached: 0 / +inf for unbounded from / to, -1 if not yet. */
static double mark_time(const metrics_t *e, const scn_mark_t *m, int slot, int is_from)
{
    if (!m->is_set) return is_from ? 0.0 : INFINITY;
    if (slot < 0) return -1;
    return e->rp->r[slot].t_ev[m->event];
}

void metrics_on_step(metrics_t *e, const step_rec_t *st)
{
    const scenario_t *s = e->s;
    double t_end = st->t0 + st->dt;
    for (int i = 0; i < s->n_windows; i++) {
        const scn_window_t *w = &s->windows[i];
        win_state_t *ws = &e->win[i];
        if (ws->closed) continue;
        if (w->kind != WIN_RATE && w->kind != WIN_TOKENS && w->kind != WIN_STEPS) continue;
        double tf = mark_time(e, &w->from, ws->from_slot, 1);
        if (tf < 0 || !(t_end > tf)) continue;
        double tt = mark_time(e, &w->to, ws->to_slot, 0);
        if (tt >= 0 && t_end > tt) {            /* closed before this step */
            ws->closed = 1;
            continue;
        }
        if (w->kind == WIN_STEPS) {
            if (w->step_type == STEP_ANY || w->step_type == st->type) ws->count++;
        } else {
            for (int r = 0; r < st->nrows; r++)
                if (ws->req_slot < 0 || st->rows[r].req == ws->req_slot) ws->acc += (double)st->rows[r].emitted;
        }
        if (tt >= 0 && t_end >= tt) ws->closed = 1;
    }
}

void metrics_finish(metrics_t *e, const run_summary_t *S)
{
    const scenario_t *s = e->s;
    for (int i = 0; i < s->n_windows; i++) {
        const scn_window_t *w = &s->windows[i];
        win_state_t *ws = &e->win[i];
        double tf = mark_time(e, &w->from, ws->from_slot, 1);
        double tt = mark_time(e, &w->to, ws->to_slot, 0);
        if (isinf(tt)) tt = S->makespan;
        int have = tf >= 0 && tt >= 0 && tt >= tf;
        ws->t_from = tf;
        ws->t_to = tt;
        ws->value = NAN;
        const req_t *r = ws->req_slot >= 0 ? &e->rp->r[ws->req_slot] : NULL;
        switch (w->kind) {
        case WIN_RATE:
            if (have && tt > tf) ws->value = ws->acc / (tt - tf);
            break;
        case WIN_TOKENS:
            if (have) ws->value = ws->acc;
            break;
        case WIN_STEPS:
            if (have) ws->value = (double)ws->count;
            break;
        case WIN_DURATION:
            if (have) ws->value = tt - tf;
            break;
        case WIN_TTFT:
            if (r) {
                if (r->t_ev[EV_FIRST_TOKEN] >= 0) ws->value = r->t_ev[EV_FIRST_TOKEN] - r->t_ev[EV_ARRIVAL];
            } else if (S->ttft_n > 0) {
                ws->value = S->ttft_sum / (double)S->ttft_n;
            }
            break;
        case WIN_TPOT:
            if (r) {
                double last = r->t_ev[EV_FINISHED] >= 0 ? r->t_ev[EV_FINISHED] : r->t_last_tok;
                if (r->t_ev[EV_FIRST_TOKEN] >= 0 && r->emitted > 1)
                    ws->value = (last - r->t_ev[EV_FIRST_TOKEN]) / (double)(r->emitted - 1);
            } else if (S->tpot_n > 0) {
                ws->value = S->tpot_sum / (double)S->tpot_n;
            }
            break;
        case WIN_ITL:
            if (r) {
                if (r->itl_n > 0) ws->value = r->itl_sum / (double)r->itl_n;
            } else if (S->itl_n > 0) {
                ws->value = S->itl_sum / (double)S->itl_n;
            }
            break;
        case WIN_PREFIX_HIT:
            if (r) {
                if (r->t_ev[EV_ADMITTED] >= 0) ws->value = (double)r->cache_hit / (double)r->target;
            } else if (S->adm_tokens > 0) {
                ws->value = (double)S->adm_hit_tokens / (double)S->adm_tokens;
            }
            break;
        case WIN_EVICTIONS:
            if (S->pool) ws->value = (double)S->pc_evictions;
            break;
        case WIN_THROUGHPUT:
            if (S->makespan > 0) ws->value = (double)S->tokens_emitted / S->makespan;
            break;
        case WIN_E2E:
        case WIN_QUEUEING:
            if (r) ws->value = req_latency(w->kind, r);
            else if (ws->lat) ws->value = quant_mean(ws->lat);
            break;
        default:
            break;
        }
        if (ws->lat) {
            quant_t *q = ws->lat;
            ws->dist = (win_dist_t){ .n = q->n, .mean = quant_mean(q), .p50 = quant_quantile(q, 0.50),
                                     .p90 = quant_quantile(q, 0.90), .p99 = quant_quantile(q, 0.99),
                                     .exact = quant_is_exact(q) };
            if (w->stat != STAT_MEAN) ws->value = quant_quantile(q, scn_stat_quantile(w->stat));
        }
    }
}
