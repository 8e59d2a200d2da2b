/* replay.c: the replay's report, and the recorded cost model behind `pacesim rescore`
 * (a GPU replay's measured step times, re-read, priced beside the current profile). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "cost_scaled.h"
#include "engine.h"
#include "fnv.h"
#include "replay.h"
#include "ydoc.h"

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

int replay_layer_sets(double call_kv_bytes, double l2_bytes, int reps)
{
    if (reps < 1) return 1;
    int cap = reps < REPLAY_MAX_SETS ? reps : REPLAY_MAX_SETS;
    if (!(call_kv_bytes > 0) || !(l2_bytes > 0)) return 1;
    double n = ceil(3 * l2_bytes / call_kv_bytes);
    return n >= cap ? cap : n < 1 ? 1 : (int)n;
}

int replay_layer_views(long nblocks, int nsets, long *stride, long *limit)
{
    if (nsets <= 1 || nblocks < 2 * (long)nsets) {
        *stride = 0;
        *limit = nblocks;
        return 1;
    }
    *stride = nblocks / (2L * nsets);
    *limit = nblocks - (nsets - 1) * *stride;
    return nsets;
}

int replay_layer_count(const int *reps, int n)
{
    int layers = 0;
    for (int i = 0; i < n; i++)
        if (reps[i] > layers) layers = reps[i];
    for (int i = 0; i < n; i++)
        if (reps[i] > 1 && reps[i] < layers) return -1;
    return layers;
}

void replay_layer_share(const int *reps, int n, int layers, const double *sample, const double *after,
                        double block, double *sec)
{
    double tot = 0;
    int in = 0;
    for (int i = 0; i < n; i++)
        if (reps[i] > 0 && reps[i] == layers) {
            tot += sample[i] > 0 ? sample[i] : 0;
            in++;
        }
    for (int i = 0; i < n; i++) {
        if (reps[i] <= 0) continue;
        if (reps[i] != layers) sec[i] = after[i];
        else if (tot > 0) sec[i] = block * (sample[i] > 0 ? sample[i] : 0) / tot;
        else sec[i] = block / in;
    }
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
        st->pred_attn += rec[i].pred_attn;
        st->meas_attn += rec[i].meas_attn;
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
    /* a window undefined in a run (NAN: its marks never reached) is "n/a", as in the run
     * table, and so is the error when either value is undefined or the measured one is 0 */
    for (int i = 0; i < s->n_windows; i++) {
        double a = engine_window(ep, i), b = engine_window(eg, i);
        fprintf(f, "   %-18s ", s->windows[i].name);
        if (isnan(a)) fprintf(f, "%14s ", "n/a");
        else fprintf(f, "%14.4f ", a);
        if (isnan(b)) fprintf(f, "%14s ", "n/a");
        else fprintf(f, "%14.4f ", b);
        if (isnan(a) || isnan(b) || b == 0) fprintf(f, "%9s\n", "n/a");
        else fprintf(f, "%+8.1f%%\n", 100 * (a / b - 1));
    }
    fprintf(f, "   steps %ld / %ld (profile run / measured run)\n", ep->sum.steps, eg->sum.steps);
    return 0;
}

