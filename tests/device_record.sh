#!/usr/bin/env bash
# device_record.sh's plumbing without a GPU: a fake nvidia-smi, calib and pacesim-gpu (each
# writes the file it is asked for) stand in for the device; the steps must leave each set's
# profile and runs where the recording sets expect them, across two calls of one card, refuse
# another card, skip a step that would pass the budget and refuse a bad step.
set -u
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
. tests/fake_device.sh
fake_device "$t"
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
# calib --keep-going's failed points (its exit 1 inside a step that returns 0) named in the step's line
FAKE_CALIB_FAIL=3 bash calib/device_record.sh "$t/wf" "$t/of" "$t/bin" env-calib lib-calib:llama8b > "$t/logf" 2>&1
rc=$?
check "failed calib points counted in the step lines: rc 0 (got $rc), 6 in env/calib.txt (two calibs), 3 in llama8b's log" \
    '[ $rc = 0 ] && grep -A1 "^== env-calib" $t/wf/steps.log | tail -1 | grep -q "rc=0 in [0-9]* s; calib: 6 points failed (env/calib.txt)$" &&
     grep -A1 "^== lib-calib:llama8b" $t/wf/steps.log | tail -1 | grep -q "rc=0 in [0-9]* s; calib: 3 points failed (lib-logs/calib-.*[.]err)$" &&
     grep -q "calib: 6 points failed" $t/logf'
check "a clean calib step's line unchanged" '! grep -q "points failed" $w/steps.log && grep -q "^   rc=0 in [0-9]* s$" $w/steps.log'
# the default: back to back (--back-to-back), under the set's names
check "back to back by default: the set's files with --back-to-back's columns, the mode logged" \
    'grep -q gpu_span_s $d/h200-llama8b-poisson.steps.csv && grep -q gpu_span_s $d/h200-llama8b-wide-s64-b4096.run3.steps.csv &&
     grep -q gpu_span_s $w/env-work/r/h200-fp16-nomtp-b16k-pdr-pace8.run2.steps.csv &&
     grep -q gpu_span_s $w/env-work/s/h200-serve-poisson-p600-s64-b2048.steps.csv &&
     grep -q "lib-runs:llama8b:2,3 on GPU-aaaa (b2b)" $w/steps.log && ! grep -q "env-calib on GPU-aaaa (" $w/steps.log &&
     [ -s $w/env/replay.txt ] && [ -s $w/env/replay-steps.tgz ] && ! ls $d $w/env-work/r | grep -q "[.]item[.]"'
