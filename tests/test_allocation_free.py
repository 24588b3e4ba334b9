"""The compiled step loop allocates nothing per step (README: "allocation-free"): numba's runtime
counts every array it allocates; a call of Simulator.step(n) allocates its scratch once, so the
count of a 300-step call equals that of a 10-step call. Covered: trees and closed loops (the
constrained dynamics and the drift projection inside the loop) with every integrator. Not covered:
the contact step (engine/contact/step.py), which allocates its per-step candidate arrays."""
import pytest
from numba.core.runtime import _nrt_python as nrt, rtsys

import engine
from engine import catalog


@pytest.fixture
def counting():
    was = nrt.memsys_stats_enabled()
    nrt.memsys_enable_stats()
    yield lambda: rtsys.get_allocation_stats().alloc
    if not was:
        nrt.memsys_disable_stats()


@pytest.mark.parametrize("name", ["double_pendulum", "four_bar", "slider_crank", "closed_chain_leg", "rolling_disk"])
@pytest.mark.parametrize("integrator", engine.INTEGRATORS)
def test_a_step_allocates_nothing(counting, name, integrator):
    model = catalog.load_model(name)
    q0, v0 = catalog.initial_state(model)
    sim = engine.Simulator(model, dt=1e-3, integrator=integrator, q=q0, v=v0, joint_limits=False)
    python_steps = []
    step_once = sim._step_once
    sim._step_once = lambda: (python_steps.append(sim.t), step_once())
    sim.step(5)
    counts = []
    for n in (10, 300):
        before = counting()
        sim.step(n)
        counts.append(counting() - before)
    assert not python_steps, f"{name}: steps taken in Python at t = {python_steps[:3]}"
    assert counts[0] > 0            # the counter counts (each call allocates its scratch once)
    assert counts[1] == counts[0], f"{name} {integrator}: {counts[1] - counts[0]} allocations in 290 more steps"
    if name == "rolling_disk" and integrator != "rk4":
        assert sim.loop_projections > 300     # it drifts past the tolerance every step: projected in the loop
