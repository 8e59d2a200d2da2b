/* calib_gpu.cu: calib's GPU timer -- the calib_timer_t of calib.h on a CUDA device.
 *
 * What it runs per job kind (all on the default stream, timed with CUDA events around
 * `iters` back-to-back runs):
 *   attention   this repo's kernels through kernels/attn.h, the route forced; a KV pool
 *               per (dtype, page) of random data, several block tables of distinct random
 *               blocks per job (rotated run to run, so short contexts do not live in L2);
 *               a decode point with q > 1 runs the token-wise expanded batch;
 *   gemm        cublasGemmEx, fp16 in/out, fp32 accumulate, C[m,n] = A[m,k] W[n,k]^T
 *               ("TN", as a linear layer), operands rotated through >= 256 MB of buffers;
 *   gdn         a GDN layer's core, proxy kernels below: causal conv1d (width <= 8) + SiLU
 *               + L2 norm of q and k, then the gated delta rule over 128x128 fp32 states
 *               (per value head, per sequence), chunk-staged, states rotated;
 *   elementwise 2 x (residual add + RMSNorm over hidden) + SiLU-mul over the MLP width;
 *   varlen      the varlen kernel (kernels/attn_varlen.cu) over a mixed batch, its own fp16 KV
 *               pool (any head_dim it takes), block tables and plans rotated like attention's;
 *   moe         cublasGemmGroupedBatchedEx, a group per active expert (m_e = its tokens by
 *               law_moe_counts), each C_e = A_e W_e^T as gemm's; all experts' weights, A and C
 *               rotated through >= 256 MB.
 * Each proxy kernel has a CPU reference (the float64 functions at the bottom) and
 * setup() validates both on a small random case before anything is timed.
 * Ownership: calib_gpu_timer_new() returns a timer the caller ends with t->destroy(t),
 * which frees every device buffer it made. */
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cublas_v2.h>
#include <cublasLt.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* cuBLASLt's tile ids and their shapes, {id, rows, cols}, generated from this toolkit's
 * cublasLt.h at build time (calib/calib.mk) */
static const int lt_tiles[][3] = {
#include "lt_tiles.h"
};

extern "C" {
#include "model.h"
#include "profile.h"
#include "law.h"
}
#include "calib.h"
#include "gpuclock.h"
#include "step_stamp.cuh"          /* step_stamp: span_clock's stamps, the replay's --step-clock ones */
#include "attn.h"

/* sm_70 is the oldest target: the launch gate sleeps with __nanosleep (sm_70's), the attention
 * kernels run WMMA fp16; the proxies use fp16 arithmetic (sm_53) and nothing newer (no bf16, fp8
 * types, cp.async, clusters) */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 700
#error "calib/calib_gpu.cu: calib's kernels need sm_70 or newer (__nanosleep in the launch gate, WMMA fp16); build with CUDA_ARCH=sm_70 or later"
#endif

#define CALIB_STR2(x) #x
#define CALIB_STR(x) CALIB_STR2(x)
#ifdef __CUDA_ARCH_LIST__
#define CALIB_BUILT_FOR "compute capabilities " CALIB_STR(__CUDA_ARCH_LIST__)
#else
#define CALIB_BUILT_FOR "an unknown target"
#endif

#define NROT 64                 /* at most this many block tables per attention job: at least 4,
                                   and enough that their KV is 3x the L2 (an engine's next call
                                   reads another layer's KV, so no call finds its KV in L2) */
#define ELEM_REFRESH 256        /* the elementwise proxy's tensors are refilled after this many runs */
#define ELEM_COLD_L2 3          /* the L2-cold proxy's sets span this many times the L2 (each run's
                                   set was last touched this much traffic ago: not in L2) */
#define ELEM_FLUSH_L2 2         /* the L2 is evicted by writing this many times its size */
#define ROT_BYTES (256ul << 20) /* operands rotate through at least this much memory */



/* ---- errors ---------------------------------------------------------------- */

/* Set where an allocation failed for want of device memory (cudaErrorMemoryAllocation, or a
 * buffer that could not be sized to the free memory): gpu_prepare then gives the other cached
 * buffers back and prepares the point once more. */
static int mem_short;

