"""Simulation: energy conservation per integrator, Lie-group integration of a free body, inputs
that change every step, prescribed joints, damping, and divergence with the last good state."""
import numpy as np
import pytest

import engine
from engine import ModelBuilder, Revolute, Free, Spherical, Inertia, pose


def double_pendulum(damping=0.0):
    b = ModelBuilder("double_pendulum")
    I3 = np.diag([0.0842, 0.0842, 0.0017])   # a 1 kg, 1 m rod of radius 5.8 cm about its centre
    b.add_body("link1", "world", Revolute((0, 1, 0)), pose(p=(0, 0, 2.0)), Inertia(1.0, (0, 0, -0.5), I3),
               damping=damping)
    b.add_body("link2", "link1", Revolute((0, 1, 0)), pose(p=(0, 0, -1.0)), Inertia(1.0, (0, 0, -0.5), I3),
               damping=damping)
    return b.build()


def total_energy(sim):
    return sum(sim.energy())


def max_drift(model, integrator, seconds=10.0, dt=1e-3):
    sim = engine.Simulator(model, dt=dt, integrator=integrator, q=[1.2, -0.6])
    E0 = total_energy(sim)
    drift = 0.0
    for _ in range(int(round(seconds / dt / 100))):
        sim.step(100)
        drift = max(drift, abs(total_energy(sim) - E0) / abs(E0))
    assert sim.t == pytest.approx(seconds)
    return drift


def test_double_pendulum_energy_drift_ordering():
    model = double_pendulum()
    rk4 = max_drift(model, "rk4")
    semi = max_drift(model, "semi_implicit_euler")
    euler = max_drift(model, "euler")
    print(f"relative energy drift over 10 s at dt = 1 ms: rk4 {rk4:.2e}, semi-implicit {semi:.2e}, euler {euler:.2e}")
    assert rk4 <= 1e-6
    assert rk4 < semi < euler


def test_free_body_spinning_about_the_intermediate_axis():
    b = ModelBuilder("tumbling_box", gravity=(0, 0, 0))
    I = np.diag([0.1, 0.2, 0.3])
    b.add_body("box", "world", Free(), None, Inertia(2.0, (0, 0, 0), I))
    model = b.build()
    w0 = np.array([0.01, 3.0, 0.01])
    sim = engine.Simulator(model, dt=1e-3, integrator="rk4", v=np.r_[w0, 0.2, 0.0, 0.0])
    E0 = total_energy(sim)

    def world_momentum(sim):
        R = engine.forward_kinematics(model, sim.q)["box"][:3, :3]
        return R @ (I @ sim.v[:3])

    L0 = world_momentum(sim)
    flipped = False
    worst_norm = 0.0
    for _ in range(1000):
        sim.step(100)
        worst_norm = max(worst_norm, abs(np.linalg.norm(sim.q[3:7]) - 1.0))
        flipped |= sim.v[1] < -2.5
    assert sim.t == pytest.approx(100.0)
    assert flipped, "the intermediate-axis rotation must be unstable (the body flips)"
    assert abs(total_energy(sim) - E0) / E0 <= 1e-3
    assert worst_norm <= 1e-12
    # the world angular momentum is conserved too: this checks the configuration integration
    assert np.linalg.norm(world_momentum(sim) - L0) / np.linalg.norm(L0) < 1e-4


def test_ball_joint_top_keeps_unit_quaternion_and_energy():
    b = ModelBuilder("top")
    b.add_body("top", "world", Spherical(), pose(p=(0, 0, 0)),
               Inertia(1.0, (0, 0, 0.3), np.diag([0.02, 0.02, 0.03])))
    model = b.build()
    q0 = engine.integrate(model, model.neutral(), np.array([0.3, 0.0, 0.0]))
    sim = engine.Simulator(model, dt=1e-3, integrator="rk4", q=q0, v=[0, 0, 40.0])
    E0 = total_energy(sim)
    sim.step(5000)
    assert abs(np.linalg.norm(sim.q) - 1.0) < 1e-12
    assert abs(total_energy(sim) - E0) / E0 < 1e-7


def test_inputs_change_every_step_and_prescribed_joint_follows():
    model = double_pendulum()
    sim = engine.Simulator(model, dt=1e-3, integrator="rk4")
    sim.set_mode("link1_joint", "acceleration")
    assert sim.mode("link1_joint") == "acceleration" and sim.mode("link2_joint") == "torque"
    calls = []

    def controller(t, q, v):
        calls.append(t)
        return np.array([np.cos(t), 0.0]), np.array([0.0, 0.1 * np.sin(5 * t)])

    sim.controller = controller
    sim.step(2000)
    assert len(calls) == 2000
    # joint 1 follows ddq = cos t from rest: q = 1 - cos t (to the step's hold error)
    assert sim.q[0] == pytest.approx(1 - np.cos(sim.t), abs=2e-3)
    # the torque reported for the prescribed joint is the one inverse dynamics predicts
    tau_id = engine.inverse_dynamics(model, sim.q_prev, sim.v_prev, sim.a)
    assert sim.tau[0] == pytest.approx(tau_id[0], rel=1e-9, abs=1e-12)
    assert sim.tau[1] == pytest.approx(0.1 * np.sin(5 * (sim.t - sim.dt)))


def test_damping_dissipates_energy():
    model = double_pendulum(damping=0.5)
    sim = engine.Simulator(model, dt=1e-3, integrator="rk4", q=[1.0, 0.0])
    E0 = total_energy(sim)
    sim.step(3000)
    assert total_energy(sim) < E0 - 0.1


def test_divergence_keeps_last_good_state():
    model = double_pendulum()
    sim = engine.Simulator(model, dt=1e-3, integrator="euler", q=[0.3, 0.2])
    sim.step(10)
    sim.tau_cmd = np.array([0.0, 1e16])   # an absurd torque blows the state up in one step
    q_good, v_good, t_good = sim.q.copy(), sim.v.copy(), sim.t
    with pytest.raises(engine.SimulationDiverged) as info:
        sim.step(5)
    err = info.value
    assert err.t == pytest.approx(t_good)
    np.testing.assert_array_equal(err.q, q_good)
    np.testing.assert_array_equal(err.v, v_good)
    np.testing.assert_array_equal(sim.q, q_good)
    assert "joint '" in err.coordinate and "smaller time step" in str(err)


def test_nan_input_is_refused_not_integrated():
    model = double_pendulum()
    sim = engine.Simulator(model, dt=1e-3)
    sim.tau_cmd = np.array([np.nan, 0.0])
    with pytest.raises(ValueError, match="tau"):
        sim.step()
    assert sim.t == 0.0 and np.all(np.isfinite(sim.q))


def test_bad_simulator_arguments():
    model = double_pendulum()
    with pytest.raises(ValueError, match="integrator"):
        engine.Simulator(model, integrator="leapfrog")
    with pytest.raises(ValueError, match="dt"):
        engine.Simulator(model, dt=-1)
    with pytest.raises(ValueError, match="expected 2, got 3"):
        engine.Simulator(model, q=[0, 0, 0])
