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
// XQA and small-q run, where two of its CTAs fit an SM (sm_80 and up), their one-K/V-tile
// configuration at 2 CTAs per SM (attn_common.cuh ATTN_*_TWO_PER_SM); elsewhere the first
// configuration of their list that fits the device's shared memory per block: PIPE2 (sm_70;
// small-q with P over S), PHASE (one K/V tile, sm_75). Same grid, same MR and BN on every device.
#include "attn.h"
#include "attn_common.cuh"

static int np_max(const attn_batch *b) {
    int np = 1;
    for (int r = 0; r < b->num_rows; r++) {
        int L = b->seq_len[r], pl = attn_decode_partition(L);
        np = max(np, (L + pl - 1) / pl);
    }
    return np;
}

size_t attn_decode_ws_bytes(int route, const attn_kv *kv, const attn_batch *b) {
    if (route != ATTN_DECODE_XQA && route != ATTN_DECODE_SCALAR && route != ATTN_DECODE_SMALLQ) return 0;
    size_t slots = (size_t)b->total_q * b->num_q_heads * np_max(b);
    return slots * (kv->head_dim + 2) * sizeof(float) + 256;
}

// E = D / 32 fp16 elements of a 16-byte (D = 256), 8-byte or 4-byte vector, as the words of a uint4
// (the unused ones 0); fp8: E bytes, expanded to E halves (times sc)
template <int E>
__device__ __forceinline__ uint4 ldg_half_vec(const half *src) {
    if constexpr (E == 8) return __ldg((const uint4 *)src);
    else if constexpr (E == 4) { uint2 v = __ldg((const uint2 *)src); return make_uint4(v.x, v.y, 0, 0); }
    else { unsigned v = __ldg((const unsigned *)src); return make_uint4(v, 0, 0, 0); }
}
template <int E>
__device__ __forceinline__ uint4 ldg_fp8_vec(const uint8_t *src, half2 sc) {
    if constexpr (E == 8) {
        uint2 k8 = __ldg((const uint2 *)src);
        return make_uint4(fp8x2_to_half2(k8.x, 0x1404, sc), fp8x2_to_half2(k8.x, 0x3424, sc),
                          fp8x2_to_half2(k8.y, 0x1404, sc), fp8x2_to_half2(k8.y, 0x3424, sc));
    } else if constexpr (E == 4) {
        unsigned k8 = __ldg((const unsigned *)src);
        return make_uint4(fp8x2_to_half2(k8, 0x1404, sc), fp8x2_to_half2(k8, 0x3424, sc), 0, 0);
    } else {
        unsigned k8 = __ldg((const unsigned short *)src);
        return make_uint4(fp8x2_to_half2(k8, 0x1404, sc), 0, 0, 0);
    }
}

