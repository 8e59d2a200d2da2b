/* workload.c: the requests of a run as they arrive -- explicit requests and their
 * triggers, the Poisson generator and its conversations, the CSV request trace.  See
 * workload.h. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include "fnv.h"
#include "kvpool.h"
#include "simclock.h"
#include "workload.h"
#include "ydoc.h"

/* The latest arrival the run takes: 1e7 s, or earlier where the clock cannot hold the engine's
 * shortest step there (h->clock_max: a step under a millisecond); why, into buf. */
static double clock_limit(const workload_hooks_t *h, char *buf, size_t n)
{
    if (h->clock_max > 0 && h->clock_max < SIM_CLOCK_MAX_S) {
        snprintf(buf, n, "past it the simulated clock cannot hold this engine's shortest step, %g s (one token), to"
                 " 1e-6 of it", h->step_min);
        return h->clock_max;
    }
    snprintf(buf, n, "the simulated clock would lose the steps' durations");
    return SIM_CLOCK_MAX_S;
}

/* ---- the request pool ------------------------------------------------------------ */

int reqpool_alloc(reqpool_t *p)
{
    int slot;
    if (p->nfree > 0) {
        slot = p->free_slots[--p->nfree];
    } else {
        if (p->n == p->cap) {
            int cap = p->cap ? 2 * p->cap : 64;
            /* line-aligned (request.h: a step reads a request's first two lines) */
            req_t *r = aligned_alloc(REQ_LINE, (size_t)cap * sizeof *r);
            if (!r) return -1;
            if (p->n) memcpy(r, p->r, (size_t)p->n * sizeof *r);
            free(p->r);
            p->r = r;
            req_aux_t *x = realloc(p->x, (size_t)cap * sizeof *x);
            if (!x) return -1;
            p->x = x;
            int *f = realloc(p->free_slots, (size_t)cap * sizeof *f);
            if (!f) return -1;
            p->free_slots = f;
            p->cap = cap;
        }
        slot = p->n++;
        if (p->n > p->peak) p->peak = p->n;
    }
    req_t *r = &p->r[slot];
    memset(r, 0, sizeof *r);
    r->idx = slot;
    r->explicit_idx = -1;
    r->replica = -1;
    p->x[slot] = (req_aux_t){ .prefill_replica = -1, .session_replica = -1 };
    r->serial = p->serial++;
    for (int k = 0; k < EV__N; k++) r->t_ev[k] = ENG_T_NONE;
    r->t_last_tok = ENG_T_NONE;
    r->state = RQ_PENDING;
    return slot;
}

void reqpool_release(reqpool_t *p, int slot)
{
    free(p->r[slot].runs);
    p->r[slot].runs = NULL;
    p->r[slot].state = RQ_FREE;
    p->free_slots[p->nfree++] = slot;
}

void reqpool_free(reqpool_t *p)
{
    for (int i = 0; i < p->n && p->r; i++) free(p->r[i].runs);
    free(p->r);
    free(p->x);
    free(p->free_slots);
    memset(p, 0, sizeof *p);
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
    return content_key(KEY_PREFIX, fnv1a_str(FNV1A_BASIS, name));
}

/* The request's prompt content (one own run when runs is NULL), kept for the block pool of
 * the replica that will serve it. */
static int set_content(workload_t *e, req_t *r, const kvpool_run_t *runs, int nruns, uint64_t own_key,
                       uint64_t out_key)
{
    kvpool_run_t own = { own_key, 0, r->prompt };
    if (!runs) {
        runs = &own;
        nruns = 1;
    }
    if (!(r->runs = malloc((size_t)nruns * sizeof *r->runs))) {
        snprintf(e->err, ENG_ERR_MAX, "out of memory (prefix cache)");
        return -1;
    }
    memcpy(r->runs, runs, (size_t)nruns * sizeof *runs);
    r->nruns = nruns;
    r->out_key = out_key;
    return 0;
}

/* The explicit requests' content: request i's prompt is its prefix's
 * tokens or the prompt and output of the request it follows, then tokens of its own. */
