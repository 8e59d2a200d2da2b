#!/usr/bin/env bash
# rescore.sh: the cost model against ground truth, with no GPU.  Each set under
# tests/data/replay/<set>/ holds the step times GPU replays measured on an H200 (pacesim-gpu
# replay --steps of the scenarios/h200-*.yaml, or scenarios/lib/h200-*.yaml, the file is named
# after, B's output cut to 8 tokens but for the serving ones: h200-serve-* and every library
# scenario) and, as profile.yaml, the profile calib measured in the same GPU session, which
# prices them.  A recording named <scenario>-paceN is the base scenario run with
# env.VLLM_1CAT_PREFILL_PACE_STEPS=N.  The sets:
#   h200-envelope/ the seven batched serving scenarios (scenarios/h200-serve-*.yaml: Poisson and
#                  burst arrivals, 100-128 requests, max_num_seqs 32-128, budgets 2048-8192,
#                  MTP off/2/4, fp16 and fp8 KV, one model of head_dim 128 and 8 kv heads) and
#                  the twelve B = 16K scenarios, replayed after calib measured the serving
#                  envelope and the head_dim-128 model's shape (profile.yaml: both shapes, the
#                  varlen and MoE laws too); calib and all three runs on one H200
#   h200-b131k/    the two B = 131K scenarios (fp16, no MTP, baseline and PREFIX_DECODE_ROWS=1),
#                  priced by the h200-envelope set's earlier profile (the same model, another card):
#                  run 1 in the library sets' device session, runs 2 and 3 in a later one
#   h200-lib-llama8b/, h200-lib-qwen3-30b-a3b/  a dense and an MoE model of the library under the
#                  upstream scheduler and the varlen attention backend (scenarios/lib/): 48
#                  Poisson requests, and the wide-batch class (64-256 sequences, budgets 4K-16K,
#                  Poisson near saturation), each priced by the profile calib measured for that
#                  model just before, every run on that card (tests/data/replay/*/profile.yaml;
#                  the Llama set three runs, the MoE set two, recorded earlier on another card)
#   h200-envelope-b/, h200-lib-llama8b-b/, h200-lib-qwen3-30b-a3b-b/  the same recordings (same
#                  file names) on other H200s, each set's calib (with the sustained-load probes)
#                  and runs on one card (the two library sets on the same one), priced by that
#                  calib's profile: the envelope set two runs, the library sets three; beside
#                  the sets above they show the card-to-card spread of one model and binary
#   h200-lib-llama8b-c/  the Llama recordings on a third H200, its calib with the L2-cold
#                  elementwise points at every count, two runs each replayed back to back
#                  (pacesim-gpu replay --back-to-back: a step's items on one stream, one sync a step)
#   h200-lib-llama8b-d/  the same on a fourth H200, back to back with the GPU's idle before each
#                  step recorded (gap_s), which rescore's heat model relaxes over
#   h200-lib-qwen3-30b-a3b-c/  the MoE recordings on a third H200, recorded as -d (each step's
#                  items prepared before its launch: no step re-prepared)
#   h200-lib-llama8b-e/, h200-lib-qwen3-30b-a3b-d/  both library sets on a fifth H200 (the MoE
#                  set's fourth), recorded as -d, six runs each
#   h200-envelope-c/  the envelope recordings on a third H200, recorded as -d (calib with the
#                  sustained-load probes, two back-to-back runs with the idle before each step)
#   h100-envelope/  the envelope recordings on an H100 80GB, its calib (4 points failed out of
#                  memory: the grid is sized for an H200), two back-to-back runs each
#   h100-lib-llama8b/  the Llama recordings on an H100 80GB, recorded as -d with each step's own
#                  SM clock (--step-clock), six runs each; its calib has the fall from the runs
#   h100-lib-llama8b-b/  the same on a second H100 80GB (its calib's varlen grid with the light
#                  load's short prompts)
#   h100-lib-qwen3-30b-a3b/  the MoE recordings on a third H100 80GB, recorded as h100-lib-llama8b
#                  (six runs each, each step's own SM clock)
#   h200-lib-llama8b-f/, h200-lib-qwen3-30b-a3b-e/  both library sets on a sixth H200, recorded
#                  as h100-lib-llama8b; each calib read the clock's fall from the compute-bound
#                  GEMM queued back to back (calib/sustain.h)
#   h100-lib-qwen3-14b/  a second dense shape (scenarios/lib/h200-qwen3-14b-*: the Poisson load and
#                  the wide-batch class at 64 and 128 sequences) on an H100 80GB, recorded as
#                  h100-lib-llama8b (four runs each, the fall read from the GEMM)
#   h100-lib-llama8b-c/, h100-lib-qwen3-14b-b/  the Llama and Qwen3-14B recordings on one more
#                  H100 80GB, four runs each; its calibs time a GEMM point for every kernel cuBLAS
#                  picks that no grid point runs
#   h100-lib-qwen3-14b-c/  the Qwen3-14B recordings on one more H100 80GB, four runs each; its calib
#                  with the kernel points, its compute-bound probe a grid GEMM
#   h100-lib-qwen3-14b-d/  the same on one more H100 80GB, two runs each (its layer-order runs not
#                  installed)
#   h100-lib-llama8b-d/, -e/, h100-lib-qwen3-14b-e/, -f/  both dense models on one more H100,
#                  each model's loads in an engine's layer order (-d, qwen3-14b-e: --layer-order)
#                  and in item order (-e, -f), one profile per model
#   h100-lib-llama8b-f/, -g/  the Llama recordings in layer order on two more H100s, two runs each
# Each recording is replayed at least twice: <name>.steps.csv is the first run, <name>.runK.steps.csv
# run K (the same scenario replayed again on the GPU, after all the set's scenarios ran once), and
# `pacesim rescore` prices the same steps with the current model and the set's profile beside
# every run.  The target for every recording: the median step error under 3% per step type
# (averaged over the runs), every measurement window within the runs' measured range + 3% (the
# `beyond` column: 0 inside the range; the window predicted as the median of rescore's noise
# ensemble, docs/error-bars.md), and the profile run's step count within 1% of each
# measured run's (an open-loop workload's arrivals meet the steps a little differently when step
# times differ; a load that keeps the engine busy takes about 1% fewer steps per 1% more step
# time, so rescore prints the count with each step type at the runs' time beside it:
# docs/error-bars.md); or the bounds a set's `target` file states (median beyond [steps], in percent,
# with a comment naming the misses).  A set recorded once (no runK files) must say so in a
# `single-run` file (why it was not re-recorded); its recordings are held to the older target:
# medians and windows within 5% of the one run.  Then the recorded model's own checks: a
# recording of another scenario, a malformed file, a missing one.
set -u
bin=${PACESIM:-bin/pacesim}
fail=0 pass=0
for dir in tests/data/replay/*/; do
    dir=${dir%/} prof=$PWD/${dir%/}/profile.yaml
    single=0
    [ -f "$dir/single-run" ] && single=1
    tmed=3 twin=3 tsteps=
    [ $single = 1 ] && tmed=5 twin=5
    [ -f "$dir/target" ] && read -r tmed twin tsteps < <(grep -v '^#' "$dir/target")
    tsteps=${tsteps:-1}
    for f in "$dir"/*.steps.csv; do
        n=$(basename "$f" .steps.csv)
        case $n in *.run[0-9]*) continue ;; esac         # a later run: scored with its first
        base=${n%-pace[0-9]*} pace=() cut=(--set workload.requests.B.output_tokens=8)
        [ "$base" != "$n" ] && pace=(--set "env.VLLM_1CAT_PREFILL_PACE_STEPS=${n##*-pace}")
        scn=scenarios/$base.yaml
        [ -f "$scn" ] || scn=scenarios/lib/$base.yaml   # the library's replay targets
        case $scn in scenarios/lib/*|scenarios/h200-serve-*) cut=() ;; esac   # serving recordings: the scenario as it is
        runs=(--measured "$f")
        for r in "$dir/$n".run[0-9]*.steps.csv; do [ -f "$r" ] && runs+=(--measured "$r"); done
        nruns=$(( ${#runs[@]} / 2 ))
        if [ $nruns -lt 2 ] && [ $single = 0 ]; then
            echo "  FAIL ${dir##*/}/$n: one measured run (no $n.run2.steps.csv) and no single-run file"
            fail=$((fail + 1)); continue
        fi
        out=$("$bin" rescore "$scn" "${runs[@]}" "${cut[@]}" --set "profile=$prof" "${pace[@]}" 2>&1)
        rc=$?
        if [ $nruns -ge 2 ]; then
            # step types: the runs' mean median (column 3); windows: beyond the runs' range (column 9)
            bad=$(printf '%s\n' "$out" | awk -v tmed="$tmed" -v twin="$twin" '
                /^   (decode|mixed|prefill) / { m = $3; sub(/%/, "", m); if (m + 0 >= tmed) print $1 " median " $3 }
                /^   [a-z_0-9]+ +[-0-9.]+ +[-0-9.]+ +[-0-9.]+ +[-0-9.]+ +[-+][0-9.]+% / {
                    e = $9; sub(/%/, "", e); e += 0; if (e < 0) e = -e; if (e >= twin) print $1 " " $6 " beyond the runs by " $9 }')
            steps=$(printf '%s\n' "$out" | awk -v t="$tsteps" '/^   steps /{ ok = 1
                for (i = 4; $i ~ /^[0-9]+$/; i++) { d = $2 - $i; if (d < 0) d = -d; if (d > t / 100 * $i) ok = 0 } print ok }')
            summary=$(printf '%s\n' "$out" | awk -v n="$nruns" '
                /^   mixed /{ printf "mixed %s median (spread %s), ", $3, $5 }
                /^   [a-z_0-9]+ +[-0-9.]+ +[-0-9.]+ +[-0-9.]+ +[-0-9.]+ +[-+][0-9.]+% / {
                    e = $9; sub(/%/, "", e); e += 0; a = e < 0 ? -e : e; if (a >= w) { w = a; worst = $1 " " $8 " " $9 } }
                END { printf "worst window %s, %d runs", worst == "" ? "none" : worst, n }')
        else
            bad=$(printf '%s\n' "$out" | awk -v tmed="$tmed" -v twin="$twin" '
                /^   (decode|mixed|prefill) / { m = $5; sub(/%/, "", m); if (m + 0 >= tmed) print $1 " median " $5 }
                /^   [a-z_0-9]+ +[-0-9.]+ +[-0-9.]+ +[-+][0-9.]+%$/ { e = $4; sub(/%/, "", e); e += 0; if (e < 0) e = -e; if (e >= twin) print $1 " " $4 }')
            steps=$(printf '%s\n' "$out" | awk -v t="$tsteps" '/^   steps /{d = $2 - $4; if (d < 0) d = -d; print d <= t / 100 * $4}')
            summary=$(printf '%s\n' "$out" | awk '/^   mixed /{printf "mixed steps %s median, ", $5} /^   b_prefill_s /{printf "B prefill %s, ", $4} END { printf "one run (single-run set)" }')
        fi
        if [ $rc != 0 ] || [ -n "$bad" ] || [ "$steps" != 1 ]; then
            echo "  FAIL ${dir##*/}/$n (rc $rc): ${bad:-$out}"; fail=$((fail + 1))
        else
            echo "  ok   ${dir##*/}/$n: $summary"
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
# the noise ensemble's runs on threads: the same report for any -j
fd=tests/data/replay/h200-lib-llama8b-f
jargs=(rescore scenarios/lib/h200-llama8b-poisson.yaml --measured "$fd/h200-llama8b-poisson.steps.csv"
       --measured "$fd/h200-llama8b-poisson.run2.steps.csv" --measured "$fd/h200-llama8b-poisson.run3.steps.csv"
       --set "profile=$fd/profile.yaml")
"$bin" "${jargs[@]}" -j 1 > "$tmp/j1.txt" 2>&1; rc1=$?
"$bin" "${jargs[@]}" --jobs 3 > "$tmp/j3.txt" 2>&1; rc3=$?
if [ $rc1 = 0 ] && [ $rc3 = 0 ] && grep -q "^   one run " "$tmp/j1.txt" && cmp -s "$tmp/j1.txt" "$tmp/j3.txt"; then
    echo "  ok   rescore -j 1 and --jobs 3: the same report byte for byte"; pass=$((pass + 1))
else echo "  FAIL rescore -j 1 / --jobs 3: rc $rc1 / $rc3 or the reports differ"; fail=$((fail + 1)); fi
# calib's band: a profile with its time constants' ranges (the first calib of
# tests/data/calib-repeat/ given both calibs' values as its traces' range) prints each window at
# the hot end (the fastest fall, the slowest recovery) and the cool end; each end is the "one run
# without noise" of the same profile with its two constants set to that end; a profile without
# ranges prints no band
R=tests/data/calib-repeat/h100-8a2fc2c1-llama-3.1-8b-1.yaml
fall=(0.055394258486248522 0.10526238285317428) rec=(0.012322152472531841 0.035870115950193987)
sed "s/tau_up_runs_s: \([0-9.e-]*\),/tau_up_runs_s: \1, tau_up_runs_range_s: [${fall[0]}, ${fall[1]}], tau_down_range_s: [${rec[0]}, ${rec[1]}],/" \
    "$R" > "$tmp/range.yaml"
end_profile() {  # end_profile FALL RECOVERY OUT: the first calib with its two constants set
    sed -e "17s/tau_up_runs_s: [0-9.e-]*/tau_up_runs_s: $1/" -e "17s/tau_down_s: [0-9.e-]*/tau_down_s: $2/" "$R" > "$3"
}
end_profile "${fall[0]}" "${rec[1]}" "$tmp/hot.yaml"
end_profile "${fall[1]}" "${rec[0]}" "$tmp/cool.yaml"
gd=tests/data/replay/h100-lib-llama8b-g
bargs=(rescore scenarios/lib/h200-llama8b-wide-s64-b4096.yaml --measured "$gd/h200-llama8b-wide-s64-b4096.steps.csv"
       --measured "$gd/h200-llama8b-wide-s64-b4096.run2.steps.csv")
"$bin" "${bargs[@]}" --set "profile=$tmp/range.yaml" > "$tmp/band.txt" 2>&1; rcb=$?
"$bin" "${bargs[@]}" --set "profile=$tmp/hot.yaml" > "$tmp/hot.txt" 2>&1; rch=$?
"$bin" "${bargs[@]}" --set "profile=$tmp/cool.yaml" > "$tmp/cool.txt" 2>&1; rcc=$?
"$bin" "${bargs[@]}" --set "profile=$R" > "$tmp/plain.txt" 2>&1; rcp=$?
"$bin" "${bargs[@]}" --set "profile=$tmp/range.yaml" --recorded-clock > "$tmp/rclock.txt" 2>&1 || rcp=1
band_rows() { awk '/^   calib band /{on = 1; next} on && /^   one run without noise/{exit} on {print $1, $2, $3, $4, $5}' "$1"; }
# the band's last column against the runs' range of the window table (min, max, mean): "overlap"
# where the band [hot, cool] meets [min, max], else the gap over the mean (printed to 0.1%; the
# figures to 4 decimals, whence the tolerance)
band_runs_ok() { awk '/^   window /{w = 1; next} w && /^   calib.s band/{w = 0} w {mean[$1] = $3; lo[$1] = $4; hi[$1] = $5}
    /^   calib band /{b = 1; next} b && /^   one run without noise/{b = 0} b {
        n++; a = $2 < $4 ? $2 : $4; z = $2 < $4 ? $4 : $2; g = a > hi[$1] ? (a - hi[$1]) / mean[$1] : z < lo[$1] ? (z - lo[$1]) / mean[$1] : 0
        if ($6 == "overlap") { if (g * mean[$1] > 1e-4 || g * mean[$1] < -1e-4) bad++ }
        else { v = $6; sub(/%$/, "", v); t = 0.0015 + 1.5e-4 / mean[$1]; if ((v / 100 - g) > t || (g - v / 100) > t) bad++; if (v + 0 != 0) gaps++ } }
    END { exit !(n == 4 && !bad && gaps >= 1) }' "$1"; }
one_run() { awk '/^   one run [a-z_0-9]+ +[0-9]/{print $3, $4, $5}' "$1"; }
hot_rows=$(band_rows "$tmp/band.txt" | awk '{print $1, $2, $3}')
cool_rows=$(band_rows "$tmp/band.txt" | awk '{print $1, $4, $5}')
if [ $rcb$rch$rcc$rcp = 0000 ] \
   && grep -q "^   calib's band: the clock's time constants at the ends of calib's traces (the fall 55-105 ms, the recovery 12-36 ms)" "$tmp/band.txt" \
   && [ "$(band_rows "$tmp/band.txt" | wc -l)" = 4 ] \
   && [ "$hot_rows" = "$(one_run "$tmp/hot.txt")" ] && [ "$cool_rows" = "$(one_run "$tmp/cool.txt")" ] \
   && [ "$hot_rows" != "$cool_rows" ] && ! grep -q "calib's band" "$tmp/plain.txt" && ! grep -q "calib's band" "$tmp/rclock.txt" && band_runs_ok "$tmp/band.txt"; then
    echo "  ok   calib's band: each end is the one run of the profile at that end, its gap to the runs' range; none without ranges or at recorded clocks"; pass=$((pass + 1))
else echo "  FAIL calib's band: rc $rcb$rch$rcc$rcp; band hot [$hot_rows] cool [$cool_rows]"; fail=$((fail + 1)); fi
r=tests/data/replay/h200-envelope/h200-fp16-nomtp-b16k-baseline.steps.csv
expect 2 "^pacesim: rescore: -j 0: expected an integer >= 1$" "rescore -j 0 is refused" -- \
    rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --measured $r -j 0
expect 2 "^pacesim: rescore: --jobs needs a value$" "rescore --jobs without a value is refused" -- \
    rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --measured $r --jobs
expect 2 "^pacesim: rescore: -j|--jobs given twice$" "rescore -j given twice is refused" -- \
    rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --measured $r -j 2 --jobs 3
# a recording of another scenario is bad input: refused at the first step that does not match
expect 2 "^$r:12:4: type: the run's step 11 is decode, the recording's mixed: not the recorded scenario" \
    "another scenario's recording is refused at the first mismatching step's line and column" -- \
    rescore scenarios/h200-fp16-nomtp-b16k-pdr.yaml --measured $r --set workload.requests.B.output_tokens=8 \
    --set env.VLLM_1CAT_PREFILL_PACE_STEPS=4
expect 2 "^$r:37:1: step: the recording ends at step 36, the run goes on: not the recorded scenario" \
    "a run longer than its recording (a --set dropped) is refused at the recording's last step" -- \
    rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --measured $r
expect 2 "^$r:34:1: step: the run ended after 32 steps, the recording goes on to step 36: not the recorded scenario" \
    "a run shorter than its recording is refused at the first step it lacks" -- \
    rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --measured $r --set workload.requests.B.output_tokens=4
sed '3s/decode/decoed/' $r > "$tmp/bad.csv"
expect 2 "bad.csv:3:3: type" "a malformed recording: file:line:col and the column" -- \
    rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --measured "$tmp/bad.csv" --set workload.requests.B.output_tokens=8
awk -F, -v OFS=, 'NR == 4 { $4 = -1 } 1' $r > "$tmp/neg.csv"
expect 2 "neg.csv:4:[0-9]*: measured_s" "a negative time: file:line:col and the column" -- \
    rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --measured "$tmp/neg.csv" --set workload.requests.B.output_tokens=8
# bad_row NAME LINE COLUMN VALUE: the recording with field COLUMN of line LINE set to VALUE
bad_row() { awk -F, -v OFS=, -v l="$2" -v c="$3" -v v="$4" 'NR == l { $c = v } 1' $r > "$tmp/$1.csv"; }
# col_of LINE COLUMN: the 1-based character column where that field starts
col_of() { awk -F, -v l="$1" -v c="$2" 'NR == l { n = 1; for (i = 1; i < c; i++) n += length($i) + 1; print n }' $r; }
for v in 0x1p-5 1e-310 1e-300 1e-10 0 2000 inf nan 1e999 ' 0.01' 0.01s; do
    bad_row num 5 4 "$v"
    expect 2 "num.csv:5:$(col_of 5 4): measured_s" "measured_s \"$v\" is refused at its line and column" -- \
        rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --measured "$tmp/num.csv" --set workload.requests.B.output_tokens=8
done
bad_row attn 6 6 0X10
expect 2 "attn.csv:6:$(col_of 6 6): meas_attn_s" "a hex meas_attn_s is refused" -- \
    rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --measured "$tmp/attn.csv" --set workload.requests.B.output_tokens=8
bad_row attn2 6 6 1e-300
expect 2 "attn2.csv:6:$(col_of 6 6): meas_attn_s" "a non-physical meas_attn_s (1e-300 s) is refused" -- \
    rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --measured "$tmp/attn2.csv" --set workload.requests.B.output_tokens=8
bad_row empty 7 3 ''
expect 2 "empty.csv:7:$(col_of 7 3): predicted_s: empty field" "an empty field is refused, not skipped (no column shifts)" -- \
    rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --measured "$tmp/empty.csv" --set workload.requests.B.output_tokens=8
bad_row extra 8 9 '0x4,1'
expect 2 "extra.csv:8:[0-9]*: recording: 10 fields, the header has 9" "a row with more fields than the header" -- \
    rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --measured "$tmp/extra.csv" --set workload.requests.B.output_tokens=8
# 64 fields a row at most: the 65th is refused where it starts
awk -F, -v OFS=, '{ s = $0; for (i = 10; i <= 65; i++) s = s "," (NR == 1 ? "x" i : 0); print s }' $r > "$tmp/f65.csv"
expect 2 "f65.csv:1:$(head -n 1 "$tmp/f65.csv" | awk '{ print index($0, ",x65") + 1 }'): recording: more than 64 fields" \
    "a header of 65 fields: refused at the 65th" -- rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --measured "$tmp/f65.csv"
awk 'NR == 9 { sub(/,[^,]*$/, "") } 1' $r > "$tmp/short.csv"
expect 2 "short.csv:9:[0-9]*: recording: 8 fields, the header has 9" "a row with fewer fields than the header" -- \
    rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --measured "$tmp/short.csv" --set workload.requests.B.output_tokens=8
bad_row order 10 1 12
expect 2 "order.csv:10:1: step: expected 9" "the steps out of order" -- \
    rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --measured "$tmp/order.csv" --set workload.requests.B.output_tokens=8
{ head -n 5 $r; head -c 5000 /dev/zero | tr '\0' 9; echo; tail -n +6 $r; } > "$tmp/long.csv"
expect 2 "long.csv:6:4097: recording: line longer" "an overlong line is refused at its own line" -- \
    rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --measured "$tmp/long.csv" --set workload.requests.B.output_tokens=8
{ head -n 3 $r; printf '3,decode,0.1\0,0.1,0,0,0,0,0\n'; } > "$tmp/nul.csv"
expect 2 "nul.csv:4:13: recording: a NUL byte" "a NUL byte is refused" -- \
    rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --measured "$tmp/nul.csv" --set workload.requests.B.output_tokens=8
printf 'step,type,measured_s,type\n' > "$tmp/dup.csv"
expect 2 "dup.csv:1:22: type: a second column" "a header naming a column twice" -- \
    rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --measured "$tmp/dup.csv"
head -n 1 $r > "$tmp/hdr.csv"
expect 2 "hdr.csv:1:1: recording: no steps recorded" "a header alone" -- \
    rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --measured "$tmp/hdr.csv"
: > "$tmp/zero.csv"
expect 2 "zero.csv:1:1: recording: empty" "an empty file" -- \
    rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --measured "$tmp/zero.csv"
mkdir "$tmp/dir.csv"
expect 2 "dir.csv: cannot open the recording: cannot read: Is a directory" "a directory" -- \
    rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --measured "$tmp/dir.csv"
cp "$tmp/bad.csv" "$tmp/$(printf 'new\nline').csv"
expect 2 'new?line.csv:3:3: type' "a newline in the recording's path is escaped: one line" -- \
    rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --measured "$tmp/$(printf 'new\nline').csv" --set workload.requests.B.output_tokens=8
# --steps naming a FIFO no process reads: refused before the run, not waited on
mkfifo "$tmp/fifo.csv"
out=$(timeout 60 "$bin" rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --measured $r \
      --set workload.requests.B.output_tokens=8 --steps "$tmp/fifo.csv" 2>&1); rc=$?
if [ $rc = 2 ] && [ "$(printf '%s\n' "$out" | wc -l)" = 1 ] && printf '%s' "$out" | grep -q "fifo.csv: cannot write: a FIFO that no process reads"; then
    echo "  ok   --steps to a FIFO without a reader: exit 2, one line"; pass=$((pass + 1))
else echo "  FAIL --steps to a FIFO without a reader: rc $rc: $out"; fail=$((fail + 1)); fi
"$bin" rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --measured $r --set workload.requests.B.output_tokens=8 \
    --steps "$tmp/out.csv" > /dev/null 2>&1; rc=$?
if [ $rc = 0 ] && [ "$(wc -l < "$tmp/out.csv")" = 37 ] && head -n 1 "$tmp/out.csv" | grep -q '^step,type,predicted_s,measured_s,'; then
    echo "  ok   --steps to a file: the header and the 36 steps"; pass=$((pass + 1))
else echo "  FAIL --steps to a file: rc $rc, $(wc -l < "$tmp/out.csv") lines"; fail=$((fail + 1)); fi
# a malformed recording with --steps: refused before --steps' file is opened (it is left as it was)
printf 'kept\n' > "$tmp/kept.csv"
expect 2 "bad.csv:3:3: type" "a malformed recording with --steps" -- rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml \
    --measured "$tmp/bad.csv" --set workload.requests.B.output_tokens=8 --steps "$tmp/kept.csv"
if [ "$(cat "$tmp/kept.csv")" = kept ]; then echo "  ok   --steps' file left as it was"; pass=$((pass + 1))
else echo "  FAIL a malformed recording emptied --steps' file"; fail=$((fail + 1)); fi
# --steps carries the clocks the recording has: sm_clock_mhz, and sm_mhz_step where recorded
awk -F, -v OFS=, 'NR == 1 { print $0, "sm_mhz_step"; next } { print $0, 1500 + NR }' $r > "$tmp/sclk.csv"
"$bin" rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --measured "$tmp/sclk.csv" --set workload.requests.B.output_tokens=8 \
    --steps "$tmp/sout.csv" > /dev/null 2>&1; rc=$?
if [ $rc = 0 ] && head -n 1 "$tmp/sout.csv" | grep -q ',sm_clock_mhz,.*,sm_mhz_step$' &&
   awk -F, 'NR == FNR { c[FNR] = $7; q[FNR] = $NF; next }
            FNR > 1 { n++; if ($7 + 0 != c[FNR] + 0 || $NF + 0 != q[FNR] + 0 || $7 + 0 < 1) bad = 1 } END { exit bad || n != 36 }' \
       "$tmp/sclk.csv" "$tmp/sout.csv"; then
    echo "  ok   --steps: each step's recorded sm_clock_mhz and sm_mhz_step as the recording has them"; pass=$((pass + 1))
else echo "  FAIL --steps' clocks: rc $rc: $(head -n 3 "$tmp/sout.csv")"; fail=$((fail + 1)); fi
# a spreadsheet's UTF-8 BOM before the header: the header's first name read past it
{ printf '\357\273\277'; cat $r; } > "$tmp/bom.csv"
o1=$("$bin" rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --measured "$tmp/bom.csv" --set workload.requests.B.output_tokens=8 2>&1)
o2=$("$bin" rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --measured $r --set workload.requests.B.output_tokens=8 2>&1)
if [ "$(printf '%s\n' "$o1" | tail -n +2)" = "$(printf '%s\n' "$o2" | tail -n +2)" ] && printf '%s\n' "$o1" | grep -q '^   mixed '; then
    echo "  ok   a recording with a BOM reads as the one without"; pass=$((pass + 1))
else echo "  FAIL a recording with a BOM: $o1"; fail=$((fail + 1)); fi
{ printf '\357\273\277'; awk -F, -v OFS=, 'NR == 10 { $1 = 12 } 1' $r; } > "$tmp/bomstep.csv"
expect 2 "bomstep.csv:10:1: step: expected 9" "a BOM does not hide the step column (steps out of order)" -- \
    rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --measured "$tmp/bomstep.csv" --set workload.requests.B.output_tokens=8
# --steps naming a file the scenario reads (its profile, its model): refused before it is emptied
cp tests/data/replay/h200-envelope/profile.yaml "$tmp/prof.yaml"
expect 2 "pacesim: --steps $tmp/prof.yaml: that is an input of the run" "--steps over the scenario's profile" -- \
    rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --measured $r --set workload.requests.B.output_tokens=8 \
    --set profile="$tmp/prof.yaml" --steps "$tmp/prof.yaml"
if cmp -s "$tmp/prof.yaml" tests/data/replay/h200-envelope/profile.yaml; then
    echo "  ok   the profile is left as it was"; pass=$((pass + 1))
else echo "  FAIL --steps emptied the profile"; fail=$((fail + 1)); fi
expect 2 "pacesim: --steps models/qwen3.8-27b-fp16.yaml: that is an input of the run" "--steps over the scenario's model" -- \
    rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --measured $r --steps models/qwen3.8-27b-fp16.yaml
# several runs: the error beside their spread; --steps takes one run; a run of another scenario
e=tests/data/replay/h200-envelope/h200-fp16-nomtp-b16k-baseline
out=$("$bin" rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --measured $e.steps.csv --measured $e.run2.steps.csv \
      --measured $e.run3.steps.csv --set workload.requests.B.output_tokens=8 --set profile=$PWD/tests/data/replay/h200-envelope/profile.yaml 2>&1)
if printf '%s\n' "$out" | grep -q "^== rescore .*: 3 measured runs" &&
   printf '%s\n' "$out" | awk '/^   b_prefill_s /{ ok = ($3 > $4 && $3 < $5 && $8 ~ /^(inside|miss)$/ && $10 ~ /^[-+][0-9.]+%$/) } END { exit !ok }' &&
   printf '%s\n' "$out" | grep -q "^   steps 36 / 36 36 36 " &&
   printf '%s\n' "$out" | awk '/^   (decode|mixed|prefill) / && $6 == "inside" { n++; if ($7 != "+0.0%") bad = 1 } END { exit bad || !n }'; then
    echo "  ok   three runs: mean between min and max, a verdict, the +1% column, every run's steps, a step type inside at +0.0%"; pass=$((pass + 1))
else echo "  FAIL three runs: $out"; fail=$((fail + 1)); fi
# the step count at the runs' time per step type: the Llama Poisson load of the fourth card is
# busy from 1.6 s to its end, so its profile run takes 884 steps against 868-869 (its decode steps
# priced 1.9% under their measured sum); each type's steps at the runs' time, within 1% of each run
ld=tests/data/replay/h200-lib-llama8b-d/h200-llama8b-poisson
out=$("$bin" rescore scenarios/lib/h200-llama8b-poisson.yaml --measured $ld.steps.csv --measured $ld.run2.steps.csv \
      --set profile=$PWD/tests/data/replay/h200-lib-llama8b-d/profile.yaml 2>&1)
if printf '%s\n' "$out" | awk '/^   steps / && match($0, /; [0-9]+ at the runs. time per step type\)$/) {
        t = substr($0, RSTART + 2) + 0; raw = sc = 1
        for (i = 4; $i ~ /^[0-9]+$/; i++) { d = ($2 - $i) / $i; e = (t - $i) / $i
            if (d < 0) d = -d; if (e < 0) e = -e; if (d <= 0.01) raw = 0; if (e > 0.01) sc = 0 }
        ok = i > 4 && raw && sc } END { exit !ok }'; then
    echo "  ok   steps at the runs' time per step type: $(printf '%s\n' "$out" | grep '^   steps ' | sed 's/^ *//')"; pass=$((pass + 1))
else echo "  FAIL steps at the runs' time per step type: $(printf '%s\n' "$out" | grep '^   steps ')"; fail=$((fail + 1)); fi
# --recorded-clock: the clock table's recorded column is the runs' mean sm_clock_mhz per step type
out=$("$bin" rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --measured $e.steps.csv --measured $e.run2.steps.csv \
      --set workload.requests.B.output_tokens=8 --set profile=$PWD/tests/data/replay/h200-envelope/profile.yaml \
      --recorded-clock 2>&1)
want=$(awk -F, 'FNR > 1 && $2 == "mixed" { s += $7; n++ } END { printf "%.0f", s / n }' $e.steps.csv $e.run2.steps.csv)
if printf '%s\n' "$out" | grep -q "recorded SM clock (a diagnostic)" &&
   printf '%s\n' "$out" | awk -v w="$want" '/^   clock /{ c = 1; next } c && $1 == "mixed" { ok = ($4 == w && $3 > 1000 && $3 <= 1980) } END { exit !ok }'; then
    echo "  ok   --recorded-clock: the model's clock beside the runs' recorded mean ($want MHz, mixed)"; pass=$((pass + 1))
else echo "  FAIL --recorded-clock (want $want MHz): $out"; fail=$((fail + 1)); fi
expect 2 "takes two or more --measured runs" "--recorded-clock with one run is refused" -- \
    rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --measured $e.steps.csv --recorded-clock
# --recorded-clock of a run that recorded no clock: refused (it priced at the model's clock, unsaid)
awk -F, -v OFS=, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "sm_clock_mhz") c = i }
    { s = ""; for (i = 1; i <= NF; i++) if (i != c) s = s (s == "" ? "" : OFS) $i; print s }' $e.run2.steps.csv > "$tmp/noclk.csv"
expect 2 "noclk.csv:1:1: sm_clock_mhz: no step's SM clock recorded" "--recorded-clock of a run without clocks is refused" -- \
    rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --measured $e.steps.csv --measured "$tmp/noclk.csv" \
    --set workload.requests.B.output_tokens=8 --set profile=$PWD/tests/data/replay/h200-envelope/profile.yaml --recorded-clock
# a clock that is no number (nor nan, the replay's "not sampled"): refused at its line and column,
# not read as an unsampled step
awk -F, -v OFS=, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "sm_clock_mhz") c = i } NR == 6 { $c = "abc" } { print }' \
    $e.run2.steps.csv > "$tmp/badclk.csv"