int replay_steps_csv(FILE *f, const replay_rec_t *rec, long n)
{
    int b2b = n > 0 && rec[0].b2b, sck = n > 0 && rec[0].step_clk, lo = b2b && rec[0].lo;
    fprintf(f, "step,type,predicted_s,measured_s,pred_attn_s,meas_attn_s,sm_clock_mhz,power_w,clock_reasons%s%s%s\n",
            b2b ? ",gpu_span_s,items_sum_s,wall_s,reprep_s,gap_s" : "", sck ? ",sm_mhz_step" : "",
            lo ? ",layer_order" : "");
    for (long i = 0; i < n; i++) {
        fprintf(f, "%ld,%s,%.9g,%.9g,%.9g,%.9g,%.0f,%.0f,%#llx", rec[i].no, engine_step_type_name(rec[i].type),
                rec[i].predicted, rec[i].measured, rec[i].pred_attn, rec[i].meas_attn, rec[i].clock_mhz, rec[i].power_w,
                rec[i].clock_why);
        if (b2b)
            fprintf(f, ",%.9g,%.9g,%.9g,%.9g,%.9g", rec[i].span, rec[i].items_sum, rec[i].wall, rec[i].reprep,
                    rec[i].gap);
        if (sck) fprintf(f, ",%.1f", rec[i].step_mhz);
        if (lo) fprintf(f, ",%d", rec[i].layered ? 1 : 0);
        fputc('\n', f);
    }
    int bad = ferror(f);          /* a write error: errno says why (a full device) */
    if (f == stdout ? fflush(f) != 0 : fclose(f) != 0) bad = 1;
    return bad ? -1 : 0;
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
    double *clk, *mclk;           /* per step: the recorded SM clock (NAN: none), the model's (MHz) */
    double *sclk;                 /* per step: the step's own clock (sm_mhz_step; NAN: none), when has_sclk */
    int has_sclk, sclk_used;      /* used: replay_recorded_clocks hands sclk out, not clk */
    int has_lo;                   /* the file has layer_order (pacesim-gpu replay --layer-order) */
    long nlayered;                /* its steps run layer by layer */
    double *gap;                  /* per step: the recorded GPU idle before it (gap_s), when has_gap */
    int has_gap;
    int *type;
    long *line;                   /* per step: its line in the file */
    int *tcol;                    /* per step: the column its type starts at */
    long lastln;                  /* the file's last step's line */
    char *path;                   /* the file (for a mismatch's location) */
    long bad;                     /* the run's step that did not match (1-based; 0: none), */
    int bad_type;                 /* and its type here (-1: past the recording's end) */
    replay_log_t log;
} rm_t;

#define FNV(h, x) ((h) = fnv1a((h), &(x), sizeof(x)))

unsigned long long replay_step_shape(const cost_step_t *in)
{
    uint64_t h = FNV1A_BASIS;
    FNV(h, in->tokens), FNV(h, in->rows), FNV(h, in->decode_rows), FNV(h, in->sampled);
    const route_plan_t *p = in->plan;
    for (int c = 0; p && c < p->ncalls; c++) {
        FNV(h, p->calls[c].route);
        for (int g = 0; g < p->calls[c].nseg; g++) FNV(h, p->calls[c].segs[g].q), FNV(h, p->calls[c].segs[g].seq_len);
    }
    return h ? h : 1;
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
    int ty = cost_step_type(in);
    if (i >= r->nmeas || r->type[i] != ty) {     /* replay_recorded_mismatch() says where */
        r->bad = i + 1;
        r->bad_type = i >= r->nmeas ? -1 : ty;
        snprintf(cm->err, sizeof cm->err, "the run does not match the recording at step %ld: not the recorded scenario",
                 i + 1);
        return -1;
    }
    /* the measured time, split as the prediction splits it (attention as recorded) */
    double k = pb.total > 0 ? r->meas[i] / pb.total : 0;
    *o = pb;
    o->linear *= k, o->gdn *= k, o->elementwise *= k, o->allreduce *= k, o->overhead *= k, o->mtp *= k;
    for (int q = 0; q < ROUTE__N; q++) o->attn_route[q] *= k;
    o->attn *= k;
    o->total = r->meas[i];
    replay_rec_t rec = { i + 1, ty, pb.total, r->meas[i], pb.attn, r->meas_attn[i], NAN, NAN, 0, 0, 0, 0, 0, 0, 0, 0, NAN, 0,
                         0, 0 };
    /* the clocks the step recorded, as rescore --steps writes them (NVML's, and its own where the
     * recording has sm_mhz_step; replay_recorded_use_step_clock swaps the two arrays) */
    rec.clock_mhz = r->clk[i];
    rec.step_clk = r->has_sclk;
    rec.step_mhz = r->sclk[i];
    rec.shape = replay_step_shape(in);
    r->mclk[i] = cost_profile_model_clock(r->pred);
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
    free(r->clk);
    free(r->sclk);
    free(r->mclk);
    free(r->gap);
    free(r->type);
    free(r->line);
    free(r->tcol);
    free(r->path);
    free(r->log.rec);
    free(r);
    free(cm);
}

