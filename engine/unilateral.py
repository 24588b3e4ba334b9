"""Unilateral constraints: joint limits and ground contact with Coulomb friction, one velocity-level
time step (Stewart-Trinkle / Anitescu-Potra, as MuJoCo, Bullet, DART, Drake's TAMSI and Pinocchio's
constraint solvers do).

Why this integrator: contact is impulsive (an impact changes v in no time) and sticking friction is
a set-valued law; RK4's stages assume a smooth right-hand side and do not mix with either. So a step
with contacts or limits near is a semi-implicit Euler step at the impulse level:

    v+ = v_free + G lambda,     v_free = v + h a_free(q, v),     q+ = q (+) h v+

a_free is the simulator's hybrid dynamics (torque-given joints, acceleration-prescribed joints,
damping, external wrenches, closed loops with their Baumgarte multipliers) and G = M_h^-1 J^T the
*hybrid* articulated response to the constraint rows J (``constrained.response``: no M formed): an
acceleration-prescribed joint keeps its motion whatever the contact does, and its motor supplies
the difference (reported in ``tau``). Steps with nothing near keep the simulator's own integrator.

Rows (all velocity level, J v+ compared with a target):
- contact normal n:  n.v+ >= -d/h when the gap d > 0 (a *speculative* contact: the point may
  close the gap in this step, no more; a body never passes the plane by the linear motion and no
  force acts at a distance), n.v+ >= 0 when touching (d <= 0), or n.v+ >= -e n.v- after an impact
  with restitution e;
- friction t1, t2: the exact Coulomb disk |lambda_t| <= mu lambda_n, sticking when t.v+ = 0;
- joint limit: +-v+_i >= -dist/h (so q+ stays within the limit exactly for 1-dof joints), or
  >= -e v- with restitution e (``limit_restitution``, default 0: no bounce);
- closed loops: A dv = 0 (the loop multipliers absorb the contact impulses).

Solver: projected Gauss-Seidel over the rows with the exact friction disk (per contact: normal
projected on lambda_n >= 0, then the 2x2 tangential block solved and projected on the disk, not a
pyramid, so sliding friction has the right magnitude and direction in every direction), warm started
from the previous step's impulses, compiled with numba. PGS alone converges slowly when masses
differ by 100-1000x (the sinking stacks of dart#3442) and leaves a slow creep when a block sticks
(the creep of mujoco#3328). So after PGS its active set is *polished*: the contacts in contact
(lambda_n > 0), sticking (|lambda_t| < mu lambda_n) or sliding (lambda_t = -mu lambda_n s along
the slip s found by PGS), the active limits and the loops are solved as one linear system in
least squares (minimum norm for redundant rows, e.g. 4 corners of a box); the answer is taken
when it is admissible (lambda_n >= 0, inside the cone, no inactive row violated): then a sticking
contact has exactly zero slip and a resting stack exactly zero sinking velocity.

Position errors: the linear motion is exact (speculative rows); what remains is second order
(a rotating corner moves on an arc): after the step any penetration beyond ``PENETRATION_SLOP``
is removed by a position-only projection (a pseudo-velocity solve on the normal rows, the
"split impulse" of Catto), which never changes v: no Baumgarte term, so no velocity is ever added to
push a body out, and the kinetic energy can not grow from the correction.

Reported: ``sim.contacts`` (list of engine.contact.Contact), ``sim.limit_forces`` (nv, the torque or
force each limit applies, impulse / h), ``sim.contact_stats`` (rows, PGS iterations, polished,
worst complementarity residual in m/s).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .api import integrate, _world_poses, _work
from .algorithms.kinematics import body_jacobian as _bjac
from .constrained import response
from .constraints import active_constraints, constraint_system
from .contact import ContactGeometry, Contact

BILATERAL, UNILATERAL, NORMAL, TANGENT = 0, 1, 2, 3
PGS_MAX_ITER = 200
PGS_TOL = 1e-9                  # m/s (largest velocity change of a sweep; the polish then makes it exact)
CONTACT_MARGIN = 0.01           # m: points nearer than this to the ground are candidate rows
LIMIT_MARGIN = 0.02             # rad or m, plus the motion of the step
PENETRATION_SLOP = 1e-5         # m: deeper penetrations are projected out after the step
POLISH_BELOW = 1e-12            # m/s: a polished answer this exact is taken even over an exact PGS one
                                # (it has the minimum-norm forces: no internal friction loops)
RESTITUTION_SPEED = 0.05        # m/s: slower impacts are inelastic (resting contact does not chatter)


@njit(cache=True)
def pgs(W, r, kind, mu, lam, max_iter, tol):
    """Projected Gauss-Seidel on c = W lam + r: bilateral rows c = 0; unilateral rows
    0 <= lam _|_ c >= 0; NORMAL rows are followed by two tangent rows with the Coulomb disk
    |lam_t| <= mu lam_n. lam is the warm start and the result. Returns the sweeps done."""
    m = r.shape[0]
    it = 0
    for it in range(1, max_iter + 1):
        dmax = 0.0
        i = 0
        while i < m:
            k = kind[i]
            c = r[i]
            for j in range(m):
                c += W[i, j] * lam[j]
            if k == BILATERAL:
                d = -c / W[i, i]
                lam[i] += d
                dv = abs(d) * W[i, i]
                i += 1
            elif k == UNILATERAL:
                new = lam[i] - c / W[i, i]
                if new < 0.0:
                    new = 0.0
                dv = abs(new - lam[i]) * W[i, i]
                lam[i] = new
                i += 1
            else:
                new = lam[i] - c / W[i, i]
                if new < 0.0:
                    new = 0.0
                dv = abs(new - lam[i]) * W[i, i]
                lam[i] = new
                # tangential 2x2 block
                c1 = r[i + 1]
                c2 = r[i + 2]
                for j in range(m):
                    c1 += W[i + 1, j] * lam[j]
                    c2 += W[i + 2, j] * lam[j]
                a11 = W[i + 1, i + 1]
                a12 = W[i + 1, i + 2]
                a22 = W[i + 2, i + 2]
                # one isotropic step (the block's largest eigenvalue): a fixed point on the rim
                # of the disk then has lam_t opposite to the slip c_t (maximal dissipation);
                # the 2x2 block inverse would tilt the friction off the slip when W_tt is skewed
                wmax = 0.5 * (a11 + a22) + np.sqrt(0.25 * (a11 - a22) ** 2 + a12 * a12)
                x1 = lam[i + 1] - c1 / wmax
                x2 = lam[i + 2] - c2 / wmax
                lim = mu[i] * lam[i]
                nt = np.sqrt(x1 * x1 + x2 * x2)
                if nt > lim:
                    if nt > 0.0:
                        x1 *= lim / nt
                        x2 *= lim / nt
                d1 = abs(x1 - lam[i + 1]) * a11
                d2 = abs(x2 - lam[i + 2]) * a22
                lam[i + 1] = x1
                lam[i + 2] = x2
                if d1 > dv:
                    dv = d1
                if d2 > dv:
                    dv = d2
                i += 3
            if dv > dmax:
                dmax = dv
        if dmax < tol:
            break
    return it


@njit(cache=True)
def residual(W, r, kind, mu, lam):
    """Worst complementarity residual (m/s): |min(c, W_ii lam)| on unilateral rows, |c| on
    bilateral ones, and for friction the distance of lam_t from the disk projection of
    lam_t - c_t / W_tt (scaled by W_tt): zero exactly at a solution."""
    m = r.shape[0]
    c = r + W @ lam
    worst = 0.0
    i = 0
    while i < m:
        k = kind[i]
        if k == BILATERAL:
            e = abs(c[i])
            i += 1
        else:
            e = abs(min(c[i], W[i, i] * lam[i]))
            if k == NORMAL:
                x1 = lam[i + 1] - c[i + 1] / W[i + 1, i + 1]
                x2 = lam[i + 2] - c[i + 2] / W[i + 1, i + 1]
                lim = mu[i] * lam[i]
                nt = np.sqrt(x1 * x1 + x2 * x2)
                if nt > lim and nt > 0.0:
                    x1 *= lim / nt
                    x2 *= lim / nt
                e = max(e, abs(x1 - lam[i + 1]) * W[i + 1, i + 1], abs(x2 - lam[i + 2]) * W[i + 1, i + 1])
                i += 3
            else:
                i += 1
        if e > worst:
            worst = e
    return worst


def _polish(W, r, kind, mu, lam):
    """The PGS active set solved exactly (least squares); returns the new lam or None when the
    exact answer is not admissible."""
    m = len(r)
    cols = []          # (column vector over lam, [(row index, weight)]) per unknown
    eqs = []           # rows whose velocity target is met exactly
    lam_n_tol = 1e-12 * max(1.0, float(np.abs(lam).max(initial=0.0)))
    i = 0
    while i < m:
        k = kind[i]
        if k == BILATERAL:
            cols.append([(i, 1.0)])
            eqs.append(i)
            i += 1
        elif k == UNILATERAL:
            if lam[i] > lam_n_tol:
                cols.append([(i, 1.0)])
                eqs.append(i)
            i += 1
        else:
            if lam[i] > lam_n_tol:
                lt = lam[i + 1:i + 3]
                nt = float(np.hypot(*lt))
                if nt < mu[i] * lam[i] * (1.0 - 1e-6):          # sticking
                    cols += [[(i, 1.0)], [(i + 1, 1.0)], [(i + 2, 1.0)]]
                    eqs += [i, i + 1, i + 2]
                elif nt > 0.0:                                   # sliding along -lam_t
                    s = lt / nt
                    cols.append([(i, 1.0), (i + 1, mu[i] * s[0]), (i + 2, mu[i] * s[1])])
                    eqs.append(i)
                else:
                    cols.append([(i, 1.0)])
                    eqs.append(i)
            i += 3
    if not cols:
        return None
    P = np.zeros((m, len(cols)))
    for c, entries in enumerate(cols):
        for row, wgt in entries:
            P[row, c] = wgt
    E = np.array(eqs)
    A = W[E] @ P
    x, *_ = np.linalg.lstsq(A, -r[E], rcond=1e-12)
    new = P @ x
    c = W @ new + r
    scale = max(1e-9, float(np.abs(r).max(initial=0.0)))
    if np.abs(c[E]).max(initial=0.0) > 1e-9 * scale:
        return None                                  # inconsistent rows: keep PGS's answer
    i = 0
    while i < m:
        k = kind[i]
        if k == BILATERAL:
            i += 1
            continue
        if new[i] < -lam_n_tol or c[i] < -1e-9 * scale:
            return None
        if k == NORMAL:
            nt = float(np.hypot(new[i + 1], new[i + 2]))
            if nt > mu[i] * new[i] * (1.0 + 1e-9) + lam_n_tol:
                return None
            if lam[i] > lam_n_tol and not (nt < mu[i] * lam[i] * (1.0 - 1e-6)):   # sliding: slip opposes friction
                if c[i + 1] * new[i + 1] + c[i + 2] * new[i + 2] > 1e-12 * scale:
                    return None
            i += 3
        else:
            i += 1
    clip = (kind == UNILATERAL) | (kind == NORMAL)
    new[clip] = np.maximum(new[clip], 0.0)
    return new


@njit(cache=True)
def _delassus(J, G, W):
    """W = J G symmetrised (m x m), in a plain loop: for these small sizes a threaded BLAS
    product spends its time waking threads (25 ms instead of 0.1 ms on a busy machine)."""
    m, nv = J.shape
    for i in range(m):
        for j in range(i, m):
            acc = 0.0
            for k in range(nv):
                acc += J[i, k] * G[k, j] + J[j, k] * G[k, i]
            W[i, j] = 0.5 * acc
            W[j, i] = 0.5 * acc


@njit(cache=True)
def _rows_kernel(ba, bb, X, U, T, Jall, rows):
    """rows[k, a] = U[k, a] . (velocity of the point X[k] of body ba[k] minus that of bb[k]):
    for a body with pose (R, p) and body Jacobian J, u . v_x = (r x R^T u) . J_w + (R^T u) . J_v
    with r = R^T (x - p)."""
    nv = rows.shape[2]
    for k in range(X.shape[0]):
        for side in range(2):
            body = ba[k] if side == 0 else bb[k]
            if body <= 0:
                continue
            sign = 1.0 if side == 0 else -1.0
            R = T[body, :9].reshape(3, 3)
            r0 = r1 = r2 = 0.0
            for i in range(3):
                dx = X[k, i] - T[body, 9 + i]
                r0 += R[i, 0] * dx
                r1 += R[i, 1] * dx
                r2 += R[i, 2] * dx
            for a in range(3):
                u0 = U[k, a, 0] * R[0, 0] + U[k, a, 1] * R[1, 0] + U[k, a, 2] * R[2, 0]
                u1 = U[k, a, 0] * R[0, 1] + U[k, a, 1] * R[1, 1] + U[k, a, 2] * R[2, 1]
                u2 = U[k, a, 0] * R[0, 2] + U[k, a, 1] * R[1, 2] + U[k, a, 2] * R[2, 2]
                c0 = r1 * u2 - r2 * u1
                c1 = r2 * u0 - r0 * u2
                c2 = r0 * u1 - r1 * u0
                for j in range(nv):
                    rows[k, a, j] += sign * (c0 * Jall[body, 0, j] + c1 * Jall[body, 1, j] + c2 * Jall[body, 2, j]
                                             + u0 * Jall[body, 3, j] + u1 * Jall[body, 4, j] + u2 * Jall[body, 5, j])


def _quat_rot(qw):
    w, x, y, z = qw / np.linalg.norm(qw)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


class ContactStepper:
    """The velocity-level step of a Simulator with a ground and/or joint limits (see the module
    text). Holds the model's contact geometry, the limits, and the warm-start impulses."""

    def __init__(self, model):
        self.model = model
        self.geometry = ContactGeometry(model)
        lo, hi, idx = [], [], []
        for j in model.joints:
            if j.kind in ("revolute", "prismatic") and j.nv == 1:
                if np.isfinite(j.lower[0]) or np.isfinite(j.upper[0]):
                    lo.append(j.lower[0]), hi.append(j.upper[0]), idx.append(j.idx_v)
        self.lim_v = np.array(idx, dtype=np.int64)
        self.lim_q = np.array([next(j.idx_q for j in model.joints if j.idx_v == i) for i in idx], dtype=np.int64)
        self.lim_lo = np.array(lo, dtype=float)
        self.lim_hi = np.array(hi, dtype=float)
        # free joints of a parent that can not rotate the frame they move in (the ground)
        self.free = [(j.idx_q, j.idx_v) for j in model.joints if j.kind == "free" and j.parent == 0]
        self._jall = np.zeros((model.nbodies + 1, 6, model.nv))
        self.warm = {}
        self.stats = {"rows": 0, "iterations": 0, "polished": False, "residual": 0.0, "steps": 0,
                      "max_iterations": 0, "worst_residual": 0.0}

    def reset(self):
        """Forget the warm start and the run's statistics (Simulator.reset)."""
        self.warm = {}
        self.stats.update(rows=0, iterations=0, polished=False, residual=0.0, steps=0, max_iterations=0,
                          worst_residual=0.0)

    @property
    def has_limits(self):
        return len(self.lim_v) > 0

    # ------------------------------------------------------------------ rows
    def _candidates(self, sim, q, v, T, contact_margin=CONTACT_MARGIN, limit_margin=LIMIT_MARGIN):
        h = sim.dt
        ground = sim.ground
        g = self.geometry
        contacts = []           # (body_a, body_b, point, normal, distance, key)
        if ground is not None and not g.empty:
            margin = contact_margin
            b, X, d, key = g.detect(T, ground, margin)
            n = ground.normal
            for k in range(len(b)):
                contacts.append((int(b[k]), 0, X[k], n, float(d[k]), ("g", int(key[k]))))
            contacts += g.box_contacts(T, margin)
        limits = []             # (velocity index, sign, distance)
        if sim.joint_limits and self.has_limits:
            qi = q[self.lim_q]
            vi = v[self.lim_v]
            reach = limit_margin + 2.0 * h * np.abs(vi)
            dl = qi - self.lim_lo
            du = self.lim_hi - qi
            for k in np.flatnonzero(dl < reach):
                limits.append((int(self.lim_v[k]), 1.0, float(dl[k])))
            for k in np.flatnonzero(du < reach):
                limits.append((int(self.lim_v[k]), -1.0, float(du[k])))
        return contacts, limits

    def violated(self, sim, q):
        """Whether q is past a limit or through the ground (after a smooth step)."""
        if sim.joint_limits and self.has_limits:
            qi = q[self.lim_q]
            if np.any(qi < self.lim_lo) or np.any(qi > self.lim_hi):
                return True
        if sim.ground is not None and not self.geometry.empty:
            T = _world_poses(self.model, q)
            _, _, d, _ = self.geometry.ground_points(T, sim.ground.normal, sim.ground.height, 0.0)
            if d.size and d.min() < 0.0:
                return True
            if self.geometry.box_contacts(T, 0.0):
                return True
        return False

    def _jacobians(self, q, bodies):
        nv = self.model.nv
        wb = _work(self.model).wb_kin
        out = {}
        for b in bodies:
            if b == 0:
                continue
            J = np.zeros((6, nv))
            _bjac(self.model._mb, wb, q, b, J)
            out[b] = J
        return out

    def _contact_rows(self, q, T, contacts, ground):
        """(J (3 rows per contact: n, t1, t2; nv columns), frames (k, 3, 3) rows n, t1, t2)."""
        nv = self.model.nv
        k = len(contacts)
        R, p = T[:, :9].reshape(-1, 3, 3), T[:, 9:12]
        ba = np.fromiter((c[0] for c in contacts), np.int64, k)
        bb = np.fromiter((c[1] for c in contacts), np.int64, k)
        X = np.array([c[2] for c in contacts], dtype=float).reshape(k, 3)
        N = np.array([c[3] for c in contacts], dtype=float).reshape(k, 3)
        a = np.where((np.abs(N[:, 0]) < 0.9)[:, None], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0])
        t1 = a - np.sum(a * N, axis=1)[:, None] * N
        t1 /= np.linalg.norm(t1, axis=1)[:, None]
        t2 = np.cross(N, t1)
        U = np.stack((N, t1, t2), axis=1)                      # (k, 3, 3)
        Jall = self._jall
        wb = _work(self.model).wb_kin
        for body in set(ba.tolist()) | set(bb.tolist()):
            if body > 0:
                Jall[body] = 0.0
                _bjac(self.model._mb, wb, q, body, Jall[body])
        rows = np.zeros((k, 3, nv))
        _rows_kernel(ba, bb, X, U, T, Jall, rows)
        return rows.reshape(3 * k, nv), U

    # ------------------------------------------------------------------ the step
    def advance(self, sim, a_cmd, tau_cmd):
        """One step from (sim.q, sim.v): (q+, v+, a, tau, lambda, (work, dissipated, external work)
        of the step). Uses the simulator's own
        integrator when no contact or limit is near and none is reached."""
        model, h = self.model, sim.dt
        q, v = sim.q, sim.v
        T = _world_poses(model, q)
        contacts, limits = self._candidates(sim, q, v, T)
        if not contacts and not limits:
            out = sim._advance(a_cmd, tau_cmd)
            if not self.violated(sim, out[0]):
                self._clear(sim)
                return out
            contacts, limits = self._candidates(sim, q, v, T)
            if not contacts and not limits:      # reached from farther than the margins: widen them
                contacts, limits = self._wide_candidates(sim, q, v, T, out[0])
        return self._contact_step(sim, a_cmd, tau_cmd, q, v, T, contacts, limits)

    def _wide_candidates(self, sim, q, v, T, q_new):
        """Candidates with margins wide enough for what moved farther than the usual margins in
        one step (a fast body reaching the ground, a fast joint its limit)."""
        speed = float(np.abs(v).max(initial=0.0))
        return self._candidates(sim, q, v, T,
                                max(CONTACT_MARGIN, 4.0 * sim.dt * speed * self.model.characteristic_length() + 0.05),
                                max(LIMIT_MARGIN, 4.0 * sim.dt * speed + 0.1))

    def _clear(self, sim):
        sim.contacts = []
        sim.limit_forces = np.zeros(self.model.nv)
        self.warm = {}
        self.stats.update(rows=0, iterations=0, polished=False, residual=0.0)

    def _contact_step(self, sim, a_cmd, tau_cmd, q, v, T, contacts, limits):
        model, h = self.model, sim.dt
        nv = model.nv
        # the smooth part of the step at the start state (not RK4's stages: they would probe
        # configurations past a limit or through the ground, and a body at rest on a limit
        # would then be held against an average of them instead of the gravity it feels)
        a_free, tau1, lam1 = sim._accel(q, v, a_cmd, tau_cmd)
        v_free = v + h * a_free
        q_end = integrate(model, q, h * v_free) if self.free else None
        if self.free:
            # a free body's v_free is its twist in its frame at the end of the smooth step; the
            # rows below are written at the start: re-express it there (same world velocities)
            v_free = v_free.copy()
            for iq, iv in self.free:
                Rse = _quat_rot(q[iq + 3:iq + 7]).T @ _quat_rot(q_end[iq + 3:iq + 7])
                v_free[iv:iv + 3] = Rse @ v_free[iv:iv + 3]
                v_free[iv + 3:iv + 6] = Rse @ v_free[iv + 3:iv + 6]
        pres = sim.prescribed
        ground = sim.ground
        # rows
        Jc, frames = self._contact_rows(q, T, contacts, ground) if contacts else (np.zeros((0, nv)), [])
        Jl = np.zeros((len(limits), nv))
        for k, (i, s, d) in enumerate(limits):
            Jl[k, i] = s
        active = active_constraints(model)
        if active:
            _, A, _, _ = constraint_system(model, q, v, active)
        else:
            A = np.zeros((0, nv))
        J = np.vstack((Jc, Jl, A))
        m = J.shape[0]
        kind = np.empty(m, dtype=np.int64)
        mu = np.zeros(m)
        target = np.zeros(m)
        v_minus = J @ v
        nc = len(contacts)
        e_g = ground.restitution if ground is not None else 0.0
        for k, c in enumerate(contacts):
            d = c[4]
            kind[3 * k:3 * k + 3] = (NORMAL, TANGENT, TANGENT)
            mu[3 * k] = ground.friction if ground is not None else 0.0
            vn = v_minus[3 * k]
            if d > 0.0:
                target[3 * k] = -d / h
            elif e_g > 0.0 and vn < -RESTITUTION_SPEED:
                target[3 * k] = -e_g * vn
        e_l = sim.limit_restitution
        for k, (i, s, d) in enumerate(limits):
            r = 3 * nc + k
            kind[r] = UNILATERAL
            vl = v_minus[r]
            if d > 0.0:
                target[r] = -d / h
            if e_l > 0.0 and vl < -RESTITUTION_SPEED and d <= h * abs(vl):
                target[r] = max(target[r], -e_l * vl)
        nl = len(limits)
        kind[3 * nc + nl:] = BILATERAL
        r = J @ v_free - target
        if A.shape[0]:
            r[3 * nc + nl:] = 0.0           # the loops: the impulses change no loop velocity
        G = response(model, q, J.T, pres)
        W = np.empty((m, m))
        _delassus(J, G, W)
        # rows that can not move (all their joints prescribed): nothing to solve on them
        diag = np.diag(W).copy()
        scale = max(float(diag.max(initial=0.0)), 1e-300)
        dead = diag <= 1e-12 * scale
        W[np.diag_indices(m)] = np.where(dead, 1.0, diag)
        if dead.any():
            W[dead, :] = 0.0
            W[:, dead] = 0.0
            W[dead, dead] = 1.0
            r = np.where(dead, 0.0, r)
        # warm start
        keys = [c[5] for c in contacts] + [("l", i, s) for (i, s, d) in limits]
        lam = np.zeros(m)
        for k, key in enumerate(keys[:nc]):
            w = self.warm.get(key)
            if w is not None:
                lam[3 * k:3 * k + 3] = w
        for k, key in enumerate(keys[nc:]):
            w = self.warm.get(key)
            if w is not None:
                lam[3 * nc + k] = w
        iters = pgs(W, r, kind, mu, lam, PGS_MAX_ITER, PGS_TOL)
        res_g = residual(W, r, kind, mu, lam)
        polished = _polish(W, r, kind, mu, lam)
        if polished is not None:
            res_p = residual(W, r, kind, mu, polished)
            if res_p <= max(res_g, POLISH_BELOW):
                lam = polished
            else:
                polished = None
        res = residual(W, r, kind, mu, lam)
        lam[dead] = 0.0
        self.warm = {key: lam[3 * k:3 * k + 3].copy() for k, key in enumerate(keys[:nc])}
        self.warm.update({key: float(lam[3 * nc + k]) for k, key in enumerate(keys[nc:])})
        v_new = v_free + G @ lam
        q_new, v_new = self._integrate(q, v_new, h)
        q_new = self._project_out(sim, q_new)
        # report
        gen = J.T @ lam / h                  # generalized constraint force
        a1 = (v_new - v) / h
        if pres.any():
            tau1 = tau1.copy()
            tau1[pres] -= gen[pres]          # what the motors of prescribed joints supply now
        lam_out = lam1 + lam[3 * nc + nl:] / h if A.shape[0] else lam1
        limit_forces = np.zeros(nv)
        for k, (i, s, d) in enumerate(limits):
            limit_forces[i] += s * lam[3 * nc + k] / h
        out = []
        names = model.body_names
        for k, (ba, bb, x, n, d, key) in enumerate(contacts):
            ln = lam[3 * k:3 * k + 3]
            if ln[0] <= 0.0:
                continue
            f = frames[k].T @ ln / h
            out.append(Contact(names[ba - 1], x.copy(), np.array(n, dtype=float).copy(), f, max(0.0, -d),
                               "ground" if bb == 0 else names[bb - 1]))
        sim.contacts = out
        sim.limit_forces = limit_forces
        st = self.stats
        st.update(rows=m, iterations=int(iters), polished=polished is not None, residual=float(res))
        st["steps"] += 1
        st["max_iterations"] = max(st["max_iterations"], int(iters))
        st["worst_residual"] = max(st["worst_residual"], float(res))
        sim._check(q_new, v_new, a1)
        dW = [h * p for p in sim._powers(q, v, tau1)]     # semi-implicit Euler: the powers at the start
        return q_new, v_new, a1, tau1, lam_out, dW

    def _integrate(self, q, v, h):
        """q+ = q (+) h v, except the translation of free joints: p+ = p + h R v_lin (straight
        along the origin's world velocity at the start, not along the screw of the body twist,
        which would swing a rolling ball's centre into the ground and tilt its velocity every
        step), and their linear velocity re-expressed in the new body frame so that the world
        velocity is the one the contact solve produced."""
        q_new = integrate(self.model, q, h * v)
        if not self.free:
            return q_new, v
        v = v.copy()
        for iq, iv in self.free:
            R0 = _quat_rot(q[iq + 3:iq + 7])
            R1 = _quat_rot(q_new[iq + 3:iq + 7])
            w = R0 @ v[iv + 3:iv + 6]
            q_new[iq:iq + 3] = q[iq:iq + 3] + h * w
            v[iv + 3:iv + 6] = R1.T @ w
            v[iv:iv + 3] = R1.T @ (R0 @ v[iv:iv + 3])
        return q_new, v

    def _project_out(self, sim, q):
        """Remove penetrations deeper than PENETRATION_SLOP by moving q only (v untouched)."""
        if sim.ground is None or self.geometry.empty:
            return q
        model = self.model
        T = _world_poses(model, q)
        g = self.geometry
        b, X, d, key = g.detect(T, sim.ground, 0.0)
        contacts = [(int(b[k]), 0, X[k], sim.ground.normal, float(d[k]), None) for k in range(len(b))]
        contacts += g.box_contacts(T, 0.0)
        contacts = [c for c in contacts if c[4] < -PENETRATION_SLOP]
        if not contacts:
            return q
        Jc, _ = self._contact_rows(q, T, contacts, sim.ground)
        Jn = Jc[0::3]
        r = np.array([c[4] + PENETRATION_SLOP for c in contacts])
        G = response(model, q, Jn.T, sim.prescribed)
        W = np.empty((len(r), len(r)))
        _delassus(Jn, G, W)
        dg = np.diag(W).copy()
        ok = dg > 1e-12 * max(dg.max(), 1e-300)
        if not ok.any():
            return q
        W, r, G = W[np.ix_(ok, ok)], r[ok], G[:, ok]
        W = 0.5 * (W + W.T)
        kind = np.full(len(r), UNILATERAL, dtype=np.int64)
        lam = np.zeros(len(r))
        pgs(W, r, kind, np.zeros(len(r)), lam, PGS_MAX_ITER, 1e-12)
        return integrate(model, q, G @ lam)
