/* check_calib: calib's host logic with no GPU -- grid building, median of repeats, the
 * measuring loop, the driver and the profile it assembles -- against a fake timer whose
 * times come from known laws (through cost_point_features, the simulator's own feature
 * code).  The fitted profile must give the known laws back.  Run from the repo root. */
#include <check.h>
#include "check_run.h"
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <gsl/gsl_errno.h>

#include "../calib/calib.h"
#include "../calib/sustain.h"
#include "attn.h"
#include "attn_split.h"
#include "cost.h"
#include "fit.h"
#include "profile.h"
#include "scenario.h"

static model_t ref_model;
static model_rank_t ref_rank;
/* the fake GPU's SMs and ceilings (fake_describe): what the fit's features see */
/* the fake GPU's facts as the profile calib writes records them (fp8_expand: this build's kernel) */
static const cost_hw_t fake_hw = { .sms = 100, .flops = 500e12, .bw = 3000e9,
                                    .expand_tokens = ATTN_BRIDGE_CTA_TOKENS, .expand_occ = ATTN_BRIDGE_CTAS_PER_SM,
                                    .split_max = ATTN_SPLIT_MAX, .split_min_tiles = ATTN_SPLIT_MIN_TILES,
                                    .split_cost_tiles = ATTN_SPLIT_COST_TILES, .split_occ = 1 };

static void load_model(void)
{
    char err[SCN_ERR_MAX];
    gsl_set_error_handler_off();
    ck_assert_msg(scn_load_model("models/qwen3.8-27b.yaml", &ref_model, err) == 0, "%s", err);
    ck_assert_int_eq(model_rank(&ref_model, 1, &ref_rank), 0);
}

/* The laws the grid holds only where asked for (calib_opts_t varlen, moe_*). */
static int law_gated(const char *name)
{
    return !strcmp(name, "attn.varlen.fp16") || !strcmp(name, "gemm.moe.fp16");
}

/* ---- the fake timer --------------------------------------------------------------- */

typedef struct {
    const model_t *m;
    model_rank_t r;
    double coef[32][PROF_MAX_COEF];   /* per calib law index */
    double noise;                     /* relative, uniform in [-noise, noise] */
    uint64_t rng;
    int skip_kernel;                  /* prepare() says "unsupported" for this kernel (-1 none) */
    int fail_after;                   /* run() fails after this many calls (-1 never) */
    int outlier_every;                /* every n-th timing is 10x slower (0 never) */
    int slow_law, slow_nth;           /* the slow_nth job prepared of calib law slow_law (-1 none)... */
    double slow_factor;               /* ...runs this much slower: its first measurement only, */
    int slow_always;                  /* or every one (a shape that is slow, not a disturbance) */
    int slow_count, slow_now, slow_seen;
    double slow_x[PROF_MAX_COLS];
    int gemm_choices;                 /* the fake library picks GEMM kernels (fake_gemm_pick) */
    int choice_fails;                 /* gemm_choice() fails */
    long choices;                     /* gemm_choice() calls */
    long prepares, runs, launches, setups;
    double busy;                      /* seconds on the card since the last prepare() */
    double last_idle;                 /* idle() since the last prepare(): its seconds, or 0 */
    long idles, idle_missed, idle_wrong; /* idle() calls; jobs after a busy one not rested; bad lengths */
    int retime_prepares;              /* prepare() of the slow point after its first timing... */
    double retime_idle;               /* ...and the rest before the first of them */
    int last_iters;
    long cold_jobs;                   /* prepare() of elementwise.cold jobs */
    int heat_on;                      /* a card with a clock: GEMMs pull the load state heat_p */
    double heat_p;                    /* up, the rest down; the clock and every time follow it */
    double card_s;                    /* seconds on the card in all (the host takes no time: */
    double wall;                      /*   the wall clock is where the card is, once waited for) */
    int seq_n;                        /* seq_queue: batches queued, not waited for, their parts' */
    int seq_parts[CALIB_SEQ_DEPTH];   /*   times and ends on the card */
    double seq_s[CALIB_SEQ_DEPTH][CALIB_SEQ_PARTS], seq_end[CALIB_SEQ_DEPTH];
    long seq_batches;
} fake_t;

/* The fake library's kernel for a GEMM (tile_n, tile_m, splits): like cuBLAS's, not
 * monotone in m -- k split 3 ways for few rows on narrow outputs, 2 ways up to 64 rows,
 * then whole k on wider tiles. */
/* fake_odd: the fake library also picks kernels no grid point runs, as cuBLAS's heuristic
 * does: 384 x 88 at m 577-591 (which runs 1.3x what its tiles say: fake_law), 384 x 72 at m
 * 600-603 (too few m for a point of its own) and 384 x 104 at m 6000-6100 (past
 * CALIB_KERN_POINT_M_MAX) */
static int fake_odd;
#define FAKE_ODD_SLOW 1.3

static void fake_gemm_pick(const calib_job_t *j, double *c)
{
    c[0] = j->n > 30000 ? 256 : 128;
    c[1] = j->m <= 16 ? 16 : j->m <= 64 ? 64 : j->m <= 256 ? 96 : 128;
    c[2] = j->n <= 6144 && j->m <= 64 ? (j->m <= 8 ? 3 : 2) : 1;
    if (fake_odd && j->m >= 577 && j->m <= 591) c[0] = 384, c[1] = 88, c[2] = 1;
    if (fake_odd && j->m >= 600 && j->m <= 603) c[0] = 384, c[1] = 72, c[2] = 1;
    if (fake_odd && j->m >= 6000 && j->m <= 6100) c[0] = 384, c[1] = 104, c[2] = 1;
}

/* The known law of calib law index li on a feature vector (prof_eval: roofline pairs). */
static double known_law(const double *coef, const char *name, const double *feat)
{
    prof_law_t l;
    memset(&l, 0, sizeof l);
    snprintf(l.name, sizeof l.name, "%s", name);
    l.ncoef = cost_law_ncoef(name);
    memcpy(l.coef, coef, sizeof l.coef);
    return prof_eval(&l, feat);
}

static double fake_law(const fake_t *f, const calib_job_t *j)
{
    const calib_law_spec_t *ls = &calib_laws(NULL)[j->law];
    double feat[PROF_MAX_COEF];
    double row[PROF_MAX_COLS] = { 0 };
    memcpy(row, j->x, (size_t)(ls->ncols - 1) * sizeof *row);
    if (j->kernel == CK_GEMM && f->gemm_choices) /* the job's x holds what calib recorded; this is the truth */
        fake_gemm_pick(j, row + 4);
    ck_assert_int_eq(cost_point_features_n(ls->name, row, ls->ncols, f->m, &f->r, &fake_hw, feat), 0);
    double slow = j->kernel == CK_GEMM && f->gemm_choices && row[4] == 384 && row[5] == 88 ? FAKE_ODD_SLOW : 1;
    return slow * known_law(f->coef[j->law], ls->name, feat);
}

static int fake_gemm_choice(calib_timer_t *t, const calib_job_t *j, double choice[3])
{
    fake_t *f = t->impl;
    ck_assert_int_eq(j->kernel, CK_GEMM);
    f->choices++;
    if (f->choice_fails) {
        snprintf(t->err, sizeof t->err, "fake: no heuristic");
        return -1;
    }
    fake_gemm_pick(j, choice);
    return 0;
}

static int fake_setup(calib_timer_t *t, const model_t *m, const model_rank_t *r)
{
    fake_t *f = t->impl;
    f->setups++;
    ck_assert_ptr_eq(m, f->m);
    ck_assert_int_eq(r->q_heads, f->r.q_heads);
    return 0;
}

static int fake_prepare(calib_timer_t *t, const calib_job_t *j)
{
    fake_t *f = t->impl;
    f->prepares++;
    f->slow_now = 0;
    /* calib rests the card after a job that kept it busy (calib.h, CALIB_SETTLE_*) */
    if (f->busy > CALIB_SETTLE_MIN && !(f->last_idle >= fmin(CALIB_SETTLE_FRAC * f->busy, CALIB_SETTLE_MAX) - 1e-12))
        f->idle_missed++;
    if ((int)j->law == f->slow_law) {
        const calib_law_spec_t *ls = &calib_laws(NULL)[j->law];
        size_t nx = (size_t)(ls->ncols - 1) * sizeof(double);
        if (++f->slow_count == f->slow_nth) {
            memcpy(f->slow_x, j->x, nx);
            f->slow_seen = 1;
            f->slow_now = 1;
        } else if (f->slow_seen && !memcmp(f->slow_x, j->x, nx)) {
            if (!f->retime_prepares++)
                f->retime_idle = f->last_idle;
            f->slow_now = f->slow_always;
        }
    }
    f->busy = 0;
    f->last_idle = 0;
    /* the L2-cold elementwise jobs ask the timer for cold runs, at the small counts only */
    if (!strcmp(calib_laws(NULL)[j->law].name, "elementwise.cold")) {
        ck_assert_int_eq(j->kernel, CK_ELEM);
        ck_assert_int_eq(j->cold, 1);
        ck_assert_int_le(j->tokens, CALIB_ELEM_COLD_MAX);
        f->cold_jobs++;
    } else {
        ck_assert_int_eq(j->cold, 0);
    }
    if ((int)j->kernel == f->skip_kernel) {
        snprintf(t->err, sizeof t->err, "fake: not here");
        return 1;
    }
    return 0;
}

static int fake_run(calib_timer_t *t, const calib_job_t *j, int iters, double *sec)
{
    fake_t *f = t->impl;
    if (f->fail_after >= 0 && f->runs >= f->fail_after) {
        snprintf(t->err, sizeof t->err, "fake: launch failed");
        return -1;
    }
    f->runs++;
    f->launches += iters;
    f->last_iters = iters;
    f->rng = f->rng * 6364136223846793005ull + 1442695040888963407ull;
    double u = (double)(f->rng >> 11) * (1.0 / 9007199254740992.0);
    double s = fake_law(f, j) * (1 + f->noise * (2 * u - 1));
    if (f->outlier_every && f->runs % f->outlier_every == 0)
        s *= 10;
    if (f->slow_now)
        s *= f->slow_factor;
    if (f->heat_on) {   /* time constant 50 ms; 15% slower at the heater's clock */
        s *= 1 + 0.15 * f->heat_p;
        double target = j->kernel == CK_GEMM ? 1 : 0;
        f->heat_p = target + (f->heat_p - target) * exp(-s * iters / 0.05);
    }
    *sec = s;
    f->busy += s * iters;
    f->card_s += s * iters;
    f->wall = f->card_s;
    return 0;
}

/* a batch of layers (calib.h's seq_queue): its runs as run() runs them, part by part */
static int fake_seq_queue(calib_timer_t *t, const calib_job_t *const *jobs, const int *iters, int nparts, int nlayers)
{
    fake_t *f = t->impl;
    ck_assert(f->seq_n < CALIB_SEQ_DEPTH && nparts >= 1 && nparts <= CALIB_SEQ_PARTS && nlayers >= 1
              && nlayers <= CALIB_SEQ_LAYERS);
    int slot = (int)((f->seq_n + f->seq_batches) % CALIB_SEQ_DEPTH);
    double *ps = f->seq_s[slot], sec, wall = f->wall;   /* queued: the host does not wait */
    for (int p = 0; p < nparts; p++) ps[p] = 0;
    for (int l = 0; l < nlayers; l++)
        for (int p = 0; p < nparts; p++) {
            if (fake_run(t, jobs[p], iters[p], &sec) != 0) return -1;
            ps[p] += sec * iters[p];
        }
    f->seq_parts[slot] = nparts;
    f->seq_end[slot] = f->card_s;
    f->wall = wall;
    f->seq_n++;
    return 0;
}

static int fake_seq_wait(calib_timer_t *t, double part_s[])
{
    fake_t *f = t->impl;
    ck_assert_int_gt(f->seq_n, 0);
    int slot = (int)(f->seq_batches % CALIB_SEQ_DEPTH);
    for (int p = 0; p < f->seq_parts[slot]; p++) part_s[p] = f->seq_s[slot][p];
    if (f->wall < f->seq_end[slot]) f->wall = f->seq_end[slot];
    f->seq_n--;
    f->seq_batches++;
    return 0;
}

static double fake_wall(calib_timer_t *t) { return ((fake_t *)t->impl)->wall; }

static void fake_idle(calib_timer_t *t, double seconds)
{
    fake_t *f = t->impl;
    f->idles++;
    f->last_idle = seconds;
    if (!(seconds > 0 && seconds <= CALIB_SETTLE_MAX))
        f->idle_wrong++;
}

static int fake_clock(calib_timer_t *t, double *mhz)
{
    fake_t *f = t->impl;
    *mhz = 1980 - 400 * f->heat_p;
    return 0;
}

/* the SMs' counters' clock over a span: the fake card's clock at its end, 7% under NVML's
 * reading (as the counters read under an H100's light load) */
static int fake_span_clock(calib_timer_t *t, int end, double *mhz)
{
    if (!end) return 0;
    fake_clock(t, mhz);
    *mhz *= 0.93;
    return 0;
}

static void fake_describe(calib_timer_t *t, profile_t *p)
{
    (void)t;
    snprintf(p->gpu, sizeof p->gpu, "Fake GPU");
    p->sms = 100;
    p->mem_gib = 80;
    p->mem_bw_gbs = 3000;
    p->peak_fp16_tflops = 500;
    p->sm_clock_mhz = 1500;
    snprintf(p->driver, sizeof p->driver, "fake 1.0");
    snprintf(p->toolkit, sizeof p->toolkit, "none");
}

static void fake_destroy(calib_timer_t *t) { (void)t; }

static fake_t fk;
static calib_timer_t ft;

