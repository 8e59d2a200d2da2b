#!/usr/bin/env bash
# replay_serve.sh -- the batched serving scenarios (scenarios/h200-serve-*.yaml) replayed on a
# GPU (pacesim-gpu replay): every step executed with this repo's kernels and cuBLAS beside the
# profile's prediction, as they are (no --set: tests/rescore.sh scores a recording named
# h200-serve-* with its scenario unchanged).  Usage: calib/replay_serve.sh [OUTDIR] [BIN]
# (PROFILE=path prices with the profile calib just wrote; T_SCENARIO=seconds caps each replay,
# default 60; REPEATS=N replays each scenario N times, all once and then all again, RUNS="K ..."
# only those runs (a later run of a recording on a card calibrated before): run K >= 2
# writes <scenario>.runK.steps.csv, .txt, .err, no items).  Writes OUTDIR/<scenario>.txt, .err,
# .steps.csv and .items.csv; the steps CSVs with the profile are a recording for
# tests/data/replay/<set>/.
# The replays run back to back (pacesim-gpu's --back-to-back, the GPU's idle before each step
# recorded as gap_s); REPLAY_MODE=item replays item by item, its files named <r>.item.csv (steps),
# .item.txt, .item.err, .item.items.csv beside the back-to-back ones (calib/stage_lib.sh); a
# back-to-back run beside an item-by-item recording under the set's names is refused (exit 1).
set -u
. "$(dirname "$0")/stage_lib.sh"
replay_mode replay_serve.sh
out=${1:-replay-serve-out}
bin=${2:-bin/pacesim-gpu}
mkdir -p "$out"
status=0
for k in ${RUNS:-$(seq 1 "${REPEATS:-1}")}; do
for f in scenarios/h200-serve-*.yaml; do
    n=$(basename "$f" .yaml) r=$(basename "$f" .yaml) items=(--items "$out/$n$sfx.items.csv")
    [ "$k" -gt 1 ] && r=$n.run$k items=()
    steps=$out/$r.steps.csv
    [ -n "$sfx" ] && steps=$out/$r$sfx.csv r=$r$sfx
    echo "== $n run $k $rmode$sclk $(date +%T)"
    if ! item_refused "$out" "$n" "$steps"; then status=1; continue; fi
    timeout "${T_SCENARIO:-60}" "$bin" replay "$f" ${PROFILE:+--set profile=$PROFILE} --steps "$steps" \
        "${items[@]}" "${mode[@]}" > "$out/$r.txt" 2> "$out/$r.err"
    echo "rc=$?"; grep -vE "^   (window|step type) " "$out/$r.txt" | tail -n +2
    [ "$k" = 1 ] && grep -E "^warning" "$out/$r.err" | sort -u | head -12; tail -2 "$out/$r.err"
done
done
exit $status
