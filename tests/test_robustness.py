"""Every way a user can break the engine gets a clear answer (reliability items 26-32):
settings checked at assignment, overflow reported as overflow or divergence, read-only and odd
arrays accepted, missing arguments and unknown names named, gravity a real setting, massless
chain ends and a link called "world" loaded with a warning, loops that never come apart silently."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import engine
from engine.catalog import load_model, initial_state


@pytest.fixture(scope="module")
def dp():
    return engine.load_urdf("assets/double_pendulum.urdf")


# ------------------------------------------------------------------ settings at assignment
@pytest.mark.parametrize("attr, value, allowed", [
    ("dt", -0.01, "positive, finite"), ("dt", 0.0, "positive, finite"), ("dt", math.nan, "positive, finite"),
    ("dt", math.inf, "positive, finite"), ("dt", "fast", "positive, finite"),
    ("integrator", "rk5", "'rk4', 'semi_implicit_euler', 'euler'"), ("integrator", None, "'rk4'"),
    ("stabilization", "off", "'baumgarte', 'none'"), ("stabilization", False, "'baumgarte', 'none'"),
    ("baumgarte_time", -1.0, "positive time"), ("baumgarte_time", math.nan, "positive time"),
    ("project_every_step", "yes", "True or False"),
    ("loop_tolerance", 0.0, "positive number"),
])
def test_simulator_settings_are_checked_when_assigned(dp, attr, value, allowed):
    sim = engine.Simulator(dp, dt=1e-3)
    before = getattr(sim, attr)
    with pytest.raises(ValueError) as ei:
        setattr(sim, attr, value)
    msg = str(ei.value)
    assert msg.startswith(f"{attr}:") and allowed in msg, msg
    assert getattr(sim, attr) == before                 # the old value stays in force
    sim.step(3)
    assert sim.t == pytest.approx(3 * sim.dt)         # time still runs forward


def test_simulator_constructor_checks_the_same_way(dp):
    with pytest.raises(ValueError, match="integrator: expected one of"):
        engine.Simulator(dp, integrator="RK4")
    with pytest.raises(ValueError, match="dt: expected a positive"):
        engine.Simulator(dp, dt=-1e-3)


def test_valid_settings_are_taken(dp):
    sim = engine.Simulator(dp)
    sim.dt, sim.integrator, sim.stabilization = 5e-4, "euler", "none"
    sim.baumgarte_time, sim.project_every_step = 0.05, np.bool_(True)
    assert (sim.dt, sim.integrator, sim.stabilization, sim.baumgarte_time, sim.project_every_step) == \
        (5e-4, "euler", "none", 0.05, True)


# ------------------------------------------------------------------ overflow
def test_a_torque_that_overflows_inside_a_step_is_a_divergence_with_the_last_good_state(dp):
    for integrator in engine.INTEGRATORS:
        sim = engine.Simulator(dp, dt=1e-3, integrator=integrator, q=[0.3, 0.1])
        sim.step(5)
        good = sim.q.copy(), sim.v.copy(), sim.t
        sim.tau_cmd = np.array([1e306, 0.0])
        with pytest.raises(engine.SimulationDiverged) as ei:
            sim.step(10)
        e = ei.value
        assert not isinstance(e, engine.InputError)
        assert "smaller time step" in str(e) and "NaN or Inf" not in str(e)
        assert np.array_equal(e.q, sim.q) and np.all(np.isfinite(e.q))
        assert sim.t >= good[2]


def test_a_wrench_that_overflows_is_a_divergence_not_blamed_on_v(dp):
    sim = engine.Simulator(dp, dt=1e-3, q=[0.3, 0.1])
    sim.f_ext = {"link2": np.array([0, 0, 0, 1e308, 1e308, 0.0])}
    with pytest.raises(engine.SimulationDiverged) as ei:
        sim.step(50)
    assert "v: holds NaN" not in str(ei.value)


def test_a_bad_input_of_the_users_is_still_named(dp):
    sim = engine.Simulator(dp)
    sim.tau_cmd = np.array([np.nan, 0.0])
    with pytest.raises(engine.InputError, match="tau_cmd: holds NaN or Inf"):
        sim.step()
    sim.tau_cmd = np.zeros(2)
    sim.f_ext = {"link2": [0, 0, 0, np.inf, 0, 0]}
    with pytest.raises(engine.InputError, match=r"f_ext\['link2'\]: holds NaN or Inf"):
        sim.step()


@pytest.mark.parametrize("call", ["forward_dynamics", "inverse_dynamics", "hybrid_dynamics", "kinetic_energy"])
def test_huge_velocity_is_an_overflow_error_not_nan(dp, call):
    q, v, x = np.array([0.3, 0.2]), np.full(2, 1e200), np.zeros(2)
    args = {"forward_dynamics": (q, v, x), "inverse_dynamics": (q, v, x),
            "hybrid_dynamics": (q, v, [True, False], x, x), "kinetic_energy": (q, v)}[call]
    with pytest.raises(engine.NumericalOverflow) as ei:
        getattr(engine, call)(dp, *args)
    assert "overflowed" in str(ei.value) and "max |v| = 1e+200" in str(ei.value)


# ------------------------------------------------------------------ arrays and arguments
def _frozen(x):
    a = np.array(x, dtype=float)
    a.setflags(write=False)
    return a


def test_read_only_arrays_are_accepted_everywhere(dp):
    q, v, a = _frozen([0.3, 0.2]), _frozen([0.1, -0.4]), _frozen([0.5, 0.5])
    qw, vw, aw = (np.array(x) for x in (q, v, a))
    assert np.array_equal(engine.forward_dynamics(dp, q, v, a), engine.forward_dynamics(dp, qw, vw, aw))
    assert np.array_equal(engine.inverse_dynamics(dp, q, v, a), engine.inverse_dynamics(dp, qw, vw, aw))
    mask = np.array([True, False])
    mask.setflags(write=False)
    ref = engine.hybrid_dynamics(dp, qw, vw, [True, False], aw, aw)
    out = engine.hybrid_dynamics(dp, q, v, mask, a, a)
    assert all(np.array_equal(x, y) for x, y in zip(out, ref))
    assert np.array_equal(engine.mass_matrix(dp, q), engine.mass_matrix(dp, qw))
    assert np.array_equal(engine.coriolis_matrix(dp, q, v), engine.coriolis_matrix(dp, qw, vw))
    assert np.array_equal(engine.jacobian(dp, q, "link2", "world"), engine.jacobian(dp, qw, "link2", "world"))
    assert np.array_equal(engine.integrate(dp, q, v), engine.integrate(dp, qw, vw))
    assert np.array_equal(engine.difference(dp, q, v), engine.difference(dp, qw, vw))
    assert engine.kinetic_energy(dp, q, v) == engine.kinetic_energy(dp, qw, vw)
    assert np.array_equal(engine.center_of_mass(dp, q), engine.center_of_mass(dp, qw))
    buf = np.frombuffer(np.array([0.3, 0.2]).tobytes())          # a frozen buffer
    assert np.array_equal(engine.gravity_forces(dp, buf), engine.gravity_forces(dp, qw))
    sim = engine.Simulator(dp, q=q, v=v)
    sim.tau_cmd = _frozen([0.1, 0.0])
    sim.step(3)


def test_none_says_the_argument_is_missing():
    h = load_model("humanoid")
    q, v = initial_state(h)
    with pytest.raises(engine.InputError, match=r"tau: missing \(got None\); expected a vector of 34"):
        engine.forward_dynamics(h, q, v, None)
    with pytest.raises(engine.InputError, match="prescribed: missing"):
        engine.hybrid_dynamics(h, q, v, None, v, v)


def test_unknown_link_names_near_matches(dp):
    q = np.zeros(2)
    with pytest.raises(engine.NameNotFound) as ei:
        engine.jacobian(dp, q, "lnk2")
    msg = str(ei.value)
    assert "no link named 'lnk2' in model 'double_pendulum'" in msg and "did you mean 'link2'" in msg
    assert isinstance(ei.value, KeyError) and isinstance(ei.value, ValueError)
    with pytest.raises(engine.NameNotFound, match="did you mean 'link1'"):
        engine.frame_pose(dp, q, "Link1")
    with pytest.raises(engine.NameNotFound, match="no link named 'nope'"):
        engine.forward_dynamics(dp, q, q, q, f_ext={"nope": np.zeros(6)})
    with pytest.raises(engine.NameNotFound, match="no joint named 'joint3'.*did you mean"):
        dp.joint("joint3")


def test_hybrid_mask_of_one_flag_per_joint():
    top = load_model("spinning_top_ball")           # a ball joint: 3 velocity coordinates, 1 joint
    q, v = initial_state(top)
    x = np.array([0.1, 0.2, 0.3])
    per_joint = engine.hybrid_dynamics(top, q, v, [True], x, x)
    per_coord = engine.hybrid_dynamics(top, q, v, [True, True, True], x, x)
    assert all(np.array_equal(a, b) for a, b in zip(per_joint, per_coord))
    with pytest.raises(engine.InputError, match="splits joint"):
        engine.hybrid_dynamics(top, q, v, [True, False, True], x, x)


def test_nan_mass_in_code_names_the_mass():
    with pytest.raises(engine.ModelError, match="mass holds NaN"):
        engine.Inertia(float("nan"), (0, 0, 0), np.eye(3))
    b = engine.ModelBuilder("bad")
    inertia = engine.Inertia(1.0, (0, 0, 0), np.eye(3))
    inertia.mass = float("nan")                          # changed after construction
    with pytest.raises(engine.ModelError, match="body 'arm': inertia mass holds NaN"):
        b.add_body("arm", joint=engine.Revolute((0, 0, 1)), inertia=inertia)


URDF_HEAD = '<robot name="r"><link name="base"/>'
LINK = ('<link name="{n}"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" '
        'ixz="0" iyz="0"/></inertial>{extra}</link>')
JOINT = '<joint name="{n}" type="revolute"><parent link="{p}"/><child link="{c}"/><axis xyz="0 0 1"/></joint>'


def test_empty_mesh_filename_says_it_is_empty():
    xml = (URDF_HEAD + LINK.format(n="l1", extra='<visual><geometry><mesh filename=""/></geometry></visual>')
           + JOINT.format(n="j1", p="base", c="l1") + "</robot>")
    with pytest.raises(engine.ModelError, match="attribute 'filename' is empty"):
        engine.load_urdf_string(xml)


def test_a_link_named_world_is_renamed_with_a_warning():
    xml = (URDF_HEAD + LINK.format(n="world", extra="") + JOINT.format(n="j1", p="base", c="world")
           + '<loop name="pin" type="point"><frame_a link="world_link" xyz="1 0 0"/>'
             '<frame_b link="world" xyz="1 0 0"/></loop></robot>')
    with pytest.warns(UserWarning, match="link 'world' is not the fixed root.*renamed 'world_link'"):
        m = engine.load_urdf_string(xml)
    assert "world_link" in m.frames and "world" not in m.frames
    c = m.constraint("pin")
    assert c.body_b == 0 and c.body_a == m.body_index("world_link")   # "world" in a loop: the ground
    with pytest.warns(UserWarning, match="renamed"):
        fb = engine.load_urdf_string(URDF_HEAD.replace("base", "world") + LINK.format(n="l1", extra="")
                                     + JOINT.format(n="j1", p="world", c="l1") + "</robot>", floating_base=True)
    assert fb.ground_name == "world" and "world_link" in fb.frames
    # a fixed-base robot whose root is "world" is the usual case: the root is the ground, no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fixed = engine.load_urdf_string(URDF_HEAD.replace("base", "world") + LINK.format(n="l1", extra="")
                                        + JOINT.format(n="j1", p="world", c="l1") + "</robot>")
    assert fixed.ground_name == "world"


# ------------------------------------------------------------------ gravity
def test_gravity_is_a_setting_every_algorithm_uses(dp):
    m = dp.clone()
    q, v = np.array([0.7, -0.4]), np.array([0.3, 0.2])
    g0 = engine.gravity_forces(m, q)
    m.gravity = (0.0, 0.0, 0.0)
    assert np.array_equal(m.gravity, [0, 0, 0])
    assert np.allclose(engine.gravity_forces(m, q), 0.0)
    assert engine.potential_energy(m, q) == 0.0
    assert np.allclose(engine.bias_forces(m, q, v), engine.coriolis_matrix(m, q, v) @ v)
    assert np.allclose(engine.forward_dynamics(m, q, np.zeros(2), np.zeros(2)), 0.0)
    m.gravity = [0, 0, -2 * 9.81]
    assert np.allclose(engine.gravity_forces(m, q), 2 * g0)
    assert np.allclose(engine.gravity_forces(dp, q), g0)             # the original keeps its own
    with pytest.raises(ValueError, match="gravity: expected 3 numbers"):
        m.gravity = (0, 0)
    with pytest.raises(ValueError, match="gravity: holds NaN"):
        m.gravity = (0, 0, float("nan"))
    with pytest.raises(ValueError):
        m.gravity[2] = 0.0                                            # read-only view: assign the whole vector


def test_simulator_follows_a_gravity_change(dp):
    m = dp.clone()
    sim = engine.Simulator(m, q=[0.5, 0.0])
    sim.step(10)
    m.gravity = (0, 0, 0)
    q, v = sim.q.copy(), sim.v.copy()
    sim.v[:] = 0.0
    sim.step(100)
    assert np.allclose(sim.q, q) and np.allclose(sim.v, 0.0)        # no gravity: it stays where it is
    del v


@pytest.mark.parametrize("gravity_on", [True, False])
def test_spinning_top_centre_of_mass_falls_only_with_gravity(gravity_on):
    """The gallery's hint "switch gravity off": without gravity the free top's centre of mass moves
    on a straight line at constant speed (second difference 0); with it, it falls by g t^2."""
    top = load_model("spinning_top")
    if not gravity_on:
        top.gravity = (0, 0, 0)
    q, v = initial_state(top)
    sim = engine.Simulator(top, q=q, v=v)
    c = [engine.center_of_mass(top, sim.q)]
    for _ in range(2):
        sim.step(250)
        c.append(engine.center_of_mass(top, sim.q))
    second = c[2] - 2 * c[1] + c[0]
    expected = np.array([0, 0, -9.81 * 0.25 ** 2]) if gravity_on else np.zeros(3)
    assert np.allclose(second, expected, atol=1e-4)        # RK4 on the spinning body: ~1e-5


# ------------------------------------------------------------------ closed loops do not come apart silently
def test_slider_crank_driven_hard_keeps_its_loop_closed():
    """Constant 5 N m on the crank at dt = 1e-4 for 5 s (the crank reaches thousands of rad/s): the
    residual stays below the tolerance at every step; the projections are counted."""
    m = load_model("slider_crank")
    q, v = initial_state(m)
    sim = engine.Simulator(m, dt=1e-4, q=q, v=v, joint_limits=False)   # free to spin up
    assert sim.loop_tolerance == pytest.approx(1e-4 * m.characteristic_length())
    sim.tau_cmd[m.v_slice("crank")] = 5.0
    worst = 0.0
    for _ in range(50000):
        sim.step()
        worst = max(worst, sim.constraint_residual())
    assert worst <= sim.loop_tolerance
    assert sim.loop_projections > 0 and sim.last_loop_projection[1] == "piston_pin"
    assert abs(sim.v[m.v_slice("crank")][0]) > 1000.0               # it really was driven hard


def test_a_loop_that_can_not_be_closed_is_named():
    m = load_model("four_bar")
    q, v = initial_state(m)
    sim = engine.Simulator(m, dt=1e-3, q=q, v=v)
    c = m.constraints[0]
    sim.step(5)
    c.frame_b = c.frame_b.copy()
    c.P_b = c.P_b.copy()
    c.P_b[:3, 3] += 100.0                                 # the frame it must meet is now out of reach
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(engine.LoopFailure) as ei:
            sim.step(5)
    assert ei.value.constraint == c.name and "smaller time step" in str(ei.value)
    assert isinstance(ei.value, engine.SimulationDiverged)
