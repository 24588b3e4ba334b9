"""Contact manifolds: the points a resting pair touches at, from the narrow phase's normal (compiled).

After ``pair_distance`` gives the normal n (A to B), each shape reports its support *feature* in its
direction (A along n, B along -n): a point, a segment or a polygon (a box face, a cylinder cap as 8
rim points, a hull face), taking directions within FEATURE_SIN of a face's normal as that face. The
incident feature is clipped by the side planes of the reference polygon (Sutherland-Hodgman, as
ODE's and Bullet's box-box) and each clipped point is projected along n onto the reference plane;
the points closer than the margin are kept, reduced to 4 (the deepest, then the widest spread).
A point-like feature on either side gives the single witness pair of the narrow phase.

Output rows pts[i] = (point on A, point on B), depth[i] = -n . (pB - pA) (> 0 overlapping).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from engine.collision.shapes import SPHERE, BOX, CAPSULE, CYLINDER
from engine.collision.narrow import pair_distance

FEATURE_SIN = 0.02      # directions within ~1.15 degrees of a face normal touch with the whole face
MAX_FEATURE = 16
CAP_POINTS = 8


CLIP_ROWS = 2 * MAX_FEATURE + 4    # a clipped polygon's capacity


@njit(cache=True)
def _put(R, p, x0, x1, x2, F, m):
    """F[m] = R x + p (a shape-frame point into the world)."""
    F[m, 0] = R[0, 0] * x0 + R[0, 1] * x1 + R[0, 2] * x2 + p[0]
    F[m, 1] = R[1, 0] * x0 + R[1, 1] * x1 + R[1, 2] * x2 + p[1]
    F[m, 2] = R[2, 0] * x0 + R[2, 1] * x1 + R[2, 2] * x2 + p[2]


@njit(cache=True)
def support_feature(kind, size, verts, R, p, u, F):
    """The feature of the shape farthest along world direction u: its points (world) into F,
    returns their count (1 point, 2 segment, >= 3 convex polygon in order)."""
    return _support(kind, size, verts, R, p, u[0], u[1], u[2], F)


@njit(cache=True)
def _support(kind, size, verts, R, p, u0, u1, u2, F):
    """support_feature along (u0, u1, u2), in scalars (no array is made: the contact step calls it
    for every touching pair at every step)."""
    ul0 = R[0, 0] * u0 + R[1, 0] * u1 + R[2, 0] * u2        # u in the shape's frame
    ul1 = R[0, 1] * u0 + R[1, 1] * u1 + R[2, 1] * u2
    ul2 = R[0, 2] * u0 + R[1, 2] * u1 + R[2, 2] * u2
    if kind == SPHERE:
        F[0, 0] = p[0] + size[0] * u0
        F[0, 1] = p[1] + size[0] * u1
        F[0, 2] = p[2] + size[0] * u2
        return 1
    if kind == BOX:
        f0 = abs(ul0) < FEATURE_SIN
        f1 = abs(ul1) < FEATURE_SIN
        f2 = abs(ul2) < FEATURE_SIN
        free = int(f0) + int(f1) + int(f2)
        s0 = size[0] if ul0 >= 0.0 else -size[0]
        s1 = size[1] if ul1 >= 0.0 else -size[1]
        s2 = size[2] if ul2 >= 0.0 else -size[2]
        if free == 0:
            _put(R, p, s0, s1, s2, F, np.int64(0))
            return 1
        # walk the free axes' signs in cyclic order (a face: 4 corners, an edge: 2 ends)
        ax0 = 0 if f0 else (1 if f1 else 2)
        ax1 = -1
        if free >= 2:
            ax1 = 1 if (f1 and ax0 == 0) else 2
        if free == 1:
            for e in range(2):
                v = size[ax0] * (-1.0 if e == 0 else 1.0)
                _put(R, p, v if ax0 == 0 else s0, v if ax0 == 1 else s1, v if ax0 == 2 else s2, F, e)
            return 2
        for c in range(4):
            va = size[ax0] * (1.0 if c == 1 or c == 2 else -1.0)
            vb = size[ax1] * (1.0 if c >= 2 else -1.0)
            _put(R, p, va if ax0 == 0 else (vb if ax1 == 0 else s0), va if ax0 == 1 else (vb if ax1 == 1 else s1),
                 va if ax0 == 2 else (vb if ax1 == 2 else s2), F, c)
        return 4
    if kind == CAPSULE:
        ends = 2 if abs(ul2) < FEATURE_SIN else 1
        # the radius along u, or along u's part across the axis for a side (on the surface)
        w0, w1, w2 = u0, u1, u2
        if ends == 2:
            w0 -= ul2 * R[0, 2]
            w1 -= ul2 * R[1, 2]
            w2 -= ul2 * R[2, 2]
            wn = np.sqrt(w0 * w0 + w1 * w1 + w2 * w2)
            w0 /= wn
            w1 /= wn
            w2 /= wn
        for e in range(ends):
            if ends == 2:
                z = size[1] * (1.0 if e == 0 else -1.0)
            else:
                z = size[1] * (1.0 if ul2 >= 0.0 else -1.0)
            _put(R, p, 0.0, 0.0, z, F, e)
            F[e, 0] += size[0] * w0
            F[e, 1] += size[0] * w1
            F[e, 2] += size[0] * w2
        return ends
    if kind == CYLINDER:
        rho = np.sqrt(ul0 * ul0 + ul1 * ul1)
        zs = size[1] * (1.0 if ul2 >= 0.0 else -1.0)
        if rho < FEATURE_SIN:                 # the cap: a regular polygon on its rim
            for c in range(CAP_POINTS):
                a = 2.0 * np.pi * c / CAP_POINTS
                _put(R, p, size[0] * np.cos(a), size[0] * np.sin(a), zs, F, c)
            return CAP_POINTS
        x0 = size[0] * ul0 / rho
        x1 = size[0] * ul1 / rho
        if abs(ul2) < FEATURE_SIN:          # the side: a segment
            for e in range(2):
                _put(R, p, x0, x1, size[1] * (1.0 if e == 0 else -1.0), F, e)
            return 2
        _put(R, p, x0, x1, zs, F, np.int64(0))
        return 1
    return _hull_feature(verts, R, p, ul0, ul1, ul2, u0, u1, u2, F)


@njit(cache=True)
def _hull_feature(verts, R, p, ul0, ul1, ul2, u0, u1, u2, F):
    """A hull's vertices within FEATURE_SIN x extent of its support plane, ordered by angle."""
    nv = verts.shape[0]
    best = -np.inf
    lo = np.inf
    for i in range(nv):
        s = verts[i, 0] * ul0 + verts[i, 1] * ul1 + verts[i, 2] * ul2
        best = max(best, s)
        lo = min(lo, s)
    tol = FEATURE_SIN * (best - lo)
    m = np.int64(0)      # not the literal 0: _put compiles once
    for i in range(nv):
        s = verts[i, 0] * ul0 + verts[i, 1] * ul1 + verts[i, 2] * ul2
        if s >= best - tol and m < MAX_FEATURE:
            _put(R, p, verts[i, 0], verts[i, 1], verts[i, 2], F, m)
            m += 1
    if m >= 3:
        _order_polygon(F, np.int64(m), u0, u1, u2)
    return m


