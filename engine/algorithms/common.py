"""Pieces shared by the compiled algorithms: numba types of the packed model and workspace,
argument checks that report a status code instead of raising, the joint pose update
T_i = T_placement X_J(q_i), the first (velocity) pass of Tables 2-4, and a small SPD inverse.

Coordinate-axis joints: most joints of real robots turn about +-x, +-y or +-z of a placement that is
not rotated (28 of the humanoid's 28 joints, 38 of Talos's 45 bodies). For those (``mb.axis`` = k,
set by the model) T_i = (Rot_k(+-q_i), p) has a rotation with four non-trivial entries, and the frame
changes of the passes (``to_child``, ``wrench_to_parent_add``, ``inertia_to_parent_add``,
``world_pose_body``) take the sparse form: the articulated-inertia transfer Ad* Pi Ad costs ~40
products for the rotation instead of 162. The numbers are those of the general path to rounding
(tests/test_axis_joints.py).

Inlining: the small per-body helpers (spatial algebra, the joint update, argument checks) are
inlined into each kernel at numba's IR level, which is what makes them fast; the larger steps
(Cholesky, inertia frame changes, passes shared by several kernels) are left to LLVM, which keeps
the cold compile of every kernel near a minute instead of several. A pass used by a single kernel
(rnea_passes, crba_passes) is inlined: it costs no extra compile time there.

The kernels' argument types, status codes and the ``kernel`` decorator are the calling convention,
``engine/kernel/layout.py``.
"""
from __future__ import annotations

import numpy as np

from engine.maths.joints import joint_calc
from engine.kernel.layout import njit, OK, OVERFLOW, ARG, BAD_LENGTH, NOT_FINITE
from engine.maths.spatial import (axis_plane, Ad_inv_into, Ad_inv_axis_into, Ad_inv_dual_add,
                                  Ad_inv_dual_axis_add, ad_into, congruence_add_blocks, congruence_axis_add)





@njit(cache=True, inline="always")
def check_vec(x, n, k):
    """Status for argument k: 10k+1 wrong length, 10k+2 not finite, 0 fine."""
    if x.shape[0] != n:
        return ARG * k + BAD_LENGTH
    for j in range(n):
        if not np.isfinite(x[j]):
            return ARG * k + NOT_FINITE
    return OK


@njit(cache=True, inline="always")
def check_result(x, n):
    """OVERFLOW when an output of a kernel whose inputs were finite is NaN or Inf, else OK."""
    for j in range(n):
        if not np.isfinite(x[j]):
            return OVERFLOW
    return OK


@njit(cache=True, inline="always")
def axis_pose(mb, wb, q):
    """joint_pose for a revolute joint about +-e_k of an unrotated placement (k = mb.axis >= 0):
    R = Rot_k(+-q_i), p the placement's, S = (+-e_k, 0). Returns (cos, sin) of the angle."""
    k = mb.axis
    sg = mb.a1[k]
    th = sg * q[mb.iq]
    c = np.cos(th)
    s = np.sin(th)
    i, j = axis_plane(k)
    R = wb.R
    S = wb.S
    for r in range(3):
        R[r, 0] = 0.0
        R[r, 1] = 0.0
        R[r, 2] = 0.0
        wb.p[r] = mb.p[r]
        S[r, 0] = 0.0
        S[3 + r, 0] = 0.0
    R[k, k] = 1.0
    R[i, i] = c
    R[i, j] = -s
    R[j, i] = s
    R[j, j] = c
    S[k, 0] = sg
    return c, s


