"""The public functions of the engine: thin Python wrappers around the compiled kernels.

Each wrapper hands the packed model, a workspace for the algorithm and the caller's vectors to one
compiled kernel (the kernels' side of the convention, argument types and status codes, is
``engine/kernel/layout.py``). A call that leaves nothing in its workspace for later (most public
calls) runs on the model's shared workspaces (``Model._shared_work``: their kernels hold the GIL);
one whose workspace rows are read afterwards, or that loads f_ext into them, runs on the calling
thread's (``model._work()``), so concurrent calls on one model do not interfere. The kernels check
lengths and finiteness themselves and return a status code, so the common case (float64 vectors)
costs one compiled call, reached one of two ways: through numba's dispatcher (which types every
argument and refuses any of another type), or, for the calls that take one or two caller vectors and
several arrays of the model's own, straight at the kernel's compiled entry point once the inline
test of ``_is_vec`` has passed the caller's vectors (see _entry). Anything else (lists, ints,
float32, non-contiguous arrays, a status other than OK) goes through ``_invoke``, the one slow-path
helper, which converts once and names what it cannot convert. Bad input raises ``InputError`` (a
ValueError) naming the argument: "q: expected 7, got 6"; finite input whose result overflows raises
``NumericalOverflow``.

Frames: external wrenches f_ext map body (or link) names to wrenches (m, f) in that link's frame.
"""
from __future__ import annotations

import numpy as np

from engine.errors import InputError, SingularInertiaError, NumericalOverflow, NameNotFound
from engine.maths.spatial import Ad, se3_inv
from engine.kernel.layout import OVERFLOW, BAD_LENGTH, NOT_FINITE, SPLIT_JOINT, argument_fault
from engine.algorithms.rnea import rnea as _rnea
from engine.algorithms.aba import aba as _aba
from engine.algorithms.hybrid import hybrid as _hybrid
from engine.algorithms.crba import crba as _crba
from engine.algorithms.kinematics import (forward_kinematics as _fk, body_jacobian as _bjac,
                                          center_of_mass as _com, energy as _energy, body_velocities as _bvel)
from engine.algorithms.liegroup import integrate as _integrate, difference as _difference
from engine.algorithms.coriolis import coriolis as _coriolis
from engine.algorithms.poses import (body_poses as _body_poses, frame_jacobian as _frame_jac,
                                     FRAME_CODES as _FRAME_CODES)

_F64 = np.dtype(np.float64)
_ND = np.ndarray
_VEC = (8,)          # the strides of a 1-D array of float64 in a row
_empty = np.empty
_zeros = np.zeros


# ------------------------------------------------------------------ entry points (fast path)
# numba's dispatcher types every argument of a call (~30 ns an array on this machine's class of CPU)
# before it calls the compiled entry point; a call such as jacobian passes seven, five of them the
# model's own (its bytes, the workspace, the frame's body and placement, the frame code) or an output
# just made, whose types are known. The entry point itself checks nothing: it reads any array as the
# signature's type, so an int64 vector would be read as float64 bits, a strided one as contiguous
# and a 2-D one would overrun the entry point's record of the shape. So a caller's vector reaches
# it only after _is_vec's test, written out in each wrapper (a call costs more than the test):
#     type(x) is np.ndarray and x.dtype is float64 (native byte order) and x.strides == (8,)
# i.e. exactly an ndarray (no subclass, list or tuple), of float64, one-dimensional and contiguous.
# Anything else (float32, int, lists, column vectors, strided or non-native arrays) goes the way it
# went before: numba's dispatcher, then _invoke's conversion, which refuses by name what it cannot
# convert. A read-only vector passes the test: the kernels never write their inputs (the slow path
# copies it only because the signatures' types are the writable ones), so it gives the same result.
def _is_vec(x):
    """The fast path's test of a caller's vector (the wrappers inline it)."""
    return type(x) is _ND and x.dtype is _F64 and x.strides == _VEC


def _entry(kernel):
    """The compiled entry point of a one-signature Kernel (prepared first: compiled, or loaded from
    the cache), called without numba's dispatch: only with the model's arrays and vectors that
    passed _is_vec's test."""
    if kernel._pending is not None:
        kernel._prepare()
    (sig,) = kernel.signatures
    return kernel.overloads[sig].entry_point


