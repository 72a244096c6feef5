"""test_examples.py -- the examples run: examples/python/train_loop.py and examples/c/train_loop.c
print the same runs (same toy, same space, same seed, the same library), --state resumes,
metrics_trainer.py speaks the protocol and exits 3 on divergence, ask_tell.py drives a store
made by the CLI."""

import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

import stutil

EX = os.path.join(stutil.ROOT, "examples", "python")


def py(script, *args, env=None, check=True):
    r = subprocess.run([sys.executable, os.path.join(EX, script)] + list(args),
                       env=env or stutil.python_env(), cwd=stutil.ROOT, capture_output=True,
                       text=True, timeout=300)
    if check and r.returncode != 0:
        raise AssertionError("%s exited %d: %s" % (script, r.returncode, r.stderr[-2000:]))
    return r


def norm(lines):
    return [re.sub(r"\s+", " ", l.strip()) for l in lines]


class TestExamples(unittest.TestCase):
    def test_python_and_c_loops_agree(self):
        out = py("train_loop.py", "--runs", "12", "--seed", "1").stdout.splitlines()
        c_exe = os.path.join(stutil.BUILD, "examples", "c", "train_loop")
        if not os.path.exists(c_exe):
            self.skipTest("no %s (run make)" % c_exe)
        c_out = stutil.run([c_exe, "12", "1"]).stdout.splitlines()
        runs = [l for l in out if l.startswith("run ") or l.startswith("best:")]
        c_runs = [l for l in c_out if l.startswith("run ") or l.startswith("best:")]
        self.assertEqual(len(runs), 13)
        self.assertEqual(norm(runs), norm(c_runs))

    def test_state_resume(self):
        with tempfile.TemporaryDirectory() as d:
            state = os.path.join(d, "opt.state")
            py("train_loop.py", "--runs", "5", "--state", state)
            out = py("train_loop.py", "--runs", "3", "--state", state).stdout
            self.assertIn("resumed from %s: 5 observations" % state, out)
            self.assertIn("run   8", out)

    def test_metrics_trainer(self):
        r = py("metrics_trainer.py", "--lr", "3e-3", "--width", "256", "--steps", "20")
        recs = [json.loads(l) for l in r.stdout.splitlines()]
        self.assertEqual([x["event"] for x in recs].count("step"), 20)
        self.assertEqual([x["event"] for x in recs].count("eval"), 2)
        self.assertEqual(recs[-1]["event"], "final")
        self.assertAlmostEqual(recs[-1]["val_loss"], 2.0 + 60.0 / 256, places=9)
        r = py("metrics_trainer.py", "--lr", "0.5", "--width", "256", check=False)
        self.assertEqual(r.returncode, 3)
        last = json.loads(r.stdout.splitlines()[-1])
        self.assertEqual(last["event"], "diverged")

    @unittest.skipUnless(os.path.exists(stutil.CLI), "no scaletune CLI")
    def test_ask_tell(self):
        with tempfile.TemporaryDirectory() as d:
            db = os.path.join(d, "toy.db")
            stutil.run([stutil.CLI, "sweep", "create", os.path.join(EX, "toy-sweep.yaml"), "--db", db])
            out = py("ask_tell.py", "--db", db, "--runs", "3").stdout
            self.assertIn("3 runs, ", out)
            st = stutil.run([stutil.CLI, "sweep", "status", "--db", db]).stdout
            self.assertRegex(st, r"runs\s+3 of 12")


if __name__ == "__main__":
    unittest.main()
