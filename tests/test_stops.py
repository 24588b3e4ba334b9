"""Joint stops (issue 31): known answers.

- an acceleration-prescribed joint is stopped by its limit (the stop wins, ``sim.blocked`` says
  so, ``sim.limit_forces`` holds the torque the stop exerts) and follows its prescription again
  once that points away from the stop;
- no step tunnels through a stop, whatever the acceleration and dt;
- a joint started past its stop comes back into its range, without gaining energy.

Bodies: tests/data/contact_pendulum.urdf (1 kg bob 1 m from a y-axis hinge, stops at +-0.5 rad;
gravity's torque on the hinge is g cos q: it pulls onto the +0.5 stop, and past -pi/2 outwards),
assets/arm7.urdf (joint1 +-2.8973 rad, joint4 -3.0718 .. -0.0698 rad).
"""
import math
import os
import pathlib

import numpy as np
import pytest

import engine
from engine import Simulator
from conftest import compiled_steps

DATA = os.path.join(os.path.dirname(__file__), "data")
ASSETS = pathlib.Path(__file__).resolve().parent.parent / "assets"
STOP = 0.5


def _pendulum():
    return engine.load_urdf(os.path.join(DATA, "contact_pendulum.urdf"), floating_base=False)


def _arm7():
    return engine.load_urdf(str(ASSETS / "arm7.urdf"), floating_base=False)


def _python(sim, a=None, tau=None):
    """Step sim through the Python step (a control callback giving the same inputs)."""
    sim.set_control(lambda t, q, v: (a, tau))
    return sim


def _energy(sim):
    ke, pe = sim.energy()
    return ke + pe


# ------------------------------------------------------------------ prescribed joints meet their stops
@pytest.mark.parametrize("path", ["compiled", "python"])
def test_prescribed_hinge_is_held_at_its_stop(path):
    """a = 10 rad/s^2 prescribed towards the +0.5 rad stop (reached at t = sqrt(0.1) = 0.316 s;
    it used to run on to q = 20 rad in 2 s). Held there: q never passes 0.5 + 1e-3, blocked while
    the prescription pushes, the motor keeps ID(q, 0, a) and the stop exerts the rest:
    tau_limit = ID(q, 0, 0) - ID(q, 0, a) = -M a (M = 1.001 kg m^2: -10.01 N m). With the
    prescription reversed the joint leaves the stop at once, at -10 rad/s^2."""
    pend = _pendulum()
    sim = Simulator(pend, dt=1e-3, q=[0.0], joint_limits=True)
    sim.set_mode("hinge", "acceleration")
    a = 10.0
    sim.a_cmd[:] = a
    if path == "python":
        _python(sim, a=np.array([a]))
    worst, first_blocked = -1.0, None
    for k in range(1000):
        sim.step()
        worst = max(worst, sim.q[0])
        if sim.blocked[0] and first_blocked is None:
            first_blocked = sim.t
    assert worst <= STOP + 1e-3
    assert first_blocked is not None and abs(first_blocked - math.sqrt(2 * STOP / a)) < 0.01
    assert sim.blocked.shape == (1,) and sim.blocked.dtype == bool and sim.blocked[0]
    assert abs(sim.q[0] - STOP) < 1e-9 and abs(sim.v[0]) < 1e-9
    q = sim.q.copy()
    id_push = engine.inverse_dynamics(pend, q, np.zeros(1), np.array([a]))
    id_held = engine.inverse_dynamics(pend, q, np.zeros(1), np.zeros(1))
    assert abs(sim.limit_forces[0] - (id_held[0] - id_push[0])) < 1e-6
    assert abs(sim.limit_forces[0] + 1.001 * a) < 1e-6
    assert abs(sim.tau[0] - id_push[0]) < 1e-6                     # the motor, as prescribed
    # the prescription turns away from the stop: followed again at once
    sim.a_cmd[:] = -a
    if path == "python":
        _python(sim, a=np.array([-a]))
    sim.step(100)
    assert not sim.blocked[0] and sim.limit_forces[0] == 0.0
    assert abs(sim.v[0] + a * 0.1) < 1e-9
    assert abs(sim.q[0] - (STOP - 0.5 * a * 0.1 ** 2)) < 2e-3


