/* engine.c: the step loop, arrivals, triggers and the effects of a step.
 * See engine.h for the design and its invariants. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include "engine_int.h"
#include "kvpool.h"

/* event_t.a of an EVT_SOURCE event: which generator's next request is due */
enum { SRC_POISSON = 1, SRC_TRACE = 2 };

#define GIB 1073741824.0
#define ENG_MEM_GIB 80.0          /* device memory without a profile's mem_gib nor the scenario's (hardware.analytic
                                     without mem_gib: a warning says so) */
#define ENG_ACT_GIB 2.0           /* activations and workspaces, as vLLM's profiling run leaves them */
#define ENG_BLOCK_DEFAULT 16      /* vLLM's block size for a model with no GDN layers */
#define ENG_MAX_TIME_S 1e7        /* latest arrival (116 days): the clock's double resolves 2e-9 s there, a millisecond step to 1e-6 */
#define ENG_STEP_RTOL 1e-6        /* how much of a step's duration the clock may lose to rounding */
#define ENG_MAX_BLOCKS ((double)SCN_MAX_GPU_BLOCKS)  /* derived KV capacity cap (scenario.h: products stay in a long) */

/* ---- request pool ---------------------------------------------------------- */

static int pool_alloc(engine_t *e)
{
    int slot;
    if (e->nfree > 0) {
        slot = e->free_slots[--e->nfree];
    } else {
        if (e->npool == e->cap_pool) {
            int cap = e->cap_pool ? 2 * e->cap_pool : 64;
            req_t *p = realloc(e->pool, (size_t)cap * sizeof *p);
            if (!p) return -1;
            e->pool = p;
            int *f = realloc(e->free_slots, (size_t)cap * sizeof *f);
            if (!f) return -1;
            e->free_slots = f;
            e->cap_pool = cap;
        }
        slot = e->npool++;
        if (e->npool > e->sum.peak_pool) e->sum.peak_pool = e->npool;
    }
    req_t *r = &e->pool[slot];
    memset(r, 0, sizeof *r);
    r->idx = slot;
    r->explicit_idx = -1;
    r->serial = e->serial++;
    for (int k = 0; k < EV__N; k++) r->t_ev[k] = ENG_T_NONE;
    r->t_last_tok = ENG_T_NONE;
    r->state = RQ_PENDING;
    return slot;
}

static void pool_release(engine_t *e, int slot)
{
    kvpool_seq_free(e->kv, e->pool[slot].kv);
    e->pool[slot].kv = NULL;
    free(e->pool[slot].conv_runs);
    e->pool[slot].conv_runs = NULL;
    e->pool[slot].state = RQ_FREE;
    e->free_slots[e->nfree++] = slot;
}

double engine_window(const engine_t *e, int i) { return e->win[i].value; }

int engine_window_dist(const engine_t *e, int i, win_dist_t *d)
{
    if (!e->win[i].lat) return 0;
    *d = e->win[i].dist;
    return 1;
}

const char *engine_step_type_name(step_type_t t)
{
    static const char *const names[] = { "any", "decode", "mixed", "prefill" };
    return t >= STEP_ANY && t <= STEP_PREFILL_ONLY ? names[t] : "?";
}

const char *engine_req_name(const engine_t *e, int slot, char *buf, size_t n)
{
    const req_t *r = &e->pool[slot];
    if (r->explicit_idx >= 0) return e->s->requests[r->explicit_idx].id;
    snprintf(buf, n, "r%ld", r->serial);
    return buf;
}

/* The block pool caches GDN states: prefix caching on with mamba_cache_mode align (a model
 * with GDN layers in mode none cannot be prefix-cached, so the pool then caches nothing). */
static int pool_align(const scenario_t *s)
{
    return s->engine.prefix_pool && s->engine.enable_prefix_caching && s->model.n_gdn > 0 &&
           s->engine.mamba_cache_mode == MAMBA_ALIGN;
}

/* KV blocks a request of this prompt and output holds at its largest (generation stops
 * at max_model_len); overflow-safe for any values the loader accepts. */
static long request_blocks(const engine_t *e, long prompt, long output)
{
    long maxlen = e->s->engine.max_model_len;
    long len = prompt >= maxlen || output > maxlen - prompt ? maxlen : prompt + output;
    /* the block pool in align mode holds a superseded state snapshot per GDN group
     * between a block boundary and the next allocation */
    long gdn = e->gdn_blocks * (pool_align(e->s) ? 2 : 1);
    return len / e->block + (len % e->block + e->spec_k + e->block - 1) / e->block + gdn;
}

/* ---- content for the block pool (prefix_cache_model: pool) ---------------------- */

/* Token identities: a request's own prompt tokens and its outputs are streams of keys of
 * their own; a named prefix is one stream every request naming it shares. */
enum { KEY_EXPLICIT_OWN = 1, KEY_EXPLICIT_OUT, KEY_GEN_OWN, KEY_GEN_OUT, KEY_PREFIX, KEY_GROUP, KEY_HASH };

