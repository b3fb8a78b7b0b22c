#!/bin/bash
# issue 14 device run: build, the shared-memory GPU test between two processes, under compute-sanitizer too
# (API errors not reported: the fabric kind is expected to fail with CUDA_ERROR_NOT_PERMITTED without IMEX).
set -u
L=$OUT; mkdir -p $L
date -u > $L/date.txt; nvidia-smi -L >> $L/date.txt; ls -l /dev/nvidia-caps-imex-channels 2>&1 >> $L/date.txt
scripts/build.sh > $L/build.log 2>&1; echo "build rc=$?"
export LD_LIBRARY_PATH=$PWD/.deps/prefix/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
ctest --test-dir build -j4 > $L/ctest.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|\*\*\*|Failed" $L/ctest.log
for i in 1 2 3; do build/tests/gpu/test_gpu_share > $L/share_$i.log 2>&1; echo "test_gpu_share run $i rc=$?"; done
grep -E "waived|OK|FAIL|ERROR|error" $L/share_1.log | head -20
timeout 300 compute-sanitizer --tool memcheck --error-exitcode 9 --report-api-errors no --target-processes all build/tests/gpu/test_gpu_share > $L/san_share.log 2>&1; echo "memcheck test_gpu_share rc=$?"; grep SUMMARY $L/san_share.log
