/* kvpool.c: vLLM v1's block pool and prefix cache, for token runs instead of tokens.
 *
 * What is modelled, and where vLLM does it (the fork's tree 1CatAI/1Cat-vLLM@ae13773a0dee
 * carries upstream vLLM's v1 core; the retention knob is the fork's port in
 * areslp/1Cat-vLLM@3040730392b4 and @59f54f8bea47; docs/prefix-cache.md cites each rule):
 *  - block hashes chained from the parent block's hash and the block's tokens, full
 *    blocks only: vllm/v1/core/kv_cache_utils.py hash_block_tokens(),
 *    get_request_block_hasher();
 *  - the free queue, a doubly-linked list with O(1) removal from the middle, popped at
 *    the head, freed blocks appended at the tail: kv_cache_utils.py FreeKVCacheBlockQueue;
 *    a request's blocks freed in reverse order: single_type_kv_cache_manager.py
 *    SingleTypeKVCacheManager.free();
 *  - reference counts, touch() of a hit taking a free block out of the queue, a cached
 *    block popped for reuse dropped from the map: vllm/v1/core/block_pool.py
 *    BlockPool.touch(), get_new_blocks(), _maybe_evict_cached_block(), free_blocks();
 *  - the hit: at most num_tokens - 1 tokens, whole blocks, the longest prefix present in
 *    every attention group, for a hybrid model cut back to the last block boundary with
 *    a state snapshot in every Mamba group: kv_cache_manager.py get_computed_blocks(),
 *    kv_cache_coordinator.py HybridKVCacheCoordinator.find_longest_cache_hit(),
 *    FullAttentionManager / MambaManager.find_longest_cache_hit();
 *  - allocation all or nothing across groups, then hashes committed up to the tokens
 *    that are final: kv_cache_manager.py allocate_slots(), get_num_blocks_to_allocate()
 *    of each manager, cache_blocks();
 *  - Mamba align mode: one running-state block per group, a fresh block at each block
 *    boundary, the superseded snapshot freed at the next allocation:
 *    MambaManager.allocate_new_blocks(), remove_skipped_blocks(), and its rule that a
 *    hit on a snapshot committed this step waits for the next step;
 *  - prefix_cache_retention_interval: MambaManager.retention_block_mask(),
 *    KVCacheCoordinator._replay_boundaries(), BlockPool(reuse_unhashed_first) with its
 *    pending front flushed when a step starts (flush_pending_front()).
 *
 * Hash: 64-bit splitmix64 chaining, deterministic.  Distinct blocks collide with
 * probability about k^2 / 2^65 for k blocks ever hashed (1e9 blocks: 3e-2 over a whole
 * study; 1e6 blocks: 3e-8); a collision would only turn a miss into a hit.  vLLM itself
 * keys by sha256 (or a builtin hash) and makes the same kind of assumption. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "kvpool.h"

enum { W_HELD = 0, W_FREE, W_PENDING };
#define MAXE (KVPOOL_MAX_SPEC + 3)    /* Mamba blocks a sequence holds per group, at most */
#define ROOT_HASH 0x6b76706f6f6c0001ULL  /* the parent of a first block (vLLM's NONE_HASH) */

typedef struct blk {
    uint64_t hash;
    long cached_step;             /* step its hash was committed by a Mamba group */
    int32_t ref;
    int32_t prev, next;           /* free queue (both) / pending list (next) */
    int32_t hnext;                /* hash chain */
    int16_t group;                /* group of the hash */
    uint8_t hashed, where, kind;
} blk_t;

struct kvpool {
    kvpool_cfg_t cfg;
    int32_t n, head, tail;        /* head = n, tail = n + 1: the queue's sentinels */
    blk_t *b;
    int32_t *bucket;
    uint64_t mask;
    int32_t pend_head, pend_tail;
    long step;
    int reuse_unhashed_first;
    int n_attn, n_mamba;
    kvpool_stats_t st;
};

typedef struct { int32_t *ids; long n, cap; } atab_t;   /* attention group: positions 0..n-1 */
typedef struct {                                         /* Mamba group: a sparse table */
    long len;                     /* vLLM's len(req_to_blocks): positions, nulls included */
    int n;
    long pos[MAXE];               /* ascending */
    int32_t id[MAXE];
    long last_state;              /* last_state_block_idx, -1 none */
    int allocated;
} mtab_t;

