"""Analytic derivatives of inverse dynamics (Table 2) with respect to q, dq and ddq.

Derivation (written for this engine; the source paper's Section 4 is not in our copy). Table 2 is
re-expressed in the world frame {0}, where a perturbation of one coordinate moves a whole subtree
rigidly and most terms of the chain rule cancel. With T_0i the world pose of body i:

    s_e   = Ad_{T_0i} S_i[:, e]                       world axis of coordinate e of joint i
    v_i   = Ad_{T_0i} V_i = v_lambda(i) + sum_e s_e dq_e                  (spatial twist)
    a_i   = Ad_{T_0i} dV_i = a_lambda(i) + sum_e (s_e ddq_e + ad_{nu_e} s_e dq_e),   a_0 = (0, -g)
    f_i   = I0_i a_i - ad*_{v_i} (I0_i v_i) - Ad*_{T_0i^-1} F_i^ext,   I0_i = Ad*_{T_0i^-1} I_i Ad_{T_0i^-1}
    F0_i  = sum_{k in subtree(i)} f_k  (= Ad*_{T_0i^-1} F_i of Table 2),   tau_e = s_e^T F0_i
nu_e is the twist of the frame in which S[:, e] is constant: the child body (v_i) for every joint
kind except the first axis of a universal joint, which is fixed in the parent (nu = v_lambda(i)).

Moving coordinate e (tangent direction, q -> integrate(q, eps e)) right-multiplies T_0i by
exp(eps S_i[:, e]), i.e. left-multiplies every pose in the subtree by exp(eps xi), xi = s_e. Every
quantity that only rides along (I0, the axes below e, F^ext) changes by the adjoint action of xi; the
twists and accelerations pick up, in addition, terms from the frame in which e acts: with w_e and
alpha_e the twist and acceleration of that frame (v_lambda, a_lambda; for the second universal axis
the intermediate frame), for a body k in the moved subtree

    d v_k = ad_xi v_k + rho_e,                   rho_e   = ad_{w_e} s_e
    d a_k = ad_xi a_k + sigma_e - ad_{v_k} rho_e,  sigma_e = ad_{alpha_e} s_e + ad_{w_e} rho_e

(Jacobi identity on the dq-terms of a_k). The force of a moved body therefore changes by
-ad*_xi f_k (its covariant part) plus I0_k sigma_e + B_k rho_e with

    B_k = -(I0_k ad_{v_k} + ad_{v_k}^T I0_k) - Hbar(I0_k v_k),   ad_rho^T h = Hbar(h) rho.

Summed over subtrees, with IC_i = sum I0_k and BC_i = sum B_k (world frame, so no transforms):
    d tau_j / d q_e = s_j^T (IC_j sigma_e + BC_j rho_e)           j in or below e's moved set
                    = s_j^T (IC_i sigma_e + BC_i rho_e - ad_{s_e}^T F0_i)   j an ancestor of e
(the covariant parts cancel against d s_j = ad_xi s_j when s_j moves along). Likewise a change of
dq_e changes v_k by s_e and a_k by (ad_{nu_e} s_e + ad_{w_e} s_e) - ad_{v_k} s_e, so
    d tau_j / d dq_e = s_j^T (IC_m sigma^v_e + BC_m s_e),   sigma^v_e = ad_{nu_e} s_e + ad_{w_e} s_e
and d tau_j / d ddq_e = s_j^T IC_m s_e (+ armature on the diagonal) = M, with m the deeper of the two
bodies. Within one joint the columns move each other (spherical, planar and free joints integrate
by a right exponential: all columns ride along) except the universal joint's first axis, which does
not ride on the second. One forward pass, one backward pass, then O(6) per ancestor pair:
O(n d) for a tree of depth d.
"""
from __future__ import annotations

import numpy as np

from engine.kernel.layout import (njit, MODEL_DTYPE, WS_DTYPE, kernel, FASTMATH, MODEL_T, WS_T, VEC_T, STATUS,
                                  OK, OVERFLOW, ARR3_T)
from engine.maths.joints import UNIVERSAL
from engine.algorithms.common import check_vec, joint_pose, world_pose_body, set_identity_pose
from engine.maths.spatial import ad_into, Ad_inv_dual_add, inertia_ad_into, hbar_sub