/* Known laws, plausible magnitudes, every feature contributing somewhere on the grid. */
static void fake_init(void)
{
    memset(&fk, 0, sizeof fk);
    memset(&ft, 0, sizeof ft);
    fake_odd = 0;
    fk.m = &ref_model;
    fk.r = ref_rank;
    fk.rng = 42;
    fk.skip_kernel = -1;
    fk.fail_after = -1;
    fk.slow_law = -1;
    int n;
    const calib_law_spec_t *ls = calib_laws(&n);
    ck_assert_int_le(n, 32);
    for (int i = 0; i < n; i++) {
        const char *nm = ls[i].name;
        double *c = fk.coef[i];
        if (!strncmp(nm, "attn.prefill", 12)) {
            c[0] = 6e-6; c[1] = 2e-9 * (1 + 0.1 * i); c[2] = 6e-8; c[3] = 3e-9;
        } else if (!strncmp(nm, "attn.decode", 11)) {
            c[0] = 8e-6; c[1] = 1.5e-11 * (1 + 0.1 * i); c[2] = 1e-8; c[3] = 4e-9;
            c[4] = 1e-11; c[5] = 2e-8; c[6] = 5e-8; c[7] = 6e-9; c[8] = strstr(nm, "xqa") ? 1.5e-8 : 0;
        } else if (!strcmp(nm, "attn.fp8_bridge")) {
            c[0] = 5e-6; c[1] = 6e-11; c[2] = 4e-8; c[3] = 2e-10;
        } else if (!strcmp(nm, "gemm")) {
            c[0] = 7e-6; c[1] = 1.6e-15; c[2] = 2.5e-13; c[3] = 0.2; c[4] = 2e-6; c[5] = 0.3; c[6] = 6e-13;
            c[7] = 1.2e-14; c[8] = 0.25;
        } else if (!strcmp(nm, "gdn")) {
            c[0] = 1.5e-5; c[1] = 1e-7; c[2] = 3e-6; c[3] = 2e-6; c[4] = 4e-6; c[5] = 5e-7; c[6] = 3e-7;
        } else if (!strcmp(nm, "elementwise")) {
            c[0] = 4e-6; c[1] = 1.5e-8; c[2] = 2e-6; c[3] = 1e-6; c[4] = 3e-6;
        } else if (!strcmp(nm, "elementwise.cold")) {   /* the warm law + a cold pass's DRAM reads */
            c[0] = 6.5e-6; c[1] = 1.6e-8; c[2] = 2e-6; c[3] = 1e-6; c[4] = 3e-6;
        } else if (!strcmp(nm, "attn.varlen.fp16")) {
            c[0] = 5e-6; c[1] = 3e-9; c[2] = 1e-7; c[3] = 2e-9; c[4] = 4e-9;
        } else if (!strcmp(nm, "gemm.moe.fp16")) {
            c[0] = 8e-6; c[1] = 1.5e-15; c[2] = 3e-13; c[3] = 1e-7; c[4] = 0.2; c[5] = 1e-15;
        }
    }
    ft.name = "fake";
    ft.impl = &fk;
    ft.setup = fake_setup;
    ft.prepare = fake_prepare;
    ft.run = fake_run;
    ft.describe = fake_describe;
    ft.gemm_choice = fake_gemm_choice;
    ft.idle = fake_idle;
    fk.gemm_choices = 1;
    ft.destroy = fake_destroy;
}

static void setup_all(void)
{
    load_model();
    fake_init();
}

/* ---- median -------------------------------------------------------------------------- */

START_TEST(median_cases)
{
    double a[] = { 5 }, b[] = { 3, 1, 2 }, c[] = { 4, 1, 3, 2 }, d[] = { 1, 100, 2, 3, 1000 };
    ck_assert_double_eq(calib_median(a, 1), 5);
    ck_assert_double_eq(calib_median(b, 3), 2);
    ck_assert_double_eq(calib_median(c, 4), 2.5);
    ck_assert_double_eq(calib_median(d, 5), 3); /* outliers do not move it */
    ck_assert(isnan(calib_median(a, 0)));
}
END_TEST

/* ---- the grid -------------------------------------------------------------------------- */

static int has_job(const calib_job_t *j, int n, const char *law, int q, long seq_len, int page, int rows)
{
    const calib_law_spec_t *ls = calib_laws(NULL);
    for (int i = 0; i < n; i++)
        if (!strcmp(ls[j[i].law].name, law) && (q < 0 || j[i].q == q) && (seq_len < 0 || j[i].seq_len == seq_len) &&
            (page < 0 || j[i].page == page) && (rows < 0 || j[i].rows == rows))
            return 1;
    return 0;
}

START_TEST(grid_default)
{
    calib_opts_t o;
    calib_job_t *j;
    int n, nl;
    calib_opts_default(&o);
    ck_assert_int_eq(calib_grid_build(&o, &ref_model, &ref_rank, &j, &n), 0);
    const calib_law_spec_t *ls = calib_laws(&nl);
    ck_assert_int_gt(n, 500);
    int per_law[32] = { 0 };
    for (int i = 0; i < n; i++) {
        ck_assert_int_ge(j[i].law, 0);
        ck_assert_int_lt(j[i].law, nl);
        per_law[j[i].law]++;
        ck_assert_int_eq(ls[j[i].law].kernel, j[i].kernel);
        ck_assert_int_eq(ls[j[i].law].fp8, j[i].fp8);
        if (i)
            ck_assert(j[i].est_s >= j[i - 1].est_s); /* cheapest first */
        double feat[PROF_MAX_COEF];
        ck_assert_int_eq(cost_point_features(ls[j[i].law].name, j[i].x, &ref_model, &ref_rank, &fake_hw, feat), 0);
        if (!strncmp(ls[j[i].law].name, "attn.", 5)) {
            ck_assert_int_ge(j[i].seq_len, j[i].q);
            ck_assert_int_ge(j[i].seq_len, 1);
            ck_assert_int_le(j[i].seq_len, 262144);
            ck_assert_double_eq(j[i].x[0], j[i].rows);
            ck_assert_double_eq(j[i].x[1], j[i].q);
            ck_assert_double_eq(j[i].x[2], (double)j[i].seq_len);
            ck_assert_double_eq(j[i].x[3], j[i].page);
        }
        if (j[i].kernel == CK_DECODE_XQA || j[i].kernel == CK_DECODE_SCALAR)
            ck_assert_int_le(j[i].q, 16);
        if (j[i].kernel == CK_PREFILL_FAST)
            ck_assert_int_ge(j[i].q, 32);
        if (j[i].kernel == CK_PREFILL_LOWSMEM)
            ck_assert(j[i].q > 1 && j[i].q < 32);
    }
    for (int l = 0; l < nl; l++)
        if (law_gated(ls[l].name))
            ck_assert_msg(per_law[l] == 0, "%s: %d points without its flag", ls[l].name, per_law[l]);
        else
            ck_assert_msg(per_law[l] >= 8, "%s: %d points", ls[l].name, per_law[l]);
    /* what the issue asks the grid to cover */
    static const int chunk_q[] = { 784, 816, 1568, 2048 };
    for (int k = 0; k < 4; k++) {
        ck_assert(has_job(j, n, "attn.prefill_bm32.fp16", chunk_q[k], 262144, 784, 1));
        ck_assert(has_job(j, n, "attn.prefill_generic.fp16", chunk_q[k], 262144, 816, 1));
    }
    ck_assert(has_job(j, n, "attn.prefill_bm32.fp16", 784, 1024, 1568, 1));
    ck_assert(has_job(j, n, "attn.prefill_generic.fp16", 1, 1024, 784, 1));
    ck_assert(has_job(j, n, "attn.prefill_generic.fp16", 1, 262144, 784, 1));
    ck_assert(has_job(j, n, "attn.prefill_lowsmem.fp16", 5, -1, -1, 1));
    ck_assert(has_job(j, n, "attn.prefill_lowsmem.fp16", 16, -1, -1, 1));
    ck_assert(has_job(j, n, "attn.prefill_generic.fp8", 1, 262144, 1568, 1));
    for (int r = 1; r <= 16; r *= 2) {
        ck_assert(has_job(j, n, "attn.decode_xqa.fp16", 1, 262144, -1, r));
        ck_assert(has_job(j, n, "attn.decode_scalar.fp8", 1, 1024, -1, r));
        ck_assert(has_job(j, n, "attn.decode_xqa.fp8", 5, -1, -1, r));
    }
    ck_assert(has_job(j, n, "attn.fp8_bridge", -1, 262144, -1, 1));
    /* the serving envelope: decode calls of up to 256 requests at short contexts, q 1/3/5 */
    int pg16[5], pg8[5];   /* the engine's KV page at MTP depth K (model_block_size) */
    for (int K = 0; K <= 4; K++) {
        pg16[K] = model_block_size(&ref_model, 1, 2, K);
        pg8[K] = model_block_size(&ref_model, 1, 1, K);
    }
    for (int r = 32; r <= 256; r *= 2) {
        ck_assert(has_job(j, n, "attn.decode_xqa.fp16", 1, 128, pg16[0], r));
        ck_assert(has_job(j, n, "attn.decode_xqa.fp8", 3, 4096, pg8[2], r));
        ck_assert(has_job(j, n, "attn.decode_xqa.fp8", 1, 4096, pg8[2], r));
        ck_assert(has_job(j, n, "attn.decode_scalar.fp16", 5, 2048, pg16[4], r));
    }
    ck_assert(has_job(j, n, "attn.decode_xqa.fp16", 3, 16384, pg16[2], 64));
    ck_assert(has_job(j, n, "attn.decode_xqa.fp16", 5, 2048, pg16[4], 4));
    ck_assert(has_job(j, n, "attn.decode_scalar.fp8", 1, 128, 1568, 1));
    for (int i = 0; i < n; i++)   /* a call's KV held to 1M tokens */
        if ((j[i].kernel == CK_DECODE_XQA || j[i].kernel == CK_DECODE_SCALAR) && j[i].rows > 16)
            ck_assert_int_le((long)j[i].rows * j[i].seq_len, 1L << 20);
    /* the MTP verify rows of requests at spread contexts: every decode law, q 3 and 5 at their
     * depth's page, 8-64 requests over 512-3584 and 2048-14336 keys (64 points), each's
     * features between its requests all at ctx_min and all at seq_len */
    int nspread = 0;
    for (int i = 0; i < n; i++) {
        const calib_law_spec_t *lsi = &ls[j[i].law];
        int dec = j[i].kernel == CK_DECODE_XQA || j[i].kernel == CK_DECODE_SCALAR;
        if (!dec && j[i].kernel != CK_VARLEN) ck_assert_int_eq(j[i].ctx_min, 0);
        if (!dec) continue;
        ck_assert_int_eq(lsi->ncols, ATTN_COL_CTX_MIN + 2);
        ck_assert_double_eq(j[i].x[ATTN_COL_CTX_MIN], (double)j[i].ctx_min);
        if (!j[i].ctx_min) continue;
        nspread++;
        int K = j[i].q - 1;
        ck_assert(K == 2 || K == 4);
        ck_assert_int_eq(j[i].page, model_block_size(&ref_model, 1, j[i].fp8 ? 1 : 2, K));
        ck_assert(j[i].rows >= 8 && j[i].rows <= 64);
        ck_assert((j[i].ctx_min == 512 && j[i].seq_len == 3584) || (j[i].ctx_min == 2048 && j[i].seq_len == 14336));
        double x[PROF_MAX_COLS], fs[PROF_MAX_COEF], flo[PROF_MAX_COEF], fhi[PROF_MAX_COEF];
        memcpy(x, j[i].x, sizeof x);
        ck_assert_int_eq(cost_point_features_n(lsi->name, x, lsi->ncols, &ref_model, &ref_rank, &fake_hw, fs), 0);
        ck_assert_int_eq(cost_point_features_n(lsi->name, x, lsi->ncols - 1, &ref_model, &ref_rank, &fake_hw, fhi), 0);
        x[ATTN_COL_SEQ_LEN] = (double)j[i].ctx_min;
        ck_assert_int_eq(cost_point_features_n(lsi->name, x, lsi->ncols - 1, &ref_model, &ref_rank, &fake_hw, flo), 0);
        ck_assert(fs[DECODE_KV_TOKENS] > flo[DECODE_KV_TOKENS] && fs[DECODE_KV_TOKENS] < fhi[DECODE_KV_TOKENS]);
        ck_assert(fs[DECODE_CTAS] > flo[DECODE_CTAS] && fs[DECODE_CTAS] < fhi[DECODE_CTAS]);
        ck_assert_double_eq(fs[DECODE_PART_TOKENS_MAX], fhi[DECODE_PART_TOKENS_MAX]);
    }
    ck_assert_int_eq(nspread, 4 * 2 * 4 * 2);
    int big_m = 0, many_seqs = 0, big_elem = 0;
    for (int i = 0; i < n; i++) {
        big_m |= j[i].kernel == CK_GEMM && j[i].m == 16384 && j[i].n == ref_rank.mlp_up_n;
        many_seqs |= j[i].kernel == CK_GDN && j[i].seqs == 256;
        big_elem |= j[i].kernel == CK_ELEM && j[i].tokens == 16384;
    }
    ck_assert(big_m && many_seqs && big_elem);
    /* context log-spaced 1K .. 256K: at least 8 distinct values on one series */
    int nctx = 0;
    for (int i = 0; i < n; i++)
        if (j[i].kernel == CK_DECODE_XQA && !j[i].fp8 && j[i].rows == 1 && j[i].q == 1)
            nctx++;
    ck_assert_int_ge(nctx, 8);
    /* GEMMs: every per-rank shape, 1 .. 4096 tokens */
    long shapes[][2] = { { ref_rank.attn_qkv_n, ref_model.hidden }, { ref_model.hidden, ref_rank.attn_o_k },
                         { ref_rank.gdn_in_n, ref_model.hidden },   { ref_model.hidden, ref_rank.gdn_out_k },
                         { ref_rank.mlp_up_n, ref_model.hidden },   { ref_model.hidden, ref_rank.mlp_down_k },
                         { ref_rank.vocab_n, ref_model.hidden } };
    for (int s = 0; s < 7; s++) {
        int lo = 0, hi = 0;
        for (int i = 0; i < n; i++)
            if (j[i].kernel == CK_GEMM && j[i].n == shapes[s][0] && j[i].k == shapes[s][1]) {
                lo |= j[i].m == 1;
                hi |= j[i].m == (ref_rank.vocab_n == shapes[s][0] ? 512 : 4096);
                if (ref_rank.vocab_n == shapes[s][0])
                    ck_assert_int_le(j[i].m, 512); /* sampled positions only */
                ck_assert_double_eq(j[i].x[3], 2);
            }
        ck_assert_msg(lo && hi, "gemm shape %ld x %ld", shapes[s][0], shapes[s][1]);
    }
    /* GDN: tokens = long row + (seqs - 1) one-token rows */
    int gdn = 0;
    for (int i = 0; i < n; i++)
        if (j[i].kernel == CK_GDN) {
            ck_assert_int_ge(j[i].tokens, j[i].seqs);
            ck_assert_double_eq(j[i].x[0], (double)j[i].tokens);
            ck_assert_double_eq(j[i].x[1], j[i].seqs);
            gdn++;
        }
    ck_assert_int_ge(gdn, 20);
    free(j);
}
END_TEST

