// attn_decode.cu -- paged decode attention, split-K over partitions of the context.
//
// Partitions are 256 tokens (1024 when seq_len >= 32768). Each partition writes an
// unnormalised partial (O, running max m in log2 units, sum l) to the workspace; a reduce
// kernel combines them with log-sum-exp and writes fp16 out: grid (rows, H, max_q), or, when
// the longest row has >= 64 partitions, the combine, a CTA per quarter of d (rows, H, 4 max_q).
//   XQA    : grid (rows, kv_heads, partitions); one CTA per kv head serves its whole GQA
//            group (MR = 16 query rows, WMMA), reading each K/V element once.
//   scalar : grid (rows, H, partitions); one CTA per q head, CUDA-core dot products, one
//            warp per token stream; every q head re-reads its kv head (no GQA sharing).
//   small-q: the MTP-verify row without expansion: grid (rows, kv_heads * chunks, parts),
//            MR = 32 rows = (q token, group head) pairs per CTA, causal at the tail
//            (q=5 x group 6 = 30 rows: one pass over the KV for all of them).
// fp8_e5m2 KV is dequantised while staging (half(raw << 8) * scale).
// XQA and small-q take the first configuration of their list (attn_common.cuh) that fits the
// device's shared memory per block: PIPE2 (sm_70 and up; small-q with P over S on sm_70),
// PHASE (one K/V tile, sm_75). Same grid, same MR and BN on every device.
#include "attn.h"
#include "attn_common.cuh"
#include <stdlib.h>
#include <string.h>

typedef void (*attn_kernel_t)(AttnParams);

static int np_max(const attn_batch *b) {
    int np = 1;
    for (int r = 0; r < b->num_rows; r++) {
        int L = b->seq_len[r], pl = attn_decode_partition(L);
        np = max(np, (L + pl - 1) / pl);
    }
    return np;
}

size_t attn_decode_ws_bytes(int route, const attn_kv *kv, const attn_batch *b) {
    (void)kv;
    if (route != ATTN_DECODE_XQA && route != ATTN_DECODE_SCALAR && route != ATTN_DECODE_SMALLQ) return 0;
    size_t slots = (size_t)b->total_q * b->num_q_heads * np_max(b);
    return slots * (ATTN_D + 2) * sizeof(float) + 256;
}

