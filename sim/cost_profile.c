/* cost_profile.c: the profile cost model -- every item of a step priced by its law, from
 * the law's measured points where calib measured its shape and by the fitted law elsewhere,
 * at the card's sustained-load clock (heat.h).
 *
 * An item whose group of points exists (cost_grid.h) is priced by piecewise-linear
 * interpolation along the law's axis, and beyond the group's ends by the law scaled to meet
 * the end point (an attention call past its page size's last context: by another page's
 * points that reach it, scaled the same way).  The reference model's shapes are what calib measures, so inside the grid
 * an item costs what was measured; the law carries the rest (other shapes, heterogeneous
 * batches, profiles without points).  Invariant: a model borrows its profile and model and
 * prices an item from them alone, plus the heat state its previous steps left. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cost.h"
#include "cost_grid.h"
#include "fnv.h"
#include "heat.h"
#include "hwcat.h"
#include "law.h"

typedef struct {
    const profile_t *p;
    const model_t *m;
    model_rank_t r;
    cost_hw_t hw;                 /* the profile's SMs and ceilings (features) */
    cost_grid_t grid;             /* the laws' measured points */
    double heat;                  /* the sustained-load state h after the last step (heat.h) */
    double heat_mean;             /* h's mean over the last step priced */
    double clock_mean;            /* the clock (MHz) the step is priced at: heat_clock(heat_mean) */
    double clock_model;           /* the model's own clock over the last step (before a clock schedule) */
    double f_cold, f_hot;         /* the clocks the heat state maps between (heat.h): NVML's pair, or the
                                     SMs' counters' (cost_profile_clock_units) */
    const double *clk;            /* cost_profile_clock_schedule(): step k priced at clk[k] MHz */
    long nclk, nstep;             /*   its length; the steps priced so far */
    const double *idl;            /* cost_profile_idle_schedule(): step k after idl[k] s of GPU idle */
    long nidl;                    /*   its length */
    double idle_last;             /* the idle before the last step priced (s) */
    struct { double m, n, k, wb; int pt; } gemm_memo[16]; /* gemm_choice()'s recent answers */
    int gemm_nmemo, gemm_next;
    struct { double n, k, wb; int lo, hi; } kern_memo[32]; /* the gemm kernel ranges' shapes found */
    int kern_nmemo, kern_next;
    /* the profile's envelope (profile.h): per law its points' ranges, the gemm shapes
     * measured (n, k, wb and their largest m), and what the run priced outside it */
    int env;                      /* 1: the profile records an envelope */
    int shape_out;                /* the run's attention shape or TP degree is not the envelope's */
    char shape_why[192];
    double (*lo)[PROF_MAX_COLS], (*hi)[PROF_MAX_COLS];
    int *nk;
    double (*gemm_nk)[4];         /* n, k, wb, largest m */
    int ngemm_nk;
    long *out_n;                  /* per law: items priced outside, */
    double *out_s;                /*   their seconds, */
    char (*out_why)[192];         /*   the first one's reason */
    double total_s;               /* every item's seconds */
    int env_taken;                /* the warnings were handed to the caller (cost_profile_envelope_warnings) */
    const hw_link_t *link;        /* the all-reduce's ring where the profile has no law (hwcat.h) */
    int tp;
    /* bounds (bound_item): the card's peaks, each law's efficiency at its top measured points,
     * and what the bounds moved */
    double pk_flops, pk_flops8, pk_bw;
    const char *pk_from;          /* "datasheet" or "measured" */
    double (**pe)[2];             /* per law: its points' (floor, measured time), ascending in floor (NULL: none) */
    int *npe;
    double (*cold)[2];            /* elementwise.cold's points: tokens, cold over warm price (elem_cold) */
    double gemm_u_law;            /* the gemm law's hot probes' FLOP rate over the peak (gemm_hot_init) */
    int scheduled;                /* the step is priced at a clock the diagnostic's schedule gave */
    int compute_hot;              /* cost_profile_compute_hot(): GEMMs by the compute-bound probe (1: at a
                                     scheduled clock, 2: at every clock; 0: never; the default 2 where
                                     the step law is measured, else 0) */
    int ncold;
    long n_floor, n_cap;
    double s_floor, s_cap;        /* seconds the floor added, the cap removed (pass 1) */
    double all_s;                 /* every item's seconds (pass 1), for the bounds' share */
    int no_bounds;                /* cost_profile_set_bounds(cm, 0): the laws' prices as they are */
    int last_bound;               /* pm_item's last item: 0 as priced, 1 raised to its floor, 2 capped */
    double last_raw;              /*   and its price before */
    struct spread_memo *spread;   /* per law: its spread points' corrections (spread_points), NULL: none yet */
    int spreading;                /* 1 while a spread point's call is priced (no correction of its own) */
    struct near_memo *near;       /* per law: its points' features and residuals (near_corr), NULL: none yet */
} pm_t;

/* A many-request point of a decode law: its requests' q, page, contexts (from lo to hi, ctx_min
 * to seq_len, law.h; lo 0: every request at hi), their count, and c, its measured time over the
 * price this model gives the same call without the correction (split_decode). */
typedef struct { double q, page, lo, hi, rows, c; } spread_pt_t;
struct spread_memo { int done, n; spread_pt_t *pt; };
/* A law's points as near_corr reads them: nf log features each (lf) and ln(time / law) (lr). */
struct near_memo { int done, n, nf; double *lf, *lr; };
static double near_corr(pm_t *pm, int li, const double *feat);

/* Extrapolation bounded by physics.  Every item is priced at least at its roofline floor,
 * max(FLOPs / peak, bytes / bandwidth) with cost_item_traffic's least work and the card's
 * datasheet peaks (hwcat.h, the profile's GPU recognised by hw_gpu_match; else the profile's
 * measured ceilings).  An item priced outside the profile's measured envelope is also priced
 * at most at 1 / BOUND_SLACK times what its law's nearest measured points would take at its
 * size: the points whose floor lies within a factor BOUND_NEAR of the item's (for an item past
 * every point, or before every point: within BOUND_NEAR of the largest, or smallest, floor);
 * each point's time scaled by the item's floor over the point's where the item is the larger
 * (the item runs at the point's roofline efficiency), its time as it is where the item is the
 * smaller; the largest of these.  In words: an extrapolated item's achieved rate may not fall
 * below half the lowest rate its law achieved at measured points of its size, nor a small
 * item cost more than twice a measured point of its size.  Inside the envelope the floor alone
 * applies, and measured points lie above it (physics; tests/check_bounds.c), so in-envelope
 * prices do not move. */
#define BOUND_SLACK 0.5
#define BOUND_NEAR 4.0

/* The point row an item would be, in its law's columns: 1, or 0 if it has none (a
 * batch of unlike rows). */
static int item_row(const cost_item_t *it, double *row)
{
    switch (it->kind) {
    case CI_GEMM:
        row[GEMM_COL_M] = it->m;
        row[GEMM_COL_N] = it->n;
        row[GEMM_COL_K] = it->k;
        row[GEMM_COL_WB] = it->wb;
        return 1;
    case CI_GDN: row[GDN_COL_TOKENS] = it->tokens; row[GDN_COL_SEQS] = it->seqs; return 1;
    case CI_ELEM: row[0] = it->tokens; return 1;
    case CI_ATTN: case CI_BRIDGE: {
        const kcall_t *c = it->call;
        /* one request's rows (a prefill row, or a small-q row expanded token-wise) */
        for (int i = 1; i < c->nseg; i++)
            if (c->segs[i].req != c->segs[0].req) return 0;
        long maxlen = 0;
        for (int i = 0; i < c->nseg; i++)
            if (c->segs[i].seq_len > maxlen) maxlen = c->segs[i].seq_len;
        row[ATTN_COL_ROWS] = 1;
        row[ATTN_COL_Q] = c->route == ROUTE_DECODE_XQA || c->route == ROUTE_DECODE_SCALAR ? c->nseg : c->segs[0].q;
        row[ATTN_COL_SEQ_LEN] = (double)maxlen;
        row[ATTN_COL_PAGE] = c->page;
        return 1;
    }
    default: return 0;
    }
}

/* The run's per-rank attention shape in a point row's shape columns (a law whose points
 * record theirs keys its groups by it: only points of this shape price this run's items). */
static void row_shape(const pm_t *pm, double *row)
{
    row[ATTN_COL_Q_HEADS] = pm->r.q_heads;
    row[ATTN_COL_KV_HEADS] = pm->r.kv_heads;
    row[ATTN_COL_HEAD_DIM] = pm->m->head_dim;
}

/* Whether group gr of law l is of the run's attention shape (always, for a law whose
 * points do not record one). */
static int group_shape_is(const prof_law_t *l, const cost_grid_group_t *gr, const double *row)
{
    if (cost_grid_nkeys(l) <= ATTN_COL_HEAD_DIM) return 1;
    return gr->key[ATTN_COL_Q_HEADS] == row[ATTN_COL_Q_HEADS] && gr->key[ATTN_COL_KV_HEADS] == row[ATTN_COL_KV_HEADS] &&
           gr->key[ATTN_COL_HEAD_DIM] == row[ATTN_COL_HEAD_DIM];
}

/* The kernel cuBLAS runs for gemm item it (law l's kernel ranges), or NULL: each shape's
 * block of ranges found once (a memo of 32), then bisected. */
static const double *pm_kernel(pm_t *pm, const prof_law_t *l, const cost_item_t *it)
{
    if (!l->nkern || l->ncols < GEMM_COLS_CFG) return NULL;   /* points without their kernel: no use */
    for (int i = 0; i < pm->kern_nmemo; i++)
        if (pm->kern_memo[i].n == it->n && pm->kern_memo[i].k == it->k && pm->kern_memo[i].wb == it->wb)
            return prof_kernel_in(l, pm->kern_memo[i].lo, pm->kern_memo[i].hi, it->m);
    int lo, hi;
    prof_kernel_block(l, it->n, it->k, it->wb, &lo, &hi);
    int slot = pm->kern_nmemo < 32 ? pm->kern_nmemo++ : pm->kern_next++ % 32;
    pm->kern_memo[slot].n = it->n;
    pm->kern_memo[slot].k = it->k;
    pm->kern_memo[slot].wb = it->wb;
    pm->kern_memo[slot].lo = lo;
    pm->kern_memo[slot].hi = hi;
    return prof_kernel_in(l, lo, hi, it->m);
}

/* Whether gemm point row ran kernel kv (a kernel row of profile.h: tile_n, tile_m, splits). */
static int gemm_runs(const double *row, const double *kv)
{
    return row[GEMM_COL_TILE_N] == kv[KERN_TILE_N] && row[GEMM_COL_TILE_M] == kv[KERN_TILE_M] &&
           row[GEMM_COL_SPLITS] == kv[KERN_SPLITS];
}

/* One group's price at axis value x for an item with features feat: interpolation
 * inside the group's range, the law scaled to meet the end point outside it.  kv: the
 * kernel cuBLAS runs for a gemm item where the profile records it (NULL: not known); then
 * the line between two points holds only where both ran it, else each of the two carries its
 * time to the item by the law (from its own kernel at its m to kv at x; feat carries kv) and
 * the line runs between those.  The grid's points stand a few m apart, so the law prices a
 * change of kernel at about one m, never one kernel's time over many tiles of m: scaled from
 * the nearest point of its own kernel instead, an H100's gate/up GEMM at m 288 (cuBLAS's
 * 384 x 96 there alone, its point at m 656) ran 19% over, its step 7.8% (0.2% now). 0 / -1. */
static int group_eval_k(const pm_t *pm, const prof_law_t *l, const cost_grid_group_t *gr, double x, const double *feat,
                        const double *kv, double *t)
{
    int lo = 0, hi = gr->npts - 1;
    if (x <= gr->ax[0] || x >= gr->ax[hi]) {
        int e = x <= gr->ax[0] ? 0 : 1;
        double fe[PROF_MAX_COEF];
        if (cost_point_features_n(l->name, gr->edge[e], l->ncols, pm->m, &pm->r, &pm->hw, fe) < 0) return -1;
        double le = prof_eval(l, fe), te = gr->t[e ? hi : 0];
        *t = le > 0 ? prof_eval(l, feat) * te / le : te;
        return 0;
    }
    while (hi - lo > 1) {
        int mid = (lo + hi) / 2;
        if (gr->ax[mid] <= x) lo = mid;
        else hi = mid;
    }
    double w = (x - gr->ax[lo]) / (gr->ax[hi] - gr->ax[lo]);
    if (kv && !(gemm_runs(gr->row[lo], kv) && gemm_runs(gr->row[hi], kv))) {
        double fl[PROF_MAX_COEF], fh[PROF_MAX_COEF];
        if (cost_point_features_n(l->name, gr->row[lo], l->ncols, pm->m, &pm->r, &pm->hw, fl) < 0 ||
            cost_point_features_n(l->name, gr->row[hi], l->ncols, pm->m, &pm->r, &pm->hw, fh) < 0)
            return -1;
        double ll = prof_eval(l, fl), lh = prof_eval(l, fh), lx = prof_eval(l, feat);
        if (ll > 0 && lh > 0 && lx > 0) {
            *t = (1 - w) * gr->t[lo] * lx / ll + w * gr->t[hi] * lx / lh;
            return 0;
        }
    }
    *t = gr->t[lo] + w * (gr->t[hi] - gr->t[lo]);
    return 0;
}

static int group_eval(const pm_t *pm, const prof_law_t *l, const cost_grid_group_t *gr, double x, const double *feat, double *t)
{
    return group_eval_k(pm, l, gr, x, feat, NULL, t);
}

/* A group of law l that measured own's shape at another page size and whose contexts
 * reach x and own's end nearest x (the page nearest own's among them), or NULL.  calib
 * measures some page sizes at short contexts only; the page moves a call's time by a few
 * percent, the context by orders of magnitude, so past own's last point the sibling's
 * measured curve, scaled to meet own's end point, prices it rather than the law's
 * extrapolation over a context many times the last measured one. */
