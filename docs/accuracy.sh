#!/usr/bin/env bash
# accuracy.sh: print the accuracy tables of README.md and docs/validation.md as Markdown, from
# runs made now.  Run from the repository root after `make setup` (bin/pacesim built).
#   docs/accuracy.sh            both tables
#   docs/accuracy.sh v100       the V100 cells against the published measurements
#   docs/accuracy.sh h200       every H200 recording re-priced by its set's profile
#   docs/accuracy.sh predict    every other V100 configuration (predictions, no published value beside them)
#   docs/accuracy.sh figures    the fork's step- and kernel-level V100 figures beside their simulation
#   docs/accuracy.sh readme     the README's two V100 tables (the published cells; the predictions grid)
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
}

# h200: every set under tests/data/replay/ as tests/rescore.sh scores it: B cut to 8 output
# tokens but for the serving recordings (h200-serve-*, the library's h200-llama8b-* and
# h200-qwen3-30b-a3b-*), the scenario from scenarios/ or else scenarios/lib/, the set's bound
# (5% or its target file's), and the run's step count against the recording's (equal, or within
# 1% for an open-loop workload, or the target file's third number).  A row that misses its set's bound or the step rule ends in '!'.
h200() {
    echo "| set / recording | decode steps: median / max err | mixed steps: median / max | prefill-only step | A tok/s pred / meas | B prefill s pred / meas | A while both decode | worst window | steps sim / meas | bound |"
    echo "|---|---|---|---|---|---|---|---|---|---|"
    for d in tests/data/replay/*/; do
        d=${d%/}
        local tmed=5 twin=5 tsteps=
        [ -f "$d/target" ] && read -r tmed twin tsteps < <(grep -v '^#' "$d/target")
        tsteps=${tsteps:-1}
        for f in "$d"/*.steps.csv; do
            n=$(basename "$f" .steps.csv) base=${n%-pace[0-9]*} pace=() cut=(--set workload.requests.B.output_tokens=8)
            [ "$base" != "$n" ] && pace=(--set "env.VLLM_1CAT_PREFILL_PACE_STEPS=${n##*-pace}")
            case $n in h200-serve-*|h200-llama8b-*|h200-qwen3-30b-a3b-*) cut=() ;; esac
            scn=scenarios/$base.yaml
            [ -f "$scn" ] || scn=scenarios/lib/$base.yaml
            "$bin" rescore "$scn" --measured "$f" "${cut[@]}" \
                --set "profile=$PWD/$d/profile.yaml" "${pace[@]}" | awk -v n="${d##*/}/$n" -v tmed="$tmed" -v twin="$twin" -v tsteps="$tsteps" '
                function pct(s) { sub(/%/, "", s); s += 0; return s < 0 ? -s : s }
                BEGIN { dm = mm = pm = a = b = c = "-"; w = "-"; wv = -1; bad = 0 }
                $1 == "decode"  && NF == 6 { dm = $5 " / " $6; if (pct($5) >= tmed) bad = 1 }
                $1 == "mixed"   && NF == 6 { mm = $5 " / " $6; if (pct($5) >= tmed) bad = 1 }
                $1 == "prefill" && NF == 6 { pm = $5; if (pct($5) >= tmed) bad = 1 }
                $1 == "steps" && NF >= 4 { st = $2 " / " $4; dd = $2 - $4; if (dd < 0) dd = -dd; if (dd > tsteps / 100 * $4) bad = 1 }
                /^   [a-z_0-9]+ +[-0-9.]+ +[-0-9.]+ +[-+][0-9.]+%$/ {
                    e = pct($4); if (e >= twin) bad = 1; if (e > wv) { wv = e; w = $1 " " $4 } }
                $1 == "a_tok_s"      { a = sprintf("%.2f / %.2f (%s)", $2, $3, $4) }
                $1 == "b_prefill_s"  { b = sprintf("%.2f / %.2f (%s)", $2, $3, $4) }
                $1 == "both_a_tok_s" { c = $4 }
                END { printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s%%%s |\n", n, dm, mm, pm, a, b, c, w, st, tmed, bad ? " !" : "" }'
        done
    done
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
}

case $what in
    v100) v100 ;;
    figures) figures ;;
    h200) h200 ;;
    predict) predict ;;
    all) v100; echo; predict; echo; h200 ;;
    *) echo "usage: docs/accuracy.sh [v100|h200|predict|figures|all]" >&2; exit 2 ;;
esac
