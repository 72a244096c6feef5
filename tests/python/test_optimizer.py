"""test_optimizer.py -- scaletune.Optimizer against carbs: a suggest/observe loop converges on a
toy, errors raise ScaletuneError with the library's message, save/load and to_bytes/from_bytes
give the same next suggestion, batches, forget, observe by params, options, Pareto, predict."""

import math
import os
import tempfile
import unittest

import stutil  # noqa: F401 (sets the path and the library)

import scaletune
from scaletune import Optimizer, Param, ScaletuneError, Space


def toy_space():
    return Space([
        Param("x", "linear", center=0.0, min=-2.0, max=3.0),
        Param("lr", "log", center=1e-3, min=1e-5, max=1.0),
    ])


def toy(p):
    # minimum 1 at x = 0.7, lr = 3e-3; cost grows with x so the cost axis matters
    return 1.0 + (p["x"] - 0.7) ** 2 + 0.3 * (math.log10(p["lr"]) - math.log10(3e-3)) ** 2, 1.0 + p["x"] + 2.0


class TestOptimizer(unittest.TestCase):
    def test_version(self):
        self.assertRegex(scaletune.__version__, r"^\d+\.\d+\.\d+$")
        self.assertEqual(scaletune.__version__, "0.1.0")

    def test_converges_on_toy(self):
        n = 20 if stutil.QUICK else 40
        opt = Optimizer(toy_space(), seed=3, num_random_samples=5)
        first = []
        for i in range(n):
            p, sid = opt.suggest()
            self.assertGreater(sid, 0)
            y, c = toy(p)
            if i < 5:
                first.append(y)
            opt.observe(sid, y, c)
        best = opt.best()
        self.assertLess(best["output"], 1.05)
        self.assertLess(best["output"], min(first))
        self.assertAlmostEqual(best["params"]["x"], 0.7, delta=0.25)
        self.assertEqual(len(opt.observations), n)
        self.assertEqual(opt.outstanding, [])
        self.assertGreater(opt.cumulative_cost, 0)

    def test_integer_param_is_int(self):
        sp = Space({"w": {"space": "log", "center": 64, "min": 16, "max": 1024, "integer": True,
                          "rounding": 16}})
        opt = Optimizer(sp, seed=1)
        for _ in range(5):
            p, sid = opt.suggest()
            self.assertIsInstance(p["w"], int)
            self.assertEqual(p["w"] % 16, 0)
            opt.observe(sid, 1.0 / p["w"], p["w"])

    def test_errors_carry_messages(self):
        with self.assertRaises(ScaletuneError) as e:
            Optimizer(toy_space(), no_such_option=1)
        self.assertEqual(e.exception.code, "ST_ENOTFOUND")
        self.assertIn("no_such_option", str(e.exception))
        with self.assertRaises(ScaletuneError) as e:
            Optimizer(toy_space(), search_radius="wide")
        self.assertEqual(e.exception.code, "ST_EINVAL")
        # centre outside the bounds: carbs_create's errmsg names the parameter
        with self.assertRaises(ScaletuneError) as e:
            Optimizer(Space([Param("depth", "linear", center=50, min=1, max=24)]))
        self.assertEqual(e.exception.status, 1)
        self.assertIn("depth", e.exception.message)
        opt = Optimizer(toy_space(), seed=1)
        with self.assertRaises(ScaletuneError) as e:
            opt.observe(987654, 1.0, 1.0)
        self.assertEqual(e.exception.code, "ST_ENOTFOUND")
        self.assertIn("987654", e.exception.message)
        p, sid = opt.suggest()
        with self.assertRaises(ScaletuneError) as e:
            opt.observe(sid, 1.0, -5.0)  # a success needs cost > 0
        self.assertEqual(e.exception.code, "ST_EINVAL")
        self.assertTrue(e.exception.message)
        with self.assertRaises(ScaletuneError) as e:
            opt.predict({"x": 0.0, "lr": 1e-3})  # fewer than 2 successes
        self.assertEqual(e.exception.code, "ST_EEMPTY")
        with self.assertRaises(KeyError):
            opt.observe({"x": 0.0}, 1.0, 1.0)
        with self.assertRaises(ScaletuneError):
            Optimizer.from_bytes(b"not a carbs state")
        with self.assertRaises(ScaletuneError) as e:
            Optimizer.load("/nonexistent/dir/state.bin")
        self.assertTrue(e.exception.message)

    def _warm(self, opt, n=8):
        for _ in range(n):
            p, sid = opt.suggest()
            y, c = toy(p)
            opt.observe(sid, y, c)

    def test_save_load_same_next_suggestion(self):
        opt = Optimizer(toy_space(), seed=7, num_random_samples=4)
        self._warm(opt)
        pending, _ = opt.suggest()  # an outstanding suggestion travels with the state
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "opt.state")
            opt.save(path)
            loaded = Optimizer.load(path)
        clone = Optimizer.from_bytes(opt.to_bytes())
        self.assertEqual(opt.to_bytes(), clone.to_bytes())
        a, ida = opt.suggest()
        b, idb = loaded.suggest()
        c, idc = clone.suggest()
        self.assertEqual(a, b)
        self.assertEqual(a, c)
        self.assertEqual(ida, idb)
        self.assertEqual(ida, idc)
        self.assertEqual(len(loaded.outstanding), 2)
        self.assertEqual(loaded.space.names, ["x", "lr"])
        self.assertEqual(loaded.options["seed"], 7)

    def test_batch_forget_and_observe_by_params(self):
        opt = Optimizer(toy_space(), seed=2, num_random_samples=3)
        self._warm(opt, 6)
        batch = opt.suggest_batch(3)
        self.assertEqual(len(batch), 3)
        ids = [sid for _, sid in batch]
        self.assertEqual(len(set(ids)), 3)
        self.assertEqual(len({tuple(sorted(p.items())) for p, _ in batch}), 3)
        self.assertEqual(sorted(i for _, i in opt.outstanding), sorted(ids))
        opt.forget(ids[0])
        self.assertEqual(len(opt.outstanding), 2)
        with self.assertRaises(ScaletuneError):
            opt.forget(ids[0])
        opt.observe(ids[1], float("nan"), float("nan"), failed=True)
        self.assertTrue(opt.observations[-1]["failed"])
        opt.observe({"x": 0.7, "lr": 3e-3}, 1.0, 3.7)  # a run nobody suggested
        self.assertEqual(opt.observations[-1]["params"]["x"], 0.7)
        with self.assertRaises(ScaletuneError):
            opt.suggest_batch(0)

    def test_options_pareto_predict(self):
        opt = Optimizer(toy_space(), seed=5, num_random_samples=4, maximize=False,
                        search_radius=0.5, mode="recommended")
        self.assertAlmostEqual(opt.options["search_radius"], 0.5)
        self.assertEqual(opt.options["seed"], 5)
        opt.set_options(max_suggestion_cost=10.0)
        self.assertEqual(opt.options["max_suggestion_cost"], 10.0)
        self.assertAlmostEqual(opt.options["search_radius"], 0.5)
        self._warm(opt, 10)
        front = opt.pareto()
        self.assertGreaterEqual(len(front), 1)
        costs = [f["cost"] for f in front]
        outs = [f["output"] for f in front]
        self.assertEqual(costs, sorted(costs))
        for a, b in zip(outs, outs[1:]):
            self.assertLess(b, a)  # more cost buys a better output along the front
        pr = opt.predict([{"x": 0.7, "lr": 3e-3}, {"x": -1.5, "lr": 1e-5}])
        self.assertEqual(len(pr), 2)
        self.assertLess(pr[0]["mean"], pr[1]["mean"])
        self.assertTrue(0.0 <= pr[0]["p_success"] <= 1.0)
        info = opt.last_info()
        self.assertIn(info["phase"], ("random", "resample", "bayes", "fallback"))
        names = [n for n, _, _ in scaletune.option_names()]
        self.assertIn("num_random_samples", names)
        center = opt.search_center
        self.assertEqual(set(center), {"x", "lr"})
        opt.search_center = {"x": 0.5, "lr": 1e-3}
        self.assertAlmostEqual(opt.search_center["x"], 0.5)

    def test_minimize_and_close(self):
        with Optimizer(toy_space(), seed=4, num_random_samples=3) as opt:
            best = opt.minimize(toy, 10)
            self.assertEqual(len(opt.observations), 10)
            self.assertLess(best["output"], 3.0)
        with self.assertRaises(ScaletuneError):
            opt.suggest()


if __name__ == "__main__":
    unittest.main()