# rows of the per-coordinate table `dvec` (nv x 8 x 6)
S_W, RHO, SIG_Q, SIG_V, ROW_A, ROW_B, U_Q, U_V = range(8)
# rows of the per-body tables: bvec (n+1 x 6 x 6) and bmat (n+1 x 2 x 6 x 6); DA_W and PB_W are the
# forward-dynamics derivatives' (aba_deriv.py): the change of A_W when ddq changes, and its force below
V_W, A_W, F_W, H_W, DA_W, PB_W = range(6)
IC, BC = range(2)


@njit(cache=True, inline="always")
def Ad_column(R, p, S, e, out):
    """out = Ad_T S[:, e] = (R w, R v + p x R w) for T = (R, p)."""
    w0 = R[0, 0] * S[0, e] + R[0, 1] * S[1, e] + R[0, 2] * S[2, e]
    w1 = R[1, 0] * S[0, e] + R[1, 1] * S[1, e] + R[1, 2] * S[2, e]
    w2 = R[2, 0] * S[0, e] + R[2, 1] * S[1, e] + R[2, 2] * S[2, e]
    out[0], out[1], out[2] = w0, w1, w2
    for k in range(3):
        out[3 + k] = R[k, 0] * S[3, e] + R[k, 1] * S[4, e] + R[k, 2] * S[5, e]
    out[3] += p[1] * w2 - p[2] * w1
    out[4] += p[2] * w0 - p[0] * w2
    out[5] += p[0] * w1 - p[1] * w0


@njit(cache=True, inline="always")
def ad_add(V, X, scale, out):
    """out += scale * ad_V X."""
    w0, w1, w2, v0, v1, v2 = V[0], V[1], V[2], V[3], V[4], V[5]
    a0, a1, a2, b0, b1, b2 = X[0], X[1], X[2], X[3], X[4], X[5]
    out[0] += scale * (w1 * a2 - w2 * a1)
    out[1] += scale * (w2 * a0 - w0 * a2)
    out[2] += scale * (w0 * a1 - w1 * a0)
    out[3] += scale * (v1 * a2 - v2 * a1 + w1 * b2 - w2 * b1)
    out[4] += scale * (v2 * a0 - v0 * a2 + w2 * b0 - w0 * b2)
    out[5] += scale * (v0 * a1 - v1 * a0 + w0 * b1 - w1 * b0)


@njit(cache=True, inline="always")
def ad_dual_into_neg_add(V, F, out):
    """out -= ad_V^T F, i.e. out += (w x m + v x f, w x f)."""
    w0, w1, w2, v0, v1, v2 = V[0], V[1], V[2], V[3], V[4], V[5]
    m0, m1, m2, f0, f1, f2 = F[0], F[1], F[2], F[3], F[4], F[5]
    out[0] += w1 * m2 - w2 * m1 + v1 * f2 - v2 * f1
    out[1] += w2 * m0 - w0 * m2 + v2 * f0 - v0 * f2
    out[2] += w0 * m1 - w1 * m0 + v0 * f1 - v1 * f0
    out[3] += w1 * f2 - w2 * f1
    out[4] += w2 * f0 - w0 * f2
    out[5] += w0 * f1 - w1 * f0


@njit(cache=True, inline="always")
def rows_dot(d, x, a, y, b):
    """d[x, a] . d[y, b] for the per-coordinate table (no array views made in the pair loops)."""
    return (d[x, a, 0] * d[y, b, 0] + d[x, a, 1] * d[y, b, 1] + d[x, a, 2] * d[y, b, 2]
            + d[x, a, 3] * d[y, b, 3] + d[x, a, 4] * d[y, b, 4] + d[x, a, 5] * d[y, b, 5])


