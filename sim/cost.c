/* cost.c: the profile cost model, the analytic roofline model, and the feature
 * functions that give every profile law its meaning (see cost.h).
 *
 * Attention features, per kernel call (rows are (q, seq_len); H = q heads per rank,
 * Hkv = kv heads per rank):
 *  prefill kernels (tile BM x BN): a row's M-tile i covers queries up to
 *    min(q, (i+1)BM) and so walks kv_len_i = (seq_len - q) + min(q, (i+1)BM) keys in
 *    ceil(kv_len_i / BN) tiles; each M-tile is one CTA per q head.
 *      tiles_total = H * sum_rows sum_i ceil(kv_len_i/BN)   (throughput term)
 *      tiles_max   = max over CTAs of its tiles             (critical path: a q=1 row
 *                                                            is one CTA walking it all)
 *      ctas        = H * sum_rows ceil(q/BM)
 *      queue_tiles = the busiest SM's tiles, the CTAs dispatched in launch order to the SM
 *                    that frees first, less tiles_max: what the critical path waits behind
 *                    (prefill_sched; 0 while the CTAs fit the SMs); profiles fitted before
 *                    it have 4 coefficients and price as before
 *    v8: the fast path (attn.prefill_bm32) splits each CTA's walk in parts where its CTAs
 *    would leave SMs idle (kernels/attn_split.h's rule, with the profile's prefill_split
 *    constants and CTAs an SM): tiles_total stays, ctas counts the parts, tiles_max is the
 *    longest part's, queue_tiles schedules the parts; a profile without prefill_split
 *    prices an unsplit kernel
 *  decode kernels (XQA, scalar), split-K: partition P = 256 tokens (1024 when
 *    seq_len >= 32768), a CTA per (row, head, partition), then a reduce kernel whose CTA
 *    walks every partition of its row; O = the CTAs an SM holds (XQA fp16 1, fp8 2,
 *    scalar 3), S = the GPU's SMs:
 *      kv_tokens_total  = sum_rows seq_len * Hkv (XQA: a CTA serves its whole GQA group)
 *                         or * H (scalar: every q head re-reads)
 *      part_tokens_max  = min(P, longest seq_len)
 *      ctas             = sum_rows ceil(seq_len/P) * (Hkv or H)
 *      kv_tokens_unique = the same over requests' longest rows: the rows of a small-q
 *                         row expanded token-wise read the same pages (L2 serves repeats)
 *      wave_tokens      = ceil(ctas / (S O)) * part_tokens_max (each wave streams a partition)
 *      reduce_depth     = max_rows ceil(seq_len/P)
 *      sm_tokens        = ceil(ctas / S) * part_tokens_max (the busiest SM's partitions)
 *  fp8 bridge: expanded_tokens = sum_rows seq_len * Hkv; page_walk = ceil(ctas / (S O)) *
 *    min(T, longest seq_len) * Hkv, ctas = sum_rows ceil(seq_len / T), T tokens a CTA and
 *    O CTAs an SM from the profile's fp8_expand (v5's kernel without it: 784, 8); the law is
 *    c0 + c1 expanded + max(c2 page_walk, c3 expanded) + c4 expanded [sm_ctas > c5], where
 *    sm_ctas = ceil(min(ctas, S O) / S), the expansion CTAs the busiest SM holds at once,
 *    and c5 is a knee fitted by scan (cost_law_knee): past it every token costs c4 more.
 * GEMM, GDN and elementwise features are defined with their functions below.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cost.h"
#include "heat.h"
#include "law.h"
#include "../kernels/attn_split.h"

/* ---- features ------------------------------------------------------------ */

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
 * after another, each its parts (the fast path's split walk, v8; else 1), each its M-tiles
 * in order.  The kernels are SM-bound (kernels/NOTES.md v6: a
 * second co-resident CTA adds 1.18x, not 2x), so an SM's CTAs add up; with more CTAs than
 * SMs the last SM to finish sets the time, and causal rows give CTAs of unlike length (a
 * q = 1568 row's M-tiles walk 39..51 tiles at 6.5K context), which whole rounds of the
 * longest CTA overstate.  0 when every CTA has an SM of its own, or the SMs are unknown. */
static double prefill_sched(int bm, int bn, int parts, const kseg_t *segs, int nseg, long rows_mult, double heads,
                            const cost_hw_t *hw, double ctas, double mx)
{
    if (!hw || hw->sms <= 0 || ctas <= hw->sms) return 0;
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

static void prefill_row(int bm, int bn, int q, long seq_len, double *tot, double *mx, double *ctas)
{
    long prefix = seq_len - q;
    long mt = cdiv(q, bm);
    for (long i = 0; i < mt; i++) {
        long last = (i + 1) * bm < q ? (i + 1) * bm : q;
        long t = cdiv(prefix + last, bn);
        *tot += (double)t;
        if ((double)t > *mx) *mx = (double)t;
    }
    *ctas += (double)mt;
}

/* The fp8 bridge's expansion runs a 256-thread CTA per expand_tokens tokens of a 784-token
 * destination page, each covering every kv head, expand_occ per SM: the profile's
 * fp8_expand (kernels/attn.h ATTN_BRIDGE_*: 98, 8); a profile without it was measured
 * with v5's kernel, one CTA per page, 8 per SM. */
#define BRIDGE_PAGE_TOKENS 784
static int expand_tokens(const cost_hw_t *hw) { return hw && hw->expand_tokens > 0 ? hw->expand_tokens : BRIDGE_PAGE_TOKENS; }

/* v8: the parts the fast prefill kernel splits its CTAs' walk into (kernels/attn_split.h, with
 * the constants and occupancy its profile recorded); 1 for the other kernels and for profiles
 * of kernels that do not split */
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
                                              feat[PREFILL_CTAS], feat[PREFILL_TILES_MAX]);
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
     * last one alone, with no second CTA to hide its loads behind.  In every H200 session
     * the shapes with 3 on the busiest SM were under-priced by 7-10% (the law's largest
     * errors, fp16 and fp8); the term takes fp16's maximum from 8.8-10.4% to 7.2-8.8%
     * (calib/README.md).  A profile with 8 coefficients prices as before. */
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
     * expansion's CTAs at once (its first wave) than the fitted knee coef[5]; v6's kernel
     * streams at ~3.4 TB/s with up to 3 CTAs an SM and ~2.6 TB/s from 4 (calib/README.md) */
    feat[BRIDGE_EXPANDED_KNEE] = feat[BRIDGE_EXPANDED];
    feat[BRIDGE_SM_CTAS] = hw && hw->sms > 0 ? ceil(fmin(ctas * rm, (double)hw->sms * eo) / hw->sms) : 0;
}

/* An attention law's features for rows segs (x rows_mult identical copies). */
static void attn_features(const law_form_t *f, const kseg_t *segs, int nseg, long rows_mult, const model_rank_t *r,
                          const cost_hw_t *hw, double feat[PROF_MAX_COEF])
{
    for (int s = 0; s < PROF_MAX_COEF; s++) feat[s] = 0;
    feat[FEAT_ONE] = 1;
    double heads = f->family == LF_PREFILL || f->family == LF_DECODE_SCALAR ? r->q_heads : r->kv_heads;
    switch (f->family) {
    case LF_PREFILL: prefill_features(f, segs, nseg, rows_mult, heads, hw, feat); break;
    case LF_BRIDGE: bridge_features(f, segs, nseg, rows_mult, heads, hw, feat); break;
    default: decode_features(f, segs, nseg, rows_mult, heads, hw, feat); break;
    }
}

int cost_attn_features(const char *law, const kcall_t *call, const model_t *m,
                       const model_rank_t *r, const cost_hw_t *hw, double feat[PROF_MAX_COEF])
{
    (void)m;
    const law_form_t *f = law_find(law);
    if (!attn_family(f)) return -1;
    attn_features(f, call->segs, call->nseg, 1, r, hw, feat);
    return 0;
}

static double gemm_bytes(double mm, double n, double k, double wb)
{
    return 2.0 * (mm * k + mm * n) + wb * n * k;
}

/* gemm: cuBLAS runs either weight-streaming (small m) or tensor-core bound (large m);
 * the roofline feature is the larger of the two times at the GPU's measured ceilings,
 * and flops / bytes add what the two do not overlap.
 * feat[4..8] price the kernel cuBLAS picks, cfg = {tile_n, tile_m, splits} (calib records
 * it with every point: the cuBLASLt heuristic that cublasGemmEx consults; NULL or
 * tile_n 0: unknown, those terms 0).  cuBLAS's choice is what makes time fall as m
 * grows: at (n, k) = (5120, 6144) m = 64 takes a 96x64 tile split 2 ways over k and m =
 * 96 a 128x96 tile split 3 ways, 24.6 and 26.2 us, where m = 48 (64x48, whole k) takes
 * 20.1 and m = 128 (96x64, whole k) 21.8 -- no law rising with m gets within 11% of
 * both (calib/README.md).  [4] 1 when the kernel splits k (its partial sums are reduced
 * after it), [5] the busiest SM's padded tile FLOPs (a CTA an SM, the tiles in rounds)
 * against the bytes at the copy ceiling, [6] the fp32 partial sums a split writes and
 * the reduction reads, [7] the weight bytes once per column of tiles along m (each
 * re-streams its rows of W), [8] [5] with the tile at least 128 wide along m: Hopper's
 * tensor cores (wgmma, N = the tile's m side) reach their rate from N = 128, and a narrower
 * tile takes about as long as a 128-wide one (sessions K, L, M: the MLP up projection at m =
 * 192, a 448x64 tile in two rounds, 129-132 us where [5] alone priced 114-121; the term takes
 * the law's maximum there from 11.3 / 8.8 / 10.1% to 6.5 / 5.0 / 7.8%, the medians alike).
 * A profile with 4 coefficients prices as before.  (Tried: a
 * roofline pair of [5] against the busiest SM's operand loads.  It fitted m = 192 at (5120,
 * 10240), 42.7 us in session K's grid, which session M's grid timed at 42.4 us and its
 * second look, from a 0.1 s rest, at 38.5 us -- the clock, not the loads -- and it made
 * sessions L's and M's fits worse (8.8 -> 9.6%, 10.1 -> 11.5%): not kept.) */
static void gemm_features(double mm, double n, double k, double wb, const double *pick, const cost_hw_t *hw,
                          double *feat)
{
    feat[GEMM_FLOPS] = 2.0 * mm * n * k;
    feat[GEMM_BYTES] = gemm_bytes(mm, n, k, wb);
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
 * feat[4]: 1 once the SiLU grid needs a second wave.  Every H200 session measured a step
 * there that the waves do not price: 16 -> 32 tokens (544 -> 1088 CTAs, 1056 an wave)
 * +4.1..5.0 us, 32 -> 64 (three waves, twice the elements) +1.2..1.9 us; without the term
 * the 32-token point missed its law by 10.5..12.9% in every profile (calib/README.md).
 * A profile fitted before it (4 coefficients) prices as before. */
static void elem_features(double tokens, const model_rank_t *r, const cost_hw_t *hw, double *feat)
{
    double silu = fmin(ceil(tokens * (double)(r->mlp_down_k / 2) / 256), 4096);
    feat[ELEM_TOKENS] = tokens;
    feat[ELEM_NORM_WAVES] = waves(tokens, 8, hw);
    feat[ELEM_SILU_WAVES] = waves(silu, 8, hw);
    feat[ELEM_SILU_SECOND_WAVE] = feat[ELEM_SILU_WAVES] > 1 ? 1 : 0;
}

int cost_point_features(const char *law, const double *row, const model_t *m,
                        const model_rank_t *r, const cost_hw_t *hw, double feat[PROF_MAX_COEF])
{
    return cost_point_features_n(law, row, 0, m, r, hw, feat);
}

int cost_point_features_n(const char *law, const double *row, int ncols, const model_t *m,
                          const model_rank_t *r, const cost_hw_t *hw, double feat[PROF_MAX_COEF])
{
    (void)m;
    const law_form_t *f = law_find(law);
    for (int i = 0; i < PROF_MAX_COEF; i++) feat[i] = 0;
    if (!f) return -1;
    if (attn_family(f)) {                      /* rows, q, seq_len, page */
        kseg_t seg = { -1, (int)row[ATTN_COL_Q], (long)row[ATTN_COL_SEQ_LEN] };
        long rows = (long)row[ATTN_COL_ROWS];
        if (seg.q < 1 || seg.seq_len < seg.q || row[ATTN_COL_ROWS] < 1) return -1;
        if (f->family == LF_DECODE_XQA || f->family == LF_DECODE_SCALAR) {
            /* a point with q > 1 is a small-q call: its token-wise expansion (one request,
             * rows of it read the same pages); the point's rows are distinct requests */
            kseg_t ex[64];
            if (seg.q > 64) return -1;
            for (int t = 0; t < seg.q; t++)
                ex[t] = (kseg_t){ 0, 1, seg.seq_len - seg.q + 1 + t };
            attn_features(f, ex, seg.q, rows, r, hw, feat);
        } else {
            attn_features(f, &seg, 1, rows, r, hw, feat);
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

/* ---- the step decomposition ------------------------------------------------ */

static void item_emit(cost_item_fn fn, void *ctx, int *rc, cost_item_t it)
{
    if (*rc == 0 && it.count > 0) *rc = fn(ctx, &it);
}

/* The plan's attention calls, `layers` times each (bridge calls: expansion + kernel). */
static void emit_plan(const route_plan_t *plan, double layers, cost_part_t part, cost_item_fn fn, void *ctx, int *rc)
{
    for (int i = 0; plan && i < plan->ncalls; i++) {
        const kcall_t *c = &plan->calls[i];
        if (c->route == ROUTE_FP8_BRIDGE)
            item_emit(fn, ctx, rc, (cost_item_t){ .kind = CI_BRIDGE, .call = c, .count = layers, .part = part });
        item_emit(fn, ctx, rc, (cost_item_t){ .kind = CI_ATTN, .call = c, .count = layers, .part = part });
    }
}

static void emit_gemm(double mm, double n, double k, double wb, double count, cost_part_t part, cost_item_fn fn,
                      void *ctx, int *rc)
{
    if (mm <= 0) return;
    item_emit(fn, ctx, rc, (cost_item_t){ .kind = CI_GEMM, .m = mm, .n = n, .k = k, .wb = wb, .count = count, .part = part });
}

/* One transformer layer's non-attention work for mm tokens of seqs sequences. */
static void emit_layer(const model_t *m, const model_rank_t *r, int full_attn, double mm, double seqs, double count,
                       cost_part_t part, cost_item_fn fn, void *ctx, int *rc)
{
    double h = m->hidden, wb = m->weight_bytes_per_param;
    if (mm <= 0) return;
    if (full_attn) {
        emit_gemm(mm, (double)r->attn_qkv_n, h, wb, count, part, fn, ctx, rc);
        emit_gemm(mm, h, (double)r->attn_o_k, wb, count, part, fn, ctx, rc);
    } else {
        emit_gemm(mm, (double)r->gdn_in_n, h, wb, count, part, fn, ctx, rc);
        emit_gemm(mm, h, (double)r->gdn_out_k, wb, count, part, fn, ctx, rc);
        item_emit(fn, ctx, rc, (cost_item_t){ .kind = CI_GDN, .tokens = mm, .seqs = seqs, .count = count,
                                              .part = part == CP_MTP ? CP_MTP : CP_GDN });
    }
    emit_gemm(mm, (double)r->mlp_up_n, h, wb, count, part, fn, ctx, rc);
    emit_gemm(mm, h, (double)r->mlp_down_k, wb, count, part, fn, ctx, rc);
    item_emit(fn, ctx, rc, (cost_item_t){ .kind = CI_ELEM, .tokens = mm, .count = count,
                                          .part = part == CP_MTP ? CP_MTP : CP_ELEM });
    if (r->tp > 1)
        item_emit(fn, ctx, rc, (cost_item_t){ .kind = CI_ALLREDUCE, .bytes = mm * h * 2.0, .count = 2 * count,
                                              .part = part == CP_MTP ? CP_MTP : CP_ALLREDUCE });
}

int cost_enumerate(const model_t *m, const model_rank_t *r, const cost_step_t *in, cost_item_fn fn, void *ctx)
{
    int rc = 0;
    double T = (double)in->tokens, seqs = in->rows, h = m->hidden, wb = m->weight_bytes_per_param;
    /* the main model: attention of every full-attention layer, then each layer's linear work */
    emit_plan(in->plan, m->n_full_attn, CP_ATTN, fn, ctx, &rc);
    emit_layer(m, r, 1, T, seqs, m->n_full_attn, CP_LINEAR, fn, ctx, &rc);
    emit_layer(m, r, 0, T, seqs, m->n_gdn, CP_LINEAR, fn, ctx, &rc);
    emit_gemm((double)in->sampled, (double)r->vocab_n, h, wb, 1, CP_LINEAR, fn, ctx, &rc);
    /* per-step overhead; steps holding a prompt chunk run eagerly (no CUDA graph) */
    double eager = in->rows > in->decode_rows ? 1.0 : 0.0;
    int mtp = in->spec_k > 0 && m->mtp_layers > 0;
    item_emit(fn, ctx, &rc, (cost_item_t){ .kind = CI_STEP, .seqs = seqs, .eager = eager,
                                           .eager_passes = eager * (mtp ? in->spec_k : 0), .count = 1,
                                           .part = CP_OVERHEAD });
    if (!mtp) return rc;
    /* MTP pass 1: the MTP layer over every scheduled token (a mixed batch too) */
    emit_plan(in->plan, 1, CP_MTP, fn, ctx, &rc);
    emit_layer(m, r, 1, T, seqs, 1, CP_MTP, fn, ctx, &rc);
    emit_gemm(T, h, 2.0 * h, wb, 1, CP_MTP, fn, ctx, &rc);                       /* eh_proj */
    emit_gemm((double)in->rows, (double)r->vocab_n, h, wb, 1, CP_MTP, fn, ctx, &rc);
    /* passes 2..K: one token per decoding request */
    if (in->draft_plan && in->decode_rows > 0 && in->spec_k > 1) {
        double d = in->decode_rows, k1 = in->spec_k - 1;
        emit_plan(in->draft_plan, k1, CP_MTP, fn, ctx, &rc);
        emit_layer(m, r, 1, d, d, k1, CP_MTP, fn, ctx, &rc);
        emit_gemm(d, h, 2.0 * h, wb, k1, CP_MTP, fn, ctx, &rc);
        emit_gemm(d, (double)r->vocab_n, h, wb, k1, CP_MTP, fn, ctx, &rc);
    }
    return rc;
}

const char *cost_item_law(const cost_item_t *it, char *buf, size_t n)
{
    switch (it->kind) {
    case CI_ATTN: {
        const kcall_t *c = it->call;
        const char *dt = c->kv_dtype == KV_FP8_E5M2 ? "fp8" : "fp16";
        const char *k;
        switch (c->route) {
        case ROUTE_DECODE_XQA: k = "decode_xqa"; break;
        case ROUTE_DECODE_SCALAR: k = "decode_scalar"; break;
        default:
            k = c->variant == VAR_BM32_BN128 ? "prefill_bm32"
              : c->variant == VAR_BM16_BN128 ? "prefill_lowsmem" : "prefill_generic";
        }
        snprintf(buf, n, "attn.%s.%s", k, dt);
        return buf;
    }
    case CI_BRIDGE: return "attn.fp8_bridge";
    case CI_GEMM: return "gemm";
    case CI_GDN: return "gdn";
    case CI_ELEM: return "elementwise";
    case CI_ALLREDUCE: return "allreduce";
    default: return "step";
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
        return 0;
    }
    return -1;
}

void cost_breakdown_add(cost_breakdown_t *o, const cost_item_t *it, double seconds)
{
    switch (it->part) {
    case CP_ATTN:
        o->attn += seconds;
        o->attn_route[it->call->route] += seconds;
        break;
    case CP_LINEAR: o->linear += seconds; break;
    case CP_GDN: o->gdn += seconds; break;
    case CP_ELEM: o->elementwise += seconds; break;
    case CP_ALLREDUCE: o->allreduce += seconds; break;
    case CP_OVERHEAD: o->overhead += seconds; break;
    case CP_MTP: o->mtp += seconds; break;
    }
    o->total += seconds;
}

/* ---- the profile model ----------------------------------------------------
 * Every item is priced from its law's measured points where calib measured its shape,
 * and by the fitted law elsewhere.  A law's points are grouped by every column but one,
 * the axis (gemm: m within (n, k, wb); gdn: tokens within seqs; elementwise: tokens;
 * attention: seq_len within (rows, q, page)); an item whose group exists is priced by
 * piecewise-linear interpolation along the axis, and beyond the group's ends by the law
 * scaled to meet the end point.  The reference model's shapes are what calib measures,
 * so inside the grid an item costs what was measured; the law carries the rest (other
 * shapes, heterogeneous batches, profiles without points). */

typedef struct {
    int law;                      /* index into the profile's laws */
    double key[PROF_MAX_COLS];    /* the non-axis columns */
    int npts;
    double *ax, *t;               /* sorted by axis, repeats averaged */
    const double *edge[2];        /* the first and last point rows (for extrapolation) */
} grid_t;

typedef struct {
    const profile_t *p;
    const model_t *m;
    model_rank_t r;
    cost_hw_t hw;                 /* the profile's SMs and ceilings (features) */
    int ngrid;
    grid_t *grid;
    double *arena;
    double heat;                  /* the sustained-load state h after the last step (heat.h) */
    double heat_mean;             /* h's mean over the last step priced */
    struct { double m, n, k, wb; int pt; } gemm_memo[16]; /* gemm_choice()'s recent answers */
    int gemm_nmemo, gemm_next;
} pm_t;

/* The axis column of a law's points (-1: none, or a law not in the catalogue). */
static int law_axis(const char *name)
{
    const law_form_t *f = law_find(name);
    return f ? f->axis : -1;
}

static int cmp_pair(const void *a, const void *b)
{
    const double *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* The columns that name a group: every column but t_s -- but facts measured with a point
 * (a gemm point's kernel choice: tile_n, tile_m, splits) are not part of its shape. */
static int law_nkeys(const prof_law_t *l)
{
    return law_shape_cols(law_find(l->name), l->ncols);
}

static int same_key(const double *row, const double *key, int nkeys, int axis)
{
    for (int c = 0; c < nkeys; c++)
        if (c != axis && row[c] != key[c]) return 0;
    return 1;
}

/* Group every law's points.  0, or -1 out of memory. */
static int grid_index(pm_t *pm)
{
    long total = 0;
    for (int i = 0; i < pm->p->nlaws; i++) total += pm->p->laws[i].npts;
    if (total == 0) return 0;
    pm->grid = calloc((size_t)total, sizeof *pm->grid);
    pm->arena = malloc((size_t)total * 2 * sizeof *pm->arena);
    double *pairs = malloc((size_t)total * 3 * sizeof *pairs);
    if (!pm->grid || !pm->arena || !pairs) {
        free(pairs);
        return -1;
    }
    double *next = pm->arena;
    for (int li = 0; li < pm->p->nlaws; li++) {
        const prof_law_t *l = &pm->p->laws[li];
        int axis = law_axis(l->name), nc = l->ncols;
        if (axis < 0 || l->npts == 0 || axis >= nc - 1) continue;
        for (int i = 0; i < l->npts; i++) {
            const double *row = l->pts + (size_t)i * nc;
            int seen = 0;
            for (int g = 0; g < pm->ngrid && !seen; g++)
                seen = pm->grid[g].law == li && same_key(row, pm->grid[g].key, law_nkeys(l), axis);
            if (seen) continue;
            grid_t *gr = &pm->grid[pm->ngrid++];
            gr->law = li;
            for (int c = 0; c < nc - 1; c++) gr->key[c] = row[c];
            int np = 0;
            for (int j = i; j < l->npts; j++) {
                const double *rj = l->pts + (size_t)j * nc;
                if (!same_key(rj, gr->key, law_nkeys(l), axis)) continue;
                pairs[3 * np] = rj[axis];
                pairs[3 * np + 1] = rj[nc - 1];
                pairs[3 * np + 2] = (double)j;
                np++;
            }
            qsort(pairs, (size_t)np, 3 * sizeof *pairs, cmp_pair);
            gr->ax = next;
            gr->t = next + np;
            next += 2 * np;
            for (int j = 0; j < np; j++) {
                double sum = pairs[3 * j + 1];
                int c = 1, first = j;
                while (j + 1 < np && pairs[3 * (j + 1)] == pairs[3 * j]) {
                    sum += pairs[3 * (j + 1) + 1];
                    c++;
                    j++;
                }
                if (gr->npts == 0) gr->edge[0] = l->pts + (size_t)pairs[3 * first + 2] * nc;
                gr->edge[1] = l->pts + (size_t)pairs[3 * first + 2] * nc;
                gr->ax[gr->npts] = pairs[3 * j];
                gr->t[gr->npts] = sum / c;
                gr->npts++;
            }
        }
    }
    free(pairs);
    return 0;
}

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

/* One group's price at axis value x for an item with features feat: interpolation
 * inside the group's range, the law scaled to meet the end point outside it.  0 / -1. */
static int group_eval(const pm_t *pm, const prof_law_t *l, const grid_t *gr, double x, const double *feat, double *t)
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
    *t = gr->t[lo] + w * (gr->t[hi] - gr->t[lo]);
    return 0;
}

/* Price it from measured points: its own group if calib measured its shape; for a
 * prefill chunk (q >= 32) whose q was not measured, between the two nearest measured
 * query sizes of the same rows and page (chunks, or the kernel's q = 1 row below them),
 * weighted by the GPU waves the q adds (below).
 * 1 and *t, or 0 (no measured neighbourhood: the law prices it). */
static int grid_price(const pm_t *pm, int li, const cost_item_t *it, const double *feat, double *t)
{
    const prof_law_t *l = &pm->p->laws[li];
    int axis = law_axis(l->name);
    double row[PROF_MAX_COLS] = { 0 };
    if (axis < 0 || !item_row(it, row)) return 0;
    double x = row[axis];
    const grid_t *below = NULL, *above = NULL;
    int chunk = it->kind == CI_ATTN && it->call->route != ROUTE_DECODE_XQA && it->call->route != ROUTE_DECODE_SCALAR
                && row[ATTN_COL_Q] >= 32;
    for (int g = 0; g < pm->ngrid; g++) {
        const grid_t *gr = &pm->grid[g];
        if (gr->law != li) continue;
        /* the bridge's expansion depends on the sequence only */
        if (it->kind == CI_BRIDGE || same_key(row, gr->key, law_nkeys(l), axis))
            return group_eval(pm, l, gr, x, feat, t) == 0;
        /* neighbours: measured chunks, and the q = 1 row of the prefill kernels (the same
         * CTA walking the same keys with one live row: a short final chunk whose tiles
         * still fit one wave costs what that row costs) */
        if (!chunk || gr->key[ATTN_COL_ROWS] != row[ATTN_COL_ROWS] || gr->key[ATTN_COL_PAGE] != row[ATTN_COL_PAGE]) continue;
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
            /* v8 profiles: the fast path's parts differ in length from one q to the next (a
             * q = 64 chunk at 240K walks 2 parts of 938 tiles, q = 96 3 of 625), so waves
             * are no measure: the busiest SM's tiles are (tiles_max + queue_tiles) */
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
    double total, heat_w;         /* pass 0: seconds, and seconds x the law's heat */
} pm_ctx_t;

static int split_decode(cost_model_t *cm, const cost_item_t *it, double *sec, int *grid, const prof_law_t **lp);

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

/* One item's calibrated seconds (x count); *grid: priced from measured points; *lp its
 * law (NULL when the profile has none and the item is optional).  0 / -1 (err set). */
static int pm_item(cost_model_t *cm, const cost_item_t *it, double *sec, int *grid, const prof_law_t **lp)
{
    pm_t *pm = cm->impl;
    char name[64];
    double feat[PROF_MAX_COEF];
    const char *law = cost_item_law(it, name, sizeof name);
    const prof_law_t *l = prof_find(pm->p, law);
    *sec = 0;
    *grid = 0;
    *lp = l;
    if (!l) {
        /* elementwise work is optional in a profile (folded into the others) */
        if (it->kind == CI_ELEM) return 0;
        snprintf(cm->err, sizeof cm->err, "profile has no law \"%s\" (needed by this scenario)", law);
        return -1;
    }
    if (cost_item_features(it, pm->m, &pm->r, &pm->hw, feat) < 0) {
        snprintf(cm->err, sizeof cm->err, "cannot compute the features of law \"%s\"", law);
        return -1;
    }
    if (it->kind == CI_GEMM) {
        int pt = gemm_choice(pm, l, it);
        if (pt >= 0) gemm_features(it->m, it->n, it->k, it->wb, l->pts + (size_t)pt * l->ncols, &pm->hw, feat);
    }
    double t;
    if (split_decode(cm, it, sec, grid, lp)) return *sec < 0 ? -1 : 0;
    *grid = grid_price(pm, (int)(l - pm->p->laws), it, feat, &t);
    if (!*grid) t = prof_eval(l, feat);
    *sec = (t > 0 ? t : 0) * it->count;
    return 0;
}

/* A decode call over several requests (their rows in one launch) costs what its
 * requests' calls would cost one by one, less the fixed cost of the launches it does not
 * make: the kernel is bandwidth-bound and its CTAs fill the GPU either way, so the bytes'
 * times add, but it launches once (one main kernel, one reduce), so every part after the
 * first gives back the law's per-call constant c0.  (calib measures identical rows only;
 * the law on the whole mixture was 10-16% high on the H200 replays, the parts' sum within
 * 2%.)  1 if the item was such a call (*sec its price, -1 on error), else 0. */
static int split_decode(cost_model_t *cm, const cost_item_t *it, double *sec, int *grid, const prof_law_t **lp)
{
    const kcall_t *c = it->call;
    if (it->kind != CI_ATTN || (c->route != ROUTE_DECODE_XQA && c->route != ROUTE_DECODE_SCALAR) || c->nseg < 2)
        return 0;
    int mixed = 0;
    for (int i = 1; i < c->nseg; i++) mixed |= c->segs[i].req != c->segs[0].req;
    if (!mixed) return 0;
    kseg_t *seg = malloc((size_t)c->nseg * sizeof *seg);
    char *done = calloc((size_t)c->nseg, 1);
    int g = 1, parts = 0;
    *sec = 0;
    *grid = 1;
    if (!seg || !done) {
        snprintf(cm->err, sizeof cm->err, "out of memory");
        free(seg);
        free(done);
        *sec = -1;
        return 1;
    }
    for (int i = 0; i < c->nseg; i++) {
        if (done[i]) continue;
        int n = 0;
        for (int j = i; j < c->nseg; j++)
            if (!done[j] && c->segs[j].req == c->segs[i].req) {
                seg[n++] = c->segs[j];
                done[j] = 1;
            }
        kcall_t sub = *c;
        sub.segs = seg;
        sub.nseg = n;
        cost_item_t one = *it;
        one.call = &sub;
        double t;
        if (pm_item(cm, &one, &t, &g, lp) < 0) {
            *sec = -1;
            break;
        }
        if (parts++ && *lp) t -= (*lp)->coef[FEAT_ONE] * it->count;   /* one launch, not one per part */
        *sec += t > 0 ? t : 0;
        *grid &= g;
    }
    free(seg);
    free(done);
    return 1;
}

/* How hard an item of `sec` seconds (x count) loads the card, 0..1 (heat.h): tensor-core
 * work (GEMMs, attention) by its FLOP rate over the calibrated fp16 peak, which is the
 * heater's own rate (a GEMM at m = 1 is bandwidth-bound and cool, one at m = 2048 runs
 * near peak); work with no FLOP count (GDN core, elementwise, the fp8 expansion) by its
 * law's measured heat. */
static double item_heat(const pm_t *pm, const cost_item_t *it, const prof_law_t *l, double sec)
{
    double fl = cost_item_flops(it, pm->m, &pm->r);
    if (fl > 0 && pm->p->peak_fp16_tflops > 0 && sec > 0) {
        double u = fl * it->count / sec / (pm->p->peak_fp16_tflops * 1e12);
        return u < 1 ? u : 1;
    }
    return l && l->has_sustained ? l->heat : 0;
}

/* The sustained-load factor of a law's item at heat state h (heat.h). */
static double hot_factor(const pm_t *pm, const prof_law_t *l, double h)
{
    if (!l || !l->has_sustained || !pm->p->has_sustained || h <= 0) return 1.0;
    return heat_factor(l->hot, h, pm->p->clock_cold_mhz, pm->p->clock_hot_mhz);
}

int cost_profile_item(cost_model_t *cm, const cost_item_t *it, double *sec, int *grid)
{
    const prof_law_t *l;
    if (pm_item(cm, it, sec, grid, &l) < 0) return -1;
    *sec *= hot_factor(cm->impl, l, ((pm_t *)cm->impl)->heat_mean);
    return 0;
}

static int pm_price(void *vctx, const cost_item_t *it)
{
    pm_ctx_t *x = vctx;
    double sec;
    int grid;
    const prof_law_t *l;
    if (pm_item(x->cm, it, &sec, &grid, &l) < 0) return -1;
    if (x->pass == 0) {
        x->total += sec;
        x->heat_w += sec * item_heat((pm_t *)x->cm->impl, it, l, sec);
        return 0;
    }
    cost_breakdown_add(x->o, it, sec * hot_factor(x->cm->impl, l, ((pm_t *)x->cm->impl)->heat_mean));
    return 0;
}

/* With a profile that has the sustained-load probes: a first pass prices the items at
 * their calibrated times, whose heat-weighted share is the step's target; the state
 * follows it over the step's length (heat_step) and a second pass prices every item at
 * the state's mean over the step.  Without them: one pass, calibrated times. */
static int pm_step(cost_model_t *cm, const cost_step_t *in, cost_breakdown_t *o)
{
    pm_t *pm = cm->impl;
    memset(o, 0, sizeof *o);
    pm_ctx_t x = { cm, o, 1, 0, 0 };
    if (pm->p->has_sustained) {
        x.pass = 0;
        if (cost_enumerate(pm->m, &pm->r, in, pm_price, &x) < 0) return -1;
        double c = x.total > 0 ? x.heat_w / x.total : 0;
        pm->heat_mean = heat_step(&pm->heat, c, x.total, pm->p->tau_up_s, pm->p->tau_down_s);
        x.pass = 1;
    }
    return cost_enumerate(pm->m, &pm->r, in, pm_price, &x);
}

static void pm_destroy(cost_model_t *cm)
{
    pm_t *pm = cm->impl;
    free(pm->grid);
    free(pm->arena);
    free(pm);
    free(cm);
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
    static const char *const fp16[] = { "attn.prefill_bm32.fp16", "attn.prefill_generic.fp16",
                                        "attn.prefill_lowsmem.fp16", NULL };
    static const char *const fp8[] = { "attn.prefill_generic.fp8", "attn.prefill_lowsmem.fp8", "attn.fp8_bridge",
                                       "attn.prefill_bm32.fp16", NULL };
    char where[600];
    laws_where(p, where, sizeof where);
    const char *const *need = kv == KV_FP8_E5M2 ? fp8 : fp16;
    for (int i = 0; need[i]; i++)
        if (!prof_find(p, need[i])) {
            snprintf(err, COST_ERR_MAX, "%s: no law \"%s\" (kv_cache_dtype %s needs it)", where, need[i],
                     kv == KV_FP8_E5M2 ? "fp8_e5m2" : "fp16");
            return -1;
        }
    char dec[48];
    snprintf(dec, sizeof dec, "attn.decode_%s.%s", group >= 2 ? "xqa" : "scalar", kv == KV_FP8_E5M2 ? "fp8" : "fp16");
    if (!prof_find(p, dec)) {
        snprintf(err, COST_ERR_MAX, "%s: no law \"%s\" (the decode rows need it)", where, dec);
        return -1;
    }
    cost_model_t *cm = cost_profile_new(p, m, tp, err);
    if (!cm) return -1;
    cost_free(cm);
    return 0;
}

cost_model_t *cost_profile_new(const profile_t *p, const model_t *m, int tp, char err[COST_ERR_MAX])
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
    if (tp > 1 && !prof_find(p, "allreduce")) {
        snprintf(err, COST_ERR_MAX, "%s: no law \"allreduce\" (tensor_parallel_size %d)", where, tp);
        goto fail;
    }
    if (grid_index(pm) < 0) {
        snprintf(err, COST_ERR_MAX, "out of memory");
        free(pm->grid);
        free(pm->arena);
        goto fail;
    }
    cm->name = "profile";
    cm->step = pm_step;
    cm->destroy = pm_destroy;
    cm->impl = pm;
    return cm;
fail:
    free(pm);
    free(cm);
    return NULL;
}

/* ---- the analytic model ----------------------------------------------------
 * A plain roofline with no calibration, pricing the same items cost_enumerate() lists:
 * every kernel takes max(flops / peak, bytes / bandwidth) + 5 us launch; a prefill-kernel
 * CTA walking its keys alone runs at peak / 100 (one SM of a ~100-SM part), which is what
 * makes a q=1 row on the prefill route slow; elementwise work is 8 passes over tokens x
 * hidden fp16; the bridge reads fp8 and writes fp16; no interconnect (all-reduce 0); 2 ms
 * of host overhead per step.  Use it to run a scenario before any profile exists. */

typedef struct {
    const model_t *m;
    model_rank_t r;
    double flops, bw;
} am_t;

static double roof(const am_t *a, double flops, double bytes)
{
    double t = flops / a->flops, b = bytes / a->bw;
    return (t > b ? t : b) + 5e-6;
}

static double am_call(const am_t *a, const kcall_t *c)
{
    const model_t *m = a->m;
    double D = m->head_dim, kvb = c->kv_dtype == KV_FP8_E5M2 ? 1 : 2;
    double fl = call_flops(c, m, &a->r), by = 0, serial = 0;
    for (int i = 0; i < c->nseg; i++) {
        double L = (double)c->segs[i].seq_len;
        by += 2.0 * L * a->r.kv_heads * D * kvb
              * (c->route == ROUTE_DECODE_SCALAR ? a->r.group : 1);
        if (c->route == ROUTE_PREFILL_GENERIC || c->route == ROUTE_PREFILL_BM32 || c->route == ROUTE_FP8_BRIDGE) {
            double bm = c->variant == VAR_BM16_BN128 ? 16 : 32;
            double s = 4.0 * bm * L * D / (a->flops / 100.0);
            if (s > serial) serial = s;
        }
    }
    double t = roof(a, fl, by);
    return serial + 5e-6 > t ? serial + 5e-6 : t;
}

typedef struct {
    const am_t *a;
    cost_breakdown_t *o;
} am_ctx_t;

static int am_price(void *vctx, const cost_item_t *it)
{
    am_ctx_t *x = vctx;
    const am_t *a = x->a;
    const model_t *m = a->m;
    double t = 0;
    switch (it->kind) {
    case CI_ATTN: t = am_call(a, it->call); break;
    case CI_BRIDGE: t = roof(a, 0, 2.0 * (double)it->call->bridge_tokens * a->r.kv_heads * m->head_dim * 3); break;
    case CI_GEMM: t = roof(a, cost_item_flops(it, m, &a->r), gemm_bytes(it->m, it->n, it->k, it->wb)); break;
    case CI_GDN:
        t = roof(a, 8.0 * it->tokens * a->r.gdn_v_heads * m->gdn_head_dim_k * m->gdn_head_dim_v, 0);
        break;
    case CI_ELEM: t = roof(a, 0, 8.0 * it->tokens * m->hidden * 2); break;
    case CI_ALLREDUCE: t = 0; break;
    case CI_STEP: t = 2e-3; break;
    }
    cost_breakdown_add(x->o, it, t * it->count);
    return 0;
}

static int am_step(cost_model_t *cm, const cost_step_t *in, cost_breakdown_t *o)
{
    am_t *a = cm->impl;
    memset(o, 0, sizeof *o);
    am_ctx_t x = { a, o };
    return cost_enumerate(a->m, &a->r, in, am_price, &x);
}

static void am_destroy(cost_model_t *cm)
{
    free(cm->impl);
    free(cm);
}

cost_model_t *cost_analytic_new(const model_t *m, int tp, double tflops, double tbps)
{
    cost_model_t *cm = calloc(1, sizeof *cm);
    am_t *a = calloc(1, sizeof *a);
    if (!cm || !a || model_rank(m, tp, &a->r) < 0) {
        free(cm);
        free(a);
        return NULL;
    }
    a->m = m;
    a->flops = tflops * 1e12;
    a->bw = tbps * 1e12;
    cm->name = "analytic";
    cm->step = am_step;
    cm->destroy = am_destroy;
    cm->impl = a;
    return cm;
}

void cost_free(cost_model_t *cm)
{
    if (cm) cm->destroy(cm);
}

/* ---- how well the grid predicts itself --------------------------------------
 * Leave-one-out along the axis: every interior point of a group is predicted by linear
 * interpolation between its two neighbours (the grid with that point removed).  This
 * doubles the local spacing, so it bounds the interpolation error from above. */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int cost_grid_loo(const prof_law_t *l, double *median, double *maxe, int *n)
{
    int axis = law_axis(l->name), nc = l->ncols;
    *n = 0;
    *median = *maxe = NAN;
    if (axis < 0 || l->npts < 3 || axis >= nc - 1) return 0;
    double *err = malloc((size_t)l->npts * sizeof *err);
    double *xt = malloc((size_t)l->npts * 2 * sizeof *xt);
    char *done = calloc((size_t)l->npts, 1);
    if (!err || !xt || !done) {
        free(err);
        free(xt);
        free(done);
        return -1;
    }
    for (int i = 0; i < l->npts; i++) {
        if (done[i]) continue;
        const double *key = l->pts + (size_t)i * nc;
        int np = 0;
        for (int j = i; j < l->npts; j++) {
            const double *rj = l->pts + (size_t)j * nc;
            if (done[j] || !same_key(rj, key, law_nkeys(l), axis)) continue;
            done[j] = 1;
            xt[2 * np] = rj[axis];
            xt[2 * np + 1] = rj[nc - 1];
            np++;
        }
        qsort(xt, (size_t)np, 2 * sizeof *xt, cmp_pair);
        int m = 0;                                  /* average repeats in place */
        for (int j = 0; j < np; j++) {
            double sum = xt[2 * j + 1];
            int c = 1;
            while (j + 1 < np && xt[2 * (j + 1)] == xt[2 * j]) {
                sum += xt[2 * (j + 1) + 1];
                c++;
                j++;
            }
            xt[2 * m] = xt[2 * j];
            xt[2 * m + 1] = sum / c;
            m++;
        }
        for (int j = 1; j + 1 < m; j++) {
            double x0 = xt[2 * (j - 1)], x1 = xt[2 * (j + 1)], w = (xt[2 * j] - x0) / (x1 - x0);
            double pred = xt[2 * (j - 1) + 1] + w * (xt[2 * (j + 1) + 1] - xt[2 * (j - 1) + 1]);
            err[(*n)++] = fabs(pred / xt[2 * j + 1] - 1);
        }
    }
    if (*n > 0) {
        qsort(err, (size_t)*n, sizeof *err, cmp_double);
        *median = err[*n / 2];
        *maxe = err[*n - 1];
    }
    free(err);
    free(xt);
    free(done);
    return 0;
}
