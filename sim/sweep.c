/* sweep.c: value lists, the point product, the thread pool that runs the jobs, the
 * in-order reporter, the objective over CSV rows and the CSV merge.  See sweep.h. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include "fnv.h"
#include "sweep.h"
#include "report_json.h"
#include "ydoc.h"

#define SWEEP_MAX_VALUES 100000
#define SWEEP_MAX_RUNS 100000000L     /* runs of one sweep (and commands `points` prints) */

/* ---- CSV fields and records ------------------------------------------------------ */

void sweep_csv_field(FILE *f, const char *s)
{
    report_csv_field(f, s);
}

/* Read one CSV record (RFC 4180: a quoted field may hold commas, doubled quotes and
 * line breaks) into *buf, newline-terminated (one is added to a last record without).
 * 1 read, 0 end of file, -1 with *why set: a NUL or other control byte (not text), a
 * record longer than SWEEP_RECORD_MAX, an unterminated quote, a read error. */
static int csv_record(FILE *f, char **buf, size_t *cap, const char **why)
{
    size_t n = 0;
    int inq = 0, c;
    while ((c = getc(f)) != EOF) {
        if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f) {
            *why = "binary data (not a CSV file)";
            return -1;
        }
        if (n + 3 > *cap) {            /* room for c, a closing newline and the NUL */
            if (*cap >= SWEEP_RECORD_MAX) {
                *why = "record longer than " SWEEP_RECORD_MAX_TEXT;
                return -1;
            }
            size_t nc = *cap ? 2 * *cap : 4096;
            if (nc > SWEEP_RECORD_MAX) nc = SWEEP_RECORD_MAX;
            char *nb = realloc(*buf, nc);
            if (!nb) {
                *why = "out of memory";
                return -1;
            }
            *buf = nb;
            *cap = nc;
        }
        (*buf)[n++] = (char)c;
        if (c == '"') inq = !inq;
        else if (c == '\n' && !inq) break;
    }
    if (ferror(f)) {
        *why = strerror(errno);
        return -1;
    }
    if (n == 0) return 0;
    if (inq) {
        *why = "a quoted field is not closed";
        return -1;
    }
    if ((*buf)[n - 1] != '\n') (*buf)[n++] = '\n';
    (*buf)[n] = 0;
    return 1;
}

/* Flush f and report a write error on it (what: "the CSV", ...); 0 or -1. */
static int out_check(FILE *f, FILE *err, const char *what)
{
    if (!f) return 0;
    errno = 0;
    if (fflush(f) == 0 && !ferror(f)) return 0;
    fprintf(err, "pacesim: writing %s: %s\n", what, errno ? strerror(errno) : "write error");
    return -1;
}

/* Print s on one line: control bytes as \n, \r, \t or \xNN (messages stay one line). */
static void put_clean(FILE *f, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '\n') fputs("\\n", f);
        else if (c == '\r') fputs("\\r", f);
        else if (c == '\t') fputs("\\t", f);
        else if (c < 0x20 || c == 0x7f) fprintf(f, "\\x%02x", c);
        else fputc(c, f);
    }
}

/* ---- value lists -------------------------------------------------------------- */

static int push_val(char ***vals, int *n, int *cap, const char *s, size_t len)
{
    if (*n >= SWEEP_MAX_VALUES) return -1;
    if (*n == *cap) {
        int nc = *cap ? *cap * 2 : 8;
        char **nv = realloc(*vals, (size_t)nc * sizeof *nv);
        if (!nv) return -1;
        *vals = nv;
        *cap = nc;
    }
    char *c = malloc(len + 1);
    if (!c) return -1;
    memcpy(c, s, len);
    c[len] = 0;
    (*vals)[(*n)++] = c;
    return 0;
}

/* The whole of [s, s+len) is a decimal integer (optional '-'), within a long. */
static int parse_long(const char *s, size_t len, long *out)
{
    char buf[32];
    if (len == 0 || len >= sizeof buf) return -1;
    if (!isdigit((unsigned char)s[s[0] == '-' && len > 1])) return -1;   /* no blanks or '+' first */
    memcpy(buf, s, len);
    buf[len] = 0;
    char *end;
    errno = 0;
    long v = strtol(buf, &end, 10);
    if (errno || *end || end == buf) return -1;
    *out = v;
    return 0;
}

/* A plain decimal number in [s, s+len): optional '-', digits, optionally '.' and digits (no
 * blanks, '+' or exponent), at most 15 digits in all.  Its count of decimals in *dec, or -1. */
static int dec_syntax(const char *s, size_t len, int *dec)
{
    size_t i = 0, digits = 0;
    int d = -1;
    if (i < len && s[i] == '-') i++;
    for (; i < len; i++) {
        if (isdigit((unsigned char)s[i])) {
            digits++;
            if (d >= 0) d++;
        } else if (s[i] == '.' && d < 0 && digits > 0) {
            d = 0;
        } else {
            return -1;
        }
    }
    if (digits == 0 || digits > 15 || d == 0) return -1;
    *dec = d < 0 ? 0 : d;
    return 0;
}

/* [s, s+len) (dec_syntax's form) times 10^D, D >= its decimals, exact in a long. */
static long dec_scaled(const char *s, size_t len, int D)
{
    long v = 0;
    int neg = len && s[0] == '-', d = -1;
    for (size_t i = neg; i < len; i++) {
        if (s[i] == '.') { d = 0; continue; }
        v = 10 * v + (s[i] - '0');
        if (d >= 0) d++;
    }
    for (d = d < 0 ? 0 : d; d < D; d++) v *= 10;
    return neg ? -v : v;
}

/* A decimal range A..B[:S] with a fraction in A, B or S (the integer ranges are sweep_values'
 * own): its values printed with the most decimals of the three, 0.5..2:0.5 -> 0.5 1.0 1.5 2.0.
 * 1 a range (values pushed), 0 not a decimal range, -1 with err set. */
static int dec_range(const char *p, size_t len, const char *dots, char ***vals, int *n, int *cap, char *err,
                     size_t errn)
{
    const char *bs = dots + 2;
    const char *colon = memchr(bs, ':', len - (size_t)(bs - p));
    size_t alen = (size_t)(dots - p), blen = colon ? (size_t)(colon - bs) : len - (size_t)(bs - p);
    int da, db, ds = 0;
    if (dec_syntax(p, alen, &da) < 0 || dec_syntax(bs, blen, &db) < 0) return 0;
    const char *ss = colon ? colon + 1 : NULL;
    size_t slen = colon ? len - (size_t)(colon + 1 - p) : 0;
    if (ss && (dec_syntax(ss, slen, &ds) < 0 || ss[0] == '-')) {
        snprintf(err, errn, "\"%.*s\": the step after ':' must be a positive number", (int)len, p);
        return -1;
    }
    int D = da > db ? da : db;
    if (ds > D) D = ds;
    if (D > 9) {
        snprintf(err, errn, "\"%.*s\": at most 9 decimals", (int)len, p);
        return -1;
    }
    long scale = 1;
    for (int i = 0; i < D; i++) scale *= 10;
    long a = dec_scaled(p, alen, D), b = dec_scaled(bs, blen, D), st = ss ? dec_scaled(ss, slen, D) : scale;
    if (st <= 0) {
        snprintf(err, errn, "\"%.*s\": the step after ':' must be a positive number", (int)len, p);
        return -1;
    }
    /* |a|, |b| < 10^15 and 10^9 * 10^15 would not fit: the digit limits keep a, b, st below 10^15 */
    long count = (b >= a ? b - a : a - b) / st;
    if (count >= SWEEP_MAX_VALUES) {
        snprintf(err, errn, "\"%.*s\": more than %d values", (int)len, p, SWEEP_MAX_VALUES);
        return -1;
    }
    for (long i = 0; i <= count; i++) {
        long v = b >= a ? a + i * st : a - i * st, m = v < 0 ? -v : v;
        char nb[48];
        int k = D ? snprintf(nb, sizeof nb, "%s%ld.%0*ld", v < 0 ? "-" : "", m / scale, D, m % scale)
                  : snprintf(nb, sizeof nb, "%ld", v);
        if (push_val(vals, n, cap, nb, (size_t)k) < 0) {
            snprintf(err, errn, "\"%.*s\": more than %d values (or out of memory)", (int)len, p, SWEEP_MAX_VALUES);
            return -1;
        }
    }
    return 1;
}

/* a + off (up) or a - off, for an offset that keeps the result within the range's ends */
static long offset(long a, unsigned long off, int up)
{
    if (off <= LONG_MAX) return up ? a + (long)off : a - (long)off;
    return up ? (a + LONG_MAX) + (long)(off - LONG_MAX) : (a - LONG_MAX) - (long)(off - LONG_MAX);
}

void sweep_free_values(char **vals, int n)
{
    for (int i = 0; i < n; i++) free(vals[i]);
    free(vals);
}

