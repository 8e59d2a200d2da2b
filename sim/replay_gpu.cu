/* replay_gpu.cu: the GPU replay cost model and bin/pacesim-gpu (see replay.h).
 *
 *   bin/pacesim-gpu replay FILE [--set k=v]... [--steps OUT.csv] [--items OUT.csv] [--back-to-back] [--step-clock]
 *
 * Runs the scenario twice with the same scheduler: once priced by its profile (the
 * prediction), once priced by the GPU (each step's items executed and timed, with the
 * profile's price of the same step recorded beside it).  Prints per step type the
 * median and max relative error of the predicted step time, and per measurement window
 * predicted beside measured.
 *
 * Each item is prepared on the host (batch, plan, copies), timed between two events and
 * synchronised, so the GPU idles between items.  --back-to-back prepares all of a step's
 * items first -- each attention item its own batch, plan and buffers, each grouped MoE GEMM its
 * own slot in the timer (REPLAY_MOE_SLOTS) -- then queues them on one stream as an engine does
 * (an event before and after each, one sync a step): the step's time is the first event to the
 * last, and nothing is prepared while the step runs. */
#include <cuda_runtime.h>
#include <pthread.h>
#include <time.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
extern "C" {
#include "attn.h"
#include "calib.h"
#include "gpuclock.h"
#include "engine.h"
#include "outfile.h"
#include "replay.h"
#include "scenario.h"
#include "setup.h"
#include "sweep.h"
}

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    snprintf(cm->err, sizeof cm->err, "%s:%d: %s", __FILE__, __LINE__, cudaGetErrorString(e_)); return -1; } } while (0)

typedef struct {
    attn_kv kv;
    int ok;
} pool_t;

#define CLK_RING (1 << 16)        /* samples kept per step (~2 min at 2 ms) */

/* One attention item made ready to launch: its batch, plan, layer views and buffers. */
typedef struct {
    int route, flags, varlen, nsets, reps, rc;   /* rc: the warm-up run's (0 when none ran) */
    attn_kv views[REPLAY_MAX_SETS];
    attn_batch *b;
    attn_varlen_plan *pl;
    void *q, *out, *ws;
    size_t ws_cap;
} attn_prep_t;

/* --back-to-back: a step's item, prepared before any of the step's items is launched */
typedef struct {
    cost_item_t it;               /* it.call points into the step's plan: valid until gm_step returns */
    int what;                     /* 0: no GPU work (sec given), 1: attention, 2: a timer job */
    double sec;
    int reps;
    attn_prep_t a;
    calib_job_t j;
    int after;                    /* re-prepared inside the step: the item queued before it (its end
                                     event to this item's start event is the GPU's gap), else -1 */
} pend_t;

static_assert(REPLAY_MOE_SLOTS == CALIB_MOE_SLOTS, "the replay's grouped-GEMM slots are the timer's");

typedef struct {                  /* an attention item's own buffers (one per item of a step) */
    void *q, *out, *ws;
    size_t q_cap, ws_cap;
} slot_t;

typedef struct {
    const model_t *m;
    model_rank_t r;
    int page, kv_fp8;
    calib_timer_t *t;
    cost_model_t *pred;
    pool_t pool_eng, pool16;      /* the engine's cache (page, dtype); an fp16 one of ROUTE_NATIVE_PAGE for bridges */
    int *perm;                    /* a random permutation of the pool's blocks */
    int nblocks;
    double l2_bytes;              /* the device's L2: a call's layers rotate their pages past it */
    void *q, *out, *ws;
    size_t q_cap, ws_cap;
    cudaEvent_t e0, e1;
    replay_log_t log;
    double (*seen)[6];            /* shapes already run once (first runs load modules, pick algorithms) */
    int nseen, cap_seen;
    /* the SM clock after each step, through NVML when the driver has it (dlopen: no link
     * dependency): compute-bound steps slow down if the card lowers its clock under load */
    gpuclock_t nvml;
    pthread_t clk_tid;
    pthread_mutex_t clk_mu;
    volatile int clk_stop;
    int clk_running, clk_nbuf;
    struct clk_sample *clk_buf;
    double clk_sum, clk_min;      /* over the steps' mean clocks */
    long clk_n;
    long gate_late;               /* attention items whose launch gate let go by its time limit */
    FILE *items;                  /* --items: every item, predicted beside measured (may be NULL) */
    int cur_type;                 /* the step being run: STEP_DECODE_ONLY / MIXED / PREFILL_ONLY */
    long max_model_len;           /* the scenario's longest request (tokens) */
    double kv_tokens;             /* the engine's KV capacity (tokens) */
    int moe_grouped;              /* routed experts run as one grouped GEMM per layer (the
                                     profile has gemm.moe.fp16); else one GEMM per group */
    /* --back-to-back: the step's items prepared, then queued on one stream, one sync a step */
    int b2b;
    pend_t *pend;
    int npend, cap_pend;
    slot_t *slots;
    int nslots, slot_used;
    cudaEvent_t *ev;              /* two per item: before and after it (--layer-order: lo_run's) */
    int nev;
    int layer_order;              /* --layer-order: the step's per-layer items interleaved layer by layer */
    int *ev_item;                 /* --layer-order: the item each pair of events belongs to (cap_lo + 1) */
    int *lo_reps;                 /* --layer-order: each item's runs (0: no GPU work) */
    double *lo_t;                 /* --layer-order: each item's middle-layer span, its span after the
                                     layers and its seconds (3 x cap_lo) */
    int cap_lo;
    long lo_steps, lo_fallback;   /* steps run layer by layer; steps that could not be (item order) */
    int lo_this;                  /* the step b2b_run ran last: 1 layer by layer */
    replay_moe_slots_t moe;       /* the step's grouped MoE GEMMs, a timer slot each */
    long reprep_pre;              /* grouped GEMMs prepared again before their step was launched (a
                                     later item's preparation had grown the buffers they point into) */
    long reprep;                  /* items re-prepared inside a step (a later item of their kind had
                                     overwritten the timer's state they need: calib_gpu_ready) */
    cudaEvent_t ev_last;          /* the last step's last item's end event (kept for gap_s) */
    int ev_last_made, ev_last_ok; /* created; recorded by a step that ran (the next gap_s measured) */
    int step_first;               /* first runs of new shapes in this step's preparation */
    long gap_work, gap_steps;     /* steps whose gap_s held such first runs; steps with a gap_s */
    /* --step-clock: the SM clock over each step from stamps on the GPU (step_stamp) */
    int step_clk;
    struct stamp_span *stamps;    /* the step's stamps (sim/step_stamp.cuh; NULL until the first) */
    int stamped;                  /* 1: this step's start stamp is queued */
    double sclk_sum, sclk_min;    /* over the steps' step_mhz */
    long sclk_n, sclk_nan;
} gm_t;

/* One line of the --items log: the item's law and shape, its count, the profile's price
 * (and whether measured points gave it) beside the GPU's. */
static void item_log(gm_t *g, const cost_item_t *it, double meas)
{
    if (!g->items || !g->pred || it->kind == CI_STEP || it->kind == CI_ALLREDUCE) return;
    char name[64];
    double pred = 0;
    int grid = 0;
    if (cost_profile_item(g->pred, it, &pred, &grid) < 0) pred = NAN;
    const char *law = cost_item_law(it, name, sizeof name);
    double a = 0, b = 0, c = 0, d = 0;
    switch (it->kind) {
    case CI_GEMM: a = it->m; b = it->n; c = it->k; d = it->wb; break;
    case CI_GDN: a = it->tokens; b = it->seqs; break;
    case CI_ELEM: a = it->tokens; break;
    default: {                    /* attention: rows, query tokens, longest row, page */
        const kcall_t *k = it->call;
        a = k->nseg;
        for (int i = 0; i < k->nseg; i++) {
            b += k->segs[i].q;
            if (k->segs[i].seq_len > c) c = (double)k->segs[i].seq_len;
        }
        d = k->page;
    }
    }
    fprintf(g->items, "%ld,%s,%s%s,%g,%g,%g,%g,%g,%.9g,%.9g,%d\n", g->log.n + 1,
            engine_step_type_name((step_type_t)g->cur_type), law,
            it->kind == CI_BRIDGE ? ".expand" : "", a, b, c, d, it->count, pred, meas, grid);
}