struct kvpool_seq {
    kvpool_run_t *runs;
    int nruns;
    uint64_t out_key;
    long out_start;
    long prompt;
    int block_size, ngroups;
    uint64_t *hash;               /* hashes of blocks 0..nhash-1 */
    long nhash, cap_hash;
    int cur_run;                  /* where block nhash starts: run index (nruns: outputs) */
    long cur_off;
    long hit;                     /* the last lookup's hit, tokens */
    int started;                  /* holds blocks (allocated since admission) */
    /* one entry a group of the pool (ngroups), in the same allocation: a sequence waiting in
     * a long queue costs its tables for the groups there are, not for KVPOOL_MAX_GROUPS */
    long *ncached;
    atab_t *at;
    mtab_t *mt;
};

/* ---- hashing ------------------------------------------------------------------------ */

static uint64_t mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t absorb(uint64_t h, uint64_t v) { return mix64(h ^ mix64(v)); }

static uint64_t absorb_piece(uint64_t h, uint64_t key, long start, long len)
{
    h = absorb(h, key);
    h = absorb(h, (uint64_t)start);
    return absorb(h, (uint64_t)len);
}

/* The hash of the block starting at (*run, *off), advancing the cursor past it.  Tokens
 * come as maximal pieces of consecutive identities, so equal token sequences give
 * equal piece lists however the runs split them. */
static uint64_t hash_block(const kvpool_run_t *runs, int nruns, uint64_t out_key, long out_start,
                           int *run, long *off, uint64_t parent, int bs)
{
    uint64_t h = parent;
    long need = bs;
    int have = 0;
    uint64_t pkey = 0;
    long pstart = 0, plen = 0;
    while (need > 0) {
        uint64_t key;
        long start, avail;
        if (*run < nruns) {
            key = runs[*run].key;
            start = runs[*run].start + *off;
            avail = runs[*run].len - *off;
            if (avail <= 0) { (*run)++; *off = 0; continue; }
        } else {
            key = out_key;
            start = out_start + *off;
            avail = LONG_MAX;
        }
        long take = need < avail ? need : avail;
        if (have && key == pkey && pstart + plen == start) {
            plen += take;
        } else {
            if (have) h = absorb_piece(h, pkey, pstart, plen);
            pkey = key; pstart = start; plen = take; have = 1;
        }
        need -= take;
        *off += take;
        if (*run < nruns && *off >= runs[*run].len) { (*run)++; *off = 0; }
    }
    return absorb_piece(h, pkey, pstart, plen);
}

uint64_t kvpool_content_block_hash(const kvpool_content_t *c, int block_size, long b)
{
    int run = 0;
    long off = 0;
    uint64_t h = ROOT_HASH;
    for (long i = 0; i <= b; i++)
        h = hash_block(c->runs, c->nruns, c->out_key, c->out_start, &run, &off, h, block_size);
    return h;
}

/* An array a of *cap items of size bytes reallocated to hold need (its capacity doubled from
 * 16): the new array, *cap updated; NULL when out of memory (a and *cap as they were). */
static void *grow(void *a, long *cap, long need, size_t size)
{
    long c = *cap ? *cap : 16;
    while (c < need) c *= 2;
    void *p = realloc(a, (size_t)c * size);
    if (p) *cap = c;
    return p;
}

/* Hashes of s's blocks 0..nb-1.  0, or KVPOOL_ENOMEM (nothing changed). */
static int ensure_hashes(kvpool_seq_t *s, long nb)
{
    if (nb <= s->nhash) return 0;
    if (nb > s->cap_hash) {
        uint64_t *h = grow(s->hash, &s->cap_hash, nb, sizeof *h);
        if (!h) return KVPOOL_ENOMEM;
        s->hash = h;
    }
    while (s->nhash < nb) {
        uint64_t parent = s->nhash ? s->hash[s->nhash - 1] : ROOT_HASH;
        s->hash[s->nhash] = hash_block(s->runs, s->nruns, s->out_key, s->out_start, &s->cur_run, &s->cur_off,
                                       parent, s->block_size);
        s->nhash++;
    }
    return 0;
}

/* ---- the hash map: chained through the blocks, buckets sized to the pool ------------- */

static uint64_t bucket_of(const kvpool_t *p, uint64_t hash, int group)
{
    return mix64(hash ^ ((uint64_t)(group + 1) * 0xd6e8feb86659fd93ULL)) & p->mask;
}

/* The first block cached under (hash, group), in insertion order, or -1. */
static int32_t map_find(const kvpool_t *p, uint64_t hash, int group)
{
    for (int32_t i = p->bucket[bucket_of(p, hash, group)]; i >= 0; i = p->b[i].hnext)
        if (p->b[i].hash == hash && p->b[i].group == group) return i;
    return -1;
}

static void map_insert(kvpool_t *p, int32_t id, uint64_t hash, int group)
{
    blk_t *k = &p->b[id];
    k->hash = hash;
    k->group = (int16_t)group;
    k->hashed = 1;
    k->hnext = -1;
    int32_t *at = &p->bucket[bucket_of(p, hash, group)];
    while (*at >= 0) at = &p->b[*at].hnext;    /* at the tail: lookups return the oldest */
    *at = id;
    p->st.cached++;
}

