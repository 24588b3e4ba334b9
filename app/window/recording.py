"""Video recording of the 3D view (or the whole window) to MP4 or GIF, chosen by the file suffix.

Timing: the video runs on wall-clock time at a fixed rate (``fps``, 30 for MP4, 20 for GIF, whose
frame delays are whole hundredths of a second): video frame k shows what the screen showed at
t0 + k / fps. Frames of the 3D view are read back right after the view paints (no extra render;
``View3D.frame_hooks``) when a new video frame is due; a frame the view did not repaint for (paused,
nothing moved) repeats the previous picture, so the video's length is the recording's wall-clock
length whatever the paint rate. The whole-window mode grabs on a timer at the video rate instead
(slower: the widgets are painted into an image).

The file is written whole or not at all (``app.sim.safewrite``): encoded into a temporary file in the
target's folder, its frames counted back (imageio; a GIF's total delay through Pillow), then renamed
over the target; a failure (a full disk) leaves no video, an old file as it was, and ``error`` says why.

Encoding never stalls the GUI: frames go through a bounded queue to a writer thread (imageio with
its ffmpeg plugin, H.264 for MP4, a bundled ffmpeg binary; Pillow for GIF). When the writer falls
behind and the queue is full, a frame is skipped (counted in ``dropped``) and the previous picture
fills its slot."""
from __future__ import annotations

import os
import queue
import threading
import time

import numpy as np
from PyQt6 import QtCore, QtGui

VIDEO_SUFFIXES = (".mp4", ".gif")
QUEUE_FRAMES = 48          # bounded: ~1.6 s of 30 fps frames waiting for the encoder
GIF_MAX_WIDTH = 800        # GIF frames wider than this are halved (file size, palette time)


def default_fps(path):
    return 20 if str(path).lower().endswith(".gif") else 30


def check_video_path(path):
    """The suffix (.mp4 or .gif) of a video file name; ValueError naming the problem otherwise."""
    suffix = os.path.splitext(str(path))[1].lower()
    if suffix not in VIDEO_SUFFIXES:
        raise ValueError(f"video file {path!r}: the name must end in .mp4 or .gif (not {suffix or 'nothing'!r})")
    d = os.path.dirname(os.path.abspath(str(path)))
    if not os.path.isdir(d):
        raise ValueError(f"video file {path!r}: the folder {d} does not exist")
    return suffix


def qimage_rgb(img: QtGui.QImage):
    """(h, w, 3) uint8 copy of a QImage."""
    img = img.convertToFormat(QtGui.QImage.Format.Format_RGB888)
    w, h, bpl = img.width(), img.height(), img.bytesPerLine()
    buf = np.frombuffer(img.constBits().asarray(bpl * h), dtype=np.uint8).reshape(h, bpl)
    return buf[:, :3 * w].reshape(h, w, 3).copy()


def read_gl_frame(width, height):
    """(h, w, 3) uint8 of the framebuffer bound for reading in the current GL context (top row
    first). Called right after the view painted."""
    from OpenGL import GL
    GL.glPixelStorei(GL.GL_PACK_ALIGNMENT, 1)
    data = GL.glReadPixels(0, 0, width, height, GL.GL_RGB, GL.GL_UNSIGNED_BYTE)
    a = np.frombuffer(data, dtype=np.uint8).reshape(height, width, 3)
    return a[::-1]           # GL rows are bottom first; the writer thread makes it contiguous


