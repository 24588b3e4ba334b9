"""The window's writes are whole or not at all (app/sim/safewrite.py): the plot's CSV, PNG and SVG
exports, the screenshot and videos (MP4, GIF), into a read-only folder and onto a full disk (see
write_faults.py), from the window (the message names the file and the reason) and from the command
line (`--record`, `--screenshot`: a non-zero exit naming the path). No temporary file is left behind
and an old file of the same name is left as it was."""
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

from test_gui_support import engine_mod, models, window, install, spin  # noqa: F401,E402
from write_faults import assert_untouched, full_dir, listing, readonly_dir  # noqa: F401,E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(params=["readonly_dir", "full_dir"])
def bad_dir(request):
    return request.getfixturevalue(request.param)


def test_plot_exports_and_screenshot_fail_whole(qtbot, window, models, bad_dir, monkeypatch):
    from PyQt6 import QtWidgets
    pendulum, _ = models
    install(qtbot, window, pendulum, q0=np.array([1.2, 0.4]), running=True)
    spin(qtbot, 0.5)
    panel = window.plots
    panel.append(window.worker.samples.drain())
    before = listing(bad_dir)
    warnings = []
    monkeypatch.setattr(QtWidgets.QMessageBox, "warning", staticmethod(lambda *a: warnings.append(a[2])))
    for name in ("old.csv", "new.csv", "old.png", "new.png", "old.svg", "new.svg"):
        path = str(bad_dir / name)
        monkeypatch.setattr(QtWidgets.QFileDialog, "getSaveFileName", staticmethod(lambda *a, **k: (path, "")))
        kind = name.rsplit(".", 1)[1]
        panel._export_dialog() if kind == "csv" else panel._export_plot_dialog(kind)
        assert len(warnings) == 1 and warnings[0].startswith(f"Could not write {path}: "), (name, warnings)
        warnings.clear()
        assert_untouched(bad_dir, before)
        with pytest.raises(OSError, match=f"could not write {path}: "):     # and the functions say why
            {"csv": panel.export_csv, "png": panel.export_png, "svg": panel.export_svg}[kind](path)
        assert_untouched(bad_dir, before)
    for name in ("old.png", "new.png"):                              # File > Save Screenshot
        path = str(bad_dir / name)
        monkeypatch.setattr(QtWidgets.QFileDialog, "getSaveFileName", staticmethod(lambda *a, **k: (path, "")))
        window._screenshot_dialog()
        assert window.last_error.startswith(f"could not write {path}: ")
        assert_untouched(bad_dir, before)


@pytest.mark.parametrize("name", ["old.mp4", "new.gif"])
def test_video_fails_whole_with_the_reason_in_the_window(qtbot, window, models, bad_dir, name):
    pendulum, _ = models
    install(qtbot, window, pendulum, q0=np.array([1.2, 0.4]), running=True)
    before = listing(bad_dir)
    path = str(bad_dir / name)
    rec = window.recording.start(path, duration=1.0)
    qtbot.waitUntil(lambda: rec.wait(0), timeout=60000)
    assert rec.error, "the failed video was reported written"
    qtbot.waitUntil(lambda: not window.recording.indicator.isVisible(), timeout=5000)
    assert window.last_error.startswith(f"The video {path} could not be written: {rec.error}")
    assert_untouched(bad_dir, before)


def test_good_writes_replace_the_old_file(qtbot, window, models, tmp_path):
    """The same paths work in a writable folder: an old file is replaced, nothing else is left."""
    pendulum, _ = models
    install(qtbot, window, pendulum, q0=np.array([1.2, 0.4]), running=True)
    spin(qtbot, 0.3)
    panel = window.plots
    panel.append(window.worker.samples.drain())
    for name in ("a.csv", "a.png", "a.svg", "b.png"):
        (tmp_path / name).write_bytes(b"old")
    n = panel.export_csv(str(tmp_path / "a.csv"))
    assert (tmp_path / "a.csv").read_text().count("\n") == n + 1
    w, h = panel.export_png(str(tmp_path / "a.png"))
    from PyQt6 import QtGui
    img = QtGui.QImage(str(tmp_path / "a.png"))
    assert (img.width(), img.height()) == (w, h)
    panel.export_svg(str(tmp_path / "a.svg"))
    assert (tmp_path / "a.svg").read_text().rstrip().endswith("</svg>")
    img = window.save_screenshot(str(tmp_path / "b.png"))
    assert QtGui.QImage(str(tmp_path / "b.png")).size() == img.size()
    assert not [n for n in os.listdir(tmp_path) if ".tmp" in n]


def test_command_line_record_and_screenshot_that_fail_exit_non_zero(full_dir, readonly_dir):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    full_before, ro_before = listing(full_dir), listing(readonly_dir)
    video, shot = full_dir / "old.mp4", readonly_dir / "old.png"
    r = subprocess.run([sys.executable, "-m", "app", "double_pendulum", "--record", str(video),
                        "--screenshot", str(shot), "--quit-after", "1"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 2, r.stderr[-2000:]
    assert f"could not write {video}: " in r.stderr, r.stderr[-2000:]
    assert f"could not write {shot}: " in r.stderr, r.stderr[-2000:]
    assert "jointlab: wrote" not in r.stderr
    assert_untouched(full_dir, full_before)
    assert_untouched(readonly_dir, ro_before)


def test_settings_that_can_not_be_written_are_a_notice_naming_the_file(qtbot, engine_mod, bad_dir):  # noqa: F811
    from PyQt6 import QtCore
    from app.window.mainwindow import MainWindow
    before = listing(bad_dir)
    path = str(bad_dir / "settings.ini")
    win = MainWindow(engine_mod, settings=QtCore.QSettings(path, QtCore.QSettings.Format.IniFormat))
    qtbot.addWidget(win)
    win._add_recent("/some/robot.urdf")           # File > Open remembers the file: written at once
    assert any(m.startswith(f"settings not saved: could not write {path}: ") for m in win.messages), win.messages
    assert not win.save_settings()
    win.close()
    assert_untouched(bad_dir, before)


def test_a_video_that_can_not_be_written_stops_at_once(qtbot, window, models, bad_dir):
    """The user learns it when the recording starts, not after minutes of recording."""
    pendulum, _ = models
    install(qtbot, window, pendulum, running=True)
    path = str(bad_dir / "long.mp4")
    rec = window.recording.start(path, duration=60.0)
    qtbot.waitUntil(lambda: rec.wait(0), timeout=20000)
    assert rec.elapsed() < 20 and rec.error
    qtbot.waitUntil(lambda: (window.last_error or "").startswith(f"The video {path} could not be written"),
                    timeout=5000)


def test_lesson_saved_from_the_window_fails_whole(qtbot, window, bad_dir):
    from engine import catalog
    install(qtbot, window, catalog.load_model("double_pendulum"), running=False)
    before = listing(bad_dir)
    for name in ("old.jlab", "new.jlab"):
        path = str(bad_dir / name)
        with pytest.raises(OSError, match=f"could not write {path}: "):
            window.lessons.save(path, title="swing")
        assert_untouched(bad_dir, before)
