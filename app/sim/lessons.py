"""Lessons: a prepared scene in a small JSON file (``.jlab``) that a teacher opens in one click.

A lesson holds the model (a shipped or example-robot-data name, or a URDF/MJCF path relative to
the lesson file), the initial state, every joint's mode and input law with its parameters, the
constraint switches, gravity, integrator, time step, speed, camera, view toggles, plot channels
and a notes text (what to look at). Example::

    {
      "format": "jointlab-lesson", "version": 1,
      "title": "Hybrid dynamics: prescribe the shoulder",
      "notes": "The shoulder follows a sine; read the torque it needs ...",
      "model": {"name": "double_pendulum"},
      "q": {"joint1": 0.3, "joint2": 0.0},
      "joints": {"joint1": {"mode": "acceleration", "law": "sine", "amplitude": 0.8, "frequency": 0.5}},
      "integrator": "rk4", "dt": 0.001, "speed": 1.0,
      "plots": ["q:joint1", "tau:joint1", "ddq:joint2"]
    }

Objects (free bodies added to the model through ``engine.Scene``), contact materials of the model's
own links, self-collision and the ground switch::

      "model": {"path": "models/newtons_cradle.urdf", "self_collision": true},
      "materials": {"ball1": {"friction": 0.0, "restitution": 1.0}},
      "ground": true,
      "objects": [{"kind": "box", "name": "crate", "size": [0.2, 0.2, 0.2], "mass": 2.0,
                   "position": [0.5, 0.0, 0.1], "rpy": [0, 0, 0], "friction": 0.5,
                   "restitution": 0.0, "color": [0.8, 0.4, 0.2]}]

An object's kind is "box" (size: 3 full side lengths, m), "ball" (size: the radius) or "cylinder"
(size: [radius, length], its axis the body's z); mass in kg; position (m) and rpy (rad) place it
(its free joint "<name>_free" moves it from there: q and v of a lesson may name that joint);
friction, restitution and color are optional (the ground's values, an orange). ``build_model``
loads the model and adds them. "ground" (true or false) overrides the window's default ground
switch for the lesson's model.

Keys left out get the window's start settings (rk4, dt 1 ms, speed 1, gravity on, the default view
toggles and plot channels; joints not listed: what the window starts them with, torque-driven and
passive, a floating base held), whatever the scene shown before. ``load_lesson`` checks the whole file and raises
``LessonError`` naming the file, the key and what is wrong. A lesson is untrusted input: a file over
1 MB is not read, deep nesting, too many values and overlong integers are refused, and so are values
outside physical sense (|q| over 1e3 rad or m, a camera over 1e4 m away, a dt or speed the window
does not offer, NaN and infinities); ``check_model`` then checks it against
the loaded model (joint and constraint names, sizes) before anything is applied, so a bad lesson
changes nothing. Nothing here imports Qt (``app/teach/lessonui.py`` applies a lesson to the window).
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field, fields as dc_fields

import numpy as np

from app.sim.inputs import JointInput, PARAMS, TORQUE_KINDS, ACCEL_KINDS

FORMAT = "jointlab-lesson"
VERSION = 1
SUFFIX = ".jlab"
LESSONS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "assets", "lessons")
# what the window's tool bar offers (app/window/menus.py STEPS and SPEEDS; a GUI test checks they agree)
DT_CHOICES = (1e-4, 2e-4, 5e-4, 1e-3, 2e-3, 5e-3, 1e-2)
SPEED_CHOICES = (1 / 16, 1 / 8, 1 / 4, 1 / 2, 1.0, 2.0, 4.0)
INTEGRATORS = ("rk4", "semi_implicit_euler", "euler")
VIEW_TOGGLES = ("frames", "axes", "com", "forces", "reactions", "constraints", "follow")
# what a lesson gets for the settings it leaves out (the window's own start settings)
VIEW_DEFAULTS = {"frames": False, "axes": False, "com": False, "forces": True, "reactions": False,
                 "constraints": True, "follow": False}
DEFAULT_INTEGRATOR, DEFAULT_DT, DEFAULT_SPEED = "rk4", 1e-3, 1.0
CAMERA_KEYS = ("center", "distance", "elevation", "azimuth", "fov")
MODEL_KEYS = ("name", "path", "floating_base", "self_collision")
KEYS = ("format", "version", "title", "notes", "model", "q", "v", "joints", "constraints", "stabilization",
        "gravity", "integrator", "dt", "speed", "running", "camera", "view", "plots", "objects", "materials",
        "ground")
OBJECT_KINDS = {"box": 3, "ball": 1, "cylinder": 2}     # kind -> the numbers of its size
OBJECT_KEYS = ("kind", "name", "size", "mass", "position", "rpy", "friction", "restitution", "color")
MATERIAL_KEYS = ("friction", "restitution")
MAX_OBJECTS = 100
MAX_OBJECT_SIZE = 100.0      # m: an object's size and |position| on each axis
MAX_OBJECT_MASS = 1e6        # kg
# a lesson is untrusted input (a file from anyone): what load_lesson reads at most
MAX_BYTES = 1_000_000        # 1 MB (the shipped lessons are 1-3 kB); a bigger file is not read
MAX_DEPTH = 16               # nesting of objects and lists (a lesson needs 3)
MAX_VALUES = 100_000         # values in the whole file
MAX_DIGITS = 30              # digits of an integer (Python refuses to convert 4300 and more)
MAX_COORDINATE = 1e3         # |q| of any coordinate, rad or m
MAX_CAMERA = 1e4             # camera distance and centre coordinates, m


class LessonError(ValueError):
    """A lesson file that can not be used: the message names the file, the key and the fault."""


@dataclass
class Lesson:
    model: dict                                  # {"name": ...} or {"path": ..., "floating_base": ...}
    title: str = ""
    notes: str = ""
    q: dict = field(default_factory=dict)        # joint -> float (1 coordinate) or list of floats
    v: dict = field(default_factory=dict)
    joints: dict = field(default_factory=dict)   # joint -> {"mode", "law", parameters of the law}
    constraints: dict = field(default_factory=dict)   # constraint name -> enforced (bool)
    stabilization: bool | None = None            # Baumgarte drift stabilisation (None: default)
    gravity: bool = True
    integrator: str | None = None
    dt: float | None = None
    speed: float | None = None
    running: bool = True
    camera: dict | None = None                   # center [x, y, z], distance, elevation, azimuth, fov
    view: dict = field(default_factory=dict)     # toggle -> bool
    plots: list | None = None                    # channel names; None: the window's defaults
    objects: list = field(default_factory=list)  # free bodies added through engine.Scene (checked dicts)
    materials: dict = field(default_factory=dict)   # body name -> {"friction", "restitution"}
    ground: bool | None = None                   # the ground switch (None: the window's default)
    path: str | None = field(default=None, compare=False)   # the file it was read from

    # ------------------------------------------------------------------ derived
    def model_source(self):
        """What ``engine.catalog.load_model`` is given: the name, or the absolute path of the file
        (a relative path is relative to the lesson file)."""
        if "name" in self.model:
            return self.model["name"]
        p = self.model["path"]
        if not os.path.isabs(p):
            base = os.path.dirname(os.path.abspath(self.path)) if self.path else os.getcwd()
            p = os.path.normpath(os.path.join(base, p))
        return p

    def floating_base(self):
        return self.model.get("floating_base")

    def inputs(self):
        """{joint: JointInput} of the joints the lesson sets."""
        return {name: joint_input(spec) for name, spec in self.joints.items()}

    def to_dict(self):
        d = {"format": FORMAT, "version": VERSION}
        for f in dc_fields(self):
            if f.name == "path":
                continue
            val = getattr(self, f.name)
            if val is None or (f.name in ("q", "v", "joints", "constraints", "view", "objects", "materials")
                               and not val):
                continue
            d[f.name] = val
        return d


def joint_input(spec):
    """The JointInput of a lesson's joint entry {"mode", "law", parameters}."""
    params = {k: float(v) for k, v in spec.items() if k not in ("mode", "law")}
    return JointInput(spec["mode"], spec["law"], **params)


