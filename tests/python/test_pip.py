"""test_pip.py -- `pip install ./bindings/python` into a fresh virtual environment, offline
(--no-build-isolation --no-deps --no-index; the venv sees the base interpreter's setuptools and
wheel through --system-site-packages): the installed package (not the source tree) is imported from
another directory and finds the library through $SCALETUNE_LIB, and a copy bundled into the
package is found without it. Skipped, saying why, where venv or pip is unavailable, and in
sanitizer builds (the plain build covers it)."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import stutil

LIB = os.path.join(stutil.BUILD, "libscaletune.so")
PROBE = ("import scaletune, sys; o = scaletune.Optimizer([scaletune.Param('x', center=0.0)], "
         "seed=1); p, i = o.suggest(); o.observe(i, p['x'] ** 2, 1.0); "
         "print(scaletune.__file__); print(scaletune.library_path); print(len(o.observations))")


def venv_problem():
    """Why no venv can be made here, or None."""
    try:
        import venv  # noqa: F401
        import ensurepip  # noqa: F401
    except ImportError as e:
        return "python3 -m venv is unavailable (%s; on Debian: apt install python3-venv)" % e
    try:
        import setuptools  # noqa: F401
        import wheel  # noqa: F401
    except ImportError as e:
        return ("an offline build needs setuptools and wheel in %s (%s; on Debian: apt install "
                "python3-setuptools python3-wheel)" % (sys.executable, e))
    return None


@unittest.skipIf(stutil.sanitized(), "pip install is checked in the plain build")
@unittest.skipUnless(os.path.exists(LIB), "no libscaletune.so built")
class TestPipInstall(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        why = venv_problem()
        if why:
            raise unittest.SkipTest(why)
        cls.tmp = tempfile.mkdtemp(prefix="scaletune-pip-")
        cls.venv = os.path.join(cls.tmp, "venv")
        r = subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", cls.venv],
                           capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            shutil.rmtree(cls.tmp, ignore_errors=True)
            raise unittest.SkipTest("python3 -m venv failed: %s" % r.stderr.strip()[-300:])
        cls.py = os.path.join(cls.venv, "bin", "python")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def env(self, **extra):
        env = stutil.tool_env()
        for k in ("PYTHONPATH", "SCALETUNE_LIB", "PYTHONHOME", "PIP_INDEX_URL"):
            env.pop(k, None)
        env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
        env.update(extra)
        return env

    def install(self, src):
        r = stutil.run([self.py, "-m", "pip", "install", "--no-build-isolation", "--no-deps",
                        "--no-index", "--force-reinstall", src], env=self.env(), cwd=self.tmp,
                       check=False, timeout=600)
        if r.returncode != 0 and "No module named pip" in r.stderr:
            self.skipTest("the venv has no pip (ensurepip missing)")
        self.assertEqual(r.returncode, 0, r.stdout[-2000:] + r.stderr[-2000:])

    def copy_source(self, name):
        """A copy of bindings/python, so that the build leaves nothing in the source tree."""
        dst = os.path.join(self.tmp, name)
        shutil.copytree(os.path.join(stutil.ROOT, "bindings", "python"), dst,
                        ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info",
                                                      "libscaletune.so*"))
        return dst

    def probe(self, **env):
        r = stutil.run([self.py, "-c", PROBE], env=self.env(**env), cwd=self.tmp, check=False)
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        return r.stdout.split("\n")

    def test_install_with_env_var_then_bundled(self):
        self.install(self.copy_source("plain"))
        f, lib, n = self.probe(SCALETUNE_LIB=LIB)[:3]
        self.assertTrue(f.startswith(self.venv), f)  # the installed copy, not the source tree
        self.assertEqual(lib, LIB)
        self.assertEqual(n, "1")
        # a copy of the library bundled into the package: found with no variable set
        src = self.copy_source("bundled")
        shutil.copy(os.path.realpath(LIB), os.path.join(src, "scaletune", "libscaletune.so.0"))
        self.install(src)
        f, lib, n = self.probe()[:3]
        self.assertTrue(lib.startswith(self.venv) and lib.endswith("libscaletune.so.0"), lib)
        self.assertEqual(n, "1")


if __name__ == "__main__":
    unittest.main()
