#!/usr/bin/env bash
# inputs.sh: every command's input files, unusable ones refused alike: a missing file, a
# directory, an empty file, a file with a NUL byte (binary data) and a FIFO with no writer
# each give exit status 2 and one stderr line that names the file, at once (a FIFO must not
# be waited on), and nothing on stdout.  The commands' readers differ (libyaml documents,
# CSVs, recordings, traces, JSON lines, plots/plot.sh); the user's mistake is the same.
#   tests/inputs.sh        PACESIM=path overrides bin/pacesim
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh inputs
SCN=scenarios/h200-fp16-nomtp-b16k-pdr.yaml
REC=tests/data/replay/h200-envelope/h200-fp16-nomtp-b16k-pdr.steps.csv

# the unusable inputs, one set per extension (some commands tell a scenario from a CSV by it)
for x in yaml csv json jsonl; do
    mkdir "$tmp/dir.$x"
    : > "$tmp/empty.$x"
    printf 'point,a\n0,\0001\n' > "$tmp/nul.$x"
    mkfifo "$tmp/fifo.$x"
done

# refused KIND.EXT WHAT ARGS...: ARGS with @F replaced by the KIND.EXT file
refused() {
    local kind=$1 what=$2 f="$tmp/$1"
    shift 2
    local args=() a
    for a in "$@"; do args+=("${a//@F/$f}"); done
    timeout 20 "$bin" "${args[@]}" >"$tmp/out" 2>"$tmp/err"
    local rc=$? msg
    msg=$(head -c 300 "$tmp/err")
    if [ $rc -ne 2 ]; then bad "$what ($kind): exit $rc, expected 2: $msg"
    elif [ "$(wc -l <"$tmp/err")" -ne 1 ]; then bad "$what ($kind): $(wc -l <"$tmp/err") lines on stderr: $msg"
    elif ! grep -qF -- "$f" "$tmp/err"; then bad "$what ($kind): the message does not name the file: $msg"
    elif [ -s "$tmp/out" ]; then bad "$what ($kind): output on stdout"
    else pass=$((pass + 1)); fi
}

# every_kind EXT WHAT ARGS...: the five unusable inputs of that extension
every_kind() {
    local x=$1 what=$2 k
    shift 2
    for k in missing dir empty nul fifo; do refused "$k.$x" "$what" "$@"; done
}

every_kind yaml "run" run @F
every_kind yaml "validate" validate @F
every_kind yaml "points" points @F
every_kind yaml "capacity" capacity @F --slo ttft_p99=2
every_kind yaml "rescore: the scenario" rescore @F --measured "$REC"
every_kind csv "rescore: the recording" rescore "$SCN" --measured @F
every_kind csv "rescore: a second recording" rescore "$SCN" --measured "$REC" --measured @F
every_kind yaml "profile" profile @F
every_kind yaml "profile --compare" profile calib/profiles/h200.yaml --compare @F
every_kind yaml "run: the scenario's profile" validate "$SCN" --set profile=@F
every_kind yaml "run: the scenario's model" validate "$SCN" --set model=@F
every_kind csv "run: the scenario's trace" validate scenarios/bench-trace.yaml --set workload.trace=@F
every_kind yaml "plot replicas: the scenario" plot replicas @F -o "$tmp/x.png"
every_kind csv "plot replicas: a data CSV" plot replicas @F -o "$tmp/x.png"
for k in rate cdf tradeoff; do every_kind csv "plot $k" plot $k @F -o "$tmp/x.png"; done
every_kind csv "merge" merge @F
every_kind csv "merge: a second file" merge scenarios/bench-trace.csv @F
every_kind csv "best" best @F --objective max:a
every_kind csv "capacity --frontier" capacity --frontier @F
every_kind jsonl "trace import mooncake" trace import mooncake @F -o "$tmp/t.csv"
every_kind csv "trace import azure" trace import azure @F -o "$tmp/t.csv"
every_kind json "trace import sharegpt" trace import sharegpt @F -o "$tmp/t.csv"
every_kind json "model import" model import @F -o "$tmp/m.yaml"

# points assembles each file at its first point: a bad swept value is refused before any
# command is printed (as capacity --points does)
timeout 20 "$bin" points "$SCN" --sweep engine.max_num_seqs=0,4 >"$tmp/out" 2>"$tmp/err"
if [ $? -eq 2 ] && [ ! -s "$tmp/out" ] && grep -q -- '--sweep engine.max_num_seqs=0: expected a positive integer' "$tmp/err"; then
    pass=$((pass + 1))
else bad "points: a bad first swept value not refused: $(head -c 300 "$tmp/err")"; fi
# run --sweep: a bad swept value is refused before any run, once (not once per point of the
# other axes); a value bad only at some points (a KV cache too small for request A) gives one
# line for the first of them, not one per point
timeout 20 "$bin" run "$SCN" --sweep engine.max_num_seqs=4,0 --sweep env.VLLM_1CAT_PREFILL_PACE_STEPS=0,2 \
    >"$tmp/out" 2>"$tmp/err"
