#!/usr/bin/env bash
# device_record.sh's plumbing without a GPU: a fake nvidia-smi, calib and pacesim-gpu (each
# writes the file it is asked for) stand in for the device; the steps must leave each set's
# profile and runs where the recording sets expect them, across two calls of one card, refuse
# another card, skip a step that would pass the budget and refuse a bad step.
set -u
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
mkdir -p "$t/bin" "$t/fake"
cat > "$t/fake/nvidia-smi" <<'EOF'
#!/bin/sh
case "$*" in *noheader*) echo "${FAKE_UUID:-GPU-aaaa}" ;; *) echo "name, uuid"; echo "Fake, ${FAKE_UUID:-GPU-aaaa}" ;; esac
EOF
cat > "$t/bin/calib" <<'EOF'
#!/bin/sh
while [ $# -gt 0 ]; do [ "$1" = --out ] && { echo "fake profile" > "$2"; shift; }; shift; done
echo "fake calib"
EOF
cat > "$t/bin/pacesim-gpu" <<'EOF'
#!/bin/sh
b2b=; steps=
while [ $# -gt 0 ]; do
    case $1 in --steps) steps=$2; shift ;; --back-to-back) b2b=,gpu_span_s ;; esac
    shift
done
[ -n "$steps" ] && echo "step,type$b2b" > "$steps"
echo "fake replay"
EOF
chmod +x "$t/fake/nvidia-smi" "$t/bin/calib" "$t/bin/pacesim-gpu"
export PATH=$t/fake:$PATH
fail=0
check() { if eval "$2"; then echo "  ok   $1"; else echo "FAIL $1"; fail=1; fi; }
w=$t/work o=$t/out
bash calib/device_record.sh "$w" "$o" "$t/bin" lib-calib:llama8b lib-runs:llama8b:1 env-calib env-serve:1 \
    > "$t/log1" 2>&1
rc1=$?
bash calib/device_record.sh "$w" "$o" "$t/bin" lib-runs:llama8b:2,3 env-ref:1,2 > "$t/log2" 2>&1
rc2=$?
check "two calls of one card: rc 0 0 (got $rc1 $rc2)" '[ $rc1 = 0 ] && [ $rc2 = 0 ]'
d=$w/lib/lib-llama8b
check "library set: profile and runs 1-3 of each scenario" \
    '[ -s $d/profile.yaml ] && [ $(ls $d/*.steps.csv | wc -l) = 12 ] && [ -s $d/h200-llama8b-wide-s64-b4096.run3.steps.csv ]'
check "envelope: profile, serving run 1, reference runs 1-2" \
    '[ -s $w/env/h200.yaml ] && [ -s $w/env-work/s/h200-serve-poisson-p600-s64-b2048.steps.csv ] &&
     [ -s $w/env-work/r/h200-fp16-nomtp-b16k-pdr-pace8.run2.steps.csv ] && [ -s $w/env/serve-steps.tgz ]'
check "one file back, holding the runs" \
    '[ $(ls $o | wc -l) = 1 ] && tar tzf $o/record.tgz | grep -q "lib-llama8b/h200-llama8b-poisson.run2.steps.csv"'
check "the card is recorded" '[ "$(cat $w/card)" = GPU-aaaa ] && grep -q "lib-runs:llama8b:2,3 on GPU-aaaa" $w/steps.log'
FAKE_UUID=GPU-bbbb bash calib/device_record.sh "$w" "$o" "$t/bin" lib-runs:llama8b:4 > "$t/log3" 2>&1
rc=$?
check "another card refused: exit 3 (got $rc), no run 4" '[ $rc = 3 ] && [ ! -e $d/h200-llama8b-poisson.run4.steps.csv ]'
BUDGET_S=100 bash calib/device_record.sh "$w" "$o" "$t/bin" env-calib lib-runs:llama8b:4 > "$t/log4" 2>&1
rc=$?
check "a step past the budget skipped and named: exit 4 (got $rc)" \
    '[ $rc = 4 ] && grep -q "env-calib skipped" $t/log4 && [ -s $d/h200-llama8b-poisson.run4.steps.csv ]'
# REPLAY_MODE=b2b: the same steps replayed back to back (--back-to-back), into files of their own
# beside the item-by-item ones, which stay as they were
REPLAY_MODE=b2b bash calib/device_record.sh "$w" "$o" "$t/bin" lib-runs:llama8b:1,2 env-ref:1 env-serve:1 > "$t/log6" 2>&1
rc=$?
check "REPLAY_MODE=b2b: rc 0 (got $rc), runs 1-2 as .b2b.csv with --back-to-back, item runs untouched" \
    '[ $rc = 0 ] && grep -q gpu_span_s $d/h200-llama8b-poisson.b2b.csv && grep -q gpu_span_s $d/h200-llama8b-poisson.run2.b2b.csv &&
     [ "$(cat $d/h200-llama8b-poisson.steps.csv)" = step,type ] && [ $(ls $d/*.steps.csv | wc -l) = 16 ] &&
     [ -s $d/h200-llama8b-poisson.b2b.txt ] && grep -q "(b2b)" $w/steps.log'
check "REPLAY_MODE=b2b: reference and serving replays as .b2b.csv, their own reports" \
    'grep -q gpu_span_s $w/env-work/r/h200-fp16-nomtp-b16k-pdr-pace8.b2b.csv &&
     grep -q gpu_span_s $w/env-work/s/h200-serve-poisson-p600-s64-b2048.b2b.csv &&
     [ "$(cat $w/env-work/r/h200-fp16-nomtp-b16k-pdr-pace8.run2.steps.csv)" = step,type ] &&
     [ -s $w/env/replay.b2b.txt ] && [ -s $w/env/replay-steps.b2b.tgz ] && [ -s $w/env/serve-steps.b2b.tgz ]'
for sc in calib/device_record.sh calib/replay_lib.sh calib/gpu_session.sh; do
    msg=$(REPLAY_MODE=fast bash $sc "$w" "$o" "$t/bin" lib-runs:llama8b:1 2>&1); rc=$?
    check "$sc: REPLAY_MODE=fast refused, exit 2 (got $rc), one line" '[ $rc = 2 ] && [ $(printf "%s\n" "$msg" | wc -l) = 1 ]'
done
for bad in lib-runs:llama8b lib-runs:llama8b:x lib-calib:gpt2 nosuch; do
    bash calib/device_record.sh "$w" "$o" "$t/bin" "$bad" > "$t/log5" 2>&1
    rc=$?
    check "bad step '$bad': exit 2 (got $rc)" '[ $rc = 2 ]'
done
[ $fail = 0 ] || { echo "-- logs"; cat "$t"/log*; }
exit $fail