START_TEST(grid_smoke_and_only)
{
    calib_opts_t o;
    calib_job_t *j;
    int n, nfull, nl;
    calib_opts_default(&o);
    ck_assert_int_eq(calib_grid_build(&o, &ref_model, &ref_rank, &j, &nfull), 0);
    free(j);
    o.smoke = 1;
    ck_assert_int_eq(calib_grid_build(&o, &ref_model, &ref_rank, &j, &n), 0);
    ck_assert_int_lt(n, nfull / 4);
    int seen[32] = { 0 };
    for (int i = 0; i < n; i++)
        seen[j[i].law] = 1;
    const calib_law_spec_t *sl = calib_laws(&nl);
    for (int l = 0; l < nl; l++)
        ck_assert_msg(seen[l] || law_gated(sl[l].name), "smoke grid misses law %d", l);
    free(j);
    o.smoke = 0;
    o.only = "gemm,attn.decode_xqa";
    ck_assert_int_eq(calib_grid_build(&o, &ref_model, &ref_rank, &j, &n), 0);
    ck_assert_int_gt(n, 0);
    for (int i = 0; i < n; i++)
        ck_assert(j[i].kernel == CK_GEMM || j[i].kernel == CK_DECODE_XQA);
    free(j);
}
END_TEST

/* ---- measuring one job ------------------------------------------------------------------ */

static calib_job_t one_job(calib_kernel_t k, double t_target)
{
    calib_opts_t o;
    calib_job_t *jobs, j;
    int n;
    calib_opts_default(&o);
    ck_assert_int_eq(calib_grid_build(&o, &ref_model, &ref_rank, &jobs, &n), 0);
    /* the job of kernel k whose fake time is closest to t_target */
    int best = -1;
    double bd = INFINITY;
    for (int i = 0; i < n; i++)
        if (jobs[i].kernel == k) {
            double d = fabs(log(fake_law(&fk, &jobs[i]) / t_target));
            if (d < bd)
                bd = d, best = i;
        }
    ck_assert_int_ge(best, 0);
    j = jobs[best];
    free(jobs);
    return j;
}

START_TEST(measure_batches_short_runs)
{
    calib_opts_t o;
    calib_opts_default(&o);
    calib_job_t j = one_job(CK_ELEM, 5e-6);
    double truth = fake_law(&fk, &j), t;
    int iters, reps;
    ck_assert(truth < o.min_batch_s);
    ck_assert_int_eq(calib_measure(&ft, &o, &j, &t, &iters, &reps), 0);
    ck_assert_double_eq_tol(t, truth, 1e-15);
    ck_assert_int_eq(reps, o.repeats);
    ck_assert_int_eq(iters, (int)ceil(o.min_batch_s / truth) > o.max_iters ? o.max_iters
                                                                            : (int)ceil(o.min_batch_s / truth));
    ck_assert(iters * truth >= o.min_batch_s || iters == o.max_iters);
    /* warm-up + estimate + repeats timings; one prepare */
    ck_assert_int_eq(fk.runs, 2 + reps);
    ck_assert_int_eq(fk.prepares, 1);
    ck_assert_int_eq(fk.launches, 2 + (long)reps * iters);
}
END_TEST

START_TEST(measure_long_runs)
{
    calib_opts_t o;
    calib_opts_default(&o);
    calib_job_t j = one_job(CK_PREFILL_GENERIC, 1.0); /* the longest */
    double truth = fake_law(&fk, &j), t;
    int iters, reps;
    ck_assert(truth > o.min_batch_s);
    o.long_point_s = truth / 2;
    ck_assert_int_eq(calib_measure(&ft, &o, &j, &t, &iters, &reps), 0);
    ck_assert_int_eq(iters, 1);
    ck_assert_int_eq(reps, o.long_repeats);
    ck_assert_double_eq_tol(t, truth, 1e-12);
}
END_TEST

START_TEST(measure_median_rejects_outliers)
{
    calib_opts_t o;
    calib_opts_default(&o);
    fk.outlier_every = 4; /* runs 4 and 8 of 7 timings: warm-up, estimate, 5 repeats */
    fk.noise = 0.002;
    calib_job_t j = one_job(CK_GEMM, 1e-3);
    double truth = fake_law(&fk, &j), t;
    ck_assert_int_eq(calib_measure(&ft, &o, &j, &t, NULL, NULL), 0);
    ck_assert_msg(fabs(t / truth - 1) < 0.003, "median %g vs %g", t, truth);
}
END_TEST

START_TEST(measure_skip_and_fail)
{
    calib_opts_t o;
    calib_opts_default(&o);
    calib_job_t j = one_job(CK_GDN, 1e-4);
    double t;
    fk.skip_kernel = CK_GDN;
    ck_assert_int_eq(calib_measure(&ft, &o, &j, &t, NULL, NULL), 1);
    ck_assert_int_eq(fk.runs, 0);
    fk.skip_kernel = -1;
    fk.fail_after = 3;
    ck_assert_int_eq(calib_measure(&ft, &o, &j, &t, NULL, NULL), -1);
    ck_assert_str_eq(ft.err, "fake: launch failed");
}
END_TEST

/* ---- the driver end to end ------------------------------------------------------------------ */

/* name is one of the comma-separated names of list */
static int in_list(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *c = list; c && *c; c = strchr(c, ',') ? strchr(c, ',') + 1 : NULL)
        if (!strncmp(c, name, n) && (c[n] == ',' || c[n] == 0))
            return 1;
    return 0;
}

/* every law of the default grid (only: the laws named in it instead) came back */
static void check_recovered_only(const profile_t *p, double tol_pred, double tol_med, const char *only)
{
    int nl;
    const calib_law_spec_t *ls = calib_laws(&nl);
    for (int l = 0; l < nl; l++) {
        if (only ? !in_list(only, ls[l].name) : law_gated(ls[l].name))
            continue; /* not asked for (driver_varlen_moe asks for the gated ones) */
        const prof_law_t *law = prof_find(p, ls[l].name);
        ck_assert_msg(law != NULL, "law %s missing", ls[l].name);
        ck_assert_int_eq(law->ncoef, cost_law_ncoef(ls[l].name));
        ck_assert_int_eq(law->ncols, ls[l].ncols);
        ck_assert_str_eq(law->cols[law->ncols - 1], "t_s");
        ck_assert_int_gt(law->npts, 0);
        ck_assert_msg(law->fit_median_rel >= 0 && law->fit_median_rel < tol_med, "%s: median %g", law->name,
                      law->fit_median_rel);
        ck_assert(strstr(law->provenance, "Fake GPU") != NULL);
        /* the fitted law predicts the known one on every point */
        for (int i = 0; i < law->npts; i++) {
            const double *row = law->pts + (size_t)i * law->ncols;
            double feat[PROF_MAX_COEF];
            ck_assert_int_eq(cost_point_features_n(law->name, row, law->ncols, &ref_model, &ref_rank, &fake_hw, feat), 0);
            double truth = known_law(fk.coef[l], law->name, feat), pred = prof_eval(law, feat);
            ck_assert_msg(fabs(pred / truth - 1) < tol_pred, "%s point %d: %g vs %g", law->name, i, pred, truth);
        }
    }
}

static void check_recovered(const profile_t *p, double tol_pred, double tol_med)
{
    check_recovered_only(p, tol_pred, tol_med, NULL);
}

START_TEST(driver_recovers_known_laws)
{
    calib_opts_t o;
    profile_t p;
    char err[256];
    calib_opts_default(&o);
    o.quiet = 1;
    FILE *prog = tmpfile();
    ck_assert_ptr_nonnull(prog);
    ck_assert_msg(calib_run(&o, &ft, &ref_model, &p, prog, err) == 0, "%s", err);
    fclose(prog);
    ck_assert_int_eq(fk.setups, 1);
    check_recovered(&p, 1e-6, 1e-6);
    /* every job after a busy one began from rest, none rested long */
    ck_assert_int_gt(fk.idles, 0);
    ck_assert_int_lt(fk.idles, fk.prepares);
    ck_assert_int_eq(fk.idle_missed, 0);
    ck_assert_int_eq(fk.idle_wrong, 0);
    /* exact data: coefficients themselves come back where the grid determines them */
    int nl;
    const calib_law_spec_t *ls = calib_laws(&nl);
    for (int l = 0; l < nl; l++)
        if (!strcmp(ls[l].name, "gemm") || !strcmp(ls[l].name, "gdn") || !strcmp(ls[l].name, "elementwise")) {
            const prof_law_t *law = prof_find(&p, ls[l].name);
            for (int c = 0; c < law->ncoef; c++)
                ck_assert_msg(fabs(law->coef[c] / fk.coef[l][c] - 1) < 1e-6, "%s coef %d", law->name, c);
        }
    /* metadata: from the timer and from the run */
    ck_assert_str_eq(p.gpu, "Fake GPU");
    ck_assert_int_eq(p.sms, 100);
    ck_assert_int_eq(p.tp, 1);
    ck_assert_str_eq(p.model, "qwen3.8-27b");
    /* the envelope: the per-rank attention shape the grid measured */
    ck_assert_int_eq(p.has_envelope, 1);
    ck_assert_int_eq(p.env_tp, 1);
    ck_assert_int_eq(p.env_q_heads, ref_rank.q_heads);
    ck_assert_int_eq(p.env_kv_heads, ref_rank.kv_heads);
    ck_assert_int_eq(p.env_head_dim, ref_model.head_dim);
    ck_assert_str_eq(p.driver, "fake 1.0");
    ck_assert_int_eq((int)strlen(p.date), 20);
    ck_assert(p.revision[0] != 0);
    ck_assert(p.calib_seconds >= 0);
    ck_assert(strstr(p.method, "median of 5") != NULL);
    /* the engine's step overhead is not measured: present, zero, said so */
    const prof_law_t *st = prof_find(&p, "step");
    ck_assert_ptr_nonnull(st);
    ck_assert_int_eq(st->npts, 0);
    ck_assert_double_eq(st->coef[0], 0);
    ck_assert(strstr(st->provenance, "not measured") != NULL);
    /* a cost model can be built on it */
    char cerr[COST_ERR_MAX];
    cost_model_t *cm = cost_profile_new(&p, &ref_model, 1, cerr);
    ck_assert_msg(cm != NULL, "%s", cerr);
    cost_free(cm);
    prof_free(&p);
}
END_TEST


/* The second look: one point's first measurement 30% slow (a passing disturbance) is timed
 * twice more and keeps the median of three -- the truth; with --no-recheck it stays slow; a
 * point slow every time it is timed (the shape itself) stays slow too, re-timed or not. */
static int law_index(const char *name)
{
    int n;
    const calib_law_spec_t *ls = calib_laws(&n);
    for (int i = 0; i < n; i++)
        if (!strcmp(ls[i].name, name))
            return i;
    return -1;
}

/* the slow point's stored time over the fake's law, and the method's re-timed count */
static double slow_point_ratio(const profile_t *p, int li, int *retimed)
{
    const calib_law_spec_t *ls = &calib_laws(NULL)[li];
    const prof_law_t *law = prof_find(p, ls->name);
    ck_assert_ptr_nonnull(law);
    const char *m = strstr(p->method, " re-timed on a second look");
    ck_assert_ptr_nonnull(m);
    while (m > p->method && m[-1] != ' ')
        m--;
    *retimed = atoi(m);
    for (int i = 0; i < law->npts; i++) {
        const double *row = law->pts + (size_t)i * law->ncols;
        if (memcmp(row, fk.slow_x, (size_t)(law->ncols - 1) * sizeof(double)))
            continue;
        calib_job_t j;
        memset(&j, 0, sizeof j);
        j.law = li;
        memcpy(j.x, row, (size_t)(law->ncols - 1) * sizeof(double));
        return row[law->ncols - 1] / fake_law(&fk, &j);
    }
    ck_abort_msg("the slow point is not in the profile");
    return 0;
}

