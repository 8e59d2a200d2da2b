/* rescore.c: a GPU replay recorded several times, priced again (pacesim rescore FILE
 * --measured RUN1.csv --measured RUN2.csv ...): the model's error beside the spread between
 * the measured runs -- the GPU's own run-to-run noise -- and how far each window moves when
 * every step costs 1% more (the queue's amplification of a step error). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include "cost_scaled.h"
#include "engine.h"
#include "replay.h"
#include "rescore.h"
#include "setup.h"
#include "sweep.h"

/* ---- the figures, from the runs' records and windows (no engine: tested on their own) ---- */

void rescore_type_figs(const replay_stats_t *st, int nruns, rescore_type_t *o)
{
    memset(o, 0, sizeof *o);
    double qmin = INFINITY, qmax = -INFINITY, qsum = 0, esum = 0, msum = 0;
    int used = 0;
    for (int r = 0; r < nruns; r++) {
        if (!st[r].n || !(st[r].predicted > 0) || !(st[r].measured > 0)) continue;
        double q = st[r].measured / st[r].predicted;   /* measured relative to the same steps' price */
        qmin = fmin(qmin, q), qmax = fmax(qmax, q), qsum += q;
        esum += st[r].predicted / st[r].measured - 1;
        msum += st[r].median;
        o->steps += st[r].n;
        o->max = fmax(o->max, st[r].max);
        used++;
    }
    o->runs = used;
    if (!used) return;
    o->steps /= used;
    o->median = msum / used;
    o->sum_err = esum / used;
    o->ratio = qsum / used;
    o->spread = (qmax - qmin) / o->ratio;
    /* the prediction (q = 1) against the measured runs' range of q */
    double mean = qsum / used;
    o->excess = 1 < qmin ? (qmin - 1) / mean : 1 > qmax ? (qmax - 1) / mean : 0;
    o->excess = o->excess ? -o->excess : 0;   /* signed as the error: + the prediction above the runs (0: inside, not -0) */
}

void rescore_window_figs(double pred, const double *meas, int nruns, double pred_1pct, rescore_window_t *o)
{
    memset(o, 0, sizeof *o);
    o->pred = pred;
    double lo = INFINITY, hi = -INFINITY, sum = 0;
    int used = 0;
    for (int r = 0; r < nruns; r++) {
        if (isnan(meas[r])) continue;
        lo = fmin(lo, meas[r]), hi = fmax(hi, meas[r]), sum += meas[r];
        used++;
    }
    o->runs = used;
    o->mean = used ? sum / used : NAN;
    o->lo = used ? lo : NAN;
    o->hi = used ? hi : NAN;
    o->defined = used == nruns && !isnan(pred) && o->mean != 0;
    if (!o->defined) return;
    o->err = pred / o->mean - 1;
    o->spread = (hi - lo) / fabs(o->mean);
    o->excess = pred > hi ? (pred - hi) / fabs(o->mean) : pred < lo ? (pred - lo) / fabs(o->mean) : 0;
    o->sens = isnan(pred_1pct) || pred == 0 ? NAN : pred_1pct / pred - 1;
}

double rescore_band_gap(double a, double b, const rescore_window_t *w)
{
    if (!w->defined || isnan(a) || isnan(b)) return NAN;
    double lo = fmin(a, b), hi = fmax(a, b);
    if (lo > w->hi) return (lo - w->hi) / fabs(w->mean);
    if (hi < w->lo) return (hi - w->lo) / fabs(w->mean);
    return 0;
}

double rescore_median(double *v, int n)
{
    if (n < 1) return NAN;
    for (int i = 0; i < n; i++)
        if (isnan(v[i])) return NAN;
    gsl_sort(v, 1, (size_t)n);
    return gsl_stats_median_from_sorted_data(v, 1, (size_t)n);
}

void rescore_noise(const replay_rec_t *const *rec, const long *n, int nruns, rescore_noise_t *o)
{
    memset(o, 0, sizeof *o);
    double lr[RESCORE_MAX_RUNS], mean = 0, var = 0, ss = 0;
    int used = 0;
    long dof = 0;
    for (int r = 0; r < nruns && r < RESCORE_MAX_RUNS; r++) {
        double p = 0, m = 0;
        for (long i = 0; i < n[r]; i++) p += rec[r][i].predicted, m += rec[r][i].measured;
        if (p > 0 && m > 0) lr[used++] = log(m / p);
    }
    for (int r = 0; r < used; r++) mean += lr[r] / used;
    for (int r = 0; r < used; r++) var += (lr[r] - mean) * (lr[r] - mean);
    o->run = used > 1 ? sqrt(var / (used - 1)) : 0;
    for (int r = 1; r < nruns && r < RESCORE_MAX_RUNS; r++) {
        long k = 0;
        double sum = 0, sq = 0;
        for (; k < n[0] && k < n[r]; k++) {
            const replay_rec_t *a = &rec[0][k], *b = &rec[r][k];
            if (!a->shape || a->shape != b->shape || !(a->measured > 0) || !(b->measured > 0)) break;
            double d = log(b->measured / a->measured);
            sum += d, sq += d * d;
        }
        if (k < 2) continue;
        ss += sq - sum * sum / k;                /* about this pair's own mean (its runs' offset) */
        dof += k - 1, o->paired += k;
    }
    o->step = o->paired >= RESCORE_MIN_PAIRED && dof > 0 ? sqrt(fmax(ss, 0) / dof / 2) : 0;
}

