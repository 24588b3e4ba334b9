"""Loop closures and other constraints (Kim 2012, Section 3; algorithms.md "Constrained systems").

Cutting every closed loop leaves a tree; each cut becomes a constraint f(q) = 0 with Jacobian A
(rows x nv, in the tangent space of q), so A dq = 0 and A ddq + dA dq = 0. Nonholonomic (Pfaffian)
constraints give A(q) dq = 0 directly (their f is NaN). A constraint evaluates, for the current
(q, dq), its residual f, its rows of A and its bias dA dq, from the world-frame kinematics of the
frames it joins.

Conventions: rows are expressed in the world frame. For a closure between frame a (on body a) and
frame b (on body b, or the ground), A dq is the velocity of a relative to b, so the generalized
force A^T lambda applies lambda (world force / moment) to a at its frame origin and -lambda to b.
"""
from __future__ import annotations

import math
from operator import attrgetter

import numpy as np

from engine.errors import ModelError, InputError
from engine.maths.spatial import so3_log, pose
from engine.algorithms.api import _invoke, _work, _as_vector, integrate
from engine.algorithms.frames import frame_kinematics
from engine.algorithms.kinematics import body_bias
from engine.loops.kernels import pack, constraint_rows


# ------------------------------------------------------------------------------- frame kinematics
def _cross(a, b):
    """a x b for 3-vectors (numpy.cross is slow on small arrays)."""
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])


def _skew(a):
    return np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])


class FrameState:
    """World-frame kinematics of a frame rigidly attached to a body, for one (q, dq):
    pose (R, p), angular velocity w and origin velocity vel, their bias accelerations (ddq = 0)
    alpha and acc, and the Jacobians Jw, Jv (3 x nv) with w = Jw dq, vel = Jv dq."""
    __slots__ = ("R", "p", "w", "vel", "alpha", "acc", "Jw", "Jv")


class Kinematics:
    """The kinematics the constraints read for one (q, dq): frame states (one compiled call each,
    ``algorithms/frames.py``) and, on demand, every body's world pose T, body twist V and bias
    acceleration dV."""

    def __init__(self, model, q, v):
        self.model = model
        self.q = np.ascontiguousarray(q, dtype=float)
        self.v = np.ascontiguousarray(v, dtype=float)
        self._bodies = None

    def _body_states(self):
        if self._bodies is None:
            n = self.model.nbodies + 1
            T, V, dV = np.empty((n, 12)), np.empty((n, 6)), np.empty((n, 6))
            model = self.model
            _invoke(body_bias, model, ("q", "v"), (model._mb, _work(model).wb_kin, self.q, self.v, T, V, dV),
                    "constraint kinematics")
            self._bodies = T, V, dV
        return self._bodies

    @property
    def T(self):
        """World poses (n + 1 x 12: R row-major, p), row 0 the ground."""
        return self._body_states()[0]

    @property
    def V(self):
        """Body twists (n + 1 x 6), each in its body's frame."""
        return self._body_states()[1]

    @property
    def dV(self):
        """Bias accelerations (n + 1 x 6, ddq = 0, no gravity), body frames."""
        return self._body_states()[2]

    def frame(self, body, P):
        """FrameState of the frame with placement P (4x4) in body `body` (0 = ground)."""
        model = self.model
        out = np.empty((8, 3))
        J = np.empty((6, model.nv))
        _invoke(frame_kinematics, model, ("q", "v"), (model._mb, _work(model).wb_kin, self.q, self.v, body, P, out, J),
                "constraint kinematics")
        s = FrameState()
        s.R, s.p, s.w, s.vel, s.alpha, s.acc = out[:3], out[3], out[4], out[5], out[6], out[7]
        s.Jw, s.Jv = J[:3], J[3:]
        return s


