/* sustain.c: calib's sustained-load probes (see sustain.h and sim/heat.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "heat.h"
#include "sustain.h"

#define TRACE_MAX 4096

typedef struct {
    calib_timer_t *t;
    double now;                   /* timer seconds so far */
} sus_t;

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    if (n < 1) return NAN;
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The board power now (W), or NAN where it cannot be read. */
static double power_now(sus_t *s)
{
    double w;
    return s->t->power && s->t->power(s->t, &w) == 0 && w > 0 ? w : NAN;
}

/* Run j back to back for `seconds` in batches of ~2 ms, reading the clock (and the power)
 * after each; the trace (time since the start, MHz) into tt/tf when given; *tail = the mean
 * clock over the last 30% of the time (NAN if none was read), *tail_w (when given) the mean
 * power over it (NAN if none was read).  0 / -1. */
static int load_w(sus_t *s, const calib_job_t *j, double t_est, double seconds, double *tt, double *tf, int *n,
                  double *tail, double *tail_w)
{
    int iters = (int)ceil(0.002 / t_est);
    if (iters < 1) iters = 1;
    if (iters > 1000) iters = 1000;
    if (s->t->prepare(s->t, j) != 0) return -1;
    double start = s->now, sum = 0, sw = 0;
    int cnt = 0, k = 0, cw = 0;
    while (s->now - start < seconds) {
        double sec, f;
        if (s->t->run(s->t, j, iters, &sec) != 0) return -1;
        if (!(sec > 0)) {
            snprintf(s->t->err, sizeof s->t->err, "sustained load: non-positive time");
            return -1;
        }
        s->now += sec * iters;
        if (s->t->clock(s->t, &f) != 0) continue;
        if (tt && k < TRACE_MAX) {
            tt[k] = s->now - start;
            tf[k++] = f;
        }
        if (s->now - start >= 0.7 * seconds) {
            sum += f;
            cnt++;
            double w = tail_w ? power_now(s) : NAN;
            if (isfinite(w)) sw += w, cw++;
        }
    }
    if (n) *n = k;
    *tail = cnt ? sum / cnt : NAN;
    if (tail_w) *tail_w = cw ? sw / cw : NAN;
    return 0;
}

static int load(sus_t *s, const calib_job_t *j, double t_est, double seconds, double *tt, double *tf, int *n,
                double *tail)
{
    return load_w(s, j, t_est, seconds, tt, tf, n, tail, NULL);
}

/* Run j back to back for `seconds` (batches of ~2 ms): its seconds a run over the last 30%. */
static int load_time(sus_t *s, const calib_job_t *j, double t_est, double seconds, double *t_run)
{
    int iters = (int)ceil(0.002 / t_est);
    if (iters < 1) iters = 1;
    if (iters > 1000) iters = 1000;
    if (s->t->prepare(s->t, j) != 0) return -1;
    double start = s->now, sum = 0;
    long runs = 0;
    while (s->now - start < seconds) {
        double sec;
        if (s->t->run(s->t, j, iters, &sec) != 0) return -1;
        s->now += sec * iters;
        if (s->now - start >= 0.7 * seconds) sum += sec * iters, runs += iters;
    }
    *t_run = runs ? sum / runs : NAN;
    return 0;
}

/* The heater in 20 ms cycles with idle gaps, `duty` of the time on the heater (at its
 * calibrated time), for `seconds`: over the last 30% of the time, the heater's seconds a run
 * and its share of the time as it ran (a slowing heater stretches it).  0 / -1. */
static int mix(sus_t *s, const calib_job_t *h, double th, double duty, double seconds, double *t_run, double *share)
{
    int ih = (int)ceil(0.02 * duty / th);
    if (ih < 1) ih = 1;
    double gap = ih * th * (1 - duty) / duty;
    double start = s->now, sh = 0, st = 0;
    long runs = 0;
    if (s->t->prepare(s->t, h) != 0) return -1;
    while (s->now - start < seconds) {
        double hsec;
        int tail = s->now - start >= 0.7 * seconds;
        if (s->t->run(s->t, h, ih, &hsec) != 0) return -1;
        s->now += hsec * ih;
        s->t->idle(s->t, gap);
        s->now += gap;
        if (tail) sh += hsec * ih, st += hsec * ih + gap, runs += ih;
    }
    *t_run = runs ? sh / runs : NAN;
    *share = st > 0 ? sh / st : duty;
    return 0;
}

