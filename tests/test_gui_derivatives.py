"""The derivative tools in the real window (app/teach/derivtools.py) under a virtual display: Linearize
here, the LQR balance law, the sensitivity view. Menu entries are triggered as a user does."""
from __future__ import annotations

import os

import numpy as np
import pytest

if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
        or os.environ.get("QT_QPA_PLATFORM", "").startswith("offscreen")):
    pytest.skip("no display: install Xvfb (scripts/install-system-deps.sh) for the GUI tests",
                allow_module_level=True)

from test_gui_support import engine_mod, models, window, install, wait_snapshot, settle, qimage_array  # noqa: F401

from PyQt6 import QtWidgets

from app.sim.inputs import JointInput


def _load(name):
    from engine import catalog
    return catalog.load_model(name)


def _menu_action(win, text):
    for menu in win.menuBar().findChildren(QtWidgets.QMenu):
        for a in menu.actions():
            if a.text().replace("&", "") == text:
                return a
    raise AssertionError(f"no menu entry {text!r}")


def _save(win, tmp_path, name, dialog=None):
    """Screenshots of the window (3D view included) and of the dialog; checked not blank."""
    img = qimage_array(win.save_screenshot(str(tmp_path / name)))
    assert img.shape[0] > 100 and img[..., :3].std() > 5, "the screenshot is blank"
    if dialog is not None:
        d = dialog.grab()
        assert d.save(str(tmp_path / ("dialog_" + name)))
        assert qimage_array(d.toImage())[..., :3].std() > 5


def test_linearize_upright_acrobot_lists_one_unstable_eigenvalue_and_animates_it(qtbot, window, tmp_path):
    acrobot = _load("acrobot")
    q_up = np.array([np.pi, 0.0])
    install(qtbot, window, acrobot, q0=q_up, running=False)
    # the elbow held straight (acceleration prescribed, hold still): an inverted pendulum on the shoulder
    window.joints.set_input("elbow", JointInput("acceleration", "hold"))
    window.worker.set_state(q_up)
    wait_snapshot(qtbot, window, lambda s: bool(s.prescribed[1]) and np.allclose(s.q, q_up))
    _menu_action(window, "Linearize Here…").trigger()
    dlg = window.linearize_dialog
    assert dlg.isVisible()
    table = dlg.table
    marks = [table.item(i, 3).text() for i in range(table.rowCount())]
    assert marks.count("UNSTABLE") == 1, marks
    # its value: the inverted pendulum about the shoulder with the elbow rigid
    z = dlg.rows[0][0]
    m1, lc1, I1, l1, m2, lc2, I2 = 1.0, 0.65, 0.111110417, 1.0, 1.0, 0.5, 0.0834666667
    J = I1 + I2 + m1 * lc1 ** 2 + m2 * (l1 + lc2) ** 2
    assert abs(z.real - np.sqrt(9.81 * (m1 * lc1 + m2 * (l1 + lc2)) / J)) < 1e-8 and abs(z.imag) < 1e-12
    # choosing it animates the mode shape: the drawn pose moves, the simulation stays paused
    before = [T.copy() for T in window.scene.body_poses]
    table.selectRow(0)
    qtbot.waitUntil(lambda: dlg.timer.isActive(), timeout=3000)
    qtbot.wait(300)
    after = window.scene.body_poses
    assert max(np.abs(a - b).max() for a, b in zip(after, before)) > 1e-3, "the mode is not animated"
    assert not window.worker.snapshot().running
    assert np.allclose(window.worker.snapshot().q, q_up), "animating a mode must not move the physics"
    settle(qtbot, window)
    _save(window, tmp_path, "linearize_acrobot.png", dlg)
    dlg.close()
    assert not dlg.timer.isActive()


def _balance_run(qtbot, window, name, q_up, push, with_lqr, seconds=10.0, watch=1):
    """Load `name` at the upright pose (paused), optionally switch LQR on from the menu, push (a
    velocity, as a Ctrl+drag impulse gives), run `seconds` of simulated time; (last snapshot, the
    largest |q[watch] - q_up[watch]| seen)."""
    model = _load(name)
    install(qtbot, window, model, q0=q_up, running=False)
    wait_snapshot(qtbot, window, lambda s: np.allclose(s.q, q_up) and not s.prescribed.any())
    if with_lqr:
        _menu_action(window, "LQR Balance Here").trigger()
        dlg = window.lqr_dialog
        assert dlg.isVisible()
        assert np.all(dlg.eig.real < 0), "the closed loop must be stable"
        assert "closed-loop eigenvalues" in dlg.eig_label.text()
    window.worker.set_state(q_up, push)
    wait_snapshot(qtbot, window, lambda s: np.allclose(s.v, push))
    dt = window.worker.snapshot().dt
    worst = 0.0
    t0 = window.worker.snapshot().t
    for k in range(20):
        window.worker.single_step(int(round(seconds / 20 / dt)))
        s = wait_snapshot(qtbot, window, lambda s, k=k: s.t >= t0 + (k + 1) * seconds / 20 - 0.5 * dt, timeout=60000)
        worst = max(worst, abs(s.q[watch] - q_up[watch]))
    return window.worker.snapshot(), worst


