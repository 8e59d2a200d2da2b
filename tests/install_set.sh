#!/usr/bin/env bash
# install_set.sh: calib/install_set.sh on a WORK tree that calib/device_record.sh itself leaves
# (fake nvidia-smi, calib and pacesim-gpu stand in for the device, as tests/device_record.sh's),
# the library part's runs then replaced by a real back-to-back recording set's
# (tests/data/replay/h200-lib-llama8b-d/), so the rescore it runs has figures to print.  A part
# installs from the tree and from record.tgz, under the set's names, with no target; everything
# missing or mixed is refused in one line, exit 2, nothing installed.
set -u
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
mkdir -p "$t/dest"
. tests/fake_device.sh
fake_device "$t" row
fail=0 pass=0
check() { if eval "$2"; then echo "  ok   $1"; pass=$((pass + 1)); else echo "  FAIL $1"; fail=$((fail + 1)); fi; }
w=$t/work o=$t/out
PATH=$t/fake:$PATH bash calib/device_record.sh "$w" "$o" "$t/bin" lib-calib:llama8b lib-runs:llama8b:1,2 \
    env-calib env-serve:1,2 env-ref:1 > "$t/rec.log" 2>&1
PATH=$t/fake:$PATH bash calib/device_record.sh "$w" "$o" "$t/bin" env-ref:2 > "$t/rec2.log" 2>&1
check "device_record.sh (fakes) leaves the WORK tree" '[ -s $w/steps.log ] && [ -s $w/lib/lib-llama8b/profile.yaml ] && [ -s $o/record.tgz ]'
# the library part: a real back-to-back set's profile and runs (two runs of its four scenarios)
real=tests/data/replay/h200-lib-llama8b-d
cp $real/profile.yaml $real/*.steps.csv $w/lib/lib-llama8b/
tar czf "$o/record.tgz" -C "$w" .
cp -a "$w" "$t/pristine"
inst() { DEST=$t/dest bash calib/install_set.sh "$@"; }
# refused: RC 2, one stderr line matching PAT, the set not made
refused() {  # refused WHAT PAT ARGS...
    local what=$1 pat=$2; shift 2
    local err rc
    err=$(inst "$@" 2>&1 >/dev/null); rc=$?
    if [ $rc = 2 ] && [ "$(printf '%s\n' "$err" | wc -l)" = 1 ] && printf '%s' "$err" | grep -q -- "$pat" \
       && [ ! -e "$t/dest/${!#}" ]; then
        echo "  ok   refused: $what"; pass=$((pass + 1))
    else echo "  FAIL refused: $what: rc $rc: $err"; fail=$((fail + 1)); fi
}
out=$(inst "$w" lib:llama8b lib-x 2>&1); rc=$?
d=$t/dest/lib-x
same_runs() { local f; for f in $real/*.steps.csv; do cmp -s "$f" "$1/${f##*/}" || return 1; done; }
check "lib:llama8b from the tree: rc 0 (got $rc), profile and 8 runs under the set's names, no target" \
    '[ $rc = 0 ] && cmp -s $d/profile.yaml $real/profile.yaml && [ $(ls $d | wc -l) = 9 ] && [ ! -e $d/target ] && same_runs $d'
check "the rescore command of each recording, its figures and a suggested target printed" \
    'printf "%s\n" "$out" | grep -q "^  bin/pacesim rescore scenarios/lib/h200-llama8b-wide-s64-b4096.yaml --measured $d/h200-llama8b-wide-s64-b4096.steps.csv --measured $d/h200-llama8b-wide-s64-b4096.run2.steps.csv --set profile=$d/profile.yaml$" &&
     [ $(printf "%s\n" "$out" | grep -c "worst step median") = 4 ] &&
     printf "%s\n" "$out" | grep -q "suggested target .*: [0-9]* [0-9]* [0-9]*$" && printf "%s\n" "$out" | grep -q "calib and runs on GPU-aaaa"'
# the suggestion is the next whole percent over the worst figures: at least the set's own target,
# which tests/rescore.sh passes it under
sug=$(printf '%s\n' "$out" | sed -n 's/^suggested target .*: //p') tgt=$(grep -v '^#' $real/target)
check "the suggestion covers the set's recorded misses ($sug; the set's target $tgt)" \
    'read -r a b c <<< "$sug"; read -r x y z <<< "$tgt"; [ "$a" -ge "$x" ] && [ "$b" -ge "$y" ] && [ "$c" -ge "$z" ]'
out=$(PACESIM=$t/none inst "$o/record.tgz" lib:llama8b lib-y 2>&1); rc=$?
check "from record.tgz, without bin/pacesim: rc 0 (got $rc), the same files, the commands only" \
    '[ $rc = 0 ] && diff -r $t/dest/lib-x $t/dest/lib-y >/dev/null && printf "%s\n" "$out" | grep -q "not built" &&
     ! printf "%s\n" "$out" | grep -q "suggested"'
