"""The main window: 3D view in the middle, gallery on the left, joint panel on the right (and the
constraints panel under it for models with closed loops), plots at the bottom; menus and a
toolbar for running, stepping, speed, integrator and step size.

The window never writes physics state: it posts commands to the ``SimWorker`` and, on a frame
timer, draws the worker's latest snapshot and hands every new sample to the plots."""
from __future__ import annotations

import os
import sys

import numpy as np
from PyQt6 import QtCore, QtGui, QtWidgets

from app.panels.contactui import ContactUI
from app.window import docks, files, heldstatus, install, loading
from app.window.frame import FrameLoop
from app.window.gallery import shipped_entries
from app.window.menus import SPEEDS, build_menus
from app.teach.teachui import TeachingUI
from app.viewport.glinfo import frame_ms_default

DEFAULT_MODEL = "double_pendulum"


class MainWindow(QtWidgets.QMainWindow):
    modelLoaded = QtCore.pyqtSignal(object)     # (model, q0, v0, scales, source)
    modelFailed = QtCore.pyqtSignal(str, str)   # source, message

    def __init__(self, engine=None, package_paths=(), settings=None):
        super().__init__()
        self.e = None
        self.package_paths = tuple(package_paths)
        self.worker = None
        self.model = None
        self.model_source = None
        self.last_error = None
        self.messages = []          # every error/notice shown (for the user's log and the tests)
        self._notice_counts = {}
        self._loop_notice = None    # the first "loop projected" message of the running model
        self.held_joints = {}       # joint name -> why the app started it acceleration-prescribed
        self._last_serial = -1
        self._loading = None
        self.pending_model = None   # (name or path, floating base) asked for before the engine was ready
        self._layout_restored = False
        self.first_model_time = None
        self.settings = settings if settings is not None else QtCore.QSettings("JointLab", "jointlab")
        self.setWindowTitle("JointLab")
        screen = QtGui.QGuiApplication.primaryScreen()
        avail = screen.availableGeometry() if screen is not None else QtCore.QRect(0, 0, 1600, 1000)
        self.resize(min(1440, int(0.95 * avail.width())), min(920, int(0.92 * avail.height())))
        docks.build_view(self)              # the 3D view, the status bar (app/window/docks.py)
        docks.build_docks(self)             # models, joints, plots, constraints
        build_menus(self)
        self.teach = TeachingUI(self)          # Inspector, Step-through, Equation view (app/teach/teachui.py)
        from app.window.timeline import Timeline
        self.timeline = Timeline(self)         # the history slider (app/window/timeline.py)
        self.timeline.message.connect(lambda m: self.status.showMessage(m, 8000))
        self.contact = ContactUI(self)         # ground, joint limits, contact arrows, pins (app/panels/contactui.py)
        self.view.bodyClicked.connect(self.teach.select_body)
        self.modelLoaded.connect(self._install)
        self.modelFailed.connect(self._load_failed)
        from app.teach.lessonui import LessonUI
        self.lessons = LessonUI(self)          # lessons (.jlab): open, apply, save (app/teach/lessonui.py)
        geom, st = self.settings.value("geometry"), self.settings.value("window_state")
        if isinstance(geom, QtCore.QByteArray):
            self.restoreGeometry(geom)
        if isinstance(st, QtCore.QByteArray):
            self._layout_restored = bool(self.restoreState(st))
        docks.place_corners(self)           # the left column beside the plots, whatever was saved
        self.gallery.set_models(self.lessons.gallery_entries() + shipped_entries())  # browsable while compiling
        self.frames = FrameLoop(self)          # what each tick of the timer does (app/window/frame.py)
        self.timer = QtCore.QTimer(self)
        self.timer.setTimerType(QtCore.Qt.TimerType.PreciseTimer)
        self.timer.timeout.connect(self._frame)
        self.timer.start(frame_ms_default())     # 16 ms on a GPU, 20 under software GL (glinfo.frame_ms_for)
        if engine is not None:
            self.set_engine(engine)

    # ------------------------------------------------------------------ construction
    def default_layout(self):
        """View > Reset Panel Layout (app/window/docks.py)."""
        docks.default_layout(self)

    # ------------------------------------------------------------------ engine and models
    def set_engine(self, engine):
        """Called once the engine (and its compiled kernels) is imported (app/window/loading.py)."""
        loading.set_engine(self, engine)

    def take_pending_model(self):
        """The model the user chose while the engine was loading ((name or path, floating base)), or
        None; the start-up opens it instead of the default one."""
        pending, self.pending_model = self.pending_model, None
        return pending

    def _show_view(self, on):
        self.stack.setCurrentWidget(self.view.widget if on else self.progress)

    def show_progress(self, text, done=None, total=None):
        self._show_view(False)
        if self.pending_model is not None:
            text += f"\nthen {os.path.basename(self.pending_model[0])} opens (chosen in the gallery)"
        self.progress_label.setText(text)
        if total:
            self.progress_bar.setRange(0, total)
            self.progress_bar.setValue(done or 0)
        else:
            self.progress_bar.setRange(0, 0)

    def _gallery_entry(self, entry):
        if entry.get("kind") == "lesson":          # its name is the lesson file's path
            self.open_model(entry["name"])

    def open_model(self, name_or_path, floating_base=None):
        """Load a model in a background thread (app/window/loading.py)."""
        loading.open_model(self, name_or_path, floating_base)

    def set_model(self, model, q0=None, v0=None, source=None):
        """Show and simulate a model object (built in code, or loaded elsewhere) right away."""
        q0 = model.neutral() if q0 is None else np.asarray(q0, dtype=float)
        v0 = np.zeros(model.nv) if v0 is None else np.asarray(v0, dtype=float)
        self._install((model, q0, v0, None, source or model.name, [], None))

    def _scales(self, model, q0):
        return loading.scales(self.e, model, q0)

    def _load_failed(self, src, message):
        loading.load_failed(self, src, message)

    def _install(self, payload):
        """Switch to a loaded model (app/window/install.py)."""
        install.install(self, payload)

    def _inputs_changed(self, inputs):
        heldstatus.inputs_changed(self, inputs)

    def _show_state(self, snap=None):
        heldstatus.show_state(self, snap)

    def set_gravity(self, on):
        """Simulation > Gravity: the simulation thread sets the model's gravity (off: zero)."""
        if self.act_gravity.isChecked() != bool(on):
            self.act_gravity.setChecked(bool(on))     # calls back here through toggled
            return
        if self.worker is not None:
            self.worker.set_gravity(on)
        self.status.showMessage("gravity on" if on else
                                "gravity off: no weight, no potential energy (Simulation > Gravity)", 8000)
        self._show_state()

    # ------------------------------------------------------------------ commands
    def toggle_running(self):
        if self.worker:
            self.worker.toggle_running()

    def set_running(self, on):
        if self.worker:
            self.worker.set_running(on)

    def single_step(self):
        if self.worker:
            self.worker.single_step(1)

    def reset(self):
        if self.worker:
            self.worker.reset()

    def step_back(self, seconds=0.1):
        """While paused: go back to the recorded state ``seconds`` earlier (a sample every 1 ms);
        the later samples are dropped and the next steps replace them. While the timeline's cursor
        is back in the history, the cursor moves back instead (app/window/timeline.py)."""
        w = self.worker
        if w is None or w.snapshot().running or self.plots.recorder is None:
            return False
        self._take_samples(w.samples.drain())
        if self.timeline.cursor is not None:         # scrubbing: the cursor moves back
            return self.timeline.move_by(-seconds)
        rec = self.plots.recorder
        last = rec.last_time()
        row = None if last is None else rec.row_at(last - seconds + 1e-9)
        if row is None:
            self.status.showMessage("nothing recorded that far back", 5000)
            return False
        L = w.layout
        rec.truncate(row[0])
        self.timeline.truncate(row[0])
        self.plots.refresh(force=True)
        w.go_back_to(float(row[0]), row[L.q], row[L.dq], energy=(row[L.work], row[L.dissipated]))
        self.status.showMessage(f"back to t = {row[0]:.3f} s", 5000)
        return True

    def _speed_by(self, d):
        i = min(max(self.speed_box.currentIndex() + d, 0), len(SPEEDS) - 1)
        self.speed_box.setCurrentIndex(i)

    def _toggle(self, key, on):
        if getattr(self, "scene", None) is not None:
            self.scene.show[key] = on
            self._last_serial = -1
        if key == "reactions" and self.worker is not None:
            self.worker.want_reactions = on
        if key == "constraints" and self.worker is not None:
            self.worker.want_constraint_forces = on
        if key in ("reactions", "constraints") and self.worker is not None:
            self.worker.post(lambda w: None)      # a fresh snapshot with (or without) them, even paused

    def _plot_channels(self, names, log):
        self.plots.set_channels(names)
        self.plots.set_log(log)

    def _drag_started(self, body, p_local, mode):
        if self.worker:
            self.worker.drag_start(body, p_local, mode)

    def _pose_from_slider(self, values):
        if self.worker and not self.worker.snapshot().running:
            self.worker.set_joint_positions(values)

    # ------------------------------------------------------------------ the frame
    def _frame(self):
        self.frames.tick()

    def report_exception(self, exc):
        """Show an unexpected error once (then count it in the status bar); never crash."""
        msg = f"{type(exc).__name__}: {exc}"
        first = msg not in self._notice_counts
        self._notice(msg)
        if first:
            import traceback as tb
            sys.stderr.write("".join(tb.format_exception(exc)))
            self._error("Unexpected error", f"{msg}\n\nThe simulation goes on; details are on the terminal.")

    def _take_samples(self, blocks):
        self.frames.take_samples(blocks)

    # ------------------------------------------------------------------ messages
    def _notice(self, msg):
        """A notice in the status bar; one that repeats is shown once, then counted."""
        n = self._notice_counts.get(msg, 0) + 1
        self._notice_counts[msg] = n
        if n == 1:
            self.messages.append(msg)
        self.status.showMessage(msg if n == 1 else f"{msg} (×{n})", 10000)

    def _loop_projected(self, msg, count):
        """The simulator projected a drifting loop back: said once, then counted."""
        if self._loop_notice is None:
            self._loop_notice = msg
            self.messages.append(msg)
            self.status.showMessage(msg, 10000)
        else:
            self.status.showMessage(f"{msg} (projected {count} times)", 10000)

    def _error(self, title, msg):
        self.last_error = msg
        self.messages.append(msg)
        self.status.showMessage(msg.splitlines()[0], 15000)
        box = QtWidgets.QMessageBox(QtWidgets.QMessageBox.Icon.Warning, title, msg,
                                    QtWidgets.QMessageBox.StandardButton.Ok, self)
        box.setModal(False)
        box.setAttribute(QtCore.Qt.WidgetAttribute.WA_DeleteOnClose)
        box.show()
        self.error_box = box

    # ------------------------------------------------------------------ files
    def _open_dialog(self, floating_base=None):
        files.open_dialog(self, floating_base)

    def recent_files(self):
        return files.recent_files(self)

    def _add_recent(self, path):
        files.add_recent(self, path)

    def save_settings(self):
        """Write the settings now; a failure is a notice naming the file. True when written."""
        return files.save_settings(self)

    def _fill_recent(self):
        files.fill_recent(self)

    def window_image(self):
        """QImage of the whole window (3D view included)."""
        return files.window_image(self)

    def save_screenshot(self, path):
        """PNG of the whole window, written whole or not at all (app/window/files.py)."""
        return files.save_screenshot(self, path)

    def _screenshot_dialog(self):
        files.screenshot_dialog(self)

    # ------------------------------------------------------------------ showing and closing
    def showEvent(self, ev):
        super().showEvent(ev)
        if not self._layout_restored:        # the first start: sizes for the window as shown
            self._layout_restored = True
            QtCore.QTimer.singleShot(0, self.default_layout)

    def closeEvent(self, ev):
        self.settings.setValue("geometry", self.saveGeometry())
        self.settings.setValue("window_state", self.saveState())
        self.save_settings()
        self.timer.stop()
        self.recording.stop()
        if self.worker is not None:
            self.worker.stop()
        super().closeEvent(ev)
