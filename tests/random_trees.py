"""Random kinematic trees built twice: as an ``engine`` model and as a ``pinocchio`` model, in code.

``random_pair(seed)`` returns a :class:`Pair` holding both models plus the coordinate maps between
them. The two models describe the SAME mechanism: same tree, joint kinds, axes, placements, masses,
centres of mass, rotational inertias, armature and gravity (0, 0, -9.81). Fixed bodies are merged by
the engine; in Pinocchio their inertia is appended to the parent joint at the same placement.

Conventions bridged here (engine <-> Pinocchio):
- spatial vectors: ours (angular, linear), pin (linear, angular); wrenches ours (m, f), pin (f, m).
- free joint: ours q = (x, y, z, qw, qx, qy, qz), v = (w, v_lin) body twist;
              pin  q = (x, y, z, qx, qy, qz, qw), v = (v_lin, w) body twist.
- spherical:  ours q = (qw, qx, qy, qz); pin q = (qx, qy, qz, qw); v = body angular velocity in both.
- planar (normal z in the joint frame): ours q = (x, y, theta); pin q = (x, y, cos, sin);
              v = body (vx, vy, omega) in both.
- revolute / prismatic / helical / universal: identical coordinates.
Coordinates are mapped by joint name: ours ``model.q_slice(name)``, pin ``joints[getJointId(name)]``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

import engine

KINDS = ("revolute", "prismatic", "helical", "universal", "spherical", "planar", "free", "fixed")


# ------------------------------------------------------------------ random ingredients
def random_rotation(rng):
    q = rng.normal(size=4)
    q /= np.linalg.norm(q)
    return engine.maths.spatial.quat_to_rot(q)


def random_quat(rng):
    """Unit quaternion (w, x, y, z)."""
    q = rng.normal(size=4)
    return q / np.linalg.norm(q)


def random_axis(rng, aligned_prob=0.3):
    """A unit axis; sometimes a coordinate axis (exercises pin's RX/RY/RZ-type joints)."""
    if rng.random() < aligned_prob:
        a = np.zeros(3)
        a[rng.integers(3)] = 1.0
        return a
    a = rng.normal(size=3)
    return a / np.linalg.norm(a)


def random_placement(rng, scale=0.5):
    T = np.eye(4)
    T[:3, :3] = random_rotation(rng)
    T[:3, 3] = rng.uniform(-scale, scale, size=3)
    return T


def random_inertia(rng, massless=False):
    """(mass, com, I_com) with I_com positive definite and satisfying the triangle inequality."""
    if massless:
        return 0.0, np.zeros(3), np.zeros((3, 3))
    mass = rng.uniform(0.3, 5.0)
    com = rng.uniform(-0.3, 0.3, size=3)
    a, b, c = rng.uniform(0.002, 0.05, size=3)
    principal = np.array([b + c, a + c, a + b]) * mass
    R = random_rotation(rng)
    return mass, com, R @ np.diag(principal) @ R.T


def se3(T):
    return pin.SE3(np.array(T[:3, :3]), np.array(T[:3, 3]))


# ------------------------------------------------------------------ joint kinds, both sides
def make_joint(kind, rng, planar_normal=None):
    """(engine joint, pinocchio joint model or None for fixed). planar_normal="random": a planar
    joint with a random plane (engine only: pin's planar joint moves in its frame's xy-plane)."""
    if kind in ("revolute", "prismatic"):
        a = random_axis(rng)
        ours = engine.Revolute(a) if kind == "revolute" else engine.Prismatic(a)
        if np.count_nonzero(a) == 1:          # a coordinate axis: pin's RX/RY/RZ, PX/PY/PZ
            letter = "XYZ"[int(np.flatnonzero(a)[0])]
            return ours, getattr(pin, f"JointModel{'R' if kind == 'revolute' else 'P'}{letter}")()
        return ours, (pin.JointModelRevoluteUnaligned(a) if kind == "revolute" else pin.JointModelPrismaticUnaligned(a))
    if kind == "helical":
        a = random_axis(rng, aligned_prob=0.0)
        pitch = rng.uniform(-0.3, 0.3)
        return engine.Helical(a, pitch), pin.JointModelHelicalUnaligned(a, pitch)
    if kind == "universal":
        a1 = random_axis(rng, aligned_prob=0.0)
        a2 = random_axis(rng, aligned_prob=0.0)
        a2 -= 0.5 * (a2 @ a1) * a1          # not orthogonal in general, but never parallel
        a2 /= np.linalg.norm(a2)
        return engine.Universal(a1, a2), pin.JointModelUniversal(a1, a2)
    if kind == "spherical":
        return engine.Spherical(), pin.JointModelSpherical()
    if kind == "planar":
        if planar_normal == "random":
            return engine.Planar(random_axis(rng, aligned_prob=0.0)), None
        return engine.Planar(), pin.JointModelPlanar()
    if kind == "free":
        return engine.Free(), pin.JointModelFreeFlyer()
    if kind == "fixed":
        return engine.Fixed(), None
    raise ValueError(kind)


# ------------------------------------------------------------------ the pair
@dataclass
class Pair:
    seed: int
    model: engine.Model
    pmodel: pin.Model
    kinds: dict                       # joint name -> kind (movable joints)
    body_names: list                  # every body, movable and fixed, in build order
    fixed_names: list                 # the fixed bodies
    pin_frame: dict                   # body name -> (pin joint id, 4x4 placement of the body in that joint frame)
    joint_body: dict                  # joint name -> body name
    vidx: np.ndarray = field(default=None)   # v_pin[vidx[k]] = v_ours[k]  (ours coordinate k)

    # ------------------------------------------------ coordinates
    def _pj(self, name):
        return self.pmodel.joints[self.pmodel.getJointId(name)]

    def q_to_pin(self, q):
        q = np.asarray(q, dtype=float)
        out = np.zeros(self.pmodel.nq)
        for name, kind in self.kinds.items():
            s = self.model.q_slice(name)
            pj = self._pj(name)
            x = q[s]
            if kind == "free":
                y = np.concatenate((x[:3], x[4:7], x[3:4]))
            elif kind == "spherical":
                y = np.concatenate((x[1:4], x[0:1]))
            elif kind == "planar":
                y = np.array([x[0], x[1], np.cos(x[2]), np.sin(x[2])])
            else:
                y = x
            out[pj.idx_q:pj.idx_q + pj.nq] = y
        return out

    def q_from_pin(self, qp):
        out = np.zeros(self.model.nq)
        for name, kind in self.kinds.items():
            s = self.model.q_slice(name)
            pj = self._pj(name)
            y = qp[pj.idx_q:pj.idx_q + pj.nq]
            if kind == "free":
                x = np.concatenate((y[:3], y[6:7], y[3:6]))
            elif kind == "spherical":
                x = np.concatenate((y[3:4], y[0:3]))
            elif kind == "planar":
                x = np.array([y[0], y[1], np.arctan2(y[3], y[2])])
            else:
                x = y
            out[s] = x
        return out

    def v_to_pin(self, v):
        """Velocity-space vectors (v, a, tau, dv): a permutation."""
        v = np.asarray(v, dtype=float)
        out = np.zeros(self.pmodel.nv)
        out[self.vidx] = v
        return out

    def v_from_pin(self, vp):
        return np.asarray(vp)[self.vidx]

    def mat_from_pin(self, Mp):
        """nv x nv matrix in pin coordinates -> ours."""
        return np.asarray(Mp)[np.ix_(self.vidx, self.vidx)]

    def jac_from_pin(self, Jp):
        """6 x nv pin Jacobian (rows linear, angular; pin columns) -> ours (rows angular, linear)."""
        Jp = np.asarray(Jp)
        return np.vstack((Jp[3:], Jp[:3]))[:, self.vidx]

    @staticmethod
    def wrench_to_pin(F):
        """Ours (m, f) -> pin.Force(linear=f, angular=m)."""
        F = np.asarray(F, dtype=float)
        return pin.Force(F[3:].copy(), F[:3].copy())

    # ------------------------------------------------ random states
    def random_q(self, rng):
        q = np.zeros(self.model.nq)
        for name, kind in self.kinds.items():
            s = self.model.q_slice(name)
            if kind == "free":
                q[s] = np.concatenate((rng.uniform(-1, 1, 3), random_quat(rng)))
            elif kind == "spherical":
                q[s] = random_quat(rng)
            elif kind == "planar":
                q[s] = np.array([*rng.uniform(-1, 1, 2), rng.uniform(-np.pi, np.pi)])
            elif kind in ("revolute", "helical", "universal"):
                q[s] = rng.uniform(-np.pi, np.pi, s.stop - s.start)
            else:
                q[s] = rng.uniform(-0.5, 0.5, s.stop - s.start)
        return q

    def random_v(self, rng, scale=1.0):
        return rng.normal(scale=scale, size=self.model.nv)


def _pick_parent(rng, names):
    """Mostly extend recent bodies (deep chains), sometimes branch from anywhere."""
    if len(names) > 3 and rng.random() < 0.5:
        return names[-1 - rng.integers(min(3, len(names)))]
    return names[rng.integers(len(names))]


def random_pair(seed, min_dof=30, floating=None, armature=True, kinds=None, planar_normal=None,
                gravity=(0.0, 0.0, -9.81), axis_aligned=0.0):
    """Build the same random branching tree in both libraries.

    axis_aligned > 0: revolute joints are drawn four times as often and that fraction of them turns
    about +-e_k of an unrotated placement (as in most URDFs: the kernels' sparse-rotation path,
    ``Model`` field ``axis``); the default 0 leaves the random stream, hence every other test's
    trees, unchanged.

    Every tree holds at least one joint of each kind in `kinds` (default: all of ``KINDS``), at least
    `min_dof` velocity coordinates, and at least one body with two or more movable children.
    floating=None: a free root on odd seeds, a fixed base (free joint deeper in the tree) on even ones.
    planar_normal="random": planar joints move in random planes; then there is no Pinocchio twin
    (``pmodel`` is None) and the pair serves the engine's self-consistency tests only.
    """
    rng = np.random.default_rng(seed)
    floating = bool(seed % 2) if floating is None else floating
    kinds_required = list(KINDS if kinds is None else kinds)
    gravity = np.array(gravity, dtype=float)
    b = engine.ModelBuilder(f"random_{seed}", gravity=gravity)
    pm = pin.Model()
    pm.name = f"random_{seed}"
    pm.gravity = pin.Motion(gravity, np.zeros(3))

    pin_frame = {"world": (0, np.eye(4))}
    candidates = ["world"]        # bodies that can get children
    body_names, fixed_names, joint_kinds, joint_body = [], [], {}, {}
    children = {"world": 0}
    armature_of = {}

    # the required kinds first (a floating tree's free root counts as its free joint), then random ones
    rest = [kd for kd in kinds_required if not (floating and kd == "free")]
    rng.shuffle(rest)
    plan = (["free"] if floating else []) + rest
    weights = {"revolute": 4, "prismatic": 2, "helical": 1, "universal": 2, "spherical": 2,
               "planar": 1, "free": 0.5, "fixed": 2}
    if axis_aligned > 0:
        weights["revolute"] = 16       # mostly revolute joints, as in the robots this path is for
    if kinds is not None:
        weights = {k: w for k, w in weights.items() if k in kinds}
    wk = list(weights)
    wp = np.array([weights[k] for k in wk], dtype=float)
    wp /= wp.sum()

    specs = []                    # (name, parent, kind, engine joint, pin joint, T, mass, com, Ic, armature)
    nv = 0
    k = 0
    while True:
        if k < len(plan):
            kind = plan[k]
        else:
            branching = any(c >= 2 for c in children.values())
            if nv >= min_dof and branching:
                break
            kind = str(rng.choice(wk, p=wp))
        name = f"b{k}"
        if floating and k == 0:
            parent = "world"
        else:
            pool = [c for c in candidates if not (floating and c == "world")]
            parent = _pick_parent(rng, pool)
        ej, pj = make_joint(kind, rng, planar_normal)
        T = np.eye(4) if (floating and k == 0) else random_placement(rng)
        if axis_aligned > 0 and kind == "revolute" and rng.random() < axis_aligned:
            a = np.zeros(3)
            a[rng.integers(3)] = rng.choice((-1.0, 1.0))
            ej, pj = engine.Revolute(a), pin.JointModelRevoluteUnaligned(a)
            T[:3, :3] = np.eye(3)
        mass, com, Ic = random_inertia(rng, massless=(kind == "fixed" and rng.random() < 0.3))
        arm = rng.uniform(0.0, 0.2, size=ej.nv) if (armature and ej.nv) else None
        specs.append((name, parent, kind, ej, pj, T, mass, com, Ic, arm))
        if kind != "fixed":
            nv += ej.nv
            children[parent] = children.get(parent, 0) + 1
        children.setdefault(name, 0)
        candidates.append(name)
        k += 1

    # ours: in generation order (parents before children, but not depth-first)
    for k, (name, parent, kind, ej, pj, T, mass, com, Ic, arm) in enumerate(specs):
        b.add_body(name, parent=parent, joint=ej, placement=T, inertia=engine.Inertia(mass, com, Ic),
                   joint_name=f"j{k}", armature=arm)
        body_names.append(name)
        if kind == "fixed":
            fixed_names.append(name)
        else:
            joint_kinds[f"j{k}"] = kind
            joint_body[f"j{k}"] = name
            armature_of[f"j{k}"] = arm

    model = b.build()
    if planar_normal == "random":
        return Pair(seed, model, None, joint_kinds, body_names, fixed_names, {}, joint_body)

    # Pinocchio: depth-first (its CRBA assumes each subtree's velocity indices are contiguous)
    kids = {}
    for k, sp in enumerate(specs):
        kids.setdefault(sp[1], []).append(k)
    stack = list(reversed(kids.get("world", [])))
    while stack:
        k = stack.pop()
        name, parent, kind, ej, pj, T, mass, com, Ic, arm = specs[k]
        pj_parent, T_parent = pin_frame[parent]
        if kind == "fixed":
            Tb = T_parent @ T
            if mass > 0:
                pm.appendBodyToJoint(pj_parent, pin.Inertia(mass, com, Ic), se3(Tb))
            pin_frame[name] = (pj_parent, Tb)
        else:
            jid = pm.addJoint(pj_parent, pj, se3(T_parent @ T), f"j{k}")
            pm.appendBodyToJoint(jid, pin.Inertia(mass, com, Ic), pin.SE3.Identity())
            pin_frame[name] = (jid, np.eye(4))
        stack.extend(reversed(kids.get(name, [])))

    # the two models order their coordinates differently: map by joint name
    arm_p = np.zeros(pm.nv)
    vidx = np.zeros(model.nv, dtype=np.int64)
    for jname, kind in joint_kinds.items():
        s = model.v_slice(jname)
        pjm = pm.joints[pm.getJointId(jname)]
        idx = np.arange(pjm.idx_v, pjm.idx_v + pjm.nv)
        if kind == "free":
            idx = np.concatenate((idx[3:], idx[:3]))     # ours (w, v) <- pin (v, w)
        vidx[s] = idx
        if armature_of[jname] is not None:
            arm_p[idx] = armature_of[jname]
    pm.armature = arm_p
    return Pair(seed, model, pm, joint_kinds, body_names, fixed_names, pin_frame, joint_body, vidx)
