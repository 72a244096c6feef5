"""scaletune -- Python binding of libscaletune.so (ctypes, standard library only).

    import scaletune
    space = scaletune.Space([scaletune.Param("lr", "log", center=1e-3),
                             scaletune.Param("width", "log", center=256, integer=True, rounding=16)])
    opt = scaletune.Optimizer(space, seed=1)
    params, run_id = opt.suggest()
    opt.observe(run_id, output=val_loss, cost=flops)

Modules: optimizer (Param, Space, Optimizer: carbs/carbs.h), sweep (Sweep: ask/tell against a
sweep store, runner/runner.h), fit (scaling-law fits: fit/fit.h), metrics (the metrics-protocol
emitter). Library errors raise ScaletuneError with the library's message. The library is loaded
on first use of anything but `metrics`, so a training script that only reports metrics does not
need libscaletune.so. The API is documented in docs/api.md.
"""

import importlib

from . import metrics

# name -> (submodule, attribute): imported, and the library loaded, on first access (PEP 562)
_LAZY = {
    "ScaletuneError": ("_lib", "ScaletuneError"),
    "library_path": ("_lib", "path"),
    "Param": ("optimizer", "Param"),
    "Space": ("optimizer", "Space"),
    "Optimizer": ("optimizer", "Optimizer"),
    "option_names": ("optimizer", "option_names"),
    "Sweep": ("sweep", "Sweep"),
    "fit_law": ("fit", "fit_law"),
    "predict_law": ("fit", "predict"),
    "chinchilla": ("fit", "chinchilla"),
    "allocate": ("fit", "allocate"),
    "compute_for_loss": ("fit", "compute_for_loss"),
    "loss_at": ("fit", "loss_at"),
    "approach1": ("fit", "approach1"),
    "approach2": ("fit", "approach2"),
    "hp_preset": ("fit", "hp_preset"),
    "laws": ("fit", "laws"),
    "law_info": ("fit", "law_info"),
}

__all__ = ["metrics", "__version__"] + list(_LAZY)


def __getattr__(name):
    if name == "__version__":
        lib = importlib.import_module("._lib", __name__)
        value = lib.text(lib.lib.st_version())
    elif name in _LAZY:
        mod, attr = _LAZY[name]
        value = getattr(importlib.import_module("." + mod, __name__), attr)
    else:
        raise AttributeError("module 'scaletune' has no attribute %r" % name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