// a warp per token stream, lane l the elements E l .. E l + E - 1 of d (E = D / 32)
template <bool FP8, int D = ATTN_D>
__global__ void __launch_bounds__(ATTN_NT) decode_scalar_kernel(AttnParams p) {
    constexpr int E = D / 32;
    __shared__ ScalarSmem<D> sm;
    float *sm_m = sm.m, *sm_l = sm.l;
    float (*sm_o)[D] = sm.o;
    int r = blockIdx.x, h = blockIdx.y, part = blockIdx.z;
    int L = p.seq_len[r], plen = L >= 32768 ? 1024 : 256;
    int lo = part * plen;
    if (lo >= L) return;
    int hi = min(L, lo + plen);
    int kvh = h / p.group, tok = p.q_start[r];
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int *bt_row = p.block_table + (size_t)r * p.max_pages;
    float qv[E];
    {
        uint4 raw;
        if constexpr (D == 256) raw = __ldg((const uint4 *)(p.q + ((size_t)tok * p.H + h) * ATTN_D) + lane);
        else raw = ldg_half_vec<E>(p.q + ((size_t)tok * p.H + h) * D + E * lane);
        const half2 *h2 = (const half2 *)&raw;
        for (int e = 0; e < E / 2; e++) {
            float2 f = __half22float2(h2[e]);
            qv[2 * e] = f.x * p.scale_log2;
            qv[2 * e + 1] = f.y * p.scale_log2;
        }
    }
    float m = ATTN_NEG, l = 0.f, o[E];
    for (int e = 0; e < E; e++) o[e] = 0.f;
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
                if constexpr (D != 256) {
                    if (!FP8) {
                        kr[u] = ldg_half_vec<E>((const half *)p.k + off * D + E * lane);
                        vr[u] = ldg_half_vec<E>((const half *)p.v + off * D + E * lane);
                    } else {
                        kr[u] = ldg_fp8_vec<E>((const uint8_t *)p.k + off * D + E * lane, ks);
                        vr[u] = ldg_fp8_vec<E>((const uint8_t *)p.v + off * D + E * lane, vs);
                    }
                } else if (!FP8) {
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
            for (int e = 0; e < E / 2; e++) {
                float2 f = __half22float2(k2[e]);
                s += qv[2 * e] * f.x + qv[2 * e + 1] * f.y;
            }
            for (int off = 16; off > 0; off /= 2) s += __shfl_xor_sync(0xffffffffu, s, off);
            float mn = fmaxf(m, s), alpha = exp2f(m - mn), pe = exp2f(s - mn);
            l = l * alpha + pe;
            const half2 *v2 = (const half2 *)&vr[u];
            for (int e = 0; e < E / 2; e++) {
                float2 f = __half22float2(v2[e]);
                o[2 * e] = o[2 * e] * alpha + pe * f.x;
                o[2 * e + 1] = o[2 * e + 1] * alpha + pe * f.y;
            }
            m = mn;
        }
    }
    if (lane == 0) { sm_m[warp] = m; sm_l[warp] = l; }
    for (int e = 0; e < E; e++) sm_o[warp][lane * E + e] = o[e];
    __syncthreads();
    int d = threadIdx.x;
    if (D < ATTN_NT && d >= D) return; // a thread per element of d
    float M = ATTN_NEG;
    for (int w = 0; w < 8; w++) M = fmaxf(M, sm_m[w]);
    float od = 0.f, lt = 0.f;
    for (int w = 0; w < 8; w++) {
        float wt = exp2f(sm_m[w] - M);
        od += wt * sm_o[w][d];
        lt += wt * sm_l[w];
    }
    size_t slot = ((size_t)tok * p.H + h) * p.np_max + part;
    p.ws_o[slot * D + d] = od;
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
// (D = 256; G = 1024 / D groups at D = 128, 64). The body, its shared memory given: the head_dim 256
// kernel is a plain kernel with a dynamic array (sw) of its own, which keeps its machine code byte
// for byte (as one instantiation of a template sharing sw, ptxas starts sw 128-byte aligned).
template <int D>
__device__ __forceinline__ void decode_reduce_body(const AttnParams &p, float *sw, float *red,
                                                   float4 (*red4)[D / 4]) {
    constexpr int G = attn_reduce_groups(D);
    int r = blockIdx.x, h = blockIdx.y, qi = blockIdx.z;
    if (qi >= p.q_len[r]) return;
    int L = p.seq_len[r], plen = L >= 32768 ? 1024 : 256, np = (L + plen - 1) / plen;
    size_t base = ((size_t)(p.q_start[r] + qi) * p.H + h) * p.np_max;
    int tid = threadIdx.x;
    float den = partition_weights(p, base, np, sw, red);
    const int c4 = tid % (D / 4), grp = tid / (D / 4); // G groups
    const float4 *po = (const float4 *)(p.ws_o + base * D) + c4;
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    constexpr int U = 8;
    int i = grp;
    for (; i + G * (U - 1) < np; i += G * U) {
        float4 v[U];
#pragma unroll
        for (int u = 0; u < U; u++) v[u] = po[(size_t)(i + G * u) * (D / 4)];
#pragma unroll
        for (int u = 0; u < U; u++) {
            float w = sw[i + G * u];
            acc.x += w * v[u].x; acc.y += w * v[u].y; acc.z += w * v[u].z; acc.w += w * v[u].w;
        }
    }
    for (; i < np; i += G) {
        float4 v = po[(size_t)i * (D / 4)];
        float w = sw[i];
        acc.x += w * v.x; acc.y += w * v.y; acc.z += w * v.z; acc.w += w * v.w;
    }
    if (grp > 0) red4[grp - 1][c4] = acc;
    __syncthreads();
    if (grp == 0) {
#pragma unroll
        for (int g = 0; g < G - 1; g++) {
            float4 v = red4[g][c4];
            acc.x += v.x; acc.y += v.y; acc.z += v.z; acc.w += v.w;
        }
        float inv = den > 0.f ? 1.f / den : 0.f;
        half2 lo = __floats2half2_rn(acc.x * inv, acc.y * inv), hi = __floats2half2_rn(acc.z * inv, acc.w * inv);
        uint2 pk;
        pk.x = *(uint32_t *)&lo;
        pk.y = *(uint32_t *)&hi;
        *(uint2 *)(p.out + (base / p.np_max) * D + 4 * c4) = pk;
    }
}

