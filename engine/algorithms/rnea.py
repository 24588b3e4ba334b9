"""Recursive Newton-Euler inverse dynamics: Kim 2012, Table 2.

    forward i = 1..n:
        V_i  = Ad_{T_i^-1} V_lambda(i) + S_i dq_i
        dV_i = Ad_{T_i^-1} dV_lambda(i) + ad_{V_i}(S_i dq_i) + dS_i dq_i + S_i ddq_i
    backward i = n..1:
        F_i  = I_i dV_i - ad*_{V_i}(I_i V_i) - F_i^ext + sum_{k in mu(i)} Ad*_{T_k^-1} F_k
        tau_i = S_i^T F_i   (+ armature_i ddq_i)

Frames: V_i, dV_i, F_i and F_i^ext are in body frame {i}. Gravity enters as dV_0 = (0, -g).
F_i (left in ``ws.F``) is the whole wrench the parent transmits through joint i.
"""
from __future__ import annotations

from engine.kernel.layout import (njit, MODEL_DTYPE, WS_DTYPE, kernel, FASTMATH, MODEL_T, WS_T, VEC_T, STATUS,
                                  OK)
from engine.algorithms.common import (check_vec, check_result, velocity_pass_body, to_child,
                                      wrench_to_parent_add)
from engine.maths.spatial import ad_dual_sub, mat6_vec


@njit(cache=True, inline="always")
def rnea_passes(m, ws, q, v, a, tau):
    """Both passes of Table 2; writes tau (length nv). Inputs are assumed valid."""
    n = m.shape[0] - 1
    w0 = ws[0]
    for k in range(6):
        w0.V[k] = 0.0
        w0.dV[k] = m[0].g[k]
    for i in range(1, n + 1):
        mb = m[i]
        wb = ws[i]
        pb = ws[mb.parent]
        velocity_pass_body(mb, wb, pb, q, v)
        to_child(mb, wb, pb.dV, wb.dV)
        S = wb.S
        iv = mb.iv
        for r in range(6):
            s = wb.eta[r]
            for j in range(mb.nv):
                s += S[r, j] * a[iv + j]
            wb.dV[r] += s
        # F_i = I dV - ad*_V (I V) - F_ext (children added in the backward pass)
        mat6_vec(mb.I, wb.dV, wb.F)
        mat6_vec(mb.I, wb.V, wb.Bh)  # momentum I V (Bh used as scratch)
        ad_dual_sub(wb.V, wb.Bh, wb.F)
        for r in range(6):
            wb.F[r] -= wb.fext[r]
    for i in range(n, 0, -1):
        mb = m[i]
        wb = ws[i]
        S = wb.S
        iv = mb.iv
        for j in range(mb.nv):
            s = mb.armature[j] * a[iv + j]
            for r in range(6):
                s += S[r, j] * wb.F[r]
            tau[iv + j] = s
        if mb.parent > 0:
            wrench_to_parent_add(mb, wb, wb.F, ws[mb.parent].F)


@kernel(STATUS(MODEL_T, WS_T, VEC_T, VEC_T, VEC_T, VEC_T), cache=True, fastmath=FASTMATH)
def rnea(m_bytes, ws_bytes, q, v, a, tau):
    """tau = M(q) ddq + b(q, dq) - sum J^T F_ext. Status code (see common)."""
    m = m_bytes.view(MODEL_DTYPE)
    ws = ws_bytes.view(WS_DTYPE)
    nv = m[0].nv
    st = check_vec(q, m[0].nq, 1)
    if st == OK:
        st = check_vec(v, nv, 2)
    if st == OK:
        st = check_vec(a, nv, 3)
    if st != OK:
        return st
    rnea_passes(m, ws, q, v, a, tau)
    return check_result(tau, nv)
