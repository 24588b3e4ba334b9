"""The timeline: a slider over the recorded run (``app.sim.history.History``) under the window.

While paused, moving the slider (mouse, or the arrow keys: one row; Page Up/Down: 0.1 s) puts the
simulation at that recorded instant: the simulation thread restores its state (t, q, v and the
energy balance's work and dissipation) without taking new hold poses (``SimWorker.restore_now``),
then evaluates the hybrid dynamics there as it does for every change while paused, so the 3D
view, the joint readouts, the Inspector and the Equation view show that instant, from the
engine, and the plots draw a cursor line at it. The first move away from the end keeps the state
the run was paused in, so the slider's end goes back to it.

Play replays the history at 0.1x to 2x (the instants recorded, none computed again). Run (or a
single step) from an instant resumes the simulation there: its new steps replace the history and
the plotted samples after it (``feed`` drops them when the first new row arrives). Export writes
the history as CSV (``History.to_csv``) or the state at the cursor as a lesson (File > Save
Lesson's path: ``LessonUI.capture``, ``lessons.save_lesson``, written whole by ``app.sim.safewrite``).
"""
from __future__ import annotations

import os
import time

import numpy as np
from PyQt6 import QtCore, QtWidgets

from app.sim.history import History

PLAY_SPEEDS = (0.1, 0.25, 0.5, 1.0, 2.0)
PLAY_PERIOD_MS = 30
UI_PERIOD = 0.1           # s: the slider's range and label follow a running simulation at 10 Hz