__global__ void __launch_bounds__(ATTN_NT) decode_reduce_kernel(AttnParams p) {
    extern __shared__ float sw[];
    __shared__ float red[8];
    __shared__ float4 red4[attn_reduce_groups(ATTN_D) - 1][ATTN_D / 4];
    decode_reduce_body<ATTN_D>(p, sw, red, red4);
}

// the reduce at head_dim 128 and 64
template <int D>
__global__ void __launch_bounds__(ATTN_NT) decode_reduce_kernel_hd(AttnParams p) {
    extern __shared__ float sw_hd[];
    __shared__ float red[8];
    __shared__ float4 red4[attn_reduce_groups(D) - 1][D / 4];
    decode_reduce_body<D>(p, sw_hd, red, red4);
}

// the combine (rows of >= 64 partitions): grid (rows, H, max_q x D / 64),
// each CTA 64 columns of d (16 float4: a quarter at D = 256) for one (row, head, q token), so 4x the CTAs of
// the reduce's and 16 partition groups of 16 threads: a 240K row's 235 partitions are ~15 per thread,
// two batches of 8 loads in flight where the reduce walks ~59 per thread in 8 dependent batches.
// Dynamic smem only: [15 x 16 float4 group sums][8 floats][np weights].
#define ATTN_COMBINE_DS(D) ((D) / 64) // CTAs a (row, head, q token)
#define ATTN_COMBINE_MIN_NP 64 // partitions of the longest row from which the combine runs (else the reduce)
__host__ __device__ constexpr int attn_combine_smem(int np) { return 15 * 16 * 16 + 8 * 4 + np * 4; }
template <int D = ATTN_D>
__global__ void __launch_bounds__(ATTN_NT) decode_combine_kernel(AttnParams p) {
    extern __shared__ float4 dsm4[];
    float4 (*red4)[16] = (float4 (*)[16])dsm4;
    float *red = (float *)(dsm4 + 15 * 16), *sw = red + 8;
    int r = blockIdx.x, h = blockIdx.y, qi = blockIdx.z / ATTN_COMBINE_DS(D), ds = blockIdx.z % ATTN_COMBINE_DS(D);
    if (qi >= p.q_len[r]) return;
    int L = p.seq_len[r], plen = L >= 32768 ? 1024 : 256, np = (L + plen - 1) / plen;
    size_t base = ((size_t)(p.q_start[r] + qi) * p.H + h) * p.np_max;
    int tid = threadIdx.x;
    float den = partition_weights(p, base, np, sw, red);
    const int c4 = tid % 16, grp = tid / 16; // 16 groups of 16 float4 columns
    const float4 *po = (const float4 *)(p.ws_o + base * D) + ds * 16 + c4;
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    constexpr int U = 8, G = 16;
    int i = grp;
    for (; i + G * (U - 1) < np; i += G * U) {
        float4 v[U];
#pragma unroll
        for (int u = 0; u < U; u++) v[u] = po[(size_t)(i + G * u) * (D / 4)];
#pragma unroll
        for (int u = 0; u < U; u++) {
            float w = sw[i + G * u];
            acc.x += w * v[u].x; acc.y += w * v[u].y; acc.z += w * v[u].z; acc.w += w * v[u].w;
        }
    }
    for (; i < np; i += G) {
        float4 v = po[(size_t)i * (D / 4)];
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
        *(uint2 *)(p.out + (base / p.np_max) * D + ds * 64 + 4 * c4) = pk;
    }
}

