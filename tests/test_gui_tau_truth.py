"""One truth for every torque shown (issue 32, build item 1), in the real window driven by real key
events: paused (Space), the joint panel's "needs tau" of an acceleration-prescribed joint and the
Equation view's "τ used" equal what the motion needs, computed here from the snapshot's state,
contacts and limit torques by ``engine.equation_terms`` (composite rigid bodies, the Coriolis
matrix, gravity, the contacts' point Jacobians: none of the step's own code); the Equation view is
filled as soon as it opens (Ctrl+M after Ctrl+I), without a step; a floating base shows all six
components of what it gets or needs.

Screenshots go to $JOINTLAB_SHOTS (or the test's temporary folder), read back, for a look."""
from __future__ import annotations

import os
import re
from types import SimpleNamespace

import numpy as np
import pytest

if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
        or os.environ.get("QT_QPA_PLATFORM", "").startswith("offscreen")):
    pytest.skip("no display: install Xvfb (scripts/install-system-deps.sh) for the GUI tests",
                allow_module_level=True)

from test_gui_support import window_shot, engine_mod, window, wait_snapshot, spin  # noqa: F401

from PyQt6 import QtCore
from PyQt6.QtTest import QTest

from app.teach.equationview import SUM, USED

CTRL = QtCore.Qt.KeyboardModifier.ControlModifier
NOMOD = QtCore.Qt.KeyboardModifier.NoModifier
NUMBER = r"([-+]?[0-9.]+(?:e[-+][0-9]+)?)"


def press(qtbot, win, key, modifier=NOMOD):
    if not win.isActiveWindow():
        win.activateWindow()
        qtbot.waitUntil(win.isActiveWindow, timeout=5000)
    QTest.keyClick(win, key, modifier)




def open_model(qtbot, win, name):
    win.resize(1280, 800)
    win.open_model(name)
    qtbot.waitUntil(lambda: win.model is not None and win._loading is None and win.model_source == name,
                    timeout=120000)
    qtbot.waitUntil(lambda: win.view.isExposed() and len(win.view.frame_times) > 0, timeout=10000)


def pause_and_open_views(qtbot, win):
    """Space, Ctrl+I, Ctrl+M as a user presses them; returns the paused snapshot with its teaching."""
    press(qtbot, win, QtCore.Qt.Key.Key_Space)
    wait_snapshot(qtbot, win, lambda s: not s.running)
    teach = win.teach
    press(qtbot, win, QtCore.Qt.Key.Key_I, CTRL)
    qtbot.waitUntil(teach.inspector_dock.isVisible, timeout=5000)
    snap = wait_snapshot(qtbot, win, lambda s: s.teaching is not None and not s.running)
    qtbot.waitUntil(lambda: teach._last_teaching is win.worker.snapshot().teaching, timeout=10000)
    steps = win.worker.snapshot().steps
    press(qtbot, win, QtCore.Qt.Key.Key_M, CTRL)
    qtbot.waitUntil(teach.equation_dock.isVisible, timeout=5000)
    # filled without a step: the table's cells and M(q)
    qtbot.waitUntil(lambda: teach.equation.M is not None and teach.equation.table.item(0, SUM).text() != "",
                    timeout=5000)
    snap = win.worker.snapshot()
    assert snap.steps == steps and not snap.running
    return snap


def truth(model, snap):
    """What the motors need at the state shown: M a + C v + g - J_c^T f_c - tau_limit (+ d v)."""
    from engine.teaching.equation import equation_terms
    contacts = [SimpleNamespace(body=b, point=np.asarray(p), force=np.asarray(f)) for b, p, f in snap.contacts]
    lf = snap.limit_forces
    eq = equation_terms(model, snap.q, snap.v, snap.a, contacts=contacts or None,
                        limit_forces=lf if lf is not None and np.any(lf) else None)
    return eq.tau + model.damping * snap.v


def readout_tau(win, joint):
    text = win.joints.rows[joint].readout.text()
    m = re.search(r"needs tau " + NUMBER, text)
    assert m, f"{joint}: no torque in its readout {text!r}"
    return float(m.group(1))


def equation_cell(win, row, col):
    return float(win.teach.equation.table.item(row, col).text())