class Timeline(QtWidgets.QToolBar):
    """The slider bar; ``feed(blocks)`` and ``frame(snap)`` are called by the window's frame."""

    message = QtCore.pyqtSignal(str)

    def __init__(self, win):
        super().__init__("Timeline", win)
        self.win = win
        self.setObjectName("timeline")
        self.setMovable(False)
        self.history = None
        self.cursor = None          # history row shown while scrubbed; None: the live end
        self.tail = None            # (t, q, v, work, dissipated) the run was paused in (sim thread sets it)
        self._worker = None
        self._want = None           # what the next restore shows: a state tuple or "end"
        self._inflight = False
        self._capture_tail = False
        self._setting = False
        self._ui_time = 0.0
        self._running = True
        self._end_t = None
        self._checked = -1          # the snapshot serial last compared with the recorded readouts
        self.inputs_changed = False  # the cursor's readouts differ from the recorded ones (new inputs)
        self._build()
        win.addToolBar(QtCore.Qt.ToolBarArea.BottomToolBarArea, self)

    def _build(self):
        title = QtWidgets.QLabel(" history ")
        title.setToolTip("the recorded run (while paused: drag the slider to any instant)")
        self.addWidget(title)
        self.play_btn = QtWidgets.QToolButton()
        self.play_btn.setObjectName("history_play")
        self.play_btn.setText("▶")
        self.play_btn.setCheckable(True)
        self.play_btn.setToolTip("play the recorded run back from the cursor (while paused)")
        self.playback = Playback(self)
        self.export = HistoryExport(self)
        self.play_btn.toggled.connect(self.playback.toggled)
        self.addWidget(self.play_btn)
        self.speed_box = QtWidgets.QComboBox()
        self.speed_box.setObjectName("history_speed")
        for s in PLAY_SPEEDS:
            self.speed_box.addItem(f"×{s:g}", s)
        self.speed_box.setCurrentIndex(PLAY_SPEEDS.index(1.0))
        self.speed_box.setToolTip("playback speed of the history (recorded time / wall time)")
        self.addWidget(self.speed_box)
        self.slider = QtWidgets.QSlider(QtCore.Qt.Orientation.Horizontal)
        self.slider.setObjectName("history_slider")
        self.slider.setSizePolicy(QtWidgets.QSizePolicy.Policy.Expanding, QtWidgets.QSizePolicy.Policy.Fixed)
        self.slider.setMinimumWidth(200)
        self.slider.setRange(0, 0)
        self.slider.setEnabled(False)
        self.slider.setToolTip("the recorded run: while paused, drag to any instant (arrow keys: one "
                               "sample, Page Up/Down: 0.1 s); Run resumes from there and drops what came after")
        self.slider.valueChanged.connect(self._slid)
        self.addWidget(self.slider)
        self.label = QtWidgets.QLabel("")
        self.label.setObjectName("history_label")
        fm = self.label.fontMetrics()
        self.label.setFixedWidth(fm.horizontalAdvance("t = 99999.999 s of 99999.999 – 99999.999 s") + 12)
        self.label.setAlignment(QtCore.Qt.AlignmentFlag.AlignCenter)
        self.addWidget(self.label)
        self.export_btn = QtWidgets.QToolButton()
        self.export_btn.setObjectName("history_export")
        self.export_btn.setText("Export")
        self.export_btn.setToolTip("the history as CSV, or the state at the cursor as a lesson")
        self.export_btn.setPopupMode(QtWidgets.QToolButton.ToolButtonPopupMode.InstantPopup)
        menu = QtWidgets.QMenu(self.export_btn)
        menu.addAction("History (CSV)…", self.export.csv_dialog)
        menu.addAction("State at the cursor as a lesson…", self.export.lesson_dialog)
        self.export_btn.setMenu(menu)
        self.addWidget(self.export_btn)

    # ------------------------------------------------------------------ fed by the window
    def _model_changed(self, worker):
        self._worker = worker
        self.history = History(worker.layout)
        self.cursor = self.tail = self._want = self._end_t = None
        self._inflight = False
        self.play_btn.setChecked(False)
        self.win.plots.set_cursor(None)

    def feed(self, blocks):
        """Blocks drained from the simulation thread (before the plots get them): rows that start
        at or before the newest recorded time mean the run went on from an earlier instant, so
        the history and the plotted samples from that instant on are dropped first."""
        w = self.win.worker
        if w is None:
            return
        if w is not self._worker:
            self._model_changed(w)
        rec = self.win.plots.recorder
        for b in _joined(blocks):
            if isinstance(b, str):              # "clear" (a reset)
                self.history.clear()
                self._back_to_live()
                continue
            if not len(b):
                continue
            t0 = float(b[0, 0])
            last = None if rec is None else rec.last_time()
            if last is not None and t0 <= last + 1e-9:
                dropped = last - t0
                rec.truncate(t0)
                if self.cursor is not None:
                    self.message.emit(f"resumed at t = {t0:.3f} s: the {dropped:.3f} s recorded after it "
                                      f"are dropped")
            self.history.append(b)
            self._back_to_live()

    def truncate(self, t):
        """The run went back to t at once (Step Back, not scrubbing): the history from t on is dropped."""
        if self.history is not None:
            self.history.truncate(t)
        self._back_to_live()
        self._ui_time = 0.0

    def _back_to_live(self):
        if self.cursor is not None or self.tail is not None:
            self.cursor = None
            self.tail = None
            self.win.plots.set_cursor(None)

    def frame(self, snap):
        """The window's frame: the slider's range and label follow the run (10 Hz); paused, the
        slider is live."""
        w = self.win.worker
        if w is None:
            return
        if w is not self._worker:
            self._model_changed(w)
        running = bool(snap.running)
        changed = running != self._running
        self._running = running
        if running and self.play_btn.isChecked():
            self.play_btn.setChecked(False)
        if snap.serial != self._checked and not running:
            self._check_readouts(snap)
        now = time.perf_counter()
        if not changed and now - self._ui_time < UI_PERIOD:
            return
        self._ui_time = now
        self.slider.setEnabled(not running and len(self.history) > 0)
        if self.cursor is None:
            self._end_t = float(snap.t)
            self._set_slider(len(self.history), len(self.history))
        self._show_label()

    # ------------------------------------------------------------------ the slider
    def _set_slider(self, maximum, value):
        self._setting = True
        try:
            self.slider.setRange(0, maximum)
            self.slider.setValue(value)
            h = self.history
            self.slider.setPageStep(max(1, int(round(0.1 / h.period))) if h is not None else 100)
        finally:
            self._setting = False

    def _slid(self, i):
        if self._setting or self.history is None or self._running:
            return
        self.show_row(i)

    def show_row(self, i):
        """Show history row i (len(history): the state the run was paused in)."""
        h = self.history
        n = len(h)
        if i >= n:
            if self.cursor is None:
                return
            self.cursor = None
            self._request("end")
            self.win.plots.set_cursor(None)
        else:
            if self.cursor is None:
                self._capture_tail = True
            self.cursor = max(int(i), 0)
            state = h.state(self.cursor)
            self._request(state)
            self.win.plots.set_cursor(state[0])
        self._show_label()

    def cursor_time(self):
        """The sim time shown (the cursor's, or the end's)."""
        if self.cursor is not None:
            return self.history.state(self.cursor)[0]
        return self._end_t

    def _request(self, what):
        """Ask the simulation thread to show a state; restores are coalesced (the newest wins)."""
        self._want = what
        if self._inflight or self.win.worker is None:
            return
        self._inflight = True
        self.win.worker.post(self._apply)

    def _apply(self, w):
        """In the simulation thread."""
        self._inflight = False
        what = self._want
        sim = w.sim
        if w.running:
            return
        if self._capture_tail:
            self._capture_tail = False
            self.tail = (sim.t, sim.q.copy(), sim.v.copy(), sim.work + sim.external_work, sim.dissipated)
        state = self.tail if what == "end" else what
        if state is None:
            return
        t, q, v, work, dissipated = state
        w.restore_now(t, q, v, energy=(work, dissipated), recapture=False)

    def move_by(self, seconds):
        """Move the cursor by ``seconds`` of recorded time (Step Back while scrubbed); False when
        not paused or nothing is recorded."""
        h = self.history
        if h is None or self._running or not len(h):
            return False
        t = (self.cursor_time() or 0.0) + seconds
        if t > h.last_time() + 1e-9:
            self.slider.setValue(len(h))          # past the last row: the end
        else:
            i = h.index_at(t)
            self.slider.setValue(0 if i is None else i)
        return True

    def _check_readouts(self, snap):
        """Once the cursor's state is shown: whether the simulation thread's readouts there (a and
        tau, evaluated with the joint inputs in force now) are the ones the run recorded. They
        differ when a law or mode changed since that instant; the label says so."""
        self._checked = snap.serial
        was = self.inputs_changed
        self.inputs_changed = False
        if self.cursor is not None:
            r = self.history.row(self.cursor)
            if abs(snap.t - r[0]) < 1e-12:
                h = self.history
                self.inputs_changed = not (_close(snap.a, r[h.a]) and _close(snap.tau, r[h.tau]))
        if was != self.inputs_changed:
            self._show_label()

    def _show_label(self):
        h = self.history
        if h is None or not len(h):
            self.label.setText("nothing recorded yet")
            return
        t0 = h.first_time()
        t_end = self._end_t if self._end_t is not None else h.last_time()
        t = self.cursor_time()
        text = f"t = {t:.3f} s of {t0:.3f} – {t_end:.3f} s" if t is not None else ""
        changed = self.cursor is not None and self.inputs_changed
        if changed:
            text = f"t = {t:.3f} s · inputs changed since"
        if self.label.text() != text:
            self.label.setText(text)
            self.label.setStyleSheet("color: #c60; font-weight: bold;" if changed else "")
        if changed:
            self.label.setToolTip(f"the joint inputs changed after t = {t:.3f} s: the readouts shown are those of "
                                  f"the inputs in force now (what Run from here does), not the ones recorded")
        elif self.cursor is not None:
            self.label.setToolTip(f"Run resumes from t = {t:.3f} s; the {t_end - t:.3f} s recorded after it are dropped")
        else:
            self.label.setToolTip(f"recorded: {len(h)} states, one per {h.period * 1e3:.3g} ms "
                                  f"(at most {h.nbytes / 2 ** 20:.0f} MiB: the newest "
                                  f"{h.capacity * h.period:.0f} s)")

    def applied(self):
        """Whether the simulation thread shows the cursor's instant now."""
        w = self.win.worker
        return w is not None and not self._inflight and (self.cursor is None or
                                                         abs(w.snapshot().t - self.cursor_time()) < 1e-12)


