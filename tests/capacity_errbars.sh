#!/bin/sh
# capacity_errbars: pacesim capacity --error-bars P -- P refused outside 0 < P <= 50 as run
# refuses it (one line, exit 2); with every step 10% dearer a configuration sustains less and
# 10% cheaper more (rate_per_s_lo <= rate_per_s <= rate_per_s_hi, each search ok); the point
# search is the one without the flag (the CSV less its five error-bar columns is the same
# bytes); the same bytes for -j 1 and -j 3; --rate's pick said to hold or to change at +P%;
# --points + merge + --frontier print the in-process table.  The searches' rates against a
# closed form: tests/check_capacity.c md1_scaled.  Run from the repository root.
set -u
PACESIM=${PACESIM:-./bin/pacesim}
S=tests/data/capacity/small.yaml
SRCH="--slo ttft_p99=1 --search engine.max_num_seqs=8,16 --no-progress"
tmp=$(mktemp -d /tmp/capacity_errbars.XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
ok() { echo "  ok   $1"; }
bad() { echo "  FAIL $1"; fail=1; }

for p in 0 -1 50.01 51 x '' nan inf 3x 1e999 '%'; do
  $PACESIM capacity $S $SRCH --error-bars "$p" > "$tmp/out" 2> "$tmp/err"; rc=$?
  if [ $rc = 2 ] && [ "$(wc -l < "$tmp/err")" = 1 ] && grep -q '^pacesim capacity: --error-bars: .*expected a percentage P, 0 < P <= 50' "$tmp/err" \
     && [ ! -s "$tmp/out" ]; then
    ok "--error-bars '$p': exit 2, one line"
  else
    bad "--error-bars '$p': exit $rc, stderr: $(head -c 200 "$tmp/err")"
  fi
done
$PACESIM capacity $S $SRCH --error-bars > /dev/null 2> "$tmp/err"; rc=$?
[ $rc = 2 ] && [ "$(wc -l < "$tmp/err")" = 1 ] && ok "--error-bars without P: exit 2, one line" || bad "--error-bars without P: exit $rc"

# the search with and without the flag; -j 1 and -j 3
$PACESIM capacity $S $SRCH --csv "$tmp/plain.csv" --quiet || bad "without --error-bars: exit $?"
$PACESIM capacity $S $SRCH --error-bars 10 --rate 20 --probes -j 1 --csv "$tmp/j1.csv" > "$tmp/j1.txt" 2> "$tmp/j1.err" \
  || bad "--error-bars 10 -j 1: exit $?"
$PACESIM capacity $S $SRCH --error-bars 10% --rate 20 --probes -j 3 --csv "$tmp/j3.csv" > "$tmp/j3.txt" 2> "$tmp/j3.err" \
  || bad "--error-bars 10% -j 3: exit $?"
cmp -s "$tmp/j1.csv" "$tmp/j3.csv" && cmp -s "$tmp/j1.txt" "$tmp/j3.txt" && cmp -s "$tmp/j1.err" "$tmp/j3.err" \
  && ok "-j 1 and -j 3 (and 10 / 10%): the same CSV, table and --probes bytes" || bad "-j 1 and -j 3 differ"
[ "$(grep -c 'with every step at x1.1 its price: [0-9]* steps in all' "$tmp/j1.err")" = 2 ] \
  && [ "$(grep -c 'with every step at x0.9 its price: [0-9]* steps in all' "$tmp/j1.err")" = 2 ] \
  && ok "--probes: each configuration's three searches" || bad "--probes: $(head -c 300 "$tmp/j1.err")"

# the CSV's columns by name; every row: the +10% rate < the point's < the -10% rate, each search ok
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; n = 0; next }
  { n++; lo = $c["rate_per_s_lo"]; r = $c["rate_per_s"]; hi = $c["rate_per_s_hi"]
    if (!(c["error_bars_pct"] && $c["error_bars_pct"] == 10 && $c["status"] == "ok" && $c["status_lo"] == "ok" \
          && $c["status_hi"] == "ok" && lo + 0 > 0 && lo + 0 < r + 0 && r + 0 < hi + 0)) { print "row " NR ": " $0; bad = 1 } }
  END { exit bad || n != 2 }' "$tmp/j1.csv" > "$tmp/awk" \
  && ok "rate_per_s_lo < rate_per_s < rate_per_s_hi on every row (P 10, each search ok)" || bad "ranges: $(cat "$tmp/awk")"
tail -n 1 "$tmp/j1.csv" | awk -F, '{ print $NF }' | grep -qx '1' && ok "frontier still the CSV's last column" || bad "frontier"

# the point search is the flag's absence: the CSV less the five error-bar columns
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "error_bars_pct") e = i }
  { s = ""; for (i = 1; i <= NF; i++) if (i < e || i > e + 4) s = s (s == "" && i == 1 ? "" : ",") $i; print s }' \
  "$tmp/j1.csv" > "$tmp/cut.csv"
cmp -s "$tmp/cut.csv" "$tmp/plain.csv" && ok "less its error-bar columns, the CSV is the one without the flag" \
  || bad "the point search moved with --error-bars: $(diff "$tmp/cut.csv" "$tmp/plain.csv" | head -5)"
$PACESIM capacity $S $SRCH --quiet --csv "$tmp/plain2.csv" && ! grep -q 'rate_per_s_lo' "$tmp/plain2.csv" \
  && ok "without the flag, no error-bar columns" || bad "error-bar columns without the flag"

