#!/usr/bin/python3
"""fit_scipy_peer.py: the Python peer of `make bench-fit`.

It does the grid fit of Epoch's Chinchilla refit the way Epoch's notebook does it
(Besiroglu et al. 2024, epoch-research/analyzing-chinchilla): the summed Huber loss
(delta = 1e-3) of ln L against the log-sum-exp of (a - alpha ln N, b - beta ln D, e),
and scipy.optimize.minimize(method='L-BFGS-B') from each start of Hoffmann's
6x6x5x5x5 grid, keeping the best result that reports success. Like the notebook it
passes no gradient, so scipy estimates one by finite differences; --jac passes the
analytic gradient instead (a stricter peer, reported separately).

Run it with Debian's interpreter (/usr/bin/python3, scipy 1.10 and numpy 1.24), on one
thread (the BLAS thread variables are set below before numpy loads). The full grid
takes minutes in Python, so by default it times every --stride'th start (a fixed,
deterministic subset; a stride coprime to 2, 3 and 5 visits every value of every
parameter) and reports the time per start. Output: `PEER <key> <value>` lines read
by bench/bench_fit.c, and a SKIP line with exit status 2 when scipy is missing.

Usage: fit_scipy_peer.py [--csv FILE] [--stride K] [--jac | --fd] [--repeat R]
"""
import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "1"

import argparse  # noqa: E402
import csv  # noqa: E402
import itertools  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

try:
    import numpy as np
    import scipy
    from scipy.optimize import minimize
    from scipy.special import huber
except ImportError as e:  # the bench skips the peer with this message
    print(f"SKIP fit_scipy_peer: {sys.executable} cannot import numpy/scipy ({e})")
    sys.exit(2)

DELTA = 1e-3
# Hoffmann et al. 2022 §D.2 grid, in the order of fit/law.c (beta varies fastest)
GRID = (
    [0.0, 5.0, 10.0, 15.0, 20.0, 25.0],  # a
    [0.0, 5.0, 10.0, 15.0, 20.0, 25.0],  # b
    [-1.0, -0.5, 0.0, 0.5, 1.0],  # e
    [0.0, 0.5, 1.0, 1.5, 2.0],  # alpha
    [0.0, 0.5, 1.0, 1.5, 2.0],  # beta
)


def load(path):
    """N, D = C / (6 N) and loss, minus the 5 highest losses (Epoch's rule: keep loss <
    the 5th largest), as fit_table_exclude_top_loss(t, 5) does."""
    n, c, loss = [], [], []
    with open(path, newline="") as fh:
        for row in csv.DictReader(fh):
            n.append(float(row["Model Size"]))
            c.append(float(row["Training FLOP"]))
            loss.append(float(row["loss"]))
    n, c, loss = np.array(n), np.array(c), np.array(loss)
    keep = loss < np.sort(loss)[-5]
    n, c, loss = n[keep], c[keep], loss[keep]
    return n, c / (6.0 * n), loss


def make_objective(n, d, loss):
    ln_n, ln_d, ln_l = np.log(n), np.log(d), np.log(loss)

    def f(th):
        a, b, e, alpha, beta = th
        # Epoch's form: ln of the sum of the three exponentials
        pred = np.log(np.exp(a - alpha * ln_n) + np.exp(b - beta * ln_d) + np.exp(e))
        return np.sum(huber(DELTA, pred - ln_l))

    def fg(th):
        a, b, e, alpha, beta = th
        t = np.stack((a - alpha * ln_n, b - beta * ln_d, np.full_like(ln_n, e)))
        m = t.max(axis=0)
        w = np.exp(t - m)
        s = w.sum(axis=0)
        r = m + np.log(s) - ln_l
        c = np.clip(r, -DELTA, DELTA)  # Huber'(r)
        p = w / s  # softmax weights: d pred / d (a, b, e)
        ga, gb, ge = (p * c).sum(axis=1)
        g = np.array([ga, gb, ge, -(p[0] * c * ln_n).sum(), -(p[1] * c * ln_d).sum()])
        return np.sum(huber(DELTA, r)), g

    return f, fg


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--csv", default="tests/data/scaling/chinchilla_svg_extracted_data.csv")
    ap.add_argument("--stride", type=int, default=13)
    ap.add_argument("--jac", action="store_true")
    ap.add_argument("--fd", action="store_true", help="the default: no gradient passed, scipy differences (as Epoch)")
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    np.seterr(over="ignore", invalid="ignore")  # as Epoch's notebook: starts that overflow fail
    if args.stride < 1:
        ap.error("--stride must be >= 1")
    n, d, loss = load(args.csv)
    f, fg = make_objective(n, d, loss)
    starts = [list(s) for s in itertools.product(*GRID)]
    sub = starts[:: args.stride]

    best_t, best_cpu, best = float("inf"), float("inf"), None
    n_fev = 0
    for _ in range(args.repeat):  # best of R, the machine is shared
        t0, c0 = time.perf_counter(), time.process_time()
        run_best, run_fev = None, 0
        for s in sub:
            if args.jac:
                res = minimize(fg, s, jac=True, method="L-BFGS-B")
            else:
                res = minimize(f, s, method="L-BFGS-B")
            run_fev += res.nfev
            if res.success and (run_best is None or res.fun < run_best.fun):
                run_best = res
        dt, dc = time.perf_counter() - t0, time.process_time() - c0
        if dc < best_cpu:
            best_t, best_cpu, best, n_fev = dt, dc, run_best, run_fev

    print(f"PEER scipy {scipy.__version__} numpy {np.__version__} python {sys.version.split()[0]}")
    print(f"PEER gradient {'analytic' if args.jac else 'finite-difference (as Epoch)'}")
    print(f"PEER points {len(loss)}")
    print(f"PEER starts {len(sub)} of {len(starts)} (every {args.stride}th, scaled per start)")
    print(f"PEER evals {n_fev}")
    print(f"PEER total_s {best_t:.4f} wall, {best_cpu:.4f} cpu")
    print(f"PEER per_start_s {best_t / len(sub):.6e}")
    print(f"PEER cpu_per_start_s {best_cpu / len(sub):.6e}")
    if best is None:
        print("PEER optimum none (no start reported success)")
        return 1
    a, b, e, alpha, beta = best.x
    print(
        f"PEER optimum {best.fun:.10g} A {np.exp(a):.6g} B {np.exp(b):.6g} E {np.exp(e):.6g} "
        f"alpha {alpha:.6g} beta {beta:.6g}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
