/* check_kvpool: the prefix-cache block pool against the behaviours vLLM's own tests pin
 * down (tests/v1/core/test_prefix_caching.py, the fork's test_prefix_cache_retention.py):
 * hits after a shared prefix, partial blocks never cached, LRU eviction with a
 * sequence's tail first, reference counts, the last token always recomputed, hybrid
 * attention + Mamba groups in align mode, the retention interval, pool exhaustion, and
 * the memory bound.  Block ids here count from 0 (vLLM's test ids are ours + 1: its
 * block 0 is the null block). */
#include <check.h>
#include "check_run.h"
#include <stdlib.h>
#include <string.h>
#include "kvpool.h"

#define BS 16
#define K_COMMON 1000u
#define K_REQ(i) (2000u + (uint64_t)(i))

static kvpool_t *attn_pool(long nblocks)
{
    kvpool_cfg_t c = kvpool_cfg_hybrid(nblocks, BS, 0);
    kvpool_t *p = kvpool_create(&c);
    ck_assert_ptr_nonnull(p);
    return p;
}

static kvpool_t *hybrid_pool(long nblocks, int n_mamba, long retention)
{
    kvpool_cfg_t c = kvpool_cfg_hybrid(nblocks, BS, n_mamba);
    c.retention = retention;
    kvpool_t *p = kvpool_create(&c);
    ck_assert_ptr_nonnull(p);
    return p;
}

/* A sequence of `common` shared tokens then `own` tokens of request `id` (outputs
 * continue the request's own stream). */
static kvpool_seq_t *seq2(kvpool_t *p, long common, int id, long own)
{
    kvpool_run_t r[2] = { { K_COMMON, 0, common }, { K_REQ(id), 0, own } };
    kvpool_content_t c = { r, 2, K_REQ(id), own };
    kvpool_seq_t *s = kvpool_seq_new(p, &c, common + own);
    ck_assert_ptr_nonnull(s);
    return s;
}

/* A sequence whose tokens are [start, start + len) of stream `key`. */
static kvpool_seq_t *seq_span(kvpool_t *p, uint64_t key, long start, long len)
{
    kvpool_run_t r = { key, start, len };
    kvpool_content_t c = { &r, 1, key, start + len };
    kvpool_seq_t *s = kvpool_seq_new(p, &c, len);
    ck_assert_ptr_nonnull(s);
    return s;
}

static void assert_ok(const kvpool_t *p)
{
    const char *what = NULL;
    int rc = kvpool_check(p, &what);
    ck_assert_msg(rc == 0, "pool invariant broken: %s", what ? what : "?");
}

/* Admit s with its whole prompt in one allocation; returns the hit. */
static long admit(kvpool_t *p, kvpool_seq_t *s, long prompt)
{
    long hit = kvpool_lookup(p, s, prompt);
    ck_assert_int_ge(hit, 0);
    ck_assert_int_eq(kvpool_allocate(p, s, hit, prompt, 0, prompt), 0);
    return hit;
}

/* Chunked prefill, one step per chunk, every chunk ending on a block boundary or the
 * prompt's end (align mode); *seen marks every block id the sequence held. */
static long prefill(kvpool_t *p, kvpool_seq_t *s, long prompt, char *seen)
{
    long hit = kvpool_lookup(p, s, prompt);
    ck_assert_int_ge(hit, 0);
    for (long pos = hit; pos < prompt;) {
        kvpool_step_begin(p);
        long end = (pos / BS + 1) * BS;
        if (end > prompt) end = prompt;
        ck_assert_int_eq(kvpool_allocate(p, s, pos, end, 0, prompt), 0);
        if (seen)
            for (int g = 0; g < 4; g++) {
                int32_t ids[256];
                long n = kvpool_seq_table(s, g, NULL, ids, 256);
                for (long i = 0; i < n && i < 256; i++) seen[ids[i]] = 1;
            }
        pos = end;
        assert_ok(p);
    }
    return hit;
}

static void assert_table(const kvpool_seq_t *s, int g, const int32_t *want, long n)
{
    int32_t ids[64];
    long got = kvpool_seq_table(s, g, NULL, ids, 64);
    ck_assert_int_eq(got, n);
    for (long i = 0; i < n; i++) ck_assert_int_eq(ids[i], want[i]);
}

static void assert_free_order(const kvpool_t *p, const int32_t *want, long n)
{
    int32_t ids[256];
    long got = kvpool_free_order(p, ids, 256);
    ck_assert_int_eq(got, n);
    for (long i = 0; i < n; i++) ck_assert_msg(ids[i] == want[i], "free queue[%ld] = %d, want %d", i, ids[i], want[i]);
}

static kvpool_stats_t stats(const kvpool_t *p)
{
    kvpool_stats_t st;
    kvpool_get_stats(p, &st);
    return st;
}

/* Hashes name token identities, not how the runs are cut; a shared system prompt of
 * 8000 tokens gives equal hashes for its floor(8000 / block) whole blocks only. */
