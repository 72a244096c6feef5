"""test_metrics.py -- scaletune.metrics writes protocol records (docs/metrics-protocol.md) that
parse as strict JSON, non-finite values as null, to $SCALETUNE_METRICS_FILE or stdout; the
runner's own parser (runner_metrics_parse through a real sweep) accepts them."""

import io
import json
import math
import os
import subprocess
import sys
import tempfile
import unittest

import stutil

from scaletune import metrics


class FakeTensor:
    """Stands for a 0-d torch tensor: only __float__."""

    def __init__(self, v):
        self.v = v

    def __float__(self):
        return self.v


def strict_loads(line):
    def bad(name):
        raise ValueError("non-standard JSON constant %s" % name)
    return json.loads(line, parse_constant=bad)


class TestMetrics(unittest.TestCase):
    def test_records_parse_as_json(self):
        buf = io.StringIO()
        em = metrics.Emitter(stream=buf)
        self.assertTrue(em.step(0, 5.5, lr=1e-3, tokens=4096))
        self.assertTrue(em.step(1, FakeTensor(5.25), grad_norm=FakeTensor(0.5)))
        em.eval(1, val_loss=5.3)
        em.final(val_loss=3.21, flops=6 * 1e6 * 2e7, params=1000000, tokens=20000000, tag="run-1")
        lines = buf.getvalue().splitlines()
        self.assertEqual(len(lines), 4)
        recs = [strict_loads(l) for l in lines]
        self.assertEqual(recs[0], {"event": "step", "step": 0, "loss": 5.5, "lr": 1e-3, "tokens": 4096})
        self.assertEqual(recs[1]["loss"], 5.25)
        self.assertEqual(recs[1]["grad_norm"], 0.5)
        self.assertEqual(recs[2], {"event": "eval", "step": 1, "val_loss": 5.3})
        self.assertEqual(recs[3]["event"], "final")
        self.assertEqual(recs[3]["flops"], 1.2e14)
        self.assertEqual(recs[3]["params"], 1000000)
        for l in lines:
            self.assertNotIn(" ", l.split('"tag"')[0])  # compact, one line each

    def test_nonfinite_becomes_null_and_diverged(self):
        buf = io.StringIO()
        em = metrics.Emitter(stream=buf)
        self.assertFalse(em.step(7, float("nan"), lr=float("inf")))
        em.final(val_loss=float("-inf"), flops=1.0)
        recs = [strict_loads(l) for l in buf.getvalue().splitlines()]
        self.assertEqual(recs[0], {"event": "step", "step": 7, "loss": None, "lr": None})
        self.assertEqual(recs[1]["event"], "diverged")
        self.assertEqual(recs[1]["step"], 7)
        self.assertIn("nan", recs[1]["reason"])
        self.assertIsNone(recs[2]["val_loss"])

    def test_env_file_and_stdout(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "m.jsonl")
            code = ("from scaletune import metrics\n"
                    "metrics.step(0, 2.0)\nmetrics.diverged(3, 'exploded')\n")
            env = stutil.python_env(SCALETUNE_METRICS_FILE=path)
            r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout, "")
            with open(path) as f:
                recs = [strict_loads(l) for l in f]
            self.assertEqual([x["event"] for x in recs], ["step", "diverged"])
            self.assertEqual(recs[1]["reason"], "exploded")
            env.pop("SCALETUNE_METRICS_FILE")
            r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
            self.assertEqual([strict_loads(l)["event"] for l in r.stdout.splitlines()],
                             ["step", "diverged"])

    def test_needs_no_library(self):
        # a training script that only reports metrics runs where libscaletune.so is absent
        env = stutil.python_env(SCALETUNE_LIB="/nonexistent/libscaletune.so")
        code = ("from scaletune import metrics\nmetrics.final(val_loss=1.5, flops=2.0)\n"
                "import scaletune\ntry:\n    scaletune.Optimizer\nexcept ImportError as e:\n"
                "    print('no library:', e)\n")
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        self.assertEqual(strict_loads(lines[0]), {"event": "final", "val_loss": 1.5, "flops": 2.0})
        self.assertIn("/nonexistent/libscaletune.so", lines[1])

    def test_runner_reads_the_records(self):
        # a real sweep whose trainer is examples/python/metrics_trainer.py: the runner's parser
        # must see the final records (objective and cost) and the divergences
        if not os.path.exists(stutil.CLI):
            self.skipTest("no %s (run make)" % stutil.CLI)
        with tempfile.TemporaryDirectory() as d:
            yaml = os.path.join(d, "s.yaml")
            with open(yaml, "w") as f:
                f.write(
                    "name: py-metrics\n"
                    "command: [\"%s\", \"examples/python/metrics_trainer.py\", \"--lr\", \"{lr}\",\n"
                    "          \"--width\", \"{width}\", \"--steps\", \"20\"]\n"
                    "env: {PYTHONPATH: \"bindings/python\"}\n"
                    "objective: {metric: val_loss, goal: minimize}\n"
                    "cost: {metric: flops}\n"
                    "parameters:\n"
                    "  lr:    {space: log, min: 1.0e-5, max: 1.0, center: 0.05}\n"
                    "  width: {space: log, min: 32, max: 1024, center: 128, integer: true}\n"
                    "budget: {runs: 6}\n"
                    "parallel: 2\n"
                    "retries: {infrastructure: 0}\n"
                    "timeouts: {no_metrics_seconds: 60}\n"
                    "seed: 2\n" % sys.executable)
            db = os.path.join(d, "s.db")
            stutil.run([stutil.CLI, "sweep", "launch", yaml, "--db", db], timeout=300)
            exp = json.loads(stutil.run([stutil.CLI, "sweep", "export", "--json", "--db", db]).stdout)
            runs = exp["runs"]
            self.assertEqual(len(runs), 6)
            ok = [r for r in runs if r["status"] == "succeeded"]
            self.assertGreaterEqual(len(ok), 1)
            self.assertGreaterEqual(len(runs) - len(ok), 1)  # seed 2 gives both kinds
            for r in runs:
                self.assertIn(r["status"], ("succeeded", "failed"), r)
                if r["status"] == "succeeded":
                    self.assertTrue(math.isfinite(r["objective"]))
                    self.assertEqual(r["final"]["flops"], r["cost"])
                else:
                    self.assertEqual(r["failure"], "diverged")


if __name__ == "__main__":
    unittest.main()