static const cost_grid_group_t *page_sibling(const pm_t *pm, const prof_law_t *l, const cost_grid_group_t *own, int lo,
                                             int hi, double x)
{
    int nkeys = cost_grid_nkeys(l), axis = cost_grid_axis(l);
    double xe = x < own->ax[0] ? own->ax[0] : own->ax[own->npts - 1];
    const cost_grid_group_t *best = NULL;
    for (int g = lo; g < hi; g++) {
        const cost_grid_group_t *gr = &pm->grid.g[g];
        if (gr == own || gr->key[ATTN_COL_PAGE] == own->key[ATTN_COL_PAGE]) continue;
        int same = 1;
        for (int c = 0; c < nkeys && same; c++)
            same = c == axis || c == ATTN_COL_PAGE || gr->key[c] == own->key[c];
        double a = gr->ax[0], b = gr->ax[gr->npts - 1];
        if (!same || x < a || x > b || xe < a || xe > b) continue;
        if (!best || fabs(gr->key[ATTN_COL_PAGE] - own->key[ATTN_COL_PAGE]) <
                         fabs(best->key[ATTN_COL_PAGE] - own->key[ATTN_COL_PAGE]))
            best = gr;
    }
    return best;
}

/* Price it from measured points: its own group if calib measured its shape (past the
 * group's contexts, an attention call follows a page sibling's: page_sibling); for a
 * prefill chunk (q >= 32) whose q was not measured, between the two nearest measured
 * query sizes of the same rows and page (chunks, or the kernel's q = 1 row below them),
 * weighted by the GPU waves the q adds (below).
 * 1 and *t, or 0 (no measured neighbourhood: the law prices it). */
static int grid_price(const pm_t *pm, int li, const cost_item_t *it, const double *feat, const double *kv, double *t)
{
    const prof_law_t *l = &pm->p->laws[li];
    int axis = cost_grid_axis(l);
    double row[PROF_MAX_COLS] = { 0 };
    if (axis < 0 || !item_row(it, row)) return 0;
    if (it->kind == CI_ATTN || it->kind == CI_BRIDGE) row_shape(pm, row);
    double x = row[axis];
    const cost_grid_group_t *below = NULL, *above = NULL;
    int chunk = it->kind == CI_ATTN && it->call->route != ROUTE_DECODE_XQA && it->call->route != ROUTE_DECODE_SCALAR
                && row[ATTN_COL_Q] >= 32;
    int lo, hi;
    cost_grid_law(&pm->grid, li, &lo, &hi);
    if (lo == hi) return 0;
    const cost_grid_group_t *own = cost_grid_find(&pm->grid, li, row, cost_grid_nkeys(l), axis);
    if (it->kind == CI_BRIDGE) {
        /* the bridge's expansion depends on the sequence only: the law's group of its first
         * point (of the run's shape) */
        own = NULL;
        for (int g = lo; g < hi; g++)
            if (group_shape_is(l, &pm->grid.g[g], row) && (!own || pm->grid.g[g].first < own->first)) own = &pm->grid.g[g];
    }
    if (own && it->kind == CI_ATTN && (x < own->ax[0] || x > own->ax[own->npts - 1])) {
        const cost_grid_group_t *sib = page_sibling(pm, l, own, lo, hi, x);
        double xe = x < own->ax[0] ? own->ax[0] : own->ax[own->npts - 1], te = x < own->ax[0] ? own->t[0] : own->t[own->npts - 1];
        double ts, tse;
        if (sib && group_eval(pm, l, sib, x, feat, &ts) == 0 && group_eval(pm, l, sib, xe, feat, &tse) == 0 && tse > 0) {
            *t = ts * te / tse;
            return 1;
        }
    }
    if (own) return group_eval_k(pm, l, own, x, feat, kv, t) == 0;
    if (!chunk) return 0;
    for (int g = lo; g < hi; g++) {
        const cost_grid_group_t *gr = &pm->grid.g[g];
        /* neighbours: measured chunks, and the q = 1 row of the prefill kernels (the same
         * CTA walking the same keys with one live row: a short final chunk whose tiles
         * still fit one wave costs what that row costs) */
        if (gr->key[ATTN_COL_ROWS] != row[ATTN_COL_ROWS] || gr->key[ATTN_COL_PAGE] != row[ATTN_COL_PAGE] ||
            !group_shape_is(l, gr, row))
            continue;
        double gq = gr->key[ATTN_COL_Q], q = row[ATTN_COL_Q];
        if (gq < 32 && gq != 1) continue;
        if (gq < q && (!below || gq > below->key[ATTN_COL_Q])) below = gr;
        if (gq > q && (!above || gq < above->key[ATTN_COL_Q])) above = gr;
    }
    if (!below || !above) return 0;
    double tb, ta;
    if (group_eval(pm, l, below, x, feat, &tb) < 0 || group_eval(pm, l, above, x, feat, &ta) < 0) return 0;
    if (x < below->ax[0] || x < above->ax[0]) return 0;   /* a chunk shorter than a measured one's context */
    /* blend in waves, not in q: query tiles that still fit on idle SMs add no time, so
     * the weight is how many of the waves between the two measured sizes this q adds
     * (waves = ceil(CTAs / SMs); CTAs from the law's features) */
    double fb[PROF_MAX_COEF], fa[PROF_MAX_COEF], pb[PROF_MAX_COLS], pa[PROF_MAX_COLS];
    memcpy(pb, row, sizeof pb);
    memcpy(pa, row, sizeof pa);
    pb[ATTN_COL_Q] = below->key[ATTN_COL_Q];
    pa[ATTN_COL_Q] = above->key[ATTN_COL_Q];
    double w = (row[ATTN_COL_Q] - pb[ATTN_COL_Q]) / (pa[ATTN_COL_Q] - pb[ATTN_COL_Q]);
    if (pm->p->sms > 0 && cost_point_features(l->name, pb, pm->m, &pm->r, &pm->hw, fb) == 0
        && cost_point_features(l->name, pa, pm->m, &pm->r, &pm->hw, fa) == 0) {
        double sms = pm->p->sms, wv_b = ceil(fb[PREFILL_CTAS] / sms), wv_a = ceil(fa[PREFILL_CTAS] / sms),
               wv = ceil(feat[PREFILL_CTAS] / sms);
        if (pm->hw.split_max > 0) {
            /* a profile whose fast path splits its walk (prefill_split): the parts differ in
             * length from one q to the next (a q = 64 chunk at 240K walks 2 parts of 938
             * tiles, q = 96 3 of 625), so waves are no measure: the busiest SM's tiles are
             * (tiles_max + queue_tiles) */
            wv_b = fb[PREFILL_TILES_MAX] + fb[PREFILL_QUEUE_TILES];
            wv_a = fa[PREFILL_TILES_MAX] + fa[PREFILL_QUEUE_TILES];
            wv = feat[PREFILL_TILES_MAX] + feat[PREFILL_QUEUE_TILES];
        }
        if (wv_a > wv_b) w = (wv - wv_b) / (wv_a - wv_b);
    }
    *t = tb + w * (ta - tb);
    return 1;
}

typedef struct {
    cost_model_t *cm;
    cost_breakdown_t *o;
    int pass;                     /* 0: calibrated prices summed; 1: priced at the heat state */
    double total, heat_w;         /* pass 0: the GPU's seconds, and seconds x the law's heat */
    double host;                  /* pass 0: the step law's seconds (host time: the GPU idles) */
} pm_ctx_t;

static int split_decode(cost_model_t *cm, const cost_item_t *it, double *sec, int *grid, const prof_law_t **lp);
static int env_outside(const pm_t *pm, int li, const cost_item_t *it, char *why, size_t n);
static int law_keys_attn_shape(const prof_law_t *l);
static int pm_step(cost_model_t *cm, const cost_step_t *in, cost_breakdown_t *o);

/* The kernel cuBLAS would pick for a GEMM item, where the gemm law's points record it
 * (GEMM_COLS_CFG columns): that of the law's nearest point, by |ln m - ln m'| + |ln n - ln
 * n'| + |ln k - ln k'| among the points of the item's weight bytes (all of them if none
 * has those; ties: the first).  Inside a measured shape the points price the item
 * (grid_price) and this choice is no matter; it prices one beyond the shape's largest m
 * (the nearest point is that end's) and shapes calib did not measure (a TP degree or a
 * model of other widths: cuBLAS's pick for the nearest measured shape).  The point's
 * index, or -1 when the law records no choice. */
static int gemm_choice(pm_t *pm, const prof_law_t *l, const cost_item_t *it)
{
    if (!law_has_facts(law_form(LAW_GEMM), l->ncols) || l->npts < 1 || !(it->m >= 1 && it->n >= 1 && it->k >= 1)) return -1;
    for (int i = 0; i < pm->gemm_nmemo; i++)
        if (pm->gemm_memo[i].m == it->m && pm->gemm_memo[i].n == it->n && pm->gemm_memo[i].k == it->k &&
            pm->gemm_memo[i].wb == it->wb)
            return pm->gemm_memo[i].pt;
    int best = -1, same_wb = 0;
    double bd = INFINITY, lm = log(it->m), ln = log(it->n), lk = log(it->k);
    for (int i = 0; i < l->npts; i++)
        same_wb |= l->pts[(size_t)i * l->ncols + GEMM_COL_WB] == it->wb;
    for (int i = 0; i < l->npts; i++) {
        const double *row = l->pts + (size_t)i * l->ncols;
        double rm = row[GEMM_COL_M], rn = row[GEMM_COL_N], rk = row[GEMM_COL_K];
        if ((same_wb && row[GEMM_COL_WB] != it->wb) || !(rm >= 1 && rn >= 1 && rk >= 1)) continue;
        double d = fabs(log(rm) - lm) + fabs(log(rn) - ln) + fabs(log(rk) - lk);
        if (d < bd) {
            bd = d;
            best = i;
        }
    }
    int slot = pm->gemm_nmemo < 16 ? pm->gemm_nmemo++ : pm->gemm_next++ % 16;
    pm->gemm_memo[slot].m = it->m;
    pm->gemm_memo[slot].n = it->n;
    pm->gemm_memo[slot].k = it->k;
    pm->gemm_memo[slot].wb = it->wb;
    pm->gemm_memo[slot].pt = best;
    return best;
}

/* A routed-expert layer's grouped GEMM priced from calib's points of its own shape (the
 * model's experts, top-k, skew and the item's n x k): the law at the item's tokens scaled by
 * the measured-over-law ratio of the two nearest measured token counts, interpolated in
 * tokens (past the measured ones, the nearest end's ratio).  The law alone is one fit over
 * 1-4096 tokens: on the H200 (Qwen3-30B-A3B's up projection, 128 experts top 8) it said 23 us
 * where calib measured 30 at one token, while a decode batch of 1-16 tokens is where a
 * serving load spends its expert GEMMs; the ratio keeps the law's row-tile steps between
 * points.  law_t: the law's price at row.  1 and *t, or 0 (no point of the shape). */
static int moe_grid_price(const pm_t *pm, const prof_law_t *l, const double *row, double law_t, double *t)
{
    const double *below = NULL, *above = NULL;
    double x = row[MOE_COL_TOKENS];
    if (!(law_t > 0) || l->ncols <= MOE_COL_SKEW + 1) return 0;
    for (int i = 0; i < l->npts; i++) {
        const double *v = l->pts + (size_t)i * (size_t)l->ncols;
        if (v[MOE_COL_EXPERTS] != row[MOE_COL_EXPERTS] || v[MOE_COL_TOPK] != row[MOE_COL_TOPK] ||
            v[MOE_COL_N] != row[MOE_COL_N] || v[MOE_COL_K] != row[MOE_COL_K] || v[MOE_COL_SKEW] != row[MOE_COL_SKEW] ||
            !(v[l->ncols - 1] > 0))
            continue;
        /* repeats of a token count: the first in the file */
        if (v[MOE_COL_TOKENS] <= x && (!below || v[MOE_COL_TOKENS] > below[MOE_COL_TOKENS])) below = v;
        if (v[MOE_COL_TOKENS] >= x && (!above || v[MOE_COL_TOKENS] < above[MOE_COL_TOKENS])) above = v;
    }
    if (!below && !above) return 0;
    double r[2];
    const double *ends[2] = { below ? below : above, above ? above : below };
    for (int e = 0; e < 2; e++) {
        double fe[PROF_MAX_COEF];
        if (cost_point_features(l->name, ends[e], pm->m, &pm->r, &pm->hw, fe) < 0) return 0;
        double le = prof_eval(l, fe);
        if (!(le > 0)) return 0;
        r[e] = ends[e][l->ncols - 1] / le;
    }
    double xb = ends[0][MOE_COL_TOKENS], xa = ends[1][MOE_COL_TOKENS];
    double w = xa > xb ? (x - xb) / (xa - xb) : 0;
    *t = law_t * ((1 - w) * r[0] + w * r[1]);
    return 1;
}

/* Elementwise work L2-cold (law elementwise.cold; docs/validation.md section 2).  In a step
 * every layer's norms and SiLU-mul follow its GEMMs (vLLM's decoder layer: input_layernorm,
 * attention, post_attention_layernorm, the MLP's gate_up GEMM, SiluAndMul, down GEMM), which
 * stream far more than the L2, so their residual and norm weights come from DRAM; calib's
 * elementwise points are timed over a rotation of tensors that stays in L2 at small token
 * counts.  Where the profile has cold points, an elementwise item is priced at its warm price
 * (the grid or the law) times the cold-over-warm ratio of the two nearest cold points,
 * interpolated in tokens, each ratio its cold point's time over the warm price at its count,
 * so a measured count prices at its cold point.  Below the first point the first's ratio;
 * past the last the ratio falls linearly to 1 at twice its count (there calib's warm rotation
 * outgrows the L2 and the warm points are cold themselves); a ratio under 1 (a cold point
 * timed under its warm one) counts as 1.  Every step is priced so: an engine's every layer
 * runs its elementwise work after its GEMMs.  A profile without cold points prices as ever. */
static int elem_warm(const pm_t *pm, int li, double tokens, double *t)
{
    const prof_law_t *l = &pm->p->laws[li];
    cost_item_t it;
    memset(&it, 0, sizeof it);
    it.kind = CI_ELEM;
    it.tokens = tokens;
    it.count = 1;
    double feat[PROF_MAX_COEF];
    if (cost_item_features(&it, pm->m, &pm->r, &pm->hw, feat) < 0) return -1;
    if (!grid_price(pm, li, &it, feat, NULL, t)) *t = prof_eval(l, feat);
    return *t > 0 ? 0 : -1;
}