def _lazy_entry(name, kernel):
    """A stand-in for module global `name` that resolves the kernel's entry point at the first call
    and puts it in its place: importing the engine prepares no kernel."""
    def first_call(*args):
        ep = _entry(kernel)
        globals()[name] = ep
        return ep(*args)
    first_call.__name__ = name
    return first_call


# ------------------------------------------------------------------ argument handling (slow path)
def _as_vector(x, name, n):
    if x is None:
        raise InputError(f"{name}: missing (got None); expected a vector of {n} numbers", name)
    try:
        a = np.ascontiguousarray(x, dtype=np.float64)
        if not a.flags.writeable:      # the kernels' signatures take writable arrays (never written)
            a = a.copy()
    except (TypeError, ValueError):
        raise InputError(f"{name}: expected a vector of {n} numbers, got {type(x).__name__}", name) from None
    if a.ndim != 1:
        if a.size == n and a.ndim == 2 and 1 in a.shape:
            a = a.reshape(-1)
        else:
            raise InputError(f"{name}: expected a vector of {n} numbers, got an array of shape {a.shape}", name)
    return a


def _as_mask(x, name, n, model=None):
    """A prescription mask as n booleans. With `model`, a mask of one flag per joint (length
    len(model.joints) when that differs from nv) is expanded to the joints' coordinates."""
    if x is None:
        raise InputError(f"{name}: missing (got None); expected {n} booleans (True = acceleration prescribed)", name)
    a = np.asarray(x)
    if a.dtype != np.bool_:
        if a.dtype.kind in "iuf" and np.all(np.isin(a, (0, 1))):
            a = a.astype(bool)
        else:
            raise InputError(f"{name}: expected {n} booleans (True = acceleration prescribed), got {a.dtype}", name)
    a = np.ascontiguousarray(a).reshape(-1) if a.ndim <= 1 else a
    if a.ndim != 1:
        raise InputError(f"{name}: expected a vector of {n} booleans, got shape {a.shape}", name)
    if model is not None and a.size == len(model.joints) and a.size != n:
        a = a[model._coordinate_joint]
    if not a.flags.writeable:
        a = a.copy()
    return a


def _raise(model, st, names, args, function="engine"):
    """Turn a kernel status code into the error it stands for."""
    if st < 0:
        raise SingularInertiaError(model.joints[-st - 1].name)
    if st == OVERFLOW:
        raise NumericalOverflow(function, names, args)
    fault = argument_fault(st)
    if fault is None or not 1 <= fault[0] <= len(names):
        raise RuntimeError(f"{function}: the kernel returned status {st}, which this call does not expect")
    k, kind = fault
    name = names[k - 1]
    x = args[k - 1]
    n = model.nq if name in ("q", "q0", "q1") else model.nv
    if kind == BAD_LENGTH:
        raise InputError(f"{name}: expected {n}, got {len(x)}", name)
    if kind == NOT_FINITE:
        bad = np.flatnonzero(~np.isfinite(np.asarray(x, dtype=float)))
        where = _coordinate_name(model, int(bad[0]), name in ("q", "q0", "q1")) if bad.size else "?"
        raise InputError(f"{name}: holds NaN or Inf (first at index {bad[0] if bad.size else '?'}, {where})", name)
    if kind == SPLIT_JOINT:
        mask = np.asarray(x)
        for j in model.joints:
            flags = mask[j.idx_v:j.idx_v + j.nv]
            if flags.min() != flags.max():
                raise InputError(f"{name}: the prescription splits joint '{j.name}' ({j.kind}, coordinates "
                                 f"{j.idx_v}..{j.idx_v + j.nv - 1}); all coordinates of one joint share one flag", name)
    raise InputError(f"{name}: invalid (status {st})", name)


def _coordinate_mask(model, prescribed):
    """A prescription mask as the kernels take it: kept when it is already one flag per coordinate
    (an array of nv), else converted (a list, one flag per joint) by _as_mask; a wrong length is
    then named by the kernel."""
    if getattr(prescribed, "shape", None) == (model.nv,):
        return prescribed
    return _as_mask(prescribed, "prescribed", model.nv, model)


