"""bench_categorical.py -- a categorical factor on Branin: f = branin(x1, x2) + offset[k],
offsets a 0.8, b 3.0, c 0.0 (not monotone in the choice's index), minimum 0.397887 at k = c.
Runs until the best is within 1% + 0.01 of it (the band), 300 runs at most, 8 seeds, for:
  categorical  carbs/ with Param("k", choices=[a, b, c]) (one-hot GPs), started at a
  ordinal      carbs/ with k as an integer 0..2 (what a user without categoricals writes)
  random       uniform choice and uniform x (method: random's distribution)
  optuna_tpe, optuna_tpe_mv, optuna_cmaes   Optuna's TPE (default and multivariate) and CMA-ES
               samplers through ask/tell, when `import optuna` works (Debian's python3-optuna,
               for /usr/bin/python3: `scripts/install-deps --bench`), measured in the same run
Prints, per method, the seeds that reached the band and the runs each needed, then the median
runs to the band of `categorical` over that of the best Optuna sampler (a seed that never
reaches the band counts as infinite; issue 22's target is <= 0.75).
Run from the repository root after `make`:
  PYTHONPATH=bindings/python /usr/bin/python3 bench/bench_categorical.py
"""

import math
import random
import statistics

from scaletune import Optimizer, Param, Space

OFFSET = {"a": 0.8, "b": 3.0, "c": 0.0}
FMIN = 0.397887
BAND = FMIN * 1.01 + 0.01
N, SEEDS = 300, 8


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


def optuna_run(seed, kind):
    import warnings
    import optuna
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
    if kind == "cmaes":
        sampler = optuna.samplers.CmaEsSampler(seed=seed)
    else:
        sampler = optuna.samplers.TPESampler(seed=seed, multivariate=(kind == "tpe_mv"))
    study = optuna.create_study(sampler=sampler)
    best = math.inf
    for i in range(N):
        t = study.ask()
        y = f(t.suggest_categorical("k", list(OFFSET)), t.suggest_float("x1", -5, 10),
              t.suggest_float("x2", 0, 15))
        study.tell(t, y)
        best = min(best, y)
        if best <= BAND:
            return i + 1, best
    return None, best


def have_optuna():
    try:
        import optuna  # noqa: F401
        return True
    except ImportError:
        return False


def median_runs(res):
    return statistics.median(n if n else math.inf for n, _ in res)


def main():
    methods = [("categorical", lambda s: carbs_run(s, False)),
               ("ordinal", lambda s: carbs_run(s, True)), ("random", random_run)]
    if have_optuna():
        for kind in ("tpe", "tpe_mv", "cmaes"):
            methods.append(("optuna_" + kind, lambda s, k=kind: optuna_run(s, k)))
    else:
        print("optuna: not importable by this python; its samplers are left out")
    med = {}
    for name, fn in methods:
        res = [fn(s) for s in range(SEEDS)]
        hits = sorted(n for n, _ in res if n)
        med[name] = median_runs(res)
        worst = max(n if n else math.inf for n, _ in res)
        print("%-14s reached the band in %d of %d seeds (runs: %s); median runs %s, worst %s; "
              "median best %.4f" % (name, len(hits), SEEDS, hits, med[name], worst,
                                    statistics.median(b for _, b in res)))
    peers = {k: v for k, v in med.items() if k.startswith("optuna_")}
    if peers:
        best = min(peers, key=peers.get)
        ratio = med["categorical"] / peers[best] if math.isfinite(peers[best]) else float("nan")
        print("categorical / best Optuna sampler (%s), median runs to the band: %.2f (target "
              "<= 0.75)" % (best, ratio))
        print("BENCH categorical.runs_vs_optuna %.3f" % ratio)


if __name__ == "__main__":
    main()
