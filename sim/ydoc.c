/* ydoc.c: YAML -> positioned node tree (libyaml event API), typed getters, --set
 * overrides.  See ydoc.h.
 *
 * Building: an explicit stack of open containers (no recursion, so deep nesting cannot
 * overflow the C stack; depth is still capped at YD_DEPTH_MAX).  Every node is allocated
 * into the document's arena (d->nodes) and freed with the document, so aliases can share
 * nodes freely.  An anchor is registered when its node starts; an alias to a container
 * that is still open is a loop.  Each node's weight counts the nodes reachable from it with
 * aliases expanded; every alias adds its target's weight to a running total that may not
 * exceed YD_EXPAND_MAX.
 *
 * Overrides (yd_apply_set): "a.b.c=value".  Components are separated by dots; a list
 * element is addressed by its index ("requests.1" or "requests[1]") or by the value of its
 * "id" key ("requests.B").  Missing mapping keys are created (validation then rejects
 * unknown ones); a null value on the way is replaced by a mapping.  The value is parsed as
 * YAML (a scalar or a flow collection: {method: mtp, num_speculative_tokens: 4}); an empty
 * value is null.  A target reached through an alias is shared, so the override changes
 * every use of that anchor. */
#include "ydoc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

struct yd_doc {
    char *file;
    yd_node_t *root;
    yd_node_t **nodes;             /* arena */
    size_t nnodes, capnodes;
    char **strs;                   /* names of override sources */
    size_t nstrs, capstrs;
};

/* ---------------------------------------------------------------------------------- */
/* errors                                                                              */

void yd_err_init(yd_err_t *e, char *buf, size_t size)
{
    e->buf = buf;
    e->size = size;
    e->set = 0;
    if (buf && size)
        buf[0] = '\0';
}

