"""Simulator.evaluate(): the hybrid dynamics of the current state and inputs without stepping, the
same a, tau, lambda the next step computes at its start (what the app's paused readouts show)."""
import numpy as np
import pytest

import engine
from engine.catalog import load_model, initial_state


@pytest.mark.parametrize("name, prescribe", [("double_pendulum", None), ("double_pendulum", "joint1"),
                                             ("four_bar", None)])
def test_evaluate_is_what_the_next_step_computes(name, prescribe):
    model = load_model(name)
    q0, v0 = initial_state(model)
    sim = engine.Simulator(model, dt=1e-3, q=q0, v=v0 + 0.3 * (np.arange(model.nv) % 2))
    sim.project()
    if prescribe:
        sim.set_mode(prescribe, "acceleration")
        sim.a_cmd[model.v_slice(prescribe)] = 1.5
    q, v, t = sim.q.copy(), sim.v.copy(), sim.t
    a, tau = sim.evaluate()
    a, tau, lam = a.copy(), tau.copy(), np.array(sim.lam)
    assert np.array_equal(sim.q, q) and np.array_equal(sim.v, v) and sim.t == t and sim.steps == 0
    assert np.array_equal(sim.q_prev, q) and np.array_equal(sim.v_prev, v)
    if prescribe:
        assert a[model.v_slice(prescribe)] == pytest.approx(1.5) and abs(tau[model.v_slice(prescribe)][0]) > 0.1
    if model.constraints:
        assert len(lam) == sum(c.rows for c in model.constraints) and np.abs(lam).max() > 1e-3
    sim.step(1)
    np.testing.assert_allclose(sim.a, a, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(sim.tau, tau, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(sim.lam, lam, rtol=1e-9, atol=1e-9)
    if not prescribe and not model.constraints:
        np.testing.assert_allclose(a, engine.forward_dynamics(model, q, v, np.zeros(model.nv)), rtol=1e-12)