def test_prescribed_hinge_blocked_by_a_far_stop_in_one_step():
    """a = 3e4 rad/s^2 prescribed at dt 0.01: one step would carry it 1.5 rad, three times past
    the stop; it lands on the stop and stays there."""
    sim = Simulator(_pendulum(), dt=1e-2, q=[0.0], joint_limits=True)
    sim.set_mode("hinge", "acceleration")
    sim.a_cmd[:] = 3e4
    worst = 0.0
    for _ in range(50):
        sim.step()
        worst = max(worst, sim.q[0])
    assert worst <= STOP + 1e-3
    assert abs(sim.q[0] - STOP) < 1e-9 and sim.blocked[0]


def test_prescribed_sine_stays_inside_its_limits_and_follows_again():
    """arm7 joint1 (stops +-2.8973 rad) driven by the sine law of amplitude 3 rad at 0.5 Hz: it
    used to pass its stops. It stays within them, is held (blocked) while the sine is beyond, and
    tracks the sine again after it turns back."""
    arm = _arm7()
    laws = engine.InputLaws(arm)
    laws.set("joint1", "acceleration", "sine", amplitude=3.0, frequency=0.5)
    sim = Simulator(arm, dt=1e-3, joint_limits=True)
    sim.inputs = laws
    iq, iv = arm.joint("joint1").idx_q, arm.joint("joint1").idx_v
    hi = arm.joint("joint1").upper[0]
    w = 2 * math.pi * 0.5
    worst, blocked_at, err_late = 0.0, [], 0.0
    for k in range(2000):
        sim.step()
        worst = max(worst, abs(sim.q[iq]))
        if sim.blocked[iv]:
            blocked_at.append(sim.t)
        if 0.9 <= sim.t <= 1.3:             # the sine back within the range since t = 0.58 s
            err_late = max(err_late, abs(sim.q[iq] - 3.0 * math.sin(w * sim.t)))
    assert worst <= hi + 1e-3
    assert blocked_at, "never blocked"
    t_in = math.asin(hi / 3.0) / w          # the sine passes the stop at 0.417 s and is back at 0.583 s
    # held only while the sine is beyond a stop (0.417 .. 0.583 s at the upper, 1.417 .. 1.583 s
    # at the lower), give or take the tracking law's lag
    b = np.array(blocked_at)
    assert np.all(((b >= t_in - 0.02) & (b <= 1.0 - t_in + 0.05)) | ((b >= 1.0 + t_in - 0.02) & (b <= 2.0 - t_in + 0.05)))
    assert np.any(b < 1.0) and np.any(b > 1.0)
    assert err_late < 0.05


# ------------------------------------------------------------------ no tunnelling
@pytest.mark.parametrize("dt", [1e-2, 1e-3, 1e-4])
@pytest.mark.parametrize("path", ["compiled", "python"])
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_a_huge_torque_does_not_tunnel_through_the_stop(dt, path, sign):
    """A torque giving 3e4 rad/s^2 from rest at q = 0: at dt 0.01 one step covers 1.5 rad (it
    ended 2.5 rad past the 0.5 rad stop). Never more than 1e-3 rad past, at rest on the stop."""
    pend = _pendulum()
    sim = Simulator(pend, dt=dt, q=[0.0], joint_limits=True)
    tau = sign * 3e4 * 1.001
    sim.tau_cmd[:] = tau
    if path == "python":
        _python(sim, tau=np.array([tau]))
    worst = 0.0
    for _ in range(int(round(0.1 / dt))):
        sim.step()
        worst = max(worst, sign * sim.q[0])
    assert worst <= STOP + 1e-3
    assert abs(sim.q[0] - sign * STOP) < 1e-6
    assert abs(sim.limit_forces[0] + tau - engine.gravity_forces(pend, sim.q)[0]) < 1e-6 * abs(tau)


