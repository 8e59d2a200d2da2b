// attn_api.cu -- the C API of kernels/attn.h: device helpers, random KV caches, batches,
// workspace sizes, route dispatch and event timing. Kernels live in attn_prefill.cu and
// attn_decode.cu; the float64 CPU reference and the checker in ref.c.
#include "attn.h"
#include "attn_common.cuh"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cuda_check_impl(cudaError_t err, const char *file, int line) {
    if (err == cudaSuccess) return 0;
    fprintf(stderr, "[CUDA ERROR] at file %s:%d: %s\n", file, line, cudaGetErrorString(err));
    return ATTN_ECUDA;
}

int attn_set_smem(const void *kernel, int bytes) {
    static const void *seen[64];
    static int nseen;
    for (int i = 0; i < nseen; i++)
        if (seen[i] == kernel) return 0;
    if (cuda_check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes)))
        return ATTN_ECUDA;
    if (nseen < 64) seen[nseen++] = kernel;
    return 0;
}

static int smem_override = -1; // -1: not read yet; 0: none; > 0: forced per-block limit

static int smem_override_get(void) {
    if (smem_override < 0) {
        const char *e = getenv("ATTN_SMEM_LIMIT");
        smem_override = e ? atoi(e) : 0;
        if (smem_override < 0) smem_override = 0;
    }
    return smem_override;
}

int attn_smem_budget(void) {
    if (smem_override_get() > 0) return smem_override;
    static int cached[16];
    int dev = 0, v = 0;
    if (cuda_check(cudaGetDevice(&dev))) return -1;
    if (dev >= 0 && dev < 16 && cached[dev]) return cached[dev];
    if (cuda_check(cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev))) return -1;
    if (dev >= 0 && dev < 16) cached[dev] = v;
    return v;
}

int attn_smem_per_sm(void) {
    if (smem_override_get() > 0) return smem_override;
    int dev = 0, v = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return v;
}

void attn_params_init(AttnParams *p, const attn_kv *kv, const attn_batch *b, const void *q, void *out,
                      float sm_scale) {
    memset(p, 0, sizeof *p);
    p->q = (const half *)q;
    p->out = (half *)out;
    p->k = kv->k;
    p->v = kv->v;
    p->page = kv->page;
    p->kv_heads = kv->kv_heads;
    p->H = b->num_q_heads;
    p->group = b->num_q_heads / kv->kv_heads;
    p->k_scale = kv->k_scale;
    p->v_scale = kv->v_scale;
    p->block_table = (const int *)b->d_block_table;
    p->max_pages = b->max_pages;
    p->q_len = (const int *)b->d_q_len;
    p->seq_len = (const int *)b->d_seq_len;
    p->q_start = (const int *)b->d_q_start;
    p->scale_log2 = sm_scale * 1.4426950408889634f;
    p->nchunks = 1;
}

extern "C" {

int attn_set_smem_limit(int bytes) {
    int prev = smem_override_get();
    smem_override = bytes > 0 ? bytes : 0;
    return prev;
}

int attn_device_smem(int *major, int *minor, int *optin_bytes) {
    int dev = 0;
    if (!attn_gpu_available()) return ATTN_ENODEV;
    if (cuda_check(cudaGetDevice(&dev)) ||
        cuda_check(cudaDeviceGetAttribute(major, cudaDevAttrComputeCapabilityMajor, dev)) ||
        cuda_check(cudaDeviceGetAttribute(minor, cudaDevAttrComputeCapabilityMinor, dev)) ||
        cuda_check(cudaDeviceGetAttribute(optin_bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev)))
        return ATTN_ECUDA;
    return 0;
}

int attn_smem_limit(int major, int minor) {
    switch (major * 10 + minor) {
    case 70: case 72: return 96 * 1024;
    case 75: return 64 * 1024;
    case 80: case 87: return 163 * 1024;
    case 86: case 89: case 120: case 121: return 99 * 1024;
    case 90: case 100: case 101: case 103: case 110: return 227 * 1024;
    default: return 0;
    }
}

// "phase/s-in-kv+qreg+spad+askip": the staging mode, the smem aliasing, then the other plan flags
static const char *staging_name(KCfg c) {
    static const char *modes[5] = {"generic", "shared", "pipe", "pipe2", "phase"};
    static const char *alias[4] = {"", "/p-over-s", "/s-in-kv", "/?"};
    static const struct { int bit; const char *name; } flags[] = {
        {PL_EARLYK, "+earlyk"}, {PL_SSPLIT, "+ssplit"}, {PL_NOL1, "+nol1"}, {PL_QREG, "+qreg"},
        {PL_SPAD, "+spad"}, {PL_ASKIP, "+askip"}, {PL_LEANSM, "+leansm"}, {PL_EX2, "+ex2"}, {PL_KVSPLIT, "+kvsplit"}};
    static struct { int mode, plan; char name[96]; } cache[32];
    static int ncache;
    if (c.mode < 0 || c.mode >= 5 || c.plan < 0) return "?";
    for (int i = 0; i < ncache; i++)
        if (cache[i].mode == c.mode && cache[i].plan == c.plan) return cache[i].name;
    if (ncache == 32) return "?";
    char *b = cache[ncache].name;
    snprintf(b, sizeof cache[0].name, "%s%s", modes[c.mode], alias[c.plan & 3]);
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++)
        if (c.plan & flags[i].bit) strncat(b, flags[i].name, sizeof cache[0].name - strlen(b) - 1);
    cache[ncache].mode = c.mode;
    cache[ncache].plan = c.plan;
    return cache[ncache++].name;
}

