"""The headless command: `jointlab simulate MODEL --duration S --dt DT --integrator NAME --csv OUT`,
run for real (a subprocess on this checkout). It starts as the window does (initial state, floating
base held unless --release-base), takes joint modes (--mode) and lessons (--lesson), and its CSV has
the window's columns: energies, constraint forces (lambda, labelled by the constraints' own rows)
and residuals of closed loops."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import engine
from engine.catalog import load_model, initial_state

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(*args, timeout=300):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))   # this checkout
    return subprocess.run([sys.executable, "-m", "app", *args], capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT, env=env)


def read(path):
    from app.sim.recorder import read_csv
    names, data = read_csv(path)
    return names, data, {n: k for k, n in enumerate(names)}


def cols(col, prefix):
    return [k for n, k in col.items() if n.startswith(prefix)]


def simulate_csv(tmp_path, *args, name="out.csv"):
    out = tmp_path / name
    r = run("simulate", *args, "--csv", str(out), "--no-progress")
    assert r.returncode == 0, r.stderr
    return r, read(out)


def test_simulate_writes_every_step_and_matches_the_engine(tmp_path):
    out = tmp_path / "dp.csv"
    r = run("simulate", "double_pendulum", "--duration", "0.5", "--dt", "0.001", "--integrator", "rk4",
            "--csv", str(out))
    assert r.returncode == 0, r.stderr
    assert "real-time factor" in r.stdout
    assert "100.0%" in r.stderr          # the progress bar reached the end
    names, data, col = read(out)
    model = load_model("double_pendulum")
    assert names[:9] == ["t", "q:joint1", "q:joint2", "dq:joint1", "dq:joint2", "ddq:joint1", "ddq:joint2",
                         "tau:joint1", "tau:joint2"]
    for n in ("energy:kinetic", "energy:potential", "energy:total", "energy:work", "energy:balance"):
        assert n in col
    assert not any(n.startswith("lambda") or n.startswith("residual") for n in names)   # a tree: none
    assert data.shape == (500, len(names))
    np.testing.assert_allclose(data[:, 0], np.arange(500) * 1e-3, atol=1e-12)
    # the same run in-process gives the same states (the CSV keeps every digit)
    q0, v0 = initial_state(model)
    np.testing.assert_array_equal(data[0, 1:3], q0)
    sim = engine.Simulator(model, dt=1e-3, integrator="rk4", q=q0, v=v0)
    sim.step(499)
    np.testing.assert_allclose(data[-1, 1:3], sim.q, rtol=1e-12, atol=1e-12)
    # a and tau columns: tau zero (passive), a = forward dynamics of the row's state; the energies of the row
    for k in (0, 7, 321):
        q, v = data[k, 1:3], data[k, 3:5]
        np.testing.assert_allclose(data[k, 5:7], engine.forward_dynamics(model, q, v, np.zeros(2)), rtol=1e-9, atol=1e-9)
        ke, pe = engine.kinetic_energy(model, q, v), engine.potential_energy(model, q)
        assert data[k, col["energy:kinetic"]] == pytest.approx(ke, rel=1e-12)
        assert data[k, col["energy:potential"]] == pytest.approx(pe, rel=1e-12)
        assert data[k, col["energy:total"]] == pytest.approx(ke + pe, rel=1e-12)
    np.testing.assert_array_equal(data[:, 7:9], 0.0)
    # the readout of the window at Reset: ddq = (-22.9, +30.5) at q = (2, 0)
    assert data[0, 5] == pytest.approx(-22.9, abs=0.1) and data[0, 6] == pytest.approx(30.5, abs=0.1)
    # total energy flat (RK4, no damping)
    assert np.ptp(data[:, col["energy:total"]]) < 1e-6


@pytest.mark.parametrize("integrator", ["semi_implicit_euler", "euler"])
def test_simulate_other_integrators(tmp_path, integrator):
    r, (names, data, col) = simulate_csv(tmp_path, "acrobot", "--duration", "0.2", "--integrator", integrator)
    assert data.shape[0] == 200
    assert integrator in r.stdout


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
    r = run("simulate")
    assert r.returncode == 2 and "no model" in r.stderr and "Traceback" not in r.stderr


# ---------------------------------------------------------------------- the window's start
# Two processes may run differently compiled copies of one kernel (numba's in-process JIT of a fresh
# compile vs the object code its cache stores: with fastmath contraction they can round differently), so
# a state computed in another process agrees to the last bit or two, not bit for bit: SAME_START.
SAME_START = dict(rtol=0.0, atol=1e-12)


def _base_z(names, data, col):
    return data[:, col["q:root_joint[2]"]]


def test_on_the_ground_by_default_the_robot_stands_as_in_the_window(tmp_path):
    """As the window: a floating-base robot with collision shapes starts on the ground, base free,
    its joints held; it stands (base height within 5 mm), the ground carries its weight, and the
    CSV has the window's contact columns."""
    model = load_model("quadruped")
    q0, _ = initial_state(model)
    r, (names, data, col) = simulate_csv(tmp_path, "quadruped", "--duration", "0.5", name="stand.csv")
    assert "on the ground" in r.stdout and "standing" in r.stdout
    np.testing.assert_allclose(data[0, 1:1 + model.nq], q0, **SAME_START)
    z = data[:, col["q:root_joint[2]"]]
    assert np.abs(z - z[0]).max() < 5e-3
    assert data[-1, col["contact:total:fz"]] == pytest.approx(model.mass * 9.81, rel=0.05)
    from app.sim.setup import window_start
    setup = window_start(engine, model)
    assert setup.ground and "root_joint" not in setup.inputs
    assert all(setup.inputs[j.name].kind == "hold" for j in model.joints[1:])


