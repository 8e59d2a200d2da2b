/* cost_feat.c: the feature functions that give every law of the catalogue (law.h) its
 * meaning, for a profile point (cost_point_features_n) and for a step's item
 * (cost_item_features).
 *
 * Invariant: calib's fit and the simulator's prices call these same functions, so a
 * fitted coefficient means one thing everywhere; a point and an item of one shape get the
 * same features; a feature that needs a hardware fact the profile does not record (cost_hw_t
 * field 0) is 0, so its coefficient is never fitted.  A profile whose law has fewer
 * coefficients than its form (prof_eval stops at ncoef) prices without the later terms:
 * each family's features are listed so that every such prefix is a complete law. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cost.h"
#include "law.h"
#include "../kernels/attn_split.h"

/* Attention features, per kernel call (rows are (q, seq_len); H = q heads per rank,
 * Hkv = kv heads per rank):
 *  prefill kernels (tile BM x BN): a row's M-tile i covers queries up to
 *    min(q, (i+1)BM) and so walks kv_len_i = (seq_len - q) + min(q, (i+1)BM) keys in
 *    ceil(kv_len_i / BN) tiles; each M-tile is one CTA per q head.
 *      PREFILL_TILES_TOTAL = H * sum_rows sum_i ceil(kv_len_i/BN)  (throughput term)
 *      PREFILL_TILES_MAX   = max over CTAs of its tiles            (critical path: a q=1
 *                                                                   row is one CTA walking it all)
 *      PREFILL_CTAS        = H * sum_rows ceil(q/BM)
 *      PREFILL_QUEUE_TILES = the busiest SM's tiles, the CTAs dispatched in launch order to
 *                            the SM that frees first, less tiles_max: what the critical path
 *                            waits behind (prefill_sched; 0 while the CTAs fit the SMs); a
 *                            profile whose prefill laws have 4 coefficients has no queue term
 *      PREFILL_TILES_TOTAL_NARROW, PREFILL_TILES_MAX_NARROW = tiles_total, tiles_max (before
 *                            the head-size scale below) x (1 - head_dim / 256): what a
 *                            narrower head keeps of a tile's cost; 0 at head_dim 256
 *    The fast path (attn.prefill_bm32) splits each CTA's walk in parts where its CTAs
 *    would leave SMs idle (kernels/attn_split.h's rule, with the profile's prefill_split
 *    constants and CTAs an SM): tiles_total stays, ctas counts the parts, tiles_max is the
 *    longest part's, queue_tiles schedules the parts; a profile without prefill_split
 *    prices an unsplit kernel.
 *  decode kernels (XQA, scalar), split-K: partition P = 256 tokens (1024 when
 *    seq_len >= 32768), a CTA per (row, head, partition), then a reduce kernel whose CTA
 *    walks every partition of its row; O = the CTAs an SM holds (XQA 2, scalar 3: law.c),
 *    S = the GPU's SMs:
 *      DECODE_KV_TOKENS       = sum_rows seq_len * Hkv (XQA: a CTA serves its whole GQA
 *                               group) or * H (scalar: every q head re-reads)
 *      DECODE_PART_TOKENS_MAX = min(P, longest seq_len)
 *      DECODE_CTAS            = sum_rows ceil(seq_len/P) * (Hkv or H)
 *      DECODE_KV_UNIQUE       = the same over requests' longest rows: the rows of a small-q
 *                               row expanded token-wise read the same pages (L2 serves repeats)
 *      DECODE_WAVE_TOKENS     = ceil(ctas / (S O)) * part_tokens_max (each wave streams a partition)
 *      DECODE_REDUCE_DEPTH    = max_rows ceil(seq_len/P)
 *      DECODE_SM_TOKENS       = ceil(ctas / S) * part_tokens_max (the busiest SM's partitions)
 *      DECODE_LONE_TOKENS     = XQA only: part_tokens_max where the busiest SM holds an odd
 *                               number > 1 of CTAs
 *      DECODE_WAVE_NARROW     = wave_tokens (unscaled) x (1 - head_dim / 256); 0 at 256
 *  fp8 bridge: BRIDGE_EXPANDED = sum_rows seq_len * Hkv; BRIDGE_PAGE_WALK = ceil(ctas / (S O))
 *    * min(T, longest seq_len) * Hkv, ctas = sum_rows ceil(seq_len / T), T tokens a CTA and
 *    O CTAs an SM from the profile's fp8_expand (784 and 8 where it records none); the law is
 *    c0 + c1 expanded + max(c2 page_walk, c3 expanded) + c4 expanded [sm_ctas > c5], where
 *    BRIDGE_SM_CTAS = ceil(min(ctas, S O) / S), the expansion CTAs the busiest SM holds at
 *    once, and c5 is a knee fitted by scan (cost_law_knee): past it every token costs c4 more.
 * GEMM, GDN and elementwise features are defined with their functions below. */

/* The catalogue's attention families (their kernels' tiles and occupancy: law.h). */
static int attn_family(const law_form_t *f)
{
    return f && (f->family == LF_PREFILL || f->family == LF_DECODE_XQA || f->family == LF_DECODE_SCALAR ||
                 f->family == LF_BRIDGE);
}

int cost_law_ncoef(const char *law)
{
    return law_ncoef(law);
}

int cost_law_roof(const char *law, int *a, int *b)
{
    const law_form_t *f = law_find(law);
    if (!f || f->roof_a < 0) return 0;
    *a = f->roof_a;
    *b = f->roof_b;
    return 1;
}

int cost_law_knee(const char *law, int *a, int *b)
{
    const law_form_t *f = law_find(law);
    if (!f || f->knee_a < 0) return 0;
    *a = f->knee_a;
    *b = f->knee_b;
    return 1;
}