int sweep_values(const char *list, char ***vals_out, int *n_out, char *err, size_t errn)
{
    char **vals = NULL;
    int n = 0, cap = 0;
    const char *p = list;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == 0) {
            snprintf(err, errn, "\"%s\": empty value", list);
            goto fail;
        }
        const char *dots = NULL;
        for (size_t i = 0; i + 1 < len; i++)
            if (p[i] == '.' && p[i + 1] == '.') { dots = p + i; break; }
        long a, b, step = 0;
        int range = 0, frac_step = 0;
        if (dots && parse_long(p, (size_t)(dots - p), &a) == 0) {
            const char *bs = dots + 2;
            const char *colon = memchr(bs, ':', len - (size_t)(bs - p));
            size_t blen = colon ? (size_t)(colon - bs) : len - (size_t)(bs - p);
            if (parse_long(bs, blen, &b) == 0) {
                range = 1;
                int sd = 0;
                size_t slen0 = colon ? len - (size_t)(colon + 1 - p) : 0;
                if (colon && dec_syntax(colon + 1, slen0, &sd) == 0 && sd > 0) {
                    range = 0;               /* a fractional step: dec_range's */
                    frac_step = 1;
                } else if (colon) {
                    size_t slen = slen0;
                    if (parse_long(colon + 1, slen, &step) < 0 || step <= 0) {
                        snprintf(err, errn, "\"%.*s\": the step after ':' must be a positive integer", (int)len, p);
                        goto fail;
                    }
                } else {
                    step = 1;
                }
            }
        }
        int drange = 0;
        if (!range && dots) {
            drange = dec_range(p, len, dots, &vals, &n, &cap, err, errn);
            if (drange < 0) goto fail;
            if (!drange && frac_step) {
                snprintf(err, errn, "\"%.*s\": a range with a fractional step takes ends of at most 15 digits", (int)len, p);
                goto fail;
            }
        }
        if (drange) {
            /* pushed by dec_range */
        } else if (range) {
            /* in unsigned arithmetic: the distance between two longs and every value's
             * offset from a fit, even for ends near LONG_MIN / LONG_MAX */
            unsigned long dist = b >= a ? (unsigned long)b - (unsigned long)a : (unsigned long)a - (unsigned long)b;
            unsigned long count = dist / (unsigned long)step;
            if (count >= SWEEP_MAX_VALUES) {
                snprintf(err, errn, "\"%.*s\": more than %d values", (int)len, p, SWEEP_MAX_VALUES);
                goto fail;
            }
            for (unsigned long i = 0; i <= count; i++) {
                long v = offset(a, i * (unsigned long)step, b >= a);
                char nb[32];
                int k = snprintf(nb, sizeof nb, "%ld", v);
                if (push_val(&vals, &n, &cap, nb, (size_t)k) < 0) {
                    snprintf(err, errn, "\"%s\": more than %d values (or out of memory)", list, SWEEP_MAX_VALUES);
                    goto fail;
                }
            }
        } else if (push_val(&vals, &n, &cap, p, len) < 0) {
            snprintf(err, errn, "\"%s\": more than %d values (or out of memory)", list, SWEEP_MAX_VALUES);
            goto fail;
        }
        if (!comma) break;
        p = comma + 1;
    }
    *vals_out = vals;
    *n_out = n;
    return 0;
fail:
    sweep_free_values(vals, n);
    return -1;
}

typedef struct dup_key {
    char k[48];                   /* a canonical text ("n" + a number's value, ...); "t" for a text value */
    const char *t;                /* a text value ("" otherwise) */
    int i;                        /* the value's index */
} dup_key_t;

static int dup_cmp(const void *a, const void *b)
{
    const dup_key_t *x = a, *y = b;
    int c = strcmp(x->k, y->k);
    if (!c) c = strcmp(x->t, y->t);
    return c ? c : (x->i > y->i) - (x->i < y->i);
}

int sweep_find_dup(char *const *vals, int n, sweep_canon_fn canon, void *ctx, int *first, int *second)
{
    dup_key_t *k = malloc((size_t)(n > 0 ? n : 1) * sizeof *k);
    if (!k) return -1;
    for (int i = 0; i < n; i++) {
        const char *v = vals[i];
        char *end;
        double x = strtod(v, &end);
        k[i].i = i;
        k[i].t = "";
        char *iend;
        errno = 0;
        long long w = strtoll(v, &iend, 10);
        if (canon && canon(v, k[i].k + 1, sizeof k[i].k - 1, ctx)) k[i].k[0] = 'c';
        else if (iend != v && !*iend && !errno && (w > (1LL << 53) || w < -(1LL << 53)))
            snprintf(k[i].k, sizeof k[i].k, "i%lld", w);   /* past a double's integers: compared exactly */
        else if (end != v && !*end && isfinite(x)) snprintf(k[i].k, sizeof k[i].k, "n%.17g", x == 0 ? 0.0 : x);
        else snprintf(k[i].k, sizeof k[i].k, "t"), k[i].t = v;
    }
    qsort(k, (size_t)n, sizeof *k, dup_cmp);
    int i1 = -1, i2 = -1;                 /* of the repeats, the one earliest in the list */
    for (int i = 1; i < n; i++)
        if (!strcmp(k[i].k, k[i - 1].k) && !strcmp(k[i].t, k[i - 1].t) && (i2 < 0 || k[i].i < i2))
            i1 = k[i - 1].i, i2 = k[i].i;
    free(k);
    if (i2 < 0) return 0;
    *first = i1;
    *second = i2;
    return 1;
}

int sweep_add(sweep_t *sw, const char *spec, char *err, size_t errn)
{
    const char *eq = strchr(spec, '=');
    if (!eq || eq == spec) {
        snprintf(err, errn, "--sweep %s: expected key.path=v1,v2,... (or a range A..B[:STEP])", spec);
        return -1;
    }
    size_t klen = (size_t)(eq - spec);
    if (klen >= SWEEP_KEY_MAX) {
        snprintf(err, errn, "--sweep %s: key path too long", spec);
        return -1;
    }
    for (int i = 0; i < sw->naxes; i++)
        if (strlen(sw->axes[i].key) == klen && !strncmp(sw->axes[i].key, spec, klen)) {
            snprintf(err, errn, "--sweep %s: %s is already swept", spec, sw->axes[i].key);
            return -1;
        }
    char verr[SWEEP_ERR_MAX];
    char **vals;
    int n;
    if (sweep_values(eq + 1, &vals, &n, verr, sizeof verr) < 0) {
        snprintf(err, errn, "--sweep %.*s: %s", (int)klen, spec, verr);
        return -1;
    }
    int d1, d2, dr = sweep_find_dup(vals, n, NULL, NULL, &d1, &d2);
    if (dr != 0) {
        if (dr < 0) snprintf(err, errn, "out of memory");
        else if (!strcmp(vals[d1], vals[d2]))
            snprintf(err, errn, "--sweep %.*s: %s is given twice (each value runs once: give it once)", (int)klen, spec,
                     vals[d2]);
        else
            snprintf(err, errn, "--sweep %.*s: %s and %s are the same value (each value runs once: give it once)",
                     (int)klen, spec, vals[d1], vals[d2]);
        sweep_free_values(vals, n);
        return -1;
    }
    sweep_axis_t *na = realloc(sw->axes, (size_t)(sw->naxes + 1) * sizeof *na);
    if (!na) {
        sweep_free_values(vals, n);
        snprintf(err, errn, "out of memory");
        return -1;
    }
    sw->axes = na;
    sweep_axis_t *ax = &sw->axes[sw->naxes++];
    memcpy(ax->key, spec, klen);
    ax->key[klen] = 0;
    ax->n = n;
    ax->vals = vals;
    return 0;
}

long sweep_npoints(const sweep_t *sw)
{
    long n = 1;
    for (int i = 0; sw && i < sw->naxes; i++) {
        if (n > LONG_MAX / sw->axes[i].n) return LONG_MAX;
        n *= sw->axes[i].n;
    }
    return n;
}

void sweep_point(const sweep_t *sw, long p, int *sel)
{
    for (int a = sw->naxes - 1; a >= 0; a--) {
        sel[a] = (int)(p % sw->axes[a].n);
        p /= sw->axes[a].n;
    }
}

void sweep_free(sweep_t *sw)
{
    for (int i = 0; i < sw->naxes; i++) sweep_free_values(sw->axes[i].vals, sw->axes[i].n);
    free(sw->axes);
    sw->axes = NULL;
    sw->naxes = 0;
}

/* ---- progress bar (stderr, only when the caller saw a terminal) --------------- */

typedef struct prog {
    int on, drawn;
    double t0, last;
    long steps_seen;
} prog_t;

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void prog_clear(prog_t *p)
{
    if (p->drawn) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
        p->drawn = 0;
    }
}

/* Redraw at most 10 times a second, and only once the work has taken 0.3 s. */
static int prog_due(prog_t *p)
{
    if (!p->on) return 0;
    double t = wall_now();
    if (t - p->t0 < 0.3 || t - p->last < 0.1) return 0;
    p->last = t;
    return 1;
}

static void prog_jobs(prog_t *p, long done, long n)
{
    if (!prog_due(p)) return;
    const int W = 30;
    int fill = n ? (int)(W * done / n) : W;
    double el = wall_now() - p->t0;
    fprintf(stderr, "\r\033[K[%.*s%*s] %ld/%ld runs  %.1f s", fill, "##############################", W - fill, "",
            done, n, el);
    if (done > 0 && done < n) fprintf(stderr, "  ETA %.0f s", el * (double)(n - done) / (double)done);
    fflush(stderr);
    p->drawn = 1;
}

static void prog_step(prog_t *p, const engine_t *e, const step_rec_t *st)
{
    if (!p->on || (++p->steps_seen & 63) || !prog_due(p)) return;
    double tmax = e->s->stop.max_time_s;
    fprintf(stderr, "\r\033[K%s: step %ld, simulated %.1f s", e->s->name, st->no, st->t0 + st->dt);
    if (tmax > 0) fprintf(stderr, " (at most %.0f s, %.0f%%)", tmax, 100.0 * (st->t0 + st->dt) / tmax);
    fflush(stderr);
    p->drawn = 1;
}

/* ---- the job pool ----------------------------------------------------------- */

/* The generic pool (sweep_pool): jobs taken in index order by the threads, each marked done
 * under the mutex; the caller's thread emits them in index order as they become done. */
typedef struct gpool {
    const sweep_pool_t *cfg;
    char *done;
    long next, ndone;
    pthread_mutex_t mu;
    pthread_cond_t cv;
} gpool_t;

static void *gpool_worker(void *arg)
{
    gpool_t *G = arg;
    for (;;) {
        pthread_mutex_lock(&G->mu);
        long j = G->next < G->cfg->njobs ? G->next++ : -1;
        pthread_mutex_unlock(&G->mu);
        if (j < 0) return NULL;
        G->cfg->run(G->cfg->ctx, j, NULL);
        pthread_mutex_lock(&G->mu);
        G->done[j] = 1;
        G->ndone++;
        pthread_cond_broadcast(&G->cv);
        pthread_mutex_unlock(&G->mu);
    }
}

