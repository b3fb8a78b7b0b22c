#!/bin/sh
# The tool (src/cli) and the report writers (src/report) reach the library through its public headers and its
# one private interface, src/lib/p2pscope_private.h, and nothing else: no other header of src/lib is included
# there, and every library function their objects call is declared in <p2pscope.h>, <p2pscope/bench.h> or the
# private header (no psc__ internal).
# usage: check_private.sh SOURCE_ROOT GENERATED_INCLUDE_DIR LIBRARY_OBJECT... -- TOOL_OBJECT...
set -eu
root=$1
gen=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT HUP INT TERM
fail=0

# 1. Includes: "lib/..." other than the private header, or a name that is a file of src/lib.
for f in "$root"/src/cli/*.[ch] "$root"/src/report/*.[ch]; do
    sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" | while IFS= read -r inc; do
        case $inc in
        lib/p2pscope_private.h) ;;
        lib/*) echo "${f#"$root"/} includes $inc: the tool uses lib/p2pscope_private.h, not the library's internals" ;;
        *) [ -f "$root/src/lib/$inc" ] && echo "${f#"$root"/} includes $inc of src/lib: use lib/p2pscope_private.h" ;;
        esac
    done
done > "$tmp/inc" || true
[ -s "$tmp/inc" ] && { cat "$tmp/inc"; fail=1; }

# 2. Symbols: what the tool's objects use that the library's objects define.
: > "$tmp/libdef"
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    ${NM:-nm} --defined-only "$1" | awk '$2 ~ /^[TDRB]$/ { print $3 }' >> "$tmp/libdef"
    shift
done
[ $# -gt 0 ] && shift
[ $# -gt 0 ] || { echo "check_private: no tool objects given" >&2; exit 2; }
for o in "$@"; do ${NM:-nm} -u "$o" | awk '{ print $NF }'; done | sort -u > "$tmp/used"
sort -u "$tmp/libdef" > "$tmp/libdef.s"
comm -12 "$tmp/used" "$tmp/libdef.s" > "$tmp/reached"
declared() {
    ${CC:-cc} -E -P -I"$root/include" -I"$gen" "$1" | grep -oE '\bpsc_[a-z0-9_]+ *\(' | tr -d '( '
}
{ declared "$root/include/p2pscope/bench.h"; declared "$root/src/lib/p2pscope_private.h"; } | sort -u > "$tmp/declared"
comm -23 "$tmp/reached" "$tmp/declared" > "$tmp/bad"
if [ -s "$tmp/bad" ]; then
    sed 's/^/the tool calls a library internal not in the private interface: /' "$tmp/bad"
    fail=1
fi
[ "$fail" = 0 ] && echo "check_private: the tool reaches the library through $(wc -l < "$tmp/reached") declared functions"
exit $fail