# ------------------------------------------------------------------------------- constraint kinds
class Constraint:
    """Base class. Subclasses set `rows` and implement `evaluate(kin) -> (f, A, bias)`.

    Self-description (for plots and CSV columns): ``multiplier_rows(model)`` gives (label, unit) of
    each multiplier row; ``residual_unit`` the unit of |f(q)| of its position-level rows, which it
    has when ``has_position_rows``."""
    kind = "constraint"
    rows = 0
    holonomic = True
    has_position_rows = True     # rows at position level: a residual |f(q)| to measure
    residual_unit = ""

    def multiplier_rows(self, model=None):
        """[(label, unit)] of the multipliers, row by row (generalized forces by default)."""
        return [(f"row {k}", "") for k in range(self.rows)]

    def __init__(self, name):
        self.name = name
        self.enabled = True
        self.source = {}     # where it was declared: {"file", "line", "element"} (URDF <loop>)

    def bind(self, model):
        """Resolve link and joint names against the model (called when the model is built)."""
        return self

    def _error(self, message):
        return ModelError(f"constraint '{self.name}': {message}", **self.source)

    def _frame_of(self, model, link, placement, what):
        """(body, placement in that body) of a frame given in link `link`. None, the model's ground
        and "world" (when no link has that name: a floating-base model renames its ground) mean the
        ground."""
        f = None if link is None else model.frames.get(link)
        if f is None:
            if link is not None and link != "world":
                raise self._error(f"{what} names unknown link '{link}'")
            f = model.frames[model.ground_name]
        return f.body, f.placement @ np.array(placement, dtype=float)

    def __repr__(self):
        return f"{type(self).__name__}('{self.name}', rows={self.rows})"


def _placement(xyz=None, R=None, T=None):
    if T is not None:
        T = np.array(T, dtype=float)
        if T.shape != (4, 4) or not np.all(np.isfinite(T)):
            raise ModelError("constraint frame: expected a finite 4x4 pose")
        return T
    return pose(R, None if xyz is None else np.asarray(xyz, dtype=float))


class _TwoFrames(Constraint):
    def __init__(self, name, link_a, link_b=None, frame_a=None, frame_b=None, point_a=None, point_b=None):
        super().__init__(name)
        self.link_a, self.link_b = link_a, link_b
        self.frame_a = _placement(point_a, T=frame_a)
        self.frame_b = _placement(point_b, T=frame_b)

    def bind(self, model):
        self.body_a, self.P_a = self._frame_of(model, self.link_a, self.frame_a, "frame a")
        self.body_b, self.P_b = self._frame_of(model, self.link_b, self.frame_b, "frame b")
        if self.body_a == self.body_b:
            raise self._error("both frames are on the same rigid body")
        return self

    def frames(self, kin):
        return kin.frame(self.body_a, self.P_a), kin.frame(self.body_b, self.P_b)


class PointConstraint(_TwoFrames):
    """Ball closure: the origins of frame a and frame b coincide (3 rows). With `directions`
    (k x 3 world directions, e.g. the two axes of a plane) only those components are constrained:
    the planar closure of a planar linkage uses the two in-plane directions."""
    kind = "point"
    residual_unit = "m"

    def multiplier_rows(self, model=None):
        """A world force (N) along each constrained direction."""
        out = []
        for d in self.D:
            k = int(np.argmax(np.abs(d)))
            label = f"f{'xyz'[k]}" if abs(abs(d[k]) - 1.0) < 1e-12 else "f along (" + ", ".join(f"{x:.2g}" for x in d) + ")"
            out.append((label, "N"))
        return out

    def __init__(self, name, link_a, link_b=None, frame_a=None, frame_b=None, point_a=None, point_b=None,
                 directions=None):
        super().__init__(name, link_a, link_b, frame_a, frame_b, point_a, point_b)
        if directions is None:
            self.D = np.eye(3)
        else:
            D = np.atleast_2d(np.array(directions, dtype=float))
            if D.shape[1] != 3 or not np.all(np.isfinite(D)) or np.any(np.linalg.norm(D, axis=1) < 1e-12):
                raise ModelError(f"constraint '{name}': directions must be non-zero 3-vectors")
            D = D / np.abs(D).max(axis=1)[:, None]        # scaled first: |D| of huge entries overflows
            self.D = D / np.linalg.norm(D, axis=1)[:, None]
        self.rows = self.D.shape[0]

    def evaluate(self, kin):
        a, b = self.frames(kin)
        f = self.D @ (a.p - b.p)
        A = self.D @ (a.Jv - b.Jv)
        bias = self.D @ (a.acc - b.acc)
        return f, A, bias

    def wrench(self, kin, lam):
        a, _ = self.frames(kin)
        return a.p, self.D.T @ lam, np.zeros(3)


