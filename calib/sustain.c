/* sustain.c: calib's sustained-load probes (see sustain.h and sim/heat.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "heat.h"
#include "sustain.h"

#define TRACE_MAX 4096
#define STUDY_GEMM_PROBES 4   /* the pre-load study's GEMMs, spread over their FLOP rates */

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

/* Runs of about t_est seconds each that fill `batch` seconds: 1 .. most. */
static int runs_in(double batch, double t_est, int most)
{
    int iters = (int)ceil(batch / t_est);
    return iters < 1 ? 1 : iters > most ? most : iters;
}

/* Run j back to back for `seconds` in batches of ~2 ms, reading the clock after each;
 * the trace (time since the start, MHz) into tt/tf when given; *tail = the mean clock
 * over the last 30% of the time (NAN if none was read); *tail_stamp the same span's clock by
 * the SMs' cycle counters (the timer's span_clock; NAN where it has none; tail_stamp NULL: not
 * read).  0 / -1. */
static int load(sus_t *s, const calib_job_t *j, double t_est, double seconds, double *tt, double *tf, int *n,
                double *tail, double *tail_stamp)
{
    int stamped = 0;                  /* the tail's span stamped at its start */
    if (tail_stamp) *tail_stamp = NAN;
    int iters = runs_in(0.002, t_est, 1000);
    if (s->t->prepare(s->t, j) != 0) return -1;
    double start = s->now, sum = 0;
    int cnt = 0, k = 0;
    while (s->now - start < seconds) {
        double sec, f;
        if (s->t->run(s->t, j, iters, &sec) != 0) return -1;
        if (!(sec > 0)) {
            snprintf(s->t->err, sizeof s->t->err, "sustained load: non-positive time");
            return -1;
        }
        s->now += sec * iters;
        if (tail_stamp && !stamped && s->t->span_clock && s->now - start >= 0.7 * seconds) {
            double unused;
            stamped = s->t->span_clock(s->t, 0, &unused) == 0;
        }
        if (s->t->clock(s->t, &f) != 0) continue;
        if (tt && k < TRACE_MAX) {
            tt[k] = s->now - start;
            tf[k++] = f;
        }
        if (s->now - start >= 0.7 * seconds) {
            sum += f;
            cnt++;
        }
    }
    if (n) *n = k;
    *tail = cnt ? sum / cnt : NAN;
    double mhz;
    if (stamped && s->t->span_clock(s->t, 1, &mhz) == 0) *tail_stamp = mhz;
    return 0;
}

/* Run j back to back for `seconds` in batches of ~1 ms; the trace of its time per run
 * (tv) at the middle of each batch (tt, seconds from the start); with tc, each batch's clock
 * by the SMs' cycle counters too (the timer's span_clock around it; NAN where not read).
 * 0 / -1. */
static int recovery(sus_t *s, const calib_job_t *j, double t_est, double seconds, double *tt, double *tv, double *tc,
                    int *n)
{
    int iters = runs_in(0.001, t_est, 1000);
    if (s->t->prepare(s->t, j) != 0) return -1;
    double start = s->now;
    int k = 0;
    while (s->now - start < seconds && k < TRACE_MAX) {
        double sec, mhz = NAN, unused;
        int stamped = tc && s->t->span_clock && s->t->span_clock(s->t, 0, &unused) == 0;
        if (s->t->run(s->t, j, iters, &sec) != 0) return -1;
        if (stamped && s->t->span_clock(s->t, 1, &mhz) != 0) mhz = NAN;
        if (tc) tc[k] = mhz;
        tt[k] = s->now - start + 0.5 * sec * iters;
        tv[k++] = sec;
        s->now += sec * iters;
    }
    *n = k;
    return 0;
}

/* recovery()'s trace with the runs queued on the card CALIB_SEQ_DEPTH batches deep (the timer's
 * seq_queue, calib.h): no host work between the batches, as an engine's step runs; each batch's
 * time from the card's events.  0 / -1. */
static int recovery_queued(sus_t *s, const calib_job_t *j, double t_est, double seconds, double *tt, double *tv, int *n)
{
    int iters = runs_in(0.001, t_est, 1000);
    if (s->t->prepare(s->t, j) != 0) return -1;
    const calib_job_t *jobs[1] = { j };
    double start = s->now, est = iters * t_est;
    int k = 0, queued = 0;
    for (;;) {
        while (queued < CALIB_SEQ_DEPTH && s->now + queued * est - start < seconds && k + queued < TRACE_MAX) {
            if (s->t->seq_queue(s->t, jobs, &iters, 1, 1) != 0) return -1;
            queued++;
        }
        if (!queued) break;
        double ps[CALIB_SEQ_PARTS];
        if (s->t->seq_wait(s->t, ps) != 0) return -1;
        queued--;
        if (!(ps[0] > 0)) {
            snprintf(s->t->err, sizeof s->t->err, "sustained load: non-positive time");
            return -1;
        }
        tt[k] = s->now - start + 0.5 * ps[0];
        tv[k++] = ps[0] / iters;
        s->now += ps[0];
        est = ps[0];
    }
    *n = k;
    return 0;
}

/* The heater h in 20 ms cycles (longer where one heater run is over `duty` of 20 ms) with
 * the light load l, the heater `duty` of each cycle at
 * their calibrated times (th, tl), for `seconds`; both prepared first (an attention job keeps
 * its state while a GEMM is prepared and run, calib.h), so the cycles run with no host work
 * but the timings.  The duty the cycles had at calibrated times in *d; the clock (and the
 * power, 0 if not read) over the last 30% in *mhz, *watts (NAN if no clock was read); the same
 * span's clock by the SMs' cycle counters in *stamp when given (NAN: not read).  0 / -1. */
