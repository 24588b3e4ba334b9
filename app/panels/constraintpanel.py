"""The constraints panel (closed loops): each constraint with a switch (on/off while running: the
simulation thread applies it between two steps and projects the state when a loop is switched
back on) and a live readout of its force and residual; Baumgarte stabilisation (on/off and the
time constant, showing the value in use after the simulator's clamp to >= 2 dt); "Project now"
and "project every step"; buttons that plot the multipliers or the drift.

It only emits requests; the window posts them to the ``SimWorker``. What it shows comes from the
snapshots (the simulation thread's truth)."""
from __future__ import annotations

import math

from PyQt6 import QtCore, QtWidgets

from app.widgets.fields import NumberField
from app.panels.jointpanel import _num
from app.widgets.numfmt import fmt

T_MIN, T_MAX = 1e-5, 100.0      # accepted Baumgarte time constants (s)


def _seconds(T):
    if T is None or not math.isfinite(T):
        return "–"
    return f"{T * 1e3:.3g} ms" if T < 0.1 else f"{T:.3g} s"


def _small(x, unit):
    if x is None or not math.isfinite(x):
        return "–"
    return f"{fmt(x)} {unit}".rstrip()          # app/widgets/numfmt.py, as every readout


class ConstraintPanel(QtWidgets.QWidget):
    enabledChanged = QtCore.pyqtSignal(str, bool)     # constraint name, on
    stabilizationChanged = QtCore.pyqtSignal(bool)    # Baumgarte on
    baumgarteTimeChanged = QtCore.pyqtSignal(object)  # seconds, or None for the default
    projectNow = QtCore.pyqtSignal()
    projectEveryStepChanged = QtCore.pyqtSignal(bool)
    plotRequested = QtCore.pyqtSignal(object, bool)   # channel names, log scale
    hint = QtCore.pyqtSignal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.layout_ = None
        self.names = []
        self.boxes = {}        # name -> QCheckBox
        self.readouts = {}     # name -> QLabel
        self._seen = {}        # the last snapshot's settings: a widget follows only the worker's changes
        outer = QtWidgets.QVBoxLayout(self)
        outer.setContentsMargins(4, 4, 4, 4)
        self.empty_label = QtWidgets.QLabel("This model has no closed loops or other constraints.")
        self.empty_label.setWordWrap(True)
        outer.addWidget(self.empty_label)
        self.body = QtWidgets.QWidget()
        outer.addWidget(self.body)
        outer.addStretch(1)
        lay = QtWidgets.QVBoxLayout(self.body)
        lay.setContentsMargins(0, 0, 0, 0)
        self.list_box = QtWidgets.QGroupBox("Constraints (tick to enforce)")
        self.grid = QtWidgets.QGridLayout(self.list_box)
        self.grid.setColumnStretch(1, 1)
        lay.addWidget(self.list_box)

        stab = QtWidgets.QGroupBox("Drift")
        g = QtWidgets.QGridLayout(stab)
        self.baumgarte_box = QtWidgets.QCheckBox("Baumgarte stabilisation")
        self.baumgarte_box.setChecked(True)
        self.baumgarte_box.setToolTip("feed the constraint error back into the constraint forces (critically "
                                      "damped, time constant T): the loops stay closed instead of drifting apart")
        self.baumgarte_box.toggled.connect(self._stab_toggled)
        g.addWidget(self.baumgarte_box, 0, 0, 1, 4)
        g.addWidget(QtWidgets.QLabel("time constant T"), 1, 0)
        self.time_field = NumberField(0.1, T_MIN, T_MAX, what="Baumgarte time constant", unit="s")
        self.time_field.setObjectName("baumgarte_time")
        self.time_field.committed.connect(lambda x: self.baumgarteTimeChanged.emit(float(x)))
        self.time_field.refused.connect(self.hint.emit)
        g.addWidget(self.time_field, 1, 1)
        g.addWidget(QtWidgets.QLabel("s"), 1, 2)
        self.default_btn = QtWidgets.QPushButton("Default")
        self.default_btn.setToolTip("the simulator's default: 0.1 s with RK4, 10 dt with the Euler integrators")
        self.default_btn.clicked.connect(lambda: self.baumgarteTimeChanged.emit(None))
        g.addWidget(self.default_btn, 1, 3)
        self.used_label = QtWidgets.QLabel("")
        self.used_label.setObjectName("baumgarte_used")
        self.used_label.setToolTip("the time constant the simulator uses: never below 2 dt (stiffer gains "
                                   "would make the integration unstable)")
        g.addWidget(self.used_label, 2, 0, 1, 4)
        self.project_btn = QtWidgets.QPushButton("Project now")
        self.project_btn.setObjectName("project_now")
        self.project_btn.setToolTip("move the state onto the enabled constraints (positions by Gauss-Newton, "
                                    "then velocities with the least kinetic-energy change)")
        self.project_btn.clicked.connect(self.projectNow.emit)
        g.addWidget(self.project_btn, 3, 0, 1, 2)
        self.every_box = QtWidgets.QCheckBox("project every step")
        self.every_box.setToolTip("project after every step (no drift at all; costs a few Newton iterations "
                                  "per step)")
        self.every_box.toggled.connect(self.projectEveryStepChanged.emit)
        g.addWidget(self.every_box, 3, 2, 1, 2)
        self.drift_label = QtWidgets.QLabel("")
        self.drift_label.setObjectName("drift")
        g.addWidget(self.drift_label, 4, 0, 1, 4)
        lay.addWidget(stab)

        plots = QtWidgets.QHBoxLayout()
        b = QtWidgets.QPushButton("Plot λ")
        b.setToolTip("plot every constraint force (multiplier), linear scale")
        b.clicked.connect(self._plot_lambda)
        plots.addWidget(b)
        b = QtWidgets.QPushButton("Plot drift (log)")
        b.setToolTip("plot the residuals |f(q)| on a log scale")
        b.clicked.connect(self._plot_drift)
        plots.addWidget(b)
        lay.addLayout(plots)
        self.set_model(None, None)

    # ------------------------------------------------------------------ model
    def has_constraints(self):
        return bool(self.names)

    def set_model(self, model, layout):
        """Rebuild for a model (None or a model without constraints: the panel says so)."""
        while self.grid.count():
            w = self.grid.takeAt(0).widget()
            if w is not None:
                w.deleteLater()
        self.boxes, self.readouts = {}, {}
        self.layout_ = layout
        cons = list(getattr(model, "constraints", []) or []) if model is not None else []
        self.names = [c.name for c in cons]
        self._seen = {}
        for r, c in enumerate(cons):
            box = QtWidgets.QCheckBox(c.name)
            box.setObjectName(f"constraint:{c.name}")
            box.setChecked(bool(c.enabled))
            src = getattr(c, "source", {}) or {}
            where = f"\ndeclared at {src.get('file')}:{src.get('line')}" if src.get("file") else ""
            box.setToolTip(f"{c.kind} constraint, {c.rows} row(s){where}\nuntick to let the loop open "
                           f"(switched on again, the state is projected back onto it)")
            box.toggled.connect(lambda on, n=c.name: self.enabledChanged.emit(n, on))
            kind = QtWidgets.QLabel(f"{c.kind}, {c.rows} row{'s' if c.rows != 1 else ''}")
            kind.setStyleSheet("color: #555;")
            readout = QtWidgets.QLabel("")
            readout.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
            self.grid.addWidget(box, 2 * r, 0)
            self.grid.addWidget(kind, 2 * r, 1)
            self.grid.addWidget(readout, 2 * r + 1, 0, 1, 2)
            self.boxes[c.name] = box
            self.readouts[c.name] = readout
        self.empty_label.setVisible(not cons)
        self.body.setVisible(bool(cons))
        self.baumgarte_box.blockSignals(True)
        self.baumgarte_box.setChecked(True)
        self.baumgarte_box.blockSignals(False)
        self.every_box.blockSignals(True)
        self.every_box.setChecked(False)
        self.every_box.blockSignals(False)

    # ------------------------------------------------------------------ from the snapshots
    def show_state(self, snap):
        if not self.names or snap is None or len(snap.constraint_enabled) != len(self.names):
            return
        # switches follow the worker's changes (and the first snapshot): a box the user just ticked
        # is not flipped back by a snapshot older than the request
        for name, on in zip(self.names, snap.constraint_enabled):
            self._follow(f"on:{name}", on, self.boxes[name])
        stab = snap.stabilization == "baumgarte"
        self._follow("stab", stab, self.baumgarte_box)
        self._follow("every", bool(snap.project_every_step), self.every_box)
        L = self.layout_
        lam = snap.lam if snap.lam is not None else ()
        r = 0
        for k, name in enumerate(self.names):
            cols = L.lam_columns[name]
            enabled = snap.constraint_enabled[k]
            res = snap.residuals[k] if k < len(snap.residuals) else float("nan")
            unit_res = L.units[L.residual_columns[name]] if name in L.residual_columns else ""
            if enabled and len(lam) == sum(len(L.lam_columns[n]) for n, on in
                                           zip(self.names, snap.constraint_enabled) if on):
                parts = [f"{L.lam_labels[c - L.lam.start]} {_num(lam[r + i]).strip()} {L.units[c]}"
                         for i, c in enumerate(cols)]
                text = "λ: " + ", ".join(parts)
            elif enabled:
                text = "λ: (after the next step)"
            else:
                text = "off"
            if name in L.residual_columns:
                text += f"   |f| {_small(res, unit_res)}"
            self.readouts[name].setText(text)
            if enabled:
                r += len(cols)
        on = self.baumgarte_box.isChecked()
        self.time_field.setEnabled(on)
        self.default_btn.setEnabled(on and snap.baumgarte_time is not None)
        if snap.baumgarte_time is not None:
            self.time_field.set_value(snap.baumgarte_time)
        elif snap.baumgarte_used is not None and not self.time_field.hasFocus():
            self.time_field.set_value(snap.baumgarte_used)
        if not stab:
            self.used_label.setText("in use: off (the loops drift; project to close them)")
        else:
            used = snap.baumgarte_used
            asked = snap.baumgarte_time
            if asked is None:
                text = f"in use: T = {_seconds(used)} (default)"
            elif used is not None and used > asked * (1 + 1e-9):
                text = f"in use: T = {_seconds(used)} (asked {_seconds(asked)}: clamped to 2 dt)"
            else:
                text = f"in use: T = {_seconds(used)}"
            self.used_label.setText(text)
        unit = L.units[L.residual] if L.residual is not None else ""
        self.drift_label.setText(f"drift |f(q)| of the enabled constraints: {_small(snap.residual, unit)}")

    def _follow(self, key, value, box):
        if self._seen.get(key) != value:
            self._seen[key] = value
            if box.isChecked() != value:
                box.blockSignals(True)
                box.setChecked(value)
                box.blockSignals(False)

    # ------------------------------------------------------------------ requests
    def _stab_toggled(self, on):
        self.time_field.setEnabled(on)
        self.stabilizationChanged.emit(on)

    def _plot_lambda(self):
        L = self.layout_
        if L is None or not L.nlam:
            return
        self.plotRequested.emit([L.names[c] for c in range(L.lam.start, L.lam.stop)], False)

    def _plot_drift(self):
        L = self.layout_
        if L is None or L.residual is None:
            return
        names = [L.names[L.residual]] + [L.names[c] for c in L.residual_columns.values()]
        self.plotRequested.emit(names, True)
