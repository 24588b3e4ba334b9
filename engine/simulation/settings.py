"""A simulator's settings, each checked when it is assigned: a bad value raises ValueError naming the
attribute and what it accepts, and the old value stays (``engine.Simulator`` exposes them as its own
attributes: ``sim.dt = 5e-4``)."""
from __future__ import annotations

import math

import numpy as np

INTEGRATORS = ("rk4", "semi_implicit_euler", "euler")
STABILIZATIONS = ("baumgarte", "none")
LOOP_TOLERANCE = 1e-4      # of the model's characteristic length


def model_has_limits(model):
    """Whether any revolute or prismatic joint of the model has a finite limit (URDF <limit>)."""
    return any(j.kind in ("revolute", "prismatic") and j.nv == 1
               and (np.isfinite(j.lower[0]) or np.isfinite(j.upper[0])) for j in model.joints)


def model_has_friction(model):
    """Whether any joint coordinate of the model has dry friction f > 0."""
    return any(j.friction is not None and np.any(np.asarray(j.friction, dtype=float) > 0.0) for j in model.joints)


class Settings:
    """dt, integrator, ground, joint_limits, joint_friction, limit_restitution (unilateral constraints);
    stabilization, baumgarte_time, project_every_step, loop_tolerance (closed loops)."""

    NAMES = ("dt", "integrator", "ground", "joint_limits", "joint_friction", "limit_restitution", "stabilization",
             "baumgarte_time", "project_every_step", "loop_tolerance")

    def __init__(self, model, dt=1e-3, integrator="rk4", ground=None, joint_limits=None, joint_friction=None):
        self.model = model
        self.ground = ground
        self.joint_limits = joint_limits
        self.joint_friction = joint_friction
        self.limit_restitution = 0.0
        self.dt = dt
        self.integrator = integrator
        self.stabilization = "baumgarte"
        self.baumgarte_time = None
        self.project_every_step = False
        self.loop_tolerance = LOOP_TOLERANCE * model.characteristic_length()

    @property
    def dt(self):
        """Time step (s), positive and finite."""
        return self._dt

    @dt.setter
    def dt(self, value):
        try:
            h = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"dt: expected a positive, finite time step in seconds, got {value!r}") from None
        if not (math.isfinite(h) and h > 0.0):
            raise ValueError(f"dt: expected a positive, finite time step in seconds, got {value!r}")
        self._dt = h

    @property
    def integrator(self):
        """One of INTEGRATORS: 'rk4', 'semi_implicit_euler', 'euler'."""
        return self._integrator

    @integrator.setter
    def integrator(self, value):
        if not isinstance(value, str) or value not in INTEGRATORS:
            raise ValueError(f"integrator: expected one of {', '.join(repr(x) for x in INTEGRATORS)}, got {value!r}")
        self._integrator = value

    @property
    def ground(self):
        """engine.Ground or None (no ground contact)."""
        return self._ground

    @ground.setter
    def ground(self, value):
        from engine.contact.geometry import Ground
        if value is not None and not isinstance(value, Ground):
            raise ValueError(f"ground: expected engine.Ground(...) or None, got {value!r}")
        self._ground = value

    @property
    def joint_limits(self):
        """Joint limits honoured as unilateral constraints (True/False; None = True when the model
        has limits)."""
        return self._joint_limits

    @joint_limits.setter
    def joint_limits(self, value):
        if value is None:
            # on when the model has limits (URDF <limit> of revolute and prismatic joints)
            value = model_has_limits(self.model)
        if not isinstance(value, (bool, np.bool_)):
            raise ValueError(f"joint_limits: expected True, False or None, got {value!r}")
        self._joint_limits = bool(value)

    @property
    def joint_friction(self):
        """Joint dry (Coulomb) friction, URDF ``<dynamics friction>`` / MJCF ``frictionloss``, acting
        as a velocity-level row per coordinate (True/False; None = True when the model has any
        friction > 0). Reported in ``friction_forces``."""
        return self._joint_friction

    @joint_friction.setter
    def joint_friction(self, value):
        if value is None:
            value = model_has_friction(self.model)
        if not isinstance(value, (bool, np.bool_)):
            raise ValueError(f"joint_friction: expected True, False or None, got {value!r}")
        self._joint_friction = bool(value)
        self.friction_on = self._joint_friction and model_has_friction(self.model)

    @property
    def limit_restitution(self):
        """Restitution of the joint limits in [0, 1] (0: a joint stops on its limit)."""
        return self._limit_restitution

    @limit_restitution.setter
    def limit_restitution(self, value):
        try:
            e = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"limit_restitution: expected a number in [0, 1], got {value!r}") from None
        if not 0.0 <= e <= 1.0:
            raise ValueError(f"limit_restitution: expected a number in [0, 1], got {value!r}")
        self._limit_restitution = e

    @property
    def stabilization(self):
        """Drift stabilisation of closed loops: 'baumgarte' or 'none'."""
        return self._stabilization

    @stabilization.setter
    def stabilization(self, value):
        if not isinstance(value, str) or value not in STABILIZATIONS:
            raise ValueError(f"stabilization: expected one of {', '.join(repr(x) for x in STABILIZATIONS)}, "
                             f"got {value!r}")
        self._stabilization = value

    @property
    def baumgarte_time(self):
        """Baumgarte time constant (s), or None for the default (0.1 s with RK4, 10 dt otherwise)."""
        return self._baumgarte_time

    @baumgarte_time.setter
    def baumgarte_time(self, value):
        if value is not None:
            try:
                T = float(value)
            except (TypeError, ValueError):
                raise ValueError(f"baumgarte_time: expected a positive time in seconds or None, got {value!r}") from None
            if not (math.isfinite(T) and T > 0.0):
                raise ValueError(f"baumgarte_time: expected a positive time in seconds or None, got {value!r}")
            value = T
        self._baumgarte_time = value

    @property
    def project_every_step(self):
        """Project the state onto the loops after every step (True/False)."""
        return self._project_every_step

    @project_every_step.setter
    def project_every_step(self, value):
        if not isinstance(value, (bool, np.bool_)):
            raise ValueError(f"project_every_step: expected True or False, got {value!r}")
        self._project_every_step = bool(value)

    @property
    def loop_tolerance(self):
        """Largest residual |f(q)| of the enabled loops tolerated after a step before the state is
        projected back onto them (m, or rad for gear rows)."""
        return self._loop_tolerance

    @loop_tolerance.setter
    def loop_tolerance(self, value):
        try:
            tol = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"loop_tolerance: expected a positive number, got {value!r}") from None
        if not (math.isfinite(tol) and tol > 0.0):
            raise ValueError(f"loop_tolerance: expected a positive number, got {value!r}")
        self._loop_tolerance = tol

    def baumgarte(self):
        """(alpha, beta) in use, or None."""
        from engine.loops.constrained import baumgarte_gains
        if self.stabilization != "baumgarte":
            return None
        T = self.baumgarte_time
        if T is None:
            T = 0.1 if self.integrator == "rk4" else 10.0 * self.dt
        return baumgarte_gains(T, self.dt)