static int cmp_cold(const void *va, const void *vb)
{
    const double *a = va, *b = vb;
    return (a[0] > b[0]) - (a[0] < b[0]);
}

/* The ratios (pm->cold) from the profile's points: 0, or -1 out of memory.  Repeats of a count
 * count once (the first in the file); points of no positive time, or where the warm price is
 * none (or so small that the ratio is not finite), are left out. */
/* The gemm law's hot probes as calib picks them (calib/sustain.c probe_pick: of the law's
 * points of 20 us .. 20 ms sorted by time, those at a third and at two thirds): their mean
 * FLOP rate over the calibrated peak, in pm->gemm_u_law (0 when none qualifies). */
static void gemm_hot_init(pm_t *pm)
{
    const prof_law_t *l = prof_find(pm->p, "gemm");
    double pk = pm->p->peak_fp16_tflops * 1e12;
    pm->gemm_u_law = 0;
    if (!l || !(pk > 0) || l->ncols <= GEMM_COL_K + 1 || l->npts < 1) return;
    double *t = malloc((size_t)l->npts * sizeof *t), *u = malloc((size_t)l->npts * sizeof *u);
    int n = 0;
    for (int i = 0; t && u && i < l->npts; i++) {
        const double *r = l->pts + (size_t)i * l->ncols;
        double ts = r[l->ncols - 1];
        if (!(ts >= 2e-5 && ts <= 2e-2)) continue;
        double ui = 2 * r[GEMM_COL_M] * r[GEMM_COL_N] * r[GEMM_COL_K] / ts / pk;
        int b = n++;
        for (; b > 0 && t[b - 1] > ts; b--) {  /* insertion by time (the range holds a few hundred) */
            t[b] = t[b - 1];
            u[b] = u[b - 1];
        }
        t[b] = ts;
        u[b] = ui;
    }
    if (n >= 3) pm->gemm_u_law = (u[n / 3] + u[2 * n / 3]) / 2;
    else if (n) pm->gemm_u_law = u[0];
    free(t);
    free(u);
}

static int elem_cold_init(pm_t *pm)
{
    const prof_law_t *c = prof_find(pm->p, "elementwise.cold"), *w = prof_find(pm->p, "elementwise");
    if (!c || !w || c->npts < 1 || c->ncols != 2) return 0;
    pm->cold = malloc((size_t)c->npts * sizeof *pm->cold);
    if (!pm->cold) return -1;
    int li = (int)(w - pm->p->laws), n = 0;
    for (int i = 0; i < c->npts; i++) {
        double x = c->pts[2 * i], tc = c->pts[2 * i + 1], tw;
        int seen = 0;
        for (int k = 0; k < n; k++) seen |= pm->cold[k][0] == x;
        if (seen || !(tc > 0) || elem_warm(pm, li, x, &tw) < 0 || !isfinite(tc / tw)) continue;
        pm->cold[n][0] = x;
        pm->cold[n][1] = fmax(1, tc / tw);
        n++;
    }
    qsort(pm->cold, (size_t)n, sizeof *pm->cold, cmp_cold);
    pm->ncold = n;
    return 0;
}

/* The cold-over-warm factor at tokens x (1: no cold points). */
static double elem_cold(const pm_t *pm, double x)
{
    int n = pm->ncold;
    if (n < 1) return 1;
    const double (*c)[2] = (const double (*)[2])pm->cold;
    if (x <= c[0][0]) return c[0][1];
    if (x >= c[n - 1][0]) {
        double end = c[n - 1][0];
        return x >= 2 * end ? 1 : c[n - 1][1] + (1 - c[n - 1][1]) * (x - end) / end;
    }
    int a = 0, b = n - 1;                   /* c[a][0] <= x < c[b][0] */
    while (b - a > 1) {
        int mid = a + (b - a) / 2;
        if (c[mid][0] <= x) a = mid;
        else b = mid;
    }
    double w = (x - c[a][0]) / (c[b][0] - c[a][0]);
    return (1 - w) * c[a][1] + w * c[b][1];
}

/* One item's calibrated seconds (x count); *grid: priced from measured points; *lp its
 * law (NULL when the profile has none and the item is optional).  0 / -1 (err set). */
static int pm_item_raw(cost_model_t *cm, const cost_item_t *it, double *sec, int *grid, const prof_law_t **lp)
{
    pm_t *pm = cm->impl;
    char name[64];
    double feat[PROF_MAX_COEF];
    const char *law = cost_item_law(it, name, sizeof name);
    const prof_law_t *l = prof_find(pm->p, law);
    if (!l && cost_law_fallback(law)) l = prof_find(pm->p, law = cost_law_fallback(law));
    *sec = 0;
    *grid = 0;
    *lp = l;
    const prof_law_t *lm = it->kind == CI_GEMM && it->moe ? prof_find(pm->p, "gemm.moe.fp16") : NULL;
    if (lm) {
        /* routed experts with the grouped-GEMM law: the busiest group prices the layer's
         * launch (count / experts layers), the other groups are in it */
        *lp = lm;
        if (it->moe != 2) return 0;
        double row[PROF_MAX_COLS] = { 0 };
        row[MOE_COL_TOKENS] = it->tokens;
        row[MOE_COL_EXPERTS] = pm->m->moe_experts;
        row[MOE_COL_TOPK] = pm->m->moe_topk;
        row[MOE_COL_N] = it->n;
        row[MOE_COL_K] = it->k;
        row[MOE_COL_SKEW] = pm->m->moe_skew;
        if (cost_point_features("gemm.moe.fp16", row, pm->m, &pm->r, &pm->hw, feat) < 0) {
            snprintf(cm->err, sizeof cm->err, "cannot compute the features of law \"gemm.moe.fp16\"");
            return -1;
        }
        double t = prof_eval(lm, feat);
        *grid = moe_grid_price(pm, lm, row, t, &t);
        *sec = (t > 0 ? t : 0) * it->count / it->experts;
        return 0;
    }
    if (!l) {
        /* elementwise work is optional in a profile (folded into the others) */
        if (it->kind == CI_ELEM) return 0;
        /* no all-reduce law: the link's datasheet ring (cost_profile_new_link) */
        if (it->kind == CI_ALLREDUCE && pm->link) {
            *sec = hw_allreduce_s(pm->link, pm->tp, it->bytes) * it->count;
            return 0;
        }
        snprintf(cm->err, sizeof cm->err, "profile has no law \"%s\" (needed by this scenario)", law);
        return -1;
    }
    int pt = it->kind == CI_GEMM ? gemm_choice(pm, l, it) : -1, rc;
    /* the kernel calib saw cuBLAS pick at a gemm item's own m (NULL: not recorded) */
    const double *kv = it->kind == CI_GEMM ? pm_kernel(pm, l, it) : NULL;
    if (pt >= 0) {
        /* the item's shape, with the kernel cuBLAS picked at its law's nearest point */
        double row[PROF_MAX_COLS];
        memcpy(row, l->pts + (size_t)pt * l->ncols, (size_t)l->ncols * sizeof *row);
        row[GEMM_COL_M] = it->m;
        row[GEMM_COL_N] = it->n;
        row[GEMM_COL_K] = it->k;
        row[GEMM_COL_WB] = it->wb;
        if (kv) {
            row[GEMM_COL_TILE_N] = kv[KERN_TILE_N];
            row[GEMM_COL_TILE_M] = kv[KERN_TILE_M];
            row[GEMM_COL_SPLITS] = kv[KERN_SPLITS];
        }
        rc = cost_point_features_n(law, row, l->ncols, pm->m, &pm->r, &pm->hw, feat);
    } else if (it->kind == CI_ATTN && law != name) {
        /* a fallback law: its own kernel's features */
        for (int i = 0; i < PROF_MAX_COEF; i++) feat[i] = 0;
        feat[FEAT_ONE] = 1;
        rc = cost_attn_features(law, it->call, pm->m, &pm->r, &pm->hw, feat);
    } else {
        rc = cost_item_features(it, pm->m, &pm->r, &pm->hw, feat);
    }
    if (rc < 0) {
        snprintf(cm->err, sizeof cm->err, "cannot compute the features of law \"%s\"", law);
        return -1;
    }
    double t;
    if (split_decode(cm, it, sec, grid, lp)) return *sec < 0 ? -1 : 0;
    /* another shape's attention points never price this run's: the law does */
    *grid = pm->shape_out && (it->kind == CI_ATTN || it->kind == CI_BRIDGE) ? 0
                                                                          : grid_price(pm, (int)(l - pm->p->laws), it, feat, kv, &t);
    if (!*grid) {
        t = prof_eval(l, feat);
        if (it->kind == CI_ATTN && law == name && !pm->shape_out) t *= near_corr(pm, (int)(l - pm->p->laws), feat);
    }
    if (it->kind == CI_ELEM && pm->ncold) t *= elem_cold(pm, it->tokens);
    *sec = (t > 0 ? t : 0) * it->count;
    return 0;
}

/* near_corr's points: their features cost a CTA placement each (hundreds of rows for a
 * serving batch's points), and a rescore makes a cost model per run of its noise ensemble, so
 * the points' features and residuals are kept by what they are computed from (the law's
 * coefficients and points, the attention shape and the card's SMs: a digest, never an address)
 * and copied into each model's memo; NEAR_CACHE of them, the oldest replaced. */
#define NEAR_CACHE 8
static struct near_entry { uint64_t key; int n, nf; double *lf, *lr; } near_cache[NEAR_CACHE];
static int near_next;
static pthread_mutex_t near_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t near_once = PTHREAD_ONCE_INIT;

static void near_cache_free(void)
{
    for (int c = 0; c < NEAR_CACHE; c++) free(near_cache[c].lf), free(near_cache[c].lr);
    memset(near_cache, 0, sizeof near_cache);
}
static void near_cache_atexit(void) { atexit(near_cache_free); }

static uint64_t near_key(const pm_t *pm, const prof_law_t *l)
{
    uint64_t h = fnv1a_str(FNV1A_BASIS, l->name);
    int dims[6] = { l->ncols, l->npts, l->ncoef, pm->m->head_dim, pm->r.q_heads, pm->r.kv_heads };
    h = fnv1a(h, dims, sizeof dims);
    h = fnv1a(h, l->coef, (size_t)l->ncoef * sizeof *l->coef);
    h = fnv1a(h, l->pts, (size_t)l->npts * (size_t)l->ncols * sizeof *l->pts);
    h = fnv1a(h, &pm->hw.sms, sizeof pm->hw.sms);
    h = fnv1a(h, &pm->hw.flops, sizeof pm->hw.flops);
    return fnv1a(h, &pm->hw.bw, sizeof pm->hw.bw);
}

/* nm's points (lf, lr allocated for every point): from the cache, or computed and kept. */
static void near_build(pm_t *pm, const prof_law_t *l, struct near_memo *nm)
{
    uint64_t key = near_key(pm, l);
    int nf = nm->nf, hit = 0;
    pthread_mutex_lock(&near_mu);
    for (int c = 0; c < NEAR_CACHE && !hit; c++) {
        const struct near_entry *e = &near_cache[c];
        if (e->lr && e->key == key && e->nf == nf && e->n <= l->npts) {
            memcpy(nm->lf, e->lf, (size_t)e->n * (size_t)nf * sizeof *nm->lf);
            memcpy(nm->lr, e->lr, (size_t)e->n * sizeof *nm->lr);
            nm->n = e->n;
            hit = 1;
        }
    }
    pthread_mutex_unlock(&near_mu);
    if (hit) return;
    nm->n = 0;
    for (int i = 0; i < l->npts; i++) {
        const double *row = l->pts + (size_t)i * l->ncols;
        double fe[PROF_MAX_COEF] = { 0 }, t = row[l->ncols - 1];
        if (cost_point_features_n(l->name, row, l->ncols, pm->m, &pm->r, &pm->hw, fe) < 0) continue;
        double le = prof_eval(l, fe);
        if (!(le > 0) || !(t > 0)) continue;
        for (int j = 0; j < nf; j++) nm->lf[(size_t)nm->n * nf + j] = log1p(fmax(fe[j + 1], 0));
        nm->lr[nm->n++] = log(t / le);
    }
    double *lf = malloc((size_t)(nm->n ? nm->n : 1) * (size_t)nf * sizeof *lf);
    double *lr = malloc((size_t)(nm->n ? nm->n : 1) * sizeof *lr);
    if (!lf || !lr) {                          /* not kept: this model's memo stands */
        free(lf), free(lr);
        return;
    }
    memcpy(lf, nm->lf, (size_t)nm->n * (size_t)nf * sizeof *lf);
    memcpy(lr, nm->lr, (size_t)nm->n * sizeof *lr);
    pthread_once(&near_once, near_cache_atexit);   /* freed at exit: no leak for memcheck */
    pthread_mutex_lock(&near_mu);
    struct near_entry *e = &near_cache[near_next++ % NEAR_CACHE];
    free(e->lf), free(e->lr);
    *e = (struct near_entry){ key, nm->n, nf, lf, lr };
    pthread_mutex_unlock(&near_mu);
}

/* The varlen law's error at the measured points nearest an item, carried onto its price.
 * The law is one fit over every batch calib timed (a lone prompt of 200 tokens, 256 decode
 * rows beside 16 chunks), and misses families of them by a few percent each way (an H100's
 * lone prompts of 200-512 tokens: the law 1-7% over every one; a light load's 8-24 rows beside
 * 3 prompts of 440: 11% over); the items between such points share their error.  Nearness is
 * in the law's own features (tiles, CTAs, the busiest SM's tiles: the work the kernel's time
 * follows): a point's distance d is the largest |ln((a + 1) / (b + 1))| over them, and it
 * weighs w = 1 - d / ln 2 (none beyond twice or half the item's work in any feature); the
 * price takes exp(sum w ln r / max(1, sum w)) of the points' ln(time / law) r -- a lone point
 * at d pulls it (1 - d / ln 2) of the way, many near points their mean, an item with no point
 * near it the law as it is.
 * Laws with a measured axis have their grid (grid_price); this is for the varlen law, priced
 * whole by its fit.  1 where nothing is near or the law is another. */
