/* check_sched: the scheduler's rules (docs/reference-system.md): budget and order,
 * block-aligned chunks, MTP budget and acceptance, preemption, and the pacing rule with its
 * anchor; a dense model's chunks (budget-limited, block 16); upstream vLLM v1's rules
 * (long_prefill_token_threshold, chunked prefill off, priority). */
#include <math.h>
#include "check_core.h"
#include "engine.h"
#include "scheduler.h"
#include "runner.h"
#include "check_run.h"

static recorder_t rec;

/* D decodes (its 240K prompt cached); P arrives when D has its first token. */
static const char *pacing_body(int pace, long p_prompt, long d_out)
{
    static char b[2048];
    snprintf(b, sizeof b,
             "engine: {max_num_batched_tokens: 2048, max_num_seqs: 4, tensor_parallel_size: 2}\n"
             "env: {VLLM_1CAT_PREFILL_PACE_STEPS: %d}\n"
             "workload:\n  requests:\n"
             "    - {id: D, prompt_tokens: 240000, cached_tokens: 240000, output_tokens: %ld, arrival: 0}\n"
             "    - {id: P, prompt_tokens: %ld, output_tokens: 4, arrival: {after: D, event: first_token}}\n"
             "stop: {when: all_finished, max_steps: 14}\n",
             pace, d_out, p_prompt);
    return b;
}

/* steps (1-based numbers) in which request `slot` had a prefill row */
static int chunk_steps(int slot, long *out, long *next_after)
{
    int n = 0;
    for (int k = 0; k < rec.n; k++)
        for (int i = 0; i < rec.nrows[k]; i++)
            if (rec.rows[k][i].req == slot && rec.rows[k][i].prefill) {
                out[n++] = rec.no[k];
                if (next_after) *next_after = rec.next_eligible[k][i];
            }
    return n;
}

START_TEST(pacing_anchor)
{
    engine_t e; scenario_t s; cost_model_t *cm;
    ck_assert_int_eq(run_engine(pacing_body(4, 784 * 6, 1000), NULL, 0, &rec, &e, &s, &cm), 0);
    long st[64], next = -1;
    int n = chunk_steps(e.wl.explicit_slot[1], st, &next);
    /* step 1: D's last-block prefill; P admitted at 2 (not paced), then paced every 4 */
    ck_assert_int_eq(n, 4);
    ck_assert_int_eq(st[0], 2);
    ck_assert_int_eq(st[1], 3);
    ck_assert_int_eq(st[2], 7);
    ck_assert_int_eq(st[3], 11);
    ck_assert_int_eq(next, 15);
    ck_assert_int_eq(e.rp.r[e.wl.explicit_slot[1]].next_eligible, 15);
    done_engine(&e, &s, cm);
}
END_TEST

START_TEST(gate_holds_every_running_request)
{
    /* scheduler.py checks current_step < next_decode_eligible_step for every running
     * request, decoders too (a gate set before a preemption outlives it): D, decoding, under
     * a gate is skipped; P, due at step 15, is scheduled */
    engine_t e; scenario_t s; cost_model_t *cm;
    ck_assert_int_eq(run_engine(pacing_body(4, 784 * 6, 1000), NULL, 0, &rec, &e, &s, &cm), 0);
    int d = e.wl.explicit_slot[0], pslot = e.wl.explicit_slot[1], pre = 0;
    ck_assert_int_eq(e.rep[0].sc.step_no, 14);
    e.rp.r[d].next_eligible = e.rep[0].sc.step_no + 3;
    int n = sched_step(&e.rep[0].sc, &pre);
    ck_assert_int_eq(n, 1);
    ck_assert_int_eq(e.rep[0].sc.rows[0].req, pslot);
    ck_assert_int_eq(e.rep[0].sc.rows[0].prefill, 1);
    done_engine(&e, &s, cm);
}
END_TEST

START_TEST(preemption_keeps_the_gate)
{
    /* _preempt_request frees the blocks and resets num_computed_tokens but leaves
     * next_decode_eligible_step alone: P, gated to step 17 and preempted for D's next block,
     * waits with its gate */
    engine_t e; scenario_t s; cost_model_t *cm;
    ck_assert_int_eq(run_engine(pacing_body(4, 784 * 6, 1000), NULL, 0, &rec, &e, &s, &cm), 0);
    int d = e.wl.explicit_slot[0], pslot = e.wl.explicit_slot[1], pre = 0;
    ck_assert_int_eq(e.rep[0].sc.running[e.rep[0].sc.nrun - 1], pslot);             /* P is the newest running */
    long gate = e.rep[0].sc.step_no + 3;
    e.rp.r[pslot].next_eligible = gate;
    e.rp.r[d].blocks--;                                         /* D needs one more block ... */
    e.rep[0].sc.used_blocks--;
    e.rep[0].sc.capacity = e.rep[0].sc.used_blocks;                                 /* ... and the pool has none */
    sched_step(&e.rep[0].sc, &pre);
    ck_assert_int_eq(pre, 1);
    ck_assert_int_eq(e.rp.r[pslot].state, RQ_WAITING);
    ck_assert_int_eq(e.rp.r[pslot].preemptions, 1);
    ck_assert_int_eq(e.rp.r[pslot].next_eligible, gate);
    done_engine(&e, &s, cm);
}
END_TEST

