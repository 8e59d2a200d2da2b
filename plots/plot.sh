#!/usr/bin/env bash
# plot.sh: `pacesim plot KIND CSV [-o OUT.png|OUT.svg] [options]`: pacesim's CSVs drawn with gnuplot.
#   rate      latency against load from a sweep's CSV (--sweep ... --csv): x the first swept key
#             (or --x COL), y the serving summary's p99 and median TTFT and TPOT where the CSV has
#             them (or --y COL,COL...); one curve per column and scenario file (plots/rate.gp);
#             a CSV of `run --error-bars P` (COL_lo, COL_hi for every y column): each point's range
#   cdf       the latency CDFs of one run's requests CSV (--requests): queueing, TTFT, TPOT and
#             end to end over the finished requests, p50/p90/p99 marked (plots/latency.gp)
#   tradeoff  the pacing trade-off from a PACE_STEPS sweep's CSV: A's decode rate against B's
#             prefill time, one point per PACE_STEPS (plots/tradeoff1.gp; a CSV of one file)
#   replicas  p99 TTFT against the rate per replica, a panel per router, a curve per number of
#             replicas, from the data CSV `pacesim plot replicas` writes (sim/plot_replicas.c
#             simulates them; plots/replicas.gp)
# OUT's extension picks PNG or SVG (default plots/out/KIND-<csv name>.png).  A CSV without the
# columns a kind needs: "CSV:1:1: plot KIND: ..." and exit 2; no gnuplot: exit 1.
set -u
here=$(cd "$(dirname "$0")" && pwd)
gnuplot=${GNUPLOT:-gnuplot}
die() { echo "$1" >&2; exit "${2:-2}"; }
[ $# -ge 2 ] || die "pacesim plot: expected KIND CSV (rate, cdf, tradeoff; see pacesim plot --help)"
kind=$1 csv=$2
shift 2
out='' xcol='' ycols='' title='' logy=0 seen=' '
while [ $# -gt 0 ]; do
    case $1 in
        -o|--out|--x|--y|--title)
            [ $# -ge 2 ] || die "pacesim plot: $1 needs a value"
            o=$1; [ "$o" = --out ] && o=-o
            case $seen in *" $o "*) die "pacesim plot: $1 given twice" ;; esac   # which one is meant?
            seen="$seen$o " ;;
    esac
    case $1 in
        -o|--out) out=$2; shift ;;
        --x) xcol=$2; shift ;;
        --y) ycols=$2; shift ;;
        --title) title=$2; shift ;;
        --logy) logy=1 ;;
        *) die "pacesim plot: unknown argument $1 (see pacesim plot --help)" ;;
    esac
    shift
done
case $kind in rate|cdf|tradeoff|replicas) ;;
    *) die "pacesim plot: unknown kind \"$kind\" (rate, cdf, tradeoff, replicas)" ;; esac
# the input as the binary's inputs are refused (sim/ydoc.c yd_open_input): a regular file only
if [ ! -e "$csv" ]; then die "$csv: cannot open: No such file or directory"
elif [ -d "$csv" ]; then die "$csv: cannot read: Is a directory"
elif [ ! -f "$csv" ]; then die "$csv: cannot read: not a regular file (a FIFO, device or socket)"
elif [ ! -r "$csv" ]; then die "$csv: cannot open: Permission denied"; fi
if [ "$(LC_ALL=C tr -dc '\000' < "$csv" | head -c 1 | wc -c)" -ne 0 ]; then
    ln=$(LC_ALL=C grep -naP -m1 '\x00' "$csv" 2>/dev/null | cut -d: -f1)
    die "$csv:${ln:-1}:1: plot $kind: a NUL byte: binary data, not a CSV file"
fi
[ -n "$out" ] || { mkdir -p plots/out; out=plots/out/$kind-$(basename "$csv" .csv).png; }
case $out in *.png) fmt=png ;; *.svg) fmt=svg ;; *) die "pacesim plot: -o $out: the name must end in .png or .svg" ;; esac
# gnuplot would fail on it with its own lines and exit 1
[ -d "$(dirname -- "$out")" ] || die "pacesim plot: -o $out: no directory $(dirname -- "$out")"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# the CSV as awk and gnuplot split it (at every comma): RFC 4180's quoted fields (a file name
# with a comma, as pacesim writes it) unquoted, a comma inside one as ';'; CR line ends dropped
in=$tmp/in.csv
: > "$in"
ln=$(awk -v out="$in" '{
        sub(/\r$/, ""); s = $0
        if (!index(s, "\"")) { print s > out; next }
        o = ""; q = 0; n = length(s)
        for (i = 1; i <= n; i++) {
            ch = substr(s, i, 1)
            if (q && ch == "\"" && substr(s, i + 1, 1) == "\"") { o = o ch; i++ }
            else if (ch == "\"") q = !q
            else o = o (q && ch == "," ? ";" : ch)
        }
        if (q) { print NR; exit }
        print o > out
    }' "$csv")
