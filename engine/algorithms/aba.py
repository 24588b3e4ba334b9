"""Articulated-body forward dynamics: Kim 2012, Table 3.

    forward i = 1..n:
        V_i = Ad_{T_i^-1} V_lambda(i) + S_i dq_i,   eta_i = ad_{V_i}(S_i dq_i) + dS_i dq_i
    backward i = n..1:
        Ih_i = I_i + sum_{k in mu(i)} Ad*_{T_k^-1} Pi_k Ad_{T_k^-1}
        Bh_i = -ad*_{V_i}(I_i V_i) - F_i^ext + sum_{k in mu(i)} Ad*_{T_k^-1} beta_k
        Psi_i  = (S_i^T Ih_i S_i + armature_i)^-1
        Pi_i   = Ih_i - Ih_i S_i Psi_i S_i^T Ih_i
        beta_i = Bh_i + Ih_i (eta_i + S_i Psi_i (tau_i - S_i^T (Ih_i eta_i + Bh_i)))
    forward i = 1..n:
        ddq_i = Psi_i (tau_i - S_i^T Ih_i (Ad_{T_i^-1} dV_lambda(i) + eta_i) - S_i^T Bh_i)
        dV_i  = Ad_{T_i^-1} dV_lambda(i) + S_i ddq_i + eta_i

In the code U_i = Ih_i S_i, Dinv_i = Psi_i and u_i = tau_i - S_i^T (Ih_i eta_i + Bh_i), so
beta_i = Bh_i + Ih_i eta_i + U_i Psi_i u_i and ddq_i = Psi_i (u_i - U_i^T Ad_{T_i^-1} dV_lambda(i)).
All twists and wrenches are in the body frame {i}.
"""
from __future__ import annotations

from engine.kernel.layout import (njit, MODEL_DTYPE, WS_DTYPE, kernel, FASTMATH, MODEL_T, WS_T, VEC_T, STATUS,
                                  OK)
from engine.algorithms.common import (check_vec, check_result, velocity_pass_body, spd_inverse, inertia_scale,
                                      to_child, wrench_to_parent_add, inertia_to_parent_add)
from engine.maths.spatial import ad_dual_sub, mat6_vec


@njit(cache=True, inline="always")
def articulated_first_pass(m, ws, q, v):
    """First pass: V_i, eta_i; and the initial Ih_i = I_i, Bh_i = -ad*_{V_i}(I_i V_i) - F_i^ext."""
    n = m.shape[0] - 1
    w0 = ws[0]
    for k in range(6):
        w0.V[k] = 0.0
        w0.dV[k] = m[0].g[k]
    for i in range(1, n + 1):
        mb = m[i]
        wb = ws[i]
        velocity_pass_body(mb, wb, ws[mb.parent], q, v)
        Ih = wb.Ih
        I = mb.I
        for r in range(6):
            for c in range(6):
                Ih[r, c] = I[r, c]
        mat6_vec(I, wb.V, wb.u)          # momentum (u as scratch)
        for r in range(6):
            wb.Bh[r] = -wb.fext[r]
        ad_dual_sub(wb.V, wb.u, wb.Bh)


@njit(cache=True, inline="always")
def joint_space_inertia(mb, wb):
    """U_i = Ih_i S_i and Psi_i = Dinv_i = (S_i^T Ih_i S_i + armature_i)^-1. False if singular."""
    nv = mb.nv
    Ih = wb.Ih
    S = wb.S
    U = wb.U
    D = wb.tmp
    for r in range(6):
        for j in range(nv):
            s = 0.0
            for k in range(6):
                s += Ih[r, k] * S[k, j]
            U[r, j] = s
    for i in range(nv):
        for j in range(nv):
            s = 0.0
            for k in range(6):
                s += S[k, i] * U[k, j]
            D[i, j] = s
        D[i, i] += mb.armature[i]
    return spd_inverse(D, nv, wb.Dinv, inertia_scale(Ih), wb.X, wb.Pi)


@njit(cache=True, inline="always")
def articulated_inertia(mb, wb):
    """Pi_i = Ih_i - U_i Psi_i U_i^T; leaves W = U_i Psi_i (6 x nv) in wb.tmp."""
    nv = mb.nv
    U = wb.U
    Dinv = wb.Dinv
    W = wb.tmp
    for r in range(6):
        for j in range(nv):
            s = 0.0
            for k in range(nv):
                s += U[r, k] * Dinv[k, j]
            W[r, j] = s
    for r in range(6):
        for c in range(r, 6):
            t = wb.Ih[r, c]
            for j in range(nv):
                t -= W[r, j] * U[c, j]
            wb.Pi[r, c] = t
            wb.Pi[c, r] = t


