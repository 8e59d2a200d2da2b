#!/usr/bin/env bash
# install_set.sh -- install one part of a calib/device_record.sh recording as a replay set
# (tests/data/replay/<SET>/: profile.yaml and every run of every scenario under the set's names).
# Usage: calib/install_set.sh SRC PART SET
#   SRC   record.tgz (device_record.sh's OUT/record.tgz) or the WORK tree it packs
#   PART  lib:M   the library model M's calib and runs (WORK/lib/lib-M/: profile.yaml and the runs)
#         env     the envelope set's (WORK/env/h200.yaml; the serving and reference runs in
#                 WORK/env-work/s/ and r/, or else in WORK/env/serve-steps.tgz, replay-steps.tgz)
#   SET   the set's folder name under tests/data/replay/ (DEST=DIR installs under DIR instead);
#         a folder that exists and is not empty is refused
# Checks, before anything is written: WORK/steps.log records the part's calib and, for every run
# K present, a runs step covering K of the same replay mode, all on one card (the calib's); each
# scenario has run 1 (<scenario>.steps.csv) and at least one more (<scenario>.runK.steps.csv);
# every file is a recording of the mode installed (REPLAY_MODE=b2b, the default: the set's names
# with --back-to-back's gpu_span_s column; REPLAY_MODE=item: <scenario>[.runK].item.csv, without
# it; REPLAY_MODE=layer: <scenario>[.runK].layer.csv, with it and --layer-order's layer_order;
# both installed under the set's names) of a scenario that exists (scenarios/ or scenarios/lib/).
# A set holds one queue order: b2b refuses a file with layer_order.
# Anything missing or mixed: one line on stderr, exit 2, nothing installed.
# Then it prints the `pacesim rescore` command of each recording (as tests/rescore.sh runs it)
# and, where bin/pacesim exists (PACESIM=path: another; a missing one: the commands only), runs
# them and prints each one's figures and a suggested target (median, beyond, steps in percent,
# the next whole percent over the worst, at least tests/rescore.sh's 3 3 1). It never writes the
# set's `target`: whether a miss is accepted, and why, is a human judgement.
set -u
me=install_set.sh
refuse() { echo "$me: $*" >&2; exit 2; }
[ $# = 3 ] || refuse "usage: calib/install_set.sh SRC PART SET (PART: lib:M or env)"
src=$1 part=$2 set=$3
root=$(cd "$(dirname "$0")/.." && pwd)
case ${REPLAY_MODE:-b2b} in
    b2b) mode=b2b ext=.steps.csv ;;
    item) mode=item ext=.item.csv ;;
    layer) mode=layer ext=.layer.csv ;;
    *) refuse "REPLAY_MODE must be b2b, item or layer, not '${REPLAY_MODE}'" ;;
esac
[[ $set =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]] || refuse "set name '$set': letters, digits, '.', '_', '-' only"
dest=${DEST:-$root/tests/data/replay}/$set
[ -d "$dest" ] && [ -n "$(ls -A "$dest" 2>/dev/null)" ] && refuse "$dest exists and is not empty: a set is installed once"
case $part in
    lib:?*) m=${part#lib:} calib_step=lib-calib:$m ;;
    env) m= calib_step=env-calib ;;
    *) refuse "part '$part': lib:M (a library model) or env" ;;
esac
[[ -z $m || $m =~ ^[A-Za-z0-9._-]+$ ]] || refuse "part '$part': no such library model name"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ -d "$src" ]; then
    w=$(cd "$src" && pwd)
elif [ -f "$src" ]; then
    mkdir "$tmp/w"
    tar xzf "$src" -C "$tmp/w" 2>/dev/null || refuse "$src: not a record.tgz (tar cannot unpack it)"
    w=$tmp/w
else
    refuse "$src: no such file or folder"
fi
[ -s "$w/steps.log" ] || refuse "$src: no steps.log (not a device_record.sh WORK tree)"
# the part's profile and the folders holding its runs
dirs=()
if [ -n "$m" ]; then
    prof=$w/lib/lib-$m/profile.yaml
    dirs=("$w/lib/lib-$m")