cost_hw_t cost_hw_of(const profile_t *p)
{
    cost_hw_t hw = { 0 };
    if (p) {
        hw.sms = p->sms;
        hw.flops = p->peak_fp16_tflops * 1e12;
        hw.bw = p->mem_bw_gbs * 1e9;
        hw.expand_tokens = p->expand_cta_tokens;
        hw.expand_occ = p->expand_ctas_per_sm;
        hw.split_max = p->split_max;
        hw.split_min_tiles = p->split_min_tiles;
        hw.split_cost_tiles = p->split_cost_tiles;
        hw.split_occ = p->split_ctas_per_sm;
    }
    return hw;
}

static long cdiv(long a, long b) { return (a + b - 1) / b; }

/* Waves of ctas CTAs on the GPU, occ per SM; 0 when the SM count is unknown. */
static double waves(double ctas, int occ, const cost_hw_t *hw)
{
    return hw && hw->sms > 0 ? ceil(ctas / ((double)hw->sms * occ)) : 0;
}

/* The tiles a prefill call's critical path waits behind other CTAs: the busiest SM's tiles
 * when the CTAs go out in launch order to whichever SM frees first (list scheduling on S
 * SMs, a CTA's time its tiles), less the longest CTA's own (tiles_max, a term of its own).
 * kernels/attn_prefill.cu launches grid (M-tiles, parts, rows x heads): a row's heads one
 * after another, each its parts (the fast path's split walk; else 1), each its M-tiles
 * in order.  The kernels are SM-bound (kernels/NOTES.md: a second co-resident CTA adds
 * 1.18x, not 2x), so an SM's CTAs add up; with more CTAs than
 * SMs the last SM to finish sets the time, and causal rows give CTAs of unlike length (a
 * q = 1568 row's M-tiles walk 39..51 tiles at 6.5K context), which whole rounds of the
 * longest CTA overstate.  0 when every CTA has an SM of its own, or the SMs are unknown. */
#define SCHED_MAX_CTAS (1L << 20)   /* CTAs list-scheduled one by one; past them, the bound */

static double prefill_sched(int bm, int bn, int parts, const kseg_t *segs, int nseg, long rows_mult, double heads,
                            const cost_hw_t *hw, double ctas, double mx, double tiles)
{
    if (!hw || hw->sms <= 0 || ctas <= hw->sms) return 0;
    /* more CTAs than the schedule walks one by one (a call of over a million CTAs: no
     * reference shape comes near): list scheduling's bound, the mean SM's tiles plus the
     * longest CTA's, or whole rounds of the longest, whichever is less */
    if (ctas > SCHED_MAX_CTAS)
        return fmin(tiles / hw->sms + (1 - 1.0 / hw->sms) * mx, ceil(ctas / hw->sms) * mx) - mx;
    double stack[1024], *sm = hw->sms <= 1024 ? stack : calloc((size_t)hw->sms, sizeof *sm);
    if (!sm) return (ceil(ctas / hw->sms) - 1) * mx;     /* out of memory: whole rounds of the longest */
    int n = hw->sms;
    for (int i = 0; i < n; i++) sm[i] = 0;
    for (long rm = 0; rm < rows_mult; rm++)
        for (int s = 0; s < nseg; s++)
            for (int h = 0; h < (int)heads; h++)
            for (int part = 0; part < parts; part++) {
                long prefix = segs[s].seq_len - segs[s].q, mt = cdiv(segs[s].q, bm);
                for (long i = 0; i < mt; i++) {
                    long last = (i + 1) * bm < segs[s].q ? (i + 1) * bm : segs[s].q;
                    long t = (long)attn_split_part_tiles(cdiv(prefix + last, bn), parts, part);
                    if (t == 0)
                        continue;   /* an empty part: it writes its partial and is gone */
                    /* the SM that frees first (the heap's root) takes the next CTA */
                    double v = sm[0] + (double)t;
                    int k = 0;
                    for (;;) {
                        int c = 2 * k + 1;
                        if (c >= n) break;
                        if (c + 1 < n && sm[c + 1] < sm[c]) c++;
                        if (sm[c] >= v) break;
                        sm[k] = sm[c];
                        k = c;
                    }
                    sm[k] = v;
                }
            }
    double busiest = 0;
    for (int i = 0; i < n; i++) busiest = fmax(busiest, sm[i]);
    if (sm != stack) free(sm);
    return busiest - mx;
}

/* A row's M-tiles: tile j < mt walks prefix + j BM keys, the last one prefix + q (the
 * longest).  With BN = r BM (every kernel of the catalogue), ceil((prefix + j BM) / BN)
 * rises by exactly 1 from j to j + r, so the sum over j takes r terms, not q / BM. */
static void prefill_row(int bm, int bn, int q, long seq_len, double *tot, double *mx, double *ctas)
{
    long prefix = seq_len - q, mt = cdiv(q, bm), n = mt - 1, last = cdiv(prefix + q, bn);
    long long sum = last;
    if (bn % bm == 0) {
        long r = bn / bm, full = n / r, rem = n % r;
        for (long t = 1; t <= r; t++) {
            long long c = cdiv(prefix + t * bm, bn);
            sum += full * c + (t <= rem ? c + full : 0);
        }
        sum += (long long)r * full * (full - 1) / 2;
    } else {
        for (long j = 1; j <= n; j++) sum += cdiv(prefix + j * bm, bn);
    }
    *tot += (double)sum;
    if ((double)last > *mx) *mx = (double)last;
    *ctas += (double)mt;
}

/* The fp8 bridge's expansion runs a 256-thread CTA per expand_tokens tokens of a 784-token
 * destination page, each covering every kv head, expand_occ per SM: the profile's
 * fp8_expand (kernels/attn.h ATTN_BRIDGE_*: 98, 8); a profile without fp8_expand prices a
 * kernel of one CTA per page, 8 per SM. */
#define BRIDGE_PAGE_TOKENS 784
static int expand_tokens(const cost_hw_t *hw) { return hw && hw->expand_tokens > 0 ? hw->expand_tokens : BRIDGE_PAGE_TOKENS; }

/* The parts the fast prefill kernel splits its CTAs' walk into (kernels/attn_split.h, with
 * the constants and occupancy its profile recorded); 1 for the other kernels and for profiles
 * without prefill_split (their kernel does not split) */
