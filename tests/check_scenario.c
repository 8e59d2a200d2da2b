/* check_scenario: the scenario/model loader and the YAML layer under it (ydoc).
 * Run from the repository root (paths like scenarios/default.yaml are relative). */
#include <check.h>
#include "check_run.h"
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scenario.h"
#include "ydoc.h"

static char tmpdir[64];

static void mk_tmpdir(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/check_scenario.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void rm_tmpdir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    ck_assert_int_eq(system(cmd), 0);
}

/* Write text to tmpdir/name; returns the path (static buffer). */
static const char *write_tmp(const char *name, const char *text)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
    return path;
}

/* ---------------------------------------------------------------------------------- */
/* the reference scenario                                                              */

START_TEST(default_loads)
{
    scenario_t s;
    char err[SCN_ERR_MAX];
    ck_assert_msg(scn_load("scenarios/default.yaml", NULL, 0, &s, err) == 0, "%s", err);
    ck_assert_str_eq(s.name, "v100-fp16-b16k-baseline");
    ck_assert_uint_eq(s.seed, 1);
    ck_assert_str_eq(s.model.name, "qwen3.8-27b");
    ck_assert_int_eq(s.model.n_layers, 64);
    ck_assert_int_eq(s.model.n_full_attn, 16);
    ck_assert_int_eq(s.model.n_gdn, 48);
    ck_assert_int_eq(s.model.hidden, 5120);
    ck_assert_int_eq(s.model.intermediate, 17408);
    ck_assert_int_eq(s.model.vocab, 248320);
    ck_assert_int_eq(s.model.n_q_heads, 24);
    ck_assert_int_eq(s.model.n_kv_heads, 4);
    ck_assert_int_eq(s.model.head_dim, 256);
    ck_assert_int_eq(s.model.attn_output_gate, 1);
    ck_assert_int_eq(s.model.gdn_k_heads, 16);
    ck_assert_int_eq(s.model.gdn_v_heads, 48);
    ck_assert_int_eq(s.model.gdn_head_dim_k, 128);
    ck_assert_int_eq(s.model.gdn_head_dim_v, 128);
    ck_assert_int_eq(s.model.gdn_conv_kernel, 4);
    ck_assert_int_eq(s.model.gdn_state_bytes, 4);
    ck_assert_int_eq(s.model.gdn_conv_bytes, 2);
    ck_assert_double_eq(s.model.weight_bytes_per_param, 0.5625);
    ck_assert_int_eq(s.model.mtp_layers, 1);
    ck_assert_str_eq(s.model_path, "scenarios/../models/qwen3.8-27b.yaml");
    ck_assert_str_eq(s.profile_path, "scenarios/../calib/profiles/v100-pcie-32gb-tp2.yaml");
    ck_assert_int_eq(s.analytic, 0);
    /* the model's derived block size is the published 784 */
    ck_assert_int_eq(model_block_size(&s.model, 2, 2, 0), 784);

    ck_assert_int_eq(s.engine.max_num_batched_tokens, 2048);
    ck_assert_int_eq(s.engine.max_num_seqs, 3);
    ck_assert_int_eq(s.engine.max_model_len, 262144);
    ck_assert_int_eq(s.engine.enable_prefix_caching, 1);
    ck_assert_int_eq(s.engine.kv_cache_dtype, KV_FP16);
    ck_assert_int_eq(s.engine.tensor_parallel_size, 2);
    ck_assert_int_eq(s.engine.block_size, 0);
    ck_assert_int_eq(s.engine.num_gpu_blocks, 0);
    ck_assert_double_eq(s.engine.gpu_memory_utilization, 0.9);
    ck_assert_int_eq(s.engine.spec_mtp, 0);

    ck_assert_int_eq(s.env.pace_steps, 0);
    ck_assert_int_eq(s.env.prefix_decode_rows, 0);
    ck_assert_int_eq(s.env.smallq_decode_max_q, 16);
    ck_assert_int_eq(s.env.d256_bm32_any_page, 0);

    ck_assert_int_eq(s.n_requests, 2);
    ck_assert_str_eq(s.requests[0].id, "A");
    ck_assert_int_eq(s.requests[0].prompt_tokens, 240000);
    ck_assert_int_eq(s.requests[0].cached_tokens, 240000);
    ck_assert_int_eq(s.requests[0].output_tokens, 100000);
    ck_assert_int_eq(s.requests[0].arrival.kind, TRIG_TIME);
    ck_assert_double_eq(s.requests[0].arrival.time_s, 0);
    ck_assert_str_eq(s.requests[1].id, "B");
    ck_assert_int_eq(s.requests[1].prompt_tokens, 16384);
    ck_assert_int_eq(s.requests[1].cached_tokens, 0);
    ck_assert_int_eq(s.requests[1].output_tokens, 32);
    ck_assert_int_eq(s.requests[1].arrival.kind, TRIG_AFTER_DECODED);
    ck_assert_str_eq(s.requests[1].arrival.ref, "A");
    ck_assert_int_eq(s.requests[1].arrival.decoded, 8);
    ck_assert_double_eq(s.requests[1].arrival.delay_s, 0);
    ck_assert_int_eq(s.poisson.enabled, 0);
    ck_assert_str_eq(s.trace_path, "");

    ck_assert_int_eq(s.n_windows, 5);
    const scn_window_t *w = s.windows;
    ck_assert_str_eq(w[0].name, "a_tok_s");
    ck_assert_int_eq(w[0].kind, WIN_RATE);
    ck_assert_str_eq(w[0].request, "A");
    ck_assert_int_eq(w[0].from.is_set, 1);
    ck_assert_str_eq(w[0].from.ref, "B");
    ck_assert_int_eq(w[0].from.event, EV_ADMITTED);
    ck_assert_str_eq(w[0].to.ref, "B");
    ck_assert_int_eq(w[0].to.event, EV_FIRST_TOKEN);
    ck_assert_int_eq(w[0].has_reference, 1);
    ck_assert_double_eq(w[0].reference, 0.62);
    ck_assert_str_eq(w[1].name, "b_prefill_s");
    ck_assert_int_eq(w[1].kind, WIN_DURATION);
    ck_assert_double_eq(w[1].reference, 33.9);
    ck_assert_int_eq(w[2].kind, WIN_TTFT);
    ck_assert_str_eq(w[2].request, "B");
    ck_assert_int_eq(w[2].has_reference, 0);
    ck_assert_int_eq(w[3].kind, WIN_STEPS);
    ck_assert_int_eq(w[3].step_type, STEP_MIXED);
    ck_assert_int_eq(w[4].kind, WIN_TPOT);
    ck_assert_str_eq(w[4].request, "A");
    ck_assert_int_eq(w[4].from.is_set, 0);

    ck_assert_int_eq(s.stop.kind, 1);
    ck_assert_str_eq(s.stop.ref, "B");
    ck_assert_int_eq(s.stop.event, EV_FINISHED);
    ck_assert_double_eq(s.stop.max_time_s, 3600);
    ck_assert_int_eq(s.stop.max_steps, 0);
    ck_assert_str_eq(s.reference_source, "SPEC §1, 2x Tesla V100-PCIE-32GB, TP2 (published)");
    scn_free(&s);
    ck_assert_ptr_null(s.requests);
    ck_assert_ptr_null(s.windows);
}
END_TEST

