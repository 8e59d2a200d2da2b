// attn_common.cuh -- shared pieces of the paged attention kernels (sm_70 features only).
//
// One tile engine serves every WMMA route. A CTA of 8 warps owns MR "query rows" and walks
// the KV of one kv head in tiles of BN tokens:
//   S = Q K^T (WMMA 16x16x16, fp16 in, fp32 acc) -> smem; online softmax per row (exp2,
//   scale folded into log2e) -> P fp16 in smem; O = O*alpha + P V with O held in WMMA
//   accumulator fragments, rescaled through a per-element row map learnt at kernel start
//   (the fragment layout is unspecified but fixed for a binary: load a matrix whose (r,c)
//   is r and read the elements back).
// Prefill rows are BM consecutive q tokens of one q head; decode rows are (q token, head of
// the GQA group) pairs of one kv head, so one pass over the KV serves the whole group.
// K/V staging modes: GENERIC (load K,V -> sync -> compute), SHARED (K and V take turns in one
// smem tile: the low-smem variant), PIPE (next tile's K/V loaded into registers while the
// current tile is computed, then stored to smem: registers -> smem double buffer; K is
// issued before S, V after the softmax), PIPE2 (decode: the next tile's K and V are both
// issued at the top of the iteration and both stored after PV, so a whole tile stays in
// flight during the whole compute), PHASE (one smem tile for K and V, like SHARED, but
// pipelined through registers: V of this tile is issued at the top and stored after S,
// K of the next tile issued then and stored after PV; the fast path on every GPU (faster than
// PIPE on the H200 too), and every route on 64 KB GPUs (sm_75)).
// Plan flags shrink the smem further: PALIAS (P written into the S rows it replaces),
// SALIAS (S lives in the K/V tile between the S MMA and the softmax; PHASE only).
// EARLYK (PIPE2 with the next K stored right after S) and SSPLIT are in no configuration
// the library runs: kernels/dev/ times them against the chosen ones.
// Which configuration runs is chosen per device at launch (attn_cfg_pick: the first of the
// route's list that fits cudaDevAttrMaxSharedMemoryPerBlockOptin); the lists are below.
// fp8_e5m2 KV is dequantised while staging: half(raw << 8) * scale.
#pragma once
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>
#include <stdint.h>

// The kernels use WMMA fp16 (16x16x16, fp32 accumulate), sm_70's tensor cores: nothing older
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 700
#error "kernels/attn_common.cuh: the attention kernels need sm_70 or newer (WMMA fp16 tensor cores); build with CUDA_ARCH=sm_70 or later"
#endif

#define ATTN_D 256             // the largest head_dim (and the one every default below means)
#define ATTN_MAX_GROUP 16      // q heads per kv head the routes take (1 .. 16)
// head_dim D is a template parameter of every kernel: 64, 128 or 256 (attn_d_ok); the tile
// configurations are the same for every D, their shared memory (smem_plan) scales with D
__host__ __device__ constexpr bool attn_d_ok(int d) { return d == 64 || d == 128 || d == 256; }
#define ATTN_NT 256            // threads per CTA (8 warps)
#define ATTN_NEG (-1.0e30f)    // finite "minus infinity" for running maxima

enum { KV_GENERIC = 0, KV_SHARED = 1, KV_PIPE = 2, KV_PIPE2 = 3, KV_PHASE = 4 };
enum { PL_PALIAS = 1, PL_SALIAS = 2, PL_EARLYK = 4, PL_SSPLIT = 8, PL_NOL1 = 16, PL_QREG = 32, PL_SPAD = 64,
       PL_ASKIP = 128, PL_LEANSM = 8192, PL_EX2 = 16384, PL_KVSPLIT = 32768 };
// (bits 256..4096 are unused: kernels/NOTES.md v7 lists the flags measured there and not kept; the
// flags' values, hence the kernels' mangled names, are those the measurements name)

// The prefill fast path's flags (Nsight Compute on the phase kernel with S in the K/V tile at
// q=784/104K: the L1/shared data pipe 73% busy while the SMs are active, warps stalled on
// shared-memory results 35% of the time, 4660 shared wavefronts per 128-key tile, of which Q's
// fragment loads 1024, S's fp32 store and the softmax's reads 512 with a 2-way bank conflict each,
// the O rescale's alpha loads 128; kernels/NOTES.md v7):
//   QREG  Q's fragments of one row tile held in registers for the whole KV walk; warp w computes S for
//         row tile w / (8 / RT) and two column tiles, loading only K (MR 32 x BN 128 only)
//   LEANSM the softmax of a tile that every row sees whole (all its keys before the first row's
//         position and inside the walk: all but the last few tiles of a prefill) skips the
//         masks, and the scale is folded into the exponent (ex2(s * scale - m) as one FFMA)
//   EX2   the softmax's exponentials as ex2.approx.ftz (exp2f adds a range fix-up of three
//         instructions an element for results below 2^-126, which P's fp16 flushes to 0 anyway)
//   SPAD  S rows padded to BN + 8 floats (8 banks a row: the store and the softmax's reads conflict-free)
//   ASKIP the O rescale skipped by a warp when no row's running maximum moved in this tile (one
//         vote on the 32 alphas: after the first tiles of a long walk it almost never moves)
//   KVSPLIT a prefill CTA walks part blockIdx.y of gridDim.y of its keys (whole BN tiles, the parts
//         as equal as tiles allow) and, when gridDim.y > 1, writes its rows' unnormalised partials
//         (O, m, l) like a decode partition for the merge kernel (attn_prefill.cu); gridDim.y = 1
//         is the unsplit launch. How many parts: kernels/attn_split.h.

// 2^x, flushed to 0 below 2^-126 (sm_70 PTX)
__device__ __forceinline__ float ex2_ftz(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

// NOL1: K/V loads bypass L1 (ld.global.nc.L1::no_allocate, PTX 7.4, sm_70 and up): every
// K/V byte is read once per CTA, so an L1 line only displaces others
__device__ __forceinline__ uint4 ldg_nol1(const uint4 *ptr) {
    uint4 r;
    asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
        : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(ptr));
    return r;
}

