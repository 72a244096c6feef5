"""bench_ask_latency.py -- issue 22: how long one suggestion takes, scaletune's Optimizer.suggest
against Optuna's ask (TPE, CMA-ES) after n trials of the same 4-d quadratic have been told,
measured in the same run (median of 5 asks, one thread), in wall-clock time and in the calling
thread's CPU time (time.thread_time: on a loaded machine the wall times of a few milliseconds
mostly measure the scheduler). Needs Debian's python3-optuna
(`scripts/install-deps --bench`, for /usr/bin/python3). Run from the repository root after make:
  PYTHONPATH=bindings/python OPENBLAS_NUM_THREADS=1 /usr/bin/python3 bench/bench_ask_latency.py [N]
(N, default 1000, is the second history length; the first is 30). --gp-max-points=M passes
option gp_max_points to scaletune (0: a full GP over every run).
"""
import random
import statistics
import sys
import time

from scaletune import Optimizer, Param, Space

try:
    import optuna
except ImportError:
    sys.exit("bench_ask_latency: Optuna is not importable by %s (the peer this bench measures "
             "against): scripts/install-deps --bench, then run it with /usr/bin/python3"
             % sys.executable)
optuna.logging.set_verbosity(optuna.logging.ERROR)
SC_OPTS = {a[2:].split("=")[0].replace("-", "_"): int(a.split("=")[1]) for a in sys.argv[1:] if a.startswith("--gp-max-points=")}
ARGS = [a for a in sys.argv[1:] if not a.startswith("--")]

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

def op_lat(n, sampler, reps=5, d=4):
    st = optuna.create_study(sampler=sampler)
    for i in range(n):
        t = st.ask(); st.tell(t, f([t.suggest_float("x%d" % j, 0, 1) for j in range(d)]))
    ts, cs = [], []
    for _ in range(reps):
        c0 = time.thread_time(); t0 = time.perf_counter(); t = st.ask(); x = [t.suggest_float("x%d" % j, 0, 1) for j in range(d)]
        ts.append(time.perf_counter() - t0); cs.append(time.thread_time() - c0)
        st.tell(t, f(x))
    return statistics.median(ts), statistics.median(cs)

for n in (30, int(ARGS[0]) if ARGS else 1000):
    t0 = time.perf_counter(); s, s_cpu = sc_lat(n); w0 = time.perf_counter() - t0
    tpe, tpe_cpu = op_lat(n, optuna.samplers.TPESampler(seed=1))
    cma, cma_cpu = op_lat(n, optuna.samplers.CmaEsSampler(seed=1))
    print("n=%d  scaletune suggest %.4f s  optuna TPE ask %.4f s  CMA-ES ask %.4f s  scaletune / TPE %.2f  (filling the history took %.0f s)" % (n, s, tpe, cma, s / tpe, w0))
    print("n=%d  CPU time: scaletune %.4f s  TPE %.4f s  CMA-ES %.4f s  scaletune / TPE %.2f" % (n, s_cpu, tpe_cpu, cma_cpu, s_cpu / tpe_cpu))
    print("BENCH ask_latency.vs_tpe n=%d %.3f" % (n, s / tpe))
    print("BENCH ask_latency.vs_tpe_cpu n=%d %.3f" % (n, s_cpu / tpe_cpu))
