"""The headless command: `jointlab simulate MODEL --duration S --dt DT --integrator NAME --csv OUT`."""
import subprocess
import sys

import numpy as np
import pytest

import engine
from engine.catalog import load_model, initial_state


def run(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "app", *args], capture_output=True, text=True, timeout=timeout)


def test_simulate_writes_every_step_and_matches_the_engine(tmp_path):
    out = tmp_path / "dp.csv"
    r = run("simulate", "double_pendulum", "--duration", "0.5", "--dt", "0.001", "--integrator", "rk4",
            "--csv", str(out))
    assert r.returncode == 0, r.stderr
    assert "real-time factor" in r.stdout
    assert "100.0%" in r.stderr          # the progress bar reached the end
    header = out.read_text().splitlines()[0].split(",")
    data = np.loadtxt(out, delimiter=",", skiprows=1)
    model = load_model("double_pendulum")
    assert header[0] == "t" and len(header) == 1 + model.nq + 3 * model.nv
    assert data.shape == (500, len(header))
    np.testing.assert_allclose(data[:, 0], np.arange(500) * 1e-3, atol=1e-12)
    # the same run in-process gives the same states (CSV keeps 10 significant digits)
    q0, v0 = initial_state(model)
    sim = engine.Simulator(model, dt=1e-3, integrator="rk4", q=q0, v=v0)
    sim.step(499)
    np.testing.assert_allclose(data[-1, 1:1 + model.nq], sim.q, rtol=1e-8, atol=1e-9)
    # a and tau columns: tau zero (passive), a = forward dynamics of the row's state
    q, v = data[7, 1:3], data[7, 3:5]
    np.testing.assert_allclose(data[7, 5:7], engine.forward_dynamics(model, q, v, np.zeros(2)), rtol=1e-7, atol=1e-7)
    np.testing.assert_array_equal(data[:, 7:9], 0.0)


@pytest.mark.parametrize("integrator", ["semi_implicit_euler", "euler"])
def test_simulate_other_integrators(tmp_path, integrator):
    out = tmp_path / "o.csv"
    r = run("simulate", "acrobot", "--duration", "0.2", "--integrator", integrator, "--csv", str(out), "--no-progress")
    assert r.returncode == 0, r.stderr
    assert np.loadtxt(out, delimiter=",", skiprows=1).shape[0] == 200


def test_simulate_a_urdf_path(tmp_path):
    import engine.catalog as cat
    path, _ = cat.find_model("single_pendulum")
    r = run("simulate", str(path), "--duration", "0.1", "--no-progress")
    assert r.returncode == 0, r.stderr
    assert "real-time factor" in r.stdout


def test_unknown_model_is_a_clear_error():
    r = run("simulate", "no_such_robot_xyz", "--duration", "0.1")
    assert r.returncode == 2
    assert "no_such_robot_xyz" in r.stderr and "Traceback" not in r.stderr


def test_bad_arguments_are_refused():
    r = run("simulate", "double_pendulum", "--dt", "-1")
    assert r.returncode == 2 and "positive" in r.stderr
    r = run("simulate", "double_pendulum", "--integrator", "leapfrog")
    assert r.returncode == 2 and "invalid choice" in r.stderr