class RevoluteConstraint(_TwoFrames):
    """Revolute closure: frame origins coincide and the z axes of both frames stay aligned: 5 rows
    (3 position, 2 orientation: the components of b's x and y axes along a's z axis vanish)."""
    kind = "revolute"
    rows = 5
    residual_unit = "m, rad"

    def multiplier_rows(self, model=None):
        return [("fx", "N"), ("fy", "N"), ("fz", "N"), ("m about b's x", "N·m"), ("m about b's y", "N·m")]

    def evaluate(self, kin):
        a, b = self.frames(kin)
        f = np.empty(5)
        A = np.empty((5, kin.model.nv))
        bias = np.empty(5)
        f[:3] = a.p - b.p
        A[:3] = a.Jv - b.Jv
        bias[:3] = a.acc - b.acc
        z = a.R[:, 2]
        dz = _cross(a.w, z)
        dw = a.w - b.w
        for k in range(2):
            x = b.R[:, k]
            n = _cross(z, x)
            dn = _cross(dz, x) + _cross(z, _cross(b.w, x))
            f[3 + k] = z @ x
            A[3 + k] = n @ (a.Jw - b.Jw)
            bias[3 + k] = n @ (a.alpha - b.alpha) + dn @ dw
        return f, A, bias

    def wrench(self, kin, lam):
        a, b = self.frames(kin)
        z = a.R[:, 2]
        moment = lam[3] * _cross(z, b.R[:, 0]) + lam[4] * _cross(z, b.R[:, 1])
        return a.p, lam[:3].copy(), moment


class WeldConstraint(_TwoFrames):
    """Weld: frame a and frame b coincide (6 rows: 3 position, 3 orientation). The orientation
    residual is the rotation vector from b to a in the world frame."""
    kind = "weld"
    rows = 6
    residual_unit = "m, rad"

    def multiplier_rows(self, model=None):
        return [("fx", "N"), ("fy", "N"), ("fz", "N"), ("mx", "N·m"), ("my", "N·m"), ("mz", "N·m")]

    def evaluate(self, kin):
        a, b = self.frames(kin)
        f = np.empty(6)
        f[:3] = a.p - b.p
        f[3:] = b.R @ so3_log(b.R.T @ a.R)
        A = np.vstack((a.Jv - b.Jv, a.Jw - b.Jw))
        bias = np.concatenate((a.acc - b.acc, a.alpha - b.alpha))
        return f, A, bias

    def wrench(self, kin, lam):
        a, _ = self.frames(kin)
        return a.p, lam[:3].copy(), lam[3:].copy()


class DistanceConstraint(_TwoFrames):
    """The distance between the frame origins stays `length` (1 row): a massless rod with ball ends."""
    kind = "distance"
    rows = 1
    residual_unit = "m"

    def multiplier_rows(self, model=None):
        return [("rod force (a from b)", "N")]

    def __init__(self, name, link_a, link_b=None, length=1.0, frame_a=None, frame_b=None, point_a=None,
                 point_b=None):
        super().__init__(name, link_a, link_b, frame_a, frame_b, point_a, point_b)
        self.length = float(length)
        if not (np.isfinite(self.length) and self.length > 0):
            raise ModelError(f"constraint '{name}': length must be positive, got {length!r}")

    def evaluate(self, kin):
        a, b = self.frames(kin)
        d = a.p - b.p
        L = np.linalg.norm(d)
        if L < 1e-12:
            raise InputError(f"constraint '{self.name}': the two points coincide; the distance direction is undefined")
        e = d / L
        dd = a.vel - b.vel
        f = np.array([L - self.length])
        A = (e @ (a.Jv - b.Jv))[None, :]
        bias = np.array([e @ (a.acc - b.acc) + (dd @ dd - (e @ dd) ** 2) / L])
        return f, A, bias

    def wrench(self, kin, lam):
        a, b = self.frames(kin)
        d = a.p - b.p
        return a.p, lam[0] * d / np.linalg.norm(d), np.zeros(3)