// configuration I of route R's list, at the CTAs per SM of its entry (c.occ) in its launch bounds
template <int R, int I, bool FP8, int D>
static attn_kernel_t decode_kernel() {
    if constexpr (I >= attn_cfg_list(R).n) {
        return nullptr;
    } else {
        constexpr KCfg c = attn_cfg(R, I);
        return attn_wmma_kernel<c.mr, c.bn, c.mode, c.plan, FP8, true, c.occ, D>;
    }
}

// The main kernel of WMMA decode route R on this device, its dynamic smem in *smem: where the
// list's entry 0 fits a block and two CTAs of the route's one-K/V-tile configuration fit an SM
// (attn_common.cuh ATTN_*_TWO_PER_SM: sm_80 and up), that configuration at 2 CTAs per SM; else the
// first entry of the route's list that fits, at 1 CTA per SM (sm_70: 96 KB per SM holds one).
// NOTES.md v5, v6: XQA fp16 0.137-0.140 ms at 240K against the list's entry 0's 0.171 (1 CTA per
// SM: at the 128-register cap of 2 it spills), small-q q=5 0.167-0.168 against 0.207-0.208.
template <int R, bool FP8, int D>
static attn_kernel_t decode_pick(int limit, int *smem) {
    constexpr KCfg two = R == ATTN_DECODE_XQA ? ATTN_XQA_TWO_PER_SM : ATTN_SMALLQ_TWO_PER_SM;
    int i = attn_cfg_pick(R, limit, D), per_sm = attn_smem_per_sm();
    if (i < 0) return nullptr;
    if (attn_two_per_sm(two, i, limit, per_sm, D)) {
        *smem = attn_cfg_bytes(two, D);
        return attn_wmma_kernel<two.mr, two.bn, two.mode, two.plan, FP8, true, two.occ, D>;
    }
    static_assert(ATTN_CFG_MAX == 3, "one case per list entry");
    *smem = attn_cfg_bytes(attn_cfg_list(R).c[i], D);
    return i == 0 ? decode_kernel<R, 0, FP8, D>() : i == 1 ? decode_kernel<R, 1, FP8, D>() : decode_kernel<R, 2, FP8, D>();
}

