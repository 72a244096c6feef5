"""test_sweep.py -- scaletune.Sweep ask/tell against a store made by the CLI
(`scaletune sweep create`): parameters (fixed ones included) come back by name, outcomes are
recorded, Python and the CLI interleave on one store, status/pareto/export agree, and errors
(unknown id, wrong sweep name, not a store) raise with the store's message."""

import json
import math
import os
import re
import tempfile
import unittest

import stutil

from scaletune import ScaletuneError, Sweep

YAML = """name: %s
command: ["/bin/false", "{x}", "{steps}"]
objective: {metric: val_loss, goal: minimize}
cost: {metric: flops}
parameters:
  x:     {space: linear, min: -2, max: 3, center: 0}
  steps: {value: 25}
  w:     {space: log, min: 16, max: 512, center: 64, integer: true, rounding: 16}
budget: {runs: %d}
seed: 5
optimizer: {num_random_samples: 3}
"""


WORLD = """name: world
command: ["/bin/false"]
objective: {metric: val_loss}
cost: {metric: flops}
parameters:
  N:      {space: log, min: 1.0e6, max: 3.0e7, center: 5.0e6}
  tokens: {space: log, min: 2.0e7, max: 1.0e9, center: 1.0e8}
  lr:     {space: log, min: 1.0e-4, max: 0.03, center: 2.0e-3}
budget: {runs: 100}
seed: 3
"""


def loss(p):
    return 1.0 + (p["x"] - 0.5) ** 2 + 8.0 / p["w"]


@unittest.skipUnless(os.path.exists(stutil.CLI), "no scaletune CLI in the build directory")
class TestSweep(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.db = os.path.join(self.tmp.name, "s.db")

    def tearDown(self):
        self.tmp.cleanup()

    def create(self, name="py-asktell", runs=8):
        path = os.path.join(self.tmp.name, name + ".yaml")
        with open(path, "w") as f:
            f.write(YAML % (name, runs))
        stutil.run([stutil.CLI, "sweep", "create", path, "--db", self.db])

    def test_ask_tell_loop(self):
        self.create()
        with Sweep(self.db) as s:
            self.assertEqual(s.param_names(), ["x", "steps", "w"])
            told = {}
            for i in range(6):
                p, rid = s.ask()
                self.assertEqual(set(p), {"x", "steps", "w"})
                self.assertEqual(p["steps"], 25)
                self.assertEqual(p["w"] % 16, 0)
                if i == 2:
                    s.tell(rid, failed=True)
                else:
                    told[rid] = loss(p)
                    s.tell(rid, objective=told[rid], cost=p["w"] * 1e9)
            st = s.status()
            self.assertEqual(st["name"], "py-asktell")
            self.assertEqual(st["n_runs"], 6)
            self.assertEqual(st["n_by_status"]["succeeded"], 5)
            self.assertEqual(st["n_by_status"]["failed"], 1)
            self.assertTrue(st["has_best"])
            best = min(told, key=told.get)
            self.assertEqual(st["best_run"], best)
            self.assertAlmostEqual(st["best_objective"], told[best], places=12)
            front = s.pareto()
            self.assertTrue(front)
            self.assertIn(best, [f["run_id"] for f in front])
            exp = s.export()
            self.assertEqual(len(exp["runs"]), 6)
            self.assertEqual(Sweep.list(self.db), ["py-asktell"])

    def test_extrapolate(self):
        # a sweep of a known world through ask/tell: L = 1.7 + 400 N^-0.34 + 1200 D^-0.3 times
        # a learning-rate penalty around lr_opt = 2e-3 (N / 1e7)^-0.5; the recommendation at
        # 30x comes back as the CLI's JSON, with its safety verdict
        path = os.path.join(self.tmp.name, "world.yaml")
        with open(path, "w") as f:
            f.write(WORLD)
        stutil.run([stutil.CLI, "sweep", "create", path, "--db", self.db])
        with Sweep(self.db) as s:
            for i in range(36):
                p, rid = s.ask()
                lr_opt = 2e-3 * (p["N"] / 1e7) ** -0.5
                u = math.log(p["lr"] / lr_opt)
                y = (1.7 + 400 * p["N"] ** -0.34 + 1200 * p["tokens"] ** -0.3) * (1 + 0.03 * u * u)
                s.tell(rid, objective=y, cost=6 * p["N"] * p["tokens"])
            r = s.extrapolate(factor=30, bootstrap=20)
            self.assertIn(r["safe"], (True, False))
            self.assertEqual(set(r["recommended"]), {"N", "tokens", "lr"})
            self.assertAlmostEqual(r["factor"], 30, places=6)
            self.assertGreater(r["recommended"]["N"], 0)
            self.assertEqual(r["runs"]["used"], 36)
            self.assertTrue(r["predicted"]["lo"] <= r["predicted"]["objective"] <= r["predicted"]["hi"])
        self.create(name="empty")
        with Sweep(self.db, "empty") as s, self.assertRaises(ScaletuneError) as cm:
            s.extrapolate(factor=10)
        self.assertIn("no successful run", str(cm.exception))

    def test_interleaves_with_cli(self):
        self.create(runs=4)
        out = stutil.run([stutil.CLI, "sweep", "ask", "--db", self.db]).stdout
        kv = dict(re.findall(r"^(\w+)=(\S+)$", out, re.M))
        cli_id = int(kv["SUGGESTION_ID"])
        with Sweep(self.db, "py-asktell") as s:
            s.tell(cli_id, objective=2.5, cost=1e10)  # a CLI-asked run told from Python
            p, rid = s.ask()
            self.assertNotEqual(rid, cli_id)
        stutil.run([stutil.CLI, "sweep", "tell", str(rid), "--objective", "1.75", "--cost", "2e10",
                    "--db", self.db])
        exp = json.loads(stutil.run([stutil.CLI, "sweep", "export", "--json", "--db", self.db]).stdout)
        by_id = {r["suggestion_id"]: r for r in exp["runs"]}
        self.assertEqual(by_id[cli_id]["objective"], 2.5)
        self.assertEqual(by_id[rid]["objective"], 1.75)
        self.assertAlmostEqual(by_id[rid]["params"]["x"], p["x"], places=12)

    def test_budget_and_errors(self):
        self.create(runs=2)
        s = Sweep(self.db)
        for _ in range(2):
            p, rid = s.ask()
            s.tell(rid, objective=loss(p), cost=1.0)
        with self.assertRaises(ScaletuneError) as e:
            s.ask()  # budget.runs spent
        self.assertEqual(e.exception.code, "ST_ERANGE")
        self.assertTrue(e.exception.message)
        with self.assertRaises(ScaletuneError) as e:
            s.tell(4242, objective=1.0, cost=1.0)
        self.assertTrue(e.exception.message)
        with self.assertRaises(ScaletuneError):
            s.tell(1, objective=1.0)  # no cost
        s.close()
        with self.assertRaises(ScaletuneError) as e:
            Sweep(self.db, "no-such-sweep").ask()
        self.assertEqual(e.exception.code, "ST_ENOTFOUND")
        bad = os.path.join(self.tmp.name, "not-a-store.db")
        with open(bad, "w") as f:
            f.write("this is not sqlite\n" * 100)
        with self.assertRaises(ScaletuneError) as e:
            Sweep(bad).status()
        self.assertEqual(e.exception.code, "ST_EDB")


if __name__ == "__main__":
    unittest.main()
