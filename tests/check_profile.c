/* check_profile: profile save/load round trip, strict loading, law lookup. */
#include <check.h>
#include "check_run.h"
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "profile.h"
#include "scenario.h"

static char tmpdir[64];

static void mk_tmpdir(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/check_profile.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void rm_tmpdir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    ck_assert_int_eq(system(cmd), 0);
}

static const char *tmp_path(const char *name)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    return path;
}

static const char *write_tmp(const char *name, const char *text)
{
    const char *path = tmp_path(name);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
    return path;
}

/* Bit-exact double comparison (so -0.0 vs 0.0 and the last ulp count). */
static int same_bits(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

static void fill_profile(profile_t *p)
{
    memset(p, 0, sizeof *p);
    snprintf(p->gpu, sizeof p->gpu, "NVIDIA H200 \"SXM\" \\ 141GB\tx");
    p->sms = 132;
    p->mem_gib = 139.80000000000001;
    p->mem_bw_gbs = 4240.123456789012;
    p->peak_fp16_tflops = 989.4;
    p->tp = 2;
    snprintf(p->model, sizeof p->model, "qwen3.8-27b");
    snprintf(p->toolkit, sizeof p->toolkit, "13.0");
    snprintf(p->driver, sizeof p->driver, "580.159");
    snprintf(p->date, sizeof p->date, "2026-11-29");
    snprintf(p->revision, sizeof p->revision, "abc1234");
    snprintf(p->method, sizeof p->method, "measured by bin/calib: ünïcode, 'quotes', #hash\nline2");
    p->calib_seconds = 212.5;
    p->sm_clock_mhz = 1980;
    p->has_envelope = 1;
    p->env_tp = 2;
    p->env_q_heads = 12;
    p->env_kv_heads = 2;
    p->env_head_dim = 256;
    p->expand_cta_tokens = 98;
    p->expand_ctas_per_sm = 4;
    p->split_max = 4;
    p->split_min_tiles = 8;
    p->split_cost_tiles = 0;
    p->split_ctas_per_sm = 2;

    prof_law_t l;
    memset(&l, 0, sizeof l);
    snprintf(l.name, sizeof l.name, "attn.prefill_bm32.fp16");
    l.ncoef = 4;
    l.coef[0] = 1.0 / 3.0;
    l.coef[1] = 2e-8;
    l.coef[2] = -0.0;
    l.coef[3] = DBL_MIN / 4;          /* subnormal */
    snprintf(l.provenance, sizeof l.provenance, "measured by calib on NVIDIA H200, 2026-11-29");
    l.fit_median_rel = 0.012;
    l.fit_max_rel = 0.041;
    l.ncols = 5;
    const char *cols[] = {"rows", "q", "seq_len", "page", "t_s"};
    for (int i = 0; i < 5; i++)
        snprintf(l.cols[i], sizeof l.cols[i], "%s", cols[i]);
    l.npts = 3;
    double pts[15] = {1, 784, 104000, 784, 0.00352,
                      2, 16, 240000, 784, 0.1 + 0.2,
                      3, 1, 262144, 784, 1e-9};
    l.pts = pts;
    ck_assert_int_eq(prof_put(p, &l), 0);

    prof_law_t d;                       /* every coefficient a law may have (a name of no law
                                           of this revision's: the loader checks known laws' counts) */
    memset(&d, 0, sizeof d);
    snprintf(d.name, sizeof d.name, "future.law");
    d.ncoef = PROF_MAX_COEF;
    for (int i = 0; i < PROF_MAX_COEF; i++)
        d.coef[i] = (i + 1) * 1.0e-9 / 3.0;
    d.fit_median_rel = d.fit_max_rel = -1;
    d.ncols = 3;                        /* its columns but t_s: any finite values */
    snprintf(d.cols[0], sizeof d.cols[0], "x");
    snprintf(d.cols[1], sizeof d.cols[1], "y");
    snprintf(d.cols[2], sizeof d.cols[2], "t_s");
    d.npts = 2;
    double dpts[6] = {1e300, DBL_MAX, 1e-9, 5e-324, -0.0, 1000};
    d.pts = dpts;
    ck_assert_int_eq(prof_put(p, &d), 0);

    prof_law_t g;                       /* derived from a figure: no points, no fit */
    memset(&g, 0, sizeof g);
    snprintf(g.name, sizeof g.name, "gemm.fp16");
    g.ncoef = 2;
    g.coef[0] = 6e-6;
    g.coef[1] = 1.0 / 7e14;
    g.fit_median_rel = g.fit_max_rel = -1;
    ck_assert_int_eq(prof_put(p, &g), 0);
}

static void assert_same(const profile_t *a, const profile_t *b)
{
    ck_assert_str_eq(a->gpu, b->gpu);
    ck_assert_int_eq(a->sms, b->sms);
    ck_assert(same_bits(a->mem_gib, b->mem_gib));
    ck_assert(same_bits(a->mem_bw_gbs, b->mem_bw_gbs));
    ck_assert(same_bits(a->peak_fp16_tflops, b->peak_fp16_tflops));
    ck_assert_int_eq(a->tp, b->tp);
    ck_assert_int_eq(a->has_envelope, b->has_envelope);
    ck_assert_int_eq(a->env_tp, b->env_tp);
    ck_assert_int_eq(a->env_q_heads, b->env_q_heads);
    ck_assert_int_eq(a->env_kv_heads, b->env_kv_heads);
    ck_assert_int_eq(a->env_head_dim, b->env_head_dim);
    ck_assert_str_eq(a->model, b->model);
    ck_assert_str_eq(a->toolkit, b->toolkit);
    ck_assert_str_eq(a->driver, b->driver);
    ck_assert_str_eq(a->date, b->date);
    ck_assert_str_eq(a->revision, b->revision);
    ck_assert_str_eq(a->method, b->method);
    ck_assert(same_bits(a->calib_seconds, b->calib_seconds));
    ck_assert(same_bits(a->sm_clock_mhz, b->sm_clock_mhz));
    ck_assert_int_eq(a->expand_cta_tokens, b->expand_cta_tokens);
    ck_assert_int_eq(a->expand_ctas_per_sm, b->expand_ctas_per_sm);
    ck_assert_int_eq(a->split_max, b->split_max);
    ck_assert_int_eq(a->split_min_tiles, b->split_min_tiles);
    ck_assert_int_eq(a->split_cost_tiles, b->split_cost_tiles);
    ck_assert_int_eq(a->split_ctas_per_sm, b->split_ctas_per_sm);
    ck_assert_int_eq(a->nlaws, b->nlaws);
    for (int i = 0; i < a->nlaws; i++) {
        const prof_law_t *x = &a->laws[i], *y = &b->laws[i];
        ck_assert_str_eq(x->name, y->name);
        ck_assert_int_eq(x->ncoef, y->ncoef);
        for (int j = 0; j < x->ncoef; j++)
            ck_assert_msg(same_bits(x->coef[j], y->coef[j]), "%s coef %d: %.17g vs %.17g",
                          x->name, j, x->coef[j], y->coef[j]);
        ck_assert_str_eq(x->provenance, y->provenance);
        ck_assert(same_bits(x->fit_median_rel, y->fit_median_rel));
        ck_assert(same_bits(x->fit_max_rel, y->fit_max_rel));
        ck_assert_int_eq(x->ncols, y->ncols);
        for (int j = 0; j < x->ncols; j++)
            ck_assert_str_eq(x->cols[j], y->cols[j]);
        ck_assert_int_eq(x->npts, y->npts);
        for (int j = 0; j < x->npts * x->ncols; j++)
            ck_assert_msg(same_bits(x->pts[j], y->pts[j]), "%s point value %d: %.17g vs %.17g",
                          x->name, j, x->pts[j], y->pts[j]);
    }
}

START_TEST(round_trip)
{
    mk_tmpdir();
    profile_t a, b, c;
    char err[PROF_ERR_MAX];
    fill_profile(&a);
    const char *p1 = tmp_path("a.yaml");
    ck_assert_int_eq(prof_save(p1, &a), 0);
    ck_assert_msg(prof_load(p1, &b, err) == 0, "%s", err);
    ck_assert_str_eq(b.path, p1);
    assert_same(&a, &b);
    /* saving what was loaded gives the same file, byte for byte */
    char p2[256];
    snprintf(p2, sizeof p2, "%s", tmp_path("b.yaml"));
    ck_assert_int_eq(prof_save(p2, &b), 0);
    ck_assert_msg(prof_load(p2, &c, err) == 0, "%s", err);
    assert_same(&a, &c);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "cmp -s '%s' '%s'", tmp_path("a.yaml"), p2);
    ck_assert_int_eq(system(cmd), 0);
    prof_free(&a);
    prof_free(&b);
    prof_free(&c);
    ck_assert_int_eq(c.nlaws, 0);
    ck_assert_ptr_null(c.laws);
    rm_tmpdir();
}
END_TEST

