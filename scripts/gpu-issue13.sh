#!/bin/bash
# issue 13 device run: build, every test, psc_copy's calibration and benchmark, the examples.
set -u
export NCCL_NVLS_ENABLE=0 P2PSCOPE_WERROR=1
L=$OUT; mkdir -p $L
date -u > $L/date.txt; nvidia-smi -L >> $L/date.txt
scripts/build.sh > $L/build.log 2>&1; echo "build rc=$?"
ctest --test-dir build --output-on-failure -j4 > $L/ctest.log 2>&1; echo "ctest rc=$?"; grep -E "tests passed|\*\*\*|Failed" $L/ctest.log
build/tests/gpu/test_gpu_copy > $L/test_gpu_copy.log 2>&1; echo "test_gpu_copy rc=$?"; tail -4 $L/test_gpu_copy.log
build/tests/gpu/test_gpu_mem > $L/test_gpu_mem.log 2>&1; echo "test_gpu_mem rc=$?"; tail -3 $L/test_gpu_mem.log
timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 build/tests/gpu/test_gpu_copy > $L/san_copy.log 2>&1; echo "memcheck test_gpu_copy rc=$?"; grep SUMMARY $L/san_copy.log
/usr/bin/time -v build/p2pscope copy --calibrate $L/cal.json > $L/calibrate.txt 2> $L/calibrate.err; echo "calibrate rc=$?"; grep -E "Elapsed|Maximum res" $L/calibrate.err
build/p2pscope copy --calibration $L/cal.json --json=$L/bench_cal.json > $L/bench_cal.txt 2>$L/bench_cal.err; echo "bench(cal) rc=$?"
build/p2pscope copy --json=$L/bench_def.json > $L/bench_def.txt 2>$L/bench_def.err; echo "bench(default) rc=$?"
cat $L/bench_cal.txt | head -120
INC="-I include -I build/include -I /usr/local/cuda/include"
for e in best_route_copy host_memory_kinds p2p_memcpy; do
  gcc -std=c11 -O2 $INC examples/$e.c -L build/src -lp2pscope -L /usr/local/cuda/lib64/stubs -lcuda -ldl -o /tmp/$e > $L/ex_$e.build 2>&1
  LD_LIBRARY_PATH=build/src /tmp/$e > $L/ex_$e.txt 2>&1; echo "example $e rc=$?"; tail -12 $L/ex_$e.txt
done
LD_LIBRARY_PATH=build/src /tmp/best_route_copy $L/cal.json > $L/ex_best_cal.txt 2>&1; echo "best_route_copy(cal) rc=$?"; cat $L/ex_best_cal.txt