int attn_shape_ok(int route, int head_dim, int group) {
    if (route < 0 || route >= ATTN_NUM_ROUTES) return ATTN_EINVAL;
    return attn_d_ok(head_dim) && group >= 1 && group <= ATTN_MAX_GROUP ? 0 : ATTN_ESHAPE;
}

int attn_route_tiles(int route, int smem_limit, attn_tiles *t) { return attn_route_tiles_hd(route, ATTN_D, smem_limit, t); }

int attn_route_tiles_hd(int route, int head_dim, int smem_limit, attn_tiles *t) {
    memset(t, 0, sizeof *t);
    if (route < 0 || route >= ATTN_NUM_ROUTES) return ATTN_EINVAL;
    if (!attn_d_ok(head_dim)) return ATTN_ESHAPE;
    switch (route) {
    case ATTN_FP8_EXPAND: // no shared memory
        t->staging = "expand";
        return 0;
    case ATTN_DECODE_SCALAR:
        t->bm = 1;
        t->bn = 32; // 8 warps x 4 tokens in flight
        t->smem_bytes = attn_scalar_static_smem(head_dim);
        t->staging = "registers";
        return t->smem_bytes <= smem_limit ? 0 : ATTN_ESMEM;
    case ATTN_PREFILL_GENERIC: case ATTN_PREFILL_LOWSMEM: case ATTN_PREFILL_FAST: case ATTN_FP8_BRIDGE:
    case ATTN_DECODE_XQA: case ATTN_DECODE_SMALLQ: {
        int i = attn_cfg_pick(route, smem_limit, head_dim); // the WMMA kernel has no static smem
        if (i < 0) return ATTN_ESMEM;
        KCfg c = attn_cfg(route, i);
        t->bm = c.mr;
        t->bn = c.bn;
        t->smem_bytes = attn_cfg_bytes(c, head_dim);
        t->staging = staging_name(c);
        return 0;
    }
    default:
        return ATTN_EINVAL;
    }
}

int attn_smem_bytes(int route, int major, int minor) { return attn_smem_bytes_hd(route, ATTN_D, major, minor); }

int attn_smem_bytes_hd(int route, int head_dim, int major, int minor) {
    int lim = attn_smem_limit(major, minor);
    attn_tiles t;
    if (lim <= 0) return ATTN_EINVAL;
    int e = attn_route_tiles_hd(route, head_dim, lim, &t);
    return e ? e : t.smem_bytes;
}

int attn_gpu_available(void) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return n > 0;
}

const char *attn_strerror(int err) {
    switch (err) {
    case ATTN_OK: return "ok";
    case ATTN_EINVAL: return "invalid argument";
    case ATTN_ENODEV: return "no CUDA device";
    case ATTN_ECUDA: return "CUDA error";
    case ATTN_ENOMEM: return "out of memory";
    case ATTN_EPAGE: return "fast path does not support this page size";
    case ATTN_EWS: return "workspace too small";
    case ATTN_ESHAPE: return "shape not supported by this route";
    case ATTN_ESMEM: return "no configuration of the route fits the device's shared memory";
    default: return "unknown error";
    }
}

