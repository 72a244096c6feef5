"""optimizer.py -- parameter spaces and the cost-aware Bayesian optimizer (carbs/carbs.h).

Param mirrors carbs_param (space "linear", "log" or "logit"; bounds, centre, scale, log base,
integer rounding); Space is an ordered list of them. Optimizer wraps one carbs handle:
suggest() -> (params dict, id), observe(), forget(), suggest_batch(), pareto(), predict(),
save()/load() and to_bytes()/from_bytes() (carbs_export/carbs_import). Options are keyword
arguments, passed by name through carbs_options_set (the keys of docs/algorithms/carbs.md).
A handle is not thread-safe: use one Optimizer per thread, as in C.
"""

import ctypes
import math
from ctypes import byref, c_double, c_int, c_size_t, c_uint64, c_void_p

from . import _lib
from ._lib import ScaletuneError, check, darray, enc, lib, text

SPACES = {"linear": 0, "log": 1, "logit": 2, "categorical": 3}
PHASES = {0: "random", 1: "resample", 2: "bayes", 3: "fallback"}


class Param:
    """One search dimension (carbs_param). Unset bounds take the space's defaults: linear
    (-inf, inf), log (0, inf), logit (0, 1). `integer` rounds suggestions to a multiple of
    `rounding`. `scale` None (the default) follows the range: (max - min) / 4 for a bounded
    linear space (at least 2 roundings for an integer), else 1 (carbs.h). `choices` (a list of strings) makes a categorical parameter (space
    "categorical"; center: a choice, default the first); suggestions give the choice string.
    `when` ({"optimizer": "adamw"} or {"optimizer": ["adamw", "sgd"]}, a categorical given
    before it) makes it conditional: None in suggestions where inactive, and None (or
    anything) is taken there by observe."""

    def __init__(
        self,
        name,
        space="linear",
        center=None,
        min=None,
        max=None,
        scale=None,
        base=10.0,
        integer=False,
        rounding=1.0,
        choices=None,
        when=None,
    ):
        if choices is not None:
            space = "categorical"
            choices = [str(c) for c in choices]
            if len(choices) < 2 or len(set(choices)) != len(choices):
                raise ValueError("parameter %r: 2 or more distinct choices are needed" % name)
            if center is None:
                center = choices[0]
            if center not in choices:
                raise ValueError("parameter %r: center %r is not a choice" % (name, center))
            center = choices.index(center)
        elif space == "categorical":
            raise ValueError("parameter %r: a categorical parameter needs choices=[...]" % name)
        if space not in SPACES:
            raise ValueError("space must be one of %s, not %r" % (sorted(SPACES), space))
        if center is None:
            raise ValueError("parameter %r needs a search centre (center=...)" % name)
        if when is not None:
            if not isinstance(when, dict) or len(when) != 1:
                raise ValueError("parameter %r: when must be {parameter: choice(s)}" % name)
            parent, vals = next(iter(when.items()))
            vals = [vals] if isinstance(vals, str) else [str(v) for v in vals]
            when = {str(parent): vals}
        self.choices = choices
        self.when = when
        self.name = str(name)
        self.space = space
        self.center = float(center)
        self.min = None if min is None else float(min)
        self.max = None if max is None else float(max)
        self.scale = None if scale is None else float(scale)  # None: auto (carbs.h)
        self.base = float(base)
        self.integer = bool(integer)
        self.rounding = float(rounding)

    def _fill(self, cp, name_bytes, parent=None):
        lib.carbs_param_init(byref(cp), name_bytes, SPACES[self.space], self.center)
        if self.choices:
            cp.n_choices = len(self.choices)
        if self.when:
            pname, vals = next(iter(self.when.items()))
            if parent is None or not parent.choices:
                raise ValueError("parameter %r: when names %r, not a categorical parameter given "
                                 "before it" % (self.name, pname))
            bad = [v for v in vals if v not in parent.choices]
            if bad:
                raise ValueError("parameter %r: %s not choices of %r" % (self.name, bad, pname))
            cp.active_if = enc(pname)
            cp.active_mask = sum(1 << parent.choices.index(v) for v in vals)
        if self.min is not None:
            cp.min = self.min
        if self.max is not None:
            cp.max = self.max
        if self.scale is not None:
            cp.scale = self.scale
        cp.base = self.base
        cp.is_integer = 1 if self.integer else 0
        cp.rounding = self.rounding

    @classmethod
    def _from_c(cls, cp):
        space = {v: k for k, v in SPACES.items()}.get(cp.space, "linear")
        if space == "categorical":  # the C state keeps no choice names: their indices
            return cls(text(cp.name), choices=[str(k) for k in range(cp.n_choices)],
                       center=str(int(cp.center)))
        return cls(
            text(cp.name),
            space,
            cp.center,
            cp.min if math.isfinite(cp.min) else None,
            cp.max if math.isfinite(cp.max) else None,
            cp.scale,
            cp.base,
            bool(cp.is_integer),
            cp.rounding,
        )

    def __repr__(self):
        extra = "".join(
            ", %s=%r" % (k, getattr(self, k)) for k in ("min", "max") if getattr(self, k) is not None
        )
        if self.integer:
            extra += ", integer=True, rounding=%r" % self.rounding
        return "Param(%r, %r, center=%r%s)" % (self.name, self.space, self.center, extra)