/* ---- the GPU's clock while steps run ----------------------------------------
 * A thread samples the SM clock, the board power and the clock-event (throttle)
 * reasons through NVML every ~2 ms; each step reports the mean clock and power over
 * its own wall time and the reasons seen in it.  NVML is dlopen'ed: no link
 * dependency, and a driver without it just leaves the columns empty. */
typedef struct clk_sample {
    double t, mhz, watts;
    unsigned long long why;
} clk_sample_t;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *clock_thread(void *arg)
{
    gm_t *g = (gm_t *)arg;
    while (!g->clk_stop) {
        clk_sample_t x = { now_s(), 0, 0, 0 };
        if (gpuclock_read(&g->nvml, &x.mhz, &x.watts, &x.why) == 0) {
            pthread_mutex_lock(&g->clk_mu);
            if (g->clk_nbuf < CLK_RING) g->clk_buf[g->clk_nbuf++] = x;
            pthread_mutex_unlock(&g->clk_mu);
        }
        struct timespec d = { 0, 2000000 };
        nanosleep(&d, NULL);
    }
    return NULL;
}

static void clock_open(gm_t *g)
{
    int dev = 0;
    cudaGetDevice(&dev);
    if (gpuclock_open(&g->nvml, dev) < 0) return;
    g->clk_buf = (clk_sample_t *)malloc(CLK_RING * sizeof *g->clk_buf);
    pthread_mutex_init(&g->clk_mu, NULL);
    if (!g->clk_buf || pthread_create(&g->clk_tid, NULL, clock_thread, g) != 0) {
        free(g->clk_buf);
        g->clk_buf = NULL;
        gpuclock_close(&g->nvml);
        return;
    }
    g->clk_running = 1;
}

/* The mean clock and power over [t0, t1] (the step), and the reasons seen; the samples
 * are then dropped (the buffer holds one step's worth). */
static void clock_step(gm_t *g, double t0, double t1, replay_rec_t *r)
{
    r->clock_mhz = r->power_w = NAN;
    r->clock_why = 0;
    if (!g->clk_running) return;
    double sc = 0, sp = 0;
    int n = 0;
    pthread_mutex_lock(&g->clk_mu);
    for (int i = 0; i < g->clk_nbuf; i++) {
        const clk_sample_t *x = &g->clk_buf[i];
        if (x->t < t0 || x->t > t1) continue;
        sc += x->mhz;
        sp += x->watts;
        r->clock_why |= x->why;
        n++;
    }
    g->clk_nbuf = 0;
    pthread_mutex_unlock(&g->clk_mu);
    if (!n) return;
    r->clock_mhz = sc / n;
    r->power_w = sp / n;
    g->clk_sum += r->clock_mhz;
    if (g->clk_n == 0 || r->clock_mhz < g->clk_min) g->clk_min = r->clock_mhz;
    g->clk_n++;
}

/* ---- --step-clock: the SM clock over the step itself ------------------------------
 * NVML's clock reading changes only every ~77 ms, so the thread above mostly hands a 6-40 ms
 * step an earlier step's clock.  With --step-clock the GPU stamps the step (step_stamp, one
 * one-thread block per SM, sim/step_stamp.cuh) on the default stream just before the step's
 * first item and again just after its last; replay_stamp_mhz (sim/stamp.h) gives the clock.
 * The block scheduler need not put a block on every SM: an SM stamped at one end only is left
 * out, and a step where none has both records NAN.  Limits: %globaltimer ticks every 32 ns to
 * 1 us by card and driver (under 0.1% of a 1 ms step); a stamp costs a launch (~2-5 us a step,
 * which is why it is opt-in); item by item the span holds the host's preparations between the
 * items, where the card idles (as NVML's mean over the step's wall time does); back to back it
 * is the step's items and their gaps.  Whether the stamps read the clock the kernels ran at is
 * what calib/stamp_study.cu measures (docs/error-bars.md). */
#include "step_stamp.cuh"        /* step_stamp, STAMP_SLOTS (calib/stamp_study.cu times the same) */

/* Queue the step's start stamp (end 0) or end stamp (end 1) on the default stream.  0 / -1. */
static int stamp_launch(cost_model_t *cm, gm_t *g, int end)
{
    if (!g->stamps && !(g->stamps = (stamp_span_t *)calloc(1, sizeof *g->stamps))) {
        snprintf(cm->err, sizeof cm->err, "out of memory");
        return -1;
    }
    CK(stamp_span_mark(g->stamps, end));
    if (!end) g->stamped = 1;
    return 0;
}

/* After the step's synchronisation: its clock from the stamps into r (NAN where the step queued
 * no start stamp: no GPU work). */
static int stamp_read(cost_model_t *cm, gm_t *g, replay_rec_t *r)
{
    r->step_clk = 1;
    r->step_mhz = NAN;
    if (g->stamped)
        CK(stamp_span_mhz(g->stamps, &r->step_mhz));
    if (isnan(r->step_mhz)) g->sclk_nan++;
    else {
        g->sclk_sum += r->step_mhz;
        if (g->sclk_n == 0 || r->step_mhz < g->sclk_min) g->sclk_min = r->step_mhz;
        g->sclk_n++;
    }
    return 0;
}

/* 1 if this key is new (and remember it): its first run is a warm-up, not timed. */
static int first_time(gm_t *g, double a, double b, double c, double d, double e, double f)
{
    for (int i = 0; i < g->nseen; i++)
        if (g->seen[i][0] == a && g->seen[i][1] == b && g->seen[i][2] == c && g->seen[i][3] == d
            && g->seen[i][4] == e && g->seen[i][5] == f)
            return 0;
    if (g->nseen == g->cap_seen) {
        g->cap_seen = g->cap_seen ? 2 * g->cap_seen : 256;
        g->seen = (double (*)[6])realloc(g->seen, (size_t)g->cap_seen * sizeof *g->seen);
    }
    double *k = g->seen[g->nseen++];
    k[0] = a; k[1] = b; k[2] = c; k[3] = d; k[4] = e; k[5] = f;
    g->step_first++;
    return 1;
}

static int pool_make(cost_model_t *cm, gm_t *g, pool_t *p, int dtype, int page)
{
    /* the scenario's KV memory: the engine's capacity (as tokens, at this pool's page), and
     * at least the longest request (max_model_len) four times over, so that every running
     * request's pages are its own as in the engine's cache (capped at 48 GiB of KV); and at
     * least 8x the L2, room for the layers' page sets of a short call (replay_layer_views) */
    long per_req = (g->max_model_len + page - 1) / page + 1;
    long blocks = 4 * per_req, eng = (long)((g->kv_tokens + page - 1) / page) + 1;
    if (eng > blocks) blocks = eng;
    double block_bytes = (double)page * g->r.kv_heads * g->m->head_dim * (dtype == ATTN_FP8_E5M2 ? 1 : 2) * 2;
    long l2_blocks = (long)ceil(8 * g->l2_bytes / block_bytes);
    if (l2_blocks > blocks) blocks = l2_blocks;
    if (blocks < 2 * REPLAY_MAX_SETS) blocks = 2 * REPLAY_MAX_SETS;
    double bytes = (double)blocks * block_bytes;
    if (bytes > 48.0 * (1ul << 30)) blocks = (long)(blocks * (48.0 * (1ul << 30) / bytes));
    int rc = attn_kv_alloc_random(&p->kv, dtype, (int)blocks, page, g->r.kv_heads, g->m->head_dim, 1.0f, 99);
    if (rc) {
        snprintf(cm->err, sizeof cm->err, "KV pool (%ld blocks of %d): %s", blocks, page, attn_strerror(rc));
        return -1;
    }
    p->ok = 1;
    if (!g->perm || blocks > g->nblocks) {
        free(g->perm);
        g->perm = (int *)malloc((size_t)blocks * sizeof(int));
        g->nblocks = (int)blocks;
        for (int i = 0; i < g->nblocks; i++) g->perm[i] = i;
        unsigned s = 12345;
        for (int i = g->nblocks - 1; i > 0; i--) {
            s = s * 1103515245u + 12345u;
            int j = (int)((s >> 8) % (unsigned)(i + 1)), x = g->perm[i];
            g->perm[i] = g->perm[j];
            g->perm[j] = x;
        }
    }
    return 0;
}

