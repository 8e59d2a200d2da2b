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
  elif grep -qF "(null)" "$tmp/err"; then bad "$name: a missing argument printed: $(cat "$tmp/err")"
  elif [ -s "$tmp/out" ]; then bad "$name: wrote to stdout"
  else ok "$name"; fi
}
refused "unknown SLO" 'unknown SLO "ttfb_p99"' $S --slo ttfb_p99=2
refused "unknown statistic" 'unknown statistic "q99"' $S --slo ttft_q99=2
refused "SLO not a number" '"2s" is not a number' $S --slo ttft_p99=2s
refused "SLO zero" '"0" is not a number of seconds > 0' $S --slo ttft_p99=0
refused "SLO twice" 'ttft_p99 is given twice' $S --slo ttft_p99=2 --slo ttft_p99=3
refused "SLO twice in two spellings" 'ttft_p99.0 is ttft_p99, given already' $S --slo ttft_p99=2 --slo ttft_p99.0=3
refused "no SLO" 'no SLO given' $S
refused "the rate searched" '--search workload.poisson.rate_per_s: the request rate is what capacity finds' $S \
  --slo ttft_p99=2 --search workload.poisson.rate_per_s=1,2
refused "threshold without goodput" 'is a per-request threshold: give --goodput SHARE (the share of requests that must meet it), or a statistic such as ttft_p99' $S --slo ttft=2
refused "goodput without threshold" '--goodput needs per-request thresholds' $S --slo ttft_p99=2 --goodput 0.9
refused "goodput over one" '--goodput 1.5' $S --slo ttft=2 --goodput 1.5
refused "goodput nan" '--goodput nan' $S --slo ttft=2 --goodput nan
refused "rate negative" '--rate -3' $S --slo ttft_p99=2 --rate -3
refused "tol zero" '--tol 0' $S --slo ttft_p99=2 --tol 0
refused "gpu-cost no price" '--gpu-cost h200' $S --slo ttft_p99=2 --gpu-cost h200
refused "gpu-cost bad price" '--gpu-cost h200=cheap' $S --slo ttft_p99=2 --gpu-cost h200=cheap
refused "gpu-cost price past 1e9 (its product with the GPUs overflows)" '--gpu-cost h200=1e308' $S --slo ttft_p99=2 \
  --gpu-cost h200=1e308
refused "--rate past 1e9 (its copy count overflowed)" '--rate 1e308: expected a request rate in (0, 1e9]' $S \
  --slo ttft_p99=2 --rate 1e308
refused "gpu-cost price below a tenth of a cent (its req/$ broke the table)" '--gpu-cost h200=1e-300' $S --slo ttft_p99=2 \
  --gpu-cost h200=1e-300
refused "gpu-cost of the profile and of its GPU (the first price won unseen)" \
  '--gpu-cost h200=3.5 and NVIDIA H200=7 price the same hardware (profile h200, GPU NVIDIA H200)' \
  scenarios/capacity/h200-hd128.yaml --slo ttft_p99=1 --gpu-cost h200=3.5 --gpu-cost 'NVIDIA H200=7'
refused "gpu-cost twice (the first price won unseen)" '--gpu-cost H200=4: H200 is priced twice' $S --slo ttft_p99=2 \
  --gpu-cost h200=3.5 --gpu-cost H200=4
refused "-j zero" '-j 0' $S --slo ttft_p99=2 -j 0
refused "unknown search key" '--search engine.max_num_sequences=4: unknown key "max_num_sequences"' $S --slo ttft_p99=2 \
  --search engine.max_num_sequences=4
refused "bad search value" '--search engine.max_num_seqs=abc: expected a positive integer' $S --slo ttft_p99=2 \
  --search engine.max_num_seqs=8,abc
refused "bad search list" '--search engine.max_num_seqs: "1,,2": empty value' $S --slo ttft_p99=2 --search engine.max_num_seqs=1,,2
refused "search value twice" '--search engine.max_num_seqs: 4 is given twice' $S --slo ttft_p99=2 \
  --search engine.max_num_seqs=4,8,4
refused "search number twice in two spellings" '--search engine.max_num_seqs: 4 and 4.0 are the same value' $S \
  --slo ttft_p99=2 --search engine.max_num_seqs=4,4.0
