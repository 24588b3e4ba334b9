"""Closed loops compiled: the residual f, the Jacobian A and the bias dA dq of the built-in
constraint kinds in one kernel, and constrained forward / hybrid dynamics in one call
(Kim 2012, Section 3):

    a0 = ABA(q, v, tau)   (or hybrid dynamics),   G = M^-1 A^T  (articulated response),
    K = A G,   rhs = -(dA dq) - 2 alpha A dq - beta^2 f - A a0,   K lambda = rhs (Cholesky),
    ddq = a0 + G lambda.

The rows are those of ``engine.loops.constraints`` (same formulas, world components), read from a packed
description of the constraints (``pack``). The frame kinematics follow ``algorithms/frames.py``,
with Table 2's bias pass run once for all bodies. ``project_into`` moves a state back onto the
constraints as ``engine.loops.constrained.project_constraints`` does (the step loop's drift correction). When K is rank deficient (a pivot below
RANK_TOL times the largest diagonal entry) the kernel returns RANK_DEFICIENT and the caller takes the
rank-revealing Python path, which names the rows in its warning. A user's Pfaffian constraint is not
packed: models with one use the Python path.
"""
from __future__ import annotations

import math

import numpy as np
from numba import types

from engine.kernel.layout import (njit, MODEL_DTYPE, WS_DTYPE, kernel, FASTMATH, MODEL_T, WS_T, VEC_T, MAT_T,
                                  BOOL_T, STATUS, OK, IMAT_T, COINCIDENT, FLAT_DISK, RANK_DEFICIENT,
                                  NOT_PROJECTED)
from engine.algorithms.common import bias_pass
from engine.algorithms.aba import aba
from engine.algorithms.hybrid import hybrid
from engine.algorithms.liegroup import integrate
from engine.algorithms.response import articulated_response
from engine.maths.spatial import so3_log_of


POINT, REVOLUTE, WELD, DISTANCE, GEAR, ROLLING = range(6)
KIND_CODES = {"point": POINT, "revolute": REVOLUTE, "weld": WELD, "distance": DISTANCE, "gear": GEAR,
              "rolling": ROLLING}
# integer columns
C_KIND, C_BODY_A, C_BODY_B, C_ROW, C_ROWS, C_IQ_I, C_IQ_J, C_IV_I, C_IV_J = range(9)
NI = 9
# float columns
F_PA, F_PB, F_D, F_LENGTH, F_RATIO, F_OFFSET, F_RADIUS, F_AXIS, F_GROUND = 0, 16, 32, 41, 42, 43, 44, 45, 48
NF = 49

RANK_TOL = 1e-10
PROJECT_TOL = 1e-12      # |f| at which the Gauss-Newton iteration stops (project_constraints' tol)
PROJECT_ITER = 50        # its most steps (project_constraints' max_iter)


def pack(constraints, model):
    """(ci, cf, rows) for a list of active built-in constraints, or None if one is not built in."""
    n = len(constraints)
    ci = np.zeros((n, NI), dtype=np.int64)
    cf = np.zeros((n, NF))
    row = 0
    for k, c in enumerate(constraints):
        code = KIND_CODES.get(c.kind)
        if code is None or type(c).__module__ != "engine.loops.constraints":
            return None
        ci[k, C_KIND], ci[k, C_ROW], ci[k, C_ROWS] = code, row, c.rows
        if code in (POINT, REVOLUTE, WELD, DISTANCE):
            ci[k, C_BODY_A], ci[k, C_BODY_B] = c.body_a, c.body_b
            cf[k, F_PA:F_PA + 16] = np.asarray(c.P_a, dtype=float).reshape(16)
            cf[k, F_PB:F_PB + 16] = np.asarray(c.P_b, dtype=float).reshape(16)
            if code == POINT:
                cf[k, F_D:F_D + 3 * c.rows] = np.asarray(c.D, dtype=float).reshape(-1)
            if code == DISTANCE:
                cf[k, F_LENGTH] = c.length
        elif code == GEAR:
            ci[k, C_IQ_I], ci[k, C_IQ_J] = c.iq
            ci[k, C_IV_I], ci[k, C_IV_J] = c.iv
            cf[k, F_RATIO], cf[k, F_OFFSET] = c.ratio, c.offset
        else:
            ci[k, C_BODY_A] = c.body
            cf[k, F_PA:F_PA + 16] = np.asarray(c.P, dtype=float).reshape(16)
            cf[k, F_RADIUS] = c.radius
            cf[k, F_AXIS:F_AXIS + 3] = c.axis
            cf[k, F_GROUND] = c.ground
        row += c.rows
    return ci, cf, row


