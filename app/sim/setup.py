"""How a run starts, shared by the window and `jointlab simulate` (no Qt): the initial state, ground,
joint limits and held joints of a model (``window_start``), joint input modes from the command line
(``joint_input``, ``apply_modes``), lessons applied to a run (``read_lesson``,
``apply_lesson_to_simulation``), the Simulator built from it (``make_simulator``) and the CSV column
names (``csv_names``).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np


class UsageError(Exception):
    """A bad command line or lesson: the message names what and where (exit status 2)."""


def parse_q0(model, text, q):
    """Set 1-dof joint positions in q from 'joint=value,joint=value'."""
    for item in text.split(","):
        name, _, val = item.partition("=")
        name = name.strip()
        try:
            x = float(val)
        except ValueError:
            raise UsageError(f"--q0: '{item}' is not joint=number")
        j = model.joint(name) if name in model.joint_names else None
        if j is None:
            raise UsageError(f"--q0: no joint named '{name}'; joints: {', '.join(model.joint_names)}")
        if j.nq != 1:
            raise UsageError(f"--q0: joint '{name}' has {j.nq} coordinates; only 1-dof joints can be set here")
        q[j.idx_q] = x
    return q


# ---------------------------------------------------------------------- the start (as the window)
@dataclass
class SimulationSetup:
    """What a headless run starts from: the model, its initial state, each joint's input (only the
    joints whose input is not the default torque / zero), integrator and dt, and why joints are held."""
    model: object
    q0: np.ndarray
    v0: np.ndarray
    inputs: dict = field(default_factory=dict)      # joint name -> app.sim.inputs.JointInput
    integrator: str = "rk4"
    dt: float = 1e-3
    held: dict = field(default_factory=dict)        # joint name -> "floating base" | "massless" | "standing"
    ground: bool = False                            # ground contact (engine.Ground(), friction 0.8)
    joint_limits: bool = False                      # the model's joint limits honoured


def joint_scales(engine, model, q):
    """M_ii of every joint (the panel scales its default torque gains with it)."""
    M = engine.mass_matrix(model, q)
    return {j.name: float(M[j.idx_v, j.idx_v]) for j in model.joints if j.nv}


def window_start(engine, model, release_base=False, ground=None, joint_limits=None):
    """The window's start (``app.window.install.hold_at_start`` calls it, so both start alike): initial
    state, ground and joint limits (``ground`` / ``joint_limits`` None: the window's defaults, the
    ground on for articulated floating-base robots with collision shapes, limits on when the
    model has some), and the joints it holds: joints that move only massless links; on the ground
    every joint of a floating-base robot but the base (it stands); without the ground the floating
    base itself (unless ``release_base``)."""
    from engine.catalog import initial_state
    from app.sim.contactsim import default_ground, floating, limited_joints
    from app.sim.inputs import JointInput
    q0, v0 = initial_state(model)
    setup = SimulationSetup(model, np.array(q0, dtype=float), np.array(v0, dtype=float))
    setup.ground = default_ground(model) if ground is None else bool(ground)
    setup.joint_limits = bool(limited_joints(model)) if joint_limits is None else bool(joint_limits)
    for name in tuple(getattr(model, "massless_joints", ()) or ()):
        setup.inputs[name] = JointInput("acceleration", "hold")
        setup.held[name] = "massless"
    if floating(model) and model.nbodies > 1:
        root = model.joints[0].name
        if setup.ground:
            for j in model.joints[1:]:
                if j.nv and j.name not in setup.held:
                    setup.inputs[j.name] = JointInput("acceleration", "hold")
                    setup.held[j.name] = "standing"
        elif not release_base:
            setup.inputs[root] = JointInput("acceleration", "hold")
            setup.held[root] = "floating base"
    return setup


def joint_input(engine, setup, joint, mode, law=None, params=None, where="--mode"):
    """The JointInput the joint panel would give ``joint`` for ``mode`` (and ``law``, ``params``);
    a UsageError naming the joint, the mode or the law when one is not valid."""
    from app.sim.inputs import TORQUE_KINDS, ACCEL_KINDS, PARAMS, default_input
    model = setup.model
    if joint not in model.joint_names:
        raise UsageError(f"{where}: no joint named '{joint}'; joints: {', '.join(model.joint_names)}")
    if mode not in ("torque", "acceleration"):
        raise UsageError(f"{where}: joint '{joint}': mode must be 'torque' or 'acceleration', got '{mode}'")
    kinds = TORQUE_KINDS if mode == "torque" else ACCEL_KINDS
    if law is not None and law not in kinds:
        raise UsageError(f"{where}: joint '{joint}': no law '{law}' in {mode} mode; laws: {', '.join(kinds)}")
    if mode == "torque" and setup.held.get(joint) == "massless":
        raise UsageError(f"{where}: joint '{joint}' moves only massless links: a torque can not accelerate "
                         f"them, so it stays acceleration-prescribed")
    scale = joint_scales(engine, model, setup.q0).get(joint, 1.0)
    inp = default_input(mode, law, scale=scale)
    if params:
        allowed = PARAMS[(inp.mode, inp.kind)]
        bad = [p for p in params if p not in allowed]
        if bad:
            raise UsageError(f"{where}: joint '{joint}': law '{inp.kind}' has no parameter "
                             f"{', '.join(repr(b) for b in bad)}; its parameters: {', '.join(allowed) or 'none'}")
        try:
            inp = inp.with_(**{k: float(v) for k, v in params.items()})
        except (TypeError, ValueError) as exc:
            raise UsageError(f"{where}: joint '{joint}': {exc}") from None
    return inp


def apply_modes(engine, setup, specs):
    """``--mode JOINT=MODE[:LAW]`` items, in order (a later one wins)."""
    for spec in specs or ():
        name, eq, rhs = spec.partition("=")
        if not eq or not rhs:
            raise UsageError(f"--mode: expected JOINT=torque or JOINT=acceleration (optionally :LAW), got '{spec}'")
        mode, _, law = rhs.partition(":")
        setup.inputs[name.strip()] = joint_input(engine, setup, name.strip(), mode.strip(), law.strip() or None)
    return setup


# ---------------------------------------------------------------------- lessons
def read_lesson(path):
    """A lesson file (``app.sim.lessons.load_lesson``); a bad one is a UsageError naming the file, the
    key and the fault."""
    from app.sim.lessons import load_lesson, LessonError
    try:
        return load_lesson(path)
    except (LessonError, OSError) as exc:
        raise UsageError(f"--lesson: {exc}") from None


def _get(obj, *names, default=None):
    for n in names:
        if isinstance(obj, dict):
            if n in obj:
                return obj[n]
        elif getattr(obj, n, None) is not None:
            return getattr(obj, n)
    return default


def lesson_model(lesson):
    """The model a lesson names (a shipped name, a path, an example-robot-data name), or None;
    a relative path is taken from the lesson file's folder when it exists there."""
    if hasattr(lesson, "model_source"):              # an app.sim.lessons.Lesson
        return lesson.model_source()
    name = _get(lesson, "model")
    name = _get(name, "name", "source", default=name) if not isinstance(name, str) else name
    path = _get(lesson, "path")
    if isinstance(name, str) and path and not os.path.isabs(name):
        near = os.path.join(os.path.dirname(os.path.abspath(str(path))), name)
        if os.path.exists(near):
            return near
    return name


