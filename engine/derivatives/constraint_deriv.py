"""Analytic derivatives of the constraint rows of the built-in closure kinds (point, planar point,
revolute, weld, distance, gear, rolling contact), for the constrained forward-dynamics derivatives
(``engine/derivatives/api.py`` states the whole derivation; this file is its constraint half).

Every row of the acceleration constraint r2(q, dq, ddq) = A(q) ddq + dA dq and every column of the
generalized constraint force A(q)^T lambda is a function of the world-frame state of the two frames a
constraint joins: origin p, rotation R, angular velocity w, origin velocity vel, angular acceleration
alpha and origin acceleration acc (acc and alpha with the given ddq, so r2 is their plain
combination: point rows D (acc_a - acc_b), ...). So their derivatives follow from the derivatives of
those frame quantities by the chain rule, one short formula per kind.

Frame quantities come from the world-frame sweep of the inverse-dynamics derivatives
(``rnea_deriv.py``, run first at (q, dq, ddq)): body k's spatial twist v_k = (w, v0) and acceleration
a_k = (alpha, a0) (world axes, referred to the world origin), and for every coordinate e its world
axis s_e and the terms rho_e, sigma_e, sigma^v_e defined there. For a frame on body k, with p its origin:

    vel = v0 + w x p,      acc = a0 + alpha x p + w x vel
    (the constant base acceleration of gravity in a_k adds the same vector to every acc: it cancels in
    every row that differences two frames and never enters a derivative)

and for a coordinate e on the path from the ground to k (zero for every other coordinate):

    moving q_e (tangent space):  dp = s_v + s_w x p,  dtheta = s_w (dR = [dtheta] R),
                                 d v_k = ad_s v_k + rho_e,  d a_k = ad_s a_k + sigma_e - ad_{v_k} rho_e
    moving dq_e:                 dp = 0, dtheta = 0, d v_k = s_e,  d a_k = sigma^v_e - ad_{v_k} s_e
    then  d vel = d v0 + dw x p + w x dp,   d acc = d a0 + dalpha x p + alpha x dp + dw x vel + w x d vel.

The generalized constraint force: each kind applies a world force F at a's origin and a moment m
to body a (and the opposite to body b at b's origin). As a wrench about the world origin,
W_a = (m + p_a x F, F), W_b = -(m + p_b x F, F); its part on coordinate e is s_e . W for e on the
body's path. Moving q_c changes that by
    (ad_{s_c} s_e) . W      when c moves axis e (c's joint is an ancestor of e's, or the same
                            multi-dof joint except the universal joint's first axis under its second),
    s_e . dW/dq_c           dW from dp and from the directions F and m are built of (the distance
                            direction, the revolute's axis normals, the rolling contact point).
Gear rows are constant: no derivative. Cost: O(nv d) per constraint, d the tree depth.
"""
from __future__ import annotations

import math

from engine.kernel.layout import (njit, MODEL_DTYPE, WS_DTYPE, COINCIDENT, FLAT_DISK, IMAT_T, kernel, FASTMATH,
                                  MODEL_T, WS_T, VEC_T, MAT_T, STATUS, OK, ARR5_T, ARR3_T, INT_T, BOOL2_T)
from engine.maths.joints import UNIVERSAL
from engine.loops.kernels import (POINT, REVOLUTE, WELD, DISTANCE, GEAR, ROLLING, C_KIND, C_BODY_A, C_BODY_B,
                                  C_ROW, C_ROWS, C_IV_I, C_IV_J, F_PA, F_PB, F_D, F_RATIO, F_RADIUS, F_AXIS)
from engine.derivatives.rnea_deriv import work_views, S_W, RHO, SIG_Q, SIG_V, V_W, A_W

# rows of a frame's state and of its derivative tables
P_, W_, VEL, ALP, ACC, TH = range(6)     # TH (dtheta) only in the derivative tables


@njit(cache=True, inline="always")
def cross_into(a, b, out):
    x0 = a[1] * b[2] - a[2] * b[1]
    x1 = a[2] * b[0] - a[0] * b[2]
    x2 = a[0] * b[1] - a[1] * b[0]
    out[0], out[1], out[2] = x0, x1, x2


