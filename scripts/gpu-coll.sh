#!/bin/bash
# issue 15 device run: build p2pscope (with Open MPI where found) and nccl-tests (from .deps/nccl-tests, see
# scripts/gpu-deps.sh; with MPI too where mpicc is found); the coll GPU tests; then nccl-tests' all_reduce_perf
# and `p2pscope coll` with the same options in the same call, alternating, each timed, in one process and under
# mpirun (one rank per GPU); the avg finding of test_gpu_nccl; coll --explain where there are two GPUs.
# Every log and table in $OUT/coll-logs.tar.gz. NGPU GPUs per process (default: every GPU of the machine).
set -u
OUT=${OUT:-/tmp/p2pscope-out}; mkdir -p "$OUT"
L=$(mktemp -d); trap 'tar -C "$L" -czf "$OUT/coll-logs.tar.gz" .' EXIT  # few files come back: one tarball
date -u > $L/date.txt; nvidia-smi -L >> $L/date.txt; cat $L/date.txt
export NCCL_NVLS_ENABLE=0   # shared machines: never NVLink multicast
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
NGPU=${NGPU:-$(nvidia-smi -L | wc -l)}
scripts/build.sh > $L/build.log 2>&1; echo "build rc=$?"; tail -2 $L/build.log
export LD_LIBRARY_PATH=$PWD/.deps/prefix/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
build/p2pscope --version

# nccl-tests against the machine's libnccl.so.2 (its header from the machine, else the one carried)
lib=$(ldconfig -p | awk '/libnccl\.so\.2 /{print $NF; exit}')
hdr=$(ls /usr/include/nccl.h /usr/local/cuda/include/nccl.h 2>/dev/null | head -1)
[ -n "$hdr" ] || hdr=$PWD/.deps/nccl-include/nccl.h
echo "libnccl: $lib header: $hdr ($(grep -m1 NCCL_VERSION_CODE "$hdr" 2>/dev/null))"
NH=/tmp/ncclhome; mkdir -p $NH/include $NH/lib; cp "$hdr" $NH/include/; ln -sf "$lib" $NH/lib/libnccl.so
NT=$PWD/.deps/nccl-tests; B=/tmp/nt-build
t0=$(date +%s)
make -C $NT/src -j16 BUILDDIR=$B NCCL_HOME=$NH CUDA_HOME=/usr/local/cuda \
  NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" $B/all_reduce_perf > $L/nccl-tests-build.log 2>&1
echo "nccl-tests build rc=$? in $(( $(date +%s) - t0 )) s"; tail -3 $L/nccl-tests-build.log
MPIH=""
if command -v mpicc >/dev/null; then  # an MPI_HOME as nccl-tests' Makefile wants it: include/ and lib/
  MPIH=/tmp/mpihome; mkdir -p $MPIH
  ln -sfn "$(mpicc --showme:incdirs | awk '{print $1}')" $MPIH/include
  ln -sfn "$(mpicc --showme:libdirs | awk '{print $1}')" $MPIH/lib
fi
if [ -n "$MPIH" ]; then  # nccl-tests with MPI, for the mpirun comparison (its own object directory)
  make -C $NT/src -j16 BUILDDIR=$B-mpi NCCL_HOME=$NH CUDA_HOME=/usr/local/cuda MPI=1 MPI_HOME=$MPIH \
    NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" $B-mpi/all_reduce_perf > $L/nccl-tests-mpi-build.log 2>&1
  echo "nccl-tests (MPI=1, $MPIH) build rc=$?"; tail -2 $L/nccl-tests-mpi-build.log
fi

for t in test_gpu_nccl test_gpu_coll_data test_gpu_coll test_gpu_coll_mpi; do
  timeout 500 build/tests/gpu/$t > $L/$t.log 2>&1; echo "$t rc=$?"; grep -vE "^\[ RUN" $L/$t.log | tail -22
done

