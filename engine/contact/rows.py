"""The rows of the compiled unilateral step: contact Jacobian rows (normal, two tangents per point;
``_contact_rows``, ``rows_kernel``), the response of the torque-given coordinates to unit impulses
(``_response``: Delassus W = J_f M_ff^-1 J_f^T from one tree-sparse factor), per-contact materials
(``_material``) and Newton's restitution on the impact speed (``bounce_speed``)."""
from __future__ import annotations

import math

import numpy as np

from engine.kernel.layout import MODEL_DTYPE, OK, SINGULAR, njit
from engine.algorithms.kinematics import body_jacobian
from engine.algorithms.crba import crba
from engine.contact.detect import _tangents


RESTITUTION_SPEED = 0.05        # m/s: slower impacts are inelastic (resting contact does not chatter)


# ------------------------------------------------------------------ restitution
@njit(cache=True)
def bounce_speed(e, speed, pull, h):
    """Target normal velocity at the end of the step in which a contact bounces: Newton's law
    (e times the speed at which it reached the ground) taken on the energy of the step. The
    semi-implicit step moves the point by h w against the free acceleration ``pull`` (>= 0, into the
    ground: gravity) that acts over the whole step, so it leaves the step with 1/2 w^2 + pull h w;
    w solves 1/2 w^2 + pull h w = 1/2 (e speed)^2: a ballistic flight from there reaches the apex of
    a bounce at e speed, whatever h (w = e speed - pull h + O(h^2) for small h)."""
    ph = pull * h
    es = e * speed
    return es * es / (math.sqrt(ph * ph + es * es) + ph)


@njit(cache=True)
def rows_kernel(ba, bb, X, U, T, Jall, rows):
    """rows[k, a] = U[k, a] . (velocity of the point X[k] of body ba[k] minus that of bb[k]):
    for a body with pose (R, p) and body Jacobian J, u . v_x = (r x R^T u) . J_w + (R^T u) . J_v
    with r = R^T (x - p)."""
    nv = rows.shape[2]
    for k in range(X.shape[0]):
        for side in range(2):
            body = ba[k] if side == 0 else bb[k]
            if body <= 0:
                continue
            sign = 1.0 if side == 0 else -1.0
            R = T[body, :9].reshape(3, 3)
            r0 = r1 = r2 = 0.0
            for i in range(3):
                dx = X[k, i] - T[body, 9 + i]
                r0 += R[i, 0] * dx
                r1 += R[i, 1] * dx
                r2 += R[i, 2] * dx
            for a in range(3):
                u0 = U[k, a, 0] * R[0, 0] + U[k, a, 1] * R[1, 0] + U[k, a, 2] * R[2, 0]
                u1 = U[k, a, 0] * R[0, 1] + U[k, a, 1] * R[1, 1] + U[k, a, 2] * R[2, 1]
                u2 = U[k, a, 0] * R[0, 2] + U[k, a, 1] * R[1, 2] + U[k, a, 2] * R[2, 2]
                c0 = r1 * u2 - r2 * u1
                c1 = r2 * u0 - r0 * u2
                c2 = r0 * u1 - r1 * u0
                for j in range(nv):
                    rows[k, a, j] += sign * (c0 * Jall[body, 0, j] + c1 * Jall[body, 1, j] + c2 * Jall[body, 2, j]
                                             + u0 * Jall[body, 3, j] + u1 * Jall[body, 4, j] + u2 * Jall[body, 5, j])


@njit(cache=True)
def delassus(J, G, W):
    """W = J G symmetrised (m x m), in a plain loop."""
    m, nv = J.shape
    for i in range(m):
        for j in range(i, m):
            acc = 0.0
            for k in range(nv):
                acc += J[i, k] * G[k, j] + J[j, k] * G[k, i]
            W[i, j] = 0.5 * acc
            W[j, i] = 0.5 * acc


@njit(cache=True)
def _quat_rot(q, i, R):
    w = q[i]
    x = q[i + 1]
    y = q[i + 2]
    z = q[i + 3]
    s = math.sqrt(w * w + x * x + y * y + z * z)
    w /= s
    x /= s
    y /= s
    z /= s
    R[0, 0] = 1 - 2 * (y * y + z * z)
    R[0, 1] = 2 * (x * y - w * z)
    R[0, 2] = 2 * (x * z + w * y)
    R[1, 0] = 2 * (x * y + w * z)
    R[1, 1] = 1 - 2 * (x * x + z * z)
    R[1, 2] = 2 * (y * z - w * x)
    R[2, 0] = 2 * (x * z - w * y)
    R[2, 1] = 2 * (y * z + w * x)
    R[2, 2] = 1 - 2 * (x * x + y * y)


