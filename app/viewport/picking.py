"""Which body is under the mouse: a ray against the drawn shapes (exact for boxes, spheres,
cylinders and capsules, triangles for meshes, after a bounding-sphere cull). Pure numpy."""
from __future__ import annotations

import numpy as np


def _ray_box(o, d, half):
    inv = np.where(np.abs(d) > 1e-15, 1.0 / np.where(np.abs(d) > 1e-15, d, 1.0), np.inf)
    t1 = (-half - o) * inv
    t2 = (half - o) * inv
    # a ray parallel to a slab: inside it or never
    par = np.abs(d) <= 1e-15
    if np.any(par & (np.abs(o) > half)):
        return None
    t1 = np.where(par, -np.inf, t1)
    t2 = np.where(par, np.inf, t2)
    tmin = np.max(np.minimum(t1, t2))
    tmax = np.min(np.maximum(t1, t2))
    if tmax < max(tmin, 0.0):
        return None
    return tmin if tmin >= 0 else tmax


def _ray_sphere(o, d, r, c=np.zeros(3)):
    oc = o - c
    b = oc @ d
    cc = oc @ oc - r * r
    disc = b * b - cc          # d is unit
    if disc < 0:
        return None
    s = np.sqrt(disc)
    for t in (-b - s, -b + s):
        if t >= 0:
            return t
    return None


def _ray_cylinder(o, d, r, h, caps=True):
    """Cylinder along z, |z| <= h."""
    best = None
    a = d[0] ** 2 + d[1] ** 2
    if a > 1e-15:
        b = o[0] * d[0] + o[1] * d[1]
        c = o[0] ** 2 + o[1] ** 2 - r * r
        disc = b * b - a * c
        if disc >= 0:
            s = np.sqrt(disc)
            for t in ((-b - s) / a, (-b + s) / a):
                if t >= 0 and abs(o[2] + t * d[2]) <= h:
                    best = t if best is None else min(best, t)
                    break
    if caps and abs(d[2]) > 1e-15:
        for z in (-h, h):
            t = (z - o[2]) / d[2]
            if t >= 0:
                p = o + t * d
                if p[0] ** 2 + p[1] ** 2 <= r * r:
                    best = t if best is None else min(best, t)
    return best


def _ray_triangles(o, d, tri):
    """Moller-Trumbore over all triangles (M, 3, 3); nearest t >= 0 or None."""
    e1 = tri[:, 1] - tri[:, 0]
    e2 = tri[:, 2] - tri[:, 0]
    p = np.cross(d, e2)
    det = np.einsum("ij,ij->i", e1, p)
    ok = np.abs(det) > 1e-12
    inv = np.where(ok, 1.0 / np.where(ok, det, 1.0), 0.0)
    s = o - tri[:, 0]
    u = np.einsum("ij,ij->i", s, p) * inv
    qv = np.cross(s, e1)
    v = (qv @ d) * inv
    t = np.einsum("ij,ij->i", e2, qv) * inv
    hit = ok & (u >= 0) & (v >= 0) & (u + v <= 1) & (t >= 0)
    if not hit.any():
        return None
    return float(t[hit].min())


def ray_shape(o, d, shape):
    """Distance along the unit ray (o, d), given in the shape's own frame, or None."""
    k = shape.kind
    if k == "box" or k == "placeholder" or (k == "mesh" and (shape.vertices is None or shape.faces is None)):
        size = shape.size if np.any(shape.size) else np.full(3, 0.05)
        return _ray_box(o, d, 0.5 * np.asarray(size, dtype=float))
    if k == "sphere":
        return _ray_sphere(o, d, shape.radius)
    if k == "cylinder":
        return _ray_cylinder(o, d, shape.radius, 0.5 * shape.length)
    if k == "capsule":
        h = 0.5 * shape.length
        ts = [t for t in (_ray_cylinder(o, d, shape.radius, h, caps=False),
                          _ray_sphere(o, d, shape.radius, np.array([0, 0, h])),
                          _ray_sphere(o, d, shape.radius, np.array([0, 0, -h]))) if t is not None]
        return min(ts) if ts else None
    if k == "mesh":
        V = np.asarray(shape.vertices, dtype=float)
        return _ray_triangles(o, d, V[np.asarray(shape.faces)])
    return None


def bounding_sphere(shape):
    """(centre, radius) in the shape's own frame."""
    k = shape.kind
    if k == "sphere":
        return np.zeros(3), shape.radius
    if k in ("cylinder", "capsule"):
        return np.zeros(3), np.hypot(shape.radius, 0.5 * shape.length) + (shape.radius if k == "capsule" else 0)
    if k == "mesh" and shape.vertices is not None and len(shape.vertices):
        V = np.asarray(shape.vertices, dtype=float)
        c = 0.5 * (V.min(0) + V.max(0))
        return c, float(np.linalg.norm(V - c, axis=1).max())
    size = shape.size if np.any(shape.size) else np.full(3, 0.05)
    return np.zeros(3), 0.5 * float(np.linalg.norm(size))


def pick(shapes, body_poses, origin, direction, skip_ground=True):
    """Nearest hit of the world ray among shapes.

    shapes: engine.multibody.visuals.Shape list; body_poses: list/array of 4x4 world poses indexed by body.
    Returns (shape, body index, world point, distance) or None."""
    d = np.asarray(direction, dtype=float)
    d = d / np.linalg.norm(d)
    o = np.asarray(origin, dtype=float)
    best = None
    for s in shapes:
        if skip_ground and s.body == 0:
            continue
        T = body_poses[s.body] @ s.placement
        R, p = T[:3, :3], T[:3, 3]
        c, r = bounding_sphere(s)
        cw = R @ c + p
        oc = cw - o
        tc = oc @ d
        if oc @ oc - tc * tc > r * r or tc < -r:
            continue
        ol = R.T @ (o - p)
        dl = R.T @ d
        t = ray_shape(ol, dl, s)
        if t is not None and (best is None or t < best[3]):
            best = (s, s.body, o + t * d, t)
    return best
