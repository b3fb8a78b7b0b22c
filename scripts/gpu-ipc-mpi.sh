#!/bin/bash
# issue 14 device run (2): build with Open MPI; psc_share_send/recv between two processes (test_gpu_share), ipc as
# one rank per GPU under mpirun (test_gpu_ipc_mpi, then the command beside the self-started one), the example
# share_between_processes, memcheck of every process of test_gpu_share; leftover processes.
set -u
L=$OUT; mkdir -p $L
date -u > $L/date.txt; nvidia-smi -L >> $L/date.txt; cat $L/date.txt
echo "mpicc: $(command -v mpicc) mpirun: $(command -v mpirun)"; mpirun --version 2>&1 | head -1
scripts/build.sh > $L/build.log 2>&1; echo "build rc=$?"; tail -2 $L/build.log
export LD_LIBRARY_PATH=$PWD/.deps/prefix/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
build/p2pscope --version
n=$(nvidia-smi -L | wc -l); D=0,0; [ "$n" -ge 2 ] && D=0,1
for t in test_gpu_share test_gpu_ipc_mpi test_gpu_ipc; do
  timeout 400 build/tests/gpu/$t > $L/$t.log 2>&1; echo "$t rc=$?"; grep -E "OK|FAIL|ERROR|waived|skipped" $L/$t.log | head -20
done
timeout 300 mpirun -np 2 build/p2pscope ipc -d $D --json=$L/ipc_mpi.json > $L/ipc_mpi.txt 2>&1; echo "mpirun p2pscope ipc -d $D rc=$?"; cat $L/ipc_mpi.txt
timeout 300 build/p2pscope ipc -d $D --json=$L/ipc_self.json > $L/ipc_self.txt 2>&1; echo "p2pscope ipc -d $D rc=$?"; grep -A12 "^legacy:" $L/ipc_self.txt | head -14
INC="-I include -I build/include -I /usr/local/cuda/include"
gcc -std=c11 -O2 $INC examples/share_between_processes.c -L build/src -lp2pscope -ldl -o /tmp/sbp > $L/ex_sbp.build 2>&1; echo "example build rc=$?"; tail -3 $L/ex_sbp.build
LD_LIBRARY_PATH=build/src:$LD_LIBRARY_PATH timeout 120 /tmp/sbp > $L/ex_sbp.txt 2>&1; echo "example share_between_processes rc=$?"; cat $L/ex_sbp.txt
timeout 400 compute-sanitizer --tool memcheck --error-exitcode 9 --report-api-errors no --target-processes all build/tests/gpu/test_gpu_share > $L/san_share.log 2>&1; echo "memcheck test_gpu_share rc=$?"; grep -E "SUMMARY|PASSED|FAILED" $L/san_share.log | head
ps -eo pid,ppid,comm | grep -E "p2pscope|test_gpu|sbp|orted|prted" | grep -v grep; echo "leftover processes listed above (none expected)"