@njit(cache=True)
def _centroid(F, k):
    """The mean of the points F[0:k]."""
    c0 = 0.0
    c1 = 0.0
    c2 = 0.0
    for i in range(k):
        c0 += F[i, 0]
        c1 += F[i, 1]
        c2 += F[i, 2]
    return c0 / k, c1 / k, c2 / k


@njit(cache=True)
def _order_polygon(F, m, u0, u1, u2):
    """Sort F[0:m] by angle about their centroid in the plane across u (insertion sort)."""
    c0, c1, c2 = _centroid(F, m)
    e0, e1, e2 = F[0, 0] - c0, F[0, 1] - c1, F[0, 2] - c2
    eu = e0 * u0 + e1 * u1 + e2 * u2
    e0 -= eu * u0
    e1 -= eu * u1
    e2 -= eu * u2
    en = np.sqrt(e0 * e0 + e1 * e1 + e2 * e2)
    e0 /= en
    e1 /= en
    e2 /= en
    g0 = u1 * e2 - u2 * e1                 # u x e
    g1 = u2 * e0 - u0 * e2
    g2 = u0 * e1 - u1 * e0
    ang = np.empty(MAX_FEATURE)
    for i in range(m):
        d0, d1, d2 = F[i, 0] - c0, F[i, 1] - c1, F[i, 2] - c2
        ang[i] = np.arctan2(d0 * g0 + d1 * g1 + d2 * g2, d0 * e0 + d1 * e1 + d2 * e2)
    for i in range(1, m):
        a = ang[i]
        x0, x1, x2 = F[i, 0], F[i, 1], F[i, 2]
        j = i - 1
        while j >= 0 and ang[j] > a:
            ang[j + 1] = ang[j]
            F[j + 1, 0] = F[j, 0]
            F[j + 1, 1] = F[j, 1]
            F[j + 1, 2] = F[j, 2]
            j -= 1
        ang[j + 1] = a
        F[j + 1, 0] = x0
        F[j + 1, 1] = x1
        F[j + 1, 2] = x2