START_TEST(hash_identity)
{
    kvpool_run_t one[] = { { 7, 0, 40 } };
    kvpool_run_t split[] = { { 7, 0, 10 }, { 7, 10, 0 }, { 7, 10, 30 } };
    kvpool_run_t other[] = { { 7, 0, 10 }, { 8, 10, 30 } };
    kvpool_content_t a = { one, 1, 9, 0 }, b = { split, 3, 9, 0 }, c = { other, 2, 9, 0 };
    for (long blk = 0; blk < 4; blk++)
        ck_assert(kvpool_content_block_hash(&a, BS, blk) == kvpool_content_block_hash(&b, BS, blk));
    ck_assert(kvpool_content_block_hash(&a, BS, 0) != kvpool_content_block_hash(&c, BS, 0));
    /* chained: block 1 differs once block 0 does, even with equal own tokens */
    kvpool_run_t x[] = { { 5, 0, 16 }, { 6, 0, 16 } }, y[] = { { 4, 0, 16 }, { 6, 0, 16 } };
    kvpool_content_t cx = { x, 2, 0, 0 }, cy = { y, 2, 0, 0 };
    ck_assert(kvpool_content_block_hash(&cx, BS, 1) != kvpool_content_block_hash(&cy, BS, 1));

    int bs = 784;
    kvpool_run_t r1[] = { { K_COMMON, 0, 8000 }, { K_REQ(1), 0, 500 } };
    kvpool_run_t r2[] = { { K_COMMON, 0, 8000 }, { K_REQ(2), 0, 900 } };
    kvpool_content_t c1 = { r1, 2, K_REQ(1), 500 }, c2 = { r2, 2, K_REQ(2), 900 };
    long shared = 8000 / bs;
    for (long blk = 0; blk < shared; blk++)
        ck_assert(kvpool_content_block_hash(&c1, bs, blk) == kvpool_content_block_hash(&c2, bs, blk));
    ck_assert(kvpool_content_block_hash(&c1, bs, shared) != kvpool_content_block_hash(&c2, bs, shared));
}
END_TEST

/* vLLM test_prefill: a hit on a shared prefix while its owner runs and after it left;
 * the free queue's order after both release; a long miss evicts in that order. */
START_TEST(prefill_shared_prefix)
{
    kvpool_t *p = attn_pool(10);
    kvpool_seq_t *r0 = seq2(p, 48, 0, 7);
    ck_assert_int_eq(admit(p, r0, 55), 0);
    assert_table(r0, 0, (int32_t[]){ 0, 1, 2, 3 }, 4);
    for (int32_t b = 0; b < 3; b++) {
        ck_assert_int_eq(kvpool_block_hashed(p, b), 1);
        ck_assert_int_eq(kvpool_block_ref(p, b), 1);
    }
    ck_assert_int_eq(kvpool_block_hashed(p, 3), 0);   /* partial block */

    kvpool_seq_t *r1 = seq2(p, 48, 1, 5);
    ck_assert_int_eq(admit(p, r1, 53), 48);
    assert_table(r1, 0, (int32_t[]){ 0, 1, 2, 4 }, 4);
    for (int32_t b = 0; b < 3; b++) ck_assert_int_eq(kvpool_block_ref(p, b), 2);
    ck_assert_int_eq(stats(p).free_blocks, 5);

    kvpool_release(p, r0);
    kvpool_release(p, r1);
    ck_assert_int_eq(stats(p).free_blocks, 10);
    assert_free_order(p, (int32_t[]){ 5, 6, 7, 8, 9, 3, 4, 2, 1, 0 }, 10);

    kvpool_seq_t *r2 = seq2(p, 48, 2, 6);
    ck_assert_int_eq(admit(p, r2, 54), 48);            /* the owners left: still cached */
    assert_table(r2, 0, (int32_t[]){ 0, 1, 2, 5 }, 4);
    ck_assert_int_eq(stats(p).free_blocks, 6);
    kvpool_release(p, r2);

    kvpool_seq_t *r3 = seq_span(p, K_REQ(3), 0, 160);
    ck_assert_int_eq(admit(p, r3, 160), 0);
    assert_table(r3, 0, (int32_t[]){ 6, 7, 8, 9, 3, 4, 5, 2, 1, 0 }, 10);
    kvpool_stats_t st = stats(p);
    ck_assert_int_eq(st.free_blocks, 0);
    ck_assert_int_eq(st.evictions, 3);                /* the common prefix's three blocks */
    ck_assert_int_eq(st.queries, 4);
    ck_assert_int_eq(st.hit_tokens, 96);
    assert_ok(p);
    kvpool_seq_free(p, r0); kvpool_seq_free(p, r1); kvpool_seq_free(p, r2); kvpool_seq_free(p, r3);
    kvpool_free(p);
}
END_TEST

/* vLLM test_decode and test_hash_block_correct_reuse: a block is hashed only once full
 * of final tokens; a cached block reused for a partial one loses its hash. */