class _Writer(threading.Thread):
    """Encodes queued (slot, frame) pairs; fills skipped slots with the previous frame."""

    def __init__(self, path, fps, size):
        super().__init__(name="jointlab-video-writer", daemon=True)
        self.path, self.fps, self.size = path, fps, size      # size: (w, h) of the video
        self.q = queue.Queue(maxsize=QUEUE_FRAMES)
        self.written = 0
        self.error = None
        self.total = None            # slots to fill when the recording ends
        self._prev = None
        self._ended = False          # the end mark (None) was taken from the queue

    def _open(self, path):
        import imageio.v2 as iio
        if path.lower().endswith(".gif"):
            return iio.get_writer(path, mode="I", duration=1000.0 / self.fps, loop=0)
        return iio.get_writer(path, format="FFMPEG", mode="I", fps=self.fps, codec="libx264",
                              pixelformat="yuv420p", quality=7, macro_block_size=1,
                              ffmpeg_log_level="error", output_params=["-preset", "veryfast"])

    def _fit(self, frame):
        """The frame at the video's size: cropped or padded (a resized view), halved for a wide GIF."""
        w, h = self.size
        f = np.asarray(frame)
        if self.path.lower().endswith(".gif") and f.shape[1] > GIF_MAX_WIDTH:
            f = f[::2, ::2]
        out = np.empty((h, w, 3), np.uint8)
        out[:] = 255
        hh, ww = min(h, f.shape[0]), min(w, f.shape[1])
        out[:hh, :ww] = f[:hh, :ww]
        return out

    def run(self):
        """Encode into a temporary file, count its frames back, rename it over the target
        (``app.sim.safewrite``); a failure leaves no file (an old one as it was) and sets ``error``."""
        from app.sim.safewrite import atomic_file, video_frames
        try:
            with atomic_file(self.path, lambda tmp: video_frames(self.written, self.fps)(tmp)) as tmp:
                self._encode(tmp)
        except Exception as exc:       # a WriteError naming the file, reported by the recorder
            self.error = exc
            if not self._ended:
                self._drain()

    def _encode(self, path):
        writer = self._open(path)
        try:
            while True:
                item = self.q.get()
                if item is None:
                    self._ended = True
                    break
                slot, frame = item
                frame = self._fit(frame)
                if self._prev is None:
                    self._prev = frame
                while self.written < slot:          # slots nobody painted: the previous picture
                    writer.append_data(self._prev)
                    self.written += 1
                if self.written == slot:
                    writer.append_data(frame)
                    self.written += 1
                self._prev = frame
            if self._prev is not None and self.total is not None:
                while self.written < self.total:
                    writer.append_data(self._prev)
                    self.written += 1
        except BaseException:
            try:
                self._close(writer)
            except Exception:
                pass
            raise
        self._close(writer)

    @staticmethod
    def _close(writer):
        """Close the imageio writer. After a failed close (a GIF is written at its close) imageio
        keeps the frames and its open file, and its finaliser would write them again: the frames
        are dropped and the file released here (the temporary file is then removed)."""
        try:
            writer.close()
        except BaseException:
            plugin = getattr(writer, "instance", writer)
            if isinstance(getattr(plugin, "images_to_write", None), list):
                plugin.images_to_write.clear()
            if hasattr(writer, "closed"):
                writer.closed = True
            request = getattr(plugin, "_request", None) or getattr(writer, "request", None)
            try:
                if request is not None:
                    request.finish()
            except Exception:
                pass
            raise

    def _drain(self):
        while True:
            try:
                if self.q.get_nowait() is None:
                    return
            except queue.Empty:
                time.sleep(0.01)


