/* check_sustain.c: calib's sustained-load probes (calib/sustain.c) against a fake timer
 * whose card has a clock: each job pulls it towards its own settling point (the heater
 * all the way down, the light load not at all) with known time constants, and each
 * job's time grows with the clock's drop by its own known factor.  The probes must
 * recover the clocks, the time constants, and every law's hot and heat. */
#include <check.h>
#include "check_run.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "../calib/sustain.h"

#define F_COLD 1980.0
#define F_HOT 1600.0
#define TAU_UP 0.06
#define TAU_DOWN 0.10

/* The host beside the card: a wall clock that the card's work and the host's own advance.  A
 * run() call queues its runs when the card is free and waits for them (then call_s of host
 * work); a reading of the clock or the power takes read_s; seq_queue() queues a batch behind
 * what the card has queued (queue_s of host work) and seq_wait() waits for the oldest.  While
 * the card waits on the host its load state falls towards 0 (TAU_DOWN), as an idle card's. */
#define F_DEPTH CALIB_SEQ_DEPTH
typedef struct {
    double p;                     /* the card's load state: 0 cold .. 1 the heater's */
    double knee;                  /* the clock falls only for p above it (0: linear in p) */
    double watts;                 /* the power read (0: the timer reads none) */
    int noclock;
    double wall, card_end;        /* the host's clock; when the card's queued work ends */
    double call_s, read_s, queue_s;
    int nq;                       /* batches queued, not waited for: their parts' times and ends */
    int qparts[F_DEPTH];
    double qs[F_DEPTH][CALIB_SEQ_PARTS], qend[F_DEPTH];
    long batches;                 /* batches queued in all */
    double cyc;                   /* the SMs' cycles (MHz x s) up to card_end, idle spans included */
    double span_c, span_t;        /* span_clock's start: the cycles and the card's time then */
    double nvml_scale;            /* the clock reading over the card's clock (0: 1) */
    int first_job;                /* this job's first run after each prepare is first_extra slower */
    double first_extra;           /* (a cold L2 or TLB after another kernel; 0: none) */
    int fresh;
    /* one noisy trace of each time constant (0: none): the recovery TAU_DOWN x down_slow while
     * the card's time is in [down_from, down_until); the compute-bound GEMM's rise TAU_UP x
     * rise_slow over the first of its queued traces (a seq_queue of it alone after other work) */
    double down_slow, down_from, down_until, rise_slow;
    int rise_job, rise_traces, in_rise;
} fake_t;

/* per job: calibrated time, hot (time factor at F_HOT), heat (its own settling point) */
static calib_job_t jobs[16];
static double t_s[16], hot_of[16], heat_of[16];
static int njobs;

static double job_hot(const calib_job_t *j) { return hot_of[j - jobs]; }
static double job_heat(const calib_job_t *j) { return heat_of[j - jobs]; }

static fake_t fk;

/* the clock at load state p: flat up to the knee, then linear down to F_HOT at p = 1 */
static double f_of(double p)
{
    double x = fk.knee > 0 ? (p - fk.knee) / (1 - fk.knee) : p;
    return F_COLD - (x > 0 ? x : 0) * (F_COLD - F_HOT);
}

static int f_prepare(calib_timer_t *t, const calib_job_t *j)
{
    (void)t;
    fk.fresh = fk.first_extra > 0 && j - jobs == fk.first_job;
    return 0;
}

/* one run of j on the card: its time; the load state moves */
static double f_step(fake_t *k, const calib_job_t *j)
{
    double drop = (F_COLD - f_of(k->p)) / (F_COLD - F_HOT);
    double dt = t_s[j - jobs] * (1 + (job_hot(j) - 1) * drop);
    k->cyc += f_of(k->p) * dt;
    double target = job_heat(j);
    double up = TAU_UP, down = TAU_DOWN;
    if (k->rise_slow > 0 && k->in_rise && k->rise_traces == 1 && j - jobs == k->rise_job) up *= k->rise_slow;
    if (k->down_slow > 0 && k->card_end >= k->down_from && k->card_end < k->down_until) down *= k->down_slow;
    double tau = target > k->p ? up : down;
    k->p = target + (k->p - target) * exp(-dt / tau);
    return dt;
}

/* work queued now starts when the card is free; the card idled (and cooled) until then */
static double f_start(fake_t *k)
{
    double start = k->wall > k->card_end ? k->wall : k->card_end;
    if (start > k->card_end) {
        double f0 = f_of(k->p);
        k->p *= exp(-(start - k->card_end) / TAU_DOWN);
        k->cyc += 0.5 * (f0 + f_of(k->p)) * (start - k->card_end);
    }
    return start;
}

static int f_run(calib_timer_t *t, const calib_job_t *j, int iters, double *sec)
{
    fake_t *k = t->impl;
    k->in_rise = 0;
    double start = f_start(k), total = 0;
    for (int i = 0; i < iters; i++) total += f_step(k, j);
    if (k->fresh && j - jobs == k->first_job) total += k->first_extra * t_s[j - jobs];
    k->fresh = 0;
    *sec = total / iters;
    k->card_end = start + total;
    k->wall = k->card_end + k->call_s;
    return 0;
}

