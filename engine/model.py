"""Model (immutable, packed for the compiled kernels) and the builder that makes one.

A model is a tree of rigid bodies 1..n with parent[i] < i; body 0 is the fixed ground. Each body
has exactly one joint to its parent (fixed joints are merged into the parent body at build time,
inertia included; the merged link survives as a *frame* for kinematics and drawing).

Packed layout (one numpy record array, row 0 = ground, see ``MODEL_DTYPE``): the kernels receive the
whole model as a single argument, which keeps Python-to-compiled call overhead low.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field

import numpy as np

from .errors import ModelError
from .joints import Joint, Fixed, FIXED
from .spatial import spatial_inertia, Ad, se3_inv

MODEL_DTYPE = np.dtype([
    ("parent", np.int64), ("code", np.int64), ("iq", np.int64), ("iv", np.int64),
    ("nq", np.int64), ("nv", np.int64),
    ("R", np.float64, (3, 3)), ("p", np.float64, (3,)),        # joint placement in the parent body
    ("a1", np.float64, (3,)), ("a2", np.float64, (3,)), ("a3", np.float64, (3,)),
    ("pitch", np.float64),
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


class Inertia:
    """Mass properties of a rigid body: mass, centre of mass `com` (body frame) and the rotational
    inertia `I_com` about the centre of mass in body-frame axes."""

    def __init__(self, mass=0.0, com=(0.0, 0.0, 0.0), I_com=None):
        self.mass = float(mass)
        self.com = np.array(com, dtype=float).reshape(3)
        self.I_com = np.zeros((3, 3)) if I_com is None else np.array(I_com, dtype=float).reshape(3, 3)

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
        return spatial_inertia(self.mass, self.com, self.I_com)

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


@dataclass
class Frame:
    """A named frame rigidly attached to a body: every link, including merged fixed ones."""
    name: str
    body: int            # the movable body (0 = ground) it is attached to
    placement: np.ndarray  # 4x4 pose in that body's frame

    def __post_init__(self):
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


def _vec_param(x, n, what, default=0.0):
    if x is None:
        return np.full(n, default, dtype=float)
    a = np.asarray(x, dtype=float).reshape(-1)
    if a.size == 1 and n > 1:
        a = np.full(n, float(a[0]))
    if a.size != n:
        raise ModelError(f"{what}: expected {n} values, got {a.size}")
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
        self.visuals = []      # list of engine.visuals.Shape (drawn; never read by the dynamics)
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
        nv = joint.nv
        spec = _BodySpec(name, parent, joint, jn, T, inertia,
                         _vec_param(armature, nv, f"joint '{jn}' armature"),
                         _vec_param(damping, nv, f"joint '{jn}' damping"),
                         _vec_param(friction, nv, f"joint '{jn}' friction"),
                         _vec_param(lower, joint.nv, f"joint '{jn}' lower", -np.inf),
                         _vec_param(upper, joint.nv, f"joint '{jn}' upper", np.inf),
                         _vec_param(velocity_limit, nv, f"joint '{jn}' velocity", np.inf),
                         _vec_param(effort_limit, nv, f"joint '{jn}' effort", np.inf),
                         source or {})
        self._bodies.append(spec)
        self._names.add(name)
        self._joint_names.add(jn)
        return len(self._bodies)

    def add_constraint(self, constraint):
        """Add a loop closure or coupling (engine.constraints: PointConstraint, RevoluteConstraint,
        WeldConstraint, DistanceConstraint, GearConstraint, PfaffianConstraint, RollingContact)."""
        if any(c.name == constraint.name for c in self.constraints):
            raise ModelError(f"duplicate constraint name '{constraint.name}'")
        self.constraints.append(constraint)
        return constraint

    def build(self):
        return Model._from_specs(self)


class Model:
    """An articulated rigid-body model. Immutable once built; each algorithm keeps its own
    workspace inside the model (so one model must not be used from two threads at once: use
    ``model.clone()`` for a second thread, which shares the constant data)."""

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
                    X = Ad(se3_inv(T))
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
        m[0]["g"][3:] = -builder.gravity
        joints = []
        iq = iv = 0
        for k, (s, parent, T) in enumerate(movable, start=1):
            j = s.joint
            r = m[k]
            r["parent"], r["code"], r["iq"], r["iv"], r["nq"], r["nv"] = parent, j.code, iq, iv, j.nq, j.nv
            r["R"], r["p"] = T[:3, :3], T[:3, 3]
            r["a1"], r["a2"], r["a3"], r["pitch"] = j.axis1, j.axis2, j.axis3, j.pitch
            r["armature"][:j.nv] = s.armature
            r["damping"][:j.nv] = s.damping
            joints.append(JointInfo(s.joint_name, j.kind, k, parent, iq, iv, j.nq, j.nv,
                                    s.lower, s.upper, s.velocity_limit, s.effort_limit,
                                    s.damping, s.friction, s.armature))
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
        self.gravity = builder.gravity.copy()
        self._m = m
        self._mb = m.view(np.uint8)      # the kernels' (writable-typed, never written) byte view
        self._m.setflags(write=False)
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
        self._setup_workspaces()
        self._check_mass()
        self.constraints = [c.bind(self) for c in builder.constraints]
        return self

    def _setup_workspaces(self):
        n = self.nbodies + 1
        # one resident workspace per algorithm (allocated once; kernels never allocate)
        self._ws_rnea = np.zeros(n, dtype=WS_DTYPE)
        self._ws_aba = np.zeros(n, dtype=WS_DTYPE)
        self._ws_hd = np.zeros(n, dtype=WS_DTYPE)
        self._ws_crba = np.zeros(n, dtype=WS_DTYPE)
        self._ws_kin = np.zeros(n, dtype=WS_DTYPE)
        # byte views handed to the kernels (a plain uint8 array crosses into numba faster than a
        # record array; each kernel views it back as records)
        for name in ("rnea", "aba", "hd", "crba", "kin"):
            setattr(self, f"_wb_{name}", getattr(self, f"_ws_{name}").view(np.uint8))
        self._jac = None
        self._zero_v = np.zeros(self.nv)

    def _jac_scratch(self):
        if self._jac is None:
            n = self.nbodies + 1
            self._jac = (np.zeros((n, 6, self.nv)), np.zeros((n, 6, self.nv)))
        return self._jac

    def clone(self):
        """A model sharing this one's constant data with fresh workspaces (for another thread).
        Constraints are copied, so switching one on or off in the clone leaves this model alone."""
        other = object.__new__(Model)
        other.__dict__.update(self.__dict__)
        other._setup_workspaces()
        other.constraints = [copy.copy(c) for c in self.constraints]
        other.__dict__.pop("_constraint_warnings", None)
        return other

    def _check_mass(self):
        """A movable body whose subtree has no mass can not be accelerated by its joint."""
        sub = np.array([self._m[k]["mass"] + np.trace(self._m[k]["I"][:3, :3]) for k in range(self.nbodies + 1)])
        for k in range(self.nbodies, 0, -1):
            sub[self._m[k]["parent"]] += sub[k]
        for j in self.joints:
            if sub[j.body] <= 0.0 and not np.any(self._m[j.body]["armature"][:j.nv] > 0):
                raise ModelError(
                    f"joint '{j.name}' moves only massless links (a massless chain end): give link "
                    f"'{self.body_names[j.body - 1]}' or its descendants an <inertial>, or make the joint fixed")

    # ------------------------------------------------------------------ queries
    def joint(self, name) -> JointInfo:
        try:
            return self._joint_index[name]
        except KeyError:
            raise KeyError(f"no joint named '{name}' in model '{self.name}'; joints: {self.joint_names}") from None

    def q_slice(self, joint_name):
        j = self.joint(joint_name)
        return slice(j.idx_q, j.idx_q + j.nq)

    def v_slice(self, joint_name):
        j = self.joint(joint_name)
        return slice(j.idx_v, j.idx_v + j.nv)

    def body_index(self, name):
        """Index (1..n) of the movable body carrying the frame or link `name` (0 = ground)."""
        f = self.frames.get(name)
        if f is None:
            raise KeyError(f"no body or link named '{name}' in model '{self.name}'")
        return f.body

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
        raise KeyError(f"no constraint named '{name}' in model '{self.name}'")

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