def input_spec(inp):
    """The lesson entry of a JointInput: mode, law and the parameters that law reads."""
    d = {"mode": inp.mode, "law": inp.kind}
    for p in PARAMS[(inp.mode, inp.kind)]:
        d[p] = float(getattr(inp, p))
    return d


# ---------------------------------------------------------------------- reading and checking
def _fail(where, key, what):
    raise LessonError(f"{where}: '{key}': {what}")


def _is_num(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _close_choice(x, choices):
    for c in choices:
        if abs(x - c) <= 1e-9 * max(1.0, abs(c)):
            return c
    return None


def _state_map(where, key, val, bound=None):
    if not isinstance(val, dict):
        _fail(where, key, f"expected an object {{joint name: number or list of numbers}}, got {type(val).__name__}")
    out = {}
    for name, x in val.items():
        if _is_num(x):
            out[name] = float(x)
        elif isinstance(x, list) and x and all(_is_num(y) for y in x):
            out[name] = [float(y) for y in x]
        else:
            _fail(where, f"{key}.{name}", f"expected a finite number or a list of finite numbers, got {x!r}")
        if bound is not None and max(abs(y) for y in np.atleast_1d(out[name])) > bound:
            _fail(where, f"{key}.{name}", f"{x!r} is out of range: a coordinate is at most {bound:g} rad or m "
                  f"in magnitude")
    return out


def _joint_spec(where, key, spec):
    if not isinstance(spec, dict):
        _fail(where, key, f"expected an object with 'mode', 'law' and the law's parameters, got {spec!r}")
    mode = spec.get("mode")
    if mode not in ("torque", "acceleration"):
        _fail(where, f"{key}.mode", f"unknown mode {mode!r}; expected 'torque' or 'acceleration'")
    kinds = TORQUE_KINDS if mode == "torque" else ACCEL_KINDS
    law = spec.get("law")
    if law not in kinds:
        _fail(where, f"{key}.law", f"unknown law {law!r} in {mode} mode; expected one of {', '.join(kinds)}")
    allowed = PARAMS[(mode, law)]
    out = {"mode": mode, "law": law}
    for p, x in spec.items():
        if p in ("mode", "law"):
            continue
        if p not in allowed:
            _fail(where, f"{key}.{p}", f"the {mode} law '{law}' has no parameter '{p}'; its parameters: "
                  f"{', '.join(allowed) if allowed else '(none)'}")
        if not _is_num(x):
            _fail(where, f"{key}.{p}", f"expected a finite number, got {x!r}")
        out[p] = float(x)
    try:
        joint_input(out)
    except ValueError as exc:
        _fail(where, key, str(exc))
    return out


def lesson_from_dict(d, where="lesson"):
    """A Lesson from the parsed file (``where`` names it in errors)."""
    if not isinstance(d, dict):
        raise LessonError(f"{where}: expected a JSON object at the top, got {type(d).__name__}")
    for k in d:
        if k not in KEYS:
            _fail(where, k, f"unknown key; the keys of a lesson are {', '.join(KEYS)}")
    if d.get("format") != FORMAT:
        _fail(where, "format", f"expected \"{FORMAT}\", got {d.get('format')!r} (is this a JointLab lesson?)")
    ver = d.get("version")
    if not (isinstance(ver, int) and not isinstance(ver, bool)) or ver < 1:
        _fail(where, "version", f"expected a positive integer, got {ver!r}")
    if ver > VERSION:
        _fail(where, "version", f"version {ver} is newer than this JointLab reads ({VERSION}); update JointLab")
    kw = {}
    for k in ("title", "notes"):
        if k in d:
            if not isinstance(d[k], str):
                _fail(where, k, f"expected text, got {type(d[k]).__name__}")
            kw[k] = d[k]
    m = d.get("model")
    if not isinstance(m, dict):
        _fail(where, "model", f"expected an object {{\"name\": ...}} or {{\"path\": ...}}, got {m!r}")
    for k in m:
        if k not in MODEL_KEYS:
            _fail(where, f"model.{k}", f"unknown key; expected {', '.join(MODEL_KEYS)}")
    if ("name" in m) == ("path" in m):
        _fail(where, "model", "give exactly one of 'name' (a shipped or example-robot-data model) and 'path' "
              "(a URDF or MJCF file, relative to the lesson file)")
    for k in ("name", "path"):
        if k in m and not (isinstance(m[k], str) and m[k].strip()):
            _fail(where, f"model.{k}", f"expected a non-empty text, got {m[k]!r}")
    for k in ("floating_base", "self_collision"):
        if k in m and not isinstance(m[k], bool):
            _fail(where, f"model.{k}", f"expected true or false, got {m[k]!r}")
    kw["model"] = dict(m)
    for k in ("q", "v"):
        if k in d:
            kw[k] = _state_map(where, k, d[k], MAX_COORDINATE if k == "q" else None)
    if "joints" in d:
        if not isinstance(d["joints"], dict):
            _fail(where, "joints", f"expected an object {{joint name: {{mode, law, ...}}}}, got {d['joints']!r}")
        kw["joints"] = {name: _joint_spec(where, f"joints.{name}", s) for name, s in d["joints"].items()}
    if "constraints" in d:
        c = d["constraints"]
        if not isinstance(c, dict) or not all(isinstance(x, bool) for x in c.values()):
            _fail(where, "constraints", f"expected an object {{constraint name: true or false}}, got {c!r}")
        kw["constraints"] = dict(c)
    for k in ("stabilization", "gravity", "running", "ground"):
        if k in d:
            if not isinstance(d[k], bool):
                _fail(where, k, f"expected true or false, got {d[k]!r}")
            kw[k] = d[k]
    if "integrator" in d:
        if d["integrator"] not in INTEGRATORS:
            _fail(where, "integrator", f"unknown integrator {d['integrator']!r}; expected one of {', '.join(INTEGRATORS)}")
        kw["integrator"] = d["integrator"]
    for k, choices in (("dt", DT_CHOICES), ("speed", SPEED_CHOICES)):
        if k in d:
            x = d[k]
            c = _close_choice(x, choices) if _is_num(x) else None
            if c is None:
                _fail(where, k, f"{x!r} is not offered; expected one of {', '.join(f'{y:g}' for y in choices)}")
            kw[k] = c
    if "camera" in d:
        cam = d["camera"]
        if not isinstance(cam, dict):
            _fail(where, "camera", f"expected an object with {', '.join(CAMERA_KEYS)}, got {cam!r}")
        for k in cam:
            if k not in CAMERA_KEYS:
                _fail(where, f"camera.{k}", f"unknown key; expected {', '.join(CAMERA_KEYS)}")
        missing = [k for k in CAMERA_KEYS if k not in cam]
        if missing:
            _fail(where, "camera", f"missing {', '.join(missing)}")
        c = cam["center"]
        if not (isinstance(c, list) and len(c) == 3 and all(_is_num(x) for x in c)):
            _fail(where, "camera.center", f"expected 3 finite numbers, got {c!r}")
        if max(abs(x) for x in c) > MAX_CAMERA:
            _fail(where, "camera.center", f"{c!r} is out of range: at most {MAX_CAMERA:g} m from the origin "
                  f"on each axis")
        for k in ("distance", "elevation", "azimuth", "fov"):
            if not _is_num(cam[k]):
                _fail(where, f"camera.{k}", f"expected a finite number, got {cam[k]!r}")
        if not 0 < cam["distance"] <= MAX_CAMERA:
            _fail(where, "camera.distance", f"expected a positive distance up to {MAX_CAMERA:g} m, "
                  f"got {cam['distance']!r}")
        if not 1 <= cam["fov"] <= 170:
            _fail(where, "camera.fov", f"expected a field of view between 1 and 170 degrees, got {cam['fov']!r}")
        kw["camera"] = {"center": [float(x) for x in c], **{k: float(cam[k]) for k in CAMERA_KEYS[1:]}}
    if "view" in d:
        v = d["view"]
        if not isinstance(v, dict):
            _fail(where, "view", f"expected an object {{toggle: true or false}}, got {v!r}")
        for k, x in v.items():
            if k not in VIEW_TOGGLES:
                _fail(where, f"view.{k}", f"unknown view toggle; expected {', '.join(VIEW_TOGGLES)}")
            if not isinstance(x, bool):
                _fail(where, f"view.{k}", f"expected true or false, got {x!r}")
        kw["view"] = dict(v)
    if "plots" in d:
        p = d["plots"]
        if not (isinstance(p, list) and all(isinstance(x, str) and x for x in p)):
            _fail(where, "plots", f"expected a list of channel names such as \"q:joint1\", got {p!r}")
        kw["plots"] = list(p)
    if "objects" in d:
        kw["objects"] = _objects(where, d["objects"])
    if "materials" in d:
        kw["materials"] = _materials(where, d["materials"])
    return Lesson(**kw)


def _numbers(where, key, x, n, lo=None, hi=None, what="numbers"):
    """A list of n finite numbers (a bare number when n == 1 is accepted too)."""
    if n == 1 and _is_num(x):
        x = [x]
    if not (isinstance(x, list) and len(x) == n and all(_is_num(y) for y in x)):
        _fail(where, key, f"expected {n} finite {what}, got {x!r}" if n > 1 else f"expected a finite number, got {x!r}")
    for y in x:
        if (lo is not None and not y > lo) or (hi is not None and abs(y) > hi):
            rng = f"> {lo:g}" if lo is not None else ""
            rng += (" and " if rng and hi is not None else "") + (f"at most {hi:g} in magnitude" if hi is not None else "")
            _fail(where, key, f"{x!r} is out of range: each value must be {rng}")
    return [float(y) for y in x]


def _objects(where, objs):
    """The checked list of a lesson's objects (see the module text)."""
    if not isinstance(objs, list):
        _fail(where, "objects", f"expected a list of objects {{\"kind\", \"size\", \"mass\", ...}}, got {objs!r}")
    if len(objs) > MAX_OBJECTS:
        _fail(where, "objects", f"{len(objs)} objects; a lesson holds at most {MAX_OBJECTS}")
    out, names = [], set()
    for i, o in enumerate(objs):
        key = f"objects[{i}]"
        if not isinstance(o, dict):
            _fail(where, key, f"expected an object {{\"kind\", \"size\", \"mass\", ...}}, got {o!r}")
        for k in o:
            if k not in OBJECT_KEYS:
                _fail(where, f"{key}.{k}", f"unknown key; the keys of an object are {', '.join(OBJECT_KEYS)}")
        kind = o.get("kind")
        if kind not in OBJECT_KINDS:
            _fail(where, f"{key}.kind", f"unknown kind {kind!r}; expected one of {', '.join(OBJECT_KINDS)}")
        name = o.get("name", f"{kind}{i + 1}")
        if not (isinstance(name, str) and name.strip()):
            _fail(where, f"{key}.name", f"expected a non-empty text, got {name!r}")
        if name in names:
            _fail(where, f"{key}.name", f"'{name}' names two objects")
        names.add(name)
        for k in ("size", "mass"):
            if k not in o:
                _fail(where, f"{key}.{k}", f"missing; a {kind} needs its {k}")
        n = OBJECT_KINDS[kind]
        size = _numbers(where, f"{key}.size", o["size"], n, lo=0.0, hi=MAX_OBJECT_SIZE,
                        what={3: "side lengths (m)", 2: "numbers [radius, length] (m)", 1: "numbers"}[n])
        mass = _numbers(where, f"{key}.mass", o["mass"], 1, lo=0.0, hi=MAX_OBJECT_MASS)[0]
        pos = _numbers(where, f"{key}.position", o.get("position", [0.0, 0.0, 0.0]), 3, hi=MAX_OBJECT_SIZE)
        rpy = _numbers(where, f"{key}.rpy", o.get("rpy", [0.0, 0.0, 0.0]), 3, hi=MAX_COORDINATE)
        ob = {"kind": kind, "name": name, "size": size, "mass": mass, "position": pos, "rpy": rpy}
        if o.get("friction") is not None:
            mu = _numbers(where, f"{key}.friction", o["friction"], 1)[0]
            if not 0.0 <= mu <= 10.0:
                _fail(where, f"{key}.friction", f"{o['friction']!r} is out of range: expected 0 to 10")
            ob["friction"] = mu
        if o.get("restitution") is not None:
            e = _numbers(where, f"{key}.restitution", o["restitution"], 1)[0]
            if not 0.0 <= e <= 1.0:
                _fail(where, f"{key}.restitution", f"{o['restitution']!r} is out of range: expected 0 to 1")
            ob["restitution"] = e
        if "color" in o:
            c = o["color"]
            if not (isinstance(c, list) and len(c) in (3, 4) and all(_is_num(y) and 0.0 <= y <= 1.0 for y in c)):
                _fail(where, f"{key}.color", f"expected 3 or 4 numbers in 0..1 (r, g, b[, a]), got {c!r}")
            ob["color"] = [float(y) for y in c]
        out.append(ob)
    return out


def _materials(where, mats):
    if not isinstance(mats, dict):
        _fail(where, "materials", f"expected an object {{body name: {{\"friction\", \"restitution\"}}}}, got {mats!r}")
    out = {}
    for name, spec in mats.items():
        key = f"materials.{name}"
        if not isinstance(spec, dict) or not spec:
            _fail(where, key, f"expected an object with friction and/or restitution, got {spec!r}")
        for k, x in spec.items():
            if k not in MATERIAL_KEYS:
                _fail(where, f"{key}.{k}", f"unknown key; expected {', '.join(MATERIAL_KEYS)}")
            if not _is_num(x) or x < 0.0 or (k == "restitution" and x > 1.0) or x > 10.0:
                _fail(where, f"{key}.{k}", f"expected a number in {'0..1' if k == 'restitution' else '0..10'}, "
                      f"got {x!r}")
        out[name] = {k: float(x) for k, x in spec.items()}
    return out


def build_model(lesson: Lesson, load, where=None):
    """The model a lesson runs: ``load(source, floating_base)`` (e.g. engine.catalog.load_model), its
    self-collision switch and link materials set, the lesson's objects added through engine.Scene
    (a new model), and its ground switch kept as ``model.lesson_ground`` (app.sim.contactsim.default_ground
    reads it). Raises LessonError naming the file and the key (an unknown body, an object name the
    model has)."""
    where = where or lesson.path or "lesson"
    model = load(lesson.model_source(), lesson.floating_base())
    if lesson.model.get("self_collision") is not None:
        model.self_collision = bool(lesson.model["self_collision"])
    if lesson.materials:
        mats = dict(getattr(model, "contact_materials", {}) or {})
        for name, spec in lesson.materials.items():
            if name not in model.body_names:
                _fail(where, f"materials.{name}", f"model '{model.name}' has no body '{name}'; its bodies: "
                      f"{', '.join(model.body_names)}")
            k = model.body_names.index(name) + 1
            old = mats.get(k, (None, None))
            mats[k] = (spec.get("friction", old[0]), spec.get("restitution", old[1]))
        model.contact_materials = mats
    if lesson.objects:
        import engine
        scene = engine.Scene(model)
        add = {"box": lambda o, kw: scene.add_box(o["name"], size=o["size"], **kw),
               "ball": lambda o, kw: scene.add_ball(o["name"], radius=o["size"][0], **kw),
               "cylinder": lambda o, kw: scene.add_cylinder(o["name"], radius=o["size"][0], length=o["size"][1], **kw)}
        for i, o in enumerate(lesson.objects):
            kw = dict(mass=o["mass"], position=o["position"], rpy=o["rpy"], friction=o.get("friction"),
                      restitution=o.get("restitution"), color=o.get("color"))
            try:
                add[o["kind"]](o, kw)
            except ValueError as exc:
                _fail(where, f"objects[{i}]", str(exc))
        model = scene.build()
    if lesson.ground is not None:
        model.lesson_ground = bool(lesson.ground)
    return model


class _LongInteger:
    """An integer literal with more than MAX_DIGITS digits, kept unconverted so that the check of
    the parsed file names its key."""

    def __init__(self, text):
        self.digits = len(text.lstrip("-"))

    def __repr__(self):
        return f"an integer of {self.digits} digits"


def _parse_int(text):
    return int(text) if len(text.lstrip("-")) <= MAX_DIGITS else _LongInteger(text)


def _check_shape(where, d):
    """Depth, number of values and overlong integers of the parsed file, walked without recursion;
    the key path of the first fault is named."""
    stack, count = [(d, "", 1)], 0
    while stack:
        x, key, depth = stack.pop()
        count += 1
        if count > MAX_VALUES:
            raise LessonError(f"{where}: more than {MAX_VALUES} values; a lesson holds a few dozen")
        if isinstance(x, _LongInteger):
            _fail(where, key or "(top)", f"{x!r}: a number in a lesson has at most {MAX_DIGITS} digits")
        if isinstance(x, (dict, list)):
            if depth > MAX_DEPTH:
                _fail(where, key or "(top)", f"nested more than {MAX_DEPTH} levels deep")
            items = x.items() if isinstance(x, dict) else enumerate(x)
            for k, y in items:
                sub = f"{key}.{k}" if isinstance(x, dict) else f"{key}[{k}]"
                stack.append((y, sub.lstrip("."), depth + 1))


def load_lesson(path) -> Lesson:
    """Read and check a lesson file (not yet against its model: see ``check_model``). The file is
    untrusted: one bigger than MAX_BYTES is not read, one nested deeper than MAX_DEPTH or holding
    more than MAX_VALUES values or an integer of more than MAX_DIGITS digits is refused; every fault
    is a LessonError naming the file (and the key where there is one)."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size > MAX_BYTES:
                raise LessonError(f"{path}: {size} bytes; a lesson file is at most {MAX_BYTES / 1e6:g} MB")
            raw = f.read(MAX_BYTES + 1)
    except OSError as exc:
        raise LessonError(f"{path}: can not read the lesson: {exc.strerror or exc}") from None
    if len(raw) > MAX_BYTES:         # grew while read, or a device that reports no size
        raise LessonError(f"{path}: more than {MAX_BYTES} bytes; a lesson file is at most {MAX_BYTES / 1e6:g} MB")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LessonError(f"{path}: not a text file ({exc.reason} at byte {exc.start})") from None
    try:
        d = json.loads(text, parse_int=_parse_int)
    except json.JSONDecodeError as exc:
        raise LessonError(f"{path}: line {exc.lineno}, column {exc.colno}: not valid JSON: {exc.msg}") from None
    except RecursionError:
        raise LessonError(f"{path}: nested more than {MAX_DEPTH} levels deep") from None
    except ValueError as exc:
        raise LessonError(f"{path}: not valid JSON: {exc}") from None
    _check_shape(path, d)
    lesson = lesson_from_dict(d, where=path)
    lesson.path = os.path.abspath(path)
    return lesson


def save_lesson(lesson: Lesson, path):
    """Write a lesson file (JSON, keys in a fixed order). A model given by path is written relative
    to the new file's folder. The file is written whole or not at all (``app.sim.safewrite``): the
    written text is read back and parsed before it replaces an old file. Raises LessonError (a
    lesson that would not load) or ``safewrite.WriteError`` (an OSError naming the path)."""
    from app.sim.safewrite import atomic_write
    path = os.fspath(path)
    d = lesson.to_dict()
    if "path" in lesson.model:
        src = lesson.model_source()
        try:
            rel = os.path.relpath(src, os.path.dirname(os.path.abspath(path)))
        except ValueError:          # another drive (Windows): keep the absolute path
            rel = src
        d["model"] = {**lesson.model, "path": rel.replace(os.sep, "/")}
    lesson_from_dict(d, where=path)      # never write a file that would not load
    text = json.dumps(d, indent=2, ensure_ascii=False) + "\n"

    def write(tmp):
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)

    def verify(tmp):
        with open(tmp, encoding="utf-8") as f:
            if json.load(f) != json.loads(text):
                raise ValueError("the lesson reads back different")

    atomic_write(path, write, verify)
    lesson.path = os.path.abspath(path)
    return path


def check_model(lesson: Lesson, model, where=None):
    """Check the lesson against its loaded model: joint names (unknown ones listed with the valid
    ones), the number of values of each joint's q and v, constraint names. Raises LessonError."""
    where = where or lesson.path or "lesson"
    joints = {j.name: j for j in model.joints}
    valid = ", ".join(joints)
    for key, size in (("q", "nq"), ("v", "nv")):
        for name, x in getattr(lesson, key).items():
            if name not in joints:
                _fail(where, f"{key}.{name}", f"model '{model.name}' has no joint '{name}'; its joints: {valid}")
            n = getattr(joints[name], size)
            got = 1 if isinstance(x, float) else len(x)
            if got != n:
                _fail(where, f"{key}.{name}", f"joint '{name}' ({joints[name].kind}) has {n} "
                      f"{'position' if key == 'q' else 'velocity'} coordinate(s), the lesson gives {got}")
    for name, spec in lesson.joints.items():
        if name not in joints:
            _fail(where, f"joints.{name}", f"model '{model.name}' has no joint '{name}'; its joints: {valid}")
        if joints[name].nv == 0:
            _fail(where, f"joints.{name}", f"joint '{name}' is fixed (no coordinate to drive)")
        if spec["mode"] == "torque" and name in tuple(getattr(model, "massless_joints", ()) or ()):
            _fail(where, f"joints.{name}", f"joint '{name}' moves only massless links: it can not be "
                  f"torque-driven (use an acceleration law)")
    cons = [c.name for c in (getattr(model, "constraints", None) or [])]
    for name in lesson.constraints:
        if name not in cons:
            _fail(where, f"constraints.{name}", f"model '{model.name}' has no constraint '{name}'; its "
                  f"constraints: {', '.join(cons) if cons else '(none)'}")


def initial_state(lesson: Lesson, model, q0, v0):
    """(q, v): the model's start state (q0, v0) with the lesson's values applied (quaternions of
    spherical and free joints normalised). Call ``check_model`` first."""
    q = np.array(q0, dtype=float)
    v = np.array(v0, dtype=float)
    for key, vec, start, size in (("q", q, "idx_q", "nq"), ("v", v, "idx_v", "nv")):
        for name, x in getattr(lesson, key).items():
            j = model.joint(name)
            i, n = getattr(j, start), getattr(j, size)
            vec[i:i + n] = np.atleast_1d(np.asarray(x, dtype=float))
    for j in model.joints:
        k = {"spherical": 0, "free": 3}.get(j.kind)
        if k is not None and j.name in lesson.q:
            qq = q[j.idx_q + k:j.idx_q + k + 4]
            nrm = np.linalg.norm(qq)
            if not nrm > 1e-9:
                raise LessonError(f"{lesson.path or 'lesson'}: 'q.{j.name}': the orientation quaternion is zero")
            q[j.idx_q + k:j.idx_q + k + 4] = qq / nrm
    return q, v


def shipped_lessons(folder=LESSONS_DIR):
    """Paths of the lessons in assets/lessons/, sorted by file name."""
    if not os.path.isdir(folder):
        return []
    return [os.path.join(folder, f) for f in sorted(os.listdir(folder)) if f.endswith(SUFFIX)]


def gallery_entry(lesson: Lesson):
    """A gallery entry for a lesson (``Gallery.set_models``): named by its path."""
    return {"name": lesson.path, "kind": "lesson", "source": "lessons", "title": lesson.title or
            os.path.splitext(os.path.basename(lesson.path))[0], "notes": lesson.notes,
            "model": lesson.model.get("name") or lesson.model.get("path"), "path": lesson.path,
            "demonstrates": lesson.title}     # the item's tool tip (a long title is cut in the list)


def scene_fields(lesson, model_fields):
    """The scene a lesson built, for a lesson saved from it: its objects, link materials and ground
    switch as Lesson fields, and its self-collision switch written into ``model_fields`` (the saved
    lesson's "model"); {} for no lesson or one without a scene."""
    if lesson is None or not (lesson.objects or lesson.materials or lesson.ground is not None
                              or "self_collision" in lesson.model):
        return {}
    if "self_collision" in lesson.model:
        model_fields["self_collision"] = lesson.model["self_collision"]
    return dict(objects=[dict(o) for o in lesson.objects], materials=dict(lesson.materials), ground=lesson.ground)