#define NEAR_SPAN 0.6931471805599453 /* ln 2 */
static double near_corr(pm_t *pm, int li, const double *feat)
{
    const prof_law_t *l = &pm->p->laws[li];
    const law_form_t *lf = law_find(l->name);
    if (!lf || lf->family != LF_VARLEN || l->npts < 1 || l->ncoef < 2) return 1;
    if (!pm->near && !(pm->near = calloc((size_t)pm->p->nlaws, sizeof *pm->near))) return 1;
    struct near_memo *nm = &pm->near[li];
    int nf = l->ncoef - 1;                      /* every feature but the constant */
    if (!nm->done) {
        nm->done = 1;
        nm->nf = nf;
        nm->lf = malloc((size_t)l->npts * (size_t)nf * sizeof *nm->lf);
        nm->lr = malloc((size_t)l->npts * sizeof *nm->lr);
        if (!nm->lf || !nm->lr) {
            free(nm->lf), free(nm->lr);
            nm->lf = nm->lr = NULL;
            return 1;
        }
        near_build(pm, l, nm);
    }
    if (!nm->lf || nm->n < 1 || nm->nf != nf) return 1;
    double x[PROF_MAX_COEF], sw = 0, swr = 0;
    for (int j = 0; j < nf; j++) x[j] = log1p(fmax(feat[j + 1], 0));
    for (int i = 0; i < nm->n; i++) {
        const double *pf = nm->lf + (size_t)i * nf;
        double d = 0;
        for (int j = 0; j < nf && d < NEAR_SPAN; j++) d = fmax(d, fabs(x[j] - pf[j]));
        if (d >= NEAR_SPAN) continue;
        double w = 1 - d / NEAR_SPAN;
        sw += w;
        swr += w * nm->lr[i];
    }
    return sw > 0 ? exp(swr / fmax(1, sw)) : 1;
}

/* An item's roofline floor in seconds (x count; 0: none): the routed experts' busiest group,
 * which prices the layer's grouped GEMM with gemm.moe.fp16, by every token's top-k experts. */
static double item_floor(const pm_t *pm, const cost_item_t *it, const prof_law_t *l, double *run)
{
    *run = 0;
    if (!(pm->pk_flops > 0) || !(pm->pk_bw > 0)) return 0;
    double fl, by, n = it->count;
    if (it->kind == CI_GEMM && it->moe && l && l->name[0] == 'g' && !strcmp(l->name, "gemm.moe.fp16")) {
        if (it->moe != 2) return 0;
        double topk = pm->m->moe_topk;
        fl = 2.0 * it->tokens * topk * it->n * it->k;
        by = topk * it->n * it->k * it->wb;
        n = it->count / it->experts;
    } else {
        cost_item_traffic(it, pm->m, &pm->r, &fl, &by);
    }
    double pf = it->kind == CI_GEMM && it->wb <= 1 && pm->pk_flops8 > 0 ? pm->pk_flops8 : pm->pk_flops;
    *run = fmax(fl / pf, by / pm->pk_bw);
    return *run * n;
}

/* The most an item of floor f (one run) may cost by law li's nearest measured points (the rule
 * above): each point's time scaled to the item's floor where the item is the larger (the
 * point's rate), its time as it is where the item is the smaller, the largest of them over
 * BOUND_SLACK; 0 when the law has no point to bound it by. */
static double near_cap(const pm_t *pm, int li, double f)
{
    if (!pm->pe || !pm->pe[li] || pm->npe[li] < 1) return 0;
    const double (*pe)[2] = pm->pe[li];
    int n = pm->npe[li];
    double lo = f / BOUND_NEAR, hi = f * BOUND_NEAR;
    if (f > pe[n - 1][0]) lo = pe[n - 1][0] / BOUND_NEAR;
    if (f < pe[0][0]) hi = pe[0][0] * BOUND_NEAR;
    int a = 0, b = n;                       /* the first point of floor >= lo */
    while (a < b) {
        int mid = a + (b - a) / 2;
        if (pe[mid][0] < lo) a = mid + 1;
        else b = mid;
    }
    double cap = 0;
    for (int i = a; i < n && pe[i][0] <= hi; i++) cap = fmax(cap, pe[i][1] * fmax(1, f / pe[i][0]));
    return cap / BOUND_SLACK;
}

/* One item's bounded seconds (x count): the raw price, raised to the floor, and outside the
 * envelope capped by the law's efficiency (the rule above bound_item's definitions).
 * *outside: the item lies outside the envelope (why filled). */
static int pm_item(cost_model_t *cm, const cost_item_t *it, double *sec, int *grid, const prof_law_t **lp)
{
    pm_t *pm = cm->impl;
    if (pm_item_raw(cm, it, sec, grid, lp) < 0) return -1;
    pm->last_bound = 0;
    pm->last_raw = *sec;
    if (!(*sec > 0) || pm->no_bounds) return 0;
    double run, f = item_floor(pm, it, *lp, &run);
    if (!(f > 0)) return 0;
    int li = *lp ? (int)(*lp - pm->p->laws) : -1;
    char why[192];
    double cap;
    if (li >= 0 && pm->env && env_outside(pm, li, it, why, sizeof why) && (cap = near_cap(pm, li, run) * f / run) > 0) {
        if (*sec > cap) {
            *sec = cap;
            pm->last_bound = 2;
        }
    }
    if (*sec < f) {
        *sec = f;
        pm->last_bound = 1;
    }
    return 0;
}

typedef struct { int req, idx; } seg_ref_t;   /* a row: its request, its place in the call */

static int cmp_seg_ref(const void *va, const void *vb)
{
    const seg_ref_t *a = va, *b = vb;
    if (a->req != b->req) return a->req < b->req ? -1 : 1;
    return (a->idx > b->idx) - (a->idx < b->idx);
}

static int cmp_first(const void *va, const void *vb)   /* parts by their first row's place */
{
    const seg_ref_t *a = va, *b = vb;
    return (a->req > b->req) - (a->req < b->req);
}

/* A decode call over several requests is ONE launch whose CTAs share the SMs.  Its
 * requests fall in two kinds, by the CTAs each would launch alone (DECODE_CTAS against the
 * SMs x the CTAs an SM holds, a wave):
 *  - a request that fills PACK_WAVES waves by itself (a long context: 240K at partition
 *    1024 is 235 partitions x the heads) is bandwidth-bound: its bytes' time adds to the call's, and
 *    the launch gives back the law's per-call constant c0 of every part after the first
 *    (on the H200 replays of two 240K requests the parts' sum is within 2%, the law on the
 *    whole mixture 10-16% high);
 *  - the requests that do not (short contexts, latency-bound) share the launch's waves:
 *    a request of one to two waves alone ends on a partial wave whose idle SMs the other
 *    requests' CTAs fill, so priced alone it carries up to half its time in that last wave
 *    (on the H200 serving replays, 32 requests of ~3K-6K tokens, 1-1.5 waves each: the sum
 *    of their prices 20-25% above the launch's time);
 *    together they are one part, priced on their union by the law's features (kv_tokens,
 *    ctas, waves, the busiest SM's tokens: cost_feat.c), anchored to the measured many-row
 *    points (pack_anchor).  Summing them instead prices 60 requests of ~600 tokens at 9x
 *    what the GPU takes.
 * A call with one part of each kind, or one request, costs what the old per-part rule did.
 * 1 if the item was a multi-request decode call (*sec its price, -1 on error), else 0. */
static int pack_anchor(pm_t *pm, int li, const cost_item_t *it, const double *feat, double *t);

#define PACK_WAVES 2   /* waves a request fills alone to be priced as a part of its own */

/* The terms of a decode law that are one call's critical path, not its work (cost_feat.c):
 * the launch constant, the longest partition's walk and the reduce's depth.  A launch
 * holding several parts pays them once, for its longest part; its work (tokens, CTAs,
 * waves) adds up.  Seconds for one run of call c, by law l. */
static double launch_terms(const pm_t *pm, const prof_law_t *l, const kcall_t *c)
{
    static const int lat[] = { FEAT_ONE, DECODE_PART_TOKENS_MAX, DECODE_REDUCE_DEPTH };
    double f[PROF_MAX_COEF] = { 0 }, t = 0;
    f[FEAT_ONE] = 1;
    if (cost_attn_features(l->name, c, pm->m, &pm->r, &pm->hw, f) < 0) return l->ncoef > 0 ? l->coef[FEAT_ONE] : 0;
    for (size_t i = 0; i < sizeof lat / sizeof lat[0]; i++)
        if (lat[i] < l->ncoef) t += l->coef[lat[i]] * f[lat[i]];
    return t;
}

static int spread_corr(cost_model_t *cm, const cost_item_t *it, int li, int q, double nreq, double L, double cv,
                       double *corr);
static double ctx_cv(double sum, double sum2, double n);
static int group_spread(const prof_law_t *l, const cost_grid_group_t *gr);

static int split_decode(cost_model_t *cm, const cost_item_t *it, double *sec, int *grid, const prof_law_t **lp)
{
    const kcall_t *c = it->call;
    if (it->kind != CI_ATTN || (c->route != ROUTE_DECODE_XQA && c->route != ROUTE_DECODE_SCALAR) || c->nseg < 2)
        return 0;
    int mixed = 0;
    for (int i = 1; i < c->nseg; i++) mixed |= c->segs[i].req != c->segs[0].req;
    if (!mixed) return 0;
    pm_t *pm = cm->impl;
    /* the requests' rows, grouped in O(n log n): sorted by request, then by place; the
     * parts go in the order of their first rows */
    kseg_t *seg = malloc((size_t)c->nseg * sizeof *seg), *pack = malloc((size_t)c->nseg * sizeof *pack);
    seg_ref_t *ref = malloc((size_t)c->nseg * sizeof *ref);
    seg_ref_t *part = malloc((size_t)c->nseg * sizeof *part);  /* a request: .req its first row's place,
                                                                  .idx where its rows start in ref */
    int g = 1, parts = 0, nparts = 0, npack = 0, packed = 0;
    double lt_max = 0;
    *sec = 0;
    *grid = 1;
    if (!seg || !ref || !part || !pack) {
        snprintf(cm->err, sizeof cm->err, "out of memory");
        free(seg);
        free(ref);
        free(part);
        free(pack);
        *sec = -1;
        return 1;
    }
    for (int i = 0; i < c->nseg; i++) ref[i] = (seg_ref_t){ c->segs[i].req, i };
    qsort(ref, (size_t)c->nseg, sizeof *ref, cmp_seg_ref);
    for (int i = 0; i < c->nseg; i++)
        if (i == 0 || ref[i].req != ref[i - 1].req) part[nparts++] = (seg_ref_t){ ref[i].idx, i };
    qsort(part, (size_t)nparts, sizeof *part, cmp_first);
    char name[64];
    const law_form_t *f = law_find(cost_item_law(it, name, sizeof name));
    double wave = f && pm->hw.sms > 0 ? (double)pm->hw.sms * f->ctas_per_sm : 0;
    /* pass 0: the requests that do not fill PACK_WAVES waves alone, gathered (in call order) */
    for (int p = 0; p < nparts; p++) {
        int n = 0, r0 = part[p].idx;
        for (int j = r0; j < c->nseg && ref[j].req == ref[r0].req; j++) seg[n++] = c->segs[ref[j].idx];
        kcall_t sub = *c;
        sub.segs = seg;
        sub.nseg = n;
        double ft[PROF_MAX_COEF];
        if (wave > 0 && cost_attn_features(f->name, &sub, pm->m, &pm->r, &pm->hw, ft) == 0 && ft[DECODE_CTAS] < PACK_WAVES * wave) {
            memcpy(pack + npack, seg, (size_t)n * sizeof *seg);
            npack += n;
            packed++;
            part[p].req = -1;      /* priced with the pack */
        }
    }
    if (packed < 2) {              /* nothing shares: every request is a part */
        npack = 0;
        for (int p = 0; p < nparts; p++) part[p].req = 0;
    }
    for (int p = 0; p <= nparts && *sec >= 0; p++) {
        kcall_t sub = *c;
        double t;
        if (p == nparts) {         /* the latency-bound requests, one part */
            if (!npack) break;
            sub.segs = pack;
            sub.nseg = npack;
            cost_item_t one = *it;
            one.call = &sub;
            double ft[PROF_MAX_COEF];
            const prof_law_t *l = prof_find(pm->p, f->name);
            *lp = l;
            if (!l) {
                snprintf(cm->err, sizeof cm->err, "profile has no law \"%s\" (needed by this scenario)", f->name);
                *sec = -1;
                break;
            }
            if (cost_item_features(&one, pm->m, &pm->r, &pm->hw, ft) < 0) {
                snprintf(cm->err, sizeof cm->err, "cannot compute the features of law \"%s\"", f->name);
                *sec = -1;
                break;
            }
            g = pm->shape_out ? 0 : pack_anchor(pm, (int)(l - pm->p->laws), &one, ft, &t);
            if (!g) t = prof_eval(l, ft);
            t = (t > 0 ? t : 0) * it->count;
        } else {
            if (part[p].req < 0) continue;
            int n = 0, r0 = part[p].idx;
            for (int j = r0; j < c->nseg && ref[j].req == ref[r0].req; j++) seg[n++] = c->segs[ref[j].idx];
            sub.segs = seg;
            sub.nseg = n;
            cost_item_t one = *it;
            one.call = &sub;
            if (pm_item(cm, &one, &t, &g, lp) < 0) {
                *sec = -1;
                break;
            }
        }
        /* one launch, not one per part: its critical path is paid once, the longest part's */
        double lt = *lp ? launch_terms(pm, *lp, &sub) * it->count : 0;
        if (lt > lt_max) lt_max = lt;
        parts++;
        t -= lt;
        *sec += t > 0 ? t : 0;
        *grid &= g;
    }
    if (*sec >= 0) *sec += lt_max;
    /* several requests of one q (MTP verify rows): calib's many-request points of that q say
     * what such a call costs beside this price (spread_corr); requests of unlike q take none */
    const prof_law_t *sl = f ? prof_find(pm->p, f->name) : NULL;
    if (*sec > 0 && !pm->spreading && !pm->shape_out && sl && cost_grid_nkeys(sl) > ATTN_COL_CTX_MIN) {
        int q = -1, same = 1;
        double sum = 0, sum2 = 0, corr;
        for (int i = 0; i < c->nseg && same;) {
            int e = i;
            double len = 0;
            for (; e < c->nseg && ref[e].req == ref[i].req; e++)
                if ((double)c->segs[ref[e].idx].seq_len > len) len = (double)c->segs[ref[e].idx].seq_len;
            same = q < 0 || q == e - i;
            q = e - i;
            sum += len;
            sum2 += len * len;
            i = e;
        }
        if (same && q > 1 &&
            spread_corr(cm, it, (int)(sl - pm->p->laws), q, nparts, sum / nparts, ctx_cv(sum, sum2, nparts), &corr))
            *sec *= corr;
    }
    free(seg);
    free(ref);
    free(part);
    free(pack);
    return 1;
}

