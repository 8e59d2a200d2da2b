// attn_varlen.cu -- varlen paged attention: one launch serves a whole mixed batch (decode rows
// and prefill chunks together), FlashAttention-2 style, WMMA fp16 (sm_70 features only).
//
// Rows of the CTA: a CTA owns BM "query rows" of one request row and one kv head; query row j
// of M-tile m0 is (token i, group head g) with i * group + g = m0 + j, so one pass over the KV
// serves the whole GQA group, and a decode row (q = 1) fills `group` of the BM rows instead of 1.
// The CTA walks its kv head's keys 0 .. (position of its last valid token) in tiles of BN:
//   K tile -> smem; S = Q K^T (WMMA 16x16x16, fp32 acc) -> smem; the V tile is issued to
//   registers, then the online softmax (exp2, the scale folded into log2 e; causal mask
//   key <= seq_len - q_len + i) writes P fp16 and each row's alpha; V is stored over K;
//   O = O * alpha + P V with O in accumulator fragments, rescaled through a row map learnt
//   at start (the fragment layout is unspecified but fixed: load a matrix whose (r,c) is r).
// K and V share one smem tile (no pipelining beyond V's issue before the softmax): the
// configurations fit 64 KB (sm_75) and leave room for 3 CTAs an SM on an H200 (227 KB).
// The launch: a host plan (attn_varlen_plan_create) lists every (row, M-tile), longest KV walk
// first (the grid's CTAs start in that order, so the long walks do not form the tail), times
// kv_heads: grid (entries * kv_heads), 256 threads; no empty CTA, no per-CTA search.
// Configurations (D: BM x BN, dynamic smem): 64: 64 x 64; 128: 64 x 64; 256: 32 x 64.
// fp16 KV only (an fp8 cache returns ATTN_ESHAPE). CPU reference: kernels/ref.c; validation:
// attn_varlen_validate (bench_kernels --validate --varlen, tests/check_kernels.cu).
#include "attn.h"
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <mma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

using namespace nvcuda;

#define VL_NT 256           // threads per CTA (8 warps)
#define VL_NEG (-1.0e30f)   // finite "minus infinity" for running maxima

static int vl_check(cudaError_t err, int line) {
    if (err == cudaSuccess) return 0;
    fprintf(stderr, "[CUDA ERROR] at file %s:%d: %s\n", __FILE__, line, cudaGetErrorString(err));
    return ATTN_ECUDA;
}
#define VL_CHECK(e) vl_check((e), __LINE__)

// the shared-memory plan of configuration (D, BM, BN): Q [BM][D+8] half, one K/V tile [BN][D+8]
// half, S [BM][BN+4] float (after the walk: 8 warps' 16x16 float output scratch), P [BM][BN+8]
// half, m / l / alpha [BM] float
struct VlPlan {
    int LDQ, LDS, LDP, Q, KV, S, P, ROW, BYTES;
};
__host__ __device__ constexpr VlPlan vl_plan(int D, int BM, int BN) {
    VlPlan s{};
    s.LDQ = D + 8;
    s.LDS = BN + 4;
    s.LDP = BN + 8;
    s.Q = 0;
    s.KV = s.Q + BM * s.LDQ * 2;
    s.S = s.KV + BN * s.LDQ * 2;
    int s_bytes = BM * s.LDS * 4 > 8 * 256 * 4 ? BM * s.LDS * 4 : 8 * 256 * 4;
    s.P = s.S + s_bytes;
    s.ROW = s.P + BM * s.LDP * 2;
    s.BYTES = s.ROW + 3 * BM * 4;
    return s;
}
__host__ __device__ constexpr int vl_bm(int D) { return D >= 256 ? 32 : 64; }
#define VL_BN 64

struct VlParams {
    const half *q;
    half *out;
    const half *k, *v;
    int page, kv_heads, H, group, max_pages;
    const int *block_table, *q_len, *seq_len, *q_start;
    const int2 *map;        // (row, m0) per entry, longest walk first
    float scale_log2;
};

// 16-byte chunks of a BN-token tile a thread stages
template <int D, int BN>
struct VlStage {
    static constexpr int CPT = D / 8;
    static constexpr int N = BN * CPT / VL_NT;
    uint4 r[N];
};