// SSPLIT (kernels/dev/ decode variants only): when the S tile has fewer 16x16 tiles than the CTA has
// warps (XQA: MR 16 x BN 64 = 4 tiles), KS = 8 / tiles warps share each S tile, each over 1/KS of
// D, into KS partial S buffers the softmax adds: all 8 warps work and the HMMA chains are KS x shorter.
__host__ __device__ constexpr int attn_sks(int MR, int BN, int PLAN) {
    return (PLAN & PL_SSPLIT) && (MR / 16) * (BN / 16) < 8 ? 8 / ((MR / 16) * (BN / 16)) : 1;
}

// everything a WMMA attention kernel needs; plain data, passed by value
struct AttnParams {
    const half *q;            // [total_q, H, D]
    half *out;                // [total_q, H, D] (prefill: normalised output)
    const void *k, *v;        // paged cache (fp16 or uint8)
    int page, kv_heads, H, group;
    float k_scale, v_scale;
    const int *block_table;   // [rows, max_pages]
    int max_pages;
    const int *q_len, *seq_len, *q_start;
    float scale_log2;         // sm_scale * log2(e)
    // decode (split-K) partials
    float *ws_o, *ws_m, *ws_l; // [total_q, H, np_max, D], [total_q, H, np_max]
    int np_max, nchunks;
};

#define cuda_check(err) cuda_check_impl((err), __FILE__, __LINE__)

// --- KV tile staging -------------------------------------------------------------------

// a tile of BN tokens of one kv head, as 16-byte global chunks held in registers
template <int BN, bool FP8, int D = ATTN_D>
struct Stage {
    static constexpr int CPT = FP8 ? D / 16 : D / 8; // 16-byte chunks per token
    static constexpr int N = BN * CPT / ATTN_NT;
    static_assert(N >= 1 && N * ATTN_NT == BN * CPT, "whole 16-byte chunks a thread");
    uint4 r[N];
};

// rows[tok]: the paged-cache row ((block * page + slot) * kv_heads + kvh) of each token of the
// tile, or -1 past the end; computed two tiles ahead so no block-table load sits in the chain
template <int BN, bool FP8, bool NA = false, int D = ATTN_D>
__device__ __forceinline__ void stage_load(Stage<BN, FP8, D> &s, const void *base, const int *rows) {
    constexpr int CPT = Stage<BN, FP8, D>::CPT;
    constexpr int ROWB = FP8 ? D : D * 2; // bytes per token per head
#pragma unroll
    for (int i = 0; i < Stage<BN, FP8, D>::N; i++) {
        int idx = threadIdx.x + i * ATTN_NT;
        int tok = idx / CPT, c = idx % CPT;
        int row = rows[tok];
        const uint4 *src = (const uint4 *)((const char *)base + (size_t)row * ROWB) + c;
        if (row >= 0) s.r[i] = NA ? ldg_nol1(src) : __ldg(src);
        else s.r[i] = make_uint4(0, 0, 0, 0);
    }
}

__device__ __forceinline__ uint32_t fp8x2_to_half2(uint32_t w, uint32_t sel, half2 sc) {
    uint32_t h = __byte_perm(w, 0u, sel); // bytes [0, b_lo, 0, b_hi]: each fp8 is an fp16 high byte
    half2 x = *reinterpret_cast<half2 *>(&h);
    x = __hmul2(x, sc);
    return *reinterpret_cast<uint32_t *>(&x);
}

template <int BN, bool FP8, int LD, int D = ATTN_D>
__device__ __forceinline__ void stage_store(const Stage<BN, FP8, D> &s, half *sm, float scale) {
    constexpr int CPT = Stage<BN, FP8, D>::CPT;
#pragma unroll
    for (int i = 0; i < Stage<BN, FP8, D>::N; i++) {
        int idx = threadIdx.x + i * ATTN_NT;
        int tok = idx / CPT, c = idx % CPT;
        if (!FP8) {
            *(uint4 *)(sm + tok * LD + c * 8) = s.r[i];
        } else {
            half2 sc = __float2half2_rn(scale);
            uint4 a, b;
            a.x = fp8x2_to_half2(s.r[i].x, 0x1404, sc); a.y = fp8x2_to_half2(s.r[i].x, 0x3424, sc);
            a.z = fp8x2_to_half2(s.r[i].y, 0x1404, sc); a.w = fp8x2_to_half2(s.r[i].y, 0x3424, sc);
            b.x = fp8x2_to_half2(s.r[i].z, 0x1404, sc); b.y = fp8x2_to_half2(s.r[i].z, 0x3424, sc);
            b.z = fp8x2_to_half2(s.r[i].w, 0x1404, sc); b.w = fp8x2_to_half2(s.r[i].w, 0x3424, sc);
            *(uint4 *)(sm + tok * LD + c * 16) = a;
            *(uint4 *)(sm + tok * LD + c * 16 + 8) = b;
        }
    }
}

// --- shared memory plan ----------------------------------------------------------------
// One formula for the kernels (Smem<>) and for the host (attn_cfg_pick, attn_smem_bytes).

struct SmemPlan {
    int LDQ, LDK, LDS, LDP, LDO;      // leading dimensions (elements)
    int Q, K, V, S, P, ROW, OFF;      // byte offsets
    int BYTES;                        // dynamic shared memory per block
};

__host__ __device__ constexpr SmemPlan smem_plan(int MR, int BN, int MODE, int PLAN, int D = ATTN_D) {
    SmemPlan s{};
    s.LDQ = D + 8;
    s.LDK = D + 8;
    s.LDS = (PLAN & PL_SPAD) ? BN + 8 : BN + 4;
    s.LDP = (PLAN & PL_PALIAS) ? 2 * s.LDS : BN + 8; // P rows inside the S rows: same row pitch in bytes
    s.LDO = D + 4;
    const bool one = MODE == KV_SHARED || MODE == KV_PHASE; // K and V share one tile
    s.Q = 0;
    s.K = s.Q + MR * s.LDQ * 2;
    s.V = one ? s.K : s.K + BN * s.LDK * 2;
    const int kv_end = s.V + BN * s.LDK * 2;
    s.S = (PLAN & PL_SALIAS) ? s.K : kv_end;
    const int s_end = (PLAN & PL_SALIAS) ? kv_end : s.S + MR * s.LDS * 4 * attn_sks(MR, BN, PLAN);
    s.P = (PLAN & PL_PALIAS) ? s.S : s_end;
    const int p_end = (PLAN & PL_PALIAS) ? s_end : s.P + MR * s.LDP * 2;
    s.ROW = p_end;                    // m, l, alpha (float), pos (int)
    s.OFF = s.ROW + MR * 16;          // token rows of two tiles (int)
    s.BYTES = s.OFF + 2 * BN * 4;
    return s;
}

