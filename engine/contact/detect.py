"""Contact detection of the compiled unilateral step: support points of the collision shapes near the
ground (``detect``: the extremes along eight directions of the plane and the three deepest, at most
MAX_POINTS_PER_SHAPE + DEEPEST per shape, ties within TIE_TOL to the points the last step kept), contacts between bodies (``_pairs``: engine.collision.pairs),
and joint stops near (``limit_candidates``)."""
from __future__ import annotations

import math

import numpy as np

from engine.kernel.layout import njit
from engine.collision.pairs import pair_contacts


CONTACT_MARGIN = 0.01           # m: points nearer than this to the ground are candidate rows
MAX_POINTS_PER_SHAPE = 8        # a shape with more points within the margin keeps its extremes and deepest
TIE_TOL = 1e-6                  # m: support points this close in depth are tied
EXTREME_TILT = 30.0             # an extreme's score along a direction u of the plane: u . x - EXTREME_TILT x its
                                # height (the hull's support point 1/30 rad below the plane: a sole's flat
                                # bottom, not the rim above it; engine.contact.geometry's docstring)
DEEPEST = 3                     # and its this many deepest points (what a domed sole stands on)
SCORE_TIE = (1.0 + EXTREME_TILT) * TIE_TOL   # m: scores this close are tied (TIE_TOL of extent or of height)
RIM_FLAT_COS2 = 0.75            # a cylinder's rim points touch only while its axis is within 30 deg of the normal


# ------------------------------------------------------------------ geometry
@njit(cache=True)
def _tangents(n, t1, t2):
    """t1, t2 spanning the plane of n (engine.Ground.tangents)."""
    if abs(n[0]) < 0.9:
        a0, a1, a2 = 1.0, 0.0, 0.0
    else:
        a0, a1, a2 = 0.0, 1.0, 0.0
    an = a0 * n[0] + a1 * n[1] + a2 * n[2]
    t1[0] = a0 - an * n[0]
    t1[1] = a1 - an * n[1]
    t1[2] = a2 - an * n[2]
    s = math.sqrt(t1[0] * t1[0] + t1[1] * t1[1] + t1[2] * t1[2])
    for i in range(3):
        t1[i] /= s
    t2[0] = n[1] * t1[2] - n[2] * t1[1]
    t2[1] = n[2] * t1[0] - n[0] * t1[2]
    t2[2] = n[0] * t1[1] - n[1] * t1[0]


@njit(cache=True)
def _store(b, x0, x1, x2, d, key, shape, k, cb, cx, cd, ckey, cshape):
    cb[k] = b
    cx[k, 0] = x0
    cx[k, 1] = x1
    cx[k, 2] = x2
    cd[k] = d
    ckey[k] = key
    cshape[k] = shape


@njit(cache=True)
def _extent(cx, cd, i, t1, t2, cs, sn):
    """Point i's score as an extreme along cs t1 + sn t2: its extent less EXTREME_TILT times its height
    (as the Python detection's uv @ (cs, sn) - EXTREME_TILT d)."""
    return ((cx[i, 0] * t1[0] + cx[i, 1] * t1[1] + cx[i, 2] * t1[2]) * cs
            + (cx[i, 0] * t2[0] + cx[i, 1] * t2[1] + cx[i, 2] * t2[2]) * sn - EXTREME_TILT * cd[i])


@njit(cache=True)
def _tie_pick(tied, kept, c):
    """Of the tied points (a mask over c), the first that the last step kept, else the first."""
    first = -1
    for a in range(c):
        if tied[a]:
            if kept[a]:
                return a
            if first < 0:
                first = a
    return first