START_TEST(pacing_active_by_prompt_computed)
{
    /* pace_prefills = any(num_computed_tokens >= num_prompt_tokens): a request whose prompt is
     * computed counts as decoding even while it replays output tokens after a preemption
     * (computed < prompt + emitted), so P's chunk beside it is paced (gate at step + 4) */
    engine_t e; scenario_t s; cost_model_t *cm;
    ck_assert_int_eq(run_engine(pacing_body(4, 784 * 6, 1000), NULL, 0, &rec, &e, &s, &cm), 0);
    int d = e.wl.explicit_slot[0], pslot = e.wl.explicit_slot[1], pre = 0;
    e.rp.r[d].target = e.rp.r[d].computed + 10;       /* replaying: a prefill row, prompt done */
    int n = sched_step(&e.rep[0].sc, &pre);
    ck_assert_int_eq(n, 2);
    ck_assert_int_eq(e.rep[0].sc.rows[0].prefill, 1);
    ck_assert_int_eq(e.rep[0].sc.rows[0].q, 10);
    ck_assert_int_eq(e.rp.r[d].next_eligible, 0);     /* a row past the prompt sets no gate */
    ck_assert_int_eq(e.rp.r[pslot].next_eligible, e.rep[0].sc.step_no + 4);
    done_engine(&e, &s, cm);
}
END_TEST

START_TEST(pacing_off_is_every_step)
{
    engine_t e; scenario_t s; cost_model_t *cm;
    ck_assert_int_eq(run_engine(pacing_body(0, 784 * 6, 1000), NULL, 0, &rec, &e, &s, &cm), 0);
    long st[64];
    int n = chunk_steps(e.wl.explicit_slot[1], st, NULL);
    ck_assert_int_eq(n, 6);
    for (int i = 0; i < n; i++) ck_assert_int_eq(st[i], 2 + i);
    done_engine(&e, &s, cm);
}
END_TEST

START_TEST(never_paced_when_nobody_decodes)
{
    /* a prefill alone: no decoder -> pacing never active, chunks every step */
    engine_t e; scenario_t s; cost_model_t *cm;
    const char *body =
        "engine: {max_num_batched_tokens: 2048, max_num_seqs: 4, tensor_parallel_size: 2}\n"
        "env: {VLLM_1CAT_PREFILL_PACE_STEPS: 4}\n"
        "workload:\n  requests:\n    - {id: P, prompt_tokens: 4704, output_tokens: 2, arrival: 0}\n";
    ck_assert_int_eq(run_engine(body, NULL, 0, &rec, &e, &s, &cm), 0);
    long st[64];
    int n = chunk_steps(e.wl.explicit_slot[0], st, NULL);
    ck_assert_int_eq(n, 6);
    for (int i = 0; i < n; i++) ck_assert_int_eq(st[i], 1 + i);
    ck_assert_int_eq(e.rp.r[e.wl.explicit_slot[0]].next_eligible, 0);
    done_engine(&e, &s, cm);
}
END_TEST

START_TEST(final_chunk_not_paced)
{
    /* P has 3 chunks: admitted at 2, paced chunk at 3 (next 7), final chunk at 7 leaves
     * next_eligible at 7 (the final chunk sets nothing) */
    engine_t e; scenario_t s; cost_model_t *cm;
    ck_assert_int_eq(run_engine(pacing_body(4, 784 * 3, 1000), NULL, 0, &rec, &e, &s, &cm), 0);
    long st[64], next = -1;
    int n = chunk_steps(e.wl.explicit_slot[1], st, &next);
    ck_assert_int_eq(n, 3);
    ck_assert_int_eq(st[2], 7);
    ck_assert_int_eq(next, 7);
    done_engine(&e, &s, cm);
}
END_TEST

/* block-aligned chunks: (kv dtype, MTP K, prompt) -> block and chunk sizes */
static const struct { const char *kv; int k; int block; long prompt; } chunk_cases[] = {
    { "auto", 0, 784, 16384 },
    { "auto", 4, 816, 16384 },
    { "fp8_e5m2", 0, 1568, 16384 },
    { "fp8_e5m2", 5, 1616, 131072 },
    { "auto", 0, 784, 785 },
};

START_TEST(block_aligned_chunks)
{
    char body[2048];
    int k = chunk_cases[_i].k;
    snprintf(body, sizeof body,
             "engine: {max_num_batched_tokens: 2048, max_num_seqs: 4, tensor_parallel_size: 2, "
             "kv_cache_dtype: %s%s%s}\n%s"
             "workload:\n  requests:\n"
             "    - {id: D, prompt_tokens: 240000, cached_tokens: 240000, output_tokens: 4000, arrival: 0}\n"
             "    - {id: B, prompt_tokens: %ld, output_tokens: 1, arrival: {after: D, decoded: 1}}\n"
             "stop: {when: B.finished}\n",
             chunk_cases[_i].kv, k ? ", speculative_config: {method: mtp, num_speculative_tokens: " : "",
             k ? (k == 4 ? "4}" : "5}") : "", k ? "mtp_acceptance: {mean_accepted: 1}\n" : "", chunk_cases[_i].prompt);
    engine_t e; scenario_t s; cost_model_t *cm;
    ck_assert_int_eq(run_engine(body, NULL, 0, &rec, &e, &s, &cm), 0);
    int blk = chunk_cases[_i].block;
    ck_assert_int_eq(e.rep[0].sc.block, blk);
    long st[4096];
    int slot = e.wl.explicit_slot[1];
    int n = 0;
    long done = 0;
    for (int s2 = 0; s2 < rec.n; s2++)
        for (int i = 0; i < rec.nrows[s2]; i++)
            if (rec.rows[s2][i].req == slot && rec.rows[s2][i].prefill) {
                const step_row_t *r = &rec.rows[s2][i];
                ck_assert_int_eq(r->seq_len - r->q, done);          /* contiguous */
                ck_assert_int_eq(done / blk, (r->seq_len - 1) / blk); /* never crosses a boundary */
                done = r->seq_len;
                st[n++] = r->q;
            }
    long P = chunk_cases[_i].prompt;
    ck_assert_int_eq(done, P);
    ck_assert_int_eq(n, (P + blk - 1) / blk);
    for (int i = 0; i + 1 < n; i++) ck_assert_int_eq(st[i], blk);
    ck_assert_int_eq(st[n - 1], P - (long)(n - 1) * blk);      /* the partial last chunk */
    done_engine(&e, &s, cm);
}
END_TEST

