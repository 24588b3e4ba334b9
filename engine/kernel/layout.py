"""The kernels' calling convention, in one place: the packed record layouts the compiled kernels
read (the model, one row per body, row 0 the ground; the per-algorithm workspace, one row per
body), the numba types of their arguments, the status codes they return, and ``kernel``, the
decorator of the entry points Python calls. Kept apart from ``model.py`` so that the kernel cache
(``_jitcache.py``) is keyed by what the kernels actually read, not by the Python side of the model.

Python side: a wrapper hands ``model._mb`` (the model's bytes), a workspace's bytes and its arrays to
one entry point and turns a non-zero status into the exception it stands for (``engine.algorithms.api._raise``
for the dynamics' codes; the step loop, loops and contact callers handle their own codes below).
"""
from __future__ import annotations

import numpy as np
import numba
from numba import types
from numba.core.compiler_lock import global_compiler_lock
from numba.core.registry import CPUDispatcher

MODEL_DTYPE = np.dtype([
    ("parent", np.int64), ("code", np.int64), ("iq", np.int64), ("iv", np.int64),
    ("nq", np.int64), ("nv", np.int64),
    ("R", np.float64, (3, 3)), ("p", np.float64, (3,)),        # joint placement in the parent body
    ("a1", np.float64, (3,)), ("a2", np.float64, (3,)), ("a3", np.float64, (3,)),
    ("pitch", np.float64),
    ("axis", np.int64),     # k when the joint is revolute about +-e_k with an unrotated placement, else -1
    ("I", np.float64, (6, 6)),                                   # generalized inertia, body frame
    ("mass", np.float64), ("com", np.float64, (3,)),
    ("armature", np.float64, (6,)), ("damping", np.float64, (6,)),
    ("g", np.float64, (6,)),                                     # row 0 only: dV_0 = (0, -gravity)
], align=True)

WS_DTYPE = np.dtype([
    ("R", np.float64, (3, 3)), ("p", np.float64, (3,)),        # T_i = T_{lambda(i), i}(q)
    ("RJ", np.float64, (3, 3)), ("pJ", np.float64, (3,)),      # joint motion X_J(q)
    ("Rw", np.float64, (3, 3)), ("pw", np.float64, (3,)),      # pose in the world
    ("S", np.float64, (6, 6)), ("dS", np.float64, (6, 6)),     # S_i (cols 0..nv-1) and dS_i/dt
    ("c", np.float64, (6,)), ("Sv", np.float64, (6,)),         # dS_i dq_i and S_i dq_i
    ("V", np.float64, (6,)), ("dV", np.float64, (6,)), ("eta", np.float64, (6,)),
    ("F", np.float64, (6,)), ("fext", np.float64, (6,)),
    ("Ih", np.float64, (6, 6)), ("Bh", np.float64, (6,)),
    ("Pi", np.float64, (6, 6)), ("beta", np.float64, (6,)),
    ("U", np.float64, (6, 6)), ("Dinv", np.float64, (6, 6)), ("u", np.float64, (6,)),
    ("X", np.float64, (6, 6)), ("tmp", np.float64, (6, 6)),
], align=True)


# ------------------------------------------------------------------ argument types
# the model and workspaces cross into the kernels as bytes and are viewed back as records inside;
# every other argument is a C-contiguous writable array
MODEL_T = types.Array(types.uint8, 1, "C")   # the model: never written by a kernel
WS_T = types.Array(types.uint8, 1, "C")
VEC_T = types.Array(types.float64, 1, "C")
MAT_T = types.Array(types.float64, 2, "C")
ARR3_T = types.Array(types.float64, 3, "C")
ARR4_T = types.Array(types.float64, 4, "C")
ARR5_T = types.Array(types.float64, 5, "C")
BOOL_T = types.Array(types.boolean, 1, "C")
BOOL2_T = types.Array(types.boolean, 2, "C")
INT_T = types.Array(types.int64, 1, "C")
IMAT_T = types.Array(types.int64, 2, "C")
STATUS = types.int64
# floating-point contraction (FMA) and reassociation: results change in the last bits only. NaN and
# Inf semantics are kept (no "nnan"/"ninf"), so the kernels' finiteness checks stay valid.
FASTMATH = {"contract", "reassoc", "nsz", "arcp"}