template <bool FP8>
__global__ void __launch_bounds__(ATTN_NT) decode_scalar_kernel(AttnParams p) {
    __shared__ ScalarSmem sm;
    float *sm_m = sm.m, *sm_l = sm.l;
    float (*sm_o)[ATTN_D] = sm.o;
    int r = blockIdx.x, h = blockIdx.y, part = blockIdx.z;
    int L = p.seq_len[r], plen = L >= 32768 ? 1024 : 256;
    int lo = part * plen;
    if (lo >= L) return;
    int hi = min(L, lo + plen);
    int kvh = h / p.group, tok = p.q_start[r];
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int *bt_row = p.block_table + (size_t)r * p.max_pages;
    float qv[8];
    {
        uint4 raw = __ldg((const uint4 *)(p.q + ((size_t)tok * p.H + h) * ATTN_D) + lane);
        const half2 *h2 = (const half2 *)&raw;
        for (int e = 0; e < 4; e++) {
            float2 f = __half22float2(h2[e]);
            qv[2 * e] = f.x * p.scale_log2;
            qv[2 * e + 1] = f.y * p.scale_log2;
        }
    }
    float m = ATTN_NEG, l = 0.f, o[8];
    for (int e = 0; e < 8; e++) o[e] = 0.f;
    half2 ks = __float2half2_rn(p.k_scale), vs = __float2half2_rn(p.v_scale);
    constexpr int U = 4; // tokens in flight per warp
    for (int base = lo + warp; base < hi; base += 8 * U) {
        uint4 kr[U], vr[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            int t = base + 8 * u;
            kr[u] = vr[u] = make_uint4(0, 0, 0, 0);
            if (t < hi) {
                int pi = t / p.page, slot = t - pi * p.page;
                size_t off = ((size_t)bt_row[pi] * p.page + slot) * p.kv_heads + kvh;
                if (!FP8) {
                    kr[u] = __ldg((const uint4 *)((const half *)p.k + off * ATTN_D) + lane);
                    vr[u] = __ldg((const uint4 *)((const half *)p.v + off * ATTN_D) + lane);
                } else {
                    uint2 k8 = __ldg((const uint2 *)((const uint8_t *)p.k + off * ATTN_D) + lane);
                    uint2 v8 = __ldg((const uint2 *)((const uint8_t *)p.v + off * ATTN_D) + lane);
                    kr[u] = make_uint4(fp8x2_to_half2(k8.x, 0x1404, ks), fp8x2_to_half2(k8.x, 0x3424, ks),
                                       fp8x2_to_half2(k8.y, 0x1404, ks), fp8x2_to_half2(k8.y, 0x3424, ks));
                    vr[u] = make_uint4(fp8x2_to_half2(v8.x, 0x1404, vs), fp8x2_to_half2(v8.x, 0x3424, vs),
                                       fp8x2_to_half2(v8.y, 0x1404, vs), fp8x2_to_half2(v8.y, 0x3424, vs));
                }
            }
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            if (base + 8 * u >= hi) break;
            const half2 *k2 = (const half2 *)&kr[u];
            float s = 0.f;
            for (int e = 0; e < 4; e++) {
                float2 f = __half22float2(k2[e]);
                s += qv[2 * e] * f.x + qv[2 * e + 1] * f.y;
            }
            for (int off = 16; off > 0; off /= 2) s += __shfl_xor_sync(0xffffffffu, s, off);
            float mn = fmaxf(m, s), alpha = exp2f(m - mn), pe = exp2f(s - mn);
            l = l * alpha + pe;
            const half2 *v2 = (const half2 *)&vr[u];
            for (int e = 0; e < 4; e++) {
                float2 f = __half22float2(v2[e]);
                o[2 * e] = o[2 * e] * alpha + pe * f.x;
                o[2 * e + 1] = o[2 * e + 1] * alpha + pe * f.y;
            }
            m = mn;
        }
    }
    if (lane == 0) { sm_m[warp] = m; sm_l[warp] = l; }
    for (int e = 0; e < 8; e++) sm_o[warp][lane * 8 + e] = o[e];
    __syncthreads();
    int d = threadIdx.x;
    float M = ATTN_NEG;
    for (int w = 0; w < 8; w++) M = fmaxf(M, sm_m[w]);
    float od = 0.f, lt = 0.f;
    for (int w = 0; w < 8; w++) {
        float wt = exp2f(sm_m[w] - M);
        od += wt * sm_o[w][d];
        lt += wt * sm_l[w];
    }
    size_t slot = ((size_t)tok * p.H + h) * p.np_max + part;
    p.ws_o[slot * ATTN_D + d] = od;
    if (d == 0) { p.ws_m[slot] = M; p.ws_l[slot] = lt; }
}

// The log-sum-exp weights of a row's np partitions (slots base .. base + np - 1): sw[i] = 2^(m_i - M)
// for the largest m M, and the returned denominator sum_i sw[i] l_i; red: 8 floats of scratch.
// Every thread of the CTA calls it (it synchronises).
static __device__ __forceinline__ float partition_weights(const AttnParams &p, size_t base, int np, float *sw, float *red) {
    int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    float M = ATTN_NEG;
    for (int i = tid; i < np; i += ATTN_NT) M = fmaxf(M, p.ws_m[base + i]);
    for (int off = 16; off > 0; off /= 2) M = fmaxf(M, __shfl_xor_sync(0xffffffffu, M, off));
    if (lane == 0) red[warp] = M;
    __syncthreads();
    M = red[0];
    for (int w = 1; w < 8; w++) M = fmaxf(M, red[w]);
    __syncthreads();
    float den = 0.f;
    for (int i = tid; i < np; i += ATTN_NT) {
        float w = exp2f(p.ws_m[base + i] - M);
        sw[i] = w;
        den += w * p.ws_l[base + i];
    }
    for (int off = 16; off > 0; off /= 2) den += __shfl_xor_sync(0xffffffffu, den, off);
    if (lane == 0) red[warp] = den;
    __syncthreads();
    den = 0.f;
    for (int w = 0; w < 8; w++) den += red[w];
    return den;
}

