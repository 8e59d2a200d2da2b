#!/usr/bin/env bash
# profile_compare.sh: `pacesim profile A.yaml --compare B.yaml` on the two shipped profiles.
#   - each against itself: exit 0, "no difference", no line marked as differing
#   - H200 against V100: the metadata, the laws only one of them has, coefficients that differ;
#     the items of the reference experiment priced one by one sum to the steps each model prices
#     whole; priced by the V100 profile (its own) to the step times `pacesim run --steps` gives
#     it; swapping A and B swaps the two prices
#   - two calibs of one card (tests/data/calib-repeat/): the clock's fall and recovery, the fall
#     NVML's where the profile has no tau_up_runs_s
#   - calib's GEMM probes across shapes: per shape A, B and B / A, a shape in one only named
#   - bad input: exit 2 and one line on stderr
set -u
cd "$(dirname "$0")/.."
P=${PACESIM:-bin/pacesim}
H=calib/profiles/h200.yaml V=calib/profiles/v100-pcie-32gb-tp2.yaml
pass=0 fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ok() { if eval "$2"; then pass=$((pass + 1)); else echo "FAIL: $1"; fail=$((fail + 1)); fi; }

for p in $H $V; do
    "$P" profile $p --compare $p > "$tmp/self" 2> "$tmp/err"; rc=$?
    ok "$p against itself: exit 0, nothing on stderr" '[ $rc = 0 ] && [ ! -s "$tmp/err" ]'
    ok "$p against itself: no difference" \
       '[ "$(tail -1 "$tmp/self")" = "no difference: metadata, laws, item prices and envelope agree" ]'
    ok "$p against itself: no line marked" '! grep -q "  \*" "$tmp/self"'
    ok "$p against itself: every law the same" \
       '[ "$(grep -c "same coefficients" "$tmp/self")" = "$(grep -c "^   [a-z].* points [0-9]* / " "$tmp/self")" ]'
    ok "$p against itself: items priced alike" 'grep -q "^   0 of [1-9][0-9]* laws. items priced otherwise" "$tmp/self"'
done

"$P" profile $H --compare $V > "$tmp/hv" 2> "$tmp/err"; rc=$?
ok "H200 vs V100: exit 0" '[ $rc = 0 ] && [ ! -s "$tmp/err" ]'
ok "H200 vs V100: SMs differ" 'grep -q "^   SMs  *132  *80  *\*$" "$tmp/hv"'
for l in attn.prefill_lowsmem.fp8 attn.varlen.fp16 gemm.moe.fp16; do
    ok "H200 vs V100: $l only in A" 'grep -q "^   $l  *only in A" "$tmp/hv"'
done
for l in attn.prefill_splitd.fp16 allreduce; do
    ok "H200 vs V100: $l only in B" 'grep -q "^   $l  *only in B" "$tmp/hv"'
done
ok "H200 vs V100: gemm's coefficients differ" 'grep -q "^   gemm  *points 318 / 0, .*: coefficients differ" "$tmp/hv"'
ok "H200 vs V100: summary" 'tail -1 "$tmp/hv" | grep -q "^differences: metadata 15, laws 18 (3 only in A, 2 only in B)"'
ok "H200 vs V100: the H200 profile's all-reduces over its GPU's link, said so" \
   'grep -q "^   A: no all-reduce law: its all-reduces priced over nvlink4 by the link.s datasheet" "$tmp/hv"'
ok "H200 vs V100: the clock's time constants, the V100 profile has none" \
   'grep -q "^   sustained: fall ms  *93\.7  *-  *\*$" "$tmp/hv" && grep -q "^   sustained: recovery ms  *19\.4  *-  *\*$" "$tmp/hv"'
# two calibs of one card (tests/data/calib-repeat/): the fall priced is the compute-bound GEMM's
# (tau_up_runs_s) where the profile has it, NVML's trace (tau_up_s) where not
R=tests/data/calib-repeat/h100-8a2fc2c1-llama-3.1-8b
"$P" profile $R-1.yaml --compare $R-2.yaml > "$tmp/rr" 2> "$tmp/err"; rc=$?
ok "two calibs of one card: exit 0" '[ $rc = 0 ] && [ ! -s "$tmp/err" ]'
ok "two calibs of one card: the fall from the GEMM's times, 55.4 and 105.3 ms" \
   'grep -q "^   sustained: fall ms  *55\.4  *105\.3  *\*$" "$tmp/rr"'
