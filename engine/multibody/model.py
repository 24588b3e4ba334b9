"""Model (immutable, packed for the compiled kernels) and the builder that makes one.

A model is a tree of rigid bodies 1..n with parent[i] < i; body 0 is the fixed ground. Each body
has exactly one joint to its parent (fixed joints are merged into the parent body at build time,
inertia included; the merged link survives as a *frame* for kinematics and drawing).

Packed layout (one numpy record array, row 0 = ground, see ``MODEL_DTYPE``): the kernels receive the
whole model as a single argument, which keeps Python-to-compiled call overhead low.
"""
from __future__ import annotations

import copy
import threading
import warnings
from dataclasses import dataclass, field

import numpy as np

from engine.errors import ModelError, ModelWarning, NameNotFound
from engine.maths.joints import Joint, Fixed, FIXED, REVOLUTE
from engine.kernel.layout import MODEL_DTYPE, WS_DTYPE  # noqa: F401  (re-exported: the kernels import them from here)


# Building a model runs once per model, in Python: these are numpy twins of engine.maths.spatial's
# spatial_inertia and Ad(se3_inv(T)) (the same formulas), so that loading a model compiles nothing.
# The compiled ones took 9.6 s (spatial_inertia: numba's slicing and matmul) and 4.5 s (se3_inv, Ad)
# of CPU on an empty kernel cache, on the first start's path to the window's model (engine.warmup's
# "model" task); tests/test_model_numpy.py compares them with the compiled ones.
def _skew(x):
    return np.array([[0.0, -x[2], x[1]], [x[2], 0.0, -x[0]], [-x[1], x[0], 0.0]])


def _spatial_inertia(mass, com, I_com):
    """engine.maths.spatial.spatial_inertia in numpy: [[I_com - m [c][c], m [c]], [-m [c], m 1]]."""
    C = _skew(com)
    G = np.zeros((6, 6))
    G[:3, :3] = I_com - mass * (C @ C)
    G[:3, 3:] = mass * C
    G[3:, :3] = -mass * C
    for k in range(3):
        G[3 + k, 3 + k] = mass
    return G


def _Ad_inv(T):
    """engine.maths.spatial.Ad(se3_inv(T)) in numpy: Ad of the inverse placement."""
    Rt = T[:3, :3].T.copy()
    X = np.zeros((6, 6))
    X[:3, :3] = Rt
    X[3:, 3:] = Rt
    X[3:, :3] = _skew(-(Rt @ T[:3, 3])) @ Rt
    return X


class Inertia:
    """Mass properties of a rigid body: mass, centre of mass `com` (body frame) and the rotational
    inertia `I_com` about the centre of mass in body-frame axes."""

    def __init__(self, mass=0.0, com=(0.0, 0.0, 0.0), I_com=None):
        self.mass = float(mass)
        self.com = np.array(com, dtype=float).reshape(3)
        self.I_com = np.zeros((3, 3)) if I_com is None else np.array(I_com, dtype=float).reshape(3, 3)
        for what, x in (("mass", self.mass), ("com", self.com), ("I_com", self.I_com)):
            if not np.all(np.isfinite(x)):
                raise ModelError(f"Inertia: {what} holds NaN or Inf ({np.array2string(np.asarray(x))})")
        if self.mass < 0:
            raise ModelError(f"Inertia: mass must not be negative, got {self.mass:g}")

    @classmethod
    def from_matrix(cls, G):
        m = G[3, 3]
        if m <= 0.0:
            return cls(0.0, np.zeros(3), G[:3, :3].copy())
        C = G[:3, 3:] / m
        c = np.array([C[2, 1], C[0, 2], C[1, 0]])
        return cls(m, c, G[:3, :3] + m * (C @ C))

    def matrix(self):
        """Generalized 6x6 inertia in the body frame."""
        return _spatial_inertia(self.mass, self.com, self.I_com)

    def __repr__(self):
        return f"Inertia(mass={self.mass:g}, com={self.com.tolist()})"


