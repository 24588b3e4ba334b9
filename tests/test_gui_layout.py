"""The window's layout at the sizes a teacher projects (1280x800, 1440x920, 1840x1020), in the
real window under Xvfb: every control of every joint is reachable without horizontal scrolling,
no joint name or readout is cut, the Constraints panel leaves several joint rows visible, the
toolbar does not move when Pause becomes Run, status texts stay true, panels reset for a new
model, and the gallery is browsable before the engine is there.

Screenshots of each size are written to $JOINTLAB_SHOTS (or the test's temporary folder) and
read back."""
from __future__ import annotations

import os

import pytest

if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
        or os.environ.get("QT_QPA_PLATFORM", "").startswith("offscreen")):
    pytest.skip("no display: install Xvfb (scripts/install-system-deps.sh) for the GUI tests",
                allow_module_level=True)

from test_gui_support import window_shot, engine_mod, window, wait_snapshot, spin, focus  # noqa: F401

import numpy as np
from PyQt6 import QtCore, QtWidgets
from PyQt6.QtTest import QTest

SIZES = ((1280, 800), (1440, 920), (1840, 1020))
LEFT = QtCore.Qt.MouseButton.LeftButton


def open_shipped(qtbot, win, name, running=True):
    win.open_model(name)
    qtbot.waitUntil(lambda: win.model is not None and win.model.name == name and win.worker is not None,
                    timeout=120000)
    if not running:
        win.set_running(False)
    wait_snapshot(qtbot, win, lambda s: s.running == running)
    return win.worker


def resize(qtbot, win, w, h):
    win.resize(w, h)
    qtbot.waitUntil(lambda: (win.width(), win.height()) == (w, h), timeout=5000)
    win.default_layout()
    spin(qtbot, 0.3)


def shot(win, tmp_path, name):
    return window_shot(win, tmp_path, f"layout-{name}")


def in_viewport(panel, widget):
    """The widget's rectangle inside the joint panel's scroll viewport (horizontally and, after
    scrolling to it, vertically), and the widget visible."""
    vp = panel.scroll.viewport()
    top_left = widget.mapTo(vp, QtCore.QPoint(0, 0))
    r = QtCore.QRect(top_left, widget.size())
    return widget.isVisible() and r.left() >= 0 and r.right() < vp.width() and r.top() >= 0 \
        and r.bottom() < vp.height()


def not_cut(label):
    """A label shows its whole text: each line as wide as its contents, or word-wrapped."""
    fm = label.fontMetrics()
    lines = label.text().split("\n")
    widest = max(fm.horizontalAdvance(line) for line in lines)
    tall_enough = fm.height() * len(lines) <= label.contentsRect().height() + 1
    return tall_enough and (label.wordWrap() or widest <= label.contentsRect().width())


def check_joint_controls(qtbot, win, where):
    panel = win.joints
    hbar = panel.scroll.horizontalScrollBar()
    assert not hbar.isVisible(), f"{where}: the joint panel scrolls horizontally ({hbar.maximum()} px)"
    assert panel.scroll.widget().width() <= panel.scroll.viewport().width(), where
    for w in (panel.all_mode, panel.all_law, panel.apply_button, panel.open_all):
        r = QtCore.QRect(w.mapTo(panel, QtCore.QPoint(0, 0)), w.size())
        assert w.isVisible() and r.right() < panel.width(), f"{where}: {w.objectName()} cut"
    snap = win.worker.snapshot()
    panel.show_state(snap, snap.running)
    for name, row in panel.rows.items():
        panel.open_row(name, True)
        qtbot.waitUntil(lambda: row.editor.isVisible(), timeout=2000)
        panel.scroll.ensureWidgetVisible(row.widget, 0, 0)
        QtWidgets.QApplication.processEvents()
        widgets = [row.toggle, row.name_label, row.mode, row.law, row.readout, *row.fields.values()]
        if row.slider is not None:
            widgets.append(row.slider)
        for w in widgets:
            assert in_viewport(panel, w), f"{where}: {name}'s {w.objectName() or type(w).__name__} not reachable"
        assert not_cut(row.name_label), f"{where}: name {name} cut"
        assert row.readout.text() and not_cut(row.readout), f"{where}: {name} readout '{row.readout.text()}' cut"
        for combo in (row.mode, row.law):
            assert combo.width() >= combo.sizeHint().width() - 1, f"{where}: {name} {combo.currentText()} cut"
        for f in row.fields.values():
            assert f.width() >= f.fontMetrics().horizontalAdvance(f.text()) + 4, f"{where}: {f.objectName()}"
        panel.open_row(name, False)
    assert not hbar.isVisible(), f"{where}: a horizontal scroll bar appeared while rows were open"


