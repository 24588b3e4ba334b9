"""Joint limits and ground contact with Coulomb friction (issue 10): known answers.

Bodies: tests/data/contact_*.urdf (box, sphere, stacks of two boxes, a pendulum with limits).
"""
import math
import os
import pathlib
import warnings

import numpy as np
import pytest

import engine
from engine import Simulator, Ground, catalog
from conftest import compiled_steps

DATA = os.path.join(os.path.dirname(__file__), "data")
ASSETS = pathlib.Path(__file__).resolve().parent.parent / "assets"
G = 9.81


def _load(name, floating=True):
    return engine.load_urdf(os.path.join(DATA, name), floating_base=floating)


def _on_slope(model, theta, half_height):
    """q of a body resting on the slope n = (-sin, 0, cos) (rising along +x), its frame aligned."""
    n = np.array([-math.sin(theta), 0.0, math.cos(theta)])
    q = model.neutral()
    q[:3] = n * half_height
    q[3:7] = [math.cos(-theta / 2), 0.0, math.sin(-theta / 2), 0.0]
    return q, n


# ------------------------------------------------------------------ friction on a slope
def test_block_below_friction_angle_sticks():
    box = _load("contact_box.urdf")
    theta, mu = 0.2, 0.5                       # tan 0.2 = 0.203 < 0.5
    q, n = _on_slope(box, theta, 0.1)
    sim = Simulator(box, dt=1e-3, q=q, ground=Ground(normal=n, friction=mu), joint_limits=True)
    x0 = sim.q[:3].copy()
    worst = 0.0
    for _ in range(5000):
        sim.step()
        worst = max(worst, float(np.linalg.norm(sim.q[:3] - x0)))
    assert worst < 1e-5
    F = sum(c.force for c in sim.contacts)
    assert np.allclose(F, [0.0, 0.0, 2.0 * G], atol=1e-9)   # the ground carries the weight exactly


def test_block_above_friction_angle_slides_with_coulomb_friction():
    box = _load("contact_box.urdf")
    theta, mu = 0.4, 0.2
    q, n = _on_slope(box, theta, 0.1)
    sim = Simulator(box, dt=1e-3, q=q, ground=Ground(normal=n, friction=mu), joint_limits=True)
    down = -np.array([math.cos(theta), 0.0, math.sin(theta)])
    s, t = [], []
    for _ in range(1000):
        sim.step()
        s.append(sim.q[:3] @ down)
        t.append(sim.t)
    acc = 2.0 * np.polyfit(t[100:], s[100:], 2)[0]
    expected = G * (math.sin(theta) - mu * math.cos(theta))
    assert abs(acc - expected) < 0.01 * expected
    normal = sum(c.force for c in sim.contacts) @ n
    assert abs(normal - 2.0 * G * math.cos(theta)) < 0.01 * 2.0 * G * math.cos(theta)
    tangential = sum(c.force for c in sim.contacts) @ down
    assert abs(tangential + mu * normal) < 1e-6 * normal          # friction = mu N, against the slip


def test_sphere_rolls_without_slipping():
    ball = _load("contact_sphere.urdf")
    theta = 0.3
    q, n = _on_slope(ball, theta, 0.1)
    q[3:7] = [1.0, 0.0, 0.0, 0.0]
    sim = Simulator(ball, dt=1e-3, q=q, ground=Ground(normal=n, friction=0.8), joint_limits=True)
    down = -np.array([math.cos(theta), 0.0, math.sin(theta)])
    s, t = [], []
    for _ in range(1000):
        sim.step()
        s.append(sim.q[:3] @ down)
        t.append(sim.t)
    acc = 2.0 * np.polyfit(t, s, 2)[0]
    expected = 5.0 / 7.0 * G * math.sin(theta)
    assert abs(acc - expected) < 0.01 * expected
    assert abs(sim.q[:3] @ n - 0.1) < 1e-6                        # it stays on the slope