START_TEST(partial_blocks_never_cached)
{
    kvpool_t *p = attn_pool(11);
    kvpool_seq_t *s = seq2(p, 48, 0, 7);
    admit(p, s, 55);
    ck_assert_int_eq(kvpool_allocate(p, s, 55, 59, 0, 59), 0);    /* 4 decode tokens */
    int32_t ids[8];
    ck_assert_int_eq(kvpool_seq_table(s, 0, NULL, ids, 8), 4);
    ck_assert_int_eq(kvpool_block_hashed(p, ids[3]), 0);
    ck_assert_int_eq(kvpool_allocate(p, s, 59, 78, 0, 78), 0);    /* fills block 3, 14 into block 4 */
    ck_assert_int_eq(kvpool_seq_table(s, 0, NULL, ids, 8), 5);
    ck_assert_int_eq(kvpool_block_hashed(p, ids[3]), 1);
    ck_assert_int_eq(kvpool_block_hashed(p, ids[4]), 0);
    /* draft tokens beyond `known` are never committed */
    ck_assert_int_eq(kvpool_allocate(p, s, 78, 84, 2, 79), 0);
    ck_assert_int_eq(kvpool_seq_table(s, 0, NULL, ids, 8), 6);     /* 84 + 2 lookahead slots */
    ck_assert_int_eq(kvpool_block_hashed(p, ids[4]), 0);
    kvpool_seq_free(p, s);
    assert_ok(p);
    kvpool_free(p);

    p = attn_pool(2);
    s = seq_span(p, 5, 0, 16);
    admit(p, s, 16);
    ck_assert_int_eq(kvpool_seq_table(s, 0, NULL, ids, 8), 1);
    int32_t first = ids[0];
    kvpool_release(p, s);
    ck_assert_int_eq(kvpool_block_hashed(p, first), 1);           /* cached while free */
    kvpool_seq_t *t = seq_span(p, 6, 0, 15);
    kvpool_seq_t *u = seq_span(p, 7, 0, 15);
    admit(p, t, 15);
    admit(p, u, 15);                                             /* takes the cached block */
    ck_assert_int_eq(kvpool_block_hashed(p, first), 0);
    ck_assert_int_eq(stats(p).evictions, 1);
    ck_assert_int_eq(stats(p).cached, 0);
    kvpool_seq_free(p, s); kvpool_seq_free(p, t); kvpool_seq_free(p, u);
    kvpool_free(p);
}
END_TEST

/* vLLM test_evict: the oldest free blocks go first and, within one sequence, its tail
 * before its head; a hit then takes blocks out of the middle of the queue. */
START_TEST(eviction_order_lru)
{
    kvpool_t *p = attn_pool(10);
    kvpool_seq_t *r0 = seq_span(p, 1, 0, 87);              /* 5 full blocks + 7 tokens */
    kvpool_seq_t *r1 = seq_span(p, 1, 87, 48);             /* 3 full blocks */
    admit(p, r0, 87);
    admit(p, r1, 48);
    ck_assert_int_eq(stats(p).free_blocks, 1);
    kvpool_release(p, r0);
    kvpool_release(p, r1);
    assert_free_order(p, (int32_t[]){ 9, 5, 4, 3, 2, 1, 0, 8, 7, 6 }, 10);

    kvpool_seq_t *r2 = seq_span(p, 1, 0, 35);              /* r0's first 35 tokens */
    ck_assert_int_eq(admit(p, r2, 35), 32);
    assert_table(r2, 0, (int32_t[]){ 0, 1, 9 }, 3);
    ck_assert_int_eq(stats(p).free_blocks, 7);
    assert_free_order(p, (int32_t[]){ 5, 4, 3, 2, 8, 7, 6 }, 7);
    ck_assert_int_eq(stats(p).evictions, 0);
    assert_ok(p);
    kvpool_seq_free(p, r0); kvpool_seq_free(p, r1); kvpool_seq_free(p, r2);
    kvpool_free(p);
}
END_TEST

/* A block two running sequences share has ref 2 and is never handed out; it returns
 * to the queue, still cached, only when both have released it. */
START_TEST(shared_block_refcount)
{
    kvpool_t *p = attn_pool(8);
    kvpool_seq_t *a = seq2(p, 32, 0, 8), *b = seq2(p, 32, 1, 8);
    admit(p, a, 40);
    ck_assert_int_eq(admit(p, b, 40), 32);
    ck_assert_int_eq(kvpool_block_ref(p, 0), 2);
    ck_assert_int_eq(kvpool_block_ref(p, 1), 2);
    kvpool_release(p, a);
    ck_assert_int_eq(kvpool_block_ref(p, 0), 1);
    int32_t q[16];
    long n = kvpool_free_order(p, q, 16);
    for (long i = 0; i < n; i++) ck_assert(q[i] != 0 && q[i] != 1);
    /* a miss that takes every free block cannot touch them */
    kvpool_seq_t *c = seq_span(p, 9, 0, n * BS);
    admit(p, c, n * BS);
    ck_assert_int_eq(stats(p).free_blocks, 0);
    ck_assert_int_eq(kvpool_block_ref(p, 0), 1);
    ck_assert_int_eq(kvpool_block_hashed(p, 0), 1);
    kvpool_release(p, c);
    kvpool_release(p, b);
    ck_assert_int_eq(kvpool_block_ref(p, 0), 0);
    ck_assert_int_eq(kvpool_block_hashed(p, 0), 1);
    kvpool_stats_t st = stats(p);
    ck_assert_int_eq(st.free_blocks, 8);
    ck_assert_int_ge(st.cached_free, 2);
    ck_assert_int_eq(st.in_use[KVPOOL_ATTN], 0);
    assert_ok(p);
    kvpool_seq_free(p, a); kvpool_seq_free(p, b); kvpool_seq_free(p, c);
    kvpool_free(p);
}
END_TEST

/* vLLM test_computed_blocks_not_evicted: a hit's block leaves the free queue, so the
 * allocation that follows evicts another block instead. */