static uint64_t content_key(uint64_t tag, uint64_t x)
{
    uint64_t z = (tag << 56) ^ x ^ 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t name_key(const char *name)
{
    uint64_t h = 14695981039346656037ull;
    for (; *name; name++) h = (h ^ (unsigned char)*name) * 1099511628211ull;
    return content_key(KEY_PREFIX, h);
}

/* A pool sequence for a request with the given runs (one own run when runs is NULL). */
static int make_seq(engine_t *e, req_t *r, const kvpool_run_t *runs, int nruns, uint64_t own_key,
                    uint64_t out_key)
{
    kvpool_run_t own = { own_key, 0, r->prompt };
    kvpool_content_t c = { runs ? runs : &own, runs ? nruns : 1, out_key, 0 };
    r->kv = kvpool_seq_new(e->kv, &c, r->prompt);
    if (!r->kv) snprintf(e->err, ENG_ERR_MAX, "out of memory (prefix cache)");
    return r->kv ? 0 : -1;
}

/* The pool and the explicit requests' sequences: request i's prompt is its prefix's
 * tokens or the prompt and output of the request it follows, then tokens of its own. */
static int pool_init(engine_t *e)
{
    const scenario_t *s = e->s;
    const scn_engine_t *eng = &s->engine;
    if (!eng->prefix_pool) return 0;
    kvpool_cfg_t c = kvpool_cfg_hybrid(e->capacity, e->block, (int)(e->gdn_blocks < KVPOOL_MAX_GROUPS ? e->gdn_blocks : KVPOOL_MAX_GROUPS));
    c.mamba_align = pool_align(s);
    c.enable_caching = eng->enable_prefix_caching && (s->model.n_gdn == 0 || c.mamba_align);
    c.eagle = eng->spec_mtp;
    c.retention = eng->retention < 0 ? KVPOOL_RETAIN_ALL : eng->retention;
    const char *rule = NULL;
    if (e->gdn_blocks >= KVPOOL_MAX_GROUPS || kvpool_cfg_check(&c, &rule) < 0) {
        int at_ret = eng->retention >= 0 && rule && strstr(rule, "retention");
        snprintf(e->err, ENG_ERR_MAX, "%s:%d:%d: %s: %s (block size %d, %ld GDN state groups)", s->path,
                 at_ret ? eng->retention_line : s->engine_line, at_ret ? eng->retention_col : s->engine_col,
                 at_ret ? "engine.prefix_cache_retention_interval" : "engine.prefix_cache_model",
                 rule ? rule : "more GDN state groups than the pool models (15)", e->block, e->gdn_blocks);
        return -1;
    }
    if (!(e->kv = kvpool_create(&c))) {
        snprintf(e->err, ENG_ERR_MAX, "out of memory (prefix cache)");
        return -1;
    }
    kvpool_run_t **rl = calloc((size_t)s->n_requests + 1, sizeof *rl);
    int *nr = calloc((size_t)s->n_requests + 1, sizeof *nr);
    int rc = rl && nr ? 0 : -1;
    for (int i = 0; i < s->n_requests && !rc; i++) {
        const scn_request_t *sr = &s->requests[i];
        req_t *r = &e->pool[e->explicit_slot[i]];
        int j = sr->follows, base = j >= 0 ? nr[j] + 1 : sr->prefix[0] ? 1 : 0;
        if (!(rl[i] = malloc(((size_t)base + 1) * sizeof *rl[i]))) { rc = -1; break; }
        long len = 0;
        if (j >= 0) {
            memcpy(rl[i], rl[j], (size_t)nr[j] * sizeof *rl[i]);
            long out = scn_request_output(s, j);
            rl[i][nr[j]] = (kvpool_run_t){ content_key(KEY_EXPLICIT_OUT, (uint64_t)j), 0, out };
            len = s->requests[j].prompt_tokens + out;
        } else if (sr->prefix[0]) {
            rl[i][0] = (kvpool_run_t){ name_key(sr->prefix), 0, sr->prefix_tokens };
            len = sr->prefix_tokens;
        }
        nr[i] = base;
        if (sr->prompt_tokens > len)
            rl[i][nr[i]++] = (kvpool_run_t){ content_key(KEY_EXPLICIT_OWN, (uint64_t)i), 0, sr->prompt_tokens - len };
        rc = make_seq(e, r, rl[i], nr[i], 0, content_key(KEY_EXPLICIT_OUT, (uint64_t)i));
    }
    for (int i = 0; rl && i < s->n_requests; i++) free(rl[i]);
    free(rl);
    free(nr);
    if (rc < 0 && !e->err[0]) snprintf(e->err, ENG_ERR_MAX, "out of memory (prefix cache)");
    return rc;
}

/* The largest value a distribution can draw (LONG_MAX when unbounded). */
static long dist_max(const scn_dist_t *d)
{
    double hi = d->kind == DIST_FIXED ? d->a : d->kind == DIST_UNIFORM ? d->b : INFINITY;
    return scn_dist_round(d, hi);
}

/* ---- waiting queue ---------------------------------------------------------- */

int engine_waitq_reserve(engine_t *e)
{
    if (e->wq_len < e->wq_cap) return 0;
    int cap = e->wq_cap ? 2 * e->wq_cap : 64;
    int *w = malloc((size_t)cap * sizeof *w);
    if (!w) return -1;
    for (int i = 0; i < e->wq_len; i++) w[i] = e->waitq[(e->wq_head + i) % e->wq_cap];
    free(e->waitq);
    e->waitq = w;
    e->wq_head = 0;
    e->wq_cap = cap;
    return 0;
}

static int waitq_push_back(engine_t *e, int slot)
{
    if (engine_waitq_reserve(e) < 0) return -1;
    e->waitq[(e->wq_head + e->wq_len) % e->wq_cap] = slot;
    e->wq_len++;
    return 0;
}

/* ---- sources ----------------------------------------------------------------- */

static long draw_dist(gsl_rng *rng, const scn_dist_t *d)
{
    double x;
    switch (d->kind) {
    case DIST_UNIFORM: x = d->a + (d->b - d->a) * gsl_rng_uniform(rng); break;
    case DIST_LOGNORMAL: x = gsl_ran_lognormal(rng, d->a, d->b); break;
    case DIST_EXPONENTIAL: x = gsl_ran_exponential(rng, d->a); break;
    default: x = d->a;
    }
    return scn_dist_round(d, x);    /* saturates at the clamp: a huge draw is never wrapped */
}

static double draw_frac(gsl_rng *rng, const scn_dist_t *d)
{
    double x;
    switch (d->kind) {
    case DIST_UNIFORM: x = d->a + (d->b - d->a) * gsl_rng_uniform(rng); break;
    case DIST_LOGNORMAL: x = gsl_ran_lognormal(rng, d->a, d->b); break;
    case DIST_EXPONENTIAL: x = gsl_ran_exponential(rng, d->a); break;
    default: x = d->a;
    }
    return x < 0 ? 0 : x > 1 ? 1 : x;
}

static int push_ev(engine_t *e, double t, evt_kind_t k, int a)
{
    event_t ev = { .time = t, .kind = k, .a = a };
    if (evq_push(&e->q, ev) < 0) {
        snprintf(e->err, ENG_ERR_MAX, "out of memory (event queue)");
        return -1;
    }
    return 0;
}

static int schedule_next_poisson(engine_t *e, double after)
{
    const scn_poisson_t *p = &e->s->poisson;
    if (!p->enabled || e->poisson_made >= p->count) return 0;
    double t = after + gsl_ran_exponential(e->rng_wl, 1.0 / p->rate_per_s);
    return push_ev(e, t, EVT_SOURCE, SRC_POISSON);
}

/* A generated request (Poisson or trace); group >= 0: its prompt starts with the first
 * ptoks tokens of prefix group `group` (the block pool); turns > 1: the first turn of a
 * conversation (the block pool). */
static int make_generated(engine_t *e, long prompt, long output, long cached, long group, long ptoks, long turns,
                          double t, const uint64_t *hash, int nhash, long hblock)
{
    if (prompt < 1 || output < 1) {
        snprintf(e->err, ENG_ERR_MAX, "invariant violated: a generated request of %ld prompt and %ld output tokens",
                 prompt, output);
        return -1;
    }
    int slot = pool_alloc(e);
    if (slot < 0) {
        snprintf(e->err, ENG_ERR_MAX, "out of memory (requests)");
        return -1;
    }
    req_t *r = &e->pool[slot];
    r->prompt = r->target = prompt;
    r->output = output;
    r->cached = cached;
    if (e->kv && nhash > 0) {
        /* a trace's hash_ids: block i of the prompt is content block hash[i] (blocks of hblock
         * tokens, the last cut at the prompt's end), so prompts that share leading ids share
         * those blocks' tokens; the rest of the prompt is its own */
        uint64_t own = content_key(KEY_GEN_OWN, (uint64_t)r->serial);
        kvpool_run_t *runs = malloc(((size_t)nhash + 1) * sizeof *runs);
        if (!runs) {
            snprintf(e->err, ENG_ERR_MAX, "out of memory (prefix cache)");
            return -1;
        }
        int nr = 0;
        long at = 0;
        for (int i = 0; i < nhash && at < prompt; i++, at += hblock)
            runs[nr++] = (kvpool_run_t){ content_key(KEY_HASH, hash[i]), 0, hblock < prompt - at ? hblock : prompt - at };
        if (at < prompt) runs[nr++] = (kvpool_run_t){ own, 0, prompt - at };
        int rc = make_seq(e, r, runs, nr, own, content_key(KEY_GEN_OUT, (uint64_t)r->serial));
        free(runs);
        if (rc < 0) return -1;
    } else if (e->kv) {
        uint64_t own = content_key(KEY_GEN_OWN, (uint64_t)r->serial);
        if (ptoks > prompt) ptoks = prompt;
        int shared = group >= 0 && ptoks > 0;
        kvpool_run_t runs[2] = { { content_key(KEY_GROUP, (uint64_t)group), 0, ptoks }, { own, 0, prompt - ptoks } };
        if (!shared) runs[0] = runs[1] = (kvpool_run_t){ own, 0, prompt };
        int nr = shared && ptoks < prompt ? 2 : 1;
        if (make_seq(e, r, runs, nr, own, content_key(KEY_GEN_OUT, (uint64_t)r->serial)) < 0) return -1;
        if (turns > 1) {
            r->turns_left = (int)(turns - 1);
            if (!(r->conv_runs = malloc(2 * sizeof *r->conv_runs))) {
                snprintf(e->err, ENG_ERR_MAX, "out of memory (conversations)");
                return -1;
            }
            memcpy(r->conv_runs, runs, (size_t)nr * sizeof *runs);
            r->conv_nruns = nr;
        }
    }
    r->t_ev[EV_ARRIVAL] = t;
    r->state = RQ_WAITING;
    e->n_arrived++;
    return waitq_push_back(e, slot) < 0 ? (snprintf(e->err, ENG_ERR_MAX, "out of memory"), -1) : 0;
}

/* A Poisson arrival due at t (<= now: events are handled at step boundaries).  The next
 * arrival is drawn from t, not from now, so the process keeps its rate under load. */
static int poisson_arrival(engine_t *e, double t)
{
    const scn_poisson_t *p = &e->s->poisson;
    long maxlen = e->s->engine.max_model_len;
    long prompt = draw_dist(e->rng_wl, &p->prompt);
    long output = draw_dist(e->rng_wl, &p->output);
    double cf = draw_frac(e->rng_wl, &p->cached_frac);
    if (prompt < 1) prompt = 1;
    if (output < 1) output = 1;
    /* a generated request never exceeds max_model_len: the prompt gives way */
    if (prompt > maxlen || output > maxlen - prompt) {
        e->sum.clamped++;
        if (output >= maxlen) output = maxlen / 2;
        prompt = maxlen - output;
    }
    long group = -1;
    if (p->prefix_groups > 0 && gsl_rng_uniform(e->rng_wl) < p->prefix_share)
        group = (long)gsl_rng_uniform_int(e->rng_wl, (unsigned long)p->prefix_groups);
    e->poisson_made++;
    if (make_generated(e, prompt, output, (long)(cf * (double)prompt), group, p->prefix_tokens, p->conv_turns, t, NULL, 0,
                       0) < 0)
        return -1;
    return schedule_next_poisson(e, t);
}

/* A conversation's turn (slot) finished: its next turn, pending, arrives an exponential time
 * of mean think_s later; its prompt is this turn's prompt and output, then a new prompt draw.
 * The conversation ends where the next turn would pass max_model_len or not fit in the pool.
 * 0, or -1 out of memory. */
static int next_turn(engine_t *e, int slot)
{
    const scn_poisson_t *p = &e->s->poisson;
    req_t *r = &e->pool[slot];
    if (r->turns_left <= 0 || !r->conv_runs) return 0;
    long base = r->prompt + r->output, maxlen = e->s->engine.max_model_len;
    long add = draw_dist(e->rng_wl, &p->prompt);
    long output = draw_dist(e->rng_wl, &p->output);
    double think = p->conv_think_s > 0 ? gsl_ran_exponential(e->rng_wl, p->conv_think_s) : 0;
    if (add < 1) add = 1;
    if (output < 1) output = 1;
    if (add > maxlen - base || output > maxlen - base - add || request_blocks(e, base + add, output) > e->capacity)
        return 0;
    int nr = r->conv_nruns + 2, left = r->turns_left - 1;
    kvpool_run_t *runs = malloc((size_t)nr * sizeof *runs);
    if (!runs) {
        snprintf(e->err, ENG_ERR_MAX, "out of memory (conversations)");
        return -1;
    }
    memcpy(runs, r->conv_runs, (size_t)r->conv_nruns * sizeof *runs);
    runs[nr - 2] = (kvpool_run_t){ content_key(KEY_GEN_OUT, (uint64_t)r->serial), 0, r->output };
    int ns = pool_alloc(e);            /* may move e->pool: r is not used after it */
    if (ns < 0) {
        free(runs);
        snprintf(e->err, ENG_ERR_MAX, "out of memory (requests)");
        return -1;
    }
    req_t *q = &e->pool[ns];
    uint64_t own = content_key(KEY_GEN_OWN, (uint64_t)q->serial);
    runs[nr - 1] = (kvpool_run_t){ own, 0, add };
    q->prompt = q->target = base + add;
    q->output = output;
    if (make_seq(e, q, runs, nr, own, content_key(KEY_GEN_OUT, (uint64_t)q->serial)) < 0) {
        free(runs);
        return -1;
    }
    q->turns_left = left;
    if (left > 0) {
        q->conv_runs = runs;
        q->conv_nruns = nr;
    } else {
        free(runs);
    }
    return push_ev(e, e->now + think, EVT_ARRIVAL, ns);
}

/* A trace being read: the file, the line last read, the last arrival time (-1 before the
 * header or first row: a header is the first line that is not a comment or blank). */
typedef struct trace_rd {
    FILE *f;
    long line;
    double last;
    uint64_t **ids;               /* the row's hash_ids (grown as needed), their count, room, block tokens */
    int *nids, *capids;
    long *block;
} trace_rd_t;

#define TRACE_LINE_MAX 65536      /* a trace line's longest (hash_ids make long lines) */

/* A hash_ids field "B:ID ID ...": B tokens a block (1 to 2^20), then one or more block ids
 * (decimal, below 2^63) separated by blanks, into rd's buffer.  0, or -1 malformed or out of
 * memory (*oom set). */
static int trace_hash_ids(trace_rd_t *rd, const char *f, int *oom)
{
    const char *p = f;
    char *end;
    if (!(*p >= '0' && *p <= '9')) return -1;
    errno = 0;
    long b = strtol(p, &end, 10);
    if (errno || *end != ':' || b < 1 || b > (1L << 20)) return -1;
    *rd->block = b;
    *rd->nids = 0;
    for (p = end + 1;;) {
        while (*p == ' ' || *p == '\t') p++;
        if (!*p) break;
        if (!(*p >= '0' && *p <= '9')) return -1;
        errno = 0;
        unsigned long long id = strtoull(p, &end, 10);
        if (errno || id > (unsigned long long)INT64_MAX || (*end && *end != ' ' && *end != '\t')) return -1;
        if (*rd->nids == *rd->capids) {
            int nc = *rd->capids ? 2 * *rd->capids : 64;
            uint64_t *n = realloc(*rd->ids, (size_t)nc * sizeof *n);
            if (!n) {
                *oom = 1;
                return -1;
            }
            *rd->ids = n;
            *rd->capids = nc;
        }
        (*rd->ids)[(*rd->nids)++] = (uint64_t)id;
        p = end;
    }
    return *rd->nids > 0 ? 0 : -1;
}

/* A trace row's fields: arrival_s a plain decimal number (no hex, inf, nan; zero or
 * normal, not subnormal), then two or three token counts of decimal digits, or five with
 * the prefix columns (prefix_group may be -1), separated by commas, none empty (blanks
 * around a field are ignored), and a seventh, hash_ids, read into rd (trace_hash_ids).  The
 * number of fields (3, 4 or 6; 6 with hash_ids), or -1 malformed (*oom set: out of memory). */
static int trace_fields(trace_rd_t *rd, const char *p, double *t, long *pr, long *out, long *ca, long *grp, long *pt,
                        int *oom)
{
    static _Thread_local char buf[TRACE_LINE_MAX];
    size_t n = strlen(p);
    while (n && (p[n - 1] == '\n' || p[n - 1] == '\r' || p[n - 1] == ' ' || p[n - 1] == '\t')) n--;
    if (n >= sizeof buf) return -1;
    memcpy(buf, p, n);
    buf[n] = 0;
    /* at most TRACE_FIELDS: the field array is sized by it (the seventh, hash_ids, is read
     * apart; the value array below takes the first six) */
    enum { TRACE_FIELDS = 7 };
    char *f[TRACE_FIELDS];
    int nf = 0;
    for (char *q = buf;; q++) {
        if (nf == TRACE_FIELDS) return -1;       /* one field too many */
        f[nf++] = q;
        if (!(q = strchr(q, ','))) break;
        *q = 0;
    }
    if (nf != 3 && nf != 4 && nf != 6 && nf != TRACE_FIELDS) return -1;
    *rd->nids = 0;
    if (nf == TRACE_FIELDS) {   /* hash_ids */
        char *h = f[6];
        while (*h == ' ' || *h == '\t') h++;
        if (trace_hash_ids(rd, h, oom) < 0) return -1;
        nf = 6;
    }
    for (int i = 0; i < nf; i++) {   /* blanks around a field are allowed */
        while (*f[i] == ' ' || *f[i] == '\t') f[i]++;
        size_t l = strlen(f[i]);
        while (l && (f[i][l - 1] == ' ' || f[i][l - 1] == '\t')) f[i][--l] = 0;
    }
    const char *d = f[0];
    int digits = 0;
    if (*d == '+' || *d == '-') d++;
    while (*d >= '0' && *d <= '9') d++, digits++;
    if (*d == '.')
        for (d++; *d >= '0' && *d <= '9'; d++) digits++;
    if (digits && (*d == 'e' || *d == 'E')) {
        d++;
        if (*d == '+' || *d == '-') d++;
        if (!(*d >= '0' && *d <= '9')) return -1;
        while (*d >= '0' && *d <= '9') d++;
    }
    if (!digits || *d) return -1;
    errno = 0;
    *t = strtod(f[0], NULL);
    if (errno == ERANGE || (*t != 0 && !isnormal(*t))) return -1;
    long *v[TRACE_FIELDS - 1] = { pr, out, ca, grp, pt };
    for (int i = 1; i < nf; i++) {
        const char *num = i == 4 && f[i][0] == '-' ? f[i] + 1 : f[i];
        if (!num[0] || strspn(num, "0123456789") != strlen(num) || strlen(num) > 18) return -1;
        *v[i - 1] = strtol(f[i], NULL, 10);
    }
    return nf;
}

/* Read the next request row of a trace into *t and row[] (prompt, output, cached, prefix
 * group, prefix tokens).  Rows: arrival_s,prompt_tokens,output_tokens[,cached_tokens
 * [,prefix_group,prefix_tokens]]; '#' comments and blank lines anywhere, an optional header
 * (a line starting "arrival") before the first row.  The prefix columns (the block pool
 * only): rows of one group (an integer >= 0; -1 none) share their first min(prefix_tokens)
 * tokens.
 * 1 a row, 0 the end, ENG_EINPUT a malformed or impossible row (e->err names the line). */
static int trace_read(engine_t *e, trace_rd_t *rd, double *t, long row[5])
{
    static _Thread_local char line[TRACE_LINE_MAX];
    while (fgets(line, sizeof line, rd->f)) {
        rd->line++;
        if (!strchr(line, '\n') && !feof(rd->f)) {
            snprintf(e->err, ENG_ERR_MAX, "%s:%ld:1: trace: line too long", e->s->trace_path, rd->line);
            return ENG_EINPUT;
        }
        char *p = line;
        while (*p == ' ' || *p == '\t') p++;
        if (*p == '#' || *p == '\n' || *p == '\r' || *p == 0) continue;
        if (rd->last < 0 && strncmp(p, "arrival", 7) == 0) {   /* the header: before any row */
            rd->last = 0;
            continue;
        }
        long pr, out, ca = 0, grp = -1, pt = 0;
        int oom = 0;
        int got = trace_fields(rd, p, t, &pr, &out, &ca, &grp, &pt, &oom);
        if (oom) {
            snprintf(e->err, ENG_ERR_MAX, "out of memory (trace hash_ids)");
            return ENG_EFAIL;
        }
        if (got < 0) {
            snprintf(e->err, ENG_ERR_MAX, "%s:%ld:1: trace: expected arrival_s,prompt_tokens,output_tokens[,cached_tokens[,prefix_group,prefix_tokens[,hash_ids]]]"
                     " (hash_ids: B:ID ID ..., B tokens a block)",
                     e->s->trace_path, rd->line);
            return ENG_EINPUT;
        }
        if (!isfinite(*t) || *t < 0 || *t < rd->last || pr < 1 || out < 1 || ca < 0 || ca > pr
            || pr > e->s->engine.max_model_len || out > e->s->engine.max_model_len - pr) {
            snprintf(e->err, ENG_ERR_MAX,
                     "%s:%ld:1: trace: invalid row (arrivals must be >= 0 and non-decreasing, "
                     "prompt and output >= 1, 0 <= cached <= prompt, prompt + output <= max_model_len %ld)",
                     e->s->trace_path, rd->line, e->s->engine.max_model_len);
            return ENG_EINPUT;
        }
        if (*t > ENG_MAX_TIME_S) {
            snprintf(e->err, ENG_ERR_MAX, "%s:%ld:1: trace: arrival %g s is past %g s (the simulated clock would lose"
                     " the steps' durations)", e->s->trace_path, rd->line, *t, ENG_MAX_TIME_S);
            return ENG_EINPUT;
        }
        if (*rd->nids > 0 && (!e->s->engine.prefix_pool || grp != -1 || pt != 0
                              || (long)(*rd->nids - 1) * *rd->block >= pr)) {
            snprintf(e->err, ENG_ERR_MAX, "%s:%ld:1: trace: %s", e->s->trace_path, rd->line,
                     !e->s->engine.prefix_pool ? "the hash_ids column needs engine.prefix_cache_model: pool"
                     : grp != -1 || pt != 0 ? "a row with hash_ids takes prefix_group -1 and prefix_tokens 0"
                                            : "more hash_ids blocks than the prompt holds (each covers at least one token)");
            return ENG_EINPUT;
        }
        if (got == 6 && (!e->s->engine.prefix_pool || grp < -1 || pt < 0 || pt > pr)) {
            snprintf(e->err, ENG_ERR_MAX, "%s:%ld:1: trace: %s", e->s->trace_path, rd->line,
                     !e->s->engine.prefix_pool ? "the prefix_group and prefix_tokens columns need engine.prefix_cache_model: pool"
                                               : "invalid prefix columns (prefix_group >= -1, 0 <= prefix_tokens <= prompt)");
            return ENG_EINPUT;
        }
        long need = request_blocks(e, pr, out);
        if (need > e->capacity) {
            snprintf(e->err, ENG_ERR_MAX, "%s:%ld:1: trace: the request needs %ld KV blocks of %d tokens but the cache holds %ld",
                     e->s->trace_path, rd->line, need, e->block, e->capacity);
            return ENG_EINPUT;
        }
        rd->last = *t;
        row[0] = pr;
        row[1] = out;
        row[2] = ca;
        row[3] = grp;
        row[4] = pt;
        return 1;
    }
    if (ferror(rd->f)) {
        snprintf(e->err, ENG_ERR_MAX, "%s:%ld:1: trace: read error: %s", e->s->trace_path, rd->line + 1, strerror(errno));
        return ENG_EINPUT;
    }
    return 0;
}

/* Read the next trace row and schedule its arrival (nothing at the end of the trace). */
static int trace_next(engine_t *e)
{
    trace_rd_t rd = { e->trace, e->trace_line, e->trace_last, &e->trace_hash, &e->trace_nhash, &e->trace_hcap,
                      &e->trace_hblock };
    double t;
    int got = trace_read(e, &rd, &t, e->trace_row);
    e->trace_line = rd.line;
    e->trace_last = rd.last;
    return got <= 0 ? got : push_ev(e, t, EVT_SOURCE, SRC_TRACE);
}

/* Open the trace without blocking in open() (a FIFO with no writer would wait forever):
 * only a regular file is read. */
static FILE *trace_open(engine_t *e)
{
    const char *path = e->s->trace_path;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC), fl = -1;
    struct stat st;
    FILE *f = NULL;
    if (fd >= 0 && fstat(fd, &st) == 0 && !S_ISREG(st.st_mode)) {
        snprintf(e->err, ENG_ERR_MAX, "%s: cannot open trace: %s", path,
                 S_ISDIR(st.st_mode) ? "Is a directory" : "not a regular file (a FIFO, device or socket)");
        close(fd);
        return NULL;
    }
    if (fd >= 0 && (fl = fcntl(fd, F_GETFL)) >= 0 && fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == 0) f = fdopen(fd, "r");
    if (!f) {
        snprintf(e->err, ENG_ERR_MAX, "%s: cannot open trace: %s", path, strerror(errno));
        if (fd >= 0) close(fd);
    }
    return f;
}

