"""Articulated response: accelerations caused by generalized forces alone, M^-1 B, with the
articulated-body recursion of Table 3 (or Table 4's for prescribed joints) evaluated with zero
velocity and zero gravity. The articulated inertias are computed once and reused for every column
of B, so M is never formed or inverted (Kim 2012, Section 3: "M^-1 times a vector is one
articulated-body pass").

For acceleration-prescribed joints (prescribed[k] True) the prescribed acceleration is zero and the
result row is zero: the response is that of the hybrid system, which is what constrained hybrid
dynamics needs.
"""
from __future__ import annotations


from engine.kernel.layout import (MODEL_DTYPE, WS_DTYPE, kernel, FASTMATH, MODEL_T, WS_T, VEC_T, MAT_T, BOOL_T,
                                  STATUS, OK)
from engine.algorithms.common import (check_vec, joint_pose, to_child, wrench_to_parent_add,
                                      inertia_to_parent_add)
from engine.algorithms.aba import joint_space_inertia, articulated_inertia


@kernel(STATUS(MODEL_T, WS_T, VEC_T, BOOL_T, MAT_T, MAT_T), cache=True, fastmath=FASTMATH)
def articulated_response(m_bytes, ws_bytes, q, prescribed, B, X):
    """X[:, k] = accelerations from the generalized force B[:, k] (nv x k each). Status code."""
    m = m_bytes.view(MODEL_DTYPE)
    ws = ws_bytes.view(WS_DTYPE)
    st = check_vec(q, m[0].nq, 1)
    if st != OK:
        return st
    n = m.shape[0] - 1
    for i in range(1, n + 1):
        mb = m[i]
        wb = ws[i]
        joint_pose(mb, wb, q, q, False)
        for r in range(6):
            for c in range(6):
                wb.Ih[r, c] = mb.I[r, c]
    # articulated inertias (depend on q only)
    for i in range(n, 0, -1):
        mb = m[i]
        wb = ws[i]
        nv = mb.nv
        Ih = wb.Ih
        if prescribed[mb.iv]:
            for r in range(6):
                for c in range(6):
                    wb.Pi[r, c] = Ih[r, c]
        else:
            if not joint_space_inertia(mb, wb):
                return -i
            articulated_inertia(mb, wb)
        if mb.parent > 0:
            inertia_to_parent_add(mb, wb, wb.Pi, ws[mb.parent].Ih)
    for col in range(B.shape[1]):
        for i in range(n + 1):
            for r in range(6):
                ws[i].Bh[r] = 0.0
                ws[i].dV[r] = 0.0
        for i in range(n, 0, -1):
            mb = m[i]
            wb = ws[i]
            nv = mb.nv
            iv = mb.iv
            for r in range(6):
                wb.beta[r] = wb.Bh[r]
            if not prescribed[iv]:
                for j in range(nv):
                    s = B[iv + j, col]
                    for k in range(6):
                        s -= wb.S[k, j] * wb.Bh[k]
                    wb.u[j] = s
                for j in range(nv):
                    s = 0.0
                    for k in range(nv):
                        s += wb.Dinv[j, k] * wb.u[k]
                    wb.Sv[j] = s          # Dinv u
                for r in range(6):
                    s = 0.0
                    for j in range(nv):
                        s += wb.U[r, j] * wb.Sv[j]
                    wb.beta[r] += s
            if mb.parent > 0:
                wrench_to_parent_add(mb, wb, wb.beta, ws[mb.parent].Bh)
        for i in range(1, n + 1):
            mb = m[i]
            wb = ws[i]
            nv = mb.nv
            iv = mb.iv
            to_child(mb, wb, ws[mb.parent].dV, wb.dV)
            if prescribed[iv]:
                for j in range(nv):
                    X[iv + j, col] = 0.0
            else:
                for j in range(nv):
                    s = wb.u[j]
                    for k in range(6):
                        s -= wb.U[k, j] * wb.dV[k]
                    wb.Sv[j] = s
                for j in range(nv):
                    s = 0.0
                    for k in range(nv):
                        s += wb.Dinv[j, k] * wb.Sv[k]
                    X[iv + j, col] = s
                for r in range(6):
                    s = 0.0
                    for j in range(nv):
                        s += wb.S[r, j] * X[iv + j, col]
                    wb.dV[r] += s
    return OK
