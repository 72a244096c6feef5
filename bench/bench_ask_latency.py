"""bench_ask_latency.py -- issue 22: how long one suggestion takes, scaletune's Optimizer.suggest
against Optuna's ask (TPE, GP, CMA-ES) after n trials of the same 4-d quadratic have been told,
measured in the same run (median of 5 asks, one thread), in wall-clock time and in the calling
thread's CPU time (time.thread_time: on a loaded machine the wall times of a few milliseconds
mostly measure the scheduler). Needs an Optuna: Debian's python3-optuna 3.1
(`scripts/install-deps --bench`, for /usr/bin/python3) has TPE and CMA-ES only; with
SCALETUNE_OPTUNA_PATH=DIR an extracted newer Optuna (3.6 to 4.7 with Debian's torch 1.13;
docs/benchmarks.md section 10) is used for all three and its GPSampler runs too (torch and scipy:
`scripts/install-deps --torch --bench`). Without a usable GPSampler the GP column says why it was
skipped. Run from the repository root after make:
  [SCALETUNE_OPTUNA_PATH=DIR] PYTHONPATH=bindings/python OPENBLAS_NUM_THREADS=1 \
    /usr/bin/python3 bench/bench_ask_latency.py [--gp-max-points=M] [N]
(N, default 1000, is the second history length; the first is 30. --gp-max-points=M passes
option gp_max_points to scaletune, 0: a full GP over every run). TPE, CMA-ES and scaletune
fill their histories with their own suggestions; GP is told TPE's n trials instead (filling
1000 trials with GP asks would take about half an hour of CPU time here), so its timed asks
see n trials of the same problem.
"""
import random
import statistics
import sys
import time

from scaletune import Optimizer, Param, Space

import optuna_peer

optuna = optuna_peer.load("bench_ask_latency")
if optuna is None:
    sys.exit("bench_ask_latency: Optuna is not importable by %s (the peer this bench measures "
             "against): scripts/install-deps --bench, then run it with /usr/bin/python3"
             % sys.executable)
SC_OPTS = {a[2:].split("=")[0].replace("-", "_"): int(a.split("=")[1]) for a in sys.argv[1:] if a.startswith("--gp-max-points=")}
ARGS = [a for a in sys.argv[1:] if not a.startswith("--")]
gp_skip, cma_skip = optuna_peer.gp_check(optuna), optuna_peer.cmaes_check(optuna)
print("peer: %s; GPSampler: %s; CmaEsSampler: %s"
      % (optuna_peer.describe(optuna), gp_skip or "runs", cma_skip or "runs"))


def f(x):  # 4-d, cheap
    return sum((v - 0.3) ** 2 for v in x)


def sc_lat(n, reps=5, d=4):
    o = Optimizer(Space([Param("x%d" % i, "linear", center=0.5, min=0, max=1) for i in range(d)]), seed=1, **SC_OPTS)
    r = random.Random(1)
    for i in range(n):
        p, sid = o.suggest()
        o.observe(sid, f([p["x%d" % j] for j in range(d)]), 1.0 + r.random())
    ts, cs = [], []
    for _ in range(reps):
        c0 = time.thread_time(); t0 = time.perf_counter(); p, sid = o.suggest()
        ts.append(time.perf_counter() - t0); cs.append(time.thread_time() - c0)
        o.observe(sid, f([p["x%d" % j] for j in range(d)]), 1.0)
    return statistics.median(ts), statistics.median(cs)


def op_lat(n, sampler, reps=5, d=4, history=None):
    """Median wall and CPU time of `reps` asks after n told trials: the sampler's own asks, or
    `history` (trials of another study) when given. Returns them and the first n trials."""
    st = optuna.create_study(sampler=sampler)
    if history is None:
        for i in range(n):
            t = st.ask(); st.tell(t, f([t.suggest_float("x%d" % j, 0, 1) for j in range(d)]))
    else:
        st.add_trials(history)
    told = st.get_trials(deepcopy=False)[:n]
    ts, cs = [], []
    for _ in range(reps):
        c0 = time.thread_time(); t0 = time.perf_counter(); t = st.ask(); x = [t.suggest_float("x%d" % j, 0, 1) for j in range(d)]
        ts.append(time.perf_counter() - t0); cs.append(time.thread_time() - c0)
        st.tell(t, f(x))
    return statistics.median(ts), statistics.median(cs), told


for n in (30, int(ARGS[0]) if ARGS else 1000):
    t0 = time.perf_counter(); s, s_cpu = sc_lat(n); w0 = time.perf_counter() - t0
    tpe, tpe_cpu, told = op_lat(n, optuna.samplers.TPESampler(seed=1))
    if cma_skip is None:
        cma, cma_cpu, _ = op_lat(n, optuna.samplers.CmaEsSampler(seed=1))
        cma_w, cma_c = "CMA-ES ask %.4f s" % cma, "CMA-ES %.4f s" % cma_cpu
    else:
        cma_w = cma_c = "CMA-ES skipped"
    if gp_skip is None:
        gp, gp_cpu, _ = op_lat(n, optuna.samplers.GPSampler(seed=1), history=told)
        gp_w, gp_c = "GP ask %.4f s  " % gp, "GP %.4f s  " % gp_cpu
        gp_rw, gp_rc = "  scaletune / GP %.2f" % (s / gp), "  scaletune / GP %.2f" % (s_cpu / gp_cpu)
    else:
        gp_w = gp_c = "GP skipped  "
        gp_rw = gp_rc = ""
    print("n=%d  scaletune suggest %.4f s  optuna TPE ask %.4f s  %s%s  scaletune / TPE %.2f%s  (filling the history took %.0f s)" % (n, s, tpe, gp_w, cma_w, s / tpe, gp_rw, w0))
    print("n=%d  CPU time: scaletune %.4f s  TPE %.4f s  %s%s  scaletune / TPE %.2f%s" % (n, s_cpu, tpe_cpu, gp_c, cma_c, s_cpu / tpe_cpu, gp_rc))
    print("BENCH ask_latency.vs_tpe n=%d %.3f" % (n, s / tpe))
    print("BENCH ask_latency.vs_tpe_cpu n=%d %.3f" % (n, s_cpu / tpe_cpu))
    if gp_skip is None:
        print("BENCH ask_latency.vs_gp n=%d %.3f" % (n, s / gp))
        print("BENCH ask_latency.vs_gp_cpu n=%d %.3f" % (n, s_cpu / gp_cpu))
    sys.stdout.flush()