int sweep_pool(const sweep_pool_t *cfg)
{
    long n = cfg->njobs;
    int nthreads = cfg->threads < 1 ? 1 : cfg->threads;
    if (nthreads > n) nthreads = n > 0 ? (int)n : 1;
    prog_t prog = { .on = cfg->progress, .t0 = wall_now() };
    if (nthreads == 1) {
        for (long j = 0; j < n; j++) {
            cfg->run(cfg->ctx, j, &prog);
            prog_clear(&prog);
            cfg->emit(cfg->ctx, j);
            if (n > 1) prog_jobs(&prog, j + 1, n);
        }
        prog_clear(&prog);
        return 0;
    }
    gpool_t G = { .cfg = cfg };
    pthread_t *th = calloc((size_t)nthreads, sizeof *th);
    G.done = calloc((size_t)n, 1);
    if (!th || !G.done) {
        free(th);
        free(G.done);
        return -1;
    }
    pthread_mutex_init(&G.mu, NULL);
    pthread_cond_init(&G.cv, NULL);
    int started = 0;
    for (; started < nthreads; started++)
        if (pthread_create(&th[started], NULL, gpool_worker, &G) != 0) break;
    if (started == 0) {              /* no threads at all: run here */
        for (long j = 0; j < n; j++) {
            cfg->run(cfg->ctx, j, NULL);
            G.done[j] = 1;
        }
    }
    for (long j = 0; j < n; j++) {
        pthread_mutex_lock(&G.mu);
        while (!G.done[j]) {
            if (prog.on) {
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_nsec += 200000000L;
                if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
                pthread_cond_timedwait(&G.cv, &G.mu, &ts);
                long d = G.ndone;
                pthread_mutex_unlock(&G.mu);
                prog_jobs(&prog, d, n);
                pthread_mutex_lock(&G.mu);
            } else {
                pthread_cond_wait(&G.cv, &G.mu);
            }
        }
        long d = G.ndone;
        pthread_mutex_unlock(&G.mu);
        prog_clear(&prog);
        cfg->emit(cfg->ctx, j);
        prog_jobs(&prog, d, n);
    }
    for (int t = 0; t < started; t++) pthread_join(th[t], NULL);
    pthread_cond_destroy(&G.cv);
    pthread_mutex_destroy(&G.mu);
    prog_clear(&prog);
    free(th);
    free(G.done);
    return 0;
}

/* ---- a sweep's jobs ---------------------------------------------------------- */

typedef struct job_out {
    run_result_t *res;
    run_result_t *bars[2];        /* --error-bars: the run at (1 - P/100) and (1 + P/100) a step */
    FILE *steps;                  /* buffered steps CSV (parallel runs), or NULL */
    FILE *requests;               /* buffered requests CSV (parallel runs), or NULL */
    FILE *replicas;               /* buffered replicas CSV (parallel runs), or NULL */
} job_out_t;

typedef struct pool {
    const sweep_cfg_t *cfg;
    long npoints, njobs;
    int per_run;                  /* pool jobs per run: 1, or 3 with --error-bars (the run, then its
                                     two scaled runs: job J is run J / 3's (J % 3)th) */
    int buffer_steps;
    int steps_replica;            /* the steps rows' replica column (a run is a cluster's) */
    job_out_t *out;
    struct emitter *em;
} pool_t;

typedef struct single_ctx {       /* hooks of a lone run: the caller's + progress */
    const runner_hooks_t *inner;
    prog_t *prog;
} single_ctx_t;

static void single_step(void *ctx, const engine_t *e, const step_rec_t *st)
{
    single_ctx_t *c = ctx;
    if (c->inner && c->inner->on_step) c->inner->on_step(c->inner->ctx, e, st);
    if (c->prog) prog_step(c->prog, e, st);   /* a job on a worker thread (--error-bars) has none */
}

static void single_end(void *ctx, const engine_t *e)
{
    single_ctx_t *c = ctx;
    if (c->inner && c->inner->on_end) c->inner->on_end(c->inner->ctx, e);
}

static void run_job(void *ctx, long jj, void *progv)
{
    pool_t *P = ctx;
    prog_t *prog = progv;
    const sweep_cfg_t *cfg = P->cfg;
    const sweep_t *sw = cfg->sw;
    int naxes = sw ? sw->naxes : 0;
    long j = jj / P->per_run;
    int bar = (int)(jj % P->per_run);   /* 0: the run; 1, 2: its error bars' at -P%, +P% */
    long f = j / P->npoints, p = j % P->npoints;
    job_out_t *o = &P->out[j];
    run_result_t *res = malloc(sizeof *res);
    const char **sets = malloc(((size_t)cfg->nsets + (size_t)naxes + 1) * sizeof *sets);
    char **own = calloc((size_t)naxes + 1, sizeof *own);
    int *sel = calloc((size_t)naxes + 1, sizeof *sel);
    int ns = 0, ok = res && sets && own && sel;
    if (ok) {
        for (int i = 0; i < cfg->nsets; i++) sets[ns++] = cfg->sets[i];
        if (naxes) sweep_point(sw, p, sel);
        for (int a = 0; a < naxes && ok; a++) {
            size_t len = strlen(sw->axes[a].key) + strlen(sw->axes[a].vals[sel[a]]) + 2;
            if (!(own[a] = malloc(len))) { ok = 0; break; }
            snprintf(own[a], len, "%s=%s", sw->axes[a].key, sw->axes[a].vals[sel[a]]);
            sets[ns++] = own[a];
        }
    }
    if (ok && bar) {               /* an error bar's run: the same scenario, every step scaled, no other output */
        runner_hooks_t h = { .summary = cfg->summary, .goodput = cfg->goodput,
                             .cost_scale = bar == 1 ? 1 - cfg->error_bars / 100 : 1 + cfg->error_bars / 100 };
        runner_run_ex(cfg->files[f], sets, ns, &h, res);
    } else if (ok) {
        runner_hooks_t h = { .summary = cfg->summary, .goodput = cfg->goodput };
        single_ctx_t sc = { cfg->hooks, prog };
        if (P->buffer_steps && cfg->steps && !(o->steps = tmpfile())) ok = 0;
        if (P->buffer_steps && cfg->requests && !(o->requests = tmpfile())) ok = 0;
        if (P->buffer_steps && cfg->replicas && !(o->replicas = tmpfile())) ok = 0;
        h.steps_out = P->buffer_steps ? o->steps : cfg->steps;
        h.requests_out = P->buffer_steps ? o->requests : cfg->requests;
        h.replicas_out = P->buffer_steps ? o->replicas : cfg->replicas;
        char prefix[48];
        if (P->njobs > 1) {         /* one header (sweep_run's), rows led by run (and point) */
            if (naxes) snprintf(prefix, sizeof prefix, "%ld,%ld,", j, cfg->point_base + j);
            else snprintf(prefix, sizeof prefix, "%ld,", j);
            h.no_header = 1;
            h.row_prefix = prefix;
            h.steps_replica = P->steps_replica;
        }
        if (ok && P->njobs == 1 && (cfg->hooks || (prog && prog->on))) {
            h.on_step = single_step;
            h.on_end = single_end;
            h.ctx = &sc;
        }
        if (ok) runner_run_ex(cfg->files[f], sets, ns, &h, res);
    }
    if (!ok && res) {
        memset(res, 0, sizeof *res);
        res->rc = 1;
        snprintf(res->err, sizeof res->err, "%s: out of memory or no temporary file for the steps CSV", cfg->files[f]);
    }
    for (int a = 0; own && a < naxes; a++) free(own[a]);
    free(own);
    free(sets);
    free(sel);
    if (bar) o->bars[bar - 1] = res;
    else o->res = res;
}

/* ---- in-order reporting -------------------------------------------------------- */

typedef struct emitter {
    const sweep_cfg_t *cfg;
    long npoints, njobs;
    int naxes;
    int header_done, rc;
    int bad_said;                 /* a sweep's bad input's line printed: no second (one line, exit 2) */
    sweep_best_t *best;
    char **cols;                  /* the CSV's window columns: the union over the runs */
    int *coldist;                 /* per column: a latency window over all requests (its distribution's columns follow) */
    int ncols, capcols;
    char pools[SCN_MAX_POOLS * 4][SCN_ID_MAX];   /* the cluster pools' columns: the union over the runs */
    int any_cluster;              /* a run is a cluster's: the steps CSV's replica column */
    int npools;
    int serve_cols;               /* the serving summary's columns (some run has the summary) */
    long json_n;                  /* objects written to the JSON array */
} emitter_t;

static int add_col(emitter_t *E, const char *name, int dist)
{
    for (int i = 0; i < E->ncols; i++)
        if (!strcmp(E->cols[i], name)) {
            E->coldist[i] |= dist;
            return 0;
        }
    if (E->ncols == E->capcols) {
        int nc = E->capcols ? 2 * E->capcols : 32;
        char **n = realloc(E->cols, (size_t)nc * sizeof *n);
        if (!n) return -1;
        E->cols = n;
        int *d = realloc(E->coldist, (size_t)nc * sizeof *d);
        if (!d) return -1;
        E->coldist = d;
        E->capcols = nc;
    }
    if (!(E->cols[E->ncols] = strdup(name))) return -1;
    E->coldist[E->ncols] = dist;
    E->ncols++;
    return 0;
}

/* The CSV's window columns before any run: every window of every file (with the --set
 * overrides), in order of first appearance; with a swept key under `measure`, of every
 * point.  A file that does not load adds none (its runs fail, and write no row).  So the
 * CSV has one header, and every row its width, whatever windows each run has.
 * 0, or -1 out of memory. */