/* ---- reading a recording back ---------------------------------------------------------
 * A recording is what replay_steps_csv() writes: a header, then one row per step, fields
 * separated by commas, none empty.  Every row has the header's field count; `step` counts
 * 1, 2, ... (the rows are the steps in order); `type` is a step type's name; `measured_s`
 * (and `meas_attn_s`, when present) a plain decimal number: no hex, inf or nan, nor a
 * subnormal (no step lasts 1e-310 s: such a value is a damaged file); so is `gap_s` (a
 * back-to-back replay's GPU idle before the step, 0 or more), when present, and `reprep_s` beside
 * it (the idle re-preparations left inside the step, added to the step's idle).  `sm_clock_mhz`
 * and `sm_mhz_step` (the step's own clock, --step-clock), when present, are read for rescore
 * --recorded-clock: a decimal number of MHz in [1, 1e5], or nan where the replay could not
 * sample it; `layer_order`
 * (--layer-order: 1 a step run layer by layer, else 0) is counted.  The other columns are not
 * read.  A malformed file is refused at its line and column. */

/* a step's time: within a profile point's range of t_s (1 ns .. 1000 s); 1e-300 s is no step a
 * GPU ran, and its error would print hundreds of digits */
#define RM_MIN_S 1e-9
#define RM_MAX_S 1e3
#define RM_LINE_MAX 4096          /* a row is about 100 characters; a longer line is no recording */
#define RM_FIELDS_MAX 64

typedef struct {
    char *fld[RM_FIELDS_MAX];
    int col[RM_FIELDS_MAX];       /* 1-based column where each field starts */
    int n;
} rm_row_t;

/* Split line at commas, in place.  0, or -1: more fields than RM_FIELDS_MAX (*extra then
 * says where the first one past them starts). */
static int rm_split(char *line, rm_row_t *row, int *extra)
{
    row->n = 0;
    char *p = line;
    for (;;) {
        if (row->n == RM_FIELDS_MAX) {
            *extra = (int)(p - line) + 1;
            return -1;
        }
        row->fld[row->n] = p;
        row->col[row->n] = (int)(p - line) + 1;
        row->n++;
        char *c = strchr(p, ',');
        if (!c) return 0;
        *c = 0;
        p = c + 1;
    }
}

/* A plain decimal number (sign, digits, one '.', an optional exponent) that is finite and
 * zero or normal.  0, or -1. */
static int rm_decimal(const char *t, double *v)
{
    const char *p = t;
    int digits = 0;
    if (*p == '+' || *p == '-') p++;
    while (*p >= '0' && *p <= '9') p++, digits++;
    if (*p == '.')
        for (p++; *p >= '0' && *p <= '9'; p++) digits++;
    if (!digits) return -1;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-') p++;
        if (!(*p >= '0' && *p <= '9')) return -1;
        while (*p >= '0' && *p <= '9') p++;
    }
    if (*p) return -1;
    errno = 0;
    double x = strtod(t, NULL);
    if (errno == ERANGE || !isfinite(x) || (x != 0 && !isnormal(x))) return -1;
    *v = x;
    return 0;
}

/* A step number: decimal digits only, at most 18 of them.  0, or -1. */
static int rm_count(const char *t, long *v)
{
    long x = 0;
    int n = 0;
    for (; *t >= '0' && *t <= '9'; t++, n++) {
        if (n == 18) return -1;
        x = 10 * x + (*t - '0');
    }
    if (*t || !n) return -1;
    *v = x;
    return 0;
}

