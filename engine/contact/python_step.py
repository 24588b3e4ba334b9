"""Unilateral constraints: joint limits and ground contact with Coulomb friction, one velocity-level
time step (Stewart-Trinkle / Anitescu-Potra, as MuJoCo, Bullet, DART, Drake's TAMSI and Pinocchio's
constraint solvers do).

Why this integrator: contact is impulsive (an impact changes v in no time) and sticking friction is
a set-valued law; RK4's stages assume a smooth right-hand side and do not mix with either. So a step
with contacts or limits near is a semi-implicit Euler step at the impulse level:

    v+ = v_free + G lambda,     v_free = v + h a_free(q, v),     q+ = q (+) h v+

A free root's twist is taken, over the step, in its body frame at the start held fixed (the rows
are written there): its origin then moves straight along R0 v_lin+ and its rotation is R0 exp(h w+),
and v+ is turned into the new body frame at the end (same world velocity). In that fixed frame the
origin accelerates by dv_lin + w x v_lin: the body-frame acceleration of Newton-Euler carries
-w x v_lin, the turning of the frame, which the step's own rotation applies; counting it in v_free
as well turned the free velocity by h w a second time (a rolling ball gained h^2 |w|^2 v / 2 and
lost h^2 |w| g per step: 3 m/s became 4.4 m/s in 1 s at dt 1 ms).

a_free is the simulator's hybrid dynamics (torque-given joints, acceleration-prescribed joints,
damping, external wrenches, closed loops with their Baumgarte multipliers) and G = M_h^-1 J^T the
*hybrid* articulated response to the constraint rows J (``constrained.response``: no M formed): an
acceleration-prescribed joint keeps its motion whatever the contact does, and its motor supplies
the difference (reported in ``tau``). Steps with nothing near keep the simulator's own integrator.

Rows (all velocity level, J v+ compared with a target):
- contact normal n:  n.v+ >= -d/h when the gap d > 0 (a *speculative* contact: the point may
  close the gap in this step, no more; a body never passes the plane by the linear motion and no
  force acts at a distance), n.v+ >= 0 when touching (d <= 0);
- restitution e (Newton's law on the normal velocity before the impact): a speculative row that
  acts has the point reach the plane in the step, at the speed V = sqrt(u^2 + 2 a d) of its free
  motion (u = n.v at the start, a its free normal acceleration into the ground), not at the d/h
  the row leaves it with. That V is kept with the contact (with its warm start) and in the next
  step, touching, the row asks n.v+ >= w with 1/2 w^2 + a h w = 1/2 (e V)^2: the bounce at e V,
  less what the pull a takes over that step, so the flight after it reaches the apex of a bounce
  at e V whatever h (apex ratios e^2; e = 1 keeps the energy). A point struck while touching
  (d <= 0, n.v < 0 at the start) bounces the same way on V = -n.v. Slower than RESTITUTION_SPEED:
  inelastic (resting contact does not chatter);
- body-body contact (engine.collision through ``ContactGeometry.body_contacts``): the same three
  rows on the relative velocity of the two bodies at the contact point (the impulse acts on both,
  with opposite signs), the normal the pair's (from the second body into the first), the gap the
  pair's signed distance; friction and restitution the mean of the two bodies' values
  (``material``: ``model.contact_materials``, else the ground's). Which bodies may touch:
  ``model.self_collision`` (default off), adjacent links never, ``model.disabled_collisions``;
- impacts between bodies with restitution (``_impact_pass``, before the solve): one pair at a time,
  as the impulse travels along touching bodies (Newton's cradle), not shared in one simultaneous
  solve: the contact approaching fastest among those touching or closing in the step takes the
  pairwise Newton impulse -(1 + e) n.v / W_kk on its own normal row (its normal velocity becomes
  -e times its own velocity just before), the struck body's next contact is then approaching and
  takes the next, until none approaches; each impulse keeps the energy at e = 1 and loses
  (1 - e^2) (n.v)^2 / 2 W_kk otherwise (in ``dissipated``). The solve then starts from there;
- friction t1, t2: the exact Coulomb disk |lambda_t| <= mu lambda_n, sticking when t.v+ = 0;
- joint limit: +-v+_i >= -dist/h (so q+ stays within the limit exactly for 1-dof joints); with
  restitution e (``limit_restitution``, default 0: no bounce) a joint bounces as a contact does,
  on the speed V = sqrt(u^2 + 2 a d) with which its free motion reaches the stop (kept with the
  limit's warm start; was e times the speed the speculative row left it with, d/h at most), in
  the step after it lands: +-v+_i >= w with 1/2 w^2 + a h w = 1/2 (e V)^2. A step that would
  cross a stop from farther than the margins (a large acceleration: the smooth step is tried and
  ends past it) is redone with every limit as a row: a far stop's row acts only when the step's
  velocity would carry the joint past it (speculative), so no step tunnels through a stop. A
  joint found past its stop is brought back by its position (``Candidates.return_into_range``, v untouched,
  its row holding it from going farther);
- an acceleration-prescribed joint's limit row can not act (the hybrid response moves no
  prescribed joint): the stop wins there by changing the prescription. A prescribed joint that
  its prescription would carry past the row's target is held (its acceleration for this step the
  one that brings it onto the stop: ``_block``), the motor keeps the torque its prescription asks,
  the stop exerts the rest (``sim.limit_forces``) and ``sim.blocked`` marks it;
- joint friction (URDF <dynamics friction>, MJCF frictionloss; ``sim.joint_friction``): per
  torque-given coordinate i with f > 0 a BOX row v+_i = 0 with |impulse| <= f h (MuJoCo's
  frictionloss): it sticks exactly while the torque that holds the joint is within f, else slides
  with f against v+. Its rows act at every step (a model with friction takes this step even with
  nothing near). An acceleration-prescribed coordinate has no row (it does not respond): its
  friction is -f sign(v) at the start of the step, which its motor overcomes (``tau``). A joint
  resting on its stop: its limit row and its friction row push the same coordinate and only their
  sum is determined; the stop takes a push into the range, the friction a pull onto the stop;
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
contact has exactly zero slip and a resting stack exactly zero sinking velocity. Before PGS, the
warm start's own active set (the last step's) is polished the same way and taken when its answer
is exact (residual <= 1e-12 m/s): resting contact then needs no sweep. Both paths call the one
compiled ``engine.contact.solver.solve``.

Position errors: the linear motion is exact (speculative rows); what remains is second order
(a rotating corner moves on an arc): after the step any penetration beyond ``PENETRATION_SLOP``
is removed by a position-only projection (a pseudo-velocity solve on the normal rows, the
"split impulse" of Catto), which never changes v: no Baumgarte term, so no velocity is ever added to
push a body out, and the kinetic energy can not grow from the correction.

Reported: ``sim.contacts`` (list of engine.contact.geometry.Contact), ``sim.limit_forces`` (nv, the torque or
force each limit applies, impulse / h), ``sim.friction_forces`` (nv, the joint friction's torque or
force, impulse / h), ``sim.contact_stats`` (rows, PGS iterations, polished,
worst complementarity residual in m/s).
"""
from __future__ import annotations

