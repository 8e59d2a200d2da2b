/* capacity.c: the SLO search over configurations (pacesim capacity).  See capacity.h and
 * docs/capacity.md. */
#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include "capacity.h"
#include "cost_scaled.h"
#include "outfile.h"
#include "quant.h"
#include "serve.h"
#include "setup.h"
#include "simclock.h"
#include "ydoc.h"

#define CAP_SAT_RATE 1e6          /* req/s of the saturation probe: every request at once */
#define CAP_SAT_FROM 0.02         /* its completion rate between these shares of the requests finished */
#define CAP_SAT_TO 0.12
#define CAP_FIRST 0.9             /* the first probe: 0.9 x the saturation rate */
#define CAP_AIM 0.45              /* a guided probe aims 0.45 tol above or below the predicted rate */
#define CAP_DOWN 0.9              /* below a failure, before any pass: x0.9, x0.81, x0.66, x0.43 ... */
#define CAP_MIN_FRAC 1e-6         /* ... down to 1e-6 x the saturation rate: "below" */
#define CAP_SPAN_SHARE 0.5        /* ... or to the rate whose n arrivals span half of the clock's reach
                                   * (cap_conf's reach): "below" */
#define CAP_LAST_SHARE 0.9        /* ... or whose last arrival (a trace's, scaled) passes 0.9 of the reach */
#define CAP_MAX_UP 8              /* above a pass, before any failure: the saturation rate, then x2, 8 times: "above" */
#define CAP_MIN_TAIL 10           /* measured requests beyond a percentile (or outside the goodput share) */

static const char *const metric_names[CAP__NMETRIC] = { "ttft", "tpot", "e2el" };

/* ---- SLOs ---------------------------------------------------------------------- */

static int parse_pos(const char *s, double *v)
{
    char *end;
    if (!*s || isspace((unsigned char)*s)) return -1;
    errno = 0;
    double x = strtod(s, &end);
    if (*end || errno == ERANGE || !isfinite(x) || !(x > 0)) return -1;
    for (const char *p = s; *p; p++)           /* plain decimals: no hex, inf or nan */
        if (!isdigit((unsigned char)*p) && !strchr("+-.eE", *p)) return -1;
    *v = x;
    return 0;
}

int cap_parse_slo(const char *spec, cap_slo_t *out, char *err, size_t errn)
{
    memset(out, 0, sizeof *out);
    const char *eq = strchr(spec, '=');
    if (!eq || eq == spec || (size_t)(eq - spec) >= sizeof out->name) {
        snprintf(err, errn, "--slo %s: expected NAME=SECONDS, e.g. ttft_p99=2 or tpot_p99=0.05", spec);
        return -1;
    }
    memcpy(out->name, spec, (size_t)(eq - spec));
    int m = -1;
    const char *stat = NULL;
    for (int i = 0; i < CAP__NMETRIC; i++) {
        size_t l = strlen(metric_names[i]);
        if (!strncmp(out->name, metric_names[i], l) && (out->name[l] == 0 || out->name[l] == '_')) {
            m = i;
            stat = out->name[l] ? out->name + l + 1 : NULL;
        }
    }
    if (m < 0) {
        snprintf(err, errn, "--slo %s: unknown SLO \"%s\" (ttft, tpot or e2el, with _mean or _pNN for a statistic: "
                 "ttft_p99, tpot_p90, e2el_mean)", spec, out->name);
        return -1;
    }
    out->metric = (cap_metric_t)m;
    if (!stat) {
        out->per_request = 1;
    } else if (!strcmp(stat, "mean")) {
        out->mean = 1;
    } else {
        double q;
        if (stat[0] != 'p' || parse_pos(stat + 1, &q) < 0 || !(q < 100) || strchr(stat, 'e') || strchr(stat, 'E')
            || strchr(stat, '+') || strchr(stat, '-')) {
            snprintf(err, errn, "--slo %s: unknown statistic \"%s\" (mean, or pNN with 0 < NN < 100: p50, p99, p99.9)",
                     spec, stat);
            return -1;
        }
        out->q = q / 100;
    }
    if (parse_pos(eq + 1, &out->limit) < 0) {
        snprintf(err, errn, "--slo %s: \"%s\" is not a number of seconds > 0", spec, eq + 1);
        return -1;
    }
    return 0;
}

/* ---- a configuration ------------------------------------------------------------- */

struct cap_conf {
    const cap_opts_t *o;
    setup_t u;
    double rate0;                 /* the scenario's own rate (a trace's: its rows over its span) */
    double t_last;                /* a trace's last arrival (s, as written: a probe at rate r puts it at
                                   * t_last x rate0 / r) */
    int trace;                    /* a workload.trace: probes replay it on a scaled clock */
    char trace_orig[SCN_PATH_MAX];
    char **rows;                  /* its lines (as read, without the newline), nrows of them */
    double *row_t;                /* a data row's arrival (NAN: a comment, blank or header line) */
    long nrows;
    long n, m0, m1;               /* requests of the probe running; measured serials [m0, m1) */
    long nfull, need;             /* requests a probe (the scenario's count); measured ones the SLOs need */
    int bad_input;                /* the search failed on the scenario itself (too few TPOTs for a TPOT bound) */
    long serial0;                 /* the first generated request's serial */
    double *arr, *first, *fin;    /* per request (by serial - serial0) */
    long *out;
    char hw[128];
    /* the probe running */
    long finished, measured_done, viol[CAP_MAX_SLO], viol_max[CAP_MAX_SLO], bad, bad_max;
    double sat_t1, sat_t2;
    int saturation, aborted;
    char why[160];
    FILE *log;                    /* each probe, one line (NULL: none) */
    goodput_slo_t good_slo;       /* the per-request thresholds, in ms (serve.h) */
    long sat_steps;
    double reach;                 /* the latest arrival the clock holds this configuration's shortest step
                                   * at: the engine's clock_max where it is earlier than SIM_CLOCK_MAX_S */
};

void cap_conf_log(cap_conf_t *c, FILE *f) { c->log = f; }
double cap_conf_trace_rate(const cap_conf_t *c) { return c->trace ? c->rate0 : 0; }

/* The TP degree: the engine's, or a cluster's pools' (each may set its own); -1 where they differ. */
int cap_conf_tp(const cap_conf_t *c)
{
    const scn_cluster_t *cl = &c->u.s.cluster;
    int tp = c->u.s.engine.tensor_parallel_size;
    for (int i = 0; cl->enabled && i < cl->n_pools; i++) {
        int t = cl->pools[i].s ? cl->pools[i].s->engine.tensor_parallel_size : c->u.s.engine.tensor_parallel_size;
        if (i == 0) tp = t;
        else if (t != tp) return -1;
    }
    return tp;
}

/* Replicas and GPUs: one engine of TP GPUs, or a cluster's pools, each count x its TP. */
int cap_conf_replicas(const cap_conf_t *c)
{
    const scn_cluster_t *cl = &c->u.s.cluster;
    long n = 0;
    for (int i = 0; cl->enabled && i < cl->n_pools; i++) n += cl->pools[i].count;
    return cl->enabled ? (int)n : 1;
}

int cap_conf_gpus(const cap_conf_t *c)
{
    const scn_cluster_t *cl = &c->u.s.cluster;
    long g = 0;
    if (!cl->enabled) return c->u.s.engine.tensor_parallel_size;
    for (int i = 0; i < cl->n_pools; i++)
        g += (long)cl->pools[i].count * (cl->pools[i].s ? cl->pools[i].s->engine.tensor_parallel_size
                                                        : c->u.s.engine.tensor_parallel_size);
    return (int)g;
}
const char *cap_conf_hw(const cap_conf_t *c) { return c->hw; }
const char *cap_conf_gpu(const cap_conf_t *c) { return c->u.hw; }
const char *cap_conf_warn(const cap_conf_t *c) { return c->u.warn; }

void cap_conf_close(cap_conf_t *c)
{
    if (!c) return;
    setup_close(&c->u);
    for (long i = 0; i < c->nrows; i++) free(c->rows[i]);
    free(c->rows);
    free(c->row_t);
    free(c->arr);
    free(c->first);
    free(c->fin);
    free(c->out);
    free(c);
}

/* Where the top-level `workload` key is written (1:1 when not found). */
static void workload_line(const char *path, int *line, int *col)
{
    FILE *f = fopen(path, "r");
    char buf[512];
    int n = 0;
    *line = *col = 1;
    while (f && fgets(buf, sizeof buf, f)) {
        n++;
        if (!strncmp(buf, "workload", 8) && (buf[8] == ':' || buf[8] == ' ')) {
            *line = n;
            break;
        }
    }
    if (f) fclose(f);
}

/* A workload.trace, read whole (setup_check_trace has checked every row as a run would):
 * its lines, each data row's arrival, its count and its rate, (rows - 1) / (last - first
 * arrival).  0, or -1 with err set (-2 out of memory). */
static int trace_load(cap_conf_t *c, char *err, size_t errn)
{
    scenario_t *s = &c->u.s;
    if (setup_check_trace(&c->u) < 0) {
        snprintf(err, errn, "%s", c->u.err);
        return -1;
    }
    snprintf(c->trace_orig, sizeof c->trace_orig, "%s", s->trace_path);
    FILE *f = fopen(s->trace_path, "r");
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    long rcap = 0, n = 0;
    double t0 = NAN, t1 = NAN;
    if (!f) {
        snprintf(err, errn, "%s: %s", s->trace_path, strerror(errno));
        return -1;
    }
    while ((len = getline(&line, &cap, f)) >= 0) {
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
        if (c->nrows == rcap) {
            rcap = rcap ? 2 * rcap : 1024;
            char **nr = realloc(c->rows, (size_t)rcap * sizeof *nr);
            double *nt = realloc(c->row_t, (size_t)rcap * sizeof *nt);
            if (nr) c->rows = nr;
            if (nt) c->row_t = nt;
            if (!nr || !nt) goto oom;
        }
        const char *p = line;
        while (*p == ' ' || *p == '\t') p++;
        char *end;
        double t = NAN;
        if (*p && *p != '#' && strncmp(p, "arrival", 7)) {
            t = strtod(p, &end);
            if (end == p) t = NAN;
        }
        if (!(c->rows[c->nrows] = strdup(line))) goto oom;
        c->row_t[c->nrows++] = t;
        if (!isnan(t)) {
            if (n++ == 0) t0 = t;
            t1 = t;
        }
    }
    free(line);
    fclose(f);
    c->trace = 1;
    c->n = n;
    if (!(t1 > t0)) {
        snprintf(err, errn, "%s:1:1: trace: its %ld arrivals all fall at %g s: no rate to scale", c->trace_orig, n, t0);
        return -1;
    }
    c->rate0 = (double)(n - 1) / (t1 - t0);
    c->t_last = t1;
    return 0;
oom:
    free(line);
    fclose(f);
    snprintf(err, errn, "out of memory (the trace)");
    return -2;
}

/* The trace at `rate`: every arrival divided by rate / rate0, written to a temporary file
 * the scenario then reads (path: its name).  0, or -1 with err set. */
static int trace_write(cap_conf_t *c, double rate, char *path, size_t n, char *err, size_t errn)
{
    const char *dir = getenv("TMPDIR");
    snprintf(path, n, "%s/pacesim-capacity-XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(path);
    FILE *f = fd < 0 ? NULL : fdopen(fd, "w");
    if (!f) {
        snprintf(err, errn, "%s: %s", path, strerror(errno));
        if (fd >= 0) close(fd), unlink(path);
        return -1;
    }
    double k = c->rate0 / rate;
    for (long i = 0; i < c->nrows; i++) {
        if (isnan(c->row_t[i])) {
            fprintf(f, "%s\n", c->rows[i]);
            continue;
        }
        const char *comma = strchr(c->rows[i], ',');
        double t = c->row_t[i] * k;
        if (t < DBL_MIN) t = 0;   /* a subnormal (1e-305 s at 1e-6 the scale), which a trace may not hold */
        fprintf(f, "%.17g%s\n", t, comma ? comma : "");
    }
    if (fclose(f) != 0) {
        snprintf(err, errn, "%s: %s", path, strerror(errno));
        unlink(path);
        return -1;
    }
    return 0;
}

/* Requests measured out of n. */
static long measured_of(const cap_opts_t *o, long n)
{
    return n - (long)floor(o->warmup * (double)n) - (long)floor(o->cooldown * (double)n);
}

cap_conf_t *cap_conf_open(const cap_opts_t *o, const char *const *sets, int nsets, int *rc, char *err, size_t errn)
{
    return cap_conf_open_scaled(o, sets, nsets, 1, rc, err, errn);
}

cap_conf_t *cap_conf_open_scaled(const cap_opts_t *o, const char *const *sets, int nsets, double scale, int *rc, char *err,
                                 size_t errn)
{
    cap_conf_t *c = calloc(1, sizeof *c);
    *rc = 1;
    if (!c) {
        snprintf(err, errn, "out of memory");
        return NULL;
    }
    c->o = o;
    c->reach = SIM_CLOCK_MAX_S;
    if (setup_open_scaled(&c->u, o->file, sets, nsets, scale) < 0) {
        snprintf(err, errn, "%s", c->u.err);
        *rc = 2;
        cap_conf_close(c);
        return NULL;
    }
    scenario_t *s = &c->u.s;
    const char *why = NULL;
    if (!s->poisson.enabled && !s->trace_path[0])
        why = "capacity searches the rate of a workload.poisson or the time scale of a workload.trace (this scenario has neither)";
    else if (s->n_requests) why = "capacity searches a workload.poisson or a workload.trace alone (explicit workload.requests would not scale with its rate)";
    else if (s->poisson.enabled && s->trace_path[0]) why = "capacity searches a workload.poisson or a workload.trace, not both";
    else if (s->poisson.enabled && s->poisson.conv_turns > 1) why = "capacity needs single-turn requests (a conversation's later turns arrive after think time, not at the rate)";
    if (why) {
        int line = s->poisson_line, col = s->poisson_col;
        if (line <= 0) workload_line(s->path, &line, &col);
        snprintf(err, errn, "%s:%d:%d: workload: %s", s->path, line, col, why);
        *rc = 2;
        cap_conf_close(c);
        return NULL;
    }
    c->good_slo = GOODPUT_SLO_NONE;
    for (int k = 0; k < o->nslo; k++) {
        const cap_slo_t *sl = &o->slo[k];
        if (!sl->per_request) continue;
        double ms = 1e3 * sl->limit;
        if (sl->metric == CAP_TTFT) c->good_slo.ttft_ms = ms;
        else if (sl->metric == CAP_TPOT) c->good_slo.tpot_ms = ms;
        else c->good_slo.e2el_ms = ms;
    }
    if (s->trace_path[0]) {
        int trc = trace_load(c, err, errn);
        if (trc < 0) {
            *rc = trc == -2 ? 1 : 2;
            cap_conf_close(c);
            return NULL;
        }
    } else {
        c->rate0 = s->poisson.rate_per_s;
        c->n = s->poisson.count;
    }
    c->m0 = (long)floor(o->warmup * (double)c->n);
    c->m1 = c->m0 + measured_of(o, c->n);
    long m = c->m1 - c->m0, need = 0;
    const char *by = "";
    for (int k = 0; k < o->nslo; k++) {
        if (o->slo[k].per_request || o->slo[k].mean) continue;
        long nk = (long)ceil(CAP_MIN_TAIL / (1 - o->slo[k].q) - 1e-9);
        if (nk > need) need = nk, by = o->slo[k].name;
    }
    if (o->goodput > 0 && o->goodput < 1) {
        long nk = (long)ceil(CAP_MIN_TAIL / (1 - o->goodput) - 1e-9);
        if (nk > need) need = nk, by = "--goodput";
    }
    c->nfull = c->n;
    c->need = need;
    if (m < need || m < 2 * CAP_MIN_TAIL) {
        if (need < 2 * CAP_MIN_TAIL) need = 2 * CAP_MIN_TAIL, by = "the queue's growth";
        long count = (long)ceil((double)need / (1 - o->warmup - o->cooldown));   /* the least count that gives need */
        while (count > need && measured_of(o, count - 1) >= need) count--;
        while (measured_of(o, count) < need) count++;
        if (c->trace)
            snprintf(err, errn, "%s:1:1: trace: %ld requests leave %ld measured (first %.0f%% and last %.0f%% excluded); "
                     "%s needs %ld (%d beyond it): a trace of at least %ld requests", c->trace_orig, c->n, m,
                     100 * o->warmup, 100 * o->cooldown, by, need, CAP_MIN_TAIL, count);
        else
            snprintf(err, errn, "%s:%d:%d: workload.poisson.count: %ld requests a probe leave %ld measured (first %.0f%% and "
                     "last %.0f%% excluded); %s needs %ld (%d beyond it): set workload.poisson.count to at least %ld",
                     s->path, s->poisson_line, s->poisson_col, c->n, m, 100 * o->warmup, 100 * o->cooldown, by, need,
                     CAP_MIN_TAIL, count);
        *rc = 2;
        cap_conf_close(c);
        return NULL;
    }
    c->serial0 = 0;                /* a Poisson workload or a trace alone: its requests are serials 0 .. n-1 */
    c->arr = malloc((size_t)c->n * sizeof *c->arr);
    c->first = malloc((size_t)c->n * sizeof *c->first);
    c->fin = malloc((size_t)c->n * sizeof *c->fin);
    c->out = malloc((size_t)c->n * sizeof *c->out);
    if (!c->arr || !c->first || !c->fin || !c->out) {
        snprintf(err, errn, "out of memory (%ld requests a probe)", c->n);
        cap_conf_close(c);
        return NULL;
    }
    if (s->profile_path[0]) {
        const char *b = strrchr(s->profile_path, '/');
        b = b ? b + 1 : s->profile_path;
        snprintf(c->hw, sizeof c->hw, "%s", b);
        size_t l = strlen(c->hw);
        if (l > 5 && !strcmp(c->hw + l - 5, ".yaml")) c->hw[l - 5] = 0;
        else if (l > 4 && !strcmp(c->hw + l - 4, ".yml")) c->hw[l - 4] = 0;
    } else {
        snprintf(c->hw, sizeof c->hw, "analytic");
    }
    *rc = 0;
    return c;
}

/* ---- one probe ------------------------------------------------------------------ */

static double tpot_of(const cap_conf_t *c, long i)
{
    return c->out[i] > 1 ? (c->fin[i] - c->first[i]) / (double)(c->out[i] - 1) : 0;
}

static double metric_of(const cap_conf_t *c, cap_metric_t m, long i)
{
    switch (m) {
    case CAP_TTFT: return c->first[i] - c->arr[i];
    case CAP_TPOT: return tpot_of(c, i);
    default: return c->fin[i] - c->arr[i];
    }
}

/* vLLM's goodput: a request is good when it meets every per-request threshold, judged by
 * serve.h's metrics_goodput_good (a request of one output token counting a TPOT of 0). */
static int request_good(const cap_conf_t *c, long i)
{
    return metrics_goodput_good(&c->good_slo, metric_of(c, CAP_TTFT, i), metric_of(c, CAP_TPOT, i),
                                metric_of(c, CAP_E2EL, i));
}

static void stop_run(cap_conf_t *c)
{
    /* the engine reads the scenario's stop rule after every step: a step limit of 1 ends
     * the run after the step in progress (the scenario is this configuration's own) */
    c->u.s.stop.max_steps = 1;
    c->aborted = 1;
}

static void on_finish(void *ctx, const engine_t *e, const req_t *r)
{
    (void)e;
    cap_conf_t *c = ctx;
    long i = r->serial - c->serial0;
    if (i < 0 || i >= c->n) return;
    c->arr[i] = r->t_ev[EV_ARRIVAL];
    c->first[i] = r->t_ev[EV_FIRST_TOKEN];
    c->fin[i] = r->t_ev[EV_FINISHED];
    c->out[i] = r->output;
    c->finished++;
    if (c->saturation) {
        if (c->finished == (long)(CAP_SAT_FROM * (double)c->n)) c->sat_t1 = c->fin[i];
        if (c->finished == (long)(CAP_SAT_TO * (double)c->n)) {
            c->sat_t2 = c->fin[i];
            stop_run(c);
        }
        return;
    }
    if (c->aborted || i < c->m0 || i >= c->m1) return;
    if (++c->measured_done == c->m1 - c->m0) {  /* the later requests change nothing measured */
        c->u.s.stop.max_steps = 1;
        return;
    }
    /* a failure certain whatever the later requests do ends the probe */
    const cap_opts_t *o = c->o;
    for (int k = 0; k < o->nslo; k++) {
        const cap_slo_t *sl = &o->slo[k];
        if (sl->per_request || sl->mean || (sl->metric == CAP_TPOT && c->out[i] < 2)) continue;
        if (metric_of(c, sl->metric, i) > sl->limit && ++c->viol[k] >= c->viol_max[k]) {
            snprintf(c->why, sizeof c->why, "%s above %g s: %ld measured requests beyond it", sl->name, sl->limit, c->viol[k]);
            stop_run(c);
            return;
        }
    }
    if (o->goodput > 0 && !request_good(c, i) && ++c->bad > c->bad_max) {
        snprintf(c->why, sizeof c->why, "goodput below %g: %ld measured requests miss an SLO", o->goodput, c->bad);
        stop_run(c);
    }
}

/* The probes that follow run n of the scenario's requests (the first n it generates). */
static void set_count(cap_conf_t *c, long n)
{
    c->n = n;
    c->m0 = (long)floor(c->o->warmup * (double)n);
    c->m1 = c->m0 + measured_of(c->o, n);
    if (!c->trace) c->u.s.poisson.count = n;
}

/* Run the workload at rate; the per-request records filled (finished ones). */
static int run_at(cap_conf_t *c, double rate, double *env, double *makespan, long *steps, char *err, size_t errn)
{
    scenario_t *s = &c->u.s;
    char tpath[SCN_PATH_MAX];
    if (c->trace) {
        if (trace_write(c, rate, tpath, sizeof tpath, err, errn) < 0) return -1;
        snprintf(s->trace_path, sizeof s->trace_path, "%s", tpath);
    } else {
        s->poisson.rate_per_s = rate;
    }
    s->stop.kind = STOP_ALL_FINISHED;
    s->stop.max_time_s = 0;
    s->stop.max_steps = 0;
    c->finished = c->bad = c->measured_done = 0;
    c->aborted = 0;
    c->why[0] = 0;
    memset(c->viol, 0, sizeof c->viol);
    for (long i = 0; i < c->n; i++) c->fin[i] = c->first[i] = INFINITY, c->arr[i] = NAN;
    cost_model_t *cm = setup_cost_new(&c->u);
    engine_t e;
    memset(&e, 0, sizeof e);
    int rc = -1;
    if (!cm) {
        snprintf(err, errn, "%s", c->u.err);
        return -1;
    }
    cost_profile_envelope_quiet(cost_scaled_inner(cm));   /* (--error-bars: the profile model under the scaled one) */
    if (setup_engine(&c->u, cm, &e) < 0) {
        snprintf(err, errn, "%s", e.err);
        goto out;
    }
    if (e.clock_max > 0 && e.clock_max < c->reach) c->reach = e.clock_max;
    e.on_finish = on_finish;
    e.on_finish_ctx = c;
    if (engine_run(&e) < 0) {
        snprintf(err, errn, "%s", e.err);
        goto out;
    }
    *env = cost_profile_outside_share(cost_scaled_inner(cm));
    *makespan = e.sum.makespan;
    *steps = e.sum.steps;
    rc = 0;
out:
    engine_free(&e);
    cost_free(cm);
    s->stop.max_steps = 0;
    if (c->trace) {
        unlink(tpath);
        snprintf(s->trace_path, sizeof s->trace_path, "%s", c->trace_orig);
    } else {
        s->poisson.rate_per_s = c->rate0;
    }
    if (rc < 0 && c->trace) {       /* the temporary file's name: the trace's, at its time scale */
        size_t l = strlen(tpath);
        if (!strncmp(err, tpath, l)) {
            char m[CAP_ERR_MAX];
            snprintf(m, sizeof m, "%s%s (the trace at time scale %.6g, at %.6g req/s)", c->trace_orig, err + l,
                     rate / c->rate0, rate);
            snprintf(err, errn, "%s", m);
        }
    }
    if (rc < 0) setup_msg_line(err, errn);
    return rc;
}

int cap_conf_saturation(cap_conf_t *c, double *mu, char *err, size_t errn)
{
    double env, mk;
    long steps;
    c->saturation = 1;
    c->sat_t1 = c->sat_t2 = NAN;
    int rc = run_at(c, CAP_SAT_RATE, &env, &mk, &steps, err, errn);
    c->saturation = 0;
    long nsat = c->n;
    set_count(c, c->nfull);
    c->sat_steps = steps;
    if (rc < 0) return -1;
    long k1 = (long)(CAP_SAT_FROM * (double)nsat), k2 = (long)(CAP_SAT_TO * (double)nsat);
    if (!(c->sat_t2 > c->sat_t1)) {
        snprintf(err, errn, "%s: the saturation probe finished %ld requests in no time: no completion rate to bracket the "
                 "search with", c->u.s.path, k2 - k1);
        return -1;
    }
    *mu = (double)(k2 - k1) / (c->sat_t2 - c->sat_t1);
    return 0;
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int cap_conf_probe(cap_conf_t *c, double rate, cap_probe_t *p, char *err, size_t errn)
{
    const cap_opts_t *o = c->o;
    long m = c->m1 - c->m0;
    memset(p, 0, sizeof *p);
    p->rate = rate;
    p->measured = m;
    for (int k = 0; k < o->nslo; k++) {
        const cap_slo_t *sl = &o->slo[k];
        long h = (long)floor(sl->q * (double)(m - 1));
        c->viol_max[k] = m - h;     /* this many above the limit: the order statistic at h is, so the p-quantile is */
    }
    c->bad_max = o->goodput > 0 ? m - (long)ceil(o->goodput * (double)m - 1e-9) : m;
    if (run_at(c, rate, &p->env_outside, &p->makespan, &p->steps, err, errn) < 0) return -1;
    for (int k = 0; k < CAP_MAX_SLO; k++) p->stat[k] = NAN;
    p->ttft_p99 = p->tpot_p99 = p->e2el_p99 = p->good_share = p->tok_s = p->growth = NAN;
    if (c->aborted) {
        p->aborted = 1;
        snprintf(p->why, sizeof p->why, "%s", c->why);
        return 0;
    }
    /* every request finished: the statistics over the measured ones */
    quant_t q[CAP__NMETRIC];
    for (int k = 0; k < CAP__NMETRIC; k++) quant_init(&q[k], 0);
    long good = 0, toks = 0;
    int oom = 0;
    for (long i = c->m0; i < c->m1; i++) {
        for (int k = 0; k < CAP__NMETRIC; k++)
            if (k != CAP_TPOT || c->out[i] > 1) oom |= quant_add(&q[k], metric_of(c, (cap_metric_t)k, i)) < 0;
        good += request_good(c, i);
        toks += c->out[i];
    }
    for (int k = 0; k < o->nslo; k++) {
        const cap_slo_t *sl = &o->slo[k];
        if (sl->per_request) continue;
        p->stat[k] = sl->mean ? quant_mean(&q[sl->metric]) : quant_quantile(&q[sl->metric], sl->q);
    }
    /* a TPOT bound stands on the requests of two output tokens or more (the same at every
     * rate): as many as the SLO needs of the measured ones, else the bound is checked on too
     * few (none: never) */
    long ntpot = 0;
    for (long i = c->m0; i < c->m1; i++) ntpot += c->out[i] > 1;
    for (int k = 0; k < o->nslo && !oom; k++) {
        const cap_slo_t *sl = &o->slo[k];
        if (sl->per_request || sl->metric != CAP_TPOT) continue;
        long need = sl->mean ? 2 * CAP_MIN_TAIL : (long)ceil(CAP_MIN_TAIL / (1 - sl->q) - 1e-9);
        if (ntpot >= need) continue;
        const scenario_t *sc = &c->u.s;
        char what[96];
        snprintf(what, sizeof what, "%s needs %ld%s", sl->name, need, sl->mean ? "" : " (10 beyond it)");
        if (c->trace)
            snprintf(err, errn, "%s:1:1: trace: %ld of its %ld measured requests have two output tokens or more (a TPOT);"
                     " %s: longer outputs, or a TTFT or E2EL bound", c->trace_orig, ntpot, m, what);
        else
            snprintf(err, errn, "%s:%d:%d: workload.poisson.output: %ld of the %ld measured requests have two output"
                     " tokens or more (a TPOT); %s: longer outputs, a larger count, or a TTFT or E2EL bound", sc->path,
                     sc->poisson_line, sc->poisson_col, ntpot, m, what);
        c->bad_input = 1;
        for (int j = 0; j < CAP__NMETRIC; j++) quant_free(&q[j]);
        return -1;
    }
    p->ttft_p99 = quant_quantile(&q[CAP_TTFT], 0.99);
    p->tpot_p99 = quant_quantile(&q[CAP_TPOT], 0.99);
    p->e2el_p99 = quant_quantile(&q[CAP_E2EL], 0.99);
    for (int k = 0; k < CAP__NMETRIC; k++) quant_free(&q[k]);
    if (oom) {
        snprintf(err, errn, "out of memory (latency statistics)");
        return -1;
    }
    double span = c->arr[c->m1 - 1] - c->arr[c->m0];
    p->tok_s = span > 0 ? (double)toks / span : NAN;
    int any_pr = 0;
    for (int k = 0; k < o->nslo; k++) any_pr |= o->slo[k].per_request;
    p->good_share = any_pr ? (double)good / (double)m : NAN;
    /* the queue: requests in the system at each measured arrival, the last fifth's mean
     * against the first fifth's, per arrival in between */
    double *fs = malloc((size_t)c->n * sizeof *fs);
    if (!fs) {
        snprintf(err, errn, "out of memory");
        return -1;
    }
    memcpy(fs, c->fin, (size_t)c->n * sizeof *fs);
    qsort(fs, (size_t)c->n, sizeof *fs, cmp_dbl);
    long fifth = m / 5, j = 0;
    double n1 = 0, n5 = 0;
    for (long i = 0; i < c->m1; i++) {
        while (j < c->n && fs[j] < c->arr[i]) j++;
        double insys = (double)(i + 1 - j);
        if (i >= c->m0 && i < c->m0 + fifth) n1 += insys;
        if (i >= c->m1 - fifth) n5 += insys;
    }
    free(fs);
    p->growth = (n5 - n1) / (double)fifth / (double)(m - fifth);
    p->stable = p->growth <= o->tol;
    p->pass = p->stable;
    if (!p->stable)
        snprintf(p->why, sizeof p->why, "the queue grows: %.1f more requests in the system per 100 arrivals", 100 * p->growth);
    for (int k = 0; k < o->nslo && p->pass; k++) {
        const cap_slo_t *sl = &o->slo[k];
        if (!sl->per_request && !isnan(p->stat[k]) && !(p->stat[k] <= sl->limit)) {   /* NAN: no value (no TPOT) */
            p->pass = 0;
            snprintf(p->why, sizeof p->why, "%s %.4g s above %g s", sl->name, p->stat[k], sl->limit);
        }
    }
    if (p->pass && o->goodput > 0 && !(good >= (long)ceil(o->goodput * (double)m - 1e-9))) {
        p->pass = 0;
        snprintf(p->why, sizeof p->why, "goodput %.4g below %g", p->good_share, o->goodput);
    }
    return 0;
}

/* ---- the search ------------------------------------------------------------------ */

/* How close a passing probe came to its SLOs: the largest of each statistic over its
 * bound, the share of requests missing a threshold over the share allowed, and the queue's
 * growth over its tolerance (1 = at the limit). */
static double margin(const cap_conf_t *c, const cap_probe_t *p)
{
    const cap_opts_t *o = c->o;
    double m = p->growth / o->tol;
    for (int k = 0; k < o->nslo; k++)
        if (!o->slo[k].per_request && p->stat[k] / o->slo[k].limit > m) m = p->stat[k] / o->slo[k].limit;
    if (o->goodput > 0 && o->goodput < 1 && (1 - p->good_share) / (1 - o->goodput) > m)
        m = (1 - p->good_share) / (1 - o->goodput);
    return m;
}

/* The lowest rate a probe may run at: its arrivals' span, n / r, within half the clock's
 * reach, and a trace's last arrival (its first one's offset from 0 scaled with the rest)
 * within CAP_LAST_SHARE of it. */
static double rate_floor(const cap_conf_t *c)
{
    double r = (double)c->n / (CAP_SPAN_SHARE * c->reach);
    if (c->trace) r = fmax(r, c->t_last * c->rate0 / (CAP_LAST_SHARE * c->reach));
    return r;
}

int cap_conf_search(cap_conf_t *c, cap_answer_t *a, char *err, size_t errn)
{
    const double tol = c->o->tol;
    memset(a, 0, sizeof *a);
    double mu;
    if (cap_conf_saturation(c, &mu, err, errn) < 0) return -1;
    a->saturation = mu;
    a->probes = 1;
    a->steps = c->sat_steps;
    if (c->log) fprintf(c->log, "  saturation: %.6g req/s (%ld steps)\n", mu, c->sat_steps);
    double r0 = fmax(CAP_FIRST * mu, rate_floor(c));   /* (the floor: a trace far from 0 at a low rate) */
    /* lo: the highest rate that passed (0: none yet), m_lo its margin; hi: the lowest that
     * failed (0: none) */
    double lo = 0, hi = 0, m_lo = NAN, prev = 0, m_prev = NAN, r = r0, down = CAP_DOWN;
    int up = 0, last_pass = 0, guided = 0;
    for (;;) {
        cap_probe_t p;
        if (cap_conf_probe(c, r, &p, err, errn) < 0) return -1;
        a->probes++;
        a->steps += p.steps;
        if (c->log) fprintf(c->log, "  probe %d: %.6g req/s (%.3f x saturation): %s%s%s (%ld steps)\n", a->probes - 1, r,
                            r / mu, p.pass ? "pass" : "fail", p.why[0] ? ", " : "", p.why, p.steps);
        last_pass = p.pass;
        if (p.pass) {
            prev = lo, m_prev = m_lo;
            lo = r;
            m_lo = margin(c, &p);
            a->at = p;
        } else {
            hi = r;
        }
        if (lo > 0 && hi > 0 && hi <= lo * (1 + tol)) break;
        if (lo == 0) {                          /* failures only: gallop down */
            r = hi * down;
            down *= down;
            if (r < CAP_MIN_FRAC * mu || r < rate_floor(c)) {
                a->below = 1;
                a->rate = hi;
                return 0;
            }
            continue;
        }
        /* where the margin reaches 1, on a queue's curve m(r) = A + C x, x = r / (mu - r): through
         * the two highest passes (A, C), or through lo's alone (A = 0) */
        double pred = NAN, x = NAN;
        if (lo < mu && m_lo > 0 && m_lo < 1) {
            double x1 = lo / (mu - lo);
            x = x1 / m_lo;
            if (prev > 0 && prev < lo) {
                double x0 = prev / (mu - prev), cc = (m_lo - m_prev) / (x1 - x0);
                if (cc > 0) x = x1 + (1 - m_lo) / cc;
            }
            pred = mu * x / (1 + x);
        }
        if (hi == 0) {                          /* passes only */
            if (!isnan(pred) && guided < 2) {
                guided++;                       /* twice just above the prediction, */
                r = fmax(pred * (1 + CAP_AIM * tol), lo * (1 + 0.9 * tol));
            } else {                            /* then the saturation rate, then doubling */
                if (up++ >= CAP_MAX_UP) {
                    a->above = 1;
                    a->rate = lo;
                    return 0;
                }
                r = lo < mu / (1 + tol) ? mu : 2 * lo;
            }
            continue;
        }
        /* a bracket: just across the prediction from the last probe (a pass aims just above,
         * a failure just below it), kept within the middle of the bracket (in log scale, from
         * a fifth to four fifths: each probe cuts a fifth of it at least); the geometric mean
         * without a prediction inside the bracket, or once that closes it */
        double b = log(hi / lo);
        r = sqrt(lo * hi);
        if (pred > lo && pred < hi && b > 2 * log1p(tol)) {   /* (a closer bracket closes at its mean) */
            double g = last_pass ? pred * (1 + CAP_AIM * tol) : pred * (1 - CAP_AIM * tol);
            r = fmin(fmax(g, lo * exp(0.2 * b)), lo * exp(0.8 * b));
        }
    }
    a->found = 1;
    a->rate = lo;
    return 0;
}

/* ---- the split: co-located or prefill/decode ------------------------------------ */

int cap_parse_split(const char *v, cap_split_t *out, char *err, size_t errn)
{
    memset(out, 0, sizeof *out);
    if (!strcmp(v, "colocated")) return 0;
    const char *colon = strchr(v, ':');
    long a = 0, b = 0;
    char *end;
    int ok = isdigit((unsigned char)v[0]);
    if (ok) {
        errno = 0;
        a = strtol(v, &end, 10);
        ok = !errno && (colon ? end == colon : !*end);
    }
    if (ok && colon) {
        ok = isdigit((unsigned char)colon[1]);
        errno = 0;
        b = ok ? strtol(colon + 1, &end, 10) : 0;
        ok = ok && !errno && !*end;
    }
    if (!ok || a < 1 || b < 0 || (colon && b < 1) || a + b > SCN_MAX_REPLICAS) {
        snprintf(err, errn, "--search %s=%s: expected colocated, N (N co-located replicas) or P:D (P prefill and D decode "
                 "replicas), each count >= 1 and at most %d replicas in all: split=colocated,2,1:1,1:2", CAP_SPLIT_KEY, v,
                 SCN_MAX_REPLICAS);
        return -1;
    }
    out->kind = colon ? CAP_SPLIT_PD : CAP_SPLIT_N;
    out->p = (int)a;
    out->d = (int)b;
    return 0;
}

/* A set of the split's pools, applied after the split's rewrite (cluster.pools.prefill.* or
 * cluster.pools.decode.*). */
static int split_pool_set(const char *set)
{
    return !strncmp(set, "cluster.pools.prefill.", 22) || !strncmp(set, "cluster.pools.decode.", 21);
}

/* A scalar as a YAML flow scalar: plain when its text is safe there, else double-quoted
 * (a quoted scalar is never a null, number or boolean; one whose text is unsafe as plain
 * was not one either). */
static void flow_scalar(FILE *f, const yd_node_t *n)
{
    int plain = !n->quoted && n->len == strlen(n->text);
    if (plain && n->len == 0) {
        fputs("~", f);
        return;
    }
    for (size_t i = 0; plain && i < n->len; i++) {
        unsigned char ch = (unsigned char)n->text[i];
        plain = isalnum(ch) || (i > 0 && strchr("._/+-~ ", ch)) || (i == 0 && strchr("./+~", ch))
             || (i == 0 && ch == '-' && n->len > 1 && (isdigit((unsigned char)n->text[1]) || n->text[1] == '.'));
    }
    if (plain && n->text[n->len - 1] == ' ') plain = 0;
    if (plain) {
        fputs(n->text, f);
        return;
    }
    fputc('"', f);
    for (size_t i = 0; i < n->len; i++) {
        unsigned char ch = (unsigned char)n->text[i];
        if (ch == '"' || ch == '\\') fprintf(f, "\\%c", ch);
        else if (ch < 0x20 || ch == 0x7f) fprintf(f, "\\x%02x", ch);
        else fputc(ch, f);
    }
    fputc('"', f);
}

/* A node as YAML flow text. */
static void flow_node(FILE *f, const yd_node_t *n)
{
    if (n->kind == YD_SCALAR) {
        flow_scalar(f, n);
    } else if (n->kind == YD_SEQ) {
        fputc('[', f);
        for (int i = 0; i < n->n; i++) {
            if (i) fputs(", ", f);
            flow_node(f, n->vals[i]);
        }
        fputc(']', f);
    } else {
        fputc('{', f);
        for (int i = 0; i < n->n; i++) {
            if (i) fputs(", ", f);
            flow_scalar(f, n->keys[i]);
            fputs(": ", f);
            flow_node(f, n->vals[i]);
        }
        fputc('}', f);
    }
}

/* A map's entries as flow text (no braces), but the keys named in skip (NULL-ended). */
static int flow_entries(FILE *f, const yd_node_t *map, const char *const *skip, int first)
{
    for (int i = 0; map && map->kind == YD_MAP && i < map->n; i++) {
        int drop = 0;
        for (int k = 0; skip[k] && !drop; k++) drop = !strcmp(map->keys[i]->text, skip[k]);
        if (drop) continue;
        if (!first) fputs(", ", f);
        first = 0;
        flow_scalar(f, map->keys[i]);
        fputs(": ", f);
        flow_node(f, map->vals[i]);
    }
    return first;
}

static int is_role(const yd_node_t *pool, const char *role)
{
    const yd_node_t *r = yd_map_get(pool, "role");
    return r && r->kind == YD_SCALAR && !strcmp(r->text, role);
}

int cap_split_override(const char *file, const char *const *sets, int nsets, const char *value, char **out, char *err,
                       size_t errn)
{
    cap_split_t sp;
    *out = NULL;
    if (cap_parse_split(value, &sp, err, errn) < 0) return -1;
    char yerr[SCN_ERR_MAX];
    yd_err_t e;
    yd_err_init(&e, yerr, sizeof yerr);
    yd_doc_t *d = yd_load(file, &e);
    for (int i = 0; d && i < nsets; i++)
        if (!split_pool_set(sets[i]) && yd_apply_set(d, sets[i], &e)) {
            yd_free(d);
            d = NULL;
        }
    if (!d) {
        snprintf(err, errn, "%s", yerr);
        return -1;
    }
    const yd_node_t *root = yd_root(d), *c = yd_map_get(root, "cluster");
    const yd_node_t *pools = c ? yd_map_get(c, "pools") : NULL, *kv = c ? yd_map_get(c, "kv_transfer") : NULL;
    if (c && c->kind != YD_MAP) c = NULL, pools = NULL, kv = NULL;     /* scn_load says what is wrong */
    if (pools && pools->kind != YD_MAP) {
        yd_free(d);
        return 0;
    }
    int npools = pools ? pools->n : 0, disagg = 0;
    for (int i = 0; i < npools; i++) disagg |= is_role(pools->vals[i], "prefill") || is_role(pools->vals[i], "decode");
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    int rc = 0;
    if (!f) {
        yd_free(d);
        snprintf(err, errn, "out of memory");
        return -2;
    }
    static const char *const skip_pools_kv[] = { "pools", "kv_transfer", NULL };
    static const char *const skip_pools[] = { "pools", NULL };
    static const char *const skip_count_role[] = { "count", "role", NULL };
    fputs("cluster={", f);
    if (sp.kind == CAP_SPLIT_COLOCATED) {
        /* as written; a kv_transfer given for the split configurations is dropped where no pool is
         * of role prefill or decode (a cluster without them refuses it) */
        if (disagg || !kv) {
            rc = 1;                               /* no rewrite */
        } else {
            int first = flow_entries(f, c, skip_pools_kv, 1);
            fprintf(f, "%spools: ", first ? "" : ", ");
            if (pools) flow_node(f, pools);
            else fputs("{colocated: {count: 1}}", f);
        }
    } else if (disagg || npools > 1) {
        snprintf(err, errn, "--search %s=%s: the scenario's cluster has %d pool%s%s: a split rewrites one engine, or a "
                 "cluster of one pool of role both, into a prefill and a decode pool (split=colocated takes it as written)",
                 CAP_SPLIT_KEY, value, npools, npools == 1 ? "" : "s", disagg ? ", of role prefill or decode" : "");
        rc = -1;
    } else if (sp.kind == CAP_SPLIT_PD && !kv) {
        snprintf(err, errn, "--search %s=%s: a prefill/decode split needs cluster.kv_transfer, the link a request's KV "
                 "crosses from its prefill to its decode replica: --set cluster.kv_transfer.link=nvlink4, for example "
                 "(docs/scenarios.md); the co-located configurations drop it", CAP_SPLIT_KEY, value);
        rc = -1;
    } else {
        const yd_node_t *base = npools ? pools->vals[0] : NULL;
        int first = flow_entries(f, c, sp.kind == CAP_SPLIT_PD ? skip_pools : skip_pools_kv, 1);
        fprintf(f, "%spools: {", first ? "" : ", ");
        if (sp.kind == CAP_SPLIT_N) {
            if (base) flow_scalar(f, pools->keys[0]);
            else fputs("colocated", f);
            fputs(": {", f);
            int bf = flow_entries(f, base, skip_count_role, 1);
            fprintf(f, "%scount: %d}", bf ? "" : ", ", sp.p);
        } else {
            for (int k = 0; k < 2; k++) {
                fprintf(f, "%s: {", k ? ", decode" : "prefill");
                int bf = flow_entries(f, base, skip_count_role, 1);
                fprintf(f, "%scount: %d, role: %s}", bf ? "" : ", ", k ? sp.d : sp.p, k ? "decode" : "prefill");
            }
        }
        fputc('}', f);
    }
    fputc('}', f);
    yd_free(d);
    if (fclose(f) != 0) {
        free(buf);
        snprintf(err, errn, "out of memory");
        return -2;
    }
    if (rc) {
        free(buf);
        return rc < 0 ? -1 : 0;
    }
    *out = buf;
    return 0;
}

/* sets[0 .. n) with the split's override after those of other keys and before those of its
 * pools (cluster.pools.prefill.*, .decode.*), each group in its order; sets has room for n +
 * 1.  n + 1, or -2 out of memory. */
static int split_order(const char **sets, int n, const char *override)
{
    int k = 0, nd = 0;
    const char **defer = malloc((size_t)(n ? n : 1) * sizeof *defer);
    if (!defer) return -2;
    for (int i = 0; i < n; i++) {
        if (split_pool_set(sets[i])) defer[nd++] = sets[i];
        else sets[k++] = sets[i];
    }
    sets[k++] = override;
    for (int i = 0; i < nd; i++) sets[k++] = defer[i];
    free(defer);
    return k;
}

/* The overrides of the configuration sel (a value index per axis): the caller's, then the
 * point's assignments, then the split's rewrite of the cluster (after which the sets of
 * its prefill and decode pools).  The strings made are malloc'd into own[0 .. naxes] (the
 * rest NULL).  The count, or -1 with err set (bad input: a split the scenario cannot take),
 * -2 out of memory. */
static int config_sets(const cap_opts_t *o, const char *const *csets, int ncsets, const int *sel, const char **sets,
                       char **own, char *err, size_t errn)
{
    const sweep_t *sw = o->search;
    int ns = 0, split = -1;
    for (int i = 0; i < ncsets; i++) sets[ns++] = csets[i];
    for (int a = 0; a < sw->naxes; a++) {
        if (o->has_split && a == o->split_axis) {
            split = a;
            continue;
        }
        size_t len = strlen(sw->axes[a].key) + strlen(sw->axes[a].vals[sel[a]]) + 2;
        if (!(own[a] = malloc(len))) return -2;
        snprintf(own[a], len, "%s=%s", sw->axes[a].key, sw->axes[a].vals[sel[a]]);
        sets[ns++] = own[a];
    }
    if (split < 0) return ns;
    const char *v = sw->axes[split].vals[sel[split]];
    int rc = cap_split_override(o->file, sets, ns, v, &own[split], err, errn);
    if (rc < 0) return rc;
    if (!own[split]) return ns;
    return split_order(sets, ns, own[split]);
}

/* ---- pacesim capacity ------------------------------------------------------------ */

#define CAP_MAX_CONFIGS 1000000L

typedef struct cap_row {
    int rc;                       /* 0 ok, 1 runtime, 2 bad input */
    char *err;                    /* its message (rc != 0) */
    char *warn;                   /* the configuration's set-up warnings ("" none) */
    char *log;                    /* --probes: its probes, one line each */
    int tp, replicas, gpus;
    char hw[64], gpu[96];
    double usd_h;                 /* the configuration's price an hour (NAN: no --gpu-cost for it) */
    double trace_rate;            /* a trace's own rate (0: a Poisson workload) */
    cap_answer_t a;
    /* --error-bars P: the searches with every step at (1 + P/100) [0] and (1 - P/100) [1] times
     * its price, each with its status (as rc), message and --probes log */
    cap_answer_t eb[2];
    int eb_rc[2];
    char *eb_err[2], *eb_log[2];
} cap_row_t;

typedef struct cap_run {
    const cap_opts_t *o;
    const char *const *sets;
    int nsets;
    long npoints, point_base;
    cap_row_t *rows;
    int ncost;
    const char *cost_name[CAP_MAX_COSTS];
    double cost_usd[CAP_MAX_COSTS];
    FILE *err;
    int rc, log_probes;
    int one_point;                /* a point of a distributed search (--point-index): its CSV's frontier empty */
    char **warned;                /* set-up warnings printed so far */
    int nwarned;
    int nvar;                     /* searches a configuration: 1, or 3 with --error-bars (jobs p*3 + v) */
    int bad_said;                 /* a bad input's line printed: no second (one line, exit 2) */
} cap_run_t;

/* Search v of a configuration: 0 as priced; 1, 2: --error-bars's, every step at (1 + P/100)
 * and (1 - P/100) its price. */
static double var_scale(const cap_opts_t *o, int v)
{
    return v == 0 ? 1 : v == 1 ? 1 + o->error_bars / 100 : 1 - o->error_bars / 100;
}

/* The overrides of point p (config_sets); own has naxes + 1 slots.  The count, or -1 bad
 * input (err), -2 out of memory. */
static int point_sets(const cap_run_t *R, long p, const char **sets, char **own, char *err, size_t errn)
{
    int sel[64];
    sweep_point(R->o->search, p, sel);
    return config_sets(R->o, R->sets, R->nsets, sel, sets, own, err, errn);
}

static double price_of(const cap_run_t *R, const char *hw, const char *gpu)
{
    for (int i = 0; i < R->ncost; i++)
        if (!strcasecmp(R->cost_name[i], hw) || !strcasecmp(R->cost_name[i], gpu)) return R->cost_usd[i];
    return NAN;
}

/* Two --gpu-cost prices for one configuration's hardware (one naming its profile, the other its
 * GPU): the first would win unseen.  1 (and the message in m), or 0. */
static int price_twice(const cap_run_t *R, const char *hw, const char *gpu, char *m, size_t n)
{
    for (int i = 0; i < R->ncost; i++)
        for (int k = i + 1; k < R->ncost; k++)
            if ((!strcasecmp(R->cost_name[i], hw) || !strcasecmp(R->cost_name[i], gpu))
                && (!strcasecmp(R->cost_name[k], hw) || !strcasecmp(R->cost_name[k], gpu))) {
                snprintf(m, n, "pacesim capacity: --gpu-cost %s=%g and %s=%g price the same hardware (profile %s, GPU %s):"
                         " give it one price", R->cost_name[i], R->cost_usd[i], R->cost_name[k], R->cost_usd[k], hw, gpu);
                return 1;
            }
    return 0;
}

static void cap_job(void *ctx, long j, void *prog)
{
    (void)prog;
    cap_run_t *R = ctx;
    long pt = j / R->nvar;
    int v = (int)(j % R->nvar);
    cap_row_t *row = &R->rows[pt];
    cap_answer_t *ans = v ? &row->eb[v - 1] : &row->a;
    int *rcp = v ? &row->eb_rc[v - 1] : &row->rc;
    char **errp = v ? &row->eb_err[v - 1] : &row->err, **logp = v ? &row->eb_log[v - 1] : &row->log;
    const sweep_t *sw = R->o->search;
    const char **sets = calloc((size_t)R->nsets + (size_t)sw->naxes + 1, sizeof *sets);
    char **own = calloc((size_t)sw->naxes + 1, sizeof *own);
    char err[CAP_ERR_MAX] = "";
    cap_conf_t *c = NULL;
    int ns = sets && own ? point_sets(R, pt, sets, own, err, sizeof err) : -2;
    *rcp = 1;
    if (ns == -1) {
        *rcp = 2;
    } else if (ns < 0) {
        snprintf(err, sizeof err, "out of memory");
    } else if ((c = cap_conf_open_scaled(R->o, sets, ns, var_scale(R->o, v), rcp, err, sizeof err))) {
        if (v == 0) {
            row->tp = cap_conf_tp(c);
            row->replicas = cap_conf_replicas(c);
            row->gpus = cap_conf_gpus(c);
            snprintf(row->hw, sizeof row->hw, "%s", cap_conf_hw(c));
            snprintf(row->gpu, sizeof row->gpu, "%s", cap_conf_gpu(c));
            row->usd_h = price_of(R, row->hw, row->gpu) * row->gpus;
            row->warn = strdup(cap_conf_warn(c));
            row->trace_rate = cap_conf_trace_rate(c);
        }
        if (price_twice(R, cap_conf_hw(c), cap_conf_gpu(c), err, sizeof err)) {   /* a searched profile's */
            *rcp = 2;
        } else {
            size_t loglen;
            FILE *lf = R->log_probes ? open_memstream(logp, &loglen) : NULL;
            cap_conf_log(c, lf);
            *rcp = cap_conf_search(c, ans, err, sizeof err) < 0 ? (c->bad_input ? 2 : 1) : 0;
            if (lf) fclose(lf);
        }
    }
    if (*rcp) *errp = strdup(err);
    cap_conf_close(c);
    for (int a = 0; own && a <= sw->naxes; a++) free(own[a]);
    free(own);
    free(sets);
}

static void point_label(FILE *f, const sweep_t *sw, long p)
{
    int sel[64];
    sweep_point(sw, p, sel);
    for (int a = 0; a < sw->naxes; a++) fprintf(f, "%s%s=%s", a ? " " : "", sw->axes[a].key, sw->axes[a].vals[sel[a]]);
}

/* "point N (key=value ...)", or "point N" without a search. */
static void point_head(const cap_run_t *R, long p)
{
    int axes = R->o->search->naxes > 0;         /* no search: no "()" */
    fprintf(R->err, "point %ld%s", R->point_base + p, axes ? " (" : "");
    point_label(R->err, R->o->search, p);
    if (axes) fputc(')', R->err);
}

/* In point order: the errors and the (distinct) set-up warnings, once the configuration's
 * searches (its --error-bars ones too) are all done. */
static void cap_emit(void *ctx, long j)
{
    cap_run_t *R = ctx;
    if (j % R->nvar != R->nvar - 1) return;
    long pt = j / R->nvar;
    cap_row_t *row = &R->rows[pt];
    if (row->warn && row->warn[0]) {
        int seen = 0;
        for (int i = 0; i < R->nwarned && !seen; i++) seen = !strcmp(R->warned[i], row->warn);
        if (!seen) {
            fputs(row->warn, R->err);
            char **nw = realloc(R->warned, (size_t)(R->nwarned + 1) * sizeof *nw);
            if (nw && (nw[R->nwarned] = strdup(row->warn))) R->warned = nw, R->nwarned++;
            else if (nw) R->warned = nw;
        }
    }
    if (row->log) {
        point_head(R, pt);
        fprintf(R->err, ": %ld steps in all\n%s", row->a.steps, row->log);
    }
    for (int v = 0; v < R->nvar - 1; v++)
        if (row->eb_log[v]) {
            point_head(R, pt);
            fprintf(R->err, " with every step at x%.4g its price: %ld steps in all\n%s", var_scale(R->o, v + 1),
                    row->eb[v].steps, row->eb_log[v]);
        }
    /* a point refused as bad input (set-up: a KV cache too small at one combination) prints
     * its line for the first such point only: the search's one bad-input line */
    if (row->rc > R->rc) R->rc = row->rc;
    if (row->rc && !(row->rc == 2 && R->bad_said)) {
        if (row->rc == 2) R->bad_said = 1;
        point_head(R, pt);
        fprintf(R->err, ": %s\n", row->err ? setup_msg_line(row->err, strlen(row->err) + 1) : "out of memory");
    }
    for (int v = 0; !row->rc && v < R->nvar - 1; v++)   /* (a configuration that failed fails its three alike) */
        if (row->eb_rc[v]) {
            if (row->eb_rc[v] > R->rc) R->rc = row->eb_rc[v];
            if (row->eb_rc[v] == 2 && R->bad_said) continue;
            if (row->eb_rc[v] == 2) R->bad_said = 1;
            point_head(R, pt);
            fprintf(R->err, " with every step at x%.4g its price: %s\n", var_scale(R->o, v + 1),
                    row->eb_err[v] ? setup_msg_line(row->eb_err[v], strlen(row->eb_err[v]) + 1) : "out of memory");
        }
}

/* ---- the outputs ---- */

/* The table, the frontier and the --rate answer are printed from the CSV's rows, the same
 * function reading the CSV a search writes and a merged one: a search spread over machines
 * (--points, merge, --frontier) prints the bytes one process prints. */

static double per_gpu(const cap_row_t *r, double v) { return r->gpus > 0 ? v / r->gpus : NAN; }

static int row_ok(const cap_row_t *r) { return r->rc == 0 && r->a.rate > 0 && !r->a.below; }

/* The CSV, one row per configuration in point order, each row's last field (frontier)
 * empty: cap_table_t fills it. */
static void csv_out(FILE *f, const cap_run_t *R)
{
    const cap_opts_t *o = R->o;
    const sweep_t *sw = o->search;
    fputs("point", f);
    for (int a = 0; a < sw->naxes; a++) {
        fputc(',', f);
        sweep_csv_field(f, sw->axes[a].key);
    }
    fputs(",file,hardware,gpu,tp,replicas,gpus,usd_per_hour,status,rate_per_s,rate_per_gpu,req_per_usd,"
          "tok_s_per_gpu,saturation_req_s,ttft_p99_s,tpot_p99_s,e2el_p99_s", f);
    for (int k = 0; k < o->nslo; k++)
        if (!o->slo[k].per_request) fprintf(f, ",slo_%s_s", o->slo[k].name);
    fputs(",goodput_share,goodput_req_s,time_scale,extrapolated_share,probes,sim_steps", f);
    if (R->nvar > 1) fputs(",error_bars_pct,rate_per_s_lo,rate_per_s_hi,status_lo,status_hi", f);
    fputs(",frontier\n", f);
    int sel[64];
    for (long i = 0; i < R->npoints; i++) {
        const cap_row_t *r = &R->rows[i];
        const cap_probe_t *p = &r->a.at;
        int ok = row_ok(r);
        sweep_point(sw, i, sel);
        fprintf(f, "%ld", R->point_base + i);
        for (int a = 0; a < sw->naxes; a++) {
            fputc(',', f);
            sweep_csv_field(f, sw->axes[a].vals[sel[a]]);
        }
        fputc(',', f);
        sweep_csv_field(f, o->file);
        fputc(',', f);
        sweep_csv_field(f, r->hw);
        fputc(',', f);
        sweep_csv_field(f, r->gpu);
        if (r->tp < 0) fprintf(f, ",,%d,%d,", r->replicas, r->gpus);   /* pools of several TP degrees */
        else fprintf(f, ",%d,%d,%d,", r->tp, r->replicas, r->gpus);
        report_num(f, r->rc ? NAN : r->usd_h);
        fprintf(f, ",%s,", r->rc ? "error" : r->a.below ? "below" : r->a.above ? "above" : "ok");
        report_num(f, r->rc ? NAN : r->a.rate);
        fputc(',', f);
        report_num(f, ok ? per_gpu(r, r->a.rate) : NAN);
        fputc(',', f);
        report_num(f, ok ? r->a.rate * 3600 / r->usd_h : NAN);
        fputc(',', f);
        report_num(f, ok ? per_gpu(r, p->tok_s) : NAN);
        fputc(',', f);
        report_num(f, r->rc ? NAN : r->a.saturation);
        double v[3] = { p->ttft_p99, p->tpot_p99, p->e2el_p99 };
        for (int k = 0; k < 3; k++) {
            fputc(',', f);
            report_num(f, ok ? v[k] : NAN);
        }
        for (int k = 0; k < o->nslo; k++)
            if (!o->slo[k].per_request) {
                fputc(',', f);
                report_num(f, ok ? p->stat[k] : NAN);
            }
        fputc(',', f);
        report_num(f, ok ? p->good_share : NAN);
        fputc(',', f);
        report_num(f, ok ? p->good_share * r->a.rate : NAN);
        fputc(',', f);
        report_num(f, ok && r->trace_rate > 0 ? r->a.rate / r->trace_rate : NAN);
        fputc(',', f);
        report_num(f, ok ? p->env_outside : NAN);
        fprintf(f, ",%d,%ld", r->rc ? 0 : r->a.probes, r->rc ? 0 : r->a.steps);
        if (R->nvar > 1) {          /* the searches at +P% [0] (low) and -P% [1] (high) */
            fputc(',', f);
            report_num(f, o->error_bars);
            for (int e = 0; e < 2; e++) {
                fputc(',', f);
                report_num(f, r->rc || r->eb_rc[e] ? NAN : r->eb[e].rate);
            }
            for (int e = 0; e < 2; e++)
                fprintf(f, ",%s", r->rc || r->eb_rc[e] ? "error" : r->eb[e].below ? "below" : r->eb[e].above ? "above" : "ok");
        }
        fputs(",\n", f);
    }
}

/* Split a CSV line (RFC 4180, no line break inside a field) in place: field starts in fld,
 * unquoted.  The field count, or -1 (more than max, or an unclosed quote). */
static int csv_split(char *line, char **fld, int max)
{
    int n = 0;
    char *p = line;
    for (;;) {
        if (n == max) return -1;
        if (*p == '"') {
            char *w = ++p;
            fld[n++] = w;
            for (;;) {
                if (!*p) return -1;
                if (*p == '"' && p[1] == '"') *w++ = '"', p += 2;
                else if (*p == '"') { p++; break; }
                else *w++ = *p++;
            }
            if (*p && *p != ',') return -1;
            char *next = *p ? p + 1 : NULL;
            *w = 0;
            if (!next) return n;
            p = next;
        } else {
            fld[n++] = p;
            char *c = strchr(p, ',');
            if (!c) return n;
            *c = 0;
            p = c + 1;
        }
    }
}

enum { T_OK = 0, T_BELOW, T_ABOVE, T_ERROR };
enum { TC_POINT, TC_FILE, TC_GPUS, TC_USD, TC_STATUS, TC_RATE, TC_RGPU, TC_RUSD, TC_TOK, TC_TTFT, TC_TPOT, TC_GOOD,
       TC_EXTRAP, TC_PROBES, TC_FRONTIER, TC__N };
static const char *const tcol_names[TC__N] = { "point", "file", "gpus", "usd_per_hour", "status", "rate_per_s",
                                               "rate_per_gpu", "req_per_usd", "tok_s_per_gpu", "ttft_p99_s", "tpot_p99_s",
                                               "goodput_share", "extrapolated_share", "probes", "frontier" };

/* The columns of --error-bars P (all or none): P, the rates found with every step at (1 + P/100)
 * (low) and at (1 - P/100) (high) its price, and those searches' statuses. */
enum { TE_PCT, TE_LO, TE_HI, TE_SLO, TE_SHI, TE__N };
static const char *const tecol_names[TE__N] = { "error_bars_pct", "rate_per_s_lo", "rate_per_s_hi", "status_lo",
                                                "status_hi" };

/* A capacity CSV's rows as the table prints them. */
typedef struct cap_trow {
    char *line;                   /* the row as read (owned) */
    char *buf;                    /* its fields, split (owned) */
    char **fld;
    long point;
    int status, gpus, frontier;
    int trace;                    /* a trace's search (its time_scale given): not split into copies */
    long probes;
    double usd, rate, rate_gpu, req_usd, tok_gpu, ttft, tpot, good, extrap;
    double eb_pct, rate_lo, rate_hi;  /* --error-bars (the table's eb) */
    int st_lo, st_hi;
} cap_trow_t;

typedef struct cap_table {
    char *head, *hbuf;            /* the header line as read; split */
    char **hfld;
    int ncol, naxes;              /* axes: the columns between point and file */
    int col[TC__N];
    int ecol[TE__N], eb;          /* the --error-bars columns (-1: none); eb: all of them there */
    int tscol;                    /* time_scale (-1: none) */
    char **slo_cols;              /* the slo_NAME_s columns (into hfld) */
    int nslo_cols;
    long n;
    cap_trow_t *r;
} cap_table_t;

static void table_free(cap_table_t *t)
{
    for (long i = 0; i < t->n; i++) {
        free(t->r[i].line);
        free(t->r[i].buf);
        free(t->r[i].fld);
    }
    free(t->r);
    free(t->head);
    free(t->hbuf);
    free(t->hfld);
    free(t->slo_cols);
    memset(t, 0, sizeof *t);
}

/* A number field: empty is NAN; else all of it a number.  0 or -1. */
static int tnum(const char *s, double *v)
{
    char *end;
    if (!*s) {
        *v = NAN;
        return 0;
    }
    errno = 0;
    *v = strtod(s, &end);
    return *end || end == s || !isfinite(*v) ? -1 : 0;     /* (the CSV never holds nan or inf) */
}

/* The column (1-based, in bytes) where the field fld of a line split by csv_split from
 * buf, a copy of line, starts: its opening quote where it has one. */
static long cell_col(const char *line, const char *buf, const char *fld)
{
    long c = (long)(fld - buf) + 1;
    if (c > 1 && line[c - 2] == '"' && (c == 2 || line[c - 3] == ',')) c--;
    return c;
}

static int cmp_point_row(const void *a, const void *b)
{
    const long *x = a, *y = b;      /* (point, row) pairs */
    return x[0] != y[0] ? (x[0] < y[0] ? -1 : 1) : (x[1] > y[1]) - (x[1] < y[1]);
}

/* One point on two rows (a point's CSV merged twice, or two searches' points, numbered
 * alike): the table and the frontier would list it twice.  0, 1 out of memory, 2 refused
 * at the later row. */
static int table_dup_point(const cap_table_t *t, const char *path)
{
    long *pr = malloc((size_t)(t->n > 0 ? t->n : 1) * 2 * sizeof *pr);
    if (!pr) return 1;
    for (long i = 0; i < t->n; i++) pr[2 * i] = t->r[i].point, pr[2 * i + 1] = i;
    qsort(pr, (size_t)t->n, 2 * sizeof *pr, cmp_point_row);
    int rc = 0;
    for (long i = 1; i < t->n && !rc; i++)
        if (pr[2 * i] == pr[2 * i - 2]) {
            long a = pr[2 * i - 1], b = pr[2 * i + 1];
            setup_msg(stderr, "%s:%ld:1: point: %ld is also the point of line %ld (a point's row twice, or two searches'"
                      " points numbered alike): give each point once", path, b + 2, pr[2 * i], a + 2);
            rc = 2;
        }
    free(pr);
    return rc;
}

/* A statistic's column of the CSV: slo_NAME_s. */
static int is_slo_col(const char *h)
{
    size_t l = strlen(h);
    return !strncmp(h, "slo_", 4) && l > 6 && !strcmp(h + l - 2, "_s");
}

/* Parse the capacity CSV of nlines lines (the header first; the lines taken over).  0, 1
 * out of memory, 2 bad input (one message on stderr, path:line:col). */
static int table_parse(cap_table_t *t, const char *path, char **lines, long nlines)
{
    enum { MAXF = 512 };
    memset(t, 0, sizeof *t);
    for (int c = 0; c < TC__N; c++) t->col[c] = -1;
    for (int c = 0; c < TE__N; c++) t->ecol[c] = -1;
    t->tscol = -1;
    if (nlines < 1) {
        setup_msg(stderr, "%s:1:1: empty: not a capacity CSV", path);
        return 2;
    }
    t->head = lines[0];
    lines[0] = NULL;
    yd_drop_bom(t->head);
    t->hbuf = strdup(t->head);
    t->hfld = malloc(MAXF * sizeof *t->hfld);
    t->slo_cols = malloc(MAXF * sizeof *t->slo_cols);
    t->r = calloc((size_t)nlines, sizeof *t->r);
    if (!t->hbuf || !t->hfld || !t->slo_cols || !t->r) return 1;
    t->ncol = csv_split(t->hbuf, t->hfld, MAXF);
    for (int i = 0; i < t->ncol; i++) {
        for (int c = 0; c < TC__N; c++)
            if (!strcmp(t->hfld[i], tcol_names[c])) {
                if (t->col[c] >= 0) {                 /* which one would the table read? */
                    setup_msg(stderr, "%s:1:%ld: %s: a second column of that name: not a capacity CSV", path,
                              cell_col(t->head, t->hbuf, t->hfld[i]), tcol_names[c]);
                    return 2;
                }
                t->col[c] = i;
            }
        for (int c = 0; c < TE__N; c++)
            if (!strcmp(t->hfld[i], tecol_names[c])) {
                if (t->ecol[c] >= 0) {
                    setup_msg(stderr, "%s:1:%ld: %s: a second column of that name: not a capacity CSV", path,
                              cell_col(t->head, t->hbuf, t->hfld[i]), tecol_names[c]);
                    return 2;
                }
                t->ecol[c] = i;
            }
        if (is_slo_col(t->hfld[i])) t->slo_cols[t->nslo_cols++] = t->hfld[i];
        if (!strcmp(t->hfld[i], "time_scale") && t->tscol < 0) t->tscol = i;
    }
    int missing = -1;
    for (int c = TC__N - 1; c >= 0; c--)
        if (t->col[c] < 0) missing = c;
    if (t->ncol < 0 || missing >= 0 || t->col[TC_POINT] != 0 || t->col[TC_FRONTIER] != t->ncol - 1) {
        setup_msg(stderr, "%s:1:1: not a capacity CSV (its header needs point first, then the search keys, file, gpus, "
                  "usd_per_hour, status, rate_per_s ... and frontier last%s%s)", path, missing >= 0 ? "; no " : "",
                  missing >= 0 ? tcol_names[missing] : "");
        return 2;
    }
    int ne = 0;
    for (int c = 0; c < TE__N; c++) ne += t->ecol[c] >= 0;
    if (ne && ne < TE__N) {
        int c = 0;
        while (t->ecol[c] >= 0) c++;
        setup_msg(stderr, "%s:1:1: not a capacity CSV (the error bars' columns error_bars_pct, rate_per_s_lo, "
                  "rate_per_s_hi, status_lo, status_hi come all or none; no %s)", path, tecol_names[c]);
        return 2;
    }
    t->eb = ne == TE__N;
    t->naxes = t->col[TC_FILE] - 1;
    for (long l = 1; l < nlines; l++) {
        cap_trow_t *r = &t->r[t->n];
        r->line = lines[l];
        lines[l] = NULL;
        t->n++;
        r->buf = strdup(r->line);
        r->fld = malloc(MAXF * sizeof *r->fld);
        if (!r->buf || !r->fld) return 1;
        int k = csv_split(r->buf, r->fld, MAXF);
        if (k != t->ncol) {                     /* where the first missing or extra field starts */
            long col = k < 0 ? 1 : k < t->ncol ? (long)strlen(r->line) + 1 : cell_col(r->line, r->buf, r->fld[t->ncol]);
            if (k < 0) setup_msg(stderr, "%s:%ld:1: an unclosed quote, or more than %d fields", path, l + 1, MAXF);
            else setup_msg(stderr, "%s:%ld:%ld: %d fields, the header has %d", path, l + 1, col, k, t->ncol);
            return 2;
        }
        char **f = r->fld;
        const char *st = f[t->col[TC_STATUS]];
        r->status = !strcmp(st, "ok") ? T_OK : !strcmp(st, "below") ? T_BELOW : !strcmp(st, "above") ? T_ABOVE
                  : !strcmp(st, "error") ? T_ERROR : -1;
        int bad_col = r->status < 0 ? TC_STATUS : -1;
        double d;
        char *end;
        errno = 0;
        r->point = strtol(f[0], &end, 10);
        if (!*f[0] || *end || errno || r->point < 0) bad_col = TC_POINT;
        /* (0 only where the configuration failed: the --rate answer would price copies of it at 0 GPUs) */
        if (tnum(f[t->col[TC_GPUS]], &d) < 0 || !(d >= (r->status == T_ERROR ? 0 : 1) && d <= INT_MAX) || d != floor(d))
            bad_col = TC_GPUS;
        else r->gpus = (int)d;
        if (tnum(f[t->col[TC_PROBES]], &d) < 0 || !(d >= 0 && d <= LONG_MAX / 2) || d != floor(d)) bad_col = TC_PROBES;
        else r->probes = (long)d;
        struct { int c; double *v; } nums[] = {
            { TC_USD, &r->usd }, { TC_RATE, &r->rate }, { TC_RGPU, &r->rate_gpu }, { TC_RUSD, &r->req_usd },
            { TC_TOK, &r->tok_gpu }, { TC_TTFT, &r->ttft }, { TC_TPOT, &r->tpot }, { TC_GOOD, &r->good },
            { TC_EXTRAP, &r->extrap } };
        for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++)   /* prices, rates, times, shares: >= 0 */
            if (tnum(f[t->col[nums[i].c]], nums[i].v) < 0 || *nums[i].v < 0) bad_col = nums[i].c;
        if (bad_col >= 0) {
            setup_msg(stderr, "%s:%ld:%ld: %s: \"%s\" is not %s", path, l + 1, cell_col(r->line, r->buf, f[t->col[bad_col]]),
                      tcol_names[bad_col], f[t->col[bad_col]],
                      bad_col == TC_STATUS ? "a status (ok, below, above or error)"
                      : bad_col == TC_GPUS && r->status != T_ERROR ? "a count of GPUs >= 1" : "a number >= 0");
            return 2;
        }
        /* a configuration that found a rate has the value of every SLO's statistic there: an
         * empty one is a row of a search under other SLOs, whose rates do not compare */
        for (int i = 0; (r->status == T_OK || r->status == T_ABOVE) && i < t->ncol; i++) {
            if (!is_slo_col(t->hfld[i]) || *f[i]) continue;
            setup_msg(stderr, "%s:%ld:%ld: %s: empty where a rate was found: a row of a search under other SLOs (merge"
                      " the points of one search)", path, l + 1, cell_col(r->line, r->buf, f[i]), t->hfld[i]);
            return 2;
        }
        r->trace = t->tscol >= 0 && *f[t->tscol];
        r->eb_pct = r->rate_lo = r->rate_hi = NAN;
        if (t->eb) {
            int bad_e = -1;
            int *est[2] = { &r->st_lo, &r->st_hi };
            for (int v = 0; v < 2; v++) {
                const char *e = f[t->ecol[TE_SLO + v]];
                *est[v] = !strcmp(e, "ok") ? T_OK : !strcmp(e, "below") ? T_BELOW : !strcmp(e, "above") ? T_ABOVE
                        : !strcmp(e, "error") ? T_ERROR : -1;
                if (*est[v] < 0) bad_e = TE_SLO + v;
            }
            if (tnum(f[t->ecol[TE_HI]], &r->rate_hi) < 0 || r->rate_hi < 0) bad_e = TE_HI;
            if (tnum(f[t->ecol[TE_LO]], &r->rate_lo) < 0 || r->rate_lo < 0) bad_e = TE_LO;
            if (tnum(f[t->ecol[TE_PCT]], &r->eb_pct) < 0 || !(r->eb_pct > 0 && r->eb_pct <= 50)) bad_e = TE_PCT;
            if (bad_e >= 0) {
                setup_msg(stderr, "%s:%ld:%ld: %s: \"%s\" is not %s", path, l + 1,
                          cell_col(r->line, r->buf, f[t->ecol[bad_e]]), tecol_names[bad_e], f[t->ecol[bad_e]],
                          bad_e >= TE_SLO ? "a status (ok, below, above or error)"
                          : bad_e == TE_PCT ? "a percentage P, 0 < P <= 50" : "a number >= 0");
                return 2;
            }
        }
    }
    return table_dup_point(t, path);
}

static int trow_ok(const cap_trow_t *r) { return (r->status == T_OK || r->status == T_ABOVE) && r->rate > 0; }

/* The Pareto frontier: configurations no other beats on output tokens/s per GPU (higher),
 * TTFT p99 and TPOT p99 (lower) at once, each at its sustained rate; of equal rows the
 * first point stays. */
static void table_frontier(cap_table_t *t)
{
    for (long i = 0; i < t->n; i++) {
        cap_trow_t *a = &t->r[i];
        a->frontier = 0;
        if (!trow_ok(a) || isnan(a->tok_gpu)) continue;
        int dom = 0;
        for (long j = 0; j < t->n && !dom; j++) {
            const cap_trow_t *b = &t->r[j];
            if (j == i || !trow_ok(b) || isnan(b->tok_gpu)) continue;
            int ge = b->tok_gpu >= a->tok_gpu && b->ttft <= a->ttft && b->tpot <= a->tpot;
            int gt = b->tok_gpu > a->tok_gpu || b->ttft < a->ttft || b->tpot < a->tpot;
            dom = ge && (gt || b->point < a->point);
        }
        a->frontier = !dom;
    }
}

/* The CSV with its frontier column (empty for a point of a distributed search). */
static void table_csv(FILE *f, const cap_table_t *t, int one_point)
{
    fprintf(f, "%s\n", t->head);
    for (long i = 0; i < t->n; i++) {
        const char *line = t->r[i].line, *last = strrchr(line, ',');
        fprintf(f, "%.*s,", (int)(last - line), line);
        if (!one_point) fprintf(f, "%d", t->r[i].frontier);
        fputc('\n', f);
    }
}

/* Sorted by cost: the price (where known), then the GPUs, then the rate (highest first),
 * then the point; failed configurations last, by point. */
static const cap_table_t *sort_tab;
static int by_cost(const void *x, const void *y)
{
    const cap_trow_t *a = &sort_tab->r[*(const long *)x], *b = &sort_tab->r[*(const long *)y];
    int ea = a->status == T_ERROR, eb = b->status == T_ERROR;
    if (ea != eb) return ea ? 1 : -1;
    if (!ea) {
        double ca = isnan(a->usd) ? INFINITY : a->usd, cb = isnan(b->usd) ? INFINITY : b->usd;
        if (ca != cb) return ca < cb ? -1 : 1;
        if (a->gpus != b->gpus) return a->gpus < b->gpus ? -1 : 1;
        double ra = isnan(a->rate) ? -INFINITY : a->rate, rb = isnan(b->rate) ? -INFINITY : b->rate;
        if (ra != rb) return ra > rb ? -1 : 1;
    }
    return a->point < b->point ? -1 : a->point > b->point;
}

static void fmt_g(char *b, size_t n, double v, const char *fmt)
{
    if (isnan(v)) snprintf(b, n, "-");
    else snprintf(b, n, fmt, v);
}

static const char *key_tail(const char *k)
{
    const char *d = strrchr(k, '.');
    return d ? d + 1 : k;
}

static void point_label_t(FILE *f, const cap_table_t *t, const cap_trow_t *r)
{
    for (int a = 0; a < t->naxes; a++) fprintf(f, "%s%s=%s", a ? " " : "", t->hfld[1 + a], r->fld[1 + a]);
}

/* An axis column's width: its key's last component, its widest value, at least 6. */
static int axis_width(const cap_table_t *t, int a)
{
    int w = (int)strlen(key_tail(t->hfld[1 + a]));
    for (long i = 0; i < t->n; i++)
        if ((int)strlen(t->r[i].fld[1 + a]) > w) w = (int)strlen(t->r[i].fld[1 + a]);
    return w < 6 ? 6 : w;
}

/* A rate as the table prints it: "<" none down to it, ">" every rate up to it passed. */
static void rate_cell(char *b, size_t n, int status, double rate)
{
    if (status == T_ERROR) snprintf(b, n, "error");
    else if (isnan(rate)) snprintf(b, n, "-");
    else snprintf(b, n, "%s%.4g", status == T_BELOW ? "<" : status == T_ABOVE ? ">" : "", rate);
}

static void table_row(FILE *f, const cap_table_t *t, const int *wid, const cap_trow_t *r, int goodput)
{
    char b[64];
    fprintf(f, "%6ld ", r->point);
    for (int a = 0; a < t->naxes; a++) fprintf(f, " %*s", wid[a], r->fld[1 + a]);
    int ok = trow_ok(r), err = r->status == T_ERROR;
    fprintf(f, " %4d", r->gpus);
    fmt_g(b, sizeof b, err ? NAN : r->usd, "%.2f");
    fprintf(f, " %7s", b);
    if (err) snprintf(b, sizeof b, "error");
    else if (isnan(r->rate)) snprintf(b, sizeof b, "-");
    else snprintf(b, sizeof b, "%s%.4g", r->status == T_BELOW ? "<" : r->status == T_ABOVE ? ">" : "", r->rate);
    fprintf(f, " %9s", b);
    if (t->eb) {                  /* [low, high]: the searches at +P% and at -P% */
        char lo[32], hi[32];
        rate_cell(lo, sizeof lo, err ? T_ERROR : r->st_lo, r->rate_lo);
        rate_cell(hi, sizeof hi, err ? T_ERROR : r->st_hi, r->rate_hi);
        snprintf(b, sizeof b, "[%s, %s]", lo, hi);
        fprintf(f, " %19s", b);
    }
    fmt_g(b, sizeof b, ok ? r->rate_gpu : NAN, "%.4g");
    fprintf(f, " %9s", b);
    fmt_g(b, sizeof b, ok ? r->req_usd : NAN, ok && r->req_usd >= 1e8 ? "%.3g" : "%.0f");   /* a merged CSV's own */
    fprintf(f, " %8s", b);
    fmt_g(b, sizeof b, ok ? r->tok_gpu : NAN, "%.0f");
    fprintf(f, " %9s", b);
    fmt_g(b, sizeof b, ok ? r->ttft : NAN, "%.3f");
    fprintf(f, " %8s", b);
    fmt_g(b, sizeof b, ok ? 1e3 * r->tpot : NAN, "%.1f");
    fprintf(f, " %8s", b);
    if (goodput) {
        fmt_g(b, sizeof b, ok ? r->good : NAN, "%.3f");
        fprintf(f, " %7s", b);
    }
    if (ok && !isnan(r->extrap)) snprintf(b, sizeof b, "%.0f%%%s", 100 * r->extrap, r->extrap > 0.5 ? "*" : "");
    else snprintf(b, sizeof b, "-");
    fprintf(f, " %7s", b);
    if (err) fprintf(f, " %6s", "-");
    else fprintf(f, " %6ld", r->probes);
    fprintf(f, "%s\n", r->frontier ? "  F" : "");
}

static void table_header(FILE *f, const cap_table_t *t, const int *wid, int goodput)
{
    fprintf(f, "%6s ", "point");
    for (int a = 0; a < t->naxes; a++) fprintf(f, " %*s", wid[a], key_tail(t->hfld[1 + a]));
    fprintf(f, " %4s %7s %9s", "GPUs", "$/h", "req/s");
    if (t->eb) fprintf(f, " %19s", "[low, high]");
    fprintf(f, " %9s %8s %9s %8s %8s", "req/s/GPU", "req/$", "tok/s/GPU", "TTFTp99", "TPOTp99");
    if (goodput) fprintf(f, " %7s", "good");
    fprintf(f, " %7s %6s\n", "extrap", "probes");
}

/* A row's rate and whether it sustains one: as found (lo 0), or at +P% (lo 1: the search with
 * every step at (1 + P/100) its price). */
static double trow_rate(const cap_trow_t *r, int lo) { return lo ? r->rate_lo : r->rate; }
static int trow_ok_at(const cap_trow_t *r, int lo)
{
    return lo ? (r->st_lo == T_OK || r->st_lo == T_ABOVE) && r->rate_lo > 0 && r->status != T_ERROR : trow_ok(r);
}

/* The --rate answer over the rows in cost order ix (at +P%: lo): the cheapest whose rate is at
 * least target (*copies 0), else the cheapest number of copies of one (*copies), of equal costs
 * the first point; NULL: none (*too_many: the rows that would need more than 10^12 copies).
 * A trace's configuration is not split into copies: a random split of a trace is not the trace
 * at a lower rate (its time-scaled replay, which the search judged). */
static const cap_trow_t *pick_rate(const cap_table_t *t, const long *ix, double target, int lo, long *copies,
                                   int *too_many)
{
    *copies = 0;
    *too_many = 0;
    for (long k = 0; k < t->n; k++)
        if (trow_ok_at(&t->r[ix[k]], lo) && trow_rate(&t->r[ix[k]], lo) >= target) return &t->r[ix[k]];
    const cap_trow_t *best = NULL;
    double cbest = INFINITY;
    for (long i = 0; i < t->n; i++) {   /* in point order: of equal costs the first point */
        const cap_trow_t *r = &t->r[i];
        if (!trow_ok_at(r, lo) || r->trace) continue;
        double kd = ceil(target / trow_rate(r, lo) - 1e-12);
        if (!(kd <= 1e12)) {
            (*too_many)++;
            continue;
        }
        long k = (long)kd;
        double cst = (double)k * (isnan(r->usd) ? (double)r->gpus : r->usd);
        if (cst < cbest || (cst == cbest && best && r->point < best->point))
            cbest = cst, best = r, *copies = k;
    }
    return best;
}

/* What pick_rate found, after "cheapest carrying R req/s: ". */
static void pick_print(FILE *f, const cap_table_t *t, double target, const cap_trow_t *best, long copies, int too_many,
                       int lo)
{
    if (best && !copies) {
        fprintf(f, "point %ld (", best->point);
        point_label_t(f, t, best);
        fprintf(f, "%s%d GPU%s", t->naxes ? "; " : "", best->gpus, best->gpus == 1 ? "" : "s");
        if (!isnan(best->usd)) fprintf(f, ", $%.2f/h", best->usd);
        fprintf(f, ") sustains %.4g req/s\n", trow_rate(best, lo));
    } else if (!best) {
        int traced = 0;
        for (long i = 0; i < t->n && !traced; i++) traced = t->r[i].trace && trow_ok_at(&t->r[i], lo);
        fprintf(f, "none (%s)\n", too_many ? "each would need more than 10^12 copies"
                : traced ? "of a trace no copies are judged: a random split of it is not its replay at a lower rate"
                : "no configuration sustains any rate");
    } else {
        fprintf(f, "no single configuration does; %ld copies of point %ld (", copies, best->point);
        point_label_t(f, t, best);
        fprintf(f, "%s%.0f GPUs", t->naxes ? "; " : "", (double)copies * best->gpus);   /* a merged CSV may hold any count */
        if (!isnan(best->usd)) fprintf(f, ", $%.2f/h", (double)copies * best->usd);
        fprintf(f, "), each sustaining %.4g req/s: random routing splits the Poisson stream into %ld of %.4g req/s\n",
                trow_rate(best, lo), copies, target / (double)copies);
    }
}

/* The row with the most req/s per GPU (at +P%: lo), of equal ones the first in cost order ix;
 * NULL: none sustains a rate. */
static const cap_trow_t *pick_gpu(const cap_table_t *t, const long *ix, int lo)
{
    const cap_trow_t *best = NULL;
    for (long k = 0; k < t->n; k++) {
        const cap_trow_t *r = &t->r[ix[k]];
        if (trow_ok_at(r, lo) && r->gpus > 0
            && (!best || trow_rate(r, lo) / r->gpus > trow_rate(best, lo) / best->gpus)) best = r;
    }
    return best;
}

/* "point N (key=value ...)", or "point N" without a search. */
static void point_ref(FILE *f, const cap_table_t *t, const cap_trow_t *r)
{
    fprintf(f, "point %ld%s", r->point, t->naxes ? " (" : "");
    point_label_t(f, t, r);
    if (t->naxes) fputc(')', f);
}

/* The table sorted by cost, the frontier and the --rate answer (target > 0), from the
 * CSV's rows; file: the scenario named in the heading. */
static void report(FILE *f, const cap_table_t *t, const cap_opts_t *o, const char *file, double target)
{
    long *ix = malloc((size_t)(t->n ? t->n : 1) * sizeof *ix);
    int *wid = malloc((size_t)(t->naxes + 1) * sizeof *wid);
    if (!ix || !wid) {
        free(ix);
        free(wid);
        return;
    }
    for (int a = 0; a < t->naxes; a++) wid[a] = axis_width(t, a);
    for (long i = 0; i < t->n; i++) ix[i] = i;
    sort_tab = t;
    qsort(ix, (size_t)t->n, sizeof *ix, by_cost);
    fprintf(f, "capacity: %s, SLOs", file);
    for (int k = 0; k < o->nslo; k++) fprintf(f, "%s %s <= %g s", k ? "," : "", o->slo[k].name, o->slo[k].limit);
    if (o->goodput > 0) fprintf(f, " (each request), goodput >= %g", o->goodput);
    fprintf(f, "; rate within %g%%\n", 100 * o->tol);
    table_header(f, t, wid, o->goodput > 0);
    int anyx = 0;
    for (long k = 0; k < t->n; k++) {
        const cap_trow_t *r = &t->r[ix[k]];
        table_row(f, t, wid, r, o->goodput > 0);
        anyx |= trow_ok(r) && r->extrap > 0.5;
    }
    fprintf(f, "req/s: the highest request rate (Poisson, or the trace's on a scaled clock) meeting every SLO with a queue "
               "that does not grow (<: none down to it; "
               ">: every rate up to it); TTFT p99 s, TPOT p99 ms at that rate; F: on the Pareto frontier of tok/s/GPU, "
               "TTFT p99, TPOT p99\n");
    if (t->eb) {
        double pct = NAN;
        for (long i = 0; i < t->n && isnan(pct); i++) pct = t->r[i].eb_pct;
        fprintf(f, "[low, high]: req/s searched again with every step at x%.4g (low) and at x%.4g (high) its price "
                "(--error-bars %g: the same seeds and arrivals; each within the rate tolerance, as req/s is)\n",
                1 + pct / 100, 1 - pct / 100, pct);
    }
    if (anyx) fprintf(f, "*: priced mostly (over 50%% of step time) outside the profile's measured envelope, by the laws' extrapolation\n");
    /* the frontier, by cost */
    fprintf(f, "Pareto frontier (tok/s/GPU against TTFT p99 and TPOT p99):");
    int nf = 0;
    for (long k = 0; k < t->n; k++) {
        const cap_trow_t *r = &t->r[ix[k]];
        if (!r->frontier) continue;
        fprintf(f, "%s point %ld (", nf++ ? ";" : "", r->point);
        point_label_t(f, t, r);
        fprintf(f, "%s%.0f tok/s/GPU, %.3f s, %.1f ms)", t->naxes ? ": " : "", r->tok_gpu, r->ttft, 1e3 * r->tpot);
    }
    fprintf(f, "%s\n", nf ? "" : " none");
    double pct = NAN;             /* --error-bars P (the CSV's) */
    for (long i = 0; t->eb && i < t->n && isnan(pct); i++) pct = t->r[i].eb_pct;
    if (!isnan(pct)) {            /* the best rate per GPU, and at +P% */
        const cap_trow_t *b0 = pick_gpu(t, ix, 0), *b1 = pick_gpu(t, ix, 1);
        fprintf(f, "most req/s per GPU: ");
        if (b0) {
            point_ref(f, t, b0);
            fprintf(f, ", %.4g req/s/GPU", b0->rate / b0->gpus);
        } else {
            fprintf(f, "none");
        }
        fprintf(f, "; at +%g%% step cost: ", pct);
        if (!b1) {
            fprintf(f, "none\n");
        } else {
            if (b1 == b0) fprintf(f, "the same");
            else point_ref(f, t, b1);
            fprintf(f, ", %.4g req/s/GPU\n", b1->rate_lo / b1->gpus);
        }
    }
    if (target > 0) {
        long copies;
        int too_many;
        const cap_trow_t *best = pick_rate(t, ix, target, 0, &copies, &too_many);
        fprintf(f, "cheapest carrying %g req/s: ", target);
        pick_print(f, t, target, best, copies, too_many, 0);
        if (!isnan(pct)) {        /* does the pick hold with every step at (1 + P/100) its price? */
            long copies1;
            int too_many1;
            const cap_trow_t *b1 = pick_rate(t, ix, target, 1, &copies1, &too_many1);
            fprintf(f, "at +%g%% step cost (every step at x%.4g its price): the pick %s: ", pct, 1 + pct / 100,
                    b1 == best && copies1 == copies ? "holds" : "changes");
            pick_print(f, t, target, b1, copies1, too_many1, 1);
        }
    }
    free(ix);
    free(wid);
}

/* Read a file's lines (without their line ends).  0, 1 out of memory, 2 cannot open. */
static int read_lines(const char *path, char ***out, long *nout)
{
    const char *why = NULL;
    FILE *f = yd_open_input(path, &why);          /* a regular file only: a FIFO would block */
    if (!f) {
        setup_msg(stderr, "%s: %s", path, why);
        return 2;
    }
    char **lines = NULL, *line = NULL;
    size_t cap = 0;
    long n = 0, lcap = 0;
    ssize_t len;
    int rc = 0;
    while ((len = getline(&line, &cap, f)) >= 0) {
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
        if (n == lcap) {
            lcap = lcap ? 2 * lcap : 256;
            char **nl = realloc(lines, (size_t)lcap * sizeof *nl);
            if (!nl) { rc = 1; break; }
            lines = nl;
        }
        if (!(lines[n] = strdup(line))) { rc = 1; break; }
        n++;
    }
    int rerr = !rc && ferror(f) ? errno : 0;  /* a directory, an I/O error: not an empty CSV */
    free(line);
    fclose(f);
    *out = lines;
    *nout = n;
    if (rerr) {
        setup_msg(stderr, "%s: cannot read: %s", path, strerror(rerr));
        return rerr == ENOMEM ? 1 : 2;
    }
    if (rc) fprintf(stderr, "pacesim capacity: out of memory\n");
    return rc;
}

static void free_lines(char **lines, long n)
{
    for (long i = 0; i < n; i++) free(lines[i]);
    free(lines);
}

/* pacesim capacity --frontier CSV: the CSV (a merge of per-point CSVs, or any capacity CSV)
 * with its `frontier` column computed over all its rows, to out; with the search's SLOs
 * (o->nslo > 0) and tbl, the table the search prints, to tbl.  Exit status. */
static int merged_frontier(const char *path, FILE *out, FILE *tbl, const cap_opts_t *o, double target)
{
    char **lines = NULL;
    long n = 0;
    cap_table_t t;
    int rc = read_lines(path, &lines, &n);
    if (rc) {
        free_lines(lines, n);
        return rc;
    }
    rc = table_parse(&t, path, lines, n);
    free_lines(lines, n);
    if (rc == 0 && tbl && o->nslo > 0) {      /* the SLOs given are the search's: its slo_NAME_s columns */
        int nstat = 0;
        for (int k = 0; k < o->nslo && !rc; k++) {
            if (o->slo[k].per_request) continue;
            nstat++;
            const char *col = NULL;
            for (int c = 0; c < t.nslo_cols && !col; c++)
                if (!strncmp(t.slo_cols[c] + 4, o->slo[k].name, strlen(o->slo[k].name))
                    && !strcmp(t.slo_cols[c] + 4 + strlen(o->slo[k].name), "_s"))
                    col = t.slo_cols[c];
            if (!col) {
                setup_msg(stderr, "pacesim capacity: --slo %s: %s has no slo_%s_s column: give the SLOs of the search "
                          "that wrote it", o->slo[k].name, path, o->slo[k].name);
                rc = 2;
                break;
            }
            /* a rate found meets the bound (to the CSV's 6 digits): one above it was searched under a looser one */
            int ci = 0;
            while (ci < t.ncol && t.hfld[ci] != col) ci++;
            for (long i = 0; i < t.n && !rc && ci < t.ncol; i++) {
                const cap_trow_t *r = &t.r[i];
                double v;
                if ((r->status != T_OK && r->status != T_ABOVE) || tnum(r->fld[ci], &v) < 0
                    || !(v > o->slo[k].limit * (1 + 1e-5)))
                    continue;
                setup_msg(stderr, "pacesim capacity: --slo %s=%g: %s, point %ld: %s is %g at its rate, above the bound:"
                          " give the SLOs of the search that wrote it", o->slo[k].name, o->slo[k].limit, path, r->point,
                          col, v);
                rc = 2;
            }
        }
        if (!rc && nstat != t.nslo_cols) {
            setup_msg(stderr, "pacesim capacity: %s has %d slo_NAME_s columns, --slo gives %d statistics: give the SLOs of "
                      "the search that wrote it", path, t.nslo_cols, nstat);
            rc = 2;
        }
        /* the goodput share: every rate found meets --goodput (to 6 digits), and has one only under it */
        for (long i = 0; i < t.n && !rc; i++) {
            const cap_trow_t *r = &t.r[i];
            if (r->status != T_OK && r->status != T_ABOVE) continue;
            if (o->goodput > 0 ? !(r->good >= o->goodput * (1 - 1e-5)) : !isnan(r->good)) {
                char v[32];
                snprintf(v, sizeof v, "%g", r->good);
                setup_msg(stderr, "pacesim capacity: %s, point %ld: goodput_share %s at its rate, %s: give the --goodput of "
                          "the search that wrote it", path, r->point, isnan(r->good) ? "empty" : v,
                          o->goodput > 0 ? "below --goodput" : "a search under --goodput");
                rc = 2;
            }
        }
    }
    if (rc == 0) {
        table_frontier(&t);
        table_csv(out, &t, 0);
        if (tbl && o->nslo > 0) {
            /* the scenario searched (a merge of several searches' points: not it alone) */
            char head[SCN_PATH_MAX + 64];
            const char *f0 = t.n ? t.r[0].fld[t.col[TC_FILE]] : path;
            int others = 0;
            for (long i = 1; i < t.n && !others; i++) others = strcmp(t.r[i].fld[t.col[TC_FILE]], f0) != 0;
            snprintf(head, sizeof head, "%s%s", f0, others ? " and other scenarios" : "");
            report(tbl, &t, o, head, target);
        }
    } else if (rc == 1) {
        fprintf(stderr, "pacesim capacity: out of memory\n");
    }
    table_free(&t);
    return rc;
}

/* A search's outputs: its CSV read back as the table reads a merged one, the frontier
 * over its rows, the table to tbl (NULL: none) and the CSV to fc (NULL: none).  0 or 1. */
static int run_outputs(const cap_run_t *R, FILE *tbl, FILE *fc, double target)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m) return 1;
    csv_out(m, R);
    if (fclose(m) != 0) {
        free(buf);
        return 1;
    }
    long n = 0;
    for (size_t i = 0; i < len; i++) n += buf[i] == '\n';
    char **lines = calloc((size_t)(n ? n : 1), sizeof *lines);
    int rc = lines ? 0 : 1;
    long k = 0;
    for (char *p = buf, *nl; !rc && k < n && (nl = strchr(p, '\n')); p = nl + 1) {
        *nl = 0;
        if (!(lines[k++] = strdup(p))) rc = 1;
    }
    free(buf);
    cap_table_t t;
    if (!rc) rc = table_parse(&t, "capacity", lines, k) ? 1 : 0;
    else memset(&t, 0, sizeof t);
    free_lines(lines, k);
    if (!rc) {
        table_frontier(&t);
        if (tbl) report(tbl, &t, R->o, R->o->file, target);
        if (fc) table_csv(fc, &t, R->one_point);
    }
    table_free(&t);
    return rc;
}