START_TEST(budget_and_running_first)
{
    /* two prompts of 3000 with budget 2048 and block 784: running first, then waiting;
     * no step exceeds the budget; a chunk is cut by the budget when it must be */
    engine_t e; scenario_t s; cost_model_t *cm;
    const char *body =
        "engine: {max_num_batched_tokens: 2048, max_num_seqs: 4, tensor_parallel_size: 2, block_size: 1024}\n"
        "workload:\n  requests:\n"
        "    - {id: X, prompt_tokens: 3000, output_tokens: 3, arrival: 0}\n"
        "    - {id: Y, prompt_tokens: 3000, output_tokens: 3, arrival: 0}\n";
    ck_assert_int_eq(run_engine(body, NULL, 0, &rec, &e, &s, &cm), 0);
    for (int k = 0; k < rec.n; k++) ck_assert_int_le(rec.tokens[k], 2048);
    /* step 1: X admitted with 1024 (block), Y admitted with 1024 (budget left 1024) */
    ck_assert_int_eq(rec.nrows[0], 2);
    ck_assert_int_eq(rec.rows[0][0].req, e.wl.explicit_slot[0]);
    ck_assert_int_eq(rec.rows[0][0].q, 1024);
    ck_assert_int_eq(rec.rows[0][1].q, 1024);
    ck_assert_int_eq(rec.rows[0][1].admitted, 1);
    /* step 2: both running, X first */
    ck_assert_int_eq(rec.rows[1][0].req, e.wl.explicit_slot[0]);
    ck_assert_int_eq(rec.rows[1][0].admitted, 0);
    ck_assert_int_eq(e.sum.requests_finished, 2);
    done_engine(&e, &s, cm);
}
END_TEST

START_TEST(max_num_seqs_limits_admission)
{
    engine_t e; scenario_t s; cost_model_t *cm;
    const char *body =
        "engine: {max_num_batched_tokens: 8192, max_num_seqs: 2, tensor_parallel_size: 2}\n"
        "workload:\n  requests:\n"
        "    - {id: X, prompt_tokens: 100, output_tokens: 5, arrival: 0}\n"
        "    - {id: Y, prompt_tokens: 100, output_tokens: 5, arrival: 0}\n"
        "    - {id: Z, prompt_tokens: 100, output_tokens: 5, arrival: 0}\n";
    ck_assert_int_eq(run_engine(body, NULL, 0, &rec, &e, &s, &cm), 0);
    for (int k = 0; k < rec.n; k++) ck_assert_int_le(rec.nrows[k], 2);
    ck_assert_int_eq(rec.nrows[0], 2);
    ck_assert_int_eq(e.sum.requests_finished, 3);
    ck_assert(e.rp.r[e.wl.explicit_slot[2]].t_ev[EV_ADMITTED] >= e.rp.r[e.wl.explicit_slot[0]].t_ev[EV_FINISHED]);
    done_engine(&e, &s, cm);
}
END_TEST

START_TEST(mtp_budget_and_mean_acceptance)
{
    engine_t e; scenario_t s; cost_model_t *cm;
    const char *body =
        "engine: {max_num_batched_tokens: 2048, max_num_seqs: 3, tensor_parallel_size: 2,"
        " speculative_config: {method: mtp, num_speculative_tokens: 4}}\n"
        "mtp_acceptance: {mean_accepted: 2.5}\n"
        "workload:\n  requests:\n"
        "    - {id: A, prompt_tokens: 1000, cached_tokens: 0, output_tokens: 351, arrival: 0}\n";
    ck_assert_int_eq(run_engine(body, NULL, 0, &rec, &e, &s, &cm), 0);
    long emitted = 0;
    int dec = 0;
    for (int k = 0; k < rec.n; k++)
        for (int i = 0; i < rec.nrows[k]; i++) {
            if (!rec.rows[k][i].prefill) {
                ck_assert_int_eq(rec.rows[k][i].q, 5);          /* 1 + K of budget */
                dec++;
            }
            emitted += rec.rows[k][i].emitted;
        }
    ck_assert_int_eq(emitted, 351);
    /* 1 token at the prompt's end, then 3.5 per step: 350 / 3.5 = 100 decode steps */
    ck_assert_int_eq(dec, 100);
    done_engine(&e, &s, cm);
}
END_TEST

START_TEST(mtp_per_position_acceptance_seeded)
{
    const char *body =
        "engine: {max_num_batched_tokens: 2048, max_num_seqs: 3, tensor_parallel_size: 2,"
        " speculative_config: {method: mtp, num_speculative_tokens: 4}}\n"
        "mtp_acceptance: {per_position: [0.9, 0.8, 0.5, 0.2]}\n"
        "workload:\n  requests:\n"
        "    - {id: A, prompt_tokens: 100, output_tokens: 20000, arrival: 0}\n";
    engine_t e; scenario_t s; cost_model_t *cm;
    ck_assert_int_eq(run_engine(body, NULL, 0, &rec, &e, &s, &cm), 0);
    long dec = e.sum.steps_by_type[STEP_DECODE_ONLY];
    /* expected tokens/step = 1 + .9 + .9*.8 + .9*.8*.5 + .9*.8*.5*.2 = 3.052 */
    double per = 19999.0 / (double)dec;
    ck_assert_msg(per > 2.95 && per < 3.15, "tokens per step %g", per);
    long dec1 = dec;
    done_engine(&e, &s, cm);
    ck_assert_int_eq(run_engine(body, NULL, 0, &rec, &e, &s, &cm), 0);
    ck_assert_int_eq(e.sum.steps_by_type[STEP_DECODE_ONLY], dec1);   /* same seed, same draws */
    done_engine(&e, &s, cm);
    const char *set[] = { "seed=8" };
    ck_assert_int_eq(run_engine(body, set, 1, &rec, &e, &s, &cm), 0);
    ck_assert_int_ne(e.sum.steps_by_type[STEP_DECODE_ONLY], dec1);   /* another seed, other draws */
    done_engine(&e, &s, cm);
}
END_TEST

