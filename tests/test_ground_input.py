"""engine.Ground is checked on every assignment (reliability item 39, issue 31 item 7): a bad
friction, restitution, normal or height raises ValueError naming the attribute and the value, the
old value stays, and a simulation goes on with it. Bad mass properties, friction and sizes in a
file or a call are refused by name."""
from __future__ import annotations

import math
import os

import numpy as np
import pytest

import engine
from engine import Ground, Simulator

DATA = os.path.join(os.path.dirname(__file__), "data")

BAD = [
    ("friction", -1.0), ("friction", math.nan), ("friction", math.inf), ("friction", "rough"),
    ("friction", None),
    ("restitution", -0.1), ("restitution", 1.5), ("restitution", math.nan), ("restitution", "bouncy"),
    ("height", math.nan), ("height", -math.inf), ("height", None), ("height", "low"),
    ("normal", (0.0, 0.0, 0.0)), ("normal", (0.0, math.nan, 1.0)), ("normal", (0.0, 1.0)),
    ("normal", (0.0, 0.0, math.inf)), ("normal", "up"), ("normal", None),
]


@pytest.mark.parametrize("attr, value", BAD)
def test_a_bad_value_is_refused_by_name_and_the_old_value_stays(attr, value):
    g = Ground(height=0.1, normal=(0, 0, 2), friction=0.5, restitution=0.2)
    before = np.array(getattr(g, attr), copy=True)
    with pytest.raises(ValueError) as ei:
        setattr(g, attr, value)
    msg = str(ei.value)
    assert msg.startswith(f"Ground {attr}:") and repr(value) in msg, msg
    assert np.array_equal(getattr(g, attr), before)


@pytest.mark.parametrize("attr, value", BAD)
def test_the_constructor_checks_the_same_way(attr, value):
    with pytest.raises(ValueError, match=f"Ground {attr}:"):
        Ground(**{attr: value})


def test_valid_values_are_taken_and_the_normal_is_normalised():
    g = Ground()
    g.friction, g.restitution, g.height = 0, 1, np.float32(-0.5)
    g.normal = [0, 3, 4]
    assert (g.friction, g.restitution, g.height) == (0.0, 1.0, -0.5)
    assert isinstance(g.friction, float) and isinstance(g.height, float)
    np.testing.assert_allclose(g.normal, [0, 0.6, 0.8])
    with pytest.raises(ValueError):
        g.normal[2] = 0.0                 # read-only: a change goes through the check
    with pytest.raises(AttributeError, match="no setting 'mu'"):
        g.mu = 0.3                        # a misspelt setting is not silently a new attribute
    assert "friction=0" in repr(g)


def _sliding_box():
    box = engine.load_urdf(os.path.join(DATA, "contact_box.urdf"), floating_base=True)
    q = box.neutral()
    q[2] = 0.1                            # resting on the floor (half height 0.1)
    v = np.zeros(box.nv)
    v[3] = 3.0                            # sliding along x at 3 m/s (body frame = world frame)
    return box, q, v


def _energy(sim):
    ke, pe = engine.energies(sim.model, sim.q, sim.v)
    return ke + pe


def test_a_sliding_box_loses_energy_after_a_valid_change_and_keeps_it_after_a_bad_one():
    box, q, v = _sliding_box()
    g = Ground(friction=0.3)
    sim = Simulator(box, dt=1e-3, q=q, v=v, ground=g, joint_limits=True)
    e0 = _energy(sim)
    sim.step(100)
    e1 = _energy(sim)
    assert e1 < e0
    with pytest.raises(ValueError, match="Ground friction: .* got -1"):
        g.friction = -1.0                 # once took the box from 10.8 J to 870 kJ
    assert g.friction == 0.3
    g.friction = 0.6                      # a valid change: more friction, still no energy gained
    for _ in range(10):
        sim.step(20)
        e = _energy(sim)
        assert e <= e1 + 1e-9
        e1 = e
    assert np.all(np.isfinite(sim.q)) and sim.q[2] > 0.09


