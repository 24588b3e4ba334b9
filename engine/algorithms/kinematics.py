"""Kinematics: world poses of the bodies, body and world Jacobians, centre of mass, energies.

Poses: T_world_i = T_world_lambda(i) T_i(q_i). Body Jacobian of body k (6 x nv, frame {k}): for each
joint j on the path from the ground to k, columns Ad_{T_jk^-1} S_j where T_jk is the pose of {k}
in {j}; all other columns are zero. Energies: kinetic sum_i 1/2 V_i^T I_i V_i + 1/2 armature_i dq_i^2; potential
-sum_i m_i g . c_i (c_i the world centre of mass of body i).
"""
from __future__ import annotations

from numba import types

from engine.kernel.layout import (njit, MODEL_DTYPE, WS_DTYPE, kernel, FASTMATH, MODEL_T, WS_T, VEC_T, MAT_T,
                                  STATUS, OK)
from engine.algorithms.common import (check_vec, check_result, check_state, joint_pose, velocity_pass_body,
                                      world_pose_body, set_identity_pose, bias_pass)
from engine.maths.spatial import mat6_vec


@njit(cache=True)
def world_poses(m, ws, q):
    n = m.shape[0] - 1
    w0 = ws[0]
    set_identity_pose(w0)
    for i in range(1, n + 1):
        mb = m[i]
        wb = ws[i]
        pb = ws[mb.parent]
        joint_pose(mb, wb, q, q, False)
        world_pose_body(mb, wb, pb)


@njit(cache=True)
def path_poses(m, ws, q, k):
    """The world poses of body k and of its ancestors only (the bodies whose joints move k), root
    first; the other bodies' poses are not touched. The path is found by walking up from k once per
    level (O(d^2) integer steps for depth d, nothing allocated)."""
    set_identity_pose(ws[0])
    depth = 0
    j = k
    while j > 0:
        depth += 1
        j = m[j].parent
    for level in range(depth - 1, -1, -1):       # the ancestor `level` steps above k
        j = k
        for _ in range(level):
            j = m[j].parent
        mb = m[j]
        wb = ws[j]
        joint_pose(mb, wb, q, q, False)
        world_pose_body(mb, wb, ws[mb.parent])


@kernel(STATUS(MODEL_T, WS_T, VEC_T, MAT_T), cache=True, fastmath=FASTMATH)
def forward_kinematics(m_bytes, ws_bytes, q, out):
    """out[i] = (R_world_i row-major (9), p_world_i (3)) for i = 0..n."""
    m = m_bytes.view(MODEL_DTYPE)
    ws = ws_bytes.view(WS_DTYPE)
    st = check_vec(q, m[0].nq, 1)
    if st != OK:
        return st
    world_poses(m, ws, q)
    for i in range(m.shape[0]):
        wb = ws[i]
        for r in range(3):
            for c in range(3):
                out[i, 3 * r + c] = wb.Rw[r, c]
            out[i, 9 + r] = wb.pw[r]
    return OK


@kernel(STATUS(MODEL_T, WS_T, VEC_T, types.int64, MAT_T), cache=True, fastmath=FASTMATH)
def body_jacobian(m_bytes, ws_bytes, q, k, J):
    """J (6 x nv, zero on entry): Jacobian of body k's twist in its own frame {k}."""
    m = m_bytes.view(MODEL_DTYPE)
    ws = ws_bytes.view(WS_DTYPE)
    st = check_vec(q, m[0].nq, 1)
    if st != OK:
        return st
    world_poses(m, ws, q)
    Rk = ws[k].Rw
    pk = ws[k].pw
    j = k
    while j > 0:
        wj = ws[j]
        mj = m[j]
        # T_kj = T_world_k^-1 T_world_j: R = Rk^T Rj, p = Rk^T (pj - pk); column = Ad_{T_kj} S_j
        R = wj.tmp
        p = wj.u
        for r in range(3):
            for c in range(3):
                R[r, c] = Rk[0, r] * wj.Rw[0, c] + Rk[1, r] * wj.Rw[1, c] + Rk[2, r] * wj.Rw[2, c]
        for r in range(3):
            p[r] = Rk[0, r] * (wj.pw[0] - pk[0]) + Rk[1, r] * (wj.pw[1] - pk[1]) + Rk[2, r] * (wj.pw[2] - pk[2])
        for col in range(mj.nv):
            s = wj.S[:, col]
            w0 = R[0, 0] * s[0] + R[0, 1] * s[1] + R[0, 2] * s[2]
            w1 = R[1, 0] * s[0] + R[1, 1] * s[1] + R[1, 2] * s[2]
            w2 = R[2, 0] * s[0] + R[2, 1] * s[1] + R[2, 2] * s[2]
            v0_ = R[0, 0] * s[3] + R[0, 1] * s[4] + R[0, 2] * s[5]
            v1_ = R[1, 0] * s[3] + R[1, 1] * s[4] + R[1, 2] * s[5]
            v2_ = R[2, 0] * s[3] + R[2, 1] * s[4] + R[2, 2] * s[5]
            c = mj.iv + col
            J[0, c] = w0
            J[1, c] = w1
            J[2, c] = w2
            J[3, c] = v0_ + p[1] * w2 - p[2] * w1
            J[4, c] = v1_ + p[2] * w0 - p[0] * w2
            J[5, c] = v2_ + p[0] * w1 - p[1] * w0
        j = mj.parent
    return OK