def test_external_push_below_and_above_friction():
    box = _load("contact_box.urdf")
    q = box.neutral()
    q[2] = 0.1
    mu, m = 0.5, 2.0
    for push, moves in ((0.9 * mu * m * G, False), (1.5 * mu * m * G, True)):
        sim = Simulator(box, dt=1e-3, q=q, ground=Ground(friction=mu), joint_limits=True)
        sim.f_ext = {"box": np.array([0.0, 0.0, 0.0, push, 0.0, 0.0])}   # through the centre, body x = world x
        sim.step(500)
        if not moves:
            assert abs(sim.q[0]) < 1e-9
        else:
            v = sim.v[3]
            assert abs(v - (push - mu * m * G) / m * sim.t) < 0.01 * v


# ------------------------------------------------------------------ stacks and impacts
def _stack(ratio, steps):
    model = _load(f"contact_stack_{ratio}.urdf", floating=False)
    sim = Simulator(model, dt=1e-3, ground=Ground(), joint_limits=True)
    light = model.q_slice("light_free")
    heavy = model.q_slice("heavy_free")
    z0 = (sim.q[light][2], sim.q[heavy][2])
    worst = 0.0
    for _ in range(steps):
        sim.step()
        worst = max(worst, z0[0] - sim.q[light][2], z0[1] - sim.q[heavy][2])
    return worst, sim, model


@pytest.mark.parametrize("ratio, compiled", [(100, True), (1000, True), (10000, True), (10000, False)])
def test_heavy_box_on_light_box_does_not_sink(ratio, compiled):
    """At 1:10000 PGS alone stops short (~1e5 sweeps needed): the light box's contacts end on the
    rims of their cones and the polished set says "sliding"; the pivot rounds find the set."""
    with compiled_steps(compiled):
        worst, sim, model = _stack(ratio, 10000 if compiled else 2000)
    assert worst < 1e-3
    assert np.all(np.isfinite(sim.q))
    heavy_kg = {100: 100.0, 1000: 1000.0, 10000: 1000.0}[ratio]      # the light box: 1, 1, 0.1 kg
    # the force on the heavy box from the light one (a contact reports the force on its `body`;
    # the same force pushes its `other` back)
    on_light = (sum(c.force[2] for c in sim.contacts if c.body == "heavy")
                - sum(c.force[2] for c in sim.contacts if c.other == "heavy"))
    assert abs(on_light - heavy_kg * G) < 1e-6 * heavy_kg * G


@pytest.mark.parametrize("tilt", [0.0, 0.3])
def test_dropped_box_loses_energy_and_comes_to_rest(tilt):
    """Dropped flat (lands on four corners at once) or tilted (lands on a corner, tumbles)."""
    box = _load("contact_box.urdf")
    q = box.neutral()
    q[2] = 0.5 + 0.1                                   # its centre 0.6 m above the ground
    q[3:7] = [math.cos(tilt / 2), 0.6 * math.sin(tilt / 2), 0.8 * math.sin(tilt / 2), 0.0]
    sim = Simulator(box, dt=1e-3, q=q, ground=Ground(restitution=0.0), joint_limits=True)
    E = [sum(sim.energy())]
    for _ in range(3000):
        sim.step()
        E.append(sum(sim.energy()))
        assert E[-1] <= E[-2] + 1e-6
    assert np.abs(sim.v).max() < 1e-9
    assert abs(sim.q[2] - 0.1) < 1e-4                 # resting on its largest face
    assert max(c.penetration for c in sim.contacts) < 1e-4


# ------------------------------------------------------------------ joint limits
def test_pendulum_stops_at_its_limit_and_the_limit_holds_gravity():
    pend = _load("contact_pendulum.urdf", floating=False)
    assert Simulator(pend).joint_limits                           # on by default: the model has limits
    sim = Simulator(pend, dt=1e-3, q=[0.0], v=[3.0], joint_limits=True)
    assert sim.joint_limits
    worst = 0.0
    for _ in range(5000):
        sim.step()
        worst = max(worst, abs(sim.q[0]))
    assert worst <= 0.5 + 1e-3
    assert abs(sim.q[0] - 0.5) < 1e-9 and abs(sim.v[0]) < 1e-9      # at rest on the limit
    hold = engine.gravity_forces(pend, sim.q)                     # torque that holds it against gravity
    assert abs(sim.limit_forces[0] - hold[0]) < 1e-6
    assert abs(hold[0]) > 1.0