START_TEST(driver_second_look)
{
    static const struct { int always, no_recheck; double want; int retimed; } cases[] = {
        {0, 0, 1.0, 1}, {0, 1, 1.3, 0}, {1, 0, 1.3, 1}};
    int li = law_index("attn.prefill_bm32.fp16");
    ck_assert_int_ge(li, 0);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        calib_opts_t o;
        profile_t p;
        char err[256];
        fake_init();
        fk.slow_law = li;
        fk.slow_nth = 40;
        fk.slow_factor = 1.3;
        fk.slow_always = cases[c].always;
        calib_opts_default(&o);
        o.quiet = 1;
        o.no_sustain = 1;
        o.no_recheck = cases[c].no_recheck;
        ck_assert_msg(calib_run(&o, &ft, &ref_model, &p, NULL, err) == 0, "%s", err);
        ck_assert_int_eq(fk.slow_seen, 1);
        int retimed;
        double ratio = slow_point_ratio(&p, li, &retimed);
        ck_assert_msg(fabs(ratio - cases[c].want) < 1e-9, "case %zu: %g", c, ratio);
        ck_assert_int_eq(retimed, cases[c].retimed);
        /* re-timed from rest: the grid ended with its heaviest points */
        if (cases[c].retimed) {
            ck_assert_int_eq(fk.retime_prepares, 2);
            ck_assert_double_eq(fk.retime_idle, CALIB_SETTLE_MAX);
        }
        ck_assert_int_eq(fk.idle_missed, 0);
        /* every other point is exact, so the law comes back wherever the point is not slow */
        if (cases[c].want == 1.0)
            check_recovered(&p, 1e-6, 1e-6);
        prof_free(&p);
    }
}
END_TEST

START_TEST(driver_noisy_round_trip)
{
    calib_opts_t o;
    profile_t p, q;
    char err[256], perr[PROF_ERR_MAX], path[] = "/tmp/check_calib.XXXXXX";
    calib_opts_default(&o);
    o.quiet = 1;
    fk.noise = 0.01;
    fk.outlier_every = 13;
    ck_assert_msg(calib_run(&o, &ft, &ref_model, &p, NULL, err) == 0, "%s", err);
    /* medians of 5 with 1% noise and rare 10x outliers: within 3% everywhere */
    check_recovered(&p, 0.03, 0.02);
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ck_assert_int_eq(prof_save(path, &p), 0);
    ck_assert_msg(prof_load(path, &q, perr) == 0, "%s", perr);
    ck_assert_int_eq(q.nlaws, p.nlaws);
    for (int i = 0; i < p.nlaws; i++) {
        const prof_law_t *b = prof_find(&q, p.laws[i].name);
        ck_assert_ptr_nonnull(b);
        ck_assert_int_eq(b->npts, p.laws[i].npts);
        for (int c = 0; c < b->ncoef; c++)
            ck_assert_double_eq(b->coef[c], p.laws[i].coef[c]);
        ck_assert_double_eq(b->fit_max_rel, p.laws[i].fit_max_rel);
    }
    unlink(path);
    prof_free(&p);
    prof_free(&q);
}
END_TEST

START_TEST(driver_progress_line)
{
    calib_opts_t o;
    profile_t p;
    char err[256], buf[4096];
    calib_opts_default(&o);
    o.smoke = 1;
    FILE *prog = tmpfile();
    ck_assert_ptr_nonnull(prog);
    ck_assert_msg(calib_run(&o, &ft, &ref_model, &p, prog, err) == 0, "%s", err);
    rewind(prog);
    size_t n = fread(buf, 1, sizeof buf - 1, prog);
    buf[n] = 0;
    fclose(prog);
    ck_assert(strstr(buf, "calib: ") != NULL);
    ck_assert(strstr(buf, "100%") != NULL); /* the last point always prints */
    ck_assert(strstr(buf, " ms ") != NULL);
    FILE *tab = tmpfile();
    calib_print_fits(&p, tab);
    rewind(tab);
    n = fread(buf, 1, sizeof buf - 1, tab);
    buf[n] = 0;
    fclose(tab);
    ck_assert(strstr(buf, "median%") != NULL);
    ck_assert(strstr(buf, "attn.decode_xqa.fp16") != NULL);
    ck_assert(strstr(buf, "(not measured)") != NULL); /* step */
    prof_free(&p);
}
END_TEST

START_TEST(driver_skips_unsupported)
{
    calib_opts_t o;
    profile_t p;
    char err[256];
    calib_opts_default(&o);
    o.smoke = 1;
    fk.skip_kernel = CK_DECODE_SCALAR;
    ck_assert_msg(calib_run(&o, &ft, &ref_model, &p, NULL, err) == 0, "%s", err);
    ck_assert_ptr_null(prof_find(&p, "attn.decode_scalar.fp16"));
    ck_assert_ptr_null(prof_find(&p, "attn.decode_scalar.fp8"));
    ck_assert_ptr_nonnull(prof_find(&p, "attn.decode_xqa.fp16"));
    ck_assert(strstr(p.method, "unsupported") != NULL);
    prof_free(&p);
}
END_TEST

START_TEST(driver_error_names_the_job)
{
    calib_opts_t o;
    profile_t p;
    char err[256];
    calib_opts_default(&o);
    o.smoke = 1;
    fk.fail_after = 20;
    ck_assert_int_eq(calib_run(&o, &ft, &ref_model, &p, NULL, err), -1);
    ck_assert_msg(strstr(err, "fake: launch failed") != NULL, "%s", err);
    ck_assert_msg(strstr(err, "=") != NULL, "%s", err); /* the shape is named */
}
END_TEST

/* calib asks the timer which kernel each GEMM runs and records it with the point; a timer
 * that cannot say records 0s (the law's first four terms price those points); a failing
 * question stops the run with the job named */
START_TEST(driver_records_gemm_choice)
{
    calib_opts_t o;
    profile_t p;
    char err[256];
    calib_opts_default(&o);
    o.quiet = 1;
    o.only = "gemm";
    ck_assert_msg(calib_run(&o, &ft, &ref_model, &p, NULL, err) == 0, "%s", err);
    const prof_law_t *g = prof_find(&p, "gemm");
    ck_assert_ptr_nonnull(g);
    ck_assert_int_eq(g->ncols, GEMM_COLS_CFG);
    ck_assert_str_eq(g->cols[4], "tile_n");
    ck_assert_str_eq(g->cols[6], "splits");
    /* asked once a point, and once at every m up to each shape's largest for the kernel ranges */
    long asked = g->npts;
    for (int i = 0; i < g->npts; i++) {
        const double *row = g->pts + (size_t)i * g->ncols;
        int first = 1;
        double mx = 0;
        for (int k = 0; k < g->npts; k++) {
            const double *other = g->pts + (size_t)k * g->ncols;
            if (other[1] != row[1] || other[2] != row[2] || other[3] != row[3]) continue;
            if (k < i) first = 0;
            mx = fmax(mx, other[0]);
        }
        if (first) asked += (long)mx;
    }
    ck_assert_int_eq(fk.choices, asked);
    /* the ranges: every m from 1 to each shape's largest, each range one kernel, the kernel the
     * fake picks at every m in it, and two neighbouring ranges of a shape of other kernels */
    ck_assert_int_gt(g->nkern, 0);
    for (int r = 0; r < g->nkern; r++) {
        const double *v = g->kern + (size_t)r * PROF_KERN_COLS, *pv = r ? v - PROF_KERN_COLS : NULL;
        int same = pv && pv[KERN_N] == v[KERN_N] && pv[KERN_K] == v[KERN_K] && pv[KERN_WB] == v[KERN_WB];
        ck_assert_double_eq(v[KERN_M_LO], same ? pv[KERN_M_HI] + 1 : 1);
        if (same)
            ck_assert(pv[KERN_TILE_N] != v[KERN_TILE_N] || pv[KERN_TILE_M] != v[KERN_TILE_M] ||
                      pv[KERN_SPLITS] != v[KERN_SPLITS]);
        for (double mm = v[KERN_M_LO]; mm <= v[KERN_M_HI]; mm++) {
            calib_job_t j = { .kernel = CK_GEMM, .m = (long)mm, .n = (long)v[KERN_N], .k = (long)v[KERN_K] };
            double want[3];
            fake_gemm_pick(&j, want);
            ck_assert(v[KERN_TILE_N] == want[0] && v[KERN_TILE_M] == want[1] && v[KERN_SPLITS] == want[2]);
        }
    }
    int split = 0, whole = 0;
    for (int i = 0; i < g->npts; i++) {
        const double *row = g->pts + (size_t)i * g->ncols;
        calib_job_t j = { .kernel = CK_GEMM, .m = (long)row[0], .n = (long)row[1], .k = (long)row[2] };
        double want[3];
        fake_gemm_pick(&j, want);
        ck_assert(row[4] == want[0] && row[5] == want[1] && row[6] == want[2]);
        split += row[6] > 1;
        whole += row[6] == 1;
    }
    ck_assert(split > 0 && whole > 0);
    ck_assert_double_lt(g->fit_max_rel, 1e-6);
    prof_free(&p);

    /* no choice known: 0s, and a fake library with no choices fits by the first four terms */
    fk.gemm_choices = 0;
    ft.gemm_choice = NULL;
    ck_assert_msg(calib_run(&o, &ft, &ref_model, &p, NULL, err) == 0, "%s", err);
    g = prof_find(&p, "gemm");
    for (int i = 0; i < g->npts; i++)
        ck_assert(g->pts[(size_t)i * g->ncols + 4] == 0 && g->pts[(size_t)i * g->ncols + 6] == 0);
    for (int c = 4; c < g->ncoef; c++)
        ck_assert_double_eq(g->coef[c], 0);
    ck_assert_double_lt(g->fit_max_rel, 1e-6);
    ck_assert_int_eq(g->nkern, 0);   /* nor any kernel ranges */
    prof_free(&p);

    ft.gemm_choice = fake_gemm_choice;
    fk.choice_fails = 1;
    ck_assert_int_eq(calib_run(&o, &ft, &ref_model, &p, NULL, err), -1);
    ck_assert_msg(strstr(err, "gemm") && strstr(err, "fake: no heuristic"), "%s", err);
}
END_TEST

/* A kernel cuBLAS picks between two grid points and no grid point runs gets a point of its own,
 * at the middle of its widest range up to CALIB_KERN_POINT_M_MAX where that spans at least
 * CALIB_KERN_POINT_MIN_M m; an item at an m of that kernel is then priced from that point.  The
 * fake's 384 x 88 runs 1.3x what its tiles say: without its point the grid's neighbours price
 * it by the law, well under. */
START_TEST(driver_times_each_kernel)
{
    calib_opts_t o;
    profile_t p;
    char err[256];
    calib_opts_default(&o);
    o.quiet = 1;
    fake_odd = 1;
    ck_assert_msg(calib_run(&o, &ft, &ref_model, &p, NULL, err) == 0, "%s", err);
    prof_law_t *g = (prof_law_t *)prof_find(&p, "gemm");
    ck_assert_ptr_nonnull(g);
    int shapes = 0, odd = 0;
    for (int i = 0; i < g->npts; i++) {
        const double *row = g->pts + (size_t)i * g->ncols;
        int first = 1;
        for (int k = 0; k < i && first; k++) {
            const double *o2 = g->pts + (size_t)k * g->ncols;
            first = !(o2[1] == row[1] && o2[2] == row[2] && o2[3] == row[3]);
        }
        double mx = 0;
        for (int k = 0; k < g->npts; k++) {
            const double *o2 = g->pts + (size_t)k * g->ncols;
            if (o2[1] == row[1] && o2[2] == row[2] && o2[3] == row[3]) mx = fmax(mx, o2[0]);
        }
        shapes += first && mx >= 591;   /* a shape whose grid reaches the kernel's m */
        ck_assert(!(row[0] >= 600 && row[0] <= 603) && !(row[0] >= 6000 && row[0] <= 6100));
        if (row[0] >= 577 && row[0] <= 591) {
            ck_assert_double_eq(row[0], 584);
            ck_assert(row[4] == 384 && row[5] == 88 && row[6] == 1);
            odd++;
        }
    }
    ck_assert_int_gt(shapes, 1);
    ck_assert_int_eq(odd, shapes);   /* one a shape that reaches it */
    /* priced: an item at m 581 of a shape within 1% of the fake's time; with the shape's point
     * at 584 left out, the law's tiles at the grid's neighbours price it over 10% under */
    const double *row0 = g->pts;
    calib_job_t j;
    memset(&j, 0, sizeof j);
    j.kernel = CK_GEMM;
    int nl;
    const calib_law_spec_t *ls = calib_laws(&nl);
    j.law = -1;
    for (int i = 0; i < nl; i++)
        if (!strcmp(ls[i].name, "gemm")) j.law = i;
    ck_assert_int_ge(j.law, 0);
    j.m = 581, j.n = (long)row0[1], j.k = (long)row0[2];
    j.x[0] = 581, j.x[1] = row0[1], j.x[2] = row0[2], j.x[3] = row0[3];
    double truth = fake_law(&fk, &j), t[2];
    for (int pass = 0; pass < 2; pass++) {
        if (pass) {   /* that shape's point at 584 dropped */
            int w = 0;
            for (int i = 0; i < g->npts; i++) {
                const double *row = g->pts + (size_t)i * g->ncols;
                if (row[0] == 584 && row[1] == row0[1] && row[2] == row0[2] && row[3] == row0[3]) continue;
                memmove(g->pts + (size_t)w++ * g->ncols, row, (size_t)g->ncols * sizeof *row);
            }
            ck_assert_int_eq(w, g->npts - 1);
            g->npts = w;
        }
        char cerr[COST_ERR_MAX];
        cost_model_t *cm = cost_profile_new(&p, &ref_model, 1, cerr);
        ck_assert_msg(cm != NULL, "%s", cerr);
        cost_item_t it = { .kind = CI_GEMM, .m = 581, .n = j.n, .k = j.k, .wb = (int)row0[3], .count = 1, .part = CP_LINEAR };
        int grid = -1;
        ck_assert_int_eq(cost_profile_item(cm, &it, &t[pass], &grid), 0);
        ck_assert_int_eq(grid, 1);
        cost_free(cm);
    }
    ck_assert_msg(fabs(t[0] / truth - 1) < 0.01, "priced %.4g s, the fake runs %.4g s", t[0], truth);
    ck_assert_msg(t[1] / truth - 1 < -0.10, "without its point %.4g s against %.4g s", t[1], truth);
    prof_free(&p);
}
END_TEST

