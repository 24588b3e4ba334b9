"""The joint panel: per joint a mode switch (torque given / acceleration prescribed), its input law
and parameters, a position slider (poses the robot while paused) and a live readout of the other
quantity: the acceleration a torque-driven joint gets, the torque an acceleration-prescribed
joint needs.

Layout: one compact row per joint (open/close arrow, name, mode, law, live readout); the law's
parameters and the position slider sit in an editor under the row, shown while the row is open
(the user opens it with the arrow or a click on the name; choosing a law that has parameters opens
it). The panel lays its rows out for the width it has: the readout beside the law when it fits,
on a second line under the row otherwise, and the parameters in as many columns as fit, so no
control needs a horizontal scroll bar."""
from __future__ import annotations

import numpy as np
from PyQt6 import QtCore, QtWidgets

from app.widgets.fields import NumberField
from app.widgets.numfmt import fmt
from app.sim.inputs import JointInput, TORQUE_KINDS, ACCEL_KINDS, KIND_LABELS, PARAMS, LIMITS, default_input

PARAM_TEXT = {"value": "value", "target": "target", "kp": "kp", "kd": "kd", "amplitude": "amp",
              "frequency": "freq", "phase": "phase", "offset": "offset"}
SLIDER_STEPS = 1000
FIELD_WIDTH = 78          # a parameter's number field (px)
NAME_MAX = 220            # a joint name wider than this wraps (its row grows a line) instead of widening
# the widest readouts a row may show (sizes the readout column; _num never prints more digits)
WIDEST_READOUTS = ("q -888.8e-18  needs tau -888.8e-18 N·m", "q -888.8e-18  gets ddq -888.8e-18 rad/s²")
ROW_SPACING = 4
READOUT_SCALE = 1e3     # the readouts' scale in SI units: |x| < 1e-9 (round-off) reads 0


def _num(x):
    """A number for a live readout (``numfmt.fmt``, signed; in SI units, below 1e-9 reads 0)."""
    return fmt(x, READOUT_SCALE, sign=True)


_STATE = ("at the start of the last step while running; while paused, at the state shown")
READOUT_TIPS = {
    (True, False): "the torque (N·m) or force (N) this joint's motor supplies for its prescribed motion: inverse "
                   "dynamics of the motion, gravity, contact and limit forces and damping included, " + _STATE,
    (True, True): "the wrench the base needs for its prescribed motion, in its body frame: moment m (N·m) and force f "
                  "(N): inverse dynamics of the motion, gravity and contact forces included, " + _STATE,
    (False, False): "the acceleration this joint gets from the torques given (forward dynamics), " + _STATE,
    (False, True): "the acceleration the base gets, in its body frame: angular (rad/s²) and linear (m/s²), " + _STATE,
}
# the widest lines of a multi-coordinate joint's readout (_component_lines)
WIDEST_COMPONENTS = ("needs m -9999.999 -9999.999 -9999.999 N·m", "gets ddq -9999.999 -9999.999 -9999.999 rad/s²")


def _component_lines(kind, x, torque):
    """A multi-coordinate joint's readout, every component shown, one line per unit: a free joint's
    wrench as moment m (N·m) and force f (N), its acceleration as angular (rad/s²) and linear
    (m/s²) parts; a planar joint's force (N) then moment (N·m); a spherical or universal joint's
    moments (N·m)."""
    from app.sim.recorder import coordinate_unit
    what = "eff" if torque else "acc"
    groups = []
    for k, value in enumerate(x):
        unit = coordinate_unit(kind, what, k).replace("^2", "²")
        if groups and groups[-1][0] == unit:
            groups[-1][1].append(value)
        else:
            groups.append((unit, [value]))
    lines = []
    for unit, values in groups:
        head = ("needs m" if unit == "N·m" else "needs f") if torque else "gets ddq"
        lines.append(f"{head} {' '.join(_num(float(v)) for v in values)} {unit}")
    return lines


