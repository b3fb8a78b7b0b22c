#!/bin/sh
# The installed library is enough for an application: install the build into a
# temporary prefix, compile examples/doctor.c with nothing but the installed
# headers and pkg-config's flags (warnings are errors), and run it on a
# recording and without a driver.
# usage: check_install.sh BUILD_DIR SOURCE_DIR
set -eu
build=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/usr" > "$tmp/install.log"
pc=$(find "$tmp/usr" -name p2pscope.pc)
libdir=$(dirname "$(dirname "$pc")")
[ -f "$tmp/usr/include/p2pscope/bench.h" ] && [ -f "$tmp/usr/include/p2pscope/version.h" ] || { echo "headers not installed"; exit 1; }
flags=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --cflags --libs p2pscope)
${CC:-cc} -std=c11 -Wall -Wextra -Werror "$src/examples/doctor.c" $flags -o "$tmp/doctor"
out=$(LD_LIBRARY_PATH=$libdir "$tmp/doctor" "$src/tests/data/h200x2-nv18.json") && rc=0 || rc=$?
echo "$out" | head -3
version=$(sed -n 's/^Version: //p' "$pc")
echo "$out" | grep -q "^libp2pscope $version: 2 GPUs" || { echo "unexpected output (rc $rc)"; exit 1; }
[ "$rc" -le 1 ] || { echo "doctor on a recording: exit $rc"; exit 1; }
LD_LIBRARY_PATH=$libdir P2PSCOPE_LIBCUDA=/nonexistent/libcuda.so.1 "$tmp/doctor" > /dev/null 2> "$tmp/err" && rc=0 || rc=$?
[ "$rc" = 3 ] && grep -q "^doctor: no NVIDIA driver" "$tmp/err" || { echo "without a driver: exit $rc: $(cat "$tmp/err")"; exit 1; }
echo "installed library: the example builds and runs"
