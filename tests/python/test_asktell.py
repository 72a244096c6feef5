"""test_asktell.py -- store-backed ask/tell suggests what one in-process optimizer would: 60 asks
through scaletune.Sweep and 60 through `scaletune sweep ask`/`tell` (each call rebuilding the
optimizer from the store) give the same parameters, in the same order, as an Optimizer kept
alive in process with the sweep's options (the independent reference), past the random phase
and through CARBS' resamples (the resample counter used to restart at every ask)."""

import math
import os
import subprocess
import tempfile
import unittest

import stutil

from scaletune import Optimizer, Param, Space, Sweep

YAML = """name: %s
command: ["/bin/false"]
objective: {metric: val_loss}
cost: {metric: flops}
parameters:
  x: {space: linear, min: -2, max: 3, center: 0}
  k: {value: 7}
  w: {space: log, min: 16, max: 512, center: 64, integer: true, rounding: 16}
budget: {runs: 100}
seed: 9
optimizer: {num_random_samples: 4, resample_frequency: 4}
"""

N = 60


def outcome(p, i):
    """(objective, cost, failed) of the i-th run told: a bowl with noise 1e-3 sin(i) (repeats
    differ, so resampling goes on: a deterministic objective stops it once a repeat agrees),
    failed for x > 2.3, cost growing with w."""
    failed = p["x"] > 2.3
    return 1.0 + (p["x"] - 0.4) ** 2 + 8.0 / p["w"] + 1e-3 * math.sin(i), 1e9 * p["w"], failed


def reference():
    space = Space([Param("x", "linear", center=0, min=-2, max=3),
                   Param("w", "log", center=64, min=16, max=512, integer=True, rounding=16)])
    return Optimizer(space, seed=9, num_random_samples=4, resample_frequency=4)


def run_reference(inflight=1):
    """N suggestions with `inflight` runs open, told oldest first: (params list, resamples)."""
    opt, out, open_, resamples, told = reference(), [], [], 0, 0
    for _ in range(N):
        p, sid = opt.suggest()
        resamples += opt.last_info()["phase"] == "resample"
        out.append(p)
        open_.append((p, sid))
        if len(open_) >= inflight:
            q, qid = open_.pop(0)
            obj, cost, failed = outcome(q, told)
            told += 1
            opt.observe(qid, float("nan") if failed else obj, cost, failed)
    opt.close()
    return out, resamples


def same(a, b):
    return all(a[k] == b[k] for k in b)