# ------------------------------------------------------------------ started past a stop
@pytest.mark.parametrize("dt", [1e-3, 1e-2])
@pytest.mark.parametrize("path", ["compiled", "python"])
def test_a_joint_started_past_its_stop_comes_back(dt, path):
    """q = -2.5 rad: 2 rad past the -0.5 rad stop, beyond the top (q = -pi/2, bob 3 m high), where
    gravity pushes it farther out (it used to be held there). Back within the range in well under
    1 s, never out again. The return moves the position only (no speed given): the energy never
    exceeds the bob's weight at the top of its way back, m g 3 m = 29.43 J (it starts at 25.49 J),
    and from the moment it is back it never rises (inelastic stops, gravity)."""
    pend = _pendulum()
    sim = Simulator(pend, dt=dt, q=[-2.5], joint_limits=True)
    if path == "python":
        _python(sim)
    e0 = _energy(sim)
    back, e_max, e_back, rise, out_after = None, e0, None, 0.0, 0.0
    for _ in range(int(round(1.0 / dt))):
        sim.step()
        e = _energy(sim)
        e_max = max(e_max, e)
        if back is None and sim.q[0] >= -STOP - 1e-6:
            back, e_back, balance_back = sim.t, e, sim.energy_balance()
        elif back is not None:
            out_after = max(out_after, -STOP - sim.q[0], sim.q[0] - STOP)
            rise = max(rise, e - e_back)
    assert back is not None and back <= 0.5
    assert out_after <= 1e-6
    assert e_max <= 9.81 * 3.0 + 1e-9
    assert rise <= 1e-6 * e0
    # the account stays closed to the first order of the stops' steps (0.004 J when back and
    # 0.014 J after 1 s at dt 1 ms; 0.04 J and 0.13 J at 10 ms)
    assert abs(balance_back - e0) < 5.0 * dt
    assert abs(sim.energy_balance() - e0) < 20.0 * dt


@pytest.mark.parametrize("path", ["compiled", "python"])
def test_the_return_from_past_a_stop_moves_the_position_only_and_books_its_energy(path):
    """Held past its stop by a torque pushing outwards (-50 N m at q = -2.5 rad): the return
    gives no speed (v stays 0: the stop's row holds it), the joint ends on the stop, and the
    energy the move changes is booked in dissipated: energy_balance() unchanged to round-off."""
    pend = _pendulum()
    sim = Simulator(pend, dt=1e-3, q=[-2.5], joint_limits=True)
    sim.tau_cmd[:] = -50.0
    if path == "python":
        _python(sim, tau=np.array([-50.0]))
    b0 = sim.energy_balance()
    vmax = 0.0
    for _ in range(500):
        sim.step()
        vmax = max(vmax, abs(sim.v[0]))
    assert vmax < 1e-12
    assert abs(sim.q[0] + STOP) < 1e-12
    assert abs(sim.energy_balance() - b0) < 1e-9
    # the move's whole energy change: the bob's height from -2.5 to -0.5 rad, 1.168 J down (over the top)
    drop = engine.potential_energy(pend, np.array([-2.5])) - engine.potential_energy(pend, np.array([-STOP]))
    assert abs(drop - 9.81 * (math.sin(2.5) - math.sin(0.5))) < 1e-9
    assert abs(sim.dissipated - drop) < 1e-9


def test_arm7_joint_set_far_past_its_stop_comes_back():
    """A lesson set arm7 joint4 (-3.0718 .. -0.0698 rad) to 50 rad and it stayed at 47.1 rad. It is
    back within its range within 1 s, and the arm's energy stays bounded by its start."""
    arm = _arm7()
    q = arm.neutral()
    j = arm.joint("joint4")
    q[j.idx_q] = 50.0
    sim = Simulator(arm, dt=1e-3, q=q, joint_limits=True)
    e0 = _energy(sim)
    e_max = e0
    for _ in range(1000):
        sim.step()
        e_max = max(e_max, _energy(sim))
    assert j.lower[0] - 1e-6 <= sim.q[j.idx_q] <= j.upper[0] + 1e-6
    for jj in arm.joints:
        if jj.nv == 1 and np.isfinite(jj.lower[0]):
            assert jj.lower[0] - 1e-6 <= sim.q[jj.idx_q] <= jj.upper[0] + 1e-6
    assert e_max <= e0 + 1.0 + 1e-6 * abs(e0)


# ------------------------------------------------------------------ restitution of the stops
def _rebound_turn(e, v0=3.0):
    """Where the pendulum turns after bouncing off its +0.5 rad stop: it arrives at V with
    1/2 M V^2 = 1/2 M v0^2 + m g (sin 0.5 - sin 0) (M = 1.001 kg m^2, m g r = 9.81 N m), leaves at
    e V and climbs until 1/2 M (e V)^2 = m g (sin 0.5 - sin q_turn)."""
    M, mgr = 1.001, 9.81
    V2 = v0 * v0 + 2.0 * mgr * math.sin(STOP) / M
    return math.asin(math.sin(STOP) - 0.5 * M * e * e * V2 / mgr)