@njit(cache=True, inline="always")
def world_inertia(mb, R, p, G):
    """G = Ad*_{T^-1} I Ad_{T^-1}: the body's inertia about the world origin in world axes, from its
    mass m, centre of mass c and rotational inertia (T = (R, p) the body's world pose)."""
    m = mb.mass
    c = mb.com
    I = mb.I
    # rotational inertia about the centre of mass, body axes: I_o + m [c][c]
    cc = c[0] * c[0] + c[1] * c[1] + c[2] * c[2]
    Jc = G[3:6, 0:3]    # scratch (overwritten below)
    for r in range(3):
        for k in range(3):
            Jc[r, k] = I[r, k] + m * (c[r] * c[k] - (cc if r == k else 0.0))
    # world axes: R Jc R^T, into the upper-left block
    T = G[0:3, 3:6]     # scratch: R Jc
    for r in range(3):
        for k in range(3):
            T[r, k] = R[r, 0] * Jc[0, k] + R[r, 1] * Jc[1, k] + R[r, 2] * Jc[2, k]
    for r in range(3):
        for k in range(3):
            G[r, k] = T[r, 0] * R[k, 0] + T[r, 1] * R[k, 1] + T[r, 2] * R[k, 2]
    cw0 = R[0, 0] * c[0] + R[0, 1] * c[1] + R[0, 2] * c[2] + p[0]
    cw1 = R[1, 0] * c[0] + R[1, 1] * c[1] + R[1, 2] * c[2] + p[1]
    cw2 = R[2, 0] * c[0] + R[2, 1] * c[1] + R[2, 2] * c[2] + p[2]
    ww = cw0 * cw0 + cw1 * cw1 + cw2 * cw2
    # about the world origin: - m [cw][cw] = m (|cw|^2 1 - cw cw^T)
    G[0, 0] += m * (ww - cw0 * cw0)
    G[1, 1] += m * (ww - cw1 * cw1)
    G[2, 2] += m * (ww - cw2 * cw2)
    G[0, 1] -= m * cw0 * cw1
    G[1, 0] -= m * cw0 * cw1
    G[0, 2] -= m * cw0 * cw2
    G[2, 0] -= m * cw0 * cw2
    G[1, 2] -= m * cw1 * cw2
    G[2, 1] -= m * cw1 * cw2
    # off-diagonal blocks m [cw] (upper right) and -m [cw] (lower left); m 1 lower right
    x0, x1, x2 = m * cw0, m * cw1, m * cw2
    G[0, 3], G[0, 4], G[0, 5] = 0.0, -x2, x1
    G[1, 3], G[1, 4], G[1, 5] = x2, 0.0, -x0
    G[2, 3], G[2, 4], G[2, 5] = -x1, x0, 0.0
    for r in range(3):
        for k in range(3):
            G[3 + r, k] = G[k, 3 + r]
            G[3 + r, 3 + k] = m if r == k else 0.0


@njit(cache=True, inline="always")
def velocity_coupling(G, V, h, X, B):
    """B = -(G ad_V + ad_V^T G) - Hbar(h) with h = G V (X: 6x6 scratch for G ad_V)."""
    inertia_ad_into(G, V, X)
    for r in range(6):
        for c in range(6):
            B[r, c] = -(X[r, c] + X[c, r])
    hbar_sub(h, B)


@njit(cache=True, inline="always")
def mat6_vec_into(G, x, out):
    for r in range(6):
        out[r] = G[r, 0] * x[0] + G[r, 1] * x[1] + G[r, 2] * x[2] + G[r, 3] * x[3] + G[r, 4] * x[4] + G[r, 5] * x[5]


@njit(cache=True, inline="always")
def mat6T_vec_add(G, x, out):
    """out += G^T x."""
    for c in range(6):
        out[c] += G[0, c] * x[0] + G[1, c] * x[1] + G[2, c] * x[2] + G[3, c] * x[3] + G[4, c] * x[4] + G[5, c] * x[5]


@njit(cache=True, inline="always")
def mat6_vec_add(G, x, out):
    for r in range(6):
        out[r] += G[r, 0] * x[0] + G[r, 1] * x[1] + G[r, 2] * x[2] + G[r, 3] * x[3] + G[r, 4] * x[4] + G[r, 5] * x[5]


@njit(cache=True, inline="always")
def zero_matrix(X):
    """X[:, :] = 0 (one matrix per loop: three in one loop were stored element by element, the
    compiler unable to rule out that they overlap)."""
    for r in range(X.shape[0]):
        for c in range(X.shape[1]):
            X[r, c] = 0.0


