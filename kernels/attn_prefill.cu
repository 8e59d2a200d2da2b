// attn_prefill.cu -- paged prefill attention: generic (BM32/BN64), low-smem (BM16/BN128),
// "BM32 phase" fast path (BM32/BN128, register->smem pipelined), and the fp8 bridge.
// Each route's tile/staging configuration is the first of its list (attn_common.cuh,
// attn_cfg_list) that fits the device's shared memory per block: sm_90 runs the measured
// configurations, sm_70 (96 KB) and sm_75 (64 KB) smaller stagings of the same launch.
//
// Launch: grid (ceil(max_q / BM), 1, rows * H), 256 threads; every q head walks the keys
// 0 .. (its last row's position) of its kv head h / group, so a q = 1 row is H CTAs each
// walking the whole context serially (the pathology the decode route removes).
// v8: the fast path's grid is (ceil(max_q / BM), S, rows * H): each CTA's walk in S parts
// (kernels/attn_split.h says how many: 1 unless the CTAs leave a round of SMs mostly idle),
// then a merge kernel (log-sum-exp over the parts' partials, a warp per token and head).
// fp8 KV: generic and low-smem dequantise while staging; the bridge first expands every
// page of each row into an fp16 workspace laid out with page 784 and an identity block
// table, then runs the fp16 fast kernel on it.
// CPU reference: kernels/ref.c. Validate + time: kernels/bench_kernels.cu.
#include "attn.h"
#include "attn_common.cuh"
#include "attn_split.h"
#include <stdlib.h>
#include <string.h>

#define BRIDGE_PAGE 784

typedef void (*attn_kernel_t)(AttnParams);

// v8: the merge of a split fast-path launch (p.np_max parts): a warp per (token, head), lane l the
// columns 8l .. 8l + 7; out = sum_i 2^(m_i - M) O_i / sum_i 2^(m_i - M) l_i (an empty part: m = -inf)
__global__ void __launch_bounds__(ATTN_NT) prefill_merge_kernel(AttnParams p, int n) {
    int th = blockIdx.x * (ATTN_NT / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (th >= n) return;
    const int np = p.np_max;
    size_t base = (size_t)th * np;
    float M = ATTN_NEG;
    for (int i = 0; i < np; i++) M = fmaxf(M, p.ws_m[base + i]);
    float acc[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f}, den = 0.f;
    for (int i = 0; i < np; i++) {
        float w = exp2f(p.ws_m[base + i] - M);
        den += w * p.ws_l[base + i];
        const float4 *po = (const float4 *)(p.ws_o + (base + i) * ATTN_D) + 2 * lane;
        float4 a = po[0], b = po[1];
        acc[0] += w * a.x; acc[1] += w * a.y; acc[2] += w * a.z; acc[3] += w * a.w;
        acc[4] += w * b.x; acc[5] += w * b.y; acc[6] += w * b.z; acc[7] += w * b.w;
    }
    float inv = den > 0.f ? 1.f / den : 0.f;
    uint4 pk;
    half2 *ph = (half2 *)&pk;
#pragma unroll
    for (int e = 0; e < 4; e++) ph[e] = __floats2half2_rn(acc[2 * e] * inv, acc[2 * e + 1] * inv);
    *(uint4 *)(p.out + (size_t)th * ATTN_D + 8 * lane) = pk;
}

// v8: parts a KVSPLIT kernel's CTAs walk for this batch on this device (attn_split.h), or the
// ATTN_PREFILL_SPLIT=N override (1..8, A/B and validation); 0 on a bad override. occ: the kernel's
// CTAs an SM (the occupancy calculator, capped by a forced shared-memory budget's per-SM share).
static int split_parts(const attn_batch *b, int mr, int bn, int occ) {
    const char *e = getenv("ATTN_PREFILL_SPLIT");
    if (e && *e) {
        char *end;
        long v = strtol(e, &end, 10);
        return *end || v < 1 || v > 8 ? 0 : (int)v;
    }
    long long ctas = 0, tiles = 0;
    for (int r = 0; r < b->num_rows; r++) {
        ctas += (long long)(b->q_len[r] + mr - 1) / mr * b->num_q_heads;
        tiles = max(tiles, (long long)(b->seq_len[r] + bn - 1) / bn);
    }
    int dev = 0, sms = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
        return 1;
    return attn_split_parts(ctas, tiles, sms, occ);
}

// CTAs of kernel k (smem bytes of dynamic shared memory) an SM holds; cached per kernel and device
static int kernel_occupancy(const void *k, int smem) {
    static const void *seen[16];
    static int seen_dev[16], seen_occ[16], nseen;
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) return 1;
    for (int i = 0; i < nseen; i++)
        if (seen[i] == k && seen_dev[i] == dev) return seen_occ[i];
    int occ = 0;
    if (attn_set_smem(k, smem) || cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, k, ATTN_NT, smem) != cudaSuccess ||
        occ < 1)
        occ = 1;
    int per_sm = attn_smem_per_sm();
    if (per_sm > 0 && per_sm / smem < occ) occ = max(1, per_sm / smem);
    if (nseen < 16) { seen[nseen] = k; seen_dev[nseen] = dev; seen_occ[nseen++] = occ; }
    return occ;
}