def _units(kind, mode, param):
    lin = kind == "prismatic"
    if param == "value":
        return ("N" if lin else "N·m") if mode == "torque" else ("m/s^2" if lin else "rad/s^2")
    if param in ("target",):
        return "m" if lin else "rad"
    if param in ("amplitude", "offset"):
        return ("N" if lin else "N·m") if mode == "torque" else ("m" if lin else "rad")
    return {"frequency": "Hz", "phase": "rad"}.get(param, "")


def _text_width(widget, text):
    return widget.fontMetrics().horizontalAdvance(text)


def _position_slider(joint):
    """The editor's position line of a one-coordinate joint: (layout, label, slider, (lo, hi)); the
    slider spans the joint's limits, or +-pi (+-1 m for a prismatic joint) without finite ones."""
    line = QtWidgets.QHBoxLayout()
    line.setSpacing(ROW_SPACING)
    label = QtWidgets.QLabel("position")
    slider = QtWidgets.QSlider(QtCore.Qt.Orientation.Horizontal)
    slider.setObjectName(f"slider:{joint.name}")
    slider.setRange(0, SLIDER_STEPS)
    slider.setMinimumWidth(80)
    lo, hi = float(joint.lower[0]), float(joint.upper[0])
    if not (np.isfinite(lo) and np.isfinite(hi) and hi > lo):
        lo, hi = (-1.0, 1.0) if joint.kind == "prismatic" else (-np.pi, np.pi)
    slider.setToolTip(f"position, {lo:.3g} .. {hi:.3g} (drag while paused to pose)")
    line.addWidget(label)
    line.addWidget(slider, 1)
    return line, label, slider, (lo, hi)