START_TEST(hit_keeps_block_alive)
{
    kvpool_t *p = attn_pool(2);
    kvpool_seq_t *r0 = seq_span(p, 3, 0, 16), *r1 = seq_span(p, 3, 16, 16);
    admit(p, r0, 16);
    admit(p, r1, 16);
    assert_table(r0, 0, (int32_t[]){ 0 }, 1);
    assert_table(r1, 0, (int32_t[]){ 1 }, 1);
    kvpool_release(p, r0);
    kvpool_release(p, r1);
    kvpool_seq_t *r2 = seq_span(p, 3, 0, 32);
    ck_assert_int_eq(admit(p, r2, 32), 16);
    assert_table(r2, 0, (int32_t[]){ 0, 1 }, 2);
    ck_assert_int_eq(stats(p).evictions, 1);              /* block 1 lost r1's hash */
    ck_assert_int_eq(kvpool_block_hashed(p, 0), 1);
    kvpool_seq_free(p, r0); kvpool_seq_free(p, r1); kvpool_seq_free(p, r2);
    kvpool_free(p);
}
END_TEST

/* get_computed_blocks caps the hit at num_tokens - 1: a fully cached prompt recomputes
 * its last block; with a drafter (eagle) one more block is dropped. */
START_TEST(full_prompt_hit_leaves_one_token)
{
    for (int eagle = 0; eagle <= 1; eagle++) {
        kvpool_cfg_t c = kvpool_cfg_hybrid(20, BS, 0);
        c.eagle = eagle;
        kvpool_t *p = kvpool_create(&c);
        kvpool_seq_t *a = seq_span(p, 4, 0, 48);
        admit(p, a, 48);
        kvpool_release(p, a);
        kvpool_seq_t *same = seq_span(p, 4, 0, 48);
        ck_assert_int_eq(kvpool_lookup(p, same, 48), eagle ? 16 : 32);
        kvpool_seq_t *longer = seq_span(p, 4, 0, 49);
        ck_assert_int_eq(kvpool_lookup(p, longer, 49), eagle ? 32 : 48);
        kvpool_seq_t *one = seq_span(p, 4, 0, 1);
        ck_assert_int_eq(kvpool_lookup(p, one, 1), 0);
        kvpool_seq_free(p, a); kvpool_seq_free(p, same); kvpool_seq_free(p, longer); kvpool_seq_free(p, one);
        kvpool_free(p);
    }
}
END_TEST

/* A preempted sequence re-admitted hits its own blocks, outputs included; a later turn
 * of a conversation hits the earlier turn's prompt and outputs. */
START_TEST(outputs_and_turns_hit)
{
    kvpool_t *p = attn_pool(32);
    kvpool_run_t t1[] = { { K_COMMON, 0, 20 }, { 77, 0, 20 } };
    kvpool_content_t c1 = { t1, 2, 77, 20 };
    kvpool_seq_t *s = kvpool_seq_new(p, &c1, 40);
    admit(p, s, 40);
    for (long n = 40; n < 70; n++) ck_assert_int_eq(kvpool_allocate(p, s, n, n + 1, 0, n + 1), 0);
    kvpool_release(p, s);                                 /* preempted after 30 outputs */
    ck_assert_int_eq(kvpool_lookup(p, s, 70), 64);
    ck_assert_int_eq(kvpool_allocate(p, s, 64, 70, 0, 70), 0);
    kvpool_release(p, s);
    kvpool_run_t t2[] = { { K_COMMON, 0, 20 }, { 77, 0, 50 }, { 78, 0, 12 } };
    kvpool_content_t c2 = { t2, 3, 78, 12 };
    kvpool_seq_t *turn2 = kvpool_seq_new(p, &c2, 82);
    ck_assert_int_eq(kvpool_lookup(p, turn2, 82), 64);
    kvpool_seq_free(p, s); kvpool_seq_free(p, turn2);
    kvpool_free(p);
}
END_TEST

/* Align mode: each boundary snapshots into a fresh block; the superseded snapshot is
 * freed (hashed, dense) to the queue's tail at the next allocation, so a sequence holds
 * at most two state blocks per Mamba group. */
START_TEST(hybrid_align_snapshots)
{
    kvpool_t *p = hybrid_pool(40, 1, KVPOOL_RETAIN_ALL);
    kvpool_seq_t *s = seq_span(p, 6, 0, 103);
    kvpool_lookup(p, s, 103);
    long pos[8];
    int32_t ids[8], prev_state = -1;
    for (long at = 0; at < 103;) {
        kvpool_step_begin(p);
        long end = at + BS < 103 ? at + BS : 103;
        ck_assert_int_eq(kvpool_allocate(p, s, at, end, 0, 103), 0);
        long n = kvpool_seq_table(s, 0, pos, ids, 8);
        ck_assert_int_le(n, 2);
        ck_assert_int_eq(pos[n - 1], (end + BS - 1) / BS - 1);   /* the running state */
        if (prev_state >= 0 && n == 2) ck_assert_int_eq(ids[0], prev_state);
        if (at >= 2 * BS) {                                      /* the one before is free, hashed, at the tail */
            int32_t q[64];
            long nq = kvpool_free_order(p, q, 64);
            ck_assert_int_eq(kvpool_block_ref(p, q[nq - 1]), 0);
            ck_assert_int_eq(kvpool_block_hashed(p, q[nq - 1]), 1);
        }
        prev_state = ids[n - 1];
        at = end;
        assert_ok(p);
    }
    kvpool_stats_t st = stats(p);
    ck_assert_int_eq(st.in_use[KVPOOL_MAMBA], 2);
    ck_assert_int_eq(st.in_use[KVPOOL_ATTN], 7);
    ck_assert_int_eq(st.cached, 6 + 6);                    /* 6 attention blocks, 6 snapshots */

    /* a hit needs both: attention blocks and a snapshot at that boundary */
    kvpool_release(p, s);
    kvpool_seq_t *again = seq_span(p, 6, 0, 103);
    ck_assert_int_eq(kvpool_lookup(p, again, 103), 96);
    kvpool_seq_t *half = seq_span(p, 6, 0, 60);             /* 3 attention blocks, snapshot at 48 */
    ck_assert_int_eq(kvpool_lookup(p, half, 60), 48);

    /* release order: groups in order (Mamba first), each reversed */
    kvpool_t *q = hybrid_pool(8, 1, KVPOOL_RETAIN_ALL);
    kvpool_seq_t *r = seq_span(q, 9, 0, 40);
    admit(q, r, 40);
    assert_table(r, 0, (int32_t[]){ 0 }, 1);
    assert_table(r, 1, (int32_t[]){ 1, 2, 3 }, 3);
    kvpool_release(q, r);
    assert_free_order(q, (int32_t[]){ 4, 5, 6, 7, 0, 3, 2, 1 }, 8);
    kvpool_seq_free(q, r);
    kvpool_free(q);

    kvpool_seq_free(p, s); kvpool_seq_free(p, again); kvpool_seq_free(p, half);
    kvpool_free(p);
}
END_TEST