template <int MR, int BN, int MODE, int PLAN = 0, int D = ATTN_D>
struct Smem {
    static constexpr SmemPlan L = smem_plan(MR, BN, MODE, PLAN, D);
    static constexpr int LDQ = L.LDQ, LDK = L.LDK, LDS = L.LDS, LDP = L.LDP, LDO = L.LDO;
    static constexpr int Q = L.Q, K = L.K, V = L.V, S = L.S, P = L.P, ROW = L.ROW, OFF = L.OFF;
    static constexpr int BYTES = L.BYTES;
    static_assert(MR * LDO * 4 <= BN * LDK * 2, "O staging must fit in the K tile");
    static_assert(K % 32 == 0 && V % 32 == 0 && S % 32 == 0 && P % 32 == 0, "wmma alignment");
    static_assert(!(PLAN & PL_SALIAS) || (MODE == KV_PHASE && !(PLAN & PL_PALIAS)),
                  "S in the K/V tile: PHASE staging only, P kept apart");
    static_assert(!(PLAN & PL_SALIAS) || MR * LDS * 4 * attn_sks(MR, BN, PLAN) <= BN * LDK * 2,
                  "S must fit in the K/V tile");
    static_assert(!(PLAN & PL_SSPLIT) || !(PLAN & (PL_SALIAS | PL_PALIAS)), "split S: S and P kept apart");
    static_assert(!(PLAN & PL_SSPLIT) || 8 % ((MR / 16) * (BN / 16)) == 0 || (MR / 16) * (BN / 16) >= 8,
                  "split S: the tiles must divide the 8 warps");
    static_assert(!(PLAN & PL_QREG) || (MR == 32 && BN == 128 && !(PLAN & PL_SSPLIT)),
                  "Q in registers: a row tile and two column tiles a warp (MR 32, BN 128)");
};

// --- configurations per route ----------------------------------------------------------
// A route's list, preferred first; the launcher takes the first whose smem fits the device.
// occ: CTAs per SM in __launch_bounds__.
struct KCfg { int mr, bn, mode, plan, occ; };

#define ATTN_CFG_MAX 3
struct KCfgList { int n; KCfg c[ATTN_CFG_MAX]; };

// route numbers as in attn.h (kept literal here so the table needs no C header)
__host__ __device__ constexpr KCfgList attn_cfg_list(int route) {
    return route == 0 ? KCfgList{3, {{32, 64, KV_GENERIC, 0, 2},            // 96.5 KB: sm_80, sm_86/89/12x (99 KB), sm_90/10x
                                     {32, 64, KV_GENERIC, PL_PALIAS, 1},    // 92 KB: sm_70
                                     {32, 64, KV_SHARED, PL_PALIAS, 1}}}    // 59 KB: sm_75
         : route == 1 ? KCfgList{2, {{16, 128, KV_SHARED, 0, 2},            // 88 KB
                                     {16, 64, KV_SHARED, 0, 1}}}            // 48.5 KB: sm_75 (BN halved)
         : route == 2 || route == 3
                      ? KCfgList{2, {{32, 128, KV_PHASE, PL_SALIAS | PL_QREG | PL_SPAD | PL_ASKIP | PL_LEANSM | PL_EX2 | PL_KVSPLIT, 1},
                                                                            // 92.5 KB: every arch >= 96 KB (9.57 ms
                                                                            // unsplit at q=784/104K on the H200, S in
                                                                            // the K/V tile alone 11.34, PIPE 12.42;
                                                                            // the walk split: attn_split.h)
                                     {32, 64, KV_PHASE, PL_PALIAS | PL_KVSPLIT, 1}}} // 59 KB: sm_75 (BN halved)
         : route == 5 ? KCfgList{2, {{16, 64, KV_PIPE2, 0, 1},              // 81.5 KB
                                     {16, 64, KV_PHASE, 0, 1}}}             // 48.5 KB: sm_75
         : route == 7 ? KCfgList{3, {{32, 64, KV_PIPE2, 0, 1},              // 96.5 KB
                                     {32, 64, KV_PIPE2, PL_PALIAS, 1},      // 92 KB: sm_70
                                     {32, 64, KV_PHASE, PL_PALIAS, 1}}}     // 59 KB: sm_75
                      : KCfgList{0, {}};
}

__host__ __device__ constexpr KCfg attn_cfg(int route, int i) { return attn_cfg_list(route).c[i]; }
__host__ __device__ constexpr int attn_cfg_bytes(KCfg c, int D = ATTN_D) { return smem_plan(c.mr, c.bn, c.mode, c.plan, D).BYTES; }

// index of the first configuration of a route that fits `limit` bytes of dynamic smem at head_dim D, or -1
__host__ __device__ constexpr int attn_cfg_pick(int route, int limit, int D = ATTN_D) {
    for (int i = 0; i < attn_cfg_list(route).n; i++)
        if (attn_cfg_bytes(attn_cfg(route, i), D) <= limit) return i;
    return -1;
}

// static smem of the non-WMMA kernels (the WMMA kernel has none: everything is in smem_plan),
// as ptxas -v reports it (rounded up to 128 bytes); kernels/check_smem.sh checks the reports
// (the _128 / _64 values: the kernels' head_dim 128 and 64 instantiations)
template <int D = ATTN_D>
struct ScalarSmem { float m[8], l[8]; float o[8][D]; };
#define ATTN_SCALAR_STATIC_SMEM 8320     // decode_scalar_kernel: ScalarSmem
#define ATTN_SCALAR_STATIC_SMEM_128 4224
#define ATTN_SCALAR_STATIC_SMEM_64 2176
#define ATTN_REDUCE_STATIC_SMEM 3200     // decode_reduce_kernel: red4[G - 1][D/4] float4 (G = 1024 / D groups) + red[8]
#define ATTN_REDUCE_STATIC_SMEM_128 3712
#define ATTN_REDUCE_STATIC_SMEM_64 3968
__host__ __device__ constexpr int attn_round128(int x) { return (x + 127) / 128 * 128; }
__host__ __device__ constexpr int attn_reduce_groups(int D) { return ATTN_NT * 4 / D; }
__host__ __device__ constexpr int attn_reduce_static_smem(int D) {
    return attn_round128((attn_reduce_groups(D) - 1) * (D / 4) * 16 + 8 * 4);
}
static_assert(attn_round128(sizeof(ScalarSmem<256>)) == ATTN_SCALAR_STATIC_SMEM &&
              attn_round128(sizeof(ScalarSmem<128>)) == ATTN_SCALAR_STATIC_SMEM_128 &&
              attn_round128(sizeof(ScalarSmem<64>)) == ATTN_SCALAR_STATIC_SMEM_64, "scalar static smem");
