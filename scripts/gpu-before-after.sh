#!/bin/bash
# Run on the lent GPU machine, in the repository root, with .deps carried: the
# same runs on an earlier version of p2pscope and on this tree, one after the
# other on the same GPUs, to show that a change kept behaviour and figures.
# Prepare here: git archive --prefix=base/ -o .deps/base.tar REF (the earlier version).
# Stage "build": build both and run every test of this tree; stage "runs" (the default, a
# second call while the machine is warm): for each of the full report, bw, lat and verify a
# run of each version; bw figures are compared case by case
# (compare_runs.py), the rest by status, exit code and wall time. Results in $OUT.
STAGE_DEFAULT=runs
. "$(dirname "$0")/gpu-common.sh"
[ -f .deps/base.tar ] || { echo "no .deps/base.tar: see the header of $0"; exit 2; }
BASE=/tmp/p2pscope-base # kept between the two stages while the machine stays warm
build_base() {
  rm -rf "$BASE" && mkdir -p "$BASE" && tar -C "$BASE" -xf .deps/base.tar && cp -r .deps "$BASE/base/.deps"
  step "build base"; (cd "$BASE/base" && P2PSCOPE_WERROR=0 scripts/build.sh -DBUILD_TESTING=OFF > "$LOGS/build-base.log" 2>&1) || { tail -20 "$LOGS/build-base.log"; exit 1; }
}
if [ "$STAGE" = build ]; then
  build_base
  build_and_test
  exit 0
fi
[ -x "$BASE/base/build/p2pscope" ] || build_base
[ -x build/p2pscope ] || { step "build"; scripts/build.sh > "$LOGS/build.log" 2>&1 || { tail -30 "$LOGS/build.log"; exit 1; }; }
run() { # version label args...: JSON into $OUT/label.json, exit code and wall time on one line
  local bin=$1 label=$2; shift 2
  local t0; t0=$(date +%s.%N)
  "$bin" "$@" --json="$OUT/$label.json" > "$LOGS/$label.txt" 2> "$LOGS/$label.err"
  local rc=$?
  printf '%-22s rc=%s wall=%.1f s\n' "$label" "$rc" "$(echo "$(date +%s.%N) - $t0" | bc)" | tee -a "$OUT/runs.txt"
}
# Stage "interleave": the paths that differed, each version in turn three times (drift and order show).
if [ "$STAGE" = interleave ]; then
  for i in 1 2 3; do
    for v in base this; do
      bin=build/p2pscope; [ $v = base ] && bin=$BASE/base/build/p2pscope
      $bin bw -t '*pageable*,host_to_gpu_ce,host_gpu_bidir_wc_sm' -n 9 --max-samples 9 --json="$LOGS/bw-$v-$i.json" > /dev/null 2>&1
      $bin lat -t '*sync*' --json="$LOGS/lat-$v-$i.json" > /dev/null 2>&1
    done
  done
  python3 - "$LOGS" <<'PY' | tee "$OUT/interleave.txt"
import json, sys
d = sys.argv[1]
for i in (1, 2, 3):
    for v in ("base", "this"):
        bw = json.load(open(f"{d}/bw-{v}-{i}.json"))["tests"]
        lat = json.load(open(f"{d}/lat-{v}-{i}.json"))["tests"]
        print(f"{i} {v:4} " + " ".join("%s %.2f" % (t["name"].replace("_pageable", "_pg")[:22], t["stats"]["median"])
                                    for t in bw if t.get("stats")) + " | " +
              " ".join("%s %.0f" % (t["name"][:20], t["sizes"][0]["latency"]["p50"]) for t in lat if t.get("sizes")))
PY
  exit 0
fi
for v in base this; do
  bin=build/p2pscope; [ $v = base ] && bin=$BASE/base/build/p2pscope
  run $bin report-$v
  run $bin bw-$v bw -n 9 --max-samples 9
  run $bin lat-$v lat
  run $bin verify-$v verify
done
for k in report bw; do
  python3 scripts/compare_runs.py "$OUT/$k-base.json" "$OUT/$k-this.json" > "$OUT/compare-$k.txt"
  step "$k: base against this"; tail -2 "$OUT/compare-$k.txt"
done
python3 - "$OUT" <<'PY' | tee "$OUT/compare-lat-verify.txt"
import json, sys
out = sys.argv[1]
for kind in ("lat", "verify"):
    a, b = (json.load(open(f"{out}/{kind}-{v}.json")) for v in ("base", "this"))
    key = "tests" if kind == "lat" else "paths"
    for x, y in zip(a.get(key, []), b.get(key, [])):
        line = f"{kind:6} {x.get('name','')[:28]:28} {x.get('direction','')[:16]:16} {x.get('status')} / {y.get('status')}"
        if kind == "lat" and x.get("sizes") and y.get("sizes"):
            p = lambda t: t["sizes"][0].get("latency", {}).get("p50", 0)
            line += "  p50 %.1f / %.1f ns" % (p(x), p(y))
        print(line)
PY