char *yd_one_line(char *s)
{
    for (char *c = s; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            *c = '?';
    return s;
}

static void err_vset(yd_err_t *e, const char *fmt, va_list ap)
{
    if (e->set || !e->buf || !e->size)
        return;
    vsnprintf(e->buf, e->size, fmt, ap);
    yd_one_line(e->buf);                 /* always one line */
    e->set = 1;
}

static int err_set(yd_err_t *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int err_set(yd_err_t *e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    err_vset(e, fmt, ap);
    va_end(ap);
    return -1;
}

int yd_fail(yd_err_t *e, const yd_node_t *n, const char *path, const char *fmt, ...)
{
    if (e->set)
        return -1;
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (!path)
        path = "";
    if (!n)
        err_set(e, "%s%s%s", path, *path ? ": " : "", msg);
    else if (n->origin == 1 || (n->origin && !*path)
             || (n->origin && !strncmp(n->file, "--set ", 6) && !strcmp(n->file + 6, path)))   /* not the key twice */
        err_set(e, "%s: %s", n->file, msg);
    else if (n->origin)
        err_set(e, "%s: %s: %s", n->file, path, msg);
    else
        err_set(e, "%s:%d:%d: %s%s%s", n->file, n->line, n->col, path, *path ? ": " : "", msg);
    return -1;
}

/* Append s to buf (YD_PATH_MAX), truncating. */
static void path_cat(char *buf, const char *s)
{
    size_t o = strlen(buf), n = strlen(s);
    if (o + n >= YD_PATH_MAX)
        n = YD_PATH_MAX - 1 - o;
    memcpy(buf + o, s, n);
    buf[o + n] = '\0';
}

const char *yd_path(char *buf, const char *parent, const char *key)
{
    char tmp[YD_PATH_MAX] = "";
    if (parent && *parent) {
        path_cat(tmp, parent);
        path_cat(tmp, ".");
    }
    path_cat(tmp, key);
    memcpy(buf, tmp, YD_PATH_MAX);
    return buf;
}

const char *yd_path_idx(char *buf, const char *parent, int i)
{
    char tmp[YD_PATH_MAX] = "", idx[24];
    if (parent)
        path_cat(tmp, parent);
    snprintf(idx, sizeof idx, "[%d]", i);
    path_cat(tmp, idx);
    memcpy(buf, tmp, YD_PATH_MAX);
    return buf;
}

/* Printable, bounded rendering of a text for messages (no quotes added). */
static void show_text(char *out, size_t size, const char *s, size_t len)
{
    size_t o = 0, lim = 60;
    for (size_t i = 0; i < len && o + 8 < size; i++) {
        if (i == lim) {
            o += (size_t)snprintf(out + o, size - o, "...");
            break;
        }
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            o += (size_t)snprintf(out + o, size - o, "\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            o += (size_t)snprintf(out + o, size - o, "\\x%02x", c);
        else
            out[o++] = (char)c;
    }
    out[o] = '\0';
}

/* "got ..." description of a node. */
static const char *show_node(char *out, size_t size, const yd_node_t *n)
{
    if (!n)
        snprintf(out, size, "nothing");
    else if (n->kind == YD_MAP)
        snprintf(out, size, "a mapping");
    else if (n->kind == YD_SEQ)
        snprintf(out, size, "a list");
    else if (yd_is_null(n))
        snprintf(out, size, "null");
    else {
        char t[256];
        show_text(t, sizeof t, n->text, n->len);
        snprintf(out, size, "%s\"%s\"", n->quoted ? "string " : "", t);
    }
    return out;
}

const char *yd_kind_name(const yd_node_t *n)
{
    if (!n)
        return "nothing";
    return n->kind == YD_MAP ? "a mapping" : n->kind == YD_SEQ ? "a list" : "a scalar";
}

/* ---------------------------------------------------------------------------------- */
/* nodes                                                                               */

/* Room in d's arena for one more node: 0, or -1 when out of memory (the arena as it was). */
static int nodes_room(yd_doc_t *d)
{
    if (d->nnodes < d->capnodes)
        return 0;
    size_t cap = d->capnodes ? 2 * d->capnodes : 64;
    yd_node_t **p = realloc(d->nodes, cap * sizeof *p);
    if (!p)
        return -1;
    d->nodes = p;
    d->capnodes = cap;
    return 0;
}

static yd_node_t *node_new(yd_doc_t *d, yd_kind_t kind, int line, int col, const char *file,
                           int origin)
{
    if (nodes_room(d))
        return NULL;
    yd_node_t *n = calloc(1, sizeof *n);
    if (!n)
        return NULL;
    n->kind = kind;
    n->line = line;
    n->col = col;
    n->file = file;
    n->origin = origin;
    n->weight = 1;
    n->done = kind == YD_SCALAR;
    d->nodes[d->nnodes++] = n;
    return n;
}

static int node_set_text(yd_node_t *n, const char *s, size_t len)
{
    n->text = malloc(len + 1);
    if (!n->text)
        return -1;
    memcpy(n->text, s, len);
    n->text[len] = '\0';
    n->len = len;
    return 0;
}

static int node_push(yd_node_t *c, yd_node_t *key, yd_node_t *val)
{
    if (c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 4;
        if (cap <= c->cap)
            return -1;
        yd_node_t **v = realloc(c->vals, (size_t)cap * sizeof *v);
        if (!v)
            return -1;
        c->vals = v;
        if (c->kind == YD_MAP) {
            yd_node_t **k = realloc(c->keys, (size_t)cap * sizeof *k);
            if (!k)
                return -1;
            c->keys = k;
        }
        c->cap = cap;
    }
    if (c->kind == YD_MAP)
        c->keys[c->n] = key;
    c->vals[c->n++] = val;
    return 0;
}

static void node_free(yd_node_t *n)
{
    free(n->text);
    free(n->keys);
    free(n->vals);
    free(n);
}

void yd_free(yd_doc_t *d)
{
    if (!d)
        return;
    for (size_t i = 0; i < d->nnodes; i++)
        node_free(d->nodes[i]);
    for (size_t i = 0; i < d->nstrs; i++)
        free(d->strs[i]);
    free(d->nodes);
    free(d->strs);
    free(d->file);
    free(d);
}

yd_node_t *yd_root(const yd_doc_t *d) { return d ? d->root : NULL; }
const char *yd_file(const yd_doc_t *d) { return d ? d->file : ""; }

static const char *doc_str(yd_doc_t *d, const char *s)
{
    if (d->nstrs == d->capstrs) {
        size_t cap = d->capstrs ? 2 * d->capstrs : 4;
        char **p = realloc(d->strs, cap * sizeof *p);
        if (!p)
            return NULL;
        d->strs = p;
        d->capstrs = cap;
    }
    char *c = strdup(s);
    if (!c)
        return NULL;
    d->strs[d->nstrs++] = c;
    return c;
}

int yd_is_null(const yd_node_t *n)
{
    if (!n || n->kind != YD_SCALAR || n->quoted)
        return 0;
    const char *t = n->text;
    return n->len == 0 || !strcmp(t, "~") || !strcmp(t, "null") || !strcmp(t, "Null") ||
           !strcmp(t, "NULL");
}

static int key_eq(const yd_node_t *k, const char *s, size_t len)
{
    return k->len == len && !memcmp(k->text, s, len);
}

yd_node_t *yd_map_get(const yd_node_t *map, const char *key)
{
    if (!map || map->kind != YD_MAP)
        return NULL;
    size_t len = strlen(key);
    for (int i = 0; i < map->n; i++)
        if (key_eq(map->keys[i], key, len))
            return map->vals[i];
    return NULL;
}

int yd_len(const yd_node_t *n)
{
    return n && n->kind != YD_SCALAR ? n->n : 0;
}

/* ---------------------------------------------------------------------------------- */
/* loading                                                                             */

typedef struct frame {
    yd_node_t *node;
    yd_node_t *key;                /* map: key waiting for its value */
} frame_t;

typedef struct anchor {
    char *name;
    yd_node_t *node;
} anchor_t;

typedef struct builder {
    yd_doc_t *d;
    yd_err_t *e;
    const char *file;              /* name used in positions */
    int origin;                    /* 0 file, 2 override value */
    const char *buf;
    size_t len;
    frame_t *stk;
    int depth, capstk;
    anchor_t *anch;
    int nanch, capanch;
    long expanded;
    int ndocs;
} builder_t;

static int b_fail(builder_t *b, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int b_fail(builder_t *b, int line, int col, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (b->origin)
        return err_set(b->e, "%s: %s", b->file, msg);
    return err_set(b->e, "%s:%d:%d: %s", b->file, line, col, msg);
}

static int b_oom(builder_t *b)
{
    return err_set(b->e, "%s: out of memory", b->file);
}

/* Room for one more node (memory stays bounded whatever the input); 0 or -1. */
static int b_room(builder_t *b, int line, int col)
{
    if (b->d->nnodes < (size_t)YD_NODES_MAX)
        return 0;
    return b_fail(b, line, col, "more than %ld YAML nodes (too large for a scenario, model or profile)",
                  YD_NODES_MAX);
}

/* Key path of the innermost open container. */
static void b_path(const builder_t *b, char *out)
{
    char tmp[YD_PATH_MAX];
    out[0] = '\0';
    for (int i = 1; i < b->depth; i++) {
        const yd_node_t *p = b->stk[i - 1].node;
        strcpy(tmp, out);
        if (p->kind == YD_MAP) {
            char k[96];
            const yd_node_t *key = b->stk[i - 1].key;
            show_text(k, sizeof k, key ? key->text : "?", key ? key->len : 1);
            yd_path(out, tmp, k);
        } else {
            yd_path_idx(out, tmp, p->n);
        }
    }
}

static long sat_add(long a, long b)
{
    return a > LONG_MAX / 2 - b ? LONG_MAX / 2 : a + b;
}

static int dup_report(builder_t *b, const yd_node_t *first, const yd_node_t *key)
{
    char path[YD_PATH_MAX], k[96], full[YD_PATH_MAX];
    b_path(b, path);
    show_text(k, sizeof k, key->text, key->len);
    yd_path(full, path, k);
    if (b->origin)
        return err_set(b->e, "%s: %s: duplicate key \"%s\"", b->file, full, k);
    return err_set(b->e, "%s:%d:%d: %s: duplicate key \"%s\" (first at line %d)", b->file,
                   key->line, key->col, full, k, first->line);
}

#define DUP_LINEAR 64   /* bigger maps are checked by sorting when they close */

typedef struct keyref {
    const yd_node_t *k;
    int i;
} keyref_t;

static int keyref_cmp(const void *a, const void *b)
{
    const keyref_t *x = a, *y = b;
    if (x->k->len != y->k->len)
        return x->k->len < y->k->len ? -1 : 1;
    int c = memcmp(x->k->text, y->k->text, x->k->len);
    return c ? c : x->i - y->i;
}

static int map_dup_sorted(builder_t *b, const yd_node_t *map)
{
    keyref_t *r = malloc((size_t)map->n * sizeof *r);
    if (!r)
        return b_oom(b);
    for (int i = 0; i < map->n; i++)
        r[i] = (keyref_t){map->keys[i], i};
    qsort(r, (size_t)map->n, sizeof *r, keyref_cmp);
    int best = -1;                 /* earliest second occurrence in document order */
    for (int i = 1; i < map->n; i++)
        if (key_eq(r[i].k, r[i - 1].k->text, r[i - 1].k->len) && r[i - 1].i < r[i].i &&
            (best < 0 || r[i].i < r[best].i))
            best = i;
    int rc = 0;
    if (best >= 0) {
        int j = best;
        while (j > 0 && key_eq(r[j - 1].k, r[best].k->text, r[best].k->len))
            j--;
        rc = dup_report(b, r[j].k, r[best].k);
    }
    free(r);
    return rc;
}

static int map_dup_check(builder_t *b, yd_node_t *map, yd_node_t *key)
{
    if (map->n >= DUP_LINEAR)
        return 0;
    for (int i = 0; i < map->n; i++)
        if (key_eq(map->keys[i], key->text, key->len))
            return dup_report(b, map->keys[i], key);
    return 0;
}

/* Attach a complete node (or an alias target) to the open container. */
static int b_add(builder_t *b, yd_node_t *v, int line, int col)
{
    if (b->depth == 0) {
        b->d->root = v;
        return 0;
    }
    frame_t *f = &b->stk[b->depth - 1];
    if (f->node->kind == YD_SEQ) {
        if (node_push(f->node, NULL, v))
            return b_oom(b);
        return 0;
    }
    if (!f->key) {
        if (v->kind != YD_SCALAR)
            return b_fail(b, line, col, "mapping keys must be scalars, got %s", yd_kind_name(v));
        if (v->line != line || v->col != col) {   /* alias used as a key: own position */
            if (b_room(b, line, col))
                return -1;
            yd_node_t *k = node_new(b->d, YD_SCALAR, line, col, b->file, b->origin);
            if (!k || node_set_text(k, v->text, v->len))
                return b_oom(b);
            k->quoted = v->quoted;
            v = k;
        }
        f->key = v;
        return 0;
    }
    if (map_dup_check(b, f->node, f->key))
        return -1;
    if (node_push(f->node, f->key, v))
        return b_oom(b);
    f->key = NULL;
    return 0;
}

static int b_anchor(builder_t *b, const char *name, yd_node_t *n)
{
    if (!name)
        return 0;
    if (b->nanch == b->capanch) {
        int cap = b->capanch ? 2 * b->capanch : 8;
        anchor_t *p = realloc(b->anch, (size_t)cap * sizeof *p);
        if (!p)
            return b_oom(b);
        b->anch = p;
        b->capanch = cap;
    }
    char *c = strdup(name);
    if (!c)
        return b_oom(b);
    b->anch[b->nanch].name = c;
    b->anch[b->nanch++].node = n;
    return 0;
}

static int b_open(builder_t *b, yd_kind_t kind, const char *anchor, int line, int col)
{
    if (b->depth >= YD_DEPTH_MAX)
        return b_fail(b, line, col, "nesting deeper than %d levels", YD_DEPTH_MAX);
    if (b_room(b, line, col))
        return -1;
    yd_node_t *n = node_new(b->d, kind, line, col, b->file, b->origin);
    if (!n)
        return b_oom(b);
    if (b_anchor(b, anchor, n))
        return -1;
    if (b->depth == b->capstk) {
        int cap = b->capstk ? 2 * b->capstk : 16;
        frame_t *p = realloc(b->stk, (size_t)cap * sizeof *p);
        if (!p)
            return b_oom(b);
        b->stk = p;
        b->capstk = cap;
    }
    b->stk[b->depth].node = n;
    b->stk[b->depth++].key = NULL;
    return 0;
}

static int b_close(builder_t *b)
{
    yd_node_t *n = b->stk[b->depth - 1].node;
    if (n->kind == YD_MAP && n->n > DUP_LINEAR && map_dup_sorted(b, n))
        return -1;
    b->depth--;
    long w = 1;
    for (int i = 0; i < n->n; i++)
        w = sat_add(w, sat_add(n->kind == YD_MAP ? 1 : 0, n->vals[i]->weight));
    n->weight = w;
    n->done = 1;
    return b_add(b, n, n->line, n->col);
}

static int b_event(builder_t *b, yaml_event_t *ev)
{
    int line = (int)ev->start_mark.line + 1, col = (int)ev->start_mark.column + 1;
    switch (ev->type) {
    case YAML_DOCUMENT_START_EVENT:
        if (b->ndocs++ > 0)
            return b_fail(b, line, col, "more than one document (only one is allowed)");
        return 0;
    case YAML_SCALAR_EVENT: {
        if (b_room(b, line, col))
            return -1;
        yd_node_t *n = node_new(b->d, YD_SCALAR, line, col, b->file, b->origin);
        if (!n || node_set_text(n, (const char *)ev->data.scalar.value, ev->data.scalar.length))
            return b_oom(b);
        const char *tag = (const char *)ev->data.scalar.tag;
        n->quoted = ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE ||
                    (tag && !strcmp(tag, "tag:yaml.org,2002:str"));
        if (b_anchor(b, (const char *)ev->data.scalar.anchor, n))
            return -1;
        return b_add(b, n, line, col);
    }
    case YAML_SEQUENCE_START_EVENT:
        return b_open(b, YD_SEQ, (const char *)ev->data.sequence_start.anchor, line, col);
    case YAML_MAPPING_START_EVENT:
        return b_open(b, YD_MAP, (const char *)ev->data.mapping_start.anchor, line, col);
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
        return b_close(b);
    case YAML_ALIAS_EVENT: {
        const char *name = (const char *)ev->data.alias.anchor;
        yd_node_t *t = NULL;
        for (int i = b->nanch - 1; i >= 0 && !t; i--)
            if (!strcmp(b->anch[i].name, name))
                t = b->anch[i].node;
        if (!t)
            return b_fail(b, line, col, "undefined alias *%s", name);
        if (!t->done)
            return b_fail(b, line, col, "alias *%s refers to a node that contains it (alias loop)",
                          name);
        b->expanded = sat_add(b->expanded, t->weight);
        if (b->expanded > YD_EXPAND_MAX)
            return b_fail(b, line, col, "aliases expand to more than %ld nodes", YD_EXPAND_MAX);
        return b_add(b, t, line, col);
    }
    default:
        return 0;
    }
}

static void offset_to_pos(const char *buf, size_t len, size_t off, int *line, int *col)
{
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < off && i < len; i++) {
        if (buf[i] == '\n') {
            ++*line;
            *col = 1;
        } else {
            ++*col;
        }
    }
}

static yd_doc_t *parse(const char *file, int origin, const char *text, size_t len, yd_err_t *e)
{
    yd_doc_t *d = calloc(1, sizeof *d);
    if (!d || !(d->file = strdup(file))) {
        free(d);
        err_set(e, "%s: out of memory", file);
        return NULL;
    }
    builder_t b = {.d = d, .e = e, .file = d->file, .origin = origin, .buf = text, .len = len};
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p)) {
        yd_free(d);
        err_set(e, "%s: out of memory", file);
        return NULL;
    }
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    int rc = 0;
    for (;;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev)) {
            int line, col;
            if (p.error == YAML_READER_ERROR) {
                offset_to_pos(text, len, p.problem_offset, &line, &col);
            } else {
                line = (int)p.problem_mark.line + 1;
                col = (int)p.problem_mark.column + 1;
            }
            if (p.error == YAML_MEMORY_ERROR)
                b_oom(&b);
            else
                b_fail(&b, line, col, "syntax error: %s%s%s", p.problem ? p.problem : "invalid YAML",
                       p.context ? " " : "", p.context ? p.context : "");
            rc = -1;
            break;
        }
        int end = ev.type == YAML_STREAM_END_EVENT;
        rc = b_event(&b, &ev);
        yaml_event_delete(&ev);
        if (rc || end)
            break;
    }
    yaml_parser_delete(&p);
    for (int i = 0; i < b.nanch; i++)
        free(b.anch[i].name);
    free(b.anch);
    free(b.stk);
    if (!rc && (!d->root || (!origin && yd_is_null(d->root))))
        rc = b_fail(&b, 1, 1, "empty document");
    if (rc) {
        yd_free(d);
        return NULL;
    }
    return d;
}