// tokens t0 .. t0 + BN - 1 of kv head kvh of row r (zeros past `last`)
template <int D, int BN>
__device__ __forceinline__ void vl_load(VlStage<D, BN> &st, const half *base, const VlParams &p, int r, int kvh,
                                        int t0, int last) {
    constexpr int CPT = VlStage<D, BN>::CPT;
    const int *bt = p.block_table + (size_t)r * p.max_pages;
#pragma unroll
    for (int i = 0; i < VlStage<D, BN>::N; i++) {
        int idx = threadIdx.x + i * VL_NT, tok = idx / CPT, c = idx % CPT, t = t0 + tok;
        if (t <= last) {
            int blk = __ldg(bt + t / p.page);
            size_t row = ((size_t)blk * p.page + t % p.page) * p.kv_heads + kvh;
            st.r[i] = __ldg((const uint4 *)(base + row * D) + c);
        } else {
            st.r[i] = make_uint4(0, 0, 0, 0);
        }
    }
}

template <int D, int BN, int LD>
__device__ __forceinline__ void vl_store(const VlStage<D, BN> &st, half *sm) {
    constexpr int CPT = VlStage<D, BN>::CPT;
#pragma unroll
    for (int i = 0; i < VlStage<D, BN>::N; i++) {
        int idx = threadIdx.x + i * VL_NT, tok = idx / CPT, c = idx % CPT;
        *(uint4 *)(sm + tok * LD + c * 8) = st.r[i];
    }
}