expect 2 "badclk.csv:6:[0-9]*: sm_clock_mhz: expected a clock in MHz in \[1, 1e5\], or nan" \
    "a recording's sm_clock_mhz of text is refused" -- \
    rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --measured $e.steps.csv --measured "$tmp/badclk.csv" \
    --set workload.requests.B.output_tokens=8 --set profile=$PWD/tests/data/replay/h200-envelope/profile.yaml
# sm_mhz_step (pacesim-gpu replay --step-clock: the clock over the step itself) in every run:
# --recorded-clock prices at it instead of sm_clock_mhz and says so; here every mixed step at
# 1500 MHz (their NVML readings ~1930), so the clock table's recorded mixed mean is 1500 and the
# mixed steps price slower (their sum error moves); in one run only: as without the column
sc() { awk -F, -v OFS=, 'NR == 1 { print $0, "sm_mhz_step"; next } { print $0, ($2 == "mixed" ? 1500 : $7) }' "$1"; }
sc $e.steps.csv > "$tmp/sc1.csv"; sc $e.run2.steps.csv > "$tmp/sc2.csv"
rc_of() { "$bin" rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --measured "$1" --measured "$2" \
          --set workload.requests.B.output_tokens=8 --set profile=$PWD/tests/data/replay/h200-envelope/profile.yaml \
          --recorded-clock "${@:3}" 2>&1; }
