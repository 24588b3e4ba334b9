"""The recursion of Kim's Tables 2-4, one (pass, body) step at a time, for teaching.

    tr = engine.trace(model, q, v, prescribed, a, tau, f_ext=None)
    for step in tr.steps:            # in the order computed
        step.pass_number, step.body, step.line, step.values["V"], step.world("F")
    tr.a_out, tr.tau_out             # equal engine.hybrid_dynamics(...)

``prescribed`` all True is inverse dynamics (Table 2), all False forward dynamics (Table 3), mixed
is hybrid dynamics (Table 4); the passes are those of ``engine/algorithms/hybrid.py``:
    pass 1 (outward)  V_i, eta_i, and the initial Ih_i = I_i, Bh_i = -ad*_{V_i}(I_i V_i) - F_i^ext
    pass 2 (inward)   Psi_i, Pi_i, beta_i; the child's Pi, beta are added to its parent's Ih, Bh
    pass 3 (outward)  ddq_i (torque-given joints) or tau_i (prescribed joints), dV_i, F_i

The values are those the compiled kernels compute: the trace runs the very same helper functions
(``velocity_pass_body``, ``articulated_backward_torque``, ``articulated_forward_torque``, the
spatial operations of ``engine/maths/spatial.py``) uncompiled, on a private workspace of the kernels'
record layout (``WS_DTYPE``), and copies what each step wrote. The only additions are for display:
the world pose of each body (``world_pose_body``), Pi and beta of a root body (the kernel has no
parent to hand them to and skips them) and F_i = Ih_i dV_i + Bh_i of a torque-given joint (Table 3's
last line, which the kernel does not need for ddq).

Frames: every twist (V, dV, eta, the columns of S), wrench (Bh, beta, F) and inertia (Ih, Pi) of a
step is in the body frame {i}; ``step.world(name)`` expresses it in the world frame. dV includes
the fictitious base acceleration -g (gravity enters as dV_0 = (0, -g), Kim's device).

Closed loops: the trace is that of the tree; give the loops' constraint forces as external wrenches
(``engine.loops.constrained.constraint_external_wrenches(model, q, v, lam)``) to trace the constrained
motion, as the app does.

``body_quantities`` gives the same final per-body values from the compiled hybrid kernel (fast
enough to run at every frame); the trace is for stepping through.
"""
from __future__ import annotations

import types
from dataclasses import dataclass, field

import numpy as np

from engine.multibody.model import WS_DTYPE
from engine.maths.spatial import Ad, se3_inv
from engine.algorithms import aba as _aba_mod, common as _common, hybrid as _hybrid_mod
from engine.algorithms import api as _api
from engine.errors import NumericalOverflow

# ------------------------------------------------------------------ the kernels' helpers, uncompiled
_PY = {}


def _uncompiled(fn):
    """The Python function behind a numba dispatcher, with every dispatcher it calls replaced by
    its own uncompiled version (recursively): the same source, run by the interpreter."""
    if fn in _PY:
        return _PY[fn]
    f = fn.py_func
    g = dict(f.__globals__)
    new = types.FunctionType(f.__code__, g, f.__name__, f.__defaults__, f.__closure__)
    _PY[fn] = new
    for k, val in list(g.items()):
        if hasattr(val, "py_func") and callable(val):
            g[k] = _uncompiled(val)
    return new


velocity_pass_body = _uncompiled(_common.velocity_pass_body)
world_pose_body = _uncompiled(_common.world_pose_body)
set_identity_pose = _uncompiled(_common.set_identity_pose)
articulated_backward_torque = _uncompiled(_aba_mod.articulated_backward_torque)
articulated_forward_torque = _uncompiled(_aba_mod.articulated_forward_torque)
articulated_transfer = _uncompiled(_aba_mod.articulated_transfer)
articulated_inertia = _uncompiled(_aba_mod.articulated_inertia)
check_inputs = _uncompiled(_hybrid_mod.check_inputs)
_sp = _uncompiled(_aba_mod.articulated_first_pass).__globals__
mat6_vec = _sp["mat6_vec"]
ad_dual_sub = _sp["ad_dual_sub"]
to_child = _uncompiled(_common.to_child)

# ------------------------------------------------------------------ quantities
TWISTS = ("V", "dV", "eta", "S")
WRENCHES = ("Bh", "beta", "F")
INERTIAS = ("Ih", "Pi")
JOINT_SPACE = ("Psi", "tau", "ddq", "q", "dq")