static_assert(attn_reduce_static_smem(256) == ATTN_REDUCE_STATIC_SMEM && attn_reduce_static_smem(128) == ATTN_REDUCE_STATIC_SMEM_128 &&
              attn_reduce_static_smem(64) == ATTN_REDUCE_STATIC_SMEM_64, "reduce static smem");
__host__ __device__ constexpr int attn_scalar_static_smem(int D) {
    return D == 256 ? ATTN_SCALAR_STATIC_SMEM : D == 128 ? ATTN_SCALAR_STATIC_SMEM_128 : ATTN_SCALAR_STATIC_SMEM_64;
}
// The decode routes where two of their CTAs fit an SM (sm_80 and up; attn_decode.cu decode_pick): one
// K/V tile, the K/V loads skipping L1, 2 CTAs per SM. XQA "phasena" 48.5 KB, small-q "phase2na" 59 KB.
constexpr KCfg ATTN_XQA_TWO_PER_SM = {16, 64, KV_PHASE, PL_NOL1, 2};
constexpr KCfg ATTN_SMALLQ_TWO_PER_SM = {32, 64, KV_PHASE, PL_NOL1, 2};
// whether a decode route runs its two-per-SM configuration `two`: where the list's entry 0 fits a
// block (pick == 0) and two CTAs of `two` fit an SM of per_sm bytes (0: not known, taken as fitting)
__host__ __device__ constexpr bool attn_two_per_sm(KCfg two, int pick, int limit, int per_sm, int D = ATTN_D) {
    return pick == 0 && attn_cfg_bytes(two, D) <= limit && (per_sm <= 0 || 2 * (attn_cfg_bytes(two, D) + 1024) <= per_sm);
}
static_assert(attn_cfg_pick(2, 98304) == 0 && attn_cfg_pick(2, 65536) == 1, "fast path: BN128 down to 96 KB");

