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

Energy balance: ``work`` (by the joint torques the actuators supply, damping excluded),
``dissipated`` (by joint damping, >= 0, and by ground-contact and joint-limit impulses: each
impulse times the mean of its row's velocity before and after the step, which is 1/2 m v^2 for an
inelastic impact, friction times slip when sliding and 0 at rest) and ``external_work`` (by
``f_ext``) are integrated by the same scheme as the state (RK4's weighted stages), so ``kinetic +
potential - work - external_work + dissipated`` stays constant up to the integrator's error
(``energy_balance()``; a contact or limit step is first order).

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

The step loop is compiled (``engine.stepping.steploop``): ``step(n)`` advances n steps in one compiled call,
with the inputs held (``tau_cmd``, ``a_cmd``) or given by the built-in input laws (``inputs``, an
``engine.InputLaws``: constant, gravity compensation, PD, sine; hold, track, sine trajectory),
evaluated inside the loop. Python is entered at every step only for a Python control callback
(``set_control(fn)``) and for the loop steps the kernel declines; both paths compute the same
numbers.

Unilateral constraints (``engine/contact/python_step.py``): ``ground=engine.Ground(...)`` adds ground contact
with Coulomb friction, ``joint_limits`` (default: on when the model has limits; False turns them
off) keeps the joints within their limits. A step with a contact or a limit near is a velocity-level semi-implicit
Euler step with impulses (whatever ``integrator`` says: impulsive contact and set-valued friction do
not mix with RK4's stages, and this step is what contact simulators use); steps with nothing near
keep the chosen integrator. Both kinds of step run compiled, n steps per call
(``engine.contact.step.contact_advance``), except with Pfaffian constraints or a Python callback
(then each step runs in Python). Bodies touch bodies in both (engine.collision: every pair of
sphere, box, capsule, cylinder and convex mesh hull; ``model.self_collision`` switches a robot's
links against each other, off by default; engine.Scene adds free objects). After a step: ``contacts`` (engine.contact.geometry.Contact list),
``limit_forces`` (nv), ``blocked``, ``contact_stats``; ``limit_restitution`` (0 = limits do not bounce).
``joint_friction`` (default: on when the model has joint friction > 0) adds the joints' dry friction
as rows of the same step, at every step; its torques in ``friction_forces`` (nv), its work in
``dissipated``.

Limits and prescribed joints: the stop wins. An acceleration-prescribed joint whose prescription
would carry it past a limit is held at the stop instead (its prescription can not be met there);
it follows its prescription again as soon as that points away from the stop. ``blocked`` (nv
bools) marks the coordinates whose prescription a limit overrode at the last step; there the motor
keeps the torque its prescription asks (``tau``: hybrid dynamics of the unblocked motion) and
``limit_forces`` holds the torque the stop exerts (the rest of what holds the joint: for a lone
hinge held at rest, ID(q, 0, 0) - ID(q, 0, a_prescribed)). The compiled step can not stop a
prescribed joint: steps that could bring one onto its stop run in Python (with a constant
prescribed acceleration the compiled step takes the steps that keep it clear; with input laws,
without a ground, the compiled loop runs while no limit is near). A joint found past its stop (a
state set there) is brought back into its range by its position over the next steps, v untouched
(``engine.contact.python_step.LIMIT_RETURN_TIME``), not held where it is; the energy that move changes is
booked in ``dissipated``.

Settings are checked when they are assigned (``dt``, ``integrator``, ``stabilization``,
``baumgarte_time``, ``project_every_step``, ``loop_tolerance``): a bad value raises ValueError
naming the attribute and what it accepts. A finite input that overflows inside a step (a torque
of 1e306) is a divergence, reported with the last good state, never blamed on the input.
"""
from __future__ import annotations

import math

import numpy as np

from engine.kernel.layout import PYTHON_STEP, UNILATERAL_STEP
from engine.algorithms.api import (forward_dynamics, hybrid_dynamics, integrate, kinetic_energy,
                                   potential_energy, body_velocities)
from engine.loops.constrained import project_constraints, baumgarte_gains, _forward_python, _hybrid_python
from engine.loops.constraints import active_constraints, constraint_residual, constraint_system
from engine.algorithms.liegroup import dexp_inv_into, state_bounded, LIMIT
from engine.errors import InputError, SimulationDiverged, NumericalOverflow, LoopFailure
from engine.stepping.input_laws import InputLaws
from engine.maths.spatial import Ad, se3_inv
from engine.stepping.driver import StepLoop
from engine.contact.geometry import Contact, contact_arrays
from engine.simulation.motor_torque import settle, settle_buffer, SETTLE_ROWS

INTEGRATORS = ("rk4", "semi_implicit_euler", "euler")
STABILIZATIONS = ("baumgarte", "none")
LOOP_TOLERANCE = 1e-4      # of the model's characteristic length

# Whether step() may run the compiled step loops (engine.stepping.steploop, engine.contact.step). Always,
# but for the window's first start on an empty kernel cache (app/gui.py): there the simulation runs
# through the Python step, which calls only the dynamics kernels, until the compiled loops' kernels
# are in the cache and loaded; both paths compute the same numbers (tests/test_compiled_step.py).
_COMPILED_STEP = [True]


def set_compiled_step(enabled):
    """Let step() use the compiled step loops (True, the default) or only the Python step (False)."""
    _COMPILED_STEP[0] = bool(enabled)


def compiled_step():
    """True when step() may use the compiled step loops (set_compiled_step)."""
    return _COMPILED_STEP[0]


def _model_has_friction(model):
    """Whether any joint coordinate of the model has dry friction f > 0."""
    return any(j.friction is not None and np.any(np.asarray(j.friction, dtype=float) > 0.0) for j in model.joints)


def _writable(x, dtype):
    """x as a writable contiguous array of dtype (the compiled loop's signature takes writable
    arrays; it never writes the inputs)."""
    a = np.ascontiguousarray(x, dtype=dtype)
    return a if a.flags.writeable else a.copy()


class Simulator:
    """Simulate a model: ``sim = Simulator(model, dt=1e-3, integrator="rk4"); sim.step(1000)``.

    State: ``t``, ``q`` (nq), ``v`` (nv). After a step, ``a`` and ``tau`` hold the accelerations
    and the joint torques at the start of that step (``t_prev``, ``q_prev``, ``v_prev``; after
    ``evaluate()`` the current state). For an acceleration-prescribed joint ``tau`` is what its motor
    supplies, damping included: ID(q_prev, v_prev, a, f_ext + the step's contact wrenches)
    - A^T lam - limit_forces - friction_forces + d v_prev, equal to ``engine.inverse_dynamics`` given the ground's
    wrenches (``engine.simulation.motor_torque``).
    Limits: ``limit_forces`` (nv, the torque or force each stop exerted at the last step) and
    ``blocked`` (nv bools: the acceleration-prescribed coordinates whose prescription a stop
    overrode at the last step; the stop wins, see the module text).
    Inputs: ``prescribed`` (bool per velocity coordinate), ``tau_cmd`` and ``a_cmd`` (held over a
    step); or ``inputs``, the built-in input laws (``engine.InputLaws``; they set ``prescribed``);
    or a Python callback ``set_control(fn)``, fn(t, q, v) -> (a_cmd, tau_cmd) called at every step
    (``controller`` is the same attribute); ``f_ext`` a dict of body wrenches (body frame) applied
    during the step.
    """

    def __init__(self, model, dt=1e-3, integrator="rk4", q=None, v=None, ground=None, joint_limits=None,
                 joint_friction=None):
        self.model = model
        self._stepper = None
        self.ground = ground
        self.joint_limits = joint_limits
        self.joint_friction = joint_friction
        self.limit_restitution = 0.0
        self.contacts = []
        self.limit_forces = np.zeros(model.nv)
        self.friction_forces = np.zeros(model.nv)
        self.blocked = np.zeros(model.nv, dtype=bool)
        self.dt = dt
        self.integrator = integrator
        nv = model.nv
        self.prescribed = np.zeros(nv, dtype=bool)
        self.tau_cmd = np.zeros(nv)
        self.a_cmd = np.zeros(nv)
        self.controller = None
        self._inputs_laws = None
        self._loop = None
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
    def contacts(self):
        """The last step's active contacts (list of engine.contact.geometry.Contact). After a compiled step
        they are built from its arrays on first access (``contact_arrays`` reads them directly)."""
        if self._contacts is None:
            bodies, points, normals, forces, pens = self._contact_arrays
            names = self.model.body_names
            others = self._contact_others
            self._contacts = [Contact(names[int(b) - 1], points[k].copy(), normals[k].copy(), forces[k].copy(),
                                      float(pens[k]), "ground" if others is None or others[k] == 0
                                      else names[int(others[k]) - 1]) for k, b in enumerate(bodies)]
        return self._contacts

    @contacts.setter
    def contacts(self, value):
        self._contacts = list(value)
        self._contact_arrays = None

    def _set_contact_arrays(self, bodies, points, normal, forces, pens, others=None):
        """The compiled step's contacts: body indices (1-based), points, the normals (one per contact,
        or the ground's for all), forces, penetrations and the other bodies (0: the ground) (arrays
        the simulator keeps); ``contacts`` lists them when asked."""
        normals = np.empty(points.shape)
        normals[:] = normal
        self._contacts = None
        self._contact_arrays = (bodies, points, normals, forces, pens)
        self._contact_others = others

    def contact_arrays(self):
        """The last step's contacts as arrays (body indices, 1-based (k,); points (k, 3); normals (k, 3);
        forces (k, 3); penetrations (k,)), the same numbers as ``contacts`` without building a list
        (other bodies than the ground are not told apart here)."""
        if self._contact_arrays is None:
            self._contact_arrays = contact_arrays(self.model, self._contacts)
        return self._contact_arrays

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
            value = any(j.kind in ("revolute", "prismatic") and j.nv == 1
                        and (np.isfinite(j.lower[0]) or np.isfinite(j.upper[0])) for j in self.model.joints)
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
            value = _model_has_friction(self.model)
        if not isinstance(value, (bool, np.bool_)):
            raise ValueError(f"joint_friction: expected True, False or None, got {value!r}")
        self._joint_friction = bool(value)
        self._friction_on = self._joint_friction and _model_has_friction(self.model)

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
        if self._ground is None and not self._joint_limits and not self._friction_on:
            return None
        if self._stepper is None:
            from engine.contact.python_step import ContactStepper
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

    @property
    def inputs(self):
        """The built-in input laws (engine.InputLaws of this model) evaluated inside the compiled
        loop, or None: tau_cmd and a_cmd are held."""
        return self._inputs_laws

    @inputs.setter
    def inputs(self, laws):
        if laws is not None:
            if not isinstance(laws, InputLaws):
                raise ValueError(f"inputs: expected an engine.InputLaws or None, got {type(laws).__name__}")
            if laws.model.nv != self.model.nv or laws.model.nq != self.model.nq:
                raise ValueError(f"inputs: the laws were made for model '{laws.model.name}' "
                                 f"(nq {laws.model.nq}, nv {laws.model.nv}), not for '{self.model.name}'")
            self.prescribed[:] = laws.prescribed
        self._inputs_laws = laws

    def set_control(self, fn):
        """Drive the simulation with a Python callback fn(t, q, v) -> (a_cmd, tau_cmd) (either may
        be None for zeros), called at every step; the step then runs in Python. None removes it."""
        if fn is not None and not callable(fn):
            raise ValueError(f"set_control: expected a callable fn(t, q, v) -> (a_cmd, tau_cmd) or None, "
                             f"got {type(fn).__name__}")
        self.controller = fn

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
        self.friction_forces = np.zeros(self.model.nv)
        self.blocked = np.zeros(self.model.nv, dtype=bool)
        if self._stepper is not None:
            self._stepper.reset()
        self.t_prev, self.q_prev, self.v_prev = self.t, self.q, self.v   # state a and tau belong to
        self.work = 0.0            # by the actuators' joint torques (damping excluded)
        self.dissipated = 0.0      # by joint damping and by contact and limit impulses
        self.external_work = 0.0   # by f_ext

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

    def evaluate(self):
        """Hybrid dynamics (constrained when loops are enabled) at the current (t, q, v) with the
        current inputs, without stepping: sets ``a``, ``tau``, ``lam`` (and ``t_prev``, ``q_prev``,
        ``v_prev`` to the current state they now belong to) as the next step would compute them.
        For readouts after a reset, a new pose or a new input while paused. With the ground or joint
        limits on, the contact and limit forces are found within a step (a velocity-level solve), so
        the step is taken on trial and the state put back: ``a``, ``tau``, ``lam``, ``contacts`` and
        ``limit_forces`` are then those of the next step. Returns (a, tau)."""
        if self._unilateral() is not None:
            return self._evaluate_by_trial_step()
        a_cmd, tau_cmd = self._inputs()
        a, tau, lam = self._accel(self.q, self.v, a_cmd, tau_cmd)
        self.a, self.tau, self.lam = np.array(a, dtype=float), np.array(tau, dtype=float), np.array(lam, dtype=float)
        self.t_prev, self.q_prev, self.v_prev = self.t, self.q, self.v
        return self.a, self.tau

    def _evaluate_by_trial_step(self):
        saved = {k: (x, x.copy() if isinstance(x, np.ndarray) else None) for k, x in vars(self).items()}
        try:
            self.step(1)
            out = (self.a.copy(), self.tau.copy(), np.array(self.lam, dtype=float), list(self.contacts),
                   np.array(self.limit_forces, dtype=float), np.array(self.blocked, dtype=bool),
                   np.array(self.friction_forces, dtype=float))
            # the inputs the trial step used (input laws evaluated at this state), kept with a and tau:
            # the ones left from the last step belong to the state before (as the smooth path's
            # _inputs() sets them too)
            cmds = (np.array(self.a_cmd, dtype=float), np.array(self.tau_cmd, dtype=float))
        finally:
            for k, (x, data) in saved.items():       # every array put back in place (others may hold it)
                if data is not None and x.flags.writeable:
                    x[...] = data
                vars(self)[k] = x
        self.a, self.tau, self.lam, self.contacts, self.limit_forces, self.blocked, self.friction_forces = out
        self.a_cmd, self.tau_cmd = cmds
        self.t_prev, self.q_prev, self.v_prev = self.t, self.q, self.v
        return self.a, self.tau

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

    def energy_balance(self):
        """kinetic + potential - work - external_work + dissipated: constant in an exact solution."""
        ke, pe = self.energy()
        return ke + pe - self.work - self.external_work + self.dissipated

    def _powers(self, q, v, tau):
        """(actuator power tau . v, damping power d v . v, power of f_ext) at one stage."""
        p_act = float(tau @ v)
        p_damp = float(self._damping @ (v * v)) if self._has_damping else 0.0
        p_ext = 0.0
        if self.f_ext:
            Vb = body_velocities(self.model, q, v)
            for name, w in self.f_ext.items():
                f = self.model.frames[name]
                if f.body == 0:
                    continue
                V = Vb[self.model.body_names[f.body - 1]]
                if f.offset:
                    V = Ad(se3_inv(f.placement)) @ V
                p_ext += float(np.asarray(w, dtype=float) @ V)
        return p_act, p_damp, p_ext

    # ------------------------------------------------------------------ dynamics
    def _accel(self, q, v, a_cmd, tau_cmd):
        """(a, tau, lambda): hybrid dynamics (constrained when loops are enabled) with damping as a
        passive torque."""
        model = self.model
        tau_in = tau_cmd - self._damping * v if self._has_damping else tau_cmd
        lam = np.zeros(0)
        active = active_constraints(model)
        if active:
            gains = self.baumgarte()
            loop = self._steploop()
            packed = loop.packed_loops(active)
            out = None
            if packed is not None:
                out = loop.loop_dynamics(packed, q, v, _writable(self.prescribed, np.bool_),
                                         _writable(a_cmd, np.float64), _writable(tau_in, np.float64),
                                         self.f_ext, gains)
            if out is not None:
                a, tau, lam = out
                if not self.prescribed.any():
                    tau = tau_cmd
            elif not self.prescribed.any():       # the rank-revealing path (the kernel declined)
                a, lam = _forward_python(model, q, v, tau_in, self.f_ext, gains)
                tau = tau_cmd
            else:
                a, tau, lam = _hybrid_python(model, q, v, self.prescribed, a_cmd, tau_in, self.f_ext, gains)
        elif not self.prescribed.any():
            return forward_dynamics(model, q, v, tau_in, self.f_ext), tau_cmd, lam
        else:
            a, tau = hybrid_dynamics(model, q, v, self.prescribed, a_cmd, tau_in, self.f_ext)
        if self._has_damping:
            tau = np.where(self.prescribed, tau + self._damping * v, tau_cmd)
        return a, tau, lam

    def _settle_tau(self, record=None):
        """The motor torques of the last step (and of ``record``'s rows) settled:
        ``engine.simulation.motor_torque.settle``."""
        settle(self, record)

    def _inputs(self):
        laws = self._inputs_laws
        if self.controller is None and laws is not None and not laws.is_zero():
            self.prescribed[:] = laws.prescribed
            tau_base, acc_base = laws.constant_parts()
            self.a_cmd, self.tau_cmd = self._steploop().evaluate(laws, self.t, self.q, self.v, tau_base, acc_base)
        if self.controller is not None:
            out = self.controller(self.t, self.q, self.v)
            if out is not None:
                a_cmd, tau_cmd = out
                nv = self.model.nv
                self.a_cmd = np.zeros(nv) if a_cmd is None else self._vec(a_cmd, nv, "a_cmd")
                self.tau_cmd = np.zeros(nv) if tau_cmd is None else self._vec(tau_cmd, nv, "tau_cmd")
        return self.a_cmd, self.tau_cmd

    def step(self, n=1, record=None):
        """Advance n steps of dt. Raises SimulationDiverged (the state stays at the last good one).
        record: None, or arrays (t (>= n), q (>= n, nq), v, a, tau (>= n, nv)) that receive, for each
        step k, its starting state and the a, tau computed there (as ``t_prev``, ``q_prev``,
        ``v_prev``, ``a``, ``tau`` after that step)."""
        n = int(n)
        if n <= 0:
            return self
        if record is not None:
            record = self._check_record(record, n)
        uni = self._unilateral()
        if uni is None and self.blocked.any():
            self.blocked = np.zeros(self.model.nv, dtype=bool)     # no limits: nothing overrides
        # with a ground or joint limits the compiled unilateral step (closed loops included) runs the
        # steps, else the compiled step loop
        packed = self._loop_spec()          # None: no loops; False: loops only Python can step
        compiled = _COMPILED_STEP[0]
        compiled_uni = compiled and uni is not None and uni.compiled_ok(self, packed)
        if not compiled:
            packed = False
        # joint limits without a ground: the plain step loop runs until a limit comes near (its
        # call costs less than the unilateral step's), then the unilateral step takes over
        # (joint friction acts at every step: then the unilateral step takes them all)
        limits_first = compiled_uni and self._ground is None and not self._friction_on
        loops = packed if (self.controller is None and uni is None) else False
        k = 0
        while k < n:
            if compiled_uni and self._compiled_ok():
                # the steps the compiled step may take: none while a joint is past its stop or an
                # acceleration-prescribed joint is near its own (the Python step stops those), as
                # many as keep a prescribed joint's constant acceleration clear of its stops
                span = uni.compiled_span(self, n - k)
                if span == 0 and limits_first:
                    # the compiled loop still runs the stretches with no limit near
                    rec = None if record is None else tuple(r[k:] for r in record)
                    done, near = self._step_compiled(n - k, rec, packed, uni.limit_arrays())
                    k += done
                    if not near:
                        continue
                if span > 0 and limits_first:
                    rec = None if record is None else tuple(r[k:] for r in record)
                    done, near = self._step_compiled(span, rec, packed, uni.limit_arrays())
                    k += done
                    if not near:
                        continue
                    span = uni.compiled_span(self, n - k)
                if span > 0:
                    if record is not None:
                        rec = tuple(r[k:] for r in record)
                    elif packed and span > 1 and self.prescribed.any():
                        # closed loops: rows of its own, so that every step's torque and work are
                        # settled here (engine.simulation.motor_torque); without loops the compiled step
                        # settles the prescribed joints' torques itself
                        span = min(span, SETTLE_ROWS)
                        rec = settle_buffer(self)
                    else:
                        rec = None
                    done, python_step = uni.run_compiled(self, span, rec, packed)
                    if done and packed:
                        self._settle_tau(None if rec is None else tuple(r[:done] for r in rec))
                    k += done
                    if not python_step:
                        continue
            elif loops is not False and self._compiled_ok():
                rec = None if record is None else tuple(r[k:] for r in record)
                done, python_step = self._step_compiled(n - k, rec, loops)
                k += done
                if not python_step:
                    continue
            self._step_once()       # a Python callback, Pfaffian rows, or one step the loop declined
            if record is not None:
                record[0][k] = self.t_prev
                record[1][k] = self.q_prev
                record[2][k] = self.v_prev
                record[3][k] = self.a
                record[4][k] = self.tau
            k += 1
        return self

    def _loop_spec(self):
        """None without enabled loops; the packed loops for the compiled step; False when the
        step must run in Python (a Pfaffian constraint, projection after every step)."""
        active = active_constraints(self.model)
        if not active:
            return None
        if self._project_every_step:
            return False
        packed = self._steploop().packed_loops(active)
        return False if packed is None else packed

    def _steploop(self):
        if self._loop is None or self._loop.model is not self.model:
            self._loop = StepLoop(self.model)
        return self._loop

    def _check_record(self, record, n):
        nq, nv = self.model.nq, self.model.nv
        try:
            t, q, v, a, tau = record
        except (TypeError, ValueError):
            raise InputError("record: expected a tuple of arrays (t, q, v, a, tau)", "record") from None
        for name, x, width in (("t", t, None), ("q", q, nq), ("v", v, nv), ("a", a, nv), ("tau", tau, nv)):
            shape = (n,) if width is None else (n, width)
            if not (isinstance(x, np.ndarray) and x.dtype == np.float64 and x.flags.c_contiguous
                    and x.flags.writeable and x.ndim == len(shape) and x.shape[0] >= n
                    and x.shape[1:] == shape[1:]):
                raise InputError(f"record {name}: expected a writable float64 array of shape "
                                 f"({'>= ' + str(n)}{'' if width is None else ', ' + str(width)})", "record")
        return t, q, v, a, tau

    def _compiled_ok(self):
        """The compiled loop handles the state as the Python step would (finite state, valid
        inputs); anything unusual goes through the Python step, which names the problem.
        Finiteness by one dot product per vector (NaN and inf propagate into it; a finite
        state so large that x.x overflows goes the Python way too): ~1 us against np.isfinite's 4."""
        nv = self.model.nv
        q, v = self.q, self.v
        if not (isinstance(q, np.ndarray) and isinstance(v, np.ndarray) and q.shape == (self.model.nq,)
                and v.shape == (nv,) and q.dtype.kind == "f" and v.dtype.kind == "f"):
            return False
        laws = self._inputs_laws
        dot = np.dot                     # np.dot: 0.9 us per call here, the @ operator 1.35
        if laws is not None and not laws.is_zero():
            return math.isfinite(dot(q, q) + dot(v, v))
        tau, a = np.asarray(self.tau_cmd), np.asarray(self.a_cmd)
        if tau.shape != (nv,) or a.shape != (nv,) or tau.dtype.kind not in "fiu" or a.dtype.kind not in "fiu":
            return False
        if not math.isfinite(dot(q, q) + dot(v, v) + dot(tau, tau) + dot(a, a)):
            return False
        return np.shape(self.prescribed) == (nv,)

    def _step_compiled(self, n, record, loops=None, limits=None):
        """Up to n steps in the compiled loop: (steps taken, whether the next step needs Python or,
        with limits = (q index, v index, lower, upper), the unilateral step)."""
        model = self.model
        loop = self._steploop()
        laws = self._inputs_laws
        if laws is not None and not laws.is_zero():
            self.prescribed[:] = laws.prescribed
            tau_base, acc_base = laws.constant_parts()
        else:
            laws = None
            tau_base = _writable(self.tau_cmd, np.float64)
            acc_base = _writable(self.a_cmd, np.float64)
        prescribed = _writable(self.prescribed, np.bool_)
        if self._damping.shape != (model.nv,):
            self._damping = model.damping
        q = np.array(self.q, dtype=np.float64)
        v = np.array(self.v, dtype=np.float64)
        loop.load_fext(self.f_ext)
        t0 = self.t
        gains = self.baumgarte() if loops is not None else None
        t, done, st = loop.run(q, v, t0, self.dt, n, self.integrator, prescribed, self._damping, tau_base,
                               acc_base, laws, record=record, loops=loops, gains=gains, tol=self._loop_tolerance,
                               limits=limits)
        if done:
            self.t_prev, self.q_prev, self.v_prev = float(loop.tv[1]), loop.q_prev.copy(), loop.v_prev.copy()
            self.q, self.v, self.t = q, v, float(t)
            self.a, self.tau = loop.a.copy(), loop.tau.copy()
            self.lam = loop.lam.copy() if loops is not None else np.zeros(0)
            self.steps += done
            self.work += float(loop.energy[0])
            self.dissipated += float(loop.energy[1])
            self.external_work += float(loop.energy[2])
            if loop.proj[0] > 0.0:          # the compiled loop projected back onto the loops
                self._note_projections(loop.proj)
            if laws is not None:
                nq, nv = model.nq, model.nv
                self.a_cmd = loop.bad[nq + 2 * nv:nq + 3 * nv].copy()
                self.tau_cmd = loop.bad[nq + 3 * nv:].copy()
        if done and limits is not None:
            self._stepper.clear(self)       # smooth steps: no limit force, no warm start
        if st == PYTHON_STEP or st == UNILATERAL_STEP:
            return done, True
        if st:
            loop.raise_for(st, self.t, self.q, self.v, self.dt, self.integrator, prescribed)
        return done, False

    def _note_projections(self, proj):
        """Record the drift projections of a compiled run: proj = (count, time of the last, index of
        its worst constraint among the active ones, that constraint's residual before)."""
        self.loop_projections += int(proj[0])
        worst = active_constraints(self.model)[int(proj[2])]     # packed in this order
        self.last_loop_projection = (float(proj[1]), worst.name, float(proj[3]))

    def _step_once(self):
        a_cmd, tau_cmd = self._inputs()
        try:
            uni = self._unilateral()
            if uni is None:
                q_new, v_new, a1, tau1, lam1, dW = self._advance(a_cmd, tau_cmd)
            else:
                q_new, v_new, a1, tau1, lam1, dW = uni.advance(self, a_cmd, tau_cmd)
        except (InputError, NumericalOverflow) as e:
            self._overflowed(e, a_cmd, tau_cmd)
        active = active_constraints(self.model)
        if self.project_every_step and active:
            q_new, v_new = project_constraints(self.model, q_new, v_new, prescribed=self.prescribed)
        elif active:
            q_new, v_new = self._keep_loops_closed(active, q_new, v_new)
        self.t_prev, self.q_prev, self.v_prev = self.t, self.q, self.v
        self.q, self.v = q_new, v_new
        self.a, self.tau, self.lam = a1, tau1, lam1
        if uni is not None:
            self._settle_tau()
        self.work += dW[0]
        self.dissipated += dW[1]
        self.external_work += dW[2]
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
        q2, v2 = project_constraints(self.model, q, v, active, prescribed=self.prescribed)
        after = constraint_residual(self.model, q2, active)
        if not after <= tol:
            raise LoopFailure(self.t, self.q.copy(), self.v.copy(), worst, residual, tol, self.dt,
                              self.integrator)
        self.loop_projections += 1
        self.last_loop_projection = (self.t + self.dt, worst, residual)
        return q2, v2

    def _advance(self, a_cmd, tau_cmd):
        """One step of the chosen integrator from (t, q, v): (q+, v+, a, tau, lambda, energy) where a,
        tau, lambda belong to the start of the step and energy is the step's (work, dissipated,
        external work), integrated by the same scheme."""
        model, h = self.model, self.dt
        q, v = self.q, self.v
        a1, tau1, lam1 = self._accel(q, v, a_cmd, tau_cmd)
        P1 = self._powers(q, v, tau1)
        if self.integrator == "euler":
            q_new = integrate(model, q, h * v)
            v_new = v + h * a1
            dW = [h * p for p in P1]
        elif self.integrator == "semi_implicit_euler":
            v_new = v + h * a1
            q_new = integrate(model, q, h * v_new)
            dW = [h * p for p in P1]
        else:
            scratch = (np.empty(6), np.empty(6), np.empty(12))     # dexp_inv_into's work space
            d1 = v
            xi = 0.5 * h * d1
            v2 = v + 0.5 * h * a1
            q2 = integrate(model, q, xi)
            a2, tau2, _ = self._accel(q2, v2, a_cmd, tau_cmd)
            P2 = self._powers(q2, v2, tau2)
            d2 = np.empty_like(v)
            dexp_inv_into(model._mb, xi, v2, d2, *scratch)
            xi = 0.5 * h * d2
            v3 = v + 0.5 * h * a2
            q3 = integrate(model, q, xi)
            a3, tau3, _ = self._accel(q3, v3, a_cmd, tau_cmd)
            P3 = self._powers(q3, v3, tau3)
            d3 = np.empty_like(v)
            dexp_inv_into(model._mb, xi, v3, d3, *scratch)
            xi = h * d3
            v4 = v + h * a3
            q4 = integrate(model, q, xi)
            a4, tau4, _ = self._accel(q4, v4, a_cmd, tau_cmd)
            P4 = self._powers(q4, v4, tau4)
            d4 = np.empty_like(v)
            dexp_inv_into(model._mb, xi, v4, d4, *scratch)
            q_new = integrate(model, q, (h / 6.0) * (d1 + 2.0 * d2 + 2.0 * d3 + d4))
            v_new = v + (h / 6.0) * (a1 + 2.0 * a2 + 2.0 * a3 + a4)
            dW = [(h / 6.0) * (p1 + 2.0 * p2 + 2.0 * p3 + p4) for p1, p2, p3, p4 in zip(P1, P2, P3, P4)]
        self._check(q_new, v_new, a1)
        return q_new, v_new, a1, tau1, lam1, dW

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
