"""The simulation thread: the only writer of physics state.

The GUI talks to it through ``post`` (commands, queued and applied between steps, as MuJoCo's
``simulate`` does with its pending actions) and reads from it:
- ``snapshot()``: an immutable copy of the latest state (taken under a lock, drawn after);
- ``samples``: every step's sample, in blocks (``recorder.SampleQueue``), never dropped;
- ``events``: faults and notices (divergence, errors), each (kind, message).

Closed loops: every sample records each constraint's multipliers (NaN while it is switched off)
and the residuals |f(q)|; snapshots carry the constraint forces (``engine.constraint_wrenches``)
and the joint reactions with the loop forces included (``engine.joint_reaction_wrenches``), both
computed here, never in the GUI thread. Switching a constraint, the Baumgarte time constant,
projection: commands like the others (the constraint objects belong to this thread's model).
When the simulator projects a drifting loop back onto it (``sim.loop_projections``), an event
("loop", (message, count)) says so; a loop it can not project back (``engine.LoopFailure``)
pauses the simulation with a message naming the loop.

Gravity is a setting of this thread's model (``set_gravity``): off assigns (0, 0, 0), on the
model's own gravity; snapshots carry the gravity in use.

Pacing: sim time follows wall-clock time x speed. A batch of steps spends at most ~70% of a
frame (``BUDGET``); when the physics can not keep up the simulation runs slower than asked,
resynchronises instead of trying to catch up (never spirals), and says so (``Snapshot.behind``
and the measured real-time factor). On divergence it pauses and keeps the last good state.
Nothing here imports Qt.
"""
from __future__ import annotations

import copy
import math
import queue
import threading
import time
from collections import deque
from dataclasses import dataclass

import numpy as np

from .drag import DragSpring, ik_mask, point_jacobian
from .contactsim import ContactState
from .inputs import Controller
from .recorder import SampleLayout, SampleQueue
from .teaching import TeachingProbe

FRAME = 1.0 / 60.0
BUDGET = 0.7 * FRAME      # longest batch of physics (s of wall time)
RESYNC = 0.25             # resynchronise when more than this (wall s) behind: a short stall of the
                          # machine is caught up (batches stay capped), a slow physics is not
RTF_WINDOW = 0.5          # real-time factor measured over this much wall time


class _EngineInputs(Controller):
    """The joint panel's Controller whose laws are also handed to the simulator as data
    (``engine.InputLaws``): the simulator evaluates them inside its compiled step loop, so the
    physics thread does not call back into Python at every step. Same numbers as calling the
    Controller (tests/test_compiled_step.py)."""

    def __init__(self, model, engine, sim):
        from engine.input_laws import PARAM_NAMES
        self._sim = sim
        self._laws = engine.InputLaws(model)
        self._columns = PARAM_NAMES
        super().__init__(model, engine)

    def _rebuild(self, q_now, changed=None):
        super()._rebuild(q_now, changed)
        laws = self._laws
        laws.code[:] = self._code
        for i, name in enumerate(self._columns):
            laws.params[:, i] = self._p[name]
        laws.base[:] = self._base
        self._sim.inputs = laws


@dataclass(frozen=True)
class Snapshot:
    """What the GUI draws: copies, never the simulator's own arrays."""
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
    lam: np.ndarray | None = None           # multipliers of the enabled constraints, stacked (last step)
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
    teaching: object = None                 # app.teaching.Teaching when the teaching views want it
    contacts: tuple = ()                    # ((body, world point, world force on the body), ...) (app/contactsim.py)
    limit_forces: np.ndarray | None = None  # joint limit torques / forces (nv)
    on_limit: tuple = ()                    # joints sitting on a limit
    ground: object = None                   # engine.Ground in use (None: no ground contact)
    joint_limits: bool = False              # joint limits honoured
    pins: tuple = ()                        # ((body, world point), ...) pinned for the pose drag