START_TEST(model_file_loads)
{
    model_t m;
    char err[SCN_ERR_MAX];
    ck_assert_msg(scn_load_model("models/qwen3.8-27b.yaml", &m, err) == 0, "%s", err);
    ck_assert_int_eq(m.n_layers, 64);
    ck_assert_int_eq(m.n_gdn, 48);
    ck_assert_int_eq(m.n_full_attn + m.n_gdn, m.n_layers);
    ck_assert_int_eq(scn_load_model("models/nope.yaml", &m, err), -1);
    ck_assert_str_eq(err, "models/nope.yaml: cannot open: No such file or directory");
}
END_TEST

START_TEST(names)
{
    ck_assert_str_eq(scn_event_name(EV_ARRIVAL), "arrival");
    ck_assert_str_eq(scn_event_name(EV_ADMITTED), "admitted");
    ck_assert_str_eq(scn_event_name(EV_FIRST_TOKEN), "first_token");
    ck_assert_str_eq(scn_event_name(EV_FINISHED), "finished");
    ck_assert_str_eq(scn_step_type_name(STEP_ANY), "any");
    ck_assert_str_eq(scn_step_type_name(STEP_DECODE_ONLY), "decode_only");
    ck_assert_str_eq(scn_step_type_name(STEP_MIXED), "mixed");
    ck_assert_str_eq(scn_step_type_name(STEP_PREFILL_ONLY), "prefill_only");
}
END_TEST

/* Loading twice gives the same scenario, field for field. */
START_TEST(deterministic)
{
    scenario_t a, b;
    char err[SCN_ERR_MAX];
    const char *sets[] = {"workload.requests.B.prompt_tokens=131072"};
    ck_assert_msg(scn_load("scenarios/default.yaml", sets, 1, &a, err) == 0, "%s", err);
    ck_assert_msg(scn_load("scenarios/default.yaml", sets, 1, &b, err) == 0, "%s", err);
    ck_assert_int_eq(a.n_requests, b.n_requests);
    ck_assert_int_eq(a.n_windows, b.n_windows);
    ck_assert_int_eq(memcmp(a.requests, b.requests, (size_t)a.n_requests * sizeof *a.requests), 0);
    ck_assert_int_eq(memcmp(a.windows, b.windows, (size_t)a.n_windows * sizeof *a.windows), 0);
    ck_assert_int_eq(memcmp(&a.model, &b.model, sizeof a.model), 0);
    ck_assert_int_eq(memcmp(&a.engine, &b.engine, sizeof a.engine), 0);
    ck_assert_int_eq(memcmp(&a.env, &b.env, sizeof a.env), 0);
    ck_assert_int_eq(memcmp(&a.stop, &b.stop, sizeof a.stop), 0);
    ck_assert_int_eq(memcmp(&a.poisson, &b.poisson, sizeof a.poisson), 0);
    ck_assert_int_eq(memcmp(&a.accept, &b.accept, sizeof a.accept), 0);
    scn_free(&a);
    scn_free(&b);
}
END_TEST

/* ---------------------------------------------------------------------------------- */
/* overrides                                                                           */

START_TEST(override_forms)
{
    scenario_t s;
    char err[SCN_ERR_MAX];
    const char *sets[] = {
        "workload.requests.1.prompt_tokens=131072",        /* by index */
        "workload.requests.B.output_tokens=64",            /* by id */
        "workload.requests[0].cached_tokens=1000",         /* bracket index */
        "engine.speculative_config={method: mtp, num_speculative_tokens: 4}",
        "mtp_acceptance.per_position=[0.9, 0.8, 0.7, 0.6]", /* creates the mapping */
        "engine.kv_cache_dtype=fp8_e5m2",
        "env.VLLM_1CAT_PREFILL_PACE_STEPS=4",
        "seed=7",
        "stop=",                                           /* null: defaults */
        "workload.requests.B.arrival={after: A, event: first_token, delay_s: 0.5}",
    };
    ck_assert_msg(scn_load("scenarios/default.yaml", sets, 10, &s, err) == 0, "%s", err);
    ck_assert_int_eq(s.requests[1].prompt_tokens, 131072);
    ck_assert_int_eq(s.requests[1].output_tokens, 64);
    ck_assert_int_eq(s.requests[0].cached_tokens, 1000);
    ck_assert_int_eq(s.engine.spec_mtp, 1);
    ck_assert_int_eq(s.engine.num_speculative_tokens, 4);
    ck_assert_int_eq(s.accept.per_position, 1);
    ck_assert_int_eq(s.accept.n_probs, 4);
    ck_assert_double_eq(s.accept.probs[0], 0.9);
    ck_assert_double_eq(s.accept.probs[3], 0.6);
    ck_assert_int_eq(s.engine.kv_cache_dtype, KV_FP8_E5M2);
    ck_assert_int_eq(s.env.pace_steps, 4);
    ck_assert_uint_eq(s.seed, 7);
    ck_assert_int_eq(s.stop.kind, 0);
    ck_assert_double_eq(s.stop.max_time_s, 86400);
    ck_assert_int_eq(s.requests[1].arrival.kind, TRIG_AFTER_EVENT);
    ck_assert_int_eq(s.requests[1].arrival.event, EV_FIRST_TOKEN);
    ck_assert_double_eq(s.requests[1].arrival.delay_s, 0.5);
    scn_free(&s);

    const char *hw[] = {"profile=", "hardware.analytic={tflops: 125, tbps: 0.9}"};
    ck_assert_msg(scn_load("scenarios/default.yaml", hw, 2, &s, err) == 0, "%s", err);
    ck_assert_int_eq(s.analytic, 1);
    ck_assert_str_eq(s.profile_path, "");
    ck_assert_double_eq(s.analytic_tflops, 125);
    ck_assert_double_eq(s.analytic_tbps, 0.9);
    scn_free(&s);
}
END_TEST

typedef struct bad_set {
    const char *set;
    const char *want;      /* the whole error line */
} bad_set_t;

