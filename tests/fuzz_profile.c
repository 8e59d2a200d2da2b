/* fuzz_profile: libFuzzer harness for the profile loader (prof_load, through ydoc) and
 * the cost model's use of what it loads.  A profile that loads must also save and load
 * back with the same laws (prof_save writes exactly the format prof_load reads), and the
 * cost model must take every point's features, group its points and price their grids'
 * leave-one-out at the reference model in bounded time (libFuzzer's -timeout).  Any crash,
 * sanitizer report, leak, hang, a broken round trip, a non-finite feature or error, or an
 * error message that is not one line fails. */
#include <math.h>
#include "fuzz_common.h"
#include "cost.h"
#include "cost_grid.h"
#include "profile.h"
#include "scenario.h"

static model_t ref_model;
static model_rank_t ref_rank;

/* Every point's features, the grid and each law's leave-one-out: finite, and done. */
static void use_profile(const profile_t *p)
{
    cost_hw_t hw = cost_hw_of(p);
    for (int i = 0; i < p->nlaws; i++) {
        const prof_law_t *l = &p->laws[i];
        double feat[PROF_MAX_COEF], med, mx;
        int n;
        for (int j = 0; law_find(l->name) && j < l->npts; j++) {
            if (cost_point_features_n(l->name, l->pts + (size_t)j * l->ncols, l->ncols, &ref_model, &ref_rank, &hw,
                                      feat) < 0)
                continue;
            for (int c = 0; c < PROF_MAX_COEF; c++)
                if (!isfinite(feat[c])) abort();
            if (!isfinite(prof_eval(l, feat))) abort();
        }
        if (cost_grid_loo(l, &med, &mx, &n) < 0) abort();
        if (n > 0 && !(isfinite(med) && isfinite(mx))) abort();
    }
    cost_grid_t g;
    if (cost_grid_build(&g, p->laws, p->nlaws) < 0) abort();
    cost_grid_free(&g);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_setup("profile");
    char err[SCN_ERR_MAX];
    if (scn_load_model("models/qwen3.8-27b.yaml", &ref_model, err) < 0 || model_rank(&ref_model, 1, &ref_rank) < 0) {
        fprintf(stderr, "fuzz_profile: %s (run from the repository root)\n", err);
        abort();
    }
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
    use_profile(&p);
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
