"""The teaching views in the window: the Inspector, Step-through and Equation docks, the Teach menu
(and the inertia-ellipsoid toggles in View), and the overlay they draw. The window calls
``set_model`` when a model is installed and ``frame(snapshot)`` at every frame; the numbers come
with the snapshot (``Snapshot.teaching``), computed in the simulation thread when a view wants
them (``SimWorker.want_teaching`` / ``want_trace``)."""
from __future__ import annotations

import time

from PyQt6 import QtCore, QtWidgets

from app.teach.equationview import EquationView
from app.teach.inspector import InspectorPanel
from app.widgets.actions import action
from app.teach.stepthrough import StepThroughPanel
from app.teach.teachoverlay import TeachOverlay

PERIOD = 1 / 8        # tables refresh at ~8 Hz while running
BALANCE_CHANNELS = ["energy:total", "energy:work", "energy:dissipated", "energy:balance"]


class TeachingUI(QtCore.QObject):
    def __init__(self, win):
        super().__init__(win)
        self.win = win
        self.overlay = None
        self.model = None
        self._shown_at = 0.0
        self._views_at = 0.0        # when the Inspector or the Equation view was last refilled
        self._last_teaching = None
        self._shown = {}                 # view -> the Teaching it shows
        self._drawn_serial = -1
        self.inspector = InspectorPanel()
        self.steps = StepThroughPanel()
        self.equation = EquationView()
        Right, Bottom = QtCore.Qt.DockWidgetArea.RightDockWidgetArea, QtCore.Qt.DockWidgetArea.BottomDockWidgetArea
        self.inspector_dock = self._dock("Inspector", "inspector", self.inspector, Right)
        self.steps_dock = self._dock("Step-through", "stepthrough", self.steps, Right)
        self.equation_dock = self._dock("Equation of Motion", "equation", self.equation, Bottom)
        # each opens as a tab beside the joints or the plots, tabbed when first shown: a tab group
        # made of hidden docks leaves Qt's tab bar behind, drawn over the plots at its first place
        self._tab_with = {self.inspector_dock: win.joints_dock, self.steps_dock: win.joints_dock,
                          self.equation_dock: win.plots_dock}
        for d in (self.inspector_dock, self.steps_dock, self.equation_dock):
            d.visibilityChanged.connect(lambda on, d=d: self._first_shown(d, on))
            d.visibilityChanged.connect(lambda _on: self._update_wants())
        self.equation_dock.visibilityChanged.connect(self._equation_shown)
        self._sized_equation = False
        win.joints_dock.raise_()
        self.inspector.bodySelected.connect(lambda _n: self._redraw())
        self.inspector.arrowsToggled.connect(lambda _on: self._redraw())
        self.steps.stepChanged.connect(lambda _i: self._redraw())
        self.steps.wanted.connect(lambda _on: self._update_wants(force=True))
        self.equation.cellHovered.connect(lambda i, j: self._redraw())
        self._build_menu()

    def _equation_shown(self, on):
        """The first time: room for the table and a readable M(q)."""
        if on and not self._sized_equation:
            self._sized_equation = True
            self.win.resizeDocks([self.equation_dock], [max(300, self.win.height() // 3)], QtCore.Qt.Orientation.Vertical)

    def _dock(self, title, name, widget, area):
        d = QtWidgets.QDockWidget(title, self.win)
        d.setObjectName(name)
        d.setWidget(widget)
        self.win.addDockWidget(area, d)
        d.hide()
        return d

    def _first_shown(self, dock, on):
        """The first time a dock is shown it joins its neighbour's tab group, in front."""
        if on and dock in self._tab_with:
            self.win.tabifyDockWidget(self._tab_with.pop(dock), dock)
            dock.raise_()

    def _build_menu(self):
        win = self.win
        tm = win.menuBar().addMenu("&Teach")
        for d, key in ((self.inspector_dock, "Ctrl+I"), (self.steps_dock, "Ctrl+T"), (self.equation_dock, "Ctrl+M")):
            a = d.toggleViewAction()
            a.setShortcut(key)
            a.triggered.connect(lambda on, d=d: d.raise_() if on else None)   # in front of its tab group
            tm.addAction(a)
        tm.addSeparator()
        self.act_step = action(win, tm, "Step Algorithm", self.step_forward, "N",
                               tip="while paused: the next (pass, body) step of the dynamics recursion")
        self.act_step_back = action(win, tm, "Step Algorithm Back", self.step_back, "Shift+N",
                                    tip="while paused: the previous step of the recursion")
        tm.addSeparator()
        self.act_Ih = action(win, tm, "Inertia Ellipsoids: Î (articulated, seen by each body)", self._ellipsoids_toggled,
                             checkable=True, tip="each body's articulated inertia Î_i (its subtree) as an ellipsoid: its rotational "
                             "inertia about its centre (Schur complement of the 6x6), drawn at that centre")
        self.act_Pi = action(win, tm, "Inertia Ellipsoids: Π (handed to the parent)", self._ellipsoids_toggled,
                             checkable=True, tip="Π_i = Î_i minus what the joint's freedom removes, drawn as Î_i is: "
                             "flat across a revolute joint's axis (no rotational inertia about it is handed on)")
        tm.addSeparator()
        action(win, tm, "Plot Energy Balance", self.plot_balance,
               tip="kinetic + potential − work + dissipated: flat when the integrator is accurate")
        view_menu = next((a.menu() for a in win.menuBar().actions() if a.text() == "&View"), None)
        if view_menu is not None:
            view_menu.addSeparator()
            view_menu.addAction(self.act_Ih)
            view_menu.addAction(self.act_Pi)

    # ------------------------------------------------------------------ model and wants
    def set_model(self, model, worker):
        self.model = model
        if self.overlay is None:
            self.overlay = TeachOverlay(self.win.scene)
        self.overlay.set_model(model)
        self.inspector.set_model(model)
        self.equation.set_model(model)
        self.steps.set_trace(None, True)
        self._last_teaching = None
        self._shown = {}
        self._update_wants(force=True)

    def _want_teaching(self):
        return (self.inspector_dock.isVisible() or self.equation_dock.isVisible() or self.steps_dock.isVisible()
                or self.act_Ih.isChecked() or self.act_Pi.isChecked())

    def _update_wants(self, force=False):
        w = self.win.worker
        if w is None:
            return
        teach, trace = self._want_teaching(), self.steps_dock.isVisible() or self.steps._pending > 0
        if force or teach != w.want_teaching or trace != w.want_trace:
            w.want_teaching = teach
            w.want_trace = trace
            w.post(lambda _w: None)       # a fresh snapshot with them, even paused

    def _ellipsoids_toggled(self, _on):
        self._update_wants()
        self._redraw()

    # ------------------------------------------------------------------ actions
    def step_forward(self):
        if not self.steps_dock.isVisible():
            self.steps_dock.setVisible(True)
            self.steps_dock.raise_()
        w = self.win.worker
        if w is not None:
            self.steps.running = w.snapshot().running      # the latest state, not the last frame's
        self.steps.forward()
        self._update_wants()

    def step_back(self):
        self.steps.back()

    def plot_balance(self):
        self.win._plot_channels(BALANCE_CHANNELS, False)
        self.win.plots_dock.setVisible(True)
        self.win.plots_dock.raise_()

    def select_body(self, name):
        """A body clicked in the view: the inspector shows it (opened with Teach > Inspector)."""
        if self.inspector_dock.isVisible():
            self.inspector_dock.raise_()
        self.inspector.select(name)

    # ------------------------------------------------------------------ per frame
    def views_due(self, snap):
        """Whether ``frame`` would refill the Inspector or the Equation view with this snapshot
        (the window gives that a frame of its own while running: FrameLoop._body, app/window/frame.py)."""
        t = snap.teaching
        if self.model is None or self.overlay is None or t is None:
            return False
        due = not snap.running or time.perf_counter() - self._views_at > PERIOD
        return any(dock.isVisible() and self._shown.get(view) is not t and (due or self._shown.get(view) is None)
                   for dock, view in ((self.inspector_dock, self.inspector), (self.equation_dock, self.equation)))

    def frame(self, snap, views=True):
        """Per frame: the teaching views (when ``views``: the window's frame may give them to another
        job), the step-through, the overlay on the bodies."""
        if self.model is None or self.overlay is None:
            return
        t = snap.teaching
        now = time.perf_counter()
        if t is not None:
            due = not snap.running or now - self._shown_at > PERIOD
            if due and t is not self._last_teaching:
                self._shown_at = now
                self._last_teaching = t
        if t is not None and views:
            due = not snap.running or now - self._views_at > PERIOD
            # each view is filled with the newest data it has not shown: a view opened after
            # another took the snapshot (the Inspector, then the Equation view) fills at once
            for dock, view in ((self.inspector_dock, self.inspector), (self.equation_dock, self.equation)):
                last = self._shown.get(view)
                if dock.isVisible() and last is not t and (due or last is None):
                    self._shown[view] = t
                    self._views_at = now
                    view.show_teaching(t)
                    if view is self.equation:      # which state its numbers belong to
                        self.equation_dock.setWindowTitle(f"Equation of Motion (t = {t.t:.4f} s)")
        if self.steps_dock.isVisible() or self.steps._pending:
            self.steps.set_trace(None if t is None else t.trace, snap.running)
        else:
            self.steps.running = snap.running
        if snap.serial != self._drawn_serial:       # the bodies moved: the overlay follows
            self._drawn_serial = snap.serial
            self._redraw()

    def _redraw(self):
        ov = self.overlay
        if ov is None or self.model is None or self.win.scene.body_poses is None:
            return
        if not (self._want_teaching() or ov.highlighted or ov.tinted or ov.any_shown()):
            return          # nothing on, nothing drawn: no work per frame
        t = self._last_teaching
        names = self.model.body_names
        poses = self.win.scene.body_poses
        step = self.steps.step if (self.steps_dock.isVisible() and not self.steps.running) else None
        if step is not None:
            ov.show_bodies(step.index, self.steps.visited())
            ov.show_arrows(step.body, {k: step.values[k] for k in ("V", "dV", "F") if k in step.produced},
                           poses[step.index])
            if "Ih" in step.values:
                ov.show_ellipsoids("Ih", {step.body: {"Ih": step.values["Ih"]}}, only=step.index)
            else:
                ov.show_ellipsoids("Ih", None)
            ov.show_ellipsoids("Pi", None)
            self.inspector.set_legend(ov.legend())
            return
        i, j = self.equation.hovered if self.equation_dock.isVisible() else (-1, -1)
        sel = self.inspector.body if self.inspector_dock.isVisible() else None
        if i >= 0:
            ov.show_bodies(None, self.equation.coupled_bodies(i, j))
        else:
            ov.show_bodies(names.index(sel) + 1 if sel in names else None, ())
        vals = t.bodies.get(sel) if (t is not None and sel is not None) else None
        if vals is not None and self.inspector.arrows_box.isChecked():
            ov.show_arrows(sel, vals, poses[names.index(sel) + 1])
        else:
            ov.hide_arrows()
        bodies = t.bodies if t is not None else None
        ov.show_ellipsoids("Ih", bodies if self.act_Ih.isChecked() else None)
        ov.show_ellipsoids("Pi", bodies if self.act_Pi.isChecked() else None)
        self.inspector.set_legend(ov.legend())