def test_floating_base_is_held_as_in_the_window_and_released_on_request(tmp_path):
    """Without the ground (--no-ground) the window holds the floating base; --release-base frees it."""
    model = load_model("quadruped")
    assert model.joints[0].kind == "free" and model.joints[0].name == "root_joint"
    q0, _ = initial_state(model)
    r, (names, held, col) = simulate_csv(tmp_path, "quadruped", "--duration", "0.5", "--no-ground", name="held.csv")
    assert "held" in r.stdout
    np.testing.assert_allclose(held[0, 1:1 + model.nq], q0, **SAME_START)            # the window's initial state
    base_q = cols(col, "q:root_joint")
    assert np.abs(held[:, base_q] - q0[:7]).max() < 1e-9                  # the base stays put
    base_tau = cols(col, "tau:root_joint")
    assert np.abs(held[:, base_tau]).max() > 0.5 * model.mass * 9.81      # and is held up by a wrench
    r, (names, free, col) = simulate_csv(tmp_path, "quadruped", "--duration", "0.5", "--release-base",
                                         "--no-ground", name="free.csv")
    np.testing.assert_allclose(free[0, 1:1 + model.nq], q0, **SAME_START)
    np.testing.assert_array_equal(free[:, base_tau], 0.0)                 # passive
    t = free[-1, 0]
    drop = free[0, col["q:root_joint[2]"]] - free[-1, col["q:root_joint[2]"]]
    assert drop == pytest.approx(0.5 * 9.81 * t * t, rel=1e-6)          # free fall of the whole robot
    # the window holds it the same way (its start is the same function of the model)
    from app.sim.setup import window_start
    setup = window_start(engine, model, ground=False)
    assert setup.inputs["root_joint"].mode == "acceleration" and setup.inputs["root_joint"].kind == "hold"
    assert not window_start(engine, model, release_base=True, ground=False).inputs


def test_mode_option_sets_joint_modes(tmp_path):
    model = load_model("double_pendulum")
    _, (names, free, col) = simulate_csv(tmp_path, "double_pendulum", "--duration", "0.3", name="a.csv")
    _, (names, held, col) = simulate_csv(tmp_path, "double_pendulum", "--duration", "0.3",
                                         "--mode", "joint1=acceleration", name="b.csv")
    # joint1 held still where it started (the panel's default acceleration law: hold), joint2 swings
    assert np.abs(held[:, col["q:joint1"]] - 2.0).max() < 1e-9
    assert np.abs(held[:, col["ddq:joint1"]]).max() < 1e-9
    assert np.ptp(held[:, col["q:joint2"]]) > 0.1
    assert np.abs(held[-1, 1:3] - free[-1, 1:3]).max() > 0.1             # a different motion
    # tau of the prescribed joint is the one hybrid dynamics needs, joint2 gets its acceleration
    for k in (0, 100, 250):
        q, v = held[k, 1:3], held[k, 3:5]
        a, tau = engine.hybrid_dynamics(model, q, v, np.array([True, False]), held[k, 5:7] * [1, 0], np.zeros(2))
        assert held[k, col["tau:joint1"]] == pytest.approx(tau[0], rel=1e-9, abs=1e-9)
        assert held[k, col["ddq:joint2"]] == pytest.approx(a[1], rel=1e-9, abs=1e-9)
    # a law given with the mode; the base given back to torque releases it
    _, (names, sine, col) = simulate_csv(tmp_path, "double_pendulum", "--duration", "0.3",
                                         "--mode", "joint1=acceleration:sine", name="c.csv")
    assert np.ptp(sine[:, col["q:joint1"]]) > 0.01 and np.abs(sine[:, col["tau:joint1"]]).max() > 0
    _, (names, rel, col) = simulate_csv(tmp_path, "quadruped", "--duration", "0.2", "--mode", "root_joint=torque",
                                        "--no-ground", name="d.csv")
    assert rel[0, col["q:root_joint[2]"]] - rel[-1, col["q:root_joint[2]"]] > 0.1


