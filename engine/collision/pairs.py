"""Body-body contact candidates for the contact step (compiled; the Python step and
engine.contact.step both call ``pair_contacts``, so they see the same contacts in the same order).

A model's collision shapes on movable bodies, as plain arrays (``pair_geometry``):
    kinds (ns,), sizes (ns, 3), verts (V, 3), vstart (ns,), vcount (ns,)   the shapes (shapes.py)
    sbody (ns,)              the body each shape is on
    sR (ns, 3, 3), sp (ns, 3)  its placement in that body
    skip (ns, ns)            pairs never tested (same body, adjacent links, SRDF, self-collision off)
    order (ns,)              the broad phase's sort order, kept between calls (its warm start)
    boxes (ns, 6), pairs (P, 2), Rw (ns, 3, 3), pw (ns, 3)   scratch
One step: world poses of the shapes, bounding boxes grown by the margin, sweep and prune, the
candidate pairs sorted (i, j) (so the order does not depend on the sort's warm start), then each
pair's manifold (manifold.pair_manifold, up to 4 points) within the margin.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from engine.collision.broad import shape_boxes, sweep_and_prune_kernel
from engine.collision.manifold import pair_manifold

POINTS_PER_PAIR = 4


@njit(cache=True)
def pair_contacts(kinds, sizes, verts, vstart, vcount, sbody, sR, sp, skip, order, boxes, pairs, Rw, pw,
                  T, margin, k0, key_base, cb, cbb, cx, cn, cd, ckey):
    """Contacts between shapes of different bodies within `margin`, written from row k0 on: body
    of shape i (cb), body of shape j (cbb), the midpoint of the two witnesses (cx), the normal
    from j into i (the direction of the force on cb's body, cn) (i and j swapped when shape i is
    on the ground, body 0: cbb is 0 then, as for a ground contact), the signed distance (cd) and a
    key (key_base + 4 (i ns + j) + r, r the point's place in the manifold). T: body poses, rows
    (R row-major, p). Returns the row count after them."""
    ns = kinds.shape[0]
    k = k0
    if ns < 2:
        return k
    for s in range(ns):
        b = sbody[s]
        for i in range(3):
            for j in range(3):
                acc = 0.0
                for c in range(3):
                    acc += T[b, 3 * i + c] * sR[s, c, j]
                Rw[s, i, j] = acc
            acc = T[b, 9 + i]
            for c in range(3):
                acc += T[b, 3 * i + c] * sp[s, c]
            pw[s, i] = acc
    shape_boxes(kinds, sizes, verts, vstart, vcount, Rw, pw, margin, boxes)
    m = sweep_and_prune_kernel(boxes, order, skip, pairs)
    if m < 0:
        m = -m                      # cannot happen: pairs holds every pair of shapes
        m = min(m, pairs.shape[0])
    # sort the candidate pairs by (i, j) (insertion sort: few pairs)
    for a in range(1, m):
        i0 = pairs[a, 0]
        j0 = pairs[a, 1]
        key = i0 * ns + j0
        c = a - 1
        while c >= 0 and pairs[c, 0] * ns + pairs[c, 1] > key:
            pairs[c + 1, 0] = pairs[c, 0]
            pairs[c + 1, 1] = pairs[c, 1]
            c -= 1
        pairs[c + 1, 0] = i0
        pairs[c + 1, 1] = j0
    pts = np.empty((POINTS_PER_PAIR, 6))
    depth = np.empty(POINTS_PER_PAIR)
    normal = np.empty(3)
    for q in range(m):
        i = pairs[q, 0]
        j = pairs[q, 1]
        cnt = pair_manifold(kinds[i], sizes[i], verts[vstart[i]:vstart[i] + vcount[i]], Rw[i], pw[i],
                            kinds[j], sizes[j], verts[vstart[j]:vstart[j] + vcount[j]], Rw[j], pw[j],
                            margin, pts, depth, normal)
        # the force acts on cb's body along cn: on i's body against the normal from i to j, or, when
        # shape i is on the ground (body 0), on j's body along it
        flip = sbody[i] == 0
        for r in range(cnt):
            if -depth[r] > margin or k >= cb.shape[0]:
                continue
            cb[k] = sbody[j] if flip else sbody[i]
            cbb[k] = sbody[i] if flip else sbody[j]
            for c in range(3):
                cx[k, c] = 0.5 * (pts[r, c] + pts[r, 3 + c])
                cn[k, c] = normal[c] if flip else -normal[c]
            cd[k] = -depth[r]
            ckey[k] = key_base + POINTS_PER_PAIR * (i * ns + j) + r
            k += 1
    return k