static int content_init(workload_t *e)
{
    const scenario_t *s = e->s;
    kvpool_run_t **rl = calloc((size_t)s->n_requests + 1, sizeof *rl);
    int *nr = calloc((size_t)s->n_requests + 1, sizeof *nr);
    int rc = rl && nr ? 0 : -1;
    for (int i = 0; i < s->n_requests && !rc; i++) {
        const scn_request_t *sr = &s->requests[i];
        req_t *r = &e->rp->r[e->explicit_slot[i]];
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
        rc = set_content(e, r, rl[i], nr[i], 0, content_key(KEY_EXPLICIT_OUT, (uint64_t)i));
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

/* ---- sources ----------------------------------------------------------------- */

/* one draw of the distribution, unrounded */
static double draw_raw(gsl_rng *rng, const scn_dist_t *d)
{
    switch (d->kind) {
    case DIST_UNIFORM: return d->a + (d->b - d->a) * gsl_rng_uniform(rng);
    case DIST_LOGNORMAL: return gsl_ran_lognormal(rng, d->a, d->b);
    case DIST_EXPONENTIAL: return gsl_ran_exponential(rng, d->a);
    default: return d->a;
    }
}

static long draw_dist(gsl_rng *rng, const scn_dist_t *d)
{
    return scn_dist_round(d, draw_raw(rng, d));    /* saturates at the clamp: a huge draw is never wrapped */
}

static double draw_frac(gsl_rng *rng, const scn_dist_t *d)
{
    double x = draw_raw(rng, d);
    return x < 0 ? 0 : x > 1 ? 1 : x;
}

static int push_ev(workload_t *e, double t, evt_kind_t k, int a)
{
    event_t ev = { .time = t, .kind = k, .a = a };
    if (evq_push(e->q, ev) < 0) {
        snprintf(e->err, ENG_ERR_MAX, "out of memory (event queue)");
        return -1;
    }
    return 0;
}

/* The workload's random stream: the seed's second (the first is the replicas' MTP acceptance). */
static void seed_stream(gsl_rng *rng, const scenario_t *s)
{
    gsl_rng_set(rng, s->seed * 2 + 2);
}

double workload_first_poisson(const scenario_t *s)
{
    const scn_poisson_t *p = &s->poisson;
    if (!p->enabled || p->count < 1) return INFINITY;
    gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
    if (!rng) return p->start_s;            /* out of memory: the earliest it could be */
    seed_stream(rng, s);
    double t = p->start_s + gsl_ran_exponential(rng, 1.0 / p->rate_per_s);   /* as schedule_next_poisson */
    gsl_rng_free(rng);
    return t;
}

static int schedule_next_poisson(workload_t *e, double after)
{
    const scn_poisson_t *p = &e->s->poisson;
    if (!p->enabled || e->poisson_made >= p->count) return 0;
    double t = after + gsl_ran_exponential(e->rng, 1.0 / p->rate_per_s);
    return push_ev(e, t, EVT_SOURCE, SRC_POISSON);
}

/* Request slot arrives at t: waiting, and handed to the run. */
static int arrive(workload_t *e, int slot, double t)
{
    req_t *r = &e->rp->r[slot];
    r->t_ev[EV_ARRIVAL] = t;
    r->state = RQ_WAITING;
    e->n_arrived++;
    return e->h.arrive(e->h.ctx, slot, t);
}

/* A generated request (Poisson or trace); group >= 0: its prompt starts with the first
 * ptoks tokens of prefix group `group` (the block pool); turns > 1: the first turn of a
 * conversation (the block pool). */
static int make_generated(workload_t *e, long prompt, long output, long cached, long group, long ptoks, long turns,
                          double t, const uint64_t *hash, int nhash, long hblock)
{
    if (prompt < 1 || output < 1) {
        snprintf(e->err, ENG_ERR_MAX, "invariant violated: a generated request of %ld prompt and %ld output tokens",
                 prompt, output);
        return -1;
    }
    int slot = reqpool_alloc(e->rp);
    if (slot < 0) {
        snprintf(e->err, ENG_ERR_MAX, "out of memory (requests)");
        return -1;
    }
    req_t *r = &e->rp->r[slot];
    r->prompt = r->target = prompt;
    r->output = output;
    r->cached = cached;
    if (e->content && nhash > 0) {
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
        int rc = set_content(e, r, runs, nr, own, content_key(KEY_GEN_OUT, (uint64_t)r->serial));
        free(runs);
        if (rc < 0) return -1;
    } else if (e->content) {
        uint64_t own = content_key(KEY_GEN_OWN, (uint64_t)r->serial);
        if (ptoks > prompt) ptoks = prompt;
        int shared = group >= 0 && ptoks > 0;
        kvpool_run_t runs[2] = { { content_key(KEY_GROUP, (uint64_t)group), 0, ptoks }, { own, 0, prompt - ptoks } };
        if (!shared) runs[0] = runs[1] = (kvpool_run_t){ own, 0, prompt };
        int nr = shared && ptoks < prompt ? 2 : 1;
        if (set_content(e, r, runs, nr, own, content_key(KEY_GEN_OUT, (uint64_t)r->serial)) < 0) return -1;
        if (turns > 1) {
            r->turns_left = (int)(turns - 1);
            e->rp->x[slot].session = (uint64_t)r->serial + 1;
        }
    }
    return arrive(e, slot, t);
}

/* A Poisson arrival due at t (<= now: events are handled at step boundaries).  The next
 * arrival is drawn from t, not from now, so the process keeps its rate under load. */
static int poisson_arrival(workload_t *e, double t)
{
    const scn_poisson_t *p = &e->s->poisson;
    long maxlen = e->s->engine.max_model_len;
    long prompt = draw_dist(e->rng, &p->prompt);
    long output = draw_dist(e->rng, &p->output);
    double cf = draw_frac(e->rng, &p->cached_frac);
    if (prompt < 1) prompt = 1;
    if (output < 1) output = 1;
    /* a generated request never exceeds max_model_len: the prompt gives way */
    if (prompt > maxlen || output > maxlen - prompt) {
        e->clamped++;
        if (output >= maxlen) output = maxlen / 2;
        prompt = maxlen - output;
    }
    long group = -1;
    if (p->prefix_groups > 0 && gsl_rng_uniform(e->rng) < p->prefix_share)
        group = (long)gsl_rng_uniform_int(e->rng, (unsigned long)p->prefix_groups);
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
int workload_on_done(workload_t *e, int slot, double now)
{
    const scn_poisson_t *p = &e->s->poisson;
    req_t *r = &e->rp->r[slot];
    if (r->turns_left <= 0 || !r->runs) return 0;
    long base = r->prompt + r->output, maxlen = e->s->engine.max_model_len;
    long add = draw_dist(e->rng, &p->prompt);
    long output = draw_dist(e->rng, &p->output);
    double think = p->conv_think_s > 0 ? gsl_ran_exponential(e->rng, p->conv_think_s) : 0;
    long need, cap;
    int blk;
    if (add < 1) add = 1;
    if (output < 1) output = 1;
    if (add > maxlen - base || output > maxlen - base - add || !e->h.fits(e->h.ctx, base + add, output, &need, &blk, &cap))
        return 0;
    int nr = r->nruns + 2, left = r->turns_left - 1, prev = r->replica;
    uint64_t session = e->rp->x[slot].session;
    kvpool_run_t *runs = malloc((size_t)nr * sizeof *runs);
    if (!runs) {
        snprintf(e->err, ENG_ERR_MAX, "out of memory (conversations)");
        return -1;
    }
    memcpy(runs, r->runs, (size_t)r->nruns * sizeof *runs);
    runs[nr - 2] = (kvpool_run_t){ content_key(KEY_GEN_OUT, (uint64_t)r->serial), 0, r->output };
    int ns = reqpool_alloc(e->rp);     /* may move the pool: r is not used after it */
    if (ns < 0) {
        free(runs);
        snprintf(e->err, ENG_ERR_MAX, "out of memory (requests)");
        return -1;
    }
    req_t *q = &e->rp->r[ns];
    uint64_t own = content_key(KEY_GEN_OWN, (uint64_t)q->serial);
    runs[nr - 1] = (kvpool_run_t){ own, 0, add };
    q->prompt = q->target = base + add;
    q->output = output;
    q->runs = runs;                    /* the request owns them from here */
    q->nruns = nr;
    q->out_key = content_key(KEY_GEN_OUT, (uint64_t)q->serial);
    q->turns_left = left;
    e->rp->x[ns].session = session;
    e->rp->x[ns].session_replica = prev;
    return push_ev(e, now + think, EVT_ARRIVAL, ns);
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
 * 1 a row, 0 the end, WL_EINPUT a malformed or impossible row (e->err names the line). */
static int trace_read(const workload_t *e, trace_rd_t *rd, double *t, long row[5])
{
    static _Thread_local char line[TRACE_LINE_MAX];
    while (fgets(line, sizeof line, rd->f)) {
        rd->line++;
        if (!strchr(line, '\n') && !feof(rd->f)) {
            snprintf(e->err, ENG_ERR_MAX, "%s:%ld:1: trace: line too long", e->s->trace_path, rd->line);
            return WL_EINPUT;
        }
        char *p = rd->line == 1 ? yd_drop_bom(line) : line;   /* a spreadsheet's BOM */
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
            return WL_EFAIL;
        }
        if (got < 0) {
            snprintf(e->err, ENG_ERR_MAX, "%s:%ld:1: trace: expected arrival_s,prompt_tokens,output_tokens[,cached_tokens[,prefix_group,prefix_tokens[,hash_ids]]]"
                     " (hash_ids: B:ID ID ..., B tokens a block)",
                     e->s->trace_path, rd->line);
            return WL_EINPUT;
        }
        if (!isfinite(*t) || *t < 0 || *t < rd->last || pr < 1 || out < 1 || ca < 0 || ca > pr
            || pr > e->s->engine.max_model_len || out > e->s->engine.max_model_len - pr) {
            snprintf(e->err, ENG_ERR_MAX,
                     "%s:%ld:1: trace: invalid row (arrivals must be >= 0 and non-decreasing, "
                     "prompt and output >= 1, 0 <= cached <= prompt, prompt + output <= max_model_len %ld)",
                     e->s->trace_path, rd->line, e->s->engine.max_model_len);
            return WL_EINPUT;
        }
        char why[160];
        double lim = clock_limit(&e->h, why, sizeof why);
        if (*t > lim) {
            snprintf(e->err, ENG_ERR_MAX, "%s:%ld:1: trace: arrival %g s is past %g s (%s)", e->s->trace_path, rd->line,
                     *t, lim, why);
            return WL_EINPUT;
        }
        if (*rd->nids > 0 && (!e->s->engine.prefix_pool || grp != -1 || pt != 0
                              || (long)(*rd->nids - 1) * *rd->block >= pr)) {
            snprintf(e->err, ENG_ERR_MAX, "%s:%ld:1: trace: %s", e->s->trace_path, rd->line,
                     !e->s->engine.prefix_pool ? "the hash_ids column needs engine.prefix_cache_model: pool"
                     : grp != -1 || pt != 0 ? "a row with hash_ids takes prefix_group -1 and prefix_tokens 0"
                                            : "more hash_ids blocks than the prompt holds (each covers at least one token)");
            return WL_EINPUT;
        }
        if (got == 6 && (!e->s->engine.prefix_pool || grp < -1 || pt < 0 || pt > pr)) {
            snprintf(e->err, ENG_ERR_MAX, "%s:%ld:1: trace: %s", e->s->trace_path, rd->line,
                     !e->s->engine.prefix_pool ? "the prefix_group and prefix_tokens columns need engine.prefix_cache_model: pool"
                                               : "invalid prefix columns (prefix_group >= -1, 0 <= prefix_tokens <= prompt)");
            return WL_EINPUT;
        }
        long need, cap;
        int blk;
        if (!e->h.fits(e->h.ctx, pr, out, &need, &blk, &cap)) {
            snprintf(e->err, ENG_ERR_MAX, "%s:%ld:1: trace: the request needs %ld KV blocks of %d tokens but the cache holds %ld",
                     e->s->trace_path, rd->line, need, blk, cap);
            return WL_EINPUT;
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
        return WL_EINPUT;
    }
    return 0;
}

/* The trace's first arrival t (rows arrive in order: the earliest), on line `line`: a trace
 * that starts at or after the stop (its requests reaching a replica after it) would run
 * nothing and print a table of nothing.  0, or WL_EINPUT with the message. */
static int trace_first(const workload_t *e, double t, long line)
{
    const scenario_t *s = e->s;
    double lat = s->cluster.enabled ? s->cluster.router_latency_s : 0;
    if (!(s->stop.max_time_s > 0 && t + lat >= s->stop.max_time_s)) return 0;
    snprintf(e->err, ENG_ERR_MAX, "%s:%ld:1: trace: its first arrival, %g s%s, is at or past stop.max_time_s (%g s):"
             " no request would %s before it", s->trace_path, line, t, lat > 0 ? " (+ cluster.router_latency_s)" : "",
             s->stop.max_time_s, lat > 0 ? "reach a replica" : "arrive");
    return WL_EINPUT;
}

/* Read the next trace row and schedule its arrival (nothing at the end of the trace). */
static int trace_next(workload_t *e)
{
    trace_rd_t rd = { e->trace, e->trace_line, e->trace_last, &e->trace_hash, &e->trace_nhash, &e->trace_hcap,
                      &e->trace_hblock };
    double t;
    int first = e->trace_last < 0;
    int got = trace_read(e, &rd, &t, e->trace_row);
    if (got > 0 && first && trace_first(e, t, rd.line) < 0) return WL_EINPUT;
    e->trace_line = rd.line;
    e->trace_last = rd.last;
    return got <= 0 ? got : push_ev(e, t, EVT_SOURCE, SRC_TRACE);
}

/* Open the trace without blocking in open() (a FIFO with no writer would wait forever):
 * only a regular file is read. */
static FILE *trace_open_csv(const workload_t *e)
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

int workload_check_trace(const scenario_t *s, const workload_hooks_t *h, char *err)
{
    workload_t w = { .s = s, .h = *h, .err = err }, *e = &w;
    if (!e->s->trace_path[0]) return 0;
    uint64_t *ids = NULL;
    int nids = 0, capids = 0;
    long block = 0;
    trace_rd_t rd = { trace_open_csv(e), 0, -1, &ids, &nids, &capids, &block };
    if (!rd.f) return WL_EINPUT;
    double t;
    long row[5];
    int got;
    int first = 1;
    while ((got = trace_read(e, &rd, &t, row)) > 0)
        if (first && (first = 0, trace_first(e, t, rd.line) < 0)) {
            got = WL_EINPUT;
            break;
        }
    fclose(rd.f);
    free(ids);
    return got == WL_EFAIL ? WL_EFAIL : got < 0 ? WL_EINPUT : 0;
}

/* ---- triggers ---------------------------------------------------------------- */

static int fire_arrival(workload_t *e, int slot, double t)
{
    req_t *r = &e->rp->r[slot];
    if (r->state != RQ_PENDING) return 0;
    if (r->explicit_idx >= 0)   /* its dependents can fire from now on: each is queued once */
        for (int k = e->trig_first[r->explicit_idx]; k < e->trig_first[r->explicit_idx + 1]; k++)
            e->trig_new[e->n_trig_new++] = e->trig_dep[k];
    return arrive(e, slot, t);
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
int workload_triggers(workload_t *e, double now)
{
    const scenario_t *s = e->s;
    if (e->n_trig_live == 0 && e->n_trig_new == 0) return 0;   /* no trigger waits (asked at every step's end) */
    int *h = e->trig_heap, nh = 0, nlive = 0;
    for (int k = 0; k < e->n_trig_live; k++) heap_push(h, &nh, e->trig_live[k]);
    for (int k = 0; k < e->n_trig_new; k++) heap_push(h, &nh, e->trig_new[k]);
    e->n_trig_new = 0;
    while (nh > 0) {
        int i = heap_pop(h, &nh);
        const scn_trigger_t *tg = &s->requests[i].arrival;
        int slot = e->explicit_slot[i];
        if (e->rp->r[slot].state != RQ_PENDING || e->rp->r[slot].t_ev[EV_ARRIVAL] == WL_T_ARMED) continue;
        const req_t *rr = &e->rp->r[e->trigger_ref[i]];
        int fire = tg->kind == TRIG_AFTER_DECODED ? rr->emitted >= tg->decoded
                                                  : rr->t_ev[tg->event] >= 0;
        if (!fire) {
            e->trig_live[nlive++] = i;
            continue;
        }
        if (tg->delay_s > 0) {
            e->rp->r[slot].t_ev[EV_ARRIVAL] = WL_T_ARMED;
            if (push_ev(e, now + tg->delay_s, EVT_ARRIVAL, slot) < 0) return -1;
            continue;
        }
        if (fire_arrival(e, slot, now) < 0) return -1;
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

int workload_stop_reached(const workload_t *e)
{
    const scn_stop_t *st = &e->s->stop;
    if (st->kind == STOP_AT_EVENT) {
        for (int i = 0; i < e->s->n_requests; i++)
            if (!strcmp(e->s->requests[i].id, st->ref))
                return e->rp->r[e->explicit_slot[i]].t_ev[st->event] >= 0;
        return 0;
    }
    return 0;
}

int workload_pending(const workload_t *e)
{
    for (int i = 0; i < e->s->n_requests; i++)
        if (e->rp->r[e->explicit_slot[i]].state == RQ_PENDING) return 1;
    return 0;
}

int workload_event(workload_t *e, const event_t *ev)
{
    if (ev->kind == EVT_ARRIVAL) {
        e->rp->r[ev->a].t_ev[EV_ARRIVAL] = ENG_T_NONE;
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


/* ---- set-up ------------------------------------------------------------------ */

int workload_check(const scenario_t *s, const workload_hooks_t *h, char *err)
{
    long need, cap;
    int blk;
    char why[160];
    const double lim = clock_limit(h, why, sizeof why);
    /* every explicit request must fit in the pool on its own, or it would wait forever;
     * and arrive in time for the clock to resolve its steps */
    for (int i = 0; i < s->n_requests; i++) {
        const scn_request_t *sr = &s->requests[i];
        double at = sr->arrival.kind == TRIG_TIME ? sr->arrival.time_s : sr->arrival.delay_s;
        if (at > lim) {
            snprintf(err, ENG_ERR_MAX, "%s:%d:%d: workload.requests[%d].arrival: %s %g s is past %g s (%s)", s->path,
                     sr->line, sr->col, i, sr->arrival.kind == TRIG_TIME ? "the arrival" : "the delay", at, lim, why);
            return -1;
        }
        if (!h->fits(h->ctx, sr->prompt_tokens, sr->output_tokens, &need, &blk, &cap)) {
            snprintf(err, ENG_ERR_MAX,
                     "%s:%d:%d: workload.requests[%d]: request %s needs %ld KV blocks of %d tokens but the cache holds %ld"
                     " (engine.num_gpu_blocks)",
                     s->path, sr->line, sr->col, i, sr->id, need, blk, cap);
            return -1;
        }
    }
    /* a request triggered by another arrives no earlier than the other's arrival plus its delay:
     * a chain of delays whose sum passes the clock's limit, with stop.max_time_s past that sum,
     * would end the run mid-way ("the clock cannot hold a step"): refused at the request */
    if (s->n_requests > 0 && s->stop.max_time_s > lim) {
        double *lb = malloc((size_t)s->n_requests * sizeof *lb);
        int *stk = malloc((size_t)s->n_requests * sizeof *stk);
        if (!lb || !stk) {
            free(lb), free(stk);
            snprintf(err, ENG_ERR_MAX, "out of memory");
            return -1;
        }
        for (int i = 0; i < s->n_requests; i++) lb[i] = -1;
        int bad = -1;
        for (int i = 0; i < s->n_requests && bad < 0; i++) {
            int n = 0, j = i;            /* up the chain to a known bound (load refused cycles) */
            while (lb[j] < 0 && s->requests[j].arrival.kind != TRIG_TIME && s->requests[j].arrival.ref_idx >= 0 &&
                   n < s->n_requests)
                stk[n++] = j, j = s->requests[j].arrival.ref_idx;
            if (lb[j] < 0) lb[j] = s->requests[j].arrival.kind == TRIG_TIME ? s->requests[j].arrival.time_s : 0;
            while (n > 0) {
                int k = stk[--n];
                lb[k] = lb[s->requests[k].arrival.ref_idx] + s->requests[k].arrival.delay_s;
            }
            if (lb[i] > lim && lb[i] < s->stop.max_time_s) bad = i;
        }
        double at = bad >= 0 ? lb[bad] : 0;
        free(lb), free(stk);
        if (bad >= 0) {
            const scn_request_t *sr = &s->requests[bad];
            snprintf(err, ENG_ERR_MAX,
                     "%s:%d:%d: workload.requests[%d].arrival: its chain of triggers and delays puts it at %g s at the"
                     " earliest, past %g s (%s), and stop.max_time_s (%g s) lets the run reach it", s->path, sr->line,
                     sr->col, bad, at, lim, why, s->stop.max_time_s);
            return -1;
        }
    }
    /* a generated request has at least one prompt and one output token (a request with
     * no output has no first token: every latency window would be meaningless) */
    if (s->poisson.enabled && s->engine.max_model_len < 2) {
        snprintf(err, ENG_ERR_MAX,
                 "%s:%d:%d: workload.poisson: engine.max_model_len %ld leaves no room for a generated request"
                 " (one prompt and one output token at least)",
                 s->path, s->poisson_line, s->poisson_col, s->engine.max_model_len);
        return -1;
    }
    if (s->poisson.enabled && s->poisson.start_s > lim) {
        snprintf(err, ENG_ERR_MAX, "%s:%d:%d: workload.poisson.start_s: %g s is past %g s (%s)", s->path,
                 s->poisson_line, s->poisson_col, s->poisson.start_s, lim, why);
        return -1;
    }
    /* the Poisson arrivals and conversation turns against an earlier limit than the load's 1e7 s
     * check (scenario.c), where stop.max_time_s lets the run reach it */
    double q = 0;
    int risk = lim < SIM_CLOCK_MAX_S ? scn_clock_risk(s, lim, &q) : 0;
    if (risk == 1) {
        snprintf(err, ENG_ERR_MAX, "%s:%d:%d: workload.poisson.rate_per_s: %g/s: the %ld arrivals from %g s pass %g s"
                 " with probability %.2g (%s), and stop.max_time_s (%g s) lets the run reach them: keep"
                 " stop.max_time_s within %g s, or a higher rate, a smaller count", s->path, s->poisson_line,
                 s->poisson_col, s->poisson.rate_per_s, s->poisson.count, s->poisson.start_s, lim, q, why,
                 s->stop.max_time_s, lim);
        return -1;
    }
    if (risk == 2) {
        snprintf(err, ENG_ERR_MAX, "%s:%d:%d: workload.poisson.conversation.think_s: %g s: a conversation's later turns"
                 " can arrive past %g s (probability up to %.2g; %s), and stop.max_time_s (%g s) lets the run reach"
                 " them: keep stop.max_time_s within %g s, or think_s shorter", s->path, s->poisson_line,
                 s->poisson_col, s->poisson.conv_think_s, lim, q, why, s->stop.max_time_s, lim);
        return -1;
    }
    /* the largest request the Poisson generator can draw must fit too */
    if (s->poisson.enabled) {
        long pmax = dist_max(&s->poisson.prompt), omax = dist_max(&s->poisson.output);
        if (!h->fits(h->ctx, pmax, omax, &need, &blk, &cap)) {
            snprintf(err, ENG_ERR_MAX,
                     "%s:%d:%d: workload.poisson: a generated request can need %ld KV blocks of %d tokens but the cache"
                     " holds %ld (clamp prompt/output with max:, or raise engine.num_gpu_blocks)",
                     s->path, s->poisson_line, s->poisson_col, need, blk, cap);
            return -1;
        }
    }
    return 0;
}

int workload_init(workload_t *e, const scenario_t *s, reqpool_t *rp, evq_t *q, const workload_hooks_t *h, char *err)
{
    memset(e, 0, sizeof *e);
    e->s = s;
    e->rp = rp;
    e->q = q;
    e->h = *h;
    e->err = err;
    e->content = s->engine.prefix_pool;
    e->rng = gsl_rng_alloc(gsl_rng_mt19937);
    e->explicit_slot = calloc((size_t)s->n_requests + 1, sizeof *e->explicit_slot);
    if (!e->rng || !e->explicit_slot) {
        snprintf(err, ENG_ERR_MAX, "out of memory");
        return -1;
    }
    seed_stream(e->rng, s);

    for (int i = 0; i < s->n_requests; i++) {
        int slot = reqpool_alloc(rp);
        if (slot < 0) {
            snprintf(err, ENG_ERR_MAX, "out of memory");
            return -1;
        }
        req_t *r = &rp->r[slot];
        const scn_request_t *sr = &s->requests[i];
        r->explicit_idx = i;
        r->prompt = r->target = sr->prompt_tokens;
        r->cached = sr->cached_tokens;
        rp->x[slot].priority = sr->priority;
        /* generation stops at max_model_len, as in vLLM (finish reason "length") */
        long room = s->engine.max_model_len - sr->prompt_tokens;
        r->output = sr->output_tokens < room ? sr->output_tokens : (room > 0 ? room : 1);
        e->explicit_slot[i] = slot;
        if (sr->arrival.kind == TRIG_TIME && push_ev(e, sr->arrival.time_s, EVT_ARRIVAL, slot) < 0) return -1;
    }
    e->trigger_ref = malloc(((size_t)s->n_requests + 1) * sizeof *e->trigger_ref);
    if (!e->trigger_ref) {
        snprintf(err, ENG_ERR_MAX, "out of memory");
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
        snprintf(err, ENG_ERR_MAX, "out of memory");
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
    if (e->content && content_init(e) < 0) return -1;
    if (s->poisson.enabled && schedule_next_poisson(e, s->poisson.start_s) < 0) return -1;
    if (s->trace_path[0]) {
        e->trace_last = -1;
        if (!(e->trace = trace_open_csv(e))) return WL_EINPUT;
        int rc = trace_next(e);
        if (rc < 0) return rc;
        /* a trace with no request row, and nothing else to run: no requests at all */
        if (!evq_peek(e->q) && !s->n_requests && !s->poisson.enabled) {
            snprintf(err, ENG_ERR_MAX, "%s:%ld:1: trace: no request rows (expected arrival_s,prompt_tokens,"
                     "output_tokens[,cached_tokens])", s->trace_path, e->trace_line + 1);
            return WL_EINPUT;
        }
    }
    return 0;
}

void workload_free(workload_t *e)
{
    if (e->rng) gsl_rng_free(e->rng);
    if (e->trace) fclose(e->trace);
    free(e->trace_hash);
    free(e->explicit_slot);
    free(e->trigger_ref);
    free(e->trig_first);
    memset(e, 0, sizeof *e);
}
