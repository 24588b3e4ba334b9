"""Constrained forward dynamics and its analytic derivatives in one compiled call (Kim 2012,
Section 3 differentiated; ``engine/derivatives/api.py`` states the equations).

The constrained acceleration ddq and multipliers lambda solve the KKT system

    M ddq + b - J^T F^ext = tau + A^T lambda,      A ddq + dA dq = 0.

One call, in this order:

 1. constraint rows f, A, dA dq of the packed built-in constraints (``loopkernels.rows_into``);
 2. Table 2's derivative sweep at ddq = 0 (``rnea_deriv.py``): b (from the subtree wrench sums), M
    and dID/d dq, which does not depend on ddq;
 3. M = L^T D L, tree-sparse (``aba_deriv.py``): a0 = M^-1 (tau - b), G = M^-1 A^T,
    K = A G (Cholesky; rank deficient: RANK_DEFICIENT, the caller takes the rank-revealing path),
    lambda = K^-1 (-(dA dq) - A a0), ddq = a0 + G lambda;
 4. the sweep's tables brought to that ddq (``aba_deriv.acceleration_update``), dID/dq formed;
 5. the constraint rows' derivatives at (q, dq, ddq, lambda) (``constraint_deriv.py``):
    d(A^T lambda)/dq, d r2/dq, d r2/d dq;
 6. for the parameters p = (q, dq, tau), with R1 = d(A^T lambda)/dq - dID/dq, -dID/d dq, 1:
        X = M^-1 R1,   dlambda/dp = K^-1 (-d r2/dp - A X),   d ddq/dp = X + G dlambda/dp.

No Table 3 pass and no dense inverse: M^-1 is applied column by column through its tree-sparse
factor, K (rows x rows) is the only dense factorisation.
"""
from __future__ import annotations

import numpy as np

from engine.kernel.layout import (njit, MODEL_DTYPE, WS_DTYPE, IMAT_T, RANK_DEFICIENT, kernel, FASTMATH,
                                  MODEL_T, WS_T, VEC_T, MAT_T, STATUS, OK, OVERFLOW, ARR3_T)
from engine.loops.kernels import rows_into, spd_factor, spd_solve
from engine.algorithms.common import check_vec
from engine.derivatives.rnea_deriv import rnea_derivative_passes, pairs_dq, work_views, check_outputs
from engine.derivatives.aba_deriv import (ltdl_solve, acceleration_update, torque_minus_bias,
                                          factor_mass_matrix)
from engine.derivatives.constraint_deriv import constraint_derivatives



@njit(cache=True, inline="always")
def kkt_offsets(nv, nr):
    """Where the parts of the kernel's float buffer end: kkt_views' arrays, kkt_scratch's floats
    and ints (lamc, cbody, a, lam), its booleans (on, flags; the buffer's length)."""
    k0 = 3 * nr + 2 * nr * nv + 2 * nr * nr + nv * nv + 48 + 13 * nv + 84 * nv + 252
    k1 = k0 + 3 * nv + nr
    return k0, k1, k1 + (4 * nv + 7) // 8


def kkt_work_size(nv, rows):
    """Length of the float work buffer of ``constrained_derivatives`` (kkt_views, then kkt_scratch)."""
    return kkt_offsets.py_func(nv, rows)[2]


@njit(cache=True, inline="always")
def kkt_scratch(kw, nv, nr):
    """The kernel's scratch vectors, carved from its float buffer after kkt_views' arrays (one
    argument instead of six: each array argument costs about 0.06 us in numba's dispatch):
    lamc, cbody (nv int64: coordinate parents, the body of each coordinate), on (2 x nv booleans),
    flags (2 nv booleans), a (nv: the constrained acceleration) and lam (nr: the multipliers)."""
    k0, k1, k2 = kkt_offsets(nv, nr)
    bools = kw[k1:k2].view(np.bool_)
    return (kw[k0:k0 + nv].view(np.int64), kw[k0 + nv:k0 + 2 * nv].view(np.int64),
            bools[:2 * nv].reshape((2, nv)), bools[2 * nv:4 * nv], kw[k0 + 2 * nv:k0 + 3 * nv],
            kw[k0 + 3 * nv:k1])


