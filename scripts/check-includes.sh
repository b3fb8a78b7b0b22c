#!/bin/sh
# Fails on a circle between the library's parts, so the layers stay layers:
# - an include circle between src/lib's files (a module is x.c with x.h) or
#   between its directories (a file directly in src/lib counts as a
#   directory of its own);
# - a file-scope prototype in a .c file of a function another file defines
#   (an import that bypasses the headers, which the include graph would miss);
# - given the library's object files, a circle of calls between files (the
#   symbols one object uses that another defines), what the headers cannot show.
# Usage: scripts/check-includes.sh [SOURCE_ROOT [OBJECT.o...]]   (default: this checkout, no objects)
set -eu
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
[ $# -gt 0 ] && shift
lib=$root/src/lib
[ -d "$lib" ] || { echo "check-includes: no $lib" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT HUP INT TERM

# Edges "from to" between modules: src/lib-relative paths without extension.
# Includes name src/lib-relative paths ("xfer/copy.h"); one that is not a
# file of src/lib (p2pscope.h, a system header) is outside the graph.
(cd "$lib" && find . -name '*.[ch]' | sed 's|^\./||' | sort) > "$tmp/files"
while IFS= read -r f; do
    sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$lib/$f" | while IFS= read -r inc; do
        if [ -f "$lib/$inc" ]; then
            t=$inc
        elif [ -f "$lib/$(dirname "$f")/$inc" ]; then
            t=$(dirname "$f")/$inc
        else
            continue
        fi
        printf '%s %s\n' "${f%.*}" "${t%.*}"
    done
done < "$tmp/files" > "$tmp/edges"

dir_of() { case $1 in */*) echo "${1%%/*}/" ;; *) echo "$1" ;; esac; }

status=0
# A module's own .c including its .h is no edge; tsort reports a loop on stderr.
awk '$1 != $2' "$tmp/edges" | sort -u > "$tmp/mod"
while read -r a b; do printf '%s %s\n' "$(dir_of "$a")" "$(dir_of "$b")"; done < "$tmp/mod" | awk '$1 != $2' | sort -u > "$tmp/dir"
for level in mod dir; do
    if ! tsort "$tmp/$level" > /dev/null 2> "$tmp/loop"; then
        [ $level = mod ] && what=files || what=directories
        echo "check-includes: an include circle between src/lib's $what:" >&2
        sed -n 's/^tsort: //p' "$tmp/loop" | grep -v 'input contains a loop' > "$tmp/members" || true
        echo "  edges among its members:" >&2
        awk 'NR == FNR { in_loop[$1] = 1; next } ($1 in in_loop) && ($2 in in_loop)' \
            "$tmp/members" "$tmp/$level" | awk '{ printf "    %s -> %s\n", $1, $2 }' >&2
        status=1
    fi
done

# Prototypes at file scope in a .c file of functions that file does not define
# (a declaration may span lines: it ends at ';', a definition at '{').
find "$lib" -name '*.c' | sort | while IFS= read -r f; do
    awk -v file="${f#"$root"/}" '
        # Only at file scope (brace depth 0), and not a label.
        !inside && depth == 0 && /^[a-z]/ && !/^[a-z_0-9]+:/ && !/^(static|typedef|struct|enum|union|extern)[ \t]/ {
            inside = 1; text = ""; line = FNR
        }
        inside {
            text = text " " $0
            if (index($0, "{") || $0 ~ /;[ \t]*(\/\*.*)?$/) {
                inside = 0
                if (match(text, /psc_[a-z0-9_]*[ \t]*\(/)) {
                    name = substr(text, RSTART, RLENGTH); sub(/[ \t]*\($/, "", name)
                    if (index(text, "{")) defined[name] = 1; else { proto[name] = line }
                }
            }
        }
        { depth += gsub(/{/, "{") - gsub(/}/, "}") }
        END {
            for (n in proto)
                if (!(n in defined))
                    printf "check-includes: %s:%d declares %s, defined elsewhere: include the header of its module\n", file, proto[n], n
        }' "$f"
done > "$tmp/protos"
if [ -s "$tmp/protos" ]; then cat "$tmp/protos" >&2; fi
[ -s "$tmp/protos" ] && status=1

# Calls between the objects of src/lib files: "user definer" for each symbol one uses and another defines.
calls=""
if [ $# -gt 0 ]; then
    for o in "$@"; do
        case $o in */lib/*.c.o | */lib/*.o) ;; *) continue ;; esac
        m=${o##*/lib/}
        m=${m%.o}
        m=${m%.c}
        ${NM:-nm} "$o" | awk -v m="$m" '$1 == "U" { print "U", $2, m } $2 ~ /^[TDRB]$/ { print "D", $3, m }'
    done > "$tmp/syms"
    awk '$1 == "D" { def[$2] = $3 } $1 == "U" { use[NR] = $2 " " $3 }
         END { for (k in use) { split(use[k], a, " "); if ((a[1] in def) && def[a[1]] != a[2]) print a[2], def[a[1]] } }' \
        "$tmp/syms" | sort -u > "$tmp/calls"
    [ -s "$tmp/calls" ] || { echo "check-includes: no calls between the objects given" >&2; exit 2; }
    if ! tsort "$tmp/calls" > /dev/null 2> "$tmp/loop"; then
        echo "check-includes: a circle of calls between src/lib's files:" >&2
        sed -n 's/^tsort: //p' "$tmp/loop" | grep -v 'input contains a loop' > "$tmp/members" || true
        echo "  calls among its members (caller -> callee):" >&2
        awk 'NR == FNR { in_loop[$1] = 1; next } ($1 in in_loop) && ($2 in in_loop)' "$tmp/members" "$tmp/calls" |
            awk '{ printf "    %s -> %s\n", $1, $2 }' >&2
        status=1
    fi
    calls=", no call circle ($(wc -l < "$tmp/calls") call edges)"
fi
[ $status -eq 0 ] && echo "check-includes: no include circle in src/lib ($(wc -l < "$tmp/mod") file edges, $(wc -l < "$tmp/dir") directory edges)$calls"
exit $status