@njit(cache=True, inline="always")
def cross_add(a, b, out):
    x0 = a[1] * b[2] - a[2] * b[1]
    x1 = a[2] * b[0] - a[0] * b[2]
    x2 = a[0] * b[1] - a[1] * b[0]
    out[0] += x0
    out[1] += x1
    out[2] += x2


@njit(cache=True, inline="always")
def dot3(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@njit(cache=True, inline="always")
def frame_state(ws, bvec, k, cf, c, off, R, st):
    """World state of the frame with placement cf[c, off:off+16] in body k: R (3x3) and st rows
    P_, W_, VEL, ALP, ACC (acc with the gravity offset of a_k, see the module docstring)."""
    Rk = ws[k].Rw
    pk = ws[k].pw
    for r in range(3):
        for col in range(3):
            R[r, col] = Rk[r, 0] * cf[c, off + col] + Rk[r, 1] * cf[c, off + 4 + col] + Rk[r, 2] * cf[c, off + 8 + col]
        st[P_, r] = pk[r] + Rk[r, 0] * cf[c, off + 3] + Rk[r, 1] * cf[c, off + 7] + Rk[r, 2] * cf[c, off + 11]
        st[W_, r] = bvec[k, V_W, r]
        st[VEL, r] = bvec[k, V_W, 3 + r]
        st[ALP, r] = bvec[k, A_W, r]
        st[ACC, r] = bvec[k, A_W, 3 + r]
    cross_add(st[W_], st[P_], st[VEL])
    cross_add(st[ALP], st[P_], st[ACC])
    cross_add(st[W_], st[VEL], st[ACC])


@njit(cache=True, inline="always")
def ad6_add(V, X, sign, out):
    """out += sign * ad_V X."""
    w0, w1, w2, v0, v1, v2 = V[0], V[1], V[2], V[3], V[4], V[5]
    a0, a1, a2, b0, b1, b2 = X[0], X[1], X[2], X[3], X[4], X[5]
    out[0] += sign * (w1 * a2 - w2 * a1)
    out[1] += sign * (w2 * a0 - w0 * a2)
    out[2] += sign * (w0 * a1 - w1 * a0)
    out[3] += sign * (v1 * a2 - v2 * a1 + w1 * b2 - w2 * b1)
    out[4] += sign * (v2 * a0 - v0 * a2 + w2 * b0 - w0 * b2)
    out[5] += sign * (v0 * a1 - v1 * a0 + w0 * b1 - w1 * b0)


@njit(cache=True)
def frame_derivatives(m, bvec, dvec, k, st, on, D, t6):
    """D[e, 0] (moving q_e) and D[e, 1] (moving dq_e): rows P_, TH, W_, VEL, ALP, ACC of the frame's
    derivatives, for every coordinate e (zero off the path of body k); on[e] marks the path."""
    nv = D.shape[0]
    for e in range(nv):
        on[e] = False
        for d in range(2):
            for r in range(6):
                for j in range(3):
                    D[e, d, r, j] = 0.0
    vk = bvec[k, V_W]
    ak = bvec[k, A_W]
    p = st[P_]
    j = k
    while j > 0:
        mj = m[j]
        for col in range(mj.nv):
            e = mj.iv + col
            on[e] = True
            s = dvec[e, S_W]
            for d in range(2):
                X = D[e, d]
                # twist and acceleration changes of body k, (w, v0) and (alpha, a0) stacked in t6
                for r in range(6):
                    t6[0, r] = 0.0
                    t6[1, r] = 0.0
                if d == 0:
                    ad6_add(s, vk, 1.0, t6[0])
                    for r in range(6):
                        t6[0, r] += dvec[e, RHO, r]
                    ad6_add(s, ak, 1.0, t6[1])
                    for r in range(6):
                        t6[1, r] += dvec[e, SIG_Q, r]
                    ad6_add(vk, dvec[e, RHO], -1.0, t6[1])
                    for r in range(3):
                        X[P_, r] = s[3 + r]
                        X[TH, r] = s[r]
                    cross_add(s, p, X[P_])
                else:
                    for r in range(6):
                        t6[0, r] = s[r]
                        t6[1, r] = dvec[e, SIG_V, r]
                    ad6_add(vk, s, -1.0, t6[1])
                for r in range(3):
                    X[W_, r] = t6[0, r]
                    X[VEL, r] = t6[0, 3 + r]
                    X[ALP, r] = t6[1, r]
                    X[ACC, r] = t6[1, 3 + r]
                cross_add(X[W_], p, X[VEL])
                cross_add(st[W_], X[P_], X[VEL])
                cross_add(X[ALP], p, X[ACC])
                cross_add(st[ALP], X[P_], X[ACC])
                cross_add(X[W_], st[VEL], X[ACC])
                cross_add(st[W_], X[VEL], X[ACC])
        j = mj.parent


@njit(cache=True, inline="always")
def moves(m, cbody, c, e):
    """True when moving coordinate c carries axis e along (both on one path)."""
    bc, be = cbody[c], cbody[e]
    if bc != be:
        return bc < be
    return not (m[bc].code == UNIVERSAL and c > e)


@njit(cache=True)
def force_columns(m, dvec, cbody, on, W, dW, sign, dATl):
    """dATl[e, c] += sign (ad_{s_c} s_e . W  (c moves e)  +  s_e . dW[c]) for e on the frame's path."""
    nv = on.shape[0]
    for e in range(nv):
        if not on[e]:
            continue
        s = dvec[e, S_W]
        for c in range(nv):
            x = s[0] * dW[c, 0] + s[1] * dW[c, 1] + s[2] * dW[c, 2] + s[3] * dW[c, 3] + s[4] * dW[c, 4] \
                + s[5] * dW[c, 5]
            if on[c] and moves(m, cbody, c, e):
                t = dvec[c, S_W]
                # (ad_t s) . W = (t_w x s_w) . W_m + (t_v x s_w + t_w x s_v) . W_f
                x += (W[0] * (t[1] * s[2] - t[2] * s[1]) + W[1] * (t[2] * s[0] - t[0] * s[2])
                      + W[2] * (t[0] * s[1] - t[1] * s[0])
                      + W[3] * (t[4] * s[2] - t[5] * s[1] + t[1] * s[5] - t[2] * s[4])
                      + W[4] * (t[5] * s[0] - t[3] * s[2] + t[2] * s[3] - t[0] * s[5])
                      + W[5] * (t[3] * s[1] - t[4] * s[0] + t[0] * s[4] - t[1] * s[3]))
            dATl[e, c] += sign * x


@njit(cache=True, inline="always")
def wrench_about_origin(p, F, mom, sign, W):
    """W = sign (mom + p x F, F)."""
    W[0] = sign * (mom[0] + p[1] * F[2] - p[2] * F[1])
    W[1] = sign * (mom[1] + p[2] * F[0] - p[0] * F[2])
    W[2] = sign * (mom[2] + p[0] * F[1] - p[1] * F[0])
    W[3] = sign * F[0]
    W[4] = sign * F[1]
    W[5] = sign * F[2]


@njit(cache=True, inline="always")
def distance_row_derivative(sa, sb, Xa, Xb, d, dd, ddd, dl, de, tmp):
    """Derivative of e . (acc_a - acc_b) + (|vrel|^2 - (e . vrel)^2) / L, e = (p_a - p_b) / L."""
    for r in range(3):
        d[r] = sa[P_, r] - sb[P_, r]
        dd[r] = sa[VEL, r] - sb[VEL, r]
        ddd[r] = sa[ACC, r] - sb[ACC, r]
        dl[r] = Xa[P_, r] - Xb[P_, r]
    L = math.sqrt(dot3(d, d))
    for r in range(3):
        d[r] /= L                                  # e
    dL = dot3(d, dl)
    for r in range(3):
        de[r] = (dl[r] - d[r] * dL) / L
        tmp[r] = Xa[VEL, r] - Xb[VEL, r]           # d vrel
    ev = dot3(d, dd)
    vv = dot3(dd, dd)
    dev = dot3(de, dd) + dot3(d, tmp)
    out = dot3(de, ddd)
    for r in range(3):
        out += d[r] * (Xa[ACC, r] - Xb[ACC, r])
    out += (2.0 * dot3(dd, tmp) - 2.0 * ev * dev) / L - (vv - ev * ev) * dL / (L * L)
    return out


@njit(cache=True, inline="always")
def revolute_row_derivative(Ra, Rb, kk, sa, sb, Xa, Xb, u):
    """Derivative of n . (alpha_a - alpha_b) + dn/dt . (w_a - w_b), n = z_a x x_b (x_b = column kk of
    R_b), dn/dt = (w_a x z) x x + z x (w_b x x). u: (8, 3) scratch."""
    z, x, n, zd, xd, nd, dz, dx = u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7]
    for r in range(3):
        z[r] = Ra[r, 2]
        x[r] = Rb[r, kk]
    cross_into(z, x, n)
    cross_into(sa[W_], z, zd)
    cross_into(sb[W_], x, xd)
    cross_into(zd, x, nd)
    cross_add(z, xd, nd)
    out = 0.0
    for r in range(3):
        out += nd[r] * (Xa[W_, r] - Xb[W_, r]) + n[r] * (Xa[ALP, r] - Xb[ALP, r])
    # dn . (alpha_a - alpha_b), dn = dz x x + z x dx
    cross_into(Xa[TH], z, dz)
    cross_into(Xb[TH], x, dx)
    acc = 0.0
    wrel = 0.0
    # reuse n for dn, then dz_dot, dx_dot for d(dn/dt)
    cross_into(dz, x, n)
    cross_add(z, dx, n)
    for r in range(3):
        acc += n[r] * (sa[ALP, r] - sb[ALP, r])
    out += acc
    # d(dn/dt) = d(zd) x x + zd x dx + dz x xd + z x d(xd);  d(zd) = dw_a x z + w_a x dz
    cross_into(Xa[W_], z, nd)
    cross_add(sa[W_], dz, nd)          # nd := d(zd)
    cross_into(nd, x, n)               # n := d(zd) x x
    cross_add(zd, dx, n)
    cross_add(dz, xd, n)
    cross_into(Xb[W_], x, nd)
    cross_add(sb[W_], dx, nd)          # nd := d(xd)
    cross_add(z, nd, n)
    for r in range(3):
        wrel += n[r] * (sa[W_, r] - sb[W_, r])
    return out + wrel