@njit(cache=True, fastmath=FASTMATH)
def frame_state(m, ws, k, cf, c, off, out, J):
    """The state of the frame with placement cf[c, off:off+16] (4 x 4 row-major) in body k, after
    the bias pass: out rows 0-2 R, 3 p, 4 omega, 5 vel, 6 alpha, 7 acc (world); J rows Jw, Jv."""
    wk = ws[k]
    Rk = wk.Rw
    c0, c1, c2 = cf[c, off + 3], cf[c, off + 7], cf[c, off + 11]
    w_0, w_1, w_2 = wk.V[0], wk.V[1], wk.V[2]
    dw0, dw1, dw2 = wk.dV[0], wk.dV[1], wk.dV[2]
    vc0 = wk.V[3] + w_1 * c2 - w_2 * c1
    vc1 = wk.V[4] + w_2 * c0 - w_0 * c2
    vc2 = wk.V[5] + w_0 * c1 - w_1 * c0
    ac0 = wk.dV[3] + dw1 * c2 - dw2 * c1 + w_1 * vc2 - w_2 * vc1
    ac1 = wk.dV[4] + dw2 * c0 - dw0 * c2 + w_2 * vc0 - w_0 * vc2
    ac2 = wk.dV[5] + dw0 * c1 - dw1 * c0 + w_0 * vc1 - w_1 * vc0
    for r in range(3):
        for col in range(3):
            out[r, col] = (Rk[r, 0] * cf[c, off + col] + Rk[r, 1] * cf[c, off + 4 + col]
                           + Rk[r, 2] * cf[c, off + 8 + col])
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


@njit(cache=True, inline="always")
def _cross(a0, a1, a2, b0, b1, b2):
    return a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0


@njit(cache=True, inline="always")
def _rel(sa, sb, r, s):
    """Entry (r, s) of R_b^T R_a, the rotations in rows 0-2 of two frame states (the weld's
    relative rotation, formed entry by entry: nothing allocated)."""
    return sb[0, r] * sa[0, s] + sb[1, r] * sa[1, s] + sb[2, r] * sa[2, s]


