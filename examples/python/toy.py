"""toy.py -- a toy "training run" shared by the Python examples, runnable without torch.

A model of width W (d_model) trained at learning rate lr for a fixed number of steps. Its
final validation loss is a bowl in log10(lr) around an optimum that shrinks as 1/W (the muP
rule of thumb), plus a width term that falls as W grows:
    L(lr, W) = 2 + 60/W + 0.5 (log10 lr - log10 lr*(W))^2,   lr*(W) = 3e-3 * 256/W
Runs with lr above 8 lr*(W) diverge. The cost is the training FLOP 6 N D with N = 12 L W^2
(L = 4 layers) and D = 2^20 tokens. examples/c/train_loop.c computes the same numbers.
"""

import math

LAYERS = 4
TOKENS = float(1 << 20)


def lr_opt(width):
    return 3e-3 * 256.0 / width


def final_loss(lr, width):
    return 2.0 + 60.0 / width + 0.5 * (math.log10(lr) - math.log10(lr_opt(width))) ** 2


def flops(width):
    return 6.0 * 12.0 * LAYERS * width * width * TOKENS


def train(lr, width, steps=50, on_step=None):
    """Runs the toy training loop. on_step(step, loss) is called every step (report it with
    scaletune.metrics.step). Returns the final validation loss, or NaN if the run diverged."""
    target = final_loss(lr, width)
    diverges = lr > 8.0 * lr_opt(width)
    loss = 5.5  # ln(256): an untrained byte-level model
    for s in range(steps):
        # relax towards the final loss; a diverging run blows up half-way
        loss = target + (loss - target) * 0.85
        if diverges and s >= steps // 2:
            loss = float("nan")
        if on_step is not None:
            on_step(s, loss)
        if not math.isfinite(loss):
            return float("nan")
    return target