class Space:
    """An ordered set of Params. Built from Params, or from a dict name -> dict of Param
    keyword arguments: Space({"lr": {"space": "log", "center": 1e-3}})."""

    def __init__(self, params):
        if isinstance(params, dict):
            params = [Param(k, **v) for k, v in params.items()]
        self.params = list(params)
        if not self.params:
            raise ValueError("a Space needs at least one parameter")
        self.names = [p.name for p in self.params]

    def __len__(self):
        return len(self.params)

    def __iter__(self):
        return iter(self.params)

    def to_vector(self, values):
        """dict name -> value (or a sequence in order) -> list of floats in order: a choice
        becomes its index, None (an inactive conditional parameter) NaN. A conditional
        parameter may be left out of a dict."""
        if isinstance(values, dict):
            missing = [p.name for p in self.params if p.name not in values and not p.when]
            extra = [k for k in values if k not in self.names]
            if missing or extra:
                raise KeyError(
                    "parameters do not match the space: missing %s, unknown %s" % (missing, extra)
                )
            values = [values.get(n) for n in self.names]
        values = list(values)
        if len(values) != len(self.names):
            raise ValueError("%d values for %d parameters" % (len(values), len(self.names)))
        return [_to_float(p, v) for p, v in zip(self.params, values)]

    def to_dict(self, vec):
        out = {}
        for p, v in zip(self.params, vec):
            v = float(v)
            if math.isnan(v) and p.when:
                out[p.name] = None
            elif p.choices:
                out[p.name] = p.choices[int(v)] if v.is_integer() and 0 <= v < len(p.choices) else v
            else:
                out[p.name] = int(round(v)) if p.integer and v.is_integer() else v
        return out

    def _c_array(self):
        names = [enc(p.name) for p in self.params]  # kept alive by the caller
        arr = (_lib.CarbsParam * len(self.params))()
        by_name = {}
        for cp, p, nb in zip(arr, self.params, names):
            parent = by_name.get(next(iter(p.when))) if p.when else None
            p._fill(cp, nb, parent)
            by_name[p.name] = p
        return arr, names


def _to_float(p, v):
    """One value of parameter p as the C library takes it."""
    if v is None:
        return math.nan
    if p.choices and isinstance(v, str):
        if v not in p.choices:
            raise ValueError("parameter %r: %r is not one of %s" % (p.name, v, p.choices))
        return float(p.choices.index(v))
    return float(v)


def _opt_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v)
    return str(v)


def _apply_options(o, options):
    for k, v in options.items():
        err = _lib.errbuf()
        check(lib.carbs_options_set(byref(o), enc(k), enc(_opt_value(v)), err), err)


