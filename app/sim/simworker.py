"""The simulation thread: the only writer of physics state.

The GUI talks to it through ``post`` (commands, queued and applied between steps, as MuJoCo's
``simulate`` does with its pending actions) and reads from it:
- ``snapshot()``: an immutable copy of the latest state (``app.sim.snapshot.Snapshot``, taken under a
  lock, drawn after);
- ``samples``: one sample row per ``sample_interval`` of sim time (every step at dt >= 1 ms; a
  single step always), in blocks (``recorder.SampleQueue``), never dropped;
- ``events``: faults and notices (divergence, errors), each (kind, message).

This module holds the thread (its loop, faults and snapshots) and the commands' bodies; the jobs
are split by module: ``commands`` (the requests any thread may post: ``SimCommands``, the base
class), ``pacing`` (sim time follows wall time x speed, within a frame budget), ``samplerows`` (the
stepping loop and the sample rows, closed-loop columns included), ``snapshot`` (what the GUI
draws), ``drag`` (the spring and pose drags), ``inputs`` (the joint inputs, as compiled laws).

True readouts: while paused, every command batch ends with the simulator's hybrid dynamics
evaluated at the current state (``Simulator.evaluate``), so a and tau (and lambda) in the snapshot
belong to the state shown after a reset, a step back, a pose, an input or mode change.

Closed loops: switching a constraint, the Baumgarte time constant, projection: commands like the
others (the constraint objects belong to this thread's model). When the simulator projects a
drifting loop back onto it (``sim.loop_projections``), an event ("loop", (message, count)) says so;
a loop it can not project back (``engine.LoopFailure``) pauses the simulation with a message naming
the loop.

Gravity is a setting of this thread's model (``set_gravity``): off assigns (0, 0, 0), on the
model's own gravity; snapshots carry the gravity in use. On divergence it pauses and keeps the
last good state. Nothing here imports Qt.
"""
from __future__ import annotations

import copy
import os
import queue
import sys
import threading
import time
from collections import deque

import numpy as np

from app.sim.commands import SimCommands
from app.sim.drag import DragSpring, PoseDrag
from app.sim.contactsim import ContactState
from app.sim.inputs import EngineInputs
from app.sim.pacing import Pacer
from app.sim.recorder import SampleLayout, SampleQueue
from app.sim.samplerows import SAMPLE_INTERVAL, StepRows
from app.sim.snapshot import Snapshot, take_snapshot
from app.sim.teaching import TeachingProbe


PUBLISH_PERIOD = 0.006       # s of wall time: the longest a running batch goes without a snapshot
SWITCH_INTERVAL = 0.001      # s: sys.setswitchinterval while a simulation thread runs (see SimWorker.start)


SIM_NICE = 5     # the simulation thread's nice value above the window's (JOINTLAB_SIM_NICE overrides)


def _lower_priority():
    """The simulation thread yields the cores to the window's thread and the GL rasteriser when
    they compete (Linux: a thread's own nice value). On 2 cores at dt = 1 ms the physics, the
    window and llvmpipe's threads want about 1.4 cores; at equal priority the scheduler preempted
    the window's thread mid-frame: frame-time p99 30.6-33.4 ms at nice 0, 27.5-28.7 ms at 5, the
    real-time factor 0.96-0.98 and 0.98-1.00 (bench_gui, idle machine, interleaved)."""
    try:
        nice = int(os.environ.get("JOINTLAB_SIM_NICE", SIM_NICE))
    except ValueError:
        nice = SIM_NICE
    if nice <= 0 or not hasattr(os, "setpriority"):
        return
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + nice))
    except OSError:
        pass


def diverged_message(engine, exc, dt):
    """The message of a divergence; a loop that could not be projected back is named, with the
    smaller-step hint (``engine.LoopFailure`` says both; added here if it did not)."""
    # the engine's note for programmers (where the state is kept) is said for the user by _fault
    msg = str(exc).replace("; the last good state (at that t) is kept in .q, .v and .t", "")
    loop_failure = getattr(engine, "LoopFailure", None)
    if loop_failure is None or not isinstance(exc, loop_failure):
        return msg
    name = getattr(exc, "constraint", None)
    if f"'{name}'" not in msg:
        msg = f"closed loop '{name}' came apart and could not be projected back onto it: {msg}"
    if "smaller" not in msg:
        msg += f"; try a smaller time step (dt = {dt:g} now)"
    return msg