refused "split colocated twice" '--search split: colocated is given twice' $S --slo ttft_p99=2 \
  --search split=colocated,colocated
refused "split P:D twice in two spellings" '--search split: 1:2 and 01:2 are the same value' $S --slo ttft_p99=2 \
  --search split=1:2,2,01:2
# an option of one value given twice: the first was dropped unsaid
refused "--rate twice" '--rate given twice' $S --slo ttft_p99=2 --rate 3 --rate 5
refused "--goodput twice" '--goodput given twice' $S --slo ttft=2 --goodput 0.9 --goodput=0.5
refused "--tol twice" '--tol given twice' $S --slo ttft_p99=2 --tol 0.1 --tol 0.05
refused "-j and --jobs" '--jobs given twice' $S --slo ttft_p99=2 -j1 --jobs 2
refused "--csv twice" '--csv given twice' $S --slo ttft_p99=2 --csv "$tmp/x.csv" --csv "$tmp/y.csv"
refused "-o and --out" '--out given twice' $S --slo ttft_p99=2 --points -o "$tmp/a" --out "$tmp/b"
refused "--error-bars twice" '--error-bars given twice' $S --slo ttft_p99=2 --error-bars 3 --error-bars 4
refused "--set beside a --search of that key (the --set was dropped unsaid)" \
  '--set engine.max_num_seqs=2: --search engine.max_num_seqs sets that key too' $S --slo ttft_p99=2 \
  --set engine.max_num_seqs=2 --search engine.max_num_seqs=4,8
refused "unknown option" 'unknown option --sweep' $S --slo ttft_p99=2 --sweep engine.max_num_seqs=4
refused "two scenarios" 'one scenario at a time' $S $S --slo ttft_p99=2
refused "missing scenario" 'nope.yaml' nope.yaml --slo ttft_p99=2
refused "--points -o \"\" (the CSVs went to /point-0000.csv)" '-o: an empty directory name' $S --slo ttft_p99=2 --points -o ""
refused "--csv \"\"" 'an output named by an empty file name' $S --slo ttft_p99=2 --csv ""
refused "--frontier on a directory (it read as empty)" 'Is a directory' --frontier tests
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
refused "--frontier with a bound below a row's statistic (searched under a looser one)" \
  'at its rate, above the bound: give the SLOs of the search' --frontier "$tmp/merged.csv" --slo ttft_p99=1 --slo tpot_p90=0.001
refused "--frontier --rate without --slo (the answer comes with the table: nothing printed)" \
  '--frontier with --rate: give the search'"'"'s --slo too' --frontier "$tmp/merged.csv" --rate 30
# a goodput search read with another --goodput (its rates do not meet it), or without its --goodput
$PACESIM capacity $S --slo ttft=1 --slo ttft_p50=1 --goodput 0.9 --csv "$tmp/gp.csv" --quiet 2> /dev/null || bad "goodput search exit $?"
refused "--frontier with a higher --goodput than its search's" 'goodput_share 0.9' --frontier "$tmp/gp.csv" --slo ttft=1 \
  --slo ttft_p50=1 --goodput 0.99
refused "--frontier without its search's --goodput" 'at its rate, a search under --goodput' --frontier "$tmp/gp.csv" \
  --slo ttft_p50=1
refused "--frontier with fewer SLOs" 'has 2 slo_NAME_s columns, --slo gives 1' --frontier "$tmp/merged.csv" --slo ttft_p99=1
# cellcol FILE LINE COLUMN-NAME: the byte column where that cell starts (no quoted fields here)
cellcol() {
  awk -F, -v L="$2" -v N="$3" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == N) c = i }
    NR == L { k = 1; for (i = 1; i < c; i++) k += length($i) + 1; print k }' "$1"
}
sed '2s/,ok,/,okay,/' "$tmp/merged.csv" > "$tmp/bad1.csv"
c=$(cellcol "$tmp/bad1.csv" 2 status)
[ "$c" -gt 1 ] && ok "--frontier: the status cell is past column 1 ($c)" || bad "--frontier: status column $c"
refused "--frontier: a bad status, at its cell" "bad1.csv:2:$c: status: \"okay\" is not a status" --frontier "$tmp/bad1.csv"
sed '3s/,[^,]*$//' "$tmp/merged.csv" > "$tmp/bad2.csv"
c=$(($(sed -n 3p "$tmp/bad2.csv" | wc -c)))
refused "--frontier: a short row, at its end" "bad2.csv:3:$c: 27 fields, the header has 28" --frontier "$tmp/bad2.csv"
sed '3s/$/,7/' "$tmp/merged.csv" > "$tmp/bad2b.csv"
c=$(($(sed -n 3p "$tmp/merged.csv" | wc -c) + 1))
refused "--frontier: a long row, at its extra cell" "bad2b.csv:3:$c: 29 fields, the header has 28" --frontier "$tmp/bad2b.csv"
sed '3s/$/,"7/' "$tmp/merged.csv" > "$tmp/bad2c.csv"
refused "--frontier: an unclosed quote" 'bad2c.csv:3:1: an unclosed quote' --frontier "$tmp/bad2c.csv"
awk -F, -v OFS=, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "rate_per_s") c = i } NR == 4 { $c = "nan" } 1' \
  "$tmp/merged.csv" > "$tmp/bad3.csv"