// the partials of a split launch: [slots, D] O, [slots] m, [slots] l (slots = total_q x H x parts)
static size_t split_ws_bytes(const attn_batch *b, int parts) {
    if (parts <= 1) return 0;
    size_t slots = (size_t)b->total_q * b->num_q_heads * parts;
    return slots * (ATTN_D + 2) * sizeof(float) + 256;
}

// parts: gridDim.y (1 = the reference launch; > 1 only for KVSPLIT plans, with ws the partials)
template <int MR, int BN, int MODE, int PLAN, int OCC, bool FP8>
static int launch_tiles(const AttnParams &p0, int rows, int max_q, cudaStream_t s, int parts = 1, const attn_batch *b = nullptr,
                        void *ws = nullptr, size_t ws_bytes = 0) {
    attn_kernel_t k = attn_wmma_kernel<MR, BN, MODE, PLAN, FP8, false, OCC>;
    constexpr int smem = Smem<MR, BN, MODE, PLAN>::BYTES;
    if (attn_set_smem((const void *)k, smem)) return ATTN_ECUDA;
    AttnParams p = p0;
    if (parts > 1) {
        if (!(PLAN & PL_KVSPLIT) || !b) return ATTN_EINVAL;
        if (!ws || ws_bytes < split_ws_bytes(b, parts)) return ATTN_EWS;
        size_t slots = (size_t)b->total_q * b->num_q_heads * parts;
        p.np_max = parts;
        p.ws_o = (float *)ws;
        p.ws_m = p.ws_o + slots * ATTN_D;
        p.ws_l = p.ws_m + slots;
    }
    dim3 grid((max_q + MR - 1) / MR, parts, rows * p.H);
    k<<<grid, ATTN_NT, smem, s>>>(p);
    if (cuda_check(cudaGetLastError())) return ATTN_ECUDA;
    if (parts > 1) {
        int n = b->total_q * b->num_q_heads;
        prefill_merge_kernel<<<(n + ATTN_NT / 32 - 1) / (ATTN_NT / 32), ATTN_NT, 0, s>>>(p, n);
        return cuda_check(cudaGetLastError());
    }
    return 0;
}

// CTAs an SM of configuration I of route R
template <int R, int I, bool FP8>
static int cfg_occupancy() {
    if constexpr (I >= attn_cfg_list(R).n) {
        return 1;
    } else {
        constexpr KCfg c = attn_cfg(R, I);
        return kernel_occupancy((const void *)attn_wmma_kernel<c.mr, c.bn, c.mode, c.plan, FP8, false, c.occ>,
                                Smem<c.mr, c.bn, c.mode, c.plan>::BYTES);
    }
}

// the parts configuration I of route R splits this batch into (1 for a configuration without
// KVSPLIT; 0 on a bad ATTN_PREFILL_SPLIT)
template <int R, int I, bool FP8>
static int cfg_parts(const attn_batch *b) {
    if constexpr (I >= attn_cfg_list(R).n) {
        return 1;
    } else {
        constexpr KCfg c = attn_cfg(R, I);
        if constexpr ((c.plan & PL_KVSPLIT) != 0) return split_parts(b, c.mr, c.bn, cfg_occupancy<R, I, FP8>());
        return 1;
    }
}

