"""test_optuna_peer.py -- bench/optuna_peer.py, which picks the Optuna that issue 22's Python
benches measure against (SCALETUNE_OPTUNA_PATH, docs/benchmarks.md section 10): an Optuna
without GPSampler is reported as skipped in plain words, a folder without Optuna is refused,
and the Optuna imported is the folder's. Uses a stub Optuna package, so it needs no Optuna."""

import os
import subprocess
import sys
import tempfile
import unittest

import stutil

STUB = {
    "__init__.py": "__version__ = '3.1.0'\nfrom . import exceptions, logging, samplers  # noqa\n",
    "samplers.py": "class TPESampler:\n    pass\n",
    "logging.py": "ERROR = 40\n\ndef set_verbosity(level):\n    pass\n",
    "exceptions.py": "class ExperimentalWarning(Warning):\n    pass\n",
}

PROBE = r"""
import sys
sys.path.insert(0, sys.argv[1])
import optuna_peer
o = optuna_peer.load("probe")
print(optuna_peer.describe(o))
print(optuna_peer.gp_check(o))
"""


class TestOptunaPeer(unittest.TestCase):
    def probe(self, path):
        env = stutil.python_env(SCALETUNE_OPTUNA_PATH=path)
        return subprocess.run([sys.executable, "-c", PROBE, os.path.join(stutil.ROOT, "bench")],
                              env=env, capture_output=True, text=True, timeout=60)

    def test_no_gpsampler_is_skipped(self):
        with tempfile.TemporaryDirectory() as d:
            os.mkdir(os.path.join(d, "optuna"))
            for name, text in STUB.items():
                with open(os.path.join(d, "optuna", name), "w") as f:
                    f.write(text)
            r = self.probe(d)
            self.assertEqual(r.returncode, 0, r.stderr)
            lines = r.stdout.splitlines()
            self.assertEqual(lines[0], "optuna 3.1.0 (%s)" % os.path.abspath(d))
            self.assertTrue(lines[1].startswith("skipped: optuna 3.1.0 has no GPSampler"), lines)

    def test_folder_without_optuna_is_refused(self):
        with tempfile.TemporaryDirectory() as d:
            r = self.probe(d)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("has no optuna/ package", r.stderr)


if __name__ == "__main__":
    unittest.main()
