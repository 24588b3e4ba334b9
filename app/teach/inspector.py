"""The Inspector: one body's live quantities of Kim's Tables 2-4 (V, V̇, η, Î, B̂, Π, β, F, S, and
its joint's q, q̇, q̈, τ), with Kim's symbols and units, in the body frame or the world frame.
Pick a body by clicking it in the 3D view or in the tree here. The numbers come with the snapshot
(``Snapshot.teaching.bodies``, computed by ``engine.body_quantities`` in the simulation thread);
frame changes use ``engine.teaching.trace.to_world`` (Ad for twists, Ad* for wrenches and inertias)."""
from __future__ import annotations

import numpy as np
from PyQt6 import QtCore, QtGui, QtWidgets

from app.widgets.numfmt import fmt, fmt_all, scale_of

ROWS = ("q", "dq", "ddq", "tau", "V", "dV", "eta", "S", "F", "Ih", "Bh", "Pi", "beta", "Psi")
JOINT_UNITS = {"q": "pos", "dq": "vel", "ddq": "acc", "tau": "eff"}


def joint_space_unit(joint, key):
    """The unit of joint-space quantity `key` (q, dq, ddq, tau, Psi) for this joint: one unit
    ('rad', 'N·m', ...) when its coordinates share one, else one per coordinate ('m, m, rad' for a
    planar joint's q as 'm ×2, rad', a free joint's as 'm ×3, quaternion'); None when there is
    nothing to say better than the general text."""
    from app.sim.recorder import coordinate_unit
    from app.plotting.plotstyle import pretty_unit
    if key == "Psi":
        lin = {coordinate_unit(joint.kind, "vel", k) == "m/s" for k in range(joint.nv)}
        return None if len(lin) != 1 else ("1/kg" if lin.pop() else "1/(kg·m²)")
    n = joint.nq if key == "q" else joint.nv
    units = [coordinate_unit(joint.kind, JOINT_UNITS[key], k) for k in range(n)]
    if not units:
        return None
    runs = []                         # (unit, count) of consecutive coordinates
    for u in units:
        if runs and runs[-1][0] == u:
            runs[-1][1] += 1
        else:
            runs.append([u, 1])
    if len(runs) == 1 and runs[0][0]:
        return pretty_unit(runs[0][0])
    return ", ".join(("quaternion" if not u else pretty_unit(u) + (f" ×{c}" if c > 1 else "")) for u, c in runs)


def fmt_value(x, scale=None, compact=False):
    """Numbers as text (``numfmt.fmt``, one scale for the whole quantity unless `scale` is given):
    a 6-vector as (angular | linear) on two lines, a matrix row by row; compact: a 6x6 matrix as
    its diagonal (two lines, as a 6-vector)."""
    if x is None:
        return "—"
    x = np.asarray(x, dtype=float)
    s = scale_of(x) if scale is None else scale
    if x.ndim == 0 or x.size == 1:
        return fmt(x.reshape(-1)[0], s)
    if x.ndim == 2 and compact and x.shape == (6, 6):
        return "diag " + fmt_value(np.diag(x), s)
    if x.ndim == 1:
        t = fmt_all(x, s)
        if x.size == 6:
            return "(" + "  ".join(t[:3]) + " |\n " + "  ".join(t[3:]) + ")"
        return "(" + "  ".join(t) + ")"
    cells = [fmt_all(row, s) for row in x]
    w = max(len(c) for row in cells for c in row)
    return "\n".join("  ".join(c.rjust(w) for c in row) for row in cells)


