"""Analytic derivatives of forward dynamics (Table 3), and the tree-sparse solves shared with the
hybrid derivatives (``hybrid_deriv.py``).

Forward dynamics solves M(q) ddq + b(q, dq) - J^T F^ext = tau, i.e. ID(q, dq, ddq) = tau with ID
the inverse dynamics of Table 2. Differentiating this identity at ddq = FD(q, dq, tau):

    d ddq/dq   = -M^-1 dID/dq   (evaluated at the forward-dynamics acceleration)
    d ddq/d dq = -M^-1 dID/d dq
    d ddq/dtau =  M^-1

so the articulated inertias of Table 3 never need differentiating: the inverse-dynamics derivatives
(``rnea_deriv.py``) give dID/dq, dID/d dq and M in one sweep, and M^-1 is applied with the
tree-sparse factorisation M = L^T D L (L unit lower triangular with the sparsity of the tree:
entry (i, j) non-zero only when coordinate j is an ancestor of coordinate i), which costs O(n d^2)
to factor and O(n d) per right-hand side for a tree of depth d (Featherstone's LTDL). The 2 nv
right-hand sides are applied one of two ways, whichever costs less for the tree (dense_pays):
tree-sparse solves column by column, or N = -M^-1 formed once from the factor (ltdl_inverse) and
two dense products through BLAS (matmul_into), the way Pinocchio applies its M^-1. The products do
more arithmetic but run at several times the rate: on Talos (nv = 50) the three solves took 27 us,
N and the two products 17.

One fused sweep instead of a Table 3 pass followed by the derivative sweep: the sweep of
``rnea_deriv.py`` run at ddq = 0 already holds b (the subtree wrench sums give ID(q, dq, 0) = b -
J^T F^ext), M and dID/d dq (which does not depend on ddq). Factor M, solve ddq = M^-1 (tau - b),
then bring the ddq-dependent tables to that ddq instead of sweeping again. ID is affine in ddq, and
in the world frame only three tables see it: with D_i = sum_{e on the path to i} s_e ddq_e (the
world acceleration body i gains),
    a_i  += D_i
    sigma_e += ad_{D_lambda} s_e                  (for the universal joint's second axis,
                                                   D_lambda + s_first ddq_first)
    F_i  += IC_i D_i + sum_{e strictly below i} IC_body(e) s_e ddq_e
           (the subtree sum of I0_k (a_k change); the second sum is accumulated backward)
    U_e  += IC_i (sigma_e change) - ad*_{s_e} (F_i change)
after which the dID/dq pairs are formed as in ``rnea_deriv.py``. This replaces the articulated
inertias of a Table 3 pass by two vector sweeps.
"""
from __future__ import annotations

import numpy as np

from engine.kernel.layout import (njit, MODEL_DTYPE, WS_DTYPE, kernel, FASTMATH, MODEL_T, WS_T, VEC_T, STATUS,
                                  OK, OVERFLOW, ARR3_T)
from engine.maths.joints import UNIVERSAL
from engine.maths.spatial import ad_into
from engine.algorithms.common import check_vec
from engine.algorithms.aba import aba
from engine.derivatives.rnea_deriv import (rnea_derivative_passes, pairs_dq, work_views, scratch_views,
                                           check_outputs, ad_add, ad_dual_into_neg_add, mat6_vec_into,
                                           mat6_vec_add, S_W, SIG_Q, ROW_A, U_Q, A_W, F_W, DA_W, PB_W, IC)

PIVOT_TOL = 1e-12     # a diagonal entry of M below this times the largest: left to Table 3 to name


@njit(cache=True, inline="always")
def coordinate_parents(m, lam, prescribed, skip):
    """lam[e] = the nearest ancestor coordinate of e (previous coordinate of the same joint, else the
    last one of the parent joint), or -1. With skip, ancestors with prescribed[.] True are passed
    over, which gives the tree of the torque-given coordinates alone (the sparsity of M_vv)."""
    n = m.shape[0] - 1
    for i in range(1, n + 1):
        mb = m[i]
        lp = mb.parent
        up = m[lp].iv + m[lp].nv - 1 if lp > 0 else -1
        for e in range(mb.nv):
            lam[mb.iv + e] = mb.iv + e - 1 if e > 0 else up
    if skip:
        for e in range(lam.shape[0]):
            j = lam[e]
            while j >= 0 and prescribed[j]:
                j = lam[j]
            lam[e] = j


