/* profile.c: read and write hardware profiles.  See profile.h; the law forms a profile's
 * laws are checked against are the catalogue's (law.h).
 *
 * File format (YAML; prof_save writes exactly this, prof_load accepts nothing else):
 *
 *   profile:                          # metadata; every key optional except gpu
 *     gpu: "NVIDIA H200"              # string
 *     sms: 132                        # integer 0 .. 4096
 *     mem_gib: 139.8                  # number 0 .. 1e9 (per GPU), as every number below
 *     mem_bw_gbs: 4240                # of metadata
 *     peak_fp16_tflops: 700
 *     tp: 1                           # integer 1 .. 1024 (default 1)
 *     model: "qwen3.8-27b"            # strings: model toolkit driver date revision method
 *     toolkit: "13.0"
 *     driver: "580.159"
 *     date: "2026-11-29"
 *     revision: "abc1234"
 *     method: "measured by bin/calib ..."
 *     calib_seconds: 212.5
 *     sm_clock_mhz: 1980
 *     sustained: {clock_cold_mhz: 1979, clock_hot_mhz: 1600, tau_up_s: 0.06, tau_down_s: 0.1}
 *                                     # optional (all four keys); clocks > 0 (hot < cold),
 *                                     # time constants > 0 s (sim/heat.h); and optionally
 *                                     # curve: [[duty, mhz, watts], ...], 1 .. 32 points,
 *                                     # the clock settled with the heater that share of
 *                                     # the time (0 < duty <= 1, rising; mhz > 0; watts
 *                                     # >= 0, 0 = not read): calib's clock against load,
 *                                     # recorded, not priced by (sim/heat.h); and
 *                                     # optionally tau_up_runs_s (> 0 s: the fall read
 *                                     # from a compute-bound GEMM's own times; priced in
 *                                     # place of tau_up_s), tau_up_runs_range_s and
 *                                     # tau_down_range_s ([fastest, slowest] s of calib's
 *                                     # traces, 0 < fastest <= the stored value <= slowest;
 *                                     # the first needs tau_up_runs_s), stamp_cold_mhz and
 *                                     # stamp_hot_mhz (both or neither, > 0, hot < cold:
 *                                     # the light load's and the heater's clocks by the
 *                                     # SMs' cycle counters; the units of rescore
 *                                     # --recorded-clock's step stamps) and gemm_compute_hot: {m: 2048, n: 6144,
 *                                     # k: 4096, hot: 1.2} (m, n, k 1 .. 2^31, hot 0.5 ..
 *                                     # 5) and interleave: [[gemm_share, layer_ms, mhz,
 *                                     # watts, gemm_factor, decode_factor, duty], ...],
 *                                     # 1 .. 32 rows (share 0 < .. <= 1, layer_ms 0 < ..
 *                                     # <= 1000, mhz > 0, watts >= 0, factors 0.5 .. 5,
 *                                     # duty 0 .. 2, 0 = not measured; rows of six, as
 *                                     # written before calib measured the duty, read with
 *                                     # duty 0; all rows alike): calib's compute-bound GEMM
 *                                     # probe and layer-interleaved load (calib/sustain.h),
 *                                     # recorded, not priced by; and optionally
 *                                     # elementwise_hot: {tokens: 2048, hot: 1.3} (tokens
 *                                     # 1 .. 2^31, hot 0.5 .. 5): calib's elementwise proxy
 *                                     # L2-cold at a serving budget timed after the heater
 *                                     # over after the light load, recorded, not priced by;
 *                                     # and optionally gemm_hot_probes: [[m, n, k, t_s, hot,
 *                                     # hot], ...], 1 .. 16 rows (m, n, k 1 .. 2^31, t_s
 *                                     # > 0 .. 10 s, rising; each hot 0.5 .. 5): calib's
 *                                     # GEMMs across shapes, each timed after the heater
 *                                     # over after the light load in two passes, recorded,
 *                                     # not priced by
 *     fp8_expand: {cta_tokens: 98, ctas_per_sm: 8}
 *                                     # optional (both keys): the fp8 bridge's expansion
 *                                     # kernel, tokens per CTA 1 .. 2^20, CTAs per SM 1 .. 64;
 *                                     # absent = a CTA per 784-token page, 8 per SM
 *     prefill_split: {max_parts: 4, min_tiles: 8, cost_tiles: 4, ctas_per_sm: 1}
 *                                     # optional (all four keys): the fast prefill kernel
 *                                     # splits its CTAs' walk (kernels/attn_split.h's rule
 *                                     # with these constants); parts 1 .. 64, tiles 1 ..
 *                                     # 2^20 and 0 .. 2^20, CTAs per SM 1 .. 64; absent = it
 *                                     # does not split
 *     envelope: {tp: 1, q_heads: 24, kv_heads: 4, head_dim: 256}
 *                                     # optional (all four keys, 1 .. 4096 each; tp <= 1024):
 *                                     # the per-rank attention shape and TP degree calib
 *                                     # measured; with it every law's envelope is its points'
 *                                     # ranges (prof_law_range) and an item outside is priced
 *                                     # by the law's extrapolation, with a warning; absent =
 *                                     # no envelope recorded (nothing is checked)
 *   laws:                             # list (may be empty, at most 1024); names unique
 *     - name: attn.prefill_bm32.fp16  # required, < 48 chars
 *       coef: [1.0e-5, 2.0e-8, 0, 0]  # required, 1..10 numbers 0 .. 100; a law of the
 *                                     # catalogue (sim/law.h) no more than its form has
 *                                     # (prof_load_any: any number), not all 0 (but step's)
 *       provenance: "measured by calib on NVIDIA H200, 2026-11-29"   # optional
 *       fit: {median_rel: 0.012, max_rel: 0.041}   # optional (both keys), 0 .. 100, median
 *                                                  # <= max; absent = -1
 *       columns: [rows, q, seq_len, page, t_s]     # optional; 1..8 names < 16 chars,
 *                                                  # the last one "t_s"; a catalogue law's
 *                                                  # its form's (check_cols): an attention
 *                                                  # law's [rows, q, seq_len, page, q_heads,
 *                                                  # kv_heads, head_dim, t_s] (the per-rank
 *                                                  # shape each point ran, 1 .. 4096; part of
 *                                                  # its grid key) or its first 4 and t_s (of
 *                                                  # the profile's model)
 *       points:                                    # optional; needs columns; at most 100000;
 *         - [1, 784, 104000, 784, 0.00352]         # each row exactly len(columns) numbers,
 *                                                  # each in its column's range (col_range)
 *       sustained: {hot: 1.12, heat: 0.3}          # optional (both keys); hot 0.5 .. 5,
 *                                                  # heat 0 .. 1 (sim/heat.h)
 *       kernels:                                   # gemm only, optional, at most 200000:
 *         - [34816, 5120, 2, 385, 440, 192, 208, 1] # n, k, wb, m_lo, m_hi, tile_n, tile_m,
 *                                                  # splits: cuBLAS's kernel for m_lo..m_hi;
 *                                                  # whole numbers from 1 (wb <= 8, the rest
 *                                                  # <= PROF_MAX_DIM), m_lo <= m_hi, a shape's
 *                                                  # rows consecutive and ascending in m
 *
 * Doubles are written with %.17g, strings double-quoted and escaped, so a saved profile
 * loads back bit for bit. */
#include "profile.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "law.h"
#include "ydoc.h"

static const char *const top_keys[] = {"profile", "laws", NULL};
static const char *const meta_keys[] = {
    "gpu", "sms", "mem_gib", "mem_bw_gbs", "peak_fp16_tflops", "tp", "model", "toolkit",
    "driver", "date", "revision", "method", "calib_seconds", "sm_clock_mhz", "sustained", "fp8_expand",
    "prefill_split", "envelope", NULL};
static const char *const law_keys[] = {"name", "coef", "provenance", "fit", "columns",
                                       "points", "sustained", "kernels", NULL};
static const char *const card_sus_keys[] = {"clock_cold_mhz", "clock_hot_mhz", "tau_up_s", "tau_down_s", "curve",
                                             "tau_up_runs_s", "stamp_cold_mhz", "stamp_hot_mhz", "gemm_compute_hot",
                                             "interleave", "elementwise_hot", "tau_up_runs_range_s",
                                             "tau_down_range_s", "gemm_hot_probes", NULL};