class Playback(QtCore.QObject):
    """Plays the history back: every 30 ms the cursor moves on by the chosen speed x the wall
    time passed (``clock``; a test may drive its own) to the recorded row at or before it."""

    def __init__(self, tl):
        super().__init__(tl)
        self.tl = tl
        self.t = None
        self.wall = None
        self.clock = time.perf_counter
        self.timer = QtCore.QTimer(self)
        self.timer.setInterval(PLAY_PERIOD_MS)
        self.timer.timeout.connect(self.tick)

    def speed(self):
        return float(self.tl.speed_box.currentData())

    def toggled(self, on):
        tl = self.tl
        tl.play_btn.setText("❚❚" if on else "▶")
        if not on:
            self.timer.stop()
            return
        h = tl.history
        if h is None or tl._running or not len(h):
            tl.play_btn.setChecked(False)
            return
        if tl.cursor is None:         # at the end: from the start
            tl.slider.setValue(0)
        self.t = tl.cursor_time()
        self.wall = self.clock()
        self.timer.start()

    def tick(self):
        tl = self.tl
        h = tl.history
        if h is None or tl._running:
            tl.play_btn.setChecked(False)
            return
        now = self.clock()
        self.t += self.speed() * (now - self.wall)
        self.wall = now
        if self.t >= h.last_time():
            tl.slider.setValue(len(h))
            tl.play_btn.setChecked(False)
            return
        i = h.index_at(self.t)
        if i is not None and i != tl.cursor:
            tl.slider.setValue(i)