@njit(cache=True)
def _rotate(A, B, transA, x, i):
    """x[i:i+3] = op(A) B^T... helper: x[i:i+3] = (A^T if transA else A) @ (B @ x[i:i+3])."""
    y0 = B[0, 0] * x[i] + B[0, 1] * x[i + 1] + B[0, 2] * x[i + 2]
    y1 = B[1, 0] * x[i] + B[1, 1] * x[i + 1] + B[1, 2] * x[i + 2]
    y2 = B[2, 0] * x[i] + B[2, 1] * x[i + 1] + B[2, 2] * x[i + 2]
    if transA:
        x[i] = A[0, 0] * y0 + A[1, 0] * y1 + A[2, 0] * y2
        x[i + 1] = A[0, 1] * y0 + A[1, 1] * y1 + A[2, 1] * y2
        x[i + 2] = A[0, 2] * y0 + A[1, 2] * y1 + A[2, 2] * y2
    else:
        x[i] = A[0, 0] * y0 + A[0, 1] * y1 + A[0, 2] * y2
        x[i + 1] = A[1, 0] * y0 + A[1, 1] * y1 + A[1, 2] * y2
        x[i + 2] = A[2, 0] * y0 + A[2, 1] * y1 + A[2, 2] * y2


DENSE_RESPONSE = 12             # torque-given coordinates up to which _response factors M_ff densely


@njit(cache=True, _nrt=True)
def _response_dense(M, prescribed, J, W, G):
    """_response with one dense Cholesky factor of M_ff (M from CRBA): Y = L^-1 J_f^T, W = Y^T Y,
    G_f = L^-T Y. Status."""
    m = J.shape[0]
    nv = J.shape[1]
    fi = np.empty(nv, dtype=np.int64)
    nf = 0
    for k in range(nv):
        if not prescribed[k]:
            fi[nf] = k
            nf += 1
    L = np.zeros((nf, nf))
    for a in range(nf):
        for b in range(a + 1):
            s = M[fi[a], fi[b]]
            for c in range(b):
                s -= L[a, c] * L[b, c]
            if a == b:
                if not s > 0.0:
                    return SINGULAR
                L[a, a] = math.sqrt(s)
            else:
                L[a, b] = s / L[b, b]
    Y = np.empty((nf, m))
    for j in range(m):
        for a in range(nf):
            s = J[j, fi[a]]
            for c in range(a):
                s -= L[a, c] * Y[c, j]
            Y[a, j] = s / L[a, a]
    for i in range(m):
        for j in range(i, m):
            s = 0.0
            for a in range(nf):
                s += Y[a, i] * Y[a, j]
            W[i, j] = s
            W[j, i] = s
    for k in range(nv):
        for j in range(m):
            G[k, j] = 0.0
    for j in range(m):
        for a in range(nf - 1, -1, -1):
            s = Y[a, j]
            for c in range(a + 1, nf):
                s -= L[c, a] * G[fi[c], j]
            G[fi[a], j] = s / L[a, a]
    return OK