@njit(cache=True, fastmath=FASTMATH)
def rows_into(m, ws, q, v, ci, cf, f, A, bias, sa, sb, Ja, Jb):
    """f, A, bias of the packed constraints (bias pass included). Status code."""
    nv = m[0].nv
    bias_pass(m, ws, q, v, m.shape[0] - 1)
    for c in range(ci.shape[0]):
        kind = ci[c, C_KIND]
        r0 = ci[c, C_ROW]
        if kind == GEAR:
            for k in range(nv):
                A[r0, k] = 0.0
            ratio = cf[c, F_RATIO]
            A[r0, ci[c, C_IV_J]] = 1.0
            A[r0, ci[c, C_IV_I]] -= ratio
            f[r0] = q[ci[c, C_IQ_J]] - ratio * q[ci[c, C_IQ_I]] - cf[c, F_OFFSET]
            bias[r0] = 0.0
            continue
        frame_state(m, ws, ci[c, C_BODY_A], cf, c, np.int64(F_PA), sa, Ja)   # int64: one compile for A and B
        if kind == ROLLING:
            ax0, ax1, ax2 = cf[c, F_AXIS], cf[c, F_AXIS + 1], cf[c, F_AXIS + 2]
            n0 = sa[0, 0] * ax0 + sa[0, 1] * ax1 + sa[0, 2] * ax2
            n1 = sa[1, 0] * ax0 + sa[1, 1] * ax1 + sa[1, 2] * ax2
            n2 = sa[2, 0] * ax0 + sa[2, 1] * ax1 + sa[2, 2] * ax2
            # t = up - (up . n) n, up = (0, 0, 1)
            t0, t1, t2 = -n2 * n0, -n2 * n1, 1.0 - n2 * n2
            tn = math.sqrt(t0 * t0 + t1 * t1 + t2 * t2)
            if tn < 1e-9:
                return FLAT_DISK
            u0, u1, u2 = t0 / tn, t1 / tn, t2 / tn
            rad = cf[c, F_RADIUS]
            h0, h1, h2 = -rad * u0, -rad * u1, -rad * u2          # rho: centre -> contact point
            for k in range(nv):
                # v_center + w x rho  ->  Jv - rho x Jw
                x0, x1, x2 = _cross(h0, h1, h2, Ja[0, k], Ja[1, k], Ja[2, k])
                A[r0, k] = Ja[3, k] - x0
                A[r0 + 1, k] = Ja[4, k] - x1
                A[r0 + 2, k] = Ja[5, k] - x2
            w0, w1, w2 = sa[4, 0], sa[4, 1], sa[4, 2]
            dn0, dn1, dn2 = _cross(w0, w1, w2, n0, n1, n2)
            dt0 = -dn2 * n0 - n2 * dn0
            dt1 = -dn2 * n1 - n2 * dn1
            dt2 = -dn2 * n2 - n2 * dn2
            ud = u0 * dt0 + u1 * dt1 + u2 * dt2
            du0, du1, du2 = (dt0 - u0 * ud) / tn, (dt1 - u1 * ud) / tn, (dt2 - u2 * ud) / tn
            dr0, dr1, dr2 = -rad * du0, -rad * du1, -rad * du2
            a0_, a1_, a2_ = _cross(sa[6, 0], sa[6, 1], sa[6, 2], h0, h1, h2)
            b0_, b1_, b2_ = _cross(w0, w1, w2, dr0, dr1, dr2)
            bias[r0] = sa[7, 0] + a0_ + b0_
            bias[r0 + 1] = sa[7, 1] + a1_ + b1_
            bias[r0 + 2] = sa[7, 2] + a2_ + b2_
            f[r0] = np.nan
            f[r0 + 1] = np.nan
            f[r0 + 2] = sa[3, 2] + h2 - cf[c, F_GROUND]
            continue
        frame_state(m, ws, ci[c, C_BODY_B], cf, c, np.int64(F_PB), sb, Jb)
        if kind == POINT:
            for r in range(ci[c, C_ROWS]):
                D0, D1, D2 = cf[c, F_D + 3 * r], cf[c, F_D + 3 * r + 1], cf[c, F_D + 3 * r + 2]
                f[r0 + r] = D0 * (sa[3, 0] - sb[3, 0]) + D1 * (sa[3, 1] - sb[3, 1]) + D2 * (sa[3, 2] - sb[3, 2])
                bias[r0 + r] = D0 * (sa[7, 0] - sb[7, 0]) + D1 * (sa[7, 1] - sb[7, 1]) + D2 * (sa[7, 2] - sb[7, 2])
                for k in range(nv):
                    A[r0 + r, k] = D0 * (Ja[3, k] - Jb[3, k]) + D1 * (Ja[4, k] - Jb[4, k]) + D2 * (Ja[5, k] - Jb[5, k])
        elif kind == DISTANCE:
            d0, d1, d2 = sa[3, 0] - sb[3, 0], sa[3, 1] - sb[3, 1], sa[3, 2] - sb[3, 2]
            L = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
            if L < 1e-12:
                return COINCIDENT
            e0, e1, e2 = d0 / L, d1 / L, d2 / L
            dd0, dd1, dd2 = sa[5, 0] - sb[5, 0], sa[5, 1] - sb[5, 1], sa[5, 2] - sb[5, 2]
            ed = e0 * dd0 + e1 * dd1 + e2 * dd2
            f[r0] = L - cf[c, F_LENGTH]
            bias[r0] = (e0 * (sa[7, 0] - sb[7, 0]) + e1 * (sa[7, 1] - sb[7, 1]) + e2 * (sa[7, 2] - sb[7, 2])
                        + (dd0 * dd0 + dd1 * dd1 + dd2 * dd2 - ed * ed) / L)
            for k in range(nv):
                A[r0, k] = e0 * (Ja[3, k] - Jb[3, k]) + e1 * (Ja[4, k] - Jb[4, k]) + e2 * (Ja[5, k] - Jb[5, k])
        else:   # REVOLUTE and WELD share the 3 position rows
            for r in range(3):
                f[r0 + r] = sa[3, r] - sb[3, r]
                bias[r0 + r] = sa[7, r] - sb[7, r]
                for k in range(nv):
                    A[r0 + r, k] = Ja[3 + r, k] - Jb[3 + r, k]
            if kind == WELD:
                w = so3_log_of(_rel(sa, sb, 0, 0), _rel(sa, sb, 0, 1), _rel(sa, sb, 0, 2),
                               _rel(sa, sb, 1, 0), _rel(sa, sb, 1, 1), _rel(sa, sb, 1, 2),
                               _rel(sa, sb, 2, 0), _rel(sa, sb, 2, 1), _rel(sa, sb, 2, 2))
                for r in range(3):
                    f[r0 + 3 + r] = sb[r, 0] * w[0] + sb[r, 1] * w[1] + sb[r, 2] * w[2]
                    bias[r0 + 3 + r] = sa[6, r] - sb[6, r]
                    for k in range(nv):
                        A[r0 + 3 + r, k] = Ja[r, k] - Jb[r, k]
            else:
                z0, z1, z2 = sa[0, 2], sa[1, 2], sa[2, 2]
                dz0, dz1, dz2 = _cross(sa[4, 0], sa[4, 1], sa[4, 2], z0, z1, z2)
                dw0, dw1, dw2 = sa[4, 0] - sb[4, 0], sa[4, 1] - sb[4, 1], sa[4, 2] - sb[4, 2]
                for kk in range(2):
                    x0, x1, x2 = sb[0, kk], sb[1, kk], sb[2, kk]
                    nn0, nn1, nn2 = _cross(z0, z1, z2, x0, x1, x2)
                    wx0, wx1, wx2 = _cross(sb[4, 0], sb[4, 1], sb[4, 2], x0, x1, x2)
                    p0, p1, p2 = _cross(dz0, dz1, dz2, x0, x1, x2)
                    s0, s1, s2 = _cross(z0, z1, z2, wx0, wx1, wx2)
                    dn0, dn1, dn2 = p0 + s0, p1 + s1, p2 + s2
                    f[r0 + 3 + kk] = z0 * x0 + z1 * x1 + z2 * x2
                    bias[r0 + 3 + kk] = (nn0 * (sa[6, 0] - sb[6, 0]) + nn1 * (sa[6, 1] - sb[6, 1])
                                         + nn2 * (sa[6, 2] - sb[6, 2]) + dn0 * dw0 + dn1 * dw1 + dn2 * dw2)
                    for k in range(nv):
                        A[r0 + 3 + kk, k] = (nn0 * (Ja[0, k] - Jb[0, k]) + nn1 * (Ja[1, k] - Jb[1, k])
                                             + nn2 * (Ja[2, k] - Jb[2, k]))
    return OK


