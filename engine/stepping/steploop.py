"""The compiled step loop: n time steps of (hybrid) dynamics inside one compiled call.

One step, from the state (t, q, v), exactly as ``engine.simulation.simulator`` describes it:
    inputs:  (a_cmd, tau_cmd) of the built-in input laws at (t, q, v), held over the step
    stage:   tau_in = tau_cmd - d v;  a = ABA(q, v, tau_in)  (no joint prescribed) or
             (a, tau) = HD(q, v, prescribed, a_cmd, tau_in);  tau of a prescribed joint + d v
    "euler":               q+ = q (+) h v,   v+ = v + h a1
    "semi_implicit_euler": v+ = v + h a1,    q+ = q (+) h v+
    "rk4":  Runge-Kutta-Munthe-Kaas: xi_k in the tangent space at q, q_k = q (+) xi_k,
            d_k = dexp^-1_{-xi_k}(v_k) ~ v_k + 1/2 [xi_k, v_k] + 1/12 [xi_k, [xi_k, v_k]]
            q+ = q (+) h/6 (d1 + 2 d2 + 2 d3 + d4),  v+ = v + h/6 (a1 + 2 a2 + 2 a3 + a4)
    check:   q+, v+, a1 finite and |x| <= 1e10, else stop with the state of that step's start.

The arithmetic is written in numpy's order (no fastmath here): the loop reproduces the Python step
of ``engine.simulation.simulator`` to the last bits of the dynamics kernels it calls.

Input laws, per velocity coordinate k (codes of ``engine.stepping.input_laws``; params columns VALUE..OFFSET):
    torque:  0 zero, 1 constant (value), 2 gravity compensation g(q)_k, 3 PD kp e_k - kd dq_k,
             4 sine offset + amplitude sin(2 pi f t + phase)
    acceleration: 10 constant (value), 11 hold kp e_k - kd dq_k, 12 track kp e_k - kd dq_k,
             13 sine trajectory ddq_d + kp (q_d - q)_k + kd (dq_d - dq)_k
with e = difference(q, q_ref), q_ref = base (+) d (d: the target of PD and track, 0 for hold, the
sine's offset + amplitude sin(...) for the sine trajectory). ``tau_base``/``acc_base`` are added to
the laws' output (the constant parts, or the Simulator's own tau_cmd/a_cmd when no law is set);
``tau_seq`` (steps x nv, may have 0 rows) replaces tau_base step by step (batch rollouts).
"""
from __future__ import annotations

import math

import numpy as np
from numba import types

from engine.kernel.layout import (njit, MODEL_DTYPE, WS_DTYPE, kernel, MODEL_T, WS_T, VEC_T, MAT_T, BOOL_T,
                                  STATUS, OK, IMAT_T, INT_T, DIVERGED, PYTHON_STEP, UNILATERAL_STEP)
from engine.algorithms.aba import aba
from engine.algorithms.hybrid import hybrid
from engine.algorithms.rnea import rnea
from engine.algorithms.liegroup import integrate, difference, dexp_inv_into, LIMIT
from engine.loops.kernels import (constrained_dynamics_into, rows_into, loop_work_size, loop_views,
                                  project_into, _holonomic_norm, C_ROW, C_ROWS)


# integrators (index into engine.simulation.simulator.INTEGRATORS)
RK4, SEMI_IMPLICIT_EULER, EULER = 0, 1, 2

# input law codes (as app/sim/inputs.py and engine/stepping/input_laws.py)
T_ZERO, T_CONST, T_GRAVITY, T_PD, T_SINE = 0, 1, 2, 3, 4
A_CONST, A_HOLD, A_TRACK, A_SINE = 10, 11, 12, 13
# columns of the law parameter matrix
VALUE, TARGET, KP, KD, AMPLITUDE, FREQUENCY, PHASE, OFFSET = range(8)
NPARAMS = 8

# statuses of the loop (besides the dynamics kernels' own codes, returned as they are)
LIMIT_MARGIN = 0.02      # rad or m: a limit nearer than this plus 2 h |v| is a candidate row of the unilateral step

@njit(cache=True)
def _bounded(x):
    for k in range(x.shape[0]):
        if not (abs(x[k]) <= LIMIT):       # NaN fails the comparison
            return False
    return True