yd_doc_t *yd_load_string(const char *name, const char *text, size_t len, yd_err_t *e)
{
    return parse(name, 0, text, len, e);
}

char *yd_drop_bom(char *s)
{
    if (!strncmp(s, "\xEF\xBB\xBF", 3)) memmove(s, s + 3, strlen(s + 3) + 1);
    return s;
}

FILE *yd_open_input(const char *path, const char **why)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    static _Thread_local char buf[128];
    if (fd < 0) {
        snprintf(buf, sizeof buf, "cannot open: %s", strerror(errno));
        *why = buf;
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        *why = S_ISDIR(st.st_mode) ? "cannot read: Is a directory"
                                   : "cannot read: not a regular file (a FIFO, device or socket)";
        close(fd);
        return NULL;
    }
    int fl = fcntl(fd, F_GETFL);
    FILE *f = fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0 ? NULL : fdopen(fd, "rb");
    if (!f) {
        snprintf(buf, sizeof buf, "cannot open: %s", strerror(errno));
        *why = buf;
        close(fd);
    }
    return f;
}

yd_doc_t *yd_load(const char *path, yd_err_t *e)
{
    const char *why = NULL;
    FILE *f = yd_open_input(path, &why);
    if (!f) {
        err_set(e, "%s: %s", path, why);
        return NULL;
    }
    /* sized by the file (which yd_open_input made sure is regular); never more than
     * YD_FILE_MAX + 1 bytes, the one past the limit telling a too-large file */
    struct stat st;
    int sized = fstat(fileno(f), &st) == 0 && st.st_size > 0;
    if (sized && st.st_size > YD_FILE_MAX) {
        fclose(f);
        err_set(e, "%s: file too large (more than %ld MiB)", path, YD_FILE_MAX >> 20);
        return NULL;
    }
    size_t cap = sized ? (size_t)st.st_size + 1 : 1 << 16;
    size_t len = 0;
    char *buf = malloc(cap);
    if (!buf) {
        fclose(f);
        err_set(e, "%s: out of memory", path);
        return NULL;
    }
    for (;;) {
        if (len == cap) {
            if (cap >= (size_t)YD_FILE_MAX + 1) {
                free(buf);
                fclose(f);
                err_set(e, "%s: file too large (more than %ld MiB)", path, YD_FILE_MAX >> 20);
                return NULL;
            }
            size_t nc = cap * 2 < (size_t)YD_FILE_MAX + 1 ? cap * 2 : (size_t)YD_FILE_MAX + 1;
            char *nb = realloc(buf, nc);
            if (!nb) {
                free(buf);
                fclose(f);
                err_set(e, "%s: out of memory", path);
                return NULL;
            }
            buf = nb;
            cap = nc;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0) {
            if (ferror(f)) {
                int er = errno;
                free(buf);
                fclose(f);
                err_set(e, "%s: cannot read: %s", path, strerror(er));
                return NULL;
            }
            break;
        }
    }
    fclose(f);
    if (len > (size_t)YD_FILE_MAX) {
        free(buf);
        err_set(e, "%s: file too large (more than %ld MiB)", path, YD_FILE_MAX >> 20);
        return NULL;
    }
    yd_doc_t *d = parse(path, 0, buf, len, e);
    free(buf);
    return d;
}