def option_names():
    """The optimizer's options: list of (name, type, help) from carbs_option_name()."""
    out, i = [], 0
    while True:
        t, h = ctypes.c_char_p(), ctypes.c_char_p()
        n = lib.carbs_option_name(i, byref(t), byref(h))
        if n is None:
            return out
        out.append((text(n), text(t.value), text(h.value)))
        i += 1


class Optimizer:
    """Cost-aware Bayesian optimizer over a Space. Keyword arguments are carbs options
    (seed=1, num_random_samples=6, maximize=True, mode="faithful", max_suggestion_cost=1e14,
    ...); unknown names or bad values raise ScaletuneError."""

    def __init__(self, space, **options):
        if not isinstance(space, Space):
            space = Space(space)
        o = lib.carbs_options_default()
        _apply_options(o, options)
        arr, keep = space._c_array()
        h = c_void_p()
        err = _lib.errbuf()
        check(lib.carbs_create(arr, len(space), byref(o), byref(h), err), err)
        del keep
        self._given = dict(options)  # the options as given, for to_store()
        self._h = h
        self.space, self.dim = space, len(space)  # keeps the choice names

    # ---- construction from a handle (load, from_bytes) ------------------------------------

    @classmethod
    def _wrap(cls, h):
        self = cls.__new__(cls)
        self._h = h
        self._sync_space()
        return self

    def _sync_space(self):
        d = lib.carbs_dim(self._h)
        self.space = Space([Param._from_c(lib.carbs_get_param(self._h, i).contents) for i in range(d)])
        self.dim = d

    def close(self):
        """Frees the handle (also done when the object is collected)."""
        h, self._h = getattr(self, "_h", None), None
        if h:
            lib.carbs_destroy(h)

    __del__ = close

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _handle(self):
        if not self._h:
            raise ScaletuneError(_lib.ST_ESTATE, "the optimizer is closed")
        return self._h

    def _check(self, status):
        check(status, lambda: lib.carbs_errmsg(self._h))

    # ---- options --------------------------------------------------------------------------

    @property
    def options(self):
        """The options in force, as a dict of the C struct's fields."""
        o = lib.carbs_get_options(self._handle()).contents
        return {k: getattr(o, k) for k, _ in o._fields_}

    def set_options(self, **options):
        """Changes options on the live handle (those that do not change the space)."""
        o = _lib.CarbsOptions()
        ctypes.pointer(o)[0] = lib.carbs_get_options(self._handle()).contents
        _apply_options(o, options)
        self._check(lib.carbs_set_options(self._h, byref(o)))

    # ---- ask and tell ---------------------------------------------------------------------

    def suggest(self):
        """Proposes one run: (params dict, suggestion id)."""
        x = (c_double * self.dim)()
        sid = c_uint64()
        self._check(lib.carbs_suggest(self._handle(), x, byref(sid)))
        return self.space.to_dict(x), sid.value

    def suggest_batch(self, q):
        """Proposes q distinct runs from one fitted model: list of (params dict, id)."""
        q = int(q)
        if q < 1:
            raise ScaletuneError(_lib.ST_EINVAL, "suggest_batch: q must be >= 1, got %d" % q)
        x = (c_double * (q * self.dim))()
        ids = (c_uint64 * q)()
        self._check(lib.carbs_suggest_batch(self._handle(), q, x, ids))
        d = self.dim
        return [(self.space.to_dict(x[i * d : (i + 1) * d]), ids[i]) for i in range(q)]

    def last_info(self):
        """What the optimizer predicted for its last suggestion (NaN where not modelled)."""
        info = _lib.CarbsSuggestionInfo()
        lib.carbs_last_info(self._handle(), byref(info))
        out = {k: getattr(info, k) for k, _ in info._fields_}
        out["phase"] = PHASES.get(info.phase, str(info.phase))
        return out

    def observe(self, run, output, cost=None, failed=False):
        """Records a finished run. `run` is a suggestion id (int) or a params dict/sequence
        (a run that was not suggested). A success needs a finite output and its cost (> 0);
        a failed run says so: failed=True, or output None (its cost may be given, or not).
        A NaN or infinite output without failed=True is refused (say whether it failed), and
        parameters outside the space's bounds are refused."""
        h = self._handle()
        if isinstance(run, int) and not isinstance(run, bool):
            sid, x = run, None
        else:
            sid, x = 0, darray(self.space.to_vector(run))
        if output is None:
            failed = True
        out = math.nan if output is None else float(output)
        if not failed and not math.isfinite(out):
            raise ScaletuneError(
                _lib.ST_EINVAL,
                "observe: output %r is not finite; a run that failed (diverged) is observed "
                "with failed=True or output=None" % output,
            )
        if not failed and cost is None:
            raise ScaletuneError(
                _lib.ST_EINVAL,
                "observe: a success needs its cost (cost=..., > 0: FLOPs, seconds, ...); a "
                "failed run: failed=True",
            )
        c = math.nan if cost is None else float(cost)
        self._check(lib.carbs_observe(h, sid, x, out, c, 1 if failed else 0))

    def to_store(self, db, name, objective="objective", cost="cost", budget_runs=None,
                 budget_cost=None, fixed=None):
        """Writes this optimizer into a sweep store: a new ask/tell sweep `name` in `db` with
        the same space, seed and options given at construction, and every observation as a
        finished run, in order. Returns the Sweep (report, recommend, ask and tell go on
        there; its optimizer is rebuilt from these observations)."""
        from .sweep import Sweep

        o = self.options
        opts = {k: v for k, v in getattr(self, "_given", {}).items() if k not in ("seed", "maximize")}
        s = Sweep.create(db, name, self.space, objective=objective, cost=cost,
                         goal="maximize" if o["maximize"] else "minimize", budget_runs=budget_runs,
                         budget_cost=budget_cost, seed=o["seed"], fixed=fixed, **opts)
        try:
            for ob in self.observations:
                vals = dict(ob["params"], **(fixed or {}))
                ok = not ob["failed"]
                c = ob["cost"] if math.isfinite(ob["cost"]) else None
                s.record(vals, ob["output"] if ok else None, c, failed=not ok)
        except Exception:
            s.close()
            raise
        return s

    def forget(self, run_id):
        """Drops an outstanding suggestion (a run lost to infrastructure)."""
        self._check(lib.carbs_forget(self._handle(), int(run_id)))

    @property
    def search_center(self):
        x = (c_double * self.dim)()
        lib.carbs_get_search_center(self._handle(), x)
        return self.space.to_dict(x)

    @search_center.setter
    def search_center(self, values):
        self._check(
            lib.carbs_set_search_center(self._handle(), darray(self.space.to_vector(values)))
        )

    # ---- inspection -----------------------------------------------------------------------

    @property
    def observations(self):
        """List of dicts: params, output, cost, failed (in the order observed)."""
        h = self._handle()
        out = []
        for i in range(lib.carbs_n_observations(h)):
            x = (c_double * self.dim)()
            y, c, f = c_double(), c_double(), c_int()
            self._check(lib.carbs_get_observation(h, i, x, byref(y), byref(c), byref(f)))
            out.append(
                {"params": self.space.to_dict(x), "output": y.value, "cost": c.value, "failed": bool(f.value)}
            )
        return out

    @property
    def outstanding(self):
        """List of (params dict, id), oldest first."""
        h = self._handle()
        out = []
        for i in range(lib.carbs_n_outstanding(h)):
            x = (c_double * self.dim)()
            sid = c_uint64()
            self._check(lib.carbs_get_outstanding(h, i, byref(sid), x))
            out.append((self.space.to_dict(x), sid.value))
        return out

    @property
    def cumulative_cost(self):
        return lib.carbs_cumulative_cost(self._handle())

    def pareto(self, conservative=True):
        """The cost/output Pareto front of successful observations, in increasing cost: list
        of dicts with cost, output, count (identical runs grouped) and params."""
        h = self._handle()
        n = c_size_t()
        flag = 1 if conservative else 0
        self._check(lib.carbs_pareto(h, flag, 0, byref(n), None, None, None, None))
        cap = n.value
        if cap == 0:
            return []
        c, y = (c_double * cap)(), (c_double * cap)()
        cnt, x = (c_size_t * cap)(), (c_double * (cap * self.dim))()
        self._check(lib.carbs_pareto(h, flag, cap, byref(n), c, y, cnt, x))
        d = self.dim
        return [
            {
                "cost": c[i],
                "output": y[i],
                "count": cnt[i],
                "params": self.space.to_dict(x[i * d : (i + 1) * d]),
            }
            for i in range(n.value)
        ]

    def predict(self, points):
        """Model predictions at a params dict or a list of them: for each point a dict with
        mean, sd (output units), cost and p_success. Needs 2 or more successes (ST_EEMPTY)."""
        single = isinstance(points, dict)
        if single:
            points = [points]
        rows = [self.space.to_vector(p) for p in points]
        m = len(rows)
        if m == 0:
            return []
        X = darray([v for r in rows for v in r])
        mean, sd, cost, ps = [(c_double * m)() for _ in range(4)]
        self._check(lib.carbs_predict(self._handle(), m, X, mean, sd, cost, ps))
        out = [
            {"mean": mean[i], "sd": sd[i], "cost": cost[i], "p_success": ps[i]} for i in range(m)
        ]
        return out[0] if single else out

    def minimize(self, objective, max_evals, max_cost=float("inf")):
        """Suggest-evaluate-observe loop in Python: objective(params) returns (output, cost),
        or raises; an exception of type FloatingPointError or an output of NaN counts as a
        failed run. Returns the best observation dict (None if every run failed)."""
        spent = 0.0
        for _ in range(int(max_evals)):
            if spent >= max_cost:
                break
            params, sid = self.suggest()
            try:
                output, cost = objective(params)
                failed = not math.isfinite(output)
            except FloatingPointError:
                output, cost, failed = float("nan"), float("nan"), True
            self.observe(sid, output, cost, failed)
            if math.isfinite(cost):
                spent += cost
        return self.best()

    def best(self):
        """The best successful observation (by the options' goal), or None."""
        ok = [o for o in self.observations if not o["failed"]]
        if not ok:
            return None
        sign = -1.0 if self.options["maximize"] else 1.0
        return min(ok, key=lambda o: sign * o["output"])

    # ---- persistence ----------------------------------------------------------------------

    def to_bytes(self):
        """The whole state as bytes (carbs_export, "CARBSST1" magic)."""
        buf, n = c_void_p(), c_size_t()
        self._check(lib.carbs_export(self._handle(), byref(buf), byref(n)))
        return _lib.take_exported(buf, n.value)

    @classmethod
    def from_bytes(cls, data):
        """Rebuilds an optimizer from to_bytes() output; gives the same next suggestion."""
        data = bytes(data)
        h = c_void_p()
        err = _lib.errbuf()
        check(lib.carbs_import(data, len(data), byref(h), err), err)
        return cls._wrap(h)

    def save(self, path):
        """Writes the state to a file (path.tmp, then renamed)."""
        err = _lib.errbuf()
        check(lib.carbs_save_file(self._handle(), enc(path), err), err)

    @classmethod
    def load(cls, path):
        h = c_void_p()
        err = _lib.errbuf()
        check(lib.carbs_load_file(enc(path), byref(h), err), err)
        return cls._wrap(h)

    def __repr__(self):
        if not self._h:
            return "<Optimizer closed>"
        return "<Optimizer %s: %d observations, %d outstanding>" % (
            ", ".join(self.space.names),
            lib.carbs_n_observations(self._h),
            lib.carbs_n_outstanding(self._h),
        )
