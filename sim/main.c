/* main.c: the pacesim command line.
 *
 *   pacesim run FILE... [--set key.path=value]... [--sweep key.path=LIST]... [-j N]
 *               [--csv OUT] [--json OUT] [--steps OUT] [--requests OUT] [--trace OUT.json] [--quiet]
 *               [--no-progress] [--goodput ttft:MS tpot:MS e2el:MS] [--summary | --no-summary]
 *               [--objective max:COL|min:COL [--constraint 'COL<=1.10*base']...] [--error-bars P]
 *   pacesim points FILE... [--set ...] --sweep ... [-o DIR]   one command line per point
 *   pacesim merge CSV... [-o OUT]                              join per-point CSVs
 *   pacesim best CSV --objective ... [--constraint ...]        the objective over a CSV
 *   pacesim validate FILE...
 *   pacesim profile PROFILE.yaml...                            what a profile holds, how well
 *   pacesim rescore FILE --measured STEPS.csv [--set ...]     a GPU replay re-priced, no GPU
 *   pacesim trace import FORMAT FILE [-o OUT]                  a public trace as a CSV trace
 *   pacesim plot rate|cdf|tradeoff CSV [-o OUT]               gnuplot (plots/plot.sh)
 *   pacesim plot replicas [SCENARIO] [-o OUT]                  p99 TTFT by replicas and router, simulated
 *   pacesim replay FILE --gpu [...]                            bin/pacesim-gpu (the GPU build)
 *   pacesim --help | --version | COMMAND --help
 *
 * Exit codes: 0 ok, 1 runtime failure, 2 bad input (usage, scenario, profile). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <gsl/gsl_errno.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include "capacity.h"
#include "cost_scaled.h"
#include "profile_compare.h"
#include "replay.h"
#include "rescore.h"
#include "runner.h"
#include "serve.h"
#include "outfile.h"
#include "setup.h"
#include "hfimport.h"
#include "sweep.h"
#include "perfetto.h"
#include "plot_replicas.h"
#include "trace_import.h"
#include "ydoc.h"

#ifndef PACESIM_VERSION
#define PACESIM_VERSION "0.1.0"
#endif

/* The help of each command: its synopsis lines, then what it does and its options. */
typedef struct cmd_help {
    const char *name, *synopsis, *body;
} cmd_help_t;

