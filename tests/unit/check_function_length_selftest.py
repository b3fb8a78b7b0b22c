#!/usr/bin/env python3
"""scripts/check-function-length.py on made-up C files: a function of 81 lines (from its `{` to its `}`, both at
column 0) fails and one of 80 passes; a function-like macro, an initializer with its `{` at column 0, braces in
comments and strings are no functions; a known list accepts exactly what it names and fails once a listed function is
short again or gone. Run by ctest with the repository's root as its argument."""
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
CHECK = os.path.join(ROOT, "scripts", "check-function-length.py")


def function(name, lines, signature="static int {}(int a)"):
    """A definition of `lines` lines counted from its `{` to its `}`, both included."""
    body = "".join("    a += {};\n".format(k) for k in range(lines - 3))
    return signature.format(name) + "\n{\n" + body + "    return a;\n}\n"


# A function-like macro whose body spans many lines with its braces at column 0, and an initializer whose `{` and
# `}` stand at column 0: neither is a function, however long.
MACRO = "#define PSC_MANY(x) \\\n{ \\\n" + "".join("    (x)++; \\\n" for _ in range(90)) + "}\n"
INITIALIZER = "static const int psc_table[] =\n{\n" + "".join("    {},\n".format(k) for k in range(90)) + "};\n"
# Braces and a signature-like text in comments and strings change nothing.
DECOYS = ('/* int fake(void)\n{\n} */\nstatic const char *psc_s = "{";\n'
          "static const char psc_c = '}';\n// x(y)\n")


class CheckFunctionLength(unittest.TestCase):
    def run_check(self, sources, known=None, extra=()):
        """Writes `sources` ({name: text}) under a made-up root's src/ and runs the check there; lines are those of
        the `{`."""
        with tempfile.TemporaryDirectory() as d:
            for sub in ("lib", "kernels"):
                os.makedirs(os.path.join(d, "src", sub))
            os.makedirs(os.path.join(d, "scripts"))
            for name, text in sources.items():
                with open(os.path.join(d, "src", name), "w", encoding="utf-8") as f:
                    f.write(text)
            if known is not None:
                with open(os.path.join(d, "scripts", "function-length-known.txt"), "w", encoding="utf-8") as f:
                    f.write(known)
            r = subprocess.run([sys.executable, CHECK, "--root", d, *extra], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, universal_newlines=True)
            return r.returncode, r.stdout

    def test_80_lines_pass(self):
        rc, out = self.run_check({"lib/a.c": DECOYS + function("psc_fits", 80) + MACRO + INITIALIZER})
        self.assertEqual(rc, 0, out)
        self.assertIn("1 files, 0 functions over 80 lines: 0 known, 0 new; nothing new", out)

    def test_81_lines_fail(self):
        text = function("psc_fits", 80) + "\n" + function("psc_long", 81)
        rc, out = self.run_check({"lib/a.c": text})
        self.assertEqual(rc, 1, out)
        self.assertIn("81 src/lib/a.c:84 psc_long\n", out)
        self.assertNotIn("psc_fits", out)

    def test_macro_and_initializer_are_no_functions(self):
        rc, out = self.run_check({"lib/a.c": MACRO + INITIALIZER + DECOYS})
        self.assertEqual(rc, 0, out)
        self.assertNotIn("PSC_MANY", out)
        self.assertNotIn("psc_table", out)

    def test_limit_and_signature_forms(self):
        # A signature over several lines, a pointer result, an attribute after the list; --limit moves the bar.
        text = (function("psc_split", 20, "static struct psc_x *\n{}(int a,\n          int b)")
                + function("psc_attr", 20, "static int {}(int a) __attribute__((cold))"))
        rc, out = self.run_check({"lib/a.c": text}, extra=("--limit", "19"))
        self.assertEqual(rc, 1, out)
        self.assertIn("20 src/lib/a.c:4 psc_split\n", out)
        self.assertIn("psc_attr\n", out)
        self.assertEqual(self.run_check({"lib/a.c": text}, extra=("--limit", "20"))[0], 0)

    def test_device_code_is_read(self):
        text = function("psc_kernel", 81, 'extern "C" __global__ void __launch_bounds__(256) {}(int a)')
        rc, out = self.run_check({"kernels/k.cu": text})
        self.assertEqual(rc, 1, out)
        self.assertIn("81 src/kernels/k.cu:2 psc_kernel\n", out)

    def test_known_list_is_exact(self):
        sources = {"lib/a.c": function("psc_long", 81), "lib/b.c": function("psc_long", 81)}
        known = "# why each is still long\nsrc/lib/a.c psc_long\n"
        rc, out = self.run_check(sources, known)
        self.assertEqual(rc, 1, out)
        self.assertIn("81 src/lib/a.c:2 psc_long (known: line 2 of the list)", out)
        self.assertIn("81 src/lib/b.c:2 psc_long\n", out)
        rc, out = self.run_check(sources, known + "src/lib/b.c psc_long\n")
        self.assertEqual(rc, 0, out)
        self.assertIn("2 functions over 80 lines: 2 known, 0 new; nothing new", out)
        # b.c's function is short again: its line must go, so the list never names more than is true.
        sources["lib/b.c"] = function("psc_long", 80)
        rc, out = self.run_check(sources, known + "src/lib/b.c psc_long\n")
        self.assertEqual(rc, 1, out)
        self.assertIn("src/lib/b.c psc_long: no longer over 80 lines (good): remove line 3", out)
        # --list prints today's offenders in the list's format
        rc, out = self.run_check(sources, extra=("--list",))
        self.assertEqual((rc, out), (0, "src/lib/a.c psc_long\n"))

    def test_bad_input(self):
        rc, out = self.run_check({"lib/a.c": function("psc_long", 81)}, "src/lib/a.c\n")
        self.assertEqual(rc, 2, out)
        self.assertIn("expected `FILE NAME`", out)
        rc, out = self.run_check({"lib/a.c": "static int psc_open(void)\n{\n    return 0;\n"})
        self.assertEqual(rc, 2, out)
        self.assertIn("src/lib/a.c:2: the `{` of psc_open has no `}` at column 0", out)


if __name__ == "__main__":
    unittest.main(verbosity=2)