START_TEST(preemption_recomputes_newest)
{
    /* 12 blocks of 1024 minus GDN state: two long requests cannot both fit */
    engine_t e; scenario_t s; cost_model_t *cm;
    const char *body =
        "engine: {max_num_batched_tokens: 2048, max_num_seqs: 4, tensor_parallel_size: 2,"
        " block_size: 1024, num_gpu_blocks: 16}\n"
        "workload:\n  requests:\n"
        "    - {id: X, prompt_tokens: 4000, output_tokens: 4000, arrival: 0}\n"
        "    - {id: Y, prompt_tokens: 4000, output_tokens: 4000, arrival: 0.001}\n";
    ck_assert_int_eq(run_engine(body, NULL, 0, &rec, &e, &s, &cm), 0);
    ck_assert_int_gt(e.sum.preemptions, 0);
    ck_assert_int_eq(e.rp.r[e.wl.explicit_slot[0]].preemptions, 0);    /* the older one is kept */
    ck_assert_int_gt(e.rp.r[e.wl.explicit_slot[1]].preemptions, 0);
    ck_assert_int_eq(e.sum.requests_finished, 2);
    ck_assert_int_eq(e.rp.r[e.wl.explicit_slot[1]].emitted, 4000);
    ck_assert_int_le(e.sum.peak_blocks, 16);
    ck_assert_int_eq(e.rep[0].sc.used_blocks, 0);
    done_engine(&e, &s, cm);
}
END_TEST

START_TEST(lookahead_on_every_allocation)
{
    /* allocate_slots(num_lookahead_tokens = K) on admission and on every running row: a
     * 1024-token first chunk with MTP4 holds 1028 slots, so two 1024-token blocks */
    engine_t e; scenario_t s; cost_model_t *cm;
    const char *body =
        "engine: {max_num_batched_tokens: 1024, max_num_seqs: 4, tensor_parallel_size: 2, block_size: 1024,"
        " speculative_config: {method: mtp, num_speculative_tokens: 4}}\n"
        "mtp_acceptance: {mean_accepted: 2}\n"
        "workload:\n  requests:\n"
        "    - {id: X, prompt_tokens: 4096, output_tokens: 4, arrival: 0}\n"
        "stop: {when: all_finished, max_steps: 2}\n";
    ck_assert_int_eq(run_engine(body, NULL, 0, &rec, &e, &s, &cm), 0);
    ck_assert_int_eq(rec.rows[0][0].seq_len, 1024);
    ck_assert_int_eq(rec.rows[1][0].seq_len, 2048);
    ck_assert_int_eq(e.rp.r[e.wl.explicit_slot[0]].blocks, 3 + e.rep[0].sc.gdn_blocks);   /* 2048 + 4 slots */
    done_engine(&e, &s, cm);
}
END_TEST

START_TEST(prefix_cache_hits_whole_blocks)
{
    engine_t e; scenario_t s; cost_model_t *cm;
    const char *body =
        "engine: {max_num_batched_tokens: 2048, max_num_seqs: 4, tensor_parallel_size: 2}\n"
        "workload:\n  requests:\n"
        "    - {id: A, prompt_tokens: 240000, cached_tokens: 240000, output_tokens: 2, arrival: 0}\n";
    ck_assert_int_eq(run_engine(body, NULL, 0, &rec, &e, &s, &cm), 0);
    /* 239999 cached at most (one token is always computed), whole 784-blocks: 306*784 */
    ck_assert_int_eq(rec.rows[0][0].seq_len - rec.rows[0][0].q, 306 * 784);
    ck_assert_int_eq(rec.rows[0][0].q, 240000 - 306 * 784);
    done_engine(&e, &s, cm);
    const char *off[] = { "engine.enable_prefix_caching=false" };
    ck_assert_int_eq(run_engine(body, off, 1, &rec, &e, &s, &cm), 0);
    ck_assert_int_eq(rec.rows[0][0].seq_len, 784);                   /* computes from 0 */
    done_engine(&e, &s, cm);
}
END_TEST

START_TEST(preemption_into_a_full_waiting_queue)
{
    /* the robustness stress: thousands of Poisson arrivals under KV pressure, pacing on.
     * Preempted requests go back to the front of a waiting ring that is sometimes full;
     * none may be lost or duplicated (the end-of-run invariants check every request) */
    run_result_t *r = malloc(sizeof *r);
    const char *sets[] = { "workload.poisson.count=3000", "workload.poisson.rate_per_s=40", "engine.num_gpu_blocks=90",
                           "env.VLLM_1CAT_PREFILL_PACE_STEPS=4" };
    runner_run("scenarios/bench-poisson-100k.yaml", sets, 4, NULL, r);
    ck_assert_msg(r->rc == 0, "%s", r->err);
    ck_assert_int_gt(r->sum.preemptions, 1000);
    ck_assert_int_eq(r->sum.requests_finished, 3000);
    free(r);
}
END_TEST