@njit(cache=True, inline="always")
def joint_pose(mb, wb, q, v, rates):
    """Update body i's joint: T_i = T_placement X_J(q_i) into wb.R, wb.p, and S; with rates also
    dS and c = dS dq (v is not read without rates).
    A revolute joint about +-e_k of an unrotated placement (mb.axis = k >= 0) takes a short path:
    R = Rot_k(+-q_i) directly, p the placement's, S = (+-e_k, 0) (c and dS stay zero); the kernels'
    to_child / wrench_to_parent_add / inertia_to_parent_add then use its sparse rotation."""
    if mb.axis >= 0:
        axis_pose(mb, wb, q)
        return
    joint_calc(mb.code, mb.a1, mb.a2, mb.a3, mb.pitch, q, v, mb.iq, mb.iv,
               wb.RJ, wb.pJ, wb.S, wb.dS, wb.c, wb.tmp, rates)
    RP = mb.R
    RJ = wb.RJ
    pJ = wb.pJ
    R = wb.R
    for r in range(3):
        for k in range(3):
            R[r, k] = RP[r, 0] * RJ[0, k] + RP[r, 1] * RJ[1, k] + RP[r, 2] * RJ[2, k]
        wb.p[r] = mb.p[r] + RP[r, 0] * pJ[0] + RP[r, 1] * pJ[1] + RP[r, 2] * pJ[2]


@njit(cache=True, inline="always")
def axis_angle(mb, wb):
    """(k, cos, sin) of body i's joint rotation when mb.axis = k >= 0 (read back from wb.R)."""
    k = mb.axis
    i, j = axis_plane(k)
    return k, wb.R[i, i], wb.R[j, i]


@njit(cache=True, inline="always")
def to_child(mb, wb, x, out):
    """out = Ad_{T_i^-1} x: a twist of the parent's frame in body i's frame (T_i from joint_pose)."""
    if mb.axis >= 0:
        k, c, s = axis_angle(mb, wb)
        Ad_inv_axis_into(k, c, s, wb.p, x, out)
    else:
        Ad_inv_into(wb.R, wb.p, x, out)


@njit(cache=True, inline="always")
def wrench_to_parent_add(mb, wb, F, out):
    """out += Ad*_{T_i^-1} F: a wrench of body i's frame added in the parent's frame."""
    if mb.axis >= 0:
        k, c, s = axis_angle(mb, wb)
        Ad_inv_dual_axis_add(k, c, s, wb.p, F, out)
    else:
        Ad_inv_dual_add(wb.R, wb.p, F, out)


@njit(cache=True, inline="always")
def inertia_to_parent_add(mb, wb, G, out):
    """out += Ad*_{T_i^-1} G Ad_{T_i^-1}: a symmetric 6x6 inertia of body i's frame added in the
    parent's frame (wb.tmp is scratch)."""
    if mb.axis >= 0:
        k, c, s = axis_angle(mb, wb)
        congruence_axis_add(k, c, s, wb.p, G, wb.tmp, out)
    else:
        congruence_add_blocks(wb.R, wb.p, G, wb.tmp, out)


@njit(cache=True, inline="always")
def velocity_pass_body(mb, wb, pb, q, v):
    """First pass of Tables 2-4 for body i:
    V_i = Ad_{T_i^-1} V_lambda(i) + S_i dq_i;  eta_i = ad_{V_i}(S_i dq_i) + dS_i dq_i."""
    k = mb.axis
    if k >= 0:          # S_i dq_i = (+-dq_i e_k, 0), dS_i = 0
        c, s = axis_pose(mb, wb, q)
        Ad_inv_axis_into(k, c, s, wb.p, pb.V, wb.V)
        Sv = wb.Sv
        for r in range(6):
            Sv[r] = 0.0
        dq = mb.a1[k] * v[mb.iv]
        Sv[k] = dq
        wb.V[k] += dq
        ad_into(wb.V, Sv, wb.eta)
        return
    joint_pose(mb, wb, q, v, True)
    Ad_inv_into(wb.R, wb.p, pb.V, wb.V)
    S = wb.S
    Sv = wb.Sv
    iv = mb.iv
    nv = mb.nv
    for r in range(6):
        s = 0.0
        for j in range(nv):
            s += S[r, j] * v[iv + j]
        Sv[r] = s
        wb.V[r] += s
    ad_into(wb.V, Sv, wb.eta)
    for r in range(6):
        wb.eta[r] += wb.c[r]