# Kim's symbol, meaning and unit of each quantity (the app's labels)
SYMBOLS = {
    "T": ("T_i", "pose of body i in its parent", ""),
    "S": ("S_i", "joint Jacobian (twist per unit joint rate)", "twist/rate"),
    "V": ("V_i", "body twist (ω, v)", "rad/s, m/s"),
    "eta": ("η_i", "velocity-product acceleration ad_V(S q̇) + Ṡ q̇", "rad/s², m/s²"),
    "dV": ("V̇_i", "body acceleration (ω̇, v̇), incl. −g", "rad/s², m/s²"),
    "Ih": ("Î_i", "articulated inertia seen by joint i's body", "kg·m², kg·m, kg"),
    "Bh": ("B̂_i", "bias wrench of the articulated body", "N·m, N"),
    "Pi": ("Π_i", "articulated inertia handed to the parent", "kg·m², kg·m, kg"),
    "beta": ("β_i", "bias wrench handed to the parent", "N·m, N"),
    "Psi": ("Ψ_i", "(Sᵀ Î S + armature)⁻¹", "1/(kg·m²) or 1/kg"),
    "F": ("F_i", "wrench the parent transmits through joint i (m, f)", "N·m, N"),
    "tau": ("τ_i", "joint torque or force", "N·m or N"),
    "ddq": ("q̈_i", "joint acceleration", "rad/s² or m/s²"),
    "q": ("q_i", "joint position", "rad or m"),
    "dq": ("q̇_i", "joint velocity", "rad/s or m/s"),
}


def _pose(R, p):
    T = np.eye(4)
    T[:3, :3] = R
    T[:3, 3] = p
    return T


def to_world(name, value, T_world):
    """Express quantity `name` (body frame, as in a Step) in the world frame, given the body's world
    pose: twists by Ad_T, wrenches by Ad*_{T^-1} = Ad_T^-T, inertias by Ad*_{T^-1} I Ad_{T^-1};
    the pose T becomes the world pose; joint-space quantities are returned unchanged."""
    value = np.asarray(value, dtype=float)
    if name in TWISTS:
        return Ad(T_world) @ value
    if name in WRENCHES:
        return Ad(se3_inv(T_world)).T @ value
    if name in INERTIAS:
        X = Ad(se3_inv(T_world))
        return X.T @ value @ X
    if name == "T":
        return T_world.copy()
    if name in JOINT_SPACE:
        return value.copy()
    raise KeyError(f"unknown quantity {name!r}; known: T, {', '.join(TWISTS + WRENCHES + INERTIAS + JOINT_SPACE)}")


def to_world_aligned(name, value, T_world):
    """A twist or wrench with its two 3-vectors rotated into world axes, still at the body origin
    (what an arrow drawn on the body shows). Other quantities as ``to_world``."""
    value = np.asarray(value, dtype=float)
    if name in ("V", "dV", "eta", "Bh", "beta", "F"):
        R = T_world[:3, :3]
        return np.concatenate((R @ value[:3], R @ value[3:]))
    return to_world(name, value, T_world)


def _fmt(x):
    x = np.asarray(x, dtype=float)
    if x.ndim == 0:
        return f"{float(x):.4g}"
    if x.ndim == 1:
        if x.size == 6:
            return "(" + ", ".join(f"{c:.3g}" for c in x[:3]) + " | " + ", ".join(f"{c:.3g}" for c in x[3:]) + ")"
        return "(" + ", ".join(f"{c:.4g}" for c in x) + ")"
    if x.shape == (6, 6):
        return "[6×6, diag " + ", ".join(f"{c:.3g}" for c in np.diag(x)) + "]"
    if x.shape[0] == 6:      # S: 6 x nv
        return "[" + "; ".join(_fmt(x[:, j]) for j in range(x.shape[1])) + "]"
    return "[" + "; ".join(", ".join(f"{c:.4g}" for c in row) for row in x) + "]"


