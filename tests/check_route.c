/* check_route: kernel routing of every row for every flag combination (route.h rules),
 * and the model-derived block sizes. */
#include <check.h>
#include "check_run.h"
#include <stdlib.h>
#include "model.h"
#include "route.h"
#include "scenario.h"

static route_cfg_t cfg(int pdr, int anypage, int page, kv_dtype_t kv)
{
    return (route_cfg_t){ .smallq_max_q = 16, .prefix_decode_rows = pdr, .bm32_any_page = anypage, .page = page,
                          .kv_dtype = kv, .group = 6, .fp8_bridge_page = 784 };
}

/* where did request `req` go: route of its (first) call and how many segments it has there */
static route_t where(const route_plan_t *p, int req, int *nseg, kvariant_t *var)
{
    *nseg = 0;
    route_t r = ROUTE__N;
    for (int i = 0; i < p->ncalls; i++)
        for (int k = 0; k < p->calls[i].nseg; k++)
            if (p->calls[i].segs[k].req == req) {
                if (r == ROUTE__N) { r = p->calls[i].route; *var = p->calls[i].variant; }
                (*nseg)++;
            }
    return r;
}

/* A decode row (q = 1 or 5) at 240K next to a 784/816 chunk with prefix context. */
static const struct {
    int pdr, anypage, page, dq;
    kv_dtype_t kv;
    route_t a_route; kvariant_t a_var; int a_nseg;
    route_t b_route; kvariant_t b_var;
} cases[] = {
    /* baseline: everything on the prefill kernel; q=1 generic bm32/bn64; chunk fast at 784 */
    { 0, 0, 784, 1, KV_FP16, ROUTE_PREFILL_GENERIC, VAR_BM32_BN64, 1, ROUTE_PREFILL_BM32, VAR_BM32_BN128 },
    /* the fix: decode row expanded to the decode kernel */
    { 1, 0, 784, 1, KV_FP16, ROUTE_DECODE_XQA, VAR_NONE, 1, ROUTE_PREFILL_BM32, VAR_BM32_BN128 },
    /* MTP4 page 816: verify row q=5 on the low-smem generic; chunk falls to the slow path */
    { 0, 0, 816, 5, KV_FP16, ROUTE_PREFILL_GENERIC, VAR_BM16_BN128, 1, ROUTE_PREFILL_GENERIC, VAR_BM32_BN64 },
    { 1, 0, 816, 5, KV_FP16, ROUTE_DECODE_XQA, VAR_NONE, 5, ROUTE_PREFILL_GENERIC, VAR_BM32_BN64 },
    /* BM32_ANY_PAGE brings the chunk back to the fast path at 816 */
    { 1, 1, 816, 5, KV_FP16, ROUTE_DECODE_XQA, VAR_NONE, 5, ROUTE_PREFILL_BM32, VAR_BM32_BN128 },
    { 0, 1, 816, 5, KV_FP16, ROUTE_PREFILL_GENERIC, VAR_BM16_BN128, 1, ROUTE_PREFILL_BM32, VAR_BM32_BN128 },
    /* any-page needs a multiple of 16 */
    { 0, 1, 808, 1, KV_FP16, ROUTE_PREFILL_GENERIC, VAR_BM32_BN64, 1, ROUTE_PREFILL_GENERIC, VAR_BM32_BN64 },
    /* fp8: chunk takes the bridge (fp16 kernel at page 784 after expansion); q=1 dequantises in kernel */
    { 0, 0, 1568, 1, KV_FP8_E5M2, ROUTE_PREFILL_GENERIC, VAR_BM32_BN64, 1, ROUTE_FP8_BRIDGE, VAR_BM32_BN128 },
    { 1, 0, 1568, 1, KV_FP8_E5M2, ROUTE_DECODE_XQA, VAR_NONE, 1, ROUTE_FP8_BRIDGE, VAR_BM32_BN128 },
};

