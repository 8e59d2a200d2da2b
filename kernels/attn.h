/* attn: paged prefill and paged decode attention (CUDA, sm_70-portable), plain-C API.
 *
 * What the kernels compute: for every row r of a batch (one request's slice of a step),
 * its q_len[r] query tokens are the LAST q_len[r] tokens of a sequence of seq_len[r]
 * tokens; query token i (0-based) sits at position pos = seq_len - q_len + i and attends
 * keys 0..pos (prefix context + causal within the chunk). GQA by index: q head h reads
 * kv head h / (num_q_heads / kv_heads). head_dim 64, 128 or 256 (kv->head_dim), GQA group
 * (num_q_heads / kv_heads) 1..16, on every route; any other shape is ATTN_ESHAPE (attn_shape_ok).
 *
 * Layouts (all device memory):
 *   KV cache   k, v: [num_blocks, page, kv_heads, head_dim], fp16 or fp8_e5m2 (uint8;
 *              value = half(raw << 8) * scale, i.e. the byte is the high byte of an fp16)
 *   block table: int32 [num_rows, max_pages]; token t of row r lives in block
 *              block_table[r * max_pages + t / page], slot t % page
 *   q, out     fp16 [total_q, num_q_heads, head_dim]; row r owns tokens
 *              q_start[r] .. q_start[r] + q_len[r] - 1
 *
 * Every function returns 0 or a negative ATTN_E* code (never aborts); every launch is
 * checked with cudaGetLastError. Nothing here needs a GPU to link; attn_gpu_available()
 * says whether one is there. Streams and device pointers are passed as void *.
 */
#ifndef ATTN_H
#define ATTN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The fp8 bridge's expansion kernel: a 256-thread CTA per ATTN_BRIDGE_CTA_TOKENS tokens of a
 * 784-token destination page (all kv heads), ATTN_BRIDGE_CTAS_PER_SM of them per SM (32
 * registers). calib records both in the profile (fp8_expand), the cost model's bridge law
 * counts its CTAs and waves with them. */
#define ATTN_BRIDGE_CTA_TOKENS 98
#define ATTN_BRIDGE_CTAS_PER_SM 8

/* error codes */
#define ATTN_OK       0
#define ATTN_EINVAL  -1 /* bad argument */
#define ATTN_ENODEV  -2 /* no CUDA device */
#define ATTN_ECUDA   -3 /* a CUDA call or launch failed */
#define ATTN_ENOMEM  -4 /* allocation failed */
#define ATTN_EPAGE   -5 /* fast path asked for on a page it does not support */
#define ATTN_EWS     -6 /* workspace too small: see attn_ws_bytes */
#define ATTN_ESHAPE  -7 /* shape the route does not take (head_dim not 64/128/256, GQA group not 1..16,
                           q_len != 1 on decode, ...) */
#define ATTN_ESMEM   -8 /* no configuration of the route fits the device's shared memory per block */

/* KV cache element types */
#define ATTN_FP16      0
#define ATTN_FP8_E5M2  1

/* flags for attn_run */
#define ATTN_F_ANY_PAGE 1 /* fast path on any page that is a multiple of 16 (BM32_ANY_PAGE=1) */

/* Routes: each forces one kernel variant explicitly. */
enum attn_route {
    ATTN_PREFILL_GENERIC = 0, /* paged prefill, BM=32 BN=64, grid (ceil(M/32),1,B*H); fp16 or fp8 (in-kernel dequant) */
    ATTN_PREFILL_LOWSMEM,     /* paged prefill, BM=16 BN=128, K and V share one smem tile, no pipelining; fp16 or fp8 */
    ATTN_PREFILL_FAST,        /* "BM32 phase": BM=32 BN=128, K/V staged through registers into smem, pipelined;
                                 fp16 only; page 784, or any multiple of 16 with ATTN_F_ANY_PAGE, else ATTN_EPAGE;
                                 grid (ceil(M/32), parts, B*H): each CTA's walk in parts where its CTAs would leave
                                 SMs idle (attn_split.h), + a merge kernel (partials in the workspace) */
    ATTN_FP8_BRIDGE,          /* fp8 cache: expand all pages of each row to an fp16 workspace (page 784), then FAST */
    ATTN_FP8_EXPAND,          /* the expansion of ATTN_FP8_BRIDGE alone (writes the workspace; out untouched) */
    ATTN_DECODE_XQA,          /* split-K decode, grid (rows, kv_heads, partitions), one CTA per kv head serving its
                                 whole GQA group, + a log-sum-exp reduce kernel; every q_len must be 1; fp16/fp8 */
    ATTN_DECODE_SCALAR,       /* split-K decode, one CTA per q head per partition (no GQA sharing) + reduce; q_len 1 */
    ATTN_DECODE_SMALLQ,       /* fused small-q (MTP verify): one pass over the KV serves q_len x group query rows
                                 per CTA (WMMA), causal at the tail; 1 <= q_len <= 16; fp16/fp8 */
    ATTN_NUM_ROUTES
};