/* The envelope as `pacesim profile` shows it: the shape measured, every law with points its
 * shape columns' ranges (a gemm row's kernel choice is not a range), none for a law without. */
START_TEST(envelope_ranges)
{
    profile_t p;
    memset(&p, 0, sizeof p);
    p.has_envelope = 1;
    p.env_tp = 2;
    p.env_q_heads = 12;
    p.env_kv_heads = 2;
    p.env_head_dim = 256;
    prof_law_t l;
    prof_law_init(&l, law_form(LAW_DECODE_XQA_FP16));
    l.ncols = 5;   /* the short form: rows, q, seq_len, page, t_s */
    snprintf(l.cols[4], sizeof l.cols[4], "t_s");
    double pts[] = { 4, 1, 1024, 784, 1e-5, 256, 5, 128, 816, 2e-5, 32, 3, 65536, 800, 3e-5 };
    l.npts = 3;
    l.pts = pts;
    l.coef[0] = 1e-5;
    ck_assert_int_eq(prof_put(&p, &l), 0);
    prof_law_init(&l, law_form(LAW_ELEMENTWISE));
    l.coef[0] = 1e-6;
    ck_assert_int_eq(prof_put(&p, &l), 0);
    double lo[PROF_MAX_COLS], hi[PROF_MAX_COLS];
    ck_assert_int_eq(prof_law_range(&p.laws[0], lo, hi), 4);
    ck_assert_double_eq(lo[0], 4);
    ck_assert_double_eq(hi[0], 256);
    ck_assert_double_eq(lo[2], 128);
    ck_assert_double_eq(hi[2], 65536);
    ck_assert_double_eq(hi[3], 816);
    ck_assert_int_eq(prof_law_range(&p.laws[1], lo, hi), 0);
    char buf[2048] = { 0 };
    FILE *f = fmemopen(buf, sizeof buf - 1, "w");
    ck_assert_ptr_nonnull(f);
    prof_envelope_print(f, &p);
    fclose(f);
    ck_assert_msg(strstr(buf, "envelope: TP2, per rank 12 q heads, 2 kv heads, head_dim 256") != NULL, "%s", buf);
    ck_assert_msg(strstr(buf, "rows 4..256 q 1..5 seq_len 128..65536 page 784..816") != NULL, "%s", buf);
    ck_assert_msg(strstr(buf, "elementwise") == NULL, "%s", buf);
    prof_free(&p);
}
END_TEST