static int prefill_parts(int split, double ctas, double mx, const cost_hw_t *hw)
{
    if (!split || !hw || hw->split_max <= 0 || hw->sms <= 0)
        return 1;
    return attn_split_parts_with((long long)ctas, (long long)mx, hw->sms, hw->split_occ, hw->split_max,
                                 hw->split_min_tiles, hw->split_cost_tiles);
}

/* prefill: every CTA's tiles, the longest, the CTAs, and the queue behind the longest */
static void prefill_features(const law_form_t *f, const kseg_t *segs, int nseg, long rows_mult, double heads,
                             const cost_hw_t *hw, double *feat)
{
    double tot = 0, mx = 0, ctas = 0, rm = (double)rows_mult;
    for (int i = 0; i < nseg; i++) prefill_row(f->tile_m, f->tile_n, segs[i].q, segs[i].seq_len, &tot, &mx, &ctas);
    feat[PREFILL_TILES_TOTAL] = tot * heads * rm;
    /* split in parts: the same tiles, parts x the CTAs, the longest walk a part's */
    double c = ctas * heads * rm;
    int parts = prefill_parts(f->splits, c, mx, hw);
    feat[PREFILL_TILES_MAX] = (double)attn_split_part_tiles((long long)mx, parts, 0);
    feat[PREFILL_CTAS] = c * parts;
    feat[PREFILL_QUEUE_TILES] = prefill_sched(f->tile_m, f->tile_n, parts, segs, nseg, rows_mult, heads, hw,
                                              feat[PREFILL_CTAS], feat[PREFILL_TILES_MAX], feat[PREFILL_TILES_TOTAL]);
}

/* decode: partitions of P tokens, a CTA each, then a reduce kernel whose CTA walks every
 * partition of its row */
static void decode_features(const law_form_t *f, const kseg_t *segs, int nseg, long rows_mult, double heads,
                            const cost_hw_t *hw, double *feat)
{
    double tot = 0, mx = 0, ctas = 0, uniq = 0, depth = 0, run = 0, rm = (double)rows_mult;
    for (int i = 0; i < nseg; i++) {
        long L = segs[i].seq_len, P = L >= 32768 ? 1024 : 256;
        tot += (double)L;
        ctas += (double)cdiv(L, P);
        double pm = (double)(L < P ? L : P);
        if (pm > mx) mx = pm;
        if ((double)cdiv(L, P) > depth) depth = (double)cdiv(L, P);
        /* a request's rows (a small-q row expanded token-wise, consecutive in the call)
         * read the same pages: its longest row counts once (req < 0: a row of its own) */
        if (i > 0 && segs[i].req >= 0 && segs[i].req == segs[i - 1].req) {
            if ((double)L > run) {
                uniq += (double)L - run;
                run = (double)L;
            }
        } else {
            uniq += (double)L;
            run = (double)L;
        }
    }
    double c = ctas * heads * rm;
    feat[DECODE_KV_TOKENS] = tot * heads * rm;
    feat[DECODE_PART_TOKENS_MAX] = mx;
    feat[DECODE_CTAS] = c;
    feat[DECODE_KV_UNIQUE] = uniq * heads * rm;          /* KV read from memory, repeats from L2 */
    feat[DECODE_WAVE_TOKENS] = waves(c, f->ctas_per_sm, hw) * mx; /* each wave of CTAs streams a partition */
    feat[DECODE_REDUCE_DEPTH] = depth;                   /* the reduce's partitions per row */
    feat[DECODE_SM_TOKENS] = waves(c, 1, hw) * mx;       /* the busiest SM's partitions (co-resident
                                                            CTAs share its issue and load slots) */
    /* XQA (2 CTAs an SM): an odd number of them (3, 5, ...) on the busiest SM leaves its
     * last one alone, with no second CTA to hide its loads behind.  Without this term the
     * H200's shapes with 3 on the busiest SM are under-priced by 7-10% (the law's largest
     * errors, fp16 and fp8); with it fp16's maximum is 7.2-8.8% (calib/README.md).  A
     * profile whose decode law has 8 coefficients has no such term. */
    if (f->family == LF_DECODE_XQA) {
        double w1 = waves(c, 1, hw);
        feat[DECODE_LONE_TOKENS] = w1 > 1 && fmod(w1, 2) == 1 ? mx : 0;
    }
}

/* the fp8 bridge's expansion: every token, a CTA's walk, and the CTAs an SM holds */
static void bridge_features(const law_form_t *f, const kseg_t *segs, int nseg, long rows_mult, double heads,
                            const cost_hw_t *hw, double *feat)
{
    double tot = 0, ctas = 0, rm = (double)rows_mult;
    long maxlen = 0;
    for (int i = 0; i < nseg; i++) {
        long L = segs[i].seq_len;
        if (L > maxlen) maxlen = L;
        tot += (double)L;
        ctas += (double)cdiv(L, expand_tokens(hw));
    }
    feat[BRIDGE_EXPANDED] = tot * heads * rm;
    /* the roofline pair: a CTA's walk over its tokens (latency-bound, one wave of CTAs
     * per step of it) against the bytes every CTA moves together */
    int et = expand_tokens(hw), eo = hw && hw->expand_occ > 0 ? hw->expand_occ : f->ctas_per_sm;
    double w = hw && hw->sms > 0 ? waves(ctas * rm, eo, hw) : 1;
    feat[BRIDGE_PAGE_WALK] = w * (double)(maxlen < et ? maxlen : et) * heads;
    feat[BRIDGE_EXPANDED_BW] = feat[BRIDGE_EXPANDED];
    /* the knee: every token again, priced only where the busiest SM holds more of the
     * expansion's CTAs at once (its first wave) than the fitted threshold coef[BRIDGE_SM_CTAS];
     * the kernel streams at ~3.4 TB/s with up to 3 CTAs an SM and ~2.6 TB/s from 4
     * (calib/README.md) */
    feat[BRIDGE_EXPANDED_KNEE] = feat[BRIDGE_EXPANDED];
    feat[BRIDGE_SM_CTAS] = hw && hw->sms > 0 ? ceil(fmin(ctas * rm, (double)hw->sms * eo) / hw->sms) : 0;
}

