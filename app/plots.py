"""Live plots: any joint's q, dq, ddq, tau, the energies, the wrench a chosen joint transmits, the
constraint forces (lambda, per constraint and row, in N or N·m) and residuals |f(q)| of closed
loops, and the real-time factor, over a scrolling window. Every sample is kept (``Recorder``);
the curves are decimated (min/max per pixel column, so peaks survive) only for drawing. "log |y|"
plots log10 of the magnitudes (the drift meter spans decades)."""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PyQt6 import QtCore, QtWidgets

from .recorder import Recorder

MAX_POINTS = 500     # buckets per curve on screen (each a min/max pair)
LOG_FLOOR = 1e-16    # log |y| draws smaller magnitudes (exact zeros) at this floor
PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
           "#bcbd22", "#7f7f7f", "#393b79", "#ad494a", "#637939", "#e6550d", "#3182bd", "#31a354"]


def decimate(t, y, max_points=MAX_POINTS):
    """(t, y) reduced to at most ~2 max_points points keeping each bucket's min and max."""
    n = len(t)
    if n <= 2 * max_points:
        return t, y
    k = int(np.ceil(n / max_points))
    m = n // k
    tt = t[:m * k].reshape(m, k)
    yy = y[:m * k].reshape(m, k)
    lo = np.fmin.reduce(yy, axis=1)    # ignores NaN unless the whole bucket is NaN
    hi = np.fmax.reduce(yy, axis=1)
    t2 = np.repeat(tt[:, 0], 2)
    t2[1::2] = tt[:, -1]
    y2 = np.empty(2 * m)
    y2[0::2] = lo
    y2[1::2] = hi
    return t2, y2