// configuration I of route R's list; a KVSPLIT configuration (the fast path, v8) in the parts
// split_parts picks, its partials in ws
template <int R, int I, bool FP8>
static int launch_cfg(const AttnParams &p, int rows, int max_q, cudaStream_t s, const attn_batch *b, void *ws,
                      size_t ws_bytes) {
    if constexpr (I >= attn_cfg_list(R).n) {
        return ATTN_ESMEM;
    } else {
        constexpr KCfg c = attn_cfg(R, I);
        int parts = cfg_parts<R, I, FP8>(b);
        if (parts < 1) return ATTN_EINVAL;
        return launch_tiles<c.mr, c.bn, c.mode, c.plan, c.occ, FP8>(p, rows, max_q, s, parts, b, ws, ws_bytes);
    }
}

// the fast path's A/B variants (env ATTN_PREFILL_VAR; kernels/NOTES.md v6, v7): same grid and BM,
// other staging / CTAs per SM. An unknown name or one that does not fit is an error, not the default.
template <int MR, int BN, int MODE, int PLAN, int OCC>
static int launch_var_if(const char *v, const char *name, int limit, const AttnParams &p, int rows, int max_q,
                         cudaStream_t s, int *rc) {
    if (strcmp(v, name)) return 0;
    *rc = limit >= attn_cfg_bytes(KCfg{MR, BN, MODE, PLAN, OCC})
              ? launch_tiles<MR, BN, MODE, PLAN, OCC, false>(p, rows, max_q, s)
              : ATTN_ESMEM;
    return 1;
}
static int launch_prefill_var(const char *v, int limit, const AttnParams &p, int rows, int max_q, cudaStream_t s) {
    int rc = ATTN_EINVAL;
    if (launch_var_if<32, 128, KV_SHARED, 0, 2>(v, "shared2", limit, p, rows, max_q, s, &rc) ||
        launch_var_if<32, 128, KV_SHARED, PL_NOL1, 2>(v, "shared2na", limit, p, rows, max_q, s, &rc) ||
        launch_var_if<32, 128, KV_PHASE, PL_SALIAS | PL_NOL1, 1>(v, "na", limit, p, rows, max_q, s, &rc) ||
        launch_var_if<32, 128, KV_PHASE, PL_SALIAS | PL_QREG, 1>(v, "v7q", limit, p, rows, max_q, s, &rc) ||
        launch_var_if<32, 128, KV_PHASE, PL_SALIAS | PL_SPAD | PL_ASKIP, 1>(v, "v7s", limit, p, rows, max_q, s, &rc) ||
        launch_var_if<32, 128, KV_PHASE, PL_SALIAS, 1>(v, "v6", limit, p, rows, max_q, s, &rc) ||
        launch_var_if<32, 128, KV_PHASE, PL_QREG | PL_SPAD | PL_ASKIP, 1>(v, "v7ns", limit, p, rows, max_q, s, &rc) ||
        launch_var_if<32, 128, KV_PHASE, PL_SALIAS | PL_QREG | PL_SPAD | PL_ASKIP | PL_LEANSM, 1>(v, "v7m", limit, p, rows,
                                                                                                max_q, s, &rc) ||
        launch_var_if<32, 128, KV_PHASE, PL_SALIAS | PL_QREG | PL_SPAD | PL_ASKIP, 1>(v, "v7", limit, p, rows, max_q, s,
                                                                                    &rc) ||
        launch_var_if<32, 128, KV_PHASE, PL_QREG | PL_SPAD | PL_ASKIP | PL_LEANSM, 1>(v, "v7nsm", limit, p, rows, max_q, s,
                                                                                    &rc) ||
        launch_var_if<32, 128, KV_PHASE, PL_QREG | PL_SPAD | PL_ASKIP | PL_LEANSM | PL_EX2, 1>(v, "v7nsmx", limit, p, rows,
                                                                                             max_q, s, &rc) ||
        launch_var_if<32, 128, KV_PHASE, PL_SALIAS | PL_QREG | PL_SPAD | PL_ASKIP | PL_LEANSM | PL_EX2, 1>(
            v, "v7x", limit, p, rows, max_q, s, &rc) || // v7's default as calibrated in session H, unsplit
        launch_var_if<32, 64, KV_PHASE, PL_SALIAS, 2>(v, "phase64x2", limit, p, rows, max_q, s, &rc) ||
        launch_var_if<32, 64, KV_PHASE, PL_SALIAS | PL_NOL1, 2>(v, "phase64x2na", limit, p, rows, max_q, s, &rc))
        return rc;
    return ATTN_EINVAL;
}