import math

import numpy as np

from engine.algorithms.api import integrate, _world_poses
from engine.loops.constrained import response
from engine.loops.constraints import active_constraints, constraint_system
from engine.contact.geometry import Contact
from engine.contact.rows import RESTITUTION_SPEED, bounce_speed, delassus as _delassus
from engine.contact.solver import (BILATERAL, UNILATERAL, NORMAL, TANGENT, BOX, PGS_MAX_ITER, PASS_COUPLING, impact_pass,
                                   pgs, solve_factored, FACTORED_ABOVE)
from engine.contact.step import PENETRATION_SLOP
from engine.contact.candidates import Candidates, LIMIT_SLOP, LIMIT_RETURN_TIME, LIMIT_RETURN_SPEED  # noqa: F401
from engine.contact.compiled_driver import CompiledContact


def _quat_rot(qw):
    w, x, y, z = qw / np.linalg.norm(qw)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def _start_frame(free, v, v_free, h):
    """v_free of the free roots in the frame the step works in: their body frame at the start
    of the step, held fixed (the rows are written there; ``_integrate`` moves the origin along
    R0 v_lin and turns v+ into the frame at the end). The body-frame acceleration a_lin of a
    free joint carries -w x v_lin, the turning of its frame; in the fixed start frame the
    origin accelerates by a_lin + w x v_lin = R0^T d(R v_lin)/dt. (The step used to turn
    v + h a_lin by R0^T R1 = exp(h [w]) instead, which undoes -h w x v_lin to first order
    only and turns gravity's impulse h R0^T g by h w: per step +h^2 |w|^2 v / 2 and
    -h^2 |w| g along a rolling ball's path, x 5/7 through the friction that keeps it rolling:
    +0.75 m/s^2 at 3 m/s, -0.034 m/s^2 at 1 m/s, dt 1 ms, as issue 31 measured.) The angular
    part needs nothing: w is its own axis."""
    v_free = v_free.copy()
    for iq, iv in free:
        w, u = v[iv:iv + 3], v[iv + 3:iv + 6]
        v_free[iv + 3:iv + 6] += h * np.cross(w, u)
    return v_free