static const bad_set_t bad_sets[] = {
    {"engine.max_num_seqs=-3", "--set engine.max_num_seqs: expected a positive integer, got \"-3\""},
    {"engine.foo=1", "--set engine.foo: unknown key \"foo\" (allowed: max_num_batched_tokens, "
     "max_num_seqs, max_model_len, enable_prefix_caching, kv_cache_dtype, tensor_parallel_size, "
     "block_size, num_gpu_blocks, gpu_memory_utilization, speculative_config, scheduler, "
     "mamba_cache_mode, enable_chunked_prefill, long_prefill_token_threshold, max_num_partial_prefills, "
     "max_long_partial_prefills, scheduling_policy, attention_backend, "
     "prefix_cache_model, prefix_cache_retention_interval)"},
    {"workload.requests.5.prompt_tokens=1",
     "--set workload.requests.5.prompt_tokens: index 5 out of range (the list has 2 elements)"},
    {"workload.requests.C.prompt_tokens=1",
     "--set workload.requests.C.prompt_tokens: no list element with id \"C\""},
    {"engine.max_num_seqs", "--set engine.max_num_seqs: expected key.path=value"},
    {"engine.max_num_seqs=[1", "--set engine.max_num_seqs: syntax error: did not find expected "
     "',' or ']' while parsing a flow sequence"},
    {"engine.max_num_seqs.x=1", "--set engine.max_num_seqs.x: \"x\" is inside a scalar value"},
    {"engine..x=1", "--set engine..x: empty component in key path"},
    {"engine.speculative_config={method: eagle, num_speculative_tokens: 2}",
     "--set engine.speculative_config: engine.speculative_config.method: only methods mtp and dflash2 are "
     "modelled, got \"eagle\""},
    {"engine.speculative_config={method: mtp}",
     "--set engine.speculative_config: missing required key \"num_speculative_tokens\""},
};

START_TEST(override_bad)
{
    scenario_t s;
    char err[SCN_ERR_MAX];
    const char *set = bad_sets[_i].set;
    ck_assert_int_eq(scn_load("scenarios/default.yaml", &set, 1, &s, err), -1);
    ck_assert_str_eq(err, bad_sets[_i].want);
    ck_assert_ptr_null(s.requests);
    ck_assert_ptr_null(s.windows);
}
END_TEST

/* An error at the key a --set names is said once: "--set K: message" (it read "--set K: K: message"). */
START_TEST(override_key_once)
{
    scenario_t s;
    char err[SCN_ERR_MAX];
    const char *set = "cluster.pools.x={count: 1}";
    ck_assert_int_eq(scn_load("tests/data/capacity/disagg.yaml", &set, 1, &s, err), -1);
    ck_assert_str_eq(err, "--set cluster.pools.x: a pool of role both (the default) beside prefill and decode pools is not"
                          " modelled: give every pool role prefill or decode");
}
END_TEST

/* ---------------------------------------------------------------------------------- */
/* invalid scenarios: each must fail with this position and key path                   */

#define HDR "model: models/qwen3.8-27b.yaml\nprofile: p.yaml\n"             /* lines 1-2 */
#define WL  "workload:\n  requests:\n    - {id: A, prompt_tokens: 100, output_tokens: 10}\n" /* 3-5 */

typedef struct bad {
    const char *yaml;
    const char *want;      /* substring of the error, after the file name */
} bad_t;

