"""test_categorical.py -- categorical and conditional parameters and enqueue from Python:
Optimizer over Param(choices=...) and Param(when=...) gives choice strings and None exactly
where a parameter is inactive, and finds the right choice of a toy whose answer is known;
Sweep.create writes them into a sweep file that loads; Sweep.ask/tell and Sweep.enqueue
(a known configuration handed out first and observed like any other run) through the store,
with the bad values refused with the store's message."""

import math
import os
import tempfile
import unittest

import stutil  # noqa: F401 (sets the library path)

from scaletune import Optimizer, Param, ScaletuneError, Space, Sweep

# (x - s_k)^2 + o_k over three optimizers, plus 10 (beta2 - 0.9)^2 with adamw: the best is
# adamw at x = 0.7, beta2 = 0.9 (0.0); lion's best is 1.0, sgd's 0.6.
SHIFT = {"adamw": 0.7, "lion": -1.0, "sgd": 0.2}
OFFSET = {"adamw": 0.0, "lion": 1.0, "sgd": 0.6}


def loss(p):
    v = (p["x"] - SHIFT[p["optimizer"]]) ** 2 + OFFSET[p["optimizer"]]
    if p["optimizer"] == "adamw":
        v += 10 * (p["beta2"] - 0.9) ** 2
    return v


def space():
    return Space([
        Param("optimizer", choices=["adamw", "lion", "sgd"], center="lion"),
        Param("beta2", "linear", center=0.95, min=0.8, max=0.999, when={"optimizer": "adamw"}),
        Param("x", "linear", center=0.0, min=-2, max=2),
    ])


class TestOptimizer(unittest.TestCase):
    def test_choices_and_conditions(self):
        opt = Optimizer(space(), seed=3, num_random_samples=6)
        seen = set()
        for _ in range(30):
            p, sid = opt.suggest()
            self.assertIn(p["optimizer"], SHIFT)
            self.assertEqual(p["beta2"] is None, p["optimizer"] != "adamw")
            seen.add(p["optimizer"])
            opt.observe(sid, loss(p), 1.0)
        self.assertEqual(seen, set(SHIFT))
        best = opt.best()
        self.assertEqual(best["params"]["optimizer"], "adamw")
        self.assertLess(best["output"], 0.05)
        # a run that was not suggested: a choice string, beta2 left out where inactive
        opt.observe({"optimizer": "sgd", "x": 0.2}, 0.6, 1.0)
        self.assertEqual(opt.observations[-1]["params"]["beta2"], None)
        with self.assertRaises(ValueError):
            opt.observe({"optimizer": "adam", "x": 0.2}, 0.6, 1.0)
        with self.assertRaises(ScaletuneError):  # active, so it needs a value
            opt.observe({"optimizer": "adamw", "x": 0.2}, 0.6, 1.0)

    def test_bad_space(self):
        with self.assertRaises(ValueError):
            Param("o", choices=["a"])
        with self.assertRaises(ValueError):
            Param("o", choices=["a", "b"], center="c")
        with self.assertRaises(ValueError):
            Optimizer(Space([Param("x", "linear", center=0.5, min=0, max=1,
                                   when={"o": "a"})]))


class TestDefaultScale(unittest.TestCase):
    """An integer in [1, 12] started at 3 with its optimum at 9: with the default scale (the
    range's) 40 trials reach 9 for every seed; with CARBS' scale 1 not every seed does (none of 4
    did before the trust region of 2026-11-28, 2 of 4 since: 9, 8, 9, 7)."""

    def run40(self, seed, scale):
        sp = Space([Param("n", "linear", center=3, min=1, max=12, integer=True, scale=scale),
                    Param("x", "linear", center=0.0, min=-1, max=1)])
        o = Optimizer(sp, seed=seed)
        for _ in range(40):
            p, sid = o.suggest()
            o.observe(sid, (p["n"] - 9) ** 2 + p["x"] ** 2, 1.0)
        return o

    def test_reaches_optimum(self):
        for seed in range(4):
            o = self.run40(seed, None)
            self.assertEqual(o.space.params[0].scale, None)
            self.assertEqual(o.best()["params"]["n"], 9, "seed %d" % seed)
        stuck = [self.run40(seed, 1.0).best()["params"]["n"] for seed in range(4)]
        self.assertLess(sum(n == 9 for n in stuck), 4, stuck)  # what this default fixes


