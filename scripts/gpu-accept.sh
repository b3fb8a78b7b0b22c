#!/bin/bash
# Run on the lent GPU machine, in the repository root, with .deps carried: the
# acceptance runs of the bandwidth and integrity issues on 2×H200, in two
# stages so each call stays under the 10-minute limit (the machine stays warm
# between them). Results under $OUT; logs in $OUT/logs-STAGE.tar.gz.
#   stage a: build, ctest, default verify, bw with and without checks, a long
#            bw run and the comparison with the default one
#   stage b: verify --seconds stress, SM write grid caps, compute-sanitizer
#            racecheck over lat and memcheck over verify with background load
#   stage c: build, ctest, the README's report, bw with checks off, a long bw run and
#            the comparison with the report's figures
#   stage shapes: build, ctest, then SM copy shapes ($P2PSCOPE_SHAPES) on GPU -> GPU
STAGE_DEFAULT=a
. "$(dirname "$0")/gpu-common.sh"
timed() { /usr/bin/time -v "$@"; }
# SM copy shapes (P2PSCOPE_SM_COPY values) on the GPU -> GPU SM tests, one line each.
shapes() {
  for shape in ${P2PSCOPE_SHAPES:-4:2:1024 4:2:1024:198 4:2:1024:132 4:1:1024:99 4:1:1024:66 8:1:1024:132}; do
    P2PSCOPE_SM_COPY=$shape build/p2pscope bw -t gpu_to_gpu_write_sm,gpu_to_gpu_read_sm -n 9 --max-samples 9 \
      --json="$LOGS/shape.json" > /dev/null 2>&1
    printf '%s ' "$shape"; python3 -c "
import json; d=json.load(open('$LOGS/shape.json'))
print(' '.join('%s %s %.2f' % (t['name'][11:], t['direction'], t['stats']['median']) for t in d['tests']))"
  done | tee "$OUT/sm-shapes.txt"
}
# A long bw run (-n 20) beside the default run's JSON ($1), case by case, into $OUT/compare.txt.
long_compare() {
  step "bw long (-n 20)"
  timed build/p2pscope bw -n 20 --max-samples 20 --json="$LOGS/long.json" > "$LOGS/long.txt" 2> "$LOGS/long.err"
  step "long rc=$?"; grep -aE "Elapsed|Maximum" "$LOGS/long.err"
  python3 scripts/compare_runs.py "$1" "$LOGS/long.json" > "$OUT/compare.txt"; tail -2 "$OUT/compare.txt"
}
summary() { grep -E "wall time|GB checked|checking the data|data not checked" "$1"; }

if [ "$STAGE" = a ]; then
  { date -u; nvidia-smi; nvidia-smi topo -m; } > "$LOGS/nvidia-smi.txt" 2>&1
  build_and_test
  step "verify (default)"
  timed build/p2pscope verify --json="$OUT/verify.json" > "$OUT/verify.txt" 2> "$LOGS/verify.err"
  step "verify rc=$?"; grep -E "Elapsed|Maximum" "$LOGS/verify.err"; summary "$OUT/verify.txt"
  sed -n '/background traffic/,$p' "$OUT/verify.txt"
  step "bw (default)"
  timed build/p2pscope bw --json="$OUT/bw.json" > "$LOGS/bw.txt" 2> "$LOGS/bw.err"
  step "bw rc=$?"; grep -E "Elapsed|Maximum" "$LOGS/bw.err"; summary "$LOGS/bw.txt"
  step "bw --no-verify"
  timed build/p2pscope bw --no-verify --json="$LOGS/bw-noverify.json" > "$LOGS/bw-noverify.txt" 2> "$LOGS/bw-nv.err"
  step "bw --no-verify rc=$?"; grep -E "Elapsed|Maximum" "$LOGS/bw-nv.err"; summary "$LOGS/bw-noverify.txt"
  long_compare "$OUT/bw.json"
  cp "$LOGS/bw.txt" "$OUT/bw.txt"
elif [ "$STAGE" = c ]; then
  build_and_test
  step "report (default)"
  timed build/p2pscope --json="$OUT/report.json" > "$OUT/report.txt" 2> "$LOGS/report.err"
  step "report rc=$?"; grep -aE "Elapsed|Maximum" "$LOGS/report.err"; summary "$OUT/report.txt"
  step "bw --no-verify"
  timed build/p2pscope bw --no-verify > "$LOGS/bw-noverify.txt" 2> "$LOGS/bw-nv.err"
  step "bw --no-verify rc=$?"; grep -aE "Elapsed|Maximum" "$LOGS/bw-nv.err"; summary "$LOGS/bw-noverify.txt"
  long_compare "$OUT/report.json"
elif [ "$STAGE" = shapes ]; then
  build_and_test
  shapes
else
  step "verify --seconds ${P2PSCOPE_STRESS:-60}"
  timed build/p2pscope verify --seconds "${P2PSCOPE_STRESS:-60}" -e 16M --json="$LOGS/stress.json" \
    > "$OUT/stress.txt" 2> "$LOGS/stress.err"
  step "stress rc=$?"; grep -E "Elapsed|Maximum" "$LOGS/stress.err"; grep -a "GB checked" "$LOGS/stress.err" | tail -2
  summary "$OUT/stress.txt"; sed -n '/background traffic/,/^$/p' "$OUT/stress.txt"
  shapes
  if command -v compute-sanitizer > /dev/null; then
    compute-sanitizer --tool racecheck --error-exitcode 9 build/p2pscope lat -t '*chase*,*copy*' -n 4 \
      > "$LOGS/racecheck-lat.log" 2>&1
    step "racecheck lat rc=$?: $(grep -E 'SUMMARY' "$LOGS/racecheck-lat.log")"
    compute-sanitizer --tool memcheck --error-exitcode 9 build/p2pscope verify -t 'gpu_to_gpu_write_*,gpu_to_host_ce' -e 64K \
      > "$LOGS/memcheck-verify.log" 2>&1
    step "memcheck verify (with background load) rc=$?: $(grep -E 'SUMMARY' "$LOGS/memcheck-verify.log")"
  fi
fi