int engine_check_trace(engine_t *e)
{
    if (!e->s->trace_path[0]) return 0;
    uint64_t *ids = NULL;
    int nids = 0, capids = 0;
    long block = 0;
    trace_rd_t rd = { trace_open(e), 0, -1, &ids, &nids, &capids, &block };
    if (!rd.f) return ENG_EINPUT;
    double t;
    long row[5];
    int got;
    while ((got = trace_read(e, &rd, &t, row)) > 0) {}
    fclose(rd.f);
    free(ids);
    return got == ENG_EFAIL ? ENG_EFAIL : got < 0 ? ENG_EINPUT : 0;
}

/* ---- triggers ---------------------------------------------------------------- */

static int fire_arrival(engine_t *e, int slot, double t)
{
    req_t *r = &e->pool[slot];
    if (r->state != RQ_PENDING) return 0;
    r->state = RQ_WAITING;
    r->t_ev[EV_ARRIVAL] = t;
    e->n_arrived++;
    if (r->explicit_idx >= 0)   /* its dependents can fire from now on: each is queued once */
        for (int k = e->trig_first[r->explicit_idx]; k < e->trig_first[r->explicit_idx + 1]; k++)
            e->trig_new[e->n_trig_new++] = e->trig_dep[k];
    return waitq_push_back(e, slot) < 0 ? (snprintf(e->err, ENG_ERR_MAX, "out of memory"), -1) : 0;
}