/* ---- the command line ---- */

static int bad(const char *fmt, const char *a, const char *b)
{
    char m[1024];
    snprintf(m, sizeof m, fmt, a, b);
    setup_msg(stderr, "pacesim capacity: %s", m);
    return 2;
}

static int parse_share(const char *v, double lo_excl, double hi_incl, double *out)
{
    double x;
    if (parse_pos(v, &x) < 0 || !(x > lo_excl) || !(x <= hi_incl)) return -1;
    *out = x;
    return 0;
}

/* A split value's identity (01:2 is 1:2): sweep_find_dup's canon for the split axis. */
static int split_canon(const char *v, char *out, size_t n, void *ctx)
{
    cap_split_t sp;
    char e[CAP_ERR_MAX];
    (void)ctx;
    if (cap_parse_split(v, &sp, e, sizeof e) < 0) return 0;
    snprintf(out, n, "%d:%d:%d", (int)sp.kind, sp.p, sp.d);
    return 1;
}

/* A split value given twice would run one configuration twice (and print it twice):
 * refused, as a value given twice on any other axis is (sweep_add).  0, 1 out of memory, or
 * 2 with the message printed. */
static int check_dups(const cap_opts_t *o)
{
    if (!o->has_split) return 0;
    const sweep_axis_t *ax = &o->search->axes[o->split_axis];
    int i1, i2, r = sweep_find_dup(ax->vals, ax->n, split_canon, NULL, &i1, &i2);
    if (r <= 0) return r < 0 ? 1 : 0;
    if (strcmp(ax->vals[i1], ax->vals[i2]))
        setup_msg(stderr, "pacesim capacity: --search %s: %s and %s are the same value (each value runs once: give it "
                  "once)", ax->key, ax->vals[i1], ax->vals[i2]);
    else
        setup_msg(stderr, "pacesim capacity: --search %s: %s is given twice (each value runs once: give it once)",
                  ax->key, ax->vals[i2]);
    return 2;
}

