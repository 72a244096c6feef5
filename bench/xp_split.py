#!/usr/bin/env python3
"""Whether bench-extrapolate's sweeps can place the N/D split, seed by seed.

usage: python3 bench/xp_split.py WORK [--factor F] [--llmsim PATH]

WORK is bench_extrapolate's --work directory (seed-K/sweep.db and seed-K/xF.json; the default
names N and tokens). For each seed it prints the world's true exponents alpha and beta of
L(N, D) = E + A N^-alpha + B D^-beta (from llmsim --true: the drop of the noise-free L(N, D)
over three decades of N at fixed D, and of D at fixed N), the engine's fitted ones (the
"model"/"chinchilla" block of xF.json), alpha - beta of both and the compute-optimal exponent
a = beta / (alpha + beta) of both; then the spread of the sweep's successful runs: the ratio of
the 95th to the 5th percentile of N and of D, and the correlation of ln N with ln D. Reads only;
runs llmsim.
"""
import json
import math
import os
import sqlite3
import statistics
import sys

from xp_diagnose import llmsim, work_options


def loss_nd(sim, world, N, D):
    rec = llmsim(sim, ["--world", str(world), "--N", repr(N), "--tokens", repr(D), "--lr", "1e-3",
                       "--batch", "3e4", "--true"])
    return rec["loss_nd"] if rec else None


def exponent(sim, world, vary_n):
    """-log10 of the ratio of successive drops of L over decades: the term's exponent."""
    pts = (1e7, 1e8, 1e9) if vary_n else (1e8, 1e9, 1e10)
    ls = [loss_nd(sim, world, p, 1e10) if vary_n else loss_nd(sim, world, 1e10, p) for p in pts]
    if None in ls or ls[0] <= ls[1] or ls[1] <= ls[2]:
        return float("nan")
    return -math.log10((ls[1] - ls[2]) / (ls[0] - ls[1]))


def spread(db_path):
    """(N span, D span, corr(ln N, ln D)) of the successful runs' final records, branches
    left out (NaN without a store)."""
    if not os.path.exists(db_path):
        return float("nan"), float("nan"), float("nan")
    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    lN, lD = [], []
    for (final,) in db.execute("SELECT final FROM runs WHERE status = 2 AND final IS NOT NULL"):
        rec = json.loads(final)
        if rec.get("branch") == 1:
            continue  # a cooldown branch (bench/xp_branches.py): not a run of the sweep
        n, d = rec.get("params") or rec.get("N"), rec.get("tokens")
        if isinstance(n, (int, float)) and isinstance(d, (int, float)) and n > 0 and d > 0:
            lN.append(math.log(n))
            lD.append(math.log(d))
    db.close()
    if len(lN) < 3:
        return float("nan"), float("nan"), float("nan")

    def span(v):
        v = sorted(v)
        return math.exp(v[int(0.95 * (len(v) - 1))] - v[int(0.05 * (len(v) - 1))])

    return span(lN), span(lD), statistics.correlation(lN, lD)


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(argv) >= 2 else 2
    opts = work_options(argv, "xp_split")
    if opts is None:
        return 2
    work, factor, sim = opts
    seeds = sorted(int(d[5:]) for d in os.listdir(work) if d.startswith("seed-"))
    print(f"factor {factor}x; a = beta / (alpha + beta); spans are 95th / 5th percentile")
    print("seed  true: alpha  beta  a-b     a     | fit: alpha  beta  a-b     a     | "
          "N span  D span  corr")
    errs = []
    for s in seeds:
        path = os.path.join(work, f"seed-{s}", f"x{factor}.json")
        if not os.path.exists(path):
            continue
        with open(path) as f:
            law = ((json.load(f).get("model") or {}).get("chinchilla")) or {}
        fa, fb = law.get("alpha"), law.get("beta")
        if not isinstance(fa, (int, float)) or not isinstance(fb, (int, float)):
            print(f"{s:4d}  (no fitted L(N, D))")
            continue
        ta, tb = exponent(sim, s, True), exponent(sim, s, False)
        sN, sD, c = spread(os.path.join(work, f"seed-{s}", "sweep.db"))
        errs.append((fa - fb) - (ta - tb))
        print(f"{s:4d}        {ta:5.3f} {tb:5.3f} {ta - tb:+6.3f} {tb / (ta + tb):5.3f} |"
              f"      {fa:5.3f} {fb:5.3f} {fa - fb:+6.3f} {fb / (fa + fb):5.3f} | "
              f"{sN:6.1f}  {sD:6.1f}  {c:+5.2f}")
    if errs:
        rms = math.sqrt(sum(e * e for e in errs) / len(errs))
        print(f"{len(errs)} seeds: fitted minus true alpha - beta, RMS {rms:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