/* Make one attention call ready to run n times (layers): its batch, plan, the layers' page
 * views and buffers -- the shared ones (slot < 0) or slot's own (--back-to-back: each item of a
 * step its own q, out and workspace) -- and run it once untimed if its shape is new. */
static int attn_prep(cost_model_t *cm, gm_t *g, const kcall_t *c, int expand_only, double n, int slot, attn_prep_t *a)
{
    pool_t *p = &g->pool_eng;
    int route, flags = 0, varlen = c->route == ROUTE_VARLEN;
    switch (c->route) {
    case ROUTE_VARLEN: route = -1; break;   /* attn_varlen_run: the whole batch in one launch */
    case ROUTE_DECODE_XQA: route = ATTN_DECODE_XQA; break;
    case ROUTE_DECODE_SCALAR: route = ATTN_DECODE_SCALAR; break;
    case ROUTE_PREFILL_BM32: route = ATTN_PREFILL_FAST; break;
    case ROUTE_FP8_BRIDGE:
        route = expand_only ? ATTN_FP8_EXPAND : ATTN_PREFILL_FAST;
        if (!expand_only) p = &g->pool16;
        break;
    default: route = c->variant == VAR_BM16_BN128 ? ATTN_PREFILL_LOWSMEM : ATTN_PREFILL_GENERIC;
    }
    if (varlen && p->kv.dtype != ATTN_FP16) {
        snprintf(cm->err, sizeof cm->err, "the varlen attention kernel reads an fp16 KV cache only");
        return -1;
    }
    if (route == ATTN_PREFILL_FAST && p->kv.page != ROUTE_NATIVE_PAGE) flags |= ATTN_F_ANY_PAGE;
    int pg = p->kv.page, rows = c->nseg, maxp = 0;
    for (int i = 0; i < rows; i++) {
        int np = (int)((c->segs[i].seq_len + pg - 1) / pg);
        if (np > maxp) maxp = np;
    }
    if (maxp > g->nblocks) {
        snprintf(cm->err, sizeof cm->err, "a row of %ld tokens needs more than the pool's %d blocks",
                 (long)c->segs[0].seq_len, g->nblocks);
        return -1;
    }
    int reps = (int)lround(n);
    a->route = route;
    a->flags = flags;
    a->varlen = varlen;
    a->reps = reps;
    a->rc = 0;
    a->b = NULL;
    a->pl = NULL;
    /* the layers' page sets (replay_layer_sets): the call's KV counted once a request (its
     * rows share its pages); a bridge's fp16 side stays put (the fork rewrites one workspace
     * every layer) */
    double call_bytes = 0, elem = p->kv.dtype == ATTN_FP8_E5M2 ? 1 : 2;
    for (int i = 0; i < rows; i++)
        if (i == 0 || c->segs[i].req < 0 || c->segs[i].req != c->segs[i - 1].req)
            call_bytes += (double)((c->segs[i].seq_len + pg - 1) / pg) * pg * g->r.kv_heads * g->m->head_dim * elem * 2;
    long stride, limit;
    int nsets = replay_layer_views(p->kv.num_blocks, p == &g->pool_eng ? replay_layer_sets(call_bytes, g->l2_bytes, reps) : 1,
                                   &stride, &limit);
    attn_kv *views = a->views;
    size_t block_bytes = (size_t)pg * g->r.kv_heads * g->m->head_dim * (size_t)elem; /* of K (and of V) */
    for (int s = 0; s < nsets; s++) {
        views[s] = p->kv;
        views[s].k = (char *)p->kv.k + (size_t)s * stride * block_bytes;
        views[s].v = (char *)p->kv.v + (size_t)s * stride * block_bytes;
        views[s].num_blocks = p->kv.num_blocks - (int)(s * stride);
    }
    int *ql = (int *)malloc(rows * sizeof(int)), *sl = (int *)malloc(rows * sizeof(int));
    int *bt = (int *)malloc((size_t)rows * maxp * sizeof(int));
    long totq = 0;
    for (int i = 0; i < rows; i++) {
        ql[i] = c->segs[i].q;
        sl[i] = (int)c->segs[i].seq_len;
        totq += ql[i];
        /* request r's page j is block perm[(r * 337 + j) % nblocks]: a request's rows share pages */
        long base = (long)(c->segs[i].req < 0 ? i : c->segs[i].req) * 337;
        for (int j = 0; j < maxp; j++) bt[(size_t)i * maxp + j] = g->perm[(base + j) % g->nblocks] % (int)limit;
    }
    attn_batch *b = attn_batch_create(&p->kv, rows, ql, sl, g->r.q_heads, bt, maxp, 7);
    free(ql);
    free(sl);
    free(bt);
    if (!b) {
        snprintf(cm->err, sizeof cm->err, "cannot make an attention batch of %d rows", rows);
        return -1;
    }
    size_t qb = (size_t)totq * g->r.q_heads * g->m->head_dim * 2;
    void **bq = slot < 0 ? &g->q : &g->slots[slot].q, **bo = slot < 0 ? &g->out : &g->slots[slot].out;
    void **bw = slot < 0 ? &g->ws : &g->slots[slot].ws;
    size_t *qcap = slot < 0 ? &g->q_cap : &g->slots[slot].q_cap, *wcap = slot < 0 ? &g->ws_cap : &g->slots[slot].ws_cap;
    if (qb > *qcap) {
        cudaFree(*bq);
        cudaFree(*bo);
        *qcap = qb + qb / 2;
        CK(cudaMalloc(bq, *qcap));
        CK(cudaMalloc(bo, *qcap));
        attn_fill_half_random(*bq, *qcap / 2, -1.f, 1.f, 3);
    }
    attn_varlen_plan *pl = NULL;
    if (varlen) {
        /* the host plan is made once per batch, like the batch's device copies: not timed */
        if (!(pl = attn_varlen_plan_create(&p->kv, b))) {
            attn_batch_free(b);
            snprintf(cm->err, sizeof cm->err, "varlen attention: no plan for a batch of %d rows", rows);
            return -1;
        }
    } else {
        size_t need = attn_ws_bytes(route, &p->kv, b);
        if (need > *wcap) {
            cudaFree(*bw);
            *wcap = need + need / 4;
            CK(cudaMalloc(bw, *wcap));
        }
    }
    a->nsets = nsets;
    a->b = b;
    a->pl = pl;
    a->q = *bq;
    a->out = *bo;
    a->ws = *bw;
    a->ws_cap = *wcap;
    if (first_time(g, varlen ? 99 : 100 + route, flags, p->kv.page, rows, maxp, (double)totq))
        a->rc = varlen ? attn_varlen_run(pl, &views[0], b, a->q, a->out, 1.f / 16, NULL)
                       : attn_run(route, &views[0], b, a->q, a->out, 1.f / 16, a->ws, a->ws_cap, flags, NULL);
    return 0;
}

/* Queue layer k's run of a prepared attention call (its k-th page set). */
static int attn_launch(const attn_prep_t *a, int k)
{
    const attn_kv *kv = &a->views[k % a->nsets];
    return a->varlen ? attn_varlen_run(a->pl, kv, a->b, a->q, a->out, 1.f / 16, NULL)
                     : attn_run(a->route, kv, a->b, a->q, a->out, 1.f / 16, a->ws, a->ws_cap, a->flags, NULL);
}

/* Time n back-to-back runs of one attention call; seconds in *sec (all n together). */
static int run_attn(cost_model_t *cm, gm_t *g, const kcall_t *c, int expand_only, double n, double *sec)
{
    attn_prep_t a;
    if (attn_prep(cm, g, c, expand_only, n, -1, &a) < 0) return -1;
    int rc = a.rc, reps = a.reps, varlen = a.varlen, route = a.route;
    attn_varlen_plan *pl = a.pl;
    attn_batch *b = a.b;
    /* the calls queued behind calib's launch gate: the GPU's time, not the host's launch rate */
    if (calib_gpu_gate_close() < 0) {
        snprintf(cm->err, sizeof cm->err, "the launch gate: %s", calib_gpu_gate_error());
        attn_varlen_plan_free(pl);
        attn_batch_free(b);
        return -1;
    }
    CK(cudaEventRecord(g->e0, 0));
    for (int k = 0; k < reps && !rc; k++) {
        rc = attn_launch(&a, k);                 /* layer k's own pages */
        if (k + 1 == CALIB_GATE_MAX_CALLS) calib_gpu_gate_open();
    }
    CK(cudaEventRecord(g->e1, 0));
    g->gate_late += calib_gpu_gate_open();
    CK(cudaEventSynchronize(g->e1));
    attn_varlen_plan_free(pl);
    attn_batch_free(b);
    if (rc) {
        snprintf(cm->err, sizeof cm->err, "%s: %s", varlen ? "varlen" : attn_route_name(route), attn_strerror(rc));
        return -1;
    }
    float ms;
    CK(cudaEventElapsedTime(&ms, g->e0, g->e1));
    *sec = ms * 1e-3;
    return 0;
}