static int cuda_fail(calib_timer_t *t, cudaError_t e, const char *what, const char *file, int line)
{
    snprintf(t->err, sizeof t->err, "%.60s:%d: %.120s: %.60s", file, line, what, cudaGetErrorString(e));
    if (e == cudaErrorMemoryAllocation)
        mem_short = 1;
    (void)cudaGetLastError(); /* a failed call's error is also the last error: consumed here, so that
                                 the next cudaGetLastError() reports that call's own */
    return -1;
}
#define CK(call)                                                                      \
    do {                                                                              \
        cudaError_t e_ = (call);                                                      \
        if (e_ != cudaSuccess) return cuda_fail(t, e_, #call, __FILE__, __LINE__);    \
    } while (0)
#define CKB(call)                                                                     \
    do {                                                                              \
        cublasStatus_t s_ = (call);                                                   \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                            \
            snprintf(t->err, sizeof t->err, "%s:%d: %.120s: cuBLAS status %d", __FILE__, \
                     __LINE__, #call, (int)s_);                                       \
            return -1;                                                                \
        }                                                                             \
    } while (0)
#define CKA(call)                                                                     \
    do {                                                                              \
        int a_ = (call);                                                              \
        if (a_ != 0) {                                                                \
            snprintf(t->err, sizeof t->err, "%.60s:%d: %.120s: %.60s", __FILE__,       \
                     __LINE__, #call, attn_strerror(a_));                                       \
            return -1;                                                                \
        }                                                                             \
    } while (0)

/* ---- random fills ------------------------------------------------------------ */

__device__ __forceinline__ unsigned long long mix64(unsigned long long x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

__global__ void fill_f32_kernel(float *p, size_t n, float lo, float hi, unsigned long long seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        double u = (double)(mix64(seed * 0x100000001b3ull + i) >> 11) * (1.0 / 9007199254740992.0);
        p[i] = lo + (hi - lo) * (float)u;
    }
}

/* A grow-only device buffer of random fp16 (or fp32) values, handed out in rotating slices.
 * Sized against the device's free memory (calib_rot_plan): where a full rotation does not fit,
 * it holds fewer slices (at least one) and rot_get rotates over those. */
typedef struct {
    void *base;
    size_t cap;      /* bytes */
    int f32;
    unsigned long long seed;
    unsigned gen;    /* allocations so far: a pointer into it taken at generation g is stale past g */
    size_t short_of; /* the largest rotation (bytes) it was sized for with fewer slices: 0 if none */
} rot_t;

static size_t rot_slice(size_t bytes)
{
    return (bytes + 255) & ~(size_t)255;
}

/* The buffer given back (cached state only: its next rot_fit or rot_reserve allocates afresh) */
static void rot_release(rot_t *r)
{
    if (r->base) {
        cudaFree(r->base);
        r->gen++;
    }
    r->base = NULL;
    r->cap = 0;
    r->short_of = 0;
}

/* Room for full bytes as want slices of slice bytes (calib_rot_plan against the free memory) */
static int rot_alloc(calib_timer_t *t, rot_t *r, size_t full, size_t slice, int want)
{
    if (r->cap >= full)
        return 0;
    size_t fr = 0, tot = 0;
    CK(cudaMemGetInfo(&fr, &tot));
    int sets;
    size_t cap = calib_rot_plan(full, slice, want, calib_mem_avail(fr, r->base ? r->cap : 0), &sets);
    if (r->base && r->cap / slice >= (size_t)(sets > 0 ? sets : 1)) {
        /* it holds as many slices as the free memory allows: kept, rotating over fewer */
        if (full > r->short_of)
            r->short_of = full;
        return 0;
    }
    if (!cap) {
        mem_short = 1;
        snprintf(t->err, sizeof t->err, "a rotation of %d slices of %.1f MiB: not one fits the %.1f MiB free "
                 "(less a margin of %.0f MiB)", want, slice / 1048576.0, fr / 1048576.0,
                 CALIB_MEM_MARGIN / 1048576.0);
        return -1;
    }
    rot_release(r);
    r->gen++;
    CK(cudaMalloc(&r->base, cap));
    r->cap = cap;
    r->short_of = sets < want ? full : 0;
    r->seed++;
    if (r->f32) {
        fill_f32_kernel<<<1024, 256>>>((float *)r->base, cap / 4, -0.05f, 0.05f, r->seed);
        CK(cudaGetLastError());
    } else {
        CKA(attn_fill_half_random(r->base, cap / 2, -1.f, 1.f, r->seed));
    }
    CK(cudaDeviceSynchronize());
    return 0;
}

/* A single buffer of at least bytes (with a quarter's headroom where the memory allows) */
static int rot_reserve(calib_timer_t *t, rot_t *r, size_t bytes)
{
    return rot_alloc(t, r, bytes, rot_slice(bytes), 1);
}

/* Slices of `bytes` each: how many a full rotation has, how many r holds (fewer where the device's
 * memory was short), and the i-th one. */
static int rot_sets(size_t bytes)
{
    size_t b = rot_slice(bytes);
    size_t n = (ROT_BYTES + b - 1) / b;
    return n < 1 ? 1 : n > 16 ? 16 : (int)n;
}
static int rot_count(const rot_t *r, size_t bytes)
{
    int n = rot_sets(bytes);
    size_t held = r->cap / rot_slice(bytes);
    if (held < (size_t)n)
        n = held < 1 ? 1 : (int)held;
    return n;
}
static void *rot_get(const rot_t *r, size_t bytes, int i)
{
    return (char *)r->base + (size_t)(i % rot_count(r, bytes)) * rot_slice(bytes);
}
static size_t rot_fit_bytes(size_t bytes)
{
    return rot_slice(bytes) * (size_t)rot_sets(bytes);
}
static int rot_fit(calib_timer_t *t, rot_t *r, size_t bytes)
{
    return rot_alloc(t, r, rot_fit_bytes(bytes), rot_slice(bytes), rot_sets(bytes));
}
/* 1 if rot_fit(r, bytes) has nothing to do: its rotation fits r as it is (or r holds the
 * fewer slices the device's memory allowed for it) */
static int rot_fits(const rot_t *r, size_t bytes)
{
    size_t full = rot_fit_bytes(bytes);
    return r->base && (r->cap >= full || (r->short_of >= full && r->cap >= rot_slice(bytes)));
}

/* ---- GDN proxy kernels ---------------------------------------------------------
 * Layout per token: conv input x[T][C] fp16 with C = 2*Hk*128 + Hv*128 channels
 * (q heads | k heads | v heads); a[T][Hv], b[T][Hv] fp16 gate inputs; sequences by
 * cu[S+1] token offsets; conv state cs[S][C][W-1] fp16 (oldest first); SSM state
 * st[S][Hv][128][128] fp32 (row = key dim, column = value dim). */

#define GDN_D 128
#define GDN_TC 16   /* tokens staged per chunk */

__device__ __forceinline__ int seq_of(const int *cu, int S, int tok)
{
    int s = 0;
    while (s + 1 < S && cu[s + 1] <= tok)
        s++;
    return s;
}

/* grid (T, C/128), block 128: y = silu(causal conv), then q/k heads L2-normalised;
 * the last W-1 inputs of each sequence go to the new conv state csn. */
__global__ void gdn_conv_kernel(const half *x, const half *w, const half *cs, half *csn, half *y,
                                const int *cu, int S, int C, int W, int qk_groups)
{
    int tok = blockIdx.x, c = blockIdx.y * GDN_D + threadIdx.x;
    int s = seq_of(cu, S, tok);
    int start = cu[s], len = cu[s + 1] - start, p = tok - start;
    float acc = 0;
    for (int k = 0; k < W; k++) {
        int pos = p - k;
        float v = pos >= 0 ? __half2float(x[(size_t)(start + pos) * C + c])
                           : __half2float(cs[((size_t)s * C + c) * (W - 1) + (W - 1 + pos)]);
        acc += v * __half2float(w[(size_t)c * W + (W - 1 - k)]);
    }
    float v = acc / (1.f + __expf(-acc));
    if (blockIdx.y < qk_groups) {
        __shared__ float red[4];
        float sq = v * v;
        for (int o = 16; o; o >>= 1)
            sq += __shfl_xor_sync(0xffffffffu, sq, o);
        if ((threadIdx.x & 31) == 0)
            red[threadIdx.x >> 5] = sq;
        __syncthreads();
        v *= rsqrtf(red[0] + red[1] + red[2] + red[3] + 1e-6f);
    }
    y[(size_t)tok * C + c] = __float2half(v);
    if (p >= len - (W - 1))
        csn[((size_t)s * C + c) * (W - 1) + (p - (len - (W - 1)))] = x[(size_t)tok * C + c];
}

/* grid (128/16, Hv, S) -- the sequence slowest, so a long row's CTAs spread over the
 * SMs -- block 128: column j = x*16 + warp*4 + lane/8 of value head h; lane%8 = qr holds
 * rows qr*16 .. qr*16+15 of that column in registers.  Per token:
 * S <- g S; delta = beta (v - S^T k); S <- S + k delta^T; o = S^T q / sqrt(128).
 * Dot products run in 4 partial sums, then 3 shuffles across the 8 lanes of a column. */
/* a dot product's 4 partial sums added, then across the 8 lanes of a column (the column's 128 rows) */
static __device__ __forceinline__ float gdn_lanes8_sum(float p0, float p1, float p2, float p3)
{
    float v = (p0 + p1) + (p2 + p3);
    v += __shfl_xor_sync(0xffffffffu, v, 1);
    v += __shfl_xor_sync(0xffffffffu, v, 2);
    v += __shfl_xor_sync(0xffffffffu, v, 4);
    return v;
}
#define GDN_CB 16   /* columns per CTA */
#define GDN_RP 20   /* padded floats per 16-row group in shared memory (bank-conflict free) */
__global__ void __launch_bounds__(128) gdn_rec_kernel(const half *y, const half *a, const half *b, float *st,
                                                      half *o, const int *cu, int C, int Hk, int Hv)
{
    __shared__ __align__(16) float ks[GDN_TC][8 * GDN_RP], qs[GDN_TC][8 * GDN_RP];
    __shared__ float vs[GDN_TC][GDN_CB], gs[GDN_TC], bs[GDN_TC], os[GDN_TC][GDN_CB];
    int x = blockIdx.x, h = blockIdx.y, s = blockIdx.z, tid = threadIdx.x;
    int lane = tid & 31, warp = tid >> 5, qr = lane & 7, cl = warp * 4 + (lane >> 3);
    int j = x * GDN_CB + cl, hk = h / (Hv / Hk);
    float *S = st + ((size_t)s * Hv + h) * GDN_D * GDN_D;
    float R[16];
#pragma unroll
    for (int i = 0; i < 16; i++)
        R[i] = S[(size_t)(qr * 16 + i) * GDN_D + j];
    const int qoff = hk * GDN_D, koff = Hk * GDN_D + hk * GDN_D, voff = 2 * Hk * GDN_D + h * GDN_D + x * GDN_CB;
    const float oscale = rsqrtf((float)GDN_D);
    for (int c0 = cu[s]; c0 < cu[s + 1]; c0 += GDN_TC) {
        int nt = min(GDN_TC, cu[s + 1] - c0);
        __syncthreads();
        for (int e = tid; e < nt * GDN_D; e += 128) {
            int tt = e / GDN_D, d = e % GDN_D;
            const half *row = y + (size_t)(c0 + tt) * C;
            ks[tt][(d >> 4) * GDN_RP + (d & 15)] = __half2float(row[koff + d]);
            qs[tt][(d >> 4) * GDN_RP + (d & 15)] = __half2float(row[qoff + d]);
        }
        for (int e = tid; e < nt * GDN_CB; e += 128)
            vs[e / GDN_CB][e % GDN_CB] = __half2float(y[(size_t)(c0 + e / GDN_CB) * C + voff + e % GDN_CB]);
        if (tid < nt) {
            float av = __half2float(a[(size_t)(c0 + tid) * Hv + h]);
            float bv = __half2float(b[(size_t)(c0 + tid) * Hv + h]);
            float sp = av > 20.f ? av : log1pf(__expf(av));
            gs[tid] = __expf(-sp);
            bs[tid] = 1.f / (1.f + __expf(-bv));
        }
        __syncthreads();
        for (int tt = 0; tt < nt; tt++) {
            const float4 *k4 = (const float4 *)&ks[tt][qr * GDN_RP];
            const float4 *q4 = (const float4 *)&qs[tt][qr * GDN_RP];
            float4 kk[4], qq[4];
#pragma unroll
            for (int u = 0; u < 4; u++)
                kk[u] = k4[u], qq[u] = q4[u];
            float g = gs[tt], p0 = 0, p1 = 0, p2 = 0, p3 = 0;
#pragma unroll
            for (int u = 0; u < 4; u++) {
                p0 += R[4 * u] * kk[u].x;
                p1 += R[4 * u + 1] * kk[u].y;
                p2 += R[4 * u + 2] * kk[u].z;
                p3 += R[4 * u + 3] * kk[u].w;
            }
            float kS = gdn_lanes8_sum(p0, p1, p2, p3);
            float delta = bs[tt] * (vs[tt][cl] - g * kS);
            p0 = p1 = p2 = p3 = 0;
#pragma unroll
            for (int u = 0; u < 4; u++) {
                R[4 * u] = g * R[4 * u] + kk[u].x * delta;
                R[4 * u + 1] = g * R[4 * u + 1] + kk[u].y * delta;
                R[4 * u + 2] = g * R[4 * u + 2] + kk[u].z * delta;
                R[4 * u + 3] = g * R[4 * u + 3] + kk[u].w * delta;
                p0 += R[4 * u] * qq[u].x;
                p1 += R[4 * u + 1] * qq[u].y;
                p2 += R[4 * u + 2] * qq[u].z;
                p3 += R[4 * u + 3] * qq[u].w;
            }
            float ov = gdn_lanes8_sum(p0, p1, p2, p3);
            if (qr == 0)
                os[tt][cl] = ov * oscale;
        }
        __syncthreads();
        for (int e = tid; e < nt * GDN_CB; e += 128)
            o[((size_t)(c0 + e / GDN_CB) * Hv + h) * GDN_D + x * GDN_CB + e % GDN_CB] =
                __float2half(os[e / GDN_CB][e % GDN_CB]);
    }
#pragma unroll
    for (int i = 0; i < 16; i++)
        S[(size_t)(qr * 16 + i) * GDN_D + j] = R[i];
}

/* ---- elementwise proxy kernels ------------------------------------------------ */

/* one block per token: res += x; y = res * rsqrt(mean(res^2) + eps) * w */
__global__ void rmsnorm_res_kernel(const half2 *x, half2 *res, const half2 *w, half2 *y, int H2)
{
    __shared__ float red[32];
    size_t base = (size_t)blockIdx.x * H2;
    float ss = 0;
    for (int i = threadIdx.x; i < H2; i += blockDim.x) {
        float2 r = __half22float2(res[base + i]), v = __half22float2(x[base + i]);
        r.x += v.x;
        r.y += v.y;
        res[base + i] = __float22half2_rn(r);
        ss += r.x * r.x + r.y * r.y;
    }
    for (int o = 16; o; o >>= 1)
        ss += __shfl_xor_sync(0xffffffffu, ss, o);
    if ((threadIdx.x & 31) == 0)
        red[threadIdx.x >> 5] = ss;
    __syncthreads();
    if (threadIdx.x < 32) {
        float v = threadIdx.x < blockDim.x / 32 ? red[threadIdx.x] : 0;
        for (int o = 16; o; o >>= 1)
            v += __shfl_xor_sync(0xffffffffu, v, o);
        if (threadIdx.x == 0)
            red[0] = v;
    }
    __syncthreads();
    float inv = rsqrtf(red[0] / (2.f * H2) + 1e-6f);
    for (int i = threadIdx.x; i < H2; i += blockDim.x) {
        float2 r = __half22float2(res[base + i]), g = __half22float2(w[i]);
        y[base + i] = __floats2half2_rn(r.x * inv * g.x, r.y * inv * g.y);
    }
}

/* in[T][2I] = gate | up; out[T][I] = silu(gate) * up */
__global__ void silu_mul_kernel(const half2 *in, half2 *out, int I2, size_t n)
{
    for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < n; e += (size_t)gridDim.x * blockDim.x) {
        size_t tok = e / I2, i = e % I2;
        float2 g = __half22float2(in[tok * 2 * I2 + i]), u = __half22float2(in[tok * 2 * I2 + I2 + i]);
        out[e] = __floats2half2_rn(g.x / (1.f + __expf(-g.x)) * u.x, g.y / (1.f + __expf(-g.y)) * u.y);
    }
}

/* spins one thread for `cycles` SM clocks: events around it give the clock */
__global__ void spin_kernel(long long cycles, long long *sink)
{
    long long t0 = clock64(), t1 = t0;
    while (t1 - t0 < cycles)
        t1 = clock64();
    if (threadIdx.x == 0 && t1 == 42)
        *sink = t1;
}

/* ---- the timer ----------------------------------------------------------------- */

typedef struct {
    int fp8, page;
    attn_kv kv;
} pool_t;

/* moe: one prepared grouped GEMM (a slot): its groups, their shapes and their device arrays of
 * operand pointers per rotation set, pointing into the timer's wbuf and cbuf as they were when it
 * was prepared (wgen, cgen) */
typedef struct {
    int ok;                     /* prepared (and the shape below is its job's) */
    long tokens, n, k;
    int experts, topk;
    double skew;
    unsigned wgen, cgen;
    int groups, sets;
    int *m, *gn, *gk, *one;     /* cuBLAS's m, n, k per group (column-major: m = the job's n, n = m_e) */
    cublasOperation_t *ta, *tb;
    float *alpha, *beta;
    void **d_ptr;               /* [sets][3][groups]: A (weights), B (activations), C */
    size_t ptr_cap;
} moe_slot_t;

typedef struct {
    cudaEvent_t e0, e1;
    cublasHandle_t blas;
    cublasLtHandle_t lt;        /* for gemm_choice's heuristic query only */
    cudaDeviceProp prop;
    model_t m;
    model_rank_t r;
    double clock_mhz[2];
    int nclock;
    double bw_gbs, peak_tflops;
    /* attention */
    pool_t pools[8];
    int npools;
    attn_batch *batch[NROT];
    int nrot;                   /* block tables of the current attention job */
    pool_t *cur_pool;
    int route, flags;
    void *ws;
    size_t ws_cap, ws_need;
    rot_t qbuf, obuf;
    int checked[CK__N][2];
    /* gemm, elementwise, gdn */
    rot_t wbuf, abuf, cbuf;     /* GEMM weights and activations (and GDN inputs): only ever read */
    rot_t sbuf;                 /* fp32 states */
    rot_t ebuf;                 /* the elementwise proxy's tensors (it updates its residual in place) */
    long elem_runs;             /* runs of it since ebuf was last filled */
    rot_t ecold;                /* the L2-cold proxy's (job->cold): sets with their own norm weight
                                   (elem_cold_sets: their number and size follow from the job) */
    long ecold_runs;            /* its runs since ecold was last filled */
    void *flush;                /* ELEM_FLUSH_L2 times the L2, written to evict it before cold timings */
    size_t flush_cap;
    half *conv_w, *conv_s, *conv_sn, *norm_w, *gdn_ab;
    int *d_cu;
    int cu_cap;
    int gdn_ok;
    long gdn_tokens;            /* the GDN job d_cu's offsets were made for (0: none yet) */
    int gdn_seqs;
    unsigned iter;
    long long *d_sink;
    gpuclock_t nvml;            /* the SM clock for the sustained-load probes (NVML) */
    stamp_span_t stamps;        /* span_clock's */
    /* varlen: its pool, and a plan per rotated batch (g->batch) */
    attn_kv vl_kv;
    attn_varlen_plan *vl_plan[NROT];
    int vl_checked;
    /* moe: a prepared grouped GEMM per slot (calib_job_t.slot, CALIB_MOE_SLOTS) */
    moe_slot_t moe[CALIB_MOE_SLOTS];
    long gate_late;             /* timings whose launch gate let go by its time limit */
    long gate_late_runs;        /* those of more than one run */
    /* seq_queue / seq_wait (calib.h): a ring of CALIB_SEQ_DEPTH batches, each its events */
    cudaEvent_t *seq_ev;        /* [CALIB_SEQ_DEPTH][SEQ_EVENTS] */
    int seq_head, seq_n;        /* the oldest queued batch's slot; batches queued, not waited for */
    int seq_parts[CALIB_SEQ_DEPTH], seq_layers[CALIB_SEQ_DEPTH];
} gpu_t;

#define SEQ_EVENTS (CALIB_SEQ_LAYERS * CALIB_SEQ_PARTS + 1)   /* a batch's: before it, after each part */

static int gpu_setup(calib_timer_t *t, const model_t *m, const model_rank_t *r);

static double spin_mhz(calib_timer_t *t, gpu_t *g, double *mhz)
{
    const long long cycles = 20000000;
    float ms = 0;
    spin_kernel<<<1, 32>>>(cycles, g->d_sink); /* warm */
    CK(cudaGetLastError());
    CK(cudaEventRecord(g->e0, 0));
    spin_kernel<<<1, 32>>>(cycles, g->d_sink);
    CK(cudaGetLastError());
    CK(cudaEventRecord(g->e1, 0));
    CK(cudaEventSynchronize(g->e1));
    CK(cudaEventElapsedTime(&ms, g->e0, g->e1));
    *mhz = (double)cycles / (ms * 1e-3) / 1e6;
    return 0;
}

/* Blocks of block_bytes a KV pool keeps beyond a job's (512 MiB): the rotated batches' random
 * pages must not find one another's KV in L2 (an engine's next call reads another layer's KV). */
static long pool_extra_blocks(size_t block_bytes)
{
    return (long)(512ul * 1024 * 1024 / block_bytes) + 1;
}

static int pool_for(calib_timer_t *t, gpu_t *g, int fp8, int page, long need_blocks, pool_t **out)
{
    size_t block_bytes = (size_t)page * g->r.kv_heads * g->m.head_dim * (fp8 ? 1 : 2) * 2;
    long extra = pool_extra_blocks(block_bytes);
    long want = need_blocks + (need_blocks / 4 > extra ? need_blocks / 4 : extra);
    pool_t *p = NULL;
    for (int i = 0; i < g->npools; i++)
        if (g->pools[i].fp8 == fp8 && g->pools[i].page == page)
            p = &g->pools[i];
    if (p && p->kv.num_blocks >= need_blocks + extra / 2) {
        *out = p;
        return 0;
    }
    if (!p) {
        if (g->npools == 8) {
            snprintf(t->err, sizeof t->err, "too many KV pools");
            return -1;
        }
        p = &g->pools[g->npools++];
        memset(p, 0, sizeof *p);
        p->fp8 = fp8;
        p->page = page;
    }
    attn_kv_free(&p->kv);
    p->kv.num_blocks = 0;
    size_t fr = 0, tot = 0;
    CK(cudaMemGetInfo(&fr, &tot));
    /* room to grow (half as many again) where the free memory allows it */
    long nb = calib_pool_plan(want, block_bytes, calib_mem_avail(fr, 0));
    if (nb < 1)
        nb = want; /* tried all the same: ENOMEM gives the other pools back below */
    int rc = attn_kv_alloc_random(&p->kv, fp8 ? ATTN_FP8_E5M2 : ATTN_FP16, (int)nb, page, g->r.kv_heads,
                                  g->m.head_dim, 1.0f, 1000u + (unsigned)page * 2 + fp8);
    if (rc == ATTN_ENOMEM) { /* give the other pools back and try once more */
        (void)cudaGetLastError(); /* the failed allocation's error, not the next call's */
        for (int i = 0; i < g->npools; i++)
            if (&g->pools[i] != p)
                attn_kv_free(&g->pools[i].kv), g->pools[i].kv.num_blocks = 0;
        nb = want;
        rc = attn_kv_alloc_random(&p->kv, fp8 ? ATTN_FP8_E5M2 : ATTN_FP16, (int)nb, page, g->r.kv_heads,
                                  g->m.head_dim, 1.0f, 2000u + (unsigned)page * 2 + fp8);
    }
    if (rc) {
        (void)cudaGetLastError();
        snprintf(t->err, sizeof t->err, "KV pool of %ld blocks (page %d, %s): %s", nb, page, fp8 ? "fp8" : "fp16",
                 attn_strerror(rc));
        if (rc == ATTN_ENOMEM)
            mem_short = 1;
        return -1;
    }
    *out = p;
    return 0;
}

static void free_batches(gpu_t *g)
{
    for (int i = 0; i < NROT; i++) {
        attn_batch_free(g->batch[i]);
        g->batch[i] = NULL;
    }
}

static int attn_route_of(calib_kernel_t k)
{
    switch (k) {
    case CK_PREFILL_FAST: return ATTN_PREFILL_FAST;
    case CK_PREFILL_GENERIC: return ATTN_PREFILL_GENERIC;
    case CK_PREFILL_LOWSMEM: return ATTN_PREFILL_LOWSMEM;
    case CK_DECODE_XQA: return ATTN_DECODE_XQA;
    case CK_DECODE_SCALAR: return ATTN_DECODE_SCALAR;
    case CK_FP8_EXPAND: return ATTN_FP8_EXPAND;
    default: return -1;
    }
}

static int prepare_attn(calib_timer_t *t, gpu_t *g, const calib_job_t *j)
{
    free_batches(g);
    g->route = attn_route_of(j->kernel);
    if (g->r.kv_heads <= 0 || g->r.q_heads % g->r.kv_heads ||
        attn_shape_ok(g->route, g->m.head_dim, g->r.q_heads / g->r.kv_heads)) {
        snprintf(t->err, sizeof t->err, "the attention kernels take head_dim 64, 128 or 256 and 1..16 q heads a kv head");
        return 1;
    }
    g->flags = (j->kernel == CK_PREFILL_FAST && j->page != 784) ? ATTN_F_ANY_PAGE : 0;
    long need = 0;
    /* a decode job's requests at contexts spread from ctx_min (law.h; 0: all at seq_len) */
    for (int i = 0; i < j->rows; i++)
        need += (law_varlen_row_ctx(j->rows, j->ctx_min, j->seq_len, i) + j->page - 1) / j->page;
    pool_t *p;
    if (pool_for(t, g, j->fp8, j->page, need, &p) < 0)
        return -1;
    g->cur_pool = p;
    int rows = j->rows, *ql = (int *)malloc(rows * sizeof(int)), *sl = (int *)malloc(rows * sizeof(int));
    if (!ql || !sl) {
        free(ql), free(sl);
        snprintf(t->err, sizeof t->err, "out of memory");
        return -1;
    }
    for (int i = 0; i < rows; i++)
        ql[i] = j->q, sl[i] = (int)law_varlen_row_ctx(rows, j->ctx_min, j->seq_len, i);
    int expand = (j->kernel == CK_DECODE_XQA || j->kernel == CK_DECODE_SCALAR) && j->q > 1;
    /* rotate over enough distinct random pages that the job's KV cannot stay in L2 */
    double kv_bytes = (double)need * j->page * g->r.kv_heads * g->m.head_dim * (j->fp8 ? 1 : 2) * 2;
    double l2 = g->prop.l2CacheSize > 0 ? g->prop.l2CacheSize : 64.0 * 1024 * 1024;
    g->nrot = (int)ceil(3 * l2 / kv_bytes);
    if (g->nrot < 4) g->nrot = 4;
    if (g->nrot > NROT) g->nrot = NROT;
    for (int i = 0; i < g->nrot; i++) {
        attn_batch *b = attn_batch_create(&p->kv, rows, ql, sl, g->r.q_heads, NULL, 0, 77u + 131u * i + g->iter);
        if (b && expand) {
            attn_batch *e = attn_batch_expand(b);
            attn_batch_free(b);
            b = e;
        }
        if (!b) {
            free(ql), free(sl);
            snprintf(t->err, sizeof t->err, "attn_batch_create failed (rows %d, seq_len %ld, pool %d blocks)", rows,
                     j->seq_len, p->kv.num_blocks);
            return -1;
        }
        g->batch[i] = b;
    }
    free(ql), free(sl);
    size_t qbytes = (size_t)g->batch[0]->total_q * g->r.q_heads * g->m.head_dim * 2;
    if (rot_fit(t, &g->qbuf, qbytes) < 0 || rot_reserve(t, &g->obuf, qbytes) < 0)
        return -1;
    g->ws_need = attn_ws_bytes(g->route, &p->kv, g->batch[0]);
    if (g->ws_need > g->ws_cap) {
        if (g->ws)
            CK(cudaFree(g->ws));
        g->ws = NULL;
        g->ws_cap = 0;
        CK(cudaMalloc(&g->ws, g->ws_need + g->ws_need / 4));
        g->ws_cap = g->ws_need + g->ws_need / 4;
    }
    /* the first job of each law: check the kernel against the float64 reference */
    if (!g->checked[j->kernel][j->fp8] && j->kernel != CK_FP8_EXPAND) {
        g->checked[j->kernel][j->fp8] = 1;
        void *q = rot_get(&g->qbuf, qbytes, 0);
        CKA(attn_fill_bytes(g->obuf.base, qbytes, 0xFF));
        int rc = attn_run(g->route, &p->kv, g->batch[0], q, g->obuf.base, 1.f / 16, g->ws, g->ws_cap, g->flags, NULL);
        if (rc == ATTN_EPAGE || rc == ATTN_ESHAPE) {
            snprintf(t->err, sizeof t->err, "%s", attn_strerror(rc));
            return 1;
        }
        CKA(rc);
        CKA(attn_sync());
        double rel = 0;
        long bad = 0;
        CKA(attn_check_output(&p->kv, g->batch[0], q, g->obuf.base, 1.f / 16, 64, 5, &rel, &bad));
        fprintf(stderr, "calib: check %-28s %s vs float64 reference: rel err %.2e, %ld non-finite\n",
                calib_laws(NULL)[j->law].name, attn_route_name(g->route), rel, bad);
        if (bad || !(rel < 2e-2)) /* timed all the same: the kernel is what the engine runs */
            fprintf(stderr, "calib: WARNING: %s fails its reference check (rel err %.3g, %ld non-finite)\n",
                    attn_route_name(g->route), rel, bad);
    }
    return 0;
}

static int prepare_gemm(calib_timer_t *t, gpu_t *g, const calib_job_t *j)
{
    size_t wb = (size_t)j->n * j->k * 2, ab = (size_t)j->m * j->k * 2, cb = (size_t)j->m * j->n * 2;
    if (rot_fit(t, &g->wbuf, wb) < 0 || rot_fit(t, &g->abuf, ab) < 0 || rot_reserve(t, &g->cbuf, cb) < 0)
        return -1;
    return 0;
}

static int run_gemm(calib_timer_t *t, gpu_t *g, const calib_job_t *j, unsigned i)
{
    size_t wb = (size_t)j->n * j->k * 2, ab = (size_t)j->m * j->k * 2;
    const float alpha = 1.f, beta = 0.f;
    CKB(cublasGemmEx(g->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)j->n, (int)j->m, (int)j->k, &alpha,
                     rot_get(&g->wbuf, wb, (int)i), CUDA_R_16F, (int)j->k, rot_get(&g->abuf, ab, (int)i), CUDA_R_16F,
                     (int)j->k, &beta, g->cbuf.base, CUDA_R_16F, (int)j->n, CUBLAS_COMPUTE_32F,
                     CUBLAS_GEMM_DEFAULT));
    return 0;
}