@njit(cache=True)
def _stage(m_bytes, ws, q, v, any_prescribed, prescribed, a_cmd, tau_cmd, damping, has_damping,
           tau_in, a, tau, ws_k, ci, cf, gains, lam, lw):
    """(a, tau) of one stage: ABA or hybrid dynamics with damping as the passive torque -d v; with
    closed loops (ci has rows) the constrained dynamics of engine.loops.kernels, multipliers in lam,
    lw its work buffer (loopkernels.loop_work_size)."""
    nv = v.shape[0]
    if has_damping:
        for k in range(nv):
            tau_in[k] = tau_cmd[k] - damping[k] * v[k]
    else:
        for k in range(nv):
            tau_in[k] = tau_cmd[k]
    if ci.shape[0] > 0:
        st = constrained_dynamics_into(m_bytes, ws, ws_k, q, v, prescribed, a_cmd, tau_in, ci, cf, lam.shape[0],
                                       gains, a, tau, lam, lw)
        if st != OK:
            return st
        if not any_prescribed:
            for k in range(nv):
                tau[k] = tau_cmd[k]
        elif has_damping:
            for k in range(nv):
                tau[k] = tau[k] + damping[k] * v[k] if prescribed[k] else tau_cmd[k]
        return OK
    if not any_prescribed:
        st = aba(m_bytes, ws, q, v, tau_in, a)
        for k in range(nv):
            tau[k] = tau_cmd[k]
        return st
    st = hybrid(m_bytes, ws, q, v, prescribed, a_cmd, tau_in, a, tau)
    if has_damping:
        for k in range(nv):
            tau[k] = tau[k] + damping[k] * v[k] if prescribed[k] else tau_cmd[k]
    return st


@njit(cache=True)
def close_loops(m_bytes, ws, ws_k, q_new, v_new, t_end, ci, cf, gains, zero, prescribed, fr, Ar, br, lw, qs, proj):
    """After a step with closed loops (as Simulator._keep_loops_closed): when the residual |f(q+)| of
    the holonomic rows exceeds the tolerance gains[3], (q+, v+) are projected back onto the loops in
    place (loopkernels.project_into; the velocity by the hybrid response: prescribed joints keep
    theirs) and proj notes it (count, t_end, index in ci of the worst constraint, residual before).
    fr, Ar, br: rows scratch (nrows, nrows x nv, nrows); lw: loop_work_size floats; qs: nq floats.
    OK, or PYTHON_STEP (the step is not taken) when the rows are degenerate, the projection
    needs Python, or the residual stays above the tolerance (the Python step raises LoopFailure)."""
    m = m_bytes.view(MODEL_DTYPE)
    nrows = fr.shape[0]
    sa, sb, Ja, Jb = loop_views(lw, m[0].nv, nrows)[13:]
    if rows_into(m, ws_k.view(WS_DTYPE), q_new, zero, ci, cf, fr, Ar, br, sa, sb, Ja, Jb) != OK:
        return PYTHON_STEP
    res = _holonomic_norm(fr)
    if res <= gains[3]:
        return OK
    worst, worst_norm = 0, -1.0
    for c in range(ci.shape[0]):
        nc = _holonomic_norm(fr[ci[c, C_ROW]:ci[c, C_ROW] + ci[c, C_ROWS]])
        if nc > worst_norm:
            worst, worst_norm = c, nc
    if project_into(m_bytes, ws, ws_k, q_new, v_new, prescribed, ci, cf, nrows, lw, qs) != OK:
        return PYTHON_STEP
    if rows_into(m, ws_k.view(WS_DTYPE), q_new, zero, ci, cf, fr, Ar, br, sa, sb, Ja, Jb) != OK:
        return PYTHON_STEP
    if not (_holonomic_norm(fr) <= gains[3]):
        return PYTHON_STEP
    proj[0] += 1.0
    proj[1] = t_end
    proj[2] = worst
    proj[3] = res
    return OK


@njit(cache=True)
def _powers(m_bytes, ws_bytes, v, tau, damping, has_damping, p, k):
    """Row k of p: (actuator power tau . v, damping power d v . v, power of the external wrenches
    sum_i F_ext,i . V_i) at one stage; V_i from that stage's velocity pass (body frames, as the
    workspace's fext rows). Integrated with the state's weights, they give Simulator.work,
    .dissipated and .external_work."""
    nv = v.shape[0]
    pa = 0.0
    pd = 0.0
    for j in range(nv):
        pa += tau[j] * v[j]
        if has_damping:
            pd += damping[j] * v[j] * v[j]
    m = m_bytes.view(MODEL_DTYPE)
    ws = ws_bytes.view(WS_DTYPE)
    pe = 0.0
    for i in range(1, m.shape[0]):
        wb = ws[i]
        for r in range(6):
            pe += wb.fext[r] * wb.V[r]
    p[k, 0] = pa
    p[k, 1] = pd
    p[k, 2] = pe