/* A scenario on a library model (check_core.h's scenario_file is for the reference model). */
static int run_model(const char *model, const char *body, engine_t *e, scenario_t *s, cost_model_t **cm)
{
    char path[128], err[SCN_ERR_MAX], cwd[512];
    check_tmp_path(path, sizeof path, "pacesim-check-m");
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "name: t\nseed: 7\nmodel: %s/models/%s.yaml\nhardware: {analytic: {tflops: 990, tbps: 4.8}}\n%s",
            getcwd(cwd, sizeof cwd), model, body);
    ck_assert_int_eq(fclose(f), 0);
    if (scn_load(path, NULL, 0, s, err) < 0) { fprintf(stderr, "%s\n", err); return -1; }
    *cm = cost_analytic_new(&s->model, s->engine.tensor_parallel_size, s->analytic_tflops, s->analytic_tbps);
    ck_assert_ptr_nonnull(*cm);
    if (engine_init(e, s, *cm, NULL) < 0) { fprintf(stderr, "%s\n", e->err); return -1; }
    memset(&rec, 0, sizeof rec);
    e->observer = record_step;
    e->observer_ctx = &rec;
    int rc = engine_run(e);
    if (rc < 0) fprintf(stderr, "%s\n", e->err);
    return rc;
}

/* chunk sizes (q) of request `slot`'s prompt rows, in order */
static int chunks_of(int slot, long *q)
{
    int n = 0;
    for (int k = 0; k < rec.n; k++)
        for (int i = 0; i < rec.nrows[k]; i++)
            if (rec.rows[k][i].req == slot && rec.rows[k][i].prefill) q[n++] = rec.rows[k][i].q;
    return n;
}

/* A dense model (no recurrent layers) has block 16 and a chunk the budget allows: a 1K
 * prompt is one step under both schedulers (vLLM: no block alignment without a mamba
 * cache); the hybrid model in align mode still stops at each boundary. */
START_TEST(dense_chunks_by_budget)
{
    static const char *const sched[] = { "fork", "upstream" };
    char body[512];
    long q[256];
    for (int k = 0; k < 2; k++) {
        snprintf(body, sizeof body,
                 "engine: {scheduler: %s, max_num_batched_tokens: 2048, max_num_seqs: 4}\n"
                 "workload:\n  requests:\n    - {id: A, prompt_tokens: 1024, output_tokens: 2}\n"
                 "    - {id: B, prompt_tokens: 5000, output_tokens: 2}\n", sched[k]);
        engine_t e; scenario_t s; cost_model_t *cm;
        ck_assert_int_eq(run_model("llama-3.1-8b", body, &e, &s, &cm), 0);
        ck_assert_int_eq(e.rep[0].sc.block, 16);
        ck_assert_int_eq(e.rep[0].sc.align, 0);
        ck_assert_int_eq(chunks_of(e.wl.explicit_slot[0], q), 1);
        ck_assert_int_eq(q[0], 1024);
        /* B: what the budget leaves next to A (2048 - 1024), then whole budgets */
        int n = chunks_of(e.wl.explicit_slot[1], q);
        ck_assert_int_eq(n, 3);
        ck_assert_int_eq(q[0], 1024);
        ck_assert_int_eq(q[1], 2048 - 1);         /* A decodes one token beside it */
        ck_assert_int_eq(q[0] + q[1] + q[2], 5000);
        done_engine(&e, &s, cm);
    }
    /* the hybrid model: mamba_cache_mode none lifts the alignment */
    engine_t e; scenario_t s; cost_model_t *cm;
    ck_assert_int_eq(run_model("qwen3-next-80b-a3b",
                               "engine: {max_num_batched_tokens: 2048, max_num_seqs: 4, num_gpu_blocks: 400}\n"
                               "workload:\n  requests:\n    - {id: A, prompt_tokens: 2000, output_tokens: 2}\n",
                               &e, &s, &cm), 0);
    ck_assert_int_eq(e.rep[0].sc.align, 1);
    int n = chunks_of(e.wl.explicit_slot[0], q);
    ck_assert_int_eq(n, (2000 + e.rep[0].sc.block - 1) / e.rep[0].sc.block);
    ck_assert_int_eq(q[0], e.rep[0].sc.block);
    done_engine(&e, &s, cm);
    ck_assert_int_eq(run_model("qwen3-next-80b-a3b",
                               "engine: {max_num_batched_tokens: 2048, max_num_seqs: 4, num_gpu_blocks: 400,"
                               " mamba_cache_mode: none}\n"
                               "workload:\n  requests:\n    - {id: A, prompt_tokens: 2000, output_tokens: 2}\n",
                               &e, &s, &cm), 0);
    ck_assert_int_eq(e.rep[0].sc.align, 0);
    ck_assert_int_eq(chunks_of(e.wl.explicit_slot[0], q), 1);
    done_engine(&e, &s, cm);
}
END_TEST

/* D decodes 3 tokens next to B's paced 16K prefill (PACE_STEPS 8): D finishes while B
 * waits for its gate, so no request is schedulable until the gate opens; C arrives much
 * later.  The reference counts every schedule() call as a step, empty ones included. */
static const char *const decoder_finishes_body =
    "engine: {max_num_batched_tokens: 2048, max_num_seqs: 4, tensor_parallel_size: 2}\n"
    "env: {VLLM_1CAT_PREFILL_PACE_STEPS: 8}\n"
    "workload:\n  requests:\n"
    "    - {id: D, prompt_tokens: 1000, output_tokens: 3, arrival: 0}\n"
    "    - {id: B, prompt_tokens: 16384, output_tokens: 4, arrival: {after: D, event: first_token}}\n"
    "    - {id: C, prompt_tokens: 100, output_tokens: 2, arrival: 500}\n";

/* every step's start and duration, beside the recorder */
static double step_t0[REC_MAX], step_dt[REC_MAX];

static void timed_step(void *ctx, const engine_t *e, const step_rec_t *st)
{
    recorder_t *r = ctx;
    if (r->n < REC_MAX) {
        step_t0[r->n] = st->t0;
        step_dt[r->n] = st->dt;
    }
    record_step(ctx, e, st);
}