/* Every value of every axis, on the caller's overrides with the other axes at their first
 * values (a configuration of the search: an axis may need another's, as cluster.router a
 * cluster.pools.NAME.count makes), must load: an unknown key or a bad value is refused before
 * any run, naming the --search it came from.  With a split axis, every value of every other
 * axis alone beside every split value (the split rewrites the pools). */
static int check_axes(const cap_opts_t *o)
{
    const sweep_t *sw = o->search;
    const char **sets = calloc((size_t)o->nsets + (size_t)sw->naxes + 2, sizeof *sets);
    char **own = calloc((size_t)sw->naxes + 1, sizeof *own), **first = calloc((size_t)sw->naxes + 1, sizeof *first);
    int rc = sets && own && first ? 0 : 1, nsplit = o->has_split ? sw->axes[o->split_axis].n : 1, pd = 0;
    char err[CAP_ERR_MAX];
    for (int a = 0; a < sw->naxes && !rc; a++) {        /* each axis at its first value: KEY=VAL */
        size_t len = strlen(sw->axes[a].key) + strlen(sw->axes[a].vals[0]) + 2;
        if (!(first[a] = malloc(len))) rc = 1;
        else snprintf(first[a], len, "%s=%s", sw->axes[a].key, sw->axes[a].vals[0]);
    }
    for (int v = 0; o->has_split && v < nsplit && !rc; v++) {
        cap_split_t sp;
        if (cap_parse_split(sw->axes[o->split_axis].vals[v], &sp, err, sizeof err) < 0) {
            setup_msg(stderr, "pacesim capacity: %s", err);
            rc = 2;
        }
        pd |= sp.kind != CAP_SPLIT_COLOCATED;
    }
    for (int a = 0; pd && a < sw->naxes && !rc; a++) {   /* the replicas are the split's */
        const char *k = sw->axes[a].key, *t = strrchr(k, '.');
        if (a != o->split_axis && !strncmp(k, "cluster.pools.", 14) && !split_pool_set(k) && t
            && (!strcmp(t, ".count") || !strcmp(t, ".role")) && strchr(k + 14, '.') == t) {
            setup_msg(stderr, "pacesim capacity: --search %s: a %s=N or P:D value sets the pool's replicas and role: "
                      "give the co-located counts as split values (split=1,2,4,1:1,1:2)", k, CAP_SPLIT_KEY);
            rc = 2;
        }
    }
    /* each split value alone (a = -1), then each value of each other axis beside it */
    for (int sv = 0; sv < nsplit && !rc; sv++)
        for (int a = -1; a < sw->naxes && !rc; a++) {
            if ((a >= 0 && o->has_split && a == o->split_axis) || (a < 0 && !o->has_split)) continue;
            for (int v = 0; v < (a < 0 ? 1 : sw->axes[a].n) && !rc; v++) {
                int n = 0;
                for (int i = 0; i < o->nsets; i++) sets[n++] = o->sets[i];
                char *kv = NULL;
                if (a >= 0) {
                    size_t len = strlen(sw->axes[a].key) + strlen(sw->axes[a].vals[v]) + 2;
                    if (!(kv = malloc(len))) { rc = 1; break; }
                    snprintf(kv, len, "%s=%s", sw->axes[a].key, sw->axes[a].vals[v]);
                }
                for (int b = 0; b < sw->naxes; b++)  /* the point's sets in axis order, as config_sets */
                    if (b == a || (!o->has_split && a >= 0)) sets[n++] = b == a ? kv : first[b];
                const char *sval = o->has_split ? sw->axes[o->split_axis].vals[sv] : NULL;
                if (sval) {                 /* the split's rewrite, then its pools' sets */
                    int sr = cap_split_override(o->file, sets, n, sval, &own[0], err, sizeof err);
                    if (sr < 0) {
                        if (sr == -2) rc = 1;
                        else setup_msg(stderr, "pacesim capacity: %s", err), rc = 2;
                        free(kv);
                        break;
                    }
                    if (own[0] && (n = split_order(sets, n, own[0])) < 0) {
                        rc = 1;
                        free(kv);
                        free(own[0]);
                        own[0] = NULL;
                        break;
                    }
                }
                scenario_t s;
                char lerr[SCN_ERR_MAX];
                if (scn_load(o->file, sets, n, &s, lerr) < 0) {
                    const char *m = lerr;
                    if (a >= 0) {
                        size_t kl = strlen(sw->axes[a].key);
                        if (!strncmp(m, "--set ", 6) && !strncmp(m + 6, sw->axes[a].key, kl) && m[6 + kl] == ':') m += 7 + kl;
                    }
                    cap_split_t sp;
                    int pool_key = sval && a >= 0 && split_pool_set(kv) && cap_parse_split(sval, &sp, err, sizeof err) == 0
                                   && sp.kind != CAP_SPLIT_PD;
                    if (sval && a >= 0)
                        setup_msg(stderr, "pacesim capacity: --search %s=%s with %s:%s%s", CAP_SPLIT_KEY, sval, kv, m,
                                  pool_key ? " (the pools prefill and decode are those of a split=P:D)" : "");
                    else if (sval) setup_msg(stderr, "pacesim capacity: --search %s=%s: %s", CAP_SPLIT_KEY, sval, m);
                    else setup_msg(stderr, "pacesim capacity: --search %s:%s", kv, m);
                    rc = 2;
                } else {
                    scn_free(&s);
                }
                free(kv);
                free(own[0]);
                own[0] = NULL;
            }
        }
    for (int a = 0; first && a < sw->naxes; a++) free(first[a]);
    free(first);
    free(own);
    free(sets);
    return rc;
}

