"""Closed-form distances for the pairs that have one (compiled).

Every function writes the result layout of gjk.py: out[0] signed distance, out[1:4] witness on A,
out[4:7] witness on B, out[7:10] unit normal from A to B, pB = pA + d n. Shapes and poses as in
shapes.py. Spheres and capsules are handled as a core (point, segment) plus a radius: the distance
between the cores (exact) minus the radii, which is also the penetration depth while the cores are
apart (the distance to the boundary of K + B_r from an outside point at distance d is r - d).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from engine.collision.shapes import dot3


@njit(cache=True)
def finish_cores(ca, cb, rA, rB, out):
    """Result from the closest core points ca (on A) and cb (on B) at positive distance; the normal
    runs from ca to cb (+z if they coincide, where no direction is preferred)."""
    dx, dy, dz = cb[0] - ca[0], cb[1] - ca[1], cb[2] - ca[2]
    dist = np.sqrt(dx * dx + dy * dy + dz * dz)
    if dist > 0.0:
        nx, ny, nz = dx / dist, dy / dist, dz / dist
    else:
        nx, ny, nz = 0.0, 0.0, 1.0
    out[0] = dist - rA - rB
    out[1] = ca[0] + rA * nx
    out[2] = ca[1] + rA * ny
    out[3] = ca[2] + rA * nz
    out[4] = cb[0] - rB * nx
    out[5] = cb[1] - rB * ny
    out[6] = cb[2] - rB * nz
    out[7] = nx
    out[8] = ny
    out[9] = nz


@njit(cache=True)
def add_radii(rA, rB, out):
    """Inflate a core result (any sign) by the radii along its normal."""
    for k in range(3):
        out[1 + k] += rA * out[7 + k]
        out[4 + k] -= rB * out[7 + k]
    out[0] -= rA + rB


@njit(cache=True)
def segment_point(a, b, x, out):
    """The point of segment [a, b] closest to x."""
    ex, ey, ez = b[0] - a[0], b[1] - a[1], b[2] - a[2]
    den = ex * ex + ey * ey + ez * ez
    t = 0.0
    if den > 0.0:
        t = ((x[0] - a[0]) * ex + (x[1] - a[1]) * ey + (x[2] - a[2]) * ez) / den
        t = min(1.0, max(0.0, t))
    out[0] = a[0] + t * ex
    out[1] = a[1] + t * ey
    out[2] = a[2] + t * ez


@njit(cache=True)
def segment_segment(p1, q1, p2, q2, c1, c2):
    """Closest points c1 on [p1, q1] and c2 on [p2, q2] (Ericson 5.1.9)."""
    d1 = q1 - p1
    d2 = q2 - p2
    r = p1 - p2
    a = dot3(d1, d1)
    e = dot3(d2, d2)
    f = dot3(d2, r)
    s = 0.0
    t = 0.0
    if a <= 1e-300 and e <= 1e-300:
        s = 0.0
        t = 0.0
    elif a <= 1e-300:
        t = min(1.0, max(0.0, f / e))
    else:
        c = dot3(d1, r)
        if e <= 1e-300:
            s = min(1.0, max(0.0, -c / a))
        else:
            b = dot3(d1, d2)
            den = a * e - b * b
            if den > 0.0:
                s = min(1.0, max(0.0, (b * f - c * e) / den))
            t = (b * s + f) / e
            if t < 0.0:
                t = 0.0
                s = min(1.0, max(0.0, -c / a))
            elif t > 1.0:
                t = 1.0
                s = min(1.0, max(0.0, (b - c) / a))
    for k in range(3):
        c1[k] = p1[k] + s * d1[k]
        c2[k] = p2[k] + t * d2[k]


@njit(cache=True)
def capsule_ends(size, R, p, a, b):
    """The world end points of a capsule's (or cylinder's) axis segment."""
    for k in range(3):
        a[k] = p[k] - size[1] * R[k, 2]
        b[k] = p[k] + size[1] * R[k, 2]


@njit(cache=True)
def sphere_sphere(sA, pA, sB, pB, out):
    finish_cores(pA, pB, sA[0], sB[0], out)


@njit(cache=True)
def sphere_capsule(sA, pA, sB, RB, pB, out):
    a = np.empty(3)
    b = np.empty(3)
    c = np.empty(3)
    capsule_ends(sB, RB, pB, a, b)
    segment_point(a, b, pA, c)
    finish_cores(pA, c, sA[0], sB[0], out)


@njit(cache=True)
def capsule_capsule(sA, RA, pA, sB, RB, pB, out):
    a1 = np.empty(3)
    b1 = np.empty(3)
    a2 = np.empty(3)
    b2 = np.empty(3)
    c1 = np.empty(3)
    c2 = np.empty(3)
    capsule_ends(sA, RA, pA, a1, b1)
    capsule_ends(sB, RB, pB, a2, b2)
    segment_segment(a1, b1, a2, b2, c1, c2)
    finish_cores(c1, c2, sA[0], sB[0], out)


@njit(cache=True)
def _local(R, p, x, out):
    """out = R^T (x - p)."""
    dx, dy, dz = x[0] - p[0], x[1] - p[1], x[2] - p[2]
    for k in range(3):
        out[k] = R[0, k] * dx + R[1, k] * dy + R[2, k] * dz


@njit(cache=True)
def _inside_result(c_world, R, q, m, depth, rA, out):
    """Sphere A (centre c_world, radius rA) whose centre lies in B at depth `depth` below B's
    surface point q (B frame) with B's outward normal m (B frame): n = -R m."""
    for k in range(3):
        nk = -(R[k, 0] * m[0] + R[k, 1] * m[1] + R[k, 2] * m[2])
        out[7 + k] = nk
        out[4 + k] = R[k, 0] * q[0] + R[k, 1] * q[1] + R[k, 2] * q[2]
    for k in range(3):
        out[1 + k] = c_world[k] + rA * out[7 + k]
    out[0] = -depth - rA