/* One timing of j from a cool start: j prepared, 0.1 s of the heater a quarter of the time
 * (20 ms cycles with idle gaps: a light duty that keeps the clock up -- a plain rest lets the
 * card idle down, and the first runs after it are slower), one run, then the timing (~0.5 ms).
 * Preparing the heater keeps j's state (calib.h). */
static int timed_cool(sus_t *s, const calib_job_t *j, double t_est, const calib_job_t *h, double th, double *sec)
{
    int iters = (int)ceil(5e-4 / t_est);
    if (iters < 1) iters = 1;
    if (iters > 200) iters = 200;
    double w, tr, sh;
    if (s->t->prepare(s->t, j) != 0 || mix(s, h, th, 0.25, 0.1, &tr, &sh) < 0 || s->t->run(s->t, j, 1, &w) != 0
        || s->t->run(s->t, j, iters, sec) != 0)
        return -1;
    s->now += w + *sec * iters;
    return 0;
}

/* Run j back to back for `seconds` in batches of ~1 ms; the trace of its time per run
 * (tv) at the middle of each batch (tt, seconds from the start).  0 / -1. */
static int recovery(sus_t *s, const calib_job_t *j, double t_est, double seconds, double *tt, double *tv, int *n)
{
    int iters = (int)ceil(0.001 / t_est);
    if (iters < 1) iters = 1;
    if (iters > 1000) iters = 1000;
    if (s->t->prepare(s->t, j) != 0) return -1;
    double start = s->now;
    int k = 0;
    while (s->now - start < seconds && k < TRACE_MAX) {
        double sec;
        if (s->t->run(s->t, j, iters, &sec) != 0) return -1;
        tt[k] = s->now - start + 0.5 * sec * iters;
        tv[k++] = sec;
        s->now += sec * iters;
    }
    *n = k;
    return 0;
}

/* The mean of the last 30% (in time) of a trace. */
static double tail_mean(const double *tt, const double *tv, int n)
{
    double sum = 0;
    int c = 0;
    for (int i = 0; i < n; i++)
        if (tt[i] >= 0.7 * tt[n - 1]) sum += tv[i], c++;
    return c ? sum / c : NAN;
}

/* One timing of j right after `pre` ran for pre_s seconds: seconds per run, and the clock
 * the pre-load settled at (the timing is too short for the clock to move far from it). */
static int timed_after(sus_t *s, const calib_job_t *pre, double pre_t, double pre_s, const calib_job_t *j, double t_est,
                       double *sec, double *pre_mhz)
{
    double tail;
    if (load(s, pre, pre_t, pre_s, NULL, NULL, NULL, &tail) < 0) return -1;
    *pre_mhz = tail;
    int iters = (int)ceil(5e-4 / t_est);
    if (iters < 1) iters = 1;
    if (iters > 200) iters = 200;
    if (s->t->prepare(s->t, j) != 0 || s->t->run(s->t, j, iters, sec) != 0) return -1;
    s->now += *sec * iters;
    return 0;
}

/* The probes of a law: of the n times t, those of 20 us .. 20 ms sorted, the ones at a
 * third and at two thirds (one or both of them when fewer than three qualify).  Indices
 * into t in idx; returns how many. */
