"""The window's files: File > Open's dialog, the recent files (kept in the settings), the settings
written at once (a failure is said, never hidden), and screenshots of the whole window (the 3D
view pasted over its grab), written whole or not at all."""
from __future__ import annotations

import os
import sys

from PyQt6 import QtCore, QtGui, QtWidgets

from app.widgets.actions import action

MAX_RECENT = 8


def open_dialog(win, floating_base=None):
    path, _ = QtWidgets.QFileDialog.getOpenFileName(win, "Open URDF or MJCF", win.settings.value("last_dir", ""),
                                                    "Models (*.urdf *.xml *.mjcf);;All files (*)")
    if path:
        win.settings.setValue("last_dir", os.path.dirname(path))
        win.open_model(path, floating_base=floating_base)


def recent_files(win):
    r = win.settings.value("recent", [])
    if isinstance(r, str):
        r = [r]
    return [p for p in (r or []) if p]


def add_recent(win, path):
    r = [path] + [p for p in win.recent_files() if p != path]
    win.settings.setValue("recent", r[:MAX_RECENT])
    win._fill_recent()
    win.save_settings()


def save_settings(win):
    """Write the settings now (``safewrite.save_settings``); a failure is a notice naming the
    file (and a line on the terminal). True when written."""
    from app.sim.safewrite import WriteError, save_settings
    try:
        save_settings(win.settings)
    except WriteError as exc:
        win._notice(f"settings not saved: {exc}")
        print(f"jointlab: settings not saved: {exc}", file=sys.stderr)
        return False
    return True


def fill_recent(win):
    win.recent_menu.clear()
    files = win.recent_files()
    for p in files:
        action(win, win.recent_menu, p, lambda _=False, p=p: win.open_model(p))
    win.recent_menu.setEnabled(bool(files))


def window_image(win):
    """QImage of the whole window (3D view included)."""
    img = win.grab().toImage()
    if win.view.widget.isVisible() and win.view.isExposed():
        gl_img = win.view.render_image()
        top_left = win.view.widget.mapTo(win, QtCore.QPoint(0, 0))
        painter = QtGui.QPainter(img)
        target = QtCore.QRectF(top_left.x(), top_left.y(), win.view.widget.width(), win.view.widget.height())
        painter.drawImage(target, gl_img)
        painter.end()
    return img


def save_screenshot(win, path):
    """PNG of the whole window (3D view included), written whole or not at all
    (``app.sim.safewrite``: decoded back at its size); WriteError (an OSError) naming the path."""
    from app.sim.safewrite import atomic_write, image_size
    img = win.window_image()

    def write(tmp):
        if not img.save(tmp, "PNG"):
            raise OSError(f"Qt could not write the PNG {tmp}")

    atomic_write(path, write, image_size(img.width(), img.height()))
    return img


def screenshot_dialog(win):
    path, _ = QtWidgets.QFileDialog.getSaveFileName(win, "Save screenshot", "jointlab.png", "PNG images (*.png)")
    if path:
        try:
            win.save_screenshot(path)
            win.status.showMessage(f"saved {path}", 5000)
        except OSError as exc:
            win._error("Screenshot", str(exc))