@njit(cache=True)
def _clip(P, k, o0, o1, o2, s0, s1, s2, Q):
    """Clip the polyline/polygon P[0:k] by the half space s . (x - o) >= 0 into Q (not P); returns
    the count. k = 1 a point, k = 2 a segment, k >= 3 a closed polygon (Sutherland-Hodgman)."""
    if k == 1:
        if s0 * (P[0, 0] - o0) + s1 * (P[0, 1] - o1) + s2 * (P[0, 2] - o2) >= 0.0:
            for c in range(3):
                Q[0, c] = P[0, c]
            return 1
        return 0
    if k == 2:
        da = s0 * (P[0, 0] - o0) + s1 * (P[0, 1] - o1) + s2 * (P[0, 2] - o2)
        db = s0 * (P[1, 0] - o0) + s1 * (P[1, 1] - o1) + s2 * (P[1, 2] - o2)
        if da < 0.0 and db < 0.0:
            return 0
        t = da / (da - db) if (da < 0.0 or db < 0.0) else 0.0
        for c in range(3):
            Q[0, c] = P[0, c]
            Q[1, c] = P[1, c]
            if da < 0.0:
                Q[0, c] = P[0, c] + t * (P[1, c] - P[0, c])
            elif db < 0.0:
                Q[1, c] = P[0, c] + t * (P[1, c] - P[0, c])
        return 2
    m = 0
    for i in range(k):
        j = (i + 1) % k
        da = s0 * (P[i, 0] - o0) + s1 * (P[i, 1] - o1) + s2 * (P[i, 2] - o2)
        db = s0 * (P[j, 0] - o0) + s1 * (P[j, 1] - o1) + s2 * (P[j, 2] - o2)
        if da >= 0.0:
            for c in range(3):
                Q[m, c] = P[i, c]
            m += 1
        if (da >= 0.0) != (db >= 0.0) and m < Q.shape[0]:
            t = da / (da - db)
            for c in range(3):
                Q[m, c] = P[i, c] + t * (P[j, c] - P[i, c])
            m += 1
    return m


@njit(cache=True)
def _clip_to_reference(Ref, kr, Inc, ki, n0, n1, n2, A, B):
    """Inc[0:ki] clipped by the side planes of the reference (a polygon kr >= 3 or a segment kr
    = 2) seen along n, with A and B (CLIP_ROWS x 3) as the two buffers it clips between. Returns
    (count, True when the answer is in B, False: in A)."""
    for i in range(ki):
        for c in range(3):
            A[i, c] = Inc[i, c]
    cnt = ki
    if kr == 2:       # a segment: its two end planes
        e0, e1, e2 = Ref[1, 0] - Ref[0, 0], Ref[1, 1] - Ref[0, 1], Ref[1, 2] - Ref[0, 2]
        en = e0 * n0 + e1 * n1 + e2 * n2
        e0 -= en * n0
        e1 -= en * n1
        e2 -= en * n2
        cnt = _clip(A, cnt, Ref[0, 0], Ref[0, 1], Ref[0, 2], e0, e1, e2, B)
        for i in range(cnt):
            for c in range(3):
                A[i, c] = B[i, c]
        cnt = _clip(A, cnt, Ref[1, 0], Ref[1, 1], Ref[1, 2], -e0, -e1, -e2, B)
        return cnt, True
    c0, c1, c2 = _centroid(Ref, kr)
    in_b = False
    for i in range(kr):
        j = (i + 1) % kr
        e0, e1, e2 = Ref[j, 0] - Ref[i, 0], Ref[j, 1] - Ref[i, 1], Ref[j, 2] - Ref[i, 2]
        s0 = n1 * e2 - n2 * e1                  # n x e
        s1 = n2 * e0 - n0 * e2
        s2 = n0 * e1 - n1 * e0
        if s0 * (c0 - Ref[i, 0]) + s1 * (c1 - Ref[i, 1]) + s2 * (c2 - Ref[i, 2]) < 0.0:
            s0, s1, s2 = -s0, -s1, -s2
        if in_b:
            cnt = _clip(B, cnt, Ref[i, 0], Ref[i, 1], Ref[i, 2], s0, s1, s2, A)
        else:
            cnt = _clip(A, cnt, Ref[i, 0], Ref[i, 1], Ref[i, 2], s0, s1, s2, B)
        in_b = not in_b
        if cnt == 0:
            return 0, in_b
    return cnt, in_b


