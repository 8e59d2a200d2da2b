#!/usr/bin/env bash
# replay_serve.sh -- the batched serving scenarios (scenarios/h200-serve-*.yaml) replayed on a
# GPU (pacesim-gpu replay): every step executed with this repo's kernels and cuBLAS beside the
# profile's prediction, as they are (no --set: tests/rescore.sh scores a recording named
# h200-serve-* with its scenario unchanged).  Usage: calib/replay_serve.sh [OUTDIR] [BIN]
# (PROFILE=path prices with the profile calib just wrote; T_SCENARIO=seconds caps each replay,
# default 60).  Writes OUTDIR/<scenario>.txt, .err, .steps.csv and .items.csv; the steps CSVs
# with the profile are a recording for tests/data/replay/<set>/.
set -u
out=${1:-replay-serve-out}
bin=${2:-bin/pacesim-gpu}
mkdir -p "$out"
for f in scenarios/h200-serve-*.yaml; do
    n=$(basename "$f" .yaml)
    echo "== $n $(date +%T)"
    timeout "${T_SCENARIO:-60}" "$bin" replay "$f" ${PROFILE:+--set profile=$PROFILE} --steps "$out/$n.steps.csv" \
        --items "$out/$n.items.csv" > "$out/$n.txt" 2> "$out/$n.err"
    echo "rc=$?"; cat "$out/$n.txt"; grep -E "^warning" "$out/$n.err" | sort -u | head -12; tail -2 "$out/$n.err"
done
