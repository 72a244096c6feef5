"""_lib.py -- finds and loads libscaletune.so, declares the C prototypes used by the package and
turns st_status codes into ScaletuneError. Structures mirror the public headers field by field
(carbs/carbs.h, fit/fit.h, runner/runner.h); tests/python/test_layout.py checks the sizes and
offsets against a C compiler. Standard library only.

Search order for the library: $SCALETUNE_LIB, next to this package (a bundled copy, or the
installed layout PREFIX/lib/python3/dist-packages/scaletune -> PREFIX/lib), build/ of the source
tree, the install prefix (pkg-config's libdir of scaletune; sys.prefix/lib, /usr/local/lib), and
last the system's dynamic loader (libscaletune.so.0).
"""

import ctypes
import os
from ctypes import (
    POINTER,
    Structure,
    c_char,
    c_char_p,
    c_double,
    c_int,
    c_size_t,
    c_uint,
    c_uint64,
    c_void_p,
)

ST_ERRMSG_MAX = 512

# st_status values (common/st.h; append-only, never renumbered)
STATUS_NAMES = {
    0: "ST_OK",
    1: "ST_EINVAL",
    2: "ST_ENOMEM",
    3: "ST_EIO",
    4: "ST_ENUMERIC",
    5: "ST_ENOTFOUND",
    6: "ST_ESTATE",
    7: "ST_EFORMAT",
    8: "ST_ERANGE",
    9: "ST_EUNSUPPORTED",
    10: "ST_EDB",
    11: "ST_EBACKEND",
    12: "ST_ETIMEOUT",
    13: "ST_EBUSY",
    14: "ST_ENOSPC",
    15: "ST_EINTERNAL",
    16: "ST_EEMPTY",
    17: "ST_ENETWORK",
}
globals().update({v: k for k, v in STATUS_NAMES.items()})


class ScaletuneError(Exception):
    """A library call failed. `status` is the st_status number, `code` its name ("ST_EINVAL"),
    `message` the library's own message (carbs_errmsg, fit_errmsg, ...) or st_strerror()."""

    def __init__(self, status, message):
        self.status = int(status)
        self.code = STATUS_NAMES.get(self.status, "ST_%d" % self.status)
        self.message = message
        super().__init__("%s (%s)" % (message, self.code))


def _candidates():
    env = os.environ.get("SCALETUNE_LIB")
    if env:
        return [env]
    here = os.path.dirname(os.path.abspath(__file__))
    out = []
    for d in (here, os.path.normpath(os.path.join(here, "..", "..", ".."))):
        out += [os.path.join(d, "libscaletune.so.0"), os.path.join(d, "libscaletune.so")]
    repo = os.path.normpath(os.path.join(here, "..", "..", ".."))
    out.append(os.path.join(repo, "build", "libscaletune.so"))
    return out


def _prefix_libdirs():
    """Where `make install` may have put the library: pkg-config's libdir of scaletune (when
    pkg-config and scaletune.pc are there), sys.prefix/lib (a venv's or conda's prefix), and
    /usr/local/lib (make install's default PREFIX, which the loader's cache may not list)."""
    import shutil
    import subprocess
    import sys

    dirs = []
    if shutil.which("pkg-config"):
        try:
            r = subprocess.run(["pkg-config", "--variable=libdir", "scaletune"],
                               capture_output=True, text=True, timeout=10)
            if r.returncode == 0 and r.stdout.strip():
                dirs.append(r.stdout.strip())
        except (OSError, subprocess.SubprocessError):
            pass
    dirs += [os.path.join(sys.prefix, "lib"), "/usr/local/lib"]
    return dirs


def _load():
    tried = []
    for p in _candidates():
        if os.path.exists(p):
            return ctypes.CDLL(p), p
        tried.append(p)
    if not os.environ.get("SCALETUNE_LIB"):  # asked only when nothing nearer has it
        for d in _prefix_libdirs():
            p = os.path.join(d, "libscaletune.so.0")
            if os.path.exists(p):
                return ctypes.CDLL(p), p
            tried.append(p)
    if not os.environ.get("SCALETUNE_LIB"):
        try:
            return ctypes.CDLL("libscaletune.so.0"), "libscaletune.so.0"
        except OSError:
            tried.append("libscaletune.so.0 (dynamic loader)")
    raise ImportError(
        "scaletune: libscaletune.so not found (tried %s); run `make` or set SCALETUNE_LIB"
        % ", ".join(tried)
    )