def _coordinate_name(model, idx, in_q):
    for j in model.joints:
        start, size = (j.idx_q, j.nq) if in_q else (j.idx_v, j.nv)
        if start <= idx < start + size:
            return f"joint '{j.name}' coordinate {idx - start}"
    return f"coordinate {idx}"


def _convert(model, names, vecs):
    """The vectors as the kernels' types (float64, or bool for a prescription mask; contiguous,
    writable), named in the errors when they cannot be."""
    out = []
    for x, nm in zip(vecs, names):
        if nm == "prescribed":
            out.append(_as_mask(x, nm, model.nv, model))
        else:
            out.append(_as_vector(x, nm, model.nq if nm in _Q_NAMES else model.nv))
    return out


_Q_NAMES = ("q", "q0", "q1")

_ep_rnea = _lazy_entry("_ep_rnea", _rnea)
_ep_crba = _lazy_entry("_ep_crba", _crba)
_ep_coriolis = _lazy_entry("_ep_coriolis", _coriolis)
_ep_energy = _lazy_entry("_ep_energy", _energy)
_ep_fk = _lazy_entry("_ep_fk", _fk)
_ep_com = _lazy_entry("_ep_com", _com)
_ep_body_poses = _lazy_entry("_ep_body_poses", _body_poses)
_ep_frame_jac = _lazy_entry("_ep_frame_jac", _frame_jac)


# The hot wrappers call their kernel once directly and return when it answers OK (status 0): the
# common case costs one compiled call and no Python frame more. Anything else (a status, a TypeError
# for arguments numba will not take, a ZeroDivisionError) goes through _invoke, which calls the
# kernel again and converts, names and raises: the kernels only write their outputs and workspace,
# so calling again is safe.
def _invoke(kernel, model, names, args, function="engine", at=2):
    """The one call of a kernel from Python. args: the kernel's whole argument tuple, the model's
    bytes first, then (at = 2) a workspace's bytes, the caller's vectors named by `names` (checked by
    the kernel) and the other arguments (outputs, scratch); at = 1 for a kernel without a workspace.
    The common case (writable float64 vectors) is one compiled call with the tuple as it is;
    anything else (lists, ints, float32, read-only or non-contiguous arrays) raises TypeError in
    numba's dispatch and is converted once, then called again. A status other than OK becomes the
    exception it stands for (_raise)."""
    try:
        st = kernel(*args)
    except ZeroDivisionError:
        _zero_quaternion(model, names, args[at:at + len(names)])
    except TypeError:
        end = at + len(names)
        vecs = _convert(model, names, args[at:end])
        args = (*args[:at], *vecs, *args[end:])
        try:
            st = kernel(*args)
        except ZeroDivisionError:
            _zero_quaternion(model, names, vecs)
    if st:
        _raise(model, st, names, args[at:at + len(names)], function)


def _zero_quaternion(model, names, args):
    """A kernel divided by zero: the quaternion of a ball or free joint in q (q0, q1) is zero (or so
    small that its squared norm underflows). Raise the InputError naming the argument and the joint."""
    for name, x in zip(names, args):
        if name not in ("q", "q0", "q1"):
            continue
        x = np.asarray(x, dtype=float).reshape(-1)
        for j in model.joints:
            if j.kind in ("spherical", "free"):
                k = j.idx_q + (3 if j.kind == "free" else 0)
                quat = x[k:k + 4]
                if not quat @ quat > 0.0:
                    raise InputError(f"{name}: the quaternion (w, x, y, z) of {j.kind} joint '{j.name}' "
                                     f"(coordinates {k}..{k + 3}) is zero; a rotation needs a non-zero "
                                     f"(unit) quaternion, e.g. from model.neutral()", name)
    raise  # not a zero quaternion: re-raise the ZeroDivisionError being handled


