#!/usr/bin/env python3
"""ask_tell.py -- take a training run's settings from a sweep store and report the outcome
(ask/tell), without a controller: for jobs launched by some other scheduler.

    build/scaletune sweep create examples/python/toy-sweep.yaml --db /tmp/toy.db
    PYTHONPATH=bindings/python python3 examples/python/ask_tell.py --db /tmp/toy.db --runs 4
    build/scaletune sweep status --db /tmp/toy.db

Each ask records a run as running in the store; each tell records its objective and cost (or
failed=True). Several such scripts may run at once on the same store.
"""

import argparse
import math

import toy
from scaletune import Sweep


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", required=True)
    ap.add_argument("--sweep", help="sweep name (needed only if the store holds several)")
    ap.add_argument("--runs", type=int, default=4)
    a = ap.parse_args()

    with Sweep(a.db, a.sweep) as sweep:
        for _ in range(a.runs):
            params, run_id = sweep.ask()
            loss = toy.train(params["lr"], params["width"], steps=params["steps"])
            if math.isfinite(loss):
                sweep.tell(run_id, objective=loss, cost=toy.flops(params["width"]))
            else:
                sweep.tell(run_id, failed=True)
            print("run %d: lr=%.3e width=%d -> %s" % (run_id, params["lr"], params["width"],
                                                       "%.4f" % loss if math.isfinite(loss) else "diverged"))
        st = sweep.status()
        print("%d runs, %d succeeded, best %.4f" % (st["n_runs"], st["n_by_status"]["succeeded"],
                                                    st["best_objective"]))


if __name__ == "__main__":
    main()
