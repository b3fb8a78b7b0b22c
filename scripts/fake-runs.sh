#!/usr/bin/env bash
# The CLI on the fake driver and the fake NCCL (tests/fakes), for a before-and-after diff of a change that must not
# change behaviour (issue 33): each command's stdout, stderr and exit code into OUTDIR/NN.txt, every number written
# as '#' and runs of spaces as one (the fakes' timings differ from run to run, and with them the tables' widths):
# what is compared is every word, label, message, table's shape, JSON key and exit code.
#
#   scripts/fake-runs.sh BUILD_DIR OUTDIR        then, with another build:  diff -r OUTDIR_A OUTDIR_B
set -euo pipefail
[ $# -eq 2 ] || { sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
build=$(cd "$1" && pwd)
out=$2
fakes=$build/tests/fakes
for lib in libfake_libcuda.so libfake_libnccl.so libfake_libgdrapi.so; do
    [ -f "$fakes/$lib" ] || { echo "fake-runs: $fakes/$lib missing: build the tests first" >&2; exit 2; }
done
mkdir -p "$out"
export P2PSCOPE_LIBCUDA=$fakes/libfake_libcuda.so P2PSCOPE_LIBNCCL=$fakes/libfake_libnccl.so
export P2PSCOPE_LIBGDRAPI=$fakes/libfake_libgdrapi.so P2PSCOPE_LIBNVML=/nonexistent/libnvidia-ml.so.1
export FAKE_CUDA_COUNT=2 FAKE_CUDA_MODE=contexts FAKE_CUDA_KERNELS=1 LC_ALL=C NO_COLOR=1 COLUMNS=100
unset P2PSCOPE_LOG CUDA_VISIBLE_DEVICES
n=0
while read -r cmd; do
    [ -n "$cmd" ] || continue
    n=$((n + 1))
    f=$(printf '%s/%02d.txt' "$out" "$n")
    rc=0
    # shellcheck disable=SC2086
    (cd "$out" && timeout 120 "$build/p2pscope" $cmd) > "$f.raw" 2>&1 || rc=$?
    { echo "\$ p2pscope $cmd"; cat "$f.raw"; echo "[exit $rc]"; } |
        sed -E -e "s|$build|BUILD|g" -e 's/[0-9]+(\.[0-9]+)?(e[-+]?[0-9]+)?/#/g' -e 's/  +/ /g' > "$f"
    rm -f "$f.raw"
done <<'CMDS'
devices
devices --json
list
bw -s 64K -i 4 -n 3 --max-samples 3
bw -t gpu_to_gpu_write_ce,host_to_gpu_ce -b 4K -e 64K -f 4 -i 4 -n 3 --max-samples 3 --json
lat -n 3
topo
topo --json
nvlink
doctor
doctor --json
coll all_reduce -b 8 -e 1K -f 4 -n 2 -w 1
coll all_gather -b 8 -e 256 -f 4 -n 2 -w 1 --json
coll broadcast -b 8 -e 64 -f 8 -n 2 -w 1 -G 2
copy -b 1 -e 1K -f 16
bw --bogus
coll -b 2K -e 1K
CMDS
echo "fake-runs: $n commands into $out"