static int f_seq_queue(calib_timer_t *t, const calib_job_t *const *js, const int *iters, int nparts, int nlayers)
{
    fake_t *k = t->impl;
    ck_assert(k->nq < F_DEPTH && nparts >= 1 && nparts <= CALIB_SEQ_PARTS && nlayers >= 1
              && nlayers <= CALIB_SEQ_LAYERS);
    if (nparts == 1 && js[0] - jobs == k->rise_job) {
        if (!k->in_rise) k->rise_traces++;
        k->in_rise = 1;
    } else {
        k->in_rise = 0;
    }
    double start = f_start(k), total = 0, *ps = k->qs[k->nq];
    for (int p = 0; p < nparts; p++) ps[p] = 0;
    for (int l = 0; l < nlayers; l++)
        for (int p = 0; p < nparts; p++)
            for (int i = 0; i < iters[p]; i++) {
                double dt = f_step(k, js[p]);
                if (k->fresh && js[p] - jobs == k->first_job) dt += k->first_extra * t_s[js[p] - jobs], k->fresh = 0;
                ps[p] += dt, total += dt;
            }
    k->card_end = start + total;
    k->qparts[k->nq] = nparts;
    k->qend[k->nq++] = k->card_end;
    k->wall += k->queue_s;
    k->batches++;
    return 0;
}

static int f_seq_wait(calib_timer_t *t, double part_s[])
{
    fake_t *k = t->impl;
    ck_assert_int_gt(k->nq, 0);
    for (int p = 0; p < k->qparts[0]; p++) part_s[p] = k->qs[0][p];
    if (k->wall < k->qend[0]) k->wall = k->qend[0];
    k->nq--;
    memmove(k->qs[0], k->qs[1], (size_t)k->nq * sizeof k->qs[0]);
    memmove(k->qend, k->qend + 1, (size_t)k->nq * sizeof *k->qend);
    memmove(k->qparts, k->qparts + 1, (size_t)k->nq * sizeof *k->qparts);
    return 0;
}

static double f_wall(calib_timer_t *t) { return ((fake_t *)t->impl)->wall; }

static int f_clock(calib_timer_t *t, double *mhz)
{
    fake_t *k = t->impl;
    if (k->noclock) return -1;
    k->wall += k->read_s;
    *mhz = f_of(k->p) * (k->nvml_scale > 0 ? k->nvml_scale : 1);
    return 0;
}

/* the stamps: run when the card is free; the span's cycles over its card time */
static int f_span_clock(calib_timer_t *t, int end, double *mhz)
{
    fake_t *k = t->impl;
    double at = f_start(k);
    k->card_end = at;
    k->wall = at + k->read_s;
    if (!end) {
        k->span_c = k->cyc, k->span_t = at;
        return 0;
    }
    if (!(at > k->span_t)) return -1;
    *mhz = (k->cyc - k->span_c) / (at - k->span_t);
    return 0;
}

static int f_power(calib_timer_t *t, double *watts)
{
    fake_t *k = t->impl;
    k->wall += k->read_s;
    *watts = k->watts;
    return k->watts > 0 ? 0 : -1;
}

/* the law names progress lines print (calib.c's table is not linked here) */
const calib_law_spec_t *calib_laws(int *n)
{
    static calib_law_spec_t t[4];
    static const char *const names[4] = { "gemm", "attn.decode_xqa.fp16", "attn.prefill_generic.fp16", "gdn" };
    for (int i = 0; i < 4; i++) t[i].name = names[i];
    if (n) *n = 4;
    return t;
}

static calib_timer_t ft;

static void add(calib_kernel_t kind, int law, double t, double hot, double heat)
{
    calib_job_t *j = &jobs[njobs];
    memset(j, 0, sizeof *j);
    j->kernel = kind;
    j->law = law;
    j->rows = j->q = 1;
    j->m = j->n = j->k = 1;
    t_s[njobs] = t;
    hot_of[njobs] = hot;
    heat_of[njobs] = heat;
    njobs++;
}

static void setup(void)
{
    njobs = 0;
    memset(&fk, 0, sizeof fk);
    fk.p = 0;
    memset(&ft, 0, sizeof ft);
    ft.name = "fake";
    ft.impl = &fk;
    ft.prepare = f_prepare;
    ft.run = f_run;
    ft.clock = f_clock;
    ft.span_clock = f_span_clock;
    ft.power = f_power;
    ft.wall = f_wall;
    ft.seq_queue = f_seq_queue;
    ft.seq_wait = f_seq_wait;
    /* law 0: the GEMMs (the heater is the larger: it settles at F_HOT and, timed at its own
     * clock already, does not slow down further); law 1: XQA decode (the light load and a
     * probe); law 2: a kernel that heats half as much and slows 25% at F_HOT */
    add(CK_GEMM, 0, 1e-3, 1.0, 1.0);
    jobs[0].m = 4096, jobs[0].n = 16480, jobs[0].k = 5120;
    add(CK_GEMM, 0, 3e-4, 1.0, 1.0);
    add(CK_DECODE_XQA, 1, 1.7e-4, 1.15, 0.0);
    jobs[2].seq_len = 240000;
    add(CK_DECODE_XQA, 1, 4e-5, 1.15, 0.0);
    jobs[3].seq_len = 16384;
    add(CK_PREFILL_GENERIC, 2, 2e-3, 1.25, 0.5);
    add(CK_PREFILL_GENERIC, 2, 6e-3, 1.25, 0.5);
    add(CK_PREFILL_GENERIC, 2, 1e-2, 1.25, 0.5);
    /* a compute-bound GEMM (m >= 512, 0.4 ms): it slows as 1 / clock and heats as the heater;
     * law 4, which the law probes (nlaws 4 below) leave alone */
    add(CK_GEMM, 4, 4e-4, F_COLD / F_HOT, 1.0);
    jobs[7].m = 2048, jobs[7].n = 5120, jobs[7].k = 5120;
    /* the elementwise proxy (laws 5, L2-cold, and 6, warm; the law probes leave them alone):
     * memory-bound, no pull on the clock; L2-cold at 256, 1024 and 4096 tokens, 30% slower at
     * F_HOT; warm at 1024 and 4096 tokens, 10% slower */
    static const long cold_tok[3] = { 256, 1024, 4096 }, warm_tok[2] = { 1024, 4096 };
    for (int i = 0; i < 3; i++) {
        add(CK_ELEM, 5, 2e-5 * cold_tok[i] / 1024, 1.3, 0.0);
        jobs[njobs - 1].tokens = cold_tok[i];
        jobs[njobs - 1].cold = 1;
    }
    for (int i = 0; i < 2; i++) {
        add(CK_ELEM, 6, 1.5e-5 * warm_tok[i] / 1024, 1.1, 0.0);
        jobs[njobs - 1].tokens = warm_tok[i];
    }
}