/* The CTAs an SM holds of the fast prefill kernel this device runs (the occupancy calculator;
 * kernels/attn_split.h's rule takes it), or a negative ATTN_E* code. calib records it in the profile.
 * The fast path splits each CTA's walk over the keys in parts by that rule; env ATTN_PREFILL_SPLIT=N
 * (1..8) forces N parts (A/B and validation; 1 = the reference launch). */
int attn_fast_ctas_per_sm(void);

/* Decode partition length for a row of seq_len tokens (256, or 1024 when seq_len >= 32768). */
int attn_decode_partition(int seq_len);

/* --- configuration per architecture (shared memory) ---
 * Each WMMA route has a short list of tile/staging configurations, preferred first (table in
 * attn_common.cuh); the launcher takes the first whose shared memory fits the device's per-block
 * limit (cudaDevAttrMaxSharedMemoryPerBlockOptin). The launch structure (grid, BM) is the same on
 * every device; sm_80 and up run the configurations measured in kernels/NOTES.md (v4), sm_70 (96 KB)
 * the same tiles with P written over S for prefill-generic and small-q, sm_75 (64 KB) one K/V tile
 * staged through registers everywhere and BN = 64 for prefill-bm32 / fp8-bridge / prefill-lowsmem. */
typedef struct attn_tiles {
    int bm, bn;              /* query rows per CTA (prefill: q tokens of one head; decode: (token, head)
                                rows of one kv head), keys per tile; 0 where the route has no tiles */
    int smem_bytes;          /* shared memory per block of the route's main kernel, dynamic + static */
    const char *staging;     /* "pipe", "pipe2", "phase", "generic", "shared", ... (+ "/p-over-s", "/s-in-kv") */
} attn_tiles;

/* Per-block shared-memory limit (opt-in) of compute capability major.minor in bytes, as the CUDA
 * programming guide lists it (7.0: 96 KB, 7.5: 64 KB, 8.0: 163 KB, 8.6/8.9/12.x: 99 KB, 9.0/10.x:
 * 227 KB); 0 for an unknown one. */
int   attn_smem_limit(int major, int minor);
/* The configuration a route runs under a per-block limit of smem_limit bytes: 0, ATTN_EINVAL
 * (bad route) or ATTN_ESMEM (nothing fits). Needs no GPU. */
int   attn_route_tiles(int route, int smem_limit, attn_tiles *t);
/* Shared memory per block (dynamic + static) of the route's main kernel on compute capability
 * major.minor, computed from the constants the kernels use; negative ATTN_E* if nothing fits or
 * the arch is unknown. Needs no GPU. */
int   attn_smem_bytes(int route, int major, int minor);
/* Testing: launch as if the device allowed only `bytes` of shared memory per block (and per SM),
 * so the sm_70 / sm_75 configurations run on a larger GPU; 0 restores the device's own limit (the
 * environment variable ATTN_SMEM_LIMIT sets the same at start). Returns the previous override. */
int   attn_set_smem_limit(int bytes);
/* The current device's compute capability and per-block opt-in smem limit; 0 or ATTN_E*. */
int   attn_device_smem(int *major, int *minor, int *optin_bytes);

/* --- shapes: head_dim and GQA group (the kernels are instantiated for head_dim 64, 128, 256) ---
 * attn_shape_ok: 0 when route runs head_dim with group q heads per kv head (1..16), ATTN_ESHAPE
 * when not, ATTN_EINVAL for a bad route; needs no GPU (attn_run checks the same). The _hd forms
 * of attn_route_tiles / attn_smem_bytes / attn_fast_ctas_per_sm take head_dim (the plain forms
 * mean 256); ATTN_ESHAPE for another head_dim. */
int   attn_shape_ok(int route, int head_dim, int group);
int   attn_route_tiles_hd(int route, int head_dim, int smem_limit, attn_tiles *t);
int   attn_smem_bytes_hd(int route, int head_dim, int major, int minor);
int   attn_fast_ctas_per_sm_hd(int head_dim);

typedef struct attn_kv {
    int dtype;                /* ATTN_FP16 or ATTN_FP8_E5M2 */
    int num_blocks, page, kv_heads, head_dim;
    float k_scale, v_scale;   /* fp8 dequant scales (ignored for fp16) */
    void *k, *v;              /* device */
} attn_kv;

