"""One number format for every view that prints physics (the Equation view, the Inspector, the joint
panel's readouts, the step-through): a fixed number of significant digits, engineering notation
(the exponent a multiple of 3: ``12.35e-3``, ``1.235e3``) outside [0.01, 1000), plain decimals
with the same significant digits inside it (``0.7730``, ``12.35``, ``123.4``), and a value below
``ZERO_REL`` times its row's scale written ``0`` (round-off such as 1e-34 next to 9.81 is not a
number a class should read).

    fmt(x, scale=None, digits=4, sign=False) -> str
    fmt_all(xs, scale=None, ...) -> list of str, one scale for all (their largest magnitude)
    scale_of(*arrays) -> the largest finite magnitude (the row's scale)
"""
from __future__ import annotations

import math

import numpy as np

DIGITS = 4            # significant digits
ZERO_REL = 1e-12      # |x| < ZERO_REL * scale is written 0
PLAIN = (-2, 2)       # decimal exponents written without an exponent: 0.01 <= |x| < 1000


def scale_of(*arrays):
    """The largest finite magnitude in the arrays (0.0 when there is none)."""
    m = 0.0
    for a in arrays:
        a = np.abs(np.asarray(a, dtype=float).reshape(-1))
        a = a[np.isfinite(a)]
        if a.size:
            m = max(m, float(a.max()))
    return m


def fmt(x, scale=None, digits=DIGITS, sign=False):
    """x as text: `digits` significant digits; exponents that are multiples of 3 outside
    [0.01, 1000); ``0`` for zero and for |x| < ZERO_REL * scale (scale: the magnitude of the row x
    belongs to; None: x's own, so only an exact zero is 0). sign: a '+' before positive numbers."""
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return ("+inf" if sign else "inf") if x > 0 else "-inf"
    ref = abs(x) if scale is None or not math.isfinite(scale) else max(abs(float(scale)), abs(x))
    if x == 0.0 or abs(x) < ZERO_REL * ref:
        return "0"
    digits = max(1, int(digits))
    mant, exp = f"{abs(x):.{digits - 1}e}".split("e")     # rounded first: 999.96 -> 1.000e+03
    d, exp = mant.replace(".", ""), int(exp)
    if PLAIN[0] <= exp <= PLAIN[1]:
        body, e3 = _place(d, exp), 0
    else:
        e3 = 3 * (exp // 3)
        body = _place(d, exp - e3)
    head = "-" if x < 0 else ("+" if sign else "")
    return f"{head}{body}" + (f"e{e3}" if e3 else "")


def _place(d, exp):
    """The digit string d (d[0] d[1] ... = d[0].d[1]... x 10^exp) with its decimal point."""
    if exp < 0:
        return "0." + "0" * (-exp - 1) + d
    whole = exp + 1
    if len(d) <= whole:
        return d + "0" * (whole - len(d))
    return d[:whole] + "." + d[whole:]


def fmt_all(xs, scale=None, digits=DIGITS, sign=False):
    """Every number of xs with one scale: `scale`, or their own largest finite magnitude."""
    xs = np.asarray(xs, dtype=float).reshape(-1)
    s = scale_of(xs) if scale is None else scale
    return [fmt(x, s, digits, sign) for x in xs]


# the widest text fmt writes with DIGITS digits (sizes columns so that no later value is cut)
WIDEST = "-888.8e-18"
