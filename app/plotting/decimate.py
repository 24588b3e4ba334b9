"""Curves reduced for drawing: every sample is kept by the recorder, but a curve on screen needs at
most two points per pixel column. Each bucket keeps its min and max (peaks survive), the newest
sample stays itself."""
from __future__ import annotations

import numpy as np

MAX_POINTS = 500     # buckets per curve on screen (each a min/max pair)


def decimate(t, y, max_points=MAX_POINTS):
    """(t, y) reduced to at most 2 max_points points keeping each bucket's min and max (drawn
    at the bucket's first and last time); the newest sample is kept as itself, so a curve ends
    at its latest value. One column of ``decimate_columns``."""
    t2, Y2 = decimate_columns(t, np.asarray(y).reshape(-1, 1), max_points)
    return t2, Y2[:, 0]


def decimate_columns(t, Y, max_points=MAX_POINTS):
    """Every column of Y (n x k) reduced at once, with the same buckets for all columns (one
    reduceat per bound over the block): each bucket's min and max (NaN only when the whole bucket
    is), drawn at its first and last time, max first in a falling bucket (a monotonic stretch
    stays one stroke, no sawtooth), and the newest sample as itself."""
    n = len(t)
    if n <= 2 * max_points:
        return t, Y
    k = int(np.ceil((n - 1) / max(1, max_points - 1)))
    starts = np.arange(0, n - 1, k)
    ends = np.minimum(starts + k, n - 1) - 1
    lo = np.fmin.reduceat(Y[:n - 1], starts, axis=0)
    hi = np.fmax.reduceat(Y[:n - 1], starts, axis=0)
    m = len(starts)
    t2 = np.empty(2 * m + 1)
    t2[0:-1:2] = t[starts]
    t2[1:-1:2] = t[ends]
    t2[-1] = t[-1]
    falling = Y[starts] > Y[ends]
    Y2 = np.empty((2 * m + 1, Y.shape[1]))
    Y2[0:-1:2] = np.where(falling, hi, lo)
    Y2[1:-1:2] = np.where(falling, lo, hi)
    Y2[-1] = Y[-1]
    return t2, Y2
