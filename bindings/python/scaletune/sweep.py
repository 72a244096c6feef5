"""sweep.py -- ask/tell against a sweep store (runner/runner.h), the same calls that
`scaletune sweep ask` and `scaletune sweep tell` make: a training script takes its settings
from a sweep recorded with `scaletune sweep create` and reports the outcome.
    s = scaletune.Sweep("s.db")          # the store's only sweep, or Sweep("s.db", "name")
    params, run_id = s.ask()             # every parameter, fixed ones included
    s.tell(run_id, objective=3.2, cost=1.5e12)     # or s.tell(run_id, failed=True)
Each call rebuilds the optimizer from the store, counters included: 60 asks give what one
optimizer kept alive in process gives. They are refused (ST_EBUSY) while a controller holds
the sweep.
"""

import json
import math
from ctypes import POINTER, byref, c_char_p, c_double, c_size_t, c_uint64, c_void_p

from . import _lib
from ._lib import check, enc, lib, text

RUN_STATUSES = ("pending", "running", "succeeded", "failed", "infra_failed", "stopped")


class Sweep:
    """One sweep in a SQLite store. `name` None means the store's only sweep."""

    def __init__(self, db, name=None):
        h = c_void_p()
        err = _lib.errbuf()
        check(lib.runner_store_open(enc(db), byref(h), err), err)
        self._h = h
        self.db = db
        self.name = name

    def close(self):
        h, self._h = getattr(self, "_h", None), None
        if h:
            lib.runner_store_close(h)

    __del__ = close

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _handle(self):
        if not self._h:
            raise _lib.ScaletuneError(_lib.ST_ESTATE, "the sweep store is closed")
        return self._h

    def _check(self, status):
        check(status, lambda: lib.runner_store_errmsg(self._h))

    @staticmethod
    def list(db):
        """Names of the sweeps in the store at `db`, oldest first."""
        with Sweep(db) as s:
            names = c_char_p()
            s._check(lib.runner_store_list(s._h, byref(names)))
            return [n for n in text(names.value).split("\n") if n]

    def param_names(self):
        """All parameter names (fixed ones included), in file order."""
        n = c_size_t()
        names = POINTER(c_char_p)()
        self._check(lib.runner_store_params(self._handle(), enc(self.name), byref(n), byref(names)))
        return [text(names[i]) for i in range(n.value)]

    def ask(self):
        """Asks for one run: (params dict, suggestion id). The run is recorded as running."""
        names = self.param_names()
        x = (c_double * max(1, len(names)))()
        sid = c_uint64()
        self._check(lib.runner_store_ask(self._h, enc(self.name), byref(sid), x, len(names)))
        out = {}
        for k, v in zip(names, x):
            out[k] = int(v) if float(v).is_integer() and abs(v) < 2**53 else v
        return out, sid.value

    def tell(self, run_id, objective=None, cost=None, failed=False):
        """Records the outcome of an asked run: objective and cost (> 0), or failed=True."""
        if not failed and (objective is None or cost is None):
            raise _lib.ScaletuneError(
                _lib.ST_EINVAL, "tell needs objective and cost, or failed=True"
            )
        obj = math.nan if objective is None else float(objective)
        c = math.nan if cost is None else float(cost)
        self._check(
            lib.runner_store_tell(self._handle(), enc(self.name), int(run_id), obj, c, 1 if failed else 0)
        )

    def status(self):
        """Runs by status, attempts, best run, spend and budget, as a dict."""
        st = _lib.RunnerStatus()
        self._check(lib.runner_store_status(self._handle(), enc(self.name), byref(st)))
        out = {k: getattr(st, k) for k, _ in st._fields_}
        out["name"] = text(st.name)
        out["controller"] = text(st.controller)
        out["n_by_status"] = dict(zip(RUN_STATUSES, list(st.n_by_status)))
        for k in ("maximize", "has_best", "controller_alive", "stop_requested"):
            out[k] = bool(out[k])
        return out

    def pareto(self):
        """Pareto front of succeeded runs: list of dicts run_id, cost, objective."""
        h = self._handle()
        n = c_size_t()
        self._check(lib.runner_store_pareto(h, enc(self.name), 0, byref(n), None, None, None))
        cap = n.value
        if cap == 0:
            return []
        ids, c, o = (c_uint64 * cap)(), (c_double * cap)(), (c_double * cap)()
        self._check(lib.runner_store_pareto(h, enc(self.name), cap, byref(n), ids, c, o))
        return [{"run_id": ids[i], "cost": c[i], "objective": o[i]} for i in range(n.value)]

    def export(self):
        """Every run, as `scaletune sweep export --json` writes it (a parsed dict)."""
        p = c_void_p()
        self._check(lib.runner_store_export_json(self._handle(), enc(self.name), byref(p)))
        try:
            s = text(c_char_p(p.value).value)
        finally:
            lib.st_free(p)
        return json.loads(s)

    def extrapolate(self, compute=None, factor=None, bootstrap=200):
        """The settings of a large run at `compute` (cost units) or `factor` x the largest run
        (default 10x), as `scaletune extrapolate --json` prints them (a parsed dict). A
        recommendation the engine cannot vouch for comes back with "safe": False and its
        "unsafe_reason"; check it before launching the run."""
        p = c_void_p()
        err = _lib.errbuf()
        c = float("nan") if compute is None else float(compute)
        f = float("nan") if factor is None else float(factor)
        check(lib.study_extrapolate_json(enc(self.db), enc(self.name), c, f, int(bootstrap),
                                         byref(p), err), err)
        try:
            s = text(c_char_p(p.value).value)
        finally:
            lib.st_free(p)
        return json.loads(s)

    def request_stop(self):
        """Asks the controller that owns the sweep to stop gracefully."""
        self._check(lib.runner_store_request_stop(self._handle(), enc(self.name)))
