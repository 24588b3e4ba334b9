"""The stepping loop of the simulation thread and the sample rows it writes.

``StepRows`` steps the worker's simulator and fills one row per step (the command line, a single
step), or while the window runs one row per ``sample_interval`` of sim time (the steps between
run as one ``Simulator.step`` call, as many as fit in the frame's budget), in the columns of
``recorder.SampleLayout``: the step's starting state, the (constrained) hybrid dynamics computed
there, energies, the energy balance, the watched joint's transmitted wrench (``engine.loops.constrained.joint_transmitted_wrenches``,
loop forces included), each constraint's multipliers (NaN while it is switched off) and the
residuals |f(q)|. It also knows which multiplier columns the enabled constraints fill
(``constraints_changed``). Finished rows go to the worker's ``SampleQueue`` in blocks.
Nothing here imports Qt.
"""
from __future__ import annotations

import math
import time

import numpy as np

SAMPLE_INTERVAL = 1e-3   # s of sim time between two rows of the running window (every step at dt >= 1 ms)


class StepRows:
    """Steps ``sim`` and writes the sample rows of ``layout`` (one object per simulation thread)."""

    def __init__(self, engine, model, sim, layout, samples, sample_interval=0.0):
        self.e, self.model, self.sim, self.layout, self.samples = engine, model, sim, layout, samples
        self.sample_interval = float(sample_interval)   # s of sim time between rows while running; 0: every step
        self.last_row_t = None        # sim time of the last row written
        self.rows_written = 0
        self.step_cost = float("nan")  # measured wall seconds per step
        self._block = np.empty((512, layout.width))
        self._n = 0
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
    def steps_until(self, target, deadline, max_steps=None, drag=None, watched=None, rtf=float("nan"), fill=None,
                    stepped=None, progress=None):
        """Step until sim time reaches ``target`` or wall time passes ``deadline`` (or ``max_steps``
        steps). Returns (steps taken, whether the time budget ended the batch).

        Rows: with ``max_steps`` (a single step, the command line) every step writes one; else
        (the running window) one per ``sample_interval`` of sim time (``steps_to_row``), and the
        steps between two rows run as one ``Simulator.step(m)`` call (one compiled call for the
        compiled step loops) of at most as many steps as the measured cost per step fits in what
        is left of the budget, so one call never overruns it by more than a step. A drag spring
        is rewritten every step (its steps are single calls). ``fill(row, sim)``: more columns of a
        row (the contact and limit columns of app/sim/contactsim.py); ``stepped(sim)``: after steps
        that wrote no row; ``progress()``: after every call (the worker publishes a snapshot from
        there when a long batch would leave the window a frame without one). An error of the simulator propagates after the rows of the steps
        already taken are handed on."""
        sim = self.sim
        k, hit = 0, False
        self._n = 0
        every = max_steps is not None or not (self.sample_interval > 0.0)
        if drag is not None:
            drag.update_mobility(sim.q, sim.prescribed)
        try:
            while sim.t + 0.5 * sim.dt < target if max_steps is None else k < max_steps:
                now = time.perf_counter()
                if max_steps is None and now > deadline:
                    hit = True
                    break
                m = 0 if every else self.steps_to_row()
                if m > 0:
                    m = min(m, self._steps_to(target), self._steps_fitting(deadline - now))
                    if drag is not None:
                        m = 1
                        sim.f_ext = {drag.body: drag.wrench(sim.t, sim.q, sim.v)}
                    sim.step(m)
                    self._measured(m, time.perf_counter() - now)
                    if stepped is not None:
                        stepped(sim)
                    k += m
                    if progress is not None:
                        progress()
                    continue
                self._row_step(drag, watched, rtf, fill)
                self._measured(1, time.perf_counter() - now)
                k += 1
                if progress is not None:
                    progress()
        finally:
            if self._n:
                self.samples.put(self._block[:self._n].copy())
                self.rows_written += self._n
        return k, hit

    def steps_to_row(self):
        """Steps to take before the next step that writes a row: the first step starting at or
        after the last row's time + ``sample_interval`` (0 after a reset or a step back)."""
        last, dt = self.last_row_t, self.sim.dt
        t = self.sim.t
        if last is None or t < last - 0.5 * dt:
            return 0
        return max(0, math.ceil((last + self.sample_interval - 0.5 * dt - t) / dt))

    def stride(self):
        """Steps per row while running (1: every step)."""
        if not (self.sample_interval > 0.0):
            return 1
        return max(1, math.ceil(self.sample_interval / self.sim.dt - 0.5))

    def _steps_to(self, target):
        if target == math.inf:
            return 1 << 30
        return max(1, math.ceil((target - self.sim.t) / self.sim.dt - 0.5))

    def _steps_fitting(self, wall):
        """Steps that the measured cost per step fits in ``wall`` seconds (at least 1)."""
        c = self.step_cost
        if not (c > 0.0):
            return 1
        if wall == math.inf:
            return 1 << 30
        return max(1, int(wall / c))

    def _measured(self, n, wall):
        """Update the cost per step (wall seconds): a dearer step counts at once (a chunk must not
        overrun the budget), a cheaper one halves the difference (a single slow call, the first one
        loading the kernels, is forgotten in a few calls)."""
        c = wall / n
        old = self.step_cost
        self.step_cost = c if not (old > 0.0) or c > old else 0.5 * (old + c)

    def _row_step(self, drag, watched, rtf, fill):
        """One step and its row: the step's starting state and the dynamics computed there."""
        sim, L, e, model = self.sim, self.layout, self.e, self.model
        t0, q0, v0 = sim.t, sim.q.copy(), sim.v.copy()   # a step may update the state in place
        w0, d0 = sim.work + sim.external_work, sim.dissipated
        if drag is not None:
            sim.f_ext = {drag.body: drag.wrench(t0, q0, v0)}
        sim.step(1)
        block = self._block
        if self._n == block.shape[0]:
            block = self._block = np.concatenate((block, np.empty_like(block)))
        row = block[self._n]
        self._n += 1
        self.last_row_t = t0
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
        fresh = self.loops_active and len(lam) == self.active_rows
        if watched is not None:
            # the wrench the joint transmits (the engine's), the loop forces acting on the bodies
            row[L.wrench] = e.loops.constrained.joint_transmitted_wrenches(model, q0, v0, sim.a, sim.f_ext,
                                                                  lam if fresh else None)[watched]
        else:
            row[L.wrench] = np.nan
        if L.nlam:
            row[L.lam] = np.nan
            if fresh:
                row[self.lam_cols] = lam
        if L.residual is not None:
            self._residual_row(row, q0)
        row[L.rtf] = rtf
        if fill is not None:
            fill(row, sim)