// combine partitions: grid (rows, H, max_q), 256 threads; dynamic smem np_max floats (weights).
// The O sum runs as 4 groups of 64 threads, each thread a float4 column of d, each group every
// 4th partition with 8 loads in flight (the partials are L2-resident: the loop is L2-latency
// bound, so its depth is what costs), then the 4 group sums are added through smem.
__global__ void __launch_bounds__(ATTN_NT) decode_reduce_kernel(AttnParams p) {
    extern __shared__ float sw[];
    __shared__ float red[8];
    __shared__ float4 red4[3][ATTN_D / 4];
    int r = blockIdx.x, h = blockIdx.y, qi = blockIdx.z;
    if (qi >= p.q_len[r]) return;
    int L = p.seq_len[r], plen = L >= 32768 ? 1024 : 256, np = (L + plen - 1) / plen;
    size_t base = ((size_t)(p.q_start[r] + qi) * p.H + h) * p.np_max;
    int tid = threadIdx.x;
    float den = partition_weights(p, base, np, sw, red);
    const int c4 = tid % (ATTN_D / 4), grp = tid / (ATTN_D / 4); // 4 groups
    const float4 *po = (const float4 *)(p.ws_o + base * ATTN_D) + c4;
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    constexpr int U = 8;
    int i = grp;
    for (; i + 4 * (U - 1) < np; i += 4 * U) {
        float4 v[U];
#pragma unroll
        for (int u = 0; u < U; u++) v[u] = po[(size_t)(i + 4 * u) * (ATTN_D / 4)];
#pragma unroll
        for (int u = 0; u < U; u++) {
            float w = sw[i + 4 * u];
            acc.x += w * v[u].x; acc.y += w * v[u].y; acc.z += w * v[u].z; acc.w += w * v[u].w;
        }
    }
    for (; i < np; i += 4) {
        float4 v = po[(size_t)i * (ATTN_D / 4)];
        float w = sw[i];
        acc.x += w * v.x; acc.y += w * v.y; acc.z += w * v.z; acc.w += w * v.w;
    }
    if (grp > 0) red4[grp - 1][c4] = acc;
    __syncthreads();
    if (grp == 0) {
#pragma unroll
        for (int g = 0; g < 3; g++) {
            float4 v = red4[g][c4];
            acc.x += v.x; acc.y += v.y; acc.z += v.z; acc.w += v.w;
        }
        float inv = den > 0.f ? 1.f / den : 0.f;
        half2 lo = __floats2half2_rn(acc.x * inv, acc.y * inv), hi = __floats2half2_rn(acc.z * inv, acc.w * inv);
        uint2 pk;
        pk.x = *(uint32_t *)&lo;
        pk.y = *(uint32_t *)&hi;
        *(uint2 *)(p.out + (base / p.np_max) * ATTN_D + 4 * c4) = pk;
    }
}

