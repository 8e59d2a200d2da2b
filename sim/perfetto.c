/* perfetto.c: Chrome Trace Event JSON of one run's timeline (the --trace output).  See perfetto.h. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "kvpool.h"
#include "perfetto.h"
#include "ydoc.h"

enum { PH_NONE = 0, PH_PREFILL, PH_DECODE, PH_DONE };

typedef struct rstate {           /* one request, by serial */
    int phase, seen;
    int rep;                      /* the replica of its open phase and of its named track (seen) */
    long long start, last_end;    /* ns */
    long n, tokens;               /* chunks / decode steps, tokens of the open phase */
} rstate_t;

struct perfetto {
    FILE *f;
    int to_stdout, nev;
    rstate_t *rs;
    long nrs;
};

void perfetto_json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
        else if (*p == '\n') fputs("\\n", f);
        else if (*p == '\t') fputs("\\t", f);
        else if (*p < 0x20 || *p == 0x7f) fprintf(f, "\\u%04x", *p);
        else fputc(*p, f);
    }
    fputc('"', f);
}

static long long ns(double t) { return llround(t * 1e9); }

static void num(FILE *f, double v)
{
    if (isfinite(v)) fprintf(f, "%.9g", v);
    else fputs("null", f);
}

static void us(FILE *f, long long t)
{
    if (t < 0) {
        fputc('-', f);
        t = -t;
    }
    fprintf(f, "%lld.%03lld", t / 1000, t % 1000);
}

/* Start an event of replica rep's process (pid 1 + rep): {"name":..,"ph":..,"pid":..,"tid":..
 * (the caller adds the rest and '}'). */
static void ev_begin(perfetto_t *t, const char *name, const char *ph, int rep, long tid)
{
    fputs(t->nev++ ? ",\n" : "\n", t->f);
    fputs("{\"name\":", t->f);
    perfetto_json_str(t->f, name);
    fprintf(t->f, ",\"ph\":\"%s\",\"pid\":%d,\"tid\":%ld", ph, 1 + rep, tid);
}

static void ev_span(perfetto_t *t, const char *name, const char *cat, int rep, long tid, long long t0, long long t1)
{
    ev_begin(t, name, "X", rep, tid);
    fprintf(t->f, ",\"cat\":\"%s\",\"ts\":", cat);
    us(t->f, t0);
    fputs(",\"dur\":", t->f);
    us(t->f, t1 > t0 ? t1 - t0 : 0);
}

static void meta(perfetto_t *t, const char *what, int rep, long tid, const char *name, long sort)
{
    ev_begin(t, what, "M", rep, tid);
    fputs(",\"args\":{\"name\":", t->f);
    perfetto_json_str(t->f, name);
    fputs("}}", t->f);
    ev_begin(t, !strcmp(what, "process_name") ? "process_sort_index" : "thread_sort_index", "M", rep, tid);
    fprintf(t->f, ",\"args\":{\"sort_index\":%ld}}", sort);
}

static rstate_t *state(perfetto_t *t, long serial)
{
    if (serial < 0) return NULL;
    if (serial >= t->nrs) {
        long n = t->nrs ? t->nrs : 64;
        while (n <= serial) n *= 2;
        rstate_t *nr = realloc(t->rs, (size_t)n * sizeof *nr);
        if (!nr) return NULL;
        memset(nr + t->nrs, 0, (size_t)(n - t->nrs) * sizeof *nr);
        t->rs = nr;
        t->nrs = n;
    }
    return &t->rs[serial];
}

/* The request's track in replica rep's process named (once per replica it runs on). */
static void see(perfetto_t *t, const engine_t *e, int slot, rstate_t *s, int rep)
{
    if (s->seen && s->rep == rep) return;
    char nb[32];
    long serial = e->rp.r[slot].serial;
    meta(t, "thread_name", rep, 1 + serial, engine_req_name(e, slot, nb, sizeof nb), 1 + serial);
    s->seen = 1;
    s->rep = rep;
}

static void close_phase(perfetto_t *t, long serial, rstate_t *s)
{
    if (s->phase != PH_PREFILL && s->phase != PH_DECODE) return;
    int pre = s->phase == PH_PREFILL;
    ev_span(t, pre ? "prefill" : "decode", "request", s->rep, 1 + serial, s->start, s->last_end);
    fprintf(t->f, ",\"args\":{\"%s\":%ld,\"tokens\":%ld}}", pre ? "chunks" : "steps", s->n, s->tokens);
    s->phase = PH_NONE;
}

