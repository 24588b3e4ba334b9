"""The requests any thread may make of the simulation thread (``SimWorker``): each posts a function
that the thread runs between two steps (``post``), as MuJoCo's ``simulate`` applies its pending
actions. Arguments are checked and copied here, in the caller's thread, so that a bad value raises
where it was given and a later change of the caller's array does not reach the physics."""
from __future__ import annotations

import math

import numpy as np


class SimCommands:
    """The command half of ``SimWorker``: nothing here touches the simulator directly; each method
    queues a function of the worker (``w``), run by the simulation thread between two steps."""

    def post(self, fn):
        """Run fn(worker) in the simulation thread between two steps."""
        self._commands.put(fn)
        self._wake.set()

    def set_running(self, running):
        self.post(lambda w: w._set_running(bool(running)))

    def toggle_running(self):
        self.post(lambda w: w._set_running(not w.running))

    def single_step(self, n=1):
        self.post(lambda w: w._single_step(int(n)))

    def reset(self):
        self.post(lambda w: w._reset())

    def set_speed(self, speed):
        def f(w):
            w.pacer.speed = float(speed)
            w.pacer.resync()
        self.post(f)

    def set_integrator(self, name):
        def f(w):
            if name not in w.e.INTEGRATORS:
                raise ValueError(f"integrator: expected one of {w.e.INTEGRATORS}, got {name!r}")
            w.sim.integrator = name
        self.post(f)

    def set_dt(self, dt):
        def f(w):
            dt_ = float(dt)
            if not (np.isfinite(dt_) and dt_ > 0):
                raise ValueError(f"dt: expected a positive time step, got {dt!r}")
            w.sim.dt = dt_
            w.pacer.resync()
        self.post(f)

    def set_gravity(self, on):
        """Gravity on (the model's own vector) or off (zero), from the next step."""
        on = bool(on)

        def f(w):
            w.model.gravity = w._gravity0 if on else (0.0, 0.0, 0.0)
        self.post(f)

    def set_inputs(self, inputs):
        """{joint name: inputs.JointInput}; a changed mode takes effect at the next step."""
        inputs = dict(inputs)

        def f(w):
            w.controller.set_inputs(inputs, w.sim.q)
            w.sim.prescribed[:] = w.controller.prescribed
        self.post(f)

    def set_joint_positions(self, values):
        """{joint name: array of its q} (pose edits: velocities are zeroed)."""
        values = {k: np.array(v, dtype=float).reshape(-1) for k, v in values.items()}

        def f(w):
            q = w.sim.q.copy()
            for name, x in values.items():
                q[w.model.q_slice(name)] = x
            w._set_pose(q)
        self.post(f)

    def set_state(self, q, v=None):
        q = np.array(q, dtype=float)
        v = None if v is None else np.array(v, dtype=float)
        self.post(lambda w: w._set_pose(q, v))

    def go_back_to(self, t, q, v, energy=None, recapture=True):
        """Restore a recorded state (t, q, v) while paused (reliability: step back after a fault;
        the timeline's cursor, app/window/timeline.py); see ``restore_now``."""
        q, v = np.array(q, dtype=float), np.array(v, dtype=float)
        self.post(lambda w: w.restore_now(t, q, v, energy, recapture))

    def restore_now(self, t, q, v, energy=None, recapture=True):
        """In the simulation thread only (a posted function): the state (t, q, v), if paused.
        ``energy``: (work, dissipated) of the energy balance at that state (it goes on from there);
        ``recapture``: the input laws take their hold poses from q (False: they keep the run's, so
        the readouts are those of the run at t). Returns whether it was restored."""
        if self.running:
            return False
        self._drag_end()
        self.sim.set_state(q, v, t)
        if energy is not None:
            self.sim.work, self.sim.external_work, self.sim.dissipated = float(energy[0]), 0.0, float(energy[1])
        if recapture:
            self.controller.recapture(self.sim.q)
        self._good = (self.sim.t, self.sim.q.copy(), self.sim.v.copy())
        return True

    def set_constraint_enabled(self, name, on):
        """Switch a constraint on or off between two steps; switched on, the state is projected
        onto the enabled constraints (the loop closes again where it is nearest)."""
        on = bool(on)

        def f(w):
            c = w.model.constraint(name)
            if c.enabled == on:
                return
            c.enabled = on
            w._constraints_changed()
            if on:
                w._project()
        self.post(f)

    def set_stabilization(self, on):
        """Baumgarte drift stabilisation on or off."""
        self.post(lambda w: setattr(w.sim, "stabilization", "baumgarte" if on else "none"))

    def set_baumgarte_time(self, T):
        """Baumgarte time constant in seconds (None: the simulator's default); the simulator
        clamps it to at least 2 dt."""
        if T is not None:
            T = float(T)
            if not (math.isfinite(T) and T > 0):
                raise ValueError(f"Baumgarte time constant: expected a positive number of seconds, got {T!r}")
        self.post(lambda w: setattr(w.sim, "baumgarte_time", T))

    def project_now(self):
        """Move the state onto the enabled constraints (positions, then velocities)."""
        self.post(lambda w: w._project())

    def set_project_every_step(self, on):
        self.post(lambda w: setattr(w.sim, "project_every_step", bool(on)))

    def watch_wrench(self, joint_name):
        """Record the wrench that this joint transmits (None: record none)."""
        def f(w):
            if joint_name is not None:
                w.model.joint(joint_name)
            w.watched_joint = joint_name
        self.post(f)

    def drag_start(self, body, p_local, mode):
        """mode "spring" (while running) or "pose" (while paused)."""
        p_local = np.array(p_local, dtype=float)
        self.post(lambda w: w._drag_start(body, p_local, mode))

    def drag_move(self, target):
        target = np.array(target, dtype=float)
        self.post(lambda w: w._drag_move(target))

    def drag_end(self):
        self.post(lambda w: w._drag_end())

    def gui_frame(self, interval):
        """The GUI's last frame interval (s): a slow one shrinks the physics' batch budget
        (``pacing.Pacer.batch_budget``). Called by the GUI thread at every frame."""
        self.pacer.gui_frame = float(interval)
