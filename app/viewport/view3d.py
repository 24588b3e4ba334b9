"""The 3D view: orbit (left drag), pan (middle drag, or Ctrl+left on empty space), zoom (wheel);
grabbing bodies: Ctrl+left drag pulls a body with a spring while the simulation runs, left drag
on a body poses the robot while it is paused.

The view is a QOpenGLWindow (pyqtgraph's GLViewMixin) embedded with a window container rather than
a QOpenGLWidget: with a QOpenGLWidget, Qt composites the *whole* main window through OpenGL at
every repaint, which under software GL (llvmpipe) cost ~4x the CPU per frame (measured: 23 ms vs
6 ms per frame for a 1440x920 window). ``widget`` is the container to put in layouts; screenshots
of the main window paste ``grabFramebuffer()`` over it (``MainWindow.save_screenshot``)."""
from __future__ import annotations

import time
from collections import deque

import numpy as np
from pyqtgraph.opengl.GLViewWidget import GLViewMixin
from PyQt6 import QtCore, QtGui, QtOpenGL, QtWidgets

from app.viewport.glinfo import BACKGROUND, samples


def _np(m: QtGui.QMatrix4x4):
    return np.array(m.copyDataTo(), dtype=float).reshape(4, 4)


class View3D(GLViewMixin, QtOpenGL.QOpenGLWindow):
    """pyqtgraph's GL view with picking and body dragging. The owner sets ``scene`` and
    ``is_running`` (a callable), connects the drag signals and lays out ``widget``."""

    dragStarted = QtCore.pyqtSignal(str, object, str)   # body, point in body frame, "spring"/"pose"
    dragMoved = QtCore.pyqtSignal(object)               # world target
    dragEnded = QtCore.pyqtSignal()
    bodyClicked = QtCore.pyqtSignal(str)                # left press on a body (any mode): the inspector selects it

    def __init__(self):
        super().__init__()
        fmt = QtGui.QSurfaceFormat(self.requestedFormat())
        fmt.setDepthBufferSize(24)        # a QOpenGLWindow has none unless asked (QOpenGLWidget does)
        fmt.setSwapInterval(0)            # the frame timer paces drawing, not the buffer swap
        fmt.setSamples(samples())         # multisampling: smooth edges (on a GPU)
        self.setFormat(fmt)
        self.widget = QtWidgets.QWidget.createWindowContainer(self)
        self.widget.setMinimumSize(200, 150)
        self.widget.setFocusPolicy(QtCore.Qt.FocusPolicy.ClickFocus)
        self.scene = None
        self.is_running = lambda: False
        self._drag = None            # (plane point, plane normal)
        self._last_hover = 0.0
        self.frame_times = deque(maxlen=4000)   # perf_counter at each paint
        self._dirty = True           # a paint is due (update); paint_pending draws it
        self.frame_hooks = []        # called right after each paint, context current (video capture)
        self.setBackgroundColor(BACKGROUND)

    def devicePixelRatioF(self):
        return self.devicePixelRatio()

    def update(self):
        """A repaint is due (a body moved, the camera turned): drawn by the window's next frame
        tick (``paint_pending``), synchronously. Qt's own update of a QOpenGLWindow is a deferred
        request that the xcb platform delivered up to a whole 16 ms tick late, so a state drawn
        every tick showed two ticks apart (frame-time p99 33-37 ms at dt = 2 ms; 24-26 ms drawn
        from the tick; benchmarks/bench_gui.py, issue 32). Qt's own paints (expose, resize) stay."""
        self._dirty = True

    def paint_pending(self):
        """Draw now when something changed since the last paint and the view is on screen; True
        when it drew."""
        if not self._dirty or not self.isExposed() or self.context() is None:
            return False
        self._dirty = False
        self.makeCurrent()
        try:
            self.paintGL()
            self.context().swapBuffers(self)
        finally:
            self.doneCurrent()
        return True

    def paintGL(self):
        self._dirty = False
        self.frame_times.append(time.perf_counter())
        super().paintGL()
        for hook in list(self.frame_hooks):
            hook()

    def render_image(self):
        """Render the scene now into an offscreen framebuffer (same size and camera as the view)
        and return it as a QImage: what the view shows, independent of swap-buffer timing."""
        from OpenGL import GL
        w, h = max(self.deviceWidth(), 1), max(self.deviceHeight(), 1)
        self.makeCurrent()
        fmt = QtOpenGL.QOpenGLFramebufferObjectFormat()
        fmt.setAttachment(QtOpenGL.QOpenGLFramebufferObject.Attachment.CombinedDepthStencil)
        fmt.setSamples(samples())         # anti-aliased like the view (toImage resolves the samples)
        fbo = QtOpenGL.QOpenGLFramebufferObject(w, h, fmt)
        try:
            fbo.bind()
            GL.glViewport(0, 0, w, h)
            region = self.getViewport()
            self.paint(region=region, viewport=region)
            GL.glFinish()
            img = fbo.toImage()
        finally:
            fbo.release()
            self.doneCurrent()
        return img

    # ------------------------------------------------------------------ camera
    def reset_camera(self):
        if self.scene is None:
            return
        c, r = self.scene.extent
        self.opts["fov"] = 45            # horizontal field of view (pyqtgraph's convention)
        w, h = max(self.width(), 1), max(self.height(), 1)
        half = np.radians(22.5)
        narrow = min(np.tan(half), np.tan(half) * h / w)   # the tighter of the two half-angles
        self.setCameraPosition(pos=QtGui.QVector3D(*map(float, c)), distance=1.15 * r / narrow,
                               elevation=18, azimuth=-60)
        self.update()

    def follow(self, point):
        """Keep the camera's orbit centre on a (moving) point; orbit and zoom stay the user's."""
        if point is None:
            return
        c = self.opts["center"]
        if (abs(c.x() - point[0]) + abs(c.y() - point[1]) + abs(c.z() - point[2])) > 1e-6:
            self.opts["center"] = QtGui.QVector3D(*map(float, point))
            self.update()

    def camera_position(self):
        p = self.cameraPosition()
        return np.array([p.x(), p.y(), p.z()])

    def ray(self, x, y):
        """World ray (origin, unit direction) through the widget pixel (x, y) (logical pixels)."""
        vp = self.getViewport()
        P = _np(self.projectionMatrix(vp, vp))
        V = _np(self.viewMatrix())
        inv = np.linalg.inv(P @ V)
        w, h = max(vp[2], 1), max(vp[3], 1)
        nx, ny = 2.0 * x / w - 1.0, 1.0 - 2.0 * y / h
        a = inv @ np.array([nx, ny, -1.0, 1.0])
        b = inv @ np.array([nx, ny, 1.0, 1.0])
        a, b = a[:3] / a[3], b[:3] / b[3]
        d = b - a
        return a, d / np.linalg.norm(d)

    def project(self, p):
        """Widget pixel (x, y) of a world point."""
        vp = self.getViewport()
        M = _np(self.projectionMatrix(vp, vp)) @ _np(self.viewMatrix())
        c = M @ np.append(np.asarray(p, dtype=float), 1.0)
        ndc = c[:3] / c[3]
        return (ndc[0] + 1.0) * 0.5 * vp[2], (1.0 - ndc[1]) * 0.5 * vp[3]

    # ------------------------------------------------------------------ mouse
    def mousePressEvent(self, ev):
        pos = ev.position()
        self.mousePos = pos
        if ev.button() == QtCore.Qt.MouseButton.LeftButton and self.scene is not None:
            ctrl = bool(ev.modifiers() & QtCore.Qt.KeyboardModifier.ControlModifier)
            running = self.is_running()
            hit = self.scene.pick(*self.ray(pos.x(), pos.y()))
            if hit is not None:
                self.bodyClicked.emit(hit[0])
            if (running and ctrl) or not running:
                if hit is not None:
                    body, p_local, pw = hit
                    view_dir = self.opts_center() - self.camera_position()
                    n = view_dir / np.linalg.norm(view_dir)
                    self._drag = (pw, n)
                    self.setCursor(QtGui.QCursor(QtCore.Qt.CursorShape.ClosedHandCursor))
                    self.dragStarted.emit(body, p_local, "spring" if running else "pose")
                    ev.accept()
                    return
        super().mousePressEvent(ev)

    def opts_center(self):
        c = self.opts["center"]
        return np.array([c.x(), c.y(), c.z()])

    def drag_target(self, x, y):
        """Where the mouse ray meets the drag plane (through the grab point, facing the camera)."""
        p0, n = self._drag
        o, d = self.ray(x, y)
        den = d @ n
        if abs(den) < 1e-9:
            return None
        return o + ((p0 - o) @ n / den) * d

    def mouseMoveEvent(self, ev):
        if ev.buttons() == QtCore.Qt.MouseButton.NoButton:
            self._hover(ev)
        if self._drag is not None:
            pos = ev.position()
            target = self.drag_target(pos.x(), pos.y())
            if target is not None:
                self.dragMoved.emit(target)
            self.mousePos = pos
            ev.accept()
            return
        super().mouseMoveEvent(ev)

    def _hover(self, ev):
        """Open-hand cursor over a body that a press would grab (paused; or Ctrl held while running)."""
        now = time.perf_counter()
        if self.scene is None or now - self._last_hover < 0.03:
            return
        self._last_hover = now
        ctrl = bool(ev.modifiers() & QtCore.Qt.KeyboardModifier.ControlModifier)
        grab = False
        if ctrl or not self.is_running():
            pos = ev.position()
            grab = self.scene.pick(*self.ray(pos.x(), pos.y())) is not None
        shape = QtCore.Qt.CursorShape.OpenHandCursor if grab else QtCore.Qt.CursorShape.ArrowCursor
        if self.cursor().shape() != shape:
            self.setCursor(QtGui.QCursor(shape))

    def mouseReleaseEvent(self, ev):
        if self._drag is not None:
            self._drag = None
            self.setCursor(QtGui.QCursor(QtCore.Qt.CursorShape.ArrowCursor))
            self.dragEnded.emit()
            ev.accept()
            return
        super().mouseReleaseEvent(ev)

    @property
    def dragging(self):
        return self._drag is not None
