"""stutil.py -- what the Python tests share: the repository root, the build directory the
library and programs come from ($SCALETUNE_BUILD, set by tests/python/test_python_run.c;
default build/), an environment for tools that must not inherit the sanitizer preload, and
whether the run should be small ($ST_TEST_QUICK)."""

import os
import shutil
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
BUILD = os.environ.get("SCALETUNE_BUILD") or os.path.join(ROOT, "build")
QUICK = bool(os.environ.get("ST_TEST_QUICK"))
CLI = os.path.join(BUILD, "scaletune")

sys.path.insert(0, os.path.join(ROOT, "bindings", "python"))
if "SCALETUNE_LIB" not in os.environ:
    os.environ["SCALETUNE_LIB"] = os.path.join(BUILD, "libscaletune.so")


def tool_env(**extra):
    """The environment for compilers, make and the CLI: without the sanitizer LD_PRELOAD that
    python3 needs in sanitizer builds."""
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env.update(extra)
    return env


def python_env(**extra):
    """The environment for a child python3 that loads the library (keeps the preload)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.join(ROOT, "bindings", "python")] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    )
    env.update(extra)
    return env


def sanitized():
    return bool(os.environ.get("SCALETUNE_PRELOAD"))


def run(args, env=None, cwd=None, check=True, timeout=120):
    r = subprocess.run(args, env=env or tool_env(), cwd=cwd or ROOT, capture_output=True, text=True,
                       timeout=timeout)
    if check and r.returncode != 0:
        raise AssertionError("%s exited %d\nstdout:\n%s\nstderr:\n%s" % (
            " ".join(args), r.returncode, r.stdout[-3000:], r.stderr[-3000:]))
    return r


def have(tool):
    return shutil.which(tool) is not None