@kernel(STATUS(MODEL_T, WS_T, VEC_T, VEC_T), cache=True, fastmath=FASTMATH)
def center_of_mass(m_bytes, ws_bytes, q, out):
    """out = (com_world (3), total mass)."""
    m = m_bytes.view(MODEL_DTYPE)
    ws = ws_bytes.view(WS_DTYPE)
    st = check_vec(q, m[0].nq, 1)
    if st != OK:
        return st
    world_poses(m, ws, q)
    tot = 0.0
    c0 = c1 = c2 = 0.0
    for i in range(1, m.shape[0]):
        mb = m[i]
        wb = ws[i]
        mi = mb.mass
        cc = mb.com
        for r in range(3):
            x = wb.pw[r] + wb.Rw[r, 0] * cc[0] + wb.Rw[r, 1] * cc[1] + wb.Rw[r, 2] * cc[2]
            if r == 0:
                c0 += mi * x
            elif r == 1:
                c1 += mi * x
            else:
                c2 += mi * x
        tot += mi
    out[0] = c0 / tot if tot > 0 else 0.0
    out[1] = c1 / tot if tot > 0 else 0.0
    out[2] = c2 / tot if tot > 0 else 0.0
    out[3] = tot
    return OK


@kernel(STATUS(MODEL_T, WS_T, VEC_T, VEC_T, VEC_T), cache=True, fastmath=FASTMATH)
def energy(m_bytes, ws_bytes, q, v, out):
    """out = (kinetic, potential): sum 1/2 V_i^T I_i V_i + 1/2 armature_i dq_i^2 (= 1/2 dq^T M dq) and
    -sum m_i g . c_i (g = -dV_0 linear part)."""
    m = m_bytes.view(MODEL_DTYPE)
    ws = ws_bytes.view(WS_DTYPE)
    st = check_state(m, q, v)
    if st != OK:
        return st
    n = m.shape[0] - 1
    w0 = ws[0]
    set_identity_pose(w0)
    ke = 0.0
    pe = 0.0
    g = m[0].g
    for i in range(1, n + 1):
        mb = m[i]
        wb = ws[i]
        pb = ws[mb.parent]
        velocity_pass_body(mb, wb, pb, q, v)
        mat6_vec(mb.I, wb.V, wb.u)
        for r in range(6):
            ke += 0.5 * wb.V[r] * wb.u[r]
        for j in range(mb.nv):      # rotor (armature) energy: M carries armature on its diagonal
            ke += 0.5 * mb.armature[j] * v[mb.iv + j] * v[mb.iv + j]
        world_pose_body(mb, wb, pb)
        cc = mb.com
        for r in range(3):
            x = wb.pw[r] + wb.Rw[r, 0] * cc[0] + wb.Rw[r, 1] * cc[1] + wb.Rw[r, 2] * cc[2]
            pe += mb.mass * g[3 + r] * x      # -m g.c with g = -dV_0
    out[0] = ke
    out[1] = pe
    return check_result(out, 2)


@kernel(STATUS(MODEL_T, WS_T, VEC_T, VEC_T, MAT_T, MAT_T), cache=True, fastmath=FASTMATH)
def body_velocities(m_bytes, ws_bytes, q, v, Vout, Tout):
    """Vout[i] = V_i (body twist, frame {i}); Tout[i] = world pose (R row-major, p) for i = 0..n."""
    m = m_bytes.view(MODEL_DTYPE)
    ws = ws_bytes.view(WS_DTYPE)
    st = check_state(m, q, v)
    if st != OK:
        return st
    w0 = ws[0]
    set_identity_pose(w0)
    for i in range(1, m.shape[0]):
        mb = m[i]
        wb = ws[i]
        pb = ws[mb.parent]
        velocity_pass_body(mb, wb, pb, q, v)
        world_pose_body(mb, wb, pb)
    for i in range(m.shape[0]):
        wb = ws[i]
        for r in range(6):
            Vout[i, r] = wb.V[r]
        for r in range(3):
            for c in range(3):
                Tout[i, 3 * r + c] = wb.Rw[r, c]
            Tout[i, 9 + r] = wb.pw[r]
    return OK


@kernel(STATUS(MODEL_T, WS_T, VEC_T, VEC_T, MAT_T, MAT_T, MAT_T), cache=True, fastmath=FASTMATH)
def body_bias(m_bytes, ws_bytes, q, v, Tout, Vout, Aout):
    """For i = 0..n: Tout[i] world pose (R row-major, p), Vout[i] body twist V_i, Aout[i] the body
    acceleration dV_i the velocities alone produce (ddq = 0, no gravity): Table 2's forward pass."""
    m = m_bytes.view(MODEL_DTYPE)
    ws = ws_bytes.view(WS_DTYPE)
    st = check_state(m, q, v)
    if st != OK:
        return st
    bias_pass(m, ws, q, v, m.shape[0] - 1)
    for i in range(m.shape[0]):
        wb = ws[i]
        for r in range(6):
            Vout[i, r] = wb.V[r]
            Aout[i, r] = wb.dV[r]
        for r in range(3):
            for c in range(3):
                Tout[i, 3 * r + c] = wb.Rw[r, c]
            Tout[i, 9 + r] = wb.pw[r]
    return OK