@unittest.skipUnless(os.path.exists(stutil.CLI), "no scaletune CLI in the build directory")
class TestSweep(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.db = os.path.join(self.tmp.name, "s.db")

    def tearDown(self):
        self.tmp.cleanup()

    def test_enqueue_ask_tell(self):
        s = Sweep.create(self.db, "cat", space(), objective="loss", budget_runs=12, seed=2,
                         num_random_samples=4)
        with s:
            a = s.enqueue({"optimizer": "adamw", "beta2": 0.9, "x": 0.6})
            b = s.enqueue({"optimizer": "sgd"})  # x at its centre, beta2 inactive
            with self.assertRaises(ScaletuneError) as e:
                s.enqueue({"optimizer": "sgd", "beta2": 0.9})
            self.assertIn("inactive", str(e.exception))
            with self.assertRaises(ScaletuneError):
                s.enqueue({"optimizer": "rmsprop"})
            p, rid = s.ask()
            self.assertEqual((rid, p), (a, {"optimizer": "adamw", "beta2": 0.9, "x": 0.6}))
            s.tell(rid, objective=loss(p), cost=1.0)
            p, rid = s.ask()
            self.assertEqual((rid, p), (b, {"optimizer": "sgd", "beta2": None, "x": 0}))
            s.tell(rid, objective=loss(p), cost=1.0)
            for _ in range(6):
                p, rid = s.ask()
                self.assertGreater(rid, b)
                self.assertEqual(p["beta2"] is None, p["optimizer"] != "adamw")
                s.tell(rid, objective=loss(p), cost=1.0)
            trials = s.trials
            self.assertEqual(len(trials), 8)
            self.assertEqual(trials[0]["params"]["optimizer"], "adamw")
            self.assertIsNone(trials[1]["params"]["beta2"])
            self.assertEqual(s.best_params["optimizer"], "adamw")
            rid = s.record({"optimizer": "lion", "beta2": None, "x": -1.0}, 1.0, 1.0)
            self.assertEqual(s.trials[-1]["params"], {"optimizer": "lion", "beta2": None,
                                                      "x": -1.0})
            self.assertTrue(math.isfinite(s.trials[-1]["objective"]))
            # the engine takes a categorical (the front here: no N, D or learning rate): the
            # best run's choice, a string, with beta2 null where that choice leaves it inactive
            rec = s.recommend(factor=10, bootstrap=10)["recommended"]
            best = min((t for t in s.trials if t["objective"] is not None),
                       key=lambda t: t["objective"])["params"]
            self.assertEqual(rec["optimizer"], best["optimizer"])
            self.assertEqual(rec["beta2"] is None, rec["optimizer"] != "adamw")
            out = os.path.join(self.tmp.name, "r.json")
            s.report(out)
            self.assertTrue(os.path.getsize(out) > 0)

    def test_constraint_tell(self):
        """A told final field over a constraint of the sweep file: failed as `constraint`,
        objective kept; within it: a success."""
        path = os.path.join(self.tmp.name, "c.yaml")
        with open(path, "w") as f:
            f.write("name: con\nobjective: {metric: loss}\ncost: {metric: flops}\n"
                    "parameters:\n  x: {space: linear, min: 0, max: 1, center: 0.5}\n"
                    "constraints: {memory_gb: \"<= 80\"}\nbudget: {runs: 4}\n")
        stutil.run([stutil.CLI, "sweep", "create", path, "--db", self.db])
        with Sweep(self.db) as s:
            _, a = s.ask()
            s.tell(a, objective=1.5, cost=1.0, memory_gb=81)
            _, b = s.ask()
            s.tell(b, objective=1.7, cost=1.0, memory_gb=80)
            runs = {r["suggestion_id"]: r for r in s.export()["runs"]}
            self.assertEqual((runs[a]["status"], runs[a]["failure"]), ("failed", "constraint"))
            self.assertEqual(runs[a]["objective"], 1.5)
            self.assertEqual(runs[b]["status"], "succeeded")

    def test_method_random(self):
        s = Sweep.create(self.db, "rnd", space(), objective="loss", budget_runs=40, seed=1,
                         method="random")
        with s:
            seen = set()
            for _ in range(40):
                p, rid = s.ask()
                self.assertTrue(-2 <= p["x"] <= 2)
                self.assertEqual(p["beta2"] is None, p["optimizer"] != "adamw")
                seen.add(p["optimizer"])
                s.tell(rid, objective=loss(p), cost=1.0)
            self.assertEqual(seen, set(SHIFT))


if __name__ == "__main__":
    unittest.main()