@dataclass(frozen=True)
class Step:
    """One (pass, body) step of the recursion.

    pass_number: 1 (outward: velocities), 2 (inward: articulated inertias and bias wrenches),
    3 (outward: accelerations and wrenches). body: the body's name; index: its number i (1..n);
    parent: lambda(i) (0 = ground); joint: the joint's name; prescribed: the joint is in set u
    (acceleration given). line: the table lines computed, in Kim's symbols. values: what the step
    produced and the body quantities it read, in the body frame (see SYMBOLS). T_world: the body's
    pose in the world. equations: (lhs, rhs in symbols, rhs with numbers, result) per line."""
    pass_number: int
    body: str
    index: int
    parent: int
    joint: str
    prescribed: bool
    line: str
    values: dict
    T_world: np.ndarray
    equations: tuple = field(default=())
    produced: tuple = field(default=())

    def world(self, name, aligned=False):
        """values[name] in the world frame (``aligned``: rotated into world axes only, at the body origin)."""
        if name == "T":
            return self.T_world.copy()
        v = self.values[name]
        return (to_world_aligned if aligned else to_world)(name, v, self.T_world)

    def substituted(self):
        """The table lines with the numbers of this step substituted, one equation per line."""
        return "\n".join(f"{lhs} = {sym}\n    = {num}\n    = {_fmt(res)}" if num else f"{lhs} = {sym} = {_fmt(res)}"
                         for lhs, sym, num, res in self.equations)


@dataclass(frozen=True)
class Trace:
    """steps: every (pass, body) step in the order computed; a_out, tau_out: the final results
    (as ``hybrid_dynamics``); body_names: the movable bodies, in model order."""
    steps: tuple
    a_out: np.ndarray
    tau_out: np.ndarray
    body_names: tuple
    prescribed: np.ndarray

    def final(self, body):
        """Every quantity of `body` (name or index) after the three passes, body frame."""
        k = body if isinstance(body, (int, np.integer)) else self.body_names.index(body) + 1
        out = {}
        for s in self.steps:
            if s.index == k:
                out.update(s.values)
        return out

    def pass_steps(self, number):
        return [s for s in self.steps if s.pass_number == number]


# ------------------------------------------------------------------ the trace itself
def _check(model, q, v, prescribed, a, tau):
    nq, nv = model.nq, model.nv
    args = (_api._as_vector(q, "q", nq), _api._as_vector(v, "v", nv),
            _api._as_mask(prescribed, "prescribed", nv, model),
            _api._as_vector(a, "a", nv), _api._as_vector(tau, "tau", nv))
    m = model._m.view(np.recarray)
    st = check_inputs(m, *args)
    if st:
        _api._raise(model, st, _api._HD_NAMES, args, "trace")
    return args


def _workspace(model, f_ext):
    ws = np.zeros(model.nbodies + 1, dtype=WS_DTYPE)
    if f_ext:
        _api._load_fext(model, ws, f_ext)
    return ws


def trace(model, q, v, prescribed, a, tau, f_ext=None):
    """The hybrid-dynamics recursion (Table 4; Table 2 when every joint is prescribed, Table 3 when
    none is) recorded step by step. Arguments as ``hybrid_dynamics``. Returns a ``Trace``.
    Bad input raises InputError naming the argument; finite input whose recursion overflows
    (v = 1e200) raises NumericalOverflow, as ``hybrid_dynamics`` does, never a trace of NaN."""
    q, v, prescribed, a, tau = _check(model, q, v, prescribed, a, tau)
    try:
        with np.errstate(all="ignore"):       # an overflow is reported below, by name
            tr = _trace(model, q, v, prescribed, a, tau, f_ext)
    except ZeroDivisionError:
        _api._zero_quaternion(model, ("q",), (q,))
    finite = np.all(np.isfinite(tr.a_out)) and np.all(np.isfinite(tr.tau_out)) and all(
        np.all(np.isfinite(x)) for s in tr.steps for x in s.values.values())
    if not finite:
        raise NumericalOverflow("trace", _api._HD_NAMES, (q, v, prescribed, a, tau))
    return tr


