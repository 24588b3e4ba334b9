"""The per-call API over a leading axis of N states, on every core.

    A = engine.batch.forward_dynamics(model, Q, V, TAU)        # (N, nv)
    TAU = engine.batch.inverse_dynamics(model, Q, V, A)        # (N, nv)
    M = engine.batch.mass_matrix(model, Q)                     # (N, nv, nv)
    Q, V = engine.batch.rollout(model, q0s, v0s, taus, dt)     # (N, steps + 1, nq), (N, steps + 1, nv)

Each row is computed by the same compiled kernel as the per-call function, so the results are equal
to ``engine.forward_dynamics`` (and the others) row by row. The rows are split into one contiguous
chunk per thread; each chunk is one call of a compiled chunk kernel that releases the GIL
(``nogil``) and has its own workspace, so nothing is shared between threads and the model is never
written. The calling thread computes the first chunk, a pool of worker threads the others.
``threads=None`` uses every core numba has (``NUMBA_NUM_THREADS``, by default the machine's cores),
an integer caps it (1 runs on the calling thread alone).

Plain threads rather than numba's ``parallel=True``: a ``prange`` kernel is compiled once more as a
parallel ufunc with every kernel it calls linked in again (about 110 s of the cold compile), and
loads a threading layer; a chunk kernel is an ordinary one.

``rollout`` advances N initial states by ``steps`` steps of ``dt`` with the compiled step loop
(``engine.stepping.steploop``: the Simulator's integrators and joint damping, every joint torque-driven):
``taus`` is (N, steps, nv), or (steps, nv) shared by all rollouts. Row 0 of each trajectory is the
initial state, row k the state after k steps.

Errors name the row and the argument. Bad input (a wrong shape, NaN or Inf, a zero quaternion of a
ball or free joint in one row) raises InputError before anything is computed: "Q: row 2: the
quaternion ... of free joint 'root' ... is zero". A row whose result overflows (NumericalOverflow)
or meets a singular articulated inertia (SingularInertiaError) raises that error with "row i: " in
front of its message; the exception also carries ``rows`` (every failing row), ``row`` (the first)
and ``result`` (the whole output, NaN in the failing rows, the other rows computed). A rollout that
diverges in some rows raises ``engine.RolloutDiverged`` (a SimulationDiverged) once every row has
run: its ``rows`` are the diverged rows, its ``Q`` and ``V`` every row's trajectory (a diverged row
up to its last good state, NaN after).
"""
from __future__ import annotations

import threading
import warnings
from concurrent.futures import ThreadPoolExecutor, wait

import numba
import numpy as np
from engine.kernel.layout import njit

from engine.algorithms.aba import aba
from engine.algorithms.crba import crba
from engine.algorithms.rnea import rnea
from engine.errors import InputError, SingularInertiaError, NumericalOverflow, RolloutDiverged
from engine.multibody.model import WS_DTYPE
from engine.stepping.steploop import advance, NPARAMS
from engine.loops.kernels import NI, NF
from engine.stepping.driver import INTEGRATOR_CODES


# the chunk kernels: rows start..end-1, one workspace of their own, the GIL released
@njit(nogil=True, cache=True, _nrt=True)
def _forward_dynamics(m_bytes, wsize, Q, V, TAU, OUT, start, end, status):
    ws = np.zeros(wsize, dtype=np.uint8)
    for i in range(start, end):
        status[i] = aba(m_bytes, ws, Q[i], V[i], TAU[i], OUT[i])


@njit(nogil=True, cache=True, _nrt=True)
def _inverse_dynamics(m_bytes, wsize, Q, V, A, OUT, start, end, status):
    ws = np.zeros(wsize, dtype=np.uint8)
    for i in range(start, end):
        status[i] = rnea(m_bytes, ws, Q[i], V[i], A[i], OUT[i])


@njit(nogil=True, cache=True, _nrt=True)
def _mass_matrix(m_bytes, wsize, Q, OUT, start, end, status):
    ws = np.zeros(wsize, dtype=np.uint8)
    for i in range(start, end):
        status[i] = crba(m_bytes, ws, Q[i], OUT[i])