@pytest.mark.parametrize("model", ["double_pendulum", "arm7", "humanoid"])
def test_every_joint_control_is_reachable_at_each_size(qtbot, window, model, tmp_path):
    open_shipped(qtbot, window, model, running=False)
    from app.sim.inputs import JointInput
    # every 1-dof joint gets the law with the most parameters (sine trajectory: six fields)
    for name, row in window.joints.rows.items():
        if row.joint.kind != "free":
            window.joints.set_input(name, JointInput("acceleration", "sine", amplitude=0.2, frequency=0.5))
    assert all(len(r.fields) == 6 for r in window.joints.rows.values() if r.joint.kind != "free")
    got = window.joints.inputs()
    assert set(got) == set(window.joints.rows)
    assert all(got[n].kind == "sine" for n, r in window.joints.rows.items() if r.joint.kind != "free")
    moving = np.concatenate([np.arange(j.idx_v, j.idx_v + j.nv) for j in window.model.joints if j.kind != "free"])
    wait_snapshot(qtbot, window, lambda s: bool(s.prescribed[moving].all()))
    for w, h in SIZES:
        resize(qtbot, window, w, h)
        check_joint_controls(qtbot, window, f"{model} at {w}x{h}")
        # several rows at once in the joint panel (more than six rows' worth of height)
        rows = list(window.joints.rows.values())
        if len(rows) > 6:
            assert window.joints.scroll.viewport().height() > 6 * rows[1].widget.sizeHint().height()
        # the toolbar fits: nothing of it hidden behind an extension button
        for tb in window.findChildren(QtWidgets.QToolBar):
            if tb.isVisible():
                for a in tb.actions():
                    wid = tb.widgetForAction(a)
                    if wid is not None and a.isVisible() and not a.isSeparator():
                        assert wid.isVisible(), f"{model} at {w}x{h}: toolbar item '{a.text()}' hidden"
        for label in (window.time_label, window.rtf_label):
            assert not_cut(label), f"{w}x{h}: '{label.text()}' cut"
        # the picture: the second joint's editor open, the list from the top
        second = list(window.joints.rows)[1]
        window.joints.open_row(second)
        window.joints.scroll.verticalScrollBar().setValue(0)
        spin(qtbot, 0.2)
        assert in_viewport(window.joints, window.joints.rows[second].fields["kd"])
        shot(window, tmp_path, f"{model}-{w}x{h}")
        window.joints.open_row(second, False)


def test_constraints_panel_leaves_several_joint_rows_visible(qtbot, window, tmp_path):
    open_shipped(qtbot, window, "closed_chain_leg", running=False)
    for w, h in SIZES:
        resize(qtbot, window, w, h)
        assert window.constraints_dock.isVisible()
        rows = list(window.joints.rows.values())
        row_h = rows[0].widget.sizeHint().height()
        shown = window.joints.scroll.viewport().height() // row_h
        assert shown >= min(len(rows), 4), f"{w}x{h}: {shown} joint rows visible with the constraints open"
        check_joint_controls(qtbot, window, f"closed_chain_leg at {w}x{h}")
        # the constraints panel shows its readouts whole, and scrolls rather than clips
        for name, lab in window.loops.readouts.items():
            assert lab.isVisible()
        window.joints.scroll.verticalScrollBar().setValue(0)
        spin(qtbot, 0.1)
        shot(window, tmp_path, f"closed_chain_leg-{w}x{h}")


def test_run_button_keeps_its_width_and_the_toolbar_does_not_move(qtbot, window):
    open_shipped(qtbot, window, "double_pendulum", running=True)
    resize(qtbot, window, 1280, 800)
    tb = window.findChild(QtWidgets.QToolBar, "simulation")
    run = tb.widgetForAction(window.act_run)
    step = tb.widgetForAction(window.act_step)
    qtbot.waitUntil(lambda: window.act_run.text() == "Pause", timeout=5000)
    spin(qtbot, 0.1)
    before = (run.width(), step.x(), window.speed_box.x())
    window.set_running(False)
    qtbot.waitUntil(lambda: window.act_run.text() == "Run", timeout=5000)
    spin(qtbot, 0.1)
    assert (run.width(), step.x(), window.speed_box.x()) == before
    assert window.rtf_label.text() == "paused"


def test_all_joints_boxes_and_rows_reset_for_a_new_model(qtbot, window):
    open_shipped(qtbot, window, "double_pendulum", running=True)
    panel = window.joints
    panel.all_mode.setCurrentText("acceleration")
    panel.all_law.setCurrentIndex(panel.all_law.findData("hold"))
    QTest.mouseClick(panel.apply_button, LEFT)
    wait_snapshot(qtbot, window, lambda s: bool(s.prescribed.all()))
    panel.open_row("joint1")
    open_shipped(qtbot, window, "arm7", running=True)
    assert panel.all_mode.currentText() == "torque" and panel.all_law.currentData() == "zero"
    assert set(panel.rows) == {j.name for j in window.model.joints}
    assert not any(r.is_open for r in panel.rows.values())
    assert all(inp.mode == "torque" for inp in panel.inputs().values())


