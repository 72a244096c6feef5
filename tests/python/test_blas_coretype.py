"""test_blas_coretype.py -- the binding asks OpenBLAS for its Haswell kernels while it loads
libscaletune on a CPU with AVX2 and FMA (OpenBLAS before 0.3.25 falls back to SSE3 'Prescott'
kernels on CPUs it does not know: suggest 1.5x slower at n = 1000, docs/benchmarks.md section
10), leaves a user's OPENBLAS_CORETYPE alone, and does not pass the variable on to children."""

import os
import subprocess
import sys
import unittest

import stutil

PROBE = r"""
import ctypes, os, sys
from scaletune import _lib  # noqa: F401 (loads libscaletune)
blas = None
with open("/proc/self/maps") as f:
    for ln in f:
        if "libopenblas" in ln:
            blas = ln.split()[-1]
            break
if not blas:
    print("none")
    sys.exit(0)
ob = ctypes.CDLL(blas)
ob.openblas_get_corename.restype = ctypes.c_char_p
print(ob.openblas_get_corename().decode(), os.environ.get("OPENBLAS_CORETYPE", "-"))
"""


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            return next((ln.split() for ln in f if ln.startswith("flags")), [])
    except OSError:
        return []


class TestBlasCoretype(unittest.TestCase):
    def probe(self, **extra):
        env = stutil.python_env()
        env.pop("OPENBLAS_CORETYPE", None)
        env.pop("SCALETUNE_BLAS_AUTO", None)
        env.update(extra)
        r = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True,
                           text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout.split()

    def test_haswell_kernels(self):
        flags = cpu_flags()
        if "avx2" not in flags or "fma" not in flags:
            self.skipTest("the CPU has no AVX2/FMA")
        out = self.probe()
        if out == ["none"]:
            self.skipTest("libscaletune is not linked with OpenBLAS")
        self.assertEqual(out, ["Haswell", "-"])  # the kernels asked for, the variable removed

    def test_user_choice_kept(self):
        out = self.probe(OPENBLAS_CORETYPE="Prescott")
        if out == ["none"]:
            self.skipTest("libscaletune is not linked with OpenBLAS")
        self.assertEqual(out, ["Prescott", "Prescott"])
        out = self.probe(SCALETUNE_BLAS_AUTO="0", OPENBLAS_CORETYPE="Prescott")
        self.assertEqual(out[0], "Prescott")


if __name__ == "__main__":
    unittest.main()