class InspectorPanel(QtWidgets.QWidget):
    bodySelected = QtCore.pyqtSignal(str)
    arrowsToggled = QtCore.pyqtSignal(bool)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.symbols = None       # engine.teaching.trace.SYMBOLS, read at the first model (the window opens before the engine loads)
        lay = QtWidgets.QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        self.tree = QtWidgets.QTreeWidget()
        self.tree.setHeaderLabels(["body", "joint"])
        self.tree.itemSelectionChanged.connect(self._tree_selected)
        # the tree above the table in a splitter: drag it smaller (or away) for more rows
        self.split = QtWidgets.QSplitter(QtCore.Qt.Orientation.Vertical)
        self.split.setChildrenCollapsible(True)
        self.split.addWidget(self.tree)
        below = QtWidgets.QWidget()
        blay = QtWidgets.QVBoxLayout(below)
        blay.setContentsMargins(0, 0, 0, 0)
        row = QtWidgets.QHBoxLayout()
        self.title = QtWidgets.QLabel("Click a body in the view or the tree")
        self.title.setStyleSheet("font-weight: bold;")
        self.title.setWordWrap(True)       # a long body name wraps: it never widens the window
        self.title.setSizePolicy(QtWidgets.QSizePolicy.Policy.Ignored, QtWidgets.QSizePolicy.Policy.Preferred)
        row.addWidget(self.title, 1)
        self.frame_box = QtWidgets.QComboBox()
        self.frame_box.addItems(["body frame", "world frame"])
        self.frame_box.setToolTip("body frame {i}: as the recursion computes them; world frame: twists by "
                                  "Ad_T, wrenches by Ad*_{T⁻¹}, inertias by Ad*_{T⁻¹} I Ad_{T⁻¹}")
        self.frame_box.currentIndexChanged.connect(lambda _: self.refresh())
        row.addWidget(self.frame_box)
        blay.addLayout(row)
        row = QtWidgets.QHBoxLayout()
        self.arrows_box = QtWidgets.QCheckBox("draw V, V̇, F as arrows")
        self.arrows_box.setToolTip("draw this body's twist V, its acceleration V̇ and its wrench F as arrows")
        self.arrows_box.setChecked(True)
        self.arrows_box.toggled.connect(self.arrowsToggled)
        row.addWidget(self.arrows_box)
        self.compact_box = QtWidgets.QCheckBox("compact")
        self.compact_box.setToolTip("6×6 inertias (Î, Π) as their diagonal: every row in less height "
                                    "(the whole matrix in the cell's tool tip)")
        self.compact_box.setChecked(True)
        self.compact_box.toggled.connect(lambda _on: self._relayout())
        row.addWidget(self.compact_box)
        row.addStretch(1)
        blay.addLayout(row)
        self.table = QtWidgets.QTableWidget(len(ROWS), 3)
        self.table.setHorizontalHeaderLabels(["symbol", "value", "unit"])
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QtWidgets.QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setWordWrap(False)
        mono = QtGui.QFontDatabase.systemFont(QtGui.QFontDatabase.SystemFont.FixedFont)
        mono.setPointSizeF(max(7.0, mono.pointSizeF() - 1))
        for r, key in enumerate(ROWS):
            self.table.setItem(r, 0, QtWidgets.QTableWidgetItem(key))
            v = QtWidgets.QTableWidgetItem("—")
            v.setFont(mono)
            self.table.setItem(r, 1, v)
            self.table.setItem(r, 2, QtWidgets.QTableWidgetItem(""))
        # symbol and unit as wide as their text, the value as wide as the widest number line of the
        # mode (numfmt.WIDEST): nothing cut; narrower than that, the table scrolls sideways
        head = self.table.horizontalHeader()
        head.setSectionResizeMode(0, QtWidgets.QHeaderView.ResizeMode.ResizeToContents)
        head.setSectionResizeMode(1, QtWidgets.QHeaderView.ResizeMode.Interactive)
        head.setSectionResizeMode(2, QtWidgets.QHeaderView.ResizeMode.ResizeToContents)
        head.setStretchLastSection(True)          # the units take what is left (no empty strip)
        self._mono = mono
        self.table.setVerticalScrollMode(QtWidgets.QAbstractItemView.ScrollMode.ScrollPerPixel)
        blay.addWidget(self.table, 1)
        self.legend = QtWidgets.QLabel("")
        self.legend.setWordWrap(True)
        self.legend.setStyleSheet("color: #444; font-size: 11px;")
        self.legend.setSizePolicy(QtWidgets.QSizePolicy.Policy.Ignored, QtWidgets.QSizePolicy.Policy.Preferred)
        blay.addWidget(self.legend)
        self.split.addWidget(below)
        self.split.setStretchFactor(0, 1)
        self.split.setStretchFactor(1, 4)
        self.split.setSizes([90, 400])
        lay.addWidget(self.split, 1)
        self.body = None
        self.model = None
        self.values = None        # the selected body's values (body frame) as last shown
        self._teaching = None
        self._sized = None
        self._unit_joint = None   # the joint whose units the joint-space rows show

    # ------------------------------------------------------------------ model and selection
    def _label_rows(self):
        """Kim's symbols, meanings and units (from the engine, loaded by the time a model is shown)."""
        from engine.teaching.trace import SYMBOLS
        self.symbols = SYMBOLS
        for r, key in enumerate(ROWS):
            sym, meaning, unit = SYMBOLS[key]
            it = self.table.item(r, 0)
            it.setText(sym if key not in ("dq", "ddq") else f"{sym} ({key})")
            it.setToolTip(meaning)
            self.table.item(r, 2).setText(unit)

    def set_model(self, model):
        if self.symbols is None:
            self._label_rows()
        self.model = model
        self._unit_joint = None
        self.body = None
        self.values = None
        self.tree.blockSignals(True)
        self.tree.clear()
        items = {0: self.tree.invisibleRootItem()}
        joint_of = {j.body: j for j in model.joints}
        for i, name in enumerate(model.body_names, start=1):
            j = joint_of[i]
            it = QtWidgets.QTreeWidgetItem(items.get(j.parent, self.tree.invisibleRootItem()), [name, f"{j.name} ({j.kind})"])
            it.setData(0, QtCore.Qt.ItemDataRole.UserRole, name)
            items[i] = it
        self.tree.expandAll()
        self.tree.blockSignals(False)
        self.title.setText("Click a body in the view or the tree")
        for r in range(len(ROWS)):
            self.table.item(r, 1).setText("—")

    def select(self, name):
        """Show body `name` (from a click in the view, or code)."""
        if self.model is None or name not in self.model.body_names:
            return
        self.body = name
        self.tree.blockSignals(True)
        for it in self.tree.findItems(name, QtCore.Qt.MatchFlag.MatchExactly | QtCore.Qt.MatchFlag.MatchRecursive, 0):
            self.tree.setCurrentItem(it)
        self.tree.blockSignals(False)
        self.refresh()
        self.bodySelected.emit(name)

    def _tree_selected(self):
        it = self.tree.currentItem()
        if it is not None:
            self.select(it.data(0, QtCore.Qt.ItemDataRole.UserRole))

    @property
    def world(self):
        return self.frame_box.currentIndex() == 1

    # ------------------------------------------------------------------ values
    def show_teaching(self, teaching):
        self._teaching = teaching
        self.refresh()

    def refresh(self):
        t = self._teaching
        if self.body is None or t is None or self.body not in t.bodies:
            return
        from engine.teaching.trace import to_world
        vals = t.bodies[self.body]
        self.values = vals
        i = self.model.body_names.index(self.body) + 1
        j = [jj for jj in self.model.joints if jj.body == i][0]
        mode = "acceleration prescribed" if t.prescribed[j.idx_v] else "torque given"
        if self._unit_joint is not j:        # the joint-space rows in this joint's own units
            self._unit_joint = j
            for r, key in enumerate(ROWS):
                if key in JOINT_UNITS or key == "Psi":
                    self.table.item(r, 2).setText(joint_space_unit(j, key) or self.symbols[key][2])
        self.title.setText(f"{self.body} (body {i}): joint {j.name}, {j.kind}, {mode} — t = {t.t:.3f} s, "
                           f"{'world' if self.world else 'body'} frame")
        Tw = vals["T_world"]
        compact = self.compact_box.isChecked()
        for r, key in enumerate(ROWS):
            x = vals.get(key)
            if x is not None and self.world:
                x = to_world(key, x, Tw)
            # a joint-space scalar's scale: that quantity over every joint (round-off next to it reads 0)
            scale = self._joint_scale(t, key) if key in JOINT_UNITS else None
            if key == "S":
                text = "\n".join(fmt_value(col, scale_of(x)) for col in np.asarray(x).T)
            else:
                text = fmt_value(x, scale, compact)
            item = self.table.item(r, 1)
            if item.text() != text:
                item.setText(text)
                if compact and x is not None and np.ndim(x) == 2 and np.shape(x) == (6, 6):
                    item.setToolTip(fmt_value(x))
                else:
                    item.setToolTip("")
        shape = (self.body, self.world, compact)
        if shape != self._sized:        # line counts change only with the body (and its joint)
            self._sized = shape
            self._fit_columns(compact, j)
            self.table.resizeRowsToContents()
        elif self._value_width() > self.table.columnWidth(1):     # a longer number: the column grows
            self.table.setColumnWidth(1, self._value_width())

    def _fit_columns(self, compact, joint):
        """The units on the lines they belong to (angular / linear parts; a compact 6x6's diagonal:
        kg·m², then kg) and the value column as wide as the widest line the mode can show."""
        for r, key in enumerate(ROWS):
            unit = (joint_space_unit(joint, key) if key in JOINT_UNITS or key == "Psi" else None) \
                or self.symbols[key][2]
            lines = self.table.item(r, 1).text().count("\n") + 1
            if key in ("Ih", "Pi"):
                unit = "kg·m²\nkg" if compact else unit.replace(", ", ",\n")
            elif lines > 1 and key not in JOINT_UNITS:
                unit = unit.replace(", ", "\n")
            self.table.item(r, 2).setText(unit)
        self.table.setColumnWidth(1, self._value_width() + QtGui.QFontMetrics(self._mono).horizontalAdvance("-0"))

    def _value_width(self):
        """The widest line of the values shown, in pixels (cell padding included)."""
        fm = QtGui.QFontMetrics(self._mono)
        lines = [ln for r in range(len(ROWS)) for ln in self.table.item(r, 1).text().split("\n")]
        return max(fm.horizontalAdvance(ln) for ln in lines) + 14

    @staticmethod
    def _joint_scale(t, key):
        return scale_of(*(b[key] for b in t.bodies.values() if isinstance(b, dict) and b.get(key) is not None))

    def _relayout(self):
        self._sized = None
        self.refresh()

    def set_legend(self, text):
        if self.legend.text() != text:
            self.legend.setText(text)

    def value_text(self, key):
        """The text shown for quantity `key` (for tests and copy-paste)."""
        return self.table.item(ROWS.index(key), 1).text()
