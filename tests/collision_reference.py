"""Independent references for the collision tests: random shapes built both for engine.collision and
for coal (hpp-fcl), and numpy support functions and signed distance fields written from the
definitions, not from engine/collision.

Signed distance of two convex sets, from their support functions h: sd = -min_{|u| = 1} (h_A(u) +
h_B(-u)), attained at the normal u = n from A to B (it is the support function of A - B; both the
separated and the overlapping case). Any direction gives a bound: sd >= -(h_A(u) + h_B(-u)).
"""
from __future__ import annotations

import math

import numpy as np
from scipy.optimize import minimize
from scipy.spatial import ConvexHull
from scipy.spatial.transform import Rotation

from engine.collision import shapes as S

coal = __import__("coal")

NO_VERTS = np.zeros((0, 3))


class Solid:
    """A random shape: kind, size (half extents / radius, half length), hull verts, coal object."""

    def __init__(self, kind, size, verts, hull=None):
        self.kind = kind
        self.size = np.asarray(size, dtype=float)
        self.verts = verts
        self.hull = hull
        if kind == S.SPHERE:
            self.coal = coal.Sphere(size[0])
        elif kind == S.BOX:
            self.coal = coal.Box(*(2.0 * self.size))
        elif kind == S.CAPSULE:
            self.coal = coal.Capsule(size[0], 2.0 * size[1])
        elif kind == S.CYLINDER:
            self.coal = coal.Cylinder(size[0], 2.0 * size[1])
        else:
            pts = coal.StdVec_Vec3s()
            pts.extend([v for v in verts])
            self.coal = coal.Convex.convexHull(pts, False, None)


def random_solid(rng, kind):
    if kind == S.SPHERE:
        return Solid(kind, [rng.uniform(0.1, 0.5), 0, 0], NO_VERTS)
    if kind == S.BOX:
        return Solid(kind, rng.uniform(0.1, 0.5, 3), NO_VERTS)
    if kind in (S.CAPSULE, S.CYLINDER):
        return Solid(kind, [rng.uniform(0.1, 0.4), rng.uniform(0.1, 0.4), 0], NO_VERTS)
    pts = rng.normal(size=(14, 3)) * rng.uniform(0.1, 0.4, 3)
    hull = ConvexHull(pts)
    v = np.ascontiguousarray(pts[hull.vertices])
    return Solid(kind, [0, 0, 0], v, ConvexHull(v))


def random_pose(rng, offset=(0.45, 0.0, 0.0), spread=0.3):
    R = Rotation.random(random_state=int(rng.integers(1 << 31))).as_matrix()
    p = rng.uniform(-spread, spread, 3) + np.asarray(offset)
    return np.ascontiguousarray(R), p


def support_value(s, R, p, u):
    """h(u) = max over the placed shape of u . x, for directions u (k x 3); numpy, vectorised."""
    u = np.atleast_2d(u)
    base = u @ p
    ul = u @ R                      # rows: R^T u
    if s.kind == S.SPHERE:
        return base + s.size[0] * np.linalg.norm(u, axis=1)
    if s.kind == S.BOX:
        return base + np.abs(ul) @ s.size
    if s.kind == S.CAPSULE:
        return base + s.size[1] * np.abs(ul[:, 2]) + s.size[0] * np.linalg.norm(u, axis=1)
    if s.kind == S.CYLINDER:
        return base + s.size[1] * np.abs(ul[:, 2]) + s.size[0] * np.hypot(ul[:, 0], ul[:, 1])
    return np.max(ul @ s.verts.T, axis=1) + base


def sdf(s, R, p, x):
    """Signed distance of world point x to the placed shape's surface (< 0 inside)."""
    q = R.T @ (np.asarray(x) - p)
    if s.kind == S.SPHERE:
        return np.linalg.norm(q) - s.size[0]
    if s.kind == S.BOX:
        d = np.abs(q) - s.size
        return np.linalg.norm(np.maximum(d, 0.0)) + min(d.max(), 0.0)
    if s.kind == S.CAPSULE:
        z = np.clip(q[2], -s.size[1], s.size[1])
        return np.linalg.norm(q - [0, 0, z]) - s.size[0]
    if s.kind == S.CYLINDER:
        d = np.array([np.hypot(q[0], q[1]) - s.size[0], abs(q[2]) - s.size[1]])
        return np.linalg.norm(np.maximum(d, 0.0)) + min(d.max(), 0.0)
    eq = s.hull.equations           # rows (normal, offset): normal . x + offset <= 0 inside
    return float(np.max(eq[:, :3] @ q + eq[:, 3]))