o0=$(rc_of $e.steps.csv $e.run2.steps.csv) o1=$(rc_of "$tmp/sc1.csv" "$tmp/sc2.csv") o2=$(rc_of "$tmp/sc1.csv" $e.run2.steps.csv)
mixed_sum() { printf '%s\n' "$1" | awk '/^   mixed /{ print $4; exit }'; }
s0=$(mixed_sum "$o0") s1=$(mixed_sum "$o1")
if printf '%s\n' "$o1" | head -1 | grep -q "recorded SM clock (a diagnostic); the clock each run stamped over the step itself (sm_mhz_step), not NVML's" &&
   printf '%s\n' "$o1" | awk '/^   clock /{ c = 1; next } c && $1 == "mixed" { ok = ($4 == 1500) } END { exit !ok }' &&
   [ -n "$s0" ] && [ -n "$s1" ] && [ "$s0" != "$s1" ] && [ "$o2" = "$o0" ] && ! printf '%s\n' "$o0" | grep -q sm_mhz_step; then
    echo "  ok   --recorded-clock at sm_mhz_step where every run has it (mixed sum err $s0 -> $s1 at 1500 MHz); else at sm_clock_mhz"
    pass=$((pass + 1))
else echo "  FAIL --recorded-clock at sm_mhz_step: $o1 / $o2"; fail=$((fail + 1)); fi
# a profile with calib's stamped light-load and heater clocks (sustained.stamp_cold_mhz,
# stamp_hot_mhz): the stamped steps are priced in that meter, the header says so, and at 1500 MHz
# (the stamped heater's clock: the whole hot factor, where NVML's pair gives part of it) the
# mixed steps price higher than against NVML's pair
sed -E '0,/tau_down_s: [0-9.e+-]+/s//&, stamp_cold_mhz: 1800, stamp_hot_mhz: 1500/' \
    tests/data/replay/h200-envelope/profile.yaml > "$tmp/stamped.yaml"