static const cmd_help_t helps[] = {
    { "run",
      "pacesim run FILE... [--set key.path=value]... [--sweep key.path=LIST]... [-j N]\n"
      "                   [--csv OUT] [--json OUT] [--steps OUT] [--requests OUT] [--replicas OUT] [--trace OUT.json]\n"
      "                   [--quiet] [--no-progress] [--goodput ttft:MS tpot:MS e2el:MS] [--summary | --no-summary]\n"
      "                   [--objective max:COL|min:COL [--constraint 'COL<=1.10*base']...] [--error-bars P]\n",
      "run       simulate each scenario; print a result table per run (with the published\n"
      "          value and relative error for windows that carry a reference, while the run is\n"
      "          the file's configuration as written; latency windows over all requests also\n"
      "          get n, mean, p50, p90, p99).  Scenario keys: docs/scenarios.md\n"
      "  --set key.path=value   override any scenario key, e.g.\n"
      "                         --set env.VLLM_1CAT_PREFILL_PACE_STEPS=4\n"
      "                         --set workload.requests.B.prompt_tokens=131072\n"
      "  --sweep key.path=LIST  run every combination of the swept keys (the first --sweep is\n"
      "                         the outer loop; files outside all of them).  LIST: values and\n"
      "                         ranges, comma-separated: 0,1,2  1..16  1..16:2  0,4..8\n"
      "                         0.5..2:0.5 (decimal ranges print the ends' and step's decimals)\n"
      "                         The CSV gains a `point` column and one column per swept key.\n"
      "  -j N, --jobs N         runs in parallel (default: online CPUs); output is identical\n"
      "                         for every N\n"
      "  --csv OUT              one row per run: settings, step counts, the serving summary's\n"
      "                         columns (see --summary), a column per measurement window and,\n"
      "                         for a latency window over all requests, NAME_n, NAME_mean,\n"
      "                         NAME_p50, NAME_p90, NAME_p99 (RFC 4180; several runs: one\n"
      "                         header, the union of their columns)\n"
      "  --json OUT             the same runs as one JSON array, an object per run: settings,\n"
      "                         counts, the serving summary under vLLM's result keys, every\n"
      "                         window (value, published value, distribution)\n"
      "  --steps OUT            one row per engine step: time, duration, cost breakdown, rows\n"
      "                         with q, context and kernel route (one file; several runs: one\n"
      "                         header and a leading `run` column, and `point` with --sweep;\n"
      "                         a cluster's: a `replica` column before `step`)\n"
      "  --requests OUT         one row per request: id, arrival, admitted, first token,\n"
      "                         finished (s; empty: not reached), prompt, cached, output and\n"
      "                         emitted tokens, preemptions, TTFT, TPOT (finished requests as\n"
      "                         they finish, then the rest; several runs as --steps), the\n"
      "                         replica it ran on and, disaggregated, the replica that\n"
      "                         prefilled it and its KV transfer time (s)\n"
      "  --replicas OUT         one row per replica: its pool, TP, requests served and\n"
      "                         prefilled, steps, mean batch, mean and peak share of KV blocks\n"
      "                         in use, prefix-cache hit share, mean and peak waiting requests,\n"
      "                         busy share of the run (several runs as --steps).  The table\n"
      "                         prints a line per pool, and per replica up to 16 replicas;\n"
      "                         the CSV gets per pool pool_NAME_replicas ... _busy columns\n"
      "  --summary              vLLM's serving benchmark summary for every run (request, input,\n"
      "                         output and total token throughput; mean, median and p99 TTFT,\n"
      "                         TPOT, ITL, E2EL in ms, over the finished requests); by default\n"
      "                         it prints for serving loads (workload.poisson or .trace) and\n"
      "                         with --goodput; --no-summary: never.  CSV: the same columns\n"
      "  --goodput KEY:MS...    vLLM's goodput: the finished requests whose TTFT, TPOT and E2EL\n"
      "                         are within the objectives given (ttft:MS tpot:MS e2el:MS, any of\n"
      "                         them): good requests per second and their share\n"
      "  --trace OUT.json       the timeline of a single run in Chrome Trace Event format (open\n"
      "                         in ui.perfetto.dev or chrome://tracing)\n"
      "  --objective max:COL    after the runs, print the point of each file that maximises\n"
      "                         (min:COL minimises) CSV column COL ...\n"
      "  --constraint EXPR      ... among the points where EXPR holds: COL<=RHS (or <, >=, >),\n"
      "                         RHS a number, base, K*base, base*K, base+K or base-K; base is\n"
      "                         COL at the file's first point (every swept key at its first\n"
      "                         value), e.g. --constraint 'b_prefill_s<=1.10*base'; a point\n"
      "                         whose COL is empty (an undefined window) never wins, one\n"
      "                         whose COL holds text (inf, 0x10) is refused\n"
      "  --error-bars P         every run also simulated with every step costing (1 - P/100)\n"
      "                         and (1 + P/100) times its price (same seed, same arrivals; 0 < P\n"
      "                         <= 50, a percentage such as the profile's step-median error: 1-5\n"
      "                         on the H200 sets, README Accuracy): each window, latency\n"
      "                         statistic and serving figure gets low/high columns (the least\n"
      "                         and the most over the three runs: a queue may move a figure\n"
      "                         either way), the CSV COL_lo and COL_hi columns (the JSON an\n"
      "                         error_bars object), and a line names the figure that moves\n"
      "                         most per 1% of step error.  Three times the simulation work\n"
      "  --point-index N        number the first run N (the `point` column; used by `points`)\n"
      "  --quiet                no table on stdout\n"
      "  --no-progress          no progress bar (it is drawn only when stderr is a terminal)\n" },
    { "points", "pacesim points FILE... [--set ...] [--sweep ...] [--error-bars P] [-o DIR]\n",
      "points    print one `pacesim run` command per point (for GNU parallel, a cluster...);\n"
      "          each writes DIR/point-NNNN.csv (-o DIR, default points); then\n"
      "          `pacesim merge DIR/point-*.csv > all.csv` gives the CSV of the local sweep\n"
      "          (--error-bars P: each command runs with it)\n" },
    { "merge", "pacesim merge CSV... [-o OUT]\n", "merge     join per-point CSVs: one header (the union of their columns, empty where\n"
      "          a file has none), rows in point order; a missing, unreadable or empty file (a\n"
      "          failed point's) is refused, exit 2, and nothing is merged\n" },
    { "best", "pacesim best CSV --objective max:COL|min:COL [--constraint EXPR]...\n",
      "best      apply --objective/--constraint to a sweep CSV (e.g. a merged one); see run\n" },
    { "capacity",
      "pacesim capacity FILE --slo NAME=SECONDS... [--goodput SHARE] [--search key.path=LIST]... [--set key.path=value]...\n"
      "                   [--gpu-cost PROFILE=DOLLARS_PER_HOUR]... [--rate R] [--tol T] [-j N] [--csv OUT] [--quiet]\n"
      "                   [--no-progress] [--probes] [--error-bars P] [--points [-o DIR]]\n"
      "       pacesim capacity --frontier CSV [--slo NAME=SECONDS]... [--goodput SHARE] [--tol T] [--rate R] [--csv OUT]\n",
      "capacity  for every configuration of the search, the highest Poisson rate it sustains within\n"
      "          the SLOs (bisection on workload.poisson.rate_per_s, each probe workload.poisson.count\n"
      "          requests, the first and last 10% not measured, the queue checked for growth), its GPUs,\n"
      "          rate per GPU and per dollar: a table sorted by cost, the Pareto frontier (tok/s/GPU\n"
      "          against TTFT p99 and TPOT p99), the cheapest configuration carrying --rate (docs/capacity.md)\n"
      "  --slo NAME=SECONDS     a bound: ttft, tpot or e2el with _mean or _pNN (ttft_p99=2, tpot_p99=0.05);\n"
      "                         bare ttft/tpot/e2el are per-request thresholds, for --goodput\n"
      "  --goodput SHARE        the share of requests that must meet every per-request threshold (vLLM's goodput)\n"
      "  --search key.path=LIST the configurations, spelled as --sweep spells them; split=colocated,N,P:D:\n"
      "                         as written, N co-located replicas, P prefill + D decode replicas\n"
      "  --gpu-cost NAME=USD    a GPU's price an hour; NAME: the profile's file name (h200) or GPU, or analytic\n"
      "  --rate R               name the cheapest configuration that carries R req/s\n"
      "  --tol T                relative tolerance of the rate (default 0.02)\n"
      "  --error-bars P         every configuration also searched with every step costing (1 + P/100)\n"
      "                         and (1 - P/100) its price (0 < P <= 50): its rate as value [low, high],\n"
      "                         and whether the picks hold at +P%; the search runs 3 times\n"
      "  -j N, --jobs N         configurations searched at once (default: online CPUs); the output is\n"
      "                         the same for every N\n"
      "  --csv OUT              one row per configuration (plots/capacity.gp plots it)\n"
      "  --probes               every probe of every configuration on stderr: rate, pass or fail and why\n"
      "  --quiet                no table on stdout\n"
      "  --no-progress          no progress bar (it is drawn only when stderr is a terminal)\n"
      "  --points [-o DIR]      print one `pacesim capacity` command per configuration (each writes\n"
      "                         DIR/point-NNNN.csv; then pacesim merge, pacesim best)\n"
      "  --point-index N        number the first configuration N (the `point` column; used by --points)\n"
      "  --frontier CSV         no search: a merged capacity CSV with its frontier column filled (with the\n"
      "                         search's --slo [--rate]: its table too)\n" },
    { "validate", "pacesim validate FILE... [--set key.path=value]...\n",
      "validate  load and check scenarios (and their profiles) without running them\n" },
    { "profile", "pacesim profile PROFILE.yaml... | pacesim profile A.yaml --compare B.yaml [--scenario FILE]\n",
      "profile   a profile's metadata and, per law, its points, the fit's error against them and\n"
      "          the measured grid's leave-one-out error (what prices items inside the grid); the\n"
      "          sustained-load clocks and time constants pricing uses, where calib measured them;\n"
      "          --compare: where two profiles differ, law by law, on the items of the reference\n"
      "          experiment (scenarios/default.yaml, or --scenario FILE) and in their envelopes\n" },
    { "rescore", "pacesim rescore FILE --measured STEPS.csv [--measured RUN2.csv]... [--set key.path=value]... [--steps OUT]\n"
                 "                [--recorded-clock [--nvml-clock]] [--compute-hot | --no-compute-hot] [--no-recorded-idle]\n"
                 "                [-j N]\n",
      "rescore   a GPU replay (pacesim replay --steps STEPS.csv) priced again by this model\n"
      "          and the scenario's profile, no GPU needed: per step type the median/max error,\n"
      "          per window predicted beside measured (--set as given to the replay); with\n"
      "          several runs of the replay (each its own recording: one given twice is\n"
      "          refused), each error beside the runs' spread, inside or a\n"
      "          miss, each step type's attention apart from the rest of its steps (where\n"
      "          the recordings time it), each window predicted as the median of 24 runs\n"
      "          of the model at the GPU's own noise (read from the runs: a whole run's\n"
      "          and a step's, the steps the runs share paired), how far it moves at 1%\n"
      "          more step time, the run without noise beside it, calib's band (each window\n"
      "          at the ends of the range calib's traces gave the clock's time constants,\n"
      "          where the profile stores it, and whether it meets the runs' range), and the\n"
      "          step counts\n"
      "          (the profile run's also with each step type at the runs' time); --recorded-clock\n"
      "          (a diagnostic of the clock model, several runs): every step priced at the SM\n"
      "          clock its run recorded (its own over the step, sm_mhz_step, where every run\n"
      "          has it: pacesim-gpu replay --step-clock; else NVML's; --nvml-clock: NVML's\n"
      "          always), and the model's clock beside the recorded per step type;\n"
      "          where every run records the GPU's idle before each step (a back-to-back\n"
      "          replay's gap_s), the model's clock relaxes over it (--no-recorded-idle: not)\n"
      "          and a profile's compute-bound GEMM probe (calib's sustained.gemm_compute_hot)\n"
      "          prices the GEMMs at that clock, for runs in item order (each GEMM over every\n"
      "          layer in a row); runs queued layer by layer (--layer-order, an engine's\n"
      "          order, as a simulation prices) and runs without the idle take the gemm\n"
      "          law's heat, the probe not priced (the report says why); --no-compute-hot:\n"
      "          never; --compute-hot: always (a diagnostic; with --recorded-clock at the\n"
      "          recorded clocks); -j N: the noise ensemble's runs at once (default: online\n"
      "          CPUs; the output is the same for any N)\n" },
    { "model", "pacesim model import CONFIG.json [-o OUT.yaml] [--name NAME]\n",
      "model     import: a model file from a Hugging Face config.json (Llama, Mistral, Qwen2/3 dense\n"
      "          and MoE, Qwen3-Next, Mixtral, Gemma 1/2; others refused by name), to stdout or\n"
      "          OUT.yaml; each mapping cited in sim/hfimport.c\n" },
    { "trace", "pacesim trace import FORMAT FILE [-o OUT.csv] [--max-rows N] [--speedup K] [--max-model-len L]\n"
               "                   [--chars-per-token C] [--rate R] [--seed S] [--no-prune]\n",
      "trace     import a public trace as the CSV workload.trace reads (stdout or -o):\n"
      "          azure (Azure LLM inference 2023/2024: TIMESTAMP,ContextTokens,GeneratedTokens),\n"
      "          burstgpt (Timestamp, Request tokens, Response tokens; failed requests left out),\n"
      "          mooncake (JSON lines: timestamp ms, input_length, output_length, hash_ids of\n"
      "          512-token blocks: the hash_ids column, shared blocks on the block pool),\n"
      "          sharegpt (vLLM's ShareGPT JSON: first two turns, pruned as vLLM's benchmark\n"
      "          does unless --no-prune; tokens = ceil(characters / C), C = 4 unless\n"
      "          --chars-per-token: an approximation, no tokenizer; all arrive at 0, or\n"
      "          Poisson at --rate R a second).  Arrivals start at 0 and are divided by\n"
      "          --speedup (1e-7 to 1e7; an arrival past the clock's 1e7 s is a bad\n"
      "          record); --max-rows keeps the first N; --max-model-len L leaves out\n"
      "          requests of prompt + output > L.  A bad record: FILE:LINE:COL, exit 2\n" },
    { "plot", "pacesim plot rate|cdf|tradeoff CSV [-o OUT.png|OUT.svg] [--x COL] [--y COL,...] [--logy] [--title T]\n"
      "       pacesim plot replicas [SCENARIO | DATA.csv] [-o OUT] [--rates LIST] [--replicas LIST] [--routers LIST]\n"
      "                   [--set key.path=value]... [--data OUT.csv] [-j N] [--title T]\n",
      "plot      draw pacesim's CSVs with gnuplot (plots/plot.sh), PNG or SVG by -o's extension:\n"
      "          rate: latency against load from a sweep's CSV (x the first swept key or --x;\n"
      "          y the serving summary's p99 and median TTFT and TPOT, or --y; a run\n"
      "          --error-bars sweep's ranges as error bars); cdf: one run's\n"
      "          --requests CSV as latency CDFs; tradeoff: a PACE_STEPS sweep's trade-off.\n"
      "          replicas: p99 TTFT against the rate per replica, a panel per router, a curve\n"
      "          per number of replicas, simulated: the scenario (default scenarios/cluster/\n"
      "          h200-llama8b-chat.yaml; one engine or a cluster of one pool) with its pool at\n"
      "          each of --replicas (1,2,4,8), each router it accepts (or --routers),\n"
      "          workload.poisson.rate_per_s = rate x\n"
      "          replicas for each of --rates per replica (4..14:2; each in (0, 1e6], given\n"
      "          once) and its count x replicas (at most 10000 runs and 200000 requests\n"
      "          in all; --replicas each in [1, 4096], a cluster's limit);\n"
      "          --data keeps the runs' CSV (a DATA.csv given instead of a scenario is drawn)\n" },
    { "replay", "pacesim replay FILE --gpu [--set key.path=value]... [--steps OUT] [--items OUT] [--back-to-back]\n"
                "                [--layer-order] [--step-clock]\n",
      "replay    run every step on the GPU beside the profile's prediction (bin/pacesim-gpu, the\n"
      "          nvcc build; docs/validation.md, \"H200: GPU replays\"); --back-to-back prepares a\n"
      "          step's items first and queues them on one stream, one sync a step, as an engine does;\n"
      "          --layer-order (with it) queues them layer by layer, as a forward pass runs them;\n"
      "          --step-clock records each step's SM clock over the step itself (sm_mhz_step)\n" },
};
#define NHELPS ((int)(sizeof helps / sizeof helps[0]))