/* Read one line of f into buf (RM_LINE_MAX + 1 bytes), its end of line dropped; what is
 * read stays bounded whatever the file holds.  1 a line (*len its length), 0 the end, -1 a
 * read error, -2 a line longer than RM_LINE_MAX, -3 a NUL byte (*len: its offset). */
static int rm_line(FILE *f, char *buf, size_t *len)
{
    size_t n = 0;
    int c;
    while ((c = getc(f)) != EOF && c != '\n') {
        if (c == 0) {
            *len = n;
            return -3;
        }
        if (n == RM_LINE_MAX) return -2;
        buf[n++] = (char)c;
    }
    if (c == EOF && (ferror(f) || n == 0)) return ferror(f) ? -1 : 0;
    if (n && buf[n - 1] == '\r') n--;
    buf[n] = 0;
    *len = n;
    return 1;
}

static int rm_grow(rm_t *r, long *cap)
{
    if (r->nmeas < *cap) return 0;
    long c = *cap ? 2 * *cap : 256;
    double *a = realloc(r->meas, (size_t)c * sizeof *a);
    if (!a) return -1;
    r->meas = a;
    double *b = realloc(r->meas_attn, (size_t)c * sizeof *b);
    if (!b) return -1;
    r->meas_attn = b;
    double *k = realloc(r->clk, (size_t)c * sizeof *k);
    if (!k) return -1;
    r->clk = k;
    double *sk = realloc(r->sclk, (size_t)c * sizeof *sk);
    if (!sk) return -1;
    r->sclk = sk;
    double *q = realloc(r->mclk, (size_t)c * sizeof *q);
    if (!q) return -1;
    r->mclk = q;
    double *g = realloc(r->gap, (size_t)c * sizeof *g);
    if (!g) return -1;
    r->gap = g;
    int *t = realloc(r->type, (size_t)c * sizeof *t);
    if (!t) return -1;
    r->type = t;
    long *l = realloc(r->line, (size_t)c * sizeof *l);
    if (!l) return -1;
    r->line = l;
    int *tc = realloc(r->tcol, (size_t)c * sizeof *tc);
    if (!tc) return -1;
    r->tcol = tc;
    *cap = c;
    return 0;
}

/* A clock cell (MHz) of column c (-1: none) in *mhz: NAN where there is none or the replay wrote
 * nan (it could not sample the clock); -1 for anything else that is no number in [1, 1e5]. */
static int rm_clock(const rm_row_t *row, int c, double *mhz)
{
    double ck;
    *mhz = NAN;
    if (c < 0 || !strcmp(row->fld[c], "nan") || !strcmp(row->fld[c], "-nan")) return 0;   /* not sampled */
    if (rm_decimal(row->fld[c], &ck) < 0 || !(ck >= 1 && ck <= 1e5)) return -1;
    *mhz = ck;
    return 0;
}