o4=$("$bin" rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --measured "$tmp/sc1.csv" --measured "$tmp/sc2.csv" \
     --set workload.requests.B.output_tokens=8 --set profile="$tmp/stamped.yaml" --recorded-clock 2>&1)
s4=$(mixed_sum "$o4")
if printf '%s\n' "$o4" | head -1 | grep -q "not NVML's, against calib's clocks by the same counters (1800 MHz light load, 1500 heater)" &&
   printf '%s\n' "$o1" | head -1 | grep -q "against NVML's light-load and heater clocks (the profile has no stamped pair)" &&
   [ -n "$s4" ] && awk -v a="$s1" -v b="$s4" 'BEGIN { exit !(b + 0 > a + 0) }'; then
    echo "  ok   --recorded-clock at sm_mhz_step in the stamps' meter where the profile has it (mixed sum err $s1 -> $s4)"
    pass=$((pass + 1))
else echo "  FAIL --recorded-clock in the stamps' meter: $o4"; fail=$((fail + 1)); fi
# --nvml-clock: NVML's reading even where every run stamped its steps (the report as without
# the column); alone (without --recorded-clock) refused
o3=$(rc_of "$tmp/sc1.csv" "$tmp/sc2.csv" --nvml-clock)
if [ "$o3" = "$o0" ]; then
    echo "  ok   --recorded-clock --nvml-clock: NVML's clock though every run has sm_mhz_step"; pass=$((pass + 1))