@njit(cache=True, _nrt=True)
def detect(geo, T, n, height, margin, t1, t2, counts, cb, cx, cd, ckey, cshape, prev, nprev):
    """Candidate ground contacts within `margin` (engine.contact.geometry.ContactGeometry.detect): fills
    (body, world point, signed distance, key, shape) and returns their number. prev[:nprev]: the
    keys the last step kept (a tie goes to them)."""
    (points, pbody, pshape, gbody, gc, gr, grng, sc, sr, sb, ss, dc, da, dr, db, ds, pdisk) = geo
    k = np.int64(0)      # not the literal 0: one compile of _store for every caller
    npts = points.shape[0]
    for g in range(gbody.shape[0]):
        b = gbody[g]
        cn = 0.0
        for i in range(3):
            ci = T[b, 9 + i]
            for j in range(3):
                ci += T[b, 3 * i + j] * gc[g, j]
            cn += ci * n[i]
        if not (cn - height - gr[g] < margin):
            continue
        for p in range(grng[g, 0], grng[g, 1]):
            s = pdisk[p]
            if s >= 0:                    # a rim point: only while its cap lies near flat
                an = 0.0
                for i in range(3):
                    an += (T[b, 3 * i] * da[s, 0] + T[b, 3 * i + 1] * da[s, 1] + T[b, 3 * i + 2] * da[s, 2]) * n[i]
                if an * an < RIM_FLAT_COS2:
                    continue
            x0 = T[b, 9] + T[b, 0] * points[p, 0] + T[b, 1] * points[p, 1] + T[b, 2] * points[p, 2]
            x1 = T[b, 10] + T[b, 3] * points[p, 0] + T[b, 4] * points[p, 1] + T[b, 5] * points[p, 2]
            x2 = T[b, 11] + T[b, 6] * points[p, 0] + T[b, 7] * points[p, 1] + T[b, 8] * points[p, 2]
            d = x0 * n[0] + x1 * n[1] + x2 * n[2] - height
            if d < margin:
                _store(b, x0, x1, x2, d, p, pshape[p], k, cb, cx, cd, ckey, cshape)
                k += 1
    ns = sr.shape[0]
    for s in range(ns):
        b = sb[s]
        c0 = T[b, 9] + T[b, 0] * sc[s, 0] + T[b, 1] * sc[s, 1] + T[b, 2] * sc[s, 2]
        c1 = T[b, 10] + T[b, 3] * sc[s, 0] + T[b, 4] * sc[s, 1] + T[b, 5] * sc[s, 2]
        c2 = T[b, 11] + T[b, 6] * sc[s, 0] + T[b, 7] * sc[s, 1] + T[b, 8] * sc[s, 2]
        x0 = c0 - sr[s] * n[0]
        x1 = c1 - sr[s] * n[1]
        x2 = c2 - sr[s] * n[2]
        d = x0 * n[0] + x1 * n[1] + x2 * n[2] - height
        if d < margin:
            _store(b, x0, x1, x2, d, npts + s, ss[s], k, cb, cx, cd, ckey, cshape)
            k += 1
    for s in range(dr.shape[0]):
        b = db[s]
        c0 = T[b, 9] + T[b, 0] * dc[s, 0] + T[b, 1] * dc[s, 1] + T[b, 2] * dc[s, 2]
        c1 = T[b, 10] + T[b, 3] * dc[s, 0] + T[b, 4] * dc[s, 1] + T[b, 5] * dc[s, 2]
        c2 = T[b, 11] + T[b, 6] * dc[s, 0] + T[b, 7] * dc[s, 1] + T[b, 8] * dc[s, 2]
        a0 = T[b, 0] * da[s, 0] + T[b, 1] * da[s, 1] + T[b, 2] * da[s, 2]
        a1 = T[b, 3] * da[s, 0] + T[b, 4] * da[s, 1] + T[b, 5] * da[s, 2]
        a2 = T[b, 6] * da[s, 0] + T[b, 7] * da[s, 1] + T[b, 8] * da[s, 2]
        an = a0 * n[0] + a1 * n[1] + a2 * n[2]
        u0 = n[0] - an * a0
        u1 = n[1] - an * a1
        u2 = n[2] - an * a2
        un = math.sqrt(u0 * u0 + u1 * u1 + u2 * u2)
        if not un > 1e-6:                 # a cap lying flat: its rim points carry it
            continue
        f = dr[s] / un
        x0 = c0 - f * u0
        x1 = c1 - f * u1
        x2 = c2 - f * u2
        d = x0 * n[0] + x1 * n[1] + x2 * n[2] - height
        if d < margin:
            _store(b, x0, x1, x2, d, npts + ns + s, ds[s], k, cb, cx, cd, ckey, cshape)
            k += 1
    # shapes with too many points near: keep the deepest and the extremes along eight directions
    for s in range(counts.shape[0]):
        counts[s] = 0
    many = False
    for i in range(k):
        counts[cshape[i]] += 1
        if counts[cshape[i]] > MAX_POINTS_PER_SHAPE:
            many = True
    if not many:
        return k
    keep = np.ones(k, dtype=np.bool_)
    for s in range(counts.shape[0]):
        if counts[s] <= MAX_POINTS_PER_SHAPE:
            continue
        idx = np.empty(counts[s], dtype=np.int64)
        c = np.int64(0)      # not the literal 0: _tie_pick compiles once (tests/test_warmup.py)
        for i in range(k):
            if cshape[i] == s:
                idx[c] = i
                c += 1
        # the extremes along eight directions (scored extent - EXTREME_TILT height), then the DEEPEST
        # deepest (one an extreme covers when as deep); ties within SCORE_TIE (depth: TIE_TOL) to a
        # point the last step kept, else to the first
        kept = np.zeros(c, dtype=np.bool_)
        for a in range(c):
            for w in range(nprev):
                if prev[w] == ckey[idx[a]]:
                    kept[a] = True
                    break
        sel = np.zeros(c, dtype=np.bool_)
        tied = np.empty(c, dtype=np.bool_)
        for dirn in range(8):
            ang = dirn * np.pi / 4
            cs = math.cos(ang)
            sn = math.sin(ang)
            bval = -np.inf
            for a in range(c):
                bval = max(bval, _extent(cx, cd, idx[a], t1, t2, cs, sn))
            for a in range(c):
                tied[a] = _extent(cx, cd, idx[a], t1, t2, cs, sn) >= bval - SCORE_TIE
            sel[_tie_pick(tied, kept, c)] = True
        done = np.zeros(c, dtype=np.bool_)          # the DEEPEST deepest points, each covered by a
        for _ in range(DEEPEST):                    # kept one as deep
            dmin = np.inf
            for a in range(c):
                if not done[a]:
                    dmin = min(dmin, cd[idx[a]])
            if dmin == np.inf:
                break
            first = -1
            for a in range(c):
                tied[a] = not done[a] and cd[idx[a]] <= dmin + TIE_TOL
                if first < 0 and tied[a] and sel[a]:
                    first = a
            if first < 0:
                first = _tie_pick(tied, kept, c)
            sel[first] = True
            done[first] = True
        for a in range(c):
            if not sel[a]:
                keep[idx[a]] = False
    j = np.int64(0)
    for i in range(k):
        if keep[i]:
            if j != i:
                _store(cb[i], cx[i, 0], cx[i, 1], cx[i, 2], cd[i], ckey[i], cshape[i], j, cb, cx, cd, ckey, cshape)
            j += 1
    return j