/* ---------------------------------------------------------------------------------- */
/* overrides                                                                           */

static int all_digits(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return 0;
    return 1;
}

/* Move sub's nodes into d's arena; they name src (owned by d) as their file. */
static int doc_adopt(yd_doc_t *d, yd_doc_t *sub, const char *src)
{
    for (size_t i = 0; i < sub->nnodes; i++) {
        if (nodes_room(d))
            return -1;
        sub->nodes[i]->file = src;
        d->nodes[d->nnodes++] = sub->nodes[i];
        sub->nodes[i] = NULL;
    }
    sub->nnodes = 0;
    return 0;
}

int yd_apply_set(yd_doc_t *d, const char *assignment, yd_err_t *e)
{
    const char *eq = strchr(assignment, '=');
    char upath[YD_PATH_MAX];
    size_t plen = eq ? (size_t)(eq - assignment) : strlen(assignment);
    if (plen >= sizeof upath)
        return err_set(e, "--set: key path too long");
    memcpy(upath, assignment, plen);
    upath[plen] = '\0';
    if (!eq)
        return err_set(e, "--set %s: expected key.path=value", upath);
    char name[YD_PATH_MAX + 8];
    snprintf(name, sizeof name, "--set %s", upath);
    const char *src = doc_str(d, name);
    if (!src)
        return err_set(e, "%s: out of memory", name);

    /* components: dots, and [i] as another component */
    char segbuf[YD_PATH_MAX];
    char *segs[64];
    int nseg = 0;
    size_t o = 0;
    for (size_t i = 0; i < plen; i++) {
        char c = upath[i];
        if (c == '[')
            c = '.';
        else if (c == ']') {
            if (i + 1 < plen && upath[i + 1] != '.' && upath[i + 1] != '[')
                return err_set(e, "%s: bad key path", name);
            continue;
        }
        segbuf[o++] = c;
    }
    segbuf[o] = '\0';
    for (char *s = segbuf, *t;; s = t + 1) {
        t = strchr(s, '.');
        if (t)
            *t = '\0';
        if (!*s)
            return err_set(e, "%s: empty component in key path", name);
        if (nseg == 64)
            return err_set(e, "%s: key path too deep", name);
        segs[nseg++] = s;
        if (!t)
            break;
    }

    /* the value */
    yd_node_t *val;
    const char *v = eq + 1;
    size_t vlen = strlen(v);
    size_t sp = strspn(v, " \t");
    if (sp == vlen) {
        val = node_new(d, YD_SCALAR, 0, 0, src, 1);
        if (!val || node_set_text(val, "", 0))
            return err_set(e, "%s: out of memory", name);
    } else {
        yd_doc_t *sub = parse(src, 2, v, vlen, e);
        if (!sub)
            return -1;
        val = sub->root;
        if (doc_adopt(d, sub, src)) {
            yd_free(sub);
            return err_set(e, "%s: out of memory", name);
        }
        yd_free(sub);
        val->origin = 1;
    }

    if (!d->root || d->root->kind != YD_MAP)
        return err_set(e, "%s: the document is not a mapping", name);
    yd_node_t **slot = &d->root;
    for (int i = 0; i < nseg; i++) {
        yd_node_t *cur = *slot;
        if (yd_is_null(cur)) {           /* e.g. "speculative_config:" with nothing */
            cur = node_new(d, YD_MAP, 0, 0, src, 1);
            if (!cur)
                return err_set(e, "%s: out of memory", name);
            cur->done = 1;
            *slot = cur;
        }
        const char *s = segs[i];
        if (cur->kind == YD_MAP) {
            size_t len = strlen(s);
            int k = -1;
            for (int j = 0; j < cur->n && k < 0; j++)
                if (key_eq(cur->keys[j], s, len))
                    k = j;
            if (k < 0) {
                yd_node_t *key = node_new(d, YD_SCALAR, 0, 0, src, 1);
                yd_node_t *child = i + 1 < nseg ? node_new(d, YD_MAP, 0, 0, src, 1) : val;
                if (!key || !child || node_set_text(key, s, len) || node_push(cur, key, child))
                    return err_set(e, "%s: out of memory", name);
                child->done = 1;
                k = cur->n - 1;
            }
            slot = &cur->vals[k];
        } else if (cur->kind == YD_SEQ) {
            int k = -1;
            if (all_digits(s)) {
                long idx = strlen(s) > 9 ? LONG_MAX : atol(s);
                if (idx >= cur->n)
                    return err_set(e, "%s: index %s out of range (the list has %d element%s)",
                                   name, s, cur->n, cur->n == 1 ? "" : "s");
                k = (int)idx;
            } else {
                size_t len = strlen(s);
                for (int j = 0; j < cur->n && k < 0; j++) {
                    yd_node_t *id = yd_map_get(cur->vals[j], "id");
                    if (id && id->kind == YD_SCALAR && key_eq(id, s, len))
                        k = j;
                }
                if (k < 0)
                    return err_set(e, "%s: no list element with id \"%s\"", name, s);
            }
            slot = &cur->vals[k];
        } else {
            return err_set(e, "%s: \"%s\" is inside a scalar value", name, s);
        }
    }
    *slot = val;
    return 0;
}