void rescore_attn_figs(const replay_stats_t *st, int nruns, rescore_attn_t *o)
{
    memset(o, 0, sizeof *o);
    for (int r = 0; r < nruns; r++) {
        double pa = st[r].pred_attn, ma = st[r].meas_attn, p = st[r].predicted, m = st[r].measured;
        if (!(ma > 0) || !(m > ma) || !(pa > 0) || !(p > pa)) continue;
        o->attn_err += pa / ma - 1;
        o->rest_err += (p - pa) / (m - ma) - 1;
        o->share += ma / m;
        o->runs++;
    }
    if (o->runs) o->attn_err /= o->runs, o->rest_err /= o->runs, o->share /= o->runs;
}

void rescore_slope_band(double q, double *qlo, double *qhi)
{
    double d = fmin(RESCORE_BAND, (1 - q) / 2);
    *qlo = q - d;
    *qhi = q + d;
}

void rescore_slope_figs(double q, double v, double lo, double hi, long n, rescore_slope_t *o)
{
    memset(o, 0, sizeof *o);
    rescore_slope_band(q, &o->qlo, &o->qhi);
    o->v = v, o->lo = lo, o->hi = hi;
    int ok = n >= 2 && v > 0 && !isnan(lo) && !isnan(hi);
    o->down = ok ? lo / v - 1 : NAN;
    o->up = ok ? hi / v - 1 : NAN;
    o->per_value = ok ? (hi - lo) / ((o->qhi - o->qlo) * (double)(n - 1)) / v : NAN;
    o->steep = ok && o->per_value >= RESCORE_STEEP;
}

/* ---- the report -------------------------------------------------------------------------- */

static void pct(FILE *f, int width, double x)
{
    if (isnan(x)) fprintf(f, " %*s", width, "n/a");
    else fprintf(f, " %+*.1f%%", width - 1, 100 * x);
}

/* The prediction's idle before its step k: the mean of the runs' recorded gap_s at step k over
 * the runs that have a step k (the runs' steps match the prediction's in count within ~1%).  A
 * malloc'd array of the longest run's length (*n), or NULL (out of memory). */
static double *mean_gaps(const double *const *gap, const long *ng, int nruns, long *n)
{
    long len = 0;
    for (int r = 0; r < nruns; r++) len = ng[r] > len ? ng[r] : len;
    double *m = malloc((size_t)(len ? len : 1) * sizeof *m);
    if (!m) return NULL;
    for (long k = 0; k < len; k++) {
        double s = 0;
        int c = 0;
        for (int r = 0; r < nruns; r++)
            if (k < ng[r]) s += gap[r][k], c++;
        m[k] = s / c;
    }
    *n = len;
    return m;
}

/* The settings on one model: its steps at the clocks clk (recorded_clock, a diagnostic; stamps:
 * the step stamps', priced in their meter where the profile has it, cost_profile_clock_units),
 * and its GEMMs by calib's compute-bound probe (compute_hot: at those clocks, or at the model's
 * own).  1 where the stamps' meter is used. */
static int diagnose(cost_model_t *cm, const double *clk, long nclk, int recorded_clock, int stamps, int compute_hot)
{
    if (recorded_clock) cost_profile_clock_schedule(cm, clk, nclk);
    cost_profile_compute_hot(cm, !compute_hot ? 0 : recorded_clock ? 1 : 2);
    return cost_profile_clock_units(cm, recorded_clock && stamps);
}

/* A model of the prediction's (inner, unwrapped) priced as the prediction is: the recorded
 * clocks or the model's (diagnose), the recorded idle, no envelope warnings. */
static void as_prediction(cost_model_t *inner, const double *clk, long nclk, int recorded_clock, int stamps, int probe,
                          int recorded_idle, const double *gm, long ngm)
{
    diagnose(inner, clk, nclk, recorded_clock, stamps, probe);
    if (recorded_idle) cost_profile_idle_schedule(inner, gm, ngm);
    cost_profile_envelope_quiet(inner);
}

/* The prediction again with each step type's steps at k[type] times their price
 * (cost_scaled_types_new), priced as the prediction is (diagnose, the recorded idle), run on its
 * own engine *e (*started set once it needs engine_free).  0, or -1 with err (what names the run). */
static int run_scaled(const setup_t *u, const double k[4], const double *clk, long nclk, int recorded_clock, int stamps,
                      int probe, int recorded_idle, const double *gm, long ngm, cost_model_t **cm, engine_t *e, int *started,
                      const char *what, char *err, size_t errsz)
{
    char ce[SETUP_ERR_MAX];
    cost_model_t *inner = setup_cost_new_err(u, ce);
    if (!inner || !(*cm = cost_scaled_types_new(inner, k))) {
        cost_free(inner);
        snprintf(err, errsz, "%s", inner ? "out of memory" : ce);
        return -1;
    }
    as_prediction(inner, clk, nclk, recorded_clock, stamps, probe, recorded_idle, gm, ngm);
    *started = 1;
    if (setup_engine(u, *cm, e) < 0 || engine_run(e) < 0) {
        snprintf(err, errsz, "%s: %s", what, e->err);
        return -1;
    }
    return 0;
}

