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

from engine.collision.shapes import SPHERE, BOX, CAPSULE, CYLINDER, rot_t_times, pose_point
from engine.collision.narrow import pair_distance

FEATURE_SIN = 0.02      # directions within ~1.15 degrees of a face normal touch with the whole face
MAX_FEATURE = 16
CAP_POINTS = 8


@njit(cache=True)
def support_feature(kind, size, verts, R, p, u, F):
    """The feature of the shape farthest along world direction u: its points (world) into F,
    returns their count (1 point, 2 segment, >= 3 convex polygon in order)."""
    ul = np.empty(3)
    x = np.empty(3)
    rot_t_times(R, u, ul)
    m = 0
    if kind == SPHERE:
        for k in range(3):
            F[0, k] = p[k] + size[0] * u[k]
        return 1
    if kind == BOX:
        free = 0
        for k in range(3):
            if abs(ul[k]) < FEATURE_SIN:
                free += 1
        s = np.empty(3)
        for k in range(3):
            s[k] = size[k] if ul[k] >= 0.0 else -size[k]
        if free == 0:
            pose_point(R, p, s, F[0])
            return 1
        # walk the free axes' signs in cyclic order (a face: 4 corners, an edge: 2 ends)
        ax = np.empty(2, np.int64)
        j = 0
        for k in range(3):
            if abs(ul[k]) < FEATURE_SIN and j < 2:
                ax[j] = k
                j += 1
        if free == 1:
            for sg in (-1.0, 1.0):
                x[:] = s
                x[ax[0]] = sg * size[ax[0]]
                pose_point(R, p, x, F[m])
                m += 1
            return m
        for c in range(4):
            x[:] = s
            x[ax[0]] = size[ax[0]] * (1.0 if c == 1 or c == 2 else -1.0)
            x[ax[1]] = size[ax[1]] * (1.0 if c >= 2 else -1.0)
            pose_point(R, p, x, F[m])
            m += 1
        return m
    if kind == CAPSULE:
        ends = 2 if abs(ul[2]) < FEATURE_SIN else 1
        for e in range(ends):
            x[0] = 0.0
            x[1] = 0.0
            if ends == 2:
                x[2] = size[1] * (1.0 if e == 0 else -1.0)
            else:
                x[2] = size[1] * (1.0 if ul[2] >= 0.0 else -1.0)
            pose_point(R, p, x, F[e])
        # the radius along u, or along u's part across the axis for a side (on the surface)
        w = u.copy()
        if ends == 2:
            for k in range(3):
                w[k] -= ul[2] * R[k, 2]
            w /= np.sqrt(w @ w)
        for e in range(ends):
            for k in range(3):
                F[e, k] += size[0] * w[k]
        return ends
    if kind == CYLINDER:
        rho = np.sqrt(ul[0] * ul[0] + ul[1] * ul[1])
        zs = size[1] * (1.0 if ul[2] >= 0.0 else -1.0)
        if rho < FEATURE_SIN:                 # the cap: a regular polygon on its rim
            for c in range(CAP_POINTS):
                a = 2.0 * np.pi * c / CAP_POINTS
                x[0] = size[0] * np.cos(a)
                x[1] = size[0] * np.sin(a)
                x[2] = zs
                pose_point(R, p, x, F[c])
            return CAP_POINTS
        x[0] = size[0] * ul[0] / rho
        x[1] = size[0] * ul[1] / rho
        if abs(ul[2]) < FEATURE_SIN:          # the side: a segment
            for e in range(2):
                x[2] = size[1] * (1.0 if e == 0 else -1.0)
                pose_point(R, p, x, F[e])
            return 2
        x[2] = zs
        pose_point(R, p, x, F[0])
        return 1
    return _hull_feature(verts, R, p, ul, u, F)


@njit(cache=True)
def _hull_feature(verts, R, p, ul, u, F):
    """A hull's vertices within FEATURE_SIN x extent of its support plane, ordered by angle."""
    nv = verts.shape[0]
    best = -np.inf
    lo = np.inf
    for i in range(nv):
        s = verts[i, 0] * ul[0] + verts[i, 1] * ul[1] + verts[i, 2] * ul[2]
        best = max(best, s)
        lo = min(lo, s)
    tol = FEATURE_SIN * (best - lo)
    m = 0
    for i in range(nv):
        s = verts[i, 0] * ul[0] + verts[i, 1] * ul[1] + verts[i, 2] * ul[2]
        if s >= best - tol and m < MAX_FEATURE:
            pose_point(R, p, verts[i], F[m])
            m += 1
    if m >= 3:
        _order_polygon(F, np.int64(m), u)
    return m