@njit(cache=True, inline="always")
def articulated_backward_torque_1dof(mb, wb, pb, tau):
    """articulated_backward_torque for a one-dof joint (revolute, prismatic, helical): the same
    lines with a scalar Psi_i = 1 / (S^T Ih S + armature), no matrix inverse."""
    Ih = wb.Ih
    S = wb.S
    U = wb.U
    D = mb.armature[0]
    ax = mb.axis
    if ax >= 0:                  # S = (+-e_k, 0): U is a column of Ih
        sg = S[ax, 0]
        for r in range(6):
            U[r, 0] = sg * Ih[r, ax]
        D += Ih[ax, ax]
    else:
        for r in range(6):
            s = 0.0
            for k in range(6):
                s += Ih[r, k] * S[k, 0]
            U[r, 0] = s
            D += S[r, 0] * s
    if not (D > 1e-12 * inertia_scale(Ih)):
        return False
    Psi = 1.0 / D
    wb.Dinv[0, 0] = Psi
    mat6_vec(Ih, wb.eta, wb.beta)
    u = tau[mb.iv]
    for r in range(6):
        wb.beta[r] += wb.Bh[r]
    for r in range(6):
        u -= S[r, 0] * wb.beta[r]
    wb.u[0] = u
    if mb.parent == 0:
        return True
    # Pi = Ih - U Psi U^T;  beta = Bh + Ih eta + U Psi u
    for r in range(6):
        w = U[r, 0] * Psi
        for c in range(r, 6):
            t = Ih[r, c] - w * U[c, 0]
            wb.Pi[r, c] = t
            wb.Pi[c, r] = t
        wb.beta[r] += w * u
    articulated_transfer(mb, wb, pb)
    return True


@njit(cache=True, inline="always")
def articulated_backward_torque(mb, wb, pb, tau):
    """Backward step of Table 3 for a torque-given joint: Psi, Pi, beta, and their transfer to the
    parent. Returns False when S^T Ih S is singular."""
    if mb.nv == 1:
        return articulated_backward_torque_1dof(mb, wb, pb, tau)
    if not joint_space_inertia(mb, wb):
        return False
    nv = mb.nv
    iv = mb.iv
    S = wb.S
    # Ih eta + Bh (into beta), u = tau - S^T (Ih eta + Bh)
    mat6_vec(wb.Ih, wb.eta, wb.beta)
    for r in range(6):
        wb.beta[r] += wb.Bh[r]
    for j in range(nv):
        s = tau[iv + j]
        for k in range(6):
            s -= S[k, j] * wb.beta[k]
        wb.u[j] = s
    if mb.parent == 0:
        return True
    # Pi = Ih - U Psi U^T;  beta = Bh + Ih eta + U Psi u
    articulated_inertia(mb, wb)
    W = wb.tmp
    for r in range(6):
        s = 0.0
        for j in range(nv):
            s += W[r, j] * wb.u[j]
        wb.beta[r] += s
    articulated_transfer(mb, wb, pb)
    return True


@njit(cache=True, inline="always")
def articulated_transfer(mb, wb, pb):
    """Ih_parent += Ad*_{T^-1} Pi Ad_{T^-1};  Bh_parent += Ad*_{T^-1} beta."""
    inertia_to_parent_add(mb, wb, wb.Pi, pb.Ih)
    wrench_to_parent_add(mb, wb, wb.beta, pb.Bh)


@njit(cache=True, inline="always")
def articulated_forward_torque(mb, wb, pb, ddq):
    """Last pass of Table 3 for a torque-given joint: ddq_i and dV_i."""
    nv = mb.nv
    iv = mb.iv
    to_child(mb, wb, pb.dV, wb.dV)              # a' = Ad_{T^-1} dV_parent
    U = wb.U
    S = wb.S
    if nv == 1:
        s = wb.u[0]
        for k in range(6):
            s -= U[k, 0] * wb.dV[k]
        d = wb.Dinv[0, 0] * s
        ddq[iv] = d
        for r in range(6):
            wb.dV[r] += wb.eta[r] + S[r, 0] * d
        return
    for j in range(nv):
        s = wb.u[j]
        for k in range(6):
            s -= U[k, j] * wb.dV[k]
        wb.Sv[j] = s                            # scratch: u - U^T a'
    for j in range(nv):
        s = 0.0
        for k in range(nv):
            s += wb.Dinv[j, k] * wb.Sv[k]
        ddq[iv + j] = s
    for r in range(6):
        s = wb.eta[r]
        for j in range(nv):
            s += S[r, j] * ddq[iv + j]
        wb.dV[r] += s


@kernel(STATUS(MODEL_T, WS_T, VEC_T, VEC_T, VEC_T, VEC_T), cache=True, fastmath=FASTMATH)
def aba(m_bytes, ws_bytes, q, v, tau, ddq):
    """ddq = M(q)^-1 (tau - b(q, dq) + sum J^T F_ext). Status code (see common)."""
    m = m_bytes.view(MODEL_DTYPE)
    ws = ws_bytes.view(WS_DTYPE)
    nv = m[0].nv
    st = check_vec(q, m[0].nq, 1)
    if st == OK:
        st = check_vec(v, nv, 2)
    if st == OK:
        st = check_vec(tau, nv, 3)
    if st != OK:
        return st
    n = m.shape[0] - 1
    articulated_first_pass(m, ws, q, v)
    for i in range(n, 0, -1):
        mb = m[i]
        if not articulated_backward_torque(mb, ws[i], ws[mb.parent], tau):
            return -i
    for i in range(1, n + 1):
        mb = m[i]
        articulated_forward_torque(mb, ws[i], ws[mb.parent], ddq)
    return check_result(ddq, nv)
