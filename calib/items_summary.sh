#!/usr/bin/env bash
# items_summary.sh -- where a GPU replay's time went: a replay's --items CSV (pacesim-gpu replay
# --items) summed per step type and law, predicted beside measured.  Usage:
#   calib/items_summary.sh ITEMS.csv
# Prints, per (step type, law): the items, the predicted and the measured seconds (an item's
# predicted_s and measured_s are its `count` runs together) and their ratio, largest measured
# first; each GEMM row also shows the tensor-core rate its measured GEMMs of m >= 256 reached
# (TFLOP/s).  Bad input (a missing file, a header without the items' columns, a ragged row)
# exits 2 with one line.
set -u
items=${1:-}
if [ -z "$items" ] || [ "$items" = -h ] || [ "$items" = --help ]; then
    echo "usage: calib/items_summary.sh ITEMS.csv"
    [ -n "$items" ]; exit $?
fi
[ -f "$items" ] && [ -r "$items" ] || { echo "items_summary: $items: no such readable file" >&2; exit 2; }
head -1 "$items" | tr -d '\r' | grep -q '^step,type,law,a,b,c,d,count,predicted_s,measured_s' \
    || { echo "items_summary: $items:1:1: not a replay's --items CSV (header step,type,law,a,b,c,d,count,predicted_s,measured_s,...)" >&2; exit 2; }
awk -F, -v file="$items" '
    NR == 1 { next }
    {
        sub(/\r$/, "")
        if (NF < 10 || $9 !~ /^[0-9.eE+-]+$/ || $10 !~ /^[0-9.eE+-]+$/) {
            msg = sprintf("items_summary: %s:%d:1: a row of %d fields, or a time that is not a number", file, NR, NF)
            print msg > "/dev/stderr"
            bad = 1; exit 2
        }
        k = $2 SUBSEP $3
        if (!(k in n)) order[++nk] = k
        n[k]++; p[k] += $9; m[k] += $10
        if ($3 == "gemm" && $4 >= 256 && $10 > 0) { fl[$2] += 2 * $4 * $5 * $6 * $8; ft[$2] += $10 }
    }
    END {
        if (bad) exit 2
        printf("%-8s %-28s %7s %12s %12s %7s %9s\n", "step", "law", "items", "predicted s", "measured s", "ratio", "TFLOP/s")
        # largest measured first (insertion sort: a replay has a few dozen (type, law) pairs)
        for (i = 2; i <= nk; i++) for (j = i; j > 1 && m[order[j]] > m[order[j - 1]]; j--) { t = order[j]; order[j] = order[j - 1]; order[j - 1] = t }
        for (i = 1; i <= nk; i++) {
            split(order[i], kk, SUBSEP)
            rate = (kk[2] == "gemm" && ft[kk[1]] > 0) ? sprintf("%.0f", fl[kk[1]] / ft[kk[1]] / 1e12) : ""
            r = (m[order[i]] > 0) ? p[order[i]] / m[order[i]] : 0
            printf("%-8s %-28s %7d %12.4f %12.4f %7.3f %9s\n", kk[1], kk[2], n[order[i]], p[order[i]], m[order[i]], r, rate)
        }
    }' "$items"
