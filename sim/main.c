/* main.c: the pacesim command line.
 *
 *   pacesim run FILE... [--set key.path=value]... [--csv OUT] [--steps OUT] [--quiet]
 *   pacesim validate FILE...
 *   pacesim --help | --version
 *
 * Exit codes: 0 ok, 1 runtime failure, 2 bad input (usage, scenario, profile). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_errno.h>
#include "runner.h"

#ifndef PACESIM_VERSION
#define PACESIM_VERSION "0.1.0"
#endif

static void usage(FILE *f)
{
    fputs("usage: pacesim run FILE... [--set key.path=value]... [--csv OUT] [--steps OUT] [--quiet]\n"
          "       pacesim validate FILE...\n"
          "       pacesim --help | --version\n"
          "\n"
          "run       simulate each scenario; print a result table per run (with the published\n"
          "          value and relative error for windows that carry a reference)\n"
          "  --set key.path=value   override any scenario key, e.g.\n"
          "                         --set env.VLLM_1CAT_PREFILL_PACE_STEPS=4\n"
          "                         --set workload.requests.B.prompt_tokens=131072\n"
          "  --csv OUT              one row per run: settings + a column per measurement window\n"
          "  --steps OUT            one row per engine step: time, duration, cost breakdown, rows\n"
          "                         with q, context and kernel route (one file; several runs append)\n"
          "  --quiet                no table on stdout\n"
          "validate  load and check scenarios (and their profiles) without running them\n"
          "\n"
          "Exit status: 0 ok, 1 runtime failure, 2 bad input.\n", f);
}

static FILE *open_out(const char *path)
{
    if (!strcmp(path, "-")) return stdout;
    FILE *f = fopen(path, "w");
    if (!f) perror(path);
    return f;
}

static int cmd_run(int argc, char **argv, int validate_only)
{
    const char **files = calloc((size_t)argc + 1, sizeof *files);
    const char **sets = calloc((size_t)argc + 1, sizeof *sets);
    const char *csv = NULL, *steps = NULL;
    int nf = 0, ns = 0, quiet = 0, rc = 0;
    if (!files || !sets) return 1;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--set") || !strcmp(a, "--csv") || !strcmp(a, "--steps")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "pacesim: %s needs a value\n", a);
                rc = 2;
                goto out;
            }
            const char *v = argv[++i];
            if (!strcmp(a, "--set")) {
                if (!strchr(v, '=')) {
                    fprintf(stderr, "pacesim: --set %s: expected key.path=value\n", v);
                    rc = 2;
                    goto out;
                }
                sets[ns++] = v;
            } else if (!strcmp(a, "--csv")) {
                csv = v;
            } else {
                steps = v;
            }
        } else if (!strncmp(a, "--set=", 6)) {
            sets[ns++] = a + 6;
        } else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) {
            quiet = 1;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "pacesim: unknown option %s (see pacesim --help)\n", a);
            rc = 2;
            goto out;
        } else {
            files[nf++] = a;
        }
    }
    if (nf == 0) {
        fprintf(stderr, "pacesim: no scenario file given (see pacesim --help)\n");
        rc = 2;
        goto out;
    }
    if (validate_only) {
        for (int i = 0; i < nf; i++) {
            scenario_t s;
            char err[SCN_ERR_MAX];
            if (scn_load(files[i], sets, ns, &s, err) < 0) {
                fprintf(stderr, "%s\n", err);
                rc = 2;
                continue;
            }
            if (s.profile_path[0]) {
                profile_t p;
                char perr[PROF_ERR_MAX];
                if (prof_load(s.profile_path, &p, perr) < 0) {
                    fprintf(stderr, "%s\n", perr);
                    rc = 2;
                    scn_free(&s);
                    continue;
                }
                prof_free(&p);
            }
            printf("%s: ok (%s)\n", files[i], s.name);
            scn_free(&s);
        }
        goto out;
    }
    FILE *fc = NULL, *fs = NULL;
    if (csv && !(fc = open_out(csv))) { rc = 2; goto out; }
    if (steps && !(fs = open_out(steps))) { rc = 2; goto out; }
    run_result_t *res = malloc(sizeof *res);
    if (!res) { rc = 1; goto out; }
    int header_done = 0;
    for (int i = 0; i < nf; i++) {
        runner_run(files[i], sets, ns, fs, res);
        if (res->rc) {
            fprintf(stderr, "%s\n", res->err);
            if (res->rc > rc) rc = res->rc;
            continue;
        }
        if (!quiet) {
            report_table(stdout, res);
            if (i + 1 < nf) putchar('\n');
        }
        if (fc) {
            if (!header_done) report_csv_header(fc, res);
            header_done = 1;
            report_csv_row(fc, res);
        }
    }
    free(res);
    if (fc && fc != stdout) fclose(fc);
    if (fs && fs != stdout) fclose(fs);
out:
    free(files);
    free(sets);
    return rc;
}

int main(int argc, char **argv)
{
    gsl_set_error_handler_off();
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version")) {
        printf("pacesim %s\n", PACESIM_VERSION);
        return 0;
    }
    if (!strcmp(cmd, "run")) return cmd_run(argc - 2, argv + 2, 0);
    if (!strcmp(cmd, "validate")) return cmd_run(argc - 2, argv + 2, 1);
    fprintf(stderr, "pacesim: unknown command \"%s\" (see pacesim --help)\n", cmd);
    return 2;
}