/* A batch of rows. Host arrays are owned by the batch; d_* are device copies of them. */
typedef struct attn_batch {
    int num_rows, num_q_heads, max_pages;
    int total_q, max_q, max_seq;
    int *q_len, *seq_len, *q_start;   /* host; q_start has num_rows + 1 entries */
    int *block_table;                 /* host, num_rows * max_pages */
    void *d_q_len, *d_seq_len, *d_q_start, *d_block_table; /* device */
} attn_batch;

/* --- device and memory helpers --- */
int   attn_gpu_available(void);                 /* 1 if a CUDA device can be used, else 0; never crashes */
const char *attn_strerror(int err);
const char *attn_route_name(int route);         /* "prefill-generic", "decode-xqa", ... */
void *attn_dev_alloc(size_t bytes);             /* cudaMalloc; NULL on failure; free with attn_dev_free */
void  attn_dev_free(void *p);
int   attn_memcpy_h2d(void *dst, const void *src, size_t bytes);
int   attn_memcpy_d2h(void *dst, const void *src, size_t bytes);
int   attn_fill_half_random(void *p, size_t n, float lo, float hi, uint64_t seed); /* fp16 uniform [lo,hi) */
int   attn_fill_bytes(void *p, size_t bytes, int value);          /* memset (poison: 0xFF = fp16 NaN) */
int   attn_sync(void);

/* Allocate a KV cache of num_blocks blocks and fill k and v with random non-zero data (fp16 uniform
 * in [-1,1); fp8 finite e5m2 values of magnitude 1/8..2). The caller frees it with attn_kv_free. */
int   attn_kv_alloc_random(attn_kv *kv, int dtype, int num_blocks, int page, int kv_heads,
                           int head_dim, float scale, uint64_t seed);
void  attn_kv_free(attn_kv *kv);

/* Make a batch. block_table (num_rows * max_pages, host) may be NULL: then each row gets its
 * ceil(seq_len/page) blocks as distinct random blocks of kv (seeded; ATTN_ENOMEM-like NULL if kv
 * has too few), and max_pages is computed. Returns NULL on failure; free with attn_batch_free. */
attn_batch *attn_batch_create(const attn_kv *kv, int num_rows, const int *q_len, const int *seq_len,
                              int num_q_heads, const int *block_table, int max_pages, uint64_t seed);
void  attn_batch_free(attn_batch *b);

/* Small-q token-wise expansion (PREFIX_DECODE_ROWS): a row with q tokens at seq_len L becomes q
 * rows with q = 1 and seq lens L-q+1 .. L, sharing the block-table row; rows keep their order,
 * so the expanded batch reads q and writes out at the same token offsets. Pure host logic:
 * attn_expand_rows fills out_seq_len[] and out_src_row[] (each sum(q_len) long) and returns the
 * number of expanded rows; attn_batch_expand makes the expanded batch (free with attn_batch_free). */
int   attn_expand_rows(int num_rows, const int *q_len, const int *seq_len,
                       int *out_seq_len, int *out_src_row);
attn_batch *attn_batch_expand(const attn_batch *b);

/* --- launching --- */
/* Workspace a route needs for this batch on the current device (decode partials, the fast path's
 * split partials, fp8 bridge's fp16 copy); 0 if none. */
size_t attn_ws_bytes(int route, const attn_kv *kv, const attn_batch *b);

/* Run one route on stream (NULL = default stream). sm_scale is the softmax scale (e.g. 1/16 for
 * D=256). ws must hold attn_ws_bytes(route, kv, b) bytes. Asynchronous; returns 0 if the launches
 * were accepted, a negative ATTN_E* code otherwise. */
int   attn_run(int route, const attn_kv *kv, const attn_batch *b, const void *q, void *out,
               float sm_scale, void *ws, size_t ws_bytes, int flags, void *stream);

/* Time a route: warmup runs, then reps runs each between CUDA events; *median_ms gets the median.
 * Synchronises. Returns 0 or a negative code. */
int   attn_time(int route, const attn_kv *kv, const attn_batch *b, const void *q, void *out,
                float sm_scale, void *ws, size_t ws_bytes, int flags, int warmup, int reps,
                float *median_ms);

/* --- CPU reference (float64; kernels/ref.c; needs no GPU) --- */
/* Reference output for one (query token, q head), accumulated in float64: q_vec[head_dim], keys
 * and vals laid out as [num_keys][ld] floats (the sequence's keys 0..num_keys-1 for that kv head,
 * already dequantised, exact); writes out_vec[head_dim]. */
void  attn_ref_one(const float *q_vec, const float *keys, const float *vals, int num_keys, int ld,
                   int head_dim, double sm_scale, double *out_vec);
