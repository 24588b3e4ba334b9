"""The broad phase: sweep and prune over world bounding boxes, with a pair filter (compiled).

Sort the boxes' lower x bounds (insertion sort, near-linear when the order barely changes from one
step to the next, as a persistent ``BroadPhase`` keeps it), sweep along x keeping the boxes whose x
interval is still open, and report a pair when its y and z intervals overlap too and the filter
allows it. The filter is a symmetric boolean matrix `skip` (adjacent links, SRDF
``<disable_collisions>``, bodies of one rigid group).
"""
from __future__ import annotations

import numpy as np
from numba import njit

from engine.collision.shapes import aabb as _aabb


@njit(cache=True)
def sort_by_lower_x(boxes, order):
    """Insertion sort of `order` (a permutation of the boxes) by boxes[:, 0]: the previous call's
    order is the warm start."""
    n = order.shape[0]
    for i in range(1, n):
        o = order[i]
        key = boxes[o, 0]
        j = i - 1
        while j >= 0 and boxes[order[j], 0] > key:
            order[j + 1] = order[j]
            j -= 1
        order[j + 1] = o


@njit(cache=True)
def sweep_and_prune_kernel(boxes, order, skip, pairs):
    """Candidate pairs (i < j) of overlapping boxes (rows: lower xyz, upper xyz) not in `skip`,
    written to pairs; returns their count, or -count when `pairs` was too small (the first
    len(pairs) are written). Touching boxes (equal bounds) count as overlapping."""
    sort_by_lower_x(boxes, order)
    n = order.shape[0]
    cap = pairs.shape[0]
    m = 0
    full = False
    for a in range(n):
        i = order[a]
        hi = boxes[i, 3]
        for b in range(a + 1, n):
            j = order[b]
            if boxes[j, 0] > hi:
                break
            if (boxes[j, 1] > boxes[i, 4] or boxes[i, 1] > boxes[j, 4] or
                    boxes[j, 2] > boxes[i, 5] or boxes[i, 2] > boxes[j, 5]):
                continue
            if skip[i, j]:
                continue
            if m < cap:
                pairs[m, 0] = min(i, j)
                pairs[m, 1] = max(i, j)
            else:
                full = True
            m += 1
    return -m if full else m


@njit(cache=True)
def shape_boxes(kinds, sizes, verts, vstart, vcount, R, p, margin, boxes):
    """World bounding boxes of N shapes (shape i's hull vertices are verts[vstart[i]:+vcount[i]]),
    grown by margin on every side."""
    out = np.empty(6)
    for i in range(kinds.shape[0]):
        _aabb(kinds[i], sizes[i], verts[vstart[i]:vstart[i] + vcount[i]], R[i], p[i], out)
        for k in range(3):
            boxes[i, k] = out[k] - margin
            boxes[i, 3 + k] = out[3 + k] + margin


class PairFilter:
    """Which of N bodies never collide: a symmetric boolean matrix, built from pairs of indices
    or of names."""

    def __init__(self, n, names=None):
        if int(n) < 0:
            raise ValueError(f"PairFilter: the body count must be >= 0, got {n}")
        self.n = int(n)
        self.names = list(names) if names is not None else None
        if self.names is not None and len(self.names) != self.n:
            raise ValueError(f"PairFilter: {len(self.names)} names for {self.n} bodies")
        self.skip = np.zeros((self.n, self.n), np.bool_)

    def _index(self, x, where):
        if isinstance(x, str):
            if self.names is None or x not in self.names:
                raise ValueError(f"PairFilter.{where}: no body named {x!r}")
            return self.names.index(x)
        i = int(x)
        if not 0 <= i < self.n:
            raise ValueError(f"PairFilter.{where}: body index {i} is outside 0..{self.n - 1}")
        return i

    def disable(self, a, b):
        i, j = self._index(a, "disable"), self._index(b, "disable")
        self.skip[i, j] = self.skip[j, i] = True

    def enable(self, a, b):
        i, j = self._index(a, "enable"), self._index(b, "enable")
        self.skip[i, j] = self.skip[j, i] = False

    def disable_pairs(self, pairs, missing="raise"):
        """Disable each (a, b); names not among the bodies raise, or are skipped with missing='skip'
        (an SRDF lists links that carry no collision shape)."""
        for a, b in pairs:
            try:
                self.disable(a, b)
            except ValueError:
                if missing != "skip":
                    raise

    def disable_adjacent(self, parent):
        """Disable every body against its parent (parent[i] < 0: no parent)."""
        for i, pi in enumerate(parent):
            if pi >= 0:
                self.disable(i, pi)