def _integrate(model, free, q, v, h):
    """q+ = q (+) h v, except the translation of free joints: p+ = p + h R v_lin (straight
    along the origin's world velocity at the start, not along the screw of the body twist,
    which would swing a rolling ball's centre into the ground and tilt its velocity every
    step), and their linear velocity re-expressed in the new body frame so that the world
    velocity is the one the contact solve produced."""
    q_new = integrate(model, q, h * v)
    if not free:
        return q_new, v
    v = v.copy()
    for iq, iv in free:
        R0 = _quat_rot(q[iq + 3:iq + 7])
        R1 = _quat_rot(q_new[iq + 3:iq + 7])
        w = R0 @ v[iv + 3:iv + 6]
        q_new[iq:iq + 3] = q[iq:iq + 3] + h * w
        v[iv + 3:iv + 6] = R1.T @ w
        v[iv:iv + 3] = R1.T @ (R0 @ v[iv:iv + 3])
    return q_new, v


def _pass_members(W, dead, contacts, mats):
    """The restitution of each contact in the sequential impact pass (0: not in it): contacts
    between bodies with restitution, point contacts that nothing else holds. A pair touching at
    several points (a face on a face) and a contact coupled (through W) with a touching contact
    outside the pass (the ground under the struck body, a resting stack: |W_kj| over
    PASS_COUPLING sqrt(W_kk W_jj)) keep the simultaneous rule, which treats what holds them as rigid
    (one point of a face at a time would spin the body, and the ground's inelastic row would swallow
    the impact). None when no contact is in it."""
    nc = len(contacts)
    e = np.array([mats[k][1] if (contacts[k][1] != 0 and not dead[3 * k]) else 0.0 for k in range(nc)])
    if not np.any(e > 0.0):
        return None
    pair = [(c[0], c[1]) for c in contacts]
    ok = np.array([e[k] > 0.0 and pair.count(pair[k]) == 1 for k in range(nc)])
    held = [j for j in range(nc) if not ok[j] and contacts[j][4] <= PENETRATION_SLOP and not dead[3 * j]]
    for k in np.flatnonzero(ok):
        for j in held:
            if abs(W[3 * k, 3 * j]) > PASS_COUPLING * math.sqrt(W[3 * k, 3 * k] * W[3 * j, 3 * j]):
                ok[k] = False
                break
    e = np.where(ok, e, 0.0)
    return e if np.any(e > 0.0) else None


