/* v100_fit.c: build the V100 profile from published figures (bin/v100fit).
 *
 *   bin/v100fit [calib/v100_figures.yaml] [-o calib/profiles/v100-pcie-32gb-tp2.yaml]
 *
 * No V100 is at hand, so the profile is assembled from SPEC §1's kernel figures,
 * datasheet values and stated assumptions (calib/v100_figures.yaml), and five free
 * parameters are fitted -- with GSL's nonlinear least squares, on log ratios --
 * against SPEC's sixteen cells (the baseline and PREFIX_DECODE_ROWS tables), the two
 * engine-level cells released for fitting and two step-level decode figures only, by
 * simulating those scenarios with pacesim's own engine.  Every other configuration
 * (any-page, pacing, fp8 at engine level) is then a prediction.  The profile
 * prices the reference fork's kernel library (it holds attn.prefill_splitd.fp16, so the
 * router takes the fork's dispatch: route.h).  The free parameters:
 *   p0  gemm: seconds per FLOP of the dequantise-and-GEMM linear layers
 *   p1  step: fixed host/engine overhead per step
 *   p2  attn.prefill_lowsmem.fp16: seconds per tile on the critical path of the
 *       unpipelined low-smem BM16/BN128 kernel (the MTP verify row q = 5 at page 816
 *       walks one CTA per q head); its per-tile throughput is then solved from the
 *       published 104.4 ms chunk, which runs on that kernel
 *   p3  attn.decode_xqa.fp16: share of the published 1.8 ms that scales with KV tokens
 *       (the rest is fixed per call): NOT fitted, the call's KV bytes at the datasheet
 *       bandwidth (no figure pins it once the two-request step is A 240K + B 16K)
 *   p4  MTP acceptance: mean accepted drafts per step (a workload property, reported
 *       for the MTP scenarios' mtp_acceptance)
 *   p5  step: host seconds of a speculative decode-only step per resident request beyond
 *       the first (the multi-request verify step's host work; a paced prefill waiting in
 *       the running list counts): pinned by the two-request decode-step figure
 * Fixed-from-figures coefficients are solved exactly from the figures (GSL linear).  After
 * the fit, two fp8_e5m2 kernel coefficients are solved by simulation, each from one
 * step-level figure (fp8_figures; no fp16 cell depends on them):
 *   attn.prefill_generic.fp8: the per-element staging and e5m2 dequantisation of the KV
 *       tiles on the critical path, from the mixed-step saving of the routing fix on fp8
 *   attn.decode_xqa.fp8: seconds per KV token, from the per-row MTP4 verify rate at 240K */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_multifit_nlinear.h>
#include <gsl/gsl_vector.h>
#include "cost.h"
#include "fit.h"
#include "runner.h"
#include "ydoc.h"

#define MAXFIG 16
#define MAXCELL 16
#define NPAR 6                         /* par[0..5]: p0..p5 below (p3 computed, not fitted) */
#define NFIT 5                         /* the fitted ones: p0, p1, p2, p4, p5 */
#define NSOLVED 2                      /* par[NPAR], par[NPAR + 1]: the fp8 coefficients solved after the fit */

typedef struct { char law[48]; double q, seq_len, page, t; char source[256]; } figure_t;
typedef struct { char scenario[512]; char dur[48], steps[48]; double value; char source[256]; } stepfig_t;

typedef struct {
    char dir[512];
    char gpu[96];
    int sms, tp;
    double mem_gib, bw_gbs, peak_tflops, fp32_tflops;
    char model_path[512];
    model_t model;
    model_rank_t rank;
    int nfig;
    figure_t fig[MAXFIG];
    double mixed_lo, mixed_hi;
    char mixed_src[256];
    double launch, ar_alpha, ar_bps, bridge_bytes, elem_passes, pdr_host, resent_s;
    int nstep;
    stepfig_t stepfig[4];
    char f8_base[512], f8_fixed[512], f8_verify[512], f8_verify_win[48];
    double f8_saving, f8_rate;
    char f8_saving_src[320], f8_rate_src[320];
    int ncell;
    char cell[MAXCELL][512];
    char tmp_profile[64];
    int evals;
} ctx_t;

static void resolve(char *out, size_t n, const char *dir, const char *p)
{
    if (p[0] == '/') snprintf(out, n, "%s", p);
    else snprintf(out, n, "%s/%s", dir, p);
}

