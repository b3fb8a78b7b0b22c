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