static void usage(FILE *f)
{
    for (int i = 0; i < NHELPS; i++) fprintf(f, "%s%s", i ? "       " : "usage: ", helps[i].synopsis);
    fputs("       pacesim COMMAND --help | pacesim --help | --version\n\n", f);
    for (int i = 0; i < NHELPS; i++) fputs(helps[i].body, f);
    fputs("\nExit status: 0 ok, 1 runtime failure, 2 bad input.\n", f);
}

/* `pacesim CMD --help` (or -h anywhere among its arguments): that command's help on stdout. */
static int command_help(const char *cmd, int argc, char **argv)
{
    int asked = 0;
    for (int i = 0; i < argc; i++) asked |= !strcmp(argv[i], "--help") || !strcmp(argv[i], "-h");
    if (!asked) return 0;
    for (int i = 0; i < NHELPS; i++)
        if (!strcmp(helps[i].name, cmd)) {
            printf("usage: %s\n%s\nScenario keys: docs/scenarios.md.  Exit status: 0 ok, 1 runtime failure, "
                   "2 bad input.\n", helps[i].synopsis, helps[i].body);
            return 1;
        }
    return 0;
}

/* The outputs of a run (opt[i] names out[i], NULL: not asked): no file given to two of them
 * (each would truncate the other's rows) nor one of the inputs ("-", stdout, may be shared).
 * 0, or 2 with one line on stderr. */
static int outputs_distinct(const char *const *opt, const char *const *out, int n, const char *const *in, int nin)
{
    for (int i = 0; i < n; i++) {
        if (!out[i] || !strcmp(out[i], "-")) continue;
        struct stat st;             /* a character device (/dev/null) takes both: nothing to overwrite */
        int chardev = stat(out[i], &st) == 0 && S_ISCHR(st.st_mode);
        for (int k = i + 1; k < n && !chardev; k++)
            if (out[k] && strcmp(out[k], "-") && outfile_same(out[i], out[k])) {
                setup_msg(stderr, "pacesim: %s %s and %s %s: one file for two outputs (each would overwrite the other)",
                          opt[i], out[i], opt[k], out[k]);
                return 2;
            }
        for (int k = 0; k < nin; k++)
            if (outfile_same(out[i], in[k])) {
                setup_msg(stderr, "pacesim: %s %s: that is an input of the run (it would be overwritten)", opt[i], out[i]);
                return 2;
            }
    }
    return 0;
}

/* Close an output (stdout, or "-", is only flushed): a write error (a full device) is
 * reported in one line and makes the status 1, unless an earlier error (rc != 0) was
 * reported already.  The new status. */
static int close_out(FILE *f, const char *name, int rc)
{
    if (!f) return rc;
    int bad = ferror(f) != 0, err = 0;
    errno = 0;
    if (fflush(f) != 0) bad = 1, err = errno;
    if (f != stdout && fclose(f) != 0) {
        bad = 1;
        if (!err) err = errno;
    }
    if (!bad || rc != 0) return rc;
    setup_msg(stderr, "pacesim: %s: write error%s%s", f == stdout ? "stdout" : name, err ? ": " : "", err ? strerror(err) : "");
    return 1;
}

enum { CMD_RUN, CMD_VALIDATE, CMD_POINTS, CMD_BEST };

static const char *argv0 = "pacesim";

/* --error-bars P: a percentage, 0 < P <= 50 ("3" or "3%"). */
static int parse_error_bars(const char *v, double *out)
{
    return setup_opt_pct("pacesim", v, out);
}

