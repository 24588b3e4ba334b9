"""Ground contact and joint limits on the simulation thread's side (nothing here imports Qt).

- ``ContactChannels``: the sample columns of contact (per contact body its normal and tangential
  ground force, N; the total ground reaction, N, world axes) and of the joint limits (per limited
  joint its limit torque, N·m, or force, N), appended after the columns ``SampleLayout`` made
  (older columns keep their places); ``fill(row, sim)`` writes them once per step from
  ``sim.contacts`` and ``sim.limit_forces`` (the engine's numbers: nothing is re-derived here).
  ``layout.extra_groups`` tells the plot panel how to list them.
- ``snapshot_fields(sim)``: what the GUI draws (the contacts' points and forces, the limit forces,
  the joints sitting on a limit, the pinned points), as Snapshot keyword fields.
- ``pose_ik_pinned``: the pose drag's inverse kinematics with pinned bodies (Shift+click a foot):
  the pinned bodies keep their whole pose (position and orientation) first, the dragged point
  follows the mouse in what freedom is left (task priority: the drag acts in the null space of
  the pins), the floating base moves when that is what keeps the feet in place.
- Bounds of the pose drag accept the state it starts from: a joint that is past its limit (limits
  were off, or a state was typed in) is never snapped back to the limit, it may only move toward it.
"""
from __future__ import annotations

import numpy as np

from app.sim.drag import accepted_bounds, point_jacobian, pose_ik

ON_LIMIT_TOL = 2e-3     # rad or m: a joint this close to a bound (or pressed on it) sits on its limit
FORCE_EPS = 1e-9


def floating(model):
    """Whether the model has a floating base (its first joint is free)."""
    return bool(model.joints) and model.joints[0].kind == "free"


def limited_joints(model):
    """1-dof joints with at least one finite limit (continuous joints have none)."""
    out = []
    for j in model.joints:
        if j.nv == 1 and j.nq == 1 and j.lower is not None and j.upper is not None:
            lo, hi = float(np.asarray(j.lower).reshape(-1)[0]), float(np.asarray(j.upper).reshape(-1)[0])
            if np.isfinite(lo) or np.isfinite(hi):
                out.append((j, lo, hi))
    return out


def default_ground(model):
    """Whether the ground is on when a model opens (the window and ``jointlab simulate`` alike): on
    for articulated floating-base robots with collision shapes; a single free body (the spinning
    top, the rolling disk) shows its motion in free space or on its own rolling constraint. A
    lesson's "ground" switch (``model.lesson_ground``, app.sim.lessons.build_model) wins."""
    if getattr(model, "lesson_ground", None) is not None:
        return bool(model.lesson_ground)
    return floating(model) and model.nbodies > 1 and bool(contact_bodies(model))


def contact_bodies(model):
    """Names of the bodies with collision shapes (the ones that can touch the ground), model order."""
    ks = sorted({int(s.body) for s in getattr(model, "collisions", ()) or () if int(s.body) > 0})
    return [model.body_names[k - 1] for k in ks]


