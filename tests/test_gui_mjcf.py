"""MJCF in the real window (pytest-xvfb): Gymnasium's humanoid opens from the gallery with real
mouse clicks and runs; a bad MJCF file leaves the running model alone; `jointlab FILE.xml` opens an
MJCF file from the command line."""
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

pytest.importorskip("mujoco")
pytest.importorskip("gymnasium")

from test_gui_support import (engine_mod, models, window, install, wait_snapshot, spin,  # noqa: F401
                              frame_pixels, settle, qimage_array)

from PyQt6 import QtCore, QtGui, QtWidgets
from PyQt6.QtTest import QTest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
LEFT = QtCore.Qt.MouseButton.LeftButton
# JOINTLAB_TEST_SHOTS=DIR keeps the screenshots for a person to look at
SHOTS = os.environ.get("JOINTLAB_TEST_SHOTS")


def _gallery_item(gallery, name):
    for i in range(gallery.list.count()):
        it = gallery.list.item(i)
        if it.data(QtCore.Qt.ItemDataRole.UserRole) == name:
            return it
    raise AssertionError(f"'{name}' is not in the gallery")


def test_gymnasium_humanoid_opens_from_the_gallery_and_runs(qtbot, window, tmp_path):
    gallery = window.gallery
    window.gallery_dock.show()
    # the section header and the entry are listed (engine.catalog.list_models)
    headers = [gallery.list.item(i).text() for i in range(gallery.list.count())
               if gallery.list.item(i).data(QtCore.Qt.ItemDataRole.UserRole) is None]
    assert any("Gymnasium" in h for h in headers), headers
    it = _gallery_item(gallery, "gym:humanoid")
    window.contact.choose("humanoid", ground=False)     # without the ground the app holds a floating base
    # a real click on the entry, then on "Open selected model"
    gallery.list.scrollToItem(it)
    qtbot.waitUntil(lambda: gallery.list.visualItemRect(it).isValid(), timeout=5000)
    rect = gallery.list.visualItemRect(it)
    QTest.mouseClick(gallery.list.viewport(), LEFT, QtCore.Qt.KeyboardModifier.NoModifier, rect.center())
    assert gallery.list.currentItem() is it
    assert "humanoid" in gallery.text.toPlainText()
    button = next(b for b in gallery.findChildren(QtWidgets.QPushButton) if b.text() == "Open selected model")
    QTest.mouseClick(button, LEFT)
    qtbot.waitUntil(lambda: window.model is not None and window.model.name == "humanoid", timeout=60000)
    assert window.model.description["name"] == "gym:humanoid"
    assert "humanoid" in window.windowTitle()
    # it runs: time advances; the base is held (the app holds a floating base), the limbs fall
    worker = window.worker
    s0 = wait_snapshot(qtbot, window, lambda s: s.running and s.t > 0.05, timeout=30000)
    s1 = wait_snapshot(qtbot, window, lambda s: s.t > s0.t + 0.5, timeout=30000)
    assert np.all(np.isfinite(s1.q))
    assert np.abs(s1.q[7:] - s0.q[7:]).max() > 1e-3, "the limbs did not move"
    # what the view draws: the humanoid's capsules cover part of the view
    settle(qtbot, window)
    with_robot = frame_pixels(window)
    window.scene.robot.setVisible(False)
    empty = frame_pixels(window)
    window.scene.robot.setVisible(True)
    covered = (np.abs(with_robot - empty).sum(axis=2) > 30).sum()
    assert covered > 2000, f"the humanoid covers only {covered} pixels"
    shot = os.path.join(SHOTS or str(tmp_path), "mjcf_humanoid.png")
    window.save_screenshot(shot)
    img = qimage_array(QtGui.QImage(shot))
    assert img.shape[0] > 400 and img.shape[1] > 600
    assert worker.alive


def test_a_bad_mjcf_file_keeps_the_running_model(qtbot, window, models):
    pendulum, _ = models
    worker = install(qtbot, window, pendulum, running=True)
    bad = os.path.join(HERE, "data", "bad_mjcf.xml")
    window.open_model(bad)
    qtbot.waitUntil(lambda: window.last_error is not None, timeout=30000)
    msg = window.last_error
    assert "bad_mjcf.xml:4" in msg and "bad format in attribute 'ref'" in msg and "keeps running" in msg
    assert window.worker is worker and window.model is pendulum
    t0 = worker.snapshot().t
    spin(qtbot, 0.3)
    assert worker.snapshot().running and worker.snapshot().t > t0


def test_an_mjcf_path_opens_in_the_window_with_its_loop(qtbot, window):
    path = os.path.join(HERE, "data", "four_bar_mjcf.xml")
    window.open_model(path)
    qtbot.waitUntil(lambda: window.model is not None and window.model_source == path, timeout=60000)
    assert [c.name for c in window.model.constraints] == ["closure"]
    s = wait_snapshot(qtbot, window, lambda s: s.running and s.t > 0.3, timeout=30000)
    assert np.all(np.isfinite(s.q))
    assert window.model.constraints and window.constraints_dock.isVisible()


def test_jointlab_opens_an_mjcf_file_from_the_command_line(tmp_path):
    shot = tmp_path / "cli.png"
    path = os.path.join(HERE, "data", "four_bar_mjcf.xml")
    r = subprocess.run([sys.executable, "-m", "app", path, "--screenshot", str(shot), "--quit-after", "1.0"],
                       capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert shot.is_file() and shot.stat().st_size > 10000
