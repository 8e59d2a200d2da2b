/* kvpool: a block pool with prefix caching, as vLLM v1's KV cache manager keeps it
 * (BlockPool, FreeKVCacheBlockQueue, the full-attention and Mamba managers, the hybrid
 * coordinator), for a simulator that has no real tokens.  docs/prefix-cache.md has the
 * design, the rules modelled with their citations, and how the scheduler calls it.
 *
 * A pool holds num_blocks blocks of block_size tokens shared by every KV cache group.
 * A full block is named by a 64-bit chained hash (parent hash, the identities of its
 * tokens) and group; a sequence's content is a list of token runs (key, start, len), so
 * two sequences sharing a system prompt hash their first blocks alike.
 * Invariants: every block is in exactly one of {held (ref > 0), the free queue, the
 * pending list}; a block carries at most one hash, so the hash map never holds more
 * than num_blocks entries; the free queue's head is the next block handed out and a
 * cached block popped from it is dropped from the map.  Every operation costs
 * O(blocks it touches + content runs it crosses); memory is O(num_blocks) for the pool
 * plus O(blocks of the sequence) for each live sequence, never O(tokens). */
#ifndef PACESIM_KVPOOL_H
#define PACESIM_KVPOOL_H

#include <stdint.h>

/* Return codes (0 = success). */
#define KVPOOL_SHORT   (-1)   /* not enough free blocks; nothing was allocated */
#define KVPOOL_DEFER   (-2)   /* hybrid hit on a state snapshot committed this step: retry next step */
#define KVPOOL_ENOMEM  (-3)   /* out of memory; the pool is unchanged and consistent */
#define KVPOOL_EINVAL  (-4)   /* a call that breaks the API's contract */
#define KVPOOL_ECONFIG (-5)   /* bad kvpool_cfg_t (kvpool_cfg_check says which rule) */

#define KVPOOL_MAX_GROUPS 16
#define KVPOOL_MAX_SPEC   8
#define KVPOOL_MAX_BLOCKS (1L << 22)  /* num_blocks: ~45 bytes of state each, allocated at create */
#define KVPOOL_RETAIN_ALL (-1L)   /* prefix_cache_retention_interval = None */

typedef enum { KVPOOL_ATTN = 0, KVPOOL_MAMBA = 1, KVPOOL__KINDS } kvpool_kind_t;

typedef struct kvpool_cfg {
    long num_blocks;              /* usable blocks (vLLM reserves one more as its null block) */
    int block_size;               /* tokens per block, the same for every group (align mode) */
    int enable_caching;           /* 0: no hashes, no hits; blocks still counted */
    int ngroups;                  /* KV cache groups, in vLLM's kv_cache_groups order */
    kvpool_kind_t kind[KVPOOL_MAX_GROUPS];
    int mamba_align;              /* 1: mamba_cache_mode=align (state snapshots at block
                                   * boundaries, hits possible); 0: the state is held for
                                   * the sequence's life and never cached, so a pool with a
                                   * Mamba group then never hits */
    int mamba_spec_blocks;        /* MambaSpec.num_speculative_blocks, 0..KVPOOL_MAX_SPEC */
    int eagle;                    /* a drafter needs the last matched block recomputed */
    long retention;               /* prefix_cache_retention_interval: KVPOOL_RETAIN_ALL
                                   * (None, dense), 0 (prompt-end boundary only) or N > 0
                                   * (also one snapshot per N tokens; a multiple of block_size) */
} kvpool_cfg_t;

/* A configuration for one attention group and n_mamba Mamba groups (Mamba first, as
 * vLLM orders a model whose first layers are linear attention), caching on, align
 * mode, dense retention. */
kvpool_cfg_t kvpool_cfg_hybrid(long num_blocks, int block_size, int n_mamba);
/* 0, or KVPOOL_ECONFIG with *rule naming the rule broken (a static string). */
int kvpool_cfg_check(const kvpool_cfg_t *cfg, const char **rule);

/* Content: token i of a sequence is (key, start + offset) of the run holding it, and
 * past the runs (outputs) (out_key, out_start + i - total run length).  A system prompt
 * is a run with a shared key; a conversation's later turn repeats the earlier turn's
 * runs, its outputs included.  Equal token identities, however split into runs, hash
 * equal (adjacent runs that continue each other are merged first). */
typedef struct kvpool_run {
    uint64_t key;
    long start, len;
} kvpool_run_t;

typedef struct kvpool_content {
    const kvpool_run_t *runs;
    int nruns;
    uint64_t out_key;
    long out_start;
} kvpool_content_t;

