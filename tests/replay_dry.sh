#!/usr/bin/env bash
# replay_dry.sh: bin/pacesim-gpu's plumbing without a GPU (PACESIM_REPLAY_DRY=1 prices the
# "measured" run by the profile too): both runs must agree exactly on every window.
set -u
bin=bin/pacesim-gpu
[ -x "$bin" ] || { echo "replay_dry: $bin not built (no nvcc): skipped"; exit 0; }
fail=0
for f in scenarios/h200-fp16-nomtp-b16k-baseline.yaml scenarios/h200-fp8-mtp4-b16k-pdr.yaml; do
    out=$(PACESIM_REPLAY_DRY=1 "$bin" replay "$f" --set workload.requests.B.output_tokens=8) || { echo "FAIL $f: rc=$?"; fail=1; continue; }
    bad=$(printf '%s\n' "$out" | awk '/^   (a_tok_s|b_prefill_s|mixed_steps) /{ if ($2 != $3 || $2 == 0) print }')
    if [ -n "$bad" ] || ! printf '%s\n' "$out" | grep -q 'mixed_steps'; then echo "FAIL $f:"; printf '%s\n' "$out"; fail=1
    else echo "  ok   $f: windows agree ($(printf '%s\n' "$out" | awk '/^   b_prefill_s /{print $2}') s)"; fi
