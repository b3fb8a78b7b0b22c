#!/bin/sh
# The shared library exports exactly the functions the public headers declare, each under its header's version
# node: <p2pscope.h> under P2PSCOPE_0, <p2pscope/bench.h> under P2PSCOPE_BENCH_1. No psc__ internals, no
# embedded fatbin, nothing undeclared, nothing missing; and nothing of the private interface
# (src/lib/p2pscope_private.h: the utilities and the tool's pieces), which must not be declared in a public
# header either.
# usage: check_exports.sh LIBP2PSCOPE.so INCLUDE_DIR GENERATED_INCLUDE_DIR PRIVATE_HEADER
set -eu
lib=$1
inc=$2
gen=$3
priv=$4
# name@@NODE of every defined dynamic symbol
exported=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TtWwDdBbRr]$/ {print $3}' | sed 's/@@*/ /' | sort -u)
# What the compiler sees (comments gone, macros expanded): every psc_ name called like a function.
names() { ${CC:-cc} -E -P -I"$inc" -I"$gen" -I"$(dirname "$priv")" "$1" | grep -oE '\bpsc_[a-z0-9_]+ *\(' | tr -d '( ' | sort -u; }
app=$(names "$inc/p2pscope.h")
bench=$(names "$inc/p2pscope/bench.h" | grep -vxF "$app")
# The private header's own declarations: with the public headers' guards set, its includes add nothing.
private=$(${CC:-cc} -E -P -DP2PSCOPE_H -DP2PSCOPE_BENCH_H -I"$inc" -I"$gen" "$priv" |
          grep -oE '\bpsc_[a-z0-9_]+ *\(' | tr -d '( ' | sort -u)
fail=0
for s in $private; do
    if echo "$app" "$bench" | tr ' ' '\n' | grep -qx "$s"; then
        echo "$s is private (src/lib/p2pscope_private.h) but declared in a public header too"
        fail=1
    fi
done
echo "$exported" | while read -r s node; do
    case $s in
    psc__*) echo "internal symbol exported: $s"; exit 1 ;;
    psc_*) ;;
    *) echo "symbol outside the psc_ namespace exported: $s"; exit 1 ;;
    esac
    if echo "$app" | grep -qx "$s"; then want=P2PSCOPE_0
    elif echo "$bench" | grep -qx "$s"; then want=P2PSCOPE_BENCH_1
    elif echo "$private" | grep -qx "$s"; then echo "private interface exported: $s (src/lib/p2pscope_private.h)"; exit 1
    else echo "exported but not in the public headers: $s"; exit 1
    fi
    [ "$node" = "$want" ] || { echo "$s exported under version node '$node'; its header's node is $want"; exit 1; }
done || fail=1
for s in $app $bench; do
    echo "$exported" | grep -q "^$s " || { echo "declared in the public headers but not exported: $s"; fail=1; }
done
[ -n "$private" ] || { echo "no function found in $priv"; fail=1; }
[ "$fail" = 0 ] && echo "exports: $(echo "$app" | wc -l) functions under P2PSCOPE_0, $(echo "$bench" | wc -l)" \
    "under P2PSCOPE_BENCH_1, all declared; $(echo "$private" | wc -l) private ones not exported"
exit $fail