@dataclass
class JointInfo:
    """What the model knows of one movable joint (model order)."""
    name: str
    kind: str
    body: int            # index of the body it moves (1..n)
    parent: int          # index of the parent body (0 = ground)
    idx_q: int
    idx_v: int
    nq: int
    nv: int
    lower: np.ndarray = None
    upper: np.ndarray = None
    velocity_limit: np.ndarray = None
    effort_limit: np.ndarray = None
    damping: np.ndarray = None
    friction: np.ndarray = None
    armature: np.ndarray = None
    axis: np.ndarray = None    # revolute, prismatic, helical: the unit axis in the body's frame (S's column's
                               # rotation part, or its translation part for a prismatic joint); else None


@dataclass
class Frame:
    """A named frame rigidly attached to a body: every link, including merged fixed ones."""
    name: str
    body: int            # the movable body (0 = ground) it is attached to
    placement: np.ndarray  # 4x4 pose in that body's frame

    def __post_init__(self):
        # a C-contiguous float64 4x4, as the Jacobian kernel's entry point reads it (engine.algorithms.api)
        self.placement = np.array(self.placement, dtype=np.float64, order="C")
        if self.placement.shape != (4, 4):
            raise ModelError(f"frame {self.name!r}: placement must be 4 x 4, got shape {self.placement.shape}")
        # decided once, so per-call kinematics can skip the identity product
        self.offset = not np.array_equal(self.placement, np.eye(4))


@dataclass
class _BodySpec:
    name: str
    parent: str
    joint: Joint
    joint_name: str
    placement: np.ndarray
    inertia: Inertia
    armature: np.ndarray
    damping: np.ndarray
    friction: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    velocity_limit: np.ndarray
    effort_limit: np.ndarray
    source: dict = field(default_factory=dict)