class PlotPanel(QtWidgets.QWidget):
    """Channel chooser + plot + controls. ``append`` takes the blocks drained from the simulation
    thread; ``refresh`` (on the GUI's timer) redraws."""

    wrenchJointChanged = QtCore.pyqtSignal(object)   # joint name or None
    message = QtCore.pyqtSignal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.recorder = None
        self.layout_ = None
        self.curves = {}
        self.window = 10.0
        self.paused = False
        self._dirty = False
        lay = QtWidgets.QHBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        left = QtWidgets.QVBoxLayout()
        self.tree = QtWidgets.QTreeWidget()
        self.tree.setHeaderHidden(True)
        self.tree.setMinimumWidth(170)
        self.tree.setMaximumWidth(260)
        self.tree.itemChanged.connect(self._item_changed)
        left.addWidget(self.tree)
        wr = QtWidgets.QHBoxLayout()
        wr.addWidget(QtWidgets.QLabel("wrench of"))
        self.wrench_joint = QtWidgets.QComboBox()
        self.wrench_joint.setToolTip("the joint whose transmitted wrench (in its child body frame) is recorded")
        self.wrench_joint.currentIndexChanged.connect(
            lambda i: self.wrenchJointChanged.emit(self.wrench_joint.itemData(i)))
        wr.addWidget(self.wrench_joint, 1)
        left.addLayout(wr)
        lay.addLayout(left)
        right = QtWidgets.QVBoxLayout()
        bar = QtWidgets.QHBoxLayout()
        bar.addWidget(QtWidgets.QLabel("window"))
        self.window_box = QtWidgets.QDoubleSpinBox()
        self.window_box.setRange(0.5, 600.0)
        self.window_box.setValue(self.window)
        self.window_box.setSuffix(" s")
        self.window_box.setToolTip("length of the scrolling window (at most what the recorder holds)")
        self.window_box.valueChanged.connect(self._set_window)
        bar.addWidget(self.window_box)
        self.pause_btn = QtWidgets.QPushButton("Pause plot")
        self.pause_btn.setCheckable(True)
        self.pause_btn.setToolTip("freeze the plot (recording goes on) to zoom and pan with the mouse")
        self.pause_btn.toggled.connect(self._pause)
        bar.addWidget(self.pause_btn)
        self.log_box = QtWidgets.QCheckBox("log |y|")
        self.log_box.setToolTip(f"plot log10 of the magnitudes (for the constraint residual, which spans "
                                f"decades); magnitudes below {LOG_FLOOR:g} are drawn at {LOG_FLOOR:g}")
        self.log_box.toggled.connect(self.set_log)
        bar.addWidget(self.log_box)
        clear = QtWidgets.QPushButton("Clear")
        clear.clicked.connect(self.clear)
        bar.addWidget(clear)
        export = QtWidgets.QPushButton("Export CSV…")
        export.clicked.connect(self._export_dialog)
        bar.addWidget(export)
        self.count_label = QtWidgets.QLabel("")
        bar.addWidget(self.count_label)
        bar.addStretch(1)
        right.addLayout(bar)
        self.plot = pg.PlotWidget(background="w")
        # grid: a few plain lines at round values (pyqtgraph's own grid repaints both axes with
        # every curve update: 7 ms of a 15 ms redraw), moved only when the ranges change
        self._grid = {"x": [], "y": []}
        self.plot.setLabel("bottom", "time before the newest sample", units="s")
        self.plot.setClipToView(True)
        # repaint only what changed (pyqtgraph's default repaints the whole view, axes included)
        self.plot.setViewportUpdateMode(QtWidgets.QGraphicsView.ViewportUpdateMode.BoundingRectViewportUpdate)
        self.legend = self.plot.addLegend(offset=(5, 5), labelTextColor="k")
        self.plot.getPlotItem().setMouseEnabled(x=True, y=True)
        self.plot.enableAutoRange(False)
        self._yrange = None
        self._xrange = None
        self.t_end = None
        self.log_y = False
        right.addWidget(self.plot, 1)
        lay.addLayout(right, 1)

    # ------------------------------------------------------------------ model
    def set_model(self, model, layout, default_channels=()):
        self.layout_ = layout
        self.recorder = Recorder(layout)
        self.window_box.setMaximum(max(1.0, self.recorder.capacity * 1e-3))
        self.tree.blockSignals(True)
        self.tree.clear()
        for it in list(self.curves.values()):
            self.plot.removeItem(it)
        self.curves = {}
        self.legend.clear()

        def leaf(parent, text, col):
            it = QtWidgets.QTreeWidgetItem(parent, [text])
            it.setFlags(it.flags() | QtCore.Qt.ItemFlag.ItemIsUserCheckable)
            it.setCheckState(0, QtCore.Qt.CheckState.Unchecked)
            it.setData(0, QtCore.Qt.ItemDataRole.UserRole, col)
            return it

        joints = QtWidgets.QTreeWidgetItem(self.tree, ["joints"])
        for j in model.joints:
            jt = QtWidgets.QTreeWidgetItem(joints, [j.name])
            for qty in ("q", "dq", "ddq", "tau"):
                for c in layout.joint_columns(j.name, qty):
                    leaf(jt, layout.names[c].split(":", 1)[0] + layout.names[c][len(qty) + 1 + len(j.name):], c)
        en = QtWidgets.QTreeWidgetItem(self.tree, ["energy"])
        for n in ("kinetic", "potential", "total", "work", "dissipated", "balance"):
            leaf(en, n, layout.column(f"energy:{n}"))
        wr = QtWidgets.QTreeWidgetItem(self.tree, ["wrench (chosen joint)"])
        for c in layout.WRENCH_LABELS:
            leaf(wr, c, layout.column(f"wrench:{c}"))
        if layout.nlam:
            lam = QtWidgets.QTreeWidgetItem(self.tree, ["constraint forces (λ)"])
            lam.setToolTip(0, "Lagrange multipliers: the force (N) or moment (N·m) each closure applies at "
                              "its point, world axes (a gap while the constraint is switched off)")
            for k, c in enumerate(range(layout.lam.start, layout.lam.stop)):
                it = leaf(lam, f"{layout.names[c].split(':', 1)[1]} {layout.lam_labels[k]} [{layout.units[c]}]", c)
                it.setToolTip(0, layout.names[c])
        if layout.residual is not None:
            res = QtWidgets.QTreeWidgetItem(self.tree, ["constraint residual |f(q)|"])
            res.setToolTip(0, "how far the state is from the constraints (drift); tick log |y| to read decades")
            leaf(res, f"enabled constraints (drift) [{layout.units[layout.residual]}]", layout.residual)
            for name, c in layout.residual_columns.items():
                leaf(res, f"{name} [{layout.units[c]}]", c)
        for title, tip, items in getattr(layout, "extra_groups", ()):     # contact, limits (app/contactsim.py)
            group = QtWidgets.QTreeWidgetItem(self.tree, [title])
            group.setToolTip(0, tip)
            for text, c in items:
                leaf(group, text, c)
        leaf(self.tree, "real-time factor", layout.rtf)
        joints.setExpanded(True)
        en.setExpanded(True)
        self.tree.blockSignals(False)
        self.wrench_joint.blockSignals(True)
        self.wrench_joint.clear()
        self.wrench_joint.addItem("(none)", None)
        for j in model.joints:
            self.wrench_joint.addItem(j.name, j.name)
        self.wrench_joint.blockSignals(False)
        self.set_channels(default_channels)

    def _leaves(self):
        it = QtWidgets.QTreeWidgetItemIterator(self.tree)
        while it.value():
            item = it.value()
            if item.data(0, QtCore.Qt.ItemDataRole.UserRole) is not None:
                yield item
            it += 1

    def set_channels(self, names):
        """Show exactly these channels (layout column names, e.g. "q:joint1", "energy:total")."""
        cols = {self.layout_.column(n) for n in names}
        self.tree.blockSignals(True)
        for item in self._leaves():
            c = item.data(0, QtCore.Qt.ItemDataRole.UserRole)
            item.setCheckState(0, QtCore.Qt.CheckState.Checked if c in cols else QtCore.Qt.CheckState.Unchecked)
            if c in cols and item.parent() is not None:
                item.parent().setExpanded(True)
        self.tree.blockSignals(False)
        for c in list(self.curves):
            if c not in cols:
                self._remove_curve(c)
        for c in sorted(cols):
            if c not in self.curves:
                self._add_curve(c)
        if any(self.layout_.names[c].startswith("wrench:") for c in cols) and self.wrench_joint.currentData() is None \
                and self.wrench_joint.count() > 1:
            self.wrench_joint.setCurrentIndex(1)
        self._dirty = True

    def channels(self):
        return [self.layout_.names[c] for c in self.curves]

    def _item_changed(self, item, col):
        c = item.data(0, QtCore.Qt.ItemDataRole.UserRole)
        if c is None:
            return
        if item.checkState(0) == QtCore.Qt.CheckState.Checked:
            self._add_curve(c)
            if self.layout_.names[c].startswith("wrench:") and self.wrench_joint.currentData() is None \
                    and self.wrench_joint.count() > 1:
                self.wrench_joint.setCurrentIndex(1)
        else:
            self._remove_curve(c)
        self._dirty = True

    def _add_curve(self, c):
        if c in self.curves:
            return
        L = self.layout_
        name = L.names[c]
        unit = L.units[c]
        if L.nlam and L.lam.start <= c < L.lam.stop:       # "λ closure[0] fx", not "lambda:closure[0]"
            name = f"λ {name.split(':', 1)[1]} {L.lam_labels[c - L.lam.start]}"
        used = {it.opts["pen"].color().name() for it in self.curves.values()}
        color = next((c_ for c_ in PALETTE if c_ not in used), PALETTE[len(self.curves) % len(PALETTE)])
        pen = pg.mkPen(color, width=1)
        it = self.plot.plot([], [], pen=pen, name=f"{name} [{unit}]" if unit else name)
        self.curves[c] = it

    def _remove_curve(self, c):
        it = self.curves.pop(c, None)
        if it is not None:
            self.plot.removeItem(it)
            self.legend.removeItem(it)

    # ------------------------------------------------------------------ data
    def append(self, blocks):
        """Blocks from ``SampleQueue.drain()``: arrays of rows, or "clear" after a reset."""
        if self.recorder is None:
            return
        for b in blocks:
            if isinstance(b, str):
                self.recorder.clear()
            else:
                self.recorder.append(b)
            self._dirty = True

    def clear(self):
        if self.recorder is not None:
            self.recorder.clear()
            self._dirty = True
            self.refresh(force=True)

    def _set_window(self, w):
        self.window = float(w)
        self._dirty = True

    def set_log(self, on):
        """Plot log10 |y| (the left axis labels decades)."""
        on = bool(on)
        if self.log_box.isChecked() != on:
            self.log_box.setChecked(on)      # comes back here through the signal
            return
        self.log_y = on
        self.plot.getAxis("left").setLogMode(on)
        self._yrange = None
        self._dirty = True

    def _pause(self, on):
        self.paused = on
        self._xrange = self._yrange = None     # after zooming, resuming fits again
        self.pause_btn.setText("Resume plot" if on else "Pause plot")
        if not on:
            self._dirty = True

    def refresh(self, force=False):
        """Redraw the curves over the window ending at the newest sample."""
        if self.recorder is None or (self.paused and not force) or not (self._dirty or force):
            return
        self._dirty = False
        rec = self.recorder
        t_last = rec.last_time()
        self.count_label.setText(f"{rec.total} samples" + ("" if t_last is None else f", newest at t = {t_last:.3f} s"))
        t_end = rec.last_time()
        if t_end is None:
            for it in self.curves.values():
                it.setData([], [])
            return
        cols = list(self.curves)
        if not cols:
            return
        d = rec.data(columns=[0] + cols, since=t_end - self.window)
        # x is time relative to the newest sample, so the axis itself stays still while the
        # curves scroll (redrawing a moving axis costs more than the curves)
        t = d[:, 0] - t_end
        self.t_end = t_end
        lo, hi = np.inf, -np.inf
        for i, c in enumerate(cols, start=1):
            y = d[:, i]
            if self.log_y:
                y = np.log10(np.maximum(np.abs(y), LOG_FLOOR))     # NaN stays NaN (a gap)
            tt, yy = decimate(t, y)
            fin = np.isfinite(yy)
            if fin.all():
                self.curves[c].setData(tt, yy, connect="all", skipFiniteCheck=True)
            else:
                self.curves[c].setData(tt, yy, connect="finite")
            if fin.any():
                lo, hi = min(lo, np.min(yy[fin])), max(hi, np.max(yy[fin]))
        if self._xrange != self.window:
            self.plot.setXRange(-self.window, 0.0, padding=0.0)
            self._xrange = self.window
            self._grid_lines("x", -self.window, 0.0, 10)
        self._fit_y(lo, hi)

    def _grid_lines(self, axis, lo, hi, n):
        """Grid lines at round values between lo and hi (about n of them)."""
        span = hi - lo
        if not (np.isfinite(span) and span > 0):
            return
        step = 10.0 ** np.floor(np.log10(span / n))
        for f in (1.0, 2.0, 5.0, 10.0):
            if span / (f * step) <= n:
                step *= f
                break
        values = np.arange(np.ceil(lo / step), np.floor(hi / step) + 1) * step
        pool = self._grid[axis]
        while len(pool) < len(values):
            line = pg.InfiniteLine(angle=90 if axis == "x" else 0, pen=pg.mkPen((0, 0, 0, 38)), movable=False)
            line.setZValue(-10)
            self.plot.addItem(line, ignoreBounds=True)
            pool.append(line)
        for line, v in zip(pool, values):
            line.setValue(float(v))
            line.setVisible(True)
        for line in pool[len(values):]:
            line.setVisible(False)

    def _fit_y(self, lo, hi):
        """Y range with hysteresis: grows at once when the data leave it, shrinks only when the
        data use less than a third of it (a still axis is cheaper to draw and easier to read)."""
        if not (np.isfinite(lo) and np.isfinite(hi)):
            return
        span = max(hi - lo, 1e-9 * max(1.0, abs(hi)), 1e-12)
        cur = self._yrange
        if cur is not None and cur[0] <= lo and hi <= cur[1] and (hi - lo) >= (cur[1] - cur[0]) / 3.0:
            return
        pad = 0.15 * span
        self._yrange = (lo - pad, hi + pad)
        self.plot.setYRange(*self._yrange, padding=0.0)
        self._grid_lines("y", *self._yrange, 6)

    # ------------------------------------------------------------------ CSV
    def export_csv(self, path):
        n = self.recorder.to_csv(path)
        self.message.emit(f"wrote {n} samples ({len(self.layout_.names)} columns) to {path}")
        return n

    def _export_dialog(self):
        if self.recorder is None:
            return
        path, _ = QtWidgets.QFileDialog.getSaveFileName(self, "Export recorded samples", "jointlab.csv",
                                                        "CSV files (*.csv)")
        if path:
            try:
                self.export_csv(path)
            except OSError as e:
                QtWidgets.QMessageBox.warning(self, "Export CSV", f"Could not write {path}: {e}")
