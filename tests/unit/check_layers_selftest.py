#!/usr/bin/env python3
"""scripts/check-layers.py on made-up `nm -A` text: three folders a (lowest), b, c (highest). It must accept a clean
graph, find a cycle and a call up, accept them once the known list names them exactly, and fail again when a listed
one is gone or changed; local symbols, symbols defined twice and symbols from outside src/ are no calls. Run by ctest
with the repository's root as its argument."""
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
CHECK = os.path.join(ROOT, "scripts", "check-layers.py")

LAYERS = "# lowest first\nlow: lib/a\nmid: lib/b lib/top.c\nhigh: lib/c\n"

# c calls b and a, b calls a: all downward. Local (t), doubly defined (dup) and outside-src (__/, libc) symbols
# must add no edge.
CLEAN = """\
b/CMakeFiles/x.dir/lib/a/a1.c.o:0000000000000000 T a_one
b/CMakeFiles/x.dir/lib/a/a1.c.o:0000000000000010 t b_local
b/CMakeFiles/x.dir/lib/a/a1.c.o:0000000000000020 T dup
b/CMakeFiles/x.dir/lib/a/a1.c.o:                 U memcpy
b/CMakeFiles/x.dir/lib/a/a2.c.o:0000000000000000 T a_two
b/CMakeFiles/x.dir/lib/a/a2.c.o:0000000000000000 B a_data
b/CMakeFiles/x.dir/lib/a/a2.c.o:                 U a_one
b/CMakeFiles/x.dir/lib/a/a2.c.o:                 U fatbin
b/CMakeFiles/x.dir/lib/b/b.c.o:0000000000000000 T b_one
b/CMakeFiles/x.dir/lib/b/b.c.o:0000000000000000 t b_local
b/CMakeFiles/x.dir/lib/b/b.c.o:0000000000000030 T dup
b/CMakeFiles/x.dir/lib/b/b.c.o:                 U a_two
b/CMakeFiles/x.dir/lib/b/b.c.o:                 U a_data
b/CMakeFiles/x.dir/lib/c/c.c.o:0000000000000000 T c_one
b/CMakeFiles/x.dir/lib/c/c.c.o:                 U b_one
b/CMakeFiles/x.dir/lib/c/c.c.o:                 U a_one
b/CMakeFiles/x.dir/__/embed.S.o:0000000000000000 R fatbin
"""
# a calls c (up, across two layers) and b (up), which calls a: one cycle a, b, c; an up call a -> b.
BAD = CLEAN + """\
b/CMakeFiles/x.dir/lib/a/a1.c.o:                 U b_one
b/CMakeFiles/x.dir/lib/a/a1.c.o:                 U c_one
b/CMakeFiles/x.dir/lib/a/a2.c.o:                 U b_local
b/CMakeFiles/x.dir/lib/a/a2.c.o:                 U dup
"""
KNOWN = "# today\ncycle: lib/a, lib/b, lib/c\nlib/a -> lib/b (b_one)\nlib/a -> lib/c (c_one)\n"