static void queued(perfetto_t *t, int rep, long serial, long long t0, long long t1, const char *why)
{
    ev_span(t, "queued", "request", rep, 1 + serial, t0, t1);
    fprintf(t->f, ",\"args\":{\"reason\":\"%s\"}}", why);
}

static void on_step(void *ctx, const engine_t *e, const step_rec_t *st)
{
    perfetto_t *t = ctx;
    static const char *const tname[] = { "step", "decode", "mixed", "prefill" };
    long long t0 = ns(st->t0), t1 = ns(st->t0 + st->dt);
    const cost_breakdown_t *c = &st->cost;

    const replica_t *rp = &e->rep[st->replica];
    int k = st->replica;
    ev_span(t, tname[st->type], "step", k, 0, t0, t1);
    fprintf(t->f, ",\"args\":{\"step\":%ld,\"rows\":%d,\"tokens\":%ld,\"preempted\":%d,\"cost\":{", st->no,
            st->nrows, st->tokens, st->preempted);
    const char *cn[] = { "total_s", "attn_s", "linear_s", "gdn_s", "elementwise_s", "allreduce_s", "overhead_s", "mtp_s" };
    double cv[] = { c->total, c->attn, c->linear, c->gdn, c->elementwise, c->allreduce, c->overhead, c->mtp };
    for (int i = 0; i < 8; i++) {
        fprintf(t->f, "%s\"%s\":", i ? "," : "", cn[i]);
        num(t->f, cv[i]);
    }
    fputs("},\"detail\":[", t->f);
    for (int i = 0; i < st->nrows; i++) {
        const step_row_t *row = &st->rows[i];
        char nb[32], rb[64];
        fputs(i ? ",{\"req\":" : "{\"req\":", t->f);
        perfetto_json_str(t->f, engine_req_name(e, row->req, nb, sizeof nb));
        fprintf(t->f, ",\"phase\":\"%s\",\"q\":%d,\"context\":%ld,\"route\":", row->prefill ? "prefill" : "decode",
                row->q, row->seq_len);
        perfetto_json_str(t->f, report_row_route(st->plan, row->req, rb, sizeof rb));
        fprintf(t->f, ",\"out\":%ld}", row->emitted);
    }
    fputs("]}}", t->f);
    ev_begin(t, "engine", "C", k, 0);
    fputs(",\"ts\":", t->f);
    us(t->f, t1);
    fprintf(t->f, ",\"args\":{\"kv_blocks\":%ld,\"running\":%d,\"waiting\":%d}}", rp->sc.used_blocks, rp->sc.nrun,
            rp->sc.wq_len);
    if (rp->sc.kv) {               /* the block pool: its blocks by state, hits and evictions so far */
        kvpool_stats_t ps;
        kvpool_get_stats(rp->sc.kv, &ps);
        ev_begin(t, "prefix cache", "C", k, 0);
        fputs(",\"ts\":", t->f);
        us(t->f, t1);
        fprintf(t->f, ",\"args\":{\"attention_blocks\":%ld,\"gdn_state_blocks\":%ld,\"cached_free_blocks\":%ld,"
                      "\"hit_tokens\":%ld,\"evictions\":%ld}}",
                ps.in_use[KVPOOL_ATTN], ps.in_use[KVPOOL_MAMBA], ps.cached_free, ps.hit_tokens, ps.evictions);
    }

    for (int i = 0; i < st->nrows; i++) {
        const step_row_t *row = &st->rows[i];
        const req_t *r = &e->rp.r[row->req];
        rstate_t *s = state(t, r->serial);
        if (!s) continue;
        int moved = s->seen && s->rep != k;
        if (moved) close_phase(t, r->serial, s);   /* its phase on the replica it left */
        see(t, e, row->req, s, k);
        if (row->admitted) {
            if (moved) {
                queued(t, k, r->serial, s->last_end, t0, "handoff");
            } else if (s->phase == PH_NONE && r->t_ev[EV_ARRIVAL] >= 0) {
                queued(t, k, r->serial, ns(r->t_ev[EV_ARRIVAL]), t0, "arrival");
            } else if (s->phase == PH_PREFILL || s->phase == PH_DECODE) {
                close_phase(t, r->serial, s);
                queued(t, k, r->serial, s->last_end, t0, "preempted");
            }
        }
        int want = row->prefill ? PH_PREFILL : PH_DECODE;
        if (s->phase != want) {
            close_phase(t, r->serial, s);
            s->phase = want;
            s->start = t0;
            s->n = s->tokens = 0;
        }
        if (row->prefill) {
            char rb[64];
            ev_span(t, "chunk", "request", k, 1 + r->serial, t0, t1);
            fprintf(t->f, ",\"args\":{\"step\":%ld,\"q\":%d,\"context\":%ld,\"route\":", st->no, row->q, row->seq_len);
            perfetto_json_str(t->f, report_row_route(st->plan, row->req, rb, sizeof rb));
            if (rp->sc.kv && row->admitted) fprintf(t->f, ",\"cached\":%ld", r->cache_hit);   /* the pool's hit */
            fputs("}}", t->f);
        }
        s->n++;
        s->tokens += row->prefill ? row->q : row->emitted;
        s->last_end = t1;
        if (r->state == RQ_DONE) {
            close_phase(t, r->serial, s);
            s->phase = PH_DONE;
        }
    }
}