ok "two calibs of one card: the recovery, 35.9 and 12.3 ms" \
   'grep -q "^   sustained: recovery ms  *35\.9  *12\.3  *\*$" "$tmp/rr"'
ok "two calibs of one card: the GEMM law's sustained hot, 1.095 and 1.12" \
   'grep -A1 "^   gemm  *points" "$tmp/rr" | grep -q "^      sustained hot  *1\.095  *1\.12  *1\.023  \*$"'
# a law whose coefficients agree and whose sustained hot does not: named, and counted
awk '/name: "gemm"/{g = 1} g && /sustained: \{hot:/{sub(/hot: [0-9.e-]*/, "hot: 1.5"); g = 0} {print}' $R-1.yaml > "$tmp/hot.yaml"
"$P" profile $R-1.yaml --compare "$tmp/hot.yaml" > "$tmp/rh" 2> "$tmp/err"; rc=$?
ok "only the GEMM law's hot differs: named, its row marked, counted" \
   '[ $rc = 0 ] && grep -q "^   gemm  *points 333 / 333, fit median .*: same coefficients, other sustained hot$" "$tmp/rh" \
    && grep -q "^      sustained hot  *1\.095  *1\.5  *1\.370  \*$" "$tmp/rh" \
    && grep -q "^   1 laws in both with other coefficients or sustained hot, 0 only in A, 0 only in B$" "$tmp/rh"'
# calib's GEMMs across shapes (recorded, not priced): listed, each shape's two passes' mean in A and
# B and their ratio; a shape in one profile only named so; no difference counted
I=tests/data/replay/h100-lib-llama8b-i/profile.yaml
sed 's/\[816, 4096, 4096, \([0-9.e-]*\), [0-9.e-]*, [0-9.e-]*\]/[816, 4096, 4096, \1, 1.25, 1.3]/; s/\[1, 6144, 4096, /[1, 6144, 4097, /' $I > "$tmp/gp.yaml"
"$P" profile $I --compare "$tmp/gp.yaml" > "$tmp/rg" 2> "$tmp/err"; rc=$?
ok "GEMM probes: listed, a changed hot's ratio, a shape in one only" \
   '[ $rc = 0 ] && grep -q "^calib.s GEMMs after the heater over after the light load (recorded, not priced)" "$tmp/rg" \
    && grep -q "^   gemm 816 x 4096 x 4096  *1\.181  *1\.275  *1\.079$" "$tmp/rg" \
    && grep -q "^   gemm 512 x 128256 x 4096  *1\.092  *1\.092  *1\.000$" "$tmp/rg" \
    && grep -q "^   gemm 1 x 6144 x 4096  *1\.056  *-  (only in A)$" "$tmp/rg" \
    && grep -q "^   gemm 1 x 6144 x 4097  *-  *1\.056  (only in B)$" "$tmp/rg" \
    && tail -1 "$tmp/rg" | grep -q "^no difference: "'
ok "GEMM probes: none in either profile, no section" '! grep -q "^calib.s GEMMs" "$tmp/rr"'
sed 's/tau_up_runs_s: [0-9.e-]*, //' $R-1.yaml > "$tmp/nvml.yaml"
"$P" profile "$tmp/nvml.yaml" --compare $R-1.yaml > "$tmp/rn" 2> "$tmp/err"
ok "without tau_up_runs_s: NVML's fall (105.0 ms) against the GEMM's" \
   'grep -q "^   sustained: fall ms  *105\.0  *55\.4  *\*$" "$tmp/rn"'
# the items priced one by one sum to the steps each model prices whole
# (to 1e-5: the two sums add the same prices in another order)
ok "H200 vs V100: the items sum to the steps priced whole, for A and for B" \
   'awk "\$1 == \"all\" && \$2 == \"items\" { a = \$3; b = \$4 }
         \$2 == \"steps\" && \$3 == \"priced\" && \$4 == \"whole\" { wa = \$5; wb = \$6 }
         function off(x, y) { return x > y ? (x - y) / y : (y - x) / y }
         END { exit !(a > 0 && b > 0 && off(a, wa) < 1e-5 && off(b, wb) < 1e-5) }" "$tmp/hv"'