def _impact_pass(J, G, W, v_free, contacts, e, h):
    """(dv, loss) of the sequential impacts between bodies in this step
    (``engine.contact.solver.impact_pass``: each pair in a chain of touching bodies with restitution
    takes the pairwise Newton impact on its own approach speed, in the order the impulse travels) of
    the contacts with e > 0 (``_pass_members``), or (None, 0) when none approaches. Ground contacts
    keep their own bounce (the speed they land with, ``bounce_speed``); a model with closed loops
    keeps the simultaneous rule (an impulse on one row alone would open a loop)."""
    nc = len(contacts)
    vel = J[0:3 * nc:3] @ v_free
    gap = np.array([float(c[4]) for c in contacts])
    imp = np.zeros(nc)
    loss = impact_pass(W, vel, gap, np.ascontiguousarray(e, dtype=float), float(h), imp)
    if not np.any(imp):
        return None, 0.0
    return G[:, 0:3 * nc:3] @ imp, float(loss)


def _project_out(model, settings, candidates, prescribed, q):
    """Remove penetrations deeper than PENETRATION_SLOP by moving q only (v untouched)."""
    if settings.ground is None or candidates.geometry.empty:
        return q
    T = _world_poses(model, q)
    g = candidates.geometry
    b, X, d, key = g.detect(T, settings.ground, 0.0)
    contacts = [(int(b[k]), 0, X[k], settings.ground.normal, float(d[k]), None) for k in range(len(b))]
    if candidates.configure_pairs():
        contacts += g.body_contacts(T, 0.0)
    contacts = [c for c in contacts if c[4] < -PENETRATION_SLOP]
    if not contacts:
        return q
    Jc, _ = candidates.rows(q, T, contacts, settings.ground)
    Jn = Jc[0::3]
    r = np.array([c[4] + PENETRATION_SLOP for c in contacts])
    G = response(model, q, Jn.T, prescribed)
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

def _split_stop_friction(lam, target, limits, frows, nc):
    """A joint resting on its stop (the stop's row active with target 0) that has friction: the two
    rows push the same coordinate and only their sum is determined; the stop takes what it can (a
    push into the range), the friction the rest (a pull onto the stop), as the compiled step does
    (the split was round-off's: +-f). lam in place."""
    nl = len(limits)
    frow = {i: 3 * nc + nl + k for k, (i, f) in enumerate(frows)}
    for k, (i, s, d) in enumerate(limits):
        rl, rf = 3 * nc + k, frow.get(i)
        if rf is None or not lam[rl] > 0.0 or target[rl] != 0.0:
            continue
        tot = lam[rl] + s * lam[rf]
        if tot >= 0.0:
            lam[rl], lam[rf] = tot, 0.0
        else:
            lam[rl], lam[rf] = 0.0, s * tot


def _polish_factors(model, q, J, dead, pres, m):
    """What solve_factored needs for W's factors (W = J_f M_ff^-1 J_f^T): J with its dead rows
    zeroed, the mass matrix and the torque-given coordinates, when the m rows may make a polish large
    enough to use them (FACTORED_ABOVE); empty arrays otherwise, as the compiled step passes."""
    if m > FACTORED_ABOVE:
        from engine.algorithms.api import mass_matrix
        Jw = np.array(J, dtype=float, order="C")
        Jw[dead, :] = 0.0
        Mw = np.ascontiguousarray(mass_matrix(model, np.asarray(q, dtype=float)), dtype=float)
        fcols = np.flatnonzero(~np.asarray(pres, dtype=bool)).astype(np.int64)
        return Jw, Mw, fcols
    return np.zeros((0, 0)), np.zeros((0, 0)), np.zeros(0, dtype=np.int64)