/* The spread of n contexts: their standard deviation over their mean (0: all alike). */
static double ctx_cv(double sum, double sum2, double n)
{
    double mean = sum / n, var = sum2 / n - mean * mean;
    return mean > 0 && var > 0 ? sqrt(var) / mean : 0;
}

/* Law li's many-request points of the run's shape (once a law; it: a call of the law, whose
 * route and KV the points' calls take) of every q and page it holds spread points of (q > 1):
 * those spread points and the identical-row points of two or more requests, each's call (its
 * requests' rows expanded token-wise, as the engine's) priced by split_decode without the
 * correction, against its measured time.  0 / -1 (out of memory). */
static int spread_points(cost_model_t *cm, const cost_item_t *it, int li)
{
    pm_t *pm = cm->impl;
    if (!pm->spread && !(pm->spread = calloc((size_t)pm->p->nlaws, sizeof *pm->spread))) return -1;
    struct spread_memo *sm = &pm->spread[li];
    if (sm->done) return 0;
    sm->done = 1;
    const prof_law_t *l = &pm->p->laws[li];
    double shape[PROF_MAX_COLS] = { 0 }, qp[16][2];
    row_shape(pm, shape);
    int lo, hi, cap = 0, nqp = 0;
    cost_grid_law(&pm->grid, li, &lo, &hi);
    for (int g = lo; g < hi; g++) {          /* the (q, page) of its spread points */
        const cost_grid_group_t *gr = &pm->grid.g[g];
        if (!group_spread(l, gr) || !group_shape_is(l, gr, shape) || gr->key[ATTN_COL_Q] < 2) continue;
        int k = 0;
        while (k < nqp && (qp[k][0] != gr->key[ATTN_COL_Q] || qp[k][1] != gr->key[ATTN_COL_PAGE])) k++;
        if (k == nqp && nqp < 16) qp[nqp][0] = gr->key[ATTN_COL_Q], qp[nqp++][1] = gr->key[ATTN_COL_PAGE];
    }
    for (int g = lo; g < hi; g++) {
        const cost_grid_group_t *gr = &pm->grid.g[g];
        int k = 0;
        while (k < nqp && (qp[k][0] != gr->key[ATTN_COL_Q] || qp[k][1] != gr->key[ATTN_COL_PAGE])) k++;
        if (k < nqp && group_shape_is(l, gr, shape) && gr->key[ATTN_COL_ROWS] >= 2) cap += gr->npts;
    }
    if (!cap) return 0;
    free(sm->pt);
    if (!(sm->pt = malloc((size_t)cap * sizeof *sm->pt))) return -1;
    char err[sizeof cm->err];
    memcpy(err, cm->err, sizeof err);
    pm->spreading = 1;
    for (int g = lo; g < hi; g++) {
        const cost_grid_group_t *gr = &pm->grid.g[g];
        int k = 0;
        while (k < nqp && (qp[k][0] != gr->key[ATTN_COL_Q] || qp[k][1] != gr->key[ATTN_COL_PAGE])) k++;
        if (k == nqp || !group_shape_is(l, gr, shape) || gr->key[ATTN_COL_ROWS] < 2) continue;
        for (int i = 0; i < gr->npts; i++) {
            const double *row = gr->row[i];
            long rows = (long)row[ATTN_COL_ROWS], b = (long)row[ATTN_COL_SEQ_LEN];
            long a = group_spread(l, gr) ? (long)row[ATTN_COL_CTX_MIN] : 0;
            int q = (int)row[ATTN_COL_Q];
            if (a >= b || (a > 0 && a < q) || b < q) continue;
            kseg_t *segs = malloc((size_t)(rows * q) * sizeof *segs);
            if (!segs) {
                pm->spreading = 0;
                return -1;
            }
            for (long r = 0; r < rows; r++) {
                long x = law_varlen_row_ctx(rows, a, b, r);
                for (int u = 0; u < q; u++) segs[r * q + u] = (kseg_t){ (int)r, 1, x - q + 1 + u };
            }
            kcall_t call = *it->call;
            call.segs = segs;
            call.nseg = (int)(rows * q);
            call.page = (int)row[ATTN_COL_PAGE];
            cost_item_t one = *it;
            one.call = &call;
            one.count = 1;
            int gd;
            double t = 0;
            const prof_law_t *lp = NULL;
            if (split_decode(cm, &one, &t, &gd, &lp) && t > 0 && gr->t[i] > 0)
                sm->pt[sm->n++] = (spread_pt_t){ q, row[ATTN_COL_PAGE], (double)a, (double)b, (double)rows, gr->t[i] / t };
            free(segs);
        }
    }
    pm->spreading = 0;
    memcpy(cm->err, err, sizeof err);   /* a point the model cannot price is no error of the run's */
    return 0;
}

#define SPREAD_REACH 2.0   /* past the measured requests or mean contexts, the nearest end's
                              correction holds to this factor beyond it, then none */
#define SPREAD_MAX 64      /* request counts, or ranges, of one (q, page) looked at */

/* Between two measured values of c: at x from (xb, cb) and (xa, ca) (linear; ln x where lnx), or
 * the one there is within SPREAD_REACH of x.  1 and *c, or 0. */
static int spread_interp(int nb, double xb, double cb, int na, double xa, double ca, double x, int lnx, double *c)
{
    if (nb && na) {
        double w = xa > xb ? (lnx ? log(x / xb) / log(xa / xb) : (x - xb) / (xa - xb)) : 0;
        *c = cb + w * (ca - cb);
        return 1;
    }
    if (nb && x <= xb * SPREAD_REACH) return *c = cb, 1;
    if (na && x >= xa / SPREAD_REACH) return *c = ca, 1;
    return 0;
}

/* The identical-row points' c (spread_pt_t) at nreq requests of context L (of q, page): along
 * ln seq_len within each measured request count, then between the two nearest counts.  1 and
 * *c, or 0. */
static int uniform_c(const struct spread_memo *sm, double q, double page, double nreq, double L, double *c)
{
    double rows[SPREAD_MAX], cr[SPREAD_MAX];
    int nr = 0;
    for (int i = 0; i < sm->n; i++) {   /* each request count's c at L */
        const spread_pt_t *p = &sm->pt[i];
        int k = 0;
        if (p->lo > 0 || p->q != q || p->page != page) continue;
        while (k < nr && rows[k] != p->rows) k++;
        if (k < nr || nr == SPREAD_MAX) continue;
        const spread_pt_t *b = NULL, *a = NULL;
        for (int j = i; j < sm->n; j++) {
            const spread_pt_t *o = &sm->pt[j];
            if (o->lo > 0 || o->q != q || o->page != page || o->rows != p->rows) continue;
            if (o->hi <= L && (!b || o->hi > b->hi)) b = o;
            if (o->hi >= L && (!a || o->hi < a->hi)) a = o;
        }
        rows[nr] = p->rows;
        if (spread_interp(b != NULL, b ? b->hi : 0, b ? b->c : 0, a != NULL, a ? a->hi : 0, a ? a->c : 0, L, 1, &cr[nr]))
            nr++;
    }
    int b = -1, a = -1;
    for (int k = 0; k < nr; k++) {
        if (rows[k] <= nreq && (b < 0 || rows[k] > rows[b])) b = k;
        if (rows[k] >= nreq && (a < 0 || rows[k] < rows[a])) a = k;
    }
    return spread_interp(b >= 0, b >= 0 ? rows[b] : 0, b >= 0 ? cr[b] : 0, a >= 0, a >= 0 ? rows[a] : 0,
                         a >= 0 ? cr[a] : 0, nreq, 0, c);
}

/* The spread points' c at nreq requests of mean context L (of q, page): within each range
 * (one ctx_min .. seq_len) between the two nearest measured request counts, then between the
 * ranges' mean contexts (nreq requests spread evenly over each) in ln L; *cv the spread of nreq
 * requests so spread (ctx_cv), likewise.  1 and *c, *cv, or 0. */
static int spread_c(const struct spread_memo *sm, double q, double page, double nreq, double L, double *c, double *cv)
{
    double lo[SPREAD_MAX], hi[SPREAD_MAX], mean[SPREAD_MAX], rcv[SPREAD_MAX], rc[SPREAD_MAX];
    int nr = 0;
    for (int i = 0; i < sm->n; i++) {   /* each range's c at nreq requests */
        const spread_pt_t *p = &sm->pt[i];
        int k = 0;
        if (!(p->lo > 0) || p->q != q || p->page != page) continue;
        while (k < nr && (lo[k] != p->lo || hi[k] != p->hi)) k++;
        if (k < nr || nr == SPREAD_MAX) continue;
        const spread_pt_t *b = NULL, *a = NULL;
        for (int j = i; j < sm->n; j++) {
            const spread_pt_t *o = &sm->pt[j];
            if (o->lo != p->lo || o->hi != p->hi || o->q != q || o->page != page) continue;
            if (o->rows <= nreq && (!b || o->rows > b->rows)) b = o;
            if (o->rows >= nreq && (!a || o->rows < a->rows)) a = o;
        }
        lo[nr] = p->lo, hi[nr] = p->hi;
        if (!spread_interp(b != NULL, b ? b->rows : 0, b ? b->c : 0, a != NULL, a ? a->rows : 0, a ? a->c : 0, nreq, 0,
                           &rc[nr]))
            continue;
        double sum = 0, sum2 = 0;
        for (long r = 0; r < (long)nreq; r++) {
            double x = (double)law_varlen_row_ctx((long)nreq, (long)p->lo, (long)p->hi, r);
            sum += x;
            sum2 += x * x;
        }
        mean[nr] = sum / nreq;
        rcv[nr++] = ctx_cv(sum, sum2, nreq);
    }
    int b = -1, a = -1;
    for (int k = 0; k < nr; k++) {
        if (mean[k] <= L && (b < 0 || mean[k] > mean[b])) b = k;
        if (mean[k] >= L && (a < 0 || mean[k] < mean[a])) a = k;
    }
    return spread_interp(b >= 0, b >= 0 ? mean[b] : 0, b >= 0 ? rc[b] : 0, a >= 0, a >= 0 ? mean[a] : 0,
                         a >= 0 ? rc[a] : 0, L, 1, c) &&
           spread_interp(b >= 0, b >= 0 ? mean[b] : 0, b >= 0 ? rcv[b] : 0, a >= 0, a >= 0 ? mean[a] : 0,
                         a >= 0 ? rcv[a] : 0, L, 1, cv);
}

/* What calib's many-request points of law li say of a call of nreq requests of q rows each (at
 * it's page) whose contexts average L with spread cv (ctx_cv), where calib measured spread
 * points of that q and page (the MTP verify rows): each point's c, its measured time over this
 * model's price of the same call (spread_points).  The identical-row points' c at the call's
 * requests and L (uniform_c: 1 where they do not reach it), moved toward the spread points' c
 * (spread_c) in proportion to the call's spread over that of as many requests spread as the
 * points (requests at one context take the identical rows' c, ones as spread as the points the
 * spread points').  1 and *corr, or 0 (no point to tell). */
static int spread_corr(cost_model_t *cm, const cost_item_t *it, int li, int q, double nreq, double L, double cv,
                       double *corr)
{
    pm_t *pm = cm->impl;
    if (spread_points(cm, it, li) < 0 || !pm->spread) return 0;
    const struct spread_memo *sm = &pm->spread[li];
    double page = it->call->page, cu = 1, cs, scv;
    int any = 0;
    for (int i = 0; i < sm->n && !any; i++) any = sm->pt[i].lo > 0 && sm->pt[i].q == q && sm->pt[i].page == page;
    if (!any) return 0;
    int u = uniform_c(sm, q, page, nreq, L, &cu), s = spread_c(sm, q, page, nreq, L, &cs, &scv) && scv > 0;
    if (!u && !s) return 0;
    *corr = s ? cu + fmin(1, cv / scv) * (cs - cu) : cu;
    return 1;
}

/* Whether group gr of a decode law is of requests at spread contexts (ctx_min > 0: law.h). */
static int group_spread(const prof_law_t *l, const cost_grid_group_t *gr)
{
    return cost_grid_nkeys(l) > ATTN_COL_CTX_MIN && gr->key[ATTN_COL_CTX_MIN] > 0;
}

/* calib's identical-row points of q and page (of the run's shape) at nreq requests of
 * context L: their time over the law's there, interpolated in rows between the two nearest
 * measured row counts (and along seq_len within each).  1 and *ratio, or 0 (no measured rows
 * around it). */
