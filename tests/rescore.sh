#!/usr/bin/env bash
# rescore.sh: the cost model against ground truth, with no GPU.  Each set under
# tests/data/replay/<set>/ holds the step times GPU replays measured on an H200 (pacesim-gpu
# replay --steps of the scenarios/h200-*.yaml the file is named after, B's output cut to 8
# tokens) and, as profile.yaml, the profile calib measured in the same GPU session, which prices
# them.  A recording named <scenario>-paceN is the base scenario run with
# env.VLLM_1CAT_PREFILL_PACE_STEPS=N.  The sets:
#   h200-current/  the twelve B = 16K scenarios (fp16 and fp8 KV, MTP off and MTP4, baseline
#                  and PREFIX_DECODE_ROWS=1, fp16 no-MTP also at PACE_STEPS 4 and 8), replayed
#                  live after calib wrote profile.yaml, a copy of calib/profiles/h200.yaml
#   h200-b131k/    the two B = 131K scenarios (fp16, no MTP, baseline and PREFIX_DECODE_ROWS=1),
#                  on a device session of its own, priced by that card's earlier profile
# `pacesim rescore` prices the same steps with the current model and the set's profile;
# issue #8's target must hold for every recording: median step error under 5% per step
# type, every measurement window within 5%.  Then the recorded model's own checks: a
# recording of another scenario, a malformed file, a missing one.
set -u
bin=${PACESIM:-bin/pacesim}
fail=0 pass=0
for dir in tests/data/replay/*/; do
    dir=${dir%/} prof=$PWD/${dir%/}/profile.yaml
    for f in "$dir"/*.steps.csv; do
        n=$(basename "$f" .steps.csv)
        base=${n%-pace[0-9]*} pace=() cut=(--set workload.requests.B.output_tokens=8)
        [ "$base" != "$n" ] && pace=(--set "env.VLLM_1CAT_PREFILL_PACE_STEPS=${n##*-pace}")
        case $n in h200-serve-*) cut=() ;; esac   # serving recordings: the scenario as it is
        out=$("$bin" rescore "scenarios/$base.yaml" --measured "$f" "${cut[@]}" \
              --set "profile=$prof" "${pace[@]}" 2>&1)
        rc=$?
        bad=$(printf '%s\n' "$out" | awk '
            /^   (decode|mixed|prefill) / { m = $5; sub(/%/, "", m); if (m + 0 >= 5) print $1 " median " $5 }
            /^   [a-z_]+ +[-0-9.]+ +[-0-9.]+ +[-+][0-9.]+%$/ { e = $4; sub(/%/, "", e); if (e < 0) e = -e; if (e >= 5) print $1 " " $4 }')
        steps=$(printf '%s\n' "$out" | awk '/^   steps /{print $2 == $4}')
        if [ $rc != 0 ] || [ -n "$bad" ] || [ "$steps" != 1 ]; then
            echo "  FAIL ${dir##*/}/$n (rc $rc): ${bad:-$out}"; fail=$((fail + 1))
        else
            echo "  ok   ${dir##*/}/$n: $(printf '%s\n' "$out" | awk '/^   mixed /{printf "mixed steps %s median, ", $5} /^   b_prefill_s /{printf "B prefill %s", $4}')"
            pass=$((pass + 1))
        fi
    done
done
expect() {  # expect RC PATTERN DESCRIPTION -- ARGS...
    local want=$1 pat=$2 what=$3; shift 4
    local out; out=$("$bin" "$@" 2>&1); local rc=$?
    if [ $rc = "$want" ] && [ $(printf '%s\n' "$out" | wc -l) = 1 ] && printf '%s' "$out" | grep -q -- "$pat"; then
        echo "  ok   $what"; pass=$((pass + 1))
    else echo "  FAIL $what: rc $rc: $out"; fail=$((fail + 1)); fi
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
r=tests/data/replay/h200-current/h200-fp16-nomtp-b16k-baseline.steps.csv
expect 1 "not the recorded scenario" "another scenario's recording is refused" -- \
    rescore scenarios/h200-fp16-nomtp-b16k-pdr.yaml --measured $r --set workload.requests.B.output_tokens=8 \
    --set env.VLLM_1CAT_PREFILL_PACE_STEPS=4
expect 1 "not the recorded scenario" "a run longer than its recording is refused" -- \
    rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --measured $r
sed '3s/decode/decoed/' $r > "$tmp/bad.csv"
expect 2 "bad.csv:3: type" "a malformed recording: file:line and the column" -- \
    rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --measured "$tmp/bad.csv" --set workload.requests.B.output_tokens=8
awk -F, -v OFS=, 'NR == 4 { $4 = -1 } 1' $r > "$tmp/neg.csv"
expect 2 "neg.csv:4: measured_s" "a negative time: file:line and the column" -- \
    rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --measured "$tmp/neg.csv" --set workload.requests.B.output_tokens=8
expect 2 "cannot open the recording" "a missing recording" -- \
    rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --measured "$tmp/none.csv"
expect 2 "needs a scenario and --measured" "no --measured" -- rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml
echo "rescore: $pass passed, $fail failed"
[ $fail = 0 ]