def _ground_keys(warm):
    """The keys of the ground points the last step kept (warm start's ("g", key) entries): ground
    detection breaks its ties towards them (engine.contact.geometry.ContactGeometry.detect)."""
    return [k[1] for k in warm if isinstance(k, tuple) and k[0] == "g"]


class ContactStepper:
    """The velocity-level step of a Simulator with a ground and/or joint limits (see the module
    text): ``candidates`` (what is near, and its rows), ``driver`` (the compiled step), and here the
    Python step itself, the warm-start impulses and the statistics."""

    def __init__(self, model, settings, state, python, compiled, inputs):
        """model; the simulator's settings and step state (engine.simulation); its Python reference
        step ``python`` (engine.stepping.python_step: dynamics, powers, divergence checks), its compiled
        loop ``compiled`` (engine.stepping.compiled) and its ``inputs``."""
        self.model = model
        self.settings = settings
        self.state = state
        self.python = python
        self.compiled = compiled
        self.inputs = inputs
        self.candidates = Candidates(model, settings)
        # free joints of a parent that can not rotate the frame they move in (the ground)
        self.free = [(j.idx_q, j.idx_v) for j in model.joints if j.kind == "free" and j.parent == 0]
        self.warm = {}
        self.approach = {}
        self.stats = {"rows": 0, "iterations": 0, "polished": False, "residual": 0.0, "steps": 0,
                      "max_iterations": 0, "worst_residual": 0.0}
        self.driver = CompiledContact(self)

    def reset(self):
        """Forget the warm start and the run's statistics (Simulator.reset)."""
        self.warm = {}
        self.approach = {}
        if self.driver.kernel is not None:
            self.driver.kernel["nwarm"][0] = 0
        self.stats.update(rows=0, iterations=0, polished=False, residual=0.0, steps=0, max_iterations=0,
                          worst_residual=0.0)

    def clear(self):
        """After smooth steps taken elsewhere (the compiled step loop, as contact_advance's own smooth
        stretches): no contact, no limit force, no warm start."""
        self._clear()
        if self.driver.kernel is not None:
            self.driver.kernel["nwarm"][0] = 0

    # ------------------------------------------------------------------ the step
    def advance(self, a_cmd, tau_cmd):
        """One step from (self.state.q, self.state.v): (q+, v+, a, tau, lambda, (work, dissipated, external work)
        of the step). Uses the simulator's own
        integrator when no contact or limit is near and none is reached."""
        model, h = self.model, self.settings.dt
        q, v = self.state.q, self.state.v
        T = _world_poses(model, q)
        contacts, limits = self.candidates.find(q, v, T, prev=_ground_keys(self.warm))
        if not contacts and not limits:
            # joint friction acts at every step: the unilateral step with its rows alone
            friction = self.settings.joint_friction and self.candidates.has_friction
            if friction:
                out = self._contact_step(a_cmd, tau_cmd, q, v, T, contacts, limits)
            else:
                out = self.python.advance(a_cmd, tau_cmd)
            if not self.candidates.violated(out[0]):
                if not friction:
                    self._clear()
                return out
            contacts, limits = self.candidates.find(q, v, T, prev=_ground_keys(self.warm))
            if not contacts and not limits:      # reached from farther than the margins: widen them
                contacts, limits = self.candidates.wide(q, v, T, out[0], _ground_keys(self.warm))
        return self._contact_step(a_cmd, tau_cmd, q, v, T, contacts, limits)

    def _clear(self):
        self.state.contacts = []
        self.state.limit_forces = np.zeros(self.model.nv)
        self.state.friction_forces = np.zeros(self.model.nv)
        self.state.blocked = np.zeros(self.model.nv, dtype=bool)
        self.warm = {}
        self.approach = {}
        self.stats.update(rows=0, iterations=0, polished=False, residual=0.0)

    def _contact_step(self, a_cmd, tau_cmd, q, v, T, contacts, limits):
        """Long because it is the reference the compiled contact_step follows line by line (free motion,
        stops overriding prescriptions, rows, impacts, solve, integrate, projections, energy), kept in
        one piece so the two can be compared."""
        model, h = self.model, self.settings.dt
        nv = model.nv
        # the smooth part of the step at the start state (not RK4's stages: they would probe
        # configurations past a limit or through the ground, and a body at rest on a limit
        # would then be held against an average of them instead of the gravity it feels)
        a_free, tau1, lam1 = self.python.accel(q, v, a_cmd, tau_cmd)
        pres = self.state.prescribed
        # acceleration-prescribed joints the step would carry past a stop: the stop wins
        blocked, stop_torque = self._block(q, v, a_cmd, tau_cmd, a_free, tau1, limits)
        if blocked.any():
            a_free, tau_held, lam1 = self.python.accel(q, v, self._held_a, tau_cmd)
            stop_torque = np.where(blocked, tau_held - tau1, 0.0)   # tau1: the motors, as prescribed
        v_free = v + h * a_free
        if self.free:
            v_free = _start_frame(self.free, v, v_free, h)
        ground = self.settings.ground
        # rows
        Jc, frames = self.candidates.rows(q, T, contacts, ground) if contacts else (np.zeros((0, nv)), [])
        Jl = np.zeros((len(limits), nv))
        for k, (i, s, d) in enumerate(limits):
            Jl[k, i] = s
        # joint friction: a BOX row per torque-given coordinate, |impulse| <= f h, target 0
        frows, pf_i, pf_f = self.candidates.friction(self.state.prescribed)
        Jf = np.zeros((len(frows), nv))
        for k, (i, f) in enumerate(frows):
            Jf[k, i] = 1.0
        active = active_constraints(model)
        if active:
            _, A, _, _ = constraint_system(model, q, v, active)
        else:
            A = np.zeros((0, nv))
        J = np.vstack((Jc, Jl, Jf, A))
        m = J.shape[0]
        kind = np.empty(m, dtype=np.int64)
        mu = np.zeros(m)
        target = np.zeros(m)
        v_minus = J @ v
        nc = len(contacts)
        mats = [self.candidates.material(c[0], c[1], ground) for c in contacts]
        landing = np.zeros(nc)              # speed at which a contact reaches the ground in this step
        if nc and any(e > 0.0 for _, e in mats):
            a_n = (J[0:3 * nc:3] @ (v_free - v)) / h     # free normal accelerations of the points
        for k, c in enumerate(contacts):
            d = c[4]
            kind[3 * k:3 * k + 3] = (NORMAL, TANGENT, TANGENT)
            mu[3 * k], e_g = mats[k]
            vn = v_minus[3 * k]
            if d > 0.0:
                target[3 * k] = -d / h
            if e_g > 0.0:
                pull = max(0.0, -float(a_n[k]))
                speed = self.approach.get(c[5], 0.0) if d <= PENETRATION_SLOP else 0.0
                if speed == 0.0 and d <= 0.0 and vn < -RESTITUTION_SPEED:
                    speed = -vn                      # struck while touching
                if speed > 0.0:
                    target[3 * k] = max(target[3 * k], bounce_speed(e_g, speed, pull, h))
                elif d > 0.0:
                    landing[k] = math.sqrt(max(0.0, vn * vn + 2.0 * pull * d))
        e_l = self.settings.limit_restitution
        landing_l = np.zeros(len(limits))   # speed at which a joint reaches its stop in this step
        for k, (i, s, d) in enumerate(limits):
            r = 3 * nc + k
            kind[r] = UNILATERAL
            vl = v_minus[r]
            if d > 0.0:
                target[r] = -d / h
            if e_l > 0.0:
                # as the ground's restitution: on the speed the joint reaches the stop with
                pull = max(0.0, -s * float(v_free[i] - v[i]) / h)
                speed = self.approach.get(("l", i, s), 0.0) if d <= PENETRATION_SLOP else 0.0
                if speed == 0.0 and d <= 0.0 and vl < -RESTITUTION_SPEED:
                    speed = -vl                      # struck while on the stop
                if speed > 0.0:
                    target[r] = max(target[r], bounce_speed(e_l, speed, pull, h))
                elif d > 0.0:
                    landing_l[k] = math.sqrt(max(0.0, vl * vl + 2.0 * pull * d))
        nl = len(limits)
        nf = len(frows)
        m0 = 3 * nc + nl + nf               # the loops' rows follow
        for k, (i, f) in enumerate(frows):
            kind[3 * nc + nl + k] = BOX
            mu[3 * nc + nl + k] = f * h     # the bound of its impulse
        kind[m0:] = BILATERAL
        r = J @ v_free - target
        if A.shape[0]:
            r[m0:] = 0.0                    # the loops: the impulses change no loop velocity
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
        # impacts between bodies, one pair at a time (Newton's cradle): before the simultaneous solve
        v_pass, pass_loss = v, 0.0
        e_pass = _pass_members(W, dead, contacts, mats) if (nc and not A.shape[0]) else None
        if e_pass is not None:
            for k in np.flatnonzero(e_pass > 0.0):     # the pass bounces them: no landing rule besides
                d = contacts[k][4]
                target[3 * k] = -d / h if d > 0.0 else 0.0
                landing[k] = 0.0
                r[3 * k] = float(J[3 * k] @ v_free) - target[3 * k]
            dv, pass_loss = _impact_pass(J, G, W, v_free, contacts, e_pass, h)
            if dv is not None:
                v_free = v_free + dv
                v_pass = v + dv
                r = np.where(dead, 0.0, r + J @ dv)
        # warm start
        keys = [c[5] for c in contacts] + [("l", i, s) for (i, s, d) in limits] + [("f", i) for (i, f) in frows]
        lam = np.zeros(m)
        for k, key in enumerate(keys[:nc]):
            w = self.warm.get(key)
            if w is not None:
                lam[3 * k:3 * k + 3] = w
        for k, key in enumerate(keys[nc:]):
            w = self.warm.get(key)
            if w is not None:
                lam[3 * nc + k] = w
        # the compiled step's solver, with W's factors where a polish may be large enough to use them
        Jw, Mw, fcols = _polish_factors(model, q, J, dead, pres, m)
        iters, polished, res = solve_factored(W, np.ascontiguousarray(r, dtype=float), kind, mu, lam, Jw, Mw, fcols)
        lam[dead] = 0.0
        if nf and nl:
            _split_stop_friction(lam, target, limits, frows, nc)
        self.warm = {key: lam[3 * k:3 * k + 3].copy() for k, key in enumerate(keys[:nc])}
        # the contacts that reached the ground in this step (their speculative row acted) bounce
        # in the next one, on the speed they reached it with
        self.approach = {keys[k]: float(landing[k]) for k in range(nc)
                         if landing[k] > RESTITUTION_SPEED and lam[3 * k] > 0.0}
        self.warm.update({key: float(lam[3 * nc + k]) for k, key in enumerate(keys[nc:])})
        self.approach.update({keys[nc + k]: float(landing_l[k]) for k in range(nl)
                              if landing_l[k] > RESTITUTION_SPEED and lam[3 * nc + k] > 0.0})
        v_new = v_free + G @ lam
        # the impulses' loss: each row's impulse times the mean of its velocity before and after the
        # step (1/2 m v^2 of an inelastic impact, friction times slip, 0 at rest or sticking), both
        # in the frame the rows are written in (v_new before _integrate turns free roots' twists
        # into their frame at the end: a rolling ball's normal row would see its velocity turned)
        loss = pass_loss - 0.5 * float(lam @ (J @ (v_pass + v_new)))
        loss -= 0.5 * h * float(stop_torque @ (v + v_new))      # the stops that hold prescribed joints
        # the friction of prescribed joints, -f sign(v) at the start, which their motors overcome:
        # f |v| h, booked at the start velocity as the motors' work is (so the two cancel)
        pf_force = -pf_f * np.sign(v[pf_i])
        loss -= h * float(pf_force @ v[pf_i])
        q_new, v_new = _integrate(self.model, self.free, q, v_new, h)
        q_new = _project_out(self.model, self.settings, self.candidates, self.state.prescribed, q_new)
        q_new, dE = self.candidates.return_into_range(q_new, v_new, h)
        loss -= dE
        # report
        gen = J.T @ lam / h                  # generalized constraint force
        a1 = (v_new - v) / h
        if pres.any():
            tau1 = tau1.copy()
            unblocked = pres & ~blocked
            tau1[unblocked] -= gen[unblocked]     # what the motors of prescribed joints supply now
        if pf_i.size:
            tau1 = tau1.copy()
            tau1[pf_i] -= pf_force           # the motors of prescribed joints overcome their friction
        lam_out = lam1 + lam[m0:] / h if A.shape[0] else lam1
        limit_forces = np.zeros(nv)
        for k, (i, s, d) in enumerate(limits):
            limit_forces[i] += s * lam[3 * nc + k] / h
        friction_forces = np.zeros(nv)
        for k, (i, f) in enumerate(frows):
            friction_forces[i] = lam[3 * nc + nl + k] / h
        friction_forces[pf_i] = pf_force
        if blocked.any():
            # a held joint's motor keeps its prescribed torque; the stop takes the rest, what the
            # contacts or loops do not supply
            limit_forces[blocked] += stop_torque[blocked] - gen[blocked]
        out = []
        names = model.body_names
        for k, (ba, bb, x, n, d, key) in enumerate(contacts):
            ln = lam[3 * k:3 * k + 3]
            if ln[0] <= 0.0:
                continue
            f = frames[k].T @ ln / h
            out.append(Contact(names[ba - 1], x.copy(), np.array(n, dtype=float).copy(), f, max(0.0, -d),
                               "ground" if bb == 0 else names[bb - 1]))
        self.state.contacts = out
        self.state.limit_forces = limit_forces
        self.state.friction_forces = friction_forces
        self.state.blocked = blocked
        st = self.stats
        st.update(rows=m, iterations=int(iters), polished=bool(polished), residual=float(res))
        st["steps"] += 1
        st["max_iterations"] = max(st["max_iterations"], int(iters))
        st["worst_residual"] = max(st["worst_residual"], float(res))
        self.python.check(q_new, v_new, a1)
        dW = [h * p for p in self.python.powers(q, v, tau1)]     # semi-implicit Euler: the powers at the start
        dW[1] += loss
        return q_new, v_new, a1, tau1, lam_out, dW

    def _block(self, q, v, a_cmd, tau_cmd, a_free, tau1, limits):
        """The acceleration-prescribed joints that a stop overrides in this step (nv bools) and
        zeros for their stop torques (filled in by the caller). A prescribed joint's limit row can
        not act (the hybrid response moves no prescribed joint), so the stop is met here: a
        prescribed joint whose prescription would carry it past a limit candidate's target
        (-d/h ahead of a stop, 0 on or past it) is held instead, its acceleration the one that
        brings it exactly there (``self._held_a``: a_cmd with those entries replaced). It follows
        its prescription again as soon as that points away from the stop."""
        nv = self.model.nv
        blocked = np.zeros(nv, dtype=bool)
        pres = self.state.prescribed
        if not limits or not pres.any():
            return blocked, np.zeros(nv)
        h = self.settings.dt
        held = np.array(a_cmd, dtype=float).copy()
        for i, s, d in limits:
            if not pres[i]:
                continue
            target = -d / h if d > 0.0 else 0.0
            if s * (v[i] + h * a_free[i]) < target:
                blocked[i] = True
                held[i] = (s * target - v[i]) / h
        self._held_a = held
        return blocked, np.zeros(nv)