/* ---------------------------------------------------------------------------------- */
/* conversions                                                                         */

/* Decimal integer, YAML 1.1 style underscores allowed between digits.  0 ok, -1 junk,
 * -2 overflow. */
static int parse_long(const char *s, long *out)
{
    int neg = 0;
    if (*s == '+' || *s == '-')
        neg = *s++ == '-';
    if (*s < '0' || *s > '9')
        return -1;
    unsigned long v = 0, lim = neg ? (unsigned long)LONG_MAX + 1 : (unsigned long)LONG_MAX;
    int over = 0;
    for (; *s; s++) {
        if (*s == '_' && s[1] >= '0' && s[1] <= '9' && s[-1] >= '0' && s[-1] <= '9')
            continue;
        if (*s < '0' || *s > '9')
            return -1;
        unsigned d = (unsigned)(*s - '0');
        if (v > (lim - d) / 10)
            over = 1;
        else
            v = v * 10 + d;
    }
    if (over)
        return -2;
    *out = neg ? (long)(0 - v) : (long)v;
    return 0;
}

/* Decimal floating point: [+-]? (d+ (. d*)? | . d+) ([eE] [+-]? d+)?.  No inf/nan/hex. */
static int parse_double(const char *s, double *out)
{
    const char *p = s;
    int digits = 0;
    if (*p == '+' || *p == '-')
        p++;
    while (*p >= '0' && *p <= '9')
        p++, digits++;
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9')
            p++, digits++;
    }
    if (!digits)
        return -1;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        if (*p < '0' || *p > '9')
            return -1;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    if (*p)
        return -1;
    errno = 0;
    double v = strtod(s, NULL);
    if (!isfinite(v))
        return -2;
    *out = v;
    return 0;
}