typedef struct kvpool_stats {
    long queries;                 /* lookups run (vLLM counts one per scheduling attempt) */
    long query_tokens, hit_tokens;    /* tokens asked for, tokens found */
    long hit_blocks;              /* cached blocks taken by admissions, every group */
    long evictions;               /* cached blocks popped for reuse and dropped from the map */
    long allocated;               /* blocks popped from the free queue */
    long in_use[KVPOOL__KINDS];   /* held blocks (ref > 0) by the kind of group holding them */
    long free_blocks;             /* in the free queue (what an allocation may take) */
    long cached_free;             /* of those, blocks that still carry a hash */
    long pending;                 /* freed this step, unhashed, not yet reusable (retention set) */
    long cached;                  /* hash map entries */
} kvpool_stats_t;

typedef struct kvpool kvpool_t;
typedef struct kvpool_seq kvpool_seq_t;

/* A pool for cfg (copied).  NULL if cfg fails kvpool_cfg_check or out of memory.  The
 * caller owns the pool and frees it with kvpool_free after freeing its sequences. */
kvpool_t *kvpool_create(const kvpool_cfg_t *cfg);
void kvpool_free(kvpool_t *p);

/* A sequence of pool p (its block size and groups) with content c (runs copied; c may
 * be freed after) whose prompt has prompt_tokens tokens.  It holds no blocks yet.  NULL
 * out of memory.  The caller owns it: kvpool_seq_free releases its blocks into p (p may
 * be NULL when it holds none) and frees it. */
kvpool_seq_t *kvpool_seq_new(const kvpool_t *p, const kvpool_content_t *c, long prompt_tokens);
void kvpool_seq_free(kvpool_t *p, kvpool_seq_t *s);

/* A scheduler step starts: blocks freed unhashed during the last step (retention set)
 * become reusable at the head of the free queue, and hybrid hits on snapshots committed
 * last step are allowed again. */
void kvpool_step_begin(kvpool_t *p);

/* The prefix-cache hit of a waiting sequence (it holds no blocks) whose first ntokens
 * tokens are known: whole blocks, at most ntokens - 1 tokens, present in every group
 * (attention blocks from the start, and for a hybrid pool a state snapshot at the hit's
 * end).  0 when caching is off.  Counts a query.  The hit is claimed by the next
 * kvpool_allocate(s, computed = hit, ...), which must follow before any other
 * allocation.  Returns the hit, or KVPOOL_EINVAL / KVPOOL_ENOMEM. */
long kvpool_lookup(kvpool_t *p, kvpool_seq_t *s, long ntokens);

/* What a router asks: the tokens of content c's first ntokens whose blocks the pool has
 * cached now (whole blocks from the start, at most ntokens - 1 tokens, attention groups;
 * 0 when caching is off or the pool has none).  Changes nothing, counts no query. */
long kvpool_cached_prefix(const kvpool_t *p, const kvpool_content_t *c, long ntokens);

/* Give s slots for tokens [0, upto) plus lookahead draft slots (attention groups only),
 * computed tokens already having KV (for a sequence holding no blocks: 0 or the hit of
 * the lookup just made); then commit the hashes of its blocks that are full within
 * min(upto, known) tokens, known being the tokens that are final (prompt and accepted
 * outputs).  Before counting, superseded state snapshots below `computed` are freed,
 * even if the allocation then fails (vLLM's remove_skipped_blocks).  0, KVPOOL_SHORT
 * (the pool lacks blocks: nothing allocated), KVPOOL_DEFER, KVPOOL_ENOMEM, KVPOOL_EINVAL. */
int kvpool_allocate(kvpool_t *p, kvpool_seq_t *s, long computed, long upto, long lookahead, long known);

/* Free every block s holds, each group's in reverse order (the tail of a sequence is
 * evicted first), groups in order; s keeps its content and can be admitted again. */
void kvpool_release(kvpool_t *p, kvpool_seq_t *s);

/* Blocks s holds now, every group. */
long kvpool_seq_blocks(const kvpool_seq_t *s);
/* Group g's blocks held by s: up to max (position, block id) pairs by position (pos may
 * be NULL); the count held.  An attention group holds positions 0..n-1; a Mamba group
 * in align mode holds a few positions (the running state, the snapshot it supersedes,
 * speculative blocks). */
long kvpool_seq_table(const kvpool_seq_t *s, int g, long *pos, int32_t *ids, long max);

void kvpool_get_stats(const kvpool_t *p, kvpool_stats_t *st);
/* Up to max block ids of the free queue from its head (next handed out); the count. */
long kvpool_free_order(const kvpool_t *p, int32_t *ids, long max);
/* Block id's state: its reference count, and whether it carries a hash. */
int kvpool_block_ref(const kvpool_t *p, int32_t id);
int kvpool_block_hashed(const kvpool_t *p, int32_t id);
/* The chained hash of block b of content c (tests and tools; O(runs crossed)). */
uint64_t kvpool_content_block_hash(const kvpool_content_t *c, int block_size, long b);
/* Walk the whole pool and verify the invariants above.  0, or -1 with *what naming the
 * first one broken.  O(num_blocks): for tests and debug builds. */
int kvpool_check(const kvpool_t *p, const char **what);

#endif