def _pole_run(qtbot, window, with_lqr, push=0.6, seconds=10.0):
    return _balance_run(qtbot, window, "cart_pole", np.zeros(2), np.array([0.0, push]), with_lqr, seconds)


def test_lqr_keeps_the_cart_pole_upright_after_a_push(qtbot, window, tmp_path):
    snap, worst = _pole_run(qtbot, window, with_lqr=True)
    assert snap.t >= 9.99
    assert worst < 0.5, f"the pole tipped to {worst:.3f} rad"
    assert abs(snap.q[1]) < 0.01 and abs(snap.v[1]) < 0.05, f"not back upright after 10 s: {snap.q}, {snap.v}"
    assert abs(snap.q[0]) < 0.05, f"the cart did not come back: x = {snap.q[0]:.3f} m"
    settle(qtbot, window)
    _save(window, tmp_path, "lqr_cart_pole.png", window.lqr_dialog)
    # while LQR drives, the joint panel says so on the cart's row (its motor's own law is set aside),
    # not on the passive pole's
    from app.teach.derivtools import LQRLaw, LQR_NOTE
    rows = window.joints.rows
    cart, pole = (j.name for j in window.model.joints)
    note = rows[cart].note
    assert note.text() == LQR_NOTE and note.isVisible() and not rows[cart].law.isEnabled()
    # the whole note shows (it was once cut to the name column's width: "LQR dri")
    assert note.fontMetrics().horizontalAdvance(LQR_NOTE) <= note.contentsRect().width(), note.width()
    assert not rows[pole].note.isVisible() and rows[pole].law.isEnabled()
    # switched off: the simulator gets back what it had before (no Python controller: the panel's
    # input laws run compiled again), and the panel's rows are back to normal
    assert window.worker.sim.controller.previous is None
    window.lqr_dialog.switch_off()
    qtbot.waitUntil(lambda: window.worker.sim.controller is None, timeout=3000)
    assert not rows[cart].note.isVisible() and rows[cart].law.isEnabled()


def test_without_lqr_the_pushed_cart_pole_falls(qtbot, window):
    snap, worst = _pole_run(qtbot, window, with_lqr=False, seconds=3.0)
    assert worst > 1.0, "the control run must be able to fail: the pole should fall without LQR"


def test_sensitivity_view_shows_the_joint_row_live(qtbot, window, engine_mod, tmp_path):
    pend = _load("double_pendulum")
    q0 = np.array([0.4, -0.7])
    install(qtbot, window, pend, q0=q0, running=False)
    _menu_action(window, "Sensitivity").trigger()
    dock = window.sensitivity_dock
    qtbot.waitUntil(lambda: dock.isVisible() and dock.row_q is not None, timeout=5000)
    dock.joint_box.setCurrentIndex(1)
    dock.refresh()
    snap = window.worker.snapshot()
    da_dq, da_dv, _ = engine_mod.forward_dynamics_derivatives(pend, snap.q, snap.v, snap.tau)
    assert np.allclose(dock.row_q, da_dq[1], rtol=1e-12, atol=1e-12)
    assert np.allclose(dock.row_v, da_dv[1], rtol=1e-12, atol=1e-12)
    assert np.allclose(dock.bars_q.opts["height"], da_dq[1])
    # two rows, each with its own unit (per rad and per rad/s) named in the caption, on the plots'
    # white ground, tall enough to read
    assert dock.titles == ("∂ddq[joint2]/∂q_j (rad/s² per rad)", "∂ddq[joint2]/∂(dq_j) (rad/s² per rad/s)")
    assert all(t in dock.title.text() for t in dock.titles)
    assert dock.glw.backgroundBrush().color().name() == "#ffffff"
    assert min(p.vb.sceneBoundingRect().height() for p in (dock.plot_q, dock.plot_v)) > 45
    # live: running changes the state, and the bars follow
    window.set_running(True)
    wait_snapshot(qtbot, window, lambda s: s.t > snap.t + 0.2)
    old = dock.row_q.copy()
    qtbot.waitUntil(lambda: not np.allclose(dock.row_q, old), timeout=5000)
    window.set_running(False)
    settle(qtbot, window)
    _save(window, tmp_path, "sensitivity.png", dock)