/* A --goodput pair: a name of letters and digits, then ':' (a scenario file is not one). */
static int is_slo_pair(const char *a)
{
    const char *c = strchr(a, ':');
    if (!c || c == a) return 0;
    for (const char *p = a; p < c; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9'))) return 0;
    return 1;
}

/* pacesim validate: each file assembled as `run` assembles it (setup.h), and its whole
 * trace read; so it refuses what `run` refuses, with the same message. */
static int validate_files(const char **files, int nf, const char **sets, int ns)
{
    int rc = 0;
    for (int i = 0; i < nf; i++) {
        setup_t u;
        if (setup_open(&u, files[i], sets, ns) < 0 || setup_check_trace(&u) < 0) {
            fprintf(stderr, "%s\n", u.err);
            rc = 2;
        } else {
            fputs(u.warn, stderr);
            setup_msg(stdout, "%s: ok (%s)", files[i], u.s.name);
        }
        setup_close(&u);
    }
    return rc;
}

/* A loader's message about a swept value: its "--set KEY:" said as the user gave it,
 * "pacesim: --sweep KEY=VAL:"; any other message as it is. */
static void sweep_msg(const char *m, const sweep_t *sw, int a, int v)
{
    for (int b = 0; b < sw->naxes; b++) {
        size_t kl = strlen(sw->axes[b].key);
        if ((a < 0 || b == a) && !strncmp(m, "--set ", 6) && !strncmp(m + 6, sw->axes[b].key, kl) && m[6 + kl] == ':') {
            setup_msg(stderr, "pacesim: --sweep %s=%s:%s", sw->axes[b].key, sw->axes[b].vals[a < 0 ? 0 : v], m + 7 + kl);
            return;
        }
    }
    setup_msg(stderr, "%s", m);
}

/* pacesim run and points with --sweep: each file assembled as its first point's run
 * assembles it (the --set values, then every swept key at its first value), and each
 * further value of each swept key loaded with the others at their first values, so that a
 * missing file, a bad key or a bad swept value is refused here with its one line (exit 2),
 * not once by every run or printed command that carries it. */
static int points_check(const char **files, int nf, const char **sets, int ns, const sweep_t *sw)
{
    int naxes = sw->naxes, n = 0, rc = 0;
    const char **all = calloc((size_t)ns + (size_t)naxes + 1, sizeof *all);
    char **own = calloc((size_t)naxes + 1, sizeof *own);
    if (!all || !own) {
        fprintf(stderr, "pacesim: out of memory\n");
        rc = 1;
        goto out;
    }
    for (int i = 0; i < ns; i++) all[n++] = sets[i];
    for (int a = 0; a < naxes; a++) {
        size_t len = strlen(sw->axes[a].key) + strlen(sw->axes[a].vals[0]) + 2;
        if (!(own[a] = malloc(len))) {
            fprintf(stderr, "pacesim: out of memory\n");
            rc = 1;
            goto out;
        }
        snprintf(own[a], len, "%s=%s", sw->axes[a].key, sw->axes[a].vals[0]);
        all[n++] = own[a];
    }
    for (int i = 0; i < nf && !rc; i++) {
        setup_t u;
        if (setup_open(&u, files[i], all, n) < 0) {
            sweep_msg(u.err, sw, -1, 0);
            rc = 2;
        }
        setup_close(&u);
    }
    for (int i = 0; i < nf && !rc; i++)
        for (int a = 0; a < naxes && !rc; a++)
            for (int v = 1; v < sw->axes[a].n && !rc; v++) {
                size_t len = strlen(sw->axes[a].key) + strlen(sw->axes[a].vals[v]) + 2;
                char *kv = malloc(len);
                if (!kv) {
                    fprintf(stderr, "pacesim: out of memory\n");
                    rc = 1;
                    break;
                }
                snprintf(kv, len, "%s=%s", sw->axes[a].key, sw->axes[a].vals[v]);
                all[ns + a] = kv;
                scenario_t sc;
                char err[SCN_ERR_MAX];
                if (scn_load(files[i], all, n, &sc, err) < 0) {
                    sweep_msg(err, sw, a, v);
                    rc = 2;
                } else {
                    scn_free(&sc);
                }
                all[ns + a] = own[a];
                free(kv);
            }
out:
    for (int a = 0; own && a < naxes; a++) free(own[a]);
    free(own);
    free(all);
    return rc;
}

/* Whether `pacesim run`'s parser, shared by validate, points and best, lets command cmd take
 * option a (its name up to any '='): each only those its --help lists, so that an option it
 * would ignore (validate --csv, run -o) is refused. */
static int cmd_run_takes(int cmd, const char *a)
{
    static const char *const points[] = { "--set", "--sweep", "--error-bars", "-o", "--out", NULL };
    static const char *const best[] = { "--objective", "--constraint", NULL };
    static const char *const validate[] = { "--set", NULL };
    const char *const *ok = cmd == CMD_POINTS ? points : cmd == CMD_BEST ? best : cmd == CMD_VALIDATE ? validate : NULL;
    size_t l = strcspn(a, "=");
    if (!ok) return strcmp(a, "-o") && strncmp(a, "--out", l > 5 ? l : 5);   /* run: every one but points' -o */
    for (int k = 0; ok[k]; k++)
        if (strlen(ok[k]) == l && !strncmp(a, ok[k], l)) return 1;
    return 0;
}

static int cmd_run(int argc, char **argv, int cmd)
{
    const char **files = calloc((size_t)argc + 1, sizeof *files);
    const char **sets = calloc((size_t)argc + 1, sizeof *sets);
    const char **cons = calloc((size_t)argc + 1, sizeof *cons);
    const char *csv = NULL, *json = NULL, *steps = NULL, *requests = NULL, *replicas = NULL, *trace = NULL,
               *objective = NULL, *outdir = "points";
    int nf = 0, ns = 0, nc = 0, quiet = 0, progress = isatty(2), rc = 0, summary = 0;
    goodput_slo_t slo = GOODPUT_SLO_NONE;
    long jobs = sysconf(_SC_NPROCESSORS_ONLN), point_base = 0;
    double error_bars = 0;
    const char *error_bars_arg = NULL;
    unsigned seen_once = 0;
    sweep_t sw = { 0 };
    FILE *fc = NULL, *fs = NULL, *fr = NULL, *fj = NULL, *fp = NULL;
    perfetto_t *tr = NULL;
    if (!files || !sets || !cons) { rc = 1; goto out; }
    if (jobs < 1) jobs = 1;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] == '-' && a[1] && !cmd_run_takes(cmd, a)) {
            static const char *const name[] = { "run", "validate", "points", "best" };
            setup_msg(stderr, "pacesim %s: %.*s is not an option of %s (see pacesim %s --help)", name[cmd],
                      (int)strcspn(a, "="), a, name[cmd], name[cmd]);
            rc = 2;
            goto out;
        }
        static const char *const valued[] = { "--set", "--csv", "--steps", "--sweep", "-j", "--jobs", "--trace",
                                              "--point-index", "--objective", "--constraint", "-o", "--out",
                                              "--requests", "--json", "--replicas", "--error-bars", NULL };
        const char *v = NULL, *opt = a;
        char optbuf[32];
        for (int k = 0; valued[k]; k++) {
            size_t l = strlen(valued[k]);
            if (!strcmp(a, valued[k])) {
                if (i + 1 >= argc) {
                    fprintf(stderr, "pacesim: %s needs a value\n", a);
                    rc = 2;
                    goto out;
                }
                v = argv[++i];
                opt = valued[k];
                break;
            }
            if (!strncmp(a, valued[k], l) && a[l] == '=' && valued[k][1] == '-') {
                v = a + l + 1;
                snprintf(optbuf, sizeof optbuf, "%s", valued[k]);
                opt = optbuf;
                break;
            }
        }
        if (!strcmp(a, "--goodput") || !strncmp(a, "--goodput=", 10)) {
            /* vLLM's --goodput KEY:MS [KEY:MS...]: the pairs that follow (a name of letters and digits, ':') */
            int given = 0;
            char gerr[256];
            if (a[9] == '=' && goodput_slo_parse(&slo, a + 10, gerr, sizeof gerr) < 0) {
                setup_msg(stderr, "pacesim: %s", gerr);
                rc = 2;
                goto out;
            }
            given = a[9] == '=';
            while (!given || (i + 1 < argc && is_slo_pair(argv[i + 1]))) {
                if (i + 1 >= argc || !is_slo_pair(argv[i + 1])) {
                    fprintf(stderr, "pacesim: --goodput needs KEY:MS pairs (ttft:MS tpot:MS e2el:MS)\n");
                    rc = 2;
                    goto out;
                }
                if (goodput_slo_parse(&slo, argv[++i], gerr, sizeof gerr) < 0) {
                    setup_msg(stderr, "pacesim: %s", gerr);
                    rc = 2;
                    goto out;
                }
                given = 1;
            }
            continue;
        }
        if (!v && !strncmp(a, "-j", 2) && a[2]) {
            v = a + 2;
            opt = "-j";
        }
        if (v) {
            /* an option of one value given twice: the first would be dropped unsaid */
            static const char *const once[] = { "--csv", "--steps", "-j|--jobs", "--trace", "--point-index",
                                                "--objective", "-o|--out", "--requests", "--json", "--replicas",
                                                "--error-bars", NULL };
            if (setup_opt_twice(&seen_once, once, opt)) {
                fprintf(stderr, "pacesim: %s given twice\n", opt);
                rc = 2;
                goto out;
            }
            static const char *const paths[] = { "--csv", "--json", "--steps", "--requests", "--replicas", "--trace",
                                                 "-o", "--out", NULL };
            for (int k = 0; paths[k]; k++)   /* at parsing: --trace and -o (a folder) open no outfile */
                if (!strcmp(opt, paths[k]) && outfile_optlike(opt, v)) {
                    rc = 2;
                    goto out;
                }
            if (!strcmp(opt, "--set")) {
                if (!strchr(v, '=')) {
                    setup_msg(stderr, "pacesim: --set %s: expected key.path=value", v);
                    rc = 2;
                    goto out;
                }
                sets[ns++] = v;
            } else if (!strcmp(opt, "--sweep")) {
                char err[SWEEP_ERR_MAX];
                if (sweep_add(&sw, v, err, sizeof err) < 0) {
                    setup_msg(stderr, "pacesim: %s", err);
                    rc = 2;
                    goto out;
                }
            } else if (!strcmp(opt, "-j") || !strcmp(opt, "--jobs")) {
                if (setup_opt_long("pacesim", opt, v, 1, &jobs) < 0) { rc = 2; goto out; }
                if (jobs > 1024) jobs = 1024;
            } else if (!strcmp(opt, "--error-bars")) {
                if (parse_error_bars(v, &error_bars) < 0) { rc = 2; goto out; }
                error_bars_arg = v;
            } else if (!strcmp(opt, "--point-index")) {
                if (setup_opt_long("pacesim", opt, v, 0, &point_base) < 0) { rc = 2; goto out; }
            } else if (!strcmp(opt, "--csv")) {
                csv = v;
            } else if (!strcmp(opt, "--json")) {
                json = v;
            } else if (!strcmp(opt, "--steps")) {
                steps = v;
            } else if (!strcmp(opt, "--requests")) {
                requests = v;
            } else if (!strcmp(opt, "--replicas")) {
                replicas = v;
            } else if (!strcmp(opt, "--trace")) {
                trace = v;
            } else if (!strcmp(opt, "--objective")) {
                objective = v;
            } else if (!strcmp(opt, "--constraint")) {
                cons[nc++] = v;
            } else {
                outdir = v;
            }
        } else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) {
            quiet = 1;
        } else if (!strcmp(a, "--no-progress")) {
            progress = 0;
        } else if (!strcmp(a, "--summary")) {
            summary = 1;
        } else if (!strcmp(a, "--no-summary")) {
            summary = -1;
        } else if (a[0] == '-' && a[1]) {
            setup_msg(stderr, "pacesim: unknown option %s (see pacesim --help)", a);
            rc = 2;
            goto out;
        } else {
            files[nf++] = a;
        }
    }
    if (nf == 0) {
        fprintf(stderr, "pacesim: no %s file given (see pacesim --help)\n", cmd == CMD_BEST ? "CSV" : "scenario");
        rc = 2;
        goto out;
    }
    {
        char cerr[SWEEP_ERR_MAX];
        if (sweep_set_clash(sets, ns, &sw, "--sweep", cerr, sizeof cerr)) {
            setup_msg(stderr, "pacesim: %s", cerr);
            rc = 2;
            goto out;
        }
    }
    if (cmd == CMD_VALIDATE) {
        rc = validate_files(files, nf, sets, ns);
        goto out;
    }
    if (cmd == CMD_POINTS) {
        const char *eb[] = { "--error-bars", error_bars_arg };
        if ((rc = points_check(files, nf, sets, ns, &sw)) == 0)
            rc = sweep_print_points_ex(stdout, stderr, argv0, "run", "--sweep", files, nf, sets, ns, eb,
                                       error_bars_arg ? 2 : 0, &sw, outdir);
        goto out;
    }
    if (cmd == CMD_BEST) {
        rc = sweep_best_files(files, nf, objective, cons, nc, stdout, stderr);
        goto out;
    }
    long njobs = sweep_npoints(&sw) * nf;
    if (sw.naxes && (rc = points_check(files, nf, sets, ns, &sw))) goto out;
    if (trace && njobs != 1) {
        fprintf(stderr, "pacesim: --trace needs exactly one run (one file, one point); this is %ld\n", njobs);
        rc = 2;
        goto out;
    }
    if (nc && !objective) {
        fprintf(stderr, "pacesim: --constraint needs --objective max:COL or min:COL\n");
        rc = 2;
        goto out;
    }
    {
        const char *const oname[] = { "--csv", "--json", "--steps", "--requests", "--trace", "--replicas" };
        const char *const opath[] = { csv, json, steps, requests, trace, replicas };
        if ((rc = outputs_distinct(oname, opath, 6, files, nf))) goto out;
        for (int i = 0; i < nf; i++) {  /* nor a file the scenario reads: opening it emptied the profile */
            scenario_t sc;
            char serr[SCN_ERR_MAX];
            if (scn_load(files[i], sets, ns, &sc, serr) < 0) {   /* refused before any file runs */
                setup_msg(stderr, "%s", serr);
                rc = 2;
                goto out;
            }
            const char *in[SCN_MAX_INPUTS];
            rc = outputs_distinct(oname, opath, 6, in, scn_input_files(&sc, in));
            scn_free(&sc);
            if (rc) goto out;
        }
    }
    if (csv && !(fc = outfile_open(csv))) { rc = 2; goto out; }
    if (json && !(fj = outfile_open(json))) { rc = 2; goto out; }
    if (steps && !(fs = outfile_open(steps))) { rc = 2; goto out; }
    if (requests && !(fr = outfile_open(requests))) { rc = 2; goto out; }
    if (replicas && !(fp = outfile_open(replicas))) { rc = 2; goto out; }
    runner_hooks_t th = { 0 };
    if (trace) {
        char err[256];
        if (!(tr = perfetto_open(trace, err, sizeof err))) {
            setup_msg(stderr, "pacesim: %s", err);
            rc = 2;
            goto out;
        }
        perfetto_hooks(tr, &th);
    }
    sweep_cfg_t cfg = {
        .files = files, .nfiles = nf, .sets = sets, .nsets = ns, .sw = &sw, .point_base = point_base,
        .jobs = (int)jobs, .table = quiet ? NULL : stdout, .csv = fc, .json = fj, .steps = fs, .requests = fr, .replicas = fp, .err = stderr,
        .best = fc == stdout ? stderr : stdout, .progress = progress, .hooks = tr ? &th : NULL,
        .objective = objective, .constraints = cons, .nconstraints = nc,
        .summary = summary, .goodput = goodput_slo_any(&slo) ? &slo : NULL, .error_bars = error_bars,
    };
    rc = sweep_run(&cfg);
    if (tr && perfetto_close(tr) < 0 && rc == 0) rc = 1;
    tr = NULL;