static void heap_push(int *h, int *n, int v)
{
    int i = (*n)++;
    for (; i > 0 && h[(i - 1) / 2] > v; i = (i - 1) / 2) h[i] = h[(i - 1) / 2];
    h[i] = v;
}

static int heap_pop(int *h, int *n)
{
    int top = h[0], v = h[--*n], i = 0;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && h[c + 1] < h[c]) c++;
        if (h[c] >= v) break;
        h[i] = h[c];
        i = c;
    }
    if (*n > 0) h[i] = v;
    return top;
}

/* After a step (or an arrival), release explicit requests whose trigger now holds, in
 * request order: one released here can release a later one in the same pass (an earlier
 * one at the next check).  Only requests whose reference has arrived are looked at
 * (trig_live and trig_new), so a step costs what can fire, not every request. */
static int check_triggers(engine_t *e)
{
    const scenario_t *s = e->s;
    int *h = e->trig_heap, nh = 0, nlive = 0;
    for (int k = 0; k < e->n_trig_live; k++) heap_push(h, &nh, e->trig_live[k]);
    for (int k = 0; k < e->n_trig_new; k++) heap_push(h, &nh, e->trig_new[k]);
    e->n_trig_new = 0;
    while (nh > 0) {
        int i = heap_pop(h, &nh);
        const scn_trigger_t *tg = &s->requests[i].arrival;
        int slot = e->explicit_slot[i];
        if (e->pool[slot].state != RQ_PENDING || e->pool[slot].t_ev[EV_ARRIVAL] == ENG_T_ARMED) continue;
        const req_t *rr = &e->pool[e->trigger_ref[i]];
        int fire = tg->kind == TRIG_AFTER_DECODED ? rr->emitted >= tg->decoded
                                                  : rr->t_ev[tg->event] >= 0;
        if (!fire) {
            e->trig_live[nlive++] = i;
            continue;
        }
        if (tg->delay_s > 0) {
            e->pool[slot].t_ev[EV_ARRIVAL] = ENG_T_ARMED;
            if (push_ev(e, e->now + tg->delay_s, EVT_ARRIVAL, slot) < 0) return -1;
            continue;
        }
        if (fire_arrival(e, slot, e->now) < 0) return -1;
        /* i's dependents after it are looked at in this pass, those before it next time */
        int keep = 0;
        for (int k = 0; k < e->n_trig_new; k++) {
            if (e->trig_new[k] > i) heap_push(h, &nh, e->trig_new[k]);
            else e->trig_new[keep++] = e->trig_new[k];
        }
        e->n_trig_new = keep;
    }
    e->n_trig_live = nlive;
    return 0;
}

