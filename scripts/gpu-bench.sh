#!/bin/bash
# Run on the lent GPU machine after scripts/gpu-run.sh has built build/:
# SM copy kernel shapes, a CE/SM size sweep, and a long run to compare the
# default run against. Results under $OUT (sm-shapes.txt, sweep.txt, long.json).
set -u
OUT=${OUT:-/tmp/p2pscope-out}
export NCCL_NVLS_ENABLE=0
mkdir -p "$OUT"

for shape in ${P2PSCOPE_SHAPES:-4:2:1024 8:2:1024 2:4:512 4:4:512 8:1:1024 4:8:256 1:8:1024 8:4:512}; do
  printf '%s ' "$shape"
  P2PSCOPE_SM_COPY=$shape build/p2pscope bw -t gpu_to_gpu_read_sm,gpu_to_gpu_write_sm -n 5 --json=/tmp/shape.json \
    > /dev/null 2>&1
  python3 -c "
import json; d=json.load(open('/tmp/shape.json'))
print(' '.join('%s %s %.2f' % (t['name'][11:], t['direction'], t['stats']['median']) for t in d['tests']))"
done | tee "$OUT/sm-shapes.txt"

build/p2pscope bw -t 'gpu_to_gpu_read_*,gpu_to_gpu_write_*,gpu_local_*,host_to_gpu_ce,host_to_gpu_sm,gpu_to_host_ce,gpu_to_host_sm' \
  -b 4K -e 256M -f 2 > "$OUT/sweep.txt" 2> /dev/null
echo "sweep rc=$?"
/usr/bin/time -v build/p2pscope bw -n 20 --max-samples 20 --json="$OUT/long.json" > "$OUT/long.txt" 2> "$OUT/long.err"
echo "long rc=$?"; grep -E "Elapsed|Maximum resident" "$OUT/long.err"
