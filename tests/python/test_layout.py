"""test_layout.py -- the ctypes mirrors in scaletune/_lib.py match the C headers: for every
mirrored struct, sizeof and each field's offset as a C compiler sees them, and the st_status
numbers. Needs a C compiler (cc); skipped without one."""

import os
import re
import subprocess
import tempfile
import unittest
from ctypes import sizeof

import stutil

from scaletune import _lib

STRUCTS = {
    "carbs_param": _lib.CarbsParam,
    "carbs_options": _lib.CarbsOptions,
    "carbs_suggestion_info": _lib.CarbsSuggestionInfo,
    "fit_options": _lib.FitOptions,
    "fit_diag": _lib.FitDiag,
    "fit_alloc": _lib.FitAlloc,
    "fit_boot_options": _lib.FitBootOptions,
    "fit_approach": _lib.FitApproach,
    "runner_status": _lib.RunnerStatus,
}


@unittest.skipUnless(stutil.have("cc"), "no C compiler")
class TestLayout(unittest.TestCase):
    def test_structs_and_status_codes(self):
        src = ['#include <stddef.h>', '#include <stdio.h>', '#include "carbs/carbs.h"',
               '#include "fit/fit.h"', '#include "runner/runner.h"', "int main(void) {"]
        for cname, cls in STRUCTS.items():
            src.append('printf("%s sizeof %%zu\\n", sizeof(%s));' % (cname, cname))
            for f, _ in cls._fields_:
                src.append('printf("%s %s %%zu\\n", offsetof(%s, %s));' % (cname, f, cname, f))
        for v, name in _lib.STATUS_NAMES.items():
            src.append('printf("status %s %%d\\n", (int)%s);' % (name, name))
        src.append("return 0; }")
        with tempfile.TemporaryDirectory() as d:
            c, exe = os.path.join(d, "layout.c"), os.path.join(d, "layout")
            with open(c, "w") as f:
                f.write("\n".join(src) + "\n")
            stutil.run(["cc", "-std=c11", "-D_POSIX_C_SOURCE=200809L", "-I", stutil.ROOT, c, "-o", exe])
            out = stutil.run([exe]).stdout
        seen = 0
        for line in out.splitlines():
            a, b, n = line.split()
            if a == "status":
                self.assertEqual(getattr(_lib, b), int(n), b)
            elif b == "sizeof":
                self.assertEqual(sizeof(STRUCTS[a]), int(n), "sizeof(%s)" % a)
            else:
                self.assertEqual(getattr(STRUCTS[a], b).offset, int(n), "%s.%s" % (a, b))
            seen += 1
        self.assertGreater(seen, 80)

    def test_library_is_the_versioned_soname(self):
        if not stutil.have("readelf"):
            self.skipTest("no readelf")
        so = os.path.realpath(_lib.path)
        self.assertTrue(so.endswith("libscaletune.so.0.1.0"), so)
        out = stutil.run(["readelf", "-d", so]).stdout
        self.assertRegex(out, re.compile(r"SONAME.*\[libscaletune\.so\.0\]"))


if __name__ == "__main__":
    unittest.main()
