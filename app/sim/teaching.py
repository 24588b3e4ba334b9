"""What the teaching views show, computed in the simulation thread (never in the GUI thread) and
carried by the snapshot as ``Snapshot.teaching``: Kim's per-body quantities of the current state
(``engine.body_quantities``), the equation of motion term by term (``engine.equation_terms``) and,
while paused and asked for, the whole recursion step by step (``engine.teaching.trace``). Nothing here
imports Qt, and nothing here computes dynamics: it gathers the inputs the simulator uses at the
current state (joint modes, the input laws' a and tau, damping as a passive torque, the mouse
spring and the closed loops' forces as external wrenches) and calls the engine.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

PERIOD = 1.0 / 15.0        # live values at most this often while running (the views redraw at ~8-15 Hz)


@dataclass(frozen=True)
class Teaching:
    """The teaching views' data for one state (all arrays are copies)."""
    t: float
    q: np.ndarray
    v: np.ndarray
    prescribed: np.ndarray
    a_in: np.ndarray          # the prescribed accelerations given (as hybrid dynamics reads them)
    tau_in: np.ndarray        # the torques given, damping included (what the dynamics sees)
    bodies: dict              # engine.body_quantities(...) : {body: {quantity: value (body frame)}}
    equation: object          # engine.EquationTerms, or None
    damping_torque: np.ndarray  # d * dq (the passive term the simulator subtracts from the motors)
    lam: np.ndarray           # constraint multipliers used (empty for a tree)
    trace: object = None      # engine.Trace while paused and asked for
    tau_used: np.ndarray | None = None   # the torques the dynamics used, damping included: tau_in for a
    # torque-given joint; for an acceleration-prescribed one the torque hybrid dynamics computed for
    # its motion, less the limit's (what the motor supplies is tau_used + damping_torque, Simulator.tau)


class TeachingProbe:
    """Lives in the simulation thread; ``compute(worker, want_trace)`` returns a ``Teaching`` or None.
    The same state with the same inputs gives the same object (the views keep their place)."""

    def __init__(self):
        self._last = None
        self._last_time = 0.0
        self._key = None

    def compute(self, worker, want_trace=False):
        now = time.perf_counter()
        want_trace = want_trace and worker._drag is None     # not at every frame of a pose drag
        if worker.running and self._last is not None and now - self._last_time < PERIOD and not want_trace:
            return self._last
        try:
            inputs = self._inputs(worker)
            key = (want_trace,) + tuple(np.asarray(x, dtype=float).tobytes() for x in inputs[:6]) + (
                tuple((k, np.asarray(w, dtype=float).tobytes()) for k, w in sorted(inputs[6].items())),
                tuple((c.body, np.asarray(c.force, dtype=float).tobytes(), np.asarray(c.point, dtype=float).tobytes())
                      for c in inputs[7]), inputs[8].tobytes())
            if key == self._key:
                return self._last
            out = self._evaluate(worker, inputs, want_trace)
        except (ValueError, ArithmeticError, np.linalg.LinAlgError):
            out, key = None, None
        self._key = key
        self._last = out
        self._last_time = now
        return out

    @staticmethod
    def _inputs(worker):
        """(t, q, v, prescribed, a given, tau given (damping included), f_ext of the user) now."""
        sim, model = worker.sim, worker.model
        q, v = sim.q.copy(), sim.v.copy()
        prescribed = sim.prescribed.copy()
        if sim.controller is not None:
            a_cmd, tau_cmd = sim.controller(sim.t, q, v)
            a_cmd = np.zeros(model.nv) if a_cmd is None else np.array(a_cmd, dtype=float)
            tau_cmd = np.zeros(model.nv) if tau_cmd is None else np.array(tau_cmd, dtype=float)
        else:
            a_cmd, tau_cmd = sim.a_cmd.copy(), sim.tau_cmd.copy()
        tau_in = tau_cmd - model.damping * v
        contacts = tuple(sim.contacts or ())
        # the joint-space torques of the last step: the stops' and the joints' dry friction
        limit = np.array(sim.limit_forces, dtype=float) + np.array(sim.friction_forces, dtype=float)
        return np.array([sim.t]), q, v, prescribed, a_cmd, tau_in, dict(sim.f_ext or {}), contacts, limit

    @staticmethod
    def _evaluate(worker, inputs, want_trace):
        e, sim, model = worker.e, worker.sim, worker.model
        t, q, v, prescribed, a_cmd, tau_in, f_user, contacts, limit = inputs
        lam = np.zeros(0)
        f_all = dict(f_user)
        for body, w in e.contact_wrenches(model, q, contacts).items():     # the ground's last push
            f_all[body] = np.asarray(f_all.get(body, np.zeros(6)), dtype=float) + w
        tau_dyn = tau_in + limit                                            # joint limits' torques
        if e.loops.constraints.active_constraints(model):
            gains = sim.baumgarte()
            _, _, lam = e.constrained_hybrid_dynamics(model, q, v, prescribed, a_cmd, tau_dyn, f_all or None, gains)
            for body, w in e.loops.constrained.constraint_external_wrenches(model, q, v, lam).items():
                f_all[body] = np.asarray(f_all.get(body, np.zeros(6)), dtype=float) + w
        bodies = e.body_quantities(model, q, v, prescribed, a_cmd, tau_dyn, f_all or None)
        a_out, tau_out = bodies[""]
        eq = e.equation_terms(model, q, v, a_out, lam=lam if len(lam) else None, f_ext=f_user or None,
                              contacts=contacts, limit_forces=limit if limit.any() else None)
        tr = e.trace(model, q, v, prescribed, a_cmd, tau_dyn, f_all or None) if want_trace else None
        # a prescribed joint's torque as hybrid dynamics computed it (its own algorithm: the
        # equation's sum checks it), less the limit torque it was handed in tau_dyn
        tau_used = np.where(prescribed, np.asarray(tau_out, dtype=float) - limit, tau_in)
        return Teaching(float(t[0]), q, v, prescribed, a_cmd, tau_in, bodies, eq, model.damping * v, lam, tr,
                        tau_used)