static int run_job(cost_model_t *cm, gm_t *g, calib_job_t *j, double n, double *sec)
{
    int rc = g->t->prepare(g->t, j);
    if (rc) {
        snprintf(cm->err, sizeof cm->err, "replay: %s", g->t->err[0] ? g->t->err : "prepare failed");
        return -1;
    }
    double s;
    int reps = (int)lround(n);
    if (first_time(g, j->kernel, (double)j->m, (double)j->n, (double)j->k, (double)j->tokens, j->seqs)
        && g->t->run(g->t, j, 1, &s)) {
        snprintf(cm->err, sizeof cm->err, "replay: %s", g->t->err);
        return -1;
    }
    if (g->t->run(g->t, j, reps, &s)) {
        snprintf(cm->err, sizeof cm->err, "replay: %s", g->t->err);
        return -1;
    }
    *sec = s * reps;
    return 0;
}

/* --back-to-back: a timer job's preparation (buffers, and its untimed first run if its shape
 * is new); it is queued later, with the step's other items. */
static int prep_job(cost_model_t *cm, gm_t *g, pend_t *pe, calib_job_t *j, double n)
{
    if (j->kernel == CK_GEMM_MOE) {
        /* its own slot: the step's other grouped GEMMs stay prepared beside it */
        double key[6] = { (double)j->tokens, (double)j->experts, (double)j->topk, j->skew, (double)j->n, (double)j->k };
        int fresh = 0;
        if ((j->slot = replay_moe_slot(&g->moe, key, &fresh)) < 0) {
            snprintf(cm->err, sizeof cm->err, "replay --back-to-back: a step has more than %d grouped MoE GEMMs of"
                     " distinct shapes (the timer keeps %d prepared at once)", REPLAY_MOE_SLOTS, CALIB_MOE_SLOTS);
            return -1;
        }
        if (!fresh && calib_gpu_ready(g->t, j)) {   /* the same shape earlier in this step: prepared */
            pe->what = 2;
            pe->j = *j;
            pe->reps = (int)lround(n);
            return 0;
        }
    }
    int rc = g->t->prepare(g->t, j);
    if (rc) {
        snprintf(cm->err, sizeof cm->err, "replay: %s", g->t->err[0] ? g->t->err : "prepare failed");
        return -1;
    }
    double s;
    if (first_time(g, j->kernel, (double)j->m, (double)j->n, (double)j->k, (double)j->tokens, j->seqs)
        && g->t->run(g->t, j, 1, &s)) {
        snprintf(cm->err, sizeof cm->err, "replay: %s", g->t->err);
        return -1;
    }
    pe->what = 2;
    pe->j = *j;
    pe->reps = (int)lround(n);
    return 0;
}

static int job(cost_model_t *cm, gm_t *g, pend_t *pe, calib_job_t *j, double n, double *sec)
{
    return pe ? prep_job(cm, g, pe, j, n) : run_job(cm, g, j, n, sec);
}

static int attn_item(cost_model_t *cm, gm_t *g, pend_t *pe, const kcall_t *c, int expand_only, double n, double *sec)
{
    if (!pe) return run_attn(cm, g, c, expand_only, n, sec);
    if (g->slot_used == g->nslots) {
        slot_t *s = (slot_t *)realloc(g->slots, (size_t)(g->nslots + 1) * sizeof *s);
        if (!s) {
            snprintf(cm->err, sizeof cm->err, "out of memory");
            return -1;
        }
        memset(&s[g->nslots], 0, sizeof *s);
        g->slots = s;
        g->nslots++;
    }
    if (attn_prep(cm, g, c, expand_only, n, g->slot_used++, &pe->a) < 0) return -1;
    pe->what = 1;
    if (pe->a.rc) {
        snprintf(cm->err, sizeof cm->err, "%s: %s", pe->a.varlen ? "varlen" : attn_route_name(pe->a.route),
                 attn_strerror(pe->a.rc));
        return -1;
    }
    return 0;
}

static void b2b_free(gm_t *g)
{
    for (int i = 0; i < g->npend; i++)
        if (g->pend[i].what == 1) {
            attn_varlen_plan_free(g->pend[i].a.pl);
            attn_batch_free(g->pend[i].a.b);
        }
    g->npend = 0;
    g->slot_used = 0;
    g->moe.n = 0;
}

/* --back-to-back, before the step is launched: every grouped GEMM's slot as its job needs it.  A
 * later item's preparation may have grown the buffers an earlier grouped GEMM's pointers point
 * into (cuBLAS takes them as device arrays, made when it was prepared): that one is prepared
 * again here, before the launch, where the buffers no longer grow (each job's were fitted once). */
static int b2b_ready(cost_model_t *cm, gm_t *g)
{
    for (int pass = 0; pass <= REPLAY_MOE_SLOTS; pass++) {
        int again = 0;
        for (int i = 0; i < g->npend; i++) {
            pend_t *pe = &g->pend[i];
            if (pe->what != 2 || pe->j.kernel != CK_GEMM_MOE || calib_gpu_ready(g->t, &pe->j)) continue;
            if (g->t->prepare(g->t, &pe->j)) {
                snprintf(cm->err, sizeof cm->err, "replay: %s", g->t->err[0] ? g->t->err : "prepare failed");
                return -1;
            }
            g->reprep_pre++;
            again = 1;
        }
        if (!again) return 0;
    }
    snprintf(cm->err, sizeof cm->err, "replay --back-to-back: the step's grouped GEMMs cannot all be prepared at once");
    return -1;
}

#define CKB2B(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    snprintf(cm->err, sizeof cm->err, "%s:%d: %s", __FILE__, __LINE__, cudaGetErrorString(e_)); goto fail; } } while (0)

/* --back-to-back, a step that failed: the launch gate opened, the card's queue drained, the
 * step's prepared items given back; -1 */
static int b2b_abort(gm_t *g)
{
    calib_gpu_gate_open();
    cudaDeviceSynchronize();
    b2b_free(g);
    return -1;
}

/* --back-to-back: at least n events in g->ev, and the last step's end event made */
static int b2b_events(cost_model_t *cm, gm_t *g, int n)
{
    if (n > g->nev) {
        cudaEvent_t *e = (cudaEvent_t *)realloc(g->ev, (size_t)n * sizeof *e);
        if (!e) {
            snprintf(cm->err, sizeof cm->err, "out of memory");
            return -1;
        }
        g->ev = e;
        for (; g->nev < n; g->nev++) CKB2B(cudaEventCreate(&g->ev[g->nev]));
    }
    if (!g->ev_last_made) {
        CKB2B(cudaEventCreate(&g->ev_last));
        g->ev_last_made = 1;
    }
    return 0;
fail:
    return -1;
}

/* --back-to-back, before the step's first launch: the preparation's copies and first runs
 * finished (not timed), *t0 read, the launch gate closed */
static int b2b_start(cost_model_t *cm, double *t0)
{
    CKB2B(cudaDeviceSynchronize());
    *t0 = now_s();
    if (calib_gpu_gate_close() < 0) {
        snprintf(cm->err, sizeof cm->err, "the launch gate: %s", calib_gpu_gate_error());
        return -1;
    }
    return 0;
fail:
    return -1;
}

/* --back-to-back, after the step's synchronisation: *span from event `first` to event `last`,
 * *gap from the last step's end event to `first`; event `last` kept as the step's end for the
 * next step's gap (the spare one takes its place in the array) */
static int b2b_close(cost_model_t *cm, gm_t *g, int first, int last, double *span, double *gap)
{
    float ms;
    CKB2B(cudaEventElapsedTime(&ms, g->ev[first], g->ev[last]));
    *span = ms * 1e-3;
    if (g->ev_last_ok) {
        CKB2B(cudaEventElapsedTime(&ms, g->ev_last, g->ev[first]));
        *gap = ms * 1e-3;
        g->gap_steps++;
        if (g->step_first) g->gap_work++;
    }
    {
        cudaEvent_t e = g->ev_last;
        g->ev_last = g->ev[last];
        g->ev[last] = e;
    }
    g->ev_last_ok = 1;
    return 0;
fail:
    return -1;
}