else echo "  FAIL --recorded-clock --nvml-clock: $o3"; fail=$((fail + 1)); fi
expect 2 "nvml-clock chooses the clock --recorded-clock prices at" "--nvml-clock without --recorded-clock is refused" -- \
    rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --measured $e.steps.csv --measured $e.run2.steps.csv --nvml-clock
# a sm_mhz_step column with no value in [1, 1e5] MHz (every step "nan": no SM stamped at both ends)
# in every run: refused as a run without clocks is, naming the column
awk -F, -v OFS=, 'NR == 1 { print $0, "sm_mhz_step"; next } { print $0, "nan" }' $e.run2.steps.csv > "$tmp/scnan.csv"
expect 2 "scnan.csv:1:1: sm_mhz_step: no step's SM clock recorded" "--recorded-clock of runs whose sm_mhz_step holds no clock is refused" -- \
    rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --measured "$tmp/sc1.csv" --measured "$tmp/scnan.csv" \
    --set workload.requests.B.output_tokens=8 --set profile=$PWD/tests/data/replay/h200-envelope/profile.yaml --recorded-clock
# --compute-hot: at the recorded clock the GEMMs by calib's compute-bound GEMM probe too: a
# profile with the probe prices the mixed steps higher in sum (their GEMMs near peak rate); one
# without it (the envelope set's) prices as --recorded-clock alone
l=tests/data/replay/h200-lib-llama8b-b/h200-llama8b-wide-s256-b16384
ch() { "$bin" rescore scenarios/lib/h200-llama8b-wide-s256-b16384.yaml --measured $l.steps.csv --measured $l.run2.steps.csv \
       --set profile=$PWD/tests/data/replay/h200-lib-llama8b-b/profile.yaml --recorded-clock "$@" 2>&1; }
