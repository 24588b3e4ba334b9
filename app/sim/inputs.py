"""Joint inputs: what drives each joint, and the controller the simulator calls at every step.

Every joint is either *torque-driven* (its torque is given; hybrid dynamics computes the
acceleration it gets) or *acceleration-prescribed* (its acceleration is given; hybrid dynamics
computes the torque it needs). The input law of a joint:

The laws (the table, their codes and parameter names) are defined once, in ``engine.stepping.input_laws``;
this module adds what the joint panel needs: labels, the parameters each law shows, their accepted
ranges, and the same laws evaluated in Python (``Controller``) for a user's own control callback.

Position errors are taken on the configuration Lie group, ``difference(q, q_ref)``, so they are
right for spherical, planar and free joints too. For joints whose coordinates are not plain numbers
(spherical, planar, free) targets and sine offsets are displacements from the pose the joint had
when its input was chosen; for the others (revolute, prismatic, helical, universal) they are
absolute joint positions.

Nothing here imports Qt: the controller runs in the simulation thread.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace, fields

import numpy as np

# The same names as engine.stepping.input_laws, repeated here so that the window opens without importing the
# engine (numba and its kernels load in the background); tests/test_gui_units.py checks they agree.
TORQUE_KINDS = ("zero", "constant", "gravity", "pd", "sine")
ACCEL_KINDS = ("constant", "hold", "track", "sine")
_CODES = {("torque", k): i for i, k in enumerate(TORQUE_KINDS)}
_CODES.update({("acceleration", k): 10 + i for i, k in enumerate(ACCEL_KINDS)})
DEFAULTS = {"value": 0.0, "target": 0.0, "kp": 100.0, "kd": 20.0, "amplitude": 0.5, "frequency": 0.5,
            "phase": 0.0, "offset": 0.0}
LINEAR_KINDS = ("revolute", "prismatic", "helical", "universal")
ABSOLUTE = ("pd", "track", "sine")

KIND_LABELS = {
    ("torque", "zero"): "zero (passive)",
    ("torque", "constant"): "constant",
    ("torque", "gravity"): "gravity compensation",
    ("torque", "pd"): "PD to target",
    ("torque", "sine"): "sine",
    ("acceleration", "constant"): "constant",
    ("acceleration", "hold"): "hold still",
    ("acceleration", "track"): "track target",
    ("acceleration", "sine"): "sine trajectory",
}
# parameters each law reads, in the order the panel shows them
PARAMS = {
    ("torque", "zero"): (),
    ("torque", "constant"): ("value",),
    ("torque", "gravity"): (),
    ("torque", "pd"): ("target", "kp", "kd"),
    ("torque", "sine"): ("amplitude", "frequency", "phase", "offset"),
    ("acceleration", "constant"): ("value",),
    ("acceleration", "hold"): ("kp", "kd"),
    ("acceleration", "track"): ("target", "kp", "kd"),
    ("acceleration", "sine"): ("amplitude", "frequency", "phase", "offset", "kp", "kd"),
}
# accepted range of each parameter (the panel's validators use the same numbers)
LIMITS = {
    "value": (-1e6, 1e6),
    "target": (-1e3, 1e3),
    "kp": (0.0, 1e7),
    "kd": (0.0, 1e6),
    "amplitude": (-1e4, 1e4),
    "frequency": (0.0, 100.0),
    "phase": (-1e3, 1e3),
    "offset": (-1e4, 1e4),
}
assert set(LIMITS) == set(DEFAULTS)


@dataclass(frozen=True)
class JointInput:
    """The input law of one joint (immutable; the GUI sends new ones)."""
    mode: str = "torque"
    kind: str = "zero"
    value: float = DEFAULTS["value"]
    target: float = DEFAULTS["target"]
    kp: float = DEFAULTS["kp"]
    kd: float = DEFAULTS["kd"]
    amplitude: float = DEFAULTS["amplitude"]
    frequency: float = DEFAULTS["frequency"]
    phase: float = DEFAULTS["phase"]
    offset: float = DEFAULTS["offset"]

    def __post_init__(self):
        if (self.mode, self.kind) not in _CODES:
            raise ValueError(f"joint input: no law '{self.kind}' in {self.mode} mode; "
                             f"torque: {TORQUE_KINDS}, acceleration: {ACCEL_KINDS}")
        for f in fields(self):
            if f.name in LIMITS:
                x = getattr(self, f.name)
                lo, hi = LIMITS[f.name]
                if not (isinstance(x, (int, float)) and math.isfinite(x) and lo <= x <= hi):
                    raise ValueError(f"joint input: {f.name} = {x!r} is outside [{lo:g}, {hi:g}]")

    @property
    def code(self):
        return _CODES[(self.mode, self.kind)]

    def with_(self, **kw):
        return replace(self, **kw)

    def label(self):
        return KIND_LABELS[(self.mode, self.kind)]


def default_input(mode="torque", kind=None, scale=1.0):
    """A sensible input for a joint. ``scale`` (kg m^2 or kg: the joint's own inertia M_ii) makes
    torque PD gains give about the same response as the acceleration gains."""
    if kind is None:
        kind = "zero" if mode == "torque" else "hold"
    if mode == "torque":
        return JointInput(mode, kind, kp=float(f"{100.0 * scale:.3g}"), kd=float(f"{20.0 * scale:.3g}"))
    return JointInput(mode, kind)


class Controller:
    """controller(t, q, v) -> (a_cmd, tau_cmd) for ``engine.Simulator.controller``.

    Built from {joint name: JointInput}; evaluated with a few vectorised numpy operations per step,
    plus one compiled call each for gravity compensation and position errors when some joint uses
    them. ``model`` must be a model clone owned by the simulation thread.
    """

    def __init__(self, model, engine):
        self.model = model
        self._e = engine
        nv = model.nv
        self.inputs = {j.name: JointInput() for j in model.joints}
        self.prescribed = np.zeros(nv, dtype=bool)
        self._base = model.neutral()         # reference base pose (per joint segment)
        self._tau = np.zeros(nv)
        self._acc = np.zeros(nv)
        self._rebuild(model.neutral())

    # ------------------------------------------------------------------ configuration
    def set_inputs(self, inputs, q_now):
        """Replace the inputs of some joints ({name: JointInput}). A joint whose mode or law changed
        takes its hold pose from q_now; the others keep theirs (switching is seamless)."""
        changed = set()
        for name, inp in inputs.items():
            self.model.joint(name)  # KeyError naming the joint if unknown
            old = self.inputs[name]
            if (old.mode, old.kind) != (inp.mode, inp.kind):
                changed.add(name)
            self.inputs[name] = inp
        self._rebuild(q_now, changed)

    def recapture(self, q_now):
        """Take every joint's hold pose from q_now (after a reset or a pose edit)."""
        self._rebuild(q_now, set(self.inputs))

    def _rebuild(self, q_now, changed=None):
        model = self.model
        nv = model.nv
        code = np.zeros(nv, dtype=np.int64)
        arr = {k: np.zeros(nv) for k in LIMITS}
        base = self._base.copy()
        for j in model.joints:
            inp = self.inputs[j.name]
            sv, sq = slice(j.idx_v, j.idx_v + j.nv), slice(j.idx_q, j.idx_q + j.nq)
            code[sv] = inp.code
            for k in LIMITS:
                arr[k][sv] = getattr(inp, k)
            if changed is None or j.name in changed:
                base[sq] = q_now[sq]
            if j.kind in LINEAR_KINDS and inp.kind in ABSOLUTE:
                base[sq] = 0.0   # absolute targets for plain-number coordinates
        self._base = base
        self._code = code
        self.prescribed = code >= 10
        self._p = arr
        self._omega = 2.0 * np.pi * arr["frequency"]
        m = lambda *cs: np.isin(code, cs)
        self._m_tconst, self._m_grav, self._m_tpd, self._m_tsin = m(1), m(2), m(3), m(4)
        self._m_aconst, self._m_hold, self._m_track, self._m_asin = m(10), m(11), m(12), m(13)
        self._any_grav = bool(self._m_grav.any())
        self._m_err = self._m_tpd | self._m_hold | self._m_track | self._m_asin
        self._any_err = bool(self._m_err.any())
        self._any_asin = bool(self._m_asin.any())
        self._any_tsin = bool(self._m_tsin.any())
        # displacement from the base pose: targets (pd, track) or 0 (hold); sine adds its own
        d = np.where(self._m_tpd | self._m_track, arr["target"], 0.0)
        self._d_static = d
        self._q_ref_static = self._e.integrate(model, base, d)
        # constant parts
        self._tau_const = np.where(self._m_tconst, arr["value"], 0.0)
        self._acc_const = np.where(self._m_aconst, arr["value"], 0.0)
        self._kp = np.where(self._m_err, arr["kp"], 0.0)
        self._kd = np.where(self._m_err, arr["kd"], 0.0)

    # ------------------------------------------------------------------ evaluation
    def references(self, t):
        """(q_ref, dq_ref, ddq_ref) at time t: the pose each position-controlled joint is pulled
        to, and the feed-forward velocity and acceleration of sine trajectories."""
        if not self._any_asin:
            return self._q_ref_static, None, None
        p = self._p
        ph = self._omega * t + p["phase"]
        s = np.sin(ph)
        A = np.where(self._m_asin, p["amplitude"], 0.0)
        d = self._d_static + np.where(self._m_asin, p["offset"] + A * s, 0.0)
        q_ref = self._e.integrate(self.model, self._base, d)
        dq_ref = A * self._omega * np.cos(ph)
        ddq_ref = -A * self._omega ** 2 * s
        return q_ref, dq_ref, ddq_ref

    def __call__(self, t, q, v):
        tau = self._tau_const.copy()
        acc = self._acc_const.copy()
        if self._any_grav:
            g = self._e.gravity_forces(self.model, q)
            tau += np.where(self._m_grav, g, 0.0)
        if self._any_tsin:
            p = self._p
            tau += np.where(self._m_tsin, p["offset"] + p["amplitude"] * np.sin(self._omega * t + p["phase"]), 0.0)
        if self._any_err:
            q_ref, dq_ref, ddq_ref = self.references(t)
            e = self._e.difference(self.model, q, q_ref)
            dv = -v if dq_ref is None else dq_ref - v
            fb = self._kp * e + self._kd * dv
            tau += np.where(self._m_tpd, fb, 0.0)
            acc += np.where(self._m_hold | self._m_track | self._m_asin, fb, 0.0)
            if ddq_ref is not None:
                acc += ddq_ref
        return acc, tau


class EngineInputs(Controller):
    """The joint panel's Controller whose laws are also handed to the simulator as data
    (``engine.InputLaws``): the simulator evaluates them inside its compiled step loop, so the
    physics thread does not call back into Python at every step. Same numbers as calling the
    Controller (tests/test_compiled_step.py)."""

    def __init__(self, model, engine, sim):
        from engine.stepping.input_laws import PARAM_NAMES
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