int capacity_main(int argc, char **argv, const char *argv0)
{
    const char **sets = calloc((size_t)argc + 1, sizeof *sets);
    const char **extra = calloc((size_t)argc + 1, sizeof *extra);   /* the options `--points` passes on */
    const char *csv = NULL, *outdir = "points", *file = NULL;
    int ns = 0, nx = 0, quiet = 0, progress = isatty(2), points = 0, rc = 0, frontier_csv = 0;
    unsigned seen_once = 0;
    long jobs = sysconf(_SC_NPROCESSORS_ONLN), point_base = 0;
    double target = 0;
    sweep_t sw = { 0 };
    cap_opts_t o = { .tol = 0.02, .warmup = 0.1, .cooldown = 0.1 };
    cap_run_t R = { .o = &o, .err = stderr, .nvar = 1 };
    FILE *fc = NULL;
    char err[SWEEP_ERR_MAX];
    if (!sets || !extra) { rc = 1; goto out; }
    if (jobs < 1) jobs = 1;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        static const char *const valued[] = { "--slo", "--goodput", "--search", "--set", "--gpu-cost", "--rate", "--tol",
                                              "-j", "--jobs", "--csv", "-o", "--out", "--point-index", "--error-bars",
                                              NULL };
        const char *v = NULL, *opt = NULL;
        for (int k = 0; valued[k] && !v; k++) {
            size_t l = strlen(valued[k]);
            if (!strcmp(a, valued[k])) {
                if (i + 1 >= argc) { rc = bad("%s needs a value%s", a, ""); goto out; }
                v = argv[++i], opt = valued[k];
            } else if (!strncmp(a, valued[k], l) && a[l] == '=' && valued[k][1] == '-') {
                v = a + l + 1, opt = valued[k];
            }
        }
        if (!v && !strncmp(a, "-j", 2) && a[2]) v = a + 2, opt = "-j";
        if (v) {
            /* an option of one value given twice: the first would be dropped unsaid */
            static const char *const once[] = { "--goodput", "--tol", "--rate", "-j|--jobs", "--csv", "-o|--out",
                                                "--point-index", "--error-bars", NULL };
            if (setup_opt_twice(&seen_once, once, opt)) { rc = bad("%s given twice%s", opt, ""); goto out; }
            if (!strcmp(opt, "--slo")) {
                if (o.nslo == CAP_MAX_SLO) { rc = bad("at most %s SLOs%s", "8", ""); goto out; }
                if (cap_parse_slo(v, &o.slo[o.nslo], err, sizeof err) < 0) { rc = bad("%s%s", err, ""); goto out; }
                for (int k = 0; k < o.nslo; k++) {     /* one bound a statistic: p99 and p99.0 are one */
                    const cap_slo_t *x = &o.slo[k], *y = &o.slo[o.nslo];
                    if (x->metric == y->metric && x->per_request == y->per_request && x->mean == y->mean
                        && (x->per_request || x->mean || x->q == y->q)) {
                        char m[CAP_ERR_MAX];
                        if (strcmp(x->name, y->name))
                            snprintf(m, sizeof m, "%s is %s, given already (one bound a statistic)", y->name, x->name);
                        else snprintf(m, sizeof m, "%s is given twice", x->name);
                        rc = bad("--slo %s: %s", v, m);
                        goto out;
                    }
                }
                o.nslo++;
                extra[nx++] = "--slo", extra[nx++] = v;
            } else if (!strcmp(opt, "--goodput")) {
                if (parse_share(v, 0, 1, &o.goodput) < 0) { rc = bad("--goodput %s: expected a share in (0, 1], e.g. 0.9%s", v, ""); goto out; }
                extra[nx++] = "--goodput", extra[nx++] = v;
            } else if (!strcmp(opt, "--tol")) {
                if (parse_share(v, 0.001 - 1e-12, 0.5, &o.tol) < 0) { rc = bad("--tol %s: expected a relative tolerance in [0.001, 0.5]%s", v, ""); goto out; }
                extra[nx++] = "--tol", extra[nx++] = v;
            } else if (!strcmp(opt, "--rate")) {
                if (parse_pos(v, &target) < 0 || !(target <= 1e9)) {
                    rc = bad("--rate %s: expected a request rate in (0, 1e9] (req/s)%s", v, "");
                    goto out;
                }
            } else if (!strcmp(opt, "--search")) {
                if (sweep_add(&sw, v, err, sizeof err) < 0) {
                    char *m = err;
                    if (!strncmp(m, "--sweep ", 8)) m += 8;
                    rc = bad("--search %s%s", m, "");
                    goto out;
                }
            } else if (!strcmp(opt, "--set")) {
                if (!strchr(v, '=')) { rc = bad("--set %s: expected key.path=value%s", v, ""); goto out; }
                sets[ns++] = v;
            } else if (!strcmp(opt, "--gpu-cost")) {
                const char *eq = strchr(v, '=');
                double usd;
                /* x GPUs stays finite; from a tenth of a cent an hour, whose req/$ still fits the table */
                if (!eq || eq == v || parse_pos(eq + 1, &usd) < 0 || !(usd <= 1e9) || !(usd >= 1e-3)) {
                    rc = bad("--gpu-cost %s: expected PROFILE=DOLLARS_PER_HOUR (a GPU's price an hour, in [0.001, 1e9]),"
                             " e.g. h200=3.5%s", v, "");
                    goto out;
                }
                if (R.ncost == CAP_MAX_COSTS) { rc = bad("at most %s --gpu-cost%s", "32", ""); goto out; }
                char *name = strndup(v, (size_t)(eq - v));
                if (!name) { rc = 1; goto out; }
                for (int k = 0; k < R.ncost; k++)       /* the first would win unseen */
                    if (!strcasecmp(R.cost_name[k], name)) {
                        rc = bad("--gpu-cost %s: %s is priced twice", v, name);
                        free(name);
                        goto out;
                    }
                R.cost_name[R.ncost] = name;
                R.cost_usd[R.ncost++] = usd;
                extra[nx++] = "--gpu-cost", extra[nx++] = v;
            } else if (!strcmp(opt, "-j") || !strcmp(opt, "--jobs")) {
                if (setup_opt_long("pacesim capacity", opt, v, 1, &jobs) < 0) { rc = 2; goto out; }
                if (jobs > 1024) jobs = 1024;
            } else if (!strcmp(opt, "--point-index")) {
                if (setup_opt_long("pacesim capacity", opt, v, 0, &point_base) < 0) { rc = 2; goto out; }
                R.one_point = 1;
            } else if (!strcmp(opt, "--error-bars")) {
                if (setup_opt_pct("pacesim capacity", v, &o.error_bars) < 0) { rc = 2; goto out; }
                extra[nx++] = "--error-bars", extra[nx++] = v;
            } else if (!strcmp(opt, "--csv")) {
                csv = v;
            } else {
                outdir = v;
            }
        } else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) {
            quiet = 1;
        } else if (!strcmp(a, "--no-progress")) {
            progress = 0;
        } else if (!strcmp(a, "--frontier")) {
            frontier_csv = 1;
        } else if (!strcmp(a, "--probes")) {
            R.log_probes = 1;
        } else if (!strcmp(a, "--points")) {
            points = 1;
        } else if (a[0] == '-' && a[1]) {
            rc = bad("unknown option %s (see pacesim capacity --help)%s", a, "");
            goto out;
        } else if (file) {
            rc = bad("one scenario at a time (%s and %s)", file, a);
            goto out;
        } else {
            file = a;
        }
    }
    if (!file) { rc = bad("no scenario given (see pacesim capacity --help)%s%s", "", ""); goto out; }
    if (sweep_set_clash(sets, ns, &sw, "--search", err, sizeof err)) { rc = bad("%s%s", err, ""); goto out; }
    if (o.nslo == 0 && !frontier_csv) {
        rc = bad("no SLO given: --slo ttft_p99=2 --slo tpot_p99=0.05, for example%s%s", "", "");
        goto out;
    }
    int per_request = 0;
    for (int k = 0; k < o.nslo; k++) per_request |= o.slo[k].per_request;
    if (per_request && o.goodput == 0) {
        rc = bad("--slo %s is a per-request threshold: give --goodput SHARE (the share of requests that must meet it), "
                 "or a statistic such as %s_p99", "ttft/tpot/e2el", "ttft");
        goto out;
    }
    if (o.goodput > 0 && !per_request) {
        rc = bad("--goodput needs per-request thresholds: --slo ttft=2 --slo tpot=0.05 (no _p99)%s%s", "", "");
        goto out;
    }
    if (frontier_csv && target > 0 && o.nslo == 0) {   /* the answer comes with the table */
        rc = bad("--frontier with --rate: give the search's --slo too (the --rate answer is the table's)%s%s", "", "");
        goto out;
    }
    if (frontier_csv) {                         /* --frontier MERGED.csv: no search */
        if (sw.naxes || ns || points || R.ncost || R.log_probes) {
            rc = bad("--frontier reads a capacity CSV: it takes --slo, --goodput, --tol, --rate, --csv and --quiet, not "
                     "the search's %s%s", "--search, --set, --gpu-cost, --points or --probes", "");
            goto out;
        }
        if (o.error_bars > 0) {
            rc = bad("--frontier reads a capacity CSV: --error-bars is the search's (the table shows the ranges of a CSV "
                     "that has its columns, rate_per_s_lo and rate_per_s_hi)%s%s", "", "");
            goto out;
        }
        if (csv && outfile_same(csv, file)) { rc = bad("--csv %s: %s", csv, "that is the CSV --frontier reads"); goto out; }
        FILE *fo = csv ? outfile_open(csv) : stdout;
        if (!fo) { rc = 2; goto out; }
        o.file = file;
        rc = merged_frontier(file, fo, quiet ? NULL : fo == stdout ? stderr : stdout, &o, target);
        if (fo != stdout && fclose(fo) != 0 && rc == 0) rc = 1;
        goto out;
    }
    o.file = file;
    o.sets = sets;
    o.nsets = ns;
    o.search = &sw;
    for (int a = 0; a < sw.naxes; a++)
        if (!strcmp(sw.axes[a].key, CAP_SPLIT_KEY)) o.has_split = 1, o.split_axis = a;
    if (sw.naxes > 64) { rc = bad("at most 64 --search keys%s%s", "", ""); goto out; }
    for (int a = 0; a < sw.naxes; a++)     /* every probe sets it: the searched values would be lost */
        if (!strcmp(sw.axes[a].key, "workload.poisson.rate_per_s")) {
            rc = bad("--search %s: the request rate is what capacity finds (each probe sets it)%s", sw.axes[a].key,
                     "; search the deployment's keys");
            goto out;
        }
    R.npoints = sweep_npoints(&sw);
    if (R.npoints > CAP_MAX_CONFIGS) {
        rc = bad("%s configurations at most in one run (use --points to spread a larger search)%s", "1000000", "");
        goto out;
    }
    if (point_base > LONG_MAX - R.npoints) { rc = bad("--point-index: too large%s%s", "", ""); goto out; }
    if ((rc = check_dups(&o)) || (rc = check_axes(&o))) goto out;
    {   /* the scenario itself, as the first configuration assembles it */
        int crc;
        char cerr[CAP_ERR_MAX];
        const char **s0 = calloc((size_t)ns + (size_t)sw.naxes + 1, sizeof *s0);
        char **own = calloc((size_t)sw.naxes + 1, sizeof *own);
        int sel0[64] = { 0 };
        int n0 = s0 && own ? config_sets(&o, sets, ns, sel0, s0, own, cerr, sizeof cerr) : -2;
        cap_conf_t *c = n0 < 0 ? NULL : cap_conf_open(&o, s0, n0, &crc, cerr, sizeof cerr);
        for (int a = 0; own && a <= sw.naxes; a++) free(own[a]);
        free(own);
        free(s0);
        if (!c) {
            if (n0 == -1) crc = 2;
            else if (n0 < 0) crc = 1, snprintf(cerr, sizeof cerr, "out of memory");
            setup_msg(stderr, "%s", cerr);
            rc = crc;
            goto out;
        }
        if (price_twice(&R, cap_conf_hw(c), cap_conf_gpu(c), cerr, sizeof cerr)) {
            setup_msg(stderr, "%s", cerr);
            cap_conf_close(c);
            rc = 2;
            goto out;
        }
        cap_conf_close(c);
    }
    if (points) {
        const char *files[1] = { file };
        rc = sweep_print_points_ex(stdout, stderr, argv0, "capacity", "--search", files, 1, sets, ns, extra, nx, &sw, outdir);
        goto out;
    }
    if (csv && outfile_same(csv, file)) {
        rc = bad("--csv %s: %s", csv, "that is the scenario (it would be overwritten)");
        goto out;
    }
    if (csv) {                                  /* nor a file it reads: the probes found the profile emptied */
        scenario_t sc;
        char serr[SCN_ERR_MAX];
        if (scn_load(file, sets, ns, &sc, serr) == 0) {
            const char *in[3 + SCN_MAX_POOLS] = { sc.model_path, sc.profile_path, sc.trace_path };
            int nin = 3, same = 0;
            for (int k = 0; k < sc.cluster.n_pools; k++)
                if (sc.cluster.pools[k].s) in[nin++] = sc.cluster.pools[k].s->model_path;
            for (int k = 0; k < nin; k++) same |= in[k][0] && outfile_same(csv, in[k]);
            scn_free(&sc);
            if (same) {
                rc = bad("--csv %s: %s", csv, "that is a file the scenario reads (it would be overwritten)");
                goto out;
            }
        }
    }
    if (csv && !(fc = outfile_open(csv))) {
        rc = 2;
        goto out;
    }
    R.sets = sets;
    R.nsets = ns;
    R.point_base = point_base;
    R.nvar = o.error_bars > 0 ? 3 : 1;
    R.rows = calloc((size_t)R.npoints, sizeof *R.rows);
    sweep_pool_t pc = { .njobs = R.npoints * R.nvar, .threads = (int)jobs, .progress = progress, .run = cap_job, .emit = cap_emit,
                        .ctx = &R };
    if (!R.rows || sweep_pool(&pc) < 0) {
        fprintf(stderr, "pacesim capacity: out of memory\n");
        rc = 1;
        goto out;
    }
    for (int i = 0; i < R.ncost; i++) {         /* a price given for no configuration's hardware */
        int used = 0;
        for (long p = 0; p < R.npoints && !used; p++)
            used = !strcasecmp(R.cost_name[i], R.rows[p].hw) || !strcasecmp(R.cost_name[i], R.rows[p].gpu);
        if (!used) setup_msg(stderr, "warning: --gpu-cost %s: no configuration runs on it (profile file names: %s)",
                             R.cost_name[i], R.npoints ? R.rows[0].hw : "");
    }
    if (run_outputs(&R, quiet ? NULL : fc == stdout ? stderr : stdout, fc, target)) {
        fprintf(stderr, "pacesim capacity: out of memory\n");
        rc = 1;
        goto out;
    }
    rc = R.rc;
out:
    if (fc && fc != stdout) {
        if (fclose(fc) != 0 && rc == 0) {
            setup_msg(stderr, "pacesim capacity: %s: write error", csv);
            rc = 1;
        }
    } else if (fc) {
        fflush(fc);
    }
    for (long p = 0; R.rows && p < R.npoints; p++) {
        free(R.rows[p].err);
        free(R.rows[p].warn);
        free(R.rows[p].log);
        for (int v = 0; v < 2; v++) free(R.rows[p].eb_err[v]), free(R.rows[p].eb_log[v]);
    }
    free(R.rows);
    for (int i = 0; i < R.nwarned; i++) free(R.warned[i]);
    free(R.warned);
    for (int i = 0; i < R.ncost; i++) free((char *)R.cost_name[i]);
    sweep_free(&sw);
    free(sets);
    free(extra);
    return rc;
}