START_TEST(driver_records_the_split)
{
    /* the profile records the fast path's split rule (kernels/attn_split.h) the kernels run; a
     * forced ATTN_PREFILL_SPLIT would make that a lie: refused */
    calib_opts_t o;
    profile_t p;
    char err[256];
    calib_opts_default(&o);
    o.smoke = 1;
    ck_assert_msg(calib_run(&o, &ft, &ref_model, &p, NULL, err) == 0, "%s", err);
    ck_assert_int_eq(p.split_max, ATTN_SPLIT_MAX);
    ck_assert_int_eq(p.split_min_tiles, ATTN_SPLIT_MIN_TILES);
    ck_assert_int_eq(p.split_cost_tiles, ATTN_SPLIT_COST_TILES);
    ck_assert_int_eq(p.split_ctas_per_sm, 1);
    prof_free(&p);
    setenv("ATTN_PREFILL_SPLIT", "2", 1);
    int rc = calib_run(&o, &ft, &ref_model, &p, NULL, err);
    unsetenv("ATTN_PREFILL_SPLIT");
    ck_assert_int_eq(rc, -1);
    ck_assert_msg(strstr(err, "ATTN_PREFILL_SPLIT=2") != NULL, "%s", err);
}
END_TEST

START_TEST(driver_keep_going)
{
    calib_opts_t o;
    profile_t p;
    char err[256];
    calib_opts_default(&o);
    o.smoke = 1;
    o.keep_going = 1;
    fk.fail_after = 60; /* everything after the first few points fails: 8 in a row stop */
    int rc = calib_run(&o, &ft, &ref_model, &p, NULL, err);
    ck_assert_int_eq(rc, 8);
    ck_assert(strstr(p.method, "8 failed") != NULL);
    ck_assert_int_gt(p.nlaws, 1); /* what was measured is kept, fitted */
    for (int i = 0; i < p.nlaws; i++)
        ck_assert(p.laws[i].npts == 0 || p.laws[i].fit_median_rel >= 0);
    prof_free(&p);
}
END_TEST

START_TEST(driver_budget_cuts)
{
    calib_opts_t o;
    profile_t p;
    char err[256];
    calib_opts_default(&o);
    o.budget_s = 1e-12; /* spent before the first point */
    ck_assert_msg(calib_run(&o, &ft, &ref_model, &p, NULL, err) == 0, "%s", err);
    ck_assert_int_eq(fk.runs, 0);
    ck_assert_ptr_null(prof_find(&p, "gemm"));
    ck_assert(strstr(p.method, "cut by the time budget") != NULL);
    prof_free(&p);
}
END_TEST

/* --points-log: a row per measured point (the fake has no clock: nan in the clock column), a
 * timeline in order; a path it cannot write fails the run before anything is measured. */
START_TEST(driver_points_log)
{
    calib_opts_t o;
    profile_t p;
    char err[256], path[] = "/tmp/pacesim_points_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    calib_opts_default(&o);
    o.quiet = 1;
    o.points_log = path;
    ck_assert_msg(calib_run(&o, &ft, &ref_model, &p, NULL, err) == 0, "%s", err);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char line[512];
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    ck_assert_str_eq(line, "law,point,t_s,sm_clock_mhz,wall_start_s,wall_end_s,busy_s\n");
    int rows = 0, gemm = 0;
    double last_end = -1;
    while (fgets(line, sizeof line, f)) {
        char law[64], pt[200], clk[32];
        double t, w0, w1, busy;
        ck_assert_msg(sscanf(line, "%63[^,],%199[^,],%lf,%31[^,],%lf,%lf,%lf", law, pt, &t, clk, &w0, &w1, &busy) == 7,
                      "row %d: %s", rows, line);
        ck_assert(t > 0 && busy > 0 && w1 >= w0 && w0 >= last_end);
        ck_assert_str_eq(clk, "nan");
        last_end = w1;
        gemm += !strcmp(law, "gemm");
        rows++;
    }
    fclose(f);
    int npts = 0;
    for (int i = 0; i < p.nlaws; i++) npts += p.laws[i].npts;
    ck_assert_int_eq(rows, npts);
    ck_assert_int_eq(gemm, prof_find(&p, "gemm")->npts);
    prof_free(&p);
    unlink(path);
    o.points_log = "/nonexistent-dir/points.csv";
    int runs = fk.runs;
    ck_assert_int_eq(calib_run(&o, &ft, &ref_model, &p, NULL, err), -1);
    ck_assert(strstr(err, "/nonexistent-dir/points.csv") != NULL);
    ck_assert_int_eq(fk.runs, runs);   /* refused before anything was measured */
}
END_TEST

START_TEST(driver_times_elementwise_cold)
{
    /* calib times the elementwise proxy L2-cold at every count of its grid (law
     * elementwise.cold, its own points), and the profile it writes prices a one-token and a
     * 256-token elementwise item each at its cold point */
    calib_opts_t o;
    profile_t p;
    char err[256];
    calib_opts_default(&o);
    o.quiet = 1;
    ck_assert_msg(calib_run(&o, &ft, &ref_model, &p, NULL, err) == 0, "%s", err);
    const prof_law_t *w = prof_find(&p, "elementwise"), *c = prof_find(&p, "elementwise.cold");
    ck_assert_ptr_nonnull(w);
    ck_assert_ptr_nonnull(c);
    static const double want[] = { 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384,
                                   512, 784, 1024, 1568, 2048, 3072, 4096, 5120, 6144, 7168, 8192,
                                   10240, 12288, 14336, 16384 };
    int nwant = (int)(sizeof want / sizeof want[0]);
    ck_assert_int_eq(c->npts, nwant);
    ck_assert_int_eq(fk.cold_jobs, nwant);
    int nl, lc = -1;
    const calib_law_spec_t *ls = calib_laws(&nl);
    for (int l = 0; l < nl; l++)
        if (!strcmp(ls[l].name, "elementwise.cold")) lc = l;
    ck_assert_int_ge(lc, 0);
    double t1 = 0, t256 = 0;
    for (int k = 0; k < nwant; k++) {
        int found = 0;
        for (int i = 0; i < c->npts; i++) {
            const double *v = c->pts + 2 * i;
            if (v[0] != want[k]) continue;
            found = 1;
            double feat[PROF_MAX_COEF];
            ck_assert_int_eq(cost_point_features("elementwise.cold", v, &ref_model, &ref_rank, &fake_hw, feat), 0);
            ck_assert_double_eq_tol(v[1], known_law(fk.coef[lc], "elementwise.cold", feat), 1e-12 * v[1]);
            for (int q = 0; q < w->npts; q++)   /* above the warm point of its count */
                if (w->pts[2 * q] == v[0]) ck_assert(v[1] > w->pts[2 * q + 1]);
            if (v[0] == 1) t1 = v[1];
            if (v[0] == 256) t256 = v[1];
        }
        ck_assert_msg(found, "no cold point at %g tokens", want[k]);
    }
    char cerr[COST_ERR_MAX];
    cost_model_t *cm = cost_profile_new(&p, &ref_model, 1, cerr);
    ck_assert_msg(cm != NULL, "%s", cerr);
    cost_item_t one = { .kind = CI_ELEM, .tokens = 1, .count = 1, .part = CP_ELEM };
    cost_item_t big = { .kind = CI_ELEM, .tokens = 256, .count = 1, .part = CP_ELEM };
    double t;
    int grid;
    ck_assert_int_eq(cost_profile_item(cm, &one, &t, &grid), 0);
    ck_assert_double_eq_tol(t, t1, 1e-12 * t1);
    ck_assert_int_eq(cost_profile_item(cm, &big, &t, &grid), 0);
    ck_assert_double_eq_tol(t, t256, 1e-12 * t256);
    cost_free(cm);
    prof_free(&p);
}
END_TEST

/* ---- refitting a profile from its points (no GPU) ------------------------------------ */

START_TEST(refit_gives_the_fit_back)
{
    calib_opts_t o;
    profile_t p;
    char err[256];
    calib_opts_default(&o);
    o.quiet = 1;
    fk.noise = 0.01;
    ck_assert_msg(calib_run(&o, &ft, &ref_model, &p, NULL, err) == 0, "%s", err);
    profile_t q;
    memset(&q, 0, sizeof q);
    q = p; /* keep the fitted coefficients: copy the laws */
    q.laws = malloc((size_t)p.nlaws * sizeof *q.laws);
    ck_assert_ptr_nonnull(q.laws);
    memcpy(q.laws, p.laws, (size_t)p.nlaws * sizeof *q.laws);
    for (int i = 0; i < p.nlaws; i++) { /* forget the fits */
        memset(p.laws[i].coef, 0, sizeof p.laws[i].coef);
        p.laws[i].fit_median_rel = p.laws[i].fit_max_rel = -1;
    }
    for (int round = 0; round < 2; round++) {
        ck_assert_msg(calib_refit(&p, &ref_model, err) == 0, "%s", err);
        for (int i = 0; i < p.nlaws; i++) {
            const prof_law_t *a = &p.laws[i], *b = &q.laws[i];
            ck_assert_str_eq(a->name, b->name);
            ck_assert_int_eq(a->npts, b->npts);
            ck_assert_ptr_eq(a->pts, b->pts); /* the points are left alone */
            if (a->npts == 0) {
                ck_assert_str_eq(a->provenance, b->provenance);
                continue;
            }
            for (int c = 0; c < PROF_MAX_COEF; c++) /* the same fit, bit for bit */
                ck_assert_double_eq(a->coef[c], b->coef[c]);
            ck_assert_double_eq(a->fit_max_rel, b->fit_max_rel);
            /* said once in the provenance, however often refit */
            const char *note = strstr(a->provenance, "refit from these points");
            ck_assert_ptr_nonnull(note);
            ck_assert_ptr_null(strstr(note + 1, "refit from these points"));
            ck_assert_int_eq(strncmp(a->provenance, b->provenance, strlen(b->provenance)), 0);
        }
    }
    free(q.laws);
    prof_free(&p);
}
END_TEST

static calib_timer_t *no_timer(char err[256])
{
    (void)err;
    ck_abort_msg("calib --refit must not make a timer");
    return NULL;
}

START_TEST(refit_command_line)
{
    calib_opts_t o;
    profile_t p, q;
    char err[256], perr[PROF_ERR_MAX], in[] = "/tmp/check_calib_in.XXXXXX", out[] = "/tmp/check_calib_out.XXXXXX";
    calib_opts_default(&o);
    o.quiet = 1;
    o.smoke = 1;
    ck_assert_msg(calib_run(&o, &ft, &ref_model, &p, NULL, err) == 0, "%s", err);
    int fd = mkstemp(in);
    ck_assert_int_ge(fd, 0);
    close(fd);
    fd = mkstemp(out);
    ck_assert_int_ge(fd, 0);
    close(fd);
    for (int i = 0; i < p.nlaws; i++)
        p.laws[i].coef[0] += 1; /* a stale law */
    prof_law_t *gl = NULL;        /* and one of another revision's form: a coefficient too many */
    for (int i = 0; i < p.nlaws; i++)
        if (!strcmp(p.laws[i].name, "gemm")) gl = &p.laws[i];
    ck_assert_ptr_nonnull(gl);
    gl->coef[gl->ncoef++] = 0.5;
    ck_assert_int_eq(prof_save(in, &p), 0);
    ck_assert_int_eq(prof_load(in, &q, perr), -1); /* refused for pricing... */
    ck_assert_msg(strstr(perr, "calib --refit") != NULL, "%s", perr);
    gl->ncoef--;
    char *argv[] = { "calib", "--refit", in, "--model", "models/qwen3.8-27b.yaml", "--out", out, NULL };
    FILE *keep = stdout;
    stdout = tmpfile(); /* the fit table */
    int rc = calib_main(7, argv, no_timer);
    fclose(stdout);
    stdout = keep;
    ck_assert_int_eq(rc, 0);
    ck_assert_msg(prof_load(out, &q, perr) == 0, "%s", perr);
    ck_assert_str_eq(q.gpu, p.gpu);
    ck_assert_str_eq(q.date, p.date);
    ck_assert_str_eq(q.method, p.method);
    ck_assert_int_eq(q.nlaws, p.nlaws);
    for (int i = 0; i < p.nlaws; i++) {
        const prof_law_t *a = &p.laws[i], *b = &q.laws[i];
        ck_assert_int_eq(b->npts, a->npts);
        ck_assert_int_eq(memcmp(b->pts, a->pts, (size_t)a->npts * a->ncols * sizeof(double)), 0);
        if (a->npts)
            ck_assert_double_eq_tol(b->coef[0], a->coef[0] - 1, 1e-3); /* refit, not copied */
        ck_assert_int_le(b->ncoef, cost_law_ncoef(b->name) > 0 ? cost_law_ncoef(b->name) : PROF_MAX_COEF);
    }
    prof_free(&q);
    /* a profile of another model or TP degree is refused */
    char *argv2[] = { "calib", "--refit", in, "--model", "models/qwen3.8-27b.yaml", "--tp", "2", "--out", out, NULL };
    FILE *keep_err = stderr;
    stderr = tmpfile();
    rc = calib_main(9, argv2, no_timer);
    fclose(stderr);
    stderr = keep_err;
    ck_assert_int_eq(rc, 2);
    unlink(in);
    unlink(out);
    prof_free(&p);
}
END_TEST