class CheckLayers(unittest.TestCase):
    def run_check(self, nm, known=None, layers=LAYERS, extra=()):
        with tempfile.TemporaryDirectory() as d:
            paths = {}
            for name, text in (("nm.txt", nm), ("layers.txt", layers), ("known.txt", known)):
                paths[name] = os.path.join(d, name)
                if text is not None:
                    with open(paths[name], "w", encoding="utf-8") as f:
                        f.write(text)
            r = subprocess.run([sys.executable, CHECK, "--layers", paths["layers.txt"], "--known",
                                paths["known.txt"], "--nm-output", paths["nm.txt"], *extra],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
            return r.returncode, r.stdout

    def test_clean_graph_passes(self):
        rc, out = self.run_check(CLEAN)
        self.assertEqual(rc, 0, out)
        self.assertIn("3 units in 3 layers, 3 unit edges; 0 known cycles and 0 known upward edges", out)

    def test_llvm_nm_format(self):
        # llvm-nm -A (a clang build's CMAKE_NM) puts a space after the object's colon: the same graph
        llvm = "".join(l.replace(".o:", ".o: ", 1) + "\n" for l in BAD.splitlines())
        rc, out = self.run_check(llvm)
        self.assertNotEqual(rc, 0, out)
        self.assertIn("lib/a -> lib/b", out)
        rc, out = self.run_check(llvm, KNOWN)
        self.assertEqual(rc, 0, out)

    def test_finds_cycle_and_calls_up(self):
        rc, out = self.run_check(BAD)
        self.assertEqual(rc, 1, out)
        self.assertIn("a call cycle: cycle: lib/a, lib/b, lib/c", out)
        self.assertIn("calls among its units: lib/a -> lib/b, lib/a -> lib/c, lib/b -> lib/a, lib/c -> lib/a, "
                      "lib/c -> lib/b", out)
        self.assertIn("a call up from lib/a (low) to lib/b (mid): lib/a -> lib/b (b_one)", out)
        self.assertIn("a call up from lib/a (low) to lib/c (high): lib/a -> lib/c (c_one)", out)
        self.assertNotIn("b_local", out)
        self.assertNotIn("dup", out)

    def test_list_prints_the_known_format(self):
        rc, out = self.run_check(BAD, extra=("--list",))
        self.assertEqual(rc, 0, out)
        self.assertEqual(out, "".join(KNOWN.splitlines(True)[1:]))

    def test_known_violations_pass(self):
        rc, out = self.run_check(BAD, KNOWN)
        self.assertEqual(rc, 0, out)
        self.assertIn("1 known cycles and 2 known upward edges, nothing new", out)

    def test_new_symbol_on_a_known_edge_fails(self):
        rc, out = self.run_check(BAD + "b/CMakeFiles/x.dir/lib/a/a2.c.o:                 U c_one\n"
                                 "b/CMakeFiles/x.dir/lib/c/c.c.o:0000000000000040 T c_two\n"
                                 "b/CMakeFiles/x.dir/lib/a/a2.c.o:                 U c_two\n", KNOWN)
        self.assertEqual(rc, 1, out)
        self.assertIn("new calls up from lib/a to lib/c, beside line 4 of the known list: c_two", out)

    def test_gone_violations_fail_until_removed(self):
        # a no longer calls c: the up call and the cycle through c are gone, a <-> b stays.
        rc, out = self.run_check(BAD.replace("U c_one", "U a_one"), KNOWN)
        self.assertEqual(rc, 1, out)
        self.assertIn("a known call up is gone (good): remove line 4 of the known list", out)
        self.assertIn("a known cycle shrank (good): line 2 of the known list is now\n    cycle: lib/a, lib/b", out)
        # A listed cycle or call that never existed fails too: the list cannot rot.
        rc, out = self.run_check(CLEAN, "cycle: lib/b, lib/c\nlib/b -> lib/c (c_one)\n")
        self.assertEqual(rc, 1, out)
        self.assertIn("a known cycle is gone (good): remove line 1", out)
        self.assertIn("a known call up is gone (good): remove line 2", out)

    def test_cycle_within_one_layer(self):
        # b and top.c share a layer: calls between them are allowed, a cycle between them is not.
        nm = CLEAN + ("b/CMakeFiles/x.dir/lib/top.c.o:0000000000000000 T top_one\n"
                      "b/CMakeFiles/x.dir/lib/top.c.o:                 U b_one\n")
        self.assertEqual(self.run_check(nm)[0], 0)
        rc, out = self.run_check(nm + "b/CMakeFiles/x.dir/lib/b/b.c.o:                 U top_one\n")
        self.assertEqual(rc, 1, out)
        self.assertIn("a call cycle: cycle: lib/b, lib/top.c", out)
        self.assertNotIn("a call up", out)

    def test_unplaced_unit_is_bad_input(self):
        rc, out = self.run_check(CLEAN + "b/CMakeFiles/x.dir/lib/d/d.c.o:                 U a_one\n")
        self.assertEqual(rc, 2, out)
        self.assertIn("lib/d/d.c: in no layer", out)
        rc, out = self.run_check(CLEAN, layers="low: lib/a\nhigh: lib/a\n")
        self.assertEqual(rc, 2, out)


if __name__ == "__main__":
    unittest.main(verbosity=2)