else
    prof=$w/env/h200.yaml
    for k in s:serve-steps r:replay-steps; do
        sub=${k%%:*} tgz=$w/env/${k#*:}$([ $mode != b2b ] && echo .$mode).tgz
        if [ -d "$w/env-work/$sub" ]; then dirs+=("$w/env-work/$sub")
        elif [ -s "$tgz" ]; then
            mkdir -p "$tmp/env"
            tar xzf "$tgz" -C "$tmp/env" 2>/dev/null || refuse "$tgz: cannot unpack"
            [ -d "$tmp/env/$sub" ] && dirs+=("$tmp/env/$sub")
        fi
    done
fi
[ -s "$prof" ] || refuse "$part: no profile (${prof#$w/} missing or empty)"
# steps.log: "== STEP on CARD[ (MODE)] from ..." then "   rc=N in S s" (a calib step's: "; calib: K points failed (LOGS)" after it); one line per step: STEP CARD MODE RC
awk '/^== [^ ]+ on [^ ]+/ { if (s != "") print s, c, md, rc; s = $2; c = $4; md = "-"; rc = "?"
                               if ($5 ~ /^\((b2b|item|layer),?\)?$/) { md = $5; gsub(/[(),]/, "", md) } next }
     /^== / { if (s != "") print s, c, md, rc; s = ""; next }
     /^   rc=/ && s != "" { rc = $1; sub(/rc=/, "", rc) }
     END { if (s != "") print s, c, md, rc }' "$w/steps.log" > "$tmp/steps"