/* --layer-order: each item's runs in g->lo_reps (grown to the step's items) and the layers
 * they interleave over (replay_layer_count).  -1: the step cannot run so, and runs in item
 * order: an item runs in some layers only (replay_layer_count), or an item's timer state is not
 * ready at the step's start (two jobs of one kernel that share it, as two GDN shapes do; they
 * would need a re-preparation a layer); -2: out of memory. */
static int lo_layers(gm_t *g)
{
    if (g->npend > g->cap_lo) {
        int cap = g->npend;
        int *r = (int *)realloc(g->lo_reps, (size_t)cap * sizeof *r);
        if (!r) return -2;
        g->lo_reps = r;
        double *t = (double *)realloc(g->lo_t, (size_t)cap * 3 * sizeof *t);
        if (!t) return -2;
        g->lo_t = t;
        int *w = (int *)realloc(g->ev_item, (size_t)(cap + 1) * sizeof *w);
        if (!w) return -2;
        g->ev_item = w;
        g->cap_lo = cap;
    }
    for (int i = 0; i < g->npend; i++) {
        const pend_t *pe = &g->pend[i];
        g->lo_reps[i] = !pe->what ? 0 : pe->what == 1 ? pe->a.reps : pe->reps;
        if (pe->what == 2 && !calib_gpu_ready(g->t, &pe->j)) return -1;
    }
    return replay_layer_count(g->lo_reps, g->npend);
}

/* --back-to-back: queue n runs of item i from its k-th (attention: layer k's pages on; a timer
 * job's runs go on through its rotation), the launch gate let go after CALIB_GATE_MAX_CALLS.
 * 0, or -1 with cm->err set. */
static int item_launch(cost_model_t *cm, gm_t *g, int i, int k, int n, long *queued)
{
    pend_t *pe = &g->pend[i];
    int rc = 0;
    if (pe->what == 1) {
        for (int r = k; r < k + n && !rc; r++) {
            rc = attn_launch(&pe->a, r);
            if (++*queued == CALIB_GATE_MAX_CALLS) calib_gpu_gate_open();
        }
        if (rc) snprintf(cm->err, sizeof cm->err, "%s: %s", pe->a.varlen ? "varlen" : attn_route_name(pe->a.route),
                         attn_strerror(rc));
    } else if ((rc = calib_gpu_launch(g->t, &pe->j, n, queued)) != 0) {
        snprintf(cm->err, sizeof cm->err, "replay: %s", g->t->err);
    }
    return rc ? -1 : 0;
}

/* --back-to-back --layer-order: the step's items queued as an engine's forward pass runs them,
 * layer by layer (lo_layers), behind one launch gate, then one synchronisation.  Events: one
 * before the layers and one after, one before and after each launch of the middle layer only,
 * and a pair around each item run after the layers.  An event between every launch would put
 * ~1.5 us of the GPU's time between kernels (240 launches a step of a 40-layer model: 3-6% of
 * a decode step); a pair a launch of one layer costs a layer's few.  The layers' items all run
 * once a layer on the same batch, so each one's time is its share of the middle layer's times
 * (the events' spans) times the layers' span; an item after the layers, its own pair's span.
 * The step's GPU time is the first event to the last; *gap as b2b_run's. */
static int lo_run(cost_model_t *cm, gm_t *g, int layers, double *span, double *gap, double *t0, double *t1)
{
    long queued = 0;
    int e = 2, mid = layers / 2, nl = 0, need, after;   /* events 0 and 1: the layers' start and end */
    for (int i = 0; i < g->npend; i++)
        if (g->pend[i].what) nl++;
    need = 2 + 2 * nl;                              /* the middle layer's pairs and the items after */
    if (b2b_events(cm, g, need) < 0) goto fail;
    if (b2b_start(cm, t0) < 0) goto fail;
    if (g->step_clk && stamp_launch(cm, g, 0) < 0) goto fail;      /* the step's start */
    CKB2B(cudaEventRecord(g->ev[0], 0));
    for (int k = 0; k < layers; k++)
        for (int i = 0; i < g->npend; i++) {
            if (g->lo_reps[i] != layers) continue;
            if (k == mid) {
                g->ev_item[e / 2] = i;
                CKB2B(cudaEventRecord(g->ev[e], 0));
            }
            if (item_launch(cm, g, i, k, 1, &queued) < 0) goto fail;
            if (k == mid) {
                CKB2B(cudaEventRecord(g->ev[e + 1], 0));
                e += 2;
            }
        }
    CKB2B(cudaEventRecord(g->ev[1], 0));
    after = e;                                      /* the items after the layers: a pair each */
    for (int i = 0; i < g->npend; i++) {
        int r = g->lo_reps[i];
        if (!r || r == layers) continue;
        g->ev_item[e / 2] = i;
        CKB2B(cudaEventRecord(g->ev[e], 0));
        if (item_launch(cm, g, i, 0, r, &queued) < 0) goto fail;
        CKB2B(cudaEventRecord(g->ev[e + 1], 0));
        e += 2;
    }
    if (g->step_clk && stamp_launch(cm, g, 1) < 0) goto fail;      /* the step's end */
    g->gate_late += calib_gpu_gate_open();
    CKB2B(cudaDeviceSynchronize());          /* once a step */
    *t1 = now_s();
    {
        float ms;
        int n = g->npend;
        double *sample = g->lo_t, *aft = g->lo_t + n, *sec = g->lo_t + 2 * n;
        for (int i = 0; i < n; i++) {
            sample[i] = aft[i] = 0;
            sec[i] = g->pend[i].sec;
        }
        for (int x = 2; x < e; x += 2) {
            CKB2B(cudaEventElapsedTime(&ms, g->ev[x], g->ev[x + 1]));
            (x < after ? sample : aft)[g->ev_item[x / 2]] = ms * 1e-3;
        }
        CKB2B(cudaEventElapsedTime(&ms, g->ev[0], g->ev[1]));
        replay_layer_share(g->lo_reps, n, layers, sample, aft, ms * 1e-3, sec);
        for (int i = 0; i < n; i++) g->pend[i].sec = sec[i];
        if (b2b_close(cm, g, 0, e > after ? e - 1 : 1, span, gap) < 0) goto fail;   /* to the step's last event */
    }
    return 0;
fail:
    return b2b_abort(g);
}

/* --back-to-back: the step's prepared items queued on the default stream in their order, an
 * event before and after each, behind one launch gate, then one synchronisation.  Each item's
 * time is its events' span; the step's GPU time the first event to the last.  *reprep: the
 * GPU's gaps before the items re-prepared inside the step (the item queued before one's end
 * event to its start event: the re-preparation's host sync, its copies, and the launch gate
 * closed again after it), which the step's time leaves out.  *gap: the GPU's time from the
 * last step's last end event to this step's first start event (0 for the first step): the
 * card idle while the host prepared this step, besides the preparation's own GPU work (the
 * first runs of new shapes, copies, fills) and the launch gate's hold.  *t0, *t1: the host
 * clock at the first launch and after the synchronisation. */