if [ $? -eq 2 ] && [ ! -s "$tmp/out" ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] \
    && grep -q -- '^pacesim: --sweep engine.max_num_seqs=0: expected a positive integer, got "0"' "$tmp/err"; then pass=$((pass + 1))
else bad "run --sweep: a bad swept value: $(head -c 300 "$tmp/err")"; fi
timeout 20 "$bin" run scenarios/default.yaml --sweep engine.num_gpu_blocks=400,1 --sweep engine.max_num_seqs=1,2 \
    --quiet -j 2 >"$tmp/out" 2>"$tmp/err"
if [ $? -eq 2 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] \
    && grep -q '^point 2 (.*): scenarios/default.yaml:[0-9]*:[0-9]*: workload.requests\[0\]: .*engine.num_gpu_blocks' "$tmp/err"
then pass=$((pass + 1))
else bad "run --sweep: points refused at set-up: $(head -c 300 "$tmp/err")"; fi
# model import -o: a FIFO with no reader is refused at once (no hang), as is its own input
timeout 20 "$bin" model import tests/data/hf/gemma-7b.json -o "$tmp/fifo.yaml" >"$tmp/out" 2>"$tmp/err"
if [ $? -eq 2 ] && grep -q 'a FIFO that no process reads' "$tmp/err"; then pass=$((pass + 1))
else bad "model import -o FIFO: $(head -c 300 "$tmp/err")"; fi
cp tests/data/hf/gemma-7b.json "$tmp/g.json"
timeout 20 "$bin" model import "$tmp/g.json" -o "$tmp/./g.json" >"$tmp/out" 2>"$tmp/err"
if [ $? -eq 2 ] && cmp -s tests/data/hf/gemma-7b.json "$tmp/g.json"; then pass=$((pass + 1))
else bad "model import -o its input: $(head -c 300 "$tmp/err")"; fi

# trace import -o and merge -o naming an input: refused, the input untouched (opening the
# output emptied it before it was read)
cp tests/data/traces/azure-2023.csv "$tmp/az.csv"
timeout 20 "$bin" trace import azure "$tmp/az.csv" -o "$tmp/./az.csv" >"$tmp/out" 2>"$tmp/err"
if [ $? -eq 2 ] && grep -q 'that is the trace it reads' "$tmp/err" && cmp -s tests/data/traces/azure-2023.csv "$tmp/az.csv"
then pass=$((pass + 1))
else bad "trace import -o its input: $(head -c 300 "$tmp/err")"; fi
cp scenarios/bench-trace.csv "$tmp/m.csv"
timeout 20 "$bin" merge scenarios/bench-trace.csv "$tmp/m.csv" -o "$tmp/./m.csv" >"$tmp/out" 2>"$tmp/err"
if [ $? -eq 2 ] && grep -q 'that is a CSV it merges' "$tmp/err" && cmp -s scenarios/bench-trace.csv "$tmp/m.csv"
then pass=$((pass + 1))
else bad "merge -o one of its inputs: $(head -c 300 "$tmp/err")"; fi

# merge: one point in two files (a copy of a point's CSV, two searches' points numbered alike): refused
"$bin" run scenarios/default.yaml --sweep engine.max_num_seqs=5 --point-index 1 --quiet --csv "$tmp/p1.csv" 2>/dev/null
cp "$tmp/p1.csv" "$tmp/p1-copy.csv"
timeout 20 "$bin" merge "$tmp/p1.csv" "$tmp/p1-copy.csv" >"$tmp/out" 2>"$tmp/err"
if [ $? -eq 2 ] && [ ! -s "$tmp/out" ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] \
   && grep -q "p1-copy.csv:2: point 1 is also at $tmp/p1.csv:2" "$tmp/err"
then pass=$((pass + 1))
else echo "  FAIL merge of one point twice: $(head -c 300 "$tmp/err")"; fail=$((fail + 1)); fi

# best: a constraint on base where the first point has no value says so (it read as no point meeting it)
printf 'point,a,c\n0,1,\n1,2,3\n' > "$tmp/nobase.csv"
"$bin" best "$tmp/nobase.csv" --objective max:a --constraint 'c<=base' >"$tmp/out" 2>"$tmp/err"
if grep -q 'no point satisfies the constraints (base: c is empty at the file.s first point)' "$tmp/out"
then pass=$((pass + 1))
else bad "best with an empty base: $(cat "$tmp/out" "$tmp/err" | head -c 300)"; fi

# a header after a UTF-8 byte-order mark (a spreadsheet's "CSV UTF-8"): merge read "<BOM>point" as a column of its
# own (two point columns, rows under the wrong ones); merge, best and capacity --frontier drop the mark
printf '\357\273\277point,a\n0,1\n' > "$tmp/bom.csv"; printf 'point,a\n1,2\n' > "$tmp/nobom.csv"
if [ "$("$bin" merge "$tmp/bom.csv" "$tmp/nobom.csv" 2>&1 | tr '\n' ' ')" = "point,a 0,1 1,2 " ] \
   && "$bin" best "$tmp/bom.csv" --objective max:a 2>&1 | grep -q 'best point 0 a=1'
