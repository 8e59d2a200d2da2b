/* check_sweep: value lists and ranges, the point product, byte-identical output for
 * every -j, per-point runs merged back into the sweep's CSV, the objective, and the
 * trace's JSON string escaping.  Run from the repository root. */
#include <check.h>
#include "check_run.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sweep.h"
#include "perfetto.h"

#define F_NOMTP "scenarios/v100-fp16-nomtp-b16k-baseline.yaml"
#define F_MTP "scenarios/v100-fp16-mtp4-b16k-pdr.yaml"
#define PACE "env.VLLM_1CAT_PREFILL_PACE_STEPS"

/* ---- value lists: input -> values joined by '|', or NULL = error ---------------- */
static const struct {
    const char *in, *want;
} lists[] = {
    { "4", "4" },
    { "0,1,2", "0|1|2" },
    { "1..5", "1|2|3|4|5" },
    { "1..16:4", "1|5|9|13" },
    { "1..16:5", "1|6|11|16" },
    { "0..16:8", "0|8|16" },
    { "5..1", "5|4|3|2|1" },
    { "10..0:4", "10|6|2" },
    { "-2..2:2", "-2|0|2" },
    { "3..3", "3" },
    { "0,2..4,8", "0|2|3|4|8" },
    { "fp16,fp8_e5m2", "fp16|fp8_e5m2" },
    { "../a.yaml", "../a.yaml" },          /* ".." without integer ends is a literal */
    { "a..b", "a..b" },
    { "1.5..3", "1.5|2.5" },                  /* decimal ranges: the most decimals of the three */
    { "0.5..2:0.5", "0.5|1.0|1.5|2.0" },
    { "2..0.5:0.5", "2.0|1.5|1.0|0.5" },
    { "0..1:0.25", "0.00|0.25|0.50|0.75|1.00" },
    { "0.1..0.3:0.1", "0.1|0.2|0.3" },
    { "-0.5..0.5:0.5", "-0.5|0.0|0.5" },
    { "0.5..0.9:0.3", "0.5|0.8" },
    { "0,0.5..1:0.5,4", "0|0.5|1.0|4" },
    { "0.5..2:0", NULL },
    { "0.5..2:0.00", NULL },
    { "0.5..2:-0.5", NULL },
    { "0.5..2:x", NULL },
    { "0..1:0.0000000001", NULL },
    { "0..100000:0.5", NULL },
    { "1...5..2", "1...5..2" },
    { "0..9223372036854775807:0.5", NULL },
    { "1.5.5..2", "1.5.5..2" },
    { "0.5,1.25", "0.5|1.25" },
    { "", NULL },
    { "1,,2", NULL },
    { "1,", NULL },
    { ",1", NULL },
    { "1..4:0", NULL },
    { "1..4:-1", NULL },
    { "1..4:x", NULL },
    { "0..100000000", NULL },
    /* ends near the limits of a long: no overflow, the last value is exact */
    { "9223372036854775806..9223372036854775807", "9223372036854775806|9223372036854775807" },
    { "9223372036854775807..9223372036854775805", "9223372036854775807|9223372036854775806|9223372036854775805" },
    { "-9223372036854775807..-9223372036854775808", "-9223372036854775807|-9223372036854775808" },
    { "-9223372036854775808..9223372036854775807:4611686018427387904",
      "-9223372036854775808|-4611686018427387904|0|4611686018427387904" },
    { "9223372036854775807..-9223372036854775808:9223372036854775807", "9223372036854775807|0|-9223372036854775807" },
    { "-9223372036854775808..9223372036854775807", NULL },
    { "0..9223372036854775807:2", NULL },
    { "0..9223372036854775808", "0..9223372036854775808" },   /* past a long: not a range */
    { " 1..3", " 1..3" },                                     /* blanks or '+': not integers */
    { "+1..3", "+1..3" },
    { "1..3: 1", NULL },
};

START_TEST(value_lists)
{
    char **v = NULL;
    int n = 0;
    char err[SWEEP_ERR_MAX] = "";
    int rc = sweep_values(lists[_i].in, &v, &n, err, sizeof err);
    if (!lists[_i].want) {
        ck_assert_msg(rc < 0, "\"%s\" should be rejected", lists[_i].in);
        ck_assert_msg(err[0], "\"%s\": no message", lists[_i].in);
        return;
    }
    ck_assert_msg(rc == 0, "\"%s\": %s", lists[_i].in, err);
    char got[512] = "";
    for (int i = 0; i < n; i++) {
        if (i) strcat(got, "|");
        strcat(got, v[i]);
    }
    ck_assert_str_eq(got, lists[_i].want);
    sweep_free_values(v, n);
}
END_TEST