@njit(cache=True)
def _laws(m_bytes, ws_g, t, q, v, code, params, base, d_static, q_ref_static, tau_base, acc_base,
          flags, zero, g, d, q_ref, e, tau_cmd, a_cmd):
    """(a_cmd, tau_cmd) of the input laws at (t, q, v), in app/sim/inputs.py's order of operations.
    flags = (any gravity, any torque sine, any position error, any sine trajectory)."""
    nv = v.shape[0]
    for k in range(nv):
        tau_cmd[k] = tau_base[k]
        a_cmd[k] = acc_base[k]
    if flags[0]:
        st = rnea(m_bytes, ws_g, q, zero, zero, g)
        if st != OK:
            return st
        for k in range(nv):
            tau_cmd[k] += g[k] if code[k] == T_GRAVITY else 0.0
    if flags[1]:
        for k in range(nv):
            if code[k] == T_SINE:
                omega = 2.0 * np.pi * params[k, FREQUENCY]
                tau_cmd[k] += params[k, OFFSET] + params[k, AMPLITUDE] * math.sin(omega * t + params[k, PHASE])
            else:
                tau_cmd[k] += 0.0
    if flags[2]:
        if flags[3]:
            for k in range(nv):
                omega = 2.0 * np.pi * params[k, FREQUENCY]
                s = math.sin(omega * t + params[k, PHASE])
                A = params[k, AMPLITUDE] if code[k] == A_SINE else 0.0
                d[k] = d_static[k] + (params[k, OFFSET] + A * s if code[k] == A_SINE else 0.0)
            st = integrate(m_bytes, base, d, q_ref)
            if st != OK:
                return st
            st = difference(m_bytes, q, q_ref, e)
        else:
            st = difference(m_bytes, q, q_ref_static, e)
        if st != OK:
            return st
        for k in range(nv):
            c = code[k]
            err = c == T_PD or c == A_HOLD or c == A_TRACK or c == A_SINE
            kp = params[k, KP] if err else 0.0
            kd = params[k, KD] if err else 0.0
            if flags[3]:
                omega = 2.0 * np.pi * params[k, FREQUENCY]
                ph = omega * t + params[k, PHASE]
                A = params[k, AMPLITUDE] if c == A_SINE else 0.0
                dv = A * omega * math.cos(ph) - v[k]
            else:
                dv = -v[k]
            fb = kp * e[k] + kd * dv
            tau_cmd[k] += fb if c == T_PD else 0.0
            a_cmd[k] += fb if (c == A_HOLD or c == A_TRACK or c == A_SINE) else 0.0
            if flags[3]:
                a_cmd[k] += -A * (omega * omega) * math.sin(ph)
    return OK


@njit(cache=True, _nrt=True)
def _law_flags(code):
    """(any gravity, any torque sine, any position error, any sine trajectory, any law at all)."""
    flags = np.zeros(5, dtype=np.bool_)
    for k in range(code.shape[0]):
        c = code[k]
        if c != T_ZERO:
            flags[4] = True
        if c == T_GRAVITY:
            flags[0] = True
        if c == T_SINE:
            flags[1] = True
        if c == T_PD or c == A_HOLD or c == A_TRACK or c == A_SINE:
            flags[2] = True
        if c == A_SINE:
            flags[3] = True
    return flags


@njit(cache=True)
def _static_reference(m_bytes, code, params, base, flags, d_static, q_ref_static):
    """d_static (the targets of PD and track, 0 elsewhere) and q_ref_static = base (+) d_static."""
    for k in range(code.shape[0]):
        c = code[k]
        d_static[k] = params[k, TARGET] if (c == T_PD or c == A_TRACK) else 0.0
    if flags[2]:
        return integrate(m_bytes, base, d_static, q_ref_static)
    return OK


@kernel(STATUS(MODEL_T, WS_T, types.float64, VEC_T, VEC_T, INT_T, MAT_T, VEC_T, VEC_T, VEC_T, VEC_T, VEC_T),
      cache=True, _nrt=True)