@njit(cache=True, fastmath=FASTMATH)
def rnea_derivative_passes(m, ws, q, v, a, bmat, bvec, dvec, tmp, dtau_dq, dtau_dv, M, poses_ready, with_dq):
    """dtau/dq (tangent space), dtau/ddq and M = dtau/dddq at (q, dq = v, ddq = a), external
    wrenches read from ws[i].fext (body frame {i}). Inputs are assumed valid. Work arrays:
    bmat (n+1, 2, 6, 6), bvec (n+1, 6, 6), dvec (nv, 8, 6), tmp (4, 6). poses_ready: the joint
    poses T_i and S_i in ws are those of q already (a Table 3 or 4 pass on ws just ran). Without
    with_dq, dtau_dq is left zero (the tables for it are filled all the same). The callers pass both
    flags as np.bool_: constants would be typed as literals, one compile of this sweep per pair."""
    n = m.shape[0] - 1
    set_identity_pose(ws[0])
    for k in range(6):
        bvec[0, V_W, k] = 0.0
        bvec[0, A_W, k] = m[0].g[k]
    wv = tmp[0]
    al = tmp[1]
    # ---------------------------------------------------------------- forward: world twists
    for i in range(1, n + 1):
        mb = m[i]
        wb = ws[i]
        lp = mb.parent
        if not poses_ready:
            joint_pose(mb, wb, q, v, False)
        world_pose_body(mb, wb, ws[lp])
        Rw = wb.Rw
        pw = wb.pw
        vl = bvec[lp, V_W]
        a_l = bvec[lp, A_W]
        vi = bvec[i, V_W]
        ai = bvec[i, A_W]
        iv = mb.iv
        nj = mb.nv
        univ = mb.code == UNIVERSAL
        for r in range(6):
            vi[r] = vl[r]
            ai[r] = a_l[r]
        for e in range(nj):
            s = dvec[iv + e, S_W]
            Ad_column(Rw, pw, wb.S, e, s)
            for r in range(6):
                vi[r] += s[r] * v[iv + e]
        for e in range(nj):
            x = iv + e
            s = dvec[x, S_W]
            for r in range(6):
                wv[r] = vl[r]
                al[r] = a_l[r]
            if univ and e == 1:
                # the second axis acts in the intermediate frame, which moves with the first axis
                s0 = dvec[iv, S_W]
                for r in range(6):
                    wv[r] += s0[r] * v[iv]
                    al[r] += s0[r] * a[iv]
                ad_add(vl, s0, v[iv], al)
            nu = vl if (univ and e == 0) else vi
            rho = dvec[x, RHO]
            sq = dvec[x, SIG_Q]
            sv = dvec[x, SIG_V]
            ad_into(wv, s, rho)
            ad_into(al, s, sq)
            ad_add(wv, rho, 1.0, sq)
            ad_into(nu, s, sv)
            ad_add(wv, s, 1.0, sv)
            for r in range(6):
                ai[r] += s[r] * a[x]
            ad_add(nu, s, v[x], ai)
        # body force in the world frame, composite inertia and velocity coupling start with the body
        G = bmat[i, IC]
        world_inertia(mb, Rw, pw, G)
        h = bvec[i, H_W]
        f = bvec[i, F_W]
        mat6_vec_into(G, vi, h)
        mat6_vec_into(G, ai, f)
        ad_dual_into_neg_add(vi, h, f)
        for r in range(6):
            wv[r] = 0.0
        Ad_inv_dual_add(Rw, pw, wb.fext, wv)
        for r in range(6):
            f[r] -= wv[r]
        velocity_coupling(G, vi, h, wb.X, bmat[i, BC])
    # ---------------------------------------------------------------- backward: subtree sums
    for i in range(n, 0, -1):
        mb = m[i]
        G = bmat[i, IC]
        B = bmat[i, BC]
        F = bvec[i, F_W]
        for e in range(mb.nv):
            x = mb.iv + e
            s = dvec[x, S_W]
            rA = dvec[x, ROW_A]
            rB = dvec[x, ROW_B]
            uq = dvec[x, U_Q]
            uv = dvec[x, U_V]
            mat6_vec_into(G, s, rA)
            for r in range(6):
                rB[r] = 0.0
            mat6T_vec_add(B, s, rB)
            mat6_vec_into(G, dvec[x, SIG_Q], uq)
            mat6_vec_add(B, dvec[x, RHO], uq)
            ad_dual_into_neg_add(s, F, uq)
            mat6_vec_into(G, dvec[x, SIG_V], uv)
            mat6_vec_add(B, s, uv)
        lp = mb.parent
        if lp > 0:
            Gp = bmat[lp, IC]
            Bp = bmat[lp, BC]
            Fp = bvec[lp, F_W]
            for r in range(6):
                Fp[r] += F[r]
                for c in range(6):
                    Gp[r, c] += G[r, c]
                    Bp[r, c] += B[r, c]
    # ---------------------------------------------------------------- pairs along each path
    zero_matrix(dtau_dq)
    zero_matrix(dtau_dv)
    zero_matrix(M)
    pairs(m, dvec, dtau_dq, dtau_dv, M, with_dq, np.bool_(True))