@njit(cache=True)
def loop_work_size(nv, nr):
    """Length of the float work buffer of ``constrained_dynamics_into`` (see loop_views)."""
    return 5 * nv + 3 * nr + 3 * nr * nv + 2 * nr * nr + 48 + 12 * nv


@njit(cache=True, inline="always")
def loop_views(lw, nv, nr):
    """The scratch arrays of one constrained-dynamics call, as views of lw (loop_work_size floats):
    a0, tau0, ATl, tau_in, tau_u (nv); f, bias, rhs (nr); A (nr x nv), AT, G (nv x nr), K, L
    (nr x nr); sa, sb (8 x 3) and Ja, Jb (6 x nv) of the frame states (rows_into)."""
    o = 0
    a0 = lw[o:o + nv]
    o += nv
    tau0 = lw[o:o + nv]
    o += nv
    ATl = lw[o:o + nv]
    o += nv
    tau_in = lw[o:o + nv]
    o += nv
    tau_u = lw[o:o + nv]
    o += nv
    f = lw[o:o + nr]
    o += nr
    bias = lw[o:o + nr]
    o += nr
    rhs = lw[o:o + nr]
    o += nr
    A = lw[o:o + nr * nv].reshape((nr, nv))
    o += nr * nv
    AT = lw[o:o + nv * nr].reshape((nv, nr))
    o += nv * nr
    G = lw[o:o + nv * nr].reshape((nv, nr))
    o += nv * nr
    K = lw[o:o + nr * nr].reshape((nr, nr))
    o += nr * nr
    L = lw[o:o + nr * nr].reshape((nr, nr))
    o += nr * nr
    sa = lw[o:o + 24].reshape((8, 3))
    o += 24
    sb = lw[o:o + 24].reshape((8, 3))
    o += 24
    Ja = lw[o:o + 6 * nv].reshape((6, nv))
    o += 6 * nv
    Jb = lw[o:o + 6 * nv].reshape((6, nv))
    return a0, tau0, ATl, tau_in, tau_u, f, bias, rhs, A, AT, G, K, L, sa, sb, Ja, Jb


