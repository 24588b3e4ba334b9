"""Collision shapes as plain arrays, their support maps and bounding boxes (compiled).

A shape is (kind, size, verts): ``kind`` one of the ids below, ``size`` float64[3], ``verts`` a float64
(n, 3) array of hull vertices in the shape frame (an empty (0, 3) array for the primitives).

    SPHERE    size = (r, 0, 0)
    BOX       size = (hx, hy, hz)      half side lengths
    CAPSULE   size = (r, hl, 0)        segment from -hl to +hl along the shape's z axis, radius r
    CYLINDER  size = (r, hl, 0)        axis z, caps at z = +-hl
    CONVEX    size unused; verts       the convex hull of the vertices

A pose is (R, p): R float64[3, 3] the rotation world <- shape, p float64[3] the origin in the world.

GJK works on a *core* and a radius: a sphere is its centre swept by r, a capsule its segment swept by
r, the other shapes are their own core with radius 0. Distances between cores are exact for polytopes
and the radius is added analytically (no rounding of curved surfaces by the iteration).
"""
from __future__ import annotations

import numpy as np
from numba import njit

SPHERE, BOX, CAPSULE, CYLINDER, CONVEX = 0, 1, 2, 3, 4
KIND_NAMES = ("sphere", "box", "capsule", "cylinder", "convex")


@njit(cache=True)
def dot3(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@njit(cache=True)
def cross3(a, b, out):
    x = a[1] * b[2] - a[2] * b[1]
    y = a[2] * b[0] - a[0] * b[2]
    z = a[0] * b[1] - a[1] * b[0]
    out[0] = x
    out[1] = y
    out[2] = z


@njit(cache=True)
def rot_t_times(R, v, out):
    """out = R^T v (a world direction into the shape frame)."""
    x = R[0, 0] * v[0] + R[1, 0] * v[1] + R[2, 0] * v[2]
    y = R[0, 1] * v[0] + R[1, 1] * v[1] + R[2, 1] * v[2]
    z = R[0, 2] * v[0] + R[1, 2] * v[1] + R[2, 2] * v[2]
    out[0] = x
    out[1] = y
    out[2] = z


@njit(cache=True)
def pose_point(R, p, x, out):
    """out = R x + p (a shape-frame point into the world)."""
    a = R[0, 0] * x[0] + R[0, 1] * x[1] + R[0, 2] * x[2] + p[0]
    b = R[1, 0] * x[0] + R[1, 1] * x[1] + R[1, 2] * x[2] + p[1]
    c = R[2, 0] * x[0] + R[2, 1] * x[1] + R[2, 2] * x[2] + p[2]
    out[0] = a
    out[1] = b
    out[2] = c


@njit(cache=True)
def _sgn(x):
    return 1.0 if x >= 0.0 else -1.0


@njit(cache=True)
def core_radius(kind, size):
    """The radius swept around the GJK core: r for spheres and capsules, 0 otherwise."""
    if kind == SPHERE or kind == CAPSULE:
        return size[0]
    return 0.0


@njit(cache=True)
def core_support_local(kind, size, verts, d, out):
    """out = argmax_{x in core} d . x, in the shape frame (d need not be unit)."""
    if kind == SPHERE:
        out[0] = 0.0
        out[1] = 0.0
        out[2] = 0.0
    elif kind == CAPSULE:
        out[0] = 0.0
        out[1] = 0.0
        out[2] = _sgn(d[2]) * size[1]
    elif kind == BOX:
        out[0] = _sgn(d[0]) * size[0]
        out[1] = _sgn(d[1]) * size[1]
        out[2] = _sgn(d[2]) * size[2]
    elif kind == CYLINDER:
        rho = np.sqrt(d[0] * d[0] + d[1] * d[1])
        if rho > 0.0:
            out[0] = size[0] * d[0] / rho
            out[1] = size[0] * d[1] / rho
        else:
            out[0] = size[0]
            out[1] = 0.0
        out[2] = _sgn(d[2]) * size[1]
    else:
        best = -np.inf
        ib = 0
        for i in range(verts.shape[0]):
            s = verts[i, 0] * d[0] + verts[i, 1] * d[1] + verts[i, 2] * d[2]
            if s > best:
                best = s
                ib = i
        out[0] = verts[ib, 0]
        out[1] = verts[ib, 1]
        out[2] = verts[ib, 2]


@njit(cache=True)
def core_support(kind, size, verts, R, p, d_world, dl, out):
    """out = the core's support point in world direction d_world (dl: a 3-vector of scratch)."""
    rot_t_times(R, d_world, dl)
    core_support_local(kind, size, verts, dl, out)
    pose_point(R, p, out, out)


@njit(cache=True)
def support(kind, size, verts, R, p, d_world, dl, out):
    """The full shape's support point (core support plus radius along the unit direction)."""
    core_support(kind, size, verts, R, p, d_world, dl, out)
    r = core_radius(kind, size)
    if r > 0.0:
        nd = np.sqrt(dot3(d_world, d_world))
        if nd > 0.0:
            for k in range(3):
                out[k] += r * d_world[k] / nd


@njit(cache=True)
def aabb(kind, size, verts, R, p, out):
    """out[0:3] = lower corner, out[3:6] = upper corner of the shape's world bounding box."""
    e = np.zeros(3)
    if kind == CONVEX:
        for k in range(3):
            out[k] = np.inf
            out[3 + k] = -np.inf
        for i in range(verts.shape[0]):
            for k in range(3):
                x = R[k, 0] * verts[i, 0] + R[k, 1] * verts[i, 1] + R[k, 2] * verts[i, 2] + p[k]
                out[k] = min(out[k], x)
                out[3 + k] = max(out[3 + k], x)
        return
    for k in range(3):
        if kind == SPHERE:
            e[k] = size[0]
        elif kind == BOX:
            e[k] = abs(R[k, 0]) * size[0] + abs(R[k, 1]) * size[1] + abs(R[k, 2]) * size[2]
        elif kind == CAPSULE:
            e[k] = abs(R[k, 2]) * size[1] + size[0]
        else:  # cylinder: the disc's extent sqrt(1 - a_k^2) r plus the axis' |a_k| hl
            a = R[k, 2]
            e[k] = np.sqrt(max(0.0, 1.0 - a * a)) * size[0] + abs(a) * size[1]
        out[k] = p[k] - e[k]
        out[3 + k] = p[k] + e[k]