@njit(cache=True, inline="always")
def kkt_views(kw, nv, nr):
    """f, bias (nr), A (nr x nv), G (nv x nr), K, L (nr x nr), dATl (nv x nv), sa, sb (8 x 3),
    Ja, Jb (6 x nv), D (2, nv, 2, 6, 3), dW (2, nv, 6), tv (42, 6), a0 (nv x 1), rhs (nr x 1),
    carved from one buffer."""
    o = 0
    f = kw[o:o + nr]
    o += nr
    bias = kw[o:o + nr]
    o += nr
    A = kw[o:o + nr * nv].reshape((nr, nv))
    o += nr * nv
    G = kw[o:o + nr * nv].reshape((nv, nr))
    o += nr * nv
    K = kw[o:o + nr * nr].reshape((nr, nr))
    o += nr * nr
    L = kw[o:o + nr * nr].reshape((nr, nr))
    o += nr * nr
    dATl = kw[o:o + nv * nv].reshape((nv, nv))
    o += nv * nv
    sa = kw[o:o + 24].reshape((8, 3))
    o += 24
    sb = kw[o:o + 24].reshape((8, 3))
    o += 24
    Ja = kw[o:o + 6 * nv].reshape((6, nv))
    o += 6 * nv
    Jb = kw[o:o + 6 * nv].reshape((6, nv))
    o += 6 * nv
    D = kw[o:o + 72 * nv].reshape((2, nv, 2, 6, 3))
    o += 72 * nv
    dW = kw[o:o + 12 * nv].reshape((2, nv, 6))
    o += 12 * nv
    tv = kw[o:o + 252].reshape((42, 6))
    o += 252
    a0 = kw[o:o + nv].reshape((nv, 1))
    o += nv
    rhs = kw[o:o + nr].reshape((nr, 1))
    return f, bias, A, G, K, L, dATl, sa, sb, Ja, Jb, D, dW, tv, a0, rhs


@kernel(STATUS(MODEL_T, WS_T, VEC_T, VEC_T, VEC_T, IMAT_T, MAT_T, VEC_T, VEC_T, ARR3_T, ARR3_T), cache=True,
        fastmath=FASTMATH)