class VideoRecorder(QtCore.QObject):
    """Records ``view`` (a View3D) to ``path`` (.mp4 or .gif). ``window``: a MainWindow to record the
    whole window instead (``whole_window=True``). ``duration``: stop by itself after that many
    seconds (the video then has exactly round(duration * fps) frames).

    ``start()``, ``stop()``; ``finished(path, error or "")`` is emitted when the file is complete
    (the writer thread ends after ``stop``); ``wait(timeout)`` blocks until then."""

    finished = QtCore.pyqtSignal(str, str)

    def __init__(self, view, path, fps=None, duration=None, window=None, whole_window=False, parent=None):
        super().__init__(parent)
        check_video_path(path)
        self.view, self.window, self.path = view, window, str(path)
        self.whole_window = bool(whole_window)
        if self.whole_window and window is None:
            raise ValueError("whole-window recording needs the window")
        self.fps = float(fps or default_fps(path))
        if not self.fps > 0:
            raise ValueError(f"video rate {fps!r}: must be positive frames per second")
        self.duration = duration
        self.t0 = None
        self.dropped = 0
        self.grabbed = 0
        self.grab_time = []            # seconds spent in the GUI thread per grabbed frame
        self._last_slot = -1
        self._writer = None
        self._timer = QtCore.QTimer(self)
        self._timer.timeout.connect(self._tick)
        self._done = threading.Event()
        self.error = ""

    # ------------------------------------------------------------------ control
    @property
    def recording(self):
        return self.t0 is not None and self._writer is not None and self._writer.total is None

    def elapsed(self):
        return 0.0 if self.t0 is None else time.perf_counter() - self.t0

    def _frame_size(self):
        if self.whole_window:
            dpr = self.window.devicePixelRatio()
            w, h = int(self.window.width() * dpr), int(self.window.height() * dpr)
        else:
            w, h = self.view_size()
        if self.path.lower().endswith(".gif") and w > GIF_MAX_WIDTH:
            w, h = (w + 1) // 2, (h + 1) // 2
        return w - w % 2, h - h % 2           # H.264 with 4:2:0 colour wants even sides

    def view_size(self):
        dpr = self.view.devicePixelRatio()
        return max(int(self.view.width() * dpr), 2), max(int(self.view.height() * dpr), 2)

    def start(self):
        if self.t0 is not None:
            raise RuntimeError("this recorder has already run; make a new one")
        self._writer = _Writer(self.path, self.fps, self._frame_size())
        self._writer.start()
        self.t0 = time.perf_counter()
        if self.whole_window:
            self._timer.start(max(1, int(500 / self.fps)))
        else:
            self.view.frame_hooks.append(self._after_paint)
            self._timer.start(max(1, int(1000 / self.fps)))   # asks a paint when none came for a frame
            self.view.update()

    def stop(self):
        """End the recording now (or at ``duration``); the file is finished in the writer thread."""
        if not self.recording:
            return
        end = self.elapsed() if self.duration is None else self.duration   # a set length is kept
        total = max(1, int(round(end * self.fps)))
        self._timer.stop()
        if self._after_paint in self.view.frame_hooks:
            self.view.frame_hooks.remove(self._after_paint)
        if self.grabbed == 0 and not self.whole_window:     # never painted (hidden): render one picture
            self._push(0, qimage_rgb(self.view.render_image()))
        w = self._writer
        w.total = total
        w.q.put(None)                      # blocks at most while the queue is full (bounded)
        threading.Thread(target=self._join, name="jointlab-video-close", daemon=True).start()

    def _join(self):
        self._writer.join()
        from app.sim.safewrite import reason_of
        self.error = reason_of(self._writer.error) if self._writer.error else ""     # the path is ours
        self._done.set()
        self.finished.emit(self.path, self.error)

    def wait(self, timeout=None):
        """Block until the file is written (after ``stop``); True when it is."""
        return self._done.wait(timeout)

    @property
    def frames_written(self):
        return 0 if self._writer is None else self._writer.written

    # ------------------------------------------------------------------ frames
    def _due_slot(self):
        """The video frame due now, or None (already captured, or past the duration)."""
        t = self.elapsed()
        if self.duration is not None and t >= self.duration:
            return None
        slot = int(t * self.fps)
        return slot if slot > self._last_slot else None

    def _push(self, slot, frame):
        self._last_slot = slot
        try:
            self._writer.q.put_nowait((slot, frame))
            self.grabbed += 1
        except queue.Full:
            self.dropped += 1

    def _after_paint(self):
        """Called by the view right after it painted (its GL context current)."""
        if self._writer is None or self._writer.total is not None:
            return
        slot = self._due_slot()
        if slot is None:
            return
        a = time.perf_counter()
        w, h = self.view_size()
        self._push(slot, read_gl_frame(w, h))
        self.grab_time.append(time.perf_counter() - a)

    def _tick(self):
        if (self.duration is not None and self.elapsed() >= self.duration) or self._writer.error is not None:
            self.stop()          # at the set length, or at once when the file can not be written
            return
        slot = self._due_slot()
        if not self.whole_window:
            if slot is not None and slot > self._last_slot + 1:
                self.view.update()          # paused: nothing repaints by itself
            return
        if slot is not None:
            a = time.perf_counter()
            self._push(slot, qimage_rgb(self.window.window_image()))
            self.grab_time.append(time.perf_counter() - a)


