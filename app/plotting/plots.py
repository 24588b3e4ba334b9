"""Live plots: any joint's q, dq, ddq, tau, the energies, the wrench a chosen joint transmits, the
constraint forces (lambda, per constraint and row, in N or N·m) and residuals |f(q)| of closed
loops, and the real-time factor, over a scrolling window. Every sample is kept (``Recorder``);
the curves are decimated (min/max per pixel column, so peaks survive) only for drawing. "log |y|"
plots log10 of the magnitudes (the drift meter spans decades)."""
from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PyQt6 import QtCore, QtGui, QtWidgets

from app.plotting.plotstyle import (row_key, row_order, row_label, curve_label, style_of, wrappable_columns,
                                    wrap_curve)
from app.sim.recorder import Recorder

MAX_POINTS = 500     # buckets per curve on screen (each a min/max pair)
LOG_FLOOR = 1e-16    # log |y| draws smaller magnitudes (exact zeros) at this floor


def decimate(t, y, max_points=MAX_POINTS):
    """(t, y) reduced to at most 2 max_points points keeping each bucket's min and max (drawn
    at the bucket's first and last time); the newest sample is kept as itself, so a curve ends
    at its latest value. One column of ``decimate_columns``."""
    t2, Y2 = decimate_columns(t, np.asarray(y).reshape(-1, 1), max_points)
    return t2, Y2[:, 0]


def decimate_columns(t, Y, max_points=MAX_POINTS):
    """Every column of Y (n x k) reduced at once, with the same buckets for all columns (one
    reduceat per bound over the block): each bucket's min and max (NaN only when the whole bucket
    is), drawn at its first and last time, max first in a falling bucket (a monotonic stretch
    stays one stroke, no sawtooth), and the newest sample as itself."""
    n = len(t)
    if n <= 2 * max_points:
        return t, Y
    k = int(np.ceil((n - 1) / max(1, max_points - 1)))
    starts = np.arange(0, n - 1, k)
    ends = np.minimum(starts + k, n - 1) - 1
    lo = np.fmin.reduceat(Y[:n - 1], starts, axis=0)
    hi = np.fmax.reduceat(Y[:n - 1], starts, axis=0)
    m = len(starts)
    t2 = np.empty(2 * m + 1)
    t2[0:-1:2] = t[starts]
    t2[1:-1:2] = t[ends]
    t2[-1] = t[-1]
    falling = Y[starts] > Y[ends]
    Y2 = np.empty((2 * m + 1, Y.shape[1]))
    Y2[0:-1:2] = np.where(falling, hi, lo)
    Y2[1:-1:2] = np.where(falling, lo, hi)
    Y2[-1] = Y[-1]
    return t2, Y2


_DASH = {"solid": QtCore.Qt.PenStyle.SolidLine, "dash": QtCore.Qt.PenStyle.DashLine,
         "dot": QtCore.Qt.PenStyle.DotLine, "dashdot": QtCore.Qt.PenStyle.DashDotLine}
LEGEND_WIDTH = 160   # px: the legend column beside the rows
LEGEND_TEXT_W = LEGEND_WIDTH - 48   # px of a legend entry's text (after its line sample): longer is elided
ROW_MIN = 40         # px: a row is never shorter (the rows scroll when the panel is shorter; three rows
                     # and the time axis fit the plots' default height at 1280 x 800)
ENTRY_H = 16         # px: one legend entry (a row is tall enough for its legend)
BOTTOM_AXIS_H = 40   # px: the time axis with its label
ROW_GAP = 6          # px between two rows: a tick label at a row's edge may reach ROW_GAP / 2 into it,
                     # one reaching further is hidden (no two rows' labels overlap)
AXIS_WIDTH = 58      # px: every row's left axis, so the rows line up
PEN_WIDTH = 1     # cosmetic 1 px: a 2 px pen doubles the paint time (13 -> 29 ms, 12 curves)
ANGLE_RANGE = (-1.08 * np.pi, 1.08 * np.pi)    # a row of wrapped angles: (-pi, pi] and a margin


