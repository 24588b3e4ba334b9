"""The main window: 3D view in the middle, gallery on the left, joint panel on the right (and the
constraints panel under it for models with closed loops), plots at the bottom; menus and a
toolbar for running, stepping, speed, integrator and step size.

The window never writes physics state: it posts commands to the ``SimWorker`` and, on a frame
timer, draws the worker's latest snapshot and hands every new sample to the plots."""
from __future__ import annotations

import gc
import os
import sys
import threading
import time
import warnings
import traceback

import numpy as np
from PyQt6 import QtCore, QtGui, QtWidgets

from app.window.statusbar import ElidingStatusBar
from app.panels.constraintpanel import ConstraintPanel
from app.panels.contactui import ContactUI
from app.sim.contactsim import floating
from app.window.gallery import Gallery, shipped_entries
from app.window.menus import SPEEDS, STEPS, build_menus, rtf_text
from app.widgets.actions import action
from app.panels.jointpanel import JointPanel
from app.plotting.plots import PlotPanel
from app.plotting.plotstyle import default_channels
from app.viewport.scene import Scene
from app.teach.teachui import TeachingUI
from app.viewport.view3d import View3D
from app.viewport.glinfo import frame_ms_default
from app.window.recording import RecordingControl

DEFAULT_MODEL = "double_pendulum"
MAX_RECENT = 8
PLOT_PERIOD = 1 / 15      # plots redraw at ~15 Hz (every sample is kept; only drawing is paced)
PANEL_PERIOD = 1 / 8      # joint readouts at ~8 Hz