def _blas_coretype():
    """OPENBLAS_CORETYPE for the OpenBLAS that libscaletune loads, or None to leave it alone.
    OpenBLAS before 0.3.25 falls back to its SSE3 'Prescott' kernels on CPUs it does not know
    (OpenMathLib/OpenBLAS#4267; Debian bookworm has 0.3.21, which takes a Sapphire Rapids Xeon
    for one): on such a machine suggest took 1.5x as long at n = 1000 (docs/benchmarks.md
    section 10), with the same suggestions. So where the CPU has AVX2 and FMA, the user has not
    chosen a core type and no OpenBLAS is loaded yet, its Haswell kernels are asked for."""
    if os.environ.get("OPENBLAS_CORETYPE") or os.environ.get("SCALETUNE_BLAS_AUTO") == "0":
        return None
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((ln.split() for ln in f if ln.startswith("flags")), [])
        with open("/proc/self/maps") as f:
            if any("libopenblas" in ln for ln in f):
                return None  # already initialised: the variable would change nothing
    except OSError:
        return None
    return "Haswell" if "avx2" in flags and "fma" in flags else None


def _load_with_coretype():
    """_load() with OPENBLAS_CORETYPE set while the library (and OpenBLAS) loads, then
    removed, so that processes started later (trainers) do not inherit it."""
    ct = _blas_coretype()
    if ct:
        os.environ["OPENBLAS_CORETYPE"] = ct
    try:
        return _load()
    finally:
        if ct:
            del os.environ["OPENBLAS_CORETYPE"]


lib, path = _load_with_coretype()

# ---- structures (mirrors of the public headers) -------------------------------------------


class CarbsParam(Structure):
    _fields_ = [
        ("name", c_char_p),
        ("space", c_int),
        ("min", c_double),
        ("max", c_double),
        ("center", c_double),
        ("scale", c_double),
        ("base", c_double),
        ("is_integer", c_int),
        ("rounding", c_double),
        ("n_choices", c_size_t),
        ("active_if", c_char_p),
        ("active_mask", c_uint64),
    ]


class CarbsOptions(Structure):
    _fields_ = [
        ("mode", c_int),
        ("maximize", c_int),
        ("seed", c_uint64),
        ("num_random_samples", c_size_t),
        ("failures_count_as_random", c_int),
        ("design", c_int),
        ("search_radius", c_double),
        ("exploration_bias", c_double),
        ("candidates_per_dim", c_size_t),
        ("resample_frequency", c_size_t),
        ("max_suggestion_cost", c_double),
        ("min_pareto_cost_fraction", c_double),
        ("pareto_conservative", c_int),
        ("ei_clamp", c_int),
        ("ei_always_max", c_int),
        ("fantasy", c_int),
        ("max_outstanding_age", c_size_t),
        ("output_transform", c_int),
        ("gp_restarts", c_size_t),
        ("gp_max_fit_points", c_size_t),
        ("cost_cap_quantile", c_double),
        ("gp_max_points", c_size_t),
    ]


class CarbsSuggestionInfo(Structure):
    _fields_ = [
        ("phase", c_int),
        ("predicted_output", c_double),
        ("predicted_output_sd", c_double),
        ("predicted_cost", c_double),
        ("pareto_value", c_double),
        ("expected_improvement", c_double),
        ("p_success", c_double),
        ("locality", c_double),
        ("cap_cost", c_double),
    ]


class FitOptions(Structure):
    _fields_ = [
        ("objective", c_int),
        ("delta", c_double),
        ("linear", c_int),
        ("mean", c_int),
        ("n_threads", c_size_t),
        ("max_eval", c_size_t),
        ("ftol_rel", c_double),
        ("xtol_rel", c_double),
        ("n_polish", c_size_t),
    ]


class FitDiag(Structure):
    _fields_ = [
        ("n_starts", c_size_t),
        ("n_finite", c_size_t),
        ("best_start", c_size_t),
        ("n_evals", c_size_t),
        ("grad_norm", c_double),
        ("start_grad", c_double),
        ("nlopt_code", c_int),
        ("spread", c_double),
    ]