/* The kernel cublasGemmEx runs for a job: cuBLAS (12 and later) picks it by asking
 * cuBLASLt's heuristic for the same problem -- fp16 A, B, C, fp32 compute and scale,
 * C[n x m] = W^T[n x k] A[k x m] in cuBLASLt's column-major terms, at most the handle's
 * default workspace (32 MiB on sm_90: the heuristic call in cuBLASLt's log of a GemmEx
 * carries that limit) -- and runs its first answer.  We ask the same and report that
 * answer's tile (rows along n, columns along m) and split of k.  On the H200 the answer
 * matched the kernel cuBLASLt's log shows GemmEx running at every shape compared
 * (calib/README.md).  1 when the heuristic has no answer or the tile id is not in this
 * toolkit's table. */
static int gpu_gemm_choice(calib_timer_t *t, const calib_job_t *j, double choice[3])
{
    gpu_t *g = (gpu_t *)t->impl;
    if (!g->lt)
        return 1;
    cublasLtMatmulDesc_t d = NULL;
    cublasLtMatrixLayout_t la = NULL, lb = NULL, lc = NULL;
    cublasLtMatmulPreference_t pr = NULL;
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    size_t ws = (size_t)32 << 20, wr = 0;
    cublasLtMatmulHeuristicResult_t res;
    int nres = 0, tile = -1, splits = 1, rc = 1;
    memset(&res, 0, sizeof res);
    if (cublasLtMatmulDescCreate(&d, CUBLAS_COMPUTE_32F, CUDA_R_32F) ||
        cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta) ||
        cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb) ||
        cublasLtMatrixLayoutCreate(&la, CUDA_R_16F, (uint64_t)j->k, (uint64_t)j->n, (int64_t)j->k) ||
        cublasLtMatrixLayoutCreate(&lb, CUDA_R_16F, (uint64_t)j->k, (uint64_t)j->m, (int64_t)j->k) ||
        cublasLtMatrixLayoutCreate(&lc, CUDA_R_16F, (uint64_t)j->n, (uint64_t)j->m, (int64_t)j->n) ||
        cublasLtMatmulPreferenceCreate(&pr) ||
        cublasLtMatmulPreferenceSetAttribute(pr, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws)) {
        snprintf(t->err, sizeof t->err, "cuBLASLt: cannot describe the GEMM");
        rc = -1;
        goto done;
    }
    if (cublasLtMatmulAlgoGetHeuristic(g->lt, d, la, lb, lc, lc, pr, 1, &res, &nres) || nres < 1 ||
        res.state != CUBLAS_STATUS_SUCCESS)
        goto done;
    if (cublasLtMatmulAlgoConfigGetAttribute(&res.algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, &wr) ||
        cublasLtMatmulAlgoConfigGetAttribute(&res.algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splits, sizeof splits, &wr))
        goto done;
    for (size_t i = 0; i < sizeof lt_tiles / sizeof lt_tiles[0]; i++)
        if (lt_tiles[i][0] == tile) {
            choice[0] = lt_tiles[i][1];
            choice[1] = lt_tiles[i][2];
            choice[2] = splits > 1 ? splits : 1;
            rc = 0;
        }