refused "--frontier: nan, at its cell" "bad3.csv:4:$(cellcol "$tmp/bad3.csv" 4 rate_per_s): rate_per_s: \"nan\" is not a number" \
  --frontier "$tmp/bad3.csv"
awk -F, -v OFS=, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "usd_per_hour") c = i } NR == 3 { $c = "-100" } 1' \
  "$tmp/merged.csv" > "$tmp/bad4.csv"
refused "--frontier: a negative price (it was the cheapest)" \
  "bad4.csv:3:$(cellcol "$tmp/bad4.csv" 3 usd_per_hour): usd_per_hour: \"-100\" is not a number >= 0" \
  --frontier "$tmp/bad4.csv" --slo ttft_p99=1 --slo tpot_p90=0.02 --rate 1
awk -F, -v OFS=, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "gpus") c = i } NR == 3 { $c = "0" } 1' \
  "$tmp/merged.csv" > "$tmp/bad6.csv"
refused "--frontier: 0 GPUs on a configuration that did not fail (copies of it were the cheapest, at 0 GPUs)" \
  "bad6.csv:3:$(cellcol "$tmp/bad6.csv" 3 gpus): gpus: \"0\" is not a count of GPUs >= 1" --frontier "$tmp/bad6.csv" \
  --slo ttft_p99=1 --slo tpot_p90=0.02 --rate 30
awk -F, -v OFS=, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "rate_per_s") c = i } NR > 1 && $c != "" { $c = "1e-300" } 1' \
  "$tmp/merged.csv" > "$tmp/tiny.csv"
$PACESIM capacity --frontier "$tmp/tiny.csv" --slo ttft_p99=1 --slo tpot_p90=0.02 --rate 30 > /dev/null 2> "$tmp/tiny.txt"
if grep -q "^cheapest carrying 30 req/s: none (each would need more than 10^12 copies)" "$tmp/tiny.txt"; then
  ok "--frontier --rate over rates of 1e-300: no copy count past 10^12 (it overflowed a long)"
else bad "--frontier --rate over tiny rates: $(grep cheapest "$tmp/tiny.txt")"; fi
sed '1s/,usd_per_hour,/,usd_per_hour,usd_per_hour,/; 2,$s/,ok,/,1,ok,/' "$tmp/merged.csv" > "$tmp/bad5.csv"
c=$(($(sed -n '1s/,usd_per_hour,.*//p' "$tmp/bad5.csv" | wc -c) + 1 + 13))   # the second usd_per_hour
refused "--frontier: a column twice, at the second" "bad5.csv:1:$c: usd_per_hour: a second column of that name" \
  --frontier "$tmp/bad5.csv"
(cat "$tmp/merged.csv"; sed -n 3p "$tmp/merged.csv") > "$tmp/dup.csv"
refused "--frontier: a point twice (listed twice in the table and frontier)" \
  'dup.csv:8:1: point: 1 is also the point of line 3' --frontier "$tmp/dup.csv" --slo ttft_p99=1 --slo tpot_p90=0.02
# a point of a search under fewer SLOs (ttft_p99 alone), merged in: its rate does not compare (it was taken)
$PACESIM capacity $S --slo ttft_p99=1 --search engine.max_num_seqs=32 --point-index 6 --csv "$tmp/other.csv" --quiet \
  2> /dev/null || bad "the other search's point exit $?"