class HistoryExport:
    """The timeline's Export menu: the history as CSV, the state at the cursor as a lesson."""

    def __init__(self, tl):
        self.tl = tl
        self.win = tl.win

    def csv(self, path):
        h = self.tl.history
        n = h.to_csv(path)
        self.tl.message.emit(f"wrote the history ({n} states, t = {h.first_time():.3f} – "
                             f"{h.last_time():.3f} s) to {path}")
        return n

    def lesson_at_cursor(self):
        """The scene at the cursor as a Lesson (its notes say which instant)."""
        t = self.tl.cursor_time()
        lesson = self.win.lessons.capture()
        note = (f"The state at t = {t:.3f} s of a recorded run (a lesson starts at t = 0: time-dependent "
                f"laws such as a sine start their period again).")
        lesson.notes = f"{lesson.notes}\n\n{note}".strip() if lesson.notes else note
        return lesson

    def lesson(self, path):
        """Save the state at the cursor as a lesson (``lessons.save_lesson``, written whole)."""
        from app.sim import lessons as L
        if not self.tl.applied():
            raise L.LessonError("the cursor's state is not shown yet: try again")
        lesson = self.lesson_at_cursor()
        L.save_lesson(lesson, path)
        self.tl.message.emit(f"saved the state at t = {self.tl.cursor_time():.3f} s as the lesson {path}")
        return lesson

    def csv_dialog(self):
        h = self.tl.history
        if h is None or not len(h):
            return
        path, _ = QtWidgets.QFileDialog.getSaveFileName(self.win, "Export the history", "jointlab-history.csv",
                                                        "CSV files (*.csv)")
        if path:
            try:
                self.csv(path)
            except OSError as exc:
                self.win._error("Export history", str(exc))

    def lesson_dialog(self):
        from app.sim import lessons as L
        if not self.tl.applied():
            self.tl.message.emit("the cursor's state is not shown yet: try again")
            return
        path, _ = QtWidgets.QFileDialog.getSaveFileName(
            self.win, "Save the state at the cursor as a lesson",
            os.path.join(self.win.settings.value("lesson_dir", "") or os.getcwd(), "history" + L.SUFFIX),
            "JointLab lessons (*.jlab)")
        if not path:
            return
        if not path.endswith(L.SUFFIX):
            path += L.SUFFIX
        try:
            self.lesson(path)
        except (OSError, L.LessonError) as exc:
            self.win._error("Save lesson", str(exc) if path in str(exc) else f"{path}: {exc}")


def _joined(blocks):
    """The blocks with consecutive row arrays joined (one append for a frame's rows)."""
    out, run = [], []
    for b in blocks:
        if isinstance(b, str):
            if run:
                out.append(run[0] if len(run) == 1 else np.concatenate(run))
                run = []
            out.append(b)
        else:
            run.append(b)
    if run:
        out.append(run[0] if len(run) == 1 else np.concatenate(run))
    return out


def _close(x, ref, rtol=1e-6):
    """Readouts equal up to rounding (relative to the vector's size)."""
    x, ref = np.asarray(x, dtype=float), np.asarray(ref, dtype=float)
    return x.shape == ref.shape and bool(np.all(np.abs(x - ref) <= rtol * (1.0 + np.max(np.abs(ref), initial=0.0))))