def test_limits_default_on_only_when_the_model_has_limits():
    b = engine.ModelBuilder("wheel")
    b.add_body("disk", "world", engine.Revolute((0, 0, 1)), engine.pose(p=(0, 0, 0)),
               engine.Inertia(1.0, (0, 0, 0), 0.1 * np.eye(3)))
    wheel = b.build()
    assert not Simulator(wheel).joint_limits                      # no limits: nothing to honour
    pend = _load("contact_pendulum.urdf", floating=False)
    assert Simulator(pend, joint_limits=None).joint_limits


def _python_twin(make):
    """Two simulators from make(): the first steps compiled (engine.contact.step), the second
    through the Python step (a control callback that changes nothing forces it)."""
    a, b = make(), make()
    b.set_control(lambda t, q, v: None)
    return a, b


@pytest.mark.parametrize("scene", ["limit", "drop", "slope", "roll"])
def test_compiled_contact_step_matches_the_python_step(scene):
    def make():
        if scene == "limit":
            pend = _load("contact_pendulum.urdf", floating=False)
            return Simulator(pend, dt=1e-3, q=[0.0], v=[3.0])
        if scene == "drop":
            box = _load("contact_box.urdf")
            q = box.neutral()
            q[2], t = 0.6, 0.3
            q[3:7] = [math.cos(t / 2), 0.6 * math.sin(t / 2), 0.8 * math.sin(t / 2), 0.0]
            return Simulator(box, dt=1e-3, q=q, ground=Ground())
        if scene == "slope":
            box = _load("contact_box.urdf")
            q, n = _on_slope(box, 0.4, 0.1)
            return Simulator(box, dt=1e-3, q=q, ground=Ground(normal=n, friction=0.2))
        ball = _load("contact_sphere.urdf")
        q, n = _on_slope(ball, 0.3, 0.1)
        q[3:7] = [1.0, 0.0, 0.0, 0.0]
        return Simulator(ball, dt=1e-3, q=q, ground=Ground(normal=n, friction=0.8))
    a, b = _python_twin(make)
    for _ in range(3):
        a.step(500)
        for _ in range(500):
            b.step()
        assert a.t == b.t
        assert np.abs(a.q - b.q).max() < 1e-9, scene
        assert np.abs(a.v - b.v).max() < 1e-7, scene
        assert np.abs(a.limit_forces - b.limit_forces).max() < 1e-6 * max(1.0, np.abs(b.limit_forces).max())
        assert len(a.contacts) == len(b.contacts)
        for ca, cb in zip(a.contacts, b.contacts):
            assert ca.body == cb.body
            assert np.abs(ca.point - cb.point).max() < 1e-9
            assert np.abs(ca.force - cb.force).max() < 1e-6 * max(1.0, np.abs(cb.force).max())
        assert abs(a.work - b.work) < 1e-9 and abs(a.dissipated - b.dissipated) < 1e-9
        assert a.contact_stats["rows"] == b.contact_stats["rows"]
        # the compiled step's arrays and the Python step's list describe their contacts alike
        for sim in (a, b):
            bodies, points, normals, forces, pens = sim.contact_arrays()
            assert len(bodies) == len(sim.contacts)
            for k, c in enumerate(sim.contacts):
                assert sim.model.body_names[bodies[k] - 1] == c.body
                assert np.array_equal(points[k], c.point) and np.array_equal(normals[k], c.normal)
                assert np.array_equal(forces[k], c.force) and pens[k] == c.penetration
    assert scene == "limit" or len(a.contacts) > 0       # the comparison above had contacts to compare