$PACESIM merge "$tmp"/pts/point-*.csv "$tmp/other.csv" > "$tmp/mixed.csv" || bad "merge of the mixed points exit $?"
refused "--frontier: a row of a search under other SLOs" \
  "mixed.csv:8:$(cellcol "$tmp/mixed.csv" 8 slo_tpot_p90_s): slo_tpot_p90_s: empty where a rate was found" \
  --frontier "$tmp/mixed.csv"
# a merge of two scenarios' points: the table's head says so (it named the first alone)
awk -F, -v OFS=, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "file") c = i } NR == 3 { $c = "other.yaml" } 1' \
  "$tmp/merged.csv" > "$tmp/two.csv"
$PACESIM capacity --frontier "$tmp/two.csv" --slo ttft_p99=1 --slo tpot_p90=0.02 --csv /dev/null > "$tmp/two.txt" \
  && grep -q '^capacity: tests/data/capacity/small.yaml and other scenarios, SLOs' "$tmp/two.txt" \
  && ok "--frontier of two scenarios' points: the head names the first and others" \
  || bad "--frontier of two scenarios' points: $(head -1 "$tmp/two.txt")"
printf '\357\273\277' | cat - "$tmp/merged.csv" > "$tmp/bom.csv"
$PACESIM capacity --frontier "$tmp/bom.csv" > "$tmp/bom-front.csv" 2> "$tmp/err" && cmp -s "$tmp/front.csv" "$tmp/bom-front.csv" \
  && ok "--frontier: a byte-order mark before the header dropped" || bad "--frontier with a BOM: $(head -c 300 "$tmp/err")"
refused "--frontier with --search" '--frontier reads a capacity CSV' --frontier "$tmp/merged.csv" --slo ttft_p99=1 \
  --search engine.max_num_seqs=4
cp "$tmp/merged.csv" "$tmp/m0.csv"
refused "--frontier: --csv its own input" 'that is the CSV --frontier reads' --frontier "$tmp/merged.csv" --csv "$tmp/./merged.csv"
cmp -s "$tmp/merged.csv" "$tmp/m0.csv" && ok "--frontier: its input untouched" || bad "--frontier: its input overwritten"
mkfifo "$tmp/fifo"
refused "--frontier: --csv a FIFO without a reader (no hang)" 'a FIFO that no process reads' --frontier "$tmp/merged.csv" \
  --csv "$tmp/fifo"
cp "$S" "$tmp/s.yaml"; sed -i "s#\.\./\.\./\.\./#$PWD/#g" "$tmp/s.yaml"
refused "--csv the scenario" 'that is the scenario' "$tmp/s.yaml" --slo ttft_p99=2 --csv "$tmp/s.yaml"
refused "--csv a FIFO without a reader (no hang)" 'a FIFO that no process reads' $S --slo ttft_p99=2 --csv "$tmp/fifo"
$PACESIM best "$tmp/merged.csv" --objective min:usd_per_hour --constraint 'rate_per_s>=8' > "$tmp/best.txt" \
  && ok "best over the merged CSV" || bad "best exit $?"
# its keys are the search's (up to the file column): every column of the row was printed as one
grep -q 'best point [0-9]* engine.max_num_seqs=[0-9]* engine.max_num_batched_tokens=[0-9]*  usd_per_hour=' "$tmp/best.txt" \
  && ok "best over a capacity CSV names the search's keys" || bad "best over a capacity CSV: $(tail -1 "$tmp/best.txt")"

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
# --rate past what one configuration of a trace carries: no copies (a random split of a trace is not its replay at a
# lower rate; "random routing splits the Poisson stream" was printed)
$PACESIM capacity $T --slo ttft_p99=2 --search engine.max_num_seqs=8,16 --rate 100 2>&1 | tail -1 > "$tmp/tr-rate.txt"
grep -q '^cheapest carrying 100 req/s: none (of a trace no copies are judged' "$tmp/tr-rate.txt" \
  && ok "a trace: no copies for --rate" || bad "a trace: --rate answered $(cat "$tmp/tr-rate.txt")"