# the V100 profile is the reference experiment's own: its prices of the items are the run's step times
"$P" run scenarios/default.yaml --steps "$tmp/steps.csv" --quiet > /dev/null
run_s=$(awk -F, 'NR > 1 { s += $3 } END { printf "%.6g", s }' "$tmp/steps.csv")
b_s=$(awk '$1 == "all" && $2 == "items" { print $4 }' "$tmp/hv")
ok "H200 vs V100: B's price of all items ($b_s s) = the run's steps ($run_s s)" '[ -n "$b_s" ] && [ "$b_s" = "$run_s" ]'
"$P" profile $V --compare $H > "$tmp/vh" 2>&1
a_s=$(awk '$1 == "all" && $2 == "items" { print $3 }' "$tmp/vh")
ok "V100 vs H200: the prices swap" '[ "$a_s" = "$b_s" ]'
ok "V100 vs H200: the V100 items priced from its points" 'grep -q "^   attn.decode_xqa.fp16 .* 100%  *0%  *\*$" "$tmp/vh"'
# a profile whose model refuses a step of the reference experiment (no law for the decode
# attention it needs): its items priced by their laws, counted unpriced where it has none, the
# other's prices as against a whole profile, in each order (the comparison stopped, exit 1)
X=tests/data/bad/profiles/missing-law-xqa.yaml
for ord in "$H $X" "$X $H"; do
    set -- $ord
    "$P" profile "$1" --compare "$2" > "$tmp/x" 2> "$tmp/err"; rc=$?
    [ "$1" = "$H" ] && w=B col=3 || w=A col=4
    hx=$(awk -v c=$col '$1 == "all" && $2 == "items" { print $c }' "$tmp/x")
    ok "a profile missing a law the run needs ($w): exit 0, nothing on stderr" '[ $rc = 0 ] && [ ! -s "$tmp/err" ]'
    ok "a profile missing a law the run needs ($w): said, its items counted unpriced" \
       'grep -q "^   $w: its cost model does not take this scenario (profile has no law \"attn.decode_xqa.fp16\"" "$tmp/x" &&
        grep -q "^   attn.decode_xqa.fp16 .*(no law: A [0-9]*, B [0-9]* item runs)" "$tmp/x"'
    ok "a profile missing a law the run needs ($w): the H200's items priced as against V100 ($hx)" \
       '[ -n "$hx" ] && [ "$hx" = "$(awk "\$1 == \"all\" && \$2 == \"items\" { print \$3 }" "$tmp/hv")" ]'
done

# bad input: exit 2, one line
bad() {
    "$P" profile "$@" > /dev/null 2> "$tmp/err"; rc=$?
    ok "bad input ($*): exit 2 and one line ($(head -c 160 "$tmp/err"))" '[ $rc = 2 ] && [ "$(wc -l < "$tmp/err")" = 1 ]'
}
bad $H --compare /nonexistent.yaml
bad /nonexistent.yaml --compare $H
bad $H --compare tests/data/bad/profiles/coef-eleven.yaml
bad $H --compare
bad --compare $H
bad $H --compare $V --bogus
bad $H --compare $V --scenario /nonexistent.yaml
bad $H --compare $V --scenario tests/data/bad/profiles/coef-eleven.yaml
bad $H --scenario scenarios/default.yaml      # --scenario without --compare: it was read as two profiles (two lines)
bad $H --bogus
bad $H --compare $V --compare $H                                   # which B? (it said "needs a file")
bad $H --compare $V --scenario scenarios/default.yaml --scenario scenarios/cluster/h200-llama8b-chat.yaml   # the first was dropped
bad $H --compare $V --scenario scenarios/cluster/h200-llama8b-chat.yaml   # one engine ran a cluster's workload, unsaid
"$P" profile $H --compare $V --scenario scenarios/cluster/h200-llama8b-disagg.yaml > /dev/null 2> "$tmp/err"
ok "a cluster scenario: refused at its cluster: key" \
   'grep -q "^scenarios/cluster/h200-llama8b-disagg.yaml:[0-9]*:[0-9]*: cluster: --compare prices the steps of one engine" "$tmp/err"'
"$P" profile $H --compare $V --compare $H > /dev/null 2> "$tmp/err"
ok "--compare twice: said so" 'grep -q "profile --compare given twice" "$tmp/err"'
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