class JointRow(QtCore.QObject):
    """The widgets of one joint: ``widget`` holds the compact row and, under it, the editor
    (parameters and position slider) shown while the row is open."""

    changed = QtCore.pyqtSignal(str, object)      # joint name, JointInput
    posed = QtCore.pyqtSignal(str, object)        # joint name, q of the joint
    hint = QtCore.pyqtSignal(str)
    openChanged = QtCore.pyqtSignal(str, bool)    # joint name, editor shown

    def __init__(self, joint, scale, parent):
        super().__init__(parent)
        self.joint = joint
        self.scale = scale
        self.inputs = {"torque": default_input("torque", scale=scale),
                       "acceleration": default_input("acceleration")}
        self.current = self.inputs["torque"]
        self.torque_refusal = None      # why this joint can not be torque-driven (None: it can)
        self.is_open = False
        self.wide = None
        self._editor_cols = None

        self.widget = QtWidgets.QFrame()
        self.widget.setObjectName(f"row:{joint.name}")
        self.grid = QtWidgets.QGridLayout(self.widget)
        self.grid.setContentsMargins(2, 2, 2, 2)
        self.grid.setHorizontalSpacing(ROW_SPACING)
        self.grid.setVerticalSpacing(1)

        self.toggle = QtWidgets.QToolButton()
        self.toggle.setObjectName(f"open:{joint.name}")
        self.toggle.setAutoRaise(True)
        self.toggle.setCheckable(True)
        self.toggle.setArrowType(QtCore.Qt.ArrowType.RightArrow)
        self.toggle.setToolTip("show or hide this joint's parameters and position slider")
        self.toggle.toggled.connect(self.set_open)
        self.name_label = QtWidgets.QLabel(joint.name)
        f = self.name_label.font()
        f.setBold(True)
        self.name_label.setFont(f)
        self.name_label.setToolTip(f"{joint.name}: {joint.kind} joint, {joint.nv} coordinate(s)\n"
                                   "click to show or hide its parameters")
        self.name_label.setCursor(QtCore.Qt.CursorShape.PointingHandCursor)
        self.name_label.installEventFilter(self)
        self.mode = QtWidgets.QComboBox()
        self.mode.addItems(["torque", "acceleration"])
        self.mode.setToolTip("torque: the torque is given, the joint's acceleration follows (forward dynamics);\n"
                             "acceleration: the motion is prescribed, the torque it needs is computed (hybrid dynamics)")
        self.law = QtWidgets.QComboBox()
        self.law.setToolTip("the input law of this joint (its parameters are under the row)")
        self.readout = QtWidgets.QLabel("")
        self.readout.setObjectName(f"readout:{joint.name}")
        self.readout.setTextInteractionFlags(QtCore.Qt.TextInteractionFlag.TextSelectableByMouse)
        # what drives the joint when another law than its own does (an LQR law): a line of its own
        # under the row (in the name's column it was cut to the column's width)
        self.note = QtWidgets.QLabel("")
        self.note.setObjectName(f"note:{joint.name}")
        self.note.setWordWrap(True)
        self.note.setStyleSheet("color: #0b5394;")
        self.note.setVisible(False)

        # the editor: position slider (one-coordinate joints) and the law's parameters
        self.editor = QtWidgets.QWidget()
        self.editor.setObjectName(f"editor:{joint.name}")
        ed = QtWidgets.QVBoxLayout(self.editor)
        ed.setContentsMargins(0, 0, 0, 2)
        ed.setSpacing(2)
        self.slider = None
        self._setting_slider = False
        if joint.nq == 1:
            line, self.slider_label, self.slider, self.range = _position_slider(joint)
            self.slider.valueChanged.connect(self._slid)
            ed.addLayout(line)
        self.params = QtWidgets.QWidget()
        self.params_layout = QtWidgets.QGridLayout(self.params)
        self.params_layout.setContentsMargins(0, 0, 0, 0)
        self.params_layout.setHorizontalSpacing(10)
        self.params_layout.setVerticalSpacing(2)
        ed.addWidget(self.params)
        self.no_params = QtWidgets.QLabel("")
        self.no_params.setStyleSheet("color: #666;")
        ed.addWidget(self.no_params)
        self.editor.setVisible(False)
        self.fields = {}
        self._cells = []

        self.grid.addWidget(self.toggle, 0, 0)
        self.grid.addWidget(self.name_label, 0, 1)
        self.grid.addWidget(self.mode, 0, 2)
        self.grid.addWidget(self.law, 0, 3)
        self.grid.addWidget(self.note, 2, 1, 1, 4)
        self.grid.addWidget(self.editor, 3, 1, 1, 4)
        self.grid.setColumnStretch(4, 1)
        self._fill_laws("torque")
        self.mode.currentTextChanged.connect(self._mode_changed)
        self.law.currentIndexChanged.connect(self._law_changed)

    # ------------------------------------------------------------------ layout
    def eventFilter(self, obj, ev):
        if obj is self.name_label and ev.type() == QtCore.QEvent.Type.MouseButtonRelease:
            self.set_open(not self.is_open)
            return True
        return False

    def set_open(self, on):
        """Show (True) or hide the editor under the row."""
        on = bool(on)
        if self.toggle.isChecked() != on:
            self.toggle.blockSignals(True)
            self.toggle.setChecked(on)
            self.toggle.blockSignals(False)
        self.toggle.setArrowType(QtCore.Qt.ArrowType.DownArrow if on else QtCore.Qt.ArrowType.RightArrow)
        if on == self.is_open:
            return
        self.is_open = on
        self.editor.setVisible(on)
        self.widget.setStyleSheet(f"QFrame#{self._css_name()} {{ background: #e8f0fb; border-radius: 3px; }}"
                                  if on else "")
        self.openChanged.emit(self.joint.name, on)

    def _css_name(self):
        return self.widget.objectName().replace(":", "\\:")

    def fix_widths(self, name_w, mode_w, law_w):
        """Align the columns with the other rows (the panel measures every row's widest text)."""
        self.name_label.setFixedWidth(name_w)
        self.name_label.setWordWrap(_text_width(self.name_label, self.joint.name) > name_w)
        self.mode.setFixedWidth(mode_w)
        self.law.setFixedWidth(law_w)

    def line_width(self):
        """Width of the compact row without its readout."""
        m = self.grid.contentsMargins()
        return (m.left() + m.right() + self.toggle.sizeHint().width() + self.name_label.minimumWidth()
                + self.mode.minimumWidth() + self.law.minimumWidth() + 3 * ROW_SPACING)

    def relayout(self, wide, editor_width, cell_width):
        """Readout beside the law (wide) or on a second line; parameters in columns that fit."""
        if wide != self.wide:
            self.wide = wide
            self.grid.removeWidget(self.readout)
            if wide:
                self.grid.addWidget(self.readout, 0, 4)
            else:
                self.grid.addWidget(self.readout, 1, 1, 1, 4)
        cols = max(1, editor_width // cell_width)
        if cols != self._editor_cols:
            self._editor_cols = cols
            self._place_cells()

    def _place_cells(self):
        for cell in self._cells:
            self.params_layout.removeWidget(cell)
        cols = self._editor_cols or 1
        for i, cell in enumerate(self._cells):
            self.params_layout.addWidget(cell, i // cols, i % cols)
        for c in range(self.params_layout.columnCount()):
            self.params_layout.setColumnStretch(c, 0)
        self.params_layout.setColumnStretch(cols, 1)

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
        for cell in self._cells:
            self.params_layout.removeWidget(cell)
            cell.deleteLater()
        self._cells = []
        self.fields = {}
        inp = self.current
        for p in PARAMS[(inp.mode, inp.kind)]:
            lo, hi = LIMITS[p]
            unit = _units(self.joint.kind, inp.mode, p)
            cell = QtWidgets.QWidget()
            lay = QtWidgets.QHBoxLayout(cell)
            lay.setContentsMargins(0, 0, 0, 0)
            lay.setSpacing(3)
            lab = QtWidgets.QLabel(PARAM_TEXT[p])
            lab.setFixedWidth(PanelMetrics.param_label_width(lab))
            f = NumberField(getattr(inp, p), lo, hi, what=f"{self.joint.name} {p}", unit=unit)
            f.setObjectName(f"{self.joint.name}:{p}")
            f.setFixedWidth(FIELD_WIDTH)
            f.committed.connect(lambda x, p=p: self._param(p, x))
            f.refused.connect(self.hint.emit)
            lay.addWidget(lab)
            lay.addWidget(f)
            u = QtWidgets.QLabel(unit)        # (empty for gains: the columns stay aligned)
            u.setStyleSheet("color: #555;")
            u.setFixedWidth(PanelMetrics.unit_width(u))
            lay.addWidget(u)
            lay.addStretch(1)
            self._cells.append(cell)
            self.fields[p] = f
        self.no_params.setText("" if self._cells else f"{self.law.currentText()}: no parameters")
        self.no_params.setVisible(not self._cells)
        self._place_cells()

    def _mode_changed(self, mode):
        if mode == "torque" and self.torque_refusal:
            self.mode.blockSignals(True)
            self.mode.setCurrentText(self.current.mode)
            self.mode.blockSignals(False)
            self.hint.emit(self.torque_refusal)
            return
        self.current = self.inputs[mode]
        self._fill_laws(mode)
        if self.fields:
            self.set_open(True)
        self.changed.emit(self.joint.name, self.current)

    def _law_changed(self, idx):
        kind = self.law.itemData(idx)
        if kind is None:
            return
        self.current = self.inputs[self.current.mode] = self.current.with_(kind=kind)
        self._build_params()
        if self.fields:
            self.set_open(True)     # the user chose a law with parameters: show them
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

    def set_on_limit(self, on, past=False):
        """Mark the joint's name while it sits on a limit (app/panels/contactui.py calls it); past: the
        joint limits are off and the joint is at or beyond its range (another colour, and the
        tooltip says so: it is not held there)."""
        self.on_limit = bool(on)
        css = f"background: {'#f4a6a6' if past else '#ffb347'}; border-radius: 3px;" if on else ""
        tip = f"{self.joint.kind} joint, {self.joint.nv} coordinate(s)"
        if on:
            tip += ": at or past its limit (joint limits are off: nothing holds it)" if past else ": on its limit"
        if self.name_label.styleSheet() != css or self.name_label.toolTip() != tip:
            self.name_label.setStyleSheet(css)
            self.name_label.setToolTip(tip)

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
            qj = float(snap.q[j.idx_q])
            q = f"q {_num(qj)}"
            if presc:
                text = f"{q}  needs tau {_num(snap.tau[j.idx_v])} {'N' if lin else 'N·m'}"
            else:
                text = f"{q}  gets ddq {_num(snap.a[j.idx_v])} {'m/s²' if lin else 'rad/s²'}"
        else:
            text = "\n".join(_component_lines(j.kind, snap.tau[sv] if presc else snap.a[sv], presc))
        tip = READOUT_TIPS[(presc, j.nv == 6)]
        if self.readout.text() != text:
            self.readout.setText(text)
        if self.readout.toolTip() != tip:
            self.readout.setToolTip(tip)


class PanelMetrics:
    """Widths measured once from the font (labels of a parameter cell line up across rows)."""

    @staticmethod
    def param_label_width(label):
        return max(_text_width(label, t) for t in PARAM_TEXT.values()) + 2

    @staticmethod
    def unit_width(label):
        return max(_text_width(label, u) for u in ("rad/s^2", "m/s^2", "N·m", "rad", "Hz")) + 2


class JointPanel(QtWidgets.QWidget):
    """All joints of a model. Signals carry what the simulation thread must apply."""

    inputsChanged = QtCore.pyqtSignal(object)    # {joint: JointInput}
    poseChanged = QtCore.pyqtSignal(object)      # {joint: q of the joint}
    hint = QtCore.pyqtSignal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        outer = QtWidgets.QVBoxLayout(self)
        outer.setContentsMargins(2, 2, 2, 2)
        outer.setSpacing(2)
        bar = QtWidgets.QHBoxLayout()
        bar.setSpacing(ROW_SPACING)
        self.all_label = QtWidgets.QLabel("All joints:")
        bar.addWidget(self.all_label)
        self.all_mode = QtWidgets.QComboBox()
        self.all_mode.setObjectName("all_mode")
        self.all_law = QtWidgets.QComboBox()
        self.all_law.setObjectName("all_law")
        self.all_mode.addItems(["torque", "acceleration"])
        self.all_mode.currentTextChanged.connect(self._fill_all_laws)
        self._fill_all_laws("torque")
        self.apply_button = apply = QtWidgets.QPushButton("Apply")
        apply.setObjectName("apply_all")
        apply.setToolTip("set every joint (the floating base stays passive) to this mode and law")
        apply.clicked.connect(self.apply_all)
        for w in (self.all_mode, self.all_law, apply):
            bar.addWidget(w)
        bar.addStretch(1)
        self.open_all = QtWidgets.QToolButton()
        self.open_all.setObjectName("open_all")
        self.open_all.setText("▾ all")
        self.open_all.setAutoRaise(True)
        self.open_all.setCheckable(True)
        self.open_all.setToolTip("show (or hide) the parameters and position sliders of every joint")
        self.open_all.toggled.connect(self._open_all)
        bar.addWidget(self.open_all)
        outer.addLayout(bar)
        self.scroll = QtWidgets.QScrollArea()
        self.scroll.setWidgetResizable(True)
        self.scroll.setHorizontalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.scroll.viewport().installEventFilter(self)
        outer.addWidget(self.scroll)
        self.rows = {}
        self._inner = None

    def _fill_all_laws(self, mode):
        self.all_law.clear()
        for k in (TORQUE_KINDS if mode == "torque" else ACCEL_KINDS):
            self.all_law.addItem(KIND_LABELS[(mode, k)], k)

    def set_model(self, model, scales):
        """scales: {joint: M_ii at the start pose} for sensible torque PD gains. Everything is
        rebuilt: the rows and the "All joints" choice (torque / zero, as a new model starts)."""
        self.all_mode.blockSignals(True)
        self.all_mode.setCurrentText("torque")
        self.all_mode.blockSignals(False)
        self._fill_all_laws("torque")
        self.all_law.setCurrentIndex(self.all_law.findData("zero"))
        self.open_all.blockSignals(True)
        self.open_all.setChecked(False)
        self.open_all.blockSignals(False)
        inner = QtWidgets.QWidget()
        inner.setObjectName("joint_rows")
        lay = QtWidgets.QVBoxLayout(inner)
        lay.setContentsMargins(2, 2, 2, 2)
        lay.setSpacing(1)
        self.rows = {}
        for j in model.joints:
            row = JointRow(j, scales.get(j.name, 1.0), inner)
            row.changed.connect(lambda name, inp: self.inputsChanged.emit({name: inp}))
            row.posed.connect(lambda name, q: self.poseChanged.emit({name: q}))
            row.hint.connect(self.hint.emit)
            lay.addWidget(row.widget)
            self.rows[j.name] = row
        lay.addStretch(1)
        self._measure()
        self.scroll.setWidget(inner)
        self._inner = inner
        self._relayout()

    def _measure(self):
        """Column widths shared by every row: the widest name (up to NAME_MAX), mode and law."""
        if not self.rows:
            return
        any_row = next(iter(self.rows.values()))
        name_w = min(NAME_MAX, max(_text_width(r.name_label, r.joint.name) for r in self.rows.values()) + 4)
        widths = []
        for items in (["torque", "acceleration"], list(KIND_LABELS.values())):
            probe = QtWidgets.QComboBox()      # a fresh one per list: a combo box caches its size hint
            probe.setFont(any_row.mode.font())
            probe.addItems(items)
            widths.append(probe.sizeHint().width())
            probe.deleteLater()
        mode_w, law_w = widths
        for r in self.rows.values():
            r.fix_widths(name_w, mode_w, law_w)
        widest = WIDEST_READOUTS + (WIDEST_COMPONENTS if any(r.joint.nv > 1 for r in self.rows.values()) else ())
        self._readout_w = max(_text_width(any_row.readout, t) for t in widest) + 6
        # a parameter cell: label, field and unit
        lab = QtWidgets.QLabel("")
        self._cell_w = (PanelMetrics.param_label_width(lab) + FIELD_WIDTH + PanelMetrics.unit_width(lab)
                        + 2 * 3 + 10)
        lab.deleteLater()

    def available_width(self):
        """Width the rows may use: the scroll area's, less its vertical scroll bar (counted even
        while hidden, so showing it never flips the layout)."""
        sa = self.scroll
        return sa.width() - 2 * sa.frameWidth() - sa.verticalScrollBar().sizeHint().width()

    def _relayout(self):
        if not self.rows:
            return
        width = self.available_width() - 4       # the inner layout's margins
        any_row = next(iter(self.rows.values()))
        line = any_row.line_width()
        wide = line + ROW_SPACING + self._readout_w <= width
        editor = width - any_row.toggle.sizeHint().width() - ROW_SPACING - 8
        for r in self.rows.values():
            r.relayout(wide, max(editor, self._cell_w), self._cell_w)

    def eventFilter(self, obj, ev):
        if obj is self.scroll.viewport() and ev.type() == QtCore.QEvent.Type.Resize:
            self._relayout()
        return False

    def resizeEvent(self, ev):
        super().resizeEvent(ev)
        self._relayout()

    def _open_all(self, on):
        for r in self.rows.values():
            r.set_open(on)

    def open_row(self, joint, on=True):
        """Show (or hide) a joint's editor and scroll it into view."""
        row = self.rows[joint]
        row.set_open(on)
        if on:      # lay the rows out now (only layout requests run), then scroll to the row
            QtCore.QCoreApplication.sendPostedEvents(None, QtCore.QEvent.Type.LayoutRequest)
            self.scroll.ensureWidgetVisible(row.widget, 0, 0)

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

    def inputs(self):
        """{joint: JointInput} in force for every joint of the model (what the panel shows)."""
        return {name: row.current for name, row in self.rows.items()}

    def show_driver(self, names, text=None):
        """Mark the joints in `names` as driven by another law than their own (`text` says which,
        e.g. an LQR law): their own law's widgets are disabled. No names: every row back to normal."""
        for name, row in self.rows.items():
            on = text is not None and name in names
            for w in (row.mode, row.law, row.params):
                w.setEnabled(not on)
            row.note.setText(text if on else "")
            row.note.setVisible(on)

    def show_state(self, snap, running):
        for row in self.rows.values():
            row.show_state(snap, running)