/* A gemm law's kernel ranges load back bit for bit, are found by m within their shape (the
 * ranges of two shapes apart), and prof_save refuses ranges prof_load would. */
START_TEST(kernel_ranges)
{
    mk_tmpdir();
    profile_t a, b;
    char err[PROF_ERR_MAX];
    memset(&a, 0, sizeof a);
    snprintf(a.gpu, sizeof a.gpu, "G");
    a.tp = 1;
    prof_law_t g;
    prof_law_init(&g, law_form(LAW_GEMM));
    g.coef[0] = 1e-6;
    double kern[][PROF_KERN_COLS] = { { 5120, 2048, 2, 1, 8, 64, 8, 3 }, { 5120, 2048, 2, 9, 400, 128, 64, 1 },
                                      { 5120, 2048, 2, 433, 512, 192, 208, 1 }, { 128, 2048, 2, 1, 64, 64, 8, 1 } };
    g.nkern = 4;
    g.kern = &kern[0][0];
    ck_assert_int_eq(prof_put(&a, &g), 0);
    ck_assert_ptr_ne(a.laws[0].kern, &kern[0][0]);    /* prof_put copies */
    const char *path = tmp_path("k.yaml");
    ck_assert_int_eq(prof_save(path, &a), 0);
    ck_assert_msg(prof_load(path, &b, err) == 0, "%s", err);
    const prof_law_t *l = prof_find(&b, "gemm");
    ck_assert_int_eq(l->nkern, 4);
    for (int i = 0; i < 4 * PROF_KERN_COLS; i++) ck_assert(same_bits(l->kern[i], (&kern[0][0])[i]));
    ck_assert_ptr_eq(prof_kernel_at(l, 1, 5120, 2048, 2), l->kern);
    ck_assert_ptr_eq(prof_kernel_at(l, 8, 5120, 2048, 2), l->kern);
    ck_assert_double_eq(prof_kernel_at(l, 9, 5120, 2048, 2)[KERN_TILE_N], 128);
    ck_assert_double_eq(prof_kernel_at(l, 433, 5120, 2048, 2)[KERN_TILE_M], 208);
    ck_assert_ptr_null(prof_kernel_at(l, 420, 5120, 2048, 2));   /* between the ranges: not known */
    ck_assert_ptr_null(prof_kernel_at(l, 513, 5120, 2048, 2));
    ck_assert_ptr_null(prof_kernel_at(l, 8, 5120, 2048, 1));     /* another weight width */
    ck_assert_double_eq(prof_kernel_at(l, 64, 128, 2048, 2)[KERN_TILE_N], 64);
    ck_assert_ptr_null(prof_kernel_at(prof_find(&b, "gemm"), 65, 128, 2048, 2));
    /* what prof_load refuses is not written: overlapping ranges, a kernel row on another law */
    a.laws[0].kern[PROF_KERN_COLS + KERN_M_LO] = 8;
    errno = 0;
    ck_assert_int_eq(prof_save(tmp_path("x.yaml"), &a), -1);
    ck_assert_int_eq(errno, EDOM);
    a.laws[0].kern[PROF_KERN_COLS + KERN_M_LO] = 9;
    snprintf(a.laws[0].name, sizeof a.laws[0].name, "gdn");
    ck_assert_int_eq(prof_save(tmp_path("x.yaml"), &a), -1);
    prof_free(&a);
    prof_free(&b);
    rm_tmpdir();
}
END_TEST

