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
  joint found past its stop is brought back by its position (``_return_into_range``, v untouched,
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
  friction is -f sign(v) at the start of the step, which its motor overcomes (``tau``);
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

from engine.kernel.layout import SINGULAR, PYTHON_STEP, OK as _OK
from engine.algorithms.api import integrate, _world_poses, _work
from engine.algorithms.kinematics import body_jacobian as _bjac
from engine.loops.constrained import response
from engine.loops.constraints import active_constraints, constraint_system
from engine.stepping.driver import INTEGRATOR_CODES
from engine.contact.geometry import ContactGeometry, Contact

from engine.contact.detect import CONTACT_MARGIN
from engine.contact.rows import (RESTITUTION_SPEED, bounce_speed, delassus as _delassus,
                                 rows_kernel as _rows_kernel)
from engine.contact.solver import (BILATERAL, UNILATERAL, NORMAL, TANGENT, BOX, PGS_MAX_ITER, PGS_TOL, pgs,
                                   solve)
from engine.contact.step import (PENETRATION_SLOP, contact_advance, I_ROWS, I_ITER, I_POLISHED, I_STEPS,
                                 I_MAX_ITER, I_NCON, F_RESIDUAL, F_WORST)
from engine.stepping.steploop import LIMIT_MARGIN

LIMIT_SLOP = 1e-3           # rad or m past a stop left alone (a loop's drift: 2e-4 rad in the five-bar)
LIMIT_RETURN_TIME = 0.05    # s: time constant at which a joint found past its stop is brought back
LIMIT_RETURN_SPEED = 0.1    # rad/s or m/s: the least speed of that return (it ends in finite time)


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
        # joint friction (URDF <dynamics friction>, MJCF frictionloss): per coordinate with f > 0
        fv, ff = [], []
        for j in model.joints:
            fr = np.zeros(j.nv) if j.friction is None else np.asarray(j.friction, dtype=float).reshape(-1)
            for d in range(min(j.nv, fr.size)):
                if fr[d] > 0.0:
                    fv.append(j.idx_v + d), ff.append(float(fr[d]))
        self.fric_v = np.array(fv, dtype=np.int64)
        self.fric_f = np.array(ff, dtype=float)
        # free joints of a parent that can not rotate the frame they move in (the ground)
        self.free = [(j.idx_q, j.idx_v) for j in model.joints if j.kind == "free" and j.parent == 0]
        self._jall = np.zeros((model.nbodies + 1, 6, model.nv))
        self._kernel = None           # buffers of the compiled step (engine.contact.step), made at first use
        self.warm = {}
        self.stats = {"rows": 0, "iterations": 0, "polished": False, "residual": 0.0, "steps": 0,
                      "max_iterations": 0, "worst_residual": 0.0}

    def reset(self):
        """Forget the warm start and the run's statistics (Simulator.reset)."""
        self.warm = {}
        self.approach = {}
        if self._kernel is not None:
            self._kernel["nwarm"][0] = 0
        self.stats.update(rows=0, iterations=0, polished=False, residual=0.0, steps=0, max_iterations=0,
                          worst_residual=0.0)

    def limit_arrays(self):
        """(q index, v index, lower, upper) of the limited joints, for steploop.advance_limited."""
        return self.lim_q, self.lim_v, self.lim_lo, self.lim_hi

    def clear(self, sim):
        """After smooth steps taken elsewhere (the compiled step loop, as contact_advance's own smooth
        stretches): no contact, no limit force, no warm start."""
        self._clear(sim)
        if self._kernel is not None:
            self._kernel["nwarm"][0] = 0

    @property
    def has_limits(self):
        return len(self.lim_v) > 0

    @property
    def has_friction(self):
        return len(self.fric_v) > 0

    def friction_arrays(self, sim):
        """(velocity index, friction f > 0) of the coordinates whose dry friction acts (empty when
        ``sim.joint_friction`` is off)."""
        if sim.joint_friction and self.has_friction:
            return self.fric_v, self.fric_f
        return self.fric_v[:0], self.fric_f[:0]

    def _friction(self, sim):
        """The friction rows of a step: [(velocity index, f)] of the torque-given coordinates (a
        BOX row each), and (index array, f array) of the acceleration-prescribed ones (their
        motors overcome the friction: -f sign(v) at the start of the step, 0 at rest)."""
        fv, ff = self.friction_arrays(sim)
        pres = np.asarray(sim.prescribed, dtype=bool)[fv]
        rows = [(int(i), float(f)) for i, f, p in zip(fv, ff, pres) if not p]
        return rows, fv[pres], ff[pres]

    def compiled_span(self, sim, n):
        """How many of the next n steps engine.contact.step may take (0: the next step is the
        Python step's): none while a limited joint is past its stop (``_return_into_range`` brings
        it back), else all n. A stop that overrides an acceleration-prescribed joint's prescription
        (the hybrid response moves no prescribed joint, so its limit row can not act) is met by the
        Python step's ``_block``: the compiled step finds that step itself (the same test,
        contactkernels._stop_overrides) and returns it to Python, so a robot whose joints are held
        by input laws, standing on the ground, runs compiled."""
        if not (sim.joint_limits and self.has_limits):
            return n
        x = np.asarray(sim.q, dtype=float)[self.lim_q]
        if np.any(x < self.lim_lo - LIMIT_SLOP) or np.any(x > self.lim_hi + LIMIT_SLOP):
            return 0
        if np.any(sim.blocked):
            return 0            # held on a stop by the last step: most likely this one too (saves a call)
        return n

    # ------------------------------------------------------------------ the compiled step
    def compiled_ok(self, sim, packed):
        """Whether engine.contact.step.contact_advance takes this simulator's steps: not with a
        Python controller, or loops the compiled step does not know (packed is
        sim._loop_spec(): False for a Pfaffian constraint or projection after every step): the
        Python step handles those."""
        if sim.controller is not None or packed is False:
            return False
        return True

    def _buffers(self):
        self._configure_pairs()
        if self._kernel is not None and self._kernel["pair_key"] != self.geometry._pair_key:
            self._kernel = None          # self-collision switched: new pair geometry (no warm start)
        if self._kernel is None:
            from engine.multibody.model import WS_DTYPE
            model, g = self.model, self.geometry
            npts = len(g.points) + len(g.sph_r) + len(g.disk_r)
            cap = npts + 1 + g.pair_capacity
            mats = np.full((model.nbodies + 1, 2), np.nan)
            for b, (mu, e) in (getattr(model, "contact_materials", None) or {}).items():
                mats[b] = (np.nan if mu is None else mu, np.nan if e is None else e)
            nlim = len(self.lim_v) + len(self.fric_v)      # their warm starts too
            rng = np.array([[a, b] for (a, b) in g._grp_rng], dtype=np.int64).reshape(-1, 2)
            geo = (np.ascontiguousarray(g.points, dtype=float).reshape(-1, 3), g.point_body.astype(np.int64),
                   g.point_shape.astype(np.int64), g._grp_body.astype(np.int64), g._grp_c.reshape(-1, 3).copy(),
                   g._grp_r.astype(float), rng, g.sph_c.copy(), g.sph_r.copy(), g.sph_b.copy(), g.sph_s.copy(),
                   g.disk_c.copy(), g.disk_a.copy(), g.disk_r.copy(), g.disk_b.copy(), g.disk_s.copy(),
                   g.point_disk.astype(np.int64))
            self._kernel = dict(
                geo=geo, ws_m=np.zeros(model.nbodies + 1, dtype=WS_DTYPE).view(np.uint8),
                free_iq=np.array([iq for iq, _ in self.free], dtype=np.int64),
                free_iv=np.array([iv for _, iv in self.free], dtype=np.int64),
                warm_key=np.zeros(cap + 2 * nlim + 1, dtype=np.int64), warm_lam=np.zeros((cap + 2 * nlim + 1, 4)),
                nwarm=np.zeros(1, dtype=np.int64), c_body=np.zeros(cap, dtype=np.int64), c_point=np.zeros((cap, 3)),
                c_force=np.zeros((cap, 3)), c_pen=np.zeros(cap), limit_forces=np.zeros(model.nv),
                friction_forces=np.zeros(model.nv),
                istats=np.zeros(6, dtype=np.int64), fstats=np.zeros(2), gnd=np.zeros(8),
                no_i=np.zeros(0, dtype=np.int64), no_f=np.zeros(0),
                char_length=float(model.characteristic_length()), pgeo=g.pair_arrays(), mats=mats,
                c_other=np.zeros(cap, dtype=np.int64), c_normal=np.zeros((cap, 3)), pair_key=g._pair_key)
        return self._kernel

    def run_compiled(self, sim, n, record, packed):
        """Up to n steps of sim in engine.contact.step.contact_advance (one compiled call):
        (steps taken, whether the next step needs the Python step). packed: sim._loop_spec() (None
        without loops), passed in so one step() call packs its loops once."""
        model = self.model
        K = self._buffers()
        loop = sim._steploop()
        laws = sim._inputs_laws
        if laws is not None and not laws.is_zero():
            sim.prescribed[:] = laws.prescribed
            tau_base, acc_base = laws.constant_parts()
            code, params, base = laws.code, laws.params, laws.base
        else:
            laws = None
            tau_base = np.ascontiguousarray(sim.tau_cmd, dtype=np.float64).copy()
            acc_base = np.ascontiguousarray(sim.a_cmd, dtype=np.float64).copy()
            code, params, base = loop.no_code, loop.no_params, sim.q
        prescribed = np.ascontiguousarray(sim.prescribed, dtype=np.bool_).copy()
        base = np.ascontiguousarray(base, dtype=np.float64)
        if sim._damping.shape != (model.nv,):
            sim._damping = model.damping
        gnd = K["gnd"]
        ground = sim.ground
        if ground is not None and not self.geometry.empty:
            gnd[:3] = ground.normal
            gnd[3], gnd[4], gnd[5], gnd[6] = ground.height, ground.friction, ground.restitution, 1.0
        else:
            gnd[:] = (0.0, 0.0, 1.0, 0.0, 0.8, 0.0, 0.0, 0.0)     # Ground's defaults: bodies touching bodies
        gnd[7] = len(model.collisions)
        if sim.joint_limits and self.has_limits:
            lq, lv, llo, lhi = self.lim_q, self.lim_v, self.lim_lo, self.lim_hi
        else:
            lq, lv, llo, lhi = K["no_i"], K["no_i"], K["no_f"], K["no_f"]
        fv, ff = self.friction_arrays(sim)
        st_i, st_f, stats = K["istats"], K["fstats"], self.stats
        st_i[I_STEPS], st_i[I_MAX_ITER], st_f[F_WORST] = stats["steps"], stats["max_iterations"], stats["worst_residual"]
        rec = loop.no_rec if record is None else record
        q = np.array(sim.q, dtype=np.float64)
        v = np.array(sim.v, dtype=np.float64)
        loop.load_fext(sim.f_ext)
        loop.tv[0] = sim.t
        loop.energy[:] = 0.0
        ci, cf, nrows = packed if packed else (loop.no_ci, loop.no_cf, 0)
        gains = loop.loop_gains
        bg = sim.baumgarte() if packed else None
        gains[0], gains[1], gains[2] = (0.0, 0.0, 0.0) if bg is None else (1.0, bg[0], bg[1])
        gains[3] = sim._loop_tolerance
        if loop.lam.shape[0] != nrows:
            loop.lam = np.zeros(nrows)
        loop.proj[:] = 0.0
        st = contact_advance(model._mb, loop.wsb, loop.ws_gb, loop.ws_kb, K["ws_m"], q, v, loop.tv, float(sim.dt),
                             int(n), INTEGRATOR_CODES[sim.integrator], prescribed, code, params, base, sim._damping,
                             tau_base, acc_base, loop.a, loop.tau, loop.q_prev, loop.v_prev, loop.bad, *rec,
                             loop.done, loop.energy, K["geo"], gnd, lq, lv, llo, lhi, float(sim.limit_restitution),
                             K["free_iq"], K["free_iv"], K["char_length"], K["warm_key"], K["warm_lam"], K["nwarm"],
                             K["c_body"], K["c_point"], K["c_force"], K["c_pen"], K["limit_forces"], st_i, st_f,
                             ci, cf, gains, loop.lam, loop.proj, K["pgeo"], K["mats"], K["c_other"], K["c_normal"],
                             fv, ff, K["friction_forces"])
        done = int(loop.done[0])
        if done:
            sim.t_prev, sim.q_prev, sim.v_prev = float(loop.tv[1]), loop.q_prev.copy(), loop.v_prev.copy()
            sim.q, sim.v, sim.t = q, v, float(loop.tv[0])
            sim.a, sim.tau = loop.a.copy(), loop.tau.copy()
            sim.lam = loop.lam.copy() if packed else np.zeros(0)
            if loop.proj[0] > 0.0:          # the compiled step projected back onto the loops
                sim._note_projections(loop.proj)
            sim.steps += done
            sim.work += float(loop.energy[0])
            sim.dissipated += float(loop.energy[1])
            sim.external_work += float(loop.energy[2])
            if laws is not None:
                nq, nv = model.nq, model.nv
                sim.a_cmd = loop.bad[nq + 2 * nv:nq + 3 * nv].copy()
                sim.tau_cmd = loop.bad[nq + 3 * nv:].copy()
            nc = int(st_i[I_NCON])
            sim._set_contact_arrays(K["c_body"][:nc].copy(), K["c_point"][:nc].copy(), K["c_normal"][:nc].copy(),
                                    K["c_force"][:nc].copy(), K["c_pen"][:nc].copy(), K["c_other"][:nc].copy())
            sim.limit_forces = K["limit_forces"].copy()
            sim.friction_forces = K["friction_forces"].copy()
            sim.blocked = np.zeros(model.nv, dtype=bool)
            self.warm = {}
            self.approach = {}
            stats.update(rows=int(st_i[I_ROWS]), iterations=int(st_i[I_ITER]), polished=bool(st_i[I_POLISHED]),
                         residual=float(st_f[F_RESIDUAL]), steps=int(st_i[I_STEPS]),
                         max_iterations=int(st_i[I_MAX_ITER]), worst_residual=float(st_f[F_WORST]))
        if st == SINGULAR or st == PYTHON_STEP:
            return done, True
        if st != _OK:
            loop.raise_for(st, sim.t, sim.q, sim.v, sim.dt, sim.integrator, prescribed)
        return done, False

    # ------------------------------------------------------------------ rows
    def _candidates(self, sim, q, v, T, contact_margin=CONTACT_MARGIN, limit_margin=LIMIT_MARGIN, box_margin=None):
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
        self._configure_pairs()
        if g.has_pairs:
            contacts += g.body_contacts(T, self._pair_margin(sim, v) if box_margin is None else box_margin)
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

    def _pair_margin(self, sim, v):
        """Distance within which two bodies are contact candidates: CONTACT_MARGIN plus how far a
        step can bring them together (|g| h^2 of gravity's pull, 2 h |v|max (1 + L) of their
        motion), so a speculative row catches a body falling onto another in the step (with the
        bare margin, a ball released 3 cm above a box on the ground at dt 0.1 went 1.4 cm into it
        while the box's ground rows held the step, and the projection's push added 0.09 J). The
        compiled step computes the same (contactkernels.contact_advance)."""
        h = sim.dt
        speed = float(np.abs(v).max(initial=0.0))
        return CONTACT_MARGIN + float(np.linalg.norm(self.model.gravity)) * h * h \
            + 2.0 * h * speed * (1.0 + self.model.characteristic_length())

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
        if self._configure_pairs():
            T = _world_poses(self.model, q)
            if any(c[4] < 0.0 for c in self.geometry.body_contacts(T, 0.0)):
                return True
        return False

    def _configure_pairs(self):
        """The model's self-collision switch and its disabled pairs into the geometry's pair filter
        (re-read at every step: ``model.self_collision`` may be switched between steps); whether
        any pair of bodies may touch."""
        m = self.model
        self.geometry.configure_pairs(getattr(m, "self_collision", False), getattr(m, "disabled_collisions", ()))
        return self.geometry.has_pairs

    def material(self, ba, bb, ground):
        """(friction, restitution) of a contact of body ba with body bb (0: the ground). A body
        takes its values from ``model.contact_materials`` (body index -> (friction, restitution),
        set by engine.Scene) or else the ground's (engine.Ground's defaults without a ground); a
        pair takes the mean of its two sides' values (a body without its own values on the ground:
        the ground's, as before)."""
        gm = (ground.friction, ground.restitution) if ground is not None else (0.8, 0.0)
        mats = getattr(self.model, "contact_materials", None) or {}
        a = mats.get(ba, gm)
        b = gm if bb == 0 else mats.get(bb, gm)
        mu = 0.5 * ((gm[0] if a[0] is None else a[0]) + (gm[0] if b[0] is None else b[0]))
        e = 0.5 * ((gm[1] if a[1] is None else a[1]) + (gm[1] if b[1] is None else b[1]))
        return mu, e

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
            # joint friction acts at every step: the unilateral step with its rows alone
            friction = sim.joint_friction and self.has_friction
            if friction:
                out = self._contact_step(sim, a_cmd, tau_cmd, q, v, T, contacts, limits)
            else:
                out = sim._advance(a_cmd, tau_cmd)
            if not self.violated(sim, out[0]):
                if not friction:
                    self._clear(sim)
                return out
            contacts, limits = self._candidates(sim, q, v, T)
            if not contacts and not limits:      # reached from farther than the margins: widen them
                contacts, limits = self._wide_candidates(sim, q, v, T, out[0])
        return self._contact_step(sim, a_cmd, tau_cmd, q, v, T, contacts, limits)

    def _wide_candidates(self, sim, q, v, T, q_new):
        """Candidates with margins wide enough for what moved farther than the usual margins in
        one step (a fast body reaching the ground, a fast joint its limit): every support point
        against the ground (a step's travel is not bounded by the start velocity: gravity adds
        g h^2, and 4 h |v| L + 0.05 m with the L = 0.01 m of a lone ball left a ball falling at
        3.9 m/s at dt 0.1 outside: it passed the plane and was projected out, and with e = 1
        bounced to 1.23 m from 1 m)."""
        speed = float(np.abs(v).max(initial=0.0))
        # every limit too: a stop the step would cross may be farther than any margin of the start
        # velocity (3e4 rad/s^2 at dt 0.01 covers 1.5 rad from rest and ended 2.5 rad past a stop);
        # a far stop's row (-d/h) acts only when the step's velocity would carry the joint past it
        return self._candidates(sim, q, v, T, np.inf, np.inf,
                                max(CONTACT_MARGIN, 4.0 * sim.dt * speed * self.model.characteristic_length() + 0.05))

    def _clear(self, sim):
        sim.contacts = []
        sim.limit_forces = np.zeros(self.model.nv)
        sim.friction_forces = np.zeros(self.model.nv)
        sim.blocked = np.zeros(self.model.nv, dtype=bool)
        self.warm = {}
        self.approach = {}
        self.stats.update(rows=0, iterations=0, polished=False, residual=0.0)

    def _contact_step(self, sim, a_cmd, tau_cmd, q, v, T, contacts, limits):
        model, h = self.model, sim.dt
        nv = model.nv
        # the smooth part of the step at the start state (not RK4's stages: they would probe
        # configurations past a limit or through the ground, and a body at rest on a limit
        # would then be held against an average of them instead of the gravity it feels)
        a_free, tau1, lam1 = sim._accel(q, v, a_cmd, tau_cmd)
        pres = sim.prescribed
        # acceleration-prescribed joints the step would carry past a stop: the stop wins
        blocked, stop_torque = self._block(sim, q, v, a_cmd, tau_cmd, a_free, tau1, limits)
        if blocked.any():
            a_free, tau_held, lam1 = sim._accel(q, v, self._held_a, tau_cmd)
            stop_torque = np.where(blocked, tau_held - tau1, 0.0)   # tau1: the motors, as prescribed
        v_free = v + h * a_free
        if self.free:
            v_free = self._start_frame(v, v_free, h)
        ground = sim.ground
        # rows
        Jc, frames = self._contact_rows(q, T, contacts, ground) if contacts else (np.zeros((0, nv)), [])
        Jl = np.zeros((len(limits), nv))
        for k, (i, s, d) in enumerate(limits):
            Jl[k, i] = s
        # joint friction: a BOX row per torque-given coordinate, |impulse| <= f h, target 0
        frows, pf_i, pf_f = self._friction(sim)
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
        mats = [self.material(c[0], c[1], ground) for c in contacts]
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
            if e_g > 0.0 and (c[1] == 0 or A.shape[0]):     # between bodies: _impact_pass
                pull = max(0.0, -float(a_n[k]))
                speed = self.approach.get(c[5], 0.0) if d <= PENETRATION_SLOP else 0.0
                if speed == 0.0 and d <= 0.0 and vn < -RESTITUTION_SPEED:
                    speed = -vn                      # struck while touching
                if speed > 0.0:
                    target[3 * k] = max(target[3 * k], bounce_speed(e_g, speed, pull, h))
                elif d > 0.0:
                    landing[k] = math.sqrt(max(0.0, vn * vn + 2.0 * pull * d))
        e_l = sim.limit_restitution
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
        if nc and not A.shape[0]:
            dv, pass_loss = self._impact_pass(J, G, W, dead, v_free, contacts, mats, h)
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
        iters, polished, res = solve(W, np.ascontiguousarray(r, dtype=float), kind, mu, lam)   # the compiled step's solver
        lam[dead] = 0.0
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
        q_new, v_new = self._integrate(q, v_new, h)
        q_new = self._project_out(sim, q_new)
        q_new, dE = self._return_into_range(sim, q_new, v_new, h)
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
        sim.contacts = out
        sim.limit_forces = limit_forces
        sim.friction_forces = friction_forces
        sim.blocked = blocked
        st = self.stats
        st.update(rows=m, iterations=int(iters), polished=bool(polished), residual=float(res))
        st["steps"] += 1
        st["max_iterations"] = max(st["max_iterations"], int(iters))
        st["worst_residual"] = max(st["worst_residual"], float(res))
        sim._check(q_new, v_new, a1)
        dW = [h * p for p in sim._powers(q, v, tau1)]     # semi-implicit Euler: the powers at the start
        dW[1] += loss
        return q_new, v_new, a1, tau1, lam_out, dW

    @staticmethod
    def _impact_pass(J, G, W, dead, v_free, contacts, mats, h):
        """(dv, loss) of the sequential impacts between bodies in this step (``contactkernels.
        impact_pass``: each pair in a chain of touching bodies with restitution takes the pairwise
        Newton impact on its own approach speed, in the order the impulse travels), or (None, 0)
        when no pair between bodies has restitution. Ground contacts keep their own bounce (the
        speed they land with, ``bounce_speed``); a model with closed loops keeps the simultaneous
        rule (an impulse on one row alone would open a loop)."""
        from engine.contact.solver import impact_pass
        nc = len(contacts)
        e = np.array([mats[k][1] if (contacts[k][1] != 0 and not dead[3 * k]) else 0.0 for k in range(nc)])
        if not np.any(e > 0.0):
            return None, 0.0
        vel = J[0:3 * nc:3] @ v_free
        gap = np.array([float(c[4]) for c in contacts])
        imp = np.zeros(nc)
        loss = impact_pass(W, vel, gap, e, float(h), imp)
        if not np.any(imp):
            return None, 0.0
        return G[:, 0:3 * nc:3] @ imp, float(loss)

    def _block(self, sim, q, v, a_cmd, tau_cmd, a_free, tau1, limits):
        """The acceleration-prescribed joints that a stop overrides in this step (nv bools) and
        zeros for their stop torques (filled in by the caller). A prescribed joint's limit row can
        not act (the hybrid response moves no prescribed joint), so the stop is met here: a
        prescribed joint whose prescription would carry it past a limit candidate's target
        (-d/h ahead of a stop, 0 on or past it) is held instead, its acceleration the one that
        brings it exactly there (``self._held_a``: a_cmd with those entries replaced). It follows
        its prescription again as soon as that points away from the stop."""
        nv = self.model.nv
        blocked = np.zeros(nv, dtype=bool)
        pres = sim.prescribed
        if not limits or not pres.any():
            return blocked, np.zeros(nv)
        h = sim.dt
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

    def _return_into_range(self, sim, q, v, h):
        """A joint found past its stop (started there: set_state, a lesson's pose) is brought back
        by its position only, v untouched (its limit row already keeps it from moving farther out):
        by h (excess / LIMIT_RETURN_TIME + LIMIT_RETURN_SPEED) per step, the rest at once when
        less than LIMIT_SLOP would remain: 2 rad past a stop is back within 0.3 s at any dt.
        An excess below LIMIT_SLOP is left alone (the compiled step leaves it too: a loop's drift
        projection may leave a joint that far past its stop). Returns (q, the energy change
        of the move: booked as negative dissipation so that energy_balance() stays closed)."""
        if not (sim.joint_limits and self.has_limits):
            return q, 0.0
        x = q[self.lim_q]
        over = np.maximum(self.lim_lo - x, x - self.lim_hi)
        if not np.any(over > LIMIT_SLOP):
            return q, 0.0
        from engine.algorithms.api import kinetic_energy, potential_energy
        e0 = kinetic_energy(self.model, q, v) + potential_energy(self.model, q)
        q = q.copy()
        for k in np.flatnonzero(over > LIMIT_SLOP):
            move = min(over[k], h * (over[k] / LIMIT_RETURN_TIME + LIMIT_RETURN_SPEED))
            if over[k] - move < LIMIT_SLOP:
                move = over[k]               # the last stretch at once: it ends on the stop
            q[self.lim_q[k]] += move if x[k] < self.lim_lo[k] else -move
        e1 = kinetic_energy(self.model, q, v) + potential_energy(self.model, q)
        return q, e1 - e0

    def _start_frame(self, v, v_free, h):
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
        for iq, iv in self.free:
            w, u = v[iv:iv + 3], v[iv + 3:iv + 6]
            v_free[iv + 3:iv + 6] += h * np.cross(w, u)
        return v_free

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
        if self._configure_pairs():
            contacts += g.body_contacts(T, 0.0)
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
