#!/usr/bin/env python3
"""Checks that src/ calls only down its layers (docs/ARCHITECTURE.md), from the objects' symbols as nm sees them.

The graph: each object's global definitions (T D B R G S C V W) and uses (U w); a use of a symbol that exactly one
other object defines is a call from the user's unit to the definer's. A unit is a folder of src/ (lib/xfer, cli), or
a file directly in src/lib (lib/api_guard.c), as scripts/layers.txt places it. Local symbols (t d b r) never cross
files; a symbol defined by several objects, or only outside src/ (libc, hwloc, the embedded fatbin), is no edge.

It fails (exit 1) on
  - a call cycle between units (a strongly connected component of more than one unit), and
  - a call from a unit to one in a higher layer (upward),
that scripts/layers-known.txt does not list exactly, and on a listed one that is gone or changed: the list only
shrinks, and each change to it is a line in a diff. Exit 2: bad input (a unit no layer holds, no objects, no edges).

Usage: check-layers.py [--layers FILE] [--known FILE] [--list] (--nm-output FILE | OBJECT.o...)
  OBJECT.o are CMake's objects (.../<target>.dir/<path under src>.o); --nm-output reads `nm -A` text instead.
  --list prints today's violations in the known file's format (to start or rewrite it) and exits 0.
  NM names the nm to run (default nm).
"""
import argparse
import os
import re
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
DEFINED = set("TDBRGSCVW")
USED = set("Uw")
# GNU nm -A: "obj:ADDR T sym", "obj:    U sym"; llvm-nm -A (clang builds' CMAKE_NM) puts a space after the colon
NM_LINE = re.compile(r"^(?P<obj>.+?):\s*(?:[0-9a-fA-F]+\s+)?(?P<type>\S)\s+(?P<sym>\S+)$")
KNOWN_UP = re.compile(r"^(?P<src>\S+)\s+->\s+(?P<dst>\S+)\s+\((?P<syms>[^)]*)\)$")


class InputError(Exception):
    pass


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if line:
                yield n, line


def read_layers(path):
    """scripts/layers.txt: lowest layer first, one per line, `name: unit unit ...`. Returns [(name, [units])]."""
    layers, seen = [], {}
    for n, line in read_lines(path):
        name, sep, rest = line.partition(":")
        if not sep or not rest.split():
            raise InputError(f"{path}:{n}: expected `layer: unit unit ...`")
        units = [u.rstrip("/") for u in rest.split()]
        for u in units:
            if u in seen:
                raise InputError(f"{path}:{n}: {u} is already in layer {seen[u]}")
            seen[u] = name.strip()
        layers.append((name.strip(), units))
    if not layers:
        raise InputError(f"{path}: no layers")
    return layers


def read_known(path):
    """The known violations: `cycle: a, b, c` and `from -> to (sym, sym)`. Returns (cycles, ups)."""
    cycles, ups = {}, {}
    if path is None or not os.path.exists(path):
        return cycles, ups
    for n, line in read_lines(path):
        if line.startswith("cycle:"):
            units = frozenset(u.strip() for u in line[len("cycle:"):].split(",") if u.strip())
            if len(units) < 2:
                raise InputError(f"{path}:{n}: a cycle has two units or more")
            cycles[units] = n
            continue
        m = KNOWN_UP.match(line)
        if not m:
            raise InputError(f"{path}:{n}: expected `cycle: a, b, ...` or `from -> to (symbol, ...)`")
        syms = frozenset(s.strip() for s in m["syms"].split(",") if s.strip())
        ups[(m["src"], m["dst"])] = (syms, n)
    return cycles, ups


def source_of(obj):
    """CMake's object path to the source's path under src/ (lib/xfer/bw.c), or None when outside src/."""
    path = obj.replace("\\", "/")
    if ".dir/" in path:
        path = path.rsplit(".dir/", 1)[1]
    if path.endswith(".o"):
        path = path[:-2]
    if path.startswith("__/") or path.startswith("/"):
        return None  # generated or outside src/ (the fatbin's assembler file)
    return path


def run_nm(objects):
    nm = os.environ.get("NM") or "nm"
    out = []
    for i in range(0, len(objects), 200):
        r = subprocess.run([nm, "-A", *objects[i:i + 200]], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True)
        if r.returncode != 0:
            raise InputError(f"{nm}: {r.stderr.strip()}")
        out.append(r.stdout)
    return "".join(out)


def parse_nm(text):
    """`nm -A` text to {source: (defined set, used set)}; objects outside src/ left out."""
    files = {}
    for line in text.splitlines():
        m = NM_LINE.match(line.strip())
        if not m:
            continue
        src = source_of(m["obj"])
        if src is None:
            continue
        defs, uses = files.setdefault(src, (set(), set()))
        if m["type"] in DEFINED:
            defs.add(m["sym"])
        elif m["type"] in USED:
            uses.add(m["sym"])
    return files


def unit_of(src, units):
    """The unit that holds a source: the longest listed unit that is the file or a folder above it."""
    best = None
    for u in units:
        if (src == u or src.startswith(u + "/")) and (best is None or len(u) > len(best)):
            best = u
    return best