card=$(awk -v st="$calib_step" '$1 == st { c = $2 } END { print c }' "$tmp/steps")
[ -n "$card" ] || refuse "steps.log records no $calib_step step: the profile's card is not known"
# the recordings: SCENARIO RUN FILE, run 1 the file without .runK
: > "$tmp/runs"
for d in "${dirs[@]}"; do
    for f in "$d"/*"$ext"; do
        [ -e "$f" ] || continue
        n=$(basename "$f" "$ext") k=1
        case $n in *.run[0-9]*) k=${n##*.run} n=${n%.run*} ;; esac
        [[ $k =~ ^[0-9]+$ ]] || refuse "${f#$w/}: not <scenario>[.runK]$ext"
        [ -n "$m" ] && [[ $n != h200-$m-* ]] && continue     # another model's (a folder of one model)
        echo "$n $k $f" >> "$tmp/runs"
    done
done
[ -s "$tmp/runs" ] || refuse "$part: no recordings (*$ext) in ${dirs[*]:-WORK/env-work}"
dup=$(awk '{ print $1, $2 }' "$tmp/runs" | sort | uniq -d | head -1)
[ -n "$dup" ] && refuse "scenario ${dup% *} run ${dup#* } recorded twice (serving and reference folders)"
while read -r n k f; do
    base=${n%-pace[0-9]*}
    [ -f "$root/scenarios/$base.yaml" ] || [ -f "$root/scenarios/lib/$base.yaml" ] \
        || refuse "${f#$w/}: no scenario $base.yaml in scenarios/ or scenarios/lib/"
    hdr=$(head -1 "$f")
    [[ $hdr == step,type* ]] && [ "$(wc -l < "$f")" -ge 2 ] || refuse "${f#$w/}: not a steps recording (no header, or no steps)"
    case $mode,$hdr in
        b2b,*layer_order*) refuse "${f#$w/}: a layer-order recording under the set's names among back-to-back runs (mixed modes)" ;;
        layer,*layer_order*|b2b,*gpu_span_s*|item,*) ;;
        layer,*) refuse "${f#$w/}: no layer_order column: not a --layer-order recording (mixed modes)" ;;
        *) refuse "${f#$w/}: item by item under the set's names among back-to-back runs (mixed modes)" ;;
    esac
    [ $mode = item ] && [[ $hdr == *gpu_span_s* ]] && refuse "${f#$w/}: a back-to-back recording under an item name (mixed modes)"
    # the step that recorded run k of n: lib-runs:M:K,.. ; env-serve (h200-serve-*) or env-ref
    if [ -n "$m" ]; then kind=lib-runs:$m
    else case $n in h200-serve-*) kind=env-serve ;; *) kind=env-ref ;; esac
    fi
    by=$(awk -v kind="$kind" -v k="$k" -v md="$mode" '{ s = $1; ks = s; sub(/:[^:]*$/, "", s); sub(/.*:/, "", ks) }
         s == kind && ($3 == md || $3 == "-") && ("," ks ",") ~ ("," k ",") { print $1, $2 }' "$tmp/steps")
    [ -n "$by" ] || refuse "${f#$w/}: steps.log records no $kind step of run $k ($mode): its card is not known"
    other=$(printf '%s\n' "$by" | awk -v c="$card" '$2 != c { print; exit }')
    [ -z "$other" ] || refuse "mixed cards: $calib_step on $card, ${other% *} (run $k of $n) on ${other#* }"
done < "$tmp/runs"
scns=$(awk '{ print $1 }' "$tmp/runs" | sort -u)
for n in $scns; do
    awk -v n="$n" '$1 == n && $2 == 1 { f = 1 } END { exit !f }' "$tmp/runs" || refuse "$n: no run 1 ($n$ext)"
    c=$(awk -v n="$n" '$1 == n' "$tmp/runs" | wc -l)
    [ "$c" -ge 2 ] || refuse "$n: one run ($n$ext alone): a set holds at least two runs of each scenario"
done
# install
mkdir -p "$dest" || refuse "cannot make $dest"
# a step that ended with another status (a scenario's replay failed or timed out there): its
# files present are installed, named here
if [ -n "$m" ]; then pat="^(lib-calib:$m|lib-runs:$m:)"; else pat="^env-(calib|serve:|ref:)"; fi
awk -v pat="$pat" '$1 ~ pat && $4 != "0" { print "note: steps.log: " $1 " on " $2 " ended rc=" $4 }' "$tmp/steps"
cp "$prof" "$dest/profile.yaml"
while read -r n k f; do
    if [ "$k" = 1 ]; then cp "$f" "$dest/$n.steps.csv"; else cp "$f" "$dest/$n.run$k.steps.csv"; fi
done < "$tmp/runs"
nrec=$(wc -l < "$tmp/runs")
echo "installed $dest: profile.yaml and $nrec runs of $(echo $scns | wc -w) scenarios ($mode), calib and runs on $card"
echo "no target written: tests/rescore.sh holds the set to 3 3 1 (median, beyond, steps %) unless a target says otherwise"
# the rescore commands, as tests/rescore.sh forms them
pacesim=${PACESIM:-$root/bin/pacesim}
rel=${dest#$root/}
worst_med=0 worst_win=0 worst_steps=0 ran=0
for n in $scns; do
    base=${n%-pace[0-9]*} args=()
    scn=scenarios/$base.yaml
    [ -f "$root/$scn" ] || scn=scenarios/lib/$base.yaml
    args+=(rescore "$scn" --measured "$rel/$n.steps.csv")
    for k in $(awk -v n="$n" '$1 == n && $2 > 1 { print $2 }' "$tmp/runs" | sort -n); do
        args+=(--measured "$rel/$n.run$k.steps.csv")
    done
    case $scn in scenarios/lib/*|scenarios/h200-serve-*) ;; *) args+=(--set workload.requests.B.output_tokens=8) ;; esac
    [ "$base" != "$n" ] && args+=(--set "env.VLLM_1CAT_PREFILL_PACE_STEPS=${n##*-pace}")
    case $rel in /*) args+=(--set "profile=$rel/profile.yaml") ;; *) args+=(--set "profile=\$PWD/$rel/profile.yaml") ;; esac
    echo "  bin/pacesim ${args[*]}"
    [ -x "$pacesim" ] || continue
    run=()
    for a in "${args[@]}"; do run+=("${a//\$PWD/$root}"); done
    out=$(cd "$root" && "$pacesim" "${run[@]}" 2>&1) || { echo "    rescore failed (rc $?): $(printf '%s\n' "$out" | tail -1)"; continue; }
    ran=$((ran + 1))
    fig=$(printf '%s\n' "$out" | awk '
        /^   (decode|mixed|prefill) / { v = $3; sub(/%/, "", v); if (v + 0 > med) { med = v + 0; mt = $1 } }
        /^   [a-z_0-9]+ +[-0-9.]+ +[-0-9.]+ +[-0-9.]+ +[-0-9.]+ +[-+][0-9.]+% / {
            e = $9; sub(/%/, "", e); e += 0; if (e < 0) e = -e; if (e > win) { win = e; wn = $1 } }
        /^   steps / { for (i = 4; $i ~ /^[0-9]+$/; i++) { d = ($2 - $i) / $i * 100; if (d < 0) d = -d; if (d > st) st = d } }
        END { printf "%.2f %.2f %.2f %s %s", med, win, st, mt == "" ? "-" : mt, wn == "" ? "-" : wn }')
    read -r fm fw fs fmt fwn <<< "$fig"
    echo "    worst step median $fm% ($fmt), worst window $fw% beyond the runs ($fwn), steps within $fs%"
    worst_med=$(awk -v a="$worst_med" -v b="$fm" 'BEGIN { print (b > a ? b : a) }')
    worst_win=$(awk -v a="$worst_win" -v b="$fw" 'BEGIN { print (b > a ? b : a) }')
    worst_steps=$(awk -v a="$worst_steps" -v b="$fs" 'BEGIN { print (b > a ? b : a) }')
done
if [ $ran -gt 0 ]; then
    sug=$(awk -v a="$worst_med" -v b="$worst_win" -v c="$worst_steps" '
        function up(x, lo) { x = int(x) + 1; return x > lo ? x : lo }
        BEGIN { printf "%d %d %d", up(a, 3), up(b, 3), up(c, 1) }')
    echo "suggested target (from these figures; write $rel/target yourself, a comment naming the misses, if you accept them): $sug"
elif [ ! -x "$pacesim" ]; then
    echo "($pacesim not built: run the commands above from the repository root, or make test's tests/rescore.sh)"
fi
exit 0
