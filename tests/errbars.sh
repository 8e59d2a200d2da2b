#!/bin/sh
# errbars: run --error-bars P on the command line: P refused outside 0 < P <= 50 (one line,
# exit 2), "3%" read as 3, points forwarding it to every point's command, a point's CSV with
# the error bars' columns.  The figures themselves: tests/check_cost_scaled.c.
# Run from the repository root.
set -u
PACESIM=${PACESIM:-./bin/pacesim}
SCN=scenarios/default.yaml
tmp=$(mktemp -d /tmp/errbars.XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
ok() { echo "  ok   $1"; }
bad() { echo "  FAIL $1"; fail=1; }

for p in 0 -1 50.01 51 x '' nan inf 3x 1e999 '%' 0x10 0X1p2 ' 3' '3 ' +3 1e1 3%% .%  NaN INF infinity; do
  $PACESIM run $SCN --error-bars "$p" --quiet > "$tmp/out" 2> "$tmp/err"; rc=$?
  if [ $rc = 2 ] && [ "$(wc -l < "$tmp/err")" = 1 ] && grep -q '^pacesim: --error-bars: ' "$tmp/err" && [ ! -s "$tmp/out" ]; then
    ok "--error-bars '$p': exit 2, one line"
  else
    bad "--error-bars '$p': exit $rc, stderr: $(head -c 200 "$tmp/err")"
  fi
done
$PACESIM run $SCN --error-bars > /dev/null 2> "$tmp/err"; rc=$?
[ $rc = 2 ] && [ "$(wc -l < "$tmp/err")" = 1 ] && ok "--error-bars without P: exit 2, one line" || bad "--error-bars without P: exit $rc"

$PACESIM run $SCN --error-bars 2.5% --quiet > /dev/null 2>&1 && ok "--error-bars 2.5% accepted (a decimal fraction)" \
  || bad "--error-bars 2.5% refused"
$PACESIM run $SCN --error-bars 50 --csv "$tmp/50.csv" --quiet && ok "--error-bars 50 accepted" || bad "--error-bars 50 refused"
$PACESIM run $SCN --error-bars 3 > "$tmp/a.txt" && $PACESIM run $SCN --error-bars=3% > "$tmp/b.txt" \
  && cmp -s "$tmp/a.txt" "$tmp/b.txt" && ok "--error-bars=3% is --error-bars 3" || bad "--error-bars=3% differs from 3"
grep -q '^   amplification: ' "$tmp/a.txt" && ok "the table names the amplification" || bad "no amplification line"

$PACESIM points $SCN --sweep env.VLLM_1CAT_PREFILL_PACE_STEPS=0,4 --error-bars 2 -o "$tmp/pts" > "$tmp/cmds" || bad "points exit $?"
[ "$(grep -c -- ' --error-bars 2 ' "$tmp/cmds")" = 2 ] && ok "points: every command carries --error-bars 2" || bad "points: $(cat "$tmp/cmds")"
mkdir -p "$tmp/pts" && sh "$tmp/cmds" && $PACESIM merge "$tmp"/pts/point-*.csv > "$tmp/merged.csv" || bad "points' commands / merge failed"
$PACESIM run $SCN --sweep env.VLLM_1CAT_PREFILL_PACE_STEPS=0,4 --error-bars 2 --csv "$tmp/sweep.csv" --quiet -j 2
cmp -s "$tmp/merged.csv" "$tmp/sweep.csv" && ok "points + merge == the sweep with --error-bars (byte for byte)" \
  || bad "merged CSV differs from the sweep's"
head -1 "$tmp/sweep.csv" | grep -q ',a_tok_s_lo,a_tok_s_hi,' && ok "the CSV has a_tok_s_lo, a_tok_s_hi" || bad "no _lo/_hi columns"

# one run's --trace, --steps, --requests, --replicas are the point run's: the same bytes with the
# flag (its two other runs on other threads, -j 3) as without it
S=scenarios/h200-serve-poisson-p600-s64-b2048.yaml
$PACESIM run $S --error-bars 3 -j 3 --trace "$tmp/t1.json" --steps "$tmp/s1.csv" --requests "$tmp/r1.csv" \
  --replicas "$tmp/p1.csv" --quiet || bad "--error-bars with --trace etc.: exit $?"
$PACESIM run $S -j 3 --trace "$tmp/t0.json" --steps "$tmp/s0.csv" --requests "$tmp/r0.csv" --replicas "$tmp/p0.csv" \
  --quiet || bad "--trace etc.: exit $?"
for x in trace:t.json steps:s.csv requests:r.csv replicas:p.csv; do
  o=${x%%:*} f=${x#*:}
  a="$tmp/${f%%.*}1.${f#*.}" b="$tmp/${f%%.*}0.${f#*.}"
  [ -s "$a" ] && cmp -s "$a" "$b" && ok "--$o: the same bytes with --error-bars as without" || bad "--$o differs with --error-bars"
done

exit $fail
