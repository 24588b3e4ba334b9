"""app/widgets/numfmt.py: the one number format of the teaching views and readouts."""
from __future__ import annotations

import math

import numpy as np
import pytest

from app.widgets.numfmt import WIDEST, fmt, fmt_all, scale_of


@pytest.mark.parametrize("x, text", [
    (0.7730, "0.7730"), (12.345, "12.35"), (123.44, "123.4"), (0.01234, "0.01234"), (-9.81, "-9.810"),
    (1234.5, "1.234e3"), (-25948.0, "-25.95e3"), (1.5e6, "1.500e6"), (0.005, "5.000e-3"),
    (-0.0012345, "-1.234e-3"), (4.5e-7, "450.0e-9"), (1e-34, "100.0e-36"), (2.0, "2.000"),
])
def test_significant_digits_and_engineering_exponents(x, text):
    assert fmt(x) == text


def test_rounding_that_carries_into_the_next_decade_moves_the_exponent():
    assert fmt(999.96) == "1.000e3"
    assert fmt(0.0099996) == "0.01000"
    assert fmt(999_960.0) == "1.000e6"
    assert fmt(9.99996e-4) == "1.000e-3"


def test_every_exponent_is_a_multiple_of_three_and_the_text_reads_back():
    rng = np.random.default_rng(3)
    for x in rng.standard_normal(400) * 10.0 ** rng.integers(-20, 20, 400):
        t = fmt(x)
        if "e" in t:
            mant, e = t.split("e")
            assert int(e) % 3 == 0 and 1 <= abs(float(mant)) < 1000, t
        else:
            assert 0.01 <= abs(float(t)) < 1000, t
        assert float(t) == pytest.approx(x, rel=5.1e-4)          # 4 significant digits
        assert len(t) <= len(WIDEST) + (1 if abs(x) < 1e-99 or abs(x) >= 1e100 else 0)


def test_round_off_below_the_rows_scale_is_zero():
    assert fmt(1e-34, scale=9.81) == "0"
    assert fmt(-3e-13, scale=1.0) == "0"
    assert fmt(3e-12, scale=1.0) == "3.000e-12"      # at the threshold: a number
    assert fmt(1e-34) == "100.0e-36"                  # no scale: only an exact zero is 0
    assert fmt(0.0) == fmt(-0.0) == "0"
    assert fmt_all([9.81, 1e-34, -2.5e-16, 0.5]) == ["9.810", "0", "0", "0.5000"]
    assert fmt_all([1e-20, -3e-21]) == ["10.00e-21", "-3.000e-21"]   # their own scale: both real


def test_sign_digits_and_non_finite_values():
    assert fmt(0.5, sign=True) == "+0.5000"
    assert fmt(-0.5, sign=True) == "-0.5000"
    assert fmt(0.0, sign=True) == "0"
    assert fmt(12.345, digits=6) == "12.3450"
    assert fmt(123456.0, digits=2) == "120e3"
    assert fmt(float("nan")) == "nan"
    assert fmt(math.inf) == "inf" and fmt(-math.inf) == "-inf" and fmt(math.inf, sign=True) == "+inf"
    assert fmt(1.0, scale=math.inf) == "1.000"


def test_scale_of_ignores_what_is_not_finite():
    assert scale_of([1.0, -3.0], np.array([[2.0, np.nan], [np.inf, -0.5]])) == 3.0
    assert scale_of([]) == 0.0


def test_step_through_lines_use_the_same_format():
    """The step-through's lines (app/stepthrough.substituted) reformat the numbers the engine wrote
    into them and each result, group by group, without touching subscripts such as T_1."""
    from types import SimpleNamespace
    from app.teach.stepthrough import substituted
    V = np.array([0.0, 0.5, 1e-34, 0.0, 0.0, -2.0])
    step = SimpleNamespace(equations=(
        ("V_2", "Ad_{T_2⁻¹} V_1 + S_2 q̇_2", "Ad_{T_2⁻¹} (0, 0.5, 1e-34 | 0, 0, -2) + [(0, 1, 0 | 0, 0, 0)] · (0.25)", V),
        ("q̈_2", "Ψ_2 (τ_2 − S_2ᵀ β_2)", "(12.3) · (4.56e-05)", np.array(5.6e-4)),
        ("Î_2", "I_2", "", np.diag([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]))))
    text = substituted(step)
    assert "Ad_{T_2⁻¹} (0, 0.500, 0 | 0, 0, -2.00) + [(0, 1.00, 0 | 0, 0, 0)] · (0.250)" in text
    assert "(12.3) · (45.6e-6)" in text
    assert "= (0  0.5000  0 | 0  0  -2.000)" in text            # the result: 4 digits, 1e-34 of 2 is 0
    assert "= 560.0e-6" in text
    assert "Î_2 = I_2 = \n" in text and "6.000" in text and "e-34" not in text