static int duty_load(sus_t *s, const calib_job_t *h, double th, const calib_job_t *l, double tl, double duty,
                     double seconds, double *d, double *mhz, double *watts, double *stamp)
{
    int stamped = 0;
    if (stamp) *stamp = NAN;
    double cyc = fmax(0.02, th / duty);     /* a low duty of a long heater: longer cycles */
    int ih = (int)lround(cyc * duty / th), il = (int)lround(cyc * (1 - duty) / tl);
    if (ih < 1) ih = 1;
    if (duty >= 1) il = 0;
    else if (il < 1) il = 1;
    *d = ih * th / (ih * th + il * tl);
    if (s->t->prepare(s->t, l) != 0 || s->t->prepare(s->t, h) != 0) return -1;
    double start = s->now, fs = 0, ws = 0;
    int fc = 0, wc = 0;
    while (s->now - start < seconds) {
        double sec, f, w;
        /* read after each part: at a cycle's end alone the readings would lean to its
         * light part */
        for (int part = 0; part < 2; part++) {
            int it = part ? il : ih;
            if (!it) continue;
            if (s->t->run(s->t, part ? l : h, it, &sec) != 0) return -1;
            s->now += sec * it;
            if (s->now - start < 0.7 * seconds) continue;
            if (stamp && !stamped && s->t->span_clock) {
                double unused;
                stamped = s->t->span_clock(s->t, 0, &unused) == 0;
            }
            if (s->t->clock(s->t, &f) == 0) fs += f, fc++;
            if (s->t->power && s->t->power(s->t, &w) == 0 && w > 0) ws += w, wc++;
        }
    }
    *mhz = fc ? fs / fc : NAN;
    *watts = wc ? ws / wc : 0;
    double sm;
    if (stamped && s->t->span_clock(s->t, 1, &sm) == 0) *stamp = sm;
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

/* A trace's move from its start (the most extreme value of its first 3 ms the other way, so
 * that one odd first batch is no start) to the mean of its last 30%: the time it takes to cover
 * 1 - 1/e of it, NAN where the move is under 1% (or the trace under 9 points or not all read).
 * up: the trace rises (a time), else it falls (a clock).  *from, *to: the two ends (NAN as
 * the time). */
static double trace_move(const double *tt, const double *tv, int n, int up, double *from, double *to)
{
    *from = *to = NAN;
    for (int i = 0; i < n; i++)
        if (!isfinite(tv[i])) return NAN;
    if (n <= 8) return NAN;
    int b = 0;
    for (int i = 1; i < n && tt[i] <= tt[0] + 0.003; i++)
        if (up ? tv[i] < tv[b] : tv[i] > tv[b]) b = i;
    *from = tv[b];
    *to = tail_mean(tt, tv, n);
    int moved = up ? *to > 1.01 * *from : *to < 0.99 * *from;
    return moved ? heat_tau(tt + b, tv + b, n - b, *from, *to) : NAN;
}

/* How often a clock trace's reading changed: the median time between successive changes
 * (NVML's SM clock updates in steps, ~0.1 s apart on the H200, which bounds how finely 2. of
 * sustain.h resolves the fall); *nchg = the changes seen.  NAN with fewer than 3. */
static double trace_hold(const double *tt, const double *tf, int n, int *nchg)
{
    double *d = malloc((size_t)(n > 1 ? n : 1) * sizeof *d), last = NAN;
    int nd = 0, c = 0;
    if (!d) return *nchg = 0, NAN;
    for (int i = 1; i < n; i++)
        if (tf[i] != tf[i - 1]) {
            if (c++) d[nd++] = tt[i] - last;
            last = tt[i];
        }
    *nchg = c;
    double h = c >= 3 ? median(d, nd) : NAN;
    free(d);
    return h;
}

/* One timing of j right after `pre` ran for pre_s seconds: seconds per run. */
static int timed_after(sus_t *s, const calib_job_t *pre, double pre_t, double pre_s, const calib_job_t *j, double t_est,
                       double *sec)
{
    double tail;
    if (load(s, pre, pre_t, pre_s, NULL, NULL, NULL, &tail, NULL) < 0) return -1;
    int iters = runs_in(5e-4, t_est, 200);
    if (s->t->prepare(s->t, j) != 0 || s->t->run(s->t, j, iters, sec) != 0) return -1;
    s->now += *sec * iters;
    return 0;
}

/* A job's time 3 times after the light load L and 3 times after the heater H, interleaved
 * (pre_l, pre_h seconds of each before each timing): the medians' ratio in *hot (hot over
 * cold) and the cold median in *cold.  0 / -1. */
static int hot_ratio(sus_t *s, const calib_job_t *L, double tl, double pre_l, const calib_job_t *H, double th,
                     double pre_h, const calib_job_t *j, double tj, double *cold, double *hot)
{
    double tc[3], th3[3];
    for (int r = 0; r < 3; r++)
        if (timed_after(s, L, tl, pre_l, j, tj, &tc[r]) < 0 || timed_after(s, H, th, pre_h, j, tj, &th3[r]) < 0)
            return -1;
    *cold = median(tc, 3);
    *hot = median(th3, 3) / *cold;
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

/* Up to two probe jobs of law l (probe_pick over its measured times).  Returns how
 * many (indices into jobs in *p). */
static int pick_probes(const calib_job_t *jobs, const double *t_s, int njobs, int l, int p[2])
{
    int n = 0, *idx = malloc((size_t)(njobs > 0 ? njobs : 1) * sizeof *idx);
    double *t = malloc((size_t)(njobs > 0 ? njobs : 1) * sizeof *t);
    int np = 0;
    if (idx && t) {
        for (int i = 0; i < njobs; i++)
            if (jobs[i].law == l && t_s[i] > 0) {
                idx[n] = i;
                t[n++] = t_s[i];
            }
        np = probe_pick(t, n, p);
        for (int q = 0; q < np; q++) p[q] = idx[p[q]];
    }
    free(idx);
    free(t);
    return np;
}

/* The probes' loads among the measured jobs (-1: none): the heater, the largest GEMM; the
 * light load, the longest fp16 q = 1 XQA row; and (when pi is given) the fastest fp16 prefill
 * point, a light latency-bound call. */
static void pick_loads(const calib_job_t *jobs, const double *t_s, int njobs, int *hi, int *li, int *pi)
{
    *hi = *li = -1;
    if (pi) *pi = -1;
    for (int i = 0; i < njobs; i++) {
        if (!(t_s[i] > 0)) continue;
        const calib_job_t *j = &jobs[i], *h = *hi >= 0 ? &jobs[*hi] : NULL;
        if (j->kernel == CK_GEMM && (!h || (double)j->m * j->n * j->k > (double)h->m * h->n * h->k))
            *hi = i;
        if (j->kernel == CK_DECODE_XQA && !j->fp8 && j->rows == 1 && j->q == 1
            && (*li < 0 || j->seq_len > jobs[*li].seq_len))
            *li = i;
        if (pi && j->kernel == CK_PREFILL_GENERIC && !j->fp8 && (*pi < 0 || t_s[i] < t_s[*pi]))
            *pi = i;
    }
}

/* The compute-bound GEMM (sustain.h 6.): of the grid's GEMMs of m >= 512 timed at 0.1 .. 1 ms
 * (a kernel's own point, calib_job_t.kpoint, is no probe of the shape's FLOP rate), the one
 * nearest 0.4 ms (the larger FLOP count on a tie); and the fp16 q = 1 XQA decode row nearest
 * 0.3 ms.  -1: none. */
static void pick_layer(const calib_job_t *jobs, const double *t_s, int njobs, int *gi, int *di)
{
    *gi = *di = -1;
    double bg = INFINITY, bd = INFINITY;
    for (int i = 0; i < njobs; i++) {
        const calib_job_t *j = &jobs[i];
        if (!(t_s[i] > 0)) continue;
        if (j->kernel == CK_GEMM && !j->kpoint && j->m >= 512 && t_s[i] >= 1e-4 && t_s[i] < 1e-3) {
            double d = fabs(log(t_s[i] / 4e-4));
            if (d < bg || (d == bg && (double)j->m * j->n * j->k > (double)jobs[*gi].m * jobs[*gi].n * jobs[*gi].k))
                bg = d, *gi = i;
        }
        if (j->kernel == CK_DECODE_XQA && !j->fp8 && j->q == 1) {
            double d = fabs(log(t_s[i] / 3e-4));
            if (d < bd) bd = d, *di = i;
        }
    }
}

/* What an interleaved row read over its last 30%: the clock (NAN if none was read), the power
 * (0 if not read), each part's seconds a run, and the duty: the card's seconds over the host's
 * wall seconds (0: the timer has no wall clock). */
typedef struct {
    double mhz, watts, gs, ds, duty;
} inter_read_t;

static double wall_now(const sus_t *s)
{
    return s->t->wall ? s->t->wall(s->t) : 0;
}

/* the readings' means and the duty, from their sums */
static void inter_close(const sus_t *s, inter_read_t *r, double fs, int fc, double ws, int wc, double gsum, long gn,
                        double dsum, long dn, double busy, double w0, double w1)
{
    r->mhz = fc ? fs / fc : NAN;
    r->watts = wc ? ws / wc : 0;
    r->gs = gn ? gsum / gn : NAN;
    r->ds = dn ? dsum / dn : NAN;
    r->duty = s->t->wall && w1 > w0 ? busy / (w1 - w0) : 0;
}

/* Layers of g (ig runs) then d (id runs), each part a call of the timer's run() (which waits
 * for the card), for `seconds` (both prepared first: an attention job keeps its state while a
 * GEMM runs, calib.h); the clock and the power read every ~2 ms of the card's time.  Between
 * the parts the card waits on the host (the call's return, the next call's launches, the
 * readings): at 20 ms cycles a small share of the time, at layer scale most of it (the duty
 * says how much).  0 / -1. */
static int layers(sus_t *s, const calib_job_t *g, int ig, const calib_job_t *d, int id, double seconds,
                  inter_read_t *r)
{
    if (s->t->prepare(s->t, d) != 0 || s->t->prepare(s->t, g) != 0) return -1;
    double start = s->now, last = start, fs = 0, ws = 0, gsum = 0, dsum = 0, busy = 0, w0 = wall_now(s), w1 = w0;
    long gn = 0, dn = 0;
    int fc = 0, wc = 0;
    while (s->now - start < seconds) {
        double sg, sd, f, w;
        if (s->t->run(s->t, g, ig, &sg) != 0 || s->t->run(s->t, d, id, &sd) != 0) return -1;
        if (!(sg > 0) || !(sd > 0)) {
            snprintf(s->t->err, sizeof s->t->err, "interleaved load: non-positive time");
            return -1;
        }
        s->now += sg * ig + sd * id;
        if (s->now - start < 0.7 * seconds) {
            w0 = w1 = wall_now(s);
            continue;
        }
        gsum += sg * ig, gn += ig, dsum += sd * id, dn += id, busy += sg * ig + sd * id;
        if (s->now - last >= 0.002) {
            last = s->now;
            if (s->t->clock(s->t, &f) == 0) fs += f, fc++;
            if (s->t->power && s->t->power(s->t, &w) == 0 && w > 0) ws += w, wc++;
        }
        w1 = wall_now(s);
    }
    inter_close(s, r, fs, fc, ws, wc, gsum, gn, dsum, dn, busy, w0, w1);
    return 0;
}

/* The same layers run back to back on the card (the timer's seq_queue, calib.h): batches of
 * ~SEQ_BATCH_S of layers (at the parts' cold times, layer_s a layer), up to CALIB_SEQ_DEPTH
 * queued ahead, so the card never waits on the host; after each batch is waited for, the clock
 * and the power read while the next ones run.  Each part's time from the timer's events.
 * 0 / -1. */
#define SEQ_BATCH_S 0.02
static int seq_layers(sus_t *s, const calib_job_t *g, int ig, const calib_job_t *d, int id, double layer_s,
                      double seconds, int *nl_out, inter_read_t *r)
{
    const calib_job_t *jobs[2] = { g, d };
    const int iters[2] = { ig, id };
    int nl = (int)lround(SEQ_BATCH_S / layer_s);
    if (nl < 1) nl = 1;
    if (nl > CALIB_SEQ_LAYERS) nl = CALIB_SEQ_LAYERS;
    *nl_out = nl;
    if (s->t->prepare(s->t, d) != 0 || s->t->prepare(s->t, g) != 0) return -1;
    double start = s->now, est = nl * layer_s, fs = 0, ws = 0, gsum = 0, dsum = 0, busy = 0;
    double w0 = wall_now(s), w1 = w0;
    long gn = 0, dn = 0;
    int fc = 0, wc = 0, queued = 0;
    for (;;) {
        /* queue while the batches ahead (at the last batch's time) leave the row short */
        while (queued < CALIB_SEQ_DEPTH && s->now + queued * est - start < seconds) {
            if (s->t->seq_queue(s->t, jobs, iters, 2, nl) != 0) return -1;
            queued++;
        }
        if (!queued) break;
        double ps[CALIB_SEQ_PARTS], f, w;
        if (s->t->seq_wait(s->t, ps) != 0) return -1;
        queued--;
        double now = wall_now(s);
        if (!(ps[0] > 0) || !(ps[1] > 0)) {
            snprintf(s->t->err, sizeof s->t->err, "interleaved load: non-positive time");
            return -1;
        }
        est = ps[0] + ps[1];
        s->now += est;
        if (s->now - start < 0.7 * seconds) {
            w0 = w1 = now;
            continue;
        }
        gsum += ps[0], gn += (long)ig * nl, dsum += ps[1], dn += (long)id * nl, busy += est;
        w1 = now;
        if (s->t->clock(s->t, &f) == 0) fs += f, fc++;
        if (s->t->power && s->t->power(s->t, &w) == 0 && w > 0) ws += w, wc++;
    }
    inter_close(s, r, fs, fc, ws, wc, gsum, gn, dsum, dn, busy, w0, w1);
    return 0;
}

/* 6. and 7. of sustain.h, after the light load L and the heater H (pre_l, pre_h seconds
 * before each timing), each interleaved row settled for `settle` seconds.  0 / -1. */
static int layer_probes(sus_t *s, const calib_job_t *jobs, const double *t_s, int njobs, const calib_job_t *L,
                        double tl, const calib_job_t *H, double th, double pre_l, double pre_h, double settle,
                        calib_sustain_t *out, FILE *progress)
{
    int gi, di;
    pick_layer(jobs, t_s, njobs, &gi, &di);
    if (gi < 0) {
        if (progress) fprintf(progress, "calib: sustained load: no GEMM of m >= 512 at 0.1 .. 1 ms: no compute-bound probe\n");
        return 0;
    }
    const calib_job_t *G = &jobs[gi];
    double tg = t_s[gi], gcold, ghot, tail;
    if (hot_ratio(s, L, tl, pre_l, H, th, pre_h, G, tg, &gcold, &ghot) < 0) return -1;
    if (gcold > 0) {
        out->has_chot = 1;
        out->chot[0] = G->m, out->chot[1] = G->n, out->chot[2] = G->k;
        out->chot[3] = ghot;
        if (progress)
            fprintf(progress, "calib: sustained load: compute-bound gemm m=%ld n=%ld k=%ld hot %.3f\n", G->m, G->n, G->k,
                    out->chot[3]);
    }
    /* the clock's fall from the kernel's own times: G back to back after the light load, its
     * time per run traced (it slows as the clock falls, and heats as the heater does); NVML's
     * trace in 2. resolves no faster than its reading updates (~0.1 s).  Queued (no host work
     * between the batches) where the timer can; then, where it stamps the SMs' counters, G
     * again in timed calls with each batch stamped: the clock itself over the same kind of trace */
    double *tt = malloc(3 * TRACE_MAX * sizeof *tt), *tv = tt ? tt + TRACE_MAX : NULL, *tc = tt ? tv + TRACE_MAX : NULL;
    int n = 0, queued = s->t->seq_queue && s->t->seq_wait;
    if (!tt) {
        snprintf(s->t->err, sizeof s->t->err, "out of memory");
        return -1;
    }
    double base = NAN, rise = NAN, chigh = NAN, clow = NAN, ct0 = NAN, ct1 = NAN;
    if (queued) {
        /* the median of SUSTAIN_TAU_TRACES traces, each after the light load (one trace of two
         * calibs of one card read 55 and 105 ms) */
        double ups[SUSTAIN_TAU_TRACES];
        int nu = 0;
        for (int r = 0; r < SUSTAIN_TAU_TRACES; r++) {
            if (load(s, L, tl, pre_l, NULL, NULL, NULL, &tail, NULL) < 0
                || recovery_queued(s, G, tg, settle, tt, tv, &n) < 0) {
                free(tt);
                return -1;
            }
            double tu = trace_move(tt, tv, n, 1, &base, &rise);
            if (isfinite(tu)) ups[nu++] = tu;
        }
        out->ntau_up_runs = nu;
        out->tau_up_runs = median(ups, nu);
        if (nu) out->tau_up_runs_range[0] = ups[0], out->tau_up_runs_range[1] = ups[nu - 1];
    }
    int nq = n;
    double first = n > 0 ? tv[0] : NAN;
    if (!queued || s->t->span_clock) {
        if (load(s, L, tl, pre_l, NULL, NULL, NULL, &tail, NULL) < 0
            || recovery(s, G, tg, settle, tt, tv, tc, &n) < 0) {
            free(tt);
            return -1;
        }
        trace_move(tt, tv, n, 1, &ct0, &ct1);
        out->tau_up_stamps = trace_move(tt, tc, n, 0, &chigh, &clow);
        if (!queued) {
            out->tau_up_runs = trace_move(tt, tv, n, 1, &base, &rise);
            out->ntau_up_runs = isfinite(out->tau_up_runs);
            out->tau_up_runs_range[0] = out->tau_up_runs_range[1] = out->tau_up_runs;
            nq = n, first = n > 0 ? tv[0] : NAN;
        }
    }
    free(tt);
    if (progress && isfinite(out->tau_up_runs))
        fprintf(progress, "calib: sustained load: compute-bound gemm back to back after the light load: its time rises "
                "in %.0f ms (the clock's fall from the kernel's own times; NVML's trace: %.0f ms; the median of %d of %d "
                "traces: %.0f .. %.0f ms)\n", out->tau_up_runs * 1e3, out->tau_up * 1e3, out->ntau_up_runs,
                queued ? SUSTAIN_TAU_TRACES : 1, out->tau_up_runs_range[0] * 1e3, out->tau_up_runs_range[1] * 1e3);
    else if (progress)
        fprintf(progress, "calib: sustained load: compute-bound gemm back to back after the light load: its time did not "
                "settle higher (%d runs; the first %.4f ms, the fastest of the first 3 ms %.4f ms, the last 30%% %.4f ms; "
                "after the light load %.4f ms: no fall resolved from the kernel's own times)\n",
                nq, first * 1e3, base * 1e3, rise * 1e3, gcold * 1e3);
    if (progress && isfinite(chigh)) {
        char fall[48] = "no fall resolved";
        if (isfinite(out->tau_up_stamps)) snprintf(fall, sizeof fall, "it falls in %.0f ms", out->tau_up_stamps * 1e3);
        fprintf(progress, "calib: sustained load: the same gemm in timed calls of ~1 ms, each stamped by the SMs' cycle "
                "counters: its time %.4f -> %.4f ms, the clock %.0f -> %.0f MHz (%s; printed only)\n",
                ct0 * 1e3, ct1 * 1e3, chigh, clow, fall);
    }
    if (di < 0 || !(gcold > 0)) return 0;
    const calib_job_t *D = &jobs[di];
    double td = t_s[di], dc[3];
    for (int r = 0; r < 3; r++)
        if (timed_after(s, L, tl, pre_l, D, td, &dc[r]) < 0) return -1;
    double dcold = median(dc, 3);
    if (!(dcold > 0)) return 0;
    static const double share[3] = { 0.25, 0.5, 0.75 };
    int seq = s->t->seq_queue && s->t->seq_wait;
    if (!seq && progress)
        fprintf(progress, "calib: sustained load: the timer cannot queue layers back to back: no layer-scale rows\n");
    /* rows 0 .. 2: layers back to back at the three shares; 3: the 0.5 layer again, a call a
     * part, as the probe ran layers before (the control: printed, not stored); 4 .. 6: 20 ms
     * cycles at the three shares, a call a part */
    for (int q = 0; q < SUSTAIN_INTER_N + 1; q++) {
        int layer = q < 4, control = q == 3;
        double sh = control ? 0.5 : share[q < 3 ? q : q - 4];
        if (layer && !seq) continue;
        /* a layer: the fewest GEMM runs (1 .. 8) whose decode part, whole runs of it, puts the
         * share within 0.04 of sh (else the nearest); or 20 ms cycles */
        int ig = layer ? 1 : (int)lround(sh * 0.02 / gcold), id = 1, nl = 0;
        if (ig < 1) ig = 1;
        for (int a = ig, best = -1; a <= (layer ? 8 : ig); a++) {
            int b = (int)lround(a * gcold * (1 - sh) / sh / dcold);
            if (b < 1) b = 1;
            double e = fabs(a * gcold / (a * gcold + b * dcold) - sh);
            if (best < 0 || e < fabs(best * gcold / (best * gcold + id * dcold) - sh)) best = a, ig = a, id = b;
            if (e < 0.04) break;
        }
        double lay = ig * gcold + id * dcold;
        inter_read_t r;
        if (load(s, L, tl, pre_l, NULL, NULL, NULL, &tail, NULL) < 0
            || (layer && !control ? seq_layers(s, G, ig, D, id, lay, settle, &nl, &r) : layers(s, G, ig, D, id, settle, &r))
                   < 0)
            return -1;
        if (!isfinite(r.mhz) || !(r.gs > 0) || !(r.ds > 0)) continue;
        double row[SUSTAIN_INTER_COLS] = { ig * gcold / lay, lay * 1e3, r.mhz, r.watts, r.gs / gcold, r.ds / dcold, r.duty };
        if (progress) {
            char how[64], duty[128];
            if (nl) snprintf(how, sizeof how, "%d a batch, back to back", nl);
            else snprintf(how, sizeof how, "a call a part%s", control ? " (as before; not stored)" : "");
            if (!(r.duty > 0)) snprintf(duty, sizeof duty, "duty not measured");
            else if (r.duty < SUSTAIN_DUTY_MIN)
                snprintf(duty, sizeof duty, "duty %.3f (below %.1f: the card waited on the host between the parts; "
                         "not the load the row names)", r.duty, SUSTAIN_DUTY_MIN);
            else snprintf(duty, sizeof duty, "duty %.3f", r.duty);
            fprintf(progress, "calib: sustained load: interleaved, gemm share %.2f, layer %.3f ms, %s: %.0f MHz, %.0f W, "
                    "gemm x%.3f, decode x%.3f, %s\n", row[0], row[1], how, row[2], row[3], row[4], row[5], duty);
        }
        if (control) continue;
        memcpy(out->inter[out->ninter++], row, sizeof row);
    }
    return 0;
}

/* The elementwise proxy's point (cold: L2-cold, else warm) of SUSTAIN_ELEM_MIN_TOKENS tokens
 * or more nearest SUSTAIN_ELEM_TOKENS by ratio (of two as near, the larger); -1: none. */
static int pick_elem(const calib_job_t *jobs, const double *t_s, int njobs, int cold)
{
    int best = -1;
    double bd = 0;
    for (int i = 0; i < njobs; i++) {
        const calib_job_t *j = &jobs[i];
        if (j->kernel != CK_ELEM || !j->cold != !cold || !(t_s[i] > 0) || j->tokens < SUSTAIN_ELEM_MIN_TOKENS) continue;
        double d = fabs(log((double)j->tokens / SUSTAIN_ELEM_TOKENS));
        if (best < 0 || d < bd - 1e-9 || (fabs(d - bd) <= 1e-9 && j->tokens > jobs[best].tokens)) best = i, bd = d;
    }
    return best;
}

/* 8. of sustain.h: the elementwise proxy at a serving budget, L2-cold (stored) and warm (printed),
 * each timed 3 times after the light load L and 3 times after the heater H, interleaved (pre_l,
 * pre_h seconds before each timing), as the compute-bound GEMM is.  0 / -1. */
static int elem_probe(sus_t *s, const calib_job_t *jobs, const double *t_s, int njobs, const calib_job_t *L,
                      double tl, const calib_job_t *H, double th, double pre_l, double pre_h, calib_sustain_t *out,
                      FILE *progress)
{
    int ci = pick_elem(jobs, t_s, njobs, 1);
    if (ci < 0) {
        if (progress)
            fprintf(progress, "calib: sustained load: no L2-cold elementwise point of >= %d tokens: no elementwise probe\n",
                    SUSTAIN_ELEM_MIN_TOKENS);
        return 0;
    }
    for (int v = 0; v < 2; v++) {
        int ei = v ? pick_elem(jobs, t_s, njobs, 0) : ci;
        if (ei < 0 || (v && jobs[ei].tokens != jobs[ci].tokens)) continue;
        const calib_job_t *E = &jobs[ei];
        double c, hot;
        if (hot_ratio(s, L, tl, pre_l, H, th, pre_h, E, t_s[ei], &c, &hot) < 0) return -1;
        if (!(c > 0)) continue;
        double law = E->law >= 0 && E->law < SUSTAIN_MAX_LAWS ? out->hot[E->law] : NAN;
        if (!v) {
            out->has_ehot = 1;
            out->ehot[0] = (double)E->tokens;
            out->ehot[1] = hot;
        }
        if (progress) {
            char lh[64] = "";
            if (isfinite(law)) snprintf(lh, sizeof lh, "; the law's hot %.3f", law);
            fprintf(progress, "calib: sustained load: elementwise proxy %s, %ld tokens, %.4f ms: hot %.3f "
                    "(s %.2f against the heater's %.0f MHz%s)%s\n", v ? "warm" : "L2-cold", E->tokens, c * 1e3, hot,
                    log(hot) / log(out->clock_cold / out->clock_hot), out->clock_hot, lh, v ? " (printed only)" : "");
        }
    }
    return 0;
}

/* 9. of sustain.h: the GEMM probes, by calibrated time (indices into jobs in p; returns how
 * many).  Candidates: law l's GEMMs, not a kernel's own point; at each time aim, those within
 * a factor 1.5 of it, and of them the highest and the lowest FLOP rate (the first in the
 * grid's order on a tie; the one where the two rates are within a factor 1.5). */
static int gprobe_pick(const calib_job_t *jobs, const double *t_s, int njobs, int l, int p[SUSTAIN_GPROBE_MAX])
{
    static const double aim[SUSTAIN_GPROBE_NT] = { 3e-5, 1e-4, 3e-4, 1e-3, 3e-3 };
    int np = 0;
    for (int a = 0; a < SUSTAIN_GPROBE_NT; a++) {
        int lo = -1, hi = -1;
        double rlo = INFINITY, rhi = 0;
        for (int i = 0; i < njobs; i++) {
            const calib_job_t *j = &jobs[i];
            if (j->kernel != CK_GEMM || j->law != l || j->kpoint || !(t_s[i] > 0) || fabs(log(t_s[i] / aim[a])) > log(1.5))
                continue;
            double r = 2.0 * j->m * j->n * j->k / t_s[i];
            if (r > rhi) rhi = r, hi = i;
            if (r < rlo) rlo = r, lo = i;
        }
        if (hi < 0) continue;
        p[np++] = lo;
        if (rhi > 1.5 * rlo) p[np++] = hi;
    }
    /* by calibrated time */
    for (int a = 1; a < np; a++)
        for (int b = a; b > 0 && t_s[p[b]] < t_s[p[b - 1]]; b--) {
            int x = p[b];
            p[b] = p[b - 1];
            p[b - 1] = x;
        }
    return np;
}

static int gemm_probes(sus_t *s, const calib_job_t *jobs, const double *t_s, int njobs, const calib_job_t *L,
                       double tl, const calib_job_t *H, double th, double pre_l, double pre_h, calib_sustain_t *out,
                       FILE *progress)
{
    int p[SUSTAIN_GPROBE_MAX], np = gprobe_pick(jobs, t_s, njobs, H->law, p);
    double hot[2][SUSTAIN_GPROBE_MAX];
    for (int pass = 0; pass < 2; pass++)
        for (int q = 0; q < np; q++) {
            double c;
            if (hot_ratio(s, L, tl, pre_l, H, th, pre_h, &jobs[p[q]], t_s[p[q]], &c, &hot[pass][q]) < 0) return -1;
            if (!(c > 0)) hot[pass][q] = NAN;
        }
    double hr = 2.0 * H->m * H->n * H->k / th;
    for (int q = 0; q < np; q++) {
        const calib_job_t *j = &jobs[p[q]];
        if (!isfinite(hot[0][q]) || !isfinite(hot[1][q])) continue;
        double *row = out->gprobe[out->ngprobe++];
        row[0] = (double)j->m, row[1] = (double)j->n, row[2] = (double)j->k, row[3] = t_s[p[q]];
        row[4] = hot[0][q], row[5] = hot[1][q];
        if (progress)
            fprintf(progress, "calib: sustained load: gemm m=%ld n=%ld k=%ld, %.4f ms, %.2f of the heater's FLOP rate: "
                    "hot %.3f, %.3f (two passes; s %.2f against the heater's %.0f MHz)\n", j->m, j->n, j->k,
                    t_s[p[q]] * 1e3, 2.0 * j->m * j->n * j->k / t_s[p[q]] / hr, row[4], row[5],
                    log(sqrt(row[4] * row[5])) / log(out->clock_cold / out->clock_hot), out->clock_hot);
    }
    if (progress && !np) fprintf(progress, "calib: sustained load: no GEMM of 20 us .. 4.5 ms: no GEMM probes\n");
    return 0;
}

static int pick_gemm(const calib_job_t *jobs, const double *t_s, int njobs, int l, int p[STUDY_GEMM_PROBES]);

int calib_sustain(calib_timer_t *t, const calib_job_t *jobs, const double *t_s, int njobs, int nlaws,
                  calib_sustain_t *out, FILE *progress)
{
    memset(out, 0, sizeof *out);
    out->tau_up_runs = out->tau_up_stamps = out->stamp_cold = out->stamp_hot = NAN;
    out->tau_down_range[0] = out->tau_down_range[1] = out->tau_up_runs_range[0] = out->tau_up_runs_range[1] = NAN;
    for (int l = 0; l < SUSTAIN_MAX_LAWS; l++) out->hot[l] = out->heat[l] = NAN;
    double f;
    if (!t->clock || t->clock(t, &f) != 0) {
        snprintf(out->why, sizeof out->why, "the SM clock cannot be read here (no NVML)");
        return 0;
    }
    if (nlaws > SUSTAIN_MAX_LAWS) nlaws = SUSTAIN_MAX_LAWS;
    int hi, li;
    pick_loads(jobs, t_s, njobs, &hi, &li, NULL);
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
    if (load(&s, L, tl, 0.3, NULL, NULL, NULL, &cold, &out->stamp_cold) < 0) goto done;
    if (load(&s, H, th, 1.0, tt, tf, &n, &hot, &out->stamp_hot) < 0) goto done;
    out->clock_cold = cold;
    out->clock_hot = hot;
    out->tau_up = heat_tau(tt, tf, n, cold, hot);
    int nchg;
    double hold = trace_hold(tt, tf, n, &nchg);
    /* the recovery, from the light load's own times: NVML's clock reading updates every
     * ~0.1 s, too slowly to resolve it (on the H200 it read 110 ms where the kernels
     * recover in a few tens) */
    if (recovery(&s, L, tl, 0.6, tt, tf, NULL, &n) < 0) goto done;
    /* one trace of a few hundred ms is noisy (two calibs of one card read 36 and 12 ms): the
     * heater and the recovery again, the median of SUSTAIN_TAU_TRACES */
    double downs[SUSTAIN_TAU_TRACES];
    int nd = 0;
    for (int r = 0; r < SUSTAIN_TAU_TRACES; r++) {
        double unused;
        if (r > 0 && (load(&s, H, th, 1.0, NULL, NULL, NULL, &unused, NULL) < 0
                      || recovery(&s, L, tl, 0.6, tt, tf, NULL, &n) < 0))
            goto done;
        double td = n > 8 ? heat_tau(tt, tf, n, tf[0], tail_mean(tt, tf, n)) : NAN;
        if (isfinite(td)) downs[nd++] = td;
    }
    out->ntau_down = nd;
    out->tau_down = median(downs, nd);   /* sorts: downs[0] the fastest */
    if (nd) out->tau_down_range[0] = downs[0], out->tau_down_range[1] = downs[nd - 1];
    if (progress)
        fprintf(progress, "calib: sustained load: %.0f MHz under a light load, %.0f MHz under the heater "
                "(the clock falls in %.0f ms; the light load's time recovers in %.0f ms, the median of %d of %d traces: "
                "%.0f .. %.0f ms)\n", cold, hot, out->tau_up * 1e3, out->tau_down * 1e3, nd, SUSTAIN_TAU_TRACES,
                out->tau_down_range[0] * 1e3, out->tau_down_range[1] * 1e3);
    if (progress && isfinite(out->stamp_cold) && isfinite(out->stamp_hot))
        fprintf(progress, "calib: sustained load: by the SMs' cycle counters over the same spans: %.0f MHz under the light "
                "load, %.0f MHz under the heater (stored as stamp_cold_mhz, stamp_hot_mhz)\n", out->stamp_cold, out->stamp_hot);
    if (progress && isfinite(hold))
        fprintf(progress, "calib: sustained load: NVML's clock reading changed every %.0f ms under the heater (median of "
                "%d changes; printed only)\n", hold * 1e3, nchg - 1);
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
        int p[2], np = pick_probes(jobs, t_s, njobs, l, p);
        double ratio[2], w[2];
        int k = 0;
        for (int q = 0; q < np; q++) {
            const calib_job_t *j = &jobs[p[q]];
            double c, hr, tail;
            if (hot_ratio(&s, L, tl, pre_l, H, th, pre_h, j, t_s[p[q]], &c, &hr) < 0)
                goto done;
            if (load(&s, L, tl, pre_l, NULL, NULL, NULL, &tail, NULL) < 0
                || load(&s, j, t_s[p[q]], own, NULL, NULL, NULL, &tail, NULL) < 0)
                goto done;
            if (!(c > 0) || !isfinite(tail)) continue;
            ratio[k] = hr;
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
        }
    }
    /* the clock against load (5.): each duty after the light load */
    double settle = fmin(1.0, fmax(0.4, 6 * out->tau_up));
    for (int q = 0; q < SUSTAIN_CURVE_N; q++) {
        double want = (q + 1.0) / SUSTAIN_CURVE_N, tail, stamp, *c = out->curve[out->ncurve];
        if (load(&s, L, tl, pre_l, NULL, NULL, NULL, &tail, NULL) < 0
            || duty_load(&s, H, th, L, tl, want, settle, &c[0], &c[1], &c[2], &stamp) < 0)
            goto done;
        if (!isfinite(c[1]) || (out->ncurve && !(c[0] > out->curve[out->ncurve - 1][0]))) continue;
        if (progress && isfinite(stamp))
            fprintf(progress, "calib: sustained load: clock at duty %.2f: %.0f MHz, %.0f W (the SMs' counters: %.0f MHz)\n",
                    c[0], c[1], c[2], stamp);
        else if (progress)
            fprintf(progress, "calib: sustained load: clock at duty %.2f: %.0f MHz, %.0f W\n", c[0], c[1], c[2]);
        out->ncurve++;
    }
    if (layer_probes(&s, jobs, t_s, njobs, L, tl, H, th, pre_l, pre_h, settle, out, progress) < 0) goto done;
    if (elem_probe(&s, jobs, t_s, njobs, L, tl, H, th, pre_l, pre_h, out, progress) < 0) goto done;
    if (gemm_probes(&s, jobs, t_s, njobs, L, tl, H, th, pre_l, pre_h, out, progress) < 0) goto done;
    /* a check of how a step's GEMMs are counted (sim/heat.h: a GEMM loads the card as the
     * heater its FLOP rate's share of the time): GEMMs of several FLOP rates back to back,
     * printed beside the curve at that duty (not stored) */
    if (progress && out->ncurve) {
        int p[STUDY_GEMM_PROBES], np = pick_gemm(jobs, t_s, njobs, H->law, p);
        double hr = 2.0 * H->m * H->n * H->k / th;
        for (int q = 0; q < np; q++) {
            const calib_job_t *j = &jobs[p[q]];
            double u = 2.0 * j->m * j->n * j->k / t_s[p[q]] / hr, d, mhz, w, tail;
            if (load(&s, L, tl, pre_l, NULL, NULL, NULL, &tail, NULL) < 0
                || duty_load(&s, j, t_s[p[q]], L, tl, 1.0, settle, &d, &mhz, &w, NULL) < 0)
                goto done;
            /* the curve's clock at duty u (linear between its points, from (0, cold)) */
            double d0 = 0, f0 = cold, fc = out->curve[out->ncurve - 1][1];
            for (int c = 0; c < out->ncurve; c++) {
                if (u <= out->curve[c][0]) {
                    fc = f0 + (out->curve[c][1] - f0) * (u - d0) / (out->curve[c][0] - d0);
                    break;
                }
                d0 = out->curve[c][0], f0 = out->curve[c][1];
            }
            fprintf(progress, "calib: sustained load: gemm m=%ld n=%ld k=%ld back to back, %.2f of the heater's FLOP rate: "
                    "%.0f MHz, %.0f W (the curve at duty %.2f: %.0f MHz)\n", j->m, j->n, j->k, u, mhz, w, u, fc);
        }
    }
    out->ok = 1;
    rc = 0;
done:
    out->seconds = s.now;
    free(tt);
    return rc;
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

/* The GEMM probes: of the law's points of 50 us .. 20 ms, the slowest and the fastest by
 * FLOP rate and the ones at a third and two thirds of the rates (distinct points).  Indices
 * into jobs in p; returns how many. */
static int pick_gemm(const calib_job_t *jobs, const double *t_s, int njobs, int l, int p[STUDY_GEMM_PROBES])
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
        for (int q = 0; q < STUDY_GEMM_PROBES && n > 0; q++) {
            int c = ix[(int)((double)q * (n - 1) / (STUDY_GEMM_PROBES - 1) + 0.5)], dup = 0;
            for (int r = 0; r < np; r++) dup |= p[r] == c;
            if (!dup) p[np++] = c;
        }
    }
    free(ix);
    free(rate);
    return np;
}