static const bad_t bads[] = {
    /* 0 */ {HDR WL "engine:\n  max_num_seqs: -3\n",
             ":7:17: engine.max_num_seqs: expected a positive integer, got \"-3\""},
    {HDR WL "foo: 1\n", ":6:1: foo: unknown key \"foo\" (allowed: name, description, seed,"},
    {HDR WL "engine:\n  max_num_seqs: 3\n  max_num_seqs: 4\n",
     ":8:3: engine.max_num_seqs: duplicate key \"max_num_seqs\" (first at line 7)"},
    {HDR WL "engine:\n  max_num_batched_tokens: 2048.0\n",
     ":7:27: engine.max_num_batched_tokens: expected a positive integer, got \"2048.0\""},
    {HDR WL "engine: {max_model_len: 12abc}\n",
     ":6:25: engine.max_model_len: expected an integer in [1, 1099511627776], got \"12abc\""},
    /* 5 */ {HDR WL "engine: {max_num_seqs: 99999999999999999999}\n",
             ":6:24: engine.max_num_seqs: expected a positive integer, got \"99999999999999999999\""},
    {HDR WL "engine: {scheduling_policy: priority}\n",
     ":6:29: engine.scheduling_policy: needs engine.scheduler: upstream (the fork's scheduler has no such knob)"},
    {HDR WL "engine: {kv_cache_dtype: int4}\n",
     ":6:26: engine.kv_cache_dtype: expected one of auto, fp16, float16, fp8_e5m2, fp8, fp8_e4m3, "
     "got \"int4\""},
    {HDR WL "engine: {tensor_parallel_size: 5}\n",
     ":6:32: engine.tensor_parallel_size: 5 does not divide the model's heads"},
    {HDR WL "engine: {block_size: 100}\n",
     ":6:22: engine.block_size: expected a multiple of 16, got 100"},
    /* 10 */ {HDR WL "engine: {gpu_memory_utilization: 1.5}\n",
              ":6:34: engine.gpu_memory_utilization: expected a number in (0, 1], got \"1.5\""},
    {HDR WL "engine:\n  speculative_config: {method: eagle, num_speculative_tokens: 2}\n",
     ":7:32: engine.speculative_config.method: only methods mtp and dflash2 are modelled, got \"eagle\""},
    {HDR WL "engine:\n  speculative_config: {method: mtp, num_speculative_tokens: 2}\n",
     ":1:1: mtp_acceptance: required when speculative_config is set"},
    {HDR WL "engine:\n  speculative_config: {method: mtp, num_speculative_tokens: 2}\n"
     "mtp_acceptance: {per_position: [0.9, 0.8, 0.7]}\n",
     ":8:32: mtp_acceptance.per_position: expected 2 probabilities (num_speculative_tokens), got 3"},
    {HDR WL "env:\n  VLLM_SOMETHING: 1\n", ":7:3: env.VLLM_SOMETHING: unknown key \"VLLM_SOMETHING\""},
    /* 15 */ {HDR WL "env:\n  VLLM_FLASH_V100_SMALLQ_DECODE_MAX_Q: 0\n",
              ":7:40: env.VLLM_FLASH_V100_SMALLQ_DECODE_MAX_Q: expected an integer in [1, 1024], got \"0\""},
    {HDR WL "    - {id: A, prompt_tokens: 5, output_tokens: 1}\n",
     ":6:12: workload.requests[1].id: duplicate request id \"A\" (also workload.requests[0])"},
    {HDR WL "    - {id: B, prompt_tokens: 100, cached_tokens: 101, output_tokens: 1}\n",
     ":6:50: workload.requests[1].cached_tokens: expected an integer in [0, 100], got \"101\""},
    {HDR WL "    - {id: B, prompt_tokens: 5, output_tokens: 1, arrival: {after: Z, decoded: 1}}\n",
     ":6:68: workload.requests[1].arrival.after: no request with id \"Z\""},
    {HDR WL "    - {id: B, prompt_tokens: 5, output_tokens: 1, arrival: {after: B, decoded: 1}}\n",
     ":6:68: workload.requests[1].arrival.after: a request cannot wait for itself"},
    /* 20 */ {HDR "workload:\n  requests:\n"
              "    - {id: A, prompt_tokens: 5, output_tokens: 9, arrival: {after: B, event: finished}}\n"
              "    - {id: B, prompt_tokens: 5, output_tokens: 9, arrival: {after: A, decoded: 2}}\n",
              ":5:68: workload.requests[0].arrival.after: arrival triggers form a cycle: A -> B -> A"},
    {HDR WL "    - {id: B, prompt_tokens: 5, output_tokens: 1, arrival: {after: A, event: started}}\n",
     ":6:78: workload.requests[1].arrival.event: expected one of arrival, admitted, first_token, "
     "finished, got \"started\""},
    {HDR WL "measure:\n  r: {kind: rate, from: start}\n",
     ":7:6: measure.r: missing required key \"request\""},
    {HDR WL "measure:\n  r: {kind: speed}\n",
     ":7:13: measure.r.kind: expected one of rate, duration, ttft, tpot, itl, steps, tokens, "
     "throughput, e2e, queueing, prefix_hit, evictions, got \"speed\""},
    {HDR WL "measure:\n  d: {kind: duration, from: A.admitted, to: Q.first_token}\n",
     ":7:45: measure.d.to: no request with id \"Q\""},
    /* 25 */ {HDR WL "measure:\n  d: {kind: duration, to: A.done}\n",
              ":7:27: measure.d.to: expected end or ID.EVENT"},
    {HDR WL "measure:\n  d: {kind: ttft, type: mixed}\n",
     ":7:19: measure.d.type: key \"type\" is not used by kind ttft (allowed: kind, request, stat)"},
    {HDR WL "measure:\n  d: {kind: duration}\nreference:\n  source: x\n  e: 1.0\n",
     ":10:3: reference.e: no measure window named \"e\" (allowed: source, d)"},
    {HDR WL "stop: {when: A.gone}\n", ":6:14: stop.when: expected all_finished or ID.EVENT"},
    {HDR WL "stop: {max_time_s: .nan}\n",
     ":6:20: stop.max_time_s: expected a positive number, got \".nan\""},
    /* 30 */ {HDR "workload: {}\n",
              ":3:11: workload: no requests: give at least one of requests, poisson, trace"},
    {"model: models/qwen3.8-27b.yaml\n" WL,
     ":1:1: missing required key \"profile\" (or hardware.gpu, hardware.analytic)"},
    {HDR WL "engine: {enable_prefix_caching: maybe}\n",
     ":6:33: engine.enable_prefix_caching: expected true or false, got \"maybe\""},
    {HDR WL "engine: {max_num_seqs: 3\n", ":7:1: syntax error: did not find expected ',' or '}'"},
    {"model:\n  name: m\n  layers: 4\n  full_attention_layers: 4\n  hidden: 64\n"
     "  intermediate: 64\n  vocab: 100\n  weight_bytes_per_param: 2\n"
     "  attention: {q_heads: 6, kv_heads: 4, head_dim: 64}\nprofile: p.yaml\n" WL,
     ":9:37: model.attention.kv_heads: q_heads (6) must be a multiple of kv_heads (4)"},
    /* 35 */ {HDR "workload:\n  poisson: {rate_per_s: 1, count: 5, prompt: {dist: uniform, mean: 3},"
              " output: 10}\n",
              ":4:62: workload.poisson.prompt.mean: key \"mean\" is not used by dist uniform "
              "(allowed: dist, low, high, min, max)"},
    {HDR "workload:\n  requests:\n    - {id: A B, prompt_tokens: 1, output_tokens: 1}\n",
     ":5:12: workload.requests[0].id: expected an id of letters, digits, _ and -, got \"A B\""},
    {HDR WL "    - {id: B, prompt_tokens: 300000, output_tokens: 1}\n",
     ":6:30: workload.requests[1].prompt_tokens: 300000 exceeds engine.max_model_len (262144)"},
    {HDR WL "seed: -1\n", ":6:7: seed: expected a non-negative integer, got \"-1\""},
    {HDR WL "engine: {max_num_seqs: \"3\"}\n",
     ":6:24: engine.max_num_seqs: expected a positive integer, got string \"3\""},
    /* 40 */ {HDR WL "hardware: {analytic: {tflops: 100, tbps: 1}}\n",
              ":6:11: hardware: give either profile or hardware.analytic, not both"},
    {HDR "workload:\n  poisson: {rate_per_s: 1, count: 5, prompt: 100, output: 10, "
     "cached_frac: 1.5}\n",
     ":4:76: workload.poisson.cached_frac: expected a number in [0, 1], got \"1.5\""},
    {"model: models/qwen3.8-27b.yaml\nprofile: p.yaml\nmodel: x\n" WL,
     ":3:1: model: duplicate key \"model\" (first at line 1)"},
    {HDR WL "engine: {scheduler: upstream, max_num_partial_prefills: 2}\n",
     ":6:57: engine.max_num_partial_prefills: only 1 (vLLM v1 refuses others: Concurrent Partial Prefill is "
     "not supported), got 2"},
    {HDR WL "engine: {scheduler: upstream, enable_chunked_prefill: false, max_num_batched_tokens: 4096,"
     " max_model_len: 8192}\n",
     ":6:55: engine.enable_chunked_prefill: false needs max_num_batched_tokens (4096) >= max_model_len (8192): vLLM"
     " refuses it, a longer prompt could never be admitted whole"},
    {HDR WL "engine: {enable_chunked_prefill: false}\n",
     ":6:34: engine.enable_chunked_prefill: false needs engine.scheduler: upstream (the fork always chunks)"},
    {HDR WL "engine: {scheduler: vllm}\n",
     ":6:21: engine.scheduler: expected one of fork, upstream, got \"vllm\""},
    {"model: {name: x, layers: 2, full_attention_layers: 2, hidden: 64, intermediate: 64, vocab: 10,"
     " attention: {q_heads: 4, kv_heads: 2, head_dim: 16}, weight_bytes_per_param: 2,"
     " moe: {experts: 8, experts_per_token: 9, expert_intermediate: 30}}\n"
     "hardware: {analytic: {tflops: 1, tbps: 1}}\n" WL,
     ":1:212: model.moe.experts_per_token: at most experts (8), got 9"},
    {"model: {name: x, layers: 2, full_attention_layers: 2, hidden: 64, intermediate: 64, vocab: 10,"
     " attention: {q_heads: 4, kv_heads: 2, head_dim: 16}, weight_bytes_per_param: 2,"
     " moe: {experts: 8, experts_per_token: 2, expert_intermediate: 30}}\n"
     "hardware: {analytic: {tflops: 1, tbps: 1}}\n" WL "engine: {tensor_parallel_size: 4}\n",
     ":6:32: engine.tensor_parallel_size: 4 does not divide the model's expert widths (expert 30, shared 30)"},
    {HDR WL "    - {id: B, prompt_tokens: 10, output_tokens: 1, priority: x}\n",
     ":6:62: workload.requests[1].priority: expected an integer, got \"x\""},
};