static int b2b_run(cost_model_t *cm, gm_t *g, double *span, double *reprep, double *gap, double *t0, double *t1)
{
    int rc = 0, first = -1, last = -1, layers = 0;
    long queued = 0;
    *span = *reprep = *gap = 0;
    if (b2b_ready(cm, g) < 0) goto fail;
    layers = g->layer_order ? lo_layers(g) : 0;
    if (layers == -2) {
        snprintf(cm->err, sizeof cm->err, "out of memory");
        goto fail;
    }
    g->lo_this = layers > 0;
    if (layers > 0) {
        g->lo_steps++;
        return lo_run(cm, g, layers, span, gap, t0, t1);
    }
    if (layers < 0) g->lo_fallback++;
    if (b2b_events(cm, g, 2 * g->npend) < 0 || b2b_start(cm, t0) < 0) goto fail;
    for (int i = 0; i < g->npend && !rc; i++) {
        pend_t *pe = &g->pend[i];
        pe->after = -1;
        if (!pe->what) continue;
        if (pe->what == 2 && !calib_gpu_ready(g->t, &pe->j)) {
            /* a later item of its kernel prepared the timer's state over this one's (two GDN jobs
             * of other shapes in one step: one set of sequence offsets): prepare it again here
             * (it synchronises: the GPU idles, a gap between the items' events).  Never a grouped
             * GEMM (a slot each, b2b_ready), nor a GEMM or the elementwise proxy (buffers only grow)
             * unless a preparation on a card short of memory gave the timer's buffers back */
            g->gate_late += calib_gpu_gate_open();
            if (g->t->prepare(g->t, &pe->j)) {
                snprintf(cm->err, sizeof cm->err, "replay: %s", g->t->err[0] ? g->t->err : "prepare failed");
                goto fail;
            }
            g->reprep++;
            pe->after = last;             /* -1 before the step's first item: outside the span */
            if (calib_gpu_gate_close() < 0) {
                snprintf(cm->err, sizeof cm->err, "the launch gate: %s", calib_gpu_gate_error());
                goto fail;
            }
            queued = 0;
        }
        if (g->step_clk && first < 0) {         /* the step's start: one more launch behind the gate */
            if (stamp_launch(cm, g, 0) < 0) goto fail;
            if (++queued == CALIB_GATE_MAX_CALLS) calib_gpu_gate_open();
        }
        CKB2B(cudaEventRecord(g->ev[2 * i], 0));
        rc = item_launch(cm, g, i, 0, pe->what == 1 ? pe->a.reps : pe->reps, &queued);
        CKB2B(cudaEventRecord(g->ev[2 * i + 1], 0));
        if (first < 0) first = i;
        last = i;
    }
    if (g->step_clk && first >= 0 && !rc && stamp_launch(cm, g, 1) < 0) goto fail;   /* the step's end */
    g->gate_late += calib_gpu_gate_open();
    CKB2B(cudaDeviceSynchronize());          /* once a step */
    *t1 = now_s();
    if (rc) goto fail;
    for (int i = 0; i < g->npend; i++) {
        pend_t *pe = &g->pend[i];
        if (!pe->what) continue;
        float ms;
        CKB2B(cudaEventElapsedTime(&ms, g->ev[2 * i], g->ev[2 * i + 1]));
        pe->sec = ms * 1e-3;
        if (pe->after >= 0) {
            CKB2B(cudaEventElapsedTime(&ms, g->ev[2 * pe->after + 1], g->ev[2 * i]));
            *reprep += ms * 1e-3;
        }
    }
    /* a step without GPU work keeps the last step's end event */
    if (first >= 0 && b2b_close(cm, g, 2 * first, 2 * last + 1, span, gap) < 0) goto fail;
    return 0;
fail:
    return b2b_abort(g);
}

typedef struct {
    cost_model_t *cm;
    cost_breakdown_t *o;
    const cost_breakdown_t *pred;
} gm_ctx_t;

static int gm_item(void *vctx, const cost_item_t *it)
{
    gm_ctx_t *x = (gm_ctx_t *)vctx;
    cost_model_t *cm = x->cm;
    gm_t *g = (gm_t *)cm->impl;
    double sec = 0;
    calib_job_t j;
    memset(&j, 0, sizeof j);
    pend_t *pe = NULL;               /* --back-to-back: prepared here, queued after the step's last item */
    if (g->b2b) {
        if (g->npend == g->cap_pend) {
            int cap = g->cap_pend ? 2 * g->cap_pend : 64;
            pend_t *p = (pend_t *)realloc(g->pend, (size_t)cap * sizeof *p);
            if (!p) {
                snprintf(cm->err, sizeof cm->err, "out of memory");
                return -1;
            }
            g->pend = p;
            g->cap_pend = cap;
        }
        pe = &g->pend[g->npend++];
        pe->it = *it;
        pe->what = 0;
        pe->sec = 0;
    }
    switch (it->kind) {
    case CI_ATTN: if (attn_item(cm, g, pe, it->call, 0, it->count, &sec) < 0) return -1; break;
    case CI_BRIDGE: if (attn_item(cm, g, pe, it->call, 1, it->count, &sec) < 0) return -1; break;
    case CI_GEMM:
        if (it->moe && g->moe_grouped) {
            /* routed experts: the layer's grouped GEMM, run once per layer for the busiest
             * group (the layer's tokens spread over the experts as law_moe_counts spreads
             * them, as the item's groups are); the other groups are in that call */
            if (it->moe != 2) break;
            j.kernel = CK_GEMM_MOE;
            j.tokens = (long)it->tokens;
            j.experts = g->m->moe_experts;
            j.topk = g->m->moe_topk;
            j.skew = g->m->moe_skew;
            j.n = (long)it->n; j.k = (long)it->k;
            if (job(cm, g, pe, &j, it->count / it->experts, &sec) < 0) return -1;
            break;
        }
        j.kernel = CK_GEMM;
        j.m = (long)it->m; j.n = (long)it->n; j.k = (long)it->k;
        if (job(cm, g, pe, &j, it->count, &sec) < 0) return -1;
        break;
    case CI_GDN:
        j.kernel = CK_GDN;
        j.tokens = (long)it->tokens;
        j.seqs = (int)it->seqs;
        if (job(cm, g, pe, &j, it->count, &sec) < 0) return -1;
        break;
    case CI_ELEM:
        /* every layer's norms and SiLU-mul run after its GEMMs, which stream far more than the
         * L2: the runs L2-cold, each on tensors of its own (calib's elementwise.cold; the
         * layers' runs back to back would otherwise find a rotation that fits the L2 warm
         * after its first pass) */
        j.kernel = CK_ELEM;
        j.cold = 1;
        j.tokens = (long)it->tokens;
        if (job(cm, g, pe, &j, it->count, &sec) < 0) return -1;
        break;
    case CI_ALLREDUCE: break;           /* one GPU: the profile's all-reduce is added per step */
    case CI_STEP: sec = x->pred ? x->pred->overhead : 0; break;
    }
    if (pe) {
        pe->sec = sec;                /* what == 0: no GPU work; the others' come from their events */
        return 0;
    }
    item_log(g, it, sec);
    cost_breakdown_add(x->o, it, sec);
    return 0;
}

static int gm_step(cost_model_t *cm, const cost_step_t *in, cost_breakdown_t *o)
{
    gm_t *g = (gm_t *)cm->impl;
    cost_breakdown_t pb;
    memset(&pb, 0, sizeof pb);
    if (g->pred && g->pred->step(g->pred, in, &pb) < 0) {
        snprintf(cm->err, sizeof cm->err, "prediction: %s", g->pred->err);
        return -1;
    }
    memset(o, 0, sizeof *o);
    g->cur_type = in->rows == in->decode_rows ? STEP_DECODE_ONLY : in->decode_rows == 0 ? STEP_PREFILL_ONLY : STEP_MIXED;
    gm_ctx_t x = { cm, o, g->pred ? &pb : NULL };
    replay_rec_t r;
    memset(&r, 0, sizeof r);
    g->step_first = 0;
    g->stamped = 0;
    /* --step-clock item by item: stamped around the step's items (back to back: in b2b_run) */
    if (g->step_clk && !g->b2b && stamp_launch(cm, g, 0) < 0) return -1;
    double t0 = now_s();
    if (cost_enumerate(g->m, &g->r, in, gm_item, &x) < 0) {
        b2b_free(g);
        return -1;
    }
    double t1 = now_s();
    if (g->step_clk && !g->b2b && stamp_launch(cm, g, 1) < 0) return -1;
    if (g->b2b) {
        /* the step's items, all prepared: queued back to back, one sync; each item's time from
         * its events, the step's GPU time the span of all (items and their gaps) less the gaps
         * that re-preparations inside it left */
        double span = 0, sum = 0, reprep = 0, gap = 0;
        if (b2b_run(cm, g, &span, &reprep, &gap, &t0, &t1) < 0) return -1;
        for (int i = 0; i < g->npend; i++) {
            const pend_t *pe = &g->pend[i];
            item_log(g, &pe->it, pe->sec);
            cost_breakdown_add(o, &pe->it, pe->sec);
            if (pe->what) sum += pe->sec;
        }
        b2b_free(g);
        o->total += span - reprep - sum;  /* the step: the span less re-preparations' gaps, plus the
                                             profile's overhead */
        r.b2b = 1;
        r.span = span;
        r.items_sum = sum;
        r.wall = t1 - t0;
        r.reprep = reprep;
        r.gap = gap;
        r.lo = g->layer_order;
        r.layered = g->lo_this;
    }
    if (pb.allreduce > 0) {            /* TP > 1 on one GPU: the profile's all-reduce */
        o->allreduce += pb.allreduce;
        o->total += pb.allreduce;
    }
    r.no = g->log.n + 1;
    r.type = g->cur_type;
    r.predicted = pb.total;
    r.measured = o->total;
    r.pred_attn = pb.attn;
    r.meas_attn = o->attn;
    clock_step(g, t0, t1, &r);
    if (g->step_clk && stamp_read(cm, g, &r) < 0) return -1;
    if (replay_log_add(&g->log, &r) < 0) {
        snprintf(cm->err, sizeof cm->err, "out of memory");
        return -1;
    }
    return 0;
}

