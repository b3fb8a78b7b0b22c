#!/usr/bin/env python3
"""Compare two bw/report JSON runs case by case: the default run against a
long one. Prints each case's medians and difference, and the largest
difference for GPU-only paths and for paths through host memory."""
import json
import sys


def cases(path):
    d = json.load(open(path))
    out = {}
    for t in d.get("tests", []):
        if t.get("status") != "passed" or not t.get("stats"):
            continue
        out[(t["name"], t.get("direction", ""), t.get("bytes_per_copy"))] = t["stats"]["median"]
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: compare_runs.py DEFAULT.json LONG.json")
    a, b = cases(sys.argv[1]), cases(sys.argv[2])
    worst = {"gpu": (0.0, None), "host": (0.0, None)}
    for key in sorted(a.keys() & b.keys()):
        diff = 100.0 * (a[key] - b[key]) / b[key]
        kind = "host" if "host" in key[0] or "p2p_off" in key[0] else "gpu"  # P2P off is staged through the host
        print("%-32s %-18s %10.2f %10.2f %+7.2f %%" % (key[0], key[1], a[key], b[key], diff))
        if abs(diff) > abs(worst[kind][0]):
            worst[kind] = (diff, key)
    for kind, (diff, key) in worst.items():
        print("largest difference, %s paths: %+.2f %% (%s)" % (kind, diff, " ".join(map(str, key or ()))))


if __name__ == "__main__":
    main()
