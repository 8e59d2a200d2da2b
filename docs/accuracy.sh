#!/usr/bin/env bash
# accuracy.sh: print the accuracy tables of README.md and docs/validation.md as Markdown, from
# runs made now.  Run from the repository root after `make setup` (bin/pacesim built).
#   docs/accuracy.sh            both tables
#   docs/accuracy.sh v100       the V100 cells against the published measurements
#   docs/accuracy.sh h200       every H200 recording re-priced by its set's profile, beside its runs
#   docs/accuracy.sh sets       one row a set of H200 recordings (README's table)
#   docs/accuracy.sh predict    every other V100 configuration (predictions, no published value beside them)
#   docs/accuracy.sh figures    the fork's step- and kernel-level V100 figures beside their simulation
#   docs/accuracy.sh readme     the V100 tables (the README's published cells; the predictions grid of docs/validation.md §1)
# The V100 rows are `pacesim run` of the scenario (the published values are the scenario's
# `reference:` block); the H200 rows are `pacesim rescore` exactly as tests/rescore.sh runs
# it.  A -paceN recording is its base scenario with env.VLLM_1CAT_PREFILL_PACE_STEPS=N.
set -eu
bin=${PACESIM:-bin/pacesim}
what=${1:-all}

v100() {
    echo "| scenario | A tok/s sim | published | err | B prefill s sim | published | err | mixed steps |"
    echo "|---|---|---|---|---|---|---|---|"
    for f in scenarios/v100-fp16-{nomtp,mtp4}-b{16k,131k}-{baseline,pdr}.yaml \
             scenarios/v100-fp16-mtp4-b131k-pdr{,-anypage}-pace4.yaml; do
        "$bin" run "$f" | awk -v f="$(basename "$f" .yaml)" '
            $1 == "a_tok_s"     { a = sprintf("%.2f | %.2f | %s", $2, $3, $4) }
            $1 == "b_prefill_s" { b = sprintf("%.1f | %.1f | %s", $2, $3, $4) }
            $1 == "mixed_steps" { m = $2 }
            END { printf "| %s | %s | %s | %d |\n", f, a, b, m }'
    done
}

# Every other configuration of the reference system's published runs: fp16 and fp8 KV, MTP off
# and 4, each knob combination, PACE_STEPS 0, 4 and 8, B = 16K and 131K.  Pacing and
# D256_BM32_ANY_PAGE are --set on the base scenario; rows that are a table above are left out.
predict() {
    echo "| scenario | settings | A tok/s | B prefill s | mixed steps | steps in the run |"
    echo "|---|---|---|---|---|---|"
    row() {  # row FILE LABEL [--set ...]
        local f=$1 label=$2; shift 2
        "$bin" run "$f" "$@" | awk -v f="$(basename "$f" .yaml)" -v l="$label" '
            $1 == "a_tok_s" { a = $2 } $1 == "b_prefill_s" { b = $2 } $1 == "mixed_steps" { m = $2 }
            $1 == "steps" { s = $2 }
            END { printf "| %s | %s | %.2f | %.1f | %d | %d |\n", f, l, a, b, m, s }'
    }
    local pace=env.VLLM_1CAT_PREFILL_PACE_STEPS any=env.VLLM_FLASH_V100_PREFILL_D256_BM32_ANY_PAGE
    for b in 16k 131k; do
        for k in baseline pdr; do
            for p in 4 8; do row "scenarios/v100-fp16-nomtp-b$b-$k.yaml" "PACE_STEPS=$p" --set "$pace=$p"; done
        done
        for k in baseline pdr; do
            for p in 4 8; do
                [ "$b$k$p" = 131kpdr4 ] && continue    # a released cell: the table above
                row "scenarios/v100-fp16-mtp4-b$b-$k.yaml" "PACE_STEPS=$p" --set "$pace=$p"
            done
        done
        for p in 0 4 8; do
            row "scenarios/v100-fp16-mtp4-b$b-baseline.yaml" "ANY_PAGE=1 PACE_STEPS=$p" --set "$any=1" --set "$pace=$p"
        done
        for p in 0 4 8; do
            [ "$b$p" = 131k4 ] && continue    # a released cell: the table above
            row "scenarios/v100-fp16-mtp4-b$b-pdr-anypage.yaml" "PACE_STEPS=$p" --set "$pace=$p"
        done
        for m in nomtp mtp4; do
            for k in baseline pdr; do
                for p in 0 4 8; do row "scenarios/v100-fp8-$m-b$b-$k.yaml" "PACE_STEPS=$p" --set "$pace=$p"; done
            done
        done
    done
    # the notes' DFlash2 q7 runs (fp8_e5m2, PREFIX_DECODE_ROWS, ANY_PAGE, PACE_STEPS=4, B = 16K), per-row
    # and grouped verify; acceptance 3.6 (the per-row solo figure's pair, 23 tok/s x 0.20 s)
    for g in 0 1; do
        row scenarios/v100-fp8-mtp4-b16k-pdr.yaml "DFlash2 q7 ANY_PAGE=1 PACE_STEPS=4 GROUPED_VERIFY=$g" \
            --set "engine.speculative_config={method: dflash2, num_speculative_tokens: 7}" \
            --set mtp_acceptance.mean_accepted=3.6 --set "$any=1" --set "$pace=4" \
            --set env.VLLM_FLASH_V100_GROUPED_VERIFY_MULTI_KV_HEAD=$g
    done
}

