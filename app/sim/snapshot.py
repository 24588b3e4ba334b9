"""What the GUI draws: an immutable ``Snapshot`` of the simulation thread's state, and
``take_snapshot(worker)`` that builds one (in the simulation thread, keyword by keyword).

Closed loops: snapshots carry the constraint forces (``engine.constraint_wrenches``) and the joint
reactions with the loop forces included (``engine.joint_reaction_wrenches``), both computed in the
simulation thread, never in the GUI thread. Nothing here imports Qt.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from app.sim.drag import point_jacobian

_SOFT_ERRORS = (ValueError, ArithmeticError, np.linalg.LinAlgError)


@dataclass(frozen=True)
class Snapshot:
    """What the GUI draws: copies, never the simulator's own arrays. ``a``, ``tau`` (and ``lam``)
    are the hybrid dynamics of the state (t, q, v) shown while paused (recomputed after a reset,
    a step back, a pose or an input change); while running, those of the last step's start."""
    serial: int
    t: float
    q: np.ndarray
    v: np.ndarray
    a: np.ndarray
    tau: np.ndarray
    prescribed: np.ndarray
    running: bool
    speed: float
    rtf: float           # measured sim time / wall time (nan when not measured)
    behind: bool         # physics can not keep up with the asked speed
    steps: int
    dt: float
    integrator: str
    kinetic: float
    potential: float
    drag_point: np.ndarray | None = None    # world grab point
    drag_target: np.ndarray | None = None   # world mouse target
    drag_force: np.ndarray | None = None    # world spring force on the body (N)
    drag_body: str | None = None
    drag_mode: str | None = None            # "spring" or "pose"
    wrenches: dict | None = None            # {joint: reaction (m, f) child frame, loop forces included}
    # closed loops (empty / None for a tree)
    lam: np.ndarray | None = None           # multipliers of the enabled constraints, stacked (with a, tau)
    constraint_enabled: tuple = ()          # per constraint of the model, in model order
    residual: float = float("nan")          # |f(q)| of the enabled constraints (the drift meter)
    residuals: tuple = ()                   # |f(q)| per constraint, enabled or not (NaN: none to measure)
    stabilization: str = "none"             # "baumgarte" or "none"
    baumgarte_time: float | None = None     # time constant asked (None: the simulator's default)
    baumgarte_used: float | None = None     # time constant in use after the clamp (None: off)
    project_every_step: bool = False
    constraint_forces: tuple | None = None  # ((name, world point, force, moment), ...) when wanted
    closure_points: tuple | None = None     # ((name, enabled, point a, point b or None), ...) when wanted
    gravity: tuple = (0.0, 0.0, -9.81)      # the gravity vector in use (world)
    loop_projections: int = 0               # times the simulator projected a drifting loop back
    teaching: object = None                 # app.sim.teaching.Teaching when the teaching views want it
    contacts: tuple = ()                    # ((body, world point, world force on the body), ...) (app/sim/contactsim.py)
    limit_forces: np.ndarray | None = None  # joint limit torques / forces (nv)
    on_limit: tuple = ()                    # joints sitting on a limit
    ground: object = None                   # engine.Ground in use (None: no ground contact)
    joint_limits: bool = False              # joint limits honoured
    pins: tuple = ()                        # ((body, world point), ...) pinned for the pose drag


def take_snapshot(worker, serial, teaching=None):
    """A Snapshot of ``worker`` (a SimWorker) now; runs in the simulation thread."""
    sim = worker.sim
    try:
        ke, pe = sim.energy()
    except ValueError:
        ke = pe = float("nan")
    running = worker.running
    pacer = worker.pacer
    return Snapshot(serial=serial, t=sim.t, q=sim.q.copy(), v=sim.v.copy(), a=sim.a.copy(), tau=sim.tau.copy(),
                    prescribed=sim.prescribed.copy(), running=running, speed=pacer.speed,
                    rtf=pacer.rtf if running else float("nan"), behind=pacer.behind and running,
                    steps=sim.steps, dt=sim.dt, integrator=sim.integrator, kinetic=ke, potential=pe,
                    wrenches=_reactions(worker) if worker.want_reactions else None,
                    gravity=tuple(float(x) for x in np.asarray(worker.model.gravity, dtype=float).reshape(3)),
                    loop_projections=worker.loop_projections(), teaching=teaching,
                    **_drag_fields(worker), **_loop_fields(worker),
                    **worker.contact.snapshot_fields(worker.e, sim))


def _drag_fields(worker):
    d = worker._drag
    if d is None:
        return {}
    mode = worker._drag_mode
    if mode == "pose" or d.point is None:
        d.point = point_jacobian(worker.e, worker.model, worker.sim.q, d.body, d.p_local)[0]
    return dict(drag_point=np.array(d.point), drag_target=None if d.target is None else np.array(d.target),
                drag_force=np.array(d.force) if mode == "spring" else None, drag_body=d.body, drag_mode=mode)


def _reactions(worker):
    """The joint reactions of the dynamics the snapshot shows (a and lambda belong to q_prev,
    v_prev), with the loop forces acting on the bodies."""
    sim = worker.sim
    try:
        return worker.e.joint_reaction_wrenches(worker.model, sim.q_prev, sim.v_prev, sim.a, sim.f_ext,
                                                worker.rows.fresh_lam())
    except _SOFT_ERRORS:
        return None


def _loop_fields(worker):
    """The closed-loop part of a snapshot (a dict of Snapshot fields)."""
    sim, model, e, rows = worker.sim, worker.model, worker.e, worker.rows
    cons = model.constraints
    if not cons:
        return {}
    lam = np.array(sim.lam)
    fresh = rows.fresh_lam() is not None
    res, total = rows.residual_vector(sim.q)
    by_name = dict(zip((c.name for c, _ in rows.measured), res))
    gains = sim.baumgarte()
    out = dict(lam=lam if fresh else np.zeros(0), constraint_enabled=tuple(c.enabled for c in cons),
               residual=total if rows.loops_active else 0.0,
               residuals=tuple(by_name.get(c.name, float("nan")) for c in cons),
               stabilization=sim.stabilization, baumgarte_time=sim.baumgarte_time,
               baumgarte_used=None if gains is None else 1.0 / gains[0],
               project_every_step=bool(sim.project_every_step))
    if worker.want_constraint_forces:
        forces = ()
        if fresh:
            try:
                forces = tuple((n, np.array(p), np.array(f), np.array(m))
                               for n, p, f, m in e.constraint_wrenches(model, sim.q, sim.v, lam))
            except _SOFT_ERRORS:
                forces = ()
        points = []
        kin = e.loops.constraints.Kinematics(model, sim.q, sim.v)
        for c in cons:
            try:
                if hasattr(c, "body_b"):
                    pa, pb = (np.array(s_.p) for s_ in c.frames(kin))
                else:
                    w = c.wrench(kin, np.zeros(c.rows))
                    if w is None:
                        continue
                    pa, pb = np.array(w[0]), None
            except _SOFT_ERRORS:
                continue
            points.append((c.name, c.enabled, pa, pb))
        out.update(constraint_forces=forces, closure_points=tuple(points))
    return out