def test_a_closed_loop_on_the_ground_steps_compiled_as_the_python_step():
    """The four-bar with a ball on its coupler swinging onto a ground: the loop's rows join the
    contact solve in the compiled step (no step in Python) and the run equals the Python step's."""
    src = (ASSETS / "four_bar.urdf").read_text()
    ball = ('<collision><origin xyz="0.21 0 0" rpy="0 0 0"/><geometry><sphere radius="0.03"/></geometry>'
            '</collision>')
    model = engine.load_urdf_string(src.replace('<link name="coupler">', '<link name="coupler">' + ball, 1),
                                    filename=str(ASSETS / "four_bar_ball.urdf"))
    q0, v0 = catalog.initial_state(catalog.load_model("four_bar"))

    def make():       # the ball's centre swings between z = 0.52 and 0.69 m: the ground cuts its path
        return Simulator(model, dt=1e-3, q=q0, v=v0, integrator="semi_implicit_euler",
                         ground=Ground(height=0.54, friction=0.5))
    a, b = _python_twin(make)
    python_steps = []
    step_once = a._step_once
    a._step_once = lambda: (python_steps.append(a.t), step_once())
    a.step(2000)
    for _ in range(2000):
        b.step()
    assert not python_steps
    assert a.contact_stats["steps"] == b.contact_stats["steps"] > 1000
    assert len(a.contacts) == len(b.contacts) == 1              # the ball rests on the ground
    assert a.loop_projections == b.loop_projections
    assert np.abs(a.q - b.q).max() < 1e-9 and np.abs(a.v - b.v).max() < 1e-7
    assert np.abs(a.lam - b.lam).max() < 1e-6 * max(1.0, np.abs(b.lam).max())
    assert np.abs(a.contacts[0].force - b.contacts[0].force).max() < 1e-6 * np.abs(b.contacts[0].force).max()
    assert abs(a.work - b.work) < 1e-9 and abs(a.dissipated - b.dissipated) < 1e-9
    assert b.dissipated > 0.1                                   # the impacts took energy


def test_limits_can_be_switched_off():
    pend = _load("contact_pendulum.urdf", floating=False)
    sim = Simulator(pend, dt=1e-3, q=[0.0], v=[3.0], joint_limits=False)
    sim.step(1000)
    assert sim.q[0] > 0.6


def test_bad_settings_are_named():
    with pytest.raises(ValueError, match="friction"):
        Ground(friction=-1)
    with pytest.raises(ValueError, match="normal"):
        Ground(normal=(0, 0, 0))
    with pytest.raises(ValueError, match="restitution"):
        Ground(restitution=2)
    pend = _load("contact_pendulum.urdf", floating=False)
    with pytest.raises(ValueError, match="ground"):
        Simulator(pend, ground="floor", joint_limits=True)
    with pytest.raises(ValueError, match="joint_limits"):
        Simulator(pend, joint_limits="yes")


# ------------------------------------------------------------------ robots
def _stand_and_release(model, hold_s=10.0, release_s=4.0):
    q, v = catalog.initial_state(model)
    sim = Simulator(model, dt=1e-3, q=q, v=v, ground=Ground(), joint_limits=True)
    base = model.joints[0]
    sim.prescribed[base.nv:] = True                  # every joint held still, the base free
    z0 = sim.q[2]
    dz, pen = 0.0, 0.0
    for _ in range(int(hold_s / sim.dt)):
        sim.step()
        dz = max(dz, abs(sim.q[2] - z0))
        pen = max([pen] + [c.penetration for c in sim.contacts])
    assert np.all(np.isfinite(sim.q)) and np.all(np.isfinite(sim.v))
    assert dz < 5e-3
    assert pen < 3e-3
    assert sim.contacts
    sim.prescribed[:] = False                        # released: it falls
    for _ in range(int(release_s / sim.dt)):
        sim.step()
        pen = max([pen] + [c.penetration for c in sim.contacts])
    assert np.all(np.isfinite(sim.q))
    assert sim.q[2] < z0 - 0.05                      # it fell
    assert sim.energy()[0] < 1e-2, sim.energy()     # and came to rest
    assert sim.contacts
    return sim


def test_humanoid_stands_held_then_falls_and_rests():
    model = catalog.load_model("humanoid")
    # the shipped URDF gives only its feet <collision> shapes; to come to rest after a fall the
    # whole body must touch the ground, so its visual shapes collide too
    model.collisions = list(model.collisions) + [s for s in model.visuals if s.body != 0]
    _stand_and_release(model, release_s=5.0)


