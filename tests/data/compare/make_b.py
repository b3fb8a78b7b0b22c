#!/usr/bin/env python3
"""Derive the B runs of tests/data/compare from the A runs (real runs on the
fake driver, see tests/data/README.md) by the edits each test relies on.
Run it here: python3 make_b.py (it rewrites *_b.json and bw_better.json)."""
import copy
import json
import statistics


def load(name):
    with open(name) as f:
        return json.load(f)


def save(name, doc):
    with open(name, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")


def set_samples(t, samples):
    """A bandwidth test's samples and the statistics the writer derives from them."""
    t["samples"] = samples
    t["stats"] = {"n": len(samples), "median": statistics.median(samples), "min": min(samples),
                  "max": max(samples), "mean": statistics.mean(samples), "stddev": statistics.stdev(samples)}
    for x in t["transfers"]:
        x["median_gbs"] = t["stats"]["median"]


def scale_pctl(p, k):
    for key in ("min", "p50", "p90", "p99", "max", "mean"):
        p[key] *= k


# bw: one case 20 % slower beyond the noise, one 15 % faster, one 3 % slower within the noise (its spread
# widened to A's), one only in A, one only in B; another driver, CUDA version and clock.
a = load("bw_a.json")
b = copy.deepcopy(a)
b["started_utc"] = "2026-11-24T10:40:08Z"
b["system"]["driver_release"] = "580.159.04"
b["system"]["cuda_driver_version"] = 13010
b["devices"][1]["sm_clock_mhz"] = 1755
t = b["tests"]
set_samples(t[0], [s * 0.80 for s in t[0]["samples"]])
set_samples(t[1], [s * 1.15 for s in t[1]["samples"]])
m, lo, hi = t[2]["stats"]["median"], t[2]["stats"]["min"], t[2]["stats"]["max"]
set_samples(t[2], [lo * 0.90, m * 0.95, m * 0.97, m * 0.99, hi])
local = copy.deepcopy(t[3])
local.update(name="gpu_local_ce", title="GPU local, copy engine (device memory -> same device)",
             direction="gpu0 -> gpu0", src="gpu0", dst="gpu0", issuer="gpu0", engine="copy_engine")
local.pop("host_memory", None)
local["transfers"] = [{"src": "gpu0", "dst": "gpu0", "issuer": "gpu0", "median_gbs": local["stats"]["median"]}]
t[3] = local
b["parameters"]["tests"].append("gpu_local_ce")
save("bw_b.json", b)

# bw, an improvement alone: one case 15 % faster beyond the noise, the rest as in A.
b = copy.deepcopy(a)
b["started_utc"] = "2026-11-24T10:40:08Z"
set_samples(b["tests"][1], [s * 1.15 for s in b["tests"][1]["samples"]])
save("bw_better.json", b)

# lat: a flag round trip 30 % slower (latency up: worse), a pointer chase twice as fast.
a = load("lat_a.json")
b = copy.deepcopy(a)
b["started_utc"] = "2026-11-24T10:40:08Z"
for t in b["tests"]:
    k = 1.3 if (t["name"], t["direction"]) == ("gpu_gpu_flag", "gpu0 -> gpu1") else \
        0.5 if (t["name"], t["direction"]) == ("gpu_to_gpu_chase", "gpu0 -> gpu1") else 1.0
    for s in t["sizes"]:
        scale_pctl(s["latency"], k)
        s["samples"] = [v * k for v in s["samples"]]
save("lat_b.json", b)

# coll: 1 KiB out of place 3.5 times slower (beyond the noise), 4 KiB out of place 30 % slower (within the
# per-operation spread), 4 KiB in place with wrong elements now.
a = load("coll_a.json")
b = copy.deepcopy(a)
b["started_utc"] = "2026-11-24T10:40:08Z"
rows = b["coll"]["rows"]
for row, k in ((rows[0], 3.5), (rows[1], 1.3)):
    h = row["out_of_place"]
    h["time_us"] *= k
    h["algbw_gbs"] /= k
    h["busbw_gbs"] /= k
    scale_pctl(h["per_operation_us"], k)
rows[1]["in_place"]["wrong"] = 3
b["coll"]["failed_rows"] = 1
b["coll"]["wrong_elements"] = 3
b["exit_code"] = 1
save("coll_b.json", b)

# report: the host -> GPU copy-engine case fails now (a wrong byte), the rest as in A.
a = load("report_a.json")
b = copy.deepcopy(a)
b["started_utc"] = "2026-11-24T10:40:08Z"
for t in b["tests"]:
    if t["name"] == "host_to_gpu_ce":
        t["status"] = "failed"
        t["reason"] = "wrong data at offset 4088: expected 0x5a, found 0x00"
        t["samples"] = []
        t["stats"] = None
        t["verify"].update(bad_samples=1, bad_bytes=8, first_bad_offset=4088, expected=90, found=0)
b["exit_code"] = 1
save("report_b.json", b)