def sweep_and_prune(lower, upper, skip=None):
    """Candidate pairs (i, j), i < j, of the boxes [lower[i], upper[i]] that overlap and that
    `skip` (an N x N boolean matrix or a PairFilter) does not exclude; sorted."""
    lo = np.asarray(lower, dtype=np.float64)
    hi = np.asarray(upper, dtype=np.float64)
    if lo.ndim != 2 or lo.shape[1] != 3 or hi.shape != lo.shape:
        raise ValueError(f"sweep_and_prune: lower and upper must be N x 3, got {lo.shape} and {hi.shape}")
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
        raise ValueError("sweep_and_prune: bounds must be finite")
    bad = np.nonzero(np.any(lo > hi, axis=1))[0]
    if len(bad):
        raise ValueError(f"sweep_and_prune: box {bad[0]} has lower > upper")
    n = lo.shape[0]
    mask = _skip_matrix(skip, n)
    boxes = np.ascontiguousarray(np.hstack([lo, hi]))
    order = np.arange(n, dtype=np.int64)
    pairs = np.empty((max(16, 4 * n), 2), np.int64)
    while True:
        m = sweep_and_prune_kernel(boxes, order, mask, pairs)
        if m >= 0:
            break
        pairs = np.empty((2 * (-m), 2), np.int64)
    res = pairs[:m]
    return res[np.lexsort((res[:, 1], res[:, 0]))]


def _skip_matrix(skip, n):
    if skip is None:
        return np.zeros((n, n), np.bool_)
    mask = skip.skip if isinstance(skip, PairFilter) else np.asarray(skip, dtype=np.bool_)
    if mask.shape != (n, n):
        raise ValueError(f"sweep_and_prune: the filter is {mask.shape}, expected ({n}, {n})")
    return np.ascontiguousarray(mask | mask.T)


class BroadPhase:
    """A persistent broad phase over N shapes: keeps the sort order between calls (warm start)."""

    def __init__(self, shapes, skip=None, margin=0.0):
        self.shapes = list(shapes)
        n = len(self.shapes)
        self.kinds = np.array([s.kind for s in self.shapes], np.int64)
        self.sizes = np.array([s.size for s in self.shapes], np.float64).reshape(n, 3)
        counts = [len(s.verts) for s in self.shapes]
        self.vcount = np.array(counts, np.int64)
        self.vstart = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64) if n else np.zeros(0, np.int64)
        self.verts = (np.ascontiguousarray(np.vstack([s.verts for s in self.shapes]))
                      if n else np.zeros((0, 3)))
        self.skip = _skip_matrix(skip, n)
        m = float(margin)
        if not np.isfinite(m) or m < 0.0:
            raise ValueError(f"BroadPhase: margin must be finite and >= 0, got {margin!r}")
        self.margin = m
        self.order = np.arange(n, dtype=np.int64)
        self.boxes = np.zeros((n, 6))
        self.pairs = np.empty((max(16, 4 * n), 2), np.int64)

    def pairs_at(self, R, p):
        """Candidate pairs for the shapes at rotations R (N x 3 x 3) and positions p (N x 3)."""
        n = len(self.shapes)
        R = np.ascontiguousarray(R, dtype=np.float64)
        p = np.ascontiguousarray(p, dtype=np.float64)
        if R.shape != (n, 3, 3) or p.shape != (n, 3):
            raise ValueError(f"BroadPhase.pairs_at: expected R ({n}, 3, 3) and p ({n}, 3), "
                             f"got {R.shape} and {p.shape}")
        shape_boxes(self.kinds, self.sizes, self.verts, self.vstart, self.vcount, R, p, self.margin,
                    self.boxes)
        while True:
            m = sweep_and_prune_kernel(self.boxes, self.order, self.skip, self.pairs)
            if m >= 0:
                return self.pairs[:m]
            self.pairs = np.empty((2 * (-m), 2), np.int64)