static int csv_columns(emitter_t *E)
{
    const sweep_cfg_t *cfg = E->cfg;
    const sweep_t *sw = cfg->sw;
    int per_point = 0;
    for (int a = 0; a < E->naxes; a++)
        per_point |= !strncmp(sw->axes[a].key, "measure", 7) || !strncmp(sw->axes[a].key, "cluster", 7);
    long np = per_point ? E->npoints : 1;
    const char **sets = malloc(((size_t)cfg->nsets + (size_t)E->naxes + 1) * sizeof *sets);
    char **own = calloc((size_t)E->naxes + 1, sizeof *own);
    int *sel = calloc((size_t)E->naxes + 1, sizeof *sel);
    int rc = sets && own && sel ? 0 : -1;
    for (int f = 0; f < cfg->nfiles && !rc; f++)
        for (long p = 0; p < np && !rc; p++) {
            int ns = 0;
            for (int i = 0; i < cfg->nsets; i++) sets[ns++] = cfg->sets[i];
            if (per_point) {
                sweep_point(sw, p, sel);
                for (int a = 0; a < E->naxes && !rc; a++) {
                    size_t len = strlen(sw->axes[a].key) + strlen(sw->axes[a].vals[sel[a]]) + 2;
                    free(own[a]);
                    if (!(own[a] = malloc(len))) { rc = -1; break; }
                    snprintf(own[a], len, "%s=%s", sw->axes[a].key, sw->axes[a].vals[sel[a]]);
                    sets[ns++] = own[a];
                }
            }
            scenario_t s;
            char err[SCN_ERR_MAX];
            if (rc || scn_load(cfg->files[f], sets, ns, &s, err) < 0) continue;
            for (int w = 0; w < s.n_windows && !rc; w++) {
                const scn_window_t *sw_ = &s.windows[w];
                int dist = scn_win_is_latency(sw_->kind) && (!sw_->request[0] || !strcmp(sw_->request, "*"));
                rc = add_col(E, sw_->name, dist);
            }
            if (cfg->summary == 0 && (runner_is_serving(&s) || cfg->goodput)) E->serve_cols = 1;
            E->any_cluster |= s.cluster.enabled;
            for (int i = 0; s.cluster.enabled && i < s.cluster.n_pools; i++) {
                int k = 0;
                while (k < E->npools && strcmp(E->pools[k], s.cluster.pools[i].name)) k++;
                if (k == E->npools && k < (int)(sizeof E->pools / sizeof E->pools[0]))
                    snprintf(E->pools[E->npools++], SCN_ID_MAX, "%s", s.cluster.pools[i].name);
            }
            scn_free(&s);
        }
    for (int a = 0; own && a < E->naxes; a++) free(own[a]);
    free(own);
    free(sets);
    free(sel);
    return rc;
}

static void point_label(FILE *f, const sweep_t *sw, long p)
{
    int sel[64];
    int n = sw->naxes < 64 ? sw->naxes : 64;
    sweep_point(sw, p, sel);
    for (int a = 0; a < n; a++) {
        if (a) fputc(' ', f);
        put_clean(f, sw->axes[a].key);
        fputc('=', f);
        put_clean(f, sw->axes[a].vals[sel[a]]);
    }
}

static void emitter_free_cols(emitter_t *E)
{
    for (int i = 0; i < E->ncols; i++) free(E->cols[i]);
    free(E->cols);
    free(E->coldist);
    E->coldist = NULL;
    E->cols = NULL;
    E->ncols = E->capcols = 0;
}