START_TEST(save_refuses_what_load_refuses)
{
    mk_tmpdir();
    profile_t a;
    fill_profile(&a);
    a.laws[0].pts[7] = NAN;
    errno = 0;
    ck_assert_int_eq(prof_save(tmp_path("x.yaml"), &a), -1);
    ck_assert_int_eq(errno, EDOM);
    a.laws[0].pts[7] = 240000;
    a.laws[1].coef[1] = INFINITY;
    ck_assert_int_eq(prof_save(tmp_path("x.yaml"), &a), -1);
    /* nor anything prof_load would refuse: a negative coefficient, a time of 0, q past seq_len */
    a.laws[1].coef[1] = -1e-9;
    ck_assert_int_eq(prof_save(tmp_path("x.yaml"), &a), -1);
    ck_assert_int_eq(errno, EDOM);
    a.laws[1].coef[1] = 1;
    a.laws[0].pts[4] = 0;
    ck_assert_int_eq(prof_save(tmp_path("x.yaml"), &a), -1);
    a.laws[0].pts[4] = 0.00352;
    a.laws[0].pts[7] = 8;
    ck_assert_int_eq(prof_save(tmp_path("x.yaml"), &a), -1);
    a.laws[0].pts[7] = 240000;
    ck_assert_int_eq(prof_save(tmp_path("x.yaml"), &a), 0);
    ck_assert_int_eq(prof_save("/nonexistent-dir/x.yaml", &a), -1);
    ck_assert_int_eq(errno, ENOENT);
    prof_free(&a);
    rm_tmpdir();
}
END_TEST

START_TEST(find_put_eval)
{
    profile_t p;
    fill_profile(&p);
    ck_assert_int_eq(p.nlaws, 3);
    const prof_law_t *g = prof_find(&p, "gemm.fp16");
    ck_assert_ptr_nonnull(g);
    ck_assert_ptr_null(prof_find(&p, "gemm"));
    double feat[2] = {1, 7e14};
    ck_assert_double_eq_tol(prof_eval(g, feat), 6e-6 + 1.0, 1e-12);
    /* replacing keeps the count and the slot; the points are copied */
    prof_law_t l = *prof_find(&p, "attn.prefill_bm32.fp16");
    double pts[5] = {9, 9, 9, 9, 9};
    l.pts = pts;
    l.npts = 1;
    l.coef[0] = 2;
    ck_assert_int_eq(prof_put(&p, &l), 0);
    pts[0] = -1;
    ck_assert_int_eq(p.nlaws, 3);
    const prof_law_t *a = prof_find(&p, "attn.prefill_bm32.fp16");
    ck_assert_ptr_eq(a, &p.laws[0]);
    ck_assert_int_eq(a->npts, 1);
    ck_assert_double_eq(a->pts[0], 9);
    ck_assert_double_eq(a->coef[0], 2);
    prof_free(&p);
}
END_TEST

