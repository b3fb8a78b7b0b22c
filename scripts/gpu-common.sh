# Sourced by the scripts that run on a lent GPU machine (gpu-accept.sh,
# gpu-many.sh): $OUT, the stage, a log folder packed into $OUT on exit, and a
# step line with the time. The caller sets STAGE_DEFAULT first.
set -u
OUT=${OUT:-/tmp/p2pscope-out}
STAGE=${1:-$STAGE_DEFAULT}
LOGS=$(mktemp -d)
export NCCL_NVLS_ENABLE=0 P2PSCOPE_WERROR=1 # shared machines: never NVLink multicast
mkdir -p "$OUT"
step() { echo "== $(date -u +%T) $*" | tee -a "$LOGS/steps.log"; }
finish() { tar -C "$LOGS" -czf "$OUT/logs-$STAGE.tar.gz" . ; }
trap finish EXIT
# Build, then every test; the summary lines (and any failure) on stdout.
build_and_test() {
  step "build"; scripts/build.sh > "$LOGS/build.log" 2>&1 || { tail -30 "$LOGS/build.log"; exit 1; }
  step "ctest"; ctest --test-dir build --output-on-failure > "$LOGS/ctest.log" 2>&1
  step "ctest rc=$?"; grep -E "tests passed|\*\*\*Failed|FAILED|load " "$LOGS/ctest.log"
}
