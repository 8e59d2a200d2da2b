/* trace_import.c: public traces as pacesim's CSV trace.  See trace_import.h. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include "trace_import.h"
#include "ydoc.h"

#define LINE_MAX_ 65536

typedef struct imp {
    const char *path, *fmt;
    FILE *in, *out;
    const trace_import_opts_t *o;
    trace_import_stats_t *st;
    char *err;
    size_t errn;
    int rc;                       /* 0, 2 bad input, 1 failure */
    int have_t0;
    long t0_s;                    /* the first arrival: whole seconds and the rest */
    double t0_frac, last;
} imp_t;

static int fail(imp_t *m, int rc, long line, long col, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (line > 0) snprintf(m->err, m->errn, "%s:%ld:%ld: %s: %s", m->path, line, col, m->fmt, msg);
    else snprintf(m->err, m->errn, "%s: %s: %s", m->path, m->fmt, msg);
    m->rc = rc;
    return -1;
}

/* One request written: its arrival (s, f: whole seconds and fraction, absolute in the
 * source's clock), tokens and the hash_ids tail ("" none).  1 written, 0 left out (the
 * row limit reached: -2), -1 failed. */
static int emit(imp_t *m, long line, long col, long s, double f, long prompt, long output, const char *tail)
{
    const trace_import_opts_t *o = m->o;
    if (o->max_rows > 0 && m->st->written >= o->max_rows) return -2;
    if (!m->have_t0) {
        m->have_t0 = 1;
        m->t0_s = s;
        m->t0_frac = f;
        m->last = 0;
    }
    double t = ((double)(s - m->t0_s) + (f - m->t0_frac)) / o->speedup;
    if (t < m->last - 1e-9)
        return fail(m, 2, line, col, "arrivals must not decrease (%.6f s after the first request, the one before at %.6f s):"
                                     " sort the file by time", t, m->last);
    if (t < m->last) t = m->last;
    if (!(t <= SIM_CLOCK_MAX_S))
        return fail(m, 2, line, col, "arrival %g s (after the first request, divided by --speedup %g) is past the"
                                     " simulated clock's %g s limit: a larger --speedup or --max-rows",
                    t, o->speedup, SIM_CLOCK_MAX_S);
    if (o->max_model_len > 0 && prompt + output > o->max_model_len) {
        m->st->skipped_len++;
        return 0;
    }
    m->last = t;
    if (fprintf(m->out, "%.6f,%ld,%ld%s\n", t, prompt, output, tail) < 0) return fail(m, 1, 0, 0, "write error");
    m->st->written++;
    m->st->span_s = t;
    return 1;
}

/* ---- CSV sources (azure, burstgpt) -------------------------------------------------- */

typedef struct csv_row {
    char *f[16];
    long col[16];                 /* 1-based column of each field's first byte */
    int n;
} csv_row_t;

/* Split line (modified) on commas; fields may be double-quoted (no newlines inside). */
static int csv_split(char *line, csv_row_t *r)
{
    size_t n = strlen(line);
    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
    r->n = 0;
    char *p = line;
    for (;;) {
        if (r->n == 16) return -1;
        r->col[r->n] = (long)(p - line) + 1;
        if (*p == '"') {
            char *w = ++p;
            r->f[r->n++] = w;
            for (;;) {
                if (!*p) return -1;
                if (*p == '"' && p[1] == '"') { *w++ = '"'; p += 2; continue; }
                if (*p == '"') { p++; break; }
                *w++ = *p++;
            }
            *w = 0;
            if (*p && *p != ',') return -1;
        } else {
            r->f[r->n++] = p;
            p += strcspn(p, ",");
        }
        if (!*p) break;
        *p++ = 0;
    }
    return 0;
}

/* A count of tokens: decimal digits only (blanks around allowed), at most 12 of them. */
static int tokens(const char *s, long *v)
{
    while (*s == ' ') s++;
    size_t n = strspn(s, "0123456789");
    const char *e = s + n;
    while (*e == ' ') e++;
    if (n == 0 || n > 12 || *e) return -1;
    *v = strtol(s, NULL, 10);
    return 0;
}