def constrained_derivatives(m_bytes, ws_bytes, q, v, tau, ci, cf, work, kw, out, lout):
    """Kernel: a = ddq and lam of the constrained forward dynamics (no stabilisation) and
    out[0..2] = d ddq / d(q, dq, tau), lout[0..2] = d lambda / d(q, dq, tau) (module docstring).
    External wrenches from ws[i].fext (body frames). Work: work (rnea_deriv.work_size), kw
    (kkt_work_size: kkt_views' arrays, then kkt_scratch's vectors, a and lam among them); the
    number of rows is lout's second dimension. Status: OK, an argument
    code (see common), OVERFLOW, COINCIDENT or FLAT_DISK (a degenerate constraint), or
    RANK_DEFICIENT (K or M singular: the caller takes the rank-revealing path)."""
    m = m_bytes.view(MODEL_DTYPE)
    ws = ws_bytes.view(WS_DTYPE)
    nv = m[0].nv
    nr = lout.shape[1]
    st = check_vec(q, m[0].nq, 1)
    if st == OK:
        st = check_vec(v, nv, 2)
    if st == OK:
        st = check_vec(tau, nv, 3)
    if st != OK:
        return st
    bmat, bvec, dvec, tmp, M, H = work_views(work, m.shape[0], nv)
    f, bias, A, G, K, L, dATl, sa, sb, Ja, Jb, D, dW, tv, a0, rhs = kkt_views(kw, nv, nr)
    lamc, cbody, on, flags, a, lam = kkt_scratch(kw, nv, nr)
    # 1. the constraint rows
    st = rows_into(m, ws, q, v, ci, cf, f, A, bias, sa, sb, Ja, Jb)
    if st != OK:
        return st
    # 2. Table 2's derivative sweep at ddq = 0: b, M, dID/d dq (out[1]); out[0] left zero. The
    # joint poses of q are in ws already (rows_into's velocity pass computed them)
    for k in range(nv):
        a[k] = 0.0
    rnea_derivative_passes(m, ws, q, v, a, bmat, bvec, dvec, tmp, out[0], out[1], M, np.bool_(True), np.bool_(False))
    torque_minus_bias(m, bvec, dvec, tau, a0[:, 0])
    # 3. M = L^T D L; a0, G = M^-1 A^T, K = A G, lambda, ddq
    if factor_mass_matrix(m, M, H, lamc, flags[:nv], flags[nv:]) >= 0:
        return RANK_DEFICIENT
    active = flags[nv:]
    ltdl_solve(H, lamc, active, a0, 1.0)
    for r in range(nr):
        for k in range(nv):
            G[k, r] = A[r, k]
    ltdl_solve(H, lamc, active, G, 1.0)
    for i in range(nr):
        for j in range(i + 1):
            s = 0.0
            t = 0.0
            for k in range(nv):
                s += A[i, k] * G[k, j]
                t += A[j, k] * G[k, i]
            K[i, j] = 0.5 * (s + t)
            K[j, i] = K[i, j]
    if nr > nv or not spd_factor(K, L):      # more rows than coordinates: K is singular
        return RANK_DEFICIENT
    for i in range(nr):
        s = -bias[i]
        for k in range(nv):
            s -= A[i, k] * a0[k, 0]
        rhs[i, 0] = s
    spd_solve(L, rhs)
    for i in range(nr):
        lam[i] = rhs[i, 0]
    for k in range(nv):
        s = a0[k, 0]
        for r in range(nr):
            s += G[k, r] * lam[r]
        a[k] = s
        if not np.isfinite(s):
            return OVERFLOW
    # 4. the sweep at ddq = a: dID/dq
    acceleration_update(m, a, bmat, bvec, dvec, tmp)
    pairs_dq(m, dvec, out[0])
    # 5. the constraint rows' derivatives (A is written again, the same rows)
    st = constraint_derivatives(m_bytes, ws_bytes, work, ci, cf, lam, A, dATl, lout[0], lout[1], D, dW, cbody,
                                on, tv)
    if st != OK:
        return st
    # 6. X = M^-1 R1 for q, dq, tau; then dlambda and d ddq
    Xq = out[0]
    for r in range(nv):
        for c in range(nv):
            Xq[r, c] = dATl[r, c] - Xq[r, c]
            out[2, r, c] = 1.0 if r == c else 0.0
    ltdl_solve(H, lamc, active, Xq, 1.0)
    ltdl_solve(H, lamc, active, out[1], -1.0)
    ltdl_solve(H, lamc, active, out[2], 1.0)
    # row operations on whole rows (contiguous, so the compiler vectorises them): Y = -(dr2/dp +
    # A X), for tau A X = A M^-1 = G^T; dlambda/dp = K^-1 Y; X += G dlambda/dp
    for p in range(3):
        X = out[p]
        Y = lout[p]
        for i in range(nr):
            y = Y[i]
            if p == 2:
                for c in range(nv):
                    y[c] = -G[c, i]
                continue
            for c in range(nv):
                y[c] = -y[c]
            for k in range(nv):
                t = A[i, k]
                if t != 0.0:
                    x = X[k]
                    for c in range(nv):
                        y[c] -= t * x[c]
        spd_solve(L, Y)
        for k in range(nv):
            x = X[k]
            for r in range(nr):
                t = G[k, r]
                y = Y[r]
                for c in range(nv):
                    x[c] += t * y[c]
    st = check_outputs(out)
    return st if st != OK else check_outputs(lout)