/* Mamba's hit cannot use a snapshot another sequence committed in this very step
 * (its state is written by the step in flight): the allocation waits a step. */
START_TEST(hybrid_snapshot_same_step_defers)
{
    kvpool_t *p = hybrid_pool(40, 1, KVPOOL_RETAIN_ALL);
    kvpool_seq_t *a = seq_span(p, 6, 0, 33), *b = seq_span(p, 6, 0, 33);
    kvpool_step_begin(p);
    kvpool_lookup(p, a, 33);
    ck_assert_int_eq(kvpool_allocate(p, a, 0, 16, 0, 33), 0);
    ck_assert_int_eq(kvpool_lookup(p, b, 33), 16);
    kvpool_stats_t before = stats(p);
    ck_assert_int_eq(kvpool_allocate(p, b, 16, 32, 0, 33), KVPOOL_DEFER);
    kvpool_stats_t after = stats(p);
    ck_assert_int_eq(after.free_blocks, before.free_blocks);
    ck_assert_int_eq(kvpool_seq_blocks(b), 0);
    kvpool_step_begin(p);
    ck_assert_int_eq(kvpool_lookup(p, b, 33), 16);
    ck_assert_int_eq(kvpool_allocate(p, b, 16, 32, 0, 33), 0);
    int32_t ids[4];
    long pos[4];
    ck_assert_int_eq(kvpool_seq_table(b, 0, pos, ids, 4), 2);
    ck_assert_int_eq(pos[0], 0);
    ck_assert_int_eq(kvpool_block_ref(p, ids[0]), 2);     /* a's state at 16, shared */
    assert_ok(p);
    kvpool_seq_free(p, a); kvpool_seq_free(p, b);
    kvpool_free(p);
}
END_TEST

/* MambaSpec.num_speculative_blocks: blocks after the running state move along with it;
 * a sequence holds spec + 2 state blocks at most. */
START_TEST(hybrid_spec_blocks)
{
    kvpool_cfg_t c = kvpool_cfg_hybrid(40, BS, 1);
    c.mamba_spec_blocks = 1;
    kvpool_t *p = kvpool_create(&c);
    kvpool_seq_t *s = seq_span(p, 6, 0, 64);
    long pos[8];
    kvpool_lookup(p, s, 64);
    ck_assert_int_eq(kvpool_allocate(p, s, 0, 16, 0, 64), 0);
    ck_assert_int_eq(kvpool_seq_table(s, 0, pos, NULL, 8), 2);
    ck_assert_int_eq(pos[0], 0); ck_assert_int_eq(pos[1], 1);
    ck_assert_int_eq(kvpool_allocate(p, s, 16, 32, 0, 64), 0);
    ck_assert_int_eq(kvpool_seq_table(s, 0, pos, NULL, 8), 3);
    ck_assert_int_eq(pos[2], 2);
    ck_assert_int_eq(kvpool_allocate(p, s, 32, 48, 0, 64), 0);
    ck_assert_int_eq(kvpool_seq_table(s, 0, pos, NULL, 8), 3);
    ck_assert_int_eq(pos[0], 1); ck_assert_int_eq(pos[2], 3);
    assert_ok(p);
    kvpool_seq_free(p, s);
    kvpool_free(p);
}
END_TEST

/* With a drafter, a resend resumes one block earlier (attention drops its last matched
 * block, the Mamba search starts one block before), and retention 0 keeps the snapshot
 * at num_prompt_tokens - 1 - block for it: without it the resend would miss. */
START_TEST(hybrid_eagle_resend)
{
    for (int k = 0; k < 2; k++) {
        kvpool_cfg_t c = kvpool_cfg_hybrid(40, BS, 1);
        c.eagle = 1;
        c.retention = k ? 0 : KVPOOL_RETAIN_ALL;
        kvpool_t *p = kvpool_create(&c);
        ck_assert_ptr_nonnull(p);
        kvpool_seq_t *s = seq_span(p, 6, 0, 103);
        prefill(p, s, 103, NULL);
        ck_assert_int_eq(stats(p).cached - 6, k ? 2 : 6);    /* retention 0: blocks 4 and 5 */
        kvpool_release(p, s);
        kvpool_seq_t *again = seq_span(p, 6, 0, 103);
        ck_assert_int_eq(kvpool_lookup(p, again, 103), 80);
        kvpool_seq_free(p, s); kvpool_seq_free(p, again);
        kvpool_free(p);
    }
}
END_TEST