@njit(cache=True)
def sphere_box(sA, pA, sB, RB, pB, out):
    """Sphere A against box B: the clamped centre outside; the nearest face inside."""
    c = np.empty(3)
    q = np.empty(3)
    _local(RB, pB, pA, c)
    outside = False
    for k in range(3):
        q[k] = min(sB[k], max(-sB[k], c[k]))
        if q[k] != c[k]:
            outside = True
    if outside:
        qw = np.empty(3)
        for k in range(3):
            qw[k] = RB[k, 0] * q[0] + RB[k, 1] * q[1] + RB[k, 2] * q[2] + pB[k]
        finish_cores(pA, qw, sA[0], 0.0, out)
        return
    ib = 0
    best = np.inf
    for k in range(3):
        gap = sB[k] - abs(c[k])
        if gap < best:
            best = gap
            ib = k
    m = np.zeros(3)
    m[ib] = 1.0 if c[ib] >= 0.0 else -1.0
    q[ib] = m[ib] * sB[ib]
    _inside_result(pA, RB, q, m, best, sA[0], out)
    for k in range(3):
        out[4 + k] += pB[k]


@njit(cache=True)
def sphere_cylinder(sA, pA, sB, RB, pB, out):
    """Sphere A against solid cylinder B (axis z, radius r, half length hl)."""
    c = np.empty(3)
    q = np.empty(3)
    _local(RB, pB, pA, c)
    r = sB[0]
    hl = sB[1]
    rho = np.sqrt(c[0] * c[0] + c[1] * c[1])
    q[0] = c[0]
    q[1] = c[1]
    if rho > r:
        q[0] = r * c[0] / rho
        q[1] = r * c[1] / rho
    q[2] = min(hl, max(-hl, c[2]))
    if rho > r or abs(c[2]) > hl:
        qw = np.empty(3)
        for k in range(3):
            qw[k] = RB[k, 0] * q[0] + RB[k, 1] * q[1] + RB[k, 2] * q[2] + pB[k]
        finish_cores(pA, qw, sA[0], 0.0, out)
        return
    m = np.zeros(3)
    side = r - rho
    cap = hl - abs(c[2])
    if cap <= side:
        m[2] = 1.0 if c[2] >= 0.0 else -1.0
        q[2] = m[2] * hl
        depth = cap
    else:
        if rho > 0.0:
            m[0] = c[0] / rho
            m[1] = c[1] / rho
        else:
            m[0] = 1.0
        q[0] = r * m[0]
        q[1] = r * m[1]
        depth = side
    _inside_result(pA, RB, q, m, depth, sA[0], out)
    for k in range(3):
        out[4 + k] += pB[k]


@njit(cache=True)
def segment_box_distance(a, b, sB, RB, pB, ca, cb):
    """Squared distance between segment [a, b] and box B, with the closest points ca, cb (world).
    The squared distance to a box along the segment is a convex piecewise quadratic in t whose
    pieces end where a coordinate crosses a face plane: minimise each piece in closed form."""
    P0 = np.empty(3)
    P1 = np.empty(3)
    _local(RB, pB, a, P0)
    _local(RB, pB, b, P1)
    D = P1 - P0
    bps = np.empty(8)
    nb = 0
    bps[nb] = 0.0
    nb += 1
    for k in range(3):
        if D[k] != 0.0:
            for s in (-1.0, 1.0):
                t = (s * sB[k] - P0[k]) / D[k]
                if 0.0 < t < 1.0:
                    bps[nb] = t
                    nb += 1
    bps[nb] = 1.0
    nb += 1
    bps[:nb].sort()
    best = np.inf
    tbest = 0.0
    for i in range(nb - 1):
        t0 = bps[i]
        t1 = bps[i + 1]
        tm = 0.5 * (t0 + t1)
        num = 0.0
        den = 0.0
        for k in range(3):
            x = P0[k] + tm * D[k]
            if x > sB[k] or x < -sB[k]:
                bound = sB[k] if x > 0.0 else -sB[k]
                num += D[k] * (bound - P0[k])
                den += D[k] * D[k]
        t = min(t1, max(t0, num / den)) if den > 0.0 else tm
        f = 0.0
        for k in range(3):
            x = P0[k] + t * D[k]
            e = max(0.0, abs(x) - sB[k])
            f += e * e
        if f < best:
            best = f
            tbest = t
    q = np.empty(3)
    for k in range(3):
        x = P0[k] + tbest * D[k]
        q[k] = min(sB[k], max(-sB[k], x))
        ca[k] = a[k] + tbest * (b[k] - a[k])
    for k in range(3):
        cb[k] = RB[k, 0] * q[0] + RB[k, 1] * q[1] + RB[k, 2] * q[2] + pB[k]
    return best
