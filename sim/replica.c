/* replica.c: one engine's set-up (KV capacity, routing, block pool), its step (schedule,
 * route, price) and a step's effects (tokens computed and emitted, requests finished).
 * See replica.h for the interface and its invariants. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_rng.h>
#include "kvpool.h"
#include "replica.h"

#define GIB 1073741824.0
#define ENG_MEM_GIB 80.0          /* device memory without a profile's mem_gib nor the scenario's (hardware.analytic
                                     without mem_gib: a warning says so) */
#define ENG_ACT_GIB 2.0           /* activations and workspaces, as vLLM's profiling run leaves them */
#define ENG_BLOCK_DEFAULT 16      /* vLLM's block size for a model with no GDN layers */
#define ENG_MAX_BLOCKS ((double)SCN_MAX_GPU_BLOCKS)  /* derived KV capacity cap (scenario.h: products stay in a long) */

/* The block pool caches GDN states: prefix caching on with mamba_cache_mode align (a model
 * with GDN layers in mode none cannot be prefix-cached, so the pool then caches nothing). */
static int pool_align(const scenario_t *s)
{
    return s->engine.prefix_pool && s->engine.enable_prefix_caching && s->model.n_gdn > 0 &&
           s->engine.mamba_cache_mode == MAMBA_ALIGN;
}

long replica_request_blocks(const replica_t *r, long prompt, long output)
{
    long maxlen = r->s->engine.max_model_len;
    long len = prompt >= maxlen || output > maxlen - prompt ? maxlen : prompt + output;
    /* the block pool in align mode holds a superseded state snapshot per GDN group
     * between a block boundary and the next allocation */
    long gdn = r->sc.gdn_blocks * (pool_align(r->s) ? 2 : 1);
    int b = r->sc.block;
    return len / b + (len % b + r->sc.spec_k + b - 1) / b + gdn;
}