sum_of() { printf '%s\n' "$1" | awk '/^   mixed /{ s = $4; sub(/%/, "", s); print s; exit }'; }
o1=$(ch) o2=$(ch --compute-hot)
e1=$("$bin" rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --measured $e.steps.csv --measured $e.run2.steps.csv \
      --set workload.requests.B.output_tokens=8 --set profile=$PWD/tests/data/replay/h200-envelope/profile.yaml \
      --recorded-clock 2>&1 | tail -n +2)
e2=$("$bin" rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --measured $e.steps.csv --measured $e.run2.steps.csv \
      --set workload.requests.B.output_tokens=8 --set profile=$PWD/tests/data/replay/h200-envelope/profile.yaml \
      --recorded-clock --compute-hot 2>&1 | tail -n +2)
if [ -f $l.steps.csv ] && printf '%s\n' "$o2" | grep -q "compute-bound GEMMs by calib's probe (a diagnostic)" &&
   awk -v a="$(sum_of "$o1")" -v b="$(sum_of "$o2")" 'BEGIN { exit !(b > a + 0.5) }' && [ "$e1" = "$e2" ]; then
    echo "  ok   --compute-hot: mixed steps $(sum_of "$o1")% -> $(sum_of "$o2")% in sum with the probe; as before without it"; pass=$((pass + 1))
else echo "  FAIL --compute-hot: $o2"; fail=$((fail + 1)); fi
# gap_s (a back-to-back replay's GPU idle before each step): with it in every run the heat
# state relaxes over it before each step, so the Llama card's mixed steps price lower in sum (a
# cooler clock; the probe off to see the idle alone); in one run only, or with
# --no-recorded-idle, the output is the plain one (but for the probe's line: why not priced)
awk -F, -v OFS=, 'NR == 1 { print $0, "gap_s"; next } { print $0, 0.02 }' $l.steps.csv > "$tmp/g1.csv"
awk -F, -v OFS=, 'NR == 1 { print $0, "gap_s"; next } { print $0, 0.02 }' $l.run2.steps.csv > "$tmp/g2.csv"
gi() { "$bin" rescore scenarios/lib/h200-llama8b-wide-s256-b16384.yaml --set profile=$PWD/tests/data/replay/h200-lib-llama8b-b/profile.yaml "$@" 2>&1; }
noprobe() { printf '%s\n' "$1" | tail -n +2 | grep -v "probe not priced"; }
o0=$(gi --measured $l.steps.csv --measured $l.run2.steps.csv)
o1=$(gi --measured "$tmp/g1.csv" --measured "$tmp/g2.csv" --no-compute-hot)
o2=$(gi --measured "$tmp/g1.csv" --measured $l.run2.steps.csv)
o3=$(gi --measured "$tmp/g1.csv" --measured "$tmp/g2.csv" --no-recorded-idle)
if [ -f $l.steps.csv ] && printf '%s\n' "$o1" | grep -q "relaxes over the GPU idle each run recorded before each step (gap_s): 20.00 ms a step" &&
   awk -v a="$(sum_of "$o0")" -v b="$(sum_of "$o1")" 'BEGIN { exit !(b < a - 0.5) }' &&
   [ "$(noprobe "$o2")" = "$(noprobe "$o0")" ] && [ "$(noprobe "$o3")" = "$(noprobe "$o0")" ]; then
    echo "  ok   gap_s: mixed steps $(sum_of "$o0")% -> $(sum_of "$o1")% in sum after 20 ms of idle a step; one run without it, or --no-recorded-idle: as before"; pass=$((pass + 1))
else echo "  FAIL gap_s: $o1"; fail=$((fail + 1)); fi
# calib's compute-bound GEMM probe by default where the idle is recorded: the GEMMs as
# --compute-hot prices them (no clock table: not the diagnostic), its line instead; where it is
# not recorded (a run without gap_s, or --no-recorded-idle) not priced, one line saying why
o6=$(gi --measured "$tmp/g1.csv" --measured "$tmp/g2.csv")
o7=$(gi --measured "$tmp/g1.csv" --measured "$tmp/g2.csv" --compute-hot)
body() { printf '%s\n' "$1" | awk '/^   clock /{ c = 1 } /^   window/{ c = 0 } /^   / && !c && /%|^   steps /'; }   # less the clock table
if printf '%s\n' "$o6" | grep -q "^   GEMMs by calib's compute-bound probe at the model's clock: the idle before each step is recorded" &&
   ! printf '%s\n' "$o6" | grep -q "^   clock " && [ -n "$(body "$o6")" ] && [ "$(body "$o6")" = "$(body "$o7")" ] &&
   awk -v a="$(sum_of "$o1")" -v b="$(sum_of "$o6")" 'BEGIN { exit !(b > a + 0.5) }' &&
   printf '%s\n' "$o0" | grep -q "^   calib's compute-bound GEMM probe not priced: the runs do not record the GPU's idle before each step (gap_s)" &&
   printf '%s\n' "$o2" | grep -q "^   calib's compute-bound GEMM probe not priced: the runs do not record" &&
   printf '%s\n' "$o3" | grep -q "^   calib's compute-bound GEMM probe not priced: the recorded idle is off (--no-recorded-idle)" &&
   [ "$(printf '%s\n' "$o0" | grep -c "probe")" = 1 ] && ! printf '%s\n' "$o1" | grep -q "probe"; then
    echo "  ok   the probe by default with the recorded idle: mixed steps $(sum_of "$o1")% -> $(sum_of "$o6")% in sum (as --compute-hot); without it not priced, one line why"; pass=$((pass + 1))