def _load_fext(model, ws, f_ext):
    """Write external wrenches into ws['fext'] (body frames). Accepts {name: (m, f)}."""
    if not isinstance(f_ext, dict):
        raise InputError("f_ext: expected a dict {body name: wrench (m, f) in that body's frame}", "f_ext")
    fx = ws["fext"]
    for name, w in f_ext.items():
        label = f"f_ext['{name}']"
        try:
            w = np.asarray(w, dtype=float).reshape(-1)
        except (TypeError, ValueError):
            raise InputError(f"{label}: expected 6 numbers (moment, force)", "f_ext") from None
        if w.size != 6:
            raise InputError(f"{label}: expected 6, got {w.size}", "f_ext")
        if not np.all(np.isfinite(w)):
            raise InputError(f"{label}: holds NaN or Inf", "f_ext")
        frame = model.frame(name, "f_ext")
        if frame.body == 0:
            continue  # a wrench on the ground does nothing
        if frame.offset:
            w = Ad(se3_inv(frame.placement)).T @ w
        fx[frame.body] += w


def _with_fext(model, ws, f_ext, fn):
    try:
        _load_fext(model, ws, f_ext)     # inside the try: a bad later wrench must not leave earlier ones behind
        return fn()
    finally:
        ws["fext"] = 0.0


# ------------------------------------------------------------------ dynamics
_Q, _QV, _QVA, _QVT = ("q",), ("q", "v"), ("q", "v", "a"), ("q", "v", "tau")
_HD_NAMES = ("q", "v", "prescribed", "a", "tau")


def _work(model):
    """The calling thread's workspaces: for a call whose workspace rows are read after the kernel
    returns (joint_wrenches, body_accelerations, engine.loops) or that loads f_ext into them first."""
    try:
        return model._tls.w
    except AttributeError:
        return model._work()


# The public calls that leave nothing in their workspace to be read afterwards run on the model's
# shared workspaces (Model._shared_work: one attribute read, where this thread's costs a
# threading.local look-up): their kernels hold the GIL from start to end, so two threads never use
# them at once (tests/test_threads.py checks the kernels are not compiled nogil).
def _rnea_into(model, w, q, v, a):
    """Inverse dynamics on workspaces w (this thread's), every call through _invoke."""
    out = _empty(model.nv)
    _invoke(_rnea, model, _QVA, (model._mb, w.wb_rnea, q, v, a, out), "inverse_dynamics")
    return out


def _aba_into(model, w, q, v, tau):
    out = _empty(model.nv)
    _invoke(_aba, model, _QVT, (model._mb, w.wb_aba, q, v, tau, out), "forward_dynamics")
    return out


def _hybrid_into(model, w, q, v, prescribed, a, tau):
    a_out = _empty(model.nv)
    tau_out = _empty(model.nv)
    prescribed = _coordinate_mask(model, prescribed)
    _invoke(_hybrid, model, _HD_NAMES, (model._mb, w.wb_hd, q, v, prescribed, a, tau, a_out, tau_out),
            "hybrid_dynamics")
    return a_out, tau_out


def inverse_dynamics(model, q, v, a, f_ext=None):
    """tau = M(q) a + b(q, v) - sum_i J_i^T F_i^ext  (Table 2, recursive Newton-Euler).
    Joint armature contributes armature * a; viscous damping is not included (see Simulator)."""
    if f_ext:
        w = _work(model)
        return _with_fext(model, w.rnea, f_ext, lambda: _rnea_into(model, w, q, v, a))
    try:
        w = model._sw
    except AttributeError:
        w = model._shared_work()
    out = _empty(model.nv)
    try:
        if not _rnea(model._mb, w.wb_rnea, q, v, a, out):
            return out
    except (TypeError, ZeroDivisionError):
        pass
    _invoke(_rnea, model, _QVA, (model._mb, w.wb_rnea, q, v, a, out), "inverse_dynamics")
    return out


def forward_dynamics(model, q, v, tau, f_ext=None):
    """a = M(q)^-1 (tau - b(q, v) + sum_i J_i^T F_i^ext)  (Table 3, articulated-body algorithm)."""
    if f_ext:
        w = _work(model)
        return _with_fext(model, w.aba, f_ext, lambda: _aba_into(model, w, q, v, tau))
    try:
        w = model._sw
    except AttributeError:
        w = model._shared_work()
    out = _empty(model.nv)
    try:
        if not _aba(model._mb, w.wb_aba, q, v, tau, out):
            return out
    except (TypeError, ZeroDivisionError):
        pass
    _invoke(_aba, model, _QVT, (model._mb, w.wb_aba, q, v, tau, out), "forward_dynamics")
    return out