static int scalar_text_ok(const yd_node_t *n)
{
    return n && n->kind == YD_SCALAR && !n->quoted && strlen(n->text) == n->len;
}

static void int_desc(char *buf, size_t size, long lo, long hi, int is_int)
{
    long top = is_int ? INT_MAX : LONG_MAX;
    if (hi >= top) {
        if (lo == 1)
            snprintf(buf, size, "a positive integer");
        else if (lo == 0)
            snprintf(buf, size, "a non-negative integer");
        else if (lo <= (is_int ? INT_MIN : LONG_MIN))
            snprintf(buf, size, "an integer");
        else
            snprintf(buf, size, "an integer >= %ld", lo);
    } else {
        snprintf(buf, size, "an integer in [%ld, %ld]", lo, hi);
    }
}

static int as_long(yd_err_t *e, const yd_node_t *n, const char *path, long lo, long hi,
                   int is_int, long *out)
{
    char desc[96], got[300];
    long v;
    int_desc(desc, sizeof desc, lo, hi, is_int);
    if (!scalar_text_ok(n) || parse_long(n->text, &v) || v < lo || v > hi)
        return yd_fail(e, n, path, "expected %s, got %s", desc, show_node(got, sizeof got, n));
    *out = v;
    return 0;
}

int yd_as_long(yd_err_t *e, const yd_node_t *n, const char *path, long lo, long hi, long *out)
{
    return as_long(e, n, path, lo, hi, 0, out);
}