class FitAlloc(Structure):
    _fields_ = [
        ("a", c_double),
        ("b", c_double),
        ("G", c_double),
        ("N_opt", c_double),
        ("D_opt", c_double),
        ("tokens_per_param", c_double),
        ("L_opt", c_double),
    ]


class FitBootOptions(Structure):
    _fields_ = [
        ("n_rep", c_size_t),
        ("seed", c_uint64),
        ("n_threads", c_size_t),
        ("cluster", POINTER(c_size_t)),
        ("target_C", c_double),
        ("target_N", c_double),
        ("target_D", c_double),
    ]


class FitApproach(Structure):
    _fields_ = [
        ("a", c_double),
        ("log_kN", c_double),
        ("b", c_double),
        ("log_kD", c_double),
        ("n_opt", c_size_t),
        ("warnings", c_uint),
        ("warning_text", c_char * ST_ERRMSG_MAX),
    ]


class RunnerStatus(Structure):
    _fields_ = [
        ("name", c_char * 128),
        ("n_runs", c_size_t),
        ("n_by_status", c_size_t * 6),
        ("n_attempts", c_size_t),
        ("n_retried", c_size_t),
        ("n_garbage", c_size_t),
        ("maximize", c_int),
        ("has_best", c_int),
        ("best_run", c_uint64),
        ("best_objective", c_double),
        ("best_cost", c_double),
        ("spent_cost", c_double),
        ("budget_runs", c_size_t),
        ("budget_cost", c_double),
        ("max_cost_per_run", c_double),
        ("controller_alive", c_int),
        ("controller", c_char * 128),
        ("stop_requested", c_int),
        ("heartbeat", c_double),
        ("created", c_double),
        ("last_ended", c_double),
        ("n_bad_final", c_size_t),
        ("bad_final", c_char * 384),
        ("n_branches", c_size_t),
        ("n_branch_by_status", c_size_t * 6),
    ]


# ---- prototypes ---------------------------------------------------------------------------

P = POINTER
dbl_p = P(c_double)
st = c_int

