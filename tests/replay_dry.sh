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
"$bin" replay 2>/dev/null; [ $? = 2 ] || { echo "FAIL usage exit"; fail=1; }
[ $fail = 0 ] && echo "replay_dry: 1 passed, 0 failed" || { echo "replay_dry: 0 passed, 1 failed"; exit 1; }