def _settle_heap():
    """At a model load (the window is busy then anyway): a full garbage collection, then every
    object alive moved out of the collector's generations (gc.freeze). While a simulation runs the
    collector's periodic full passes would otherwise traverse the whole heap of the engine, numba,
    LLVM and Qt objects, stalling the window 35-90 ms each (bench_gui, four_bar). Unfrozen first,
    so what the previous model left in reference cycles is still collected."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()


_preloaded = threading.Event()


def _preload_simulation_kernels(engine):
    """Once per process, in a background thread: load the kernels a simulation calls that are typed
    at their first call (the step loop's, the contact step's; engine.warmup.load_cached) from the
    cache, so that neither the first step nor the first contact or joint limit stalls the window
    while numba loads them (200-260 ms each, the GIL held)."""
    if _preloaded.is_set():
        return
    _preloaded.set()

    def load():
        try:
            import importlib
            importlib.import_module(engine.__name__ + ".warmup").load_cached()
        except Exception:       # an optimisation only: the first call loads what it needs itself
            pass
        gc.freeze()             # what the loading made stays: out of the collector's full passes too
    threading.Thread(target=load, name="jointlab-preload", daemon=True).start()


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
        self._frame_count = 0
        self._frame_at = None       # perf_counter at the last frame
        self._panel_time = self._plot_time = 0.0
        self._job_at = {}           # heavy job of a frame ("plot", "panel", "teach") -> when it last ran
        self._loading = None
        self.pending_model = None   # (name or path, floating base) asked for before the engine was ready
        self._layout_restored = False
        self.first_model_time = None
        self.settings = settings if settings is not None else QtCore.QSettings("JointLab", "jointlab")
        self.setWindowTitle("JointLab")
        screen = QtGui.QGuiApplication.primaryScreen()
        avail = screen.availableGeometry() if screen is not None else QtCore.QRect(0, 0, 1600, 1000)
        self.resize(min(1440, int(0.95 * avail.width())), min(920, int(0.92 * avail.height())))
        self._build_view()
        self._build_docks()
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
        self.gallery.set_models(self.lessons.gallery_entries() + shipped_entries())  # browsable while compiling
        self.timer = QtCore.QTimer(self)
        self.timer.setTimerType(QtCore.Qt.TimerType.PreciseTimer)
        self.timer.timeout.connect(self._frame)
        self.timer.start(frame_ms_default())     # 16 ms on a GPU, 20 under software GL (glinfo.frame_ms_for)
        if engine is not None:
            self.set_engine(engine)

    # ------------------------------------------------------------------ construction
    def _build_view(self):
        central = QtWidgets.QWidget()
        lay = QtWidgets.QStackedLayout(central)
        self.stack = lay
        self.view = View3D()
        self.view.is_running = lambda: self.worker is not None and self.worker.snapshot().running
        self.view.dragStarted.connect(self._drag_started)
        self.view.dragMoved.connect(lambda p: self.worker and self.worker.drag_move(p))
        self.view.dragEnded.connect(lambda: self.worker and self.worker.drag_end())
        self.progress = QtWidgets.QWidget()
        pl = QtWidgets.QVBoxLayout(self.progress)
        pl.addStretch(1)
        self.progress_label = QtWidgets.QLabel("Starting…")
        self.progress_label.setAlignment(QtCore.Qt.AlignmentFlag.AlignCenter)
        # wrapped, and no minimum width of its own: the stacked layout's minimum is its widest page's,
        # so "Opening lesson <a long title>…" on one line made the window 1282 px wide at 1280
        self.progress_label.setWordWrap(True)
        self.progress_label.setSizePolicy(QtWidgets.QSizePolicy.Policy.Ignored, QtWidgets.QSizePolicy.Policy.Preferred)
        self.progress_label.setStyleSheet("font-size: 15px; color: #333; background: rgba(255,255,255,200); padding: 8px;")
        self.progress_bar = QtWidgets.QProgressBar()
        self.progress_bar.setMaximumWidth(420)
        pl.addWidget(self.progress_label, 0, QtCore.Qt.AlignmentFlag.AlignCenter)
        pl.addWidget(self.progress_bar, 0, QtCore.Qt.AlignmentFlag.AlignCenter)
        pl.addStretch(1)
        lay.addWidget(self.progress)
        lay.addWidget(self.view.widget)
        self.setCentralWidget(central)
        self.status = ElidingStatusBar(self)
        self.setStatusBar(self.status)
        # what holds the model up right now (gravity off, joints held): always true, from the
        # snapshots and the joint panel, unlike the transient messages on the left
        self.state_label = QtWidgets.QLabel("")
        self.state_label.setObjectName("state")
        self.state_label.setToolTip("what holds the model right now: gravity off, a floating base held or "
                                    "prescribed (Joints: its root joint to torque / zero lets it fall), "
                                    "massless joints prescribed")
        self.status.addPermanentWidget(self.state_label)
        # simulated time and real-time factor: fixed widths, so neither the text around them moves
        # nor the longest message ("... physics slower than real time") is cut
        self.time_label = QtWidgets.QLabel("t = –")
        self.time_label.setObjectName("time")
        self.time_label.setFixedWidth(self.time_label.fontMetrics().horizontalAdvance("t = 99999.999 s") + 8)
        self.time_label.setAlignment(QtCore.Qt.AlignmentFlag.AlignRight | QtCore.Qt.AlignmentFlag.AlignVCenter)
        self.rtf_label = QtWidgets.QLabel("")
        self.rtf_label.setObjectName("rtf")
        bold = self.rtf_label.font()
        bold.setBold(True)
        widest = QtGui.QFontMetrics(bold).horizontalAdvance(rtf_text(99.99, 1 / 16, True))
        self.rtf_label.setFixedWidth(widest + 10)
        self.status.addPermanentWidget(self.time_label)
        self.status.addPermanentWidget(self.rtf_label)
        self.recording = RecordingControl(self)     # File > Record Video; the red REC indicator

    def _build_docks(self):
        self.gallery = Gallery()
        self.gallery.chosen.connect(self.open_model)
        self.gallery.entryChosen.connect(self._gallery_entry)
        d = QtWidgets.QDockWidget("Models", self)
        d.setObjectName("models")
        d.setWidget(self.gallery)
        self.addDockWidget(QtCore.Qt.DockWidgetArea.LeftDockWidgetArea, d)
        self.gallery_dock = d
        self.joints = JointPanel()
        self.joints.inputsChanged.connect(self._inputs_changed)
        self.joints.poseChanged.connect(self._pose_from_slider)
        self.joints.hint.connect(lambda m: self.status.showMessage(m, 6000))
        d = QtWidgets.QDockWidget("Joints", self)
        d.setObjectName("joints")
        d.setWidget(self.joints)
        self.addDockWidget(QtCore.Qt.DockWidgetArea.RightDockWidgetArea, d)
        self.joints_dock = d
        self.plots = PlotPanel()
        self.plots.wrenchJointChanged.connect(lambda j: self.worker and self.worker.watch_wrench(j))
        self.plots.message.connect(lambda m: self.status.showMessage(m, 6000))
        d = QtWidgets.QDockWidget("Plots", self)
        d.setObjectName("plots")
        d.setWidget(self.plots)
        self.addDockWidget(QtCore.Qt.DockWidgetArea.BottomDockWidgetArea, d)
        self.plots_dock = d
        self.loops = ConstraintPanel()
        self.loops.enabledChanged.connect(lambda n, on: self.worker and self.worker.set_constraint_enabled(n, on))
        self.loops.stabilizationChanged.connect(lambda on: self.worker and self.worker.set_stabilization(on))
        self.loops.baumgarteTimeChanged.connect(lambda T: self.worker and self.worker.set_baumgarte_time(T))
        self.loops.projectNow.connect(lambda: self.worker and self.worker.project_now())
        self.loops.projectEveryStepChanged.connect(lambda on: self.worker and self.worker.set_project_every_step(on))
        self.loops.plotRequested.connect(self._plot_channels)
        self.loops.hint.connect(lambda m: self.status.showMessage(m, 6000))
        d = QtWidgets.QDockWidget("Constraints", self)
        d.setObjectName("constraints")
        holder = QtWidgets.QScrollArea()       # squeezed by the joints, it scrolls rather than clips
        holder.setWidgetResizable(True)
        holder.setFrameShape(QtWidgets.QFrame.Shape.NoFrame)
        holder.setWidget(self.loops)
        d.setWidget(holder)
        self.addDockWidget(QtCore.Qt.DockWidgetArea.RightDockWidgetArea, d)
        self.splitDockWidget(self.joints_dock, d, QtCore.Qt.Orientation.Vertical)
        d.setVisible(False)             # shown for models with constraints
        self.constraints_dock = d
        self.default_layout()

    def default_layout(self):
        """Dock sizes for the window's size (View > Reset Panel Layout; also at the first start):
        the joints column gets about a third of the width, the constraints (when shown) up to
        40 % of its height, the plots about 30 % of the height."""
        W, H = max(self.width(), 800), max(self.height(), 600)
        for d in (self.gallery_dock, self.joints_dock, self.plots_dock):
            if d.isFloating():
                d.setFloating(False)
        gallery = 200 if W < 1400 else 230
        joints = int(min(max((0.4 if W >= 1700 else 0.36) * W, 440), 760))
        docks = [d for d in (self.gallery_dock, self.joints_dock) if d.isVisible() or not self.isVisible()]
        self.resizeDocks(docks, [gallery if d is self.gallery_dock else joints for d in docks],
                         QtCore.Qt.Orientation.Horizontal)
        self.resizeDocks([self.plots_dock], [int((0.33 if H < 900 else 0.3) * H)], QtCore.Qt.Orientation.Vertical)
        self._share_right_column()
        if getattr(self, "lessons", None) is not None:      # the lesson's notes under the models
            from app.teach.lessonnotes import share_left_column
            share_left_column(self, self.lessons.notes_dock)

    def _share_right_column(self):
        """Joints above constraints: the constraints panel gets what it needs, at most 40 %."""
        if not self.constraints_dock.isVisible():
            return
        column = max(self.joints_dock.height() + self.constraints_dock.height(), self.height() - 120)
        want = self.loops.sizeHint().height() + 30
        cons = int(min(want, 0.4 * column))
        self.resizeDocks([self.joints_dock, self.constraints_dock], [column - cons, cons],
                         QtCore.Qt.Orientation.Vertical)

    # ------------------------------------------------------------------ engine and models
    def set_engine(self, engine):
        """Called once the engine (and its compiled kernels) is imported."""
        self.e = engine
        _preload_simulation_kernels(engine)
        self.scene = Scene(self.view, engine)
        self.view.scene = self.scene
        self.scene.shadows = self.act_shadows.isChecked()
        for k, a in self.toggles.items():
            self.scene.show[k] = a.isChecked()
        try:
            from engine import catalog
            self.gallery.set_models(self.lessons.gallery_entries() + catalog.list_models())   # lessons first
        except Exception as exc:     # the gallery is a convenience: File > Open still works
            self._notice(f"model gallery unavailable: {exc}")

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
        """Load a model in a background thread; on success it replaces the current one, on failure
        the current one keeps running and the error is shown."""
        src = os.fspath(name_or_path)
        if self.e is None:      # still compiling: opened as soon as the engine is there
            self.pending_model = (src, floating_base)
            self.status.showMessage(f"{src} opens as soon as the dynamics kernels are compiled")
            return
        if src.lower().endswith(".jlab"):
            return self.lessons.open_lesson(src)
        self._loading = src
        self.status.showMessage(f"Loading {src}…")
        if self.model is None:
            self.show_progress(f"Loading {src}…")
        threading.Thread(target=self._load_thread, args=(src, floating_base), daemon=True,
                         name="jointlab-load").start()

    def set_model(self, model, q0=None, v0=None, source=None):
        """Show and simulate a model object (built in code, or loaded elsewhere) right away."""
        q0 = model.neutral() if q0 is None else np.asarray(q0, dtype=float)
        v0 = np.zeros(model.nv) if v0 is None else np.asarray(v0, dtype=float)
        self._install((model, q0, v0, None, source or model.name, [], None))

    def _scales(self, model, q0):
        M = self.e.mass_matrix(model, q0)
        return {j.name: float(M[j.idx_v, j.idx_v]) for j in model.joints if j.nv}

    def _load_thread(self, src, floating_base):
        try:
            self._load(src, floating_base)
        except RuntimeError:
            pass        # the window was closed while loading: nobody to tell

    def _load(self, src, floating_base):
        e = self.e
        try:
            from engine import catalog
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                model = catalog.load_model(src, floating_base=floating_base, package_paths=self.package_paths)
            q0, v0 = catalog.initial_state(model)
            scales = self._scales(model, q0)
            parts = Scene.mesh_parts(model)
            self.modelLoaded.emit((model, q0, v0, scales, src, [str(w.message) for w in caught], parts))
        except (e.ModelError, OSError, KeyError, ValueError) as exc:
            self.modelFailed.emit(src, str(exc))
        except Exception as exc:
            self.modelFailed.emit(src, f"{type(exc).__name__}: {exc}\n\n{traceback.format_exc(limit=3)}")

    def _load_failed(self, src, message):
        self._loading = None
        keep = f"The current model ({self.model.name}) keeps running." if self.model is not None else ""
        self._show_view(self.model is not None)
        if self.model is None:
            self.progress_label.setText(f"Could not load {src}. Open a model from the gallery or File > Open.")
            self.progress_bar.setRange(0, 1)
        self._error("Could not load model", f"{message}\n\n{keep}".strip())

    def _install(self, payload):
        """Switch to a loaded model. Everything that can fail (the simulator's start, the meshes)
        happens before the current model is stopped: on failure it keeps running."""
        model, q0, v0, scales, src, load_warnings, parts = payload
        if self._loading is not None and src != self._loading and parts is not None:
            return      # a newer model was asked for while this one loaded: that one wins
        from app.sim.simworker import SimWorker
        dt = STEPS[self.dt_box.currentIndex()]
        try:
            worker = SimWorker(self.e, model, dt=dt, integrator=self.integrator_box.currentText(),
                               q0=q0, v0=v0, running=True, **self.contact.sim_options(model))
            parts = Scene.mesh_parts(model) if parts is None else parts
            scales = self._scales(model, worker.sim.q) if scales is None else scales
        except Exception as exc:
            self._load_failed(src, f"{src}: the model loaded but cannot be simulated: {type(exc).__name__}: {exc}")
            return
        if self.worker is not None:
            self.worker.stop()
        self.worker = worker
        self.worker.set_speed(SPEEDS[self.speed_box.currentIndex()])
        self.worker.want_reactions = self.toggles["reactions"].isChecked()
        self.worker.want_constraint_forces = self.toggles["constraints"].isChecked()
        self.model = model
        self.model_source = src
        self._last_serial = -1
        self.scene.set_model(model, q0, parts)
        self.view.reset_camera()
        self.joints.set_model(model, scales)
        self.contact.set_model(model, worker)
        self._loop_notice = None
        if not self.act_gravity.isChecked():
            self.worker.set_gravity(False)
        held = self._hold_at_start(model)
        defaults = default_channels(self.e, model, self.worker.layout, self.worker.sim.q, v0, self.held_joints)
        if self.worker.sim.ground is not None and "contact:total:fz" in self.worker.layout.names:
            defaults.insert(max(len(defaults) - 1, 0), "contact:total:fz")     # what the ground carries
        self.plots.set_model(model, self.worker.layout, defaults)
        self.loops.set_model(model, self.worker.layout)
        self.teach.set_model(model, self.worker)
        self.lessons.notes_dock.hide()       # a lesson's notes come back once the lesson is applied
        had = self.constraints_dock.isVisible()
        self.constraints_dock.setVisible(self.loops.has_constraints())
        if self.constraints_dock.isVisible() and not had:
            self._share_right_column()
        _settle_heap()
        self.worker.start()
        self._show_view(True)
        self.view.widget.setFocus()      # keys (Space, S, ...) go to the view, not a text field
        self._loading = None
        title = (model.description or {}).get("title") or model.name
        self.setWindowTitle(f"JointLab — {title}")
        self.gallery.select((model.description or {}).get("name", src), fallback=dict(
            title=title, notes="Not in the gallery: opened from a file or built in code.", dof=model.nv,
            mass=round(model.mass, 3), floating_base=floating(model), path=src if os.path.isfile(src) else None))
        if os.path.isfile(src):
            self._add_recent(os.path.abspath(src))
        for w in dict.fromkeys(load_warnings):     # each warning once
            self._notice(f"{title}: {w}")
        parts = [f"Loaded {title}: {model.nbodies} bodies, {model.nv} velocity coordinates, {model.mass:.3g} kg"]
        if not self.act_gravity.isChecked():
            parts.append("gravity is off (Simulation > Gravity)")
        parts += held
        if load_warnings:
            parts.append(f"{len(load_warnings)} load warning(s), the first: {load_warnings[0]}")
        self.status.showMessage("; ".join(parts), 20000 if held or load_warnings else 12000)
        self._show_state()
        if self.first_model_time is None:
            self.first_model_time = time.perf_counter()

    def _hold_at_start(self, model):
        """Joints held (acceleration-prescribed, "hold still") at start, by the rule `jointlab
        simulate` uses too (``app.sim.setup.window_start``): massless joints; on the ground every
        joint of a floating-base robot but its base (it stands); in the air its floating base.
        Returns the sentences saying why, for the status bar."""
        from app.sim.setup import window_start
        setup = window_start(self.e, model, ground=self.contact.ground_on(model))
        self.held_joints = dict(setup.held)
        for name, inp in setup.inputs.items():
            self.joints.set_input(name, inp)
        out = []
        by_why = {}
        for name, why in setup.held.items():
            by_why.setdefault(why, []).append(name)
        for root in by_why.get("floating base", ()):
            out.append(f"the floating base '{root}' is held (set it to torque / zero to let it fall)")
        if "standing" in by_why:
            out.append(self.contact.standing_sentence(len(by_why["standing"])))
        massless = by_why.get("massless", [])
        for name in massless:
            row = self.joints.rows[name]
            row.torque_refusal = (
                f"joint '{name}' moves only massless links: a torque can not accelerate them (their "
                f"articulated inertia is singular), so it stays acceleration-prescribed; give those "
                f"links mass in the URDF to drive it by torque")
            row.mode.setToolTip(row.torque_refusal)
        if massless:
            names = ", ".join(f"'{n}'" for n in massless[:4]) + (f" and {len(massless) - 4} more"
                                                                  if len(massless) > 4 else "")
            out.append(f"{len(massless)} joint(s) move only massless links ({names}): they are held "
                       f"(acceleration prescribed, hold still), a torque could not move them")
        return out
    def _inputs_changed(self, inputs):
        """The joint panel changed some joints' inputs: send them, and keep the status bar true
        about the joints the app held at the start."""
        if self.worker is not None:
            self.worker.set_inputs(inputs)
        for name, inp in inputs.items():
            why = self.held_joints.get(name)
            if why is None:
                continue
            label = f"{inp.mode} / {inp.kind}"
            if why == "floating base" and inp.mode == "torque":
                self.status.showMessage(f"the floating base '{name}' is released ({label}): it falls "
                                        f"(the ground is off: Simulation > Ground Contact; View > Camera Follows the "
                                        f"Robot keeps it in view)", 12000)
            elif why == "floating base" and inp.kind == "hold":
                self.status.showMessage(f"the floating base '{name}' is held ({label})", 8000)
            elif why == "floating base":
                self.status.showMessage(f"the floating base '{name}' moves as prescribed ({label})", 8000)
        self._show_state()

    def _show_state(self, snap=None):
        """The permanent status text: gravity off, and the joints held at the start that still are."""
        if snap is None and self.worker is not None:
            snap = self.worker.snapshot()
        parts = []
        if snap is not None and not any(snap.gravity):
            parts.append("gravity off")
        rows = self.joints.rows
        base = [n for n, why in self.held_joints.items() if why == "floating base" and n in rows]
        for n in base:
            cur = rows[n].current
            free = cur.mode == "torque" or (snap is not None and self.model is not None
                                             and not snap.prescribed[self.model.joint(n).idx_v])
            parts.append("floating base released" if free else "floating base held" if cur.kind == "hold"
                         else "floating base prescribed")
        massless = [n for n, why in self.held_joints.items() if why == "massless" and n in rows]
        if massless:
            still = sum(rows[n].current.mode == "acceleration" for n in massless)
            parts.append(f"{still}/{len(massless)} massless joints prescribed")
        text = " · ".join(parts)
        if self.state_label.text() != text:
            self.state_label.setText(text)

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
        now = time.perf_counter()
        if self.worker is not None and self._frame_at is not None:
            self.worker.gui_frame(now - self._frame_at)      # a slow frame shrinks the physics' budget
        self._frame_at = now
        try:
            self._frame_body()
            self.view.paint_pending()     # the 3D view draws within its tick (View3D.update)
        except Exception as exc:        # a drawing fault must not stop the window (or spam it)
            self.report_exception(exc)

    def report_exception(self, exc):
        """Show an unexpected error once (then count it in the status bar); never crash."""
        msg = f"{type(exc).__name__}: {exc}"
        first = msg not in self._notice_counts
        self._notice(msg)
        if first:
            import traceback as tb
            sys.stderr.write("".join(tb.format_exception(exc)))
            self._error("Unexpected error", f"{msg}\n\nThe simulation goes on; details are on the terminal.")

    def _frame_body(self):
        w = self.worker
        if w is None:
            return
        while w.events:
            kind, msg = w.events.popleft()
            if kind == "diverged":
                self._error("Simulation paused", msg)
            elif kind == "loop":
                self._loop_projected(*msg)
            else:
                self._notice(msg)
        self._take_samples(w.samples.drain())
        snap = w.snapshot()
        self.timeline.frame(snap)
        self._frame_count += 1
        if snap.serial != self._last_serial:
            self._last_serial = snap.serial
            self.scene.update(snap, snap.wrenches)
            self.contact.draw(snap)
            if self.act_follow.isChecked():
                self.view.follow(self.scene.body_poses[1][:3, 3] if len(self.scene.body_poses) > 1 else None)
            self._labels(snap)
        # one heavy job per frame at most, the least recently run of those due: a plot row (a staged
        # redraw draws one row per frame), the readouts, or the teaching views, so no frame carries
        # them all (frame time p99, issue 32); paused, the teaching views refill at once
        now = time.perf_counter()
        due = []
        if self.plots.has_pending() or now - self._plot_time > PLOT_PERIOD:
            due.append("plot")
        if now - self._panel_time > PANEL_PERIOD:
            due.append("panel")
        teach_due = self.teach.views_due(snap)
        if teach_due and snap.running:
            due.append("teach")
        job = min(due, key=lambda j: self._job_at.get(j, 0.0)) if due else None
        if job is not None:
            self._job_at[job] = now
        self.teach.frame(snap, views=teach_due and (job == "teach" or not snap.running))
        if job == "plot":
            if not self.plots.refresh_pending():
                self._plot_time = now
                self.plots.refresh(staged=True)
        elif job == "panel":
            self._panel_time = now
            self.joints.show_state(snap, snap.running)
            self.contact.show_state(snap)
            if self.loops.has_constraints():
                self.loops.show_state(snap)

    def _take_samples(self, blocks):
        """New sample blocks to the timeline's history (first: it drops what a resume replaces)
        and the plots."""
        if blocks:
            self.timeline.feed(blocks)
            self.plots.append(blocks)

    def _style(self, label, css):
        if label.styleSheet() != css:
            label.setStyleSheet(css)

    def _labels(self, snap):
        self.time_label.setText(f"t = {snap.t:.3f} s")
        self.plots.set_sampling(snap.dt, self.worker.sample_interval)
        self._show_state(snap)
        self.act_run.setText("Pause" if snap.running else "Run")
        if not snap.running:
            self.rtf_label.setText("paused")
            self._style(self.rtf_label, "color: #555;")
        elif np.isnan(snap.rtf):
            self.rtf_label.setText("")
        else:
            self.rtf_label.setText(rtf_text(snap.rtf, snap.speed, snap.behind))
            self._style(self.rtf_label, "color: #c60; font-weight: bold;" if snap.behind else "color: #262;")

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
        path, _ = QtWidgets.QFileDialog.getOpenFileName(self, "Open URDF or MJCF", self.settings.value("last_dir", ""),
                                                        "Models (*.urdf *.xml *.mjcf);;All files (*)")
        if path:
            self.settings.setValue("last_dir", os.path.dirname(path))
            self.open_model(path, floating_base=floating_base)

    def recent_files(self):
        r = self.settings.value("recent", [])
        if isinstance(r, str):
            r = [r]
        return [p for p in (r or []) if p]

    def _add_recent(self, path):
        r = [path] + [p for p in self.recent_files() if p != path]
        self.settings.setValue("recent", r[:MAX_RECENT])
        self._fill_recent()
        self.save_settings()

    def save_settings(self):
        """Write the settings now (``safewrite.save_settings``); a failure is a notice naming the
        file (and a line on the terminal). True when written."""
        from app.sim.safewrite import WriteError, save_settings
        try:
            save_settings(self.settings)
        except WriteError as exc:
            self._notice(f"settings not saved: {exc}")
            print(f"jointlab: settings not saved: {exc}", file=sys.stderr)
            return False
        return True

    def _fill_recent(self):
        self.recent_menu.clear()
        files = self.recent_files()
        for p in files:
            action(self, self.recent_menu, p, lambda _=False, p=p: self.open_model(p))
        self.recent_menu.setEnabled(bool(files))

    def window_image(self):
        """QImage of the whole window (3D view included)."""
        img = self.grab().toImage()
        if self.view.widget.isVisible() and self.view.isExposed():
            gl_img = self.view.render_image()
            top_left = self.view.widget.mapTo(self, QtCore.QPoint(0, 0))
            painter = QtGui.QPainter(img)
            target = QtCore.QRectF(top_left.x(), top_left.y(), self.view.widget.width(), self.view.widget.height())
            painter.drawImage(target, gl_img)
            painter.end()
        return img

    def save_screenshot(self, path):
        """PNG of the whole window (3D view included), written whole or not at all
        (``app.sim.safewrite``: decoded back at its size); WriteError (an OSError) naming the path."""
        from app.sim.safewrite import atomic_write, image_size
        img = self.window_image()

        def write(tmp):
            if not img.save(tmp, "PNG"):
                raise OSError(f"Qt could not write the PNG {tmp}")

        atomic_write(path, write, image_size(img.width(), img.height()))
        return img

    def _screenshot_dialog(self):
        path, _ = QtWidgets.QFileDialog.getSaveFileName(self, "Save screenshot", "jointlab.png", "PNG images (*.png)")
        if path:
            try:
                self.save_screenshot(path)
                self.status.showMessage(f"saved {path}", 5000)
            except OSError as exc:
                self._error("Screenshot", str(exc))

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
