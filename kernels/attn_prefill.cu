// attn_prefill.cu -- paged prefill attention: generic (BM32/BN64), low-smem (BM16/BN128),
// "BM32 phase" fast path (BM32/BN128, register->smem pipelined), and the fp8 bridge.
// Each route's tile/staging configuration is the first of its list (attn_common.cuh,
// attn_cfg_list) that fits the device's shared memory per block: sm_90 runs the measured
// configurations, sm_70 (96 KB) and sm_75 (64 KB) smaller stagings of the same launch.
//
// Launch: grid (ceil(max_q / BM), 1, rows * H), 256 threads; every q head walks the keys
// 0 .. (its last row's position) of its kv head h / group, so a q = 1 row is H CTAs each
// walking the whole context serially (the pathology the decode route removes).
// The fast path's grid is (ceil(max_q / BM), S, rows * H): each CTA's walk in S parts
// (kernels/attn_split.h says how many: 1 unless the CTAs leave a round of SMs mostly idle),
// then a merge kernel (log-sum-exp over the parts' partials, a warp per token and head).
// fp8 KV: generic and low-smem dequantise while staging; the bridge first expands every
// page of each row into an fp16 workspace laid out with page 784 and an identity block
// table, then runs the fp16 fast kernel on it.
// CPU reference: kernels/ref.c. Validate + time: kernels/bench_kernels.c; the fast path's A/B
// variants: kernels/dev/prefill_ab.cu.
#include "attn.h"
#include "attn_common.cuh"
#include "attn_expand.cuh"
#include "attn_split.h"
#include <stdlib.h>
#include <string.h>

// the merge of a split fast-path launch (p.np_max parts): a warp per (token, head), lane l the
// columns 8l .. 8l + 7 (D = 256; D / 32 columns a lane at D = 128, 64); out = sum_i 2^(m_i - M) O_i /
// sum_i 2^(m_i - M) l_i (an empty part: m = -inf)
template <int D>
__device__ __forceinline__ void prefill_merge_small(const AttnParams &p, int n) {
    constexpr int C = D / 32; // columns a lane: 4 (D = 128) or 2 (D = 64)
    int th = blockIdx.x * (ATTN_NT / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (th >= n) return;
    const int np = p.np_max;
    size_t base = (size_t)th * np;
    float M = ATTN_NEG;
    for (int i = 0; i < np; i++) M = fmaxf(M, p.ws_m[base + i]);
    float acc[C] = {}, den = 0.f;
    for (int i = 0; i < np; i++) {
        float w = exp2f(p.ws_m[base + i] - M);
        den += w * p.ws_l[base + i];
        const float *po = p.ws_o + (base + i) * D + C * lane;
#pragma unroll
        for (int e = 0; e < C; e++) acc[e] += w * po[e];
    }
    float inv = den > 0.f ? 1.f / den : 0.f;
    half2 ph[C / 2];
#pragma unroll
    for (int e = 0; e < C / 2; e++) ph[e] = __floats2half2_rn(acc[2 * e] * inv, acc[2 * e + 1] * inv);
    half2 *dst = (half2 *)(p.out + (size_t)th * D + C * lane);
#pragma unroll
    for (int e = 0; e < C / 2; e++) dst[e] = ph[e];
}

template <int D>
__global__ void __launch_bounds__(ATTN_NT) prefill_merge_kernel(AttnParams p, int n) {
    if constexpr (D != 256) {
        prefill_merge_small<D>(p, n);
        return;
    }
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
        const float4 *po = (const float4 *)(p.ws_o + (base + i) * D) + 2 * lane;
        float4 a = po[0], b = po[1];
        acc[0] += w * a.x; acc[1] += w * a.y; acc[2] += w * a.z; acc[3] += w * a.w;
        acc[4] += w * b.x; acc[5] += w * b.y; acc[6] += w * b.z; acc[7] += w * b.w;
    }
    float inv = den > 0.f ? 1.f / den : 0.f;
    uint4 pk;
    half2 *ph = (half2 *)&pk;
#pragma unroll
    for (int e = 0; e < 4; e++) ph[e] = __floats2half2_rn(acc[2 * e] * inv, acc[2 * e + 1] * inv);
    *(uint4 *)(p.out + (size_t)th * D + 8 * lane) = pk;
}