done:
    if (pr) cublasLtMatmulPreferenceDestroy(pr);
    if (lc) cublasLtMatrixLayoutDestroy(lc);
    if (lb) cublasLtMatrixLayoutDestroy(lb);
    if (la) cublasLtMatrixLayoutDestroy(la);
    if (d) cublasLtMatmulDescDestroy(d);
    return rc;
}

/* GDN job buffers: x (conv input) and a/b from abuf, y and o from cbuf, states from sbuf */
static size_t gdn_state_bytes(const gpu_t *g, int seqs)
{
    return (size_t)seqs * g->r.gdn_v_heads * GDN_D * GDN_D * 4;
}

/* the sequences one GDN job may hold (a step's rows: the engine's max_num_seqs, at most
 * an attention call's PROF_MAX_ROWS); conv states are allocated for all of them */
#define GDN_MAX_SEQS PROF_MAX_ROWS

static int gdn_ready(calib_timer_t *t, gpu_t *g)
{
    if (g->m.gdn_head_dim_k != GDN_D || g->m.gdn_head_dim_v != GDN_D || g->m.gdn_conv_kernel < 2 ||
        g->m.gdn_conv_kernel > 8 || g->r.gdn_k_heads < 1 || g->r.gdn_v_heads % g->r.gdn_k_heads ||
        g->r.gdn_conv_dim != (2 * g->r.gdn_k_heads + g->r.gdn_v_heads) * GDN_D) {
        snprintf(t->err, sizeof t->err, "the GDN proxy takes 128-dim heads and conv width 2..8 only");
        return 1;
    }
    return 0;
}

static int prepare_gdn(calib_timer_t *t, gpu_t *g, const calib_job_t *j)
{
    int rc = gdn_ready(t, g);
    if (rc)
        return rc;
    g->gdn_tokens = 0;          /* d_cu's offsets are this job's once the copy below is done */
    int C = g->r.gdn_conv_dim, S = j->seqs, Hv = g->r.gdn_v_heads;
    size_t T = (size_t)j->tokens;
    if (rot_fit(t, &g->abuf, T * C * 2 + 2 * T * Hv * 2) < 0 ||
        rot_reserve(t, &g->cbuf, T * C * 2 + T * Hv * GDN_D * 2) < 0 || rot_fit(t, &g->sbuf, gdn_state_bytes(g, S)) < 0)
        return -1;
    if (S + 1 > g->cu_cap) {
        if (g->d_cu)
            CK(cudaFree(g->d_cu));
        g->d_cu = NULL;
        CK(cudaMalloc(&g->d_cu, (GDN_MAX_SEQS + 1) * sizeof(int)));
        g->cu_cap = GDN_MAX_SEQS + 1;
        if (S > GDN_MAX_SEQS) {
            snprintf(t->err, sizeof t->err, "at most %d sequences", GDN_MAX_SEQS);
            return 1;
        }
    }
    int cu[GDN_MAX_SEQS + 1];
    cu[0] = 0; /* one long row first, then seqs-1 one-token rows */
    cu[1] = (int)(T - (S - 1));
    for (int s = 2; s <= S; s++)
        cu[s] = cu[s - 1] + 1;
    CK(cudaMemcpy(g->d_cu, cu, (S + 1) * sizeof(int), cudaMemcpyHostToDevice));
    g->gdn_tokens = j->tokens;
    g->gdn_seqs = S;
    return 0;
}

static int run_gdn(calib_timer_t *t, gpu_t *g, const calib_job_t *j, unsigned i)
{
    int C = g->r.gdn_conv_dim, W = g->m.gdn_conv_kernel, S = j->seqs, Hv = g->r.gdn_v_heads, Hk = g->r.gdn_k_heads;
    size_t T = (size_t)j->tokens;
    size_t in_bytes = T * C * 2 + 2 * T * Hv * 2;
    const half *x = (const half *)rot_get(&g->abuf, in_bytes, (int)i);
    const half *a = x + T * C, *b = a + T * Hv;
    half *y = (half *)g->cbuf.base, *o = y + T * C;
    float *st = (float *)rot_get(&g->sbuf, gdn_state_bytes(g, S), (int)i);
    gdn_conv_kernel<<<dim3((unsigned)T, C / GDN_D), GDN_D>>>(x, g->conv_w, g->conv_s, g->conv_sn, y, g->d_cu, S, C, W,
                                                             2 * Hk);
    CK(cudaGetLastError());
    gdn_rec_kernel<<<dim3(GDN_D / GDN_CB, Hv, S), 128>>>(y, a, b, st, o, g->d_cu, C, Hk, Hv);
    CK(cudaGetLastError());
    return 0;
}

static int prepare_elem_cold(calib_timer_t *t, gpu_t *g, const calib_job_t *j);

static int prepare_elem(calib_timer_t *t, gpu_t *g, const calib_job_t *j)
{
    size_t T = (size_t)j->tokens, H = g->m.hidden, I = (size_t)g->r.mlp_down_k;
    if (H % 2 || I % 2) {
        snprintf(t->err, sizeof t->err, "odd widths");
        return 1;
    }
    if (j->cold)
        return prepare_elem_cold(t, g, j);
    /* per run: x, res (read + written), y over hidden; gate|up in, out over the MLP width.
     * A buffer of its own: its residual grows run by run (res += x, and x is the last norm), so
     * a tensor it writes must be no other kernel's operand (a GEMM's activations drifting
     * towards a few large values and many zeros draw less power and run faster), and it is
     * refilled with fresh random values every ELEM_REFRESH runs, here, outside any timing. */
    unsigned had = g->ebuf.gen;
    if (rot_fit(t, &g->ebuf, T * (3 * H + 3 * I) * 2) < 0)
        return -1;
    if (g->ebuf.gen != had) {
        g->elem_runs = 0;   /* rot_reserve filled it afresh */
    } else if (g->elem_runs >= ELEM_REFRESH) {
        g->ebuf.seed++;
        CKA(attn_fill_half_random(g->ebuf.base, g->ebuf.cap / 2, -1.f, 1.f, g->ebuf.seed));
        CK(cudaDeviceSynchronize());
        g->elem_runs = 0;
    }
    return 0;
}

/* The L2-cold proxy (j->cold, law elementwise.cold): what a layer's norms and SiLU-mul meet in
 * a step, where the layer's GEMMs (and attention) have just streamed far more than the L2: the
 * residual and the layer's own norm weight come from DRAM.  Every run takes a set of its own
 * tensors and norm weight from a rotation spanning ELEM_COLD_L2 times the L2, so no run finds
 * its set in L2 however many run back to back (calib's batched timings; the replay's runs of a
 * step's layers), and the L2 is evicted here, before the timings (the last fill, or another
 * job's buffers, may hold some sets).  The proxy's input and gate|up tensors are cold too,
 * where an engine's are the preceding GEMM's fresh output: an upper bound by those reads. */
/* The L2-cold proxy's sets for job j: their size (returned) and number (*sets), a function of the
 * job and the card alone, so that jobs of several token counts prepared one after the other each
 * run with their own sets (the buffer only grows: it holds every one prepared) */
static size_t elem_cold_set(const gpu_t *g, const calib_job_t *j, int *sets)
{
    size_t T = (size_t)j->tokens, H = g->m.hidden, I = (size_t)g->r.mlp_down_k;
    double l2 = g->prop.l2CacheSize > 0 ? g->prop.l2CacheSize : 64.0 * 1024 * 1024;
    size_t b = ((T * (3 * H + 3 * I) + H) * 2 + 255) & ~(size_t)255;
    int n = (int)ceil(ELEM_COLD_L2 * l2 / (double)b);
    *sets = n < 1 ? 1 : n;
    return b;
}

static int prepare_elem_cold(calib_timer_t *t, gpu_t *g, const calib_job_t *j)
{
    double l2 = g->prop.l2CacheSize > 0 ? g->prop.l2CacheSize : 64.0 * 1024 * 1024;
    int sets;
    size_t b = elem_cold_set(g, j, &sets);
    unsigned had = g->ecold.gen;
    if (rot_reserve(t, &g->ecold, b * (size_t)sets) < 0)
        return -1;
    if (g->ecold.gen != had) {
        g->ecold_runs = 0;
    } else if (g->ecold_runs >= (long)ELEM_REFRESH * sets) {  /* each set's residual ran ELEM_REFRESH times */
        g->ecold.seed++;
        CKA(attn_fill_half_random(g->ecold.base, g->ecold.cap / 2, -1.f, 1.f, g->ecold.seed));
        g->ecold_runs = 0;
    }
    size_t fl = ((size_t)(ELEM_FLUSH_L2 * l2) + 255) & ~(size_t)255;
    if (g->flush_cap < fl) {
        if (g->flush)
            CK(cudaFree(g->flush));
        g->flush = NULL;
        g->flush_cap = 0;
        CK(cudaMalloc(&g->flush, fl));
        g->flush_cap = fl;
    }
    CK(cudaMemsetAsync(g->flush, (int)(g->ecold.seed & 0x7f), fl, 0));
    CK(cudaDeviceSynchronize());
    return 0;
}

static int run_elem(calib_timer_t *t, gpu_t *g, const calib_job_t *j, unsigned i)
{
    size_t T = (size_t)j->tokens, H = g->m.hidden, I = (size_t)g->r.mlp_down_k;
    half *base, *w = g->norm_w;
    if (j->cold) {
        int sets;
        size_t set = elem_cold_set(g, j, &sets);
        base = (half *)((char *)g->ecold.base + (size_t)(i % (unsigned)sets) * set);
        w = base + T * (3 * H + 3 * I);
        g->ecold_runs++;
    } else {
        base = (half *)rot_get(&g->ebuf, T * (3 * H + 3 * I) * 2, (int)i);
        g->elem_runs++;
    }
    half *x = base, *res = x + T * H, *y = res + T * H, *gu = y + T * H, *out = gu + 2 * T * I;
    int H2 = (int)(H / 2), I2 = (int)(I / 2);
    rmsnorm_res_kernel<<<(unsigned)T, 256>>>((const half2 *)x, (half2 *)res, (const half2 *)w, (half2 *)y, H2);
    CK(cudaGetLastError());
    rmsnorm_res_kernel<<<(unsigned)T, 256>>>((const half2 *)y, (half2 *)res, (const half2 *)w, (half2 *)x, H2);
    CK(cudaGetLastError());
    size_t n = T * I2;
    unsigned blocks = (unsigned)((n + 255) / 256);
    if (blocks > 4 * 1024)
        blocks = 4 * 1024;
    silu_mul_kernel<<<blocks, 256>>>((const half2 *)gu, (half2 *)out, I2, n);
    CK(cudaGetLastError());
    return 0;
}

static void free_plans(gpu_t *g)
{
    for (int i = 0; i < NROT; i++) {
        attn_varlen_plan_free(g->vl_plan[i]);
        g->vl_plan[i] = NULL;
    }
}

