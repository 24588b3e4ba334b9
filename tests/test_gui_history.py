"""The timeline (app/window/timeline.py) in the real window under Xvfb, driven by real mouse and key
events: the double pendulum runs 3 s, pauses, the slider is dragged to about 1 s; the 3D pose, the
joint readouts, the plots' cursor, the Inspector and the Equation view then show that instant, checked against an
independent re-simulation with engine.Simulator from the same start. Resuming from there drops
the later history (the new future, with gravity off, is checked against the engine too);
playback runs at the chosen speed (a clock the test drives, no timing); the history's CSV and the
state at the cursor as a lesson are read back."""
from __future__ import annotations

import os
import re

import numpy as np
import pytest

if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
        or os.environ.get("QT_QPA_PLATFORM", "").startswith("offscreen")):
    pytest.skip("no display: install Xvfb (scripts/install-system-deps.sh) for the GUI tests",
                allow_module_level=True)

from PyQt6 import QtCore, QtWidgets  # noqa: E402
from PyQt6.QtTest import QTest  # noqa: E402

from test_gui_support import engine_mod, window, install, wait_snapshot, focus  # noqa: F401,E402

DT = 1e-3
LEFT = QtCore.Qt.MouseButton.LeftButton
NOMOD = QtCore.Qt.KeyboardModifier.NoModifier


def slider_x(slider, value):
    """The x pixel of the slider's handle centre at ``value`` (the style's own geometry)."""
    opt = QtWidgets.QStyleOptionSlider()
    slider.initStyleOption(opt)
    style = slider.style()
    CC = QtWidgets.QStyle.ComplexControl.CC_Slider
    groove = style.subControlRect(CC, opt, QtWidgets.QStyle.SubControl.SC_SliderGroove, slider)
    handle = style.subControlRect(CC, opt, QtWidgets.QStyle.SubControl.SC_SliderHandle, slider)
    span = groove.width() - handle.width()
    return groove.x() + handle.width() // 2 + QtWidgets.QStyle.sliderPositionFromValue(
        slider.minimum(), slider.maximum(), value, span)


def drag_slider(qtbot, slider, value):
    """Press on the handle, move in steps to ``value``'s pixel, release (real mouse events)."""
    y = slider.height() // 2
    x0, x1 = slider_x(slider, slider.value()), slider_x(slider, value)
    QTest.mousePress(slider, LEFT, NOMOD, QtCore.QPoint(x0, y))
    for k in range(1, 11):
        QTest.mouseMove(slider, QtCore.QPoint(int(round(x0 + (x1 - x0) * k / 10)), y))
        qtbot.wait(15)
    QTest.mouseRelease(slider, LEFT, NOMOD, QtCore.QPoint(x1, y))


def press(qtbot, win, key):
    """A real key press on the (activated) window: Space runs or pauses, G switches gravity."""
    if not win.isActiveWindow():
        win.activateWindow()
        qtbot.waitUntil(win.isActiveWindow, timeout=5000)
    QTest.keyClick(win, key)


def resimulate(e, model, q0, v0, t):
    """engine.Simulator from (q0, v0) at t = 0, stepped to t (dt = 1 ms, RK4, no input)."""
    sim = e.Simulator(model, dt=DT, integrator="rk4", q=q0, v=v0)
    n = int(round(t / DT))
    if n:
        sim.step(n)
    return sim