out:
    if (tr) perfetto_close(tr);
    rc = close_out(fc, csv, rc);
    rc = close_out(fj, json, rc);
    rc = close_out(fs, steps, rc);
    rc = close_out(fr, requests, rc);
    rc = close_out(fp, replicas, rc);
    sweep_free(&sw);
    free(files);
    free(sets);
    free(cons);
    return rc;
}

static int cmd_merge(int argc, char **argv)
{
    const char **files = calloc((size_t)argc + 1, sizeof *files);
    const char *outp = NULL;
    int nf = 0, rc;
    if (!files) return 1;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--out")) {
            const char *why = i + 1 >= argc ? "needs a value" : outp ? "given twice" : NULL;
            if (why) {
                fprintf(stderr, "pacesim merge: %s %s\n", argv[i], why);
                free(files);
                return 2;
            }
            outp = argv[++i];
        } else if (argv[i][0] == '-' && argv[i][1]) {
            setup_msg(stderr, "pacesim merge: unknown option %s (see pacesim --help)", argv[i]);
            free(files);
            return 2;
        } else files[nf++] = argv[i];
    }
    if (nf == 0) {
        fprintf(stderr, "pacesim merge: no CSV file given\n");
        free(files);
        return 2;
    }
    for (int i = 0; outp && i < nf; i++)
        if (outfile_same(outp, files[i])) {     /* opening it would empty it before it is read */
            setup_msg(stderr, "pacesim merge: -o %s: that is a CSV it merges (it would be overwritten)", outp);
            free(files);
            return 2;
        }
    FILE *out = outp ? outfile_open(outp) : stdout;
    if (!out) {
        free(files);
        return 2;
    }
    rc = sweep_merge(files, nf, out, stderr);
    rc = close_out(out, outp ? outp : "stdout", rc);
    free(files);
    return rc;
}
/* pacesim profile: metadata, and per law its points, its fit's error (the law against
 * the points) and its grid's leave-one-out error (what the simulator uses inside the grid). */
