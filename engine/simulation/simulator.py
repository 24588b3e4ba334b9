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

import numpy as np

from engine.algorithms.api import integrate, kinetic_energy, potential_energy
from engine.loops.constrained import project_constraints
from engine.loops.constraints import active_constraints, constraint_residual
from engine.errors import InputError, NumericalOverflow
from engine.stepping.inputs import Inputs, vector
from engine.stepping.python_step import PythonStep
from engine.stepping.compiled import CompiledSteps
from engine.simulation.settings import Settings, INTEGRATORS, STABILIZATIONS, LOOP_TOLERANCE  # noqa: F401
from engine.simulation.state import StepState
from engine.simulation.motor_torque import settle, settle_buffer, SETTLE_ROWS

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

    It composes: ``settings`` (engine.simulation.settings, checked on assignment), ``state`` (what a
    step reads and writes, engine.simulation.state), ``input`` (laws or callback,
    engine.stepping.inputs), the Python reference step ``python`` (engine.stepping.python_step), the
    compiled loop ``compiled`` (engine.stepping.compiled) and, with the ground or joint limits on,
    the contact stepper (engine.contact.python_step). Their fields are this object's attributes.
    """

    def __init__(self, model, dt=1e-3, integrator="rk4", q=None, v=None, ground=None, joint_limits=None,
                 joint_friction=None):
        self.model = model
        self._stepper = None
        self.settings = Settings(model, dt, integrator, ground, joint_limits, joint_friction)
        self.state = StepState(model)
        self.input = Inputs(model, self.state)
        self.compiled = CompiledSteps(model, self.settings, self.state, self.input, model.damping)
        self.python = PythonStep(model, self.settings, self.state, self.compiled.steploop)
        self._q0 = model.neutral() if q is None else vector(q, model.nq, "q")
        self._v0 = np.zeros(model.nv) if v is None else vector(v, model.nv, "v")
        self.reset()

    # ------------------------------------------------------------------ inputs
    @property
    def inputs(self):
        """The built-in input laws (engine.InputLaws of this model) evaluated inside the compiled
        loop, or None: tau_cmd and a_cmd are held."""
        return self.input.laws

    @inputs.setter
    def inputs(self, laws):
        self.input.set_laws(laws)

    @property
    def controller(self):
        """The Python control callback fn(t, q, v) -> (a_cmd, tau_cmd), or None."""
        return self.input.controller

    @controller.setter
    def controller(self, fn):
        self.input.controller = fn

    def set_control(self, fn):
        """Drive the simulation with a Python callback fn(t, q, v) -> (a_cmd, tau_cmd) (either may
        be None for zeros), called at every step; the step then runs in Python. None removes it."""
        self.input.set_control(fn)

    def set_mode(self, joint_name, mode):
        """mode "torque" (torque given, acceleration computed) or "acceleration" (prescribed)."""
        if mode not in ("torque", "acceleration"):
            raise ValueError(f"mode: expected 'torque' or 'acceleration', got {mode!r}")
        self.prescribed[self.model.v_slice(joint_name)] = (mode == "acceleration")

    def mode(self, joint_name):
        return "acceleration" if self.prescribed[self.model.v_slice(joint_name)].all() else "torque"

    # ------------------------------------------------------------------ contact and limits
    @property
    def contact_stats(self):
        """Last contact solve: rows, PGS iterations, polished, residual (m/s); and over the run:
        steps, max_iterations, worst_residual. None when neither ground nor limits are on."""
        return None if self._stepper is None else self._stepper.stats

    def contact_arrays(self):
        """The last step's contacts as arrays (``StepState.contact_arrays``)."""
        return self.state.contact_arrays()

    def _unilateral(self):
        cfg = self.settings
        if cfg.ground is None and not cfg.joint_limits and not cfg.friction_on:
            return None
        if self._stepper is None:
            from engine.contact.python_step import ContactStepper
            self._stepper = ContactStepper(self.model, self.settings, self.state, self.python, self.compiled,
                                           self.input)
        return self._stepper

    # ------------------------------------------------------------------ state
    def reset(self):
        """Back to the initial state (the one given at construction or by set_initial_state),
        projected onto the enabled constraints."""
        q, v = self._q0.copy(), self._v0.copy()
        if active_constraints(self.model):
            q, v = project_constraints(self.model, q, v)
        self.state.start(q, v)
        if self._stepper is not None:
            self._stepper.reset()

    def set_initial_state(self, q, v=None):
        self._q0 = vector(q, self.model.nq, "q")
        self._v0 = np.zeros(self.model.nv) if v is None else vector(v, self.model.nv, "v")

    def set_state(self, q, v=None, t=None):
        q = vector(q, self.model.nq, "q")
        self.q = integrate(self.model, q, np.zeros(self.model.nv))  # renormalises quaternions
        if v is not None:
            self.v = vector(v, self.model.nv, "v")
        if t is not None:
            self.t = float(t)

    def evaluate(self):
        """Hybrid dynamics (constrained when loops are enabled) at the current (t, q, v) with the
        current inputs, without stepping: sets ``a``, ``tau``, ``lam`` (and ``t_prev``, ``q_prev``,
        ``v_prev`` to the current state they now belong to) as the next step would compute them.
        For readouts after a reset, a new pose or a new input while paused. With the ground or joint
        limits on, the contact and limit forces are found within a step (a velocity-level solve), so
        the step is taken on trial and the state put back: ``a``, ``tau``, ``lam``, ``contacts`` and
        ``limit_forces`` are then those of the next step. Returns (a, tau)."""
        st = self.state
        if self._unilateral() is not None:
            return self._evaluate_by_trial_step()
        a_cmd, tau_cmd = self.input.evaluate(self.compiled.steploop())
        a, tau, lam = self.python.accel(st.q, st.v, a_cmd, tau_cmd)
        st.a, st.tau, st.lam = np.array(a, dtype=float), np.array(tau, dtype=float), np.array(lam, dtype=float)
        st.t_prev, st.q_prev, st.v_prev = st.t, st.q, st.v
        return st.a, st.tau

    def _evaluate_by_trial_step(self):
        st = self.state
        saved = st.save()
        try:
            self.step(1)
            out = (st.a.copy(), st.tau.copy(), np.array(st.lam, dtype=float), list(st.contacts),
                   np.array(st.limit_forces, dtype=float), np.array(st.blocked, dtype=bool),
                   np.array(st.friction_forces, dtype=float))
            # the inputs the trial step used (input laws evaluated at this state), kept with a and tau:
            # the ones left from the last step belong to the state before (as the smooth path's
            # input evaluation sets them too)
            cmds = (np.array(st.a_cmd, dtype=float), np.array(st.tau_cmd, dtype=float))
        finally:
            st.restore(saved)
        st.a, st.tau, st.lam, st.contacts, st.limit_forces, st.blocked, st.friction_forces = out
        st.a_cmd, st.tau_cmd = cmds
        st.t_prev, st.q_prev, st.v_prev = st.t, st.q, st.v
        return st.a, st.tau

    def project(self):
        """Move the current state onto the enabled constraints (positions and velocities)."""
        self.q, self.v = project_constraints(self.model, self.q, self.v)

    def constraint_residual(self):
        """|f(q)| of the enabled holonomic constraints (the drift meter)."""
        return constraint_residual(self.model, self.q)

    def baumgarte(self):
        """(alpha, beta) in use, or None."""
        return self.settings.baumgarte()

    def energy(self):
        """(kinetic, potential) of the current state."""
        return kinetic_energy(self.model, self.q, self.v), potential_energy(self.model, self.q)

    def energy_balance(self):
        """kinetic + potential - work - external_work + dissipated: constant in an exact solution."""
        ke, pe = self.energy()
        return ke + pe - self.work - self.external_work + self.dissipated

    # ------------------------------------------------------------------ stepping
    def step(self, n=1, record=None):
        """Advance n steps of dt. Raises SimulationDiverged (the state stays at the last good one).
        record: None, or arrays (t (>= n), q (>= n, nq), v, a, tau (>= n, nv)) that receive, for each
        step k, its starting state and the a, tau computed there (as ``t_prev``, ``q_prev``,
        ``v_prev``, ``a``, ``tau`` after that step)."""
        n = int(n)
        if n <= 0:
            return self
        drv = self.compiled
        if record is not None:
            record = drv.check_record(record, n)
        uni = self._unilateral()
        if uni is None and self.blocked.any():
            self.blocked = np.zeros(self.model.nv, dtype=bool)     # no limits: nothing overrides
        # with a ground or joint limits the compiled unilateral step (closed loops included) runs the
        # steps, else the compiled step loop
        packed = drv.loop_spec()          # None: no loops; False: loops only Python can step
        compiled = _COMPILED_STEP[0]
        compiled_uni = compiled and uni is not None and uni.driver.ok(packed)
        if not compiled:
            packed = False
        # joint limits without a ground: the plain step loop runs until a limit comes near (its
        # call costs less than the unilateral step's), then the unilateral step takes over
        # (joint friction acts at every step: then the unilateral step takes them all)
        limits_first = compiled_uni and self.settings.ground is None and not self.settings.friction_on
        loops = packed if (self.controller is None and uni is None) else False
        k = 0
        while k < n:
            if compiled_uni and drv.ok():
                # the steps the compiled step may take: none while a joint is past its stop or an
                # acceleration-prescribed joint is near its own (the Python step stops those), as
                # many as keep a prescribed joint's constant acceleration clear of its stops
                span = uni.driver.span(n - k)
                if span == 0 and limits_first:
                    # the compiled loop still runs the stretches with no limit near
                    rec = None if record is None else tuple(r[k:] for r in record)
                    done, near = drv.run(n - k, rec, packed, uni.candidates.limit_arrays(), uni.clear)
                    k += done
                    if not near:
                        continue
                if span > 0 and limits_first:
                    rec = None if record is None else tuple(r[k:] for r in record)
                    done, near = drv.run(span, rec, packed, uni.candidates.limit_arrays(), uni.clear)
                    k += done
                    if not near:
                        continue
                    span = uni.driver.span(n - k)
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
                    done, python_step = uni.driver.run(span, rec, packed)
                    if done and packed:
                        self._settle_tau(None if rec is None else tuple(r[:done] for r in rec))
                    k += done
                    if not python_step:
                        continue
            elif loops is not False and drv.ok():
                rec = None if record is None else tuple(r[k:] for r in record)
                done, python_step = drv.run(n - k, rec, loops)
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

    def _steploop(self):
        return self.compiled.steploop()

    def _settle_tau(self, record=None):
        """The motor torques of the last step (and of ``record``'s rows) settled:
        ``engine.simulation.motor_torque.settle``."""
        settle(self, record)

    def _step_once(self):
        """One step in Python: the reference step, or the contact stepper's with the ground or limits on."""
        st, cfg = self.state, self.settings
        a_cmd, tau_cmd = self.input.evaluate(self.compiled.steploop())
        try:
            uni = self._unilateral()
            if uni is None:
                q_new, v_new, a1, tau1, lam1, dW = self.python.advance(a_cmd, tau_cmd)
            else:
                q_new, v_new, a1, tau1, lam1, dW = uni.advance(a_cmd, tau_cmd)
        except (InputError, NumericalOverflow) as e:
            self.python.overflowed(e, a_cmd, tau_cmd, self._q0, self._v0)
        active = active_constraints(self.model)
        if cfg.project_every_step and active:
            q_new, v_new = project_constraints(self.model, q_new, v_new, prescribed=st.prescribed)
        elif active:
            q_new, v_new = self.python.keep_loops_closed(active, q_new, v_new)
        st.t_prev, st.q_prev, st.v_prev = st.t, st.q, st.v
        st.q, st.v = q_new, v_new
        st.a, st.tau, st.lam = a1, tau1, lam1
        if uni is not None:
            self._settle_tau()
        st.work += dW[0]
        st.dissipated += dW[1]
        st.external_work += dW[2]
        st.t += cfg.dt
        st.steps += 1


def _delegate(part, name, doc):
    """A Simulator attribute that is a field of one of its parts (settings or state)."""
    return property(lambda self: getattr(getattr(self, part), name),
                    lambda self, value: setattr(getattr(self, part), name, value), doc=doc)


for _name in Settings.NAMES:
    setattr(Simulator, _name, _delegate("settings", _name, getattr(Settings, _name).__doc__))
for _name in StepState.FIELDS + ("contacts",):
    setattr(Simulator, _name, _delegate("state", _name, f"StepState.{_name} (engine.simulation.state)"))