// parts a KVSPLIT kernel's CTAs walk for this batch on this device (attn_split.h), or the
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
static size_t split_ws_bytes(const attn_batch *b, int parts, int D) {
    if (parts <= 1) return 0;
    size_t slots = (size_t)b->total_q * b->num_q_heads * parts;
    return slots * (D + 2) * sizeof(float) + 256;
}

// parts: gridDim.y (1 = the reference launch; > 1 only for KVSPLIT plans, with ws the partials)
template <int MR, int BN, int MODE, int PLAN, int OCC, bool FP8, int D>
static int launch_tiles(const AttnParams &p0, int rows, int max_q, cudaStream_t s, int parts = 1, const attn_batch *b = nullptr,
                        void *ws = nullptr, size_t ws_bytes = 0) {
    attn_kernel_t k = attn_wmma_kernel<MR, BN, MODE, PLAN, FP8, false, OCC, D>;
    constexpr int smem = Smem<MR, BN, MODE, PLAN, D>::BYTES;
    if (attn_set_smem((const void *)k, smem)) return ATTN_ECUDA;
    AttnParams p = p0;
    if (parts > 1) {
        if (!(PLAN & PL_KVSPLIT) || !b) return ATTN_EINVAL;
        if (!ws || ws_bytes < split_ws_bytes(b, parts, D)) return ATTN_EWS;
        size_t slots = (size_t)b->total_q * b->num_q_heads * parts;
        p.np_max = parts;
        p.ws_o = (float *)ws;
        p.ws_m = p.ws_o + slots * D;
        p.ws_l = p.ws_m + slots;
    }
    dim3 grid((max_q + MR - 1) / MR, parts, rows * p.H);
    k<<<grid, ATTN_NT, smem, s>>>(p);
    if (cuda_check(cudaGetLastError())) return ATTN_ECUDA;
    if (parts > 1) {
        int n = b->total_q * b->num_q_heads;
        prefill_merge_kernel<D><<<(n + ATTN_NT / 32 - 1) / (ATTN_NT / 32), ATTN_NT, 0, s>>>(p, n);
        return cuda_check(cudaGetLastError());
    }
    return 0;
}

// CTAs an SM of configuration I of route R
template <int R, int I, bool FP8, int D>
static int cfg_occupancy() {
    if constexpr (I >= attn_cfg_list(R).n) {
        return 1;
    } else {
        constexpr KCfg c = attn_cfg(R, I);
        return kernel_occupancy((const void *)attn_wmma_kernel<c.mr, c.bn, c.mode, c.plan, FP8, false, c.occ, D>,
                                Smem<c.mr, c.bn, c.mode, c.plan, D>::BYTES);
    }
}

// the parts configuration I of route R splits this batch into (1 for a configuration without
// KVSPLIT; 0 on a bad ATTN_PREFILL_SPLIT)
template <int R, int I, bool FP8, int D>
static int cfg_parts(const attn_batch *b) {
    if constexpr (I >= attn_cfg_list(R).n) {
        return 1;
    } else {
        constexpr KCfg c = attn_cfg(R, I);
        if constexpr ((c.plan & PL_KVSPLIT) != 0) return split_parts(b, c.mr, c.bn, cfg_occupancy<R, I, FP8, D>());
        return 1;
    }
}

// configuration I of route R's list; a KVSPLIT configuration (the fast path) in the parts
// split_parts picks, its partials in ws
template <int R, int I, bool FP8, int D>
static int launch_cfg(const AttnParams &p, int rows, int max_q, cudaStream_t s, const attn_batch *b, void *ws,
                      size_t ws_bytes) {
    if constexpr (I >= attn_cfg_list(R).n) {
        return ATTN_ESMEM;
    } else {
        constexpr KCfg c = attn_cfg(R, I);
        int parts = cfg_parts<R, I, FP8, D>(b);
        if (parts < 1) return ATTN_EINVAL;
        return launch_tiles<c.mr, c.bn, c.mode, c.plan, c.occ, FP8, D>(p, rows, max_q, s, parts, b, ws, ws_bytes);
    }
}

