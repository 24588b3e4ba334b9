"""GJK distance and EPA penetration between the cores of two convex shapes (compiled).

Gilbert, Johnson and Keerthi's distance on the Minkowski difference A - B with the closest point
of each simplex found by Voronoi regions (Ericson, Real-Time Collision Detection, 5.1.5 and 5.1.6);
when the origin lies in A - B, the expanding polytope (van den Bergen) finds the penetration.
Each simplex vertex keeps its two support points, so the witness points on A and on B come out of
the barycentric coordinates of the closest point.

Result layout (``out``, float64[10]): out[0] the signed distance (negative: depth), out[1:4] the
witness point on A, out[4:7] the witness point on B, out[7:10] the unit normal from A to B, with
pB = pA + d n. Status: 0 converged, 1 iteration limit reached (the best estimate is returned).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from engine.collision.shapes import core_support, dot3, cross3

GJK_MAX_ITER = 128
GJK_REL_TOL = 1e-14     # stop when |v|^2 - v.w <= tol |v|^2: the distance is then exact to ~tol |v|
GJK_ABS_TOL = 1e-14     # or when the distance can fall by less than tol (1 + |w|)
EPA_MAX_VERTS = 256
EPA_MAX_FACES = 2 * EPA_MAX_VERTS
EPA_TOL = 1e-11         # stop when the support beyond the nearest face gains less than this (times scale)


@njit(cache=True)
def _support_pair(kA, sA, vA, RA, pA, kB, sB, vB, RB, pB, d, W, SA, SB, i, tmp, dl):
    """Vertex i of the Minkowski difference in direction d: SA[i] = s_A(d), SB[i] = s_B(-d)."""
    core_support(kA, sA, vA, RA, pA, d, dl, SA[i])
    tmp[0] = -d[0]
    tmp[1] = -d[1]
    tmp[2] = -d[2]
    core_support(kB, sB, vB, RB, pB, tmp, dl, SB[i])
    for k in range(3):
        W[i, k] = SA[i, k] - SB[i, k]


@njit(cache=True)
def _copy_vertex(W, SA, SB, src, dst):
    for k in range(3):
        W[dst, k] = W[src, k]
        SA[dst, k] = SA[src, k]
        SB[dst, k] = SB[src, k]


@njit(cache=True)
def _closest_triangle(W, ia, ib, ic, lam):
    """Barycentrics (into lam[0:3] for ia, ib, ic) of the point of triangle (a, b, c) closest to the
    origin (Ericson 5.1.5 with p = 0). Returns the region's vertex mask (bit 0 a, 1 b, 2 c)."""
    ax, ay, az = W[ia, 0], W[ia, 1], W[ia, 2]
    bx, by, bz = W[ib, 0], W[ib, 1], W[ib, 2]
    cx, cy, cz = W[ic, 0], W[ic, 1], W[ic, 2]
    abx, aby, abz = bx - ax, by - ay, bz - az
    acx, acy, acz = cx - ax, cy - ay, cz - az
    lam[0] = 0.0
    lam[1] = 0.0
    lam[2] = 0.0
    d1 = -(abx * ax + aby * ay + abz * az)
    d2 = -(acx * ax + acy * ay + acz * az)
    if d1 <= 0.0 and d2 <= 0.0:
        lam[0] = 1.0
        return 1
    d3 = -(abx * bx + aby * by + abz * bz)
    d4 = -(acx * bx + acy * by + acz * bz)
    if d3 >= 0.0 and d4 <= d3:
        lam[1] = 1.0
        return 2
    vc = d1 * d4 - d3 * d2
    if vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
        v = d1 / (d1 - d3)
        lam[0] = 1.0 - v
        lam[1] = v
        return 3
    d5 = -(abx * cx + aby * cy + abz * cz)
    d6 = -(acx * cx + acy * cy + acz * cz)
    if d6 >= 0.0 and d5 <= d6:
        lam[2] = 1.0
        return 4
    vb = d5 * d2 - d1 * d6
    if vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
        w = d2 / (d2 - d6)
        lam[0] = 1.0 - w
        lam[2] = w
        return 5
    va = d3 * d6 - d5 * d4
    if va <= 0.0 and (d4 - d3) >= 0.0 and (d5 - d6) >= 0.0:
        w = (d4 - d3) / ((d4 - d3) + (d5 - d6))
        lam[1] = 1.0 - w
        lam[2] = w
        return 6
    denom = 1.0 / (va + vb + vc)
    v = vb * denom
    w = vc * denom
    lam[0] = 1.0 - v - w
    lam[1] = v
    lam[2] = w
    return 7