@njit(cache=True)
def ltdl_factor(H, lam, active):
    """In place: H (the rows and columns of the active coordinates) = L^T D L, D on the diagonal,
    L's strictly lower part below it. Returns the coordinate of a non-positive pivot, or -1."""
    nv = H.shape[0]
    for k in range(nv - 1, -1, -1):
        if not active[k]:
            continue
        d = H[k, k]
        if not d > 0.0:
            return k
        i = lam[k]
        while i >= 0:
            t = H[k, i] / d
            j = i
            while j >= 0:
                H[i, j] -= t * H[k, j]
                j = lam[j]
            H[k, i] = t
            i = lam[i]
    return -1


@njit(cache=True)
def ltdl_solve(H, lam, active, X, sign):
    """X[active rows] <- sign (L^T D L)^-1 X[active rows], every column of X (rows = coordinates)."""
    nv = H.shape[0]
    ncol = X.shape[1]
    for i in range(nv - 1, -1, -1):
        if not active[i]:
            continue
        j = lam[i]
        while j >= 0:
            t = H[i, j]
            for c in range(ncol):
                X[j, c] -= t * X[i, c]
            j = lam[j]
    for i in range(nv):
        if active[i]:
            d = sign / H[i, i]
            for c in range(ncol):
                X[i, c] *= d
    unit_lower_solve(H, lam, active, X)


@njit(cache=True, inline="always")
def unit_lower_solve(H, lam, active, X):
    """X[active rows] <- L^-1 X[active rows], every column: the last phase of the L^T D L solve
    (row i minus L[i, j] times each ancestor row j, ancestors first)."""
    for i in range(H.shape[0]):
        if not active[i]:
            continue
        j = lam[i]
        while j >= 0:
            t = H[i, j]
            for c in range(X.shape[1]):
                X[i, c] -= t * X[j, c]
            j = lam[j]


@njit(cache=True)
def subtree_ends(lam, active, ends):
    """ends[i] = 1 + the largest active coordinate in the subtree of i (i included) of the tree lam
    describes. Coordinates are numbered parents first, so i's descendants lie in [i + 1, ends[i])
    (exactly that range when the tree is numbered depth first, as the loaders do; a superset
    otherwise, which costs time, not correctness)."""
    nv = lam.shape[0]
    for i in range(nv):
        ends[i] = i + 1
    for x in range(nv - 1, -1, -1):
        if active[x]:
            p = lam[x]
            if p >= 0 and ends[x] > ends[p]:
                ends[p] = ends[x]


@njit(cache=True, inline="always")
def dense_pays(lam, active, products):
    """True when N = -M^-1 formed once and applied by `products` dense products (matmul_into) costs
    less than `products` tree-sparse solves (ltdl_solve) of nv columns. A sparse solve does 2 S row
    operations of nv entries, S = the number of (coordinate, ancestor) pairs among the active
    coordinates; forming N does about S, and a BLAS product nv^3 multiply-adds. Measured on this
    engine's kernels (Talos, humanoid): row operations run at about 6 multiply-adds per ns in the
    solve, 3.5 in ltdl_inverse, the products at about 28, so dense pays when
    S nv (2 products / 6.3 - 1 / 3.5) > products nv^3 / 28, i.e. S > products nv^2 / 18 for two or
    more products. Chains and trees under a floating base of up to ~50 coordinates go dense (Panda,
    Talos, the humanoid); shallow wide trees and hybrid masks that leave few torque-given
    coordinates stay sparse."""
    nv = lam.shape[0]
    S = 0
    for i in range(nv):
        if active[i]:
            j = lam[i]
            while j >= 0:
                S += 1
                j = lam[j]
    return S * 18 > products * nv * nv


@njit(cache=True, fastmath=FASTMATH)
def ltdl_inverse(H, lam, active, ends, X, sign):
    """X = sign (L^T D L)^-1 on the active rows and columns, zero on the others: ltdl_solve with
    the identity on the right. Its first phase (L^-T) leaves column c non-zero on c and c's
    ancestors only, so row i there holds nothing outside i's subtree, [i, ends[i])
    (subtree_ends): that phase and the diagonal touch only that range. (Filling only the upper
    triangle in the last phase and mirroring it was slower: 10.7 against 8.0 us on Talos.)"""
    nv = H.shape[0]
    for r in range(nv):
        for c in range(nv):
            X[r, c] = 0.0
        if active[r]:
            X[r, r] = 1.0
    for i in range(nv - 1, -1, -1):
        if not active[i]:
            continue
        e = ends[i]
        j = lam[i]
        while j >= 0:
            t = H[i, j]
            for c in range(i, e):
                X[j, c] -= t * X[i, c]
            j = lam[j]
    for i in range(nv):
        if active[i]:
            d = sign / H[i, i]
            for c in range(i, ends[i]):
                X[i, c] *= d
    unit_lower_solve(H, lam, active, X)