// v6 combine (rows of >= 64 partitions; ATTN_DECODE_REDUCE=v5|wide forces one): grid (rows, H, max_q x 4),
// each CTA one quarter of d (64 columns = 16 float4) for one (row, head, q token), so 4x the CTAs of
// v5's and 16 partition groups of 16 threads: a 240K row's 235 partitions are ~15 per thread, two
// batches of 8 loads in flight where v5 walked ~59 per thread in 8 dependent batches.
// Dynamic smem only: [15 x 16 float4 group sums][8 floats][np weights].
#define ATTN_COMBINE_DS 4
#define ATTN_COMBINE_MIN_NP 64 // partitions of the longest row from which the combine runs (else v5's)
__host__ __device__ constexpr int attn_combine_smem(int np) { return 15 * 16 * 16 + 8 * 4 + np * 4; }
__global__ void __launch_bounds__(ATTN_NT) decode_combine_kernel(AttnParams p) {
    extern __shared__ float4 dsm4[];
    float4 (*red4)[16] = (float4 (*)[16])dsm4;
    float *red = (float *)(dsm4 + 15 * 16), *sw = red + 8;
    int r = blockIdx.x, h = blockIdx.y, qi = blockIdx.z / ATTN_COMBINE_DS, ds = blockIdx.z % ATTN_COMBINE_DS;
    if (qi >= p.q_len[r]) return;
    int L = p.seq_len[r], plen = L >= 32768 ? 1024 : 256, np = (L + plen - 1) / plen;
    size_t base = ((size_t)(p.q_start[r] + qi) * p.H + h) * p.np_max;
    int tid = threadIdx.x;
    float den = partition_weights(p, base, np, sw, red);
    const int c4 = tid % 16, grp = tid / 16; // 16 groups of 16 float4 columns
    const float4 *po = (const float4 *)(p.ws_o + base * ATTN_D) + ds * 16 + c4;
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    constexpr int U = 8, G = 16;
    int i = grp;
    for (; i + G * (U - 1) < np; i += G * U) {
        float4 v[U];
#pragma unroll
        for (int u = 0; u < U; u++) v[u] = po[(size_t)(i + G * u) * (ATTN_D / 4)];
#pragma unroll
        for (int u = 0; u < U; u++) {
            float w = sw[i + G * u];
            acc.x += w * v[u].x; acc.y += w * v[u].y; acc.z += w * v[u].z; acc.w += w * v[u].w;
        }
    }
    for (; i < np; i += G) {
        float4 v = po[(size_t)i * (ATTN_D / 4)];
        float w = sw[i];
        acc.x += w * v.x; acc.y += w * v.y; acc.z += w * v.z; acc.w += w * v.w;
    }
    if (grp > 0) red4[grp - 1][c4] = acc;
    __syncthreads();
    if (grp == 0) {
        for (int g = 0; g < G - 1; g++) {
            float4 v = red4[g][c4];
            acc.x += v.x; acc.y += v.y; acc.z += v.z; acc.w += v.w;
        }
        float inv = den > 0.f ? 1.f / den : 0.f;
        half2 lo = __floats2half2_rn(acc.x * inv, acc.y * inv), hi = __floats2half2_rn(acc.z * inv, acc.w * inv);
        uint2 pk;
        pk.x = *(uint32_t *)&lo;
        pk.y = *(uint32_t *)&hi;
        *(uint2 *)(p.out + (base / p.np_max) * ATTN_D + ds * 64 + 4 * c4) = pk;
    }
}

// configuration I of route R's list, OCC CTAs per SM in its launch bounds
template <int R, int I, bool FP8, int OCC>
static attn_kernel_t decode_kernel() {
    if constexpr (I >= attn_cfg_list(R).n) {
        return nullptr;
    } else {
        constexpr KCfg c = attn_cfg(R, I);
        return attn_wmma_kernel<c.mr, c.bn, c.mode, c.plan, FP8, true, OCC>;
    }
}

// v5 A/B variants of XQA entry 0 (env ATTN_DECODE_XQA=<name>; NOTES.md "v5 plan"). Each keeps the
// grid, MR = 16, the partitions and the reduce; they differ in BN, staging and the S split
// (PL_SSPLIT: all 8 warps share S over slices of D, see attn_common.cuh):
//   v4     : BN64 PIPE2 (the default; same as no variable)
//   split  : BN64 PIPE2, S split (2 D halves)
//   bn32   : BN32 PIPE2 (K+V of the next 32 tokens in flight: 32 staging registers instead of 64, so
//            128 registers hold it without spills -> 2 CTAs/SM), S split (4 D quarters); 46.6 KB
//   bn32n  : bn32 without the S split (2 warps do S)
//   pipe   : BN64 PIPE (next K issued before S and stored after it, next V issued then and stored
//            after PV: one 32-register stage), S split
//   phase  : BN64 PHASE (the sm_75 entry: one K/V smem tile, one stage; 48.5 KB), no split
//   phases : phase with the S split
//   phasena: phase with the K/V loads skipping L1 (PL_NOL1; v6: the default, fp16 and fp8)
// CTAs per SM: 2 unless ATTN_DECODE_OCC=1|2|3 (3 only for the <= 53 KB variants); lowered to what
// the SM's shared memory holds (sm_70: 96 KB per SM).
struct XqaVariant { const char *name; KCfg c; };
static const XqaVariant xqa_variants[] = {
    {"split", {16, 64, KV_PIPE2, PL_SSPLIT, 2}}, {"bn32", {16, 32, KV_PIPE2, PL_SSPLIT, 2}},
    {"bn32n", {16, 32, KV_PIPE2, 0, 2}},         {"pipe", {16, 64, KV_PIPE, PL_SSPLIT, 2}},
    {"phase", {16, 64, KV_PHASE, 0, 2}},         {"phases", {16, 64, KV_PHASE, PL_SSPLIT, 2}},
    {"phasena", {16, 64, KV_PHASE, PL_NOL1, 2}},
};
#define XQA_NVAR ((int)(sizeof xqa_variants / sizeof xqa_variants[0]))

