"""engine/_inliner.py, the faster numba IR inliner, produces the same compiled code as numba's own:
two fresh processes compile the same kernels from an empty cache, one with the patch and one
without (JOINTLAB_NUMBA_PATCH=0), and their optimised LLVM IR must be identical once the names of
variables, blocks and functions (which carry numba's per-process counters) are normalised. And the
patch guards itself: any other numba version or any change to the patched methods' source leaves
numba alone."""
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# kernels whose helpers are inlined at several call sites, nested (joint_calc, the spatial helpers)
DUMP = r"""
import sys
import engine
from engine import _inliner
from engine.algorithms import frames, liegroup
print("PATCHED", _inliner.applied())
for k in (liegroup.integrate, frames.frame_kinematics):
    k._prepare()
    for sig, text in k.inspect_llvm().items():
        print("KERNEL", k.py_func.__name__)
        print(text)
"""

_NAME = re.compile(r'(%|@|!)("[^"]*"|[-A-Za-z$._][-A-Za-z$._0-9]*|[0-9]+)')
_MANGLED = re.compile(r"_ZN[0-9A-Za-z_$.]+")      # numba's mangled names (they carry a per-process id)
_LABEL = re.compile(r"^([-A-Za-z$._0-9]+):")       # a basic block's label where it is defined
_MESSAGE = re.compile(r'\[\d+ x i8\] c"missing Environment')   # its length is that of a mangled name


def normalised(text):
    """LLVM IR with every name (local, global, metadata, block label, mangled function name)
    replaced by its order of first appearance, the module's header lines (ids, paths) dropped."""
    names = {}

    def rename(key, prefix):
        if key not in names:
            names[key] = f"{prefix}N{len(names)}"
        return names[key]
    lines = []
    for line in text.splitlines():
        if line.startswith(("; ModuleID", "source_filename", "target ", "PATCHED")):
            continue
        line = _MESSAGE.sub('[_ x i8] c"missing Environment', line)
        line = _MANGLED.sub(lambda m: rename(m.group(0), "Z"), line)
        line = _LABEL.sub(lambda m: rename("%" + m.group(1), "%")[1:] + ":", line)
        line = line.split(";", 1)[0].rstrip() if "; preds" in line else line
        lines.append(_NAME.sub(lambda m: rename(m.group(0), m.group(1)), line))
    return lines


def _dump(tmp_path, patch):
    env = dict(os.environ, PYTHONPATH=ROOT, JOINTLAB_CACHE_DIR=str(tmp_path / f"cache{patch}"),
               JOINTLAB_NUMBA_PATCH=str(patch), JOINTLAB_LATE_LINK="0")     # the inliner alone
    env.pop("NUMBA_CACHE_DIR", None)
    return subprocess.Popen([sys.executable, "-c", DUMP], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_the_patched_inliner_compiles_the_same_code(tmp_path):
    from engine import _inliner
    if _inliner.why_not() not in (None, "JOINTLAB_NUMBA_PATCH=0"):
        pytest.skip(f"the patch does not apply here: {_inliner.why_not()}")
    runs = [_dump(tmp_path, 1), _dump(tmp_path, 0)]
    out = []
    for p in runs:
        stdout, stderr = p.communicate(timeout=1800)
        assert p.returncode == 0, stderr[-3000:]
        out.append(stdout)
    assert "PATCHED True" in out[0] and "PATCHED False" in out[1]
    a, b = normalised(out[0]), normalised(out[1])
    assert sum(line.startswith("KERNEL") for line in a) == 2
    assert len(a) > 1000
    diff = [(i, x, y) for i, (x, y) in enumerate(zip(a, b)) if x != y]
    assert len(a) == len(b) and not diff, f"{len(a)} vs {len(b)} lines; first differences: {diff[:5]}"


def test_the_patch_refuses_another_numba_or_changed_source(monkeypatch):
    from engine import _inliner
    import numba
    monkeypatch.setattr(numba, "__version__", "0.0.1")
    assert "numba 0.0.1" in _inliner.why_not()
    monkeypatch.undo()
    monkeypatch.setitem(_inliner.SOURCE_HASHES, "inline_ir", "0" * 16)
    if numba.__version__ == _inliner.NUMBA_VERSION and os.environ.get("JOINTLAB_NUMBA_PATCH", "1") != "0":
        assert "InlineWorker.inline_ir differs" in _inliner.why_not()
    monkeypatch.setenv("JOINTLAB_NUMBA_PATCH", "0")
    assert _inliner.why_not() == "JOINTLAB_NUMBA_PATCH=0"


def test_the_patch_is_installed_where_it_applies():
    from engine import _inliner
    from numba.core import inline_closurecall as icc
    if _inliner.why_not() is None:
        assert _inliner.applied() and icc.InlineWorker.inline_ir is _inliner._inline_ir
    else:
        assert icc.InlineWorker.inline_ir is _inliner._ORIGINAL["inline_ir"]