@njit(cache=True)
def _order_polygon(F, m, u):
    """Sort F[0:m] by angle about their centroid in the plane across u (insertion sort)."""
    c = np.zeros(3)
    for i in range(m):
        c += F[i]
    c /= m
    e1 = F[0] - c
    e1 -= (e1 @ u) * u
    e1 /= np.sqrt(e1 @ e1)
    e2 = np.cross(u, e1)
    ang = np.empty(m)
    for i in range(m):
        d = F[i] - c
        ang[i] = np.arctan2(d @ e2, d @ e1)
    order = np.argsort(ang)
    G = F[:m].copy()
    for i in range(m):
        F[i] = G[order[i]]


@njit(cache=True)
def _clip(P, k, o, s, Q):
    """Clip the polyline/polygon P[0:k] by the half space s . (x - o) >= 0 into Q; returns count.
    k = 1 a point, k = 2 a segment, k >= 3 a closed polygon (Sutherland-Hodgman)."""
    if k == 1:
        if s @ (P[0] - o) >= 0.0:
            Q[0] = P[0]
            return 1
        return 0
    if k == 2:
        da = s @ (P[0] - o)
        db = s @ (P[1] - o)
        if da < 0.0 and db < 0.0:
            return 0
        Q[0] = P[0]
        Q[1] = P[1]
        if da < 0.0:
            Q[0] = P[0] + (da / (da - db)) * (P[1] - P[0])
        elif db < 0.0:
            Q[1] = P[0] + (da / (da - db)) * (P[1] - P[0])
        return 2
    m = 0
    for i in range(k):
        a = P[i]
        b = P[(i + 1) % k]
        da = s @ (a - o)
        db = s @ (b - o)
        if da >= 0.0:
            Q[m] = a
            m += 1
        if (da >= 0.0) != (db >= 0.0) and m < Q.shape[0]:
            Q[m] = a + (da / (da - db)) * (b - a)
            m += 1
    return m


@njit(cache=True)
def _clip_to_reference(Ref, kr, Inc, ki, n, Out):
    """Inc[0:ki] clipped by the side planes of the reference (a polygon kr >= 3 or a segment kr
    = 2) seen along n; into Out, returns the count."""
    A = Inc[:ki].copy()
    B = np.empty((2 * MAX_FEATURE + 4, 3))
    cnt = ki
    c = np.zeros(3)
    for i in range(kr):
        c += Ref[i]
    c /= kr
    if kr == 2:       # a segment: its two end planes
        e = Ref[1] - Ref[0]
        e -= (e @ n) * n
        cnt = _clip(A, cnt, Ref[0], e, B)
        A = B[:cnt].copy()
        cnt = _clip(A, cnt, Ref[1], -e, B)
    else:
        for i in range(kr):
            e = Ref[(i + 1) % kr] - Ref[i]
            s = np.cross(n, e)
            if s @ (c - Ref[i]) < 0.0:
                s = -s
            cnt = _clip(A, cnt, Ref[i], s, B)
            if cnt == 0:
                return 0
            A = B[:cnt].copy()
    for i in range(cnt):
        Out[i] = A[i] if kr != 2 else B[i]
    return cnt


@njit(cache=True)
def _reduce4(P, Q, depth, k):
    """Keep 4 of k points: the deepest, the farthest from it, the widest triangle, then the point
    farthest from the three; reorders P, Q, depth in place, returns 4."""
    sel = np.full(4, -1, np.int64)
    sel[0] = np.argmax(depth[:k])
    for j in range(1, 4):
        best = -1.0
        for i in range(k):
            taken = False
            for q in range(j):
                if sel[q] == i:
                    taken = True
            if taken:
                continue
            if j == 1:
                score = np.sum((P[i] - P[sel[0]]) ** 2)
            elif j == 2:
                score = np.sum(np.cross(P[sel[1]] - P[sel[0]], P[i] - P[sel[0]]) ** 2)
            else:
                score = np.inf
                for q in range(3):
                    score = min(score, np.sum((P[i] - P[sel[q]]) ** 2))
            if score > best:
                best = score
                sel[j] = i
    P2 = P[sel].copy()
    Q2 = Q[sel].copy()
    d2 = depth[sel].copy()
    for j in range(4):
        P[j] = P2[j]
        Q[j] = Q2[j]
        depth[j] = d2[j]
    return 4


