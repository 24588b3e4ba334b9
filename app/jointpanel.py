"""The joint panel: per joint a mode switch (torque given / acceleration prescribed), its input law
and parameters, a position slider (poses the robot while paused) and a live readout of the other
quantity: the acceleration a torque-driven joint gets, the torque an acceleration-prescribed
joint needs."""
from __future__ import annotations

import numpy as np
from PyQt6 import QtCore, QtWidgets

from .fields import NumberField
from .inputs import JointInput, TORQUE_KINDS, ACCEL_KINDS, KIND_LABELS, PARAMS, LIMITS, default_input

PARAM_TEXT = {"value": "value", "target": "target", "kp": "kp", "kd": "kd", "amplitude": "amp",
              "frequency": "freq", "phase": "phase", "offset": "offset"}
SLIDER_STEPS = 1000


def _num(x):
    """A number for a live readout: fixed width, no noise digits."""
    a = abs(x)
    if not a < float("inf"):
        return str(x)
    if a < 1e-9:
        return " 0"
    if 1e-3 <= a < 1e4:
        return f"{x:+.3f}"
    return f"{x:+.2e}"


def _units(kind, mode, param):
    lin = kind == "prismatic"
    if param == "value":
        return ("N" if lin else "N·m") if mode == "torque" else ("m/s^2" if lin else "rad/s^2")
    if param in ("target",):
        return "m" if lin else "rad"
    if param in ("amplitude", "offset"):
        return ("N" if lin else "N·m") if mode == "torque" else ("m" if lin else "rad")
    return {"frequency": "Hz", "phase": "rad"}.get(param, "")


