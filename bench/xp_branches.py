#!/usr/bin/env python3
"""Emulated cooldown branches on bench-extrapolate's stores: what finals at fewer tokens add.

usage: python3 bench/xp_branches.py SRC DST [--at F1,F2,...] [--independent] [--llmsim PATH]

Copies bench_extrapolate's --work directory SRC (default names N, tokens, lr, batch, warmup,
weight_decay) to DST and, for each succeeded run of each seed-K/sweep.db, adds one succeeded run
per fraction f (default 0.3,0.6): the final of a cooldown branch taken from the run's stable
phase at f of its tokens, emulated by llmsim at the run's setting and seed with tokens f D and
warmup w / f (the parent's warmup steps; at most 0.95). Each is stored as a controller would
store a branch (docs/metrics-protocol.md, "Cooldown branches"): the parent's parameter values,
a final record with "branch":1, "parent_run" (the parent's id), "tokens" f D and a cost of its
cooldown only (6 N x 0.2 f D), so `scaletune extrapolate` keeps it as a point of its parent.
With --independent each is stored instead as an ordinary run at tokens f D (warmup w / f) and
the cost of a run trained that far (6 N f D): an upper bound, every point counted as a run.
The stored extrapolations (seed-K/x*.json) are removed from DST, so that `bench_extrapolate
--reuse --work DST` extrapolates again. Writes only under DST; runs llmsim.
"""
import json
import os
import shutil
import sqlite3
import struct
import subprocess
import sys

NAMES = ["N", "tokens", "lr", "batch", "warmup", "weight_decay"]


def branch_final(sim, world, x, f, seed):
    """llmsim's final at fraction f of the run's tokens, or None (diverged, bad setting)."""
    N, D, lr, B, wu, wd = x
    if B > f * D:
        return None
    args = [sim, "--world", str(world), "--N", repr(N), "--tokens", repr(f * D), "--lr", repr(lr),
            "--batch", repr(B), "--warmup", repr(min(wu / f, 0.95)), "--weight-decay", repr(wd),
            "--seed", str(seed)]
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode != 0 or not out.stdout.strip():
        return None
    rec = json.loads(out.stdout.strip().splitlines()[-1])
    return rec.get("val_loss") if rec.get("event") == "final" else None


def branch_store(db_path, world, fracs, sim, independent):
    """Adds the branches to one store; returns (runs, branches)."""
    db = sqlite3.connect(db_path)
    names = [n for (n,) in db.execute("SELECT name FROM parameters ORDER BY idx")]
    if names != NAMES:
        db.close()
        raise SystemExit(f"xp_branches: {db_path}: parameters {names}, expected {NAMES}")
    rows = db.execute("SELECT id, sweep_id, x, created FROM runs WHERE status = 2").fetchall()
    added = 0
    for run_id, sweep_id, blob, created in rows:
        x = struct.unpack(f"{len(NAMES)}d", blob)
        N, D = x[0], x[1]
        for f in fracs:
            loss = branch_final(sim, world, x, f, run_id)
            if loss is None:
                continue
            final = {"event": "final", "val_loss": loss, "params": N, "tokens": f * D}
            if independent:
                xb, cost = (N, f * D, x[2], x[3], min(x[4] / f, 0.95), x[5]), 6 * N * f * D
            else:
                xb, cost = x, 6 * N * 0.2 * f * D
                final.update({"branch": 1, "parent_run": run_id})
            final["flops"] = cost
            db.execute("INSERT INTO runs(sweep_id, status, x, objective, cost, final, n_attempts,"
                       " created, ended) VALUES(?, 2, ?, ?, ?, ?, 1, ?, ?)",
                       (sweep_id, struct.pack(f"{len(NAMES)}d", *xb), loss, cost,
                        json.dumps(final), created, created))
            added += 1
    db.commit()
    db.close()
    return len(rows), added


def main(argv):
    if len(argv) < 3 or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(argv) >= 2 and argv[1] in ("-h", "--help") else 2
    src, dst, fracs, sim = argv[1], argv[2], [0.3, 0.6], "build/bench/llmsim/llmsim"
    independent = False
    i = 3
    while i < len(argv):
        if argv[i] == "--independent":
            independent = True
            i += 1
            continue
        if argv[i] == "--at" and i + 1 < len(argv):
            fracs = [float(v) for v in argv[i + 1].split(",")]
        elif argv[i] == "--llmsim" and i + 1 < len(argv):
            sim = argv[i + 1]
        else:
            print(f"xp_branches: unknown option {argv[i]}", file=sys.stderr)
            return 2
        i += 2
    if any(not 0 < f < 1 for f in fracs):
        print("xp_branches: --at takes fractions in (0, 1)", file=sys.stderr)
        return 2
    if os.path.exists(dst):
        print(f"xp_branches: {dst} exists; give a new directory", file=sys.stderr)
        return 2
    shutil.copytree(src, dst)
    for d in sorted((d for d in os.listdir(dst) if d.startswith("seed-")), key=lambda d: int(d[5:])):
        for name in os.listdir(os.path.join(dst, d)):
            if name.startswith("x") and name.endswith((".json", ".err")):
                os.remove(os.path.join(dst, d, name))
        n, added = branch_store(os.path.join(dst, d, "sweep.db"), int(d[5:]), fracs, sim,
                                  independent)
        print(f"{d}: {n} succeeded runs, {added} branches added", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