static int cmd_profile(int argc, char **argv)
{
    int rc = 0;
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "--compare")) return profile_compare_cmd(argc, argv, stdout);
    if (argc < 1) {
        fprintf(stderr, "pacesim: profile needs a profile file\n");
        return 2;
    }
    for (int i = 0; i < argc; i++)      /* an option is no profile (--scenario was read as one) */
        if (argv[i][0] == '-' && argv[i][1]) {
            setup_msg(stderr, "pacesim: profile: %s %s", argv[i], !strcmp(argv[i], "--scenario")
                      ? "takes --compare (pacesim profile A.yaml --compare B.yaml --scenario FILE)"
                      : "is not an option of profile (pacesim profile PROFILE.yaml... or A.yaml --compare B.yaml)");
            return 2;
        }
    for (int i = 0; i < argc; i++) {
        profile_t p;
        char err[PROF_ERR_MAX];
        if (prof_load(argv[i], &p, err) < 0) {
            setup_msg(stderr, "%s", err);
            rc = 2;
            continue;
        }
        printf("== %s: %s, %d SMs, %.1f GiB, %.0f GB/s, %.0f TFLOP/s fp16, TP%d, model %s\n", argv[i], p.gpu, p.sms,
               p.mem_gib, p.mem_bw_gbs, p.peak_fp16_tflops, p.tp, p.model);
        printf("   %s%s%s\n", p.date, p.revision[0] ? ", revision " : "", p.revision);
        printf("   %-28s %6s %21s %24s\n", "law", "points", "fit: median / max", "grid LOO: median / max");
        for (int k = 0; k < p.nlaws; k++) {
            const prof_law_t *l = &p.laws[k];
            double med, mx;
            int n;
            printf("   %-28s %6d ", l->name, l->npts);
            if (l->fit_median_rel >= 0) printf("%9.1f%% / %6.1f%%", 100 * l->fit_median_rel, 100 * l->fit_max_rel);
            else printf("%21s", "-");
            if (cost_grid_loo(l, &med, &mx, &n) == 0 && n > 0) printf(" %12.1f%% / %6.1f%%  (%d)\n", 100 * med, 100 * mx, n);
            else printf(" %24s\n", "-");
        }
        if (p.has_sustained) {   /* the clock model's card: what the heat state prices with */
            printf("   sustained load: %.0f MHz under a light load, %.0f MHz under the heater; the clock falls in "
                   "%.0f ms", p.clock_cold_mhz, p.clock_hot_mhz, 1e3 * prof_tau_up(&p));
            if (p.tau_up_runs_s > 0) printf(" (a compute-bound GEMM's own times; NVML's trace %.0f ms)", 1e3 * p.tau_up_s);
            else printf(" (NVML's trace)");
            printf(", recovers in %.0f ms\n", 1e3 * p.tau_down_s);
            if (p.ngprobe) printf("   GEMMs after the heater over after the light load, two passes (recorded, not priced):\n");
            for (int q = 0; q < p.ngprobe; q++) {
                char shape[96];
                snprintf(shape, sizeof shape, "gemm %.0f x %.0f x %.0f", p.gprobe[q][0], p.gprobe[q][1], p.gprobe[q][2]);
                printf("   %-40s %8.3f ms  %.3f  %.3f\n", shape, 1e3 * p.gprobe[q][3], p.gprobe[q][4], p.gprobe[q][5]);
            }
        }
        if (p.has_envelope) prof_envelope_print(stdout, &p);
        prof_free(&p);
    }
    return rc;
}

/* Two files of the same bytes (both readable regular files; else 0: their reader reports them). */
static int same_bytes(const char *a, const char *b)
{
    const char *why;
    FILE *fa = yd_open_input(a, &why), *fb = fa ? yd_open_input(b, &why) : NULL;
    int same = fa && fb;
    while (same) {
        int ca = getc(fa), cb = getc(fb);
        if (ca != cb) same = 0;
        if (ca == EOF || cb == EOF) break;
    }
    if (fa) fclose(fa);
    if (fb) fclose(fb);
    return same;
}

/* pacesim rescore FILE --measured STEPS.csv [--set k=v]... [--steps OUT.csv]: a GPU replay
 * priced again by the current model and profile, with no GPU: the scenario runs twice
 * through the same scheduler, once priced by its profile, once by the recording (each
 * step what the replay measured), and the replay's report comes out of the two. */
static int cmd_rescore(int argc, char **argv)
{
    enum { MAX_SETS = 64 };
    const char *file = NULL, *measured = NULL, *steps = NULL, *sets[MAX_SETS], *runs[RESCORE_MAX_RUNS];
    int ns = 0, nruns = 0, recorded_clock = 0, nvml_clock = 0, compute_hot = -1, recorded_idle = 1, jobs_given = 0;
    long jobs = sysconf(_SC_NPROCESSORS_ONLN);
    for (int i = 0; i < argc; i++) {
        if (i + 1 == argc && (!strcmp(argv[i], "--set") || !strcmp(argv[i], "--measured") || !strcmp(argv[i], "--steps") ||
                              !strcmp(argv[i], "-j") || !strcmp(argv[i], "--jobs"))) {
            fprintf(stderr, "pacesim: rescore: %s needs a value\n", argv[i]);
            return 2;
        }
        if (!strcmp(argv[i], "-j") || !strcmp(argv[i], "--jobs")) {
            if (jobs_given++) {
                fprintf(stderr, "pacesim: rescore: -j|--jobs given twice\n");
                return 2;
            }
            if (setup_opt_long("pacesim: rescore", argv[i], argv[i + 1], 1, &jobs) < 0) return 2;
            if (jobs > 1024) jobs = 1024;
            i++;
        }
        else if (!strcmp(argv[i], "--recorded-clock")) recorded_clock = 1;
        else if (!strcmp(argv[i], "--nvml-clock")) nvml_clock = 1;
        else if (!strcmp(argv[i], "--no-recorded-idle")) recorded_idle = 0;
        else if (!strcmp(argv[i], "--compute-hot") || !strcmp(argv[i], "--no-compute-hot")) {
            int on = argv[i][2] == 'c';
            if (compute_hot == !on) {
                fprintf(stderr, "pacesim: rescore: --compute-hot and --no-compute-hot together\n");
                return 2;
            }
            compute_hot = on;
        }
        else if (!strcmp(argv[i], "--set") && i + 1 < argc) {
            if (ns == MAX_SETS) {
                fprintf(stderr, "pacesim: rescore: at most %d --set\n", MAX_SETS);
                return 2;
            }
            sets[ns++] = argv[++i];
        } else if (!strcmp(argv[i], "--measured") && i + 1 < argc) {
            if (nruns == RESCORE_MAX_RUNS) {
                fprintf(stderr, "pacesim: rescore: at most %d --measured\n", RESCORE_MAX_RUNS);
                return 2;
            }
            measured = runs[nruns++] = argv[++i];
        }
        else if (!strcmp(argv[i], "--steps") && i + 1 < argc) {
            if (steps) {                /* which one is meant? */
                fprintf(stderr, "pacesim: rescore: --steps given twice\n");
                return 2;
            }
            steps = argv[++i];
        } else if (argv[i][0] == '-' || file) {
            setup_msg(stderr, "pacesim: rescore: unexpected argument %s (see pacesim --help)", argv[i]);
            return 2;
        } else file = argv[i];
    }
    if (!file || !measured) {
        fprintf(stderr, "pacesim: rescore needs a scenario and --measured STEPS.csv (a replay's --steps file)\n");
        return 2;
    }
    if (nvml_clock && !recorded_clock) {
        fprintf(stderr, "pacesim: rescore: --nvml-clock chooses the clock --recorded-clock prices at: give both\n");
        return 2;
    }
    if (nvml_clock) recorded_clock = 2;   /* NVML's reading even where the runs stamped their steps */
    {
        char cerr[SWEEP_ERR_MAX];
        if (sweep_set_clash(sets, ns, NULL, "--sweep", cerr, sizeof cerr)) {
            setup_msg(stderr, "pacesim: rescore: %s", cerr);
            return 2;
        }
    }
    setup_t u;
    cost_model_t *pm2 = NULL, *rm = NULL;
    FILE *fs = NULL;                    /* --steps */
    engine_t eg;
    char cerr[COST_ERR_MAX];
    int rc = 0;
    memset(&eg, 0, sizeof eg);
    if (setup_open(&u, file, sets, ns) < 0 || !u.has_prof) {
        const char *none = "pacesim: rescore needs the scenario's profile (the prediction)";
        fprintf(stderr, "%s\n", u.has_scn && !u.s.profile_path[0] ? none : u.err);
        rc = 2;
        goto done;
    }
    fputs(u.warn, stderr);
    if (u.s.cluster.enabled) {    /* a replay ran one engine; a cluster's other replicas priced by the profile */
        const char *why = "cluster: rescore prices the steps of one engine (a replay's); give a scenario without cluster:";
        if (u.s.cluster.line > 0) setup_msg(stderr, "%s:%d:%d: %s", file, u.s.cluster.line, u.s.cluster.col, why);
        else setup_msg(stderr, "pacesim: rescore: --set %s", why);
        rc = 2;
        goto done;
    }
    if (recorded_clock && nruns < 2) {
        fprintf(stderr, "pacesim: rescore: --recorded-clock takes two or more --measured runs\n");
        rc = 2;
        goto done;
    }
    for (int i = 0; i < nruns; i++)   /* one recording twice: a spread of 0 that no GPU gave */
        for (int j = 0; j < i; j++)
            if (outfile_same(runs[i], runs[j]) || same_bytes(runs[i], runs[j])) {
                setup_msg(stderr, "--measured %s: the same recording as --measured %s%s: the runs' spread would be 0",
                          runs[i], runs[j], outfile_same(runs[i], runs[j]) ? "" : " (byte for byte)");
                rc = 2;
                goto done;
            }
    for (int i = 0; steps && i <= nruns; i++)   /* --steps over an input: it replaced the recording */
        if (outfile_same(steps, i < nruns ? runs[i] : file)) {
            setup_msg(stderr, "pacesim: rescore: --steps %s: that is %s it reads (it would be overwritten)", steps,
                      i < nruns ? "a recording" : "the scenario");
            rc = 2;
            goto done;
        }
    if (steps) {                  /* nor a file the scenario reads: opening it emptied the profile */
        const char *const oname[] = { "--steps" }, *const opath[] = { steps };
        const char *in[SCN_MAX_INPUTS];
        if ((rc = outputs_distinct(oname, opath, 1, in, scn_input_files(&u.s, in)))) goto done;
    }
    if (nruns > 1) {              /* several measured runs: error beside their spread */
        char rerr[SETUP_ERR_MAX];
        if (steps) {
            fprintf(stderr, "pacesim: rescore: --steps takes one --measured run\n");
            rc = 2;
            goto done;
        }
        int r = rescore_runs(stdout, &u, file, runs, nruns, recorded_clock, compute_hot, recorded_idle,
                             jobs < 1 ? 1 : (int)jobs, rerr, sizeof rerr);
        if (r < 0) setup_msg(stderr, "%s", rerr);
        rc = r == -2 ? 2 : r < 0 ? 1 : 0;
        goto done;
    }
    if (!(pm2 = setup_cost_new(&u)) || !(rm = replay_recorded_new(measured, pm2, cerr))) {
        setup_msg(stderr, "%s", pm2 ? cerr : u.err);
        rc = 2;
        goto done;
    }
    /* after the recording is read (a malformed one leaves --steps' file as it was), before the
     * run: a FIFO without a reader is refused */
    if (steps && !(fs = outfile_open(steps))) {
        rc = 2;
        goto done;
    }
    cost_profile_envelope_quiet(pm2);   /* the profile run warns; the recorded run is measured */
    const double *gap;
    long ng = replay_recorded_gaps(rm, &gap);
    if (ng && recorded_idle) {          /* the recorded GPU idle before each step (rescore_runs) */
        cost_profile_idle_schedule(pm2, gap, ng);
        cost_profile_idle_schedule(u.cost, gap, ng);
    }
    long la = 0, lst = 0;               /* steps layer by layer: the engine's order, no probe */
    if (!replay_recorded_layer_order(rm, &la, &lst)) la = lst = 0;
    int probe = rescore_probe(&u, compute_hot, ng && recorded_idle, ng && !recorded_idle, la, lst, NULL);
    cost_profile_compute_hot(pm2, probe ? 2 : 0);   /* calib's GEMM probe at the model's clock, or not */
    cost_profile_compute_hot(u.cost, probe ? 2 : 0);
    if (engine_run(&u.e) < 0) {
        setup_msg(stderr, "%s", u.e.err);
        rc = 1;
        goto done;
    }
    int ran = setup_engine(&u, rm, &eg) == 0 && engine_run(&eg) == 0;
    char mis[SETUP_ERR_MAX];
    if (replay_recorded_mismatch(rm, ran, mis, sizeof mis)) {   /* a recording of another scenario: bad input */
        setup_msg(stderr, "%s", mis);
        rc = 2;
        goto done;
    }
    if (!ran) {
        setup_msg(stderr, "%s: %s", measured, eg.err);
        rc = 1;
        goto done;
    }
    long n, nrec;
    const replay_rec_t *rec = replay_recorded_records(rm, &n, &nrec);
    if (fs) {
        FILE *fw = fs;
        fs = NULL;                      /* replay_steps_csv closes it */
        if (replay_steps_csv(fw, rec, n) < 0) {
            setup_msg(stderr, "pacesim: %s: %s", steps, strerror(errno));
            rc = 1;
            goto done;
        }
    }
    if (replay_report(stdout, &u.s, file, u.prof.gpu, rec, n, &u.e, &eg) < 0) rc = 1;
    else if (compute_hot > 0) printf("   compute-bound GEMMs by calib's probe at the model's clock (--compute-hot)\n");
    else rescore_probe(&u, compute_hot, ng && recorded_idle, ng && !recorded_idle, la, lst, stdout);
done:
    if (fs && fs != stdout) fclose(fs);
    engine_free(&eg);
    if (rm) cost_free(rm);
    cost_free(pm2);
    setup_close(&u);
    return rc;
}