def test_choosing_a_law_with_parameters_opens_its_editor(qtbot, window):
    open_shipped(qtbot, window, "double_pendulum", running=False)
    row = window.joints.rows["joint2"]
    assert not row.editor.isVisible()
    focus(qtbot, row.law)
    QTest.keyClick(row.law, QtCore.Qt.Key.Key_Down)       # zero -> constant: one field, "value"
    assert row.current.kind == "constant"
    qtbot.waitUntil(lambda: row.fields["value"].isVisible(), timeout=2000)
    # a click on the name closes it, another opens it
    QTest.mouseClick(row.name_label, LEFT)
    assert not row.editor.isVisible()
    QTest.mouseClick(row.name_label, LEFT)
    assert row.editor.isVisible()


def test_status_bar_stops_saying_held_once_the_base_is_released(qtbot, window):
    window.contact.choose("humanoid", ground=False)      # in the air the window holds the base
    open_shipped(qtbot, window, "humanoid", running=True)
    root = window.model.joints[0].name
    assert "is held" in window.status.currentMessage()
    qtbot.waitUntil(lambda: "base held" in window.state_label.text(), timeout=5000)
    row = window.joints.rows[root]
    focus(qtbot, row.mode)
    QTest.keyClick(row.mode, QtCore.Qt.Key.Key_Up)           # acceleration -> torque: released
    assert row.current.mode == "torque"
    wait_snapshot(qtbot, window, lambda s: not s.prescribed[0])
    spin(qtbot, 0.3)
    assert "held" not in window.status.currentMessage()
    assert "held" not in window.state_label.text() and "base released" in window.state_label.text()
    # a model without a floating base: nothing about a base any more
    open_shipped(qtbot, window, "double_pendulum", running=True)
    spin(qtbot, 0.3)
    assert "base" not in window.state_label.text()
    assert "held" not in window.status.currentMessage()


def test_gallery_is_browsable_before_the_engine_and_opens_the_choice_after(qtbot, engine_mod, tmp_path):
    from app.window.gallery import shipped_entries
    from app.window.mainwindow import MainWindow
    settings = QtCore.QSettings(str(tmp_path / "settings.ini"), QtCore.QSettings.Format.IniFormat)
    win = MainWindow(None, settings=settings)          # as while the kernels compile: no engine yet
    qtbot.addWidget(win)
    win.resize(1280, 800)
    win.show()
    qtbot.waitExposed(win)
    try:
        g = win.gallery
        names = [g.list.item(i).data(QtCore.Qt.ItemDataRole.UserRole) for i in range(g.list.count())]
        shipped = [e["name"] for e in shipped_entries()]
        lessons = [e["name"] for e in win.lessons.gallery_entries()]
        assert len(shipped) >= 10 and len(lessons) >= 10
        assert [n for n in names if n] == lessons + shipped            # the lessons first, then the models
        # every title whole: wrapped onto more lines, never elided
        assert g.list.wordWrap() and not g.list.horizontalScrollBar().isVisible()
        for i in range(g.list.count()):
            it = g.list.item(i)
            if it.data(QtCore.Qt.ItemDataRole.UserRole):
                assert g.list.visualItemRect(it).width() <= g.list.viewport().width()
        # choosing one while compiling: it opens once the engine is there
        g.select("arm7")
        assert "7-dof" in g.text.toPlainText()
        QTest.mouseClick(g.open_button, LEFT)
        assert win.model is None and win.pending_model == ("arm7", None)
        win.set_engine(engine_mod)
        assert win.gallery.list.currentItem().data(QtCore.Qt.ItemDataRole.UserRole) == "arm7"
        win.open_model(*win.take_pending_model())
        qtbot.waitUntil(lambda: win.model is not None and win.model.name == "arm7", timeout=120000)
        assert win.take_pending_model() is None
    finally:
        if win.worker is not None:
            win.worker.stop()
        win.close()


def test_gallery_entries_of_another_kind_are_not_opened_as_models(qtbot, window):
    chosen, entries = [], []
    window.gallery.chosen.connect(chosen.append)
    window.gallery.entryChosen.connect(entries.append)
    lesson = {"name": "lesson:energy", "kind": "lesson", "source": "lessons", "title": "Energy: RK4 vs Euler",
              "notes": "Run both integrators.\n\nWatch the total energy."}
    window.gallery.set_models([lesson, {"name": "double_pendulum", "source": "assets", "title": "Double pendulum"}])
    window.gallery.select("lesson:energy")
    assert "Watch the total energy" in window.gallery.text.toPlainText()
    assert window.gallery.open_button.text() == "Open selected lesson"
    QTest.mouseClick(window.gallery.open_button, LEFT)
    assert chosen == [] and entries == [lesson]
    window.gallery.select("double_pendulum")
    QTest.mouseClick(window.gallery.open_button, LEFT)
    assert chosen == ["double_pendulum"]