static const char *const chot_keys[] = {"m", "n", "k", "hot", NULL};
static const char *const ehot_keys[] = {"tokens", "hot", NULL};
static const char *const law_sus_keys[] = {"hot", "heat", NULL};
static const char *const split_keys[] = {"max_parts", "min_tiles", "cost_tiles", "ctas_per_sm", NULL};
static const char *const expand_keys[] = {"cta_tokens", "ctas_per_sm", NULL};
static const char *const fit_keys[] = {"median_rel", "max_rel", NULL};
static const char *const env_keys[] = {"tp", "q_heads", "kv_heads", "head_dim", NULL};

/* ---- the physically meaningful ranges a profile's values are held to at load ----
 * Every value the cost model computes with is bounded here, so that no profile can make a
 * feature loop run long, a price overflow, or a law price work at 0 s or less. */
#define MAX_SMS 4096                   /* SMs of one GPU */
#define MAX_TP 1024                    /* tensor-parallel degree */
#define MAX_META 1e9                   /* GiB, GB/s, TFLOP/s, MHz, seconds of metadata */
#define MAX_COEF 100.0                 /* a coefficient: s per unit of its feature, a roofline
                                          multiplier, or a knee's CTAs an SM */
#define MAX_REL 100.0                  /* a fit's relative error (10000%) */
#define MIN_TFLOPS 0.01                /* peak_fp16_tflops, where given (0: not), at least: 10 GFLOP/s */
#define MIN_GBS 1.0                    /* mem_bw_gbs, where given, at least: 1 GB/s (a T4 has 65 TFLOP/s
                                          fp16 and 320 GB/s; 1e-300 would price work at 1e290 s) */
#define MIN_MEM_GIB 1.0                /* mem_gib, where given, at least: 1 GiB (a T4 has 16) */
#define T_MIN 1e-9                     /* a measured time, s: no kernel is faster than 1 ns */
#define T_MAX 1e3                      /* ... and none of one call or step slower than 1000 s */

/* The optional [fastest, slowest] seconds `key` of the map sus (at path sp) around the time
 * constant mid (its key midkey): 0 < fastest <= mid <= slowest.  1 read, 0 absent (out 0, 0),
 * -1 refused. */
static int read_range(yd_err_t *e, const yd_node_t *sus, const char *sp, const char *key, double mid,
                      const char *midkey, double out[2])
{
    yd_node_t *r = NULL;
    out[0] = out[1] = 0;
    if (yd_get_node(e, sus, sp, key, YD_OPT, YD_SEQ, &r) < 0) return -1;
    if (!r) return 0;
    char kp[YD_PATH_MAX], ip[YD_PATH_MAX];
    yd_path(kp, sp, key);
    if (r->n != 2) return yd_fail(e, r, kp, "expected [fastest, slowest] in seconds, got %d values", r->n);
    for (int i = 0; i < 2; i++) {
        yd_path_idx(ip, kp, i);
        if (yd_as_double(e, r->vals[i], ip, 0.0, MAX_META, YD_LO_OPEN, &out[i]) < 0) return -1;
    }
    if (!(mid > 0)) return yd_fail(e, r, kp, "needs %s beside it (the range is of its traces)", midkey);
    if (!(out[0] <= mid && mid <= out[1]))
        return yd_fail(e, r, kp, "[%g, %g] must hold %s (%g)", out[0], out[1], midkey, mid);
    return 1;
}

/* read_rows: the optional sequence `key` of `parent` (at path `pp`): 1 to maxrows rows of minw to
 * width numbers (all of a sequence's rows alike), column c in [lo[c], hi[c]] (flag[c]: yd_as_double's
 * bound flags), into out (rows of width doubles, a row's missing last columns 0); *nrows their
 * count (left alone when the key is absent), *node the sequence (may be NULL).  A bad row: one
 * line at it, -1. */
static int read_rows(yd_err_t *e, const yd_node_t *parent, const char *pp, const char *key, const char *shape,
                     int maxrows, int minw, int width, const double *lo, const double *hi, const int *flag,
                     double *out, int *nrows, yd_node_t **node)
{
    yd_node_t *sq = NULL;
    if (yd_get_node(e, parent, pp, key, YD_OPT, YD_SEQ, &sq) < 0) return -1;
    if (node) *node = sq;
    if (!sq) return 0;
    char cp[YD_PATH_MAX], ip[YD_PATH_MAX], vp[YD_PATH_MAX];
    yd_path(cp, pp, key);
    if (sq->n < 1 || sq->n > maxrows) return yd_fail(e, sq, cp, "expected 1 to %d rows, got %d", maxrows, sq->n);
    for (int i = 0; i < sq->n; i++) {
        yd_node_t *row = sq->vals[i];
        yd_path_idx(ip, cp, i);
        if (yd_expect(e, row, ip, YD_SEQ) < 0) return -1;
        if (row->n < minw || row->n > width) return yd_fail(e, row, ip, "expected %s, got %d numbers", shape, row->n);
        if (i && row->n != sq->vals[0]->n)
            return yd_fail(e, row, ip, "expected %d numbers as the first row has, got %d", sq->vals[0]->n, row->n);
        for (int c = 0; c < width; c++) {
            yd_path_idx(vp, ip, c);
            out[i * width + c] = 0;
            if (c < row->n && yd_as_double(e, row->vals[c], vp, lo[c], hi[c], flag[c], &out[i * width + c]) < 0)
                return -1;
        }
    }
    *nrows = sq->n;
    return 0;
}

/* Column col of read_rows' rows (width numbers a row, n rows, from the sequence sq at pp.key)
 * must rise: 0, or -1 with what said at the first row that does not. */
static int rows_rise(yd_err_t *e, const yd_node_t *sq, const char *pp, const char *key, const double *rows, int n,
                     int width, int col, const char *what)
{
    for (int i = 1; i < n; i++)
        if (!(rows[i * width + col] > rows[(i - 1) * width + col])) {
            char cp[YD_PATH_MAX], ip[YD_PATH_MAX];
            yd_path(cp, pp, key);
            yd_path_idx(ip, cp, i);
            return yd_fail(e, sq->vals[i]->vals[col], ip, "%s (%g after %g)", what, rows[i * width + col],
                           rows[(i - 1) * width + col]);
        }
    return 0;
}

