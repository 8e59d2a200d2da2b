/* route: which attention kernel each row of a step takes (docs/reference-system.md,
 * "Attention routing in a mixed batch").
 *
 * Input: the step's rows (q tokens at the end of a sequence of seq_len tokens) and the
 * engine/env settings.  Output: a plan -- the ordered list of kernel calls one
 * full-attention layer makes -- that the cost model prices and the GPU replay runs.
 * Rules, in order:
 *  0. attention_backend varlen (upstream FlashAttention / FlashInfer): every row, decode
 *     rows and prompt chunks alike, is one segment of ONE varlen call (ROUTE_VARLEN, law
 *     attn.varlen.fp16; the rows keep their q, nothing is expanded);
 *  1. every row has q <= SMALLQ_DECODE_MAX_Q: the whole batch is expanded token-wise
 *     (a row q=K becomes K decode rows of seq_len L-K+1..L) into one decode call;
 *  2. else, if some row has context before its query (seq_len > q): the per-sequence
 *     prefill loop -- one prefill-kernel call per row, except that with
 *     PREFIX_DECODE_ROWS=1 rows with 1 <= q <= SMALLQ_DECODE_MAX_Q and context are
 *     expanded into one decode call;
 *  3. else (fresh prompts only): one prefill call per row (varlen, same kernel).
 * Kernel dispatch (route_prefill_kernel, add_prefill_call) follows one of two kernel
 * libraries (route_cfg.fork_kernels):
 *  - the reference fork's (flash-attention-v100, launcher_flash_attention_forward_paged),
 *    which the V100 profile prices: fp16 q = 1 -> generic BM32/BN64; q >= 32 on the fast
 *    page (784, or page % 16 == 0 with D256_BM32_ANY_PAGE=1) -> BM32 phase; every other
 *    q > 1 -> low-smem BM16/BN128, its software pipeline on only at page 784; fp8 KV:
 *    q >= 32 -> the bridge (the whole sequence expanded to an fp16 workspace of page 784),
 *    then the FA2 split-D dense kernel for q >= 1024 (BM64/BN32, q padded to a multiple of
 *    64) or the BM32 phase kernel on the workspace below it; q < 32 -> generic BM32/BN64
 *    dequantising in kernel (the fork has no fp8 low-smem kernel);
 *  - this repo's (kernels/attn.h), which calib measures and the GPU replay runs: the same,
 *    except that an fp16 q >= 32 row off the fast page runs the generic BM32/BN64 kernel,
 *    fp8 rows 1 < q < 32 the fp8 low-smem one, and every bridge chunk the BM32 phase kernel.
 * Grouped verify (the fork's VLLM_FLASH_V100_GROUPED_VERIFY_MULTI_KV_HEAD, fork kernels only): a
 * verify row the one-pass grouped verifier accepts (route_grouped: fp8_e5m2 q 8 or 16, fp8_e4m3
 * q 2..8) is not expanded but is ONE segment of the decode call, q tokens over one scan of its
 * context (every row of a small-q batch and the verify rows of a mixed batch, any number of
 * requests).
 * Decode calls take XQA or scalar by the fork's gates (route_decode_xqa); fp8_e4m3 KV
 * routes as fp8_e5m2 except that its decode is always scalar (the fork's XQA reads e5m2 only).
 * Invariant: every query token of every row is in exactly one call. */
#ifndef PACESIM_ROUTE_H
#define PACESIM_ROUTE_H

#include "scenario.h"

#define ROUTE_NATIVE_PAGE 784     /* the page the BM32 fast path is built for; the fp8 bridge's workspace page */
#define ROUTE_BM32_MIN_Q 32       /* query tokens that fill a BM=32 tile: the fast path and the bridge need them */
#define ROUTE_SPLITD_MIN_Q 1024   /* fp8 bridge chunks from this q run the FA2 split-D dense kernel */
#define ROUTE_XQA_LONG_CTX 32768  /* group 4 takes XQA from this longest context */
#define ROUTE_SMALLQ_XQA_MIN_CTX 4096   /* VLLM_FLASH_V100_SMALLQ_DECODE_XQA_MIN_SEQ_LEN */
#define ROUTE_FP8_XQA_MIN_CTX 16384     /* VLLM_FLASH_V100_DECODE_FP8_XQA_MIN_SEQ_LEN */
#define ROUTE_GROUPED_DRAFT 2     /* route_cfg.grouped_verify: every small-q row one segment (a draft block) */

typedef enum {
    ROUTE_PREFILL_GENERIC = 0,
    ROUTE_PREFILL_BM32,
    ROUTE_DECODE_XQA,
    ROUTE_DECODE_SCALAR,
    ROUTE_FP8_BRIDGE,
    ROUTE_VARLEN,              /* attention_backend varlen: the whole batch in one call */
    ROUTE__N
} route_t;

typedef enum { VAR_NONE = 0, VAR_BM32_BN64, VAR_BM16_BN128, VAR_BM32_BN128, VAR_BM64_BN32 } kvariant_t;
/* VAR_BM64_BN32: the FA2 split-D dense kernel (sm70_d256_splitd_n32_dense_fwd) of a bridge chunk */

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
    int pipelined;             /* VAR_BM16_BN128: its software pipeline is on (fork: page 784 only) */
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
    int fork_kernels;          /* 1: the reference fork's kernel dispatch; 0: this repo's kernels */
    int fp8_bridge_page;       /* (ROUTE_NATIVE_PAGE) */
    int varlen;                /* engine.attention_backend varlen: rule 0 below */
    int grouped_verify;        /* VLLM_FLASH_V100_GROUPED_VERIFY_MULTI_KV_HEAD (fork kernels): route_grouped;
                                  ROUTE_GROUPED_DRAFT: the DFlash2 draft model's block rows */
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
/* 1 when a decode call whose longest row is maxlen takes XQA: a small-q batch's expansion
 * (smallq 1) or a uniform/decode-rows call (smallq 0); flash_attn_v100.py's gates. */
int route_decode_xqa(const route_cfg_t *cfg, long maxlen, int smallq);
/* 1 when a verify row of q query tokens takes the one-pass grouped verifier: the flag on, the
 * fork's kernels, fp8_e5m2 KV with q 8 or 16 (the DFlash2 verifier) or fp8_e4m3 with q 2..8;
 * with grouped_verify ROUTE_GROUPED_DRAFT (the DFlash2 draft model's block) any q > 1. */
int route_grouped(const route_cfg_t *cfg, int q);

#endif