@njit(cache=True)
def _select4(P, depth, k, sel):
    """Indices of 4 of the k points into sel: the deepest, the farthest from it, the widest
    triangle, then the point farthest from the three."""
    best0 = 0
    for i in range(1, k):
        if depth[i] > depth[best0]:
            best0 = i
    sel[0] = best0
    for j in range(1, 4):
        sel[j] = -1
    for j in range(1, 4):
        best = -1.0
        for i in range(k):
            taken = False
            for q in range(j):
                if sel[q] == i:
                    taken = True
            if taken:
                continue
            a = sel[0]
            if j == 1:
                score = 0.0
                for c in range(3):
                    score += (P[i, c] - P[a, c]) ** 2
            elif j == 2:
                b = sel[1]
                x0, x1, x2 = P[b, 0] - P[a, 0], P[b, 1] - P[a, 1], P[b, 2] - P[a, 2]
                y0, y1, y2 = P[i, 0] - P[a, 0], P[i, 1] - P[a, 1], P[i, 2] - P[a, 2]
                score = (x1 * y2 - x2 * y1) ** 2 + (x2 * y0 - x0 * y2) ** 2 + (x0 * y1 - x1 * y0) ** 2
            else:
                score = np.inf
                for q in range(3):
                    d = 0.0
                    for c in range(3):
                        d += (P[i, c] - P[sel[q], c]) ** 2
                    score = min(score, d)
            if score > best:
                best = score
                sel[j] = i


@njit(cache=True)
def pair_manifold(kA, sA, vA, RA, pA, kB, sB, vB, RB, pB, margin, pts, depth, normal):
    """Contact points of A and B within `margin`: pts[i, 0:3] on A, pts[i, 3:6] on B, depth[i],
    normal (A to B). pts must hold >= 4 rows. Returns the count (0: apart beyond the margin).
    Its buffers are made once per call and every stage writes into them (no arrays per point:
    the contact step calls this for every touching pair at every step)."""
    out = np.empty(10)
    pair_distance(kA, sA, vA, RA, pA, kB, sB, vB, RB, pB, out)
    n0, n1, n2 = out[7], out[8], out[9]
    normal[0] = n0
    normal[1] = n1
    normal[2] = n2
    if out[0] > margin:
        return 0
    S = np.empty((2 * MAX_FEATURE + 4 * CLIP_ROWS, 3))    # FA, FB, the two clip buffers, PA, PB
    FA = S[:MAX_FEATURE]
    FB = S[MAX_FEATURE:2 * MAX_FEATURE]
    ka = _support(kA, sA, vA, RA, pA, n0, n1, n2, FA)
    kb = _support(kB, sB, vB, RB, pB, -n0, -n1, -n2, FB)
    k = 0
    if ka >= 2 and kb >= 2 and not (ka == 2 and kb == 2 and _crossing(FA, FB, n0, n1, n2)):
        A = S[2 * MAX_FEATURE:2 * MAX_FEATURE + CLIP_ROWS]
        B = S[2 * MAX_FEATURE + CLIP_ROWS:2 * MAX_FEATURE + 2 * CLIP_ROWS]
        PA = S[2 * MAX_FEATURE + 2 * CLIP_ROWS:2 * MAX_FEATURE + 3 * CLIP_ROWS]
        PB = S[2 * MAX_FEATURE + 3 * CLIP_ROWS:]
        dep = np.empty(CLIP_ROWS)
        ref_is_a = ka >= 3 or kb < 3
        if ref_is_a:
            Ref, kr, Inc, ki = FA, ka, FB, kb
        else:
            Ref, kr, Inc, ki = FB, kb, FA, ka
        kc, in_b = _clip_to_reference(Ref, kr, Inc, ki, n0, n1, n2, A, B)
        Cl = B if in_b else A
        m0, m1, m2 = _reference_normal(Ref, kr, n0, n1, n2)
        mn = m0 * n0 + m1 * n1 + m2 * n2
        for i in range(kc):
            x0, x1, x2 = Cl[i, 0], Cl[i, 1], Cl[i, 2]
            t = (m0 * (Ref[0, 0] - x0) + m1 * (Ref[0, 1] - x1) + m2 * (Ref[0, 2] - x2)) / mn   # along n onto the reference's plane
            y0, y1, y2 = x0 + t * n0, x1 + t * n1, x2 + t * n2
            if ref_is_a:
                a0, a1, a2, b0, b1, b2 = y0, y1, y2, x0, x1, x2
            else:
                a0, a1, a2, b0, b1, b2 = x0, x1, x2, y0, y1, y2
            d = (b0 - a0) * n0 + (b1 - a1) * n1 + (b2 - a2) * n2
            if d <= margin:
                PA[k, 0], PA[k, 1], PA[k, 2] = a0, a1, a2
                PB[k, 0], PB[k, 1], PB[k, 2] = b0, b1, b2
                dep[k] = -d
                k += 1
        if k > 0:
            sel = np.arange(4)
            if k > 4:
                _select4(PA, dep, np.int64(k), sel)
                k = 4
            for i in range(k):
                r = sel[i]
                for c in range(3):
                    pts[i, c] = PA[r, c]
                    pts[i, 3 + c] = PB[r, c]
                depth[i] = dep[r]
            return k
    pts[0, 0:3] = out[1:4]
    pts[0, 3:6] = out[4:7]
    depth[0] = -out[0]
    return 1

