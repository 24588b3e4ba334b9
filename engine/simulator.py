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
``dissipated`` (by joint damping, >= 0) and ``external_work`` (by ``f_ext``) are integrated by the
same scheme as the state (RK4's weighted stages), so ``kinetic + potential - work - external_work
+ dissipated`` stays constant up to the integrator's error (``energy_balance()``).

Closed loops: the model's enabled constraints are honoured with Lagrange multipliers (``lam``),
Baumgarte stabilisation (critically damped, time constant ``baumgarte_time``, default 0.1 s with
RK4 and 10 dt with the Euler integrators, always clamped to >= 2 dt: gains that scale as 1/dt would
amplify RK4's stage errors along the constraints; ``stabilization = "none"`` turns it off), projection of the initial state onto
the constraints, and optional projection after every step (``project_every_step``).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .api import (forward_dynamics, hybrid_dynamics, integrate, kinetic_energy, potential_energy,
                  body_velocities)
from .constrained import (constrained_forward_dynamics, constrained_hybrid_dynamics, project_constraints,
                          baumgarte_gains)
from .constraints import active_constraints, constraint_residual
from .algorithms.common import MODEL_T, VEC_T
from .errors import InputError, SimulationDiverged
from .joints import SPHERICAL, FREE, PLANAR
from .model import MODEL_DTYPE
from .spatial import ad_into, Ad, se3_inv

INTEGRATORS = ("rk4", "semi_implicit_euler", "euler")
LIMIT = 1e10


@njit((MODEL_T, VEC_T, VEC_T, VEC_T), cache=True)
def dexp_inv(mbytes, xi, v, out):
    """out = dexp^-1_{-xi}(v) ~ v + 1/2 [xi, v] + 1/12 [xi, [xi, v]] joint by joint (identity for
    joints whose group is commutative)."""
    m = mbytes.view(MODEL_DTYPE)
    x = np.zeros(6)
    g = np.zeros(6)       # xi as a twist of se(3)
    b1 = np.zeros(6)
    b2 = np.zeros(6)
    for k in range(v.shape[0]):
        out[k] = v[k]
    for i in range(1, m.shape[0]):
        mb = m[i]
        code = mb.code
        iv = mb.iv
        if code != SPHERICAL and code != FREE and code != PLANAR:
            continue
        for k in range(6):
            x[k] = 0.0
        w0 = w1 = w2 = u0 = u1 = u2 = 0.0
        if code == SPHERICAL:
            w0, w1, w2 = xi[iv], xi[iv + 1], xi[iv + 2]
            x[0], x[1], x[2] = v[iv], v[iv + 1], v[iv + 2]
        elif code == FREE:
            w0, w1, w2, u0, u1, u2 = xi[iv], xi[iv + 1], xi[iv + 2], xi[iv + 3], xi[iv + 4], xi[iv + 5]
            for k in range(6):
                x[k] = v[iv + k]
        else:  # planar (vx, vy, omega) embedded as the twist ((0, 0, omega), (vx, vy, 0))
            u0, u1, w2 = xi[iv], xi[iv + 1], xi[iv + 2]
            x[3], x[4], x[2] = v[iv], v[iv + 1], v[iv + 2]
        g[0], g[1], g[2], g[3], g[4], g[5] = w0, w1, w2, u0, u1, u2
        ad_into(g, x, b1)
        ad_into(g, b1, b2)
        for k in range(6):
            x[k] += 0.5 * b1[k] + b2[k] / 12.0
        if code == SPHERICAL:
            out[iv], out[iv + 1], out[iv + 2] = x[0], x[1], x[2]
        elif code == FREE:
            for k in range(6):
                out[iv + k] = x[k]
        else:
            out[iv], out[iv + 1], out[iv + 2] = x[3], x[4], x[2]


@njit((VEC_T, VEC_T, VEC_T), cache=True)
def _bounded(q, v, a):
    """True when every entry is finite and |x| <= 1e10 (NaN fails the comparison)."""
    for x in (q, v, a):
        for k in range(x.shape[0]):
            if not (abs(x[k]) <= LIMIT):
                return False
    return True


class Simulator:
    """Simulate a model: ``sim = Simulator(model, dt=1e-3, integrator="rk4"); sim.step(1000)``.

    State: ``t``, ``q`` (nq), ``v`` (nv). After a step, ``a`` and ``tau`` hold the accelerations
    and the joint torques at the start of that step (for acceleration-prescribed joints the torque
    hybrid dynamics computed, damping included: what a motor must supply).
    Inputs: ``prescribed`` (bool per velocity coordinate), ``tau_cmd`` and ``a_cmd`` (held over a
    step), or ``controller(t, q, v) -> (a_cmd, tau_cmd)`` called at every step; ``f_ext`` a dict of
    body wrenches (body frame) applied during the step.
    """

    def __init__(self, model, dt=1e-3, integrator="rk4", q=None, v=None):
        if integrator not in INTEGRATORS:
            raise ValueError(f"integrator: expected one of {INTEGRATORS}, got {integrator!r}")
        dt = float(dt)
        if not (np.isfinite(dt) and dt > 0):
            raise ValueError(f"dt: expected a positive time step, got {dt!r}")
        self.model = model
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
        self._q0 = model.neutral() if q is None else self._vec(q, model.nq, "q")
        self._v0 = np.zeros(nv) if v is None else self._vec(v, nv, "v")
        self.reset()

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
        self.t_prev, self.q_prev, self.v_prev = self.t, self.q, self.v   # state a and tau belong to
        self.work = 0.0            # by the actuators' joint torques (damping excluded)
        self.dissipated = 0.0      # by joint damping
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
        model, h = self.model, self.dt
        q, v = self.q, self.v
        a_cmd, tau_cmd = self._inputs()
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
            d1 = v
            xi = 0.5 * h * d1
            v2 = v + 0.5 * h * a1
            q2 = integrate(model, q, xi)
            a2, tau2, _ = self._accel(q2, v2, a_cmd, tau_cmd)
            P2 = self._powers(q2, v2, tau2)
            d2 = np.empty_like(v)
            dexp_inv(model._mb, xi, v2, d2)
            xi = 0.5 * h * d2
            v3 = v + 0.5 * h * a2
            q3 = integrate(model, q, xi)
            a3, tau3, _ = self._accel(q3, v3, a_cmd, tau_cmd)
            P3 = self._powers(q3, v3, tau3)
            d3 = np.empty_like(v)
            dexp_inv(model._mb, xi, v3, d3)
            xi = h * d3
            v4 = v + h * a3
            q4 = integrate(model, q, xi)
            a4, tau4, _ = self._accel(q4, v4, a_cmd, tau_cmd)
            P4 = self._powers(q4, v4, tau4)
            d4 = np.empty_like(v)
            dexp_inv(model._mb, xi, v4, d4)
            q_new = integrate(model, q, (h / 6.0) * (d1 + 2.0 * d2 + 2.0 * d3 + d4))
            v_new = v + (h / 6.0) * (a1 + 2.0 * a2 + 2.0 * a3 + a4)
            dW = [(h / 6.0) * (p1 + 2.0 * p2 + 2.0 * p3 + p4) for p1, p2, p3, p4 in zip(P1, P2, P3, P4)]
        self._check(q_new, v_new, a1)
        if self.project_every_step and active_constraints(model):
            q_new, v_new = project_constraints(model, q_new, v_new)
        self.t_prev, self.q_prev, self.v_prev = self.t, q, v
        self.q, self.v = q_new, v_new
        self.a, self.tau, self.lam = a1, tau1, lam1
        self.work += dW[0]
        self.dissipated += dW[1]
        self.external_work += dW[2]
        self.t += h
        self.steps += 1

    def _check(self, q, v, a):
        try:
            if _bounded(q, v, a):
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
