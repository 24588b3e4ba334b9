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
from pathlib import Path

import numba


# the files that define compiled code or the record layouts it reads
KERNEL_SOURCES = ("_inliner.py", "spatial.py", "joints.py", "layout.py", "algorithms/*.py", "steploop.py", "loopkernels.py",
                  "poses.py", "batch.py", "contactkernels.py", "collision/*.py")


# written into the cache directory by engine.warmup once every kernel is in it (app/gui.py reads it
# without importing the engine, under the same name)
WARM_MARKER = "warmed-up"


def _source_hash():
    root = Path(__file__).resolve().parent
    h = hashlib.sha1(numba.__version__.encode())
    files = sorted({p for pattern in KERNEL_SOURCES for p in root.glob(pattern)})
    for p in files:
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