static int uniform_ratio(const pm_t *pm, const prof_law_t *l, int q, int page, double nreq, double L, double *ratio)
{
    double shape[PROF_MAX_COLS] = { 0 };
    row_shape(pm, shape);
    int lo, hi;
    cost_grid_law(&pm->grid, (int)(l - pm->p->laws), &lo, &hi);
    const cost_grid_group_t *below = NULL, *above = NULL;
    for (int g = lo; g < hi; g++) {
        const cost_grid_group_t *gr = &pm->grid.g[g];
        if (gr->key[ATTN_COL_Q] != q || gr->key[ATTN_COL_PAGE] != page || !group_shape_is(l, gr, shape) ||
            group_spread(l, gr))
            continue;
        if (L < gr->ax[0] || L > gr->ax[gr->npts - 1]) continue;   /* inside its contexts only */
        double r = gr->key[ATTN_COL_ROWS];
        if (r <= nreq && (!below || r > below->key[ATTN_COL_ROWS])) below = gr;
        if (r >= nreq && (!above || r < above->key[ATTN_COL_ROWS])) above = gr;
    }
    if (!below || !above) return 0;
    double gb, ga, fb[PROF_MAX_COEF], fa[PROF_MAX_COEF], row[PROF_MAX_COLS] = { 0 };
    row_shape(pm, row);
    row[ATTN_COL_Q] = q;
    row[ATTN_COL_SEQ_LEN] = L;
    row[ATTN_COL_PAGE] = page;
    row[ATTN_COL_ROWS] = below->key[ATTN_COL_ROWS];
    if (cost_point_features(l->name, row, pm->m, &pm->r, &pm->hw, fb) < 0 || group_eval(pm, l, below, L, fb, &gb) < 0) return 0;
    row[ATTN_COL_ROWS] = above->key[ATTN_COL_ROWS];
    if (cost_point_features(l->name, row, pm->m, &pm->r, &pm->hw, fa) < 0 || group_eval(pm, l, above, L, fa, &ga) < 0) return 0;
    double lb = prof_eval(l, fb), la = prof_eval(l, fa);
    if (!(lb > 0 && la > 0)) return 0;
    double rb = below->key[ATTN_COL_ROWS], ra = above->key[ATTN_COL_ROWS];
    double w = ra > rb ? (nreq - rb) / (ra - rb) : 0;
    *ratio = (1 - w) * (gb / lb) + w * (ga / la);
    return 1;
}

/* The pack of latency-bound decode requests (split_decode) priced by the law on their
 * union, scaled to meet calib's identical-row points of the same q and page at the pack's
 * request count and mean context (uniform_ratio).  A pack whose requests have unlike q, or
 * no measured rows around it, is the law's alone.  1 and *t, or 0. */
static int pack_anchor(pm_t *pm, int li, const cost_item_t *it, const double *feat, double *t)
{
    const prof_law_t *l = &pm->p->laws[li];
    const kcall_t *c = it->call;
    /* requests: runs of one req; each's rows (q) and longest row */
    int nreq = 0, q = -1, run = 0;
    double sum_len = 0, cur = 0;
    for (int i = 0; i <= c->nseg; i++) {
        if (i == c->nseg || (i > 0 && c->segs[i].req != c->segs[i - 1].req)) {
            if (q >= 0 && q != run) return 0;
            q = run;
            sum_len += cur;
            nreq++;
            run = 0;
            cur = 0;
            if (i == c->nseg) break;
        }
        run++;
        if ((double)c->segs[i].seq_len > cur) cur = (double)c->segs[i].seq_len;
    }
    double L = floor(sum_len / nreq + 0.5), ratio;
    if (!uniform_ratio(pm, l, q, c->page, nreq, L, &ratio)) return 0;
    *t = prof_eval(l, feat) * ratio;
    return 1;
}

/* How hard an item of `sec` seconds (x count) loads the card, 0..1 (heat.h): a cuBLAS GEMM
 * by its FLOP rate over the calibrated fp16 peak, which is the heater's own rate (a GEMM at
 * m = 1 is bandwidth-bound and cool, one at m = 2048 runs near peak); everything else
 * (attention, GDN core, elementwise, the fp8 expansion) by its law's measured heat.  An
 * attention kernel's FLOP rate says little of its power: on the H200 calib's probes of every
 * attention law (two points each, the prefill chunks' included) left the clock where the
 * light load had it (heat 0.00), and so did the replay's prefill-only steps. */
static double item_heat(const pm_t *pm, const cost_item_t *it, const prof_law_t *l, double sec)
{
    double fl = it->kind == CI_GEMM ? cost_item_flops(it, pm->m, &pm->r) : 0;
    if (fl > 0 && pm->p->peak_fp16_tflops > 0 && sec > 0) {
        double u = fl * it->count / sec / (pm->p->peak_fp16_tflops * 1e12);
        return u < 1 ? u : 1;
    }
    return l && l->has_sustained ? l->heat : 0;
}

/* The sustained-load factor of a law's item at heat state h (heat.h). */
static double hot_factor(const pm_t *pm, const prof_law_t *l, double f)
{
    if (!l || !l->has_sustained || !pm->p->has_sustained || !(f > 0) || f >= pm->f_cold) return 1.0;
    return heat_factor_at(l->hot, f, pm->f_cold, pm->f_hot);
}

/* An item's sustained-load factor at clock f: its law's (hot_factor), but for a cuBLAS GEMM in a
 * profile with calib's compute-bound GEMM probe (sustained.gemm_compute_hot), by default
 * (cost_profile_compute_hot 2: at every step's clock, the model's own included; 1: only at a
 * clock a diagnostic's schedule gave, rescore --recorded-clock --compute-hot; 0: never): there
 * the GEMM's hot is the gemm law's (from its probes, of FLOP rate u_law over the peak) moved
 * towards the compute-bound probe's (rate 1) in proportion to the item's own rate u at its
 * calibrated time, log-linearly: hot = hot_law^(1 - w) hot_cb^w, w = (u - u_law) / (1 - u_law)
 * in [0, 1].  Priced only by rescore, for replays that ran each GEMM over every layer in a row
 * (the replay's item order) and recorded the idle before each step (gap_s): there the model's
 * clock meets the replays' and the probe takes the mixed steps to the runs.  Not in a simulation,
 * which prices an engine: its order is layer by layer, each GEMM between memory-bound items, and
 * replays in that order (--layer-order) ran their mixed steps at the gemm law's hot, the probe
 * pricing them 1-2% over; nor where the idle is unknown, where the model's card never idles and
 * runs hotter than any replay (docs/validation.md section 2). */
static double item_factor(const pm_t *pm, const cost_item_t *it, const prof_law_t *l, double sec, double f)
{
    double h = hot_factor(pm, l, f);
    if (it->kind != CI_GEMM || !pm->compute_hot || (pm->compute_hot == 1 && !pm->scheduled) || !pm->p->has_chot ||
        !(pm->p->chot[3] > 0) || !l ||
        !l->has_sustained || !pm->p->has_sustained || !(f > 0) || f >= pm->f_cold)
        return h;
    double fl = cost_item_flops(it, pm->m, &pm->r), pk = pm->p->peak_fp16_tflops * 1e12;
    double u0 = pm->gemm_u_law;
    if (!(fl > 0) || !(pk > 0) || !(sec > 0) || !(u0 < 1)) return h;
    double u = fl * it->count / sec / pk;
    double w = (u - u0) / (1 - u0);
    if (!(w > 0)) return h;
    if (w > 1) w = 1;
    double hot = exp((1 - w) * log(l->hot) + w * log(pm->p->chot[3]));
    return heat_factor_at(hot, f, pm->f_cold, pm->f_hot);
}

int cost_profile_item(cost_model_t *cm, const cost_item_t *it, double *sec, int *grid)
{
    const prof_law_t *l;
    if (pm_item(cm, it, sec, grid, &l) < 0) return -1;
    *sec *= item_factor(cm->impl, it, l, *sec, ((pm_t *)cm->impl)->clock_mean);
    return 0;
}

/* Whether an item lies outside its law's measured envelope: 1 with the reason in why,
 * else 0 (also for a profile that records none, and for the step and all-reduce laws). */
static int env_outside(const pm_t *pm, int li, const cost_item_t *it, char *why, size_t n)
{
    if (!pm->env || li < 0) return 0;
    const double *hi = pm->hi[li];
    int nk = pm->nk[li];
    switch (it->kind) {
    case CI_ATTN: case CI_BRIDGE: {
        if (pm->shape_out) {
            snprintf(why, n, "%s", pm->shape_why);
            return 1;
        }
        const kcall_t *c = it->call;
        const law_form_t *lf = law_find(pm->p->laws[li].name);
        if (lf && lf->family == LF_VARLEN) {   /* one call of decode rows and chunks: its own columns */
            const prof_law_t *vl = &pm->p->laws[li];
            double rows_hi = 0, ctx_hi = 0, q_hi = 0, pre_hi = 0;
            for (int i = 0; i < vl->npts; i++) {
                const double *v = vl->pts + (size_t)i * (size_t)vl->ncols;
                rows_hi = fmax(rows_hi, v[VARLEN_COL_DECODE_ROWS]);
                ctx_hi = fmax(ctx_hi, v[VARLEN_COL_CTX]);
                q_hi = fmax(q_hi, v[VARLEN_COL_CHUNK_Q]);
                pre_hi = fmax(pre_hi, v[VARLEN_COL_CHUNK_PREFIX]);
            }
            if (!vl->npts) return 0;
            long drows = 0, dctx = 0, cq = 0, cpre = 0;
            for (int i = 0; i < c->nseg; i++) {
                const kseg_t *g = &c->segs[i];
                if (g->q == 1) {
                    drows++;
                    if (g->seq_len > dctx) dctx = g->seq_len;
                } else {
                    if (g->q > cq) cq = g->q;
                    if (g->seq_len - g->q > cpre) cpre = g->seq_len - g->q;
                }
            }
            if (drows > rows_hi || dctx > ctx_hi || cq > q_hi || cpre > pre_hi) {
                snprintf(why, n, "%ld decode rows to %ld tokens, chunks of %ld after %ld; measured up to %g rows to %g,"
                         " chunks of %g after %g", drows, dctx, cq, cpre, rows_hi, ctx_hi, q_hi, pre_hi);
                return 1;
            }
            return 0;
        }
        if (nk < 3) return 0;
        long maxlen = 0;
        int reqs = 0, run = 0, q = 0;
        for (int i = 0; i < c->nseg; i++) {
            if (c->segs[i].seq_len > maxlen) maxlen = c->segs[i].seq_len;
            if (i == 0 || c->segs[i].req != c->segs[i - 1].req || c->segs[i].req < 0) {
                reqs++;
                run = 0;
            }
            run++;
            int qi = c->route == ROUTE_DECODE_XQA || c->route == ROUTE_DECODE_SCALAR ? run : c->segs[i].q;
            if (qi > q) q = qi;
        }
        if (it->kind == CI_ATTN && reqs > hi[ATTN_COL_ROWS]) {
            snprintf(why, n, "%d requests in a call, measured up to %g", reqs, hi[ATTN_COL_ROWS]);
            return 1;
        }
        if (it->kind == CI_ATTN && q > hi[ATTN_COL_Q]) {
            snprintf(why, n, "q %d, measured up to %g", q, hi[ATTN_COL_Q]);
            return 1;
        }
        if ((double)maxlen > hi[ATTN_COL_SEQ_LEN]) {
            snprintf(why, n, "seq_len %ld, measured up to %g", maxlen, hi[ATTN_COL_SEQ_LEN]);
            return 1;
        }
        return 0;
    }
    case CI_GEMM:
        if (it->moe && pm->p->laws[li].npts && !strcmp(pm->p->laws[li].name, "gemm.moe.fp16")) {
            /* a routed-expert group: the grouped GEMM's measured (n, k) and tokens */
            const prof_law_t *ml = &pm->p->laws[li];
            double tok_hi = -1;
            for (int i = 0; i < ml->npts; i++) {
                const double *v = ml->pts + (size_t)i * (size_t)ml->ncols;
                if (v[MOE_COL_N] == it->n && v[MOE_COL_K] == it->k) tok_hi = fmax(tok_hi, v[MOE_COL_TOKENS]);
            }
            if (tok_hi < 0) {
                snprintf(why, n, "expert shape n %g x k %g not measured", it->n, it->k);
                return 1;
            }
            if (it->tokens > tok_hi) {
                snprintf(why, n, "%g tokens of %g x %g, measured up to %g", it->tokens, it->n, it->k, tok_hi);
                return 1;
            }
            return 0;
        }
        if (!pm->ngemm_nk) return 0;  /* a law without points has no measured range */
        for (int i = 0; i < pm->ngemm_nk; i++)
            if (pm->gemm_nk[i][0] == it->n && pm->gemm_nk[i][1] == it->k && pm->gemm_nk[i][2] == it->wb) {
                if (it->m <= pm->gemm_nk[i][3]) return 0;
                snprintf(why, n, "m %g of %g x %g, measured up to %g", it->m, it->n, it->k, pm->gemm_nk[i][3]);
                return 1;
            }
        snprintf(why, n, "shape n %g x k %g (%g bytes a weight) not measured", it->n, it->k, it->wb);
        return 1;
    case CI_GDN:
        if (nk >= 2 && (it->tokens > hi[GDN_COL_TOKENS] || it->seqs > hi[GDN_COL_SEQS])) {
            snprintf(why, n, "%g tokens in %g sequences, measured up to %g in %g", it->tokens, it->seqs,
                     hi[GDN_COL_TOKENS], hi[GDN_COL_SEQS]);
            return 1;
        }
        return 0;
    case CI_ELEM:
        if (nk >= 1 && it->tokens > hi[0]) {
            snprintf(why, n, "%g tokens, measured up to %g", it->tokens, hi[0]);
            return 1;
        }
        return 0;
    default: return 0;
    }
}

static int pm_price(void *vctx, const cost_item_t *it)
{
    pm_ctx_t *x = vctx;
    double sec;
    int grid;
    const prof_law_t *l;
    if (pm_item(x->cm, it, &sec, &grid, &l) < 0) return -1;
    pm_t *pm = x->cm->impl;
    int bound = pm->last_bound;
    double raw = pm->last_raw;
    if (x->pass == 0) {
        if (it->kind == CI_STEP) x->host += sec;
        else {
            x->total += sec;
            x->heat_w += sec * item_heat((pm_t *)x->cm->impl, it, l, sec);
        }
        return 0;
    }
    pm->all_s += sec;
    if (bound == 1) {
        pm->n_floor++;
        pm->s_floor += sec - raw;
    } else if (bound == 2) {
        pm->n_cap++;
        pm->s_cap += raw - sec;
    }
    double s = sec * item_factor(pm, it, l, sec, pm->clock_mean);
    if (pm->env) {
        char why[128];
        int li = l ? (int)(l - pm->p->laws) : -1;
        pm->total_s += s;
        if (env_outside(pm, li, it, why, sizeof why)) {
            if (!pm->out_n[li]++) snprintf(pm->out_why[li], sizeof pm->out_why[li], "%s", why);
            pm->out_s[li] += s;
        }
    }
    cost_breakdown_add(x->o, it, s);
    return 0;
}