/* The head size the attention features count their tokens and tiles in: a token or tile of
 * a head_dim D head is D / ATTN_FEAT_HEAD_DIM of one (its bytes and FLOPs are D-wide), so a law
 * fitted on the reference model's 256-wide heads prices a 64- or 128-wide model's calls by what
 * they move and compute.  CTAs, the reduce's depth and the knee's CTAs an SM are counts, not
 * scaled.  (At head_dim 256 nothing is scaled: a reference model's features are as before.) */
#define ATTN_FEAT_HEAD_DIM 256

static void head_dim_scale(const law_form_t *f, int head_dim, double feat[PROF_MAX_COEF])
{
    if (head_dim <= 0 || head_dim == ATTN_FEAT_HEAD_DIM) return;
    double d = (double)head_dim / ATTN_FEAT_HEAD_DIM;
    static const int prefill_w[] = { PREFILL_TILES_TOTAL, PREFILL_TILES_MAX, PREFILL_QUEUE_TILES };
    static const int decode_w[] = { DECODE_KV_TOKENS, DECODE_PART_TOKENS_MAX, DECODE_KV_UNIQUE, DECODE_WAVE_TOKENS,
                                    DECODE_SM_TOKENS, DECODE_LONE_TOKENS };
    static const int bridge_w[] = { BRIDGE_EXPANDED, BRIDGE_PAGE_WALK, BRIDGE_EXPANDED_BW, BRIDGE_EXPANDED_KNEE };
    const int *w = decode_w;
    int n = (int)(sizeof decode_w / sizeof *decode_w);
    if (f->family == LF_PREFILL) {
        /* a tile's softmax and loop do not shrink with the head: what a narrower head keeps of
         * an unscaled tile, 0 on 256-wide points, so a law learns it only from points of two
         * head sizes (fit.h: an all-zero feature gets coefficient 0) */
        feat[PREFILL_TILES_TOTAL_NARROW] = feat[PREFILL_TILES_TOTAL] * (1 - d);
        feat[PREFILL_TILES_MAX_NARROW] = feat[PREFILL_TILES_MAX] * (1 - d);
        w = prefill_w;
        n = (int)(sizeof prefill_w / sizeof *prefill_w);
    } else if (f->family == LF_DECODE_XQA || f->family == LF_DECODE_SCALAR) {
        feat[DECODE_WAVE_NARROW] = feat[DECODE_WAVE_TOKENS] * (1 - d);
    } else if (f->family == LF_BRIDGE) {
        w = bridge_w;
        n = (int)(sizeof bridge_w / sizeof *bridge_w);
    }
    for (int i = 0; i < n; i++) feat[w[i]] *= d;
}

/* An attention law's features for rows segs (x rows_mult identical copies); head_dim 0 =
 * the reference width (nothing scaled). */
static void attn_features(const law_form_t *f, const kseg_t *segs, int nseg, long rows_mult, const model_rank_t *r,
                          int head_dim, const cost_hw_t *hw, double feat[PROF_MAX_COEF])
{
    for (int s = 0; s < PROF_MAX_COEF; s++) feat[s] = 0;
    feat[FEAT_ONE] = 1;
    double heads = f->family == LF_PREFILL || f->family == LF_DECODE_SCALAR ? r->q_heads : r->kv_heads;
    switch (f->family) {
    case LF_PREFILL: prefill_features(f, segs, nseg, rows_mult, heads, hw, feat); break;
    case LF_BRIDGE: bridge_features(f, segs, nseg, rows_mult, heads, hw, feat); break;
    default: decode_features(f, segs, nseg, rows_mult, heads, hw, feat); break;
    }
    head_dim_scale(f, head_dim, feat);
}

static int varlen_call_features(const law_form_t *f, const kcall_t *call, const model_t *m, const model_rank_t *r,
                                const cost_hw_t *hw, double feat[PROF_MAX_COEF]);

int cost_attn_features(const char *law, const kcall_t *call, const model_t *m,
                       const model_rank_t *r, const cost_hw_t *hw, double feat[PROF_MAX_COEF])
{
    const law_form_t *f = law_find(law);
    if (f && f->family == LF_VARLEN) return varlen_call_features(f, call, m, r, hw, feat);
    if (!attn_family(f)) return -1;
    attn_features(f, call->segs, call->nseg, 1, r, m ? m->head_dim : 0, hw, feat);
    return 0;
}

/* gemm: cuBLAS runs either weight-streaming (small m) or tensor-core bound (large m);
 * GEMM_ROOFLINE is the larger of the two times at the GPU's measured ceilings, and
 * GEMM_FLOPS / GEMM_BYTES add what the two do not overlap.
 * The features from GEMM_SPLIT on price the kernel cuBLAS picks, from pick, a point row
 * that records it (tile_n, tile_m, splits: calib records the cuBLASLt heuristic that
 * cublasGemmEx consults with every point; NULL or tile_n 0: unknown, those terms 0).
 * cuBLAS's choice is what makes time fall as m grows: at (n, k) = (5120, 6144) m = 64
 * takes a 96x64 tile split 2 ways over k and m = 96 a 128x96 tile split 3 ways, 24.6 and
 * 26.2 us, where m = 48 (64x48, whole k) takes 20.1 and m = 128 (96x64, whole k) 21.8 --
 * no law rising with m gets within 11% of both (calib/README.md).
 *   GEMM_SPLIT: 1 when the kernel splits k (its partial sums are reduced after it);
 *   GEMM_TILE_ROOFLINE: the busiest SM's padded tile FLOPs (a CTA an SM, the tiles in
 *     rounds) against the bytes at the copy ceiling;
 *   GEMM_PARTIAL_BYTES: the fp32 partial sums a split writes and the reduction reads;
 *   GEMM_WEIGHT_STREAM: the weight bytes once per column of tiles along m (each re-streams
 *     its rows of W);
 *   GEMM_TILE_ROOFLINE_128: GEMM_TILE_ROOFLINE with the tile at least 128 wide along m:
 *     Hopper's tensor cores (wgmma, N = the tile's m side) reach their rate from N = 128,
 *     and a narrower tile takes about as long as a 128-wide one (on the H200 the MLP up
 *     projection at m = 192, a 448x64 tile in two rounds, takes 129-132 us where
 *     GEMM_TILE_ROOFLINE alone prices 114-121; with the term the law's maximum error there
 *     is 5.0-7.8%, not 8.8-11.3%, the medians alike).
 * A profile whose gemm law has 4 coefficients prices with the first four alone. */
