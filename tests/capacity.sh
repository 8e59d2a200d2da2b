#!/bin/sh
# capacity: pacesim capacity's command line -- bad input refused in one line with exit 2
# (options, and the scenario cases of tests/data/bad/capacity/, whose first lines carry
# "# expect: FRAGMENT" and "# args: OPTIONS"); the same bytes for -j 1 and -j 3; a search
# run as separate commands (--points) and merged is the in-process CSV (its frontier column
# aside, which needs every point).  Run from the repository root.
set -u
PACESIM=${PACESIM:-./bin/pacesim}
S=tests/data/capacity/small.yaml
tmp=$(mktemp -d /tmp/capacity.XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
ok() { echo "  ok   $1"; }
bad() { echo "  FAIL $1"; fail=1; }

# refused: NAME EXPECTED-FRAGMENT ARGS...
refused() {
  name=$1 want=$2
  shift 2
  "$PACESIM" capacity "$@" > "$tmp/out" 2> "$tmp/err"
  rc=$?
  lines=$(wc -l < "$tmp/err")
  if [ $rc -ne 2 ]; then bad "$name: exit $rc, expected 2 ($(head -c 300 "$tmp/err"))"
  elif [ "$lines" -ne 1 ]; then bad "$name: $lines lines on stderr, expected 1"
  elif ! grep -qF -- "$want" "$tmp/err"; then bad "$name: message lacks \"$want\": $(cat "$tmp/err")"
  elif [ -s "$tmp/out" ]; then bad "$name: wrote to stdout"
  else ok "$name"; fi
}
refused "unknown SLO" 'unknown SLO "ttfb_p99"' $S --slo ttfb_p99=2
refused "unknown statistic" 'unknown statistic "q99"' $S --slo ttft_q99=2
refused "SLO not a number" '"2s" is not a number' $S --slo ttft_p99=2s
refused "SLO zero" '"0" is not a number of seconds > 0' $S --slo ttft_p99=0
refused "SLO twice" 'ttft_p99 is given twice' $S --slo ttft_p99=2 --slo ttft_p99=3
refused "no SLO" 'no SLO given' $S
refused "threshold without goodput" 'is a per-request threshold' $S --slo ttft=2
refused "goodput without threshold" '--goodput needs per-request thresholds' $S --slo ttft_p99=2 --goodput 0.9
refused "goodput over one" '--goodput 1.5' $S --slo ttft=2 --goodput 1.5
refused "goodput nan" '--goodput nan' $S --slo ttft=2 --goodput nan
refused "rate negative" '--rate -3' $S --slo ttft_p99=2 --rate -3
refused "tol zero" '--tol 0' $S --slo ttft_p99=2 --tol 0
refused "gpu-cost no price" '--gpu-cost h200' $S --slo ttft_p99=2 --gpu-cost h200
refused "gpu-cost bad price" '--gpu-cost h200=cheap' $S --slo ttft_p99=2 --gpu-cost h200=cheap
refused "-j zero" '-j 0' $S --slo ttft_p99=2 -j 0
refused "unknown search key" '--search engine.max_num_sequences=4: unknown key "max_num_sequences"' $S --slo ttft_p99=2 \
  --search engine.max_num_sequences=4
refused "bad search value" '--search engine.max_num_seqs=abc: expected a positive integer' $S --slo ttft_p99=2 \
  --search engine.max_num_seqs=8,abc
refused "bad search list" '--search engine.max_num_seqs: "1,,2": empty value' $S --slo ttft_p99=2 --search engine.max_num_seqs=1,,2
refused "unknown option" 'unknown option --sweep' $S --slo ttft_p99=2 --sweep engine.max_num_seqs=4
refused "two scenarios" 'one scenario at a time' $S $S --slo ttft_p99=2
refused "missing scenario" 'nope.yaml' nope.yaml --slo ttft_p99=2
refused "--frontier on a run's CSV" 'not a capacity CSV' --frontier tests/data/golden/run-all.csv
for f in tests/data/bad/capacity/*.yaml; do
  want=$(sed -n 's/^# expect: //p' "$f" | head -n 1)
  args=$(sed -n 's/^# args: //p' "$f" | head -n 1)
  # shellcheck disable=SC2086
  refused "$(basename "$f")" "$want" "$f" $args
done

# -j 1 and -j 3: the same table and CSV
SEARCH="--search engine.max_num_seqs=4,8,16 --search engine.max_num_batched_tokens=1024,4096"
ARGS="--slo ttft_p99=1 --slo tpot_p90=0.02 --gpu-cost analytic=2.5 --rate 30"
# shellcheck disable=SC2086
$PACESIM capacity $S $ARGS $SEARCH -j 1 --csv "$tmp/j1.csv" > "$tmp/j1.txt" 2> "$tmp/j1.err" || bad "-j 1 exit $?"
# shellcheck disable=SC2086
$PACESIM capacity $S $ARGS $SEARCH -j 3 --csv "$tmp/j3.csv" > "$tmp/j3.txt" 2> "$tmp/j3.err" || bad "-j 3 exit $?"
for x in csv txt err; do
  if cmp -s "$tmp/j1.$x" "$tmp/j3.$x"; then ok "-j 1 and -j 3 write the same $x"; else bad "-j 1 and -j 3 differ ($x)"; fi
done
rows=$(($(wc -l < "$tmp/j1.csv") - 1))
[ "$rows" = 6 ] && ok "6 configurations" || bad "expected 6 CSV rows, got $rows"
grep -q "^cheapest carrying 30 req/s" "$tmp/j1.txt" && ok "the cheapest configuration for --rate" || bad "no cheapest line"
grep -q "^Pareto frontier" "$tmp/j1.txt" && ok "the frontier" || bad "no frontier line"

# --points, then merge: the in-process CSV but for the frontier (the last column)
# shellcheck disable=SC2086
$PACESIM capacity $S $ARGS $SEARCH --points -o "$tmp/pts" > "$tmp/cmds" || bad "--points exit $?"
n=$(wc -l < "$tmp/cmds")
[ "$n" = 6 ] && ok "--points prints 6 commands" || bad "--points printed $n commands"
mkdir -p "$tmp/pts"
sh "$tmp/cmds" 2> /dev/null || bad "the point commands failed"
$PACESIM merge "$tmp"/pts/point-*.csv > "$tmp/merged.csv" || bad "merge exit $?"
sed 's/,[^,]*$//' "$tmp/j1.csv" > "$tmp/a.csv"
sed 's/,[^,]*$//' "$tmp/merged.csv" > "$tmp/b.csv"
if cmp -s "$tmp/a.csv" "$tmp/b.csv"; then ok "points + merge = the in-process CSV"; else bad "points + merge differ"; fi
$PACESIM capacity --frontier "$tmp/merged.csv" > "$tmp/front.csv" || bad "--frontier exit $?"
if cmp -s "$tmp/j1.csv" "$tmp/front.csv"; then ok "points + merge + --frontier = the in-process CSV, frontier too"
else bad "points + merge + --frontier differ from the in-process CSV"; fi
# the search's SLOs and --rate given: the table, frontier and cheapest line of the in-process run, byte for byte
$PACESIM capacity --frontier "$tmp/merged.csv" --slo ttft_p99=1 --slo tpot_p90=0.02 --rate 30 --csv "$tmp/front2.csv" \
  > "$tmp/front2.txt" 2> "$tmp/front2.err" || bad "--frontier with SLOs exit $?"
if cmp -s "$tmp/j1.txt" "$tmp/front2.txt" && cmp -s "$tmp/j1.csv" "$tmp/front2.csv" && [ ! -s "$tmp/front2.err" ]; then
  ok "points + merge + --frontier --slo ... print the in-process table, frontier and --rate answer, byte for byte"
else bad "points + merge + --frontier --slo ...: the table differs from the in-process one"; fi
refused "--frontier with other SLOs" 'has no slo_ttft_p90_s column' --frontier "$tmp/merged.csv" --slo ttft_p90=1 \
  --slo tpot_p90=0.02
refused "--frontier with fewer SLOs" 'has 2 slo_NAME_s columns, --slo gives 1' --frontier "$tmp/merged.csv" --slo ttft_p99=1
refused "--frontier with --search" '--frontier reads a capacity CSV' --frontier "$tmp/merged.csv" --slo ttft_p99=1 \
  --search engine.max_num_seqs=4
$PACESIM best "$tmp/merged.csv" --objective min:usd_per_hour --constraint 'rate_per_s>=8' > "$tmp/best.txt" \
  && ok "best over the merged CSV" || bad "best exit $?"

# a trace: its time scale searched, the same bytes for -j 1 and -j 2, no temporary file left
T=tests/data/capacity/small-trace.yaml
TMPDIR="$tmp" $PACESIM capacity $T --slo ttft_p99=2 --search engine.max_num_seqs=8,16 -j 1 --csv "$tmp/t1.csv" \
  > /dev/null 2>&1 || bad "trace -j 1 exit $?"
TMPDIR="$tmp" $PACESIM capacity $T --slo ttft_p99=2 --search engine.max_num_seqs=8,16 -j 2 --csv "$tmp/t2.csv" \
  > /dev/null 2>&1 || bad "trace -j 2 exit $?"
cmp -s "$tmp/t1.csv" "$tmp/t2.csv" && ok "a trace: -j 1 and -j 2 write the same CSV" || bad "a trace: -j 1 and -j 2 differ"
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
  { if ($c["status"] != "ok" || !($c["time_scale"] > 0) || $c["rate_per_s"] / $c["time_scale"] < 8.38 \
        || $c["rate_per_s"] / $c["time_scale"] > 8.40) bad = 1 }
  END { exit bad }' "$tmp/t1.csv" && ok "a trace: its rate and time scale (the trace's own rate, 1499 rows over their span: 8.39/s)" \
  || bad "a trace: rate / time_scale is not the trace's rate"
ls "$tmp"/pacesim-capacity-* > /dev/null 2>&1 && bad "a trace: temporary files left" || ok "a trace: no temporary file left"

# a cluster: more replicas behind round_robin never sustain a lower rate; GPUs = replicas x TP
C=tests/data/capacity/cluster.yaml
$PACESIM capacity $C --slo ttft_p99=1 --slo tpot_p90=0.02 --search cluster.pools.a.count=1..4 \
  --search engine.tensor_parallel_size=1,2 --csv "$tmp/cl.csv" --quiet 2> /dev/null || bad "cluster search exit $?"
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
  { n = $c["cluster.pools.a.count"]; tp = $c["engine.tensor_parallel_size"]
    if ($c["status"] != "ok" || $c["gpus"] != n * tp || $c["replicas"] != n) bad = 1
    if ((tp in last) && $c["rate_per_s"] < last[tp]) bad = 1
    last[tp] = $c["rate_per_s"] }
  END { exit bad || NR != 9 }' "$tmp/cl.csv" \
  && ok "a cluster: more replicas (round_robin) never lower the rate; GPUs = replicas x TP" \
  || bad "a cluster: a rate fell with more replicas, or GPUs are not replicas x TP"

[ $fail = 0 ] && echo "capacity: all passed" || echo "capacity: FAILED"
exit $fail