@njit(cache=True, inline="always")
def project_views(lw, nv, nr):
    """The scratch arrays of ``project_into``, carved from the same buffer as loop_views' (the two
    never run at once): the Gauss-Newton step dq, its scaled copy xi, the solve's right-hand side
    y, a zero velocity (nv each), the holonomic row indices hrow (nr, as floats), and f, bias, A,
    AT, G, K, L and the frame-state rows as in loop_views."""
    dq, xi, y, zero, _, f, bias, hrow, A, AT, G, K, L, sa, sb, Ja, Jb = loop_views(lw, nv, nr)
    return dq, xi, y, zero, hrow, f, bias, A, AT, G, K, L, sa, sb, Ja, Jb


@kernel(STATUS(MODEL_T, WS_T, VEC_T, VEC_T, IMAT_T, MAT_T, VEC_T, MAT_T, VEC_T), cache=True, _nrt=True)
def constraint_rows(m_bytes, ws_bytes, q, v, ci, cf, f, A, bias):
    """f (m; NaN on nonholonomic rows), A (m x nv), bias = dA dq (m) of the packed constraints."""
    m = m_bytes.view(MODEL_DTYPE)
    ws = ws_bytes.view(WS_DTYPE)
    nv = m[0].nv
    sa = np.empty((8, 3))
    sb = np.empty((8, 3))
    Ja = np.empty((6, nv))
    Jb = np.empty((6, nv))
    return rows_into(m, ws, q, v, ci, cf, f, A, bias, sa, sb, Ja, Jb)


@njit(cache=True)
def spd_factor(K, L):
    """K = L L^T (lower triangle of L) for symmetric K (m x m). False when a pivot is at or below
    RANK_TOL times the largest diagonal entry (rank deficient: the caller takes the rank-revealing
    path)."""
    n = K.shape[0]
    big = 0.0
    for i in range(n):
        if K[i, i] > big:
            big = K[i, i]
    tol = RANK_TOL * big
    for j in range(n):
        s = K[j, j]
        for k in range(j):
            s -= L[j, k] * L[j, k]
        if not (s > tol):
            return False
        L[j, j] = math.sqrt(s)
        for i in range(j + 1, n):
            t = K[i, j]
            for k in range(j):
                t -= L[i, k] * L[j, k]
            L[i, j] = t / L[j, j]
    return True


@njit(cache=True)
def spd_solve(L, X):
    """X <- (L L^T)^-1 X, every column of X (m x ncol)."""
    n = L.shape[0]
    ncol = X.shape[1]
    for i in range(n):
        for k in range(i):
            t = L[i, k]
            for c in range(ncol):
                X[i, c] -= t * X[k, c]
        d = L[i, i]
        for c in range(ncol):
            X[i, c] /= d
    for i in range(n - 1, -1, -1):
        for k in range(i + 1, n):
            t = L[k, i]
            for c in range(ncol):
                X[i, c] -= t * X[k, c]
        d = L[i, i]
        for c in range(ncol):
            X[i, c] /= d


