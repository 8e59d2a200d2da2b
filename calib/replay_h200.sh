#!/usr/bin/env bash
# replay_h200.sh -- the reference experiments replayed on a GPU (pacesim replay --gpu):
# every step of each scenario executed with this repo's kernels and cuBLAS beside the
# profile's prediction.  Usage: calib/replay_h200.sh [OUTDIR] [BIN]   (B=16K scenarios, the
# fp16 no-MTP ones also at PACE_STEPS 4 and 8 as <scenario>-paceN, then B=131K ones while
# REPLAY_131K=1; PROFILE=path prices with another profile; REPEATS=N replays each N times, all
# once and then all again, run K >= 2 as <scenario>.runK.steps.csv).  Writes OUTDIR/<scenario>.txt, .steps.csv and .items.csv (every item predicted beside measured).
# The replays run back to back (pacesim-gpu's --back-to-back, the GPU's idle before each step
# recorded as gap_s); REPLAY_MODE=item replays item by item, its files named <r>.item.csv (steps),
# .item.txt, .item.err, .item.items.csv beside the back-to-back ones (calib/stage_lib.sh); a
# back-to-back run beside an item-by-item recording under the set's names is refused (exit 1).
set -u
. "$(dirname "$0")/stage_lib.sh"
replay_mode replay_h200.sh
out=${1:-replay-out}
bin=${2:-bin/pacesim-gpu}
mkdir -p "$out"
status=0
list=$(ls scenarios/h200-*-b16k-*.yaml)
for p in 4 8; do list="$list scenarios/h200-fp16-nomtp-b16k-baseline.yaml:$p scenarios/h200-fp16-nomtp-b16k-pdr.yaml:$p"; done
[ "${REPLAY_131K:-1}" = 1 ] && list="$list $(ls scenarios/h200-*-b131k-*.yaml)"
for k in ${RUNS:-$(seq 1 "${REPEATS:-1}")}; do
for e in $list; do
    f=${e%%:*} n=$(basename "${e%%:*}" .yaml) pace=()
    [ "$f" != "$e" ] && n=$n-pace${e##*:} pace=(--set "env.VLLM_1CAT_PREFILL_PACE_STEPS=${e##*:}")
    r=$n items=(--items "$out/$n$sfx.items.csv")
    [ "$k" -gt 1 ] && r=$n.run$k items=()
    steps=$out/$r.steps.csv
    [ -n "$sfx" ] && steps=$out/$r$sfx.csv r=$r$sfx
    echo "== $n run $k $rmode$sclk $(date +%T)"
    if ! item_refused "$out" "$n" "$steps"; then status=1; continue; fi
    "$bin" replay "$f" --set workload.requests.B.output_tokens=8 "${pace[@]}" ${PROFILE:+--set profile=$PROFILE} --steps "$steps" "${items[@]}" "${mode[@]}" > "$out/$r.txt" 2> "$out/$r.err"
    echo "rc=$?"; grep -vE "^   (window|step type) " "$out/$r.txt" | tail -n +2; tail -2 "$out/$r.err"
done
done
exit $status