template <int D, int BM, int BN>
__global__ void __launch_bounds__(VL_NT) attn_varlen_kernel(VlParams p) {
    constexpr VlPlan L = vl_plan(D, BM, BN);
    constexpr int LDQ = L.LDQ, LDS = L.LDS, LDP = L.LDP;
    constexpr int WM = BM / 16, WN = 8 / WM;      // warps along M, warps sharing an M tile
    constexpr int SF = BN / 16 / WN, OF = D / 16 / WN; // S / O fragments a warp
    constexpr int TPR = VL_NT / BM;               // softmax threads a row
    constexpr int CPR = BN / TPR;                 // softmax columns a thread
    static_assert(WM * WN == 8 && SF * WN * 16 == BN && OF * WN * 16 == D, "warp tiling");
    static_assert(TPR * BM == VL_NT && CPR * TPR == BN && TPR <= 32, "softmax tiling");
    extern __shared__ __align__(128) unsigned char smem[];
    half *sQ = (half *)(smem + L.Q), *sKV = (half *)(smem + L.KV), *sP = (half *)(smem + L.P);
    float *sS = (float *)(smem + L.S), *sM = (float *)(smem + L.ROW), *sL = sM + BM, *sA = sL + BM;

    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int ent = blockIdx.x / p.kv_heads, kvh = blockIdx.x % p.kv_heads;
    const int2 rm = p.map[ent];
    const int r = rm.x, m0 = rm.y, G = p.group;
    const int qn = __ldg(p.q_len + r), sl = __ldg(p.seq_len + r), qs = __ldg(p.q_start + r);
    const int base_pos = sl - qn;                  // token i sits at base_pos + i
    const int last_tok = min(qn - 1, (m0 + BM - 1) / G);
    const int last_key = base_pos + last_tok;      // the CTA's walk: keys 0 .. last_key

    // Q tile (rows past the row's tokens zero) and the running statistics
    constexpr int QC = D / 8;
    for (int idx = tid; idx < BM * QC; idx += VL_NT) {
        int j = idx / QC, c = idx % QC, mr = m0 + j, i = mr / G, h = kvh * G + mr % G;
        uint4 v = make_uint4(0, 0, 0, 0);
        if (i < qn) v = __ldg((const uint4 *)(p.q + ((size_t)(qs + i) * p.H + h) * D) + c);
        *(uint4 *)(sQ + j * LDQ + c * 8) = v;
    }
    for (int j = tid; j < BM; j += VL_NT) { sM[j] = VL_NEG; sL[j] = 0.f; }
    // the accumulator's row map: element e of every 16x16 float accumulator fragment is row rmap[e]
    for (int idx = tid; idx < 256; idx += VL_NT) sS[idx] = (float)(idx / 16);
    __syncthreads();
    const int wm = warp / WN, wn = warp % WN;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> o[OF];
    unsigned char rmap[8];
    {
        wmma::fragment<wmma::accumulator, 16, 16, 16, float> f;
        wmma::load_matrix_sync(f, sS, 16, wmma::mem_row_major);
        static_assert(sizeof(rmap) == decltype(f)::num_elements, "8 elements a fragment");
#pragma unroll
        for (int e = 0; e < 8; e++) rmap[e] = (unsigned char)f.x[e];
    }
#pragma unroll
    for (int f = 0; f < OF; f++) wmma::fill_fragment(o[f], 0.f);

    // softmax ownership: row sr, columns sc0 .. sc0 + CPR - 1; its token's last visible key
    const int sr = tid / TPR, sc0 = (tid % TPR) * CPR;
    const int s_pos = base_pos + min((m0 + sr) / G, qn - 1);
    const int ntiles = (last_key + BN) / BN;
    VlStage<D, BN> st;
    for (int t = 0; t < ntiles; t++) {
        const int t0 = t * BN;
        vl_load<D, BN>(st, p.k, p, r, kvh, t0, last_key);
        __syncthreads();   // the previous tile's P V is done with the K/V tile and P
        vl_store<D, BN, LDQ>(st, sKV);
        __syncthreads();
        // S = Q K^T, warp (wm, wn): rows wm*16, columns (wn*SF + f)*16
        {
            wmma::fragment<wmma::accumulator, 16, 16, 16, float> s[SF];
#pragma unroll
            for (int f = 0; f < SF; f++) wmma::fill_fragment(s[f], 0.f);
#pragma unroll 4
            for (int kk = 0; kk < D / 16; kk++) {
                wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
                wmma::load_matrix_sync(a, sQ + wm * 16 * LDQ + kk * 16, LDQ);
#pragma unroll
                for (int f = 0; f < SF; f++) {
                    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> b;
                    wmma::load_matrix_sync(b, sKV + (wn * SF + f) * 16 * LDQ + kk * 16, LDQ);
                    wmma::mma_sync(s[f], a, b, s[f]);
                }
            }
#pragma unroll
            for (int f = 0; f < SF; f++)
                wmma::store_matrix_sync(sS + wm * 16 * LDS + (wn * SF + f) * 16, s[f], LDS, wmma::mem_row_major);
        }
        vl_load<D, BN>(st, p.v, p, r, kvh, t0, last_key); // V in flight during the softmax
        __syncthreads();
        // online softmax of row sr over its CPR columns, TPR threads a row (consecutive lanes)
        {
            float x[CPR], mx = VL_NEG;
#pragma unroll
            for (int c = 0; c < CPR; c++) {
                int key = t0 + sc0 + c;
                x[c] = key <= s_pos ? sS[sr * LDS + sc0 + c] * p.scale_log2 : VL_NEG;
                mx = fmaxf(mx, x[c]);
            }
#pragma unroll
            for (int o2 = TPR / 2; o2 > 0; o2 /= 2) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o2));
            const float m_old = sM[sr], m_new = fmaxf(m_old, mx);
            float sum = 0.f;
#pragma unroll
            for (int c = 0; c < CPR; c += 2) {
                float p0 = exp2f(x[c] - m_new), p1 = exp2f(x[c + 1] - m_new);
                sum += p0 + p1;
                *(half2 *)(sP + sr * LDP + sc0 + c) = __floats2half2_rn(p0, p1);
            }
#pragma unroll
            for (int o2 = TPR / 2; o2 > 0; o2 /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, o2);
            __syncwarp();
            if (tid % TPR == 0) {
                float alpha = exp2f(m_old - m_new);
                sA[sr] = alpha;
                sL[sr] = sL[sr] * alpha + sum;
                sM[sr] = m_new;
            }
        }
        vl_store<D, BN, LDQ>(st, sKV); // every warp's S MMA finished before the last barrier
        __syncthreads();
        // O = O * alpha + P V, warp (wm, wn): rows wm*16, columns (wn*OF + f)*16
        {
            float al[8];
#pragma unroll
            for (int e = 0; e < 8; e++) al[e] = sA[wm * 16 + rmap[e]];
#pragma unroll
            for (int f = 0; f < OF; f++)
#pragma unroll
                for (int e = 0; e < 8; e++) o[f].x[e] *= al[e];
#pragma unroll
            for (int kk = 0; kk < BN / 16; kk++) {
                wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
                wmma::load_matrix_sync(a, sP + wm * 16 * LDP + kk * 16, LDP);
#pragma unroll
                for (int f = 0; f < OF; f++) {
                    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b;
                    wmma::load_matrix_sync(b, sKV + kk * 16 * LDQ + (wn * OF + f) * 16, LDQ);
                    wmma::mma_sync(o[f], a, b, o[f]);
                }
            }
        }
    }
    __syncthreads(); // S is free: each warp's 16x16 output scratch
    float *scr = sS + warp * 256;
    float il[8];