START_TEST(missing_file)
{
    profile_t p;
    char err[PROF_ERR_MAX];
    ck_assert_int_eq(prof_load("calib/profiles/nope.yaml", &p, err), -1);
    ck_assert_str_eq(err, "calib/profiles/nope.yaml: cannot open profile: No such file or directory");
    ck_assert_int_eq(p.nlaws, 0);
    ck_assert_ptr_null(p.laws);
}
END_TEST

/* a FIFO with no writer or a directory is refused at once, not waited on or read */
START_TEST(not_a_regular_file)
{
    mk_tmpdir();
    const char *fifo = tmp_path("fifo.yaml");
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    char want[300], path[256];
    snprintf(path, sizeof path, "%s", fifo);
    profile_t p;
    char err[PROF_ERR_MAX];
    ck_assert_int_eq(prof_load(path, &p, err), -1);
    snprintf(want, sizeof want, "%s: cannot read: not a regular file (a FIFO)", path);
    ck_assert_str_eq(err, want);
    ck_assert_int_eq(prof_load(tmpdir, &p, err), -1);
    snprintf(want, sizeof want, "%s: cannot read: %s", tmpdir, strerror(EISDIR));
    ck_assert_str_eq(err, want);
    ck_assert_ptr_null(p.laws);
    rm_tmpdir();
}
END_TEST

/* the profile's model against a scenario's: by name and TP, else by the GEMM shapes its
 * points hold; one warning line when they differ */
START_TEST(model_by_shape)
{
    model_t m, fp16;
    char merr[SCN_ERR_MAX];
    ck_assert_msg(scn_load_model("models/qwen3.8-27b.yaml", &m, merr) == 0, "%s", merr);
    ck_assert_msg(scn_load_model("models/qwen3.8-27b-fp16.yaml", &fp16, merr) == 0, "%s", merr);
    ck_assert_str_ne(m.name, fp16.name);
    profile_t p;
    memset(&p, 0, sizeof p);
    snprintf(p.path, sizeof p.path, "h.yaml");
    snprintf(p.model, sizeof p.model, "%s", m.name);
    p.tp = 1;
    model_rank_t r;
    ck_assert_int_eq(model_rank(&m, 1, &r), 0);
    long h = m.hidden, nk[][2] = { { r.attn_qkv_n, h }, { h, r.attn_o_k }, { r.gdn_in_n, h }, { h, r.gdn_out_k },
                                   { r.mlp_up_n, h }, { h, r.mlp_down_k }, { r.vocab_n, h }, { h, 2 * h } };
    double pts[8 * 5];
    for (int i = 0; i < 8; i++) {
        double row[5] = { 64, (double)nk[i][0], (double)nk[i][1], 2, 1e-5 };
        memcpy(pts + 5 * i, row, sizeof row);
    }
    prof_law_t g;
    prof_law_init(&g, law_form(LAW_GEMM));
    g.ncols = 5;
    snprintf(g.cols[4], sizeof g.cols[4], "t_s");
    g.pts = pts;
    g.npts = 8;
    ck_assert_int_eq(prof_put(&p, &g), 0);
    char buf[1024] = "";
    FILE *w = fmemopen(buf, sizeof buf, "w");
    ck_assert_ptr_nonnull(w);
    ck_assert_int_eq(prof_check_model(&p, &m, 1, w), 0);        /* the same name and TP */
    ck_assert_int_eq(prof_check_model(&p, &fp16, 1, w), 0);     /* another name, the same shapes */
    fflush(w);
    ck_assert_str_eq(buf, "");
    ck_assert_int_eq(prof_check_model(&p, &m, 2, w), 1);        /* TP 2: other shapes per rank */
    fclose(w);
    ck_assert_str_eq(buf, "warning: h.yaml: profile measured qwen3.8-27b at TP 1; this scenario runs qwen3.8-27b "
                          "at TP 2: attention and GEMM items are priced by the laws outside their measured shapes\n");
    /* without the points, another name is another model; no model recorded: nothing compared */
    w = fmemopen(buf, sizeof buf, "w");
    p.laws[0].npts = 0;
    ck_assert_int_eq(prof_check_model(&p, &fp16, 1, w), 1);
    p.model[0] = 0;
    ck_assert_int_eq(prof_check_model(&p, &fp16, 2, w), 0);
    fclose(w);
    p.laws[0].npts = 8;
    prof_free(&p);
}
END_TEST