/* One timing of j (already prepared) right after `pre`: 0 a rest of pre_s, 1 the heater for
 * pre_s, 2 the heater a quarter of the time (preparing the heater keeps j's state, calib.h);
 * 3 another job for pre_s, then j prepared again (a GEMM's preparation is no host work to
 * speak of: only GEMMs take this one).  Seconds a run in *sec. */
static int study_one(sus_t *s, const calib_job_t *j, double t_est, int kind, const calib_job_t *pre, double pre_t,
                     double pre_s, double *sec)
{
    int iters = runs_in(5e-4, t_est, 200);
    double tail, tr, sh;
    switch (kind) {
    case 0: s->t->idle(s->t, pre_s); break;
    case 1: if (load(s, pre, pre_t, pre_s, NULL, NULL, NULL, &tail, NULL) < 0) return -1; break;   /* keeps j's state */
    case 2: if (mix(s, pre, pre_t, 0.25, pre_s, &tr, &sh) < 0) return -1; break;
    default: if (load(s, pre, pre_t, pre_s, NULL, NULL, NULL, &tail, NULL) < 0 || s->t->prepare(s->t, j) != 0) return -1;
    }
    if (s->t->run(s->t, j, iters, sec) != 0) return -1;
    s->now += *sec * iters;
    return 0;
}

