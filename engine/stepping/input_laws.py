"""Built-in joint input laws as data: a law code and eight parameters per velocity coordinate, and
the base pose position errors are measured from. The compiled step loop
(``engine.algorithms.step``) evaluates them at every step, so a simulation driven by these laws
never enters Python.

| mode         | kind     | law (per velocity coordinate of the joint)                           |
|--------------|----------|----------------------------------------------------------------------|
| torque       | zero     | tau = 0 (passive)                                                    |
| torque       | constant | tau = value                                                          |
| torque       | gravity  | tau = g(q) (gravity compensation: inverse dynamics at v = a = 0)     |
| torque       | pd       | tau = kp (q_target - q) - kd dq                                      |
| torque       | sine     | tau = offset + amplitude sin(2 pi frequency t + phase)               |
| acceleration | constant | ddq = value                                                          |
| acceleration | hold     | ddq = kp (q_hold - q) - kd dq   (q_hold: the pose when switched)     |
| acceleration | track    | ddq = kp (q_target - q) - kd dq                                      |
| acceleration | sine     | q_d = offset + amplitude sin(w t + phase);                           |
|              |          | ddq = ddq_d + kp (q_d - q) + kd (dq_d - dq)                          |

Position errors are taken on the configuration Lie group, ``difference(q, q_ref)`` with
q_ref = base (+) d. For joints whose coordinates are plain numbers (revolute, prismatic, helical,
universal) the targets and sine offsets of pd, track and sine are absolute (their base is 0); for
the others they are displacements from the pose the joint had when its law was chosen.
"""
from __future__ import annotations

import math

import numpy as np

from engine.stepping.steploop import NPARAMS

TORQUE_KINDS = ("zero", "constant", "gravity", "pd", "sine")
ACCEL_KINDS = ("constant", "hold", "track", "sine")
CODES = {("torque", k): i for i, k in enumerate(TORQUE_KINDS)}
CODES.update({("acceleration", k): 10 + i for i, k in enumerate(ACCEL_KINDS)})
PARAM_NAMES = ("value", "target", "kp", "kd", "amplitude", "frequency", "phase", "offset")
DEFAULTS = {"value": 0.0, "target": 0.0, "kp": 100.0, "kd": 20.0, "amplitude": 0.5, "frequency": 0.5,
            "phase": 0.0, "offset": 0.0}
LINEAR_KINDS = ("revolute", "prismatic", "helical", "universal")
ABSOLUTE = ("pd", "track", "sine")
assert len(PARAM_NAMES) == NPARAMS


class InputLaws:
    """The input law of every joint of a model: ``code`` (nv, int), ``params`` (nv x 8, columns
    ``PARAM_NAMES``) and ``base`` (nq). All joints start torque-driven with zero torque."""

    def __init__(self, model):
        self.model = model
        self.code = np.zeros(model.nv, dtype=np.int64)
        self.params = np.zeros((model.nv, NPARAMS))
        self.params[:] = [DEFAULTS[k] for k in PARAM_NAMES]
        self.base = model.neutral()
        self.kinds = {j.name: ("torque", "zero") for j in model.joints}

    @property
    def prescribed(self):
        """True for acceleration-prescribed coordinates."""
        return self.code >= 10

    def is_zero(self):
        return np.count_nonzero(self.code) == 0      # a third of ndarray.any()'s cost: it runs every step

    def set(self, joint, mode="torque", kind="zero", q_now=None, **params):
        """Give joint `joint` the law (mode, kind) with `params` (names of PARAM_NAMES; the others
        keep their defaults). A joint whose (mode, kind) changed takes its base pose from q_now
        (default: the base it had)."""
        j = self.model.joint(joint)
        if (mode, kind) not in CODES:
            raise ValueError(f"input law of joint '{joint}': no law '{kind}' in {mode!r} mode; "
                             f"torque: {TORQUE_KINDS}, acceleration: {ACCEL_KINDS}")
        row = [DEFAULTS[k] for k in PARAM_NAMES]
        for name, x in params.items():
            if name not in DEFAULTS:
                raise ValueError(f"input law of joint '{joint}': unknown parameter {name!r}; expected one of {PARAM_NAMES}")
            x = float(x)
            if not math.isfinite(x):
                raise ValueError(f"input law of joint '{joint}': {name} = {x!r} is not finite")
            row[PARAM_NAMES.index(name)] = x
        sv, sq = slice(j.idx_v, j.idx_v + j.nv), slice(j.idx_q, j.idx_q + j.nq)
        changed = self.kinds[joint] != (mode, kind)
        self.kinds[joint] = (mode, kind)
        self.code[sv] = CODES[(mode, kind)]
        self.params[sv] = row
        if changed and q_now is not None:
            self.base[sq] = np.asarray(q_now, dtype=float)[sq]
        if j.kind in LINEAR_KINDS and kind in ABSOLUTE:
            self.base[sq] = 0.0
        return self

    def recapture(self, q_now):
        """Take every joint's base pose from q_now (absolute targets keep base 0)."""
        q_now = np.asarray(q_now, dtype=float)
        for j in self.model.joints:
            sq = slice(j.idx_q, j.idx_q + j.nq)
            self.base[sq] = 0.0 if (j.kind in LINEAR_KINDS and self.kinds[j.name][1] in ABSOLUTE) else q_now[sq]
        return self

    def constant_parts(self):
        """(tau_const, acc_const): the value of constant laws, zero elsewhere."""
        value = self.params[:, 0]
        return (np.where(self.code == CODES[("torque", "constant")], value, 0.0),
                np.where(self.code == CODES[("acceleration", "constant")], value, 0.0))