/* Caching off and the state held for a sequence's life (mamba_cache_mode none): a
 * sequence holds cdiv(tokens + lookahead, block) attention blocks plus one block per
 * Mamba group, the accounting sim/sched.c's blocks_for() uses today. */
START_TEST(count_model_equivalence)
{
    kvpool_cfg_t c = kvpool_cfg_hybrid(200, BS, 3);
    c.enable_caching = 0;
    c.mamba_align = 0;
    kvpool_t *p = kvpool_create(&c);
    ck_assert_ptr_nonnull(p);
    kvpool_seq_t *s[3];
    long have[3] = { 0 }, total = 0;
    for (int i = 0; i < 3; i++) s[i] = seq_span(p, (uint64_t)i, 0, 1000);
    unsigned rng = 7;
    for (int step = 0; step < 300; step++) {
        int i = step % 3;
        rng = rng * 1103515245u + 12345u;
        long grow = 1 + (long)((rng >> 16) % 40), la = (long)((rng >> 8) % 3);
        long held_before = kvpool_seq_blocks(s[i]);
        int rc = kvpool_allocate(p, s[i], have[i], have[i] + grow, la, have[i] + grow);
        long want = (have[i] + grow + la + BS - 1) / BS + 3;
        if (want < held_before) want = held_before;     /* blocks never shrink while held */
        if (rc == KVPOOL_SHORT) {
            ck_assert_int_gt(total - held_before + want, 200);
            kvpool_release(p, s[i]);                    /* preempted: starts over */
            total -= held_before;
            have[i] = 0;
            continue;
        }
        ck_assert_int_eq(rc, 0);
        ck_assert_int_eq(kvpool_seq_blocks(s[i]), want);
        total += want - held_before;
        have[i] += grow;
        kvpool_stats_t st = stats(p);
        ck_assert_int_eq(st.in_use[KVPOOL_ATTN] + st.in_use[KVPOOL_MAMBA], total);
        ck_assert_int_eq(st.free_blocks, 200 - total);
        ck_assert_int_eq(st.cached, 0);
    }
    for (int i = 0; i < 3; i++) kvpool_seq_free(p, s[i]);
    assert_ok(p);
    kvpool_free(p);
}
END_TEST

/* The fork's test_mamba_align_retention_end_to_end: a 103-token prompt prefilled in
 * 16-token chunks keeps 6 / 1 / 3 snapshots hashed under None / 0 / 32; a resend hits
 * 96 in every case; a sibling sharing 48 tokens resumes at 48 / 0 / 32. */
static const struct { long iv, snapshots, sibling; } retention_cases[] = {
    { KVPOOL_RETAIN_ALL, 6, 48 },
    { 0, 1, 0 },
    { 32, 3, 32 },
    { 16, 6, 48 },                /* an interval of one block is dense */
};

START_TEST(retention_interval)
{
    long iv = retention_cases[_i].iv;
    kvpool_t *p = hybrid_pool(40, 1, iv);
    kvpool_run_t full = { 6, 0, 103 };
    kvpool_content_t cf = { &full, 1, 6, 103 };
    kvpool_seq_t *s = kvpool_seq_new(p, &cf, 103);
    ck_assert_int_eq(prefill(p, s, 103, NULL), 0);
    ck_assert_int_eq(stats(p).cached - 6, retention_cases[_i].snapshots);
    kvpool_release(p, s);
    kvpool_seq_t *again = kvpool_seq_new(p, &cf, 103);
    ck_assert_int_eq(kvpool_lookup(p, again, 103), 96);
    kvpool_run_t sib[] = { { 6, 0, 48 }, { 60, 0, 20 } };
    kvpool_content_t cs = { sib, 2, 60, 20 };
    kvpool_seq_t *sibling = kvpool_seq_new(p, &cs, 68);
    ck_assert_int_eq(kvpool_lookup(p, sibling, 68), retention_cases[_i].sibling);
    assert_ok(p);
    kvpool_seq_free(p, s); kvpool_seq_free(p, again); kvpool_seq_free(p, sibling);
    kvpool_free(p);
}
END_TEST

/* Retention 0 on a block-aligned prompt keeps both reachable boundaries (a resend
 * resumes at P - 1, an extension at P); unretained snapshots are freed unhashed, wait
 * out the step, then are reused first, so a prefill cycles a few state blocks. */
