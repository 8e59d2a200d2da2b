#!/usr/bin/env bash
# replay_h200.sh -- the reference experiments replayed on a GPU (pacesim replay --gpu):
# every step of each scenario executed with this repo's kernels and cuBLAS beside the
# profile's prediction.  Usage: calib/replay_h200.sh [OUTDIR] [BIN]   (B=16K scenarios, the
# fp16 no-MTP ones also at PACE_STEPS 4 and 8 as <scenario>-paceN, then B=131K ones while
# REPLAY_131K=1; PROFILE=path prices with another profile).  Writes OUTDIR/<scenario>.txt, .steps.csv and .items.csv (every item predicted beside measured).
set -u
out=${1:-replay-out}
bin=${2:-bin/pacesim-gpu}
mkdir -p "$out"
list=$(ls scenarios/h200-*-b16k-*.yaml)
for p in 4 8; do list="$list scenarios/h200-fp16-nomtp-b16k-baseline.yaml:$p scenarios/h200-fp16-nomtp-b16k-pdr.yaml:$p"; done
[ "${REPLAY_131K:-1}" = 1 ] && list="$list $(ls scenarios/h200-*-b131k-*.yaml)"
for e in $list; do
    f=${e%%:*} n=$(basename "${e%%:*}" .yaml) pace=()
    [ "$f" != "$e" ] && n=$n-pace${e##*:} pace=(--set "env.VLLM_1CAT_PREFILL_PACE_STEPS=${e##*:}")
    echo "== $n $(date +%T)"
    "$bin" replay "$f" --set workload.requests.B.output_tokens=8 "${pace[@]}" ${PROFILE:+--set profile=$PROFILE} --steps "$out/$n.steps.csv" --items "$out/$n.items.csv" > "$out/$n.txt" 2> "$out/$n.err"
    echo "rc=$?"; cat "$out/$n.txt"; tail -2 "$out/$n.err"
done