static void gm_destroy(cost_model_t *cm)
{
    gm_t *g = (gm_t *)cm->impl;
    b2b_free(g);
    if (g->reprep)
        fprintf(stderr, "replay: %ld items re-prepared inside their step (another item of their kernel in the same step;"
                " the GPU idled meanwhile: that gap is left out of the step's time, reprep_s)\n", g->reprep);
    if (g->reprep_pre)
        fprintf(stderr, "replay: %ld grouped GEMMs prepared again before their step's launch (a later item's preparation"
                " had grown the buffers they point into; untimed, in the step's gap_s)\n", g->reprep_pre);
    if (g->layer_order)
        fprintf(stderr, "replay: layer order: %ld steps layer by layer, %ld in item order (an item's timer state shared"
                " with another item of its kernel, or items in some layers only)\n", g->lo_steps, g->lo_fallback);
    free(g->ev_item);
    free(g->lo_reps);
    free(g->lo_t);
    g->ev_item = NULL;
    g->lo_reps = NULL;
    g->lo_t = NULL;
    if (g->b2b && g->gap_steps)
        fprintf(stderr, "replay: %ld of %ld steps' gap_s hold untimed first runs of new shapes (every gap_s also holds"
                " its preparation's copies and fills, and the launch gate's hold)\n", g->gap_work, g->gap_steps);
    if (g->gate_late)
        fprintf(stderr, "replay: %ld attention items' launch gate let go by its %g s limit (the host queued its"
                " calls slower): those may include the host's launch rate\n", g->gate_late, CALIB_GATE_MAX_S);
    if (g->pool_eng.ok) attn_kv_free(&g->pool_eng.kv);
    if (g->pool16.ok) attn_kv_free(&g->pool16.kv);
    cudaFree(g->q);
    cudaFree(g->out);
    cudaFree(g->ws);
    for (int i = 0; i < g->nslots; i++) {
        cudaFree(g->slots[i].q);
        cudaFree(g->slots[i].out);
        cudaFree(g->slots[i].ws);
    }
    free(g->slots);
    for (int i = 0; i < g->nev; i++) cudaEventDestroy(g->ev[i]);
    if (g->ev_last_made) cudaEventDestroy(g->ev_last);
    free(g->ev);
    free(g->pend);
    if (g->stamps) stamp_span_free(g->stamps);
    free(g->stamps);
    if (g->t) g->t->destroy(g->t);
    free(g->perm);
    free(g->log.rec);
    free(g->seen);
    if (g->clk_running) {
        g->clk_stop = 1;
        pthread_join(g->clk_tid, NULL);
    }
    free(g->clk_buf);
    gpuclock_close(&g->nvml);
    if (g->items) fclose(g->items);
    free(g);
    free(cm);
}

extern "C" void replay_items_log(cost_model_t *cm, FILE *f)
{
    gm_t *g = (gm_t *)cm->impl;
    g->items = f;
    if (f) fprintf(f, "step,type,law,a,b,c,d,count,predicted_s,measured_s,from_grid\n");
}

extern "C" const replay_rec_t *replay_records(const cost_model_t *cm, long *n)
{
    const gm_t *g = (const gm_t *)cm->impl;
    *n = g->log.n;
    return g->log.rec;
}

static cost_model_t *replay_gpu_sized(const model_t *m, int tp, int page, int kv_fp8, cost_model_t *pred,
                                      long max_model_len, double kv_tokens, int moe_grouped, char err[COST_ERR_MAX]);

extern "C" cost_model_t *replay_gpu_new(const model_t *m, int tp, int page, int kv_fp8, cost_model_t *pred,
                                        char err[COST_ERR_MAX])
{
    return replay_gpu_sized(m, tp, page, kv_fp8, pred, 262144, 0, 0, err);
}

/* replay_gpu_new with the KV pool sized from the scenario: its max_model_len and the
 * engine's capacity in tokens; moe_grouped: the routed experts of a MoE layer run as one
 * grouped GEMM (as law gemm.moe.fp16 prices them), else one GEMM per group of experts. */
static cost_model_t *replay_gpu_sized(const model_t *m, int tp, int page, int kv_fp8, cost_model_t *pred,
                                      long max_model_len, double kv_tokens, int moe_grouped, char err[COST_ERR_MAX])
{
    gm_t *g = (gm_t *)calloc(1, sizeof *g);
    cost_model_t *cm = g ? replay_model_new("gpu", g, gm_step, gm_destroy) : NULL;
    char terr[256];
    if (!cm) {
        free(g);
        snprintf(err, COST_ERR_MAX, "out of memory");
        return NULL;
    }
    g->m = m;
    g->max_model_len = max_model_len > 0 ? max_model_len : 262144;
    g->kv_tokens = kv_tokens;
    g->page = page;
    g->kv_fp8 = kv_fp8;
    g->pred = pred;
    g->moe_grouped = m->moe_experts > 0 && moe_grouped;
    if (model_rank(m, tp, &g->r) < 0) {
        snprintf(err, COST_ERR_MAX, "tensor_parallel_size %d does not divide the model's heads", tp);
        gm_destroy(cm);
        return NULL;
    }
    if (!attn_gpu_available()) {
        snprintf(err, COST_ERR_MAX, "no CUDA device: the GPU replay needs one");
        gm_destroy(cm);
        return NULL;
    }
    g->t = calib_gpu_timer_new(terr);
    if (!g->t || g->t->setup(g->t, m, &g->r) < 0) {
        snprintf(err, COST_ERR_MAX, "GPU timer: %s", g->t ? g->t->err : terr);
        gm_destroy(cm);
        return NULL;
    }
    clock_open(g);
    int dev = 0, l2 = 0;
    cudaGetDevice(&dev);
    if (cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev) != cudaSuccess || l2 <= 0) l2 = 64 << 20;
    g->l2_bytes = l2;
    if (cudaEventCreate(&g->e0) != cudaSuccess || cudaEventCreate(&g->e1) != cudaSuccess
        || pool_make(cm, g, &g->pool_eng, kv_fp8 ? ATTN_FP8_E5M2 : ATTN_FP16, page) < 0
        || (kv_fp8 && pool_make(cm, g, &g->pool16, ATTN_FP16, ROUTE_NATIVE_PAGE) < 0)) {
        snprintf(err, COST_ERR_MAX, "%s", cm->err[0] ? cm->err : "CUDA events");
        gm_destroy(cm);
        return NULL;
    }
    return cm;
}

/* ---- bin/pacesim-gpu ------------------------------------------------------------ */