_PROTOS = {
    # common/st.h
    "st_strerror": (c_char_p, [st]),
    "st_global_init": (st, []),
    "st_version": (c_char_p, []),
    "st_free": (None, [c_void_p]),
    # carbs/carbs.h
    "carbs_param_init": (None, [P(CarbsParam), c_char_p, c_int, c_double]),
    "carbs_options_default": (CarbsOptions, []),
    "carbs_options_set": (st, [P(CarbsOptions), c_char_p, c_char_p, c_char_p]),
    "carbs_option_name": (c_char_p, [c_size_t, P(c_char_p), P(c_char_p)]),
    "carbs_create": (st, [P(CarbsParam), c_size_t, P(CarbsOptions), P(c_void_p), c_char_p]),
    "carbs_destroy": (None, [c_void_p]),
    "carbs_errmsg": (c_char_p, [c_void_p]),
    "carbs_dim": (c_size_t, [c_void_p]),
    "carbs_get_param": (P(CarbsParam), [c_void_p, c_size_t]),
    "carbs_get_options": (P(CarbsOptions), [c_void_p]),
    "carbs_set_options": (st, [c_void_p, P(CarbsOptions)]),
    "carbs_suggest": (st, [c_void_p, dbl_p, P(c_uint64)]),
    "carbs_suggest_batch": (st, [c_void_p, c_size_t, dbl_p, P(c_uint64)]),
    "carbs_last_info": (None, [c_void_p, P(CarbsSuggestionInfo)]),
    "carbs_observe": (st, [c_void_p, c_uint64, dbl_p, c_double, c_double, c_int]),
    "carbs_forget": (st, [c_void_p, c_uint64]),
    "carbs_set_search_center": (st, [c_void_p, dbl_p]),
    "carbs_get_search_center": (None, [c_void_p, dbl_p]),
    "carbs_n_observations": (c_size_t, [c_void_p]),
    "carbs_get_observation": (st, [c_void_p, c_size_t, dbl_p, dbl_p, dbl_p, P(c_int)]),
    "carbs_n_outstanding": (c_size_t, [c_void_p]),
    "carbs_get_outstanding": (st, [c_void_p, c_size_t, P(c_uint64), dbl_p]),
    "carbs_pareto": (
        st,
        [c_void_p, c_int, c_size_t, P(c_size_t), dbl_p, dbl_p, P(c_size_t), dbl_p],
    ),
    "carbs_predict": (st, [c_void_p, c_size_t, dbl_p, dbl_p, dbl_p, dbl_p, dbl_p]),
    "carbs_cumulative_cost": (c_double, [c_void_p]),
    "carbs_export": (st, [c_void_p, P(c_void_p), P(c_size_t)]),
    "carbs_import": (st, [c_char_p, c_size_t, P(c_void_p), c_char_p]),
    "carbs_save_file": (st, [c_void_p, c_char_p, c_char_p]),
    "carbs_load_file": (st, [c_char_p, P(c_void_p), c_char_p]),
    # fit/fit.h
    "fit_law_by_name": (c_void_p, [c_char_p]),
    "fit_law_list": (c_char_p, [c_size_t]),
    "fit_law_name": (c_char_p, [c_void_p]),
    "fit_law_n_params": (c_size_t, [c_void_p]),
    "fit_law_n_inputs": (c_size_t, [c_void_p]),
    "fit_law_natural_name": (c_char_p, [c_void_p, c_size_t]),
    "fit_law_input_name": (c_char_p, [c_void_p, c_size_t]),
    "fit_law_theta": (st, [c_void_p, dbl_p, dbl_p]),
    "fit_law_eval": (c_double, [c_void_p, dbl_p, dbl_p, dbl_p]),
    "fit_options_default": (FitOptions, []),
    "fit_objective_by_name": (c_int, [c_char_p]),
    "fit_objective_name": (c_char_p, [c_int]),
    "fit_create": (st, [c_void_p, P(c_void_p)]),
    "fit_destroy": (None, [c_void_p]),
    "fit_errmsg": (c_char_p, [c_void_p]),
    "fit_set_options": (st, [c_void_p, P(FitOptions)]),
    "fit_set_data": (st, [c_void_p, c_size_t, dbl_p, dbl_p, dbl_p]),
    "fit_run": (st, [c_void_p]),
    "fit_theta": (dbl_p, [c_void_p]),
    "fit_params": (dbl_p, [c_void_p]),
    "fit_objective_value": (c_double, [c_void_p]),
    "fit_sigma": (c_double, [c_void_p]),
    "fit_warnings": (c_uint, [c_void_p]),
    "fit_warning_text": (c_char_p, [c_void_p]),
    "fit_get_diag": (None, [c_void_p, P(FitDiag)]),
    "fit_predict": (st, [c_void_p, c_size_t, dbl_p, dbl_p]),
    "fit_allocate": (st, [dbl_p, c_double, P(FitAlloc)]),
    "fit_compute_for_loss": (st, [dbl_p, c_double, dbl_p]),
    "fit_loss_at": (c_double, [dbl_p, c_double, c_double]),
    "fit_boot_options_default": (FitBootOptions, []),
    "fit_bootstrap": (st, [c_void_p, P(FitBootOptions), P(c_void_p)]),
    "fit_boot_destroy": (None, [c_void_p]),
    "fit_boot_se": (c_double, [c_void_p, c_size_t]),
    "fit_boot_interval": (None, [c_void_p, c_size_t, c_double, dbl_p, dbl_p]),
    "fit_approach1": (st, [c_size_t, dbl_p, dbl_p, dbl_p, dbl_p, P(FitApproach), c_char_p]),
    "fit_approach2": (st, [c_size_t, dbl_p, dbl_p, dbl_p, P(FitApproach), c_char_p]),
    "fit_hp_preset": (st, [c_char_p, c_double, c_double, c_double, dbl_p, dbl_p]),
    # runner/runner.h
    "runner_store_open": (st, [c_char_p, P(c_void_p), c_char_p]),
    "runner_store_close": (None, [c_void_p]),
    "runner_store_errmsg": (c_char_p, [c_void_p]),
    "runner_store_params": (st, [c_void_p, c_char_p, P(c_size_t), P(P(c_char_p))]),
    "runner_store_list": (st, [c_void_p, P(c_char_p)]),
    "runner_store_status": (st, [c_void_p, c_char_p, P(RunnerStatus)]),
    "runner_store_pareto": (
        st,
        [c_void_p, c_char_p, c_size_t, P(c_size_t), P(c_uint64), dbl_p, dbl_p],
    ),
    "runner_store_export_json": (st, [c_void_p, c_char_p, P(c_void_p)]),
    "runner_store_request_stop": (st, [c_void_p, c_char_p]),
    "runner_store_ask": (st, [c_void_p, c_char_p, P(c_uint64), dbl_p, c_size_t]),
    "runner_store_tell": (st, [c_void_p, c_char_p, c_uint64, c_double, c_double, c_int]),
    "runner_store_ask_ttl": (st, [c_void_p, c_char_p, c_double, P(c_uint64), dbl_p, c_size_t]),
    "runner_store_set_proposer": (None, [c_void_p, c_void_p, c_void_p]),
    "runner_store_expired": (st, [c_void_p, c_char_p, c_size_t, P(c_size_t), P(c_uint64)]),
    "runner_store_tell_final": (
        st,
        [c_void_p, c_char_p, c_uint64, c_double, c_double, c_int, c_char_p],
    ),
    "runner_store_record": (
        st,
        [c_void_p, c_char_p, dbl_p, c_double, c_double, c_int, c_char_p, P(c_uint64)],
    ),
    "runner_store_create_sweep": (st, [c_char_p, c_char_p, c_char_p]),
    "runner_store_enqueue_text": (
        st,
        [c_void_p, c_char_p, c_size_t, P(c_char_p), P(c_char_p), P(c_uint64)],
    ),
    "runner_store_format_params": (st, [c_void_p, c_char_p, dbl_p, P(c_void_p)]),
    "runner_store_parse_params": (
        st,
        [c_void_p, c_char_p, c_size_t, P(c_char_p), P(c_char_p), dbl_p, c_size_t],
    ),
    # report/report.h
    "report_create": (st, [c_char_p, c_char_p, c_void_p, P(c_void_p), c_char_p]),
    "report_destroy": (None, [c_void_p]),
    "report_errmsg": (c_char_p, [c_void_p]),
    "report_write_html": (st, [c_void_p, c_char_p]),
    "report_write_json": (st, [c_void_p, c_char_p]),
    "report_write_csv": (st, [c_void_p, c_char_p]),
    "report_write_md": (st, [c_void_p, c_char_p]),
    "runner_run_status_name": (c_char_p, [c_int]),
    # study/study.h
    "study_extrapolate_json": (
        st,
        [c_char_p, c_char_p, c_double, c_double, c_size_t, P(c_void_p), c_char_p],
    ),
}