/* calib_sustain over the fake card's jobs (4 laws), its progress log returned (the caller frees it) */
static char *sustain_logged(calib_sustain_t *s)
{
    char *log = NULL;
    size_t logn = 0;
    FILE *pf = open_memstream(&log, &logn);
    ck_assert_ptr_nonnull(pf);
    ck_assert_int_eq(calib_sustain(&ft, jobs, t_s, njobs, 4, s, pf), 0);
    fclose(pf);
    return log;
}

START_TEST(recovers_the_card)
{
    setup();
    calib_sustain_t s;
    FILE *devnull = fopen("/dev/null", "w");
    ck_assert_int_eq(calib_sustain(&ft, jobs, t_s, njobs, 4, &s, devnull), 0);
    fclose(devnull);
    ck_assert_msg(s.ok, "not measured: %s", s.why);
    ck_assert_double_eq_tol(s.clock_cold, F_COLD, 1.0);
    ck_assert_double_eq_tol(s.clock_hot, F_HOT, 2.0);
    /* the same spans by the cycle counters: the card's mean clock over them */
    ck_assert_double_eq_tol(s.stamp_cold, F_COLD, 1.0);
    ck_assert_double_eq_tol(s.stamp_hot, F_HOT, 2.0);
    /* traced in ~2 ms batches: within a batch and a bit */
    ck_assert_double_eq_tol(s.tau_up, TAU_UP, 0.004);
    ck_assert_double_eq_tol(s.tau_down, TAU_DOWN, 0.004);
    /* the fall from the compute-bound GEMM's own times (it slows as 1 / clock): the card's */
    ck_assert_double_eq_tol(s.tau_up_runs, TAU_UP, 0.004);
    /* and from the same runs' clock by the cycle counters */
    ck_assert_double_eq_tol(s.tau_up_stamps, TAU_UP, 0.004);
    /* hot: timed right after 0.12 s of heater (2 tau_up: the clock is 13% short of F_HOT) */
    ck_assert_double_eq_tol(s.hot[1], 1.15, 0.03);
    ck_assert_double_eq_tol(s.hot[2], 1.25, 0.04);
    ck_assert_double_eq_tol(s.hot[0], 1.0, 1e-9);
    ck_assert_double_eq_tol(s.heat[0], 1.0, 0.02);
    ck_assert_double_eq_tol(s.heat[1], 0.0, 0.02);
    ck_assert_double_eq_tol(s.heat[2], 0.5, 0.03);
    ck_assert(isnan(s.hot[3]) && isnan(s.heat[3]));   /* a law with no points */
    /* each priced time constant the median of 3 traces, all of them resolved and alike here */
    ck_assert_int_eq(s.ntau_down, SUSTAIN_TAU_TRACES);
    ck_assert_int_eq(s.ntau_up_runs, SUSTAIN_TAU_TRACES);
    ck_assert_double_eq_tol(s.tau_down_range[0], TAU_DOWN, 0.004);
    ck_assert_double_eq_tol(s.tau_down_range[1], TAU_DOWN, 0.004);
    ck_assert_double_eq_tol(s.tau_up_runs_range[1], TAU_UP, 0.004);
    ck_assert_msg(s.seconds > 2 && s.seconds < 60, "%g s", s.seconds);
}
END_TEST

/* One trace of each time constant three times as slow as the card's (the recovery over the
 * card's first 2.5 s, where the first trace runs; the GEMM's first queued rise): the median of
 * the three traces is the card's, the slow one in the range.  One trace alone would have
 * stored it. */
START_TEST(one_noisy_trace)
{
    setup();
    fk.down_slow = 3, fk.down_from = 0, fk.down_until = 2.5;
    fk.rise_slow = 3, fk.rise_job = 7;
    calib_sustain_t s;
    char *txt = sustain_logged(&s);
    ck_assert_msg(s.ok, "not measured: %s", s.why);
    ck_assert_int_eq(fk.rise_traces > 1, 1);
    ck_assert_double_eq_tol(s.tau_down, TAU_DOWN, 0.004);
    ck_assert_msg(s.tau_down_range[1] > 2 * TAU_DOWN, "slowest recovery %g s", s.tau_down_range[1]);
    ck_assert_double_eq_tol(s.tau_up_runs, TAU_UP, 0.004);
    ck_assert_msg(s.tau_up_runs_range[1] > 2 * TAU_UP, "slowest rise %g s", s.tau_up_runs_range[1]);
    /* both printed: the median and the range */
    const char *dp = "the light load's time recovers in ";
    const char *c = strstr(txt, dp);
    ck_assert_msg(c != NULL, "%s", txt);
    double med, lo, hi;
    int nt, of;
    ck_assert_int_eq(sscanf(c + strlen(dp), "%lf ms, the median of %d of %d traces: %lf .. %lf ms", &med, &nt, &of, &lo,
                            &hi), 5);
    ck_assert(nt == 3 && of == 3);
    ck_assert_double_eq_tol(med, 1e3 * s.tau_down, 0.5);
    ck_assert_double_eq_tol(hi, 1e3 * s.tau_down_range[1], 0.5);
    const char *up = "NVML's trace: ";
    c = strstr(txt, up);
    ck_assert_msg(c != NULL, "%s", txt);
    ck_assert_int_eq(sscanf(c + strlen(up), "%*f ms; the median of %d of %d traces: %lf .. %lf ms", &nt, &of, &lo, &hi),
                     4);
    ck_assert(nt == 3 && of == 3);
    ck_assert_double_eq_tol(hi, 1e3 * s.tau_up_runs_range[1], 0.5);
    free(txt);
}
END_TEST