@njit(nogil=True, cache=True, _nrt=True)
def _rollout(m_bytes, wsize, Q, V, TAUS, shared, dt, integrator, damping, bad, start, end, status):
    steps = Q.shape[1] - 1
    nq = Q.shape[2]
    nv = V.shape[2]
    ws = np.zeros(wsize, dtype=np.uint8)
    ws_g = np.zeros(wsize, dtype=np.uint8)
    prescribed = np.zeros(nv, dtype=np.bool_)
    code = np.zeros(nv, dtype=np.int64)
    params = np.zeros((nv, NPARAMS))
    zero = np.zeros(nv)
    q = np.empty(nq)
    v = np.empty(nv)
    tv = np.zeros(2)
    a_out = np.empty(nv)
    tau_out = np.empty(nv)
    q_prev = np.empty(nq)
    v_prev = np.empty(nv)
    rec_a = np.empty((steps, nv))
    rec_tau = np.empty((steps, nv))
    rec_t = np.empty(steps + 1)
    done = np.zeros(1, dtype=np.int64)
    ci = np.zeros((0, NI), dtype=np.int64)
    cf = np.zeros((0, NF))
    gains = np.zeros(4)
    lam = np.zeros(0)
    energy = np.zeros(3)      # (work, dissipated, external work): not reported by rollouts
    proj = np.zeros(4)        # loop projections: none (no loops here)
    for i in range(start, end):
        for k in range(nq):
            q[k] = Q[i, 0, k]
        for k in range(nv):
            v[k] = V[i, 0, k]
        tv[0] = 0.0
        seq = TAUS[0] if shared else TAUS[i]
        st = advance(m_bytes, ws, ws_g, q, v, tv, dt, steps, integrator, prescribed, code, params, q,
                     damping, zero, zero, seq, a_out, tau_out, q_prev, v_prev, bad[i], rec_t, Q[i], V[i],
                     rec_a, rec_tau, done, ws_g, ci, cf, gains, lam, energy, proj)
        status[i] = st
        n = done[0]
        for k in range(nq):
            Q[i, n, k] = q[k]
        for k in range(nv):
            V[i, n, k] = v[k]
        for r in range(n + 1, steps + 1):
            for k in range(nq):
                Q[i, r, k] = np.nan
            for k in range(nv):
                V[i, r, k] = np.nan


# ------------------------------------------------------------------ Python side
def _threads(threads, N):
    top = numba.config.NUMBA_NUM_THREADS
    if threads is None:
        k = top
    else:
        k = int(threads)
        if k < 1:
            raise InputError(f"threads: expected a positive number of threads or None, got {threads!r}", "threads")
        k = min(k, top)
    return max(1, min(k, N))


def _stack(x, name, n, what="states"):
    try:
        a = np.ascontiguousarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(f"{name}: expected an (N, {n}) array of numbers, got {type(x).__name__}", name) from None
    if a.ndim != 2 or a.shape[1] != n:
        raise InputError(f"{name}: expected an (N, {n}) array ({what} in rows), got shape {a.shape}", name)
    bad = ~np.isfinite(a)
    if bad.any():
        i, k = np.argwhere(bad)[0]
        raise InputError(f"{name}: holds NaN or Inf (first at row {i}, column {k})", name)
    return a


def _same_rows(name, a, N):
    if a.shape[0] != N:
        raise InputError(f"{name}: expected {N} rows (one per state), got {a.shape[0]}", name)


def _quaternions(model, Q, name):
    """InputError naming the row, the argument and the joint when the quaternion of a ball or free
    joint in a row of Q is zero (or its squared norm underflows): the kernels would divide by zero
    (the per-call functions' test, engine.algorithms.api._zero_quaternion, over every row at once)."""
    for j in model.joints:
        if j.kind not in ("spherical", "free"):
            continue
        k = j.idx_q + (3 if j.kind == "free" else 0)
        x = Q[:, k:k + 4]
        bad = np.flatnonzero(~(np.einsum("ij,ij->i", x, x) > 0.0))
        if bad.size:
            raise InputError(f"{name}: row {int(bad[0])}: the quaternion (w, x, y, z) of {j.kind} joint "
                             f"'{j.name}' (coordinates {k}..{k + 3}) is zero; a rotation needs a non-zero "
                             f"(unit) quaternion, e.g. from model.neutral()"
                             + (f" ({bad.size} rows: {_listing(bad)})" if bad.size > 1 else ""), name)


def _listing(rows, n=20):
    return ", ".join(str(int(r)) for r in rows[:n]) + (", ..." if len(rows) > n else "")


