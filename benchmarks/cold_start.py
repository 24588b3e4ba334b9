"""Cold start: import the engine and call every public function once, from an empty kernel cache.

    JOINTLAB_CACHE_DIR=$(mktemp -d) /usr/bin/time -v python benchmarks/cold_start.py

The compile happens on the first import and call of each kernel; `time`'s user + sys is the CPU
it costs, its wall time what a user waits on an idle machine with two cores (the kernels compile
one after the other). Run it again with the same cache directory for the warm start.
"""
import time
import warnings

t0 = time.perf_counter()
import numpy as np  # noqa: E402
import engine  # noqa: E402
from engine.catalog import load_model, initial_state  # noqa: E402

t_import = time.perf_counter() - t0
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    dp = load_model("double_pendulum")
    leg = load_model("four_bar")
for m in (dp, leg):
    q, v = initial_state(m)
    x = np.ones(m.nv) * 0.1
    engine.inverse_dynamics(m, q, v, x)
    engine.forward_dynamics(m, q, v, x)
    engine.hybrid_dynamics(m, q, v, np.zeros(m.nv, dtype=bool), x, x)
    engine.mass_matrix(m, q)
    engine.bias_forces(m, q, v)
    engine.gravity_forces(m, q)
    engine.coriolis_matrix(m, q, v)
    engine.kinetic_energy(m, q, v)
    engine.potential_energy(m, q)
    engine.forward_kinematics(m, q)
    engine.jacobian(m, q, m.body_names[-1], "world")
    engine.center_of_mass(m, q)
    engine.body_velocities(m, q, v)
    engine.body_accelerations(m, q, v, x)
    engine.joint_wrenches(m, q, v, x)
    engine.difference(m, q, engine.integrate(m, q, x))
    sim = engine.Simulator(m)
    sim.step(2)
    if m.constraints:
        engine.constrained_forward_dynamics(m, q, v, x)
        engine.constrained_hybrid_dynamics(m, q, v, np.zeros(m.nv, dtype=bool), x, x)
        engine.project_constraints(m, q, v)
        engine.joint_reaction_wrenches(m, q, v, x)
print(f"import engine {t_import:.2f} s; everything called once {time.perf_counter() - t0:.2f} s")
