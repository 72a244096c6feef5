"""sweep.py -- ask/tell against a sweep store (runner/runner.h), the same calls that
`scaletune sweep ask` and `scaletune sweep tell` make, and the rest of the pipeline from Python:
    s = scaletune.Sweep.create("s.db", "mlp", space, objective="val_loss", cost="flops",
                               budget_runs=30, seed=1)     # or a sweep from `sweep create`
    params, run_id = s.ask(ttl=600)      # every parameter, fixed ones included
    s.tell(run_id, objective=3.2, cost=1.5e12, params=N, tokens=D)   # or failed=True
    s.optimize(train, 30)                # ask, train(params), tell; exceptions are failures
    s.best, s.best_params, s.trials      # the best run, its parameters, every run
    s.recommend(factor=10)               # the extrapolation engine (study_extrapolate_json)
    s.report("report.html")              # report/ (html, json, csv or md by the extension)
Each call rebuilds the optimizer from the store, counters included: 60 asks give what one
optimizer kept alive in process gives. They are refused (ST_EBUSY) while a controller holds
the sweep.
"""

import json
import math
import os
from ctypes import POINTER, byref, c_char_p, c_double, c_size_t, c_uint64, c_void_p, cast

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
        # a study-mode sweep's asks come from study/'s proposer, as in the CLI's `sweep ask`
        lib.runner_store_set_proposer(h, cast(lib.study_proposer, c_void_p), None)
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

    def ask(self, ttl=None):
        """Asks for one run: (params dict, run id). The run is recorded as running; with `ttl`
        (seconds) it expires if no tell comes in time (a worker killed), and the next ask
        hands the same run out again instead of a new suggestion (expired() lists them)."""
        names = self.param_names()
        x = (c_double * max(1, len(names)))()
        sid = c_uint64()
        t = 0.0 if ttl is None else float(ttl)
        self._check(lib.runner_store_ask_ttl(self._h, enc(self.name), t, byref(sid), x, len(names)))
        return self._values(names, x), sid.value

    def _values(self, names, x):
        """x (all parameters) as a dict: numbers, a categorical's choice string, None where a
        conditional parameter is inactive."""
        p = c_void_p()
        self._check(lib.runner_store_format_params(self._handle(), enc(self.name), x, byref(p)))
        try:
            lines = text(c_char_p(p.value).value).split("\n")
        finally:
            lib.st_free(p)
        out = {}
        for k, v, line in zip(names, x, lines):
            t = line.split("=", 1)[1] if "=" in line else ""
            if math.isnan(v) and t == "":
                out[k] = None
            elif not _is_number(t):
                out[k] = t  # a choice (or a fixed parameter's text)
            else:
                out[k] = int(v) if float(v).is_integer() and abs(v) < 2**53 else v
        return out

    def _vector(self, values, names):
        """A dict by name (choices as strings, None where inactive) -> all parameters' x; a
        parameter left out takes its centre (fixed: its value; inactive: NaN)."""
        ks = [enc(str(k)) for k in values]
        vs = [enc(_text(v)) for v in values.values()]
        x = (c_double * max(1, len(names)))()
        self._check(lib.runner_store_parse_params(
            self._handle(), enc(self.name), len(ks), (c_char_p * max(1, len(ks)))(*ks),
            (c_char_p * max(1, len(vs)))(*vs), x, len(names)))
        return x

    def enqueue(self, params):
        """Enqueues a known configuration (a baseline, a colleague's settings): a dict by
        name; parameters left out take their centre, None an inactive conditional one, a
        categorical its choice string. The next ask hands it out (or a resumed controller
        launches it) before any new suggestion; its result is observed like any other run's.
        Returns its run id."""
        ks = [enc(str(k)) for k in params]
        vs = [enc(_text(v)) for v in params.values()]
        rid = c_uint64()
        self._check(lib.runner_store_enqueue_text(
            self._handle(), enc(self.name), len(ks), (c_char_p * max(1, len(ks)))(*ks),
            (c_char_p * max(1, len(vs)))(*vs), byref(rid)))
        return rid.value

    def expired(self):
        """Ids of the asked runs whose ttl has passed without a tell, oldest first."""
        n = c_size_t()
        self._check(lib.runner_store_expired(self._handle(), enc(self.name), 0, byref(n), None))
        cap = n.value
        ids = (c_uint64 * max(1, cap))()
        self._check(lib.runner_store_expired(self._h, enc(self.name), cap, byref(n), ids))
        return [ids[i] for i in range(min(cap, n.value))]

    def tell(self, run_id, objective=None, cost=None, failed=False, params=None, tokens=None,
             **final_fields):
        """Records the outcome of an asked run: objective and cost (> 0), or failed=True (an
        objective of None, NaN or infinity is refused unless failed=True: say which it was).
        params=N and tokens=D (and any other numeric final_fields) are kept as the run's final
        record, as a trainer's {"event":"final",...} line is, so that the extrapolation engine
        sees the model size and tokens of the run."""
        obj = _number("objective", objective)
        c = _number("cost", cost)
        if not failed and (objective is None or cost is None):
            raise _lib.ScaletuneError(
                _lib.ST_EINVAL,
                "tell %s: a success needs objective and cost (got objective=%r, cost=%r); "
                "a failed run: failed=True" % (run_id, objective, cost),
            )
        if not failed and not math.isfinite(obj):
            raise _lib.ScaletuneError(
                _lib.ST_EINVAL,
                "tell %s: objective %r is not finite; if the run diverged, tell it with "
                "failed=True (its cost may be given too)" % (run_id, objective),
            )
        final = _final_line(params, tokens, final_fields)
        self._check(lib.runner_store_tell_final(self._handle(), enc(self.name), int(run_id), obj,
                                                c, 1 if failed else 0, final))

    def record(self, values, objective=None, cost=None, failed=False, params=None, tokens=None,
               **final_fields):
        """Records a finished run that was not asked: `values` all parameters by name (fixed
        ones as fixed, searched ones inside their bounds, a categorical's choice string,
        None where a conditional one is inactive); the rest as tell. Returns its run
        id."""
        names = self.param_names()
        missing = [n for n in names if n not in values]
        if missing:
            raise _lib.ScaletuneError(_lib.ST_EINVAL, "record: parameters missing: %s" % missing)
        if any(v is None or isinstance(v, str) for v in values.values()):
            x = self._vector({n: values[n] for n in names}, names)  # choices, None
        else:
            x = (c_double * max(1, len(names)))(*[float(values[n]) for n in names])
        obj, c = _number("objective", objective), _number("cost", cost)
        rid = c_uint64()
        final = _final_line(params, tokens, final_fields)
        self._check(lib.runner_store_record(self._handle(), enc(self.name), x, obj, c,
                                            1 if failed else 0, final, byref(rid)))
        return rid.value

    def status(self):
        """Runs by status, attempts, best run, spend and budget, as a dict."""
        st = _lib.RunnerStatus()
        self._check(lib.runner_store_status(self._handle(), enc(self.name), byref(st)))
        out = {k: getattr(st, k) for k, _ in st._fields_}
        out["name"] = text(st.name)
        out["controller"] = text(st.controller)
        out["bad_final"] = text(st.bad_final)
        out["n_by_status"] = dict(zip(RUN_STATUSES, list(st.n_by_status)))
        out["n_branch_by_status"] = dict(zip(RUN_STATUSES, list(st.n_branch_by_status)))
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

    def recommend(self, compute=None, factor=None, bootstrap=200):
        """The engine's recommendation for a large run at `compute` (cost units) or `factor` x
        the largest run (exactly one; neither: 10x), as extrapolate() returns it. Check
        result["safe"] (and "unsafe_reason") before launching the run."""
        if compute is not None and factor is not None:
            raise _lib.ScaletuneError(_lib.ST_EINVAL, "recommend: give compute or factor, not both")
        return self.extrapolate(compute=compute, factor=factor, bootstrap=bootstrap)

    def report(self, path):
        """Writes the sweep's report (report/report.h) to `path`: HTML, JSON, CSV or Markdown
        by its extension (.html, .json, .csv, .md). Returns the path."""
        kinds = {".html": "html", ".htm": "html", ".json": "json", ".csv": "csv", ".md": "md"}
        ext = os.path.splitext(str(path))[1].lower()
        if ext not in kinds:
            raise _lib.ScaletuneError(
                _lib.ST_EINVAL, "report: %r: the extension must be one of %s" % (path, sorted(kinds))
            )
        h = c_void_p()
        err = _lib.errbuf()
        check(lib.report_create(enc(self.db), enc(self.name), None, byref(h), err), err)
        try:
            write = getattr(lib, "report_write_" + kinds[ext])
            check(write(h, enc(str(path))), lambda: lib.report_errmsg(h))
        finally:
            lib.report_destroy(h)
        return path

    @property
    def trials(self):
        """Every run, oldest first: dicts with run_id, status, params (all, by name),
        objective and cost (None where there is none)."""
        names = self.param_names()
        out = []
        for r in self.export().get("runs", []):
            p = r.get("params") or {k: r.get(k) for k in names}
            out.append({"run_id": r.get("suggestion_id"), "status": r.get("status"), "params": p,
                        "objective": r.get("objective"), "cost": r.get("cost")})
        return out

    @property
    def best(self):
        """The best succeeded run (a trials row, by the sweep's goal), or None."""
        ok = [t for t in self.trials if t["status"] == "succeeded" and t["objective"] is not None]
        if not ok:
            return None
        sign = -1.0 if self.status()["maximize"] else 1.0
        return min(ok, key=lambda t: (sign * t["objective"], t["run_id"]))

    @property
    def best_params(self):
        """The parameters of the best run, or None."""
        b = self.best
        return None if b is None else b["params"]

    def optimize(self, fn, n_trials, ttl=None, catch=(Exception,)):
        """Asks, calls fn(params) and tells, n_trials times. fn returns (objective, cost), or
        a dict with objective, cost and optionally params (N), tokens (D) and more final
        fields, or None / NaN for a failed run; an exception of a type in `catch` is recorded
        as a failure and the loop goes on. Returns the best run (self.best)."""
        for _ in range(int(n_trials)):
            params, rid = self.ask(ttl=ttl)
            try:
                res = fn(params)
            except catch:
                self.tell(rid, failed=True)
                continue
            if isinstance(res, dict):
                res = dict(res)
                obj, cost = res.pop("objective", None), res.pop("cost", None)
                extra = res
            elif res is None:
                obj, cost, extra = None, None, {}
            else:
                obj, cost = res
                extra = {}
            bad = obj is None or not math.isfinite(float(obj))
            self.tell(rid, None if bad else obj, cost, failed=bad, **extra)
        return self.best

    @classmethod
    def create(cls, db, name, space, objective="objective", cost="cost", goal="minimize",
               budget_runs=None, budget_cost=None, seed=0, fixed=None, method=None, **options):
        """Records a new ask/tell sweep (no command) in the store at `db` (created if there
        is none) and opens it: `space` a Space (or a list of Params), `fixed` a dict of fixed
        parameters, `method` "carbs" (default), "grid", "random" or "study", keyword
        arguments the carbs options by name. Without a budget, the runs are not limited."""
        from .optimizer import Space

        if not isinstance(space, Space):
            space = Space(space)
        err = _lib.errbuf()
        yaml = _sweep_yaml(name, space, objective, cost, goal, budget_runs, budget_cost, seed,
                           fixed or {}, options)
        if method is not None:
            yaml += "method: %s\n" % json.dumps(str(method))
        check(lib.runner_store_create_sweep(enc(db), enc(yaml), err), err)
        return cls(db, name)

    def request_stop(self):
        """Asks the controller that owns the sweep to stop gracefully."""
        self._check(lib.runner_store_request_stop(self._handle(), enc(self.name)))