// route R on the configuration that fits this device
template <int R, bool FP8, int D>
static int launch_prefill(const AttnParams &p, int rows, int max_q, cudaStream_t s, const attn_batch *b, void *ws,
                          size_t ws_bytes) {
    int limit = attn_smem_budget();
    if (limit < 0) return ATTN_ECUDA;
    static_assert(ATTN_CFG_MAX == 3, "one case per list entry");
    switch (attn_cfg_pick(R, limit, D)) {
    case 0: return launch_cfg<R, 0, FP8, D>(p, rows, max_q, s, b, ws, ws_bytes);
    case 1: return launch_cfg<R, 1, FP8, D>(p, rows, max_q, s, b, ws, ws_bytes);
    case 2: return launch_cfg<R, 2, FP8, D>(p, rows, max_q, s, b, ws, ws_bytes);
    default: return ATTN_ESMEM;
    }
}

template <int D>
static int fast_ctas_per_sm() {
    int limit = attn_smem_budget();
    if (limit < 0) return ATTN_ECUDA;
    switch (attn_cfg_pick(ATTN_PREFILL_FAST, limit, D)) {
    case 0: return cfg_occupancy<ATTN_PREFILL_FAST, 0, false, D>();
    case 1: return cfg_occupancy<ATTN_PREFILL_FAST, 1, false, D>();
    case 2: return cfg_occupancy<ATTN_PREFILL_FAST, 2, false, D>();
    default: return ATTN_ESMEM;
    }
}

int attn_fast_ctas_per_sm_hd(int head_dim) {
    switch (head_dim) {
    case 64: return fast_ctas_per_sm<64>();
    case 128: return fast_ctas_per_sm<128>();
    case 256: return fast_ctas_per_sm<256>();
    default: return ATTN_ESHAPE;
    }
}

int attn_fast_ctas_per_sm(void) { return attn_fast_ctas_per_sm_hd(ATTN_D); }

// the parts the fast kernel launch_prefill<ATTN_PREFILL_FAST> runs splits this batch into on this
// device (0: a bad ATTN_PREFILL_SPLIT)
template <int D>
static int fast_parts_d(const attn_batch *b) {
    int limit = attn_smem_budget();
    if (limit < 0) return 1;
    static_assert(ATTN_CFG_MAX == 3, "one case per list entry");
    switch (attn_cfg_pick(ATTN_PREFILL_FAST, limit, D)) {
    case 0: return cfg_parts<ATTN_PREFILL_FAST, 0, false, D>(b);
    case 1: return cfg_parts<ATTN_PREFILL_FAST, 1, false, D>(b);
    case 2: return cfg_parts<ATTN_PREFILL_FAST, 2, false, D>(b);
    default: return 1;
    }
}

static int fast_parts(const attn_kv *kv, const attn_batch *b) {
    switch (kv->head_dim) {
    case 64: return fast_parts_d<64>(b);
    case 128: return fast_parts_d<128>(b);
    case 256: return fast_parts_d<256>(b);
    default: return 1;
    }
}

size_t attn_prefill_ws_bytes(int route, const attn_kv *kv, const attn_batch *b) {
    int D = kv->head_dim;
    switch (route) {
    case ATTN_PREFILL_FAST: return kv->dtype == ATTN_FP16 ? split_ws_bytes(b, fast_parts(kv, b), D) : 0;
    case ATTN_FP8_BRIDGE: return bridge_ws_bytes(kv, b) + split_ws_bytes(b, fast_parts(kv, b), D);
    case ATTN_FP8_EXPAND: return bridge_ws_bytes(kv, b);
    default: return 0;
    }
}