START_TEST(mixed_batch_routes)
{
    route_plan_t p;
    route_plan_init(&p);
    route_cfg_t c = cfg(cases[_i].pdr, cases[_i].anypage, cases[_i].page, cases[_i].kv);
    int dq = cases[_i].dq;
    kseg_t rows[2] = { { 0, dq, 240000 + dq }, { 1, cases[_i].page, 5 * cases[_i].page } };
    ck_assert_int_eq(route_step(&c, rows, 2, &p), 0);
    int n;
    kvariant_t v = VAR_NONE;
    ck_assert_int_eq(where(&p, 0, &n, &v), cases[_i].a_route);
    ck_assert_int_eq(v, cases[_i].a_var);
    ck_assert_int_eq(n, cases[_i].a_nseg);
    v = VAR_NONE;
    ck_assert_int_eq(where(&p, 1, &n, &v), cases[_i].b_route);
    ck_assert_int_eq(v, cases[_i].b_var);
    /* every query token in exactly one call */
    long q = 0;
    for (int i = 0; i < p.ncalls; i++)
        for (int k = 0; k < p.calls[i].nseg; k++) q += p.calls[i].segs[k].q;
    ck_assert_int_eq(q, dq + cases[_i].page);
    if (cases[_i].b_route == ROUTE_FP8_BRIDGE) {
        for (int i = 0; i < p.ncalls; i++)
            if (p.calls[i].route == ROUTE_FP8_BRIDGE) {
                ck_assert_int_eq(p.calls[i].page, 784);
                ck_assert_int_eq(p.calls[i].kv_dtype, KV_FP16);
                ck_assert_int_eq(p.calls[i].bridge_tokens, 5 * cases[_i].page);
            }
    }
    route_plan_free(&p);
}
END_TEST

START_TEST(small_q_batch_expands)
{
    /* every row q <= 16: the whole batch is one decode call, token-wise expanded */
    route_plan_t p;
    route_plan_init(&p);
    route_cfg_t c = cfg(0, 0, 816, KV_FP16);
    kseg_t rows[2] = { { 0, 5, 240005 }, { 1, 16, 1016 } };
    ck_assert_int_eq(route_step(&c, rows, 2, &p), 0);
    ck_assert_int_eq(p.ncalls, 1);
    ck_assert_int_eq(p.calls[0].route, ROUTE_DECODE_XQA);
    ck_assert_int_eq(p.calls[0].nseg, 21);
    for (int k = 0; k < 5; k++) {
        ck_assert_int_eq(p.calls[0].segs[k].q, 1);
        ck_assert_int_eq(p.calls[0].segs[k].seq_len, 240001 + k);   /* L-q+1 .. L */
    }
    ck_assert_int_eq(p.calls[0].segs[20].seq_len, 1016);
    /* group 1 (no GQA sharing) takes the scalar kernel */
    c.group = 1;
    ck_assert_int_eq(route_step(&c, rows, 2, &p), 0);
    ck_assert_int_eq(p.calls[0].route, ROUTE_DECODE_SCALAR);
    /* SMALLQ_DECODE_MAX_Q = 4: the q=5 row does not count as small */
    c = cfg(0, 0, 816, KV_FP16);
    c.smallq_max_q = 4;
    ck_assert_int_eq(route_step(&c, rows, 2, &p), 0);
    ck_assert_int_eq(p.ncalls, 2);
    ck_assert_int_eq(p.calls[0].route, ROUTE_PREFILL_GENERIC);
    route_plan_free(&p);
}
END_TEST

START_TEST(fresh_prompts_only)
{
    /* no row has context: one prefill call per row (rule 3), decode pull-out irrelevant */
    route_plan_t p;
    route_plan_init(&p);
    route_cfg_t c = cfg(1, 0, 784, KV_FP16);
    kseg_t rows[2] = { { 0, 784, 784 }, { 1, 100, 100 } };
    ck_assert_int_eq(route_step(&c, rows, 2, &p), 0);
    ck_assert_int_eq(p.ncalls, 2);
    ck_assert_int_eq(p.calls[0].route, ROUTE_PREFILL_BM32);
    ck_assert_int_eq(p.calls[1].route, ROUTE_PREFILL_BM32);
    route_plan_free(&p);
}
END_TEST

/* The reference fork's dispatch (route.h, fused_mha_forward_paged.cu): one row of q at
 * 240K context (or a chunk at 5 pages) and what it runs. */