def hybrid_dynamics(model, q, v, prescribed, a, tau, f_ext=None):
    """Table 4. prescribed: one flag per velocity coordinate, True = acceleration given (read from
    a), False = torque given (read from tau); all coordinates of one joint share one flag (one flag
    per joint). Returns (a_out, tau_out), both complete."""
    if f_ext:
        w = _work(model)
        return _with_fext(model, w.hd, f_ext, lambda: _hybrid_into(model, w, q, v, prescribed, a, tau))
    try:
        w = model._sw
    except AttributeError:
        w = model._shared_work()
    a_out = _empty(model.nv)
    tau_out = _empty(model.nv)
    try:       # a mask of nv booleans as it is; anything else (one flag per joint, a list) fails here
        if not _hybrid(model._mb, w.wb_hd, q, v, prescribed, a, tau, a_out, tau_out):
            return a_out, tau_out
    except (TypeError, ZeroDivisionError):
        pass
    prescribed = _coordinate_mask(model, prescribed)
    _invoke(_hybrid, model, _HD_NAMES, (model._mb, w.wb_hd, q, v, prescribed, a, tau, a_out, tau_out),
            "hybrid_dynamics")
    return a_out, tau_out


def mass_matrix(model, q):
    """M(q) (nv x nv, symmetric, armature on the diagonal) by composite rigid-body inertias."""
    try:
        w = model._sw
    except AttributeError:
        w = model._shared_work()
    M = _empty(w.shape_M)
    if type(q) is _ND and q.dtype is _F64 and q.strides == _VEC:     # _is_vec(q)
        try:
            if not _ep_crba(model._mb, w.wb_crba, q, M):
                return M
        except ZeroDivisionError:
            pass
    _invoke(_crba, model, _Q, (model._mb, w.wb_crba, q, M), "mass_matrix")
    return M


def bias_forces(model, q, v):
    """b(q, v) = C(q, v) v + g(q): inverse dynamics with zero acceleration."""
    try:
        w = model._sw
    except AttributeError:
        w = model._shared_work()
    out = _empty(model.nv)
    if (type(q) is _ND and q.dtype is _F64 and q.strides == _VEC
            and type(v) is _ND and v.dtype is _F64 and v.strides == _VEC):     # _is_vec(q), _is_vec(v)
        try:
            if not _ep_rnea(model._mb, w.wb_rnea, q, v, model._zero_v, out):
                return out
        except ZeroDivisionError:
            pass
    _invoke(_rnea, model, _QVA, (model._mb, w.wb_rnea, q, v, model._zero_v, out), "bias_forces")
    return out


def gravity_forces(model, q):
    """g(q): inverse dynamics with zero velocity and acceleration."""
    try:
        w = model._sw
    except AttributeError:
        w = model._shared_work()
    out = _empty(model.nv)
    z = model._zero_v
    if type(q) is _ND and q.dtype is _F64 and q.strides == _VEC:     # _is_vec(q)
        try:
            if not _ep_rnea(model._mb, w.wb_rnea, q, z, z, out):
                return out
        except ZeroDivisionError:
            pass
    _invoke(_rnea, model, _QVA, (model._mb, w.wb_rnea, q, z, z, out), "gravity_forces")
    return out


def coriolis_matrix(model, q, v):
    """C(q, v) with C v = b(q, v) - g(q) and dM/dt - 2 C skew-symmetric:
    C = sum_i J_i^T (I_i dJ_i/dt - [I_i V_i]bar J_i), J_i the body Jacobian of body i (computed in
    the world frame with subtree sums, O(n d): algorithms/coriolis.py)."""
    C = _zeros((model.nv, model.nv))
    try:
        w = model._sw
    except AttributeError:
        w = model._shared_work()
    jac = w.jac
    if (type(q) is _ND and q.dtype is _F64 and q.strides == _VEC
            and type(v) is _ND and v.dtype is _F64 and v.strides == _VEC):     # _is_vec(q), _is_vec(v)
        try:
            if not _ep_coriolis(model._mb, w.wb_kin, q, v, jac[0], jac[1], jac[2], jac[3], C):
                return C
        except ZeroDivisionError:
            pass
    _invoke(_coriolis, model, _QV, (model._mb, w.wb_kin, q, v, *jac, C), "coriolis_matrix")
    return C


