"""The compiled contact step as a simulator calls it (engine.contact.step.contact_advance): buffers,
ground and stop arrays, the call, the results into the step state, the statistics."""
from __future__ import annotations


import numpy as np

from engine.kernel.layout import SINGULAR, PYTHON_STEP, OK as _OK
from engine.stepping.driver import INTEGRATOR_CODES
from engine.contact.step import (contact_advance, I_ROWS, I_ITER, I_POLISHED, I_STEPS, I_MAX_ITER, I_NCON,
                                 F_RESIDUAL, F_WORST)
from engine.contact.candidates import LIMIT_SLOP


class CompiledContact:
    """The compiled contact step of one simulator (engine.contact.step.contact_advance): its buffers,
    made at first use, and the call with the results written back into the step state. ``stepper``
    is the ContactStepper it shares the statistics and warm start with."""

    def __init__(self, stepper):
        self.stepper = stepper
        self.model = stepper.model
        self.settings = stepper.settings
        self.state = stepper.state
        self.python = stepper.python
        self.compiled = stepper.compiled
        self.inputs = stepper.inputs
        self.candidates = stepper.candidates
        self.kernel = None           # buffers of the compiled step (engine.contact.step), made at first use

    def span(self, n):
        """How many of the next n steps engine.contact.step may take (0: the next step is the
        Python step's): none while a limited joint is past its stop (``Candidates.return_into_range`` brings
        it back), else all n. A stop that overrides an acceleration-prescribed joint's prescription
        (the hybrid response moves no prescribed joint, so its limit row can not act) is met by the
        Python step's ``_block``: the compiled step finds that step itself (the same test,
        engine.contact.step._stop_overrides) and returns it to Python, so a robot whose joints are held
        by input laws, standing on the ground, runs compiled."""
        if not (self.settings.joint_limits and self.candidates.has_limits):
            return n
        x = np.asarray(self.state.q, dtype=float)[self.candidates.lim_q]
        if np.any(x < self.candidates.lim_lo - LIMIT_SLOP) or np.any(x > self.candidates.lim_hi + LIMIT_SLOP):
            return 0
        if np.any(self.state.blocked):
            return 0            # held on a stop by the last step: most likely this one too (saves a call)
        return n

    # ------------------------------------------------------------------ the compiled step
    def ok(self, packed):
        """Whether engine.contact.step.contact_advance takes this simulator's steps: not with a
        Python controller, or loops the compiled step does not know (packed is
        self.compiled.loop_spec(): False for a Pfaffian constraint or projection after every step): the
        Python step handles those."""
        if self.inputs.controller is not None or packed is False:
            return False
        return True

    def buffers(self):
        self.candidates.configure_pairs()
        if self.kernel is not None and self.kernel["pair_key"] != self.candidates.geometry._pair_key:
            self.kernel = None          # self-collision switched: new pair geometry (no warm start)
        if self.kernel is None:
            from engine.multibody.model import WS_DTYPE
            model, g = self.model, self.candidates.geometry
            npts = len(g.points) + len(g.sph_r) + len(g.disk_r)
            cap = npts + 1 + g.pair_capacity
            mats = np.full((model.nbodies + 1, 2), np.nan)
            for b, (mu, e) in (getattr(model, "contact_materials", None) or {}).items():
                mats[b] = (np.nan if mu is None else mu, np.nan if e is None else e)
            nlim = len(self.candidates.lim_v) + len(self.candidates.fric_v)      # their warm starts too
            rng = np.array([[a, b] for (a, b) in g._grp_rng], dtype=np.int64).reshape(-1, 2)
            geo = (np.ascontiguousarray(g.points, dtype=float).reshape(-1, 3), g.point_body.astype(np.int64),
                   g.point_shape.astype(np.int64), g._grp_body.astype(np.int64), g._grp_c.reshape(-1, 3).copy(),
                   g._grp_r.astype(float), rng, g.sph_c.copy(), g.sph_r.copy(), g.sph_b.copy(), g.sph_s.copy(),
                   g.disk_c.copy(), g.disk_a.copy(), g.disk_r.copy(), g.disk_b.copy(), g.disk_s.copy(),
                   g.point_disk.astype(np.int64))
            self.kernel = dict(
                geo=geo, ws_m=np.zeros(model.nbodies + 1, dtype=WS_DTYPE).view(np.uint8),
                free_iq=np.array([iq for iq, _ in self.stepper.free], dtype=np.int64),
                free_iv=np.array([iv for _, iv in self.stepper.free], dtype=np.int64),
                warm_key=np.zeros(cap + 2 * nlim + 1, dtype=np.int64), warm_lam=np.zeros((cap + 2 * nlim + 1, 4)),
                nwarm=np.zeros(1, dtype=np.int64), c_body=np.zeros(cap, dtype=np.int64), c_point=np.zeros((cap, 3)),
                c_force=np.zeros((cap, 3)), c_pen=np.zeros(cap), limit_forces=np.zeros(model.nv),
                friction_forces=np.zeros(model.nv),
                istats=np.zeros(6, dtype=np.int64), fstats=np.zeros(2), gnd=np.zeros(8),
                no_i=np.zeros(0, dtype=np.int64), no_f=np.zeros(0),
                char_length=float(model.characteristic_length()), pgeo=g.pair_arrays(), mats=mats,
                c_other=np.zeros(cap, dtype=np.int64), c_normal=np.zeros((cap, 3)), pair_key=g._pair_key)
        return self.kernel

    def run(self, n, record, packed):
        """Up to n steps in engine.contact.step.contact_advance (one compiled call):
        (steps taken, whether the next step needs the Python step). packed: self.compiled.loop_spec() (None
        without loops), passed in so one step() call packs its loops once."""
        model = self.model
        K = self.buffers()
        loop = self.compiled.steploop()
        laws = self.inputs.laws
        if laws is not None and not laws.is_zero():
            self.state.prescribed[:] = laws.prescribed
            tau_base, acc_base = laws.constant_parts()
            code, params, base = laws.code, laws.params, laws.base
        else:
            laws = None
            tau_base = np.ascontiguousarray(self.state.tau_cmd, dtype=np.float64).copy()
            acc_base = np.ascontiguousarray(self.state.a_cmd, dtype=np.float64).copy()
            code, params, base = loop.no_code, loop.no_params, self.state.q
        prescribed = np.ascontiguousarray(self.state.prescribed, dtype=np.bool_).copy()
        base = np.ascontiguousarray(base, dtype=np.float64)
        if self.python.damping.shape != (model.nv,):
            self.python.damping = model.damping
        gnd = K["gnd"]
        ground = self.settings.ground
        if ground is not None and not self.candidates.geometry.empty:
            gnd[:3] = ground.normal
            gnd[3], gnd[4], gnd[5], gnd[6] = ground.height, ground.friction, ground.restitution, 1.0
        else:
            gnd[:] = (0.0, 0.0, 1.0, 0.0, 0.8, 0.0, 0.0, 0.0)     # Ground's defaults: bodies touching bodies
        gnd[7] = len(model.collisions)
        if self.settings.joint_limits and self.candidates.has_limits:
            lq, lv, llo, lhi = self.candidates.lim_q, self.candidates.lim_v, self.candidates.lim_lo, self.candidates.lim_hi
        else:
            lq, lv, llo, lhi = K["no_i"], K["no_i"], K["no_f"], K["no_f"]
        fv, ff = self.candidates.friction_arrays()
        st_i, st_f, stats = K["istats"], K["fstats"], self.stepper.stats
        st_i[I_STEPS], st_i[I_MAX_ITER], st_f[F_WORST] = stats["steps"], stats["max_iterations"], stats["worst_residual"]
        rec = loop.no_rec if record is None else record
        q = np.array(self.state.q, dtype=np.float64)
        v = np.array(self.state.v, dtype=np.float64)
        loop.load_fext(self.state.f_ext)
        loop.tv[0] = self.state.t
        loop.energy[:] = 0.0
        ci, cf, nrows = packed if packed else (loop.no_ci, loop.no_cf, 0)
        gains = loop.loop_gains
        bg = self.settings.baumgarte() if packed else None
        gains[0], gains[1], gains[2] = (0.0, 0.0, 0.0) if bg is None else (1.0, bg[0], bg[1])
        gains[3] = self.settings.loop_tolerance
        if loop.lam.shape[0] != nrows:
            loop.lam = np.zeros(nrows)
        loop.proj[:] = 0.0
        st = contact_advance(model._mb, loop.wsb, loop.ws_gb, loop.ws_kb, K["ws_m"], q, v, loop.tv, float(self.settings.dt),
                             int(n), INTEGRATOR_CODES[self.settings.integrator], prescribed, code, params, base, self.python.damping,
                             tau_base, acc_base, loop.a, loop.tau, loop.q_prev, loop.v_prev, loop.bad, *rec,
                             loop.done, loop.energy, K["geo"], gnd, lq, lv, llo, lhi, float(self.settings.limit_restitution),
                             K["free_iq"], K["free_iv"], K["char_length"], K["warm_key"], K["warm_lam"], K["nwarm"],
                             K["c_body"], K["c_point"], K["c_force"], K["c_pen"], K["limit_forces"], st_i, st_f,
                             ci, cf, gains, loop.lam, loop.proj, K["pgeo"], K["mats"], K["c_other"], K["c_normal"],
                             fv, ff, K["friction_forces"])
        done = int(loop.done[0])
        if done:
            self.compiled.take(loop, done, q, v, loop.tv[0], bool(packed), laws)
            nc = int(st_i[I_NCON])
            self.state.set_contact_arrays(K["c_body"][:nc].copy(), K["c_point"][:nc].copy(), K["c_normal"][:nc].copy(),
                                    K["c_force"][:nc].copy(), K["c_pen"][:nc].copy(), K["c_other"][:nc].copy())
            self.state.limit_forces = K["limit_forces"].copy()
            self.state.friction_forces = K["friction_forces"].copy()
            self.state.blocked = np.zeros(model.nv, dtype=bool)
            self.stepper.warm = {}
            self.stepper.approach = {}
            stats.update(rows=int(st_i[I_ROWS]), iterations=int(st_i[I_ITER]), polished=bool(st_i[I_POLISHED]),
                         residual=float(st_f[F_RESIDUAL]), steps=int(st_i[I_STEPS]),
                         max_iterations=int(st_i[I_MAX_ITER]), worst_residual=float(st_f[F_WORST]))
        if st == SINGULAR or st == PYTHON_STEP:
            return done, True
        if st != _OK:
            loop.raise_for(st, self.state.t, self.state.q, self.state.v, self.settings.dt, self.settings.integrator, prescribed)
        return done, False
