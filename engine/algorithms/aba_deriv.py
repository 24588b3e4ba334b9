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
to factor and O(n d) per right-hand side for a tree of depth d (Featherstone's LTDL).
"""
from __future__ import annotations

from numba import njit

from ..layout import MODEL_DTYPE, WS_DTYPE
from .common import FASTMATH, MODEL_T, WS_T, VEC_T, BOOL_T, STATUS, OK
from .aba import aba
from .rnea_deriv import rnea_derivative_passes, work_views, check_outputs, ARR3_T, INDEX_T


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
    for i in range(nv):
        if not active[i]:
            continue
        j = lam[i]
        while j >= 0:
            t = H[i, j]
            for c in range(ncol):
                X[i, c] -= t * X[j, c]
            j = lam[j]


@njit(cache=True)
def partitioned_solve(m, prescribed, active, M, H, lam, Gq, Gv, Gx):
    """Hybrid-dynamics derivatives from the inverse-dynamics ones (see hybrid_deriv.py).
    On entry Gq = dID/dq, Gv = dID/d dq, M the mass matrix; on exit Gq, Gv, Gx hold dy/dq, dy/d dq
    and dy/dx (y: accelerations of the torque-given coordinates, torques of the prescribed ones;
    x: the given quantities). H, lam and active are scratch. Returns the body of a singular pivot
    (negated), or 0."""
    nv = M.shape[0]
    for r in range(nv):
        for c in range(nv):
            H[r, c] = M[r, c]
            Gx[r, c] = M[r, c] if prescribed[c] else (-1.0 if r == c else 0.0)
    coordinate_parents(m, lam, prescribed, True)
    for r in range(nv):
        active[r] = not prescribed[r]
    k = ltdl_factor(H, lam, active)
    if k >= 0:
        for i in range(1, m.shape[0]):
            if m[i].iv <= k < m[i].iv + m[i].nv:
                return -i
        return -1
    # Y' = -M_TT^-1 G_T (the sign folded into the diagonal step): torque-given rows are done
    ltdl_solve(H, lam, active, Gq, -1.0)
    ltdl_solve(H, lam, active, Gv, -1.0)
    ltdl_solve(H, lam, active, Gx, -1.0)
    # prescribed rows: G_P - M_PT Y = G_P + M_PT Y'
    for r in range(nv):
        if not prescribed[r]:
            continue
        for t in range(nv):
            if prescribed[t]:
                continue
            mrt = M[r, t]
            if mrt == 0.0:
                continue
            for c in range(nv):
                Gq[r, c] += mrt * Gq[t, c]
                Gv[r, c] += mrt * Gv[t, c]
                Gx[r, c] += mrt * Gx[t, c]
    return 0


@njit(STATUS(MODEL_T, WS_T, VEC_T, VEC_T, VEC_T, VEC_T, INDEX_T, BOOL_T, VEC_T, ARR3_T), cache=True,
      fastmath=FASTMATH)
def aba_derivatives(m_bytes, ws_bytes, q, v, tau, work, lam, flags, a, out):
    """Kernel: a = FD(q, v, tau) (Table 3) and out[0] = da/dq (tangent space), out[1] = da/dv,
    out[2] = da/dtau = M^-1. flags: 2 nv booleans of scratch. Status code (see common)."""
    st = aba(m_bytes, ws_bytes, q, v, tau, a)
    if st != OK:
        return st
    m = m_bytes.view(MODEL_DTYPE)
    ws = ws_bytes.view(WS_DTYPE)
    nv = m[0].nv
    bmat, bvec, dvec, tmp, M, H = work_views(work, m.shape[0], nv)
    none = flags[:nv]
    for k in range(nv):
        none[k] = False
    rnea_derivative_passes(m, ws, q, v, a, bmat, bvec, dvec, tmp, out[0], out[1], M, True)   # the poses of the pass just run
    st = partitioned_solve(m, none, flags[nv:], M, H, lam, out[0], out[1], out[2])
    return st if st != OK else check_outputs(out)
