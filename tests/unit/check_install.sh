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
# The static library, through pkg-config --static (its private dependencies named there).
[ -f "$libdir/libp2pscope.a" ] || { echo "static library not installed"; exit 1; }
sflags=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --cflags --static --libs p2pscope | sed 's/-lp2pscope\b//')
${CC:-cc} -std=c11 -Wall -Wextra -Werror "$src/examples/doctor.c" "$libdir/libp2pscope.a" $sflags -o "$tmp/doctor-static"
objdump -p "$tmp/doctor-static" | grep -q "NEEDED.*libp2pscope" && { echo "the static example needs the shared library"; exit 1; }
"$tmp/doctor-static" "$src/tests/data/h200x2-nv18.json" | grep -q "^libp2pscope $version: 2 GPUs" ||
    { echo "the statically linked example: unexpected output"; exit 1; }
# With CMake: find_package(p2pscope) and the imported target, the examples' sources as installed.
mkdir -p "$tmp/cm"
cat > "$tmp/cm/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.20)
project(uses_p2pscope C)
find_package(p2pscope $version REQUIRED)
add_executable(doctor $(find "$tmp/usr" -path '*examples/doctor.c'))
target_link_libraries(doctor PRIVATE p2pscope::p2pscope)
CM
cmake -S "$tmp/cm" -B "$tmp/cm/build" -DCMAKE_PREFIX_PATH="$tmp/usr" -DCMAKE_C_COMPILER="${CC:-cc}" > "$tmp/cm.log" 2>&1 &&
    cmake --build "$tmp/cm/build" >> "$tmp/cm.log" 2>&1 || { cat "$tmp/cm.log"; echo "the CMake build failed"; exit 1; }
"$tmp/cm/build/doctor" "$src/tests/data/h200x2-nv18.json" | grep -q "^libp2pscope $version: 2 GPUs" ||
    { echo "the CMake-built example: unexpected output"; exit 1; }
soname=$(objdump -p "$libdir/libp2pscope.so" | awk '/SONAME/ {print $2}')
case $version in 0.*) want="libp2pscope.so.${version%.*}" ;; *) want="libp2pscope.so.${version%%.*}" ;; esac
[ "$soname" = "$want" ] || { echo "soname $soname, expected $want"; exit 1; }
echo "installed library: the example builds and runs (pkg-config, static, CMake; soname $soname)"