/* The clock against load: a card whose clock falls only above 40% of the heater's load.
 * Duty-cycled with the light load (a heater run of a ms, then b ms of the light load), the
 * load state settles into a cycle between p0 (after the light load) and p1 (after the
 * heater): p1 = 1 - (1 - p0) e^(-a/TAU_UP), p0 = p1 e^(-b/TAU_DOWN).  The probe reads the
 * clock after each part, so each curve point must be the mean of f_of(p0) and f_of(p1):
 * F_COLD below the knee, then down to F_HOT at duty 1; the duties rise, and the power is
 * read where the timer has it. */
START_TEST(curve_finds_the_knee)
{
    setup();
    fk.knee = 0.4;
    fk.watts = 500;
    calib_sustain_t s;
    char *log = sustain_logged(&s);
    /* the curve's points and the GEMMs back to back (both GEMMs: heat 1, the heater's clock) */
    ck_assert_msg(strstr(log, "clock at duty 0.10: 1980 MHz, 500 W (the SMs' counters: 1980 MHz)") != NULL, "%s", log);
    /* at duty 1 the heater alone: both meters read its clock */
    ck_assert_msg(strstr(log, "clock at duty 1.00: 1600 MHz, 500 W (the SMs' counters: 1600 MHz)") != NULL, "%s", log);
    ck_assert_msg(strstr(log, "gemm m=4096 n=16480 k=5120 back to back, 1.00 of the heater's FLOP rate: 1600 MHz, 500 W")
                  != NULL, "%s", log);
    free(log);
    ck_assert_msg(s.ok, "not measured: %s", s.why);
    ck_assert_double_eq_tol(s.clock_hot, F_HOT, 2.0);
    ck_assert_int_eq(s.ncurve, SUSTAIN_CURVE_N);
    int flat = 0;
    for (int q = 0; q < s.ncurve; q++) {
        double d = s.curve[q][0], want = (q + 1.0) / SUSTAIN_CURVE_N;
        ck_assert_msg(fabs(d - want) < 0.03, "duty %g at point %d", d, q);
        if (q) ck_assert(d > s.curve[q - 1][0]);
        /* the cycle as the probe builds it: 20 ms, or one heater run (1 ms here) */
        double cyc = fmax(0.02, t_s[0] / want), a = lround(cyc * want / t_s[0]) * t_s[0];
        double b = want < 1 ? lround(cyc * (1 - want) / t_s[2]) * t_s[2] : 0;
        double eu = exp(-a / TAU_UP), ed = exp(-b / TAU_DOWN), p0 = (1 - eu) * ed / (1 - eu * ed);
        double p1 = 1 - (1 - p0) * eu, f = b > 0 ? 0.5 * (f_of(p0) + f_of(p1)) : f_of(p1);
        /* within 4% of the drop: the light load runs slower when the clock is down (hot 1.15),
         * a longer light part than b; and the clock falls as the duty rises */
        if (q) ck_assert(s.curve[q][1] <= s.curve[q - 1][1] + 1e-9);
        ck_assert_msg(fabs(s.curve[q][1] - f) < 15, "duty %g: %g MHz, expected %g", d, s.curve[q][1], f);
        ck_assert_double_eq(s.curve[q][2], 500);
        flat += s.curve[q][1] > F_COLD - 1;
    }
    ck_assert_int_ge(flat, 2);      /* duty 0.1 and 0.2 stay below the knee */
    ck_assert_double_eq_tol(s.curve[SUSTAIN_CURVE_N - 1][1], F_HOT, 2.0);
    /* without a power reading: 0 W */
    setup();
    ck_assert_int_eq(calib_sustain(&ft, jobs, t_s, njobs, 4, &s, NULL), 0);
    ck_assert(s.ok && s.ncurve == SUSTAIN_CURVE_N && s.curve[0][2] == 0);
}
END_TEST

/* The cycle counters beside the clock reading: where the reading runs 5% high, the stamps still
 * give the card's clock over the same spans, printed beside it; a timer without stamps prints
 * nothing of them */
START_TEST(stamps_beside_the_reading)
{
    setup();
    fk.nvml_scale = 1.05;
    calib_sustain_t s;
    char *log = sustain_logged(&s);
    ck_assert_msg(s.ok, "not measured: %s", s.why);
    ck_assert_double_eq_tol(s.clock_cold, 1.05 * F_COLD, 1.5);
    ck_assert_double_eq_tol(s.stamp_cold, F_COLD, 1.0);
    ck_assert_double_eq_tol(s.stamp_hot, F_HOT, 2.0);
    ck_assert_msg(strstr(log, "by the SMs' cycle counters over the same spans: 1980 MHz under the light load, 1600 MHz"
                              " under the heater (stored as stamp_cold_mhz, stamp_hot_mhz)") != NULL, "%s", log);
    ck_assert_msg(strstr(log, "clock at duty 1.00: 1681 MHz, 0 W (the SMs' counters: 1601 MHz)") != NULL, "%s", log);
    free(log);
    setup();
    ft.span_clock = NULL;
    log = sustain_logged(&s);
    ck_assert(s.ok && isnan(s.stamp_cold) && isnan(s.stamp_hot) && isnan(s.tau_up_stamps));
    ck_assert_msg(strstr(log, "cycle counters") == NULL, "%s", log);
    free(log);
}
END_TEST

