"""Joint-space mass matrix by composite rigid-body inertias (algorithms.md, "Lagrangian quantities").

    I^c_i = I_i + sum_{k in mu(i)} Ad*_{T_k^-1} I^c_k Ad_{T_k^-1}   (the subtree's inertia in {i})
    M_ii  = S_i^T I^c_i S_i + armature_i
    M_ji  = S_j^T (Ad*_{T_ji^-1} I^c_i S_i)  for each ancestor j of i, walking the wrench
            columns F = I^c_i S_i up the tree one Ad* at a time.
"""
from __future__ import annotations

from numba import njit

from .common import MODEL_T, WS_T, VEC_T, MAT_T, STATUS, OK, check_vec, joint_pose
from ..spatial import Ad_inv_matrix_into, congruence_add, Ad_inv_dual_add


@njit(cache=True, inline="always")
def crba_passes(m, ws, q, v0, M):
    n = m.shape[0] - 1
    for i in range(1, n + 1):
        mb = m[i]
        wb = ws[i]
        joint_pose(mb, wb, q, v0)
        for r in range(6):
            for c in range(6):
                wb.Ih[r, c] = mb.I[r, c]
    for i in range(n, 0, -1):
        mb = m[i]
        wb = ws[i]
        if mb.parent > 0:
            Ad_inv_matrix_into(wb.R, wb.p, wb.X)
            congruence_add(wb.X, wb.Ih, wb.tmp, ws[mb.parent].Ih)
    for i in range(1, n + 1):
        mb = m[i]
        wb = ws[i]
        nv = mb.nv
        iv = mb.iv
        F = wb.U          # F = I^c_i S_i (6 x nv), walked up the tree
        S = wb.S
        Ic = wb.Ih
        for r in range(6):
            for j in range(nv):
                s = 0.0
                for k in range(6):
                    s += Ic[r, k] * S[k, j]
                F[r, j] = s
        for a in range(nv):
            for b in range(nv):
                s = 0.0
                for k in range(6):
                    s += S[k, a] * F[k, b]
                M[iv + a, iv + b] = s
            M[iv + a, iv + a] += mb.armature[a]
        j = i
        G = wb.tmp        # scratch column storage
        while m[j].parent > 0:
            wj = ws[j]
            # F <- Ad*_{T_j^-1} F (column by column)
            for col in range(nv):
                for r in range(6):
                    wb.Sv[r] = 0.0
                for r in range(6):
                    wb.eta[r] = F[r, col]
                Ad_inv_dual_add(wj.R, wj.p, wb.eta, wb.Sv)
                for r in range(6):
                    G[r, col] = wb.Sv[r]
            for col in range(nv):
                for r in range(6):
                    F[r, col] = G[r, col]
            j = m[j].parent
            pj = m[j]
            Sj = ws[j].S
            for a in range(pj.nv):
                for b in range(nv):
                    s = 0.0
                    for k in range(6):
                        s += Sj[k, a] * F[k, b]
                    M[pj.iv + a, iv + b] = s
                    M[iv + b, pj.iv + a] = s


@njit(STATUS(MODEL_T, WS_T, VEC_T, VEC_T, MAT_T), cache=True)
def crba(m, ws, q, v0, M):
    """Fill M (nv x nv, must be zero where neither body is an ancestor of the other). v0 is a zero
    vector (joints read dq only for dS). Status code (see common)."""
    st = check_vec(q, m[0].nq, 1)
    if st != OK:
        return st
    crba_passes(m, ws, q, v0, M)
    return OK