int replica_init(replica_t *r, int idx, const scenario_t *s, cost_model_t *cost, const profile_t *prof,
                 reqpool_t *rp, char *err)
{
    memset(r, 0, sizeof *r);
    route_plan_init(&r->plan);
    route_plan_init(&r->draft_plan);
    r->idx = idx;
    r->s = s;
    r->cost = cost;
    r->err = err;
    sched_t *c = &r->sc;
    c->eng = &s->engine;
    c->pace = s->env.pace_steps;
    c->rp = rp;
    c->sum = &r->sum;
    c->err = err;
    const scn_engine_t *eng = &s->engine;
    int tp = eng->tensor_parallel_size;
    int kvb = kv_is_fp8(eng->kv_cache_dtype) ? 1 : 2;   /* bytes per KV element */
    c->spec_k = eng->spec_mtp ? eng->num_speculative_tokens : 0;
    /* the block size: as set; else a hybrid model's align size (a block's KV as large as
     * one request's GDN state); a model without GDN layers has no state to align to and
     * takes vLLM's default block of 16 tokens */
    c->block = eng->block_size > 0 ? eng->block_size
               : s->model.n_gdn > 0 ? model_block_size(&s->model, tp, kvb, c->spec_k) : ENG_BLOCK_DEFAULT;
    model_rank_t rk;
    if (model_rank(&s->model, tp, &rk) < 0) {
        snprintf(err, ENG_ERR_MAX, "%s: engine.tensor_parallel_size %d does not divide the model's heads", s->path, tp);
        return -1;
    }
    /* KV pool: a block holds `block` tokens of every full-attention layer; each running
     * request also holds its GDN state, counted in whole blocks of the same size. */
    double block_bytes = (double)c->block * model_attn_bytes_per_token(&s->model, tp, kvb) * s->model.n_full_attn;
    double gdn_bytes = (double)s->model.n_gdn * model_gdn_page_bytes(&s->model, tp, c->spec_k);
    c->gdn_blocks = block_bytes > 0 ? (long)ceil(gdn_bytes / block_bytes) : 0;
    r->kv_block_bytes = block_bytes;
    r->kv_state_bytes = gdn_bytes;
    if (eng->num_gpu_blocks > 0) {
        c->capacity = eng->num_gpu_blocks;
    } else {
        double mem_gib = prof && prof->mem_gib > 0 ? prof->mem_gib : s->hw_mem_gib > 0 ? s->hw_mem_gib : ENG_MEM_GIB;
        double mem = mem_gib * GIB * eng->gpu_memory_utilization;
        double weights = rk.params * s->model.weight_bytes_per_param;
        double act = ENG_ACT_GIB * GIB;
        double cap = floor((mem - weights - act) / block_bytes);
        if (!(cap >= 1)) {
            snprintf(err, ENG_ERR_MAX,
                     "%s:%d:%d: engine: the model's weights (%.1f GiB per rank) leave no room for a KV cache in %.1f GiB x %.2f;"
                     " set engine.num_gpu_blocks or use more tensor parallelism",
                     s->path, s->engine_line, s->engine_col, weights / GIB, mem_gib,
                     eng->gpu_memory_utilization);
            return -1;
        }
        c->capacity = cap < ENG_MAX_BLOCKS ? (long)cap : (long)ENG_MAX_BLOCKS;
    }
    if (eng->prefix_pool && c->capacity > KVPOOL_MAX_BLOCKS) {
        snprintf(err, ENG_ERR_MAX, "%s:%d:%d: engine: the KV cache sized from memory holds %ld blocks, more than the"
                 " block pool's %ld (~45 bytes of state each): set engine.num_gpu_blocks", s->path, s->engine_line,
                 s->engine_col, c->capacity, (long)KVPOOL_MAX_BLOCKS);
        return -1;
    }
    r->sum.block_size = c->block;
    r->sum.capacity_blocks = c->capacity;
    r->rcfg = (route_cfg_t){
        .smallq_max_q = s->env.smallq_decode_max_q,
        .prefix_decode_rows = s->env.prefix_decode_rows,
        .bm32_any_page = s->env.d256_bm32_any_page,
        .page = c->block,
        .kv_dtype = eng->kv_cache_dtype,
        .group = rk.group,
        .fork_kernels = cost_profile_fork_kernels(prof),
        .fp8_bridge_page = ROUTE_NATIVE_PAGE,
        .varlen = eng->attention_backend == ATTN_BACKEND_VARLEN,
        .grouped_verify = s->env.grouped_verify,
    };
    /* chunks end on block boundaries only where a recurrent state is cached per block */
    c->align = s->model.n_gdn > 0 && eng->mamba_cache_mode == MAMBA_ALIGN;
    return 0;
}