static void gemm_features(double mm, double n, double k, double wb, const double *pick, const cost_hw_t *hw,
                          double *feat)
{
    feat[GEMM_FLOPS] = 2.0 * mm * n * k;
    feat[GEMM_BYTES] = cost_gemm_bytes(mm, n, k, wb);
    feat[GEMM_ROOFLINE] = hw && hw->flops > 0 && hw->bw > 0
                          ? fmax(feat[GEMM_FLOPS] / hw->flops, feat[GEMM_BYTES] / hw->bw) : 0;
    if (!pick) return;
    double tn = pick[GEMM_COL_TILE_N], tm = pick[GEMM_COL_TILE_M], s = pick[GEMM_COL_SPLITS];
    if (!(tn > 0 && tm > 0 && s >= 1)) return;
    double mt = ceil(mm / tm);
    feat[GEMM_SPLIT] = s > 1 ? 1 : 0;
    if (hw && hw->sms > 0 && hw->flops > 0 && hw->bw > 0) {
        double ctas = ceil(n / tn) * mt * s, rounds = ceil(ctas / hw->sms), copy = feat[GEMM_BYTES] / hw->bw;
        feat[GEMM_TILE_ROOFLINE] = fmax(rounds * 2.0 * tn * tm * (k / s) / (hw->flops / hw->sms), copy);
        feat[GEMM_TILE_ROOFLINE_128] = fmax(rounds * 2.0 * tn * fmax(tm, 128) * (k / s) / (hw->flops / hw->sms), copy);
    }
    feat[GEMM_PARTIAL_BYTES] = s > 1 ? 4.0 * mm * n * s : 0;
    feat[GEMM_WEIGHT_STREAM] = wb * n * k * mt;
}

/* gdn (calib's proxy, calib/calib_gpu.cu): a conv kernel over every token, then the
 * recurrence, a CTA per (16 value columns, value head, sequence) walking its sequence's
 * tokens in order, 16 staged per chunk; 8 such CTAs fit an SM (64 registers x 128
 * threads).  The longest row is tokens - (seqs - 1): one prompt chunk next to one-token
 * rows, a mixed step's shape and calib's grid.  The one-token rows' CTAs (a state load
 * and store each) run in the slots the long row's CTAs leave, in waves.  Roofline pair:
 * the long row's walk against the throughput of every token. */
static void gdn_features(double tokens, double seqs, const model_t *m, const model_rank_t *r, const cost_hw_t *hw,
                         double *feat)
{
    double lng = fmax(tokens - (seqs > 1 ? seqs - 1 : 0), 1);
    double per_seq = ceil(m->gdn_head_dim_v / 16.0) * r->gdn_v_heads, slots = 0;
    if (hw && hw->sms > 0) {
        slots = 8.0 * hw->sms - per_seq;
        if (slots < per_seq) slots = 8.0 * hw->sms;
    }
    feat[GDN_TOKENS] = tokens;
    feat[GDN_SEQS] = seqs;
    feat[GDN_CHUNKS] = ceil(lng / 16);                   /* chunk stagings on the critical path */
    feat[GDN_SHORT_WAVES] = slots > 0 && seqs > 1 ? ceil((seqs - 1) * per_seq / slots) : 0;
    feat[GDN_LONG_ROW] = lng;
    feat[GDN_TOKENS_BW] = tokens;
}

/* elementwise (calib's proxy): two RMSNorms, a 256-thread CTA per token, then SiLU-mul
 * over the MLP width, a thread per two elements in at most 4096 CTAs (grid-stride); 8
 * such CTAs fit an SM.  Launch-bound below a few hundred tokens: the waves carry it.
 * ELEM_SILU_SECOND_WAVE: 1 once the SiLU grid needs a second wave.  The H200 takes a step
 * there that the waves do not price: 16 -> 32 tokens (544 -> 1088 CTAs, 1056 a wave)
 * +4.1..5.0 us, 32 -> 64 (three waves, twice the elements) +1.2..1.9 us; without the term
 * the 32-token point misses its law by 10.5..12.9% in every H200 profile (calib/README.md).
 * A profile whose elementwise law has 4 coefficients has no such term. */
static void elem_features(double tokens, const model_rank_t *r, const cost_hw_t *hw, double *feat)
{
    double silu = fmin(ceil(tokens * (double)(r->mlp_down_k / 2) / 256), 4096);
    feat[ELEM_TOKENS] = tokens;
    feat[ELEM_NORM_WAVES] = waves(tokens, 8, hw);
    feat[ELEM_SILU_WAVES] = waves(silu, 8, hw);
    feat[ELEM_SILU_SECOND_WAVE] = feat[ELEM_SILU_WAVES] > 1 ? 1 : 0;
}

/* ---- attn.varlen.fp16 and gemm.moe.fp16 (law.h) ----------------------------------------- */

