#!/usr/bin/env bash
# sm70_check.sh: kernels/check_sm70.sh, the rule make kernels-sm70 and make gpu-sm70 apply to every
# kernel assembled for sm_70, on synthetic ptxas reports (no nvcc needed): a kernel without spills
# passes; a spill kernels/sm70_spills.txt-style KNOWN does not list fails, one within its allowance
# passes, one beyond it fails; static + dynamic shared memory over 96 KB in a launched kernel fails;
# a tile-engine kernel sm_70 does not launch may spill.
set -u
cd "$(dirname "$0")/.."
pass=0 fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ok() { if eval "$2"; then pass=$((pass + 1)); else echo "FAIL: $1"; fail=$((fail + 1)); fi; }
# report NAME SPILL REGS SMEM: one kernel as ptxas -v reports it for sm_70
report() {
    printf "ptxas info    : Compiling entry function '%s' for 'sm_70'\n" "$1"
    printf "ptxas info    : Function properties for %s\n" "$1"
    printf "    %d bytes stack frame, %d bytes spill stores, %d bytes spill loads\n" "$2" "$2" "$2"
    printf "ptxas info    : Used %d registers, used 1 barriers, %d bytes smem, 488 bytes cmem[0]\n" "$3" "$4"
}
A=_Z16attn_wmma_kernelILi16ELi128ELi1ELi0ELb0ELb0ELi2ELi256EEv10AttnParams
echo "attn_wmma_kernelILi16ELi128ELi1ELi0ELb0ELb0ELi2ELi256E 90112 prefill-lowsmem D256" > "$tmp/launches"
printf '# known\nattn_wmma_kernelILi16ELi128ELi1ELi0ELb0ELb0ELi2ELi256E 24\n' > "$tmp/known"
run() { sh kernels/check_sm70.sh "$tmp/launches" "$tmp/known" "$tmp/log" > "$tmp/out" 2>&1; }

report _Z8gdn_convPfi 0 40 16 > "$tmp/log"; run; rc=$?
ok "no spill: passes" '[ $rc = 0 ] && grep -q "none spills beyond the recorded" "$tmp/out"'
report _Z8gdn_convPfi 8 40 16 > "$tmp/log"; run; rc=$?
ok "an unlisted kernel spilling: fails, named" '[ $rc = 1 ] && grep -q "gdn_conv.* SPILLS" "$tmp/out"'
report $A 24 128 0 > "$tmp/log"; run; rc=$?
ok "a listed spill within its allowance: passes" '[ $rc = 0 ] && grep -q "spills (known" "$tmp/out"'
report $A 32 128 0 > "$tmp/log"; run; rc=$?
ok "a listed spill beyond its allowance: fails" '[ $rc = 1 ] && grep -q "SPILLS" "$tmp/out"'
report $A 0 128 8192 > "$tmp/log"; run; rc=$?
ok "90112 + 8192 bytes: exactly 96 KB, fits" '[ $rc = 0 ] && ! grep -q "OVER 96 KB" "$tmp/out"'
report $A 0 128 8320 > "$tmp/log"; run; rc=$?
ok "90112 dynamic + 8320 static bytes of shared memory: over 96 KB, fails" '[ $rc = 1 ] && grep -q "OVER 96 KB" "$tmp/out"'
report _Z16attn_wmma_kernelILi32ELi64ELi0ELi0ELb0ELb0ELi2ELi256EEv10AttnParams 76 128 0 > "$tmp/log"; run; rc=$?
ok "a tile-engine kernel sm_70 does not launch may spill" '[ $rc = 0 ] && grep -q "^-  *128" "$tmp/out"'
: > "$tmp/log"; run; rc=$?
ok "no report read: fails" '[ $rc = 1 ]'
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