static int probe_pick(const double *t, int n, int idx[2])
{
    int k = 0, *ix = malloc((size_t)(n > 0 ? n : 1) * sizeof *ix);
    if (!ix) return 0;
    for (int i = 0; i < n; i++)
        if (t[i] >= 2e-5 && t[i] <= 2e-2) ix[k++] = i;
    /* sort by time, stable (insertion: a law has at most a few hundred points) */
    for (int a = 1; a < k; a++)
        for (int b = a; b > 0 && t[ix[b]] < t[ix[b - 1]]; b--) {
            int x = ix[b];
            ix[b] = ix[b - 1];
            ix[b - 1] = x;
        }
    int np = 0;
    if (k == 1 || k == 2) idx[np++] = ix[0];
    if (k == 2) idx[np++] = ix[1];
    if (k >= 3) {
        idx[np++] = ix[k / 3];
        idx[np++] = ix[2 * k / 3];
    }
    free(ix);
    return np;
}

/* The GEMM probes: of the law's points of 50 us .. 20 ms, the slowest and the fastest by
 * FLOP rate and the ones at a third and two thirds of the rates (distinct points).  Indices
 * into jobs in p; returns how many. */
static int pick_gemm(const calib_job_t *jobs, const double *t_s, int njobs, int l, int p[SUSTAIN_MAX_PROBES])
{
    int n = 0, *ix = malloc((size_t)(njobs > 0 ? njobs : 1) * sizeof *ix);
    double *rate = malloc((size_t)(njobs > 0 ? njobs : 1) * sizeof *rate);
    int np = 0;
    if (ix && rate) {
        for (int i = 0; i < njobs; i++)
            if (jobs[i].law == l && t_s[i] >= 5e-5 && t_s[i] <= 2e-2) {
                rate[i] = 2.0 * jobs[i].m * jobs[i].n * jobs[i].k / t_s[i];
                ix[n++] = i;
            }
        for (int a = 1; a < n; a++)
            for (int b = a; b > 0 && rate[ix[b]] < rate[ix[b - 1]]; b--) {
                int x = ix[b];
                ix[b] = ix[b - 1];
                ix[b - 1] = x;
            }
        for (int q = 0; q < SUSTAIN_MAX_PROBES && n > 0; q++) {
            int c = ix[(int)((double)q * (n - 1) / (SUSTAIN_MAX_PROBES - 1) + 0.5)], dup = 0;
            for (int r = 0; r < np; r++) dup |= p[r] == c;
            if (!dup) p[np++] = c;
        }
    }
    free(ix);
    free(rate);
    return np;
}

/* The probe jobs of law l: the GEMMs' (pick_gemm), else up to two (probe_pick over its
 * measured times).  Returns how many (indices into jobs in *p). */
static int pick_probes(const calib_job_t *jobs, const double *t_s, int njobs, int l, int p[SUSTAIN_MAX_PROBES])
{
    int n = 0, *idx = malloc((size_t)(njobs > 0 ? njobs : 1) * sizeof *idx);
    double *t = malloc((size_t)(njobs > 0 ? njobs : 1) * sizeof *t);
    int np = 0, gemm = 0;
    if (idx && t) {
        for (int i = 0; i < njobs; i++)
            if (jobs[i].law == l && t_s[i] > 0) {
                idx[n] = i;
                t[n++] = t_s[i];
                gemm |= jobs[i].kernel == CK_GEMM;
            }
        if (gemm) {
            np = pick_gemm(jobs, t_s, njobs, l, p);
        } else {
            np = probe_pick(t, n, p);
            for (int q = 0; q < np; q++) p[q] = idx[p[q]];
        }
    }
    free(idx);
    free(t);
    return np;
}