run() { # name, command...: time it, keep its output
  local n=$1; shift; local s=$(date +%s.%N)
  timeout 300 "$@" > $L/$n.txt 2>&1; local rc=$?
  echo "$n rc=$rc wall $(awk -v a="$s" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b - a}') s: $*"
}
for opts in "-b 8 -e 512M -f 2" "-b 8 -e 32K -f 2 -G 20"; do
  tag=$(echo "$opts" | tr -d ' -' | tr 'A-Z' 'a-z')
  for rep in 1 2; do
    run nt_${tag}_$rep $B/all_reduce_perf -g $NGPU $opts
    run p2p_${tag}_$rep build/p2pscope coll -g $NGPU $opts
  done
  grep -vE "^#" $L/nt_${tag}_1.txt | grep . > /tmp/a; grep -vE "^#" $L/p2p_${tag}_1.txt | grep . > /tmp/b
  echo "== $opts: size, nccl-tests time rep1/rep2, p2pscope time rep1/rep2 (us, out of place), busbw"
  paste <(grep -vE "^#" $L/nt_${tag}_1.txt | grep .) <(grep -vE "^#" $L/nt_${tag}_2.txt | grep .) \
        <(grep -vE "^#" $L/p2p_${tag}_1.txt | grep .) <(grep -vE "^#" $L/p2p_${tag}_2.txt | grep .) |
    awk '{printf "%12s  nt %9s %9s  p2p %9s %9s  busbw nt %7s p2p %7s\n", $1, $6, $19, $32, $45, $8, $34}'
done
echo "== p2pscope's extras (first run, -b 8 -e 512M)"; grep -E "^# " $L/p2p_b8e512mf2_1.txt | tail -32

# the avg finding of test_gpu_nccl (2^20+5 floats on one rank), in nccl-tests and in p2pscope
run nt_avg $B/all_reduce_perf -o avg -g 1 -b 4194324 -e 4194324 -c 1
run p2p_avg build/p2pscope coll -o avg -g 1 -b 4194324 -e 4194324
grep -vE "^#" $L/nt_avg.txt | grep .; grep -vE "^#" $L/p2p_avg.txt | grep .; tail -2 $L/p2p_avg.txt

# under mpirun: one rank per GPU (one rank on a machine with one GPU), beside nccl-tests built with MPI
if command -v mpirun >/dev/null; then
  for rep in 1 2; do
    [ -x $B-mpi/all_reduce_perf ] && run nt_mpi_$rep mpirun -np $NGPU $B-mpi/all_reduce_perf -b 8 -e 512M -f 2
    run p2p_mpi_$rep mpirun -np $NGPU build/p2pscope coll -b 8 -e 512M -f 2 --json=$L/mpi_coll_$rep.json
  done
  echo "== mpirun -np $NGPU, -b 8 -e 512M -f 2: size, nccl-tests time rep1/rep2, p2pscope rep1/rep2 (us), busbw"
  [ -f $L/nt_mpi_1.txt ] &&
    paste <(grep -vE "^#" $L/nt_mpi_1.txt | grep -E "^ +[0-9]") <(grep -vE "^#" $L/nt_mpi_2.txt | grep -E "^ +[0-9]") \
          <(grep -vE "^#" $L/p2p_mpi_1.txt | grep -E "^ +[0-9]") <(grep -vE "^#" $L/p2p_mpi_2.txt | grep -E "^ +[0-9]") |
      awk '{printf "%12s  nt %9s %9s  p2p %9s %9s  busbw nt %7s p2p %7s\n", $1, $6, $19, $32, $45, $8, $34}'
  grep -E "Out of bounds|Avg bus" $L/p2p_mpi_1.txt
fi
[ "$NGPU" -ge 2 ] && run explain build/p2pscope coll -b 1M -e 1G -f 4 --explain && tail -12 $L/explain.txt
ps -eo pid,comm | grep -E "p2pscope|_perf|orted|prted" | grep -v grep; echo "leftover processes listed above (none expected)"