int replica_setup(replica_t *r, const profile_t *prof, int quiet)
{
    const scenario_t *s = r->s;
    const scn_engine_t *eng = &s->engine;
    sched_t *c = &r->sc;
    /* upstream in align mode: a chunk capped below one block by the threshold or the budget is
     * cut to 0 tokens by _mamba_block_aligned_split (num_new_tokens // block_size * block_size),
     * and schedule() then skips the request (`if num_new_tokens == 0: ... continue`) every
     * step: vLLM would never schedule a prompt of a block or more
     * (vllm-project/vllm:vllm/v1/core/sched/scheduler.py@00024d314514900f361ad072af6931e403b7f589) */
    if (c->align && eng->scheduler == SCHED_UPSTREAM) {
        long thr = eng->long_prefill_token_threshold, cap = thr > 0 && thr < eng->max_num_batched_tokens
                                                            ? thr : eng->max_num_batched_tokens;
        if (cap < c->block) {
            snprintf(r->err, ENG_ERR_MAX, "%s:%d:%d: engine.%s: %ld is below the block size %d of this hybrid model in"
                     " mamba_cache_mode align: every chunk that does not finish a prompt is cut to 0 tokens"
                     " (_mamba_block_aligned_split), so vLLM would never schedule a prompt of %d tokens or more",
                     s->path, s->engine_line, s->engine_col,
                     cap == thr ? "long_prefill_token_threshold" : "max_num_batched_tokens", cap, c->block, c->block);
            return -1;
        }
    }
    const char *varlen_law = kv_is_fp8(eng->kv_cache_dtype) ? "attn.varlen.fp8" : "attn.varlen.fp16";
    if (prof && r->rcfg.varlen && !prof_find(prof, varlen_law) && !eng->attention_backend_set) {
        /* upstream's default backend, but the profile has no varlen law: the fork's router */
        if (!quiet)
            fprintf(stderr, "warning: %s: profile %s lacks %s: attention priced by the fork's kernels"
                    " (set engine.attention_backend to choose)\n", s->path, prof->path, varlen_law);
        r->rcfg.varlen = 0;
    }
    if (prof && r->rcfg.varlen && !prof_find(prof, varlen_law)) {
        snprintf(r->err, ENG_ERR_MAX,
                 "%s:%d:%d: engine.attention_backend: profile %s lacks %s: run calib with the varlen"
                 " attention timer (kernels/attn_varlen.cu), or use attention_backend: fork",
                 s->path, s->engine_line, s->engine_col, prof->path, varlen_law);
        return -1;
    }
    if (!quiet && prof && s->model.n_moe > 0 && !prof_find(prof, "gemm.moe.fp16"))
        fprintf(stderr, "warning: %s: profile %s has no law gemm.moe.fp16: the routed experts are priced by the"
                " dense gemm law, one GEMM per routed expert (calib --moe measures it)\n", s->path, prof->path);
    if (!quiet && prof && eng->kv_cache_dtype == KV_FP8_E4M3)
        fprintf(stderr, "warning: %s: kv_cache_dtype fp8_e4m3: priced with the fp8_e5m2 laws (no e4m3 law in %s;"
                " decode takes the scalar kernel, the fork has no e4m3 XQA)\n", s->path, prof->path);
    r->rng_acc = gsl_rng_alloc(gsl_rng_mt19937);
    int cap_rows = eng->max_num_seqs + 1;
    c->rows = calloc((size_t)cap_rows, sizeof *c->rows);
    r->segs = calloc((size_t)cap_rows, sizeof *r->segs);
    c->running = calloc((size_t)eng->max_num_seqs + 1, sizeof *c->running);
    if (!r->rng_acc || !c->rows || !r->segs || !c->running) {
        snprintf(r->err, ENG_ERR_MAX, "out of memory");
        return -1;
    }
    /* the seed's first stream: MTP acceptance (the second is the workload's); each further
     * replica a stream of its own */
    gsl_rng_set(r->rng_acc, (s->seed * 2 + 1) ^ ((uint64_t)r->idx * 0x9e3779b97f4a7c15ull));
    if (!eng->prefix_pool) return 0;
    kvpool_cfg_t kc = kvpool_cfg_hybrid(c->capacity, c->block, (int)(c->gdn_blocks < KVPOOL_MAX_GROUPS ? c->gdn_blocks : KVPOOL_MAX_GROUPS));
    kc.mamba_align = pool_align(s);
    kc.enable_caching = eng->enable_prefix_caching && (s->model.n_gdn == 0 || kc.mamba_align);
    kc.eagle = eng->spec_mtp;
    kc.retention = eng->retention < 0 ? KVPOOL_RETAIN_ALL : eng->retention;
    const char *rule = NULL;
    if (c->gdn_blocks >= KVPOOL_MAX_GROUPS || kvpool_cfg_check(&kc, &rule) < 0) {
        int at_ret = eng->retention >= 0 && rule && strstr(rule, "retention");
        snprintf(r->err, ENG_ERR_MAX, "%s:%d:%d: %s: %s (block size %d, %ld GDN state groups)", s->path,
                 at_ret ? eng->retention_line : s->engine_line, at_ret ? eng->retention_col : s->engine_col,
                 at_ret ? "engine.prefix_cache_retention_interval" : "engine.prefix_cache_model",
                 rule ? rule : "more GDN state groups than the pool models (15)", c->block, c->gdn_blocks);
        return -1;
    }
    if (!(c->kv = kvpool_create(&kc))) {
        snprintf(r->err, ENG_ERR_MAX, "out of memory (prefix cache)");
        return -1;
    }
    return 0;
}