/* path: rel in this binary's directory (as argv[0] names it), else fallback. */
static void beside_binary(char *path, size_t size, const char *rel, const char *fallback)
{
    const char *slash = strrchr(argv0, '/');
    if (slash) snprintf(path, size, "%.*s/%s", (int)(slash - argv0), argv0, rel);
    else snprintf(path, size, "%s", fallback);
}

/* This process replaced by the program path, run with sub (where not NULL) and then argv's
 * argc words.  Returns only if that failed: 1, said in one line ("who: path: why"). */
static int exec_tool(const char *who, char *path, char *sub, int argc, char **argv)
{
    char **av = calloc((size_t)argc + 3, sizeof *av);
    if (!av) {
        fprintf(stderr, "pacesim: out of memory\n");
        return 1;
    }
    int n = 0;
    av[n++] = path;
    if (sub) av[n++] = sub;
    for (int i = 0; i < argc; i++) av[n++] = argv[i];
    fflush(stdout);
    execv(path, av);
    setup_msg(stderr, "%s: %s: %s", who, path, strerror(errno));
    free(av);
    return 1;
}

/* pacesim replay FILE --gpu [...]: the GPU replay lives in its own binary (it links CUDA,
 * cuBLAS and the kernels; the CPU build never does): run pacesim-gpu from beside this one. */
static int cmd_replay(int argc, char **argv)
{
    char path[4096];
    beside_binary(path, sizeof path, "pacesim-gpu", "pacesim-gpu");
    if (access(path, X_OK) != 0) {
        setup_msg(stderr, "pacesim: replay needs the GPU build (%s): `make bin/pacesim-gpu` with nvcc; "
                          "`pacesim rescore` re-prices a recorded replay without one", path);
        return 2;
    }
    return exec_tool("pacesim", path, "replay", argc, argv);
}

/* pacesim model import CONFIG.json [-o OUT] [--name NAME] */
static int cmd_model(int argc, char **argv)
{
    const char *cfg = NULL, *outp = NULL, *name = NULL;
    if (argc < 1 || strcmp(argv[0], "import")) {
        setup_msg(stderr, "pacesim model: expected `import CONFIG.json [-o OUT.yaml] [--name NAME]`");
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--name")) {
            const char **v = argv[i][1] == 'o' ? &outp : &name;
            if (i + 1 >= argc || *v) {   /* a second one: which is meant? */
                fprintf(stderr, "pacesim model import: %s %s\n", argv[i], *v ? "given twice" : "needs a value");
                return 2;
            }
            *v = argv[++i];
            for (const char *p = *v; v == &name && *p; p++)
                if ((unsigned char)*p < 0x20 || *p == 0x7f) {   /* a name is one line of text */
                    fprintf(stderr, "pacesim model import: --name: a control character at byte %d\n", (int)(p - *v) + 1);
                    return 2;
                }
            if (v == &name && !**v) {
                fprintf(stderr, "pacesim model import: --name: empty (leave it out for the file's name)\n");
                return 2;
            }
        } else if (argv[i][0] == '-' && argv[i][1]) {
            setup_msg(stderr, "pacesim model import: unknown option \"%s\"", argv[i]);
            return 2;
        } else if (!cfg) {
            cfg = argv[i];
        } else {
            setup_msg(stderr, "pacesim model import: one CONFIG.json at a time (got \"%s\" too)", argv[i]);
            return 2;
        }
    }
    if (!cfg) {
        setup_msg(stderr, "pacesim model import: expected CONFIG.json");
        return 2;
    }
    char err[1024];
    char *text = NULL;
    size_t n = 0;
    FILE *mem = open_memstream(&text, &n);
    if (!mem) {
        setup_msg(stderr, "pacesim model import: out of memory");
        return 1;
    }
    int rc = hf_import(cfg, name, mem, stderr, err, sizeof err);
    fclose(mem);
    if (rc < 0) {
        free(text);
        setup_msg(stderr, "%s", err);
        return rc == -1 ? 2 : 1;
    }
    if (outp && outfile_same(outp, cfg)) {
        free(text);
        setup_msg(stderr, "-o %s: that is the config it reads (it would be overwritten)", outp);
        return 2;
    }
    FILE *o = outp ? outfile_open(outp) : stdout;   /* no hang on a FIFO without a reader */
    if (!o) {
        free(text);
        return 2;
    }
    fwrite(text, 1, n, o);
    free(text);
    if (outp && fclose(o) != 0) {
        setup_msg(stderr, "%s: cannot write: %s", outp, strerror(errno));
        return 1;
    }
    return 0;
}