@njit(cache=True, _nrt=True)
def _response(m_bytes, ws_m, q, prescribed, J, M, W, G):
    """W = J M_h^-1 J^T and G = M_h^-1 J^T (nv x m) of the hybrid system: the torque-given
    coordinates f respond through M_ff (CRBA), prescribed ones do not. Status.

    Tree-sparse (Featherstone's L^T L factorisation, RBDA 6.5): M_ff = L^T L with L[k, i] nonzero
    only for i = k or an ancestor of k (the tree's branches give no fill-in), Y = L^-T J_f^T keeps
    each row's support on the ancestors of its coordinates (a contact on body b: the path from b to
    the root), W = Y^T Y sums over that support and G = L^-1 Y. Free bodies on separate branches (a
    pile of boxes) then cost per contact what one body costs, not what the whole tree does. Up to
    DENSE_RESPONSE torque-given coordinates (one free body, a robot held but for its base) there is
    no sparsity to gain: one dense Cholesky factor (_response_dense).

    Long because the factorisation, the two triangular solves along the tree's ancestors and the sum
    of W over meeting supports share the supports' index lists, built once here."""
    m = J.shape[0]
    nv = J.shape[1]
    st = crba(m_bytes, ws_m, q, M)
    if st != OK:
        return st
    nf = 0
    for k in range(nv):
        if not prescribed[k]:
            nf += 1
    if nf <= DENSE_RESPONSE:
        return _response_dense(M, prescribed, J, W, G)
    mb = m_bytes.view(MODEL_DTYPE)
    # every coordinate's parent coordinate: the previous one of its joint, else the last of the
    # nearest ancestor body that has coordinates (-1: the root)
    par = np.empty(nv, dtype=np.int64)
    for b in range(1, mb.shape[0]):
        k = mb[b].nv
        if k == 0:
            continue
        iv = mb[b].iv
        a = mb[b].parent
        while a > 0 and mb[a].nv == 0:
            a = mb[a].parent
        par[iv] = mb[a].iv + mb[a].nv - 1 if a > 0 else -1
        for j in range(1, k):
            par[iv + j] = iv + j - 1
    # the torque-given coordinates f and their parents among them
    fi = np.empty(nv, dtype=np.int64)
    pos = np.full(nv, -1, dtype=np.int64)
    nf = 0
    for k in range(nv):
        if not prescribed[k]:
            fi[nf] = k
            pos[k] = nf
            nf += 1
    fpar = np.empty(nf, dtype=np.int64)
    for a in range(nf):
        p = par[fi[a]]
        while p >= 0 and pos[p] < 0:
            p = par[p]
        fpar[a] = pos[p] if p >= 0 else -1
    # M_ff = L^T L in place (L[k, i], i = k or an ancestor of k), leaves first
    L = np.zeros((nf, nf))
    for a in range(nf):
        L[a, a] = M[fi[a], fi[a]]
        c = fpar[a]
        while c >= 0:
            L[a, c] = M[fi[a], fi[c]]
            c = fpar[c]
    for k in range(nf - 1, -1, -1):
        if not L[k, k] > 0.0:
            return SINGULAR
        L[k, k] = math.sqrt(L[k, k])
        i = fpar[k]
        while i >= 0:
            L[k, i] /= L[k, k]
            i = fpar[i]
        i = fpar[k]
        while i >= 0:
            j = i
            while j >= 0:
                L[i, j] -= L[k, i] * L[k, j]
                j = fpar[j]
            i = fpar[i]
    # Y = L^-T J_f^T (nf x m): column i = L^-T (row i of J_f) on its support (the ancestors of its
    # coordinates), solved leaves first; sup[i, :ns[i]] lists the support, descending (found from
    # row i's nonzero entries and their ancestors, not by a pass over every coordinate)
    Y = np.zeros((nf, m))
    sup = np.empty((m, nf), dtype=np.int64)
    ns = np.zeros(m, dtype=np.int64)
    mark = np.zeros(nf, dtype=np.int64)
    for i in range(m):
        stamp = i + 1
        cnt = 0
        for k in range(nv):
            if J[i, k] != 0.0 and pos[k] >= 0:
                c = pos[k]
                while c >= 0 and mark[c] != stamp:
                    mark[c] = stamp
                    # insert c into sup[i, :cnt], kept descending
                    t = cnt
                    while t > 0 and sup[i, t - 1] < c:
                        sup[i, t] = sup[i, t - 1]
                        t -= 1
                    sup[i, t] = c
                    cnt += 1
                    c = fpar[c]
        ns[i] = cnt
        for t in range(cnt):
            a = sup[i, t]
            Y[a, i] = J[i, fi[a]]
        for t in range(cnt):
            a = sup[i, t]
            y = Y[a, i] / L[a, a]
            Y[a, i] = y
            c = fpar[a]
            while c >= 0:
                Y[c, i] -= L[a, c] * y
                c = fpar[c]
    # W = Y^T Y over the pairs of rows whose supports meet: each coordinate's rows (CSR, ascending),
    # and W[i, j] summed over row i's support in its order (the terms off j's support are exact
    # zeros: the same sums as over every pair; bodies on separate branches skip each other); the
    # upper triangle, then mirrored
    cnt_a = np.zeros(nf + 1, dtype=np.int64)
    for i in range(m):
        for t in range(ns[i]):
            cnt_a[sup[i, t] + 1] += 1
    for a in range(nf):
        cnt_a[a + 1] += cnt_a[a]
    rows_a = np.empty(cnt_a[nf], dtype=np.int64)
    fill = cnt_a[:nf].copy()
    for i in range(m):
        for t in range(ns[i]):
            a = sup[i, t]
            rows_a[fill[a]] = i
            fill[a] += 1
    for i in range(m):
        for j in range(i, m):
            W[i, j] = 0.0
    # rows_a ascends within each coordinate, and i ascends: a coordinate's first row j >= i only
    # moves on (nxt[a]; row i is on it), so the sum runs over j >= i alone, term for term as it
    # did over every row with a test (the pile of 20 boxes: W's part of _response 133 -> 78 us)
    nxt = cnt_a[:nf].copy()
    for i in range(m):
        for t in range(ns[i]):
            a = sup[i, t]
            y = Y[a, i]
            u0 = nxt[a]
            while rows_a[u0] < i:
                u0 += 1
            nxt[a] = u0
            for u in range(u0, cnt_a[a + 1]):
                j = rows_a[u]
                W[i, j] += y * Y[a, j]
    for i in range(m):
        for j in range(i + 1, m):
            W[j, i] = W[i, j]
    # G = L^-1 Y, root first, a row of G at a time (each entry as the column-wise recurrence
    # would sum it: the coordinate's own Y, less its ancestors' terms nearest first)
    for k in range(nv):
        if pos[k] < 0:
            for j in range(m):
                G[k, j] = 0.0
    for a in range(nf):
        ga = fi[a]
        for j in range(m):
            G[ga, j] = Y[a, j]
        c = fpar[a]
        while c >= 0:
            l = L[a, c]
            if l != 0.0:
                gc = fi[c]
                for j in range(m):
                    G[ga, j] -= l * G[gc, j]
            c = fpar[c]
        d = L[a, a]
        for j in range(m):
            G[ga, j] /= d
    return OK