/* ---- set-up ------------------------------------------------------------------ */


int engine_init(engine_t *e, const scenario_t *s, cost_model_t *cost, const profile_t *prof)
{
    memset(e, 0, sizeof *e);
    evq_init(&e->q);
    route_plan_init(&e->plan);
    route_plan_init(&e->draft_plan);
    e->s = s;
    e->cost = cost;
    const scn_engine_t *eng = &s->engine;
    int tp = eng->tensor_parallel_size;
    int kvb = kv_is_fp8(eng->kv_cache_dtype) ? 1 : 2;   /* bytes per KV element */
    e->spec_k = eng->spec_mtp ? eng->num_speculative_tokens : 0;
    /* the block size: as set; else a hybrid model's align size (a block's KV as large as
     * one request's GDN state); a model without GDN layers has no state to align to and
     * takes vLLM's default block of 16 tokens */
    e->block = eng->block_size > 0 ? eng->block_size
               : s->model.n_gdn > 0 ? model_block_size(&s->model, tp, kvb, e->spec_k) : ENG_BLOCK_DEFAULT;
    model_rank_t rk;
    if (model_rank(&s->model, tp, &rk) < 0) {
        snprintf(e->err, ENG_ERR_MAX, "%s: engine.tensor_parallel_size %d does not divide the model's heads", s->path, tp);
        return -1;
    }
    /* KV pool: a block holds `block` tokens of every full-attention layer; each running
     * request also holds its GDN state, counted in whole blocks of the same size. */
    double block_bytes = (double)e->block * model_attn_bytes_per_token(&s->model, tp, kvb) * s->model.n_full_attn;
    double gdn_bytes = (double)s->model.n_gdn * model_gdn_page_bytes(&s->model, tp, e->spec_k);
    e->gdn_blocks = block_bytes > 0 ? (long)ceil(gdn_bytes / block_bytes) : 0;
    if (eng->num_gpu_blocks > 0) {
        e->capacity = eng->num_gpu_blocks;
    } else {
        double mem_gib = prof && prof->mem_gib > 0 ? prof->mem_gib : s->hw_mem_gib > 0 ? s->hw_mem_gib : ENG_MEM_GIB;
        double mem = mem_gib * GIB * eng->gpu_memory_utilization;
        double weights = rk.params * s->model.weight_bytes_per_param;
        double act = ENG_ACT_GIB * GIB;
        double cap = floor((mem - weights - act) / block_bytes);
        if (!(cap >= 1)) {
            snprintf(e->err, ENG_ERR_MAX,
                     "%s:%d:%d: engine: the model's weights (%.1f GiB per rank) leave no room for a KV cache in %.1f GiB x %.2f;"
                     " set engine.num_gpu_blocks or use more tensor parallelism",
                     s->path, s->engine_line, s->engine_col, weights / GIB, mem_gib,
                     eng->gpu_memory_utilization);
            return -1;
        }
        e->capacity = cap < ENG_MAX_BLOCKS ? (long)cap : (long)ENG_MAX_BLOCKS;
    }
    if (eng->prefix_pool && e->capacity > KVPOOL_MAX_BLOCKS) {
        snprintf(e->err, ENG_ERR_MAX, "%s:%d:%d: engine: the KV cache sized from memory holds %ld blocks, more than the"
                 " block pool's %ld (~45 bytes of state each): set engine.num_gpu_blocks", s->path, s->engine_line,
                 s->engine_col, e->capacity, (long)KVPOOL_MAX_BLOCKS);
        return -1;
    }
    e->sum.block_size = e->block;
    e->sum.capacity_blocks = e->capacity;
    /* every explicit request must fit in the pool on its own, or it would wait forever;
     * and arrive in time for the clock to resolve its steps */
    for (int i = 0; i < s->n_requests; i++) {
        const scn_request_t *sr = &s->requests[i];
        double at = sr->arrival.kind == TRIG_TIME ? sr->arrival.time_s : sr->arrival.delay_s;
        if (at > ENG_MAX_TIME_S) {
            snprintf(e->err, ENG_ERR_MAX,
                     "%s:%d:%d: workload.requests[%d].arrival: %s %g s is past %g s (the simulated clock would lose the"
                     " steps' durations)", s->path, sr->line, sr->col, i,
                     sr->arrival.kind == TRIG_TIME ? "the arrival" : "the delay", at, ENG_MAX_TIME_S);
            return -1;
        }
        long need = request_blocks(e, sr->prompt_tokens, sr->output_tokens);
        if (need > e->capacity) {
            snprintf(e->err, ENG_ERR_MAX,
                     "%s:%d:%d: workload.requests[%d]: request %s needs %ld KV blocks of %d tokens but the cache holds %ld"
                     " (engine.num_gpu_blocks)",
                     s->path, sr->line, sr->col, i, sr->id, need, e->block, e->capacity);
            return -1;
        }
    }
    /* a generated request has at least one prompt and one output token (a request with
     * no output has no first token: every latency window would be meaningless) */
    if (s->poisson.enabled && s->engine.max_model_len < 2) {
        snprintf(e->err, ENG_ERR_MAX,
                 "%s:%d:%d: workload.poisson: engine.max_model_len %ld leaves no room for a generated request"
                 " (one prompt and one output token at least)",
                 s->path, s->poisson_line, s->poisson_col, s->engine.max_model_len);
        return -1;
    }
    if (s->poisson.enabled && s->poisson.start_s > ENG_MAX_TIME_S) {
        snprintf(e->err, ENG_ERR_MAX, "%s:%d:%d: workload.poisson.start_s: %g s is past %g s (the simulated clock would"
                 " lose the steps' durations)", s->path, s->poisson_line, s->poisson_col, s->poisson.start_s, ENG_MAX_TIME_S);
        return -1;
    }
    /* the largest request the Poisson generator can draw must fit too */
    if (s->poisson.enabled) {
        long pmax = dist_max(&s->poisson.prompt), omax = dist_max(&s->poisson.output);
        long need = request_blocks(e, pmax, omax);
        if (need > e->capacity) {
            snprintf(e->err, ENG_ERR_MAX,
                     "%s:%d:%d: workload.poisson: a generated request can need %ld KV blocks of %d tokens but the cache"
                     " holds %ld (clamp prompt/output with max:, or raise engine.num_gpu_blocks)",
                     s->path, s->poisson_line, s->poisson_col, need, e->block, e->capacity);
            return -1;
        }
    }

    e->rcfg = (route_cfg_t){
        .smallq_max_q = s->env.smallq_decode_max_q,
        .prefix_decode_rows = s->env.prefix_decode_rows,
        .bm32_any_page = s->env.d256_bm32_any_page,
        .page = e->block,
        .kv_dtype = eng->kv_cache_dtype,
        .group = rk.group,
        .fork_kernels = cost_profile_fork_kernels(prof),
        .fp8_bridge_page = ROUTE_NATIVE_PAGE,
        .varlen = eng->attention_backend == ATTN_BACKEND_VARLEN,
    };
    /* chunks end on block boundaries only where a recurrent state is cached per block */
    e->align = s->model.n_gdn > 0 && eng->mamba_cache_mode == MAMBA_ALIGN;
    /* upstream in align mode: a chunk capped below one block by the threshold or the budget is
     * cut to 0 tokens by _mamba_block_aligned_split (num_new_tokens // block_size * block_size),
     * and schedule() then skips the request (`if num_new_tokens == 0: ... continue`) every
     * step: vLLM would never schedule a prompt of a block or more
     * (vllm-project/vllm:vllm/v1/core/sched/scheduler.py@00024d314514900f361ad072af6931e403b7f589) */
    if (e->align && eng->scheduler == SCHED_UPSTREAM) {
        long thr = eng->long_prefill_token_threshold, cap = thr > 0 && thr < eng->max_num_batched_tokens
                                                            ? thr : eng->max_num_batched_tokens;
        if (cap < e->block) {
            snprintf(e->err, ENG_ERR_MAX, "%s:%d:%d: engine.%s: %ld is below the block size %d of this hybrid model in"
                     " mamba_cache_mode align: every chunk that does not finish a prompt is cut to 0 tokens"
                     " (_mamba_block_aligned_split), so vLLM would never schedule a prompt of %d tokens or more",
                     s->path, s->engine_line, s->engine_col,
                     cap == thr ? "long_prefill_token_threshold" : "max_num_batched_tokens", cap, e->block, e->block);
            return -1;
        }
    }
    const char *varlen_law = kv_is_fp8(eng->kv_cache_dtype) ? "attn.varlen.fp8" : "attn.varlen.fp16";
    if (prof && e->rcfg.varlen && !prof_find(prof, varlen_law) && !eng->attention_backend_set) {
        /* upstream's default backend, but the profile has no varlen law: the fork's router */
        fprintf(stderr, "warning: %s: profile %s lacks %s: attention priced by the fork's kernels"
                " (set engine.attention_backend to choose)\n", s->path, prof->path, varlen_law);
        e->rcfg.varlen = 0;
    }
    if (prof && e->rcfg.varlen && !prof_find(prof, varlen_law)) {
        snprintf(e->err, ENG_ERR_MAX,
                 "%s:%d:%d: engine.attention_backend: profile %s lacks %s: run calib with the varlen"
                 " attention timer (kernels/attn_varlen.cu), or use attention_backend: fork",
                 s->path, s->engine_line, s->engine_col, prof->path, varlen_law);
        return -1;
    }
    if (prof && s->model.n_moe > 0 && !prof_find(prof, "gemm.moe.fp16"))
        fprintf(stderr, "warning: %s: profile %s has no law gemm.moe.fp16: the routed experts are priced by the"
                " dense gemm law, one GEMM per routed expert (calib --moe measures it)\n", s->path, prof->path);
    if (prof && eng->kv_cache_dtype == KV_FP8_E4M3)
        fprintf(stderr, "warning: %s: kv_cache_dtype fp8_e4m3: priced with the fp8_e5m2 laws (no e4m3 law in %s;"
                " decode takes the scalar kernel, the fork has no e4m3 XQA)\n", s->path, prof->path);
    e->rng_acc = gsl_rng_alloc(gsl_rng_mt19937);
    e->rng_wl = gsl_rng_alloc(gsl_rng_mt19937);
    e->cap_rows = eng->max_num_seqs + 1;
    e->rows = calloc((size_t)e->cap_rows, sizeof *e->rows);
    e->segs = calloc((size_t)e->cap_rows, sizeof *e->segs);
    e->running = calloc((size_t)eng->max_num_seqs + 1, sizeof *e->running);
    e->explicit_slot = calloc((size_t)s->n_requests + 1, sizeof *e->explicit_slot);
    if (!e->rng_acc || !e->rng_wl || !e->rows || !e->segs || !e->running || !e->explicit_slot) {
        snprintf(e->err, ENG_ERR_MAX, "out of memory");
        return -1;
    }
    /* two streams of one seed: MTP acceptance, and the workload's draws */
    gsl_rng_set(e->rng_acc, s->seed * 2 + 1);
    gsl_rng_set(e->rng_wl, s->seed * 2 + 2);

    for (int i = 0; i < s->n_requests; i++) {
        int slot = pool_alloc(e);
        if (slot < 0) {
            snprintf(e->err, ENG_ERR_MAX, "out of memory");
            return -1;
        }
        req_t *r = &e->pool[slot];
        const scn_request_t *sr = &s->requests[i];
        r->explicit_idx = i;
        r->prompt = r->target = sr->prompt_tokens;
        r->cached = sr->cached_tokens;
        /* generation stops at max_model_len, as in vLLM (finish reason "length") */
        long room = s->engine.max_model_len - sr->prompt_tokens;
        r->output = sr->output_tokens < room ? sr->output_tokens : (room > 0 ? room : 1);
        e->explicit_slot[i] = slot;
        if (sr->arrival.kind == TRIG_TIME && push_ev(e, sr->arrival.time_s, EVT_ARRIVAL, slot) < 0) return -1;
    }
    e->trigger_ref = malloc(((size_t)s->n_requests + 1) * sizeof *e->trigger_ref);
    if (!e->trigger_ref) {
        snprintf(e->err, ENG_ERR_MAX, "out of memory");
        return -1;
    }
    /* the loader resolved each trigger's reference (ref_idx) and refused one waiting for more
     * decoded tokens than its reference emits under max_model_len */
    for (int i = 0; i < s->n_requests; i++) {
        const scn_trigger_t *t = &s->requests[i].arrival;
        e->trigger_ref[i] = t->kind != TRIG_TIME && t->ref_idx >= 0 ? e->explicit_slot[t->ref_idx] : -1;
    }
    /* each reference's dependents (a counting sort by reference keeps them ascending) */
    size_t n = (size_t)s->n_requests;
    if (!(e->trig_first = calloc(5 * n + 2, sizeof *e->trig_first))) {
        snprintf(e->err, ENG_ERR_MAX, "out of memory");
        return -1;
    }
    e->trig_dep = e->trig_first + n + 1;
    e->trig_live = e->trig_dep + n;
    e->trig_new = e->trig_live + n;
    e->trig_heap = e->trig_new + n;
    for (int i = 0; i < s->n_requests; i++)
        if (e->trigger_ref[i] >= 0) e->trig_first[s->requests[i].arrival.ref_idx + 1]++;
    for (size_t r = 0; r < n; r++) e->trig_first[r + 1] += e->trig_first[r];
    for (int i = 0, *fill = e->trig_heap; i < s->n_requests; i++)   /* trig_heap: fill positions, until the run */
        if (e->trigger_ref[i] >= 0) {
            int r = s->requests[i].arrival.ref_idx;
            e->trig_dep[e->trig_first[r] + fill[r]++] = i;
        }
    int prc = pool_init(e);
    if (prc < 0) return prc;
    if (s->poisson.enabled && schedule_next_poisson(e, s->poisson.start_s) < 0) return -1;
    if (s->trace_path[0]) {
        e->trace_last = -1;
        if (!(e->trace = trace_open(e)) || trace_next(e) < 0) return -1;
        /* a trace with no request row, and nothing else to run: no requests at all */
        if (!evq_peek(&e->q) && !s->n_requests && !s->poisson.enabled) {
            snprintf(e->err, ENG_ERR_MAX, "%s:%ld:1: trace: no request rows (expected arrival_s,prompt_tokens,"
                     "output_tokens[,cached_tokens])", s->trace_path, e->trace_line + 1);
            return -1;
        }
    }
    return metrics_init(e);
}

