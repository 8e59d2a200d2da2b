#!/usr/bin/env bash
# replay_lib.sh -- the library's GPU replay targets (scenarios/lib/h200-*.yaml: a dense and an
# MoE model, upstream scheduler, varlen attention, batched Poisson loads: the 48-request ones
# and the wide-batch class, 64-256 sequences at budgets of 4K-16K near saturation): for each
# model, calib measures the laws these scenarios price (the varlen kernel, the GEMMs of the
# model's shapes, the MoE grouped GEMM from the model's moe: keys, elementwise, and the fp16
# attention laws a profile must hold for an fp16 KV cache, with the sustained-load probes),
# then pacesim-gpu replays each of the model's scenarios with that profile, REPEATS times
# (default 2; all scenarios once, then all again: the runs' spread is the GPU's own noise).
# Usage:
#   calib/replay_lib.sh OUTDIR [BINDIR]      (BINDIR holds calib and pacesim-gpu; default bin)
# Writes OUTDIR/lib-<m>/profile.yaml, <scenario>.steps.csv (the first run), <scenario>.run<K>.steps.csv
# (run K >= 2) and <scenario>.txt (calib's fit table, each run's report, the tails of both
# stderrs) -- a folder that is a recording set for tests/data/replay/ as it is -- and
# OUTDIR/lib-logs.tar.gz (the first run's --items CSVs, calib's --points-log and the whole stderr
# logs).  T_CALIB (default 320) and T_SCENARIO (default 90) cap each calib and replay, in
# seconds; CALIB_BUDGET_S (default 150) stops calib's grid (its sustained probes then skip).
# LIB_PAIRS="model:scenario[,scenario...] ..." replays only those (default: both models, all
# their scenarios).  STAGE=calib only calibrates; STAGE=runs only replays (RUNS / REPEATS) with
# the profile an earlier calib of this card left in OUTDIR/lib-<m>/; LOGS=DIR keeps the logs there
# across calls (default a temporary folder), so a set's calib and runs can span several calls
# of one machine (calib/device_record.sh).  The replays run back to back (pacesim-gpu's
# --back-to-back: each step's items queued on one stream, one sync a step, the GPU's idle before
# each step recorded as gap_s); REPLAY_MODE=item replays item by item instead and names its files
# apart, so one folder holds both and stays a set of the back-to-back runs: <scenario>.item.csv,
# <scenario>.runK.item.csv, <scenario>.item.txt (the logs' too; calib/stage_lib.sh).  A
# back-to-back run is refused (status 1) beside an item-by-item recording under the set's names.
set -u
. "$(dirname "$0")/stage_lib.sh"
replay_mode replay_lib.sh
out=${1:?usage: calib/replay_lib.sh OUTDIR [BINDIR]}
bindir=${2:-bin}
laws=attn.prefill_bm32.fp16,attn.prefill_generic.fp16,attn.prefill_lowsmem.fp16,attn.decode_xqa.fp16
laws=$laws,attn.decode_scalar.fp16,attn.varlen,gemm,elementwise
mkdir -p "$out"
out=$(cd "$out" && pwd)
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
stage_and_dir replay_lib.sh "${LOGS:-}"
logs=$dir
{ nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv; date -u; } \
    >> "$logs/gpu.txt" 2>&1
status=0
llama=h200-llama8b-poisson,h200-llama8b-wide-s64-b4096,h200-llama8b-wide-s128-b8192,h200-llama8b-wide-s256-b16384
qwen=h200-qwen3-30b-a3b-poisson,h200-qwen3-30b-a3b-wide-s128-b8192,h200-qwen3-30b-a3b-wide-s256-b16384
for pair in ${LIB_PAIRS:-llama-3.1-8b:$llama qwen3-30b-a3b:$qwen}; do
    m=${pair%%:*} scns=${pair#*:}
    first=${scns%%,*} short=${first#h200-} short=${short%-poisson}
    dir=$out/lib-$short
    mkdir -p "$dir"
    rep=$dir/$first.txt
    if [ "$stage" != runs ]; then
        echo "== calib $m $(date -u +%T)" | tee "$rep"
        t0=$(date +%s)
        timeout "${T_CALIB:-320}" "$bindir/calib" --model "models/$m.yaml" --tp 1 --varlen --out "$dir/profile.yaml" \
            --keep-going --only "$laws" --sustain --budget-s "${CALIB_BUDGET_S:-150}" --quiet \
            --points-log "$logs/points-$short.csv" > "$logs/calib-$short.out" 2> "$logs/calib-$short.err"
        rc=$?
        echo "calib rc=$rc in $(( $(date +%s) - t0 )) s" | tee -a "$rep"
        cat "$logs/calib-$short.out" >> "$rep"
        tail -5 "$logs/calib-$short.err" | tee -a "$rep"
    fi
    if [ ! -s "$dir/profile.yaml" ]; then
        echo "no profile: $m not replayed" | tee -a "$rep"
        status=1
        continue
    fi
    [ "$stage" = calib ] && continue
    for k in ${RUNS:-$(seq 1 "${REPEATS:-2}")}; do
        for scn in ${scns//,/ }; do
            f=scenarios/lib/$scn.yaml items=() r=$scn
            [ "$k" -gt 1 ] && r=$scn.run$k
            steps=$dir/$r.steps.csv rep=$dir/$scn.txt
            [ -n "$sfx" ] && steps=$dir/$r$sfx.csv rep=$dir/$scn$sfx.txt r=$r$sfx
            [ "$k" = 1 ] && items=(--items "$logs/$scn$sfx.items.csv")
            echo "== replay $scn run $k $rmode$sclk $(date -u +%T)" | tee -a "$rep"
            old=$(item_named "$dir" "$scn" "$steps")
            if [ -n "$old" ]; then
                echo "replay_lib.sh: $(echo $old): item by item under the set's names (back to back is the" \
                     "default now): rename to <scenario>[.runK].item.csv first; run $k not replayed" | tee -a "$rep" >&2
                status=1
                continue
            fi
            t0=$(date +%s)
            timeout "${T_SCENARIO:-90}" "$bindir/pacesim-gpu" replay "$f" --set "profile=$dir/profile.yaml" \
                --steps "$steps" "${items[@]}" "${mode[@]}" > "$logs/$r.out" 2> "$logs/$r.err"
            rc=$?
            echo "replay rc=$rc in $(( $(date +%s) - t0 )) s" | tee -a "$rep"
            cat "$logs/$r.out" >> "$rep"
            grep -E "^   (decode|mixed|prefill|ttft_p50|tpot_p50|steps) " "$logs/$r.out"
            grep -E "^warning" "$logs/$r.err" | sort -u | head -12 >> "$rep"
            tail -3 "$logs/$r.err" >> "$rep"
            [ $rc = 0 ] || { status=1; tail -2 "$logs/$r.err"; }
        done
    done
done
tar -C "$logs" -czf "$out/lib-logs.tar.gz" .
exit $status
