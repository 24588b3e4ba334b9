"""engine/_latelink.py links a large callee's module after the caller's module passes: the callee's
code inside the caller is then exactly the callee's own optimised code (not optimised a second
time), a small callee is still inlined, the caller computes the same bits as without the patch, and
the patch guards itself (another numba, a changed finalize, the switches)."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# a callee well over LARGE instructions (120 distinct, unrolled dependent updates per element), a
# small one and their caller; compiled fresh (no cache) in a child process
KERNELS = r'''
import numpy as np
from numba import njit

LINES = "\n".join(f"        s = s * {1.0 + k * 1e-3!r} + np.sin(a[i] * {0.5 + k * 0.01!r}) / (1.0 + s * s)"
                  for k in range(120))
src = ("def big(a):\n    s = 0.0\n    for i in range(a.shape[0]):\n" + LINES + "\n    return s\n")
ns = {"np": np}
exec(src, ns)
big = njit(ns["big"])

@njit
def small(a):
    return a[0] * 2.0 + 1.0

@njit
def caller(a):
    return big(a) + small(a) + big(a[1:])
'''

CHILD = KERNELS + r'''
import sys
import engine
from engine import _latelink
from numba.core import codegen
seen = {}            # library name -> was big's body in the module while its module passes ran
optimise = codegen.CPUCodeLibrary._optimize_final_module

def watched(self):
    if self.name.endswith("caller"):
        name = big.overloads[big.signatures[0]].fndesc.mangled_name
        fns = {f.name: f for f in self._final_module.functions}
        seen[self.name] = name in fns and not fns[name].is_declaration
    optimise(self)

codegen.CPUCodeLibrary._optimize_final_module = watched
a = np.linspace(-1.0, 2.0, 17)
r = caller(a)
print("OPTIMISED_WITH_BIG", any(seen.values()), len(seen))
print("PATCHED", _latelink.applied(), _latelink.STATS["late"])
print("RESULT", r.hex())
if _latelink.applied():
    lib = caller.overloads[caller.signatures[0]].library
    big_lib = big.overloads[big.signatures[0]].library
    name = big.overloads[big.signatures[0]].fndesc.mangled_name
    small_name = small.overloads[small.signatures[0]].fndesc.mangled_name
    mine = lib._final_module.get_function(name)
    own = big_lib._final_module.get_function(name)
    body = lambda fn: [str(i) for b in fn.blocks for i in b.instructions]
    print("SAME_BODY", body(mine) == body(own), len(body(own)))
    caller_name = caller.overloads[caller.signatures[0]].fndesc.mangled_name
    text = str(lib._final_module.get_function(caller_name))
    print("CALLS_BIG", name in text)
    print("SMALL_INLINED", small_name not in text)
'''


def _run(tmp_path, late):
    env = dict(os.environ, PYTHONPATH=ROOT, JOINTLAB_LATE_LINK=str(late),
               JOINTLAB_CACHE_DIR=str(tmp_path / f"cache{late}"))
    env.pop("NUMBA_CACHE_DIR", None)
    r = subprocess.run([sys.executable, "-c", CHILD], cwd=str(tmp_path), env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return dict(line.split(" ", 1) for line in r.stdout.splitlines())


def test_a_large_callee_keeps_its_own_code_and_the_caller_the_same_result(tmp_path):
    from engine import _latelink
    if _latelink.why_not() not in (None, "JOINTLAB_LATE_LINK=0"):
        pytest.skip(f"the patch does not apply here: {_latelink.why_not()}")
    on, off = _run(tmp_path, 1), _run(tmp_path, 0)
    assert on["PATCHED"].startswith("True") and int(on["PATCHED"].split()[1]) >= 1
    assert off["PATCHED"].startswith("False")
    # the callee inside the caller is the callee's own optimised code, instruction for instruction
    same, n = on["SAME_BODY"].split()
    assert same == "True" and int(n) > _latelink.LARGE
    assert on["CALLS_BIG"] == "True"            # called, not inlined (LLVM would not inline it either)
    assert on["SMALL_INLINED"] == "True"        # small callees are still linked first and inlined
    assert on["RESULT"] == off["RESULT"]        # the same bits
    # the difference: without the patch the caller's module passes ran over big's body again
    assert on["OPTIMISED_WITH_BIG"] == "False 1" and off["OPTIMISED_WITH_BIG"] == "True 1"


def test_the_patch_refuses_another_numba_or_changed_source(monkeypatch):
    from engine import _latelink
    import numba
    monkeypatch.setattr(numba, "__version__", "0.0.1")
    assert "numba 0.0.1" in _latelink.why_not()
    monkeypatch.undo()
    monkeypatch.setattr(_latelink, "SOURCE_HASH", "0" * 16)
    if (numba.__version__ == _latelink.NUMBA_VERSION and os.environ.get("JOINTLAB_NUMBA_PATCH", "1") != "0"
            and os.environ.get("JOINTLAB_LATE_LINK", "1") != "0"):
        assert "CPUCodeLibrary.finalize differs" in _latelink.why_not()
    monkeypatch.setenv("JOINTLAB_LATE_LINK", "0")
    assert _latelink.why_not() == "JOINTLAB_LATE_LINK=0"
    monkeypatch.setenv("JOINTLAB_NUMBA_PATCH", "0")
    assert _latelink.why_not() == "JOINTLAB_NUMBA_PATCH=0"


def test_the_patch_is_installed_where_it_applies():
    from engine import _latelink
    from numba.core import codegen
    if _latelink.why_not() is None:
        assert _latelink.applied() and codegen.CPUCodeLibrary.finalize is _latelink._finalize
    else:
        assert codegen.CPUCodeLibrary.finalize is _latelink._ORIGINAL