/* The CSV header or row of job j into a malloc'd string (NULL on failure). */
static char *csv_text(const emitter_t *E, long j, const run_result_t *r, int header)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m) return NULL;
    if (E->naxes) {
        const sweep_t *sw = E->cfg->sw;
        if (header) {
            fputs("point", m);
            for (int a = 0; a < sw->naxes; a++) {
                fputc(',', m);
                sweep_csv_field(m, sw->axes[a].key);
            }
        } else {
            int sel[64];
            sweep_point(sw, j % E->npoints, sel);
            fprintf(m, "%ld", E->cfg->point_base + j);
            for (int a = 0; a < sw->naxes; a++) {
                fputc(',', m);
                sweep_csv_field(m, sw->axes[a].vals[sel[a]]);
            }
        }
        fputc(',', m);
    }
    const char *pools[sizeof E->pools / sizeof E->pools[0]];
    for (int i = 0; i < E->npools; i++) pools[i] = E->pools[i];
    report_cols_t c = { .serve = E->serve_cols, .goodput = E->serve_cols && E->cfg->goodput,
                        .wins = (const char *const *)E->cols, .nwins = E->ncols, .dist = E->coldist,
                        .pools = pools, .npools = E->npools, .bars = E->cfg->error_bars };
    if (header) report_csv_header_ex(m, &c);
    else report_csv_row_ex(m, r, &c);
    if (fclose(m) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* A parallel run's buffered steps or requests CSV (*tmp) appended to out, then closed. */
static void copy_back(emitter_t *E, long j, FILE **tmp, FILE *out, const char *what)
{
    const sweep_cfg_t *cfg = E->cfg;
    if (*tmp && out) {
        char buf[65536];
        size_t k;
        /* the run's rows went to a temporary file: a full disk there is a write error too
         * (checked before rewind, which clears the error indicator) */
        errno = 0;
        if (fflush(*tmp) != 0 || ferror(*tmp)) {
            fprintf(cfg->err, "pacesim: writing the %s CSV of run %ld (temporary file): %s\n", what, j,
                    errno ? strerror(errno) : "write error");
            if (E->rc < 1) E->rc = 1;
        } else {
            rewind(*tmp);
            while ((k = fread(buf, 1, sizeof buf, *tmp)) > 0)
                if (fwrite(buf, 1, k, out) != k) break;
            if (ferror(*tmp)) {
                fprintf(cfg->err, "pacesim: reading back the %s CSV of run %ld: %s\n", what, j, strerror(errno));
                if (E->rc < 1) E->rc = 1;
            }
        }
    }
    if (*tmp) fclose(*tmp);
    *tmp = NULL;
}

/* The run's error bars' runs into it (--error-bars): a failure of one is the run's. */
static void attach_bars(const sweep_cfg_t *cfg, job_out_t *o)
{
    run_result_t *r = o->res;
    if (!(cfg->error_bars > 0) || !r || r->rc) return;
    for (int k = 0; k < 2; k++) {
        const run_result_t *b = o->bars[k];
        if (b && !b->rc) continue;
        r->rc = b ? b->rc : 1;
        snprintf(r->err, sizeof r->err, "--error-bars: the run at x%g a step: %.1000s", 1 + (k ? 1 : -1) * cfg->error_bars / 100,
                 b ? b->err : "out of memory");
        return;
    }
    r->bars_pct = cfg->error_bars;
    r->bars[0] = o->bars[0];
    r->bars[1] = o->bars[1];
}

static void emit(emitter_t *E, long j, job_out_t *o)
{
    const sweep_cfg_t *cfg = E->cfg;
    attach_bars(cfg, o);
    const run_result_t *r = o->res;
    long p = j % E->npoints;
    /* in run order, whatever order the runs finished in; none beside a bad input's one line */
    if (r->warn[0] && r->rc != 2) fputs(r->warn, cfg->err);
    if (r->rc > E->rc) E->rc = r->rc;
    if (r->rc == 2 && E->naxes && E->bad_said) {
        /* another point's bad input: a sweep's one line was printed for the first */
    } else if (r->rc) {
        if (r->rc == 2) E->bad_said = 1;
        if (E->naxes) {
            fprintf(cfg->err, "point %ld (", cfg->point_base + j);
            point_label(cfg->err, cfg->sw, p);
            fputs("): ", cfg->err);
        }
        put_clean(cfg->err, r->err);
        fputc('\n', cfg->err);
    } else {
        if (cfg->table) {
            if (E->naxes) {
                fprintf(cfg->table, "-- point %ld: ", cfg->point_base + j);
                point_label(cfg->table, cfg->sw, p);
                fputc('\n', cfg->table);
            }
            report_table(cfg->table, r);
            if (j + 1 < E->njobs) fputc('\n', cfg->table);
        }
        if (cfg->json) {
            int sel[64];
            if (E->naxes) sweep_point(cfg->sw, p, sel);
            fputs(E->json_n++ ? ",\n" : "\n", cfg->json);
            report_json_run(cfg->json, r, E->naxes ? cfg->point_base + j : -1, cfg->sw, E->naxes ? sel : NULL);
        }
        if (cfg->csv || E->best) {
            char *line;
            if (!E->header_done) {
                E->header_done = 1;
                if ((line = csv_text(E, j, r, 1))) {
                    if (cfg->csv) fputs(line, cfg->csv);
                    char berr[SWEEP_ERR_MAX];
                    if (E->best && sweep_best_header(E->best, line, berr, sizeof berr) < 0) {
                        fputs("pacesim: ", cfg->err);
                        put_clean(cfg->err, berr);
                        fputc('\n', cfg->err);
                        sweep_best_free(E->best);
                        E->best = NULL;
                        E->rc = 2;
                    }
                    free(line);
                } else {
                    E->rc = 1;
                }
            }
            if ((line = csv_text(E, j, r, 0))) {
                if (cfg->csv) fputs(line, cfg->csv);
                if (E->best) sweep_best_row(E->best, line);
                free(line);
            } else {
                E->rc = 1;
            }
        }
    }
    copy_back(E, j, &o->steps, cfg->steps, "steps");
    copy_back(E, j, &o->requests, cfg->requests, "requests");
    copy_back(E, j, &o->replicas, cfg->replicas, "replicas");
    free(o->res);
    o->res = NULL;
    for (int k = 0; k < 2; k++) {
        free(o->bars[k]);
        o->bars[k] = NULL;
    }
}

/* Pool job jj done (in order): the run it completes emitted (with --error-bars, the third of
 * a run's jobs). */
static void emit_job(void *ctx, long jj)
{
    pool_t *P = ctx;
    if (jj % P->per_run == P->per_run - 1) emit(P->em, jj / P->per_run, &P->out[jj / P->per_run]);
}

int sweep_run(const sweep_cfg_t *cfg)
{
    emitter_t E = { .cfg = cfg };
    E.naxes = cfg->sw ? cfg->sw->naxes : 0;
    if (E.naxes > 64) {
        fprintf(cfg->err, "pacesim: at most 64 swept keys\n");
        return 2;
    }
    E.npoints = sweep_npoints(cfg->sw);
    if (cfg->nfiles <= 0 || E.npoints > LONG_MAX / cfg->nfiles || E.npoints * cfg->nfiles > SWEEP_MAX_RUNS) {
        fprintf(cfg->err, "pacesim: too many runs (at most %ld)\n", SWEEP_MAX_RUNS);
        return 2;
    }
    E.njobs = E.npoints * cfg->nfiles;
    if (cfg->point_base < 0 || cfg->point_base > LONG_MAX - E.njobs) {
        fprintf(cfg->err, "pacesim: --point-index %ld: the runs' indices would pass %ld\n", cfg->point_base, LONG_MAX);
        return 2;
    }
    if (cfg->hooks && E.njobs != 1) {
        fprintf(cfg->err, "pacesim: --trace needs exactly one run (one file, one point); this is %ld\n", E.njobs);
        return 2;
    }
    if (cfg->objective || cfg->nconstraints) {
        char berr[SWEEP_ERR_MAX];
        if (!cfg->objective) {
            fprintf(cfg->err, "pacesim: --constraint needs --objective max:COL or min:COL\n");
            return 2;
        }
        E.best = sweep_best_new(cfg->objective, cfg->constraints, cfg->nconstraints, berr, sizeof berr);
        if (!E.best) {
            fprintf(cfg->err, "pacesim: %s\n", berr);
            return 2;
        }
    }
    E.serve_cols = cfg->summary > 0;
    if ((cfg->csv || E.best || cfg->steps) && csv_columns(&E) < 0) {
        fprintf(cfg->err, "pacesim: out of memory\n");
        sweep_best_free(E.best);
        emitter_free_cols(&E);
        return 1;
    }
    if (E.njobs > 1) {              /* several runs: one header, rows led by run (and point) */
        const char *pre = E.naxes ? "run,point," : "run,";
        if (cfg->steps) report_steps_header(cfg->steps, pre, E.any_cluster);
        if (cfg->requests) report_requests_header(cfg->requests, pre);
        if (cfg->replicas) report_replicas_header(cfg->replicas, pre);
    }
    if (cfg->json) fputc('[', cfg->json);
    pool_t P = { .cfg = cfg, .npoints = E.npoints, .njobs = E.njobs, .em = &E,
                 .steps_replica = E.any_cluster, .per_run = cfg->error_bars > 0 ? 3 : 1 };
    long pjobs = E.njobs * P.per_run;
    int nthreads = cfg->jobs < 1 ? 1 : cfg->jobs;
    if (nthreads > pjobs) nthreads = (int)pjobs;
    P.buffer_steps = nthreads > 1;   /* the steps and requests CSVs */
    P.out = calloc((size_t)E.njobs, sizeof *P.out);
    sweep_pool_t pc = { .njobs = pjobs, .threads = nthreads, .progress = cfg->progress, .run = run_job,
                        .emit = emit_job, .ctx = &P };
    if (!P.out || sweep_pool(&pc) < 0) {
        free(P.out);
        sweep_best_free(E.best);
        emitter_free_cols(&E);
        fprintf(cfg->err, "pacesim: out of memory\n");
        return 1;
    }
    if (cfg->json) fputs(E.json_n ? "\n]\n" : "]\n", cfg->json);
    if (E.best && sweep_best_error(E.best)) {
        fputs("pacesim: ", cfg->err);
        put_clean(cfg->err, sweep_best_error(E.best));
        fputc('\n', cfg->err);
        E.rc = 2;
    } else if (E.best) {
        if (cfg->best) sweep_best_report(E.best, cfg->best);
        sweep_best_free(E.best);
    }
    free(P.out);
    emitter_free_cols(&E);
    /* a full disk or a closed pipe is a failed run, not a silent short output */
    int werr = out_check(cfg->table, cfg->err, "the table");
    werr |= cfg->csv != cfg->table ? out_check(cfg->csv, cfg->err, "the CSV") : 0;
    werr |= cfg->steps != cfg->table && cfg->steps != cfg->csv ? out_check(cfg->steps, cfg->err, "the steps CSV") : 0;
    werr |= cfg->requests != cfg->table && cfg->requests != cfg->csv && cfg->requests != cfg->steps
                ? out_check(cfg->requests, cfg->err, "the requests CSV") : 0;
    werr |= cfg->replicas && cfg->replicas != cfg->table && cfg->replicas != cfg->csv && cfg->replicas != cfg->steps
                    && cfg->replicas != cfg->requests
                ? out_check(cfg->replicas, cfg->err, "the replicas CSV") : 0;
    werr |= cfg->json && cfg->json != cfg->table && cfg->json != cfg->csv && cfg->json != cfg->steps
                    && cfg->json != cfg->requests
                ? out_check(cfg->json, cfg->err, "the JSON") : 0;
    werr |= cfg->best != cfg->table && cfg->best != cfg->csv && cfg->best != cfg->steps && cfg->best != cfg->err
                ? out_check(cfg->best, cfg->err, "the objective's answer") : 0;
    if (werr && E.rc < 1) E.rc = 1;
    return E.rc;
}

/* ---- points ------------------------------------------------------------------- */

/* A word for a POSIX shell: as is when it is plain, else in single quotes. */
static void shell_word(FILE *f, const char *w)
{
    int plain = *w != 0;
    for (const char *p = w; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("_./=:,+-@%^", *p)) plain = 0;
    if (plain) {
        fputs(w, f);
        return;
    }
    fputc('\'', f);
    for (const char *p = w; *p; p++) {
        if (*p == '\'') fputs("'\\''", f);
        else fputc(*p, f);
    }
    fputc('\'', f);
}

int sweep_print_points(FILE *out, FILE *err, const char *argv0, const char *const *files, int nf,
                       const char *const *sets, int ns, const sweep_t *sw, const char *dir)
{
    return sweep_print_points_ex(out, err, argv0, "run", "--sweep", files, nf, sets, ns, NULL, 0, sw, dir);
}

int sweep_print_points_ex(FILE *out, FILE *err, const char *argv0, const char *cmd, const char *axis_opt,
                          const char *const *files, int nf, const char *const *sets, int ns,
                          const char *const *extra, int nextra, const sweep_t *sw, const char *dir)
{
    long np = sweep_npoints(sw);
    if (nf <= 0 || np > SWEEP_MAX_RUNS / nf) {
        fprintf(err, "pacesim: too many runs (at most %ld)\n", SWEEP_MAX_RUNS);
        return 2;
    }
    if (!dir || !*dir) {                  /* "" would put every point's CSV at the root: /point-0000.csv */
        fprintf(err, "pacesim %s: -o: an empty directory name (the points' CSVs go under it)\n", cmd);
        return 2;
    }
    long total = np * nf;
    int width = 4;
    for (long t = 10000; t <= total - 1 && width < 18; t *= 10) width++;
    int *sel = calloc((size_t)sw->naxes + 1, sizeof *sel);
    if (!sel) {
        fprintf(err, "pacesim: out of memory\n");
        return 1;
    }
    for (int f = 0; f < nf; f++)
        for (long p = 0; p < np && !ferror(out); p++) {
            long j = (long)f * np + p;
            shell_word(out, argv0);
            fprintf(out, " %s ", cmd);
            shell_word(out, files[f]);
            for (int i = 0; i < ns; i++) {
                fputs(" --set ", out);
                shell_word(out, sets[i]);
            }
            for (int i = 0; i < nextra; i++) {
                fputc(' ', out);
                shell_word(out, extra[i]);
            }
            sweep_point(sw, p, sel);
            for (int a = 0; a < sw->naxes; a++) {
                fprintf(out, " %s ", axis_opt);
                size_t kl = strlen(sw->axes[a].key), vl = strlen(sw->axes[a].vals[sel[a]]);
                char *kv = malloc(kl + vl + 2);
                if (!kv) {
                    free(sel);
                    fprintf(err, "pacesim: out of memory\n");
                    return 1;
                }
                snprintf(kv, kl + vl + 2, "%s=%s", sw->axes[a].key, sw->axes[a].vals[sel[a]]);
                shell_word(out, kv);
                free(kv);
            }
            size_t pl = strlen(dir) + 48;
            char *path = malloc(pl);
            if (!path) {
                free(sel);
                fprintf(err, "pacesim: out of memory\n");
                return 1;
            }
            snprintf(path, pl, "%s/point-%0*ld.csv", dir, width, j);
            fprintf(out, " --point-index %ld --csv ", j);
            shell_word(out, path);
            free(path);
            fputs(" --quiet -j 1\n", out);
        }
    free(sel);
    return out_check(out, err, "the commands") < 0 ? 1 : 0;
}

/* ---- the objective ----------------------------------------------------------- */

enum { OP_LE, OP_LT, OP_GE, OP_GT };
static const char *const op_names[] = { "<=", "<", ">=", ">" };

typedef struct cons {
    char col[SWEEP_KEY_MAX];
    char text[SWEEP_KEY_MAX * 2];
    int idx, op, rel;             /* rel: rhs = k * base + add; else rhs = k */
    double k, add;
} cons_t;

typedef struct group {
    char *file;
    double *base;                 /* per constraint: its column in the base row */
    char *best;                   /* the winning row (copy), or NULL */
    double best_v;
    double *best_x, *best_rhs;
} group_t;

struct sweep_best {
    int maximize;
    char obj[SWEEP_KEY_MAX];
    int obj_idx, file_idx, point_idx, keys_from, keys_to;   /* swept keys: [from, to) */
    char **hdr;
    int ncol;
    cons_t *c;
    int nc;
    group_t *g;
    int ng;
    char tmsg[2][SWEEP_ERR_MAX];  /* the objective's [0] / the constraints' [1] first text value met */
    long rows;                    /* the rows read so far (sweep_best_row) */
    long trow[2];                 /* the row of tmsg[k]'s value (1: the first after the header) */
};

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t') s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r')) s[--n] = 0;
    return s;
}

/* A finite decimal number, as the YAML loader takes them: digits, one optional sign,
 * point and exponent (no hex, inf, nan or blanks). */
static int parse_num(const char *s, double *v)
{
    char *end;
    if (!*s || s[strspn(s, "0123456789+-.eE")]) return -1;
    *v = strtod(s, &end);
    return *end || end == s || !isfinite(*v) ? -1 : 0;
}