def shows_instant(qtbot, win, sim, e, model):
    """Wait until the window shows sim's state: snapshot, 3D pose, joint readouts, Equation view."""
    snap = wait_snapshot(qtbot, win, lambda s: not s.running and abs(s.t - sim.t) < 1e-9)
    np.testing.assert_allclose(snap.q, sim.q, rtol=0, atol=1e-9)
    np.testing.assert_allclose(snap.v, sim.v, rtol=0, atol=1e-9)
    ddq = e.forward_dynamics(model, sim.q, sim.v, np.zeros(model.nv))
    np.testing.assert_allclose(snap.a, ddq, rtol=1e-9, atol=1e-9)      # evaluated there, not recorded
    qtbot.waitUntil(lambda: win._last_serial == snap.serial, timeout=5000)
    poses = e.body_poses(model, sim.q)
    for k in range(1, model.nbodies + 1):
        np.testing.assert_allclose(win.scene.body_poses[k], poses[k - 1], atol=1e-9)
    from app.panels.jointpanel import _num            # the readouts' own format (4 significant digits)
    qtbot.waitUntil(lambda: all(f"q {_num(sim.q[i])}  gets ddq {_num(ddq[i])}" in win.joints.rows[j].readout.text()
                                for i, j in enumerate(("joint1", "joint2"))), timeout=5000)
    eq = e.equation_terms(model, sim.q, sim.v, ddq)
    table = win.teach.equation.table
    from app.widgets.numfmt import fmt, scale_of
    from app.teach.inspector import fmt_value
    scale = scale_of(eq.M_ddq, eq.C_dq, eq.g, eq.constraint, eq.external, eq.contact, eq.limit, eq.tau)
    qtbot.waitUntil(lambda: table.item(0, 0).text() == fmt(eq.M_ddq[0], scale)
                    and table.item(1, 2).text() == fmt(eq.g[1], scale), timeout=5000)
    ins = win.teach.inspector                          # link2 selected: joint2's q, dq, ddq
    qtbot.waitUntil(lambda: f"t = {sim.t:.3f} s" in ins.title.text() and ins.value_text("q") == fmt_value(sim.q[1])
                    and ins.value_text("dq") == fmt_value(sim.v[1]) and ins.value_text("ddq") == fmt_value(ddq[1]),
                    timeout=5000)
    return snap