int calib_sustain(calib_timer_t *t, const calib_job_t *jobs, const double *t_s, int njobs, int nlaws,
                  calib_sustain_t *out, FILE *progress)
{
    memset(out, 0, sizeof *out);
    for (int l = 0; l < SUSTAIN_MAX_LAWS; l++) out->hot[l] = out->heat[l] = NAN;
    out->heater = -1;
    out->heater_cool = NAN;
    double f;
    if (!t->clock || t->clock(t, &f) != 0) {
        snprintf(out->why, sizeof out->why, "the SM clock cannot be read here (no NVML)");
        return 0;
    }
    if (nlaws > SUSTAIN_MAX_LAWS) nlaws = SUSTAIN_MAX_LAWS;
    /* the heater: the largest measured GEMM; the light load: the longest fp16 q=1 XQA row */
    int hi = -1, li = -1;
    for (int i = 0; i < njobs; i++) {
        if (!(t_s[i] > 0)) continue;
        const calib_job_t *j = &jobs[i];
        if (j->kernel == CK_GEMM && (hi < 0 || (double)j->m * j->n * j->k
                                               > (double)jobs[hi].m * jobs[hi].n * jobs[hi].k))
            hi = i;
        if (j->kernel == CK_DECODE_XQA && !j->fp8 && j->rows == 1 && j->q == 1
            && (li < 0 || j->seq_len > jobs[li].seq_len))
            li = i;
    }
    if (hi < 0 || li < 0) {
        snprintf(out->why, sizeof out->why, "the grid has no %s to load the card with",
                 hi < 0 ? "GEMM" : "fp16 XQA decode row");
        return 0;
    }
    const calib_job_t *H = &jobs[hi], *L = &jobs[li];
    double th = t_s[hi], tl = t_s[li];
    sus_t s = { t, 0 };
    double *tt = malloc(2 * TRACE_MAX * sizeof *tt), *tf = tt ? tt + TRACE_MAX : NULL;
    if (!tt) {
        snprintf(t->err, sizeof t->err, "out of memory");
        return -1;
    }
    int n, rc = -1;
    double cold, hot;
    int duty = t->idle != NULL;   /* the duty law needs rests */
    if (load(&s, L, tl, 0.3, NULL, NULL, NULL, &cold) < 0) goto done;
    if (load(&s, H, th, 1.0, tt, tf, &n, &hot) < 0) goto done;
    out->clock_cold = cold;
    out->clock_hot = hot;
    out->tau_up = heat_tau(tt, tf, n, cold, hot);
    /* the recovery, from the light load's own times: NVML's clock reading updates every
     * ~0.1 s, too slowly to resolve it (on the H200 it read 110 ms where the kernels
     * recover in a few tens) */
    if (recovery(&s, L, tl, 0.6, tt, tf, &n) < 0) goto done;
    out->tau_down = n > 8 ? heat_tau(tt, tf, n, tf[0], tail_mean(tt, tf, n)) : NAN;
    if (progress)
        fprintf(progress, "calib: sustained load: %.0f MHz under a light load, %.0f MHz under the heater "
                "(the clock falls in %.0f ms; the light load's time recovers in %.0f ms)\n", cold, hot, out->tau_up * 1e3, out->tau_down * 1e3);
    if (!(cold - hot > 0.01 * cold) || !isfinite(out->tau_up) || !isfinite(out->tau_down)) {
        snprintf(out->why, sizeof out->why, "the clock did not settle lower under the heater (%.0f -> %.0f MHz)", cold,
                 hot);
        rc = 0;
        goto done;
    }
    /* settle for 4 time constants before each timing (98% of the way), 0.1 .. 0.5 s */
    double pre_l = fmin(0.5, fmax(0.1, 4 * out->tau_down)), pre_h = fmin(0.5, fmax(0.1, 4 * out->tau_up));
    double own = fmin(0.6, fmax(0.25, 6 * out->tau_up));   /* the tail mean is then within ~1% */
    for (int l = 0; l < nlaws; l++) {
        int p[SUSTAIN_MAX_PROBES], np = pick_probes(jobs, t_s, njobs, l, p);
        double ratio[SUSTAIN_MAX_PROBES], w[SUSTAIN_MAX_PROBES];
        int k = 0;
        for (int q = 0; q < np; q++) {
            const calib_job_t *j = &jobs[p[q]];
            double tc[3], th3[3], fc[3], fh[3], tk[3], tail;
            for (int r = 0; r < 3; r++)
                if (timed_after(&s, L, tl, pre_l, j, t_s[p[q]], &tc[r], &fc[r]) < 0
                    || timed_after(&s, H, th, pre_h, j, t_s[p[q]], &th3[r], &fh[r]) < 0
                    || (duty && timed_cool(&s, j, t_s[p[q]], H, th, &tk[r]) < 0))
                    goto done;
            if (load(&s, L, tl, pre_l, NULL, NULL, NULL, &tail) < 0
                || load(&s, j, t_s[p[q]], own, NULL, NULL, NULL, &tail) < 0)
                goto done;
            double c = median(tc, 3), h = median(th3, 3);
            if (!(c > 0) || !isfinite(tail)) continue;
            calib_probe_t *pr = &out->probe[l][out->nprobe[l]++];
            pr->job = p[q];
            pr->t_hot = h;
            pr->t_cool = duty ? median(tk, 3) : NAN;
            pr->hot = pr->t_cool > 0 ? h / pr->t_cool : NAN;
            ratio[k] = h / c;
            w[k] = (cold - tail) / (cold - hot);
            if (w[k] < 0) w[k] = 0;
            if (w[k] > 1) w[k] = 1;
            k++;
        }
        if (k) {
            out->hot[l] = median(ratio, k);
            out->heat[l] = median(w, k);
            if (progress)
                fprintf(progress, "calib: sustained load: %-26s hot %.3f heat %.2f (%d probe%s)\n",
                        calib_laws(NULL)[l].name, out->hot[l], out->heat[l], k, k > 1 ? "s" : "");
            for (int q = 0; progress && duty && q < out->nprobe[l]; q++) {
                const calib_probe_t *pr = &out->probe[l][q];
                fprintf(progress, "calib: sustained load: %-26s probe %d: %.4f ms from a cool start, %.4f ms after the "
                        "heater: hot %.3f\n", calib_laws(NULL)[l].name, q + 1, pr->t_cool * 1e3, pr->t_hot * 1e3, pr->hot);
            }
        }
    }
    /* the duty law: the heater from a cool start, in duty cycles and continuously */
    if (duty) {
        static const double dc[SUSTAIN_MIXES] = { 0.25, 0.5, 0.75 };
        double tk[3];
        for (int r = 0; r < 3; r++)
            if (timed_cool(&s, H, th, H, th, &tk[r]) < 0) goto done;
        out->heater = hi;
        out->heater_cool = median(tk, 3);
        out->ncycle = 0;
        for (int m = 0; m <= SUSTAIN_MIXES; m++) {
            double tr, sh = 1;
            t->idle(t, 0.3);
            if (m < SUSTAIN_MIXES ? mix(&s, H, th, dc[m], 0.8, &tr, &sh) < 0 : load_time(&s, H, th, 0.8, &tr) < 0)
                goto done;
            if (!(tr > 0) || !(sh > 0)) continue;
            out->cycle_share[out->ncycle] = sh;
            out->cycle_t[out->ncycle++] = tr;
        }
        double t1 = out->ncycle ? out->cycle_t[out->ncycle - 1] : NAN, t0 = out->heater_cool;
        out->has_duty = out->ncycle >= 2 && out->cycle_share[out->ncycle - 1] == 1 && t1 > 1.01 * t0;
        for (int m = 0; m < out->ncycle; m++)
            out->cycle_phi[m] = out->has_duty ? (out->cycle_t[m] - t0) / (t1 - t0) : NAN;
        if (progress) {
            fprintf(progress, "calib: duty: the heater %.4f ms a run from a cool start\n", t0 * 1e3);
            for (int m = 0; m < out->ncycle; m++)
                fprintf(progress, "calib: duty: the heater %.0f%% of the time as it ran: %.4f ms a run (phi %.3f)\n",
                        100 * out->cycle_share[m], out->cycle_t[m] * 1e3, out->cycle_phi[m]);
            if (!out->has_duty) fprintf(progress, "calib: duty: no law (the heater does not slow under its own load)\n");
        }
    }
    out->ok = 1;
    rc = 0;
done:
    out->seconds = s.now;
    free(tt);
    return rc;
}
