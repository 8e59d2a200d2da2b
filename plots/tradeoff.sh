#!/usr/bin/env bash
# tradeoff.sh: the built-in experiment as a pacing sweep (what `make run` runs): the
# scenario at every VLLM_1CAT_PREFILL_PACE_STEPS of the list, printed as a trade-off table
# (A's decode rate during B's prefill, B's prefill time and TTFT, each against PACE_STEPS=0)
# with its knee, written as CSV and, where gnuplot is present, drawn as a PNG.
#   plots/tradeoff.sh [SCENARIO [PACE_LIST [OUTDIR]]]
#     defaults: scenarios/default.yaml  0,1,2,3,4,6,8,12,16,24,32  plots/out
# The knee: with both axes scaled to [0, 1] over the sweep (B's prefill time x, A's rate y),
# the point farthest above the straight line from the first point to the last (Kneedle):
# past it, each extra second of B's prefill buys less of A's rate than on average.
set -eu
scn=${1:-scenarios/default.yaml}
pace=${2:-0,1,2,3,4,6,8,12,16,24,32}
dir=${3:-plots/out}
bin=${PACESIM:-bin/pacesim}
gnuplot=${GNUPLOT:-gnuplot}
name=$(basename "$scn" .yaml)
csv=$dir/tradeoff-$name.csv
png=$dir/tradeoff-$name.png
mkdir -p "$dir"
"$bin" run "$scn" --sweep env.VLLM_1CAT_PREFILL_PACE_STEPS="$pace" --csv "$csv" --quiet --no-progress

table=$(awk -F, -v scn="$scn" '
NR == 1 {
    for (i = 1; i <= NF; i++) c[$i] = i
    if (!c["a_tok_s"] || !c["b_prefill_s"] || !c["PACE_STEPS"]) {
        print "tradeoff: " scn " has no a_tok_s / b_prefill_s windows" > "/dev/stderr"; exit 2
    }
    next
}
{
    n++; p[n] = $c["PACE_STEPS"]; y[n] = $c["a_tok_s"]; x[n] = $c["b_prefill_s"]
    t[n] = c["b_ttft_s"] ? $c["b_ttft_s"] : ""; name = $c["scenario"]
}
END {
    if (n == 0) exit 1
    knee = 0; best = 0
    if (n > 2 && x[n] != x[1] && y[n] != y[1])
        for (i = 2; i < n; i++) {
            d = (y[i] - y[1]) / (y[n] - y[1]) - (x[i] - x[1]) / (x[n] - x[1])
            if (d > best) { best = d; knee = i }
        }
    printf "pacing trade-off: %s (%s), VLLM_1CAT_PREFILL_PACE_STEPS swept\n", scn, name
    printf "%10s  %14s %9s  %14s %9s  %10s\n", "PACE_STEPS", "A decode tok/s", "vs 0", "B prefill s", "vs 0", "B TTFT s"
    for (i = 1; i <= n; i++)
        printf "%10s  %14.3f %8.2fx  %14.3f %+8.1f%%  %10.3f%s\n", p[i], y[i], (y[1] > 0 ? y[i] / y[1] : 0),
               x[i], (x[1] > 0 ? 100 * (x[i] - x[1]) / x[1] : 0), t[i], (i == knee ? "   <- knee" : "")
    if (knee)
        printf "knee: PACE_STEPS=%s: A decodes %.2fx as fast as at 0 while B prefills %.1f%% longer; past it each\n" \
               "extra second of B prefill buys less A rate than on average (farthest above the chord, axes scaled)\n",
               p[knee], y[knee] / y[1], 100 * (x[knee] - x[1]) / x[1]
    else
        print "knee: none (the curve is no more than a straight line over this sweep)"
}' "$csv")
echo "$table"
knee=$(echo "$table" | sed -n 's/^knee: PACE_STEPS=\([0-9]*\):.*/\1/p')

echo "CSV: $csv"
if command -v "$gnuplot" >/dev/null 2>&1; then
    "$gnuplot" -e "csv='$csv'; out='$png'; knee='$knee'" plots/tradeoff1.gp && echo "PNG: $png"
else
    echo "PNG: not drawn ($gnuplot not found; make setup-plots installs it)"
fi