START_TEST(pacing_gate_outlives_the_decoder)
{
    char err[SCN_ERR_MAX];
    engine_t e; scenario_t s; cost_model_t *cm;
    ck_assert_int_eq(scn_load(scenario_file(decoder_finishes_body), NULL, 0, &s, err), 0);
    cm = cost_analytic_new(&s.model, s.engine.tensor_parallel_size, s.analytic_tflops, s.analytic_tbps);
    ck_assert_int_eq(engine_init(&e, &s, cm, NULL), 0);
    memset(&rec, 0, sizeof rec);
    e.observer = timed_step;
    e.observer_ctx = &rec;
    ck_assert_msg(engine_run(&e) == 0, "%s", e.err);
    const req_t *b = &e.rp.r[e.wl.explicit_slot[1]], *c = &e.rp.r[e.wl.explicit_slot[2]];
    ck_assert_int_eq(e.sum.requests_finished, 3);
    /* B is not held back until C arrives */
    ck_assert(b->t_ev[EV_FIRST_TOKEN] < c->t_ev[EV_ARRIVAL]);
    /* the step numbers no priced step took are the empty schedule() calls */
    long gaps = 0;
    for (int k = 1; k < rec.n; k++) gaps += rec.no[k] - rec.no[k - 1] - 1;
    ck_assert_int_gt(e.sum.empty_steps, 0);
    ck_assert_int_eq(gaps, e.sum.empty_steps);
    /* B's chunks: never more than PACE_STEPS steps apart, and each paced chunk exactly at
     * the gate its previous chunk set */
    long st[64], ne[64];
    int n = 0;
    for (int k = 0; k < rec.n; k++)
        for (int i = 0; i < rec.nrows[k]; i++)
            if (rec.rows[k][i].req == e.wl.explicit_slot[1] && rec.rows[k][i].prefill) {
                st[n] = rec.no[k];
                ne[n++] = rec.next_eligible[k][i];
            }
    ck_assert_int_ge(n, 2);
    for (int i = 1; i < n; i++) {
        ck_assert_int_le(st[i] - st[i - 1], 8);
        if (ne[i - 1] > st[i - 1]) ck_assert_int_eq(st[i], ne[i - 1]);
    }
    /* the empty steps cost no time: from B's arrival to its first token the engine is
     * busy all along (the steps in between are back to back) */
    double busy = 0, from = b->t_ev[EV_ARRIVAL], to = b->t_ev[EV_FIRST_TOKEN];
    for (int k = 0; k < rec.n; k++)
        if (step_t0[k] >= from && step_t0[k] + step_dt[k] <= to) busy += step_dt[k];
    ck_assert_msg(fabs(busy - (to - from)) <= 1e-9 * (to - from), "B's TTFT %.9g s, busy %.9g s", to - from, busy);
    done_engine(&e, &s, cm);
}
END_TEST

/* Upstream: a chunk is min(remaining, long_prefill_token_threshold, budget left), and
 * any number of prompts is chunked in one step (v1 has no partial-prefill limit). */
START_TEST(upstream_threshold)
{
    engine_t e; scenario_t s; cost_model_t *cm;
    long q[256];
    ck_assert_int_eq(run_model("llama-3.1-8b",
                               "engine: {scheduler: upstream, max_num_batched_tokens: 2500, max_num_seqs: 8,"
                               " long_prefill_token_threshold: 1000}\n"
                               "workload:\n  requests:\n"
                               "    - {id: A, prompt_tokens: 2500, output_tokens: 2}\n"
                               "    - {id: B, prompt_tokens: 2500, output_tokens: 2}\n"
                               "    - {id: C, prompt_tokens: 2500, output_tokens: 2}\n",
                               &e, &s, &cm), 0);
    /* step 1: A and B 1000 each (threshold), C the 500 the budget leaves */
    ck_assert_int_eq(rec.nrows[0], 3);
    ck_assert_int_eq(rec.rows[0][0].q, 1000);
    ck_assert_int_eq(rec.rows[0][1].q, 1000);
    ck_assert_int_eq(rec.rows[0][2].q, 500);
    for (int k = 0; k < 3; k++) {
        int n = chunks_of(e.wl.explicit_slot[k], q);
        long sum = 0;
        for (int i = 0; i < n; i++) {
            ck_assert_int_le(q[i], 1000);
            sum += q[i];
        }
        ck_assert_int_eq(sum, 2500);
    }
    for (int k = 0; k < rec.n; k++) ck_assert_int_le(rec.tokens[k], 2500);
    done_engine(&e, &s, cm);
}
END_TEST

/* Upstream with enable_chunked_prefill false: a waiting prompt is admitted only whole. */
START_TEST(upstream_no_chunked_prefill)
{
    engine_t e; scenario_t s; cost_model_t *cm;
    long q[16];
    ck_assert_int_eq(run_model("llama-3.1-8b",
                               "engine: {scheduler: upstream, enable_chunked_prefill: false,"
                               " max_num_batched_tokens: 3000, max_model_len: 3000, max_num_seqs: 8}\n"
                               "workload:\n  requests:\n"
                               "    - {id: A, prompt_tokens: 2000, output_tokens: 4}\n"
                               "    - {id: B, prompt_tokens: 2000, output_tokens: 4}\n",
                               &e, &s, &cm), 0);
    ck_assert_int_eq(rec.nrows[0], 1);                  /* B does not fit beside A */
    ck_assert_int_eq(chunks_of(e.wl.explicit_slot[1], q), 1);
    ck_assert_int_eq(q[0], 2000);
    done_engine(&e, &s, cm);
}
END_TEST

/* Upstream priority preemption of a victim AHEAD in the running list: its row already in
 * this step goes with it (the victim's position taken before preempt_last moves it to the
 * end; a kept row emitted a token for a request back in WAITING). */
