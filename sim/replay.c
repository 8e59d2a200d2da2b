/* replay.c: the replay's report, and the recorded cost model behind `pacesim rescore`
 * (a GPU replay's measured step times, re-read, priced beside the current profile). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "engine.h"
#include "replay.h"

int replay_log_add(replay_log_t *log, const replay_rec_t *r)
{
    if (log->n == log->cap) {
        long cap = log->cap ? 2 * log->cap : 256;
        replay_rec_t *p = realloc(log->rec, (size_t)cap * sizeof *p);
        if (!p) return -1;
        log->rec = p;
        log->cap = cap;
    }
    log->rec[log->n++] = *r;
    return 0;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int replay_stats(const replay_rec_t *rec, long n, int type, replay_stats_t *st)
{
    memset(st, 0, sizeof *st);
    double *e = malloc((size_t)(n + 1) * sizeof *e);
    if (!e) return -1;
    for (long i = 0; i < n; i++) {
        if (rec[i].type != type) continue;
        e[st->n++] = fabs(rec[i].predicted / rec[i].measured - 1);
        st->predicted += rec[i].predicted;
        st->measured += rec[i].measured;
    }
    if (st->n) {
        qsort(e, (size_t)st->n, sizeof *e, cmp_d);
        st->median = st->n % 2 ? e[st->n / 2] : 0.5 * (e[st->n / 2 - 1] + e[st->n / 2]);
        st->max = e[st->n - 1];
    }
    free(e);
    return 0;
}

int replay_report(FILE *f, const scenario_t *s, const char *file, const char *gpu, const replay_rec_t *rec, long n,
                  const engine_t *ep, const engine_t *eg)
{
    fprintf(f, "== replay %s  (%s, profile %s)\n", s->name, file, gpu);
    fprintf(f, "   %-10s %6s %14s %14s %10s %10s\n", "step type", "steps", "predicted s", "measured s", "median err",
            "max err");
    for (int ty = STEP_DECODE_ONLY; ty <= STEP_PREFILL_ONLY; ty++) {
        replay_stats_t st;
        if (replay_stats(rec, n, ty, &st) < 0) return -1;
        if (st.n)
            fprintf(f, "   %-10s %6ld %14.4f %14.4f %9.1f%% %9.1f%%\n", engine_step_type_name(ty), st.n, st.predicted,
                    st.measured, 100 * st.median, 100 * st.max);
    }
    fprintf(f, "   %-18s %14s %14s %9s\n", "window", "predicted", "measured", "error");
    for (int i = 0; i < s->n_windows; i++) {
        double a = engine_window(ep, i), b = engine_window(eg, i);
        fprintf(f, "   %-18s %14.4f %14.4f %+8.1f%%\n", s->windows[i].name, a, b, b != 0 ? 100 * (a / b - 1) : 0.0);
    }
    fprintf(f, "   steps %ld / %ld (profile run / measured run)\n", ep->sum.steps, eg->sum.steps);
    return 0;
}

int replay_steps_csv(const char *path, const replay_rec_t *rec, long n)
{
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fprintf(f, "step,type,predicted_s,measured_s,pred_attn_s,meas_attn_s,sm_clock_mhz,power_w,clock_reasons\n");
    for (long i = 0; i < n; i++)
        fprintf(f, "%ld,%s,%.9g,%.9g,%.9g,%.9g,%.0f,%.0f,%#llx\n", rec[i].no, engine_step_type_name(rec[i].type),
                rec[i].predicted, rec[i].measured, rec[i].pred_attn, rec[i].meas_attn, rec[i].clock_mhz, rec[i].power_w,
                rec[i].clock_why);
    return fclose(f);
}

cost_model_t *replay_model_new(const char *name, void *impl, replay_step_fn step, void (*destroy)(cost_model_t *cm))
{
    cost_model_t *cm = calloc(1, sizeof *cm);
    if (!cm) return NULL;
    cm->name = name;
    cm->impl = impl;
    cm->step = step;
    cm->destroy = destroy;
    return cm;
}

/* ---- the recorded model ---------------------------------------------------------- */

typedef struct {
    cost_model_t *pred;           /* borrowed */
    long nmeas;
    double *meas, *meas_attn;     /* per recorded step */
    int *type;
    replay_log_t log;
} rm_t;

static int step_type_of(const cost_step_t *in)
{
    return in->rows == in->decode_rows ? STEP_DECODE_ONLY : in->decode_rows == 0 ? STEP_PREFILL_ONLY : STEP_MIXED;
}