static int load_meta(yd_err_t *e, const yd_node_t *m, profile_t *p)
{
    const char *pp = "profile";
    if (yd_strict_map(e, m, pp, meta_keys) ||
        yd_get_str(e, m, pp, "gpu", YD_REQ, p->gpu, sizeof p->gpu) < 0 ||
        yd_get_int(e, m, pp, "sms", YD_OPT, 0, MAX_SMS, &p->sms) < 0 ||
        yd_get_double(e, m, pp, "mem_gib", YD_OPT, 0.0, MAX_META, 0, &p->mem_gib) < 0 ||
        yd_get_double(e, m, pp, "mem_bw_gbs", YD_OPT, 0.0, MAX_META, 0, &p->mem_bw_gbs) < 0 ||
        yd_get_double(e, m, pp, "peak_fp16_tflops", YD_OPT, 0.0, MAX_META, 0, &p->peak_fp16_tflops) < 0 ||
        yd_get_int(e, m, pp, "tp", YD_OPT, 1, MAX_TP, &p->tp) < 0 ||
        yd_get_str(e, m, pp, "model", YD_OPT, p->model, sizeof p->model) < 0 ||
        yd_get_str(e, m, pp, "toolkit", YD_OPT, p->toolkit, sizeof p->toolkit) < 0 ||
        yd_get_str(e, m, pp, "driver", YD_OPT, p->driver, sizeof p->driver) < 0 ||
        yd_get_str(e, m, pp, "date", YD_OPT, p->date, sizeof p->date) < 0 ||
        yd_get_str(e, m, pp, "revision", YD_OPT, p->revision, sizeof p->revision) < 0 ||
        yd_get_str(e, m, pp, "method", YD_OPT, p->method, sizeof p->method) < 0 ||
        yd_get_double(e, m, pp, "calib_seconds", YD_OPT, 0.0, MAX_META, 0, &p->calib_seconds) < 0 ||
        yd_get_double(e, m, pp, "sm_clock_mhz", YD_OPT, 0.0, MAX_META, 0, &p->sm_clock_mhz) < 0)
        return -1;
    if (p->peak_fp16_tflops > 0 && p->peak_fp16_tflops < MIN_TFLOPS)
        return yd_fail(e, yd_map_get(m, "peak_fp16_tflops"), "profile.peak_fp16_tflops",
                       "%g TFLOP/s is below %g (10 GFLOP/s, thousands of times below any GPU's fp16 rate; 0: not"
                       " given): not a device's figure", p->peak_fp16_tflops, MIN_TFLOPS);
    if (p->mem_bw_gbs > 0 && p->mem_bw_gbs < MIN_GBS)
        return yd_fail(e, yd_map_get(m, "mem_bw_gbs"), "profile.mem_bw_gbs",
                       "%g GB/s is below %g (hundreds of times below any GPU's memory bandwidth; 0: not given):"
                       " not a device's figure", p->mem_bw_gbs, MIN_GBS);
    if (p->mem_gib > 0 && p->mem_gib < MIN_MEM_GIB)
        return yd_fail(e, yd_map_get(m, "mem_gib"), "profile.mem_gib",
                       "%g GiB is below %g (sixteen times below any GPU's memory; 0: not given): not a device's"
                       " figure", p->mem_gib, MIN_MEM_GIB);
    yd_node_t *sus = NULL;
    if (yd_get_node(e, m, pp, "sustained", YD_OPT, YD_MAP, &sus) < 0)
        return -1;
    if (sus) {
        const char *sp = "profile.sustained";
        if (yd_strict_map(e, sus, sp, card_sus_keys) ||
            yd_get_double(e, sus, sp, "clock_cold_mhz", YD_REQ, 0.0, MAX_META, YD_LO_OPEN, &p->clock_cold_mhz) < 0 ||
            yd_get_double(e, sus, sp, "clock_hot_mhz", YD_REQ, 0.0, MAX_META, YD_LO_OPEN, &p->clock_hot_mhz) < 0 ||
            yd_get_double(e, sus, sp, "tau_up_s", YD_REQ, 0.0, MAX_META, YD_LO_OPEN, &p->tau_up_s) < 0 ||
            yd_get_double(e, sus, sp, "tau_down_s", YD_REQ, 0.0, MAX_META, YD_LO_OPEN, &p->tau_down_s) < 0 ||
            yd_get_double(e, sus, sp, "tau_up_runs_s", YD_OPT, 0.0, MAX_META, YD_LO_OPEN, &p->tau_up_runs_s) < 0 ||
            yd_get_double(e, sus, sp, "stamp_cold_mhz", YD_OPT, 0.0, MAX_META, YD_LO_OPEN, &p->stamp_cold_mhz) < 0 ||
            yd_get_double(e, sus, sp, "stamp_hot_mhz", YD_OPT, 0.0, MAX_META, YD_LO_OPEN, &p->stamp_hot_mhz) < 0)
            return -1;
        if (read_range(e, sus, sp, "tau_up_runs_range_s", p->tau_up_runs_s, "tau_up_runs_s",
                       p->tau_up_runs_range_s) < 0 ||
            read_range(e, sus, sp, "tau_down_range_s", p->tau_down_s, "tau_down_s", p->tau_down_range_s) < 0)
            return -1;
        if (!(p->clock_hot_mhz < p->clock_cold_mhz))
            return yd_fail(e, yd_map_get(sus, "clock_hot_mhz"), "profile.sustained.clock_hot_mhz",
                           "must be below clock_cold_mhz (%g), got %g", p->clock_cold_mhz, p->clock_hot_mhz);
        if ((p->stamp_cold_mhz > 0) != (p->stamp_hot_mhz > 0)) {
            const char *has = p->stamp_cold_mhz > 0 ? "stamp_cold_mhz" : "stamp_hot_mhz";
            return yd_fail(e, yd_map_get(sus, has), p->stamp_cold_mhz > 0 ? "profile.sustained.stamp_cold_mhz"
                                                                           : "profile.sustained.stamp_hot_mhz",
                           "needs %s beside it (the two are one meter's pair)",
                           p->stamp_cold_mhz > 0 ? "stamp_hot_mhz" : "stamp_cold_mhz");
        }
        if (p->stamp_cold_mhz > 0 && !(p->stamp_hot_mhz < p->stamp_cold_mhz))
            return yd_fail(e, yd_map_get(sus, "stamp_hot_mhz"), "profile.sustained.stamp_hot_mhz",
                           "must be below stamp_cold_mhz (%g), got %g", p->stamp_cold_mhz, p->stamp_hot_mhz);
        static const double clo[3] = { 0, 0, 0 }, chi[3] = { 1, MAX_META, MAX_META };
        static const int cflag[3] = { YD_LO_OPEN, YD_LO_OPEN, 0 };
        yd_node_t *cv = NULL;
        if (read_rows(e, sus, sp, "curve", "[duty, mhz, watts]", PROF_MAX_CURVE, 3, 3, clo, chi, cflag, &p->curve[0][0],
                      &p->ncurve, &cv) < 0)
            return -1;
        if (rows_rise(e, cv, sp, "curve", &p->curve[0][0], p->ncurve, 3, 0, "duty must rise along the curve") < 0)
            return -1;
        yd_node_t *ch = NULL;
        if (yd_get_node(e, sus, sp, "gemm_compute_hot", YD_OPT, YD_MAP, &ch) < 0) return -1;
        if (ch) {
            char hp[YD_PATH_MAX];
            yd_path(hp, sp, "gemm_compute_hot");
            if (yd_strict_map(e, ch, hp, chot_keys) ||
                yd_get_double(e, ch, hp, "m", YD_REQ, 1.0, 2147483648.0, 0, &p->chot[0]) < 0 ||
                yd_get_double(e, ch, hp, "n", YD_REQ, 1.0, 2147483648.0, 0, &p->chot[1]) < 0 ||
                yd_get_double(e, ch, hp, "k", YD_REQ, 1.0, 2147483648.0, 0, &p->chot[2]) < 0 ||
                yd_get_double(e, ch, hp, "hot", YD_REQ, 0.5, 5.0, 0, &p->chot[3]) < 0)
                return -1;
            p->has_chot = 1;
        }
        yd_node_t *eh = NULL;
        if (yd_get_node(e, sus, sp, "elementwise_hot", YD_OPT, YD_MAP, &eh) < 0) return -1;
        if (eh) {
            char hp[YD_PATH_MAX];
            yd_path(hp, sp, "elementwise_hot");
            if (yd_strict_map(e, eh, hp, ehot_keys) ||
                yd_get_double(e, eh, hp, "tokens", YD_REQ, 1.0, 2147483648.0, 0, &p->ehot[0]) < 0 ||
                yd_get_double(e, eh, hp, "hot", YD_REQ, 0.5, 5.0, 0, &p->ehot[1]) < 0)
                return -1;
            p->has_ehot = 1;
        }
        /* the duty column came later: rows of six numbers read with duty 0 (not measured) */
        static const double ilo[7] = { 0, 0, 0, 0, 0.5, 0.5, 0 }, ihi[7] = { 1, 1000, MAX_META, MAX_META, 5, 5, 2 };
        static const int iflag[7] = { YD_LO_OPEN, YD_LO_OPEN, YD_LO_OPEN, 0, 0, 0, 0 };
        if (read_rows(e, sus, sp, "interleave", "[gemm_share, layer_ms, mhz, watts, gemm_factor, decode_factor(, duty)]",
                      PROF_MAX_INTER, 6, 7, ilo, ihi, iflag, &p->inter[0][0], &p->ninter, NULL) < 0)
            return -1;
        static const double glo[6] = { 1, 1, 1, 0, 0.5, 0.5 }, ghi[6] = { 2147483648.0, 2147483648.0, 2147483648.0, 10, 5, 5 };
        static const int gflag[6] = { 0, 0, 0, YD_LO_OPEN, 0, 0 };
        yd_node_t *gv = NULL;
        if (read_rows(e, sus, sp, "gemm_hot_probes", "[m, n, k, t_s, hot, hot]", PROF_MAX_GPROBE, 6, 6, glo, ghi, gflag,
                      &p->gprobe[0][0], &p->ngprobe, &gv) < 0)
            return -1;
        if (rows_rise(e, gv, sp, "gemm_hot_probes", &p->gprobe[0][0], p->ngprobe, 6, 3, "t_s must rise along the probes")
            < 0)
            return -1;
        p->has_sustained = 1;
    }
    yd_node_t *ex = NULL;
    if (yd_get_node(e, m, pp, "fp8_expand", YD_OPT, YD_MAP, &ex) < 0)
        return -1;
    if (ex) {
        const char *xp = "profile.fp8_expand";
        if (yd_strict_map(e, ex, xp, expand_keys) ||
            yd_get_int(e, ex, xp, "cta_tokens", YD_REQ, 1, 1 << 20, &p->expand_cta_tokens) < 0 ||
            yd_get_int(e, ex, xp, "ctas_per_sm", YD_REQ, 1, 64, &p->expand_ctas_per_sm) < 0)
            return -1;
    }
    yd_node_t *en = NULL;
    if (yd_get_node(e, m, pp, "envelope", YD_OPT, YD_MAP, &en) < 0)
        return -1;
    if (en) {
        const char *xp = "profile.envelope";
        if (yd_strict_map(e, en, xp, env_keys) ||
            yd_get_int(e, en, xp, "tp", YD_REQ, 1, MAX_TP, &p->env_tp) < 0 ||
            yd_get_int(e, en, xp, "q_heads", YD_REQ, 1, 4096, &p->env_q_heads) < 0 ||
            yd_get_int(e, en, xp, "kv_heads", YD_REQ, 1, 4096, &p->env_kv_heads) < 0 ||
            yd_get_int(e, en, xp, "head_dim", YD_REQ, 1, 4096, &p->env_head_dim) < 0)
            return -1;
        p->has_envelope = 1;
    }
    yd_node_t *sp = NULL;
    if (yd_get_node(e, m, pp, "prefill_split", YD_OPT, YD_MAP, &sp) < 0)
        return -1;
    if (sp) {
        const char *xp = "profile.prefill_split";
        if (yd_strict_map(e, sp, xp, split_keys) ||
            yd_get_int(e, sp, xp, "max_parts", YD_REQ, 1, 64, &p->split_max) < 0 ||
            yd_get_int(e, sp, xp, "min_tiles", YD_REQ, 1, 1 << 20, &p->split_min_tiles) < 0 ||
            yd_get_int(e, sp, xp, "cost_tiles", YD_REQ, 0, 1 << 20, &p->split_cost_tiles) < 0 ||
            yd_get_int(e, sp, xp, "ctas_per_sm", YD_REQ, 1, 64, &p->split_ctas_per_sm) < 0)
            return -1;
    }
    return 0;
}