// attn_fast_ab_env (attn_split.h) on this device's per-block limit; *var: ATTN_PREFILL_VAR's name
static int fast_ab_choice(int limit, const char **var) {
    int ab = attn_fast_ab_env(limit >= attn_cfg_bytes(ATTN_FAST_PIPE_V3));
    if (ab == 2 && var) *var = getenv("ATTN_PREFILL_VAR");
    return ab;
}

// route R on the configuration that fits this device
template <int R, bool FP8>
static int launch_prefill(const AttnParams &p, int rows, int max_q, cudaStream_t s, const attn_batch *b, void *ws,
                          size_t ws_bytes) {
    int limit = attn_smem_budget();
    if (limit < 0) return ATTN_ECUDA;
    if constexpr (R == ATTN_PREFILL_FAST && !FP8) {
        /* The table's pick is the default: v7's (Q in registers, padded S, skipped rescales, the
         * lean softmax; 9.57 vs v6's 11.34 ms at q=784/104K, NOTES.md v7). v3's pipelined configuration stays
         * selectable with ATTN_PREFILL_PIPE=1 where it fits, the A/B variants with ATTN_PREFILL_VAR. */
        constexpr KCfg c = ATTN_FAST_PIPE_V3;
        const char *v = nullptr;
        switch (fast_ab_choice(limit, &v)) {
        case 1: return launch_tiles<c.mr, c.bn, c.mode, c.plan, c.occ, false>(p, rows, max_q, s);
        case 2: return launch_prefill_var(v, limit, p, rows, max_q, s);
        default: break;
        }
    }
    static_assert(ATTN_CFG_MAX == 3, "one case per list entry");
    switch (attn_cfg_pick(R, limit)) {
    case 0: return launch_cfg<R, 0, FP8>(p, rows, max_q, s, b, ws, ws_bytes);
    case 1: return launch_cfg<R, 1, FP8>(p, rows, max_q, s, b, ws, ws_bytes);
    case 2: return launch_cfg<R, 2, FP8>(p, rows, max_q, s, b, ws, ws_bytes);
    default: return ATTN_ESMEM;
    }
}

int attn_fast_ctas_per_sm(void) {
    int limit = attn_smem_budget();
    if (limit < 0) return ATTN_ECUDA;
    switch (attn_cfg_pick(ATTN_PREFILL_FAST, limit)) {
    case 0: return cfg_occupancy<ATTN_PREFILL_FAST, 0, false>();
    case 1: return cfg_occupancy<ATTN_PREFILL_FAST, 1, false>();
    case 2: return cfg_occupancy<ATTN_PREFILL_FAST, 2, false>();
    default: return ATTN_ESMEM;
    }
}

// the parts the fast kernel launch_prefill<ATTN_PREFILL_FAST> runs splits this batch into on this
// device (0: a bad ATTN_PREFILL_SPLIT); v3's pipe and the A/B variants do not split
static int fast_parts(const attn_batch *b) {
    int limit = attn_smem_budget();
    if (limit < 0 || fast_ab_choice(limit, nullptr)) return 1;
    static_assert(ATTN_CFG_MAX == 3, "one case per list entry");
    switch (attn_cfg_pick(ATTN_PREFILL_FAST, limit)) {
    case 0: return cfg_parts<ATTN_PREFILL_FAST, 0, false>(b);
    case 1: return cfg_parts<ATTN_PREFILL_FAST, 1, false>(b);
    case 2: return cfg_parts<ATTN_PREFILL_FAST, 2, false>(b);
    default: return 1;
    }
}

