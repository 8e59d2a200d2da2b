/* trace_import: public LLM serving traces as pacesim's CSV trace (workload.trace).
 *
 * `pacesim trace import FORMAT FILE` reads one of the traces people replay and writes the
 * CSV the workload reads (docs/scenarios.md, workload.trace): arrival_s,prompt_tokens,
 * output_tokens and, for Mooncake, the block pool's columns with hash_ids.  Arrivals are made
 * relative to the first request (the first arrives at 0) and divided by --speedup.
 *
 *   azure     Azure LLM inference traces 2023 and 2024 (Azure/AzurePublicDataset:
 *             AzureLLMInferenceDataset2023.md@1a61e6c6, AzureLLMInferenceDataset2024.md@04e28b8a):
 *             CSV TIMESTAMP,ContextTokens,GeneratedTokens, TIMESTAMP a date and time
 *             "YYYY-MM-DD HH:MM:SS[.fraction][Z|+HH:MM|-HH:MM]" (2023: 7 decimals, 2024: 6 and
 *             an offset); prompt = ContextTokens, output = GeneratedTokens.
 *   burstgpt  BurstGPT (HPMLL/BurstGPT): CSV with a header naming Timestamp (seconds from the
 *             trace's start), Request tokens and Response tokens among its columns (Model,
 *             Total tokens, Log Type, and in later releases Session ID, Elapsed time); a
 *             failed request (Response tokens 0) is left out and counted.
 *   mooncake  Mooncake's traces (kvcache-ai/Mooncake: FAST25-release/README.md@40ea55f8): JSON
 *             lines {"timestamp": MS, "input_length": N, "output_length": N, "hash_ids": [...]},
 *             timestamp in milliseconds, one id a block of 512 tokens (the README's sample:
 *             14 ids for 6955 tokens); hash_ids become the CSV's hash_ids column (512:ID ...), so
 *             the block pool (engine.prefix_cache_model: pool) shares exactly the blocks the
 *             trace's requests share.
 *   sharegpt  ShareGPT (the JSON array vLLM's benchmark reads, ShareGPT_V3_unfiltered_cleaned_split
 *             .json): each entry's first two turns of "conversations" are the prompt and the
 *             completion, as vllm-project/vllm:vllm/benchmarks/datasets.py@f2e97dda (ShareGPTDataset)
 *             takes them; entries with fewer than two turns are left out, and, unless
 *             --no-prune, those vLLM's is_valid_sequence prunes (prompt or output under 4
 *             tokens, prompt over 1024, prompt + output over 2048).  Token counts come from no
 *             tokenizer: tokens = ceil(characters / --chars-per-token) (default 4, the common
 *             rule of thumb for English text; characters are Unicode code points), a stated
 *             approximation.  ShareGPT has no times: every request arrives at 0 (vLLM's
 *             --request-rate inf) or, with --rate R, Poisson at R a second (--seed).
 *
 * A malformed row is refused with one line "FILE:LINE:COL: FORMAT: message" and exit 2. */
#ifndef PACESIM_TRACE_IMPORT_H
#define PACESIM_TRACE_IMPORT_H

#include <stdio.h>

#include "simclock.h"

/* An imported arrival past SIM_CLOCK_MAX_S is refused at its record. */
/* --speedup's range, from it: below 1e-7 one second of the trace lands past the limit,
 * above 1e7 the limit's whole span shrinks under a second (every arrival rounds to 0). */
#define TRACE_IMPORT_SPEEDUP_MIN (1 / SIM_CLOCK_MAX_S)
#define TRACE_IMPORT_SPEEDUP_MAX SIM_CLOCK_MAX_S

typedef struct trace_import_opts {
    const char *format;           /* azure, burstgpt, mooncake, sharegpt */
    long max_rows;                /* requests written at most (0: all) */
    double speedup;               /* arrivals divided by it (1: as recorded) */
    long max_model_len;           /* > 0: requests with prompt + output past it are left out, counted */
    double chars_per_token;       /* sharegpt */
    double rate;                  /* sharegpt: Poisson arrivals a second (0: all at 0) */
    unsigned long seed;           /* sharegpt with rate */
    int no_prune;                 /* sharegpt: keep what vLLM's benchmark prunes */
    long hash_block;              /* mooncake: tokens a hash id covers (512) */
} trace_import_opts_t;

typedef struct trace_import_stats {
    long rows;                    /* source records read */
    long written;
    long skipped_failed;          /* burstgpt: failed requests; mooncake: no output */
    long skipped_len;             /* past max_model_len */
    long skipped_pruned;          /* sharegpt: fewer than two turns, or pruned */
    double span_s;                /* the last arrival written */
} trace_import_stats_t;

/* The defaults (speedup 1, 4 characters a token, 512-token hash blocks). */
trace_import_opts_t trace_import_defaults(void);
/* Import `in` as o->format into out.  0; 2 bad input (err: one line FILE:LINE:COL: ...);
 * 1 a read or write failure or out of memory (err says which). */
int trace_import(const char *in, FILE *out, const trace_import_opts_t *o, trace_import_stats_t *st, char *err,
                 size_t errn);

#endif
