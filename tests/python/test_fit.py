"""test_fit.py -- scaletune's fit functions on synthetic data with known parameters: Chinchilla
(Hoffmann et al. 2022 eq. 2) and a saturating power law are recovered; the allocation matches
the closed form of Chinchilla eq. 4; predictions invert the law; errors carry fit_errmsg()."""

import math
import random
import unittest

import stutil  # noqa: F401

import scaletune
from scaletune import ScaletuneError

TRUE = {"A": 406.4, "B": 410.7, "E": 1.69, "alpha": 0.34, "beta": 0.28}  # Hoffmann et al. 2022


def chin(N, D, p=TRUE):
    return p["E"] + p["A"] / N ** p["alpha"] + p["B"] / D ** p["beta"]


def grid(noise=0.0, seed=1):
    rng = random.Random(seed)
    N, D, L = [], [], []
    for i in range(7):
        for j in range(7):
            n, d = 10 ** (7 + 0.5 * i), 10 ** (8 + 0.5 * j)
            N.append(n)
            D.append(d)
            L.append(chin(n, d) * math.exp(rng.gauss(0.0, noise)))
    return N, D, L


class TestFit(unittest.TestCase):
    def test_chinchilla_recovers_parameters(self):
        N, D, L = grid()
        r = scaletune.chinchilla(N, D, L, n_threads=2)
        self.assertEqual(r["law"], "chinchilla")
        self.assertEqual(set(r["params"]), set(TRUE))
        for k, v in TRUE.items():
            self.assertAlmostEqual(r["params"][k] / v, 1.0, delta=1e-3, msg=k)
        self.assertLess(r["objective_value"], 1e-8)
        self.assertEqual(r["n"], 49)
        # allocation (Chinchilla eq. 4): a = beta/(alpha+beta), G = (alpha A/(beta B))^(1/(a+b))
        al = r["allocation"]
        p = r["params"]
        a = p["beta"] / (p["alpha"] + p["beta"])
        G = (p["alpha"] * p["A"] / (p["beta"] * p["B"])) ** (1.0 / (p["alpha"] + p["beta"]))
        C = 5.88e23
        self.assertAlmostEqual(al["a"], a, places=12)
        self.assertAlmostEqual(al["N_opt"] / (G * (C / 6) ** a), 1.0, places=9)
        self.assertAlmostEqual(al["N_opt"] * al["D_opt"] * 6 / C, 1.0, places=9)

    def test_noisy_chinchilla_and_bootstrap(self):
        N, D, L = grid(noise=0.003, seed=4)
        r = scaletune.fit_law("chinchilla", list(zip(N, D)), L, n_threads=2,
                              n_boot=0 if stutil.QUICK else 40, seed=3)
        self.assertAlmostEqual(r["params"]["E"], TRUE["E"], delta=0.05)
        self.assertAlmostEqual(r["params"]["alpha"], TRUE["alpha"], delta=0.03)
        self.assertAlmostEqual(r["params"]["beta"], TRUE["beta"], delta=0.03)
        if not stutil.QUICK:
            for k in TRUE:
                lo, hi = r["interval"][k]
                self.assertLessEqual(lo, hi)
                self.assertGreater(r["se"][k], 0.0)

    def test_saturating_one_input_and_predict(self):
        # y = E + A C^-alpha with (A, alpha, E) = (50, 0.12, 1.8)
        C = [10 ** (15 + 0.5 * i) for i in range(12)]
        y = [1.8 + 50.0 * c ** -0.12 for c in C]
        r = scaletune.fit_law("saturating", C, y, n_threads=1)
        info = scaletune.law_info("saturating")
        self.assertEqual(set(r["params"]), set(info["params"]))
        self.assertAlmostEqual(r["params"]["alpha"], 0.12, delta=1e-4)
        self.assertAlmostEqual(r["params"]["E"], 1.8, delta=1e-3)
        pred = scaletune.predict_law("saturating", r["params"], [1e20, 1e24])
        self.assertAlmostEqual(pred[0], 1.8 + 50.0 * 1e20 ** -0.12, delta=1e-4)
        # the law evaluated at the true natural parameters (in the law's order)
        truth = [{"A": 50.0, "alpha": 0.12, "E": 1.8}[k] for k in info["params"]]
        self.assertAlmostEqual(scaletune.predict_law("saturating", truth, [1e18])[0],
                               1.8 + 50.0 * 1e18 ** -0.12, places=12)

    def test_allocation_functions(self):
        al = scaletune.allocate(TRUE, 1e21)
        self.assertAlmostEqual(6 * al["N_opt"] * al["D_opt"] / 1e21, 1.0, places=9)
        self.assertAlmostEqual(al["tokens_per_param"], al["D_opt"] / al["N_opt"], places=6)
        self.assertAlmostEqual(al["L_opt"], chin(al["N_opt"], al["D_opt"]), places=9)
        self.assertAlmostEqual(scaletune.loss_at(TRUE, 1e9, 2e10), chin(1e9, 2e10), places=12)
        C = scaletune.compute_for_loss(TRUE, al["L_opt"])
        self.assertAlmostEqual(C / 1e21, 1.0, places=6)
        with self.assertRaises(ScaletuneError) as e:
            scaletune.compute_for_loss(TRUE, 1.0)  # below E
        self.assertEqual(e.exception.code, "ST_ERANGE")
        hp = scaletune.hp_preset("deepseek", C=1e21)
        self.assertAlmostEqual(hp["lr"], 0.3118 * 1e21 ** -0.125, delta=1e-9)
        with self.assertRaises(ScaletuneError):
            scaletune.hp_preset("nope", C=1e21)

    def test_approach1(self):
        # runs on the compute-optimal frontier N = 0.1 C^0.5: Approach 1 finds a = 0.5
        N, D, C, L = [], [], [], []
        for i in range(8):
            c = 10 ** (18 + 0.5 * i)
            n = 0.1 * c ** 0.5
            N.append(n)
            D.append(c / (6 * n))
            C.append(c)
            L.append(10.0 / math.log10(c))
        r = scaletune.approach1(N, D, C, L)
        self.assertAlmostEqual(r["a"], 0.5, places=9)
        self.assertAlmostEqual(r["b"], 0.5, places=9)
        self.assertAlmostEqual(r["kN"], 0.1, places=9)

    def test_errors(self):
        with self.assertRaises(ScaletuneError) as e:
            scaletune.fit_law("chinchilla", [(1e7, 1e8), (1e8, -1.0)] * 5, [3.0] * 10)
        self.assertEqual(e.exception.code, "ST_EINVAL")
        self.assertIn("row", e.exception.message)  # fit_set_data names the bad row
        with self.assertRaises(ScaletuneError) as e:
            scaletune.fit_law("chinchilla", [(1e7, 1e8)] * 3, [3.0] * 3)
        self.assertEqual(e.exception.code, "ST_EEMPTY")
        with self.assertRaises(ScaletuneError) as e:
            scaletune.fit_law("no-such-law", [1.0], [1.0])
        self.assertIn("chinchilla", e.exception.message)
        with self.assertRaises(ScaletuneError):
            scaletune.fit_law("saturating", [1.0, 2.0], [1.0])
        self.assertIn("gadre", scaletune.laws())


if __name__ == "__main__":
    unittest.main()
