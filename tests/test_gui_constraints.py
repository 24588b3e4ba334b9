"""Closed loops in the real window (pytest-xvfb, software OpenGL): the constraint forces (lambda) and
residuals are recorded at every step and plotted, the constraint-force arrows are drawn at the
closure points, a loop switched off while running comes apart and switched on again is projected
back, and the Baumgarte time constant typed in the panel reaches the simulator."""
from __future__ import annotations

import os

import numpy as np
import pytest

if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
        or os.environ.get("QT_QPA_PLATFORM", "").startswith("offscreen")):
    pytest.skip("no display: install Xvfb (scripts/install-system-deps.sh) for the GUI tests",
                allow_module_level=True)

from test_gui_support import (engine_mod, models, window, install, wait_snapshot, spin,  # noqa: F401
                              frame_pixels, settle)

from PyQt6 import QtCore, QtWidgets
from PyQt6.QtTest import QTest

LEFT = QtCore.Qt.MouseButton.LeftButton


def open_shipped(qtbot, win, name, running=True):
    """Load a shipped model through the window (as the gallery does) and wait for its first frame."""
    win.open_model(name)
    qtbot.waitUntil(lambda: win.model is not None and win.model.name == name and win.worker is not None,
                    timeout=30000)
    if not running:
        win.set_running(False)
    qtbot.waitUntil(lambda: win.view.isExposed() and len(win.view.frame_times) > 0, timeout=10000)
    wait_snapshot(qtbot, win, lambda s: s.running == running)
    return win.worker