/* The range of column c (of ncols, t_s last) of a point of law form f (NULL: a law outside
 * the catalogue, whose columns but t_s are only finite); *whole: the value counts something.
 * The bounds keep every feature's loops and products finite (cost_feat.c): a prefill call's
 * M-tiles are q / 16 at most, a decode point expands into at most 64 rows. */
static void col_range(const law_form_t *f, int c, int ncols, double *lo, double *hi, int *whole)
{
    *lo = -INFINITY, *hi = INFINITY, *whole = 0;
    if (c == ncols - 1) {
        *lo = T_MIN, *hi = T_MAX;
        return;
    }
    if (!f) return;
    *whole = 1;
    *lo = 1;
    switch (f->family) {
    case LF_PREFILL: case LF_DECODE_XQA: case LF_DECODE_SCALAR: case LF_BRIDGE:
        if (c == ATTN_COL_CTX_MIN) {     /* decode: the requests' contexts spread down to it; 0 = none */
            *lo = 0, *hi = PROF_MAX_SEQ_LEN;
            return;
        }
        *hi = c == ATTN_COL_ROWS ? PROF_MAX_ROWS
            : c == ATTN_COL_Q ? (f->family == LF_DECODE_XQA || f->family == LF_DECODE_SCALAR ? 64 : PROF_MAX_Q)
            : c == ATTN_COL_SEQ_LEN ? PROF_MAX_SEQ_LEN : c == ATTN_COL_PAGE ? PROF_MAX_PAGE : PROF_MAX_HEADS;
        return;
    case LF_GEMM:
        if (c == GEMM_COL_WB) {
            *lo = 0, *hi = 8, *whole = 0;
        } else if (c >= GEMM_COL_TILE_N) {
            *lo = 0;
            *hi = c == GEMM_COL_SPLITS ? 1024 : 65536;
        } else {
            *hi = PROF_MAX_DIM;
        }
        return;
    case LF_ALLREDUCE: *hi = PROF_MAX_DIM * PROF_MAX_DIM; return;
    case LF_VARLEN:                      /* decode rows, context, chunks, chunk q, prefix, ctx_min: 0 = none */
        *lo = c == VARLEN_COL_PAGE ? 1 : 0;
        *hi = c == VARLEN_COL_PAGE ? PROF_MAX_PAGE
            : c == VARLEN_COL_CTX || c == VARLEN_COL_CHUNK_PREFIX || c == VARLEN_COL_CTX_MIN ? PROF_MAX_SEQ_LEN
            : c == VARLEN_COL_CHUNK_Q ? PROF_MAX_Q : PROF_MAX_ROWS;
        return;
    case LF_MOE:
        if (c == MOE_COL_SKEW) {         /* the Zipf exponent of tokens over experts: 0 = uniform */
            *lo = 0, *hi = 8, *whole = 0;
        } else {
            *hi = PROF_MAX_DIM;
        }
        return;
    default: *hi = PROF_MAX_DIM; return;     /* gdn tokens, seqs; elementwise tokens; step rows */
    }
}

/* 1 when decode point v's ctx_min (where its ncols columns hold one) is neither 0 nor
 * within q .. seq_len (its requests' rows would start before their first key). */
static int attn_spread_bad(const law_form_t *f, const double *v, int ncols)
{
    if (!f || (f->family != LF_DECODE_XQA && f->family != LF_DECODE_SCALAR) || ncols <= ATTN_COL_CTX_MIN + 1) return 0;
    double lo = v[ATTN_COL_CTX_MIN];
    return lo != 0 && (lo < v[ATTN_COL_Q] || lo > v[ATTN_COL_SEQ_LEN]);
}

/* A point row's values against its columns' ranges, and the ones that relate columns (an
 * attention row's q within its seq_len, a gdn point's sequences within its tokens). */
static int check_row(yd_err_t *e, const yd_node_t *row, const char *ip, const law_form_t *f, const double *v, int ncols)
{
    char vp[YD_PATH_MAX];
    for (int j = 0; j < ncols; j++) {
        double lo, hi;
        int whole;
        col_range(f, j, ncols, &lo, &hi, &whole);
        if (!(v[j] >= lo && v[j] <= hi) || (whole && v[j] != floor(v[j])))
            return yd_fail(e, row->vals[j], yd_path_idx(vp, ip, j), "%s must be a %s in [%g, %g], got %g",
                           j == ncols - 1 ? "t_s (seconds)" : "this column", whole ? "whole number" : "number", lo,
                           hi, v[j]);
    }
    if (!f) return 0;
    if ((f->family == LF_PREFILL || f->family == LF_DECODE_XQA || f->family == LF_DECODE_SCALAR ||
         f->family == LF_BRIDGE) && v[ATTN_COL_Q] > v[ATTN_COL_SEQ_LEN])
        return yd_fail(e, row->vals[ATTN_COL_Q], yd_path_idx(vp, ip, ATTN_COL_Q),
                       "q (%g) must not exceed seq_len (%g)", v[ATTN_COL_Q], v[ATTN_COL_SEQ_LEN]);
    if (attn_spread_bad(f, v, ncols))
        return yd_fail(e, row->vals[ATTN_COL_CTX_MIN], yd_path_idx(vp, ip, ATTN_COL_CTX_MIN),
                       "ctx_min (%g) must be 0 or from q (%g) to seq_len (%g)", v[ATTN_COL_CTX_MIN], v[ATTN_COL_Q],
                       v[ATTN_COL_SEQ_LEN]);
    if (f->family == LF_VARLEN && ncols > VARLEN_COL_CTX_MIN + 1 && v[VARLEN_COL_CTX_MIN] > v[VARLEN_COL_CTX])
        return yd_fail(e, row->vals[VARLEN_COL_CTX_MIN], yd_path_idx(vp, ip, VARLEN_COL_CTX_MIN),
                       "ctx_min (%g) must not exceed ctx (%g)", v[VARLEN_COL_CTX_MIN], v[VARLEN_COL_CTX]);
    if (f->family == LF_GDN && v[GDN_COL_SEQS] > v[GDN_COL_TOKENS])
        return yd_fail(e, row->vals[GDN_COL_SEQS], yd_path_idx(vp, ip, GDN_COL_SEQS),
                       "seqs (%g) must not exceed tokens (%g)", v[GDN_COL_SEQS], v[GDN_COL_TOKENS]);
    return 0;
}