// the routes at head_dim D (attn_run has checked D and the GQA group)
template <int D>
static int prefill_launch_d(int route, const attn_kv *kv, const attn_batch *b, const void *q, void *out,
                            float sm_scale, void *ws, size_t ws_bytes, int flags, cudaStream_t s) {
    AttnParams p;
    attn_params_init(&p, kv, b, q, out, sm_scale);
    int fp8 = kv->dtype == ATTN_FP8_E5M2;
    switch (route) {
    case ATTN_PREFILL_GENERIC:
        return fp8 ? launch_prefill<ATTN_PREFILL_GENERIC, true, D>(p, b->num_rows, b->max_q, s, b, ws, ws_bytes)
                   : launch_prefill<ATTN_PREFILL_GENERIC, false, D>(p, b->num_rows, b->max_q, s, b, ws, ws_bytes);
    case ATTN_PREFILL_LOWSMEM:
        return fp8 ? launch_prefill<ATTN_PREFILL_LOWSMEM, true, D>(p, b->num_rows, b->max_q, s, b, ws, ws_bytes)
                   : launch_prefill<ATTN_PREFILL_LOWSMEM, false, D>(p, b->num_rows, b->max_q, s, b, ws, ws_bytes);
    case ATTN_PREFILL_FAST:
        if (fp8) return ATTN_ESHAPE; // fp8 reaches the fast kernel through the bridge
        if (kv->page != BRIDGE_PAGE && !((flags & ATTN_F_ANY_PAGE) && kv->page % 16 == 0)) return ATTN_EPAGE;
        return launch_prefill<ATTN_PREFILL_FAST, false, D>(p, b->num_rows, b->max_q, s, b, ws, ws_bytes);
    case ATTN_FP8_BRIDGE:
    case ATTN_FP8_EXPAND: {
        if (!fp8) return ATTN_ESHAPE;
        if (ws_bytes < attn_prefill_ws_bytes(route, kv, b)) return ATTN_EWS;
        BridgeWs w = bridge_ws(kv, b, ws);
        // the expansion (attn.h ATTN_BRIDGE_*: 8 parts a page, one chunk in flight, 8 per SM)
        dim3 grid(w.pages * BRIDGE_PARTS, b->num_rows);
        fp8_expand_kernel<BRIDGE_PARTS, 1, ATTN_BRIDGE_CTAS_PER_SM, D><<<grid, 256, 0, s>>>(
            (const uint8_t *)kv->k, (const uint8_t *)kv->v, w.k16, w.v16, w.bt16, (const int *)b->d_block_table,
            b->max_pages, kv->page, (const int *)b->d_seq_len, kv->kv_heads, w.pages, kv->k_scale, kv->v_scale);
        if (cuda_check(cudaGetLastError())) return ATTN_ECUDA;
        if (route == ATTN_FP8_EXPAND) return 0;
        p.k = w.k16;
        p.v = w.v16;
        p.page = BRIDGE_PAGE;
        p.block_table = w.bt16;
        p.max_pages = w.pages;
        size_t ews = bridge_ws_bytes(kv, b); // the split's partials follow the expansion
        return launch_prefill<ATTN_PREFILL_FAST, false, D>(p, b->num_rows, b->max_q, s, b, (char *)ws + ews, ws_bytes - ews);
    }
    default:
        return ATTN_EINVAL;
    }
}

int attn_prefill_launch(int route, const attn_kv *kv, const attn_batch *b, const void *q, void *out,
                        float sm_scale, void *ws, size_t ws_bytes, int flags, cudaStream_t s) {
    switch (kv->head_dim) {
    case 64: return prefill_launch_d<64>(route, kv, b, q, out, sm_scale, ws, ws_bytes, flags, s);
    case 128: return prefill_launch_d<128>(route, kv, b, q, out, sm_scale, ws, ws_bytes, flags, s);
    case 256: return prefill_launch_d<256>(route, kv, b, q, out, sm_scale, ws, ws_bytes, flags, s);
    default: return ATTN_ESHAPE;
    }
}