out=$(PACESIM=$t/none inst "$w" env env-x 2>&1); rc=$?
d=$t/dest/env-x
check "env: rc 0 (got $rc), the h200.yaml as profile.yaml, the 7 serving and 12 reference scenarios, runs 1-2 each" \
    '[ $rc = 0 ] && [ "$(cat $d/profile.yaml)" = "fake profile" ] && [ -s $d/h200-serve-poisson-p600-s64-b2048.run2.steps.csv ] &&
     [ -s $d/h200-fp16-nomtp-b16k-pdr-pace8.run2.steps.csv ] && [ $(ls $d/*.steps.csv | wc -l) = 38 ] && [ ! -e $d/target ] &&
     printf "%s\n" "$out" | grep -q -- "--set workload.requests.B.output_tokens=8 --set env.VLLM_1CAT_PREFILL_PACE_STEPS=8"'
# the env part from record.tgz alone (its env-work/ left out: the runs from env/*-steps.tgz)
rm -rf "$t/w2" && cp -a "$t/pristine" "$t/w2" && rm -rf "$t/w2/env-work" && tar czf "$t/nowork.tgz" -C "$t/w2" .
PACESIM=$t/none inst "$t/nowork.tgz" env env-y > /dev/null 2>&1; rc=$?
check "env from the packed steps (no env-work/): rc 0 (got $rc), the same files" '[ $rc = 0 ] && diff -r $t/dest/env-x $t/dest/env-y >/dev/null'
err=$(inst "$w" lib:llama8b lib-x 2>&1 >/dev/null); rc=$?
check "refused: the set exists (rc $rc), one line, the set as it was" \
    '[ $rc = 2 ] && [ $(printf "%s\n" "$err" | wc -l) = 1 ] && printf "%s" "$err" | grep -q "lib-x exists and is not empty" && same_runs $t/dest/lib-x'
# the refusals, each on a copy of the tree with one thing wrong
fresh() { rm -rf "$t/w2"; cp -a "$t/pristine" "$t/w2"; }
L=$t/w2/lib/lib-llama8b
fresh; rm $t/w2/steps.log
refused "no steps.log" "no steps.log" "$t/w2" lib:llama8b s1
fresh; rm $L/profile.yaml
refused "no profile" "no profile" "$t/w2" lib:llama8b s2
fresh; sed -i 's/^== lib-runs:llama8b:1,2 on GPU-aaaa/== lib-runs:llama8b:1,2 on GPU-bbbb/' $t/w2/steps.log
refused "runs on another card than the calib's" "mixed cards: lib-calib:llama8b on GPU-aaaa, lib-runs:llama8b:1,2 (run [12] of h200-llama8b-.*) on GPU-bbbb" "$t/w2" lib:llama8b s3
fresh; sed -i 's/^== env-ref:2 on GPU-aaaa/== env-ref:2 on GPU-cccc/' $t/w2/steps.log
refused "a later call's runs on another card (env)" "mixed cards: env-calib on GPU-aaaa, env-ref:2 (run 2" "$t/w2" env s4
fresh; sed -i '/^== lib-calib:llama8b/d' $t/w2/steps.log
refused "no calib step in steps.log" "no lib-calib:llama8b step" "$t/w2" lib:llama8b s5
fresh; cp $L/h200-llama8b-poisson.run2.steps.csv $L/h200-llama8b-poisson.run3.steps.csv
refused "a run no step recorded" "poisson.run3.steps.csv: steps.log records no lib-runs:llama8b step of run 3" "$t/w2" lib:llama8b s6
fresh; rm $L/h200-llama8b-wide-s128-b8192.run2.steps.csv
refused "a scenario with one run" "h200-llama8b-wide-s128-b8192: one run" "$t/w2" lib:llama8b s7
fresh; rm $L/h200-llama8b-wide-s128-b8192.steps.csv
refused "a scenario without run 1" "h200-llama8b-wide-s128-b8192: no run 1" "$t/w2" lib:llama8b s8
fresh; cut -d, -f1-9 $real/h200-llama8b-poisson.run2.steps.csv > $L/h200-llama8b-poisson.run2.steps.csv
refused "an item-by-item run under the set's names among back-to-back ones" "poisson.run2.steps.csv: item by item .*mixed modes" "$t/w2" lib:llama8b s9
fresh; cp $L/h200-llama8b-poisson.steps.csv $L/h200-llama8b-nosuch.steps.csv; cp $L/h200-llama8b-poisson.steps.csv $L/h200-llama8b-nosuch.run2.steps.csv
refused "a recording of no scenario" "no scenario h200-llama8b-nosuch.yaml" "$t/w2" lib:llama8b s10
fresh; : > $L/h200-llama8b-poisson.steps.csv
refused "an empty recording" "poisson.steps.csv: not a steps recording" "$t/w2" lib:llama8b s11
fresh; rm $L/*.steps.csv
refused "no recordings" "no recordings" "$t/w2" lib:llama8b s12
fresh
refused "a model with no calib in the tree" "lib:qwen3-30b-a3b: no profile" "$t/w2" lib:qwen3-30b-a3b s13
REPLAY_MODE=item refused "REPLAY_MODE=item: no item-by-item runs" "no recordings (\*.item.csv)" "$t/w2" lib:llama8b s14
REPLAY_MODE=item PATH=$t/fake:$PATH bash calib/device_record.sh "$t/w2" "$o" "$t/bin" lib-runs:llama8b:1 > /dev/null 2>&1
REPLAY_MODE=item refused "REPLAY_MODE=item: one item-by-item run" "h200-llama8b-poisson: one run" "$t/w2" lib:llama8b s15
REPLAY_MODE=item PATH=$t/fake:$PATH bash calib/device_record.sh "$t/w2" "$o" "$t/bin" lib-runs:llama8b:2 > /dev/null 2>&1
out=$(REPLAY_MODE=item PACESIM=$t/none inst "$t/w2" lib:llama8b s16 2>&1); rc=$?
check "REPLAY_MODE=item: runs 1-2 installed under the set's names (rc $rc)" \
    '[ $rc = 0 ] && [ "$(head -1 $t/dest/s16/h200-llama8b-poisson.run2.steps.csv)" = step,type ] && [ $(ls $t/dest/s16 | wc -l) = 9 ]'
fresh
REPLAY_MODE=layer refused "REPLAY_MODE=layer: no layer-order runs" "no recordings (\*.layer.csv)" "$t/w2" lib:llama8b s22
FAKE_ARGS_LOG=$t/args.log REPLAY_MODE=layer PATH=$t/fake:$PATH bash calib/device_record.sh "$t/w2" "$o" "$t/bin" \
    lib-runs:llama8b:1,2 > /dev/null 2>&1
check "REPLAY_MODE=layer: device_record.sh runs every replay back to back with --layer-order, named .layer.csv" \
    'grep -q "^== lib-runs:llama8b:1,2 on GPU-aaaa (layer)" $t/w2/steps.log && [ -s $L/h200-llama8b-poisson.run2.layer.csv ] &&
     [ $(grep -c -- "--back-to-back --layer-order" $t/args.log) = 8 ] && [ $(wc -l < $t/args.log) = 8 ]'
out=$(REPLAY_MODE=layer PACESIM=$t/none inst "$t/w2" lib:llama8b s23 2>&1); rc=$?
check "REPLAY_MODE=layer: runs 1-2 installed under the set's names (rc $rc), back to back's columns and layer_order" \
    '[ $rc = 0 ] && [ "$(head -1 $t/dest/s23/h200-llama8b-poisson.run2.steps.csv)" = step,type,gpu_span_s,layer_order ] &&
     [ $(ls $t/dest/s23 | wc -l) = 9 ]'
cp $L/h200-llama8b-poisson.run2.layer.csv $L/h200-llama8b-poisson.run2.steps.csv
refused "a layer-order run under the set's names among back-to-back ones" "poisson.run2.steps.csv: a layer-order recording .*mixed modes" "$t/w2" lib:llama8b s25
cut -d, -f1-3 $L/h200-llama8b-poisson.layer.csv > $t/x.csv && mv $t/x.csv $L/h200-llama8b-poisson.layer.csv
REPLAY_MODE=layer refused "REPLAY_MODE=layer: a run without layer_order" "poisson.layer.csv: no layer_order column" "$t/w2" lib:llama8b s26
REPLAY_MODE=item refused "REPLAY_MODE=item: the runs recorded in layer order are not item ones" "no recordings (\*.item.csv)" "$t/w2" lib:llama8b s24
fresh; awk '/^== lib-runs:llama8b:1,2 /{ r = 1 } r && /^   rc=/{ sub(/rc=0/, "rc=1"); r = 0 } 1' $w/steps.log > $t/w2/steps.log
out=$(PACESIM=$t/none inst "$t/w2" lib:llama8b s21 2>&1); rc=$?
check "a runs step that ended rc=1: installed (rc $rc), the step named" \
    '[ $rc = 0 ] && printf "%s\n" "$out" | grep -q "note: steps.log: lib-runs:llama8b:1,2 on GPU-aaaa ended rc=1" && same_runs $t/dest/s21'
refused "a missing SRC" "no such file or folder" "$t/nosuch" lib:llama8b s17
echo junk > "$t/junk.tgz"
refused "a SRC that is no record.tgz" "not a record.tgz" "$t/junk.tgz" lib:llama8b s18
refused "a bad part" "part 'gpu': lib:M" "$w" gpu s19
refused "a bad set name" "set name '../up'" "$w" lib:llama8b ../up
REPLAY_MODE=fast refused "a bad mode" "REPLAY_MODE must be b2b, item or layer" "$w" lib:llama8b s20
err=$(bash calib/install_set.sh "$w" lib:llama8b 2>&1); rc=$?
check "usage: exit 2 (got $rc), one line" '[ $rc = 2 ] && [ $(printf "%s\n" "$err" | wc -l) = 1 ]'
check "nothing written into the repository's sets" '[ ! -e tests/data/replay/lib-x ] && [ ! -e tests/data/replay/s1 ]'
[ $fail = 0 ] || { echo "-- logs"; cat "$t"/rec*.log; }
echo "install_set: $pass passed, $fail failed"
[ $fail = 0 ]