static long rows_of_waiting;
static void no_waiting_rows(void *ctx, const engine_t *e, const step_rec_t *st)
{
    (void)ctx;
    for (int i = 0; i < st->nrows; i++)
        if (e->rp.r[st->rows[i].req].state == RQ_WAITING) rows_of_waiting++;
}

START_TEST(upstream_priority_victim_ahead)
{
    engine_t e; scenario_t s; cost_model_t *cm;
    char path[128], err[SCN_ERR_MAX], cwd[512];
    check_tmp_path(path, sizeof path, "pacesim-check-v");
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "name: t\nseed: 7\nmodel: %s/models/llama-3.1-8b.yaml\nhardware: {analytic: {tflops: 990, tbps: 4.8}}\n"
               "engine: {scheduler: upstream, scheduling_policy: priority, max_num_batched_tokens: 1024,"
               " max_num_seqs: 8, num_gpu_blocks: 14}\n"
               "workload:\n  requests:\n"      /* 7 blocks each: B passes its 7th block first */
               "    - {id: A, prompt_tokens: 100, output_tokens: 40, priority: 9, arrival: 0}\n"
               "    - {id: B, prompt_tokens: 110, output_tokens: 40, priority: 0, arrival: 0.001}\n",
            getcwd(cwd, sizeof cwd));
    ck_assert_int_eq(fclose(f), 0);
    ck_assert_msg(scn_load(path, NULL, 0, &s, err) == 0, "%s", err);
    cm = cost_analytic_new(&s.model, 1, 990, 4.8);
    ck_assert_ptr_nonnull(cm);
    ck_assert_msg(engine_init(&e, &s, cm, NULL) == 0, "%s", e.err);
    rows_of_waiting = 0;
    e.observer = no_waiting_rows;
    ck_assert_msg(engine_run(&e) == 0, "%s", e.err);
    ck_assert_int_gt(e.sum.preemptions, 0);           /* A, ahead of B, is B's victim */
    ck_assert_int_eq(rows_of_waiting, 0);
    ck_assert_int_eq(e.sum.tokens_emitted, 80);
    done_engine(&e, &s, cm);
    unlink(path);
}
END_TEST

/* Upstream, scheduling_policy priority: the waiting request of lowest priority value is
 * admitted first, whatever its arrival order. */
START_TEST(upstream_priority_admission)
{
    engine_t e; scenario_t s; cost_model_t *cm;
    ck_assert_int_eq(run_model("llama-3.1-8b",
                               "engine: {scheduler: upstream, scheduling_policy: priority,"
                               " max_num_batched_tokens: 1000, max_num_seqs: 8}\n"
                               "workload:\n  requests:\n"
                               "    - {id: A, prompt_tokens: 1000, output_tokens: 2, priority: 5}\n"
                               "    - {id: B, prompt_tokens: 1000, output_tokens: 2, priority: 1}\n"
                               "    - {id: C, prompt_tokens: 1000, output_tokens: 2, priority: 3}\n",
                               &e, &s, &cm), 0);
    ck_assert_int_eq(rec.rows[0][0].req, e.wl.explicit_slot[1]);
    ck_assert_int_eq(rec.rows[1][1].req, e.wl.explicit_slot[2]);   /* beside B's decode */
    double tb = e.rp.r[e.wl.explicit_slot[1]].t_ev[EV_FIRST_TOKEN], tc = e.rp.r[e.wl.explicit_slot[2]].t_ev[EV_FIRST_TOKEN],
           ta = e.rp.r[e.wl.explicit_slot[0]].t_ev[EV_FIRST_TOKEN];
    ck_assert(tb < tc && tc < ta);
    done_engine(&e, &s, cm);
}
END_TEST

/* Upstream under KV pressure: FCFS preempts the newest running request, the priority
 * policy the one of highest priority value (here the older one). */
START_TEST(upstream_priority_preemption)
{
    static const char *const pol[] = { "fcfs", "priority" };
    for (int k = 0; k < 2; k++) {
        char body[768];
        snprintf(body, sizeof body,
                 "engine: {scheduler: upstream, scheduling_policy: %s, max_num_batched_tokens: 2048,"
                 " max_num_seqs: 4, num_gpu_blocks: 24}\n"
                 "workload:\n  requests:\n"
                 "    - {id: A, prompt_tokens: 160, output_tokens: 100, priority: 9}\n"
                 "    - {id: B, prompt_tokens: 160, output_tokens: 100, priority: 0, arrival: {after: A, decoded: 2}}\n",
                 pol[k]);
        engine_t e; scenario_t s; cost_model_t *cm;
        ck_assert_int_eq(run_model("llama-3.1-8b", body, &e, &s, &cm), 0);
        long pa = e.rp.r[e.wl.explicit_slot[0]].preemptions, pb = e.rp.r[e.wl.explicit_slot[1]].preemptions;
        ck_assert_int_gt(e.sum.preemptions, 0);
        if (k == 0) { ck_assert_int_eq(pa, 0); ck_assert_int_gt(pb, 0); }
        else { ck_assert_int_gt(pa, 0); ck_assert_int_eq(pb, 0); }
        done_engine(&e, &s, cm);
    }
}

END_TEST

/* Every preempted request that is recomputed: its target is its prompt plus the tokens it
 * had emitted (vLLM recomputes the whole sequence), so at its final recompute chunk the
 * KV holds prompt + emitted-before tokens.  Counts the chunks checked. */
typedef struct {
    long checked, with_output;
    long bad_seq, bad_prompt, bad_emitted;
} recompute_t;

static void recompute_step(void *ctx, const engine_t *e, const step_rec_t *st)
{
    recompute_t *c = ctx;
    for (int i = 0; i < st->nrows; i++) {
        const step_row_t *row = &st->rows[i];
        const req_t *r = &e->rp.r[row->req];
        if (!row->prefill || r->preemptions == 0 || row->seq_len < r->target) continue;
        long before = r->emitted - row->emitted;   /* emitted before this final chunk */
        c->checked++;
        if (before > 0) c->with_output++;
        if (row->seq_len != r->prompt + before) {
            c->bad_seq = row->seq_len;
            c->bad_prompt = r->prompt;
            c->bad_emitted = before;
        }
    }
}