static int prepare_varlen(calib_timer_t *t, gpu_t *g, const calib_job_t *j)
{
    free_batches(g);
    free_plans(g);
    int D = g->m.head_dim, rows = j->rows + j->chunks;
    if (attn_varlen_config(D, NULL, NULL, NULL) != 0) {
        snprintf(t->err, sizeof t->err, "the varlen kernel takes head_dim 64, 128 or 256");
        return 1;
    }
    if (rows < 1) {
        snprintf(t->err, sizeof t->err, "an empty batch");
        return -1;
    }
    int *ql = (int *)malloc(rows * sizeof(int)), *sl = (int *)malloc(rows * sizeof(int));
    if (!ql || !sl) {
        free(ql), free(sl);
        snprintf(t->err, sizeof t->err, "out of memory");
        return -1;
    }
    long need = 0;
    for (int i = 0; i < rows; i++) {
        ql[i] = i < j->rows ? 1 : j->q;
        sl[i] = i < j->rows ? (int)law_varlen_row_ctx(j->rows, j->ctx_min, j->seq_len, i) : (int)(j->prefix + j->q);
        need += (sl[i] + j->page - 1) / j->page;
    }
    long extra = pool_extra_blocks((size_t)j->page * g->r.kv_heads * D * 2 * 2);
    if (!g->vl_kv.k || g->vl_kv.page != j->page || g->vl_kv.num_blocks < need + extra / 2) {
        attn_kv_free(&g->vl_kv);
        long nb = need + (need / 2 > extra ? need / 2 : extra) + 64;
        int rc = attn_varlen_kv_alloc(&g->vl_kv, (int)nb, j->page, g->r.kv_heads, D, 4242u + (unsigned)j->page);
        if (rc) {
            free(ql), free(sl);
            snprintf(t->err, sizeof t->err, "varlen KV pool of %ld blocks: %s", nb, attn_strerror(rc));
            return -1;
        }
    }
    double kv_bytes = (double)need * j->page * g->r.kv_heads * D * 2 * 2;
    double l2 = g->prop.l2CacheSize > 0 ? g->prop.l2CacheSize : 64.0 * 1024 * 1024;
    g->nrot = (int)ceil(3 * l2 / kv_bytes);
    if (g->nrot < 4) g->nrot = 4;
    if (g->nrot > NROT) g->nrot = NROT;
    for (int i = 0; i < g->nrot; i++) {
        g->batch[i] = attn_batch_create(&g->vl_kv, rows, ql, sl, g->r.q_heads, NULL, 0, 91u + 131u * i + g->iter);
        g->vl_plan[i] = g->batch[i] ? attn_varlen_plan_create(&g->vl_kv, g->batch[i]) : NULL;
        if (!g->vl_plan[i]) {
            free(ql), free(sl);
            snprintf(t->err, sizeof t->err, "varlen batch or plan (%d rows, pool %d blocks)", rows, g->vl_kv.num_blocks);
            return -1;
        }
    }
    free(ql), free(sl);
    size_t qbytes = (size_t)g->batch[0]->total_q * g->r.q_heads * D * 2;
    if (rot_fit(t, &g->qbuf, qbytes) < 0 || rot_reserve(t, &g->obuf, qbytes) < 0)
        return -1;
    /* the first job: the kernel against the float64 reference */
    if (!g->vl_checked) {
        g->vl_checked = 1;
        void *q = rot_get(&g->qbuf, qbytes, 0);
        float sc = 1.f / sqrtf((float)D);
        CKA(attn_fill_bytes(g->obuf.base, qbytes, 0xFF));
        CKA(attn_varlen_run(g->vl_plan[0], &g->vl_kv, g->batch[0], q, g->obuf.base, sc, NULL));
        CKA(attn_sync());
        double rel = 0;
        long bad = 0;
        CKA(attn_check_output(&g->vl_kv, g->batch[0], q, g->obuf.base, sc, 64, 5, &rel, &bad));
        fprintf(stderr, "calib: check %-28s varlen vs float64 reference: rel err %.2e, %ld non-finite\n",
                calib_laws(NULL)[j->law].name, rel, bad);
        if (bad || !(rel < 2e-2))
            fprintf(stderr, "calib: WARNING: varlen fails its reference check (rel err %.3g, %ld non-finite)\n", rel,
                    bad);
    }
    return 0;
}

static int run_varlen(calib_timer_t *t, gpu_t *g, const calib_job_t *j, unsigned i)
{
    (void)j;
    attn_batch *b = g->batch[i % g->nrot];
    size_t qbytes = (size_t)b->total_q * g->r.q_heads * g->m.head_dim * 2;
    int rc = attn_varlen_run(g->vl_plan[i % g->nrot], &g->vl_kv, b, rot_get(&g->qbuf, qbytes, (int)i), g->obuf.base,
                             1.f / sqrtf((float)g->m.head_dim), NULL);
    if (rc == ATTN_ESHAPE || rc == ATTN_EINVAL) {
        snprintf(t->err, sizeof t->err, "varlen refused the shape: %s", attn_strerror(rc));
        return 1;
    }
    CKA(rc);
    return 0;
}

/* moe: one rotation set = every expert's weights [E][n][k], the active experts' activations
 * [sum m_e][k] and outputs [sum m_e][n], contiguous */
static size_t moe_set_bytes(const calib_job_t *j, size_t *wb, size_t *ab, size_t *cb)
{
    size_t a = (size_t)j->tokens * j->topk;
    *wb = (size_t)j->experts * j->n * j->k * 2;
    *ab = a * j->k * 2;
    *cb = a * j->n * 2;
    return *wb + *ab;
}

/* 1 if slot ms holds job j's grouped GEMM, its pointers into the buffers as they are now */
static int moe_slot_holds(const gpu_t *g, const moe_slot_t *ms, const calib_job_t *j)
{
    return ms->ok && ms->tokens == j->tokens && ms->n == j->n && ms->k == j->k && ms->experts == j->experts
        && ms->topk == j->topk && ms->skew == j->skew && ms->wgen == g->wbuf.gen && ms->cgen == g->cbuf.gen;
}

static moe_slot_t *moe_slot_of(calib_timer_t *t, gpu_t *g, const calib_job_t *j)
{
    if (j->slot < 0 || j->slot >= CALIB_MOE_SLOTS) {
        snprintf(t->err, sizeof t->err, "grouped GEMM slot %d outside 0..%d", j->slot, CALIB_MOE_SLOTS - 1);
        return NULL;
    }
    return &g->moe[j->slot];
}

static void moe_slot_free(moe_slot_t *ms)
{
    free(ms->m);
    free(ms->alpha);
    free(ms->ta);
    cudaFree(ms->d_ptr);
    memset(ms, 0, sizeof *ms);
}

/* Prepare job j's grouped GEMM in its slot (j->slot): the other slots keep theirs (their pointers
 * stay good unless this job's rotation grows wbuf or cbuf: calib_gpu_ready says so) */
static int prepare_moe(calib_timer_t *t, gpu_t *g, const calib_job_t *j)
{
    moe_slot_t *ms = moe_slot_of(t, g, j);
    if (!ms)
        return -1;
    ms->ok = 0;
    long cnt[LAW_MOE_MAX_EXPERTS];
    int active = law_moe_counts(j->tokens, j->experts, j->topk, j->skew, cnt);
    if (active < 1 || j->n > INT32_MAX || j->k > INT32_MAX) {
        snprintf(t->err, sizeof t->err, "no expert gets a token");
        return 1;
    }
    size_t wb, ab, cb, set = moe_set_bytes(j, &wb, &ab, &cb);
    if (rot_fit(t, &g->wbuf, set) < 0 || rot_reserve(t, &g->cbuf, cb) < 0)
        return -1;
    int sets = rot_count(&g->wbuf, set);
    free(ms->m);
    ms->m = (int *)malloc(4 * (size_t)active * sizeof(int));
    free(ms->alpha);
    ms->alpha = (float *)malloc(2 * (size_t)active * sizeof(float));
    free(ms->ta);
    ms->ta = (cublasOperation_t *)malloc(2 * (size_t)active * sizeof(cublasOperation_t));
    if (!ms->m || !ms->alpha || !ms->ta) {
        snprintf(t->err, sizeof t->err, "out of memory");
        return -1;
    }
    ms->tb = ms->ta + active;
    ms->gn = ms->m + active, ms->gk = ms->gn + active, ms->one = ms->gk + active;
    ms->beta = ms->alpha + active;
    void **h = (void **)malloc((size_t)sets * 3 * active * sizeof(void *));
    if (!h) {
        snprintf(t->err, sizeof t->err, "out of memory");
        return -1;
    }
    for (int s = 0; s < sets; s++) {
        char *base = (char *)rot_get(&g->wbuf, set, s);
        size_t off = 0;
        for (int e = 0, gi = 0; e < j->experts; e++) {
            if (cnt[e] <= 0) continue;
            if (s == 0) {
                /* column-major, as gemm's C^T[n x m_e] = W_e^T A_e^T: cuBLAS's m = n, n = m_e */
                ms->m[gi] = (int)j->n;
                ms->gn[gi] = (int)cnt[e];
                ms->gk[gi] = (int)j->k;
                ms->ta[gi] = CUBLAS_OP_T;
                ms->tb[gi] = CUBLAS_OP_N;
                ms->one[gi] = 1;
                ms->alpha[gi] = 1.f;
                ms->beta[gi] = 0.f;
            }
            h[((size_t)s * 3 + 0) * active + gi] = base + (size_t)e * j->n * j->k * 2;
            h[((size_t)s * 3 + 1) * active + gi] = base + wb + off * j->k * 2;
            h[((size_t)s * 3 + 2) * active + gi] = (char *)g->cbuf.base + off * j->n * 2;
            off += (size_t)cnt[e];
            gi++;
        }
    }
    size_t pb = (size_t)sets * 3 * active * sizeof(void *);
    if (pb > ms->ptr_cap) {
        if (ms->d_ptr) {
            cudaError_t fe = cudaFree(ms->d_ptr);
            ms->d_ptr = NULL;
            ms->ptr_cap = 0;
            if (fe != cudaSuccess) { free(h); return cuda_fail(t, fe, "cudaFree", __FILE__, __LINE__); }
        }
        cudaError_t me = cudaMalloc((void **)&ms->d_ptr, pb);
        if (me != cudaSuccess) { free(h); return cuda_fail(t, me, "cudaMalloc", __FILE__, __LINE__); }
        ms->ptr_cap = pb;
    }
    cudaError_t ce = cudaMemcpy(ms->d_ptr, h, pb, cudaMemcpyHostToDevice);
    free(h);
    if (ce != cudaSuccess) return cuda_fail(t, ce, "cudaMemcpy", __FILE__, __LINE__);
    ms->groups = active;
    ms->sets = sets;
    ms->tokens = j->tokens;
    ms->n = j->n;
    ms->k = j->k;
    ms->experts = j->experts;
    ms->topk = j->topk;
    ms->skew = j->skew;
    ms->wgen = g->wbuf.gen;
    ms->cgen = g->cbuf.gen;
    ms->ok = 1;
    return 0;
}

