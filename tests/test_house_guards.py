"""Guards for moving files (issue 30, ../shared/docs/house.md "Traps"): what names the engine's files
by path or by module name in a string must keep finding what it names after a move, or fail.

- The kernel cache key (engine/_jitcache.py) covers every file holding compiled code: checked
  against the compiled functions the engine's modules really hold, not against the same regular
  expression.
- The warm-up's and the window's module lists name modules that exist and hold kernels
  ("engine.stepping.driver" would import as a package holding none, and the first-step stall would
  return without an error).
"""
from __future__ import annotations

import importlib
import os
import pkgutil
import shutil
import subprocess
import sys

import pytest

import engine
from engine import _jitcache, warmup
from engine.kernel.layout import Kernel
from numba.core.registry import CPUDispatcher

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OPTIONAL = {"mujoco"}          # modules of the engine that import an optional package at their top


def _engine_modules():
    mods = []
    for info in pkgutil.walk_packages(engine.__path__, "engine."):
        try:
            mods.append(importlib.import_module(info.name))
        except ImportError as e:         # only an optional dependency may be missing
            if getattr(e, "name", None) not in OPTIONAL:
                raise
    return mods


def _compiled_files():
    """{source file: [function names]} of every compiled function (numba dispatcher or lazily
    prepared Kernel) that an engine module holds at its top level."""
    out = {}
    for mod in _engine_modules():
        for name, obj in vars(mod).items():
            if isinstance(obj, (CPUDispatcher, Kernel)):
                f = os.path.realpath(obj.py_func.__code__.co_filename)
                out.setdefault(f, []).append(f"{mod.__name__}.{name}")
    return out


def test_the_cache_key_covers_every_file_with_compiled_code():
    keyed = {os.path.realpath(p) for p in _jitcache.kernel_files()}
    held = _compiled_files()
    assert len(held) >= 15, f"the walk found too few compiled files to prove anything: {sorted(held)}"
    missing = {f: names[:3] for f, names in held.items() if f not in keyed}
    assert not missing, f"files with compiled code left out of the kernel cache key: {missing}"
    # the key also covers the compiler patches and the record layouts the kernels read
    names = {os.path.basename(p) for p in keyed}
    assert {"_inliner.py", "_latelink.py", "layout.py"} <= names


def test_the_cache_key_follows_a_moved_or_added_kernel_file(tmp_path):
    """On a copy of the engine: moving a kernel file into a subfolder keeps it in the key, and a new
    file with a kernel enters it; an edit to a file without compiled code does not rekey."""
    src = os.path.dirname(_jitcache.__file__)
    copy = tmp_path / "engine"
    shutil.copytree(src, copy, ignore=shutil.ignore_patterns("__pycache__"))
    before = {p.relative_to(copy).as_posix() for p in _jitcache.kernel_files(copy)}
    assert "stepping/steploop.py" in before and "algorithms/aba.py" in before
    (copy / "stepping_moved").mkdir()
    (copy / "stepping" / "steploop.py").rename(copy / "stepping_moved" / "steploop.py")
    (copy / "collide.py").write_text("from engine.kernel.layout import njit\n\n\n@njit(cache=True)\ndef f(x):\n    return x\n")
    (copy / "notes.py").write_text("# mentions njit in a comment only\nX = 1\n")
    after = {p.relative_to(copy).as_posix() for p in _jitcache.kernel_files(copy)}
    assert after == (before - {"stepping/steploop.py"}) | {"stepping_moved/steploop.py", "collide.py"}


def _module_kernels(name):
    mod = importlib.import_module(name)
    return {k for k, v in vars(mod).items() if isinstance(v, Kernel)}


def test_warmup_module_lists_name_modules_that_hold_kernels():
    from app import gui
    lists = {"APP_MODULES": warmup.APP_MODULES, "KERNEL_MODULES": warmup.KERNEL_MODULES,
             "TASKS": [t for t in warmup.TASKS if t.startswith("engine.")],
             "PYTHON_STEP_TASKS": [t for t in warmup.PYTHON_STEP_TASKS if t.startswith("engine.")],
             "gui.ENGINE_MODULES": gui.ENGINE_MODULES,
             "gui.PYTHON_STEP_TASKS": [t for t in gui.PYTHON_STEP_TASKS if t.startswith("engine.")],
             "app_tasks": [t for t in warmup.app_tasks() if t.startswith("engine.")]}
    for where, names in lists.items():
        assert names, f"{where} is empty"
        for task in names:
            module, _, only = task.partition(":")
            kernels = _module_kernels(module)
            assert kernels, f"{where}: {module} holds no kernel with a signature"
            assert not only or only in kernels, f"{where}: {module} has no kernel {only!r}"
    # every module that holds a kernel with a signature is prepared by the warm-up
    holding = {m.__name__ for m in _engine_modules() if any(isinstance(v, Kernel) and v.py_func.__module__ == m.__name__
                                                            for v in vars(m).values())}
    assert holding and holding <= set(warmup.KERNEL_MODULES), sorted(holding - set(warmup.KERNEL_MODULES))


def test_simulation_modules_reach_cached_kernels():
    """load_cached's modules hold dispatchers typed at their first call (what it loads)."""
    for name in warmup.SIMULATION_MODULES:
        mod = importlib.import_module(name)
        lazy = [k for k, v in vars(mod).items() if isinstance(v, CPUDispatcher) and not isinstance(v, Kernel)]
        assert lazy, f"SIMULATION_MODULES: {name} holds no kernel typed at its first call"
    # the entry points of the simulation's compiled steps are among them (their first call would
    # otherwise load them in the middle of a run)
    held = {v.py_func.__name__ for name in warmup.SIMULATION_MODULES
            for v in vars(importlib.import_module(name)).values() if isinstance(v, CPUDispatcher)}
    assert {"advance", "advance_limited", "contact_advance"} <= held, sorted(held)


def test_prepare_refuses_a_name_that_holds_no_kernel():
    with pytest.raises(LookupError, match="engine.errors"):
        warmup.prepare(modules=("engine.errors",))
    with pytest.raises(LookupError, match="no_such_kernel"):
        warmup.prepare(modules=("engine.algorithms.aba:no_such_kernel",))
    with pytest.raises(ModuleNotFoundError):
        warmup.prepare(modules=("engine.no_such_module",))


def test_the_app_finds_the_same_cache_directory_without_importing_the_engine():
    """app/gui.py reads engine/_jitcache.py by path (the window must not import the engine to know
    whether the kernels are warm): it must still find it and agree with the engine."""
    code = ("import sys; from app import gui; d = gui._kernel_cache_dir(); "
            "assert 'engine' not in sys.modules, 'the probe imported the engine'; print(d)")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["PYTHONPATH"] = ROOT
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == _jitcache.cache_dir()
