"""Separating-axis test between two boxes, for their penetration (compiled).

The 15 axes of two boxes (3 face normals each, 9 edge-edge cross products; Gottschalk's OBB test):
the smallest overlap is the penetration depth, exactly, since the minimum translation of two
polytopes apart is along a face normal or an edge-edge cross product of theirs. A box may be flat
in some directions (half extent 0): a capsule's segment is the box (0, 0, hl), whose zero-length
edges and faceless directions are skipped.

``box_box_sat`` fills the gjk.py result layout and returns the feature code: 0..2 face i of A,
3..5 face j of B, 6 + 3 i + j edge i of A with edge j of B; -1 when an axis separates the boxes.
"""
from __future__ import annotations

import numpy as np
from numba import njit

EDGE_PARALLEL = 1e-9       # |a x b| below this: the edge pair gives no axis (parallel edges)


@njit(cache=True)
def _overlap(L, hA, RA, hB, RB, dx, dy, dz):
    """(overlap, signed centre offset) of the two boxes' projections on axis L."""
    rA = 0.0
    rB = 0.0
    for i in range(3):
        rA += hA[i] * abs(L[0] * RA[0, i] + L[1] * RA[1, i] + L[2] * RA[2, i])
        rB += hB[i] * abs(L[0] * RB[0, i] + L[1] * RB[1, i] + L[2] * RB[2, i])
    s = L[0] * dx + L[1] * dy + L[2] * dz
    return rA + rB - abs(s), s


@njit(cache=True)
def box_box_sat(hA, RA, pA, hB, RB, pB, out):
    L = np.empty(3)
    best_n = np.empty(3)
    dx, dy, dz = pB[0] - pA[0], pB[1] - pA[1], pB[2] - pA[2]
    scale = 1.0 + hA[0] + hA[1] + hA[2] + hB[0] + hB[1] + hB[2]
    best = np.inf
    code = -1
    # faces of B first, then of A, then edges: on a tie the face wins (a face gives a manifold)
    for c in range(6):
        if c < 3:
            j = c
            for k in range(3):
                L[k] = RB[k, j]
            fc = 3 + j
        else:
            i = c - 3
            if hA[(i + 1) % 3] == 0.0 and hA[(i + 2) % 3] == 0.0:
                continue      # a segment has no face across it
            for k in range(3):
                L[k] = RA[k, i]
            fc = i
        ov, s = _overlap(L, hA, RA, hB, RB, dx, dy, dz)
        if ov < 0.0:
            return -1
        if ov < best:
            best = ov
            code = fc
            sg = 1.0 if s >= 0.0 else -1.0
            for k in range(3):
                best_n[k] = sg * L[k]
    for i in range(3):
        if hA[i] == 0.0:
            continue
        for j in range(3):
            if hB[j] == 0.0:
                continue
            a0, a1, a2 = RA[0, i], RA[1, i], RA[2, i]
            b0, b1, b2 = RB[0, j], RB[1, j], RB[2, j]
            L[0] = a1 * b2 - a2 * b1
            L[1] = a2 * b0 - a0 * b2
            L[2] = a0 * b1 - a1 * b0
            ln = np.sqrt(L[0] * L[0] + L[1] * L[1] + L[2] * L[2])
            if ln < EDGE_PARALLEL:
                continue
            for k in range(3):
                L[k] /= ln
            ov, s = _overlap(L, hA, RA, hB, RB, dx, dy, dz)
            if ov < 0.0:
                return -1
            if ov < best - 1e-12 * scale:
                best = ov
                code = 6 + 3 * i + j
                sg = 1.0 if s >= 0.0 else -1.0
                for k in range(3):
                    best_n[k] = sg * L[k]
    _sat_witness(hA, RA, pA, hB, RB, pB, np.int64(code), best, best_n, out)
    return code


@njit(cache=True)
def _sat_witness(hA, RA, pA, hB, RB, pB, code, depth, n, out):
    """Witness points of the deepest feature pair along n (from A to B)."""
    a = np.empty(3)
    b = np.empty(3)
    if code < 3:          # face of A: B's deepest vertex, and its image on A's face
        for k in range(3):
            b[k] = pB[k]
        for j in range(3):
            sg = -1.0 if (n[0] * RB[0, j] + n[1] * RB[1, j] + n[2] * RB[2, j]) >= 0.0 else 1.0
            for k in range(3):
                b[k] += sg * hB[j] * RB[k, j]
        for k in range(3):
            a[k] = b[k] + depth * n[k]
    elif code < 6:        # face of B: A's deepest vertex
        for k in range(3):
            a[k] = pA[k]
        for i in range(3):
            sg = 1.0 if (n[0] * RA[0, i] + n[1] * RA[1, i] + n[2] * RA[2, i]) >= 0.0 else -1.0
            for k in range(3):
                a[k] += sg * hA[i] * RA[k, i]
        for k in range(3):
            b[k] = a[k] - depth * n[k]
    else:                 # edge i of A against edge j of B: the closest points of the two lines
        i = (code - 6) // 3
        j = (code - 6) % 3
        ca = np.empty(3)
        cb = np.empty(3)
        for k in range(3):
            ca[k] = pA[k]
            cb[k] = pB[k]
        for m in range(3):
            if m != i:
                sg = 1.0 if (n[0] * RA[0, m] + n[1] * RA[1, m] + n[2] * RA[2, m]) >= 0.0 else -1.0
                for k in range(3):
                    ca[k] += sg * hA[m] * RA[k, m]
            if m != j:
                sg = -1.0 if (n[0] * RB[0, m] + n[1] * RB[1, m] + n[2] * RB[2, m]) >= 0.0 else 1.0
                for k in range(3):
                    cb[k] += sg * hB[m] * RB[k, m]
        # lines ca + s u, cb + t w
        u0, u1, u2 = RA[0, i], RA[1, i], RA[2, i]
        w0, w1, w2 = RB[0, j], RB[1, j], RB[2, j]
        r0, r1, r2 = ca[0] - cb[0], ca[1] - cb[1], ca[2] - cb[2]
        bb = u0 * w0 + u1 * w1 + u2 * w2
        c = u0 * r0 + u1 * r1 + u2 * r2
        f = w0 * r0 + w1 * r1 + w2 * r2
        den = 1.0 - bb * bb
        s = (bb * f - c) / den
        t = bb * s + f
        a[0], a[1], a[2] = ca[0] + s * u0, ca[1] + s * u1, ca[2] + s * u2
        b[0], b[1], b[2] = cb[0] + t * w0, cb[1] + t * w1, cb[2] + t * w2
    out[0] = -depth
    for k in range(3):
        out[1 + k] = a[k]
        out[4 + k] = b[k]
        out[7 + k] = n[k]
