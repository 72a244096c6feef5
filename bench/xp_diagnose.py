#!/usr/bin/env python3
"""Where the regret of bench-extrapolate's recommendations comes from, seed by seed.

usage: python3 bench/xp_diagnose.py WORK [--factor F] [--llmsim PATH]

WORK is bench_extrapolate's --work directory (seed-K/xF.json from `scaletune extrapolate`).
For each seed it prints the regret of the recommendation at factor F (true loss over the
oracle's at the same compute, minus 1; llmsim --true and --oracle), each recommended value as a
multiple of the oracle's, the true loss's penalty terms of the recommendation (lr-batch, warmup,
weight decay, as fractions of the loss), the loss without them against the oracle's (the N/D
split), P(diverge), and where the predicted loss and its interval lie against the true loss.
Then the median and worst regret and how many seeds are below 1%. Reads only; runs llmsim.
"""
import json
import os
import statistics
import subprocess
import sys

PARAMS = ["N", "tokens", "lr", "batch", "warmup", "weight_decay"]
ORACLE_KEY = {"N": "params", "tokens": "tokens", "lr": "lr", "batch": "batch",
              "warmup": "warmup", "weight_decay": "weight_decay"}
FLAGS = {"N": "--N", "tokens": "--tokens", "lr": "--lr", "batch": "--batch",
         "warmup": "--warmup", "weight_decay": "--weight-decay"}


def llmsim(path, args):
    out = subprocess.run([path] + args, capture_output=True, text=True)
    if out.returncode not in (0, 3) or not out.stdout.strip():
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])


def seed_row(work, seed, factor, sim):
    path = os.path.join(work, f"seed-{seed}", f"x{factor}.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        xp = json.load(f)
    rec, pred = xp.get("recommended") or {}, xp.get("predicted") or {}
    if any(not isinstance(rec.get(k), (int, float)) for k in PARAMS):
        return {"seed": seed, "missing": True}
    world = ["--world", str(seed)]
    oracle = llmsim(sim, world + ["--oracle", repr(xp["compute"])])
    args = world + [a for k in PARAMS for a in (FLAGS[k], repr(rec[k]))] + ["--true"]
    truth = llmsim(sim, args)
    if not oracle or not truth:
        return {"seed": seed, "missing": True}
    loss = truth["loss"] if not truth["diverged"] else float("inf")
    row = {"seed": seed, "safe": xp.get("safe", True), "p_div": xp.get("p_diverge"),
           "regret": loss / oracle["val_loss"] - 1,
           "nd": truth["loss_nd"] / oracle["val_loss"] - 1,
           "pen": [truth["pen_lr_batch"], truth["pen_warmup"], truth["pen_wd"]],
           "ratio": {k: rec[k] / oracle[ORACLE_KEY[k]] if oracle[ORACLE_KEY[k]] else float("nan")
                     for k in PARAMS},
           "pred": pred.get("objective"), "lo": pred.get("lo"), "hi": pred.get("hi"),
           "true": loss}
    return row


def work_options(argv, name):
    """(WORK, factor, llmsim path) from `name WORK [--factor F] [--llmsim PATH]`, or None after
    printing why (an unknown option, or one without its value)."""
    work, factor, sim = argv[1], 100, "build/bench/llmsim/llmsim"
    i = 2
    while i < len(argv):
        if argv[i] == "--factor" and i + 1 < len(argv):
            factor = int(float(argv[i + 1]))
        elif argv[i] == "--llmsim" and i + 1 < len(argv):
            sim = argv[i + 1]
        else:
            print(f"{name}: unknown option {argv[i]} (or no value)", file=sys.stderr)
            return None
        i += 2
    return work, factor, sim


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(argv) >= 2 else 2
    opts = work_options(argv, "xp_diagnose")
    if opts is None:
        return 2
    work, factor, sim = opts
    seeds = sorted(int(d[5:]) for d in os.listdir(work) if d.startswith("seed-"))
    print(f"factor {factor}x; ratios are recommended / oracle; pen = true penalty terms")
    print("seed  regret   safe p_div    N/D-split   N     D     lr    batch warmup wd    "
          "pen(lr-b, wu, wd)        pred/true  in")
    regrets = []
    for s in seeds:
        r = seed_row(work, s, factor, sim)
        if r is None or r.get("missing"):
            print(f"{s:4d}  (no recommendation)")
            continue
        q = r["ratio"]
        cov = r["lo"] is not None and r["lo"] <= r["true"] <= r["hi"]
        pdv = r["p_div"] if isinstance(r["p_div"], (int, float)) else float("nan")
        print(f"{s:4d}  {100 * r['regret']:6.2f}%  {'y' if r['safe'] else 'n'}    {pdv:7.1e}  "
              f"{100 * r['nd']:6.2f}%    "
              + " ".join(f"{q[k]:5.2f}" for k in PARAMS)
              + "  " + " ".join(f"{100 * p:5.2f}%" for p in r["pen"])
              + f"   {r['pred'] / r['true']:6.3f}    {'y' if cov else 'n'}")
        if r["safe"]:
            regrets.append(r["regret"])
    if regrets:
        below = sum(x < 0.01 for x in regrets)
        print(f"accepted {len(regrets)}: median {100 * statistics.median(regrets):.2f}%, "
              f"worst {100 * max(regrets):.2f}%, below 1%: {below}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