START_TEST(axes_and_points)
{
    sweep_t sw = { 0 };
    char err[SWEEP_ERR_MAX];
    ck_assert_int_eq(sweep_npoints(&sw), 1);
    ck_assert_int_eq(sweep_add(&sw, "a.b=1..3", err, sizeof err), 0);
    ck_assert_int_eq(sweep_add(&sw, "c=x,y", err, sizeof err), 0);
    ck_assert_int_lt(sweep_add(&sw, "a.b=4", err, sizeof err), 0);      /* swept twice */
    ck_assert_ptr_nonnull(strstr(err, "already swept"));
    ck_assert_int_lt(sweep_add(&sw, "novalue", err, sizeof err), 0);
    ck_assert_int_lt(sweep_add(&sw, "=1,2", err, sizeof err), 0);
    ck_assert_int_lt(sweep_add(&sw, "k=1..2:0", err, sizeof err), 0);
    /* a value given twice would run one point twice: refused, also 4 and 4.0, 1e3 and 1000 */
    ck_assert_int_lt(sweep_add(&sw, "k=1,2,1", err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(err, "k: 1 is given twice"));
    ck_assert_int_lt(sweep_add(&sw, "k=1..5,3", err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(err, "k: 3 is given twice"));
    ck_assert_int_lt(sweep_add(&sw, "k=4,1e3,4.0", err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(err, "k: 4 and 4.0 are the same value"));
    ck_assert_int_lt(sweep_add(&sw, "k=x,1000,y,1e3", err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(err, "k: 1000 and 1e3 are the same value"));
    ck_assert_int_lt(sweep_add(&sw, "k=fp8,auto,fp8", err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(err, "k: fp8 is given twice"));
    ck_assert_int_eq(sweep_add(&sw, "k=nan,inf,-0.5..0.5:0.5", err, sizeof err), 0);   /* distinct (text, -0.5, 0.0, 0.5) */
    sweep_free(&sw);
    /* integers past 2^53 are distinct where their doubles are not (a seed), and still repeats */
    ck_assert_int_eq(sweep_add(&sw, "seed=9007199254740992..9007199254740994", err, sizeof err), 0);
    ck_assert_int_lt(sweep_add(&sw, "k=9007199254740993,9007199254740993", err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(err, "k: 9007199254740993 is given twice"));
    sweep_free(&sw);
    ck_assert_int_eq(sweep_add(&sw, "a.b=1..3", err, sizeof err), 0);
    ck_assert_int_eq(sweep_add(&sw, "c=x,y", err, sizeof err), 0);
    ck_assert_int_eq(sw.naxes, 2);
    ck_assert_int_eq(sweep_npoints(&sw), 6);
    /* the first axis is the outer loop */
    static const int want[6][2] = { { 0, 0 }, { 0, 1 }, { 1, 0 }, { 1, 1 }, { 2, 0 }, { 2, 1 } };
    for (long p = 0; p < 6; p++) {
        int sel[2];
        sweep_point(&sw, p, sel);
        ck_assert_int_eq(sel[0], want[p][0]);
        ck_assert_int_eq(sel[1], want[p][1]);
    }
    sweep_free(&sw);
    ck_assert_int_eq(sw.naxes, 0);
}
END_TEST

/* ---- running: everything a run writes, as strings ------------------------------- */
typedef struct outs {
    char *table, *csv, *steps, *err, *best;
    size_t nt, nc, ns, ne, nb;
    int rc;
} outs_t;

static void run_sweep(outs_t *o, const char *const *files, int nf, const sweep_t *sw, int jobs, long base,
                      const char *objective, const char *const *cons, int ncons)
{
    memset(o, 0, sizeof *o);
    FILE *t = open_memstream(&o->table, &o->nt), *c = open_memstream(&o->csv, &o->nc);
    FILE *s = open_memstream(&o->steps, &o->ns), *e = open_memstream(&o->err, &o->ne);
    FILE *b = open_memstream(&o->best, &o->nb);
    ck_assert(t && c && s && e && b);
    static const char *const sets[] = { "stop.max_time_s=3600" };
    sweep_cfg_t cfg = { .files = files, .nfiles = nf, .sets = sets, .nsets = 1, .sw = sw, .point_base = base,
                        .jobs = jobs, .table = t, .csv = c, .steps = s, .err = e, .best = b,
                        .objective = objective, .constraints = cons, .nconstraints = ncons };
    o->rc = sweep_run(&cfg);
    fclose(t);
    fclose(c);
    fclose(s);
    fclose(e);
    fclose(b);
}

static void outs_free(outs_t *o)
{
    free(o->table);
    free(o->csv);
    free(o->steps);
    free(o->err);
    free(o->best);
}

static void mk_sweep(sweep_t *sw, const char *a, const char *b)
{
    char err[SWEEP_ERR_MAX];
    memset(sw, 0, sizeof *sw);
    ck_assert_msg(sweep_add(sw, a, err, sizeof err) == 0, "%s", err);
    if (b) ck_assert_msg(sweep_add(sw, b, err, sizeof err) == 0, "%s", err);
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

START_TEST(jobs_identical)
{
    static const char *const files[] = { F_NOMTP, F_MTP };
    sweep_t sw;
    /* "x" is not an integer: those points fail (in order whatever -j), and a bad input's one
     * line is the first's alone */
    mk_sweep(&sw, PACE "=0,2,4,x,8", "env.VLLM_FLASH_V100_SMALLQ_DECODE_MAX_Q=8,16");
    outs_t one, many;
    run_sweep(&one, files, 2, &sw, 1, 0, NULL, NULL, 0);
    ck_assert_int_eq(one.rc, 2);
    ck_assert_int_eq(count_lines(one.csv), 1 + 2 * 4 * 2);     /* header + good points */
    ck_assert_int_eq(count_lines(one.err), 1);                 /* the first x point */
    ck_assert_ptr_nonnull(strstr(one.err, "point 6 (" PACE "=x env.VLLM_FLASH_V100_SMALLQ_DECODE_MAX_Q=8): "));
    ck_assert_ptr_nonnull(strstr(one.csv, "point," PACE ",env.VLLM_FLASH_V100_SMALLQ_DECODE_MAX_Q,scenario,file,"));
    ck_assert_ptr_nonnull(strstr(one.csv, "\n19,8,16,"));
    ck_assert_ptr_nonnull(strstr(one.table, "-- point 19: " PACE "=8 env.VLLM_FLASH_V100_SMALLQ_DECODE_MAX_Q=16\n"));
    ck_assert_int_gt((int)one.ns, 1000);
    for (int jobs = 2; jobs <= 16; jobs *= 2) {
        run_sweep(&many, files, 2, &sw, jobs, 0, NULL, NULL, 0);
        ck_assert_int_eq(many.rc, one.rc);
        ck_assert_msg(one.nt == many.nt && !memcmp(one.table, many.table, one.nt), "-j %d: tables differ", jobs);
        ck_assert_msg(one.nc == many.nc && !memcmp(one.csv, many.csv, one.nc), "-j %d: CSVs differ", jobs);
        ck_assert_msg(one.ns == many.ns && !memcmp(one.steps, many.steps, one.ns), "-j %d: steps differ", jobs);
        ck_assert_msg(one.ne == many.ne && !memcmp(one.err, many.err, one.ne), "-j %d: errors differ", jobs);
        outs_free(&many);
    }
    outs_free(&one);
    sweep_free(&sw);
}
END_TEST

START_TEST(plain_runs_unchanged)
{
    /* no sweep: the CSV is runner's, one row per file, no point column */
    static const char *const files[] = { F_NOMTP, F_MTP };
    outs_t o;
    run_sweep(&o, files, 2, NULL, 2, 0, NULL, NULL, 0);
    ck_assert_int_eq(o.rc, 0);
    ck_assert_int_eq(strncmp(o.csv, "scenario,file,", 14), 0);
    ck_assert_int_eq(count_lines(o.csv), 3);
    ck_assert_ptr_null(strstr(o.table, "-- point"));
    outs_free(&o);
}
END_TEST

/* Every point run alone (as `pacesim points` prints it: one file, the point's values
 * as one-value sweeps, its index as the base), merged in scrambled order, gives the
 * sweep's CSV byte for byte. */
START_TEST(merge_equals_sweep)
{
    static const char *const files[] = { F_NOMTP, F_MTP };
    static const char *const paces[] = { "0", "3", "6" };
    static const char *const qs[] = { "8", "16" };
    sweep_t sw;
    mk_sweep(&sw, PACE "=0,3,6", "env.VLLM_FLASH_V100_SMALLQ_DECODE_MAX_Q=8,16");
    outs_t all;
    run_sweep(&all, files, 2, &sw, 2, 0, NULL, NULL, 0);
    ck_assert_int_eq(all.rc, 0);
    char dir[] = "/tmp/check_sweep.XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char paths[12][128];
    const char *order[12];
    for (int j = 0; j < 12; j++) {
        int f = j / 6, p = j % 6;
        char a[128], b[128];
        snprintf(a, sizeof a, PACE "=%s", paces[p / 2]);
        snprintf(b, sizeof b, "env.VLLM_FLASH_V100_SMALLQ_DECODE_MAX_Q=%s", qs[p % 2]);
        sweep_t one;
        mk_sweep(&one, a, b);
        outs_t o;
        run_sweep(&o, &files[f], 1, &one, 1, j, NULL, NULL, 0);
        ck_assert_int_eq(o.rc, 0);
        snprintf(paths[j], sizeof paths[j], "%s/point-%04d.csv", dir, j);
        FILE *w = fopen(paths[j], "w");
        ck_assert_ptr_nonnull(w);
        fwrite(o.csv, 1, o.nc, w);
        ck_assert_int_eq(fclose(w), 0);
        outs_free(&o);
        sweep_free(&one);
        order[(j * 5) % 12] = paths[j];            /* scrambled: merge sorts by point */
    }
    char *m = NULL;
    size_t nm = 0;
    FILE *mf = open_memstream(&m, &nm);
    ck_assert_int_eq(sweep_merge(order, 12, mf, stderr), 0);
    fclose(mf);
    ck_assert_msg(nm == all.nc && !memcmp(m, all.csv, nm), "merged CSV differs from the sweep's:\n%s\n--\n%s", m,
                  all.csv);
    free(m);
    /* a file of other columns joins the union: the first file's columns, then the
     * sweep's; its row has an empty cell under each of theirs, theirs under `other` */
    FILE *w = fopen(paths[0], "w");
    fputs("point,other\n0,1\n", w);
    fclose(w);
    mf = open_memstream(&m, &nm);
    ck_assert_int_eq(sweep_merge(order, 12, mf, fopen("/dev/null", "w")), 0);
    fclose(mf);
    const char *sweep_hdr = strchr(all.csv, ',') + 1;          /* the sweep's header after `point,` */
    size_t shl = strcspn(sweep_hdr, "\n");
    ck_assert_int_eq(strncmp(m, "point,other,", 12), 0);
    ck_assert_msg(!strncmp(m + 12, sweep_hdr, shl) && m[12 + shl] == '\n', "union header: %.*s", 200, m);
    int cols = 1;
    for (const char *c = m; *c != '\n'; c++) cols += *c == ',';
    const char *row0 = m + 12 + shl + 1;
    ck_assert_int_eq(strncmp(row0, "0,1,", 4), 0);
    int empty = 0;
    for (const char *c = row0; *c != '\n'; c++) empty += c[0] == ',' && (c[1] == ',' || c[1] == '\n');
    ck_assert_int_eq(empty, cols - 2);                            /* every sweep column empty */
    ck_assert_int_eq(count_lines(m), 13);                        /* the header, 12 rows */
    free(m);
    /* an empty file (a failed point's) is refused, nothing merged: without its row the
     * merged CSV would look like the whole sweep; a missing file likewise */
    w = fopen(paths[0], "w");
    fclose(w);
    char *me;
    size_t nme;
    FILE *ef = open_memstream(&me, &nme);
    mf = open_memstream(&m, &nm);
    ck_assert_int_eq(sweep_merge(order, 12, mf, ef), 2);
    fclose(mf);
    fclose(ef);
    ck_assert_int_eq(nm, 0);
    ck_assert_msg(count_lines(me) == 1 && !strncmp(me, paths[0], strlen(paths[0])) && strstr(me, ":1:1: empty"), "%s",
                  me);
    free(me);
    free(m);
    unlink(paths[0]);
    ef = open_memstream(&me, &nme);
    mf = open_memstream(&m, &nm);
    ck_assert_int_eq(sweep_merge(order, 12, mf, ef), 2);
    fclose(mf);
    fclose(ef);
    ck_assert_int_eq(nm, 0);
    ck_assert_msg(count_lines(me) == 1 && strstr(me, ": cannot open: No such file"), "%s", me);
    free(me);
    free(m);
    for (int j = 0; j < 12; j++) unlink(paths[j]);
    rmdir(dir);
    outs_free(&all);
    sweep_free(&sw);
}
END_TEST

/* ---- the objective -------------------------------------------------------------- */
static const char *const csv_lines[] = {
    "point,k,scenario,file,a,b,a\n",
    "0,0,s,f1,9,10.0,1.0\n",        /* base of f1: b = 10 */
    "1,1,s,f1,9,10.5,2.0\n",
    "2,2,s,f1,9,11.0,3.0\n",        /* b = 1.10 * base exactly: allowed by <= */
    "3,3,s,f1,9,11.5,9.0\n",        /* too slow */
    "4,4,s,f1,9,,9.5\n",            /* b n/a: never wins */
    "5,0,s,f2,9,20.0,5.0\n",        /* base of f2 */
    "6,1,s,f2,9,30.0,6.0\n",
    "7,2,s,f2,9,21.0,5.0\n",        /* ties with the base: the first one stays */
};

static char *best_of(const char *obj, const char *const *cons, int nc)
{
    char err[SWEEP_ERR_MAX];
    sweep_best_t *b = sweep_best_new(obj, cons, nc, err, sizeof err);
    ck_assert_msg(b != NULL, "%s", err);
    ck_assert_msg(sweep_best_header(b, csv_lines[0], err, sizeof err) == 0, "%s", err);
    for (size_t i = 1; i < sizeof csv_lines / sizeof csv_lines[0]; i++) sweep_best_row(b, csv_lines[i]);
    char *s = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&s, &n);
    sweep_best_report(b, f);
    fclose(f);
    sweep_best_free(b);
    return s;
}

START_TEST(objective)
{
    const char *c1[] = { "b<=1.10*base" };
    char *s = best_of("max:a", c1, 1);      /* "a" twice: the last column counts */
    ck_assert_msg(strstr(s, "f1: best point 2 k=2  a=3  b=11 (<= 11)"), "%s", s);
    ck_assert_msg(strstr(s, "f2: best point 5 k=0  a=5  b=20 (<= 22)"), "%s", s);
    free(s);
    const char *c2[] = { "b < base*1.06" };
    s = best_of("max:a", c2, 1);
    ck_assert_msg(strstr(s, "f1: best point 1 k=1  a=2"), "%s", s);
    free(s);
    const char *c3[] = { "b>=base+1", "b<=25" };
    s = best_of("min:a", c3, 2);
    ck_assert_msg(strstr(s, "f1: best point 2 k=2  a=3"), "%s", s);
    ck_assert_msg(strstr(s, "f2: best point 7 k=2  a=5"), "%s", s);
    free(s);
    const char *c4[] = { "b<5" };
    s = best_of("max:a", c4, 1);
    ck_assert_msg(strstr(s, "f1: no point satisfies the constraints"), "%s", s);
    free(s);
    s = best_of("max:a", NULL, 0);
    ck_assert_msg(strstr(s, "f1: best point 4 k=4  a=9.5"), "%s", s);
    free(s);
}
END_TEST

static const char *const bad_obj[][2] = {
    { "maximise:a", NULL }, { "max:", NULL }, { "max:a", "b" }, { "max:a", "<=3" }, { "max:a", "b<=" },
    { "max:a", "b<=x" }, { "max:a", "b<=2*bas" }, { "max:a", "b<=base*" }, { "max:a", "b<=base/2" },
};

START_TEST(objective_bad)
{
    char err[SWEEP_ERR_MAX] = "";
    const char *c = bad_obj[_i][1];
    sweep_best_t *b = sweep_best_new(bad_obj[_i][0], c ? &c : NULL, c ? 1 : 0, err, sizeof err);
    ck_assert_msg(b == NULL, "%s %s: accepted", bad_obj[_i][0], c ? c : "");
    ck_assert(err[0]);
    /* an unknown column is found at the header */
    const char *ok = "zz<=base";
    b = sweep_best_new("max:a", &ok, 1, err, sizeof err);
    ck_assert_ptr_nonnull(b);
    ck_assert_int_lt(sweep_best_header(b, csv_lines[0], err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(err, "zz"));
    sweep_best_free(b);
}
END_TEST

START_TEST(live_objective)
{
    static const char *const files[] = { F_NOMTP };
    sweep_t sw;
    mk_sweep(&sw, PACE "=0,2,4,8,16", NULL);
    const char *c[] = { "b_prefill_s<=1.10*base" };
    outs_t o;
    run_sweep(&o, files, 1, &sw, 2, 0, "max:a_tok_s", c, 1);
    ck_assert_int_eq(o.rc, 0);
    /* pacing trades B's prefill time for A's rate: the winner is the last point within 10% */
    ck_assert_msg(strstr(o.best, F_NOMTP ": best point 2 " PACE "=4  a_tok_s="), "%s", o.best);
    outs_free(&o);
    run_sweep(&o, files, 1, &sw, 2, 0, "max:no_such_column", NULL, 0);
    ck_assert_int_eq(o.rc, 2);
    ck_assert_ptr_nonnull(strstr(o.err, "no_such_column"));
    outs_free(&o);
    sweep_free(&sw);
}
END_TEST

START_TEST(json_strings)
{
    char *s = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&s, &n);
    perfetto_json_str(f, "a\"b\\c\nd\te\x01" "f/\x7f");
    fclose(f);
    ck_assert_str_eq(s, "\"a\\\"b\\\\c\\nd\\te\\u0001f/\\u007f\"");
    free(s);
}
END_TEST

/* ---- robustness: quoting, write errors, limits, malformed CSVs -------------------- */

static char *csv_field_str(const char *in)
{
    char *s = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&s, &n);
    sweep_csv_field(f, in);
    fclose(f);
    return s;
}

START_TEST(csv_quoting)
{
    char *s = csv_field_str("plain.yaml");
    ck_assert_str_eq(s, "plain.yaml");
    free(s);
    s = csv_field_str("a,b \"c\"\nd");
    ck_assert_str_eq(s, "\"a,b \"\"c\"\"\nd\"");
    free(s);
    /* quoted fields with commas must not shift the columns the objective reads */
    char err[SWEEP_ERR_MAX];
    sweep_best_t *b = sweep_best_new("max:a", NULL, 0, err, sizeof err);
    ck_assert_ptr_nonnull(b);
    ck_assert_int_eq(sweep_best_header(b, "point,k,scenario,file,a\n", err, sizeof err), 0);
    ck_assert_int_eq(sweep_best_row(b, "0,0,\"s,1\",\"dir,x/f.yaml\",3\n"), 0);
    ck_assert_int_eq(sweep_best_row(b, "1,\"1,5\",s,\"dir,x/f.yaml\",4\n"), 0);
    ck_assert_int_eq(sweep_best_row(b, "2,2,s,dir,x/f.yaml,99\n"), 6);   /* unquoted: 6 fields, refused */
    char *r = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&r, &n);
    sweep_best_report(b, f);
    fclose(f);
    ck_assert_msg(strstr(r, "  dir,x/f.yaml: best point 1 k=1,5  a=4\n"), "%s", r);
    free(r);
    sweep_best_free(b);
}
END_TEST

static char *write_tmp(const char *dir, const char *name, const char *text, size_t len)
{
    static char paths[8][256];
    static int k;
    char *p = paths[k++ % 8];
    snprintf(p, 256, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(text, 1, len, f), len);
    ck_assert_int_eq(fclose(f), 0);
    return p;
}

static int merge_files(const char *const *paths, int n, char **out, char **err)
{
    size_t no = 0, ne = 0;
    FILE *o = open_memstream(out, &no), *e = open_memstream(err, &ne);
    int rc = sweep_merge(paths, n, o, e);
    fclose(o);
    fclose(e);
    return rc;
}

static int merge_one(const char *path, char **out, char **err) { return merge_files(&path, 1, out, err); }

START_TEST(merge_malformed)
{
    char dir[] = "/tmp/check_sweep.XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char *o, *e;
    /* quoted fields holding a line break are one record; sorted by point */
    const char q[] = "point,k,scenario\n1,1,\"two\nlines\"\n0,0,\"a,b\"\n";
    ck_assert_int_eq(merge_one(write_tmp(dir, "q.csv", q, sizeof q - 1), &o, &e), 0);
    ck_assert_str_eq(o, "point,k,scenario\n0,0,\"a,b\"\n1,1,\"two\nlines\"\n");
    free(o);
    free(e);
    /* a header alone merges to the header */
    const char ho[] = "point,k\n";
    ck_assert_int_eq(merge_one(write_tmp(dir, "h.csv", ho, sizeof ho - 1), &o, &e), 0);
    ck_assert_str_eq(o, ho);
    free(o);
    free(e);
    /* a last record without its newline, at and around the reader's buffer sizes (4096, then
     * doubled): the newline added and the string ended inside the buffer (check-asan sees it) */
    static const int lens[] = { 4093, 4094, 4095, 4096, 8190, 8191 };
    for (int i = 0; i < 6; i++) {
        char h[8192];
        int n = lens[i];
        memcpy(h, "point", 5);
        memset(h + 5, 'x', (size_t)n - 5);
        h[n] = 0;
        ck_assert_int_eq(merge_one(write_tmp(dir, "long.csv", h, (size_t)n), &o, &e), 0);
        ck_assert_int_eq((int)strlen(o), n + 1);
        ck_assert_int_eq(strncmp(o, h, (size_t)n), 0);
        ck_assert_int_eq(o[n], '\n');
        free(o);
        free(e);
    }
    /* two files of different window columns: one header, the union in first-seen
     * order; each row rectangular, empty where its file lacks a column; quoting kept */
    const char wa[] = "point,scenario,ttft_p50,tpot_p50\n1,\"a,b\",0.5,0.02\n";
    const char wb[] = "point,scenario,e2e_p99,ttft_p50\r\n0,\"say \"\"hi\"\"\",9,0.4\r\n";
    {
        const char *two[] = { write_tmp(dir, "wa.csv", wa, sizeof wa - 1), write_tmp(dir, "wb.csv", wb, sizeof wb - 1) };
        ck_assert_int_eq(merge_files(two, 2, &o, &e), 0);
        ck_assert_str_eq(o, "point,scenario,ttft_p50,tpot_p50,e2e_p99\n"
                            "0,\"say \"\"hi\"\"\",0.4,,9\r\n"
                            "1,\"a,b\",0.5,0.02,\n");
        ck_assert_str_eq(e, "");
        free(o);
        free(e);
    }
    /* a repeated name (a window named like a fixed column) is matched by occurrence:
     * the second `mixed_steps` of one file is the second of another */
    const char da[] = "point,mixed_steps,w,mixed_steps\n0,1,2,3\n";
    const char db[] = "point,mixed_steps,v\n1,4,5\n";
    {
        const char *two[] = { write_tmp(dir, "da.csv", da, sizeof da - 1), write_tmp(dir, "db.csv", db, sizeof db - 1) };
        ck_assert_int_eq(merge_files(two, 2, &o, &e), 0);
        ck_assert_str_eq(o, "point,mixed_steps,w,mixed_steps,v\n0,1,2,3,\n1,4,,,5\n");
        free(o);
        free(e);
    }
    /* a file without the point column the union starts with is refused */
    const char np[] = "k,mixed_steps\n7,8\n";
    {
        const char *two[] = { write_tmp(dir, "da.csv", da, sizeof da - 1), write_tmp(dir, "np.csv", np, sizeof np - 1) };
        size_t no = 0, ne = 0;
        FILE *fo = open_memstream(&o, &no), *fe = open_memstream(&e, &ne);
        ck_assert_int_eq(sweep_merge(two, 2, fo, fe), 2);
        fclose(fo);
        fclose(fe);
        ck_assert_msg(strstr(e, "np.csv:1: no point column") && !strchr(e, '\n')[1], "%s", e);
        ck_assert_str_eq(o, "");
        free(o);
        free(e);
    }
    /* binary junk */
    const char junk[] = "point,k\n0,\x01\x02\x00zz\n";
    ck_assert_int_eq(merge_one(write_tmp(dir, "j.csv", junk, sizeof junk - 1), &o, &e), 2);
    ck_assert_msg(strstr(e, ":2: binary data"), "%s", e);
    free(o);
    free(e);
    /* a row of another shape, a point that is not an integer, an open quote */
    const char shape[] = "point,k\n0,1,2\n";
    ck_assert_int_eq(merge_one(write_tmp(dir, "s.csv", shape, sizeof shape - 1), &o, &e), 2);
    ck_assert_msg(strstr(e, ":2: 3 fields, the header has 2"), "%s", e);
    free(o);
    free(e);
    const char pt[] = "point,k\n0x10,1\n";
    ck_assert_int_eq(merge_one(write_tmp(dir, "p.csv", pt, sizeof pt - 1), &o, &e), 2);
    ck_assert_msg(strstr(e, ":2: the point column"), "%s", e);
    free(o);
    free(e);
    const char oq[] = "point,k\n0,\"open\n";
    ck_assert_int_eq(merge_one(write_tmp(dir, "o.csv", oq, sizeof oq - 1), &o, &e), 2);
    ck_assert_msg(strstr(e, "quoted field is not closed"), "%s", e);
    free(o);
    free(e);
    /* an endless line stops at SWEEP_RECORD_MAX */
    size_t big = (size_t)SWEEP_RECORD_MAX + 100;
    char *longl = malloc(big);
    ck_assert_ptr_nonnull(longl);
    memcpy(longl, "point,k\n0,", 10);
    memset(longl + 10, '7', big - 10);
    ck_assert_int_eq(merge_one(write_tmp(dir, "l.csv", longl, big), &o, &e), 2);
    ck_assert_msg(strstr(e, ":2: record longer than"), "%s", e);
    free(o);
    free(e);
    free(longl);
    /* a FIFO (no writer) is refused at once, not waited on */
    char fifo[300];
    snprintf(fifo, sizeof fifo, "%s/fifo.csv", dir);
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    ck_assert_int_eq(merge_one(fifo, &o, &e), 2);
    ck_assert_msg(strstr(e, "not a regular file"), "%s", e);
    free(o);
    free(e);
    const char *names[] = { "q.csv", "h.csv", "j.csv", "s.csv", "p.csv", "o.csv", "l.csv", "fifo.csv",
                            "wa.csv", "wb.csv", "da.csv", "db.csv", "np.csv" };
    for (int i = 0; i < 13; i++) {
        char p[300];
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        unlink(p);
    }
    rmdir(dir);
}
END_TEST

static int best_one(const char *path, const char *obj, char **out, char **err)
{
    size_t no = 0, ne = 0;
    FILE *o = open_memstream(out, &no), *e = open_memstream(err, &ne);
    const char *paths[] = { path };
    int rc = sweep_best_files(paths, 1, obj, NULL, 0, o, e);
    fclose(o);
    fclose(e);
    return rc;
}

START_TEST(best_malformed)
{
    char dir[] = "/tmp/check_sweep.XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char *o, *e;
    ck_assert_int_eq(best_one(write_tmp(dir, "e.csv", "", 0), "max:a", &o, &e), 2);
    ck_assert_msg(strstr(e, ": empty"), "%s", e);
    free(o);
    free(e);
    ck_assert_int_eq(best_one(write_tmp(dir, "h.csv", "file,a\n", 7), "max:a", &o, &e), 2);
    ck_assert_msg(strstr(e, "no rows"), "%s", e);
    free(o);
    free(e);
    /* hex is not a number here (as in YAML): refused at its line, not a row passed over */
    const char hex[] = "file,a\nf,3\nf,0x100\n";
    ck_assert_int_eq(best_one(write_tmp(dir, "x.csv", hex, sizeof hex - 1), "max:a", &o, &e), 2);
    ck_assert_msg(strstr(e, "x.csv:3: --objective: column \"a\" holds text (\"0x100\")"), "%s", e);
    free(o);
    free(e);
    const char shape[] = "file,a\nf,1,2\n";
    ck_assert_int_eq(best_one(write_tmp(dir, "s.csv", shape, sizeof shape - 1), "max:a", &o, &e), 2);
    ck_assert_msg(strstr(e, "s.csv:2: 3 fields, the header has 2"), "%s", e);
    free(o);
    free(e);
    const char *names[] = { "e.csv", "h.csv", "x.csv", "s.csv" };
    for (int i = 0; i < 4; i++) {
        char p[300];
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        unlink(p);
    }
    rmdir(dir);
}
END_TEST

START_TEST(write_errors)
{
    FILE *full = fopen("/dev/full", "w");
    ck_assert_ptr_nonnull(full);
    char *es = NULL;
    size_t ne = 0;
    FILE *e = open_memstream(&es, &ne);
    static const char *const files[] = { F_NOMTP };
    /* the CSV of a run */
    sweep_cfg_t cfg = { .files = files, .nfiles = 1, .jobs = 1, .csv = full, .err = e };
    ck_assert_int_eq(sweep_run(&cfg), 1);
    clearerr(full);
    /* the steps CSV, written directly and copied from per-job buffers */
    sweep_cfg_t cs = { .files = files, .nfiles = 1, .jobs = 1, .steps = full, .err = e };
    ck_assert_int_eq(sweep_run(&cs), 1);
    clearerr(full);
    sweep_t sw;
    mk_sweep(&sw, PACE "=0,4", NULL);
    sweep_cfg_t cp = { .files = files, .nfiles = 1, .sw = &sw, .jobs = 2, .steps = full, .err = e };
    ck_assert_int_eq(sweep_run(&cp), 1);
    clearerr(full);
    /* points */
    ck_assert_int_eq(sweep_print_points(full, e, "pacesim", files, 1, NULL, 0, &sw, "pts"), 1);
    clearerr(full);
    /* merge and best */
    char dir[] = "/tmp/check_sweep.XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    const char csv[] = "point,a\n0,1\n";
    char *p = write_tmp(dir, "w.csv", csv, sizeof csv - 1);
    const char *paths[] = { p };
    ck_assert_int_eq(sweep_merge(paths, 1, full, e), 1);
    clearerr(full);
    ck_assert_int_eq(sweep_best_files(paths, 1, "max:a", NULL, 0, full, e), 1);
    fclose(e);
    ck_assert_msg(strstr(es, "No space left on device"), "%s", es);
    free(es);
    fclose(full);
    unlink(p);
    rmdir(dir);
    sweep_free(&sw);
}
END_TEST

START_TEST(run_limits)
{
    static const char *const files[] = { F_NOMTP };
    char *es = NULL;
    size_t ne = 0;
    FILE *e = open_memstream(&es, &ne);
    sweep_t sw;
    mk_sweep(&sw, PACE "=0,4", NULL);
    /* the second run's index would wrap past LONG_MAX */
    sweep_cfg_t cfg = { .files = files, .nfiles = 1, .sw = &sw, .point_base = 9223372036854775807L, .jobs = 1,
                        .err = e };
    ck_assert_int_eq(sweep_run(&cfg), 2);
    sweep_free(&sw);
    /* 10^15 points: refused before printing a single command */
    mk_sweep(&sw, "a=0..99999", "b=0..99999");
    char err[SWEEP_ERR_MAX];
    ck_assert_int_eq(sweep_add(&sw, "c=0..99999", err, sizeof err), 0);
    char *os = NULL;
    size_t no = 0;
    FILE *o = open_memstream(&os, &no);
    ck_assert_int_eq(sweep_print_points(o, e, "pacesim", files, 1, NULL, 0, &sw, "pts"), 2);
    fclose(o);
    ck_assert_uint_eq(no, 0);
    free(os);
    fclose(e);
    ck_assert_msg(strstr(es, "--point-index 9223372036854775807") && strstr(es, "too many runs"), "%s", es);
    free(es);
    sweep_free(&sw);
}
END_TEST

int main(void)
{
    const check_test_t values[] = {CHECK_LOOP(value_lists, CHECK_N(lists)), CHECK_TEST(axes_and_points)};
    const check_test_t runs[] = {
        CHECK_TEST(jobs_identical), CHECK_TEST(plain_runs_unchanged), CHECK_TEST(merge_equals_sweep),
        CHECK_TEST(live_objective)};
    const check_test_t objective_tests[] = {
        CHECK_TEST(objective), CHECK_LOOP(objective_bad, CHECK_N(bad_obj)), CHECK_TEST(json_strings)};
    Suite *s = suite_create("sweep");
    check_case(s, "values", values, CHECK_N(values), 0, NULL);
    check_case(s, "runs", runs, CHECK_N(runs), 60, NULL);
    check_case(s, "objective", objective_tests, CHECK_N(objective_tests), 0, NULL);
    const check_test_t robustness[] = {
        CHECK_TEST(csv_quoting), CHECK_TEST(merge_malformed), CHECK_TEST(best_malformed), CHECK_TEST(write_errors),
        CHECK_TEST(run_limits)};
    check_case(s, "robustness", robustness, CHECK_N(robustness), 60, NULL);
    return check_run(s);
}
