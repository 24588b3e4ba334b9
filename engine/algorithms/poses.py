"""Kinematics outputs as arrays, computed in the kernel: the world poses of all bodies at once and a
frame's Jacobian in any of the three frames.

World pose of body i: T_world_i = T_world_lambda(i) T_i(q_i). Jacobian columns of the joints j on
the path from the ground to body k, first in the world frame (spatial twist): Ad_{T_world_j} S_j;
then, for the frame f = T_world_k P (P its placement in body k):
    "world":               the spatial twist (w, v_O), as it is;
    "local_world_aligned": (w, v_O + w x p_f), world axes: the velocity of the frame's origin;
    "local":               R_f^T (w, v_O + w x p_f): the body twist of the frame in its own axes.
"""
from __future__ import annotations

from numba import types

from engine.kernel.layout import (MODEL_DTYPE, WS_DTYPE, kernel, FASTMATH, MODEL_T, WS_T, VEC_T, MAT_T, STATUS,
                                  OK, ARR3_T)
from engine.algorithms.common import check_vec, joint_pose
from engine.algorithms.kinematics import world_poses, path_poses

LOCAL, WORLD, LOCAL_WORLD_ALIGNED = 0, 1, 2
FRAME_CODES = {"local": LOCAL, "world": WORLD, "local_world_aligned": LOCAL_WORLD_ALIGNED}


@kernel(STATUS(MODEL_T, WS_T, VEC_T, ARR3_T), cache=True, fastmath=FASTMATH)
def body_poses(m_bytes, ws_bytes, q, out):
    """out[i - 1] = T_world_i (4 x 4) for the movable bodies i = 1..n."""
    m = m_bytes.view(MODEL_DTYPE)
    ws = ws_bytes.view(WS_DTYPE)
    st = check_vec(q, m[0].nq, 1)
    if st != OK:
        return st
    world_poses(m, ws, q)
    for i in range(1, m.shape[0]):
        wb = ws[i]
        T = out[i - 1]
        for r in range(3):
            for c in range(3):
                T[r, c] = wb.Rw[r, c]
            T[r, 3] = wb.pw[r]
            T[3, r] = 0.0
        T[3, 3] = 1.0
    return OK


@kernel(STATUS(MODEL_T, WS_T, VEC_T, types.int64, MAT_T, types.int64, MAT_T), cache=True, fastmath=FASTMATH)
def frame_jacobian(m_bytes, ws_bytes, q, k, P, frame, J):
    """J (6 x nv, zero on entry): Jacobian of the frame with placement P (4 x 4) in body k >= 1,
    rows (angular, linear), in `frame` (LOCAL, WORLD or LOCAL_WORLD_ALIGNED)."""
    m = m_bytes.view(MODEL_DTYPE)
    ws = ws_bytes.view(WS_DTYPE)
    st = check_vec(q, m[0].nq, 1)
    if st != OK:
        return st
    for j in range(1, m.shape[0]):
        if m[j].nq >= 4:
            # a ball or free joint off the path too: its zero quaternion is an error here as in
            # every other call (joint_pose divides by its norm: ZeroDivisionError -> InputError)
            joint_pose(m[j], ws[j], q, q, False)
    path_poses(m, ws, q, k)                   # only the joints that move body k matter
    Rk = ws[k].Rw
    pk = ws[k].pw
    # frame pose in the world: R_f = Rk R_P, p_f = pk + Rk p_P
    f00 = Rk[0, 0] * P[0, 0] + Rk[0, 1] * P[1, 0] + Rk[0, 2] * P[2, 0]
    f01 = Rk[0, 0] * P[0, 1] + Rk[0, 1] * P[1, 1] + Rk[0, 2] * P[2, 1]
    f02 = Rk[0, 0] * P[0, 2] + Rk[0, 1] * P[1, 2] + Rk[0, 2] * P[2, 2]
    f10 = Rk[1, 0] * P[0, 0] + Rk[1, 1] * P[1, 0] + Rk[1, 2] * P[2, 0]
    f11 = Rk[1, 0] * P[0, 1] + Rk[1, 1] * P[1, 1] + Rk[1, 2] * P[2, 1]
    f12 = Rk[1, 0] * P[0, 2] + Rk[1, 1] * P[1, 2] + Rk[1, 2] * P[2, 2]
    f20 = Rk[2, 0] * P[0, 0] + Rk[2, 1] * P[1, 0] + Rk[2, 2] * P[2, 0]
    f21 = Rk[2, 0] * P[0, 1] + Rk[2, 1] * P[1, 1] + Rk[2, 2] * P[2, 1]
    f22 = Rk[2, 0] * P[0, 2] + Rk[2, 1] * P[1, 2] + Rk[2, 2] * P[2, 2]
    x0 = pk[0] + Rk[0, 0] * P[0, 3] + Rk[0, 1] * P[1, 3] + Rk[0, 2] * P[2, 3]
    x1 = pk[1] + Rk[1, 0] * P[0, 3] + Rk[1, 1] * P[1, 3] + Rk[1, 2] * P[2, 3]
    x2 = pk[2] + Rk[2, 0] * P[0, 3] + Rk[2, 1] * P[1, 3] + Rk[2, 2] * P[2, 3]
    j = k
    while j > 0:
        wj = ws[j]
        mj = m[j]
        R = wj.Rw
        p = wj.pw
        for col in range(mj.nv):
            s = wj.S[:, col]
            # spatial twist of the joint's column: w = R s_w, v_O = p x w + R s_v
            w0 = R[0, 0] * s[0] + R[0, 1] * s[1] + R[0, 2] * s[2]
            w1 = R[1, 0] * s[0] + R[1, 1] * s[1] + R[1, 2] * s[2]
            w2 = R[2, 0] * s[0] + R[2, 1] * s[1] + R[2, 2] * s[2]
            v0 = p[1] * w2 - p[2] * w1 + R[0, 0] * s[3] + R[0, 1] * s[4] + R[0, 2] * s[5]
            v1 = p[2] * w0 - p[0] * w2 + R[1, 0] * s[3] + R[1, 1] * s[4] + R[1, 2] * s[5]
            v2 = p[0] * w1 - p[1] * w0 + R[2, 0] * s[3] + R[2, 1] * s[4] + R[2, 2] * s[5]
            if frame != WORLD:
                # velocity of the frame's origin: v_O + w x p_f
                v0 += w1 * x2 - w2 * x1
                v1 += w2 * x0 - w0 * x2
                v2 += w0 * x1 - w1 * x0
            c = mj.iv + col
            if frame == LOCAL:
                J[0, c] = f00 * w0 + f10 * w1 + f20 * w2
                J[1, c] = f01 * w0 + f11 * w1 + f21 * w2
                J[2, c] = f02 * w0 + f12 * w1 + f22 * w2
                J[3, c] = f00 * v0 + f10 * v1 + f20 * v2
                J[4, c] = f01 * v0 + f11 * v1 + f21 * v2
                J[5, c] = f02 * v0 + f12 * v1 + f22 * v2
            else:
                J[0, c] = w0
                J[1, c] = w1
                J[2, c] = w2
                J[3, c] = v0
                J[4, c] = v1
                J[5, c] = v2
        j = mj.parent
    return OK