def check_joint(qtbot, win, model, snap, joint, ref):
    """The readout and the Equation view equal ref to the 4 significant digits they show
    (app/widgets/numfmt.py: a rounding error of at most 5e-4 of the value)."""
    k = model.joint(joint).idx_v
    # the panel shows the paused state at its next refresh (a loaded machine: a frame or more later)
    try:
        qtbot.waitUntil(lambda: readout_tau(win, joint) == pytest.approx(ref[k], rel=6e-4, abs=1e-9), timeout=5000)
    except qtbot.TimeoutError:
        pass
    assert readout_tau(win, joint) == pytest.approx(ref[k], rel=6e-4, abs=1e-9), joint
    used = ref[k] - model.damping[k] * snap.v[k]
    eqv = win.teach.equation
    eqv.table.scrollToItem(eqv.table.item(k, USED))
    win.teach.equation.show_teaching(snap.teaching)         # the rows scrolled to are written
    assert equation_cell(win, k, USED) == pytest.approx(used, rel=6e-4, abs=1e-9), joint
    assert equation_cell(win, k, SUM) == pytest.approx(used, rel=6e-4, abs=1e-9), joint


def test_humanoid_standing_readouts_equal_the_engine(qtbot, window, tmp_path):
    win = window
    open_model(qtbot, win, "humanoid")
    model = win.model
    snap = pause_and_open_views(qtbot, win)
    assert snap.contacts
    ref = truth(model, snap)
    held = [j.name for j in model.joints[1:] if j.nv == 1]
    assert all(snap.prescribed[model.joint(n).idx_v] for n in held)
    sim_tau = win.worker.sim.tau
    for name in ("l_knee", "r_knee", "l_hip_pitch" if "l_hip_pitch" in model.joint_names else held[0]):
        k = model.joint(name).idx_v
        assert sim_tau[k] == pytest.approx(ref[k], rel=1e-9, abs=1e-9)
        check_joint(qtbot, win, model, snap, name, ref)
    # the knees carry weight: the readout is not the contact term alone
    eq = snap.teaching.equation
    knee = model.joint("l_knee").idx_v
    assert abs(eq.g[knee]) > 0.5 and abs(readout_tau(win, "l_knee") - eq.contact[knee]) > 0.5
    # the floating base (torque-given, on the ground): all six components of its acceleration
    root = model.joints[0]
    lines = win.joints.rows[root.name].readout.text().split("\n")
    assert len(lines) == 2 and lines[0].endswith("rad/s²") and lines[1].endswith("m/s²")
    shown = [float(x) for line in lines for x in re.findall(NUMBER + r"(?= )", line)]
    assert len(shown) == 6
    np.testing.assert_allclose(shown, snap.a[root.idx_v:root.idx_v + 6], rtol=6e-4, atol=1e-9)
    assert f"t = {snap.t:.4f} s" in win.teach.equation_dock.windowTitle()
    window_shot(win, tmp_path, "tau-truth-humanoid-standing")
    win.joints_dock.raise_()
    qtbot.waitUntil(lambda: win.joints.rows[root.name].readout.isVisible(), timeout=5000)
    window_shot(win, tmp_path, "tau-truth-humanoid-standing-joints")


def test_arm7_joint_on_its_stop_readouts_equal_the_engine(qtbot, window, tmp_path):
    import engine
    from engine import catalog
    win = window
    model = catalog.load_model("arm7")
    q0, _ = catalog.initial_state(model)
    j2 = model.joint("joint2")
    q0[j2.idx_q] = j2.upper[0] - 0.01
    win.resize(1280, 800)
    win.set_model(model, q0)
    qtbot.waitUntil(lambda: win.view.isExposed() and len(win.view.frame_times) > 0, timeout=10000)
    row = win.joints.rows["joint4"]
    row.mode.setCurrentText("acceleration")
    row.law.setCurrentIndex(row.law.findData("sine"))
    wait_snapshot(qtbot, win, lambda s: s.prescribed[model.joint("joint4").idx_v] and s.running)
    wait_snapshot(qtbot, win, lambda s: s.t > 0.15, timeout=60000)
    snap = pause_and_open_views(qtbot, win)
    model = win.model
    assert snap.q[j2.idx_q] == pytest.approx(j2.upper[0], abs=1e-6)      # on its stop
    assert snap.limit_forces[j2.idx_v] < -10.0
    ref = truth(model, snap)
    # independent of the contact solve: hybrid dynamics with joint2 held where the stop holds it
    pres = snap.prescribed.copy()
    pres[j2.idx_v] = True
    _, tau_h = engine.hybrid_dynamics(model, snap.q, snap.v, pres, np.where(snap.prescribed, snap.a, 0.0),
                                      np.zeros(model.nv) - model.damping * snap.v)
    k4 = model.joint("joint4").idx_v
    assert abs(snap.v[j2.idx_v]) < 1e-12 and abs(snap.a[j2.idx_v]) < 1e-9     # at rest on it
    assert ref[k4] == pytest.approx(tau_h[k4] + model.damping[k4] * snap.v[k4], rel=1e-9, abs=1e-9)
    check_joint(qtbot, win, model, snap, "joint4", ref)
    assert win.worker.sim.tau[k4] == pytest.approx(ref[k4], rel=1e-9, abs=1e-9)
    # the plots' rows (every step while it ran): joint4's tau is what the row's own motion needs,
    # the limit pushing joint2's coordinate (and joint4's own when its sine runs it onto its stop)
    qtbot.waitUntil(lambda: (win.plots.recorder.last_time() or 0.0) >= snap.t - 1.5 * snap.dt, timeout=5000)
    lay = win.plots.recorder.layout
    d = win.plots.recorder.data()
    assert len(d) > 100
    limit4 = d[:, lay.column("limit:joint4")]
    for row, lim in zip(d, limit4):
        need = engine.inverse_dynamics(model, row[lay.q], row[lay.dq], row[lay.ddq]) + model.damping * row[lay.dq]
        assert row[lay.tau][k4] == pytest.approx(need[k4] - lim, rel=1e-9, abs=1e-9), f"row at t = {row[0]}"
    assert np.count_nonzero(np.abs(d[:, lay.q][:, j2.idx_q] - j2.upper[0]) < 1e-9) > 20      # rows on the stop
    window_shot(win, tmp_path, "tau-truth-arm7-joint2-on-its-stop")