#pragma unroll
    for (int e = 0; e < 8; e++) {
        float l = sL[wm * 16 + rmap[e]];
        il[e] = l > 0.f ? 1.f / l : 0.f;
    }
    const int orow = lane / 2, ocol = (lane % 2) * 8, mr = m0 + wm * 16 + orow, oi = mr / G;
    const int oh = kvh * G + mr % G;
#pragma unroll
    for (int f = 0; f < OF; f++) {
#pragma unroll
        for (int e = 0; e < 8; e++) o[f].x[e] *= il[e];
        wmma::store_matrix_sync(scr, o[f], 16, wmma::mem_row_major);
        __syncwarp();
        if (oi < qn) {
            uint4 pk;
            half2 *ph = (half2 *)&pk;
#pragma unroll
            for (int e = 0; e < 4; e++)
                ph[e] = __floats2half2_rn(scr[orow * 16 + ocol + 2 * e], scr[orow * 16 + ocol + 2 * e + 1]);
            *(uint4 *)(p.out + ((size_t)(qs + oi) * p.H + oh) * D + (wn * OF + f) * 16 + ocol) = pk;
        }
        __syncwarp();
    }
}

// --- host -----------------------------------------------------------------------------------

static int vl_dims_ok(int head_dim) { return head_dim == 64 || head_dim == 128 || head_dim == 256; }

template <int D>
static int vl_launch(const VlParams &p, int grid, cudaStream_t s) {
    constexpr int BM = vl_bm(D);
    constexpr int smem = vl_plan(D, BM, VL_BN).BYTES;
    static int set[16];
    int dev = 0;
    if (VL_CHECK(cudaGetDevice(&dev))) return ATTN_ECUDA;
    if (dev >= 0 && dev < 16 && !set[dev]) {
        int optin = 0;
        if (VL_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev))) return ATTN_ECUDA;
        if (optin < smem) return ATTN_ESMEM;
        if (VL_CHECK(cudaFuncSetAttribute((const void *)attn_varlen_kernel<D, BM, VL_BN>,
                                          cudaFuncAttributeMaxDynamicSharedMemorySize, smem)))
            return ATTN_ECUDA;
        set[dev] = 1;
    }
    attn_varlen_kernel<D, BM, VL_BN><<<grid, VL_NT, smem, s>>>(p);
    return VL_CHECK(cudaGetLastError());
}

