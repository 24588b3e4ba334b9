"""The Python face of the narrow phase: shape records, pose checks and small result objects."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.collision.shapes import SPHERE, BOX, CAPSULE, CYLINDER, CONVEX, KIND_NAMES, aabb as _aabb
from engine.collision.narrow import pair_distance

_NO_VERTS = np.zeros((0, 3))
STATUS = {0: "ok", 1: "iteration limit reached (best estimate)", 2: "degenerate shapes (EPA failed)"}


class Shape:
    """A convex collision shape: kind id, size float64[3] (see shapes.py) and hull vertices."""

    __slots__ = ("kind", "size", "verts")

    def __init__(self, kind, size, verts=None):
        self.kind = int(kind)
        self.size = np.ascontiguousarray(size, dtype=np.float64)
        self.verts = _NO_VERTS if verts is None else verts

    def __repr__(self):
        if self.kind == CONVEX:
            return f"Convex({len(self.verts)} vertices)"
        return f"{KIND_NAMES[self.kind].capitalize()}(size={self.size.tolist()})"


def _positive(name, **values):
    for key, v in values.items():
        v = float(v)
        if not np.isfinite(v) or v <= 0.0:
            raise ValueError(f"{name}: {key} must be finite and > 0, got {v!r}")


def Sphere(radius):
    _positive("Sphere", radius=radius)
    return Shape(SPHERE, (radius, 0.0, 0.0))


def Box(x, y, z):
    """A box of full side lengths x, y, z centred on its frame (URDF's and coal's convention)."""
    _positive("Box", x=x, y=y, z=z)
    return Shape(BOX, (0.5 * x, 0.5 * y, 0.5 * z))


def Capsule(radius, length):
    """The segment of `length` along z (centred) swept by `radius` (coal's convention)."""
    _positive("Capsule", radius=radius, length=length)
    return Shape(CAPSULE, (radius, 0.5 * length, 0.0))


def Cylinder(radius, length):
    """Axis z, full length `length` (URDF's and coal's convention)."""
    _positive("Cylinder", radius=radius, length=length)
    return Shape(CYLINDER, (radius, 0.5 * length, 0.0))


def Convex(vertices):
    """The convex hull of the vertices (n x 3, in the shape frame); interior points do no harm."""
    v = np.ascontiguousarray(vertices, dtype=np.float64)
    if v.ndim != 2 or v.shape[1] != 3 or v.shape[0] < 4:
        raise ValueError(f"Convex: vertices must be an (n >= 4) x 3 array, got shape {v.shape}")
    if not np.all(np.isfinite(v)):
        bad = np.argwhere(~np.isfinite(v))[0]
        raise ValueError(f"Convex: vertex {bad[0]} is not finite: {v[bad[0]].tolist()}")
    c = v - v.mean(axis=0)
    if np.linalg.matrix_rank(c, tol=1e-12 * max(1.0, np.abs(c).max())) < 3:
        raise ValueError("Convex: the vertices are flat (they span no volume)")
    return Shape(CONVEX, (0.0, 0.0, 0.0), v)


def _pose(pose, which):
    """(R, p) from a pair or a 4x4 transform, checked: a rotation (orthonormal, det +1) and finite."""
    if isinstance(pose, np.ndarray) and pose.shape == (4, 4):
        R, p = pose[:3, :3], pose[:3, 3]
    else:
        try:
            R, p = pose
        except (TypeError, ValueError):
            raise ValueError(f"pose of {which}: expected (R, p) or a 4x4 transform, got {pose!r}") from None
    R = np.ascontiguousarray(R, dtype=np.float64)
    p = np.ascontiguousarray(p, dtype=np.float64).reshape(-1)
    if R.shape != (3, 3) or p.shape != (3,):
        raise ValueError(f"pose of {which}: R must be 3x3 and p a 3-vector, got {R.shape} and {p.shape}")
    if not (np.all(np.isfinite(R)) and np.all(np.isfinite(p))):
        raise ValueError(f"pose of {which}: not finite")
    if np.abs(R.T @ R - np.eye(3)).max() > 1e-9 or np.linalg.det(R) < 0.0:
        raise ValueError(f"pose of {which}: R is not a rotation (R^T R != I or det R < 0)")
    return R, p


def _shape(s, which):
    if not isinstance(s, Shape):
        raise TypeError(f"{which}: expected an engine.collision shape (Sphere, Box, ...), got {type(s).__name__}")
    return s


@dataclass(frozen=True)
class Distance:
    """Signed distance (negative: penetration depth), the witness points on A and B (world) and the
    unit normal from A to B, with point_b = point_a + distance * normal."""
    distance: float
    point_a: np.ndarray
    point_b: np.ndarray
    normal: np.ndarray
    status: str = "ok"


def distance(shape_a, pose_a, shape_b, pose_b):
    """Signed distance between two shapes at their poses ((R, p) pairs or 4x4 transforms)."""
    a = _shape(shape_a, "shape_a")
    b = _shape(shape_b, "shape_b")
    RA, pA = _pose(pose_a, "shape_a")
    RB, pB = _pose(pose_b, "shape_b")
    out = np.empty(10)
    st = pair_distance(a.kind, a.size, a.verts, RA, pA, b.kind, b.size, b.verts, RB, pB, out)
    return Distance(float(out[0]), out[1:4].copy(), out[4:7].copy(), out[7:10].copy(), STATUS[int(st)])


def aabb(shape, pose):
    """(lower, upper) corners of the shape's world bounding box."""
    s = _shape(shape, "shape")
    R, p = _pose(pose, "shape")
    out = np.empty(6)
    _aabb(s.kind, s.size, s.verts, R, p, out)
    return out[:3], out[3:]


@dataclass(frozen=True)
class Manifold:
    """Contact points of a pair: points_a, points_b (k x 3, world), depths (k, positive when the
    shapes overlap: -signed distance of each point pair) and the common normal from A to B."""
    points_a: np.ndarray
    points_b: np.ndarray
    depths: np.ndarray
    normal: np.ndarray

    def __len__(self):
        return len(self.depths)


def contacts(shape_a, pose_a, shape_b, pose_b, margin=0.0):
    """The contact manifold: empty when the shapes are farther apart than `margin`."""
    from engine.collision.manifold import pair_manifold
    a = _shape(shape_a, "shape_a")
    b = _shape(shape_b, "shape_b")
    RA, pA = _pose(pose_a, "shape_a")
    RB, pB = _pose(pose_b, "shape_b")
    m = float(margin)
    if not np.isfinite(m) or m < 0.0:
        raise ValueError(f"contacts: margin must be finite and >= 0, got {margin!r}")
    pts = np.empty((4, 6))
    depth = np.empty(4)
    normal = np.empty(3)
    k = pair_manifold(a.kind, a.size, a.verts, RA, pA, b.kind, b.size, b.verts, RB, pB, m, pts, depth,
                      normal)
    return Manifold(pts[:k, 0:3].copy(), pts[:k, 3:6].copy(), depth[:k].copy(), normal)