void replica_free(replica_t *r)
{
    if (r->rng_acc) gsl_rng_free(r->rng_acc);
    kvpool_free(r->sc.kv);
    sched_free(&r->sc);
    free(r->segs);
    route_plan_free(&r->plan);
    route_plan_free(&r->draft_plan);
    memset(r, 0, sizeof *r);
}

/* The waiting queue's length integrated up to t (before it changes at t). */
static inline void queue_tick(replica_t *r, double t)
{
    if (t > r->q_t) {
        r->q_area += (double)r->sc.wq_len * (t - r->q_t);
        r->q_t = t;
    }
}

int replica_admit(replica_t *r, int slot)
{
    req_t *q = &r->sc.rp->r[slot];
    if (r->clock) queue_tick(r, *r->clock);
    q->replica = r->idx;
    if (r->sc.kv && !q->kv) {
        kvpool_content_t c = { q->runs, q->nruns, q->out_key, 0 };
        if (!(q->kv = kvpool_seq_new(r->sc.kv, &c, q->prompt))) {
            snprintf(r->err, ENG_ERR_MAX, "out of memory (prefix cache)");
            return -1;
        }
    }
    r->n_in++;
    if (sched_enqueue(&r->sc, slot) < 0) {
        snprintf(r->err, ENG_ERR_MAX, "out of memory");
        return -1;
    }
    if (r->sc.wq_len > r->peak_waiting) r->peak_waiting = r->sc.wq_len;
    return 0;
}

/* ---- a step's effects ------------------------------------------------------------ */

static long accepted_drafts(replica_t *e, req_t *r, int drafts)
{
    const scn_accept_t *a = &e->s->accept;
    if (drafts <= 0) return 0;
    if (!a->per_position) {
        double m = a->mean_accepted * drafts / (e->sc.spec_k > 0 ? e->sc.spec_k : 1);
        r->acc_carry += m;
        long k = (long)floor(r->acc_carry + 1e-9);
        if (k > drafts) k = drafts;
        r->acc_carry -= (double)k;
        return k;
    }
    long k = 0;
    while (k < drafts && k < a->n_probs && gsl_rng_uniform(e->rng_acc) < a->probs[k]) k++;
    return k;
}

static void set_event(req_t *r, req_event_t ev, double t)
{
    if (r->t_ev[ev] < 0) r->t_ev[ev] = t;
}

/* The request at running position run_pos leaves the replica: off the running list, its
 * blocks back to the pool (keep: held until its KV has been sent, replica_kv_sent). */
static req_t *leave(replica_t *e, int run_pos, int keep)
{
    sched_t *c = &e->sc;
    req_t *r = &c->rp->r[c->running[run_pos]];
    if (keep) e->xfer_blocks += r->blocks;
    else sched_release(c, r);
    memmove(&c->running[run_pos], &c->running[run_pos + 1], (size_t)(c->nrun - run_pos - 1) * sizeof(int));
    c->nrun--;
    e->n_out++;
    return r;
}

static int finish_request(replica_t *e, int run_pos)
{
    req_t *r = leave(e, run_pos, 0);
    r->state = RQ_DONE;
    set_event(r, EV_FINISHED, e->t_end);
    run_summary_t *S = &e->sum;
    S->requests_finished++;
    e->served++;
    if (r->emitted != r->output || r->t_ev[EV_FIRST_TOKEN] < 0) {
        snprintf(e->err, ENG_ERR_MAX, "invariant violated: request %ld finished with %ld of %ld tokens%s",
                 r->serial, r->emitted, r->output, r->t_ev[EV_FIRST_TOKEN] < 0 ? " and no first token" : "");
        return -1;
    }
    double ttft = r->t_ev[EV_FIRST_TOKEN] - r->t_ev[EV_ARRIVAL];
    S->ttft_sum += ttft;
    S->ttft_n++;
    if (r->output > 1) {
        S->tpot_sum += (r->t_ev[EV_FINISHED] - r->t_ev[EV_FIRST_TOKEN]) / (double)(r->output - 1);
        S->tpot_n++;
    }
    S->itl_sum += r->itl_sum;
    S->itl_n += r->itl_n;
    if (metrics_on_finish(e->m, r) < 0) return -1;
    return e->hooks.on_finish ? e->hooks.on_finish(e->hooks.ctx, e, r) : 0;
}