START_TEST(bad_scenarios)
{
    mk_tmpdir();
    const char *path = write_tmp("bad.yaml", bads[_i].yaml);
    scenario_t s;
    char err[SCN_ERR_MAX];
    int rc = scn_load(path, NULL, 0, &s, err);
    rm_tmpdir();
    ck_assert_msg(rc == -1, "case %d loaded", _i);
    ck_assert_msg(!strncmp(err, path, strlen(path)), "case %d: error does not start with the "
                  "file: %s", _i, err);
    ck_assert_msg(strstr(err, bads[_i].want) != NULL, "case %d:\n got: %s\nwant: %s", _i, err,
                  bads[_i].want);
    ck_assert_ptr_null(strchr(err, '\n'));
    ck_assert_ptr_null(s.requests);
}
END_TEST

/* Accepted variants of the schema (each loads). */
static const char *const goods[] = {
    HDR WL,
    HDR "workload:\n  poisson:\n    rate_per_s: 0.5\n    count: 10\n"
    "    prompt: {dist: lognormal, mu: 8, sigma: 1, min: 16, max: 100000}\n"
    "    output: {dist: exponential, mean: 200}\n"
    "    cached_frac: {dist: uniform, low: 0, high: 0.5}\n",
    HDR "workload: {trace: t.csv}\n",
    "model: models/qwen3.8-27b.yaml\nhardware: {analytic: {tflops: 100, tbps: 1.5}}\n" WL
    "engine:\n  speculative_config: {method: mtp, num_speculative_tokens: 3}\n"
    "  kv_cache_dtype: fp8\n  block_size: 1616\n  num_gpu_blocks: 1000\n"
    "  enable_prefix_caching: no\nmtp_acceptance: {mean_accepted: 2.5}\n"
    "measure:\n  t: {kind: throughput}\n  i: {kind: itl}\n  s: {kind: steps, type: any, to: end}\n"
    "stop: {when: all_finished, max_steps: 1000}\n",
    /* anchors and aliases are resolved */
    HDR "x: &r {id: A, prompt_tokens: 100, output_tokens: 10}\n",
};

START_TEST(good_scenarios)
{
    mk_tmpdir();
    char text[2048];
    snprintf(text, sizeof text, "%s", goods[_i]);
    if (_i == 4) /* "x" is not a key of the schema: put the anchor where it is allowed */
        snprintf(text, sizeof text, HDR "description: &d hello\nname: *d\n" WL);
    const char *path = write_tmp("good.yaml", text);
    scenario_t s;
    char err[SCN_ERR_MAX];
    int rc = scn_load(path, NULL, 0, &s, err);
    char dir[80];
    snprintf(dir, sizeof dir, "%s/", tmpdir);
    rm_tmpdir();
    ck_assert_msg(rc == 0, "case %d: %s", _i, err);
    switch (_i) {
    case 0:
        ck_assert_str_eq(s.name, "good");            /* the file stem */
        ck_assert_uint_eq(s.seed, 1);
        ck_assert_int_eq(s.engine.max_num_seqs, 256);
        ck_assert_int_eq(s.stop.kind, 0);
        ck_assert_double_eq(s.stop.max_time_s, 86400);
        ck_assert_int_eq(s.requests[0].arrival.kind, TRIG_TIME);
        /* profile resolved against the scenario's directory */
        ck_assert_int_eq(strncmp(s.profile_path, dir, strlen(dir)), 0);
        ck_assert_str_eq(s.profile_path + strlen(dir), "p.yaml");
        /* model: the directory has no models/, so the cwd's is used */
        ck_assert_str_eq(s.model_path, "models/qwen3.8-27b.yaml");
        break;
    case 1:
        ck_assert_int_eq(s.poisson.enabled, 1);
        ck_assert_double_eq(s.poisson.rate_per_s, 0.5);
        ck_assert_int_eq(s.poisson.count, 10);
        ck_assert_int_eq(s.poisson.prompt.kind, DIST_LOGNORMAL);
        ck_assert_double_eq(s.poisson.prompt.a, 8);
        ck_assert_double_eq(s.poisson.prompt.b, 1);
        ck_assert_int_eq(s.poisson.prompt.min, 16);
        ck_assert_int_eq(s.poisson.prompt.max, 100000);
        ck_assert_int_eq(s.poisson.output.kind, DIST_EXPONENTIAL);
        ck_assert_double_eq(s.poisson.output.a, 200);
        ck_assert_int_eq(s.poisson.cached_frac.kind, DIST_UNIFORM);
        ck_assert_double_eq(s.poisson.cached_frac.b, 0.5);
        ck_assert_int_eq(s.n_requests, 0);
        break;
    case 2:
        ck_assert_str_eq(s.trace_path + strlen(dir), "t.csv");
        break;
    case 3:
        ck_assert_int_eq(s.analytic, 1);
        ck_assert_str_eq(s.profile_path, "");
        ck_assert_int_eq(s.engine.spec_mtp, 1);
        ck_assert_int_eq(s.engine.num_speculative_tokens, 3);
        ck_assert_int_eq(s.engine.kv_cache_dtype, KV_FP8_E4M3);   /* vLLM's fp8 is e4m3 */
        ck_assert_int_eq(s.engine.block_size, 1616);
        ck_assert_int_eq(s.engine.num_gpu_blocks, 1000);
        ck_assert_int_eq(s.engine.enable_prefix_caching, 0);
        ck_assert_int_eq(s.accept.per_position, 0);
        ck_assert_double_eq(s.accept.mean_accepted, 2.5);
        ck_assert_int_eq(s.windows[0].kind, WIN_THROUGHPUT);
        ck_assert_str_eq(s.windows[1].request, "*");
        ck_assert_int_eq(s.windows[2].to.is_set, 0);
        ck_assert_int_eq(s.stop.max_steps, 1000);
        break;
    case 4:
        ck_assert_str_eq(s.name, "hello");
        break;
    }
    scn_free(&s);
}
END_TEST