/* One member of the noise ensemble (rescore_noise_t): the prediction with every step at k x
 * exp(sigma z) its price (cost_noisy_new, seed), priced as the prediction is; its windows into
 * w[0 .. n_windows).  0, or -1 with err (the run failed). */
static int run_member(const setup_t *u, double k, double sigma, uint64_t seed, const double *clk, long nclk,
                      int recorded_clock, int stamps, int probe, int recorded_idle, const double *gm, long ngm,
                      double *w, char *err, size_t errsz)
{
    char ce[SETUP_ERR_MAX];
    cost_model_t *inner = setup_cost_new_err(u, ce), *cm = inner ? cost_noisy_new(inner, k, sigma, seed) : NULL;
    engine_t e;
    int rc = -1;
    memset(&e, 0, sizeof e);
    if (!cm) {
        cost_free(inner);
        snprintf(err, errsz, "%s", inner ? "out of memory" : ce);
        return -1;
    }
    as_prediction(inner, clk, nclk, recorded_clock, stamps, probe, recorded_idle, gm, ngm);
    if (setup_engine(u, cm, &e) < 0 || engine_run(&e) < 0)
        snprintf(err, errsz, "the noise ensemble's run: %s", e.err);
    else {
        for (int i = 0; i < u->s.n_windows; i++) w[i] = engine_window(&e, i);
        rc = 0;
    }
    engine_free(&e);
    cost_free(cm);
    return rc;
}

/* Whether u's profile stores a range of calib's traces for a priced time constant of the clock
 * (sustained.tau_up_runs_range_s, tau_down_range_s): calib's band. */
static int has_calib_band(const setup_t *u)
{
    const profile_t *p = &u->prof;
    return u->has_prof && p->has_sustained && (p->tau_up_runs_range_s[1] > 0 || p->tau_down_range_s[1] > 0);
}

/* calib's band (has_calib_band): the profile's priced time constants at one end of their range,
 * hot = the fastest fall and the slowest recovery (the card heats most), else the reverse; one
 * run without noise, priced as the prediction is at the model's own clock (the band varies the
 * heat state, which recorded clocks replace), its windows into w.  0, or -1 with err. */
static int run_calib_end(const setup_t *u, int hot, int probe, int recorded_idle, const double *gm, long ngm, double *w,
                         char *err, size_t errsz)
{
    const profile_t *p = &u->prof;
    setup_t *v = malloc(sizeof *v);   /* a shallow copy: only its own profile's two keys differ */
    if (!v) {
        snprintf(err, errsz, "out of memory");
        return -1;
    }
    *v = *u;
    if (p->tau_up_runs_range_s[1] > 0) v->prof.tau_up_runs_s = p->tau_up_runs_range_s[hot ? 0 : 1];
    if (p->tau_down_range_s[1] > 0) v->prof.tau_down_s = p->tau_down_range_s[hot ? 1 : 0];
    int rc = run_member(v, 1, 0, 0, NULL, 0, 0, 0, probe, recorded_idle, gm, ngm, w, err, errsz);
    free(v);
    return rc;
}

/* The noise ensemble's runs as a sweep_pool's jobs: job j < RESCORE_MEMBERS is member j at
 * its run factor kf[j], job RESCORE_MEMBERS + j the same member at (1 + RESCORE_SENS) more a
 * step (the same draws); each writes its own windows and error, so any order of the jobs
 * gives the same figures. */
typedef struct ens_ctx {
    const setup_t *u;
    const double *kf;             /* each member's run factor */
    double sigma;                 /* the step noise */
    uint64_t seed;                /* member k's step draws: seed + k */
    const double *clk, *gm;
    long nclk, ngm;
    int recorded_clock, stamps, probe, recorded_idle, nw;
    double *w;                    /* job j's windows at [j nw] */
    int *rc;                      /* job j's run_member result */
    char (*err)[SETUP_ERR_MAX];   /* job j's error */
} ens_ctx_t;

static void ens_job(void *ctx, long j, void *prog)
{
    (void)prog;
    ens_ctx_t *c = ctx;
    int k = (int)(j % RESCORE_MEMBERS);
    double f = c->kf[k] * (j < RESCORE_MEMBERS ? 1 : 1 + RESCORE_SENS);
    c->rc[j] = run_member(c->u, f, c->sigma, c->seed + (uint64_t)k, c->clk, c->nclk, c->recorded_clock, c->stamps,
                          c->probe, c->recorded_idle, c->gm, c->ngm, c->w + (size_t)j * c->nw, c->err[j],
                          sizeof c->err[j]);
}

static void ens_emit(void *ctx, long j) { (void)ctx, (void)j; }