static int parse_cons(cons_t *c, const char *text, char *err, size_t errn)
{
    char buf[SWEEP_KEY_MAX * 2];
    if (strlen(text) >= sizeof buf) {
        snprintf(err, errn, "--constraint: too long");
        return -1;
    }
    snprintf(c->text, sizeof c->text, "%s", text);
    snprintf(buf, sizeof buf, "%s", text);
    char *op = strpbrk(buf, "<>");
    if (!op || op == buf) {
        snprintf(err, errn, "--constraint '%s': expected COL<=RHS (or <, >=, >)", text);
        return -1;
    }
    c->op = op[0] == '<' ? (op[1] == '=' ? OP_LE : OP_LT) : (op[1] == '=' ? OP_GE : OP_GT);
    char *rhs = op + (op[1] == '=' ? 2 : 1);
    *op = 0;
    char *col = trim(buf);
    if (!*col || strlen(col) >= sizeof c->col) {
        snprintf(err, errn, "--constraint '%s': no column name", text);
        return -1;
    }
    snprintf(c->col, sizeof c->col, "%s", col);
    /* the right-hand side, without blanks */
    char r[SWEEP_KEY_MAX * 2];
    size_t n = 0;
    for (const char *q = rhs; *q && n + 1 < sizeof r; q++)
        if (*q != ' ' && *q != '\t') r[n++] = *q;
    r[n] = 0;
    c->k = 1;
    c->add = 0;
    c->rel = 0;
    char *rest = NULL;
    char *b = strstr(r, "base");
    if (!b) {
        if (parse_num(r, &c->k) == 0) return 0;
        goto bad;
    }
    c->rel = 1;
    if (b != r) {                         /* K*base... */
        if (b[-1] != '*') goto bad;
        b[-1] = 0;
        if (parse_num(r, &c->k) < 0) goto bad;
        rest = b + 4;
    } else {
        rest = r + 4;
        if (*rest == '*') {               /* base*K */
            char *end = rest + 1 + strspn(rest + 1, "0123456789.eE");
            char save = *end;
            *end = 0;
            int bad_k = parse_num(rest + 1, &c->k) < 0;
            *end = save;
            if (bad_k) goto bad;
            rest = end;
        }
    }
    if (*rest) {
        if (*rest != '+' && *rest != '-') goto bad;
        if (parse_num(rest, &c->add) < 0) goto bad;
    }
    return 0;
bad:
    snprintf(err, errn, "--constraint '%s': the right side must be a number, base, K*base, base*K, "
                        "or one of those +/- a number", text);
    return -1;
}

sweep_best_t *sweep_best_new(const char *objective, const char *const *cons, int ncons, char *err, size_t errn)
{
    sweep_best_t *b = calloc(1, sizeof *b);
    if (!b) {
        snprintf(err, errn, "out of memory");
        return NULL;
    }
    if (!strncmp(objective, "max:", 4)) b->maximize = 1;
    else if (strncmp(objective, "min:", 4)) {
        snprintf(err, errn, "--objective %s: expected max:COLUMN or min:COLUMN", objective);
        goto fail;
    }
    if (!objective[4] || strlen(objective + 4) >= sizeof b->obj) {
        snprintf(err, errn, "--objective %s: expected max:COLUMN or min:COLUMN", objective);
        goto fail;
    }
    snprintf(b->obj, sizeof b->obj, "%s", objective + 4);
    b->c = calloc((size_t)ncons + 1, sizeof *b->c);
    if (!b->c) {
        snprintf(err, errn, "out of memory");
        goto fail;
    }
    for (int i = 0; i < ncons; i++)
        if (parse_cons(&b->c[i], cons[i], err, errn) < 0) goto fail;
    b->nc = ncons;
    b->file_idx = b->point_idx = -1;
    return b;
fail:
    sweep_best_free(b);
    return NULL;
}

/* Split a CSV record in place (RFC 4180 quoting: a quoted field loses its quotes and
 * its doubled quotes become one); returns the field count. */
static int split(char *line, char **fld, int max)
{
    int n = 0;
    char *p = line;
    size_t l = strlen(p);
    if (l && p[l - 1] == '\n') p[--l] = 0;
    if (l && p[l - 1] == '\r') p[--l] = 0;
    for (;;) {
        char *start = p, *w;
        if (*p == '"') {
            w = p++;
            for (; *p; p++) {
                if (*p == '"' && p[1] != '"') { p++; break; }
                if (*p == '"') p++;
                *w++ = *p;
            }
            while (*p && *p != ',') *w++ = *p++;   /* text after the closing quote: kept */
        } else {
            p += strcspn(p, ",");
            w = p;
        }
        char sep = *p;
        *w = 0;
        if (n < max) fld[n] = start;
        n++;
        if (sep != ',') break;
        p++;
    }
    return n;
}

static int find_col(const sweep_best_t *b, const char *name)
{
    int k = -1;
    for (int i = 0; i < b->ncol; i++)
        if (!strcmp(b->hdr[i], name)) k = i;     /* the last one wins */
    return k;
}

int sweep_best_header(sweep_best_t *b, const char *line, char *err, size_t errn)
{
    char *copy = strdup(line);
    if (!copy) return -1;
    int n = split(copy, NULL, 0);
    free(copy);
    b->hdr = calloc((size_t)n, sizeof *b->hdr);
    if (!b->hdr) return -1;
    copy = strdup(line);
    char **fld = malloc((size_t)n * sizeof *fld);
    if (!copy || !fld) {
        free(copy);
        free(fld);
        return -1;
    }
    split(copy, fld, n);
    for (int i = 0; i < n; i++) b->hdr[i] = strdup(fld[i]);
    b->ncol = n;
    free(copy);
    free(fld);
    b->file_idx = find_col(b, "file");
    b->point_idx = b->ncol && !strcmp(b->hdr[0], "point") ? 0 : -1;
    b->keys_from = b->keys_to = 0;
    if (b->point_idx == 0) {
        b->keys_from = 1;
        int sc = 1;         /* the swept keys: up to a run's `scenario` or a capacity CSV's `file` */
        while (sc < b->ncol && strcmp(b->hdr[sc], "scenario") && strcmp(b->hdr[sc], "file")) sc++;
        b->keys_to = sc;
    }
    if ((b->obj_idx = find_col(b, b->obj)) < 0) {
        snprintf(err, errn, "--objective: no column \"%s\" in the CSV", b->obj);
        return -1;
    }
    for (int i = 0; i < b->nc; i++)
        if ((b->c[i].idx = find_col(b, b->c[i].col)) < 0) {
            snprintf(err, errn, "--constraint '%s': no column \"%s\" in the CSV", b->c[i].text, b->c[i].col);
            return -1;
        }
    return 0;
}

static double field_num(char **fld, int n, int idx)
{
    double v;
    if (idx < 0 || idx >= n || parse_num(fld[idx], &v) < 0) return NAN;
    return v;
}

/* A value of the objective (k 0) or a constraint (k 1): its number, NAN when empty (an
 * undefined window: that row never wins) or not a number.  A value of text (max:scenario, or
 * "inf" or "xx" among numbers) is no order to optimise, nor a row to pass over unsaid:
 * sweep_best_error names the first. */
static double field_val(sweep_best_t *b, char **fld, int n, int idx, int k)
{
    double v = field_num(fld, n, idx);
    if (isnan(v) && idx >= 0 && idx < n && fld[idx][0] && !b->tmsg[k][0])
        snprintf(b->tmsg[k], sizeof b->tmsg[k], "%s: column \"%s\" holds text (\"%.40s\"), not a number",
                 k ? "--constraint" : "--objective", b->hdr[idx], fld[idx]), b->trow[k] = b->rows;
    return v;
}

const char *sweep_best_error(const sweep_best_t *b)
{
    return sweep_best_error_row(b, NULL);
}

const char *sweep_best_error_row(const sweep_best_t *b, long *row)
{
    for (int k = 0; k < 2; k++)
        if (b->tmsg[k][0]) {
            if (row) *row = b->trow[k];
            return b->tmsg[k];
        }
    return NULL;
}

int sweep_best_row(sweep_best_t *b, const char *line)
{
    int rc = 0;
    if (!b->ncol) return 0;
    char *copy = strdup(line);
    char **fld = malloc((size_t)b->ncol * sizeof *fld);
    if (!copy || !fld) goto out;
    int n = split(copy, fld, b->ncol);
    if (n != b->ncol) {
        rc = n;
        goto out;
    }
    b->rows++;
    const char *file = b->file_idx >= 0 ? fld[b->file_idx] : "";
    group_t *g = NULL;
    for (int i = 0; i < b->ng; i++)
        if (!strcmp(b->g[i].file, file)) g = &b->g[i];
    if (!g) {
        group_t *ng = realloc(b->g, (size_t)(b->ng + 1) * sizeof *ng);
        if (!ng) goto out;
        b->g = ng;
        g = &b->g[b->ng];
        memset(g, 0, sizeof *g);
        g->file = strdup(file);
        g->base = calloc((size_t)b->nc + 1, sizeof *g->base);
        g->best_x = calloc((size_t)b->nc + 1, sizeof *g->best_x);
        g->best_rhs = calloc((size_t)b->nc + 1, sizeof *g->best_rhs);
        if (!g->file || !g->base || !g->best_x || !g->best_rhs) {
            free(g->file);
            free(g->base);
            free(g->best_x);
            free(g->best_rhs);
            goto out;
        }
        b->ng++;
        for (int i = 0; i < b->nc; i++) g->base[i] = field_num(fld, n, b->c[i].idx);
    }
    double v = field_val(b, fld, n, b->obj_idx, 0);
    if (isnan(v)) goto out;
    double x[64], rhs[64];
    for (int i = 0; i < b->nc; i++) {
        const cons_t *c = &b->c[i];
        double xi = field_val(b, fld, n, c->idx, 1);
        double r = c->rel ? c->k * g->base[i] + c->add : c->k;
        if (isnan(xi) || isnan(r)) goto out;
        int ok = c->op == OP_LE ? xi <= r : c->op == OP_LT ? xi < r : c->op == OP_GE ? xi >= r : xi > r;
        if (!ok) goto out;
        if (i < 64) { x[i] = xi; rhs[i] = r; }
    }
    if (g->best && !(b->maximize ? v > g->best_v : v < g->best_v)) goto out;
    char *keep = strdup(line);
    if (!keep) goto out;
    free(g->best);
    g->best = keep;
    g->best_v = v;
    for (int i = 0; i < b->nc && i < 64; i++) {
        g->best_x[i] = x[i];
        g->best_rhs[i] = rhs[i];
    }
out:
    free(copy);
    free(fld);
    return rc;
}

