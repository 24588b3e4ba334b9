"""A Coriolis matrix with dM/dt - 2C skew-symmetric (algorithms.md, "Lagrangian quantities").

With J_i the body Jacobian of body i (frame {i}) and h_i = I_i V_i its momentum,
    C = sum_i J_i^T (I_i dJ_i/dt - hbar_i J_i),   hbar = [[[m], [f]], [[f], 0]] for h = (m, f),
because ad*_V h = -hbar V (so C dq is the velocity-product part of b) and hbar is skew-symmetric
(so dM/dt - 2C = sum_i (dJ_i^T I_i J_i - J_i^T I_i dJ_i) + 2 J_i^T hbar_i J_i is skew).
Recursively J_i = Ad_{T_i^-1} J_lambda(i) + [S_i] and
dJ_i/dt = Ad_{T_i^-1} dJ_lambda(i) - ad_{S_i dq_i} Ad_{T_i^-1} J_lambda(i) + [dS_i].
"""
from __future__ import annotations

from numba import njit, types

from ..model import MODEL_DTYPE, WS_DTYPE
from .common import FASTMATH, MODEL_T, WS_T, VEC_T, MAT_T, STATUS, OK, check_vec, velocity_pass_body
from ..spatial import Ad_inv_into, ad_into, mat6_vec

ARR3_T = types.Array(types.float64, 3, "C")


@njit(STATUS(MODEL_T, WS_T, VEC_T, VEC_T, ARR3_T, ARR3_T, MAT_T, MAT_T, MAT_T), cache=True, fastmath=FASTMATH)
def coriolis(m_bytes, ws_bytes, q, v, J, Jd, A, x, C):
    """Fill C (nv x nv, zero on entry). J and Jd are (n+1, 6, nv), A (6, nv) and x (2, 6) scratch:
    nothing is allocated. Only the columns of body i's ancestors (the joints between the ground and
    i, i included) are visited: J_i and dJ_i/dt are zero in every other column. Status code."""
    m = m_bytes.view(MODEL_DTYPE)
    ws = ws_bytes.view(WS_DTYPE)
    nv = m[0].nv
    st = check_vec(q, m[0].nq, 1)
    if st == OK:
        st = check_vec(v, nv, 2)
    if st != OK:
        return st
    n = m.shape[0] - 1
    for r in range(6):
        ws[0].V[r] = 0.0
    col = x[0]
    tmp = x[1]
    for i in range(1, n + 1):
        mb = m[i]
        wb = ws[i]
        p = mb.parent
        velocity_pass_body(mb, wb, ws[p], q, v)
        # ancestors' columns: J_i col k = X J_p col k; dJ_i col k = X dJ_p col k - ad_{Sv} (X J_p col k)
        j = p
        while j > 0:
            for k in range(m[j].iv, m[j].iv + m[j].nv):
                Ad_inv_into(wb.R, wb.p, J[p, :, k], col)
                Ad_inv_into(wb.R, wb.p, Jd[p, :, k], tmp)
                for r in range(6):
                    J[i, r, k] = col[r]
                ad_into(wb.Sv, col, col)
                for r in range(6):
                    Jd[i, r, k] = tmp[r] - col[r]
            j = m[j].parent
        for jj in range(mb.nv):
            for r in range(6):
                J[i, r, mb.iv + jj] = wb.S[r, jj]
                Jd[i, r, mb.iv + jj] = wb.dS[r, jj]
        # A = I dJ - hbar J with h = I V, on the ancestor columns
        mat6_vec(mb.I, wb.V, tmp)
        m0, m1, m2, f0, f1, f2 = tmp[0], tmp[1], tmp[2], tmp[3], tmp[4], tmp[5]
        j = i
        while j > 0:
            for k in range(m[j].iv, m[j].iv + m[j].nv):
                for r in range(6):
                    s = 0.0
                    for c in range(6):
                        s += mb.I[r, c] * Jd[i, c, k]
                    A[r, k] = s
                w0, w1, w2 = J[i, 0, k], J[i, 1, k], J[i, 2, k]
                u0, u1, u2 = J[i, 3, k], J[i, 4, k], J[i, 5, k]
                # hbar (w, u) = (m x w + f x u, f x w)
                A[0, k] -= m1 * w2 - m2 * w1 + f1 * u2 - f2 * u1
                A[1, k] -= m2 * w0 - m0 * w2 + f2 * u0 - f0 * u2
                A[2, k] -= m0 * w1 - m1 * w0 + f0 * u1 - f1 * u0
                A[3, k] -= f1 * w2 - f2 * w1
                A[4, k] -= f2 * w0 - f0 * w2
                A[5, k] -= f0 * w1 - f1 * w0
            j = m[j].parent
        # C[a, b] += J_i[:, a] . A[:, b] over ancestor columns a, b
        ja = i
        while ja > 0:
            for a in range(m[ja].iv, m[ja].iv + m[ja].nv):
                jb = i
                while jb > 0:
                    for b in range(m[jb].iv, m[jb].iv + m[jb].nv):
                        s = 0.0
                        for r in range(6):
                            s += J[i, r, a] * A[r, b]
                        C[a, b] += s
                    jb = m[jb].parent
            ja = m[ja].parent
    return OK
