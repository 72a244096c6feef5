"""test_pipeline.py -- the pipeline from Python without YAML or the CLI: Sweep.create, tell with
the model size and tokens (read back as N and D by the engine's typed read), optimize() with
exceptions recorded as failures, best / best_params / trials, recommend() through the engine
(study_extrapolate_json), report(), an in-process Optimizer written into a store, asked runs
that expire (ask(ttl=...), `scaletune sweep ask --ttl`), and the sharp edges of observe()."""

import math
import json
import subprocess
import os
import tempfile
import time
import unittest

import stutil

from scaletune import Optimizer, Param, ScaletuneError, Space, Sweep


def space():
    return Space([Param("lr", "log", center=2e-3, min=1e-4, max=0.1),
                  Param("width", "log", center=128, min=32, max=1024, integer=True, rounding=16)])


def world(p):
    """A known world: N = 12 width^2 * 8 layers, D = 20 N; loss from a Chinchilla-like law with
    a learning-rate penalty around lr_opt(N). Returns (objective, cost, N, D)."""
    n = 12.0 * p["width"] ** 2 * 8
    d = 20.0 * n
    lr_opt = 3e-3 * (n / 1e6) ** -0.5
    u = math.log(p["lr"] / lr_opt)
    y = (1.7 + 400 * n ** -0.34 + 1200 * d ** -0.3) * (1 + 0.03 * u * u)
    return y, 6 * n * d, n, d