# h200: every set under tests/data/replay/ as tests/rescore.sh scores it: B cut to 8 output
# tokens but for the serving recordings (h200-serve-* and every library scenario), the
# scenario from scenarios/ or else scenarios/lib/, every measured run
# of a recording (<name>.steps.csv, <name>.runK.steps.csv) priced beside the others, the set's
# bound (3% on the medians and beyond the runs' range, 5% for a single-run set, or its target
# file's), and the run's step count against each recording's (within 1%, or the target file's
# third number).  Per step type: the median error (mean over the runs) and the spread between the
# runs (of the type's summed measured time over the same steps' price); per window: the worst
# error, the runs' spread, how far the prediction lies outside the runs' range ("inside": not at
# all), and the largest move of a window at 1% more step time.  A row that misses its set's
# bound or the step rule ends in '!'.
h200_rows() {  # one line per recording: set|recording|runs|fields...
    for d in tests/data/replay/*/; do
        d=${d%/}
        local tmed=3 twin=3 tsteps= single=0
        [ -f "$d/single-run" ] && single=1 tmed=5 twin=5
        [ -f "$d/target" ] && read -r tmed twin tsteps < <(grep -v '^#' "$d/target")
        tsteps=${tsteps:-1}
        for f in "$d"/*.steps.csv; do
            n=$(basename "$f" .steps.csv)
            case $n in *.run[0-9]*) continue ;; esac
            base=${n%-pace[0-9]*} pace=() cut=(--set workload.requests.B.output_tokens=8)
            [ "$base" != "$n" ] && pace=(--set "env.VLLM_1CAT_PREFILL_PACE_STEPS=${n##*-pace}")
            scn=scenarios/$base.yaml
            [ -f "$scn" ] || scn=scenarios/lib/$base.yaml
            case $scn in scenarios/lib/*|scenarios/h200-serve-*) cut=() ;; esac
            runs=(--measured "$f")
            for r in "$d/$n".run[0-9]*.steps.csv; do [ -f "$r" ] && runs+=(--measured "$r"); done
            "$bin" rescore "$scn" "${runs[@]}" "${cut[@]}" \
                --set "profile=$PWD/$d/profile.yaml" "${pace[@]}" | awk -v set="${d##*/}" -v n="$n" -v nr=$(( ${#runs[@]} / 2 )) \
                    -v tmed="$tmed" -v twin="$twin" -v tsteps="$tsteps" '
                function pct(s) { sub(/%/, "", s); s += 0; return s < 0 ? -s : s }
                BEGIN { t["decode"] = t["mixed"] = t["prefill"] = "-"; w = "-"; wv = -1; bv = -1; be = "inside"; sv = -1; sw = "-"; bad = 0 }
                # several runs: "type steps median sum spread verdict beyond (...)"
                nr > 1 && /^   (decode|mixed|prefill) / { t[$1] = $3 " (" $5 ")"; if (pct($3) >= tmed) bad = 1 }
                nr > 1 && /^   [a-z_0-9]+ +[-0-9.]+ +[-0-9.]+ +[-0-9.]+ +[-0-9.]+ +[-+][0-9.]+% / {
                    if (pct($6) > wv) { wv = pct($6); w = $1 " " $6 " (" $7 ")" }
                    if (pct($9) > bv) { bv = pct($9); be = $8 == "inside" ? "inside" : $1 " " $9 }
                    if (pct($9) >= twin) bad = 1
                    if (pct($10) > sv) { sv = pct($10); sw = $1 " " $10 } }
                nr > 1 && $1 == "steps" { st = $2 " /"; for (i = 4; $i ~ /^[0-9]+$/; i++) { st = st " " $i; dd = $2 - $i; if (dd < 0) dd = -dd; if (dd > tsteps / 100 * $i) bad = 1 } }
                # one run: the replay report "type steps pred meas median max"
                nr == 1 && /^   (decode|mixed|prefill) / && NF == 6 { t[$1] = $5 " (-)"; if (pct($5) >= tmed) bad = 1 }
                nr == 1 && /^   [a-z_0-9]+ +[-0-9.]+ +[-0-9.]+ +[-+][0-9.]+%$/ {
                    if (pct($4) > wv) { wv = pct($4); w = $1 " " $4 " (-)" } if (pct($4) >= twin) bad = 1; be = "one run" }
                nr == 1 && $1 == "steps" && NF >= 4 { st = $2 " / " $4; dd = $2 - $4; if (dd < 0) dd = -dd; if (dd > tsteps / 100 * $4) bad = 1 }
                END { printf "%s|%s|%d|%s|%s|%s|%s|%s|%s|%s|%s|%s|%.1f|%.1f\n", set, n, nr, t["decode"], t["mixed"], t["prefill"], w, be, sw,
                             st, tmed "/" twin "%", bad ? "!" : "", wv, bv < 0 ? 0 : bv }'
        done
    done
}
h200() {
    echo "| set / recording | runs | decode: median err (runs' spread) | mixed | prefill-only | worst window: error (runs' spread) | beyond the runs' range | +1% step time moves | steps sim / meas | bound |"
    echo "|---|---|---|---|---|---|---|---|---|---|"
    h200_rows | awk -F'|' '{ printf "| %s/%s | %s | %s | %s | %s | %s | %s | %s | %s | %s%s |\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12 == "!" ? " !" : "" }'
}
# one row a set: the largest median of each step type over its recordings, the worst window
# error, the largest distance beyond the runs' range, and the runs a recording has
h200_sets() {
    echo "| set | recordings x runs | decode median err | mixed | prefill-only | worst window error | beyond the runs' range (worst) | bound |"
    echo "|---|---|---|---|---|---|---|---|"
    h200_rows | awk -F'|' '
        function pv(s) { sub(/ .*/, "", s); sub(/%/, "", s); return s + 0 }
        { k = $1; if (!(k in rec)) order[++n] = k; rec[k]++; runs[k] = $3
          for (i = 4; i <= 6; i++) if ($i != "-" && pv($i) >= pv(m[k, i])) m[k, i] = $i
          if ($13 + 0 >= wv[k] + 0) { wv[k] = $13; w[k] = $7 }
          if (!(k in b) || $14 + 0 >= bv[k] + 0) { bv[k] = $14; b[k] = $8 }
          bound[k] = $11; bad[k] = bad[k] || $12 == "!" }
        END { for (j = 1; j <= n; j++) { k = order[j]
              printf "| %s | %d x %s | %s | %s | %s | %s | %s | %s%s |\n", k, rec[k], runs[k], m[k, 4], m[k, 5], m[k, 6], w[k], b[k], bound[k], bad[k] ? " !" : "" } }'
}

