"""Hybrid dynamics: Kim 2012, Table 4.

Each joint is either acceleration-prescribed (set u: ddq_i given, tau_i unknown) or torque-given
(set v: tau_i given, ddq_i unknown). First pass as Table 3. Backward pass as Table 3 except, for i in u:
    Pi_i = Ih_i,   beta_i = Bh_i + Ih_i (eta_i + S_i ddq_i)
Last pass: for i in u
    dV_i = Ad_{T_i^-1} dV_lambda(i) + S_i ddq_i + eta_i;  F_i = Ih_i dV_i + Bh_i;  tau_i = S_i^T F_i
and for i in v exactly as Table 3. All joints in u gives inverse dynamics, none gives forward dynamics.
Twists and wrenches in body frames.
"""
from __future__ import annotations

import numpy as np

from engine.kernel.layout import (njit, MODEL_DTYPE, WS_DTYPE, kernel, FASTMATH, MODEL_T, WS_T, VEC_T, BOOL_T,
                                  STATUS, OK, ARG, BAD_LENGTH, NOT_FINITE, SPLIT_JOINT)
from engine.algorithms.common import check_vec, check_result, to_child
from engine.algorithms.aba import (articulated_first_pass, articulated_backward_torque,
                                   articulated_forward_torque, articulated_transfer)
from engine.maths.spatial import mat6_vec


@njit(cache=True)
def check_inputs(m, q, v, prescribed, a, tau):
    nv = m[0].nv
    st = check_vec(q, m[0].nq, 1)
    if st == OK:
        st = check_vec(v, nv, 2)
    if st != OK:
        return st
    if prescribed.shape[0] != nv:
        return ARG * 3 + BAD_LENGTH
    if a.shape[0] != nv:
        return ARG * 4 + BAD_LENGTH
    if tau.shape[0] != nv:
        return ARG * 5 + BAD_LENGTH
    for i in range(1, m.shape[0]):
        mb = m[i]
        iv = mb.iv
        flag = prescribed[iv]
        for j in range(mb.nv):
            if prescribed[iv + j] != flag:
                return ARG * 3 + SPLIT_JOINT
            x = a[iv + j] if flag else tau[iv + j]
            if not np.isfinite(x):
                return ARG * (4 if flag else 5) + NOT_FINITE
    return OK


@kernel(STATUS(MODEL_T, WS_T, VEC_T, VEC_T, BOOL_T, VEC_T, VEC_T, VEC_T, VEC_T), cache=True, fastmath=FASTMATH)
def hybrid(m_bytes, ws_bytes, q, v, prescribed, a, tau, a_out, tau_out):
    """Table 4. prescribed[k] True: ddq_k read from a, tau_k computed; False: tau_k read from tau,
    ddq_k computed. Writes both a_out and tau_out completely. Status code (see common)."""
    m = m_bytes.view(MODEL_DTYPE)
    ws = ws_bytes.view(WS_DTYPE)
    st = check_inputs(m, q, v, prescribed, a, tau)
    if st != OK:
        return st
    n = m.shape[0] - 1
    articulated_first_pass(m, ws, q, v)
    for i in range(n, 0, -1):
        mb = m[i]
        wb = ws[i]
        iv = mb.iv
        if prescribed[iv]:
            # Pi = Ih, beta = Bh + Ih (eta + S ddq)
            S = wb.S
            for r in range(6):
                s = wb.eta[r]
                for j in range(mb.nv):
                    s += S[r, j] * a[iv + j]
                wb.Sv[r] = s
            mat6_vec(wb.Ih, wb.Sv, wb.beta)
            for r in range(6):
                wb.beta[r] += wb.Bh[r]
            if mb.parent > 0:
                Pi = wb.Pi
                for r in range(6):
                    for c in range(6):
                        Pi[r, c] = wb.Ih[r, c]
                articulated_transfer(mb, wb, ws[mb.parent])
        else:
            if not articulated_backward_torque(mb, wb, ws[mb.parent], tau):
                return -i
    for i in range(1, n + 1):
        mb = m[i]
        wb = ws[i]
        pb = ws[mb.parent]
        iv = mb.iv
        if prescribed[iv]:
            to_child(mb, wb, pb.dV, wb.dV)
            S = wb.S
            for r in range(6):
                s = wb.eta[r]
                for j in range(mb.nv):
                    s += S[r, j] * a[iv + j]
                wb.dV[r] += s
            mat6_vec(wb.Ih, wb.dV, wb.F)
            for r in range(6):
                wb.F[r] += wb.Bh[r]
            for j in range(mb.nv):
                s = mb.armature[j] * a[iv + j]
                for k in range(6):
                    s += S[k, j] * wb.F[k]
                tau_out[iv + j] = s
                a_out[iv + j] = a[iv + j]
        else:
            articulated_forward_torque(mb, wb, pb, a_out)
            for j in range(mb.nv):
                tau_out[iv + j] = tau[iv + j]
    st = check_result(a_out, m[0].nv)
    if st == OK:
        st = check_result(tau_out, m[0].nv)
    return st