class TestPipeline(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.db = os.path.join(self.tmp.name, "s.db")

    def tearDown(self):
        self.tmp.cleanup()

    def test_create_tell_n_d_optimize_recommend_report(self):
        calls = []

        def train(p):
            calls.append(p)
            if len(calls) % 7 == 3:
                raise RuntimeError("CUDA out of memory")  # recorded as a failure
            y, c, n, d = world(p)
            return {"objective": y, "cost": c, "params": n, "tokens": d, "steps": 100}

        with Sweep.create(self.db, "mlp", space(), objective="val_loss", cost="flops",
                          budget_runs=40, seed=2, fixed={"layers": 8},
                          num_random_samples=6) as s:
            best = s.optimize(train, 24)
            trials = s.trials
            self.assertEqual(len(trials), 24)
            self.assertEqual([t["run_id"] for t in trials], list(range(1, 25)))
            self.assertEqual([t["params"]["layers"] for t in trials], [8] * 24)
            failed = [t for t in trials if t["status"] == "failed"]
            self.assertEqual(len(failed), 24 // 7 + (24 % 7 >= 3))
            ok = [t for t in trials if t["status"] == "succeeded"]
            want = min(ok, key=lambda t: t["objective"])
            self.assertEqual(best, want)
            self.assertEqual(s.best_params, want["params"])
            # the final record: N and D where the engine reads them
            runs = s.export()["runs"]
            r0 = [r for r in runs if r["status"] == "succeeded"][0]
            y, c, n, d = world(r0["params"])
            self.assertEqual((r0["N"], r0["D"]), (n, d))
            self.assertEqual(r0["final"]["steps"], 100)
            rec = s.recommend(factor=10, bootstrap=20)
            self.assertIn(rec["safe"], (True, False))
            self.assertAlmostEqual(rec["factor"], 10, places=6)
            if not rec["safe"]:
                self.assertTrue(rec["unsafe_reason"])
            self.assertEqual(rec, s.extrapolate(factor=10, bootstrap=20))
            with self.assertRaises(ScaletuneError):
                s.recommend(compute=1e18, factor=10)
            html = os.path.join(self.tmp.name, "r.html")
            self.assertEqual(s.report(html), html)
            with open(html) as f:
                self.assertIn("<html", f.read(2000).lower())
            with self.assertRaises(ScaletuneError):
                s.report(os.path.join(self.tmp.name, "r.pdf"))
            # a final record must be numbers; a success must say its objective
            p, rid = s.ask()
            with self.assertRaises(ScaletuneError) as cm:
                s.tell(rid, objective=float("nan"), cost=1.0)
            self.assertIn("failed=True", str(cm.exception))
            with self.assertRaises(ScaletuneError):
                s.tell(rid, objective=1.0, cost=1.0, params="big")
            s.tell(rid, failed=True)

    def test_optimizer_into_store(self):
        opt = Optimizer(space(), seed=4, num_random_samples=5)
        seen = []
        for _ in range(12):
            p, sid = opt.suggest()
            y, c, n, d = world(p)
            opt.observe(sid, y, c)
            seen.append((p, y))
        with opt.to_store(self.db, "inproc", objective="val_loss", cost="flops") as s:
            trials = s.trials
            self.assertEqual(len(trials), 12)
            for t, (p, y) in zip(trials, seen):
                self.assertEqual(t["status"], "succeeded")
                self.assertEqual(t["objective"], y)
                self.assertEqual((t["params"]["lr"], t["params"]["width"]), (p["lr"], p["width"]))
            self.assertEqual(s.best["objective"], min(y for _, y in seen))
            p, rid = s.ask()  # ask/tell go on from the recorded history
            self.assertTrue(1e-4 <= p["lr"] <= 0.1)
            s.tell(rid, failed=True)
            with self.assertRaises(ScaletuneError) as cm:
                s.record({"lr": 5.0, "width": 64}, 1.0, 1.0)
            self.assertIn("lr", str(cm.exception))
        opt.close()

    def test_ttl_expiry(self):
        with Sweep.create(self.db, "ttl", space(), budget_runs=2, seed=1) as s:
            p1, r1 = s.ask(ttl=0.2)
            p2, r2 = s.ask()
            with self.assertRaises(ScaletuneError) as cm:  # two runs: the budget is spent
                s.ask()
            self.assertEqual(cm.exception.code, "ST_ERANGE")
            self.assertEqual(s.expired(), [])
            time.sleep(0.3)
            self.assertEqual(s.expired(), [r1])  # its worker is gone: listed...
            st = stutil.run([stutil.CLI, "sweep", "status", "--db", self.db]).stdout
            self.assertIn("expired: 1 asked run", st)
            # shown as expired, not running, before any ask comes
            self.assertIn("1 running, 0 pending, 0 stopped, 1 expired", st)
            js = json.loads(stutil.run([stutil.CLI, "sweep", "status", "--db", self.db,
                                        "--sweep", "ttl", "--json"]).stdout)
            self.assertEqual((js["runs"]["running"], js["runs"]["expired"], js["expired"]),
                             (1, 1, [r1]))
            self.assertEqual([r["suggestion_id"] for r in js["running"]], [r2])
            # sweep list and sweep watch count it the same way
            ls = json.loads(stutil.run([stutil.CLI, "sweep", "list", "--db", self.db,
                                        "--json"]).stdout)
            row = [x for x in ls if x["sweep"] == "ttl"][0]
            self.assertEqual((row["running"], row["expired"]), (1, 1))
            try:  # a worker still holds r2: watch follows until killed; its first line
                w = stutil.run([stutil.CLI, "sweep", "watch", "--db", self.db, "--sweep",
                                "ttl", "--interval", "0.1"], check=False, timeout=2).stdout
            except subprocess.TimeoutExpired as e:
                w = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            self.assertIn(": 1 running,", w)
            p3, r3 = s.ask(ttl=60)  # ...and handed out again, within the budget
            self.assertEqual((r3, p3), (r1, p1))
            self.assertEqual(s.expired(), [])
            s.tell(r3, objective=2.0, cost=1.0)
            with self.assertRaises(ScaletuneError) as cm:  # told once only
                s.tell(r1, objective=2.0, cost=1.0)
            self.assertEqual(cm.exception.code, "ST_ESTATE")
            s.tell(r2, failed=True)
        # the CLI: --ttl, and a bad value refused
        r = stutil.run([stutil.CLI, "sweep", "ask", "--ttl", "-1", "--db", self.db], check=False)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--ttl", r.stderr)
        with Sweep.create(self.db, "ttl2", space(), budget_runs=1, seed=1) as s:
            out = stutil.run([stutil.CLI, "sweep", "ask", "--ttl", "0.2", "--sweep", "ttl2",
                              "--db", self.db]).stdout
            rid = int(out.split("SUGGESTION_ID=")[1].split()[0])
            time.sleep(0.3)
            self.assertEqual(s.expired(), [rid])
            self.assertEqual(s.ask()[1], rid)

    def test_sharp_edges(self):
        opt = Optimizer(space(), seed=1)
        p, sid = opt.suggest()
        with self.assertRaises(ScaletuneError) as cm:  # a success needs its cost
            opt.observe(sid, 1.0)
        self.assertIn("cost", str(cm.exception))
        with self.assertRaises(ScaletuneError) as cm:  # NaN is not silently a failure
            opt.observe(sid, float("nan"), 5.0)
        self.assertIn("failed=True", str(cm.exception))
        opt.observe(sid, None)  # None: a failed run
        self.assertTrue(opt.observations[0]["failed"])
        with self.assertRaises(ScaletuneError) as cm:  # outside the bounds
            opt.observe({"lr": 0.5, "width": 64}, 1.0, 1.0)
        self.assertIn("outside its bounds", str(cm.exception))
        self.assertEqual(len(opt.observations), 1)
        opt.close()
        typo = os.path.join(self.tmp.name, "typo.db")
        with self.assertRaises(ScaletuneError):
            Sweep(typo)
        self.assertFalse(os.path.exists(typo))


if __name__ == "__main__":
    unittest.main()