/* ---------------------------------------------------------------------------------- */
/* ydoc on hostile input                                                               */

static const bad_t bad_docs[] = {
    {"", ":1:1: empty document"},
    {"# only a comment\n", ":1:1: empty document"},
    {"a: 1\n---\nb: 2\n", ":2:1: more than one document"},
    {"a: &x [1, *x]\n", ":1:11: alias *x refers to a node that contains it (alias loop)"},
    {"a: *nope\n", ":1:4: undefined alias *nope"},
    {"a: &a [x,x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
     "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
     "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
     "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f,*f]\n",
     ":6:29: aliases expand to more than 1000000 nodes"},
    {"? [a, b]\n: 1\n", ":1:3: mapping keys must be scalars, got a list"},
    {"a:\n  b: 1\n  c:\n    d: 2\n    d: 3\n", ":5:5: a.c.d: duplicate key \"d\" (first at line 4)"},
    {"l:\n  - {x: 1}\n  - {x: 1, x: 2}\n", ":3:12: l[1].x: duplicate key \"x\" (first at line 3)"},
    {"a: \"\x01\"\n", ": syntax error: control characters are not allowed"},
    {"a: \xff\xfe\xfd\n", ":1:4: syntax error: invalid leading UTF-8 octet"},
};

START_TEST(ydoc_bad)
{
    mk_tmpdir();
    const char *path = write_tmp("d.yaml", bad_docs[_i].yaml);
    char buf[1024];
    yd_err_t e;
    yd_err_init(&e, buf, sizeof buf);
    yd_doc_t *d = yd_load(path, &e);
    rm_tmpdir();
    ck_assert_ptr_null(d);
    ck_assert_int_eq(e.set, 1);
    ck_assert_msg(strstr(buf, bad_docs[_i].want) != NULL, "case %d:\n got: %s\nwant: %s", _i, buf,
                  bad_docs[_i].want);
}
END_TEST

START_TEST(ydoc_big_map_duplicate)
{
    /* big mappings are checked by sorting: the second occurrence is reported */
    char *text = malloc(1 << 16);
    size_t o = (size_t)sprintf(text, "m:\n");
    for (int i = 0; i < 300; i++)
        o += (size_t)sprintf(text + o, "  k%d: %d\n", i, i);
    sprintf(text + o, "  k150: 0\n");
    char buf[1024];
    yd_err_t e;
    yd_err_init(&e, buf, sizeof buf);
    yd_doc_t *d = yd_load_string("big", text, strlen(text), &e);
    free(text);
    ck_assert_ptr_null(d);
    ck_assert_str_eq(buf, "big:302:3: m.k150: duplicate key \"k150\" (first at line 152)");
}
END_TEST

