#!/usr/bin/env python3
"""Checks that no function in src/ is longer than a limit (issue 33: 80 lines).

A function's length is counted from the line of its opening `{`, which stands at column 0, to the line of its closing
`}` at column 0, both included. A `{` at column 0 opens a function when the code before it (since the last `;`, `}`
or preprocessor line) ends with the `)` of a parameter list; the function's name is the identifier before that list's
`(`. Comments, strings and preprocessor lines (with their continuations) are read as blank, so a function-like macro
is no function, and neither is an initializer (`... =` before the `{`).

It reads src/**/*.c and the device code src/kernels/*.cu, *.cuh (written C-style), prints `LINES FILE:LINE NAME` for
each function over the limit, longest first, and fails (exit 1) on any that scripts/function-length-known.txt does not
list; and on a listed one that is no longer over the limit (or no longer there) in the files read: the list only
shrinks, and each change to it is a line in a diff. Exit 2: bad input (an unreadable file, a malformed known list, a `{` with no `}`).

Usage: check-function-length.py [--limit N] [--root DIR] [--known FILE] [--list] [FILE...]
  FILE...   the files to read (default: those above under DIR/src); names are printed relative to DIR
  --root    the repository's root (default: the one this script is in)
  --known   the known list, one `FILE NAME` a line, `#` starts a comment (default: DIR/scripts/function-length-known.txt;
            a missing file is an empty list)
  --list    print every function over the limit in the known list's format (to start or rewrite it) and exit 0
"""
import argparse
import glob
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
IDENT_BEFORE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*$")
ATTRIBUTES = {"__attribute__", "__declspec", "__launch_bounds__", "__nv_pure__"}


class InputError(Exception):
    pass


def blank_comments_and_strings(text):
    """The text with comments, string and character literals replaced by spaces; newlines are kept."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
        elif text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out.append(" " * (end - i))
            i = end
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j - 1]) + c)
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def code_lines(text):
    """The file's lines as the checker reads them: no comments or strings, each preprocessor line (with its
    continuations) a lone `;`, which ends whatever came before it as a statement does."""
    lines = blank_comments_and_strings(text).split("\n")
    in_directive = False
    for k, line in enumerate(lines):
        if in_directive or line.lstrip().startswith("#"):
            in_directive = line.rstrip().endswith("\\")
            lines[k] = ";"
    return lines


def function_name(before):
    """The name of the function whose parameter list ends `before` (the code since the last `;`, `{` or `}`), or
    None when `before` does not end with a parameter list. Attributes after the list are passed over."""
    code = before.rstrip()
    while code.endswith(")"):
        depth = 0
        for k in range(len(code) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(code[k], 0)
            if depth == 0:
                break
        m = IDENT_BEFORE.search(code[:k])
        if not m:
            return None
        if m.group(1) not in ATTRIBUTES:
            return m.group(1)
        code = code[:m.start()].rstrip()
    return None


def functions(path, text):
    """Every function definition of one file: (first line, lines, name), lines numbered from 1."""
    lines = code_lines(text)
    found, before, k = [], "", 0
    while k < len(lines):
        line = lines[k]
        name = function_name(before) if line.startswith("{") else None
        if name is not None:
            end = next((j for j in range(k + 1, len(lines)) if lines[j].startswith("}")), None)
            if end is None:
                raise InputError(f"{path}:{k + 1}: the `{{` of {name} has no `}}` at column 0")
            found.append((k + 1, end - k + 1, name))
            before, k = "", end + 1
            continue
        # the code since the last statement, block or directive: what a `{` at column 0 is read against
        before = re.split(r"[;{}]", before + "\n" + line)[-1]
        k += 1
    return found


def source_files(root):
    names = glob.glob(os.path.join(root, "src", "**", "*.c"), recursive=True)
    for ext in ("cu", "cuh"):
        names += glob.glob(os.path.join(root, "src", "kernels", "*." + ext))
    return sorted(names)


def read_known(path):
    """The known list: {(file, name): line number}."""
    known = {}
    if path is None or not os.path.exists(path):
        return known
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            fields = line.split("#", 1)[0].split()
            if not fields:
                continue
            if len(fields) != 2:
                raise InputError(f"{path}:{n}: expected `FILE NAME`")
            if tuple(fields) in known:
                raise InputError(f"{path}:{n}: {fields[0]} {fields[1]} is listed twice")
            known[tuple(fields)] = n
    return known


def long_functions(root, files, limit):
    """Every function over the limit: [(lines, file relative to root, first line, name)], longest first."""
    over = []
    for path in files:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError as e:
            raise InputError(f"{path}: {e.strerror}") from e
        rel = os.path.relpath(path, root)
        for first, length, name in functions(rel, text):
            if length > limit:
                over.append((length, rel, first, name))
    over.sort(key=lambda o: (-o[0], o[1], o[2]))
    return over


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--limit", type=int, default=80)
    ap.add_argument("--root", default=ROOT)
    ap.add_argument("--known")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("files", nargs="*")
    args = ap.parse_args()
    known_path = args.known or os.path.join(args.root, "scripts", "function-length-known.txt")
    try:
        files = args.files or source_files(args.root)
        if not files:
            raise InputError(f"{args.root}: no source files under src/")
        over = long_functions(args.root, files, args.limit)
        known = read_known(known_path)
    except InputError as e:
        print(f"check-function-length: {e}", file=sys.stderr)
        return 2
    if args.list:
        for _, rel, _, name in over:
            print(f"{rel} {name}")
        return 0
    failed = False
    for length, rel, first, name in over:
        listed = (rel, name) in known
        failed |= not listed
        print(f"{length} {rel}:{first} {name}" + (f" (known: line {known[(rel, name)]} of the list)" if listed else ""))
    still = {(rel, name) for _, rel, _, name in over}
    read = {os.path.relpath(path, args.root) for path in files}
    for (rel, name), n in sorted(known.items(), key=lambda kv: kv[1]):
        if rel in read and (rel, name) not in still:
            failed = True
            print(f"{rel} {name}: no longer over {args.limit} lines (good): remove line {n} of {os.path.relpath(known_path, args.root)}")
    new = sum(1 for _, rel, _, name in over if (rel, name) not in known)
    print(f"{len(files)} files, {len(over)} functions over {args.limit} lines: {len(over) - new} known, {new} new"
          + ("" if failed else "; nothing new"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