# The step- and kernel-level figures of the fork's notes and pull request (docs/validation.md,
# "The figures beside the cells"), each from the scenario that reproduces it; tests/check_v100.c
# pins them.
figures() {
    echo "| figure | source | simulated | figure |"
    echo "|---|---|---|---|"
    win() { "$bin" run "$1" "${@:3}" | awk -v w="$2" '$1 == w { print $2 }'; }
    mstep() { echo "$(win "$1" b_prefill_s) $(win "$1" mixed_steps)" | awk '{ print $1 / $2 }'; }
    local s
    for b in 16k 131k; do
        s=$(echo "$(mstep scenarios/v100-fp8-nomtp-b$b-baseline.yaml) $(mstep scenarios/v100-fp8-nomtp-b$b-pdr.yaml)" |
            awk '{ printf "%.2f s", $1 - $2 }')
        echo "| fp8, no MTP, B = $b: a mixed step's saving by PREFIX_DECODE_ROWS | PR #616 | $s | ~1.6 s |"
    done
    for f in nomtp-b16k nomtp-b131k mtp4-b16k mtp4-b131k; do
        echo "| fp16 $f, A beside B after B's prefill | SPEC §1 | $(win scenarios/v100-fp16-$f-pdr.yaml both_a_tok_s | awk '{ printf "%.1f tok/s", $1 }') | 19–27 tok/s each |"
    done
    s=$(echo "$(win scenarios/v100-decode1-mtp4-240k.yaml dec_s) $(win scenarios/v100-decode1-mtp4-240k.yaml dec_steps)" | awk '{ printf "%.3f s", $1 / $2 }')
    echo "| MTP4 decode-only step, one request at 240K | SPEC §1, handoff | $s | ~0.10 s |"
    s=$(echo "$(win scenarios/v100-decode2-mtp4-240k.yaml dec_s) $(win scenarios/v100-decode2-mtp4-240k.yaml dec_steps)" | awk '{ printf "%.3f s", $1 / $2 }')
    echo "| MTP4 decode-only step, A at 240K + B at 16K | SPEC §1, handoff | $s | 0.18 s |"
    for f in pdr-pace4 pdr-anypage-pace4; do
        s=$("$bin" run scenarios/v100-fp16-mtp4-b131k-$f.yaml --steps /dev/stdout --quiet 2>/dev/null | awk -F, '
            NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
            $c["type"] == "mixed" { seen = 1; t += ot; n += on; ot = on = 0; next }
            seen && $c["type"] == "decode" && $c["rows"] == 1 {
                ot += $c["dur_s"]; o = $c["detail"]; sub(/.*:out=/, "", o); on += o }
            END { if (t > 0) printf "%.1f tok/s", n / t; else printf "n/a" }')
        echo "| A between B's paced chunks, PACE 4, B = 131K ($f) | handoff | $s | ~21–25 tok/s |"
    done
    s=$(win scenarios/v100-decode1-fp8-mtp4-240k.yaml a_tok_s | awk '{ printf "%.1f tok/s", $1 }')
    echo "| fp8_e5m2 MTP4 per-row verify, one request at 240K | handoff | $s | 30 tok/s |"
    # DFlash2 q7, per-row and grouped verify (predictions: nothing fitted on DFlash2)
    local n g t v
    while IFS='|' read -r n g t v; do
        n=scenarios/v100-$n-fp8-dflash2-240k.yaml
        s=$(echo "$(win $n dec_s --set env.VLLM_FLASH_V100_GROUPED_VERIFY_MULTI_KV_HEAD=$g) $(win $n dec_steps --set env.VLLM_FLASH_V100_GROUPED_VERIFY_MULTI_KV_HEAD=$g)" |
            awk '{ printf "%.3f s", $1 / $2 }')
        echo "| fp8_e5m2 DFlash2 q7 step, $t | handoff, CHANGELOG | $s | $v |"
    done <<'EOT'
decode1|0|one request at 240K, per-row verify|0.20 s
decode1|1|one request at 240K, grouped verify|0.073 s
decode2|0|A 240K + B 16K, per-row verify|0.274 s
decode2|1|A 240K + B 16K, grouped verify|0.148 s
EOT
}

case $what in
    v100) v100 ;;
    figures) figures ;;
    h200) h200 ;;
    sets) h200_sets ;;
    predict) predict ;;
    all) v100; echo; predict; echo; h200 ;;
    *) echo "usage: docs/accuracy.sh [v100|h200|sets|predict|figures|all]" >&2; exit 2 ;;
esac