/* A share as a percentage with one decimal; a share that rounds to 0.0 says so. */
static const char *pct(char *buf, size_t n, double share)
{
    if (share < 0.0005) snprintf(buf, n, "under 0.1%%");
    else snprintf(buf, n, "%.1f%%", 100 * share);
    return buf;
}

/* The run's envelope warnings (profile.h): one line per law that priced items outside its
 * measured envelope, and the share of step time they hold, written to f.  Nothing when every
 * item was inside, or the profile records no envelope. */
static void env_write(const pm_t *pm, FILE *f)
{
    /* the floor: where it moved at least 0.1% of step time (a law a hair under physics at a
     * few items is no news) */
    if (pm->n_floor && pm->s_floor >= 1e-3 * pm->all_s)
        fprintf(f, "warning: %s: %ld items priced at their roofline floor (%s peaks of %s), %.4g s (%.1f%% of step time)"
                " above what their laws gave\n", pm->p->path, pm->n_floor, pm->pk_from, pm->p->gpu, pm->s_floor,
                100 * pm->s_floor / pm->all_s);
    if (pm->n_cap)
        fprintf(f, "warning: %s: %ld items outside the envelope capped at %g x what their law's nearest measured points"
                " take at their size, %.4g s below their laws' extrapolation\n", pm->p->path, pm->n_cap, 1 / BOUND_SLACK,
                pm->s_cap);
    if (!pm->env || !(pm->total_s > 0)) return;
    double out = 0;
    for (int li = 0; li < pm->p->nlaws; li++) {
        if (!pm->out_n[li]) continue;
        out += pm->out_s[li];
        char share[32];
        fprintf(f, "warning: %s priced outside its measured envelope (%s): %ld items, %s of step time by the law's extrapolation\n",
                pm->p->laws[li].name, pm->out_why[li], pm->out_n[li], pct(share, sizeof share, pm->out_s[li] / pm->total_s));
    }
    if (out > 0) {
        char share[32];
        fprintf(f, "warning: %s: %s of step time priced outside the profile's measured envelope\n", pm->p->path,
                pct(share, sizeof share, out / pm->total_s));
    }
}

int cost_profile_envelope_warnings(cost_model_t *cm, char *buf, size_t n)
{
    if (n) buf[0] = 0;
    if (!cm || cm->step != pm_step || !n) return 0;
    pm_t *pm = cm->impl;
    pm->env_taken = 1;
    FILE *f = fmemopen(buf, n, "w");
    if (!f) return -1;
    env_write(pm, f);
    return fclose(f) == 0 ? 0 : -1;
}

void cost_profile_envelope_quiet(cost_model_t *cm)
{
    if (cm && cm->step == pm_step) ((pm_t *)cm->impl)->env_taken = 1;
}

typedef struct {
    cost_model_t *cm;
    char *err;
    size_t n;
} floor_ctx_t;

static int floor_item(void *vctx, const cost_item_t *it)
{
    floor_ctx_t *x = vctx;
    pm_t *pm = x->cm->impl;
    double sec;
    int grid;
    const prof_law_t *l;
    if (pm_item(x->cm, it, &sec, &grid, &l) < 0) {
        snprintf(x->err, x->n, "cost model (profile): %s", x->cm->err);
        return -1;
    }
    double run, f = item_floor(pm, it, l, &run);
    sec *= item_factor(pm, it, l, sec, pm->clock_mean);
    if (sec > 0 && sec < f * (1 - 1e-12)) {
        char nm[64];
        snprintf(x->err, x->n, "invariant violated: item %s priced %.6g s, under its roofline floor %.6g s",
                 cost_item_law(it, nm, sizeof nm), sec, f);
        return -1;
    }
    return 0;
}

int cost_floor_check(cost_model_t *cm, const cost_step_t *in, char *err, size_t n)
{
    if (!cm || cm->step != pm_step) return 0;
    pm_t *pm = cm->impl;
    floor_ctx_t x = { cm, err, n };
    long nf = pm->n_floor, nc = pm->n_cap;
    double sf = pm->s_floor, sc = pm->s_cap;
    int rc = cost_enumerate(pm->m, &pm->r, in, floor_item, &x);
    pm->n_floor = nf;   /* a check, not a pricing: the counts stay the run's */
    pm->n_cap = nc;
    pm->s_floor = sf;
    pm->s_cap = sc;
    return rc < 0 ? -1 : 0;
}

void cost_profile_set_bounds(cost_model_t *cm, int on)
{
    if (!cm || cm->step != pm_step) return;
    pm_t *pm = cm->impl;
    pm->no_bounds = !on;
    if (pm->spread)                /* the spread points' calls priced again, bounded or not */
        for (int li = 0; li < pm->p->nlaws; li++) pm->spread[li].done = 0, pm->spread[li].n = 0;
}

double cost_profile_item_floor(cost_model_t *cm, const cost_item_t *it)
{
    if (!cm || cm->step != pm_step) return 0;
    pm_t *pm = cm->impl;
    char name[64];
    const char *law = cost_item_law(it, name, sizeof name);
    const prof_law_t *l = it->kind == CI_GEMM && it->moe ? prof_find(pm->p, "gemm.moe.fp16") : prof_find(pm->p, law);
    double run;
    return item_floor(pm, it, l, &run);
}

void cost_profile_bounds(const cost_model_t *cm, long *n_floor, double *s_floor, long *n_cap, double *s_cap)
{
    *n_floor = *n_cap = 0;
    *s_floor = *s_cap = 0;
    if (!cm || cm->step != pm_step) return;
    const pm_t *pm = cm->impl;
    *n_floor = pm->n_floor;
    *s_floor = pm->s_floor;
    *n_cap = pm->n_cap;
    *s_cap = pm->s_cap;
}

double cost_profile_outside_share(const cost_model_t *cm)
{
    if (!cm || cm->step != pm_step) return 0;
    const pm_t *pm = cm->impl;
    if (!pm->env || !(pm->total_s > 0)) return 0;
    double out = 0;
    for (int li = 0; li < pm->p->nlaws; li++) out += pm->out_s[li];
    return out / pm->total_s;
}

/* A measured point's least work (cost_item_traffic's, from the point's columns and shape):
 * 1, or 0 for a law it does not apply to. */
static int point_traffic(const pm_t *pm, const prof_law_t *l, const law_form_t *f, int shape_cols, const double *row,
                         double *fl, double *by)
{
    if (!f) return 0;
    const profile_t *p = pm->p;
    double kvb = strstr(l->name, ".fp8") ? 1 : 2;
    double qh = pm->r.q_heads, kvh = pm->r.kv_heads, D = pm->m->head_dim;
    if (p->has_envelope && p->env_head_dim > 0) {  /* points without shape columns: the envelope's shape */
        qh = p->env_q_heads;
        kvh = p->env_kv_heads;
        D = p->env_head_dim;
    }
    switch (f->family) {
    case LF_PREFILL: case LF_DECODE_XQA: case LF_DECODE_SCALAR: {
        if (shape_cols) {
            qh = row[ATTN_COL_Q_HEADS];
            kvh = row[ATTN_COL_KV_HEADS];
            D = row[ATTN_COL_HEAD_DIM];
        }
        double rows = row[ATTN_COL_ROWS], q = row[ATTN_COL_Q], L = row[ATTN_COL_SEQ_LEN];
        long lo = f->family != LF_PREFILL && l->ncols > ATTN_COL_CTX_MIN + 1 ? (long)row[ATTN_COL_CTX_MIN] : 0;
        if (lo > 0 && lo < (long)L && rows > 1) {   /* requests spread from ctx_min (law.h): their mean */
            double keys = 0;
            for (long i = 0; i < (long)rows; i++) keys += (double)law_varlen_row_ctx((long)rows, lo, (long)L, i);
            L = keys / rows;
        }
        *fl = rows * 4.0 * qh * q * (L - q / 2) * D;
        *by = rows * 2.0 * L * kvh * D * kvb;
        return 1;
    }
    case LF_VARLEN: {
        double dr = row[VARLEN_COL_DECODE_ROWS], ctx = row[VARLEN_COL_CTX], ch = row[VARLEN_COL_CHUNKS],
               cq = row[VARLEN_COL_CHUNK_Q], cp = row[VARLEN_COL_CHUNK_PREFIX], keys = 0;
        long lo = l->ncols > VARLEN_COL_CTX_MIN + 1 ? (long)row[VARLEN_COL_CTX_MIN] : 0;
        for (long i = 0; i < (long)dr; i++)      /* the decode rows' keys (spread from ctx_min: law.h) */
            keys += (double)law_varlen_row_ctx((long)dr, lo, (long)ctx, i);
        *fl = keys * 4.0 * qh * D + ch * 4.0 * qh * cq * (cp + cq / 2) * D;
        *by = (keys + ch * (cp + cq)) * 2.0 * kvh * D * 2;
        return 1;
    }
    case LF_GEMM: {
        double m = row[GEMM_COL_M], n = row[GEMM_COL_N], k = row[GEMM_COL_K], wb = row[GEMM_COL_WB];
        *fl = 2 * m * n * k;
        *by = n * k * wb + m * (k + n);
        return 1;
    }
    case LF_MOE: {
        double t = row[MOE_COL_TOKENS], topk = row[MOE_COL_TOPK], n = row[MOE_COL_N], k = row[MOE_COL_K];
        *fl = 2.0 * t * topk * n * k;
        *by = topk * n * k * 2;
        return 1;
    }
    default: return 0;
    }
}

static int cmp_pe(const void *va, const void *vb)
{
    const double *a = va, *b = vb;
    return (a[0] > b[0]) - (a[0] < b[0]);
}

/* The card's peaks and every law's points' (floor, time) (pm->pe).  0 / -1. */
static int bounds_init(pm_t *pm)
{
    const profile_t *p = pm->p;
    const hw_gpu_t *g = hw_gpu_match(p->gpu);
    if (g) {
        pm->pk_flops = g->fp16_flops;
        pm->pk_flops8 = g->fp8_flops;
        pm->pk_bw = g->mem_bw;
        pm->pk_from = "datasheet";
    } else {
        pm->pk_flops = p->peak_fp16_tflops * 1e12;
        pm->pk_bw = p->mem_bw_gbs * 1e9;
        pm->pk_from = "measured";
    }
    if (!(pm->pk_flops > 0) || !(pm->pk_bw > 0) || p->nlaws < 1) return 0;
    pm->pe = calloc((size_t)p->nlaws, sizeof *pm->pe);
    pm->npe = calloc((size_t)p->nlaws, sizeof *pm->npe);
    if (!pm->pe || !pm->npe) return -1;
    for (int li = 0; li < p->nlaws; li++) {
        const prof_law_t *l = &p->laws[li];
        const law_form_t *lf = law_find(l->name);
        int shape_cols = law_keys_attn_shape(l);
        double fl, by;
        if (!lf) continue;
        for (int i = 0; i < l->npts; i++) {
            const double *row = l->pts + (size_t)i * l->ncols;
            double t = row[l->ncols - 1];
            if (!point_traffic(pm, l, lf, shape_cols, row, &fl, &by) || !(t > 0)) continue;
            double pf = lf->family == LF_GEMM && row[GEMM_COL_WB] <= 1 && pm->pk_flops8 > 0 ? pm->pk_flops8 : pm->pk_flops;
            double f = fmax(fl / pf, by / pm->pk_bw);
            if (!(f > 0)) continue;
            if (!pm->pe[li] && !(pm->pe[li] = calloc((size_t)l->npts, sizeof *pm->pe[li]))) return -1;
            pm->pe[li][pm->npe[li]][0] = f;
            pm->pe[li][pm->npe[li]][1] = t;
            pm->npe[li]++;
        }
        if (pm->npe[li] > 1) qsort(pm->pe[li], (size_t)pm->npe[li], sizeof *pm->pe[li], cmp_pe);
    }
    return 0;
}

static void env_free(pm_t *pm)
{
    if (pm->pe)
        for (int li = 0; li < pm->p->nlaws; li++) free(pm->pe[li]);
    free(pm->pe);
    free(pm->npe);
    free(pm->lo);
    free(pm->hi);
    free(pm->nk);
    free(pm->gemm_nk);
    free(pm->out_n);
    free(pm->out_s);
    free(pm->out_why);
    if (pm->spread)
        for (int li = 0; li < pm->p->nlaws; li++) free(pm->spread[li].pt);
    free(pm->spread);
    pm->spread = NULL;
    if (pm->near)
        for (int li = 0; li < pm->p->nlaws; li++) free(pm->near[li].lf), free(pm->near[li].lr);
    free(pm->near);
    pm->near = NULL;
}

/* Whether law l's points record the attention shape they measured (q heads, kv heads,
 * head_dim columns). */
static int law_keys_attn_shape(const prof_law_t *l)
{
    const law_form_t *f = law_find(l->name);
    return f && f->shape_facts && f->family != LF_GEMM && f->family != LF_VARLEN && law_has_facts(f, l->ncols);
}

/* Why the run's attention shape is outside the envelope: its shape, and every shape the
 * profile measured (the envelope's, then the attention points' others: a merged profile
 * holds two models'), into pm->shape_why. */
static void env_shapes_why(pm_t *pm, const profile_t *p, int tp)
{
    enum { MAXS = 4 };
    double sh[MAXS][3] = { { p->env_q_heads, p->env_kv_heads, p->env_head_dim } };
    int ns = 1, more = 0;
    for (int li = 0; li < p->nlaws; li++) {
        const prof_law_t *l = &p->laws[li];
        if (!law_keys_attn_shape(l)) continue;
        for (int i = 0; i < l->npts; i++) {
            const double *row = l->pts + (size_t)i * l->ncols;
            int k = 0;
            while (k < ns && !(sh[k][0] == row[ATTN_COL_Q_HEADS] && sh[k][1] == row[ATTN_COL_KV_HEADS] &&
                               sh[k][2] == row[ATTN_COL_HEAD_DIM]))
                k++;
            if (k < ns) continue;
            if (ns == MAXS) {
                more = 1;
                continue;
            }
            sh[ns][0] = row[ATTN_COL_Q_HEADS];
            sh[ns][1] = row[ATTN_COL_KV_HEADS];
            sh[ns][2] = row[ATTN_COL_HEAD_DIM];
            ns++;
        }
    }
    char *w = pm->shape_why;
    size_t n = sizeof pm->shape_why, at = 0;
    at += (size_t)snprintf(w, n, "%d q/%d kv heads, head_dim %d at TP%d; measured", pm->r.q_heads, pm->r.kv_heads,
                           pm->m->head_dim, tp);
    for (int k = 0; k < ns && at < n; k++)
        at += (size_t)snprintf(w + at, n - at, "%s %g/%g, %g", k ? ";" : "", sh[k][0], sh[k][1], sh[k][2]);
    if (at < n) snprintf(w + at, n - at, "%s at TP%d", more ? " and more" : "", p->env_tp);
}