START_TEST(refit_residuals)
{
    /* calib --refit IN --residuals N: each law's N worst points after the fit table; without
     * --out nothing is written; --only limits the listing */
    calib_opts_t o;
    profile_t p;
    char err[256], in[] = "/tmp/check_calib_res.XXXXXX";
    calib_opts_default(&o);
    o.quiet = 1;
    o.smoke = 1;
    ck_assert_msg(calib_run(&o, &ft, &ref_model, &p, NULL, err) == 0, "%s", err);
    prof_law_t *el = (prof_law_t *)prof_find(&p, "elementwise");
    ck_assert_ptr_nonnull(el);
    ck_assert_int_ge(el->npts, 3);
    el->pts[1 * el->ncols + el->ncols - 1] *= 1.5; /* one point far off its law */
    int fd = mkstemp(in);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ck_assert_int_eq(prof_save(in, &p), 0);
    struct stat st0, st1;
    ck_assert_int_eq(stat(in, &st0), 0);
    char *argv[] = { "calib", "--refit", in, "--model", "models/qwen3.8-27b.yaml", "--residuals", "2",
                     "--only", "elementwise,gemm", NULL };
    FILE *keep = stdout, *cap = tmpfile();
    ck_assert_ptr_nonnull(cap);
    stdout = cap;
    int rc = calib_main(9, argv, no_timer);
    stdout = keep;
    ck_assert_int_eq(rc, 0);
    static char buf[1 << 16];
    rewind(cap);
    size_t len = fread(buf, 1, sizeof buf - 1, cap);
    buf[len] = 0;
    fclose(cap);
    const char *r = strstr(buf, "residuals:");
    ck_assert_ptr_nonnull(r);
    const char *e = strstr(r, "\nelementwise ("), *g = strstr(r, "\ngemm (");
    ck_assert_ptr_nonnull(e);
    ck_assert_ptr_nonnull(g);
    ck_assert_ptr_null(strstr(r, "\nattn.")); /* --only */
    ck_assert_ptr_nonnull(strstr(e, "measured_us"));
    /* the elementwise point made slow comes first, under the law's columns, as point 1 */
    char want[64];
    snprintf(want, sizeof want, "\n      1 %9.10g ", el->pts[1 * el->ncols]);
    const char *first = strchr(strstr(e, "measured_us"), '\n');
    ck_assert_ptr_nonnull(first);
    ck_assert_msg(!strncmp(first, want, strlen(want)), "first row: %.60s", first);
    ck_assert_ptr_nonnull(strstr(first, "%"));
    /* two rows a law */
    int rows = 0;
    for (const char *c = first; c && !strncmp(c, "\n  ", 3); c = strchr(c + 1, '\n'))
        rows++;
    ck_assert_int_eq(rows, 2);
    ck_assert_int_eq(stat(in, &st1), 0); /* nothing written */
    ck_assert_int_eq(st1.st_size, st0.st_size);
    /* --residuals needs --refit, and a count >= 1 */
    FILE *keep_err = stderr;
    stderr = tmpfile();
    char *bad1[] = { "calib", "--model", "models/qwen3.8-27b.yaml", "--out", in, "--residuals", "3", NULL };
    ck_assert_int_eq(calib_main(7, bad1, no_timer), 2);
    char *bad2[] = { "calib", "--refit", in, "--model", "models/qwen3.8-27b.yaml", "--residuals", "0", NULL };
    ck_assert_int_eq(calib_main(7, bad2, no_timer), 2);
    char *bad3[] = { "calib", "--refit", in, "--model", "models/qwen3.8-27b.yaml", "--residuals", "x", NULL };
    ck_assert_int_eq(calib_main(7, bad3, no_timer), 2);
    char *bad4[] = { "calib", "--refit", in, "--model", "models/qwen3.8-27b.yaml", NULL }; /* no --out */
    ck_assert_int_eq(calib_main(5, bad4, no_timer), 2);
    char *bad5[] = { "calib", "--refit", in, "--model", "models/no-such-model.yaml", "--out", in, NULL };
    ck_assert_int_eq(calib_main(7, bad5, no_timer), 2); /* a missing model is bad input (it exited 1) */
    char *bad6[] = { "calib", "--refit", in, "--model", "models/qwen3.8-27b.yaml", "--bogus", NULL };
    long at = ftell(stderr);
    ck_assert_int_eq(calib_main(6, bad6, no_timer), 2);  /* named as unknown, not as missing its value */
    char said[256] = "";
    fflush(stderr);
    fseek(stderr, at, SEEK_SET);
    ck_assert_ptr_nonnull(fgets(said, sizeof said, stderr));
    ck_assert_msg(strstr(said, "unknown argument \"--bogus\""), "%s", said);
    fclose(stderr);
    stderr = keep_err;
    unlink(in);
    prof_free(&p);
}
END_TEST

/* The varlen and MoE grids: only with their flags, tens of points each, their columns the
 * job's decoded fields, features computable, smoke a handful. */
START_TEST(grid_varlen_moe)
{
    calib_opts_t o;
    calib_job_t *j;
    int n, nl;
    calib_opts_default(&o);
    o.varlen = 1;
    o.moe_experts = 128, o.moe_topk = 8, o.moe_width = 768;
    o.only = "attn.varlen,gemm.moe";
    ck_assert_int_eq(calib_grid_build(&o, &ref_model, &ref_rank, &j, &n), 0);
    const calib_law_spec_t *ls = calib_laws(&nl);
    int nv = 0, nm = 0, skewed = 0, mixed = 0, alone = 0, past_tile = 0, spread = 0, spread_mixed = 0, lone = 0, short_prompts = 0;
    for (int i = 0; i < n; i++) {
        double feat[PROF_MAX_COEF];
        ck_assert_int_eq(cost_point_features(ls[j[i].law].name, j[i].x, &ref_model, &ref_rank, &fake_hw, feat), 0);
        if (j[i].kernel == CK_VARLEN) {
            nv++;
            ck_assert_str_eq(ls[j[i].law].name, "attn.varlen.fp16");
            ck_assert_double_eq(j[i].x[VARLEN_COL_DECODE_ROWS], j[i].rows);
            ck_assert_double_eq(j[i].x[VARLEN_COL_CTX], (double)j[i].seq_len);
            ck_assert_double_eq(j[i].x[VARLEN_COL_CHUNKS], j[i].chunks);
            ck_assert_double_eq(j[i].x[VARLEN_COL_CHUNK_Q], j[i].q);
            ck_assert_double_eq(j[i].x[VARLEN_COL_CHUNK_PREFIX], (double)j[i].prefix);
            ck_assert_double_eq(j[i].x[VARLEN_COL_CTX_MIN], (double)j[i].ctx_min);
            ck_assert((double)j[i].rows * j[i].seq_len <= 2097152); /* at most 2M decode KV tokens */
            if (j[i].ctx_min > 0) {  /* serving batches: 32-256 rows spread over 128-2K keys */
                spread++;
                spread_mixed += j[i].chunks > 0;
                ck_assert(j[i].rows >= 2 && j[i].rows <= 256 && j[i].ctx_min >= 128 && j[i].seq_len <= 2048);
                ck_assert(j[i].ctx_min < j[i].seq_len);
                /* the spread's features: between every row at ctx_min and every row at ctx */
                double lo[PROF_MAX_COEF], hi[PROF_MAX_COEF], x[PROF_MAX_COLS];
                ck_assert_int_eq(cost_point_features_n(ls[j[i].law].name, j[i].x, ls[j[i].law].ncols, &ref_model,
                                                       &ref_rank, &fake_hw, feat), 0);
                memcpy(x, j[i].x, sizeof x);
                x[VARLEN_COL_CTX_MIN] = 0;
                ck_assert_int_eq(cost_point_features_n(ls[j[i].law].name, x, ls[j[i].law].ncols, &ref_model, &ref_rank,
                                                       &fake_hw, hi), 0);
                x[VARLEN_COL_CTX] = (double)j[i].ctx_min;
                ck_assert_int_eq(cost_point_features_n(ls[j[i].law].name, x, ls[j[i].law].ncols, &ref_model, &ref_rank,
                                                       &fake_hw, lo), 0);
                ck_assert(feat[VARLEN_TILES_TOTAL] > lo[VARLEN_TILES_TOTAL] && feat[VARLEN_TILES_TOTAL] < hi[VARLEN_TILES_TOTAL]);
                ck_assert_double_eq(feat[VARLEN_TILES_MAX], hi[VARLEN_TILES_MAX]);
            }
            mixed += j[i].rows > 0 && j[i].chunks > 0;
            alone += j[i].rows == 0;
            lone += j[i].rows == 1 && j[i].chunks == 0;   /* one decode row, its CTAs alone */
            /* a light load's prompts: 1-3 of 200-440 tokens, off the 64-row tile, alone or beside a few rows */
            short_prompts += j[i].chunks >= 1 && j[i].chunks <= 3 && j[i].q < 512 && j[i].q % 64 != 0 && j[i].rows <= 24;
            ck_assert(feat[VARLEN_TILES_TOTAL] > 0 && feat[VARLEN_SM_TILES] >= feat[VARLEN_TILES_MAX]);
        } else {
            ck_assert_int_eq(j[i].kernel, CK_GEMM_MOE);
            nm++;
            ck_assert_double_eq(j[i].x[MOE_COL_EXPERTS], 128);
            ck_assert_double_eq(j[i].x[MOE_COL_TOPK], 8);
            ck_assert(j[i].n == 2 * 768 || j[i].n == ref_model.hidden);
            skewed += j[i].skew > 0;
            ck_assert(feat[MOE_ACTIVE] >= 1 && feat[MOE_ACTIVE] <= 128);
            long cnt[LAW_MOE_MAX_EXPERTS], most = 0;
            ck_assert_int_ge(law_moe_counts(j[i].tokens, 128, 8, j[i].skew, cnt), 1);
            for (int e = 0; e < 128; e++) most = cnt[e] > most ? cnt[e] : most;
            past_tile += j[i].skew == 0 && (most == 65 || most == 96 || most == 129 || most == 192);
        }
    }
    ck_assert_int_eq(nv, 127);
    ck_assert_int_eq(spread, 48 + 14 + 4);
    ck_assert_int_eq(spread_mixed, 36 + 2 + 4);
    ck_assert_int_eq(short_prompts, 5 + 4);
    ck_assert_int_eq(lone, 3);
    ck_assert_int_eq(nm, 74);
    ck_assert_int_eq(past_tile, 8);   /* up and down just past 64 and 128 rows an expert, and between */
    ck_assert_int_ge(mixed, 18);
    ck_assert_int_ge(alone, 4);
    ck_assert_int_gt(skewed, 0);
    free(j);
    o.smoke = 1;
    ck_assert_int_eq(calib_grid_build(&o, &ref_model, &ref_rank, &j, &n), 0);
    ck_assert_int_eq(n, 4 + 4);
    free(j);
    /* --moe's width is per model: TP 2 halves it */
    o.smoke = 0;
    o.tp = 2;
    o.varlen = 0;
    ck_assert_int_eq(calib_grid_build(&o, &ref_model, &ref_rank, &j, &n), 0);
    ck_assert_int_eq(n, 74);
    for (int i = 0; i < n; i++)
        ck_assert(j[i].n == 768 || j[i].k == 384);
    free(j);
}
END_TEST

/* The driver over both new laws recovers the known ones; the command line takes --varlen and
 * --moe E,TOPK,WIDTH and refuses a bad --moe. */
static calib_timer_t *fake_timer(char err[256])
{
    (void)err;
    return &ft;
}

START_TEST(driver_varlen_moe)
{
    calib_opts_t o;
    profile_t p;
    char err[256];
    calib_opts_default(&o);
    o.quiet = 1;
    o.varlen = 1;
    o.moe_experts = 64, o.moe_topk = 6, o.moe_width = 1024;
    o.only = "attn.varlen,gemm.moe";
    ck_assert_msg(calib_run(&o, &ft, &ref_model, &p, NULL, err) == 0, "%s", err);
    ck_assert_ptr_nonnull(prof_find(&p, "attn.varlen.fp16"));
    ck_assert_ptr_nonnull(prof_find(&p, "gemm.moe.fp16"));
    ck_assert_int_eq(prof_find(&p, "attn.varlen.fp16")->npts, 127);
    ck_assert_int_eq(prof_find(&p, "gemm.moe.fp16")->npts, 74);
    check_recovered_only(&p, 1e-6, 1e-6, "attn.varlen.fp16,gemm.moe.fp16");
    /* what calib measured is a profile prof_save writes and prof_load reads back (decode rows,
     * chunks and prefixes of 0, a skew of 0 are points of these grids) */
    char path[] = "/tmp/pacesim-vlmoe-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ck_assert_msg(prof_save(path, &p) == 0, "prof_save: %s", strerror(errno));
    profile_t back;
    char perr[PROF_ERR_MAX];
    ck_assert_msg(prof_load(path, &back, perr) == 0, "%s", perr);
    ck_assert_int_eq(prof_find(&back, "attn.varlen.fp16")->npts, 127);
    ck_assert_int_eq(prof_find(&back, "gemm.moe.fp16")->npts, 74);
    prof_free(&back);
    unlink(path);
    prof_free(&p);
    FILE *keep_err = stderr;
    stderr = tmpfile();
    char *bad[][8] = { { "calib", "--model", "models/qwen3.8-27b.yaml", "--out", "/dev/null", "--moe", "8,9,100", NULL },
                       { "calib", "--model", "models/qwen3.8-27b.yaml", "--out", "/dev/null", "--moe", "8,2", NULL },
                       { "calib", "--model", "models/qwen3.8-27b.yaml", "--out", "/dev/null", "--moe", "8,2,0", NULL } };
    for (int b = 0; b < 3; b++) ck_assert_int_eq(calib_main(7, bad[b], fake_timer), 2);
    char *odd[] = { "calib", "--model", "models/qwen3.8-27b.yaml", "--tp", "2", "--out", "/dev/null", "--moe", "8,2,101", NULL };
    ck_assert_int_eq(calib_main(9, odd, fake_timer), 2); /* tp 2 does not divide the width */
    fclose(stderr);
    stderr = keep_err;
}
END_TEST