def evaluate_laws(m_bytes, ws_g, t, q, v, code, params, base, tau_base, acc_base, tau_cmd, a_cmd):
    """(a_cmd, tau_cmd) of the input laws at (t, q, v), as one step of ``advance`` computes them
    (for the Python step, used when a step needs Python: closed loops, a control callback)."""
    nv = v.shape[0]
    nq = q.shape[0]
    flags = _law_flags(code)
    d_static = np.empty(nv)
    q_ref_static = np.empty(nq)
    st = _static_reference(m_bytes, code, params, base, flags, d_static, q_ref_static)
    if st != OK:
        return st
    return _laws(m_bytes, ws_g, t, q, v, code, params, base, d_static, q_ref_static, tau_base, acc_base,
                 flags, np.zeros(nv), np.empty(nv), np.empty(nv), np.empty(nq), np.empty(nv), tau_cmd, a_cmd)


@njit(cache=True, _nrt=True, nogil=True)
def advance_limited(m_bytes, ws, ws_g, q, v, tv, dt, n, integrator, prescribed, code, params, base, damping,
                    tau_base, acc_base, tau_seq, a_out, tau_out, q_prev, v_prev, bad, rec_t, rec_q, rec_v,
                    rec_a, rec_tau, done, ws_k, ci, cf, gains, lam_out, energy, proj, lim_q, lim_v, lim_lo,
                    lim_hi, rec_off):
    """``advance`` with joint limits watched (engine.contact.python_step): coordinate q[lim_q[k]] (velocity
    v[lim_v[k]]) lives in [lim_lo[k], lim_hi[k]]. A step that starts with a limit within
    LIMIT_MARGIN + 2 h |v| (the unilateral step's candidate test) or that would end past a limit is
    not taken: UNILATERAL_STEP, the state is that step's start (engine.contact.step takes it).
    Recorded rows go to rows rec_off + step.

    Long because it is the compiled step loop with the limit watch inlined: its state lives in local
    variables across steps, and stages split into functions would pass some forty arrays each (numba
    inlines helpers, but the loop's bookkeeping of records, energy and status stays here)."""
    m = m_bytes.view(MODEL_DTYPE)
    nq = m[0].nq
    nv = m[0].nv
    h = dt
    any_prescribed = False
    for k in range(nv):
        if prescribed[k]:
            any_prescribed = True
    has_damping = False
    for k in range(nv):
        if damping[k] != 0.0:
            has_damping = True
    # plain bools, not literals: a variable that starts as the constant False makes numba compile
    # every callee twice (once for Literal[bool](False), once for bool)
    any_prescribed = np.bool_(any_prescribed)
    has_damping = np.bool_(has_damping)
    flags = _law_flags(code)
    any_law = flags[4]
    record = rec_t.shape[0] >= rec_off + n
    nlim = lim_q.shape[0]
    nseq = tau_seq.shape[0]
    # scratch, allocated once per call
    zero = np.zeros(nv)
    g = np.empty(nv)
    d = np.empty(nv)
    d_static = np.empty(nv)
    q_ref = np.empty(nq)
    q_ref_static = np.empty(nq)
    e = np.empty(nv)
    a_cmd = np.empty(nv)
    tau_cmd = np.empty(nv)
    tau_in = np.empty(nv)
    tau_b = np.empty(nv)
    a1 = np.empty(nv)
    a2 = np.empty(nv)
    a3 = np.empty(nv)
    a4 = np.empty(nv)
    tau1 = np.empty(nv)
    taus = np.empty(nv)
    d2 = np.empty(nv)
    d3 = np.empty(nv)
    d4 = np.empty(nv)
    xi = np.empty(nv)
    vs = np.empty(nv)
    qs = np.empty(nq)
    q_new = np.empty(nq)
    v_new = np.empty(nv)
    x6 = np.empty(6)
    g6 = np.empty(6)
    b12 = np.empty(12)
    nrows = lam_out.shape[0]
    loops = ci.shape[0] > 0
    lam1 = np.empty(nrows)
    lams = np.empty(nrows)
    lw = np.empty(loop_work_size(nv, nrows))      # the constrained dynamics' work buffer
    fr = np.empty(nrows)
    Ar = np.empty((nrows, nv))
    br = np.empty(nrows)
    P = np.empty((4, 3))      # stage powers
    st = _static_reference(m_bytes, code, params, base, flags, d_static, q_ref_static)
    if st != OK:
        return st
    done[0] = 0
    for step in range(n):
        t = tv[0]
        for k in range(nlim):
            x = q[lim_q[k]]
            reach = LIMIT_MARGIN + 2.0 * h * abs(v[lim_v[k]])
            if x - lim_lo[k] < reach or lim_hi[k] - x < reach:
                return UNILATERAL_STEP
        if nseq > 0:
            for k in range(nv):
                tau_b[k] = tau_seq[step if step < nseq else nseq - 1, k]
        else:
            for k in range(nv):
                tau_b[k] = tau_base[k]
        if any_law:
            st = _laws(m_bytes, ws_g, t, q, v, code, params, base, d_static, q_ref_static, tau_b, acc_base,
                       flags, zero, g, d, q_ref, e, tau_cmd, a_cmd)
            if st != OK:
                return st
        else:
            for k in range(nv):
                tau_cmd[k] = tau_b[k]
                a_cmd[k] = acc_base[k]
        for k in range(nv):
            bad[nq + 2 * nv + k] = a_cmd[k]
            bad[nq + 3 * nv + k] = tau_cmd[k]
        st = _stage(m_bytes, ws, q, v, any_prescribed, prescribed, a_cmd, tau_cmd, damping, has_damping,
                    tau_in, a1, tau1, ws_k, ci, cf, gains, lam1, lw)
        if st != OK:
            return PYTHON_STEP if (loops and st > 2000) else st
        _powers(m_bytes, ws, v, tau1, damping, has_damping, P, np.int64(0))
        if integrator == EULER:
            for k in range(nv):
                xi[k] = h * v[k]
            st = integrate(m_bytes, q, xi, q_new)
            for k in range(nv):
                v_new[k] = v[k] + h * a1[k]
        elif integrator == SEMI_IMPLICIT_EULER:
            for k in range(nv):
                v_new[k] = v[k] + h * a1[k]
                xi[k] = h * v_new[k]
            st = integrate(m_bytes, q, xi, q_new)
        else:
            c2 = 0.5 * h
            # stage 2: xi = h/2 d1 (d1 = v), v2 = v + h/2 a1
            for k in range(nv):
                xi[k] = c2 * v[k]
                vs[k] = v[k] + c2 * a1[k]
            st = integrate(m_bytes, q, xi, qs)
            if st == OK:
                st = _stage(m_bytes, ws, qs, vs, any_prescribed, prescribed, a_cmd, tau_cmd, damping,
                            has_damping, tau_in, a2, taus, ws_k, ci, cf, gains, lams, lw)
            if st != OK:
                return PYTHON_STEP if (loops and st > 2000) else st
            _powers(m_bytes, ws, vs, taus, damping, has_damping, P, np.int64(1))
            dexp_inv_into(m_bytes, xi, vs, d2, x6, g6, b12)
            # stage 3
            for k in range(nv):
                xi[k] = c2 * d2[k]
                vs[k] = v[k] + c2 * a2[k]
            st = integrate(m_bytes, q, xi, qs)
            if st == OK:
                st = _stage(m_bytes, ws, qs, vs, any_prescribed, prescribed, a_cmd, tau_cmd, damping,
                            has_damping, tau_in, a3, taus, ws_k, ci, cf, gains, lams, lw)
            if st != OK:
                return PYTHON_STEP if (loops and st > 2000) else st
            _powers(m_bytes, ws, vs, taus, damping, has_damping, P, np.int64(2))
            dexp_inv_into(m_bytes, xi, vs, d3, x6, g6, b12)
            # stage 4
            for k in range(nv):
                xi[k] = h * d3[k]
                vs[k] = v[k] + h * a3[k]
            st = integrate(m_bytes, q, xi, qs)
            if st == OK:
                st = _stage(m_bytes, ws, qs, vs, any_prescribed, prescribed, a_cmd, tau_cmd, damping,
                            has_damping, tau_in, a4, taus, ws_k, ci, cf, gains, lams, lw)
            if st != OK:
                return PYTHON_STEP if (loops and st > 2000) else st
            _powers(m_bytes, ws, vs, taus, damping, has_damping, P, np.int64(3))
            dexp_inv_into(m_bytes, xi, vs, d4, x6, g6, b12)
            c6 = h / 6.0
            for k in range(nv):
                xi[k] = c6 * (v[k] + 2.0 * d2[k] + 2.0 * d3[k] + d4[k])
                v_new[k] = v[k] + c6 * (a1[k] + 2.0 * a2[k] + 2.0 * a3[k] + a4[k])
            st = integrate(m_bytes, q, xi, q_new)
        if st != OK:
            return st
        if not (_bounded(q_new) and _bounded(v_new) and _bounded(a1)):
            for k in range(nq):
                bad[k] = q_new[k]
            for k in range(nv):
                bad[nq + k] = v_new[k]
                bad[nq + nv + k] = a1[k]
            return DIVERGED
        for k in range(nlim):
            x = q_new[lim_q[k]]
            if x < lim_lo[k] or x > lim_hi[k]:
                return UNILATERAL_STEP
        if loops:
            if close_loops(m_bytes, ws, ws_k, q_new, v_new, t + h, ci, cf, gains, zero, prescribed, fr, Ar, br, lw,
                           qs, proj) != OK:
                return PYTHON_STEP
            for r in range(nrows):
                lam_out[r] = lam1[r]
        if record:
            row = rec_off + step
            rec_t[row] = t
            for k in range(nq):
                rec_q[row, k] = q[k]
            for k in range(nv):
                rec_v[row, k] = v[k]
                rec_a[row, k] = a1[k]
                rec_tau[row, k] = tau1[k]
        if integrator == RK4:
            for c in range(3):
                energy[c] += (h / 6.0) * (P[0, c] + 2.0 * P[1, c] + 2.0 * P[2, c] + P[3, c])
        else:
            for c in range(3):
                energy[c] += h * P[0, c]
        for k in range(nq):
            q_prev[k] = q[k]
            q[k] = q_new[k]
        for k in range(nv):
            v_prev[k] = v[k]
            v[k] = v_new[k]
            a_out[k] = a1[k]
            tau_out[k] = tau1[k]
        tv[1] = t
        tv[0] = t + h
        done[0] = step + 1
    return OK