done
# the library's replay targets (upstream scheduler, varlen attention; a dense and an MoE model)
# with a profile that has the varlen and MoE laws: every window and the step count agree
for f in scenarios/lib/h200-llama8b-poisson.yaml scenarios/lib/h200-qwen3-30b-a3b-poisson.yaml; do
    out=$(PACESIM_REPLAY_DRY=1 "$bin" replay "$f" --set profile=../../tests/data/profiles/h200-varlen-moe.yaml 2>/dev/null) \
        || { echo "FAIL $f: rc=$?"; fail=1; continue; }
    bad=$(printf '%s\n' "$out" | awk '/^   (ttft_p50|tpot_p50|itl_p50|throughput) /{ n++; if ($2 != $3 || $2 == 0) print }
                                       /^   steps /{ s = ($2 == $4 && $2 > 0) } END { if (n != 4 || !s) print "windows", n, "steps", s }')
    if [ -n "$bad" ]; then echo "FAIL $f:"; printf '%s\n' "$out"; fail=1
    else echo "  ok   $f: windows agree ($(printf '%s\n' "$out" | awk '/^   steps /{print $2}') steps)"; fi
done
"$bin" replay 2>/dev/null; [ $? = 2 ] || { echo "FAIL usage exit"; fail=1; }
# --back-to-back (the step's items queued on one stream; the GPU path itself needs a GPU): the
# dry run is unchanged by it, and the flag given twice is refused in one line, exit 2
f=scenarios/h200-fp8-mtp4-b16k-pdr.yaml
a=$(PACESIM_REPLAY_DRY=1 "$bin" replay "$f" --set workload.requests.B.output_tokens=8 --back-to-back) \
    && b=$(PACESIM_REPLAY_DRY=1 "$bin" replay "$f" --set workload.requests.B.output_tokens=8) && [ "$a" = "$b" ] \
    && echo "  ok   --back-to-back: the dry run unchanged" || { echo "FAIL --back-to-back dry run"; fail=1; }
msg=$("$bin" replay "$f" --back-to-back --back-to-back 2>&1); rc=$?
if [ $rc = 2 ] && [ "$(printf '%s\n' "$msg" | wc -l)" = 1 ]; then echo "  ok   --back-to-back twice: exit 2, one line"
else echo "FAIL --back-to-back twice: rc $rc: $msg"; fail=1; fi
"$bin" 2>&1 | grep -q -- "--back-to-back" || { echo "FAIL usage names --back-to-back"; fail=1; }
# --step-clock (the step's SM clock stamped on the GPU; the stamps themselves need a GPU): the dry
# run is unchanged by it in either mode, twice is refused in one line, the usage names it
a=$(PACESIM_REPLAY_DRY=1 "$bin" replay "$f" --set workload.requests.B.output_tokens=8 --step-clock) \
    && c=$(PACESIM_REPLAY_DRY=1 "$bin" replay "$f" --set workload.requests.B.output_tokens=8 --back-to-back --step-clock) \
    && [ "$a" = "$b" ] && [ "$c" = "$b" ] && echo "  ok   --step-clock: the dry run unchanged" || { echo "FAIL --step-clock dry run"; fail=1; }
msg=$("$bin" replay "$f" --step-clock --back-to-back --step-clock 2>&1); rc=$?
if [ $rc = 2 ] && [ "$msg" = "pacesim-gpu: --step-clock given twice" ]; then echo "  ok   --step-clock twice: exit 2, one line"
else echo "FAIL --step-clock twice: rc $rc: $msg"; fail=1; fi
"$bin" 2>&1 | grep -q -- "--step-clock " || { echo "FAIL usage names --step-clock"; fail=1; }
# `pacesim replay FILE --gpu` is pacesim-gpu's replay; without the GPU build, one clear line
a=$(PACESIM_REPLAY_DRY=1 bin/pacesim replay scenarios/h200-fp8-mtp4-b16k-pdr.yaml --gpu --set workload.requests.B.output_tokens=8 | grep '^   b_prefill_s')
b=$(PACESIM_REPLAY_DRY=1 "$bin" replay scenarios/h200-fp8-mtp4-b16k-pdr.yaml --set workload.requests.B.output_tokens=8 | grep '^   b_prefill_s')
if [ -n "$a" ] && [ "$a" = "$b" ]; then echo "  ok   pacesim replay --gpu runs pacesim-gpu replay"; else echo "FAIL pacesim replay: '$a' vs '$b'"; fail=1; fi
t=$(mktemp -d); cp bin/pacesim "$t/"
msg=$("$t/pacesim" replay scenarios/h200-fp8-mtp4-b16k-pdr.yaml --gpu 2>&1); rc=$?
rm -rf "$t"
if [ $rc = 2 ] && printf '%s' "$msg" | grep -q "needs the GPU build"; then echo "  ok   without pacesim-gpu: exit 2, one line"
else echo "FAIL without pacesim-gpu: rc $rc: $msg"; fail=1; fi
# --steps or --items naming the scenario (or each other): refused before anything runs (it was overwritten)
t=$(mktemp -d); cp scenarios/h200-fp16-nomtp-b16k-baseline.yaml "$t/s.yaml"; sed -i "s|\.\./|$PWD/|g" "$t/s.yaml"; cp "$t/s.yaml" "$t/keep"
msg=$(PACESIM_REPLAY_DRY=1 "$bin" replay "$t/s.yaml" --steps "$t/./s.yaml" 2>&1); rc=$?
if [ $rc = 2 ] && printf '%s' "$msg" | grep -q "that is the scenario" && cmp -s "$t/s.yaml" "$t/keep"; then
    echo "  ok   --steps naming the scenario: exit 2, the scenario untouched"
else echo "FAIL --steps naming the scenario: rc $rc: $msg"; fail=1; fi
msg=$(PACESIM_REPLAY_DRY=1 "$bin" replay "$t/s.yaml" --steps "$t/o.csv" --items "$t/o.csv" 2>&1); rc=$?
if [ $rc = 2 ] && printf '%s' "$msg" | grep -q "that is --steps' file"; then echo "  ok   --items naming --steps' file: exit 2"
else echo "FAIL --items naming --steps' file: rc $rc: $msg"; fail=1; fi
# --steps or --items naming a file the scenario reads (its profile): refused, the profile untouched
pf=$(awk '/^profile:/{ print $2 }' "$t/s.yaml"); case $pf in /*) ;; *) pf=$t/$pf ;; esac
cp "$pf" "$t/prof.yaml"; cp "$pf" "$t/prof.keep"
for o in --steps --items; do
    msg=$(PACESIM_REPLAY_DRY=1 "$bin" replay "$t/s.yaml" --set profile="$t/prof.yaml" $o "$t/prof.yaml" 2>&1); rc=$?
    if [ $rc = 2 ] && [ "$(printf '%s\n' "$msg" | wc -l)" = 1 ] && printf '%s' "$msg" | grep -q "that is an input of the run" &&
       cmp -s "$t/prof.yaml" "$t/prof.keep"; then echo "  ok   $o naming the profile: exit 2, the profile untouched"
    else echo "FAIL $o naming the profile: rc $rc: $msg"; fail=1; fi
done
# a cluster: one engine's steps run on the GPU, the other replicas' would be the profile's: refused
for c in "scenarios/capacity/h200-llama8b-split.yaml|h200-llama8b-split.yaml:[0-9]*:[0-9]*: cluster: a replay runs" \
         "$t/s.yaml --set cluster.pools.main.count=2|--set cluster: a replay runs"; do
    msg=$(PACESIM_REPLAY_DRY=1 "$bin" replay ${c%%|*} 2>&1); rc=$?
    if [ $rc = 2 ] && [ "$(printf '%s\n' "$msg" | wc -l)" = 1 ] && printf '%s' "$msg" | grep -q -- "${c#*|}"; then
        echo "  ok   a cluster (${c%%|*}): exit 2, one line"
    else echo "FAIL a cluster (${c%%|*}): rc $rc: $msg"; fail=1; fi
done
# --items or --steps naming a FIFO no process reads: refused in one line, exit 2, not waited on;
# --items - is refused (stdout carries the report)
mkfifo "$t/fifo"
for o in --items --steps; do
    msg=$(PACESIM_REPLAY_DRY=1 timeout 60 "$bin" replay "$t/s.yaml" $o "$t/fifo" 2>&1); rc=$?
    if [ $rc = 2 ] && [ "$(printf '%s\n' "$msg" | wc -l)" = 1 ] && printf '%s' "$msg" | grep -q "fifo: cannot write: a FIFO that no process reads"; then
        echo "  ok   $o to a FIFO without a reader: exit 2, one line"
    else echo "FAIL $o to a FIFO without a reader: rc $rc: $msg"; fail=1; fi
done
msg=$(PACESIM_REPLAY_DRY=1 "$bin" replay "$t/s.yaml" --items - 2>&1); rc=$?
if [ $rc = 2 ] && printf '%s' "$msg" | grep -q "stdout carries the report"; then echo "  ok   --items -: exit 2"
else echo "FAIL --items -: rc $rc: $msg"; fail=1; fi
# an option of one value given twice, a second scenario, one key set twice: refused in one line,
# exit 2 (the first was dropped unsaid)
for c in "--steps $t/a.csv --steps $t/b.csv|--steps given twice" "--items $t/a.csv --items $t/b.csv|--items given twice" \
         "$t/s.yaml|one scenario a replay" "--set engine.max_num_seqs=4 --set engine.max_num_seqs=8|engine.max_num_seqs is set twice"; do
    msg=$(PACESIM_REPLAY_DRY=1 "$bin" replay "$t/s.yaml" ${c%%|*} 2>&1); rc=$?
    if [ $rc = 2 ] && [ "$(printf '%s\n' "$msg" | wc -l)" = 1 ] && printf '%s' "$msg" | grep -q -- "${c#*|}"; then
        echo "  ok   ${c#*|}: exit 2, one line"
    else echo "FAIL ${c#*|}: rc $rc: $msg"; fail=1; fi
done
rm -rf "$t"
[ $fail = 0 ] && echo "replay_dry: 1 passed, 0 failed" || { echo "replay_dry: 0 passed, 1 failed"; exit 1; }