static void map_remove(kvpool_t *p, int32_t id)
{
    blk_t *k = &p->b[id];
    int32_t *at = &p->bucket[bucket_of(p, k->hash, k->group)];
    while (*at != id) at = &p->b[*at].hnext;
    *at = k->hnext;
    k->hnext = -1;
    k->hashed = 0;
    p->st.cached--;
}

/* ---- the free queue and the pending list --------------------------------------------- */

static void q_unlink(kvpool_t *p, int32_t i)
{
    blk_t *k = &p->b[i];
    p->b[k->prev].next = k->next;
    p->b[k->next].prev = k->prev;
    k->prev = k->next = -1;
    k->where = W_HELD;
    p->st.free_blocks--;
    if (k->hashed) p->st.cached_free--;
}

static void q_insert_before(kvpool_t *p, int32_t i, int32_t at)
{
    blk_t *k = &p->b[i];
    k->prev = p->b[at].prev;
    k->next = at;
    p->b[k->prev].next = i;
    p->b[at].prev = i;
    k->where = W_FREE;
    p->st.free_blocks++;
    if (k->hashed) p->st.cached_free++;
}

/* The pending list (freed unhashed this step) goes to the queue's head, in order. */
static void flush_pending(kvpool_t *p)
{
    int32_t first = p->b[p->head].next;
    for (int32_t i = p->pend_head; i >= 0;) {
        int32_t nx = p->b[i].next;
        q_insert_before(p, i, first);
        p->st.pending--;
        i = nx;
    }
    p->pend_head = p->pend_tail = -1;
}

/* Drop one reference from each block, in the order given (the first is evicted first). */
static void free_list(kvpool_t *p, const int32_t *ids, long n)
{
    for (long j = 0; j < n; j++) {
        blk_t *k = &p->b[ids[j]];
        if (--k->ref > 0) continue;
        p->st.in_use[k->kind]--;
        if (p->reuse_unhashed_first && (!k->hashed || !p->cfg.enable_caching)) {
            k->where = W_PENDING;
            k->prev = -1;
            k->next = -1;
            if (p->pend_tail >= 0) p->b[p->pend_tail].next = ids[j];
            else p->pend_head = ids[j];
            p->pend_tail = ids[j];
            p->st.pending++;
        } else {
            q_insert_before(p, ids[j], p->tail);
        }
    }
}

/* Pop one block from the head for group g (the caller checked there is one). */
static int32_t get_new(kvpool_t *p, int g)
{
    int32_t i = p->b[p->head].next;
    q_unlink(p, i);
    blk_t *k = &p->b[i];
    if (k->hashed) {
        map_remove(p, i);
        p->st.evictions++;
    }
    k->ref = 1;
    k->kind = (uint8_t)p->cfg.kind[g];
    p->st.in_use[k->kind]++;
    p->st.allocated++;
    return i;
}

static void touch(kvpool_t *p, int32_t i)
{
    blk_t *k = &p->b[i];
    if (k->ref == 0) {
        q_unlink(p, i);
        p->st.in_use[k->kind]++;
    }
    k->ref++;
    p->st.hit_blocks++;
}

/* ---- configuration -------------------------------------------------------------------- */

kvpool_cfg_t kvpool_cfg_hybrid(long num_blocks, int block_size, int n_mamba)
{
    kvpool_cfg_t c;
    memset(&c, 0, sizeof c);
    c.num_blocks = num_blocks;
    c.block_size = block_size;
    c.enable_caching = 1;
    c.mamba_align = 1;
    c.retention = KVPOOL_RETAIN_ALL;
    if (n_mamba < 0) n_mamba = 0;
    if (n_mamba > KVPOOL_MAX_GROUPS - 1) n_mamba = KVPOOL_MAX_GROUPS - 1;
    for (int g = 0; g < n_mamba; g++) c.kind[g] = KVPOOL_MAMBA;
    c.kind[n_mamba] = KVPOOL_ATTN;
    c.ngroups = n_mamba + 1;
    return c;
}