class ContactChannels:
    """Contact and limit columns of a ``SampleLayout`` (appended to it in place)."""

    def __init__(self, model, layout):
        self.model = model
        self.bodies = contact_bodies(model)
        self.limited = limited_joints(model)
        base = layout.width
        names, units = [], []
        contact_items, limit_items = [], []
        self.body_cols = {}
        for b in self.bodies:
            c = base + len(names)
            self.body_cols[b] = (c, c + 1)
            names += [f"contact:{b}:normal", f"contact:{b}:tangential"]
            units += ["N", "N"]
            contact_items += [(f"{b} normal [N]", c), (f"{b} tangential [N]", c + 1)]
        c = base + len(names)
        self.total = slice(c, c + 3)
        names += ["contact:total:fx", "contact:total:fy", "contact:total:fz"]
        units += ["N", "N", "N"]
        contact_items += [(f"total ground reaction {a} [N]", c + k) for k, a in enumerate("xyz")]
        c = base + len(names)
        self.limit_cols = np.arange(c, c + len(self.limited), dtype=np.intp)
        self.limit_v = np.array([j.idx_v for j, _, _ in self.limited], dtype=np.intp)
        for j, _, _ in self.limited:
            u = "N" if j.kind == "prismatic" else "N·m"
            limit_items.append((f"{j.name} [{u}]", base + len(names)))
            names.append(f"limit:{j.name}")
            units.append(u)
        # joint dry friction: a column per coordinate with friction (the torque it applies, as the limits')
        friction_items = []
        fric = [(j, k) for j in model.joints if j.friction is not None
                for k in range(j.nv) if k < np.size(j.friction) and float(np.ravel(j.friction)[k]) > 0.0]
        c = base + len(names)
        self.friction_cols = np.arange(c, c + len(fric), dtype=np.intp)
        self.friction_v = np.array([j.idx_v + k for j, k in fric], dtype=np.intp)
        for j, k in fric:
            u = "N" if j.kind == "prismatic" else "N·m"
            label = j.name if j.nv == 1 else f"{j.name}[{k}]"
            friction_items.append((f"{label} [{u}]", base + len(names)))
            names.append(f"friction:{label}")
            units.append(u)
        self.contact_cols = slice(base, self.total.stop)
        self.width = len(names)
        # the layout grows (its older columns stay where they are)
        layout.names = list(layout.names) + names
        layout.units = list(layout.units) + units
        layout.width = base + len(names)
        layout._index = {n: i for i, n in enumerate(layout.names)}
        groups = list(getattr(layout, "extra_groups", ()))
        groups.append(("ground contact forces",
                       "the force the ground applies to each body, along the ground normal and across it "
                       "(friction), summed over the body's contact points; and their total (world axes)",
                       contact_items))
        if limit_items:
            groups.append(("joint limit torques",
                           "the torque (N·m) or force (N) each joint's limit applies (zero off the limit)",
                           limit_items))
        if friction_items:
            groups.append(("joint friction torques",
                           "the torque (N·m) or force (N) each joint's dry friction applies (Simulation > "
                           "Joint Dry Friction; at most its friction, against the motion)", friction_items))
        layout.extra_groups = tuple(groups)
        layout.contact = self
        self._channel = np.full(model.nbodies + 1, -1, dtype=np.intp)    # body index -> contact body k (-1: none)
        for k, b in enumerate(self.bodies):
            self._channel[model.body_index(b)] = k
        self._nt = np.zeros((len(self.bodies), 2))
        self.q_stepped = np.full(model.nq, np.nan)
        self._nt_cols = np.array([c for b in self.bodies for c in self.body_cols[b]], dtype=np.intp)

    def stepped(self, sim):
        """Steps that wrote no row (the window samples every 1 ms): the contacts belong to sim.q."""
        self.q_stepped[:] = sim.q

    def fill(self, row, sim):
        """Write this step's contact and limit columns of a sample row: per contact body the sum of
        its contacts' normal forces and of the magnitudes of their tangential (friction) forces,
        and the total force."""
        self.q_stepped[:] = sim.q         # the state the contacts belong to (a pose edit makes them stale)
        bodies, _, normals, forces, _ = sim.contact_arrays()
        if len(bodies):
            fn = forces[:, 0] * normals[:, 0] + forces[:, 1] * normals[:, 1] + forces[:, 2] * normals[:, 2]
            ft = forces - fn[:, None] * normals
            ftn = np.sqrt(ft[:, 0] * ft[:, 0] + ft[:, 1] * ft[:, 1] + ft[:, 2] * ft[:, 2])
            ch = self._channel[bodies]
            mine = ch >= 0
            nb = len(self.bodies)
            nt = self._nt
            nt[:, 0] = np.bincount(ch[mine], weights=fn[mine], minlength=nb)
            nt[:, 1] = np.bincount(ch[mine], weights=ftn[mine], minlength=nb)
            row[self._nt_cols] = nt.reshape(-1)
            row[self.total] = forces.sum(axis=0)
        else:
            row[self.contact_cols] = 0.0
        if len(self.limit_cols):
            row[self.limit_cols] = sim.limit_forces[self.limit_v]
        if len(self.friction_cols):
            row[self.friction_cols] = sim.friction_forces[self.friction_v]

    def on_limit(self, q, limit_forces):
        """Names of the joints sitting on (or past) a limit: within ON_LIMIT_TOL of a bound, or
        pressed on it by a non-zero limit force."""
        out = []
        for j, lo, hi in self.limited:
            x = float(q[j.idx_q])
            if x <= lo + ON_LIMIT_TOL or x >= hi - ON_LIMIT_TOL or abs(float(limit_forces[j.idx_v])) > FORCE_EPS:
                out.append(j.name)
        return tuple(out)


class ContactState:
    """Per worker: the contact columns, the pinned bodies, and the snapshot fields."""

    def __init__(self, model, layout):
        self.model = model
        self.channels = ContactChannels(model, layout)
        self.fill = self.channels.fill
        self.stepped = self.channels.stepped
        self.pins = {}        # body -> (p_local, 4x4 world pose of the body when pinned)

    def pin(self, engine, q, body, p_local):
        """Pin a body where it is now (its whole pose); pinning it again unpins it."""
        self.model.body_index(body)
        if body in self.pins:
            del self.pins[body]
            return False
        self.pins[body] = (np.array(p_local, dtype=float), np.array(engine.frame_pose(self.model, q, body)))
        return True

    def snapshot_fields(self, engine, sim):
        """The Snapshot fields of contact. After a pose edit (drag, slider, reset) the last step's
        contacts and limit forces belong to another state: none are shown until the next step."""
        fresh = np.array_equal(sim.q, self.channels.q_stepped)
        contacts = tuple((c.body, np.array(c.point), np.array(c.force)) for c in sim.contacts) if fresh else ()
        lf = np.array(sim.limit_forces) if fresh else np.zeros(self.model.nv)
        pins = tuple((b, T[:3, :3] @ p + T[:3, 3]) for b, (p, T) in self.pins.items())
        return dict(contacts=contacts, limit_forces=lf, on_limit=self.channels.on_limit(sim.q, lf),
                    ground=sim.ground, joint_limits=bool(sim.joint_limits), pins=pins)

    def pose(self, engine, q, drag, target):
        """The pose drag's IK: with pins, the pinned IK; without, the plain one (bounds that accept
        the start state)."""
        if self.pins:
            return pose_ik_pinned(engine, self.model, q, drag.body, drag.p_local, target, self.pins)
        return pose_ik(engine, self.model, q, drag.body, drag.p_local, target, drag.mask)


