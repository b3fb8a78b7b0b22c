#!/usr/bin/env python3
"""Checks that every C and CUDA source and header of src/, tests/ (but tests/data: made-up trees the other checks
read) and examples/ opens with a comment saying what it holds (issue 33).

A file opens with a comment when its first line that is not blank, an #include, `#define _GNU_SOURCE`, an include
guard (`#ifndef X_H` followed by `#define X_H`) or `#pragma once` starts a comment (`/*` or `//`). It prints each file
without one and fails (exit 1) when there is any; exit 2 for a file it cannot read.

Usage: check-opening-comments.py [--root DIR] [FILE...]
  FILE...   the files to read (default: *.c, *.h, *.cu, *.cuh under DIR/src, DIR/tests and DIR/examples)
  --root    the repository's root (default: the one this script is in)
"""
import argparse
import glob
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
EXTS = ("c", "h", "cu", "cuh")


def passed_over(line, guard):
    """Whether a stripped line comes before the opening comment without counting; guard holds the include guard's
    name once its #ifndef was read."""
    if not line or line.startswith("#include") or line == "#define _GNU_SOURCE" or line == "#pragma once":
        return True
    m = re.match(r"#ifndef\s+(\w+)$", line)
    if m and guard[0] is None:
        guard[0] = m.group(1)
        return True
    return guard[0] is not None and re.match(r"#define\s+" + re.escape(guard[0]) + r"$", line) is not None


def opens_with_comment(text):
    guard = [None]
    for raw in text.split("\n"):
        line = raw.strip()
        if passed_over(line, guard):
            continue
        return line.startswith("/*") or line.startswith("//")
    return False


def source_files(root):
    names = []
    for top in ("src", "tests", "examples"):
        for ext in EXTS:
            names += glob.glob(os.path.join(root, top, "**", "*." + ext), recursive=True)
    data = os.path.join(root, "tests", "data") + os.sep
    return sorted(n for n in names if not n.startswith(data))


def main():
    ap = argparse.ArgumentParser(description="every source file opens with a comment")
    ap.add_argument("--root", default=ROOT)
    ap.add_argument("files", nargs="*")
    a = ap.parse_args()
    names = a.files or source_files(a.root)
    missing = []
    for name in names:
        try:
            with open(name, encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError) as e:
            print(f"check-opening-comments: {name}: {e}", file=sys.stderr)
            return 2
        if not opens_with_comment(text):
            missing.append(os.path.relpath(name, a.root))
    for name in missing:
        print(f"{name}: no opening comment (say in one comment before the code what this file holds)")
    print(f"{len(names)} files, {len(missing)} without an opening comment")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