def test_scrub_resume_playback_and_export(qtbot, window, engine_mod, tmp_path, monkeypatch):
    e = engine_mod
    from engine.catalog import load_model, initial_state
    model = load_model("double_pendulum")
    q0, v0 = initial_state(model)
    window.resize(1280, 800)
    install(qtbot, window, model, q0=q0, running=True)
    window.teach.equation_dock.show()                 # the Equation view and the Inspector follow the cursor too
    window.teach.inspector_dock.show()
    window.teach.select_body("link2")
    tl = window.timeline
    wait_snapshot(qtbot, window, lambda s: s.t >= 3.0, timeout=60000)
    press(qtbot, window, QtCore.Qt.Key.Key_Space)  # pause
    end = wait_snapshot(qtbot, window, lambda s: not s.running)
    qtbot.waitUntil(lambda: tl.slider.isEnabled() and tl.slider.value() == tl.slider.maximum() == len(tl.history),
                    timeout=5000)
    h = tl.history
    assert h.first_time() == 0.0 and abs(h.last_time() - (end.t - DT)) < 1e-9
    np.testing.assert_allclose(np.diff(h.times()), DT, atol=1e-9)             # every step kept at dt = 1 ms

    # drag the handle to about 1 s: every view shows the recorded instant
    target = h.index_at(1.0)
    drag_slider(qtbot, tl.slider, target)
    qtbot.waitUntil(lambda: tl.cursor is not None and not tl.slider.isSliderDown(), timeout=5000)
    t_c = tl.cursor_time()
    assert abs(t_c - 1.0) < 0.05, t_c          # where the mouse put it, a pixel or two from 1 s
    sim = resimulate(e, model, q0, v0, t_c)
    assert abs(sim.t - t_c) < 1e-9
    shows_instant(qtbot, window, sim, e, model)
    rows = window.plots.rows
    assert rows and all(r.cursor.isVisible() and abs(r.cursor.value() - (t_c - window.plots.t_end)) < 1e-9
                        for r in rows.values())
    assert "t = " in tl.label.text() and f"{t_c:.3f}" in tl.label.text()
    # a plot window shorter than the way back: the plots show the cursor's neighbourhood
    window.plots.window_box.setValue(1.0)
    c = t_c - window.plots.t_end
    for r in rows.values():
        qtbot.waitUntil(lambda r=r: abs(r.plot.viewRange()[0][1] - (c + 0.5)) < 1e-6, timeout=5000)
        assert r.plot.viewRange()[0][0] < r.cursor.value() < r.plot.viewRange()[0][1]
    window.plots.window_box.setValue(10.0)

    # at 1280 x 800 the bar is whole: slider, label (not cut), export, all inside the window
    img = window.save_screenshot(str(tmp_path / "timeline.png"))
    assert (img.width(), img.height()) == (window.width(), window.height()) == (1280, 800)
    for w in (tl.play_btn, tl.speed_box, tl.slider, tl.label, tl.export_btn):
        assert w.isVisible(), w.objectName()
        r = QtCore.QRect(w.mapTo(window, QtCore.QPoint(0, 0)), w.size())
        assert window.rect().contains(r), (w.objectName(), r)
    assert tl.slider.width() >= 400
    assert tl.label.fontMetrics().horizontalAdvance(tl.label.text()) <= tl.label.width()
    assert window.view.widget.height() >= 300           # the 3D view keeps its room

    # keys: five samples on, then Page Down (0.1 s) and Page Up back
    focus(qtbot, tl.slider)
    for _ in range(5):
        QTest.keyClick(tl.slider, QtCore.Qt.Key.Key_Right)
    sim.step(5)
    shows_instant(qtbot, window, sim, e, model)
    t_c = tl.cursor_time()
    assert abs(t_c - sim.t) < 1e-9
    QTest.keyClick(tl.slider, QtCore.Qt.Key.Key_PageUp)
    shows_instant(qtbot, window, resimulate(e, model, q0, v0, t_c + 0.1), e, model)
    QTest.keyClick(tl.slider, QtCore.Qt.Key.Key_PageDown)
    shows_instant(qtbot, window, sim, e, model)

    # a joint law changed after that instant: the readouts shown are the new inputs', and the
    # label says they are not the recorded ones; back to the recorded law, they agree again
    row = window.joints.rows["joint1"]
    row.mode.setCurrentText("acceleration")
    row.law.setCurrentIndex(row.law.findData("hold"))
    wait_snapshot(qtbot, window, lambda s: s.prescribed[0] and abs(s.t - t_c) < 1e-12)
    qtbot.waitUntil(lambda: tl.inputs_changed and "inputs changed since" in tl.label.text(), timeout=5000)
    row.mode.setCurrentText("torque")
    row.law.setCurrentIndex(row.law.findData("zero"))
    wait_snapshot(qtbot, window, lambda s: not s.prescribed[0])
    qtbot.waitUntil(lambda: not tl.inputs_changed and "inputs changed" not in tl.label.text(), timeout=5000)
    shows_instant(qtbot, window, sim, e, model)

    # the state at the cursor as a lesson, read back
    from app.sim.lessons import load_lesson
    lesson = tl.export.lesson(str(tmp_path / "at_cursor.jlab"))
    back = load_lesson(str(tmp_path / "at_cursor.jlab"))
    assert back.q == lesson.q and back.running is False
    assert back.q["joint1"] == pytest.approx(sim.q[0], abs=1e-12) and back.v["joint2"] == pytest.approx(sim.v[1], abs=1e-12)
    assert f"t = {t_c:.3f} s" in back.notes

    # the history as CSV, read back: the recorded states are the re-simulation's
    from app.sim.recorder import read_csv
    n = tl.export.csv(str(tmp_path / "history.csv"))
    names, data = read_csv(str(tmp_path / "history.csv"))
    assert n == len(h) == len(data) and names[:3] == ["t", "q:joint1", "q:joint2"]
    np.testing.assert_array_equal(data, h.data())
    k = int(np.argmin(np.abs(data[:, 0] - 2.0)))
    np.testing.assert_allclose(data[k, 1:3], resimulate(e, model, q0, v0, data[k, 0]).q, atol=1e-9)

    # the same through the Export menu (the file dialog answered by the test); a folder that does
    # not exist: the window says so, naming the path, and writes nothing
    actions = {a.text(): a for a in tl.export_btn.menu().actions()}
    answer = [str(tmp_path / "via_menu.jlab")]
    monkeypatch.setattr(QtWidgets.QFileDialog, "getSaveFileName", staticmethod(lambda *a, **k: (answer[0], "")))
    actions["State at the cursor as a lesson…"].trigger()
    assert load_lesson(answer[0]).q == lesson.q
    answer[0] = str(tmp_path / "missing" / "history.csv")
    window.last_error = None
    actions["History (CSV)…"].trigger()
    assert window.last_error and answer[0] in window.last_error and "does not exist" in window.last_error
    assert not (tmp_path / "missing").exists()

    # resume from the cursor with gravity off: the history after the cursor is dropped and
    # replaced by the new future, which is the engine's from the cursor's state
    old_last = h.last_time()
    said = []
    tl.message.connect(said.append)
    press(qtbot, window, QtCore.Qt.Key.Key_G)
    wait_snapshot(qtbot, window, lambda s: not any(s.gravity))
    press(qtbot, window, QtCore.Qt.Key.Key_Space)
    wait_snapshot(qtbot, window, lambda s: s.running)
    wait_snapshot(qtbot, window, lambda s: s.t > t_c + 0.3, timeout=30000)
    press(qtbot, window, QtCore.Qt.Key.Key_Space)
    wait_snapshot(qtbot, window, lambda s: not s.running)
    qtbot.waitUntil(lambda: tl.slider.isEnabled() and tl.cursor is None, timeout=5000)
    times = h.times()
    assert np.all(np.diff(times) > 0) and h.last_time() < old_last - 1.0
    rec_t = window.plots.recorder.data(columns=[0])[:, 0]
    assert np.all(np.diff(rec_t) > 0) and rec_t[-1] < old_last - 1.0
    np.testing.assert_allclose(np.diff(times), DT, atol=1e-9)                # no gap, no duplicate at t_c
    zero_g = model.clone()
    zero_g.gravity = (0.0, 0.0, 0.0)
    free = e.Simulator(zero_g, dt=DT, integrator="rk4", q=sim.q, v=sim.v)
    i_c = h.index_at(t_c)
    assert abs(h.state(i_c)[0] - t_c) < 1e-9
    np.testing.assert_allclose(h.state(i_c)[1], sim.q, atol=1e-12)
    free.step(200)
    np.testing.assert_allclose(h.state(i_c + 200)[1], free.q, atol=1e-9)
    before = h.state(i_c - 1)[1]
    np.testing.assert_allclose(before, resimulate(e, model, q0, v0, t_c - DT).q, atol=1e-9)
    assert any(m.startswith(f"resumed at t = {t_c:.3f} s: the ") and "recorded after it are dropped" in m
               for m in said), said

    # playback at 0.1x and 2x with a clock the test drives: each tick adds speed x 50 ms
    clock = [100.0]

    def tick_clock():
        clock[0] += 0.05
        return clock[0]
    tl.playback.clock = tick_clock
    for speed in (0.1, 2.0):
        tl.speed_box.setCurrentIndex(tl.speed_box.findData(speed))
        tl.slider.setValue(0)
        wait_snapshot(qtbot, window, lambda s: s.t == 0.0)
        seen = []
        conn = tl.playback.timer.timeout.connect(lambda: seen.append(tl.cursor_time()))
        QTest.mouseClick(tl.play_btn, LEFT)
        assert tl.play_btn.isChecked()
        qtbot.waitUntil(lambda: len(seen) >= 6 or not tl.play_btn.isChecked(), timeout=20000)
        QTest.mouseClick(tl.play_btn, LEFT)              # stop
        tl.playback.timer.timeout.disconnect(conn)
        assert not tl.play_btn.isChecked() and len(seen) >= 6
        # the first tick moves from 0 by one speed x 50 ms; each shown instant is a recorded row
        np.testing.assert_allclose(np.diff([0.0] + seen[:6]), speed * 0.05, atol=1.01e-3)
    # played to the end, it stops at the state the run was paused in
    tl.speed_box.setCurrentIndex(tl.speed_box.findData(2.0))
    tl.slider.setValue(len(h) - 3)
    QTest.mouseClick(tl.play_btn, LEFT)
    qtbot.waitUntil(lambda: not tl.play_btn.isChecked(), timeout=20000)
    assert tl.cursor is None
    wait_snapshot(qtbot, window, lambda s: s.t > h.last_time())