START_TEST(retention_reuses_unhashed_first)
{
    kvpool_t *p = hybrid_pool(40, 1, 0);
    kvpool_seq_t *s = seq_span(p, 6, 0, 96);
    prefill(p, s, 96, NULL);
    ck_assert_int_eq(stats(p).cached - 6, 2);
    kvpool_seq_free(p, s);
    kvpool_free(p);

    long distinct[2];
    for (int k = 0; k < 2; k++) {
        p = hybrid_pool(40, 1, k ? 0 : KVPOOL_RETAIN_ALL);
        char seen[40] = { 0 };
        s = seq_span(p, 6, 0, 103);
        prefill(p, s, 103, seen);
        distinct[k] = 0;
        for (int i = 0; i < 40; i++) distinct[k] += seen[i];
        kvpool_seq_free(p, s);
        kvpool_free(p);
    }
    ck_assert_int_eq(distinct[0], 7 + 7);                 /* dense: a fresh block per boundary */
    ck_assert_int_eq(distinct[1], 7 + 3);                 /* retention 0: three state blocks cycle */

    /* the pending list: not free during the step, at the queue's head after it */
    p = hybrid_pool(40, 1, 0);
    s = seq_span(p, 6, 0, 80);
    kvpool_lookup(p, s, 80);
    for (long at = 0; at < 48; at += BS) {
        kvpool_step_begin(p);
        ck_assert_int_eq(kvpool_allocate(p, s, at, at + BS, 0, 80), 0);
    }
    kvpool_stats_t st = stats(p);
    ck_assert_int_eq(st.pending, 1);                      /* the snapshot at 16, unretained */
    ck_assert_int_eq(st.free_blocks + st.pending + st.in_use[0] + st.in_use[1], 40);
    kvpool_step_begin(p);
    int32_t q[40];
    kvpool_free_order(p, q, 40);
    ck_assert_int_eq(kvpool_block_hashed(p, q[0]), 0);
    ck_assert_int_eq(stats(p).pending, 0);
    assert_ok(p);
    kvpool_seq_free(p, s);
    kvpool_free(p);
}
END_TEST

/* The knob's validation (KVCacheCoordinator: _validate_prefix_cache_retention_interval). */
START_TEST(retention_config_rules)
{
    const char *rule = NULL;
    kvpool_cfg_t c = kvpool_cfg_hybrid(10, BS, 1);
    c.retention = 48;
    ck_assert_int_eq(kvpool_cfg_check(&c, &rule), 0);
    c.retention = 20;
    ck_assert_int_eq(kvpool_cfg_check(&c, &rule), KVPOOL_ECONFIG);
    ck_assert_ptr_nonnull(rule);
    ck_assert_ptr_null(kvpool_create(&c));
    c = kvpool_cfg_hybrid(10, BS, 0);
    c.retention = 32;
    ck_assert_int_eq(kvpool_cfg_check(&c, &rule), KVPOOL_ECONFIG);
    c.retention = 0;
    ck_assert_int_eq(kvpool_cfg_check(&c, &rule), 0);
    c = kvpool_cfg_hybrid(10, BS, 1);
    c.mamba_align = 0;
    ck_assert_int_eq(kvpool_cfg_check(&c, &rule), KVPOOL_ECONFIG);
    c.enable_caching = 0;
    ck_assert_int_eq(kvpool_cfg_check(&c, &rule), 0);
}
END_TEST

/* Short of blocks: KVPOOL_SHORT, nothing taken, for a new and a running sequence and
 * when only one group is short; the blocks come back whole on release. */
START_TEST(exhaustion_no_leak)
{
    kvpool_t *p = attn_pool(4);
    kvpool_seq_t *a = seq_span(p, 1, 0, 40), *b = seq_span(p, 2, 0, 30);
    admit(p, a, 40);                                      /* 3 blocks */
    kvpool_stats_t before = stats(p);
    ck_assert_int_eq(kvpool_lookup(p, b, 30), 0);
    ck_assert_int_eq(kvpool_allocate(p, b, 0, 30, 0, 30), KVPOOL_SHORT);
    ck_assert_int_eq(kvpool_seq_blocks(b), 0);
    ck_assert_int_eq(kvpool_allocate(p, a, 40, 80, 0, 80), KVPOOL_SHORT);   /* needs 2 more */
    ck_assert_int_eq(kvpool_seq_blocks(a), 3);
    kvpool_stats_t after = stats(p);
    ck_assert_int_eq(after.free_blocks, before.free_blocks);
    ck_assert_int_eq(after.in_use[KVPOOL_ATTN], before.in_use[KVPOOL_ATTN]);
    ck_assert_int_eq(after.cached, before.cached);
    ck_assert_int_eq(kvpool_allocate(p, a, 40, 64, 0, 64), 0);               /* 1 more fits */
    kvpool_release(p, a);
    ck_assert_int_eq(stats(p).free_blocks, 4);
    assert_ok(p);
    kvpool_seq_free(p, a); kvpool_seq_free(p, b);
    kvpool_free(p);

    p = hybrid_pool(4, 1, KVPOOL_RETAIN_ALL);             /* attention fits, the state does not */
    a = seq_span(p, 1, 0, 48);
    admit(p, a, 48);                                      /* 3 attention + 1 state */
    b = seq_span(p, 2, 0, 10);
    kvpool_lookup(p, b, 10);
    ck_assert_int_eq(kvpool_allocate(p, b, 0, 10, 0, 10), KVPOOL_SHORT);
    ck_assert_int_eq(stats(p).free_blocks, 0);
    kvpool_release(p, a);
    ck_assert_int_eq(kvpool_allocate(p, b, 0, 10, 0, 10), 0);
    ck_assert_int_eq(kvpool_seq_blocks(b), 2);
    assert_ok(p);
    kvpool_seq_free(p, a); kvpool_seq_free(p, b);
    ck_assert_int_eq(stats(p).free_blocks, 4);
    kvpool_free(p);
}
END_TEST

/* API misuse is refused: a claimed hit other than the lookup's, an empty step, a
 * lookup on a running sequence. */