def _energies(model, q, v):
    out = _empty(2)
    try:
        wb = model._sw.wb_kin
    except AttributeError:
        wb = model._shared_work().wb_kin
    try:
        if not _energy(model._mb, wb, q, v, out):
            return out
    except (TypeError, ZeroDivisionError):
        pass
    _invoke(_energy, model, _QV, (model._mb, wb, q, v, out), "energy")
    return out


def energies(model, q, v):
    """(kinetic, potential) energy in one pass: kinetic_energy(model, q, v) and
    potential_energy(model, q) for the price of one call."""
    out = _energies(model, q, v)
    return float(out[0]), float(out[1])


def kinetic_energy(model, q, v):
    """1/2 v^T M v = sum_i 1/2 V_i^T I_i V_i + 1/2 armature_i v_i^2 (rotor energy, as Pinocchio)."""
    return float(_energies(model, q, v)[0])


def potential_energy(model, q):
    """Gravitational potential energy -sum_i m_i g . c_i (zero at the world origin's height)."""
    if type(q) is _ND and q.dtype is _F64 and q.strides == _VEC:     # _is_vec(q)
        out = _empty(2)
        try:
            wb = model._sw.wb_kin
        except AttributeError:
            wb = model._shared_work().wb_kin
        try:
            if not _ep_energy(model._mb, wb, q, model._zero_v, out):
                return float(out[1])
        except ZeroDivisionError:
            pass
    return float(_energies(model, q, model._zero_v)[1])


# ------------------------------------------------------------------ kinematics
def _world_poses(model, q):
    out = _empty((model.nbodies + 1, 12))
    wb = _work(model).wb_kin
    if type(q) is _ND and q.dtype is _F64 and q.strides == _VEC:     # _is_vec(q)
        try:
            if not _ep_fk(model._mb, wb, q, out):
                return out
        except ZeroDivisionError:
            pass
    _invoke(_fk, model, _Q, (model._mb, wb, q, out), "forward_kinematics")
    return out


def _pose4(row):
    T = np.eye(4)
    T[:3, :3] = row[:9].reshape(3, 3)
    T[:3, 3] = row[9:]
    return T


def body_poses(model, q):
    """(nbodies, 4, 4): the world pose of every movable body, in ``model.body_names`` order."""
    try:
        w = model._sw
    except AttributeError:
        w = model._shared_work()
    out = _empty(w.shape_P)
    wb = w.wb_kin
    if type(q) is _ND and q.dtype is _F64 and q.strides == _VEC:     # _is_vec(q)
        try:
            if not _ep_body_poses(model._mb, wb, q, out):
                return out
        except ZeroDivisionError:
            pass
    _invoke(_body_poses, model, _Q, (model._mb, wb, q, out), "body_poses")
    return out


def forward_kinematics(model, q):
    """{link name: 4x4 pose in the world} for every link (merged fixed links included); built from
    ``body_poses``."""
    poses = body_poses(model, q)
    out = {}
    for name, f in model.frames.items():
        if f.body == 0:
            out[name] = f.placement.copy()
            continue
        T = poses[f.body - 1]
        out[name] = T @ f.placement if f.offset else T.copy()
    return out


def frame_pose(model, q, name):
    """4x4 world pose of one link or body."""
    f = model.frame(name, "name")
    if f.body == 0:
        return f.placement.copy()
    return body_poses(model, q)[f.body - 1] @ f.placement


