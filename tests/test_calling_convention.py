"""The kernels' calling convention lives in one module (engine/kernel/layout.py): record layouts, the numba
types of the arguments, the status codes and the entry-point decorator. No other engine module
defines an argument type or a status code of its own, and a status is decoded by name."""
import os
import re

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENGINE = os.path.join(ROOT, "engine")


def _sources():
    for d, _, files in os.walk(ENGINE):
        for f in files:
            if f.endswith(".py") and f != "layout.py":
                p = os.path.join(d, f)
                yield os.path.relpath(p, ROOT), open(p).read()


def test_no_module_but_layout_defines_argument_types_or_status_codes():
    from engine.kernel import layout
    codes = {k for k, v in vars(layout).items() if k.isupper() and isinstance(v, int) and v >= 1000}
    assert {"DIVERGED", "PYTHON_STEP", "UNILATERAL_STEP", "COINCIDENT", "RANK_DEFICIENT", "SINGULAR"} <= codes
    bad = []
    for path, text in _sources():
        for m in re.finditer(r"^(\w+_T) = types\.", text, re.M):
            bad.append(f"{path}: argument type {m.group(1)}")
        for m in re.finditer(r"^([A-Z_]+) = (\d+)\b", text, re.M):
            if m.group(1) in codes or int(m.group(2)) >= 1000:
                bad.append(f"{path}: status code {m.group(1)} = {m.group(2)}")
        for m in re.finditer(r"(?:return|==) (\d\d)\b", text):
            bad.append(f"{path}: bare status {m.group(1)}")
    assert not bad, bad


def test_argument_statuses_decode_by_name():
    from engine.kernel.layout import (ARG, BAD_LENGTH, NOT_FINITE, SPLIT_JOINT, DIVERGED, OVERFLOW,
                                      argument_status, argument_fault)
    assert argument_fault(argument_status(3, SPLIT_JOINT)) == (3, SPLIT_JOINT)
    assert argument_fault(argument_status(1, BAD_LENGTH)) == (1, BAD_LENGTH)
    assert argument_fault(ARG * 5 + NOT_FINITE) == (5, NOT_FINITE)
    assert argument_fault(DIVERGED) is None and argument_fault(OVERFLOW) is None


def test_hybrid_kernel_statuses_name_the_argument():
    import engine
    from engine.catalog import load_model, initial_state
    m = load_model("double_pendulum")
    q, v = initial_state(m)
    z = np.zeros(m.nv)
    with pytest.raises(engine.InputError, match="prescribed: expected"):
        engine.hybrid_dynamics(m, q, v, np.zeros(m.nv + 1, dtype=bool), z, z)
    with pytest.raises(engine.InputError, match="a: holds NaN"):
        engine.hybrid_dynamics(m, q, v, np.ones(m.nv, dtype=bool), np.full(m.nv, np.nan), z)
    with pytest.raises(engine.InputError, match="tau: expected"):
        engine.hybrid_dynamics(m, q, v, np.ones(m.nv, dtype=bool), z, z[:-1])


def test_an_unexpected_status_is_not_reported_as_bad_input():
    from engine.algorithms.api import _raise
    from engine.catalog import load_model
    from engine.kernel.layout import DIVERGED
    m = load_model("double_pendulum")
    with pytest.raises(RuntimeError, match="status 1000"):
        _raise(m, DIVERGED, ("q",), (np.zeros(m.nq),), "forward_dynamics")
