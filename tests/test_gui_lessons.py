"""Lessons in the real window (Xvfb, real mouse events): every shipped lesson opens from the gallery
(a double-click on its item) and through the command line's path, runs 2 s and shows what its file
says (joint modes and laws in the panel and in the simulation thread, plot channels, camera,
integrator, time step, switches); File > Save Lesson then Open Lesson gives the same scene back; a
bad lesson changes nothing and says what is wrong."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
        or os.environ.get("QT_QPA_PLATFORM", "").startswith("offscreen")):
    pytest.skip("no display: install Xvfb (scripts/install-system-deps.sh) for the GUI tests",
                allow_module_level=True)

from test_gui_support import engine_mod, window, wait_snapshot  # noqa: F401

from PyQt6 import QtCore, QtGui, QtWidgets
from PyQt6.QtTest import QTest

from app.sim import lessons as L
from app.teach.lessonui import get_camera

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LEFT = QtCore.Qt.MouseButton.LeftButton
NOMOD = QtCore.Qt.KeyboardModifier.NoModifier
LESSONS = L.shipped_lessons()


def _wait_applied(qtbot, win, path, timeout=120000):
    path = os.path.abspath(path)
    qtbot.waitUntil(lambda: win.lessons.current is not None and win.lessons.current.path == path
                    and win.worker is not None, timeout=timeout)
    return win.lessons.current


def _gallery_item(win, path):
    lst = win.gallery.list
    for i in range(lst.count()):
        it = lst.item(i)
        if it.data(QtCore.Qt.ItemDataRole.UserRole) == path:
            return it
    raise AssertionError(f"{path} is not in the gallery")


def _double_click_item(qtbot, win, it):
    lst = win.gallery.list
    lst.scrollToItem(it)
    rect = lst.visualItemRect(it)
    assert rect.height() > 0
    QTest.mouseClick(lst.viewport(), LEFT, NOMOD, rect.center())
    QTest.mouseDClick(lst.viewport(), LEFT, NOMOD, rect.center())


def _check_matches(qtbot, win, lesson, run=2.0):
    """The window runs `run` seconds of the lesson and shows what its file says."""
    w = win.worker
    model = win.model
    assert model.name and w.model.nv == model.nv
    # runs: simulated time passes 2 s (the lesson started at t = 0 with its laws)
    if lesson.running:
        wait_snapshot(qtbot, win, lambda s: s.t >= run, timeout=240000)
    snap = w.snapshot()
    assert snap.running == lesson.running
    assert np.isfinite(snap.q).all() and np.isfinite(snap.tau).all()
    assert win.last_error is None, win.last_error
    # joint modes and laws: in the panel and in the simulation thread's controller
    for name, spec in lesson.joints.items():
        want = L.joint_input(spec)
        for inp, where in ((win.joints.rows[name].current, "panel"), (w.controller.inputs[name], "worker")):
            assert (inp.mode, inp.kind) == (want.mode, want.kind), f"{lesson.path}: {name} in the {where}"
            for p in L.PARAMS[(want.mode, want.kind)]:
                assert getattr(inp, p) == getattr(want, p), f"{lesson.path}: {name}.{p} in the {where}"
        j = model.joint(name)
        assert bool(snap.prescribed[j.idx_v]) == (want.mode == "acceleration"), f"{lesson.path}: {name}"
    # a prescribed sine is followed: the joint's recorded q is the law's trajectory
    rec = win.plots.recorder
    win.plots.append(w.samples.drain())
    data = rec.data() if lesson.running else np.zeros((0, w.layout.width))
    assert len(data) > 100 or not lesson.running
    lay = w.layout
    t = data[:, 0]
    for name, spec in lesson.joints.items():
        j = model.joint(name)
        if spec["mode"] == "acceleration" and spec["law"] == "sine" and j.nq == 1 and lesson.running:
            qd = spec.get("offset", 0.0) + spec.get("amplitude", 0.5) * np.sin(
                2 * np.pi * spec.get("frequency", 0.5) * t + spec.get("phase", 0.0))
            late = t > 1.0
            err = np.abs(data[late, lay.column(f"q:{name}")] - qd[late]).max()
            assert err < 0.05, f"{lesson.path}: {name} is {err:.3f} rad off its sine"
    # the initial state is the lesson's (first recorded row, one step in)
    first = data[np.argmin(t)] if len(t) else None
    assert not len(t) or t.min() < 0.05
    for name, x in lesson.q.items():
        j = model.joint(name)
        if j.nq == 1 and first is not None:
            assert abs(first[lay.column(f"q:{name}")] - x) < 0.05, f"{lesson.path}: q0 of {name}"
    # settings
    assert w.sim.integrator == (lesson.integrator or L.DEFAULT_INTEGRATOR)
    dt = lesson.dt or L.DEFAULT_DT
    assert w.sim.dt == pytest.approx(dt, rel=1e-12) and snap.dt == pytest.approx(dt, rel=1e-12)
    assert snap.speed == pytest.approx(lesson.speed or L.DEFAULT_SPEED)
    assert any(snap.gravity) == lesson.gravity == win.act_gravity.isChecked()
    names = [c.name for c in model.constraints]
    for name, on in lesson.constraints.items():
        assert snap.constraint_enabled[names.index(name)] == on
        assert win.loops.boxes[name].isChecked() == on
    for key, on in {**L.VIEW_DEFAULTS, **lesson.view}.items():      # left out: the start settings
        a = win.act_follow if key == "follow" else win.toggles[key]
        assert a.isChecked() == on, f"{lesson.path}: view {key}"
    # plot channels: exactly the file's, each drawn with data
    assert sorted(win.plots.channels()) == sorted(lesson.plots)
    for c in lesson.plots:
        assert not lesson.running or np.isfinite(data[:, lay.column(c)]).any(), \
            f"{lesson.path}: channel {c} has no data"
    # camera (set after the model's own camera reset; the view keeps float32 coordinates)
    if lesson.camera is not None:
        cam = get_camera(win.view)
        for k in ("distance", "elevation", "azimuth", "fov"):
            assert cam[k] == pytest.approx(lesson.camera[k], rel=1e-6), f"{lesson.path}: camera {k}"
        if not lesson.view.get("follow"):      # following, the centre moves with the robot
            assert np.allclose(cam["center"], lesson.camera["center"], atol=1e-6)
    # the gallery shows the lesson (a shipped one) and its notes
    assert lesson.path not in LESSONS or win.gallery.list.currentItem().data(QtCore.Qt.ItemDataRole.UserRole) == lesson.path
    assert lesson.title in win.windowTitle()


def test_menus_and_dt_choices_agree(qtbot, window):
    from app.window.menus import STEPS, SPEEDS
    assert tuple(STEPS) == L.DT_CHOICES and tuple(SPEEDS) == L.SPEED_CHOICES
    # the defaults a lesson gets for what it leaves out are the window's start settings
    start = {k: a.isChecked() for k, a in window.toggles.items()}
    start["follow"] = window.act_follow.isChecked()
    assert start == L.VIEW_DEFAULTS
    assert window.integrator_box.currentText() == L.DEFAULT_INTEGRATOR
    assert window.dt_box.currentData() == L.DEFAULT_DT and window.speed_box.currentData() == L.DEFAULT_SPEED


def test_a_lesson_resets_what_the_previous_one_set(qtbot, window):
    """Frames on (spinning top), then the four-bar, which leaves frames out: frames off again."""
    top = os.path.join(L.LESSONS_DIR, "08_spinning_top_precession.jlab")
    window.open_model(top)
    _wait_applied(qtbot, window, top)
    assert window.toggles["frames"].isChecked() and not window.act_gravity.isChecked()
    four = os.path.join(L.LESSONS_DIR, "09_four_bar_loop_forces.jlab")
    window.open_model(four)
    _wait_applied(qtbot, window, four)
    assert not window.toggles["frames"].isChecked() and window.act_gravity.isChecked()
    assert window.dt_box.currentData() == 1e-3


@pytest.mark.parametrize("path", LESSONS, ids=[os.path.basename(p) for p in LESSONS])
def test_lesson_opens_from_the_gallery_by_double_click(qtbot, window, path):
    lesson = L.load_lesson(path)
    it = _gallery_item(window, path)
    assert it.text() == lesson.title
    _double_click_item(qtbot, window, it)
    applied = _wait_applied(qtbot, window, path)
    assert applied == lesson
    # the gallery pane shows the notes for the teacher
    text = window.gallery.text.toPlainText()
    assert lesson.notes.split("\n\n")[0][:60] in text
    _check_matches(qtbot, window, lesson)


@pytest.mark.parametrize("path", LESSONS, ids=[os.path.basename(p) for p in LESSONS])
def test_lesson_opens_the_way_the_command_line_opens_it(qtbot, window, path):
    """`jointlab FILE.jlab`: app.cli passes FILE to app.gui.main, which calls window.open_model(FILE)
    once the engine is loaded (the subprocess test below runs that path for real)."""
    lesson = L.load_lesson(path)
    window.open_model(path)
    _wait_applied(qtbot, window, path)
    _check_matches(qtbot, window, lesson)


def test_command_line_opens_a_lesson(tmp_path):
    path = os.path.join(L.LESSONS_DIR, "09_four_bar_loop_forces.jlab")
    out = tmp_path / "shot.png"
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, "-m", "app", path, "--screenshot", str(out), "--quit-after", "2"],
                       cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert f"jointlab: opened lesson {path}" in r.stderr
    img = QtGui.QImage(str(out))
    assert not img.isNull()
    # a bad lesson: exit status 2 and the file and key named
    bad = tmp_path / "bad.jlab"
    bad.write_text('{"format": "jointlab-lesson", "version": 1, "model": {"name": "four_bar"}, '
                   '"joints": {"crank": {"mode": "torque", "law": "spin"}}}')
    r = subprocess.run([sys.executable, "-m", "app", str(bad), "--quit-after", "0.5"],
                       cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 2, r.stderr[-2000:]
    assert str(bad) in r.stderr and "'joints.crank.law'" in r.stderr and "unknown law 'spin'" in r.stderr


def _menu_action(win, text):
    for a in win.menuBar().actions():
        m = a.menu()
        if m is None:
            continue
        for b in m.actions():
            if b.text().replace("&", "").rstrip("…") == text:
                return b
    raise AssertionError(f"no menu item {text!r}")


def test_save_lesson_then_open_lesson_restores_the_scene(qtbot, window, tmp_path, monkeypatch):
    win = window
    src = os.path.join(L.LESSONS_DIR, "09_four_bar_loop_forces.jlab")
    win.open_model(src)
    _wait_applied(qtbot, win, src)
    wait_snapshot(qtbot, win, lambda s: s.t > 0.3, timeout=60000)
    # the teacher changes the scene: the rocker gets a PD law, the stabilisation is off, frames on,
    # another plot channel, the camera orbited, dt and speed changed, then pauses
    row = win.joints.rows["rocker"]
    row.set_input(L.joint_input({"mode": "torque", "law": "pd", "target": 1.2, "kp": 3.0, "kd": 0.5}))
    win.loops.baumgarte_box.setChecked(False)
    win.toggles["frames"].setChecked(True)
    win.plots.set_channels(["q:rocker", "tau:crank", "energy:total"])
    win.view.setCameraPosition(distance=3.3, elevation=31.0, azimuth=12.0)
    win.dt_box.setCurrentIndex(win.dt_box.findData(5e-4))
    win.speed_box.setCurrentIndex(win.speed_box.findData(0.5))
    win.set_running(False)
    wait_snapshot(qtbot, win, lambda s: not s.running and s.dt == 5e-4)
    qtbot.wait(300)
    # File > Save Lesson (its dialog accepted with a new title, the file name chosen)
    path = str(tmp_path / "my_lesson.jlab")
    monkeypatch.setattr(QtWidgets.QDialog, "exec", lambda self: QtWidgets.QDialog.DialogCode.Accepted)
    monkeypatch.setattr(QtWidgets.QFileDialog, "getSaveFileName", lambda *a, **k: (path[:-5], ""))
    monkeypatch.setattr(QtWidgets.QFileDialog, "getOpenFileName", lambda *a, **k: (path, ""))
    _menu_action(win, "Save Lesson").trigger()
    assert os.path.isfile(path)
    saved = L.load_lesson(path)
    assert saved.joints["rocker"] == {"mode": "torque", "law": "pd", "target": 1.2, "kp": 3.0, "kd": 0.5}
    assert saved.joints["crank"]["mode"] == "acceleration" and saved.stabilization is False
    assert saved.view["frames"] is True and saved.running is False
    assert sorted(saved.plots) == sorted(["q:rocker", "tau:crank", "energy:total"])
    assert saved.camera["azimuth"] == 12.0 and saved.dt == 5e-4 and saved.speed == 0.5
    assert saved.notes == L.load_lesson(src).notes       # the notes of the lesson it came from
    # another scene, then File > Open Lesson
    other = os.path.join(L.LESSONS_DIR, "01_hybrid_prescribe_shoulder.jlab")
    win.open_model(other)
    _wait_applied(qtbot, win, other)
    assert win.model.name != "four_bar" or win.model.nv != 3
    _menu_action(win, "Open Lesson").trigger()
    _wait_applied(qtbot, win, path)
    wait_snapshot(qtbot, win, lambda s: not s.running and s.dt == 5e-4 and s.t == 0.0)
    qtbot.wait(300)
    again = win.lessons.capture()
    # the same scene: everything equal; the state equal up to the projection onto the loop
    for f in ("model", "title", "notes", "joints", "constraints", "stabilization", "gravity", "integrator",
              "dt", "speed", "running", "camera", "view"):
        assert getattr(again, f) == getattr(saved, f), f
    assert sorted(again.plots) == sorted(saved.plots)
    for key in ("q", "v"):
        a, b = getattr(again, key), getattr(saved, key)
        assert a.keys() == b.keys()
        for name in a:
            assert np.allclose(a[name], b[name], atol=1e-6), (key, name)
    _check_matches(qtbot, win, saved)


def test_bad_lesson_changes_nothing_and_says_what_is_wrong(qtbot, window, tmp_path):
    win = window
    src = os.path.join(L.LESSONS_DIR, "01_hybrid_prescribe_shoulder.jlab")
    win.open_model(src)
    _wait_applied(qtbot, win, src)
    worker, model = win.worker, win.model
    bad = tmp_path / "bad.jlab"
    bad.write_text('{"format": "jointlab-lesson", "version": 1, "model": {"name": "acrobot"}, '
                   '"joints": {"elbow": {"mode": "torque", "law": "zero"}, "wrist": {"mode": "torque", "law": "zero"}}}')
    win.open_model(str(bad))
    qtbot.waitUntil(lambda: win.last_error is not None and "wrist" in win.last_error, timeout=60000)
    msg = win.last_error
    assert str(bad) in msg and "'joints.wrist'" in msg and "its joints: shoulder, elbow" in msg
    qtbot.wait(300)
    assert win.worker is worker and win.model is model and worker.alive
    assert win.lessons.current.path == src
    assert win.joints.rows["joint1"].current.kind == "sine"


def test_missing_plot_channels_are_left_out_with_a_warning(qtbot, window, tmp_path):
    src = L.load_lesson(os.path.join(L.LESSONS_DIR, "01_hybrid_prescribe_shoulder.jlab"))
    src.plots = ["q:joint1", "q:shoulder", "lambda:closure[0]"]
    path = L.save_lesson(src, str(tmp_path / "channels.jlab"))
    window.open_model(path)
    _wait_applied(qtbot, window, path)
    assert window.plots.channels() == ["q:joint1"]
    assert any("q:shoulder, lambda:closure[0]" in m for m in window.messages), window.messages
    assert window.last_error is None
    # opened lessons are in File > Open Recent, and open again as lessons from there
    assert window.recent_files()[0] == os.path.abspath(path)