static int rm_step(cost_model_t *cm, const cost_step_t *in, cost_breakdown_t *o)
{
    rm_t *r = cm->impl;
    cost_breakdown_t pb;
    memset(&pb, 0, sizeof pb);
    if (r->pred->step(r->pred, in, &pb) < 0) {
        snprintf(cm->err, sizeof cm->err, "prediction: %s", r->pred->err);
        return -1;
    }
    long i = r->log.n;
    int ty = step_type_of(in);
    if (i >= r->nmeas) {
        snprintf(cm->err, sizeof cm->err, "the run has more steps than the recording (%ld): not the recorded scenario?",
                 r->nmeas);
        return -1;
    }
    if (r->type[i] != ty) {
        snprintf(cm->err, sizeof cm->err, "step %ld is %s here but %s in the recording: not the recorded scenario?",
                 i + 1, engine_step_type_name(ty), engine_step_type_name(r->type[i]));
        return -1;
    }
    /* the measured time, split as the prediction splits it (attention as recorded) */
    double k = pb.total > 0 ? r->meas[i] / pb.total : 0;
    *o = pb;
    o->linear *= k, o->gdn *= k, o->elementwise *= k, o->allreduce *= k, o->overhead *= k, o->mtp *= k;
    for (int q = 0; q < ROUTE__N; q++) o->attn_route[q] *= k;
    o->attn *= k;
    o->total = r->meas[i];
    replay_rec_t rec = { i + 1, ty, pb.total, r->meas[i], pb.attn, r->meas_attn[i], NAN, NAN, 0 };
    if (replay_log_add(&r->log, &rec) < 0) {
        snprintf(cm->err, sizeof cm->err, "out of memory");
        return -1;
    }
    return 0;
}

static void rm_destroy(cost_model_t *cm)
{
    rm_t *r = cm->impl;
    free(r->meas);
    free(r->meas_attn);
    free(r->type);
    free(r->log.rec);
    free(r);
    free(cm);
}

/* The column of name in a CSV header (-1: none). */
static int col_of(char *hdr, const char *name)
{
    int c = 0;
    for (char *tok = strtok(hdr, ",\r\n"); tok; tok = strtok(NULL, ",\r\n"), c++)
        if (!strcmp(tok, name)) return c;
    return -1;
}

cost_model_t *replay_recorded_new(const char *csv, cost_model_t *pred, char err[COST_ERR_MAX])
{
    FILE *f = fopen(csv, "r");
    if (!f) {
        snprintf(err, COST_ERR_MAX, "%s: cannot open the recording: %s", csv, strerror(errno));
        return NULL;
    }
    rm_t *r = calloc(1, sizeof *r);
    cost_model_t *cm = r ? replay_model_new("recorded", r, rm_step, rm_destroy) : NULL;
    char line[1024], hdr[1024];
    long cap = 0, ln = 1;
    int ct = -1, cm_ = -1, ca = -1;
    if (!cm) {
        snprintf(err, COST_ERR_MAX, "out of memory");
        goto fail;
    }
    r->pred = pred;
    if (!fgets(line, sizeof line, f)) {
        snprintf(err, COST_ERR_MAX, "%s:1: empty: not a replay's --steps file", csv);
        goto fail;
    }
    memcpy(hdr, line, sizeof hdr);
    ct = col_of(hdr, "type");
    memcpy(hdr, line, sizeof hdr);
    cm_ = col_of(hdr, "measured_s");
    memcpy(hdr, line, sizeof hdr);
    ca = col_of(hdr, "meas_attn_s");
    if (ct < 0 || cm_ < 0) {
        snprintf(err, COST_ERR_MAX, "%s:1: no %s column: not a replay's --steps file", csv, ct < 0 ? "type" : "measured_s");
        goto fail;
    }
    while (fgets(line, sizeof line, f)) {
        ln++;
        if (line[0] == '\n' || line[0] == '\r') continue;
        if (r->nmeas == cap) {
            cap = cap ? 2 * cap : 256;
            double *a = realloc(r->meas, (size_t)cap * sizeof *a), *b = a ? realloc(r->meas_attn, (size_t)cap * sizeof *b) : NULL;
            int *t = b ? realloc(r->type, (size_t)cap * sizeof *t) : NULL;
            if (a) r->meas = a;
            if (b) r->meas_attn = b;
            if (t) r->type = t;
            if (!a || !b || !t) {
                snprintf(err, COST_ERR_MAX, "out of memory");
                goto fail;
            }
        }
        int c = 0, ty = -1;
        double m = NAN, at = 0;
        for (char *tok = strtok(line, ",\r\n"); tok; tok = strtok(NULL, ",\r\n"), c++) {
            char *end;
            if (c == ct) {
                for (int q = STEP_DECODE_ONLY; q <= STEP_PREFILL_ONLY; q++)
                    if (!strcmp(tok, engine_step_type_name(q))) ty = q;
            } else if (c == cm_ || c == ca) {
                double v = strtod(tok, &end);
                if (end == tok || *end) v = NAN;
                if (c == cm_) m = v;
                else at = v;
            }
        }
        if (ty < 0 || !(m > 0) || !isfinite(m)) {
            snprintf(err, COST_ERR_MAX, "%s:%ld: %s", csv, ln,
                     ty < 0 ? "type: expected decode, mixed or prefill" : "measured_s: expected a positive number");
            goto fail;
        }
        r->type[r->nmeas] = ty;
        r->meas[r->nmeas] = m;
        r->meas_attn[r->nmeas] = isfinite(at) ? at : 0;
        r->nmeas++;
    }
    if (!r->nmeas) {
        snprintf(err, COST_ERR_MAX, "%s: no steps recorded", csv);
        goto fail;
    }
    fclose(f);
    return cm;
fail:
    fclose(f);
    if (cm) rm_destroy(cm);
    else free(r);
    return NULL;
}

const replay_rec_t *replay_recorded_records(const cost_model_t *cm, long *n, long *nrecorded)
{
    const rm_t *r = cm->impl;
    *n = r->log.n;
    *nrecorded = r->nmeas;
    return r->log.rec;
}
