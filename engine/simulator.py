"""Time stepping on the Lie group: the simulator keeps (t, q, v) and advances them with hybrid
dynamics (each joint torque-given or acceleration-prescribed) and one of three integrators.

- "euler":               q+ = q (+) h v,   v+ = v + h a(q, v)
- "semi_implicit_euler": v+ = v + h a(q, v),   q+ = q (+) h v+
- "rk4":                 Runge-Kutta-Munthe-Kaas of order 4: the stages live in the tangent space at
  q, q_k = q (+) xi_k, and the velocity is pulled back with dexp^-1 truncated after the third term,
  xi' = v + 1/2 [xi, v] + 1/12 [xi, [xi, v]]  (exact for 1-dof joints, order 4 on SO(3) and SE(3)).

Quaternions stay unit (the group exponential is exact and the result is renormalised). Joint
viscous damping acts as a passive torque -d v. Inputs (tau for torque joints, a for prescribed
joints) are held over a step (zero-order hold) and may change at every step, set directly or
returned by ``controller(t, q, v)``. A state that becomes NaN, Inf or larger than 1e10 raises
``SimulationDiverged`` carrying the last good state, which the simulator keeps.

Closed loops: the model's enabled constraints are honoured with Lagrange multipliers (``lam``),
Baumgarte stabilisation (critically damped, time constant ``baumgarte_time``, default 0.1 s with
RK4 and 10 dt with the Euler integrators, always clamped to >= 2 dt: gains that scale as 1/dt would
amplify RK4's stage errors along the constraints; ``stabilization = "none"`` turns it off), projection of the initial state onto
the constraints, and optional projection after every step (``project_every_step``). Whatever the
settings, a loop never comes apart silently: when the residual |f(q)| after a step exceeds
``loop_tolerance`` (default 1e-4 of the model's size, ``Model.characteristic_length``), the state is
projected back onto the loops (Gauss-Newton on q, least kinetic-energy change of v, as Kim 2012
and GEAR do), counted in ``loop_projections`` with the last one in ``last_loop_projection``; if
projection can not bring it back, ``LoopFailure`` (a SimulationDiverged) names the loop.

Unilateral constraints (``engine/unilateral.py``): ``ground=engine.Ground(...)`` adds ground contact
with Coulomb friction, ``joint_limits`` (default True when the model has finite limits) keeps the
joints within their limits. A step with a contact or a limit near is a velocity-level semi-implicit
Euler step with impulses (whatever ``integrator`` says: impulsive contact and set-valued friction do
not mix with RK4's stages, and this step is what contact simulators use); steps with nothing near
keep the chosen integrator. After a step: ``contacts`` (engine.contact.Contact list),
``limit_forces`` (nv), ``contact_stats``; ``limit_restitution`` (0 = limits do not bounce).

Settings are checked when they are assigned (``dt``, ``integrator``, ``stabilization``,
``baumgarte_time``, ``project_every_step``, ``loop_tolerance``): a bad value raises ValueError
naming the attribute and what it accepts. A finite input that overflows inside a step (a torque
of 1e306) is a divergence, reported with the last good state, never blamed on the input.
"""
from __future__ import annotations

import math

import numpy as np

from .api import forward_dynamics, hybrid_dynamics, integrate, kinetic_energy, potential_energy
from .constrained import (constrained_forward_dynamics, constrained_hybrid_dynamics, project_constraints,
                          baumgarte_gains)
from .constraints import active_constraints, constraint_residual, constraint_system
from .algorithms.liegroup import dexp_inv, state_bounded, LIMIT
from .errors import InputError, SimulationDiverged, NumericalOverflow, LoopFailure

INTEGRATORS = ("rk4", "semi_implicit_euler", "euler")
STABILIZATIONS = ("baumgarte", "none")
LOOP_TOLERANCE = 1e-4      # of the model's characteristic length