def build_graph(files, layers):
    rank = {u: i for i, (_, us) in enumerate(layers) for u in us}
    unit = {}
    for src in files:
        unit[src] = unit_of(src, rank)
        if unit[src] is None:
            raise InputError(f"{src}: in no layer: place its folder (or, directly in src/lib, the file) in a layer "
                             "of scripts/layers.txt")
    definer = {}
    for src, (defs, _) in files.items():
        for s in defs:
            definer.setdefault(s, []).append(src)
    edges = {}  # (from unit, to unit) -> {symbol: set of "user -> definer" file pairs}
    for src, (_, uses) in files.items():
        for s in uses:
            d = definer.get(s)
            if not d or len(d) != 1:
                continue  # outside src/, or defined twice
            a, b = unit[src], unit[d[0]]
            if a != b:
                edges.setdefault((a, b), {}).setdefault(s, set()).add(f"{src} -> {d[0]}")
    return rank, set(unit.values()), edges


def sccs(nodes, edges):
    """Tarjan's strongly connected components of more than one node, each a frozenset."""
    succ = {n: sorted(b for (a, b) in edges if a == n) for n in nodes}
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        work = [(v, iter(succ[v]))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        while work:
            node, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(succ[w])))
                    break
                if w in on:
                    low[node] = min(low[node], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = set()
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.add(w)
                        if w == node:
                            break
                    if len(comp) > 1:
                        out.append(frozenset(comp))

    for n in sorted(nodes):
        if n not in index:
            visit(n)
    return out


def cycle_line(units):
    return "cycle: " + ", ".join(sorted(units))


def up_line(a, b, syms):
    return f"{a} -> {b} ({', '.join(sorted(syms))})"


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layers", default=os.path.join(ROOT, "scripts", "layers.txt"))
    ap.add_argument("--known", default=os.path.join(ROOT, "scripts", "layers-known.txt"))
    ap.add_argument("--nm-output")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--verbose", action="store_true", help="name the files of each violating call")
    ap.add_argument("objects", nargs="*")
    args = ap.parse_args(argv)
    try:
        layers = read_layers(args.layers)
        if args.nm_output:
            with open(args.nm_output, encoding="utf-8") as f:
                text = f.read()
        elif args.objects:
            text = run_nm(args.objects)
        else:
            raise InputError("no objects and no --nm-output")
        files = parse_nm(text)
        if not files:
            raise InputError("no objects of src/ in the input")
        rank, nodes, edges = build_graph(files, layers)
        if not edges:
            raise InputError("no calls between units: is the input right?")
        known_cycles, known_ups = read_known(None if args.list else args.known)
    except (InputError, OSError) as e:
        print(f"check-layers: {e}", file=sys.stderr)
        return 2

    name = {u: layers[r][0] for u, r in rank.items()}
    ups = {(a, b): syms for (a, b), syms in edges.items() if rank[a] < rank[b]}
    cycles = sccs(nodes, edges)

    if args.list:
        for c in sorted(cycles, key=lambda c: (-len(c), sorted(c))):
            print(cycle_line(c))
        for (a, b) in sorted(ups, key=lambda e: (rank[e[0]], e[0], rank[e[1]], e[1])):
            print(up_line(a, b, ups[(a, b)]))
        return 0

    problems = []
    for c in sorted(cycles, key=sorted):
        if c in known_cycles:
            continue
        within = [k for k in known_cycles if c < k]
        inner = sorted(f"{a} -> {b}" for (a, b) in edges if a in c and b in c)
        if within:
            problems.append(f"a known cycle shrank (good): line {known_cycles[within[0]]} of the known list is now\n"
                            f"    {cycle_line(c)}")
        else:
            problems.append(f"a call cycle: {cycle_line(c)}\n  calls among its units: " + ", ".join(inner))
    for k, n in sorted(known_cycles.items(), key=lambda kv: kv[1]):
        if k not in cycles and not any(c < k for c in cycles):
            problems.append(f"a known cycle is gone (good): remove line {n} of the known list, {cycle_line(k)}")
    for (a, b), syms in sorted(ups.items()):
        detail = ""
        if args.verbose:
            detail = "".join(f"\n    {s}: {', '.join(sorted(p))}" for s, p in sorted(syms.items()))
        if (a, b) not in known_ups:
            problems.append(f"a call up from {a} ({name[a]}) to {b} ({name[b]}): {up_line(a, b, syms)}{detail}")
            continue
        listed, n = known_ups[(a, b)]
        new, gone = set(syms) - listed, listed - set(syms)
        if new:
            problems.append(f"new calls up from {a} to {b}, beside line {n} of the known list: "
                            f"{', '.join(sorted(new))}{detail}")
        if gone:
            problems.append(f"known calls up from {a} to {b} are gone (good): line {n} of the known list is now\n"
                            f"    {up_line(a, b, syms)}")
    for (a, b), (listed, n) in sorted(known_ups.items(), key=lambda kv: kv[1][1]):
        if (a, b) not in ups:
            problems.append(f"a known call up is gone (good): remove line {n} of the known list, "
                            f"{up_line(a, b, listed)}")

    if problems:
        for p in problems:
            print(f"check-layers: {p}", file=sys.stderr)
        known = os.path.abspath(args.known)
        shown = os.path.relpath(known, ROOT) if known.startswith(ROOT + os.sep) else args.known
        print(f"check-layers: {len(problems)} differences from {shown}; `check-layers.py --list OBJECTS` prints "
              "today's list, --verbose names the files of each call up", file=sys.stderr)
        return 1
    print(f"check-layers: {len(nodes)} units in {len(layers)} layers, {len(edges)} unit edges; "
          f"{len(known_cycles)} known cycles and {len(known_ups)} known upward edges, nothing new")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