class GearConstraint(Constraint):
    """Joint coupling q_j = ratio * q_i + offset between two 1-dof joints (a gear or belt)."""
    kind = "gear"
    rows = 1
    residual_unit = "rad"

    def multiplier_rows(self, model=None):
        """The coupling effort: N·m, or N when joint j slides."""
        lin = False
        if model is not None and self.joint_j in model.joint_names:
            lin = model.joint(self.joint_j).kind == "prismatic"
        return [("coupling effort", "N" if lin else "N·m")]

    def __init__(self, name, joint_i, joint_j, ratio=1.0, offset=0.0):
        super().__init__(name)
        self.joint_i, self.joint_j = joint_i, joint_j
        self.ratio, self.offset = float(ratio), float(offset)
        if not (np.isfinite(self.ratio) and np.isfinite(self.offset)):
            raise ModelError(f"constraint '{name}': ratio and offset must be finite, got {ratio!r}, {offset!r}")
        if joint_i == joint_j:
            raise ModelError(f"constraint '{name}': a gear couples two different joints, got '{joint_i}' twice")

    def bind(self, model):
        for jn in (self.joint_i, self.joint_j):
            if jn not in model.joint_names:
                raise self._error(f"unknown joint '{jn}'")
            if model.joint(jn).nv != 1:
                raise self._error(f"joint '{jn}' is not a 1-dof joint")
        self.iq = model.joint(self.joint_i).idx_q, model.joint(self.joint_j).idx_q
        self.iv = model.joint(self.joint_i).idx_v, model.joint(self.joint_j).idx_v
        return self

    def evaluate(self, kin):
        q = kin.q
        A = np.zeros((1, kin.model.nv))
        A[0, self.iv[1]] = 1.0
        A[0, self.iv[0]] -= self.ratio
        f = np.array([q[self.iq[1]] - self.ratio * q[self.iq[0]] - self.offset])
        return f, A, np.zeros(1)

    def wrench(self, kin, lam):
        return None


class PfaffianConstraint(Constraint):
    """A user constraint A(q) dq = 0 (nonholonomic in general). `jacobian(model, q) -> A (rows x nv)`;
    `bias(model, q, v) -> dA dq` is optional: without it, dA dq is the central difference of A(q)
    along dq in the tangent space."""
    kind = "pfaffian"
    holonomic = False
    has_position_rows = False

    def __init__(self, name, rows, jacobian, bias=None):
        super().__init__(name)
        self.rows = int(rows)
        self._jac = jacobian
        self._bias = bias

    def evaluate(self, kin):
        model, q, v = kin.model, kin.q, kin.v
        A = np.asarray(self._jac(model, q), dtype=float).reshape(self.rows, model.nv)
        if self._bias is not None:
            bias = np.asarray(self._bias(model, q, v), dtype=float).reshape(self.rows)
        else:
            h = 1e-6 / max(1.0, float(np.linalg.norm(v)))
            Ap = np.asarray(self._jac(model, integrate(model, q, h * v)), dtype=float)
            Am = np.asarray(self._jac(model, integrate(model, q, -h * v)), dtype=float)
            bias = ((Ap - Am) / (2 * h)) @ v
        return np.full(self.rows, np.nan), A, bias

    def wrench(self, kin, lam):
        return None