@njit(cache=True)
def limit_candidates(q, v, h, lim_q, lim_v, lim_lo, lim_hi, margin, li, ls, ld):
    """Limits within margin + 2 h |v|: lower ones first (sign +1), then upper ones (-1)."""
    k = 0
    for j in range(lim_q.shape[0]):
        reach = margin + 2.0 * h * abs(v[lim_v[j]])
        dl = q[lim_q[j]] - lim_lo[j]
        if dl < reach:
            li[k] = lim_v[j]
            ls[k] = 1.0
            ld[k] = dl
            k += 1
    for j in range(lim_q.shape[0]):
        reach = margin + 2.0 * h * abs(v[lim_v[j]])
        du = lim_hi[j] - q[lim_q[j]]
        if du < reach:
            li[k] = lim_v[j]
            ls[k] = -1.0
            ld[k] = du
            k += 1
    return k


@njit(cache=True, _nrt=True)
def _pairs(pgeo, T, margin, k0, pbase, cb, cbb, cx, cn, cd, ckey):
    """engine.collision.pairs.pair_contacts on the pair geometry tuple (rows from k0 on)."""
    (kinds, sizes, verts, vstart, vcount, sbody, sR, sp, skip, order, boxes, pairs, Rw, pw) = pgeo
    return pair_contacts(kinds, sizes, verts, vstart, vcount, sbody, sR, sp, skip, order, boxes, pairs, Rw, pw,
                         T, margin, k0, pbase, cb, cbb, cx, cn, cd, ckey)