cost_model_t *replay_recorded_new(const char *csv, cost_model_t *pred, char err[COST_ERR_MAX])
{
    const char *why = NULL;
    FILE *f = yd_open_input(csv, &why);         /* a regular file only: a FIFO would block */
    if (!f) {
        snprintf(err, COST_ERR_MAX, "%s: cannot open the recording: %s", csv, why);
        return NULL;
    }
    rm_t *r = calloc(1, sizeof *r);
    cost_model_t *cm = r ? replay_model_new("recorded", r, rm_step, rm_destroy) : NULL;
    char line[RM_LINE_MAX + 1], names[RM_LINE_MAX + 1];   /* names: the header's fields */
    size_t len = 0;
    long rcap = 0, ln = 0;
    int cs = -1, ct = -1, cm_ = -1, ca = -1, cc = -1, cg = -1, cr = -1, cq = -1, cl = -1, nhdr = 0, got, extra = 0;
    rm_row_t row, hdr;
    if (!cm) {
        snprintf(err, COST_ERR_MAX, "out of memory");
        goto fail;
    }
    r->pred = pred;
    if (!(r->path = strdup(csv))) {
        snprintf(err, COST_ERR_MAX, "out of memory");
        goto fail;
    }
    while ((got = rm_line(f, line, &len)) != 0) {
        ln++;
        if (got == -1) {
            snprintf(err, COST_ERR_MAX, "%s:%ld:1: recording: read error: %s", csv, ln, strerror(errno));
            goto fail;
        }
        if (got == -2) {
            snprintf(err, COST_ERR_MAX, "%s:%ld:%d: recording: line longer than %d characters: not a replay's --steps file",
                     csv, ln, RM_LINE_MAX + 1, RM_LINE_MAX);
            goto fail;
        }
        if (got == -3) {
            snprintf(err, COST_ERR_MAX, "%s:%ld:%zu: recording: a NUL byte: not a replay's --steps file", csv, ln, len + 1);
            goto fail;
        }
        if (ln == 1) len = strlen(yd_drop_bom(line));   /* a spreadsheet's BOM: the header's first name follows */
        if (ln > 1 && len == 0) continue;          /* a blank line */
        if (ln == 1) memcpy(names, line, len + 1);
        if (rm_split(line, &row, &extra) < 0) {
            snprintf(err, COST_ERR_MAX, "%s:%ld:%d: recording: more than %d fields: not a replay's --steps file", csv, ln,
                     extra, RM_FIELDS_MAX);
            goto fail;
        }
        for (int c = 0; c < row.n; c++)
            if (!row.fld[c][0]) {
                snprintf(err, COST_ERR_MAX, "%s:%ld:%d: %s: empty field", csv, ln, row.col[c],
                         ln == 1 || c >= nhdr ? "recording" : hdr.fld[c]);
                goto fail;
            }
        if (ln == 1) {                              /* the header */
            rm_split(names, &hdr, &extra);          /* as line: it fits */
            nhdr = row.n;
            for (int c = 0; c < row.n; c++) {
                int *which = !strcmp(row.fld[c], "step") ? &cs : !strcmp(row.fld[c], "type") ? &ct
                             : !strcmp(row.fld[c], "measured_s") ? &cm_ : !strcmp(row.fld[c], "meas_attn_s") ? &ca
                             : !strcmp(row.fld[c], "sm_clock_mhz") ? &cc : !strcmp(row.fld[c], "gap_s") ? &cg
                             : !strcmp(row.fld[c], "reprep_s") ? &cr : !strcmp(row.fld[c], "sm_mhz_step") ? &cq
                             : !strcmp(row.fld[c], "layer_order") ? &cl : NULL;
                if (which && *which >= 0) {
                    snprintf(err, COST_ERR_MAX, "%s:1:%d: %s: a second column of that name", csv, row.col[c], row.fld[c]);
                    goto fail;
                }
                if (which) *which = c;
            }
            if (ct < 0 || cm_ < 0) {
                snprintf(err, COST_ERR_MAX, "%s:1:1: %s: no such column: not a replay's --steps file", csv,
                         ct < 0 ? "type" : "measured_s");
                goto fail;
            }
            continue;
        }
        if (row.n != nhdr) {
            int c = row.n < nhdr ? (int)len + 1 : row.col[nhdr];
            snprintf(err, COST_ERR_MAX, "%s:%ld:%d: recording: %d fields, the header has %d", csv, ln, c, row.n, nhdr);
            goto fail;
        }
        if (rm_grow(r, &rcap) < 0) {
            snprintf(err, COST_ERR_MAX, "out of memory");
            goto fail;
        }
        long no;
        if (cs >= 0 && (rm_count(row.fld[cs], &no) < 0 || no != r->nmeas + 1)) {
            snprintf(err, COST_ERR_MAX, "%s:%ld:%d: step: expected %ld (the steps in order)", csv, ln, row.col[cs],
                     r->nmeas + 1);
            goto fail;
        }
        int ty = -1;
        for (int q = STEP_DECODE_ONLY; q <= STEP_PREFILL_ONLY; q++)
            if (!strcmp(row.fld[ct], engine_step_type_name(q))) ty = q;
        if (ty < 0) {
            snprintf(err, COST_ERR_MAX, "%s:%ld:%d: type: expected decode, mixed or prefill", csv, ln, row.col[ct]);
            goto fail;
        }
        double m, at = 0;
        if (rm_decimal(row.fld[cm_], &m) < 0 || !(m >= RM_MIN_S && m <= RM_MAX_S)) {
            snprintf(err, COST_ERR_MAX, "%s:%ld:%d: measured_s: expected a decimal number of seconds in [%g, %g]", csv,
                     ln, row.col[cm_], RM_MIN_S, RM_MAX_S);
            goto fail;
        }
        if (ca >= 0 && (rm_decimal(row.fld[ca], &at) < 0 || !(at == 0 || (at >= RM_MIN_S && at <= RM_MAX_S)))) {
            snprintf(err, COST_ERR_MAX, "%s:%ld:%d: meas_attn_s: expected 0 or a decimal number of seconds in [%g, %g]",
                     csv, ln, row.col[ca], RM_MIN_S, RM_MAX_S);
            goto fail;
        }
        double gp = 0;
        if (cg >= 0 && (rm_decimal(row.fld[cg], &gp) < 0 || !(gp >= 0 && gp <= RM_MAX_S))) {
            snprintf(err, COST_ERR_MAX, "%s:%ld:%d: gap_s: expected a decimal number of seconds in [0, %g]", csv, ln,
                     row.col[cg], RM_MAX_S);
            goto fail;
        }
        /* a re-preparation inside the step (reprep_s, left out of measured_s) idled the card
         * too: counted with the idle before the step, where the heat model relaxes */
        double rp = 0;
        if (cg >= 0 && cr >= 0 && (rm_decimal(row.fld[cr], &rp) < 0 || !(rp >= 0 && rp <= RM_MAX_S))) {
            snprintf(err, COST_ERR_MAX, "%s:%ld:%d: reprep_s: expected a decimal number of seconds in [0, %g]", csv, ln,
                     row.col[cr], RM_MAX_S);
            goto fail;
        }
        if (cl >= 0) {
            if (strcmp(row.fld[cl], "0") && strcmp(row.fld[cl], "1")) {
                snprintf(err, COST_ERR_MAX, "%s:%ld:%d: layer_order: expected 0 or 1", csv, ln, row.col[cl]);
                goto fail;
            }
            r->nlayered += row.fld[cl][0] == '1';
        }
        r->gap[r->nmeas] = gp + rp;
        r->type[r->nmeas] = ty;
        r->line[r->nmeas] = ln;
        r->tcol[r->nmeas] = row.col[ct];
        r->lastln = ln;
        r->meas[r->nmeas] = m;
        r->meas_attn[r->nmeas] = at;
        /* the clock: read for the --recorded-clock diagnostic only (a step the replay could not
         * sample is none; a value out of any card's range is a damaged file) */
        int bc = rm_clock(&row, cc, &r->clk[r->nmeas]) < 0 ? cc
                 : rm_clock(&row, cq, &r->sclk[r->nmeas]) < 0 ? cq : -1;   /* cq: the step's own (--step-clock) */
        if (bc >= 0) {
            snprintf(err, COST_ERR_MAX, "%s:%ld:%d: %s: expected a clock in MHz in [1, 1e5], or nan (not sampled)", csv,
                     ln, row.col[bc], hdr.fld[bc]);
            goto fail;
        }
        r->mclk[r->nmeas] = NAN;
        r->nmeas++;
    }
    if (ln == 0) {
        snprintf(err, COST_ERR_MAX, "%s:1:1: recording: empty: not a replay's --steps file", csv);
        goto fail;
    }
    if (!r->nmeas) {
        snprintf(err, COST_ERR_MAX, "%s:%ld:1: recording: no steps recorded", csv, ln);
        goto fail;
    }
    r->has_gap = cg >= 0;
    r->has_sclk = cq >= 0;
    r->has_lo = cl >= 0;
    fclose(f);
    return cm;
fail:
    fclose(f);
    if (cm) rm_destroy(cm);
    else free(r);
    return NULL;
}

