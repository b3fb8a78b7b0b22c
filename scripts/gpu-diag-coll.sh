#!/bin/bash
# On a lent 2-GPU machine, with .deps carried: why p2pscope coll's eager small sizes trail nccl-tests in some cases
# (issue 32): broadcast and reduce_scatter under mpirun, nccl-tests beside p2pscope's default, -T 0 and -c 0, with perf
# stat and nsys API summaries where those tools are there. Writes $OUT/diag.tar.gz and $OUT/summary.txt.
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}; R=$(mktemp -d); LOGS=$R
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
trap 'tar -C "$R" -czf "$OUT/diag.tar.gz" .' EXIT
. scripts/gpu-refs.sh
refs_build; scripts/build.sh > "$R/build.log" 2>&1 || exit 1; refs_wait
export LD_LIBRARY_PATH=$PWD/.deps/prefix/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
{ cat /sys/devices/system/clocksource/clocksource0/current_clocksource; nproc; lscpu; which perf nsys; } > "$R/machine.txt" 2>&1
S=(-b 8 -e 512K -f 8 -n 100 -w 5)
for coll in broadcast reduce_scatter; do
  for rep in 1 2 3; do
    timeout 60 mpirun -np 2 "$NT_MPI/${coll}_perf" "${S[@]}" > "$R/nt_${coll}_$rep.txt" 2>&1
    timeout 60 mpirun -np 2 build/p2pscope coll $coll "${S[@]}" --impl nccl > "$R/p2p_${coll}_$rep.txt" 2>&1
    timeout 60 mpirun -np 2 build/p2pscope coll $coll "${S[@]}" --impl nccl -T 0 > "$R/p2pT0_${coll}_$rep.txt" 2>&1
    timeout 60 mpirun -np 2 build/p2pscope coll $coll "${S[@]}" --impl nccl -T 0 -c 0 > "$R/p2pT0c0_${coll}_$rep.txt" 2>&1
    timeout 60 mpirun -np 2 "$NT_MPI/${coll}_perf" "${S[@]}" -c 0 > "$R/ntc0_${coll}_$rep.txt" 2>&1
  done
done
if command -v perf > /dev/null; then
  timeout 60 mpirun -np 2 perf stat -e task-clock,context-switches,cpu-migrations,instructions -o "$R/perf_nt.txt" \
    "$NT_MPI/broadcast_perf" "${S[@]}" > /dev/null 2>&1
  timeout 60 mpirun -np 2 perf stat -e task-clock,context-switches,cpu-migrations,instructions -o "$R/perf_p2p.txt" \
    build/p2pscope coll broadcast "${S[@]}" --impl nccl > /dev/null 2>&1
fi
if command -v nsys > /dev/null; then # the CUDA calls each tool makes per operation
  for t in nt p2p; do
    if [ $t = nt ]; then cmd=("$NT_MPI/broadcast_perf"); else cmd=(build/p2pscope coll broadcast --impl nccl -T 0); fi
    timeout 90 mpirun -np 2 nsys profile -t cuda,osrt -o "$R/nsys_${t}_%q{OMPI_COMM_WORLD_RANK}" \
      "${cmd[@]}" -b 8 -e 8 -n 2000 -w 5 > "$R/nsys_$t.log" 2>&1
    nsys stats -r cuda_api_sum,osrt_sum "$R/nsys_${t}_0.nsys-rep" > "$R/nsys_${t}_stats.txt" 2>&1
    rm -f "$R"/nsys_${t}_*.nsys-rep "$R"/nsys_${t}_*.sqlite
  done
fi
for f in "$R"/*_1.txt "$R"/*_2.txt "$R"/*_3.txt; do
  printf '%s ' "$(basename "$f")"; grep -hE '^\s+[0-9]+ ' "$f" | awk '{printf "%s/%s ", $6, $10}'; echo
done | sort | tee "$OUT/summary.txt"
