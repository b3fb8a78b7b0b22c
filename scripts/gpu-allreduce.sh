#!/bin/bash
# On the lent GPU machine, with .deps carried: the own all-reduce's GPU tests
# (one process driving every GPU, groups of processes, the stress test: a
# million checked calls, a busy GPU, two streams, graphs, a timeout on
# purpose; its rows in `p2pscope coll`) and their kernels under
# compute-sanitizer (PSC_TEST_QUICK: fewer calls); AR_PART=speed: our
# kernels beside NCCL in `p2pscope coll` at 8 B-1 GiB, CUDA graph replay
# and eager, one process and one per GPU under mpirun (the issue's table).
# AR_PART=tests, sanitize or speed runs one part (each fits one 10-minute
# device call; all: tests and sanitize); AR_SAN_RANKS=1 runs
# the sanitizers on one rank (where the sanitizer cannot run two GPUs'
# kernels at once, which the all-reduce needs: its calls would time out).
# Logs in $OUT/allreduce-logs.tar.gz, a summary on stdout.
set -u
OUT=${OUT:-/tmp/p2pscope-out}
LOGS=$(mktemp -d)
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0   # shared machines: never NVLink multicast
trap 'tar -C "$LOGS" -czf "$OUT/allreduce-logs.tar.gz" .' EXIT
step() { echo "== $*" | tee -a "$LOGS/steps.log"; }
part=${AR_PART:-all}

{ date -u; nvidia-smi -L; } | tee "$LOGS/machine.txt"
P2PSCOPE_WERROR=1 scripts/build.sh > "$LOGS/build.log" 2>&1
step "build rc=$?"; tail -3 "$LOGS/build.log"
export LD_LIBRARY_PATH=$PWD/.deps/prefix/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
if [ "$part" = speed ]; then
  top=${AR_MAX:-1G}
  for g in 20 0; do
    build/p2pscope coll -b 8 -e "$top" -f 2 -G $g -n ${AR_ITERS:-50} -w 10 --impl all \
      --json="$LOGS/speed-G$g.json" > "$LOGS/speed-G$g.txt" 2>&1
    step "coll -G $g rc=$?"; grep -vE "^#  (Rank|  time|  p50)" "$LOGS/speed-G$g.txt" | head -80
  done
  if command -v mpirun >/dev/null && [ "$(nvidia-smi -L | wc -l)" -ge 2 ]; then
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun -np "$(nvidia-smi -L | wc -l)" \
      build/p2pscope coll -b 8 -e 64M -f 4 -G 20 -n ${AR_ITERS:-50} --impl all > "$LOGS/speed-mpi.txt" 2>&1
    step "mpirun coll rc=$?"; grep -vE "^#  (Rank|  time|  p50)" "$LOGS/speed-mpi.txt" | head -60
  fi
  exit 0
fi
if [ "$part" != sanitize ]; then
  for t in ${AR_TESTS:-test_gpu_allreduce test_gpu_allreduce_join test_gpu_allreduce_stress test_gpu_coll_own test_gpu_allreduce_tune}; do
    [ -x "build/tests/gpu/$t" ] || { step "$t missing"; continue; }
    start=$(date +%s)
    timeout 400 "build/tests/gpu/$t" > "$LOGS/$t.log" 2>&1
    step "$t rc=$? in $(( $(date +%s) - start )) s"
    grep -E "allreduce|^ok|FAILED|PASSED|ERROR|process|needs" "$LOGS/$t.log" | head -40
  done
fi
if [ "$part" != tests ] && command -v compute-sanitizer >/dev/null; then
  for t in ${AR_SAN_TESTS:-test_gpu_allreduce test_gpu_allreduce_stress test_gpu_allreduce_join}; do
    for tool in memcheck racecheck synccheck; do
      start=$(date +%s)
      env PSC_TEST_QUICK=1 ${AR_SAN_RANKS:+PSC_TEST_RANKS=$AR_SAN_RANKS} timeout 200 compute-sanitizer --tool $tool \
        --target-processes all --error-exitcode 9 "build/tests/gpu/$t" > "$LOGS/san-$tool-$t.log" 2>&1
      step "compute-sanitizer $tool $t rc=$? in $(( $(date +%s) - start )) s: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$LOGS/san-$tool-$t.log" | sort | uniq -c | tr '\n' ' ')"
    done
  done
fi
