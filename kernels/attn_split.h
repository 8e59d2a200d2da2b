/* attn_split.h: how many parts the prefill fast path splits each CTA's walk over the keys
 * into (docs/kernels-log.md). Plain C, no CUDA: the launcher (attn_prefill.cu) and the
 * cost model (sim/cost_feat.c) call the same function, so what the simulator prices is what the
 * kernel runs.
 *
 * The fast path's grid is (ceil(M/32), S, rows x heads): a CTA per (32 query rows, q head)
 * as in the reference system, each walking its keys in S consecutive parts of whole 128-key
 * tiles, the parts' unnormalised partials combined by a merge kernel (log-sum-exp). With
 * S = 1 it is the reference launch. Why: at q = 784 the grid is 25 x 12 = 300 CTAs, one
 * an SM (255 registers x 256 threads), 2.27 rounds of 132 SMs, so the third round runs 36
 * CTAs while 96 SMs idle (Nsight Compute: SMs active 78% of the kernel). Split in 3, the
 * 900 parts fill 6.8 rounds.
 *
 * The rule: the S in 1..ATTN_SPLIT_MAX with the smallest
 *     ceil(ctas * S / (sms * ctas_per_sm)) * ceil(max_tiles / S)  (+ ATTN_SPLIT_COST_TILES if S > 1)
 * (whole rounds of the longest part, in tiles; the merge and a part's prologue cost about
 * ATTN_SPLIT_COST_TILES tiles), among the S whose parts keep >= ATTN_SPLIT_MIN_TILES tiles;
 * the smaller S on a tie. ctas counts the CTAs that have rows (heads x sum over rows of
 * ceil(q / 32)), max_tiles the longest CTA's tiles (ceil(seq_len / 128) of the longest row).
 */
#ifndef ATTN_SPLIT_H
#define ATTN_SPLIT_H

#include <stdlib.h>

#define ATTN_SPLIT_MAX 4
#define ATTN_SPLIT_MIN_TILES 8
#define ATTN_SPLIT_COST_TILES 4

/* The rule with its three constants given (a profile records the ones its kernel ran with). */
static inline int attn_split_parts_with(long long ctas, long long max_tiles, int sms, int ctas_per_sm, int max_parts,
                                        int min_tiles, int cost_tiles)
{
    if (ctas <= 0 || max_tiles <= 0 || sms <= 0 || ctas_per_sm <= 0) return 1;
    long long slots = (long long)sms * ctas_per_sm, best = 0;
    int pick = 1;
    for (int s = 1; s <= max_parts; s++) {
        long long per = (max_tiles + s - 1) / s;
        if (s > 1 && per < min_tiles) break;
        long long cost = (ctas * s + slots - 1) / slots * per + (s > 1 ? cost_tiles : 0);
        if (s == 1 || cost < best) {
            best = cost;
            pick = s;
        }
    }
    return pick;
}

static inline int attn_split_parts(long long ctas, long long max_tiles, int sms, int ctas_per_sm)
{
    return attn_split_parts_with(ctas, max_tiles, sms, ctas_per_sm, ATTN_SPLIT_MAX, ATTN_SPLIT_MIN_TILES,
                                 ATTN_SPLIT_COST_TILES);
}

/* Tiles of part `part` of a CTA walking `tiles` tiles in `parts` parts (the kernel's split:
 * ceil(tiles / parts) a part, the last ones shorter or empty). */
static inline long long attn_split_part_tiles(long long tiles, int parts, int part)
{
    long long per = (tiles + parts - 1) / parts, lo = per * part;
    return lo >= tiles ? 0 : tiles - lo < per ? tiles - lo : per;
}

#endif /* ATTN_SPLIT_H */