/* pacesim plot ...: plots/plot.sh (gnuplot) beside the binary's tree (BIN/../plots), else ./plots. */
static int cmd_plot(int argc, char **argv)
{
    char path[4096];
    beside_binary(path, sizeof path, "../plots/plot.sh", "plots/plot.sh");
    if (access(path, X_OK) != 0) snprintf(path, sizeof path, "plots/plot.sh");
    if (access(path, X_OK) != 0) {
        setup_msg(stderr, "pacesim plot: plots/plot.sh not found beside the binary or here (run from the repository)");
        return 1;
    }
    if (argc >= 1 && !strcmp(argv[0], "replicas")) return plot_replicas_main(argc - 1, argv + 1, path);
    return exec_tool("pacesim plot", path, NULL, argc, argv);
}

/* pacesim trace import FORMAT FILE [options]: trace_import.h. */
static int cmd_trace(int argc, char **argv)
{
    if (argc < 1 || strcmp(argv[0], "import")) {
        fprintf(stderr, "pacesim trace: expected `pacesim trace import FORMAT FILE` (see pacesim trace --help)\n");
        return 2;
    }
    trace_import_opts_t o = trace_import_defaults();
    const char *in = NULL, *outp = NULL, *sg_only = NULL;
    unsigned seen_once = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        /* an option of one value given twice: the first would be dropped unsaid */
        static const char *const once[] = { "-o|--out", "--max-rows", "--speedup", "--max-model-len",
                                            "--chars-per-token", "--rate", "--seed", NULL };
        if (setup_opt_twice(&seen_once, once, a)) {
            fprintf(stderr, "pacesim trace import: %s given twice\n", a);
            return 2;
        }
        if (!strcmp(a, "--no-prune") || !strcmp(a, "--chars-per-token") || !strcmp(a, "--rate") || !strcmp(a, "--seed"))
            sg_only = a;
        int valued = !strcmp(a, "-o") || !strcmp(a, "--out") || !strcmp(a, "--max-rows") || !strcmp(a, "--speedup")
                     || !strcmp(a, "--max-model-len") || !strcmp(a, "--chars-per-token") || !strcmp(a, "--rate")
                     || !strcmp(a, "--seed");
        if (valued && i + 1 >= argc) {
            fprintf(stderr, "pacesim trace import: %s needs a value\n", a);
            return 2;
        }
        const char *v = valued ? argv[++i] : NULL;
        char *end = NULL;
        double x = v ? strtod(v, &end) : 0;
        int num_ok = v && *v && end && !*end && isfinite(x);
        if (!strcmp(a, "-o") || !strcmp(a, "--out")) outp = v;
        else if (!strcmp(a, "--no-prune")) o.no_prune = 1;
        else if (valued && !strcmp(a, "--seed") && num_ok && x >= 0 && x == (double)(unsigned long)x) o.seed = (unsigned long)x;
        else if (valued && !strcmp(a, "--max-rows") && num_ok && x >= 1 && x == floor(x) && x < 1e15) o.max_rows = (long)x;
        else if (valued && !strcmp(a, "--max-model-len") && num_ok && x >= 2 && x == floor(x) && x < 1e15) o.max_model_len = (long)x;
        else if (valued && !strcmp(a, "--speedup") && num_ok && x >= TRACE_IMPORT_SPEEDUP_MIN && x <= TRACE_IMPORT_SPEEDUP_MAX)
            o.speedup = x;
        else if (valued && !strcmp(a, "--speedup")) {
            setup_msg(stderr, "pacesim trace import: --speedup %s: expected a number from %g to %g (the simulated clock"
                      " holds arrivals up to %g s: below, one second of the trace passes it; above, that span of"
                      " it shrinks under one second)", v, TRACE_IMPORT_SPEEDUP_MIN, TRACE_IMPORT_SPEEDUP_MAX,
                      SIM_CLOCK_MAX_S);
            return 2;
        }
        else if (valued && !strcmp(a, "--chars-per-token") && num_ok && x > 0) o.chars_per_token = x;
        else if (valued && !strcmp(a, "--rate") && num_ok && x > 0) o.rate = x;
        else if (valued) {
            setup_msg(stderr, "pacesim trace import: %s %s: expected a %s", a, v,
                      !strcmp(a, "--max-rows") || !strcmp(a, "--seed") ? "whole number" : !strcmp(a, "--max-model-len")
                      ? "whole number >= 2" : "number > 0");
            return 2;
        } else if (a[0] == '-' && a[1]) {
            setup_msg(stderr, "pacesim trace import: unknown option %s (see pacesim trace --help)", a);
            return 2;
        } else if (!o.format) o.format = a;
        else if (!in) in = a;
        else {
            setup_msg(stderr, "pacesim trace import: one FORMAT and one FILE (%s is a third)", a);
            return 2;
        }
    }
    if (!o.format || !in) {
        fprintf(stderr, "pacesim trace import: expected FORMAT FILE (azure, burstgpt, mooncake, sharegpt)\n");
        return 2;
    }
    if (sg_only && (!strcmp(o.format, "azure") || !strcmp(o.format, "burstgpt") || !strcmp(o.format, "mooncake"))) {
        setup_msg(stderr, "pacesim trace import: %s is sharegpt's (a %s trace's arrivals and lengths are its own)", sg_only,
                  o.format);
        return 2;
    }
    if (outp && outfile_same(outp, in)) {         /* opening it would empty it before it is read */
        setup_msg(stderr, "pacesim trace import: -o %s: that is the trace it reads (it would be overwritten)", outp);
        return 2;
    }
    FILE *out = outp ? outfile_open(outp) : stdout;
    if (!out) return 2;
    trace_import_stats_t st;
    char err[1024];
    int rc = trace_import(in, out, &o, &st, err, sizeof err);
    if (rc) setup_msg(stderr, "%s", err);
    rc = close_out(out, outp ? outp : "stdout", rc);
    struct stat ost;
    if (rc && outp && out != stdout && stat(outp, &ost) == 0 && S_ISREG(ost.st_mode))
        unlink(outp);             /* no part of a CSV left to pass for a whole one */
    if (!rc)                      /* the summary only for a CSV written whole */
        fprintf(stderr, "trace import: %ld requests from %ld records of %s, the last arriving at %.3f s (left out: %ld"
                        " failed or empty, %ld past --max-model-len, %ld pruned or under two turns)\n",
                st.written, st.rows, in, st.span_s, st.skipped_failed, st.skipped_len, st.skipped_pruned);
    return rc;
}

static int run_command(int argc, char **argv)
{
    gsl_set_error_handler_off();
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || (!strcmp(cmd, "help") && argc == 2)) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version")) {
        printf("pacesim %s\n", PACESIM_VERSION);
        return 0;
    }
    if (!strcmp(cmd, "help") && argc > 2) {
        char *h[] = { "--help" };
        if (command_help(argv[2], 1, h)) return 0;
    }
    if (command_help(cmd, argc - 2, argv + 2)) return 0;
    if (!strcmp(cmd, "run")) return cmd_run(argc - 2, argv + 2, CMD_RUN);
    if (!strcmp(cmd, "validate")) return cmd_run(argc - 2, argv + 2, CMD_VALIDATE);
    if (!strcmp(cmd, "points")) return cmd_run(argc - 2, argv + 2, CMD_POINTS);
    if (!strcmp(cmd, "best")) return cmd_run(argc - 2, argv + 2, CMD_BEST);
    if (!strcmp(cmd, "merge")) return cmd_merge(argc - 2, argv + 2);
    if (!strcmp(cmd, "capacity")) return capacity_main(argc - 2, argv + 2, argv0);
    if (!strcmp(cmd, "profile")) return cmd_profile(argc - 2, argv + 2);
    if (!strcmp(cmd, "rescore")) return cmd_rescore(argc - 2, argv + 2);
    if (!strcmp(cmd, "replay")) return cmd_replay(argc - 2, argv + 2);
    if (!strcmp(cmd, "trace")) return cmd_trace(argc - 2, argv + 2);
    if (!strcmp(cmd, "plot")) return cmd_plot(argc - 2, argv + 2);
    if (!strcmp(cmd, "model")) return cmd_model(argc - 2, argv + 2);
    setup_msg(stderr, "pacesim: unknown command \"%s\" (see pacesim --help)", cmd);
    return 2;
}

int main(int argc, char **argv)
{
    argv0 = argv[0];
    return close_out(stdout, "stdout", run_command(argc, argv));
}