START_TEST(skips_without_a_clock_or_a_drop)
{
    setup();
    calib_sustain_t s;
    fk.noclock = 1;
    ck_assert_int_eq(calib_sustain(&ft, jobs, t_s, njobs, 3, &s, NULL), 0);
    ck_assert(!s.ok && strstr(s.why, "clock"));
    ck_assert(isnan(s.hot[0]));
    /* a card whose clock does not move under the heater */
    setup();
    heat_of[0] = heat_of[1] = 0;
    ck_assert_int_eq(calib_sustain(&ft, jobs, t_s, njobs, 3, &s, NULL), 0);
    ck_assert(!s.ok && strstr(s.why, "did not settle"));
    /* no GEMM in the grid */
    setup();
    t_s[0] = t_s[1] = t_s[7] = NAN;
    ck_assert_int_eq(calib_sustain(&ft, jobs, t_s, njobs, 3, &s, NULL), 0);
    ck_assert(!s.ok && strstr(s.why, "GEMM"));
}
END_TEST

/* A kernel's own GEMM point (calib_job_t.kpoint: cuBLAS's pick over a few m that no grid point
 * runs, often far under the shape's FLOP rate) is no compute-bound probe: a point of one at
 * 0.4 ms with more FLOPs than the grid's, which a tie would pick, hardly slowing with the
 * clock, is passed over for the grid's GEMM. */
START_TEST(a_kernel_point_is_no_probe)
{
    setup();
    add(CK_GEMM, 4, 4e-4, 1.05, 0.3);
    jobs[njobs - 1].m = 2100, jobs[njobs - 1].n = 5120, jobs[njobs - 1].k = 5120;
    jobs[njobs - 1].kpoint = 1;
    calib_sustain_t s;
    char *log = sustain_logged(&s);
    ck_assert_msg(s.ok, "not measured: %s", s.why);
    ck_assert_msg(strstr(log, "compute-bound gemm m=2048 n=5120 k=5120 hot 1.2") != NULL, "%s", log);
    free(log);
    ck_assert(s.has_chot && s.chot[0] == 2048);
    ck_assert_double_eq_tol(s.chot[3], 1 + (F_COLD / F_HOT - 1) * 0.98, 0.01);
    /* the same point as a grid point: the tie's larger FLOP count picks it */
    setup();
    add(CK_GEMM, 4, 4e-4, 1.05, 0.3);
    jobs[njobs - 1].m = 2100, jobs[njobs - 1].n = 5120, jobs[njobs - 1].k = 5120;
    log = sustain_logged(&s);
    ck_assert_msg(s.ok, "not measured: %s", s.why);
    free(log);
    ck_assert(s.has_chot && s.chot[0] == 2100);
    ck_assert_double_eq_tol(s.chot[3], 1.05, 0.01);
}
END_TEST

/* The compute-bound GEMM's hot and the layer-interleaved load (sustain.h 6. and 7.): the
 * GEMM of m >= 512 nearest 0.4 ms timed after the heater (4 time constants: 98% of the way
 * down) over after the light load; then layers of it and the XQA row nearest 0.3 ms.  In a
 * layer (~1 ms, far under the time constants) the load state settles where the GEMM's pull
 * up balances the decode's pull down: p = (a / TAU_UP) / (a / TAU_UP + b / TAU_DOWN), a and b
 * the parts' times as they ran; the clock f_of(p), each part's time 1 + (its hot - 1) p of
 * its cold time.  The fake card has no memory of how its load alternates, so the 20 ms
 * cycles settle near the same clock. */
START_TEST(layer_probes_recover_the_card)
{
    setup();
    fk.watts = 500;
    calib_sustain_t s;
    char *log = sustain_logged(&s);
    ck_assert_msg(s.ok, "not measured: %s", s.why);
    ck_assert_msg(strstr(log, "compute-bound gemm m=2048 n=5120 k=5120 hot 1.2") != NULL, "%s", log);
    free(log);
    ck_assert(s.has_chot);
    ck_assert(s.chot[0] == 2048 && s.chot[1] == 5120 && s.chot[2] == 5120);
    ck_assert_double_eq_tol(s.chot[3], 1 + (F_COLD / F_HOT - 1) * 0.98, 0.01);
    ck_assert_int_eq(s.ninter, SUSTAIN_INTER_N);
    for (int q = 0; q < s.ninter; q++) {
        const double *r = s.inter[q];
        double want = q % 3 == 0 ? 0.25 : q % 3 == 1 ? 0.5 : 0.75;
        ck_assert_msg(fabs(r[0] - want) < 0.04, "row %d: share %g", q, r[0]);
        if (q < 3) ck_assert_msg(r[1] >= 0.5 && r[1] <= 2.0, "row %d: a layer of %g ms", q, r[1]);
        else ck_assert_msg(fabs(r[1] - 20) < 1, "row %d: a cycle of %g ms", q, r[1]);
        ck_assert_double_eq(r[3], 500);
        double a = r[0] * r[1] * r[4], b = (1 - r[0]) * r[1] * r[5];
        double p = (a / TAU_UP) / (a / TAU_UP + b / TAU_DOWN);
        /* a layer: within 2% of the drop (read at a layer's end, after its decode part: the state
         * swings ~1% over a 1.6 ms layer); a 20 ms cycle swings it more, within 5% */
        ck_assert_msg(fabs(r[2] - f_of(p)) < (q < 3 ? 8 : 19), "row %d: %g MHz, expected %g", q, r[2], f_of(p));
        ck_assert_msg(fabs(r[4] - (1 + (F_COLD / F_HOT - 1) * p)) < (q < 3 ? 0.01 : 0.03), "row %d: gemm x%g, p %g", q,
                      r[4], p);
        ck_assert_msg(fabs(r[5] - (1 + 0.15 * p)) < (q < 3 ? 0.01 : 0.03), "row %d: decode x%g, p %g", q, r[5], p);
        if (q % 3) ck_assert(r[2] < s.inter[q - 1][2]);   /* more GEMM, a lower clock */
    }
    /* no GEMM of m >= 512 at 0.1 .. 1 ms (the heater, 1 ms, is past it): the rest is
     * measured, these two are not */
    setup();
    jobs[7].m = 256;
    ck_assert_int_eq(calib_sustain(&ft, jobs, t_s, njobs, 4, &s, NULL), 0);
    ck_assert(s.ok && !s.has_chot && s.ninter == 0 && s.ncurve == SUSTAIN_CURVE_N);
}
END_TEST