static int load_figures(ctx_t *c, const char *path, char *err, size_t errn)
{
    yd_err_t e;
    yd_err_init(&e, err, errn);
    yd_doc_t *d = yd_load(path, &e);
    if (!d) return -1;
    yd_node_t *root = yd_root(d), *g, *a, *kf, *sf, *bc;
    char mp[512], pb[YD_PATH_MAX];
    static const char *const top[] = { "gpu", "model", "tp", "kernel_figures", "assumptions", "step_figures",
                                       "baseline_cells", "decode_rows_cells", "released_cells", "mixed_overhead",
                                       "fp8_figures", NULL };
    static const char *const mk[] = { "no_mtp_s", "mtp4_s", "source", NULL };
    yd_node_t *mo;
    static const char *const gk[] = { "name", "sms", "mem_gib", "mem_bw_gbs", "peak_fp16_tflops", "fp32_tflops", NULL };
    static const char *const ak[] = { "launch_s", "allreduce_alpha_s", "allreduce_bytes_per_s",
                                      "bridge_bytes_per_token_head", "elementwise_passes",
                                      "decode_rows_host_s_per_layer", "resent_token_s", NULL };
    static const char *const f8k[] = { "mixed_saving", "verify_rate", NULL };
    static const char *const f8s[] = { "baseline", "fixed", "value", "source", NULL };
    static const char *const f8v[] = { "scenario", "window", "value", "source", NULL };
    yd_node_t *f8, *f8n;
    static const char *const fk[] = { "law", "q", "seq_len", "page", "t_s", "source", NULL };
    static const char *const sk[] = { "scenario", "duration", "steps", "value", "source", NULL };
    const char *slash = strrchr(path, '/');
    snprintf(c->dir, sizeof c->dir, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
    if (yd_strict_map(&e, root, "", top) < 0) goto fail;
    if (yd_get_node(&e, root, "", "gpu", YD_REQ, YD_MAP, &g) < 0 || yd_strict_map(&e, g, "gpu", gk) < 0) goto fail;
    if (yd_get_str(&e, g, "gpu", "name", YD_REQ, c->gpu, sizeof c->gpu) < 0
        || yd_get_int(&e, g, "gpu", "sms", YD_REQ, 1, 100000, &c->sms) < 0
        || yd_get_double(&e, g, "gpu", "mem_gib", YD_REQ, 0, 1e6, YD_LO_OPEN, &c->mem_gib) < 0
        || yd_get_double(&e, g, "gpu", "mem_bw_gbs", YD_REQ, 0, 1e7, YD_LO_OPEN, &c->bw_gbs) < 0
        || yd_get_double(&e, g, "gpu", "peak_fp16_tflops", YD_REQ, 0, 1e6, YD_LO_OPEN, &c->peak_tflops) < 0
        || yd_get_double(&e, g, "gpu", "fp32_tflops", YD_REQ, 0, 1e6, YD_LO_OPEN, &c->fp32_tflops) < 0
        || yd_get_str(&e, root, "", "model", YD_REQ, mp, sizeof mp) < 0
        || yd_get_int(&e, root, "", "tp", YD_REQ, 1, 64, &c->tp) < 0)
        goto fail;
    resolve(c->model_path, sizeof c->model_path, c->dir, mp);
    if (yd_get_node(&e, root, "", "assumptions", YD_REQ, YD_MAP, &a) < 0 || yd_strict_map(&e, a, "assumptions", ak) < 0
        || yd_get_double(&e, a, "assumptions", "launch_s", YD_REQ, 0, 1, 0, &c->launch) < 0
        || yd_get_double(&e, a, "assumptions", "allreduce_alpha_s", YD_REQ, 0, 1, 0, &c->ar_alpha) < 0
        || yd_get_double(&e, a, "assumptions", "allreduce_bytes_per_s", YD_REQ, 0, 1e15, YD_LO_OPEN, &c->ar_bps) < 0
        || yd_get_double(&e, a, "assumptions", "bridge_bytes_per_token_head", YD_REQ, 0, 1e6, 0, &c->bridge_bytes) < 0
        || yd_get_double(&e, a, "assumptions", "elementwise_passes", YD_REQ, 0, 1e3, 0, &c->elem_passes) < 0
        || yd_get_double(&e, a, "assumptions", "decode_rows_host_s_per_layer", YD_REQ, 0, 1, 0, &c->pdr_host) < 0
        || yd_get_double(&e, a, "assumptions", "resent_token_s", YD_REQ, 0, 1, 0, &c->resent_s) < 0)
        goto fail;
    if (yd_get_node(&e, root, "", "fp8_figures", YD_REQ, YD_MAP, &f8) < 0 || yd_strict_map(&e, f8, "fp8_figures", f8k) < 0
        || yd_get_node(&e, f8, "fp8_figures", "mixed_saving", YD_REQ, YD_MAP, &f8n) < 0
        || yd_strict_map(&e, f8n, "fp8_figures.mixed_saving", f8s) < 0
        || yd_get_str(&e, f8n, "fp8_figures.mixed_saving", "baseline", YD_REQ, mp, sizeof mp) < 0)
        goto fail;
    resolve(c->f8_base, sizeof c->f8_base, c->dir, mp);
    if (yd_get_str(&e, f8n, "fp8_figures.mixed_saving", "fixed", YD_REQ, mp, sizeof mp) < 0) goto fail;
    resolve(c->f8_fixed, sizeof c->f8_fixed, c->dir, mp);
    if (yd_get_double(&e, f8n, "fp8_figures.mixed_saving", "value", YD_REQ, 0, 1e3, YD_LO_OPEN, &c->f8_saving) < 0
        || yd_get_str(&e, f8n, "fp8_figures.mixed_saving", "source", YD_REQ, c->f8_saving_src, sizeof c->f8_saving_src) < 0
        || yd_get_node(&e, f8, "fp8_figures", "verify_rate", YD_REQ, YD_MAP, &f8n) < 0
        || yd_strict_map(&e, f8n, "fp8_figures.verify_rate", f8v) < 0
        || yd_get_str(&e, f8n, "fp8_figures.verify_rate", "scenario", YD_REQ, mp, sizeof mp) < 0)
        goto fail;
    resolve(c->f8_verify, sizeof c->f8_verify, c->dir, mp);
    if (yd_get_str(&e, f8n, "fp8_figures.verify_rate", "window", YD_REQ, c->f8_verify_win, sizeof c->f8_verify_win) < 0
        || yd_get_double(&e, f8n, "fp8_figures.verify_rate", "value", YD_REQ, 0, 1e6, YD_LO_OPEN, &c->f8_rate) < 0
        || yd_get_str(&e, f8n, "fp8_figures.verify_rate", "source", YD_REQ, c->f8_rate_src, sizeof c->f8_rate_src) < 0)
        goto fail;
    if (yd_get_node(&e, root, "", "mixed_overhead", YD_REQ, YD_MAP, &mo) < 0
        || yd_strict_map(&e, mo, "mixed_overhead", mk) < 0
        || yd_get_double(&e, mo, "mixed_overhead", "no_mtp_s", YD_REQ, 0, 100, 0, &c->mixed_lo) < 0
        || yd_get_double(&e, mo, "mixed_overhead", "mtp4_s", YD_REQ, c->mixed_lo, 100, 0, &c->mixed_hi) < 0
        || yd_get_str(&e, mo, "mixed_overhead", "source", YD_REQ, c->mixed_src, sizeof c->mixed_src) < 0)
        goto fail;
    if (yd_get_node(&e, root, "", "kernel_figures", YD_REQ, YD_SEQ, &kf) < 0) goto fail;
    for (int i = 0; i < yd_len(kf) && i < MAXFIG; i++) {
        yd_node_t *f = kf->vals[i];
        figure_t *x = &c->fig[c->nfig++];
        yd_path_idx(pb, "kernel_figures", i);
        if (yd_strict_map(&e, f, pb, fk) < 0
            || yd_get_str(&e, f, pb, "law", YD_REQ, x->law, sizeof x->law) < 0
            || yd_get_double(&e, f, pb, "q", YD_REQ, 1, 1e7, 0, &x->q) < 0
            || yd_get_double(&e, f, pb, "seq_len", YD_REQ, 1, 1e9, 0, &x->seq_len) < 0
            || yd_get_double(&e, f, pb, "page", YD_REQ, 1, 1e6, 0, &x->page) < 0
            || yd_get_double(&e, f, pb, "t_s", YD_REQ, 0, 1e3, YD_LO_OPEN, &x->t) < 0
            || yd_get_str(&e, f, pb, "source", YD_REQ, x->source, sizeof x->source) < 0)
            goto fail;
    }
    if (yd_get_node(&e, root, "", "step_figures", YD_REQ, YD_SEQ, &sf) < 0) goto fail;
    for (int i = 0; i < yd_len(sf) && i < 4; i++) {
        yd_node_t *f = sf->vals[i];
        stepfig_t *x = &c->stepfig[c->nstep++];
        yd_path_idx(pb, "step_figures", i);
        if (yd_strict_map(&e, f, pb, sk) < 0
            || yd_get_str(&e, f, pb, "scenario", YD_REQ, mp, sizeof mp) < 0
            || yd_get_str(&e, f, pb, "duration", YD_REQ, x->dur, sizeof x->dur) < 0
            || yd_get_str(&e, f, pb, "steps", YD_REQ, x->steps, sizeof x->steps) < 0
            || yd_get_double(&e, f, pb, "value", YD_REQ, 0, 1e3, YD_LO_OPEN, &x->value) < 0
            || yd_get_str(&e, f, pb, "source", YD_REQ, x->source, sizeof x->source) < 0)
            goto fail;
        resolve(x->scenario, sizeof x->scenario, c->dir, mp);
    }
    static const char *const cells[] = { "baseline_cells", "decode_rows_cells", "released_cells" };
    for (int k = 0; k < 3; k++) {
        if (yd_get_node(&e, root, "", cells[k], YD_REQ, YD_SEQ, &bc) < 0) goto fail;
        for (int i = 0; i < yd_len(bc) && c->ncell < MAXCELL; i++) {
            yd_path_idx(pb, cells[k], i);
            char full[512];
            if (yd_as_str(&e, bc->vals[i], pb, mp, sizeof mp) < 0) goto fail;
            resolve(full, sizeof full, c->dir, mp);
            memcpy(c->cell[c->ncell++], full, sizeof full);
        }
    }
    yd_free(d);
    return 0;
fail:
    yd_free(d);
    return -1;
}

/* ---- assembling a profile ----------------------------------------------------- */

static void put(profile_t *p, const char *name, const double *coef, const char *prov, const figure_t *pts, int npts)
{
    prof_law_t l;
    prof_law_init(&l, law_find(name));
    for (int i = 0; i < l.ncoef; i++) l.coef[i] = coef[i];
    snprintf(l.provenance, sizeof l.provenance, "%s", prov);
    double *rows = NULL;
    if (npts > 0) {                    /* attention figures: a point each, of the profile's own shape */
        l.ncols = ATTN_COL_Q_HEADS + 1;    /* rows, q, seq_len, page, t_s (law.h: the heads are optional) */
        snprintf(l.cols[l.ncols - 1], sizeof l.cols[l.ncols - 1], "t_s");
        rows = malloc((size_t)npts * l.ncols * sizeof *rows);
        for (int i = 0; i < npts; i++) {
            double *r = rows + (size_t)l.ncols * i;
            r[ATTN_COL_ROWS] = 1;
            r[ATTN_COL_Q] = pts[i].q;
            r[ATTN_COL_SEQ_LEN] = pts[i].seq_len;
            r[ATTN_COL_PAGE] = pts[i].page;
            r[l.ncols - 1] = pts[i].t;
        }
        l.npts = npts;
        l.pts = rows;
    } else {
        l.ncols = 0;                   /* figures and assumptions, no points: no columns */
    }
    prof_put(p, &l);
    free(rows);
}

/* Solve the listed coefficients of `law` exactly from its figures; others fixed. */
static int solve_from_figures(const ctx_t *c, const char *law, double *coef, const int *freeidx, int nfree,
                              figure_t *used, int *nused)
{
    double X[MAXFIG * 4], y[MAXFIG], sol[4];
    int n = 0;
    for (int i = 0; i < c->nfig; i++) {
        if (strcmp(c->fig[i].law, law)) continue;
        double row[4] = { [ATTN_COL_ROWS] = 1, [ATTN_COL_Q] = c->fig[i].q, [ATTN_COL_SEQ_LEN] = c->fig[i].seq_len,
                          [ATTN_COL_PAGE] = c->fig[i].page }, f[PROF_MAX_COEF];
        cost_hw_t hw = { .sms = c->sms, .flops = c->peak_tflops * 1e12, .bw = c->bw_gbs * 1e9 };
        if (cost_point_features(law, row, &c->model, &c->rank, &hw, f) < 0) return -1;
        double fixed = 0;
        for (int k = 0; k < law_ncoef(law); k++) {
            int isfree = 0;
            for (int j = 0; j < nfree; j++) isfree |= freeidx[j] == k;
            if (!isfree) fixed += coef[k] * f[k];
        }
        for (int j = 0; j < nfree; j++) X[n * nfree + j] = f[freeidx[j]];
        y[n] = c->fig[i].t - fixed;
        used[(*nused)++] = c->fig[i];
        n++;
    }
    if (n < nfree) return -1;
    if (fit_linear_nonneg(X, y, NULL, n, nfree, sol, NULL) < 0) return -1;
    for (int j = 0; j < nfree; j++) coef[freeidx[j]] = sol[j];
    return 0;
}

static const figure_t *find_fig(const ctx_t *c, const char *law)
{
    for (int i = 0; i < c->nfig; i++)
        if (!strcmp(c->fig[i].law, law)) return &c->fig[i];
    return NULL;
}

static int build_profile(const ctx_t *c, const double *par, profile_t *p, char *msg, size_t msgn)
{
    memset(p, 0, sizeof *p);
    snprintf(p->gpu, sizeof p->gpu, "%s", c->gpu);
    p->sms = c->sms;
    p->mem_gib = c->mem_gib;
    p->mem_bw_gbs = c->bw_gbs;
    p->peak_fp16_tflops = c->peak_tflops;
    p->tp = c->tp;
    snprintf(p->model, sizeof p->model, "%s", c->model.name);
    snprintf(p->toolkit, sizeof p->toolkit, "n/a (no V100 here)");
    snprintf(p->driver, sizeof p->driver, "n/a");
    snprintf(p->method, sizeof p->method,
             "derived by bin/v100fit from SPEC §1 published figures + datasheet + stated assumptions "
             "(calib/v100_figures.yaml); the reference fork's kernel library; 5 free parameters fitted on the "
             "baseline cells, the two released cells and two decode-step figures; 2 fp8 coefficients solved "
             "from two fp8 step-level figures");
    double bw = c->bw_gbs * 1e9, L = c->launch;
    figure_t used[MAXFIG];
    int nu;
    /* coefficient vectors: the terms each law's family has beyond these stay 0 (the V100
     * has figures for the forms below, not points for the rest of the catalogue's features: sim/law.h) */
    double co[PROF_MAX_COEF];
    char prov[320];

    /* generic BM32/BN64: in the fork's dispatch only rows of one M-tile take it (fp16 q = 1,
     * fp8 q < 32): one CTA per q head, so its critical-path coefficient, from the q = 1 figure */
    const int f1[] = { PREFILL_TILES_TOTAL }, f2[] = { PREFILL_TILES_MAX };
    nu = 0;
    memcpy(co, (double[PROF_MAX_COEF]){ [PREFILL_ONE] = L }, sizeof co);
    if (solve_from_figures(c, "attn.prefill_generic.fp16", co, f2, 1, used, &nu) < 0) {
        snprintf(msg, msgn, "cannot solve attn.prefill_generic.fp16 from its figures");
        return -1;
    }
    double gen_c2 = co[PREFILL_TILES_MAX];
    put(p, "attn.prefill_generic.fp16", co,
        "c2 (per critical-path tile) solved from SPEC §1: 58 ms (q=1, 240K; one CTA per q head); c0 = assumed launch",
        used, nu);
    /* fp8: the same walk, each KV tile staged element by element (a block-table lookup, a byte
     * load and the e5m2 dequantisation per element: load_kv_cache_half) instead of 16-byte
     * vector loads; the extra per critical-path tile solved from the fp8 mixed-step saving */
    double g8[PROF_MAX_COEF] = { [PREFILL_ONE] = L, [PREFILL_TILES_MAX] = gen_c2 + par[NPAR] };
    snprintf(prov, sizeof prov, "c2 = fp16 generic's + %.4g s per critical-path tile of element-wise staging and e5m2 "
                                "dequantisation, SOLVED from the fp8 mixed-step saving of the routing fix (%.2f s, "
                                "fp8_figures.mixed_saving)", par[NPAR], c->f8_saving);
    put(p, "attn.prefill_generic.fp8", g8, prov, NULL, 0);

    nu = 0;
    memcpy(co, (double[PROF_MAX_COEF]){ [PREFILL_ONE] = L }, sizeof co);
    if (solve_from_figures(c, "attn.prefill_bm32.fp16", co, f1, 1, used, &nu) < 0) {
        snprintf(msg, msgn, "cannot solve attn.prefill_bm32.fp16");
        return -1;
    }
    double bm32_c1 = co[PREFILL_TILES_TOTAL];
    put(p, "attn.prefill_bm32.fp16", co, "c1 solved from SPEC §1: 43.99 ms (q=784, 104K, page 784); c0 = assumed launch",
        used, nu);

    /* low-smem BM16/BN128, unpipelined (pages other than 784): critical path p2, per-tile
     * throughput solved from the 104.4 ms chunk */
    nu = 0;
    memcpy(co, (double[PROF_MAX_COEF]){ [PREFILL_ONE] = L, [PREFILL_TILES_MAX] = par[2] }, sizeof co);
    if (solve_from_figures(c, "attn.prefill_lowsmem.fp16", co, f1, 1, used, &nu) < 0) {
        snprintf(msg, msgn, "cannot solve attn.prefill_lowsmem.fp16");
        return -1;
    }
    put(p, "attn.prefill_lowsmem.fp16", co,
        "unpipelined (the fork's kernel off page 784); c2 FITTED (p2) on the MTP4 baseline cells; c1 solved from SPEC "
        "§1's 104.4 ms (q=784, 104K, page 816, the slow path); c0 = assumed launch", used, nu);

    /* split-D: the BM32 phase kernel's cost per unit of tile area (BM x BN, law.c) */
    const law_form_t *fs = law_form(LAW_PREFILL_SPLITD_FP16), *fb = law_form(LAW_PREFILL_BM32_FP16);
    double area = (double)(fs->tile_m * fs->tile_n) / (fb->tile_m * fb->tile_n);
    double sd[PROF_MAX_COEF] = { [PREFILL_ONE] = L, [PREFILL_TILES_TOTAL] = bm32_c1 * area };
    put(p, "attn.prefill_splitd.fp16", sd, "assumed: the BM32 phase kernel's c1 per unit of tile area (BM64 x BN32 "
                                          "against BM32 x BN128; both pipelined tensor-core kernels); c0 = assumed "
                                          "launch", NULL, 0);

    /* XQA: passes through the published 1.8 ms; the split fixed/per-token is p3 */
    const figure_t *xf = find_fig(c, "attn.decode_xqa.fp16");
    if (!xf) {
        snprintf(msg, msgn, "no attn.decode_xqa.fp16 figure");
        return -1;
    }
    double xr[4] = { [ATTN_COL_ROWS] = 1, [ATTN_COL_Q] = xf->q, [ATTN_COL_SEQ_LEN] = xf->seq_len,
                     [ATTN_COL_PAGE] = xf->page }, xfeat[PROF_MAX_COEF];
    cost_hw_t hw = cost_hw_of(p);
    cost_point_features("attn.decode_xqa.fp16", xr, &c->model, &c->rank, &hw, xfeat);
    double xq[PROF_MAX_COEF] = { [DECODE_ONE] = (1 - par[3]) * xf->t,
                                 [DECODE_KV_TOKENS] = par[3] * xf->t / xfeat[DECODE_KV_TOKENS] };
    put(p, "attn.decode_xqa.fp16", xq, "through SPEC §1's 1.8 ms (q=1, 240K); per-token share (p3) its KV bytes at the "
                                       "datasheet bandwidth, the rest fixed per call", (figure_t[]){ *xf }, 1);
    /* fp8 XQA: pair loads and the e5m2 bit expansion per element (load_fp8_e5m2_half2_unscaled);
     * its per-token cost solved from the per-row MTP4 verify rate; the fixed part fp16's */
    double xq8[PROF_MAX_COEF] = { [DECODE_ONE] = xq[DECODE_ONE], [DECODE_KV_TOKENS] = par[NPAR + 1] };
    snprintf(prov, sizeof prov, "c1 (per KV token) SOLVED from the per-row fp8_e5m2 MTP4 verify at 240K (%.0f tok/s, "
                                "fp8_figures.verify_rate): %.2f x fp16's; c0 = fp16 XQA's fixed part",
             c->f8_rate, par[NPAR + 1] / xq[DECODE_KV_TOKENS]);
    put(p, "attn.decode_xqa.fp8", xq8, prov, NULL, 0);
    put(p, "attn.decode_scalar.fp16", xq, "assumed: XQA's coefficients, but every q head re-reads its KV (features x group)",
        NULL, 0);
    put(p, "attn.decode_scalar.fp8", xq8, "assumed: fp8 XQA's coefficients, per q head", NULL, 0);
    double br[PROF_MAX_COEF] = { [BRIDGE_ONE] = L, [BRIDGE_EXPANDED] = c->bridge_bytes / bw };
    put(p, "attn.fp8_bridge", br, "assumed: bridge_bytes_per_token_head at datasheet bandwidth; c0 = launch", NULL, 0);

    double gm[PROF_MAX_COEF] = { [GEMM_ONE] = L, [GEMM_FLOPS] = par[0], [GEMM_BYTES] = 1.0 / bw };
    snprintf(prov, sizeof prov, "c1 FITTED (p0, = %.1f effective TFLOP/s) on the no-MTP baseline cells; "
                                "c2 = 1/datasheet bandwidth; c0 = launch", 1e-12 / par[0]);
    put(p, "gemm", gm, prov, NULL, 0);
    const model_rank_t *r = &c->rank;
    const model_t *m = &c->model;
    double gd[PROF_MAX_COEF] = {
        [GDN_ONE] = 3 * L,
        [GDN_TOKENS] = 8.0 * r->gdn_v_heads * m->gdn_head_dim_k * m->gdn_head_dim_v / (c->fp32_tflops * 1e12),
        [GDN_SEQS] = 2.0 * r->gdn_v_heads * m->gdn_head_dim_k * m->gdn_head_dim_v * m->gdn_state_bytes / bw };
    put(p, "gdn", gd, "assumed: gated delta rule FLOPs at datasheet fp32 rate + state read/write per sequence at "
                      "datasheet bandwidth; 3 launches", NULL, 0);
    double el[PROF_MAX_COEF] = { [ELEM_ONE] = 6 * L, [ELEM_TOKENS] = c->elem_passes * m->hidden * 2.0 / bw };
    put(p, "elementwise", el, "assumed: elementwise_passes over tokens x hidden fp16 at datasheet bandwidth; 6 launches",
        NULL, 0);
    double ar[PROF_MAX_COEF] = { [ALLREDUCE_ONE] = c->ar_alpha, [ALLREDUCE_BYTES] = 1.0 / c->ar_bps };
    put(p, "allreduce", ar, "assumed: NCCL ring over PCIe 3.0 x16, 2 GPUs (alpha, 1/bandwidth)", NULL, 0);
    double per_pass = (c->mixed_hi - c->mixed_lo) / 4.0;
    double st[PROF_MAX_COEF] = { [STEP_ONE] = par[1], [STEP_EAGER] = c->mixed_lo,
                                 [STEP_EAGER_PASSES] = per_pass, [STEP_RESENT_TOKENS] = c->resent_s,
                                 [STEP_HOST_EXPANSIONS] = c->pdr_host, [STEP_SPEC_RESIDENT] = par[5] };
    put(p, "step", st, "c0 FITTED (p1) on the baseline cells and the decode-step figures; c2 (per eager "
                       "step) and c3 (per eager MTP draft pass) from SPEC §1's 0.15-0.23 s unattributed "
                       "per mixed step (low end no-MTP, high end MTP4); c4 (per re-sent token id) and c5 (per "
                       "decode-rows host expansion) assumed; c6 (per resident request beyond the first of a "
                       "speculative decode-only step) FITTED (p5), pinned by the two-request decode-step figure",
        NULL, 0);
    return 0;
}

/* ---- objective ---------------------------------------------------------------------- */

static double window(const run_result_t *r, const char *name)
{
    for (int i = 0; i < r->nwin; i++)
        if (!strcmp(r->win_name[i], name)) return r->win_val[i];
    return NAN;
}

/* Write the profile of par to the temporary file the runs read.  0 / -1. */
static int write_profile(ctx_t *c, const double *par)
{
    profile_t p;
    char msg[256];
    if (build_profile(c, par, &p, msg, sizeof msg) < 0) {
        fprintf(stderr, "v100fit: %s\n", msg);
        return -1;
    }
    if (prof_save(c->tmp_profile, &p) < 0) {
        perror(c->tmp_profile);
        for (int i = 0; i < p.nlaws; i++)
            for (int k = 0; k < p.laws[i].ncoef; k++)
                if (!(p.laws[i].coef[k] >= 0 && p.laws[i].coef[k] <= 100)) fprintf(stderr, "  %s c%d = %g\n", p.laws[i].name, k, p.laws[i].coef[k]);
        prof_free(&p);
        return -1;
    }
    prof_free(&p);
    return 0;
}

/* Run one scenario on the profile write_profile wrote (an MTP scenario with the fitted
 * acceptance).  0 / -1. */
static int run_cell(const ctx_t *c, const double *par, const char *path, run_result_t *rr)
{
    char set_prof[128], set_acc[96];
    snprintf(set_prof, sizeof set_prof, "profile=%s", c->tmp_profile);
    snprintf(set_acc, sizeof set_acc, "mtp_acceptance.mean_accepted=%.17g", par[4]);
    const char *sets[2] = { set_prof, set_acc };
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    runner_run(path, sets, strstr(base, "mtp") && !strstr(base, "nomtp") ? 2 : 1, NULL, rr);
    if (rr->rc) {
        fprintf(stderr, "v100fit: %s\n", rr->err);
        return -1;
    }
    return 0;
}

static int simulate(ctx_t *c, const double *par, double *res, int verbose)
{
    char set_prof[128], set_acc[96];
    if (write_profile(c, par) < 0) return -1;
    snprintf(set_prof, sizeof set_prof, "profile=%s", c->tmp_profile);
    snprintf(set_acc, sizeof set_acc, "mtp_acceptance.mean_accepted=%.17g", par[4]);
    run_result_t *rr = malloc(sizeof *rr);
    int k = 0;
    for (int i = 0; i < c->ncell; i++) {
        const char *sets[2] = { set_prof, set_acc };
        int nsets = strstr(c->cell[i], "mtp") && !strstr(c->cell[i], "nomtp") ? 2 : 1;
        runner_run(c->cell[i], sets, nsets, NULL, rr);
        if (rr->rc) {
            fprintf(stderr, "v100fit: %s\n", rr->err);
            free(rr);
            return -1;
        }
        for (int w = 0; w < rr->nwin; w++) {
            if (!rr->win_has_ref[w]) continue;
            res[k++] = log(rr->win_val[w] / rr->win_ref[w]);
            if (verbose)
                printf("  %-40s %-12s simulated %9.4f  published %9.4f  %+6.1f%%\n", rr->name, rr->win_name[w],
                       rr->win_val[w], rr->win_ref[w], 100 * (rr->win_val[w] / rr->win_ref[w] - 1));
        }
    }
    for (int i = 0; i < c->nstep; i++) {
        const char *sets[2] = { set_prof, set_acc };
        runner_run(c->stepfig[i].scenario, sets, 2, NULL, rr);
        if (rr->rc) {
            fprintf(stderr, "v100fit: %s\n", rr->err);
            free(rr);
            return -1;
        }
        double v = window(rr, c->stepfig[i].dur) / window(rr, c->stepfig[i].steps);
        res[k++] = log(v / c->stepfig[i].value);
        if (verbose)
            printf("  %-40s %-12s simulated %9.4f  published %9.4f  %+6.1f%%\n", rr->name, "step_s", v,
                   c->stepfig[i].value, 100 * (v / c->stepfig[i].value - 1));
    }
    free(rr);
    c->evals++;
    return k;
}

/* The fp8 figures' values as simulated with par: the fp8 mixed-step saving of the routing
 * fix (which = 0, seconds) or the per-row fp8 MTP4 verify rate (which = 1, tok/s). */
static int fp8_value(ctx_t *c, const double *par, int which, double *v)
{
    run_result_t *a = malloc(sizeof *a), *b = malloc(sizeof *b);
    int rc = write_profile(c, par);
    if (rc == 0 && which == 0) {
        rc = run_cell(c, par, c->f8_base, a) < 0 || run_cell(c, par, c->f8_fixed, b) < 0 ? -1 : 0;
        *v = window(a, "b_prefill_s") / window(a, "mixed_steps") - window(b, "b_prefill_s") / window(b, "mixed_steps");
    } else if (rc == 0) {
        rc = run_cell(c, par, c->f8_verify, a);
        *v = window(a, c->f8_verify_win);
    }
    free(a);
    free(b);
    c->evals++;
    return rc < 0 || !isfinite(*v) ? -1 : 0;
}

/* Solve par[NPAR + which] so that fp8_value hits target: the step times are affine in the
 * coefficient (the saving directly, the rate's inverse), so a secant on the affine quantity
 * converges in a few simulations.  0 / -1. */
static int solve_fp8(ctx_t *c, double *par, int which, double target)
{
    double *x = &par[NPAR + which], x0 = *x, x1 = *x * 2, g0, g1, v;
    /* the affine quantity: the saving, or the step time 1/rate */
    if (fp8_value(c, par, which, &v) < 0) return -1;
    g0 = which ? 1 / v - 1 / target : v - target;
    for (int it = 0; it < 12; it++) {
        *x = x1;
        if (fp8_value(c, par, which, &v) < 0) return -1;
        g1 = which ? 1 / v - 1 / target : v - target;
        if (fabs(which ? v / target - 1 : g1 / target) < 1e-6) return 0;
        if (g1 == g0) break;
        double xn = x1 - g1 * (x1 - x0) / (g1 - g0);
        x0 = x1;
        g0 = g1;
        x1 = xn;
        if (!(x1 > 0)) {
            fprintf(stderr, "v100fit: fp8 figure %d cannot be met with a positive coefficient\n", which);
            return -1;
        }
    }
    fprintf(stderr, "v100fit: fp8 figure %d: the secant did not converge\n", which);
    return -1;
}

/* x -> parameters: exp for positive ones, logistic for the bounded ones. */
static double solved_now[NSOLVED] = { 2.0e-6, 2.0e-9 };   /* the fp8 coefficients during the fit */

static double xqa_share;    /* p3, not fitted: the XQA figure's KV bytes at the datasheet bandwidth */

static void unpack(const gsl_vector *x, double *par)
{
    par[NPAR] = solved_now[0];
    par[NPAR + 1] = solved_now[1];
    par[0] = exp(gsl_vector_get(x, 0));
    par[1] = exp(gsl_vector_get(x, 1));
    par[2] = exp(gsl_vector_get(x, 2));
    par[3] = xqa_share;
    par[4] = 4.0 / (1.0 + exp(-gsl_vector_get(x, 3)));
    par[5] = exp(gsl_vector_get(x, 4));
}

static int resid_f(const gsl_vector *x, void *data, gsl_vector *f)
{
    ctx_t *c = data;
    double par[NPAR + NSOLVED], res[64];
    unpack(x, par);
    int n = simulate(c, par, res, 0);
    if (n < 0 || (size_t)n != f->size) return GSL_EFAILED;
    for (int i = 0; i < n; i++) gsl_vector_set(f, (size_t)i, isfinite(res[i]) ? res[i] : 10.0);
    return GSL_SUCCESS;
}

int main(int argc, char **argv)
{
    const char *fig = "calib/v100_figures.yaml", *out = "calib/profiles/v100-pcie-32gb-tp2.yaml";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-o") && i + 1 < argc) out = argv[++i];
        else if (argv[i][0] == '-') {
            fprintf(stderr, "usage: v100fit [FIGURES.yaml] [-o PROFILE.yaml]\n");
            return 2;
        } else fig = argv[i];
    }
    gsl_set_error_handler_off();
    ctx_t *c = calloc(1, sizeof *c);
    char err[1024];
    if (load_figures(c, fig, err, sizeof err) < 0) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    if (scn_load_model(c->model_path, &c->model, err) < 0 || model_rank(&c->model, c->tp, &c->rank) < 0) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    snprintf(c->tmp_profile, sizeof c->tmp_profile, "/tmp/v100fit-%d.yaml", (int)getpid());

    /* p3: the published 1.8 ms XQA call's per-token share is its K and V bytes (2 B per element,
     * the rank's kv heads x head_dim) read at the datasheet bandwidth */
    const figure_t *xf = find_fig(c, "attn.decode_xqa.fp16");
    if (!xf) {
        fprintf(stderr, "v100fit: no attn.decode_xqa.fp16 figure\n");
        return 2;
    }
    xqa_share = xf->seq_len * 2.0 * c->rank.kv_heads * c->model.head_dim * 2.0 / (c->bw_gbs * 1e9) / xf->t;
    double par0[NPAR + NSOLVED] = { 1.0 / 40e12, 0.01, 1.0e-5, xqa_share, 3.4, 0.05, 2.0e-6, 2.0e-9 };
    double res[64];
    int n = simulate(c, par0, res, 0);
    if (n < 0) return 1;
    gsl_vector *x = gsl_vector_alloc(NFIT);
    gsl_vector_set(x, 0, log(par0[0]));
    gsl_vector_set(x, 1, log(par0[1]));
    gsl_vector_set(x, 2, log(par0[2]));
    gsl_vector_set(x, 3, log(par0[4] / (4 - par0[4])));
    gsl_vector_set(x, 4, log(par0[5]));
    gsl_multifit_nlinear_fdf fdf = { .f = resid_f, .df = NULL, .fvv = NULL, .n = (size_t)n, .p = NFIT, .params = c };
    gsl_multifit_nlinear_parameters fp = gsl_multifit_nlinear_default_parameters();
    fp.h_df = 3e-2;    /* token counts are integers: difference over visible steps */
    gsl_multifit_nlinear_workspace *w = gsl_multifit_nlinear_alloc(gsl_multifit_nlinear_trust, &fp, (size_t)n, NFIT);
    int info, st = gsl_multifit_nlinear_init(x, &fdf, w);
    if (st == GSL_SUCCESS) st = gsl_multifit_nlinear_driver(100, 1e-6, 1e-6, 1e-8, NULL, NULL, &info, w);
    if (st != GSL_SUCCESS && st != GSL_EMAXITER) {
        fprintf(stderr, "v100fit: GSL fit failed: %s\n", gsl_strerror(st));
        return 1;
    }
    double par[NPAR + NSOLVED];
    unpack(w->x, par);
    /* the fp8 coefficients: the verify rate first (the saving's fixed route prices its
     * decode row on the fp8 XQA kernel) */
    if (solve_fp8(c, par, 1, c->f8_rate) < 0 || solve_fp8(c, par, 0, c->f8_saving) < 0) return 1;
    printf("v100fit: %d simulations, GSL %s\n", c->evals, gsl_strerror(st));
    printf("  p0 gemm                 %.4g s/FLOP (%.1f effective TFLOP/s)\n", par[0], 1e-12 / par[0]);
    printf("  p1 step overhead        %.4g s\n", par[1]);
    printf("  p2 lowsmem crit. tile   %.4g s\n", par[2]);
    printf("  p3 xqa per-token share  %.4f of 1.8 ms (datasheet bandwidth, not fitted)\n", par[3]);
    printf("  p4 MTP mean accepted    %.4f drafts/step\n", par[4]);
    printf("  p5 spec. resident req.  %.4g s\n", par[5]);
    printf("solved from the fp8 figures:\n");
    printf("  attn.prefill_generic.fp8 staging + dequant  %.4g s per critical-path tile (%.3g ns per KV element)\n",
           par[NPAR], 1e9 * par[NPAR] / (2.0 * law_form(LAW_PREFILL_GENERIC_FP16)->tile_n * c->model.head_dim));
    printf("  attn.decode_xqa.fp8 per KV token           %.4g s\n", par[NPAR + 1]);
    printf("fit targets:\n");
    simulate(c, par, res, 1);
    profile_t p;
    char msg[256];
    build_profile(c, par, &p, msg, sizeof msg);
    snprintf(p.date, sizeof p.date, "derived");
    snprintf(p.method + strlen(p.method), sizeof p.method - strlen(p.method), "; MTP mean accepted %.3f", par[4]);
    if (prof_save(out, &p) < 0) {
        perror(out);
        return 1;
    }
    printf("wrote %s\n", out);
    prof_free(&p);
    unlink(c->tmp_profile);
    gsl_multifit_nlinear_free(w);
    gsl_vector_free(x);
    free(c);
    return 0;
}