@njit(cache=True, inline="always")
def row6(d, x, k):
    """The 6-vector d[x, k] as scalars (held in registers through a pair loop)."""
    return d[x, k, 0], d[x, k, 1], d[x, k, 2], d[x, k, 3], d[x, k, 4], d[x, k, 5]


@njit(cache=True, inline="always")
def dot6(a, d, y, k):
    """a . d[y, k] for a 6-tuple a."""
    return (a[0] * d[y, k, 0] + a[1] * d[y, k, 1] + a[2] * d[y, k, 2]
            + a[3] * d[y, k, 3] + a[4] * d[y, k, 4] + a[5] * d[y, k, 5])


@njit(cache=True, fastmath=FASTMATH)
def pairs(m, dvec, dtau_dq, dtau_dv, M, with_dq, with_v):
    """The derivative matrices from the per-coordinate tables, entries (j, e) and (e, j) for every
    coordinate e and each ancestor j of it (and j, e of one joint): dtau/dq with with_dq, dtau/d dq
    and M with with_v (the entries of other pairs are left as they are: zero). One walk up the tree
    per coordinate; e's four rows are read once and held while its ancestors' rows stream past."""
    n = m.shape[0] - 1
    for i in range(1, n + 1):
        mb = m[i]
        iv = mb.iv
        nj = mb.nv
        univ = mb.code == UNIVERSAL
        for e in range(nj):
            x = iv + e
            ra = row6(dvec, x, ROW_A)
            rb = row6(dvec, x, ROW_B)
            uq = row6(dvec, x, U_Q)
            uv = row6(dvec, x, U_V)
            for k in range(nj):
                y = iv + k
                if with_v:
                    dtau_dv[y, x] = rows_dot(dvec, y, ROW_A, x, SIG_V) + rows_dot(dvec, y, ROW_B, x, S_W)
                    M[y, x] = rows_dot(dvec, y, ROW_A, x, S_W)
                if with_dq:
                    if univ and k < e:
                        dtau_dq[y, x] = dot6(uq, dvec, y, S_W)
                    else:
                        dtau_dq[y, x] = rows_dot(dvec, y, ROW_A, x, SIG_Q) + rows_dot(dvec, y, ROW_B, x, RHO)
            if with_v:
                M[x, x] += mb.armature[e]
            j = mb.parent
            while j > 0:
                mj = m[j]
                for k in range(mj.nv):
                    y = mj.iv + k
                    if with_v:
                        dtau_dv[y, x] = dot6(uv, dvec, y, S_W)
                        dtau_dv[x, y] = dot6(ra, dvec, y, SIG_V) + dot6(rb, dvec, y, S_W)
                        Mxy = dot6(ra, dvec, y, S_W)
                        M[x, y] = Mxy
                        M[y, x] = Mxy
                    if with_dq:
                        dtau_dq[y, x] = dot6(uq, dvec, y, S_W)
                        dtau_dq[x, y] = dot6(ra, dvec, y, SIG_Q) + dot6(rb, dvec, y, RHO)
                j = mj.parent


@njit(cache=True, inline="always")
def pairs_dq(m, dvec, dtau_dq):
    """dtau/dq alone from the per-coordinate tables (pairs with with_v off: dtau_dq stands in for the
    two matrices it does not touch)."""
    pairs(m, dvec, dtau_dq, dtau_dq, dtau_dq, np.bool_(True), np.bool_(False))