class RollingContact(Constraint):
    """A disk of `radius` rolling without slipping on the horizontal ground z = `ground`: the
    material point of the rim touching the ground has zero velocity (3 rows). The vertical row is
    holonomic (the contact point stays on the ground); the two tangential rows are nonholonomic.
    `axis` is the disk's symmetry axis in the link frame, `center` its centre."""
    kind = "rolling"
    rows = 3
    holonomic = False
    residual_unit = "m"

    def multiplier_rows(self, model=None):
        return [("fx", "N"), ("fy", "N"), ("fz", "N")]

    def __init__(self, name, link, radius, axis=(0.0, 1.0, 0.0), center=(0.0, 0.0, 0.0), ground=0.0):
        super().__init__(name)
        self.link = link
        self.radius = float(radius)
        axis = np.asarray(axis, dtype=float).reshape(3)
        self.center = np.asarray(center, dtype=float).reshape(3)
        self.ground = float(ground)
        if not (np.isfinite(self.radius) and self.radius > 0):
            raise ModelError(f"constraint '{name}': radius must be positive, got {radius!r}")
        if not (np.all(np.isfinite(axis)) and np.linalg.norm(axis) > 1e-12):
            raise ModelError(f"constraint '{name}': axis must be a non-zero 3-vector, got {axis.tolist()}")
        if not (np.all(np.isfinite(self.center)) and np.isfinite(self.ground)):
            raise ModelError(f"constraint '{name}': center and ground must be finite")
        axis = axis / np.abs(axis).max()                 # scaled first: |axis| of huge entries overflows
        self.axis = axis / np.linalg.norm(axis)

    def bind(self, model):
        self.body, self.P = self._frame_of(model, self.link, pose(p=self.center), "link")
        if self.body == 0:
            raise self._error("the disk must be a moving body")
        return self

    def _contact(self, c):
        n = c.R @ self.axis
        up = np.array([0.0, 0.0, 1.0])
        t = up - (up @ n) * n
        tn = np.linalg.norm(t)
        if tn < 1e-9:
            raise InputError(f"constraint '{self.name}': the disk lies flat; the contact point is undefined")
        u = t / tn
        return n, t, tn, u

    def evaluate(self, kin):
        c = kin.frame(self.body, self.P)
        n, t, tn, u = self._contact(c)
        rho = -self.radius * u                      # centre -> contact point (world)
        A = c.Jv - _skew(rho) @ c.Jw           # v_center + w x rho
        dn = _cross(c.w, n)
        up = np.array([0.0, 0.0, 1.0])
        dt_ = -(up @ dn) * n - (up @ n) * dn
        du = (dt_ - u * (u @ dt_)) / tn
        drho = -self.radius * du
        bias = c.acc + _cross(c.alpha, rho) + _cross(c.w, drho)
        f = np.array([np.nan, np.nan, c.p[2] + rho[2] - self.ground])
        return f, A, bias

    def wrench(self, kin, lam):
        c = kin.frame(self.body, self.P)
        _, _, _, u = self._contact(c)
        return c.p - self.radius * u, lam.copy(), np.zeros(3)


CONSTRAINT_KINDS = {"point": PointConstraint, "revolute": RevoluteConstraint, "weld": WeldConstraint,
                    "distance": DistanceConstraint, "gear": GearConstraint, "rolling": RollingContact}


# ------------------------------------------------------------------------------- assembly
def active_constraints(model, constraints=None):
    cs = model.constraints if constraints is None else constraints
    return [c for c in cs if c.enabled]


# what engine.loops.kernels.pack reads from each built-in kind besides its class: scalars, and arrays
# (compared by content, so an edit made in place is seen)
_PACKED = {
    "point": (("rows", "body_a", "body_b"), ("P_a", "P_b", "D")),
    "revolute": (("rows", "body_a", "body_b"), ("P_a", "P_b")),
    "weld": (("rows", "body_a", "body_b"), ("P_a", "P_b")),
    "distance": (("rows", "body_a", "body_b", "length"), ("P_a", "P_b")),
    "gear": (("rows", "iq", "iv", "ratio", "offset"), ()),
    "rolling": (("rows", "body", "radius", "ground"), ("P", "axis")),
}
_PACKED_GET = {kind: (attrgetter(*s), attrgetter(*a) if a else (lambda c: ())) for kind, (s, a) in _PACKED.items()}


def _fingerprint(c):
    """What the packed rows of constraint c depend on, comparable with ==: two attribute reads
    in C and one bytes copy per array (pack_cached runs this on every call)."""
    get = _PACKED_GET.get(c.kind)
    if get is None:            # not a built-in kind: pack() returns None whatever its values are
        return (type(c),)
    try:
        scalars, arrays = get[0](c), get[1](c)
    except AttributeError:     # not bound yet: never equal to a cached fingerprint
        return (type(c), object())
    return (type(c), scalars, *[x.tobytes() if isinstance(x, np.ndarray) else x for x in arrays])


