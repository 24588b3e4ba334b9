"""True readouts: while paused, the joint panel shows the hybrid dynamics of the state on screen
(ddq of the torque-driven joints, tau of the prescribed ones), recomputed after Reset, Step Back,
a pose, a mode change. The real window under Xvfb, driven through its actions and widgets."""
from __future__ import annotations

import os
import re

import numpy as np
import pytest

if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
        or os.environ.get("QT_QPA_PLATFORM", "").startswith("offscreen")):
    pytest.skip("no display: install Xvfb (scripts/install-system-deps.sh) for the GUI tests",
                allow_module_level=True)

from test_gui_support import engine_mod, window, install, wait_snapshot, spin  # noqa: F401

NUMBER = r"([+-]?\d+(?:\.\d+)?(?:e[+-]?\d+)?|\s0)"


def readout(win, joint):
    """(what, value) the joint panel shows for a 1-dof joint: ("ddq" | "tau", number)."""
    text = win.joints.rows[joint].readout.text()
    m = re.search(r"(gets ddq|needs tau)\s*" + NUMBER, text)
    assert m, f"readout of {joint}: {text!r}"
    return ("ddq" if m.group(1) == "gets ddq" else "tau"), float(m.group(2))


def wait_readouts(qtbot, win, expected, tol=1e-3):
    """Wait until every joint's readout is (what, value) of ``expected`` within tol."""
    def ok():
        for joint, (what, value) in expected.items():
            w, x = readout(win, joint)
            if w != what or abs(x - value) > max(tol, 5e-4 * abs(value)):     # 4 digits (app/widgets/numfmt.py)
                return False
        return True
    try:
        qtbot.waitUntil(ok, timeout=5000)
    except Exception:
        raise AssertionError(f"readouts {[win.joints.rows[j].readout.text() for j in expected]} "
                             f"!= {expected}") from None


@pytest.fixture
def double_pendulum(engine_mod):
    from engine.catalog import load_model, initial_state
    model = load_model("double_pendulum")
    return model, *initial_state(model)