@njit(cache=True)
def rolling_rows(m, dvec, ci, cf, c, R, st, Dc, on, lam, A, Dq, Dv, dW, t, u):
    """The rolling contact's A rows, r2 derivatives and force-wrench derivatives dW (moving each q).
    On exit t[0] holds the contact point p + rho, t[1] zero (the wrench's moment about the point).
    Rows: contact-point velocity v_center + w x rho, r2 = acc + alpha x rho + w x drho/dt."""
    nv = on.shape[0]
    r0 = ci[c, C_ROW]
    rad = cf[c, F_RADIUS]
    n, tt, uu, rho, nd, td, ud, rd = u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7]
    for r in range(3):
        n[r] = R[r, 0] * cf[c, F_AXIS] + R[r, 1] * cf[c, F_AXIS + 1] + R[r, 2] * cf[c, F_AXIS + 2]
    tt[0], tt[1], tt[2] = -n[2] * n[0], -n[2] * n[1], 1.0 - n[2] * n[2]
    tn = math.sqrt(dot3(tt, tt))
    if tn < 1e-9:
        return FLAT_DISK
    for r in range(3):
        uu[r] = tt[r] / tn
        rho[r] = -rad * uu[r]
    cross_into(st[W_], n, nd)
    for r in range(3):
        td[r] = -nd[2] * n[r] - n[2] * nd[r]
    utd = dot3(uu, td)
    for r in range(3):
        ud[r] = (td[r] - uu[r] * utd) / tn
        rd[r] = -rad * ud[r]
    # A rows: Jv + Jw x rho
    for e in range(nv):
        if not on[e]:
            continue
        s = dvec[e, S_W]
        p = st[P_]
        A[r0, e] += s[3] + s[1] * p[2] - s[2] * p[1] + s[1] * rho[2] - s[2] * rho[1]
        A[r0 + 1, e] += s[4] + s[2] * p[0] - s[0] * p[2] + s[2] * rho[0] - s[0] * rho[2]
        A[r0 + 2, e] += s[5] + s[0] * p[1] - s[1] * p[0] + s[0] * rho[1] - s[1] * rho[0]
    dn, dt, du, drho, dnd, dtd, dud, drd = t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7]
    for x in range(nv):
        for d in range(2):
            X = Dc[x, d]
            out = Dq if d == 0 else Dv
            if not on[x]:
                if d == 0:
                    for r in range(6):
                        dW[x, r] = 0.0
                continue
            cross_into(X[TH], n, dn)
            for r in range(3):
                dt[r] = -dn[2] * n[r] - n[2] * dn[r]
            dtn = dot3(uu, dt)
            for r in range(3):
                du[r] = (dt[r] - uu[r] * dtn) / tn
                drho[r] = -rad * du[r]
            # d(nd) = dw x n + w x dn
            cross_into(X[W_], n, dnd)
            cross_add(st[W_], dn, dnd)
            for r in range(3):
                dtd[r] = -dnd[2] * n[r] - nd[2] * dn[r] - dn[2] * nd[r] - n[2] * dnd[r]
            dutd = dot3(du, td) + dot3(uu, dtd)
            for r in range(3):
                dud[r] = (dtd[r] - du[r] * utd - uu[r] * dutd) / tn - ud[r] * dtn / tn
                drd[r] = -rad * dud[r]
            # r2 = acc + alpha x rho + w x rd
            for r in range(3):
                out[r0 + r, x] = X[ACC, r]
            cross_add(X[ALP], rho, out[r0:r0 + 3, x])
            cross_add(st[ALP], drho, out[r0:r0 + 3, x])
            cross_add(X[W_], rd, out[r0:r0 + 3, x])
            cross_add(st[W_], drd, out[r0:r0 + 3, x])
            if d == 0:
                # W = ((p + rho) x lam, lam): dW = ((dp + drho) x lam, 0)
                for r in range(3):
                    dn[r] = X[P_, r] + drho[r]
                dW[x, 0] = dn[1] * lam[r0 + 2] - dn[2] * lam[r0 + 1]
                dW[x, 1] = dn[2] * lam[r0] - dn[0] * lam[r0 + 2]
                dW[x, 2] = dn[0] * lam[r0 + 1] - dn[1] * lam[r0]
                dW[x, 3] = 0.0
                dW[x, 4] = 0.0
                dW[x, 5] = 0.0
    for r in range(3):
        t[0, r] = st[P_, r] + rho[r]
        t[1, r] = 0.0
    return OK


