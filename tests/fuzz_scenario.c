/* fuzz_scenario: libFuzzer harness for the scenario loader (scn_load, and through it
 * ydoc and the model loader).  An input that loads is also run, bounded to 300 engine
 * steps (no trace: a fuzzed trace path could name a device), so the engine sees fuzzed
 * settings too.  Any crash, sanitizer report, leak, or an error message that is not one
 * line fails.  Built and run by `make fuzz` / `make check-fuzz` (tests/tests.mk). */
#include "fuzz_common.h"
#include "engine.h"
#include <gsl/gsl_errno.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    gsl_set_error_handler_off();
    fuzz_setup("scenario");
    return 0;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    const char *path = fuzz_write("in.yaml", data, size);
    scenario_t s;
    char err[SCN_ERR_MAX];
    if (scn_load(path, NULL, 0, &s, err) < 0) {
        if (!err[0] || strchr(err, '\n')) abort();    /* one line, always */
        return 0;
    }
    if (!s.trace_path[0] && !s.profile_path[0] && s.analytic) {
        cost_model_t *cm = cost_analytic_new(&s.model, s.engine.tensor_parallel_size, s.analytic_tflops,
                                             s.analytic_tbps);
        if (cm) {
            engine_t e;
            s.stop.max_steps = 300;
            if (engine_init(&e, &s, cm, NULL) == 0) engine_run(&e);
            engine_free(&e);
            cost_free(cm);
        }
    }
    scn_free(&s);
    return 0;
}