/* Layer-wise KV transfer (kvxfer.h): a prefill chunk of a request that will be handed on
 * ends at t_end; its share of the request's KV (by tokens; a prefix-cache hit's share
 * is ready when it is admitted) goes out layer by layer over the step. */
static void kv_chunk_sent(replica_t *e, req_t *r, const step_row_t *row, double t_end)
{
    req_aux_t *x = &e->sc.rp->x[row->req];
    double total = replica_kv_bytes(e, r->target), d = e->rec.dt, t0 = t_end - d;
    if (row->admitted) x->xfer_free = t0 + total * (double)r->cache_hit / (double)r->target / e->xfer->bw;
    x->xfer_free = kvx_layer_chunk(e->xfer, x->xfer_free, t0, d, total * (double)row->q / (double)r->target);
}

void replica_kv_sent(replica_t *e, req_t *q)
{
    e->xfer_blocks -= q->blocks;
    sched_release(&e->sc, q);
    if (q->kv) kvpool_seq_free(e->sc.kv, q->kv);
    q->kv = NULL;
}

/* Apply the step in flight: tokens computed and emitted, events, finishes. */
static int apply_step(replica_t *e, int n, double t_end)
{
    sched_t *c = &e->sc;
    req_t *pool = c->rp->r;            /* no request is created during a step: the pool stays put */
    int want_itl = metrics_want_itl(e->m), handoff = e->hooks.on_handoff != NULL;
    long emitted_total = 0;
    int done = 0;                      /* rows whose request has all its tokens now */
#if defined(__GNUC__)
    /* in a cluster the other replicas' steps since this one started have evicted its
     * requests: ask for the two lines a row touches (request.h) all at once */
    for (int i = 0; e->shared && i < n; i++) {
        const req_t *r = &pool[c->rows[i].req];
        __builtin_prefetch(&r->computed, 1);
        __builtin_prefetch(&r->t_last_tok, 1);
    }
#endif
    for (int i = 0; i < n; i++) {
        step_row_t *row = &c->rows[i];
        req_t *r = &pool[row->req];
        long tok = 0;
        if (row->prefill) {
            /* a chunk continues the prompt where the KV ends (at admission: where the
             * prefix-cache hit ends) and never passes the prompt: so at the final chunk,
             * tokens computed + cached = prompt (+ tokens emitted before a preemption) */
            long start = row->seq_len - row->q;
            if (start != r->computed || (row->admitted && start != r->cache_hit) || row->seq_len > r->target
                || row->q < 1) {
                snprintf(e->err, ENG_ERR_MAX,
                         "invariant violated: step %ld: prefill chunk [%ld, %ld) of request %ld does not continue"
                         " its KV (%ld computed, %ld cached, prompt %ld)",
                         c->step_no, start, row->seq_len, r->serial, r->computed, r->cache_hit, r->target);
                return -1;
            }
            r->computed_fresh += row->q;
            r->computed = row->seq_len;
            if (handoff && r->handoff == HANDOFF_PREFILL) {
                /* disaggregated prefill: the token its final chunk samples is discarded (the
                 * prefill instance serves max_tokens 1; the client's tokens come from the
                 * decode instance); the KV goes out layer by layer as each chunk runs */
                if (e->xfer && e->xfer->layerwise) kv_chunk_sent(e, r, row, t_end);
            } else if (r->computed >= r->target) {
                tok = 1;   /* the final chunk samples a token */
            }
        } else {
            long drafts = row->q - 1;
            tok = 1 + accepted_drafts(e, r, (int)drafts);
            r->computed += tok;
        }
        if (tok > r->output - r->emitted) tok = r->output - r->emitted;
        if (tok > 0) {
            if (r->t_last_tok >= 0) {
                r->itl_sum += t_end - r->t_last_tok;
                r->itl_n++;
                if (want_itl && metrics_on_itl(e->m, t_end - r->t_last_tok) < 0) return -1;
            }
            r->t_last_tok = t_end;
            r->emitted += tok;
            set_event(r, EV_FIRST_TOKEN, t_end);
        }
        row->emitted = tok;
        emitted_total += tok;
        done += r->emitted >= r->output && r->computed >= r->target;
    }
    e->sum.tokens_emitted += emitted_total;
    /* a request finishes at the end of a step that scheduled it: with none done (most steps)
     * and no hand-off the running list need not be walked */
    for (int i = done || handoff ? c->nrun - 1 : -1; i >= 0; i--) {
        req_t *r = &pool[c->running[i]];
        if (r->emitted >= r->output && r->computed >= r->target) {
            if (finish_request(e, i) < 0) return -1;
        } else if (handoff && r->handoff == HANDOFF_PREFILL && r->computed >= r->target) {
            /* disaggregated prefill: the prompt is done here; its blocks stay until its
             * KV has been sent (the connector's delayed free) */
            leave(e, i, 1);
            r->state = RQ_XFER;
            e->prefills++;
            if (e->hooks.on_handoff(e->hooks.ctx, e, r) < 0) return -1;
        }
    }
    return 0;
}

