"""Joint-space mass matrix by composite rigid-body inertias (algorithms.md, "Lagrangian quantities").

    I^c_i = I_i + sum_{k in mu(i)} Ad*_{T_k^-1} I^c_k Ad_{T_k^-1}   (the subtree's inertia)
    M_ii  = S_i^T I^c_i S_i + armature_i
    M_ji  = S_j^T Ad*_{T_ji^-1} I^c_i S_i   for each ancestor j of i (zero otherwise)

The same equations are evaluated with everything expressed in the world frame (as Pinocchio does):
S^w_i = Ad_{T_world_i} S_i and I^w_i = Ad*_{T_world_i^-1} I_i Ad_{T_world_i^-1}. Then the composite
inertias add without frame changes, and M_ji = (S^w_j)^T (I^{c,w}_i S^w_i) needs no walk of
transforms up the tree: one dot product per ancestor.
"""
from __future__ import annotations

from numba import njit

from ..model import MODEL_DTYPE, WS_DTYPE
from .common import (FASTMATH, MODEL_T, WS_T, VEC_T, MAT_T, STATUS, OK, check_vec, joint_pose, world_pose_body,
                     set_identity_pose)
from ..spatial import rigid_inertia_to_parent


@njit(cache=True, inline="always")
def crba_passes(m, ws, q, M):
    n = m.shape[0] - 1
    set_identity_pose(ws[0])
    for i in range(1, n + 1):
        mb = m[i]
        wb = ws[i]
        joint_pose(mb, wb, q, q, False)
        world_pose_body(wb, ws[mb.parent])
        R = wb.Rw
        p = wb.pw
        Ic = wb.Ih
        rigid_inertia_to_parent(R, p, mb.I, Ic)            # I^w_i
        Sw = wb.U                                          # S^w_i = Ad_{T_world_i} S_i
        S = wb.S
        for j in range(mb.nv):
            w0 = R[0, 0] * S[0, j] + R[0, 1] * S[1, j] + R[0, 2] * S[2, j]
            w1 = R[1, 0] * S[0, j] + R[1, 1] * S[1, j] + R[1, 2] * S[2, j]
            w2 = R[2, 0] * S[0, j] + R[2, 1] * S[1, j] + R[2, 2] * S[2, j]
            Sw[0, j] = w0
            Sw[1, j] = w1
            Sw[2, j] = w2
            for r in range(3):
                Sw[3 + r, j] = R[r, 0] * S[3, j] + R[r, 1] * S[4, j] + R[r, 2] * S[5, j]
            Sw[3, j] += p[1] * w2 - p[2] * w1
            Sw[4, j] += p[2] * w0 - p[0] * w2
            Sw[5, j] += p[0] * w1 - p[1] * w0
    for i in range(n, 0, -1):
        par = m[i].parent
        if par > 0:
            Ic = ws[i].Ih
            Ip = ws[par].Ih
            for r in range(6):
                for c in range(6):
                    Ip[r, c] += Ic[r, c]
    for i in range(1, n + 1):
        mb = m[i]
        wb = ws[i]
        nv = mb.nv
        iv = mb.iv
        F = wb.X                 # F = I^{c,w}_i S^w_i (6 x nv)
        Sw = wb.U
        Ic = wb.Ih
        for r in range(6):
            for j in range(nv):
                s = 0.0
                for k in range(6):
                    s += Ic[r, k] * Sw[k, j]
                F[r, j] = s
        for a in range(nv):
            for b in range(nv):
                s = 0.0
                for k in range(6):
                    s += Sw[k, a] * F[k, b]
                M[iv + a, iv + b] = s
            M[iv + a, iv + a] += mb.armature[a]
        j = mb.parent
        while j > 0:
            pj = m[j]
            Sj = ws[j].U
            for a in range(pj.nv):
                for b in range(nv):
                    s = 0.0
                    for k in range(6):
                        s += Sj[k, a] * F[k, b]
                    M[pj.iv + a, iv + b] = s
                    M[iv + b, pj.iv + a] = s
            j = pj.parent


@njit(STATUS(MODEL_T, WS_T, VEC_T, MAT_T), cache=True, fastmath=FASTMATH)
def crba(m_bytes, ws_bytes, q, M):
    """Fill M (nv x nv; entries where neither body is an ancestor of the other are zeroed here).
    Status code (see common)."""
    m = m_bytes.view(MODEL_DTYPE)
    ws = ws_bytes.view(WS_DTYPE)
    st = check_vec(q, m[0].nq, 1)
    if st != OK:
        return st
    for r in range(M.shape[0]):
        for c in range(M.shape[1]):
            M[r, c] = 0.0
    crba_passes(m, ws, q, M)
    return OK