/* A catalogue law's columns are its form's (law.h), or, for a form whose rows may carry
 * facts measured with the shape (gemm), its shape columns and t_s. */
static int check_cols(yd_err_t *e, const yd_node_t *cols, const char *path, const law_form_t *f, const prof_law_t *l)
{
    char ip[YD_PATH_MAX], list[200] = "";
    int short_ok = f->nshape < f->ncols - 1, want = l->ncols == f->nshape + 1 && short_ok ? f->nshape + 1 : f->ncols;
    if (l->ncols >= f->ncols - f->opt_cols && l->ncols < f->ncols) want = l->ncols;   /* without the optional last */
    for (int c = 0; c < f->ncols; c++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", c ? ", " : "", f->cols[c]);
    if (l->ncols != want) {
        if (short_ok)
            return yd_fail(e, cols, path, "law \"%s\" has the columns [%s] (or its first %d and t_s), got %d",
                           l->name, list, f->nshape, l->ncols);
        return yd_fail(e, cols, path, "law \"%s\" has the columns [%s], got %d", l->name, list, l->ncols);
    }
    for (int c = 0; c < want - 1; c++)
        if (strcmp(l->cols[c], f->cols[c]))
            return yd_fail(e, cols->vals[c], yd_path_idx(ip, path, c), "law \"%s\": column %d is \"%s\", got \"%s\"",
                           l->name, c, f->cols[c], l->cols[c]);
    return 0;
}

/* A kernel range v after pv (the previous row, or NULL) of the order the format requires: 0 ok,
 * 1 m_lo past m_hi, 2 of pv's shape and not past pv's m_hi.  (Each value a whole number in its
 * range is checked apart: yd_as_long on load, law_savable on save.) */
static int kern_row_bad(const double *v, const double *pv)
{
    if (v[KERN_M_LO] > v[KERN_M_HI]) return 1;
    if (pv && pv[KERN_N] == v[KERN_N] && pv[KERN_K] == v[KERN_K] && pv[KERN_WB] == v[KERN_WB] &&
        v[KERN_M_LO] <= pv[KERN_M_HI])
        return 2;
    return 0;
}

/* A gemm law's kernel ranges (see the format above). */
static int load_kernels(yd_err_t *e, const yd_node_t *kn, const char *path, prof_law_t *l)
{
    char ip[YD_PATH_MAX], vp[YD_PATH_MAX];
    if (strcmp(l->name, "gemm"))
        return yd_fail(e, kn, path, "only law gemm records cuBLAS's kernels, not \"%s\"", l->name);
    if (kn->n > PROF_MAX_KERN)
        return yd_fail(e, kn, path, "at most %d kernel ranges, got %d", PROF_MAX_KERN, kn->n);
    if (!kn->n) return 0;
    l->kern = malloc((size_t)kn->n * PROF_KERN_COLS * sizeof *l->kern);
    if (!l->kern)
        return yd_fail(e, kn, path, "out of memory");
    for (int i = 0; i < kn->n; i++) {
        const yd_node_t *row = kn->vals[i];
        yd_path_idx(ip, path, i);
        if (yd_expect(e, row, ip, YD_SEQ))
            return -1;
        if (row->n != PROF_KERN_COLS)
            return yd_fail(e, row, ip, "expected %d values (n, k, wb, m_lo, m_hi, tile_n, tile_m, splits), got %d",
                           PROF_KERN_COLS, row->n);
        double *v = &l->kern[(size_t)i * PROF_KERN_COLS];
        for (int j = 0; j < PROF_KERN_COLS; j++) {
            long lv;
            if (yd_as_long(e, row->vals[j], yd_path_idx(vp, ip, j), 1, j == KERN_WB ? 8 : PROF_MAX_DIM, &lv))
                return -1;
            v[j] = (double)lv;
        }
        const double *pv = i ? v - PROF_KERN_COLS : NULL;
        int bad = kern_row_bad(v, pv);
        if (bad == 1)
            return yd_fail(e, row->vals[KERN_M_LO], yd_path_idx(vp, ip, KERN_M_LO),
                           "m_lo %g is past m_hi %g", v[KERN_M_LO], v[KERN_M_HI]);
        if (bad == 2)
            return yd_fail(e, row->vals[KERN_M_LO], yd_path_idx(vp, ip, KERN_M_LO),
                           "m_lo %g is not past the previous range's m_hi %g (a shape's ranges ascend in m)",
                           v[KERN_M_LO], pv[KERN_M_HI]);
        l->nkern = i + 1;
    }
    return 0;
}

int prof_kernel_block(const prof_law_t *l, double n, double k, double wb, int *lo, int *hi)
{
    /* a shape's rows are consecutive and ascending */
    *lo = *hi = 0;
    for (int i = 0; l && i < l->nkern; i++) {
        const double *v = l->kern + (size_t)i * PROF_KERN_COLS;
        if (v[KERN_N] == n && v[KERN_K] == k && v[KERN_WB] == wb) {
            if (*lo == *hi) *lo = i;
            *hi = i + 1;
        } else if (*hi > *lo) {
            break;
        }
    }
    return *hi > *lo;
}

const double *prof_kernel_at(const prof_law_t *l, double m, double n, double k, double wb)
{
    int lo, hi;
    return prof_kernel_block(l, n, k, wb, &lo, &hi) ? prof_kernel_in(l, lo, hi, m) : NULL;
}

const double *prof_kernel_in(const prof_law_t *l, int lo, int hi, double m)
{
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        const double *v = l->kern + (size_t)mid * PROF_KERN_COLS;
        if (m < v[KERN_M_LO]) hi = mid;
        else if (m > v[KERN_M_HI]) lo = mid + 1;
        else return v;
    }
    return NULL;
}