/* After a schedule() that scheduled nothing and preempted nothing: if a running request
 * waits for its pacing gate (next_eligible), the steps until the nearest gate opens are
 * empty too, and the reference counts every one (current_step += 1 on each schedule()
 * call, docs/reference-system.md, "The scheduler").  An empty step launches nothing (the
 * model runner returns at once when no token is scheduled), so it costs no time, and
 * with the clock and every request unchanged those steps are all alike: current_step
 * jumps to the step before the gate opens, at most PACE_STEPS - 1 steps on.  1 if it
 * jumped (schedule again now), 0 if no request waits for a gate. */
static int empty_steps(replica_t *e)
{
    sched_t *c = &e->sc;
    long gate = LONG_MAX;
    for (int i = 0; i < c->nrun; i++) {
        const req_t *r = &c->rp->r[c->running[i]];
        if (r->computed < r->target && r->next_eligible > c->step_no && r->next_eligible < gate)
            gate = r->next_eligible;
    }
    if (gate == LONG_MAX) return 0;
    e->sum.empty_steps += gate - c->step_no;   /* this step and the ones skipped */
    c->step_no = gate - 1;
    return 1;
}

int replica_start_step(replica_t *e, double now)
{
    const scenario_t *s = e->s;
    sched_t *c = &e->sc;
    int n, preempted;
    queue_tick(e, now);
    for (;;) {
        if (c->nrun == 0 && c->wq_len == 0) return 0;
        preempted = 0;
        n = sched_step(c, &preempted);
        if (n < 0) return -1;
        if (n == 0 && preempted) {       /* the requests preempted wait; schedule again now */
            e->sum.empty_steps++;
            continue;
        }
        if (n == 0 && empty_steps(e)) continue;
        if (n == 0) return 0;            /* nothing runnable (KV exhausted with nothing to preempt) */
        break;
    }
    /* the drafter's passes 2..K: one token per scheduled request, prefilling ones
     * included (EagleSpeculator.multi_step_decode over num_reqs rows); a request the
     * previous step did not schedule has its whole token list sent again
     * (_make_cached_request_data: all_token_ids when not scheduled_in_prev_step) */
    long tokens = 0, sampled = 0, resent = 0;
    int ndec = 0;
    req_t *pool = c->rp->r;
    for (int i = 0; i < n; i++) {
        const step_row_t *row = &c->rows[i];
        tokens += row->q;
        e->segs[i] = (kseg_t){ row->req, row->q, row->seq_len };
        req_t *r = &pool[row->req];
        if (!row->prefill) ndec++, sampled += row->q;
        else if (row->seq_len >= r->target) sampled += 1;
        if (row->admitted) set_event(r, EV_ADMITTED, now);
        if (r->last_step == 0 || r->last_step != c->step_no - 1) resent += r->prompt + r->emitted;
        r->last_step = c->step_no;
    }
    step_type_t type = ndec < n && ndec > 0 ? STEP_MIXED : ndec < n ? STEP_PREFILL_ONLY : STEP_DECODE_ONLY;
    if (route_step(&e->rcfg, e->segs, n, &e->plan) < 0) {
        snprintf(e->err, ENG_ERR_MAX, "out of memory (routing)");
        return -1;
    }
    const route_plan_t *draft = NULL;
    if (s->engine.spec_dflash2) {
        /* the DFlash2 draft model's attention: the step's rows, a decoding row's block read
         * against its context in one scan (the verify routes are the target's) */
        route_cfg_t dc = e->rcfg;
        dc.grouped_verify = ROUTE_GROUPED_DRAFT;
        if (route_step(&dc, e->segs, n, &e->draft_plan) < 0) {
            snprintf(e->err, ENG_ERR_MAX, "out of memory (routing)");
            return -1;
        }
        draft = &e->draft_plan;
    } else if (c->spec_k > 1) {
        for (int i = 0; i < n; i++) e->segs[i] = (kseg_t){ c->rows[i].req, 1, c->rows[i].seq_len };
        if (route_step(&e->rcfg, e->segs, n, &e->draft_plan) < 0) {
            snprintf(e->err, ENG_ERR_MAX, "out of memory (routing)");
            return -1;
        }
        draft = &e->draft_plan;
    }
    cost_step_t cin = { &e->plan, draft, tokens, n, ndec, sampled, c->spec_k, resent, c->nrun,
                        s->engine.spec_mtp ? s->engine.draft_layers : 0 };
    /* field by field: a compound literal of the record compiles to a block clear (rep stos) */
    step_rec_t *rec = &e->rec;
    rec->no = c->step_no;
    rec->t0 = now;
    rec->dt = 0;
    rec->type = type;
    rec->nrows = n;
    rec->tokens = tokens;
    rec->rows = c->rows;
    rec->plan = &e->plan;
    cost_breakdown_clear(&rec->cost);
    rec->preempted = preempted;
    rec->replica = e->idx;
    if (e->cost->step(e->cost, &cin, &e->rec.cost) < 0) {
        snprintf(e->err, ENG_ERR_MAX, "%s: cost model (%s): %s", s->profile_path[0] ? s->profile_path : s->path,
                 e->cost->name, e->cost->err);
        return -1;
    }
#ifdef PACESIM_DEBUG
    /* no item priced below its roofline floor (cost_profile.c's bounds) */
    if (cost_floor_check(e->cost, &cin, e->err, ENG_ERR_MAX) < 0) return -1;
#endif
    double dt = e->rec.dt = e->rec.cost.total;
    if (!(dt > 0) || !isfinite(dt)) {
        snprintf(e->err, ENG_ERR_MAX, "%s: cost model gave a non-positive step time (%g s) at step %ld",
                 s->path, dt, c->step_no);
        return -1;
    }
    double t_end = now + dt;
    /* a clock far from 0 rounds a short step away (TTFT 0 at 1e15 s): refuse the run */
    if (!(fabs((t_end - now) - dt) <= ENG_STEP_RTOL * dt)) {
        snprintf(e->err, ENG_ERR_MAX, "%s: at %.17g s the simulated clock cannot hold a step of %g s (a double"
                 " resolves %g s there, more than %g of the step): the run reached that time with work left; keep"
                 " arrivals and stop.max_time_s earlier (docs/scenarios.md, Input limits)", s->path, now, dt,
                 nextafter(t_end, INFINITY) - t_end, ENG_STEP_RTOL);
        return -1;
    }
    e->nrows = n;
    e->t_end = t_end;
    e->busy = 1;
    return 1;
}

