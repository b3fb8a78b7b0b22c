#!/bin/sh
# Fails on an include circle in the library: between src/lib's files (a
# module is x.c with x.h) or between its directories (a file directly in
# src/lib counts as a directory of its own), and on a file-scope prototype
# of a function another .c file defines (an import that bypasses the
# headers, so the include graph would not show it).
# Usage: scripts/check-includes.sh [source root]   (default: the checkout)
set -eu
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
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

# Prototypes at file scope in a .c file of functions that file does not define.
grep -l . "$lib" -r --include='*.c' | sort | while IFS= read -r f; do
    grep -n '^[a-z][a-z0-9_ *]*[ *]\(psc_[a-z0-9_]*\)(.*);' "$f" | grep -v '^[0-9]*:static ' | while IFS=: read -r line text; do
        name=$(printf '%s\n' "$text" | sed 's/^[^(]*[ *]\(psc_[a-z0-9_]*\)(.*/\1/')
        if ! grep "^[a-z].*[ *]$name(" "$f" | grep -qv ');'; then
            echo "check-includes: ${f#"$root"/}:$line declares $name, defined elsewhere: include the header of its module" >&2
            echo x
        fi
    done
done > "$tmp/protos"
[ -s "$tmp/protos" ] && status=1
[ $status -eq 0 ] && echo "check-includes: no include circle in src/lib ($(wc -l < "$tmp/mod") file edges, $(wc -l < "$tmp/dir") directory edges)"
exit $status