def _trace(model, q, v, prescribed, a, tau, f_ext):
    """Long because it is Kim's tables 2-4 written out in order, recording every quantity as it is
    computed: the Inspector shows them in this order, and a reader compares it line by line with the
    paper."""
    m = model._m.view(np.recarray)
    ws_arr = _workspace(model, f_ext)
    ws = ws_arr.view(np.recarray)
    n = model.nbodies
    names = model.body_names
    joint_of = {j.body: j for j in model.joints}
    a_out = np.empty(model.nv)
    tau_out = np.empty(model.nv)
    steps = []
    w0 = ws[0]
    set_identity_pose(w0)
    for k in range(6):
        w0.V[k] = 0.0
        w0.dV[k] = m[0].g[k]

    def pname(i):
        return "0" if m[i].parent == 0 else str(m[i].parent)

    def record(pass_number, i, line, values, equations, produced):
        wb = ws[i]
        mb = m[i]
        j = joint_of[i]
        nv = mb.nv
        iv = mb.iv
        vals = {k: np.array(x, dtype=float, copy=True) for k, x in values.items()}
        vals.setdefault("q", q[mb.iq:mb.iq + mb.nq].copy())
        vals.setdefault("dq", v[iv:iv + nv].copy())
        steps.append(Step(pass_number, names[i - 1], i, int(mb.parent), j.name, bool(prescribed[iv]), line, vals,
                          _pose(wb.Rw, wb.pw),
                          tuple((l, sym, num, np.array(r, dtype=float, copy=True)) for l, sym, num, r in equations),
                          tuple(produced)))

    # ---------------- pass 1 (outward): V, eta; Ih = I, Bh = -ad*_V (I V) - F_ext
    for i in range(1, n + 1):
        mb = m[i]
        wb = ws[i]
        pb = ws[mb.parent]
        nv, iv = mb.nv, mb.iv
        V_parent = pb.V.copy()
        velocity_pass_body(mb, wb, pb, q, v)
        world_pose_body(mb, wb, pb)
        for r in range(6):
            for c in range(6):
                wb.Ih[r, c] = mb.I[r, c]
        mat6_vec(mb.I, wb.V, wb.u)          # momentum (u as scratch), as articulated_first_pass
        for r in range(6):
            wb.Bh[r] = -wb.fext[r]
        ad_dual_sub(wb.V, wb.u, wb.Bh)
        S = wb.S[:, :nv].copy()
        dq = v[iv:iv + nv]
        p = pname(i)
        eqs = [
            (f"V_{i}", f"Ad_{{T_{i}⁻¹}} V_{p} + S_{i} q̇_{i}", f"Ad_{{T_{i}⁻¹}} {_fmt(V_parent)} + {_fmt(S)} · {_fmt(dq)}", wb.V),
            (f"η_{i}", f"ad_{{V_{i}}}(S_{i} q̇_{i}) + Ṡ_{i} q̇_{i}", f"ad_{{{_fmt(wb.V)}}} {_fmt(wb.Sv)} + {_fmt(wb.c)}", wb.eta),
            (f"Î_{i}", f"I_{i}", "", wb.Ih),
            (f"B̂_{i}", f"−ad*_{{V_{i}}}(I_{i} V_{i}) − F_{i}^ext", f"−ad*_{{{_fmt(wb.V)}}} {_fmt(wb.u)} − {_fmt(wb.fext)}", wb.Bh),
        ]
        record(1, i, "; ".join(f"{l} = {s}" for l, s, _, _ in eqs),
               {"T": _pose(wb.R, wb.p), "S": S, "V": wb.V, "eta": wb.eta, "Ih": wb.Ih, "Bh": wb.Bh},
               eqs, ("V", "eta", "Ih", "Bh"))

    # ---------------- pass 2 (inward): Psi, Pi, beta, handed to the parent
    for i in range(n, 0, -1):
        mb = m[i]
        wb = ws[i]
        pb = ws[mb.parent]
        nv, iv = mb.nv, mb.iv
        Ih = wb.Ih.copy()
        Bh = wb.Bh.copy()
        p = pname(i)
        to_parent = (f"Î_{p} += Ad*_{{T_{i}⁻¹}} Π_{i} Ad_{{T_{i}⁻¹}}; B̂_{p} += Ad*_{{T_{i}⁻¹}} β_{i}"
                     if mb.parent > 0 else f"(body {i} is a root: nothing is handed on)")
        if prescribed[iv]:
            # as hybrid(): Pi = Ih, beta = Bh + Ih (eta + S ddq)
            S = wb.S
            for r in range(6):
                s = wb.eta[r]
                for j in range(nv):
                    s += S[r, j] * a[iv + j]
                wb.Sv[r] = s
            mat6_vec(wb.Ih, wb.Sv, wb.beta)
            for r in range(6):
                wb.beta[r] += wb.Bh[r]
            for r in range(6):
                for c in range(6):
                    wb.Pi[r, c] = wb.Ih[r, c]
            if mb.parent > 0:
                articulated_transfer(mb, wb, pb)
            eqs = [
                (f"Π_{i}", f"Î_{i}", "", wb.Pi),
                (f"β_{i}", f"B̂_{i} + Î_{i}(η_{i} + S_{i} q̈_{i})",
                 f"{_fmt(Bh)} + Î_{i} ({_fmt(wb.eta)} + {_fmt(wb.S[:, :nv])} · {_fmt(a[iv:iv + nv])})", wb.beta),
            ]
            values = {"Ih": Ih, "Bh": Bh, "Pi": wb.Pi, "beta": wb.beta}
            produced = ("Pi", "beta")
        else:
            if not articulated_backward_torque(mb, wb, pb, tau):
                raise _api.SingularInertiaError(joint_of[i].name)
            if mb.parent == 0:
                # the kernel stops here for a root (no parent); complete Pi and beta for display
                articulated_inertia(mb, wb)
                W = wb.tmp
                for r in range(6):
                    s = 0.0
                    for j in range(nv):
                        s += W[r, j] * wb.u[j]
                    wb.beta[r] += s
            eqs = [
                (f"Ψ_{i}", f"(S_{i}ᵀ Î_{i} S_{i} + armature)⁻¹", "", wb.Dinv[:nv, :nv]),
                (f"Π_{i}", f"Î_{i} − Î_{i} S_{i} Ψ_{i} S_{i}ᵀ Î_{i}", "", wb.Pi),
                (f"β_{i}", f"B̂_{i} + Î_{i}(η_{i} + S_{i} Ψ_{i}(τ_{i} − S_{i}ᵀ(Î_{i} η_{i} + B̂_{i})))",
                 f"{_fmt(Bh)} + Î_{i} ({_fmt(wb.eta)} + S_{i} Ψ_{i} ({_fmt(tau[iv:iv + nv])} − {_fmt(tau[iv:iv + nv] - wb.u[:nv])}))",
                 wb.beta),
            ]
            values = {"Ih": Ih, "Bh": Bh, "Psi": wb.Dinv[:nv, :nv], "Pi": wb.Pi, "beta": wb.beta}
            produced = ("Psi", "Pi", "beta")
        line = "; ".join(f"{l} = {s}" for l, s, _, _ in eqs) + "; " + to_parent
        record(2, i, line, values, eqs, produced)

    # ---------------- pass 3 (outward): ddq or tau, dV, F
    for i in range(1, n + 1):
        mb = m[i]
        wb = ws[i]
        pb = ws[mb.parent]
        nv, iv = mb.nv, mb.iv
        dV_parent = pb.dV.copy()
        p = pname(i)
        if prescribed[iv]:
            # as hybrid(): dV = Ad_{T^-1} dV_parent + S ddq + eta; F = Ih dV + Bh; tau = S^T F (+ armature ddq)
            to_child(mb, wb, pb.dV, wb.dV)
            S = wb.S
            for r in range(6):
                s = wb.eta[r]
                for j in range(nv):
                    s += S[r, j] * a[iv + j]
                wb.dV[r] += s
            mat6_vec(wb.Ih, wb.dV, wb.F)
            for r in range(6):
                wb.F[r] += wb.Bh[r]
            for j in range(nv):
                s = mb.armature[j] * a[iv + j]
                for k in range(6):
                    s += S[k, j] * wb.F[k]
                tau_out[iv + j] = s
                a_out[iv + j] = a[iv + j]
            eqs = [
                (f"V̇_{i}", f"Ad_{{T_{i}⁻¹}} V̇_{p} + S_{i} q̈_{i} + η_{i}",
                 f"Ad_{{T_{i}⁻¹}} {_fmt(dV_parent)} + {_fmt(wb.S[:, :nv])} · {_fmt(a[iv:iv + nv])} + {_fmt(wb.eta)}", wb.dV),
                (f"F_{i}", f"Î_{i} V̇_{i} + B̂_{i}", f"Î_{i} {_fmt(wb.dV)} + {_fmt(wb.Bh)}", wb.F),
                (f"τ_{i}", f"S_{i}ᵀ F_{i} (+ armature q̈_{i})", f"{_fmt(wb.S[:, :nv])}ᵀ {_fmt(wb.F)}", tau_out[iv:iv + nv]),
            ]
            produced = ("dV", "F", "tau")
        else:
            articulated_forward_torque(mb, wb, pb, a_out)
            mat6_vec(wb.Ih, wb.dV, wb.F)          # Table 3's last line (not needed by the kernel)
            for r in range(6):
                wb.F[r] += wb.Bh[r]
            for j in range(nv):
                tau_out[iv + j] = tau[iv + j]
            eqs = [
                (f"q̈_{i}", f"Ψ_{i}(τ_{i} − S_{i}ᵀ Î_{i}(Ad_{{T_{i}⁻¹}} V̇_{p} + η_{i}) − S_{i}ᵀ B̂_{i})",
                 f"Ψ_{i} ({_fmt(tau[iv:iv + nv])} − S_{i}ᵀ Î_{i} (Ad_{{T_{i}⁻¹}} {_fmt(dV_parent)} + {_fmt(wb.eta)}) − S_{i}ᵀ {_fmt(wb.Bh)})",
                 a_out[iv:iv + nv]),
                (f"V̇_{i}", f"Ad_{{T_{i}⁻¹}} V̇_{p} + S_{i} q̈_{i} + η_{i}",
                 f"Ad_{{T_{i}⁻¹}} {_fmt(dV_parent)} + {_fmt(wb.S[:, :nv])} · {_fmt(a_out[iv:iv + nv])} + {_fmt(wb.eta)}", wb.dV),
                (f"F_{i}", f"Î_{i} V̇_{i} + B̂_{i}", f"Î_{i} {_fmt(wb.dV)} + {_fmt(wb.Bh)}", wb.F),
            ]
            produced = ("ddq", "dV", "F")
        record(3, i, "; ".join(f"{l} = {s}" for l, s, _, _ in eqs),
               {"dV": wb.dV, "F": wb.F, "ddq": a_out[iv:iv + nv], "tau": tau_out[iv:iv + nv]}, eqs, produced)
    return Trace(tuple(steps), a_out, tau_out, tuple(names), prescribed.copy())