template <int V, bool FP8, int OCC>
static attn_kernel_t xqa_variant_kernel() {
    constexpr KCfg c = V == 0 ? KCfg{16, 64, KV_PIPE2, PL_SSPLIT, 2} : V == 1 ? KCfg{16, 32, KV_PIPE2, PL_SSPLIT, 2}
                     : V == 2 ? KCfg{16, 32, KV_PIPE2, 0, 2}         : V == 3 ? KCfg{16, 64, KV_PIPE, PL_SSPLIT, 2}
                     : V == 4 ? KCfg{16, 64, KV_PHASE, 0, 2}         : V == 5 ? KCfg{16, 64, KV_PHASE, PL_SSPLIT, 2}
                                                                     : KCfg{16, 64, KV_PHASE, PL_NOL1, 2};
    return attn_wmma_kernel<c.mr, c.bn, c.mode, c.plan, FP8, true, OCC>;
}
template <int V, bool FP8>
static attn_kernel_t xqa_variant_occ(int occ) {
    if constexpr (V == 1 || V == 2 || V >= 4) {
        if (occ >= 3) return xqa_variant_kernel<V, FP8, 3>();
    }
    return occ <= 1 ? xqa_variant_kernel<V, FP8, 1>() : xqa_variant_kernel<V, FP8, 2>();
}

// the variant ATTN_DECODE_XQA names if it fits `limit` (kernel; its smem in *smem_out), else nullptr
template <bool FP8>
static attn_kernel_t xqa_variant(int limit, int *smem_out) {
    // default (v6, NOTES.md): "phasena" at 2 CTAs/SM for fp16 and fp8 (v5's phase with the K/V loads
    // skipping L1: 0.137-0.140 vs 0.140-0.143 ms fp16 at 240K, fp8 p1568 0.129-0.130 vs v4's
    // 0.133-0.134, two A/B runs); only where two of its CTAs fit an SM, else v4's entry 0 as before.
    // ATTN_DECODE_XQA=v4 (any unknown name) keeps v4's kernel.
    const char *v = getenv("ATTN_DECODE_XQA");
    int dflt = !v || !v[0];
    if (dflt) v = "phasena";
    for (int vi = 0; vi < XQA_NVAR; vi++) {
        const KCfg c = xqa_variants[vi].c;
        if (strcmp(v, xqa_variants[vi].name)) continue;
        int smem = attn_cfg_bytes(c);
        if (smem > limit) return nullptr;
        const char *oe = getenv("ATTN_DECODE_OCC");
        int occ = oe && oe[0] >= '1' && oe[0] <= '3' ? oe[0] - '0' : c.occ;
        if (occ == 3 && smem > 53 * 1024) occ = 2;
        int per_sm = attn_smem_per_sm();
        while (occ > 1 && per_sm > 0 && occ * (smem + 1024) > per_sm) occ--;
        if (dflt && occ < 2) return nullptr;
        *smem_out = smem;
        switch (vi) {
        case 0: return xqa_variant_occ<0, FP8>(occ);
        case 1: return xqa_variant_occ<1, FP8>(occ);
        case 2: return xqa_variant_occ<2, FP8>(occ);
        case 3: return xqa_variant_occ<3, FP8>(occ);
        case 4: return xqa_variant_occ<4, FP8>(occ);
        case 5: return xqa_variant_occ<5, FP8>(occ);
        default: return xqa_variant_occ<6, FP8>(occ);
        }
    }
    return nullptr;
}