def test_lqr_balances_the_acrobot_with_its_elbow_motor(qtbot, window):
    """The shoulder is passive (effort 0): only the elbow motor acts. A small push (0.02 rad/s at
    the shoulder) is caught; the acrobot's basin is small (a 0.3 rad/s push is not)."""
    q_up = np.array([np.pi, 0.0])
    snap, worst = _balance_run(qtbot, window, "acrobot", q_up, np.array([0.02, 0.0]), True, watch=0)
    assert worst < 0.5
    assert np.abs(snap.q - q_up).max() < 0.01 and np.abs(snap.v).max() < 0.05, (snap.q, snap.v)
    snap, worst = _balance_run(qtbot, window, "acrobot", q_up, np.array([0.02, 0.0]), False, seconds=5.0, watch=0)
    assert worst > 1.0, "without LQR the upright acrobot falls"


def test_lqr_lessons_load_upright_with_the_law_on(qtbot, window):
    from app.teach.derivtools import LQRLaw
    for title, name, q_up in (("Cart-pole Balancing", "cart_pole", [0.0, 0.0]),
                              ("Acrobot Balancing", "acrobot", [np.pi, 0.0])):
        _menu_action(window, title).trigger()
        assert window.model.name == name
        qtbot.waitUntil(lambda: isinstance(window.worker.sim.controller, LQRLaw), timeout=5000)
        snap = wait_snapshot(qtbot, window, lambda s: s.running and s.t > 1.0)
        assert np.abs(snap.q - q_up).max() < 1e-3, f"{name} did not stay upright: {snap.q}"
        assert any("Lesson" in lab.text() for lab in window.lqr_dialog.findChildren(QtWidgets.QLabel))


def test_lqr_cart_pole_recovers_from_a_ctrl_drag_push(qtbot, window, tmp_path):
    """A real Ctrl+drag (mouse events on the 3D view) pulls the pole tip sideways for a moment while
    the simulation runs; after release LQR brings the pole back upright and keeps it there."""
    from PyQt6 import QtCore
    from PyQt6.QtTest import QTest
    from test_gui_support import body_point_pixel
    LEFT = QtCore.Qt.MouseButton.LeftButton
    CTRL = QtCore.Qt.KeyboardModifier.ControlModifier
    _menu_action(window, "Cart-pole Balancing").trigger()
    window.speed_box.setCurrentIndex(window.speed_box.findData(1.0))
    settle(qtbot, window)
    view = window.view
    (px, py), p0 = body_point_pixel(window, "pole", (0.0, 0.0, 0.8))
    x_dir = np.array(view.project(p0 + np.array([0.25, 0.0, 0.0]))) - np.array([px, py])

    def pt(x, y):
        return QtCore.QPoint(int(round(x)), int(round(y)))
    QTest.mousePress(view, LEFT, CTRL, pt(px, py))
    wait_snapshot(qtbot, window, lambda s: s.drag_mode == "spring")
    for k in range(1, 6):
        QTest.mouseMove(view, pt(px + k / 5 * x_dir[0], py + k / 5 * x_dir[1]))
        qtbot.wait(20)
    t_push = window.worker.snapshot().t
    wait_snapshot(qtbot, window, lambda s: s.t > t_push + 0.15)
    QTest.mouseRelease(view, LEFT, CTRL, pt(px + x_dir[0], py + x_dir[1]))
    released = wait_snapshot(qtbot, window, lambda s: s.drag_mode is None)
    print(f"after the push: pole {released.q[1]:+.4f} rad, {released.v[1]:+.4f} rad/s")
    assert abs(released.q[1]) > 0.01 or abs(released.v[1]) > 0.05, "the push did not move the pole"
    # ten seconds of simulated time after the push, as fast as the machine goes
    window.set_running(False)
    wait_snapshot(qtbot, window, lambda s: not s.running)
    t0 = window.worker.snapshot().t
    dt = window.worker.snapshot().dt
    worst = 0.0
    for k in range(20):
        window.worker.single_step(int(round(0.5 / dt)))
        s = wait_snapshot(qtbot, window, lambda s, k=k: s.t >= t0 + (k + 1) * 0.5 - 0.5 * dt, timeout=60000)
        worst = max(worst, abs(s.q[1]))
    assert worst < 0.6, f"the pole tipped to {worst:.3f} rad"
    assert abs(s.q[1]) < 0.01 and abs(s.v[1]) < 0.05, f"not upright 10 s after the push: {s.q}, {s.v}"
    settle(qtbot, window)
    _save(window, tmp_path, "lqr_after_push.png")