static const struct {
    kv_dtype_t kv; int page, anypage, q;
    route_t route; kvariant_t var; int pipelined, call_page;
    kvariant_t own;              /* the variant of this repo's kernels (fork_kernels = 0) */
} fork_cases[] = {
    /* fp16: q = 1 generic; the MTP verify row and a slow-path chunk on the low-smem
     * kernel, pipelined only at page 784; the fast path at 784 or with ANY_PAGE */
    { KV_FP16, 816, 0, 1, ROUTE_PREFILL_GENERIC, VAR_BM32_BN64, 0, 816, VAR_BM32_BN64 },
    { KV_FP16, 816, 0, 5, ROUTE_PREFILL_GENERIC, VAR_BM16_BN128, 0, 816, VAR_BM16_BN128 },
    { KV_FP16, 784, 0, 5, ROUTE_PREFILL_GENERIC, VAR_BM16_BN128, 1, 784, VAR_BM16_BN128 },
    { KV_FP16, 816, 0, 816, ROUTE_PREFILL_GENERIC, VAR_BM16_BN128, 0, 816, VAR_BM32_BN64 },
    { KV_FP16, 816, 1, 816, ROUTE_PREFILL_BM32, VAR_BM32_BN128, 0, 816, VAR_BM32_BN128 },
    { KV_FP16, 784, 0, 784, ROUTE_PREFILL_BM32, VAR_BM32_BN128, 0, 784, VAR_BM32_BN128 },
    /* fp8: in-kernel rows always generic BM32/BN64; bridge chunks of q >= 1024 on the
     * split-D dense kernel, shorter ones on the BM32 phase kernel of the workspace */
    { KV_FP8_E5M2, 1568, 0, 5, ROUTE_PREFILL_GENERIC, VAR_BM32_BN64, 0, 1568, VAR_BM16_BN128 },
    { KV_FP8_E5M2, 1568, 0, 1568, ROUTE_FP8_BRIDGE, VAR_BM64_BN32, 0, 784, VAR_BM32_BN128 },
    { KV_FP8_E5M2, 1568, 0, 512, ROUTE_FP8_BRIDGE, VAR_BM32_BN128, 0, 784, VAR_BM32_BN128 },
};

START_TEST(fork_dispatch)
{
    route_plan_t p;
    route_plan_init(&p);
    route_cfg_t c = cfg(0, fork_cases[_i].anypage, fork_cases[_i].page, fork_cases[_i].kv);
    c.fork_kernels = 1;
    int q = fork_cases[_i].q;
    /* beside a chunk with context, so the row takes the per-sequence prefill loop */
    kseg_t rows[2] = { { 0, q, 240000 + q }, { 1, 784, 5 * 784 } };
    ck_assert_int_eq(route_step(&c, rows, 2, &p), 0);
    const kcall_t *k = &p.calls[0];
    ck_assert_int_eq(k->segs[0].req, 0);
    ck_assert_int_eq(k->route, fork_cases[_i].route);
    ck_assert_int_eq(k->variant, fork_cases[_i].var);
    ck_assert_int_eq(k->pipelined, fork_cases[_i].pipelined);
    ck_assert_int_eq(k->page, fork_cases[_i].call_page);
    /* this repo's kernels: a chunk off the fast path stays on generic BM32/BN64, fp8 rows
     * below 32 on the low-smem one, bridge chunks on the BM32 phase kernel */
    c.fork_kernels = 0;
    ck_assert_int_eq(route_step(&c, rows, 2, &p), 0);
    ck_assert_int_eq(p.calls[0].variant, fork_cases[_i].own);
    ck_assert_int_eq(p.calls[0].pipelined, 0);
    route_plan_free(&p);
}
END_TEST

/* flash_attn_v100.py's XQA gates: group, longest context, dtype, and which call */
static const struct { kv_dtype_t kv; int group; long maxlen; int smallq, xqa; } xqa_cases[] = {
    { KV_FP16, 6, 1, 0, 1 },            /* uniform / decode rows, fp16: no length gate */
    { KV_FP16, 8, 1, 0, 1 },
    { KV_FP16, 2, 240000, 0, 0 },       /* groups other than 6, 8 (4 from 32K): scalar */
    { KV_FP16, 4, 32767, 0, 0 },
    { KV_FP16, 4, 32768, 0, 1 },
    { KV_FP16, 6, 4095, 1, 0 },         /* small-q batch: from 4096 tokens */
    { KV_FP16, 6, 4096, 1, 1 },
    { KV_FP16, 4, 240000, 1, 0 },       /* small-q batch: groups 6 and 8 only */
    { KV_FP8_E5M2, 6, 16383, 0, 0 },    /* fp8_e5m2: from 16384 tokens, never group 4 */
    { KV_FP8_E5M2, 6, 16384, 0, 1 },
    { KV_FP8_E5M2, 4, 240000, 0, 0 },
    { KV_FP8_E5M2, 6, 8192, 1, 0 },
    { KV_FP8_E5M2, 6, 16384, 1, 1 },
    { KV_FP8_E4M3, 6, 240000, 0, 0 },   /* fp8_e4m3: the fork's XQA reads e5m2 only: scalar */
    { KV_FP8_E4M3, 8, 240000, 1, 0 },
};