@kernel(STATUS(MODEL_T, WS_T, VEC_T, IMAT_T, MAT_T, VEC_T, MAT_T, MAT_T, MAT_T, MAT_T, ARR5_T, ARR3_T, INT_T,
             BOOL2_T, MAT_T), cache=True, fastmath=FASTMATH)
def constraint_derivatives(m_bytes, ws_bytes, work, ci, cf, lam, A, dATl, Dq, Dv, D, dW, cbody, on, tv):
    """After ``rnea_derivatives`` at (q, dq, ddq) on the same ws and work: A (rows x nv), the
    derivatives Dq = d r2/dq (tangent space) and Dv = d r2/d dq of r2 = A ddq + dA dq, and
    dATl = d(A^T lam)/dq at fixed lam, for the packed constraints (ci, cf). Scratch: D (2, nv, 2, 6, 3),
    dW (2, nv, 6), cbody (nv), on (2, nv), tv (42, 6) (3-vectors use the first three columns). Status: OK, COINCIDENT or FLAT_DISK.

    Long because it is one loop over the packed constraints whose body differentiates each kind's rows
    (point, distance, weld, gear, rolling) in place, sharing the same scratch arrays and the first
    pass's body quantities; split by kind, each part would take the same fifteen arrays."""
    m = m_bytes.view(MODEL_DTYPE)
    ws = ws_bytes.view(WS_DTYPE)
    n1 = m.shape[0]
    nv = m[0].nv
    _, bvec, dvec, _, _, _ = work_views(work, n1, nv)
    for i in range(1, n1):
        for col in range(m[i].nv):
            cbody[m[i].iv + col] = i
    for r in range(nv):
        for c in range(nv):
            dATl[r, c] = 0.0
    for r in range(A.shape[0]):
        for c in range(nv):
            A[r, c] = 0.0
            Dq[r, c] = 0.0
            Dv[r, c] = 0.0
    Ra = tv[0:3]
    Rb = tv[3:6]
    sa = tv[6:12]
    sb = tv[12:18]
    F = tv[18]
    mom = tv[19]
    Wa = tv[20]
    Wb = tv[21]
    t0, t1, t2, t3, t4, t5, t6, t7 = tv[24], tv[25], tv[26], tv[27], tv[28], tv[29], tv[30], tv[31]
    u8 = tv[32:40]
    for c in range(ci.shape[0]):
        kind = ci[c, C_KIND]
        r0 = ci[c, C_ROW]
        if kind == GEAR:
            A[r0, ci[c, C_IV_J]] += 1.0
            A[r0, ci[c, C_IV_I]] -= cf[c, F_RATIO]
            continue
        ka = ci[c, C_BODY_A]
        frame_state(ws, bvec, ka, cf, c, F_PA, Ra, sa)
        frame_derivatives(m, bvec, dvec, ka, sa, on[0], D[0], tv[40:42])
        Da = D[0]
        if kind == ROLLING:
            st = rolling_rows(m, dvec, ci, cf, c, Ra, sa, Da, on[0], lam, A, Dq, Dv, dW[0], tv[24:32], u8)
            if st != OK:
                return st
            wrench_about_origin(t0, lam[r0:r0 + 3], t1, 1.0, Wa)     # t0: contact point, t1: zero moment
            force_columns(m, dvec, cbody, on[0], Wa, dW[0], 1.0, dATl)
            continue
        kb = ci[c, C_BODY_B]
        frame_state(ws, bvec, kb, cf, c, F_PB, Rb, sb)
        frame_derivatives(m, bvec, dvec, kb, sb, on[1], D[1], tv[40:42])
        Db = D[1]
        pa = sa[P_]
        pb = sb[P_]
        nr = ci[c, C_ROWS]
        for r in range(3):
            F[r] = 0.0
            mom[r] = 0.0
        # ---------------------------------------------------------------- A rows, r2 derivatives
        for side in range(2):
            onx = on[side]
            px = pa if side == 0 else pb
            sg = 1.0 if side == 0 else -1.0
            for e in range(nv):
                if not onx[e]:
                    continue
                s = dvec[e, S_W]
                t0[0] = s[3] + s[1] * px[2] - s[2] * px[1]      # Jv column e
                t0[1] = s[4] + s[2] * px[0] - s[0] * px[2]
                t0[2] = s[5] + s[0] * px[1] - s[1] * px[0]
                if kind == POINT:
                    for r in range(nr):
                        A[r0 + r, e] += sg * (cf[c, F_D + 3 * r] * t0[0] + cf[c, F_D + 3 * r + 1] * t0[1]
                                              + cf[c, F_D + 3 * r + 2] * t0[2])
                elif kind == DISTANCE:
                    t1[0], t1[1], t1[2] = pa[0] - pb[0], pa[1] - pb[1], pa[2] - pb[2]
                    L = math.sqrt(dot3(t1, t1))
                    if L < 1e-12:
                        return COINCIDENT
                    A[r0, e] += sg * dot3(t1, t0) / L
                else:
                    for r in range(3):
                        A[r0 + r, e] += sg * t0[r]
                    if kind == WELD:
                        for r in range(3):
                            A[r0 + 3 + r, e] += sg * s[r]
                    else:
                        for kk in range(2):
                            for r in range(3):
                                t2[r] = Ra[r, 2]
                                t3[r] = Rb[r, kk]
                            cross_into(t2, t3, t4)
                            A[r0 + 3 + kk, e] += sg * dot3(t4, s)
        for x in range(nv):
            if not (on[0, x] or on[1, x]):
                continue
            for d in range(2):
                out = Dq if d == 0 else Dv
                Xa = Da[x, d]
                Xb = Db[x, d]
                if kind == POINT:
                    for r in range(nr):
                        out[r0 + r, x] = (cf[c, F_D + 3 * r] * (Xa[ACC, 0] - Xb[ACC, 0])
                                          + cf[c, F_D + 3 * r + 1] * (Xa[ACC, 1] - Xb[ACC, 1])
                                          + cf[c, F_D + 3 * r + 2] * (Xa[ACC, 2] - Xb[ACC, 2]))
                elif kind == DISTANCE:
                    out[r0, x] = distance_row_derivative(sa, sb, Xa, Xb, t0, t1, t2, t3, t4, t5)
                else:
                    for r in range(3):
                        out[r0 + r, x] = Xa[ACC, r] - Xb[ACC, r]
                    if kind == WELD:
                        for r in range(3):
                            out[r0 + 3 + r, x] = Xa[ALP, r] - Xb[ALP, r]
                    else:
                        for kk in range(2):
                            out[r0 + 3 + kk, x] = revolute_row_derivative(Ra, Rb, kk, sa, sb, Xa, Xb, u8)
        # ---------------------------------------------------------------- the constraint force
        if kind == POINT:
            for r in range(nr):
                for j in range(3):
                    F[j] += cf[c, F_D + 3 * r + j] * lam[r0 + r]
        elif kind == DISTANCE:
            t1[0], t1[1], t1[2] = pa[0] - pb[0], pa[1] - pb[1], pa[2] - pb[2]
            L = math.sqrt(dot3(t1, t1))
            for j in range(3):
                F[j] = lam[r0] * t1[j] / L
        else:
            for j in range(3):
                F[j] = lam[r0 + j]
            if kind == WELD:
                for j in range(3):
                    mom[j] = lam[r0 + 3 + j]
            else:
                for kk in range(2):
                    for r in range(3):
                        t2[r] = Ra[r, 2]
                        t3[r] = Rb[r, kk]
                    cross_into(t2, t3, t4)
                    for r in range(3):
                        mom[r] += lam[r0 + 3 + kk] * t4[r]
        wrench_about_origin(pa, F, mom, 1.0, Wa)
        wrench_about_origin(pb, F, mom, -1.0, Wb)
        # dW for every coordinate: dp of each side, and the change of F and mom
        for x in range(nv):
            for r in range(3):
                t5[r] = 0.0     # dF
                t6[r] = 0.0     # dmom
            if kind == DISTANCE:
                t1[0], t1[1], t1[2] = pa[0] - pb[0], pa[1] - pb[1], pa[2] - pb[2]
                L = math.sqrt(dot3(t1, t1))
                for r in range(3):
                    t2[r] = (Da[x, 0, P_, r] - Db[x, 0, P_, r]) / L       # d(d)/L
                    t1[r] /= L                                             # e
                de = dot3(t1, t2)
                for r in range(3):
                    t5[r] = lam[r0] * (t2[r] - t1[r] * de)
            elif kind == REVOLUTE:
                for kk in range(2):
                    for r in range(3):
                        t2[r] = Ra[r, 2]
                        t3[r] = Rb[r, kk]
                    cross_into(Da[x, 0, TH], t2, t4)      # dz
                    cross_into(t4, t3, t7)                # dz x x
                    cross_into(Db[x, 0, TH], t3, t4)      # dx
                    cross_add(t2, t4, t7)                 # + z x dx
                    for r in range(3):
                        t6[r] += lam[r0 + 3 + kk] * t7[r]
            for side in range(2):
                X = Da[x, 0] if side == 0 else Db[x, 0]
                px = pa if side == 0 else pb
                sg = 1.0 if side == 0 else -1.0
                w = dW[side, x]
                w[0] = sg * (t6[0] + X[P_, 1] * F[2] - X[P_, 2] * F[1] + px[1] * t5[2] - px[2] * t5[1])
                w[1] = sg * (t6[1] + X[P_, 2] * F[0] - X[P_, 0] * F[2] + px[2] * t5[0] - px[0] * t5[2])
                w[2] = sg * (t6[2] + X[P_, 0] * F[1] - X[P_, 1] * F[0] + px[0] * t5[1] - px[1] * t5[0])
                w[3] = sg * t5[0]
                w[4] = sg * t5[1]
                w[5] = sg * t5[2]
        force_columns(m, dvec, cbody, on[0], Wa, dW[0], 1.0, dATl)
        force_columns(m, dvec, cbody, on[1], Wb, dW[1], 1.0, dATl)
    return OK