extern "C" {

int attn_varlen_config(int head_dim, int *bm, int *bn, int *smem_bytes) {
    if (!vl_dims_ok(head_dim)) return ATTN_ESHAPE;
    if (bm) *bm = vl_bm(head_dim);
    if (bn) *bn = VL_BN;
    if (smem_bytes) *smem_bytes = vl_plan(head_dim, vl_bm(head_dim), VL_BN).BYTES;
    return 0;
}

int attn_varlen_count(int num_rows, const int *q_len, const int *seq_len, int group, int kv_heads,
                            int head_dim, int sms, int ctas_per_sm, attn_varlen_shape *out) {
    int bm = 0, bn = 0;
    if (attn_varlen_config(head_dim, &bm, &bn, NULL) || num_rows < 0 || group < 1 || kv_heads < 1 || !out)
        return ATTN_EINVAL;
    memset(out, 0, sizeof *out);
    int n = 0;
    for (int r = 0; r < num_rows; r++) n += (int)(((long long)q_len[r] * group + bm - 1) / bm);
    int *walk = (int *)malloc((n > 0 ? n : 1) * sizeof(int));
    if (!walk) return ATTN_ENOMEM;
    int k = 0;
    for (int r = 0; r < num_rows; r++) {
        long long rows = (long long)q_len[r] * group;
        for (long long m0 = 0; m0 < rows; m0 += bm) {
            long long last_tok = (m0 + bm - 1) / group < q_len[r] - 1 ? (m0 + bm - 1) / group : q_len[r] - 1;
            int tiles = (int)((seq_len[r] - q_len[r] + last_tok + bn) / bn);
            walk[k++] = tiles;
            out->tiles += (long long)tiles * kv_heads;
            if (tiles > out->max_tiles) out->max_tiles = tiles;
        }
    }
    out->ctas = (long long)n * kv_heads;
    out->entries = n;
    // the busiest SM: CTAs in grid order (longest first), each to the least loaded of
    // sms * ctas_per_sm slots (ties to the lower slot); an SM's load is the sum of its slots'
    // tiles (sim/cost_feat.c's varlen features place them the same way)
    if (sms > 0 && ctas_per_sm > 0 && n > 0) {
        // CTAs per walk length (walks are small integers), taken longest first
        int maxw = out->max_tiles;
        long long *cnt = (long long *)calloc((size_t)maxw + 1, sizeof(long long));
        int slots = sms * ctas_per_sm;
        long long *load = (long long *)calloc((size_t)slots, sizeof(long long));
        if (!cnt || !load) { free(cnt); free(load); free(walk); return ATTN_ENOMEM; }
        for (int i = 0; i < n; i++) cnt[walk[i]] += kv_heads;
        for (int w = maxw; w >= 1; w--)
            for (long long c = 0; c < cnt[w]; c++) {
                int best = 0;
                for (int s = 1; s < slots; s++)
                    if (load[s] < load[best]) best = s;
                load[best] += w;
            }
        for (int s = 0; s < sms; s++) { // slot i is on SM i % sms: the first CTAs spread over the SMs
            long long t = 0;
            for (int c = 0; c < ctas_per_sm; c++) t += load[c * sms + s];
            if (t > out->busiest_sm_tiles) out->busiest_sm_tiles = t;
        }
        free(cnt);
        free(load);
    }
    free(walk);
    return 0;
}

struct attn_varlen_plan {
    int entries, kv_heads, head_dim, group;
    void *d_map;
};

static int cmp_walk_desc(const void *a, const void *b) {
    const int *x = (const int *)a, *y = (const int *)b; // (tiles, row, m0)
    if (x[0] != y[0]) return y[0] - x[0];
    if (x[1] != y[1]) return x[1] - y[1];
    return x[2] - y[2];
}

attn_varlen_plan *attn_varlen_plan_create(const attn_kv *kv, const attn_batch *b) {
    if (!kv || !b || !vl_dims_ok(kv->head_dim) || b->num_q_heads % kv->kv_heads) return NULL;
    int bm = vl_bm(kv->head_dim), group = b->num_q_heads / kv->kv_heads, n = 0;
    for (int r = 0; r < b->num_rows; r++) n += (b->q_len[r] * group + bm - 1) / bm;
    if (n <= 0) return NULL;
    int *ent = (int *)malloc((size_t)n * 3 * sizeof(int));
    int2 *map = (int2 *)malloc((size_t)n * sizeof(int2));
    attn_varlen_plan *pl = (attn_varlen_plan *)calloc(1, sizeof *pl);
    if (!ent || !map || !pl) goto fail;
    {
        int k = 0;
        for (int r = 0; r < b->num_rows; r++)
            for (int m0 = 0; m0 < b->q_len[r] * group; m0 += bm) {
                int last_tok = (m0 + bm - 1) / group < b->q_len[r] - 1 ? (m0 + bm - 1) / group : b->q_len[r] - 1;
                ent[3 * k] = (b->seq_len[r] - b->q_len[r] + last_tok + VL_BN) / VL_BN;
                ent[3 * k + 1] = r;
                ent[3 * k + 2] = m0;
                k++;
            }
        qsort(ent, n, 3 * sizeof(int), cmp_walk_desc);
        for (int i = 0; i < n; i++) map[i] = make_int2(ent[3 * i + 1], ent[3 * i + 2]);
    }
    pl->entries = n;
    pl->kv_heads = kv->kv_heads;
    pl->head_dim = kv->head_dim;
    pl->group = group;
    pl->d_map = attn_dev_alloc((size_t)n * sizeof(int2));
    if (!pl->d_map || attn_memcpy_h2d(pl->d_map, map, (size_t)n * sizeof(int2))) goto fail;
    free(ent);
    free(map);
    return pl;
fail:
    free(ent);
    free(map);
    if (pl) attn_dev_free(pl->d_map);
    free(pl);
    return NULL;
}

void attn_varlen_plan_free(attn_varlen_plan *pl) {
    if (!pl) return;
    attn_dev_free(pl->d_map);
    free(pl);
}

int attn_varlen_run(const attn_varlen_plan *pl, const attn_kv *kv, const attn_batch *b, const void *q, void *out,
                    float sm_scale, void *stream) {
    if (!pl || !kv || !b || !q || !out) return ATTN_EINVAL;
    if (kv->dtype != ATTN_FP16 || !vl_dims_ok(kv->head_dim) || b->num_q_heads % kv->kv_heads) return ATTN_ESHAPE;
    if (pl->head_dim != kv->head_dim || pl->kv_heads != kv->kv_heads || pl->group != b->num_q_heads / kv->kv_heads)
        return ATTN_EINVAL;
    VlParams p;
    p.q = (const half *)q;
    p.out = (half *)out;
    p.k = (const half *)kv->k;
    p.v = (const half *)kv->v;
    p.page = kv->page;
    p.kv_heads = kv->kv_heads;
    p.H = b->num_q_heads;
    p.group = pl->group;
    p.max_pages = b->max_pages;
    p.block_table = (const int *)b->d_block_table;
    p.q_len = (const int *)b->d_q_len;
    p.seq_len = (const int *)b->d_seq_len;
    p.q_start = (const int *)b->d_q_start;
    p.map = (const int2 *)pl->d_map;
    p.scale_log2 = sm_scale * 1.4426950408889634f;
    long long grid = (long long)pl->entries * pl->kv_heads;
    if (grid > 0x7fffffffLL) return ATTN_ESHAPE;
    cudaStream_t s = (cudaStream_t)stream;
    switch (kv->head_dim) {
    case 64: return vl_launch<64>(p, (int)grid, s);
    case 128: return vl_launch<128>(p, (int)grid, s);
    default: return vl_launch<256>(p, (int)grid, s);
    }
}

int attn_varlen_ctas_per_sm(int head_dim) {
    int occ = 0, dev = 0;
    if (!vl_dims_ok(head_dim)) return ATTN_ESHAPE;
    if (VL_CHECK(cudaGetDevice(&dev))) return ATTN_ECUDA;
    const void *k = head_dim == 64 ? (const void *)attn_varlen_kernel<64, vl_bm(64), VL_BN>
                  : head_dim == 128 ? (const void *)attn_varlen_kernel<128, vl_bm(128), VL_BN>
                                    : (const void *)attn_varlen_kernel<256, vl_bm(256), VL_BN>;
    int smem = vl_plan(head_dim, vl_bm(head_dim), VL_BN).BYTES;
    if (VL_CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem))) return ATTN_ECUDA;
    if (VL_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, k, VL_NT, smem))) return ATTN_ECUDA;
    return occ;
}