int sweep_best_report(const sweep_best_t *b, FILE *f)
{
    int missing = 0;
    fprintf(f, "objective: %s %s", b->maximize ? "max" : "min", b->obj);
    for (int i = 0; i < b->nc; i++) fprintf(f, "%s%s", i ? ", " : " subject to ", b->c[i].text);
    fputs("  (base = the first point of each file)\n", f);
    for (int i = 0; i < b->ng; i++) {
        const group_t *g = &b->g[i];
        if (!g->best) {
            fputs("  ", f);
            put_clean(f, g->file);
            int nobase = -1;          /* a constraint on base where the first point has no value */
            for (int c = 0; c < b->nc && nobase < 0; c++)
                if (b->c[c].rel && isnan(g->base[c])) nobase = c;
            if (nobase >= 0) {
                fputs(": no point satisfies the constraints (base: ", f);
                put_clean(f, b->c[nobase].col);
                fputs(" is empty at the file's first point)\n", f);
            } else if (b->nc) fputs(": no point satisfies the constraints\n", f);
            else fprintf(f, ": no point has a value of %s\n", b->obj);
            missing++;
            continue;
        }
        char *copy = strdup(g->best);
        char **fld = malloc((size_t)b->ncol * sizeof *fld);
        if (!copy || !fld) {
            free(copy);
            free(fld);
            continue;
        }
        split(copy, fld, b->ncol);
        fputs("  ", f);
        put_clean(f, g->file);
        fputs(": best", f);
        if (b->point_idx == 0) {
            fputs(" point ", f);
            put_clean(f, fld[0]);
        }
        for (int k = b->keys_from; k < b->keys_to; k++) {
            fputc(' ', f);
            put_clean(f, b->hdr[k]);
            fputc('=', f);
            put_clean(f, fld[k]);
        }
        fprintf(f, "  %s=%.6g", b->obj, g->best_v);
        for (int c = 0; c < b->nc && c < 64; c++)
            fprintf(f, "  %s=%.6g (%s %.6g)", b->c[c].col, g->best_x[c], op_names[b->c[c].op], g->best_rhs[c]);
        fputc('\n', f);
        free(copy);
        free(fld);
    }
    return missing;
}

int sweep_set_clash(const char *const *sets, int ns, const sweep_t *sw, const char *axis_opt, char *err, size_t errn)
{
    for (int i = 0; i < ns; i++) {
        size_t l = strcspn(sets[i], "=");
        for (int j = 0; j < i; j++)
            if (strcspn(sets[j], "=") == l && !strncmp(sets[i], sets[j], l)) {
                snprintf(err, errn, "--set %s: %.*s is set twice (--set %s before it)", sets[i], (int)l, sets[i], sets[j]);
                return 1;
            }
        for (int a = 0; sw && a < sw->naxes; a++)
            if (strlen(sw->axes[a].key) == l && !strncmp(sets[i], sw->axes[a].key, l)) {
                snprintf(err, errn, "--set %s: %s %s sets that key too", sets[i], axis_opt, sw->axes[a].key);
                return 1;
            }
    }
    return 0;
}

/* Two of the input CSVs naming one file (the same device and inode: "a.csv" and "./a.csv",
 * a link): its rows would count twice.  0, or 2 with one line on err.  A path that cannot
 * be read is left to the reader (it says why). */
static int inputs_distinct(const char *cmd, const char *const *paths, int n, FILE *err)
{
    struct stat *st = calloc(n > 0 ? (size_t)n : 1, sizeof *st);
    int *ok = calloc(n > 0 ? (size_t)n : 1, sizeof *ok), rc = 0;
    if (!st || !ok) {
        free(st);
        free(ok);
        fprintf(err, "pacesim %s: out of memory\n", cmd);
        return 2;
    }
    for (int i = 0; i < n && !rc; i++) {
        ok[i] = stat(paths[i], &st[i]) == 0;
        for (int j = 0; ok[i] && j < i && !rc; j++)
            if (ok[j] && st[j].st_dev == st[i].st_dev && st[j].st_ino == st[i].st_ino) {
                fprintf(err, "pacesim %s: ", cmd);
                put_clean(err, paths[i]);
                fputs(": the same file as ", err);
                put_clean(err, paths[j]);
                fputs(" (its rows would count twice): give each CSV once\n", err);
                rc = 2;
            }
    }
    free(st);
    free(ok);
    return rc;
}

int sweep_best_files(const char *const *paths, int n, const char *objective, const char *const *cons, int ncons,
                     FILE *out, FILE *err)
{
    int rc = 0;
    if (!objective) {
        fprintf(err, "pacesim best: --objective max:COL or min:COL is required\n");
        return 2;
    }
    if (inputs_distinct("best", paths, n, err)) return 2;
    char *rec = NULL;
    size_t cap = 0;
    for (int i = 0; i < n && !rc; i++) {
        char berr[SWEEP_ERR_MAX];
        const char *why = NULL;
        sweep_best_t *b = sweep_best_new(objective, cons, ncons, berr, sizeof berr);
        if (!b) {
            fputs("pacesim: ", err);
            put_clean(err, berr);
            fputc('\n', err);
            rc = 2;
            break;
        }
        FILE *f = yd_open_input(paths[i], &why);
        if (!f) {
            put_clean(err, paths[i]);
            fprintf(err, ": %s\n", why);
            sweep_best_free(b);
            rc = 2;
            break;
        }
        long line = 0, rows = 0;
        int got;
        while ((got = csv_record(f, &rec, &cap, &why)) > 0) {
            line++;
            if (line == 1) {
                yd_drop_bom(rec);
                if (sweep_best_header(b, rec, berr, sizeof berr) < 0) {
                    put_clean(err, paths[i]);
                    fputs(":1: ", err);
                    put_clean(err, berr);
                    fputc('\n', err);
                    rc = 2;
                    break;
                }
            } else {
                int nf = sweep_best_row(b, rec);
                if (nf) {
                    put_clean(err, paths[i]);
                    fprintf(err, ":%ld: %d fields, the header has %d\n", line, nf, b->ncol);
                    rc = 2;
                    break;
                }
                rows++;
            }
        }
        if (!rc && got < 0) {
            put_clean(err, paths[i]);
            fprintf(err, ":%ld: %s\n", line + 1, why);
            rc = 2;
        } else if (!rc && !rows) {
            put_clean(err, paths[i]);
            fputs(line ? ": a header but no rows (no point of the sweep ran?)\n" : ": empty (no CSV header)\n", err);
            rc = 2;
        }
        fclose(f);
        long trow;
        if (!rc && sweep_best_error_row(b, &trow)) {
            put_clean(err, paths[i]);
            fprintf(err, ":%ld: ", trow + 1);      /* the header is line 1 */
            put_clean(err, sweep_best_error(b));
            fputc('\n', err);
            rc = 2;
        }
        if (!rc) sweep_best_report(b, out);
        sweep_best_free(b);
    }
    free(rec);
    if (out_check(out, err, "the objective's answer") < 0 && !rc) rc = 1;
    return rc;
}

void sweep_best_free(sweep_best_t *b)
{
    if (!b) return;
    for (int i = 0; i < b->ncol; i++) free(b->hdr[i]);
    free(b->hdr);
    for (int i = 0; i < b->ng; i++) {
        free(b->g[i].file);
        free(b->g[i].base);
        free(b->g[i].best);
        free(b->g[i].best_x);
        free(b->g[i].best_rhs);
    }
    free(b->g);
    free(b->c);
    free(b);
}

/* ---- merge ---------------------------------------------------------------------- */

typedef struct mrow {
    long point, seq, ln;          /* ln: its line in its file */
    int file;                     /* index into the files read, for its column map */
    char *line;
} mrow_t;

/* The merged header: the union of the files' columns in first-seen order.  A column is
 * its unquoted name and its occurrence in its file's header: a run's CSV may repeat a
 * name (a window named like a fixed column, e.g. `steps`; the fixed columns come
 * first), so the n-th `x` of one file is the n-th `x` of every other.  name is the
 * match key (the name, then \x01 and the occurrence from the second on; a CSV holds no
 * \x01), raw the column as the file that brought it wrote it (what is emitted); seen
 * and cnt count a name's occurrences in the header being read.  A hash of name ->
 * index keeps lookups linear. */
typedef struct munion {
    char **name, **raw;
    int *seen, *cnt, n, cap;
    int *slot;                    /* open addressing over name, -1 empty; nslot a power of 2 */
    size_t nslot;
} munion_t;

/* One file's columns: col[k] is the union index of its field k. */
typedef struct mfile {
    int *col, ncol;
} mfile_t;

