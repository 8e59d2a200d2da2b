#!/usr/bin/env bash
# traces.sh: traces in and imported.  The CSV trace's hash_ids column on the block pool (the
# prefix hits a request gets are the blocks it shares with what ran before, counted here by
# hand), and `pacesim trace import` of each format on small files written from the published
# schemas (tests/data/traces/): the rows it writes against the source's fields, the lengths,
# the bad rows refused with file:line:col and exit 2.
#   tests/traces.sh        PACESIM=path overrides bin/pacesim
set -u
. tests/lib.sh traces
d=tests/data/traces

# -- hash_ids: request 1 shares blocks 1 2 3 (1536 tokens), request 2 blocks 1 2 (1024)
"$bin" run "$d/hash-pool.yaml" --requests "$tmp/h.csv" --quiet
check "hash_ids: each request's prefix hit is the blocks it shares (0 1536 1024 0)" \
    test "$(awk -F, 'NR > 1 { print $1, $7 }' "$tmp/h.csv" | sort | awk '{ printf "%s ", $2 }')" = "0 1536 1024 0 "

# -- pacesim trace import: each format against its expected CSV (the source's fields read by
# hand: arrivals from the first request, token counts, ShareGPT's lengths at 4 characters a
# token with vLLM's pruning, Mooncake's hash_ids as 512-token blocks)
for c in azure:azure-2023.csv azure:azure-2024.csv burstgpt:burstgpt.csv burstgpt:burstgpt-sessions.csv \
         mooncake:mooncake.jsonl sharegpt:sharegpt.json; do
    fmt=${c%%:*} f=${c#*:}
    "$bin" trace import "$fmt" "$d/$f" -o "$tmp/$f.csv" 2>"$tmp/err"; rc=$?
    check "trace import $fmt $f: exit 0, the expected rows" sh -c "test $rc = 0 && cmp -s '$tmp/$f.csv' '$d/$f.expect'"
done
# a bad record: exit 2, and no part of a CSV left behind at -o
printf 'TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.5,1200,40\n2023-11-16 18:15:45.0,300,12\n' > "$tmp/back.csv"
"$bin" trace import azure "$tmp/back.csv" -o "$tmp/back-out.csv" 2>"$tmp/err"; rc=$?
check "trace import: arrivals going back refused, no partial CSV at -o" \
    sh -c "test $rc = 2 && test ! -e '$tmp/back-out.csv' && grep -q 'back.csv:3:1: azure: arrivals must not decrease' '$tmp/err'"
check "azure 2023: the request with 0 generated tokens left out, and said" \
    sh -c "'$bin' trace import azure '$d/azure-2023.csv' 2>&1 >/dev/null | grep -q '4 requests from 5 records.*1 failed or empty'"
check "sharegpt: three entries left out (one turn, a 1-token prompt, a 1250-token prompt)" \
    sh -c "'$bin' trace import sharegpt '$d/sharegpt.json' 2>&1 >/dev/null | grep -q '2 requests from 5 records.*3 pruned'"
check "sharegpt --no-prune keeps what has two turns" \
    test "$("$bin" trace import sharegpt "$d/sharegpt.json" --no-prune 2>/dev/null | tail -n +2 | cut -d, -f2,3 | tr '\n' ' ')" = "10,26 1,100 11,25 1250,10 "
"$bin" trace import sharegpt "$d/sharegpt.json" --no-prune --rate 2 --seed 5 > "$tmp/r1.csv" 2>/dev/null
"$bin" trace import sharegpt "$d/sharegpt.json" --no-prune --rate 2 --seed 5 > "$tmp/r2.csv" 2>/dev/null
check "sharegpt --rate: Poisson arrivals, the same for the same seed, increasing" \
    sh -c "cmp -s '$tmp/r1.csv' '$tmp/r2.csv' && awk -F, 'NR > 2 && \$1 <= p { exit 1 } NR > 1 { p = \$1 }' '$tmp/r1.csv'"
check "--speedup 2 halves the arrivals, --max-rows 2 keeps two" \
    test "$("$bin" trace import burstgpt "$d/burstgpt.csv" --speedup 2 --max-rows 2 2>/dev/null | tail -n +2 | cut -d, -f1 | tr '\n' ' ')" = "0.000000 3.000000 "
check "--max-model-len 1000 leaves out the longer requests" \
    test "$("$bin" trace import azure "$d/azure-2023.csv" --max-model-len 1000 2>/dev/null | tail -n +2 | cut -d, -f2 | tr '\n' ' ')" = "300 650 "

# the imported Mooncake trace on the block pool: request 1 shares blocks 10 11 (1024 tokens),
# request 3 shares 10 11 and the 76 tokens request 0's block 12 holds, four 16-token blocks (1088)
cp "$d/mooncake-pool.yaml" "$tmp/"
cp "$tmp/mooncake.jsonl.csv" "$tmp/mooncake.jsonl.expect"
sed -i "s|model: ../../../models|model: $PWD/models|" "$tmp/mooncake-pool.yaml"
"$bin" run "$tmp/mooncake-pool.yaml" --requests "$tmp/mp.csv" --quiet
check "mooncake on the pool: the prefix hits of the shared hash blocks (0 1024 0 1088)" \
    test "$(awk -F, 'NR > 1 { print $1, $7 }' "$tmp/mp.csv" | sort | awk '{ printf "%s ", $2 }')" = "0 1024 0 1088 "

# -- bad records: one line FILE:LINE:COL: FORMAT: message, exit 2
bad_case() {   # NAME FORMAT CONTENT EXPECTED-FRAGMENT
    printf '%b' "$3" > "$tmp/$1"
    "$bin" trace import "$2" "$tmp/$1" > /dev/null 2> "$tmp/e"; local rc=$?
    if [ "$rc" = 2 ] && [ "$(wc -l < "$tmp/e")" = 1 ] && grep -qF -- "$4" "$tmp/e"; then ok "bad $2 $1: $4"
    else bad "bad $2 $1: rc $rc: $(head -c 300 "$tmp/e")"; fi
}
bad_case a1.csv azure 'TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.5,10,4\n2023-11-16 25:00:00,10,4\n' \
    "a1.csv:3:1: azure: TIMESTAMP: expected a date and time"
bad_case a2.csv azure 'TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.5,1x0,4\n' "a2.csv:2:23: azure: ContextTokens: expected a token count"
bad_case a3.csv azure 'TIMESTAMP,Context,GeneratedTokens\n2023-11-16 18:15:46.5,10,4\n' "a3.csv:1:1: azure: the header must name the columns TIMESTAMP, ContextTokens and GeneratedTokens"
bad_case a4.csv azure 'TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.5,10,4\n2023-11-16 18:15:40,10,4\n' \
    "a4.csv:3:1: azure: arrivals must not decrease"
bad_case a6.csv azure 'TIMESTAMP,ContextTokens,GeneratedTokens\n2023-02-28 23:00:00,10,4\n2023-02-29 00:00:00,10,4\n' \
    "a6.csv:3:1: azure: TIMESTAMP: a day its month does not have"
bad_case a7.csv azure 'TIMESTAMP,ContextTokens,GeneratedTokens\n2023-04-31 00:00:00,10,4\n' "a7.csv:2:1: azure: TIMESTAMP: a day its month does not have"
bad_case a8.csv azure 'TIMESTAMP,ContextTokens,GeneratedTokens,ContextTokens\n2023-11-16 18:15:46.5,10,4,99\n' \
    "a8.csv:1:1: azure: the header names the column ContextTokens twice"
check "azure: 2024-02-29 (a leap day) taken" \
    sh -c "printf 'TIMESTAMP,ContextTokens,GeneratedTokens\n2024-02-29 00:00:00,10,4\n2024-03-01 00:00:00,10,4\n' > '$tmp/leap.csv' \
           && '$bin' trace import azure '$tmp/leap.csv' 2>/dev/null | tail -1 | grep -q '^86400.000000,10,4$'"
check "azure: a header after a UTF-8 byte-order mark read (it was refused: the header must name the columns)" \
    sh -c "printf '\\357\\273\\277TIMESTAMP,ContextTokens,GeneratedTokens\\n2023-11-16 18:15:46.5,10,4\\n' > '$tmp/bom.csv' \
           && '$bin' trace import azure '$tmp/bom.csv' 2>/dev/null | tail -1 | grep -q '^0.000000,10,4$'"
# a scenario's workload.trace after a byte-order mark: the same run as without it
bom_run() {
    { printf '\357\273\277'; cat scenarios/bench-trace.csv; } > "$tmp/bom-trace.csv"
    sed "s|\.\./|$PWD/|g; s|trace: bench-trace.csv|trace: $tmp/bom-trace.csv|" scenarios/bench-trace.yaml > "$tmp/bom.yaml"
    sed "s|\.\./|$PWD/|g; s|trace: bench-trace.csv|trace: $PWD/scenarios/bench-trace.csv|" scenarios/bench-trace.yaml > "$tmp/nobom.yaml"
    "$bin" run "$tmp/bom.yaml" --quiet --csv "$tmp/bom.csv" && "$bin" run "$tmp/nobom.yaml" --quiet --csv "$tmp/nobom.csv" \
        && [ "$(cut -d, -f3- "$tmp/bom.csv")" = "$(cut -d, -f3- "$tmp/nobom.csv")" ]
}
check "a workload.trace after a UTF-8 byte-order mark runs as without it (it was refused at line 1)" bom_run
bad_case a5.csv azure 'TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.5,10\n' "a5.csv:2:1: azure: 2 fields, the header has 3"
bad_case b1.csv burstgpt 'Timestamp,Model,Request tokens,Response tokens\n1,m,10,-4\n' "b1.csv:2:8: burstgpt: Response tokens: expected a token count"
bad_case b2.csv burstgpt 'Timestamp,Model,Request tokens,Response tokens\nsoon,m,10,4\n' "b2.csv:2:1: burstgpt: Timestamp: expected seconds"
bad_case b3.csv burstgpt 'Timestamp,Model,Request tokens,Response tokens\n1,m,0,0\n' "b3.csv: burstgpt: no request written (1 records read, 1 left out)"
bad_case m1.jsonl mooncake '{"timestamp": 0, "input_length": 10, "output_length": 2}\n{"timestamp": 5, "input_length": 10 "output_length": 2}\n' \
    "m1.jsonl:2:37: mooncake: expected ',' or '}'"
bad_case m2.jsonl mooncake '{"timestamp": 0, "input_length": 10.5, "output_length": 2}\n' "m2.jsonl:1:34: mooncake: input_length: expected a whole number >= 0"
bad_case m3.jsonl mooncake '{"timestamp": 0, "input_length": 600, "output_length": 2, "hash_ids": [1, 2, 3]}\n' \
    "m3.jsonl:1:1: mooncake: 3 hash_ids of 512 tokens for 600 input tokens: more blocks than the prompt holds"
bad_case m6.jsonl mooncake '{"timestamp": 1111111111111111111111111111111111111111111005, "input_length": 10, "output_length": 2}\n' "m6.jsonl:1:15: mooncake: timestamp: expected milliseconds between 0 and 1e15"
bad_case m4.jsonl mooncake '{"timestamp": 0, "output_length": 2}\n' "m4.jsonl:1:1: mooncake: a request needs timestamp, input_length and output_length"
bad_case m5.jsonl mooncake '{"timestamp": 0, "input_length": 10, "output_length": 2, "hash_ids": [1, -2]}\n' "m5.jsonl:1:74: mooncake: hash_ids: expected a whole number >= 0"
bad_case m7.jsonl mooncake '{"timestamp": 1, "timestamp": 5, "input_length": 10, "output_length": 2}\n' \
    "m7.jsonl:1:31: mooncake: timestamp: a second value in one request"
bad_case m8.jsonl mooncake '{"timestamp": 1, "input_length": 2000, "output_length": 2, "hash_ids": [1], "hash_ids": [2]}\n' \
    "m8.jsonl:1:89: mooncake: hash_ids: a second value in one request"
bad_case s4.json sharegpt '[{"conversations": [{"value": "aaaaaaaaaaaaaaaaaaaa"}, {"value": "bbbbbbbbbbbbbbbbbbbb"}], "conversations": []}]\n' \
    "s4.json:1:109: sharegpt: conversations: a second value in one entry"
bad_case s1.json sharegpt '{"conversations": []}\n' "s1.json:1:1: sharegpt: expected the array of conversations ('[')"
bad_case s2.json sharegpt '[{"conversations": [{"from": "human", "value": "abc\\q"}]}]\n' "s2.json:1:53: sharegpt: a string's escape must be one of"
bad_case s3.json sharegpt '[{"conversations": [{"from": "human", "value": "abc' "s3.json:1:52: sharegpt: a string not closed"
"$bin" trace import csv "$d/azure-2023.csv" > /dev/null 2> "$tmp/e"; rc=$?
check "an unknown format: exit 2 naming the four" sh -c "test $rc = 2 && grep -q 'azure, burstgpt, mooncake, sharegpt' '$tmp/e'"
"$bin" trace import azure "$tmp/none.csv" > /dev/null 2> "$tmp/e"; rc=$?
check "a missing file: exit 2, one line" sh -c "test $rc = 2 && test \$(wc -l < '$tmp/e') = 1"
"$bin" trace import azure "$d/azure-2023.csv" --speedup 0 > /dev/null 2> "$tmp/e"; rc=$?
check "--speedup 0: exit 2" test "$rc" = 2
# --speedup within the clock's 1e7 s: refused at the option below 1e-7 (a second of the trace
# past it; 1e-300 made the arrivals overflow) and above 1e7 (all of it under a second)
for k in 1e-300 5e-8 2e7 1e300 nan; do
    "$bin" trace import azure "$d/azure-2023.csv" --speedup $k > "$tmp/o" 2> "$tmp/e"; rc=$?
    check "--speedup $k: exit 2, one line naming the option and its range, nothing written" \
        sh -c "test $rc = 2 && test \$(wc -l < '$tmp/e') = 1 && ! test -s '$tmp/o' \
               && grep -q -- '--speedup $k: expected a number from 1e-07 to 1e+07' '$tmp/e'"
done
check "--speedup 1e-7 and 1e7 (the range's ends) taken" \
    sh -c "'$bin' trace import azure '$d/azure-2023.csv' --speedup 1e7 >/dev/null 2>&1 \
           && '$bin' trace import azure '$d/azure-2023.csv' --speedup 1e-7 --max-rows 1 >/dev/null 2>&1"
# an arrival the speedup puts past the clock's limit: refused at its record (12.75 s / 1e-6)
"$bin" trace import azure "$d/azure-2023.csv" --speedup 1e-6 > /dev/null 2> "$tmp/e"; rc=$?
check "--speedup 1e-6: the arrival past 1e7 s refused at its record (exit 2, FILE:5:1)" \
    sh -c "test $rc = 2 && test \$(wc -l < '$tmp/e') = 1 && grep -q 'azure-2023.csv:5:1: azure: arrival 1.275e+07 s' '$tmp/e'"
"$bin" trace import azure "$d/azure-2023.csv" --rate 5 > /dev/null 2> "$tmp/e"; rc=$?
check "--rate on an azure trace (its timestamps won unseen): exit 2" \
    sh -c "test $rc = 2 && grep -q -- '--rate is sharegpt' '$tmp/e'"

# sharegpt --rate so low that an arrival passes the clock (1e-300: its seconds overflowed a long and read as
# "arrivals must not decrease"), --chars-per-token so low that a length passes a token count's 12 digits
# (1e-300: every entry left out unsaid): refused at the entry
"$bin" trace import sharegpt "$d/sharegpt.json" --rate 1e-300 > /dev/null 2> "$tmp/e"; rc=$?
check "sharegpt --rate 1e-300: the arrival past 1e7 s refused at its entry (exit 2)" \
    sh -c "test $rc = 2 && test \$(wc -l < '$tmp/e') = 1 && grep -q 'sharegpt.json:37:2: sharegpt: arrival .* past the simulated clock' '$tmp/e'"
"$bin" trace import sharegpt "$d/sharegpt.json" --chars-per-token 1e-300 > /dev/null 2> "$tmp/e"; rc=$?
check "sharegpt --chars-per-token 1e-300: the first entry's length refused (exit 2)" \
    sh -c "test $rc = 2 && test \$(wc -l < '$tmp/e') = 1 && grep -q 'sharegpt.json:2:2: sharegpt: the prompt of 40 characters is 4e+301 tokens' '$tmp/e'"
# an option of one value given twice: refused (the first was dropped unsaid)
for args in "-o $tmp/a.csv --out $tmp/b.csv" "--max-rows 2 --max-rows 3" "--speedup 2 --speedup 3"; do
    # shellcheck disable=SC2086
    "$bin" trace import azure "$d/azure-2023.csv" $args > "$tmp/o" 2> "$tmp/e"; rc=$?
    check "trace import $args: exit 2, one line, nothing written" \
        sh -c "test $rc = 2 && test \$(wc -l < '$tmp/e') = 1 && ! test -s '$tmp/o' && grep -q 'given twice' '$tmp/e'"
done

# a write error (-o /dev/full): exit 1 and the error alone, not the summary of a CSV written whole beside it
"$bin" trace import azure "$d/azure-2023.csv" -o /dev/full > /dev/null 2> "$tmp/e"; rc=$?
check "trace import -o /dev/full: exit 1, one line, the write error" \
    sh -c "test $rc = 1 && test \$(wc -l < '$tmp/e') = 1 && grep -q 'write error' '$tmp/e'"

finish