[ -z "$ln" ] || die "$csv:$ln:1: plot $kind: a quoted field not closed on its line"
header=$(head -n 1 "$in")
has() { printf '%s\n' "$header" | tr ',' '\n' | grep -qxF -- "$1"; }
need() { for c in "$@"; do has "$c" || die "$csv:1:1: plot $kind: no column $c (a CSV of $what)"; done; }
[ "$(awk 'NR > 1 && NF { n++ } END { print n + 0 }' "$in")" -gt 0 ] || die "$csv:2:1: plot $kind: no rows"
q() { printf '%s' "$1" | sed "s/'/''/g"; }   # a gnuplot single-quoted string's content
# rows whose columns COL... all hold a number (gnuplot fails on a plot of none)
numrows() { awk -F, -v C="$*" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; nc = split(C, k, " "); next }
    { ok = 1; for (j = 1; j <= nc; j++) if ($c[k[j]] !~ /^[-+]?[0-9.]+([eE][-+]?[0-9]+)?$/) ok = 0; n += ok } END { print n + 0 }' "$in"; }
# gnuplot, checked once the CSV is (a CSV's error is reported with or without it)
gp() {   # its messages in one line: the last it printed (its warnings on success dropped)
    command -v "$gnuplot" >/dev/null 2>&1 || die "pacesim plot: $gnuplot not found (make setup-plots installs gnuplot-nox)" 1
    "$gnuplot" "$@" 2> "$tmp/gp.err" \
        || die "pacesim plot: gnuplot failed: $(grep -v '^[[:space:]^]*$' "$tmp/gp.err" | tail -n 1 | head -c 300)" 1
}

case $kind in
cdf)
    what="requests (pacesim run --requests)"
    need arrival_s admitted_s finished_s ttft_s tpot_s
    [ "$(numrows finished_s ttft_s)" -gt 0 ] || die "$csv:1:1: plot cdf: no finished request to draw"
    [ -n "$title" ] || title=$(basename "$csv" .csv)
    gp -e "csv='$(q "$in")'; out='$(q "$out")'; fmt='$fmt'; title='$(q "$title")'" "$here/latency.gp" || exit 1 ;;
tradeoff)
    what="a PACE_STEPS sweep (pacesim run --sweep env.VLLM_1CAT_PREFILL_PACE_STEPS=... --csv)"
    need PACE_STEPS a_tok_s b_prefill_s scenario
    [ "$(numrows a_tok_s b_prefill_s)" -gt 0 ] || die "$csv:1:1: plot tradeoff: no row with both a_tok_s and b_prefill_s to draw"
    [ "$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "file") c = i; next } { f[$c] = 1 } END { print length(f) }' "$in")" = 1 ] \
        || die "$csv:1:1: plot tradeoff: the CSV holds several scenario files; plot each alone (plots/tradeoff.gp draws several)"
    cp "$in" "$tmp/t.csv"
    gp -e "csv='$tmp/t.csv'; out='$(q "$out")'; fmt='$fmt'" "$here/tradeoff1.gp" || exit 1 ;;
replicas)
    what="pacesim plot replicas --data"
    need router replicas rate_per_replica p99_ttft_s
    [ "$(numrows rate_per_replica p99_ttft_s)" -gt 0 ] || die "$csv:1:1: plot replicas: no row with a p99_ttft_s to draw"
    # blocks (router r, replicas k) of rows "x y", one replica's rows (router empty) in every router's
    awk -F, -v dat="$tmp/rep.dat" -v meta="$tmp/meta" '
        NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        NF {
            r = $c["router"]; n = $c["replicas"] + 0
            if (r != "" && !(r in ri)) { ri[r] = ++nr; rn[nr] = r }
            if (!(n in seen)) { seen[n] = 1; ns[++nn] = n }
            y = $c["p99_ttft_s"] == "" ? "?" : $c["p99_ttft_s"]
            rows[r SUBSEP n] = rows[r SUBSEP n] $c["rate_per_replica"] " " y "\n"
        }
        END {
            for (i = 2; i <= nn; i++) for (j = i; j > 1 && ns[j - 1] > ns[j]; j--) { t = ns[j]; ns[j] = ns[j - 1]; ns[j - 1] = t }
            if (nr == 0) { ri["any"] = nr = 1; rn[1] = "any" }
            for (i = 1; i <= nr; i++)
                for (k = 1; k <= nn; k++) {
                    b = rows[rn[i] SUBSEP ns[k]]
                    if (ns[k] == 1 && b == "") b = rows["" SUBSEP 1]
                    printf "%s\n\n", (b == "" ? "? ?\n" : b) > dat
                }
            for (i = 1; i <= nr; i++) printf "%s ", rn[i] > meta; printf "\n" > meta
            for (k = 1; k <= nn; k++) printf "%s ", ns[k] > meta; printf "\n" > meta
        }' "$in"
    if awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next } NF && ($c["replicas"] !~ /^[0-9]+$/ || $c["rate_per_replica"] !~ /^[0-9.eE+-]+$/) { bad = 1 } END { exit !bad }' "$in"; then
        die "$csv:1:1: plot replicas: columns replicas and rate_per_replica must be numeric in every row"
    fi
    gp -e "dat='$tmp/rep.dat'; routers='$(q "$(sed -n 1p "$tmp/meta")")'; ns='$(sed -n 2p "$tmp/meta")'; out='$(q "$out")'; fmt='$fmt'; title='$(q "$title")'" \
        "$here/replicas.gp" || exit 1 ;;
