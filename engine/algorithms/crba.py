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

from engine.kernel.layout import (njit, MODEL_DTYPE, WS_DTYPE, kernel, FASTMATH, MODEL_T, WS_T, VEC_T, MAT_T,
                                  STATUS, OK)
from engine.algorithms.common import check_vec, joint_pose, world_pose_body, set_identity_pose
from engine.maths.spatial import rigid_inertia_to_parent, Ad_column_into


@njit(cache=True, inline="always")
def crba_passes(m, ws, q, M):
    n = m.shape[0] - 1
    set_identity_pose(ws[0])
    for i in range(1, n + 1):
        mb = m[i]
        wb = ws[i]
        joint_pose(mb, wb, q, q, False)
        world_pose_body(mb, wb, ws[mb.parent])
        R = wb.Rw
        p = wb.pw
        Ic = wb.Ih
        rigid_inertia_to_parent(R, p, mb.I, Ic)            # I^w_i
        for j in range(mb.nv):                             # S^w_i = Ad_{T_world_i} S_i
            Ad_column_into(R, p, wb.S[:, j], wb.U, j)
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


@kernel(STATUS(MODEL_T, WS_T, VEC_T, MAT_T), cache=True, fastmath=FASTMATH)
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