template <int D>
static int decode_launch_d(int route, attn_kernel_t k, int smem, int reduce, const attn_kv *kv, const attn_batch *b,
                           const void *q, void *out, float sm_scale, void *ws, size_t ws_bytes, cudaStream_t s) {
    if (ws_bytes < attn_decode_ws_bytes(route, kv, b) || !ws) return ATTN_EWS;
    if (route == ATTN_DECODE_SMALLQ ? b->max_q > 16 : b->max_q != 1) return ATTN_ESHAPE;
    AttnParams p;
    attn_params_init(&p, kv, b, q, out, sm_scale);
    int np = np_max(b);
    size_t slots = (size_t)b->total_q * b->num_q_heads * np;
    p.np_max = np;
    p.ws_o = (float *)ws;
    p.ws_m = p.ws_o + slots * D;
    p.ws_l = p.ws_m + slots;
    int fp8 = kv->dtype == ATTN_FP8_E5M2;
    if (route == ATTN_DECODE_SCALAR) {
        dim3 grid(b->num_rows, b->num_q_heads, np);
        if (fp8) decode_scalar_kernel<true, D><<<grid, ATTN_NT, 0, s>>>(p);
        else decode_scalar_kernel<false, D><<<grid, ATTN_NT, 0, s>>>(p);
    } else {
        int mr = route == ATTN_DECODE_XQA ? 16 : 32;
        p.nchunks = (b->max_q * p.group + mr - 1) / mr;
        static_assert(attn_cfg(ATTN_DECODE_XQA, 0).mr == 16 && attn_cfg(ATTN_DECODE_XQA, 1).mr == 16 &&
                      ATTN_XQA_TWO_PER_SM.mr == 16 && attn_cfg(ATTN_DECODE_SMALLQ, 0).mr == 32 &&
                      attn_cfg(ATTN_DECODE_SMALLQ, 2).mr == 32 && ATTN_SMALLQ_TWO_PER_SM.mr == 32,
                      "every configuration of a decode route keeps its MR (the grid depends on it)");
        if (!k) { // the library's choice
            int limit = attn_smem_budget();
            if (limit < 0) return ATTN_ECUDA;
            k = route == ATTN_DECODE_XQA ? (fp8 ? decode_pick<ATTN_DECODE_XQA, true, D>(limit, &smem)
                                                : decode_pick<ATTN_DECODE_XQA, false, D>(limit, &smem))
                                         : (fp8 ? decode_pick<ATTN_DECODE_SMALLQ, true, D>(limit, &smem)
                                                : decode_pick<ATTN_DECODE_SMALLQ, false, D>(limit, &smem));
            if (!k) return ATTN_ESMEM;
        }
        if (attn_set_smem((const void *)k, smem)) return ATTN_ECUDA;
        dim3 grid(b->num_rows, kv->kv_heads * p.nchunks, np);
        k<<<grid, ATTN_NT, smem, s>>>(p);
    }
    int err = cuda_check(cudaGetLastError());
    if (err || reduce == ATTN_REDUCE_NONE) return err;
    // the combine where a row has many partitions (its 4x CTAs shorten a long walk), the reduce
    // where it has few (4x the CTAs of nearly no work: 16 rows x q=5 at 1K is 7680 CTAs)
    if (reduce == ATTN_REDUCE_ROWS || (reduce == ATTN_REDUCE_AUTO && np < ATTN_COMBINE_MIN_NP)) {
        int rsmem = np * (int)sizeof(float);
        if (rsmem + attn_reduce_static_smem(D) > 48 * 1024) return ATTN_ESHAPE; // np > ~11300 partitions
        dim3 rgrid(b->num_rows, b->num_q_heads, b->max_q);
        if constexpr (D == ATTN_D) decode_reduce_kernel<<<rgrid, ATTN_NT, rsmem, s>>>(p);
        else decode_reduce_kernel_hd<D><<<rgrid, ATTN_NT, rsmem, s>>>(p);
        return cuda_check(cudaGetLastError());
    }
    int csmem = attn_combine_smem(np);
    if (csmem > 48 * 1024) return ATTN_ESHAPE; // np > ~11300 partitions
    dim3 cgrid(b->num_rows, b->num_q_heads, b->max_q * ATTN_COMBINE_DS(D));
    decode_combine_kernel<D><<<cgrid, ATTN_NT, csmem, s>>>(p);
    return cuda_check(cudaGetLastError());
}

// k, when given, is a head_dim 256 kernel (kernels/dev/'s configurations)
int attn_decode_launch_with(int route, attn_kernel_t k, int smem, int reduce, const attn_kv *kv, const attn_batch *b,
                            const void *q, void *out, float sm_scale, void *ws, size_t ws_bytes, cudaStream_t s) {
    if (k && kv->head_dim != ATTN_D) return ATTN_ESHAPE;
    switch (kv->head_dim) {
    case 64: return decode_launch_d<64>(route, k, smem, reduce, kv, b, q, out, sm_scale, ws, ws_bytes, s);
    case 128: return decode_launch_d<128>(route, k, smem, reduce, kv, b, q, out, sm_scale, ws, ws_bytes, s);
    case 256: return decode_launch_d<256>(route, k, smem, reduce, kv, b, q, out, sm_scale, ws, ws_bytes, s);
    default: return ATTN_ESHAPE;
    }
}

int attn_decode_launch(int route, const attn_kv *kv, const attn_batch *b, const void *q, void *out,
                       float sm_scale, void *ws, size_t ws_bytes, cudaStream_t s) {
    return attn_decode_launch_with(route, nullptr, 0, ATTN_REDUCE_AUTO, kv, b, q, out, sm_scale, ws, ws_bytes, s);
}