/* The envelope's tables (pm->env): every law's ranges, the gemm shapes measured.  0 / -1. */
static int env_init(pm_t *pm, int tp)
{
    const profile_t *p = pm->p;
    if (!p->has_envelope) {
        /* no envelope recorded: the profile's model and TP degree say whether its attention
         * points are this run's shape (prof_check_model); when they are not, the laws price
         * every attention item, as that check's warning says */
        pm->shape_out = prof_check_model(p, pm->m, tp, NULL);
        return 0;
    }
    int nl = p->nlaws > 0 ? p->nlaws : 1;
    pm->lo = calloc((size_t)nl, sizeof *pm->lo);
    pm->hi = calloc((size_t)nl, sizeof *pm->hi);
    pm->nk = calloc((size_t)nl, sizeof *pm->nk);
    pm->out_n = calloc((size_t)nl, sizeof *pm->out_n);
    pm->out_s = calloc((size_t)nl, sizeof *pm->out_s);
    pm->out_why = calloc((size_t)nl, sizeof *pm->out_why);
    if (!pm->lo || !pm->hi || !pm->nk || !pm->out_n || !pm->out_s || !pm->out_why) return -1;
    for (int li = 0; li < p->nlaws; li++) pm->nk[li] = prof_law_range(&p->laws[li], pm->lo[li], pm->hi[li]);
    const prof_law_t *g = prof_find(p, "gemm");
    if (g && g->npts > 0 && g->ncols > GEMM_COL_WB) {
        pm->gemm_nk = calloc((size_t)g->npts, sizeof *pm->gemm_nk);
        if (!pm->gemm_nk) return -1;
        for (int i = 0; i < g->npts; i++) {
            const double *row = g->pts + (size_t)i * g->ncols;
            int j = 0;
            while (j < pm->ngemm_nk && !(pm->gemm_nk[j][0] == row[GEMM_COL_N] && pm->gemm_nk[j][1] == row[GEMM_COL_K] &&
                                         pm->gemm_nk[j][2] == row[GEMM_COL_WB]))
                j++;
            if (j == pm->ngemm_nk) {
                pm->gemm_nk[j][0] = row[GEMM_COL_N];
                pm->gemm_nk[j][1] = row[GEMM_COL_K];
                pm->gemm_nk[j][2] = row[GEMM_COL_WB];
                pm->gemm_nk[j][3] = 0;
                pm->ngemm_nk++;
            }
            if (row[GEMM_COL_M] > pm->gemm_nk[j][3]) pm->gemm_nk[j][3] = row[GEMM_COL_M];
        }
    }
    /* the run's shape is measured where the envelope's is it, or where an attention law's
     * points record it (per rank: a TP degree's heads are the shape the kernels run) */
    int measured = p->env_tp == tp && p->env_q_heads == pm->r.q_heads && p->env_kv_heads == pm->r.kv_heads &&
                   p->env_head_dim == pm->m->head_dim;
    for (int li = 0; li < p->nlaws && !measured; li++) {
        const prof_law_t *l = &p->laws[li];
        if (!law_keys_attn_shape(l)) continue;
        for (int i = 0; i < l->npts && !measured; i++) {
            const double *row = l->pts + (size_t)i * l->ncols;
            measured = row[ATTN_COL_Q_HEADS] == pm->r.q_heads && row[ATTN_COL_KV_HEADS] == pm->r.kv_heads &&
                       row[ATTN_COL_HEAD_DIM] == pm->m->head_dim;
        }
    }
    if (!measured) {
        pm->shape_out = 1;
        env_shapes_why(pm, p, tp);
    }
    pm->env = 1;
    return 0;
}

/* With a profile that has the sustained-load probes: a first pass prices the items at
 * their calibrated times, whose heat-weighted share is the step's target; the state first
 * relaxes over the GPU's idle before the step (target 0: the step law's host time, which an
 * engine spends before it queues the step's kernels, or the idle a schedule gives:
 * cost_profile_idle_schedule), then follows the target over the kernels' time (heat_step),
 * and a second pass prices every item at the state's mean over the kernels' time.  Without
 * them: one pass, calibrated times. */
static int pm_step(cost_model_t *cm, const cost_step_t *in, cost_breakdown_t *o)
{
    pm_t *pm = cm->impl;
    memset(o, 0, sizeof *o);
    pm_ctx_t x = { cm, o, 1, 0, 0, 0 };
    if (pm->p->has_sustained) {
        x.pass = 0;
        if (cost_enumerate(pm->m, &pm->r, in, pm_price, &x) < 0) return -1;
        double c = x.total > 0 ? x.heat_w / x.total : 0;
        double idle = pm->nstep < pm->nidl && pm->idl[pm->nstep] >= 0 ? pm->idl[pm->nstep] : x.host;
        pm->idle_last = idle;
        double tau_up = prof_tau_up(pm->p);
        heat_step(&pm->heat, 0, idle, tau_up, pm->p->tau_down_s);
        pm->heat_mean = heat_step(&pm->heat, c, x.total, tau_up, pm->p->tau_down_s);
        pm->clock_mean = heat_clock(pm->heat_mean, pm->f_cold, pm->f_hot);
        pm->clock_model = pm->clock_mean;
        /* a diagnostic's schedule: this step priced at the clock given for it (the state
         * itself keeps following the model) */
        double f = pm->nstep < pm->nclk ? pm->clk[pm->nstep] : NAN;
        pm->scheduled = f > 0;
        if (f > 0) pm->clock_mean = f;
        x.pass = 1;
    }
    pm->nstep++;
    return cost_enumerate(pm->m, &pm->r, in, pm_price, &x);
}

void cost_profile_clock_schedule(cost_model_t *cm, const double *mhz, long n)
{
    if (!cm || cm->step != pm_step) return;
    pm_t *pm = cm->impl;
    pm->clk = mhz, pm->nclk = mhz ? n : 0, pm->nstep = 0;
}

int cost_profile_clock_units(cost_model_t *cm, int stamps)
{
    if (!cm || cm->step != pm_step) return 0;
    pm_t *pm = cm->impl;
    int have = pm->p->stamp_cold_mhz > 0 && pm->p->stamp_hot_mhz > 0 && pm->p->stamp_hot_mhz < pm->p->stamp_cold_mhz;
    if (stamps && have) pm->f_cold = pm->p->stamp_cold_mhz, pm->f_hot = pm->p->stamp_hot_mhz;
    else pm->f_cold = pm->p->clock_cold_mhz, pm->f_hot = pm->p->clock_hot_mhz;
    return stamps && have;
}

void cost_profile_idle_schedule(cost_model_t *cm, const double *idle_s, long n)
{
    if (!cm || cm->step != pm_step) return;
    pm_t *pm = cm->impl;
    pm->idl = idle_s, pm->nidl = idle_s ? n : 0, pm->nstep = 0;
}

double cost_profile_idle(const cost_model_t *cm)
{
    if (!cm || cm->step != pm_step) return NAN;
    const pm_t *pm = cm->impl;
    return pm->p->has_sustained && pm->nstep ? pm->idle_last : NAN;
}

void cost_profile_compute_hot(cost_model_t *cm, int on)
{
    if (cm && cm->step == pm_step) ((pm_t *)cm->impl)->compute_hot = on == 2 ? 2 : on != 0;
}

double cost_profile_model_clock(const cost_model_t *cm)
{
    if (!cm || cm->step != pm_step) return NAN;
    const pm_t *pm = cm->impl;
    return pm->p->has_sustained && pm->nstep ? pm->clock_model : NAN;
}

static void pm_destroy(cost_model_t *cm)
{
    pm_t *pm = cm->impl;
    if (!pm->env_taken) env_write(pm, stderr);
    env_free(pm);
    cost_grid_free(&pm->grid);
    free(pm->cold);
    free(pm);
    free(cm);
}

int cost_profile_fork_kernels(const profile_t *p)
{
    return p && prof_find(p, law_form(LAW_PREFILL_SPLITD_FP16)->name) != NULL;
}

const char *cost_law_fallback(const char *law)
{
    const law_form_t *f = law_find(law);
    if (!f) return NULL;
    switch (f->id) {
    case LAW_PREFILL_LOWSMEM_PIPE_FP16: return law_form(LAW_PREFILL_LOWSMEM_FP16)->name;
    case LAW_PREFILL_SPLITD_FP16: return law_form(LAW_PREFILL_BM32_FP16)->name;
    default: return NULL;
    }
}

/* "path:line:col: laws" or "path: laws" */
static void laws_where(const profile_t *p, char *buf, size_t n)
{
    if (p->laws_line > 0) snprintf(buf, n, "%s:%d:%d: laws", p->path, p->laws_line, p->laws_col);
    else snprintf(buf, n, "%s: laws", p->path);
}

int cost_profile_check(const profile_t *p, const model_t *m, int tp, kv_dtype_t kv, int group,
                       char err[COST_ERR_MAX])
{
    return cost_profile_check_link(p, m, tp, kv, group, NULL, err);
}

int cost_profile_check_link(const profile_t *p, const model_t *m, int tp, kv_dtype_t kv, int group,
                            const hw_link_t *link, char err[COST_ERR_MAX])
{
    static const char *const fp16[] = { "attn.prefill_bm32.fp16", "attn.prefill_generic.fp16",
                                        "attn.prefill_lowsmem.fp16", NULL };
    /* (the fork's kernels have no fp8 low-smem variant: route.h) */
    static const char *const fp8[] = { "attn.prefill_generic.fp8", "attn.prefill_lowsmem.fp8", "attn.fp8_bridge",
                                       "attn.prefill_bm32.fp16", NULL };
    char where[600];
    laws_where(p, where, sizeof where);
    const char *const *need = kv_is_fp8(kv) ? fp8 : fp16;
    int fork = cost_profile_fork_kernels(p);
    for (int i = 0; need[i]; i++)
        if (!prof_find(p, need[i]) && !(fork && !strcmp(need[i], "attn.prefill_lowsmem.fp8"))) {
            snprintf(err, COST_ERR_MAX, "%s: no law \"%s\" (kv_cache_dtype %s needs it)", where, need[i],
                     kv == KV_FP8_E5M2 ? "fp8_e5m2" : kv == KV_FP8_E4M3 ? "fp8_e4m3" : "fp16");
            return -1;
        }
    /* the decode gates (route_decode_xqa): groups 4, 6 and 8 may take XQA, and every group
     * the scalar kernel (short contexts, other groups) */
    char dec[48];
    for (int k = group == 4 || group == 6 || group == 8 ? 0 : 1; k < 2; k++) {
        snprintf(dec, sizeof dec, "attn.decode_%s.%s", k == 0 ? "xqa" : "scalar", kv_is_fp8(kv) ? "fp8" : "fp16");
        if (!prof_find(p, dec)) {
            snprintf(err, COST_ERR_MAX, "%s: no law \"%s\" (the decode rows need it)", where, dec);
            return -1;
        }
    }
    cost_model_t *cm = cost_profile_new_link(p, m, tp, link, err);
    if (!cm) return -1;
    cost_free(cm);
    return 0;
}

cost_model_t *cost_profile_new(const profile_t *p, const model_t *m, int tp, char err[COST_ERR_MAX])
{
    return cost_profile_new_link(p, m, tp, NULL, err);
}

cost_model_t *cost_profile_new_link(const profile_t *p, const model_t *m, int tp, const hw_link_t *link,
                                    char err[COST_ERR_MAX])
{
    char where[600];
    laws_where(p, where, sizeof where);
    cost_model_t *cm = calloc(1, sizeof *cm);
    pm_t *pm = calloc(1, sizeof *pm);
    if (!cm || !pm) {
        snprintf(err, COST_ERR_MAX, "out of memory");
        goto fail;
    }
    pm->p = p;
    pm->m = m;
    pm->f_cold = p->clock_cold_mhz, pm->f_hot = p->clock_hot_mhz;
    pm->hw = cost_hw_of(p);
    if (model_rank(m, tp, &pm->r) < 0) {
        snprintf(err, COST_ERR_MAX, "tensor_parallel_size %d does not divide the model's heads", tp);
        goto fail;
    }
    static const char *const need[] = { "gemm", "step" };
    for (size_t i = 0; i < sizeof need / sizeof *need; i++)
        if (!prof_find(p, need[i])) {
            snprintf(err, COST_ERR_MAX, "%s: no law \"%s\" (every step needs it)", where, need[i]);
            goto fail;
        }
    if (m->n_gdn > 0 && !prof_find(p, "gdn")) {
        snprintf(err, COST_ERR_MAX, "%s: no law \"gdn\" (the model has GDN layers)", where);
        goto fail;
    }
    if (tp > 1 && !prof_find(p, "allreduce") && !link) {
        snprintf(err, COST_ERR_MAX, "%s: no law \"allreduce\" (tensor_parallel_size %d: measure it with bin/calib_allreduce,"
                 " or give hardware.link to price it by a link's datasheet)", where, tp);
        goto fail;
    }
    pm->link = link;
    pm->tp = tp;
    if (bounds_init(pm) < 0) {
        snprintf(err, COST_ERR_MAX, "out of memory");
        goto fail;
    }
    if (cost_grid_build(&pm->grid, p->laws, p->nlaws) < 0 || env_init(pm, tp) < 0 || elem_cold_init(pm) < 0) {
        snprintf(err, COST_ERR_MAX, "out of memory");
        goto fail;
    }
    gemm_hot_init(pm);
    cm->name = "profile";
    cm->step = pm_step;
    cm->destroy = pm_destroy;
    cm->impl = pm;
    return cm;
fail:
    if (pm) {
        env_free(pm);
        cost_grid_free(&pm->grid);
        free(pm->cold);
    }
    free(pm);
    free(cm);
    return NULL;
}

