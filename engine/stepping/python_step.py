"""The Python reference step without contact: hybrid dynamics (constrained when loops are enabled,
joint damping a passive torque), one of three integrators on the Lie group, the energy integrals by
the same scheme, loops kept closed, divergence named. The compiled step loop
(``engine.stepping.steploop``) computes the same numbers; this step runs for a Python control
callback, Pfaffian constraints, projection after every step and the steps the loop declines.

- "euler":               q+ = q (+) h v,   v+ = v + h a(q, v)
- "semi_implicit_euler": v+ = v + h a(q, v),   q+ = q (+) h v+
- "rk4":                 Runge-Kutta-Munthe-Kaas of order 4: the stages live in the tangent space at
  q, q_k = q (+) xi_k, and the velocity is pulled back with dexp^-1 truncated after the third term,
  xi' = v + 1/2 [xi, v] + 1/12 [xi, [xi, v]]  (exact for 1-dof joints, order 4 on SO(3) and SE(3)).
"""
from __future__ import annotations

import numpy as np

from engine.algorithms.api import forward_dynamics, hybrid_dynamics, integrate, body_velocities
from engine.algorithms.liegroup import dexp_inv_into, state_bounded, LIMIT
from engine.loops.constrained import project_constraints, _forward_python, _hybrid_python
from engine.loops.constraints import active_constraints, constraint_residual, constraint_system
from engine.errors import InputError, SimulationDiverged, LoopFailure
from engine.maths.spatial import Ad, se3_inv


def writable(x, dtype):
    """x as a writable contiguous array of dtype (the compiled loop's signature takes writable
    arrays; it never writes the inputs)."""
    a = np.ascontiguousarray(x, dtype=dtype)
    return a if a.flags.writeable else a.copy()