class RecordingControl(QtCore.QObject):
    """The window's side of recording: the File menu's Record action (a file dialog, then a second
    trigger stops), and the indicator in the status bar (a red dot and the elapsed time) while a
    recording runs. ``start(path, duration=None, whole_window=False)`` is what the command line
    uses; ``recorder`` is the running (or last) VideoRecorder."""

    def __init__(self, win):
        super().__init__(win)
        from PyQt6 import QtWidgets
        self.win = win
        self.recorder = None
        self.indicator = QtWidgets.QLabel("")
        self.indicator.setObjectName("recording")
        self.indicator.setStyleSheet("color: #d01010; font-weight: bold; padding: 0 6px;")
        self.indicator.setVisible(False)
        self.indicator.setToolTip("recording video (File > Record Video to stop)")
        win.statusBar().addPermanentWidget(self.indicator)
        self._clock = QtCore.QTimer(self)
        self._clock.timeout.connect(self._show_time)
        self.action = None               # set by the menus (checkable)

    @property
    def recording(self):
        return self.recorder is not None and self.recorder.recording

    def start(self, path, duration=None, whole_window=False, fps=None):
        if self.recording:
            raise RuntimeError("a recording is already running")
        self.recorder = VideoRecorder(self.win.view, path, fps=fps, duration=duration, window=self.win,
                                      whole_window=whole_window, parent=self)
        self.recorder.finished.connect(self._finished, QtCore.Qt.ConnectionType.QueuedConnection)
        self.recorder.start()
        self.indicator.setVisible(True)
        self._show_time()
        self._clock.start(100)
        self._sync_action(True)
        return self.recorder

    def stop(self):
        if self.recording:
            self.recorder.stop()
            self.indicator.setText("● saving…")

    def _show_time(self):
        r = self.recorder
        if r is None:
            return
        if not r.recording:
            self._clock.stop()
            return
        t = r.elapsed()
        self.indicator.setText(f"● REC {int(t // 60):02d}:{t % 60:04.1f}")

    def _finished(self, path, error):
        self._clock.stop()
        self.indicator.setVisible(False)
        self._sync_action(False)
        if error:
            self.win._error("Recording", f"The video {path} could not be written: {error}")
        else:
            n = self.recorder.frames_written if self.recorder else 0
            self.win.status.showMessage(f"saved {path} ({n} frames at {self.recorder.fps:g} fps)", 8000)

    def _sync_action(self, on):
        if self.action is not None and self.action.isChecked() != on:
            self.action.blockSignals(True)
            self.action.setChecked(on)
            self.action.blockSignals(False)

    def toggle(self, on):
        """The menu action: on asks for a file (and the view or the whole window), off stops."""
        from PyQt6 import QtWidgets
        if not on:
            self.stop()
            return
        path, filt = QtWidgets.QFileDialog.getSaveFileName(
            self.win, "Record video", "jointlab.mp4",
            "MP4 video of the 3D view (*.mp4);;GIF of the 3D view (*.gif);;"
            "MP4 video of the whole window (*.mp4);;GIF of the whole window (*.gif)")
        if not path:
            self._sync_action(False)
            return
        if not os.path.splitext(path)[1]:
            path += ".gif" if "GIF" in filt else ".mp4"
        try:
            self.start(path, whole_window="whole window" in filt)
        except (ValueError, RuntimeError, OSError) as exc:
            self._sync_action(False)
            self.win._error("Recording", str(exc))