int rescore_probe(const setup_t *u, int compute_hot, int recorded_idle, int idle_off, long layered, long steps,
                  FILE *out)
{
    if (compute_hot >= 0 || !u->prof.has_chot) return compute_hot > 0;
    if (2 * layered > steps) {          /* most steps in the engine's order */
        if (out)
            fprintf(out, "   calib's compute-bound GEMM probe not priced: the runs queued their steps layer by layer, where"
                         " a GEMM does not run every layer in a row (--compute-hot: priced anyway)\n");
        return 0;
    }
    if (recorded_idle) {
        if (out)
            fprintf(out, "   GEMMs by calib's compute-bound probe at the model's clock: the idle before each step is"
                         " recorded (--no-compute-hot: not)\n");
        return 1;
    }
    if (out)
        fprintf(out, "   calib's compute-bound GEMM probe not priced: %s, so the clock it would price at is unknown"
                     " (--compute-hot: priced anyway)\n",
                idle_off ? "the recorded idle is off (--no-recorded-idle)"
                         : "the runs do not record the GPU's idle before each step (gap_s)");
    return 0;
}

int rescore_runs(FILE *out, setup_t *u, const char *file, const char *const *measured, int nruns, int recorded_clock,
                 int compute_hot, int recorded_idle, int jobs, char *err, size_t errsz)
{
    cost_model_t *pm[RESCORE_MAX_RUNS] = { 0 }, *rm[RESCORE_MAX_RUNS] = { 0 }, *tm = NULL;
    const double *gap[RESCORE_MAX_RUNS], *clk[RESCORE_MAX_RUNS];
    long nclk[RESCORE_MAX_RUNS];
    long ng[RESCORE_MAX_RUNS], ngm = 0;
    double *gm = NULL;
    engine_t eg[RESCORE_MAX_RUNS], et;
    int rc = -1, started = 0, et_started = 0, step_clock = 1, nw = 0, lo_runs = 0;
    long lo_layered = 0, lo_steps = 0;       /* over the runs recorded with --layer-order */
    double *ens = NULL;           /* the ensemble's windows: member k's at [k nw], at +1% at [(MEMBERS + k) nw] */
    memset(eg, 0, sizeof eg);
    memset(&et, 0, sizeof et);
    if (nruns < 2 || nruns > RESCORE_MAX_RUNS) {
        snprintf(err, errsz, "rescore: 2 to %d measured runs", RESCORE_MAX_RUNS);
        return -2;
    }
    for (int r = 0; r < nruns; r++) {
        char cerr[COST_ERR_MAX];
        if (!(pm[r] = setup_cost_new(u))) {
            snprintf(err, errsz, "%s", u->err);
            rc = -2;
            goto done;
        }
        if (!(rm[r] = replay_recorded_new(measured[r], pm[r], cerr))) {
            snprintf(err, errsz, "%s", cerr);
            rc = -2;
            goto done;
        }
        for (int q = 0; q < r; q++)
            if (replay_recorded_same(rm[r], rm[q])) {   /* byte for byte the same is refused before */
                snprintf(err, errsz, "%s:1:1: measured_s: every step's time as in --measured %s: one run given twice "
                         "(the runs' spread would be 0)", measured[r], measured[q]);
                rc = -2;
                goto done;
            }
        cost_profile_envelope_quiet(pm[r]);   /* the profile run warns; the recorded runs are measured */
        ng[r] = replay_recorded_gaps(rm[r], &gap[r]);
        if (!ng[r]) recorded_idle = 0;       /* every run records its idle, or none is used */
        step_clock = step_clock && replay_recorded_has_step_clock(rm[r]);
        long la, st;
        if (replay_recorded_layer_order(rm[r], &la, &st)) {
            lo_runs++;
            lo_layered += la;
            lo_steps += st;
        }
    }
    /* --recorded-clock: each step at the SM clock its run recorded over the step itself
     * (sm_mhz_step, pacesim-gpu replay --step-clock) where every run has it, else NVML's;
     * recorded_clock 2 (--nvml-clock): NVML's always */
    step_clock = step_clock && recorded_clock == 1;
    for (int r = 0; r < nruns; r++) {
        const double *mc_;                    /* each recorded step at its own run's clock */
        if (step_clock) replay_recorded_use_step_clock(rm[r]);
        clk[r] = NULL;
        nclk[r] = recorded_clock ? replay_recorded_clocks(rm[r], &clk[r], &mc_) : 0;
        long known = 0;                       /* steps whose clock the run recorded */
        for (long k = 0; k < nclk[r]; k++) known += !isnan(clk[r][k]);
        if (recorded_clock && !known) {       /* it would be priced at the model's clock, unsaid */
            snprintf(err, errsz, "%s:1:1: %s: no step's SM clock recorded (no such column, or no value in "
                     "[1, 1e5] MHz): --recorded-clock prices each step at its run's clock", measured[r],
                     step_clock ? "sm_mhz_step" : "sm_clock_mhz");
            rc = -2;
            goto done;
        }
    }
    /* calib's compute-bound GEMM probe: priced where the idle before each step is recorded and
     * the runs ran in item order (rescore_probe) */
    int idle_off = !recorded_idle;
    for (int r = 0; r < nruns && idle_off; r++) idle_off = ng[r] > 0;   /* recorded, but switched off */
    /* the steps layer by layer, where every run recorded --layer-order's column */
    long layered = lo_runs == nruns ? lo_layered : 0;
    int probe = rescore_probe(u, compute_hot, recorded_idle, idle_off, layered, lo_steps, NULL);
    for (int r = 0; r < nruns; r++) diagnose(pm[r], clk[r], nclk[r], recorded_clock, step_clock, probe);
    /* the GPU idle each run recorded before each step (a back-to-back replay's gap_s): the
     * heat state relaxes over it, each run's steps after their own, the prediction's after
     * the runs' mean */
    if (recorded_idle) {
        if (!(gm = mean_gaps(gap, ng, nruns, &ngm))) {
            snprintf(err, errsz, "out of memory");
            goto done;
        }
        for (int r = 0; r < nruns; r++) cost_profile_idle_schedule(pm[r], gap[r], ng[r]);
        cost_profile_idle_schedule(u->cost, gm, ngm);
    }
    /* the prediction's steps: step k at run 1's k-th clock (the runs' steps match the
     * prediction's in count within ~1%, not one by one: an approximation for the windows) */
    const double *clk1 = NULL, *mclk1;
    long nclk1 = recorded_clock ? replay_recorded_clocks(rm[0], &clk1, &mclk1) : 0;
    int units = diagnose(u->cost, clk1, nclk1, recorded_clock, step_clock, probe);
    /* the prediction without noise (the ensemble's members carry the +1% column) */
    if (engine_run(&u->e) < 0) {
        snprintf(err, errsz, "%s", u->e.err);
        goto done;
    }
    long n[RESCORE_MAX_RUNS];
    const replay_rec_t *rec[RESCORE_MAX_RUNS];
    for (int r = 0; r < nruns; r++) {
        started = r + 1;
        int ran = setup_engine(u, rm[r], &eg[r]) == 0 && engine_run(&eg[r]) == 0;
        char mis[SETUP_ERR_MAX];
        if (replay_recorded_mismatch(rm[r], ran, mis, sizeof mis)) {   /* a recording of another scenario */
            snprintf(err, errsz, "%s", mis);
            rc = -2;
            goto done;
        }
        if (!ran) {
            snprintf(err, errsz, "%s: %s", measured[r], eg[r].err);
            goto done;
        }
        long nrec;
        rec[r] = replay_recorded_records(rm[r], &n[r], &nrec);
    }
    /* the prediction at the runs' time per step type: each type's steps x the runs' mean of
     * its summed measured over summed predicted (a type the runs lack: as priced) */
    double kt[4] = { 1, 1, 1, 1 };
    rescore_type_t tf[4];         /* per step type (STEP_ANY unused), the table below too */
    replay_stats_t st[4][RESCORE_MAX_RUNS];
    for (int ty = STEP_DECODE_ONLY; ty <= STEP_PREFILL_ONLY; ty++) {
        for (int r = 0; r < nruns; r++)
            if (replay_stats(rec[r], n[r], ty, &st[ty][r]) < 0) {
                snprintf(err, errsz, "out of memory");
                goto done;
            }
        rescore_type_figs(st[ty], nruns, &tf[ty]);
        if (tf[ty].runs) kt[ty] = tf[ty].ratio;
    }
    if (run_scaled(u, kt, clk1, nclk1, recorded_clock, step_clock, probe, recorded_idle, gm, ngm, &tm, &et, &et_started,
                   "prediction at the runs' time per step type", err, errsz) < 0)
        goto done;
    /* the noise ensemble: RESCORE_MEMBERS runs of the model at the runs' own noise, and each
     * again at RESCORE_SENS more a step (the same draws) */
    rescore_noise_t nz;
    rescore_noise(rec, n, nruns, &nz);
    nw = u->s.n_windows;
    if (!(ens = malloc(2 * (size_t)RESCORE_MEMBERS * (nw ? nw : 1) * sizeof *ens))) {
        snprintf(err, errsz, "out of memory");
        goto done;
    }
    {
        /* members k and k + MEMBERS / 2 take opposite run factors (their median is the model's own
         * where a window is proportional to the step times), drawn from a stream seeded from the
         * scenario's seed; each member its own step draws */
        enum { NJ = 2 * RESCORE_MEMBERS };
        double kf[RESCORE_MEMBERS];
        int jrc[NJ];
        char (*jerr)[SETUP_ERR_MAX] = calloc(NJ, sizeof *jerr);
        gsl_rng *zr = gsl_rng_alloc(gsl_rng_mt19937);
        if (!jerr || !zr) {
            free(jerr);
            if (zr) gsl_rng_free(zr);
            snprintf(err, errsz, "out of memory");
            goto done;
        }
        gsl_rng_set(zr, (unsigned long)(u->s.seed * 2 + 5));
        for (int k = 0; k < RESCORE_MEMBERS / 2; k++) {
            double z = gsl_ran_gaussian(zr, 1);
            kf[k] = exp(nz.run * z), kf[k + RESCORE_MEMBERS / 2] = exp(-nz.run * z);
        }
        gsl_rng_free(zr);
        ens_ctx_t c = { .u = u, .kf = kf, .sigma = nz.step, .seed = (uint64_t)u->s.seed * 0xbf58476d1ce4e5b9ull + 1,
                        .clk = clk1, .nclk = nclk1, .gm = gm, .ngm = ngm, .recorded_clock = recorded_clock,
                        .stamps = step_clock, .probe = probe, .recorded_idle = recorded_idle, .nw = nw, .w = ens,
                        .rc = jrc, .err = jerr };
        sweep_pool_t pc = { .njobs = NJ, .threads = jobs, .run = ens_job, .emit = ens_emit, .ctx = &c };
        int failed = sweep_pool(&pc) < 0 ? -1 : 0;
        if (failed) snprintf(err, errsz, "out of memory");
        for (int j = 0; !failed && j < NJ; j++)
            if (jrc[j] < 0) snprintf(err, errsz, "%s", jerr[j]), failed = 1;
        free(jerr);
        if (failed) goto done;
    }
    char meter[200] = "";
    if (step_clock && units)
        snprintf(meter, sizeof meter, "; the clock each run stamped over the step itself (sm_mhz_step), not NVML's, "
                 "against calib's clocks by the same counters (%.0f MHz light load, %.0f heater)", u->prof.stamp_cold_mhz,
                 u->prof.stamp_hot_mhz);
    else if (step_clock)
        snprintf(meter, sizeof meter, "; the clock each run stamped over the step itself (sm_mhz_step), not NVML's, "
                 "against NVML's light-load and heater clocks (the profile has no stamped pair)");
    fprintf(out, "== rescore %s  (%s, profile %s): %d measured runs%s%s\n", u->s.name, file, u->prof.gpu, nruns,
            recorded_clock && probe ? ", every step priced at its recorded SM clock, compute-bound GEMMs by calib's probe (a diagnostic)"
            : compute_hot > 0 ? ", compute-bound GEMMs by calib's probe at the model's clock (a diagnostic)"
            : recorded_clock ? ", every step priced at its recorded SM clock (a diagnostic)" : "",
            meter);
    /* how the runs queued each step (a line only where a run says: --layer-order's column) */
    if (lo_runs == nruns)
        fprintf(out, "   the runs queued each step's items layer by layer, as a forward pass runs them (--layer-order):"
                " %ld of %ld steps (the rest in item order: items in some layers only)\n", lo_layered, lo_steps);
    else if (lo_runs)
        fprintf(out, "   runs of two queue orders: %d layer by layer (--layer-order), %d each item's layers together:"
                " their spread is not the GPU's alone\n", lo_runs, nruns - lo_runs);
    if (recorded_idle) {
        double gs = 0;
        for (long k = 0; k < ngm; k++) gs += gm[k];
        fprintf(out, "   the heat state relaxes over the GPU idle each run recorded before each step (gap_s): %.2f ms a step"
                " (the runs' mean)\n", ngm ? 1e3 * gs / ngm : 0);
    }
    if (compute_hot < 0) rescore_probe(u, compute_hot, recorded_idle, idle_off, layered, lo_steps, out);   /* the default's line */
    fprintf(out, "   %-10s %6s %10s %9s %9s %9s %7s  %s\n", "step type", "steps", "median err", "sum err", "spread",
            "verdict", "beyond", "(run medians)");
    for (int ty = STEP_DECODE_ONLY; ty <= STEP_PREFILL_ONLY; ty++) {
        const rescore_type_t t = tf[ty];
        if (!t.runs) continue;
        fprintf(out, "   %-10s %6ld %9.1f%%", engine_step_type_name(ty), t.steps, 100 * t.median);
        pct(out, 9, t.sum_err);
        fprintf(out, " %8.1f%% %9s", 100 * t.spread, t.excess == 0 ? "inside" : "miss");
        pct(out, 7, t.excess);
        fprintf(out, "  (");
        for (int r = 0; r < nruns; r++) fprintf(out, "%s%.1f%%", r ? " " : "", 100 * st[ty][r].median);
        fprintf(out, ")\n");
    }
    /* each type's attention apart from the rest of its steps: which items a type's error is in */
    for (int ty = STEP_DECODE_ONLY, head = 0; ty <= STEP_PREFILL_ONLY; ty++) {
        rescore_attn_t a;
        rescore_attn_figs(st[ty], nruns, &a);
        if (a.runs < nruns) continue;
        if (!head++)
            fprintf(out, "   %-17s %7s %12s %12s  (summed, the runs' mean: the steps' attention items apart "
                    "from the rest of the step)\n", "attention", "share", "attn err", "rest err");
        fprintf(out, "   attention %-7s %7.0f%%", engine_step_type_name(ty), 100 * a.share);
        pct(out, 12, a.attn_err);
        pct(out, 12, a.rest_err);
        fprintf(out, "\n");
    }
    if (recorded_clock || compute_hot > 0) {   /* the diagnostics' table */
        fprintf(out, "   %-10s %6s %13s %13s %13s  %s\n", "clock", "steps", "model MHz", "recorded MHz", "model-rec",
                "(per run: model / recorded, the steps' means)");
        for (int ty = STEP_DECODE_ONLY; ty <= STEP_PREFILL_ONLY; ty++) {
            double ms = 0, rs = 0, ad = 0;
            long cnt = 0;
            char per[512] = "";
            size_t pl = 0;
            for (int r = 0; r < nruns; r++) {
                const double *rc_, *mc_;
                replay_recorded_clocks(rm[r], &rc_, &mc_);
                double m1 = 0, r1 = 0;
                long c1 = 0;
                for (long i = 0; i < n[r]; i++)
                    if (rec[r][i].type == ty && mc_[i] > 0 && rc_[i] > 0)
                        m1 += mc_[i], r1 += rc_[i], ad += fabs(mc_[i] - rc_[i]), c1++;
                ms += m1, rs += r1, cnt += c1;
                if (c1 && pl < sizeof per - 40)
                    pl += (size_t)snprintf(per + pl, sizeof per - pl, "%s%.0f/%.0f", r ? " " : "", m1 / c1, r1 / c1);
            }
            if (!cnt) continue;
            fprintf(out, "   %-10s %6ld %13.0f %13.0f %+13.0f  (%s; mean |model-rec| %.0f)\n",
                    engine_step_type_name(ty), cnt / nruns, ms / cnt, rs / cnt, (ms - rs) / cnt, per, ad / cnt);
        }
    }
    fprintf(out, "   windows: each predicted the median of %d runs of the model at the runs' own noise (a run %.2f%%, "
            "a step %.2f%%", RESCORE_MEMBERS, 100 * nz.run, 100 * nz.step);
    if (nz.paired >= RESCORE_MIN_PAIRED) fprintf(out, " over %ld steps paired across the runs)\n", nz.paired);
    else fprintf(out, ": %ld steps paired across the runs, under %d: none read)\n", nz.paired, RESCORE_MIN_PAIRED);
    fprintf(out, "   %-18s %11s %11s %11s %11s %8s %7s %7s %8s %9s\n", "window", "predicted", "measured", "min", "max",
            "error", "spread", "verdict", "beyond", "+1% step");
    for (int i = 0; i < u->s.n_windows; i++) {
        double m[RESCORE_MAX_RUNS], v0[RESCORE_MEMBERS], v1[RESCORE_MEMBERS];
        for (int r = 0; r < nruns; r++) m[r] = engine_window(&eg[r], i);
        for (int k = 0; k < RESCORE_MEMBERS; k++)
            v0[k] = ens[(size_t)k * nw + i], v1[k] = ens[(size_t)(RESCORE_MEMBERS + k) * nw + i];
        rescore_window_t w;
        rescore_window_figs(rescore_median(v0, RESCORE_MEMBERS), m, nruns, rescore_median(v1, RESCORE_MEMBERS), &w);
        fprintf(out, "   %-18s ", u->s.windows[i].name);
        if (isnan(w.pred)) fprintf(out, "%11s", "n/a");
        else fprintf(out, "%11.4f", w.pred);
        if (!w.runs) fprintf(out, " %11s %11s %11s", "n/a", "n/a", "n/a");
        else fprintf(out, " %11.4f %11.4f %11.4f", w.mean, w.lo, w.hi);
        if (!w.defined) {
            fprintf(out, " %8s %7s %7s %8s %9s\n", "n/a", "n/a", "n/a", "n/a", "n/a");
            continue;
        }
        pct(out, 8, w.err);
        fprintf(out, " %6.1f%% %7s", 100 * w.spread, w.excess == 0 ? "inside" : "miss");
        pct(out, 8, w.excess);
        pct(out, 9, w.sens);
        fprintf(out, "\n");
    }
    /* calib's band: each window at the two ends of the range calib's traces gave its time
     * constants (a profile that stores one) */
    if (u->s.n_windows > 0 && has_calib_band(u) && !recorded_clock) {
        double *bw = malloc(2 * (size_t)u->s.n_windows * sizeof *bw);
        if (!bw) {
            snprintf(err, errsz, "out of memory");
            goto done;
        }
        int brc = run_calib_end(u, 1, probe, recorded_idle, gm, ngm, bw, err, errsz);
        if (brc == 0) brc = run_calib_end(u, 0, probe, recorded_idle, gm, ngm, bw + u->s.n_windows, err, errsz);
        if (brc < 0) {
            free(bw);
            goto done;
        }
        const profile_t *p = &u->prof;
        char fall[64] = "", recv[64] = "";
        if (p->tau_up_runs_range_s[1] > 0)
            snprintf(fall, sizeof fall, "the fall %.0f-%.0f ms", 1e3 * p->tau_up_runs_range_s[0],
                     1e3 * p->tau_up_runs_range_s[1]);
        if (p->tau_down_range_s[1] > 0)
            snprintf(recv, sizeof recv, "%sthe recovery %.0f-%.0f ms", *fall ? ", " : "", 1e3 * p->tau_down_range_s[0],
                     1e3 * p->tau_down_range_s[1]);
        fprintf(out, "   calib's band: the clock's time constants at the ends of calib's traces (%s%s), one run"
                " without noise each\n", fall, recv);
        fprintf(out, "   %-18s %11s %8s %11s %8s %9s  %s\n", "calib band", "hot end", "error", "cool end", "error",
                "runs", "(hot: the fastest fall, the slowest recovery; runs: the band against the runs' range)");
        for (int i = 0; i < u->s.n_windows; i++) {
            double m[RESCORE_MAX_RUNS];
            for (int r = 0; r < nruns; r++) m[r] = engine_window(&eg[r], i);
            rescore_window_t wh, wc;
            rescore_window_figs(bw[i], m, nruns, NAN, &wh);
            rescore_window_figs(bw[u->s.n_windows + i], m, nruns, NAN, &wc);
            fprintf(out, "   %-18s ", u->s.windows[i].name);
            if (!wh.defined || !wc.defined) {
                fprintf(out, "%11s %8s %11s %8s %9s\n", "n/a", "n/a", "n/a", "n/a", "n/a");
                continue;
            }
            fprintf(out, "%11.4f", wh.pred);
            pct(out, 8, wh.err);
            fprintf(out, " %11.4f", wc.pred);
            pct(out, 8, wc.err);
            double bgap = rescore_band_gap(wh.pred, wc.pred, &wh);
            if (bgap == 0) fprintf(out, " %9s\n", "overlap");
            else {
                pct(out, 9, bgap);
                fprintf(out, "\n");
            }
        }
        free(bw);
    }
    /* the model without noise (one run: one draw of where a steep window lands) beside the
     * ensemble's range */
    fprintf(out, "   %-26s %11s %8s %8s %12s %11s  %s\n", "one run without noise", "predicted", "error", "beyond",
            "ensemble min", "max", "(a single draw where a window is steep; the ensemble's range)");
    for (int i = 0; i < u->s.n_windows; i++) {
        double m[RESCORE_MAX_RUNS], lo = INFINITY, hi = -INFINITY;
        for (int r = 0; r < nruns; r++) m[r] = engine_window(&eg[r], i);
        for (int k = 0; k < RESCORE_MEMBERS; k++) lo = fmin(lo, ens[(size_t)k * nw + i]), hi = fmax(hi, ens[(size_t)k * nw + i]);
        rescore_window_t w;
        rescore_window_figs(engine_window(&u->e, i), m, nruns, NAN, &w);   /* no +1% column here */
        fprintf(out, "   one run %-18s ", u->s.windows[i].name);
        if (!w.defined || isnan(lo) || isnan(hi)) {
            fprintf(out, "%11s %8s %8s %12s %11s\n", "n/a", "n/a", "n/a", "n/a", "n/a");
            continue;
        }
        fprintf(out, "%11.4f", w.pred);
        pct(out, 8, w.err);
        pct(out, 8, w.excess);
        fprintf(out, " %12.4f %11.4f\n", lo, hi);
    }
    /* each percentile window's neighbourhood in the prediction's values */
    int head = 0;
    for (int i = 0; i < u->s.n_windows; i++) {
        win_dist_t d;
        if (u->s.windows[i].stat == STAT_MEAN || !engine_window_dist(&u->e, i, &d)) continue;
        double q = scn_stat_quantile(u->s.windows[i].stat), qlo, qhi;
        rescore_slope_band(q, &qlo, &qhi);
        rescore_slope_t sl;
        rescore_slope_figs(q, engine_window(&u->e, i), engine_window_quantile(&u->e, i, qlo),
                           engine_window_quantile(&u->e, i, qhi), d.n, &sl);
        if (isnan(sl.per_value)) continue;
        if (!head++)
            fprintf(out, "   %-18s %6s %11s %6s %11s %8s %8s  one crossing (steep: from %.1f%%)\n", "percentile window",
                    "below", "predicted", "above", "predicted", "move", "move", 100 * RESCORE_STEEP);
        char blo[16], bhi[16];
        snprintf(blo, sizeof blo, "p%g", 100 * sl.qlo);
        snprintf(bhi, sizeof bhi, "p%g", 100 * sl.qhi);
        fprintf(out, "   %-18s %6s %11.4f %6s %11.4f", u->s.windows[i].name, blo, sl.lo, bhi, sl.hi);
        pct(out, 8, sl.down);
        pct(out, 8, sl.up);
        fprintf(out, "  %5.2f%%%s\n", 100 * sl.per_value, sl.steep ? "  steep" : "");
    }
    fprintf(out, "   steps %ld /", u->e.sum.steps);
    for (int r = 0; r < nruns; r++) fprintf(out, " %ld", eg[r].sum.steps);
    fprintf(out, " (profile run / measured runs; %ld at the runs' time per step type)\n", et.sum.steps);
    rc = 0;
done:
    for (int r = 0; r < started; r++) engine_free(&eg[r]);
    if (et_started) engine_free(&et);
    for (int r = 0; r < nruns; r++) {
        if (rm[r]) cost_free(rm[r]);
        if (pm[r]) cost_free(pm[r]);
    }
    if (tm) cost_free(tm);
    free(gm);
    free(ens);
    return rc;
}
