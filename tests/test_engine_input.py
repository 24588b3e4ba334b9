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


# ------------------------------------------------------------------ ModelBuilder limits
@pytest.mark.parametrize("kw, words", [
    (dict(lower=1.0, upper=-1.0), ("joint 'arm_joint'", "lower limit 1 is above upper limit -1")),
    (dict(lower=math.nan, upper=1.0), ("joint 'arm_joint' lower", "NaN")),
    (dict(lower=-1.0, upper=math.nan), ("joint 'arm_joint' upper", "NaN")),
    (dict(velocity_limit=math.nan), ("joint 'arm_joint' velocity", "NaN")),
])
def test_model_builder_refuses_limits_the_urdf_loader_refuses(kw, words):
    b = engine.ModelBuilder("bad")
    with pytest.raises(engine.ModelError) as ei:
        b.add_body("arm", joint=engine.Revolute((0, 0, 1)), inertia=engine.Inertia(1.0, (0, 0, 0), np.eye(3)), **kw)
    for w in words:
        assert w in str(ei.value), str(ei.value)
    # open limits (+-inf) and equal bounds stay allowed
    b.add_body("arm", joint=engine.Revolute((0, 0, 1)), inertia=engine.Inertia(1.0, (0, 0, 0), np.eye(3)),
               lower=-math.inf, upper=0.0)
    b.add_body("arm2", parent="arm", joint=engine.Revolute((0, 0, 1)),
               inertia=engine.Inertia(1.0, (0, 0, 0), np.eye(3)), lower=0.5, upper=0.5)
    assert b.build().nv == 2


# ------------------------------------------------------------------ loaders: one warning per file
URDF = ('<robot name="r"><link name="base"/><link name="l1"><inertial><mass value="1"/><inertia ixx="0.1" '
        'iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial><wibble/></link>'
        '<joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><axis xyz="0 0 1"/>'
        '<limit lower="-1" upper="1" effort="1" velocity="1"/><safety_controller k_velocity="1"/></joint>'
        '<transmission name="t1"><type>x</type></transmission><transmission name="t2"/>'
        '<gazebo reference="l1"/></robot>')


def test_urdf_elements_left_out_are_named_in_one_warning():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        engine.load_urdf_string(URDF, filename="r.urdf")
    said = [str(w.message) for w in caught if issubclass(w.category, engine.parsers.urdf.URDFWarning)]
    assert len(said) == 1, said
    msg = said[0]
    assert msg.startswith("r.urdf: ")
    for w in ("<wibble> in link 'l1'", "<transmission> x2", "<gazebo>", "<safety_controller>"):
        assert w in msg, (w, msg)


MJCF = """<mujoco model="m">
  <worldbody>
    <body name="a">
      <joint name="h" type="hinge" axis="{axis}" stiffness="{k}"/>
      <geom type="sphere" size="0.1" mass="1"/>
    </body>
  </worldbody>
  {extra}
</mujoco>
"""


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_mjcf_parts_left_out_are_named_in_one_warning(tmp_path):
    path = _write(tmp_path, "parts.xml", MJCF.format(
        axis="0 0 1", k="5", extra='<actuator><motor joint="h"/></actuator><sensor><jointpos joint="h"/></sensor>'
                                   '<tendon><fixed name="t"><joint joint="h" coef="1"/></fixed></tendon>'))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        engine.load_mjcf(path)
    said = [str(w.message) for w in caught if issubclass(w.category, engine.parsers.mjcf.MJCFWarning)]
    assert len(said) == 1, said
    msg = said[0]
    assert msg.startswith(path)
    for w in ("actuator", "sensor", "tendon", "stiffness"):
        assert w in msg, (w, msg)


def test_a_urdf_given_to_load_mjcf_is_refused(tmp_path):
    path = _write(tmp_path, "robot.xml", URDF)
    with pytest.raises(engine.ModelError) as ei:
        engine.load_mjcf(path)
    msg = str(ei.value)
    assert ei.value.file == path and msg.startswith(path) and "URDF" in msg and "load_urdf" in msg
    other = _write(tmp_path, "page.xml", "<html><body/></html>")
    with pytest.raises(engine.ModelError, match="root element is <html>, expected <mujoco>"):
        engine.load_mjcf(other)


@pytest.mark.parametrize("axis", ["nan 0 1", "0 0 0"])
def test_a_bad_mjcf_axis_names_the_file_and_the_joint(tmp_path, axis):
    path = _write(tmp_path, "axis.xml", MJCF.format(axis=axis, k="0", extra=""))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(engine.ModelError) as ei:
            engine.load_mjcf(path)
    msg = str(ei.value)
    assert ei.value.file == path and msg.startswith(path), msg
    assert "joint 'h'" in msg or "axis" in msg, msg


