#!/usr/bin/env python3
"""scripts/check-opening-comments.py on made-up files: a comment after the includes, `#define _GNU_SOURCE` or an
include guard opens the file; code, a macro or nothing before any comment does not, nor a comment that comes only
after the code; tests/data is not read. Run by ctest with the repository's root as its argument."""
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
CHECK = os.path.join(ROOT, "scripts", "check-opening-comments.py")


class CheckOpeningComments(unittest.TestCase):
    def run_check(self, files):
        """Writes `files` ({path under the root: text}) under a made-up root and runs the check there."""
        with tempfile.TemporaryDirectory() as d:
            for name, text in files.items():
                os.makedirs(os.path.dirname(os.path.join(d, name)), exist_ok=True)
                with open(os.path.join(d, name), "w", encoding="utf-8") as f:
                    f.write(text)
            r = subprocess.run([sys.executable, CHECK, "--root", d], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, universal_newlines=True)
            return r.returncode, r.stdout

    def test_opening_comments_pass(self):
        rc, out = self.run_check({
            "src/lib/a.c": "/* What a.c holds. */\n#include <stdio.h>\nint a;\n",
            "src/lib/b.c": "#define _GNU_SOURCE\n#include \"b.h\"\n\n/*\n * What b.c holds.\n */\nint b;\n",
            "src/lib/b.h": "#ifndef PSC_B_H\n#define PSC_B_H\n// What b.h declares.\nint b;\n#endif\n",
            "src/kernels/k.cuh": "#pragma once\n/* The kernel. */\n",
            "tests/data/made/up.c": "int made_up;\n",
        })
        self.assertEqual(rc, 0, out)
        self.assertIn("4 files, 0 without an opening comment", out)

    def test_code_first_fails(self):
        rc, out = self.run_check({
            "src/lib/a.c": "/* What a.c holds. */\nint a;\n",
            "src/lib/code.c": "#include <stdio.h>\nint code;\n/* Too late. */\n",
            "src/report/macro.c": "#define PSC_N 4\n/* After a macro. */\n",
            "tests/unit/guard.h": "#ifndef PSC_G_H\n#define PSC_OTHER 1\n/* Not the guard's define. */\n",
            "examples/empty.c": "\n",
        })
        self.assertEqual(rc, 1, out)
        for name in ("src/lib/code.c", "src/report/macro.c", "tests/unit/guard.h", "examples/empty.c"):
            self.assertIn(name + ": no opening comment", out)
        self.assertNotIn("src/lib/a.c:", out)
        self.assertIn("5 files, 4 without an opening comment", out)


if __name__ == "__main__":
    unittest.main()
