"""The narrow phase: signed distance, witness points and normal for any pair of shapes (compiled).

``pair_distance`` picks the closed form where one exists (analytic.py, sat.py) and GJK/EPA on the
cores otherwise (gjk.py, epa.py). Result layout in ``out`` (float64[10]): out[0] the signed distance
(< 0: penetration depth), out[1:4] the witness on A, out[4:7] the witness on B, out[7:10] the unit
normal from A to B; pB = pA + d n. Returns a status: 0 exact or converged, 1 an iteration limit
was reached (the best estimate is in out), 2 EPA failed (degenerate shapes).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from engine.collision.shapes import SPHERE, BOX, CAPSULE, CYLINDER, core_radius
from engine.collision.analytic import (sphere_sphere, sphere_box, sphere_capsule, sphere_cylinder,
                                       capsule_capsule, capsule_ends, segment_box_distance, finish_cores,
                                       add_radii)
from engine.collision.sat import box_box_sat
from engine.collision.gjk import gjk
from engine.collision.epa import epa


@njit(cache=True)
def swap_result(out):
    """The result of (B, A) from that of (A, B)."""
    for k in range(3):
        a = out[1 + k]
        out[1 + k] = out[4 + k]
        out[4 + k] = a
        out[7 + k] = -out[7 + k]


@njit(cache=True)
def gjk_epa(kA, sA, vA, RA, pA, kB, sB, vB, RB, pB, out):
    """GJK between the cores, EPA when they overlap, then the radii."""
    W = np.empty((5, 3))
    SA = np.empty((5, 3))
    SB = np.empty((5, 3))
    n, status = gjk(kA, sA, vA, RA, pA, kB, sB, vB, RB, pB, W, SA, SB, out)
    if n >= 0:
        status = epa(kA, sA, vA, RA, pA, kB, sB, vB, RB, pB, W, SA, SB, n, out)
    add_radii(core_radius(kA, sA), core_radius(kB, sB), out)
    return status


@njit(cache=True)
def capsule_box(sA, RA, pA, sB, RB, pB, out):
    """Capsule A against box B: the segment-box distance in closed form while the segment is
    outside the box, the SAT of the segment (a flat box) when it enters."""
    a = np.empty(3)
    b = np.empty(3)
    ca = np.empty(3)
    cb = np.empty(3)
    capsule_ends(sA, RA, pA, a, b)
    f = segment_box_distance(a, b, sB, RB, pB, ca, cb)
    if f > 0.0:
        finish_cores(ca, cb, sA[0], 0.0, out)
        return 0
    h = np.zeros(3)
    h[2] = sA[1]
    if box_box_sat(h, RA, pA, sB, RB, pB, out) < 0:
        return 2          # cannot happen: the segment touches the box
    add_radii(sA[0], 0.0, out)
    return 0


@njit(cache=True)
def box_box(sA, vA, RA, pA, sB, vB, RB, pB, out):
    """Boxes: the SAT's exact depth when they overlap, GJK (finite on polytopes) when apart."""
    if box_box_sat(sA, RA, pA, sB, RB, pB, out) >= 0:
        return 0
    # np.int64: a module constant is typed Literal[int](1) and compiled gjk_epa (and all it calls) a second
    # time beside the variable kinds of collide's call (tests/test_warmup.py: nothing compiled twice)
    return gjk_epa(np.int64(BOX), sA, vA, RA, pA, np.int64(BOX), sB, vB, RB, pB, out)


@njit(cache=True)
def _ordered(kA, sA, vA, RA, pA, kB, sB, vB, RB, pB, out):
    """Pairs with kA <= kB."""
    if kA == SPHERE:
        if kB == SPHERE:
            sphere_sphere(sA, pA, sB, pB, out)
            return 0
        if kB == BOX:
            sphere_box(sA, pA, sB, RB, pB, out)
            return 0
        if kB == CAPSULE:
            sphere_capsule(sA, pA, sB, RB, pB, out)
            return 0
        if kB == CYLINDER:
            sphere_cylinder(sA, pA, sB, RB, pB, out)
            return 0
    elif kA == BOX:
        if kB == BOX:
            return box_box(sA, vA, RA, pA, sB, vB, RB, pB, out)
        if kB == CAPSULE:
            st = capsule_box(sB, RB, pB, sA, RA, pA, out)
            swap_result(out)
            return st
    elif kA == CAPSULE and kB == CAPSULE:
        capsule_capsule(sA, RA, pA, sB, RB, pB, out)
        return 0
    return gjk_epa(kA, sA, vA, RA, pA, kB, sB, vB, RB, pB, out)


@njit(cache=True)
def pair_distance(kA, sA, vA, RA, pA, kB, sB, vB, RB, pB, out):
    """Signed distance of shape A at (RA, pA) and shape B at (RB, pB); see the module docstring."""
    if kA <= kB:
        return _ordered(kA, sA, vA, RA, pA, kB, sB, vB, RB, pB, out)
    st = _ordered(kB, sB, vB, RB, pB, kA, sA, vA, RA, pA, out)
    swap_result(out)
    return st


@njit(cache=True)
def pairs_distance(kinds, sizes, verts, vstart, vcount, R, p, pairs, out):
    """The narrow phase over the broad phase's candidate pairs: for pair q = (i, j) of N shapes
    (shape i: kinds[i], sizes[i], hull verts[vstart[i]:vstart[i] + vcount[i]], pose R[i], p[i]),
    out[q] = pair_distance of (i, j). Returns how many pairs ended with a non-zero status."""
    bad = 0
    for q in range(pairs.shape[0]):
        i = pairs[q, 0]
        j = pairs[q, 1]
        st = pair_distance(kinds[i], sizes[i], verts[vstart[i]:vstart[i] + vcount[i]], R[i], p[i],
                           kinds[j], sizes[j], verts[vstart[j]:vstart[j] + vcount[j]], R[j], p[j], out[q])
        if st != 0:
            bad += 1
    return bad