START_TEST(contract_errors)
{
    kvpool_t *p = attn_pool(8);
    kvpool_seq_t *a = seq_span(p, 1, 0, 40), *b = seq_span(p, 1, 0, 40);
    admit(p, a, 40);
    ck_assert_int_eq(kvpool_lookup(p, a, 40), KVPOOL_EINVAL);
    ck_assert_int_eq(kvpool_lookup(p, b, 40), 32);
    ck_assert_int_eq(kvpool_allocate(p, b, 16, 40, 0, 40), KVPOOL_EINVAL);
    ck_assert_int_eq(kvpool_allocate(p, b, 32, 32, 0, 40), KVPOOL_EINVAL);
    ck_assert_int_eq(kvpool_seq_blocks(b), 0);
    ck_assert_int_eq(kvpool_allocate(p, b, 0, 40, 0, 40), 0);   /* declining the hit is allowed */
    ck_assert_int_eq(kvpool_block_ref(p, 0), 1);
    assert_ok(p);
    kvpool_seq_free(p, a); kvpool_seq_free(p, b);
    kvpool_free(p);
}
END_TEST

/* A long stream of requests, most distinct, some sharing system prompts, through a
 * small pool: the map never holds more entries than blocks, every invariant holds,
 * and shared prompts hit.  The same with hybrid groups and retention 32 (a snapshot
 * every two blocks, so a shared 32- or 64-token prefix can resume; at 0 only the
 * prompt-end snapshot survives and siblings miss). */
START_TEST(memory_bound)
{
    for (int hybrid = 0; hybrid <= 1; hybrid++) {
        long nb = 64;
        kvpool_t *p = hybrid ? hybrid_pool(nb, 3, 32) : attn_pool(nb);
        unsigned rng = 12345;
        kvpool_seq_t *live[4] = { NULL };
        long lens[4] = { 0 };
        for (int i = 0; i < 5000; i++) {
            int k = i % 4;
            if (live[k]) { kvpool_seq_free(p, live[k]); live[k] = NULL; }
            rng = rng * 1103515245u + 12345u;
            long common = (rng >> 8) % 3 == 0 ? 0 : 32 * (long)(1 + (rng >> 12) % 2);
            long own = 1 + (long)((rng >> 16) % 90);
            kvpool_run_t r[2] = { { K_COMMON + (rng >> 20) % 2, 0, common }, { K_REQ(i), 0, own } };
            kvpool_content_t c = { r, 2, K_REQ(i), own };
            kvpool_seq_t *s = kvpool_seq_new(p, &c, common + own);
            ck_assert_ptr_nonnull(s);
            long prompt = common + own;
            /* chunked prefill, chunks ending on block boundaries (align mode: the
             * boundaries' snapshots exist only so) */
            kvpool_step_begin(p);
            long at = kvpool_lookup(p, s, prompt);
            int rc = 0;
            while (rc == 0 && at < prompt) {
                long end = (at / BS + 1) * BS < prompt ? (at / BS + 1) * BS : prompt;
                rc = kvpool_allocate(p, s, at, end, 0, prompt);
                if (rc == KVPOOL_DEFER) {          /* a snapshot of this step: next step */
                    kvpool_step_begin(p);
                    at = kvpool_lookup(p, s, prompt);
                    rc = 0;
                    continue;
                }
                if (rc == 0) at = end;
                kvpool_step_begin(p);
            }
            ck_assert(rc == 0 || rc == KVPOOL_SHORT);
            if (rc == 0) {
                live[k] = s;
                lens[k] = prompt;
                for (int j = 0; j < 4; j++)          /* every live one decodes a token */
                    if (live[j] && kvpool_allocate(p, live[j], lens[j], lens[j] + 1, 0, lens[j] + 1) == 0) lens[j]++;
            } else {
                kvpool_seq_free(p, s);             /* short mid-prefill: gives back what it took */
            }
            kvpool_stats_t st = stats(p);
            ck_assert_int_le(st.cached, nb);
            if (i % 97 == 0) assert_ok(p);
        }
        kvpool_stats_t st = stats(p);
        ck_assert_int_gt(st.evictions, 0);
        ck_assert_int_gt(st.hit_tokens, 0);
        ck_assert_int_le(st.cached, nb);
        for (int k = 0; k < 4; k++) kvpool_seq_free(p, live[k]);
        st = stats(p);
        ck_assert_int_eq(st.free_blocks + st.pending, nb);
        assert_ok(p);
        kvpool_free(p);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("kvpool");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, hash_identity);
    tcase_add_test(tc, prefill_shared_prefix);
    tcase_add_test(tc, partial_blocks_never_cached);
    tcase_add_test(tc, eviction_order_lru);
    tcase_add_test(tc, shared_block_refcount);
    tcase_add_test(tc, hit_keeps_block_alive);
    tcase_add_test(tc, full_prompt_hit_leaves_one_token);
    tcase_add_test(tc, outputs_and_turns_hit);
    tcase_add_test(tc, hybrid_align_snapshots);
    tcase_add_test(tc, hybrid_snapshot_same_step_defers);
    tcase_add_test(tc, hybrid_spec_blocks);
    tcase_add_test(tc, hybrid_eagle_resend);
    tcase_add_test(tc, count_model_equivalence);
    tcase_add_loop_test(tc, retention_interval, 0, (int)(sizeof retention_cases / sizeof retention_cases[0]));
    tcase_add_test(tc, retention_reuses_unhashed_first);
    tcase_add_test(tc, retention_config_rules);
    tcase_add_test(tc, exhaustion_no_leak);
    tcase_add_test(tc, contract_errors);
    tcase_add_test(tc, memory_bound);
    suite_add_tcase(s, tc);
    return check_run(s);
}