then pass=$((pass + 1))
else bad "merge/best of a CSV with a byte-order mark: $("$bin" merge "$tmp/bom.csv" "$tmp/nobom.csv" 2>&1 | head -c 200)"; fi

# merge -o twice (the first was dropped unsaid), or without its value (read as an unknown option)
for args in "-o $tmp/m1.csv --out $tmp/m2.csv:--out given twice" "-o:-o needs a value"; do
    # shellcheck disable=SC2086
    timeout 20 "$bin" merge scenarios/bench-trace.csv ${args%%:*} >"$tmp/out" 2>"$tmp/err"
    if [ $? -eq 2 ] && [ ! -s "$tmp/out" ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q -- "${args#*:}" "$tmp/err"
    then pass=$((pass + 1))
    else bad "merge ${args%%:*}: $(head -c 300 "$tmp/err")"; fi
done

# merge and best: one CSV given twice (the same name, ./ before it, a hard link) is refused,
# nothing written: its rows would count twice
"$bin" run scenarios/default.yaml --sweep engine.max_num_seqs=1,2 --quiet --csv "$tmp/d.csv" 2>/dev/null
"$bin" run scenarios/default.yaml --sweep engine.max_num_seqs=3 --point-index 2 --quiet --csv "$tmp/e.csv" 2>/dev/null
ln "$tmp/d.csv" "$tmp/d-link.csv"
for args in "merge $tmp/d.csv $tmp/./d.csv" "merge $tmp/d.csv $tmp/e.csv $tmp/d-link.csv" \
            "best $tmp/d.csv $tmp/d.csv --objective max:steps"; do
    # shellcheck disable=SC2086
    timeout 20 "$bin" $args >"$tmp/out" 2>"$tmp/err"
    if [ $? -eq 2 ] && [ ! -s "$tmp/out" ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q ': the same file as ' "$tmp/err"
    then pass=$((pass + 1))
    else bad "${args%% *} of one CSV twice: $(head -c 300 "$tmp/err")"; fi
done

cp "$REC" "$tmp/rec.csv"
timeout 20 "$bin" rescore "$SCN" --set workload.requests.B.output_tokens=8 --measured "$tmp/rec.csv" \
    --steps "$tmp/./rec.csv" >"$tmp/out" 2>"$tmp/err"
if [ $? -eq 2 ] && grep -q 'that is a recording it reads' "$tmp/err" && cmp -s "$REC" "$tmp/rec.csv"
then pass=$((pass + 1))
else bad "rescore --steps its recording: $(head -c 300 "$tmp/err")"; fi

# a run's output naming a file its scenario reads (the profile, the trace): refused, the file
# untouched (the output was opened, and the profile emptied, before the scenario was read)
cp calib/profiles/v100-pcie-32gb-tp2.yaml "$tmp/p.yaml"
sed "s|^profile: .*|profile: $tmp/p.yaml|; s|^model: \.\./|model: $PWD/|" scenarios/default.yaml > "$tmp/s.yaml"
timeout 20 "$bin" run "$tmp/s.yaml" --csv "$tmp/./p.yaml" --quiet >"$tmp/out" 2>"$tmp/err"
if [ $? -eq 2 ] && grep -q 'that is an input of the run' "$tmp/err" && cmp -s calib/profiles/v100-pcie-32gb-tp2.yaml "$tmp/p.yaml"
then pass=$((pass + 1))
else bad "run --csv naming the scenario's profile: $(head -c 300 "$tmp/err")"; fi
cp scenarios/bench-trace.csv "$tmp/t.csv"
timeout 20 "$bin" run scenarios/bench-trace.yaml --set "workload.trace=$tmp/t.csv" --requests "$tmp/t.csv" --quiet \
    >"$tmp/out" 2>"$tmp/err"
if [ $? -eq 2 ] && grep -q 'that is an input of the run' "$tmp/err" && cmp -s scenarios/bench-trace.csv "$tmp/t.csv"
then pass=$((pass + 1))
else bad "run --requests naming the scenario's trace: $(head -c 300 "$tmp/err")"; fi

# a trace whose bad row lies past where the run stops (a row after the stop, arriving earlier):
# run refuses it as validate does, at that row, before it runs (a run reads the whole trace)
printf 'arrival_s,prompt_tokens,output_tokens\n0.5,100,10\n2e6,100,10\n1,100,10\n' > "$tmp/late.csv"
for c in validate run; do
    timeout 20 "$bin" $c scenarios/bench-trace.yaml --set "workload.trace=$tmp/late.csv" >"$tmp/out" 2>"$tmp/err"
    if [ $? -eq 2 ] && [ "$(wc -l < "$tmp/err")" = 1 ] && grep -q "late.csv:4:1: trace: invalid row" "$tmp/err"
    then pass=$((pass + 1))
    else bad "$c of a trace with a bad row past the stop: $(head -c 300 "$tmp/err")"; fi
done

echo "inputs: $pass checks passed, $fail failed"
[ $fail -eq 0 ]
