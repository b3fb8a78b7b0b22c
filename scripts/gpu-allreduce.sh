#!/bin/bash
# On the lent GPU machine, with .deps carried: the own all-reduce's GPU tests
# (one process driving every GPU, and groups of processes), their kernels
# under compute-sanitizer (PSC_TEST_QUICK: fewer calls), and the times they
# print. Logs in $OUT/allreduce-logs.tar.gz, a summary on stdout.
set -u
OUT=${OUT:-/tmp/p2pscope-out}
LOGS=$(mktemp -d)
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0   # shared machines: never NVLink multicast
trap 'tar -C "$LOGS" -czf "$OUT/allreduce-logs.tar.gz" .' EXIT
step() { echo "== $*" | tee -a "$LOGS/steps.log"; }

{ date -u; nvidia-smi -L; } | tee "$LOGS/machine.txt"
P2PSCOPE_WERROR=1 scripts/build.sh > "$LOGS/build.log" 2>&1
step "build rc=$?"; tail -3 "$LOGS/build.log"
export LD_LIBRARY_PATH=$PWD/.deps/prefix/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
for t in ${P2PSCOPE_AR_TESTS:-test_gpu_allreduce test_gpu_allreduce_join}; do
  [ -x "build/tests/gpu/$t" ] || { step "$t missing"; continue; }
  timeout 400 "build/tests/gpu/$t" > "$LOGS/$t.log" 2>&1
  step "$t rc=$?"; grep -E "allreduce|ok|FAILED|PASSED|ERROR|process" "$LOGS/$t.log" | head -40
done
if command -v compute-sanitizer >/dev/null && [ "${P2PSCOPE_SANITIZE:-1}" = 1 ]; then
  for t in ${P2PSCOPE_AR_SAN_TESTS:-test_gpu_allreduce test_gpu_allreduce_join}; do
    for tool in memcheck racecheck synccheck; do
      PSC_TEST_QUICK=1 timeout 300 compute-sanitizer --tool $tool --target-processes all --error-exitcode 9 \
        "build/tests/gpu/$t" > "$LOGS/san-$tool-$t.log" 2>&1
      step "compute-sanitizer $tool $t rc=$?: $(grep -E 'ERROR SUMMARY' "$LOGS/san-$tool-$t.log" | sort | uniq -c | tr '\n' ' ')"
    done
  done
fi