@njit(cache=True, _nrt=True)
def matmul_into(A, B, out):
    """out = A B (C-contiguous matrices, out distinct from both) through BLAS dgemm: numba's np.dot
    with an output array, which compiles only with reference counting, hence a function of its own
    that returns nothing (layout.py, compile options). Dense products of nv x nv matrices run at
    several times the speed of a tree-sparse solve per column on trees of 30-50 coordinates."""
    if out.shape[0] > 0 and out.shape[1] > 0:
        np.dot(A, B, out)


@njit(cache=True, inline="always")
def torque_minus_bias(m, bvec, dvec, tau, out):
    """out[x] = tau[x] - b[x] for every coordinate, b read from the subtree wrench sums of a
    ``rnea_derivative_passes`` sweep run at ddq = 0 (b = ID(q, dq, 0), external wrenches included)."""
    for i in range(1, m.shape[0]):
        mb = m[i]
        F = bvec[i, F_W]
        for e in range(mb.nv):
            x = mb.iv + e
            s = dvec[x, S_W]
            out[x] = tau[x] - (s[0] * F[0] + s[1] * F[1] + s[2] * F[2] + s[3] * F[3] + s[4] * F[4] + s[5] * F[5])


@njit(cache=True, inline="always")
def factor_mass_matrix(m, M, H, lam, none, active):
    """H = M factored as L^T D L over the whole tree (lam: coordinate parents; none, active: nv
    booleans set to all False / all True). Returns -1, or the coordinate of a pivot at or below
    PIVOT_TOL times the largest diagonal entry (a singular joint)."""
    nv = M.shape[0]
    big = 0.0
    for k in range(nv):
        none[k] = False
        active[k] = True
        if M[k, k] > big:
            big = M[k, k]
    for r in range(nv):
        if not M[r, r] > PIVOT_TOL * big:
            return r
        for c in range(nv):
            H[r, c] = M[r, c]
    coordinate_parents(m, lam, none, False)
    return ltdl_factor(H, lam, active)


@njit(cache=True)
def singular_joint(m, k):
    """The status that names the joint of coordinate k, a pivot of M that is not positive: minus
    its body, or -1."""
    for i in range(1, m.shape[0]):
        if m[i].iv <= k < m[i].iv + m[i].nv:
            return -i
    return -1


@njit(cache=True)
def partitioned_factor(m, prescribed, active, M, H, lam):
    """H = M_TT factored as L^T D L over the tree of the torque-given coordinates T (lam: their
    coordinate parents, active: not prescribed). Returns -1, or the coordinate of a non-positive
    pivot."""
    nv = M.shape[0]
    for r in range(nv):
        active[r] = not prescribed[r]
        for c in range(nv):
            H[r, c] = M[r, c]
    coordinate_parents(m, lam, prescribed, True)
    return ltdl_factor(H, lam, active)


@njit(cache=True, fastmath=FASTMATH)
def partitioned_rows(prescribed, M, G, Y):
    """Rows of the prescribed coordinates P of a hybrid derivative: Y holds Y' = -M_TT^-1 G_T on the
    torque-given rows T; P's rows become G_P + M_PT Y' (G may be Y itself, whose P rows hold G_P:
    the copy is then a no-op)."""
    nv = M.shape[0]
    for r in range(nv):
        if not prescribed[r]:
            continue
        for c in range(nv):
            Y[r, c] = G[r, c]
        for t in range(nv):
            if prescribed[t]:
                continue
            mrt = M[r, t]
            if mrt == 0.0:
                continue
            for c in range(nv):
                Y[r, c] += mrt * Y[t, c]