/* One profile for two models: calib --merge adds a calibration of another attention shape
 * (head_dim 128, 8 kv heads) to the reference model's: its attention points as a shape of their
 * own, its GEMM shapes that are new; the laws not keyed by shape stay the first's.  An item of
 * the second model is then priced from its own points (the grid), where before it was priced by
 * the laws outside the envelope. */
static int point_priced_from_grid(const profile_t *p, const model_t *m, const prof_law_t *l, const double *row)
{
    char err[COST_ERR_MAX];
    cost_model_t *cm = cost_profile_new(p, m, 1, err);
    ck_assert_msg(cm != NULL, "%s", err);
    model_rank_t r;
    ck_assert_int_eq(model_rank(m, 1, &r), 0);
    int rows = (int)row[ATTN_COL_ROWS];
    kseg_t segs[PROF_MAX_ROWS];
    for (int i = 0; i < rows; i++) segs[i] = (kseg_t){ i, (int)row[ATTN_COL_Q], (long)row[ATTN_COL_SEQ_LEN] };
    kcall_t call = { .nseg = rows, .segs = segs, .page = (int)row[ATTN_COL_PAGE], .route = ROUTE_DECODE_XQA };
    cost_item_t it = { .kind = CI_ATTN, .call = &call, .count = 1, .part = CP_ATTN };
    char name[64];
    ck_assert_str_eq(cost_item_law(&it, name, sizeof name), l->name);
    double t;
    int grid = -1;
    ck_assert_int_eq(cost_profile_item(cm, &it, &t, &grid), 0);
    ck_assert(t > 0);
    cost_free(cm);
    return grid;
}

/* The reference model's smoke calibration into *a and the head_dim-128 model's (laws `only`)
 * into *b, on the same fake card; *hd is that model. */
static void two_calibrations(profile_t *a, profile_t *b, model_t *hd, const char *only)
{
    model_rank_t hr;
    char serr[SCN_ERR_MAX], err[256];
    ck_assert_msg(scn_load_model("models/hybrid-hd128-kv8-fp16.yaml", hd, serr) == 0, "%s", serr);
    ck_assert_int_eq(model_rank(hd, 1, &hr), 0);
    calib_opts_t o;
    calib_opts_default(&o);
    o.quiet = 1;
    o.smoke = 1;
    ck_assert_msg(calib_run(&o, &ft, &ref_model, a, NULL, err) == 0, "%s", err);
    fk.m = hd, fk.r = hr;
    o.only = only;
    ck_assert_msg(calib_run(&o, &ft, hd, b, NULL, err) == 0, "%s", err);
    fk.m = &ref_model, fk.r = ref_rank;
}

START_TEST(merge_adds_another_shape)
{
    model_t hd;
    char err[256];
    profile_t a, b, a0;
    two_calibrations(&a, &b, &hd, "attn.,gemm");
    /* a0: a as it was, to compare with (a copy: a second calibration could be dated a second later) */
    char copy[] = "/tmp/pacesim-merge-a0-XXXXXX";
    int fd = mkstemp(copy);
    ck_assert_int_ge(fd, 0);
    close(fd);
    char perr[PROF_ERR_MAX];
    ck_assert_int_eq(prof_save(copy, &a), 0);
    ck_assert_msg(prof_load(copy, &a0, perr) == 0, "%s", perr);
    unlink(copy);
    const prof_law_t *bx = prof_find(&b, "attn.decode_xqa.fp16");
    ck_assert_ptr_nonnull(bx);
    ck_assert_ptr_null(prof_find(&b, "gdn"));
    const double *row = bx->pts;  /* one of the second model's points */
    ck_assert_double_eq(row[ATTN_COL_KV_HEADS], 8);
    ck_assert_double_eq(row[ATTN_COL_HEAD_DIM], 128);
    ck_assert_int_eq(point_priced_from_grid(&a, &hd, bx, row), 0);
    /* how many of b's GEMM points are of shapes a lacks */
    const prof_law_t *ag = prof_find(&a, "gemm"), *bg = prof_find(&b, "gemm");
    int new_gemm = 0;
    for (int i = 0; i < bg->npts; i++) {
        const double *x = bg->pts + (size_t)i * bg->ncols;
        int seen = 0;
        for (int k = 0; k < ag->npts && !seen; k++) {
            const double *y = ag->pts + (size_t)k * ag->ncols;
            seen = x[GEMM_COL_N] == y[GEMM_COL_N] && x[GEMM_COL_K] == y[GEMM_COL_K] && x[GEMM_COL_WB] == y[GEMM_COL_WB];
        }
        new_gemm += !seen;
    }
    ck_assert_int_gt(new_gemm, 0);                  /* the qkv and o projections of other heads */
    ck_assert_int_lt(new_gemm, bg->npts);           /* and the MLP and lm_head of the same widths */
    int expect = new_gemm;
    for (int i = 0; i < b.nlaws; i++)
        if (!strncmp(b.laws[i].name, "attn.", 5)) expect += b.laws[i].npts;
    char *notes = NULL;
    size_t nn = 0;
    FILE *note = open_memstream(&notes, &nn);
    ck_assert_int_eq(calib_merge(&a, &b, note, err), expect);
    fclose(note);
    ck_assert_msg(strstr(notes, "gemm points of shapes") != NULL, "%s", notes);
    for (int i = 0; i < a.nlaws; i++) {
        const prof_law_t *l = &a.laws[i], *l0 = prof_find(&a0, l->name), *lb = prof_find(&b, l->name);
        ck_assert_ptr_nonnull(l0);
        int added = !strcmp(l->name, "gemm") ? new_gemm : lb && !strncmp(l->name, "attn.", 5) ? lb->npts : 0;
        ck_assert_int_eq(l->npts, l0->npts + added);
        ck_assert_int_eq(memcmp(l->pts, l0->pts, (size_t)l0->npts * l->ncols * sizeof(double)), 0);
        if (added) ck_assert_msg(strstr(l->provenance, "with points of hybrid-hd128-kv8-fp16"), "%s", l->provenance);
        else ck_assert_str_eq(l->provenance, l0->provenance);
    }
    /* the kernel ranges: a's as they were, then b's of the shapes a's did not hold, and every
     * m of every shape still found (a shape's ranges consecutive) */
    const prof_law_t *mg = prof_find(&a, "gemm"), *g0 = prof_find(&a0, "gemm");
    ck_assert_int_gt(g0->nkern, 0);
    ck_assert_int_gt(mg->nkern, g0->nkern);
    ck_assert_int_lt(mg->nkern, g0->nkern + bg->nkern);    /* b's ranges of a's shapes left out */
    ck_assert_int_eq(memcmp(mg->kern, g0->kern, (size_t)g0->nkern * PROF_KERN_COLS * sizeof(double)), 0);
    for (int r = 0; r < bg->nkern; r++) {
        const double *v = bg->kern + (size_t)r * PROF_KERN_COLS;
        ck_assert_ptr_nonnull(prof_kernel_at(mg, v[KERN_M_HI], v[KERN_N], v[KERN_K], v[KERN_WB]));
    }
    ck_assert_int_eq(calib_refit(&a, &ref_model, err), 0);
    ck_assert_int_eq(point_priced_from_grid(&a, &hd, bx, row), 1);
    /* refused, a left as it was: b again (a holds its shapes now), another TP degree, another card */
    int before = prof_find(&a, "gemm")->npts;
    ck_assert_int_eq(calib_merge(&a, &b, NULL, err), -1);
    ck_assert_msg(strstr(err, "merge calibrations of other shapes") != NULL, "%s", err);
    ck_assert_int_eq(prof_find(&a, "gemm")->npts, before);
    int a0_gemm = prof_find(&a0, "gemm")->npts;
    b.tp = 2;
    ck_assert_int_eq(calib_merge(&a0, &b, NULL, err), -1);
    ck_assert_msg(strstr(err, "one card and TP degree") != NULL, "%s", err);
    b.tp = a0.tp;
    snprintf(b.gpu, sizeof b.gpu, "another card");
    err[0] = 0;
    ck_assert_int_eq(calib_merge(&a0, &b, NULL, err), -1);
    ck_assert_msg(strstr(err, "another card") != NULL, "%s", err);
    ck_assert_int_eq(prof_find(&a0, "gemm")->npts, a0_gemm);
    free(notes);
    prof_free(&a);
    prof_free(&a0);
    prof_free(&b);
}
END_TEST

/* calib --refit A --merge B: the merge on the command line; --merge alone, a missing B: exit 2 */
START_TEST(merge_command_line)
{
    model_t hd;
    char perr[PROF_ERR_MAX];
    profile_t a, b, c;
    two_calibrations(&a, &b, &hd, "attn.decode,gemm");
    char pa[] = "/tmp/check_calib_a.XXXXXX", pb[] = "/tmp/check_calib_b.XXXXXX", pc[] = "/tmp/check_calib_c.XXXXXX";
    char *paths[] = { pa, pb, pc };
    for (int i = 0; i < 3; i++) {
        int fd = mkstemp(paths[i]);
        ck_assert_int_ge(fd, 0);
        close(fd);
    }
    ck_assert_int_eq(prof_save(pa, &a), 0);
    ck_assert_int_eq(prof_save(pb, &b), 0);
    char *argv[] = { "calib", "--refit", pa, "--merge", pb, "--model", "models/qwen3.8-27b.yaml", "--out", pc, NULL };
    FILE *keep = stdout, *keep_err = stderr;
    stdout = tmpfile();
    stderr = tmpfile();
    int rc = calib_main(9, argv, no_timer);
    char *alone[] = { "calib", "--merge", pb, "--model", "models/qwen3.8-27b.yaml", "--out", pc, NULL };
    int rc_alone = calib_main(7, alone, no_timer);
    char *missing[] = { "calib", "--refit", pa, "--merge", "/nonexistent/b.yaml", "--model", "models/qwen3.8-27b.yaml",
                        "--out", pc, NULL };
    int rc_missing = calib_main(9, missing, no_timer);
    char *twice[] = { "calib", "--refit", pa, "--merge", pa, "--model", "models/qwen3.8-27b.yaml", "--out", pc, NULL };
    int rc_twice = calib_main(9, twice, no_timer);
    fclose(stdout);
    fclose(stderr);
    stdout = keep, stderr = keep_err;
    ck_assert_int_eq(rc, 0);
    ck_assert_int_eq(rc_alone, 2);
    ck_assert_int_eq(rc_missing, 2);
    ck_assert_int_eq(rc_twice, 2);
    ck_assert_msg(prof_load(pc, &c, perr) == 0, "%s", perr);
    const prof_law_t *cx = prof_find(&c, "attn.decode_xqa.fp16");
    ck_assert_int_eq(cx->npts, prof_find(&a, "attn.decode_xqa.fp16")->npts + prof_find(&b, "attn.decode_xqa.fp16")->npts);
    ck_assert_str_eq(c.model, a.model);
    for (int i = 0; i < 3; i++) unlink(paths[i]);
    prof_free(&a);
    prof_free(&b);
    prof_free(&c);
}
END_TEST

/* The whole grid calib measures on a GPU (every law, the opt-in ones too) is a profile that
 * prof_save writes and prof_load reads back. */
START_TEST(driver_full_grid_saves)
{
    calib_opts_t o;
    profile_t p, back;
    char err[256], perr[PROF_ERR_MAX], path[] = "/tmp/pacesim-full-XXXXXX";
    calib_opts_default(&o);
    o.quiet = 1;
    o.varlen = 1;
    o.moe_experts = 128, o.moe_topk = 8, o.moe_width = 768;
    ck_assert_msg(calib_run(&o, &ft, &ref_model, &p, NULL, err) == 0, "%s", err);
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ck_assert_msg(prof_save(path, &p) == 0, "prof_save: %s", strerror(errno));
    ck_assert_msg(prof_load(path, &back, perr) == 0, "%s", perr);
    ck_assert_int_eq(back.nlaws, p.nlaws);
    prof_free(&back);
    prof_free(&p);
    unlink(path);
}
END_TEST

/* On a card with a clock calib runs the sustained-load probes too and writes what they
 * measured, the recorded-only ones included (a compute-bound GEMM's hot, the layer-interleaved
 * load: calib/sustain.h 6. and 7.), into a profile that loads back with them. */