START_TEST(ydoc_too_big)
{
    mk_tmpdir();
    char path[128];
    snprintf(path, sizeof path, "%s/huge.yaml", tmpdir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(ftruncate(fd, YD_FILE_MAX + 1), 0);
    close(fd);
    char buf[1024];
    yd_err_t e;
    yd_err_init(&e, buf, sizeof buf);
    yd_doc_t *d = yd_load(path, &e);
    char want[256];
    snprintf(want, sizeof want, "%s: file too large (more than %ld MiB)", path, YD_FILE_MAX >> 20);
    rm_tmpdir();
    ck_assert_ptr_null(d);
    ck_assert_str_eq(buf, want);
}
END_TEST

START_TEST(ydoc_node_limit)
{
    /* a flow list of YD_NODES_MAX + 10 items: refused at the first node past the limit */
    size_t n = (size_t)YD_NODES_MAX + 10, o = 0;
    char *text = malloc(2 * n + 8);
    ck_assert_ptr_nonnull(text);
    text[o++] = '[';
    for (size_t i = 0; i < n; i++) {
        text[o++] = '0';
        text[o++] = ',';
    }
    text[o - 1] = ']';
    char buf[1024];
    yd_err_t e;
    yd_err_init(&e, buf, sizeof buf);
    yd_doc_t *d = yd_load_string("many", text, o, &e);
    free(text);
    ck_assert_ptr_null(d);
    char want[128];
    snprintf(want, sizeof want, "many:1:%ld: more than %ld YAML nodes", 2 * YD_NODES_MAX, YD_NODES_MAX);
    ck_assert_msg(strstr(buf, want), "%s", buf);
}
END_TEST

START_TEST(ydoc_fifo)
{
    /* a FIFO without a writer as a model or a scenario: refused at once, no blocking */
    mk_tmpdir();
    char path[128];
    snprintf(path, sizeof path, "%s/model.yaml", tmpdir);
    ck_assert_int_eq(mkfifo(path, 0600), 0);
    alarm(10);
    model_t m;
    char err[SCN_ERR_MAX];
    int rc = scn_load_model(path, &m, err);
    scenario_t s;
    char err2[SCN_ERR_MAX];
    int rc2 = scn_load(path, NULL, 0, &s, err2);
    alarm(0);
    char want[256];
    snprintf(want, sizeof want, "%s: cannot read: not a regular file", path);
    rm_tmpdir();
    ck_assert_int_eq(rc, -1);
    ck_assert_msg(strstr(err, want), "%s", err);
    ck_assert_int_eq(rc2, -1);
    ck_assert_msg(strstr(err2, want), "%s", err2);
}
END_TEST

/* ---- scale and clamping ------------------------------------------------------------ */

/* 40000 requests, each triggered by the one before (one chain), and a cycle among the
 * last three of another 40000: loading is linear in the requests (the tcase timeout is
 * the bound; a quadratic id lookup and cycle walk take minutes here). */
START_TEST(many_requests_linear)
{
    mk_tmpdir();
    enum { N = 40000 };
    size_t cap = (size_t)N * 100 + 4096, o = 0;
    char *text = malloc(cap);
    ck_assert_ptr_nonnull(text);
    o += (size_t)snprintf(text + o, cap - o,
                          "name: x\nmodel: %s/models/qwen3.8-27b.yaml\n"
                          "hardware: {analytic: {tflops: 100, tbps: 2}}\n"
                          "engine: {max_model_len: 65536, tensor_parallel_size: 2}\n"
                          "workload:\n  requests:\n    - {id: R0, prompt_tokens: 100, output_tokens: 4}\n",
                          getcwd((char[512]){0}, 512));
    for (int i = 1; i < N; i++)
        o += (size_t)snprintf(text + o, cap - o,
                              "    - {id: R%d, prompt_tokens: 100, output_tokens: 4, arrival: {after: R%d, decoded: 2}}\n",
                              i, i - 1);
    scenario_t s;
    char err[SCN_ERR_MAX];
    int rc = scn_load(write_tmp("chain.yaml", text), NULL, 0, &s, err);
    ck_assert_msg(rc == 0, "%s", err);
    ck_assert_int_eq(s.n_requests, N);
    ck_assert_int_eq(scn_find_request(&s, "R39999"), N - 1);
    ck_assert_int_eq(s.requests[N - 1].arrival.ref_idx, N - 2);
    ck_assert_int_eq(scn_find_request(&s, "R40000"), -1);
    scn_free(&s);
    /* R1 now waits for the last one: a cycle through all N, reported at R1 */
    char *r1 = strstr(text, "after: R0,");
    ck_assert_ptr_nonnull(r1);
    char *fixed = malloc(cap + 16);
    ck_assert_ptr_nonnull(fixed);
    size_t pre = (size_t)(r1 - text) + 7;
    memcpy(fixed, text, pre);
    snprintf(fixed + pre, cap + 16 - pre, "R39999%s", r1 + 9);
    rc = scn_load(write_tmp("cycle.yaml", fixed), NULL, 0, &s, err);
    free(fixed);
    free(text);
    rm_tmpdir();
    ck_assert_int_eq(rc, -1);
    ck_assert_msg(strstr(err, "workload.requests[1].arrival.after: arrival triggers form a cycle: R1 -> R39999 -> R39998"),
                  "%s", err);
}
END_TEST

START_TEST(messages_one_line)
{
    /* a path with line breaks, too long or missing: the message stays one line */
    char path[SCN_PATH_MAX + 40];
    memset(path, 'a', sizeof path - 1);
    path[sizeof path - 1] = 0;
    path[5] = '\n';
    path[30] = '\r';
    scenario_t s;
    char err[SCN_ERR_MAX];
    ck_assert_int_eq(scn_load(path, NULL, 0, &s, err), -1);
    ck_assert_ptr_nonnull(strstr(err, "path too long"));
    ck_assert_ptr_null(strpbrk(err, "\r\n"));
    ck_assert_int_eq(scn_load("no\nsuch.yaml", NULL, 0, &s, err), -1);
    ck_assert_str_eq(err, "no?such.yaml: cannot open: No such file or directory");
}
END_TEST

START_TEST(dist_round_clamps)
{
    scn_dist_t d = {.kind = DIST_LOGNORMAL, .a = 700, .b = 1};
    /* a huge draw saturates at the top instead of wrapping to a 1-token prompt */
    ck_assert_int_eq(scn_dist_round(&d, 1e300), LONG_MAX);
    ck_assert_int_eq(scn_dist_round(&d, INFINITY), LONG_MAX);
    ck_assert_int_eq(scn_dist_round(&d, 9.3e18), LONG_MAX);
    ck_assert_int_eq(scn_dist_round(&d, NAN), 1);
    ck_assert_int_eq(scn_dist_round(&d, -5), 1);
    ck_assert_int_eq(scn_dist_round(&d, 0.4), 1);
    ck_assert_int_eq(scn_dist_round(&d, 1234.5), 1235);   /* lround: half away from zero */
    ck_assert_int_eq(scn_dist_round(&d, 1234.49), 1234);
    d.min = 100;
    d.max = 5000;
    ck_assert_int_eq(scn_dist_round(&d, 1e300), 5000);
    ck_assert_int_eq(scn_dist_round(&d, 4999.6), 5000);
    ck_assert_int_eq(scn_dist_round(&d, 99.6), 100);
    ck_assert_int_eq(scn_dist_round(&d, 12.0), 100);
    ck_assert_int_eq(scn_dist_round(&d, NAN), 100);
    ck_assert_int_eq(scn_dist_round(&d, 777.2), 777);
}
END_TEST

START_TEST(ydoc_random_junk)
{
    /* binary junk never crashes: each attempt gives a document or one error line */
    unsigned s = 12345;
    char text[512];
    for (int round = 0; round < 2000; round++) {
        size_t n = (size_t)(round % 500) + 1;
        for (size_t i = 0; i < n; i++) {
            s = s * 1103515245u + 12345u;
            /* mostly YAML punctuation and letters, sometimes any byte */
            static const char alpha[] = "ab: -[]{},&*!|>'\"#?\n  1.5e3~";
            text[i] = (s >> 16) % 7 ? alpha[(s >> 8) % (sizeof alpha - 1)] : (char)(s >> 8);
        }
        char buf[1024];
        yd_err_t e;
        yd_err_init(&e, buf, sizeof buf);
        yd_doc_t *d = yd_load_string("junk", text, n, &e);
        if (d) {
            ck_assert_int_eq(e.set, 0);
            ck_assert_ptr_nonnull(yd_root(d));
            yd_free(d);
        } else {
            ck_assert_int_eq(e.set, 1);
            ck_assert_int_eq(strncmp(buf, "junk", 4), 0);
        }
    }
}
END_TEST

typedef struct conv {
    const char *text;
    int ok;
    double val;
} conv_t;

static const conv_t ints[] = {
    {"0", 1, 0}, {"42", 1, 42}, {"-7", 1, -7}, {"+7", 1, 7}, {"240_000", 1, 240000},
    {"9223372036854775807", 1, 9223372036854775807.0}, {"9223372036854775808", 0, 0},
    {"-9223372036854775808", 1, -9223372036854775808.0}, {"1.0", 0, 0}, {"1e3", 0, 0},
    {"12abc", 0, 0}, {"", 0, 0}, {"0x10", 0, 0}, {"_1", 0, 0}, {"1_", 0, 0}, {"~", 0, 0},
    {"'5'", 0, 0}, {"[5]", 0, 0},
};

START_TEST(ydoc_int)
{
    char text[64], buf[1024];
    snprintf(text, sizeof text, "v: %s\n", ints[_i].text);
    yd_err_t e;
    yd_err_init(&e, buf, sizeof buf);
    yd_doc_t *d = yd_load_string("t", text, strlen(text), &e);
    ck_assert_msg(d != NULL, "%s", buf);
    long v = -1;
    int rc = yd_get_long(&e, yd_root(d), "", "v", YD_REQ, LONG_MIN, LONG_MAX, &v);
    yd_free(d);
    ck_assert_msg(rc == (ints[_i].ok ? 1 : -1), "\"%s\": rc %d (%s)", ints[_i].text, rc, buf);
    if (ints[_i].ok)
        ck_assert_double_eq((double)v, ints[_i].val);
    else {
        ck_assert_ptr_nonnull(strstr(buf, ": v: expected an integer, got"));
        if (ints[_i].text[0])   /* an empty value sits right after "v:" */
            ck_assert_int_eq(strncmp(buf, "t:1:4: ", 7), 0);
    }
}
END_TEST

static const conv_t dbls[] = {
    {"0", 1, 0}, {"1.5", 1, 1.5}, {"-2.5e-3", 1, -2.5e-3}, {".5", 1, 0.5}, {"5.", 1, 5},
    {"1e308", 1, 1e308}, {"1e309", 0, 0}, {".inf", 0, 0}, {"-.inf", 0, 0}, {".nan", 0, 0},
    {"nan", 0, 0}, {"inf", 0, 0}, {"0x1p3", 0, 0}, {"1.5x", 0, 0}, {"e5", 0, 0}, {"1e", 0, 0},
    {"\"1.5\"", 0, 0}, {"null", 0, 0},
};

START_TEST(ydoc_double)
{
    char text[64], buf[1024];
    snprintf(text, sizeof text, "v: %s\n", dbls[_i].text);
    yd_err_t e;
    yd_err_init(&e, buf, sizeof buf);
    yd_doc_t *d = yd_load_string("t", text, strlen(text), &e);
    ck_assert_msg(d != NULL, "%s", buf);
    double v = -1;
    int rc = yd_get_double(&e, yd_root(d), "", "v", YD_REQ, -INFINITY, INFINITY, 0, &v);
    yd_free(d);
    ck_assert_msg(rc == (dbls[_i].ok ? 1 : -1), "\"%s\": rc %d (%s)", dbls[_i].text, rc, buf);
    if (dbls[_i].ok)
        ck_assert_double_eq(v, dbls[_i].val);
    else
        ck_assert_ptr_nonnull(strstr(buf, "t:1:4: v: expected a finite number, got"));
}
END_TEST

START_TEST(ydoc_bool_enum_str)
{
    static const char text[] =
        "t: [true, True, yes, YES, on]\nf: [false, no, No, off, OFF]\nbad: [1, 'true', maybe]\n"
        "s: \"a\\0b\"\nlong: abcdefghij\n";
    char buf[1024];
    yd_err_t e;
    yd_err_init(&e, buf, sizeof buf);
    yd_doc_t *d = yd_load_string("t", text, sizeof text - 1, &e);
    ck_assert_msg(d != NULL, "%s", buf);
    const yd_node_t *t = yd_map_get(yd_root(d), "t"), *f = yd_map_get(yd_root(d), "f");
    const yd_node_t *bad = yd_map_get(yd_root(d), "bad");
    for (int i = 0; i < 5; i++) {
        int b = -1;
        ck_assert_int_eq(yd_as_bool(&e, t->vals[i], "t", &b), 0);
        ck_assert_int_eq(b, 1);
        ck_assert_int_eq(yd_as_bool(&e, f->vals[i], "f", &b), 0);
        ck_assert_int_eq(b, 0);
    }
    for (int i = 0; i < 3; i++) {
        int b;
        yd_err_init(&e, buf, sizeof buf);
        ck_assert_int_eq(yd_as_bool(&e, bad->vals[i], "bad", &b), -1);
        ck_assert_ptr_nonnull(strstr(buf, "bad: expected true or false"));
    }
    char s[8];
    yd_err_init(&e, buf, sizeof buf);
    ck_assert_int_eq(yd_get_str(&e, yd_root(d), "", "s", YD_REQ, s, sizeof s), -1);
    ck_assert_str_eq(buf, "t:4:4: s: string contains a NUL character");
    yd_err_init(&e, buf, sizeof buf);
    ck_assert_int_eq(yd_get_str(&e, yd_root(d), "", "long", YD_REQ, s, sizeof s), -1);
    ck_assert_str_eq(buf, "t:5:7: long: string too long (at most 7 characters)");
    /* the first error is kept */
    yd_err_init(&e, buf, sizeof buf);
    ck_assert_int_eq(yd_get_str(&e, yd_root(d), "", "missing", YD_REQ, s, sizeof s), -1);
    ck_assert_int_eq(yd_get_str(&e, yd_root(d), "", "long", YD_REQ, s, sizeof s), -1);
    ck_assert_str_eq(buf, "t:1:1: missing required key \"missing\"");
    static const char *const colors[] = {"red", "green", NULL};
    int k = -1;
    yd_err_init(&e, buf, sizeof buf);
    ck_assert_int_eq(yd_get_enum(&e, yd_root(d), "", "long", YD_REQ, colors, &k), -1);
    ck_assert_str_eq(buf, "t:5:7: long: expected one of red, green, got \"abcdefghij\"");
    ck_assert_int_eq(yd_get_enum(&e, yd_root(d), "", "absent", YD_OPT, colors, &k), 0);
    ck_assert_int_eq(k, -1);
    yd_free(d);
}
END_TEST

int main(void)
{
    const check_test_t load[] = {
        CHECK_TEST(default_loads), CHECK_TEST(model_file_loads), CHECK_TEST(names), CHECK_TEST(deterministic),
        CHECK_TEST(override_forms), CHECK_LOOP(override_bad, CHECK_N(bad_sets)), CHECK_TEST(override_key_once),
        CHECK_LOOP(bad_scenarios, CHECK_N(bads)), CHECK_LOOP(good_scenarios, CHECK_N(goods))};
    const check_test_t ydoc[] = {
        CHECK_LOOP(ydoc_bad, CHECK_N(bad_docs)), CHECK_TEST(ydoc_big_map_duplicate), CHECK_TEST(ydoc_too_big),
        CHECK_TEST(ydoc_node_limit), CHECK_TEST(ydoc_fifo), CHECK_TEST(ydoc_random_junk), CHECK_LOOP(ydoc_int, CHECK_N(ints)),
        CHECK_LOOP(ydoc_double, CHECK_N(dbls)), CHECK_TEST(ydoc_bool_enum_str)};
    const check_test_t scale[] = {
        CHECK_TEST(many_requests_linear), CHECK_TEST(dist_round_clamps), CHECK_TEST(messages_one_line)};
    Suite *s = suite_create("scenario");
    check_case(s, "load", load, CHECK_N(load), 0, NULL);
    check_case(s, "scale", scale, CHECK_N(scale), 30, NULL);
    check_case(s, "ydoc", ydoc, CHECK_N(ydoc), 30, NULL);
    return check_run(s);
}