void engine_free(engine_t *e)
{
    if (e->rng_acc) gsl_rng_free(e->rng_acc);
    if (e->rng_wl) gsl_rng_free(e->rng_wl);
    for (int i = 0; i < e->npool && e->pool; i++) {
        kvpool_seq_free(e->kv, e->pool[i].kv);
        free(e->pool[i].conv_runs);
    }
    kvpool_free(e->kv);
    if (e->trace) fclose(e->trace);
    free(e->trace_hash);
    free(e->pool);
    free(e->free_slots);
    free(e->explicit_slot);
    free(e->trigger_ref);
    free(e->trig_first);
    free(e->running);
    free(e->waitq);
    free(e->rows);
    free(e->segs);
    metrics_free(e);
    route_plan_free(&e->plan);
    route_plan_free(&e->draft_plan);
    evq_free(&e->q);
    memset(e, 0, sizeof *e);
}

/* ---- the loop ---------------------------------------------------------------- */

static long accepted_drafts(engine_t *e, req_t *r, int drafts)
{
    const scn_accept_t *a = &e->s->accept;
    if (drafts <= 0) return 0;
    if (!a->per_position) {
        double m = a->mean_accepted * drafts / (e->spec_k > 0 ? e->spec_k : 1);
        r->acc_carry += m;
        long k = (long)floor(r->acc_carry + 1e-9);
        if (k > drafts) k = drafts;
        r->acc_carry -= (double)k;
        return k;
    }
    long k = 0;
    while (k < drafts && k < a->n_probs && gsl_rng_uniform(e->rng_acc) < a->probs[k]) k++;
    return k;
}

static void set_event(engine_t *e, req_t *r, req_event_t ev, double t)
{
    (void)e;
    if (r->t_ev[ev] < 0) r->t_ev[ev] = t;
}