class JointRow(QtCore.QObject):
    """The widgets of one joint, placed in the panel's grid."""

    changed = QtCore.pyqtSignal(str, object)      # joint name, JointInput
    posed = QtCore.pyqtSignal(str, object)        # joint name, q of the joint
    hint = QtCore.pyqtSignal(str)

    def __init__(self, joint, scale, grid, row, parent):
        super().__init__(parent)
        self.joint = joint
        self.scale = scale
        self.inputs = {"torque": default_input("torque", scale=scale),
                       "acceleration": default_input("acceleration")}
        self.current = self.inputs["torque"]
        self.torque_refusal = None      # why this joint can not be torque-driven (None: it can)
        self.name_label = QtWidgets.QLabel(f"<b>{joint.name}</b>")
        self.name_label.setToolTip(f"{joint.kind} joint, {joint.nv} coordinate(s)")
        self.mode = QtWidgets.QComboBox()
        self.mode.addItems(["torque", "acceleration"])
        self.mode.setToolTip("torque: the torque is given, the joint's acceleration follows (forward dynamics);\n"
                             "acceleration: the motion is prescribed, the torque it needs is computed (hybrid dynamics)")
        self.law = QtWidgets.QComboBox()
        self.params = QtWidgets.QWidget()
        self.params_layout = QtWidgets.QHBoxLayout(self.params)
        self.params_layout.setContentsMargins(0, 0, 0, 0)
        self.params_layout.setSpacing(3)
        self.fields = {}
        self.slider = None
        self._setting_slider = False
        if joint.nq == 1:
            self.slider = QtWidgets.QSlider(QtCore.Qt.Orientation.Horizontal)
            self.slider.setRange(0, SLIDER_STEPS)
            self.slider.setMinimumWidth(70)
            self.slider.setMaximumWidth(110)
            lo, hi = float(joint.lower[0]), float(joint.upper[0])
            if not (np.isfinite(lo) and np.isfinite(hi) and hi > lo):
                lo, hi = (-1.0, 1.0) if joint.kind == "prismatic" else (-np.pi, np.pi)
            self.range = (lo, hi)
            self.slider.setToolTip(f"position, {lo:.3g} .. {hi:.3g} (drag while paused to pose)")
            self.slider.valueChanged.connect(self._slid)
        self.readout = QtWidgets.QLabel("")
        self.readout.setMinimumWidth(185)
        self.readout.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        for c, w in enumerate((self.name_label, self.readout, self.mode, self.law, self.params,
                               self.slider if self.slider else QtWidgets.QLabel(""))):
            grid.addWidget(w, row, c)
        self._fill_laws("torque")
        self.mode.currentTextChanged.connect(self._mode_changed)
        self.law.currentIndexChanged.connect(self._law_changed)

    # ------------------------------------------------------------------ input
    def _fill_laws(self, mode):
        self.law.blockSignals(True)
        self.law.clear()
        for k in (TORQUE_KINDS if mode == "torque" else ACCEL_KINDS):
            self.law.addItem(KIND_LABELS[(mode, k)], k)
        self.law.setCurrentIndex(self.law.findData(self.inputs[mode].kind))
        self.law.blockSignals(False)
        self._build_params()

    def _build_params(self):
        while self.params_layout.count():
            w = self.params_layout.takeAt(0).widget()
            if w is not None:
                w.deleteLater()
        self.fields = {}
        inp = self.current
        for p in PARAMS[(inp.mode, inp.kind)]:
            lo, hi = LIMITS[p]
            unit = _units(self.joint.kind, inp.mode, p)
            lab = QtWidgets.QLabel(PARAM_TEXT[p])
            f = NumberField(getattr(inp, p), lo, hi, what=f"{self.joint.name} {p}", unit=unit)
            f.setObjectName(f"{self.joint.name}:{p}")
            f.committed.connect(lambda x, p=p: self._param(p, x))
            f.refused.connect(self.hint.emit)
            self.params_layout.addWidget(lab)
            self.params_layout.addWidget(f)
            self.fields[p] = f
        self.params_layout.addStretch(1)

    def _mode_changed(self, mode):
        if mode == "torque" and self.torque_refusal:
            self.mode.blockSignals(True)
            self.mode.setCurrentText(self.current.mode)
            self.mode.blockSignals(False)
            self.hint.emit(self.torque_refusal)
            return
        self.current = self.inputs[mode]
        self._fill_laws(mode)
        self.changed.emit(self.joint.name, self.current)

    def _law_changed(self, idx):
        kind = self.law.itemData(idx)
        if kind is None:
            return
        self.current = self.inputs[self.current.mode] = self.current.with_(kind=kind)
        self._build_params()
        self.changed.emit(self.joint.name, self.current)

    def _param(self, p, x):
        self.current = self.inputs[self.current.mode] = self.current.with_(**{p: x})
        self.changed.emit(self.joint.name, self.current)

    def set_input(self, inp: JointInput, emit=True):
        """Set mode, law and parameters programmatically (as if chosen in the widgets)."""
        self.inputs[inp.mode] = inp
        self.current = inp
        self.mode.blockSignals(True)
        self.mode.setCurrentText(inp.mode)
        self.mode.blockSignals(False)
        self._fill_laws(inp.mode)
        if emit:
            self.changed.emit(self.joint.name, inp)

    # ------------------------------------------------------------------ pose and readout
    def _slid(self, k):
        if self._setting_slider:
            return
        lo, hi = self.range
        self.posed.emit(self.joint.name, np.array([lo + (hi - lo) * k / SLIDER_STEPS]))

    def show_state(self, snap, running):
        j = self.joint
        sv = slice(j.idx_v, j.idx_v + j.nv)
        presc = bool(snap.prescribed[j.idx_v]) if j.nv else False
        if self.slider is not None:
            self.slider.setEnabled(not running)
            if not self.slider.isSliderDown():
                lo, hi = self.range
                k = int(round((float(snap.q[j.idx_q]) - lo) / (hi - lo) * SLIDER_STEPS))
                self._setting_slider = True
                self.slider.setValue(min(max(k, 0), SLIDER_STEPS))
                self._setting_slider = False
        lin = j.kind == "prismatic"
        if j.nv == 1:
            q = f"q {snap.q[j.idx_q]:+.3f}"
            if presc:
                text = f"{q}  needs tau {_num(snap.tau[j.idx_v])} {'N' if lin else 'N·m'}"
            else:
                text = f"{q}  gets ddq {_num(snap.a[j.idx_v])} {'m/s²' if lin else 'rad/s²'}"
        else:
            if presc:
                text = f"needs |tau| {_num(np.linalg.norm(snap.tau[sv]))}"
            else:
                text = f"gets |ddq| {_num(np.linalg.norm(snap.a[sv]))}"
        if self.readout.text() != text:
            self.readout.setText(text)