// expand one eighth of a destination page (98 of its 784 tokens, all kv heads) of one row from fp8
// to fp16: grid (pages x BRIDGE_PARTS, rows), U 16-byte chunks (2U loads) in flight a thread. v6:
// v5 ran one CTA per page (a ~100-step latency chain: a flat ~75 us for 2 kv heads below ~30K tokens,
// 2-40 CTAs on 132 SMs). Measured (kernels/results/bench_v6_expand.txt, 2 kv heads, ms at 4K / 16K /
// 41K / 104K / 262K tokens): v5 0.076 / 0.081 / 0.090 / 0.119 / 0.240; 8 parts U=1 8 per SM (the
// default) 0.016 / 0.023 / 0.052 / 0.126 / 0.311; 8 parts U=4 4 per SM 0.017 / 0.029 / 0.065 / 0.135
// / 0.316. Splitting wins below ~100K and loses beyond (v5's one resident CTA per page streams a
// whole page); attn.h's ATTN_BRIDGE_* say which kernel runs to calib and the cost model.
#define BRIDGE_PARTS (BRIDGE_PAGE / ATTN_BRIDGE_CTA_TOKENS)
static_assert(BRIDGE_PARTS * ATTN_BRIDGE_CTA_TOKENS == BRIDGE_PAGE, "whole tokens per part");
__device__ __forceinline__ void fp8_expand16(uint4 raw, half2 sc, half *d) {
    uint4 a, b;
    a.x = fp8x2_to_half2(raw.x, 0x1404, sc); a.y = fp8x2_to_half2(raw.x, 0x3424, sc);
    a.z = fp8x2_to_half2(raw.y, 0x1404, sc); a.w = fp8x2_to_half2(raw.y, 0x3424, sc);
    b.x = fp8x2_to_half2(raw.z, 0x1404, sc); b.y = fp8x2_to_half2(raw.z, 0x3424, sc);
    b.z = fp8x2_to_half2(raw.w, 0x1404, sc); b.w = fp8x2_to_half2(raw.w, 0x3424, sc);
    *(uint4 *)d = a;
    *(uint4 *)(d + 8) = b;
}
template <int PARTS, int U, int OCC>
__global__ void __launch_bounds__(256, OCC)
fp8_expand_kernel(const uint8_t *k8, const uint8_t *v8, half *k16, half *v16, int *bt16, const int *block_table,
                  int max_pages, int page, const int *seq_len, int kv_heads, int mp16, float k_scale, float v_scale) {
    constexpr int CT = BRIDGE_PAGE / PARTS; // tokens per CTA
    int r = blockIdx.y, pg = blockIdx.x / PARTS, part = blockIdx.x % PARTS;
    int L = seq_len[r];
    int p0 = pg * BRIDGE_PAGE, t0 = p0 + part * CT; // the page's and this part's first token
    if (t0 >= L) return;
    int dblk = r * mp16 + pg;
    if (part == 0 && threadIdx.x == 0) bt16[dblk] = dblk;
    int ntok = min(CT, L - t0);
    int cpt = kv_heads * (ATTN_D / 16); // 16-byte fp8 chunks per token
    int n = ntok * cpt;
    half2 ks = __float2half2_rn(k_scale), vs = __float2half2_rn(v_scale);
    const int *bt_row = block_table + (size_t)r * max_pages;
    for (int base = threadIdx.x; base < n; base += U * 256) {
        uint4 kr[U], vr[U];
        size_t dst[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            int idx = base + u * 256;
            dst[u] = ~(size_t)0;
            if (idx < n) {
                int tok = idx / cpt, c = idx % cpt;
                int t = t0 + tok, pi = t / page, slot = t - pi * page;
                size_t src = ((size_t)bt_row[pi] * page + slot) * kv_heads * ATTN_D + c * 16;
                dst[u] = ((size_t)dblk * BRIDGE_PAGE + (t - p0)) * kv_heads * ATTN_D + c * 16;
                kr[u] = __ldg((const uint4 *)(k8 + src));
                vr[u] = __ldg((const uint4 *)(v8 + src));
            }
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
            if (dst[u] == ~(size_t)0) continue;
            fp8_expand16(kr[u], ks, k16 + dst[u]);
            fp8_expand16(vr[u], vs, v16 + dst[u]);
        }
    }
}

// the expansion's launch: the default (attn.h ATTN_BRIDGE_*: 8 parts, one chunk in flight, 8 per SM),
// or an A/B variant (env ATTN_EXPAND_VAR: v5 = a CTA per page; p8u4 = 8 parts, four chunks, 4 per SM)
typedef void (*expand_kernel_t)(const uint8_t *, const uint8_t *, half *, half *, int *, const int *, int, int,
                                const int *, int, int, float, float);
static expand_kernel_t expand_pick(int *parts) {
    const char *v = getenv("ATTN_EXPAND_VAR");
    if (v && !strcmp(v, "v5")) { *parts = 1; return fp8_expand_kernel<1, 1, 8>; }
    if (v && !strcmp(v, "p8u4")) { *parts = 8; return fp8_expand_kernel<8, 4, 4>; }
    *parts = BRIDGE_PARTS;
    return fp8_expand_kernel<BRIDGE_PARTS, 1, ATTN_BRIDGE_CTAS_PER_SM>;
}