long replay_recorded_clocks(const cost_model_t *cm, const double **recorded, const double **model)
{
    const rm_t *r = cm->impl;
    *recorded = r->sclk_used ? r->sclk : r->clk;
    *model = r->mclk;
    return r->nmeas;
}

int replay_recorded_has_step_clock(const cost_model_t *cm)
{
    const rm_t *r = cm->impl;
    return r->has_sclk;
}

int replay_recorded_layer_order(const cost_model_t *cm, long *layered, long *steps)
{
    const rm_t *r = cm->impl;
    *layered = r->has_lo ? r->nlayered : 0;
    *steps = r->nmeas;
    return r->has_lo;
}

int replay_recorded_use_step_clock(cost_model_t *cm)
{
    rm_t *r = cm->impl;
    if (!r->has_sclk) return -1;
    r->sclk_used = 1;
    return 0;
}

long replay_recorded_gaps(const cost_model_t *cm, const double **gap)
{
    const rm_t *r = cm->impl;
    *gap = r->has_gap ? r->gap : NULL;
    return r->has_gap ? r->nmeas : 0;
}

int replay_recorded_same(const cost_model_t *a, const cost_model_t *b)
{
    const rm_t *x = a->impl, *y = b->impl;
    if (x->nmeas != y->nmeas) return 0;
    for (long k = 0; k < x->nmeas; k++)
        if (x->type[k] != y->type[k] || x->meas[k] != y->meas[k]) return 0;
    return 1;
}