def click(box):
    """A real click on a check box's indicator (its centre may be past the text, outside the
    clickable part)."""
    QTest.mouseClick(box, LEFT, QtCore.Qt.KeyboardModifier.NoModifier, QtCore.QPoint(8, box.height() // 2))


def pause(qtbot, win):
    win.set_running(False)
    snap = wait_snapshot(qtbot, win, lambda s: not s.running)
    spin(qtbot, 0.2)          # the last samples reach the plots
    return snap


def test_lambda_and_residual_are_recorded_at_every_step_and_plotted(qtbot, window, engine_mod, tmp_path):
    e = engine_mod
    worker = open_shipped(qtbot, window, "four_bar")
    L = worker.layout
    window.plots.wrench_joint.setCurrentIndex(window.plots.wrench_joint.findData("rocker"))
    wait_snapshot(qtbot, window, lambda s: s.steps > 800, timeout=20000)
    snap = pause(qtbot, window)
    window.worker.single_step(1)
    snap = wait_snapshot(qtbot, window, lambda s: s.steps == snap.steps + 1)
    spin(qtbot, 0.2)
    rec = window.plots.recorder
    d = rec.data()
    # every step is a row, none missing or repeated
    assert rec.total == snap.steps == len(d) > 800
    assert d[0, 0] == 0.0
    assert np.allclose(np.diff(d[:, 0]), snap.dt, rtol=0, atol=1e-9)
    # the columns: one multiplier per constraint row with its unit, the drift meter, per-loop residuals
    names = L.names
    assert [names[c] for c in range(L.lam.start, L.lam.stop)] == ["lambda:closure[0]", "lambda:closure[1]"]
    assert [L.units[c] for c in range(L.lam.start, L.lam.stop)] == ["N", "N"]
    assert names[L.residual] == "residual" and L.units[L.residual] == "m"
    assert L.residual_columns == {"closure": names.index("residual:closure")}
    lam = d[:, L.lam]
    assert np.isfinite(lam).all(), "a step without its multipliers"
    assert np.abs(lam).max() > 0.1          # the loop carries force
    # each row's lambda is the one constrained dynamics gives for that row's state
    m = window.model.clone()
    gains = e.loops.constrained.baumgarte_gains(0.1, snap.dt)
    for r in d[:: max(1, len(d) // 20)]:
        a, lam_ref = e.constrained_forward_dynamics(m, r[L.q], r[L.dq], r[L.tau], None, gains)
        assert np.allclose(r[L.lam], lam_ref, rtol=1e-9, atol=1e-9)
        assert np.allclose(r[L.ddq], a, rtol=1e-9, atol=1e-9)
        assert r[L.residual] == pytest.approx(e.constraint_residual(m, r[L.q]), rel=1e-9, abs=1e-15)
    # the wrench the rocker transmits includes the loop force the coupler pulls it with
    ext = e.loops.constrained.constraint_external_wrenches
    rows = d[np.isfinite(d[:, L.wrench]).all(axis=1)]
    assert len(rows) > 500
    for r in rows[:: max(1, len(rows) // 10)]:
        fx = ext(m, r[L.q], r[L.dq], r[L.lam])
        ref = e.joint_wrenches(m, r[L.q], r[L.dq], r[L.ddq], fx)["rocker"]
        assert np.allclose(r[L.wrench], ref, rtol=1e-9, atol=1e-9)
    tree_only = e.joint_wrenches(m, r[L.q], r[L.dq], r[L.ddq])["rocker"]
    assert np.abs(r[L.wrench] - tree_only).max() > 0.05
    # the drift meter stays small (Baumgarte on, RK4)
    assert np.all(d[:, L.residual] < 1e-6), d[:, L.residual].max()
    assert np.array_equal(d[:, L.residual], d[:, L.residual_columns["closure"]])
    # the plot tree offers them with units; "Plot λ" shows every multiplier, with data
    tree = window.plots.tree
    groups = {tree.topLevelItem(k).text(0): tree.topLevelItem(k) for k in range(tree.topLevelItemCount())}
    assert "constraint forces (λ)" in groups and "constraint residual |f(q)|" in groups
    labels = [groups["constraint forces (λ)"].child(k).text(0) for k in range(2)]
    assert labels == ["closure[0] fx [N]", "closure[1] fz [N]"]
    button = next(b for b in window.loops.findChildren(QtWidgets.QPushButton) if b.text() == "Plot λ")
    QTest.mouseClick(button, LEFT)
    assert window.plots.channels() == ["lambda:closure[0]", "lambda:closure[1]"]
    window.plots.refresh(force=True)
    for k, c in enumerate(range(L.lam.start, L.lam.stop)):
        x, y = window.plots.curves[c].getData()
        assert len(y) > 100
        assert y[-1] == pytest.approx(d[-1, c])       # the newest sample, drawn at x = 0
        assert x[-1] == 0.0
    # the drift on a log scale: decades, not zeros
    button = next(b for b in window.loops.findChildren(QtWidgets.QPushButton) if b.text().startswith("Plot drift"))
    QTest.mouseClick(button, LEFT)
    assert window.plots.log_y and window.plots.log_box.isChecked()
    window.plots.refresh(force=True)
    x, y = window.plots.curves[L.residual].getData()
    assert np.allclose(y[-1], np.log10(d[-1, L.residual]))
    assert -17 <= np.nanmin(y) and np.nanmax(y) < -6
    # CSV: every recorded step, lambda and residual columns included, full precision
    from app.sim.recorder import read_csv
    path = tmp_path / "loops.csv"
    assert window.plots.export_csv(str(path)) == len(d)
    cols, data = read_csv(str(path))
    assert cols == names and "lambda:closure[1]" in cols and "residual:closure" in cols
    assert np.array_equal(data, rec.data(), equal_nan=True)


def test_constraint_force_arrows_at_the_closure_point(qtbot, window, engine_mod):
    e = engine_mod
    worker = open_shipped(qtbot, window, "four_bar", running=False)
    assert window.toggles["constraints"].isChecked()         # on by default, like the other force arrows
    n0 = window.worker.snapshot().steps
    window.worker.single_step(20)
    snap = wait_snapshot(qtbot, window, lambda s: s.steps == n0 + 20 and bool(s.constraint_forces))
    settle(qtbot, window)
    # the forces came from the simulation thread: engine.constraint_wrenches at the drawn state
    m = window.model.clone()
    (name, point, force, moment), = e.constraint_wrenches(m, snap.q, snap.v, snap.lam)
    (n2, p2, f2, m2), = snap.constraint_forces
    assert name == n2 == "closure"
    assert np.allclose(p2, point) and np.allclose(f2, force) and np.allclose(m2, moment)
    assert np.linalg.norm(force) > 0.1
    # the overlay holds an arrow starting at the closure point, along the force
    arrows = window.scene.constraint_arrows
    assert len(arrows) == 1 and arrows[0][0] == "closure"
    assert np.allclose(arrows[0][1], point)
    vec = arrows[0][2]
    assert np.dot(vec, force) / (np.linalg.norm(vec) * np.linalg.norm(force)) > 0.9999
    item = window.scene._overlay["constraints"]
    assert item.visible()
    assert np.allclose(item.pos[0], point) and np.allclose(item.pos[1], point + vec)
    marks = window.scene._overlay["closure_points"]
    assert marks.visible() and np.allclose(marks.pos[0], point)
    # pixels: the arrow and the marker are drawn (toggle from the View menu action)
    on = frame_pixels(window)
    window.toggles["constraints"].setChecked(False)
    settle(qtbot, window)
    off = frame_pixels(window)
    assert not item.visible()
    changed = np.abs(on - off).sum(axis=2) > 40
    assert changed.sum() > 30, f"the constraint overlay changes only {changed.sum()} pixels"
    # where it changed: near the screen image of the closure point and green (the arrow's colour)
    ys, xs = np.nonzero(changed)
    px, py = window.view.project(point)
    ratio = on.shape[1] / window.view.width()
    assert np.hypot(xs - px * ratio, ys - py * ratio).min() < 12
    col = on[changed]
    assert ((col[:, 1] > 120) & (col[:, 0] < 90) & (col[:, 1] > col[:, 2] + 40)).sum() > 10, "no green arrow"
    # the snapshots stop carrying them when the overlay is off (nothing computed for nothing)
    window.worker.single_step(1)
    s = wait_snapshot(qtbot, window, lambda s: s.steps == n0 + 21)
    assert s.constraint_forces is None
    # joint reaction arrows include the loop forces: the worker's wrenches are
    # engine.joint_reaction_wrenches with lambda, which differ from the open tree's
    window.toggles["reactions"].setChecked(True)
    s = wait_snapshot(qtbot, window, lambda s: s.wrenches is not None)
    sim = worker.sim
    with_loop = e.joint_reaction_wrenches(m, sim.q_prev, sim.v_prev, sim.a, None, sim.lam)
    without = e.joint_reaction_wrenches(m, sim.q_prev, sim.v_prev, sim.a, None, None)
    for j in ("crank", "coupler", "rocker"):
        assert np.allclose(s.wrenches[j], with_loop[j])
    assert max(np.abs(with_loop[j][3:] - without[j][3:]).max() for j in ("coupler", "rocker")) > 0.1


def test_switching_the_loop_off_lets_it_come_apart_and_on_projects_it_back(qtbot, window):
    # the four-bar's URDF limits (+-2 pi, a URDF revolute needs some) are reached only once the
    # opened chain spins; a limit step is a semi-implicit Euler step, whose loop drift (~1e-5 m)
    # is not what this test measures (the projection back onto the loop)
    window.contact.choose("four_bar", limits=False)
    worker = open_shipped(qtbot, window, "four_bar")
    assert window.constraints_dock.isVisible()
    L = worker.layout
    box = window.loops.boxes["closure"]
    assert box.isChecked()
    s0 = wait_snapshot(qtbot, window, lambda s: s.t > 0.3, timeout=20000)
    assert s0.residual < 1e-6
    click(box)                 # a real click: the loop opens while running
    assert not box.isChecked()
    off = wait_snapshot(qtbot, window, lambda s: s.constraint_enabled == (False,))
    s = wait_snapshot(qtbot, window, lambda s: s.residuals[0] > 0.05 and s.t > off.t + 0.2, timeout=20000)
    assert s.running and s.residual == 0.0      # nothing enabled: no drift to measure, the gap is there
    assert window.model.constraints[0].enabled, "the GUI's model is not the simulation thread's"
    qtbot.waitUntil(lambda: "off" in window.loops.readouts["closure"].text(), timeout=5000)
    # the open loop draws its gap (a grey line between its two points)
    points = s.closure_points
    assert points and points[0][1] is False and np.linalg.norm(points[0][2] - points[0][3]) > 0.05
    click(box)                 # closed again: projected back at once
    on = wait_snapshot(qtbot, window, lambda s: s.constraint_enabled == (True,))
    assert on.residual < 1e-8, on.residual
    s = wait_snapshot(qtbot, window, lambda s: s.t > on.t + 0.3, timeout=20000)
    assert s.residual < 1e-6
    snap = pause(qtbot, window)
    d = window.plots.recorder.data()
    assert window.plots.recorder.total == snap.steps == len(d)      # no step lost across the switches
    assert np.allclose(np.diff(d[:, 0]), snap.dt, rtol=0, atol=1e-9)
    t = d[:, 0]
    lam = d[:, L.lam]
    gap = d[:, L.residual_columns["closure"]]
    # the steps taken with the loop off: one block, without multipliers, from the switch off
    # (at or before the first snapshot that showed it) to the switch on
    opened = np.isnan(lam).any(axis=1)
    k = np.flatnonzero(opened)
    assert len(k) > 100 and np.all(np.diff(k) == 1), "the loop was off for one stretch of steps"
    assert np.isnan(lam[opened]).all()
    assert t[k[0]] <= off.t and on.t - 0.5 < t[k[-1]] < on.t      # (a loaded machine may skip batches)
    assert t[k[0]] >= s0.t
    assert gap[opened].max() > 0.05 and np.all(d[opened, L.residual] == 0.0)
    after = slice(k[-1] + 1, None)
    assert gap[k[-1] + 1] < 1e-10, "not projected back when switched on"
    assert np.all(gap[after] < 1e-6) and np.isfinite(lam[after]).all()


def test_baumgarte_time_constant_and_projection_reach_the_simulator(qtbot, window):
    worker = open_shipped(qtbot, window, "four_bar")
    panel = window.loops
    field = panel.time_field
    s = wait_snapshot(qtbot, window, lambda s: s.baumgarte_used is not None)
    assert s.baumgarte_time is None and s.baumgarte_used == pytest.approx(0.1)
    qtbot.waitUntil(lambda: "0.1 s (default)" in panel.used_label.text(), timeout=5000)
    # typed in the field (Return): the simulator uses it from the next step
    field.setFocus()
    field.selectAll()
    QTest.keyClicks(field, "0.05")
    QTest.keyClick(field, QtCore.Qt.Key.Key_Return)
    s = wait_snapshot(qtbot, window, lambda s: s.baumgarte_time == 0.05)
    assert s.baumgarte_used == pytest.approx(0.05)
    assert worker.sim.baumgarte() == pytest.approx((20.0, 20.0))
    # below 2 dt: the simulator clamps, the panel shows the value in use
    field.selectAll()
    QTest.keyClicks(field, "1e-4")
    QTest.keyClick(field, QtCore.Qt.Key.Key_Return)
    s = wait_snapshot(qtbot, window, lambda s: s.baumgarte_time == 1e-4)
    assert s.baumgarte_used == pytest.approx(2 * s.dt)
    qtbot.waitUntil(lambda: "clamped to 2 dt" in panel.used_label.text(), timeout=5000)
    assert "2 ms" in panel.used_label.text()
    # not a number, or out of range: refused at the field, nothing sent
    field.selectAll()
    QTest.keyClicks(field, "abc")
    QTest.keyClick(field, QtCore.Qt.Key.Key_Return)
    assert "'abc' is not a number" in field.last_hint
    field.clear()
    QTest.keyClicks(field, "-3")
    QTest.keyClick(field, QtCore.Qt.Key.Key_Return)
    assert "Baumgarte" in field.last_hint
    spin(qtbot, 0.1)
    assert worker.snapshot().baumgarte_time == 1e-4
    # Default, then stabilisation off
    QTest.mouseClick(panel.default_btn, LEFT)
    wait_snapshot(qtbot, window, lambda s: s.baumgarte_time is None and s.baumgarte_used == pytest.approx(0.1))
    click(panel.baumgarte_box)
    s = wait_snapshot(qtbot, window, lambda s: s.stabilization == "none" and s.baumgarte_used is None)
    assert worker.sim.baumgarte() is None
    qtbot.waitUntil(lambda: "off" in panel.used_label.text(), timeout=5000)
    assert not field.isEnabled()
    # Project now: a state pulled off the loop (paused) is put back on it
    snap = pause(qtbot, window)
    q = snap.q.copy()
    q[1] += 0.2
    worker.set_state(q)
    s = wait_snapshot(qtbot, window, lambda s: s.residual > 0.01)
    QTest.mouseClick(panel.project_btn, LEFT)
    s = wait_snapshot(qtbot, window, lambda s: s.residual < 1e-10)
    assert not s.running
    # project every step: the drift stays at round-off even without Baumgarte
    click(panel.every_box)
    wait_snapshot(qtbot, window, lambda s: s.project_every_step)
    window.set_running(True)
    s0 = wait_snapshot(qtbot, window, lambda s: s.running)
    wait_snapshot(qtbot, window, lambda s: s.t > s0.t + 0.3, timeout=20000)
    pause(qtbot, window)
    d = window.plots.recorder.data()
    L = worker.layout
    assert np.all(d[d[:, 0] > s0.t + 0.01, L.residual] < 1e-10)


def test_the_panel_is_hidden_for_a_tree_and_lists_every_loop(qtbot, window, models):
    pendulum, _ = models
    install(qtbot, window, pendulum, running=True)
    assert not window.constraints_dock.isVisible()
    assert not window.loops.has_constraints()
    assert window.worker.layout.residual is None and window.worker.layout.nlam == 0
    assert window.worker.snapshot().closure_points is None
    tree = window.plots.tree
    assert not any(tree.topLevelItem(k).text(0).startswith("constraint") for k in range(tree.topLevelItemCount()))
    # a leg with two loops (a rod and a planar closure): both listed, each with its force in N
    worker = open_shipped(qtbot, window, "closed_chain_leg")
    assert window.constraints_dock.isVisible()
    assert list(window.loops.boxes) == ["achilles", "plantar"]
    L = worker.layout
    assert [L.units[c] for c in range(L.lam.start, L.lam.stop)] == ["N", "N", "N"]
    wait_snapshot(qtbot, window, lambda s: s.t > 0.2 and len(s.lam) == 3, timeout=20000)
    qtbot.waitUntil(lambda: all("λ:" in r.text() and " N" in r.text() for r in window.loops.readouts.values()),
                    timeout=5000)
    s = wait_snapshot(qtbot, window, lambda s: s.constraint_forces is not None and len(s.constraint_forces) == 2)
    assert [f[0] for f in s.constraint_forces] == ["achilles", "plantar"]
    # switching one loop off leaves the other's multipliers in their columns
    click(window.loops.boxes["achilles"])
    wait_snapshot(qtbot, window, lambda s: s.constraint_enabled == (False, True))
    wait_snapshot(qtbot, window, lambda s: len(s.lam) == 2 and s.residuals[0] > 1e-3, timeout=20000)
    pause(qtbot, window)
    last = window.plots.recorder.data()[-1]
    assert np.isnan(last[L.lam_columns["achilles"]]).all()
    assert np.isfinite(last[L.lam_columns["plantar"]]).all()
    assert last[L.residual] < 1e-6 < last[L.residual_columns["achilles"]]