/* The elementwise proxy at a serving budget (sustain.h 8.): of the L2-cold points of 512 tokens
 * or more, the one nearest 2048 by ratio (1024 and 4096 as near: the larger), timed after the
 * heater (4 time constants: 98% of the way down) over after the light load -> 1 + 0.3 x 0.98;
 * the warm point of the same tokens printed beside it, not stored; no L2-cold point of 512
 * tokens or more: not measured, said in the log, the rest measured as before. */
START_TEST(elementwise_probe_at_a_serving_budget)
{
    setup();
    calib_sustain_t s;
    char *txt = sustain_logged(&s);
    ck_assert_msg(s.ok, "not measured: %s", s.why);
    ck_assert(s.has_ehot && s.ehot[0] == 4096);
    ck_assert_double_eq_tol(s.ehot[1], 1 + 0.3 * 0.98, 0.01);
    const char *cp = "elementwise proxy L2-cold, 4096 tokens, ", *wp = "elementwise proxy warm, 4096 tokens, ";
    const char *c = strstr(txt, cp);
    ck_assert_msg(c != NULL, "%s", txt);
    double ms, hot, sx;
    ck_assert_int_eq(sscanf(c + strlen(cp), "%lf ms: hot %lf (s %lf", &ms, &hot, &sx), 3);
    ck_assert_double_eq_tol(ms, 0.08, 0.001);   /* after the light load: its cold time */
    ck_assert_double_eq_tol(hot, s.ehot[1], 1e-3);
    ck_assert_double_eq_tol(sx, log(s.ehot[1]) / log(s.clock_cold / s.clock_hot), 0.01);
    c = strstr(txt, wp);
    ck_assert_msg(c != NULL && strstr(c, "(printed only)") != NULL, "%s", txt);
    ck_assert_int_eq(sscanf(c + strlen(wp), "%lf ms: hot %lf", &ms, &hot), 2);
    ck_assert_double_eq_tol(ms, 0.06, 0.001);
    ck_assert_double_eq_tol(hot, 1 + 0.1 * 0.98, 0.01);
    /* the fall from the compute-bound GEMM's own times, printed beside NVML's trace */
    const char *fp = "compute-bound gemm back to back after the light load: its time rises in ";
    c = strstr(txt, fp);
    ck_assert_msg(c != NULL, "%s", txt);
    double up_runs, up_nvml;
    ck_assert_int_eq(sscanf(c + strlen(fp), "%lf ms (the clock's fall from the kernel's own times; NVML's trace: %lf ms",
                            &up_runs, &up_nvml), 2);
    ck_assert_double_eq_tol(up_runs, 1e3 * s.tau_up_runs, 0.5);
    ck_assert_double_eq_tol(up_nvml, 1e3 * s.tau_up, 0.5);
    free(txt);
    /* a compute-bound GEMM that does not heat the card: its time stays flat, no fall resolved */
    setup();
    heat_of[7] = 0;
    calib_sustain_t s1;
    txt = sustain_logged(&s1);
    ck_assert(s1.ok && s1.has_chot && isnan(s1.tau_up_runs) && isnan(s1.tau_up_stamps));
    const char *tp = "the same gemm in timed calls of ~1 ms, each stamped by the SMs' cycle counters: its time ";
    c = strstr(txt, tp);
    ck_assert_msg(c != NULL && strstr(c, "(no fall resolved; printed only)") != NULL, "%s", txt);
    /* the trace's numbers said: its runs, the first, the fastest early one, the settled mean (all
     * the GEMM's calibrated 0.4 ms: it neither slows nor heats) */
    const char *np = "its time did not settle higher (";
    c = strstr(txt, np);
    ck_assert_msg(c != NULL && strstr(c, "no fall resolved") != NULL, "%s", txt);
    int nruns;
    double first, fastest, settled, after;
    ck_assert_int_eq(sscanf(c + strlen(np), "%d runs; the first %lf ms, the fastest of the first 3 ms %lf ms, the last "
                            "30%% %lf ms; after the light load %lf ms", &nruns, &first, &fastest, &settled, &after), 5);
    ck_assert_int_gt(nruns, 8);
    ck_assert_double_eq_tol(first, 0.4, 0.01);
    ck_assert_double_eq_tol(fastest, 0.4, 0.01);
    ck_assert_double_eq_tol(settled, 0.4, 0.01);
    ck_assert_double_eq_tol(after, 0.4, 0.01);
    free(txt);
    /* the GEMM's first batch after its preparation 20% slow (three runs a batch, the first 60%
     * slower): the trace starts from the fastest of its first 3 ms, and the fall is the card's */
    setup();
    fk.first_job = 7, fk.first_extra = 0.6;
    calib_sustain_t s2;
    txt = sustain_logged(&s2);
    ck_assert(s2.ok && s2.has_chot);
    ck_assert_double_eq_tol(s2.tau_up_runs, TAU_UP, 0.004);
    free(txt);
    /* a host that takes 1 ms a timed call: the card idles 1 ms after each ~1.2 ms batch of timed
     * calls and cools (to about 1727 MHz where the GEMM alone takes it to 1600); the queued
     * trace has no such gaps and reads the card's fall */
    setup();
    fk.call_s = 1e-3;
    calib_sustain_t s3;
    txt = sustain_logged(&s3);
    ck_assert(s3.ok && s3.has_chot);
    ck_assert_double_eq_tol(s3.tau_up_runs, TAU_UP, 0.004);
    c = strstr(txt, tp);
    ck_assert_msg(c != NULL, "%s", txt);
    double g0, g1, c0, c1;
    ck_assert_int_eq(sscanf(c + strlen(tp), "%lf -> %lf ms, the clock %lf -> %lf MHz", &g0, &g1, &c0, &c1), 4);
    ck_assert_msg(c1 > 1700 && c1 < 1760, "%s", txt);
    /* and its fall, a balance of heating and the gaps' cooling, is not the card's */
    ck_assert_msg(s3.tau_up_stamps < TAU_UP - 0.01, "%g", s3.tau_up_stamps);
    free(txt);
    /* the probe's cost: 6 timings of each point, each after 4 time constants of the light load
     * or of the heater (0.4 s, 0.24 s on the fake card), and a batch of the pre-load and a
     * timing past them at most */
    calib_sustain_t s0;
    setup();
    for (int i = 8; i < njobs; i++) t_s[i] = NAN;
    txt = sustain_logged(&s0);
    ck_assert_msg(strstr(txt, "no L2-cold elementwise point of >= 512 tokens") != NULL, "%s", txt);
    free(txt);
    ck_assert(s0.ok && !s0.has_ehot && s0.has_chot && s0.ninter == SUSTAIN_INTER_N);
    double pre = fmin(0.5, fmax(0.1, 4 * s.tau_down)) + fmin(0.5, fmax(0.1, 4 * s.tau_up)), more = s.seconds - s0.seconds;
    ck_assert_msg(more >= 2 * 3 * pre && more < 2 * 3 * pre + 0.06, "%g s more, pre-loads %g s", more, pre);
    /* only the 256-token L2-cold point: none of a serving budget's size */
    setup();
    t_s[9] = t_s[10] = NAN;
    ck_assert_int_eq(calib_sustain(&ft, jobs, t_s, njobs, 4, &s0, NULL), 0);
    ck_assert(s0.ok && !s0.has_ehot);
}
END_TEST

