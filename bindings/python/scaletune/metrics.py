"""metrics.py -- the metrics-protocol emitter for training scripts (docs/metrics-protocol.md).

One JSON object per line, to $SCALETUNE_METRICS_FILE (appended; the sweep runner sets it) or
else to standard output, flushed after every line:
    from scaletune import metrics
    metrics.step(s, loss, lr=lr)            # {"event":"step","step":s,"loss":...,"lr":...}
    metrics.eval(s, val_loss=v)
    metrics.final(val_loss=v, flops=6*N*D, params=N, tokens=D)
    metrics.diverged(s, "loss is nan")      # or let step() notice a non-finite loss
Non-finite numbers are written as null (strict JSON; the runner reads null as NaN). Values may
be anything float() accepts (a 0-d torch tensor, a numpy scalar). Pure Python: importing it
does not load libscaletune.so.
"""

import json
import math
import numbers
import os
import sys

__all__ = ["Emitter", "emit", "step", "eval", "final", "diverged", "default_emitter"]


def _clean(v):
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return v
    if isinstance(v, numbers.Integral):
        return int(v)
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _clean(x) for k, x in v.items()}
    try:
        f = float(v)
    except (TypeError, ValueError):
        return str(v)
    return f if math.isfinite(f) else None


class Emitter:
    """Writes protocol records to `stream` (a text file object), or to the file `path`
    (appended), or by default to $SCALETUNE_METRICS_FILE if set, else sys.stdout."""

    def __init__(self, stream=None, path=None):
        self._own = False
        if stream is None:
            path = path or os.environ.get("SCALETUNE_METRICS_FILE")
            if path:
                stream = open(path, "a", encoding="utf-8")
                self._own = True
        self._stream = stream

    def emit(self, event, **fields):
        """Writes {"event": event, **fields} as one line and flushes it."""
        rec = {"event": str(event)}
        rec.update({k: _clean(v) for k, v in fields.items()})
        line = json.dumps(rec, allow_nan=False, separators=(",", ":")) + "\n"
        out = self._stream if self._stream is not None else sys.stdout
        out.write(line)
        out.flush()
        return rec

    def step(self, step, loss, **metrics):
        """A training step. Returns True if loss is finite; otherwise it also writes a
        diverged record and returns False (stop training and exit 0, or exit 3)."""
        self.emit("step", step=int(step), loss=loss, **metrics)
        if _clean(loss) is None:
            self.diverged(step, "loss is %s" % float(loss))
            return False
        return True

    def eval(self, step, **metrics):
        """An evaluation, e.g. eval(s, val_loss=v)."""
        return self.emit("eval", step=int(step), **metrics)

    def final(self, **metrics):
        """The run's result: the sweep's objective and cost metric, ideally params and tokens."""
        return self.emit("final", **metrics)

    def diverged(self, step, reason="diverged"):
        """The run diverged (a hyperparameter failure, not retried by the runner)."""
        return self.emit("diverged", step=int(step), reason=str(reason))

    def close(self):
        if self._own and self._stream is not None:
            self._stream.close()
        self._stream = None
        self._own = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


_default = None


def default_emitter():
    """The module-level emitter, created on first use (so that $SCALETUNE_METRICS_FILE set
    before the first record is honoured)."""
    global _default
    if _default is None:
        _default = Emitter()
    return _default


def emit(event, **fields):
    return default_emitter().emit(event, **fields)


def step(step, loss, **metrics):
    return default_emitter().step(step, loss, **metrics)


def eval(step, **metrics):  # noqa: A001 -- the protocol's record name
    return default_emitter().eval(step, **metrics)


def final(**metrics):
    return default_emitter().final(**metrics)


def diverged(step, reason="diverged"):
    return default_emitter().diverged(step, reason)