@njit(cache=True)
def pair_manifold(kA, sA, vA, RA, pA, kB, sB, vB, RB, pB, margin, pts, depth, normal):
    """Contact points of A and B within `margin`: pts[i, 0:3] on A, pts[i, 3:6] on B, depth[i],
    normal (A to B). pts must hold >= 4 rows. Returns the count (0: apart beyond the margin)."""
    out = np.empty(10)
    pair_distance(kA, sA, vA, RA, pA, kB, sB, vB, RB, pB, out)
    n = out[7:10].copy()
    normal[:] = n
    if out[0] > margin:
        return 0
    FA = np.empty((MAX_FEATURE, 3))
    FB = np.empty((MAX_FEATURE, 3))
    ka = support_feature(kA, sA, vA, RA, pA, n, FA)
    kb = support_feature(kB, sB, vB, RB, pB, -n, FB)
    Cl = np.empty((2 * MAX_FEATURE + 4, 3))
    PA = np.empty((2 * MAX_FEATURE + 4, 3))
    PB = np.empty((2 * MAX_FEATURE + 4, 3))
    dep = np.empty(2 * MAX_FEATURE + 4)
    k = 0
    if ka >= 2 and kb >= 2 and not (ka == 2 and kb == 2 and _crossing(FA, FB, n)):
        ref_is_a = ka >= 3 or kb < 3
        if ref_is_a:
            Ref, kr, Inc, ki = FA, ka, FB, kb
        else:
            Ref, kr, Inc, ki = FB, kb, FA, ka
        kc = _clip_to_reference(Ref, kr, Inc, ki, n, Cl)
        m = _reference_normal(Ref, kr, n)
        mn = m @ n
        for i in range(kc):
            x = Cl[i]
            t = (m @ (Ref[0] - x)) / mn        # along n onto the reference's plane
            y = x + t * n
            if ref_is_a:
                a, b = y, x
            else:
                a, b = x, y
            d = (b - a) @ n
            if d <= margin:
                PA[k] = a
                PB[k] = b
                dep[k] = -d
                k += 1
    if k == 0:
        pts[0, 0:3] = out[1:4]
        pts[0, 3:6] = out[4:7]
        depth[0] = -out[0]
        return 1
    if k > 4:
        k = _reduce4(PA, PB, dep, np.int64(k))
    for i in range(k):
        pts[i, 0:3] = PA[i]
        pts[i, 3:6] = PB[i]
        depth[i] = dep[i]
    return k


@njit(cache=True)
def _reference_normal(Ref, kr, n):
    """The plane of the reference feature: a polygon's own normal (Newell's, towards n), or for a
    segment the plane through it closest to across n."""
    m = np.zeros(3)
    if kr >= 3:
        for i in range(kr):
            a = Ref[i]
            b = Ref[(i + 1) % kr]
            m[0] += (a[1] - b[1]) * (a[2] + b[2])
            m[1] += (a[2] - b[2]) * (a[0] + b[0])
            m[2] += (a[0] - b[0]) * (a[1] + b[1])
    else:
        e = Ref[1] - Ref[0]
        e /= np.sqrt(e @ e)
        m = n - (n @ e) * e
    m /= np.sqrt(m @ m)
    if m @ n < 0.0:
        m = -m
    return m


@njit(cache=True)
def _crossing(FA, FB, n):
    """Two segments that are not parallel (seen along n) touch at one point."""
    ea = FA[1] - FA[0]
    eb = FB[1] - FB[0]
    ea -= (ea @ n) * n
    eb -= (eb @ n) * n
    c = np.cross(ea, eb)
    return np.sqrt(c @ c) > FEATURE_SIN * np.sqrt((ea @ ea) * (eb @ eb))


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
