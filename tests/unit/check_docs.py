#!/usr/bin/env python3
"""The docs say what the built binary does: every command of `p2pscope --help` in the README's usage, every long
option of `p2pscope --help`, `p2pscope coll --help` and `p2pscope nvbandwidth --help` and `p2pscope p2pbw --help` in p2pscope(1), the number of bandwidth tests the README and
p2pscope(1) give equal to `p2pscope list`'s, TESTING.md's count of fuzz targets equal to tests/fuzz's (each in its
table), and -i's range in the help equal to the one the parser accepts. Run by ctest: check_docs.py BINARY ROOT."""
import glob
import os
import re
import subprocess
import sys

WORDS = {"four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12}


def run(binary, *args):
    p = subprocess.run([binary, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    return p.stdout + p.stderr


def read(root, name):
    with open(os.path.join(root, name), encoding="utf-8") as f:
        return f.read()


def main(binary, root):
    bad = []
    readme, man, testing = read(root, "README.md"), read(root, "docs/p2pscope.1.md"), read(root, "docs/TESTING.md")
    helptext = run(binary, "--help")
    commands = re.findall(r"^  ([a-z]+) +", helptext.split("Options:")[0], re.M)  # nvbandwidth: one space
    usage = re.search(r"^p2pscope \[COMMAND\] \[OPTIONS\]\n(.*)$", readme, re.M).group(1)
    for c in commands:
        if c not in usage.replace("|", " ").split():
            bad.append("README's usage lacks the command %s" % c)
    for h in (helptext, run(binary, "coll", "--help"), run(binary, "nvbandwidth", "--help"),
              run(binary, "p2pbw", "--help")):
        for opt in sorted(set(re.findall(r"^ +(?:-[A-Za-z0-9], )?(--[a-z][a-z0-9_-]*)", h, re.M))):
            if opt not in man:
                bad.append("p2pscope(1) lacks %s" % opt)
    ntests = len(run(binary, "list").splitlines())
    for name, text, pattern in (("README", readme, r"p2pscope bw`: (\d+) verified bandwidth tests"),
                                ("p2pscope(1)", man, r"lists all (\d+) with a line each")):
        m = re.search(pattern, text)
        if not m or int(m.group(1)) != ntests:
            bad.append("%s gives %s bandwidth tests, `p2pscope list` %d" % (name, m.group(1) if m else "no count", ntests))
    targets = sorted(os.path.basename(f)[:-2] for f in glob.glob(os.path.join(root, "tests/fuzz/fuzz_*.c"))
                     if not f.endswith("fuzz_util.c"))
    m = re.search(r"^(\w+) libFuzzer targets", testing, re.M)
    if not m or WORDS.get(m.group(1).lower()) != len(targets):
        bad.append("TESTING.md counts %s fuzz targets, tests/fuzz has %d" % (m.group(1) if m else "no", len(targets)))
    for t in targets:
        if "| `%s` |" % t not in testing:
            bad.append("TESTING.md's table lacks %s" % t)
    accepted = re.search(r"accepted (\d+) to (\d+)", run(binary, "bw", "-i", "0"))
    line = re.search(r"-i, --iterations N +copies per timed sample, (\d+) to (\d+)", helptext)
    if not accepted or not line or accepted.groups() != line.groups():
        bad.append("-i: the help says %s, the parser accepts %s" % (line and line.groups(), accepted and accepted.groups()))
    for b in bad:
        print("FAIL: " + b)
    print("docs: %d commands, %d bandwidth tests, %d fuzz targets checked; %d wrong" %
          (len(commands), ntests, len(targets), len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