// --- the tile engine -------------------------------------------------------------------
//
// DEC = false: prefill. blockIdx = (m tile, 0, row*H + head); rows = MR consecutive q tokens.
// DEC = true : decode.  blockIdx = (row, kvh*nchunks + chunk, partition); rows are
//              g = chunk*MR + j -> (q token g / group, head kvh*group + g % group).
// D: head_dim (64, 128, 256). O is D / 16 column tiles by MR / 16 row tiles of 16x16 accumulators:
// at D >= 128 warp w owns column tiles w + 8c (c < D / 128) of every row tile; at D = 64 (4 column
// tiles) warp w owns tile (w / 4, w % 4) (MR 32: all 8 warps; MR 16: warps 0..3, the others idle in PV).
template <int MR, int BN, int MODE, int PLAN, bool FP8, bool DEC, int OCC, int D = ATTN_D>
__global__ void __launch_bounds__(ATTN_NT, OCC)
attn_wmma_kernel(AttnParams p) {
    using namespace nvcuda;
    static_assert(attn_d_ok(D), "head_dim 64, 128 or 256");
    using SM = Smem<MR, BN, MODE, PLAN, D>;
    constexpr bool SALIAS = (PLAN & PL_SALIAS) != 0, PALIAS = (PLAN & PL_PALIAS) != 0;
    constexpr bool EARLYK = (PLAN & PL_EARLYK) != 0;
    constexpr bool NA = (PLAN & PL_NOL1) != 0;
    constexpr bool QREG = (PLAN & PL_QREG) != 0, ASKIP = (PLAN & PL_ASKIP) != 0;
    constexpr bool LEANSM = (PLAN & PL_LEANSM) != 0, EX2 = (PLAN & PL_EX2) != 0;
    constexpr bool KVSPLIT = !DEC && (PLAN & PL_KVSPLIT) != 0;
    constexpr int SKS = attn_sks(MR, BN, PLAN); // partial S buffers (1 unless PL_SSPLIT)
    extern __shared__ __align__(128) unsigned char smem[];
    half *sQ = (half *)(smem + SM::Q);
    half *sK = (half *)(smem + SM::K);
    half *sV = (half *)(smem + SM::V);
    float *sS = (float *)(smem + SM::S);
    half *sP = (half *)(smem + SM::P);
    float *sM = (float *)(smem + SM::ROW);
    float *sL = sM + MR, *sA = sL + MR;
    int *sPos = (int *)(sA + MR);
    int *sOff = (int *)(smem + SM::OFF); // [2][BN]: tile j's token rows in buffer j & 1
    const int tid = threadIdx.x, warp = tid / 32;

    // -- which rows, which keys
    int r, kvh, qn, L, qs, part = 0, head0 = 0, g0 = 0, nrows;
    if (!DEC) {
        r = blockIdx.z / p.H;
        head0 = blockIdx.z % p.H;
        kvh = head0 / p.group;
        qn = p.q_len[r];
        if ((int)blockIdx.x * MR >= qn) return;
        g0 = blockIdx.x * MR;
        nrows = min(MR, qn - g0);
        if (KVSPLIT) part = blockIdx.y;
    } else {
        r = blockIdx.x;
        kvh = blockIdx.y / p.nchunks;
        int chunk = blockIdx.y % p.nchunks;
        part = blockIdx.z;
        qn = p.q_len[r];
        g0 = chunk * MR;
        if (g0 >= qn * p.group) return;
        nrows = min(MR, qn * p.group - g0);
    }
    L = p.seq_len[r];
    qs = p.q_start[r];
    int kv_lo = 0, kv_hi;
    {
        int glast = g0 + nrows - 1;
        int qlast = DEC ? glast / p.group : glast;
        kv_hi = L - qn + qlast + 1; // keys up to the last row's position
        if (DEC) {
            int plen = L >= 32768 ? 1024 : 256;
            kv_lo = part * plen;
            if (kv_lo >= L) return;
            kv_hi = min(kv_hi, kv_lo + plen);
        }
        if (KVSPLIT && gridDim.y > 1) { // part `part` of gridDim.y: whole tiles; an empty part writes m = -inf, l = 0
            int per = ((kv_hi + BN - 1) / BN + gridDim.y - 1) / gridDim.y * BN;
            kv_lo = min(part * per, kv_hi);
            kv_hi = min(kv_hi, kv_lo + per);
        }
    }
    const int *bt_row = p.block_table + (size_t)r * p.max_pages;

    // -- per-row state and Q
    if (tid < MR) {
        int pos = -1;
        if (tid < nrows) {
            int g = g0 + tid;
            int qi = DEC ? g / p.group : g;
            pos = L - qn + qi;
        }
        sPos[tid] = pos;
        sM[tid] = ATTN_NEG;
        sL[tid] = 0.f;
    }
    for (int idx = tid; idx < MR * (D / 8); idx += ATTN_NT) {
        int j = idx / (D / 8), c = idx % (D / 8);
        uint4 val = make_uint4(0, 0, 0, 0);
        if (j < nrows) {
            int g = g0 + j, qi, h;
            if (DEC) { qi = g / p.group; h = kvh * p.group + g % p.group; }
            else { qi = g; h = head0; }
            val = __ldg((const uint4 *)(p.q + ((size_t)(qs + qi) * p.H + h) * D) + c);
        }
        *(uint4 *)(sQ + j * SM::LDQ + c * 8) = val;
    }
    auto tok_row = [&](int t) -> int {
        if (t >= kv_hi) return -1;
        int pi = t / p.page;
        return (bt_row[pi] * p.page + (t - pi * p.page)) * p.kv_heads + kvh;
    };
    for (int i = tid; i < 2 * BN; i += ATTN_NT) sOff[i] = tok_row(kv_lo + i);
    // row map of the accumulator fragment: element i of every acc fragment is in row rmap[i]
    float *sRow = (float *)(smem + SM::K);
    for (int idx = tid; idx < 256; idx += ATTN_NT) sRow[idx] = (float)(idx / 16);
    __syncthreads();
    typedef wmma::fragment<wmma::accumulator, 16, 16, 16, float> Acc;
    constexpr int NE = Acc::num_elements;
    uint32_t rmap4 = 0; // row of element i in bits 4i..4i+3 (NE == 8 on every target)
    static_assert(NE <= 8, "row map packing");
    {
        Acc f;
        wmma::load_matrix_sync(f, sRow, 16, wmma::mem_row_major);
#pragma unroll
        for (int i = 0; i < NE; i++) rmap4 |= (uint32_t)f.x[i] << (4 * i);
    }
    __syncthreads();

    // QREG: this warp's row tile of Q, all of D, in registers for the whole walk
    typedef wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> FragA;
    FragA qf[QREG ? D / 16 : 1];
    if constexpr (QREG) {
        const int rt = warp / (8 / (MR / 16));
#pragma unroll
        for (int kk = 0; kk < D / 16; kk++) wmma::load_matrix_sync(qf[kk], sQ + rt * 16 * SM::LDQ + kk * 16, SM::LDQ);
    }

    // O tiles per warp: OCW column tiles of each row tile (D >= 128), or one tile (D = 64)
    constexpr int ODT = D / 16, OCW = ODT >= 8 ? ODT / 8 : 0;
    constexpr int NOT = OCW ? MR / 16 * OCW : 1;
    static_assert(OCW || (ODT == 4 && MR / 16 * ODT <= 8), "D = 64: at most a tile a warp");
    const bool o_live = OCW || warp < MR / 16 * ODT; // D = 64: this warp owns an O tile
    Acc o[NOT];
#pragma unroll
    for (int i = 0; i < NOT; i++) wmma::fill_fragment(o[i], 0.f);

    constexpr int TPR = ATTN_NT / MR; // softmax threads per row
    constexpr int CPTH = BN / TPR;    // columns per thread
    static_assert(TPR <= 32 && CPTH >= 1, "softmax split");
    const void *kb = p.k, *vb = p.v;

    Stage<BN, FP8, D> st, st2;
    if (MODE == KV_PIPE) {
        stage_load<BN, FP8, NA>(st, kb, sOff);
        stage_store<BN, FP8, SM::LDK>(st, sK, p.k_scale);
        stage_load<BN, FP8, NA>(st, vb, sOff);
        stage_store<BN, FP8, SM::LDK>(st, sV, p.v_scale);
    } else if (MODE == KV_PIPE2 && EARLYK) {
        stage_load<BN, FP8, NA>(st, kb, sOff);
        stage_store<BN, FP8, SM::LDK>(st, sK, p.k_scale);
        stage_load<BN, FP8, NA>(st, vb, sOff);
        stage_store<BN, FP8, SM::LDK>(st, sV, p.v_scale);
    } else if (MODE == KV_PIPE2) { // K and V of tile 0 in flight together
        stage_load<BN, FP8, NA>(st, kb, sOff);
        stage_load<BN, FP8, NA>(st2, vb, sOff);
        stage_store<BN, FP8, SM::LDK>(st, sK, p.k_scale);
        stage_store<BN, FP8, SM::LDK>(st2, sV, p.v_scale);
    } else if (MODE == KV_PHASE) { // the tile holds K of tile 0; its V is issued at the loop top
        stage_load<BN, FP8, NA>(st, kb, sOff);
        stage_store<BN, FP8, SM::LDK>(st, sK, p.k_scale);
    }

    for (int t0 = kv_lo, j = 0; t0 < kv_hi; t0 += BN, j++) {
        const bool next = t0 + BN < kv_hi;
        const int *offc = sOff + (j & 1) * BN, *offn = sOff + ((j + 1) & 1) * BN;
        int nrow = tid < BN ? tok_row(t0 + 2 * BN + tid) : -1; // used at the end of the softmax
        if (MODE == KV_GENERIC) {
            stage_load<BN, FP8, NA>(st, kb, offc);
            stage_store<BN, FP8, SM::LDK>(st, sK, p.k_scale);
            stage_load<BN, FP8, NA>(st, vb, offc);
            stage_store<BN, FP8, SM::LDK>(st, sV, p.v_scale);
        } else if (MODE == KV_SHARED) {
            stage_load<BN, FP8, NA>(st, kb, offc);
            stage_store<BN, FP8, SM::LDK>(st, sK, p.k_scale);
        } else if (MODE == KV_PIPE && next) {
            stage_load<BN, FP8, NA>(st, kb, offn);
        } else if (MODE == KV_PIPE2 && next) {
            stage_load<BN, FP8, NA>(st, kb, offn);
            stage_load<BN, FP8, NA>(st2, vb, offn);
        } else if (MODE == KV_PHASE) {
            stage_load<BN, FP8, NA>(st, vb, offc); // V of this tile, stored once S is done with K
        }
        __syncthreads();

        // S = Q K^T. A warp owns RPW row tiles of one column tile (the K fragment is loaded
        // once for them) and splits the D loop over two accumulators: 2*RPW independent chains.
        if constexpr (QREG) {
            // warp w: row tile w / WPR, column tiles CPW * (w % WPR) + {0, 1}; only K is loaded
            constexpr int RT = MR / 16, WPR = 8 / RT, CPW = BN / 16 / WPR;
            static_assert(CPW == 2, "two column tiles a warp");
            const int rt = warp / WPR, ct0 = (warp % WPR) * CPW;
            Acc acc[CPW];
#pragma unroll
            for (int c = 0; c < CPW; c++) wmma::fill_fragment(acc[c], 0.f);
#pragma unroll
            for (int kk = 0; kk < D / 16; kk++) {
#pragma unroll
                for (int c = 0; c < CPW; c++) {
                    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> b;
                    wmma::load_matrix_sync(b, sK + (ct0 + c) * 16 * SM::LDK + kk * 16, SM::LDK);
                    wmma::mma_sync(acc[c], qf[kk], b, acc[c]);
                }
            }
            if (SALIAS) __syncthreads(); // S goes into the K/V tile: every warp must be done reading K
#pragma unroll
            for (int c = 0; c < CPW; c++)
                wmma::store_matrix_sync(sS + rt * 16 * SM::LDS + (ct0 + c) * 16, acc[c], SM::LDS, wmma::mem_row_major);
        } else if constexpr (SKS > 1) {
            // split S: warp w computes tile w % TILES over k steps [ks * KSTEP, (ks + 1) * KSTEP) of D
            // into partial buffer ks = w / TILES; two accumulators when the range allows
            constexpr int CT = BN / 16, TILES = (MR / 16) * CT, KSTEP = D / 16 / SKS;
            constexpr int NA = KSTEP >= 2 ? 2 : 1;
            const int tile = warp % TILES, ks = warp / TILES, ct = tile % CT, rt = tile / CT;
            Acc acc[NA];
#pragma unroll
            for (int h = 0; h < NA; h++) wmma::fill_fragment(acc[h], 0.f);
            const half *qa = sQ + rt * 16 * SM::LDQ + ks * KSTEP * 16;
            const half *kbp = sK + ct * 16 * SM::LDK + ks * KSTEP * 16;
#pragma unroll
            for (int kk = 0; kk < KSTEP; kk++) {
                wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> b;
                wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
                wmma::load_matrix_sync(b, kbp + kk * 16, SM::LDK);
                wmma::load_matrix_sync(a, qa + kk * 16, SM::LDQ);
                wmma::mma_sync(acc[kk % NA], a, b, acc[kk % NA]);
            }
            if constexpr (NA == 2) {
#pragma unroll
                for (int e = 0; e < NE; e++) acc[0].x[e] += acc[1].x[e];
            }
            wmma::store_matrix_sync(sS + ks * MR * SM::LDS + rt * 16 * SM::LDS + ct * 16, acc[0], SM::LDS,
                                    wmma::mem_row_major);
        } else {
            constexpr int CT = BN / 16, RT = MR / 16;
            constexpr int RPW = RT * CT >= 8 ? RT * CT / 8 : 1;
            const int ct = warp % CT, rt0 = (warp / CT) * RPW;
            Acc acc[RPW][2];
            if (warp < RT * CT / RPW) {
#pragma unroll
                for (int i = 0; i < RPW; i++) { wmma::fill_fragment(acc[i][0], 0.f); wmma::fill_fragment(acc[i][1], 0.f); }
#pragma unroll 2
                for (int kk = 0; kk < D / 16; kk += 2) {
#pragma unroll
                    for (int hf = 0; hf < 2; hf++) {
                        wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> b;
                        wmma::load_matrix_sync(b, sK + ct * 16 * SM::LDK + (kk + hf) * 16, SM::LDK);
#pragma unroll
                        for (int i = 0; i < RPW; i++) {
                            wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
                            wmma::load_matrix_sync(a, sQ + (rt0 + i) * 16 * SM::LDQ + (kk + hf) * 16, SM::LDQ);
                            wmma::mma_sync(acc[i][hf], a, b, acc[i][hf]);
                        }
                    }
                }
#pragma unroll
                for (int i = 0; i < RPW; i++) {
#pragma unroll
                    for (int e = 0; e < NE; e++) acc[i][0].x[e] += acc[i][1].x[e];
                    if (!SALIAS)
                        wmma::store_matrix_sync(sS + (rt0 + i) * 16 * SM::LDS + ct * 16, acc[i][0], SM::LDS,
                                                wmma::mem_row_major);
                }
            }
            if (SALIAS) { // S goes into the K/V tile: every warp must be done reading K first
                __syncthreads();
                if (warp < RT * CT / RPW) {
#pragma unroll
                    for (int i = 0; i < RPW; i++)
                        wmma::store_matrix_sync(sS + (rt0 + i) * 16 * SM::LDS + ct * 16, acc[i][0], SM::LDS,
                                                wmma::mem_row_major);
                }
            }
        }
        __syncthreads();

        if ((MODE == KV_PIPE || (MODE == KV_PIPE2 && EARLYK)) && next) stage_store<BN, FP8, SM::LDK>(st, sK, p.k_scale);
        if (MODE == KV_PIPE && next) stage_load<BN, FP8, NA>(st, vb, offn);
        if (MODE == KV_SHARED) stage_load<BN, FP8, NA>(st, vb, offc);
        if (MODE == KV_PHASE && !SALIAS) { // K is consumed: V of this tile into the tile, K of the next in flight
            stage_store<BN, FP8, SM::LDK>(st, sV, p.v_scale);
            if (next) stage_load<BN, FP8, NA>(st, kb, offn);
        }

        // a row's softmax ends: the TPR partial sums added, the row's running state updated by its
        // first thread (alpha: how much the O rows shrink, 1 where the maximum did not move)
        auto close_row = [&](int row, int sub, float mold, float mnew, float sum, bool ex2) {
#pragma unroll
            for (int off = TPR / 2; off > 0; off /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, off);
            __syncwarp();
            if (sub == 0) {
                float alpha = ex2 ? ex2_ftz(mold - mnew) : exp2f(mold - mnew);
                sA[row] = alpha;
                sL[row] = sL[row] * alpha + sum;
                sM[row] = mnew;
            }
        };
        // online softmax, TPR threads per row
        if constexpr (LEANSM) {
            // the first row sees keys up to pos_lo; a tile wholly below it and inside the walk
            // needs no mask (uniform across the CTA)
            const int pos_lo = L - qn + (DEC ? g0 / p.group : g0);
            const bool whole = t0 + BN <= kv_hi && t0 + BN - 1 <= pos_lo;
            int row = tid / TPR, sub = tid % TPR;
            float s[CPTH];
            float mx = ATTN_NEG;
            if (whole) {
#pragma unroll
                for (int i = 0; i < CPTH; i++) {
                    float sv = sS[row * SM::LDS + sub + i * TPR];
#pragma unroll
                    for (int k = 1; k < SKS; k++) sv += sS[k * MR * SM::LDS + row * SM::LDS + sub + i * TPR];
                    s[i] = sv;
                    mx = fmaxf(mx, sv);
                }
            } else {
                int pos = sPos[row];
#pragma unroll
                for (int i = 0; i < CPTH; i++) {
                    int c = sub + i * TPR, t = t0 + c;
                    bool ok = t < kv_hi && t <= pos;
                    float sv = sS[row * SM::LDS + c];
#pragma unroll
                    for (int k = 1; k < SKS; k++) sv += sS[k * MR * SM::LDS + row * SM::LDS + c];
                    s[i] = ok ? sv : -INFINITY;
                    mx = fmaxf(mx, s[i]);
                }
            }
#pragma unroll
            for (int off = TPR / 2; off > 0; off /= 2) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
            if (PALIAS) __syncwarp();
            float mold = sM[row];
            // scale > 0: the scaled maximum is the maximum scaled (ATTN_NEG stays far below any score)
            float mnew = fmaxf(mold, mx > ATTN_NEG ? mx * p.scale_log2 : ATTN_NEG);
            float sum = 0.f;
#pragma unroll
            for (int i = 0; i < CPTH; i++) {
                float x = fmaf(s[i], p.scale_log2, -mnew);
                float e = EX2 ? ex2_ftz(x) : exp2f(x);
                sum += e;
                sP[row * SM::LDP + sub + i * TPR] = __float2half(e);
            }
            close_row(row, sub, mold, mnew, sum, EX2);
        } else {
            int row = tid / TPR, sub = tid % TPR;
            int pos = sPos[row];
            float s[CPTH];
            float mx = ATTN_NEG;
#pragma unroll
            for (int i = 0; i < CPTH; i++) {
                int c = sub + i * TPR, t = t0 + c;
                bool ok = t < kv_hi && t <= pos;
                float sv = sS[row * SM::LDS + c];
#pragma unroll
                for (int k = 1; k < SKS; k++) sv += sS[k * MR * SM::LDS + row * SM::LDS + c];
                s[i] = ok ? sv * p.scale_log2 : -INFINITY;
                mx = fmaxf(mx, s[i]);
            }
#pragma unroll
            for (int off = TPR / 2; off > 0; off /= 2) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
            if (PALIAS) __syncwarp(); // P overwrites this row's S: every thread of the row has read its S
            float mold = sM[row];
            float mnew = fmaxf(mold, mx);
            float sum = 0.f;
            float e[CPTH];
#pragma unroll
            for (int i = 0; i < CPTH; i++) {
                e[i] = exp2f(s[i] - mnew);
                sum += e[i];
                sP[row * SM::LDP + sub + i * TPR] = __float2half(e[i]);
            }
            close_row(row, sub, mold, mnew, sum, false);
        }
        if (MODE == KV_SHARED) stage_store<BN, FP8, SM::LDK>(st, sV, p.v_scale);
        if (MODE == KV_PHASE && SALIAS) { // S (in the tile) is consumed: now V, and K of the next tile in flight
            __syncthreads();
            stage_store<BN, FP8, SM::LDK>(st, sV, p.v_scale);
            if (next) stage_load<BN, FP8, NA>(st, kb, offn);
        }
        // rows of tile j + 2 go to buffer j & 1, free once tile j's loads are issued (SHARED
        // issues V of tile j just above: write after the barrier)
        if (MODE != KV_SHARED && tid < BN) sOff[(j & 1) * BN + tid] = nrow;
        __syncthreads();
        if (MODE == KV_SHARED && tid < BN) sOff[(j & 1) * BN + tid] = nrow;

        // O = O * alpha + P V. Warp w owns O tiles (rt, w) and (rt, w + 8) for every row tile:
        // per k step RT + 2 fragment loads feed 2 * RT independent MMAs.
        {
            constexpr int RT = MR / 16;
            // ASKIP: one vote on the tile's alphas (MR <= 32: a lane each); all 1 -> nothing to rescale
            bool rescale = true;
            if constexpr (ASKIP) {
                static_assert(MR <= 32, "a lane per row");
                const int lane = tid % 32;
                rescale = __any_sync(0xffffffffu, lane < MR && sA[lane] != 1.f);
            }
            if (rescale) {
#pragma unroll
                for (int i = 0; i < NOT; i++) {
                    int rt = OCW ? i / OCW : warp / ODT;
#pragma unroll
                    for (int e = 0; e < NE; e++) o[i].x[e] *= sA[rt * 16 + ((rmap4 >> (4 * e)) & 15)];
                }
            }
            if constexpr (OCW == 2) {
#pragma unroll 2
                for (int kk = 0; kk < BN / 16; kk++) {
                    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b0, b1;
                    wmma::load_matrix_sync(b0, sV + kk * 16 * SM::LDK + warp * 16, SM::LDK);
                    wmma::load_matrix_sync(b1, sV + kk * 16 * SM::LDK + (warp + 8) * 16, SM::LDK);
#pragma unroll
                    for (int rt = 0; rt < RT; rt++) {
                        wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
                        wmma::load_matrix_sync(a, sP + rt * 16 * SM::LDP + kk * 16, SM::LDP);
                        wmma::mma_sync(o[2 * rt], a, b0, o[2 * rt]);
                        wmma::mma_sync(o[2 * rt + 1], a, b1, o[2 * rt + 1]);
                    }
                }
            } else if constexpr (OCW == 1) { // D = 128: column tile w of every row tile
#pragma unroll 2
                for (int kk = 0; kk < BN / 16; kk++) {
                    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b0;
                    wmma::load_matrix_sync(b0, sV + kk * 16 * SM::LDK + warp * 16, SM::LDK);
#pragma unroll
                    for (int rt = 0; rt < RT; rt++) {
                        wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
                        wmma::load_matrix_sync(a, sP + rt * 16 * SM::LDP + kk * 16, SM::LDP);
                        wmma::mma_sync(o[rt], a, b0, o[rt]);
                    }
                }
            } else if (o_live) { // D = 64: tile (w / 4, w % 4)
                const int rt = warp / ODT, ct = warp % ODT;
#pragma unroll 2
                for (int kk = 0; kk < BN / 16; kk++) {
                    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> b0;
                    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> a;
                    wmma::load_matrix_sync(b0, sV + kk * 16 * SM::LDK + ct * 16, SM::LDK);
                    wmma::load_matrix_sync(a, sP + rt * 16 * SM::LDP + kk * 16, SM::LDP);
                    wmma::mma_sync(o[0], a, b0, o[0]);
                }
            }
        }
        __syncthreads();
        if (MODE == KV_PIPE && next) stage_store<BN, FP8, SM::LDK>(st, sV, p.v_scale);
        if (MODE == KV_PIPE2 && next) {
            if (!EARLYK) stage_store<BN, FP8, SM::LDK>(st, sK, p.k_scale);
            stage_store<BN, FP8, SM::LDK>(st2, sV, p.v_scale);
        }
        if (MODE == KV_PHASE && next) stage_store<BN, FP8, SM::LDK>(st, sK, p.k_scale);
    }

    // epilogue: O through smem (the K tile), then one row per warp pass
    float *sO = (float *)(smem + SM::K);
    if (MODE == KV_PIPE || MODE == KV_PIPE2 || MODE == KV_PHASE) __syncthreads();
#pragma unroll
    for (int i = 0; i < NOT; i++) {
        if constexpr (OCW) {
            int rt = i / OCW, ct = warp + 8 * (i % OCW);
            wmma::store_matrix_sync(sO + rt * 16 * SM::LDO + ct * 16, o[i], SM::LDO, wmma::mem_row_major);
        } else if (o_live) {
            wmma::store_matrix_sync(sO + warp / ODT * 16 * SM::LDO + warp % ODT * 16, o[i], SM::LDO, wmma::mem_row_major);
        }
    }
    __syncthreads();
    for (int j = warp; j < nrows; j += 8) {
        int g = g0 + j, qi, h;
        if (DEC) { qi = g / p.group; h = kvh * p.group + g % p.group; }
        else { qi = g; h = head0; }
        size_t tokh = (size_t)(qs + qi) * p.H + h;
        const float *orow = sO + j * SM::LDO;
        if (!DEC && !(KVSPLIT && gridDim.y > 1)) {
            float inv = sL[j] > 0.f ? 1.f / sL[j] : 0.f;
            for (int d = tid % 32 * 8; d < D; d += 256) {
                uint4 pk;
                half2 *ph = (half2 *)&pk;
#pragma unroll
                for (int e = 0; e < 4; e++) ph[e] = __floats2half2_rn(orow[d + 2 * e] * inv, orow[d + 2 * e + 1] * inv);
                *(uint4 *)(p.out + tokh * D + d) = pk;
            }
        } else {
            size_t slot = tokh * p.np_max + part;
            float *dst = p.ws_o + slot * D;
            for (int d = tid % 32 * 4; d < D; d += 128)
                *(float4 *)(dst + d) = make_float4(orow[d], orow[d + 1], orow[d + 2], orow[d + 3]);
            if (tid % 32 == 0) { p.ws_m[slot] = sM[j]; p.ws_l[slot] = sL[j]; }
        }
    }
}