@njit(cache=True, _nrt=True)
def _contact_rows(m_bytes, ws_k, q, T, nc, cb, cbb, cx, cn, Jall, J):
    """Rows 3k, 3k+1, 3k+2 of J: n_k, t1_k, t2_k . (velocity of contact point k on body cb[k] minus
    that on body cbb[k]; 0: the ground), n_k = cn[k], its tangents as engine.Ground.tangents."""
    nv = J.shape[1]
    nb = Jall.shape[0]
    seen = np.zeros(nb, dtype=np.bool_)
    for k in range(nc):
        for side in range(2):
            b = cb[k] if side == 0 else cbb[k]
            if b > 0 and not seen[b]:
                seen[b] = True
                for r in range(6):
                    for j in range(nv):
                        Jall[b, r, j] = 0.0
                body_jacobian(m_bytes, ws_k, q, b, Jall[b])
    U = np.empty((nc, 3, 3))
    t1 = np.empty(3)
    t2 = np.empty(3)
    for k in range(nc):
        _tangents(cn[k], t1, t2)
        for i in range(3):
            U[k, 0, i] = cn[k, i]
            U[k, 1, i] = t1[i]
            U[k, 2, i] = t2[i]
    ba = cb[:nc].copy()
    bb = cbb[:nc].copy()
    rows = np.zeros((nc, 3, nv))
    rows_kernel(ba, bb, cx[:nc], U, T, Jall, rows)
    for k in range(nc):
        for a in range(3):
            for j in range(nv):
                J[3 * k + a, j] = rows[k, a, j]


@njit(cache=True)
def _side(mats, b, c, default):
    x = mats[b, c]
    return default if math.isnan(x) else x


@njit(cache=True)
def _material(mats, ba, bb, gnd, out):
    """(friction, restitution) of a contact of body ba with bb (0: the ground): the mean of the two
    sides' values, NaN in mats taking the ground's (engine.contact.python_step.ContactStepper.material)."""
    for c in range(2):
        out[c] = 0.5 * (_side(mats, ba, c, gnd[4 + c]) + _side(mats, bb, c, gnd[4 + c]))
