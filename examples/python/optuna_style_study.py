#!/usr/bin/env python3
"""optuna_style_study.py -- an Optuna-style study of a small PyTorch model, run three ways that
must suggest the same settings in the same order (issue 20, "How it is measured").

    scripts/install-deps --torch      # Debian's python3-torch (CPU)
    make
    PYTHONPATH=bindings/python /usr/bin/python3 examples/python/optuna_style_study.py \
        --trials 30 --kills 5

The model: a one-hidden-layer MLP (PyTorch, CPU, one thread, seeded per trial, so a trial's
result depends only on its settings) trained with SGD on a fixed synthetic regression task
(a random tanh teacher plus noise, fresh samples every step); objective the validation MSE.
Searched: lr (log, 1e-3..3: with momentum 0.9 SGD diverges above about 0.15, a failed trial),
width (log, 8..256, multiple of 8) and weight decay (log, 1e-6..0.1). N = the model's parameter
count, D = samples seen (steps x batch), cost = 6 N D. A trial takes well under a second.

The three ways:
  1. in process: scaletune.Optimizer, suggest/observe;
  2. store-backed ask/tell: scaletune.Sweep.create, then ask/tell (each ask rebuilds the optimizer
     from the store), with params=N and tokens=D on every tell;
  3. the same, in a worker subprocess killed with SIGKILL at `--kills` random trials (in the
     middle of training, the trial left "running" in the store) and resumed each time: the
     resumed worker first finishes the trials its predecessor left running, then asks on.
It prints each way's suggestions, checks the three sequences are identical, counts distinct
settings, and ends with Sweep.recommend(factor=10): a recommendation, which it then trains
(unless --no-run) to show that it runs and does not diverge, or a refusal with its reason.
Exit status 0 when the sequences agree, 1 otherwise.

resample_frequency is 0: by default CARBS re-runs a Pareto point every 5th suggestion to measure
noise, but a trial here is deterministic (seeded), so a resample would spend a trial to learn
nothing and repeat a setting.
"""

import argparse
import math
import os
import random
import signal
import subprocess
import sys
import tempfile

try:
    import torch
except ImportError:  # the test skips; run scripts/install-deps --torch
    torch = None

from scaletune import Optimizer, Param, Space, Sweep

SEED = 7
OPTIONS = {"num_random_samples": 6, "resample_frequency": 0}
STEPS, BATCH, DIM = 600, 64, 16


def space():
    return Space([Param("lr", "log", center=0.05, min=1e-3, max=3.0),
                  Param("width", "log", center=32, min=8, max=256, integer=True, rounding=8),
                  Param("weight_decay", "log", center=1e-4, min=1e-6, max=0.1)])


def teacher():
    """The fixed task, a random tanh teacher: (sample(n, generator), val x, val y)."""
    g = torch.Generator().manual_seed(1234)
    w1, w2 = torch.randn(DIM, 64, generator=g) / 2, torch.randn(64, 1, generator=g) / 4

    def sample(n, gen):
        x = torch.randn(n, DIM, generator=gen)
        return x, torch.tanh(x @ w1) @ w2 + 0.02 * torch.randn(n, 1, generator=gen)

    xv, yv = sample(1024, g)
    return sample, xv, yv


def train(p, steps=STEPS):
    """Trains one model: dict with objective (validation MSE, NaN if diverged), cost, N, D."""
    torch.manual_seed(SEED)
    sample, xv, yv = teacher()
    width = int(p["width"])
    model = torch.nn.Sequential(torch.nn.Linear(DIM, width), torch.nn.ReLU(),
                                torch.nn.Linear(width, 1))
    opt = torch.optim.SGD(model.parameters(), lr=p["lr"], momentum=0.9,
                          weight_decay=p["weight_decay"])
    g = torch.Generator().manual_seed(SEED)
    for _ in range(steps):
        x, y = sample(BATCH, g)  # fresh samples every step: no overfitting, D = STEPS x BATCH
        loss = torch.nn.functional.mse_loss(model(x), y)
        if not torch.isfinite(loss):
            break
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        val = float(torch.nn.functional.mse_loss(model(xv), yv))
    n = sum(t.numel() for t in model.parameters())
    d = steps * BATCH
    return {"objective": val, "cost": 6.0 * n * d, "params": n, "tokens": d}


def key(p):
    return (p["lr"], p["width"], p["weight_decay"])


def show(p, r):
    out = "%.4g" % r["objective"] if math.isfinite(r["objective"]) else "diverged"
    return "lr=%.3e width=%3d wd=%.2e -> %s" % (p["lr"], p["width"], p["weight_decay"], out)


def in_process(n):
    """Way 1: the optimizer kept alive in this process: (suggestions, results)."""
    seq, res = [], []
    with Optimizer(space(), seed=SEED, **OPTIONS) as opt:
        for _ in range(n):
            p, sid = opt.suggest()
            r = train(p)
            ok = math.isfinite(r["objective"])
            opt.observe(sid, r["objective"] if ok else None, r["cost"], failed=not ok)
            seq.append(p)
            res.append(r)
    return seq, res


def tell(sweep, rid, p):
    r = train(p)
    if math.isfinite(r["objective"]):
        sweep.tell(rid, r["objective"], r["cost"], params=r["params"], tokens=r["tokens"])
    else:
        sweep.tell(rid, failed=True, cost=r["cost"])
    return r


