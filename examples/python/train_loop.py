#!/usr/bin/env python3
"""train_loop.py -- drive scaletune's optimizer from a training script (ask/tell in-process).

    make && PYTHONPATH=bindings/python python3 examples/python/train_loop.py [--runs 30]
        [--state opt.state]

Each iteration asks for (lr, width), trains (here the toy of toy.py; put your PyTorch loop in
its place), and tells the optimizer the validation loss and the cost in FLOP. A diverged run is
observed as a failure. With --state the optimizer is saved after every run and resumed from
that file on the next invocation. examples/c/train_loop.c is the same program in C.
"""

import argparse
import math
import os

import scaletune
import toy


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--state", help="save the optimizer here after each run; resume from it")
    a = ap.parse_args()

    space = scaletune.Space([
        scaletune.Param("lr", "log", center=1e-3, min=1e-5, max=1.0),
        scaletune.Param("width", "log", center=128, min=32, max=1024, integer=True, rounding=16),
    ])
    if a.state and os.path.exists(a.state):
        opt = scaletune.Optimizer.load(a.state)
        print("resumed from %s: %d observations" % (a.state, len(opt.observations)))
    else:
        opt = scaletune.Optimizer(space, seed=a.seed, num_random_samples=6)

    for _ in range(a.runs):
        params, run_id = opt.suggest()
        loss = toy.train(params["lr"], params["width"])
        cost = toy.flops(params["width"])
        failed = not math.isfinite(loss)
        opt.observe(run_id, loss, cost, failed=failed)
        print("run %3d  lr=%.3e width=%4d  %s  cost=%.3g" % (
            run_id, params["lr"], params["width"],
            "diverged" if failed else "val_loss=%.4f" % loss, cost))
        if a.state:
            opt.save(a.state)

    best = opt.best()
    print("best: val_loss=%.4f lr=%.3e width=%d" % (
        best["output"], best["params"]["lr"], best["params"]["width"]))
    print("pareto front (cost, val_loss):")
    for p in opt.pareto():
        print("  %.3g  %.4f  lr=%.3e width=%d" % (
            p["cost"], p["output"], p["params"]["lr"], p["params"]["width"]))


if __name__ == "__main__":
    main()