else echo "  FAIL the probe by default with the recorded idle: $o6"; fail=$((fail + 1)); fi
# one run: the same rule (the replay report, then the probe's line)
s0=$(gi --measured "$tmp/g1.csv")
s1=$(gi --measured "$tmp/g1.csv" --no-compute-hot)
s2=$(gi --measured $l.steps.csv)
s3=$(gi --measured $l.steps.csv --compute-hot)
if printf '%s\n' "$s0" | tail -n 1 | grep -q "^   GEMMs by calib's compute-bound probe at the model's clock: the idle" &&
   [ "$(printf '%s\n' "$s0" | sed '$d')" != "$s1" ] && printf '%s\n' "$s1" | tail -n 1 | grep -q "^   steps " &&
   printf '%s\n' "$s2" | tail -n 1 | grep -q "^   calib's compute-bound GEMM probe not priced: the runs do not record" &&
   printf '%s\n' "$s3" | tail -n 1 | grep -q "^   compute-bound GEMMs by calib's probe at the model's clock (--compute-hot)" &&
   [ "$(printf '%s\n' "$s3" | sed '$d')" != "$(printf '%s\n' "$s2" | sed '$d')" ]; then
    echo "  ok   one run: the probe priced with its recorded idle, not without it (--compute-hot: anyway), one line each"; pass=$((pass + 1))
else echo "  FAIL one run, the probe: $s0 / $s2 / $s3"; fail=$((fail + 1)); fi
awk -F, -v OFS=, 'NR == 5 { $NF = -0.001 } 1' "$tmp/g1.csv" > "$tmp/gneg.csv"
expect 2 "gneg.csv:5:[0-9]*: gap_s: expected a decimal number of seconds" "a negative gap_s is refused at its line and column" -- \
    rescore scenarios/lib/h200-llama8b-wide-s256-b16384.yaml --measured "$tmp/gneg.csv" --measured "$tmp/g2.csv"
# --compute-hot alone: the probe at the model's own clock, the model's clock beside the recorded
o3=$(ch --compute-hot | tail -n +2)
o4=$("$bin" rescore scenarios/lib/h200-llama8b-wide-s256-b16384.yaml --measured $l.steps.csv --measured $l.run2.steps.csv \
     --set profile=$PWD/tests/data/replay/h200-lib-llama8b-b/profile.yaml --compute-hot 2>&1)
o5=$("$bin" rescore scenarios/lib/h200-llama8b-wide-s256-b16384.yaml --measured $l.steps.csv --measured $l.run2.steps.csv \
     --set profile=$PWD/tests/data/replay/h200-lib-llama8b-b/profile.yaml 2>&1)
if [ -f $l.steps.csv ] && printf '%s\n' "$o4" | grep -q "compute-bound GEMMs by calib's probe at the model's clock (a diagnostic)" &&
   printf '%s\n' "$o4" | grep -q "^   clock " && [ "$(printf '%s\n' "$o4" | tail -n +2)" != "$o3" ] &&
   awk -v a="$(sum_of "$o5")" -v b="$(sum_of "$o4")" 'BEGIN { exit !(b > a + 0.5) }'; then
    echo "  ok   --compute-hot alone: mixed steps $(sum_of "$o5")% -> $(sum_of "$o4")% in sum at the model's clock"; pass=$((pass + 1))
else echo "  FAIL --compute-hot alone: $o4"; fail=$((fail + 1)); fi
expect 2 "compute-hot and --no-compute-hot together" "--compute-hot with --no-compute-hot is refused" -- \
    rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --measured $e.steps.csv --compute-hot --no-compute-hot
expect 2 "takes one --measured run" "--steps with several runs is refused" -- \
    rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --measured $e.steps.csv --measured $e.run2.steps.csv --steps "$tmp/s.csv"
expect 2 "h200-fp16-nomtp-b16k-pdr-pace4.steps.csv:[0-9]*:[0-9]*: [a-z]*: .*not the recorded scenario" \
    "a run of another scenario among the runs is refused at its line" -- \
    rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --measured $e.steps.csv \
    --measured tests/data/replay/h200-envelope/h200-fp16-nomtp-b16k-pdr-pace4.steps.csv --set workload.requests.B.output_tokens=8
expect 2 "bad.csv:3:3: type" "a malformed second run: file:line:col" -- \
    rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --measured $e.steps.csv --measured "$tmp/bad.csv" --set workload.requests.B.output_tokens=8
expect 2 "the same recording as --measured $e.steps.csv: the runs' spread would be 0" "one recording twice" -- \
    rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --measured $e.steps.csv --measured ./$e.steps.csv
cp $e.run2.steps.csv "$tmp/copy.csv"
expect 2 "the same recording as --measured $e.run2.steps.csv (byte for byte)" "a copy of a recording" -- \
    rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --measured $e.steps.csv --measured $e.run2.steps.csv \
    --measured "$tmp/copy.csv"
sed 's/$/\r/' $e.run2.steps.csv > "$tmp/crlf.csv"      # the same run, not the same bytes
expect 2 "crlf.csv:1:1: measured_s: every step's time as in --measured $e.run2.steps.csv: one run given twice" \
    "a copy of a recording with other line ends" -- rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml \
    --measured $e.steps.csv --measured $e.run2.steps.csv --measured "$tmp/crlf.csv" --set workload.requests.B.output_tokens=8
expect 2 "rescore: --steps given twice" "--steps twice (the first was dropped)" -- \
    rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --measured $e.steps.csv --steps "$tmp/s1.csv" --steps "$tmp/s2.csv"
expect 2 "rescore: --set workload.requests.B.output_tokens=16: workload.requests.B.output_tokens is set twice" \
    "one key set twice (the first was dropped)" -- rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml \
    --measured $e.steps.csv --set workload.requests.B.output_tokens=8 --set workload.requests.B.output_tokens=16
expect 2 "rescore: --measured needs a value" "--measured last, without its file" -- \
    rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --measured $e.steps.csv --measured
many=(); for i in $(seq 17); do many+=(--measured $e.steps.csv); done
expect 2 "at most 16 --measured" "more than 16 runs is refused" -- \
    rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml "${many[@]}"
expect 2 "cannot open the recording" "a missing recording" -- \
    rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --measured "$tmp/none.csv"
# a cluster: the recording priced one engine's steps; the other replicas would be priced by the profile
expect 2 "^scenarios/capacity/h200-llama8b-split.yaml:[0-9]*:[0-9]*: cluster: rescore prices the steps of one engine" \
    "a cluster scenario is refused at its cluster:" -- rescore scenarios/capacity/h200-llama8b-split.yaml --measured $r
expect 2 "rescore: --set cluster: rescore prices the steps of one engine" "a cluster by --set is refused" -- \
    rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml --measured $e.steps.csv --measured $e.run2.steps.csv \
    --set cluster.pools.main.count=2
