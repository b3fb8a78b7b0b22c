#!/bin/sh
# The shared library exports exactly the functions the public headers declare:
# no psc__ internals, no embedded fatbin, nothing undeclared, nothing missing.
# usage: check_exports.sh LIBP2PSCOPE.so INCLUDE_DIR GENERATED_INCLUDE_DIR
set -eu
lib=$1
inc=$2
gen=$3
exported=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TtWwDdBbRr]$/ {sub(/@.*/, "", $3); print $3}' | sort -u)
# What the compiler sees (comments gone, macros expanded): every psc_ name called like a function.
declared=$(${CC:-cc} -E -P -I"$inc" -I"$gen" "$inc/p2pscope/bench.h" | grep -oE '\bpsc_[a-z0-9_]+ *\(' | tr -d '( ' | sort -u)
fail=0
for s in $exported; do
    case $s in
    psc__*) echo "internal symbol exported: $s"; fail=1 ;;
    psc_*) echo "$declared" | grep -qx "$s" || { echo "exported but not in the public headers: $s"; fail=1; } ;;
    *) echo "symbol outside the psc_ namespace exported: $s"; fail=1 ;;
    esac
done
for s in $declared; do
    echo "$exported" | grep -qx "$s" || { echo "declared in the public headers but not exported: $s"; fail=1; }
done
[ "$fail" = 0 ] && echo "exports: $(echo "$exported" | wc -l) functions, all declared"
exit $fail