/* varlen (kernels/attn_varlen.cu): a row of q new tokens at seq_len is ceil(q x group / BM)
 * M-tiles (BM query rows = (token, q head of the group) pairs, token-major: BM = 32 for
 * head_dim 256, else 64), each a CTA per kv head walking keys 0 .. its last token's position,
 * ceil(keys / BN) tiles.  The launch starts its CTAs longest walk first, each on the least
 * loaded of sms x occ slots (slot i on SM i % sms, ties to the lower slot: the first CTAs
 * spread over the SMs), an SM's tiles the sum of its slots' -- the placement
 * attn_varlen_count makes (kernels/attn.h).
 *   VARLEN_TILES_TOTAL  every CTA's tiles (throughput: KV streamed, MMAs)
 *   VARLEN_TILES_MAX    the longest walk (a decode row at a long context is one CTA a kv head)
 *   VARLEN_CTAS         M-tiles x kv heads (each loads its Q tile and writes its rows)
 *   VARLEN_SM_TILES     the busiest SM's tiles (0 where the profile records no SMs)
 *   VARLEN_SLOT_TILES   the busiest slot's tiles (0 likewise): a slot's CTAs run one after
 *                       another at the latency of a lone walk, while the SM's co-resident CTAs
 *                       share its throughput (SM_TILES); a profile of five coefficients prices
 *                       without it */
typedef struct { long q, seq_len, count; } varlen_rows_t;

static int varlen_bm(int head_dim) { return head_dim >= 256 ? 32 : 64; }

/* one M-tile's walk: tile i of a row of q tokens at seq_len, in VL_SUB-ths of a tile.  A
 * prompt chunk's tiles are whole (its diagonal tile runs every MMA, masked); a decode row
 * (q = 1: one token's group of query rows, its time the KV it streams) counts its last tile by
 * the pages it holds: a row at 300 keys reads 19 pages of 16, 4.75 tiles, not 5 (the replays'
 * wide batches, decode rows at a few hundred keys: the varlen calls priced 9-20% above their
 * measured times by whole tiles; docs/validation.md section 2).  The grid's decode rows sit at
 * multiples of a tile, so a calib point's features are the same either way. */
#define VL_SUB 4
static long varlen_walk(long q, long seq_len, long i, int bm, int group, int page)
{
    long last_tok = ((i + 1) * bm - 1) / group;
    if (last_tok > q - 1) last_tok = q - 1;
    long keys = seq_len - q + last_tok + 1;
    if (q == 1 && page > 0 && LAW_VARLEN_BN % page == 0 && LAW_VARLEN_BN / page <= VL_SUB)
        return cdiv(keys, page) * (VL_SUB / (LAW_VARLEN_BN / page));
    return cdiv(keys, LAW_VARLEN_BN) * VL_SUB;
}

/* the least loaded slot first, ties to the lower index */
static int slot_less(const double *load, const int *id, int a, int b)
{
    return load[a] < load[b] || (load[a] == load[b] && id[a] < id[b]);
}

static void varlen_features(int head_dim, int group, int kv_heads, const varlen_rows_t *rows, int nrows, int occ,
                            int page, const cost_hw_t *hw, double *feat)
{
    int bm = varlen_bm(head_dim);
    long maxw = 0;                /* the longest walk, in VL_SUB-ths of a tile */
    double tot = 0, ctas = 0;
    for (int g = 0; g < nrows; g++) {
        if (rows[g].count <= 0 || rows[g].q < 1) continue;
        long mt = cdiv(rows[g].q * group, bm);
        for (long i = 0; i < mt; i++) {
            long w = varlen_walk(rows[g].q, rows[g].seq_len, i, bm, group, page);
            tot += (double)w / VL_SUB * kv_heads * rows[g].count;
            if (w > maxw) maxw = w;
        }
        ctas += (double)mt * kv_heads * rows[g].count;
    }
    feat[VARLEN_TILES_TOTAL] = tot;
    feat[VARLEN_TILES_MAX] = (double)maxw / VL_SUB;
    feat[VARLEN_CTAS] = ctas;
    feat[VARLEN_SM_TILES] = 0;
    feat[VARLEN_SLOT_TILES] = 0;
    int sms = hw ? hw->sms : 0;
    if (sms <= 0 || occ <= 0 || maxw <= 0) return;
    /* CTAs per walk length, then longest first onto a heap of slots keyed (load, slot) */
    double *cnt = calloc((size_t)maxw + 1, sizeof *cnt);
    int nslot = sms * occ;
    double *load = calloc((size_t)nslot, sizeof *load);
    int *id = malloc((size_t)nslot * sizeof *id);
    if (!cnt || !load || !id) {
        free(cnt), free(load), free(id);
        return;
    }
    for (int g = 0; g < nrows; g++) {
        if (rows[g].count <= 0 || rows[g].q < 1) continue;
        long mt = cdiv(rows[g].q * group, bm);
        for (long i = 0; i < mt; i++)
            cnt[varlen_walk(rows[g].q, rows[g].seq_len, i, bm, group, page)] += (double)kv_heads * rows[g].count;
    }
    for (int i = 0; i < nslot; i++) id[i] = i; /* loads all 0, ids ascending: a valid heap */
    for (long w = maxw; w >= 1; w--)
        for (double c = 0; c < cnt[w]; c++) {
            load[0] += (double)w / VL_SUB; /* the root is the least loaded slot; sift it down */
            int k = 0;
            for (;;) {
                int a = 2 * k + 1, b = a + 1, m = k;
                if (a < nslot && slot_less(load, id, a, m)) m = a;
                if (b < nslot && slot_less(load, id, b, m)) m = b;
                if (m == k) break;
                double tl = load[k]; load[k] = load[m]; load[m] = tl;
                int ti = id[k]; id[k] = id[m]; id[m] = ti;
                k = m;
            }
        }
    double *sm = calloc((size_t)sms, sizeof *sm), busiest = 0, slot = 0;
    if (sm) {
        for (int i = 0; i < nslot; i++) sm[id[i] % sms] += load[i];
        for (int i = 0; i < sms; i++) busiest = fmax(busiest, sm[i]);
    }
    for (int i = 0; i < nslot; i++) slot = fmax(slot, load[i]);
    feat[VARLEN_SM_TILES] = busiest;
    feat[VARLEN_SLOT_TILES] = slot;
    free(sm), free(cnt), free(load), free(id);
}

/* a point: decode_rows rows of q = 1 at ctx (a row of ncols > 7 columns with ctx_min > 0: at
 * contexts spread from ctx_min to ctx, law_varlen_row_ctx), chunks rows of chunk_q after
 * chunk_prefix */