static int cmp_f(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

int attn_varlen_time(const attn_varlen_plan *pl, const attn_kv *kv, const attn_batch *b, const void *q, void *out,
                     float sm_scale, int warmup, int reps, float *median_ms) {
    int err = 0;
    cudaEvent_t e0, e1;
    float *t = (float *)malloc((reps > 0 ? reps : 1) * sizeof(float));
    if (!t) return ATTN_ENOMEM;
    if (VL_CHECK(cudaEventCreate(&e0))) { free(t); return ATTN_ECUDA; }
    if (VL_CHECK(cudaEventCreate(&e1))) { cudaEventDestroy(e0); free(t); return ATTN_ECUDA; }
    for (int i = 0; i < warmup && !err; i++) err = attn_varlen_run(pl, kv, b, q, out, sm_scale, NULL);
    for (int i = 0; i < reps && !err; i++) {
        cudaEventRecord(e0);
        err = attn_varlen_run(pl, kv, b, q, out, sm_scale, NULL);
        cudaEventRecord(e1);
        if (!err) err = VL_CHECK(cudaEventSynchronize(e1));
        if (!err) err = VL_CHECK(cudaEventElapsedTime(&t[i], e0, e1));
    }
    if (!err && reps > 0) {
        qsort(t, reps, sizeof(float), cmp_f);
        *median_ms = t[reps / 2];
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    free(t);
    return err;
}

int attn_varlen_kv_alloc(attn_kv *kv, int num_blocks, int page, int kv_heads, int head_dim, uint64_t seed) {
    memset(kv, 0, sizeof *kv);
    if (!attn_gpu_available()) return ATTN_ENODEV;
    if (num_blocks <= 0 || page <= 0 || kv_heads <= 0 || !vl_dims_ok(head_dim)) return ATTN_EINVAL;
    kv->dtype = ATTN_FP16;
    kv->num_blocks = num_blocks;
    kv->page = page;
    kv->kv_heads = kv_heads;
    kv->head_dim = head_dim;
    kv->k_scale = kv->v_scale = 1.f;
    size_t n = (size_t)num_blocks * page * kv_heads * head_dim;
    kv->k = attn_dev_alloc(n * 2);
    kv->v = attn_dev_alloc(n * 2);
    if (!kv->k || !kv->v || attn_fill_half_random(kv->k, n, -1.f, 1.f, seed) ||
        attn_fill_half_random(kv->v, n, -1.f, 1.f, seed + 1)) {
        attn_kv_free(kv);
        return ATTN_ENOMEM;
    }
    return attn_sync();
}

int attn_varlen_validate(const attn_varlen_case *c, uint64_t seed, double *rel_err, long *unwritten) {
    int err = 0;
    attn_kv kv;
    attn_batch *b = NULL;
    attn_varlen_plan *pl = NULL;
    void *q = NULL, *out = NULL;
    uint16_t *h = NULL;
    *rel_err = INFINITY;
    *unwritten = -1;
    if (c->num_rows < 1 || c->num_rows > ATTN_VARLEN_CASE_ROWS || c->kv_heads < 1 || c->group < 1) return ATTN_EINVAL;
    long blocks = 4;
    for (int r = 0; r < c->num_rows; r++) blocks += (c->seq[r] + c->page - 1) / c->page;
    if ((err = attn_varlen_kv_alloc(&kv, (int)blocks, c->page, c->kv_heads, c->head_dim, seed))) return err;
    int H = c->kv_heads * c->group;
    b = attn_batch_create(&kv, c->num_rows, c->q, c->seq, H, NULL, 0, seed ^ 0x5eed);
    if (!b) { err = ATTN_ENOMEM; goto done; }
    pl = attn_varlen_plan_create(&kv, b);
    if (!pl) { err = ATTN_ENOMEM; goto done; }
    {
        size_t n = (size_t)b->total_q * H * c->head_dim;
        q = attn_dev_alloc(n * 2);
        out = attn_dev_alloc(n * 2);
        h = (uint16_t *)malloc(n * 2);
        if (!q || !out || !h) { err = ATTN_ENOMEM; goto done; }
        if ((err = attn_fill_half_random(q, n, -2.f, 2.f, seed + 7))) goto done;
        if ((err = attn_fill_bytes(out, n * 2, 0xFF))) goto done; // poison: fp16 NaN
        float sm = 1.f / sqrtf((float)c->head_dim);
        if ((err = attn_varlen_run(pl, &kv, b, q, out, sm, NULL))) goto done;
        if ((err = attn_sync()) || (err = attn_memcpy_d2h(h, out, n * 2))) goto done;
        long nf = 0;
        for (size_t i = 0; i < n; i++)
            if (((h[i] >> 10) & 31) == 31) nf++;
        *unwritten = nf;
        long bad = 0;
        err = attn_check_output(&kv, b, q, out, sm, c->samples, seed + 11, rel_err, &bad);
    }
done:
    free(h);
    attn_dev_free(q);
    attn_dev_free(out);
    attn_varlen_plan_free(pl);
    attn_batch_free(b);
    attn_kv_free(&kv);
    return err;
}

} // extern "C"