int kvpool_cfg_check(const kvpool_cfg_t *c, const char **rule)
{
    const char *why = NULL;
    int n_mamba = 0;
    if (c->ngroups < 1 || c->ngroups > KVPOOL_MAX_GROUPS) why = "ngroups must be 1..16";
    else
        for (int g = 0; g < c->ngroups; g++) {
            if (c->kind[g] != KVPOOL_ATTN && c->kind[g] != KVPOOL_MAMBA) why = "a group's kind must be attention or Mamba";
            n_mamba += c->kind[g] == KVPOOL_MAMBA;
        }
    if (why) ;
    else if (c->num_blocks < 1 || c->num_blocks > KVPOOL_MAX_BLOCKS) why = "num_blocks must be 1..2^22 (4194304)";
    else if (c->block_size < 1) why = "block_size must be positive";
    else if (c->mamba_spec_blocks < 0 || c->mamba_spec_blocks > KVPOOL_MAX_SPEC) why = "mamba_spec_blocks must be 0..8";
    else if (n_mamba > 0 && !c->mamba_align && c->enable_caching)
        why = "a Mamba group outside align mode cannot be prefix-cached (set mamba_align or turn caching off)";
    else if (c->retention != KVPOOL_RETAIN_ALL && c->retention < 0)
        why = "prefix_cache_retention_interval must be None, 0 or a positive multiple of the block size";
    else if (c->retention > 0 && n_mamba == 0)
        why = "prefix_cache_retention_interval is set but there is no Mamba group, so it has no effect (unset it or set it to 0)";
    else if (c->retention > 0 && c->retention % c->block_size != 0)
        why = "prefix_cache_retention_interval must be a multiple of the block size";
    if (rule) *rule = why;
    return why ? KVPOOL_ECONFIG : 0;
}

kvpool_t *kvpool_create(const kvpool_cfg_t *cfg)
{
    if (kvpool_cfg_check(cfg, NULL) < 0) return NULL;
    kvpool_t *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->cfg = *cfg;
    p->n = (int32_t)cfg->num_blocks;
    p->head = p->n;
    p->tail = p->n + 1;
    uint64_t nb = 1;
    while (nb < (uint64_t)p->n) nb <<= 1;
    p->mask = nb - 1;
    p->b = calloc((size_t)p->n + 2, sizeof *p->b);
    p->bucket = malloc((size_t)nb * sizeof *p->bucket);
    if (!p->b || !p->bucket) goto fail;
    for (uint64_t i = 0; i < nb; i++) p->bucket[i] = -1;
    /* the queue starts ordered by block id */
    for (int32_t i = 0; i < p->n; i++) {
        p->b[i].prev = i == 0 ? p->head : i - 1;
        p->b[i].next = i == p->n - 1 ? p->tail : i + 1;
        p->b[i].hnext = -1;
        p->b[i].where = W_FREE;
    }
    p->b[p->head].prev = -1;
    p->b[p->head].next = 0;
    p->b[p->tail].prev = p->n - 1;
    p->b[p->tail].next = -1;
    p->st.free_blocks = p->n;
    p->pend_head = p->pend_tail = -1;
    p->step = 1;
    p->reuse_unhashed_first = cfg->retention != KVPOOL_RETAIN_ALL;
    for (int g = 0; g < cfg->ngroups; g++) {
        if (cfg->kind[g] == KVPOOL_ATTN) p->n_attn++;
        else p->n_mamba++;
    }
    return p;
fail:
    kvpool_free(p);
    return NULL;
}

void kvpool_free(kvpool_t *p)
{
    if (!p) return;
    free(p->b);
    free(p->bucket);
    free(p);
}

void kvpool_step_begin(kvpool_t *p)
{
    flush_pending(p);
    p->step++;
}

/* ---- sequences ------------------------------------------------------------------------ */

static void seq_reset(kvpool_seq_t *s)
{
    s->started = 0;
    s->hit = 0;
    for (int g = 0; g < s->ngroups; g++) {
        s->ncached[g] = 0;
        s->at[g].n = 0;
        s->mt[g].len = 0;
        s->mt[g].n = 0;
        s->mt[g].last_state = -1;
        s->mt[g].allocated = 0;
    }
}

kvpool_seq_t *kvpool_seq_new(const kvpool_t *p, const kvpool_content_t *c, long prompt_tokens)
{
    int ng = p->cfg.ngroups;
    kvpool_seq_t *s = calloc(1, sizeof *s + (size_t)ng * (sizeof *s->ncached + sizeof *s->at + sizeof *s->mt));
    if (!s) return NULL;
    s->at = (atab_t *)(s + 1);                  /* 8-byte aligned members throughout */
    s->mt = (mtab_t *)(s->at + ng);
    s->ncached = (long *)(s->mt + ng);
    if (c->nruns > 0) {
        s->runs = malloc((size_t)c->nruns * sizeof *s->runs);
        if (!s->runs) { free(s); return NULL; }
        memcpy(s->runs, c->runs, (size_t)c->nruns * sizeof *s->runs);
    }
    s->nruns = c->nruns > 0 ? c->nruns : 0;
    s->out_key = c->out_key;
    s->out_start = c->out_start;
    s->prompt = prompt_tokens;
    s->block_size = p->cfg.block_size;
    s->ngroups = p->cfg.ngroups;
    seq_reset(s);
    return s;
}