static int load_law(yd_err_t *e, const yd_node_t *n, const char *lp, prof_law_t *l, int strict)
{
    char path[YD_PATH_MAX], ip[YD_PATH_MAX];
    yd_node_t *coef, *cols = NULL, *pts = NULL, *fit = NULL, *sus = NULL, *kern = NULL;
    l->fit_median_rel = l->fit_max_rel = -1;
    if (yd_strict_map(e, n, lp, law_keys) ||
        yd_get_str(e, n, lp, "name", YD_REQ, l->name, sizeof l->name) < 0 ||
        yd_get_str(e, n, lp, "provenance", YD_OPT, l->provenance, sizeof l->provenance) < 0 ||
        yd_get_node(e, n, lp, "coef", YD_REQ, YD_SEQ, &coef) < 0 ||
        yd_get_node(e, n, lp, "fit", YD_OPT, YD_MAP, &fit) < 0 ||
        yd_get_node(e, n, lp, "columns", YD_OPT, YD_SEQ, &cols) < 0 ||
        yd_get_node(e, n, lp, "points", YD_OPT, YD_SEQ, &pts) < 0 ||
        yd_get_node(e, n, lp, "sustained", YD_OPT, YD_MAP, &sus) < 0 ||
        yd_get_node(e, n, lp, "kernels", YD_OPT, YD_SEQ, &kern) < 0)
        return -1;
    const yd_node_t *nm = yd_map_get(n, "name");
    l->name_line = nm->line;
    l->name_col = nm->col;
    if (kern && load_kernels(e, kern, yd_path(path, lp, "kernels"), l))
        return -1;
    if (sus) {
        yd_path(path, lp, "sustained");
        if (yd_strict_map(e, sus, path, law_sus_keys) ||
            yd_get_double(e, sus, path, "hot", YD_REQ, 0.5, 5.0, 0, &l->hot) < 0 ||
            yd_get_double(e, sus, path, "heat", YD_REQ, 0.0, 1.0, 0, &l->heat) < 0)
            return -1;
        l->has_sustained = 1;
    }
    yd_path(path, lp, "coef");
    if (coef->n < 1 || coef->n > PROF_MAX_COEF)
        return yd_fail(e, coef, path, "expected 1 to %d coefficients, got %d", PROF_MAX_COEF,
                       coef->n);
    int want = law_ncoef(l->name);
    if (strict && want > 0 && coef->n > want)
        return yd_fail(e, coef, path,
                       "law \"%s\" has %d coefficients in this revision, got %d (a profile of another revision: "
                       "bin/calib --refit refits its laws from its points)", l->name, want, coef->n);
    l->ncoef = coef->n;
    int nonzero = 0;
    for (int i = 0; i < coef->n; i++) {
        if (yd_as_double(e, coef->vals[i], yd_path_idx(ip, path, i), 0.0, MAX_COEF, 0, &l->coef[i]))
            return -1;
        nonzero |= l->coef[i] != 0;
    }
    /* every kernel and transfer takes time; only the host's per-step overhead may be 0 */
    const law_form_t *form = law_find(l->name);
    if (form && form->family != LF_STEP && !nonzero)
        return yd_fail(e, coef, path, "every coefficient is 0: law \"%s\" would price its work at 0 s", l->name);
    if (fit) {
        yd_path(path, lp, "fit");
        if (yd_strict_map(e, fit, path, fit_keys) ||
            yd_get_double(e, fit, path, "median_rel", YD_REQ, 0.0, MAX_REL, 0, &l->fit_median_rel) < 0 ||
            yd_get_double(e, fit, path, "max_rel", YD_REQ, 0.0, MAX_REL, 0, &l->fit_max_rel) < 0)
            return -1;
        if (l->fit_median_rel > l->fit_max_rel)
            return yd_fail(e, yd_map_get(fit, "median_rel"), yd_path(ip, path, "median_rel"),
                           "must not exceed max_rel (%g), got %g", l->fit_max_rel, l->fit_median_rel);
    }
    if (cols) {
        yd_path(path, lp, "columns");
        if (cols->n > PROF_MAX_COLS)
            return yd_fail(e, cols, path, "at most %d columns, got %d", PROF_MAX_COLS, cols->n);
        for (int i = 0; i < cols->n; i++)
            if (yd_as_str(e, cols->vals[i], yd_path_idx(ip, path, i), l->cols[i],
                          sizeof l->cols[i]))
                return -1;
        l->ncols = cols->n;
        if (l->ncols && strcmp(l->cols[l->ncols - 1], "t_s"))
            return yd_fail(e, cols->vals[l->ncols - 1], yd_path_idx(ip, path, l->ncols - 1),
                           "the last column must be \"t_s\", got \"%s\"", l->cols[l->ncols - 1]);
        if (form && l->ncols && check_cols(e, cols, path, form, l))
            return -1;
    }
    if (pts && pts->n) {
        yd_path(path, lp, "points");
        if (!l->ncols)
            return yd_fail(e, pts, path, "points need columns");
        if (pts->n > PROF_MAX_POINTS)
            return yd_fail(e, pts, path, "at most %d points a law, got %d", PROF_MAX_POINTS, pts->n);
        l->pts = malloc((size_t)pts->n * (size_t)l->ncols * sizeof *l->pts);
        if (!l->pts)
            return yd_fail(e, pts, path, "out of memory");
        for (int i = 0; i < pts->n; i++) {
            const yd_node_t *row = pts->vals[i];
            yd_path_idx(ip, path, i);
            if (yd_expect(e, row, ip, YD_SEQ))
                return -1;
            if (row->n != l->ncols)
                return yd_fail(e, row, ip, "expected %d values (one per column), got %d",
                               l->ncols, row->n);
            double *v = &l->pts[(size_t)i * (size_t)l->ncols];
            for (int j = 0; j < row->n; j++) {
                char vp[YD_PATH_MAX];
                if (yd_as_double(e, row->vals[j], yd_path_idx(vp, ip, j), -INFINITY, INFINITY, 0, &v[j]))
                    return -1;
            }
            if (check_row(e, row, ip, form, v, l->ncols))
                return -1;
            l->npts = i + 1;
        }
    }
    return 0;
}

static int load_profile(const char *path, profile_t *out, char err[PROF_ERR_MAX], int strict)
{
    yd_err_t e;
    yd_err_init(&e, err, PROF_ERR_MAX);
    memset(out, 0, sizeof *out);
    out->tp = 1;
    snprintf(out->path, sizeof out->path, "%s", path);
    /* opened without blocking (a FIFO with no writer would wait forever), and only a
     * regular file is read */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        snprintf(err, PROF_ERR_MAX, "%s: cannot open profile: %s", path, strerror(errno));
        if (fd >= 0) close(fd);
        return -1;
    }
    close(fd);
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, PROF_ERR_MAX, "%s: cannot read: %s", path,
                 S_ISDIR(st.st_mode) ? strerror(EISDIR)
                 : S_ISFIFO(st.st_mode) ? "not a regular file (a FIFO)" : "not a regular file (a device or socket)");
        return -1;
    }
    yd_doc_t *d = yd_load(path, &e);
    if (!d)
        return -1;
    const yd_node_t *root = yd_root(d);
    yd_node_t *meta, *laws;
    if (yd_strict_map(&e, root, "", top_keys) ||
        yd_get_node(&e, root, "", "profile", YD_REQ, YD_MAP, &meta) < 0 ||
        yd_get_node(&e, root, "", "laws", YD_REQ, YD_ANY, &laws) < 0 ||
        load_meta(&e, meta, out))
        goto fail;
    out->laws_line = laws->line;
    out->laws_col = laws->col;
    if (!yd_is_null(laws)) {
        if (yd_expect(&e, laws, "laws", YD_SEQ))
            goto fail;
        if (laws->n > PROF_MAX_LAWS) {     /* bounds the memory and the names' pairwise check */
            yd_fail(&e, laws, "laws", "at most %d laws, got %d", PROF_MAX_LAWS, laws->n);
            goto fail;
        }
        if (laws->n) {
            out->laws = calloc((size_t)laws->n, sizeof *out->laws);
            if (!out->laws) {
                yd_fail(&e, laws, "laws", "out of memory");
                goto fail;
            }
        }
        for (int i = 0; i < laws->n; i++) {
            char lp[YD_PATH_MAX];
            yd_path_idx(lp, "laws", i);
            out->nlaws = i + 1;
            if (load_law(&e, laws->vals[i], lp, &out->laws[i], strict))
                goto fail;
            for (int j = 0; j < i; j++)
                if (!strcmp(out->laws[j].name, out->laws[i].name)) {
                    char np[YD_PATH_MAX];
                    yd_fail(&e, yd_map_get(laws->vals[i], "name"), yd_path(np, lp, "name"),
                            "duplicate law name \"%s\" (also laws[%d])", out->laws[i].name, j);
                    goto fail;
                }
        }
    }
    yd_free(d);
    return 0;
fail:
    yd_free(d);
    prof_free(out);
    snprintf(out->path, sizeof out->path, "%s", path);
    return -1;
}

/* ---------------------------------------------------------------------------------- */

static void put_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '"' || *c == '\\')
            fprintf(f, "\\%c", *c);
        else if (*c == '\n')
            fputs("\\n", f);
        else if (*c == '\t')
            fputs("\\t", f);
        else if (*c < 0x20 || *c == 0x7f)
            fprintf(f, "\\x%02x", *c);
        else
            fputc(*c, f);
    }
    fputc('"', f);
}

static void put_kv_str(FILE *f, const char *ind, const char *k, const char *v)
{
    fprintf(f, "%s%s: ", ind, k);
    put_str(f, v);
    fputc('\n', f);
}

/* 1 when a row of law form f (NULL: outside the catalogue) is one prof_load accepts. */
static int row_ok(const law_form_t *f, const double *v, int ncols)
{
    for (int j = 0; j < ncols; j++) {
        double lo, hi;
        int whole;
        col_range(f, j, ncols, &lo, &hi, &whole);
        if (!(v[j] >= lo && v[j] <= hi) || (whole && v[j] != floor(v[j])))
            return 0;
    }
    if (f && (f->family == LF_PREFILL || f->family == LF_DECODE_XQA || f->family == LF_DECODE_SCALAR ||
              f->family == LF_BRIDGE))
        return v[ATTN_COL_Q] <= v[ATTN_COL_SEQ_LEN] && !attn_spread_bad(f, v, ncols);
    return !f || f->family != LF_GDN || v[GDN_COL_SEQS] <= v[GDN_COL_TOKENS];
}