def path_mask(model, bodies):
    """Velocity coordinates of every joint from the root to any of these bodies (free joint included)."""
    parent = {j.body: j.parent for j in model.joints}
    by_body = {j.body: j for j in model.joints}
    mask = np.zeros(model.nv, dtype=bool)
    for b in bodies:
        k = model.body_index(b)
        while k != 0:
            j = by_body[k]
            mask[j.idx_v:j.idx_v + j.nv] = True
            k = parent[k]
    return mask


def _rot_log(R):
    """Rotation vector of R (world)."""
    c = max(-1.0, min(1.0, 0.5 * (np.trace(R) - 1.0)))
    th = np.arccos(c)
    w = np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])
    if th < 1e-9:
        return 0.5 * w
    if np.pi - th < 1e-6:
        # near pi: the axis from the symmetric part
        A = 0.5 * (R + np.eye(3))
        k = int(np.argmax(np.diag(A)))
        axis = A[:, k] / np.sqrt(max(A[k, k], 1e-300))
        return th * axis
    return th / (2.0 * np.sin(th)) * w


def _pin_rows(engine, model, q, pins):
    """(error (6k), Jacobian (6k x nv)) of the pinned bodies: rotation then position of the pinned
    point, world axes."""
    errs, rows = [], []
    for body, (p_local, T_goal) in pins.items():
        p, Jp, R = point_jacobian(engine, model, q, body, p_local)
        J = engine.jacobian(model, q, body, "local_world_aligned")
        p_goal = T_goal[:3, :3] @ p_local + T_goal[:3, 3]
        errs.append(_rot_log(T_goal[:3, :3] @ R.T))
        errs.append(p_goal - p)
        rows.append(J[:3])
        rows.append(Jp)
    return np.concatenate(errs), np.vstack(rows)


def _dls(J, e, damping):
    """Damped least squares J^T (J J^T + d^2 I)^-1 e."""
    m = J.shape[0]
    return J.T @ np.linalg.solve(J @ J.T + damping ** 2 * np.eye(m), e)


def pose_ik_pinned(engine, model, q, body, p_local, target, pins, iters=40, damping=0.02,
                   max_step=0.25, tol=1e-5):
    """Move q so that the pinned bodies keep their poses (first) and the body point reaches the
    target (in the pins' null space). Joints move along the paths from the root to the dragged and
    the pinned bodies, the floating base included. Returns the new q."""
    q = np.array(q, dtype=float)
    target = np.asarray(target, dtype=float)
    lo, hi = accepted_bounds(model, q)
    mask = path_mask(model, [body] + list(pins))
    cols = np.flatnonzero(mask)
    n = len(cols)
    for it in range(iters):
        e1, J1 = _pin_rows(engine, model, q, pins)
        p, Jp, _ = point_jacobian(engine, model, q, body, p_local)
        e2 = target - p
        J1r, J2r = J1[:, cols], Jp[:, cols]
        # priority: the pins exactly (a little damping against singular legs), the drag after
        pinv1 = J1r.T @ np.linalg.pinv(J1r @ J1r.T + 1e-8 * np.eye(len(e1)))
        d1 = pinv1 @ e1
        N = np.eye(n) - pinv1 @ J1r
        JN = J2r @ N
        d2 = N @ _dls(JN, e2 - J2r @ d1, damping)
        d = d1 + d2
        s = np.linalg.norm(d)
        if s > max_step:
            d *= max_step / s
        dv = np.zeros(model.nv)
        dv[cols] = d
        q = engine.integrate(model, q, dv)
        q = np.clip(q, lo, hi)
        if np.linalg.norm(e1) < tol and np.linalg.norm(e2) < tol:
            break
    # the pins alone, to their tolerance (the drag may ask for more than the legs allow)
    for _ in range(10):
        e1, J1 = _pin_rows(engine, model, q, pins)
        if np.linalg.norm(e1) < 1e-7:
            break
        dv = np.zeros(model.nv)
        dv[cols] = _dls(J1[:, cols], e1, 1e-4)
        q = np.clip(engine.integrate(model, q, dv), lo, hi)
    return q
