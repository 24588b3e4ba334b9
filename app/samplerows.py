"""The stepping loop of the simulation thread and the sample row it writes for every step.

``StepRows`` steps the worker's simulator and fills one row per step in the columns of
``recorder.SampleLayout``: the step's starting state, the (constrained) hybrid dynamics computed
there, energies, the energy balance, the watched joint's transmitted wrench (``engine.constrained.joint_transmitted_wrenches``,
loop forces included), each constraint's multipliers (NaN while it is switched off) and the
residuals |f(q)|. It also knows which multiplier columns the enabled constraints fill
(``constraints_changed``). Finished rows go to the worker's ``SampleQueue`` in blocks.
Nothing here imports Qt.
"""
from __future__ import annotations

import math
import time

import numpy as np

class StepRows:
    """Steps ``sim`` and writes the sample rows of ``layout`` (one object per simulation thread)."""

    def __init__(self, engine, model, sim, layout, samples):
        self.e, self.model, self.sim, self.layout, self.samples = engine, model, sim, layout, samples
        self._block = np.empty((512, layout.width))
        self.constraints_changed()

    # ------------------------------------------------------------------ closed loops
    def constraints_changed(self):
        """Which columns the enabled constraints' stacked multipliers go to."""
        L = self.layout
        cols = []
        for c in self.model.constraints:
            if c.enabled:
                cols += L.lam_columns[c.name]
        self.lam_cols = np.array(cols, dtype=np.intp)
        self.active_rows = len(cols)
        self.loops_active = bool(cols)
        self.measured = [(c, L.residual_columns[c.name]) for c in self.model.constraints
                         if c.name in L.residual_columns]
        self._measured_constraints = [c for c, _ in self.measured]
        # the multipliers of another set of constraints mean nothing now (and the simulator keeps
        # its last ones while no constraint is enabled): none until the next step
        self.sim.lam = np.zeros(0)

    def fresh_lam(self):
        """The simulator's multipliers when they belong to the enabled constraints, else None."""
        lam = self.sim.lam
        return lam if self.loops_active and len(lam) == self.active_rows else None

    def residual_vector(self, q):
        """|f(q)| per measured constraint (enabled or not), and of the enabled ones together (NaN
        where f is undefined: a disk lying flat, a rod of length 0)."""
        res = self.e.constraint_residuals(self.model, q, self._measured_constraints)
        total = 0.0
        for (c, _), r in zip(self.measured, res):
            if c.enabled and r == r:
                total += r * r
        return res.tolist(), math.sqrt(total)

    def _residual_row(self, row, q):
        out, total = self.residual_vector(q)
        row[self.layout.residual] = total
        for (_, col), r in zip(self.measured, out):
            row[col] = r

    # ------------------------------------------------------------------ the stepping loop
    def steps_until(self, target, deadline, max_steps=None, drag=None, watched=None, rtf=float("nan"), fill=None):
        """Step until sim time reaches ``target`` or wall time passes ``deadline`` (or ``max_steps``
        steps). Each step: the drag spring's wrench, one step, one sample row. Returns (steps
        taken, whether the time budget ended the batch). ``fill(row, sim)``: more columns of a
        row (the contact and limit columns of app/contactsim.py). An error of the simulator propagates after
        the rows of the steps already taken are handed on."""
        sim, L, e, model = self.sim, self.layout, self.e, self.model
        block = self._block
        k = 0
        hit = False
        half = 0.5 * sim.dt
        nlam = L.nlam
        lam_cols, nactive, loops = self.lam_cols, self.active_rows, self.loops_active
        residual = self._residual_row if L.residual is not None else None
        if drag is not None:
            drag.update_mobility(sim.q, sim.prescribed)
        try:
            while sim.t + half < target if max_steps is None else k < max_steps:
                if max_steps is None and time.perf_counter() > deadline:
                    hit = True
                    break
                t0, q0, v0 = sim.t, sim.q.copy(), sim.v.copy()   # a step may update the state in place
                w0, d0 = sim.work + sim.external_work, sim.dissipated
                if drag is not None:
                    sim.f_ext = {drag.body: drag.wrench(t0, q0, v0)}
                sim.step(1)
                if k == block.shape[0]:
                    block = self._block = np.concatenate((block, np.empty_like(block)))
                row = block[k]
                row[0] = t0
                row[L.q] = q0
                row[L.dq] = v0
                row[L.ddq] = sim.a
                row[L.tau] = sim.tau
                ke, pe = e.energies(model, q0, v0)
                row[L.kinetic] = ke
                row[L.potential] = pe
                row[L.total] = ke + pe
                row[L.work], row[L.dissipated], row[L.balance] = w0, d0, ke + pe - w0 + d0
                lam = sim.lam
                fresh = loops and len(lam) == nactive
                if watched is not None:
                    # the wrench the joint transmits (the engine's), the loop forces acting on the bodies
                    row[L.wrench] = e.constrained.joint_transmitted_wrenches(model, q0, v0, sim.a, sim.f_ext,
                                                                          lam if fresh else None)[watched]
                else:
                    row[L.wrench] = np.nan
                if nlam:
                    row[L.lam] = np.nan
                    if fresh:
                        row[lam_cols] = lam
                if residual is not None:
                    residual(row, q0)
                row[L.rtf] = rtf
                if fill is not None:
                    fill(row, sim)
                k += 1
        finally:
            if k:
                self.samples.put(block[:k].copy())
        return k, hit
