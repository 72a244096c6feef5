"""fit.py -- scaling-law fits (fit/fit.h) returning plain dicts.
    r = fit_law("chinchilla", x=list(zip(N, D)), y=loss)     # or chinchilla(N, D, loss)
    r["params"]  -> {"A": ..., "B": ..., "E": ..., "alpha": ..., "beta": ...}
    allocate(r["params"], C=5.88e23) -> {"N_opt": ..., "D_opt": ..., ...}
Laws: chinchilla, kaplan, saturating, power1, power2, muennighoff, gadre (laws() lists them;
docs/algorithms/scaling-laws.md has the forms). Errors raise ScaletuneError with fit_errmsg().
"""

import math
from ctypes import byref, c_double, c_void_p

from . import _lib
from ._lib import ScaletuneError, check, darray, enc, lib, text

DERIVED = ("a", "N_opt", "D_opt", "tokens_per_param", "L_opt", "prediction")


def laws():
    """Names of the law forms."""
    out, i = [], 0
    while lib.fit_law_list(i) is not None:
        out.append(text(lib.fit_law_list(i)))
        i += 1
    return out


def _law(name):
    h = lib.fit_law_by_name(enc(name))
    if not h:
        raise ScaletuneError(_lib.ST_ENOTFOUND, "unknown law %r (laws: %s)" % (name, ", ".join(laws())))
    return h


def law_info(name):
    """Parameter and input names of a law: {"name", "params", "inputs"}."""
    h = _law(name)
    return {
        "name": text(lib.fit_law_name(h)),
        "params": [text(lib.fit_law_natural_name(h, i)) for i in range(lib.fit_law_n_params(h))],
        "inputs": [text(lib.fit_law_input_name(h, i)) for i in range(lib.fit_law_n_inputs(h))],
    }


def _rows(x, n_inputs):
    rows = []
    for r in x:
        if isinstance(r, (int, float)) or not hasattr(r, "__len__"):
            r = [r]
        r = [float(v) for v in r]
        if len(r) != n_inputs:
            raise ScaletuneError(
                _lib.ST_EINVAL, "each row of x needs %d inputs, got %d" % (n_inputs, len(r))
            )
        rows.append(r)
    return rows


def _natural_vec(law_h, params):
    names = [text(lib.fit_law_natural_name(law_h, i)) for i in range(lib.fit_law_n_params(law_h))]
    if isinstance(params, dict):
        try:
            return [float(params[k]) for k in names]
        except KeyError as e:
            raise ScaletuneError(_lib.ST_EINVAL, "missing parameter %s (need %s)" % (e, names))
    vals = [float(v) for v in params]
    if len(vals) != len(names):
        raise ScaletuneError(_lib.ST_EINVAL, "%d parameters for %d (%s)" % (len(vals), len(names), names))
    return vals


def fit_law(law, x, y, w=None, objective="huber", delta=None, n_threads=0, n_boot=0, seed=42,
            level=0.95):
    """Fits `law` to inputs x (n rows of n_inputs positive values; a flat list for one-input
    laws) and targets y (n positive values), optional weights w. objective: huber,
    huber-lik, mse or mae; delta the Huber threshold (default 1e-3). n_boot > 0 adds
    bootstrap standard errors and `level` percentile intervals.
    Returns {"law", "params" (natural), "theta", "objective", "objective_value", "sigma",
    "warnings", "warning_text", "diag", and with n_boot "se" and "interval"}."""
    h = _law(law)
    nin = lib.fit_law_n_inputs(h)
    rows = _rows(x, nin)
    y = [float(v) for v in y]
    if len(rows) != len(y):
        raise ScaletuneError(_lib.ST_EINVAL, "x has %d rows, y %d values" % (len(rows), len(y)))
    f = c_void_p()
    check(lib.fit_create(h, byref(f)))
    try:
        fe = lambda: lib.fit_errmsg(f)  # noqa: E731
        o = lib.fit_options_default()
        ob = lib.fit_objective_by_name(enc(objective))
        if ob < 0:
            raise ScaletuneError(_lib.ST_EINVAL, "unknown objective %r" % objective)
        o.objective = ob
        if delta is not None:
            o.delta = float(delta)
        o.n_threads = int(n_threads)
        check(lib.fit_set_options(f, byref(o)), fe)
        X = darray([v for r in rows for v in r])
        W = None if w is None else darray(w)
        check(lib.fit_set_data(f, len(y), X, darray(y), W), fe)
        check(lib.fit_run(f), fe)
        n = lib.fit_law_n_params(h)
        names = [text(lib.fit_law_natural_name(h, i)) for i in range(n)]
        p, th = lib.fit_params(f), lib.fit_theta(f)
        d = _lib.FitDiag()
        lib.fit_get_diag(f, byref(d))
        out = {
            "law": text(lib.fit_law_name(h)),
            "params": {names[i]: p[i] for i in range(n)},
            "theta": [th[i] for i in range(n)],
            "objective": text(lib.fit_objective_name(ob)),
            "objective_value": lib.fit_objective_value(f),
            "sigma": lib.fit_sigma(f),
            "warnings": lib.fit_warnings(f),
            "warning_text": text(lib.fit_warning_text(f)),
            "diag": {k: getattr(d, k) for k, _ in d._fields_},
            "n": len(y),
        }
        if n_boot:
            bo = lib.fit_boot_options_default()
            bo.n_rep = int(n_boot)
            bo.seed = int(seed)
            b = c_void_p()
            check(lib.fit_bootstrap(f, byref(bo), byref(b)), fe)
            try:
                se, iv = {}, {}
                for i in range(n):
                    lo, hi = c_double(), c_double()
                    lib.fit_boot_interval(b, i, float(level), byref(lo), byref(hi))
                    se[names[i]] = lib.fit_boot_se(b, i)
                    iv[names[i]] = (lo.value, hi.value)
                out["se"], out["interval"] = se, iv
            finally:
                lib.fit_boot_destroy(b)
        return out
    finally:
        lib.fit_destroy(f)