static int finish_request(engine_t *e, int run_pos)
{
    int slot = e->running[run_pos];
    req_t *r = &e->pool[slot];
    sched_release(e, r);
    memmove(&e->running[run_pos], &e->running[run_pos + 1], (size_t)(e->nrun - run_pos - 1) * sizeof(int));
    e->nrun--;
    r->state = RQ_DONE;
    set_event(e, r, EV_FINISHED, e->now);
    run_summary_t *S = &e->sum;
    S->requests_finished++;
    if (r->emitted != r->output || r->t_ev[EV_FIRST_TOKEN] < 0) {
        snprintf(e->err, ENG_ERR_MAX, "invariant violated: request %ld finished with %ld of %ld tokens%s",
                 r->serial, r->emitted, r->output, r->t_ev[EV_FIRST_TOKEN] < 0 ? " and no first token" : "");
        return -1;
    }
    double ttft = r->t_ev[EV_FIRST_TOKEN] - r->t_ev[EV_ARRIVAL];
    S->ttft_sum += ttft;
    S->ttft_n++;
    if (r->output > 1) {
        S->tpot_sum += (r->t_ev[EV_FINISHED] - r->t_ev[EV_FIRST_TOKEN]) / (double)(r->output - 1);
        S->tpot_n++;
    }
    S->itl_sum += r->itl_sum;
    S->itl_n += r->itl_n;
    if (metrics_on_finish(e, r) < 0) return -1;
    if (e->on_finish) e->on_finish(e->on_finish_ctx, e, r);
    return 0;
}

/* Apply a finished step: tokens computed and emitted, events, finishes. */
static int apply_step(engine_t *e, int n, double t_end)
{
    long emitted_total = 0;
    for (int i = 0; i < n; i++) {
        step_row_t *row = &e->rows[i];
        req_t *r = &e->pool[row->req];
        long tok = 0;
        if (row->prefill) {
            /* a chunk continues the prompt where the KV ends (at admission: where the
             * prefix-cache hit ends) and never passes the prompt: so at the final chunk,
             * tokens computed + cached = prompt (+ tokens emitted before a preemption) */
            long start = row->seq_len - row->q;
            if (start != r->computed || (row->admitted && start != r->cache_hit) || row->seq_len > r->target
                || row->q < 1) {
                snprintf(e->err, ENG_ERR_MAX,
                         "invariant violated: step %ld: prefill chunk [%ld, %ld) of request %ld does not continue"
                         " its KV (%ld computed, %ld cached, prompt %ld)",
                         e->step_no, start, row->seq_len, r->serial, r->computed, r->cache_hit, r->target);
                return -1;
            }
            r->computed_fresh += row->q;
            r->computed = row->seq_len;
            if (r->computed >= r->target) tok = 1;   /* the final chunk samples a token */
        } else {
            long drafts = row->q - 1;
            tok = 1 + accepted_drafts(e, r, (int)drafts);
            r->computed += tok;
        }
        if (tok > r->output - r->emitted) tok = r->output - r->emitted;
        if (tok > 0) {
            if (r->t_last_tok >= 0) {
                r->itl_sum += t_end - r->t_last_tok;
                r->itl_n++;
                if ((e->itl_wins || e->serve) && metrics_on_itl(e, t_end - r->t_last_tok) < 0) return -1;
            }
            r->t_last_tok = t_end;
            r->emitted += tok;
            set_event(e, r, EV_FIRST_TOKEN, t_end);
        }
        row->emitted = tok;
        emitted_total += tok;
    }
    e->sum.tokens_emitted += emitted_total;
    for (int i = e->nrun - 1; i >= 0; i--) {
        req_t *r = &e->pool[e->running[i]];
        if (r->emitted >= r->output && r->computed >= r->target)
            if (finish_request(e, i) < 0) return -1;
    }
    return 0;
}

static step_type_t classify(const step_row_t *rows, int n)
{
    int pre = 0, dec = 0;
    for (int i = 0; i < n; i++) {
        if (rows[i].prefill) pre = 1;
        else dec = 1;
    }
    return pre && dec ? STEP_MIXED : pre ? STEP_PREFILL_ONLY : STEP_DECODE_ONLY;
}

static int stop_reached(const engine_t *e)
{
    const scn_stop_t *st = &e->s->stop;
    if (st->kind == STOP_AT_EVENT) {
        for (int i = 0; i < e->s->n_requests; i++)
            if (!strcmp(e->s->requests[i].id, st->ref))
                return e->pool[e->explicit_slot[i]].t_ev[st->event] >= 0;
        return 0;
    }
    return 0;
}

static int pending_explicit(const engine_t *e)
{
    for (int i = 0; i < e->s->n_requests; i++)
        if (e->pool[e->explicit_slot[i]].state == RQ_PENDING) return 1;
    return 0;
}

static int handle_event(engine_t *e, const event_t *ev)
{
    if (ev->kind == EVT_ARRIVAL) {
        e->pool[ev->a].t_ev[EV_ARRIVAL] = ENG_T_NONE;
        return fire_arrival(e, ev->a, ev->time);   /* arrived at its event time */
    }
    if (ev->kind == EVT_SOURCE && ev->a == SRC_POISSON) return poisson_arrival(e, ev->time);
    if (ev->kind == EVT_SOURCE && ev->a == SRC_TRACE) {
        if (make_generated(e, e->trace_row[0], e->trace_row[1], e->trace_row[2], e->trace_row[3], e->trace_row[4], 1,
                           ev->time, e->trace_hash, e->trace_nhash, e->trace_hblock) < 0)
            return -1;
        return trace_next(e);
    }
    return 0;
}

/* The full invariant check (a violation is an error, never a warning): every
 * request that arrived is finished, running or waiting, exactly once; the running list
 * and the waiting queue agree with the requests' states; KV blocks in use are the sum of
 * what running requests hold and within capacity.  O(pool): at the end of every run,
 * and after every step in -DPACESIM_DEBUG builds. */
static int check_invariants(engine_t *e)
{
    long held = 0;
    for (int i = 0; i < e->nrun; i++) {
        const req_t *r = &e->pool[e->running[i]];
        if (r->state != RQ_RUNNING) {
            snprintf(e->err, ENG_ERR_MAX, "invariant violated: step %ld: request %ld is on the running list twice"
                     " or in state %d", e->step_no, r->serial, (int)r->state);
            return -1;
        }
        held += r->blocks;
    }
    for (int i = 0; i < e->wq_len; i++)
        if (e->pool[e->waitq[(e->wq_head + i) % e->wq_cap]].state != RQ_WAITING) {
            snprintf(e->err, ENG_ERR_MAX, "invariant violated: step %ld: a queued request is not waiting", e->step_no);
            return -1;
        }
    long nrun = 0, nwait = 0;
    for (int i = 0; i < e->npool; i++) {
        nrun += e->pool[i].state == RQ_RUNNING;
        nwait += e->pool[i].state == RQ_WAITING;
    }
    if (nrun != e->nrun || nwait != e->wq_len) {
        snprintf(e->err, ENG_ERR_MAX, "invariant violated: step %ld: %ld running / %ld waiting requests but lists of"
                 " %d / %d (a request lost or duplicated)", e->step_no, nrun, nwait, e->nrun, e->wq_len);
        return -1;
    }
    if (e->n_arrived != e->sum.requests_finished + e->nrun + e->wq_len) {
        snprintf(e->err, ENG_ERR_MAX, "invariant violated: step %ld: %ld requests arrived but %ld finished + %d running"
                 " + %d waiting", e->step_no, e->n_arrived, e->sum.requests_finished, e->nrun, e->wq_len);
        return -1;
    }
    /* with the block pool a shared block counts once in use and once per holder */
    const char *what = NULL;
    if (e->kv && kvpool_check(e->kv, &what) < 0) {
        snprintf(e->err, ENG_ERR_MAX, "invariant violated: step %ld: prefix cache: %s", e->step_no, what);
        return -1;
    }
    if ((e->kv ? held < e->used_blocks : held != e->used_blocks) || e->used_blocks < 0 || e->used_blocks > e->capacity) {
        snprintf(e->err, ENG_ERR_MAX, "invariant violated: step %ld: %ld KV blocks in use, running requests hold %ld,"
                 " capacity %ld", e->step_no, e->used_blocks, held, e->capacity);
        return -1;
    }
    return 0;
}

/* After a schedule() that scheduled nothing and preempted nothing: if a running request
 * waits for its pacing gate (next_eligible), the steps until the nearest gate opens are
 * empty too, and the reference counts every one (current_step += 1 on each schedule()
 * call, docs/reference-system.md, "The scheduler").  An empty step launches nothing (the
 * model runner returns at once when no token is scheduled), so it costs no time, and
 * with the clock and every request unchanged those steps are all alike: current_step
 * jumps to the step before the gate opens, at most PACE_STEPS - 1 steps on.  1 if it
 * jumped (schedule again now), 0 if no request waits for a gate. */
static int empty_steps(engine_t *e)
{
    long gate = LONG_MAX;
    for (int i = 0; i < e->nrun; i++) {
        const req_t *r = &e->pool[e->running[i]];
        if (r->computed < r->target && r->next_eligible > e->step_no && r->next_eligible < gate)
            gate = r->next_eligible;
    }
    if (gate == LONG_MAX) return 0;
    e->sum.empty_steps += gate - e->step_no;   /* this step and the ones skipped */
    e->step_no = gate - 1;
    return 1;
}