@pytest.mark.parametrize("e", [0.5, 0.8])
@pytest.mark.parametrize("dt", [1e-3, 1e-4])
@pytest.mark.parametrize("path", ["compiled", "python"])
def test_limit_restitution_acts_on_the_speed_of_arrival(e, dt, path):
    """limit_restitution = e: Newton's law on the joint speed with which the joint reaches its
    stop (as the ground's restitution), not on the d/h the speculative row lands it with. The
    pendulum from q = 0 at 3 rad/s onto its +0.5 rad stop turns back at q_turn (0.2473 rad for
    e = 0.5, -0.1216 rad for e = 0.8)."""
    pend = _pendulum()
    sim = Simulator(pend, dt=dt, q=[0.0], v=[3.0], joint_limits=True)
    sim.limit_restitution = e
    if path == "python":
        _python(sim)
    worst, bounced, turn = 0.0, False, None
    for _ in range(int(round(0.6 / dt))):
        sim.step()
        worst = max(worst, sim.q[0])
        if sim.v[0] < 0.0:
            bounced = True
        elif bounced and turn is None:
            turn = sim.q[0]
    assert worst <= STOP + 1e-9
    assert turn is not None
    assert abs(turn - _rebound_turn(e)) < 2e-4        # 3e-5 rad at dt 1 ms


def _python_steps_and_reference(make, n):
    """sim = make() run n steps counting its Python steps (the steps the compiled step hands back),
    and a second make() run n steps in the Python step only: (sim, times of its Python steps, ref)."""
    sim, python_steps = make(), []
    step_once = sim._step_once
    sim._step_once = lambda: (python_steps.append(sim.t), step_once())
    sim.step(n)
    with compiled_steps(False):
        ref = make()
        ref.step(n)
    return sim, python_steps, ref


def test_robot_held_by_input_laws_stands_on_the_ground_in_the_compiled_step():
    """The app's standing start: the humanoid's base free on the ground, every other joint held by
    the "hold still" input law (acceleration-prescribed, limits on). The compiled step used to
    decline every step of a law-driven prescribed joint with limits (the stop's override is the
    Python step's), so the standing humanoid ran in Python (RTF ~0.15 in the window). Now the
    compiled step hands back only a step in which a stop overrides a prescription
    (engine.contact.step._stop_overrides, _block's test): here none, and the motion is the Python
    step's to round-off."""
    from engine import catalog
    m = catalog.load_model("humanoid")
    q0, v0 = catalog.initial_state(m)

    def make():
        laws = engine.InputLaws(m)
        for j in m.joints:
            if j.kind != "free":
                laws.set(j.name, "acceleration", "hold", q_now=q0)
        sim = Simulator(m, dt=1e-3, q=q0, v=v0, ground=engine.Ground(), joint_limits=True)
        sim.inputs = laws
        return sim

    sim, python_steps, ref = _python_steps_and_reference(make, 500)
    assert python_steps == [] and sim.steps == 500
    assert sim.contacts, "not standing on the ground"
    assert np.abs(sim.q - ref.q).max() < 1e-9 and np.abs(sim.v - ref.v).max() < 1e-9


def test_compiled_step_hands_a_blocking_step_to_python():
    """arm7 joint1 on a sine past its stops: the steps in which the stop overrides the sine are the
    Python step's (blocked), the others compiled; the motion equals the Python step's."""
    def make():
        arm = _arm7()
        laws = engine.InputLaws(arm)
        laws.set("joint1", "acceleration", "sine", amplitude=3.0, frequency=0.5)
        q = arm.neutral()
        q[arm.joint("joint4").idx_q] = -1.0       # inside its range [-3.07, -0.07] (0 is past its stop)
        sim = Simulator(arm, dt=1e-3, q=q, joint_limits=True)
        sim.inputs = laws
        return sim
    sim, python_steps, ref = _python_steps_and_reference(make, 1000)
    # the sine reaches the stop after 0.417 s: the steps that meet it are Python's, the rest compiled
    assert python_steps and len(python_steps) < 200, len(python_steps)
    assert 0.417 < min(python_steps) and max(python_steps) < 0.6, python_steps
    assert np.abs(sim.q - ref.q).max() < 1e-9 and np.abs(sim.v - ref.v).max() < 1e-9