@njit(cache=True)
def constrained_dynamics_into(m_bytes, ws_dyn, ws_kin, q, v, prescribed, a, tau, ci, cf, nrows, gains,
                              a_out, tau_out, lam, lw):
    """Constrained forward dynamics (no joint prescribed) or hybrid dynamics, Kim 2012 Section 3:
    a_out, tau_out (prescribed joints: the torque they need; others: tau) and the multipliers lam
    (nrows). gains = (use Baumgarte, alpha, beta). tau is the applied torque (damping included).
    lw: loop_work_size(nv, nrows) floats of scratch (allocation-free)."""
    m = m_bytes.view(MODEL_DTYPE)
    nv = m[0].nv
    a0, tau0, ATl, tau_in, tau_u, f, bias, rhs, A, AT, G, K, L, sa, sb, Ja, Jb = loop_views(lw, nv, nrows)
    any_p = False
    for k in range(nv):
        if prescribed[k]:
            any_p = True
    if any_p:
        st = hybrid(m_bytes, ws_dyn, q, v, prescribed, a, tau, a0, tau0)
    else:
        st = aba(m_bytes, ws_dyn, q, v, tau, a0)
    if st != OK:
        return st
    st = rows_into(m, ws_kin.view(WS_DTYPE), q, v, ci, cf, f, A, bias, sa, sb, Ja, Jb)
    if st != OK:
        return st
    for r in range(nrows):
        for k in range(nv):
            AT[k, r] = A[r, k]
    st = articulated_response(m_bytes, ws_dyn, q, prescribed, AT, G)
    if st != OK:
        return st
    for i in range(nrows):
        for j in range(nrows):
            s = 0.0
            for k in range(nv):
                s += A[i, k] * G[k, j]
            K[i, j] = s
    for i in range(nrows):
        for j in range(i + 1, nrows):
            s = 0.5 * (K[i, j] + K[j, i])
            K[i, j] = s
            K[j, i] = s
    for i in range(nrows):
        Av = 0.0
        Aa = 0.0
        for k in range(nv):
            Av += A[i, k] * v[k]
            Aa += A[i, k] * a0[k]
        r = -bias[i]
        if gains[0] != 0.0:
            r -= 2.0 * gains[1] * Av
            if not np.isnan(f[i]):
                r -= gains[2] * gains[2] * f[i]
        rhs[i] = r - Aa
    for i in range(nrows):
        for j in range(nrows):
            L[i, j] = 0.0
    if not spd_factor(K, L):
        return RANK_DEFICIENT
    for i in range(nrows):
        lam[i] = rhs[i]
    spd_solve(L, lam.reshape((nrows, 1)))
    if not any_p:
        for k in range(nv):
            s = a0[k]
            for r in range(nrows):
                s += G[k, r] * lam[r]
            a_out[k] = s
            tau_out[k] = tau[k]
        return OK
    for k in range(nv):
        s = 0.0
        for r in range(nrows):
            s += A[r, k] * lam[r]
        ATl[k] = s
        tau_in[k] = tau[k] if prescribed[k] else tau[k] + s
    st = hybrid(m_bytes, ws_dyn, q, v, prescribed, a, tau_in, a_out, tau_u)
    if st != OK:
        return st
    for k in range(nv):
        tau_out[k] = tau_u[k] - ATl[k] if prescribed[k] else tau[k]
    return OK


@kernel(STATUS(MODEL_T, WS_T, WS_T, VEC_T, VEC_T, BOOL_T, VEC_T, VEC_T, IMAT_T, MAT_T, types.int64, VEC_T,
             VEC_T, VEC_T, VEC_T), cache=True, _nrt=True)
def constrained_dynamics(m_bytes, ws_dyn, ws_kin, q, v, prescribed, a, tau, ci, cf, nrows, gains,
                         a_out, tau_out, lam):
    """``constrained_dynamics_into`` with its work buffer allocated here (one allocation)."""
    nv = m_bytes.view(MODEL_DTYPE)[0].nv
    lw = np.empty(loop_work_size(nv, nrows))
    return constrained_dynamics_into(m_bytes, ws_dyn, ws_kin, q, v, prescribed, a, tau, ci, cf, nrows, gains,
                                     a_out, tau_out, lam, lw)


@njit(cache=True)
def _holonomic_norm(f):
    s = 0.0
    for r in range(f.shape[0]):
        if not np.isnan(f[r]):
            s += f[r] * f[r]
    return math.sqrt(s)


