/* fuzz_import: libFuzzer harness for `pacesim trace import` (sim/trace_import.c): every input
 * is imported as each format (Azure and BurstGPT CSV, Mooncake JSON lines, ShareGPT JSON), with
 * a row limit and without; any crash, sanitizer report or leak, an rc other than 0/1/2, an
 * error that is not one line of text, or a written trace the CSV reader's rules would refuse
 * (arrivals decreasing, a token count below 1) fails.  Built and run by `make fuzz` /
 * `make check-fuzz` (tests/tests.mk). */
#include <string.h>
#include "fuzz_common.h"
#include "trace_import.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_setup("import");
    return 0;
}

/* The rows written: "arrival,prompt,output[,...]", arrivals non-decreasing, counts >= 1. */
static void rows_ok(const char *s)
{
    double last = 0;
    const char *p = strchr(s, '\n');
    while (p && p[1]) {
        double t;
        long pr, out;
        if (sscanf(p + 1, "%lf,%ld,%ld", &t, &pr, &out) != 3 || t < last || pr < 1 || out < 1) abort();
        last = t;
        p = strchr(p + 1, '\n');
    }
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    const char *path = fuzz_write("in.trace", data, size);
    static const char *const fmts[] = { "azure", "burstgpt", "mooncake", "sharegpt" };
    for (int k = 0; k < 8; k++) {
        trace_import_opts_t o = trace_import_defaults();
        o.format = fmts[k % 4];
        if (k >= 4) {
            o.max_rows = 2;
            o.rate = 3;
            o.max_model_len = 4096;
        }
        char *out = NULL, err[1024];
        size_t n = 0;
        FILE *f = open_memstream(&out, &n);
        if (!f) abort();
        trace_import_stats_t st;
        int rc = trace_import(path, f, &o, &st, err, sizeof err);
        fclose(f);
        if (rc < 0 || rc > 2) abort();
        if (rc) {
            for (const char *e = err; *e; e++)
                if ((unsigned char)*e < 0x20 || *e == 0x7f) abort();
        } else {
            rows_ok(out);
        }
        free(out);
    }
    return 0;
}
