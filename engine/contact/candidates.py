"""The Python contact step's candidates: ground support points, body pairs and joint stops near a
state, and their rows (engine.contact.python_step uses them; the compiled step's are engine.contact.detect
and engine.contact.rows)."""
from __future__ import annotations


import numpy as np

from engine.algorithms.api import _world_poses, _work
from engine.algorithms.kinematics import body_jacobian as _bjac
from engine.contact.geometry import ContactGeometry
from engine.contact.detect import CONTACT_MARGIN
from engine.contact.rows import rows_kernel as _rows_kernel
from engine.stepping.steploop import LIMIT_MARGIN

LIMIT_SLOP = 1e-3           # rad or m past a stop left alone (a loop's drift: 2e-4 rad in the five-bar)
LIMIT_RETURN_TIME = 0.05    # s: time constant at which a joint found past its stop is brought back
LIMIT_RETURN_SPEED = 0.1    # rad/s or m/s: the least speed of that return (it ends in finite time)


class Candidates:
    """What the Python contact step considers in a step: contacts with the ground (support points
    within a margin), between bodies (engine.collision through ContactGeometry), joint stops near,
    and their rows (normal and two tangents per contact, +-e_i per stop)."""

    def __init__(self, model, settings):
        self.model = model
        self.settings = settings
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
        self._jall = np.zeros((model.nbodies + 1, 6, model.nv))
        # joint friction (URDF <dynamics friction>, MJCF frictionloss): per coordinate with f > 0
        fv, ff = [], []
        for j in model.joints:
            fr = np.zeros(j.nv) if j.friction is None else np.asarray(j.friction, dtype=float).reshape(-1)
            for d in range(min(j.nv, fr.size)):
                if fr[d] > 0.0:
                    fv.append(j.idx_v + d), ff.append(float(fr[d]))
        self.fric_v = np.array(fv, dtype=np.int64)
        self.fric_f = np.array(ff, dtype=float)

    # ------------------------------------------------------------------ rows
    def find(self, q, v, T, contact_margin=CONTACT_MARGIN, limit_margin=LIMIT_MARGIN, box_margin=None, prev=()):
        h = self.settings.dt
        ground = self.settings.ground
        g = self.geometry
        contacts = []           # (body_a, body_b, point, normal, distance, key)
        if ground is not None and not g.empty:
            margin = contact_margin
            b, X, d, key = g.detect(T, ground, margin, prev)
            n = ground.normal
            for k in range(len(b)):
                contacts.append((int(b[k]), 0, X[k], n, float(d[k]), ("g", int(key[k]))))
        self.configure_pairs()
        if g.has_pairs:
            contacts += g.body_contacts(T, self.pair_margin(v) if box_margin is None else box_margin)
        limits = []             # (velocity index, sign, distance)
        if self.settings.joint_limits and self.has_limits:
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

    def pair_margin(self, v):
        """Distance within which two bodies are contact candidates: CONTACT_MARGIN plus how far a
        step can bring them together (|g| h^2 of gravity's pull, 2 h |v|max (1 + L) of their
        motion), so a speculative row catches a body falling onto another in the step (with the
        bare margin, a ball released 3 cm above a box on the ground at dt 0.1 went 1.4 cm into it
        while the box's ground rows held the step, and the projection's push added 0.09 J). The
        compiled step computes the same (engine.contact.step.contact_advance)."""
        h = self.settings.dt
        speed = float(np.abs(v).max(initial=0.0))
        return CONTACT_MARGIN + float(np.linalg.norm(self.model.gravity)) * h * h \
            + 2.0 * h * speed * (1.0 + self.model.characteristic_length())

    def violated(self, q):
        """Whether q is past a limit or through the ground (after a smooth step)."""
        if self.settings.joint_limits and self.has_limits:
            qi = q[self.lim_q]
            if np.any(qi < self.lim_lo) or np.any(qi > self.lim_hi):
                return True
        if self.settings.ground is not None and not self.geometry.empty:
            T = _world_poses(self.model, q)
            _, _, d, _ = self.geometry.ground_points(T, self.settings.ground.normal, self.settings.ground.height, 0.0)
            if d.size and d.min() < 0.0:
                return True
        if self.configure_pairs():
            T = _world_poses(self.model, q)
            if any(c[4] < 0.0 for c in self.geometry.body_contacts(T, 0.0)):
                return True
        return False

    def configure_pairs(self):
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

    def jacobians(self, q, bodies):
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

    def rows(self, q, T, contacts, ground):
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

    def wide(self, q, v, T, q_new, prev=()):
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
        return self.find(q, v, T, np.inf, np.inf,
                         max(CONTACT_MARGIN, 4.0 * self.settings.dt * speed * self.model.characteristic_length() + 0.05),
                         prev)

    def limit_arrays(self):
        """(q index, v index, lower, upper) of the limited joints, for steploop.advance_limited."""
        return self.lim_q, self.lim_v, self.lim_lo, self.lim_hi

    @property
    def has_limits(self):
        return len(self.lim_v) > 0

    @property
    def has_friction(self):
        return len(self.fric_v) > 0

    def friction_arrays(self):
        """(velocity index, friction f > 0) of the coordinates whose dry friction acts (empty when
        ``self.settings.joint_friction`` is off)."""
        if self.settings.joint_friction and self.has_friction:
            return self.fric_v, self.fric_f
        return self.fric_v[:0], self.fric_f[:0]

    def return_into_range(self, q, v, h):
        """A joint found past its stop (started there: set_state, a lesson's pose) is brought back
        by its position only, v untouched (its limit row already keeps it from moving farther out):
        by h (excess / LIMIT_RETURN_TIME + LIMIT_RETURN_SPEED) per step, the rest at once when
        less than LIMIT_SLOP would remain: 2 rad past a stop is back within 0.3 s at any dt.
        An excess below LIMIT_SLOP is left alone (the compiled step leaves it too: a loop's drift
        projection may leave a joint that far past its stop). Returns (q, the energy change
        of the move: booked as negative dissipation so that energy_balance() stays closed)."""
        if not (self.settings.joint_limits and self.has_limits):
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

    def friction(self, prescribed):
        """The friction rows of a step: [(velocity index, f)] of the torque-given coordinates (a
        BOX row each), and (index array, f array) of the acceleration-prescribed ones (their
        motors overcome the friction: -f sign(v) at the start of the step, 0 at rest)."""
        fv, ff = self.friction_arrays()
        pres = np.asarray(prescribed, dtype=bool)[fv]
        rows = [(int(i), float(f)) for i, f, p in zip(fv, ff, pres) if not p]
        return rows, fv[pres], ff[pres]