def test_readouts_after_reset_step_back_pose_and_mode_change(qtbot, window, engine_mod, double_pendulum):
    e = engine_mod
    model, q0, v0 = double_pendulum
    np.testing.assert_allclose(q0, [2.0, 0.0])
    np.testing.assert_allclose(v0, [0.0, 0.0])
    worker = install(qtbot, window, model, q0=q0, running=True)
    spin(qtbot, 0.4)
    window.act_run.trigger()                     # Pause
    wait_snapshot(qtbot, window, lambda s: not s.running)

    # Reset (paused): back at q = (2, 0), v = 0; the readout is forward dynamics there
    window.act_reset.trigger()
    snap = wait_snapshot(qtbot, window, lambda s: s.t == 0.0 and s.steps == 0)
    ddq = e.forward_dynamics(model, q0, v0, np.zeros(2))
    assert abs(ddq[0] - (-22.9)) < 0.1 and abs(ddq[1] - 30.5) < 0.1, ddq
    np.testing.assert_allclose(snap.q, q0)
    np.testing.assert_allclose(snap.a, ddq, rtol=1e-10, atol=1e-10)
    wait_readouts(qtbot, window, {"joint1": ("ddq", ddq[0]), "joint2": ("ddq", ddq[1])})
    assert abs(readout(window, "joint1")[1] - (-22.9)) < 0.1
    assert abs(readout(window, "joint2")[1] - 30.5) < 0.1

    # a single step (paused): the readout belongs to the new state, not to the step's start
    window.act_step.trigger()
    snap = wait_snapshot(qtbot, window, lambda s: s.steps == 1)
    np.testing.assert_allclose(snap.a, e.forward_dynamics(model, snap.q, snap.v, np.zeros(2)), rtol=1e-10, atol=1e-10)

    # run, pause, Step Back: the readout is the dynamics of the recorded state gone back to
    window.act_run.trigger()
    wait_snapshot(qtbot, window, lambda s: s.running and s.t > 0.4, timeout=15000)
    window.act_run.trigger()
    before = wait_snapshot(qtbot, window, lambda s: not s.running)
    spin(qtbot, 0.2)
    window.act_back.trigger()
    snap = wait_snapshot(qtbot, window, lambda s: s.t < before.t - 0.05)
    assert np.abs(snap.v).max() > 0.1          # a moving state, not a rest pose
    ddq = e.forward_dynamics(model, snap.q, snap.v, np.zeros(2))
    np.testing.assert_allclose(snap.a, ddq, rtol=1e-10, atol=1e-10)
    wait_readouts(qtbot, window, {"joint1": ("ddq", ddq[0]), "joint2": ("ddq", ddq[1])})

    # a pose from joint1's position slider (paused): velocities zeroed, readout of the new pose
    row = window.joints.rows["joint1"]
    assert row.slider is not None and row.slider.isEnabled()
    row.slider.setValue(row.slider.maximum() // 4)
    snap = wait_snapshot(qtbot, window, lambda s: np.all(s.v == 0) and abs(s.q[0] - before.q[0]) > 1e-6)
    q_pose = snap.q.copy()
    ddq = e.forward_dynamics(model, q_pose, np.zeros(2), np.zeros(2))
    np.testing.assert_allclose(snap.a, ddq, rtol=1e-10, atol=1e-10)
    wait_readouts(qtbot, window, {"joint1": ("ddq", ddq[0]), "joint2": ("ddq", ddq[1])})

    # mode change (paused): joint1 prescribed ("hold still", ddq = 0 at the pose it was switched
    # in): its readout is the torque it needs, joint2's the acceleration it gets (hybrid dynamics)
    row.mode.setCurrentText("acceleration")
    row.law.setCurrentIndex(row.law.findData("hold"))
    snap = wait_snapshot(qtbot, window, lambda s: s.prescribed[0] and not s.prescribed[1])
    a_h, tau_h = e.hybrid_dynamics(model, q_pose, np.zeros(2), np.array([True, False]), np.zeros(2), np.zeros(2))
    assert abs(tau_h[0]) > 1.0 and abs(a_h[1]) > 1.0
    np.testing.assert_allclose(snap.a, a_h, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(snap.tau[0], tau_h[0], rtol=1e-9, atol=1e-9)
    wait_readouts(qtbot, window, {"joint1": ("tau", tau_h[0]), "joint2": ("ddq", a_h[1])})
    # and back to torque: joint1 gets its forward-dynamics acceleration again
    row.mode.setCurrentText("torque")
    snap = wait_snapshot(qtbot, window, lambda s: not s.prescribed[0])
    wait_readouts(qtbot, window, {"joint1": ("ddq", ddq[0]), "joint2": ("ddq", ddq[1])})
    assert not worker.snapshot().running


@pytest.mark.parametrize("name, extra", [("quadruped", ()), ("double_pendulum", ("--mode", "joint2=acceleration"))])
def test_the_command_line_starts_as_the_window(qtbot, window, engine_mod, tmp_path, name, extra):
    """`jointlab simulate MODEL` and the window opening MODEL start from the same state with the same
    joint modes: the window's readouts at t = 0 (after Reset, paused) are the CLI's first row."""
    import subprocess
    import sys
    from app.sim.recorder import read_csv
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = tmp_path / "cli.csv"
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-m", "app", "simulate", name, "--duration", "0.01", "--csv", str(out),
                        "--no-progress", *extra], capture_output=True, text=True, timeout=300, cwd=root, env=env)
    assert r.returncode == 0, r.stderr
    names, data = read_csv(out)
    window.open_model(name)
    qtbot.waitUntil(lambda: window.model is not None and window.model_source == name, timeout=60000)
    for arg in extra[1::2]:                    # the same mode chosen in the joint panel
        joint, mode = arg.split("=")
        window.joints.rows[joint].mode.setCurrentText(mode)
    window.set_running(False)
    wait_snapshot(qtbot, window, lambda s: not s.running)
    window.act_reset.trigger()
    snap = wait_snapshot(qtbot, window, lambda s: s.steps == 0 and not s.running
                         and (not extra or s.prescribed[window.model.joint(extra[1].split("=")[0]).idx_v]))
    L = window.worker.layout
    assert names == L.names[:len(names)] or [n.split(" ")[0] for n in names] == L.names
    row = data[0]
    # the CLI ran in another process: its kernels may be another compile of the same code (a fresh
    # JIT vs numba's cached object code), which may round the last bit differently
    np.testing.assert_allclose(row[L.q], snap.q, rtol=0.0, atol=1e-12)
    np.testing.assert_allclose(row[L.dq], snap.v, rtol=0.0, atol=1e-12)
    np.testing.assert_allclose(row[L.ddq], snap.a, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(row[L.tau], snap.tau, rtol=1e-9, atol=1e-9)
    # the same joints held for the same reasons (the quadruped stands on the ground: its legs held)
    from app.sim.setup import window_start
    assert window.held_joints == window_start(engine_mod, window.model).held
    if name == "quadruped":
        assert set(window.held_joints.values()) == {"standing"} and "root_joint" not in window.held_joints
        assert snap.ground is not None
        assert np.abs(snap.tau[6:]).max() > 1.0 and np.all(snap.prescribed[6:]) and not snap.prescribed[:6].any()
        assert np.abs(snap.a[:6]).max() < 1e-6          # standing: the ground holds the base