int yd_as_int(yd_err_t *e, const yd_node_t *n, const char *path, int lo, int hi, int *out)
{
    long v;
    if (as_long(e, n, path, lo, hi, 1, &v))
        return -1;
    *out = (int)v;
    return 0;
}

static void dbl_desc(char *buf, size_t size, double lo, double hi, int flags)
{
    int lo_open = flags & YD_LO_OPEN, hi_open = flags & YD_HI_OPEN;
    if (isinf(hi)) {
        if (isinf(lo))
            snprintf(buf, size, "a finite number");
        else if (lo == 0)
            snprintf(buf, size, "%s number", lo_open ? "a positive" : "a non-negative");
        else
            snprintf(buf, size, "a number %s %g", lo_open ? ">" : ">=", lo);
    } else if (isinf(lo)) {
        snprintf(buf, size, "a number %s %g", hi_open ? "<" : "<=", hi);
    } else {
        snprintf(buf, size, "a number in %c%g, %g%c", lo_open ? '(' : '[', lo, hi,
                 hi_open ? ')' : ']');
    }
}

int yd_as_double(yd_err_t *e, const yd_node_t *n, const char *path, double lo, double hi,
                 int flags, double *out)
{
    char desc[96], got[300];
    double v = 0;
    int bad = !scalar_text_ok(n) || parse_double(n->text, &v);
    if (!bad)
        bad = (flags & YD_LO_OPEN) ? !(v > lo) : !(v >= lo);
    if (!bad)
        bad = (flags & YD_HI_OPEN) ? !(v < hi) : !(v <= hi);
    if (bad) {
        dbl_desc(desc, sizeof desc, lo, hi, flags);
        return yd_fail(e, n, path, "expected %s, got %s", desc, show_node(got, sizeof got, n));
    }
    *out = v;
    return 0;
}