def jacobian(model, q, name, frame="local"):
    """Jacobian (6 x nv) of the twist of link `name`, rows (angular, linear), computed in the kernel:
    frame="local": body twist in the link's own frame (Kim's body Jacobian);
    frame="world": spatial twist in the world frame (the world Jacobian);
    frame="local_world_aligned": angular velocity and the velocity of the link origin, world axes."""
    try:
        f = model.frames[name]
    except (KeyError, TypeError):
        f = model.frame(name, "name")          # names what is wrong
    try:
        code = _FRAME_CODES[frame]
    except (KeyError, TypeError):     # TypeError: an unhashable frame
        raise ValueError(f"frame: expected 'local', 'world' or 'local_world_aligned', got {frame!r}") from None
    try:
        w = model._sw
    except AttributeError:
        w = model._shared_work()
    J = _zeros(w.shape_J)
    k = f.body
    if not k:
        return J
    wb = w.wb_kin
    if type(q) is _ND and q.dtype is _F64 and q.strides == _VEC:     # _is_vec(q)
        try:
            if not _ep_frame_jac(model._mb, wb, q, k, f.placement, code, J):
                return J
        except ZeroDivisionError:
            pass
    _invoke(_frame_jac, model, _Q, (model._mb, wb, q, k, f.placement, code, J), "jacobian")
    return J


def body_jacobian(model, q, name):
    return jacobian(model, q, name, "local")


def world_jacobian(model, q, name):
    return jacobian(model, q, name, "world")


def center_of_mass(model, q):
    """Centre of mass of the whole model in the world (3,)."""
    out = _empty(4)
    try:
        wb = model._sw.wb_kin
    except AttributeError:
        wb = model._shared_work().wb_kin
    if type(q) is _ND and q.dtype is _F64 and q.strides == _VEC:     # _is_vec(q)
        try:
            if not _ep_com(model._mb, wb, q, out):
                return out[:3].copy()
        except ZeroDivisionError:
            pass
    _invoke(_com, model, _Q, (model._mb, wb, q, out), "center_of_mass")
    return out[:3].copy()


def body_velocities(model, q, v):
    """{body name: body twist (w, v) in the body's own frame} for the movable bodies."""
    V = _empty((model.nbodies + 1, 6))
    T = _empty((model.nbodies + 1, 12))
    try:
        wb = model._sw.wb_kin
    except AttributeError:
        wb = model._shared_work().wb_kin
    try:
        st = _bvel(model._mb, wb, q, v, V, T)
    except (TypeError, ZeroDivisionError):
        st = 1
    if st:
        _invoke(_bvel, model, _QV, (model._mb, wb, q, v, V, T), "body_velocities")
    return {name: V[k].copy() for k, name in enumerate(model.body_names, start=1)}


def body_accelerations(model, q, v, a):
    """{body name: dV/dt (w', v') in the body's own frame}, gravity not included."""
    w = _work(model)
    _rnea_into(model, w, q, v, a)
    ws = w.rnea
    g = model._m[0]["g"]
    out = {}
    rows = _world_poses(model, q)
    for k, name in enumerate(model.body_names, start=1):
        Tw = _pose4(rows[k])
        out[name] = ws[k]["dV"] - Ad(se3_inv(Tw)) @ g
    return out


def joint_wrenches(model, q, v, a, f_ext=None):
    """{joint name: F_i}, the wrench (m, f) the parent transmits to the child through joint i, in
    the child body's frame (Table 2). S_i^T F_i is the joint torque; the rest is the reaction."""
    w = _work(model)
    if f_ext:
        _with_fext(model, w.rnea, f_ext, lambda: _rnea_into(model, w, q, v, a))
    else:
        _rnea_into(model, w, q, v, a)
    ws = w.rnea
    return {j.name: ws[j.body]["F"].copy() for j in model.joints}


# ------------------------------------------------------------------ configuration space
def integrate(model, q, dv):
    """q (+) dv: the configuration reached from q by the velocity increment dv (length nv)."""
    out = _empty(model.nq)
    try:
        if not _integrate(model._mb, q, dv, out):
            return out
    except (TypeError, ZeroDivisionError):
        pass
    _invoke(_integrate, model, ("q", "dv"), (model._mb, q, dv, out), "integrate", at=1)
    return out


def difference(model, q0, q1):
    """dv (length nv) with integrate(q0, dv) = q1."""
    out = _empty(model.nv)
    try:
        if not _difference(model._mb, q0, q1, out):
            return out
    except (TypeError, ZeroDivisionError):
        pass
    _invoke(_difference, model, ("q0", "q1"), (model._mb, q0, q1, out), "difference", at=1)
    return out
