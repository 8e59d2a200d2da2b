/* fuzz_csv: libFuzzer harness for the CSV readers of pacesim merge and pacesim best
 * (sweep_merge, sweep_best_files) and of pacesim capacity --frontier (its table, frontier
 * and --rate answer): RFC 4180 records, quoted fields, limits.  Each input is merged with
 * itself, searched for an objective over its columns and read as a merged capacity CSV;
 * any crash, sanitizer report or leak, an rc other than 0/1/2, or an error message with a
 * control character (capacity's: more than one line) fails.  Built and run by `make fuzz`
 * / `make check-fuzz` (tests/tests.mk). */
#include "fuzz_common.h"
#include "capacity.h"
#include "sweep.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_setup("csv");
    if (!freopen("/dev/null", "w", stdout)) abort();   /* capacity's table */
    return 0;
}

/* Every line of s is text: no control byte but the newline ending it. */
static void one_line_each(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (((unsigned char)s[i] < 0x20 && s[i] != '\n') || s[i] == 0x7f) abort();
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    const char *path = fuzz_write("in.csv", data, size);
    const char *paths[] = { path, path };
    char *o = NULL, *e = NULL;
    size_t no = 0, ne = 0;
    FILE *out = open_memstream(&o, &no), *err = open_memstream(&e, &ne);
    if (!out || !err) abort();
    int rc = sweep_merge(paths, 2, out, err);
    static const char *const cons[] = { "b<=1.1*base", "c>0" };
    int rc2 = sweep_best_files(paths, 1, "max:a", cons, 2, out, err);
    fclose(out);
    fclose(err);
    if (rc < 0 || rc > 2 || rc2 < 0 || rc2 > 2) abort();
    one_line_each(e, ne);
    free(o);
    free(e);
    /* capacity --frontier with the search's SLOs and --rate: its messages go to stderr,
     * caught here in a memory stream for the one-line check */
    char *argv[] = { "--frontier", (char *)path, "--slo", "ttft_p99=1", "--slo", "tpot_p99=0.05",
                     "--rate", "40", "--csv", "/dev/null", NULL };
    FILE *saved = stderr;
    e = NULL, ne = 0;
    if (!(stderr = open_memstream(&e, &ne))) abort();
    int rc3 = capacity_main(10, argv, "pacesim");
    fclose(stderr);
    stderr = saved;
    if (rc3 < 0 || rc3 > 2 || (rc3 == 2 && (ne == 0 || memchr(e, '\n', ne) != e + ne - 1))) abort();
    one_line_each(e, ne);
    free(e);
    return 0;
}