/* Seconds as a plain decimal number >= 0 into whole seconds and the fraction. */
static int seconds(const char *s, long *whole, double *frac)
{
    while (*s == ' ') s++;
    size_t n = strspn(s, "0123456789");
    if (n == 0 || n > 12) return -1;
    const char *e = s + n;
    double f = 0;
    if (*e == '.') {
        char *end;
        f = strtod(e, &end);
        if (end == e + 1 && !isdigit((unsigned char)e[1])) return -1;
        e = end;
    }
    while (*e == ' ') e++;
    if (*e) return -1;
    *whole = strtol(s, NULL, 10);
    *frac = f;
    return 0;
}

/* Days from 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil). */
static long days_from_civil(long y, long m, long d)
{
    y -= m <= 2;
    long era = (y >= 0 ? y : y - 399) / 400;
    long yoe = y - era * 400;
    long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* "YYYY-MM-DD HH:MM:SS[.fraction][Z|+HH:MM|-HH:MM]" (or a 'T' between date and time) into
 * seconds from the epoch (whole, fraction).  -1 malformed, -2 a day its month does not have. */
static int datetime(const char *s, long *whole, double *frac)
{
    int Y, M, D, h, mi, sec, n = 0;
    while (*s == ' ') s++;
    if (sscanf(s, "%4d-%2d-%2d%*1[ T]%2d:%2d:%2d%n", &Y, &M, &D, &h, &mi, &sec, &n) != 6 || n != 19) return -1;
    static const int mdays[12] = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
    if (M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || mi > 59 || sec > 60) return -1;
    if (D > mdays[M - 1] || (M == 2 && D == 29 && !(Y % 4 == 0 && (Y % 100 != 0 || Y % 400 == 0))))
        return -2;                /* a day the month does not have (2023-02-29 read as March 1) */
    const char *p = s + n;
    double f = 0;
    if (*p == '.') {
        char *end;
        if (!isdigit((unsigned char)p[1])) return -1;
        f = strtod(p, &end);
        p = end;
    }
    long off = 0;
    if (*p == 'Z') p++;
    else if (*p == '+' || *p == '-') {
        int oh, om, k = 0;
        if (sscanf(p + 1, "%2d:%2d%n", &oh, &om, &k) != 2 || k != 5 || oh > 23 || om > 59) return -1;
        off = (*p == '+' ? 1 : -1) * (oh * 3600L + om * 60L);
        p += 6;
    }
    while (*p == ' ') p++;
    if (*p) return -1;
    *whole = days_from_civil(Y, M, D) * 86400L + h * 3600L + mi * 60L + sec - off;
    *frac = f;
    return 0;
}

/* The index of the header field named name (case and blanks as written), -1 none, -2 two
 * of that name (which would be meant?). */
static int column(const csv_row_t *h, const char *name)
{
    int at = -1;
    for (int i = 0; i < h->n; i++) {
        const char *f = h->f[i];
        while (*f == ' ') f++;
        size_t l = strlen(f);
        while (l && f[l - 1] == ' ') l--;
        if (l == strlen(name) && !strncmp(f, name, l)) {
            if (at >= 0) return -2;
            at = i;
        }
    }
    return at;
}

static int import_csv(imp_t *m, int azure)
{
    static _Thread_local char line[LINE_MAX_];
    long ln = 0;
    int ct = -1, cp = -1, co = -1;
    csv_row_t r;
    const char *names[3] = { azure ? "TIMESTAMP" : "Timestamp", azure ? "ContextTokens" : "Request tokens",
                             azure ? "GeneratedTokens" : "Response tokens" };
    while (fgets(line, sizeof line, m->in)) {
        ln++;
        if (!strchr(line, '\n') && !feof(m->in)) return fail(m, 2, ln, 1, "line longer than %d characters", LINE_MAX_ - 2);
        if (ln == 1) yd_drop_bom(line);
        if (line[strspn(line, " \r\n")] == 0) continue;
        if (csv_split(line, &r) < 0) return fail(m, 2, ln, 1, "malformed CSV line (more than 16 fields, or a quote not closed)");
        if (ct < 0) {             /* the header */
            ct = column(&r, names[0]);
            cp = column(&r, names[1]);
            co = column(&r, names[2]);
            for (int k = 0; k < 3; k++)
                if ((k == 0 ? ct : k == 1 ? cp : co) == -2)
                    return fail(m, 2, ln, 1, "the header names the column %s twice", names[k]);
            if (ct < 0 || cp < 0 || co < 0)
                return fail(m, 2, ln, 1, "the header must name the columns %s, %s and %s", names[0], names[1], names[2]);
            continue;
        }
        int need = ct > cp ? ct : cp;
        if (co > need) need = co;
        if (r.n <= need) return fail(m, 2, ln, 1, "%d fields, the header has %d", r.n, need + 1);
        m->st->rows++;
        long s, prompt, output;
        double f;
        int dt = azure ? datetime(r.f[ct], &s, &f) : seconds(r.f[ct], &s, &f);
        if (dt == -2) return fail(m, 2, ln, r.col[ct], "%s: a day its month does not have (YYYY-MM-DD)", names[0]);
        if (dt < 0)
            return fail(m, 2, ln, r.col[ct], azure ? "%s: expected a date and time YYYY-MM-DD HH:MM:SS[.fraction][+HH:MM]"
                                                   : "%s: expected seconds (a plain decimal number >= 0)", names[0]);
        if (tokens(r.f[cp], &prompt) < 0) return fail(m, 2, ln, r.col[cp], "%s: expected a token count", names[1]);
        if (tokens(r.f[co], &output) < 0) return fail(m, 2, ln, r.col[co], "%s: expected a token count", names[2]);
        if (output == 0 || prompt == 0) {
            /* BurstGPT logs failed requests with 0 response tokens; a request needs both */
            m->st->skipped_failed++;
            continue;
        }
        int e = emit(m, ln, r.col[ct], s, f, prompt, output, "");
        if (e == -2) break;
        if (e < 0) return -1;
    }
    if (ferror(m->in)) return fail(m, 1, 0, 0, "read error: %s", strerror(errno));
    if (ct < 0) return fail(m, 2, ln + 1, 1, "no header (%s,%s,%s)", names[0], names[1], names[2]);
    return 0;
}

/* ---- JSON sources (mooncake, sharegpt): a streaming reader -------------------------- */

typedef struct jr {
    imp_t *m;
    int c;                        /* the next byte, EOF at the end */
    long line, col;               /* of c */
    int depth;
} jr_t;

static void jr_adv(jr_t *j)
{
    if (j->c == '\n') {
        j->line++;
        j->col = 1;
    } else if (j->c != EOF) {
        j->col++;
    }
    j->c = getc(j->m->in);
}

static void jr_ws(jr_t *j)
{
    while (j->c == ' ' || j->c == '\t' || j->c == '\r' || j->c == '\n') jr_adv(j);
}

static int jr_fail(jr_t *j, const char *what)
{
    if (j->m->rc) return -1;
    if (j->c == EOF) return fail(j->m, 2, j->line, j->col, "%s, found the end of the file", what);
    if (j->c < 0x20 || j->c >= 0x7f) return fail(j->m, 2, j->line, j->col, "%s, found byte 0x%02x", what, j->c);
    return fail(j->m, 2, j->line, j->col, "%s, found '%c'", what, j->c);
}

static int jr_expect(jr_t *j, int ch, const char *what)
{
    jr_ws(j);
    if (j->c != ch) return jr_fail(j, what);
    jr_adv(j);
    return 0;
}

static int hexval(int c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* A string: its first cap-1 bytes into buf (escapes other than \uXXXX kept as their
 * character; \u as '?'), its length in Unicode code points into *chars. */
static int jr_string(jr_t *j, char *buf, size_t cap, long *chars)
{
    jr_ws(j);
    if (j->c != '"') return jr_fail(j, "expected a string");
    jr_adv(j);
    size_t n = 0;
    long cp = 0;
    for (;;) {
        int c = j->c;
        if (c == EOF || c < 0x20) return jr_fail(j, "a string not closed (or a control byte in it)");
        if (c == '"') {
            jr_adv(j);
            break;
        }
        if (c == '\\') {
            jr_adv(j);
            int e = j->c;
            if (e == 'u') {
                int v = 0;
                for (int k = 0; k < 4; k++) {
                    jr_adv(j);
                    int h = hexval(j->c);
                    if (h < 0) return jr_fail(j, "expected four hex digits after \\u");
                    v = 16 * v + h;
                }
                if (!(v >= 0xdc00 && v <= 0xdfff)) cp++;   /* a low surrogate ends a pair counted once */
                c = '?';
            } else if (strchr("\"\\/bfnrt", e) && e != EOF) {
                c = e == 'n' ? '\n' : e == 't' ? '\t' : e == 'b' ? '\b' : e == 'f' ? '\f' : e == 'r' ? '\r' : e;
                cp++;
            } else {
                return jr_fail(j, "a string's escape must be one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX");
            }
        } else if ((c & 0xc0) != 0x80) {
            cp++;                 /* a UTF-8 lead byte or ASCII: one code point */
        }
        if (buf && n + 1 < cap) buf[n++] = (char)c;
        jr_adv(j);
    }
    if (buf && cap) buf[n] = 0;
    if (chars) *chars = cp;
    return 0;
}

/* A number as JSON writes it, into *v. */
static int jr_number(jr_t *j, double *v)
{
    char b[64];
    size_t n = 0;
    jr_ws(j);
    while (j->c != EOF && (isdigit(j->c) || strchr("+-.eE", j->c)) && n + 1 < sizeof b) {
        b[n++] = (char)j->c;
        jr_adv(j);
    }
    b[n] = 0;
    char *end;
    errno = 0;
    double x = n ? strtod(b, &end) : 0;
    if (!n || *end || errno == ERANGE || !isfinite(x) || !(isdigit((unsigned char)b[0]) || b[0] == '-')) {
        j->col -= (long)n;
        return jr_fail(j, "expected a number");
    }
    *v = x;
    return 0;
}

/* A whole number >= 0 below 2^63. */
static int jr_count(jr_t *j, long long *v, const char *what)
{
    jr_ws(j);
    long l = j->line, c = j->col;
    double x;
    if (jr_number(j, &x) < 0) return -1;
    if (x < 0 || x != floor(x) || x >= 9.2e18) return fail(j->m, 2, l, c, "%s: expected a whole number >= 0", what);
    *v = (long long)x;
    return 0;
}

static int jr_skip(jr_t *j);

/* Members of an object: 1 with the next key in key (its ':' read), 0 at its '}'. */
static int jr_member(jr_t *j, int *first, char *key, size_t cap)
{
    jr_ws(j);
    if (j->c == '}') {
        jr_adv(j);
        return 0;
    }
    if (!*first && jr_expect(j, ',', "expected ',' or '}'") < 0) return -1;
    *first = 0;
    if (jr_string(j, key, cap, NULL) < 0) return -1;
    return jr_expect(j, ':', "expected ':'") < 0 ? -1 : 1;
}

/* Elements of an array: 1 when one follows, 0 at its ']'. */
static int jr_element(jr_t *j, int *first)
{
    jr_ws(j);
    if (j->c == ']') {
        jr_adv(j);
        return 0;
    }
    if (!*first && jr_expect(j, ',', "expected ',' or ']'") < 0) return -1;
    *first = 0;
    return 1;
}

static int jr_skip(jr_t *j)
{
    jr_ws(j);
    if (++j->depth > 64) return jr_fail(j, "nested more than 64 deep");
    int rc = 0, first = 1, k;
    char key[8];
    if (j->c == '{') {
        jr_adv(j);
        while ((k = jr_member(j, &first, key, sizeof key)) > 0)
            if (jr_skip(j) < 0) return -1;
        rc = k;
    } else if (j->c == '[') {
        jr_adv(j);
        while ((k = jr_element(j, &first)) > 0)
            if (jr_skip(j) < 0) return -1;
        rc = k;
    } else if (j->c == '"') {
        rc = jr_string(j, NULL, 0, NULL);
    } else if (j->c == 't' || j->c == 'f' || j->c == 'n') {
        const char *w = j->c == 't' ? "true" : j->c == 'f' ? "false" : "null";
        for (; *w; w++) {
            if (j->c != *w) return jr_fail(j, "expected a JSON value");
            jr_adv(j);
        }
    } else {
        double x;
        rc = jr_number(j, &x);
    }
    j->depth--;
    return rc < 0 ? -1 : 0;
}

/* Mooncake: one object a line. */
static int import_mooncake(imp_t *m)
{
    jr_t j = { m, 0, 1, 0, 0 };
    j.c = '\n';                   /* so that jr_adv starts at 1:1 */
    j.line = 0;
    jr_adv(&j);
    uint64_t *ids = NULL;
    size_t nids = 0, cap = 0, tcap = 0;
    char *tail = NULL;
    int rc = 0;
    for (;;) {
        jr_ws(&j);
        if (j.c == EOF) break;
        long line = j.line, col = j.col;
        if (j.c != '{') { rc = jr_fail(&j, "expected an object (one a line)"); break; }
        jr_adv(&j);
        m->st->rows++;
        int first = 1, k, seen = 0;
        char key[32];
        long long ts = 0, in = 0, out = 0;
        long tcol = col;
        double tsd = 0;
        nids = 0;
        while ((k = jr_member(&j, &first, key, sizeof key)) > 0) {
            int bit = !strcmp(key, "timestamp") ? 1 : !strcmp(key, "input_length") ? 2 : !strcmp(key, "output_length") ? 4
                    : !strcmp(key, "hash_ids") ? 8 : 0;
            if (seen & bit) {         /* which one is meant? (a second hash_ids was appended to the first) */
                jr_ws(&j);
                k = fail(m, 2, j.line, j.col, "%s: a second value in one request", key);
                break;
            }
            if (!strcmp(key, "timestamp")) {
                tcol = j.col;
                jr_ws(&j);
                tcol = j.col;
                if (jr_number(&j, &tsd) < 0) { k = -1; break; }
                /* bounded so that its seconds fit a long (1e15 ms: ~31,700 years) */
                if (!(tsd >= 0 && tsd <= 1e15)) { k = fail(m, 2, line, tcol, "timestamp: expected milliseconds between 0 and 1e15"); break; }
                ts = 1;
                seen |= 1;
            } else if (!strcmp(key, "input_length")) {
                if (jr_count(&j, &in, "input_length") < 0) { k = -1; break; }
                seen |= 2;
            } else if (!strcmp(key, "output_length")) {
                if (jr_count(&j, &out, "output_length") < 0) { k = -1; break; }
                seen |= 4;
            } else if (!strcmp(key, "hash_ids")) {
                if (jr_expect(&j, '[', "hash_ids: expected an array") < 0) { k = -1; break; }
                int f2 = 1, e;
                while ((e = jr_element(&j, &f2)) > 0) {
                    long long id;
                    if (jr_count(&j, &id, "hash_ids") < 0) { e = -1; break; }
                    if (nids == cap) {
                        size_t nc = cap ? 2 * cap : 256;
                        uint64_t *n = realloc(ids, nc * sizeof *n);
                        if (!n) { e = fail(m, 1, 0, 0, "out of memory"); break; }
                        ids = n;
                        cap = nc;
                    }
                    ids[nids++] = (uint64_t)id;
                }
                if (e < 0) { k = -1; break; }
                seen |= 8;
            } else if (jr_skip(&j) < 0) {
                k = -1;
                break;
            }
        }
        if (k < 0) { rc = -1; break; }
        (void)ts;
        if ((seen & 7) != 7) {
            rc = fail(m, 2, line, col, "a request needs timestamp, input_length and output_length");
            break;
        }
        if (in == 0 || out == 0) {
            m->st->skipped_failed++;
            continue;
        }
        long hb = m->o->hash_block;
        if (nids > 0 && (long long)(nids - 1) * hb >= in) {
            rc = fail(m, 2, line, col, "%zu hash_ids of %ld tokens for %lld input tokens: more blocks than the prompt holds",
                      nids, hb, in);
            break;
        }
        /* the tail: ",0,-1,0,B:ID ID ..." (cached 0, no prefix group) */
        size_t need = 32 + nids * 21;
        if (need > tcap) {
            char *n = realloc(tail, need);
            if (!n) { rc = fail(m, 1, 0, 0, "out of memory"); break; }
            tail = n;
            tcap = need;
        }
        size_t o = 0;
        tail[0] = 0;
        if (nids > 0) {
            o += (size_t)snprintf(tail, tcap, ",0,-1,0,%ld:", hb);
            for (size_t i = 0; i < nids; i++) o += (size_t)snprintf(tail + o, tcap - o, "%s%llu", i ? " " : "", (unsigned long long)ids[i]);
        }
        if (nids > 0 && o + 2 >= LINE_MAX_) {
            rc = fail(m, 2, line, col, "%zu hash_ids make a CSV line longer than the trace reader takes (%d)", nids, LINE_MAX_ - 2);
            break;
        }
        double whole = floor(tsd / 1000.0);
        int e = emit(m, line, tcol, (long)whole, tsd / 1000.0 - whole, (long)in, (long)out, tail);
        if (e == -2) break;
        if (e < 0) { rc = -1; break; }
    }
    free(ids);
    free(tail);
    if (!rc && ferror(m->in)) rc = fail(m, 1, 0, 0, "read error: %s", strerror(errno));
    return rc;
}

/* ShareGPT: an array of entries; each entry's first two "conversations" values. */
static int import_sharegpt(imp_t *m)
{
    jr_t j = { m, '\n', 0, 0, 0 };
    jr_adv(&j);
    const trace_import_opts_t *o = m->o;
    gsl_rng *rng = NULL;
    if (o->rate > 0) {
        if (!(rng = gsl_rng_alloc(gsl_rng_mt19937))) return fail(m, 1, 0, 0, "out of memory");
        gsl_rng_set(rng, o->seed);
    }
    double t = 0;
    int rc = 0, first = 1, k;
    if (jr_expect(&j, '[', "expected the array of conversations ('[')") < 0) rc = -1;
    while (!rc && (k = jr_element(&j, &first)) != 0) {
        if (k < 0) { rc = -1; break; }
        jr_ws(&j);
        long line = j.line, col = j.col;
        if (jr_expect(&j, '{', "expected an entry (an object)") < 0) { rc = -1; break; }
        m->st->rows++;
        int f1 = 1, turns = 0, convs = 0;
        long chars[2] = { 0, 0 };
        char key[32];
        while ((k = jr_member(&j, &f1, key, sizeof key)) > 0) {
            if (strcmp(key, "conversations")) {
                if (jr_skip(&j) < 0) { k = -1; break; }
                continue;
            }
            if (convs++) {            /* its turns were counted after the first's */
                jr_ws(&j);
                k = fail(m, 2, j.line, j.col, "conversations: a second value in one entry");
                break;
            }
            if (jr_expect(&j, '[', "conversations: expected an array") < 0) { k = -1; break; }
            int f2 = 1, e;
            while ((e = jr_element(&j, &f2)) > 0) {
                if (jr_expect(&j, '{', "conversations: expected a turn (an object)") < 0) { e = -1; break; }
                int f3 = 1, g, has = 0;
                char k2[16];
                while ((g = jr_member(&j, &f3, k2, sizeof k2)) > 0) {
                    if (!strcmp(k2, "value")) {
                        long n;
                        if (jr_string(&j, NULL, 0, &n) < 0) { g = -1; break; }
                        if (turns < 2) chars[turns] = n;
                        has = 1;
                    } else if (jr_skip(&j) < 0) {
                        g = -1;
                        break;
                    }
                }
                if (g < 0) { e = -1; break; }
                if (!has) { e = fail(m, 2, j.line, j.col, "conversations: a turn without \"value\""); break; }
                turns++;
            }
            if (e < 0) { k = -1; break; }
        }
        if (k < 0) { rc = -1; break; }
        if (turns < 2) {
            m->st->skipped_pruned++;
            continue;
        }
        double tok[2] = { 0, 0 };
        for (int q = 0; q < 2; q++) {   /* within a token count's 12 digits, as the other formats' */
            tok[q] = ceil((double)chars[q] / o->chars_per_token);
            if (!(tok[q] < 1e12)) {
                rc = fail(m, 2, line, col, "%s of %ld characters is %g tokens at --chars-per-token %g: more than a"
                          " token count's 12 digits", q ? "the answer" : "the prompt", chars[q], tok[q],
                          o->chars_per_token);
                break;
            }
        }
        if (rc) break;
        long prompt = (long)tok[0], output = (long)tok[1];
        /* vLLM's is_valid_sequence defaults: min_len 4, max_prompt_len 1024, max_total_len 2048 */
        if (!o->no_prune && (prompt < 4 || output < 4 || prompt > 1024 || prompt + output > 2048)) {
            m->st->skipped_pruned++;
            continue;
        }
        if (prompt < 1 || output < 1) {
            m->st->skipped_pruned++;
            continue;
        }
        if (rng && m->st->written > 0) t += gsl_ran_exponential(rng, 1.0 / o->rate);
        if (!(t / o->speedup <= SIM_CLOCK_MAX_S)) {   /* emit's check, before t is cut into whole seconds */
            rc = fail(m, 2, line, col, "arrival %g s (Poisson at --rate %g, divided by --speedup %g) is past the"
                      " simulated clock's %g s limit: a higher --rate or --max-rows", t / o->speedup, o->rate,
                      o->speedup, SIM_CLOCK_MAX_S);
            break;
        }
        double whole = floor(t);
        int e = emit(m, line, col, (long)whole, t - whole, prompt, output, "");
        if (e == -2) break;
        if (e < 0) { rc = -1; break; }
    }
    if (rng) gsl_rng_free(rng);
    if (!rc && ferror(m->in)) rc = fail(m, 1, 0, 0, "read error: %s", strerror(errno));
    return rc;
}

trace_import_opts_t trace_import_defaults(void)
{
    return (trace_import_opts_t){ .speedup = 1, .chars_per_token = 4, .hash_block = 512 };
}

int trace_import(const char *in, FILE *out, const trace_import_opts_t *o, trace_import_stats_t *st, char *err,
                 size_t errn)
{
    imp_t m = { .path = in, .fmt = o->format, .out = out, .o = o, .st = st, .err = err, .errn = errn };
    memset(st, 0, sizeof *st);
    err[0] = 0;
    int kind = !strcmp(o->format, "azure") ? 1 : !strcmp(o->format, "burstgpt") ? 2 : !strcmp(o->format, "mooncake") ? 3
             : !strcmp(o->format, "sharegpt") ? 4 : 0;
    if (!kind) {
        snprintf(err, errn, "pacesim trace import: unknown format \"%s\" (azure, burstgpt, mooncake, sharegpt)", o->format);
        return 2;
    }
    const char *why = NULL;
    if (!(m.in = yd_open_input(in, &why))) {         /* a regular file only: a FIFO would block */
        snprintf(err, errn, "%s: %s", in, why);
        return 2;
    }
    fputs(kind == 3 ? "arrival_s,prompt_tokens,output_tokens,cached_tokens,prefix_group,prefix_tokens,hash_ids\n"
                    : "arrival_s,prompt_tokens,output_tokens\n", out);
    int r = kind <= 2 ? import_csv(&m, kind == 1) : kind == 3 ? import_mooncake(&m) : import_sharegpt(&m);
    fclose(m.in);
    if (r < 0 || m.rc) return m.rc ? m.rc : 1;
    if (st->written == 0) {
        snprintf(err, errn, "%s: %s: no request written (%ld records read, %ld left out)", in, o->format, st->rows,
                 st->skipped_failed + st->skipped_len + st->skipped_pruned);
        return 2;
    }
    return 0;
}