@njit(cache=True)
def _face_sides(W, f):
    """For the tetrahedron face opposite vertex f: (origin side) * (vertex f side) of its plane."""
    ia = (f + 1) % 4
    ib = (f + 2) % 4
    ic = (f + 3) % 4
    ux, uy, uz = W[ib, 0] - W[ia, 0], W[ib, 1] - W[ia, 1], W[ib, 2] - W[ia, 2]
    wx, wy, wz = W[ic, 0] - W[ia, 0], W[ic, 1] - W[ia, 1], W[ic, 2] - W[ia, 2]
    nx, ny, nz = uy * wz - uz * wy, uz * wx - ux * wz, ux * wy - uy * wx
    so = -(nx * W[ia, 0] + ny * W[ia, 1] + nz * W[ia, 2])
    sd = nx * (W[f, 0] - W[ia, 0]) + ny * (W[f, 1] - W[ia, 1]) + nz * (W[f, 2] - W[ia, 2])
    return so * sd


@njit(cache=True)
def _flat(W):
    """A tetrahedron whose volume is rounding next to its edges' scale (6 V <= 1e-12 l^3)."""
    ux, uy, uz = W[1, 0] - W[0, 0], W[1, 1] - W[0, 1], W[1, 2] - W[0, 2]
    vx, vy, vz = W[2, 0] - W[0, 0], W[2, 1] - W[0, 1], W[2, 2] - W[0, 2]
    wx, wy, wz = W[3, 0] - W[0, 0], W[3, 1] - W[0, 1], W[3, 2] - W[0, 2]
    vol = abs(ux * (vy * wz - vz * wy) - uy * (vx * wz - vz * wx) + uz * (vx * wy - vy * wx))
    l2 = max(ux * ux + uy * uy + uz * uz, max(vx * vx + vy * vy + vz * vz, wx * wx + wy * wy + wz * wz))
    return vol <= 1e-12 * l2 * np.sqrt(l2)


@njit(cache=True)
def _reduce(W, SA, SB, n, lam, v, scr):
    """Replace the simplex W[0:n] by the sub-simplex supporting its point closest to the origin;
    v = that point, lam its barycentrics. Returns the new size (4: the origin is inside).
    scr: float64[11, 3] scratch."""
    lam3 = scr[0]
    blam = scr[1]
    if n == 1:
        lam[0] = 1.0
    elif n == 2:
        abx, aby, abz = W[1, 0] - W[0, 0], W[1, 1] - W[0, 1], W[1, 2] - W[0, 2]
        den = abx * abx + aby * aby + abz * abz
        t = -(W[0, 0] * abx + W[0, 1] * aby + W[0, 2] * abz) / den if den > 0.0 else 0.0
        if t <= 0.0:
            n = 1
            lam[0] = 1.0
        elif t >= 1.0:
            _copy_vertex(W, SA, SB, 1, 0)
            n = 1
            lam[0] = 1.0
        else:
            lam[0] = 1.0 - t
            lam[1] = t
    elif n == 3:
        mask = _closest_triangle(W, np.int64(0), np.int64(1), np.int64(2), lam3)
        n = _keep(W, SA, SB, np.int64(mask), lam3, lam, np.int64(0), np.int64(1), np.int64(2), scr)
    else:
        # inside when no face has the origin beyond it and the tetrahedron is not flat (a flat one,
        # as when the last support lies in the plane of a face, makes the side tests rounding);
        # outside, the closest point is the nearest of the four faces' closest points
        inside = True
        for f in range(4):
            if _face_sides(W, f) < 0.0:
                inside = False
        if inside and not _flat(W):
            return 4
        best = np.inf
        bmask = 0
        bf = 0
        for f in range(4):
            ia = (f + 1) % 4
            ib = (f + 2) % 4
            ic = (f + 3) % 4
            mask = _closest_triangle(W, np.int64(ia), np.int64(ib), np.int64(ic), lam3)
            dd = 0.0
            for k in range(3):
                q = lam3[0] * W[ia, k] + lam3[1] * W[ib, k] + lam3[2] * W[ic, k]
                dd += q * q
            if dd < best:
                best = dd
                bmask = mask
                bf = f
                blam[0] = lam3[0]
                blam[1] = lam3[1]
                blam[2] = lam3[2]
        n = _keep(W, SA, SB, np.int64(bmask), blam, lam, np.int64((bf + 1) % 4), np.int64((bf + 2) % 4), np.int64((bf + 3) % 4), scr)
    for k in range(3):
        s = 0.0
        for i in range(n):
            s += lam[i] * W[i, k]
        v[k] = s
    return n