class _Row:
    """One plot row: a PlotItem for the curves of one unit and a legend beside it."""

    def __init__(self, key):
        self.key = key
        self.plot = None
        self.legend = None
        self.holder = None
        self.cols = []
        self.yrange = None
        self.angles = False       # drawn as wrapped angles (fixed range, ticks at multiples of pi/2)
        self.grid = {"x": [], "y": []}
        self.cursor = None        # the timeline's cursor (a vertical line), hidden when not scrubbing


class PlotPanel(QtWidgets.QWidget):
    """Channel chooser + plot rows + controls. ``append`` takes the blocks drained from the
    simulation thread; ``refresh`` (on the GUI's timer) redraws. The chosen channels are drawn
    in one row per unit (rad, rad/s, N·m, J, ...), the rows stacked on one linked time axis
    (ticks under the bottom row only), each row's legend beside it; a row is never squeezed
    below a readable height (the rows scroll instead)."""

    wrenchJointChanged = QtCore.pyqtSignal(object)   # joint name or None
    message = QtCore.pyqtSignal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.recorder = None
        self.layout_ = None
        self.model = None
        self.curves = {}          # column -> PlotCurveItem
        self.rows = {}            # row key -> _Row, in display order
        self._cols = []           # shown columns, in the order they were chosen
        self._wrap_cols = set()
        self.window = 10.0
        self.paused = False
        self._dirty = False
        self._pending = []        # rows a staged refresh has still to draw (refresh_pending)
        self.sampling = ""        # how the samples are spaced when not every step ("every 1 ms (1 step in 10)")
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
        # the button keeps the width of its longer text: the bar does not move when it toggles
        fm = self.pause_btn.fontMetrics()
        self.pause_btn.setMinimumWidth(max(fm.horizontalAdvance(t) for t in ("Pause plot", "Resume plot")) + 24)
        self.pause_btn.toggled.connect(self._pause)
        bar.addWidget(self.pause_btn)
        self.wrap_box = QtWidgets.QCheckBox("wrap angles")
        self.wrap_box.setToolTip("draw the angles of revolute joints in (-π, π] (the curve breaks at "
                                 "the wrap); off: the unwrapped angle, as recorded")
        self.wrap_box.setChecked(True)
        self.wrap_box.toggled.connect(self.set_wrap)
        self.wrap = True
        bar.addWidget(self.wrap_box)
        self.log_box = QtWidgets.QCheckBox("log |y|")
        self.log_box.setToolTip(f"plot log10 of the magnitudes (for the constraint residual, which spans "
                                f"decades); magnitudes below {LOG_FLOOR:g} are drawn at {LOG_FLOOR:g}")
        self.log_box.toggled.connect(self.set_log)
        bar.addWidget(self.log_box)
        clear = QtWidgets.QPushButton("Clear")
        clear.clicked.connect(self.clear)
        bar.addWidget(clear)
        self.export_btn = QtWidgets.QToolButton()
        self.export_btn.setText("Export")
        self.export_btn.setToolTip("save the recorded samples (CSV) or the plot as it is drawn (PNG, SVG)")
        self.export_btn.setPopupMode(QtWidgets.QToolButton.ToolButtonPopupMode.InstantPopup)
        menu = QtWidgets.QMenu(self.export_btn)
        self.act_export_csv = menu.addAction("Recorded samples (CSV)…", self._export_dialog)
        self.act_export_png = menu.addAction("Plot image (PNG)…", lambda: self._export_plot_dialog("png"))
        self.act_export_svg = menu.addAction("Plot drawing (SVG)…", lambda: self._export_plot_dialog("svg"))
        self.export_btn.setMenu(menu)
        bar.addWidget(self.export_btn)
        self.count_label = QtWidgets.QLabel("")
        self.count_label.setMinimumWidth(10)
        self.count_label.setSizePolicy(QtWidgets.QSizePolicy.Policy.Ignored, QtWidgets.QSizePolicy.Policy.Preferred)
        bar.addWidget(self.count_label, 1)
        right.addLayout(bar)
        self._tick_font = QtGui.QFont(self.font())
        self._tick_font.setPointSizeF(max(7.0, self.font().pointSizeF() - 1.0))
        legend_font = QtGui.QFont(self.font())
        legend_font.setPointSizeF(8.0)                # the legends' labelTextSize
        self._legend_fm = QtGui.QFontMetrics(legend_font)
        self.glw = pg.GraphicsLayoutWidget()
        self.glw.setBackground("w")
        self.glw.ci.setContentsMargins(2, 4, 2, 2)
        self.glw.ci.setSpacing(2)
        self.glw.ci.layout.setVerticalSpacing(ROW_GAP)
        # repaint only what changed (pyqtgraph's default repaints the whole view, axes included)
        self.glw.setViewportUpdateMode(QtWidgets.QGraphicsView.ViewportUpdateMode.BoundingRectViewportUpdate)
        self._xrange = None
        self.t_end = None
        self.cursor_t = None      # the timeline's cursor time (app/window/timeline.py), None: no cursor
        self.log_y = False
        self.scroll = QtWidgets.QScrollArea()
        self.scroll.setWidgetResizable(True)
        self.scroll.setFrameShape(QtWidgets.QFrame.Shape.NoFrame)
        self.scroll.setHorizontalScrollBarPolicy(QtCore.Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.scroll.setWidget(self.glw)
        right.addWidget(self.scroll, 1)
        lay.addLayout(right, 1)

    # ------------------------------------------------------------------ model
    def set_model(self, model, layout, default_channels=()):
        self.model = model
        self.layout_ = layout
        self.recorder = Recorder(layout)
        self._wrap_cols = wrappable_columns(model, layout)
        self.window_box.setMaximum(max(1.0, self.recorder.capacity * 1e-3))
        self.tree.blockSignals(True)
        self.tree.clear()
        self._cols = []
        self._rebuild()

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
        for title, tip, items in getattr(layout, "extra_groups", ()):     # contact, limits (app/sim/contactsim.py)
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
        """Show exactly these channels (layout column names, e.g. "q:joint1", "energy:total"), in
        this order within each row. An unknown name raises KeyError naming it."""
        cols = []
        for n in names:
            try:
                c = self.layout_.column(n)
            except KeyError:
                raise KeyError(f"plot channel '{n}': no such column (known: q:JOINT, dq:, ddq:, tau:, "
                               f"energy:..., wrench:..., lambda:..., residual, rtf)") from None
            if c not in cols:
                cols.append(c)
        chosen = set(cols)
        self.tree.blockSignals(True)
        for item in self._leaves():
            c = item.data(0, QtCore.Qt.ItemDataRole.UserRole)
            item.setCheckState(0, QtCore.Qt.CheckState.Checked if c in chosen else QtCore.Qt.CheckState.Unchecked)
            if c in chosen and item.parent() is not None:
                item.parent().setExpanded(True)
        self.tree.blockSignals(False)
        self._cols = cols
        self._rebuild()
        if any(self.layout_.names[c].startswith("wrench:") for c in cols) and self.wrench_joint.currentData() is None \
                and self.wrench_joint.count() > 1:
            self.wrench_joint.setCurrentIndex(1)
        self._dirty = True

    def channels(self):
        """The shown channels (layout column names), in the order they were chosen."""
        return [self.layout_.names[c] for c in self._cols]

    def _item_changed(self, item, col):
        c = item.data(0, QtCore.Qt.ItemDataRole.UserRole)
        if c is None:
            return
        if item.checkState(0) == QtCore.Qt.CheckState.Checked:
            if c not in self._cols:
                self._cols.append(c)
            if self.layout_.names[c].startswith("wrench:") and self.wrench_joint.currentData() is None \
                    and self.wrench_joint.count() > 1:
                self.wrench_joint.setCurrentIndex(1)
        elif c in self._cols:
            self._cols.remove(c)
        self._rebuild()
        self._dirty = True
        self.refresh(force=True)

    # ------------------------------------------------------------------ rows
    def _rebuild(self):
        """Lay out one row per unit of the shown channels (rebuilt when the channels change: rare,
        and cheaper to redo than to patch)."""
        ci = self.glw.ci
        ci.clear()
        self.rows = {}
        self.curves = {}
        self._pending = []
        self._xrange = None
        if self.layout_ is None:
            return
        groups = {}
        for c in self._cols:
            groups.setdefault(row_key(self.layout_, c), []).append(c)
        keys = sorted(groups, key=row_order)
        first = None
        for r, key in enumerate(keys):
            row = _Row(key)
            row.cols = groups[key]
            plot = pg.PlotItem()
            plot.setMenuEnabled(False)
            plot.hideButtons()
            plot.setClipToView(True)
            plot.enableAutoRange(False)
            plot.setMouseEnabled(x=True, y=True)
            left = plot.getAxis("left")
            left.setWidth(AXIS_WIDTH)
            left.enableAutoSIPrefix(False)      # the label is the unit itself: no "(x1e-15)"
            left.setLabel(row_label(key))
            left.setLogMode(self.log_y)
            for side in ("left", "bottom"):
                ax = plot.getAxis(side)
                ax.setPen(pg.mkPen("#444"))
                ax.setTextPen(pg.mkPen("#222"))
                ax.setStyle(tickFont=self._tick_font, tickTextOffset=3)
            left.setStyle(hideOverlappingLabels=ROW_GAP // 2)
            if first is None:
                first = plot
            else:
                plot.setXLink(first)
            last = r == len(keys) - 1
            plot.showAxis("bottom", last)
            if last:
                plot.setLabel("bottom", "time before the newest sample", units="s")
            ci.addItem(plot, row=r, col=0)
            holder = pg.GraphicsWidget()
            holder.setFixedWidth(LEGEND_WIDTH)
            holder.setFlag(holder.GraphicsItemFlag.ItemClipsChildrenToShape)
            legend = pg.LegendItem(offset=(4, 2), labelTextColor="#222", labelTextSize="8pt", verSpacing=-6,
                                   pen=None, brush=None, frame=False)
            legend.setParentItem(holder)
            ci.addItem(holder, row=r, col=1)
            for k, c in enumerate(row.cols):
                color, dash = style_of(k)
                pen = pg.mkPen(color, width=PEN_WIDTH, style=_DASH[dash])
                # a bare curve: PlotDataItem's bookkeeping around the same curve cost 625 us per
                # setData of 1001 points against the curve's own 38 (12 curves at 15 Hz)
                item = pg.PlotCurveItem([], [], pen=pen)
                plot.addItem(item)
                full = curve_label(self.layout_, c)
                legend.addItem(item, self._legend_fm.elidedText(full, QtCore.Qt.TextElideMode.ElideMiddle,
                                                                 LEGEND_TEXT_W))
                legend.items[-1][1].setToolTip(full)      # an elided name whole on hover
                self.curves[c] = item
            row.cursor = pg.InfiniteLine(angle=90, pen=pg.mkPen("#d00", width=1), movable=False)
            row.cursor.setZValue(10)
            row.cursor.setVisible(False)
            plot.addItem(row.cursor, ignoreBounds=True)
            row.plot, row.legend, row.holder = plot, legend, holder
            self.rows[key] = row
        heights = []
        for r, row in enumerate(self.rows.values()):
            h = max(ROW_MIN, ENTRY_H * len(row.cols) + 10)
            row.plot.setMinimumHeight(h + (BOTTOM_AXIS_H if r == len(keys) - 1 else 0))
            row.holder.setMinimumHeight(h)
            ci.layout.setRowStretchFactor(r, 1)
            heights.append(h)
        # taller than the panel: the rows scroll (each stays readable)
        self.glw.setMinimumHeight(int(sum(heights) + BOTTOM_AXIS_H + 10 + ROW_GAP * len(heights)) if heights else 0)

    def row_of(self, name):
        """The row key (unit) a shown channel is drawn in."""
        c = self.layout_.column(name)
        return next(k for k, r in self.rows.items() if c in r.cols)

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

    def set_sampling(self, dt, interval):
        """Say in the count label when the samples are not every step: while running, the window
        records one sample per ``interval`` of sim time (``samplerows.SAMPLE_INTERVAL``)."""
        stride = max(1, math.ceil(interval / dt - 0.5)) if interval > 0 and dt > 0 else 1
        text = "" if stride == 1 else f"every {interval * 1e3:g} ms (1 step in {stride})"
        if text != self.sampling:
            self.sampling = text
            self.count_label.setToolTip("while running, one sample per millisecond of simulated time: every step "
                                        "when dt >= 1 ms; a single step (S) is always recorded" if text else "")
            self._dirty = True

    def clear(self):
        if self.recorder is not None:
            self.recorder.clear()
            self._dirty = True
            self.refresh(force=True)

    def set_cursor(self, t):
        """A vertical line at sim time t on every row (the timeline's cursor; None: no line). The
        window shown ends at the newest sample, or half a window after the cursor when the cursor
        is further back than that."""
        self.cursor_t = None if t is None else float(t)
        self._dirty = True
        if self.paused:          # the user's zoom stays: only the line moves
            self._place_cursor()
        else:
            self.refresh(force=True)

    def _view_span(self, t_end):
        """(lo, hi) of the time axis (seconds relative to the newest sample)."""
        hi = 0.0
        if self.cursor_t is not None:
            c = self.cursor_t - t_end
            if c < -0.9 * self.window:
                hi = min(0.0, c + 0.5 * self.window)
        return hi - self.window, hi

    def _place_cursor(self):
        show = self.cursor_t is not None and self.t_end is not None
        for row in self.rows.values():
            if row.cursor is not None:
                if show:
                    row.cursor.setValue(self.cursor_t - self.t_end)
                row.cursor.setVisible(show)

    def _set_window(self, w):
        self.window = float(w)
        self._dirty = True

    def set_log(self, on):
        """Plot log10 |y| (the left axes label decades)."""
        on = bool(on)
        if self.log_box.isChecked() != on:
            self.log_box.setChecked(on)      # comes back here through the signal
            return
        self.log_y = on
        for row in self.rows.values():
            row.plot.getAxis("left").setLogMode(on)
            row.yrange = None
        self._dirty = True

    def set_wrap(self, on):
        """Draw revolute angles wrapped into (-pi, pi] (on) or as recorded (off)."""
        on = bool(on)
        if self.wrap_box.isChecked() != on:
            self.wrap_box.setChecked(on)
            return
        self.wrap = on
        for row in self.rows.values():
            row.yrange = None
        self._dirty = True
        self.refresh(force=True)

    def _pause(self, on):
        self.paused = on
        self.pause_btn.setText("Resume plot" if on else "Pause plot")
        if not on:
            self._xrange = None     # after zooming, resuming fits again
            for row in self.rows.values():
                row.yrange = None
            self._dirty = True

    def refresh(self, force=False, staged=False):
        """Redraw the curves over the window ending at the newest sample. staged: the GUI's periodic
        redraw: the data are read and decimated now, once for every row (all rows show the same
        instant), and the rows' curves are handed to pyqtgraph one row now and one per
        ``refresh_pending`` call after (one per frame), so no frame carries every row's redraw."""
        if self.recorder is None or (self.paused and not force) or not (self._dirty or force):
            return
        self._dirty = False
        self._pending = []
        rec = self.recorder
        t_end = rec.last_time()
        self.count_label.setText(f"{rec.total} samples" + (f" {self.sampling}" if self.sampling else "")
                                 + ("" if t_end is None else f", newest at t = {t_end:.3f} s"))
        if t_end is None:
            for it in self.curves.values():
                it.setData([], [])
            return
        cols = list(self.curves)
        if not cols:
            return
        lo_x, hi_x = self._view_span(t_end)
        d = rec.data(columns=[0] + cols, since=t_end + lo_x)
        if hi_x < 0.0:
            d = d[d[:, 0] <= t_end + hi_x]
        # x is time relative to the newest sample, so the axis itself stays still while the
        # curves scroll (redrawing a moving axis costs more than the curves)
        t = d[:, 0] - t_end
        Y = d[:, 1:]
        if self.log_y:
            with np.errstate(divide="ignore", invalid="ignore"):
                Y = np.log10(np.maximum(np.abs(Y), LOG_FLOOR))      # NaN stays NaN (a gap)
        tt, YY = decimate_columns(t, Y)
        self.t_end = t_end
        self._place_cursor()
        index = {c: i for i, c in enumerate(cols)}
        self._pending = [(row, tt, YY, index) for row in self.rows.values()]
        if self._xrange != (lo_x, hi_x) and self.rows:
            for row in self.rows.values():
                row.plot.setXRange(lo_x, hi_x, padding=0.0)
                self._grid_lines(row, "x", lo_x, hi_x, 10)
            self._xrange = (lo_x, hi_x)
        while self._pending:
            self._refresh_row(*self._pending.pop(0))
            if staged:
                break

    def has_pending(self):
        """Rows of a staged refresh still to draw."""
        return bool(self._pending)

    def refresh_pending(self):
        """Draw the next row of a staged refresh; False when none was waiting."""
        if not self._pending:
            return False
        self._refresh_row(*self._pending.pop(0))
        return True

    def _refresh_row(self, row, tt, YY, index):
        """One row's curves from the decimated block (tt, YY) of ``refresh``."""
        if self.rows.get(row.key) is not row:
            return          # the rows were rebuilt since the refresh began
        lo, hi = np.inf, -np.inf
        for c in row.cols:
            if c not in index:
                continue
            yy = YY[:, index[c]]
            x = tt
            if self.wrap and not self.log_y and c in self._wrap_cols:
                x, yy = wrap_curve(tt, yy)
            fin = np.isfinite(yy)
            if fin.all():
                self.curves[c].setData(x, yy, connect="all", skipFiniteCheck=True)
            else:
                self.curves[c].setData(x, yy, connect="finite")
            if fin.any():
                lo, hi = min(lo, np.min(yy[fin])), max(hi, np.max(yy[fin]))
        if self.wrap and not self.log_y and all(c in self._wrap_cols for c in row.cols):
            self._angle_axis(row)
        else:
            if row.angles:
                row.plot.getAxis("left").setTicks(None)
                row.angles, row.yrange = False, None
            self._fit_y(row, lo, hi)

    def _grid_lines(self, row, axis, lo, hi, n):
        """Grid lines at round values between lo and hi (about n of them). pyqtgraph's own grid
        repaints both axes with every curve update; these lines move only when a range changes."""
        span = hi - lo
        if not (np.isfinite(span) and span > 0):
            return
        step = 10.0 ** np.floor(np.log10(span / n))
        for f in (1.0, 2.0, 5.0, 10.0):
            if span / (f * step) <= n:
                step *= f
                break
        values = np.arange(np.ceil(lo / step), np.floor(hi / step) + 1) * step
        pool = row.grid[axis]
        while len(pool) < len(values):
            line = pg.InfiniteLine(angle=90 if axis == "x" else 0, pen=pg.mkPen((0, 0, 0, 38)), movable=False)
            line.setZValue(-10)
            row.plot.addItem(line, ignoreBounds=True)
            pool.append(line)
        for line, v in zip(pool, values):
            line.setValue(float(v))
            line.setVisible(True)
        for line in pool[len(values):]:
            line.setVisible(False)

    def _angle_axis(self, row):
        """A row of wrapped angles only: the fixed range (-pi, pi] with ticks at multiples of pi/2."""
        if row.angles and row.yrange == ANGLE_RANGE:
            return
        row.angles, row.yrange = True, ANGLE_RANGE
        row.plot.setYRange(*ANGLE_RANGE, padding=0.0)
        row.plot.getAxis("left").setTicks([[(-np.pi, "−π"), (0.0, "0"), (np.pi, "π")],
                                           [(-np.pi / 2, "−π/2"), (np.pi / 2, "π/2")]])
        pool = row.grid["y"]
        while len(pool) < 5:
            line = pg.InfiniteLine(angle=0, pen=pg.mkPen((0, 0, 0, 38)), movable=False)
            line.setZValue(-10)
            row.plot.addItem(line, ignoreBounds=True)
            pool.append(line)
        for line, v in zip(pool, np.arange(-2, 3) * np.pi / 2):
            line.setValue(float(v))
            line.setVisible(True)
        for line in pool[5:]:
            line.setVisible(False)

    def _fit_y(self, row, lo, hi):
        """Y range with hysteresis: grows at once when the data leave it, shrinks only when the
        data use less than a third of it (a still axis is cheaper to draw and easier to read)."""
        if not (np.isfinite(lo) and np.isfinite(hi)):
            return
        span = hi - lo
        scale = max(abs(lo), abs(hi))
        if not self.log_y and (span <= 1e-9 * scale or scale == 0.0):
            span = scale if scale > 0.0 else 1.0      # flat (a zero torque): a range the value's size
            lo, hi = lo - 0.4 * span, hi + 0.4 * span
        least = 3.0 if self.log_y else 1e-3 * scale
        if span < least:     # linear: rounding-level wiggles of a large value (a conserved energy)
            mid = 0.5 * (lo + hi)     # are not blown up to the full row; log: three decades at least,
            span = least              # so the axis labels decades only
            lo, hi = mid - 0.5 * span, mid + 0.5 * span
        cur = row.yrange
        if cur is not None and cur[0] <= lo and hi <= cur[1] and (hi - lo) >= (cur[1] - cur[0]) / 3.0:
            return
        pad = 0.12 * span
        row.yrange = (lo - pad, hi + pad)
        row.plot.setYRange(*row.yrange, padding=0.0)
        self._grid_lines(row, "y", *row.yrange, 4)

    # ------------------------------------------------------------------ export
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
                QtWidgets.QMessageBox.warning(self, "Export CSV", f"Could not write {path}: {getattr(e, 'reason', e)}")

    def export_png(self, path, width=None):
        """The plot rows with their axes and legends as a PNG image (``width`` pixels wide, by
        default as drawn on screen). Returns (width, height)."""
        from pyqtgraph.exporters import ImageExporter
        if not self.paused:         # paused, the user may have zoomed: export what is shown
            self.refresh(force=True)
        from app.sim.safewrite import atomic_write, image_size
        ex = ImageExporter(self.glw.ci)
        ex.parameters()["background"] = pg.mkColor("w")
        if width is not None:
            ex.parameters()["width"] = int(width)      # the height follows the aspect ratio
        img = ex.export(toBytes=True)
        if img is None or img.isNull():
            raise OSError(f"could not draw the plot for {path}")

        def write(tmp):
            if not img.save(tmp, "PNG"):
                raise OSError(f"Qt could not write the PNG {tmp}")

        atomic_write(path, write, image_size(img.width(), img.height()))     # whole or not at all
        self.message.emit(f"wrote the plot ({img.width()} x {img.height()} px) to {path}")
        return img.width(), img.height()

    def export_svg(self, path):
        """The plot rows with their axes and legends as an SVG drawing (vector paths). Drawn with
        Qt's SVG generator: pyqtgraph's own SVG exporter fails on the closed paths ("Z") Qt 6
        emits. Returns (width, height) of the drawing in px."""
        from PyQt6.QtSvg import QSvgGenerator
        from app.sim.safewrite import atomic_write, svg_drawing
        if not self.paused:
            self.refresh(force=True)
        source = self.glw.ci.sceneBoundingRect()
        w, h = int(np.ceil(source.width())), int(np.ceil(source.height()))

        def write(tmp):
            gen = QSvgGenerator()
            gen.setFileName(tmp)
            gen.setSize(QtCore.QSize(w, h))
            gen.setViewBox(QtCore.QRectF(0, 0, w, h))
            # the screen's resolution: the axes replay their cached pictures unscaled (a different one
            # shrinks the tick labels), and the drawing opens at its on-screen size
            gen.setResolution(self.glw.logicalDpiX())
            gen.setTitle("JointLab plot")
            gen.setDescription(", ".join(self.channels()))
            painter = QtGui.QPainter()
            if not painter.begin(gen):
                raise OSError(f"Qt could not write the SVG {tmp}")
            target = QtCore.QRectF(0, 0, w, h)
            painter.fillRect(target, QtGui.QColor("white"))
            self.glw.scene().render(painter, target, source)
            painter.end()       # Qt reports no write error: the drawing is parsed back instead

        atomic_write(path, write, svg_drawing)          # whole or not at all
        self.message.emit(f"wrote the plot (SVG, {w} x {h} px) to {path}")
        return w, h

    def _export_plot_dialog(self, kind):
        if self.recorder is None:
            return
        filt = "PNG images (*.png)" if kind == "png" else "SVG drawings (*.svg)"
        path, _ = QtWidgets.QFileDialog.getSaveFileName(self, "Export the plot", f"jointlab-plot.{kind}", filt)
        if not path:
            return
        try:
            self.export_png(path) if kind == "png" else self.export_svg(path)
        except OSError as e:
            QtWidgets.QMessageBox.warning(self, "Export plot", f"Could not write {path}: {getattr(e, 'reason', e)}")
