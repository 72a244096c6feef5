"""optuna_peer.py -- which Optuna the Python benches (bench_ask_latency.py, bench_categorical.py)
measure against, and whether its GPSampler can run here.

By default the peer is whatever `import optuna` finds (Debian's python3-optuna 3.1 for
/usr/bin/python3: TPE and CMA-ES, no GPSampler, which Optuna added in 3.6). With
SCALETUNE_OPTUNA_PATH=DIR, DIR (a folder holding an extracted `optuna/` package and, for its
CMA-ES, a `cmaes/` new enough for it; docs/benchmarks.md section 10) is put first on sys.path,
so every Optuna sampler in the run, TPE and CMA-ES included, comes from that version.
GPSampler needs torch and scipy (Debian: `scripts/install-deps --torch --bench`); it runs on
one torch thread, as the others run on one BLAS thread.
"""
import os
import sys
import warnings


def load(bench):
    """Optuna's module, or None when it is not importable (the caller says so)."""
    path = os.environ.get("SCALETUNE_OPTUNA_PATH")
    if path:
        path = os.path.abspath(path)
        if not os.path.isdir(os.path.join(path, "optuna")):
            sys.exit("%s: SCALETUNE_OPTUNA_PATH=%s has no optuna/ package in it "
                     "(docs/benchmarks.md section 10 says how to extract one)" % (bench, path))
        sys.path.insert(0, path)
    try:
        import optuna
    except ImportError as e:
        if path:
            sys.exit("%s: Optuna from SCALETUNE_OPTUNA_PATH=%s does not import: %s"
                     % (bench, path, e))
        return None
    if path and not os.path.abspath(optuna.__file__).startswith(path + os.sep):
        sys.exit("%s: SCALETUNE_OPTUNA_PATH=%s, but optuna was imported from %s"
                 % (bench, path, optuna.__file__))
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
    return optuna


def describe(optuna):
    where = os.path.dirname(os.path.dirname(optuna.__file__))
    return "optuna %s (%s)" % (optuna.__version__, where)


def _probe(optuna, sampler):
    """Two asks on a 2-d study whose second is the sampler's own (n_startup_trials=1): an Optuna
    newer than the packages beside it imports and fails only there (Optuna 4.8 and later with
    torch 1.13; Optuna 3.6 and later's CMA-ES with cmaes 0.9)."""
    st = optuna.create_study(sampler=sampler)
    st.enqueue_trial({"x": 0.5, "y": 0.5})
    for _ in range(2):
        t = st.ask()
        x, y = t.suggest_float("x", 0, 1), t.suggest_float("y", 0, 1)
        st.tell(t, (x - 0.3) ** 2 + (y - 0.6) ** 2)


def cmaes_check(optuna):
    """None when CmaEsSampler can run here, else the line to print instead of its results."""
    try:
        import cmaes  # noqa: F401
        _probe(optuna, optuna.samplers.CmaEsSampler(seed=0, n_startup_trials=1))
    except Exception as e:  # noqa: BLE001 -- any failure means the peer cannot run here
        return "skipped: optuna %s's CmaEsSampler fails with cmaes %s: %s: %s" % (
            optuna.__version__, getattr(sys.modules.get("cmaes"), "__version__", "(none)"),
            type(e).__name__, e)
    return None


def gp_check(optuna):
    """None when GPSampler can run here, else the line to print instead of its results. Also
    warms it up (its first ask imports torch and scipy's optimisers)."""
    if not hasattr(optuna.samplers, "GPSampler"):
        return "skipped: optuna %s has no GPSampler (added in 3.6; SCALETUNE_OPTUNA_PATH, " \
               "docs/benchmarks.md section 10)" % optuna.__version__
    try:
        import scipy  # noqa: F401
        import torch
    except ImportError as e:
        return "skipped: optuna %s's GPSampler needs torch and scipy (%s; " \
               "scripts/install-deps --torch --bench)" % (optuna.__version__, e)
    torch.set_num_threads(1)
    try:
        _probe(optuna, optuna.samplers.GPSampler(seed=0, n_startup_trials=1))
    except Exception as e:  # noqa: BLE001 -- any failure means the peer cannot run here
        return "skipped: optuna %s's GPSampler fails with torch %s: %s: %s" % (
            optuna.__version__, torch.__version__, type(e).__name__, e)
    return None