expect 2 "needs a scenario and --measured" "no --measured" -- rescore scenarios/h200-fp16-nomtp-b16k-baseline.yaml
# each percentile window's band in the prediction's values (p45 and p55 around a p50): the window
# between them, the moves and the move of one crossing as the band's width over its 25.5 ranks
# (256 requests) say; steep from 0.5% a crossing: the MoE library load's TTFT p50 (its median on
# a cliff, 1.3%), not its TPOT p50 (0.1%); a window that is no percentile has no row
q=tests/data/replay/h200-lib-qwen3-30b-a3b-c/h200-qwen3-30b-a3b-wide-s128-b8192
out=$("$bin" rescore scenarios/lib/h200-qwen3-30b-a3b-wide-s128-b8192.yaml --measured $q.steps.csv --measured $q.run2.steps.csv \
      --set profile=$PWD/tests/data/replay/h200-lib-qwen3-30b-a3b-c/profile.yaml 2>&1)
if printf '%s\n' "$out" | grep -q "^   percentile window .* one crossing (steep: from 0.5%)" &&
   printf '%s\n' "$out" | awk '
       function pc(s) { sub(/%/, "", s); return s + 0 }
       function near(a, b, t) { return (a - b) ^ 2 < t ^ 2 }
       /^   window / { w = 1; next } /^   percentile window / { w = 0; b = 1; next } /^   steps / { b = 0 }
       w { pred[$1] = $2 } w && $1 == "one" && $2 == "run" { pred[$3] = $4 }   # the run without noise: the band is its
       b && $1 == "ttft_p50" { v = pred[$1]; t = ($2 == "p45" && $4 == "p55" && $3 < v && v < $5 && $9 == "steep" &&
                                   near(pc($8), 100 * ($5 - $3) / 25.5 / v, 0.02) && pc($8) >= 0.5 &&
                                   near(pc($6), 100 * ($3 / v - 1), 0.15) && near(pc($7), 100 * ($5 / v - 1), 0.15)) }
       b && $1 == "tpot_p50" { u = ($3 <= pred[$1] && pred[$1] <= $5 && NF == 8 && pc($8) < 0.5) }
       b && $1 == "throughput" { x = 1 }
       END { exit !(t && u && !x) }'; then
    echo "  ok   percentile windows: the prediction's p45 and p55 around each p50; TTFT p50 steep, TPOT p50 not"; pass=$((pass + 1))
else echo "  FAIL percentile windows' band: $out"; fail=$((fail + 1)); fi
# a recording's queue order (pacesim-gpu replay --layer-order's layer_order column): said in one
# line where every run has it (steps layer by layer counted), named where only some do; runs
# mostly layer by layer (the engine's order) priced without calib's compute-bound GEMM probe, as
# --no-compute-hot prices them, a line saying so; runs of layer_order 0 with it, as without the
# column; a value other than 0 or 1 refused at its line and column
q=tests/data/replay/h100-lib-qwen3-14b-c/h200-qwen3-14b-poisson
lo() { awk -v v="${2:-}" 'BEGIN { FS = OFS = "," } NR == 1 { print $0, "layer_order"; next }
                      { print $0, (v == "" ? (NR % 7 ? 1 : 0) : v) }' "$1"; }
lo $q.steps.csv > "$tmp/lo1.csv"; lo $q.run2.steps.csv > "$tmp/lo2.csv"
qargs=(rescore scenarios/lib/h200-qwen3-14b-poisson.yaml --set "profile=$PWD/tests/data/replay/h100-lib-qwen3-14b-c/profile.yaml")
"$bin" "${qargs[@]}" --measured $q.steps.csv --measured $q.run2.steps.csv --no-compute-hot > "$tmp/lo0.txt" 2>&1
"$bin" "${qargs[@]}" --measured "$tmp/lo1.csv" --measured "$tmp/lo2.csv" > "$tmp/lo.txt" 2>&1; rc=$?
n1=$(awk -F, 'NR > 1 && $NF == 1' "$tmp/lo1.csv" "$tmp/lo2.csv" | wc -l) nall=$(cat "$tmp/lo1.csv" "$tmp/lo2.csv" | grep -vc '^step')
if [ $rc = 0 ] && grep -q "^   the runs queued each step's items layer by layer, as a forward pass runs them (--layer-order): $n1 of $nall steps" "$tmp/lo.txt" &&
   grep -q "^   calib's compute-bound GEMM probe not priced: the runs queued their steps layer by layer, where a GEMM does not run every layer in a row (--compute-hot: priced anyway)$" "$tmp/lo.txt" &&
   [ "$(grep -v "layer by layer" "$tmp/lo.txt")" = "$(cat "$tmp/lo0.txt")" ]; then
    echo "  ok   layer order: one line, $n1 of $nall steps layer by layer, the figures as --no-compute-hot prices them, a line why"; pass=$((pass + 1))
else echo "  FAIL layer order's line: rc $rc: $(head -4 "$tmp/lo.txt")"; fail=$((fail + 1)); fi
o1=$("$bin" "${qargs[@]}" --measured "$tmp/lo1.csv" 2>&1); rc=$?
o2=$("$bin" "${qargs[@]}" --measured $q.steps.csv 2>&1)
if [ $rc = 0 ] && printf '%s\n' "$o1" | grep -q "^   calib's compute-bound GEMM probe not priced: the runs queued their steps layer by layer" &&
   printf '%s\n' "$o2" | grep -q "^   GEMMs by calib's compute-bound probe at the model's clock"; then
    echo "  ok   one measured run: the probe off in layer order, on in item order"; pass=$((pass + 1))
else echo "  FAIL one run's probe by order: rc $rc: $(printf '%s\n' "$o1" | tail -2)"; fail=$((fail + 1)); fi
lo $q.steps.csv 0 > "$tmp/lz1.csv"; lo $q.run2.steps.csv 0 > "$tmp/lz2.csv"
"$bin" "${qargs[@]}" --measured $q.steps.csv --measured $q.run2.steps.csv > "$tmp/lp0.txt" 2>&1
"$bin" "${qargs[@]}" --measured "$tmp/lz1.csv" --measured "$tmp/lz2.csv" > "$tmp/lz.txt" 2>&1; rc=$?
"$bin" "${qargs[@]}" --measured "$tmp/lo1.csv" --measured "$tmp/lo2.csv" --compute-hot > "$tmp/lh.txt" 2>&1; rc2=$?
"$bin" "${qargs[@]}" --measured $q.steps.csv --measured $q.run2.steps.csv --compute-hot > "$tmp/lh0.txt" 2>&1
if [ $rc = 0 ] && [ $rc2 = 0 ] && grep -q "^   GEMMs by calib's compute-bound probe at the model's clock" "$tmp/lz.txt" &&
   [ "$(grep -v "layer by layer" "$tmp/lz.txt")" = "$(cat "$tmp/lp0.txt")" ] &&
   [ "$(grep -v "layer by layer" "$tmp/lh.txt")" = "$(cat "$tmp/lh0.txt")" ]; then
    echo "  ok   runs in item order (layer_order 0) priced with the probe, as without the column; --compute-hot prices it over layered runs"; pass=$((pass + 1))
else echo "  FAIL item-order runs' probe: rc $rc $rc2: $(head -4 "$tmp/lz.txt")"; fail=$((fail + 1)); fi
out=$("$bin" "${qargs[@]}" --measured "$tmp/lo1.csv" --measured $q.run2.steps.csv 2>&1)
if printf '%s
' "$out" | grep -q "^   runs of two queue orders: 1 layer by layer (--layer-order), 1 each item's layers together"; then
    echo "  ok   layer order in one run of two: named"; pass=$((pass + 1))
else echo "  FAIL two orders not named: $(printf '%s
' "$out" | head -3)"; fail=$((fail + 1)); fi
lo $q.steps.csv 2 > "$tmp/lo3.csv"
expect 2 "lo3.csv:2:[0-9]*: layer_order: expected 0 or 1" "a layer_order other than 0 or 1 is refused at its place" -- \
    "${qargs[@]}" --measured "$tmp/lo3.csv" --measured $q.run2.steps.csv
echo "rescore: $pass passed, $fail failed"
[ $fail = 0 ]
