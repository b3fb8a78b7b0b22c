#!/bin/bash
# Issue 16 device run, the own all-reduce under pressure: build, the stress test in full (a million checked
# calls, a busy GPU, two streams, graphs, a timeout on purpose) timed, then both all-reduce GPU tests short
# (PSC_TEST_QUICK=1) under compute-sanitizer memcheck, racecheck and synccheck. Logs in $OUT.
# AR_SAN_RANKS=1 runs the sanitizers on one rank (where the sanitizer cannot run two GPUs' kernels at once,
# which the all-reduce needs: the calls then time out).
set -u
L=${OUT:-/tmp/p2pscope-out}; mkdir -p "$L"
export NCCL_NVLS_ENABLE=0 P2PSCOPE_WERROR=1 # shared machines: never NVLink multicast
date -u > "$L/date.txt"; nvidia-smi -L >> "$L/date.txt" 2>&1
scripts/build.sh > "$L/build.log" 2>&1; echo "build rc=$?"; tail -3 "$L/build.log"
start=$(date +%s)
timeout 590 build/tests/gpu/test_gpu_allreduce_stress > "$L/stress.log" 2>&1; rc=$?
echo "test_gpu_allreduce_stress rc=$rc in $(( $(date +%s) - start )) s"
grep -E "allreduce stress|OK|FAIL|ERROR|SKIP|error" "$L/stress.log" | head -40
for t in test_gpu_allreduce test_gpu_allreduce_stress; do
  for tool in memcheck racecheck synccheck; do
    start=$(date +%s)
    env PSC_TEST_QUICK=1 ${AR_SAN_RANKS:+PSC_TEST_RANKS=$AR_SAN_RANKS} timeout 300 compute-sanitizer --tool $tool \
      --error-exitcode 9 build/tests/gpu/$t > "$L/san_${t}_$tool.log" 2>&1
    echo "compute-sanitizer $tool $t rc=$? in $(( $(date +%s) - start )) s: $(grep -E 'SUMMARY' "$L/san_${t}_$tool.log")"
    grep -E "FAILED|ERROR" "$L/san_${t}_$tool.log" | head -5
  done
done