/* The GEMMs across shapes (sustain.h 9.): at each time aim the gemm law's highest and lowest
 * FLOP rate within a factor 1.5 (the heater's law: law 0 here), a kernel's own point passed
 * over, one shape where the rates are close; each timed after the heater (4 time constants:
 * 98% of the way down) over after the light load, twice; the rows by calibrated time. */
START_TEST(gemm_probes_across_shapes)
{
    setup();
    add(CK_GEMM, 0, 1e-4, 1.05, 0.0);          /* an LM-head-like GEMM: few tokens, barely slows */
    jobs[njobs - 1].m = 64, jobs[njobs - 1].n = 4096, jobs[njobs - 1].k = 4096;
    add(CK_GEMM, 0, 1.1e-4, 1.2, 0.0);         /* 15x its FLOP rate at nearly its time */
    jobs[njobs - 1].m = 1024, jobs[njobs - 1].n = 4096, jobs[njobs - 1].k = 4096;
    add(CK_GEMM, 0, 1e-4, 1.0, 0.0);           /* a kernel's own point, faster still: no probe */
    jobs[njobs - 1].m = 2048, jobs[njobs - 1].n = 4096, jobs[njobs - 1].k = 4096;
    jobs[njobs - 1].kpoint = 1;
    calib_sustain_t s;
    char *txt = sustain_logged(&s);
    ck_assert_msg(s.ok, "not measured: %s", s.why);
    /* 0.1 ms: the two shapes; 0.3 ms: the grid's m = n = k = 1 alone; 1 ms: the heater */
    ck_assert_int_eq(s.ngprobe, 4);
    static const double m[4] = { 64, 1024, 1, 4096 }, hot[4] = { 1.05, 1.2, 1.0, 1.0 };
    for (int q = 0; q < 4; q++) {
        ck_assert_msg(s.gprobe[q][0] == m[q], "probe %d: m %g", q, s.gprobe[q][0]);
        if (q) ck_assert(s.gprobe[q][3] > s.gprobe[q - 1][3]);
        for (int c = 4; c < 6; c++)
            ck_assert_msg(fabs(s.gprobe[q][c] - (1 + (hot[q] - 1) * 0.98)) < 0.01, "probe %d: hot %g", q,
                          s.gprobe[q][c]);
    }
    ck_assert_msg(strstr(txt, "gemm m=1024 n=4096 k=4096, 0.1100 ms, ") != NULL && strstr(txt, "(two passes; s ") != NULL,
                  "%s", txt);
    free(txt);
    /* no law-0 GEMM within a factor 1.5 of an aim: none measured, said */
    setup();
    t_s[1] = 7e-3;
    t_s[0] = 1e-2;
    txt = sustain_logged(&s);
    ck_assert(s.ok && s.ngprobe == 0);
    ck_assert_msg(strstr(txt, "no GEMM probes") != NULL, "%s", txt);
    free(txt);
}
END_TEST

/* The layer rows run back to back, the 20 ms cycles a call a part (sustain.h 7.), on a host
 * whose calls cost 60 us and whose readings of the clock and the power 2 ms each (how long an
 * NVML reading takes on the card is not known; the back-to-back rows must not depend on it).
 * The layer rows keep the card busy (duty ~1) and read the clock the host-free rows above
 * read; the 20 ms cycles show what the host's gaps cost (a read of each every cycle: duty
 * exactly the cycle over the cycle and the host's work); the control row -- the 0.5 layer a
 * call a part, as the probe ran layers before -- waits on the host much of the time, reads a
 * cooler card, and is named in the log; and a timer that cannot queue layers back to back
 * measures no layer-scale row. */