@njit(cache=True)
def _reference_normal(Ref, kr, n0, n1, n2):
    """The plane of the reference feature: a polygon's own normal (Newell's, towards n), or for a
    segment the plane through it closest to across n."""
    m0 = 0.0
    m1 = 0.0
    m2 = 0.0
    if kr >= 3:
        for i in range(kr):
            j = (i + 1) % kr
            m0 += (Ref[i, 1] - Ref[j, 1]) * (Ref[i, 2] + Ref[j, 2])
            m1 += (Ref[i, 2] - Ref[j, 2]) * (Ref[i, 0] + Ref[j, 0])
            m2 += (Ref[i, 0] - Ref[j, 0]) * (Ref[i, 1] + Ref[j, 1])
    else:
        e0, e1, e2 = Ref[1, 0] - Ref[0, 0], Ref[1, 1] - Ref[0, 1], Ref[1, 2] - Ref[0, 2]
        en = np.sqrt(e0 * e0 + e1 * e1 + e2 * e2)
        e0 /= en
        e1 /= en
        e2 /= en
        ne = n0 * e0 + n1 * e1 + n2 * e2
        m0 = n0 - ne * e0
        m1 = n1 - ne * e1
        m2 = n2 - ne * e2
    mm = np.sqrt(m0 * m0 + m1 * m1 + m2 * m2)
    m0 /= mm
    m1 /= mm
    m2 /= mm
    if m0 * n0 + m1 * n1 + m2 * n2 < 0.0:
        return -m0, -m1, -m2
    return m0, m1, m2


@njit(cache=True)
def _crossing(FA, FB, n0, n1, n2):
    """Two segments that are not parallel (seen along n) touch at one point."""
    a0, a1, a2 = FA[1, 0] - FA[0, 0], FA[1, 1] - FA[0, 1], FA[1, 2] - FA[0, 2]
    b0, b1, b2 = FB[1, 0] - FB[0, 0], FB[1, 1] - FB[0, 1], FB[1, 2] - FB[0, 2]
    an = a0 * n0 + a1 * n1 + a2 * n2
    bn = b0 * n0 + b1 * n1 + b2 * n2
    a0, a1, a2 = a0 - an * n0, a1 - an * n1, a2 - an * n2
    b0, b1, b2 = b0 - bn * n0, b1 - bn * n1, b2 - bn * n2
    c0 = a1 * b2 - a2 * b1
    c1 = a2 * b0 - a0 * b2
    c2 = a0 * b1 - a1 * b0
    return np.sqrt(c0 * c0 + c1 * c1 + c2 * c2) > FEATURE_SIN * np.sqrt((a0 * a0 + a1 * a1 + a2 * a2)
                                                                      * (b0 * b0 + b1 * b1 + b2 * b2))



@njit(cache=True)
def pairs_manifold(kinds, sizes, verts, vstart, vcount, R, p, pairs, margin, pts, depth, normal, count):
    """pair_manifold over the broad phase's candidate pairs (shapes as in narrow.pairs_distance):
    pair q's points in pts[q, 0:count[q]] (rows: point on A, point on B), depth[q], normal[q].
    Returns the total number of contact points."""
    total = 0
    for q in range(pairs.shape[0]):
        i = pairs[q, 0]
        j = pairs[q, 1]
        count[q] = pair_manifold(kinds[i], sizes[i], verts[vstart[i]:vstart[i] + vcount[i]], R[i], p[i],
                                 kinds[j], sizes[j], verts[vstart[j]:vstart[j] + vcount[j]], R[j], p[j],
                                 margin, pts[q], depth[q], normal[q])
        total += count[q]
    return total
