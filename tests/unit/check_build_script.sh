#!/bin/sh
# scripts/build.sh's choices, with stand-ins for the tools it calls (cmake, the compiler, apt-get, id, nvcc) on a
# PATH of their own: as root it installs the optional packages it lacks (go-md2man for the manual pages, cairo for the
# figures), without root it names each and builds on; it names the missing mpicc unless the build asks for no MPI.
# usage: check_build_script.sh REPOSITORY_ROOT
set -eu
root=$1
fail() { echo "FAIL: $*"; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/bin"
for tool in sh dirname ls mkdir nproc cat grep; do
    p=$(command -v "$tool") || { echo "no $tool: skipped"; exit 77; }
    ln -s "$p" "$dir/bin/$tool"
done
log=$dir/log
stub() { # stub NAME BODY: a command that logs its arguments, then runs BODY
    printf '#!%s\necho "%s $*" >> "%s"\n%s\n' "$(command -v sh)" "$1" "$log" "$2" > "$dir/bin/$1"
    chmod +x "$dir/bin/$1"
}
stub nvcc 'exit 0'
stub cmake 'exit 0'
# every header is there but cairo's, whose test names cairo/cairo-svg.h on the compiler's standard input
stub cc 'if grep -q cairo; then exit 1; fi; exit 0'
stub apt-get 'exit 0'
run() { # run UID [ARG...]: build.sh's standard error
    uid=$1
    shift
    stub id "echo $uid"
    : > "$log"
    PATH=$dir/bin CC=cc P2PSCOPE_BUILD_DIR=$dir/build P2PSCOPE_WERROR=0 sh "$root/scripts/build.sh" "$@" 2>&1 >/dev/null
}

out=$(run 0)
grep -q "apt-get install -y -qq go-md2man" "$log" || fail "as root, go-md2man not installed: $(cat "$log")"
grep -q "apt-get install -y -qq libcairo2-dev" "$log" || fail "as root, cairo not installed: $(cat "$log")"
echo "$out" | grep -q "installing go-md2man (the manual pages" || fail "as root, no word of go-md2man: $out"
grep -q "^cmake --build" "$log" || fail "as root, nothing built: $(cat "$log")"

out=$(run 1000)
grep -q "apt-get install" "$log" && fail "without root, apt-get ran: $(cat "$log")"
echo "$out" | grep -q "no go-md2man: building without the manual pages p2pscope(1) and libp2pscope(3); for it: apt-get install go-md2man" ||
    fail "without root, go-md2man not named: $out"
echo "$out" | grep -q "no libcairo2-dev: building without the figures" || fail "without root, cairo not named: $out"
echo "$out" | grep -q "no mpicc" || fail "mpicc missing and not named: $out"
grep -q "^cmake --build" "$log" || fail "without root, nothing built: $(cat "$log")"

out=$(run 1000 -DP2PSCOPE_MPI=OFF)
echo "$out" | grep -q "no mpicc" && fail "-DP2PSCOPE_MPI=OFF still names mpicc: $out"
grep -q "^cmake -S . -B $dir/build -DP2PSCOPE_MPI=OFF" "$log" || fail "the argument not passed to cmake: $(cat "$log")"
echo "build script: ok"