class Simulator:
    """Simulate a model: ``sim = Simulator(model, dt=1e-3, integrator="rk4"); sim.step(1000)``.

    State: ``t``, ``q`` (nq), ``v`` (nv). After a step, ``a`` and ``tau`` hold the accelerations
    and the joint torques at the start of that step (for acceleration-prescribed joints the torque
    hybrid dynamics computed, damping included: what a motor must supply).
    Inputs: ``prescribed`` (bool per velocity coordinate), ``tau_cmd`` and ``a_cmd`` (held over a
    step), or ``controller(t, q, v) -> (a_cmd, tau_cmd)`` called at every step; ``f_ext`` a dict of
    body wrenches (body frame) applied during the step.
    """

    def __init__(self, model, dt=1e-3, integrator="rk4", q=None, v=None, ground=None, joint_limits=None):
        self.model = model
        self._stepper = None
        self.ground = ground
        self.joint_limits = joint_limits
        self.limit_restitution = 0.0
        self.contacts = []
        self.limit_forces = np.zeros(model.nv)
        self.dt = dt
        self.integrator = integrator
        nv = model.nv
        self.prescribed = np.zeros(nv, dtype=bool)
        self.tau_cmd = np.zeros(nv)
        self.a_cmd = np.zeros(nv)
        self.controller = None
        self.f_ext = None
        self._damping = model.damping
        self._has_damping = bool(np.any(self._damping))
        self.stabilization = "baumgarte"
        self.baumgarte_time = None
        self.project_every_step = False
        self.loop_tolerance = LOOP_TOLERANCE * model.characteristic_length()
        self.loop_projections = 0          # automatic projections after a loop drifted too far
        self.last_loop_projection = None   # (t, constraint name, residual before) of the last one
        self._q0 = model.neutral() if q is None else self._vec(q, model.nq, "q")
        self._v0 = np.zeros(nv) if v is None else self._vec(v, nv, "v")
        self.reset()

    # ------------------------------------------------------------------ settings (checked on assignment)
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
        from .contact import Ground
        if value is not None and not isinstance(value, Ground):
            raise ValueError(f"ground: expected engine.Ground(...) or None, got {value!r}")
        self._ground = value

    @property
    def joint_limits(self):
        """Joint limits honoured as unilateral constraints (True/False; None at construction =
        True when the model has finite limits)."""
        return self._joint_limits

    @joint_limits.setter
    def joint_limits(self, value):
        if value is None:
            value = any(j.kind in ("revolute", "prismatic") and
                        (np.any(np.isfinite(j.lower)) or np.any(np.isfinite(j.upper))) for j in self.model.joints)
        if not isinstance(value, (bool, np.bool_)):
            raise ValueError(f"joint_limits: expected True, False or None, got {value!r}")
        self._joint_limits = bool(value)

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
    def contact_stats(self):
        """Last contact solve: rows, PGS iterations, polished, residual (m/s); and over the run:
        steps, max_iterations, worst_residual. None when neither ground nor limits are on."""
        return None if self._stepper is None else self._stepper.stats

    def _unilateral(self):
        if self._ground is None and not self._joint_limits:
            return None
        if self._stepper is None:
            from .unilateral import ContactStepper
            self._stepper = ContactStepper(self.model)
        return self._stepper

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

    # ------------------------------------------------------------------ state and inputs
    @staticmethod
    def _vec(x, n, name):
        a = np.array(x, dtype=float).reshape(-1)
        if a.size != n:
            raise InputError(f"{name}: expected {n}, got {a.size}", name)
        if not np.all(np.isfinite(a)):
            raise InputError(f"{name}: holds NaN or Inf", name)
        return a

    def reset(self):
        """Back to the initial state (the one given at construction or by set_initial_state),
        projected onto the enabled constraints."""
        self.t = 0.0
        self.q = self._q0.copy()
        self.v = self._v0.copy()
        if active_constraints(self.model):
            self.q, self.v = project_constraints(self.model, self.q, self.v)
        self.lam = np.zeros(0)
        self.a = np.zeros(self.model.nv)
        self.tau = np.zeros(self.model.nv)
        self.steps = 0
        self.contacts = []
        self.limit_forces = np.zeros(self.model.nv)
        if self._stepper is not None:
            self._stepper.reset()
        self.t_prev, self.q_prev, self.v_prev = self.t, self.q, self.v   # state a and tau belong to

    def set_initial_state(self, q, v=None):
        self._q0 = self._vec(q, self.model.nq, "q")
        self._v0 = np.zeros(self.model.nv) if v is None else self._vec(v, self.model.nv, "v")

    def set_state(self, q, v=None, t=None):
        q = self._vec(q, self.model.nq, "q")
        self.q = integrate(self.model, q, np.zeros(self.model.nv))  # renormalises quaternions
        if v is not None:
            self.v = self._vec(v, self.model.nv, "v")
        if t is not None:
            self.t = float(t)

    def set_mode(self, joint_name, mode):
        """mode "torque" (torque given, acceleration computed) or "acceleration" (prescribed)."""
        if mode not in ("torque", "acceleration"):
            raise ValueError(f"mode: expected 'torque' or 'acceleration', got {mode!r}")
        self.prescribed[self.model.v_slice(joint_name)] = (mode == "acceleration")

    def mode(self, joint_name):
        return "acceleration" if self.prescribed[self.model.v_slice(joint_name)].all() else "torque"

    def project(self):
        """Move the current state onto the enabled constraints (positions and velocities)."""
        self.q, self.v = project_constraints(self.model, self.q, self.v)

    def constraint_residual(self):
        """|f(q)| of the enabled holonomic constraints (the drift meter)."""
        return constraint_residual(self.model, self.q)

    def baumgarte(self):
        """(alpha, beta) in use, or None."""
        if self.stabilization != "baumgarte":
            return None
        T = self.baumgarte_time
        if T is None:
            T = 0.1 if self.integrator == "rk4" else 10.0 * self.dt
        return baumgarte_gains(T, self.dt)

    def energy(self):
        """(kinetic, potential) of the current state."""
        return kinetic_energy(self.model, self.q, self.v), potential_energy(self.model, self.q)

    # ------------------------------------------------------------------ dynamics
    def _accel(self, q, v, a_cmd, tau_cmd):
        """(a, tau, lambda): hybrid dynamics (constrained when loops are enabled) with damping as a
        passive torque."""
        model = self.model
        tau_in = tau_cmd - self._damping * v if self._has_damping else tau_cmd
        lam = np.zeros(0)
        if active_constraints(model):
            gains = self.baumgarte()
            if not self.prescribed.any():
                a, lam = constrained_forward_dynamics(model, q, v, tau_in, self.f_ext, gains)
                tau = tau_cmd
            else:
                a, tau, lam = constrained_hybrid_dynamics(model, q, v, self.prescribed, a_cmd, tau_in,
                                                          self.f_ext, gains)
        elif not self.prescribed.any():
            return forward_dynamics(model, q, v, tau_in, self.f_ext), tau_cmd, lam
        else:
            a, tau = hybrid_dynamics(model, q, v, self.prescribed, a_cmd, tau_in, self.f_ext)
        if self._has_damping:
            tau = np.where(self.prescribed, tau + self._damping * v, tau_cmd)
        return a, tau, lam

    def _inputs(self):
        if self.controller is not None:
            out = self.controller(self.t, self.q, self.v)
            if out is not None:
                a_cmd, tau_cmd = out
                nv = self.model.nv
                self.a_cmd = np.zeros(nv) if a_cmd is None else self._vec(a_cmd, nv, "a_cmd")
                self.tau_cmd = np.zeros(nv) if tau_cmd is None else self._vec(tau_cmd, nv, "tau_cmd")
        return self.a_cmd, self.tau_cmd

    def step(self, n=1):
        """Advance n steps of dt. Raises SimulationDiverged (the state stays at the last good one)."""
        for _ in range(int(n)):
            self._step_once()
        return self

    def _step_once(self):
        a_cmd, tau_cmd = self._inputs()
        try:
            uni = self._unilateral()
            if uni is None:
                q_new, v_new, a1, tau1, lam1 = self._advance(a_cmd, tau_cmd)
            else:
                q_new, v_new, a1, tau1, lam1 = uni.advance(self, a_cmd, tau_cmd)
        except (InputError, NumericalOverflow) as e:
            self._overflowed(e, a_cmd, tau_cmd)
        active = active_constraints(self.model)
        if self.project_every_step and active:
            q_new, v_new = project_constraints(self.model, q_new, v_new)
        elif active:
            q_new, v_new = self._keep_loops_closed(active, q_new, v_new)
        self.t_prev, self.q_prev, self.v_prev = self.t, self.q, self.v
        self.q, self.v = q_new, v_new
        self.a, self.tau, self.lam = a1, tau1, lam1
        self.t += self.dt
        self.steps += 1

    def _overflowed(self, error, a_cmd, tau_cmd):
        """An error raised inside a step. Bad inputs of the user's are the user's error (named);
        anything else means finite numbers overflowed inside the step: a divergence."""
        for name, x in (("q", self.q), ("v", self.v)):       # the state itself went bad (set from outside)
            if not np.all(np.isfinite(x)):
                bad = int(np.flatnonzero(~np.isfinite(x))[0])
                q, v = self.q_prev, self.v_prev
                if not (np.all(np.isfinite(q)) and np.all(np.isfinite(v))):
                    q, v = self._q0, self._v0
                raise SimulationDiverged(self.t, q.copy(), v.copy(), f"{name}[{bad}] ({self._coordinate(name, bad)})",
                                         float(x[bad]), self.dt, self.integrator) from None
        if isinstance(error, InputError):
            if error.argument in ("f_ext", "prescribed"):
                raise error
            for name, x in (("tau_cmd", tau_cmd), ("a_cmd", a_cmd)):
                x = np.asarray(x, dtype=float)
                if x.shape != (self.model.nv,):
                    raise InputError(f"{name}: expected {self.model.nv}, got {x.size}", name) from None
                if not np.all(np.isfinite(x)):
                    raise InputError(f"{name}: holds NaN or Inf", name) from None
        big = max(float(np.max(np.abs(tau_cmd), initial=0.0)), float(np.max(np.abs(a_cmd), initial=0.0)))
        what = (f"the dynamics (a number overflowed inside the step; largest input {big:.3g}, "
                f"largest |v| {float(np.max(np.abs(self.v), initial=0.0)):.3g})")
        raise SimulationDiverged(self.t, self.q.copy(), self.v.copy(), what, float("inf"),
                                 self.dt, self.integrator) from None

    def _keep_loops_closed(self, active, q, v):
        """Project (q, v) back onto the enabled loops when their residual exceeds loop_tolerance;
        LoopFailure when that fails."""
        f, _, _, _ = constraint_system(self.model, q, np.zeros(self.model.nv), active)
        hol = np.isfinite(f)
        residual = float(np.linalg.norm(f[hol])) if hol.any() else 0.0
        tol = self._loop_tolerance
        if residual <= tol:
            return q, v
        worst, worst_norm, row = active[0].name, -1.0, 0
        for c in active:
            fc = f[row:row + c.rows]
            fc = fc[np.isfinite(fc)]
            nc = float(np.linalg.norm(fc)) if fc.size else 0.0
            if nc > worst_norm:
                worst, worst_norm = c.name, nc
            row += c.rows
        q2, v2 = project_constraints(self.model, q, v, active)
        after = constraint_residual(self.model, q2, active)
        if not after <= tol:
            raise LoopFailure(self.t, self.q.copy(), self.v.copy(), worst, residual, tol, self.dt,
                              self.integrator)
        self.loop_projections += 1
        self.last_loop_projection = (self.t + self.dt, worst, residual)
        return q2, v2

    def _advance(self, a_cmd, tau_cmd):
        """One step of the chosen integrator from (t, q, v): (q+, v+, a, tau, lambda) where a, tau,
        lambda belong to the start of the step."""
        model, h = self.model, self.dt
        q, v = self.q, self.v
        a1, tau1, lam1 = self._accel(q, v, a_cmd, tau_cmd)
        if self.integrator == "euler":
            q_new = integrate(model, q, h * v)
            v_new = v + h * a1
        elif self.integrator == "semi_implicit_euler":
            v_new = v + h * a1
            q_new = integrate(model, q, h * v_new)
        else:
            d1 = v
            xi = 0.5 * h * d1
            v2 = v + 0.5 * h * a1
            a2, _, _ = self._accel(integrate(model, q, xi), v2, a_cmd, tau_cmd)
            d2 = np.empty_like(v)
            dexp_inv(model._mb, xi, v2, d2)
            xi = 0.5 * h * d2
            v3 = v + 0.5 * h * a2
            a3, _, _ = self._accel(integrate(model, q, xi), v3, a_cmd, tau_cmd)
            d3 = np.empty_like(v)
            dexp_inv(model._mb, xi, v3, d3)
            xi = h * d3
            v4 = v + h * a3
            a4, _, _ = self._accel(integrate(model, q, xi), v4, a_cmd, tau_cmd)
            d4 = np.empty_like(v)
            dexp_inv(model._mb, xi, v4, d4)
            q_new = integrate(model, q, (h / 6.0) * (d1 + 2.0 * d2 + 2.0 * d3 + d4))
            v_new = v + (h / 6.0) * (a1 + 2.0 * a2 + 2.0 * a3 + a4)
        self._check(q_new, v_new, a1)
        return q_new, v_new, a1, tau1, lam1

    def _check(self, q, v, a):
        try:
            if state_bounded(q, v, a):
                return
        except TypeError:
            pass
        for name, x in (("q", q), ("v", v), ("a", a)):
            if np.all(np.isfinite(x)) and np.max(np.abs(x), initial=0.0) <= LIMIT:
                continue
            bad = int(np.flatnonzero(~np.isfinite(x) | (np.abs(np.nan_to_num(x, nan=np.inf)) > LIMIT))[0])
            coord = f"{name}[{bad}] ({self._coordinate(name, bad)})"
            raise SimulationDiverged(self.t, self.q.copy(), self.v.copy(), coord, float(x[bad]),
                                     self.dt, self.integrator)

    def _coordinate(self, name, idx):
        for j in self.model.joints:
            start, size = (j.idx_q, j.nq) if name == "q" else (j.idx_v, j.nv)
            if start <= idx < start + size:
                return f"joint '{j.name}' coordinate {idx - start}"
        return "?"