void kvpool_seq_free(kvpool_t *p, kvpool_seq_t *s)
{
    if (!s) return;
    if (p && s->started) kvpool_release(p, s);
    for (int g = 0; g < s->ngroups; g++) free(s->at[g].ids);
    free(s->hash);
    free(s->runs);
    free(s);
}

long kvpool_seq_blocks(const kvpool_seq_t *s)
{
    long n = 0;
    for (int g = 0; g < s->ngroups; g++) n += s->at[g].n + s->mt[g].n;
    return n;
}

long kvpool_seq_table(const kvpool_seq_t *s, int g, long *pos, int32_t *ids, long max)
{
    if (g < 0 || g >= s->ngroups) return 0;
    const atab_t *a = &s->at[g];
    const mtab_t *m = &s->mt[g];
    long n = a->n ? a->n : m->n;
    for (long i = 0; i < n && i < max; i++) {
        if (pos) pos[i] = a->n ? i : m->pos[i];
        if (ids) ids[i] = a->n ? a->ids[i] : m->id[i];
    }
    return n;
}

static int mt_find(const mtab_t *m, long pos)
{
    for (int j = 0; j < m->n; j++)
        if (m->pos[j] == pos) return j;
    return -1;
}

static void mt_drop(mtab_t *m, int j)
{
    for (int k = j + 1; k < m->n; k++) { m->pos[k - 1] = m->pos[k]; m->id[k - 1] = m->id[k]; }
    m->n--;
}

static void mt_sort(mtab_t *m)
{
    for (int j = 1; j < m->n; j++)
        for (int k = j; k > 0 && m->pos[k - 1] > m->pos[k]; k--) {
            long tp = m->pos[k]; m->pos[k] = m->pos[k - 1]; m->pos[k - 1] = tp;
            int32_t ti = m->id[k]; m->id[k] = m->id[k - 1]; m->id[k - 1] = ti;
        }
}

static long cdivl(long a, long b) { return (a + b - 1) / b; }

/* ---- lookup ----------------------------------------------------------------------------- */

static int cached_in_all(const kvpool_t *p, uint64_t hash, kvpool_kind_t kind)
{
    for (int g = 0; g < p->cfg.ngroups; g++)
        if (p->cfg.kind[g] == kind && map_find(p, hash, g) < 0) return 0;
    return 1;
}

long kvpool_cached_prefix(const kvpool_t *p, const kvpool_content_t *c, long ntokens)
{
    if (!p || !p->cfg.enable_caching || p->n_attn == 0) return 0;
    int bs = p->cfg.block_size, run = 0;
    long off = 0, max_blocks = ntokens > 1 ? (ntokens - 1) / bs : 0, b = 0;
    uint64_t h = ROOT_HASH;
    for (; b < max_blocks; b++) {
        h = hash_block(c->runs, c->nruns, c->out_key, c->out_start, &run, &off, h, bs);
        if (!cached_in_all(p, h, KVPOOL_ATTN)) break;
    }
    return b * bs;
}

long kvpool_lookup(kvpool_t *p, kvpool_seq_t *s, long ntokens)
{
    if (s->started || ntokens < 0) return KVPOOL_EINVAL;
    s->hit = 0;
    if (!p->cfg.enable_caching) return 0;
    int bs = p->cfg.block_size;
    long max_len = ntokens - 1;        /* the last token is always recomputed, for logits */
    long max_blocks = max_len > 0 ? max_len / bs : 0;
    if (ensure_hashes(s, max_blocks) < 0) return KVPOOL_ENOMEM;
    long nb = max_blocks;
    if (p->n_attn > 0) {               /* attention: the longest run of cached blocks from 0 */
        long a = 0;
        while (a < max_blocks && cached_in_all(p, s->hash[a], KVPOOL_ATTN)) a++;
        if (p->cfg.eagle && a > 0) a--;
        nb = a;
    }
    if (p->n_mamba > 0) {              /* Mamba: the rightmost snapshot within that prefix */
        long m = nb;
        if (p->cfg.eagle) m = (p->n_attn > 0 ? (nb + 1 < max_blocks ? nb + 1 : max_blocks) : nb) - 1;
        nb = 0;
        for (long i = m - 1; i >= 0; i--)
            if (cached_in_all(p, s->hash[i], KVPOOL_MAMBA)) { nb = i + 1; break; }
    }
    s->hit = nb * bs;
    p->st.queries++;
    p->st.query_tokens += ntokens;
    p->st.hit_tokens += s->hit;
    return s->hit;
}