static int bridge_pages(const attn_batch *b) { return (b->max_seq + BRIDGE_PAGE - 1) / BRIDGE_PAGE; }

// the bridge's expansion workspace (fp16 K, V and the identity block table), 256-byte aligned
static size_t bridge_ws_bytes(const attn_kv *kv, const attn_batch *b) {
    size_t blocks = (size_t)b->num_rows * bridge_pages(b);
    size_t half_bytes = blocks * BRIDGE_PAGE * kv->kv_heads * ATTN_D * 2;
    return (2 * half_bytes + blocks * sizeof(int) + 255) / 256 * 256;
}

size_t attn_prefill_ws_bytes(int route, const attn_kv *kv, const attn_batch *b) {
    switch (route) {
    case ATTN_PREFILL_FAST: return kv->dtype == ATTN_FP16 ? split_ws_bytes(b, fast_parts(b)) : 0;
    case ATTN_FP8_BRIDGE: return bridge_ws_bytes(kv, b) + split_ws_bytes(b, fast_parts(b));
    case ATTN_FP8_EXPAND: return bridge_ws_bytes(kv, b);
    default: return 0;
    }
}

int attn_prefill_launch(int route, const attn_kv *kv, const attn_batch *b, const void *q, void *out,
                        float sm_scale, void *ws, size_t ws_bytes, int flags, cudaStream_t s) {
    AttnParams p;
    attn_params_init(&p, kv, b, q, out, sm_scale);
    int fp8 = kv->dtype == ATTN_FP8_E5M2;
    switch (route) {
    case ATTN_PREFILL_GENERIC:
        return fp8 ? launch_prefill<ATTN_PREFILL_GENERIC, true>(p, b->num_rows, b->max_q, s, b, ws, ws_bytes)
                   : launch_prefill<ATTN_PREFILL_GENERIC, false>(p, b->num_rows, b->max_q, s, b, ws, ws_bytes);
    case ATTN_PREFILL_LOWSMEM:
        return fp8 ? launch_prefill<ATTN_PREFILL_LOWSMEM, true>(p, b->num_rows, b->max_q, s, b, ws, ws_bytes)
                   : launch_prefill<ATTN_PREFILL_LOWSMEM, false>(p, b->num_rows, b->max_q, s, b, ws, ws_bytes);
    case ATTN_PREFILL_FAST:
        if (fp8) return ATTN_ESHAPE; // fp8 reaches the fast kernel through the bridge
        if (kv->page != BRIDGE_PAGE && !((flags & ATTN_F_ANY_PAGE) && kv->page % 16 == 0)) return ATTN_EPAGE;
        return launch_prefill<ATTN_PREFILL_FAST, false>(p, b->num_rows, b->max_q, s, b, ws, ws_bytes);
    case ATTN_FP8_BRIDGE:
    case ATTN_FP8_EXPAND: {
        if (!fp8) return ATTN_ESHAPE;
        if (ws_bytes < attn_prefill_ws_bytes(route, kv, b)) return ATTN_EWS;
        int mp16 = bridge_pages(b);
        size_t blocks = (size_t)b->num_rows * mp16;
        size_t nhalf = blocks * BRIDGE_PAGE * kv->kv_heads * ATTN_D;
        half *k16 = (half *)ws, *v16 = k16 + nhalf;
        int *bt16 = (int *)(v16 + nhalf);
        int parts;
        expand_kernel_t ek = expand_pick(&parts);
        dim3 grid(mp16 * parts, b->num_rows);
        ek<<<grid, 256, 0, s>>>((const uint8_t *)kv->k, (const uint8_t *)kv->v, k16, v16, bt16,
                                               (const int *)b->d_block_table, b->max_pages, kv->page,
                                               (const int *)b->d_seq_len, kv->kv_heads, mp16, kv->k_scale,
                                               kv->v_scale);
        if (cuda_check(cudaGetLastError())) return ATTN_ECUDA;
        if (route == ATTN_FP8_EXPAND) return 0;
        p.k = k16;
        p.v = v16;
        p.page = BRIDGE_PAGE;
        p.block_table = bt16;
        p.max_pages = mp16;
        size_t ews = bridge_ws_bytes(kv, b); // the split's partials follow the expansion
        return launch_prefill<ATTN_PREFILL_FAST, false>(p, b->num_rows, b->max_q, s, b, (char *)ws + ews, ws_bytes - ews);
    }
    default:
        return ATTN_EINVAL;
    }
}
