#!/usr/bin/env bash
# doc_keys.sh: every key the loaders accept is documented in docs/scenarios.md.
#
# How the keys are found.  The loaders are strict: every YAML mapping is checked against a
# NULL-terminated table of allowed keys, `static const char *const NAME[] = {"a", "b", NULL};`,
# passed as the fourth argument of yd_strict_map() (sim/ydoc.h) or of scenario.c's keys_only().
# So, per source file:
#   1. the tables: every `static const char *const [*const ]NAME[...] = { ... };` declaration
#      (it may span lines), its text kept by NAME (tables of the same NAME in different
#      functions are merged: each of them is passed to a check);
#   2. the used names: the fourth argument of every yd_strict_map( / keys_only( call, with an
#      index such as keys[k] dropped;
#   3. the keys: the string literals of every used table; a table of tables (keys[] =
#      {k_fixed, k_unif, ...}, designators like [WIN_RATE] = ignored) adds the tables it
#      names.
# A value table (event names, dtypes) is never passed to these checks, so its strings are
# not taken for keys.  The script fails if a file yields fewer keys than a floor (the
# extraction broke) or if a key does not appear as `key` (in backquotes) in its part of
# docs/scenarios.md: sim/scenario.c's keys (scenarios and models) above the line
# "## Profile files", sim/profile.c's below it.  And the reverse: a key the first column of a
# "| key |" table documents must be one its part's loader accepts.
set -u
doc=${DOC:-docs/scenarios.md}
[ -f "$doc" ] || { echo "doc_keys: $doc missing"; exit 1; }

keys_of() {  # keys_of FILE: the accepted keys, one a line, sorted
    awk '
    function add_used(name) { sub(/\[.*$/, "", name); gsub(/[ \t]/, "", name); if (name != "") used[name] = 1 }
    {
        line = $0
        # 1. table declarations, possibly over several lines
        if (intab) { tab[tname] = tab[tname] " " line; if (line ~ /};/) intab = 0; next_check = 1 }
        else if (match(line, /static const char \*const (\*const )?[A-Za-z_][A-Za-z0-9_]*\[[^]]*\] *= *\{/)) {
            decl = substr(line, RSTART, RLENGTH)
            sub(/^static const char \*const (\*const )?/, "", decl); sub(/\[.*$/, "", decl)
            tname = decl
            tab[tname] = tab[tname] " " substr(line, RSTART + RLENGTH)
            intab = (line !~ /};/)
        }
        # 2. the allowed-keys argument of the strict checks
        rest = line
        while (match(rest, /(yd_strict_map|keys_only)\([^)]*\)/)) {
            call = substr(rest, RSTART, RLENGTH); rest = substr(rest, RSTART + RLENGTH)
            sub(/^[a-z_]+\(/, "", call); sub(/\)$/, "", call)
            n = split(call, arg, ",")
            if (n >= 4) add_used(arg[4])
        }
    }
    END {
        # 3. resolve tables of tables, then print the string literals of every used table
        do {
            grew = 0
            for (u in used) {
                t = tab[u]; gsub(/"[^"]*"/, "", t); gsub(/\[[^]]*\] *=/, "", t)
                n = split(t, id, /[^A-Za-z0-9_]+/)
                for (i = 1; i <= n; i++)
                    if (id[i] in tab && !(id[i] in used)) { used[id[i]] = 1; grew = 1 }
            }
        } while (grew)
        for (u in used) {
            t = tab[u]
            while (match(t, /"[^"]*"/)) { print substr(t, RSTART + 1, RLENGTH - 2); t = substr(t, RSTART + RLENGTH) }
        }
    }' "$1" | sort -u
}

fail=0 pass=0
check() {  # check SOURCE FLOOR PART(scn|prof)
    local src=$1 floor=$2 part=$3 keys n
    keys=$(keys_of "$src")
    n=$(printf '%s\n' "$keys" | grep -c .)
    if [ "$n" -lt "$floor" ]; then
        echo "  FAIL $src: only $n keys extracted (at least $floor expected): the extraction broke"
        fail=$((fail + 1)); return
    fi
    local text
    if [ "$part" = scn ]; then text=$(sed '/^## Profile files/,$d' "$doc")
    else text=$(sed -n '/^## Profile files/,$p' "$doc"); fi
    local missing=""
    for k in $keys; do
        printf '%s' "$text" | grep -qF "\`$k\`" || missing="$missing $k"
    done
    if [ -n "$missing" ]; then
        echo "  FAIL $src: not documented in $doc:$missing"; fail=$((fail + 1))
    else
        echo "  ok   $src: all $n accepted keys documented"; pass=$((pass + 1))
    fi
    # the reverse: every key a "| key |" table of the part documents (its first column's
    # backquoted names) is one the loader accepts
    local tab extra="" m
    tab=$(printf '%s\n' "$text" | awk '
        /^\| key \|/ { t = 1; next } t && /^\|---/ { next }
        t && /^\|/ { split($0, c, "|"); s = c[2]; while (match(s, /`[^`]*`/)) { print substr(s, RSTART + 1, RLENGTH - 2); s = substr(s, RSTART + RLENGTH) } next }
        { t = 0 }' | sort -u)
    m=$(printf '%s\n' "$tab" | grep -c .)
    for k in $tab; do printf '%s\n' "$keys" | grep -qxF -- "$k" || extra="$extra $k"; done
    if [ "$m" -lt 20 ]; then
        echo "  FAIL $doc ($part): only $m keys found in its key tables: the extraction broke"; fail=$((fail + 1))
    elif [ -n "$extra" ]; then
        echo "  FAIL $doc ($part): documented keys $src does not accept:$extra"; fail=$((fail + 1))
    else
        echo "  ok   $doc ($part): all $m keys of its key tables accepted by $src"; pass=$((pass + 1))
    fi
}
check sim/scenario.c 60 scn
check sim/profile.c 30 prof
echo "doc_keys: $pass passed, $fail failed"
[ $fail = 0 ]
