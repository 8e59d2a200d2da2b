#!/usr/bin/env bash
# help_opts.sh: every command's options, its --help and the docs agree (and the docs' make targets).
#   1. each long option a command's --help lists (its usage lines and its "  --opt" lines) is
#      one the command accepts;
#   2. each long option the command accepts is listed in its --help: the candidates are every
#      "--name" string literal in sim/*.c, each given to the command (with a value that names
#      no file), accepted unless the command answers that it does not know it;
#   3. an option run's parser would take but this command ignores (validate --csv) is refused;
#   4. each long option that README.md and docs/*.md show after `pacesim CMD` (in ```sh
#      blocks and in backquoted spans) is one CMD accepts;
#   5. each `make TARGET` README.md, docs/*.md and calib/README.md name is a Makefile target;
#   6. each image they show is committed.
#   tests/help_opts.sh        PACESIM=path overrides bin/pacesim
set -u
. tests/lib.sh help_opts

# command name (as the docs spell it) -> the words that start it
cmds="run points merge best capacity validate profile rescore model trace plot plotreplicas"
words() { case $1 in model) echo "model import" ;; trace) echo "trace import azure" ;;
                     plot) echo "plot rate $tmp/none/a.csv" ;; plotreplicas) echo "plot replicas" ;; *) echo "$1" ;; esac; }
helpof() { case $1 in plotreplicas) echo plot ;; *) echo "$1" ;; esac; }