int main(int argc, char **argv)
{
    const char *file = NULL, *steps = NULL, *items = NULL, *sets[64];
    int ns = 0, b2b = 0, step_clk = 0, layer_order = 0;
    if (argc < 3 || strcmp(argv[1], "replay")) {
        fprintf(stderr, "usage: pacesim-gpu replay FILE [--set k=v]... [--steps OUT.csv] [--items OUT.csv] [--back-to-back]\n"
                        "                  [--layer-order] [--step-clock]\n"
                        "  --back-to-back  each step's items all prepared first, then queued on one stream as an engine\n"
                        "                  queues them, one sync a step; --steps adds gpu_span_s, items_sum_s, wall_s,\n"
                        "                  reprep_s, gap_s\n"
                        "  --layer-order   with --back-to-back: the items queued layer by layer, as a forward pass runs\n"
                        "                  them (each layer's attention between its GEMMs), not each item's layers together\n"
                        "  --step-clock    each step's mean SM clock over the step itself, from clock64 and %%globaltimer\n"
                        "                  stamped by a kernel before its first item and after its last (~2-5 us a step);\n"
                        "                  --steps adds sm_mhz_step, which rescore --recorded-clock prices at\n");
        return 2;
    }
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--set") && i + 1 < argc) {
            if (ns == 64) {
                fprintf(stderr, "pacesim-gpu: at most 64 --set\n");
                return 2;
            }
            sets[ns++] = argv[++i];
        } else if ((!strcmp(argv[i], "--steps") || !strcmp(argv[i], "--items")) && i + 1 < argc) {
            const char **o = argv[i][2] == 's' ? &steps : &items;
            if (*o) {                   /* which one is meant? */
                fprintf(stderr, "pacesim-gpu: %s given twice\n", argv[i]);
                return 2;
            }
            *o = argv[++i];
        }
        else if (!strcmp(argv[i], "--gpu")) continue;
        else if (!strcmp(argv[i], "--back-to-back") || !strcmp(argv[i], "--step-clock")
                 || !strcmp(argv[i], "--layer-order")) {
            int *flag = argv[i][2] == 'b' ? &b2b : argv[i][2] == 'l' ? &layer_order : &step_clk;
            if ((*flag)++) {
                fprintf(stderr, "pacesim-gpu: %s given twice\n", argv[i]);
                return 2;
            }
        }
        else if (argv[i][0] == '-') {
            fprintf(stderr, "pacesim-gpu: unknown option %s\n", argv[i]);
            return 2;
        } else if (file) {
            fprintf(stderr, "pacesim-gpu: one scenario a replay (%s, then %s)\n", file, argv[i]);
            return 2;
        } else file = argv[i];
    }
    if (!file) {
        fprintf(stderr, "pacesim-gpu: no scenario\n");
        return 2;
    }
    if (layer_order && !b2b) {
        fprintf(stderr, "pacesim-gpu: --layer-order needs --back-to-back (item by item, every item runs alone)\n");
        return 2;
    }
    {
        char cerr[SWEEP_ERR_MAX];
        if (sweep_set_clash(sets, ns, NULL, "--sweep", cerr, sizeof cerr)) {
            fprintf(stderr, "pacesim-gpu: %s\n", cerr);
            return 2;
        }
    }
    const char *outs[2] = { steps, items };     /* an output over an input: it replaced the scenario */
    for (int k = 0; k < 2; k++)
        if (outs[k] && (outfile_same(outs[k], file) || (k && steps && outfile_same(items, steps)))) {
            fprintf(stderr, "pacesim-gpu: %s %s: that is %s (it would be overwritten)\n", k ? "--items" : "--steps",
                    outs[k], outfile_same(outs[k], file) ? "the scenario" : "--steps' file");
            return 2;
        }
    setup_t u;
    if (setup_open(&u, file, sets, ns) < 0 || !u.has_prof) {
        fprintf(stderr, "%s\n", u.has_scn && !u.s.profile_path[0] ? "replay needs a profile (the prediction)" : u.err);
        setup_close(&u);
        return 2;
    }
    fputs(u.warn, stderr);
    if (u.s.cluster.enabled) {    /* one engine's steps run on the GPU; a cluster's other replicas by the profile */
        const char *why = "cluster: a replay runs the steps of one engine on one GPU; give a scenario without cluster:";
        if (u.s.cluster.line > 0) fprintf(stderr, "%s:%d:%d: %s\n", file, u.s.cluster.line, u.s.cluster.col, why);
        else fprintf(stderr, "pacesim-gpu: --set %s\n", why);
        setup_close(&u);
        return 2;
    }
    {   /* nor a file the scenario reads: opening it would empty the profile or the model */
        const char *in[SCN_MAX_INPUTS];
        int nin = scn_input_files(&u.s, in);
        for (int k = 0; k < 2; k++)
            for (int j = 0; j < nin; j++)
                if (outs[k] && outfile_same(outs[k], in[j])) {
                    fprintf(stderr, "pacesim-gpu: %s %s: that is an input of the run (it would be overwritten)\n",
                            k ? "--items" : "--steps", outs[k]);
                    setup_close(&u);
                    return 2;
                }
    }
    /* the outputs opened before anything runs, as pacesim's: a FIFO without a reader is refused,
     * not waited on (outfile_open says why); the items' log is no stdout, which the report takes */
    FILE *fi = NULL, *fs = NULL;
    if (items && !strcmp(items, "-")) {
        fprintf(stderr, "pacesim-gpu: --items -: stdout carries the report: give a file\n");
        setup_close(&u);
        return 2;
    }
    if ((items && !(fi = outfile_open(items))) || (steps && !(fs = outfile_open(steps)))) {
        if (fi) fclose(fi);
        setup_close(&u);
        return 2;
    }
    engine_t eg;
    memset(&eg, 0, sizeof eg);
    cost_model_t *pm = NULL, *gm = NULL;
    char cerr[COST_ERR_MAX];
    int rc = 0;
    long n = 0;
    const replay_rec_t *rec;
    /* the prediction: the setup's engine, priced by the profile */
    if (engine_run(&u.e) < 0) {
        fprintf(stderr, "%s\n", u.e.err);
        rc = 1;
        goto done;
    }
    /* the measurement: the GPU, with a fresh profile model pricing each step beside it;
     * PACESIM_REPLAY_DRY checks the plumbing with no GPU: that profile model alone */
    if (!(pm = setup_cost_new(&u))) {
        fprintf(stderr, "%s\n", u.err);
        rc = 1;
        goto done;
    }
    cost_profile_envelope_quiet(pm);    /* the prediction's run above has warned */
    if (!getenv("PACESIM_REPLAY_DRY")) {
        const scn_engine_t *en = &u.s.engine;
        if (!(gm = replay_gpu_sized(&u.s.model, en->tensor_parallel_size, u.e.rep[0].sc.block, en->kv_cache_dtype == KV_FP8_E5M2,
                                    pm, en->max_model_len, (double)u.e.rep[0].sc.capacity * u.e.rep[0].sc.block,
                                    prof_find(&u.prof, "gemm.moe.fp16") != NULL, cerr))) {
            fprintf(stderr, "%s\n", cerr);
            rc = 1;
            goto done;
        }
        ((gm_t *)gm->impl)->b2b = b2b;
        ((gm_t *)gm->impl)->layer_order = layer_order;
        ((gm_t *)gm->impl)->step_clk = step_clk;
        replay_items_log(gm, fi);    /* the model closes it */
        fi = NULL;
    }
    if (setup_engine(&u, gm ? gm : pm, &eg) < 0 || engine_run(&eg) < 0) {
        fprintf(stderr, "%s\n", eg.err);
        rc = 1;
        goto done;
    }
    rec = gm ? replay_records(gm, &n) : NULL;
    if (fs) {
        FILE *fw = fs;
        fs = NULL;                   /* replay_steps_csv closes it */
        if (replay_steps_csv(fw, rec, n) < 0) {
            fprintf(stderr, "pacesim-gpu: %s: %s\n", steps, strerror(errno));
            rc = 1;
            goto done;
        }
    }
    if (replay_report(stdout, &u.s, file, u.prof.gpu, rec, n, &u.e, &eg) < 0) {
        fprintf(stderr, "pacesim-gpu: out of memory\n");
        rc = 1;
        goto done;
    }
    if (gm) {
        const gm_t *g = (const gm_t *)gm->impl;
        if (g->clk_n) printf("   SM clock during the steps (NVML, every ~2 ms): mean %.0f MHz, lowest step mean %.0f MHz\n",
                             g->clk_sum / g->clk_n, g->clk_min);
        else printf("   SM clock: NVML not available\n");
        if (g->step_clk)
            printf("   SM clock over each step (--step-clock, clock64 over %%globaltimer): mean %.0f MHz, lowest step %.0f MHz"
                   " (%ld steps; %ld without an SM stamped at both ends)\n",
                   g->sclk_n ? g->sclk_sum / g->sclk_n : NAN, g->sclk_n ? g->sclk_min : NAN, g->sclk_n, g->sclk_nan);
    }
done:
    engine_free(&eg);
    cost_free(gm);
    cost_free(pm);
    if (fi) fclose(fi);
    if (fs && fs != stdout) fclose(fs);
    setup_close(&u);
    return rc;
}
