"""Read (never imported) by tests/test_refcount.py: the functions its source check must flag
(views, row) and those it must pass (the rest)."""
import numpy as np

from engine.kernel.layout import njit


@njit(cache=True)
def views(work, n):                      # flagged: a tuple of views, compiled without counting
    a = work[:n]
    b = work[n:]
    return a, b


@njit(cache=True)
def row(table, i):                       # flagged: a view
    return table[i]


@njit(cache=True, inline="always")
def views_inline(work, n):               # passes: compiled into each caller
    return work[:n], work[n:]


@njit(cache=True, _nrt=True)
def fresh(n):                            # passes: counts references
    return np.zeros(n)


@njit(cache=True)
def status(x):                           # passes: scalars
    if x[0] > 0.0:
        return 0
    return 1