candidates=$(grep -ohE '"--[a-z][a-z0-9-]*"' sim/*.c | tr -d '"' | sort -u | grep -vxE -- '--help|--version')
unknown_re='unknown option|not an option|unexpected argument|unknown argument|unknown kind'

accepts() {  # accepts CMD OPT: the command does not refuse OPT as unknown
    local w
    w=$(words "$1")
    # shellcheck disable=SC2086
    ! timeout 20 "$bin" $w "$2" "$tmp/none/x" < /dev/null 2>&1 >/dev/null | grep -E -- "$unknown_re" | grep -qF -- "$2"
}

for c in $cmds; do
    help=$("$bin" "$(helpof "$c")" --help 2>&1)
    # the listed options: the usage lines (up to the first blank line) and the option lines
    # (an option line's first option: its text may name other commands' options; -o and -j
    # stand for --out and --jobs)
    case $c in
        plot) usage=$(printf '%s\n' "$help" | sed -n '1p') ;;
        plotreplicas) usage=$(printf '%s\n' "$help" | sed -n '2,3p') ;;
        *) usage=$(printf '%s\n' "$help" | awk '/^$/ { exit } { print }') ;;
    esac
    listed=$( { printf '%s\n' "$usage" | grep -oE -- '--?[a-z][a-z0-9-]*'
                [ "$c" = plot ] || [ "$c" = plotreplicas ] ||
                    printf '%s\n' "$help" | grep -oE -- '^  (-[a-z]( [A-Z]+)?, )?--[a-z][a-z0-9-]*' | grep -oE -- '--[a-z][a-z0-9-]*$'
              } | sort -u)
    missing="" unlisted=""
    for o in $listed; do case $o in --*) accepts "$c" "$o" || missing="$missing $o" ;; esac; done
    for o in $candidates; do
        printf '%s\n' "$listed" | grep -qxF -- "$o" && continue
        case $o in --out) printf '%s\n' "$listed" | grep -qx -- -o && continue ;;
                   --jobs) printf '%s\n' "$listed" | grep -qx -- -j && continue ;; esac
        accepts "$c" "$o" && unlisted="$unlisted $o"
    done
    if [ -n "$missing" ]; then bad "$(words "$c") --help lists options it refuses:$missing"
    else ok "$(words "$c"): every option its --help lists is accepted"; fi
    if [ -n "$unlisted" ]; then bad "$(words "$c") accepts options its --help does not list:$unlisted"
    else ok "$(words "$c"): every option it accepts is in its --help"; fi
done

# an option the command would ignore is refused: one line, exit 2, nothing written
one_line_2() {  # one_line_2 OUTFILE COMMAND...: exit 2, one stderr line naming the option, no OUTFILE
    local outf=$1; shift
    "$@" > /dev/null 2> "$tmp/err"; local rc=$?
    [ "$rc" = 2 ] && [ "$(wc -l < "$tmp/err")" = 1 ] && grep -q 'is not an option of' "$tmp/err" && [ ! -e "$outf" ]
}
check "validate --csv refused" one_line_2 "$tmp/v.csv" "$bin" validate scenarios/default.yaml --csv "$tmp/v.csv"
check "points --requests refused" one_line_2 "$tmp/r.csv" "$bin" points scenarios/default.yaml --requests "$tmp/r.csv"
check "best --steps refused" one_line_2 "$tmp/s.csv" "$bin" best tests/data/golden/does-not-matter.csv --steps "$tmp/s.csv"
check "run -o refused" one_line_2 "$tmp/o" "$bin" run scenarios/default.yaml -o "$tmp/o"

# 4. the docs' commands: `pacesim CMD ... --opt` (a command line may continue over "\" lines)
for f in README.md docs/*.md; do
    awk '
        /^```sh$/ { insh = 1; next } insh && /^```$/ { insh = 0; next }
        insh { line = cont ? line " " $0 : $0; cont = sub(/\\$/, "", line); if (!cont) { print line; line = "" } next }
        { s = $0; while (match(s, /`[^`]*pacesim [a-z][^`]*`/)) { print substr(s, RSTART + 1, RLENGTH - 2); s = substr(s, RSTART + RLENGTH) } }
    ' "$f" | grep -oE 'pacesim [a-z]+( [a-z]+)?[^|;&<>`]*' | while read -r _ cmd sub rest; do
        case $cmd in
            model|trace) rest="$rest" ;;
            plot) [ "$sub" = replicas ] && cmd=plotreplicas; rest="$sub $rest" ;;
            *) rest="$sub $rest" ;;
        esac
        case " $cmds " in *" $cmd "*) ;; *) continue ;; esac
        for o in $(printf '%s\n' "$rest" | sed 's/#.*//' | grep -oE -- '(^| )--[a-z][a-z0-9-]*' | tr -d ' '); do
            echo "$f $cmd $o"
        done
    done
done | sort -u > "$tmp/docopts"
n=0 wrong=""
while read -r f c o; do
    n=$((n + 1))
    accepts "$c" "$o" || wrong="$wrong $f:$(words "$c") $o;"
done < "$tmp/docopts"
[ "$n" -ge 40 ] || bad "only $n documented options found (the extraction broke)"
if [ -n "$wrong" ]; then bad "documented options the command refuses:$wrong"
else ok "all $n options the docs show after pacesim CMD are accepted"; fi

# 5. every `make TARGET` the docs name is a target of the Makefile
targets=$(cat README.md docs/*.md calib/README.md | grep -oE '(^|`|\()make [a-z][a-z0-9-]*' | grep -oE '[a-z][a-z0-9-]*$' | sort -u)
nt=0 nomake=""
for t in $targets; do nt=$((nt + 1)); make -n "$t" > /dev/null 2>&1 || nomake="$nomake $t"; done
[ "$nt" -ge 10 ] || bad "only $nt make targets found in the docs (the extraction broke)"
if [ -n "$nomake" ]; then bad "make targets the docs name that the Makefile lacks:$nomake"
else ok "all $nt make targets the docs name exist"; fi

# 6. every image README.md and the docs show is committed (images are ignored unless added)
ni=0 noimg=""
for f in README.md docs/*.md calib/README.md; do
    for img in $(grep -oE '!\[[^]]*\]\([^)]*\)' "$f" | sed -E 's/^.*\(([^)]*)\)$/\1/'); do
        case $img in http*) continue ;; esac
        p=$(cd "$(dirname "$f")" && realpath -m --relative-to="$OLDPWD" "$img")
        ni=$((ni + 1))
        if git rev-parse --git-dir > /dev/null 2>&1; then      # a checkout: committed (or added)
            git ls-files --error-unmatch -- "$p" > /dev/null 2>&1 || noimg="$noimg $f:$img"
        else [ -f "$p" ] || noimg="$noimg $f:$img"; fi
    done
done
[ "$ni" -ge 3 ] || bad "only $ni images found in the docs (the extraction broke)"
if [ -n "$noimg" ]; then bad "images the docs show that are not committed:$noimg"
else ok "all $ni images the docs show are committed"; fi
finish