def gap(a, RA, pA, b, RB, pB, u):
    """h_A(u) + h_B(-u) for unit directions u (k x 3)."""
    return support_value(a, RA, pA, u) + support_value(b, RB, pB, -np.atleast_2d(u))


def fibonacci_sphere(k):
    i = np.arange(k) + 0.5
    phi = np.arccos(1 - 2 * i / k)
    th = np.pi * (1 + 5 ** 0.5) * i
    return np.stack([np.cos(th) * np.sin(phi), np.sin(th) * np.sin(phi), np.cos(phi)], axis=1)


_GRID = fibonacci_sphere(40000)


def _unit(x):
    return x / np.linalg.norm(x)


def _support_one(s, R, p):
    """u -> h(u) for one direction (three floats): support_value's definitions in plain floats, for
    Nelder-Mead's thousands of single evaluations (numpy's per-call overhead made each 50-80 us)."""
    (r00, r01, r02), (r10, r11, r12), (r20, r21, r22) = R.tolist()
    px, py, pz = (float(c) for c in p)
    s0, s1, s2 = (float(c) for c in s.size)
    kind = s.kind
    verts = [tuple(v) for v in s.verts.tolist()]

    def h(ux, uy, uz):
        base = ux * px + uy * py + uz * pz
        lx = r00 * ux + r10 * uy + r20 * uz         # R^T u
        ly = r01 * ux + r11 * uy + r21 * uz
        lz = r02 * ux + r12 * uy + r22 * uz
        if kind == S.SPHERE:
            return base + s0 * math.sqrt(ux * ux + uy * uy + uz * uz)
        if kind == S.BOX:
            return base + abs(lx) * s0 + abs(ly) * s1 + abs(lz) * s2
        if kind == S.CAPSULE:
            return base + s1 * abs(lz) + s0 * math.sqrt(ux * ux + uy * uy + uz * uz)
        if kind == S.CYLINDER:
            return base + s1 * abs(lz) + s0 * math.hypot(lx, ly)
        return base + max(lx * vx + ly * vy + lz * vz for vx, vy, vz in verts)
    return h


def _gap_one(a, RA, pA, b, RB, pB):
    """x -> h_A(u) + h_B(-u) at u = x / |x| (gap for one direction, in plain floats)."""
    ha, hb = _support_one(a, RA, pA), _support_one(b, RB, pB)

    def g(x):
        x0, x1, x2 = float(x[0]), float(x[1]), float(x[2])
        n = math.sqrt(x0 * x0 + x1 * x1 + x2 * x2)
        ux, uy, uz = x0 / n, x1 / n, x2 / n
        return ha(ux, uy, uz) + hb(-ux, -uy, -uz)
    return g


def reference_signed_distance(a, RA, pA, b, RB, pB, starts=()):
    """-min_u (h_A(u) + h_B(-u)): a dense grid of directions, then Nelder-Mead polishing from the
    three best grid points and any extra start directions (an unconstrained 3-vector, normalised)."""
    g = gap(a, RA, pA, b, RB, pB, _GRID)
    best_dirs = [_GRID[i] for i in np.argsort(g)[:3]] + [np.asarray(s, float) for s in starts]
    best = np.inf
    best_u = None
    one = _gap_one(a, RA, pA, b, RB, pB)
    for u0 in best_dirs:
        r = minimize(one, u0, method="Nelder-Mead",
                     options={"xatol": 1e-13, "fatol": 1e-15, "maxiter": 4000, "maxfev": 8000})
        if r.fun < best:
            best = r.fun
            best_u = _unit(r.x)
    return -best, best_u


def coal_distance(a, RA, pA, b, RB, pB, tol=1e-13, epa_tol=1e-13):
    """coal's signed distance (d, point on A, point on B, normal A -> B)."""
    req = coal.DistanceRequest()
    req.enable_signed_distance = True
    req.gjk_tolerance = tol
    req.epa_tolerance = epa_tol
    req.gjk_max_iterations = 1000
    req.epa_max_iterations = 1000
    res = coal.DistanceResult()
    d = coal.distance(a.coal, coal.Transform3s(RA, pA), b.coal, coal.Transform3s(RB, pB), req, res)
    return d, np.array(res.getNearestPoint1()), np.array(res.getNearestPoint2()), np.array(res.normal)
