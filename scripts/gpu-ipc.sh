#!/bin/bash
# issue 14 device run: build; p2pscope ipc's GPU test (two worker processes); the command itself with JSON;
# the GPU test under compute-sanitizer memcheck (every process; API errors not reported: fabric fails without IMEX).
set -u
L=$OUT; mkdir -p $L
date -u > $L/date.txt; nvidia-smi -L >> $L/date.txt
scripts/build.sh > $L/build.log 2>&1; echo "build rc=$?"; tail -2 $L/build.log
export LD_LIBRARY_PATH=$PWD/.deps/prefix/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
timeout 300 build/tests/gpu/test_gpu_ipc > $L/ipc.log 2>&1; echo "test_gpu_ipc rc=$?"; grep -E "OK|FAIL|ERROR|<-" $L/ipc.log
timeout 300 build/p2pscope ipc --json=$L/ipc.json > $L/ipc_cli.txt 2>&1; echo "p2pscope ipc rc=$?"; cat $L/ipc_cli.txt
timeout 200 build/p2pscope ipc -s 1M --round-trips 50 --test-corrupt-offset 777 > $L/ipc_corrupt.txt 2>&1; echo "p2pscope ipc corrupt rc=$? (1 expected)"; grep -iE "offset|fail" $L/ipc_corrupt.txt | head -4
timeout 400 compute-sanitizer --tool memcheck --error-exitcode 9 --report-api-errors no --target-processes all build/tests/gpu/test_gpu_ipc > $L/san_ipc.log 2>&1; echo "memcheck test_gpu_ipc rc=$?"; grep -E "SUMMARY|PASSED|FAILED" $L/san_ipc.log | head
ps -eo pid,ppid,comm | grep -E "p2pscope|test_gpu" | grep -v grep; echo "leftover processes listed above (none expected)"