def _apply_lesson_file(lesson, engine, setup):
    """An app.sim.lessons.Lesson: checked against the model, then its state, joints, constraint
    switches, gravity, integrator and dt (what the window applies, less camera, view and plots)."""
    from app.sim.lessons import LessonError, check_model, initial_state
    model = setup.model
    try:
        check_model(lesson, model)
    except LessonError as exc:
        raise UsageError(f"--lesson: {exc}") from None
    setup.q0, setup.v0 = initial_state(lesson, model, setup.q0, setup.v0)
    setup.inputs.update(lesson.inputs())
    for c in getattr(model, "constraints", []):
        if c.name in lesson.constraints:
            c.enabled = bool(lesson.constraints[c.name])
    if not lesson.gravity:
        model.gravity = np.zeros(3)
    if lesson.integrator is not None:
        setup.integrator = lesson.integrator
    if lesson.dt is not None:
        setup.dt = float(lesson.dt)
    return setup


def apply_lesson_to_simulation(lesson, engine, setup):
    """Apply a lesson's initial state, joint modes and laws (with parameters), integrator and dt to
    ``setup`` (a SimulationSetup of the lesson's model). Accepts an ``app.sim.lessons.Lesson``
    (as read from a .jlab file), or an object or a dict of the same fields; a UsageError names a bad entry."""
    model = setup.model
    where = f"--lesson {_get(lesson, 'path', default='')}".rstrip()
    from app.sim.lessons import Lesson
    if isinstance(lesson, Lesson):
        return _apply_lesson_file(lesson, engine, setup)
    init = _get(lesson, "initial_state", default=None) or {}
    q = _get(lesson, "q", default=None)
    v = _get(lesson, "v", default=None)
    q = _get(init, "q", default=q) if init else q
    v = _get(init, "v", default=v) if init else v
    for label, x, n, dst in (("q", q, model.nq, "q0"), ("v", v, model.nv, "v0")):
        if x is None:
            continue
        a = np.array(x, dtype=float).reshape(-1)
        if a.size != n or not np.all(np.isfinite(a)):
            raise UsageError(f"{where}: initial {label} must be {n} finite numbers for '{model.name}', "
                             f"got {a.size}")
        setattr(setup, dst, a)
    joints = _get(lesson, "joints", default=None)
    if joints is None:      # modes and laws given apart: {joint: mode}, {joint: {"law", "params"} or law}
        modes = _get(lesson, "modes", default={}) or {}
        laws = _get(lesson, "laws", default={}) or {}
        joints = {}
        for name in dict.fromkeys(list(modes) + list(laws)):
            law = laws.get(name)
            if hasattr(law, "mode") and hasattr(law, "kind"):       # an app.sim.inputs.JointInput
                joints[name] = law
                continue
            spec = dict(law) if isinstance(law, dict) else {"law": law}
            spec.setdefault("mode", modes.get(name, _get(law, "mode", default="torque")))
            joints[name] = spec
    for name, spec in dict(joints).items():
        if hasattr(spec, "mode") and hasattr(spec, "kind"):        # an app.sim.inputs.JointInput
            if name not in model.joint_names:
                raise UsageError(f"{where}: no joint named '{name}'; joints: {', '.join(model.joint_names)}")
            setup.inputs[name] = spec
            continue
        if isinstance(spec, str):
            spec = {"mode": spec}
        if not isinstance(spec, dict):
            raise UsageError(f"{where}: joint '{name}': expected {{\"mode\", \"law\", \"params\"}}, got {spec!r}")
        setup.inputs[name] = joint_input(engine, setup, name, spec.get("mode", "torque"),
                                         spec.get("law") or spec.get("kind"), spec.get("params") or {}, where)
    integrator = _get(lesson, "integrator")
    if integrator is not None:
        if integrator not in engine.INTEGRATORS:
            raise UsageError(f"{where}: integrator must be one of {', '.join(engine.INTEGRATORS)}, got '{integrator}'")
        setup.integrator = integrator
    dt = _get(lesson, "dt")
    if dt is not None:
        try:
            dt = float(dt)
        except (TypeError, ValueError):
            dt = float("nan")
        if not (np.isfinite(dt) and dt > 0):
            raise UsageError(f"{where}: dt must be a positive number of seconds, got {_get(lesson, 'dt')!r}")
        setup.dt = dt
    return setup


# ---------------------------------------------------------------------- the run
def make_simulator(engine, setup):
    """(simulator, controller) of a setup: the window's input laws, evaluated in the compiled step."""
    from app.sim.inputs import EngineInputs
    sim = engine.Simulator(setup.model, dt=setup.dt, integrator=setup.integrator, q=setup.q0, v=setup.v0,
                           ground=engine.Ground() if setup.ground else None, joint_limits=setup.joint_limits)
    controller = EngineInputs(setup.model, engine, sim)
    controller.recapture(sim.q)
    if setup.inputs:
        controller.set_inputs(dict(setup.inputs), sim.q)
    sim.prescribed[:] = controller.prescribed
    return sim, controller


def csv_names(layout, model):
    """The CSV header: the window's column names; a multiplier column carries its constraint's own
    row label ("lambda:loop[0] fx")."""
    names = list(layout.names)
    for c in getattr(model, "constraints", []):
        for col, (label, _) in zip(layout.lam_columns[c.name], c.multiplier_rows(model)):
            names[col] = f"{names[col]} {label}".replace(",", ";")
    return names

