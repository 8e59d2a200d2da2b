#!/usr/bin/env bash
# bench_cluster.sh DIR [RUNS]: the cluster against one engine, measured in one run.  One engine
# serving the 1M-request trace DIR/trace-1m.csv and 64 replicas serving DIR/trace-1m-x64.csv (the
# same requests at 64x the rate) run in RUNS (3) alternating pairs, so that a change of the
# machine's load between two runs moves both sides of a pair alike; each pair's ratio is the
# cluster's request-steps per CPU second of the single-threaded engine loop over one engine's
# (CPU time: on a shared machine the wall time also counts the time the process waited for a
# core, which moved a pair's ratio by up to a third).  Prints every pair (the wall-time ratio beside it) and
# the median ratio (target >= 0.80: issue #30), and the peak RSS of each side.  Leaves the first
# pair's outputs as DIR/t1m.txt and DIR/c1m.txt.
set -eu
cd "$(dirname "$0")/.."
dir=${1:?usage: bench_cluster.sh DIR [RUNS]}
runs=${2:-3}
[ -x bin/bench ] || { echo "bench_cluster: bin/bench not built"; exit 1; }
for f in trace-1m.csv trace-1m-x64.csv; do
    [ -f "$dir/$f" ] || { echo "bench_cluster: $dir/$f missing (make bench generates it)"; exit 1; }
done
abs=$(cd "$dir" && pwd)
# field NAME FILE: the value after NAME on the bench's result line
field() { awk -v k="$1" '{ for (i = 1; i < NF; i++) if ($i == k) v = $(i + 1) } END { print v }' "$2"; }
ratios=()
for k in $(seq 1 "$runs"); do
    ./bin/bench scenarios/bench-trace.yaml --set workload.trace="$abs/trace-1m.csv" --label trace-1m > "$dir/t1m.$k.txt"
    ./bin/bench scenarios/bench-trace.yaml --set workload.trace="$abs/trace-1m-x64.csv" \
        --set cluster.pools.main.count=64 --label cluster-64x-1m > "$dir/c1m.$k.txt"
    cat "$dir/t1m.$k.txt" "$dir/c1m.$k.txt"
    a=$(field request_steps_per_cpu_s "$dir/t1m.$k.txt") b=$(field request_steps_per_cpu_s "$dir/c1m.$k.txt")
    r=$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", b / a }')
    w=$(awk -v a="$(field request_steps_per_s "$dir/t1m.$k.txt")" -v b="$(field request_steps_per_s "$dir/c1m.$k.txt")" \
        'BEGIN { printf "%.3f", b / a }')
    echo "bench_cluster: pair $k: one engine $a request-steps per CPU second, 64 replicas $b: ratio $r (wall time: $w)"
    ratios+=("$r")
done
cp "$dir/t1m.1.txt" "$dir/t1m.txt"; cp "$dir/c1m.1.txt" "$dir/c1m.txt"
med=$(printf '%s\n' "${ratios[@]}" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
printf 'cluster: 64 replicas, 1M trace requests at 64x the rate, %d alternating pairs: median ratio %.2f of one engine'"'"'s request-steps per CPU second (target >= 0.80); peak RSS %.1f MiB vs %.1f\n' \
    "$runs" "$med" "$(field peak_rss_mib "$dir/c1m.1.txt")" "$(field peak_rss_mib "$dir/t1m.1.txt")"