// small-q on GPUs where two CTAs fit an SM (v6, NOTES.md): one K/V tile (PHASE), 2 CTAs per SM, K/V
// loads skipping L1 ("phase2na"; q=5 240K 0.167-0.168 vs the list's PIPE2 entry at 1 CTA/SM
// 0.207-0.208 ms, two A/B runs). ATTN_DECODE_SMALLQ=phase2 (L1 not skipped) or =v5 (the list's
// entry 0) for A/B; nullptr = the list's entry 0.
template <bool FP8>
static attn_kernel_t smallq_variant(int limit, int *smem_out) {
    const char *v = getenv("ATTN_DECODE_SMALLQ");
    if (!v || !v[0]) v = "phase2na";
    constexpr KCfg b = {32, 64, KV_PHASE, 0, 2}, c = {32, 64, KV_PHASE, PL_NOL1, 2};
    static_assert(attn_cfg_bytes(b) == attn_cfg_bytes(c), "same plan");
    int per_sm = attn_smem_per_sm();
    if ((!strcmp(v, "phase2") || !strcmp(v, "phase2na")) && attn_cfg_bytes(b) <= limit &&
        (per_sm <= 0 || 2 * (attn_cfg_bytes(b) + 1024) <= per_sm)) {
        *smem_out = attn_cfg_bytes(b);
        return v[6] ? attn_wmma_kernel<c.mr, c.bn, c.mode, c.plan, FP8, true, 2>
                    : attn_wmma_kernel<b.mr, b.bn, b.mode, b.plan, FP8, true, 2>;
    }
    return nullptr;
}

template <int R, bool FP8>
static int launch_wmma_decode(const AttnParams &p, int rows, int kv_heads, int np, cudaStream_t s) {
    int limit = attn_smem_budget();
    if (limit < 0) return ATTN_ECUDA;
    int i = attn_cfg_pick(R, limit);
    if (i < 0) return ATTN_ESMEM;
    const KCfg c = attn_cfg_list(R).c[i];
    int smem = attn_cfg_bytes(c);
    attn_kernel_t k;
    static_assert(ATTN_CFG_MAX == 3, "one case per list entry");
    if (i == 0) {
        // entry 0: CTAs per SM as measured (NOTES.md v4): small-q 1 (no register cap), XQA fp16 1
        // (0.171 vs 0.184 ms at 240K: the 128-register cap spills), XQA fp8 2 (0.138 vs 0.172:
        // no spill, the second CTA hides the dequant); ATTN_DECODE_OCC=1|2 overrides (bench);
        // 1 where two CTAs' smem does not fit an SM (sm_70: 96 KB per SM)
        const char *occ = getenv("ATTN_DECODE_OCC");
        int def_one = R == ATTN_DECODE_XQA ? !FP8 : c.occ == 1;
        int one = occ && (occ[0] == '1' || occ[0] == '2') ? occ[0] == '1' : def_one;
        int per_sm = attn_smem_per_sm();
        if (per_sm > 0 && 2 * (smem + 1024) > per_sm) one = 1;
        k = one ? decode_kernel<R, 0, FP8, 1>() : decode_kernel<R, 0, FP8, 2>();
        const char *ek = getenv("ATTN_DECODE_EARLYK"); // A/B timing of the v3 K store (fp16 XQA only)
        if (R == ATTN_DECODE_XQA && !FP8 && ek && ek[0] == '1') {
            constexpr KCfg c0 = attn_cfg(ATTN_DECODE_XQA, 0);
            static_assert(c0.mode == KV_PIPE2 && c0.plan == 0, "EARLYK variant of XQA entry 0");
            k = one ? attn_wmma_kernel<c0.mr, c0.bn, KV_PIPE2, PL_EARLYK, false, true, 1>
                    : attn_wmma_kernel<c0.mr, c0.bn, KV_PIPE2, PL_EARLYK, false, true, 2>;
        }
    } else {
        k = i == 1 ? decode_kernel<R, 1, FP8, 1>() : decode_kernel<R, 2, FP8, 1>();
    }
    if (!k) return ATTN_ESMEM;
    int vsmem = 0;
    attn_kernel_t kv5 = R == ATTN_DECODE_XQA && i == 0 ? xqa_variant<FP8>(limit, &vsmem) : nullptr;
    if (R == ATTN_DECODE_SMALLQ && i == 0) kv5 = smallq_variant<FP8>(limit, &vsmem);
    if (kv5) { k = kv5; smem = vsmem; }
    if (attn_set_smem((const void *)k, smem)) return ATTN_ECUDA;
    dim3 grid(rows, kv_heads * p.nchunks, np);
    k<<<grid, ATTN_NT, smem, s>>>(p);
    return cuda_check(cudaGetLastError());
}

