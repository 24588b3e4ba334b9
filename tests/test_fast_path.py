"""The wrappers' fast path (engine.algorithms.api: a kernel's compiled entry point called without
numba's dispatch, after a test of the caller's vectors) takes exactly the vectors numba's dispatch
took and nothing else: every other array (another dtype or byte order, strided, 2-D, 0-d, a subclass,
read-only) gives the answer the contiguous float64 vector gives, or the error it gave, by name."""
from __future__ import annotations

import numpy as np
import pytest

import engine
from conftest import cached_pair


@pytest.fixture(scope="module")
def case():
    return cached_pair(1, min_dof=12)       # a free root, every joint kind, nq != nv


class Sub(np.ndarray):
    pass


def _calls(case):
    link = case.body_names[-1]
    return {
        "mass_matrix": (engine.mass_matrix, ("q",)),
        "body_poses": (engine.body_poses, ("q",)),
        "jacobian": (lambda m, q: engine.jacobian(m, q, link, "world"), ("q",)),
        "body_jacobian": (lambda m, q: engine.body_jacobian(m, q, link), ("q",)),
        "center_of_mass": (engine.center_of_mass, ("q",)),
        "potential_energy": (engine.potential_energy, ("q",)),
        "gravity_forces": (engine.gravity_forces, ("q",)),
        "bias_forces": (engine.bias_forces, ("q", "v")),
        "coriolis_matrix": (engine.coriolis_matrix, ("q", "v")),
        "inverse_dynamics": (engine.inverse_dynamics, ("q", "v", "a")),
        "forward_dynamics": (engine.forward_dynamics, ("q", "v", "tau")),
        "body_velocities": (engine.body_velocities, ("q", "v")),
    }


def _same(got, ref):
    if isinstance(ref, dict):
        assert set(got) == set(ref)
        for k in ref:
            np.testing.assert_array_equal(got[k], ref[k])
    else:
        np.testing.assert_array_equal(got, ref)


def _variants(x):
    """Arrays holding x's numbers that are not a contiguous native float64 ndarray."""
    big = x.astype(">f8")
    strided = np.empty(2 * x.size)
    strided[::2] = x
    ro = x.copy()
    ro.setflags(write=False)
    unaligned = np.frombuffer(b"\0" + x.tobytes(), dtype=np.float64, offset=1)
    return {"big-endian": big, "strided": strided[::2], "read-only": ro, "subclass": x.copy().view(Sub),
            "column": x.reshape(-1, 1).copy(), "row": x.reshape(1, -1).copy(), "unaligned": unaligned,
            "list": x.tolist()}


@pytest.mark.parametrize("fname", list(_calls(cached_pair(1, min_dof=12))))
def test_other_arrays_give_the_same_answer(case, fname):
    fn, names = _calls(case)[fname]
    rng = np.random.default_rng(3)
    m = case.model
    vals = {"q": case.random_q(rng), "v": rng.normal(size=m.nv), "a": rng.normal(size=m.nv), "tau": rng.normal(size=m.nv)}
    ref = fn(m, *(vals[n] for n in names))
    for arg in names:
        for kind, x in _variants(vals[arg]).items():
            before = np.array(x, dtype=float, copy=True)
            got = fn(m, *(x if n == arg else vals[n] for n in names))
            _same(got, ref)
            np.testing.assert_array_equal(np.asarray(x, dtype=float), before, err_msg=f"{fname}: {arg} ({kind}) was written")


@pytest.mark.parametrize("fname", list(_calls(cached_pair(1, min_dof=12))))
def test_arrays_of_another_shape_or_kind_are_refused_by_name(case, fname):
    fn, names = _calls(case)[fname]
    rng = np.random.default_rng(4)
    m = case.model
    vals = {"q": case.random_q(rng), "v": rng.normal(size=m.nv), "a": rng.normal(size=m.nv), "tau": rng.normal(size=m.nv)}
    for arg in names:
        x = vals[arg]
        bad = {"2-D": np.zeros((x.size, 2)), "0-d": np.array(1.0), "too long strided": np.zeros(2 * x.size + 2)[::2],
               "int, too short": np.zeros(x.size - 1, dtype=np.int64)}
        for kind, y in bad.items():
            with pytest.raises((ValueError, TypeError)) as ei:
                fn(m, *(y if n == arg else vals[n] for n in names))
            assert str(ei.value).startswith(f"{arg}:") or isinstance(ei.value, TypeError), f"{fname} {arg} {kind}: {ei.value}"
            if isinstance(ei.value, ValueError):
                assert isinstance(ei.value, engine.InputError) and ei.value.argument == arg, f"{fname} {arg} {kind}"


def test_integer_vectors_are_converted_not_read_as_float_bits(case):
    m = case.model
    q = m.neutral().astype(np.int64)           # unit quaternions (w = 1), zero angles and offsets
    q[m.joints[-1].idx_q] = 1 if m.joints[-1].nq == 1 else q[m.joints[-1].idx_q]
    np.testing.assert_array_equal(engine.mass_matrix(m, q), engine.mass_matrix(m, q.astype(float)))
    link = case.body_names[-1]
    np.testing.assert_array_equal(engine.jacobian(m, q, link), engine.jacobian(m, q.astype(float), link))
    np.testing.assert_array_equal(engine.body_poses(m, q), engine.body_poses(m, q.astype(float)))


def test_is_vec_passes_only_contiguous_native_float64_vectors():
    from engine.algorithms.api import _is_vec
    x = np.arange(5.0)
    assert _is_vec(x)
    assert not any(_is_vec(y) for kind, y in _variants(x).items() if kind not in ("read-only", "unaligned"))
    assert not _is_vec(np.array(1.0)) and not _is_vec(x.astype(np.int64)) and not _is_vec(x.astype(np.float32))


def test_every_entry_point_call_is_behind_the_test_of_its_callers_vectors():
    """A kernel's entry point reads any array as its signature's type (an int64 vector as float64
    bits; a 2-D one overruns its record of the shape): every wrapper that calls one tests each caller
    vector it passes with _is_vec's expression, inline, in a condition around the call."""
    import ast
    import inspect
    from engine.algorithms import api
    src = inspect.getsource(api)
    tree = ast.parse(src)
    test = "type({x}) is _ND and {x}.dtype is _F64 and {x}.strides == _VEC"
    parent = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parent[child] = node
    checked = 0
    for fn in (n for n in tree.body if isinstance(n, ast.FunctionDef)):
        params = {a.arg for a in fn.args.args} - {"model", "name", "frame", "f_ext"}
        for c in ast.walk(fn):
            if not (isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id.startswith("_ep_")):
                continue
            conds = []
            node = c
            while node is not fn:
                up = parent[node]
                if isinstance(up, ast.If) and node is not up.test and node in up.body:
                    conds.append(ast.get_source_segment(src, up.test))
                node = up
            passed = {a.id for a in c.args if isinstance(a, ast.Name)} & params
            assert passed, f"{fn.name}: {c.func.id} passes no caller vector?"
            for x in passed:
                assert any(test.format(x=x) in t for t in conds), f"{fn.name}: {x} reaches {c.func.id} without the test"
            checked += 1
    assert checked >= 9