# the table: value [low, high]; the pick at +P%
grep -q '\[low, high\]' "$tmp/j1.txt" && ok "the table has [low, high]" || bad "no [low, high] column"
# col CSV POINT NAME: a field of a point's row, by the column's name (%.4g, as the table prints it)
col() { awk -F, -v p="$2" -v n="$3" 'NR == 1 { for (i = 1; i <= NF; i++) k[$i] = i; next } $1 == p { printf "%.4g", $k[n] }' "$1"; }
lo=$(col "$tmp/j1.csv" 1 rate_per_s_lo) r=$(col "$tmp/j1.csv" 1 rate_per_s) hi=$(col "$tmp/j1.csv" 1 rate_per_s_hi)
grep -q "^     1 .* $r  *\[$lo, $hi\] " "$tmp/j1.txt" && ok "point 1's row: $r [$lo, $hi]" || bad "point 1's row: $(grep '^     1 ' "$tmp/j1.txt")"
grep -q 'the pick holds' "$tmp/j1.txt" && ok "--rate 20 (under both rates of point 1): the pick holds" \
  || bad "--rate 20: $(grep 'pick' "$tmp/j1.txt")"
mid=$(awk -v a="$lo" -v b="$r" 'BEGIN { printf "%.6g", (a + b) / 2 }')   # carried at x1, not at x1.1
$PACESIM capacity $S $SRCH --error-bars 10 --rate "$mid" > "$tmp/mid.txt" || bad "--rate $mid: exit $?"
grep -q "^cheapest carrying $mid req/s: point 1 " "$tmp/mid.txt" && grep -q '^at +10% step cost .*: the pick changes: no single' "$tmp/mid.txt" \
  && ok "--rate $mid (between point 1's +10% rate and its rate): the pick changes to copies" \
  || bad "--rate $mid: $(grep 'carrying\|pick' "$tmp/mid.txt")"
grep -q '^most req/s per GPU: point 1 (engine.max_num_seqs=16), .*; at +10% step cost: the same, ' "$tmp/mid.txt" \
  && ok "most req/s per GPU, and at +10%" || bad "most req/s per GPU: $(grep 'most' "$tmp/mid.txt")"

# points + merge + --frontier: the same table and CSV as one process
$PACESIM capacity $S $SRCH --error-bars 10 --points -o "$tmp/pts" > "$tmp/cmds" || bad "--points: exit $?"
[ "$(grep -c -- ' --error-bars 10 ' "$tmp/cmds")" = 2 ] && ok "--points: every command carries --error-bars 10" \
  || bad "--points: $(cat "$tmp/cmds")"
mkdir -p "$tmp/pts" && sh "$tmp/cmds" 2> /dev/null && $PACESIM merge "$tmp"/pts/point-*.csv > "$tmp/merged.csv" \
  || bad "points' commands / merge failed"
$PACESIM capacity --frontier "$tmp/merged.csv" --slo ttft_p99=1 --rate 20 --csv "$tmp/front.csv" > "$tmp/front.txt" \
  || bad "--frontier: exit $?"
cmp -s "$tmp/front.csv" "$tmp/j1.csv" && cmp -s "$tmp/front.txt" "$tmp/j1.txt" \
  && ok "points + merge + --frontier: the in-process CSV and table" || bad "--frontier's output differs"
$PACESIM capacity --frontier "$tmp/merged.csv" --slo ttft_p99=1 --error-bars 10 > "$tmp/out" 2> "$tmp/err"; rc=$?
[ $rc = 2 ] && [ "$(wc -l < "$tmp/err")" = 1 ] && [ ! -s "$tmp/out" ] && ok "--frontier refuses --error-bars" \
  || bad "--frontier --error-bars: exit $rc"
sed '1s/,status_hi,/,status_hj,/' "$tmp/merged.csv" > "$tmp/part.csv"
$PACESIM capacity --frontier "$tmp/part.csv" --slo ttft_p99=1 > "$tmp/out" 2> "$tmp/err"; rc=$?
[ $rc = 2 ] && grep -q 'come all or none; no status_hi' "$tmp/err" && ok "a CSV with some error-bar columns refused" \
  || bad "partial error-bar columns: exit $rc, $(cat "$tmp/err")"
sed '2s/,10,\([0-9.]*\),\([0-9.]*\),ok,ok,/,10,\1,\2,fine,ok,/' "$tmp/merged.csv" > "$tmp/badst.csv"
$PACESIM capacity --frontier "$tmp/badst.csv" --slo ttft_p99=1 > "$tmp/out" 2> "$tmp/err"; rc=$?
[ $rc = 2 ] && grep -q ':2:[0-9]*: status_lo: "fine" is not a status' "$tmp/err" && ok "a bad status_lo refused where it is" \
  || bad "bad status_lo: exit $rc, $(cat "$tmp/err")"

# priced by a profile: the scaled searches' models warn as the point search's do, once (stderr
# as without the flag, which has no warning at all here)
H=scenarios/capacity/h200-hd128.yaml
$PACESIM capacity $H --slo ttft_p99=1 --set workload.poisson.count=1300 --quiet --no-progress 2> "$tmp/w0" \
  && $PACESIM capacity $H --slo ttft_p99=1 --set workload.poisson.count=1300 --error-bars 3 --quiet --no-progress 2> "$tmp/w1" \
  && cmp -s "$tmp/w0" "$tmp/w1" && ok "a profile's search: stderr as without the flag" \
  || bad "a profile's search: stderr differs with --error-bars: $(head -c 300 "$tmp/w1")"

[ $fail = 0 ] && echo "capacity_errbars: all passed"
exit $fail