static int run_moe(calib_timer_t *t, gpu_t *g, const calib_job_t *j, unsigned i)
{
    moe_slot_t *ms = moe_slot_of(t, g, j);
    if (!ms)
        return -1;
    if (!moe_slot_holds(g, ms, j)) {   /* its pointers would be another job's, or freed memory */
        snprintf(t->err, sizeof t->err, "grouped GEMM slot %d does not hold this job as the buffers are now:"
                 " prepare it again", j->slot);
        return -1;
    }
    int a = ms->groups;
    void **p = ms->d_ptr + (size_t)(i % ms->sets) * 3 * a;
    cublasStatus_t st = cublasGemmGroupedBatchedEx(
        g->blas, ms->ta, ms->tb, ms->m, ms->gn,
        ms->gk, ms->alpha, (const void *const *)p, CUDA_R_16F, ms->gk, (const void *const *)(p + a), CUDA_R_16F,
        ms->gk, ms->beta, p + 2 * a, CUDA_R_16F, ms->m, a, ms->one, CUBLAS_COMPUTE_32F);
    if (st == CUBLAS_STATUS_NOT_SUPPORTED) {
        /* a library without the grouped GEMM: equal groups (uniform routing) are one batched GEMM */
        int equal = 1;
        for (int e = 1; e < a; e++) equal &= ms->gn[e] == ms->gn[0];
        if (!equal) {
            snprintf(t->err, sizeof t->err, "cublasGemmGroupedBatchedEx not supported here, groups unequal");
            return 1;
        }
        const float alpha = 1.f, beta = 0.f;
        st = cublasGemmBatchedEx(g->blas, CUBLAS_OP_T, CUBLAS_OP_N, ms->m[0], ms->gn[0], ms->gk[0], &alpha,
                                 (const void *const *)p, CUDA_R_16F, ms->gk[0], (const void *const *)(p + a),
                                 CUDA_R_16F, ms->gk[0], &beta, p + 2 * a, CUDA_R_16F, ms->m[0], a,
                                 CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    }
    if (st == CUBLAS_STATUS_INVALID_VALUE || st == CUBLAS_STATUS_NOT_SUPPORTED) {
        snprintf(t->err, sizeof t->err, "cuBLAS grouped/batched GEMM: status %d (fp16, fp32 compute)", (int)st);
        return 1;
    }
    CKB(st);
    return 0;
}

extern "C" int calib_gpu_ready(calib_timer_t *t, const calib_job_t *j)
{
    gpu_t *g = (gpu_t *)t->impl;
    switch (j->kernel) {
    case CK_GEMM:
        return rot_fits(&g->wbuf, (size_t)j->n * j->k * 2) && rot_fits(&g->abuf, (size_t)j->m * j->k * 2)
            && g->cbuf.base && g->cbuf.cap >= (size_t)j->m * j->n * 2;
    case CK_ELEM: {
        size_t T = (size_t)j->tokens, H = g->m.hidden, I = (size_t)g->r.mlp_down_k;
        if (!j->cold) return rot_fits(&g->ebuf, T * (3 * H + 3 * I) * 2);
        int sets;
        size_t b = elem_cold_set(g, j, &sets);
        return g->ecold.base && g->ecold.cap >= b * (size_t)sets;
    }
    case CK_GDN: {
        int C = g->r.gdn_conv_dim, Hv = g->r.gdn_v_heads, S = j->seqs;
        size_t T = (size_t)j->tokens;
        return g->gdn_tokens > 0 && g->gdn_tokens == j->tokens && g->gdn_seqs == S
            && rot_fits(&g->abuf, T * C * 2 + 2 * T * Hv * 2) && g->cbuf.base
            && g->cbuf.cap >= T * C * 2 + T * Hv * GDN_D * 2 && rot_fits(&g->sbuf, gdn_state_bytes(g, S));
    }
    case CK_GEMM_MOE:
        return j->slot >= 0 && j->slot < CALIB_MOE_SLOTS && moe_slot_holds(g, &g->moe[j->slot], j);
    default:
        return 0;
    }
}

/* Every cached buffer a point's prepare (re)allocates given back: the KV pools and their
 * batches, the varlen pool and plans, the operand rotations (their generations move on, so a
 * grouped GEMM slot's pointers into them are stale: calib_gpu_ready), the workspace and the L2
 * flush buffer.  The next prepare of each kind allocates afresh, sized to the free memory. */
static void release_caches(gpu_t *g)
{
    free_batches(g);
    free_plans(g);
    attn_kv_free(&g->vl_kv);
    memset(&g->vl_kv, 0, sizeof g->vl_kv);
    for (int i = 0; i < g->npools; i++) {
        attn_kv_free(&g->pools[i].kv);
        g->pools[i].kv.num_blocks = 0;
    }
    g->cur_pool = NULL;
    rot_t *rs[] = { &g->qbuf, &g->obuf, &g->wbuf, &g->abuf, &g->cbuf, &g->sbuf, &g->ebuf, &g->ecold };
    for (size_t i = 0; i < sizeof rs / sizeof *rs; i++)
        rot_release(rs[i]);
    g->gdn_tokens = 0; /* its offsets stay, its inputs (abuf, cbuf, sbuf) are gone */
    cudaFree(g->ws);
    g->ws = NULL;
    g->ws_cap = 0;
    cudaFree(g->flush);
    g->flush = NULL;
    g->flush_cap = 0;
    cudaDeviceSynchronize();
    (void)cudaGetLastError();
}

static int prepare_kind(calib_timer_t *t, gpu_t *g, const calib_job_t *j)
{
    switch (j->kernel) {
    case CK_GEMM: return prepare_gemm(t, g, j);
    case CK_GDN: return prepare_gdn(t, g, j);
    case CK_ELEM: return prepare_elem(t, g, j);
    case CK_VARLEN: return prepare_varlen(t, g, j);
    case CK_GEMM_MOE: return prepare_moe(t, g, j);
    default: return prepare_attn(t, g, j);
    }
}

/* A point whose buffers did not fit the device's memory beside the other points' cached ones is
 * prepared once more after those are given back (release_caches): on a card with room nothing is
 * given back, and on a smaller one a point fails only where it cannot fit on its own. */
static int gpu_prepare(calib_timer_t *t, const calib_job_t *j)
{
    gpu_t *g = (gpu_t *)t->impl;
    t->err[0] = 0;
    mem_short = 0;
    int rc = prepare_kind(t, g, j);
    if (rc < 0 && mem_short) {
        char first[sizeof t->err];
        snprintf(first, sizeof first, "%s", t->err);
        release_caches(g);
        static int told;
        if (++told <= 8) {
            size_t fr = 0, tot = 0;
            cudaMemGetInfo(&fr, &tot);
            (void)cudaGetLastError();
            fprintf(stderr, "calib: short of device memory beside the other points' cached buffers (%.150s): given"
                    " back (%.1f GiB free), prepared again\n", first, fr / 1073741824.0);
        }
        mem_short = 0;
        t->err[0] = 0;
        rc = prepare_kind(t, g, j);
        if (rc < 0) {
            char again[sizeof t->err];
            snprintf(again, sizeof again, "%s", t->err);
            snprintf(t->err, sizeof t->err, "%.180s (again with the other points' buffers given back; first: %.60s)",
                     again, first);
        }
    }
    return rc;
}

static int run_once(calib_timer_t *t, gpu_t *g, const calib_job_t *j, unsigned i)
{
    switch (j->kernel) {
    case CK_GEMM: return run_gemm(t, g, j, i);
    case CK_GDN: return run_gdn(t, g, j, i);
    case CK_ELEM: return run_elem(t, g, j, i);
    case CK_VARLEN: return run_varlen(t, g, j, i);
    case CK_GEMM_MOE: return run_moe(t, g, j, i);
    default: {
        attn_batch *b = g->batch[i % g->nrot];
        size_t qbytes = (size_t)b->total_q * g->r.q_heads * g->m.head_dim * 2;
        int rc = attn_run(g->route, &g->cur_pool->kv, b, rot_get(&g->qbuf, qbytes, (int)i), g->obuf.base, 1.f / 16,
                          g->ws, g->ws_cap, g->flags, NULL);
        if (rc == ATTN_EPAGE || rc == ATTN_ESHAPE || rc == ATTN_EINVAL || rc == ATTN_EWS) {
            snprintf(t->err, sizeof t->err, "%s refused the shape: %s", attn_route_name(g->route), attn_strerror(rc));
            return 1; /* nothing was launched */
        }
        CKA(rc);
        return 0;
    }
    }
}

/* ---- the launch gate (calib.h) ---- */
static volatile int *gate_host;        /* 0: closed; mapped pinned memory the gate kernel polls */
static int *gate_dev, *gate_late_dev;  /* gate_late: the kernel let go by its time limit */
static volatile int *gate_late_host;

__global__ void gate_kernel(const volatile int *flag, long long max_cycles, volatile int *late)
{
    long long t0 = clock64();
    while (*flag == 0) {
        if (clock64() - t0 > max_cycles) {
            *late = 1;
            return;
        }
        __nanosleep(1000);
    }
}

/* What the last calib_gpu_gate_close that failed ran into */
static char gate_error[160];

static int gate_fail(const char *what, cudaError_t e)
{
    snprintf(gate_error, sizeof gate_error, "%s: %s", what, cudaGetErrorString(e));
    (void)cudaGetLastError();
    return -1;
}

extern "C" const char *calib_gpu_gate_error(void)
{
    return gate_error[0] ? gate_error : "no failure recorded";
}

extern "C" int calib_gpu_gate_close(void)
{
    cudaError_t e;
    /* an error left by an earlier call is not the gate's: consumed before the gate's own calls */
    (void)cudaGetLastError();
    if (!gate_host) {
        void *h = NULL;
        if ((e = cudaHostAlloc(&h, 2 * sizeof(int), cudaHostAllocMapped)) != cudaSuccess)
            return gate_fail("cudaHostAlloc of its mapped flag", e);
        if ((e = cudaHostGetDevicePointer((void **)&gate_dev, h, 0)) != cudaSuccess) {
            cudaFreeHost(h);
            return gate_fail("cudaHostGetDevicePointer of its flag", e);
        }
        gate_host = (volatile int *)h;
        gate_late_host = gate_host + 1;
        gate_late_dev = gate_dev + 1;
    }
    int dev = 0, khz = 0;
    cudaGetDevice(&dev);
    if (cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, dev) != cudaSuccess || khz <= 0) khz = 2000000;
    (void)cudaGetLastError();
    *gate_host = 0;
    *gate_late_host = 0;        /* not the last gate's answer, should this one not have started */
    __sync_synchronize();
    gate_kernel<<<1, 1>>>(gate_dev, (long long)(CALIB_GATE_MAX_S * khz * 1e3), gate_late_dev);
    if ((e = cudaGetLastError()) != cudaSuccess)
        return gate_fail("the gate kernel's launch", e);
    return 0;
}

extern "C" int calib_gpu_gate_open(void)
{
    if (!gate_host) return 0;
    __sync_synchronize();
    *gate_host = 1;
    __sync_synchronize();
    return *gate_late_host != 0;
}

static int gpu_run(calib_timer_t *t, const calib_job_t *j, int iters, double *sec)
{
    gpu_t *g = (gpu_t *)t->impl;
    float ms = 0;
    if (calib_gpu_gate_close() < 0) {
        snprintf(t->err, sizeof t->err, "%.60s:%d: the launch gate: %.180s", __FILE__, __LINE__, calib_gpu_gate_error());
        return -1;
    }
    CK(cudaEventRecord(g->e0, 0));
    for (int k = 0; k < iters; k++) {
        int rc = run_once(t, g, j, g->iter++);
        if (rc != 0) {
            calib_gpu_gate_open();
            cudaEventSynchronize(g->e0);
            return rc;
        }
        if (k + 1 == CALIB_GATE_MAX_CALLS) calib_gpu_gate_open();
    }
    CK(cudaEventRecord(g->e1, 0));
    int late = calib_gpu_gate_open();
    CK(cudaEventSynchronize(g->e1));
    /* a single run may be a first call (cuBLAS waits on the GPU for a new shape): counted; a
     * timing of several runs that the host could not queue in time is named */
    if (late) g->gate_late++;
    if (late && iters > 1 && ++g->gate_late_runs <= 8)
        fprintf(stderr, "calib: the launch gate let go by its %g s limit on %d runs of kernel %d (m %ld n %ld k %ld,"
                " tokens %ld, seqs %d): that timing includes the host's launch rate\n", CALIB_GATE_MAX_S, iters,
                (int)j->kernel, j->m, j->n, j->k, j->tokens, j->seqs);
    CK(cudaGetLastError());
    CK(cudaEventElapsedTime(&ms, g->e0, g->e1));
    *sec = ms * 1e-3 / iters;
    return 0;
}

extern "C" int calib_gpu_launch(calib_timer_t *t, const calib_job_t *j, int iters, long *queued)
{
    gpu_t *g = (gpu_t *)t->impl;
    for (int k = 0; k < iters; k++) {
        int rc = run_once(t, g, j, g->iter++);
        if (rc != 0) return rc;
        if (++*queued == CALIB_GATE_MAX_CALLS) calib_gpu_gate_open();
    }
    return 0;
}

/* ---- sequences back to back (calib.h: seq_queue, seq_wait; calib/sustain.h 7.) ----
 * A batch is queued on the default stream with an event before it and one after each part, and
 * the host returns without waiting: with the next batch queued before the host waits for this
 * one (CALIB_SEQ_DEPTH deep), the card runs batch after batch while the host reads the clock
 * and the power, and no host work sits between the parts (gpu_run waits for the card after
 * each call, and the sustained-load probes read NVML between calls: at layer scale the card
 * idled between the parts).  No launch gate: the host queues a batch of ~20 ms in far less
 * than the batch ahead of it takes to run. */
static int gpu_seq_queue(calib_timer_t *t, const calib_job_t *const *jobs, const int *iters, int nparts, int nlayers)
{
    gpu_t *g = (gpu_t *)t->impl;
    if (nparts < 1 || nparts > CALIB_SEQ_PARTS || nlayers < 1 || nlayers > CALIB_SEQ_LAYERS
        || g->seq_n >= CALIB_SEQ_DEPTH) {
        snprintf(t->err, sizeof t->err, "seq_queue: %d parts, %d layers, %d batches queued (at most %d, %d, %d)",
                 nparts, nlayers, g->seq_n, CALIB_SEQ_PARTS, CALIB_SEQ_LAYERS, CALIB_SEQ_DEPTH - 1);
        return -1;
    }
    if (!g->seq_ev) {
        g->seq_ev = (cudaEvent_t *)calloc((size_t)CALIB_SEQ_DEPTH * SEQ_EVENTS, sizeof *g->seq_ev);
        if (!g->seq_ev) {
            snprintf(t->err, sizeof t->err, "out of memory");
            return -1;
        }
        for (int i = 0; i < CALIB_SEQ_DEPTH * SEQ_EVENTS; i++)
            CK(cudaEventCreate(&g->seq_ev[i]));
    }
    int slot = (g->seq_head + g->seq_n) % CALIB_SEQ_DEPTH, e = 0;
    cudaEvent_t *ev = g->seq_ev + (size_t)slot * SEQ_EVENTS;
    CK(cudaEventRecord(ev[e++], 0));
    for (int l = 0; l < nlayers; l++)
        for (int p = 0; p < nparts; p++) {
            for (int k = 0; k < iters[p]; k++)
                if (run_once(t, g, jobs[p], g->iter++) != 0) {
                    cudaDeviceSynchronize();
                    return -1;   /* err says why (a refused shape: it ran before, so an error here) */
                }
            CK(cudaEventRecord(ev[e++], 0));
        }
    g->seq_parts[slot] = nparts;
    g->seq_layers[slot] = nlayers;
    g->seq_n++;
    return 0;
}

