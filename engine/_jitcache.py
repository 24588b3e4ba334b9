"""Where the compiled kernels are cached, keyed by the engine's source.

numba re-validates a cached function only against its own file, so a kernel that inlines a helper
from another file (``spatial.py``, ``joints.py``) would keep running stale code after that helper
changed. Keying the cache directory by a hash of the engine's kernel sources makes any edit there
start a fresh cache, while an unchanged engine loads its kernels without compiling (a warm start).
Override the location with JOINTLAB_CACHE_DIR.
"""
from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import numba


# The cache key covers every file of the engine that defines compiled code (a numba decorator at the
# start of a line: @njit, @kernel, @numba.jit, @cfunc, @overload..., in any subfolder), found by
# reading the sources, so that a file moved or added is never left out of the key (a helper left out
# would keep running stale compiled code after an edit). Always in it: the compiler patches and the
# record layouts the kernels read. tests/test_house_guards.py checks the list against every compiled
# function the engine's modules hold.
ALWAYS_KEYED = ("_inliner.py", "_latelink.py", "kernel/layout.py")
_COMPILED = re.compile(rb"^[ \t]*@(?:numba\.)?(?:njit|jit|kernel|cfunc|overload\w*|generated_jit|vectorize|guvectorize)\b",
                       re.MULTILINE)


def kernel_files(root=None):
    """The engine's files that define compiled code (sorted paths), plus ALWAYS_KEYED."""
    root = Path(root) if root is not None else Path(__file__).resolve().parent
    out = []
    for p in sorted(root.rglob("*.py")):
        if p.relative_to(root).as_posix() in ALWAYS_KEYED or _COMPILED.search(p.read_bytes()):
            out.append(p)
    return out


# written into the cache directory by engine.warmup once every kernel is in it (app/gui.py reads it
# without importing the engine, under the same name)
WARM_MARKER = "warmed-up"


def _source_hash():
    root = Path(__file__).resolve().parent
    h = hashlib.sha1(numba.__version__.encode())
    for p in kernel_files(root):
        h.update(str(p.relative_to(root)).encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


def cache_dir():
    base = os.environ.get("JOINTLAB_CACHE_DIR")
    if not base:
        xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        base = os.path.join(xdg, "jointlab", "numba")
    return os.path.join(base, _source_hash())


def configure():
    """Point numba's cache at this engine version's directory (before any kernel is defined)."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return  # the user chose a location explicitly
    path = cache_dir()
    try:
        os.makedirs(path, exist_ok=True)
    except OSError:
        return  # unwritable: numba falls back to its own locations
    numba.config.CACHE_DIR = path


configure()
