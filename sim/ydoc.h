/* ydoc: a YAML document as a tree of positioned nodes, and strict typed getters.
 *
 * yd_load() reads one file (at most YD_FILE_MAX bytes) through libyaml's event API into
 * map / seq / scalar nodes, each carrying its file, line and column (1-based).  Scalars
 * keep their text and whether they were quoted.  Rejected at load: syntax errors,
 * duplicate mapping keys, non-scalar keys, undefined aliases, alias loops, excessive alias
 * expansion ("billion laughs"), more than YD_NODES_MAX nodes, an empty stream, more than
 * one document, and anything but a regular file (see yd_open_input).  Aliases are
 * resolved by reference (the tree is then a DAG; every node belongs to the document's
 * arena and is freed with it by yd_free()).
 *
 * Getters turn nodes into C values and report the first error only, one line:
 *     file:line:col: key.path: message
 * (for a value that came from an override: "--set key.path: message").  Key paths are
 * dotted, list elements by index in brackets: workload.requests[1].prompt_tokens.
 * Getter return values: 1 found and valid, 0 absent (optional; *out untouched), -1 error. */
#ifndef PACESIM_YDOC_H
#define PACESIM_YDOC_H

#include <stddef.h>
#include <stdio.h>

#define YD_FILE_MAX (16L * 1024 * 1024)  /* refuse bigger input files (about YD_NODES_MAX nodes of YAML) */
#define YD_NODES_MAX 1000000L            /* refuse documents of more nodes (memory bound) */
#define YD_EXPAND_MAX 1000000L           /* nodes reachable through aliases */
#define YD_DEPTH_MAX 512                 /* nesting depth */
#define YD_PATH_MAX 256

typedef enum { YD_SCALAR = 0, YD_MAP, YD_SEQ } yd_kind_t;

typedef struct yd_node yd_node_t;
struct yd_node {
    yd_kind_t kind;
    int line, col;                 /* 1-based; of the node's first character */
    const char *file;              /* owned by the document */
    int origin;                    /* 0: file; 1: value root of a --set; 2: inside a --set */
    /* scalar */
    char *text;                    /* NUL-terminated (may hold earlier NULs: len says) */
    size_t len;
    int quoted;                    /* 1: quoted/block style or !!str tag; never null/number/bool */
    /* map and seq */
    int n, cap;
    yd_node_t **keys;              /* map only: scalar key nodes */
    yd_node_t **vals;              /* map values / seq items */
    long weight;                   /* nodes reachable (aliases expanded), saturating */
    int done;                      /* container complete (alias loop detection) */
};

typedef struct yd_doc yd_doc_t;

/* The first error of a load/validation pass.  Initialise with yd_err_init(). */
typedef struct yd_err {
    char *buf;
    size_t size;
    int set;
} yd_err_t;

void yd_err_init(yd_err_t *e, char *buf, size_t size);

/* Parse a file.  Returns a document the caller frees with yd_free(), or NULL with the
 * error in e ("path: cannot open: ..." / "path:line:col: syntax error: ..."). */
yd_doc_t *yd_load(const char *path, yd_err_t *e);
/* Parse text held in memory; name is used in positions. */
yd_doc_t *yd_load_string(const char *name, const char *text, size_t len, yd_err_t *e);
void yd_free(yd_doc_t *d);

/* Open an input file for reading: never blocks in open() (a FIFO without a writer) and
 * takes regular files only.  NULL with *why set ("No such file or directory", "Is a
 * directory", "not a regular file (a FIFO, device or socket)"). */
FILE *yd_open_input(const char *path, const char **why);
/* A UTF-8 byte-order mark at the start of s (a spreadsheet's "CSV UTF-8" header line): dropped,
 * in place, so that the first column keeps its name.  Returns s. */
char *yd_drop_bom(char *s);
/* s with every control character (a newline, a tab...) replaced by '?', in place: a message that
 * quotes user text (a path, a name) stays one line.  Returns s. */