# ------------------------------------------------------------------ status codes
OK = 0
OVERFLOW = 1             # the inputs were finite but the result is not (a number overflowed inside)
# an argument's fault: ARG * k + one of these, k the argument's place among the kernel's checked
# vectors (1 = q; engine.algorithms.api._raise names it from the wrapper's list of names)
ARG = 10
BAD_LENGTH = 1           # argument k has the wrong length
NOT_FINITE = 2           # argument k holds NaN or Inf
SPLIT_JOINT = 3          # argument k (a prescription mask) splits a multi-dof joint
# -i (negative): the articulated inertia of body i's joint is singular
# the step loop (engine.stepping.steploop), besides the dynamics' codes, returned as they are
DIVERGED = 1000          # q, v or a left the bounded finite range; the state is that step's start
PYTHON_STEP = 1001       # this step needs the Python path (rank-deficient or degenerate loop rows, or the
                         # loops drifted past the tolerance): not taken, the state is its start
UNILATERAL_STEP = 1002   # a joint limit is near or would be passed: the step is not taken, the state is its start
# closed loops (engine.loops.kernels)
COINCIDENT = 2001        # a distance constraint's two points coincide
FLAT_DISK = 2002         # a rolling disk lies flat
RANK_DEFICIENT = 2003    # K is rank deficient: use the rank-revealing path
NOT_PROJECTED = 2004     # project_into declines: engine.loops.constrained.project_constraints must do it (and warn)
# contact (engine.contact.step)
SINGULAR = 3001          # M_ff not positive definite (the Python step names the joint)


def argument_status(k, kind):
    """The status of argument k's fault `kind` (BAD_LENGTH, NOT_FINITE, SPLIT_JOINT)."""
    return ARG * k + kind


def argument_fault(st):
    """(k, kind) of an argument status ARG * k + kind, or None for any other status."""
    if ARG <= st < DIVERGED:
        return divmod(st, ARG)
    return None


# ------------------------------------------------------------------ compile options
# Compiled code runs without numba's reference counting (NRT) unless it asks for it: every array
# view made inside a kernel (a record's nested array, a row of a table) would otherwise be paired
# with an incref and a decref, calls into the runtime with an atomic operation each, which took
# 30 % of the forward-dynamics derivatives on a 7-joint arm and 35-45 % of an RK4 step. The
# arrays a kernel touches belong to its Python caller, so nothing needs counting. Two rules keep
# that safe:
#   - a function that allocates (np.empty, a matrix product, ...) says ``njit(..., _nrt=True)``;
#     numba refuses to compile an allocation without it ("NRT required but not enabled");
#   - a function without it never returns an array to its caller (a counting caller would release
#     a reference it was never given); helpers that return views are inline="always", compiled in
#     each caller's own mode (rnea_deriv.work_views, loopkernels.loop_views).
# tests/test_refcount.py runs every path with numba's allocation statistics on.
NO_REFCOUNT = {"_nrt": False}


def njit(*args, **options):
    """numba.njit with the engine's default options (NO_REFCOUNT): ``@njit(cache=True, ...)``."""
    for key, value in NO_REFCOUNT.items():
        options.setdefault(key, value)
    return numba.njit(*args, **options)


# ------------------------------------------------------------------ entry points
class Kernel(CPUDispatcher):
    """A compiled entry point with one explicit signature, prepared at its first call instead of at
    import: the first call (from Python, or another kernel being typed) compiles the signature or
    loads it from the cache, then closes the kernel to every other signature. So it behaves as
    ``njit(signature)`` (an argument of another type raises TypeError, which the wrappers' slow path
    converts) while ``import engine`` loads none of the kernels a session does not use."""

    def _prepare(self):
        with global_compiler_lock:      # numba's own (re-entrant) lock: no second lock to order
            sig = self._pending
            if sig is not None:
                self.compile(sig)
                self.disable_compile()
                self._pending = None

    def _compile_for_args(self, *args, **kws):
        if self._pending is None:
            return super()._compile_for_args(*args, **kws)
        self._prepare()
        return self      # numba calls what this returns with the arguments: now the compiled signature or TypeError

    def get_call_template(self, args, kws):
        if self._pending is not None:
            self._prepare()
        return super().get_call_template(args, kws)


def kernel(signature, cache=True, **options):
    """Decorator of the kernels Python calls: ``@kernel(STATUS(MODEL_T, ...), fastmath=FASTMATH)``,
    a lazily prepared ``njit(signature)`` (see Kernel)."""
    def wrap(fn):
        target = dict(NO_REFCOUNT, **options, nopython=True, boundscheck=None)
        disp = Kernel(py_func=fn, locals={}, targetoptions=target)
        if cache:
            disp.enable_caching()
        disp._pending = signature
        return disp
    return wrap
