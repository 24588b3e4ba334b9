"""Mouse interaction physics: the spring that pulls a grabbed body while the simulation runs, and
the inverse kinematics that poses the robot while it is paused. Runs in the simulation thread.

Spring (MuJoCo's "perturbation", made independent of the robot's size): the grab point p (fixed in
the body) is pulled toward the mouse target x with

    F = m_eff (w^2 (x - p) - 2 zeta w dp/dt),     |F| <= m_eff a_max

where m_eff = 1 / (u^T W u) is the body's effective mass at the grab point along the pull
direction u, and W = J_p M_ff^-1 J_p^T is the point's mobility (J_p: world point Jacobian over
the torque-driven coordinates, M_ff: their block of the mass matrix; acceleration-prescribed
joints do not yield to forces). The drag starts with the target on the grab point and its gain
ramps in over ``RAMP`` seconds, so the first frame of a drag never spikes.
"""
from __future__ import annotations

import numpy as np


def _skew(r):
    return np.array([[0.0, -r[2], r[1]], [r[2], 0.0, -r[0]], [-r[1], r[0], 0.0]])


def point_jacobian(engine, model, q, body_name, p_local):
    """(p_world (3,), J_p (3 x nv)): world position of a point fixed in a body and the Jacobian of
    its world velocity."""
    T = engine.frame_pose(model, q, body_name)
    R, o = T[:3, :3], T[:3, 3]
    r = R @ p_local
    J = engine.jacobian(model, q, body_name, "local_world_aligned")
    Jp = J[3:] - _skew(r) @ J[:3]
    return o + r, Jp, R


class DragSpring:
    """A spring from a point of a body to a target; ``wrench`` is called once per step."""

    OMEGA = 2.0 * np.pi * 2.0    # natural frequency (rad/s)
    ZETA = 1.0                   # damping ratio
    A_MAX = 60.0                 # cap on the spring's acceleration (m/s^2)
    RAMP = 0.05                  # gain ramp at the start (s)

    def __init__(self, engine, model, body_name, p_local, t0):
        self.e = engine
        self.model = model
        self.body = body_name
        self.p_local = np.asarray(p_local, dtype=float).copy()
        self.t0 = t0
        self.target = None
        self.force = np.zeros(3)
        self.point = None
        self._W = None
        self._mass_total = max(model.mass, 1e-6)

    def update_mobility(self, q, prescribed):
        """W = J_p M_ff^-1 J_p^T (refreshed a few times a second; cheap enough for every batch)."""
        p, Jp, _ = point_jacobian(self.e, self.model, q, self.body, self.p_local)
        free = ~np.asarray(prescribed, dtype=bool)
        if not free.any():
            self._W = np.zeros((3, 3))
        else:
            M = self.e.mass_matrix(self.model, q)[np.ix_(free, free)]
            Jf = Jp[:, free]
            try:
                X = np.linalg.solve(M, Jf.T)
            except np.linalg.LinAlgError:
                X = np.linalg.lstsq(M, Jf.T, rcond=None)[0]
            self._W = Jf @ X
        if self.target is None:
            self.target = p.copy()
        return p

    def effective_mass(self, u):
        """1 / (u^T W u), kept between 1e-3 and the robot's whole mass."""
        if self._W is None:
            return self._mass_total
        w = float(u @ self._W @ u)
        if w <= 1.0 / self._mass_total:
            return self._mass_total
        return max(1.0 / w, 1e-3)

    def wrench(self, t, q, v):
        """The body-frame wrench (m, f) of the spring at state (t, q, v)."""
        p, Jp, R = point_jacobian(self.e, self.model, q, self.body, self.p_local)
        self.point = p
        if self.target is None:
            self.target = p.copy()
        e = self.target - p
        dp = Jp @ v
        dist = np.linalg.norm(e)
        u = e / dist if dist > 1e-9 else (dp / np.linalg.norm(dp) if np.linalg.norm(dp) > 1e-9 else np.array([0, 0, 1.0]))
        m = self.effective_mass(u)
        w = self.OMEGA
        F = m * (w * w * e - 2.0 * self.ZETA * w * dp)
        ramp = min(1.0, max(0.0, (t - self.t0) / self.RAMP))
        F *= ramp
        cap = m * self.A_MAX
        n = np.linalg.norm(F)
        if n > cap:
            F *= cap / n
        self.force = F
        f_body = R.T @ F
        return np.concatenate((np.cross(self.p_local, f_body), f_body))


def accepted_bounds(model, q):
    """(lo, hi) over q for the pose drag: the joint limits of 1-dof joints, widened to take in a
    start state that lies past them (so the drag never snaps a joint back)."""
    lo = np.full(model.nq, -np.inf)
    hi = np.full(model.nq, np.inf)
    for j in model.joints:
        if j.nq == j.nv and j.lower is not None:
            lo[j.idx_q:j.idx_q + j.nq] = j.lower
            hi[j.idx_q:j.idx_q + j.nq] = j.upper
    q = np.asarray(q, dtype=float)
    return np.minimum(lo, q), np.maximum(hi, q)


def pose_ik(engine, model, q, body_name, p_local, target, movable=None, iters=30, damping=0.05,
            max_step=0.25, tol=1e-4):
    """Damped least squares on the point Jacobian: move q so that the body point reaches target.
    ``movable``: bool mask of velocity coordinates allowed to move (default all). Joint limits of
    1-dof joints are respected. Returns the new q."""
    q = np.array(q, dtype=float)
    nv = model.nv
    mask = np.ones(nv, dtype=bool) if movable is None else np.asarray(movable, dtype=bool)
    lo, hi = accepted_bounds(model, q)        # a start past a limit is accepted, never snapped back
    lam2 = damping ** 2
    for _ in range(iters):
        p, Jp, _ = point_jacobian(engine, model, q, body_name, p_local)
        err = np.asarray(target, dtype=float) - p
        if np.linalg.norm(err) < tol:
            break
        J = np.where(mask[None, :], Jp, 0.0)
        dv = J.T @ np.linalg.solve(J @ J.T + lam2 * np.eye(3), err)
        n = np.linalg.norm(dv)
        if n > max_step:
            dv *= max_step / n
        q = engine.integrate(model, q, dv)
        q = np.clip(q, lo, hi)
    return q


def ik_mask(model, body_name):
    """Coordinates a pose drag may move: the joints on the path from the root to the body, except a
    floating base's free joint (unless the body is the floating base itself)."""
    k = model.body_index(body_name)
    parent = {j.body: j.parent for j in model.joints}
    by_body = {j.body: j for j in model.joints}
    path = []
    while k != 0:
        path.append(by_body[k])
        k = parent[k]
    mask = np.zeros(model.nv, dtype=bool)
    for j in path:
        mask[j.idx_v:j.idx_v + j.nv] = True
    non_free = [j for j in path if j.kind != "free"]
    if non_free:
        for j in path:
            if j.kind == "free":
                mask[j.idx_v:j.idx_v + j.nv] = False
    return mask


class PoseDrag:
    """A drag while paused: the pose follows the mouse through IK."""

    def __init__(self, engine, model, body, p_local, q):
        self.body = body
        self.p_local = p_local
        self.mask = ik_mask(model, body)
        self.point = point_jacobian(engine, model, q, body, p_local)[0]
        self.target = self.point.copy()
        self.force = np.zeros(3)
