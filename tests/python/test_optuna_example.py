"""test_optuna_example.py -- examples/python/optuna_style_study.py, shortened (12 trials, the
worker SIGKILLed twice; under ST_TEST_QUICK 8 trials, once): the in-process optimizer, store-backed
ask/tell and the killed-and-resumed worker suggest the same settings in the same order (the example
compares the three sequences and exits 1 on a difference; here its printed verdicts, kill count
and distinct count are checked too). Skipped when this python3 has no PyTorch
(scripts/install-deps --torch)."""

import importlib.util
import os
import re
import subprocess
import sys
import unittest

import stutil

EXAMPLE = os.path.join(stutil.ROOT, "examples", "python", "optuna_style_study.py")


@unittest.skipUnless(importlib.util.find_spec("torch"),
                     "no PyTorch for %s: run scripts/install-deps --torch" % sys.executable)
class TestOptunaStyleExample(unittest.TestCase):
    def test_three_ways_same_sequence(self):
        trials, kills = (8, 1) if stutil.QUICK else (12, 2)
        r = subprocess.run([sys.executable, EXAMPLE, "--trials", str(trials), "--kills", str(kills),
                            "--seed", "3", "--no-run"], env=stutil.python_env(), cwd=stutil.ROOT,
                           capture_output=True, text=True, timeout=600)
        out = r.stdout
        self.assertEqual(r.returncode, 0, out[-3000:] + r.stderr[-3000:])
        self.assertIn("store-backed ask/tell (way 2): identical", out)
        self.assertIn("killed %d times and resumed (way 3): identical" % kills, out)
        self.assertEqual(len(re.findall(r"SIGKILL during trial \d+", out)), kills)
        rows = re.findall(r"^\s+(\d+)  lr=(\S+) width=\s*(\d+) wd=(\S+) -> (\S+)", out, re.M)
        self.assertEqual([int(x[0]) for x in rows], list(range(1, trials + 1)))
        distinct = int(re.search(r"distinct settings: (\d+) of %d" % trials, out).group(1))
        self.assertEqual(distinct, len({x[1:4] for x in rows}))
        self.assertGreaterEqual(distinct, trials - 1)
        self.assertRegex(out, r"recommendation at 10x (refused: \S|\(compute)")


if __name__ == "__main__":
    unittest.main()