@njit(cache=True, fastmath=FASTMATH)
def partitioned_solve(prescribed, active, ends, M, H, lam, Gq, Gv, Gx):
    """Hybrid-dynamics derivatives from the inverse-dynamics ones (see hybrid_deriv.py), M_TT
    factored in H by partitioned_factor (H is scratch afterwards), ends from subtree_ends. On entry
    Gq = dID/dq, Gv = dID/d dq, M the mass matrix; on exit Gq, Gv, Gx hold dy/dq, dy/d dq and
    dy/dx (y: accelerations of the torque-given coordinates, torques of the prescribed ones; x: the
    given quantities). Y' = -M_TT^-1 G'_T for each right-hand side G', by tree-sparse solves or, when
    that is cheaper (dense_pays), with N = -M_TT^-1 (zero on prescribed rows and columns) formed
    once in Gx and applied by dense products."""
    nv = M.shape[0]
    any_prescribed = False
    for c in range(nv):
        any_prescribed = any_prescribed or prescribed[c]
    if not dense_pays(lam, active, 3 if any_prescribed else 2):
        given_rhs(prescribed, M, Gx)
        ltdl_solve(H, lam, active, Gq, -1.0)
        ltdl_solve(H, lam, active, Gv, -1.0)
        ltdl_solve(H, lam, active, Gx, -1.0)
        partitioned_rows(prescribed, M, Gq, Gq)
        partitioned_rows(prescribed, M, Gv, Gv)
        partitioned_rows(prescribed, M, Gx, Gx)
        return
    N = Gx
    ltdl_inverse(H, lam, active, ends, N, -1.0)
    Y = H
    matmul_into(N, Gq, Y)
    partitioned_rows(prescribed, M, Gq, Y)
    copy_matrix(Y, Gq)
    matmul_into(N, Gv, Y)
    partitioned_rows(prescribed, M, Gv, Y)
    copy_matrix(Y, Gv)
    # N G' for x without forming G' in a third buffer: N M in the prescribed columns, -N (N times
    # -e_c) in the torque-given ones; then N is free to hold G' for the prescribed rows
    if any_prescribed:
        matmul_into(N, M, Y)
    for r in range(nv):
        for c in range(nv):
            if not prescribed[c]:
                Y[r, c] = -N[r, c]
    given_rhs(prescribed, M, N)
    partitioned_rows(prescribed, M, N, Y)
    copy_matrix(Y, Gx)


@njit(cache=True, inline="always")
def given_rhs(prescribed, M, G):
    """G = G', the right-hand side of the given quantities x in the hybrid derivatives: column
    M[:, c] for a prescribed c (x_c = ddq_c), -e_c for a torque-given c (x_c = tau_c)."""
    for r in range(M.shape[0]):
        for c in range(M.shape[1]):
            G[r, c] = M[r, c] if prescribed[c] else (-1.0 if r == c else 0.0)


@njit(cache=True, inline="always")
def copy_matrix(A, B):
    """B[:, :] = A."""
    for r in range(A.shape[0]):
        for c in range(A.shape[1]):
            B[r, c] = A[r, c]


@njit(cache=True, inline="always")
def first_axis_term(dvec, iv, e, univ, a, D_parent, out):
    """out = the change of the acceleration of the frame coordinate e acts in: D_lambda, plus the
    first axis's s ddq for a universal joint's second axis."""
    for r in range(6):
        out[r] = D_parent[r]
    if univ and e == 1:
        s0 = dvec[iv, S_W]
        for r in range(6):
            out[r] += s0[r] * a[iv]


