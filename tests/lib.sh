# lib.sh -- sourced by the command-line tests, from the repository root: `. tests/lib.sh NAME`.
# Sets bin (PACESIM, else bin/pacesim; exit 1 if it is not built) and tmp (a scratch directory,
# removed on exit), and counts the checks in pass and fail: `ok WHAT` and `bad WHAT` print a
# line and count one, `check WHAT COMMAND...` is ok when COMMAND succeeds, else bad; `finish`
# prints NAME's counts and fails where a check did (a script's last command).
test_name=$1
bin=${PACESIM:-bin/pacesim}
[ -x "$bin" ] || { echo "$test_name: $bin not built"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() { echo "  ok   $1"; pass=$((pass + 1)); }
bad() { echo "  FAIL $1"; fail=$((fail + 1)); }
check() { local what=$1; shift; if "$@"; then ok "$what"; else bad "$what"; fi; }
finish() { echo "$test_name: $pass passed, $fail failed"; [ "$fail" = 0 ]; }