@njit(cache=True)
def _keep(W, SA, SB, mask, lam3, lam, ia, ib, ic, scr):
    """Compact the vertices (ia, ib, ic) selected by mask to the front, with their barycentrics
    (scr rows 2-4, 5-7, 8-10 hold the copies)."""
    m = 0
    for j in range(3):
        if mask & (1 << j):
            i = ia if j == 0 else (ib if j == 1 else ic)
            for k in range(3):
                scr[2 + m, k] = W[i, k]
                scr[5 + m, k] = SA[i, k]
                scr[8 + m, k] = SB[i, k]
            lam[m] = lam3[j]
            m += 1
    for j in range(m):
        for k in range(3):
            W[j, k] = scr[2 + j, k]
            SA[j, k] = scr[5 + j, k]
            SB[j, k] = scr[8 + j, k]
    return m


@njit(cache=True)
def gjk(kA, sA, vA, RA, pA, kB, sB, vB, RB, pB, W, SA, SB, out):
    """GJK between the cores. Returns (n, status): n the final simplex size in W/SA/SB (4 or a
    closest point at the origin means the cores overlap: EPA's turn) and the status code.
    When they are apart, out holds the core distance, witnesses and normal."""
    v = np.empty(3)
    d = np.empty(3)
    tmp = np.empty(3)
    dl = np.empty(3)
    lam = np.zeros(4)
    scr = np.empty((11, 3))
    for k in range(3):
        v[k] = pA[k] - pB[k]
    if dot3(v, v) == 0.0:
        v[0] = 1.0
    n = 0
    status = 1
    best = np.inf
    for it in range(GJK_MAX_ITER):
        d[0] = -v[0]
        d[1] = -v[1]
        d[2] = -v[2]
        _support_pair(kA, sA, vA, RA, pA, kB, sB, vB, RB, pB, d, W, SA, SB, np.int64(n), tmp, dl)
        vv = dot3(v, v)
        if n > 0:
            g = vv - dot3(v, W[n])     # |v| g is how much the distance can still fall
            if g <= GJK_REL_TOL * vv or g <= GJK_ABS_TOL * (1.0 + np.sqrt(dot3(W[n], W[n]))) * np.sqrt(vv):
                status = 0
                break
        dup = False
        for i in range(n):
            if W[i, 0] == W[n, 0] and W[i, 1] == W[n, 1] and W[i, 2] == W[n, 2]:
                dup = True
        if dup:
            status = 0
            break
        n = _reduce(W, SA, SB, n + 1, lam, v, scr)
        if n == 4:
            return 4, 0
        nv = dot3(v, v)
        if nv <= 1e-30 * (1.0 + dot3(W[0], W[0])):
            return n, 0          # the origin is on the simplex: touching or overlapping
        if nv >= best:
            status = 0           # no progress (rounding in a flat simplex): the best point stands
            break
        best = nv
        # the witnesses of the best point so far, from its barycentrics
        for k in range(3):
            a = 0.0
            b = 0.0
            for i in range(n):
                a += lam[i] * SA[i, k]
                b += lam[i] * SB[i, k]
            out[1 + k] = a
            out[4 + k] = b
    dist = 0.0
    for k in range(3):
        out[7 + k] = out[4 + k] - out[1 + k]
        dist += out[7 + k] * out[7 + k]
    dist = np.sqrt(dist)
    out[0] = dist
    for k in range(3):
        out[7 + k] /= dist
    return -1, status