START_TEST(driver_records_sustained_probes)
{
    calib_opts_t o;
    profile_t p, back;
    char err[256], perr[PROF_ERR_MAX], path[] = "/tmp/pacesim-sus-XXXXXX";
    calib_opts_default(&o);
    o.quiet = 1;
    fk.heat_on = 1;
    ft.clock = fake_clock;
    ft.wall = fake_wall;
    ft.seq_queue = fake_seq_queue;
    ft.seq_wait = fake_seq_wait;
    ft.span_clock = fake_span_clock;
    ck_assert_msg(calib_run(&o, &ft, &ref_model, &p, NULL, err) == 0, "%s", err);
    ck_assert(p.has_sustained && p.clock_hot_mhz < p.clock_cold_mhz);
    /* the same spans by the counters: stored as the stamps' pair */
    ck_assert_double_eq_tol(p.stamp_cold_mhz, 0.93 * p.clock_cold_mhz, 0.05 * p.clock_cold_mhz);
    ck_assert(p.stamp_hot_mhz > 0 && p.stamp_hot_mhz < p.stamp_cold_mhz);
    ck_assert(p.has_chot && p.chot[0] >= 512);
    ck_assert_double_eq_tol(p.chot[3], 1.15, 0.01);    /* timed after the heater: ~its full drop */
    /* the L2-cold elementwise proxy at the grid's 2048 tokens, timed after the heater too */
    ck_assert(p.has_ehot && p.ehot[0] == SUSTAIN_ELEM_TOKENS);
    ck_assert_double_eq_tol(p.ehot[1], 1.15, 0.01);
    /* the layer rows back to back (batches queued and all waited for), the 20 ms cycles a call
     * a part; a card with no host time between its runs: every duty 1 */
    ck_assert_int_eq(p.ninter, SUSTAIN_INTER_N);
    ck_assert(fk.seq_batches > 0 && fk.seq_n == 0);
    for (int q = 0; q < p.ninter; q++) {
        ck_assert_msg(p.inter[q][2] < p.clock_cold_mhz && p.inter[q][2] > p.clock_hot_mhz - 1 && p.inter[q][4] > 1,
                      "row %d: %g MHz, gemm x%g", q, p.inter[q][2], p.inter[q][4]);
        ck_assert_msg(q < 3 ? p.inter[q][1] < 5 : p.inter[q][1] > 10, "row %d: %g ms", q, p.inter[q][1]);
        ck_assert_double_eq_tol(p.inter[q][6], 1, 1e-9);
    }
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ck_assert_msg(prof_save(path, &p) == 0, "prof_save: %s", strerror(errno));
    ck_assert_msg(prof_load(path, &back, perr) == 0, "%s", perr);
    ck_assert(back.has_chot && back.chot[3] == p.chot[3]);
    ck_assert(back.stamp_cold_mhz == p.stamp_cold_mhz && back.stamp_hot_mhz == p.stamp_hot_mhz);
    ck_assert(back.has_ehot && back.ehot[0] == p.ehot[0] && back.ehot[1] == p.ehot[1]);
    /* the GEMMs across shapes (sustain.h 9.): rising times, each pass slower after the heater */
    ck_assert_int_gt(p.ngprobe, 0);
    ck_assert_int_eq(back.ngprobe, p.ngprobe);
    for (int q = 0; q < p.ngprobe; q++) {
        if (q) ck_assert(p.gprobe[q][3] > p.gprobe[q - 1][3]);
        for (int c = 0; c < 6; c++) ck_assert(back.gprobe[q][c] == p.gprobe[q][c]);
    }
    ck_assert_int_eq(back.ninter, p.ninter);
    ck_assert_double_eq_tol(back.inter[0][2], p.inter[0][2], 1e-3 * p.inter[0][2]);   /* 6 digits */
    for (int q = 0; q < back.ninter; q++) ck_assert_double_eq_tol(back.inter[q][6], 1, 1e-9);
    prof_free(&back);
    prof_free(&p);
    unlink(path);
}
END_TEST

/* The library's models (a dense one, an MoE one; no GDN layers): calib's grid takes every
 * GEMM and elementwise shape from the model and has no GDN job, the MoE grid comes from the
 * model's moe: keys without --moe, and the fake driver's profile round-trips. */
START_TEST(driver_library_models)
{
    static const char *const files[] = { "models/llama-3.1-8b.yaml", "models/qwen3-30b-a3b.yaml" };
    for (int f = 0; f < 2; f++) {
        model_t m;
        model_rank_t r;
        char serr[SCN_ERR_MAX], err[256], perr[PROF_ERR_MAX], path[] = "/tmp/check_calib.XXXXXX";
        ck_assert_msg(scn_load_model(files[f], &m, serr) == 0, "%s", serr);
        ck_assert_int_eq(model_rank(&m, 1, &r), 0);
        ck_assert_int_eq(m.n_gdn, 0);
        calib_opts_t o;
        calib_opts_default(&o);
        o.quiet = 1;
        o.varlen = 1;
        calib_opts_model(&o, &m);
        ck_assert_int_eq(o.moe_experts, m.moe_experts);
        ck_assert_int_eq(o.moe_topk, m.n_moe ? m.moe_topk : 0);
        calib_job_t *j;
        int n, nmoe = 0, nvar = 0, nelem = 0, nrouter = 0;
        ck_assert_int_eq(calib_grid_build(&o, &m, &r, &j, &n), 0);
        for (int i = 0; i < n; i++) {
            ck_assert_int_ne(j[i].kernel, CK_GDN);
            if (j[i].kernel == CK_GEMM) {
                /* each GEMM is one of the model's shapes */
                long h = m.hidden;
                int ok = (j[i].n == r.attn_qkv_n && j[i].k == h) || (j[i].n == h && j[i].k == r.attn_o_k)
                         || (j[i].n == r.vocab_n && j[i].k == h)
                         || (m.n_layers > m.n_moe && ((j[i].n == r.mlp_up_n && j[i].k == h)
                                                      || (j[i].n == h && j[i].k == r.mlp_down_k)))
                         || (m.n_moe > 0 && j[i].n == m.moe_experts && j[i].k == h);
                ck_assert_msg(ok, "%s: gemm %s n=%ld k=%ld is none of the model's shapes", files[f], j[i].what,
                              j[i].n, j[i].k);
                nrouter += m.n_moe > 0 && j[i].n == m.moe_experts;
            } else if (j[i].kernel == CK_GEMM_MOE) {
                ck_assert_int_eq(j[i].experts, m.moe_experts);
                ck_assert_int_eq(j[i].topk, m.moe_topk);
                ck_assert(j[i].n == r.moe_up_n || j[i].k == r.moe_down_k);
                nmoe++;
            } else if (j[i].kernel == CK_VARLEN) {
                nvar++;
            } else if (j[i].kernel == CK_ELEM) {
                nelem++;
            }
        }
        ck_assert_int_gt(nvar, 0);
        ck_assert_int_gt(nelem, 0);
        ck_assert_int_eq(nmoe > 0, m.n_moe > 0);
        ck_assert_int_eq(nrouter > 0, m.n_moe > 0);
        free(j);
        fake_init();
        fk.m = &m;
        fk.r = r;
        profile_t p, q;
        ck_assert_msg(calib_run(&o, &ft, &m, &p, NULL, err) == 0, "%s: %s", files[f], err);
        ck_assert_ptr_null(prof_find(&p, "gdn"));
        ck_assert_ptr_nonnull(prof_find(&p, "attn.varlen.fp16"));
        ck_assert_int_eq(prof_find(&p, "gemm.moe.fp16") != NULL, m.n_moe > 0);
        int fd = mkstemp(path);
        ck_assert_int_ge(fd, 0);
        close(fd);
        ck_assert_msg(prof_save(path, &p) == 0, "prof_save: %s", strerror(errno));
        ck_assert_msg(prof_load(path, &q, perr) == 0, "%s: %s", files[f], perr);
        ck_assert_int_eq(q.nlaws, p.nlaws);
        for (int i = 0; i < p.nlaws; i++) {
            const prof_law_t *b = prof_find(&q, p.laws[i].name);
            ck_assert_ptr_nonnull(b);
            ck_assert_int_eq(b->npts, p.laws[i].npts);
        }
        unlink(path);
        prof_free(&p);
        prof_free(&q);
    }
    fake_init();
}
END_TEST

/* calib_gpu.cu's rotation of operands through at least 256 MiB in 1..16 slices (rot_sets) */
static int rot_sets_of(size_t slice)
{
    size_t n = ((256ul << 20) + slice - 1) / slice;
    return n > 16 ? 16 : (int)n;
}
static size_t up256(size_t b) { return (b + 255) & ~(size_t)255; }

START_TEST(mem_rotation_plan)
{
    const size_t MiB = 1ul << 20, GiB = 1ul << 30;
    /* the bytes an allocation may take: free plus what is given back first, less the margin */
    ck_assert_uint_eq(calib_mem_avail(10 * GiB, 2 * GiB), 12 * GiB - CALIB_MEM_MARGIN);
    ck_assert_uint_eq(calib_mem_avail(CALIB_MEM_MARGIN / 2, 0), 0);
    ck_assert_uint_eq(calib_mem_avail(SIZE_MAX, SIZE_MAX), SIZE_MAX - CALIB_MEM_MARGIN);
    /* with room, each request gets what the grow-only buffers always got: the full rotation and
     * a quarter's headroom, rounded up to 256 bytes (a big card's timings unchanged) */
    const size_t slices[] = { 256, 4096, 1000 * 256, 3 * MiB + 512, 40 * MiB, 168750ul * 1024, 300 * MiB,
                              1140 * MiB };
    for (size_t i = 0; i < sizeof slices / sizeof *slices; i++) {
        size_t b = slices[i];
        int want = rot_sets_of(b), sets = -1;
        size_t full = b * (size_t)want;
        size_t cap = calib_rot_plan(full, b, want, 140 * GiB, &sets);
        ck_assert_int_eq(sets, want);
        ck_assert_uint_eq(cap, up256(full + full / 4));
        /* exactly the headroom's size is enough for it; a byte less drops the headroom only */
        ck_assert_uint_eq(calib_rot_plan(full, b, want, cap, &sets), cap);
        ck_assert_int_eq(sets, want);
        ck_assert_uint_eq(calib_rot_plan(full, b, want, cap - 1, &sets), full);
        ck_assert_int_eq(sets, want);
        /* short of the full rotation: the whole slices that fit, never more than asked */
        if (want > 1) {
            ck_assert_uint_eq(calib_rot_plan(full, b, want, full - 1, &sets), (size_t)(want - 1) * b);
            ck_assert_int_eq(sets, want - 1);
            ck_assert_uint_eq(calib_rot_plan(full, b, want, b + b / 2, &sets), b);
            ck_assert_int_eq(sets, 1);
        }
        /* not one slice: nothing allocated, nothing claimed */
        ck_assert_uint_eq(calib_rot_plan(full, b, want, b - 1, &sets), 0);
        ck_assert_int_eq(sets, 0);
    }
    /* a single buffer (an output) of bytes that are no multiple of 256 */
    int sets = -1;
    size_t odd = 5 * MiB + 7;
    ck_assert_uint_eq(calib_rot_plan(odd, up256(odd), 1, 64 * GiB, &sets), up256(odd + odd / 4));
    ck_assert_int_eq(sets, 1);
    ck_assert_uint_eq(calib_rot_plan(odd, up256(odd), 1, up256(odd), &sets), up256(odd));
    ck_assert_uint_eq(calib_rot_plan(odd, up256(odd), 1, up256(odd) - 1, &sets), 0);
    ck_assert_int_eq(sets, 0);
    ck_assert_uint_eq(calib_rot_plan(odd, up256(odd), 0, 64 * GiB, &sets), 0);
    /* the H100's failed GEMM (gdn_in m=16384 n=16480 k=5120): its weights' two 161 MiB slices
     * and the rest of its buffers fit an 80 GB card alone; with 200 MiB free beside the other
     * points' buffers one slice is the most, and below a slice nothing is allocated */
    size_t wb = up256((size_t)16480 * 5120 * 2);
    ck_assert_int_eq(rot_sets_of(wb), 2);
    ck_assert_uint_eq(calib_rot_plan(2 * wb, wb, 2, calib_mem_avail(200 * MiB + CALIB_MEM_MARGIN, 0), &sets), wb);
    ck_assert_int_eq(sets, 1);
    ck_assert_uint_eq(calib_rot_plan(2 * wb, wb, 2, calib_mem_avail(100 * MiB + CALIB_MEM_MARGIN, 0), &sets), 0);
}
END_TEST

START_TEST(mem_pool_plan)
{
    const size_t block = (size_t)784 * 4 * 256 * 2 * 2; /* a page of 784 tokens, 4 kv heads of 256, fp16 K and V */
    long want = 1000;
    /* room to grow where it fits, as a pool always had; else just the job's; else nothing */
    ck_assert_int_eq(calib_pool_plan(want, block, 1500 * block), 1500);
    ck_assert_int_eq(calib_pool_plan(want, block, 1500 * block - 1), 1000);
    ck_assert_int_eq(calib_pool_plan(want, block, 1000 * block), 1000);
    ck_assert_int_eq(calib_pool_plan(want, block, 1000 * block - 1), 0);
    ck_assert_int_eq(calib_pool_plan(7, block, (size_t)1 << 40), 10);
    ck_assert_int_eq(calib_pool_plan(0, block, (size_t)1 << 40), 0);
    ck_assert_int_eq(calib_pool_plan(want, 0, (size_t)1 << 40), 0);
}
END_TEST

int main(void)
{
    const check_test_t tests[] = {
        CHECK_TEST(median_cases), CHECK_TEST(grid_default), CHECK_TEST(grid_smoke_and_only),
        CHECK_TEST(measure_batches_short_runs), CHECK_TEST(measure_long_runs),
        CHECK_TEST(measure_median_rejects_outliers), CHECK_TEST(measure_skip_and_fail),
        CHECK_TEST(driver_recovers_known_laws), CHECK_TEST(driver_noisy_round_trip),
        CHECK_TEST(driver_second_look), CHECK_TEST(driver_progress_line), CHECK_TEST(driver_skips_unsupported),
        CHECK_TEST(driver_error_names_the_job), CHECK_TEST(driver_records_gemm_choice),
        CHECK_TEST(driver_times_each_kernel),
        CHECK_TEST(driver_records_the_split), CHECK_TEST(driver_keep_going), CHECK_TEST(driver_budget_cuts),
        CHECK_TEST(driver_points_log), CHECK_TEST(driver_times_elementwise_cold),
        CHECK_TEST(refit_gives_the_fit_back), CHECK_TEST(refit_command_line), CHECK_TEST(refit_residuals),
        CHECK_TEST(grid_varlen_moe), CHECK_TEST(driver_varlen_moe), CHECK_TEST(driver_full_grid_saves),
        CHECK_TEST(driver_records_sustained_probes),
        CHECK_TEST(driver_library_models), CHECK_TEST(merge_adds_another_shape), CHECK_TEST(merge_command_line),
        CHECK_TEST(mem_rotation_plan), CHECK_TEST(mem_pool_plan)};
    gsl_set_error_handler_off();
    return check_main("calib", "host", tests, CHECK_N(tests), 60, setup_all);
}