# ------------------------------------------------------------------ the same values, compiled
def body_quantities(model, q, v, prescribed, a, tau, f_ext=None):
    """Every body's final quantities of Table 4 from the compiled hybrid kernel, run on a private
    workspace (the model's own workspaces are not touched). Returns
    {body name: {"T", "T_world", "S", "V", "eta", "dV", "Ih", "Bh", "Pi", "beta", "Psi", "F", "q",
    "dq", "ddq", "tau"}} (body frame) plus the key "" -> (a_out, tau_out). Pi and beta of a root
    and F of a torque-given joint are completed here by their table lines (the kernel skips them)."""
    q, v, prescribed, a, tau = _check(model, q, v, prescribed, a, tau)
    ws = _workspace(model, f_ext)
    a_out = np.empty(model.nv)
    tau_out = np.empty(model.nv)
    try:
        st = _hybrid_mod.hybrid(model._mb, ws.view(np.uint8), q, v, prescribed, a, tau, a_out, tau_out)
    except ZeroDivisionError:
        _api._zero_quaternion(model, ("q",), (q,))
    if st:
        _api._raise(model, st, _api._HD_NAMES, (q, v, prescribed, a, tau), "body_quantities")
    m = model._m
    out = {}
    Tw = [np.eye(4)]
    for i in range(1, model.nbodies + 1):
        mb = m[i]
        w = ws[i]
        nv, iv, iq = int(mb["nv"]), int(mb["iv"]), int(mb["iq"])
        T = _pose(w["R"], w["p"])
        Tw.append(Tw[int(mb["parent"])] @ T)
        Ih = w["Ih"].copy()
        Pi = w["Pi"].copy()
        beta = w["beta"].copy()
        F = w["F"].copy()
        if prescribed[iv]:
            if mb["parent"] == 0:
                Pi = Ih.copy()
        else:
            U = w["U"][:, :nv]
            Dinv = w["Dinv"][:nv, :nv]
            if mb["parent"] == 0:
                Pi = Ih - U @ Dinv @ U.T
                beta = beta + U @ (Dinv @ w["u"][:nv])
            F = Ih @ w["dV"] + w["Bh"]
        out[model.body_names[i - 1]] = {
            "T": T, "T_world": Tw[i], "S": w["S"][:, :nv].copy(), "V": w["V"].copy(), "eta": w["eta"].copy(),
            "dV": w["dV"].copy(), "Ih": Ih, "Bh": w["Bh"].copy(), "Pi": Pi, "beta": beta,
            "Psi": None if prescribed[iv] else w["Dinv"][:nv, :nv].copy(), "F": F,
            "q": q[iq:iq + int(mb["nq"])].copy(), "dq": v[iv:iv + nv].copy(),
            "ddq": a_out[iv:iv + nv].copy(), "tau": tau_out[iv:iv + nv].copy()}
    out[""] = (a_out, tau_out)
    return out
