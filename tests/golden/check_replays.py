#!/usr/bin/env python3
"""The recorded machines replayed, checked against golden outputs (issue 33), the way hwloc tests its own.

Every topology recording at the top of DATA (hwloc XML, `p2pscope topo --save` JSON) goes through `topo`,
`topo --json`, `nvlink`, `doctor` and `doctor --json`, run in DATA with the file's bare name (the outputs name
their source); each output, stdout then stderr and then its exit code, must equal GOLDEN/<file>.<command>.<ext>
byte for byte. A golden file without its recording, or a recording without its golden files, fails too.

    check_replays.py BINARY DATA GOLDEN            check (exit 1 on any difference, with a diff of each)
    check_replays.py --update BINARY DATA GOLDEN   write the golden files from BINARY (review the diff)
"""
import difflib
import os
import subprocess
import sys

RUNS = [  # (name in the golden file, the command's arguments before --topology FILE)
    ("topo.txt", ["topo"]),
    ("topo.json", ["topo", "--json"]),
    ("nvlink.txt", ["nvlink"]),
    ("doctor.txt", ["doctor"]),
    ("doctor.json", ["doctor", "--json"]),
]


def recordings(data):
    return sorted(f for f in os.listdir(data) if f.endswith((".xml", ".json")) and os.path.isfile(os.path.join(data, f)))


def output(binary, data, rec, args):
    env = dict(os.environ, LC_ALL="C", NO_COLOR="1", COLUMNS="100")
    for k in ("P2PSCOPE_LOG", "CUDA_VISIBLE_DEVICES"):
        env.pop(k, None)
    p = subprocess.run([binary] + args + ["--topology", rec], cwd=data, env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    return p.stdout + p.stderr + ("[exit %d]\n" % p.returncode).encode()


def main(argv):
    update = argv[:1] == ["--update"]
    if update:
        argv = argv[1:]
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    binary, data, golden = os.path.abspath(argv[0]), argv[1], argv[2]
    recs = recordings(data)
    if not recs:
        print("no recordings in %s" % data)
        return 1
    want = set()
    bad = 0
    for rec in recs:
        for name, args in RUNS:
            gname = "%s.%s" % (rec, name)
            want.add(gname)
            got = output(binary, data, rec, args)
            path = os.path.join(golden, gname)
            if update:
                with open(path, "wb") as f:
                    f.write(got)
                continue
            if not os.path.exists(path):
                print("missing golden file %s (make it with --update and review it)" % path)
                bad += 1
                continue
            with open(path, "rb") as f:
                exp = f.read()
            if exp != got:
                bad += 1
                print("%s: `p2pscope %s --topology %s` differs from its golden file:" % (path, " ".join(args), rec))
                sys.stdout.writelines(difflib.unified_diff(exp.decode(errors="replace").splitlines(True),
                                                           got.decode(errors="replace").splitlines(True),
                                                           "golden", "now", n=2))
    stale = sorted(set(f for f in os.listdir(golden) if not f.endswith((".py", ".md"))) - want)
    for f in stale:
        if update:
            os.remove(os.path.join(golden, f))
        else:
            print("golden file %s has no recording in %s" % (f, data))
            bad += 1
    if not update:
        print("%d recordings x %d commands: %s" % (len(recs), len(RUNS), "%d differ" % bad if bad else "all as recorded"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