/* 1 when prof_load would read the law back: prof_save writes nothing it would refuse. */
static int law_savable(const prof_law_t *l)
{
    if (l->ncoef < 1 || l->ncoef > PROF_MAX_COEF || l->ncols < 0 || l->ncols > PROF_MAX_COLS ||
        l->npts < 0 || l->npts > PROF_MAX_POINTS || (l->npts && (!l->ncols || !l->pts)))
        return 0;
    for (int i = 0; i < l->ncoef; i++)
        if (!(l->coef[i] >= 0 && l->coef[i] <= MAX_COEF))
            return 0;
    const law_form_t *f = law_find(l->name);
    for (int i = 0; i < l->npts; i++)
        if (!row_ok(f, l->pts + (size_t)i * (size_t)l->ncols, l->ncols))
            return 0;
    int fitted = l->fit_median_rel >= 0 && l->fit_max_rel >= 0;
    if (fitted && !(l->fit_median_rel <= l->fit_max_rel && l->fit_max_rel <= MAX_REL))
        return 0;
    if (l->nkern < 0 || l->nkern > PROF_MAX_KERN || (l->nkern && (!l->kern || strcmp(l->name, "gemm"))))
        return 0;
    for (int i = 0; i < l->nkern; i++) {
        const double *v = l->kern + (size_t)i * PROF_KERN_COLS, *pv = i ? v - PROF_KERN_COLS : NULL;
        for (int j = 0; j < PROF_KERN_COLS; j++)
            if (!(v[j] >= 1 && v[j] <= (j == KERN_WB ? 8 : (double)PROF_MAX_DIM) && v[j] == floor(v[j])))
                return 0;
        if (kern_row_bad(v, pv))
            return 0;
    }
    return isfinite(l->fit_median_rel) && isfinite(l->fit_max_rel) && isfinite(l->hot) && isfinite(l->heat);
}

int prof_load(const char *path, profile_t *out, char err[PROF_ERR_MAX])
{
    return load_profile(path, out, err, 1);
}

int prof_load_any(const char *path, profile_t *out, char err[PROF_ERR_MAX])
{
    return load_profile(path, out, err, 0);
}

int prof_save(const char *path, const profile_t *p)
{
    double meta[] = {p->mem_gib, p->mem_bw_gbs, p->peak_fp16_tflops, p->calib_seconds,
                     p->sm_clock_mhz, p->clock_cold_mhz, p->clock_hot_mhz, p->tau_up_s, p->tau_down_s,
                     p->tau_up_runs_s, p->stamp_cold_mhz, p->stamp_hot_mhz, p->tau_up_runs_range_s[0],
                     p->tau_up_runs_range_s[1], p->tau_down_range_s[0], p->tau_down_range_s[1]};
    for (size_t i = 0; i < sizeof meta / sizeof meta[0]; i++)
        if (!isfinite(meta[i])) {
            errno = EDOM;
            return -1;
        }
    for (int i = 0; i < p->nlaws; i++)
        if (!law_savable(&p->laws[i])) {
            errno = EDOM;
            return -1;
        }
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    const char *in = "  ";
    fputs("# pacesim hardware profile (format: sim/profile.c)\nprofile:\n", f);
    put_kv_str(f, in, "gpu", p->gpu);
    fprintf(f, "  sms: %d\n", p->sms);
    fprintf(f, "  mem_gib: %.17g\n", p->mem_gib);
    fprintf(f, "  mem_bw_gbs: %.17g\n", p->mem_bw_gbs);
    fprintf(f, "  peak_fp16_tflops: %.17g\n", p->peak_fp16_tflops);
    fprintf(f, "  tp: %d\n", p->tp);
    put_kv_str(f, in, "model", p->model);
    put_kv_str(f, in, "toolkit", p->toolkit);
    put_kv_str(f, in, "driver", p->driver);
    put_kv_str(f, in, "date", p->date);
    put_kv_str(f, in, "revision", p->revision);
    put_kv_str(f, in, "method", p->method);
    fprintf(f, "  calib_seconds: %.17g\n", p->calib_seconds);
    fprintf(f, "  sm_clock_mhz: %.17g\n", p->sm_clock_mhz);
    if (p->has_sustained) {
        fprintf(f, "  sustained: {clock_cold_mhz: %.17g, clock_hot_mhz: %.17g, tau_up_s: %.17g, tau_down_s: %.17g",
                p->clock_cold_mhz, p->clock_hot_mhz, p->tau_up_s, p->tau_down_s);
        if (p->tau_up_runs_s > 0) fprintf(f, ", tau_up_runs_s: %.17g", p->tau_up_runs_s);
        if (p->tau_up_runs_range_s[1] > 0)
            fprintf(f, ", tau_up_runs_range_s: [%.17g, %.17g]", p->tau_up_runs_range_s[0], p->tau_up_runs_range_s[1]);
        if (p->tau_down_range_s[1] > 0)
            fprintf(f, ", tau_down_range_s: [%.17g, %.17g]", p->tau_down_range_s[0], p->tau_down_range_s[1]);
        if (p->stamp_cold_mhz > 0 && p->stamp_hot_mhz > 0)
            fprintf(f, ", stamp_cold_mhz: %.17g, stamp_hot_mhz: %.17g", p->stamp_cold_mhz, p->stamp_hot_mhz);
        if (p->ncurve) {
            fprintf(f, ",\n    curve: [");
            for (int i = 0; i < p->ncurve; i++)
                fprintf(f, "%s[%.6g, %.6g, %.6g]", i ? ", " : "", p->curve[i][0], p->curve[i][1], p->curve[i][2]);
            fprintf(f, "]");
        }
        if (p->has_chot)
            fprintf(f, ",\n    gemm_compute_hot: {m: %.17g, n: %.17g, k: %.17g, hot: %.17g}", p->chot[0], p->chot[1],
                    p->chot[2], p->chot[3]);
        if (p->has_ehot)
            fprintf(f, ",\n    elementwise_hot: {tokens: %.17g, hot: %.17g}", p->ehot[0], p->ehot[1]);
        if (p->ninter) {
            fprintf(f, ",\n    interleave: [");
            int duty = 0;   /* the duty column where a row has one (a profile without reads back as it was) */
            for (int i = 0; i < p->ninter; i++) duty |= p->inter[i][6] != 0;
            for (int i = 0; i < p->ninter; i++) {
                fprintf(f, "%s[%.6g, %.6g, %.6g, %.6g, %.6g, %.6g", i ? ", " : "", p->inter[i][0], p->inter[i][1],
                        p->inter[i][2], p->inter[i][3], p->inter[i][4], p->inter[i][5]);
                if (duty) fprintf(f, ", %.6g", p->inter[i][6]);
                fputc(']', f);
            }
            fprintf(f, "]");
        }
        if (p->ngprobe) {
            fprintf(f, ",\n    gemm_hot_probes: [");
            for (int i = 0; i < p->ngprobe; i++)
                fprintf(f, "%s[%.17g, %.17g, %.17g, %.17g, %.17g, %.17g]", i ? ", " : "", p->gprobe[i][0],
                        p->gprobe[i][1], p->gprobe[i][2], p->gprobe[i][3], p->gprobe[i][4], p->gprobe[i][5]);
            fprintf(f, "]");
        }
        fprintf(f, "}\n");
    }
    if (p->has_envelope)
        fprintf(f, "  envelope: {tp: %d, q_heads: %d, kv_heads: %d, head_dim: %d}\n", p->env_tp, p->env_q_heads,
                p->env_kv_heads, p->env_head_dim);
    if (p->expand_cta_tokens > 0 && p->expand_ctas_per_sm > 0)
        fprintf(f, "  fp8_expand: {cta_tokens: %d, ctas_per_sm: %d}\n", p->expand_cta_tokens, p->expand_ctas_per_sm);
    if (p->split_max > 0)
        fprintf(f, "  prefill_split: {max_parts: %d, min_tiles: %d, cost_tiles: %d, ctas_per_sm: %d}\n", p->split_max,
                p->split_min_tiles, p->split_cost_tiles, p->split_ctas_per_sm);
    fputs(p->nlaws ? "laws:\n" : "laws: []\n", f);
    for (int i = 0; i < p->nlaws; i++) {
        const prof_law_t *l = &p->laws[i];
        fputs("  - name: ", f);
        put_str(f, l->name);
        fputs("\n    coef: [", f);
        for (int j = 0; j < l->ncoef; j++)
            fprintf(f, "%s%.17g", j ? ", " : "", l->coef[j]);
        fputs("]\n", f);
        put_kv_str(f, "    ", "provenance", l->provenance);
        if (l->fit_median_rel >= 0 && l->fit_max_rel >= 0)
            fprintf(f, "    fit: {median_rel: %.17g, max_rel: %.17g}\n", l->fit_median_rel,
                    l->fit_max_rel);
        if (l->ncols) {
            fputs("    columns: [", f);
            for (int j = 0; j < l->ncols; j++) {
                fputs(j ? ", " : "", f);
                put_str(f, l->cols[j]);
            }
            fputs("]\n", f);
        }
        if (l->has_sustained)
            fprintf(f, "    sustained: {hot: %.17g, heat: %.17g}\n", l->hot, l->heat);
        if (l->npts) {
            fputs("    points:\n", f);
            for (int r = 0; r < l->npts; r++) {
                fputs("      - [", f);
                for (int j = 0; j < l->ncols; j++)
                    fprintf(f, "%s%.17g", j ? ", " : "", l->pts[(size_t)r * (size_t)l->ncols + (size_t)j]);
                fputs("]\n", f);
            }
        }
        if (l->nkern) {
            fputs("    kernels:\n", f);
            for (int r = 0; r < l->nkern; r++) {
                fputs("      - [", f);
                for (int j = 0; j < PROF_KERN_COLS; j++)
                    fprintf(f, "%s%.17g", j ? ", " : "", l->kern[(size_t)r * PROF_KERN_COLS + (size_t)j]);
                fputs("]\n", f);
            }
        }
    }
    int bad = ferror(f);
    if (fclose(f) || bad) {
        if (!errno)
            errno = EIO;
        return -1;
    }
    return 0;
}