def test_mode_option_refuses_unknown_joints_and_modes():
    r = run("simulate", "double_pendulum", "--duration", "0.1", "--mode", "elbow=torque")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "'elbow'" in r.stderr and "joint1" in r.stderr and "joint2" in r.stderr
    r = run("simulate", "double_pendulum", "--duration", "0.1", "--mode", "joint1=velocity")
    assert r.returncode == 2 and "'velocity'" in r.stderr and "torque" in r.stderr
    r = run("simulate", "double_pendulum", "--duration", "0.1", "--mode", "joint1")
    assert r.returncode == 2 and "JOINT=torque" in r.stderr
    r = run("simulate", "double_pendulum", "--duration", "0.1", "--mode", "joint1=torque:wobble")
    assert r.returncode == 2 and "'wobble'" in r.stderr and "gravity" in r.stderr


# ---------------------------------------------------------------------- closed loops
def test_four_bar_csv_has_lambda_and_residuals(tmp_path):
    model = load_model("four_bar")
    _, (names, data, col) = simulate_csv(tmp_path, "four_bar", "--duration", "0.5", "--wrench", "rocker")
    lam_cols = cols(col, "lambda:")
    rows = [r for c in model.constraints for r in c.multiplier_rows(model)]
    assert len(lam_cols) == len(rows) == sum(c.rows for c in model.constraints) > 0
    for k, (label, _) in zip(lam_cols, rows):                 # labelled by the constraint's own rows
        assert names[k].endswith(" " + label.replace(",", ";"))
    assert "residual" in col and all(f"residual:{c.name}" in col for c in model.constraints)
    lam = data[:, lam_cols]
    assert np.all(np.isfinite(lam)) and np.abs(lam).max() > 0.1
    assert np.all(data[:, col["residual"]] < 1e-6)
    # each row's lambda and ddq are constrained dynamics of that row's state (Baumgarte as the simulator)
    nq, nv = model.nq, model.nv
    gains = engine.loops.constrained.baumgarte_gains(0.1, 1e-3)
    for r in data[::97]:
        q, v, tau = r[1:1 + nq], r[1 + nq:1 + nq + nv], r[1 + nq + 2 * nv:1 + nq + 3 * nv]
        a, lam_ref = engine.constrained_forward_dynamics(model, q, v, tau, None, gains)
        np.testing.assert_allclose(r[lam_cols], lam_ref, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(r[1 + nq + nv:1 + nq + 2 * nv], a, rtol=1e-9, atol=1e-9)
        # the rocker's wrench, with the loop force on the bodies
        ref = engine.loops.constrained.joint_transmitted_wrenches(model, q, v, a, None, lam_ref)["rocker"]
        np.testing.assert_allclose(r[cols(col, "wrench:")], ref, rtol=1e-8, atol=1e-8)


# ---------------------------------------------------------------------- lessons
def _lesson(tmp_path, **kw):
    """A lesson file in the format of app/sim/lessons.py (the one File > Save Lesson writes)."""
    data = {"format": "jointlab-lesson", "version": 1, "model": {"name": "double_pendulum"},
            "q": {"joint1": 1.0, "joint2": -0.5}, "v": {"joint1": 0.0, "joint2": 0.2},
            "joints": {"joint1": {"mode": "acceleration", "law": "sine",
                                  "amplitude": 0.3, "frequency": 1.0, "offset": 1.0}},
            "integrator": "semi_implicit_euler", "dt": 0.002}
    data.update(kw)
    path = tmp_path / "lesson.jlab"
    path.write_text(json.dumps(data))
    return path


def test_lesson_sets_model_state_modes_integrator_and_dt(tmp_path):
    path = _lesson(tmp_path)
    r, (names, data, col) = simulate_csv(tmp_path, "--lesson", str(path), "--duration", "0.4")
    assert "semi_implicit_euler" in r.stdout and "dt 0.002" in r.stdout
    assert data.shape[0] == 200
    np.testing.assert_allclose(np.diff(data[:, 0]), 0.002, atol=1e-12)
    np.testing.assert_array_equal(data[0, 1:5], [1.0, -0.5, 0.0, 0.2])
    # joint1 prescribed by the sine law about offset 1.0 with amplitude 0.3
    q1 = data[:, col["q:joint1"]]
    assert np.abs(data[:, col["tau:joint1"]]).max() > 0 and 0.6 < q1.min() and q1.max() < 1.4
    assert np.ptp(q1) > 0.2
    # the same as applying the lesson in-process
    from app.sim.setup import read_lesson, window_start, apply_lesson_to_simulation, make_simulator
    model = load_model("double_pendulum")
    setup = apply_lesson_to_simulation(read_lesson(str(path)), engine, window_start(engine, model))
    sim, _ = make_simulator(engine, setup)
    sim.step(199)
    np.testing.assert_allclose(data[-1, 1:3], sim.q, rtol=1e-12, atol=1e-12)
    # options given on the command line win over the lesson's
    r, (names, data, col) = simulate_csv(tmp_path, "--lesson", str(path), "--duration", "0.1", "--dt", "0.001",
                                         "--mode", "joint1=torque", name="o.csv")
    assert data.shape[0] == 100 and np.all(data[:, col["tau:joint1"]] == 0.0)


def test_bad_lessons_are_clear_errors(tmp_path):
    path = _lesson(tmp_path, joints={"knee": {"mode": "torque", "law": "zero"}})
    r = run("simulate", "--lesson", str(path), "--duration", "0.1")
    assert r.returncode == 2 and "'knee'" in r.stderr and "joint1" in r.stderr and "Traceback" not in r.stderr
    path = _lesson(tmp_path, q={"joint1": [1.0, 2.0]})
    r = run("simulate", "--lesson", str(path), "--duration", "0.1")
    assert r.returncode == 2 and "'q.joint1'" in r.stderr and "Traceback" not in r.stderr
    path = _lesson(tmp_path, joints={"joint1": {"mode": "torque", "law": "pd", "gain": 3}})
    r = run("simulate", "--lesson", str(path), "--duration", "0.1")
    assert r.returncode == 2 and "gain" in r.stderr and "Traceback" not in r.stderr
    bad = tmp_path / "bad.jlab"
    bad.write_text("{not json")
    r = run("simulate", "--lesson", str(bad), "--duration", "0.1")
    assert r.returncode == 2 and "bad.jlab" in r.stderr and "Traceback" not in r.stderr


def test_apply_lesson_to_simulation_takes_lesson_objects_and_dicts():
    """The lesson may come from app.lessons (an object: model, modes, laws, integrator, dt) or be
    the JSON form; both give the same setup (in-process: no subprocess needed)."""
    from app.sim.setup import window_start, apply_lesson_to_simulation, UsageError
    from app.sim.inputs import JointInput
    model = load_model("double_pendulum")

    class Lesson:
        pass
    lesson = Lesson()
    lesson.model, lesson.integrator, lesson.dt = "double_pendulum", "euler", 0.005
    lesson.modes = {"joint1": "acceleration"}
    lesson.laws = {"joint1": {"law": "sine", "params": {"amplitude": 0.2}},
                   "joint2": JointInput("torque", "constant", value=1.0)}
    s = apply_lesson_to_simulation(lesson, engine, window_start(engine, model))
    assert (s.integrator, s.dt) == ("euler", 0.005)
    assert s.inputs["joint1"].kind == "sine" and s.inputs["joint1"].amplitude == 0.2
    assert s.inputs["joint2"] == JointInput("torque", "constant", value=1.0)
    s = apply_lesson_to_simulation({"initial_state": {"q": [0.1, 0.2]}, "joints": {"joint2": "acceleration"}},
                                   engine, window_start(engine, model))
    np.testing.assert_array_equal(s.q0, [0.1, 0.2])
    assert s.inputs["joint2"] == JointInput("acceleration", "hold")
    with pytest.raises(UsageError, match="'euler2'"):
        apply_lesson_to_simulation({"integrator": "euler2"}, engine, window_start(engine, model))
    with pytest.raises(UsageError, match="dt"):
        apply_lesson_to_simulation({"dt": -1}, engine, window_start(engine, model))