int replica_end_step(replica_t *e)
{
    sched_t *c = &e->sc;
    e->busy = 0;
    if (apply_step(e, e->nrows, e->t_end) < 0) return -1;
    run_summary_t *S = &e->sum;
    S->steps++;
    S->steps_by_type[e->rec.type]++;
    S->makespan = e->t_end;
    if (c->nrun > S->peak_running) S->peak_running = c->nrun;
    e->busy_s += e->rec.dt;
    e->rows_sum += e->nrows;
    e->kv_blocks_sum += (double)c->used_blocks;
    if (c->used_blocks < 0 || c->used_blocks > c->capacity) {
        snprintf(e->err, ENG_ERR_MAX, "invariant violated: %ld KV blocks in use of %ld", c->used_blocks, c->capacity);
        return -1;
    }
    return 0;
}

int replica_check(replica_t *e)
{
    const sched_t *c = &e->sc;
    const reqpool_t *rp = c->rp;
    long held = 0;
    for (int i = 0; i < c->nrun; i++) {
        const req_t *r = &rp->r[c->running[i]];
        if (r->state != RQ_RUNNING || r->replica != e->idx) {
            snprintf(e->err, ENG_ERR_MAX, "invariant violated: step %ld: request %ld is on the running list twice"
                     " or in state %d", c->step_no, r->serial, (int)r->state);
            return -1;
        }
        held += r->blocks;
    }
    held += e->xfer_blocks;
    for (int i = 0; i < c->wq_len; i++) {
        const req_t *r = &rp->r[c->waitq[(c->wq_head + i) % c->wq_cap]];
        if (r->state != RQ_WAITING || r->replica != e->idx) {
            snprintf(e->err, ENG_ERR_MAX, "invariant violated: step %ld: a queued request is not waiting", c->step_no);
            return -1;
        }
    }
    long nrun = 0, nwait = 0;
    for (int i = 0; i < rp->n; i++) {
        if (rp->r[i].replica != e->idx) continue;
        nrun += rp->r[i].state == RQ_RUNNING;
        nwait += rp->r[i].state == RQ_WAITING;
    }
    if (nrun != c->nrun || nwait != c->wq_len) {
        snprintf(e->err, ENG_ERR_MAX, "invariant violated: step %ld: %ld running / %ld waiting requests but lists of"
                 " %d / %d (a request lost or duplicated)", c->step_no, nrun, nwait, c->nrun, c->wq_len);
        return -1;
    }
    if (e->n_in != e->n_out + c->nrun + c->wq_len) {
        snprintf(e->err, ENG_ERR_MAX, "invariant violated: step %ld: %ld requests arrived but %ld finished + %d running"
                 " + %d waiting", c->step_no, e->n_in, e->n_out, c->nrun, c->wq_len);
        return -1;
    }
    /* with the block pool a shared block counts once in use and once per holder */
    const char *what = NULL;
    if (c->kv && kvpool_check(c->kv, &what) < 0) {
        snprintf(e->err, ENG_ERR_MAX, "invariant violated: step %ld: prefix cache: %s", c->step_no, what);
        return -1;
    }
    if ((c->kv ? held < c->used_blocks : held != c->used_blocks) || c->used_blocks < 0 || c->used_blocks > c->capacity) {
        snprintf(e->err, ENG_ERR_MAX, "invariant violated: step %ld: %ld KV blocks in use, running requests hold %ld,"
                 " capacity %ld", c->step_no, c->used_blocks, held, c->capacity);
        return -1;
    }
    return 0;
}

void replica_finish(replica_t *e)
{
    if (!e->sc.kv) return;
    kvpool_stats_t st;
    kvpool_get_stats(e->sc.kv, &st);
    run_summary_t *S = &e->sum;
    S->pool = 1;
    S->pc_queries = st.queries;
    S->pc_query_tokens = st.query_tokens;
    S->pc_hit_tokens = st.hit_tokens;
    S->pc_hit_blocks = st.hit_blocks;
    S->pc_evictions = st.evictions;
    S->pc_allocated = st.allocated;
}

long replica_cached_prefix(const replica_t *r, const req_t *q)
{
    if (!r->sc.kv || !q->runs) return 0;
    kvpool_content_t c = { q->runs, q->nruns, q->out_key, 0 };
    return kvpool_cached_prefix(r->sc.kv, &c, q->target);
}
