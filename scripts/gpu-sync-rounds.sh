#!/bin/bash
# Run on the lent GPU machine with .deps carried, holding base.tar and v-*.tar made here with
# `git archive --prefix=NAME/ -o .deps/NAME.tar REF` (base: the earlier version): builds each version and runs
# the synchronous-copy latency tests five rounds, the versions in turn, printing each p50 (1 B) and the median.
set -u; W=/tmp/bis; R=$PWD; rm -rf $W; mkdir -p $W
tar -C $W -xf .deps/base.tar
for v in v-bd699c2 v-fd17d29 v-head; do tar -C $W -xf .deps/$v.tar; done
V="base v-bd699c2 v-fd17d29 v-head"
for d in $V; do (cd $W/$d && mkdir -p .deps && cp $R/.deps/*.deb .deps/ && P2PSCOPE_WERROR=0 scripts/build.sh -DBUILD_TESTING=OFF > $W/build-$d.log 2>&1; echo "$d build $?") & done; wait
for i in 1 2 3 4 5; do for d in $V; do $W/$d/build/p2pscope lat -t host_to_gpu_sync_copy_pageable,host_to_gpu_sync_copy,gpu_to_host_sync_copy --json=$W/$d-$i.json >/dev/null 2>&1; done; done
python3 - $W <<'PY'
import json, sys, statistics
W = sys.argv[1]
for d in ("base", "v-bd699c2", "v-fd17d29", "v-head"):
    rows = {}
    for i in range(1, 6):
        try:
            for t in json.load(open(f"{W}/{d}-{i}.json"))["tests"]:
                rows.setdefault(t["name"], []).append(t["sizes"][0]["latency"]["p50"])
        except Exception as e:
            print(d, i, "error", e)
    print(d.ljust(10), "  ".join("%s %s med %.0f" % (k[:24], [round(x) for x in v], statistics.median(v)) for k, v in rows.items()))
PY