#define META "profile:\n  gpu: G\n"               /* lines 1-2 */

typedef struct bad {
    const char *yaml;
    const char *want;
} bad_t;

static const bad_t bads[] = {
    {META "  color: red\nlaws: []\n",
     ":3:3: profile.color: unknown key \"color\" (allowed: gpu, sms,"},
    {"profile:\n  sms: 1\nlaws: []\n", ":2:3: profile: missing required key \"gpu\""},
    {META "laws: []\nextra: 1\n", ":4:1: extra: unknown key \"extra\" (allowed: profile, laws)"},
    {META, ":1:1: missing required key \"laws\""},
    {META "  sms: -1\nlaws: []\n", ":3:8: profile.sms: expected an integer in [0, 4096], got \"-1\""},
    /* 5 */ {META "  mem_gib: .inf\nlaws: []\n",
             ":3:12: profile.mem_gib: expected a number in [0, 1e+09], got \".inf\""},
    {META "  tp: 0\nlaws: []\n", ":3:7: profile.tp: expected an integer in [1, 1024], got \"0\""},
    {META "laws:\n  - name: a\n    coef: []\n", ":5:11: laws[0].coef: expected 1 to 10 coefficients, got 0"},
    {META "laws:\n  - name: a\n    coef: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]\n",
     ":5:11: laws[0].coef: expected 1 to 10 coefficients, got 11"},
    {META "laws:\n  - name: a\n    coef: [1, nan]\n",
     ":5:15: laws[0].coef[1]: expected a number in [0, 100], got \"nan\""},
    /* 10 */ {META "laws:\n  - name: a\n    coef: [1e999]\n",
              ":5:12: laws[0].coef[0]: expected a number in [0, 100], got \"1e999\""},
    {META "laws:\n  - coef: [1]\n", ":4:5: laws[0]: missing required key \"name\""},
    {META "laws:\n  - {name: a, coef: [1]}\n  - {name: a, coef: [2]}\n",
     ":5:12: laws[1].name: duplicate law name \"a\" (also laws[0])"},
    {META "laws:\n  - {name: a, coef: [1], columns: [x, t_s], points: [[1, 2], [1, 2, 3]]}\n",
     ":4:62: laws[0].points[1]: expected 2 values (one per column), got 3"},
    {META "laws:\n  - {name: a, coef: [1], columns: [x, t_s], points: [[1, 2], [1, .nan]]}\n",
     ":4:66: laws[0].points[1][1]: expected a finite number, got \".nan\""},
    /* 15 */ {META "laws:\n  - {name: a, coef: [1], points: [[1, 2]]}\n",
              ":4:34: laws[0].points: points need columns"},
    {META "laws:\n  - {name: a, coef: [1], columns: [x, y]}\n",
     ":4:39: laws[0].columns[1]: the last column must be \"t_s\", got \"y\""},
    {META "laws:\n  - {name: a, coef: [1], columns: [a, b, c, d, e, f, g, h, i, t_s]}\n",
     ":4:35: laws[0].columns: at most 9 columns, got 10"},
    {META "laws:\n  - {name: a, coef: [1], fit: {median_rel: 0.1}}\n",
     ":4:31: laws[0].fit: missing required key \"max_rel\""},
    {META "laws:\n  - {name: a, coef: [1], slope: 2}\n",
     ":4:26: laws[0].slope: unknown key \"slope\" (allowed: name, coef, provenance, fit, columns, "
     "points"},
    /* 20 */ {META "laws:\n  - {name: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa, coef: [1]}\n",
              ":4:12: laws[0].name: string too long (at most 47 characters)"},
    {META "laws:\n  - {name: a, coef: [1], columns: [x, t_s], points: [1, 2]}\n",
     ":4:54: laws[0].points[0]: expected a list, got \"1\""},
    {META "laws: {a: 1}\n", ":3:7: laws: expected a list, got a mapping"},
    {META "  prefill_split: {max_parts: 0, min_tiles: 8, cost_tiles: 4, ctas_per_sm: 1}\nlaws: []\n",
     ":3:30: profile.prefill_split.max_parts: expected"},
    {META "  prefill_split: {max_parts: 4, min_tiles: 8, cost_tiles: 4}\nlaws: []\n",
     ":3:18: profile.prefill_split: missing required key \"ctas_per_sm\""},
    {META "  prefill_split: {max_parts: 4, min_tiles: 8, cost_tiles: -1, ctas_per_sm: 1}\nlaws: []\n",
     ":3:59: profile.prefill_split.cost_tiles: expected"},
    {META "  prefill_split: {max_parts: 4, min_tiles: 8, cost_tiles: 4, ctas_per_sm: 1, parts: 3}\nlaws: []\n",
     "profile.prefill_split.parts: unknown key \"parts\""},
    {META "laws: [\n", ": syntax error:"},
    {"", ":1:1: empty document"},
    /* degenerate laws and points: refused where they stand */
    {META "laws:\n  - {name: gdn, coef: [1e-6, -1e-9]}\n", ":4:30: laws[0].coef[1]: expected a number in [0, 100]"},
    {META "laws:\n  - {name: elementwise, coef: [0, 0]}\n", ":4:31: laws[0].coef: every coefficient is 0"},
    {META "laws:\n  - {name: step, coef: [0, 0]}\n  - {name: x, coef: [1], fit: {median_rel: 0.2, max_rel: 0.1}}\n",
     ":5:44: laws[1].fit.median_rel: must not exceed max_rel (0.1), got 0.2"},
    {META "laws:\n  - {name: gdn, coef: [1], columns: [tokens, t_s]}\n",
     ":4:37: laws[0].columns: law \"gdn\" has the columns [tokens, seqs, t_s], got 2"},
    {META "laws:\n  - {name: gdn, coef: [1], columns: [tokens, seqs, t_s], points: [[4, 8, 1e-5]]}\n",
     ":4:71: laws[0].points[0][1]: seqs (8) must not exceed tokens (4)"},
    {META "laws:\n  - {name: x, coef: [1], columns: [a, t_s], points: [[1, 0]]}\n",
     ":4:58: laws[0].points[0][1]: t_s (seconds) must be a number in [1e-09, 1000], got 0"},
    {META "laws:\n  - {name: attn.decode_xqa.fp16, coef: [1], columns: [rows, q, seq_len, page, t_s], "
     "points: [[1, 65, 1024, 784, 1e-5]]}\n",
     "laws[0].points[0][1]: this column must be a whole number in [1, 64], got 65"},
    /* a decode point's requests spread from ctx_min: 0, or within q .. seq_len */
    {META "laws:\n  - {name: attn.decode_scalar.fp8, coef: [1], columns: [rows, q, seq_len, page, q_heads, kv_heads, "
     "head_dim, ctx_min, t_s], points: [[8, 3, 1024, 1600, 24, 4, 256, 2048, 1e-5]]}\n",
     "laws[0].points[0][7]: ctx_min (2048) must be 0 or from q (3) to seq_len (1024)"},
    {META "laws:\n  - {name: attn.decode_scalar.fp8, coef: [1], columns: [rows, q, seq_len, page, q_heads, kv_heads, "
     "head_dim, ctx_min, t_s], points: [[8, 3, 1024, 1600, 24, 4, 256, 2, 1e-5]]}\n",
     "laws[0].points[0][7]: ctx_min (2) must be 0 or from q (3) to seq_len (1024)"},
    {META "laws:\n  - {name: attn.prefill_generic.fp16, coef: [1], columns: [rows, q, seq_len, page, q_heads, kv_heads, "
     "head_dim, ctx_min, t_s]}\n",
     "laws[0].columns: law \"attn.prefill_generic.fp16\" has the columns [rows, q, seq_len, page, q_heads, kv_heads, "
     "head_dim, t_s] (or its first 4 and t_s), got 9"},
    /* cuBLAS's kernel ranges: gemm's only, whole numbers from 1, ascending in m per shape */
    {META "laws:\n  - {name: gdn, coef: [1], kernels: [[1, 2, 2, 1, 4, 64, 8, 1]]}\n",
     ":4:37: laws[0].kernels: only law gemm records cuBLAS's kernels, not \"gdn\""},
    {META "laws:\n  - {name: gemm, coef: [1], kernels: [[5120, 2048, 2, 9, 4, 64, 8, 1]]}\n",
     ":4:55: laws[0].kernels[0][3]: m_lo 9 is past m_hi 4"},
    {META "laws:\n  - {name: gemm, coef: [1], kernels: [[5120, 2048, 2, 1, 8, 64, 8, 1], [5120, 2048, 2, 8, 16, 64, 16, 1]]}\n",
     ":4:88: laws[0].kernels[1][3]: m_lo 8 is not past the previous range's m_hi 8"},
    {META "laws:\n  - {name: gemm, coef: [1], kernels: [[5120, 2048, 2, 1, 8, 64, 8]]}\n",
     ":4:39: laws[0].kernels[0]: expected 8 values (n, k, wb, m_lo, m_hi, tile_n, tile_m, splits), got 7"},
    {META "laws:\n  - {name: gemm, coef: [1], kernels: [[5120, 2048, 2, 1, 8, 64, 8, 0]]}\n",
     ":4:68: laws[0].kernels[0][7]: expected an integer in [1, "},
    /* more coefficients than this revision's law has: a profile of another revision */
    {META "laws:\n  - name: gemm\n    coef: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n",
     ":5:11: laws[0].coef: law \"gemm\" has 9 coefficients in this revision, got 10"},
};