int yd_as_bool(yd_err_t *e, const yd_node_t *n, const char *path, int *out)
{
    static const char *const t[] = {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"};
    static const char *const f[] = {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"};
    if (scalar_text_ok(n))
        for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
            if (!strcmp(n->text, t[i])) {
                *out = 1;
                return 0;
            }
            if (!strcmp(n->text, f[i])) {
                *out = 0;
                return 0;
            }
        }
    char got[300];
    return yd_fail(e, n, path, "expected true or false, got %s", show_node(got, sizeof got, n));
}

int yd_as_str(yd_err_t *e, const yd_node_t *n, const char *path, char *buf, size_t size)
{
    char got[300];
    if (!n || n->kind != YD_SCALAR || yd_is_null(n))
        return yd_fail(e, n, path, "expected a string, got %s", show_node(got, sizeof got, n));
    if (strlen(n->text) != n->len)
        return yd_fail(e, n, path, "string contains a NUL character");
    if (n->len >= size)
        return yd_fail(e, n, path, "string too long (at most %zu characters)", size - 1);
    memcpy(buf, n->text, n->len + 1);
    return 0;
}

int yd_as_enum(yd_err_t *e, const yd_node_t *n, const char *path, const char *const *names,
               int *out)
{
    if (n && n->kind == YD_SCALAR && !yd_is_null(n) && strlen(n->text) == n->len)
        for (int i = 0; names[i]; i++)
            if (!strcmp(n->text, names[i])) {
                *out = i;
                return 0;
            }
    char list[400], got[300];
    size_t o = 0;
    list[0] = '\0';
    for (int i = 0; names[i] && o < sizeof list - 1; i++)
        o += (size_t)snprintf(list + o, sizeof list - o, "%s%s", i ? ", " : "", names[i]);
    return yd_fail(e, n, path, "expected one of %s, got %s", list, show_node(got, sizeof got, n));
}

int yd_expect(yd_err_t *e, const yd_node_t *n, const char *path, yd_kind_t kind)
{
    if (n && n->kind == kind && !(kind == YD_SCALAR && yd_is_null(n)))
        return 0;
    char got[300];
    static const char *const what[] = {"a value", "a mapping", "a list"};
    return yd_fail(e, n, path, "expected %s, got %s", what[kind], show_node(got, sizeof got, n));
}

/* ---------------------------------------------------------------------------------- */
/* keyed getters                                                                       */

static const yd_node_t *lookup(yd_err_t *e, const yd_node_t *map, const char *ppath,
                               const char *key, int req, int *rc)
{
    const yd_node_t *n = yd_map_get(map, key);
    *rc = 0;
    if (!n && req)
        *rc = yd_fail(e, map, ppath, "missing required key \"%s\"", key);
    return n;
}

#define GET_BODY(call)                                                                     \
    int rc;                                                                                \
    const yd_node_t *n = lookup(e, map, ppath, key, req, &rc);                              \
    if (!n)                                                                                \
        return rc;                                                                         \
    char path[YD_PATH_MAX];                                                                \
    yd_path(path, ppath, key);                                                             \
    return (call) ? -1 : 1;

int yd_get_long(yd_err_t *e, const yd_node_t *map, const char *ppath, const char *key,
                int req, long lo, long hi, long *out)
{
    GET_BODY(yd_as_long(e, n, path, lo, hi, out))
}

int yd_get_int(yd_err_t *e, const yd_node_t *map, const char *ppath, const char *key,
               int req, int lo, int hi, int *out)
{
    GET_BODY(yd_as_int(e, n, path, lo, hi, out))
}

int yd_get_double(yd_err_t *e, const yd_node_t *map, const char *ppath, const char *key,
                  int req, double lo, double hi, int flags, double *out)
{
    GET_BODY(yd_as_double(e, n, path, lo, hi, flags, out))
}

int yd_get_bool(yd_err_t *e, const yd_node_t *map, const char *ppath, const char *key,
                int req, int *out)
{
    GET_BODY(yd_as_bool(e, n, path, out))
}

int yd_get_str(yd_err_t *e, const yd_node_t *map, const char *ppath, const char *key,
               int req, char *buf, size_t size)
{
    GET_BODY(yd_as_str(e, n, path, buf, size))
}

int yd_get_enum(yd_err_t *e, const yd_node_t *map, const char *ppath, const char *key,
                int req, const char *const *names, int *out)
{
    GET_BODY(yd_as_enum(e, n, path, names, out))
}

int yd_get_node(yd_err_t *e, const yd_node_t *map, const char *ppath, const char *key,
                int req, int kind, yd_node_t **out)
{
    int rc;
    const yd_node_t *n = lookup(e, map, ppath, key, req, &rc);
    if (!n)
        return rc;
    char path[YD_PATH_MAX];
    yd_path(path, ppath, key);
    if (kind != YD_ANY && yd_expect(e, n, path, (yd_kind_t)kind))
        return -1;
    *out = (yd_node_t *)n;
    return 1;
}

int yd_strict_map(yd_err_t *e, const yd_node_t *n, const char *path,
                  const char *const *allowed)
{
    if (yd_expect(e, n, path, YD_MAP))
        return -1;
    for (int i = 0; i < n->n; i++) {
        const yd_node_t *k = n->keys[i];
        int ok = 0;
        for (int j = 0; allowed[j] && !ok; j++)
            ok = key_eq(k, allowed[j], strlen(allowed[j]));
        if (ok)
            continue;
        char list[512], kt[96], kp[YD_PATH_MAX];
        size_t o = 0;
        list[0] = '\0';
        for (int j = 0; allowed[j] && o < sizeof list - 1; j++)
            o += (size_t)snprintf(list + o, sizeof list - o, "%s%s", j ? ", " : "", allowed[j]);
        show_text(kt, sizeof kt, k->text, k->len);
        return yd_fail(e, k, yd_path(kp, path, kt), "unknown key \"%s\" (allowed: %s)", kt, list);
    }
    return 0;
}