# a trace far from 0 (its rows from 9.5e6 s at 150/s): a probe's arrivals, offset scaled, would pass the clock at any
# rate below 158/s (it failed with exit 1 naming a temporary file); the search stops there, "below", exit 0
awk -F, 'NR == 1 { print; next } { printf "%.6f,%s,%s,%s\n", 9500000 + NR / 150, $2, $3, $4 }' \
  tests/data/capacity/small-trace.csv > "$tmp/far.csv"
$PACESIM capacity $T --slo ttft_p99=2 --set "workload.trace=$tmp/far.csv" --set stop.max_time_s=9.9e6 --quiet \
  --csv "$tmp/far-o.csv" 2> "$tmp/err" && [ ! -s "$tmp/err" ] \
  && awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next } { exit !($c["status"] == "below") }' "$tmp/far-o.csv" \
  && ok "a trace far from 0: below, within the clock's reach" || bad "a trace far from 0: $(head -c 300 "$tmp/err")"

# a trace whose first arrival is 1e-305 s (run takes it): the saturation probe scaled it to a subnormal, which a
# trace may not hold (exit 1); it is written as 0
{ echo "arrival_s,prompt_tokens,output_tokens,cached_tokens"; echo "1e-305,10,4,0"; tail -n +3 tests/data/capacity/small-trace.csv; } \
  > "$tmp/sub.csv"
$PACESIM capacity $T --slo ttft_p99=2 --set "workload.trace=$tmp/sub.csv" --quiet --csv "$tmp/sub-o.csv" 2> "$tmp/err" \
  && [ ! -s "$tmp/err" ] && ok "a trace's 1e-305 s arrival scaled under the normal numbers: searched" \
  || bad "a trace's 1e-305 s arrival: $(head -c 300 "$tmp/err")"

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

# the split: co-located or prefill/decode.  Bad values and combinations refused in one line
refused "split value" '--search split=1:0: expected colocated, N' $C --slo ttft_p99=1 --search split=colocated,1:0
refused "split without a link" 'a prefill/decode split needs cluster.kv_transfer' $C --slo ttft_p99=1 --search split=1:1
refused "split beside the pool's count" '--search cluster.pools.a.count: a split=N or P:D value sets' $C --slo ttft_p99=1 \
  --search split=2,1:1 --search cluster.pools.a.count=1,2 --set cluster.kv_transfer.link=nvlink4
refused "split of a disaggregated scenario" 'the scenario'"'"'s cluster has 2 pools, of role prefill or decode' \
  tests/data/capacity/disagg.yaml --slo ttft_p99=1 --search split=colocated,1:1
refused "split's pool key on a co-located one" '--search split=colocated with cluster.pools.decode.engine.max_num_seqs=8' \
  $C --slo ttft_p99=1 --search split=colocated,1:1 --search cluster.pools.decode.engine.max_num_seqs=8 \
  --set cluster.kv_transfer.link=nvlink4
SPLIT="--slo ttft_p99=1 --slo tpot_p90=0.02 --set cluster.kv_transfer.link=nvlink4 --quiet"
# shellcheck disable=SC2086
$PACESIM capacity $C $SPLIT --search split=colocated,2,1:1,1:2 --search engine.tensor_parallel_size=1,2 \
  --csv "$tmp/split.csv" 2> /dev/null || bad "split search exit $?"
# GPUs: each pool's replicas x its TP; co-located: the scenario's one replica, or N
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
  { s = $c["split"]; tp = $c["engine.tensor_parallel_size"]
    n = s == "colocated" ? 1 : s ~ /:/ ? substr(s, 1, index(s, ":") - 1) + substr(s, index(s, ":") + 1) : s
    if ($c["status"] != "ok" || $c["replicas"] != n || $c["gpus"] != n * tp) bad = 1 }
  END { exit bad || NR != 9 }' "$tmp/split.csv" \
  && ok "split: colocated, N and P:D searched; GPUs = replicas x TP" || bad "split: a configuration's replicas or GPUs are wrong"
# a pool's own TP (a set of the split's pools, applied after the rewrite): 1 prefill x TP2 + 2 decode x TP1
# shellcheck disable=SC2086
$PACESIM capacity $C $SPLIT --search split=1:2 --set cluster.pools.prefill.engine.tensor_parallel_size=2 \
  --csv "$tmp/split-tp.csv" 2> /dev/null || bad "split with a pool's TP exit $?"
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next } { g = $c["gpus"]; r = $c["replicas"]; tp = $c["tp"] }
  END { exit !(g == 4 && r == 3 && tp == "") }' "$tmp/split-tp.csv" \
  && ok "split: GPUs = sum of count x TP over the pools (1 x TP2 prefill + 2 x TP1 decode = 4), tp empty (two degrees)" \
  || bad "split: GPUs with a prefill pool at TP2 are not 4, or tp is not empty (it was the scenario's engine's 1)"