@pytest.mark.parametrize("attr, value", [("normal", (0, 0, 0)), ("height", math.nan), ("friction", math.nan)])
def test_a_resting_box_stays_on_the_floor_after_a_refused_change(attr, value):
    box, q, _ = _sliding_box()
    g = Ground()
    sim = Simulator(box, dt=1e-3, q=q, ground=g, joint_limits=True)
    with pytest.raises(ValueError):
        setattr(g, attr, value)
    sim.step(200)
    assert abs(sim.q[2] - 0.1) < 1e-3


# ------------------------------------------------------------------ files and calls
ROBOT = ('<robot name="r"><link name="base"/><link name="l1">{inertial}{collision}</link>'
         '<joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><axis xyz="0 0 1"/>'
         '{dynamics}<limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>')
INERTIAL = ('<inertial><mass value="{m}"/><inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" '
            'iyz="0"/></inertial>')


@pytest.mark.parametrize("part, words", [
    (dict(inertial=INERTIAL.format(m="-2")), ("link 'l1'", "-2")),
    (dict(inertial=INERTIAL.format(m="nan")), ("link 'l1'", "nan")),
    (dict(dynamics='<dynamics friction="-0.5"/>'), ("joint 'j1'", "friction", "-0.5")),
    (dict(dynamics='<dynamics friction="nan"/>'), ("joint 'j1'", "friction", "nan")),
    (dict(dynamics='<dynamics damping="-3"/>'), ("joint 'j1'", "damping", "-3")),
    (dict(collision='<collision><geometry><box size="0.1 -0.2 0.1"/></geometry></collision>'),
     ("link 'l1'", "box size", "-0.2")),
    (dict(collision='<collision><geometry><sphere radius="-0.1"/></geometry></collision>'),
     ("link 'l1'", "sphere radius", "-0.1")),
    (dict(collision='<collision><geometry><cylinder radius="nan" length="1"/></geometry></collision>'),
     ("link 'l1'", "radius", "nan")),
])
def test_bad_numbers_in_a_urdf_name_the_body_and_the_value(part, words):
    kw = dict(inertial=INERTIAL.format(m="1"), collision="", dynamics="")
    kw.update(part)
    with pytest.raises(engine.ModelError) as ei:
        engine.load_urdf_string(ROBOT.format(**kw), filename="bad.urdf")
    msg = str(ei.value)
    assert msg.startswith("bad.urdf:"), msg
    for w in words:
        assert w in msg, (w, msg)


@pytest.mark.parametrize("kw, words", [
    (dict(friction=-0.5), ("joint 'arm_joint' friction", "-0.5")),
    (dict(friction=math.nan), ("joint 'arm_joint' friction", "nan")),
    (dict(damping=-1.0), ("joint 'arm_joint' damping", "-1")),
    (dict(armature=math.nan), ("joint 'arm_joint' armature", "nan")),
    (dict(effort_limit=-1.0), ("joint 'arm_joint' effort", "-1")),
])
def test_bad_joint_numbers_in_a_call_name_the_joint_and_the_value(kw, words):
    b = engine.ModelBuilder("bad")
    with pytest.raises(engine.ModelError) as ei:
        b.add_body("arm", joint=engine.Revolute((0, 0, 1)), inertia=engine.Inertia(1.0, (0, 0, 0), np.eye(3)), **kw)
    msg = str(ei.value)
    for w in words:
        assert w in msg, (w, msg)


def test_a_negative_mass_in_a_call_names_the_body_and_the_value():
    inertia = engine.Inertia(1.0, (0, 0, 0), np.eye(3))
    inertia.mass = -2.0
    with pytest.raises(engine.ModelError, match=r"body 'arm': mass must not be negative, got -2"):
        engine.ModelBuilder("bad").add_body("arm", joint=engine.Revolute((0, 0, 1)), inertia=inertia)


@pytest.mark.parametrize("size, words", [((0.2, -0.2, 0.2), ("box size", "-0.2")), ((0.2, math.nan, 0.2), ("nan",))])
def test_a_bad_collision_size_set_in_code_is_named_at_the_first_contact_step(size, words):
    box, q, _ = _sliding_box()
    box.collisions[0].size = np.array(size)
    sim = Simulator(box, dt=1e-3, q=q, ground=Ground())
    with pytest.raises(ValueError) as ei:
        sim.step()
    msg = str(ei.value)
    for w in ("'" + box.collisions[0].link + "'",) + words:
        assert w in msg, (w, msg)
