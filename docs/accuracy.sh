#!/usr/bin/env bash
# accuracy.sh: print the accuracy tables of README.md and docs/validation.md as Markdown, from
# runs made now.  Run from the repository root after `make setup` (bin/pacesim built).
#   docs/accuracy.sh            both tables
#   docs/accuracy.sh v100       the V100 cells against the published measurements
#   docs/accuracy.sh h200       every H200 recording re-priced by its set's profile
#   docs/accuracy.sh predict    V100 cells with no published value (predictions)
# The V100 rows are `pacesim run` of the scenario (the published values are the scenario's
# `reference:` block); the H200 rows are `pacesim rescore` exactly as tests/rescore.sh runs
# it.  A -paceN recording is its base scenario with env.VLLM_1CAT_PREFILL_PACE_STEPS=N.
set -eu
bin=${PACESIM:-bin/pacesim}
what=${1:-all}

v100() {
    echo "| scenario | A tok/s sim | published | err | B prefill s sim | published | err | mixed steps |"
    echo "|---|---|---|---|---|---|---|---|"
    for f in scenarios/v100-fp16-{nomtp,mtp4}-b{16k,131k}-{baseline,pdr}.yaml; do
        "$bin" run "$f" | awk -v f="$(basename "$f" .yaml)" '
            $1 == "a_tok_s"     { a = sprintf("%.2f | %.2f | %s", $2, $3, $4) }
            $1 == "b_prefill_s" { b = sprintf("%.1f | %.1f | %s", $2, $3, $4) }
            $1 == "mixed_steps" { m = $2 }
            END { printf "| %s | %s | %s | %d |\n", f, a, b, m }'
    done
}

predict() {
    echo "| scenario | settings | A tok/s | B prefill s | mixed steps |"
    echo "|---|---|---|---|---|"
    row() {  # row FILE LABEL [--set ...]
        local f=$1 label=$2; shift 2
        "$bin" run "$f" "$@" | awk -v f="$(basename "$f" .yaml)" -v l="$label" '
            $1 == "a_tok_s" { a = $2 } $1 == "b_prefill_s" { b = $2 } $1 == "mixed_steps" { m = $2 }
            END { printf "| %s | %s | %.2f | %.1f | %d |\n", f, l, a, b, m }'
    }
    for f in scenarios/v100-fp16-mtp4-b{16k,131k}-pdr-anypage.yaml scenarios/v100-fp8-nomtp-b{16k,131k}-{baseline,pdr}.yaml; do
        row "$f" "as written"
    done
    for f in scenarios/v100-fp16-nomtp-b{16k,131k}-{baseline,pdr}.yaml; do
        for p in 4 8; do row "$f" "PACE_STEPS=$p" --set "env.VLLM_1CAT_PREFILL_PACE_STEPS=$p"; done
    done
}

h200() {
    echo "| set / recording | decode steps: median / max err | mixed steps: median / max | prefill-only step | A tok/s pred / meas | B prefill s pred / meas | A while both decode |"
    echo "|---|---|---|---|---|---|---|"
    for d in tests/data/replay/*/; do
        d=${d%/}
        for f in "$d"/*.steps.csv; do
            n=$(basename "$f" .steps.csv) base=${n%-pace[0-9]*} pace=()
            [ "$base" != "$n" ] && pace=(--set "env.VLLM_1CAT_PREFILL_PACE_STEPS=${n##*-pace}")
            "$bin" rescore "scenarios/$base.yaml" --measured "$f" --set workload.requests.B.output_tokens=8 \
                --set "profile=$PWD/$d/profile.yaml" "${pace[@]}" | awk -v n="${d##*/}/$n" '
                $1 == "decode"  && NF == 6 { dm = $5 " / " $6 }
                $1 == "mixed"   && NF == 6 { mm = $5 " / " $6 }
                $1 == "prefill" && NF == 6 { pm = $5 }
                $1 == "a_tok_s"      { a = sprintf("%.2f / %.2f (%s)", $2, $3, $4) }
                $1 == "b_prefill_s"  { b = sprintf("%.2f / %.2f (%s)", $2, $3, $4) }
                $1 == "both_a_tok_s" { c = $4 }
                END { printf "| %s | %s | %s | %s | %s | %s | %s |\n", n, dm, mm, pm, a, b, c }'
        done
    done
}

case $what in
    v100) v100 ;;
    h200) h200 ;;
    predict) predict ;;
    all) v100; echo; h200 ;;
    *) echo "usage: docs/accuracy.sh [v100|h200|predict|all]" >&2; exit 2 ;;
esac
