#!/bin/bash
# Run on the lent GPU machine, in the repository root: unpack .deps/ (see
# scripts/gpu-deps.sh) into a private prefix, build, run every test (the GPU
# ones included), compute-sanitizer over the kernels, and the full report.
# Logs and JSON go to $OUT. Extra p2pscope runs: P2PSCOPE_EXTRA="args;args".
set -u
OUT=${OUT:-/tmp/p2pscope-out}
PREFIX=/tmp/psc-deps
BUILD=build-gpu
export NCCL_NVLS_ENABLE=0   # shared machines: never NVLink multicast
mkdir -p "$OUT" "$PREFIX"

step() { echo "== $*" | tee -a "$OUT/steps.log"; }

for f in .deps/*.deb; do dpkg -x "$f" "$PREFIX"; done
{ nvidia-smi; nvidia-smi topo -m; nvidia-smi nvlink --status | head -40; } > "$OUT/nvidia-smi.txt" 2>&1

step "configure + build"
cmake -S . -B "$BUILD" -DCMAKE_PREFIX_PATH="$PREFIX/usr" -DP2PSCOPE_WERROR=ON \
      -DP2PSCOPE_CUDA_ARCHS="${P2PSCOPE_CUDA_ARCHS:-90}" > "$OUT/build.log" 2>&1 &&
  cmake --build "$BUILD" -j"$(nproc)" >> "$OUT/build.log" 2>&1
rc=$?; step "build rc=$rc"; [ $rc -eq 0 ] || { tail -40 "$OUT/build.log"; exit 1; }

step "ctest"
ctest --test-dir "$BUILD" --output-on-failure -j1 > "$OUT/ctest.log" 2>&1
step "ctest rc=$?"; grep -E "tests passed|Passed|Failed|Skipped|\*\*\*" "$OUT/ctest.log" | tail -30

if [ "${P2PSCOPE_SANITIZE:-1}" = 1 ] && command -v compute-sanitizer >/dev/null; then
  for tool in memcheck racecheck; do
    step "compute-sanitizer $tool"
    compute-sanitizer --tool $tool --error-exitcode 9 "$BUILD/p2pscope" bw --size 1048581 -n 2 -i 1 \
      > "$OUT/sanitize-$tool.log" 2>&1
    step "$tool rc=$?"; tail -3 "$OUT/sanitize-$tool.log"
  done
fi

step "full report"
timer=(); [ -x /usr/bin/time ] && timer=(/usr/bin/time -v)
"${timer[@]}" "$BUILD/p2pscope" --json="$OUT/report.json" > "$OUT/report.txt" 2> "$OUT/report.err"
step "report rc=$?"; cat "$OUT/report.txt"; grep -E "Maximum resident|Elapsed" "$OUT/report.err"

IFS=';' read -ra extra <<< "${P2PSCOPE_EXTRA:-}"
i=0
for args in "${extra[@]}"; do
  [ -n "$args" ] || continue
  i=$((i+1)); step "extra $i: p2pscope $args"
  # shellcheck disable=SC2086
  "$BUILD/p2pscope" $args > "$OUT/extra-$i.txt" 2>&1
  step "extra $i rc=$?"; cat "$OUT/extra-$i.txt"
done