@njit(cache=True)
def project_into(m_bytes, ws_dyn, ws_kin, q, v, prescribed, ci, cf, nrows, lw, q_try):
    """(q, v) moved onto the packed constraints in place, as engine.loops.constrained.project_constraints
    moves them: Gauss-Newton steps dq = -A^T (A A^T)^-1 f on the holonomic rows (the minimum-norm
    step; halved until |f| decreases) until |f| <= PROJECT_TOL, then the least kinetic-energy
    change of v, v - G K^-1 A v with G = M^-1 A^T and K = A G over every row; with joints marked in
    `prescribed` (nv bools) G is the hybrid system's response and those joints keep their velocity.
    lw: loop_work_size floats, q_try: nq floats of scratch.
    NOT_PROJECTED (q, v partly moved: the caller keeps its own copy) when the Python function must
    do it: rank-deficient rows, a degenerate constraint, no decrease along the step (it shakes the
    state) or no convergence in PROJECT_ITER steps (it warns)."""
    m = m_bytes.view(MODEL_DTYPE)
    ws = ws_kin.view(WS_DTYPE)
    nv = m[0].nv
    nq = m[0].nq
    dq, xi, y, zero, hrow, f, bias, A, AT, G, K, L, sa, sb, Ja, Jb = project_views(lw, nv, nrows)
    if nrows > nv:
        return NOT_PROJECTED
    for k in range(nv):
        zero[k] = 0.0
    if rows_into(m, ws, q, zero, ci, cf, f, A, bias, sa, sb, Ja, Jb) != OK:
        return NOT_PROJECTED
    fn = _holonomic_norm(f)
    it = 0
    while not (fn <= PROJECT_TOL):
        if it == PROJECT_ITER:
            return NOT_PROJECTED
        it += 1
        nh = 0
        for r in range(nrows):
            if not np.isnan(f[r]):
                hrow[nh] = r
                nh += 1
        Kh = K.reshape(nrows * nrows)[:nh * nh].reshape((nh, nh))
        Lh = L.reshape(nrows * nrows)[:nh * nh].reshape((nh, nh))
        for i in range(nh):
            ri = int(hrow[i])
            y[i] = f[ri]
            for j in range(nh):
                rj = int(hrow[j])
                s = 0.0
                for k in range(nv):
                    s += A[ri, k] * A[rj, k]
                Kh[i, j] = s
                Lh[i, j] = 0.0
        if not spd_factor(Kh, Lh):
            return NOT_PROJECTED
        spd_solve(Lh, y[:nh].reshape((nh, 1)))
        for k in range(nv):
            s = 0.0
            for i in range(nh):
                s -= A[int(hrow[i]), k] * y[i]
            dq[k] = s
        scale = 1.0
        fn_try = fn
        for _ in range(8):
            for k in range(nv):
                xi[k] = scale * dq[k]
            st = integrate(m_bytes, q, xi, q_try)
            if st != OK:
                return st
            if rows_into(m, ws, q_try, zero, ci, cf, f, A, bias, sa, sb, Ja, Jb) != OK:
                return NOT_PROJECTED
            fn_try = _holonomic_norm(f)
            if fn_try < fn:
                break
            scale *= 0.5
        if not (fn_try < fn):
            return NOT_PROJECTED
        for k in range(nq):
            q[k] = q_try[k]
        fn = fn_try
    # f, A belong to q here; the velocity
    for r in range(nrows):
        for k in range(nv):
            AT[k, r] = A[r, k]
    st = articulated_response(m_bytes, ws_dyn, q, prescribed, AT, G)
    if st != OK:
        return st
    for i in range(nrows):
        s = 0.0
        for k in range(nv):
            s += A[i, k] * v[k]
        y[i] = s
        for j in range(i + 1):
            s = 0.0
            for k in range(nv):
                s += A[i, k] * G[k, j] + A[j, k] * G[k, i]
            K[i, j] = 0.5 * s
            K[j, i] = 0.5 * s
            L[i, j] = 0.0
            L[j, i] = 0.0
    if not spd_factor(K, L):
        return NOT_PROJECTED
    spd_solve(L, y[:nrows].reshape((nrows, 1)))
    for k in range(nv):
        s = v[k]
        for r in range(nrows):
            s -= G[k, r] * y[r]
        v[k] = s
    return OK
