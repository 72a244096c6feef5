"""test_install.py -- `make install PREFIX=<tmp> DESTDIR=` installs the shared library (soname
libscaletune.so.0, version 0.1.0), headers without the private *_int.h, the CLI
(`scaletune --version`), scaletune.pc, scaletune(1) and the Python module; the C example builds
against the installed tree with pkg-config, and the installed Python module finds the installed
library next to itself. Skipped in sanitizer builds (the plain build covers it)."""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import stutil


def make_env():
    env = stutil.tool_env()
    for k in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES"):
        env.pop(k, None)  # not the outer `make test`'s jobserver
    return env


@unittest.skipIf(stutil.sanitized(), "install is checked in the plain build")
@unittest.skipUnless(stutil.have("make"), "no make")
class TestInstall(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="scaletune-install-")
        cls.prefix = os.path.join(cls.tmp, "usr")
        stutil.run(["make", "--no-print-directory", "-s", "install", "PREFIX=" + cls.prefix,
                    "DESTDIR=", "BUILD=" + stutil.BUILD], env=make_env(), timeout=600)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def p(self, *parts):
        return os.path.join(self.prefix, *parts)

    def test_files(self):
        lib = self.p("lib")
        self.assertTrue(os.path.isfile(os.path.join(lib, "libscaletune.so.0.1.0")))
        self.assertEqual(os.readlink(os.path.join(lib, "libscaletune.so.0")), "libscaletune.so.0.1.0")
        self.assertEqual(os.readlink(os.path.join(lib, "libscaletune.so")), "libscaletune.so.0.1.0")
        self.assertTrue(os.path.isfile(os.path.join(lib, "libscaletune.a")))
        for h in ("carbs/carbs.h", "fit/fit.h", "runner/runner.h", "trainer/gpt.h", "common/st.h"):
            self.assertTrue(os.path.isfile(self.p("include", "scaletune", h)), h)
        for root, _, files in os.walk(self.p("include")):
            self.assertFalse([f for f in files if f.endswith("_int.h")], root)
        self.assertTrue(os.path.isfile(self.p("share", "man", "man1", "scaletune.1")))
        for f in ("__init__.py", "_lib.py", "optimizer.py", "sweep.py", "fit.py", "metrics.py"):
            self.assertTrue(os.path.isfile(self.p("lib", "python3", "dist-packages", "scaletune", f)), f)
        out = stutil.run([self.p("bin", "scaletune"), "--version"]).stdout
        self.assertEqual(out.strip(), "scaletune 0.1.0")
        if stutil.have("readelf"):
            d = stutil.run(["readelf", "-d", os.path.join(lib, "libscaletune.so.0.1.0")]).stdout
            self.assertRegex(d, r"SONAME.*\[libscaletune\.so\.0\]")

    @unittest.skipUnless(stutil.have("pkg-config") and stutil.have("cc"), "no pkg-config or cc")
    def test_pkg_config_and_c_example(self):
        env = make_env()
        env["PKG_CONFIG_PATH"] = self.p("lib", "pkgconfig")
        self.assertEqual(stutil.run(["pkg-config", "--modversion", "scaletune"], env=env).stdout.strip(),
                         "0.1.0")
        flags = stutil.run(["pkg-config", "--cflags", "--libs", "scaletune"], env=env).stdout.split()
        self.assertIn("-I" + self.p("include", "scaletune"), flags)
        self.assertIn("-lscaletune", flags)
        static = stutil.run(["pkg-config", "--static", "--libs", "scaletune"], env=env).stdout.split()
        for dep in ("-lgsl", "-lnlopt", "-lsqlite3", "-ljansson", "-lyaml", "-lm"):
            self.assertIn(dep, static)
        exe = os.path.join(self.tmp, "train_loop")
        stutil.run(["cc", "-std=c11", os.path.join(stutil.ROOT, "examples", "c", "train_loop.c"),
                    "-o", exe] + flags + ["-lm"], env=env, cwd=self.tmp)
        if stutil.have("readelf"):
            self.assertIn("[libscaletune.so.0]", stutil.run(["readelf", "-d", exe]).stdout)
        env["LD_LIBRARY_PATH"] = self.p("lib")
        out = stutil.run([exe, "8", "1"], env=env, cwd=self.tmp).stdout
        ref = stutil.run([os.path.join(stutil.BUILD, "examples", "c", "train_loop"), "8", "1"]).stdout
        self.assertEqual(out, ref)
        self.assertIn("best: val_loss=", out)

    def test_python_module_finds_installed_library(self):
        env = stutil.tool_env(PYTHONPATH=self.p("lib", "python3", "dist-packages"))
        env.pop("SCALETUNE_LIB", None)
        code = ("import scaletune, os\n"
                "print(os.path.realpath(scaletune.library_path))\n"
                "print(scaletune.__version__)\n"
                "o = scaletune.Optimizer(scaletune.Space({'x': {'center': 0.0}}), seed=1)\n"
                "p, i = o.suggest(); o.observe(i, p['x'] ** 2, 1.0); print(len(o.observations))\n")
        out = stutil.run([sys.executable, "-c", code], env=env, cwd=self.tmp).stdout.split()
        self.assertEqual(out[0], os.path.realpath(self.p("lib", "libscaletune.so.0.1.0")))
        self.assertEqual(out[1:], ["0.1.0", "1"])

    @unittest.skipUnless(stutil.have("groff"), "no groff")
    def test_man_page_renders_cleanly(self):
        r = stutil.run(["groff", "-man", "-Tutf8", "-ww", "-z",
                        self.p("share", "man", "man1", "scaletune.1")])
        self.assertEqual(r.stderr, "")


if __name__ == "__main__":
    unittest.main()