int attn_decode_launch(int route, const attn_kv *kv, const attn_batch *b, const void *q, void *out,
                       float sm_scale, void *ws, size_t ws_bytes, cudaStream_t s) {
    if (ws_bytes < attn_decode_ws_bytes(route, kv, b) || !ws) return ATTN_EWS;
    if (route == ATTN_DECODE_SMALLQ ? b->max_q > 16 : b->max_q != 1) return ATTN_ESHAPE;
    AttnParams p;
    attn_params_init(&p, kv, b, q, out, sm_scale);
    int np = np_max(b);
    size_t slots = (size_t)b->total_q * b->num_q_heads * np;
    p.np_max = np;
    p.ws_o = (float *)ws;
    p.ws_m = p.ws_o + slots * ATTN_D;
    p.ws_l = p.ws_m + slots;
    int fp8 = kv->dtype == ATTN_FP8_E5M2, err;
    if (route == ATTN_DECODE_SCALAR) {
        dim3 grid(b->num_rows, b->num_q_heads, np);
        if (fp8) decode_scalar_kernel<true><<<grid, ATTN_NT, 0, s>>>(p);
        else decode_scalar_kernel<false><<<grid, ATTN_NT, 0, s>>>(p);
        err = cuda_check(cudaGetLastError());
    } else {
        int mr = route == ATTN_DECODE_XQA ? 16 : 32;
        p.nchunks = (b->max_q * p.group + mr - 1) / mr;
        static_assert(attn_cfg(ATTN_DECODE_XQA, 0).mr == 16 && attn_cfg(ATTN_DECODE_XQA, 1).mr == 16 &&
                      attn_cfg(ATTN_DECODE_SMALLQ, 0).mr == 32 && attn_cfg(ATTN_DECODE_SMALLQ, 2).mr == 32,
                      "every configuration of a decode route keeps its MR (the grid depends on it)");
        if (mr == 16) err = fp8 ? launch_wmma_decode<ATTN_DECODE_XQA, true>(p, b->num_rows, kv->kv_heads, np, s)
                                : launch_wmma_decode<ATTN_DECODE_XQA, false>(p, b->num_rows, kv->kv_heads, np, s);
        else err = fp8 ? launch_wmma_decode<ATTN_DECODE_SMALLQ, true>(p, b->num_rows, kv->kv_heads, np, s)
                       : launch_wmma_decode<ATTN_DECODE_SMALLQ, false>(p, b->num_rows, kv->kv_heads, np, s);
    }
    if (err) return err;
    const char *ab = getenv("ATTN_AB_SKIP_REDUCE"); // timing A/B only: the output is NOT written
    if (ab && ab[0] == '1') return 0;
    // the v6 combine where a row has many partitions (its 4x CTAs shorten a long walk), v5's reduce
    // where it has few (4x the CTAs of nearly no work: 16 rows x q=5 at 1K is 7680 CTAs); the
    // ATTN_DECODE_REDUCE=v5|wide A/B knob forces one
    const char *rv = getenv("ATTN_DECODE_REDUCE");
    int use_v5 = rv && !strcmp(rv, "v5") ? 1 : rv && !strcmp(rv, "wide") ? 0 : np < ATTN_COMBINE_MIN_NP;
    if (use_v5) {
        int rsmem = np * (int)sizeof(float);
        if (rsmem + ATTN_REDUCE_STATIC_SMEM > 48 * 1024) return ATTN_ESHAPE; // np > ~11500 partitions
        dim3 rgrid(b->num_rows, b->num_q_heads, b->max_q);
        decode_reduce_kernel<<<rgrid, ATTN_NT, rsmem, s>>>(p);
        return cuda_check(cudaGetLastError());
    }
    int csmem = attn_combine_smem(np);
    if (csmem > 48 * 1024) return ATTN_ESHAPE; // np > ~11300 partitions
    dim3 cgrid(b->num_rows, b->num_q_heads, b->max_q * ATTN_COMBINE_DS);
    decode_combine_kernel<<<cgrid, ATTN_NT, csmem, s>>>(p);
    return cuda_check(cudaGetLastError());
}