@kernel(STATUS(MODEL_T, WS_T, WS_T, VEC_T, VEC_T, VEC_T, types.float64, types.int64, types.int64,
             BOOL_T, INT_T, MAT_T, VEC_T, VEC_T, VEC_T, VEC_T, MAT_T, VEC_T, VEC_T, VEC_T, VEC_T,
             VEC_T, VEC_T, MAT_T, MAT_T, MAT_T, MAT_T, INT_T, WS_T, IMAT_T, MAT_T, VEC_T, VEC_T, VEC_T, VEC_T),
      cache=True, _nrt=True, nogil=True)
def advance(m_bytes, ws, ws_g, q, v, tv, dt, n, integrator, prescribed, code, params, base, damping,
            tau_base, acc_base, tau_seq, a_out, tau_out, q_prev, v_prev, bad, rec_t, rec_q, rec_v,
            rec_a, rec_tau, done, ws_k, ci, cf, gains, lam_out, energy, proj):
    """Advance (tv[0], q, v) by n steps of dt in place. ws is the dynamics workspace (its fext rows
    hold the external wrenches for the whole call), ws_g the gravity-compensation workspace.
    After each step a_out, tau_out hold that step's a1 and tau (inputs at its start), q_prev, v_prev
    and tv[1] its starting state; with rec_t.shape[0] >= n the rows of every step (t, q, v, a, tau
    at the step's start) are recorded. done[0] counts the steps taken; bad[nq+2nv:nq+4nv] holds the
    (a_cmd, tau_cmd) of the last step begun. On DIVERGED, bad[:nq+2nv] holds (q+, v+, a1) of the failed step
    and the state is that step's start.
    Closed loops: ci, cf describe the enabled constraints (engine.loops.kernels.pack; no rows: none),
    gains = (Baumgarte on, alpha, beta, residual tolerance), ws_k their kinematics workspace and
    lam_out receives the last step's multipliers. energy (3) accumulates the work of the actuators,
    the energy dissipated by damping and the work of the external wrenches over the steps taken,
    integrated with the same weights as the state (as the Python step does). A step whose loop rows are rank deficient or
    degenerate is not taken: PYTHON_STEP (the Python step warns or names the loop). After a step whose
    residual |f(q)| exceeds the tolerance (q, v) are projected back onto the loops
    (loopkernels.project_into; proj = (projections, t, index of the worst constraint in ci, its
    residual before) of the last one, the count accumulating); when that needs Python (rank-deficient
    rows, no convergence) or leaves the residual above the tolerance, PYTHON_STEP."""
    no_i = np.zeros(0, dtype=np.int64)
    no_f = np.zeros(0)
    return advance_limited(m_bytes, ws, ws_g, q, v, tv, dt, n, integrator, prescribed, code, params, base, damping,
                           tau_base, acc_base, tau_seq, a_out, tau_out, q_prev, v_prev, bad, rec_t, rec_q, rec_v,
                           rec_a, rec_tau, done, ws_k, ci, cf, gains, lam_out, energy, proj, no_i, no_i, no_f, no_f,
                           np.int64(0))     # int64, not Literal[int](0): one compile of advance_limited