/* ---- allocation ------------------------------------------------------------------------- */

/* Whether Mamba block `pos` of s keeps its hash under the retention interval. */
static int retain(const kvpool_t *p, const kvpool_seq_t *s, long pos)
{
    long iv = p->cfg.retention;
    int bs = p->cfg.block_size;
    if (iv == KVPOOL_RETAIN_ALL) return 1;
    if (iv > 0) {
        long per = iv / bs;
        if (per <= 1) return 1;
        if ((pos + 1) % per == 0) return 1;
    }
    long b[3] = { s->prompt - 1, s->prompt, -1 };
    int nbnd = 2;
    if (p->cfg.eagle) { long e = s->prompt - 1 - bs; b[nbnd++] = e > 0 ? e : 0; }
    for (int j = 0; j < nbnd; j++)
        if (b[j] / bs - 1 == pos) return 1;
    return 0;
}

/* Superseded Mamba state below `computed` (vLLM's remove_skipped_blocks for MambaManager). */
static void mamba_remove_skipped(kvpool_t *p, mtab_t *m, long computed)
{
    int bs = p->cfg.block_size;
    long skipped = computed - 1;
    if (skipped > 0) {
        long last = skipped / bs < m->len ? skipped / bs : m->len;
        int32_t freed[MAXE];
        int nf = 0;
        for (long pos = last - 1; pos >= 0; pos--) {
            int j = mt_find(m, pos);
            if (j < 0) break;          /* blocks before a null were freed by earlier calls */
            freed[nf++] = m->id[j];
            mt_drop(m, j);
        }
        free_list(p, freed, nf);
    }
    if (m->last_state >= 0 && m->last_state < cdivl(computed, bs) - 1) {
        int j = mt_find(m, m->last_state);
        if (j >= 0) {
            int32_t id = m->id[j];
            mt_drop(m, j);
            free_list(p, &id, 1);
        }
    }
}

/* MambaManager.allocate_new_blocks in align mode: the running state at position
 * cdiv(tokens)-1, speculative blocks after it, the previous state kept one more step. */
static int mamba_alloc(kvpool_t *p, int g, mtab_t *m, long tokens)
{
    int spec = p->cfg.mamba_spec_blocks;
    long req = cdivl(tokens, p->cfg.block_size) + spec;
    if (req == m->len) return 0;
    if (req < m->len) return KVPOOL_EINVAL;
    long prev = m->len;
    if (m->allocated) m->last_state = prev - 1 - spec;
    else if (prev > 0) m->last_state = prev - 1;   /* a hit's state block */
    long skipped = req - spec - 1;
    if (prev < skipped) m->len = skipped;
    if (m->allocated)
        for (long idx = prev - spec; idx < prev; idx++) {
            if (idx >= skipped) break;
            int j = mt_find(m, idx);   /* a speculative block moves to the end */
            if (j >= 0) m->pos[j] = m->len;
            m->len++;
        }
    long nn = req - m->len;
    if (m->n + nn > MAXE) return KVPOOL_EINVAL;
    for (long k = 0; k < nn; k++) {
        m->pos[m->n] = m->len++;
        m->id[m->n++] = get_new(p, g);
    }
    m->allocated = 1;
    mt_sort(m);
    return 0;
}

/* Blocks to take for group g of s: new ones plus the hit's blocks now in the free queue. */
static long need_blocks(const kvpool_t *p, const kvpool_seq_t *s, int g, long nhit, long upto, long slots)
{
    int bs = p->cfg.block_size;
    if (p->cfg.kind[g] == KVPOOL_ATTN) {
        long req = cdivl(slots, bs);
        if (s->started) return req > s->at[g].n ? req - s->at[g].n : 0;
        long n = req > nhit ? req - nhit : 0;
        for (long b = 0; b < nhit; b++)
            if (p->b[map_find(p, s->hash[b], g)].ref == 0) n++;
        return n;
    }
    int spec = p->cfg.mamba_spec_blocks;
    if (!p->cfg.mamba_align) return s->started ? 0 : 1 + spec;
    long req = cdivl(upto, bs) + spec;
    const mtab_t *m = &s->mt[g];
    if (s->started) return req - m->len > 0 ? 1 : 0;
    long n = req - nhit > 0 ? 1 + spec : 0;
    if (nhit > 0 && p->b[map_find(p, s->hash[nhit - 1], g)].ref == 0) n++;
    return n;
}

/* A hit on a snapshot some sequence committed this step: its state is not written yet. */
static int snapshot_this_step(const kvpool_t *p, uint64_t hash, int g)
{
    for (int32_t i = p->bucket[bucket_of(p, hash, g)]; i >= 0; i = p->b[i].hnext)
        if (p->b[i].hash == hash && p->b[i].group == g && p->b[i].cached_step == p->step) return 1;
    return 0;
}