void prof_free(profile_t *p)
{
    if (!p)
        return;
    for (int i = 0; i < p->nlaws; i++) {
        free(p->laws[i].pts);
        free(p->laws[i].kern);
    }
    free(p->laws);
    memset(p, 0, sizeof *p);
}

void prof_law_init(prof_law_t *l, const law_form_t *f)
{
    memset(l, 0, sizeof *l);
    snprintf(l->name, sizeof l->name, "%s", f->name);
    l->ncoef = f->ncoef;
    l->ncols = f->ncols;
    for (int c = 0; c < f->ncols; c++)
        snprintf(l->cols[c], sizeof l->cols[c], "%s", f->cols[c]);
    l->fit_median_rel = l->fit_max_rel = -1;
}

double prof_tau_up(const profile_t *p)
{
    return p->tau_up_runs_s > 0 ? p->tau_up_runs_s : p->tau_up_s;
}

const prof_law_t *prof_find(const profile_t *p, const char *name)
{
    for (int i = 0; p && i < p->nlaws; i++)
        if (!strcmp(p->laws[i].name, name))
            return &p->laws[i];
    return NULL;
}

int prof_put(profile_t *p, const prof_law_t *law)
{
    double *pts = NULL, *kern = NULL;
    size_t n = (size_t)(law->npts > 0 ? law->npts : 0) * (size_t)(law->ncols > 0 ? law->ncols : 0);
    size_t nk = (size_t)(law->nkern > 0 ? law->nkern : 0) * PROF_KERN_COLS;
    if (n) {
        pts = malloc(n * sizeof *pts);
        if (!pts)
            return -1;
        memcpy(pts, law->pts, n * sizeof *pts);
    }
    if (nk) {
        kern = malloc(nk * sizeof *kern);
        if (!kern) {
            free(pts);
            return -1;
        }
        memcpy(kern, law->kern, nk * sizeof *kern);
    }
    prof_law_t *slot = (prof_law_t *)prof_find(p, law->name);
    if (!slot) {
        prof_law_t *nl = realloc(p->laws, (size_t)(p->nlaws + 1) * sizeof *nl);
        if (!nl) {
            free(pts);
            free(kern);
            return -1;
        }
        p->laws = nl;
        slot = &p->laws[p->nlaws++];
    } else {
        free(slot->pts);
        free(slot->kern);
    }
    *slot = *law;
    slot->pts = pts;
    slot->kern = kern;
    if (!n)
        slot->npts = 0;
    if (!nk)
        slot->nkern = 0;
    return 0;
}

/* 1 when law l (gemm) has a point of shape (n, k). */
static int gemm_measured(const prof_law_t *l, long n, long k)
{
    for (int i = 0; l && l->ncols > GEMM_COL_K && i < l->npts; i++) {
        const double *row = l->pts + (size_t)i * (size_t)l->ncols;
        if (row[GEMM_COL_N] == (double)n && row[GEMM_COL_K] == (double)k) return 1;
    }
    return 0;
}

int prof_check_model(const profile_t *p, const model_t *m, int tp, FILE *warn)
{
    if (!p->model[0] || (!strcmp(p->model, m->name) && p->tp == tp)) return 0;
    model_rank_t r;
    const prof_law_t *g = prof_find(p, "gemm");
    int same = g && g->npts > 0 && model_rank(m, tp, &r) == 0;
    if (same) {
        long h = m->hidden;
        long shapes[][2] = { { r.attn_qkv_n, h }, { h, r.attn_o_k }, { r.mlp_up_n, h }, { h, r.mlp_down_k },
                             { r.vocab_n, h }, { r.gdn_in_n, h }, { h, r.gdn_out_k }, { h, 2 * h } };
        int n = 5 + (m->n_gdn > 0 ? 2 : 0);
        if (m->mtp_layers > 0) {
            shapes[n][0] = h;         /* the MTP layer's eh_proj */
            shapes[n][1] = 2 * h;
            n++;
        }
        for (int i = 0; i < n && same; i++) same = gemm_measured(g, shapes[i][0], shapes[i][1]);
    }
    if (same) return 0;
    if (warn) fprintf(warn, "warning: %s: profile measured %s at TP %d; this scenario runs %s at TP %d: attention and GEMM "
            "items are priced by the laws outside their measured shapes\n", p->path, p->model, p->tp, m->name, tp);
    return 1;
}

double prof_eval(const prof_law_t *l, const double *feat)
{
    const law_form_t *f = law_find(l->name);
    int a = f ? f->roof_a : -1, b = f ? f->roof_b : -1, ka = f ? f->knee_a : -1, kb = f ? f->knee_b : -1;
    if (b >= l->ncoef)
        a = b = -1;
    double t = 0;
    for (int i = 0; i < l->ncoef; i++)
        if (i != a && i != b && i != ka && i != kb)
            t += l->coef[i] * feat[i];
    if (a >= 0)
        t += fmax(l->coef[a] * feat[a], l->coef[b] * feat[b]);
    if (ka >= 0 && kb < l->ncoef && feat[kb] > l->coef[kb]) /* no knee coefficient: no term */
        t += l->coef[ka] * feat[ka];
    return t;
}

int prof_law_range(const prof_law_t *l, double lo[PROF_MAX_COLS], double hi[PROF_MAX_COLS])
{
    const law_form_t *f = law_find(l->name);
    int nk = f ? law_shape_cols(f, l->ncols) : l->ncols - 1;
    if (l->npts < 1 || nk < 1) return 0;
    for (int c = 0; c < nk; c++) lo[c] = hi[c] = l->pts[c];
    for (int i = 1; i < l->npts; i++)
        for (int c = 0; c < nk; c++) {
            double v = l->pts[(size_t)i * (size_t)l->ncols + (size_t)c];
            if (v < lo[c]) lo[c] = v;
            if (v > hi[c]) hi[c] = v;
        }
    return nk;
}

void prof_envelope_print(FILE *f, const profile_t *p)
{
    if (!p->has_envelope) {
        fprintf(f, "   envelope: not recorded (prices are not checked against one)\n");
        return;
    }
    fprintf(f, "   envelope: TP%d, per rank %d q heads, %d kv heads, head_dim %d; per law, its points' ranges:\n",
            p->env_tp, p->env_q_heads, p->env_kv_heads, p->env_head_dim);
    for (int k = 0; k < p->nlaws; k++) {
        const prof_law_t *l = &p->laws[k];
        double lo[PROF_MAX_COLS], hi[PROF_MAX_COLS];
        int nk = prof_law_range(l, lo, hi);
        if (!nk) continue;
        fprintf(f, "   %-28s", l->name);
        for (int c = 0; c < nk; c++) fprintf(f, " %s %g..%g", l->cols[c], lo[c], hi[c]);
        fprintf(f, "\n");
        if (l->nkern)
            fprintf(f, "   %-28s cuBLAS's kernel recorded at every m of its shapes: %d ranges\n", "", l->nkern);
    }
}
