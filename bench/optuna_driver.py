#!/usr/bin/env python3
"""optuna_driver.py — Optuna's TPE and CMA-ES samplers on bench/compare.c's problems.

The problems are not reimplemented here: the driver starts `compare --serve PROBLEM`, reads the
search space from its first line, and sends it one line per trial ("noise_seed x1 ... xd"), so the
simulator and the test functions are the very same C code the other optimizers see. Budget rules
and noise seeds match compare.c: stop at max-evals runs or when the summed cost reaches
budget-units x the problem's unit cost; run i of seed s gets noise seed (s + 1) * 1000003 + i.
Prints one JSON line per trial. Needs Debian's python3-optuna (3.1); nothing else.
"""
import argparse
import json
import math
import shlex
import subprocess
import sys
import time
import warnings


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problem", required=True)
    ap.add_argument("--sampler", choices=["tpe", "cmaes"], required=True)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--max-evals", type=int, default=100)
    ap.add_argument("--budget-units", type=float, default=10.0)
    ap.add_argument("--evaluator", required=True,
                    help="command that serves evaluations, e.g. 'build/bench/compare --serve sim'")
    args = ap.parse_args()

    import optuna
    from optuna.trial import TrialState

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    warnings.filterwarnings("ignore")

    ev = subprocess.Popen(shlex.split(args.evaluator), stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True, bufsize=1)
    desc = json.loads(ev.stdout.readline())
    params = desc["params"]
    budget = args.budget_units * desc["unit_cost"]

    def evaluate(seed, i, x):
        ns = (seed + 1) * 1000003 + i
        ev.stdin.write("%d %s\n" % (ns, " ".join(repr(float(v)) for v in x)))
        ev.stdin.flush()
        f = ev.stdout.readline().split()
        if len(f) != 4:
            raise RuntimeError("evaluator said: %r" % " ".join(f))
        return float(f[0]), float(f[1]), float(f[2]), int(f[3])

    def num(v):
        return v if math.isfinite(v) else None

    for seed in range(args.seeds):
        if args.sampler == "tpe":
            sampler = optuna.samplers.TPESampler(seed=seed)
        else:
            sampler = optuna.samplers.CmaEsSampler(seed=seed)
        study = optuna.create_study(direction="minimize", sampler=sampler)
        spent, i, t0 = 0.0, 0, time.perf_counter()
        while i < args.max_evals and spent < budget:
            trial = study.ask()
            x = [trial.suggest_float(p["name"], p["min"], p["max"], log=bool(p["log"]))
                 for p in params]
            obs, truth, cost, failed = evaluate(seed, i, x)
            if failed or not math.isfinite(obs):
                # A diverged run is pruned, as a training script using Optuna would do: TPE
                # ranks pruned trials below every completed one (a FAIL would be ignored and
                # TPE would keep sampling the divergent region). CMA-ES skips it.
                trial.report(1e9, 0)
                study.tell(trial, state=TrialState.PRUNED)
            else:
                study.tell(trial, obs)
            spent += cost
            print(json.dumps({"seed": seed, "i": i, "x": x, "obs": num(obs), "truth": num(truth),
                              "cost": cost, "failed": failed,
                              "wall_s": time.perf_counter() - t0}))
            i += 1
        sys.stdout.flush()
        print("[optuna %s %s] seed %d: %d trials, %.1fs" %
              (args.problem, args.sampler, seed, i, time.perf_counter() - t0), file=sys.stderr)
    ev.stdin.close()
    ev.wait()


if __name__ == "__main__":
    main()
