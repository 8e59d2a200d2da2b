#!/usr/bin/env bash
# replay_lib.sh -- the library's GPU replay targets (scenarios/lib/h200-*-poisson.yaml: a dense
# and an MoE model, upstream scheduler, varlen attention, a batched Poisson load): for each
# model, calib measures the laws these scenarios price (the varlen kernel, the GEMMs of the
# model's shapes, the MoE grouped GEMM from the model's moe: keys, elementwise, and the fp16
# attention laws a profile must hold for an fp16 KV cache, with the sustained-load probes),
# then pacesim-gpu replays the scenario with that profile.  Usage:
#   calib/replay_lib.sh OUTDIR [BINDIR]      (BINDIR holds calib and pacesim-gpu; default bin)
# Writes OUTDIR/lib-<m>/profile.yaml, <scenario>.steps.csv and <scenario>.txt (calib's fit
# table, the replay's report, the tails of both stderrs) -- a folder that is a recording set for
# tests/data/replay/ as it is -- and OUTDIR/lib-logs.tar.gz (the --items CSVs and the whole
# stderr logs).  T_CALIB (default 190) and T_SCENARIO (default 60) cap each calib and replay,
# in seconds; CALIB_BUDGET_S (default 75) stops calib's grid (its sustained probes then skip).
# LIB_PAIRS="model:scenario ..." replays only those (default: both).
set -u
out=${1:?usage: calib/replay_lib.sh OUTDIR [BINDIR]}
bindir=${2:-bin}
laws=attn.prefill_bm32.fp16,attn.prefill_generic.fp16,attn.prefill_lowsmem.fp16,attn.decode_xqa.fp16
laws=$laws,attn.decode_scalar.fp16,attn.varlen,gemm,elementwise
mkdir -p "$out"
out=$(cd "$out" && pwd)
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
{ nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv; date -u; } \
    > "$logs/gpu.txt" 2>&1
status=0
for pair in ${LIB_PAIRS:-llama-3.1-8b:h200-llama8b-poisson qwen3-30b-a3b:h200-qwen3-30b-a3b-poisson}; do
    m=${pair%%:*} scn=${pair#*:}
    short=${scn#h200-} short=${short%-poisson}
    dir=$out/lib-$short
    mkdir -p "$dir"
    rep=$dir/$scn.txt
    echo "== calib $m $(date -u +%T)" | tee "$rep"
    t0=$(date +%s)
    timeout "${T_CALIB:-190}" "$bindir/calib" --model "models/$m.yaml" --tp 1 --varlen --out "$dir/profile.yaml" \
        --keep-going --only "$laws" --sustain --budget-s "${CALIB_BUDGET_S:-75}" --quiet \
        > "$logs/calib-$short.out" 2> "$logs/calib-$short.err"
    rc=$?
    echo "calib rc=$rc in $(( $(date +%s) - t0 )) s" | tee -a "$rep"
    cat "$logs/calib-$short.out" >> "$rep"
    tail -5 "$logs/calib-$short.err" | tee -a "$rep"
    if [ ! -s "$dir/profile.yaml" ]; then
        echo "no profile: $m not replayed" | tee -a "$rep"
        status=1
        continue
    fi
    echo "== replay $scn $(date -u +%T)" | tee -a "$rep"
    t0=$(date +%s)
    timeout "${T_SCENARIO:-60}" "$bindir/pacesim-gpu" replay "scenarios/lib/$scn.yaml" --set "profile=$dir/profile.yaml" \
        --steps "$dir/$scn.steps.csv" --items "$logs/$scn.items.csv" > "$logs/$scn.out" 2> "$logs/$scn.err"
    rc=$?
    echo "replay rc=$rc in $(( $(date +%s) - t0 )) s" | tee -a "$rep"
    cat "$logs/$scn.out" | tee -a "$rep"
    grep -E "^warning" "$logs/$scn.err" | sort -u | head -12 | tee -a "$rep"
    tail -3 "$logs/$scn.err" | tee -a "$rep"
    [ $rc = 0 ] || status=1
done
tar -C "$logs" -czf "$out/lib-logs.tar.gz" .
exit $status