@njit(cache=True)
def spd_inverse(D, n, out, scale, L, Li):
    """out[:n, :n] = D[:n, :n]^-1 for a symmetric positive-definite D (Cholesky; L and Li are 6x6
    scratch). Returns False if a pivot is <= 1e-12 * scale (numerically singular)."""
    if n == 1:
        d = D[0, 0]
        if not (d > 1e-12 * scale):
            return False
        out[0, 0] = 1.0 / d
        return True
    for j in range(n):
        s = D[j, j]
        for k in range(j):
            s -= L[j, k] * L[j, k]
        if not (s > 1e-12 * scale):
            return False
        L[j, j] = np.sqrt(s)
        for i in range(j + 1, n):
            t = D[i, j]
            for k in range(j):
                t -= L[i, k] * L[j, k]
            L[i, j] = t / L[j, j]
    # inverse of L (lower), then out = L^-T L^-1
    for j in range(n):
        for i in range(j):
            Li[i, j] = 0.0
        Li[j, j] = 1.0 / L[j, j]
        for i in range(j + 1, n):
            t = 0.0
            for k in range(j, i):
                t -= L[i, k] * Li[k, j]
            Li[i, j] = t / L[i, i]
    for i in range(n):
        for j in range(i, n):
            t = 0.0
            for k in range(j, n):
                t += Li[k, i] * Li[k, j]
            out[i, j] = t
            out[j, i] = t
    return True


@njit(cache=True, inline="always")
def inertia_scale(G):
    s = 0.0
    for k in range(6):
        if abs(G[k, k]) > s:
            s = abs(G[k, k])
    return max(s, 1e-300)


@njit(cache=True, inline="always")
def set_identity_pose(w0):
    """The ground: at rest, world pose identity."""
    for r in range(3):
        w0.pw[r] = 0.0
        for c in range(3):
            w0.Rw[r, c] = 1.0 if r == c else 0.0
    for r in range(6):
        w0.V[r] = 0.0


@njit(cache=True, inline="always")
def world_pose_body(mb, wb, pb):
    """T_world_i = T_world_lambda(i) T_i."""
    if mb.axis >= 0:
        # R = Rot_k: column k of the parent's rotation stays, columns i and j turn by the angle
        k, c, s = axis_angle(mb, wb)
        i, j = axis_plane(k)
        for r in range(3):
            x = pb.Rw[r, i]
            y = pb.Rw[r, j]
            wb.Rw[r, k] = pb.Rw[r, k]
            wb.Rw[r, i] = c * x + s * y
            wb.Rw[r, j] = c * y - s * x
            wb.pw[r] = pb.pw[r] + pb.Rw[r, 0] * wb.p[0] + pb.Rw[r, 1] * wb.p[1] + pb.Rw[r, 2] * wb.p[2]
    else:
        for r in range(3):
            for c in range(3):
                wb.Rw[r, c] = pb.Rw[r, 0] * wb.R[0, c] + pb.Rw[r, 1] * wb.R[1, c] + pb.Rw[r, 2] * wb.R[2, c]
            wb.pw[r] = pb.pw[r] + pb.Rw[r, 0] * wb.p[0] + pb.Rw[r, 1] * wb.p[1] + pb.Rw[r, 2] * wb.p[2]


@njit(cache=True, inline="always")
def check_state(m, q, v):
    """Status of (q, v) as arguments 1 and 2."""
    st = check_vec(q, m[0].nq, 1)
    if st == OK:
        st = check_vec(v, m[0].nv, 2)
    return st


@njit(cache=True, inline="always")
def bias_pass(m, ws, q, v, last):
    """Table 2's forward pass with ddq = 0 and no gravity for bodies 1..last (a prefix of the tree):
    world poses, body twists V_i and the accelerations dV_i the velocities alone produce."""
    w0 = ws[0]
    set_identity_pose(w0)
    for r in range(6):
        w0.dV[r] = 0.0
    for i in range(1, last + 1):
        mb = m[i]
        wb = ws[i]
        pb = ws[mb.parent]
        velocity_pass_body(mb, wb, pb, q, v)
        world_pose_body(mb, wb, pb)
        to_child(mb, wb, pb.dV, wb.dV)
        for r in range(6):
            wb.dV[r] += wb.eta[r]
