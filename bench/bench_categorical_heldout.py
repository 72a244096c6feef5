"""bench_categorical_heldout.py -- bench_categorical.py's categorical Branin on seeds it does not
use (8-31 by default), for scaletune's categorical encoding and Optuna's GPSampler, measured in
the same run: a check that a change tuned on the bench's 8 seeds is not fitted to them
(docs/algorithms/carbs.md, the trust region). Prints the runs to the band per seed, median and
worst for each, and the ratios of the medians and of the worsts (a seed that never reaches the
band counts as infinite). Optuna 4.7 as for the bench (bench/optuna_peer.py); without a
GPSampler only scaletune's runs are printed. 47 s on this 2-core machine (2026-11-28).
Run from the repository root after `make`:
  [SCALETUNE_OPTUNA_PATH=DIR] PYTHONPATH=bindings/python OPENBLAS_NUM_THREADS=1 \
    /usr/bin/python3 bench/bench_categorical_heldout.py [FIRST_SEED LAST_SEED_EXCLUSIVE]
"""

import math
import statistics
import sys

import bench_categorical as bench
import optuna_peer


def runs(fn, seeds):
    return [fn(s)[0] or math.inf for s in seeds]


def report(name, r):
    print("%-12s runs: %s; median %s, worst %s" % (name, r, statistics.median(r), max(r)),
          flush=True)


def main():
    lo, hi = (int(sys.argv[1]), int(sys.argv[2])) if len(sys.argv) == 3 else (8, 32)
    seeds = range(lo, hi)
    cat = runs(lambda s: bench.carbs_run(s, False), seeds)
    report("categorical", cat)
    optuna = optuna_peer.load("bench_categorical_heldout")
    skip = optuna_peer.gp_check(optuna) if optuna is not None else "optuna not importable"
    if skip:
        print("optuna_gp    %s" % skip)
        return
    gp = runs(lambda s: bench.optuna_run(optuna, s, "gp"), seeds)
    report("optuna_gp", gp)
    print("categorical / optuna_gp on seeds %d-%d: median runs %.2f, worst %.2f (target <= 0.75)"
          % (lo, hi - 1, statistics.median(cat) / statistics.median(gp), max(cat) / max(gp)))


if __name__ == "__main__":
    main()
