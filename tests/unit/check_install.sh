#!/bin/sh
# The installed library is enough for an application: install the build into a
# temporary prefix, compile every example (examples/*.c) with nothing but the
# installed headers and pkg-config's flags (warnings are errors), shared, static
# and with CMake, and run them: doctor.c on a recording and without a driver,
# the others without a driver, where each must skip (exit 77). The manual pages
# are installed and render without a warning when the build made them.
# usage: check_install.sh BUILD_DIR SOURCE_DIR
# environment (set by tests/unit/CMakeLists.txt):
#   P2PSCOPE_MAN_PAGES  ON when the build made the manual pages (go-md2man found)
#   PSC_CUDA_INCLUDE    the CUDA toolkit's include directories, separated by ':'
#   PSC_CUDA_ROOT       the toolkit, for find_package(CUDAToolkit)
#   PSC_DEP_LIBDIRS     where the build found hwloc and jansson, separated by ':' (an unpacked .deps
#                       prefix on the lent GPU machines), for the static link and the runs
set -eu
build=$1
src=$2
cc=${CC:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/usr" > "$tmp/install.log"
pc=$(find "$tmp/usr" -name p2pscope.pc)
libdir=$(dirname "$(dirname "$pc")")
[ -f "$tmp/usr/include/p2pscope/bench.h" ] && [ -f "$tmp/usr/include/p2pscope/version.h" ] || { echo "headers not installed"; exit 1; }
version=$(sed -n 's/^Version: //p' "$pc")
[ -f "$tmp/usr/share/bash-completion/completions/p2pscope" ] || { echo "the bash completion not installed"; exit 1; }
for f in h200-nvswitch.expect h100-nvswitch.expect; do # --expect's files of the measured machines
    [ -f "$tmp/usr/share/p2pscope/expect/$f" ] || { echo "share/p2pscope/expect/$f not installed"; exit 1; }
done

# The manual pages: installed, and rendered by man (or groff) without a warning.
if [ "${P2PSCOPE_MAN_PAGES:-OFF}" = ON ]; then
    mandir=$(dirname "$(dirname "$(find "$tmp/usr" -path '*/man1/p2pscope.1')")")
    [ -f "$mandir/man1/p2pscope.1" ] && [ -f "$mandir/man3/libp2pscope.3" ] && [ -f "$mandir/man3/psc_copy.3" ] ||
        { echo "manual pages not installed: $(find "$tmp/usr" -path '*/man*' -type f)"; exit 1; }
    # page, a heading it must have
    for page in "man1/p2pscope.1 EXIT STATUS" "man3/libp2pscope.3 CONVENTIONS" "man3/psc_copy.3 CONVENTIONS"; do
        file=${page%% *}
        heading=${page#* }
        if command -v man > /dev/null; then
            (cd "$mandir" && MANWIDTH=80 man --warnings -E UTF-8 -l "$file") > "$tmp/page" 2> "$tmp/page.err" || true
        elif command -v groff > /dev/null; then
            (cd "$mandir" && groff -man -k -s -ww -Tutf8 -P -cbou "$file") > "$tmp/page" 2> "$tmp/page.err" || true
        else # neither: the sections of the source (a .so link: of the page it names)
            target=$file
            grep -q '^\.so ' "$mandir/$file" && target=$(sed -n 's/^\.so //p' "$mandir/$file")
            sed -n 's/^\.SH "*\([^"]*\)"*$/\1/p' "$mandir/$target" > "$tmp/page"
            : > "$tmp/page.err"
        fi
        [ -s "$tmp/page.err" ] && { echo "$file renders with warnings:"; cat "$tmp/page.err"; exit 1; }
        grep -q "^ *NAME" "$tmp/page" && grep -q "^ *$heading" "$tmp/page" ||
            { echo "$file: no NAME or $heading section:"; head -20 "$tmp/page"; exit 1; }
    done
    grep -q "^\.TH p2pscope 1 .*p2pscope $version" "$mandir/man1/p2pscope.1" ||
        { echo "p2pscope.1: title $(grep '^\.TH' "$mandir/man1/p2pscope.1")"; exit 1; }
    echo "manual pages installed and rendered: $(cd "$mandir" && find . -type f | sort | tr '\n' ' ')"
else
    echo "manual pages: not built (no go-md2man): not checked"
fi

# Every example, with the installed tree alone: shared through pkg-config, static through pkg-config --static
# (the installed archive by path, so the shared library cannot be picked), each also with the CUDA toolkit's
# headers when it includes cuda.h, never with libcuda: those that call the driver API open it at run time
# (examples/cuda_on_demand.h), so each starts where no driver is installed.
flags=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --cflags --libs p2pscope)
[ -f "$libdir/libp2pscope.a" ] || { echo "static library not installed"; exit 1; }
sflags=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --cflags --static --libs p2pscope | sed 's/-lp2pscope\b//')
cudaflags=""
old_ifs=$IFS
IFS=:
for dir in ${PSC_CUDA_INCLUDE:-}; do cudaflags="-I$dir $cudaflags"; done
depflags=""
for dir in ${PSC_DEP_LIBDIRS:-}; do depflags="$depflags -L$dir"; done
IFS=$old_ifs
mkdir -p "$tmp/ex"
examples=""
for ex in "$src"/examples/*.c; do
    name=$(basename "$ex" .c)
    examples="$examples $name"
    extra=""
    grep -q '^#include <cuda\.h>' "$ex" && extra=$cudaflags
    $cc -std=c11 -Wall -Wextra -Werror "$ex" $flags $extra -o "$tmp/ex/$name" ||
        { echo "examples/$name.c does not build against the installed library (pkg-config)"; exit 1; }
    $cc -std=c11 -Wall -Wextra -Werror "$ex" "$libdir/libp2pscope.a" $sflags $depflags $extra -o "$tmp/ex/$name-static" ||
        { echo "examples/$name.c does not build against the installed static library"; exit 1; }
    objdump -p "$tmp/ex/$name-static" | grep -q "NEEDED.*libp2pscope" && { echo "static $name needs the shared library"; exit 1; }
    for bin in "$tmp/ex/$name" "$tmp/ex/$name-static"; do
        objdump -p "$bin" | grep -q "NEEDED.*libcuda" && { echo "$bin needs libcuda: it cannot start without a driver"; exit 1; }
    done
done
[ -x "$tmp/ex/doctor" ] || { echo "examples/doctor.c missing"; exit 1; }

# With CMake: find_package(p2pscope) and the imported target (and the toolkit's headers for cuda.h, never its
# libcuda), the examples' sources as installed.
mkdir -p "$tmp/cm"
{
    echo "cmake_minimum_required(VERSION 3.20)"
    echo "project(uses_p2pscope C)"
    echo "set(CMAKE_C_STANDARD 11)"
    echo "find_package(p2pscope $version REQUIRED)"
    echo "find_package(CUDAToolkit REQUIRED)"
    for name in $examples; do
        path=$(find "$tmp/usr" -path "*examples/$name.c")
        [ -n "$path" ] || { echo "examples/$name.c not installed" >&2; exit 1; }
        echo "add_executable($name $path)"
        echo "target_compile_options($name PRIVATE -Wall -Wextra -Werror)"
        if grep -q '^#include <cuda\.h>' "$path"; then
            echo "target_include_directories($name PRIVATE \${CUDAToolkit_INCLUDE_DIRS})"
            echo "target_link_libraries($name PRIVATE p2pscope::p2pscope \${CMAKE_DL_LIBS})"
        else
            echo "target_link_libraries($name PRIVATE p2pscope::p2pscope)"
        fi
    done
} > "$tmp/cm/CMakeLists.txt"
cmake -S "$tmp/cm" -B "$tmp/cm/build" -DCMAKE_PREFIX_PATH="$tmp/usr" -DCMAKE_C_COMPILER="$cc" \
      ${PSC_CUDA_ROOT:+-DCUDAToolkit_ROOT="$PSC_CUDA_ROOT"} > "$tmp/cm.log" 2>&1 &&
    cmake --build "$tmp/cm/build" >> "$tmp/cm.log" 2>&1 || { cat "$tmp/cm.log"; echo "the CMake build failed"; exit 1; }

run() { LD_LIBRARY_PATH=$libdir${PSC_DEP_LIBDIRS:+:$PSC_DEP_LIBDIRS}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$@"; }
# doctor.c: on a recording (its findings, exit 0 or 1) and without a driver (exit 3: nothing to examine).
for bin in "$tmp/ex/doctor" "$tmp/ex/doctor-static" "$tmp/cm/build/doctor"; do
    out=$(run "$bin" "$src/tests/data/h200x2-nv18.json") && rc=0 || rc=$?
    echo "$out" | grep -q "^libp2pscope $version: 2 GPUs" || { echo "$bin: unexpected output (rc $rc): $out"; exit 1; }
    [ "$rc" -le 1 ] || { echo "$bin on a recording: exit $rc"; exit 1; }
done
echo "$out" | head -3
P2PSCOPE_LIBCUDA=/nonexistent/libcuda.so.1 run "$tmp/ex/doctor" > /dev/null 2> "$tmp/err" && rc=0 || rc=$?
[ "$rc" = 3 ] && grep -q "^doctor: no NVIDIA driver" "$tmp/err" || { echo "without a driver: exit $rc: $(cat "$tmp/err")"; exit 1; }
# Every other example skips without a driver (exit 77), whichever way it was built.
for name in $examples; do
    [ "$name" = doctor ] && continue
    for bin in "$tmp/ex/$name" "$tmp/ex/$name-static" "$tmp/cm/build/$name"; do
        P2PSCOPE_LIBCUDA=/nonexistent/libcuda.so.1 run "$bin" > "$tmp/out" 2>&1 && rc=0 || rc=$?
        [ "$rc" = 77 ] || { echo "$bin without a driver: exit $rc, not 77 (skipped):"; cat "$tmp/out"; exit 1; }
    done
done

soname=$(objdump -p "$libdir/libp2pscope.so" | awk '/SONAME/ {print $2}')
case $version in 0.*) want="libp2pscope.so.${version%.*}" ;; *) want="libp2pscope.so.${version%%.*}" ;; esac
[ "$soname" = "$want" ] || { echo "soname $soname, expected $want"; exit 1; }
echo "installed library: the examples ($(echo $examples | tr ' ' ',')) build and run (pkg-config, static, CMake; soname $soname)"