def _vec_param(x, n, what, default=0.0, allowed="any"):
    """x as n floats (one number is repeated). allowed: "nonnegative" (finite, >= 0: armature,
    damping, friction), "limit" (not NaN; +-inf means no limit), "bound" (not NaN, >= 0; inf means
    none: velocity and effort limits). A value outside raises ModelError naming `what` and it."""
    if x is None:
        return np.full(n, default, dtype=float)
    try:
        a = np.asarray(x, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        raise ModelError(f"{what}: expected {n} number(s), got {x!r}") from None
    if a.size == 1 and n > 1:
        a = np.full(n, float(a[0]))
    if a.size != n:
        raise ModelError(f"{what}: expected {n} values, got {a.size}")
    shown = ", ".join(f"{c:g}" for c in a)
    if allowed == "nonnegative" and not np.all(np.isfinite(a) & (a >= 0)):
        raise ModelError(f"{what}: expected finite numbers >= 0, got {shown}")
    if allowed in ("limit", "bound") and np.any(np.isnan(a)):
        raise ModelError(f"{what}: holds NaN ({shown}); give a number, or leave it out for no limit")
    if allowed == "bound" and np.any(a < 0):
        raise ModelError(f"{what} limit: expected numbers >= 0, got {shown}")
    return a


class ModelBuilder:
    """Make a model in code.

        b = ModelBuilder("double_pendulum")
        b.add_body("link1", parent="world", joint=Revolute((0, 1, 0)),
                   placement=pose(p=(0, 0, 2)), inertia=Inertia(1.0, (0, 0, -0.5), I3))
        model = b.build()

    `placement` is the pose of the joint frame in the parent body's frame at q = 0 (4x4); the child
    body's frame is the joint frame moved by the joint. Fixed joints are merged at build time.
    """

    GROUND = "world"

    def __init__(self, name="model", gravity=(0.0, 0.0, -9.81)):
        self.name = name
        self.gravity = np.array(gravity, dtype=float).reshape(3)
        self._bodies: list[_BodySpec] = []
        self._names = {self.GROUND}
        self.ground_name = self.GROUND
        self.constraints = []  # loop closures (closed-loop issue)
        self.visuals = []      # list of engine.multibody.visuals.Shape (drawn; never read by the dynamics)
        self.collisions = []
        self.description = {}  # gallery text: name, what it demonstrates, suggested joint modes
        self.mimic = []        # URDF <mimic>: dicts joint, mimicked, multiplier, offset (joints stay independent)
        self._joint_names = set()
        self.source = None

    def set_ground_name(self, name):
        """Name the fixed root link (URDF root of a fixed-base robot)."""
        self._names.discard(self.ground_name)
        self.ground_name = name
        self._names.add(name)

    def add_body(self, name, parent=None, joint=None, placement=None, inertia=None, joint_name=None,
                 armature=None, damping=None, friction=None, lower=None, upper=None,
                 velocity_limit=None, effort_limit=None, source=None):
        parent = self.ground_name if parent is None else parent
        joint = Fixed() if joint is None else joint
        if name in self._names:
            raise ModelError(f"duplicate body name '{name}'", **(source or {}))
        if parent not in self._names:
            raise ModelError(f"body '{name}': unknown parent '{parent}'", **(source or {}))
        jn = joint_name or f"{name}_joint"
        if jn in self._joint_names:
            raise ModelError(f"duplicate joint name '{jn}'", **(source or {}))
        T = np.eye(4) if placement is None else np.array(placement, dtype=float)
        if T.shape != (4, 4) or not np.all(np.isfinite(T)):
            raise ModelError(f"body '{name}': placement must be a finite 4x4 pose", **(source or {}))
        R = T[:3, :3]
        if np.abs(R.T @ R - np.eye(3)).max() > 1e-6 or np.linalg.det(R) < 0:
            raise ModelError(f"body '{name}': placement rotation is not a rotation", **(source or {}))
        inertia = Inertia() if inertia is None else inertia
        for what, x in (("mass", inertia.mass), ("com", inertia.com), ("I_com", inertia.I_com)):
            if not np.all(np.isfinite(x)):
                raise ModelError(f"body '{name}': inertia {what} holds NaN or Inf", **(source or {}))
        if not inertia.mass >= 0:
            raise ModelError(f"body '{name}': mass must not be negative, got {inertia.mass:g}", **(source or {}))
        nv = joint.nv
        try:
            params = (_vec_param(armature, nv, f"joint '{jn}' armature", allowed="nonnegative"),
                      _vec_param(damping, nv, f"joint '{jn}' damping", allowed="nonnegative"),
                      _vec_param(friction, nv, f"joint '{jn}' friction", allowed="nonnegative"),
                      _vec_param(lower, nv, f"joint '{jn}' lower", -np.inf, allowed="limit"),
                      _vec_param(upper, nv, f"joint '{jn}' upper", np.inf, allowed="limit"),
                      _vec_param(velocity_limit, nv, f"joint '{jn}' velocity", np.inf, allowed="bound"),
                      _vec_param(effort_limit, nv, f"joint '{jn}' effort", np.inf, allowed="bound"))
        except ModelError as e:
            raise ModelError(e.bare_message, **(source or {})) from None
        lo, up = params[3], params[4]
        if np.any(lo > up):
            k = int(np.flatnonzero(lo > up)[0])
            raise ModelError(f"joint '{jn}': lower limit {lo[k]:g} is above upper limit {up[k]:g}"
                             + (f" (coordinate {k})" if nv > 1 else ""), **(source or {}))
        spec = _BodySpec(name, parent, joint, jn, T, inertia, *params, source or {})
        self._bodies.append(spec)
        self._names.add(name)
        self._joint_names.add(jn)
        return len(self._bodies)

    def add_constraint(self, constraint):
        """Add a loop closure or coupling (engine.loops.constraints: PointConstraint, RevoluteConstraint,
        WeldConstraint, DistanceConstraint, GearConstraint, PfaffianConstraint, RollingContact)."""
        if any(c.name == constraint.name for c in self.constraints):
            raise ModelError(f"duplicate constraint name '{constraint.name}'")
        self.constraints.append(constraint)
        return constraint

    def build(self):
        return Model._from_specs(self)


def _coordinate_axis(joint, T):
    """k when the joint turns about +-e_k (exactly) and its placement T is not rotated (exactly the
    identity), so that its pose T_i(q) = (Rot_k(+-q), p) has a sparse rotation the kernels exploit
    (engine.algorithms.common.joint_pose); -1 for every other joint."""
    if joint.code != REVOLUTE or joint.pitch != 0.0 or not np.array_equal(T[:3, :3], np.eye(3)):
        return -1
    a = np.asarray(joint.axis1, dtype=float)
    nz = np.flatnonzero(a)
    if nz.size != 1 or abs(a[nz[0]]) != 1.0:
        return -1
    return int(nz[0])


class Workspace:
    """The scratch memory of the compiled kernels for one thread: one record array per algorithm
    (``WS_DTYPE``, one row per body) and the byte views handed to the kernels (a plain uint8 array
    crosses into numba faster than a record array; each kernel views it back as records)."""

    __slots__ = ("rnea", "aba", "hd", "crba", "kin", "wb_rnea", "wb_aba", "wb_hd", "wb_crba",
                 "wb_kin", "jac", "shape_M", "shape_J", "shape_P")

    def __init__(self, nbodies, nv):
        n = nbodies + 1
        # the shapes of the public calls' outputs (mass matrix, Jacobian, body poses), made once
        self.shape_M, self.shape_J, self.shape_P = (nv, nv), (6, nv), (nbodies, 4, 4)
        for name in ("rnea", "aba", "hd", "crba", "kin"):
            ws = np.zeros(n, dtype=WS_DTYPE)
            setattr(self, name, ws)
            setattr(self, "wb_" + name, ws.view(np.uint8))
        # Coriolis (algorithms/coriolis.py): world columns s, ds/dt; subtree sums Ic, Bc; world
        # twists; one joint's columns of Ic ds + Bc s, Ic s, Bc^T s and a body's momentum
        self.jac = (np.zeros((2, 6, nv)), np.zeros((n, 2, 6, 6)), np.zeros((n, 6)), np.zeros((4, 6, 6)))


class Model:
    """An articulated rigid-body model. Its constant data are immutable once built (``gravity`` is
    the one setting, assigned as a whole). Every thread that calls the engine on a model gets its
    own workspaces (created at its first call), so one model may be used from several threads at
    once; ``model.clone()`` gives an independent copy (own gravity, own constraint switches)."""

    # ------------------------------------------------------------------ construction
    @classmethod
    def _from_specs(cls, builder: ModelBuilder):
        specs = builder._bodies
        ground = builder.ground_name
        # a frame for every link: name -> (movable body index, placement in it)
        frames = {ground: Frame(ground, 0, np.eye(4))}
        movable = []          # specs of movable bodies in order
        body_inertia = [np.zeros((6, 6))]
        body_frame = [ground]
        for s in specs:
            pf = frames[s.parent]
            if s.joint.code == FIXED:
                T = pf.placement @ s.placement
                frames[s.name] = Frame(s.name, pf.body, T)
                if s.inertia.mass > 0 or np.any(s.inertia.I_com):
                    # merge: inertia of the fixed child expressed in the movable body's frame
                    G = s.inertia.matrix()
                    X = _Ad_inv(T)
                    body_inertia[pf.body] = body_inertia[pf.body] + X.T @ G @ X
            else:
                k = len(movable) + 1
                movable.append((s, pf.body, pf.placement @ s.placement))
                frames[s.name] = Frame(s.name, k, np.eye(4))
                body_inertia.append(s.inertia.matrix())
                body_frame.append(s.name)
        n = len(movable)
        m = np.zeros(n + 1, dtype=MODEL_DTYPE)
        m[0]["R"] = np.eye(3)
        m[0]["axis"] = -1
        m[0]["g"][3:] = -builder.gravity
        joints = []
        iq = iv = 0
        for k, (s, parent, T) in enumerate(movable, start=1):
            j = s.joint
            r = m[k]
            r["parent"], r["code"], r["iq"], r["iv"], r["nq"], r["nv"] = parent, j.code, iq, iv, j.nq, j.nv
            r["R"], r["p"] = T[:3, :3], T[:3, 3]
            r["a1"], r["a2"], r["a3"], r["pitch"] = j.axis1, j.axis2, j.axis3, j.pitch
            r["axis"] = _coordinate_axis(j, T)
            r["armature"][:j.nv] = s.armature
            r["damping"][:j.nv] = s.damping
            joints.append(JointInfo(s.joint_name, j.kind, k, parent, iq, iv, j.nq, j.nv,
                                    s.lower, s.upper, s.velocity_limit, s.effort_limit,
                                    s.damping, s.friction, s.armature,
                                    j.axis1.copy() if j.kind in ("revolute", "prismatic", "helical") else None))
            iq += j.nq
            iv += j.nv
        m[0]["nq"], m[0]["nv"] = iq, iv   # row 0 carries the totals
        for k in range(n + 1):
            G = body_inertia[k]
            m[k]["I"] = 0.5 * (G + G.T)
            inr = Inertia.from_matrix(m[k]["I"])
            m[k]["mass"], m[k]["com"] = inr.mass, inr.com
        self = cls.__new__(cls)
        self.name = builder.name
        g = builder.gravity
        if not np.all(np.isfinite(g)):
            raise ModelError(f"gravity holds NaN or Inf: {g}")
        self._set_packed(m)
        self.nq, self.nv, self.nbodies = iq, iv, n
        self.joints = joints
        self.joint_names = [j.name for j in joints]
        self.body_names = body_frame[1:]
        self.ground_name = ground
        self.frames = frames
        self._joint_index = {j.name: j for j in joints}
        self._body_index = {name: k for k, name in enumerate(body_frame)}
        self.constraints = []
        self.visuals = list(builder.visuals)
        self.collisions = list(builder.collisions)
        self.description = dict(builder.description)
        self.mimic = list(builder.mimic)
        self.source = builder.source
        self._tls = threading.local()
        self._zero_v = np.zeros(self.nv)      # read by the kernels as v = 0 or a = 0, never written
        self._torque_v = np.zeros(self.nv, dtype=bool)   # read as 'no joint prescribed', never written
        # the joint (index in self.joints) of each velocity coordinate: a one-flag-per-joint mask m
        # becomes one flag per coordinate as m[self._coordinate_joint]
        self._coordinate_joint = np.repeat(np.arange(len(joints)), [j.nv for j in joints]).astype(np.int64)
        self.massless_joints = self._find_massless()
        self.constraints = [c.bind(self) for c in builder.constraints]
        self.self_collision = False
        self.disabled_collisions = []
        self.contact_materials = {}
        return self

    # ------------------------------------------------------------------ body-body contact settings
    # ``self_collision`` (default False): whether two links of one robot (the subtree of a free
    # joint, or everything attached to the ground by other joints, with the ground's own shapes)
    # touch each other in the contact step. Off by default: robots' collision shapes are coarse, and
    # links that are not parent and child can overlap by design (a hip or wrist made of three
    # revolute joints with short links between them puts a link's shape inside its grandparent's;
    # SRDFs list such pairs as "Adjacent" or "Never"). Turned on without those pairs, the contact
    # step would push them apart at the first step, so it is asked for per model once its pairs
    # are known (it also costs the narrow phase on every near pair of links). Adjacent links never touch;
    # ``disabled_collisions`` lists more pairs of link (or body) names, e.g. from an SRDF:
    # ``model.disable_collisions("robot.srdf")``. Bodies of different roots (two robots, free
    # objects) always touch. ``contact_materials``: body index -> (friction, restitution) of
    # bodies with their own values (engine.Scene sets them); the others take the ground's.
    def disable_collisions(self, srdf):
        """Add the pairs an SRDF's ``<disable_collisions>`` lists (a path or the XML text) to
        ``disabled_collisions``; returns how many were added."""
        from engine.collision.srdf import disabled_pairs
        pairs = disabled_pairs(srdf)
        self.disabled_collisions = list(self.disabled_collisions) + pairs
        return len(pairs)

    # ------------------------------------------------------------------ packed data and settings
    def _set_packed(self, m):
        """Install a packed record array (read-only from now on) and the kernels' byte view of it.
        A new array is installed rather than the old one written, so a call running in another
        thread finishes on the data it started with."""
        self._mb = m.view(np.uint8)      # the kernels' (writable-typed, never written) byte view
        m.setflags(write=False)          # (after taking the view, which stays writable-typed)
        self._m = m
        self.__dict__.pop("_sw", None)   # the shared workspaces are made again, to the new data's sizes

    @property
    def gravity(self):
        """Gravity in the world frame (3-vector, m/s^2). Assign a new vector to change it, e.g.
        ``model.gravity = (0, 0, 0)``; every algorithm and the Simulator use the new value."""
        g = -self._m[0]["g"][3:]
        g.setflags(write=False)      # assign the whole vector; an element write would change nothing
        return g

    @gravity.setter
    def gravity(self, value):
        try:
            g = np.array(value, dtype=float).reshape(-1)
        except (TypeError, ValueError):
            raise ValueError(f"gravity: expected 3 numbers (world frame, m/s^2), got {value!r}") from None
        if g.size != 3:
            raise ValueError(f"gravity: expected 3 numbers (world frame, m/s^2), got {g.size}")
        if not np.all(np.isfinite(g)):
            raise ValueError(f"gravity: holds NaN or Inf: {g}")
        m = self._m.copy()
        m[0]["g"][:3] = 0.0
        m[0]["g"][3:] = -g           # dV_0 = (0, -gravity): gravity as a fictitious base acceleration
        self._set_packed(m)

    def _work(self):
        """This thread's workspaces (made at the thread's first call)."""
        try:
            return self._tls.w
        except AttributeError:
            w = self._tls.w = Workspace(self.nbodies, self.nv)
            return w

    def _shared_work(self):
        """The workspaces of the public calls that leave nothing in them to be read after the kernel
        returns (engine.algorithms.api), shared by every thread: those kernels hold the GIL from
        start to end, so two threads never use them at once. Made at the first call; dropped with
        the packed data (_set_packed), so they always have the model's sizes."""
        try:
            return self._sw
        except AttributeError:
            w = self._sw = Workspace(self.nbodies, self.nv)
            return w

    def clone(self):
        """An independent copy sharing this one's constant data: its own gravity setting, its own
        constraint switches and warning counts."""
        other = object.__new__(Model)
        other.__dict__.update(self.__dict__)
        other._tls = threading.local()
        other.constraints = [copy.copy(c) for c in self.constraints]
        other.disabled_collisions = list(getattr(self, "disabled_collisions", []))
        other.contact_materials = dict(getattr(self, "contact_materials", {}))
        other.__dict__.pop("_constraint_warnings", None)
        return other

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_tls", None)
        state.pop("_sw", None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._tls = threading.local()

    def _find_massless(self):
        """Joints that move only massless links (a massless chain end). They load with one warning:
        their articulated inertia is singular, so such a joint can only be acceleration-prescribed
        (forward dynamics with it torque-driven raises SingularInertiaError naming it)."""
        sub = np.array([self._m[k]["mass"] + np.trace(self._m[k]["I"][:3, :3]) for k in range(self.nbodies + 1)])
        for k in range(self.nbodies, 0, -1):
            sub[self._m[k]["parent"]] += sub[k]
        bad = tuple(j.name for j in self.joints
                    if sub[j.body] <= 0.0 and not np.any(self._m[j.body]["armature"][:j.nv] > 0))
        if bad:
            where = f"{self.source}: " if self.source else ""
            warnings.warn(
                f"{where}joint(s) {', '.join(repr(n) for n in bad)} move only massless links (a "
                "massless chain end): they can only be acceleration-prescribed (forward dynamics with "
                "one of them torque-driven raises SingularInertiaError); give the links an <inertial> "
                "or make the joints fixed to simulate them freely", ModelWarning, stacklevel=4)
        return bad

    def characteristic_length(self):
        """A length that sizes the model (m): the longest chain of joint placements and centre-of-
        mass offsets from the ground, at least 0.01 m. Tolerances that scale with the model use it."""
        reach = np.zeros(self.nbodies + 1)
        best = 0.0
        for k in range(1, self.nbodies + 1):
            r = self._m[k]
            reach[k] = reach[r["parent"]] + float(np.linalg.norm(r["p"]))
            best = max(best, reach[k] + float(np.linalg.norm(r["com"])))
        for f in self.frames.values():
            best = max(best, reach[f.body] + float(np.linalg.norm(f.placement[:3, 3])))
        return max(best, 0.01)

    # ------------------------------------------------------------------ queries
    def joint(self, name) -> JointInfo:
        try:
            return self._joint_index[name]
        except KeyError:
            raise NameNotFound("joint", name, self.name, self.joint_names) from None
        except TypeError:
            raise NameNotFound("joint", name, self.name, self.joint_names) from None

    def q_slice(self, joint_name):
        j = self.joint(joint_name)
        return slice(j.idx_q, j.idx_q + j.nq)

    def v_slice(self, joint_name):
        j = self.joint(joint_name)
        return slice(j.idx_v, j.idx_v + j.nv)

    def body_index(self, name):
        """Index (1..n) of the movable body carrying the frame or link `name` (0 = ground)."""
        return self.frame(name).body

    def frame(self, name, argument=None) -> Frame:
        """The Frame of link or body `name`; NameNotFound (listing near matches) if there is none."""
        f = self.frames.get(name) if isinstance(name, str) else None
        if f is None:
            raise NameNotFound("link", name, self.name, self.frames.keys(), argument)
        return f

    def neutral(self):
        q = np.zeros(self.nq)
        for j in self.joints:
            if j.kind == "spherical":
                q[j.idx_q] = 1.0
            elif j.kind == "free":
                q[j.idx_q + 3] = 1.0
        return q

    def constraint(self, name):
        for c in self.constraints:
            if c.name == name:
                return c
        raise NameNotFound("constraint", name, self.name, [c.name for c in self.constraints])

    @property
    def mass(self):
        return float(self._m["mass"].sum())

    @property
    def armature(self):
        a = np.zeros(self.nv)
        for j in self.joints:
            a[j.idx_v:j.idx_v + j.nv] = self._m[j.body]["armature"][:j.nv]
        return a

    @property
    def damping(self):
        d = np.zeros(self.nv)
        for j in self.joints:
            d[j.idx_v:j.idx_v + j.nv] = self._m[j.body]["damping"][:j.nv]
        return d

    def body_inertia(self, body):
        """Inertia (after merging fixed links) of a movable body, in its frame."""
        k = body if isinstance(body, (int, np.integer)) else self._body_index[body]
        return Inertia.from_matrix(self._m[k]["I"].copy())

    def __repr__(self):
        kinds = {}
        for j in self.joints:
            kinds[j.kind] = kinds.get(j.kind, 0) + 1
        return (f"Model('{self.name}', bodies={self.nbodies}, nq={self.nq}, nv={self.nv}, "
                f"joints={kinds}, mass={self.mass:.4g} kg)")