rate)
    what="a sweep (pacesim run --sweep ... --csv)"
    if [ -z "$xcol" ]; then
        [ "${header%%,*}" = point ] || die "$csv:1:1: plot rate: not a sweep's CSV (no point column first); name the x column with --x"
        xcol=$(printf '%s\n' "$header" | cut -d, -f2)
    fi
    if [ -z "$ycols" ]; then
        for c in p99_ttft_ms median_ttft_ms p99_tpot_ms median_tpot_ms; do has "$c" && ycols=$ycols${ycols:+,}$c; done
        [ -n "$ycols" ] || die "$csv:1:1: plot rate: no serving summary columns (p99_ttft_ms ...): run with --summary, or name them with --y"
    fi
    need "$xcol" file
    IFS=, read -ra ys <<< "$ycols"
    need "${ys[@]}"
    bars=1      # run --error-bars: every y column's range (COL_lo, COL_hi) drawn with it
    for c in "${ys[@]}"; do has "${c}_lo" && has "${c}_hi" || bars=0; done
    # one block per scenario file, rows "x y1 y2 ..." (with bars "x y1 lo1 hi1 ..."; empty values:
    # '?', gnuplot's missing)
    awk -F, -v X="$xcol" -v Y="$ycols" -v B="$bars" -v dat="$tmp/rate.dat" -v grp="$tmp/groups" '
        function v(col) { return $c[col] == "" ? "?" : $c[col] }
        NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; ny = split(Y, y, ","); next }
        {
            f = $c["file"]
            if (!(f in g)) { g[f] = ++ng; name[ng] = f }
            line = v(X)
            for (k = 1; k <= ny; k++) line = line " " v(y[k]) (B ? " " v(y[k] "_lo") " " v(y[k] "_hi") : "")
            rows[g[f]] = rows[g[f]] line "\n"
        }
        END {
            for (i = 1; i <= ng; i++) { printf "%s\n\n", rows[i] > dat; n = name[i]; sub(/.*\//, "", n); printf "%s ", n > grp }
        }' "$in"
    if awk -F, -v X="$xcol" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == X) c = i; next } $c !~ /^-?[0-9.eE+-]+$/ { bad = 1 } END { exit !bad }' "$in"; then
        die "$csv:1:1: plot rate: column $xcol is not numeric in every row"
    fi
    # a y column with no value to draw (empty, nan; with --logy none above 0): gnuplot failed on it
    none=$(awk -F, -v Y="$ycols" -v logy=$logy '
        NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; ny = split(Y, y, ","); next }
        { for (k = 1; k <= ny; k++) { v = $c[y[k]]; if (v ~ /^[-+]?[0-9.]+([eE][-+]?[0-9]+)?$/ && (!logy || v + 0 > 0)) n[k]++ } }
        END { for (k = 1; k <= ny; k++) if (!n[k]) { print y[k]; exit } }' "$in")
    [ -z "$none" ] || die "$csv:1:1: plot rate: column $none has no value to draw$([ $logy = 1 ] && echo ' above 0 (--logy)')"
    gp -e "dat='$tmp/rate.dat'; ny=${#ys[@]}; bars=$bars; ylabels='${ycols//,/ }'; groups='$(q "$(cat "$tmp/groups")")'; xlabel='$(q "$xcol")'; out='$(q "$out")'; fmt='$fmt'; title='$(q "$title")'; logy=$logy" \
        "$here/rate.gp" || exit 1 ;;
esac
echo "plot: $out"
