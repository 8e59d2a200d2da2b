#!/usr/bin/env bash
# replay_h200.sh -- the reference experiments replayed on a GPU (pacesim replay --gpu):
# every step of each scenario executed with this repo's kernels and cuBLAS beside the
# profile's prediction.  Usage: calib/replay_h200.sh [OUTDIR] [BIN]   (B=16K scenarios,
# then B=131K ones while REPLAY_131K=1; PROFILE=path prices with another profile).  Writes OUTDIR/<scenario>.txt, .steps.csv and .items.csv (every item predicted beside measured).
set -u
out=${1:-replay-out}
bin=${2:-bin/pacesim-gpu}
mkdir -p "$out"
list=$(ls scenarios/h200-*-b16k-*.yaml)
[ "${REPLAY_131K:-1}" = 1 ] && list="$list $(ls scenarios/h200-*-b131k-*.yaml)"
for f in $list; do
    n=$(basename "$f" .yaml)
    echo "== $n $(date +%T)"
    "$bin" replay "$f" --set workload.requests.B.output_tokens=8 ${PROFILE:+--set profile=$PROFILE} --steps "$out/$n.steps.csv" --items "$out/$n.items.csv" > "$out/$n.txt" 2> "$out/$n.err"
    echo "rc=$?"; cat "$out/$n.txt"; tail -2 "$out/$n.err"
done