def test_held_floating_base_shows_its_six_wrench_components(qtbot, window, tmp_path):
    """A floating base held in the air ("hold still", as the window holds it without a ground): its
    readout is the wrench that holds it, moment and force in its body frame, every component. Known
    answer at rest with the arm hanging: f = (0, 0, m g) for the whole weight, m = c_base x (0, 0,
    m_base g) about the base origin (the arm's weight acts through it)."""
    import engine
    from engine.multibody.visuals import Shape
    g = 9.81
    b = engine.ModelBuilder("held_base")
    b.add_body("base", parent="world", joint=engine.Free(), joint_name="root_joint",
               placement=engine.pose(p=(0, 0, 1.0)), inertia=engine.Inertia(2.0, (0.1, 0, 0), np.eye(3) * 0.02))
    b.add_body("arm", parent="base", joint=engine.Revolute((0, 1, 0)), joint_name="joint1",
               placement=engine.pose(p=(0, 0, 0)), inertia=engine.Inertia(1.0, (0, 0, -0.2), np.eye(3) * 0.01))
    b.visuals.append(Shape("box", "base", 1, np.eye(4), size=np.array([0.3, 0.2, 0.1]),
                           color=np.array([0.2, 0.4, 0.8, 1.0])))
    b.visuals.append(Shape("box", "arm", 2, engine.pose(p=(0, 0, -0.2)), size=np.array([0.05, 0.05, 0.4]),
                           color=np.array([0.9, 0.5, 0.1, 1.0])))
    model = b.build()
    win = window
    win.resize(1280, 800)
    win.set_model(model)
    qtbot.waitUntil(lambda: win.view.isExposed() and len(win.view.frame_times) > 0, timeout=10000)
    press(qtbot, win, QtCore.Qt.Key.Key_Space)
    snap = wait_snapshot(qtbot, win, lambda s: not s.running)
    root = win.model.joints[0]
    assert snap.prescribed[root.idx_v]                    # held: "hold still"
    qtbot.waitUntil(lambda: "needs f" in win.joints.rows["root_joint"].readout.text(), timeout=5000)
    lines = win.joints.rows["root_joint"].readout.text().split("\n")
    assert len(lines) == 2 and lines[0].startswith("needs m") and lines[0].endswith("N·m")
    assert lines[1].startswith("needs f") and lines[1].endswith(" N")
    m_shown = [float(x) for x in re.findall(NUMBER + r"(?= )", lines[0])]
    f_shown = [float(x) for x in re.findall(NUMBER + r"(?= )", lines[1])]
    assert len(m_shown) == 3 and len(f_shown) == 3
    np.testing.assert_allclose(f_shown, [0.0, 0.0, 3.0 * g], rtol=6e-4, atol=1e-9)
    np.testing.assert_allclose(m_shown, np.cross([0.1, 0, 0], [0, 0, 2.0 * g]), rtol=6e-4, atol=1e-9)
    tip = win.joints.rows["root_joint"].readout.toolTip()
    assert "body frame" in tip and "state shown" in tip
    win.joints_dock.raise_()
    window_shot(win, tmp_path, "tau-truth-held-floating-base")