def predict(law, params, x):
    """Law predictions y at inputs x (rows as in fit_law) from natural parameters (a dict
    as fit_law returns, or a sequence in the law's order)."""
    h = _law(law)
    theta = (c_double * lib.fit_law_n_params(h))()
    check(lib.fit_law_theta(h, darray(_natural_vec(h, params)), theta))
    return [math.exp(lib.fit_law_eval(h, theta, darray(r), None)) for r in _rows(x, lib.fit_law_n_inputs(h))]


def chinchilla(N, D, loss, **kwargs):
    """Chinchilla Approach 3 (Hoffmann et al. 2022 eq. 2): L = E + A/N^alpha + B/D^beta on
    runs with N parameters, D tokens and final loss. Keyword arguments as fit_law; the result
    also holds "allocation" at C = 5.88e23 FLOP (Chinchilla's budget) unless C=... says
    otherwise."""
    C = kwargs.pop("C", 5.88e23)
    r = fit_law("chinchilla", list(zip(N, D)), loss, **kwargs)
    r["allocation"] = allocate(r["params"], C)
    return r


def allocate(params, C):
    """Compute-optimal allocation (Chinchilla eq. 4, C = 6 N D) from (A, B, E, alpha, beta):
    {"C", "a", "b", "G", "N_opt", "D_opt", "tokens_per_param", "L_opt"}."""
    nat = darray(_natural_vec(_law("chinchilla"), params) if isinstance(params, dict) else params)
    a = _lib.FitAlloc()
    check(lib.fit_allocate(nat, float(C), byref(a)))
    out = {"C": float(C)}
    out.update({k: getattr(a, k) for k, _ in a._fields_})
    return out


def compute_for_loss(params, target):
    """Compute C (FLOP) at which the compute-optimal loss L*(C) reaches `target`."""
    nat = darray(_natural_vec(_law("chinchilla"), params) if isinstance(params, dict) else params)
    c = c_double()
    check(lib.fit_compute_for_loss(nat, float(target), byref(c)))
    return c.value


def loss_at(params, N, D):
    """Chinchilla-law loss of N parameters trained on D tokens."""
    nat = darray(_natural_vec(_law("chinchilla"), params) if isinstance(params, dict) else params)
    return lib.fit_loss_at(nat, float(N), float(D))


def _approach_dict(a):
    return {
        "a": a.a,
        "b": a.b,
        "kN": math.exp(a.log_kN),
        "kD": math.exp(a.log_kD),
        "n_opt": a.n_opt,
        "warnings": a.warnings,
        "warning_text": text(a.warning_text),
    }


def approach1(N, D, C, loss):
    """Chinchilla Approach 1 (minimum-loss envelope): N_opt = kN C^a, D_opt = kD C^b."""
    n = len(loss)
    a = _lib.FitApproach()
    err = _lib.errbuf()
    check(lib.fit_approach1(n, darray(N), darray(D), darray(C), darray(loss), byref(a), err), err)
    return _approach_dict(a)


def approach2(N, C, loss):
    """Chinchilla Approach 2 (IsoFLOP parabolas per budget): N_opt = kN C^a, D_opt = kD C^b."""
    n = len(loss)
    a = _lib.FitApproach()
    err = _lib.errbuf()
    check(lib.fit_approach2(n, darray(N), darray(C), darray(loss), byref(a), err), err)
    return _approach_dict(a)


def hp_preset(name, N=0.0, D=0.0, C=0.0):
    """Published learning-rate and batch laws ("deepseek": of C; "steplaw": of N and D):
    {"lr", "batch"} (batch in tokens)."""
    lr, batch = c_double(), c_double()
    check(lib.fit_hp_preset(enc(name), float(N), float(D), float(C), byref(lr), byref(batch)),
          "unknown preset %r (deepseek, steplaw)" % name)
    return {"lr": lr.value, "batch": batch.value}