static int varlen_point_features(const law_form_t *f, const double *row, int ncols, const model_t *m,
                                 const model_rank_t *r, const cost_hw_t *hw, double *feat)
{
    long nd = (long)row[VARLEN_COL_DECODE_ROWS], ctx = (long)row[VARLEN_COL_CTX];
    long nc = (long)row[VARLEN_COL_CHUNKS], cq = (long)row[VARLEN_COL_CHUNK_Q];
    long cp = (long)row[VARLEN_COL_CHUNK_PREFIX];
    long lo = ncols > VARLEN_COL_CTX_MIN + 1 ? (long)row[VARLEN_COL_CTX_MIN] : 0;
    if (nd < 0 || nc < 0 || nd + nc < 1 || (nd > 0 && ctx < 1) || (nc > 0 && (cq < 1 || cp < 0)) || lo < 0 ||
        lo > ctx || nd > PROF_MAX_ROWS || !m || !r || r->kv_heads < 1 || r->q_heads % r->kv_heads)
        return -1;
    if (lo <= 0 || lo >= ctx || nd <= 1) {     /* every decode row at ctx: two groups */
        varlen_rows_t rows[2] = { { 1, ctx, nd }, { cq, cp + cq, nc } };
        varlen_features(m->head_dim, r->q_heads / r->kv_heads, r->kv_heads, rows, 2, f->ctas_per_sm,
                        (int)row[VARLEN_COL_PAGE], hw, feat);
        return 0;
    }
    varlen_rows_t *rows = malloc((size_t)(nd + 1) * sizeof *rows);
    if (!rows) return -1;
    for (long i = 0; i < nd; i++)
        rows[i] = (varlen_rows_t){ 1, law_varlen_row_ctx(nd, lo, ctx, i), 1 };
    rows[nd] = (varlen_rows_t){ cq, cp + cq, nc };
    varlen_features(m->head_dim, r->q_heads / r->kv_heads, r->kv_heads, rows, (int)nd + 1, f->ctas_per_sm,
                    (int)row[VARLEN_COL_PAGE], hw, feat);
    free(rows);
    return 0;
}

/* a call's rows (a step's mixed batch) on the varlen kernel: one launch over all of them */
static int varlen_call_features(const law_form_t *f, const kcall_t *call, const model_t *m, const model_rank_t *r,
                                const cost_hw_t *hw, double feat[PROF_MAX_COEF])
{
    for (int s = 0; s < PROF_MAX_COEF; s++) feat[s] = 0;
    feat[FEAT_ONE] = 1;
    if (!call || !m || !r || r->kv_heads < 1 || r->q_heads % r->kv_heads || call->nseg < 1) return -1;
    varlen_rows_t *rows = malloc((size_t)call->nseg * sizeof *rows);
    if (!rows) return -1;
    for (int i = 0; i < call->nseg; i++)
        rows[i] = (varlen_rows_t){ call->segs[i].q, call->segs[i].seq_len, 1 };
    varlen_features(m->head_dim, r->q_heads / r->kv_heads, r->kv_heads, rows, call->nseg, f->ctas_per_sm, call->page,
                    hw, feat);
    free(rows);
    return 0;
}

/* gemm.moe.fp16: the grouped GEMM over the experts law_moe_counts gives tokens; its weight
 * bytes are the touched experts' (an expert with no token is never read), the roofline
 * takes the weights and the activations (A in, C out) at the copy ceiling, and the busiest
 * expert's FLOPs price a skewed spread's longest group; the row tiles' FLOPs are the work the
 * launch does (an expert's rows padded to LAW_MOE_TILE_M). */
static int moe_point_features(const double *row, const cost_hw_t *hw, double *feat)
{
    long tokens = (long)row[MOE_COL_TOKENS], cnt[LAW_MOE_MAX_EXPERTS];
    int experts = (int)row[MOE_COL_EXPERTS], topk = (int)row[MOE_COL_TOPK];
    double n = row[MOE_COL_N], k = row[MOE_COL_K];
    if (!(n >= 1) || !(k >= 1)) return -1;
    int active = law_moe_counts(tokens, experts, topk, row[MOE_COL_SKEW], cnt);
    if (active < 0) return -1;
    long mmax = 0, row_tiles = 0;
    for (int e = 0; e < experts; e++) {
        mmax = cnt[e] > mmax ? cnt[e] : mmax;
        row_tiles += (cnt[e] + LAW_MOE_TILE_M - 1) / LAW_MOE_TILE_M;
    }
    double a = (double)tokens * topk;
    feat[MOE_FLOPS] = 2.0 * a * n * k;
    feat[MOE_WEIGHT_BYTES] = 2.0 * active * n * k;
    feat[MOE_ACTIVE] = active;
    feat[MOE_ROOFLINE] = hw && hw->flops > 0 && hw->bw > 0
                         ? fmax(feat[MOE_FLOPS] / hw->flops, (feat[MOE_WEIGHT_BYTES] + 2.0 * a * (n + k)) / hw->bw) : 0;
    feat[MOE_MAX_EXPERT_FLOPS] = 2.0 * (double)mmax * n * k;
    feat[MOE_TILE_FLOPS] = 2.0 * (double)row_tiles * LAW_MOE_TILE_M * n * k;
    return 0;
}

int cost_point_features(const char *law, const double *row, const model_t *m,
                        const model_rank_t *r, const cost_hw_t *hw, double feat[PROF_MAX_COEF])
{
    return cost_point_features_n(law, row, 0, m, r, hw, feat);
}

