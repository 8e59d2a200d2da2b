#!/usr/bin/env bash
# bad_inputs.sh: run every case of the bad-input catalogue (tests/data/bad/) through
# `pacesim run` and `pacesim validate` and check that each is refused cleanly:
# exit status 2, exactly one line on stderr, and that line holds the case's expected
# fragment (its first line: "# expect: FRAGMENT", e.g. ":12:5: engine.max_num_seqs").
#   tests/data/bad/*.yaml           scenarios
#   tests/data/bad/profiles/*.yaml  profiles, run as --set profile=FILE on
#                                   tests/data/bad/profiles/_base.scenario
# Both commands assemble a scenario the same way (sim/setup.h) and validate reads the whole
# trace, so every case is refused by both alike.  "# modes: run" limits a case to `run`: only
# for what a run can meet at some simulated time and nothing before it can (the case's header
# says why); no case needs it.
# "# expect: ok" marks a case that must run (exit 0): the catalogue's accepted edge cases.
# PACESIM=path/to/pacesim selects the binary (the ASan build reuses this script);
# BAD_SHOW=1 prints every message.
set -u
cd "$(dirname "$0")/.."
PACESIM=${PACESIM:-bin/pacesim}
DIR=tests/data/bad
pass=0
fail=0
err=$(mktemp)
out=$(mktemp)
trap 'rm -f "$err" "$out"' EXIT

# check NAME EXPECT MODE ARGS...: one invocation
check() {
    local name=$1 expect=$2 mode=$3
    shift 3
    timeout 60 "$PACESIM" "$mode" "$@" >"$out" 2>"$err"
    local rc=$? lines msg
    lines=$(wc -l <"$err")
    msg=$(head -c 400 "$err")
    [ -n "${BAD_SHOW:-}" ] && printf '%-34s %-8s rc=%d %s\n' "$name" "$mode" "$rc" "$msg"
    if [ "$expect" = ok ]; then
        if [ $rc -ne 0 ]; then
            echo "FAIL $name ($mode): expected success, got rc $rc: $msg"
            fail=$((fail + 1)); return
        fi
    elif [ $rc -ne 2 ]; then
        echo "FAIL $name ($mode): expected exit 2, got $rc: $msg"
        fail=$((fail + 1)); return
    elif [ "$lines" -ne 1 ] || [ "$(wc -c <"$err")" -gt 1100 ]; then
        echo "FAIL $name ($mode): expected one line on stderr, got $lines: $msg"
        fail=$((fail + 1)); return
    elif ! grep -qF -- "$expect" "$err"; then
        echo "FAIL $name ($mode): message lacks \"$expect\": $msg"
        fail=$((fail + 1)); return
    fi
    pass=$((pass + 1))
}

# header FILE KEY: the value of "# KEY: value" in the first lines of FILE
header() { head -n 3 "$1" | LC_ALL=C sed -n "s/^# $2: //p" | head -n 1; }

[ -x "$PACESIM" ] || { echo "bad_inputs: $PACESIM not built"; exit 1; }
for f in "$DIR"/*.yaml; do
    expect=$(header "$f" expect)
    modes=$(header "$f" modes)
    [ -n "$expect" ] || { echo "FAIL $f: no '# expect:' line"; fail=$((fail + 1)); continue; }
    check "$(basename "$f")" "$expect" run "$f"
    [ "$modes" = run ] || check "$(basename "$f")" "$expect" validate "$f"
done
for f in "$DIR"/profiles/*.yaml; do
    expect=$(header "$f" expect)
    [ -n "$expect" ] || { echo "FAIL $f: no '# expect:' line"; fail=$((fail + 1)); continue; }
    modes=$(header "$f" modes)
    b=$(basename "$f")
    check "profiles/$b" "$expect" run "$DIR/profiles/_base.scenario" --set "profile=$b"
    [ "$modes" = run ] || check "profiles/$b" "$expect" validate "$DIR/profiles/_base.scenario" --set "profile=$b"
done
echo "bad_inputs: $pass checks passed, $fail failed"
[ $fail -eq 0 ]