class SimWorker:
    """Owns an ``engine.Simulator`` on a clone of the model and runs it in a thread."""

    def __init__(self, engine, model, dt=1e-3, integrator="rk4", q0=None, v0=None, running=True, name="sim",
                 ground=None, joint_limits=None):
        self.e = engine
        self.model = model.clone()          # only this thread uses it
        # its own constraint objects: switching one off here must not touch the GUI's model
        self.model.constraints = [copy.copy(c) for c in getattr(model, "constraints", [])]
        self.layout = SampleLayout(model)
        self.contact = ContactState(self.model, self.layout)     # contact and limit columns, pins
        self.sim = engine.Simulator(self.model, dt=dt, integrator=integrator, q=q0, v=v0, ground=ground,
                                    joint_limits=joint_limits)
        self._gravity0 = tuple(float(x) for x in np.asarray(self.model.gravity, dtype=float).reshape(3))
        self._projections_seen = self._loop_projections()
        self.controller = _EngineInputs(self.model, engine, self.sim)
        self.controller.recapture(self.sim.q)
        self.samples = SampleQueue()
        self.events = deque()
        self.running = running
        self.speed = 1.0
        self.watched_joint = None
        self.want_reactions = False          # set by the GUI: joint wrenches in every snapshot
        self.want_constraint_forces = False  # set by the GUI: constraint forces in every snapshot
        self.want_teaching = False           # set by the GUI: Kim's quantities, the equation terms
        self.want_trace = False              # set by the GUI: the step-by-step trace (while paused)
        self._teaching = TeachingProbe()
        self._zero_v = np.zeros(self.model.nv)
        self._constraints_changed()
        self._commands = queue.SimpleQueue()
        self._wake = threading.Event()
        self._lock = threading.Lock()
        self._stop = False
        self._sync = None
        self._rtf_hist = deque()
        self._rtf = float("nan")
        self._behind = False
        self._serial = 0
        self._drag = None
        self._drag_mode = None
        self._block = np.empty((512, self.layout.width))
        self._good = (self.sim.t, self.sim.q.copy(), self.sim.v.copy())
        self._snapshot = None
        self.thread_cpu = 0.0
        self._publish()
        self._thread = threading.Thread(target=self._run, name=f"jointlab-{name}", daemon=True)

    # ------------------------------------------------------------------ life
    def start(self):
        self._thread.start()
        return self

    def stop(self, timeout=5.0):
        """Stop the thread and wait for it (the current batch finishes first)."""
        self._stop = True
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout)
        return not self._thread.is_alive()

    @property
    def alive(self):
        return self._thread.is_alive()

    # ------------------------------------------------------------------ commands (any thread)
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
            w.speed = float(speed)
            w._sync = None
            w._rtf_hist.clear()
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
            w._sync = None
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

    def go_back_to(self, t, q, v):
        """Restore a recorded state (t, q, v) while paused (reliability: step back after a fault)."""
        q, v = np.array(q, dtype=float), np.array(v, dtype=float)

        def f(w):
            if w.running:
                return
            w._drag_end()
            w.sim.set_state(q, v, t)
            w.controller.recapture(w.sim.q)
            w._good = (w.sim.t, w.sim.q.copy(), w.sim.v.copy())
        self.post(f)

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

    def snapshot(self) -> Snapshot:
        with self._lock:
            return self._snapshot

    # ------------------------------------------------------------------ the thread
    def _run(self):
        while not self._stop:
            try:
                self._apply_commands()
                if self._stop:
                    break
                if not self.running:
                    self._wake.wait(0.05)
                    self._wake.clear()
                    continue
                slept = self._batch()
            except Exception as exc:      # never let the thread die silently: pause and say why
                import traceback
                traceback.print_exc()
                self._fault(f"internal error at t = {self.sim.t:.6g} s: {type(exc).__name__}: {exc}")
                self._publish()
                continue
            if slept > 0:
                self._wake.wait(slept)
                self._wake.clear()
        self.running = False
        self._publish()

    def _apply_commands(self):
        changed = False
        while True:
            try:
                fn = self._commands.get_nowait()
            except queue.Empty:
                break
            changed = True
            try:
                fn(self)
            except Exception as exc:   # a bad command must not kill the thread
                self.events.append(("error", f"{type(exc).__name__}: {exc}"))
        if changed:
            self._publish()

    def _batch(self):
        """Step while sim time lags wall time x speed, at most BUDGET; returns how long to wait."""
        sim = self.sim
        now = time.perf_counter()
        if self._sync is None:
            self._sync = (now, sim.t)
        wall0, sim0 = self._sync
        target = sim0 + (now - wall0) * self.speed
        if (target - sim.t) / self.speed > RESYNC:
            # cannot keep up: start again from here; the simulation runs slower than asked
            self._sync = (now, sim.t)
            target = sim.t + sim.dt
            self._behind = True
        n, hit_budget = self._steps_until(target, now + BUDGET)
        if hit_budget:
            self._behind = True
        elif n > 0 and (target - sim.t) / self.speed < 0.5 * RESYNC:
            self._behind = False
        end = time.perf_counter()
        self.thread_cpu = time.thread_time()     # CPU seconds this thread has used (for benchmarks)
        self._measure_rtf(end)
        self._publish()
        if hit_budget:
            return FRAME - BUDGET
        due = (sim.t + sim.dt - (sim0 + (end - wall0) * self.speed)) / self.speed
        return min(max(due, 0.004), FRAME / 2)

    def _steps_until(self, target, deadline, max_steps=None):
        """The stepping loop. Each step: spring wrench, step, one sample row. Returns (steps taken,
        whether the time budget ended the batch)."""
        sim, L, e, model = self.sim, self.layout, self.e, self.model
        block = self._block
        k = 0
        hit = False
        half = 0.5 * sim.dt
        rtf = self._rtf
        watched = self.watched_joint
        nlam = L.nlam
        lam_cols, nactive = self._lam_cols, self._active_rows
        loops = self._loops_active
        residual = self._residual_row if L.residual is not None else None
        ext_wrenches = self.e.constrained.constraint_external_wrenches if loops else None
        drag = self._drag if self._drag_mode == "spring" else None
        fill_contact = self.contact.fill
        if drag is not None:
            drag.update_mobility(sim.q, sim.prescribed)
        try:
            while sim.t + half < target if max_steps is None else k < max_steps:
                if max_steps is None and time.perf_counter() > deadline:
                    hit = True
                    break
                t0, q0, v0 = sim.t, sim.q, sim.v
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
                ke = e.kinetic_energy(model, q0, v0)
                pe = e.potential_energy(model, q0)
                row[L.kinetic] = ke
                row[L.potential] = pe
                row[L.total] = ke + pe
                row[L.work], row[L.dissipated], row[L.balance] = w0, d0, ke + pe - w0 + d0
                lam = sim.lam
                if watched is not None:
                    fx = sim.f_ext
                    if loops and len(lam) == nactive:       # the loop forces act on the bodies too
                        fx = dict(fx or {})
                        for body, wr in ext_wrenches(model, q0, v0, lam).items():
                            fx[body] = np.asarray(fx.get(body, 0.0), dtype=float) + wr
                    row[L.wrench] = e.joint_wrenches(model, q0, v0, sim.a, fx)[watched]
                else:
                    row[L.wrench] = np.nan
                if nlam:
                    row[L.lam] = np.nan
                    if loops and len(lam) == nactive:
                        row[lam_cols] = lam
                if residual is not None:
                    residual(row, q0)
                row[L.rtf] = rtf
                fill_contact(row, sim)
                k += 1
        except e.SimulationDiverged as exc:
            self._fault(self._diverged_message(exc))
        except (ValueError, ArithmeticError, np.linalg.LinAlgError) as exc:
            # InputError (NaN in the state or an input), SingularInertiaError, ...
            self._fault(f"simulation stopped at t = {sim.t:.6g} s: {exc}")
        if k:
            self.samples.put(block[:k].copy())
            self._good = (sim.t, sim.q.copy(), sim.v.copy())
        self._report_projections()
        return k, hit

    def _diverged_message(self, exc):
        """The message of a divergence; a loop that could not be projected back is named, with the
        smaller-step hint (``engine.LoopFailure`` says both; added here if it did not)."""
        # the engine's note for programmers (where the state is kept) is said for the user by _fault
        msg = str(exc).replace("; the last good state (at that t) is kept in .q, .v and .t", "")
        loop_failure = getattr(self.e, "LoopFailure", None)
        if loop_failure is None or not isinstance(exc, loop_failure):
            return msg
        name = getattr(exc, "constraint", None)
        if f"'{name}'" not in msg:
            msg = f"closed loop '{name}' came apart and could not be projected back onto it: {msg}"
        if "smaller" not in msg:
            msg += f"; try a smaller time step (dt = {self.sim.dt:g} now)"
        return msg

    def _loop_projections(self):
        return int(getattr(self.sim, "loop_projections", 0) or 0)

    def _report_projections(self):
        """An event when the simulator projected a drifting loop back since the last report."""
        n = self._loop_projections()
        if n < self._projections_seen:          # the simulator was reset
            self._projections_seen = n
        if n == self._projections_seen:
            return
        self._projections_seen = n
        last = getattr(self.sim, "last_loop_projection", None)
        if last is None:
            msg = "a closed loop drifted; projected back onto it"
        else:
            t, name, residual = last
            L = self.layout
            col = L.residual_columns.get(name)
            unit = L.units[col] if col is not None else ""
            msg = f"loop '{name}' drifted to |f| = {residual:.2g}{f' {unit}' if unit else ''}; projected back onto it"
        self.events.append(("loop", (msg, n)))

    def _fault(self, message):
        """Pause, keep (or restore) the last good state, and tell the GUI."""
        sim = self.sim
        self.running = False
        self._sync = None
        if not (np.all(np.isfinite(sim.q)) and np.all(np.isfinite(sim.v))):
            t, q, v = self._good
            sim.t, sim.q, sim.v = t, q.copy(), v.copy()
        sim.f_ext = None
        self._drag = None
        self._drag_mode = None
        self.events.append(("diverged", message + " — paused; the last good state is kept "
                            "(Step to go on, Reset to start again)."))

    def _measure_rtf(self, now):
        h = self._rtf_hist
        h.append((now, self.sim.t))
        while len(h) > 2 and now - h[0][0] > RTF_WINDOW:
            h.popleft()
        if len(h) >= 2 and now - h[0][0] > 0.05:
            self._rtf = (h[-1][1] - h[0][1]) / (now - h[0][0])

    # ------------------------------------------------------------------ closed loops (sim thread)
    def _constraints_changed(self):
        """Which columns the enabled constraints' stacked multipliers go to."""
        L = self.layout
        cols = []
        for c in self.model.constraints:
            if c.enabled:
                cols += L.lam_columns[c.name]
        self._lam_cols = np.array(cols, dtype=np.intp)
        self._active_rows = len(cols)
        self._loops_active = bool(cols)
        self._measured = [(c, L.residual_columns[c.name]) for c in self.model.constraints
                          if c.name in L.residual_columns]
        # the multipliers of another set of constraints mean nothing now (and the simulator keeps
        # its last ones while no constraint is enabled): none until the next step
        self.sim.lam = np.zeros(0)

    def _residual_vector(self, q):
        """|f(q)| per measured constraint (enabled or not), and of the enabled ones together."""
        kin = self.e.constraints.Kinematics(self.model, q, self._zero_v)
        out = []
        total = 0.0
        for c, _ in self._measured:
            try:
                f = c.evaluate(kin)[0]
            except (ValueError, ArithmeticError, np.linalg.LinAlgError):
                out.append(float("nan"))     # undefined here (a disk lying flat, a rod of length 0)
                continue
            f = f[np.isfinite(f)]
            r2 = float(f @ f)
            out.append(math.sqrt(r2))
            if c.enabled:
                total += r2
        return out, math.sqrt(total)

    def _residual_row(self, row, q):
        out, total = self._residual_vector(q)
        row[self.layout.residual] = total
        for (_, col), r in zip(self._measured, out):
            row[col] = r

    def _project(self):
        if not self._loops_active:
            return
        self.sim.project()
        self.controller.recapture(self.sim.q)
        self._good = (self.sim.t, self.sim.q.copy(), self.sim.v.copy())

    def _loop_snapshot(self):
        """The closed-loop part of a snapshot (a dict of Snapshot fields)."""
        sim, model, e = self.sim, self.model, self.e
        cons = model.constraints
        if not cons:
            return {}
        lam = np.array(sim.lam)
        fresh = self._loops_active and len(lam) == self._active_rows
        res, total = self._residual_vector(sim.q)
        by_name = dict(zip((c.name for c, _ in self._measured), res))
        gains = sim.baumgarte()
        out = dict(lam=lam if fresh else np.zeros(0), constraint_enabled=tuple(c.enabled for c in cons),
                   residual=total if self._loops_active else 0.0,
                   residuals=tuple(by_name.get(c.name, float("nan")) for c in cons),
                   stabilization=sim.stabilization, baumgarte_time=sim.baumgarte_time,
                   baumgarte_used=None if gains is None else 1.0 / gains[0],
                   project_every_step=bool(sim.project_every_step))
        if self.want_constraint_forces:
            forces = ()
            if fresh:
                try:
                    forces = tuple((n, np.array(p), np.array(f), np.array(m))
                                   for n, p, f, m in e.constraint_wrenches(model, sim.q, sim.v, lam))
                except (ValueError, ArithmeticError, np.linalg.LinAlgError):
                    forces = ()
            points = []
            kin = e.constraints.Kinematics(model, sim.q, sim.v)
            for c in cons:
                try:
                    if hasattr(c, "body_b"):
                        pa, pb = (np.array(s_.p) for s_ in c.frames(kin))
                    else:
                        w = c.wrench(kin, np.zeros(c.rows))
                        if w is None:
                            continue
                        pa, pb = np.array(w[0]), None
                except (ValueError, ArithmeticError, np.linalg.LinAlgError):
                    continue
                points.append((c.name, c.enabled, pa, pb))
            out.update(constraint_forces=forces, closure_points=tuple(points))
        return out

    # ------------------------------------------------------------------ command bodies (sim thread)
    def _set_running(self, running):
        if running and not self.running:
            self._sync = None
            self._rtf_hist.clear()
            self._rtf = float("nan")
            if self._drag_mode == "pose":
                self._drag_end()
        if not running and self._drag_mode == "spring":
            self._drag_end()
        self.running = running

    def _single_step(self, n):
        if self.running:
            return
        self._steps_until(np.inf, np.inf, max_steps=n)

    def _reset(self):
        self._drag_end()
        self.sim.reset()
        self.controller.recapture(self.sim.q)
        self.samples.put("clear")
        self._sync = None
        self._rtf_hist.clear()
        self._good = (self.sim.t, self.sim.q.copy(), self.sim.v.copy())

    def _set_pose(self, q, v=None):
        self.sim.set_state(q, np.zeros(self.model.nv) if v is None else v)
        self.controller.recapture(self.sim.q)
        self._good = (self.sim.t, self.sim.q.copy(), self.sim.v.copy())

    def _drag_start(self, body, p_local, mode):
        self.model.body_index(body)   # KeyError naming the body if unknown
        self._drag_end()
        if mode == "spring":
            d = DragSpring(self.e, self.model, body, p_local, self.sim.t)
            d.update_mobility(self.sim.q, self.sim.prescribed)
        elif mode == "pose":
            d = _PoseDrag(self.e, self.model, body, p_local, self.sim.q)
        else:
            raise ValueError(f"drag mode: expected 'spring' or 'pose', got {mode!r}")
        self._drag, self._drag_mode = d, mode

    def _drag_move(self, target):
        d = self._drag
        if d is None:
            return
        d.target = target
        if self._drag_mode == "pose" and not self.running:
            q = self.contact.pose(self.e, self.sim.q, d, target)     # pins kept (app/contactsim.py)
            self._set_pose(q)

    def _drag_end(self):
        self._drag = None
        self._drag_mode = None
        self.sim.f_ext = None

    # ------------------------------------------------------------------ snapshots
    def _publish(self):
        sim = self.sim
        try:
            ke, pe = sim.energy()
        except ValueError:
            ke = pe = float("nan")
        d = self._drag
        dp = dt_ = df = None
        if d is not None:
            if self._drag_mode == "pose" or d.point is None:
                d.point = point_jacobian(self.e, self.model, sim.q, d.body, d.p_local)[0]
            dp = np.array(d.point)
            dt_ = None if d.target is None else np.array(d.target)
            df = np.array(d.force) if self._drag_mode == "spring" else None
        wr = None
        if self.want_reactions:
            # the reactions of the last step's dynamics (a and lambda belong to q_prev, v_prev),
            # with the loop forces acting on the bodies
            lam = sim.lam if self._loops_active and len(sim.lam) == self._active_rows else None
            try:
                wr = self.e.joint_reaction_wrenches(self.model, sim.q_prev, sim.v_prev, sim.a, sim.f_ext, lam)
            except (ValueError, ArithmeticError, np.linalg.LinAlgError):
                wr = None
        loops = self._loop_snapshot()
        self._serial += 1
        teach = None
        if self.want_teaching or self.want_trace:
            teach = self._teaching.compute(self, self.want_trace and not self.running)
        snap = Snapshot(self._serial, sim.t, sim.q.copy(), sim.v.copy(), sim.a.copy(), sim.tau.copy(),
                        sim.prescribed.copy(), self.running, self.speed,
                        self._rtf if self.running else float("nan"), self._behind and self.running,
                        sim.steps, sim.dt, sim.integrator, ke, pe, dp, dt_, df,
                        None if d is None else d.body, self._drag_mode, wr,
                        gravity=tuple(float(x) for x in np.asarray(self.model.gravity, dtype=float).reshape(3)),
                        loop_projections=self._loop_projections(), teaching=teach, **loops,
                        **self.contact.snapshot_fields(self.e, sim))
        with self._lock:
            self._snapshot = snap


class _PoseDrag:
    """A drag while paused: the pose follows the mouse through IK."""

    def __init__(self, engine, model, body, p_local, q):
        self.body = body
        self.p_local = p_local
        self.mask = ik_mask(model, body)
        self.point = point_jacobian(engine, model, q, body, p_local)[0]
        self.target = self.point.copy()
        self.force = np.zeros(3)