START_TEST(preemption_recomputes_prompt_and_output)
{
    const char *body =
        "engine: {max_num_batched_tokens: 2048, max_num_seqs: 4, tensor_parallel_size: 2,"
        " block_size: 1024, num_gpu_blocks: 16}\n"
        "workload:\n  requests:\n"
        "    - {id: X, prompt_tokens: 4000, output_tokens: 4000, arrival: 0}\n"
        "    - {id: Y, prompt_tokens: 4000, output_tokens: 4000, arrival: 0.001}\n";
    char err[SCN_ERR_MAX];
    engine_t e; scenario_t s; cost_model_t *cm;
    recompute_t c = { 0 };
    ck_assert_int_eq(scn_load(scenario_file(body), NULL, 0, &s, err), 0);
    cm = cost_analytic_new(&s.model, s.engine.tensor_parallel_size, s.analytic_tflops, s.analytic_tbps);
    ck_assert_int_eq(engine_init(&e, &s, cm, NULL), 0);
    e.observer = recompute_step;
    e.observer_ctx = &c;
    ck_assert_int_eq(engine_run(&e), 0);
    ck_assert_int_gt(e.sum.preemptions, 0);
    ck_assert_int_gt(c.with_output, 0);             /* some preempted request was decoding */
    ck_assert_msg(c.bad_seq == 0, "a recompute ended at %ld tokens, prompt %ld + %ld emitted", c.bad_seq,
                  c.bad_prompt, c.bad_emitted);
    ck_assert_int_eq(e.rp.r[e.wl.explicit_slot[1]].emitted, 4000);
    done_engine(&e, &s, cm);
}
END_TEST

START_TEST(dense_model_blocks_and_chunks)
{
    /* no GDN layers: block 16 (vLLM's default; the align rule has no state to size it by)
     * and prompt chunks cut by the budget only */
    char buf[128];
    const char *path = check_tmp_path(buf, sizeof buf, "pacesim-check-dense");
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("name: dense\nhardware: {analytic: {tflops: 100, tbps: 2}}\n"
          "model: {name: d, layers: 8, full_attention_layers: 8, hidden: 1024, intermediate: 4096, vocab: 32000,"
          " weight_bytes_per_param: 2, attention: {q_heads: 16, kv_heads: 4, head_dim: 64}}\n"
          "engine: {max_num_batched_tokens: 500, max_num_seqs: 4, max_model_len: 8192}\n"
          "workload:\n  requests:\n    - {id: A, prompt_tokens: 1234, output_tokens: 3}\n", f);
    ck_assert_int_eq(fclose(f), 0);
    char err[SCN_ERR_MAX];
    engine_t e; scenario_t s; cost_model_t *cm;
    ck_assert_msg(scn_load(path, NULL, 0, &s, err) == 0, "%s", err);
    cm = cost_analytic_new(&s.model, s.engine.tensor_parallel_size, s.analytic_tflops, s.analytic_tbps);
    ck_assert_int_eq(engine_init(&e, &s, cm, NULL), 0);
    memset(&rec, 0, sizeof rec);
    e.observer = record_step;
    e.observer_ctx = &rec;
    ck_assert_msg(engine_run(&e) == 0, "%s", e.err);
    ck_assert_int_eq(e.rep[0].sc.block, 16);
    long done = 0;
    int chunks = 0;
    for (int k = 0; k < rec.n; k++)
        if (rec.rows[k][0].prefill) {
            long want = 1234 - done < 500 ? 1234 - done : 500;
            ck_assert_int_eq(rec.rows[k][0].q, want);
            done += rec.rows[k][0].q;
            chunks++;
        }
    ck_assert_int_eq(done, 1234);
    ck_assert_int_eq(chunks, 3);                     /* ceil(1234 / 500) */
    ck_assert_int_eq(e.sum.requests_finished, 1);
    done_engine(&e, &s, cm);
    unlink(path);
}
END_TEST

int main(void)
{
    const check_test_t tests[] = {
        CHECK_TEST(pacing_anchor), CHECK_TEST(pacing_off_is_every_step),
        CHECK_TEST(never_paced_when_nobody_decodes), CHECK_TEST(final_chunk_not_paced),
        CHECK_LOOP(block_aligned_chunks, CHECK_N(chunk_cases)), CHECK_TEST(budget_and_running_first),
        CHECK_TEST(max_num_seqs_limits_admission), CHECK_TEST(mtp_budget_and_mean_acceptance),
        CHECK_TEST(mtp_per_position_acceptance_seeded), CHECK_TEST(preemption_recomputes_newest),
        CHECK_TEST(lookahead_on_every_allocation), CHECK_TEST(gate_holds_every_running_request), CHECK_TEST(preemption_keeps_the_gate),
        CHECK_TEST(pacing_active_by_prompt_computed),
        CHECK_TEST(prefix_cache_hits_whole_blocks), CHECK_TEST(preemption_into_a_full_waiting_queue),
        CHECK_TEST(dense_chunks_by_budget), CHECK_TEST(upstream_threshold),
        CHECK_TEST(upstream_no_chunked_prefill), CHECK_TEST(upstream_priority_admission), CHECK_TEST(upstream_priority_victim_ahead),
        CHECK_TEST(upstream_priority_preemption),
        CHECK_TEST(pacing_gate_outlives_the_decoder), CHECK_TEST(preemption_recomputes_prompt_and_output),
        CHECK_TEST(dense_model_blocks_and_chunks)};
    return check_main("sched", "core", tests, CHECK_N(tests), 60, NULL);
}
