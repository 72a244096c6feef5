"""scaletune -- Python binding of libscaletune.so (ctypes, standard library only).

    import scaletune
    space = scaletune.Space([scaletune.Param("lr", "log", center=1e-3),
                             scaletune.Param("width", "log", center=256, integer=True, rounding=16)])
    opt = scaletune.Optimizer(space, seed=1)
    params, run_id = opt.suggest()
    opt.observe(run_id, output=val_loss, cost=flops)

Modules: optimizer (Param, Space, Optimizer: carbs/carbs.h), sweep (Sweep: ask/tell against a
sweep store, runner/runner.h), fit (scaling-law fits: fit/fit.h), metrics (the metrics-protocol
emitter; pure Python). Library errors raise ScaletuneError with the library's message.
The API is documented in docs/api.md.
"""

from . import metrics
from ._lib import ScaletuneError
from ._lib import lib as _clib
from ._lib import path as library_path
from ._lib import text as _text
from .fit import (
    allocate,
    approach1,
    approach2,
    chinchilla,
    compute_for_loss,
    fit_law,
    hp_preset,
    law_info,
    laws,
    loss_at,
)
from .fit import predict as predict_law
from .optimizer import Optimizer, Param, Space, option_names
from .sweep import Sweep

__version__ = _text(_clib.st_version())

__all__ = [
    "ScaletuneError",
    "Param",
    "Space",
    "Optimizer",
    "option_names",
    "Sweep",
    "metrics",
    "fit_law",
    "predict_law",
    "chinchilla",
    "allocate",
    "compute_for_loss",
    "loss_at",
    "approach1",
    "approach2",
    "hp_preset",
    "laws",
    "law_info",
    "library_path",
    "__version__",
]