class PythonStep:
    """One step of (model, settings, state) in Python; ``steploop`` gives the compiled loop's
    buffers (the loops' dynamics kernel is called through them)."""

    def __init__(self, model, settings, state, steploop):
        self.model = model
        self.settings = settings
        self.state = state
        self.steploop = steploop
        self.damping = model.damping
        self.has_damping = bool(np.any(self.damping))

    def accel(self, q, v, a_cmd, tau_cmd):
        """(a, tau, lambda): hybrid dynamics (constrained when loops are enabled) with damping as a
        passive torque."""
        model, st = self.model, self.state
        prescribed, f_ext = st.prescribed, st.f_ext
        tau_in = tau_cmd - self.damping * v if self.has_damping else tau_cmd
        lam = np.zeros(0)
        active = active_constraints(model)
        if active:
            gains = self.settings.baumgarte()
            loop = self.steploop()
            packed = loop.packed_loops(active)
            out = None
            if packed is not None:
                out = loop.loop_dynamics(packed, q, v, writable(prescribed, np.bool_),
                                         writable(a_cmd, np.float64), writable(tau_in, np.float64),
                                         f_ext, gains)
            if out is not None:
                a, tau, lam = out
                if not prescribed.any():
                    tau = tau_cmd
            elif not prescribed.any():       # the rank-revealing path (the kernel declined)
                a, lam = _forward_python(model, q, v, tau_in, f_ext, gains)
                tau = tau_cmd
            else:
                a, tau, lam = _hybrid_python(model, q, v, prescribed, a_cmd, tau_in, f_ext, gains)
        elif not prescribed.any():
            return forward_dynamics(model, q, v, tau_in, f_ext), tau_cmd, lam
        else:
            a, tau = hybrid_dynamics(model, q, v, prescribed, a_cmd, tau_in, f_ext)
        if self.has_damping:
            tau = np.where(prescribed, tau + self.damping * v, tau_cmd)
        return a, tau, lam

    def powers(self, q, v, tau):
        """(actuator power tau . v, damping power d v . v, power of f_ext) at one stage."""
        p_act = float(tau @ v)
        p_damp = float(self.damping @ (v * v)) if self.has_damping else 0.0
        p_ext = 0.0
        f_ext = self.state.f_ext
        if f_ext:
            model = self.model
            Vb = body_velocities(model, q, v)
            for name, w in f_ext.items():
                f = model.frames[name]
                if f.body == 0:
                    continue
                V = Vb[model.body_names[f.body - 1]]
                if f.offset:
                    V = Ad(se3_inv(f.placement)) @ V
                p_ext += float(np.asarray(w, dtype=float) @ V)
        return p_act, p_damp, p_ext

    def advance(self, a_cmd, tau_cmd):
        """One step of the chosen integrator from (t, q, v): (q+, v+, a, tau, lambda, energy) where a,
        tau, lambda belong to the start of the step and energy is the step's (work, dissipated,
        external work), integrated by the same scheme."""
        model, h = self.model, self.settings.dt
        q, v = self.state.q, self.state.v
        a1, tau1, lam1 = self.accel(q, v, a_cmd, tau_cmd)
        P1 = self.powers(q, v, tau1)
        integrator = self.settings.integrator
        if integrator == "euler":
            q_new = integrate(model, q, h * v)
            v_new = v + h * a1
            dW = [h * p for p in P1]
        elif integrator == "semi_implicit_euler":
            v_new = v + h * a1
            q_new = integrate(model, q, h * v_new)
            dW = [h * p for p in P1]
        else:
            scratch = (np.empty(6), np.empty(6), np.empty(12))     # dexp_inv_into's work space
            d1 = v
            xi = 0.5 * h * d1
            v2 = v + 0.5 * h * a1
            q2 = integrate(model, q, xi)
            a2, tau2, _ = self.accel(q2, v2, a_cmd, tau_cmd)
            P2 = self.powers(q2, v2, tau2)
            d2 = np.empty_like(v)
            dexp_inv_into(model._mb, xi, v2, d2, *scratch)
            xi = 0.5 * h * d2
            v3 = v + 0.5 * h * a2
            q3 = integrate(model, q, xi)
            a3, tau3, _ = self.accel(q3, v3, a_cmd, tau_cmd)
            P3 = self.powers(q3, v3, tau3)
            d3 = np.empty_like(v)
            dexp_inv_into(model._mb, xi, v3, d3, *scratch)
            xi = h * d3
            v4 = v + h * a3
            q4 = integrate(model, q, xi)
            a4, tau4, _ = self.accel(q4, v4, a_cmd, tau_cmd)
            P4 = self.powers(q4, v4, tau4)
            d4 = np.empty_like(v)
            dexp_inv_into(model._mb, xi, v4, d4, *scratch)
            q_new = integrate(model, q, (h / 6.0) * (d1 + 2.0 * d2 + 2.0 * d3 + d4))
            v_new = v + (h / 6.0) * (a1 + 2.0 * a2 + 2.0 * a3 + a4)
            dW = [(h / 6.0) * (p1 + 2.0 * p2 + 2.0 * p3 + p4) for p1, p2, p3, p4 in zip(P1, P2, P3, P4)]
        self.check(q_new, v_new, a1)
        return q_new, v_new, a1, tau1, lam1, dW

    def check(self, q, v, a):
        """SimulationDiverged (with the last good state) when q, v or a is not finite or beyond LIMIT."""
        try:
            if state_bounded(q, v, a):
                return
        except TypeError:
            pass
        st = self.state
        for name, x in (("q", q), ("v", v), ("a", a)):
            if np.all(np.isfinite(x)) and np.max(np.abs(x), initial=0.0) <= LIMIT:
                continue
            bad = int(np.flatnonzero(~np.isfinite(x) | (np.abs(np.nan_to_num(x, nan=np.inf)) > LIMIT))[0])
            coord = f"{name}[{bad}] ({self.coordinate(name, bad)})"
            raise SimulationDiverged(st.t, st.q.copy(), st.v.copy(), coord, float(x[bad]),
                                     self.settings.dt, self.settings.integrator)

    def coordinate(self, name, idx):
        for j in self.model.joints:
            start, size = (j.idx_q, j.nq) if name == "q" else (j.idx_v, j.nv)
            if start <= idx < start + size:
                return f"joint '{j.name}' coordinate {idx - start}"
        return "?"

    def overflowed(self, error, a_cmd, tau_cmd, q0, v0):
        """An error raised inside a step. Bad inputs of the user's are the user's error (named);
        anything else means finite numbers overflowed inside the step: a divergence. (q0, v0): the
        initial state, reported when the state itself went bad and the step's start did too."""
        st, dt, integrator = self.state, self.settings.dt, self.settings.integrator
        for name, x in (("q", st.q), ("v", st.v)):       # the state itself went bad (set from outside)
            if not np.all(np.isfinite(x)):
                bad = int(np.flatnonzero(~np.isfinite(x))[0])
                q, v = st.q_prev, st.v_prev
                if not (np.all(np.isfinite(q)) and np.all(np.isfinite(v))):
                    q, v = q0, v0
                raise SimulationDiverged(st.t, q.copy(), v.copy(), f"{name}[{bad}] ({self.coordinate(name, bad)})",
                                         float(x[bad]), dt, integrator) from None
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
                f"largest |v| {float(np.max(np.abs(st.v), initial=0.0)):.3g})")
        raise SimulationDiverged(st.t, st.q.copy(), st.v.copy(), what, float("inf"), dt, integrator) from None

    def keep_loops_closed(self, active, q, v):
        """Project (q, v) back onto the enabled loops when their residual exceeds loop_tolerance;
        LoopFailure when that fails."""
        st = self.state
        f, _, _, _ = constraint_system(self.model, q, np.zeros(self.model.nv), active)
        hol = np.isfinite(f)
        residual = float(np.linalg.norm(f[hol])) if hol.any() else 0.0
        tol = self.settings.loop_tolerance
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
        q2, v2 = project_constraints(self.model, q, v, active, prescribed=st.prescribed)
        after = constraint_residual(self.model, q2, active)
        if not after <= tol:
            raise LoopFailure(st.t, st.q.copy(), st.v.copy(), worst, residual, tol, self.settings.dt,
                              self.settings.integrator)
        st.loop_projections += 1
        st.last_loop_projection = (st.t + self.settings.dt, worst, residual)
        return q2, v2