// --- host side, shared by the .cu files ------------------------------------------------

int cuda_check_impl(cudaError_t err, const char *file, int line); // 0 or ATTN_ECUDA (prints once)

// fill AttnParams' common part from a kv cache and a batch
struct attn_kv;
struct attn_batch;
void attn_params_init(AttnParams *p, const struct attn_kv *kv, const struct attn_batch *b,
                      const void *q, void *out, float sm_scale);

// raise a kernel's dynamic shared-memory limit once (remembered per kernel); 0 or ATTN_ECUDA
int attn_set_smem(const void *kernel, int bytes);
// dynamic smem per block the launchers may use: attn_set_smem_limit's override, else env
// ATTN_SMEM_LIMIT, else the current device's cudaDevAttrMaxSharedMemoryPerBlockOptin; -1 on error
int attn_smem_budget(void);
// the current device's shared memory per SM (cudaDevAttrMaxSharedMemoryPerMultiprocessor), or the
// override when one is set (so a forced budget also looks like that GPU's occupancy); 0 if unknown
int attn_smem_per_sm(void);

int attn_prefill_launch(int route, const struct attn_kv *kv, const struct attn_batch *b, const void *q,
                        void *out, float sm_scale, void *ws, size_t ws_bytes, int flags, cudaStream_t s);