/* The virtual clock only moves forward. */
static int advance_clock(engine_t *e, double t)
{
    if (!(t >= e->now)) {
        snprintf(e->err, ENG_ERR_MAX, "invariant violated: the clock would go back from %.9g s to %.9g s", e->now, t);
        return -1;
    }
    e->now = t;
    return 0;
}

int engine_run(engine_t *e)
{
    const scenario_t *s = e->s;
    event_t ev;
    int rc;
    for (;;) {
        /* arrivals due now */
        while (evq_peek(&e->q) && evq_peek(&e->q)->time <= e->now) {
            evq_pop(&e->q, &ev);
            if ((rc = handle_event(e, &ev)) < 0) return rc;
            if (check_triggers(e) < 0) return -1;
        }
        if (check_triggers(e) < 0) return -1;
        if (e->nrun == 0 && e->wq_len == 0) {
            const event_t *nx = evq_peek(&e->q);
            if (!nx) {
                if (pending_explicit(e)) {
                    snprintf(e->err, ENG_ERR_MAX,
                             "%s: a request's arrival trigger can never fire (its reference finished first)", s->path);
                    return -1;
                }
                break;
            }
            if (s->stop.max_time_s > 0 && nx->time > s->stop.max_time_s) { e->sum.stopped_by_time = 1; break; }
            if (advance_clock(e, nx->time) < 0) return -1;
            continue;
        }
        int preempted = 0;
        int n = sched_step(e, &preempted);
        if (n < 0) return -1;
        if (n == 0 && preempted) {       /* the requests preempted wait; schedule again now */
            e->sum.empty_steps++;
            continue;
        }
        if (n == 0 && empty_steps(e)) continue;
        if (n == 0) {
            /* nothing runnable (KV exhausted with nothing to preempt) */
            const event_t *nx = evq_peek(&e->q);
            if (e->nrun == 0 && e->wq_len > 0 && !nx) {
                snprintf(e->err, ENG_ERR_MAX, "%s: the next waiting request does not fit in the KV cache (%ld blocks)",
                         s->path, e->capacity);
                return -1;
            }
            if (!nx) {
                snprintf(e->err, ENG_ERR_MAX, "%s: the engine stalled at step %ld (nothing schedulable)", s->path, e->step_no);
                e->sum.stall = 1;
                return -1;
            }
            if (advance_clock(e, nx->time) < 0) return -1;
            continue;
        }
        step_type_t type = classify(e->rows, n);
        /* the drafter's passes 2..K: one token per scheduled request, prefilling ones
         * included (EagleSpeculator.multi_step_decode over num_reqs rows); a request the
         * previous step did not schedule has its whole token list sent again
         * (_make_cached_request_data: all_token_ids when not scheduled_in_prev_step) */
        long tokens = 0, sampled = 0, resent = 0;
        int ndec = 0;
        for (int i = 0; i < n; i++) {
            const step_row_t *row = &e->rows[i];
            tokens += row->q;
            e->segs[i] = (kseg_t){ row->req, row->q, row->seq_len };
            req_t *r = &e->pool[row->req];
            if (!row->prefill) ndec++, sampled += row->q;
            else if (row->seq_len >= r->target) sampled += 1;
            if (row->admitted) set_event(e, r, EV_ADMITTED, e->now);
            if (r->last_step == 0 || r->last_step != e->step_no - 1) resent += r->prompt + r->emitted;
            r->last_step = e->step_no;
        }
        if (route_step(&e->rcfg, e->segs, n, &e->plan) < 0) {
            snprintf(e->err, ENG_ERR_MAX, "out of memory (routing)");
            return -1;
        }
        const route_plan_t *draft = NULL;
        if (e->spec_k > 1) {
            for (int i = 0; i < n; i++) e->segs[i] = (kseg_t){ e->rows[i].req, 1, e->rows[i].seq_len };
            if (route_step(&e->rcfg, e->segs, n, &e->draft_plan) < 0) {
                snprintf(e->err, ENG_ERR_MAX, "out of memory (routing)");
                return -1;
            }
            draft = &e->draft_plan;
        }
        cost_step_t cin = { &e->plan, draft, tokens, n, ndec, sampled, e->spec_k, resent, e->nrun };
        step_rec_t rec = { .no = e->step_no, .t0 = e->now, .type = type, .nrows = n, .tokens = tokens,
                           .rows = e->rows, .plan = &e->plan, .preempted = preempted };
        if (e->cost->step(e->cost, &cin, &rec.cost) < 0) {
            snprintf(e->err, ENG_ERR_MAX, "%s: cost model (%s): %s", s->profile_path[0] ? s->profile_path : s->path,
                     e->cost->name, e->cost->err);
            return -1;
        }
#ifdef PACESIM_DEBUG
        /* no item priced below its roofline floor (cost_profile.c's bounds) */
        if (cost_floor_check(e->cost, &cin, e->err, ENG_ERR_MAX) < 0) return -1;
#endif
        rec.dt = rec.cost.total;
        if (!(rec.dt > 0) || !isfinite(rec.dt)) {
            snprintf(e->err, ENG_ERR_MAX, "%s: cost model gave a non-positive step time (%g s) at step %ld",
                     s->path, rec.dt, e->step_no);
            return -1;
        }
        double t_end = e->now + rec.dt;
        /* a clock far from 0 rounds a short step away (TTFT 0 at 1e15 s): refuse the run */
        if (!(fabs((t_end - e->now) - rec.dt) <= ENG_STEP_RTOL * rec.dt)) {
            snprintf(e->err, ENG_ERR_MAX, "%s: at %.17g s the simulated clock cannot hold a step of %g s (requests"
                     " arrive too late: keep arrivals within %g s)", s->path, e->now, rec.dt, ENG_MAX_TIME_S);
            return -1;
        }
        /* the step's end is an event like the others: arrivals due before it (or at the
         * same time, queued earlier) are handled first, in (time, seq) order */
        if (push_ev(e, t_end, EVT_STEP_END, 0) < 0) return -1;
        for (;;) {
            if (!evq_pop(&e->q, &ev)) {
                snprintf(e->err, ENG_ERR_MAX, "invariant violated: step %ld: its end event was lost", e->step_no);
                return -1;
            }
            if (ev.kind == EVT_STEP_END) break;
            if ((rc = handle_event(e, &ev)) < 0) return rc;
        }
        if (advance_clock(e, t_end) < 0) return -1;   /* dt > 0 */
        if (apply_step(e, n, t_end) < 0) return -1;
        run_summary_t *S = &e->sum;
        S->steps++;
        S->steps_by_type[type]++;
        S->makespan = t_end;
        if (e->nrun > S->peak_running) S->peak_running = e->nrun;
        metrics_on_step(e, &rec);
        if (e->observer) e->observer(e->observer_ctx, e, &rec);
        /* free generated requests that finished (explicit ones stay for the windows) */
        for (int i = 0; i < n; i++) {
            int slot = e->rows[i].req;
            if (e->pool[slot].state != RQ_DONE || e->pool[slot].explicit_idx >= 0) continue;
            if (next_turn(e, slot) < 0) return -1;
            pool_release(e, slot);
        }
        if (e->used_blocks < 0 || e->used_blocks > e->capacity) {
            snprintf(e->err, ENG_ERR_MAX, "invariant violated: %ld KV blocks in use of %ld", e->used_blocks, e->capacity);
            return -1;
        }
#ifdef PACESIM_DEBUG
        if (check_invariants(e) < 0) return -1;
#endif
        if (check_triggers(e) < 0) return -1;
        if (stop_reached(e)) break;
        if (s->stop.max_time_s > 0 && e->now >= s->stop.max_time_s) { S->stopped_by_time = 1; break; }
        if (s->stop.max_steps > 0 && S->steps >= s->stop.max_steps) { S->stopped_by_steps = 1; break; }
    }
    /* end-of-run invariants */
    if (check_invariants(e) < 0) return -1;
    if (e->kv) {
        kvpool_stats_t st;
        kvpool_get_stats(e->kv, &st);
        run_summary_t *S = &e->sum;
        S->pool = 1;
        S->pc_queries = st.queries;
        S->pc_query_tokens = st.query_tokens;
        S->pc_hit_tokens = st.hit_tokens;
        S->pc_hit_blocks = st.hit_blocks;
        S->pc_evictions = st.evictions;
        S->pc_allocated = st.allocated;
    }
    if (s->stop.kind == STOP_ALL_FINISHED && !e->sum.stopped_by_time && !e->sum.stopped_by_steps) {
        if (e->used_blocks != 0) {
            snprintf(e->err, ENG_ERR_MAX, "invariant violated: %ld KV blocks still held after every request finished", e->used_blocks);
            return -1;
        }
    }
    metrics_finish(e);
    return 0;
}