for _name, (_res, _args) in _PROTOS.items():
    _f = getattr(lib, _name)
    _f.restype = _res
    _f.argtypes = _args

# GSL's abort-on-error handler off (library code checks every GSL return value instead).
if lib.st_global_init() != 0:
    raise ImportError("scaletune: st_global_init failed")


def text(b):
    """C string (bytes or None) -> str."""
    return "" if b is None else b.decode("utf-8", "replace")


def enc(s):
    """str or None -> bytes or None for a const char * argument."""
    return None if s is None else str(s).encode("utf-8")


def check(status, message=None):
    """Raises ScaletuneError for a non-zero st_status. `message` is a str, bytes, a ctypes
    buffer or a zero-argument callable returning one of those (evaluated only on failure)."""
    if status == 0:
        return
    if callable(message):
        message = message()
    if isinstance(message, (bytes, bytearray)):
        message = text(bytes(message).split(b"\0", 1)[0])
    elif message is not None and not isinstance(message, str):
        message = text(message.value)
    if not message:
        message = text(lib.st_strerror(status))
    raise ScaletuneError(status, message)


def errbuf():
    return ctypes.create_string_buffer(ST_ERRMSG_MAX)


def darray(values):
    """Sequence of numbers -> (c_double array). Accepts anything float() takes per item."""
    values = list(values)
    return (c_double * max(1, len(values)))(*[float(v) for v in values])


def take_exported(ptr, length):
    """Copies a buffer the library handed over and frees it with st_free()."""
    try:
        return ctypes.string_at(ptr, length)
    finally:
        lib.st_free(ptr)