static void cache_blocks(kvpool_t *p, kvpool_seq_t *s, long tokens)
{
    long full = tokens / p->cfg.block_size;
    for (int g = 0; g < p->cfg.ngroups; g++) {
        if (s->ncached[g] >= full) continue;
        if (p->cfg.kind[g] == KVPOOL_ATTN) {
            atab_t *a = &s->at[g];
            for (long b = s->ncached[g]; b < full && b < a->n; b++)
                map_insert(p, a->ids[b], s->hash[b], g);
        } else if (p->cfg.mamba_align) {
            mtab_t *m = &s->mt[g];
            for (int j = 0; j < m->n; j++) {
                long pos = m->pos[j];
                if (pos < s->ncached[g] || pos >= full || !retain(p, s, pos)) continue;
                map_insert(p, m->id[j], s->hash[pos], g);
                p->b[m->id[j]].cached_step = p->step;
            }
        }
        s->ncached[g] = full;
    }
}

int kvpool_allocate(kvpool_t *p, kvpool_seq_t *s, long computed, long upto, long lookahead, long known)
{
    int bs = p->cfg.block_size;
    if (computed < 0 || upto <= computed || lookahead < 0) return KVPOOL_EINVAL;
    long nhit = 0;
    if (!s->started) {
        if (computed != 0 && computed != s->hit) return KVPOOL_EINVAL;
        nhit = computed / bs;
        for (int g = 0; g < p->cfg.ngroups; g++) {
            if (nhit == 0) break;
            if (p->cfg.kind[g] == KVPOOL_ATTN) {
                for (long b = 0; b < nhit; b++)
                    if (map_find(p, s->hash[b], g) < 0) return KVPOOL_EINVAL;   /* evicted since the lookup */
            } else {
                if (map_find(p, s->hash[nhit - 1], g) < 0) return KVPOOL_EINVAL;
                if (snapshot_this_step(p, s->hash[nhit - 1], g)) return KVPOOL_DEFER;
            }
        }
    }
    /* memory first, so a failure leaves the pool as it was */
    long slots = upto + lookahead;
    long commit = upto < known ? upto : known;
    if (p->cfg.enable_caching && ensure_hashes(s, commit / bs) < 0) return KVPOOL_ENOMEM;
    for (int g = 0; g < p->cfg.ngroups; g++) {
        if (p->cfg.kind[g] != KVPOOL_ATTN) continue;
        atab_t *a = &s->at[g];
        long req = cdivl(slots, bs);
        if (req > a->cap) {
            int32_t *ids = grow(a->ids, &a->cap, req, sizeof *ids);
            if (!ids) return KVPOOL_ENOMEM;
            a->ids = ids;
        }
    }
    if (s->started && p->cfg.mamba_align)
        for (int g = 0; g < p->cfg.ngroups; g++)
            if (p->cfg.kind[g] == KVPOOL_MAMBA) mamba_remove_skipped(p, &s->mt[g], computed);
    long need = 0;
    for (int g = 0; g < p->cfg.ngroups; g++) need += need_blocks(p, s, g, nhit, upto, slots);
    if (need > p->st.free_blocks) return KVPOOL_SHORT;

    if (!s->started) {                 /* take the hit: its blocks leave the free queue */
        for (int g = 0; g < p->cfg.ngroups && nhit > 0; g++) {
            if (p->cfg.kind[g] == KVPOOL_ATTN) {
                atab_t *a = &s->at[g];
                for (long b = 0; b < nhit; b++) {
                    int32_t id = map_find(p, s->hash[b], g);
                    touch(p, id);
                    a->ids[a->n++] = id;
                }
            } else {
                mtab_t *m = &s->mt[g];
                int32_t id = map_find(p, s->hash[nhit - 1], g);
                touch(p, id);
                m->pos[0] = nhit - 1;
                m->id[0] = id;
                m->n = 1;
                m->len = nhit;
            }
            s->ncached[g] = nhit;
        }
    }
    for (int g = 0; g < p->cfg.ngroups; g++) {
        if (p->cfg.kind[g] == KVPOOL_ATTN) {
            atab_t *a = &s->at[g];
            long req = cdivl(slots, bs);
            while (a->n < req) a->ids[a->n++] = get_new(p, g);
        } else if (p->cfg.mamba_align) {
            int rc = mamba_alloc(p, g, &s->mt[g], upto);
            if (rc < 0) return rc;
        } else if (!s->started) {
            mtab_t *m = &s->mt[g];
            for (int k = 0; k <= p->cfg.mamba_spec_blocks; k++) {
                m->pos[m->n] = k;
                m->id[m->n++] = get_new(p, g);
            }
            m->len = m->n;
            m->allocated = 1;
        }
    }
    s->started = 1;
    if (p->cfg.enable_caching) cache_blocks(p, s, commit);
    return 0;
}