START_TEST(xqa_gates)
{
    route_cfg_t c = cfg(0, 0, 784, xqa_cases[_i].kv);
    c.group = xqa_cases[_i].group;
    ck_assert_int_eq(route_decode_xqa(&c, xqa_cases[_i].maxlen, xqa_cases[_i].smallq), xqa_cases[_i].xqa);
}
END_TEST

/* docs/reference-system.md, "Block size and chunk alignment": 784 / 816 / 1568 / 1616 for the
 * reference model at TP2 */
START_TEST(block_sizes)
{
    model_t m;
    char err[SCN_ERR_MAX];
    ck_assert_msg(scn_load_model("models/qwen3.8-27b.yaml", &m, err) == 0, "%s", err);
    ck_assert_int_eq(model_gdn_page_bytes(&m, 2, 0), 1603584);
    ck_assert_int_eq(model_attn_bytes_per_token(&m, 2, 2), 2048);
    ck_assert_int_eq(model_block_size(&m, 2, 2, 0), 784);
    ck_assert_int_eq(model_block_size(&m, 2, 2, 4), 816);
    ck_assert_int_eq(model_block_size(&m, 2, 1, 0), 1568);
    ck_assert_int_eq(model_block_size(&m, 2, 1, 5), 1616);
    model_rank_t r;
    ck_assert_int_eq(model_rank(&m, 2, &r), 0);
    ck_assert_int_eq(r.q_heads, 12);
    ck_assert_int_eq(r.kv_heads, 2);
    ck_assert_int_eq(r.group, 6);
    ck_assert_int_eq(r.gdn_v_heads, 24);
    ck_assert_int_eq(model_rank(&m, 4, &r), 0);
    ck_assert_int_eq(r.q_heads, 6);
    ck_assert_int_eq(r.kv_heads, 1);
    ck_assert_int_eq(model_rank(&m, 5, &r), -1);
}
END_TEST

/* attention_backend varlen (rule 0): a mixed batch -- decode rows, MTP rows and chunks,
 * with and without context -- is ONE call holding every row as it is (no expansion), for
 * any dtype and knob. */
START_TEST(varlen_one_call)
{
    const kseg_t rows[] = { { 0, 1, 240001 }, { 1, 5, 4000 }, { 2, 2048, 2048 }, { 3, 700, 9000 } };
    const kv_dtype_t kvs[] = { KV_FP16, KV_FP8_E5M2, KV_FP8_E4M3 };
    for (int k = 0; k < 3; k++)
        for (int pdr = 0; pdr < 2; pdr++) {
            route_cfg_t c = cfg(pdr, 0, 16, kvs[k]);
            c.varlen = 1;
            route_plan_t p;
            route_plan_init(&p);
            ck_assert_int_eq(route_step(&c, rows, 4, &p), 0);
            ck_assert_int_eq(p.ncalls, 1);
            ck_assert_int_eq(p.calls[0].route, ROUTE_VARLEN);
            ck_assert_int_eq(p.calls[0].kv_dtype, kvs[k]);
            ck_assert_int_eq(p.calls[0].nseg, 4);
            for (int i = 0; i < 4; i++) {
                ck_assert_int_eq(p.calls[0].segs[i].req, rows[i].req);
                ck_assert_int_eq(p.calls[0].segs[i].q, rows[i].q);
                ck_assert_int_eq(p.calls[0].segs[i].seq_len, rows[i].seq_len);
            }
            route_plan_free(&p);
        }
}
END_TEST

/* A model without GDN layers: block 16 for every dtype, TP and MTP depth. */
START_TEST(dense_block_16)
{
    model_t m;
    char err[SCN_ERR_MAX];
    ck_assert_msg(scn_load_model("models/llama-3.1-8b.yaml", &m, err) == 0, "%s", err);
    for (int tp = 1; tp <= 8; tp *= 2)
        for (int kvb = 1; kvb <= 2; kvb++)
            for (int k = 0; k <= 4; k += 4) ck_assert_int_eq(model_block_size(&m, tp, kvb, k), 16);
}
END_TEST

int main(void)
{
    const check_test_t tests[] = {
        CHECK_LOOP(mixed_batch_routes, CHECK_N(cases)), CHECK_TEST(small_q_batch_expands),
        CHECK_TEST(fresh_prompts_only), CHECK_LOOP(fork_dispatch, CHECK_N(fork_cases)),
        CHECK_LOOP(xqa_gates, CHECK_N(xqa_cases)), CHECK_TEST(block_sizes), CHECK_TEST(varlen_one_call),
        CHECK_TEST(dense_block_16)};
    return check_main("route", "core", tests, CHECK_N(tests), 0, NULL);
}