int cost_point_features_n(const char *law, const double *row, int ncols, const model_t *m,
                          const model_rank_t *r, const cost_hw_t *hw, double feat[PROF_MAX_COEF])
{
    const law_form_t *f = law_find(law);
    for (int i = 0; i < PROF_MAX_COEF; i++) feat[i] = 0;
    if (!f) return -1;
    if (attn_family(f)) {                      /* rows, q, seq_len, page[, q_heads, kv_heads, head_dim] */
        kseg_t seg = { -1, (int)row[ATTN_COL_Q], (long)row[ATTN_COL_SEQ_LEN] };
        long rows = (long)row[ATTN_COL_ROWS];
        if (seg.q < 1 || seg.seq_len < seg.q || row[ATTN_COL_ROWS] < 1) return -1;
        /* a row that records its shape is priced at it; else at the model's, per rank */
        model_rank_t rs = *r;
        int hd = m ? m->head_dim : 0;
        if (law_has_facts(f, ncols)) {
            if (!(row[ATTN_COL_Q_HEADS] >= 1 && row[ATTN_COL_KV_HEADS] >= 1 && row[ATTN_COL_HEAD_DIM] >= 1)) return -1;
            rs.q_heads = (int)row[ATTN_COL_Q_HEADS];
            rs.kv_heads = (int)row[ATTN_COL_KV_HEADS];
            hd = (int)row[ATTN_COL_HEAD_DIM];
            rs.group = rs.q_heads / rs.kv_heads;
        }
        r = &rs;
        if (f->family == LF_DECODE_XQA || f->family == LF_DECODE_SCALAR) {
            /* a point with q > 1 is a small-q call: its token-wise expansion (one request,
             * rows of it read the same pages); the point's rows are distinct requests */
            kseg_t ex[64];
            if (seg.q > 64) return -1;
            long lo = ncols > ATTN_COL_CTX_MIN + 1 ? (long)row[ATTN_COL_CTX_MIN] : 0;
            if (lo > 0 && lo < seg.seq_len && rows > 1) {
                /* requests at contexts spread from ctx_min to seq_len (law.h), each expanded,
                 * in order: the call a pack of them makes */
                if (lo < seg.q || rows > PROF_MAX_ROWS) return -1;
                kseg_t *sp = malloc((size_t)rows * (size_t)seg.q * sizeof *sp);
                if (!sp) return -1;
                for (long i = 0; i < rows; i++) {
                    long L = law_varlen_row_ctx(rows, lo, seg.seq_len, i);
                    for (int t = 0; t < seg.q; t++)
                        sp[i * seg.q + t] = (kseg_t){ (int)i, 1, L - seg.q + 1 + t };
                }
                attn_features(f, sp, (int)(rows * seg.q), 1, r, hd, hw, feat);
                free(sp);
                return 0;
            }
            for (int t = 0; t < seg.q; t++)
                ex[t] = (kseg_t){ 0, 1, seg.seq_len - seg.q + 1 + t };
            attn_features(f, ex, seg.q, rows, r, hd, hw, feat);
        } else {
            attn_features(f, &seg, 1, rows, r, hd, hw, feat);
        }
        return 0;
    }
    feat[FEAT_ONE] = 1;
    switch (f->family) {
    case LF_GEMM:                              /* m, n, k, wb[, tile_n, tile_m, splits] */
        gemm_features(row[GEMM_COL_M], row[GEMM_COL_N], row[GEMM_COL_K], row[GEMM_COL_WB],
                      law_has_facts(f, ncols) ? row : NULL, hw, feat);
        return 0;
    case LF_GDN: gdn_features(row[GDN_COL_TOKENS], row[GDN_COL_SEQS], m, r, hw, feat); return 0;
    case LF_ELEMENTWISE: elem_features(row[0], r, hw, feat); return 0;   /* tokens */
    case LF_ALLREDUCE: feat[ALLREDUCE_BYTES] = row[0]; return 0;         /* bytes */
    case LF_STEP: feat[STEP_ROWS] = row[0]; return 0;                    /* rows */
    case LF_VARLEN: return varlen_point_features(f, row, ncols, m, r, hw, feat);
    case LF_MOE: return moe_point_features(row, hw, feat);
    default: return -1;
    }
}

/* Tensor-core FLOPs of one attention call: QK^T and PV of every row's q tokens over its
 * keys (causal within the row's own chunk). */
static double call_flops(const kcall_t *c, const model_t *m, const model_rank_t *r)
{
    double fl = 0;
    for (int i = 0; i < c->nseg; i++) {
        double q = c->segs[i].q, L = (double)c->segs[i].seq_len;
        fl += 4.0 * r->q_heads * q * (L - q / 2) * m->head_dim;
    }
    return fl;
}

double cost_item_flops(const cost_item_t *it, const model_t *m, const model_rank_t *r)
{
    switch (it->kind) {
    case CI_GEMM: return 2 * it->m * it->n * it->k;
    case CI_ATTN: return call_flops(it->call, m, r);
    default: return 0;
    }
}

int cost_item_features(const cost_item_t *it, const model_t *m, const model_rank_t *r, const cost_hw_t *hw,
                       double feat[PROF_MAX_COEF])
{
    char name[64];
    for (int i = 0; i < PROF_MAX_COEF; i++) feat[i] = 0;
    feat[FEAT_ONE] = 1;
    switch (it->kind) {
    case CI_ATTN: case CI_BRIDGE:
        return cost_attn_features(cost_item_law(it, name, sizeof name), it->call, m, r, hw, feat);
    case CI_GEMM: gemm_features(it->m, it->n, it->k, it->wb, NULL, hw, feat); return 0;
    case CI_GDN: gdn_features(it->tokens, it->seqs, m, r, hw, feat); return 0;
    case CI_ELEM: elem_features(it->tokens, r, hw, feat); return 0;
    case CI_ALLREDUCE: feat[ALLREDUCE_BYTES] = it->bytes; return 0;
    case CI_STEP:
        feat[STEP_ROWS] = it->seqs;
        feat[STEP_EAGER] = it->eager;
        feat[STEP_EAGER_PASSES] = it->eager_passes;
        feat[STEP_RESENT_TOKENS] = it->resent_tokens;
        feat[STEP_HOST_EXPANSIONS] = it->host_expansions;
        feat[STEP_SPEC_RESIDENT] = it->spec_resident;
        return 0;
    }
    return -1;
}
