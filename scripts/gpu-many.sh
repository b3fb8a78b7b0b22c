#!/bin/bash
# Run on a lent machine of several GPUs (nvidia-h200-x4 / -x8), in the
# repository root, with .deps carried: everything p2pscope does, with wall
# time and peak RSS, in two stages that each stay under the 10-minute limit.
#   stage a: build, ctest, the default report, topo beside nvidia-smi topo -m,
#            doctor, nvlink, the latency suite
#   stage b: the default verify, and bw with checks off (their share)
# Results under $OUT (report, lat, verify: .txt and .json); logs-STAGE.tar.gz.
STAGE_DEFAULT=a
. "$(dirname "$0")/gpu-common.sh"
# p2pscope ARGS... > $OUT/NAME.txt, its JSON to $OUT/NAME.json, time -v to the log
run() {
  local name=$1; shift
  /usr/bin/time -v build/p2pscope "$@" --json="$OUT/$name.json" > "$OUT/$name.txt" 2> "$LOGS/$name.err"
  step "$name rc=$?: p2pscope $*"; grep -aE "Elapsed|Maximum resident" "$LOGS/$name.err"
  grep -aE "wall time|GB checked|checking the data" "$OUT/$name.txt"
}

if [ "$STAGE" = a ]; then
  { date -u; nvidia-smi; nvidia-smi topo -m; nvidia-smi nvlink --status; nvidia-smi nvlink -c; } > "$LOGS/nvidia-smi.txt" 2>&1
  nvidia-smi topo -m > "$OUT/nvidia-smi-topo.txt" 2>&1
  build_and_test
  run report
  build/p2pscope topo > "$OUT/topo.txt" 2>&1; step "topo rc=$?"
  build/p2pscope doctor > "$LOGS/doctor.txt" 2>&1; step "doctor rc=$?"; cat "$LOGS/doctor.txt" | tail -15
  build/p2pscope nvlink > "$LOGS/nvlink.txt" 2>&1; step "nvlink rc=$?"; head -5 "$LOGS/nvlink.txt"
  cat "$OUT/nvidia-smi-topo.txt"; sed -n '/GPU topology/,/^$/p' "$OUT/topo.txt"
  run lat lat
else
  run verify verify
  run bw-noverify bw --no-verify
fi