const char *attn_route_name(int route) {
    static const char *names[ATTN_NUM_ROUTES] = {"prefill-generic", "prefill-lowsmem", "prefill-bm32",
                                                 "fp8-bridge",      "fp8-expand",      "decode-xqa",
                                                 "decode-scalar",   "decode-smallq"};
    return route >= 0 && route < ATTN_NUM_ROUTES ? names[route] : "?";
}

void *attn_dev_alloc(size_t bytes) {
    void *p = NULL;
    if (cudaMalloc(&p, bytes ? bytes : 1) != cudaSuccess) {
        cudaGetLastError();
        return NULL;
    }
    return p;
}
void attn_dev_free(void *p) {
    if (p) cudaFree(p);
}
int attn_memcpy_h2d(void *dst, const void *src, size_t n) {
    return cuda_check(cudaMemcpy(dst, src, n, cudaMemcpyHostToDevice));
}
int attn_memcpy_d2h(void *dst, const void *src, size_t n) {
    return cuda_check(cudaMemcpy(dst, src, n, cudaMemcpyDeviceToHost));
}
int attn_fill_bytes(void *p, size_t n, int value) { return cuda_check(cudaMemset(p, value, n)); }
int attn_sync(void) { return cuda_check(cudaDeviceSynchronize()); }

} // extern "C"

__device__ __forceinline__ uint64_t splitmix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

__global__ void fill_half_kernel(half *p, size_t n, float lo, float hi, uint64_t seed) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint64_t h = splitmix(seed * 0x100000001b3ull + i);
        float u = (float)(h >> 40) * (1.0f / 16777216.0f);
        float x = lo + (hi - lo) * u;
        if (x == 0.f) x = 1e-3f; // never zero
        p[i] = __float2half(x);
    }
}

// finite e5m2 bytes: sign, exponent 12..16 (magnitude 1/8 .. <4 before scale), any mantissa
__global__ void fill_fp8_kernel(uint8_t *p, size_t n, uint64_t seed) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        uint64_t h = splitmix(seed * 0x100000001b3ull + i);
        unsigned sign = (unsigned)(h & 1), e = 12 + (unsigned)((h >> 8) % 5), m = (unsigned)((h >> 16) & 3);
        p[i] = (uint8_t)((sign << 7) | (e << 2) | m);
    }
}