def create(db, name):
    Sweep.create(db, name, space(), objective="val_mse", cost="flops", seed=SEED,
                 **OPTIONS).close()


def worker(db, name, n):
    """Way 2 (and 3's worker): ask/tell until the store holds n told trials. Trials left
    running by a killed predecessor are finished first (this worker is the only one)."""
    with Sweep(db, name) as s:
        for t in s.trials:
            if t["status"] == "running":
                r = tell(s, t["run_id"], t["params"])
                print("finished run %d left running: %s" % (t["run_id"], show(t["params"], r)),
                      flush=True)
        while len(s.trials) < n:
            p, rid = s.ask()
            k = len(s.trials)  # this trial's number in the sweep (run ids count across sweeps)
            print("asked %d (run %d)" % (k, rid), flush=True)
            r = tell(s, rid, p)
            print("told %d: %s" % (k, show(p, r)), flush=True)


def store_seq(db, name):
    with Sweep(db, name) as s:
        return [{k: t["params"][k] for k in ("lr", "width", "weight_decay")} for t in s.trials]


def killed_and_resumed(db, name, n, kills, rng):
    """Way 3: a worker subprocess SIGKILLed in the middle of `kills` random trials, resumed
    after each. Returns the number of kills that happened."""
    create(db, name)
    at = set(rng.sample(range(2, n + 1), kills))
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", db, name, str(n)]
    done = 0
    for attempt in range(kills + 1):
        w = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        killed = False
        for line in w.stdout:
            if line.startswith("asked ") and int(line.split()[1]) in at:
                at.discard(int(line.split()[1]))
                w.send_signal(signal.SIGKILL)
                killed = True
                print("  [way 3] %sSIGKILL during trial %s" % ("" if attempt == 0 else "resumed, ",
                                                                line.split()[1]))
                break
        w.stdout.close()
        rc = w.wait()
        done += killed
        if not killed:
            if rc != 0:
                raise RuntimeError("worker exited %d" % rc)
            break
    return done


def compare(a, b):
    """Index of the first difference (None if identical)."""
    for i in range(max(len(a), len(b))):
        if i >= len(a) or i >= len(b) or key(a[i]) != key(b[i]):
            return i
    return None


def recommend(db, name, run_it):
    with Sweep(db, name) as s:
        rec = s.recommend(factor=10)
    if rec.get("safe", False):
        pred = rec.get("predicted") or {}
        pred = (rec.get("objective_name"), pred.get("objective", math.nan),
                pred.get("lo", math.nan), pred.get("hi", math.nan))
        print("recommendation at 10x (compute %.3g, method %s): %s" % (
            rec["compute"], rec.get("method"), rec["recommended"]))
        p_div = rec.get("p_diverge", math.nan)
        print("  predicted %s %.4g [%.4g, %.4g], p_diverge %.2g" % (pred + (p_div,)))
        for w in rec.get("warnings", []):
            print("  warning: %s" % w)
        d = (rec.get("size") or {}).get("D")
        if run_it and d:
            p = dict(rec["recommended"], width=int(rec["recommended"]["width"]))
            r = train(p, steps=max(1, int(round(d / BATCH))))
            print("ran it (D = %d samples, cost %.3g): %s" % (r["tokens"], r["cost"], show(p, r)))
    else:
        print("recommendation at 10x refused: %s" % rec.get("unsafe_reason", "(no reason given)"))
    return rec


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "--worker":
        worker(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=30)
    ap.add_argument("--kills", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1, help="seeds where the worker is killed")
    ap.add_argument("--db", help="store file (default: a temporary one)")
    ap.add_argument("--no-run", action="store_true", help="do not train the recommended run")
    a = ap.parse_args()
    if torch is None:
        print("optuna_style_study: needs PyTorch (scripts/install-deps --torch)", file=sys.stderr)
        return 2
    torch.set_num_threads(1)
    tmp = tempfile.TemporaryDirectory()
    db = a.db or os.path.join(tmp.name, "study.db")

    one, res = in_process(a.trials)
    create(db, "asktell")
    with open(os.devnull, "w") as quiet:
        saved, sys.stdout = sys.stdout, quiet
        try:
            worker(db, "asktell", a.trials)
        finally:
            sys.stdout = saved
    two = store_seq(db, "asktell")
    kills = killed_and_resumed(db, "killed", a.trials, a.kills, random.Random(a.seed))
    three = store_seq(db, "killed")

    print("trial  in process (way 1)")
    for i, p in enumerate(one):
        print("%5d  %s" % (i + 1, show(p, res[i])))
    d2, d3 = compare(one, two), compare(one, three)
    distinct = len({key(p) for p in one})
    print("store-backed ask/tell (way 2): %s" % ("identical" if d2 is None else
                                                 "differs from trial %d" % (d2 + 1)))
    print("killed %d times and resumed (way 3): %s" % (kills, "identical" if d3 is None else
                                                       "differs from trial %d" % (d3 + 1)))
    print("distinct settings: %d of %d" % (distinct, len(one)))
    recommend(db, "asktell", not a.no_run)
    return 0 if d2 is None and d3 is None else 1


if __name__ == "__main__":
    sys.exit(main())
