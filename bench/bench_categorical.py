"""bench_categorical.py -- a categorical factor on Branin: f = branin(x1, x2) + offset[k],
offsets a 0.8, b 3.0, c 0.0 (not monotone in the choice's index), minimum 0.397887 at k = c.
Runs until the best is within 1% + 0.01 of it (the band), 60 runs at most, 8 seeds, for:
  categorical  carbs/ with Param("k", choices=[a, b, c]) (one-hot GPs), started at a
  ordinal      carbs/ with k as an integer 0..2 (what a user without categoricals writes)
  random       uniform choice and uniform x (method: random's distribution)
Prints, per method, the seeds that reached the band and the runs each needed.
Run from the repository root after `make`:
  PYTHONPATH=bindings/python python3 bench/bench_categorical.py
"""

import math
import random
import statistics

from scaletune import Optimizer, Param, Space

OFFSET = {"a": 0.8, "b": 3.0, "c": 0.0}
FMIN = 0.397887
BAND = FMIN * 1.01 + 0.01
N, SEEDS = 60, 8


def branin(x1, x2):
    b, c, t = 5.1 / (4 * math.pi ** 2), 5 / math.pi, 1 / (8 * math.pi)
    return (x2 - b * x1 ** 2 + c * x1 - 6) ** 2 + 10 * (1 - t) * math.cos(x1) + 10


def f(k, x1, x2):
    return branin(x1, x2) + OFFSET[k]


def xs():
    return [Param("x1", "linear", center=2.5, min=-5, max=10),
            Param("x2", "linear", center=7.5, min=0, max=15)]


def carbs_run(seed, ordinal):
    k = (Param("k", "linear", center=0, min=0, max=2, integer=True) if ordinal
         else Param("k", choices=list(OFFSET), center="a"))
    o = Optimizer(Space([k] + xs()), seed=seed)
    best = math.inf
    for i in range(N):
        p, sid = o.suggest()
        kk = list(OFFSET)[int(p["k"])] if ordinal else p["k"]
        y = f(kk, p["x1"], p["x2"])
        o.observe(sid, y, 1.0)
        best = min(best, y)
        if best <= BAND:
            return i + 1, best
    return None, best


def random_run(seed):
    r = random.Random(seed)
    best = math.inf
    for i in range(N):
        best = min(best, f(r.choice(list(OFFSET)), r.uniform(-5, 10), r.uniform(0, 15)))
        if best <= BAND:
            return i + 1, best
    return None, best


def main():
    for name, fn in (("categorical", lambda s: carbs_run(s, False)),
                     ("ordinal", lambda s: carbs_run(s, True)), ("random", random_run)):
        res = [fn(s) for s in range(SEEDS)]
        hits = sorted(n for n, _ in res if n)
        print("%-12s reached the band in %d of %d seeds (runs: %s); median best %.4f"
              % (name, len(hits), SEEDS, hits, statistics.median(b for _, b in res)))


if __name__ == "__main__":
    main()