const char *replay_recorded_mismatch(const cost_model_t *cm, int ended, char *buf, size_t size)
{
    const rm_t *r = cm->impl;
    static const char why[] = "not the recorded scenario (the scenario, a --set or the profile differs from the replay's)";
    if (r->bad && r->bad_type >= 0)
        snprintf(buf, size, "%s:%ld:%d: type: the run's step %ld is %s, the recording's %s: %s", r->path,
                 r->line[r->bad - 1], r->tcol[r->bad - 1], r->bad, engine_step_type_name(r->bad_type),
                 engine_step_type_name(r->type[r->bad - 1]), why);
    else if (r->bad)
        snprintf(buf, size, "%s:%ld:1: step: the recording ends at step %ld, the run goes on: %s", r->path, r->lastln,
                 r->nmeas, why);
    else if (ended && r->log.n < r->nmeas)
        snprintf(buf, size, "%s:%ld:1: step: the run ended after %ld steps, the recording goes on to step %ld: %s",
                 r->path, r->line[r->log.n], r->log.n, r->nmeas, why);
    else return NULL;
    return buf;
}

const replay_rec_t *replay_recorded_records(const cost_model_t *cm, long *n, long *nrecorded)
{
    const rm_t *r = cm->impl;
    *n = r->log.n;
    *nrecorded = r->nmeas;
    return r->log.rec;
}

int replay_moe_slot(replay_moe_slots_t *s, const double key[6], int *fresh)
{
    for (int i = 0; i < s->n; i++) {
        int same = 1;
        for (int c = 0; c < 6; c++) same &= s->key[i][c] == key[c];
        if (same) {
            *fresh = 0;
            return i;
        }
    }
    *fresh = 1;
    if (s->n >= REPLAY_MOE_SLOTS) return -1;
    memcpy(s->key[s->n], key, sizeof s->key[s->n]);
    return s->n++;
}
