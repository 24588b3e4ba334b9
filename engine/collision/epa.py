"""EPA: the penetration of two overlapping cores from GJK's final simplex (compiled).

The expanding polytope (van den Bergen 2001): start from a tetrahedron in A - B around the origin,
repeatedly push out the face nearest the origin to the support point in its normal direction, until
the support gains less than EPA_TOL; the nearest face then gives the depth and normal, and the
barycentrics of the origin's projection give the witness points. Exact (to rounding) for polytopes,
where the support stops producing new vertices; for curved cores it converges to the tolerance.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from engine.collision.shapes import dot3
from engine.collision.gjk import _support_pair, EPA_MAX_VERTS, EPA_MAX_FACES, EPA_TOL


@njit(cache=True)
def _tri_normal(V, a, b, c, out):
    ux, uy, uz = V[b, 0] - V[a, 0], V[b, 1] - V[a, 1], V[b, 2] - V[a, 2]
    wx, wy, wz = V[c, 0] - V[a, 0], V[c, 1] - V[a, 1], V[c, 2] - V[a, 2]
    out[0] = uy * wz - uz * wy
    out[1] = uz * wx - ux * wz
    out[2] = ux * wy - uy * wx
    return np.sqrt(out[0] * out[0] + out[1] * out[1] + out[2] * out[2])


@njit(cache=True)
def _blow_up(kA, sA, vA, RA, pA, kB, sB, vB, RB, pB, V, VA, VB, n, tmp, dl):
    """Grow a degenerate GJK simplex (1-3 vertices with the origin on it) to a tetrahedron by
    supports in directions that leave its span. Returns the vertex count reached."""
    d = np.empty(3)
    nrm = np.empty(3)
    scale = 1e-9 * (1.0 + np.sqrt(dot3(V[0], V[0])))
    for trial in range(64):
        if n >= 4:
            break
        if n == 1:
            ax = trial % 6
            d[:] = 0.0
            d[ax // 2] = 1.0 if ax % 2 == 0 else -1.0
        elif n == 2:
            e = V[1] - V[0]
            # a direction perpendicular to the segment, turned by trial * 60 degrees
            ax = np.argmin(np.abs(e))
            u = np.zeros(3)
            u[ax] = 1.0
            p1 = np.cross(e, u)
            p1 /= np.linalg.norm(p1)
            p2 = np.cross(e, p1)
            p2 /= np.linalg.norm(p2)
            ang = trial * np.pi / 3.0
            d[:] = np.cos(ang) * p1 + np.sin(ang) * p2
        else:
            _tri_normal(V, np.int64(0), np.int64(1), np.int64(2), nrm)
            sgn = 1.0 if trial % 2 == 0 else -1.0
            d[:] = sgn * nrm
        _support_pair(kA, sA, vA, RA, pA, kB, sB, vB, RB, pB, d, V, VA, VB, np.int64(n), tmp, dl)
        ok = True
        if n == 1:
            e = V[1] - V[0]
            ok = dot3(e, e) > scale * scale
        elif n == 2:
            ok = _tri_normal(V, np.int64(0), np.int64(1), np.int64(2), nrm) > scale * scale
        else:
            _tri_normal(V, np.int64(0), np.int64(1), np.int64(2), nrm)
            ok = abs(dot3(nrm, V[3] - V[0])) > scale * scale * scale
        if ok:
            n += 1
    return n


@njit(cache=True)
def _add_face(V, F, FN, FD, alive, nf, a, b, c, inner):
    """Append face (a, b, c) oriented away from the interior point `inner` (or as wound if inner
    is None-like: inner[0] is nan)."""
    nrm = FN[nf]
    ln = _tri_normal(V, np.int64(a), np.int64(b), np.int64(c), nrm)
    if ln <= 0.0:         # a sliver: kept so the surface stays closed, never nearest nor seen
        F[nf, 0] = a
        F[nf, 1] = b
        F[nf, 2] = c
        nrm[0] = 0.0
        nrm[1] = 0.0
        nrm[2] = 0.0
        FD[nf] = np.inf
        alive[nf] = True
        return nf + 1
    for k in range(3):
        nrm[k] /= ln
    if not np.isnan(inner[0]):
        if nrm[0] * (V[a, 0] - inner[0]) + nrm[1] * (V[a, 1] - inner[1]) + nrm[2] * (V[a, 2] - inner[2]) < 0.0:
            b, c = c, b
            for k in range(3):
                nrm[k] = -nrm[k]
    F[nf, 0] = a
    F[nf, 1] = b
    F[nf, 2] = c
    FD[nf] = nrm[0] * V[a, 0] + nrm[1] * V[a, 1] + nrm[2] * V[a, 2]
    alive[nf] = True
    return nf + 1


@njit(cache=True)
def _visible(V, F, FN, f, w):
    a = F[f, 0]
    return FN[f, 0] * (V[w, 0] - V[a, 0]) + FN[f, 1] * (V[w, 1] - V[a, 1]) + FN[f, 2] * (V[w, 2] - V[a, 2]) > 0.0


@njit(cache=True)
def _carve(V, F, FN, alive, nf, start, w, stack, edges):
    """Kill the faces vertex w sees that connect to face `start`; collect the horizon edges (each
    as wound in its dead face) into edges, return their count."""
    ne = 0
    alive[start] = False
    stack[0] = start
    top = 1
    while top > 0:
        top -= 1
        f = stack[top]
        for j in range(3):
            e0 = F[f, j]
            e1 = F[f, (j + 1) % 3]
            g = -1
            for h in range(nf):          # the live neighbour across (e0, e1) holds (e1, e0)
                if alive[h] and ((F[h, 0] == e1 and F[h, 1] == e0) or (F[h, 1] == e1 and F[h, 2] == e0)
                                 or (F[h, 2] == e1 and F[h, 0] == e0)):
                    g = h
                    break
            if g >= 0 and _visible(V, F, FN, g, w):
                alive[g] = False
                stack[top] = g
                top += 1
            elif g >= 0:
                edges[ne, 0] = e0
                edges[ne, 1] = e1
                ne += 1
    return ne


@njit(cache=True)
def epa(kA, sA, vA, RA, pA, kB, sB, vB, RB, pB, W, SA, SB, n, out):
    """Penetration of the cores, GJK's simplex W/SA/SB[0:n] enclosing (or touching) the origin.
    Writes out as gjk does (out[0] = -depth). Returns the status (0 converged, 1 limit, 2 failed)."""
    V = np.empty((EPA_MAX_VERTS, 3))
    VA = np.empty((EPA_MAX_VERTS, 3))
    VB = np.empty((EPA_MAX_VERTS, 3))
    F = np.empty((EPA_MAX_FACES, 3), np.int64)
    FN = np.empty((EPA_MAX_FACES, 3))
    FD = np.empty(EPA_MAX_FACES)
    alive = np.zeros(EPA_MAX_FACES, np.bool_)
    edges = np.empty((3 * EPA_MAX_FACES, 2), np.int64)
    stack = np.empty(EPA_MAX_FACES, np.int64)
    tmp = np.empty(3)
    dl = np.empty(3)
    inner = np.empty(3)
    for i in range(n):
        V[i] = W[i]
        VA[i] = SA[i]
        VB[i] = SB[i]
    if n < 4:
        n = _blow_up(kA, sA, vA, RA, pA, kB, sB, vB, RB, pB, V, VA, VB, n, tmp, dl)
        if n < 4:
            return 2
    for k in range(3):
        inner[k] = 0.25 * (V[0, k] + V[1, k] + V[2, k] + V[3, k])
    nf = 0
    nf = _add_face(V, F, FN, FD, alive, np.int64(nf), np.int64(0), np.int64(1), np.int64(2), inner)
    nf = _add_face(V, F, FN, FD, alive, np.int64(nf), np.int64(0), np.int64(3), np.int64(1), inner)
    nf = _add_face(V, F, FN, FD, alive, np.int64(nf), np.int64(0), np.int64(2), np.int64(3), inner)
    nf = _add_face(V, F, FN, FD, alive, np.int64(nf), np.int64(1), np.int64(3), np.int64(2), inner)
    nv = 4
    scale = 0.0
    for i in range(4):
        scale = max(scale, np.sqrt(dot3(V[i], V[i])))
    tol = EPA_TOL * (1.0 + scale)
    inner[0] = np.nan
    status = 1
    best = 0
    while True:
        best = -1
        bd = np.inf
        for f in range(nf):
            if alive[f] and FD[f] < bd:
                bd = FD[f]
                best = f
        if best < 0:
            return 2
        if nv >= EPA_MAX_VERTS or nf + 64 >= EPA_MAX_FACES:
            break
        _support_pair(kA, sA, vA, RA, pA, kB, sB, vB, RB, pB, FN[best], V, VA, VB, np.int64(nv), tmp, dl)
        if dot3(FN[best], V[nv]) - bd <= tol:
            status = 0
            break
        # remove the faces the new vertex sees, flooding from the nearest face through shared edges
        # (a connected region, so the horizon is one loop); the horizon is their unshared edges
        ne = _carve(V, F, FN, alive, np.int64(nf), np.int64(best), np.int64(nv), stack, edges)
        for q in range(ne):
            nf = _add_face(V, F, FN, FD, alive, np.int64(nf), edges[q, 0], edges[q, 1], np.int64(nv), inner)
        nv += 1
        # compact dead faces now and then
        if nf > EPA_MAX_FACES // 2:
            m = 0
            for f in range(nf):
                if alive[f]:
                    F[m] = F[f]
                    FN[m] = FN[f]
                    FD[m] = FD[f]
                    alive[m] = True
                    m += 1
            for f in range(m, nf):
                alive[f] = False
            nf = m
    _face_witness(V, VA, VB, F, FN, FD, np.int64(best), out)
    return status


@njit(cache=True)
def _face_witness(V, VA, VB, F, FN, FD, f, out):
    """Witnesses from the barycentrics of the origin's projection FD n onto face f."""
    a, b, c = F[f, 0], F[f, 1], F[f, 2]
    depth = FD[f]
    qx, qy, qz = depth * FN[f, 0], depth * FN[f, 1], depth * FN[f, 2]
    v0x, v0y, v0z = V[b, 0] - V[a, 0], V[b, 1] - V[a, 1], V[b, 2] - V[a, 2]
    v1x, v1y, v1z = V[c, 0] - V[a, 0], V[c, 1] - V[a, 1], V[c, 2] - V[a, 2]
    v2x, v2y, v2z = qx - V[a, 0], qy - V[a, 1], qz - V[a, 2]
    d00 = v0x * v0x + v0y * v0y + v0z * v0z
    d01 = v0x * v1x + v0y * v1y + v0z * v1z
    d11 = v1x * v1x + v1y * v1y + v1z * v1z
    d20 = v2x * v0x + v2y * v0y + v2z * v0z
    d21 = v2x * v1x + v2y * v1y + v2z * v1z
    den = d00 * d11 - d01 * d01
    lb = 0.0
    lc = 0.0
    if den > 0.0:
        lb = (d11 * d20 - d01 * d21) / den
        lc = (d00 * d21 - d01 * d20) / den
    la = 1.0 - lb - lc
    # the face's normal and distance are EPA's converged quantities; the witness on B is put at
    # pA - depth n (the barycentric one differs by the rounding of a sliver face's plane)
    for k in range(3):
        out[1 + k] = la * VA[a, k] + lb * VA[b, k] + lc * VA[c, k]
        out[7 + k] = FN[f, k]
        out[4 + k] = out[1 + k] - depth * FN[f, k]
    out[0] = -depth
