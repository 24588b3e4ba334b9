"""World-frame kinematics of one frame attached to a body, for the loop constraints
(engine/loops/constraints.py): in one compiled call, what every closure reads.

For the frame F with placement P = (Rp, c) in body k (0 = the ground), with (R_k, p_k) the world pose
of body k, V_k = (w, u) its body twist and dV_k = (dw, du) its bias acceleration (Table 2's forward
pass with ddq = 0 and no gravity: the acceleration the velocities alone produce):
    R     = R_k Rp,                  p   = p_k + R_k c
    omega = R_k w,                   vel = R_k (u + w x c)                          (world components)
    alpha = R_k dw,                  acc = R_k (du + dw x c + w x (u + w x c))
and the Jacobians with omega = Jw dq, vel = Jv dq: for every joint j on the path from the ground to
k, with S_j in frame {j} and (R_j, p_j) its world pose, the columns
    Jw = R_j S_j,w,                  Jv = R_j S_j,v + (R_j S_j,w) x (p - p_j).
"""
from __future__ import annotations

from numba import types

from engine.kernel.layout import (MODEL_DTYPE, WS_DTYPE, kernel, FASTMATH, MODEL_T, WS_T, VEC_T, MAT_T, STATUS,
                                  OK)
from engine.algorithms.common import check_state, bias_pass


@kernel(STATUS(MODEL_T, WS_T, VEC_T, VEC_T, types.int64, MAT_T, MAT_T, MAT_T), cache=True, fastmath=FASTMATH)
def frame_kinematics(m_bytes, ws_bytes, q, v, k, P, out, J):
    """out (8 x 3): rows 0-2 R (world rotation of the frame), 3 p, 4 omega, 5 vel, 6 alpha, 7 acc;
    J (6 x nv): rows 0-2 Jw, 3-5 Jv (zero outside the path). Status code."""
    m = m_bytes.view(MODEL_DTYPE)
    ws = ws_bytes.view(WS_DTYPE)
    st = check_state(m, q, v)
    if st != OK:
        return st
    bias_pass(m, ws, q, v, k)                 # the ancestors of k all have smaller indices
    wk = ws[k]
    Rk = wk.Rw
    c0, c1, c2 = P[0, 3], P[1, 3], P[2, 3]
    w_0, w_1, w_2 = wk.V[0], wk.V[1], wk.V[2]
    dw0, dw1, dw2 = wk.dV[0], wk.dV[1], wk.dV[2]
    # velocity of the frame origin and its bias acceleration, in body k's axes
    vc0 = wk.V[3] + w_1 * c2 - w_2 * c1
    vc1 = wk.V[4] + w_2 * c0 - w_0 * c2
    vc2 = wk.V[5] + w_0 * c1 - w_1 * c0
    ac0 = wk.dV[3] + dw1 * c2 - dw2 * c1 + w_1 * vc2 - w_2 * vc1
    ac1 = wk.dV[4] + dw2 * c0 - dw0 * c2 + w_2 * vc0 - w_0 * vc2
    ac2 = wk.dV[5] + dw0 * c1 - dw1 * c0 + w_0 * vc1 - w_1 * vc0
    for r in range(3):
        for col in range(3):
            out[r, col] = Rk[r, 0] * P[0, col] + Rk[r, 1] * P[1, col] + Rk[r, 2] * P[2, col]
        out[3, r] = wk.pw[r] + Rk[r, 0] * c0 + Rk[r, 1] * c1 + Rk[r, 2] * c2
        out[4, r] = Rk[r, 0] * w_0 + Rk[r, 1] * w_1 + Rk[r, 2] * w_2
        out[5, r] = Rk[r, 0] * vc0 + Rk[r, 1] * vc1 + Rk[r, 2] * vc2
        out[6, r] = Rk[r, 0] * dw0 + Rk[r, 1] * dw1 + Rk[r, 2] * dw2
        out[7, r] = Rk[r, 0] * ac0 + Rk[r, 1] * ac1 + Rk[r, 2] * ac2
    for r in range(6):
        for col in range(J.shape[1]):
            J[r, col] = 0.0
    p0, p1, p2 = out[3, 0], out[3, 1], out[3, 2]
    j = k
    while j > 0:
        mj = m[j]
        wj = ws[j]
        Rj = wj.Rw
        d0, d1, d2 = p0 - wj.pw[0], p1 - wj.pw[1], p2 - wj.pw[2]
        for a in range(mj.nv):
            s = wj.S[:, a]
            col = mj.iv + a
            o0 = Rj[0, 0] * s[0] + Rj[0, 1] * s[1] + Rj[0, 2] * s[2]
            o1 = Rj[1, 0] * s[0] + Rj[1, 1] * s[1] + Rj[1, 2] * s[2]
            o2 = Rj[2, 0] * s[0] + Rj[2, 1] * s[1] + Rj[2, 2] * s[2]
            J[0, col] = o0
            J[1, col] = o1
            J[2, col] = o2
            J[3, col] = Rj[0, 0] * s[3] + Rj[0, 1] * s[4] + Rj[0, 2] * s[5] + o1 * d2 - o2 * d1
            J[4, col] = Rj[1, 0] * s[3] + Rj[1, 1] * s[4] + Rj[1, 2] * s[5] + o2 * d0 - o0 * d2
            J[5, col] = Rj[2, 0] * s[3] + Rj[2, 1] * s[4] + Rj[2, 2] * s[5] + o0 * d1 - o1 * d0
        j = mj.parent
    return OK
