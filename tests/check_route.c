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

int main(void)
{
    Suite *s = suite_create("route");
    TCase *tc = tcase_create("core");
    tcase_add_loop_test(tc, mixed_batch_routes, 0, (int)(sizeof cases / sizeof *cases));
    tcase_add_test(tc, small_q_batch_expands);
    tcase_add_test(tc, fresh_prompts_only);
    tcase_add_test(tc, block_sizes);
    suite_add_tcase(s, tc);
    return check_run(s);
}
