#!/usr/bin/env python3
"""metrics_trainer.py -- a training script that reports through the metrics protocol, ready to
be launched by `scaletune sweep` (examples/python/toy-sweep.yaml does).

    PYTHONPATH=bindings/python python3 examples/python/metrics_trainer.py --lr 3e-3 --width 256

One JSON line per step ({"event":"step",...}), an eval record every 10 steps, and a final record
with the objective (val_loss) and the cost (flops); a run whose loss becomes NaN writes a
diverged record and exits with status 3 (a hyperparameter failure, not retried). Lines go to
$SCALETUNE_METRICS_FILE when the runner sets it, else to standard output. In a PyTorch script
the call is the same: metrics.step(step, loss.item(), lr=sched.get_last_lr()[0]).
"""

import argparse
import sys

import toy
from scaletune import metrics


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lr", type=float, required=True)
    ap.add_argument("--width", type=int, required=True)
    ap.add_argument("--steps", type=int, default=50)
    a = ap.parse_args()

    def on_step(step, loss):
        if not metrics.step(step, loss, lr=a.lr):  # False: a diverged record was written
            sys.exit(3)
        if step % 10 == 9:
            metrics.eval(step, val_loss=loss * 1.01)

    val_loss = toy.train(a.lr, a.width, steps=a.steps, on_step=on_step)
    n = 12 * toy.LAYERS * a.width * a.width
    metrics.final(val_loss=val_loss, flops=toy.flops(a.width), params=n, tokens=toy.TOKENS)


if __name__ == "__main__":
    main()
