/* fuzz_profile: libFuzzer harness for the profile loader (prof_load, through ydoc).
 * A profile that loads must also save and load back with the same laws (prof_save
 * writes exactly the format prof_load reads).  Any crash, sanitizer report, leak, a
 * broken round trip, or an error message that is not one line fails. */
#include "fuzz_common.h"
#include "profile.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_setup("profile");
    return 0;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    const char *path = fuzz_write("prof.yaml", data, size);
    profile_t p, q;
    char err[PROF_ERR_MAX];
    if (prof_load(path, &p, err) < 0) {
        if (!err[0] || strchr(err, '\n')) abort();
        return 0;
    }
    const char *out = fuzz_write("saved.yaml", (const unsigned char *)"", 0);
    if (prof_save(out, &p) < 0) abort();
    if (prof_load(out, &q, err) < 0) {
        fprintf(stderr, "fuzz_profile: a saved profile does not load back: %s\n", err);
        abort();
    }
    if (q.nlaws != p.nlaws || strcmp(q.gpu, p.gpu)) abort();
    for (int i = 0; i < p.nlaws; i++)
        if (q.laws[i].ncoef != p.laws[i].ncoef || q.laws[i].npts != p.laws[i].npts ||
            memcmp(q.laws[i].coef, p.laws[i].coef, sizeof p.laws[i].coef) || strcmp(q.laws[i].name, p.laws[i].name))
            abort();
    prof_free(&q);
    prof_free(&p);
    return 0;
}