# a pool's own TP is the configuration's tp (it was the scenario's engine's: tp 1 beside 2 GPUs for 1 replica)
$PACESIM capacity $C --slo ttft_p99=1 --search cluster.pools.a.engine.tensor_parallel_size=2 --csv "$tmp/pool-tp.csv" \
  --quiet 2> /dev/null || bad "a pool's TP exit $?"
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next } { exit !($c["tp"] == 2 && $c["gpus"] == 2) }' \
  "$tmp/pool-tp.csv" && ok "a pool's own TP 2: tp 2, 2 GPUs" || bad "a pool's own TP 2: $(tail -1 "$tmp/pool-tp.csv" | cut -d, -f5-8)"
# split=1:2 is the disaggregated cluster a user writes (tests/data/capacity/disagg.yaml), row for row
# shellcheck disable=SC2086
$PACESIM capacity $C $SPLIT --search split=1:2 --csv "$tmp/split-12.csv" 2> /dev/null || bad "split=1:2 exit $?"
# shellcheck disable=SC2086
$PACESIM capacity tests/data/capacity/disagg.yaml --slo ttft_p99=1 --slo tpot_p90=0.02 --quiet \
  --csv "$tmp/disagg.csv" 2> /dev/null || bad "disagg.yaml exit $?"
cut -d, -f5- "$tmp/split-12.csv" > "$tmp/a.csv"
cut -d, -f4- "$tmp/disagg.csv" > "$tmp/b.csv"
if cmp -s "$tmp/a.csv" "$tmp/b.csv" && grep -q ',ok,' "$tmp/a.csv"; then
  ok "split=1:2 gives the row of the disaggregated scenario written by hand"
else bad "split=1:2 differs from tests/data/capacity/disagg.yaml"; fi
# the KV transfer is simulated: a link latency over the TTFT bound leaves a split no rate, the co-located its own
# shellcheck disable=SC2086
$PACESIM capacity $C $SPLIT --search split=colocated,1:2 --set cluster.kv_transfer.latency_us=1200000 \
  --csv "$tmp/split-slow.csv" 2> /dev/null || bad "split with a slow link exit $?"
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next } { st[$c["split"]] = $c["status"] }
  END { exit !(st["colocated"] == "ok" && st["1:2"] == "below") }' "$tmp/split-slow.csv" \
  && ok "split: a 1.2 s KV transfer breaks a 1 s TTFT bound at any rate (its TTFT holds the transfer)" \
  || bad "split: a 1.2 s KV transfer did not break the 1 s TTFT bound"
# an axis that needs another's (cluster.router on a scenario whose cluster comes from a later axis): each
# value is checked within a configuration of the search, not alone (it was refused: missing key "pools")
$PACESIM capacity $S --slo ttft_p99=2 --search cluster.router=random,least_kv --search cluster.pools.a.count=1,2 \
  --points -o "$tmp/ax" > "$tmp/axcmds" 2> "$tmp/err" && [ "$(wc -l < "$tmp/axcmds")" = 4 ] \
  && ok "an axis that needs another's is checked beside it" \
  || bad "an axis that needs another's: $(head -c 300 "$tmp/err")"
# --csv naming a file the scenario reads (a copy of its model): refused, untouched (the probes found it emptied)
cp models/llama-3.1-8b.yaml "$tmp/m.yaml"
sed "s|^model: .*|model: $tmp/m.yaml|" $S > "$tmp/sm.yaml"
refused "--csv the scenario's model" 'that is a file the scenario reads' "$tmp/sm.yaml" --slo ttft_p99=2 --csv "$tmp/./m.yaml"
cmp -s models/llama-3.1-8b.yaml "$tmp/m.yaml" && ok "--csv the scenario's model: the model untouched" \
  || bad "--csv the scenario's model: the model was overwritten"
