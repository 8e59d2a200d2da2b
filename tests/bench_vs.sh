#!/usr/bin/env bash
# bench_vs.sh REV [RUNS]: the speed of this tree against an earlier revision, measured in one run.
# REV's tree is taken with `git archive REV` into build/bench-REV/ and its bin/bench built there by
# its own Makefile (same CC and OPT); then this tree's bin/bench and REV's run the 100K-request
# Poisson bench (each with its own scenarios/bench-poisson-100k.yaml) in RUNS (3) alternating
# pairs.  A run's figure is the CPU seconds (user + system) of the whole bench process, which a
# busy machine disturbs less than wall time.  Prints both medians, the peak RSS of each, and the
# speed ratio REV / current: >= 1.0 means the current tree is at least as fast as REV.
# Exit 1 if REV cannot be built (a shallow clone lacks it: git fetch --unshallow).
set -eu
cd "$(dirname "$0")/.."
rev=${1:?usage: bench_vs.sh REV [RUNS]}
runs=${2:-3}
dir=build/bench-$rev
scn=scenarios/bench-poisson-100k.yaml
[ -x bin/bench ] || { echo "bench_vs: bin/bench not built"; exit 1; }
if [ ! -x "$dir/bin/bench" ]; then
    git rev-parse --verify -q "$rev^{commit}" >/dev/null \
        || { echo "bench_vs: revision $rev is not in this clone (a shallow clone: git fetch --unshallow)"; exit 1; }
    rm -rf "$dir"
    mkdir -p "$dir"
    git archive "$rev" | tar -x -C "$dir"
    echo "bench_vs: building $rev's bin/bench in $dir"
    make -C "$dir" --no-print-directory SETUP=done CC="${CC:-cc}" OPT="${OPT:--O2}" bin/bench >"$dir/build.log" 2>&1 \
        || { echo "bench_vs: $rev's bin/bench failed to build (see $dir/build.log)"; exit 1; }
fi

# one RUN: "cpu_s peak_rss_mib" of BENCH SCENARIO
one() {
    local out t
    TIMEFORMAT='%U %S'
    { t=$( { time "$1" "$2" --label x >"$dir/last.txt"; } 2>&1 ); } || { echo "bench_vs: $1 failed"; exit 1; }
    out=$(cat "$dir/last.txt")
    awk -v t="$t" -v o="$out" 'BEGIN { split(t, a, " "); n = split(o, f, " ");
        for (i = 1; i < n; i++) if (f[i] == "peak_rss_mib") r = f[i + 1];
        printf "%.3f %s\n", a[1] + a[2], r }'
}
cur=() old=()
for i in $(seq "$runs"); do
    cur+=("$(one bin/bench $scn)")
    old+=("$(one "$dir/bin/bench" "$dir/$scn")")
done
median() { printf '%s\n' "$@" | sort -n -k1,1 | awk '{ v[NR] = $0 } END { print v[int((NR + 1) / 2)] }'; }
c=$(median "${cur[@]}") o=$(median "${old[@]}")
awk -v c="$c" -v o="$o" -v rev="$rev" -v n="$runs" 'BEGIN { split(c, x, " "); split(o, y, " ");
    printf "speed vs %s: poisson-100k %.3f s CPU (peak RSS %s MiB) against %.3f s (%s MiB), medians of %d alternating runs\n",
           rev, x[1], x[2], y[1], y[2], n;
    printf "speed ratio %s / current: %.2f (>= 1.00: as fast as %s or faster)\n", rev, y[1] / x[1], rev }'
