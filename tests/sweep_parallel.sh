#!/bin/sh
# sweep_parallel: a sweep run as separate commands (pacesim points) through GNU parallel,
# merged (pacesim merge), is byte for byte the CSV of the in-process sweep; and the
# in-process sweep's CSV, tables and steps are the same for -j 1 and -j 3.
# Run from the repository root.  Skips (exit 0) when GNU parallel is missing.
set -u
PACESIM=${PACESIM:-./bin/pacesim}
FILES="scenarios/v100-fp16-nomtp-b16k-baseline.yaml scenarios/v100-fp8-nomtp-b16k-pdr.yaml"
SWEEP="--sweep env.VLLM_1CAT_PREFILL_PACE_STEPS=0,2..6:2,12 --sweep env.VLLM_FLASH_V100_SMALLQ_DECODE_MAX_Q=8,16"
tmp=$(mktemp -d /tmp/sweep_parallel.XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
ok() { echo "  ok   $1"; }
bad() { echo "  FAIL $1"; fail=1; }

# -j 1 vs -j 3: tables, CSV and steps identical
$PACESIM run $FILES $SWEEP -j 1 --csv "$tmp/j1.csv" --steps "$tmp/j1.steps" > "$tmp/j1.txt" || bad "sweep -j 1 exit $?"
$PACESIM run $FILES $SWEEP -j 3 --csv "$tmp/j3.csv" --steps "$tmp/j3.steps" > "$tmp/j3.txt" || bad "sweep -j 3 exit $?"
for x in csv steps txt; do
  if cmp -s "$tmp/j1.$x" "$tmp/j3.$x"; then ok "-j 1 and -j 3 write the same $x"; else bad "-j 1 and -j 3 differ ($x)"; fi
done
rows=$(($(wc -l < "$tmp/j1.csv") - 1))
[ "$rows" = 20 ] && ok "20 points (2 files x 5 x 2)" || bad "expected 20 CSV rows, got $rows"

# a cluster: a sweep over cluster keys (replicas, router, its latency, a pool's engine key) gives the
# same tables, CSV (pool columns too), steps, requests and replicas CSVs for -j 1 and -j 2
CL=scenarios/cluster/h200-llama8b-chat.yaml
CLSWEEP="--sweep cluster.pools.main.count=1..3 --sweep cluster.router=round_robin,least_kv,prefix_affinity,session
  --sweep cluster.router_latency_s=0,0.01 --sweep cluster.pools.main.engine.max_num_seqs=4,32"
for j in 1 2; do
  $PACESIM run $CL --set workload.poisson.count=30 $CLSWEEP -j $j --csv "$tmp/c$j.csv" --steps "$tmp/c$j.steps" \
    --requests "$tmp/c$j.req" --replicas "$tmp/c$j.rep" > "$tmp/c$j.txt" || bad "cluster sweep -j $j exit $?"
done
for x in csv steps req rep txt; do
  if cmp -s "$tmp/c1.$x" "$tmp/c2.$x"; then ok "cluster sweep: -j 1 and -j 2 write the same $x"; else bad "cluster sweep: -j 1 and -j 2 differ ($x)"; fi
done
rows=$(($(wc -l < "$tmp/c1.csv") - 1))
[ "$rows" = 48 ] && ok "cluster sweep: 48 points (3 x 4 x 2 x 2)" || bad "cluster sweep: expected 48 CSV rows, got $rows"
reps=$(($(wc -l < "$tmp/c1.rep") - 1))
[ "$reps" = 96 ] && ok "cluster sweep: 96 replica rows (16 points each of 1, 2, 3)" || bad "cluster sweep: $reps replica rows"

# points: one command per point, numbered like the sweep
$PACESIM points $FILES $SWEEP -o "$tmp/pts" > "$tmp/cmds" || bad "points exit $?"
n=$(wc -l < "$tmp/cmds")
[ "$n" = 20 ] && ok "points prints 20 commands" || bad "points printed $n commands"
grep -q -- "--point-index 19 --csv $tmp/pts/point-0019.csv --quiet" "$tmp/cmds" && ok "point 19 writes point-0019.csv" \
  || bad "no command for point 19"

if ! command -v parallel >/dev/null 2>&1; then
  echo "  SKIP GNU parallel is not installed (make setup installs it): points -> parallel -> merge not checked"
else
  mkdir -p "$tmp/pts"
  parallel --will-cite -j 3 < "$tmp/cmds" || bad "parallel exit $?"
  $PACESIM merge "$tmp"/pts/point-*.csv > "$tmp/merged.csv" || bad "merge exit $?"
  if cmp -s "$tmp/merged.csv" "$tmp/j1.csv"; then ok "parallel + merge == in-process sweep (byte for byte)"
  else bad "merged CSV differs from the sweep's"; diff "$tmp/merged.csv" "$tmp/j1.csv" | head -5; fi
  # the distributed CSV answers the objective like the live sweep
  $PACESIM best "$tmp/merged.csv" --objective max:a_tok_s --constraint 'b_prefill_s<=1.10*base' > "$tmp/best1" || bad "best exit $?"
  $PACESIM run $FILES $SWEEP --quiet --objective max:a_tok_s --constraint 'b_prefill_s<=1.10*base' > "$tmp/best2" || bad "objective exit $?"
  cmp -s "$tmp/best1" "$tmp/best2" && ok "best over the merged CSV == --objective of the sweep" || bad "best answers differ"
  # the cluster sweep too: its pool columns merge back in place
  mkdir -p "$tmp/cpts"
  $PACESIM points $CL --set workload.poisson.count=30 $CLSWEEP -o "$tmp/cpts" > "$tmp/ccmds" || bad "cluster points exit $?"
  parallel --will-cite -j 2 < "$tmp/ccmds" || bad "cluster parallel exit $?"
  $PACESIM merge "$tmp"/cpts/point-*.csv > "$tmp/cmerged.csv" || bad "cluster merge exit $?"
  if cmp -s "$tmp/cmerged.csv" "$tmp/c1.csv"; then ok "cluster: parallel + merge == in-process sweep (byte for byte)"
  else bad "cluster: merged CSV differs from the sweep's"; diff "$tmp/cmerged.csv" "$tmp/c1.csv" | head -5; fi
fi

# bad uses: exit 2
$PACESIM run $FILES $SWEEP --trace "$tmp/t.json" >/dev/null 2>&1; [ $? = 2 ] && ok "--trace with a sweep: exit 2" || bad "--trace with a sweep not refused"
$PACESIM run $FILES --sweep env.X=1..4:0 >/dev/null 2>&1; [ $? = 2 ] && ok "bad range: exit 2" || bad "bad range not refused"
$PACESIM run $FILES --constraint 'a<=1' >/dev/null 2>&1; [ $? = 2 ] && ok "--constraint without --objective: exit 2" || bad "lone --constraint not refused"
# no terminal, no progress bar: stderr stays empty
$PACESIM run $FILES $SWEEP --quiet 2> "$tmp/err"; [ ! -s "$tmp/err" ] && ok "stderr silent when not a terminal" || bad "stderr not empty"
exit $fail