START_TEST(bad_profiles)
{
    mk_tmpdir();
    const char *path = write_tmp("bad.yaml", bads[_i].yaml);
    char pathcopy[256];
    snprintf(pathcopy, sizeof pathcopy, "%s", path);
    profile_t p;
    char err[PROF_ERR_MAX];
    int rc = prof_load(path, &p, err);
    rm_tmpdir();
    ck_assert_msg(rc == -1, "case %d loaded", _i);
    ck_assert_int_eq(strncmp(err, pathcopy, strlen(pathcopy)), 0);
    ck_assert_msg(strstr(err, bads[_i].want) != NULL, "case %d:\n got: %s\nwant: %s", _i, err,
                  bads[_i].want);
    ck_assert_int_eq(p.nlaws, 0);
    ck_assert_ptr_null(p.laws);
}
END_TEST

START_TEST(minimal_profile)
{
    mk_tmpdir();
    const char *path = write_tmp("m.yaml", META "laws:\n  - {name: a, coef: [2, 3]}\n");
    profile_t p;
    char err[PROF_ERR_MAX];
    ck_assert_msg(prof_load(path, &p, err) == 0, "%s", err);
    rm_tmpdir();
    ck_assert_str_eq(p.gpu, "G");
    ck_assert_int_eq(p.tp, 1);
    ck_assert_int_eq(p.nlaws, 1);
    ck_assert_int_eq(p.laws[0].ncoef, 2);
    ck_assert_int_eq(p.laws[0].ncols, 0);
    ck_assert_int_eq(p.laws[0].npts, 0);
    ck_assert_ptr_null(p.laws[0].pts);
    ck_assert_double_eq(p.laws[0].fit_median_rel, -1);
    ck_assert_double_eq(p.laws[0].fit_max_rel, -1);
    double f[2] = {10, 100};
    ck_assert_double_eq(prof_eval(&p.laws[0], f), 320);
    prof_free(&p);
}
END_TEST

int main(void)
{
    const check_test_t tests[] = {
        CHECK_TEST(round_trip), CHECK_TEST(envelope_ranges), CHECK_TEST(save_refuses_what_load_refuses), CHECK_TEST(kernel_ranges), CHECK_TEST(find_put_eval),
        CHECK_TEST(missing_file), CHECK_TEST(not_a_regular_file), CHECK_TEST(model_by_shape),
        CHECK_TEST(minimal_profile), CHECK_LOOP(bad_profiles, CHECK_N(bads))};
    return check_main("profile", "profile", tests, CHECK_N(tests), 0, NULL);
}