extern "C" {

int attn_fill_half_random(void *p, size_t n, float lo, float hi, uint64_t seed) {
    fill_half_kernel<<<1024, 256>>>((half *)p, n, lo, hi, seed);
    return cuda_check(cudaGetLastError());
}

int attn_kv_alloc_random(attn_kv *kv, int dtype, int num_blocks, int page, int kv_heads, int head_dim,
                         float scale, uint64_t seed) {
    memset(kv, 0, sizeof *kv);
    if (!attn_gpu_available()) return ATTN_ENODEV;
    if (num_blocks <= 0 || page <= 0 || kv_heads <= 0 || !attn_d_ok(head_dim) ||
        (dtype != ATTN_FP16 && dtype != ATTN_FP8_E5M2))
        return ATTN_EINVAL;
    kv->dtype = dtype;
    kv->num_blocks = num_blocks;
    kv->page = page;
    kv->kv_heads = kv_heads;
    kv->head_dim = head_dim;
    kv->k_scale = kv->v_scale = dtype == ATTN_FP8_E5M2 ? scale : 1.f;
    size_t n = (size_t)num_blocks * page * kv_heads * head_dim;
    size_t bytes = n * (dtype == ATTN_FP16 ? 2 : 1);
    kv->k = attn_dev_alloc(bytes);
    kv->v = attn_dev_alloc(bytes);
    if (!kv->k || !kv->v) goto fail;
    if (dtype == ATTN_FP16) {
        if (attn_fill_half_random(kv->k, n, -1.f, 1.f, seed) || attn_fill_half_random(kv->v, n, -1.f, 1.f, seed + 1))
            goto fail;
    } else {
        fill_fp8_kernel<<<1024, 256>>>((uint8_t *)kv->k, n, seed);
        fill_fp8_kernel<<<1024, 256>>>((uint8_t *)kv->v, n, seed + 1);
        if (cuda_check(cudaGetLastError())) goto fail;
    }
    return attn_sync();
fail:
    attn_kv_free(kv);
    return ATTN_ENOMEM;
}

void attn_kv_free(attn_kv *kv) {
    attn_dev_free(kv->k);
    attn_dev_free(kv->v);
    kv->k = kv->v = NULL;
}

static uint64_t host_rng(uint64_t *s) {
    uint64_t x = (*s += 0x9e3779b97f4a7c15ull);
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static int batch_upload(attn_batch *b) {
    size_t n = (size_t)b->num_rows;
    b->d_q_len = attn_dev_alloc(n * sizeof(int));
    b->d_seq_len = attn_dev_alloc(n * sizeof(int));
    b->d_q_start = attn_dev_alloc((n + 1) * sizeof(int));
    b->d_block_table = attn_dev_alloc(n * b->max_pages * sizeof(int));
    if (!b->d_q_len || !b->d_seq_len || !b->d_q_start || !b->d_block_table) return ATTN_ENOMEM;
    if (attn_memcpy_h2d(b->d_q_len, b->q_len, n * sizeof(int)) ||
        attn_memcpy_h2d(b->d_seq_len, b->seq_len, n * sizeof(int)) ||
        attn_memcpy_h2d(b->d_q_start, b->q_start, (n + 1) * sizeof(int)) ||
        attn_memcpy_h2d(b->d_block_table, b->block_table, n * b->max_pages * sizeof(int)))
        return ATTN_ECUDA;
    return 0;
}

static attn_batch *batch_new(int num_rows, int num_q_heads, int max_pages) {
    attn_batch *b = (attn_batch *)calloc(1, sizeof *b);
    if (!b) return NULL;
    b->num_rows = num_rows;
    b->num_q_heads = num_q_heads;
    b->max_pages = max_pages;
    b->q_len = (int *)calloc(num_rows, sizeof(int));
    b->seq_len = (int *)calloc(num_rows, sizeof(int));
    b->q_start = (int *)calloc(num_rows + 1, sizeof(int));
    b->block_table = (int *)calloc((size_t)num_rows * max_pages, sizeof(int));
    if (!b->q_len || !b->seq_len || !b->q_start || !b->block_table) {
        attn_batch_free(b);
        return NULL;
    }
    return b;
}

static void batch_totals(attn_batch *b) {
    b->total_q = b->max_q = b->max_seq = 0;
    for (int r = 0; r < b->num_rows; r++) {
        b->q_start[r] = b->total_q;
        b->total_q += b->q_len[r];
        if (b->q_len[r] > b->max_q) b->max_q = b->q_len[r];
        if (b->seq_len[r] > b->max_seq) b->max_seq = b->seq_len[r];
    }
    b->q_start[b->num_rows] = b->total_q;
}

attn_batch *attn_batch_create(const attn_kv *kv, int num_rows, const int *q_len, const int *seq_len,
                              int num_q_heads, const int *block_table, int max_pages, uint64_t seed) {
    if (num_rows <= 0 || num_q_heads <= 0 || num_q_heads % kv->kv_heads) return NULL;
    for (int r = 0; r < num_rows; r++)
        if (q_len[r] < 1 || seq_len[r] < q_len[r]) return NULL;
    int need_max = 0;
    long need = 0;
    for (int r = 0; r < num_rows; r++) {
        int np = (seq_len[r] + kv->page - 1) / kv->page;
        need += np;
        if (np > need_max) need_max = np;
    }
    if (block_table && max_pages < need_max) return NULL;
    if (!block_table) {
        if (need > kv->num_blocks) return NULL;
        max_pages = need_max;
    }
    attn_batch *b = batch_new(num_rows, num_q_heads, max_pages);
    if (!b) return NULL;
    memcpy(b->q_len, q_len, num_rows * sizeof(int));
    memcpy(b->seq_len, seq_len, num_rows * sizeof(int));
    batch_totals(b);
    if (block_table) {
        memcpy(b->block_table, block_table, (size_t)num_rows * max_pages * sizeof(int));
    } else { // distinct random blocks: a shuffled prefix of 0..num_blocks-1
        int *perm = (int *)malloc(kv->num_blocks * sizeof(int));
        if (!perm) goto fail;
        uint64_t s = seed;
        for (int i = 0; i < kv->num_blocks; i++) perm[i] = i;
        for (int i = kv->num_blocks - 1; i > 0; i--) {
            int j = (int)(host_rng(&s) % (uint64_t)(i + 1));
            int t = perm[i]; perm[i] = perm[j]; perm[j] = t;
        }
        int k = 0;
        for (int r = 0; r < num_rows; r++) {
            int np = (seq_len[r] + kv->page - 1) / kv->page;
            for (int i = 0; i < np; i++) b->block_table[(size_t)r * max_pages + i] = perm[k++];
        }
        free(perm);
    }
    if (batch_upload(b)) goto fail;
    return b;
fail:
    attn_batch_free(b);
    return NULL;
}

attn_batch *attn_batch_expand(const attn_batch *src) {
    attn_batch *b = batch_new(src->total_q, src->num_q_heads, src->max_pages);
    int *srow = (int *)malloc(src->total_q * sizeof(int));
    if (!b || !srow) goto fail;
    if (attn_expand_rows(src->num_rows, src->q_len, src->seq_len, b->seq_len, srow) != src->total_q) goto fail;
    for (int i = 0; i < src->total_q; i++) {
        b->q_len[i] = 1;
        memcpy(b->block_table + (size_t)i * b->max_pages, src->block_table + (size_t)srow[i] * src->max_pages,
               src->max_pages * sizeof(int));
    }
    batch_totals(b);
    free(srow);
    srow = NULL;
    if (batch_upload(b)) goto fail;
    return b;
fail:
    free(srow);
    attn_batch_free(b);
    return NULL;
}

void attn_batch_free(attn_batch *b) {
    if (!b) return;
    free(b->q_len);
    free(b->seq_len);
    free(b->q_start);
    free(b->block_table);
    attn_dev_free(b->d_q_len);
    attn_dev_free(b->d_seq_len);
    attn_dev_free(b->d_q_start);
    attn_dev_free(b->d_block_table);
    free(b);
}

size_t attn_ws_bytes(int route, const attn_kv *kv, const attn_batch *b) {
    return attn_prefill_ws_bytes(route, kv, b) + attn_decode_ws_bytes(route, kv, b);
}

int attn_run(int route, const attn_kv *kv, const attn_batch *b, const void *q, void *out, float sm_scale,
             void *ws, size_t ws_bytes, int flags, void *stream) {
    if (!kv || !b || !q || !out || route < 0 || route >= ATTN_NUM_ROUTES) return ATTN_EINVAL;
    if (kv->kv_heads <= 0 || b->num_q_heads % kv->kv_heads) return ATTN_ESHAPE;
    if (attn_shape_ok(route, kv->head_dim, b->num_q_heads / kv->kv_heads)) return ATTN_ESHAPE;
    cudaStream_t s = (cudaStream_t)stream;
    switch (route) {
    case ATTN_DECODE_XQA:
    case ATTN_DECODE_SCALAR:
    case ATTN_DECODE_SMALLQ:
        return attn_decode_launch(route, kv, b, q, out, sm_scale, ws, ws_bytes, s);
    default:
        return attn_prefill_launch(route, kv, b, q, out, sm_scale, ws, ws_bytes, flags, s);
    }
}

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

int attn_time(int route, const attn_kv *kv, const attn_batch *b, const void *q, void *out, float sm_scale,
              void *ws, size_t ws_bytes, int flags, int warmup, int reps, float *median_ms) {
    int err = 0;
    cudaEvent_t e0, e1;
    float *t = (float *)malloc((reps > 0 ? reps : 1) * sizeof(float));
    if (!t) return ATTN_ENOMEM;
    if (cuda_check(cudaEventCreate(&e0)) || cuda_check(cudaEventCreate(&e1))) { free(t); return ATTN_ECUDA; }
    for (int i = 0; i < warmup && !err; i++) err = attn_run(route, kv, b, q, out, sm_scale, ws, ws_bytes, flags, NULL);
    for (int i = 0; i < reps && !err; i++) {
        cudaEventRecord(e0);
        err = attn_run(route, kv, b, q, out, sm_scale, ws, ws_bytes, flags, NULL);
        cudaEventRecord(e1);
        if (!err) err = cuda_check(cudaEventSynchronize(e1));
        if (!err) err = cuda_check(cudaEventElapsedTime(&t[i], e0, e1));
    }
    if (!err && reps > 0) {
        qsort(t, reps, sizeof(float), cmp_float);
        *median_ms = t[reps / 2];
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    free(t);
    return err;
}

} // extern "C"
