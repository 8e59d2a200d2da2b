#!/usr/bin/env bash
# readme.sh: the outputs README.md and the docs quote are what the commands print now.  A quote
# is a fenced block right after a ```sh block of one command (its lines may end in "\" and go
# on); the command runs (`make run` as the Makefile's recipe runs it, into a scratch directory)
# and every quoted line must come out, in order (lines may be left out between them): exactly,
# or up to a trailing "..." (the rest of the line cut), a line "..." alone standing for lines
# left out.  Without gnuplot a quoted "PNG: " line matches the "PNG: not drawn" line.
#   tests/readme.sh [FILE...]   README.md, docs/*.md and calib/README.md, or the FILEs;
#                               PACESIM=path overrides bin/pacesim
set -u
. tests/lib.sh readme
[ $# -gt 0 ] || set -- README.md docs/*.md calib/README.md

# the quotes: tmp/cmdN (the command), tmp/quoteN (the quoted lines), tmp/fileN (the file)
for f in "$@"; do awk -v dir="$tmp" -v f="$f" -v n0="$(ls "$tmp"/cmd* 2>/dev/null | wc -l)" 'BEGIN { n = n0 }
    /^```sh$/ { insh = 1; ncmd = 0; cmd = ""; next }
    insh && /^```$/ { insh = 0; after = NR; next }
    insh && cont { sub(/^[ \t]+/, ""); cmd = cmd " " $0; cont = sub(/[ \t]*\\$/, "", cmd); next }
    insh { if ($0 !~ /^[ \t]*(#|$)/) { ncmd++; sub(/[ \t]+#.*$/, ""); cmd = $0; cont = sub(/[ \t]*\\$/, "", cmd) } next }
    /^```$/ && !inq && NR == after + 1 && ncmd == 1 { inq = 1; n++; print cmd > (dir "/cmd" n); print f > (dir "/file" n); next }
    /^```$/ && inq { inq = 0; next }
    inq { print > (dir "/quote" n) }
' "$f"; done
recipe=$(awk '/^run:/ { r = 1; next } r && /^\t/ { if ($0 ~ /tradeoff\.sh/) { sub(/^\t@?/, ""); print } next } r { exit }' Makefile)
for c in "$tmp"/cmd*; do
    k=${c##*cmd}
    cmd=$(cat "$c")
    case $cmd in
        "make run")
            [ "$recipe" = "plots/tradeoff.sh scenarios/default.yaml" ] || { bad "make run's recipe is '$recipe', not the one this test runs"; continue; }
            PACESIM=$bin plots/tradeoff.sh scenarios/default.yaml 0,1,2,3,4,6,8,12,16,24,32 "$tmp/out" 2>&1 \
                | sed "s|$tmp/out|plots/out|g" > "$tmp/actual$k" ;;
        bin/pacesim\ *)
            # shellcheck disable=SC2086
            "$bin" ${cmd#bin/pacesim } > "$tmp/actual$k" 2>/dev/null ;;
        *) bad "$(cat "$tmp/file$k") quote: no rule to run '$cmd'"; continue ;;
    esac
    if awk -v gp="$(command -v gnuplot >/dev/null 2>&1 && echo 1)" '
        NR == FNR { q[++nq] = $0; next }
        { a[++na] = $0 }
        function match_(x, y) {
            if (x == y) return 1
            if (x ~ /\.\.\.$/ && index(y, substr(x, 1, length(x) - 3)) == 1) return 1
            if (!gp && x ~ /^PNG: / && y ~ /^PNG: /) return 1
            return 0
        }
        END {
            j = 1
            for (i = 1; i <= nq; i++) {
                if (q[i] ~ /^[ \t]*\.\.\.$/) continue
                while (j <= na && !match_(q[i], a[j])) j++
                if (j > na) { print "    quoted line not printed (in order): " q[i]; exit 1 }
                j++
            }
        }' "$tmp/quote$k" "$tmp/actual$k"; then
        ok "$(cat "$tmp/file$k") quote: $cmd ($(grep -vc '^[[:space:]]*\.\.\.$' "$tmp/quote$k") lines)"
    else
        bad "$(cat "$tmp/file$k") quote: $cmd"
    fi
done
[ "$pass" -ge 2 ] || bad "fewer than two quotes found"
finish