def projection_message(sim, layout):
    """What to tell the user when the simulator projected a drifting loop back onto it."""
    last = getattr(sim, "last_loop_projection", None)
    if last is None:
        return "a closed loop drifted; projected back onto it"
    t, name, residual = last
    col = layout.residual_columns.get(name)
    unit = layout.units[col] if col is not None else ""
    return f"loop '{name}' drifted to |f| = {residual:.2g}{f' {unit}' if unit else ''}; projected back onto it"


class SimWorker(SimCommands):
    """Owns an ``engine.Simulator`` on a clone of the model and runs it in a thread."""

    def __init__(self, engine, model, dt=1e-3, integrator="rk4", q0=None, v0=None, running=True, name="sim",
                 ground=None, joint_limits=None, sample_interval=SAMPLE_INTERVAL, joint_friction=None):
        self.e = engine
        self.model = model.clone()          # only this thread uses it
        # its own constraint objects: switching one off here must not touch the GUI's model
        self.model.constraints = [copy.copy(c) for c in getattr(model, "constraints", [])]
        self.layout = SampleLayout(model)
        self.contact = ContactState(self.model, self.layout)     # contact and limit columns, pins
        self.sim = engine.Simulator(self.model, dt=dt, integrator=integrator, q=q0, v=v0, ground=ground,
                                    joint_limits=joint_limits, joint_friction=joint_friction)
        self._gravity0 = tuple(float(x) for x in np.asarray(self.model.gravity, dtype=float).reshape(3))
        self._projections_seen = self.loop_projections()
        self.controller = EngineInputs(self.model, engine, self.sim)
        self.controller.recapture(self.sim.q)
        self.samples = SampleQueue()
        self.events = deque()
        self.running = running
        self.pacer = Pacer()
        self.watched_joint = None
        self.want_reactions = False          # set by the GUI: joint wrenches in every snapshot
        self.want_constraint_forces = False  # set by the GUI: constraint forces in every snapshot
        self.want_teaching = False           # set by the GUI: Kim's quantities, the equation terms
        self.want_trace = False              # set by the GUI: the step-by-step trace (while paused)
        self._teaching = TeachingProbe()
        self.rows = StepRows(engine, self.model, self.sim, self.layout, self.samples, sample_interval)
        self._commands = queue.SimpleQueue()
        self._wake = threading.Event()
        self._lock = threading.Lock()
        self._stop = False
        self._serial = 0
        self._drag = None
        self._drag_mode = None
        self._good = (self.sim.t, self.sim.q.copy(), self.sim.v.copy())
        self._snapshot = None
        self._published_at = 0.0
        self.thread_cpu = 0.0
        self._evaluate()
        self._publish()
        self._thread = threading.Thread(target=self._run, name=f"jointlab-{name}", daemon=True)

    # ------------------------------------------------------------------ life
    def start(self):
        # the GIL's switch interval: a thread waiting for the interpreter gets it after at most this
        # long. Python's 5 ms let the simulation thread's Python (between its compiled calls, which
        # release the GIL) hold the window's frame back by 5 ms at a time; at 1 ms the frame-time
        # p99 of the humanoid at dt = 1 ms fell from 46 to 32 ms (benchmarks/bench_gui.py, issue 32)
        if sys.getswitchinterval() > SWITCH_INTERVAL:
            sys.setswitchinterval(SWITCH_INTERVAL)
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

    @property
    def speed(self):
        """The asked speed (sim time / wall time); set it with ``set_speed`` from another thread."""
        return self.pacer.speed

    @speed.setter
    def speed(self, value):
        self.pacer.speed = float(value)

    @property
    def sample_interval(self):
        """Sim time between two sample rows while running (0: every step)."""
        return self.rows.sample_interval

    def snapshot(self) -> Snapshot:
        with self._lock:
            return self._snapshot

    # ------------------------------------------------------------------ the thread
    def _run(self):
        _lower_priority()
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
            if not self.running:
                self._evaluate()      # true readouts of the state shown (reset, pose, step back, inputs)
            self._publish()

    def _evaluate(self):
        """The simulator's hybrid dynamics at the current state and inputs (a, tau, lambda), as the
        next step would compute them; left as they were when the state can not be evaluated."""
        sim = self.sim
        if self._drag_mode == "spring":
            return
        try:
            sim.evaluate()
        except Exception:     # noqa: BLE001  (a user's controller may raise anything; the step says it)
            pass

    def _batch(self):
        """Step while sim time lags wall time x speed, within the pacer's budget (at most BUDGET);
        returns how long to wait."""
        sim, pacer = self.sim, self.pacer
        budget = pacer.batch_budget()
        now = time.perf_counter()
        target = pacer.target(now, sim.t, sim.dt)
        n, hit_budget = self._steps_until(target, now + budget)
        end = time.perf_counter()
        self.thread_cpu = time.thread_time()     # CPU seconds this thread has used (for benchmarks)
        wait = pacer.finished(end, target, sim.t, sim.dt, n, hit_budget)
        self._publish()
        return wait

    def _steps_until(self, target, deadline, max_steps=None):
        """The stepping loop (``samplerows.StepRows``): returns (steps taken, whether the time
        budget ended the batch); a fault pauses with the last good state."""
        sim = self.sim
        drag = self._drag if self._drag_mode == "spring" else None
        k, hit = 0, False
        steps0 = sim.steps
        try:
            k, hit = self.rows.steps_until(target, deadline, max_steps, drag=drag, watched=self.watched_joint,
                                           rtf=self.pacer.rtf, fill=self.contact.fill,
                                           stepped=self.contact.stepped,
                                           progress=None if max_steps is not None else self._progress)
        except self.e.SimulationDiverged as exc:
            self._fault(diverged_message(self.e, exc, sim.dt))
        except (ValueError, ArithmeticError, np.linalg.LinAlgError) as exc:
            # InputError (NaN in the state or an input), SingularInertiaError, ...
            self._fault(f"simulation stopped at t = {sim.t:.6g} s: {exc}")
        if sim.steps != steps0:
            self._good = (sim.t, sim.q.copy(), sim.v.copy())
        self._report_projections()
        return k, hit

    def loop_projections(self):
        """Times the simulator projected a drifting loop back onto it."""
        return int(getattr(self.sim, "loop_projections", 0) or 0)

    def _report_projections(self):
        """An event when the simulator projected a drifting loop back since the last report."""
        n = self.loop_projections()
        if n < self._projections_seen:          # the simulator was reset
            self._projections_seen = n
        if n == self._projections_seen:
            return
        self._projections_seen = n
        self.events.append(("loop", (projection_message(self.sim, self.layout), n)))

    def _fault(self, message):
        """Pause, keep (or restore) the last good state, and tell the GUI."""
        sim = self.sim
        self.running = False
        self.pacer.resync()
        if not (np.all(np.isfinite(sim.q)) and np.all(np.isfinite(sim.v))):
            t, q, v = self._good
            sim.t, sim.q, sim.v = t, q.copy(), v.copy()
        sim.f_ext = None
        self._drag = None
        self._drag_mode = None
        self._evaluate()      # the readouts of the state kept
        self.events.append(("diverged", message + " — paused; the last good state is kept "
                            "(Step to go on, Reset to start again)."))

    # ------------------------------------------------------------------ closed loops (sim thread)
    def _constraints_changed(self):
        self.rows.constraints_changed()

    @property
    def _loops_active(self):
        return self.rows.loops_active

    def _project(self):
        if not self._loops_active:
            return
        self.sim.project()
        self.controller.recapture(self.sim.q)
        self._good = (self.sim.t, self.sim.q.copy(), self.sim.v.copy())

    # ------------------------------------------------------------------ command bodies (sim thread)
    def _set_running(self, running):
        if running and not self.running:
            self.pacer.resync(clear_rtf=True)
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
        self.rows.rows_written = 0          # counted as the plots' recorder counts (it clears too)
        self.rows.last_row_t = None         # the first step from the start is a sample again
        self.pacer.resync()
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
            d = PoseDrag(self.e, self.model, body, p_local, self.sim.q)
        else:
            raise ValueError(f"drag mode: expected 'spring' or 'pose', got {mode!r}")
        self._drag, self._drag_mode = d, mode

    def _drag_move(self, target):
        d = self._drag
        if d is None:
            return
        d.target = target
        if self._drag_mode == "pose" and not self.running:
            q = self.contact.pose(self.e, self.sim.q, d, target)     # pins kept (app/sim/contactsim.py)
            self._set_pose(q)

    def _drag_end(self):
        self._drag = None
        self._drag_mode = None
        self.sim.f_ext = None

    # ------------------------------------------------------------------ snapshots
    def _progress(self):
        """Within a batch: a snapshot when the last one is PUBLISH_PERIOD old, so that a batch
        that takes most of a frame (the physics behind, at a small dt) never leaves the window's
        frame without a new state to draw (its 16 ms timer and the batches beat otherwise: two
        timer ticks, 33 ms, between two drawn states)."""
        if time.perf_counter() - self._published_at >= PUBLISH_PERIOD:
            self._publish()

    def _publish(self):
        self._published_at = time.perf_counter()
        self._serial += 1
        teach = None
        if self.want_teaching or self.want_trace:
            teach = self._teaching.compute(self, self.want_trace and not self.running)
        snap = take_snapshot(self, self._serial, teach)
        with self._lock:
            self._snapshot = snap
