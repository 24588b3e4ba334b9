"""Helpers and fixtures of the GUI tests (no tests here). The window is real: pytest-xvfb gives
a virtual display with software OpenGL; events are real Qt mouse and key events (QTest)."""
from __future__ import annotations

import time

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from PyQt6 import QtCore, QtWidgets  # noqa: E402

if QtWidgets.QApplication.instance() is None:
    # as app.gui.main does: GL windows share programs (pyqtgraph caches shader programs globally)
    QtCore.QCoreApplication.setAttribute(QtCore.Qt.ApplicationAttribute.AA_ShareOpenGLContexts)


def window_shot(win, tmp_path, name):
    """A screenshot of the whole window, name.png in $JOINTLAB_SHOTS (or tmp_path), read back and
    checked to have the window's size (for a person to look at as well). Returns its path."""
    import os
    from PyQt6 import QtGui
    folder = os.environ.get("JOINTLAB_SHOTS") or str(tmp_path)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{name}.png")
    win.save_screenshot(path)
    img = QtGui.QImage(path)
    assert (img.width(), img.height()) == (win.width(), win.height()), path
    return path


def simple_models():
    """Models built in code: a double pendulum about y and a cart on a prismatic x joint."""
    import engine
    from engine.multibody.visuals import Shape

    I_rod = np.diag([0.084, 0.084, 0.001])
    b = engine.ModelBuilder("test_pendulum")
    b.add_body("link1", parent="world", joint=engine.Revolute((0, 1, 0)), joint_name="joint1",
               placement=engine.pose(p=(0, 0, 1.5)), inertia=engine.Inertia(1.0, (0, 0, -0.5), I_rod))
    b.add_body("link2", parent="link1", joint=engine.Revolute((0, 1, 0)), joint_name="joint2",
               placement=engine.pose(p=(0, 0, -1.0)), inertia=engine.Inertia(1.0, (0, 0, -0.5), I_rod))
    for k, name in ((1, "link1"), (2, "link2")):
        b.visuals.append(Shape("box", name, k, engine.pose(p=(0, 0, -0.5)), size=np.array([0.1, 0.1, 1.0]),
                               color=np.array([0.2, 0.4, 0.8, 1.0]) if k == 1 else np.array([0.9, 0.5, 0.1, 1.0])))
        b.visuals.append(Shape("sphere", name, k, np.eye(4), radius=0.07))
    b.visuals.append(Shape("box", "world", 0, engine.pose(p=(0, 0, 0.75)), size=np.array([0.08, 0.08, 1.5]),
                           color=np.array([0.2, 0.2, 0.2, 1.0])))
    pendulum = b.build()

    c = engine.ModelBuilder("test_cart")
    c.add_body("cart", parent="world", joint=engine.Prismatic((1, 0, 0)), joint_name="slide",
               placement=engine.pose(p=(0, 0, 0.5)), inertia=engine.Inertia(2.0, (0, 0, 0), np.eye(3) * 0.02))
    c.visuals.append(Shape("box", "cart", 1, np.eye(4), size=np.array([0.3, 0.3, 0.3]),
                           color=np.array([0.8, 0.2, 0.2, 1.0])))
    c.visuals.append(Shape("box", "world", 0, engine.pose(p=(0, 0, 0.3)), size=np.array([3.0, 0.05, 0.05]),
                           color=np.array([0.3, 0.3, 0.3, 1.0])))
    cart = c.build()
    return pendulum, cart


@pytest.fixture(scope="session")
def engine_mod():
    import engine
    return engine


@pytest.fixture(scope="session")
def models(engine_mod):
    return simple_models()


@pytest.fixture
def window(qtbot, engine_mod, tmp_path):
    from PyQt6 import QtCore
    from app.window.mainwindow import MainWindow
    settings = QtCore.QSettings(str(tmp_path / "settings.ini"), QtCore.QSettings.Format.IniFormat)
    win = MainWindow(engine_mod, settings=settings)
    win.resize(1280, 860)
    qtbot.addWidget(win)
    win.show()
    qtbot.waitExposed(win)
    yield win
    if win.worker is not None:
        win.worker.stop()
    win.close()


def install(qtbot, win, model, q0=None, running=True):
    """Show a model; wait until the view is exposed and a first frame is drawn."""
    win.set_model(model, q0)
    if not running:
        win.set_running(False)
    qtbot.waitUntil(lambda: win.view.isExposed() and len(win.view.frame_times) > 0, timeout=10000)
    wait_snapshot(qtbot, win, lambda s: s.running == running)
    return win.worker


def wait_snapshot(qtbot, win, cond, timeout=10000):
    """Wait until cond(snapshot) holds (the GUI keeps processing events meanwhile)."""
    qtbot.waitUntil(lambda: cond(win.worker.snapshot()), timeout=timeout)
    return win.worker.snapshot()


def spin(qtbot, seconds):
    qtbot.wait(int(1000 * seconds))


def frame_pixels(win):
    """RGB pixels (h, w, 3) of the 3D view, freshly rendered (read back from a framebuffer)."""
    from PyQt6 import QtGui
    img = win.view.render_image().convertToFormat(QtGui.QImage.Format.Format_RGBA8888)
    return qimage_array(img)[..., :3].astype(np.int16)


def qimage_array(img):
    from PyQt6 import QtGui
    img = img.convertToFormat(QtGui.QImage.Format.Format_RGBA8888)
    w, h = img.width(), img.height()
    ptr = img.constBits()
    ptr.setsize(img.sizeInBytes())
    a = np.frombuffer(ptr, np.uint8).reshape(h, img.bytesPerLine() // 4, 4)[:, :w]
    return a.copy()


def body_point_pixel(win, body_name, p_local=(0.0, 0.0, 0.0)):
    """Widget pixel of a point fixed in a body, at the pose the scene last drew."""
    k = win.scene.model.body_index(body_name)
    T = win.scene.body_poses[k]
    pw = T[:3, :3] @ np.asarray(p_local, dtype=float) + T[:3, 3]
    return win.view.project(pw), pw


def settle(qtbot, win, frames=3):
    n = len(win.view.frame_times)
    win.view.update()
    qtbot.waitUntil(lambda: len(win.view.frame_times) >= n + 1, timeout=5000)
    t = time.perf_counter()
    while time.perf_counter() - t < 0.05 * frames:
        qtbot.wait(10)


def focus(qtbot, widget):
    """Give a widget the keyboard focus (its window activated first, as a click would)."""
    win = widget.window()
    if not win.isActiveWindow():
        win.activateWindow()
        qtbot.waitUntil(win.isActiveWindow, timeout=5000)
    widget.setFocus(QtCore.Qt.FocusReason.MouseFocusReason)
    qtbot.waitUntil(widget.hasFocus, timeout=5000)