# REPLAY_MODE=item: the same steps replayed item by item (no --back-to-back), into files of their
# own (.item.csv) beside the set's, which stay as they were and hold no item-by-item run
echo kept >> $d/h200-llama8b-poisson.steps.csv
REPLAY_MODE=item bash calib/device_record.sh "$w" "$o" "$t/bin" lib-runs:llama8b:1,2 env-ref:1 env-serve:1 > "$t/log6" 2>&1
rc=$?
check "REPLAY_MODE=item: rc 0 (got $rc), runs 1-2 as .item.csv without --back-to-back, the set's runs untouched" \
    '[ $rc = 0 ] && [ "$(cat $d/h200-llama8b-poisson.item.csv)" = step,type ] &&
     [ "$(cat $d/h200-llama8b-poisson.run2.item.csv)" = step,type ] && grep -q kept $d/h200-llama8b-poisson.steps.csv &&
     [ $(ls $d/*.steps.csv | wc -l) = 16 ] && [ $(cat $d/*.steps.csv | grep -vc gpu_span_s) = 1 ] &&
     [ -s $d/h200-llama8b-poisson.item.txt ] && grep -q "lib-runs:llama8b:1,2 on GPU-aaaa (item)" $w/steps.log'
check "REPLAY_MODE=item: reference and serving replays as .item.csv, their own reports" \
    '[ "$(cat $w/env-work/r/h200-fp16-nomtp-b16k-pdr-pace8.item.csv)" = step,type ] &&
     [ "$(cat $w/env-work/s/h200-serve-poisson-p600-s64-b2048.item.csv)" = step,type ] &&
     grep -q gpu_span_s $w/env-work/r/h200-fp16-nomtp-b16k-pdr-pace8.steps.csv &&
     [ -s $w/env/replay.item.txt ] && [ -s $w/env/replay-steps.item.tgz ] && [ -s $w/env/serve-steps.item.tgz ]'
# an item-by-item recording under the set's names (made before back to back was the default):
# a back-to-back run of that scenario beside it is refused (the set would mix the modes), the
# other scenarios run
echo step,type > $d/h200-llama8b-poisson.run5.steps.csv
echo step,type > $w/env-work/r/h200-fp16-nomtp-b16k-pdr.run5.steps.csv
echo step,type > $w/env-work/s/h200-serve-poisson-p600-s64-b2048.steps.csv
bash calib/device_record.sh "$w" "$o" "$t/bin" lib-runs:llama8b:6 env-ref:6 env-serve:6 > "$t/log7" 2>&1
rc=$?
rc7=$(grep -A1 "^== env-ref:6" $w/steps.log | tail -1)
check "a back-to-back run beside an item-by-item one under the set's names refused: exit 1 (got $rc), named" \
    '[ $rc = 1 ] && [ ! -e $d/h200-llama8b-poisson.run6.steps.csv ] && [ -s $d/h200-llama8b-wide-s64-b4096.run6.steps.csv ] &&
     grep -q "poisson.run5.steps.csv: item by item" $t/log7 && grep -q "poisson.run5.steps.csv: item by item" $d/h200-llama8b-poisson.txt &&
     [ ! -e $w/env-work/r/h200-fp16-nomtp-b16k-pdr.run6.steps.csv ] && [ -s $w/env-work/r/h200-fp16-nomtp-b16k-baseline.run6.steps.csv ] &&
     grep -q "refused: .*pdr.run5.steps.csv" $w/env/replay.txt && [ "${rc7%% in*}" = "   rc=1" ] &&
     [ ! -e $w/env-work/s/h200-serve-poisson-p600-s64-b2048.run6.steps.csv ] &&
     [ -s $w/env-work/s/h200-serve-burst-p600-s128-b4096.run6.steps.csv ] &&
     grep -q "refused: .*s64-b2048.steps.csv" $w/env/serve.txt'
REPLAY_MODE=item bash calib/device_record.sh "$w" "$o" "$t/bin" lib-runs:llama8b:6 > "$t/log8" 2>&1
rc=$?
check "the same run item by item: rc 0 (got $rc)" '[ $rc = 0 ] && [ -s $d/h200-llama8b-poisson.run6.item.csv ]'
for sc in calib/device_record.sh calib/replay_lib.sh calib/gpu_session.sh calib/replay_h200.sh calib/replay_serve.sh; do
    msg=$(REPLAY_MODE=fast bash $sc "$w" "$o" "$t/bin" lib-runs:llama8b:1 2>&1); rc=$?
    check "$sc: REPLAY_MODE=fast refused, exit 2 (got $rc), one line" \
        '[ $rc = 2 ] && [ $(printf "%s\n" "$msg" | wc -l) = 1 ] && printf "%s" "$msg" | grep -q "must be b2b, item or layer"'
done
# REPLAY_STEP_CLOCK=1: the replays with --step-clock (sm_mhz_step), in the mode asked for, logged;
# by default none has it; anything but 0 or 1 refused in one line (the item-by-item files planted
# under the set's names above removed first)
rm $d/h200-llama8b-poisson.run5.steps.csv $w/env-work/r/h200-fp16-nomtp-b16k-pdr.run5.steps.csv \
   $w/env-work/s/h200-serve-poisson-p600-s64-b2048.steps.csv
REPLAY_STEP_CLOCK=1 bash calib/device_record.sh "$w" "$o" "$t/bin" lib-runs:llama8b:7 env-ref:7 env-serve:7 > "$t/log9" 2>&1
rc=$?
check "REPLAY_STEP_CLOCK=1: rc 0 (got $rc), every replay back to back with --step-clock, the mode logged" \
    '[ $rc = 0 ] && head -1 $d/h200-llama8b-poisson.run7.steps.csv | grep -q "gpu_span_s,sm_mhz_step" &&
     head -1 $w/env-work/r/h200-fp16-nomtp-b16k-pdr.run7.steps.csv | grep -q "gpu_span_s,sm_mhz_step" &&
     head -1 $w/env-work/s/h200-serve-poisson-p600-s64-b2048.run7.steps.csv | grep -q "gpu_span_s,sm_mhz_step" &&
     grep -q "lib-runs:llama8b:7 on GPU-aaaa (b2b, step clock)" $w/steps.log &&
     ! grep -q sm_mhz_step $d/h200-llama8b-poisson.run6.item.csv $d/h200-llama8b-wide-s64-b4096.run6.steps.csv'
REPLAY_MODE=item REPLAY_STEP_CLOCK=1 bash calib/device_record.sh "$w" "$o" "$t/bin" lib-runs:llama8b:8 > "$t/log10" 2>&1
rc=$?
check "REPLAY_STEP_CLOCK=1 item by item: rc 0 (got $rc), --step-clock without --back-to-back" \
    '[ $rc = 0 ] && [ "$(head -1 $d/h200-llama8b-poisson.run8.item.csv)" = step,type,sm_mhz_step ]'
for sc in calib/device_record.sh calib/replay_lib.sh calib/gpu_session.sh calib/replay_h200.sh calib/replay_serve.sh; do
    msg=$(REPLAY_STEP_CLOCK=yes bash $sc "$w" "$o" "$t/bin" lib-runs:llama8b:1 2>&1); rc=$?
    check "$sc: REPLAY_STEP_CLOCK=yes refused, exit 2 (got $rc), one line" \
        '[ $rc = 2 ] && [ $(printf "%s\n" "$msg" | wc -l) = 1 ] && printf "%s" "$msg" | grep -q "REPLAY_STEP_CLOCK must be 0 or 1"'
done
# order-study:M: order_study on the card, its output appended under a line naming the card; the
# step's line carries no replay mode; a missing binary fails the step (exit 1), named in the log
ORDER_STEPS=7 bash calib/device_record.sh "$w" "$o" "$t/bin" order-study:qwen3-14b order-study:qwen3-14b > "$t/log11" 2>&1
rc=$?
check "order-study:qwen3-14b twice: rc 0 (got $rc), two studies appended, each under its card's line" \
    '[ $rc = 0 ] && [ $(grep -c "^== order_study 7 qwen3-14b on GPU-aaaa, " $w/order-study-qwen3-14b.txt) = 2 ] &&
     [ $(grep -c "^fake order_study steps=7 model=qwen3-14b$" $w/order-study-qwen3-14b.txt) = 2 ] &&
     grep -q "^== order-study:qwen3-14b on GPU-aaaa from " $w/steps.log && ! grep -q "order-study:qwen3-14b on GPU-aaaa (" $w/steps.log &&
     tar tzf $o/record.tgz | grep -q "order-study-qwen3-14b.txt"'
msg=$(ORDER_STEPS=x bash calib/device_record.sh "$w" "$o" "$t/bin" order-study:llama8b 2>&1); rc=$?
check "ORDER_STEPS=x refused: exit 2 (got $rc), one line" \
    '[ $rc = 2 ] && [ "$msg" = "device_record.sh: ORDER_STEPS must be 1..9999, not '"'"'x'"'"'" ]'
mkdir -p $t/nobin
bash calib/device_record.sh "$w" "$o" "$t/nobin" order-study:llama8b > "$t/log12" 2>&1
rc=$?
check "order-study without order_study in BINDIR: exit 1 (got $rc), the step failed and the reason kept" \
    '[ $rc = 1 ] && grep -A1 "^== order-study:llama8b" $w/steps.log | tail -1 | grep -q "^   rc=127 in" &&
     grep -q "order_study" $w/order-study-llama8b.txt'
for bad in lib-runs:llama8b lib-runs:llama8b:x lib-calib:gpt2 nosuch order-study:qwen3-30b-a3b order-study:; do
    bash calib/device_record.sh "$w" "$o" "$t/bin" "$bad" > "$t/log5" 2>&1
    rc=$?
    check "bad step '$bad': exit 2 (got $rc)" '[ $rc = 2 ]'
done
[ $fail = 0 ] || { echo "-- logs"; cat "$t"/log*; }
exit $fail