START_TEST(layer_rows_keep_the_card_busy)
{
    setup();
    fk.watts = 500;
    fk.call_s = 6e-5, fk.read_s = 2e-3, fk.queue_s = 2e-4;
    calib_sustain_t s;
    char *log = sustain_logged(&s);
    ck_assert_msg(s.ok, "not measured: %s", s.why);
    ck_assert_int_eq(s.ninter, SUSTAIN_INTER_N);
    ck_assert(fk.batches > 0 && fk.nq == 0);
    for (int q = 0; q < s.ninter; q++) {
        const double *r = s.inter[q];
        double a = r[0] * r[1] * r[4], b = (1 - r[0]) * r[1] * r[5];
        if (q < 3) {
            double p = (a / TAU_UP) / (a / TAU_UP + b / TAU_DOWN);
            ck_assert_msg(fabs(r[6] - 1) < 0.01, "row %d: duty %g", q, r[6]);
            ck_assert_msg(fabs(r[2] - f_of(p)) < 8, "row %d: %g MHz, expected %g", q, r[2], f_of(p));
        } else {
            double cyc = a + b;   /* ms: then two calls and a reading of each */
            ck_assert_msg(fabs(r[6] - cyc / (cyc + 2 * fk.call_s * 1e3 + 2 * fk.read_s * 1e3)) < 1e-3,
                          "row %d: duty %g of a %g ms cycle", q, r[6], cyc);
            ck_assert(r[6] < SUSTAIN_DUTY_MIN);
        }
    }
    const char *c = strstr(log, "a call a part (as before; not stored): ");
    ck_assert_msg(c != NULL, "%s", log);
    double mhz, w, gx, dx, duty;
    ck_assert_int_eq(sscanf(c + strlen("a call a part (as before; not stored): "),
                            "%lf MHz, %lf W, gemm x%lf, decode x%lf, duty %lf", &mhz, &w, &gx, &dx, &duty), 5);
    ck_assert_msg(duty < 0.6 && mhz > s.inter[1][2] + 40, "control: duty %g, %g MHz (back to back %g MHz)", duty, mhz,
                  s.inter[1][2]);
    ck_assert_msg(strstr(c, "(below 0.9: the card waited on the host") != NULL, "%s", log);
    ck_assert_msg(strstr(log, "a batch, back to back: ") != NULL, "%s", log);
    free(log);
    /* no back-to-back sequences: the 20 ms cycles only */
    setup();
    ft.seq_queue = NULL;
    log = sustain_logged(&s);
    ck_assert_int_eq(s.ninter, 3);
    for (int q = 0; q < 3; q++) ck_assert(s.inter[q][1] > 10 && fabs(s.inter[q][6] - 1) < 1e-9);
    ck_assert_msg(strstr(log, "no layer-scale rows") != NULL && !strstr(log, "not stored"), "%s", log);
    free(log);
    /* no wall clock: no duty */
    setup();
    ft.wall = NULL;
    ck_assert_int_eq(calib_sustain(&ft, jobs, t_s, njobs, 4, &s, NULL), 0);
    ck_assert_int_eq(s.ninter, SUSTAIN_INTER_N);
    for (int q = 0; q < s.ninter; q++) ck_assert(s.inter[q][6] == 0);
}
END_TEST

static void f_rest(calib_timer_t *t, double seconds)
{
    (void)t, (void)seconds;
}

/* The pre-load study: a row per probe of every law with points, the grid's time first, six
 * columns for a GEMM (the light-load and prefill-call pre-loads), four for the rest. */
START_TEST(preload_study_prints_every_probe)
{
    setup();
    ft.idle = f_rest;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(calib_preload_study(&ft, jobs, t_s, njobs, 4, f), 0);
    fclose(f);
    int rows = 0, gemm = 0, nan = 0;
    for (char *l = strstr(buf, "calib: preload: "); l; l = strstr(l + 1, "calib: preload: ")) {
        rows++;
        gemm += !strncmp(l + 16, "gemm ", 5);
        char *end = strchr(l, '\n');
        for (char *c = l; c < end; c++) nan += !strncmp(c, "nan", 3);
    }
    ck_assert_int_eq(rows, 2 + 2 + 2);     /* two GEMMs (the rates), XQA's two, prefill's two */
    ck_assert_int_eq(gemm, 2);
    ck_assert_int_eq(nan, 4 * 2);          /* the other laws' rows leave the two GEMM columns empty */
    free(buf);
    /* no rest: nothing to study */
    setup();
    ck_assert_int_eq(calib_preload_study(&ft, jobs, t_s, njobs, 4, stderr), 0);
}
END_TEST

int main(void)
{
    const check_test_t tests[] = {CHECK_TEST(recovers_the_card), CHECK_TEST(one_noisy_trace), CHECK_TEST(curve_finds_the_knee), CHECK_TEST(skips_without_a_clock_or_a_drop), CHECK_TEST(stamps_beside_the_reading),
                                  CHECK_TEST(layer_probes_recover_the_card), CHECK_TEST(a_kernel_point_is_no_probe), CHECK_TEST(layer_rows_keep_the_card_busy),
                                  CHECK_TEST(elementwise_probe_at_a_serving_budget), CHECK_TEST(gemm_probes_across_shapes),
                                  CHECK_TEST(preload_study_prints_every_probe)};
    return check_main("sustain", "core", tests, CHECK_N(tests), 60, NULL);
}