static void on_end(void *ctx, const engine_t *e)
{
    perfetto_t *t = ctx;
    long long end = ns(e->now);
    for (int i = 0; i < e->rp.n; i++) {
        const req_t *r = &e->rp.r[i];
        if (r->state == RQ_FREE || r->state == RQ_PENDING || r->state == RQ_DONE) continue;
        rstate_t *s = state(t, r->serial);
        if (!s) continue;
        long long from = s->seen ? s->last_end : ns(r->t_ev[EV_ARRIVAL]);
        int rep = r->replica >= 0 ? r->replica : s->seen ? s->rep : 0;
        int moved = s->seen && s->rep != rep;
        close_phase(t, r->serial, s);
        see(t, e, i, s, rep);
        if (r->state == RQ_WAITING && r->t_ev[EV_ARRIVAL] >= 0)
            queued(t, rep, r->serial, from, end, moved ? "handoff, waiting at the end" : "waiting at the end");
    }
    if (e->nrep == 1) {
        meta(t, "process_name", 0, 0, e->s->name, 0);
        meta(t, "thread_name", 0, 0, "engine", 0);
        return;
    }
    for (int k = 0; k < e->nrep; k++) {
        char nb[SCN_ID_MAX + 160];
        snprintf(nb, sizeof nb, "%.120s: replica %d (pool %s)", e->s->name, k,
                 e->s->cluster.pools[e->rep[k].pool].name);
        meta(t, "process_name", k, 0, nb, k);
        meta(t, "thread_name", k, 0, "engine", 0);
    }
}

/* Open path for writing without blocking in open() (a FIFO with no reader fails with
 * ENXIO instead of waiting forever); writes themselves block as usual. */
static FILE *open_out(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK | O_CLOEXEC, 0666);
    if (fd < 0) return NULL;
    int fl = fcntl(fd, F_GETFL);
    FILE *f = fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0 ? NULL : fdopen(fd, "w");
    if (!f) {
        int er = errno;
        close(fd);
        errno = er;
    }
    return f;
}

perfetto_t *perfetto_open(const char *path, char *err, size_t errn)
{
    perfetto_t *t = calloc(1, sizeof *t);
    if (!t) {
        snprintf(err, errn, "out of memory");
        return NULL;
    }
    t->to_stdout = !strcmp(path, "-");
    t->f = t->to_stdout ? stdout : open_out(path);
    if (!t->f) {
        int er = errno;
        char clean[256];
        snprintf(clean, sizeof clean, "%s", path);
        yd_one_line(clean);               /* the message stays one line */
        snprintf(err, errn, "%s: cannot write the trace: %s", clean,
                 er == ENXIO ? "a FIFO that no process reads" : strerror(er));
        free(t);
        return NULL;
    }
    fputs("{\"displayTimeUnit\":\"ms\",\"otherData\":{\"generator\":\"pacesim\"},\"traceEvents\":[", t->f);
    return t;
}

void perfetto_hooks(perfetto_t *t, runner_hooks_t *h)
{
    h->on_step = on_step;
    h->on_end = on_end;
    h->ctx = t;
}

int perfetto_close(perfetto_t *t)
{
    if (!t) return 0;
    fputs("\n]}\n", t->f);
    errno = 0;
    int rc = fflush(t->f) != 0 || ferror(t->f) ? -1 : 0;
    int er = errno;
    if (!t->to_stdout && fclose(t->f) != 0 && rc == 0) {
        rc = -1;
        er = errno;
    }
    if (rc < 0) fprintf(stderr, "pacesim: error writing the trace: %s\n", er ? strerror(er) : "write error");
    free(t->rs);
    free(t);
    return rc;
}