# ------------------------------------------------------------------ meshes
def test_a_text_stl_that_is_not_utf8_loads(tmp_path):
    """trimesh decodes such a file through charset_normalizer (declared in pyproject.toml)."""
    from engine.parsers import meshes
    facet = ("facet normal 0 0 1\n outer loop\n  vertex 0 0 0\n  vertex 1 0 0\n  vertex 0 1 0\n endloop\n"
             "endfacet\n")
    p = tmp_path / "latin.stl"
    p.write_bytes(b"solid caf\xe9\n" + facet.encode() + b"endsolid caf\xe9\n")
    m = meshes.load_mesh(str(p))
    assert m.vertices.shape == (3, 3)


# ------------------------------------------------------------------ batches name the row
@pytest.fixture(scope="module")
def top():
    return load_model("spinning_top_ball")          # a ball joint: a quaternion in q


@pytest.mark.parametrize("call", ["forward_dynamics", "inverse_dynamics", "mass_matrix"])
@pytest.mark.parametrize("threads", [1, 2])
def test_a_zero_quaternion_in_one_row_names_the_row_and_the_argument(top, call, threads):
    q, v = initial_state(top)
    Q = np.tile(q, (5, 1))
    V = np.tile(v, (5, 1))
    Q[3, top.joints[0].idx_q:top.joints[0].idx_q + 4] = 0.0
    args = (Q,) if call == "mass_matrix" else (Q, V, np.zeros_like(V))
    with pytest.raises(engine.InputError) as ei:
        getattr(engine.batch, call)(top, *args, threads=threads)
    msg = str(ei.value)
    assert ei.value.argument == "Q" and msg.startswith("Q: row 3:") and top.joints[0].name in msg, msg


def test_a_zero_quaternion_in_a_rollout_names_the_row(top):
    q, v = initial_state(top)
    Q = np.tile(q, (3, 1))
    Q[1, :4] = 0.0
    with pytest.raises(engine.InputError, match="q0s: row 1: the quaternion"):
        engine.batch.rollout(top, Q, np.tile(v, (3, 1)), np.zeros((2, top.nv)), 1e-3)


@pytest.mark.parametrize("call", ["forward_dynamics", "inverse_dynamics"])
def test_an_overflow_in_one_row_names_the_row_and_keeps_the_others(dp, call):
    Q = np.full((8, 2), 0.3)
    V = np.zeros((8, 2))
    V[5] = 1e200
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(engine.NumericalOverflow) as ei:
            getattr(engine.batch, call)(dp, Q, V, np.zeros((8, 2)), threads=2)
    e = ei.value
    msg = str(e)
    assert msg.startswith(f"row 5: batch.{call}:") and "max |V| = 1e+200" in msg, msg
    assert e.row == 5 and e.rows == [5]
    assert np.all(np.isnan(e.result[5]))
    good = getattr(engine, call)(dp, Q[0], V[0], np.zeros(2))
    for i in (0, 1, 2, 3, 4, 6, 7):
        assert np.array_equal(e.result[i], good)


def test_a_diverging_rollout_row_keeps_the_other_rows(dp):
    N, steps, dt = 4, 200, 1e-3
    Q = np.full((N, 2), 0.3)
    V = np.zeros((N, 2))
    taus = np.zeros((N, steps, 2))
    taus[2, 50:] = 1e306                                # row 2 diverges after 50 steps
    ref_Q, ref_V = engine.batch.rollout(dp, Q[:1], V[:1], taus[:1], dt)
    with pytest.raises(engine.RolloutDiverged) as ei:
        engine.batch.rollout(dp, Q, V, taus, dt, threads=2)
    e = ei.value
    assert isinstance(e, engine.SimulationDiverged)
    msg = str(e)
    assert e.rows == [2] and msg.startswith("rollout 2 diverged") and "1 of 4 rollouts diverged (rows 2)" in msg
    assert ".Q and .V" in msg, msg
    for i in (0, 1, 3):
        assert np.array_equal(e.Q[i], ref_Q[0]) and np.array_equal(e.V[i], ref_V[0])
    finite = np.all(np.isfinite(e.Q[2]), axis=1)
    n = int(np.argmin(finite)) - 1                     # the last good state of row 2
    assert 45 <= n <= 60 and np.all(finite[:n + 1]) and not np.any(finite[n + 1:])
    assert np.array_equal(e.q, e.Q[2, n]) and e.t == pytest.approx(n * dt)