class JointPanel(QtWidgets.QWidget):
    """All joints of a model. Signals carry what the simulation thread must apply."""

    inputsChanged = QtCore.pyqtSignal(object)    # {joint: JointInput}
    poseChanged = QtCore.pyqtSignal(object)      # {joint: q of the joint}
    hint = QtCore.pyqtSignal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        outer = QtWidgets.QVBoxLayout(self)
        outer.setContentsMargins(2, 2, 2, 2)
        bar = QtWidgets.QHBoxLayout()
        bar.addWidget(QtWidgets.QLabel("All joints:"))
        self.all_mode = QtWidgets.QComboBox()
        self.all_law = QtWidgets.QComboBox()
        self.all_mode.addItems(["torque", "acceleration"])
        self.all_mode.currentTextChanged.connect(self._fill_all_laws)
        self._fill_all_laws("torque")
        apply = QtWidgets.QPushButton("Apply")
        apply.setObjectName("apply_all")
        apply.setToolTip("set every joint (the floating base stays passive) to this mode and law")
        apply.clicked.connect(self.apply_all)
        for w in (self.all_mode, self.all_law, apply):
            bar.addWidget(w)
        bar.addStretch(1)
        outer.addLayout(bar)
        self.scroll = QtWidgets.QScrollArea()
        self.scroll.setWidgetResizable(True)
        outer.addWidget(self.scroll)
        self.rows = {}
        self._inner = None

    def _fill_all_laws(self, mode):
        self.all_law.clear()
        for k in (TORQUE_KINDS if mode == "torque" else ACCEL_KINDS):
            self.all_law.addItem(KIND_LABELS[(mode, k)], k)

    def set_model(self, model, scales):
        """scales: {joint: M_ii at the start pose} for sensible torque PD gains."""
        inner = QtWidgets.QWidget()
        grid = QtWidgets.QGridLayout(inner)
        grid.setContentsMargins(4, 4, 4, 4)
        grid.setHorizontalSpacing(6)
        grid.setVerticalSpacing(2)
        for c, t in enumerate(("joint", "state (live)", "mode", "input", "parameters", "position")):
            grid.addWidget(QtWidgets.QLabel(f"<i>{t}</i>"), 0, c)
        self.rows = {}
        for r, j in enumerate(model.joints, start=1):
            row = JointRow(j, scales.get(j.name, 1.0), grid, r, inner)
            row.changed.connect(lambda name, inp: self.inputsChanged.emit({name: inp}))
            row.posed.connect(lambda name, q: self.poseChanged.emit({name: q}))
            row.hint.connect(self.hint.emit)
            self.rows[j.name] = row
        grid.setRowStretch(len(model.joints) + 1, 1)
        grid.setColumnStretch(4, 1)
        self.scroll.setWidget(inner)
        self._inner = inner

    def apply_all(self):
        mode = self.all_mode.currentText()
        kind = self.all_law.currentData()
        out = {}
        kept = []
        for name, row in self.rows.items():
            if row.joint.kind == "free":
                continue
            if mode == "torque" and row.torque_refusal:
                kept.append(name)
                continue
            inp = row.inputs[mode].with_(kind=kind)
            row.set_input(inp, emit=False)
            out[name] = inp
        if out:
            self.inputsChanged.emit(out)
        if kept:
            self.hint.emit(f"{len(kept)} joint(s) stay acceleration-prescribed: they move only massless links "
                           f"({', '.join(kept[:4])}{' ...' if len(kept) > 4 else ''})")

    def set_input(self, joint, inp):
        self.rows[joint].set_input(inp)

    def show_driver(self, names, text=None):
        """Mark the joints in `names` as driven by another law than their own (`text` says which,
        e.g. an LQR law): their own law's widgets are disabled. No names: every row back to normal."""
        for name, row in self.rows.items():
            on = text is not None and name in names
            for w in (row.mode, row.law, row.params):
                w.setEnabled(not on)
            row.name_label.setText(f"<b>{name}</b>" + (f"<br><small>{text}</small>" if on else ""))

    def show_state(self, snap, running):
        for row in self.rows.values():
            row.show_state(snap, running)
