/* check_run.h: every Check suite's main(): test cases built from tables of tests, the suite run,
 * its result turned into an exit status. A suite of one test case is check_main(...); one of
 * several builds them with check_case and runs with check_run. */
#ifndef CHECK_RUN_H
#define CHECK_RUN_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A scratch file of this process, /tmp/<stem>-<pid>.yaml, written into path (n bytes); every such
 * file a process named is removed when it exits (each of Check's forked tests its own). */
#define CHECK_TMP_MAX 8
static inline const char **check_tmp_stems(int **n)
{
    static const char *stems[CHECK_TMP_MAX];
    static int count;
    *n = &count;
    return stems;
}
static inline void check_tmp_clean(void)
{
    int *n;
    const char **stems = check_tmp_stems(&n);
    char path[256];
    for (int i = 0; i < *n; i++) {
        snprintf(path, sizeof path, "/tmp/%s-%d.yaml", stems[i], (int)getpid());
        unlink(path);
    }
}
static inline const char *check_tmp_path(char *path, size_t size, const char *stem)
{
    int *n, known = 0;
    const char **stems = check_tmp_stems(&n);
    for (int i = 0; i < *n; i++) known |= !strcmp(stems[i], stem);
    if (!known && *n < CHECK_TMP_MAX) {
        if (*n == 0) atexit(check_tmp_clean);
        stems[(*n)++] = stem;
    }
    snprintf(path, size, "/tmp/%s-%d.yaml", stem, (int)getpid());
    return path;
}

/* One entry of a test case: a test run once (CHECK_TEST) or a loop test for _i = 0 .. loops - 1
 * (CHECK_LOOP) */
typedef struct {
    const TTest *test;
    int loops;
} check_test_t;

#define CHECK_TEST(t) {(t), 0}
#define CHECK_LOOP(t, n) {(t), (n)}
#define CHECK_N(a) ((int)(sizeof(a) / sizeof *(a)))

/* Test case `name` of suite s: the n tests of tab in that order, a timeout in seconds (0: Check's
 * default), a checked fixture's setup (NULL: none). Returns the case. */
static inline TCase *check_case(Suite *s, const char *name, const check_test_t *tab, int n, int timeout, SFun setup)
{
    TCase *tc = tcase_create(name);
    if (setup) tcase_add_checked_fixture(tc, setup, NULL);
    if (timeout > 0) tcase_set_timeout(tc, timeout);
    for (int i = 0; i < n; i++) {
        if (tab[i].loops > 0) tcase_add_loop_test(tc, tab[i].test, 0, tab[i].loops);
        else tcase_add_test(tc, tab[i].test);
    }
    suite_add_tcase(s, tc);
    return tc;
}

/* Run suite s, in-process when in_process (CUDA does not survive Check's fork() once the process
 * has touched the device), else as CK_FORK says; EXIT_SUCCESS when no test failed. */
static inline int check_run_in(Suite *s, int in_process)
{
    SRunner *sr = srunner_create(s);
    if (in_process) srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    int nf = srunner_ntests_failed(sr);
    srunner_free(sr);
    return nf ? EXIT_FAILURE : EXIT_SUCCESS;
}

static inline int check_run(Suite *s) { return check_run_in(s, 0); }

/* A suite of one test case: suite `suite`, case `name` (check_case), run (check_run). */
static inline int check_main(const char *suite, const char *name, const check_test_t *tab, int n, int timeout,
                             SFun setup)
{
    Suite *s = suite_create(suite);
    check_case(s, name, tab, n, timeout, setup);
    return check_run(s);
}

#endif