static int mrow_cmp(const void *a, const void *b)
{
    const mrow_t *x = a, *y = b;
    if (x->point != y->point) return x->point < y->point ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The `point` field at rec: a non-negative decimal integer; 0 or -1. */
static int record_point(const char *rec, long *out)
{
    char *end;
    if (!isdigit((unsigned char)rec[0])) return -1;
    errno = 0;
    long v = strtol(rec, &end, 10);
    if (errno || (*end != ',' && *end != '\n' && *end != '\r')) return -1;
    *out = v;
    return 0;
}

/* The fields of a record as written (quotes kept): field k is rec[st[k]] for len[k]
 * bytes, split as split() splits (a field that opens with a quote runs to its closing
 * quote, then to the next comma), the line end excluded.  Stores at most max spans;
 * returns the field count. */
static int raw_split(const char *rec, size_t *st, size_t *len, int max)
{
    size_t l = strlen(rec);
    if (l && rec[l - 1] == '\n') l--;
    if (l && rec[l - 1] == '\r') l--;
    int n = 0;
    size_t p = 0;
    for (;;) {
        size_t start = p;
        if (p < l && rec[p] == '"') {
            for (p++; p < l; p++) {
                if (rec[p] == '"' && (p + 1 >= l || rec[p + 1] != '"')) { p++; break; }
                if (rec[p] == '"') p++;
            }
        }
        while (p < l && rec[p] != ',') p++;
        if (n < max) {
            st[n] = start;
            len[n] = p - start;
        }
        n++;
        if (p >= l) break;
        p++;
    }
    return n;
}

static size_t name_hash(const char *s) { return (size_t)fnv1a_str(FNV1A_BASIS, s); }

/* The slot of name in u's hash: its entry or the empty one where it goes. */
static size_t union_slot(const munion_t *u, const char *name)
{
    size_t m = u->nslot - 1, h = name_hash(name) & m;
    while (u->slot[h] >= 0 && strcmp(u->name[u->slot[h]], name)) h = (h + 1) & m;
    return h;
}

/* The union index of key name (raw: its text as written), added when new; -1 out of
 * memory. */
static int union_key(munion_t *u, const char *name, const char *raw, size_t rawlen, int file)
{
    if ((size_t)(u->n + 1) * 2 > u->nslot) {
        size_t ns = u->nslot ? u->nslot * 2 : 64;
        int *sl = malloc(ns * sizeof *sl);
        if (!sl) return -1;
        free(u->slot);
        u->slot = sl;
        u->nslot = ns;
        for (size_t i = 0; i < ns; i++) sl[i] = -1;
        for (int i = 0; i < u->n; i++) sl[union_slot(u, u->name[i])] = i;
    }
    size_t h = union_slot(u, name);
    if (u->slot[h] >= 0) {
        return u->slot[h];
    }
    if (u->n == u->cap) {
        int nc = u->cap ? u->cap * 2 : 32;
        char **nn = realloc(u->name, (size_t)nc * sizeof *nn);
        if (!nn) return -1;
        u->name = nn;
        char **nr = realloc(u->raw, (size_t)nc * sizeof *nr);
        if (!nr) return -1;
        u->raw = nr;
        int *se = realloc(u->seen, (size_t)nc * sizeof *se);
        if (!se) return -1;
        u->seen = se;
        int *cn = realloc(u->cnt, (size_t)nc * sizeof *cn);
        if (!cn) return -1;
        u->cnt = cn;
        u->cap = nc;
    }
    char *nm = strdup(name), *rw = malloc(rawlen + 1);
    if (!nm || !rw) {
        free(nm);
        free(rw);
        return -1;
    }
    memcpy(rw, raw, rawlen);
    rw[rawlen] = 0;
    u->name[u->n] = nm;
    u->raw[u->n] = rw;
    u->seen[u->n] = file;
    u->cnt[u->n] = -1;
    u->slot[h] = u->n;
    return u->n++;
}

/* The union index of file's next column called name: its first `name` matches the
 * union's first, its second the union's second...; -1 out of memory. */
static int union_col(munion_t *u, const char *name, const char *raw, size_t rawlen, int file)
{
    int k = union_key(u, name, raw, rawlen, file);
    if (k < 0) return -1;
    if (u->seen[k] != file) {
        u->seen[k] = file;
        u->cnt[k] = -1;
    }
    int occ = ++u->cnt[k];
    if (!occ) return k;
    size_t l = strlen(name);
    char *key = malloc(l + 16);
    if (!key) return -1;
    snprintf(key, l + 16, "%s\x01%d", name, occ);
    k = union_key(u, key, raw, rawlen, file);
    free(key);
    return k;
}

static void union_free(munion_t *u)
{
    for (int i = 0; i < u->n; i++) {
        free(u->name[i]);
        free(u->raw[i]);
    }
    free(u->name);
    free(u->raw);
    free(u->seen);
    free(u->cnt);
    free(u->slot);
}

/* Read a file's header rec into u and *mf.  0, or -1 out of memory. */
static int merge_header(munion_t *u, mfile_t *mf, int file, const char *rec)
{
    int nf = raw_split(rec, NULL, NULL, 0);
    size_t *st = malloc((size_t)nf * sizeof *st), *len = malloc((size_t)nf * sizeof *len);
    char **name = malloc((size_t)nf * sizeof *name), *copy = strdup(rec);
    int rc = -1;
    mf->col = malloc((size_t)nf * sizeof *mf->col);
    mf->ncol = nf;
    if (st && len && name && copy && mf->col) {
        raw_split(rec, st, len, nf);
        split(copy, name, nf);
        rc = 0;
        for (int k = 0; k < nf && !rc; k++) {
            mf->col[k] = union_col(u, name[k], rec + st[k], len[k], file);
            if (mf->col[k] < 0) rc = -1;
        }
    }
    free(st);
    free(len);
    free(name);
    free(copy);
    return rc;
}

/* Write row r under the union's columns: verbatim when its file has the union's columns
 * in order, else each field as written at its union column, empty where the file has
 * none, ended as the record was (\r\n or \n).  0 or -1 out of memory. */
static int merge_emit(FILE *out, const munion_t *u, const mfile_t *mf, const char *line)
{
    int same = mf->ncol == u->n;
    for (int k = 0; same && k < mf->ncol; k++) same = mf->col[k] == k;
    if (same) {
        fputs(line, out);
        return 0;
    }
    size_t *st = malloc((size_t)mf->ncol * sizeof *st), *len = malloc((size_t)mf->ncol * sizeof *len);
    int *at = malloc((size_t)u->n * sizeof *at);
    if (!st || !len || !at) {
        free(st);
        free(len);
        free(at);
        return -1;
    }
    raw_split(line, st, len, mf->ncol);
    for (int i = 0; i < u->n; i++) at[i] = -1;
    for (int k = 0; k < mf->ncol; k++) at[mf->col[k]] = k;
    for (int i = 0; i < u->n; i++) {
        if (i) fputc(',', out);
        if (at[i] >= 0) fwrite(line + st[at[i]], 1, len[at[i]], out);
    }
    size_t l = strlen(line);
    fputs(l >= 2 && line[l - 2] == '\r' ? "\r\n" : "\n", out);
    free(st);
    free(len);
    free(at);
    return 0;
}

int sweep_merge(const char *const *paths, int n, FILE *out, FILE *err)
{
    char *hdr_end = NULL, *rec = NULL;
    size_t rcap = 0;
    mrow_t *rows = NULL;
    long nrows = 0, cap = 0;
    munion_t u = { 0 };
    mfile_t *mfs = calloc(n > 0 ? (size_t)n : 1, sizeof *mfs);
    int rc = 0, by_point = 0, have_hdr = 0;
    if (!mfs) {
        fputs("pacesim merge: out of memory\n", err);
        return 2;
    }
    if (inputs_distinct("merge", paths, n, err)) {
        free(mfs);
        return 2;
    }
    for (int i = 0; i < n && rc < 2; i++) {
        const char *why = NULL;
        FILE *f = yd_open_input(paths[i], &why);
        if (!f) {                          /* the user's input: refused like a bad one */
            put_clean(err, paths[i]);
            fprintf(err, ": %s\n", why);
            rc = 2;
            continue;
        }
        long line = 0;
        int got, point_at = -1;
        while (rc < 2 && (got = csv_record(f, &rec, &rcap, &why)) > 0) {
            line++;
            int nf = raw_split(rec, NULL, NULL, 0);
            if (line == 1) {
                if (merge_header(&u, &mfs[i], i, yd_drop_bom(rec)) < 0) {
                    why = "out of memory";
                    got = -1;
                    break;
                }
                if (!have_hdr) {
                    size_t l = strlen(rec);
                    hdr_end = strdup(l >= 2 && rec[l - 2] == '\r' ? "\r\n" : "\n");
                    if (!hdr_end) {
                        why = "out of memory";
                        got = -1;
                        break;
                    }
                    have_hdr = 1;
                    by_point = !strcmp(u.name[0], "point") && !strncmp(rec, "point,", 6);
                }
                for (int k = 0; k < mfs[i].ncol; k++)
                    if (mfs[i].col[k] == 0) point_at = k;
                if (by_point && point_at < 0) {
                    put_clean(err, paths[i]);
                    fputs(":1: no point column, the first file's header starts with one\n", err);
                    rc = 2;
                }
                continue;
            }
            long point = 0;
            int hdr_fields = mfs[i].ncol, bad_point = 0;
            if (nf == hdr_fields && by_point) {
                size_t *st = malloc((size_t)nf * sizeof *st), *len = malloc((size_t)nf * sizeof *len);
                if (!st || !len) {
                    free(st);
                    free(len);
                    why = "out of memory";
                    got = -1;
                    break;
                }
                raw_split(rec, st, len, nf);
                bad_point = record_point(rec + st[point_at], &point) < 0;
                free(st);
                free(len);
            }
            if (nf != hdr_fields || bad_point) {
                put_clean(err, paths[i]);
                if (nf != hdr_fields) fprintf(err, ":%ld: %d fields, the header has %d\n", line, nf, hdr_fields);
                else fprintf(err, ":%ld: the point column is not a non-negative integer\n", line);
                rc = 2;
                break;
            }
            if (nrows == cap) {
                long nc = cap ? cap * 2 : 256;
                mrow_t *nr = realloc(rows, (size_t)nc * sizeof *nr);
                if (!nr) {
                    why = "out of memory";
                    got = -1;
                    break;
                }
                rows = nr;
                cap = nc;
            }
            rows[nrows].seq = nrows;
            rows[nrows].point = point;
            rows[nrows].file = i;
            rows[nrows].ln = line;
            if (!(rows[nrows].line = strdup(rec))) {
                why = "out of memory";
                got = -1;
                break;
            }
            nrows++;
        }
        if (rc < 2 && got < 0) {
            put_clean(err, paths[i]);
            fprintf(err, ":%ld: %s\n", line + 1, why);
            rc = 2;
        } else if (rc < 2 && line == 0) {
            put_clean(err, paths[i]);           /* a failed point's: merging without it would */
            fputs(":1:1: empty (no CSV header: a failed point?)\n", err);   /* look complete */
            rc = 2;
        }
        fclose(f);
    }
    if (rc < 2 && have_hdr) {
        if (by_point && nrows > 1) qsort(rows, (size_t)nrows, sizeof *rows, mrow_cmp);
        for (long i = 1; by_point && i < nrows && rc < 2; i++)   /* one point twice: a copy, or two searches */
            if (rows[i].point == rows[i - 1].point) {
                put_clean(err, paths[rows[i].file]);
                fprintf(err, ":%ld: point %ld is also at ", rows[i].ln, rows[i].point);
                put_clean(err, paths[rows[i - 1].file]);
                fprintf(err, ":%ld (a point's rows would count twice; points of two searches are numbered alike):"
                        " give each point once\n", rows[i - 1].ln);
                rc = 2;
            }
    }
    if (rc < 2 && have_hdr) {
        for (int i = 0; i < u.n; i++) {
            if (i) fputc(',', out);
            fputs(u.raw[i], out);
        }
        fputs(hdr_end, out);
        for (long i = 0; i < nrows && rc < 2; i++)
            if (merge_emit(out, &u, &mfs[rows[i].file], rows[i].line) < 0) {
                fputs("pacesim merge: out of memory\n", err);
                rc = 2;
            }
        if (rc < 2 && out_check(out, err, "the merged CSV") < 0 && !rc) rc = 1;
    }
    for (long i = 0; i < nrows; i++) free(rows[i].line);
    for (int i = 0; i < n; i++) free(mfs[i].col);
    free(mfs);
    free(rows);
    union_free(&u);
    free(hdr_end);
    free(rec);
    return rc;
}