def _is_number(t):
    try:
        float(t)
        return t.strip() != ""
    except ValueError:
        return False


def _text(v):
    """A parameter value as the store's text route takes it."""
    return "none" if v is None else v if isinstance(v, str) else repr(float(v))


def _number(what, v):
    """None -> NaN; numbers as float; anything else refused with the field's name."""
    if v is None:
        return math.nan
    try:
        return float(v)
    except (TypeError, ValueError):
        raise _lib.ScaletuneError(_lib.ST_EINVAL, "%s must be a number, not %r" % (what, v))


def _final_line(params, tokens, fields):
    """A metrics-protocol final record from N, D and other numeric fields (None: no record)."""
    rec = {}
    if params is not None:
        rec["params"] = _number("params", params)
    if tokens is not None:
        rec["tokens"] = _number("tokens", tokens)
    for k, v in fields.items():
        rec[str(k)] = _number(k, v)
    if not rec:
        return None
    for k, v in rec.items():
        if not math.isfinite(v):
            raise _lib.ScaletuneError(_lib.ST_EINVAL, "final field %s = %r is not finite" % (k, v))
    return enc(json.dumps(dict({"event": "final"}, **rec)))


def _yaml_num(v):
    if isinstance(v, int) and not isinstance(v, bool):
        return str(v)
    return repr(float(v))