char *yd_one_line(char *s);
yd_node_t *yd_root(const yd_doc_t *d);
const char *yd_file(const yd_doc_t *d);

/* Apply one "key.path=value" override (see ydoc.c for the path syntax).  0 or -1 with
 * "--set key.path: message" in e. */
int yd_apply_set(yd_doc_t *d, const char *assignment, yd_err_t *e);

/* -- inspection ----------------------------------------------------------------- */
int yd_is_null(const yd_node_t *n);              /* plain ~, null, Null, NULL or empty */
yd_node_t *yd_map_get(const yd_node_t *map, const char *key); /* NULL if absent or not a map */
int yd_len(const yd_node_t *n);                  /* items of a seq/map, 0 for scalars */
const char *yd_kind_name(const yd_node_t *n);    /* "a mapping", "a list", "a scalar" ... */

/* -- errors ----------------------------------------------------------------------- */
/* Record an error at node n (if none yet).  path may be "" (root).  Returns -1. */
int yd_fail(yd_err_t *e, const yd_node_t *n, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* "parent.key" (or "key" at the root) and "parent[i]" into buf (YD_PATH_MAX). */
const char *yd_path(char *buf, const char *parent, const char *key);
const char *yd_path_idx(char *buf, const char *parent, int i);

/* -- conversions of one node (path names it in messages) ---------------------------- */
#define YD_LO_OPEN 1                 /* exclude lo */
#define YD_HI_OPEN 2                 /* exclude hi */
int yd_as_long(yd_err_t *e, const yd_node_t *n, const char *path, long lo, long hi, long *out);
int yd_as_int(yd_err_t *e, const yd_node_t *n, const char *path, int lo, int hi, int *out);
int yd_as_double(yd_err_t *e, const yd_node_t *n, const char *path, double lo, double hi,
                 int flags, double *out);
int yd_as_bool(yd_err_t *e, const yd_node_t *n, const char *path, int *out);
int yd_as_str(yd_err_t *e, const yd_node_t *n, const char *path, char *buf, size_t size);
/* names: NULL-terminated; *out = index of the match. */
int yd_as_enum(yd_err_t *e, const yd_node_t *n, const char *path, const char *const *names,
               int *out);
int yd_expect(yd_err_t *e, const yd_node_t *n, const char *path, yd_kind_t kind);

/* -- keyed getters on a mapping: 1 found, 0 absent and optional, -1 error ----------- */
#define YD_OPT 0
#define YD_REQ 1
int yd_get_long(yd_err_t *e, const yd_node_t *map, const char *ppath, const char *key,
                int req, long lo, long hi, long *out);
int yd_get_int(yd_err_t *e, const yd_node_t *map, const char *ppath, const char *key,
               int req, int lo, int hi, int *out);
int yd_get_double(yd_err_t *e, const yd_node_t *map, const char *ppath, const char *key,
                  int req, double lo, double hi, int flags, double *out);
int yd_get_bool(yd_err_t *e, const yd_node_t *map, const char *ppath, const char *key,
                int req, int *out);
int yd_get_str(yd_err_t *e, const yd_node_t *map, const char *ppath, const char *key,
               int req, char *buf, size_t size);
int yd_get_enum(yd_err_t *e, const yd_node_t *map, const char *ppath, const char *key,
                int req, const char *const *names, int *out);
/* The node under key (checked to be of kind) in *out; 1/0/-1 as above. */
int yd_get_node(yd_err_t *e, const yd_node_t *map, const char *ppath, const char *key,
                int req, int kind, yd_node_t **out);
#define YD_ANY (-1)

/* Check that n is a mapping whose keys all belong to allowed (NULL-terminated):
 * other keys give 'path.foo: unknown key "foo" (allowed: a, b, c)'.  0 or -1. */
int yd_strict_map(yd_err_t *e, const yd_node_t *n, const char *path,
                  const char *const *allowed);

#endif
