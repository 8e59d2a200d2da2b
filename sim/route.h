/* route: which attention kernel each row of a step takes (docs/reference-system.md,
 * "Attention routing in a mixed batch").
 *
 * Input: the step's rows (q tokens at the end of a sequence of seq_len tokens) and the
 * engine/env settings.  Output: a plan -- the ordered list of kernel calls one
 * full-attention layer makes -- that the cost model prices and the GPU replay runs.
 * Rules, in order:
 *  1. every row has q <= SMALLQ_DECODE_MAX_Q: the whole batch is expanded token-wise
 *     (a row q=K becomes K decode rows of seq_len L-K+1..L) into one decode call;
 *  2. else, if some row has context before its query (seq_len > q): the per-sequence
 *     prefill loop -- one prefill-kernel call per row, except that with
 *     PREFIX_DECODE_ROWS=1 rows with 1 <= q <= SMALLQ_DECODE_MAX_Q and context are
 *     expanded into one decode call;
 *  3. else (fresh prompts only): one prefill call per row (varlen, same kernel).
 * A prefill call with fp8 KV and q >= 32 takes the bridge (expand every page to an
 * fp16 workspace of page 784, then the fp16 kernel); other fp8 rows dequantise in
 * kernel.  The fp16 kernel is the BM32 fast path iff q >= 32 and page == 784 (or
 * page % 16 == 0 with D256_BM32_ANY_PAGE=1); otherwise generic: BM=32/BN=64, or the
 * low-smem BM=16/BN=128 variant for 1 < q < 32.  Decode calls use XQA when the GQA
 * group >= route_cfg.xqa_min_group and the longest context >= xqa_min_ctx, else scalar.
 * Invariant: every query token of every row is in exactly one call. */
#ifndef PACESIM_ROUTE_H
#define PACESIM_ROUTE_H

#include "scenario.h"

#define ROUTE_NATIVE_PAGE 784     /* the page the BM32 fast path is built for; the fp8 bridge's workspace page */
#define ROUTE_BM32_MIN_Q 32       /* query tokens that fill a BM=32 tile: the fast path and the bridge need them */
#define ROUTE_XQA_MIN_GROUP 2     /* the GQA group from which decode calls take XQA */
#define ROUTE_XQA_MIN_CTX 1       /* ... and the longest context from which they do */

typedef enum {
    ROUTE_PREFILL_GENERIC = 0,
    ROUTE_PREFILL_BM32,
    ROUTE_DECODE_XQA,
    ROUTE_DECODE_SCALAR,
    ROUTE_FP8_BRIDGE,
    ROUTE__N
} route_t;

typedef enum { VAR_NONE = 0, VAR_BM32_BN64, VAR_BM16_BN128, VAR_BM32_BN128 } kvariant_t;

typedef struct kseg {          /* one row of a call */
    int req;                   /* engine request index (-1 for synthetic) */
    int q;                     /* query tokens */
    long seq_len;              /* context including the q tokens */
} kseg_t;

typedef struct kcall {
    route_t route;             /* the route of the call (bridge calls run the fp16 kernel after expansion) */
    kvariant_t variant;        /* tile shape of the prefill kernel (VAR_NONE for decode) */
    kv_dtype_t kv_dtype;       /* dtype the kernel reads (fp16 after a bridge) */
    int page;                  /* page size the kernel sees */
    int nseg;
    kseg_t *segs;              /* points into the plan's arena */
    long bridge_tokens;        /* ROUTE_FP8_BRIDGE: tokens expanded (the whole sequence) */
} kcall_t;

typedef struct route_cfg {
    int smallq_max_q;          /* VLLM_FLASH_V100_SMALLQ_DECODE_MAX_Q */
    int prefix_decode_rows;    /* VLLM_FLASH_V100_PREFILL_PREFIX_DECODE_ROWS */
    int bm32_any_page;         /* VLLM_FLASH_V100_PREFILL_D256_BM32_ANY_PAGE */
    int page;                  /* block size */
    kv_dtype_t kv_dtype;
    int group;                 /* GQA group per rank */
    int xqa_min_group;         /* (ROUTE_XQA_MIN_GROUP) */
    long xqa_min_ctx;          /* (ROUTE_XQA_MIN_CTX) */
    int fp8_bridge_page;       /* (ROUTE_NATIVE_PAGE) */
} route_cfg_t;

typedef struct route_plan {
    int ncalls, cap_calls;
    kcall_t *calls;            /* owned: at most one prefill call per row + one decode call */
    int nseg_used, nseg_cap;
    kseg_t *arena;             /* owned: the segments the calls point into */
} route_plan_t;

void route_plan_init(route_plan_t *p);
void route_plan_free(route_plan_t *p);

/* Route rows[0..n) (q, seq_len; req set) into out, reusing its storage.
 * 0, or -1 on allocation failure. */
int route_step(const route_cfg_t *cfg, const kseg_t *rows, int n, route_plan_t *out);

const char *route_name(route_t r);
const char *route_variant_name(kvariant_t v);
/* Which fp16 prefill kernel a q-row takes with this config (helper of route_step). */
route_t route_prefill_kernel(const route_cfg_t *cfg, int q, int page, kvariant_t *variant);

#endif