@unittest.skipUnless(os.path.exists(stutil.CLI), "no scaletune CLI in the build directory")
class TestAskTellEqualsLive(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.db = os.path.join(self.tmp.name, "s.db")

    def tearDown(self):
        self.tmp.cleanup()

    def create(self, name):
        path = os.path.join(self.tmp.name, name + ".yaml")
        with open(path, "w") as f:
            f.write(YAML % name)
        stutil.run([stutil.CLI, "sweep", "create", path, "--db", self.db])

    def test_python_sweep_serial_and_in_flight(self):
        for inflight in (1, 3):
            name = "py%d" % inflight
            self.create(name)
            want, resamples = run_reference(inflight)
            self.assertGreaterEqual(resamples, 4)
            got, open_, told = [], [], 0
            with Sweep(self.db, name) as s:
                for _ in range(N):
                    p, rid = s.ask()
                    self.assertEqual(p["k"], 7)
                    got.append(p)
                    open_.append((p, rid))
                    if len(open_) >= inflight:
                        q, qid = open_.pop(0)
                        obj, cost, failed = outcome(q, told)
                        told += 1
                        if failed:
                            s.tell(qid, failed=True, cost=cost)
                        else:
                            s.tell(qid, objective=obj, cost=cost)
            diff = [i for i in range(N) if not same(got[i], want[i])]
            self.assertEqual(diff, [], "in flight %d: first difference at ask %s" % (inflight, diff[:1]))
            distinct = len({(p["x"], p["w"]) for p in got})
            self.assertGreaterEqual(distinct, N - resamples)

    def test_cli_ask_tell(self):
        self.create("cli")
        want, _ = run_reference(1)
        for i in range(N):
            r = stutil.run([stutil.CLI, "sweep", "ask", "--sweep", "cli", "--db", self.db])
            kv = dict(line.split("=", 1) for line in r.stdout.split())
            p = {"x": float(kv["x"]), "w": float(kv["w"])}
            self.assertTrue(same(p, want[i]), "ask %d: %s, in process %s" % (i, p, want[i]))
            obj, cost, failed = outcome(p, i)
            args = ["--failed"] if failed else ["--objective", repr(obj), "--cost", repr(cost)]
            stutil.run([stutil.CLI, "sweep", "tell", kv["SUGGESTION_ID"], "--sweep", "cli",
                        "--db", self.db] + args)


STUDY_YAML = """name: %s
command: ["/bin/false"]
objective: {metric: val_loss}
cost: {metric: flops, expr: "6 * {N} * {tokens}"}
parameters:
  N: {space: log, min: 2.0e6, max: 6.0e7, center: 1.0e7}
  tokens: {space: log, min: 4.0e7, max: 2.0e9, center: 2.0e8}
  lr: {space: log, min: 1.0e-4, max: 1.0e-2, center: 2.0e-3}
budget: {runs: 40, max_cost_per_run: 1.0e16}
seed: 4
optimizer: {goal: extrapolate, target_factor: 100, initial_design: 10}
"""


def study_outcome(p):
    """A Chinchilla-like loss with a learning-rate bowl, and 6 N D for the cost."""
    loss = (1.8 + 400 * p["N"] ** -0.34 + 400 * p["tokens"] ** -0.28) * (
        1 + 0.05 * (math.log(p["lr"] / 2e-3)) ** 2)
    return loss, 6 * p["N"] * p["tokens"]


@unittest.skipUnless(os.path.exists(stutil.CLI), "no scaletune CLI in the build directory")
class TestStudyModeAsk(unittest.TestCase):
    """A sweep in study mode asked from a script gets study/'s proposer (the design, not CARBS'
    centre first), through Python as through `scaletune sweep ask`; the C test
    tests/study/test_study_asktell.c checks the asks against the controller's sweep."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.db = os.path.join(self.tmp.name, "s.db")
        for name in ("py", "cli"):
            path = os.path.join(self.tmp.name, name + ".yaml")
            with open(path, "w") as f:
                f.write(STUDY_YAML % name)
            stutil.run([stutil.CLI, "sweep", "create", path, "--db", self.db])

    def tearDown(self):
        self.tmp.cleanup()

    def test_python_and_cli_asks_are_the_study_design(self):
        got = []
        with Sweep(self.db, "py") as s:
            for _ in range(12):
                p, rid = s.ask()
                got.append(p)
                loss, cost = study_outcome(p)
                s.tell(rid, objective=loss, cost=cost)
        centre = {"N": 1.0e7, "tokens": 2.0e8, "lr": 2.0e-3}
        self.assertFalse(same(got[0], centre), "the first ask is CARBS' centre: %s" % got[0])
        self.assertEqual(len({(p["N"], p["tokens"], p["lr"]) for p in got}), 12)
        for i in range(12):
            r = stutil.run([stutil.CLI, "sweep", "ask", "--sweep", "cli", "--db", self.db])
            kv = dict(line.split("=", 1) for line in r.stdout.split())
            p = {k: float(kv[k]) for k in ("N", "tokens", "lr")}
            for k in p:
                self.assertAlmostEqual(p[k] / got[i][k], 1.0, delta=1e-12, msg="ask %d %s" % (i, k))
            loss, cost = study_outcome(p)
            stutil.run([stutil.CLI, "sweep", "tell", kv["SUGGESTION_ID"], "--sweep", "cli",
                        "--db", self.db, "--objective", repr(loss), "--cost", repr(cost)])


if __name__ == "__main__":
    unittest.main()