def pack_cached(constraints, model, slot="_pack_cache"):
    """engine.loops.kernels.pack(constraints, model), kept on the model and reused while constraints
    with the same parameters are active (compared by value, arrays by content, so an edit made in
    place is seen): a per-call user of the packed rows pays a fingerprint, not a pack. One pack per
    slot: the dynamics' (the active constraints) and the residuals' (all of them) do not evict
    each other."""
    fps = [_fingerprint(c) for c in constraints]
    cached = model.__dict__.get(slot)
    if cached is not None and cached[0] == fps:
        return cached[1]
    packed = pack(constraints, model)
    model.__dict__[slot] = (fps, packed)
    return packed


def constraint_system(model, q, v, constraints=None, kin=None):
    """(f, A, bias) of the active constraints stacked: f (m; NaN on nonholonomic rows), A (m x nv)
    and bias = dA dq (m), all in world components. Also returns the Kinematics used."""
    cs = active_constraints(model, constraints)
    kin = Kinematics(model, q, v) if kin is None else kin
    m = sum(c.rows for c in cs)
    f = np.empty(m)
    A = np.empty((m, model.nv))
    bias = np.empty(m)
    r = 0
    for c in cs:
        fc, Ac, bc = c.evaluate(kin)
        f[r:r + c.rows], A[r:r + c.rows], bias[r:r + c.rows] = fc, Ac, bc
        r += c.rows
    return f, A, bias, kin


_SOFT_ERRORS = (ValueError, ArithmeticError, np.linalg.LinAlgError)


def constraint_residuals(model, q, constraints=None):
    """|f(q)| of each constraint in `constraints` (default: every constraint of the model, enabled
    or not), as an array in that order: the norm of its position-level rows (0 for one without any,
    such as rolling contact; NaN where f is undefined there: a rolling disk lying flat, a distance
    rod of length 0). Built-in kinds take one compiled call (``loopkernels.constraint_rows``);
    with a user's PfaffianConstraint, or where a row is undefined, each constraint is evaluated in
    Python. What the app's residual columns show, every step."""
    cs = list(model.constraints if constraints is None else constraints)
    out = np.zeros(len(cs))
    if type(q) is not np.ndarray or q.shape != (model.nq,) or q.dtype != np.float64:
        q = _as_vector(q, "q", model.nq)
        if q.shape[0] != model.nq:
            raise InputError(f"q: expected {model.nq}, got {q.shape[0]}", "q")
    if not cs:
        return out
    packed = pack_cached(cs, model, slot="_residual_pack")
    if packed is not None:
        ci, cf, m = packed
        f = np.empty(m)
        try:
            st = constraint_rows(model._mb, _work(model).wb_kin, q, model._zero_v, ci, cf, f, np.empty((m, model.nv)),
                                 np.empty(m))
        except (TypeError, ZeroDivisionError):   # q not a float64 vector: the Python path names it
            st = -1
        if st == 0:
            rows = f.tolist()
            r = 0
            for k, c in enumerate(cs):
                # NaN rows (nonholonomic, no f) are left out; f is finite elsewhere (finite q)
                out[k] = math.sqrt(sum(x * x for x in rows[r:r + c.rows] if x == x))
                r += c.rows
            return out
    kin = Kinematics(model, q, model._zero_v)
    for k, c in enumerate(cs):
        try:
            fc = c.evaluate(kin)[0]
        except _SOFT_ERRORS:
            out[k] = np.nan
            continue
        fc = fc[np.isfinite(fc)]
        out[k] = np.sqrt(fc @ fc)
    return out


def constraint_residual(model, q, constraints=None):
    """|f(q)| over the holonomic rows of the active constraints (the drift meter)."""
    f, _, _, _ = constraint_system(model, q, np.zeros(model.nv), constraints)
    f = f[np.isfinite(f)]
    return float(np.linalg.norm(f)) if f.size else 0.0