def _sweep_yaml(name, space, objective, cost, goal, budget_runs, budget_cost, seed, fixed, options):
    """The YAML of an ask/tell sweep (docs/config.md), strings JSON-quoted."""
    q = json.dumps
    if goal not in ("minimize", "maximize"):
        raise _lib.ScaletuneError(_lib.ST_EINVAL, "goal must be 'minimize' or 'maximize', not %r" % goal)
    lines = ["name: %s" % q(str(name)),
             "objective: {metric: %s, goal: %s}" % (q(str(objective)), goal),
             "cost: {metric: %s}" % q(str(cost)), "parameters:"]
    for p in space.params:
        if p.choices:
            f = ["choices: [%s]" % ", ".join(q(c) for c in p.choices),
                 "center: %s" % q(p.choices[int(p.center)])]
            if p.when:
                f.append("when: %s" % q(p.when))
            lines.append("  %s: {%s}" % (q(p.name), ", ".join(f)))
            continue
        f = ["space: %s" % p.space, "center: %s" % _yaml_num(p.center)]
        if p.when:
            f.append("when: %s" % q(p.when))
        if p.min is not None:
            f.append("min: %s" % _yaml_num(p.min))
        if p.max is not None:
            f.append("max: %s" % _yaml_num(p.max))
        if p.scale is not None:
            f.append("scale: %s" % _yaml_num(p.scale))
        if p.base != 10.0:
            f.append("base: %s" % _yaml_num(p.base))
        if p.integer:
            f.append("integer: true")
            f.append("rounding: %s" % _yaml_num(p.rounding))
        lines.append("  %s: {%s}" % (q(p.name), ", ".join(f)))
    for k, v in fixed.items():
        lines.append("  %s: {value: %s}" % (q(str(k)), _yaml_num(v)))
    b = []
    if budget_runs is not None:
        b.append("runs: %d" % int(budget_runs))
    if budget_cost is not None:
        b.append("cost: %s" % _yaml_num(budget_cost))
    if not b:
        b.append("runs: %d" % 10**9)  # the most a sweep file allows
    lines.append("budget: {%s}" % ", ".join(b))
    lines.append("seed: %d" % int(seed))
    if options:
        lines.append("optimizer: {%s}" % ", ".join(
            "%s: %s" % (k, q(v) if isinstance(v, str) else
                        ("true" if v is True else "false" if v is False else _yaml_num(v)))
            for k, v in options.items()))
    return "\n".join(lines) + "\n"