_pool = None
_pool_lock = threading.Lock()


def _workers():
    """The worker threads of every batch call (created at the first call that uses two threads)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=max(1, numba.config.NUMBA_NUM_THREADS - 1),
                                       thread_name_prefix="jointlab-batch")
        return _pool


def _run(kernel, model, threads, N, *args):
    """status (N,): kernel(model bytes, workspace size, *args, start, end, status) over rows
    start..end-1 of one chunk per thread, the first chunk on the calling thread."""
    status = np.zeros(N, dtype=np.int64)
    if N == 0:
        return status
    k = _threads(threads, N)
    wsize = (model.nbodies + 1) * WS_DTYPE.itemsize
    bounds = [c * N // k for c in range(k + 1)]
    futures = [_workers().submit(kernel, model._mb, wsize, *args, bounds[c], bounds[c + 1], status)
               for c in range(1, k)]
    try:
        kernel(model._mb, wsize, *args, bounds[0], bounds[1], status)
    except ZeroDivisionError:   # a quaternion _quaternions let through (not expected): still typed
        raise InputError("a quaternion of a ball or free joint in one of the rows is too small to "
                         "normalise", "Q") from None
    finally:
        wait(futures)           # no chunk may still write into the arrays when this returns or raises
    for f in futures:
        try:
            f.result()          # a chunk's exception is raised here
        except ZeroDivisionError:
            raise InputError("a quaternion of a ball or free joint in one of the rows is too small to "
                             "normalise", "Q") from None
    return status


def _check(model, status, names, arrays, function, out):
    """Raise the error of the first failing row (status != 0), its message led by "row i: "; the
    exception carries rows (every failing row), row (the first) and result (out, NaN in the
    failing rows: the others are computed)."""
    bad = np.flatnonzero(status)
    if not bad.size:
        return
    i = int(bad[0])
    st = int(status[i])
    out[bad] = np.nan
    from engine.algorithms.api import _raise
    try:
        if st < 0:
            raise SingularInertiaError(model.joints[-st - 1].name)
        _raise(model, st, names, [a[i] for a in arrays], function)
    except (InputError, NumericalOverflow, SingularInertiaError) as e:
        others = f" (failing rows: {_listing(bad)})" if bad.size > 1 else ""
        e.args = (f"row {i}{others}: {e}",)
        e.row, e.rows, e.result = i, bad.tolist(), out
        raise e from None


def forward_dynamics(model, Q, V, TAU, threads=None):
    """A[i] = engine.forward_dynamics(model, Q[i], V[i], TAU[i]) for every row i: (N, nv).
    Errors name the row and the argument (module docstring)."""
    Q = _stack(Q, "Q", model.nq)
    _quaternions(model, Q, "Q")
    N = Q.shape[0]
    V = _stack(V, "V", model.nv)
    TAU = _stack(TAU, "TAU", model.nv)
    _same_rows("V", V, N)
    _same_rows("TAU", TAU, N)
    out = np.empty((N, model.nv))
    st = _run(_forward_dynamics, model, threads, N, Q, V, TAU, out)
    _check(model, st, ("Q", "V", "TAU"), (Q, V, TAU), "batch.forward_dynamics", out)
    return out


def inverse_dynamics(model, Q, V, A, threads=None):
    """TAU[i] = engine.inverse_dynamics(model, Q[i], V[i], A[i]) for every row i: (N, nv).
    Errors name the row and the argument (module docstring)."""
    Q = _stack(Q, "Q", model.nq)
    _quaternions(model, Q, "Q")
    N = Q.shape[0]
    V = _stack(V, "V", model.nv)
    A = _stack(A, "A", model.nv)
    _same_rows("V", V, N)
    _same_rows("A", A, N)
    out = np.empty((N, model.nv))
    st = _run(_inverse_dynamics, model, threads, N, Q, V, A, out)
    _check(model, st, ("Q", "V", "A"), (Q, V, A), "batch.inverse_dynamics", out)
    return out


def mass_matrix(model, Q, threads=None):
    """M[i] = engine.mass_matrix(model, Q[i]) for every row i: (N, nv, nv).
    Errors name the row and the argument (module docstring)."""
    Q = _stack(Q, "Q", model.nq)
    _quaternions(model, Q, "Q")
    N = Q.shape[0]
    out = np.empty((N, model.nv, model.nv))
    st = _run(_mass_matrix, model, threads, N, Q, out)
    _check(model, st, ("Q",), (Q,), "batch.mass_matrix", out)
    return out


def _not_in_a_rollout(model):
    """What of the model a rollout does not simulate but the Simulator would by default."""
    from engine.simulation.settings import model_has_friction, model_has_limits
    out = []
    if model_has_limits(model):
        out.append("joint limits")
    if model_has_friction(model):
        out.append("joint friction")
    if getattr(model, "constraints", None):
        out.append("closed-loop constraints")
    return out


def rollout(model, q0s, v0s, taus, dt, integrator="rk4", threads=None):
    """(Q, V): N trajectories of `steps` steps of `dt` from (q0s[i], v0s[i]) under the torques
    taus[i] (N, steps, nv) or taus (steps, nv) for all; Q (N, steps + 1, nq), V (N, steps + 1, nv),
    row 0 the initial state. Equal to ``engine.Simulator(model, dt, integrator, q0, v0,
    joint_limits=False, joint_friction=False)`` stepped with ``tau_cmd`` = taus[i][k] at step k:
    joint limits, joint friction, ground contact and closed-loop constraints are not applied (use the
    Simulator for those). The Simulator applies a model's limits and friction by default, so for a
    model that has any a UserWarning names what the rollout leaves out.

    Rows are independent: a rollout that diverges stops at its last good state while the others run
    to the end; then ``engine.RolloutDiverged`` (a SimulationDiverged) is raised naming the diverged
    rows, with ``.rows`` and every row's trajectory in ``.Q`` and ``.V`` (a diverged row NaN after
    its last good state). Bad input is an InputError naming the argument and the row."""
    if integrator not in INTEGRATOR_CODES:
        raise InputError(f"integrator: expected one of {tuple(INTEGRATOR_CODES)}, got {integrator!r}", "integrator")
    dt = float(dt)
    if not (np.isfinite(dt) and dt > 0):
        raise InputError(f"dt: expected a positive time step, got {dt!r}", "dt")
    q0s = _stack(q0s, "q0s", model.nq)
    _quaternions(model, q0s, "q0s")
    N = q0s.shape[0]
    v0s = _stack(v0s, "v0s", model.nv)
    _same_rows("v0s", v0s, N)
    try:
        T = np.ascontiguousarray(taus, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError("taus: expected an (N, steps, nv) or (steps, nv) array of numbers", "taus") from None
    shared = T.ndim == 2
    if shared:
        T = T[None]
    if T.ndim != 3 or T.shape[2] != model.nv or (not shared and T.shape[0] != N):
        raise InputError(f"taus: expected ({N}, steps, {model.nv}) or (steps, {model.nv}), got shape "
                         f"{np.shape(taus)}", "taus")
    if not np.all(np.isfinite(T)):
        raise InputError("taus: holds NaN or Inf", "taus")
    steps = T.shape[1]
    left_out = _not_in_a_rollout(model)
    if left_out:
        warnings.warn(f"engine.batch.rollout: the {' and the '.join(left_out)} of model '{model.name}' are not "
                      f"simulated in a rollout (engine.Simulator(..., joint_limits=False, joint_friction=False) "
                      f"steps as it does; the Simulator's defaults apply them)", UserWarning, stacklevel=2)
    Q = np.empty((N, steps + 1, model.nq))
    V = np.empty((N, steps + 1, model.nv))
    Q[:, 0] = q0s
    V[:, 0] = v0s
    bad = np.zeros((N, model.nq + 4 * model.nv))
    st = _run(_rollout, model, threads, N, Q, V, T, shared, dt, INTEGRATOR_CODES[integrator], model.damping, bad)
    failed = np.flatnonzero(st)
    if failed.size:
        i = int(failed[0])
        s = int(st[i])
        if s < 0:
            e = SingularInertiaError(model.joints[-s - 1].name)
            e.args = (f"rollout row {i}: {e}",)
            e.row, e.rows = i, failed.tolist()
            raise e
        n = int(np.argmax(~np.isfinite(Q[i, :, 0]))) - 1 if not np.all(np.isfinite(Q[i, :, 0])) else steps
        raise RolloutDiverged(failed, Q, V, n * dt, dt, integrator)
    return Q, V
