#!/bin/bash
# Run on the lent GPU machine, in the repository root, with .deps carried
# (scripts/gpu-deps.sh): the README's two commands, compute-sanitizer over the
# kernels, and the full report with JSON and its page (--html, opened in headless Chromium
# where the files come back). Everything lands in $OUT: report.txt, report.json, report.html,
# and logs.tar.gz with the rest. Extra p2pscope runs:
# P2PSCOPE_EXTRA="args;args" (each to extra-N.txt inside the tarball).
set -u
OUT=${OUT:-/tmp/p2pscope-out}
LOGS=$(mktemp -d)
export NCCL_NVLS_ENABLE=0   # shared machines: never NVLink multicast
export P2PSCOPE_WERROR=1
mkdir -p "$OUT"

step() { echo "== $*" | tee -a "$LOGS/steps.log"; }
finish() { tar -C "$LOGS" -czf "$OUT/logs.tar.gz" . ; }
trap finish EXIT

{ date -u; nvidia-smi; nvidia-smi topo -m; nvidia-smi nvlink --status; nvidia-smi nvlink -c; } > "$LOGS/nvidia-smi.txt" 2>&1

step "README run command: scripts/build.sh && build/p2pscope"
timer=(); [ -x /usr/bin/time ] && timer=(/usr/bin/time -v)
scripts/build.sh > "$LOGS/build.log" 2>&1 &&
  "${timer[@]}" build/p2pscope --json="$OUT/report.json" --html "$OUT/report.html" > "$OUT/report.txt" \
    2> "$LOGS/report.err"
step "report rc=$?"; cat "$OUT/report.txt"; grep -E "Maximum resident|Elapsed" "$LOGS/report.err"
tail -5 "$LOGS/build.log"

step "README test command: scripts/build.sh && ctest --test-dir build --output-on-failure"
scripts/build.sh >> "$LOGS/build.log" 2>&1 && ctest --test-dir build --output-on-failure > "$LOGS/ctest.log" 2>&1
step "ctest rc=$?"; grep -E "Test +#|tests passed|\*\*\*" "$LOGS/ctest.log"

if [ "${P2PSCOPE_SANITIZE:-1}" = 1 ] && command -v compute-sanitizer >/dev/null; then
  for tool in memcheck racecheck synccheck; do
    compute-sanitizer --tool $tool --error-exitcode 9 build/p2pscope bw --size 1048581 -n 2 -i 1 \
      > "$LOGS/sanitize-$tool.log" 2>&1
    step "compute-sanitizer $tool rc=$?: $(grep -E 'SUMMARY' "$LOGS/sanitize-$tool.log")"
  done
  compute-sanitizer --tool memcheck --error-exitcode 9 build/tests/gpu/test_gpu_corruption \
    > "$LOGS/sanitize-corruption.log" 2>&1
  step "compute-sanitizer memcheck test_gpu_corruption rc=$?"
  # The flag tests need both GPUs' kernels running at once, which the sanitizer may not allow: left out.
  compute-sanitizer --tool memcheck --error-exitcode 9 build/p2pscope lat -t '*chase*,*copy*' -n 4 \
    > "$LOGS/sanitize-lat.log" 2>&1
  step "compute-sanitizer memcheck lat rc=$?: $(grep -E 'SUMMARY' "$LOGS/sanitize-lat.log")"
fi

IFS=';' read -ra extra <<< "${P2PSCOPE_EXTRA:-}"
i=0
for args in "${extra[@]}"; do
  [ -n "$args" ] || continue
  i=$((i+1))
  # shellcheck disable=SC2086
  build/p2pscope $args > "$LOGS/extra-$i.txt" 2>&1
  step "extra $i rc=$?: p2pscope $args"; grep -vE "^\[[0-9]+/[0-9]+\]" "$LOGS/extra-$i.txt"
done
