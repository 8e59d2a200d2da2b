#!/usr/bin/env bash
# golden.sh: pacesim's reference outputs, byte for byte.  Runs a fixed set of commands (every
# reference scenario's table and CSV, pacing sweeps, --steps, validate, profile, rescore of every
# recording) and compares what they print with tests/data/golden/.  A change that is meant to
# alter an output regenerates the files with `tests/golden.sh --update` and commits them with it,
# so the diff shows exactly what moved.  --steps files are large: their SHA-256 is kept instead.
#   tests/golden.sh [--update]        PACESIM=path overrides bin/pacesim
set -u
bin=${PACESIM:-bin/pacesim}
gold=tests/data/golden
update=0
[ "${1:-}" = --update ] && update=1
[ -x "$bin" ] || { echo "golden: $bin not built"; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# the published experiments: every scenario but the benchmarks' (those are bench's)
ref=()
for f in scenarios/*.yaml; do
    case $f in scenarios/bench-*) ;; *) ref+=("$f") ;; esac
done
b16k=()
for f in scenarios/v100-*-b16k-*.yaml; do
    case $f in *-pace[0-9]*.yaml) ;; *) b16k+=("$f") ;; esac
done

# one line per case: NAME then the command; stdout and stderr and the exit code are kept
cases() {
    for f in "${ref[@]}"; do
        n=$(basename "$f" .yaml)
        echo "run-$n|run $f --csv @/run-$n.csv"
    done
    echo "run-all|run ${ref[*]} --csv @/run-all.csv --quiet"
    echo "sweep-b16k|run ${b16k[*]} --sweep env.VLLM_1CAT_PREFILL_PACE_STEPS=0,1,4,8 --csv @/sweep-b16k.csv --quiet --objective max:a_tok_s --constraint b_prefill_s<=1.10*base"
    for f in scenarios/h200-fp16-nomtp-b16k-baseline.yaml scenarios/h200-fp16-nomtp-b16k-pdr.yaml \
             scenarios/v100-fp16-nomtp-b131k-baseline.yaml scenarios/v100-fp16-nomtp-b131k-pdr.yaml; do
        n=$(basename "$f" .yaml)
        for p in 4 8; do echo "run-$n-pace$p|run $f --set env.VLLM_1CAT_PREFILL_PACE_STEPS=$p"; done
    done
    echo "steps-ref|run ${ref[*]} --steps @/steps-ref.csv --quiet"
    echo "bench-trace|run scenarios/bench-trace.yaml --csv @/bench-trace.csv"
    echo "validate|validate ${ref[*]}"
    for p in calib/profiles/*.yaml; do echo "profile-$(basename "$p" .yaml)|profile $p"; done
    for d in tests/data/replay/*/; do d=${d%/}; echo "profile-replay-${d##*/}|profile $d/profile.yaml"; done
}

# rescore: every recording with the profile its set was measured with, the set's profile.yaml
set_profile() { echo "$PWD/$1/profile.yaml"; }

run_case() {  # NAME COMMAND...
    local name=$1; shift
    local args=()
    for a in "$@"; do args+=("${a//@\//$out/}"); done
    "$bin" "${args[@]}" > "$out/$name.out" 2>&1
    echo "exit $?" >> "$out/$name.out"
}

while IFS='|' read -r name cmd; do
    # shellcheck disable=SC2086
    run_case "$name" $cmd
done < <(cases)
for d in tests/data/replay/*/; do
    d=${d%/}
    prof=$(set_profile "$d")
    for f in "$d"/*.steps.csv; do
        n=$(basename "$f" .steps.csv)
        case $n in *.run[0-9]*) continue ;; esac   # a later run: scored beside its first
        runs=(--measured "$f")
        for r in "$d/$n".run[0-9]*.steps.csv; do [ -f "$r" ] && runs+=(--measured "$r"); done
        base=${n%-pace[0-9]*}
        set_pace=()
        [ "$base" != "$n" ] && set_pace=(--set "env.VLLM_1CAT_PREFILL_PACE_STEPS=${n##*-pace}")
        scn=scenarios/$n.yaml
        [ -f "$scn" ] || scn=scenarios/$base.yaml
        [ -f "$scn" ] || scn=scenarios/lib/$base.yaml   # the library's replay targets
        cut=(--set workload.requests.B.output_tokens=8)
        case $scn in scenarios/lib/*|scenarios/h200-serve-*) cut=() ;; esac   # serving recordings: the scenario as it is
        "$bin" rescore "$scn" "${runs[@]}" "${cut[@]}" \
            --set "profile=$prof" "${set_pace[@]}" 2>&1 | sed '1{/^== re\(play\|score\) /d}' > "$out/rescore-${d##*/}-$n.out"
    done
done
# outputs name the profiles they price by; a clone's path is not part of the output
sed -i "s|$PWD/||g" "$out"/*.out
# the steps file is large: keep its digest; the other outputs are kept whole
(cd "$out" && sha256sum steps-ref.csv > steps-ref.csv.sha256 && rm steps-ref.csv)

if [ $update = 1 ]; then
    rm -rf "$gold"; mkdir -p "$gold"; cp "$out"/* "$gold"/
    echo "golden: $(ls "$gold" | wc -l) files written to $gold"
    exit 0
fi
pass=0 fail=0
for g in "$gold"/*; do
    n=$(basename "$g")
    if [ ! -f "$out/$n" ]; then echo "  FAIL $n: no longer produced"; fail=$((fail + 1))
    elif cmp -s "$g" "$out/$n"; then pass=$((pass + 1))
    else echo "  FAIL $n differs:"; diff "$g" "$out/$n" | head -20; fail=$((fail + 1)); fi
done
for o in "$out"/*; do
    n=$(basename "$o")
    [ -f "$gold/$n" ] || { echo "  FAIL $n: new output with no golden copy (tests/golden.sh --update)"; fail=$((fail + 1)); }
done
echo "golden: $pass passed, $fail failed"
[ $fail = 0 ]
