#!/usr/bin/env bash
# rescore.sh: the cost model against ground truth, with no GPU.  tests/data/replay/<session>/
# holds the step times GPU replays measured on an H200 (pacesim-gpu replay --steps, the
# scenarios/h200-*.yaml named by the file, B's output cut to 8 tokens), each session with the
# profile calib measured in it (README "Ground truth"):
#   a/  2026-11-29 10:22 UTC, 14 scenarios          calib/profiles/h200-a.yaml
#   c/  2026-11-29 10:47 UTC,  6 scenarios (live)   calib/profiles/h200-c.yaml
#   e/  2026-11-29 11:35 UTC, 12 scenarios (live)   calib/profiles/h200-e.yaml (v6 kernels)
#   f/  2026-11-29 11:41 UTC, B = 131K, 2 scenarios  calib/profiles/h200-e.yaml (session E's: another
#                                                    device session, the v6 kernels)
#   g/  2026-11-29 12:27 UTC, 12 scenarios (live)   calib/profiles/h200-g.yaml (v7 kernels)
#   h/  2026-11-29 12:49 UTC, 12 scenarios (live)   calib/profiles/h200-h.yaml (v7 + the lean softmax;
#                                                    calib's second look)
#   j/  2026-11-29 13:42 UTC, 12 scenarios (live)   calib/profiles/h200-j.yaml (v8: the fast path's
#                                                    split walk; kernels/NOTES.md v8)
#   m/  2026-11-29 14:42 UTC, 12 scenarios (live)   calib/profiles/h200-m.yaml (v8; gemm points with
#                                                    cuBLAS's kernel, every point from rest; its laws
#                                                    refit at the gemm law's 128-wide tile term)
#   n/  2026-11-29 14:51 UTC, 12 scenarios (live)   calib/profiles/h200.yaml (v8; this revision's laws)
# `pacesim rescore` prices the same steps with the current model and the session's profile;
# issue #8's target must hold for every recording: median step error under 5% per step
# type, every measurement window within 5%.  Then the recorded model's own checks: a
# recording of another scenario, a malformed file, a missing one.
set -u
bin=${PACESIM:-bin/pacesim}
fail=0 pass=0
for session in a:calib/profiles/h200-a.yaml c:calib/profiles/h200-c.yaml e:calib/profiles/h200-e.yaml \
               f:calib/profiles/h200-e.yaml g:calib/profiles/h200-g.yaml h:calib/profiles/h200-h.yaml \
               j:calib/profiles/h200-j.yaml m:calib/profiles/h200-m.yaml n:calib/profiles/h200.yaml; do
    dir=tests/data/replay/${session%%:*} prof=$PWD/${session#*:}
    for f in "$dir"/*.steps.csv; do
        n=$(basename "$f" .steps.csv)
        out=$("$bin" rescore "scenarios/$n.yaml" --measured "$f" --set workload.requests.B.output_tokens=8 \
              --set "profile=$prof" 2>&1)
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
r=tests/data/replay/a/h200-fp16-nomtp-b16k-baseline.steps.csv
expect 1 "not the recorded scenario" "another scenario's recording is refused" -- \
    rescore scenarios/h200-fp16-nomtp-b16k-pdr-pace4.yaml --measured $r --set workload.requests.B.output_tokens=8
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