int calib_preload_study(calib_timer_t *t, const calib_job_t *jobs, const double *t_s, int njobs, int nlaws,
                        FILE *progress)
{
    if (!t->idle || !progress) return 0;
    int hi, li, pi;
    pick_loads(jobs, t_s, njobs, &hi, &li, &pi);
    if (hi < 0) {
        fprintf(progress, "calib: preload study skipped: the grid has no GEMM\n");
        return 0;
    }
    sus_t s = { t, 0 };
    if (nlaws > SUSTAIN_MAX_LAWS) nlaws = SUSTAIN_MAX_LAWS;
    fprintf(progress, "calib: preload study (ms a run; grid | rest 5 ms | rest 100 ms | heater 25%% | heater | light load "
            "| prefill calls):\n");
    for (int l = 0; l < nlaws; l++) {
        int p[STUDY_GEMM_PROBES], np = 0;
        for (int i = 0; i < njobs && !np; i++)
            if (jobs[i].law == l && t_s[i] > 0)
                np = jobs[i].kernel == CK_GEMM ? pick_gemm(jobs, t_s, njobs, l, p) : pick_probes(jobs, t_s, njobs, l, p);
        for (int q = 0; q < np; q++) {
            const calib_job_t *j = &jobs[p[q]];
            double med[6];
            int gemm = j->kernel == CK_GEMM;
            for (int k = 0; k < 6; k++) {
                double v[3];
                med[k] = NAN;
                if (k >= 4 && (!gemm || (k == 4 ? li : pi) < 0)) continue;
                for (int r = 0; r < 3; r++) {
                    if (s.t->prepare(s.t, j) != 0) return -1;
                    int kind = k == 0 || k == 1 ? 0 : k == 2 ? 2 : k == 3 ? 1 : 3;
                    const calib_job_t *pre = k >= 4 ? &jobs[k == 4 ? li : pi] : &jobs[hi];
                    double pre_t = k >= 4 ? t_s[k == 4 ? li : pi] : t_s[hi];
                    if (study_one(&s, j, t_s[p[q]], kind, pre, pre_t, k == 0 ? 0.005 : 0.1, &v[r]) < 0) return -1;
                }
                med[k] = median(v, 3);
            }
            /* the point's first four columns (gemm m n k wb; attention rows q seq_len page; ...) */
            fprintf(progress, "calib: preload: %-26s [%g %g %g %g] %9.4f |", calib_laws(NULL)[l].name, j->x[0], j->x[1],
                    j->x[2], j->x[3], t_s[p[q]] * 1e3);
            for (int k = 0; k < 6; k++) fprintf(progress, " %9.4f", med[k] * 1e3);
            fputc('\n', progress);
        }
    }
    return 0;
}