@njit(cache=True, inline="always")
def work_offsets(n1, nv):
    """Where work_views' arrays end in the work buffer: bmat, bvec, dvec, tmp, M, H (the last is
    where scratch_views' vectors begin)."""
    k0 = n1 * 72
    k1 = k0 + n1 * 36
    k2 = k1 + max(nv, 1) * 48
    k3 = k2 + 24
    k4 = k3 + nv * nv
    return k0, k1, k2, k3, k4, k4 + nv * nv


@njit(cache=True, inline="always")
def work_views(work, n1, nv):
    """The work arrays carved from one float buffer (length work_size(n1, nv)): bmat (n1, 2, 6, 6),
    bvec (n1, 6, 6), dvec (nv, 8, 6), tmp (4, 6), and two nv x nv matrices (M, H)."""
    k0, k1, k2, k3, k4, k5 = work_offsets(n1, nv)
    return (work[:k0].reshape((n1, 2, 6, 6)), work[k0:k1].reshape((n1, 6, 6)),
            work[k1:k2].reshape((max(nv, 1), 8, 6)), work[k2:k3].reshape((4, 6)),
            work[k3:k4].reshape((nv, nv)), work[k4:k5].reshape((nv, nv)))


@njit(cache=True, inline="always")
def scratch_views(work, n1, nv):
    """The forward and hybrid derivative kernels' scratch vectors, carved from the work buffer
    after work_views' arrays (one argument instead of four: each array argument costs about
    0.06 us in numba's dispatch): lam (2 nv int64: coordinate parents, subtree ends), a and b (nv
    floats each), flags (2 nv booleans)."""
    k0 = work_offsets(n1, nv)[5]
    k1 = k0 + 2 * nv
    k2 = k1 + nv
    k3 = k2 + nv
    return (work[k0:k1].view(np.int64), work[k3:k3 + scratch_flag_words(nv)].view(np.bool_)[:2 * nv],
            work[k1:k2], work[k2:k3])


@njit(cache=True, inline="always")
def scratch_flag_words(nv):
    """Floats that hold scratch_views' 2 nv booleans."""
    return (2 * nv + 7) // 8


@njit(cache=True, inline="always")
def check_outputs(out):
    """OVERFLOW when an output matrix holds NaN or Inf (the inputs were checked finite), else OK.
    The sum of x * 0 is 0 when every x is finite and NaN otherwise; one reduction the compiler
    vectorises (an early-exit isfinite loop took 3.9 us on Talos's three 50 x 50 matrices, this
    0.8). It relies on the kernels' fast-math flags leaving out nnan and ninf (layout.FASTMATH),
    without which x * 0 may not be folded to 0."""
    x = out.reshape(-1)
    acc = 0.0
    for j in range(x.shape[0]):
        acc += x[j] * 0.0
    return OK if acc == 0.0 else OVERFLOW


def work_size(n1, nv):
    """Length of the float buffer of the derivative kernels: work_views' arrays, then
    scratch_views' vectors (the offsets' own Python functions, so the layout is written once)."""
    return work_offsets.py_func(n1, nv)[5] + 4 * nv + scratch_flag_words.py_func(nv)


@kernel(STATUS(MODEL_T, WS_T, VEC_T, VEC_T, VEC_T, VEC_T, ARR3_T), cache=True, fastmath=FASTMATH)
def rnea_derivatives(m_bytes, ws_bytes, q, v, a, work, out):
    """Kernel: out[0] = dtau/dq, out[1] = dtau/dv, out[2] = M (see the module docstring).
    External wrenches come from the workspace (ws[i].fext, body frames). Status code (see common)."""
    m = m_bytes.view(MODEL_DTYPE)
    ws = ws_bytes.view(WS_DTYPE)
    nv = m[0].nv
    st = check_vec(q, m[0].nq, 1)
    if st == OK:
        st = check_vec(v, nv, 2)
    if st == OK:
        st = check_vec(a, nv, 3)
    if st != OK:
        return st
    bmat, bvec, dvec, tmp, _, _ = work_views(work, m.shape[0], nv)
    rnea_derivative_passes(m, ws, q, v, a, bmat, bvec, dvec, tmp, out[0], out[1], out[2], np.bool_(False), np.bool_(True))
    return check_outputs(out)
