"""The engine's calls never answer wrong silently (reliability items 34-36 and 40, issue 32 item 7):
equation_terms and trace check their vectors and report an overflow; batches name the row and the
argument and keep the other rows of a diverging rollout; ModelBuilder refuses limits the URDF
loader refuses; loaders name what they leave out in one warning per file and refuse a file of the
wrong format. One test per item; each asserts the error type and that the message names the
argument, row or file."""
from __future__ import annotations

import math
import os
import warnings

import numpy as np
import pytest

import engine
from engine.catalog import load_model, initial_state

ASSETS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "assets")


@pytest.fixture(scope="module")
def dp():
    return engine.load_urdf(os.path.join(ASSETS, "double_pendulum.urdf"))


@pytest.fixture(scope="module")
def four_bar():
    return load_model("four_bar")


# ------------------------------------------------------------------ equation_terms
@pytest.mark.parametrize("arg, value, words", [
    ("a", [0.1, math.nan], ("a: holds NaN or Inf", "index 1", "joint")),
    ("a", [0.1, 0.2, 0.3], ("a: expected 2, got 3",)),
    ("v", [math.inf, 0.0], ("v: holds NaN or Inf",)),
    ("limit_forces", [0.0, math.nan], ("limit_forces: holds NaN or Inf",)),
    ("limit_forces", [0.0], ("limit_forces: expected 2, got 1",)),
])
def test_equation_terms_names_a_bad_argument(dp, arg, value, words):
    args = dict(q=[0.3, 0.2], v=[0.1, -0.2], a=[0.5, 0.5])
    args[arg] = value
    with pytest.raises(engine.InputError) as ei:
        engine.equation_terms(dp, **args)
    assert ei.value.argument == arg
    for w in words:
        assert w in str(ei.value), str(ei.value)


def test_equation_terms_names_bad_multipliers(four_bar):
    q, v = initial_state(four_bar)
    a = np.zeros(four_bar.nv)
    nrows = engine.constraint_system(four_bar, q, v)[1].shape[0]
    lam = np.zeros(nrows)
    lam[1] = math.nan
    with pytest.raises(engine.InputError, match=r"lam: holds NaN or Inf \(first at index 1\)"):
        engine.equation_terms(four_bar, q, v, a, lam=lam)
    with pytest.raises(engine.InputError, match=f"lam: expected {nrows}"):
        engine.equation_terms(four_bar, q, v, a, lam=np.zeros(nrows + 1))


def test_equation_terms_reports_an_overflow_not_inf(dp):
    with warnings.catch_warnings():
        warnings.simplefilter("error")                # no numpy RuntimeWarning either
        with pytest.raises(engine.NumericalOverflow) as ei:
            engine.equation_terms(dp, [0.3, 0.2], [1e200, 1e200], [0.0, 0.0])
    assert "equation_terms" in str(ei.value) and "max |v| = 1e+200" in str(ei.value)


# ------------------------------------------------------------------ trace
@pytest.mark.parametrize("prescribed", [[False, False], [True, True], [True, False]])
def test_trace_reports_an_overflow_not_nan(dp, prescribed):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(engine.NumericalOverflow) as ei:
            engine.trace(dp, [0.3, 0.2], [1e200, 1e200], prescribed, [0.0, 0.0], [0.0, 0.0])
    assert str(ei.value).startswith("trace:") and "max |v| = 1e+200" in str(ei.value)


@pytest.mark.parametrize("arg, bad", [("a", [math.nan, 0.0]), ("tau", [0.0, math.nan]), ("v", [0.0, math.inf])])
def test_trace_names_a_bad_argument(dp, arg, bad):
    """(a is read where the joint is prescribed, tau where it is torque-driven, as hybrid_dynamics.)"""
    args = dict(q=[0.3, 0.2], v=[0.1, 0.2], prescribed=[True, False], a=[0.0, 0.0], tau=[0.0, 0.0])
    args[arg] = bad
    with pytest.raises(engine.InputError, match=f"{arg}: holds NaN or Inf") as ei:
        engine.trace(dp, **args)
    assert ei.value.argument == arg
    args[arg] = [0.0]
    with pytest.raises(engine.InputError, match=f"{arg}: expected 2, got 1"):
        engine.trace(dp, **args)