# a configuration no rate serves (a 1-token budget: ~5 s a prompt against a 1 ms bound) is "below", exit 0: the
# downward gallop stops before its arrivals pass the clock's reach (it ran into the engine's clock limit, exit 1)
$PACESIM capacity $S --slo ttft_p50=0.001 --set workload.poisson.count=100 --set engine.max_num_batched_tokens=1 \
  --csv "$tmp/hopeless.csv" --quiet 2> "$tmp/err" \
  && awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next } { exit !($c["status"] == "below") }' "$tmp/hopeless.csv" \
  && ok "a configuration no rate serves is below, within the clock's reach" \
  || bad "a configuration no rate serves: $(head -c 300 "$tmp/err")"
# configurations refused at set-up (a KV cache too small for the workload at num_gpu_blocks=1): one line, the
# first such point's, not one per point that carries the value; exit 2
$PACESIM capacity $S --slo ttft_p50=2 --set workload.poisson.count=100 --search engine.num_gpu_blocks=400,1 \
  --search engine.max_num_seqs=1,2 --quiet -j 2 > /dev/null 2> "$tmp/err"; rc=$?
if [ $rc = 2 ] && [ "$(wc -l < "$tmp/err")" = 1 ] \
  && grep -q '^point 2 (engine.num_gpu_blocks=1 engine.max_num_seqs=1): tests/data/capacity/small.yaml:[0-9]*:[0-9]*: workload.poisson: .*engine.num_gpu_blocks' "$tmp/err"
then ok "configurations refused at set-up: one line, exit 2"
else bad "configurations refused at set-up: exit $rc, $(head -c 300 "$tmp/err")"; fi
# a TPOT bound on one-token outputs (no request has a TPOT): refused as bad input, one line, exit 2 (the bound
# was never checked: a rate printed, TPOT p99 "-", exit 0)
$PACESIM capacity $S --slo tpot_p99=0.05 --set workload.poisson.output=1 --quiet > /dev/null 2> "$tmp/err"; rc=$?
if [ $rc = 2 ] && [ "$(wc -l < "$tmp/err")" = 1 ] && grep -q 'small.yaml:[0-9]*:[0-9]*: workload.poisson.output: 0 of the 1200 measured requests have two output tokens or more (a TPOT); tpot_p99 needs 1000' "$tmp/err"
then ok "a TPOT bound with no TPOT to check: refused"
else bad "a TPOT bound with no TPOT to check: exit $rc, $(head -c 300 "$tmp/err")"; fi
# a one-layer model's 30 us steps, which the clock holds only before 262144 s: the downward gallop stops at
# the rate whose arrivals span half of that, "below" and exit 0 (a probe past it ran into the clock, exit 1)
$PACESIM capacity tests/data/capacity/tiny-clock.yaml --slo ttft_mean=1e-7 --csv "$tmp/tiny-clock.csv" --quiet 2> "$tmp/err" \
  && [ ! -s "$tmp/err" ] \
  && sed 's/"[^"]*"//g' "$tmp/tiny-clock.csv" \
     | awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next } { exit !($c["status"] == "below" && $c["rate_per_s"] * 131072 > 100) }' \
  && ok "a small model's clock reach bounds the downward gallop" \
  || bad "a small model's clock reach: $(head -c 300 "$tmp/err")"
# --points carries the split: points + merge + --frontier = the in-process CSV
# shellcheck disable=SC2086
$PACESIM capacity $C $SPLIT --search split=colocated,2,1:1,1:2 --search engine.tensor_parallel_size=1,2 --points \
  -o "$tmp/spts" > "$tmp/scmds" || bad "split --points exit $?"
mkdir -p "$tmp/spts"
sh "$tmp/scmds" 2> /dev/null || bad "the split's point commands failed"
$PACESIM merge "$tmp"/spts/point-*.csv > "$tmp/smerged.csv" || bad "split merge exit $?"
$PACESIM capacity --frontier "$tmp/smerged.csv" --quiet > "$tmp/sfront.csv" || bad "split --frontier exit $?"
cmp -s "$tmp/split.csv" "$tmp/sfront.csv" && ok "split: points + merge + --frontier = the in-process CSV" \
  || bad "split: points + merge + --frontier differ"

[ $fail = 0 ] && echo "capacity: all passed" || echo "capacity: FAILED"
exit $fail