double attn_fp16_to_double(uint16_t h);
double attn_fp8e5m2_to_double(uint8_t raw, float scale); /* half(raw << 8) * scale, as the kernels do */

/* Validate a route against the float64 reference on up to max_samples sampled (row, token, head)
 * triples (all when max_samples <= 0). q and out are device tensors; out must have been written
 * by attn_run. Copies back what it needs. *rel_err = ||out - ref|| / ||ref|| over the samples;
 * *bad gets the count of non-finite outputs among them. */
int   attn_check_output(const attn_kv *kv, const attn_batch *b, const void *q, const void *out,
                        float sm_scale, int max_samples, uint64_t seed, double *rel_err, long *bad);

/* --- varlen: one launch over a mixed batch (kernels/attn_varlen.cu) ---
 * Decode rows (q_len 1) and prefill chunks of one batch in one FlashAttention-2 style launch:
 * a CTA (256 threads) per (M-tile of a row, kv head), its BM query rows the row's (token, q head
 * of the GQA group) pairs token-major, walking the kv head's keys 0 .. its last token's position
 * in tiles of BN = 64 (online softmax, causal within the row's new tokens). head_dim 64, 128 or
 * 256 (BM 64, 64, 32), any GQA group (H % kv_heads == 0), fp16 KV only (fp8: ATTN_ESHAPE), any
 * page. Same layouts as above (attn_batch, attn_kv); the CTAs run longest walk first from a host
 * plan made once per batch (like the batch's device copies). */
typedef struct attn_varlen_plan attn_varlen_plan;

/* The counts of a varlen launch, host only: entries = M-tiles of all rows, ctas = entries x
 * kv_heads, tiles = KV tiles all CTAs walk, max_tiles = the longest CTA's walk (the critical
 * path), busiest_sm_tiles = the tiles of the SM that gets the most when the CTAs, longest first,
 * each go to the least loaded of sms x ctas_per_sm slots (slot i on SM i % sms, ties to the lower
 * slot; 0 when sms or ctas_per_sm is 0). */
typedef struct attn_varlen_shape {
    long long entries, ctas, tiles, max_tiles, busiest_sm_tiles;
} attn_varlen_shape;

/* BM, BN and dynamic shared memory per block of the head_dim's configuration; ATTN_ESHAPE if none. */
int   attn_varlen_config(int head_dim, int *bm, int *bn, int *smem_bytes);
/* Fill *out for rows (q_len, seq_len) (needs no GPU); 0 or ATTN_EINVAL / ATTN_ENOMEM. */
int   attn_varlen_count(int num_rows, const int *q_len, const int *seq_len, int group, int kv_heads,
                        int head_dim, int sms, int ctas_per_sm, attn_varlen_shape *out);
/* CTAs of the head_dim's kernel an SM holds on the current device, or a negative ATTN_E* code. */
int   attn_varlen_ctas_per_sm(int head_dim);
/* The plan of a batch (its M-tiles, longest walk first, on the device); NULL on bad shape or memory. */
attn_varlen_plan *attn_varlen_plan_create(const attn_kv *kv, const attn_batch *b);
void  attn_varlen_plan_free(attn_varlen_plan *pl);
/* One launch on stream; asynchronous; 0 or a negative ATTN_E* code. */
int   attn_varlen_run(const attn_varlen_plan *pl, const attn_kv *kv, const attn_batch *b, const void *q,
                      void *out, float sm_scale, void *stream);
/* Median of reps event-timed launches after warmup ones (synchronises). */
int   attn_varlen_time(const attn_varlen_plan *pl, const attn_kv *kv, const attn_batch *b, const void *q,
                       void *out, float sm_scale, int warmup, int reps, float *median_ms);
/* An fp16 KV cache of any supported head_dim, random in [-1, 1); free with attn_kv_free. */
int   attn_varlen_kv_alloc(attn_kv *kv, int num_blocks, int page, int kv_heads, int head_dim, uint64_t seed);

/* A validation case: rows (q, seq), fresh random inputs, output poisoned (fp16 NaN) before the
 * run; *unwritten = non-finite output elements, *rel_err vs the float64 reference (ref.c) on
 * `samples` sampled (row, token, head) triples (<= 0: all). 0 or a negative setup/launch code. */
#define ATTN_VARLEN_CASE_ROWS 64
typedef struct attn_varlen_case {
    int head_dim, kv_heads, group, page, samples;
    int num_rows;
    int q[ATTN_VARLEN_CASE_ROWS], seq[ATTN_VARLEN_CASE_ROWS];
} attn_varlen_case;
int   attn_varlen_validate(const attn_varlen_case *c, uint64_t seed, double *rel_err, long *unwritten);

#ifdef __cplusplus
}
#endif
#endif /* ATTN_H */