def test_talos_stands_held_then_falls_and_rests():
    if catalog.example_robot_data_dir() is None:
        pytest.skip("example-robot-data is not installed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        talos = catalog.load_model("talos")
    _stand_and_release(talos)


def test_quadruped_stands_with_pd_held_joints():
    model = catalog.load_model("quadruped")
    q0, v0 = catalog.initial_state(model)
    sim = Simulator(model, dt=1e-3, q=q0, v=v0, ground=Ground(), joint_limits=True)
    kp, kd = 80.0, 2.0

    def pd(t, q, v):
        tau = np.zeros(model.nv)
        tau[6:] = kp * (q0[7:] - q[7:]) - kd * v[6:]
        return None, tau
    sim.controller = pd
    zs = []
    for _ in range(10000):
        sim.step()
        zs.append(sim.q[2])
    assert np.all(np.isfinite(sim.q))
    assert abs(zs[-1] - q0[2]) < 0.03                # standing, sagging a little on its PD springs
    assert np.ptp(zs[-2000:]) < 1e-4                 # and still
    assert len(sim.contacts) == 4
    assert abs(sum(c.force[2] for c in sim.contacts) - model.mass * G) < 1e-3 * model.mass * G


# ------------------------------------------------------------------ standing start poses
def test_floating_robots_start_standing_on_the_ground():
    from engine.contact.geometry import ContactGeometry
    from engine.algorithms.api import _world_poses
    names = ["humanoid", "quadruped"]
    if catalog.example_robot_data_dir() is not None:
        names += ["talos", "solo12"]
    for name in names:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = catalog.load_model(name)
        q, _ = catalog.initial_state(model)
        low = ContactGeometry(model).lowest(_world_poses(model, q))
        assert abs(low) < 1e-12, name
    if catalog.example_robot_data_dir() is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            talos = catalog.load_model("talos")
        q, _ = catalog.initial_state(talos)
        assert abs(q[talos.q_slice("leg_left_4_joint")][0] - 0.859395) < 1e-12   # talos.srdf half_sitting knee


def test_fixed_base_robots_start_within_their_limits():
    for name in ["double_pendulum", "arm7", "panda"]:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = catalog.load_model(name)
        except engine.ModelError:
            continue
        q, _ = catalog.initial_state(model)
        for j in model.joints:
            if j.kind in ("revolute", "prismatic"):
                assert j.lower[0] - 1e-12 <= q[j.idx_q] <= j.upper[0] + 1e-12, (name, j.name)


# ------------------------------------------------------------------ against MuJoCo
def test_standing_box_forces_match_mujoco():
    mujoco = pytest.importorskip("mujoco")
    xml = """<mujoco><option timestep="0.001" gravity="0 0 -9.81"/>
      <worldbody><geom type="plane" size="5 5 0.1" friction="0.8 0 0"/>
        <body pos="0.0 0 0.1"><freejoint/><inertial pos="0 0 0" mass="2" diaginertia="0.0217 0.0333 0.0417"/>
          <geom type="box" size="0.2 0.15 0.1" friction="0.8 0 0"/></body></worldbody></mujoco>"""
    mm = mujoco.MjModel.from_xml_string(xml)
    md = mujoco.MjData(mm)
    for _ in range(2000):
        mujoco.mj_step(mm, md)
    mj = []                                            # (point, force on the box) per contact
    f6 = np.zeros(6)
    for i in range(md.ncon):
        mujoco.mj_contactForce(mm, md, i, f6)
        frame = md.contact[i].frame.reshape(3, 3)
        f = frame.T @ f6[:3]
        mj.append((md.contact[i].pos.copy(), f if f[2] > 0 else -f))

    box = _load("contact_box.urdf")
    q = box.neutral()
    q[2] = 0.1
    sim = Simulator(box, dt=1e-3, q=q, ground=Ground(friction=0.8), joint_limits=True)
    sim.step(2000)
    assert len(sim.contacts) == len(mj) == 4
    assert np.allclose(sum(c.force for c in sim.contacts), [0, 0, 2 * G], atol=1e-9)
    for c in sim.contacts:                             # corner by corner: a quarter of the weight each
        p, f = min(mj, key=lambda pf: np.linalg.norm(pf[0][:2] - c.point[:2]))
        assert np.linalg.norm(p[:2] - c.point[:2]) < 1e-6
        assert np.allclose(c.force, f, rtol=0, atol=1e-3 * G)
        assert np.allclose(c.force, [0, 0, 2 * G / 4], atol=1e-9)   # no internal friction loops


def test_limits_compose_with_a_closed_loop():
    """The slider-crank driven by a crank torque runs its crank onto its +-2 pi limit: the crank
    stops there, the loop stays closed (its multipliers absorb the limit impulse) and no joint
    passes a limit. The loop brings the rod onto its -2 pi limit at the same moment, so the
    stopping torque may sit on either limit (how it splits is statically indeterminate)."""
    from loop_models import limited
    m = limited("slider_crank")       # the shipped crank turns freely: limited to +-2 pi here
    q, v = catalog.initial_state(m)
    sim = Simulator(m, dt=1e-3, q=q, v=v, joint_limits=True)
    sim.tau_cmd[m.v_slice("crank")] = 2.0
    worst, over, on_limit = 0.0, 0.0, 0
    for _ in range(3000):
        sim.step()
        worst = max(worst, sim.constraint_residual())
        for j in m.joints:
            x = sim.q[j.idx_q]
            over = max(over, j.lower[0] - x, x - j.upper[0])
        on_limit += bool(np.any(sim.limit_forces[[m.joint("crank").idx_v, m.joint("rod").idx_v]] != 0.0))
    assert on_limit > 100
    assert worst <= sim.loop_tolerance
    assert over <= 1e-6
    assert sim.lam.shape == (2,) and np.all(np.isfinite(sim.lam))
    # at rest against the limit: gravity = applied torque + limit torques + loop forces A^T lambda
    assert abs(sim.v).max() < 1e-6
    _, A, _, _ = engine.constraint_system(m, sim.q_prev, sim.v_prev)
    balance = sim.tau_cmd + sim.limit_forces + A.T @ sim.lam - engine.gravity_forces(m, sim.q_prev)
    assert np.abs(balance).max() < 1e-6


def test_fast_ball_does_not_pass_through_the_ground():
    """40 m/s downwards, 2.5 cm above the ground: it covers 4 cm a step, more than the contact
    margin; the smooth step that would cross the plane is redone as a contact step."""
    ball = _load("contact_sphere.urdf")
    q = ball.neutral()
    q[2] = 0.125
    sim = Simulator(ball, dt=1e-3, q=q, v=[0, 0, 0, 0, 0, -40.0], ground=Ground(), joint_limits=True)
    low = np.inf
    for _ in range(200):
        sim.step()
        low = min(low, sim.q[2])
    assert low > 0.1 - 1e-4
    assert abs(sim.q[2] - 0.1) < 1e-4 and abs(sim.v).max() < 1e-6


def test_impact_losses_are_counted_so_the_energy_balance_stays_flat():
    """The impulses' losses go into sim.dissipated (impulse times the mean of the row's velocity
    before and after the step): a box dropped inelastically dissipates m g h, and the shipped
    humanoid, released on the ground, falls onto its segments, comes to rest, and its energy balance
    moves by less than 0.1 % of the energy it lost (without the term: by all of it)."""
    box = _load("contact_box.urdf")
    q = box.neutral()
    q[2] = 0.5 + 0.05                                    # 0.5 m above the ground (box half height 0.05)
    sim = Simulator(box, dt=1e-3, q=q, ground=Ground(friction=0.8, restitution=0.0))
    b0, (_, pe0) = sim.energy_balance(), sim.energy()
    sim.step(1500)
    drop = pe0 - sim.energy()[1]
    assert abs(sim.v).max() < 1e-9 and drop > 0.4 * box.mass * G     # fell about 0.5 m, at rest
    # to first order in h: the impact step also takes gravity's impulse m g h at the mean speed
    # (0.03 J of 8.8 J here at 1 ms)
    assert sim.dissipated == pytest.approx(drop, rel=5e-3)
    assert abs(sim.energy_balance() - b0) < 5e-3 * drop

    m = catalog.load_model("humanoid")
    q, v = catalog.initial_state(m)
    sim = Simulator(m, dt=1e-3, q=q, v=v, ground=Ground())
    b0, (_, pe0) = sim.energy_balance(), sim.energy()
    sim.step(3000)
    ke, pe = sim.energy()
    assert pe0 - pe > 100.0 and ke < 1e-3                   # it fell over and lies still
    assert engine.body_poses(m, sim.q)[:, 2, 3].min() > 0.0  # on the ground, not through it
    assert abs(sim.energy_balance() - b0) < 1e-3 * (pe0 - pe)
    assert sim.dissipated == pytest.approx(pe0 - pe, rel=1e-3)   # no actuator: all of it was lost