@njit(cache=True, fastmath=FASTMATH)
def acceleration_update(m, a, bmat, bvec, dvec, tmp):
    """The tables of ``rnea_derivative_passes`` run at ddq = 0 brought to ddq = a (module docstring):
    a_i, sigma_e, the subtree wrench sums F_i and U_e."""
    n = m.shape[0] - 1
    for r in range(6):
        bvec[0, DA_W, r] = 0.0
    al = tmp[0]
    for i in range(1, n + 1):
        mb = m[i]
        iv = mb.iv
        univ = mb.code == UNIVERSAL
        D = bvec[i, DA_W]
        Dp = bvec[mb.parent, DA_W]
        for r in range(6):
            D[r] = Dp[r]
            bvec[i, PB_W, r] = 0.0
        for e in range(mb.nv):
            x = iv + e
            s = dvec[x, S_W]
            first_axis_term(dvec, iv, e, univ, a, Dp, al)
            ad_add(al, s, 1.0, dvec[x, SIG_Q])
            for r in range(6):
                D[r] += s[r] * a[x]
        for r in range(6):
            bvec[i, A_W, r] += D[r]
    dF = tmp[1]
    dsig = tmp[2]
    up = tmp[3]
    for i in range(n, 0, -1):
        mb = m[i]
        lp = mb.parent
        iv = mb.iv
        univ = mb.code == UNIVERSAL
        G = bmat[i, IC]
        below = bvec[i, PB_W]
        mat6_vec_into(G, bvec[i, DA_W], dF)
        for r in range(6):
            dF[r] += below[r]
            bvec[i, F_W, r] += dF[r]
            up[r] = below[r]
        for e in range(mb.nv):
            x = iv + e
            s = dvec[x, S_W]
            first_axis_term(dvec, iv, e, univ, a, bvec[lp, DA_W], al)
            ad_into(al, s, dsig)
            uq = dvec[x, U_Q]
            mat6_vec_add(G, dsig, uq)
            ad_dual_into_neg_add(s, dF, uq)
            for r in range(6):
                up[r] += dvec[x, ROW_A, r] * a[x]
        if lp > 0:
            for r in range(6):
                bvec[lp, PB_W, r] += up[r]


@kernel(STATUS(MODEL_T, WS_T, VEC_T, VEC_T, VEC_T, VEC_T, ARR3_T), cache=True, fastmath=FASTMATH)
def aba_derivatives(m_bytes, ws_bytes, q, v, tau, work, out):
    """Kernel: FD(q, v, tau) (in work's scratch) and out[0] = da/dq (tangent space),
    out[1] = da/dv, out[2] = da/dtau = M^-1, in one fused sweep (module docstring); work:
    rnea_deriv.work_size floats. Status code (see common); a singular M is named by a Table 3
    pass."""
    m = m_bytes.view(MODEL_DTYPE)
    ws = ws_bytes.view(WS_DTYPE)
    nv = m[0].nv
    st = check_vec(q, m[0].nq, 1)
    if st == OK:
        st = check_vec(v, nv, 2)
    if st == OK:
        st = check_vec(tau, nv, 3)
    if st != OK:
        return st
    bmat, bvec, dvec, tmp, M, H = work_views(work, m.shape[0], nv)
    lam, flags, a, _ = scratch_views(work, m.shape[0], nv)
    lam_c = lam[:nv]
    ends = lam[nv:2 * nv]
    active = flags[nv:2 * nv]
    for k in range(nv):
        a[k] = 0.0
        active[k] = True
    coordinate_parents(m, lam_c, flags[:nv], False)
    # dense: dID/dq and dID/d dq into out[1], out[2], then out[0] = N out[1], out[1] = N out[2] with
    # N = -M^-1 in M's place; sparse: into out[0], out[1], solved in place (ltdl_solve)
    dense = dense_pays(lam_c, active, 2)
    Gq = out[1] if dense else out[0]
    Gv = out[2] if dense else out[1]
    # Table 2's derivative sweep at ddq = 0: b, M and dID/d dq (Gq left zero)
    rnea_derivative_passes(m, ws, q, v, a, bmat, bvec, dvec, tmp, Gq, Gv, M, np.bool_(False), np.bool_(False))
    torque_minus_bias(m, bvec, dvec, tau, a)
    k = factor_mass_matrix(m, M, H, lam_c, flags[:nv], active)
    if k >= 0:
        st = aba(m_bytes, ws_bytes, q, v, tau, a)       # Table 3 names the singular joint
        return st if st != OK else singular_joint(m, k)
    ltdl_solve(H, lam_c, active, a.reshape((nv, 1)), 1.0)
    for k in range(nv):
        if not np.isfinite(a[k]):
            return OVERFLOW
    acceleration_update(m, a, bmat, bvec, dvec, tmp)
    pairs_dq(m, dvec, Gq)                               # dID/dq at a
    subtree_ends(lam_c, active, ends)
    if dense:
        ltdl_inverse(H, lam_c, active, ends, M, -1.0)
        matmul_into(M, out[1], out[0])
        matmul_into(M, out[2], out[1])
        for r in range(nv):
            for c in range(nv):
                out[2, r, c] = -M[r, c]
    else:
        ltdl_solve(H, lam_c, active, out[0], -1.0)
        ltdl_solve(H, lam_c, active, out[1], -1.0)
        ltdl_inverse(H, lam_c, active, ends, out[2], 1.0)
    return check_outputs(out)