int attn_decode_launch(int route, const struct attn_kv *kv, const struct attn_batch *b, const void *q,
                       void *out, float sm_scale, void *ws, size_t ws_bytes, cudaStream_t s);
// attn_decode_launch with its main kernel given (kernels/dev/ times other configurations of the
// engine through it): k (nullptr: the library's choice) with smem bytes of dynamic shared memory
// on the route's grid (the scalar route ignores k), then the partitions' reduce: AUTO as the
// library chooses, ROWS the per-(row, head) reduce, COMBINE the quarter-of-d combine, NONE none
// (timing only: out is not written).
typedef void (*attn_kernel_t)(AttnParams);
enum { ATTN_REDUCE_AUTO = 0, ATTN_REDUCE_ROWS, ATTN_REDUCE_COMBINE, ATTN_REDUCE_NONE };
int attn_decode_launch_with(int route, attn_kernel_t k, int smem, int reduce, const struct attn_kv *kv,
                            const struct attn_batch *b, const void *q, void *out, float sm_scale, void *ws,
                            size_t ws_bytes, cudaStream_t s);
size_t attn_prefill_ws_bytes(int route, const struct attn_kv *kv, const struct attn_batch *b);
size_t attn_decode_ws_bytes(int route, const struct attn_kv *kv, const struct attn_batch *b);