void kvpool_release(kvpool_t *p, kvpool_seq_t *s)
{
    for (int g = 0; g < s->ngroups; g++) {
        atab_t *a = &s->at[g];
        for (long i = 0, j = a->n - 1; i < j; i++, j--) {   /* reverse: tail first */
            int32_t t = a->ids[i]; a->ids[i] = a->ids[j]; a->ids[j] = t;
        }
        free_list(p, a->ids, a->n);
        mtab_t *m = &s->mt[g];
        int32_t rev[MAXE];
        for (int j = 0; j < m->n; j++) rev[j] = m->id[m->n - 1 - j];
        free_list(p, rev, m->n);
    }
    seq_reset(s);
}

/* ---- introspection ---------------------------------------------------------------------- */

void kvpool_get_stats(const kvpool_t *p, kvpool_stats_t *st) { *st = p->st; }

long kvpool_free_order(const kvpool_t *p, int32_t *ids, long max)
{
    long n = 0;
    for (int32_t i = p->b[p->head].next; i != p->tail; i = p->b[i].next) {
        if (n < max) ids[n] = i;
        n++;
    }
    return n;
}

int kvpool_block_ref(const kvpool_t *p, int32_t id) { return id >= 0 && id < p->n ? p->b[id].ref : -1; }
int kvpool_block_hashed(const kvpool_t *p, int32_t id) { return id >= 0 && id < p->n ? p->b[id].hashed : 0; }

int kvpool_check(const kvpool_t *p, const char **what)
{
    const char *bad = NULL;
    long nfree = 0, ncf = 0, npend = 0, inuse[KVPOOL__KINDS] = { 0 }, nhashed = 0, nmap = 0;
    int32_t prev = p->head;
    for (int32_t i = p->b[p->head].next; i != p->tail && !bad; i = p->b[i].next) {
        if (i < 0 || i >= p->n) bad = "free queue link out of range";
        else if (p->b[i].prev != prev) bad = "free queue back link broken";
        else if (p->b[i].where != W_FREE || p->b[i].ref != 0) bad = "a queued block is held or pending";
        else if (++nfree > p->n) bad = "free queue has a cycle";
        if (!bad && p->b[i].hashed) ncf++;
        prev = i;
    }
    if (!bad && p->b[p->tail].prev != prev) bad = "free queue tail link broken";
    for (int32_t i = p->pend_head; i >= 0 && !bad; i = p->b[i].next) {
        if (p->b[i].where != W_PENDING || p->b[i].ref != 0 || p->b[i].hashed) bad = "a pending block is held or hashed";
        else if (++npend > p->n) bad = "pending list has a cycle";
    }
    for (int32_t i = 0; i < p->n && !bad; i++) {
        const blk_t *k = &p->b[i];
        if (k->ref < 0) bad = "negative reference count";
        else if ((k->ref > 0) != (k->where == W_HELD)) bad = "reference count disagrees with the block's place";
        if (k->ref > 0) inuse[k->kind]++;
        if (k->hashed) {
            nhashed++;
            int32_t j = p->bucket[bucket_of(p, k->hash, k->group)];
            while (j >= 0 && j != i) j = p->b[j].hnext;
            if (j != i) bad = "a hashed block is missing from its chain";
        }
    }
    for (uint64_t bkt = 0; bkt <= p->mask && !bad; bkt++)
        for (int32_t j = p->bucket[bkt]; j >= 0 && !bad; j = p->b[j].hnext) {
            if (!p->b[j].hashed) bad = "an unhashed block sits in the map";
            if (++nmap > p->n) bad = "a hash chain has a cycle";
        }
    if (!bad) {
        if (nfree != p->st.free_blocks) bad = "free count disagrees with the queue";
        else if (ncf != p->st.cached_free) bad = "cached-free count disagrees with the queue";
        else if (npend != p->st.pending) bad = "pending count disagrees with the list";
        else if (nmap != nhashed || nmap != p->st.cached) bad = "map size disagrees with the hashed blocks";
        else if (nmap > p->n) bad = "the map holds more entries than blocks";
        else if (nfree + npend + inuse[0] + inuse[1] != p->n) bad = "blocks lost or counted twice";
        else
            for (int k = 0; k < KVPOOL__KINDS; k++)
                if (inuse[k] != p->st.in_use[k]) bad = "in-use count disagrees with the blocks";
    }
    if (what) *what = bad;
    return bad ? -1 : 0;
}