static int gpu_seq_wait(calib_timer_t *t, double part_s[])
{
    gpu_t *g = (gpu_t *)t->impl;
    if (g->seq_n < 1) {
        snprintf(t->err, sizeof t->err, "seq_wait: no batch queued");
        return -1;
    }
    int slot = g->seq_head, np = g->seq_parts[slot], n = np * g->seq_layers[slot];
    cudaEvent_t *ev = g->seq_ev + (size_t)slot * SEQ_EVENTS;
    g->seq_head = (slot + 1) % CALIB_SEQ_DEPTH;
    g->seq_n--;
    CK(cudaEventSynchronize(ev[n]));
    CK(cudaGetLastError());
    for (int p = 0; p < np; p++) part_s[p] = 0;
    for (int i = 0; i < n; i++) {
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, ev[i], ev[i + 1]));
        part_s[i % np] += ms * 1e-3;
    }
    return 0;
}

static double gpu_wall(calib_timer_t *t)
{
    (void)t;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void read_driver(char *buf, size_t n)
{
    FILE *f = fopen("/proc/driver/nvidia/version", "r");
    char line[512];
    buf[0] = 0;
    if (f) {
        if (fgets(line, sizeof line, f)) {
            /* "NVRM version: NVIDIA UNIX [Open ]Kernel Module [for x86_64]  580.159.04  ...":
             * the first token after "Module" that starts with a digit */
            char *p = strstr(line, "Module");
            for (p = p ? p + 6 : NULL; p && *p; p += strcspn(p, " \t")) {
                p += strspn(p, " \t");
                if (*p >= '0' && *p <= '9') {
                    snprintf(buf, n, "%.*s", (int)strcspn(p, " \t\n"), p);
                    break;
                }
            }
        }
        fclose(f);
    }
    if (!buf[0]) {
        int v = 0;
        cudaDriverGetVersion(&v);
        snprintf(buf, n, "CUDA driver API %d.%d", v / 1000, (v % 1000) / 10);
    }
}

static void gpu_describe(calib_timer_t *t, profile_t *p)
{
    gpu_t *g = (gpu_t *)t->impl;
    double mhz = 0;
    if (spin_mhz(t, g, &mhz) == 0 && g->nclock < 2)
        g->clock_mhz[g->nclock++] = mhz;
    snprintf(p->gpu, sizeof p->gpu, "%.95s", g->prop.name);
    p->sms = g->prop.multiProcessorCount;
    int occ = attn_fast_ctas_per_sm_hd(g->m.head_dim); /* the fast prefill kernel's CTAs an SM: its split rule takes it */
    p->split_ctas_per_sm = occ > 0 ? occ : 0;
    p->mem_gib = (double)g->prop.totalGlobalMem / (1024.0 * 1024 * 1024);
    p->mem_bw_gbs = g->bw_gbs;
    p->peak_fp16_tflops = g->peak_tflops;
    double s = 0;
    for (int i = 0; i < g->nclock; i++)
        s += g->clock_mhz[i];
    p->sm_clock_mhz = g->nclock ? s / g->nclock : 0;
    int rt = 0, bl = 0;
    cudaRuntimeGetVersion(&rt);
    cublasGetVersion(g->blas, &bl);
    snprintf(p->toolkit, sizeof p->toolkit, "CUDA %d.%d, cuBLAS %d.%d.%d", rt / 1000, (rt % 1000) / 10, bl / 10000,
             (bl / 100) % 100, bl % 100);
    read_driver(p->driver, sizeof p->driver);
    fprintf(stderr, "calib: SM clock seen %.0f MHz at the start, %.0f MHz at the end; copy %.0f GB/s; fp16 GEMM %.0f TFLOP/s\n",
            g->clock_mhz[0], g->nclock > 1 ? g->clock_mhz[1] : 0, g->bw_gbs, g->peak_tflops);
}

/* calib's settle: nothing queued, the host asleep */
static void gpu_idle(calib_timer_t *t, double seconds)
{
    (void)t;
    cudaDeviceSynchronize();
    if (!(seconds > 0))
        return;
    struct timespec ts;
    ts.tv_sec = (time_t)seconds;
    ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static int gpu_clock(calib_timer_t *t, double *mhz)
{
    return gpuclock_read(&((gpu_t *)t->impl)->nvml, mhz, NULL, NULL);
}

/* span_clock (calib.h): one one-thread block an SM stamps its cycle counter and the GPU's
 * timer behind what is queued, at the span's start and end (sim/step_stamp.cuh); the end waits
 * for the stamps and gives the span's mean clock over the SMs stamped at both ends */
static int gpu_span_clock(calib_timer_t *t, int end, double *mhz)
{
    gpu_t *g = (gpu_t *)t->impl;
    cudaError_t e = stamp_span_mark(&g->stamps, end);
    if (e == cudaSuccess && end) e = stamp_span_mhz(&g->stamps, mhz);
    if (e != cudaSuccess) {
        cudaGetLastError();
        snprintf(t->err, sizeof t->err, "span clock: %s", cudaGetErrorString(e));
        return -1;
    }
    return !end || isfinite(*mhz) ? 0 : -1;
}

static int gpu_power(calib_timer_t *t, double *watts)
{
    const gpuclock_t *g = &((gpu_t *)t->impl)->nvml;
    return g->lib ? gpuclock_power(g, watts) : -1;
}

static void gpu_destroy(calib_timer_t *t)
{
    if (!t)
        return;
    gpu_t *g = (gpu_t *)t->impl;
    if (g) {
        if (g->gate_late_runs)
            fprintf(stderr, "calib: %ld timings of several runs (of %ld timings whose launch gate let go by its time"
                    " limit) include the host's launch rate\n", g->gate_late_runs, g->gate_late);
        if (g->seq_ev) {
            cudaDeviceSynchronize();
            for (int i = 0; i < CALIB_SEQ_DEPTH * SEQ_EVENTS; i++)
                if (g->seq_ev[i]) cudaEventDestroy(g->seq_ev[i]);
            free(g->seq_ev);
        }
        free_batches(g);
        free_plans(g);
        attn_kv_free(&g->vl_kv);
        for (int i = 0; i < CALIB_MOE_SLOTS; i++)
            moe_slot_free(&g->moe[i]);
        for (int i = 0; i < g->npools; i++)
            attn_kv_free(&g->pools[i].kv);
        rot_t *rs[] = { &g->qbuf, &g->obuf, &g->wbuf, &g->abuf, &g->cbuf, &g->sbuf, &g->ebuf, &g->ecold };
        for (size_t i = 0; i < sizeof rs / sizeof *rs; i++)
            cudaFree(rs[i]->base);
        cudaFree(g->ws);
        cudaFree(g->conv_w);
        cudaFree(g->conv_s);
        cudaFree(g->conv_sn);
        cudaFree(g->norm_w);
        cudaFree(g->d_cu);
        cudaFree(g->d_sink);
        cudaFree(g->flush);
        gpuclock_close(&g->nvml);
        stamp_span_free(&g->stamps);
        if (g->blas)
            cublasDestroy(g->blas);
        if (g->lt)
            cublasLtDestroy(g->lt);
        cudaEventDestroy(g->e0);
        cudaEventDestroy(g->e1);
        free(g);
    }
    free(t);
}

extern "C" calib_timer_t *calib_gpu_timer_new(char err[256])
{
    if (!attn_gpu_available()) {
        int n = 0;
        cudaError_t e = cudaGetDeviceCount(&n);   /* why: no GPU, or a driver older than this runtime */
        int rt = 0, drv = 0;
        cudaRuntimeGetVersion(&rt);
        cudaDriverGetVersion(&drv);
        snprintf(err, 256, "no usable CUDA device (%s; runtime %d.%d, driver's CUDA %d.%d)",
                 e != cudaSuccess ? cudaGetErrorString(e) : "none found", rt / 1000, rt % 1000 / 10, drv / 1000,
                 drv % 1000 / 10);
        cudaGetLastError();
        return NULL;
    }
    calib_timer_t *t = (calib_timer_t *)calloc(1, sizeof *t);
    gpu_t *g = (gpu_t *)calloc(1, sizeof *g);
    if (!t || !g) {
        free(t), free(g);
        snprintf(err, 256, "out of memory");
        return NULL;
    }
    t->impl = g;
    t->name = "cuda";
    t->setup = gpu_setup;
    t->prepare = gpu_prepare;
    t->run = gpu_run;
    t->describe = gpu_describe;
    t->gemm_choice = gpu_gemm_choice;
    t->idle = gpu_idle;
    t->clock = gpu_clock;
    t->span_clock = gpu_span_clock;
    t->power = gpu_power;
    t->wall = gpu_wall;
    t->seq_queue = gpu_seq_queue;
    t->seq_wait = gpu_seq_wait;
    t->destroy = gpu_destroy;
    g->sbuf.f32 = 1;
    cudaError_t e;
    if ((e = cudaSetDevice(0)) != cudaSuccess || (e = cudaGetDeviceProperties(&g->prop, 0)) != cudaSuccess ||
        (e = cudaEventCreate(&g->e0)) != cudaSuccess || (e = cudaEventCreate(&g->e1)) != cudaSuccess ||
        (e = cudaMalloc(&g->d_sink, 8)) != cudaSuccess) {
        snprintf(err, 256, "CUDA: %s", cudaGetErrorString(e));
        gpu_destroy(t);
        return NULL;
    }
    /* a GPU older than sm_70, or one this binary carries no code for, is named, not met by a
     * kernel launch that fails later */
    cudaFuncAttributes fa;
    if (g->prop.major < 7) {
        snprintf(err, 256, "%s is sm_%d%d: calib and the replay need sm_70 or newer (WMMA fp16, __nanosleep)",
                 g->prop.name, g->prop.major, g->prop.minor);
        gpu_destroy(t);
        return NULL;
    }
    if ((e = cudaFuncGetAttributes(&fa, spin_kernel)) != cudaSuccess) {
        snprintf(err, 256, "%s (sm_%d%d): this binary has no code it can run (built for %s): %s; rebuild with "
                 "CUDA_ARCH=sm_%d%d", g->prop.name, g->prop.major, g->prop.minor, CALIB_BUILT_FOR,
                 cudaGetErrorString(e), g->prop.major, g->prop.minor);
        gpu_destroy(t);
        return NULL;
    }
    gpuclock_open(&g->nvml, 0); /* no NVML: no clock readings, the probes are skipped */
    if (cublasCreate(&g->blas) != CUBLAS_STATUS_SUCCESS) {
        snprintf(err, 256, "cublasCreate failed");
        g->blas = NULL;
        gpu_destroy(t);
        return NULL;
    }
    if (cublasLtCreate(&g->lt) != CUBLAS_STATUS_SUCCESS)
        g->lt = NULL; /* the GEMM points then record no kernel choice (0s) */
    return t;
}

/* ---- CPU references of the proxies, and setup ------------------------------------ */

static float h2f(half h) { return __half2float(h); }

/* float64 reference of the GDN core for one small case; returns max |o - ref| / max|ref| */
static int check_gdn(calib_timer_t *t, gpu_t *g, double *rel_out)
{
    int C = g->r.gdn_conv_dim, W = g->m.gdn_conv_kernel, Hv = g->r.gdn_v_heads, Hk = g->r.gdn_k_heads;
    const int S = 2, lens[2] = { 37, 1 };
    int T = lens[0] + lens[1];
    calib_job_t j;
    memset(&j, 0, sizeof j);
    j.kernel = CK_GDN;
    j.seqs = S;
    j.tokens = T;
    int rc = prepare_gdn(t, g, &j);
    if (rc)
        return rc;
    unsigned it = 3;
    size_t in_bytes = (size_t)T * C * 2 + 2 * (size_t)T * Hv * 2;
    size_t sbytes = gdn_state_bytes(g, S);
    const half *dx = (const half *)rot_get(&g->abuf, in_bytes, (int)it);
    const float *dst = (const float *)rot_get(&g->sbuf, sbytes, (int)it);
    size_t nin = in_bytes / 2, ns = sbytes / 4, no = (size_t)T * Hv * GDN_D;
    half *hx = (half *)malloc(nin * 2), *hw = (half *)malloc((size_t)C * W * 2), *hcs = (half *)malloc((size_t)S * C * (W - 1) * 2);
    half *ho = (half *)malloc(no * 2);
    float *hs = (float *)malloc(ns * 4);
    double *y = (double *)malloc((size_t)T * C * sizeof(double)), *Sm = (double *)malloc(GDN_D * GDN_D * sizeof(double));
    int ret = -1;
    if (!hx || !hw || !hcs || !ho || !hs || !y || !Sm) {
        snprintf(t->err, sizeof t->err, "out of memory");
        goto done;
    }
    if (cudaMemcpy(hx, dx, nin * 2, cudaMemcpyDeviceToHost) != cudaSuccess ||
        cudaMemcpy(hw, g->conv_w, (size_t)C * W * 2, cudaMemcpyDeviceToHost) != cudaSuccess ||
        cudaMemcpy(hcs, g->conv_s, (size_t)S * C * (W - 1) * 2, cudaMemcpyDeviceToHost) != cudaSuccess ||
        cudaMemcpy(hs, dst, ns * 4, cudaMemcpyDeviceToHost) != cudaSuccess) {
        snprintf(t->err, sizeof t->err, "copy back failed");
        goto done;
    }
    if (run_gdn(t, g, &j, it) < 0 || cudaDeviceSynchronize() != cudaSuccess)
        goto done;
    if (cudaMemcpy(ho, (half *)g->cbuf.base + (size_t)T * C, no * 2, cudaMemcpyDeviceToHost) != cudaSuccess) {
        snprintf(t->err, sizeof t->err, "copy back failed");
        goto done;
    }
    {
        const half *a = hx + (size_t)T * C, *b = a + (size_t)T * Hv;
        int cu[3] = { 0, lens[0], T };
        for (int s = 0; s < S; s++)
            for (int p = 0; p < cu[s + 1] - cu[s]; p++) {
                int tok = cu[s] + p;
                for (int c = 0; c < C; c++) {
                    double acc = 0;
                    for (int k = 0; k < W; k++) {
                        int pos = p - k;
                        double v = pos >= 0 ? h2f(hx[(size_t)(cu[s] + pos) * C + c])
                                            : h2f(hcs[((size_t)s * C + c) * (W - 1) + (W - 1 + pos)]);
                        acc += v * h2f(hw[(size_t)c * W + (W - 1 - k)]);
                    }
                    y[(size_t)tok * C + c] = acc / (1 + exp(-acc));
                }
                for (int grp = 0; grp < 2 * Hk; grp++) {
                    double ss = 0;
                    for (int d = 0; d < GDN_D; d++)
                        ss += y[(size_t)tok * C + grp * GDN_D + d] * y[(size_t)tok * C + grp * GDN_D + d];
                    for (int d = 0; d < GDN_D; d++)
                        y[(size_t)tok * C + grp * GDN_D + d] /= sqrt(ss + 1e-6);
                }
            }
        double num = 0, den = 0;
        for (int s = 0; s < S; s++)
            for (int h = 0; h < Hv; h++) {
                int hk = h / (Hv / Hk);
                for (int i = 0; i < GDN_D * GDN_D; i++)
                    Sm[i] = hs[((size_t)s * Hv + h) * GDN_D * GDN_D + i];
                for (int tok = cu[s]; tok < cu[s + 1]; tok++) {
                    const double *yq = y + (size_t)tok * C + hk * GDN_D, *yk = y + (size_t)tok * C + (Hk + hk) * GDN_D;
                    const double *yv = y + (size_t)tok * C + (2 * Hk + h) * GDN_D;
                    double av = h2f(a[(size_t)tok * Hv + h]), bv = h2f(b[(size_t)tok * Hv + h]);
                    double gg = exp(-log1p(exp(av))), beta = 1 / (1 + exp(-bv));
                    for (int jj = 0; jj < GDN_D; jj++) {
                        double kS = 0;
                        for (int r = 0; r < GDN_D; r++)
                            kS += Sm[r * GDN_D + jj] * yk[r];
                        double delta = beta * (yv[jj] - gg * kS), ov = 0;
                        for (int r = 0; r < GDN_D; r++) {
                            Sm[r * GDN_D + jj] = gg * Sm[r * GDN_D + jj] + yk[r] * delta;
                            ov += Sm[r * GDN_D + jj] * yq[r];
                        }
                        ov /= sqrt((double)GDN_D);
                        double got = h2f(ho[((size_t)tok * Hv + h) * GDN_D + jj]);
                        num += (got - ov) * (got - ov);
                        den += ov * ov;
                    }
                }
            }
        *rel_out = den > 0 ? sqrt(num / den) : INFINITY;
        ret = 0;
    }
done:
    free(hx), free(hw), free(hcs), free(ho), free(hs), free(y), free(Sm);
    return ret;
}

static int check_elem(calib_timer_t *t, gpu_t *g, double *rel_out)
{
    calib_job_t j;
    memset(&j, 0, sizeof j);
    j.kernel = CK_ELEM;
    j.tokens = 3;
    int rc = prepare_elem(t, g, &j);
    if (rc)
        return rc;
    size_t T = 3, H = g->m.hidden, I = (size_t)g->r.mlp_down_k, n = T * (3 * H + 3 * I);
    unsigned it = 1;
    half *d = (half *)rot_get(&g->ebuf, n * 2, (int)it);
    half *h0 = (half *)malloc(n * 2), *h1 = (half *)malloc(n * 2), *hw = (half *)malloc(H * 2);
    int ret = -1;
    if (!h0 || !h1 || !hw)
        goto done;
    if (cudaMemcpy(h0, d, n * 2, cudaMemcpyDeviceToHost) != cudaSuccess ||
        cudaMemcpy(hw, g->norm_w, H * 2, cudaMemcpyDeviceToHost) != cudaSuccess || run_elem(t, g, &j, it) < 0 ||
        cudaMemcpy(h1, d, n * 2, cudaMemcpyDeviceToHost) != cudaSuccess) {
        snprintf(t->err, sizeof t->err, "elementwise check: CUDA failure");
        goto done;
    }
    {
        double num = 0, den = 0;
        const half *x = h0, *res = x + T * H, *gu = res + 2 * T * H;
        const half *ox = h1, *ores = ox + T * H, *oy = ores + T * H, *oout = h1 + T * (3 * H + 2 * I);
        for (size_t tk = 0; tk < T; tk++) {
            /* pass 1: r1 = res + x, y = norm(r1); pass 2: r2 = r1 + y, x' = norm(r2); compare y, x', r2 */
            double *r1 = (double *)malloc(H * sizeof(double)), ss = 0, ss2 = 0;
            if (!r1)
                goto done;
            for (size_t i = 0; i < H; i++) {
                r1[i] = (double)h2f(__float2half((float)(h2f(res[tk * H + i]) + h2f(x[tk * H + i]))));
                ss += r1[i] * r1[i];
            }
            double inv = 1 / sqrt(ss / H + 1e-6);
            for (size_t i = 0; i < H; i++) {
                double yv = r1[i] * inv * h2f(hw[i]);
                num += (h2f(oy[tk * H + i]) - yv) * (h2f(oy[tk * H + i]) - yv);
                den += yv * yv;
                r1[i] = (double)h2f(__float2half((float)(r1[i] + h2f(oy[tk * H + i]))));
                ss2 += r1[i] * r1[i];
            }
            double inv2 = 1 / sqrt(ss2 / H + 1e-6);
            for (size_t i = 0; i < H; i++) {
                double xv = r1[i] * inv2 * h2f(hw[i]);
                num += (h2f(ox[tk * H + i]) - xv) * (h2f(ox[tk * H + i]) - xv);
                den += xv * xv;
            }
            free(r1);
            for (size_t i = 0; i < I; i++) {
                double gv = h2f(gu[tk * 2 * I + i]), uv = h2f(gu[tk * 2 * I + I + i]);
                double ov = gv / (1 + exp(-gv)) * uv;
                num += (h2f(oout[tk * I + i]) - ov) * (h2f(oout[tk * I + i]) - ov);
                den += ov * ov;
            }
        }
        *rel_out = den > 0 ? sqrt(num / den) : INFINITY;
        ret = 0;
    }
done:
    free(h0), free(h1), free(hw);
    return ret;
}

static int gpu_setup(calib_timer_t *t, const model_t *m, const model_rank_t *r)
{
    gpu_t *g = (gpu_t *)t->impl;
    g->m = *m;
    g->r = *r;
    /* fixed small buffers: conv weights and states, norm weights */
    int C = r->gdn_conv_dim > 0 ? r->gdn_conv_dim : 128, W = m->gdn_conv_kernel > 1 ? m->gdn_conv_kernel : 2;
    CK(cudaMalloc(&g->conv_w, (size_t)C * W * 2));
    CK(cudaMalloc(&g->conv_s, (size_t)GDN_MAX_SEQS * C * (W - 1) * 2));
    CK(cudaMalloc(&g->conv_sn, (size_t)GDN_MAX_SEQS * C * (W - 1) * 2));
    CK(cudaMalloc(&g->norm_w, (size_t)m->hidden * 2));
    CKA(attn_fill_half_random(g->conv_w, (size_t)C * W, -0.5f, 0.5f, 11));
    CKA(attn_fill_half_random(g->conv_s, (size_t)GDN_MAX_SEQS * C * (W - 1), -1.f, 1.f, 12));
    CKA(attn_fill_half_random(g->norm_w, (size_t)m->hidden, 0.5f, 1.5f, 13));
    CK(cudaDeviceSynchronize());

    /* the two ceilings: a large device-to-device copy and a large fp16 GEMM */
    {
        size_t bytes = 2ul << 30;
        void *a = NULL, *b = NULL;
        float ms[5];
        CK(cudaMalloc(&a, bytes));
        CK(cudaMalloc(&b, bytes));
        CKA(attn_fill_half_random(a, bytes / 2, -1.f, 1.f, 21));
        for (int i = -1; i < 5; i++) {
            CK(cudaEventRecord(g->e0, 0));
            CK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, 0));
            CK(cudaEventRecord(g->e1, 0));
            CK(cudaEventSynchronize(g->e1));
            if (i >= 0)
                CK(cudaEventElapsedTime(&ms[i], g->e0, g->e1));
        }
        double v[5];
        for (int i = 0; i < 5; i++)
            v[i] = ms[i];
        g->bw_gbs = 2.0 * bytes / (calib_median(v, 5) * 1e-3) / 1e9;
        CK(cudaFree(a));
        CK(cudaFree(b));
        calib_job_t j;
        memset(&j, 0, sizeof j);
        j.kernel = CK_GEMM;
        j.m = j.n = j.k = 8192;
        if (prepare_gemm(t, g, &j) < 0)
            return -1;
        for (int i = -1; i < 5; i++) {
            CK(cudaEventRecord(g->e0, 0));
            if (run_gemm(t, g, &j, (unsigned)(i + 1)) < 0)
                return -1;
            CK(cudaEventRecord(g->e1, 0));
            CK(cudaEventSynchronize(g->e1));
            if (i >= 0) {
                float f;
                CK(cudaEventElapsedTime(&f, g->e0, g->e1));
                v[i] = f;
            }
        }
        g->peak_tflops = 2.0 * 8192.0 * 8192.0 * 8192.0 / (calib_median(v, 5) * 1e-3) / 1e12;
    }
    double mhz;
    if (spin_mhz(t, g, &mhz) < 0)
        return -1;
    g->clock_mhz[g->nclock++] = mhz;
    fprintf(stderr, "calib: %s, %d SMs, %.1f GiB; copy %.0f GB/s, fp16 GEMM %.0f TFLOP/s, SM clock %.0f MHz\n",
            g->prop.name, g->prop.multiProcessorCount, g->prop.totalGlobalMem / 1073741824.0, g->bw_gbs,
            g->peak_tflops, mhz);

    /* validate the proxies against their float64 references before timing them */
    double rel = 0;
    int rc = check_elem(t, g, &rel);
    if (rc < 0)
        return -1;
    if (rc == 0) {
        fprintf(stderr, "calib: check elementwise proxy vs float64 reference: rel err %.2e\n", rel);
        if (!(rel < 1e-2))
            fprintf(stderr, "calib: WARNING: the elementwise proxy fails its reference check (rel err %.3g)\n", rel);
    }
    if (m->n_gdn > 0) {
        rc = check_gdn(t, g, &rel);
        if (rc < 0)
            return -1;
        if (rc == 0) {
            fprintf(stderr, "calib: check GDN proxy vs float64 reference: rel err %.2e\n", rel);
            if (!(rel < 1e-2))
                fprintf(stderr, "calib: WARNING: the GDN proxy fails its reference check (rel err %.3g)\n", rel);
        }
    }
    return 0;
}
