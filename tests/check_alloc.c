/* check_alloc: every allocation of a reference run may fail, and each failure must end
 * in a clean error -- never a crash, a hang, a leak or a plausible wrong answer.
 *
 * Linked with -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=aligned_alloc,--wrap=strdup (tests.mk),
 * so every allocation the simulator's own code makes goes through the wrappers below
 * (allocations inside libyaml, GSL and libc stay real).  A first pass counts the
 * allocations of one run; then, for n = 1 .. count, the run is repeated with the n-th
 * allocation failing.  Each must return rc != 0 with a one-line message, or (if the
 * failure was absorbed) exactly the reference result.  Under the ASan build
 * (make check-asan) LeakSanitizer checks at exit that no failure path leaked.
 *
 *   check_alloc [SCENARIO [PROFILE]]     (defaults: scenarios/default.yaml, the V100
 *                                          profile, an MTP scenario, 400 Poisson requests)
 * Exit status 0 when every n passed. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "profile.h"
#include "runner.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
void *__real_aligned_alloc(size_t a, size_t n);
char *__real_strdup(const char *s);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t m);
void *__wrap_realloc(void *p, size_t n);
void *__wrap_aligned_alloc(size_t a, size_t n);
char *__wrap_strdup(const char *s);

static long n_alloc;      /* allocations seen since the last reset */
static long fail_at;      /* 1-based allocation to fail; 0 = none */

static int should_fail(void)
{
    if (++n_alloc == fail_at) {
        errno = ENOMEM;
        return 1;
    }
    return 0;
}

void *__wrap_malloc(size_t n) { return should_fail() ? NULL : __real_malloc(n); }
void *__wrap_calloc(size_t n, size_t m) { return should_fail() ? NULL : __real_calloc(n, m); }
void *__wrap_realloc(void *p, size_t n) { return should_fail() ? NULL : __real_realloc(p, n); }
void *__wrap_aligned_alloc(size_t a, size_t n) { return should_fail() ? NULL : __real_aligned_alloc(a, n); }
char *__wrap_strdup(const char *s) { return should_fail() ? NULL : __real_strdup(s); }

static int same_result(const run_result_t *a, const run_result_t *b)
{
    if (a->sum.steps != b->sum.steps || a->sum.makespan != b->sum.makespan || a->nwin != b->nwin) return 0;
    for (int i = 0; i < a->nwin; i++)
        if (!(a->win_val[i] == b->win_val[i] || (isnan(a->win_val[i]) && isnan(b->win_val[i])))) return 0;
    return 1;
}

static int one_line(const char *s)
{
    return s[0] && !strchr(s, '\n');
}

/* Walk every allocation of runner_run(path), every step at scale times its price (run --error-bars's
 * runs; 1: as priced). */
static int walk_run_at(const char *path, const char *const *sets, int nsets, double scale)
{
    runner_hooks_t h = { .cost_scale = scale };
    run_result_t *ref = calloc(1, sizeof *ref), *res = calloc(1, sizeof *res);
    int bad = 0;
    long absorbed = 0;
    if (!ref || !res) return 1;
    fail_at = 0;
    n_alloc = 0;
    runner_run_ex(path, sets, nsets, &h, ref);
    long total = n_alloc;
    if (ref->rc) {
        fprintf(stderr, "check_alloc: reference run of %s failed: %s\n", path, ref->err);
        free(ref);
        free(res);
        return 1;
    }
    for (long k = 1; k <= total; k++) {
        fail_at = k;
        n_alloc = 0;
        runner_run_ex(path, sets, nsets, &h, res);
        fail_at = 0;
        if (res->rc == 0) {
            if (!same_result(ref, res)) {
                fprintf(stderr, "FAIL %s: allocation %ld of %ld failed, the run succeeded with a different result\n",
                        path, k, total);
                bad++;
            } else {
                absorbed++;
            }
        } else if (!one_line(res->err)) {
            fprintf(stderr, "FAIL %s: allocation %ld of %ld failed: rc %d without a one-line message\n", path, k,
                    total, res->rc);
            bad++;
        }
    }
    printf("check_alloc: %s%s: %ld allocations, each failed once: %ld clean errors, %ld absorbed, %d bad\n", path,
           scale != 1 ? " (every step scaled)" : "", total, total - absorbed - bad, absorbed, bad);
    free(ref);
    free(res);
    return bad != 0;
}

static int walk_run(const char *path, const char *const *sets, int nsets) { return walk_run_at(path, sets, nsets, 1); }

/* Walk every allocation of prof_load(path). */
static int walk_profile(const char *path)
{
    profile_t p;
    char err[PROF_ERR_MAX];
    int bad = 0;
    fail_at = 0;
    n_alloc = 0;
    if (prof_load(path, &p, err) < 0) {
        fprintf(stderr, "check_alloc: %s\n", err);
        return 1;
    }
    prof_free(&p);
    long total = n_alloc;
    for (long k = 1; k <= total; k++) {
        fail_at = k;
        n_alloc = 0;
        int rc = prof_load(path, &p, err);
        fail_at = 0;
        if (rc == 0) {
            fprintf(stderr, "FAIL %s: allocation %ld of %ld failed but prof_load succeeded\n", path, k, total);
            prof_free(&p);
            bad++;
        } else if (!one_line(err)) {
            fprintf(stderr, "FAIL %s: allocation %ld failed without a one-line message\n", path, k);
            bad++;
        }
    }
    printf("check_alloc: %s: %ld allocations, each failed once: %d bad\n", path, total, bad);
    return bad != 0;
}

int main(int argc, char **argv)
{
    const char *scn = argc > 1 ? argv[1] : "scenarios/default.yaml";
    const char *prof = argc > 2 ? argv[2] : "calib/profiles/v100-pcie-32gb-tp2.yaml";
    int rc = walk_run(scn, NULL, 0);
    rc |= walk_profile(prof);
    if (argc <= 1) {
        /* MTP, and a Poisson workload whose pool, waiting queue and event heap grow */
        static const char *const poi[] = { "workload.poisson.count=400", "workload.poisson.rate_per_s=200" };
        rc |= walk_run("scenarios/v100-fp16-mtp4-b16k-pdr.yaml", NULL, 0);
        rc |= walk_run("scenarios/bench-poisson-100k.yaml", poi, 2);
        rc |= walk_run_at("scenarios/default.yaml", NULL, 0, 1.03);   /* the scaled model's own allocations */
    }
    return rc;
}
